/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* shm fast path: push message slots into a peer's ring, drain my rings.
 * No lock and no system call here; check_peers (slow path) is the only
 * place that polls pidfds. */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <corevia/cvia_errno.h>
#include "prov/shm/shm.h"
#include "util/log.h"

/* Push as much of @pp's send queue as the ring takes. Returns the number of
 * messages completed. */
static int shm_push(struct cvia_prov_ep *ep, int peer)
{
    struct shm_peer *pp = &ep->peers[peer];
    const size_t cap = ep->slot_size - SHM_SLOT_HDR;
    int done = 0;
    struct cvia_xfer *x;

    while ((x = pp->txq_head)) {
        do {
            struct shm_slot *s = cvia_ring_claim(&pp->tx_ring, pp->tx_pos);
            unsigned char *raw = (unsigned char *)s;
            size_t n;
            uint16_t flags = 0;

            if (!s)
                return done;   /* ring full: the consumer has not caught up */
            n = x->len - x->done;
            if (n > cap)
                n = cap;
            if (!pp->tx_started) {
                flags = SHM_SLOT_FIRST;
                s->ctx = x->ctx;
                s->tag = x->tag;
                s->msg_len = x->len;
                pp->tx_started = 1;
            }
            if (x->done + n == x->len)
                flags |= SHM_SLOT_LAST;
            s->flags = flags;
            s->len = (uint32_t)n;
            if (n)
                memcpy(raw + SHM_SLOT_HDR, (const char *)x->buf + x->done, n);
            x->done += n;
            cvia_ring_publish(s, pp->tx_pos);
            pp->tx_pos++;
        } while (x->done < x->len);

        pp->tx_started = 0;
        pp->txq_head = x->prov_next;
        if (!pp->txq_head) {
            pp->txq_tail = NULL;
            ep->npending--;
        }
        x->prov_next = NULL;
        ep->args.up->complete(ep->args.up->core, x, 0);
        done++;
    }
    return done;
}

int shm_send(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    struct shm_peer *pp = &ep->peers[x->peer];

    if (pp->gone)
        return -CVIA_ENOPEER;
    x->done = 0;
    x->prov_next = NULL;
    if (pp->txq_tail) {
        pp->txq_tail->prov_next = x;
        pp->txq_tail = x;
        return 0;
    }
    pp->txq_head = pp->txq_tail = x;
    ep->npending++;
    shm_push(ep, x->peer);
    return 0;
}

/* Drain up to one ring's worth of slots from @peer's ring. */
static int shm_drain(struct cvia_prov_ep *ep, int peer)
{
    struct shm_peer *pp = &ep->peers[peer];
    const size_t cap = ep->slot_size - SHM_SLOT_HDR;
    const struct cvia_prov_upcalls *up = ep->args.up;
    int events = 0;

    for (uint32_t budget = ep->nslots; budget; budget--) {
        struct shm_slot *s = cvia_ring_peek(&pp->rx_ring, pp->rx_pos);
        unsigned char *raw = (unsigned char *)s;
        struct cvia_xfer *x;
        size_t n, off;
        uint16_t flags;

        if (!s)
            break;
        flags = s->flags;
        n = s->len;
        x = pp->rx_cur;
        if (!x) {
            if (!(flags & SHM_SLOT_FIRST) || n > cap)
                goto err_proto;
            x = up->match(up->core, peer, s->ctx, s->tag, (size_t)s->msg_len);
            x->msg_len = (size_t)s->msg_len;
            x->done = 0;
            pp->rx_cur = x;
        } else if (flags & SHM_SLOT_FIRST) {
            goto err_proto;
        }
        if (n > cap || x->done + n > x->msg_len ||
            (!!(flags & SHM_SLOT_LAST) != (x->done + n == x->msg_len)))
            goto err_proto;
        off = x->done;
        if (off < x->len) {   /* bytes past the receive capacity are dropped */
            size_t keep = x->len - off < n ? x->len - off : n;
            memcpy((char *)x->buf + off, raw + SHM_SLOT_HDR, keep);
        }
        x->done += n;
        cvia_ring_release(&pp->rx_ring, s, pp->rx_pos);
        pp->rx_pos++;
        if (flags & SHM_SLOT_LAST) {
            pp->rx_cur = NULL;
            up->complete(up->core, x, x->msg_len > x->len ? -CVIA_ETRUNC : 0);
            events++;
        }
    }
    return events;

err_proto:
    cvia_error(SHM, "corrupt slot from rank %d at position %llu; dropping the peer",
               peer, (unsigned long long)pp->rx_pos);
    pp->gone = 1;
    if (pp->rx_cur) {
        struct cvia_xfer *x = pp->rx_cur;
        pp->rx_cur = NULL;
        up->complete(up->core, x, -CVIA_EPROTO);
    }
    up->peer_lost(up->core, peer, -CVIA_EPROTO);
    return events + 1;
}

int shm_progress(struct cvia_prov_ep *ep)
{
    const int size = ep->args.size;
    int events = 0;

    if (ep->npending) {
        for (int p = 0; p < size; p++)
            if (ep->peers[p].txq_head)
                events += shm_push(ep, p);
    }
    for (int i = 0, p = ep->poll_start; i < size; i++) {
        if (!ep->peers[p].gone)
            events += shm_drain(ep, p);
        if (++p == size)
            p = 0;
    }
    if (++ep->poll_start >= size)
        ep->poll_start = 0;
    return events;
}

void shm_peer_gone(struct cvia_prov_ep *ep, int peer, int err)
{
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *x;

    if (pp->gone || peer == ep->args.rank)
        return;
    /* what it sent before it died is still ours to deliver */
    if (pp->rx_ring.base)
        while (shm_drain(ep, peer) > 0)
            ;
    pp->gone = 1;
    if ((x = pp->rx_cur)) {
        pp->rx_cur = NULL;
        up->complete(up->core, x, err);
    }
    while ((x = pp->txq_head)) {
        pp->txq_head = x->prov_next;
        x->prov_next = NULL;
        up->complete(up->core, x, err);
    }
    if (pp->txq_tail) {
        pp->txq_tail = NULL;
        ep->npending--;
    }
    pp->tx_started = 0;
    up->peer_lost(up->core, peer, err);
}

int shm_check_peers(struct cvia_prov_ep *ep)
{
    struct pollfd fds[64];
    int idx[64];
    int lost = 0;

    for (int base = 0; base < ep->args.size; base += 64) {
        int n = 0;
        for (int p = base; p < ep->args.size && p < base + 64; p++) {
            if (ep->peers[p].pidfd >= 0 && !ep->peers[p].gone) {
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
                cvia_error(SHM, "rank %d (pid %d) exited without finalizing",
                           p, (int)ep->peers[p].pid);
            shm_peer_gone(ep, p, -CVIA_ENOPEER);
            lost++;
        }
    }
    return lost;
}
