/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* tcp data path: frame queues, non-blocking writes, the receive state
 * machine, one-sided requests and their answers. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "prov/tcp/tcp.h"
#include "util/log.h"

#define TCP_POLL_MAX 256

static struct tcp_op *op_of(struct cvia_xfer *x)
{
    return (struct tcp_op *)(void *)((char *)x - offsetof(struct tcp_op, x));
}

static struct tcp_op *tcp_op_new(int peer, uint8_t type)
{
    struct tcp_op *op = calloc(1, sizeof(*op));

    if (op) {
        op->x.peer = peer;
        op->x.flags = TCP_XFER_OP;
        op->hdr.type = type;
    }
    return op;
}

static void tcp_enqueue_locked(struct tcp_peer *pp, struct cvia_xfer *x)
{
    x->done = 0;
    x->prov_next = NULL;
    if (pp->txq_tail)
        pp->txq_tail->prov_next = x;
    else
        CVIA_HINT_STORE(pp->txq_head, x);
    pp->txq_tail = x;
}

/* Write what the socket takes of @peer's queue (rx_busy held). */
static int tcp_flush(struct cvia_prov_ep *ep, int peer)
{
    struct tcp_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    int events = 0;

    for (;;) {
        struct cvia_xfer *x;
        struct iovec iov[2];
        struct msghdr mh = { .msg_iov = iov };
        ssize_t n;

        cvia_mlock_lock(&ep->lock);
        x = pp->txq_head;
        cvia_mlock_unlock(&ep->lock);
        if (!x || pp->fd < 0)
            return events;
        if (x->done == 0 && pp->tx_hdr_done == 0) {
            if (x->flags & TCP_XFER_OP) {
                pp->tx_hdr = op_of(x)->hdr;
            } else {
                memset(&pp->tx_hdr, 0, sizeof(pp->tx_hdr));
                pp->tx_hdr.type = TCP_MSG;
                pp->tx_hdr.ctx = x->ctx;
                pp->tx_hdr.tag = x->tag;
            }
            pp->tx_hdr.len = x->len;
        }
        mh.msg_iovlen = 0;
        if (pp->tx_hdr_done < sizeof(pp->tx_hdr)) {
            iov[0].iov_base = (char *)&pp->tx_hdr + pp->tx_hdr_done;
            iov[0].iov_len = sizeof(pp->tx_hdr) - pp->tx_hdr_done;
            mh.msg_iovlen = 1;
        }
        if (x->done < x->len) {
            iov[mh.msg_iovlen].iov_base = (char *)x->buf + x->done;
            iov[mh.msg_iovlen].iov_len = x->len - x->done;
            mh.msg_iovlen++;
        }
        n = mh.msg_iovlen ? sendmsg(pp->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return events;
            cvia_error(CORE, "tcp: sending to rank %d: %s", peer, strerror(errno));
            tcp_peer_gone(ep, peer, -CVIA_ENOPEER);
            return events + 1;
        }
        if (pp->tx_hdr_done < sizeof(pp->tx_hdr)) {
            size_t h = sizeof(pp->tx_hdr) - pp->tx_hdr_done;
            if ((size_t)n < h) {
                pp->tx_hdr_done += (size_t)n;
                continue;
            }
            pp->tx_hdr_done = sizeof(pp->tx_hdr);
            n -= (ssize_t)h;
        }
        x->done += (size_t)n;
        if (x->done < x->len)
            continue;
        /* the whole frame is out */
        cvia_mlock_lock(&ep->lock);
        CVIA_HINT_STORE(pp->txq_head, x->prov_next);
        if (!pp->txq_head)
            pp->txq_tail = NULL;
        cvia_mlock_unlock(&ep->lock);
        x->prov_next = NULL;
        pp->tx_hdr_done = 0;
        if (x->flags & TCP_XFER_OP)
            free(op_of(x));   /* its requester, if any, waits for the answer */
        else
            up->complete(up->core, x, 0);
        events++;
    }
}

static int tcp_enqueue(struct cvia_prov_ep *ep, int peer, struct cvia_xfer *x)
{
    struct tcp_peer *pp = &ep->peers[peer];

    cvia_mlock_lock(&ep->lock);
    if (pp->gone || pp->fd < 0) {
        cvia_mlock_unlock(&ep->lock);
        return -CVIA_ENOPEER;
    }
    tcp_enqueue_locked(pp, x);
    cvia_mlock_unlock(&ep->lock);
    if (cvia_mlock_trylock(&ep->rx_busy)) {   /* write now if nobody else is */
        tcp_flush(ep, peer);
        cvia_mlock_unlock(&ep->rx_busy);
    }
    return 0;
}

int tcp_send(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    x->flags &= (uint16_t)~TCP_XFER_OP;
    return tcp_enqueue(ep, x->peer, x);
}

/* One-sided: the request frame goes out, the user's xfer waits for the
 * answer, found again by its address (the cookie). */
static int tcp_rma(struct cvia_prov_ep *ep, struct cvia_xfer *x, uint8_t type)
{
    struct tcp_peer *pp = &ep->peers[x->peer];
    struct tcp_op *op = tcp_op_new(x->peer, type);
    int rc;

    if (!op)
        return -ENOMEM;
    op->hdr.key = x->rma_key;
    op->hdr.addr = x->rma_addr;
    op->hdr.aux2 = (uint64_t)(uintptr_t)x;
    if (type == TCP_RMAW) {
        op->hdr.aux = x->rma_imm;
        op->hdr.flags = (x->flags & CVIA_XFER_IMM) ? TCP_F_IMM : 0;
        op->x.buf = x->buf;
        op->x.len = x->len;
    } else {
        op->hdr.aux = x->len;
    }
    cvia_mlock_lock(&ep->lock);
    x->prov_next = pp->waiting;
    pp->waiting = x;
    cvia_mlock_unlock(&ep->lock);
    rc = tcp_enqueue(ep, x->peer, &op->x);
    if (rc) {
        struct cvia_xfer **l;
        cvia_mlock_lock(&ep->lock);
        for (l = &pp->waiting; *l && *l != x; l = &(*l)->prov_next)
            ;
        if (*l)
            *l = x->prov_next;
        cvia_mlock_unlock(&ep->lock);
        free(op);
    }
    return rc;
}

int tcp_write(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    return tcp_rma(ep, x, TCP_RMAW);
}

int tcp_read(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    return tcp_rma(ep, x, TCP_RMAR);
}

/* The waiting one-sided request @cookie, taken off the list; NULL if none. */
static struct cvia_xfer *tcp_take_waiting(struct cvia_prov_ep *ep, struct tcp_peer *pp,
                                          uint64_t cookie)
{
    struct cvia_xfer **l, *x;

    cvia_mlock_lock(&ep->lock);
    for (l = &pp->waiting; *l && (uint64_t)(uintptr_t)*l != cookie; l = &(*l)->prov_next)
        ;
    x = *l;
    if (x)
        *l = x->prov_next;
    cvia_mlock_unlock(&ep->lock);
    if (x)
        x->prov_next = NULL;
    return x;
}

/* Queue an answer frame (WACK or RRESP). */
static void tcp_answer(struct cvia_prov_ep *ep, int peer, uint8_t type, uint64_t cookie,
                       int status, void *buf, size_t len)
{
    struct tcp_op *op = tcp_op_new(peer, type);

    if (!op) {
        cvia_error(CORE, "tcp: out of memory answering rank %d; it will wait for its "
                   "request until it sees this rank die", peer);
        return;
    }
    op->hdr.aux = cookie;
    op->hdr.aux2 = (uint64_t)(int64_t)status;
    op->x.buf = buf;
    op->x.len = len;
    cvia_mlock_lock(&ep->lock);
    tcp_enqueue_locked(&ep->peers[peer], &op->x);
    cvia_mlock_unlock(&ep->lock);
}

/* A frame's header is in: decide where its payload goes. */
static int tcp_frame_begin(struct cvia_prov_ep *ep, int peer)
{
    struct tcp_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    const struct tcp_hdr *h = &pp->rx_hdr;
    struct cvia_xfer *x;

    pp->rx_done = 0;
    pp->rx_status = 0;
    pp->rx_x = NULL;
    switch (h->type) {
    case TCP_MSG:
        x = up->match(up->core, peer, h->ctx, h->tag, (size_t)h->len, 0, 0);
        pp->rx_x = x;
        return 0;
    case TCP_RMAW:
        pp->rx_status = up->mr_check(up->core, h->key, h->addr, (size_t)h->len,
                                     CVIA_MR_REMOTE_WRITE);
        if (!pp->rx_status) {   /* straight from the socket into the region */
            pp->rx_sink.buf = (void *)(uintptr_t)h->addr;
            pp->rx_sink.len = (size_t)h->len;
        } else {
            pp->rx_sink.buf = NULL;
            pp->rx_sink.len = 0;
        }
        pp->rx_x = &pp->rx_sink;
        return 0;
    case TCP_RMAR: {
        int rc = up->mr_check(up->core, h->key, h->addr, (size_t)h->aux,
                              CVIA_MR_REMOTE_READ);
        tcp_answer(ep, peer, TCP_RRESP, h->aux2, rc, rc ? NULL : (void *)(uintptr_t)h->addr,
                   rc ? 0 : (size_t)h->aux);
        return h->len ? -CVIA_EPROTO : 0;
    }
    case TCP_WACK:
        if ((x = tcp_take_waiting(ep, pp, h->aux))) {
            x->done = x->len;
            up->complete(up->core, x, (int)(int64_t)h->aux2);
        }
        return h->len ? -CVIA_EPROTO : 0;
    case TCP_RRESP:
        x = tcp_take_waiting(ep, pp, h->aux);
        pp->rx_status = (int)(int64_t)h->aux2;
        if (x && !pp->rx_status && h->len == x->len) {
            pp->rx_x = x;
        } else {
            if (x && !pp->rx_status)
                pp->rx_status = -CVIA_EPROTO;
            pp->rx_sink.buf = NULL;
            pp->rx_sink.len = 0;
            pp->rx_sink.prov_next = x;   /* remembered to fail it at the end */
            pp->rx_x = &pp->rx_sink;
        }
        return 0;
    case TCP_BYE:
        pp->bye = 1;
        return h->len ? -CVIA_EPROTO : 0;
    }
    return -CVIA_EPROTO;
}

static void tcp_frame_end(struct cvia_prov_ep *ep, int peer)
{
    struct tcp_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    const struct tcp_hdr *h = &pp->rx_hdr;
    struct cvia_xfer *x = pp->rx_x;

    pp->rx_x = NULL;
    switch (h->type) {
    case TCP_MSG:
        up->complete(up->core, x, x->msg_len > x->len ? -CVIA_ETRUNC : 0);
        break;
    case TCP_RMAW:
        if (!pp->rx_status && (h->flags & TCP_F_IMM))
            up->imm(up->core, peer, h->aux, h->key, h->addr, (size_t)h->len);
        tcp_answer(ep, peer, TCP_WACK, h->aux2, pp->rx_status, NULL, 0);
        break;
    case TCP_RRESP:
        if (x == &pp->rx_sink) {
            x = pp->rx_sink.prov_next;
            pp->rx_sink.prov_next = NULL;
        }
        if (x) {
            x->done = x->len;
            up->complete(up->core, x, pp->rx_status);
        }
        break;
    }
}

/* Read what has arrived from @peer (rx_busy held). */
static int tcp_rx(struct cvia_prov_ep *ep, int peer)
{
    static char scratch[65536];   /* bytes past a receive's capacity land here */
    struct tcp_peer *pp = &ep->peers[peer];
    int events = 0, rc;

    while (pp->fd >= 0) {
        ssize_t n;

        if (pp->rx_hdr_done < sizeof(pp->rx_hdr)) {
            n = recv(pp->fd, (char *)&pp->rx_hdr + pp->rx_hdr_done,
                     sizeof(pp->rx_hdr) - pp->rx_hdr_done, MSG_DONTWAIT);
            if (n <= 0)
                goto io_end;
            pp->rx_hdr_done += (size_t)n;
            if (pp->rx_hdr_done < sizeof(pp->rx_hdr))
                continue;
            if ((rc = tcp_frame_begin(ep, peer))) {
                cvia_error(CORE, "tcp: garbled frame from rank %d; dropping the peer", peer);
                tcp_peer_gone(ep, peer, rc);
                return events + 1;
            }
        } else {
            struct cvia_xfer *x = pp->rx_x;
            size_t want = (size_t)pp->rx_hdr.len - pp->rx_done;
            void *dst = scratch;
            size_t cap = sizeof(scratch);
            if (x && pp->rx_done < x->len) {
                dst = (char *)x->buf + pp->rx_done;
                cap = x->len - pp->rx_done;
            }
            n = recv(pp->fd, dst, want < cap ? want : cap, MSG_DONTWAIT);
            if (n <= 0)
                goto io_end;
            pp->rx_done += (size_t)n;
            if (x && x != &pp->rx_sink)
                x->done = pp->rx_done;
        }
        if (pp->rx_hdr_done == sizeof(pp->rx_hdr) && pp->rx_done == pp->rx_hdr.len) {
            tcp_frame_end(ep, peer);
            pp->rx_hdr_done = 0;
            events++;
        }
        continue;
io_end:
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return events;
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && !pp->bye)
            cvia_error(CORE, "tcp: rank %d closed its connection without finalizing", peer);
        else if (n < 0)
            cvia_error(CORE, "tcp: receiving from rank %d: %s", peer, strerror(errno));
        tcp_peer_gone(ep, peer, -CVIA_ENOPEER);
        return events + 1;
    }
    return events;
}

int tcp_progress(struct cvia_prov_ep *ep)
{
    struct pollfd fds[TCP_POLL_MAX];
    int who[TCP_POLL_MAX];
    int events = 0, n = 0, pending = 0;

    if (!ep->nremote || !cvia_mlock_trylock(&ep->rx_busy))
        return 0;
    for (int p = 0; p < ep->args.size; p++)
        pending |= CVIA_HINT_LOAD(ep->peers[p].txq_head) != NULL;
    /* nothing happened for a while and nothing to send: look at the sockets
     * only every 16th call, so shm traffic of the same job does not pay a
     * system call per progress */
    if (!pending) {
        unsigned idle = CVIA_HINT_LOAD(ep->idle);
        if (idle > 64 && (idle & 15)) {
            CVIA_HINT_STORE(ep->idle, idle + 1);
            cvia_mlock_unlock(&ep->rx_busy);
            return 0;
        }
    }
    for (int base = 0; base < ep->args.size; base += TCP_POLL_MAX) {
        n = 0;
        for (int p = base; p < ep->args.size && n < TCP_POLL_MAX; p++) {
            struct tcp_peer *pp = &ep->peers[p];
            if (pp->fd < 0)
                continue;
            fds[n].fd = pp->fd;
            fds[n].events = POLLIN | (CVIA_HINT_LOAD(pp->txq_head) ? POLLOUT : 0);
            fds[n].revents = 0;
            who[n++] = p;
        }
        if (!n || poll(fds, (nfds_t)n, 0) <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
                events += tcp_rx(ep, who[i]);
            if (fds[i].revents & POLLOUT)
                events += tcp_flush(ep, who[i]);
        }
    }
    CVIA_HINT_STORE(ep->idle, events ? 0 : CVIA_HINT_LOAD(ep->idle) + 1);
    cvia_mlock_unlock(&ep->rx_busy);
    return events;
}

/* @peer is gone: close, fail what involves it (rx_busy held, or teardown). */
void tcp_peer_gone(struct cvia_prov_ep *ep, int peer, int err)
{
    struct tcp_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *q, *w, *x;

    cvia_mlock_lock(&ep->lock);
    if (pp->gone) {
        cvia_mlock_unlock(&ep->lock);
        return;
    }
    pp->gone = 1;
    q = pp->txq_head;
    CVIA_HINT_STORE(pp->txq_head, NULL);
    pp->txq_tail = NULL;
    w = pp->waiting;
    pp->waiting = NULL;
    cvia_mlock_unlock(&ep->lock);
    if (pp->fd >= 0)
        close(pp->fd);
    pp->fd = -1;
    if ((x = pp->rx_x) && pp->rx_hdr_done == sizeof(pp->rx_hdr)) {
        pp->rx_x = NULL;
        if (pp->rx_hdr.type == TCP_MSG)
            up->complete(up->core, x, err);
        else if (pp->rx_hdr.type == TCP_RRESP && x != &pp->rx_sink)
            up->complete(up->core, x, err);
        else if (x == &pp->rx_sink && pp->rx_sink.prov_next) {
            up->complete(up->core, pp->rx_sink.prov_next, err);
            pp->rx_sink.prov_next = NULL;
        }
    }
    cvia__prov_fail_list(up, q, err, TCP_XFER_OP);
    cvia__prov_fail_list(up, w, err, 0);
    up->peer_lost(up->core, peer, err);
}

/* Clean finalize: tell every peer, so its end of stream is no death. */
int tcp_send_bye(struct cvia_prov_ep *ep)
{
    for (int p = 0; p < ep->args.size; p++) {
        struct tcp_peer *pp = &ep->peers[p];
        struct tcp_op *op;
        if (pp->fd < 0 || !(op = tcp_op_new(p, TCP_BYE)))
            continue;
        cvia_mlock_lock(&ep->lock);
        tcp_enqueue_locked(pp, &op->x);
        cvia_mlock_unlock(&ep->lock);
    }
    /* bounded: push the queues out for at most a second */
    for (int round = 0; round < 1000; round++) {
        int left = 0;
        cvia_mlock_lock(&ep->rx_busy);
        for (int p = 0; p < ep->args.size; p++) {
            if (ep->peers[p].fd >= 0 && CVIA_HINT_LOAD(ep->peers[p].txq_head)) {
                tcp_flush(ep, p);
                left |= CVIA_HINT_LOAD(ep->peers[p].txq_head) != NULL;
            }
        }
        cvia_mlock_unlock(&ep->rx_busy);
        if (!left)
            return 0;
        poll(NULL, 0, 1);
    }
    return -ETIMEDOUT;
}
