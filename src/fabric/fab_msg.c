/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Messages over corevia: sending (eager, or RTS then FIN), matching arrivals
 * against posted receives (tagged with ignore bits, untagged, directed or
 * not), the unexpected queues with peek / claim / discard, and the reads
 * of rendezvous. Every function here runs with ep->lock held; corevia is
 * thread-safe underneath, and the provider calls it without any of its
 * completion-queue locks held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab.h"
#include "util/copy.h"
#include "util/log.h"

/* ---- completions -------------------------------------------------------- */

static uint64_t fab_kind(int tagged)
{
    return tagged ? FI_TAGGED : FI_MSG;
}

/* A transmit with completion @flags and @context is over with @rc;
 * @report: it asked for a completion entry. An error's record is @room
 * (malloc'd, FAB_CQERR_ROOM bytes at least), the CQ's from now on when
 * @rc is an error and there is a transmit CQ; else it stays the caller's. */
static void fab_tx_end(struct fab_ep *ep, uint64_t flags, void *context, int report, int rc,
                       void *room)
{
    struct fab_cntr *cntr = !(flags & (FI_RMA | FI_ATOMIC)) ? ep->tx_cntr
                          : flags & FI_WRITE ? ep->wr_cntr : ep->rd_cntr;

    if (rc == 0) {
        if (cntr)
            fab_cntr_bump(cntr, 0);
        if (report && ep->tx_cq)
            fab_cq_push(ep->tx_cq, context, flags, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
        return;
    }
    if (cntr)
        fab_cntr_bump(cntr, 1);
    if (ep->tx_cq) {   /* errors are reported whatever the completion flags */
        fab_cq_push_err(ep->tx_cq, room, context, flags, 0, 0, 0, 0,
                        -fab_errno(rc), rc < 0 ? -rc : rc);
    }
}

static void fab_op_release(struct fab_ep *ep, struct fab_op *op);

/* Operation @op is over with @rc. 1: it failed and its block is now its
 * error's record (the CQ's: gone, do not touch it), 0: the caller frees
 * it. The success path allocates nothing for an error that may come. */
static int fab_tx_done(struct fab_ep *ep, struct fab_op *op, int rc)
{
    uint64_t flags = op->flags;
    void *context = op->context;
    int report = op->report;

    if (rc == 0 || !ep->tx_cq) {
        fab_tx_end(ep, flags, context, report, rc, NULL);
        return 0;
    }
    fab_op_release(ep, op);
    fab_tx_end(ep, flags, context, report, rc, op);
    return 1;
}

/* A receive got its message (@msg_len bytes were sent, at most rx->cap
 * of them are in the buffer), or failed with @rc. */
/* Receive @rx is over: @msg_len bytes (at most its capacity) arrived,
 * nothing failed. Inline: the matched eager message's completion, written
 * once into the CQ's ring (fab_cq_push) and the descriptor back. */
static inline __attribute__((always_inline)) void
fab_rx_ok(struct fab_ep *ep, struct fab_rx *rx, size_t msg_len, uint64_t tag, uint64_t data,
          int hflags, int32_t rank, uint16_t epid)
{
    struct fab_cq *cq = ep->rx_cq;

    if (__builtin_expect(ep->rx_cntr != NULL, 0))
        fab_cntr_bump(ep->rx_cntr, 0);
    if (cq && (!ep->rx_selective || (rx->flags & FI_COMPLETION)))
        fab_cq_push(cq, rx->context,
                    FI_RECV | (rx->flags & (FI_TAGGED | FI_MSG)) |
                    (hflags & FAB_H_DATA ? FI_REMOTE_CQ_DATA : 0),
                    msg_len, NULL, data, tag,
                    ep->caps & FI_SOURCE ? fab_av_reverse(ep->av, rank, epid)
                                         : FI_ADDR_NOTAVAIL);
    rx->next = ep->rx_free;
    ep->rx_free = rx;
}

static void fab_rx_done(struct fab_ep *ep, struct fab_rx *rx, int rc, size_t msg_len,
                        uint64_t tag, uint64_t data, int hflags, int32_t rank, uint16_t epid)
{
    uint64_t flags = FI_RECV | (rx->flags & (FI_TAGGED | FI_MSG));
    size_t got = msg_len < rx->cap ? msg_len : rx->cap;

    if (rc == 0 && msg_len <= rx->cap) {
        fab_rx_ok(ep, rx, msg_len, tag, data, hflags, rank, epid);
        return;
    }
    if (hflags & FAB_H_DATA)
        flags |= FI_REMOTE_CQ_DATA;
    if (rc == 0)
        rc = -CVIA_ETRUNC;
    if (ep->rx_cntr)
        fab_cntr_bump(ep->rx_cntr, 1);
    if (ep->rx_cq) {   /* the descriptor carries the error */
        fab_cq_push_err(ep->rx_cq, rx, rx->context, flags, got, data, tag,
                        rc == -CVIA_ETRUNC ? msg_len - got : 0, -fab_errno(rc),
                        rc < 0 ? -rc : rc);
        return;
    }
    rx->next = ep->rx_free;
    ep->rx_free = rx;
}

/* ---- queues ------------------------------------------------------------------ */

#define Q_APPEND(head, tail, x) do {            \
        (x)->next = NULL; (x)->prev = (tail);   \
        if (tail) (tail)->next = (x); else (head) = (x); \
        (tail) = (x);                           \
    } while (0)
#define Q_REMOVE(head, tail, x) do {                            \
        if ((x)->prev) (x)->prev->next = (x)->next; else (head) = (x)->next; \
        if ((x)->next) (x)->next->prev = (x)->prev; else (tail) = (x)->prev; \
        (x)->next = (x)->prev = NULL;                           \
    } while (0)

static int fab_matches(const struct fab_rx *rx, int32_t rank, uint16_t epid, uint64_t tag)
{
    if (rx->src_rank >= 0 && (rx->src_rank != rank || rx->src_epid != epid))
        return 0;
    return !(rx->flags & FI_TAGGED) || ((rx->tag ^ tag) & ~rx->ignore) == 0;
}

static size_t fab_scatter(const struct fab_rx *rx, const char *src, size_t n)
{
    size_t off = 0;

    if (rx->iov_count == 1 && n <= rx->iov[0].iov_len) {   /* the usual: one buffer */
        if (n)   /* a receive with no buffer (NULL, 0): memcpy's arguments are never NULL */
            memcpy(rx->iov[0].iov_base, src, n);
        return n;
    }

    for (size_t i = 0; i < rx->iov_count && off < n; i++) {
        size_t k = rx->iov[i].iov_len < n - off ? rx->iov[i].iov_len : n - off;
        if (k)
            memcpy(rx->iov[i].iov_base, src + off, k);
        off += k;
    }
    return off;
}

/* Send buffers of ep->slot_size bytes, kept for reuse. */
static void *fab_wire_get(struct fab_ep *ep)
{
    void *w = ep->wire_free;

    if (w) {
        memcpy(&ep->wire_free, w, sizeof(void *));
        return w;
    }
    return malloc(ep->slot_size);
}

static void fab_wire_put(struct fab_ep *ep, void *w)
{
    memcpy(w, &ep->wire_free, sizeof(void *));
    ep->wire_free = w;
}

void fab_ep_free_spares(struct fab_ep *ep)
{
    while (ep->wire_free)
        free(fab_wire_get(ep));
    while (ep->rx_free) {
        struct fab_rx *rx = ep->rx_free;
        ep->rx_free = rx->next;
        free(rx);
    }
}

void fab_op_link(struct fab_ep *ep, struct fab_op *op)
{
    op->next = ep->ops;
    ep->ops = op;
}

_Static_assert(sizeof(struct fab_rx) >= FAB_CQERR_ROOM, "a receive carries its error");
_Static_assert(sizeof(struct fab_op) >= FAB_CQERR_ROOM, "a failed operation carries its error");

struct fab_op *fab_op_new(int reports)
{
    (void)reports;   /* its record is the op itself (fab_tx_done) */
    return calloc(1, sizeof(struct fab_op));
}

/* What @op holds, not its block. */
static void fab_op_release(struct fab_ep *ep, struct fab_op *op)
{
    if (op->mr)
        cvia_mr_dereg(op->mr);
    if (op->wire_pooled)
        fab_wire_put(ep, op->wire);
    else
        free(op->wire);
    free(op->bounce);
}

void fab_op_free(struct fab_ep *ep, struct fab_op *op)
{
    fab_op_release(ep, op);
    free(op);
}

/* ---- sending ------------------------------------------------------------------- */

/* 0: @buf is on its way (freed once sent); else it is freed and the
 * error is corevia's: -ENOMEM (no request for it now: fab_send_hdr owes
 * the message) or the peer's (gone: its side ends by liveness). */
int fab_send_ctrl(struct fab_ep *ep, int32_t rank, uint16_t epid, void *buf, size_t n)
{
    int rc = fab_send_ctrl_keep(ep, rank, epid, buf, n);

    if (rc)
        free(buf);
    return rc;
}

int fab_send_ctrl_keep(struct fab_ep *ep, int32_t rank, uint16_t epid, void *buf, size_t n)
{
    cvia_req_t req = NULL;
    int done = 0, rc;

    rc = fab_fault("ctrl_isend") ? -ENOMEM :
         cvia_isend(buf, n, rank, FAB_TAG_BASE + epid, &req);
    if (rc)
        return rc;
    cvia_reap(&req, &done, NULL);
    if (done) {
        free(buf);
        return 0;
    }
    struct fab_op *op = calloc(1, sizeof(*op));
    if (!op) {   /* keep the buffer alive until it is sent */
        (void)cvia_wait(&req, NULL);
        free(buf);
        return 0;
    }
    op->kind = FAB_TX_CTRL;
    op->req = req;
    op->wire = buf;
    op->rank = rank;
    fab_op_link(ep, op);
    return 0;
}

/* A header-only control message @op (FIN, CTS, DC) to (@rank, @epid).
 * Without memory for it (its header, or corevia's request) it is owed
 * (fab_owed_retry): the peer's operation cannot end without it, and a
 * live peer is never failed by liveness. Dropped only when the peer is
 * gone (or the owed queue is full, which is logged). */
void fab_send_hdr(struct fab_ep *ep, int32_t rank, uint16_t epid, uint8_t op,
                  uint64_t cookie, int status, uint64_t tag)
{
    struct fab_hdr *h = op == FAB_OP_FIN && fab_fault("fin") ? NULL : calloc(1, sizeof(*h));
    int rc = -ENOMEM;

    if (h) {
        h->op = op;
        h->src_epid = ep->epid;
        h->status = status;
        h->cookie = cookie;
        h->tag = tag;
        rc = fab_send_ctrl(ep, rank, epid, h, sizeof(*h));
    }
    if (rc && rc != -ENOMEM && rc != -EAGAIN && cvia_peer_alive(rank) != 0)
        cvia_error(CORE, "libfabric provider: a control message (op %u) to rank %d is "
                   "lost: %s", (unsigned)op, rank, cvia_strerror(rc));
    if (rc != -ENOMEM && rc != -EAGAIN)
        return;   /* sent, or the peer is gone */
    if (ep->nowed < FAB_OWED_MAX) {
        unsigned k = ep->nowed++;
        ep->owed[k].rank = rank;
        ep->owed[k].epid = epid;
        ep->owed[k].op = op;
        ep->owed[k].status = status;
        ep->owed[k].cookie = cookie;
        ep->owed[k].tag = tag;
    } else {
        cvia_error(CORE, "libfabric provider: out of memory for %u control messages; "
                   "rank %d's operation waits for ever", ep->nowed + 1, rank);
    }
}

/* A FIN to (@rank, @epid): the rendezvous @cookie is over with @rc (owed
 * without memory: its sender's send cannot complete without it). */
static void fab_send_fin(struct fab_ep *ep, int32_t rank, uint16_t epid, uint64_t cookie, int rc)
{
    fab_send_hdr(ep, rank, epid, FAB_OP_FIN, cookie, rc, 0);
}

int fab_tx_begin(struct fab_ep *ep, const struct iovec *iov, size_t count, fi_addr_t dest,
                 uint64_t flags, int32_t *rank, uint16_t *epid, size_t *len)
{
    int rc;

    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (count > FAB_IOV_MAX || !ep->av || fab_av_resolve(ep->av, dest, rank, epid))
        return -FI_EINVAL;
    if ((rc = fab_ep_arm(ep)))
        return rc;
    *len = 0;
    for (size_t i = 0; i < count; i++)
        *len += iov[i].iov_len;
    if ((flags & FI_INJECT) && *len > fab_cfg.inject)
        return -FI_EMSGSIZE;
    return 0;
}

int fab_tx_report(const struct fab_ep *ep, uint64_t flags)
{
    return !(flags & FI_INJECT) && (!ep->tx_selective || (flags & FI_COMPLETION));
}

static ssize_t fab_send(struct fab_ep *ep, const struct iovec *iov, size_t count,
                        fi_addr_t dest, uint64_t tag, uint64_t data, int hflags,
                        void *context, uint64_t flags, int tagged)
{
    int32_t rank;
    uint16_t epid;
    size_t len = 0;
    int rc, done = 0, report;
    cvia_req_t req = NULL;
    struct fab_op *op;

    if ((rc = fab_tx_begin(ep, iov, count, dest, flags, &rank, &epid, &len)))
        return rc;
    report = fab_tx_report(ep, flags);
    if (tagged)
        hflags |= FAB_H_TAGGED;

    if (len <= fab_cfg.eager && count <= 1) {
        /* on its way at once, without a corevia request, if the peer's
         * ring takes it now (a peer on this host, a message of one slot):
         * header from the stack, payload from the caller's buffer */
        struct fab_hdr hs;
        size_t hl = FAB_EAGER_HDR + (hflags & FAB_H_DATA ? sizeof(uint64_t) : 0);

        hs.op = FAB_OP_EAGER;
        hs.flags = (uint8_t)hflags;
        hs.src_epid = ep->epid;
        hs.status = 0;
        hs.tag = tag;
        hs.data = data;
        rc = cvia_inject(&hs, hl, count ? iov[0].iov_base : NULL, len, rank,
                         FAB_TAG_BASE + epid);
        if (rc == 0) {
            fab_tx_end(ep, FI_SEND | fab_kind(tagged), context, report, 0, NULL);
            return 0;
        }
        if (rc != -EAGAIN)
            return fab_errno(rc);
    }
    if (len <= fab_cfg.eager) {
        struct fab_hdr *h = fab_wire_get(ep);
        size_t hl = FAB_EAGER_HDR + (hflags & FAB_H_DATA ? sizeof(uint64_t) : 0);
        char *p;

        if (!h)
            return -FI_EAGAIN;
        h->op = FAB_OP_EAGER;
        h->flags = (uint8_t)hflags;
        h->src_epid = ep->epid;
        h->status = 0;
        h->tag = tag;
        if (hflags & FAB_H_DATA)
            h->data = data;
        p = (char *)h + hl;
        for (size_t i = 0; i < count; i++) {
            if (iov[i].iov_len)
                memcpy(p, iov[i].iov_base, iov[i].iov_len);
            p += iov[i].iov_len;
        }
        rc = cvia_isend(h, hl + len, rank, FAB_TAG_BASE + epid, &req);
        if (rc) {
            fab_wire_put(ep, h);
            return fab_errno(rc);
        }
        rc = cvia_reap(&req, &done, NULL);
        if (done) {   /* buffered at once (a ring slot on this host); no
                       * fab_op built for it: zeroing one was a `rep stos`
                       * on which perf found the sender waiting, the store
                       * into the peer's ring just before it */
            fab_wire_put(ep, h);
            if (rc) {   /* failed at once: no record for it, no completion */
                void *room = malloc(FAB_CQERR_ROOM);
                if (!room)
                    return fab_errno(rc);
                fab_tx_end(ep, FI_SEND | fab_kind(tagged), context, report, rc, room);
                if (!ep->tx_cq)   /* not taken */
                    free(room);
                return 0;
            }
            fab_tx_end(ep, FI_SEND | fab_kind(tagged), context, report, 0, NULL);
            return 0;
        }
        if (!(op = fab_op_new(1))) {
            (void)cvia_wait(&req, NULL);
            fab_wire_put(ep, h);
            return -FI_ENOMEM;
        }
        op->kind = FAB_TX_EAGER;
        op->req = req;
        op->wire = h;
        op->wire_pooled = 1;
    } else {
        /* rendezvous: the receiver reads the buffer itself, once */
        struct fab_rts *r;
        const void *buf = count ? iov[0].iov_base : NULL;

        if (!(op = fab_op_new(1)) || !(r = calloc(1, sizeof(*r)))) {
            if (op)
                fab_op_free(ep, op);
            return -FI_EAGAIN;
        }
        op->wire = r;
        if (count > 1) {
            char *p = op->bounce = malloc(len);
            if (!p) {
                fab_op_free(ep, op);
                return -FI_EAGAIN;
            }
            for (size_t i = 0; i < count; i++) {
                memcpy(p, iov[i].iov_base, iov[i].iov_len);
                p += iov[i].iov_len;
            }
            buf = op->bounce;
        }
        /* a peer on this host reads the buffer (one copy, CMA or the
         * arena); one on another host answers CTS and we push the bytes
         * as one corevia message (segments straight from the buffer) */
        op->sbuf = buf;
        rc = 0;
        if (cvia_peer_local(rank) == 1) {
            rc = cvia_mr_reg((void *)buf, len, CVIA_MR_REMOTE_READ, &op->mr);
            if (rc == 0)
                rc = cvia_mr_desc(op->mr, &r->desc);
        }
        if (rc) {
            fab_op_free(ep, op);
            return fab_errno(rc);
        }
        r->h = (struct fab_hdr){ .op = FAB_OP_RTS, .flags = (uint8_t)hflags,
                                 .src_epid = ep->epid, .tag = tag, .data = data, .len = len,
                                 .cookie = ++ep->cookie_gen };
        op->cookie = r->h.cookie;
        rc = cvia_isend(r, sizeof(*r), rank, FAB_TAG_BASE + epid, &op->req);
        if (rc) {
            fab_op_free(ep, op);
            return fab_errno(rc);
        }
        op->kind = FAB_TX_RTS;
    }
    op->context = context;
    op->flags = FI_SEND | fab_kind(tagged);
    op->report = report;
    op->rank = rank;
    op->epid = epid;
    op->len = len;
    fab_op_link(ep, op);
    return 0;
}

/* The send Open MPI's mtl ofi and fi_pingpong make for a small message:
 * one buffer of at most CVIA_FI_EAGER bytes, from an armed endpoint, to a
 * peer whose ring takes it now. The address is resolved here, the header
 * built once on the stack and written with the payload straight into the
 * peer's ring slot (cvia_inject), and the completion, if one is asked for
 * (fab_tx_report), written in place: no call into fab_tx_begin, no iovec
 * walked. Anything else (a ring that is full, more than a slot, an
 * endpoint not armed yet, an address that does not resolve) is fab_send's,
 * which tries the same inject first. */
static inline ssize_t fab_send_one(struct fab_ep *ep, const void *buf, size_t len,
                                   fi_addr_t dest, uint64_t tag, uint64_t data, int hflags,
                                   void *context, uint64_t flags, int tagged)
{
    struct fab_av *av = ep->av;

    if (__builtin_expect(ep->armed && ep->enabled && av && len <= fab_cfg.eager &&
                         (!(flags & FI_INJECT) || len <= fab_cfg.inject), 1)) {
        uint64_t v = fab_av_entry(av, dest);
        if (v != FAB_AV_GONE) {
            struct fab_hdr hs;
            int rc;

            hs.op = FAB_OP_EAGER;
            hs.flags = (uint8_t)(hflags | (tagged ? FAB_H_TAGGED : 0));
            hs.src_epid = ep->epid;
            hs.status = 0;
            hs.tag = tag;
            hs.data = data;
            rc = cvia_inject(&hs, FAB_EAGER_HDR + (hflags & FAB_H_DATA ? sizeof(uint64_t) : 0),
                             buf, len, (int32_t)(v >> 16), FAB_TAG_BASE + (uint16_t)v);
            if (rc == 0) {
                if (ep->tx_cntr)
                    fab_cntr_bump(ep->tx_cntr, 0);
                if (fab_tx_report(ep, flags) && ep->tx_cq)
                    fab_cq_push(ep->tx_cq, context, FI_SEND | fab_kind(tagged), 0, NULL, 0, 0,
                                FI_ADDR_NOTAVAIL);
                return 0;
            }
            if (rc != -EAGAIN)
                return fab_errno(rc);
        }
    }
    struct iovec iv = { (void *)buf, len };
    return fab_send(ep, &iv, 1, dest, tag, data, hflags, context, flags, tagged);
}

/* ---- receiving ---------------------------------------------------------------- */

static void fab_read_finish(struct fab_ep *ep, struct fab_op *op, int rc)
{
    struct fab_rx *rx = op->rx;

    if (rc == -CVIA_ETRUNC && op->pushed)
        rc = 0;   /* the core dropped what does not fit; fab_rx_done says so */
    if (rc == 0 && op->bounce)
        fab_scatter(rx, op->bounce, op->len < rx->cap ? op->len : rx->cap);
    if (!op->pushed || rc)   /* a pusher completes on its own send */
        fab_send_fin(ep, op->rank, op->epid, op->cookie, rc);
    fab_rx_done(ep, rx, rc, op->len, op->tag, op->data, (int)op->flags, op->rank, op->epid);
    op->rx = NULL;
}

/* An RTS for @rx: read min(len, cap) bytes from the sender's region. */
static void fab_deliver_rts(struct fab_ep *ep, struct fab_rx *rx, int32_t rank, uint16_t epid,
                            int hflags, uint64_t tag, uint64_t data, uint64_t len,
                            const struct fab_rts *rts)
{
    struct fab_op *op = calloc(1, sizeof(*op));
    size_t n = len < rx->cap ? len : rx->cap;
    void *dst = rx->iov_count ? rx->iov[0].iov_base : NULL;
    int rc = 0;

    if (!op) {
        fab_send_fin(ep, rank, epid, rts->h.cookie, -ENOMEM);
        fab_rx_done(ep, rx, -ENOMEM, len, tag, data, hflags, rank, epid);
        return;
    }
    op->kind = FAB_RD;
    op->rx = rx;
    op->rank = rank;
    op->epid = epid;
    op->len = len;
    op->tag = tag;
    op->data = data;
    op->flags = (uint64_t)hflags;
    op->cookie = rts->h.cookie;
    if (n && rx->iov_count > 1 && !(dst = op->bounce = malloc(n)))
        rc = -ENOMEM;
    if (rc == 0 && len && cvia_peer_local(rank) == 0) {
        /* another host: post the receive for the pushed data, then CTS
         * (owed without memory: both sides wait for it) */
        int32_t dtag = FAB_DATA_TAG | (int32_t)((ep->epid & 0x3fu) << 23) |
                       (int32_t)(++ep->data_gen & 0x7fffffu);
        op->pushed = 1;
        if ((rc = cvia_irecv(dst, n, rank, dtag, &op->req)) == 0) {
            fab_send_hdr(ep, rank, epid, FAB_OP_CTS, op->cookie, 0, (uint64_t)dtag);
            fab_op_link(ep, op);
            return;
        }
    } else if (rc == 0 && n) {
        /* the region is the sender's: the peer the RTS came from (its own
         * idea of its index differs from ours between launcher-free peers) */
        cvia_mr_desc_t d = rts->desc;
        d.rank = rank;
        rc = cvia_read(dst, n, &d, 0, &op->req);
    }
    if (rc || !n) {
        fab_read_finish(ep, op, rc);
        fab_op_free(ep, op);
        return;
    }
    fab_op_link(ep, op);
}

/* Hand message @u (already off the queues, or built from an arrival) to
 * @rx. Inline: an eager one, the stream's every message, is a copy and a
 * completion, without a call of eleven arguments. */
static inline void fab_deliver(struct fab_ep *ep, struct fab_rx *rx, int32_t rank,
                               uint16_t epid, int op_kind, int hflags, uint64_t tag,
                               uint64_t data, uint64_t len, const void *payload,
                               const struct fab_rts *rts)
{
    if (op_kind == FAB_OP_EAGER) {
        if (__builtin_expect(len <= rx->cap, 1)) {
            if (len)
                fab_scatter(rx, payload, len);
            fab_rx_ok(ep, rx, len, tag, data, hflags, rank, epid);
            return;
        }
        fab_scatter(rx, payload, rx->cap);
        fab_rx_done(ep, rx, 0, len, tag, data, hflags, rank, epid);
        return;
    }
    fab_deliver_rts(ep, rx, rank, epid, hflags, tag, data, len, rts);
}

static void fab_unexp_free(struct fab_unexp *u)
{
    free(u->payload);
    free(u);
}

static int fab_arrive_msg(struct fab_ep *ep, int32_t rank, const char *buf, uint64_t data,
                          uint64_t len, const char *payload);

/* A message arrived in the inbox: a FIN for one of our sends, or a message
 * for a posted receive, or one that waits in the unexpected queue. 0, or
 * -FI_ENOMEM when it could not be queued (nothing changed: try again). */

static int fab_arrive(struct fab_ep *ep, int32_t rank, const char *buf, size_t n)
{
    const struct fab_hdr *h = (const void *)buf;
    uint64_t data = 0, len = 0;
    const char *payload = NULL;

    if (n < FAB_EAGER_HDR)
        return 0;   /* not ours to make sense of: corevia checked the tag only */
    if (h->op == FAB_OP_AMO || h->op == FAB_OP_AMO_RESP) {
        if (h->op == FAB_OP_AMO && n >= sizeof(struct fab_amo))
            fab_amo_arrive(ep, rank, buf, n);
        else if (h->op == FAB_OP_AMO_RESP && n >= sizeof(struct fab_hdr))
            fab_amo_resp(ep, rank, buf, n);
        return 0;
    }
    if (h->op == FAB_OP_EAGER) {
        size_t hl = FAB_EAGER_HDR + (h->flags & FAB_H_DATA ? sizeof(uint64_t) : 0);
        if (n < hl)
            return 0;
        if (h->flags & FAB_H_DATA)
            data = h->data;
        len = n - hl;
        payload = buf + hl;
    } else if (n == sizeof(struct fab_hdr) || n == sizeof(struct fab_rts)) {
        data = h->data;
        len = h->len;
    } else {
        return 0;
    }
    if (h->op == FAB_OP_CTS) {
        for (struct fab_op *op = ep->ops; op; op = op->next)
            if (op->kind == FAB_TX_RTS && op->cookie == h->cookie && op->rank == rank &&
                !op->fin && !op->pushing) {
                int rc = h->tag >= FAB_DATA_TAG && h->tag < FAB_TAG_BASE ?
                         cvia_isend(op->sbuf, op->len, rank, (int)h->tag, &op->push) : -EPROTO;
                op->pushing = 1;
                if (rc) {
                    op->fin = 1;
                    op->fin_rc = rc;
                }
                break;
            }
        return 0;
    }
    if (h->op == FAB_OP_DC) {   /* everything the peer wrote before is in place */
        fab_send_fin(ep, rank, h->src_epid, h->cookie, 0);
        return 0;
    }
    if (h->op == FAB_OP_FIN) {
        for (struct fab_op *op = ep->ops; op; op = op->next)
            if ((op->kind == FAB_TX_RTS || (op->kind == FAB_RMA && op->dc > 0)) &&
                op->cookie == h->cookie && op->rank == rank && !op->fin) {
                op->fin = 1;
                op->fin_rc = h->status;
                break;
            }
        return 0;
    }
    if ((h->op != FAB_OP_EAGER && h->op != FAB_OP_RTS) ||
        (h->op == FAB_OP_RTS && n != sizeof(struct fab_rts)))
        return 0;
    return fab_arrive_msg(ep, rank, buf, data, len, payload);
}

/* An EAGER or RTS message (@buf, its header checked; @payload and @len
 * its bytes, @data its CQ data): to the first posted receive it matches,
 * else to the unexpected queue (0), or -FI_ENOMEM with nothing changed. */
static int fab_arrive_msg(struct fab_ep *ep, int32_t rank, const char *buf, uint64_t data,
                          uint64_t len, const char *payload)
{
    const struct fab_hdr *h = (const void *)buf;
    int q = h->flags & FAB_H_TAGGED ? 0 : 1;

    for (struct fab_rx *rx = ep->posted_head[q]; rx; rx = rx->next)
        if (fab_matches(rx, rank, h->src_epid, h->tag)) {
            Q_REMOVE(ep->posted_head[q], ep->posted_tail[q], rx);
            fab_deliver(ep, rx, rank, h->src_epid, h->op, h->flags, h->tag, data, len,
                        payload, (const struct fab_rts *)(const void *)buf);
            return 0;
        }
    struct fab_unexp *u = fab_fault("unexp") ? NULL : calloc(1, sizeof(*u));
    if (!u)
        return -FI_ENOMEM;   /* the caller holds it and tries again */
    u->rank = rank;
    u->epid = h->src_epid;
    u->op = h->op;
    u->hflags = h->flags;
    u->tag = h->tag;
    u->data = data;
    u->len = len;
    if (h->op == FAB_OP_RTS) {
        memcpy(&u->rts, buf, sizeof(u->rts));
    } else if (len) {
        if (!(u->payload = malloc(len))) {
            free(u);
            return -FI_ENOMEM;
        }
        memcpy(u->payload, payload, len);
    }
    Q_APPEND(ep->unexp_head[q], ep->unexp_tail[q], u);
    return 0;
}

/* cvia_inbox_progress's visitor, on this thread inside fab_progress_locked
 * (ep->lock held): an eager message straight from the peer's ring slot,
 * matched here once against the posted receives and copied once into the
 * receive's buffer (or queued as unexpected). Anything else (a rendezvous,
 * a control message: they call corevia), an arrival while older ones are
 * held for want of memory, or one that cannot be queued now, is left to
 * the inbox (0), and corevia keeps the ones after it behind it.
 * The stream's every message (Open MPI posts its receives in the order
 * they are matched) is for the first receive of its queue, of one buffer
 * that holds it, and its completion asks for nothing but the entry (no
 * counter, no source address, room in an unlocked CQ): taken off the head,
 * copied inline and its entry written here, with no call and no register
 * saved, instead of fab_arrive_msg's walk, frame and fab_scatter's call.
 * Only payloads that cvia__copy_small moves without memcpy: a call would
 * cost the frame this path avoids. */
#define FAB_VISIT_INLINE 32
static __attribute__((noinline)) int fab_visit_any(struct fab_ep *ep, int src,
                                                   const struct fab_hdr *h, size_t len,
                                                   const char *payload)
{
    return fab_arrive_msg(ep, src, (const char *)h, h->flags & FAB_H_DATA ? h->data : 0, len,
                          payload) == 0;
}

static __attribute__((noinline)) int fab_visit_wake(struct fab_cq *cq)
{
    fab_cq_wake(cq);
    return 1;
}

static int fab_visit(void *arg, int src, const void *buf, size_t n)
{
    struct fab_ep *ep = arg;
    const struct fab_hdr *h = buf;
    struct fab_cq *cq = ep->rx_cq;
    struct fab_rx *rx;
    size_t hl, len;
    int q;

    if (n < FAB_EAGER_HDR || h->op != FAB_OP_EAGER || ep->nheld || ep->early_buf)
        return 0;
    hl = FAB_EAGER_HDR + (h->flags & FAB_H_DATA ? sizeof(uint64_t) : 0);
    if (n < hl)
        return 0;   /* fab_arrive drops it */
    len = n - hl;
    q = h->flags & FAB_H_TAGGED ? 0 : 1;
    rx = ep->posted_head[q];
    if (__builtin_expect(len > FAB_VISIT_INLINE || !rx || rx->iov_count != 1 || len > rx->cap || !cq ||
                         !fab_cq_room(cq) || ep->rx_cntr || (ep->caps & FI_SOURCE) ||
                         (ep->rx_selective && !(rx->flags & FI_COMPLETION)) ||
                         !fab_matches(rx, src, h->src_epid, h->tag), 0))
        return fab_visit_any(ep, src, h, len, (const char *)buf + hl);
    /* everything read before the copy, which could alias it for the compiler */
    void *dst = rx->iov[0].iov_base;
    int wake = fab_cq_put(cq, rx->context,
                          FI_RECV | (rx->flags & (FI_TAGGED | FI_MSG)) |
                          (h->flags & FAB_H_DATA ? FI_REMOTE_CQ_DATA : 0),
                          len, NULL, h->flags & FAB_H_DATA ? h->data : 0, h->tag,
                          FI_ADDR_NOTAVAIL);
    if ((ep->posted_head[q] = rx->next))
        rx->next->prev = NULL;
    else
        ep->posted_tail[q] = NULL;
    rx->next = ep->rx_free;
    ep->rx_free = rx;
    cvia__copy_small(dst, (const char *)buf + hl, len);
    return __builtin_expect(wake, 0) ? fab_visit_wake(cq) : 1;
}

/* Messages for the endpoint's tag that corevia took before the inbox
 * opened (a peer that reached this process while the endpoint was not
 * armed yet) are in corevia's unexpected queue: take them, in order,
 * before anything of the inbox. */
int fab_take_early(struct fab_ep *ep, char *buf)
{
    /* bounded: each turn takes one message that had arrived already */
    for (int k = 0; k < 1 << 20; k++) {
        cvia_req_t req = NULL;
        cvia_status_t st;
        int done = 0, rc;

        if (cvia_irecv(buf, ep->slot_size, CVIA_ANY_LIVE_SOURCE, FAB_TAG_BASE + ep->epid, &req))
            break;
        rc = cvia_reap(&req, &done, &st);
        if (!done) {
            if (cvia_cancel(&req) == 0)
                break;   /* nothing was waiting */
            rc = cvia_wait(&req, &st);   /* one still arriving */
        }
        if (rc == 0 && fab_arrive(ep, st.source, buf, st.len)) {
            ep->early_buf = buf;   /* out of memory: it waits here */
            ep->early_src = st.source;
            ep->early_len = st.len;
            return -FI_ENOMEM;
        }
    }
    return 0;
}

/* The control messages owed, in order, as far as memory allows. */
static void fab_owed_retry(struct fab_ep *ep)
{
    unsigned n = ep->nowed, k;

    ep->nowed = 0;
    for (k = 0; k < n && ep->nowed == 0; k++)   /* owed again: stop there */
        fab_send_hdr(ep, ep->owed[k].rank, ep->owed[k].epid, ep->owed[k].op,
                     ep->owed[k].cookie, ep->owed[k].status, ep->owed[k].tag);
    if (ep->nowed) {   /* it went back to slot 0: the rest after it */
        memmove(&ep->owed[1], &ep->owed[k], (n - k) * sizeof(ep->owed[0]));
        ep->nowed = 1 + (n - k);
    }
}

/* Arrivals held for want of memory, in their order: the early message,
 * the early ones after it, the inbox batch. 0 once none is held. */
static int fab_held_retry(struct fab_ep *ep)
{
    if (ep->early_buf) {
        char *buf = ep->early_buf;
        if (fab_arrive(ep, ep->early_src, buf, ep->early_len))
            return -FI_ENOMEM;
        ep->early_buf = NULL;
        if (fab_take_early(ep, buf))
            return -FI_ENOMEM;   /* the next one is held in it */
        free(buf);
    }
    for (; ep->held_off < ep->nheld; ep->held_off++) {
        const cvia_inbox_msg_t *m = &ep->held[ep->held_off];
        if (m->status == 0 && fab_arrive(ep, m->source, m->buf, m->len))
            return -FI_ENOMEM;
    }
    if (ep->nheld)
        cvia_inbox_release(ep->inbox, ep->held, ep->nheld);
    ep->nheld = ep->held_off = 0;
    return 0;
}

void fab_held_drop(struct fab_ep *ep)
{
    if (ep->nheld)
        cvia_inbox_release(ep->inbox, ep->held, ep->nheld);
    ep->nheld = ep->held_off = 0;
    free(ep->early_buf);
    ep->early_buf = NULL;
}

/* Operations that involve a peer corevia now knows to be gone. */
static void fab_fail_lost(struct fab_ep *ep)
{
    for (int q = 0; q < 2; q++) {
        struct fab_rx *rx = ep->posted_head[q], *next;
        for (; rx; rx = next) {
            next = rx->next;
            if (rx->src_rank >= 0 && cvia_peer_alive(rx->src_rank) == 0) {
                Q_REMOVE(ep->posted_head[q], ep->posted_tail[q], rx);
                fab_rx_done(ep, rx, -CVIA_ENOPEER, 0, rx->tag, 0, 0, rx->src_rank,
                            (uint16_t)rx->src_epid);
            }
        }
    }
    for (struct fab_op *op = ep->ops; op; op = op->next)
        if ((op->kind == FAB_TX_RTS || op->kind == FAB_TX_AMO ||
             (op->kind == FAB_RMA && op->dc > 0)) && !op->fin && !op->push &&
            cvia_peer_alive(op->rank) == 0) {   /* a pushed send fails in corevia */
            op->fin = 1;
            op->fin_rc = -CVIA_ENOPEER;
        }
}

/* corevia could not be brought up: every posted receive fails with @err
 * (an FI_* code), so nobody waits for ever. */
static void fab_fail_all(struct fab_ep *ep, int err)
{
    for (int q = 0; q < 2; q++)
        while (ep->posted_head[q]) {
            struct fab_rx *rx = ep->posted_head[q];
            Q_REMOVE(ep->posted_head[q], ep->posted_tail[q], rx);
            if (ep->rx_cq) {   /* the descriptor carries the error */
                fab_cq_push_err(ep->rx_cq, rx, rx->context,
                                FI_RECV | (rx->flags & (FI_TAGGED | FI_MSG)),
                                0, 0, rx->tag, 0, -err, CVIA_EBOOT);
                continue;
            }
            rx->next = ep->rx_free;
            ep->rx_free = rx;
        }
}

/* The inbox's arrivals, in the order they began to arrive (per peer: the
 * order it sent them), @n of them already polled into ep->held (0: none
 * yet); the buffers go back to corevia at once, but for a batch with one
 * that could not be queued for want of memory: held, from it on, and
 * tried first next time. Out of line: an empty poll does not come here. */
static __attribute__((noinline)) void fab_arrivals(struct fab_ep *ep, int n)
{
    for (int k = 0; k < 64; k++) {
        cvia_inbox_msg_t *m = ep->held;
        int i;

        if (!n) {
            if ((ep->nheld | (ep->early_buf != NULL)) && fab_held_retry(ep) != 0)
                break;
            if ((n = cvia_inbox_poll(ep->inbox, m, FAB_INBOX_BATCH)) <= 0)
                break;   /* the usual poll: no lock round in the release */
        }
        for (i = 0; i < n; i++)
            if (m[i].status == 0 &&   /* else a peer died as it arrived */
                fab_arrive(ep, m[i].source, m[i].buf, m[i].len))
                break;
        if (i < n) {
            ep->nheld = n;
            ep->held_off = i;
            break;
        }
        cvia_inbox_release(ep->inbox, m, n);
        if (n < FAB_INBOX_BATCH)
            break;
        n = 0;
    }
}

/* Sends and reads in flight (ep->ops). */
static __attribute__((noinline)) void fab_ops_progress(struct fab_ep *ep)
{
    for (struct fab_op **pp = &ep->ops, *op; (op = *pp);) {
        struct fab_op *next = op->next;   /* a failed op becomes its error's record */
        int done = 1, rc = op->req_rc, finished = 0, gone = 0;

        if (op->req) {
            rc = cvia_reap(&op->req, &done, NULL);
            op->req_rc = rc;
        }
        if (done) {
            switch (op->kind) {
            case FAB_TX_EAGER:
                gone = fab_tx_done(ep, op, rc);
                finished = 1;
                break;
            case FAB_TX_CTRL:
                finished = 1;
                break;
            case FAB_TX_RTS:
                if (op->pushing && op->push) {
                    int pdone = 0, prc = cvia_reap(&op->push, &pdone, NULL);
                    if (pdone) {
                        op->fin = 1;
                        op->fin_rc = prc;
                    }
                }
                if (rc || op->fin) {
                    gone = fab_tx_done(ep, op, rc ? rc : op->fin_rc);
                    finished = 1;
                }
                break;
            case FAB_RD:
                fab_read_finish(ep, op, rc);
                finished = 1;
                break;
            case FAB_RMA:
                if (rc == 0 && fab_rma_written(ep, op))
                    break;   /* waiting for the target's answer */
                if (rc == 0 && op->fin)
                    rc = op->fin_rc;
                if (rc == 0 && op->iov_count) {   /* a read into several iovs */
                    size_t off = 0;
                    for (size_t i = 0; i < op->iov_count; i++) {
                        if (op->iov[i].iov_len)
                            memcpy(op->iov[i].iov_base, (char *)op->bounce + off,
                                   op->iov[i].iov_len);
                        off += op->iov[i].iov_len;
                    }
                }
                gone = fab_tx_done(ep, op, rc);
                finished = 1;
                break;
            case FAB_TX_AMO:
                if (rc || op->fin) {
                    gone = fab_tx_done(ep, op, rc ? rc : op->fin_rc);
                    finished = 1;
                }
                break;
            }
        }
        if (finished) {
            if (*pp != op)   /* ops linked at the head meanwhile (a FIN not sent at
                              * once, fab_read_finish): op is behind them */
                for (pp = &ep->ops; *pp != op; pp = &(*pp)->next)
                    ;
            *pp = next;
            if (!gone)
                fab_op_free(ep, op);
        } else {
            pp = &op->next;
        }
    }
}

/* Dead peers: corevia notices them in waits; we only ever poll. */
static __attribute__((noinline)) void fab_liveness(struct fab_ep *ep)
{
    uint64_t now = cvia__clock_ns();
    if ((double)now * 1e-9 >= ep->next_check) {
        int lost = cvia_check_peers();
        ep->next_check = (double)now * 1e-9 + fab_cfg.liveness;
        if (lost > ep->nlost_seen) {
            ep->nlost_seen = lost;
            fab_fail_lost(ep);
        }
    }
}

/* First use: arm the endpoint. 0 when this round has nothing more to do. */
static __attribute__((noinline)) int fab_progress_arm(struct fab_ep *ep)
{
    if (!ep->enabled)
        return 0;
    if (!ep->armed) {
        /* first-use wire-up: polling with a receive posted is a use */
        if (!ep->posted_head[0] && !ep->posted_head[1] && !ep->ops)
            return 0;
        if (fab_ep_arm(ep)) {
            if (ep->arm_rc)   /* else out of memory for now: the next round tries again */
                fab_fail_all(ep, ep->arm_rc);
            return 0;
        }
    }
    return 1;
}

/* One progress round (ep->lock held). An empty poll, the wait loop's usual
 * finding, is the core's look at the rings, one look at the inbox and a
 * load per other source of work, with no register saved for the rest:
 * everything else is out of line. */
void fab_progress_locked(struct fab_ep *ep)
{
    if (__builtin_expect(!ep->armed || !ep->enabled, 0) && !fab_progress_arm(ep))
        return;
    cvia_inbox_progress(ep->inbox, fab_visit, ep);
    if (ep->nowed)
        fab_owed_retry(ep);
    if (__builtin_expect(ep->nheld | (ep->early_buf != NULL), 0)) {
        fab_arrivals(ep, 0);
    } else {
        int n = cvia_inbox_poll(ep->inbox, ep->held, FAB_INBOX_BATCH);
        if (n > 0)
            fab_arrivals(ep, n);
    }
    /* no call where neither RMA was asked for (mtl ofi) nor an atomic's
     * answer is owed (a target answers atomics whatever its caps) */
    if ((ep->caps & FI_RMA) || ep->amo_owed)
        fab_rma_events(ep);
    if (ep->ops)
        fab_ops_progress(ep);
    /* the clock only every 64th round: a read costs as much as a round */
    if ((ep->ops || ep->posted_head[0] || ep->posted_head[1]) && ++ep->check_tick % 64 == 0)
        fab_liveness(ep);
}

/* Receive side of every receive call. */
static ssize_t fab_recv(struct fab_ep *ep, const struct iovec *iov, size_t count,
                        fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
                        uint64_t flags, int tagged)
{
    int q = tagged ? 0 : 1;
    int32_t rank = -1;
    uint16_t epid = 0;
    struct fab_unexp *u;
    struct fab_rx *rx;

    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (count > FAB_IOV_MAX)
        return -FI_EINVAL;
    if (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV) &&
        (!ep->av || fab_av_resolve(ep->av, src, &rank, &epid)))
        return -FI_EINVAL;

    if (flags & FI_PEEK) {
        fab_progress_locked(ep);
        for (u = ep->unexp_head[q]; u; u = u->next)
            if (!u->claimed && (rank < 0 || (u->rank == rank && u->epid == epid)) &&
                (!tagged || ((u->tag ^ tag) & ~ignore) == 0))
                break;
        if (!u) {   /* FI_ENOMSG, in a receive descriptor (none: ask again) */
            if (ep->rx_cq) {
                if ((rx = ep->rx_free))
                    ep->rx_free = rx->next;
                else if (!(rx = malloc(sizeof(*rx))))
                    return -FI_EAGAIN;
                fab_cq_push_err(ep->rx_cq, rx, context, FI_RECV | fab_kind(tagged), 0, 0, tag,
                                0, FI_ENOMSG, 0);
            }
            return 0;
        }
        uint64_t cf = FI_RECV | fab_kind(tagged) | (u->hflags & FAB_H_DATA ? FI_REMOTE_CQ_DATA : 0);
        fi_addr_t from = ep->caps & FI_SOURCE ? fab_av_reverse(ep->av, u->rank, u->epid)
                                              : FI_ADDR_NOTAVAIL;
        if (ep->rx_cq)
            fab_cq_push(ep->rx_cq, context, cf, u->len, NULL, u->data, u->tag, from);
        if (flags & FI_DISCARD) {
            Q_REMOVE(ep->unexp_head[q], ep->unexp_tail[q], u);
            if (u->op == FAB_OP_RTS)
                fab_send_fin(ep, u->rank, u->epid, u->rts.h.cookie, 0);
            fab_unexp_free(u);
        } else if (flags & FI_CLAIM) {
            u->claimed = context;
        }
        return 0;
    }

    if ((rx = ep->rx_free))
        ep->rx_free = rx->next;
    else if (!(rx = malloc(sizeof(*rx))))
        return -FI_EAGAIN;
    rx->next = rx->prev = NULL;
    rx->cap = 0;
    rx->context = context;
    rx->flags = flags | fab_kind(tagged);
    rx->tag = tag;
    rx->ignore = ignore;
    rx->src_rank = rank;
    rx->src_epid = epid;
    rx->iov_count = count;
    for (size_t i = 0; i < count; i++) {
        rx->iov[i] = iov[i];
        rx->cap += iov[i].iov_len;
    }

    if (flags & FI_CLAIM) {   /* the message a peek claimed for @context */
        for (u = ep->unexp_head[q]; u && u->claimed != context; u = u->next)
            ;
        if (!u) {
            rx->next = ep->rx_free;
            ep->rx_free = rx;
            return -FI_EINVAL;
        }
    } else {
        for (u = ep->unexp_head[q]; u; u = u->next)
            if (!u->claimed && fab_matches(rx, u->rank, u->epid, u->tag))
                break;
    }
    if (!u) {
        Q_APPEND(ep->posted_head[q], ep->posted_tail[q], rx);
        return 0;
    }
    Q_REMOVE(ep->unexp_head[q], ep->unexp_tail[q], u);
    if (flags & FI_DISCARD) {
        if (u->op == FAB_OP_RTS)
            fab_send_fin(ep, u->rank, u->epid, u->rts.h.cookie, 0);
        rx->cap = 0;
        fab_rx_done(ep, rx, 0, 0, u->tag, u->data, u->hflags, u->rank, u->epid);
    } else {
        fab_deliver(ep, rx, u->rank, u->epid, u->op, u->hflags, u->tag, u->data, u->len,
                    u->payload, &u->rts);
    }
    fab_unexp_free(u);
    return 0;
}

/* fab_recv of one buffer, out of line: fab_recv_one's frame stays small. */
static __attribute__((noinline)) ssize_t fab_recv_buf(struct fab_ep *ep, void *buf, size_t len,
                                                      fi_addr_t src, uint64_t tag,
                                                      uint64_t ignore, void *context, int tagged)
{
    struct iovec v = { buf, len };
    return fab_recv(ep, &v, 1, src, tag, ignore, context, ep->rx_op_flags, tagged);
}

/* fi_trecv / fi_recv of one buffer, mtl ofi's every receive: posted with
 * the fewest loads and stores when that is all there is to it (a spare
 * descriptor, nothing unexpected to match it, a source that resolves, no
 * peek/claim/discard flag); anything else is fab_recv's. */
static inline ssize_t fab_recv_one(struct fab_ep *ep, void *buf, size_t len, fi_addr_t src,
                                   uint64_t tag, uint64_t ignore, void *context, int tagged)
{
    int q = !tagged;
    uint64_t flags = ep->rx_op_flags, v = (uint64_t)UINT32_MAX << 16;   /* rank -1, epid 0 */
    struct fab_rx *rx = ep->rx_free;

    if (__builtin_expect(!rx || ep->unexp_head[q] || !ep->enabled ||
                         (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) ||
                         (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV) &&
                          (!ep->av || (v = fab_av_entry(ep->av, src)) == FAB_AV_GONE)), 0))
        return fab_recv_buf(ep, buf, len, src, tag, ignore, context, tagged);
    ep->rx_free = rx->next;
    rx->context = context;
    rx->flags = flags | fab_kind(tagged);
    rx->tag = tag;
    rx->ignore = ignore;
    rx->src_rank = (int32_t)(v >> 16);
    rx->src_epid = (uint16_t)v;
    rx->iov_count = 1;
    rx->cap = len;
    rx->iov[0].iov_base = buf;
    rx->iov[0].iov_len = len;
    Q_APPEND(ep->posted_head[q], ep->posted_tail[q], rx);
    return 0;
}

int fab_cancel_locked(struct fab_ep *ep, void *context)
{
    for (int q = 0; q < 2; q++)
        for (struct fab_rx *rx = ep->posted_head[q]; rx; rx = rx->next)
            if (rx->context == context) {
                Q_REMOVE(ep->posted_head[q], ep->posted_tail[q], rx);
                if (ep->rx_cq) {   /* the descriptor carries the error */
                    fab_cq_push_err(ep->rx_cq, rx, context,
                                    FI_RECV | (rx->flags & (FI_TAGGED | FI_MSG)),
                                    0, 0, rx->tag, 0, FI_ECANCELED, 0);
                    return 0;
                }
                rx->next = ep->rx_free;
                ep->rx_free = rx;
                return 0;
            }
    return -FI_ENOENT;
}

/* Closing: receives still posted and messages never received are dropped;
 * sends still in flight are given corevia's liveness bound to finish. */
void fab_ep_flush(struct fab_ep *ep, int err)
{
    for (int q = 0; q < 2; q++) {
        while (ep->posted_head[q]) {
            struct fab_rx *rx = ep->posted_head[q];
            Q_REMOVE(ep->posted_head[q], ep->posted_tail[q], rx);
            free(rx);
        }
        while (ep->unexp_head[q]) {
            struct fab_unexp *u = ep->unexp_head[q];
            Q_REMOVE(ep->unexp_head[q], ep->unexp_tail[q], u);
            if (u->op == FAB_OP_RTS)   /* let its sender go */
                fab_send_fin(ep, u->rank, u->epid, u->rts.h.cookie, err);
            fab_unexp_free(u);
        }
    }
    /* the control messages still owed (those FINs among them): once more,
     * then the peers' operations they end wait for ever; say so */
    if (ep->nowed)
        fab_owed_retry(ep);
    if (ep->nowed)
        cvia_warn(CORE, "libfabric provider: endpoint %u closes owing %u control messages "
                  "for want of memory (the first to rank %d); their peers' operations "
                  "wait for ever", (unsigned)ep->epid, ep->nowed, ep->owed[0].rank);
    ep->nowed = 0;
    /* corevia requests must end before their buffers go: wait for them */
    while (ep->ops) {
        struct fab_op *op = ep->ops;
        ep->ops = op->next;
        if (op->req)
            (void)cvia_wait(&op->req, NULL);
        if (op->push)
            (void)cvia_wait(&op->push, NULL);
        if (op->kind == FAB_RD && op->rx)
            free(op->rx);
        fab_op_free(ep, op);
    }
}

/* ---- the operation tables --------------------------------------------------------- */


static ssize_t fab_tsend(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                         fi_addr_t dest, uint64_t tag, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, tag, 0, 0, context, ep->tx_op_flags, 1));
}

static ssize_t fab_tsendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
                          size_t count, fi_addr_t dest, uint64_t tag, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send(ep, iov, count, dest, tag, 0, 0, context, ep->tx_op_flags, 1));
}

static ssize_t fab_tsendmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    int hf = flags & FI_REMOTE_CQ_DATA ? FAB_H_DATA : 0;
    return FAB_LOCKED(ep, fab_send(ep, m->msg_iov, m->iov_count, m->addr, m->tag, m->data, hf,
                               m->context, flags, 1));
}

static ssize_t fab_tinject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
                           uint64_t tag)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, tag, 0, 0, NULL, FI_INJECT, 1));
}

static ssize_t fab_tsenddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                             uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, tag, data, FAB_H_DATA, context,
                                       ep->tx_op_flags, 1));
}

static ssize_t fab_tinjectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
                               fi_addr_t dest, uint64_t tag)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, tag, data, FAB_H_DATA, NULL, FI_INJECT,
                                       1));
}

static ssize_t fab_trecv(struct fid_ep *fep, void *buf, size_t len, void *desc,
                         fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_recv_one(ep, buf, len, src, tag, ignore, context, 1));
}

static ssize_t fab_trecvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
                          size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
                          void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_recv(ep, iov, count, src, tag, ignore, context, ep->rx_op_flags, 1));
}

static ssize_t fab_trecvmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_recv(ep, m->msg_iov, m->iov_count, m->addr, m->tag, m->ignore,
                               m->context, flags, 1));
}

struct fi_ops_tagged fab_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = fab_trecv,
    .recvv = fab_trecvv,
    .recvmsg = fab_trecvmsg,
    .send = fab_tsend,
    .sendv = fab_tsendv,
    .sendmsg = fab_tsendmsg,
    .inject = fab_tinject,
    .senddata = fab_tsenddata,
    .injectdata = fab_tinjectdata,
};

static ssize_t fab_msend(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                         fi_addr_t dest, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, 0, 0, 0, context, ep->tx_op_flags, 0));
}

static ssize_t fab_msendv(struct fid_ep *fep, const struct iovec *iov, void **desc,
                          size_t count, fi_addr_t dest, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send(ep, iov, count, dest, 0, 0, 0, context, ep->tx_op_flags, 0));
}

static ssize_t fab_msendmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    int hf = flags & FI_REMOTE_CQ_DATA ? FAB_H_DATA : 0;
    return FAB_LOCKED(ep, fab_send(ep, m->msg_iov, m->iov_count, m->addr, 0, m->data, hf,
                               m->context, flags, 0));
}

static ssize_t fab_minject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, 0, 0, 0, NULL, FI_INJECT, 0));
}

static ssize_t fab_msenddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                             uint64_t data, fi_addr_t dest, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, 0, data, FAB_H_DATA, context,
                                       ep->tx_op_flags, 0));
}

static ssize_t fab_minjectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
                               fi_addr_t dest)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_send_one(ep, buf, len, dest, 0, data, FAB_H_DATA, NULL, FI_INJECT,
                                       0));
}

static ssize_t fab_mrecv(struct fid_ep *fep, void *buf, size_t len, void *desc,
                         fi_addr_t src, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_recv_one(ep, buf, len, src, 0, 0, context, 0));
}

static ssize_t fab_mrecvv(struct fid_ep *fep, const struct iovec *iov, void **desc,
                          size_t count, fi_addr_t src, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_recv(ep, iov, count, src, 0, 0, context, ep->rx_op_flags, 0));
}

static ssize_t fab_mrecvmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_recv(ep, m->msg_iov, m->iov_count, m->addr, 0, 0, m->context,
                               flags, 0));
}

struct fi_ops_msg fab_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = fab_mrecv,
    .recvv = fab_mrecvv,
    .recvmsg = fab_mrecvmsg,
    .send = fab_msend,
    .sendv = fab_msendv,
    .sendmsg = fab_msendmsg,
    .inject = fab_minject,
    .senddata = fab_msenddata,
    .injectdata = fab_minjectdata,
};
