/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Requests and tag matching (MPI semantics): an arriving message takes the
 * oldest posted receive that matches its (source, tag, context); a new
 * receive takes the oldest unexpected message that matches it. Providers
 * deliver each sender's messages in order, so (source, tag) order holds.
 *
 * Threads: the queues and the request pool are under c->lock, held only
 * for list work: payload copies and provider calls happen after it is
 * released. A request's completion is published by storing `complete`
 * last, with release order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/cvia_errno.h>
#include "core/core.h"
#include "core/inbox.h"
#include "util/log.h"

static void q_push(struct cvia_req_queue *q, struct cvia_req *r)
{
    r->next = NULL;
    r->prev = q->tail;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static void q_remove(struct cvia_req_queue *q, struct cvia_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        q->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        q->tail = r->prev;
    r->next = r->prev = NULL;
}

/* Zero a request with 16-byte stores: gcc made memset of the 128 bytes a
 * `rep stos`, whose start-up cost sat on every message (two requests per
 * round trip and rank). */
static inline void req_zero(struct cvia_req *r)
{
    typedef unsigned char v16 __attribute__((vector_size(16), may_alias, aligned(8)));
    _Static_assert(sizeof(struct cvia_req) == 128, "req_zero writes 128 bytes");
    v16 *p = (v16 *)(void *)r, z = { 0 };

    p[0] = z; p[1] = z; p[2] = z; p[3] = z;
    p[4] = z; p[5] = z; p[6] = z; p[7] = z;
}

/* with c->lock held */
static struct cvia_req *req_alloc_locked(struct cvia_ctx *c)
{
    struct cvia_req *r = c->free_reqs;

    if (r)
        c->free_reqs = r->next;
    return r;
}

struct cvia_req *cvia__req_alloc(struct cvia_ctx *c)
{
    struct cvia_req *r;

    cvia_mlock_lock(&c->lock);
    r = req_alloc_locked(c);
    cvia_mlock_unlock(&c->lock);
    if (!r && !(r = malloc(sizeof(*r))))
        return NULL;
    req_zero(r);
    return r;
}

void cvia__req_free(struct cvia_ctx *c, struct cvia_req *r)
{
    r->kind = 0;
    cvia_mlock_lock(&c->lock);
    r->next = c->free_reqs;
    c->free_reqs = r;
    cvia_mlock_unlock(&c->lock);
}

void cvia__req_pool_fini(struct cvia_ctx *c)
{
    struct cvia_req *r;

    while ((r = c->unexp.head)) {
        q_remove(&c->unexp, r);
        if (!r->direct)
            free(r->x.buf);
        free(r);
    }
    /* posted receives and sends still owned by the user are left alone:
     * the user may still hold their handles */
    c->posted.head = c->posted.tail = NULL;
    while ((r = c->free_reqs)) {
        c->free_reqs = r->next;
        free(r);
    }
}

static void req_done(struct cvia_req *r, int status)
{
    r->status = status;
    atomic_store_explicit(&r->complete, 1, memory_order_release);
}

static int match_recv(const struct cvia_req *r, int src, uint16_t ctx, int32_t tag)
{
    return r->x.ctx == ctx &&
           (r->src_want < 0 || r->src_want == src) &&
           (r->tag_want == CVIA_ANY_TAG || r->tag_want == tag);
}

/* Hand a finished unexpected message @u to its receive @r and free @u.
 * No lock held: @u and @r belong to this thread now. */
static void unexp_deliver(struct cvia_ctx *c, struct cvia_req *r,
                          struct cvia_req *u, int status)
{
    size_t n = u->x.msg_len < r->x.len ? u->x.msg_len : r->x.len;

    if (!u->direct && n && !u->nomem && status != -CVIA_ENOPEER &&
        status != -CVIA_EABORT)
        memcpy(r->x.buf, u->x.buf, n);
    r->x.peer = u->x.peer;
    r->x.tag = u->x.tag;
    r->x.msg_len = u->x.msg_len;
    r->x.done = u->x.done;
    if (u->nomem)
        status = -ENOMEM;
    else if (status == 0 || status == -CVIA_ETRUNC)
        status = u->x.msg_len > r->x.len ? -CVIA_ETRUNC : 0;
    if (!u->direct)
        free(u->x.buf);
    r->partner = NULL;
    cvia__req_free(c, u);
    req_done(r, status);
}

/* A posted receive @r takes the arriving message (it belongs to the caller
 * now: no lock needed). */
static struct cvia_xfer *match_posted(struct cvia_req *r, int src, int32_t tag,
                                      size_t msg_len, unsigned flags, uint64_t cookie)
{
    r->x.peer = src;
    r->x.tag = tag;
    r->x.msg_len = msg_len;
    r->x.done = 0;
    if (flags & CVIA_MATCH_RNDV) {
        r->x.flags |= CVIA_XFER_RNDV;
        r->x.prov_cookie = cookie;
    }
    return &r->x;
}

/* The oldest posted receive that takes (src, ctx, tag), taken off the
 * queue; NULL if none (c->lock held, or no lock at this level). */
static inline struct cvia_req *posted_take(struct cvia_ctx *c, int src, uint16_t ctx,
                                           int32_t tag)
{
    for (struct cvia_req *r = c->posted.head; r; r = r->next) {
        if (match_recv(r, src, ctx, tag)) {
            q_remove(&c->posted, r);
            return r;
        }
    }
    return NULL;
}

/* cvia__core_match past its lock-free look at the posted queue: locks,
 * and the unexpected message's entry and buffer. Out of line, so that the
 * usual case (a receive is posted) saves no registers. */
static __attribute__((noinline)) struct cvia_xfer *
core_match_slow(struct cvia_ctx *c, int src, uint16_t ctx, int32_t tag, size_t msg_len,
                unsigned flags, uint64_t cookie)
{
    struct cvia_req *r, *u;
    void *buf = NULL;

    cvia_mlock_lock(&c->lock);
    if ((r = posted_take(c, src, ctx, tag))) {
        cvia_mlock_unlock(&c->lock);
        return match_posted(r, src, tag, msg_len, flags, cookie);
    }
    u = req_alloc_locked(c);
    cvia_mlock_unlock(&c->lock);
    /* nobody can take an unexpected entry before it is queued: allocate
     * outside the lock, then queue (a receive posted in between checks the
     * unexpected queue after the posted one, under the lock, so it cannot
     * miss this message: see cvia__irecv_ctx) */
    if (!u && !(u = malloc(sizeof(*u)))) {
        static struct cvia_req sink;   /* drop into a sink, fail loudly */
        cvia_error(CORE, "out of memory for an unexpected message from rank %d", src);
        memset(&sink, 0, sizeof(sink));
        sink.kind = CVIA_REQ_UNEXP;
        sink.nomem = 2;
        sink.x.flags = CVIA_XFER_UNEXP;
        sink.x.msg_len = msg_len;
        if (flags & CVIA_MATCH_RNDV)   /* lost: its sender finds out by liveness */
            return NULL;
        return &sink.x;
    }
    memset(u, 0, sizeof(*u));
    u->kind = CVIA_REQ_UNEXP;
    u->x.peer = src;
    u->x.tag = tag;
    u->x.ctx = ctx;
    u->x.msg_len = msg_len;
    u->x.flags = CVIA_XFER_UNEXP;
    if (flags & CVIA_MATCH_RNDV) {   /* complete before it is published */
        u->x.flags |= CVIA_XFER_RNDV;
        u->x.prov_cookie = cookie;
    } else {
        u->x.len = msg_len;
        if (msg_len && !(buf = malloc(msg_len))) {
            cvia_error(CORE, "out of memory for a %zu-byte unexpected message from "
                       "rank %d; it will fail its receive", msg_len, src);
            u->nomem = 1;
            u->x.len = 0;
        }
        u->x.buf = buf;
    }
    cvia_mlock_lock(&c->lock);
    /* a receive may have been posted while we allocated */
    if ((r = posted_take(c, src, ctx, tag))) {
        u->next = c->free_reqs;      /* give the entry back */
        c->free_reqs = u;
        cvia_mlock_unlock(&c->lock);
        free(buf);
        return match_posted(r, src, tag, msg_len, flags, cookie);
    }
    /* an inbox opened on the tag since the matcher looked (another
     * thread's arm, whose look for early messages on the tag, under this
     * lock, may already be over): the message is the inbox's, or it would
     * wait in the unexpected queue for a receive nobody posts */
    struct cvia_xfer *ix = cvia__inbox_recheck(src, ctx, tag, msg_len, flags, cookie);
    if (ix) {
        u->next = c->free_reqs;
        c->free_reqs = u;
        cvia_mlock_unlock(&c->lock);
        free(buf);
        return ix;
    }
    q_push(&c->unexp, u);
    cvia_mlock_unlock(&c->lock);
    return (flags & CVIA_MATCH_RNDV) ? NULL : &u->x;
}

struct cvia_xfer *cvia__core_match(void *core, int src, uint16_t ctx,
                                   int32_t tag, size_t msg_len, unsigned flags,
                                   uint64_t cookie)
{
    struct cvia_ctx *c = core;
    struct cvia_req *r;

    /* no lock at this level (single, funneled, serialized): the posted
     * queue is looked at here, with no call and no frame */
    if (__builtin_expect(cvia_mlock_is_off(&c->lock), 1) &&
        (r = posted_take(c, src, ctx, tag)))
        return match_posted(r, src, tag, msg_len, flags, cookie);
    return core_match_slow(c, src, ctx, tag, msg_len, flags, cookie);
}

/* An unexpected message's end: it waits in its queue, or is handed to the
 * receive that took it meanwhile. Out of line, as core_match_slow. */
static __attribute__((noinline)) void core_complete_unexp(struct cvia_ctx *c,
                                                          struct cvia_req *r, int status)
{
    struct cvia_req *partner;

    if (r->nomem == 2)   /* the static sink */
        return;
    cvia_mlock_lock(&c->lock);
    partner = r->partner;
    if (!partner) {
        r->status = status;          /* waits in the unexpected queue */
        atomic_store_explicit(&r->complete, 1, memory_order_release);
        cvia_mlock_unlock(&c->lock);
        return;
    }
    cvia_mlock_unlock(&c->lock);
    unexp_deliver(c, partner, r, status);
}

void cvia__core_complete(void *core, struct cvia_xfer *x, int status)
{
    struct cvia_req *r = cvia_container_of(x, struct cvia_req, x);

    if (__builtin_expect(r->kind != CVIA_REQ_UNEXP, 1))
        req_done(r, status);
    else
        core_complete_unexp(core, r, status);
}

void cvia__core_peer_lost(void *core, int peer, int err)
{
    struct cvia_ctx *c = core;
    struct cvia_req *r, *next, *failed = NULL;

    if (peer < 0 || peer >= cvia__npeers(c))
        return;
    cvia_mlock_lock(&c->lock);
    if (c->peer_lost[peer]) {
        cvia_mlock_unlock(&c->lock);
        return;
    }
    c->peer_lost[peer] = err == -CVIA_EABORT ? 2 : 1;
    if (!c->lost_err)
        c->lost_err = cvia__peer_err(c, peer);
    c->nlost++;
    for (r = c->posted.head; r; r = next) {
        next = r->next;
        if (r->src_want == peer || r->src_want == CVIA_ANY_SOURCE) {
            q_remove(&c->posted, r);
            r->next = failed;
            failed = r;
        }
    }
    cvia_mlock_unlock(&c->lock);
    for (r = failed; r; r = next) {
        next = r->next;
        r->next = NULL;
        r->x.peer = peer;
        req_done(r, err);
    }
}

static int check_peer_arg(struct cvia_ctx *c, int peer, int any_ok)
{
    if (any_ok && (peer == CVIA_ANY_SOURCE || peer == CVIA_ANY_LIVE_SOURCE))
        return 0;
    if (peer < 0 || peer >= cvia__npeers(c))
        return -EINVAL;
    return 0;
}

/* Send through the request @r the caller holds (zeroed). */
static int send_start(struct cvia_ctx *c, struct cvia_req *r, const void *buf, size_t len,
                      int dest, int tag, uint16_t ctx)
{
    int pi;

    r->kind = CVIA_REQ_SEND;
    r->x.buf = (void *)buf;
    r->x.len = len;
    r->x.msg_len = len;
    r->x.peer = dest;
    r->x.tag = tag;
    r->x.ctx = ctx;
    pi = c->peer_prov[dest];
    return c->prov[pi].desc->ops->send(c->prov[pi].ep, &r->x);
}

static int send_args(struct cvia_ctx *c, const void *buf, size_t len, int dest, int tag)
{
    if (check_peer_arg(c, dest, 0) || tag < 0 || (!buf && len))
        return -EINVAL;
    if (c->peer_lost[dest])
        return cvia__peer_err(c, dest);
    return 0;
}

int cvia__isend_ctx(struct cvia_ctx *c, const void *buf, size_t len, int dest,
                    int tag, uint16_t ctx, struct cvia_req **req_p)
{
    struct cvia_req *r;
    int rc;

    if ((rc = send_args(c, buf, len, dest, tag)))
        return rc;
    r = cvia__req_alloc(c);
    if (!r)
        return -ENOMEM;
    rc = send_start(c, r, buf, len, dest, tag, ctx);
    if (rc < 0) {
        cvia__req_free(c, r);
        return rc;
    }
    *req_p = r;
    return 0;
}

/* A blocking send's request is the caller's (on its stack), not the
 * pool's: no lock round to take it and none to give it back (issue 16:
 * at CVIA_THREAD_MULTIPLE each round is an atomic exchange, and the one
 * that gave the request back came right after the slot's store into the
 * peer's ring, where it waited for that store to leave the store buffer).
 * Nothing keeps a pointer to a request once it completes (the pool hands
 * a freed one to the next operation at once), so @r may go when this
 * returns. */
int cvia__send_blocking(struct cvia_ctx *c, const void *buf, size_t len, int dest,
                        int tag, uint16_t ctx)
{
    struct cvia_req r;
    int rc;

    if ((rc = send_args(c, buf, len, dest, tag)))
        return rc;
    req_zero(&r);
    if ((rc = send_start(c, &r, buf, len, dest, tag, ctx)) < 0)
        return rc;
    return cvia__wait_req(c, &r);
}

/* Post the receive @r (zeroed, the caller's), or hand it the unexpected
 * message it takes; entered with c->lock held, returns with it released. */
static int recv_start_locked(struct cvia_ctx *c, struct cvia_req *r, void *buf, size_t cap,
                             int src, int tag, uint16_t ctx)
{
    struct cvia_req *u;
    int lost;

    r->kind = CVIA_REQ_RECV;
    r->x.buf = buf;
    r->x.len = cap;
    r->x.peer = src;
    r->x.tag = tag;
    r->x.ctx = ctx;
    r->src_want = src;
    r->tag_want = tag;

    for (u = c->unexp.head; u; u = u->next)
        if (match_recv(r, u->x.peer, u->x.ctx, u->x.tag))
            break;
    if (u) {
        q_remove(&c->unexp, u);
        if (cvia__req_done(u)) {
            cvia_mlock_unlock(&c->lock);
            unexp_deliver(c, r, u, u->status);
            return 0;
        }
        /* still arriving: pair them; its completion delivers */
        u->partner = r;
        r->partner = u;
        r->x.peer = u->x.peer;
        r->x.tag = u->x.tag;
        if (u->x.flags & CVIA_XFER_RNDV) {
            /* no byte has moved yet: fetch straight into the receive buffer */
            u->x.buf = buf;
            u->x.len = cap;
            u->direct = 1;
            cvia_mlock_unlock(&c->lock);
            int pi = c->peer_prov[u->x.peer];
            int rc = c->prov[pi].desc->ops->rndv_start(c->prov[pi].ep, &u->x);
            if (rc)
                cvia__core_complete(c, &u->x, rc);
            return 0;
        }
        cvia_mlock_unlock(&c->lock);
        return 0;
    }
    lost = (src >= 0 && c->peer_lost[src]) ||
           (src == CVIA_ANY_SOURCE && c->nlost);
    if (!lost)
        q_push(&c->posted, r);
    cvia_mlock_unlock(&c->lock);
    if (lost)
        req_done(r, src >= 0 ? cvia__peer_err(c, src) : c->lost_err);
    return 0;
}

static int recv_args(struct cvia_ctx *c, void *buf, size_t cap, int src, int tag)
{
    if (check_peer_arg(c, src, 1) || tag < CVIA_ANY_TAG || (!buf && cap))
        return -EINVAL;
    return 0;
}

int cvia__irecv_ctx(struct cvia_ctx *c, void *buf, size_t cap, int src,
                    int tag, uint16_t ctx, struct cvia_req **req_p)
{
    struct cvia_req *r;

    if (recv_args(c, buf, cap, src, tag))
        return -EINVAL;
    /* the request is taken from the pool and posted in one round of the
     * lock (issue 16: at CVIA_THREAD_MULTIPLE each round is an atomic
     * exchange and a release store); malloc only outside it */
    cvia_mlock_lock(&c->lock);
    if (!(r = req_alloc_locked(c))) {
        cvia_mlock_unlock(&c->lock);
        if (!(r = malloc(sizeof(*r))))
            return -ENOMEM;
        cvia_mlock_lock(&c->lock);
    }
    req_zero(r);
    *req_p = r;
    return recv_start_locked(c, r, buf, cap, src, tag, ctx);
}

/* A blocking receive into a request on the caller's stack, as
 * cvia__send_blocking: one lock round to post it, none to free it.
 * @r is the caller's, zeroed here; complete on return, its status the
 * value returned, unless the arguments were refused (-EINVAL, @r not
 * complete). */
int cvia__recv_blocking(struct cvia_ctx *c, struct cvia_req *r, void *buf, size_t cap,
                        int src, int tag, uint16_t ctx)
{
    req_zero(r);
    if (recv_args(c, buf, cap, src, tag))
        return -EINVAL;
    cvia_mlock_lock(&c->lock);
    recv_start_locked(c, r, buf, cap, src, tag, ctx);
    return cvia__wait_req(c, r);
}

int cvia__wait_req(struct cvia_ctx *c, struct cvia_req *r)
{
    struct cvia_idle w = { 0, 0 };

    while (!cvia__req_done(r)) {
        if (cvia__progress(c) > 0)
            w.n = 0;
        else if (!cvia__req_done(r))
            cvia__idle(c, &w, 1);
    }
    return r->status;
}

int cvia__cancel(struct cvia_ctx *c, struct cvia_req *r)
{
    struct cvia_req *p;

    if (r->kind != CVIA_REQ_RECV)
        return -EBUSY;
    cvia_mlock_lock(&c->lock);
    for (p = c->posted.head; p && p != r; p = p->next)
        ;
    if (p)   /* not matched: nobody else will touch it */
        q_remove(&c->posted, r);
    cvia_mlock_unlock(&c->lock);
    if (!p)
        return -EBUSY;
    cvia__req_free(c, r);
    return 0;
}
