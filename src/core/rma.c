/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* One-sided communication in the core: registered regions (the owner's
 * authority on what peers may touch), RDMA write / read requests handed to
 * the provider that reaches the peer, and the queue of immediate events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>
#include "core/core.h"
#include "util/log.h"

#define CHECK_INIT(c) do { if (!(c)->initialized) return -CVIA_ENOINIT; } while (0)

/* [addr, addr + len) inside [base, base + size), without overflow */
static int range_inside(uint64_t addr, uint64_t len, uint64_t base, uint64_t size)
{
    return addr >= base && len <= size && addr - base <= size - len;
}

int cvia__core_mr_check(void *core, uint64_t key, uint64_t addr, size_t len,
                        unsigned access)
{
    struct cvia_ctx *c = core;
    uint32_t idx = (uint32_t)(key & 0xffffffffu);
    int rc = -EACCES;

    if (!idx)
        return -EACCES;
    cvia_mlock_lock(&c->mr_lock);
    if (idx <= c->mr_cap && c->mrs[idx - 1]) {
        const struct cvia_mr *m = c->mrs[idx - 1];
        if (m->key == key && (m->access & access) == access &&
            range_inside(addr, len, m->addr, m->len))
            rc = 0;
    }
    cvia_mlock_unlock(&c->mr_lock);
    return rc;
}

void cvia__core_imm(void *core, int src, uint64_t imm, uint64_t key,
                    uint64_t addr, size_t len)
{
    struct cvia_ctx *c = core;
    cvia_imm_event_t ev = { .source = src, .imm = imm, .key = key, .len = len };

    cvia_mlock_lock(&c->mr_lock);
    {
        uint32_t idx = (uint32_t)(key & 0xffffffffu);
        if (idx && idx <= c->mr_cap && c->mrs[idx - 1] && c->mrs[idx - 1]->key == key)
            ev.off = addr - c->mrs[idx - 1]->addr;
    }
    cvia_mlock_unlock(&c->mr_lock);

    cvia_mlock_lock(&c->imm_lock);
    if (c->imm_len == c->imm_cap) {
        size_t cap = c->imm_cap ? c->imm_cap * 2 : 64;
        cvia_imm_event_t *q = malloc(cap * sizeof(*q));
        if (!q) {
            cvia_mlock_unlock(&c->imm_lock);
            cvia_error(CORE, "out of memory: immediate event from rank %d lost", src);
            return;
        }
        for (size_t i = 0; i < c->imm_len; i++)
            q[i] = c->imm[(c->imm_head + i) % c->imm_cap];
        free(c->imm);
        c->imm = q;
        c->imm_head = 0;
        c->imm_cap = cap;
    }
    c->imm[(c->imm_head + c->imm_len) % c->imm_cap] = ev;
    c->imm_len++;
    cvia_mlock_unlock(&c->imm_lock);
    /* another thread's progress took it off the ring: a thread asleep in
     * cvia_imm_block() would not see the ring busy, so wake it */
    if (atomic_load(&c->imm_sleepers))
        cvia_imm_kick();
}

void cvia__rma_fini(struct cvia_ctx *c)
{
    for (uint32_t i = 0; i < c->mr_cap; i++)
        free(c->mrs[i]);   /* handles the user did not deregister */
    free(c->mrs);
    free(c->imm);
    c->mrs = NULL;
    c->mr_cap = 0;
    c->imm = NULL;
    c->imm_cap = c->imm_len = c->imm_head = 0;
}

int cvia_mr_reg(void *buf, size_t len, unsigned access, cvia_mr_t *mr_p)
{
    struct cvia_ctx *c = &cvia__ctx;
    struct cvia_mr *m;
    uint32_t idx;
    int rc = 0;

    CHECK_INIT(c);
    if (!mr_p || (!buf && len) || !access ||
        (access & ~(CVIA_MR_REMOTE_READ | CVIA_MR_REMOTE_WRITE)))
        return -EINVAL;
    if (!(m = calloc(1, sizeof(*m))))
        return -ENOMEM;
    cvia_mlock_lock(&c->mr_lock);
    for (idx = 0; idx < c->mr_cap && c->mrs[idx]; idx++)
        ;
    if (idx == c->mr_cap) {
        uint32_t cap = c->mr_cap ? c->mr_cap * 2 : 16;
        struct cvia_mr **t = realloc(c->mrs, cap * sizeof(*t));
        if (!t) {
            cvia_mlock_unlock(&c->mr_lock);
            free(m);
            return -ENOMEM;
        }
        memset(t + c->mr_cap, 0, (cap - c->mr_cap) * sizeof(*t));
        c->mrs = t;
        c->mr_cap = cap;
    }
    /* a fresh generation per registration: a descriptor of a withdrawn
     * region never matches the next one in the same slot */
    m->key = ((uint64_t)++c->mr_gen << 32) | (idx + 1);
    m->addr = (uint64_t)(uintptr_t)buf;
    m->len = len;
    m->access = access;
    m->index = idx;
    c->mrs[idx] = m;
    cvia_mlock_unlock(&c->mr_lock);

    for (int i = 0; i < c->nprov && !rc; i++)
        rc = c->prov[i].desc->ops->mr_reg(c->prov[i].ep, m->key, buf, len, access);
    if (rc) {
        cvia_mr_dereg(m);
        return rc;
    }
    *mr_p = m;
    return 0;
}

int cvia_mr_desc(cvia_mr_t mr, cvia_mr_desc_t *desc)
{
    CHECK_INIT(&cvia__ctx);
    if (!mr || !desc)
        return -EINVAL;
    desc->addr = mr->addr;
    desc->len = mr->len;
    desc->key = mr->key;
    desc->rank = cvia__ctx.rank;
    desc->access = mr->access;
    return 0;
}

int cvia_mr_dereg(cvia_mr_t mr)
{
    struct cvia_ctx *c = &cvia__ctx;

    CHECK_INIT(c);
    if (!mr)
        return -EINVAL;
    cvia_mlock_lock(&c->mr_lock);
    if (mr->index >= c->mr_cap || c->mrs[mr->index] != mr) {
        cvia_mlock_unlock(&c->mr_lock);
        return -EINVAL;
    }
    c->mrs[mr->index] = NULL;
    cvia_mlock_unlock(&c->mr_lock);
    for (int i = 0; i < c->nprov; i++)
        c->prov[i].desc->ops->mr_dereg(c->prov[i].ep, mr->key);
    free(mr);
    return 0;
}

static int rma_start(int kind, void *local, size_t len, const cvia_mr_desc_t *remote,
                     uint64_t off, unsigned flags, uint64_t imm, cvia_req_t *req_p)
{
    struct cvia_ctx *c = &cvia__ctx;
    struct cvia_req *r;
    int pi, rc, peer;

    CHECK_INIT(c);
    if (!remote || !req_p || (!local && len) || (flags & ~CVIA_WRITE_IMM))
        return -EINVAL;
    peer = remote->rank;
    if (peer < 0 || peer >= cvia__npeers(c))
        return -EINVAL;
    if (off > remote->len || len > remote->len - off)
        return -EACCES;
    if (c->peer_lost[peer])
        return cvia__peer_err(c, peer);
    if (!(r = cvia__req_alloc(c)))
        return -ENOMEM;
    r->kind = (uint8_t)kind;
    r->x.buf = local;
    r->x.len = len;
    r->x.msg_len = len;
    r->x.peer = peer;
    r->x.rma_addr = remote->addr + off;
    r->x.rma_key = remote->key;
    r->x.rma_imm = imm;
    if (flags & CVIA_WRITE_IMM)
        r->x.flags |= CVIA_XFER_IMM;
    pi = c->peer_prov[peer];
    rc = kind == CVIA_REQ_WRITE ? c->prov[pi].desc->ops->write(c->prov[pi].ep, &r->x)
                                : c->prov[pi].desc->ops->read(c->prov[pi].ep, &r->x);
    if (rc < 0) {
        cvia__req_free(c, r);
        return rc;
    }
    *req_p = r;
    return 0;
}

int cvia_write(const void *local, size_t len, const cvia_mr_desc_t *remote,
               uint64_t off, unsigned flags, uint64_t imm, cvia_req_t *req_p)
{
    return rma_start(CVIA_REQ_WRITE, (void *)local, len, remote, off, flags, imm, req_p);
}

int cvia_read(void *local, size_t len, const cvia_mr_desc_t *remote,
              uint64_t off, cvia_req_t *req_p)
{
    return rma_start(CVIA_REQ_READ, local, len, remote, off, 0, 0, req_p);
}

int cvia_imm_poll(cvia_imm_event_t *ev, int max)
{
    struct cvia_ctx *c = &cvia__ctx;
    int n = 0;

    CHECK_INIT(c);
    if (max < 0 || (!ev && max))
        return -EINVAL;
    cvia_mlock_lock(&c->imm_lock);
    int empty = c->imm_len == 0;
    cvia_mlock_unlock(&c->imm_lock);
    if (empty)
        cvia__progress(c);
    cvia_mlock_lock(&c->imm_lock);
    while (n < max && c->imm_len) {
        ev[n++] = c->imm[c->imm_head];
        c->imm_head = (c->imm_head + 1) % c->imm_cap;
        c->imm_len--;
    }
    cvia_mlock_unlock(&c->imm_lock);
    return n;
}

int cvia_imm_wait(cvia_imm_event_t *ev)
{
    struct cvia_ctx *c = &cvia__ctx;
    struct cvia_idle w = { 0, 0 };
    int n;

    CHECK_INIT(c);
    if (!ev)
        return -EINVAL;
    while ((n = cvia_imm_poll(ev, 1)) == 0) {
        if (c->size > 1 && c->nlost >= c->size - 1)
            return c->lost_err ? c->lost_err : -CVIA_ENOPEER;
        cvia__idle(c, &w, 1);
    }
    return n < 0 ? n : 0;
}

int cvia_peer_info(int peer, char *buf, size_t cap)
{
    struct cvia_ctx *c = &cvia__ctx;
    int pi;

    CHECK_INIT(c);
    if (peer < 0 || peer >= cvia__npeers(c) || !buf || !cap)
        return -EINVAL;
    pi = c->peer_prov[peer];
    c->prov[pi].desc->ops->peer_info(c->prov[pi].ep, peer, buf, cap);
    return 0;
}
