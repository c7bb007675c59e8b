/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* dgram sending: queues, segmentation into the window, acknowledgements
 * in, retransmission, standalone acknowledgements, fault hooks and the
 * batched flush to the link. Everything but cvia__dg_send/_rma runs with
 * ep->busy held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <corevia/corevia.h>
#include "prov/dgram/dgram.h"
#include "util/siphash.h"
#include "util/log.h"

#define DG_PAGE 4096u

static struct dg_op *op_of(struct cvia_xfer *x)
{
    return (struct dg_op *)(void *)((char *)x - offsetof(struct dg_op, x));
}

static struct dg_slot *slot_of(struct dg_ep *ep, struct dg_peer *pp, uint32_t seq)
{
    return &pp->win[seq % ep->win];
}

/* The first sequence number from @src to @dst, which both can compute:
 * within 4096 of the 2^32 wrap, so that every pair crosses it early and
 * the modular comparisons are exercised by every test, not once in 4
 * billion segments. */
static uint32_t dg_isn(const struct dg_ep *ep, int src, int dst)
{
    uint64_t h;

    if (ep->dyn) {   /* launcher-free: from both identities, in the sending direction */
        uint64_t me = ep->keys.job, it = ep->dyn[src ? src : dst].tx.job;
        h = cvia__dg_job_key(src ? it ^ (me << 1 | me >> 63) : me ^ (it << 1 | it >> 63));
        return 0xfffff000u + (uint32_t)(h & 0xfff);
    }
    h = cvia__dg_job_key(ep->keys.job ^ ((uint64_t)(uint32_t)src << 32) ^ (uint32_t)dst);

    return 0xfffff000u + (uint32_t)(h & 0xfff);
}

size_t cvia__dg_inj_size(const struct dg_ep *ep)
{
    size_t n = 1u << 20;   /* 1 MiB, and room for 4 full segments at least */

    while (n < 4 * ep->seg)
        n *= 2;
    return n;
}

/* Room for @len bytes in @pp's copy ring, contiguous: their offset, or
 * (uint64_t)-1 when the ring is full until acknowledgements free it. */
static uint64_t dg_inj_take(const struct dg_ep *ep, struct dg_peer *pp, size_t len)
{
    const uint64_t size = cvia__dg_inj_size(ep);
    uint64_t at = pp->inj_head;

    if (at % size + len > size)
        at += size - at % size;   /* no wrap inside a copy */
    if (at + len - pp->inj_tail > size)
        return (uint64_t)-1;
    pp->inj_head = at + len;
    return at;
}

int cvia__dg_ep_alloc(struct dg_ep *ep)
{
    const size_t n = (size_t)ep->args.size, b = (size_t)ep->cfg.batch;

    /* a power of two, so that seq % win stays one-to-one across the 2^32 wrap */
    ep->win = 1;
    while (ep->win * 2 <= (uint32_t)ep->cfg.window)
        ep->win *= 2;
    ep->peers = calloc(n, sizeof(*ep->peers));
    ep->remote = calloc(n, sizeof(*ep->remote));
    ep->out = calloc(b, sizeof(*ep->out));
    ep->out_slot = calloc(b, sizeof(*ep->out_slot));
    ep->fout = calloc(2 * b, sizeof(*ep->fout));
    ep->in = calloc(b * DG_IN_PER_RECV, sizeof(*ep->in));
    ep->mac_in = calloc(b * DG_IN_PER_RECV, sizeof(*ep->mac_in));
    ep->mac_tag = calloc(b * DG_IN_PER_RECV, sizeof(*ep->mac_tag));
    ep->mac_at = calloc(b, sizeof(*ep->mac_at));
    if (!ep->peers || !ep->remote || !ep->out || !ep->out_slot || !ep->fout || !ep->in ||
        !ep->mac_in || !ep->mac_tag || !ep->mac_at)
        return -ENOMEM;
    for (int p = 0; p < ep->args.size && !ep->args.dynamic; p++)
        if (!ep->args.same_host[p]) {
            ep->peers[p].remote = 1;
            ep->remote[ep->nremote++] = p;
        }
    return 0;
}

int cvia__dg_ep_segment(struct dg_ep *ep, size_t seg)
{
    ep->seg = seg;
    ep->dgram_max = sizeof(struct dg_hdr) + seg;   /* the extension fits in seg */
    ep->scratch = malloc(2 * (size_t)ep->cfg.batch * ep->dgram_max);
    return ep->scratch ? 0 : -ENOMEM;
}

void cvia__dg_ep_free(struct dg_ep *ep)
{
    for (int p = 0; ep->peers && p < ep->args.size; p++) {
        struct dg_peer *pp = &ep->peers[p];
        struct cvia_xfer *x = pp->cur ? pp->cur : pp->q_head, *next;
        if (pp->cur)
            pp->cur->prov_next = pp->q_head;
        for (; x; x = next) {   /* answers never sent: ours to free */
            next = x->prov_next;
            if (x->flags & DG_XFER_OP)
                free(op_of(x));
        }
        if (pp->ooo)
            for (uint32_t i = 0; i < ep->win; i++)
                free(pp->ooo[i]);
        free(pp->ooo);
        free(pp->win);
        if (pp->inj)
            munmap(pp->inj, cvia__dg_inj_size(ep));
    }
    free(ep->peers);
    free(ep->remote);
    free(ep->out);
    free(ep->out_slot);
    free(ep->fout);
    free(ep->in);
    free(ep->mac_in);
    free(ep->mac_tag);
    free(ep->mac_at);
    free(ep->scratch);
}

int cvia__dg_peer_alloc(struct dg_ep *ep, struct dg_peer *pp)
{

    pp->win = calloc(ep->win, sizeof(*pp->win));
    pp->ooo = calloc(ep->win, sizeof(*pp->ooo));
    /* a byte ring: copies of consecutive small messages share pages, so
     * only its first lap takes page faults (one slot per segment faulted
     * a fresh page per message with 8 KiB segments: +3 us at 32 B) */
    pp->inj = mmap(NULL, cvia__dg_inj_size(ep), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pp->inj == MAP_FAILED)
        pp->inj = NULL;
    if (!pp->win || !pp->ooo || !pp->inj)
        return -ENOMEM;
    pp->snd_una = pp->snd_nxt = pp->snd_tx = dg_isn(ep, ep->args.rank, (int)(pp - ep->peers));
    pp->rcv_nxt = dg_isn(ep, (int)(pp - ep->peers), ep->args.rank);
    pp->snd_hi = pp->rcv_hi = 0;
    pp->rto = ep->cfg.rto;
    pp->cwnd = pp->ssthresh = ep->win;   /* a loss-free link runs the whole window */
    pp->recover = pp->snd_una;
    pp->last_ack_at = pp->last_heard = ep->now;
    return 0;
}

/* ---- posting --------------------------------------------------------- */

static int dg_post(struct dg_ep *ep, int peer, struct cvia_xfer *x)
{
    struct dg_peer *pp = &ep->peers[peer];

    x->prov_next = NULL;
    x->done = 0;
    cvia_mlock_lock(&ep->qlock);
    if (pp->gone) {
        cvia_mlock_unlock(&ep->qlock);
        return -CVIA_ENOPEER;
    }
    if (pp->q_tail)
        pp->q_tail->prov_next = x;
    else
        CVIA_HINT_STORE(pp->q_head, x);
    pp->q_tail = x;
    cvia_mlock_unlock(&ep->qlock);
    if (cvia_mlock_trylock(&ep->busy)) {   /* out now if nobody runs the engine */
        ep->now = cvia__dg_now();
        cvia__dg_tx(ep);
        cvia__dg_flush(ep);
        cvia_mlock_unlock(&ep->busy);
    }
    return 0;
}

int cvia__dg_send(struct dg_ep *ep, struct cvia_xfer *x)
{
    if (x->peer < 0 || x->peer >= ep->args.size || !ep->peers[x->peer].remote ||
        x->len > DG_MAX_LEN || x->ctx > CVIA_CTX_INTERNAL)
        return -EINVAL;
    x->flags &= (uint16_t)~(DG_XFER_OP | DG_XFER_RMA);
    return dg_post(ep, x->peer, x);
}

static struct dg_op *dg_op_new(int peer, uint8_t type)
{
    struct dg_op *op = calloc(1, sizeof(*op));

    if (op) {
        op->x.peer = peer;
        op->x.flags = DG_XFER_OP;
        op->type = type;
    }
    return op;
}

/* One-sided: the request goes out as a provider op; the user's xfer waits
 * on the peer's list for the answer, found again by its address. */
int cvia__dg_rma(struct dg_ep *ep, struct cvia_xfer *x, uint8_t type)
{
    struct dg_peer *pp;
    struct dg_op *op;
    int rc;

    if (x->peer < 0 || x->peer >= ep->args.size || !ep->peers[x->peer].remote ||
        x->len > DG_MAX_LEN)
        return -EINVAL;
    pp = &ep->peers[x->peer];
    if (!(op = dg_op_new(x->peer, type)))
        return -ENOMEM;
    op->ext.key = x->rma_key;
    op->ext.addr = x->rma_addr;
    op->ext.aux2 = (uint64_t)(uintptr_t)x;
    if (type == DG_RMAW) {
        op->ext.aux = x->rma_imm;
        op->flags = (x->flags & CVIA_XFER_IMM) ? DG_F_IMM : 0;
        op->x.buf = x->buf;   /* sent from the user's buffer */
        op->x.len = x->len;
    } else {
        op->ext.aux = x->len;
    }
    x->flags |= DG_XFER_RMA;
    cvia_mlock_lock(&ep->qlock);
    x->prov_next = pp->waiting;
    CVIA_HINT_STORE(pp->waiting, x);
    cvia_mlock_unlock(&ep->qlock);
    if ((rc = dg_post(ep, x->peer, &op->x))) {
        struct cvia_xfer **l;
        cvia_mlock_lock(&ep->qlock);
        for (l = &pp->waiting; *l && *l != x; l = &(*l)->prov_next)
            ;
        if (*l)
            CVIA_HINT_STORE(*l, x->prov_next);
        cvia_mlock_unlock(&ep->qlock);
        free(op);
    }
    return rc;
}

/* An answer (WACK, RRESP) or BYE, queued behind what is already posted. */
void cvia__dg_answer(struct dg_ep *ep, int peer, uint8_t type, uint64_t cookie, int status,
                     const void *buf, size_t len)
{
    struct dg_op *op = dg_op_new(peer, type);

    if (!op) {
        cvia_error(NET, "%s: out of memory answering rank %d; it will wait for its "
                   "request until it sees this rank die", ep->link->name, peer);
        return;
    }
    op->ext.aux = cookie;
    op->ext.aux2 = (uint64_t)(int64_t)status;
    op->x.buf = (void *)(uintptr_t)buf;
    op->x.len = len;
    if (dg_post(ep, peer, &op->x))
        free(op);   /* a gone peer needs no answer */
}

/* ---- the out batch ------------------------------------------------------- */

/* Append a datagram for @peer (slot @s, or NULL: its standalone ack) to the
 * batch, flushing a full one first. 0, or -1 when the link takes nothing
 * now (the caller's timer or next pass comes back for it). */
static int dg_out_add(struct dg_ep *ep, int peer, struct dg_slot *s)
{
    /* a full batch goes first; a link that takes none of it is full: the
     * caller stops (the flush empties the batch either way, so testing
     * nout afterwards could never say so, and a send loop that goes back
     * to what the link refused would rebuild the batch forever) */
    if (ep->nout == (int)ep->cfg.batch && cvia__dg_flush(ep) <= 0)
        return -1;
    if (s) {
        s->tries++;
        s->sent_at = ep->now;
        s->txo = ep->peers[peer].txo_next++;
    }
    ep->out[ep->nout].peer = peer;
    ep->out[ep->nout].iovcnt = 0;
    ep->out_slot[ep->nout] = s;
    ep->nout++;
    return 0;
}

/* ---- segmentation ------------------------------------------------------ */

static uint8_t op_type(const struct cvia_xfer *x)
{
    return (x->flags & DG_XFER_OP) ? op_of((struct cvia_xfer *)x)->type : DG_MSG;
}

/* Cut the next segment of @pp->cur into a window slot. 1 if the message
 * is now fully cut, 0 if not, -1 if its copy finds no room yet. */
static int dg_cut(struct dg_ep *ep, struct dg_peer *pp, int peer)
{
    struct cvia_xfer *x = pp->cur;
    struct dg_slot *s = slot_of(ep, pp, pp->snd_nxt);
    const int is_op = !!(x->flags & DG_XFER_OP);
    const uint8_t type = op_type(x);
    const int first = pp->cur_first, ext = first && type != DG_MSG && type != DG_BYE;
    size_t off = x->done, total = x->len, cap = ep->seg - (ext ? sizeof(struct dg_ext) : 0);
    size_t end = off + (total - off < cap ? total - off : cap);
    const int inject = !is_op && total <= ep->cfg.inject;
    /* a read's answer is copied too: once the reader has it, the target may
     * withdraw and free the region while the segments still wait for their
     * acknowledgement (and may be sent again) */
    const int copied = inject || type == DG_RRESP;

    if (ep->cfg.cut == DG_CUT_MVIA && end < total && (end & ~(size_t)(DG_PAGE - 1)) > off)
        end &= ~(size_t)(DG_PAGE - 1);   /* M-VIA: cut at page boundaries */
    memset(&s->hdr, 0, sizeof(s->hdr));
    s->hdr.type = type;
    s->hdr.flags = (uint8_t)((first ? DG_F_FIRST : 0) | (end == total ? DG_F_LAST : 0) |
                             (ext ? DG_F_EXT : 0) | (is_op ? op_of(x)->flags : 0));
    if (!is_op && type == DG_MSG && x->ctx == CVIA_CTX_INTERNAL)
        s->hdr.flags |= DG_F_CTX;
    s->hdr.tag = is_op ? 0 : x->tag;
    dg_hdr_route(ep, &s->hdr, peer);
    s->hdr.seq = pp->snd_nxt;
    dg_set_lenoff(&s->hdr, first ? total : off);
    if (ext)
        s->ext = op_of(x)->ext;
    s->len = end - off;
    s->data = x->buf ? (const char *)x->buf + off : NULL;   /* requests carry none */
    s->inj_end = 0;
    if (copied && s->len) {   /* a copy: the user may reuse the buffer now */
        uint64_t at = dg_inj_take(ep, pp, s->len);
        if (at == (uint64_t)-1)
            return -1;        /* nothing changed: cut again after acks */
        memcpy(pp->inj + at % cvia__dg_inj_size(ep), s->data, s->len);
        s->data = pp->inj + at % cvia__dg_inj_size(ep);
        s->inj_end = at + s->len;
    }
    s->done_x = NULL;
    s->sent_at = 0;
    s->tries = 0;
    s->sacked = 0;
    if (++pp->snd_nxt == 0)
        pp->snd_hi++;
    pp->cur_first = 0;
    x->done = end;
    if (end < total)
        return 0;
    /* the last segment of the message */
    if (is_op) {
        free(op_of(x));   /* slots point at the payload, never at the op */
    } else if (inject) {
        x->done = x->len;
        ep->args.up->complete(ep->args.up->core, x, 0);
    } else {
        s->done_x = x;   /* completes when acknowledged: ask for it */
        s->hdr.flags |= DG_F_ACKREQ;
    }
    return 1;
}

/* Cut what the window takes of every peer's queue, and send it. */
int cvia__dg_tx(struct dg_ep *ep)
{
    int events = 0;

    for (int i = 0; i < ep->nremote; i++) {
        int peer = ep->remote[i];
        struct dg_peer *pp = &ep->peers[peer];

        if (pp->gone)
            continue;
        const uint32_t lim = pp->cwnd < ep->win ? pp->cwnd : ep->win;
        /* in flight: cut and not yet known to have arrived */
        while (pp->snd_nxt - pp->snd_una < ep->win &&
               pp->snd_nxt - pp->snd_una - pp->sacked_n < lim) {
            if (!pp->cur) {
                cvia_mlock_lock(&ep->qlock);
                pp->cur = pp->q_head;
                if (pp->cur) {
                    CVIA_HINT_STORE(pp->q_head, pp->cur->prov_next);
                    if (!pp->q_head)
                        pp->q_tail = NULL;
                }
                cvia_mlock_unlock(&ep->qlock);
                if (!pp->cur)
                    break;
                pp->cur->prov_next = NULL;
                pp->cur->done = 0;
                pp->cur_first = 1;
            }
            int cut = dg_cut(ep, pp, peer);
            if (cut < 0)
                break;   /* the copy ring is full: acknowledgements free it */
            if (cut) {
                pp->cur = NULL;
                events++;
            }
            /* half the window in flight: ask for acknowledgements, once
             * every quarter window (each ask costs the receiver a send);
             * the congestion window's, when it is the smaller */
            if (pp->snd_nxt - pp->snd_una >= lim / 2 &&
                pp->snd_nxt - pp->ackreq_at >= (lim / 4 ? lim / 4 : 1)) {
                slot_of(ep, pp, pp->snd_nxt - 1)->hdr.flags |= DG_F_ACKREQ;
                pp->ackreq_at = pp->snd_nxt;
            }
        }
        /* send what was cut and never sent */
        while (dg_seq_lt(pp->snd_tx, pp->snd_nxt)) {
            const uint32_t at = pp->snd_tx;
            struct dg_slot *s = slot_of(ep, pp, at);
            if (!s->sent_at && !s->sacked) {
                if (dg_out_add(ep, peer, s))
                    break;   /* the link is full: later */
                /* dg_out_add flushed a full batch first, and the link took
                 * only part of it: the rest is unsent again and snd_tx went
                 * back to its first. Go on from there, not from at + 1,
                 * or those segments would never go: a slot that was never
                 * sent has no timeout either, and the peer stalls (seen
                 * with a small eth ring under a rate limit) */
                if (pp->snd_tx != at)
                    continue;
            }
            pp->snd_tx++;
        }
    }
    return events;
}

/* ---- acknowledgements in ---------------------------------------------- */

/* The congestion window's floor, a quarter of the window: random loss is
 * not always congestion, and a window of one segment per round trip would
 * stall a lossy link. */
static uint32_t dg_cwnd_min(const struct dg_ep *ep)
{
    return ep->win / 4 > 2 ? ep->win / 4 : 2;
}

/* The timeout now: the measured RTO doubled per timeout since snd_una last
 * moved (since the first sample, before one), up to RTO_MAX. */
static double dg_rto(const struct dg_ep *ep, const struct dg_peer *pp)
{
    double t = pp->rto;

    for (unsigned b = pp->backoff; b && t < ep->cfg.rto_max; b--)
        t *= 2;
    return t < ep->cfg.rto_max ? t : ep->cfg.rto_max;
}

/* RFC 6298: a round trip of @r seconds measured on a segment acknowledged
 * on its first try (Karn). The floor is added to SRTT, as Linux does, so
 * that a receiver's delayed acknowledgement is no timeout. */
static void dg_rtt_sample(const struct dg_ep *ep, struct dg_peer *pp, double r)
{
    double var;

    if (!pp->has_rtt) {
        pp->srtt = r;
        pp->rttvar = r / 2;
        pp->has_rtt = 1;
    } else {
        double d = pp->srtt - r;
        pp->rttvar = 0.75 * pp->rttvar + 0.25 * (d < 0 ? -d : d);
        pp->srtt = 0.875 * pp->srtt + 0.125 * r;
    }
    var = 4 * pp->rttvar;
    pp->rto = pp->srtt + (var > ep->cfg.rto_min ? var : ep->cfg.rto_min);
    if (pp->rto > ep->cfg.rto_max)
        pp->rto = ep->cfg.rto_max;
    pp->backoff = 0;
}

/* A decrease begins: remember what to restore if every retransmission
 * of it turns out to have been a duplicate at the receiver (a receiver
 * that was only late, descheduled on a busy host, not a loss). */
static void dg_undo_mark(struct dg_peer *pp)
{
    if (pp->in_recovery)
        return;
    pp->undo_cwnd = pp->cwnd;
    pp->undo_ssthresh = pp->ssthresh;
    pp->undo_retx = 0;
    pp->undo_valid = 1;
    pp->undo_rto = 0;
    pp->undo_by_rto = 0;
    pp->undo_rto_retx = 0;
    pp->undo_flight = 0;
    pp->undo_fretx = 0;
}

/* A segment found lost. When a window of data (until snd_una passes what
 * was in flight at the first loss) loses more than an eighth of the
 * congestion window, the window goes to 0.7 of itself (CUBIC's factor,
 * RFC 8312), once per such window. Scattered random loss does not shrink
 * it: measured on the veth at 1 % random loss, a cut on any loss kept the
 * window near its floor and 1 MiB bandwidth at a quarter of the former
 * engine's, which had no congestion window. */
static void dg_cwnd_loss(const struct dg_ep *ep, struct dg_peer *pp)
{
    uint32_t half = (uint32_t)(pp->cwnd * 7ull / 10), min = dg_cwnd_min(ep);

    if (!pp->loss_round || dg_seq_le(pp->loss_end, pp->snd_una)) {
        pp->loss_round = 1;
        pp->loss_end = pp->snd_nxt;
        pp->loss_n = 0;
    }
    if (++pp->loss_n <= pp->cwnd / 8 || pp->in_recovery)
        return;
    dg_undo_mark(pp);
    pp->ssthresh = pp->cwnd = half > min ? half : min;
    pp->cwnd_acc = 0;
    pp->recover = pp->snd_nxt;
    pp->in_recovery = 1;
}

static void dg_cwnd_grow(const struct dg_ep *ep, struct dg_peer *pp, uint32_t n)
{
    if (!n)
        return;
    if (pp->cwnd < pp->ssthresh) {   /* slow start (after a timeout) */
        pp->cwnd += n;
        if (pp->cwnd > pp->ssthresh)
            pp->cwnd = pp->ssthresh;
    } else if (!pp->in_recovery) {   /* one segment per window acknowledged */
        pp->cwnd_acc += n;
        while (pp->cwnd_acc >= pp->cwnd) {
            pp->cwnd_acc -= pp->cwnd;
            pp->cwnd++;
        }
    }
    if (pp->cwnd > ep->win)
        pp->cwnd = ep->win;
}

static int dg_resend(struct dg_ep *ep, int peer, struct dg_slot *s)
{
    if (dg_out_add(ep, peer, s))
        return -1;
    ep->st.retx++;
    ep->peers[peer].undo_retx++;
    return 0;
}

/* The receiver reports @d duplicates: when they cover every retransmission
 * since the decrease, none was needed: restore the window. A decrease that
 * a timeout began is undone once they cover the timeouts' retransmissions:
 * under random loss the fast retransmissions made in the same recovery are
 * real (not duplicates), and requiring them too left nearly every spurious
 * timeout at the window's floor (measured at 1 % loss, eth, 1 MiB: 180
 * timeouts, 177 of their segments duplicates at the receiver, 30 undone).
 * The count does not say which segments were duplicates: a spurious fast
 * retransmission beside a real timeout can undo it, costing the floor's
 * protection for one loss. Only while the fast retransmissions stay
 * scattered (at most an eighth of the flight the timeout found): after a
 * burst, duplicates as many as the timeouts' retransmissions (the network's,
 * a reordered segment's) restored the window the burst had cut. */
static void dg_undo(struct dg_ep *ep, struct dg_peer *pp, uint32_t d)
{
    if (!pp->undo_valid || !pp->undo_retx)
        return;
    pp->undo_retx = d >= pp->undo_retx ? 0 : pp->undo_retx - d;
    pp->undo_rto_retx = d >= pp->undo_rto_retx ? 0 : pp->undo_rto_retx - d;
    /* the relaxed rule holds for scattered loss only (as dg_cwnd_loss
     * tells it: no more than an eighth of what was in flight when the
     * timeout came lost and sent again by SACK); a burst that took most of
     * the flight is real loss whatever duplicates come, and those needed
     * retransmissions must be reported duplicate too */
    if (pp->undo_retx && !(pp->undo_by_rto && !pp->undo_rto_retx &&
                           pp->undo_fretx <= pp->undo_flight / 8))
        return;
    if (pp->cwnd < pp->undo_cwnd)
        pp->cwnd = pp->undo_cwnd;
    if (pp->ssthresh < pp->undo_ssthresh)
        pp->ssthresh = pp->undo_ssthresh;
    pp->in_recovery = 0;
    pp->undo_valid = 0;
    if (pp->undo_rto && 2 * pp->rto < ep->cfg.rto_max)
        pp->rto *= 2;   /* it timed out before the round trip ended: too short */
    else if (pp->undo_rto)
        pp->rto = ep->cfg.rto_max;
    ep->st.undos++;
}

/* What one acknowledgement newly reports as arrived: the latest
 * transmission among first tries and among retransmissions, apart. */
struct dg_arrivals {
    double   latest;       /* send time of the newest first try (RTT sample) */
    uint32_t first_txo, retx_txo;
    double   first_at, retx_at;
    int      has_first, has_retx;
};

/* A slot now known to have arrived (cumulatively or selectively). */
static void dg_arrived(const struct dg_slot *s, struct dg_arrivals *a)
{
    if (!s->sent_at)
        return;
    if (s->tries == 1) {
        if (!a->has_first || (int32_t)(s->txo - a->first_txo) > 0) {
            a->first_txo = s->txo;
            a->first_at = s->sent_at;
            a->has_first = 1;
        }
        if (s->sent_at > a->latest)
            a->latest = s->sent_at;
    } else if (!a->has_retx || (int32_t)(s->txo - a->retx_txo) > 0) {
        a->retx_txo = s->txo;
        a->retx_at = s->sent_at;
        a->has_retx = 1;
    }
}

/* The latest transmission known to have arrived, which RACK measures loss
 * against. A retransmitted slot's arrival is ambiguous: the original may
 * be what came. When the same acknowledgement also brings first tries
 * that were sent before that retransmission, the originals are what is
 * arriving (a timeout that fired while they waited in a queue: a rate
 * limit, a device queue, the socket's send buffer), and counting the
 * retransmission as arrived would declare every segment between them lost
 * and send the whole window twice (measured under a 1 Gbit/s tbf: a third
 * of eth's frames were such duplicates). Then only the first tries count. */
static void dg_arrivals_note(struct dg_peer *pp, const struct dg_arrivals *a)
{
    uint32_t txo;
    double at;

    if (a->has_first) {   /* newer than any retransmission here, or see above */
        txo = a->first_txo;
        at = a->first_at;
        pp->rack_hold = 0;
    } else if (a->has_retx && !pp->rack_hold) {
        /* only retransmissions came: the originals may still be queued
         * behind (a timeout that fired on a deep queue, the common case
         * under a rate limit), and if so the next acknowledgement brings
         * first tries. Held once, as F-RTO (RFC 5682) holds its verdict:
         * a lost tail costs one more timeout, a deep queue no spurious
         * resend of everything sent after the original */
        pp->rack_hold = 1;
        return;
    } else if (a->has_retx) {
        txo = a->retx_txo;
        at = a->retx_at;
        pp->rack_hold = 0;
    } else {
        return;
    }
    if (!pp->has_txo_acked || (int32_t)(txo - pp->txo_acked) > 0) {
        pp->txo_acked = txo;
        pp->txo_acked_at = at;
        pp->has_txo_acked = 1;
    }
}

static int dg_sack_bit(const struct dg_hdr *h, const struct dg_ext *e, int ext, uint32_t i)
{
    if (i < DG_SACK_BITS)
        return (h->sack >> i) & 1;
    i -= DG_SACK_BITS;
    if (!ext || i >= DG_SACK_EXT_BITS)
        return 0;
    return (int)(((&e->key)[i / 64] >> (i % 64)) & 1);
}

/* Which holes were lost, within what the acknowledgement reported on
 * (below @reach): those with DUPTHRESH selectively acknowledged segments
 * above them (fast retransmit), or sent a quarter of a round trip before a
 * segment that arrived (RACK, RFC 8985: also a retransmission lost again,
 * and the rest of a tail after a timeout), in both cases only if something
 * sent after their last try arrived. Sent again now, lowest first. */
static void dg_detect_loss(struct dg_ep *ep, int peer, struct dg_peer *pp, uint32_t reach)
{
    uint32_t top = pp->snd_tx, edge, above = 0;
    const double reo = pp->has_rtt ? pp->srtt / 4 : 0;

    if (dg_seq_lt(reach, top))
        top = reach;
    /* nothing sent before the latest arrival is outstanding: no loss */
    if (!pp->sacked_n && (int32_t)(pp->txo_acked - slot_of(ep, pp, pp->snd_una)->txo) <= 0)
        return;
    for (edge = top; dg_seq_lt(pp->snd_una, edge) && above < DG_DUPTHRESH;)
        above += slot_of(ep, pp, --edge)->sacked;
    if (above < DG_DUPTHRESH)
        edge = pp->snd_una;   /* holes below edge have DUPTHRESH above them */
    for (uint32_t seq = pp->snd_una; dg_seq_lt(seq, top); seq++) {
        struct dg_slot *s = slot_of(ep, pp, seq);
        if (s->sacked || !s->sent_at || (int32_t)(pp->txo_acked - s->txo) <= 0)
            continue;
        if (!dg_seq_lt(seq, edge) && pp->txo_acked_at - s->sent_at <= reo)
            continue;
        dg_cwnd_loss(ep, pp);
        if (dg_resend(ep, peer, s))
            break;   /* the link is full: the next acknowledgement comes back */
        ep->st.fretx++;
        pp->undo_fretx++;
    }
}

void cvia__dg_ack_in(struct dg_ep *ep, int peer, const struct dg_hdr *h, const struct dg_ext *e)
{
    struct dg_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    const uint32_t ack = h->ack;
    const int ext = h->type == DG_ACK && (h->flags & DG_F_EXT) && e;
    const uint32_t reach = ack + 1 + DG_SACK_BITS + (ext ? DG_SACK_EXT_BITS : 0);
    struct dg_arrivals arr = { 0 };
    uint32_t newly = 0;

    /* ack in (snd_una, snd_nxt], as unsigned distances: the signed
     * comparisons both hold for an ack 2^31 away from an empty window */
    if (ack != pp->snd_una && ack - pp->snd_una <= pp->snd_nxt - pp->snd_una) {
        while (pp->snd_una != ack) {
            struct dg_slot *s = slot_of(ep, pp, pp->snd_una);
            struct cvia_xfer *x = s->done_x;
            if (s->sacked) {
                pp->sacked_n--;
            } else {
                dg_arrived(s, &arr);
                newly++;
            }
            s->sacked = 0;
            if (s->inj_end)
                pp->inj_tail = s->inj_end;   /* copies are freed in order */
            s->done_x = NULL;
            pp->snd_una++;
            if (x) {
                x->done = x->len;
                up->complete(up->core, x, 0);
            }
        }
        if (dg_seq_lt(pp->snd_tx, pp->snd_una))
            pp->snd_tx = pp->snd_una;
        pp->last_ack_at = ep->now;
        /* progress ends the back-off once a round trip was measured (before
         * that, Karn's rule: an RTO below the round trip would time out
         * every segment and never measure one); a timeout that was not
         * needed doubles the measured RTO instead (dg_undo) */
        if (pp->has_rtt)
            pp->backoff = 0;
        if (pp->in_recovery && dg_seq_le(pp->recover, pp->snd_una))
            pp->in_recovery = 0;
    } else if (pp->snd_una == pp->snd_nxt) {
        pp->last_ack_at = ep->now;   /* nothing outstanding: the clock rests */
    }
    if ((h->sack || ext) && pp->snd_una != pp->snd_nxt && !dg_seq_lt(ack, pp->snd_una)) {
        uint32_t top = dg_seq_lt(reach, pp->snd_nxt) ? reach : pp->snd_nxt;
        for (uint32_t seq = ack + 1; dg_seq_lt(seq, top); seq++) {
            struct dg_slot *s = slot_of(ep, pp, seq);
            if (s->sacked || !s->tries || !dg_sack_bit(h, e, ext, seq - ack - 1))
                continue;
            dg_arrived(s, &arr);
            s->sacked = 1;
            pp->sacked_n++;
            newly++;
        }
    }
    dg_arrivals_note(pp, &arr);
    if (pp->snd_una != pp->snd_tx && pp->has_txo_acked && !dg_seq_lt(ack, pp->snd_una))
        dg_detect_loss(ep, peer, pp, reach);
    if (arr.latest > 0)
        dg_rtt_sample(ep, pp, ep->now - arr.latest);
    dg_cwnd_grow(ep, pp, newly);
    if (h->type == DG_ACK && h->tag >= 0) {
        uint32_t d = ((uint32_t)h->tag - pp->dups_seen) & 0x7fffffff;
        if (d && d < 0x40000000) {   /* forward: not an older ACK overtaking */
            pp->dups_seen = (uint32_t)h->tag;
            dg_undo(ep, pp, d);
        }
    }
}

/* ---- acknowledgements out ----------------------------------------------- */

static uint32_t dg_sack(struct dg_ep *ep, struct dg_peer *pp)
{
    uint32_t sack = 0;

    if (!pp->ooo_count)
        return 0;
    for (uint32_t i = 0; i < DG_SACK_BITS && i + 1 < ep->win; i++)
        if (pp->ooo[(pp->rcv_nxt + 1 + i) % ep->win])
            sack |= 1u << i;
    return sack;
}

/* A standalone ACK's further SACK bits, into pp->ack_ext: 1 if any is set. */
static int dg_sack_ext(struct dg_ep *ep, struct dg_peer *pp)
{
    uint64_t *w = &pp->ack_ext.key;
    int any = 0;

    memset(&pp->ack_ext, 0, sizeof(pp->ack_ext));
    if (!pp->ooo_count)
        return 0;
    for (uint32_t i = 0; i < DG_SACK_EXT_BITS && DG_SACK_BITS + i + 1 < ep->win; i++)
        if (pp->ooo[(pp->rcv_nxt + 1 + DG_SACK_BITS + i) % ep->win]) {
            w[i / 64] |= UINT64_C(1) << (i % 64);
            any = 1;
        }
    return any;
}

void cvia__dg_queue_ack(struct dg_ep *ep, int peer, uint8_t type)
{
    struct dg_peer *pp = &ep->peers[peer];

    if (dg_out_add(ep, peer, NULL))
        return;
    memset(&pp->ack_hdr, 0, sizeof(pp->ack_hdr));
    pp->ack_hdr.type = type;
    pp->ack_hdr.flags = type == DG_PING ? DG_F_ACKREQ : 0;
    dg_hdr_route(ep, &pp->ack_hdr, peer);
    pp->ack_hdr.seq = pp->snd_nxt;
    ep->st.acks++;
}

/* ---- timers --------------------------------------------------------------- */

/* Seconds from @now until cvia__dg_timers has something to do (0: now;
 * a large number: nothing pending, only input can bring work): the
 * oldest unacknowledged segment's timeout, a delayed acknowledgement, a
 * silent peer's probe or death. Data not yet cut into the window waits
 * for an ACK (input) or a timeout, unless the window has room: then now. */
double cvia__dg_next_timer(struct dg_ep *ep, double now)
{
    double next = 1e9;

#define DG_AT(t) do { double t_ = (t) - now; if (t_ < next) next = t_ > 0 ? t_ : 0; } while (0)
    for (int i = 0; i < ep->nremote; i++) {
        struct dg_peer *pp = &ep->peers[ep->remote[i]];
        if (pp->gone)
            continue;
        if (CVIA_HINT_LOAD(pp->q_head) || pp->cur || pp->ack_now ||
            dg_seq_lt(pp->snd_tx, pp->snd_nxt))
            DG_AT(now);   /* something to send (or a full link to retry) */
        if (pp->snd_una != pp->snd_nxt) {
            struct dg_slot *s = slot_of(ep, pp, pp->snd_una);
            DG_AT(s->sent_at ? s->sent_at + dg_rto(ep, pp) : now);
            DG_AT(pp->last_ack_at + ep->cfg.peer_timeout);
        }
        if (pp->rx_active || CVIA_HINT_LOAD(pp->waiting)) {
            double ping = pp->last_heard + ep->cfg.peer_timeout / 4;
            DG_AT(pp->last_heard + ep->cfg.peer_timeout);
            DG_AT(ping > pp->pinged_at + ep->cfg.rto_max ? ping : pp->pinged_at + ep->cfg.rto_max);
        }
        if (pp->ack_owed)
            DG_AT(pp->ack_owed >= ep->win / 4 ? now : pp->ack_owed_since + ep->cfg.ack_delay);
        if (ep->dyn && pp->bye)
            DG_AT(now);
    }
#undef DG_AT
    return next;
}

int cvia__dg_timers(struct dg_ep *ep)
{
    int events = 0;

    for (int i = 0; i < ep->nremote; i++) {
        int peer = ep->remote[i];
        struct dg_peer *pp = &ep->peers[peer];
        int expecting;

        if (pp->gone)
            continue;
        if (pp->snd_una != pp->snd_nxt) {
            struct dg_slot *s = slot_of(ep, pp, pp->snd_una);
            const double rto = dg_rto(ep, pp);
            if (s->sent_at && ep->now - s->sent_at > rto) {
                /* the oldest timed out: it goes again, the window drops to
                 * its floor, the timeout doubles until a round trip is
                 * measured again */
                uint32_t flight = pp->snd_nxt - pp->snd_una - pp->sacked_n, min = dg_cwnd_min(ep);
                /* the oldest goes again (RFC 6298); when it arrives, what
                 * was sent before it and is still missing counts as lost
                 * (dg_detect_loss). A full link: the next pass comes back */
                const int fresh = !pp->in_recovery;
                dg_undo_mark(pp);
                if (!dg_resend(ep, peer, s)) {
                    ep->st.rtos++;
                    if (fresh) {
                        pp->undo_by_rto = 1;
                        pp->undo_flight = flight;
                    }
                    pp->undo_rto_retx++;
                    pp->undo_rto = 1;
                    pp->ssthresh = flight / 2 > min ? flight / 2 : min;
                    pp->cwnd = min;
                    pp->cwnd_acc = 0;
                    pp->recover = pp->snd_nxt;
                    pp->in_recovery = 1;
                    if (pp->backoff < 30)
                        pp->backoff++;
                }
            }
            if (ep->now - pp->last_ack_at > ep->cfg.peer_timeout) {
                cvia_error(NET, "%s: %s %d acknowledged nothing for %gs; declaring it dead "
                           "(CVIA_DGRAM_PEER_TIMEOUT)", ep->link->name,
                           ep->dyn ? "peer" : "rank", peer,
                           ep->cfg.peer_timeout);
                cvia__dg_peer_gone(ep, peer, -CVIA_ENOPEER);
                events++;
                continue;
            }
        }
        expecting = pp->rx_active || CVIA_HINT_LOAD(pp->waiting);
        if (expecting && ep->now - pp->last_heard > ep->cfg.peer_timeout) {
            cvia_error(NET, "%s: %s %d fell silent for %gs in the middle of an exchange; "
                       "declaring it dead (CVIA_DGRAM_PEER_TIMEOUT)", ep->link->name,
                       ep->dyn ? "peer" : "rank", peer,
                       ep->cfg.peer_timeout);
            cvia__dg_peer_gone(ep, peer, -CVIA_ENOPEER);
            events++;
            continue;
        }
        if (expecting && ep->now - pp->last_heard > ep->cfg.peer_timeout / 4 &&
            ep->now - pp->pinged_at > ep->cfg.rto_max) {
            pp->pinged_at = ep->now;
            cvia__dg_queue_ack(ep, peer, DG_PING);
        }
        if (pp->ack_owed && (pp->ack_now || pp->ack_owed >= ep->win / 4 ||
                             ep->now - pp->ack_owed_since >= ep->cfg.ack_delay))
            cvia__dg_queue_ack(ep, peer, DG_ACK);
        else if (pp->ack_now)
            cvia__dg_queue_ack(ep, peer, DG_ACK);
        if (ep->dyn && pp->bye) {
            /* a launcher-free peer closed corevia (its BYE came after all
             * its data, acknowledged just above): what still involves it
             * fails, as for a peer whose shm segment says finalized */
            cvia_info(NET, "%s: peer %d closed", ep->link->name, peer);
            cvia__dg_peer_gone(ep, peer, -CVIA_ENOPEER);
            events++;
        }
    }
    return events;
}

/* ---- the flush, where fault hooks act ------------------------------------ */

static double dg_rand(struct dg_faults *f)
{
    f->rng ^= f->rng << 13;
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return (double)(f->rng >> 11) * (1.0 / 9007199254740992.0);
}

/* Fill the iovecs of out[i] with current acknowledgement, and seal it:
 * with the job's own keys, only the MAC's SipHash input is computed
 * (ep->mac_in[*nmac], its index in mac_at) and dg_flush finishes the batch
 * in one SipHash call. */
static void dg_finish(struct dg_ep *ep, int i, int *nmac)
{
    struct dg_out *o = &ep->out[i];
    struct dg_peer *pp = &ep->peers[o->peer];
    struct dg_slot *s = ep->out_slot[i];
    struct dg_hdr *h = s ? &s->hdr : &pp->ack_hdr;
    const struct dg_keys *k = dg_tx_keys(ep, o->peer);
    int covered;

    h->ack = pp->rcv_nxt;
    h->sack = dg_sack(ep, pp);
    h->flags &= (uint8_t)~(DG_F_HCSUM | DG_F_AUTH);
    if (k->auth)
        h->flags |= DG_F_AUTH;
    if (!s) {   /* a standalone ACK reports further with the extension */
        h->flags &= (uint8_t)~DG_F_EXT;
        if (h->type == DG_ACK && dg_sack_ext(ep, pp))
            h->flags |= DG_F_EXT;
        h->tag = h->type == DG_ACK ? (int32_t)(pp->dups_rcvd & 0x7fffffff) : 0;
    }
    o->iov[0].iov_base = h;
    o->iov[0].iov_len = sizeof(*h);
    o->iovcnt = 1;
    if (h->flags & DG_F_EXT) {
        o->iov[o->iovcnt].iov_base = s ? &s->ext : &pp->ack_ext;
        o->iov[o->iovcnt++].iov_len = sizeof(struct dg_ext);
    }
    covered = o->iovcnt;
    if (s && s->len) {
        o->iov[o->iovcnt].iov_base = (void *)(uintptr_t)s->data;
        o->iov[o->iovcnt++].iov_len = s->len;
        if (ep->cfg.csum_payload || k->auth)
            covered = o->iovcnt;
        else
            h->flags |= DG_F_HCSUM;
    }
    {
        uint64_t esn = dg_esn(dg_seq_hi(h->seq, pp->snd_nxt, pp->snd_hi), pp->rcv_hi);
        if (k != &ep->keys)   /* a launcher-free peer's own key: alone */
            cvia__dg_seal(h, o->iov, o->iovcnt, covered, k, esn);
        else if (cvia__dg_seal_begin(h, o->iov, o->iovcnt, covered, k, esn, ep->mac_in[*nmac]))
            ep->mac_at[(*nmac)++] = i;
    }
    /* whatever goes to the peer carries our acknowledgement */
    pp->ack_owed = 0;
    pp->ack_now = 0;
}

/* A private copy of out[i] in scratch slot @k (for corrupt / reorder). */
static void dg_copy_out(struct dg_ep *ep, int i, int k)
{
    struct dg_out *o = &ep->out[i];
    unsigned char *p = ep->scratch + (size_t)k * ep->dgram_max;
    size_t n = 0;

    for (int j = 0; j < o->iovcnt; j++) {
        memcpy(p + n, o->iov[j].iov_base, o->iov[j].iov_len);
        n += o->iov[j].iov_len;
    }
    o->iov[0].iov_base = p;
    o->iov[0].iov_len = n;
    o->iovcnt = 1;
}

int cvia__dg_flush(struct dg_ep *ep)
{
    struct dg_out *out = ep->out;
    int n = ep->nout, sent = 0, kept = 0;

    /* A segment queued for a resend may have been acknowledged since (by
     * an ACK later in the same receive batch): its message may be complete
     * and its buffer back in the application's hands, so it is not read
     * again. (A slot reused by a newer segment meanwhile just goes twice.) */
    for (int i = 0; i < n; i++) {
        struct dg_slot *s = ep->out_slot[i];
        if (s && dg_seq_lt(s->hdr.seq, ep->peers[out[i].peer].snd_una))
            continue;
        out[kept] = out[i];
        ep->out_slot[kept++] = s;
    }
    ep->nout = n = kept;
    if (!n)
        return 0;
    {
        int nmac = 0;
        for (int i = 0; i < n; i++)
            dg_finish(ep, i, &nmac);
        if (nmac) {
            cvia__siphash24_4w(ep->keys.secret, (const uint64_t (*)[4])ep->mac_in, ep->mac_tag,
                               (size_t)nmac);
            for (int j = 0; j < nmac; j++)
                ((struct dg_hdr *)out[ep->mac_at[j]].iov[0].iov_base)->mac = ep->mac_tag[j];
        }
    }
    if (ep->has_faults) {
        /* rebuild the batch in fout: dropped, duplicated, corrupted, swapped */
        struct dg_faults *f = &ep->faults;
        int m = 0, k = 0;
        for (int i = 0; i < n && m < 2 * (int)ep->cfg.batch; i++) {
            double r = dg_rand(f);
            if (r < f->drop) {
                ep->st.faults++;
                continue;
            }
            if (r < f->drop + f->corrupt && k < 2 * (int)ep->cfg.batch) {
                size_t len;
                dg_copy_out(ep, i, k++);
                len = out[i].iov[0].iov_len;
                ((unsigned char *)out[i].iov[0].iov_base)[(f->rng >> 8) % len] ^=
                    (unsigned char)(1u << (f->rng & 7));
                ep->st.faults++;
            }
            ep->fout[m++] = out[i];
            if (r >= f->drop + f->corrupt && r < f->drop + f->corrupt + f->dup) {
                ep->fout[m++] = out[i];
                ep->st.faults++;
            } else if (r >= f->drop + f->corrupt + f->dup &&
                       r < f->drop + f->corrupt + f->dup + f->reorder && m >= 2) {
                struct dg_out t = ep->fout[m - 1];
                ep->fout[m - 1] = ep->fout[m - 2];
                ep->fout[m - 2] = t;
                ep->st.faults++;
            }
        }
        out = ep->fout;
        n = m;
    }
    while (sent < n) {
        int rc = ep->link->send(ep, out + sent, n - sent);
        ep->st.tx_calls++;
        if (rc <= 0) {
            if (rc < 0 && rc != -EAGAIN)
                cvia_warn(NET, "%s: send: %s", ep->link->name, strerror(-rc));
            break;
        }
        sent += rc;
    }
    ep->st.tx += (uint64_t)sent;
    if (sent && ep->rx_call && ep->rx_drained && ep->cfg.rx_gap > 0)
        ep->rx_quiet_from = cvia__dg_now();   /* an answer takes a round trip from now */
    if (sent < n && !ep->has_faults) {
        /* the link is full: what did not go is sent again by the next tx
         * (new segments) or the timer (retransmissions) */
        for (int i = sent; i < n; i++) {
            struct dg_slot *s = ep->out_slot[i];
            struct dg_peer *pp = &ep->peers[out[i].peer];
            if (!s)
                continue;
            s->sent_at = 0;
            s->tries--;
            if (dg_seq_lt(s->hdr.seq, pp->snd_tx))
                pp->snd_tx = s->hdr.seq;
        }
    }
    ep->nout = 0;
    return sent;
}

/* Clean finalize: a BYE to every peer, then wait (bounded) until all we
 * sent is acknowledged and every peer's BYE has come. */
int cvia__dg_send_bye(struct dg_ep *ep)
{
    double deadline;

    for (int i = 0; i < ep->nremote; i++) {
        struct dg_op *op = dg_op_new(ep->remote[i], DG_BYE);
        if (op && dg_post(ep, ep->remote[i], &op->x))
            free(op);
    }
    deadline = cvia__dg_now() + (ep->cfg.peer_timeout < 2 ? ep->cfg.peer_timeout : 2);
    while (cvia__dg_now() < deadline) {
        int left = 0;
        cvia_mlock_lock(&ep->busy);
        ep->now = cvia__dg_now();
        cvia__dg_rx(ep);
        cvia__dg_tx(ep);
        cvia__dg_timers(ep);
        for (int i = 0; i < ep->nremote; i++) {
            struct dg_peer *pp = &ep->peers[ep->remote[i]];
            if (pp->gone)
                continue;
            if (pp->bye && pp->ack_owed)
                pp->ack_now = 1;
            /* launcher-free peers do not close together: theirs is not awaited */
            left |= pp->snd_una != pp->snd_nxt || pp->cur || pp->q_head ||
                    (!pp->bye && !ep->dyn);
        }
        cvia__dg_timers(ep);
        cvia__dg_flush(ep);
        cvia_mlock_unlock(&ep->busy);
        if (!left)
            return 0;
        sched_yield();
    }
    return -ETIMEDOUT;
}
