/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* shm fast path: push message slots into a peer's ring, drain my rings.
 * No system call here; the locks are per peer and direction, taken with
 * trylock by progress so threads spread over peers instead of queueing. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <string.h>

#include <corevia/cvia_errno.h>
#include "prov/shm/shm.h"
#include "util/log.h"

#define SHM_START_MAX 32   /* rendezvous receives started per drain */

static struct shm_op *op_of(struct cvia_xfer *x)
{
    return (struct shm_op *)(void *)((char *)x - offsetof(struct shm_op, x));
}

/* One RTS slot for a rendezvous send; the send then waits on rv_send. */
static int shm_push_rts(struct cvia_prov_ep *ep, struct shm_peer *pp,
                        struct cvia_xfer *x)
{
    struct shm_slot *s = cvia_ring_claim(&pp->tx_ring, pp->tx_pos);
    uint32_t idx = (uint32_t)x->prov_cookie;

    if (!s)
        return 0;
    s->flags = SHM_SLOT_FIRST | SHM_SLOT_LAST | SHM_SLOT_RTS;
    s->ctx = x->ctx;
    s->tag = x->tag;
    s->msg_len = x->len;
    s->len = sizeof(idx);
    memcpy((unsigned char *)s + SHM_SLOT_HDR, &idx, sizeof(idx));
    cvia_ring_publish(s, pp->tx_pos);
    pp->tx_pos++;
    return 1;
}

/* A thread of the segment's owner may sleep in shm_block: wake it. The
 * load of sleepers needs no fence here; the sleeper's membarrier orders
 * it against the slot just published (see shm_block). */
static void shm_wake(struct shm_seg_hdr *h)
{
    if (!atomic_load_explicit(&h->sleepers, memory_order_relaxed))
        return;
    atomic_fetch_add_explicit(&h->wake, 1, memory_order_release);
    syscall(SYS_futex, &h->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int shm_push_ring(struct cvia_prov_ep *ep, int peer);

/* Push as much of @peer's send queue as its ring takes (tx_lock held),
 * then wake the peer if it sleeps. Returns the messages fully written. */
static int shm_push(struct cvia_prov_ep *ep, int peer)
{
    struct shm_peer *pp = &ep->peers[peer];
    uint64_t before = pp->tx_pos;
    int done = shm_push_ring(ep, peer);

    if (pp->tx_pos != before)
        shm_wake(pp->seg);
    return done;
}

static int shm_push_ring(struct cvia_prov_ep *ep, int peer)
{
    struct shm_peer *pp = &ep->peers[peer];
    const size_t cap = ep->slot_size - SHM_SLOT_HDR;
    const struct cvia_prov_upcalls *up = ep->args.up;
    int done = 0;
    struct cvia_xfer *x;

    while ((x = pp->txq_head)) {
        const struct shm_rma_hdr *pre = NULL;
        uint16_t kind = 0;
        size_t total = x->len, hdr_len = 0;

        if (x->flags & CVIA_XFER_RNDV) {
            if (!shm_push_rts(ep, pp, x))
                return done;
            CVIA_HINT_STORE(pp->txq_head, x->prov_next);
            x->prov_next = pp->rv_send;
            CVIA_HINT_STORE(pp->rv_send, x);
            shm_rv_count(ep, pp, 1);
            goto next;
        }
        if (x->flags & SHM_XFER_OP) {
            struct shm_op *op = op_of(x);
            pre = &op->hdr;
            kind = op->slot_flags;
            hdr_len = SHM_RMA_HDR;
            total += hdr_len;
        }
        do {
            struct shm_slot *s = cvia_ring_claim(&pp->tx_ring, pp->tx_pos);
            unsigned char *dst;
            size_t n, w, left;
            uint16_t flags = kind;

            if (!s)
                return done;   /* ring full: the consumer has not caught up */
            n = kind ? (total - x->done < cap ? total - x->done : cap) :
                shm_piece_len(cap, ep->cfg.piece, total, total - x->done);
            if (!pp->tx_started) {
                flags |= SHM_SLOT_FIRST;
                s->ctx = x->ctx;
                s->tag = x->tag;
                s->msg_len = total;
                pp->tx_started = 1;
            }
            if (x->done + n == total)
                flags |= SHM_SLOT_LAST;
            dst = (unsigned char *)s + SHM_SLOT_HDR;
            if (!kind && shm_piece_on(cap, ep->cfg.piece, total)) {
                flags |= SHM_SLOT_LINE2;
                dst = (unsigned char *)s + SHM_CACHELINE;
            }
            w = x->done;
            left = n;
            if (w < hdr_len) {   /* the one-sided header goes first */
                size_t k = hdr_len - w < left ? hdr_len - w : left;
                memcpy(dst, (const char *)pre + w, k);
                dst += k;
                w += k;
                left -= k;
            }
            if (left)
                shm_copy_payload(dst, (const char *)x->buf + (w - hdr_len), left);
            s->flags = flags;
            s->len = (uint32_t)n;
            x->done += n;
            cvia_ring_publish(s, pp->tx_pos);
            pp->tx_pos++;
        } while (x->done < total);

        pp->tx_started = 0;
        CVIA_HINT_STORE(pp->txq_head, x->prov_next);
        x->prov_next = NULL;
        if (x->flags & SHM_XFER_OP)
            shm_op_done(ep, x, 0);
        else
            up->complete(up->core, x, 0);
next:
        done++;
        if (!pp->txq_head) {
            pp->txq_tail = NULL;
            cvia_mcount_add(&ep->npending, -(1));
        }
    }
    return done;
}

/* A plain message of one slot with nothing queued before it (tx_lock
 * held): written and published straight away, without passing through
 * the send queue and its pending count. 0 if the ring is full. */
static int shm_send_one(struct cvia_prov_ep *ep, struct shm_peer *pp, struct cvia_xfer *x)
{
    struct shm_slot *s = cvia_ring_claim(&pp->tx_ring, pp->tx_pos);
    const struct cvia_prov_upcalls *up = ep->args.up;

    if (!s)
        return 0;
    s->flags = SHM_SLOT_FIRST | SHM_SLOT_LAST;
    s->ctx = x->ctx;
    s->tag = x->tag;
    s->msg_len = x->len;
    s->len = (uint32_t)x->len;
    shm_copy_payload((unsigned char *)s + SHM_SLOT_HDR, x->buf, x->len);
    x->done = x->len;
    cvia_ring_publish(s, pp->tx_pos);
    pp->tx_pos++;
    shm_wake(pp->seg);
    up->complete(up->core, x, 0);
    return 1;
}

/* Queue @x for @peer and push what fits. */
int shm_enqueue(struct cvia_prov_ep *ep, int peer, struct cvia_xfer *x)
{
    struct shm_peer *pp = &ep->peers[peer];

    x->done = 0;
    x->prov_next = NULL;
    cvia_mlock_lock(&pp->tx_lock);
    if (atomic_load_explicit(&pp->gone, memory_order_relaxed)) {
        cvia_mlock_unlock(&pp->tx_lock);
        return -CVIA_ENOPEER;
    }
    if (!pp->txq_tail && !(x->flags & (CVIA_XFER_RNDV | SHM_XFER_OP)) &&
        x->len <= ep->slot_size - SHM_SLOT_HDR &&
        !(ep->cfg.piece && x->len > ep->cfg.piece) && shm_send_one(ep, pp, x)) {
        cvia_mlock_unlock(&pp->tx_lock);
        return 0;
    }
    if (pp->txq_tail) {
        pp->txq_tail->prov_next = x;
        pp->txq_tail = x;
    } else {
        CVIA_HINT_STORE(pp->txq_head, x);
        pp->txq_tail = x;
        cvia_mcount_add(&ep->npending, 1);
        shm_push(ep, peer);
    }
    cvia_mlock_unlock(&pp->tx_lock);
    return 0;
}

int shm_send(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    x->flags &= (uint16_t)~(CVIA_XFER_RNDV | SHM_XFER_OP);
    if (x->len >= ep->cfg.rndv_threshold && shm_rndv_use(ep, x->peer, x))
        return shm_rndv_send(ep, x);
    if (x->len >= ep->cfg.arena_threshold && shm_rndv_arena_use(ep, x))
        return shm_rndv_send_arena(ep, x);
    if (x->len >= ep->cfg.rv_window)
        return shm_rndv_send_window(ep, x);
    return shm_enqueue(ep, x->peer, x);
}

static int shm_proto_error(struct cvia_prov_ep *ep, int peer)
{
    cvia_error(SHM, "corrupt slot from rank %d at position %llu; dropping the peer",
               peer, (unsigned long long)ep->peers[peer].rx_pos);
    return -CVIA_EPROTO;
}

/* The usual slot: a whole ordinary message (FIRST and LAST, no kind, the
 * payload right after the header) with no message in flight (rx_lock
 * held). */
static inline int shm_slot_plain(const struct shm_peer *pp, const struct shm_slot *s)
{
    return (s->flags & (SHM_SLOT_FIRST | SHM_SLOT_LAST | SHM_SLOT_KINDS | SHM_SLOT_LINE2)) ==
           (SHM_SLOT_FIRST | SHM_SLOT_LAST) && !pp->rx_cur;
}

/* A whole message in slot @s (its @n payload bytes at @payload) offered to
 * the core's visitor (cvia_inbox_progress): one match, one copy. 1: taken,
 * the slot back and the ring's position past it; 0: the usual path's. */
static inline int shm_offer_visit(struct cvia_prov_ep *ep, struct shm_peer *pp, int peer,
                                  struct shm_slot *s, const unsigned char *payload, size_t n)
{
    const struct cvia_prov_upcalls *up = ep->args.up;

    if (!atomic_load_explicit(&up->visiting, memory_order_relaxed) ||
        !up->visit(up->core, peer, s->ctx, s->tag, payload, n))
        return 0;
    shm_rx_next(pp, s);
    return 1;
}

/* A plain slot (shm_slot_plain) matched, copied, released and completed
 * without the general path's bookkeeping (rx_cur, the one-sided header,
 * the running count of bytes). The checks are the general path's for such
 * a slot. -1: a corrupt slot. */
static inline int shm_drain_one(struct cvia_prov_ep *ep, struct shm_peer *pp, int peer,
                                struct shm_slot *s)
{
    const struct cvia_prov_upcalls *up = ep->args.up;
    size_t n = s->len;
    struct cvia_xfer *x;

    if (n != s->msg_len || n > ep->slot_size - SHM_SLOT_HDR)
        return -1;
    if (shm_offer_visit(ep, pp, peer, s, (const unsigned char *)s + SHM_SLOT_HDR, n))
        return 0;
    x = up->match(up->core, peer, s->ctx, s->tag, n, 0, 0);
    shm_copy_payload(x->buf, (const unsigned char *)s + SHM_SLOT_HDR, n < x->len ? n : x->len);
    x->done = n;
    shm_rx_next(pp, s);
    up->complete(up->core, x, n > x->len ? -CVIA_ETRUNC : 0);
    return 0;
}

/* Drain up to one ring's worth of slots from @peer's ring (rx_lock held).
 * Rendezvous receives matched here are returned in @start, to be started
 * once the lock is released. */
static int shm_drain(struct cvia_prov_ep *ep, int peer, struct cvia_xfer **start,
                     int *nstart)
{
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    int events = 0;

    for (uint32_t budget = ep->nslots; budget; budget--) {
        struct shm_slot *s = cvia_ring_peek(&pp->rx_ring, pp->rx_pos);
        const unsigned char *payload;
        struct cvia_xfer *x;
        size_t n, skip = 0, off, at;
        uint16_t flags, kind;

        if (!s || *nstart == SHM_START_MAX)
            break;
        if (shm_slot_plain(pp, s)) {
            if (shm_drain_one(ep, pp, peer, s) < 0)
                return shm_proto_error(ep, peer);
            events++;
            continue;
        }
        flags = s->flags;
        kind = flags & SHM_SLOT_KINDS;
        n = s->len;
        /* a piece (shm_piece.c) starts at the second line: 32 bytes on */
        at = SHM_SLOT_HDR + ((size_t)(flags & SHM_SLOT_LINE2) >> 2);
        payload = (const unsigned char *)s + at;
        if (n > ep->slot_size - at)
            return shm_proto_error(ep, peer);
        x = pp->rx_cur;
        if (!x) {
            if (!(flags & SHM_SLOT_FIRST))
                return shm_proto_error(ep, peer);
            if (kind == SHM_SLOT_RTS || kind == SHM_SLOT_IMM) {
                if (!(flags & SHM_SLOT_LAST))
                    return shm_proto_error(ep, peer);
                if (kind == SHM_SLOT_RTS) {
                    uint32_t idx;
                    if (n != sizeof(idx))
                        return shm_proto_error(ep, peer);
                    memcpy(&idx, payload, sizeof(idx));
                    if (idx >= (uint32_t)ep->cfg.rv_per_peer)
                        return shm_proto_error(ep, peer);
                    x = up->match(up->core, peer, s->ctx, s->tag, (size_t)s->msg_len,
                                  CVIA_MATCH_RNDV, idx);
                    if (x)   /* else queued as unexpected: not ours to touch */
                        start[(*nstart)++] = x;
                } else {
                    struct shm_rma_hdr h;
                    if (n != SHM_RMA_HDR)
                        return shm_proto_error(ep, peer);
                    memcpy(&h, payload, sizeof(h));
                    up->imm(up->core, peer, h.a, h.key, h.addr, (size_t)h.b);
                }
                shm_rx_next(pp, s);
                events++;
                continue;
            }
            if (kind) {   /* one-sided through the ring: header first */
                struct shm_rma_hdr h;
                if (n < SHM_RMA_HDR || s->msg_len < SHM_RMA_HDR ||
                    (kind != SHM_SLOT_RMAW && kind != SHM_SLOT_RMAR &&
                     kind != SHM_SLOT_RRESP))
                    return shm_proto_error(ep, peer);
                memcpy(&h, payload, sizeof(h));
                pp->rx_op.slot_flags = kind;
                x = shm_rma_begin(ep, peer, kind, &h, (size_t)s->msg_len - SHM_RMA_HDR);
                if (!x) {   /* a read request: no data follows */
                    if (!(flags & SHM_SLOT_LAST) || n != SHM_RMA_HDR)
                        return shm_proto_error(ep, peer);
                    pp->rx_op.slot_flags = 0;
                    shm_rx_next(pp, s);
                    events++;
                    continue;
                }
                x->msg_len = (size_t)s->msg_len - SHM_RMA_HDR;
                x->done = 0;
                skip = SHM_RMA_HDR;
            } else {
                pp->rx_op.slot_flags = 0;
                /* a whole message in this slot (a piece at the second line) */
                if ((flags & SHM_SLOT_LAST) && n == s->msg_len &&
                    shm_offer_visit(ep, pp, peer, s, payload, n)) {
                    events++;
                    continue;
                }
                x = up->match(up->core, peer, s->ctx, s->tag, (size_t)s->msg_len, 0, 0);
            }
            pp->rx_cur = x;
        } else if ((flags & SHM_SLOT_FIRST) || kind != pp->rx_op.slot_flags) {
            return shm_proto_error(ep, peer);
        }
        n -= skip;
        if (x->done + n > x->msg_len ||
            (!!(flags & SHM_SLOT_LAST) != (x->done + n == x->msg_len)))
            return shm_proto_error(ep, peer);
        off = x->done;
        if (off < x->len) {   /* bytes past the receive capacity are dropped */
            size_t keep = x->len - off < n ? x->len - off : n;
            shm_copy_payload((char *)x->buf + off, payload + skip, keep);
        }
        x->done += n;
        shm_rx_next(pp, s);
        if (flags & SHM_SLOT_LAST) {
            int st = x->msg_len > x->len ? -CVIA_ETRUNC : 0;
            pp->rx_cur = NULL;
            if (pp->rx_op.slot_flags) {
                uint16_t k = pp->rx_op.slot_flags;
                pp->rx_op.slot_flags = 0;
                shm_rma_end(ep, peer, k, x, st);
            } else {
                up->complete(up->core, x, st);
            }
            events++;
        }
    }
    return events;
}

/* Drain @peer if nobody else is; start the rendezvous receives it matched.
 * Plain one-slot messages (the ping-pong's) are taken here, one after the
 * other; shm_drain and its loop only for a slot of another kind. */
static int shm_poll_peer(struct cvia_prov_ep *ep, int peer)
{
    struct shm_peer *pp = &ep->peers[peer];
    struct cvia_xfer *start[SHM_START_MAX];
    struct shm_slot *s;
    int nstart = 0, events = 0;
    uint32_t budget = ep->nslots;

    if (!cvia_mlock_trylock(&pp->rx_lock))
        return 0;
    while ((s = cvia_ring_peek(&pp->rx_ring, pp->rx_pos)) && shm_slot_plain(pp, s)) {
        if (shm_drain_one(ep, pp, peer, s) < 0) {
            events = shm_proto_error(ep, peer);
            break;
        }
        events++;
        if (!--budget)
            break;
    }
    if (s && budget && events >= 0) {
        int more = shm_drain(ep, peer, start, &nstart);
        events = more < 0 ? more : events + more;
    }
    cvia_mlock_unlock(&pp->rx_lock);
    for (int i = 0; i < nstart; i++)
        shm_rndv_start(ep, start[i]);
    if (events > 0)   /* slots freed: a sender asleep on a full ring may go on */
        shm_wake(pp->seg);
    if (events < 0) {
        shm_peer_gone(ep, peer, events);
        return 1;
    }
    return events;
}

/* Anything for this endpoint to do without waiting for a peer: a slot in
 * one of my rings, sends still queued, a rendezvous in flight, a
 * connection claimed. Loads only, no call. What a sleeper checks before
 * it sleeps (shm_block): each peer's own fields, a gone peer's rings not
 * counted. */
static int shm_busy(struct cvia_prov_ep *ep)
{
    const int size = shm_npeers(ep);

    if (atomic_load_explicit(&ep->npending, memory_order_relaxed))
        return 1;
    if (ep->args.dynamic &&
        atomic_load_explicit(&ep->seg->claim_gen, memory_order_relaxed) !=
        atomic_load_explicit(&ep->claim_seen, memory_order_relaxed))
        return 1;   /* a peer waits for its connection to be taken */
    for (int p = 0; p < size; p++) {
        struct shm_peer *pp = &ep->peers[p];
        if (!pp->seg || atomic_load_explicit(&pp->gone, memory_order_relaxed))
            continue;   /* another host, or gone */
        if (atomic_load_explicit(&pp->rv_pending, memory_order_relaxed) ||
            cvia_ring_peek(&pp->rx_ring, CVIA_HINT_LOAD(pp->rx_pos)))
            return 1;
    }
    return 0;
}

/* The same question for the wait loop's poll, whose usual answer is
 * nothing: what happens rarely (queued sends, a rendezvous with anyone, a
 * gone peer's included, a connection claimed) is one word each, and a
 * peer is one look at its next slot's sequence word (struct shm_look). */
static inline int shm_work(struct cvia_prov_ep *ep, int size)
{
    const struct shm_look *lk = ep->look;

    if (atomic_load_explicit(&ep->npending, memory_order_relaxed) |
        atomic_load_explicit(&ep->rv_total, memory_order_relaxed))
        return 1;
    if (ep->args.dynamic &&
        atomic_load_explicit(&ep->seg->claim_gen, memory_order_relaxed) !=
        atomic_load_explicit(&ep->claim_seen, memory_order_relaxed))
        return 1;   /* a peer waits for its connection to be taken */
    for (int p = 0; p < size; p++)
        if (atomic_load_explicit(CVIA_HINT_LOAD(lk[p].seq), memory_order_acquire) ==
            CVIA_HINT_LOAD(lk[p].want))
            return 1;
    return 0;
}

/* shm_progress past its look (shm_work): out of line, so that an empty
 * poll saves no registers. */
static __attribute__((noinline)) int shm_progress_work(struct cvia_prov_ep *ep, int size)
{
    int events = 0, first;

    if (ep->args.dynamic &&
        atomic_load_explicit(&ep->seg->claim_gen, memory_order_relaxed) !=
        atomic_load_explicit(&ep->claim_seen, memory_order_relaxed))
        events += shm_dyn_poll(ep);

    if (atomic_load_explicit(&ep->npending, memory_order_relaxed)) {
        for (int p = 0; p < size; p++) {
            struct shm_peer *pp = &ep->peers[p];
            if (pp->seg && CVIA_HINT_LOAD(pp->txq_head) && cvia_mlock_trylock(&pp->tx_lock)) {
                events += shm_push(ep, p);
                cvia_mlock_unlock(&pp->tx_lock);
            }
        }
    }
    first = atomic_load_explicit(&ep->poll_start, memory_order_relaxed);
    if (first >= size)
        first = 0;
    for (int i = 0, p = first; i < size; i++) {
        struct shm_peer *pp = &ep->peers[p];
        if (!pp->seg)
            ;   /* another host */
        else {
            if (atomic_load_explicit(&pp->rv_pending, memory_order_relaxed))
                events += shm_rndv_progress(ep, p);
            /* an empty ring (the wait loop's usual finding) is one load of
             * the slot's sequence word: no lock, no call. rx_pos read as a
             * hint: a thread draining it now delivers what we would. */
            if (!atomic_load_explicit(&pp->gone, memory_order_relaxed) &&
                cvia_ring_peek(&pp->rx_ring, CVIA_HINT_LOAD(pp->rx_pos)))
                events += shm_poll_peer(ep, p);
        }
        if (++p == size)
            p = 0;
    }
    if (first >= size)
        first = 0;
    atomic_store_explicit(&ep->poll_start, first + 1 >= size ? 0 : first + 1,
                          memory_order_relaxed);
    return events;
}

int shm_progress(struct cvia_prov_ep *ep)
{
    const int size = shm_npeers(ep);

    return shm_work(ep, size) ? shm_progress_work(ep, size) : 0;
}

/* Sleep until a peer publishes into one of my rings (it finds sleepers in
 * my segment and bumps wake), or @max_s passes. The announcement and the
 * senders' publication are a store-then-load pair on each side; instead of
 * a fence on every send, the sleeper issues one membarrier (global,
 * expedited: every CPU running a rank executes a full barrier), after which
 * either the sender's slot is visible here or its later load of sleepers
 * sees us. Without membarrier the sleep is cut to 1 ms, bounding what a
 * lost wake-up could cost. A rendezvous in flight moves by polling: nap.
 * A kick (shm_kick, after the kicker changed *@kicks) is a wake from this
 * rank itself: checked after @wake was read, so none is lost either. */
int shm_block(struct cvia_prov_ep *ep, double max_s, const _Atomic uint32_t *kicks,
              uint32_t seen)
{
    struct shm_seg_hdr *h = ep->seg;
    struct timespec ts;
    uint32_t w;
    int slept = 0;

    if (!h || shm_busy(ep))
        return 0;
    w = atomic_load_explicit(&h->wake, memory_order_acquire);
    atomic_fetch_add_explicit(&h->sleepers, 1, memory_order_seq_cst);
    if ((!ep->membarrier || syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) < 0) &&
        max_s > 1e-3)
        max_s = 1e-3;
    if (!shm_busy(ep) && !(kicks && atomic_load(kicks) != seen)) {
        if (max_s < 1e-6)
            max_s = 1e-6;
        ts.tv_sec = (time_t)max_s;
        ts.tv_nsec = (long)((max_s - (double)ts.tv_sec) * 1e9);
        syscall(SYS_futex, &h->wake, FUTEX_WAIT, w, &ts, NULL, 0);
        slept = 1;
    }
    atomic_fetch_sub_explicit(&h->sleepers, 1, memory_order_relaxed);
    return slept;
}

void shm_kick(struct cvia_prov_ep *ep)
{
    struct shm_seg_hdr *h = ep->seg;

    if (!h)
        return;
    atomic_fetch_add_explicit(&h->wake, 1, memory_order_seq_cst);
    syscall(SYS_futex, &h->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void shm_peer_gone(struct cvia_prov_ep *ep, int peer, int err)
{
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *x, *q, *reads;

    if (peer == ep->args.rank || !pp->seg || atomic_exchange(&pp->gone, 1))
        return;
    /* what it sent before it died is still ours to deliver */
    if (pp->rx_ring.base) {
        struct cvia_xfer *start[SHM_START_MAX];
        int nstart, ev;
        do {
            nstart = 0;
            cvia_mlock_lock(&pp->rx_lock);
            ev = shm_drain(ep, peer, start, &nstart);
            cvia_mlock_unlock(&pp->rx_lock);
            for (int i = 0; i < nstart; i++)
                shm_rndv_start(ep, start[i]);
        } while (ev > 0);
    }
    cvia_mlock_lock(&pp->rx_lock);
    shm_look_none(ep, pp);   /* its ring is read no more (shm_progress_work) */
    cvia_mlock_unlock(&pp->rx_lock);
    cvia_mlock_lock(&pp->rx_lock);
    x = pp->rx_cur;
    pp->rx_cur = NULL;
    cvia_mlock_unlock(&pp->rx_lock);
    if (x) {
        if (pp->rx_op.slot_flags)
            shm_rma_end(ep, peer, pp->rx_op.slot_flags, x, err);
        else
            up->complete(up->core, x, err);
    }
    cvia_mlock_lock(&pp->tx_lock);
    q = pp->txq_head;
    CVIA_HINT_STORE(pp->txq_head, NULL);
    if (pp->txq_tail) {
        pp->txq_tail = NULL;
        cvia_mcount_add(&ep->npending, -(1));
    }
    pp->tx_started = 0;
    reads = pp->reads;
    pp->reads = NULL;
    cvia_mlock_unlock(&pp->tx_lock);
    while ((x = q)) {
        q = x->prov_next;
        x->prov_next = NULL;
        if (x->flags & SHM_XFER_OP)
            shm_op_done(ep, x, err);
        else if (x->flags & CVIA_XFER_RNDV)
            shm_rndv_fail(ep, peer, err), up->complete(up->core, x, err);
        else
            up->complete(up->core, x, err);
    }
    while ((x = reads)) {
        reads = x->prov_next;
        x->prov_next = NULL;
        up->complete(up->core, x, err);
    }
    shm_rndv_fail(ep, peer, err);
    up->peer_lost(up->core, peer, err);
    if (ep->args.dynamic)   /* its ring may serve another peer */
        shm_dyn_reclaim(ep, peer);
}

int shm_check_peers(struct cvia_prov_ep *ep)
{
    struct pollfd fds[64];
    int idx[64];
    int lost = 0;

    const int size = shm_npeers(ep);

    for (int base = 0; base < size; base += 64) {
        int n = 0;
        for (int p = base; p < size && p < base + 64; p++) {
            /* dynamic: a peer that closed corevia without exiting */
            if (ep->args.dynamic && p && ep->peers[p].seg &&
                !atomic_load(&ep->peers[p].gone) &&
                atomic_load_explicit(&ep->peers[p].seg->finalized, memory_order_acquire)) {
                shm_peer_gone(ep, p, -CVIA_ENOPEER);
                lost++;
                continue;
            }
            if (ep->peers[p].pidfd >= 0 && !atomic_load(&ep->peers[p].gone)) {
                fds[n].fd = ep->peers[p].pidfd;
                fds[n].events = POLLIN;
                fds[n].revents = 0;
                idx[n++] = p;
            }
        }
        if (!n || poll(fds, (nfds_t)n, 0) <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP)))
                continue;
            int p = idx[i];
            struct shm_seg_hdr *h = ep->peers[p].seg;
            int clean = h && atomic_load_explicit(&h->finalized, memory_order_acquire);
            if (!clean)
                cvia_error(SHM, "%s %d (pid %d) exited without finalizing", ep->args.dynamic ? "peer" : "rank",
                           p, (int)ep->peers[p].pid);
            shm_peer_gone(ep, p, -CVIA_ENOPEER);
            lost++;
        }
    }
    return lost;
}

/* cvia_inject: the message into one slot of @peer's ring now, or -EAGAIN
 * when that cannot be done at once (messages queued before it, the ring
 * full, more than a slot or a rendezvous's size): no xfer is queued, none
 * completes, nothing to reap. */
int shm_inject(struct cvia_prov_ep *ep, int peer, uint16_t ctx, int32_t tag,
               const struct iovec *iov, int n, size_t len)
{
    struct shm_peer *pp = &ep->peers[peer];
    struct shm_slot *s = NULL;
    int rc = 0;

    if (len > ep->slot_size - SHM_SLOT_HDR || len >= ep->cfg.rndv_threshold)
        return -EAGAIN;
    cvia_mlock_lock(&pp->tx_lock);
    if (atomic_load_explicit(&pp->gone, memory_order_relaxed)) {
        rc = -CVIA_ENOPEER;
    } else if (pp->txq_head || !(s = cvia_ring_claim(&pp->tx_ring, pp->tx_pos))) {
        rc = -EAGAIN;
    } else {
        unsigned char *dst = (unsigned char *)s + SHM_SLOT_HDR;
        s->ctx = ctx;
        s->tag = tag;
        s->msg_len = len;
        for (int i = 0; i < n; i++) {
            shm_copy_payload(dst, iov[i].iov_base, iov[i].iov_len);
            dst += iov[i].iov_len;
        }
        s->flags = SHM_SLOT_FIRST | SHM_SLOT_LAST;
        s->len = (uint32_t)len;
        cvia_ring_publish(s, pp->tx_pos);
        pp->tx_pos++;
        shm_wake(pp->seg);
    }
    cvia_mlock_unlock(&pp->tx_lock);
    return rc;
}
