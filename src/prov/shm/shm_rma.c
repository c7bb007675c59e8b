/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* One-sided operations over shm. The owner of a region publishes it in
 * its segment's registration table; an initiator checks that table (key,
 * bounds, rights) and then copies once itself (arena load/store or Cross
 * Memory Attach), sending only a small IMM slot if asked to. Where it may
 * not copy into the target, the data goes through the ring as an RMAW
 * message, and the target checks it again against its own registrations
 * before it writes a byte; reads go as an RMAR request answered by RRESP. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>
#include "prov/shm/shm.h"
#include "util/log.h"

static struct shm_op *op_of(struct cvia_xfer *x)
{
    return (struct shm_op *)(void *)((char *)x - offsetof(struct shm_op, x));
}

int shm_mr_export(struct cvia_prov_ep *ep, uint64_t key, const void *addr,
                  size_t len, unsigned access)
{
    uint64_t idx = (key & 0xffffffffu) - 1;
    struct shm_mr *e;

    if (idx >= (uint64_t)ep->cfg.mr_max) {
        cvia_error(SHM, "more than %ld registered regions: raise CVIA_SHM_MR_MAX",
                   ep->cfg.mr_max);
        return -ENOSPC;
    }
    e = &shm_mr_table(ep->seg)[idx];
    atomic_store_explicit(&e->key, 0, memory_order_release);
    e->addr = (uint64_t)(uintptr_t)addr;
    e->len = len;
    e->access = access;
    atomic_store_explicit(&e->key, key, memory_order_release);
    return 0;
}

int shm_mr_unexport(struct cvia_prov_ep *ep, uint64_t key)
{
    uint64_t idx = (key & 0xffffffffu) - 1;

    if (idx < (uint64_t)ep->cfg.mr_max) {
        struct shm_mr *e = &shm_mr_table(ep->seg)[idx];
        uint64_t k = key;
        atomic_compare_exchange_strong(&e->key, &k, 0);
    }
    return 0;
}

/* Does the target's live table allow this access? */
static int shm_mr_allowed(struct cvia_prov_ep *ep, int peer, uint64_t key,
                          uint64_t addr, size_t len, unsigned access)
{
    struct shm_seg_hdr *h = ep->peers[peer].seg;
    uint64_t idx = (key & 0xffffffffu) - 1, base, size, k;
    unsigned acc;
    struct shm_mr *e;

    if (idx >= (uint64_t)h->mr_max)
        return -EACCES;
    e = &shm_mr_table(h)[idx];
    if ((k = atomic_load_explicit(&e->key, memory_order_acquire)) != key || !k)
        return -EACCES;
    base = e->addr;
    size = e->len;
    acc = e->access;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&e->key, memory_order_relaxed) != k)
        return -EACCES;   /* changed under us: withdrawn */
    if ((acc & access) != access || addr < base || len > size || addr - base > size - len)
        return -EACCES;
    return 0;
}

static struct shm_op *shm_op_new(int peer, uint16_t slot_flags, struct cvia_xfer *user)
{
    struct shm_op *op = calloc(1, sizeof(*op));

    if (!op)
        return NULL;
    op->x.peer = peer;
    op->x.flags = SHM_XFER_OP;
    op->x.ctx = CVIA_CTX_INTERNAL;
    op->slot_flags = slot_flags;
    op->user = user;
    return op;
}

/* The ring took (or, with an error, dropped) a one-sided message. */
void shm_op_done(struct cvia_prov_ep *ep, struct cvia_xfer *x, int status)
{
    struct shm_op *op = op_of(x);
    const struct cvia_prov_upcalls *up = ep->args.up;

    if (op->slot_flags == SHM_SLOT_RMAW && op->user)
        up->complete(up->core, op->user, status);
    free(op);
}

static int shm_send_imm(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    struct shm_op *op = shm_op_new(x->peer, SHM_SLOT_IMM, NULL);

    if (!op)
        return -ENOMEM;
    op->hdr.key = x->rma_key;
    op->hdr.addr = x->rma_addr;
    op->hdr.a = x->rma_imm;
    op->hdr.b = x->len;
    return shm_enqueue(ep, x->peer, &op->x);
}

int shm_write(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct shm_op *op;
    int rc;

    rc = shm_mr_allowed(ep, x->peer, x->rma_key, x->rma_addr, x->len, CVIA_MR_REMOTE_WRITE);
    if (rc)
        return rc;
    if (atomic_load(&ep->peers[x->peer].gone))
        return -CVIA_ENOPEER;
    rc = shm_copy(ep, x->peer, 0, x->buf, x->rma_addr, x->len);
    if (rc == -EPERM) {   /* not ours to copy into: through the ring */
        if (!(op = shm_op_new(x->peer, SHM_SLOT_RMAW, x)))
            return -ENOMEM;
        op->hdr.key = x->rma_key;
        op->hdr.addr = x->rma_addr;
        op->hdr.a = x->rma_imm;
        op->hdr.b = x->flags & CVIA_XFER_IMM;
        op->x.buf = x->buf;
        op->x.len = x->len;
        rc = shm_enqueue(ep, x->peer, &op->x);
        if (rc)
            free(op);
        return rc;
    }
    if (rc)
        return rc;
    /* the data is in place: the event may follow it */
    if ((x->flags & CVIA_XFER_IMM) && (rc = shm_send_imm(ep, x)))
        return rc;
    x->done = x->len;
    up->complete(up->core, x, 0);
    return 0;
}

int shm_read(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    struct shm_peer *pp = &ep->peers[x->peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct shm_op *op;
    int rc;

    rc = shm_mr_allowed(ep, x->peer, x->rma_key, x->rma_addr, x->len, CVIA_MR_REMOTE_READ);
    if (rc)
        return rc;
    if (atomic_load(&pp->gone))
        return -CVIA_ENOPEER;
    rc = shm_copy(ep, x->peer, 1, x->buf, x->rma_addr, x->len);
    if (rc != -EPERM) {
        if (rc)
            return rc;
        x->done = x->len;
        up->complete(up->core, x, 0);
        return 0;
    }
    /* ask the target to send it: the request goes first, the reply finds
     * the read by its cookie among the pending ones */
    if (!(op = shm_op_new(x->peer, SHM_SLOT_RMAR, x)))
        return -ENOMEM;
    op->hdr.key = x->rma_key;
    op->hdr.addr = x->rma_addr;
    op->hdr.a = x->len;
    op->hdr.b = (uint64_t)(uintptr_t)x;
    cvia_mlock_lock(&pp->tx_lock);
    x->prov_next = pp->reads;
    pp->reads = x;
    cvia_mlock_unlock(&pp->tx_lock);
    rc = shm_enqueue(ep, x->peer, &op->x);
    if (rc) {
        struct cvia_xfer **l;
        cvia_mlock_lock(&pp->tx_lock);
        for (l = &pp->reads; *l && *l != x; l = &(*l)->prov_next)
            ;
        if (*l)
            *l = x->prov_next;
        cvia_mlock_unlock(&pp->tx_lock);
        free(op);
    }
    return rc;
}

/* Target / initiator side of a ring-carried one-sided message whose header
 * just arrived (rx_lock of @peer held). Returns where its data goes, or
 * NULL for a read request (answered here). */
struct cvia_xfer *shm_rma_begin(struct cvia_prov_ep *ep, int peer, uint16_t flags,
                                const struct shm_rma_hdr *h, size_t data_len)
{
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *x;
    int rc;

    pp->rx_op.hdr = *h;
    memset(&pp->rx_op.x, 0, sizeof(pp->rx_op.x));
    if (flags == SHM_SLOT_RMAW) {
        rc = up->mr_check(up->core, h->key, h->addr, data_len, CVIA_MR_REMOTE_WRITE);
        if (rc) {
            cvia_warn(SHM, "rank %d wrote %zu bytes outside a region it may write; "
                      "dropped", peer, data_len);
            pp->rx_op.hdr.b = 0;   /* no event either */
        } else {
            pp->rx_op.x.buf = (void *)(uintptr_t)h->addr;
            pp->rx_op.x.len = data_len;
        }
        return &pp->rx_op.x;
    }
    if (flags == SHM_SLOT_RMAR) {
        struct shm_op *op = shm_op_new(peer, SHM_SLOT_RRESP, NULL);
        if (!op) {
            cvia_error(SHM, "out of memory answering a read of rank %d", peer);
            return NULL;
        }
        rc = up->mr_check(up->core, h->key, h->addr, (size_t)h->a, CVIA_MR_REMOTE_READ);
        op->hdr.key = h->key;
        op->hdr.addr = h->addr;
        op->hdr.a = h->b;                 /* the initiator's cookie */
        op->hdr.b = (uint64_t)(int64_t)rc;
        if (!rc) {
            op->x.buf = (void *)(uintptr_t)h->addr;
            op->x.len = (size_t)h->a;
        }
        if (shm_enqueue(ep, peer, &op->x))
            free(op);
        return NULL;
    }
    /* RRESP: the answer to one of my reads */
    cvia_mlock_lock(&pp->tx_lock);
    struct cvia_xfer **l;
    for (l = &pp->reads; *l && (uint64_t)(uintptr_t)*l != h->a; l = &(*l)->prov_next)
        ;
    x = *l;
    if (x)
        *l = x->prov_next;
    cvia_mlock_unlock(&pp->tx_lock);
    if (!x) {
        cvia_warn(SHM, "rank %d answered a read nobody asked for; dropped", peer);
        return &pp->rx_op.x;   /* len 0: the bytes are dropped */
    }
    x->prov_next = NULL;
    pp->rx_op.user = x;
    if ((int64_t)h->b != 0 || data_len != x->len)
        pp->rx_op.x.len = 0, x = &pp->rx_op.x;   /* refused: keep nothing */
    return x;
}

/* The message begun by shm_rma_begin is complete (rx_lock held). */
void shm_rma_end(struct cvia_prov_ep *ep, int peer, uint16_t flags,
                 struct cvia_xfer *x, int status)
{
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    const struct shm_rma_hdr *h = &pp->rx_op.hdr;

    if (flags == SHM_SLOT_RMAW) {
        if (status == 0 && (h->b & CVIA_XFER_IMM) && pp->rx_op.x.buf)
            up->imm(up->core, peer, h->a, h->key, h->addr, pp->rx_op.x.len);
        return;
    }
    if (flags == SHM_SLOT_RRESP && pp->rx_op.user) {
        struct cvia_xfer *user = pp->rx_op.user;
        int st = (int)(int64_t)h->b;
        pp->rx_op.user = NULL;
        if (!st && x != user)
            st = -CVIA_EPROTO;   /* the answer's length did not match */
        if (!st && status && status != -CVIA_ETRUNC)
            st = status;
        user->done = user->len;
        up->complete(up->core, user, st);
    }
}
