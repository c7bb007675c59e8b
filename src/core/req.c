/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Requests and tag matching (MPI semantics): an arriving message takes the
 * oldest posted receive that matches its (source, tag, context); a new
 * receive takes the oldest unexpected message that matches it. Providers
 * deliver each sender's messages in order, so (source, tag) order holds. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/cvia_errno.h>
#include "core/core.h"
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

struct cvia_req *cvia__req_alloc(struct cvia_ctx *c)
{
    struct cvia_req *r = c->free_reqs;

    if (r)
        c->free_reqs = r->next;
    else if (!(r = malloc(sizeof(*r))))
        return NULL;
    memset(r, 0, sizeof(*r));
    return r;
}

void cvia__req_free(struct cvia_ctx *c, struct cvia_req *r)
{
    r->kind = 0;
    r->next = c->free_reqs;
    c->free_reqs = r;
}

void cvia__req_pool_fini(struct cvia_ctx *c)
{
    struct cvia_req *r;

    while ((r = c->unexp.head)) {
        q_remove(&c->unexp, r);
        if (!r->redirected)
            free(r->x.buf);
        free(r);
    }
    /* posted receives and sends still owned by the user are leaked on
     * purpose: the user may still hold their handles */
    c->posted.head = c->posted.tail = NULL;
    while ((r = c->free_reqs)) {
        c->free_reqs = r->next;
        free(r);
    }
}

static int match_recv(const struct cvia_req *r, int src, uint16_t ctx, int32_t tag)
{
    return r->x.ctx == ctx &&
           (r->src_want == CVIA_ANY_SOURCE || r->src_want == src) &&
           (r->tag_want == CVIA_ANY_TAG || r->tag_want == tag);
}

static void req_done(struct cvia_req *r, int status)
{
    r->status = status;
    r->complete = 1;
}

/* Hand a finished unexpected message @u to its receive @r. */
static void unexp_deliver(struct cvia_ctx *c, struct cvia_req *r,
                          struct cvia_req *u, int status)
{
    size_t n = u->x.msg_len < r->x.len ? u->x.msg_len : r->x.len;

    if (!u->redirected && n && !u->nomem)
        memcpy(r->x.buf, u->x.buf, n);
    r->x.peer = u->x.peer;
    r->x.tag = u->x.tag;
    r->x.msg_len = u->x.msg_len;
    r->x.done = u->x.done;
    if (u->nomem)
        status = -ENOMEM;
    else if (status == 0 || status == -CVIA_ETRUNC)
        status = u->x.msg_len > r->x.len ? -CVIA_ETRUNC : 0;
    req_done(r, status);
    if (!u->redirected)
        free(u->x.buf);
    r->partner = NULL;
    cvia__req_free(c, u);
}

struct cvia_xfer *cvia__core_match(void *core, int src, uint16_t ctx,
                                   int32_t tag, size_t msg_len)
{
    struct cvia_ctx *c = core;
    struct cvia_req *r, *u;

    for (r = c->posted.head; r; r = r->next) {
        if (match_recv(r, src, ctx, tag)) {
            q_remove(&c->posted, r);
            r->x.peer = src;
            r->x.tag = tag;
            return &r->x;
        }
    }
    u = cvia__req_alloc(c);
    if (!u) {
        /* cannot even track it: drop it into a static sink */
        static struct cvia_req sink;
        cvia_error(CORE, "out of memory for an unexpected message from rank %d", src);
        memset(&sink, 0, sizeof(sink));
        sink.kind = CVIA_REQ_UNEXP;
        sink.nomem = 2;
        return &sink.x;
    }
    u->kind = CVIA_REQ_UNEXP;
    u->x.peer = src;
    u->x.tag = tag;
    u->x.ctx = ctx;
    u->x.msg_len = msg_len;
    u->x.len = msg_len;
    if (msg_len && !(u->x.buf = malloc(msg_len))) {
        cvia_error(CORE, "out of memory for a %zu-byte unexpected message from "
                   "rank %d; it will fail its receive", msg_len, src);
        u->nomem = 1;
        u->x.len = 0;
    }
    q_push(&c->unexp, u);
    return &u->x;
}

void cvia__core_complete(void *core, struct cvia_xfer *x, int status)
{
    struct cvia_ctx *c = core;
    struct cvia_req *r = cvia_container_of(x, struct cvia_req, x);

    if (r->kind == CVIA_REQ_UNEXP) {
        if (r->nomem == 2)   /* the static sink */
            return;
        if (r->partner) {
            unexp_deliver(c, r->partner, r, status);
            return;
        }
        req_done(r, status);   /* waits in the unexpected queue */
        return;
    }
    req_done(r, status);
}

void cvia__core_peer_lost(void *core, int peer, int err)
{
    struct cvia_ctx *c = core;
    struct cvia_req *r, *next;

    if (peer < 0 || peer >= c->size || c->peer_lost[peer])
        return;
    c->peer_lost[peer] = 1;
    c->nlost++;
    for (r = c->posted.head; r; r = next) {
        next = r->next;
        if (r->src_want == peer || r->src_want == CVIA_ANY_SOURCE) {
            q_remove(&c->posted, r);
            r->x.peer = peer;
            req_done(r, err);
        }
    }
}

static int check_peer_arg(struct cvia_ctx *c, int peer, int any_ok)
{
    if (any_ok && peer == CVIA_ANY_SOURCE)
        return 0;
    if (peer < 0 || peer >= c->size)
        return -EINVAL;
    return 0;
}

int cvia__isend_ctx(struct cvia_ctx *c, const void *buf, size_t len, int dest,
                    int tag, uint16_t ctx, struct cvia_req **req_p)
{
    struct cvia_req *r;
    int rc, pi;

    if (check_peer_arg(c, dest, 0) || tag < 0 || (!buf && len))
        return -EINVAL;
    if (c->peer_lost[dest])
        return c->aborted ? -CVIA_EABORT : -CVIA_ENOPEER;
    r = cvia__req_alloc(c);
    if (!r)
        return -ENOMEM;
    r->kind = CVIA_REQ_SEND;
    r->x.buf = (void *)buf;
    r->x.len = len;
    r->x.msg_len = len;
    r->x.peer = dest;
    r->x.tag = tag;
    r->x.ctx = ctx;
    pi = c->peer_prov[dest];
    rc = c->prov[pi].desc->ops->send(c->prov[pi].ep, &r->x);
    if (rc < 0) {
        cvia__req_free(c, r);
        return rc;
    }
    *req_p = r;
    return 0;
}

int cvia__irecv_ctx(struct cvia_ctx *c, void *buf, size_t cap, int src,
                    int tag, uint16_t ctx, struct cvia_req **req_p)
{
    struct cvia_req *r, *u;

    if (check_peer_arg(c, src, 1) || tag < CVIA_ANY_TAG || (!buf && cap))
        return -EINVAL;
    r = cvia__req_alloc(c);
    if (!r)
        return -ENOMEM;
    r->kind = CVIA_REQ_RECV;
    r->x.buf = buf;
    r->x.len = cap;
    r->x.peer = src;
    r->x.tag = tag;
    r->x.ctx = ctx;
    r->src_want = src;
    r->tag_want = tag;
    *req_p = r;

    for (u = c->unexp.head; u; u = u->next) {
        if (!match_recv(r, u->x.peer, u->x.ctx, u->x.tag))
            continue;
        q_remove(&c->unexp, u);
        if (u->complete) {
            unexp_deliver(c, r, u, u->status);
            return 0;
        }
        /* still arriving: pair them; if the receive can hold it all, move
         * what came so far and let the rest land in place */
        u->partner = r;
        r->partner = u;
        r->x.peer = u->x.peer;
        r->x.tag = u->x.tag;
        if (!u->nomem && cap >= u->x.msg_len) {
            if (u->x.done)
                memcpy(buf, u->x.buf, u->x.done);
            free(u->x.buf);
            u->x.buf = buf;
            u->x.len = cap;
            u->redirected = 1;
        }
        return 0;
    }
    if ((src != CVIA_ANY_SOURCE && c->peer_lost[src]) ||
        (src == CVIA_ANY_SOURCE && c->nlost)) {
        req_done(r, c->aborted ? -CVIA_EABORT : -CVIA_ENOPEER);
        return 0;
    }
    q_push(&c->posted, r);
    return 0;
}

int cvia__wait_req(struct cvia_ctx *c, struct cvia_req *r)
{
    unsigned spins = 0;

    while (!r->complete) {
        if (cvia__progress(c) > 0)
            spins = 0;
        else
            cvia__idle(c, &spins);
    }
    return r->status;
}
