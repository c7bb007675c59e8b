/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* RMA and atomics (the provider's second fi_info entry: FI_RMA | FI_ATOMIC
 * with mr_mode FI_MR_VIRT_ADDR | FI_MR_PROV_KEY).
 *
 * fi_write / fi_read are corevia's one-sided operations: a key from
 * fi_mr_reg is corevia's own region key, an address is the target's
 * virtual address, and the target's corevia checks key, bounds and rights
 * on every access (as a VIA NIC checks a memory handle). fi_writedata is a
 * write with immediate data: the target's provider turns the immediate
 * event into a completion with FI_REMOTE_CQ_DATA on its receive CQ.
 *
 * Atomics travel as messages on the endpoint's tag: AMO carries the
 * operands, the target's provider checks the region against the
 * registrations of its domain and applies the operation in its progress,
 * AMO_RESP brings the status and the old values back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab.h"
#include "fabric/fab_amo.h"
#include "util/log.h"

/* ---- registration table of a domain (the target side of atomics) ------------ */

void fab_dom_mr_add(struct fab_domain *d, struct fab_mr *mr)
{
    pthread_mutex_lock(&d->mr_lock);
    mr->dom_next = d->mrs;
    d->mrs = mr;
    pthread_mutex_unlock(&d->mr_lock);
}

void fab_dom_mr_del(struct fab_domain *d, struct fab_mr *mr)
{
    pthread_mutex_lock(&d->mr_lock);
    for (struct fab_mr **pp = &d->mrs; *pp; pp = &(*pp)->dom_next)
        if (*pp == mr) {
            *pp = mr->dom_next;
            break;
        }
    pthread_mutex_unlock(&d->mr_lock);
}

/* 0 if [addr, addr + len) lies in a region registered under @key with
 * @access; the domain's lock is held while @fn runs on it. */
static int fab_dom_mr_apply(struct fab_domain *d, uint64_t key, uint64_t addr, size_t len,
                            uint64_t access, const struct fab_amo *a, const char *opnd,
                            void *old)
{
    int rc = -EACCES;

    pthread_mutex_lock(&d->mr_lock);
    for (struct fab_mr *mr = d->mrs; mr; mr = mr->dom_next) {
        uint64_t base = (uint64_t)(uintptr_t)mr->buf;
        if (mr->fid.key != key)
            continue;
        if ((mr->access & access) == access && addr >= base && len <= mr->len &&
            addr - base <= mr->len - len) {
            size_t sz = fab_amo_size(a->dt);
            fab_amo_apply(a->dt, a->aop, (void *)(uintptr_t)addr, opnd,
                          a->kind == FAB_AMO_COMPARE ? opnd + a->count * sz : NULL, old,
                          a->count);
            rc = 0;
        }
        break;
    }
    pthread_mutex_unlock(&d->mr_lock);
    return rc;
}

/* ---- RMA ------------------------------------------------------------------ */


static ssize_t fab_rma(struct fab_ep *ep, int write, const struct iovec *iov, size_t count,
                       fi_addr_t peer, uint64_t addr, uint64_t key, void *context,
                       uint64_t flags, int has_data, uint64_t data)
{
    cvia_mr_desc_t desc;
    struct fab_op *op;
    size_t len = 0;
    void *buf;
    int32_t rank;
    uint16_t epid;
    int rc;

    if (!(ep->caps & FI_RMA))
        return -FI_EOPNOTSUPP;
    if ((rc = fab_tx_begin(ep, iov, count, peer, flags, &rank, &epid, &len)))
        return rc;
    if (!(op = fab_op_new(1)))
        return -FI_EAGAIN;
    buf = count ? iov[0].iov_base : NULL;
    if (count > 1 || (flags & FI_INJECT)) {
        /* one contiguous buffer: gathered now (writes, injects), scattered
         * at completion (reads) */
        if (len && !(buf = op->bounce = malloc(len))) {
            fab_op_free(ep, op);
            return -FI_EAGAIN;
        }
        if (write) {
            char *p = buf;
            for (size_t i = 0; i < count; i++) {
                memcpy(p, iov[i].iov_base, iov[i].iov_len);
                p += iov[i].iov_len;
            }
        } else {
            op->iov_count = count;
            memcpy(op->iov, iov, count * sizeof(*iov));
        }
    }
    desc = (cvia_mr_desc_t){ .addr = addr, .len = len, .key = key, .rank = rank,
                             .access = write ? CVIA_MR_REMOTE_WRITE : CVIA_MR_REMOTE_READ };
    if (write)
        rc = cvia_write(buf, len, &desc, 0, has_data ? CVIA_WRITE_IMM : 0, data, &op->req);
    else
        rc = cvia_read(buf, len, &desc, 0, &op->req);
    if (rc) {
        fab_op_free(ep, op);
        return fab_errno(rc);
    }
    op->kind = FAB_RMA;
    op->context = context;
    op->epid = epid;
    /* between hosts a write completes once sent: for delivery, ask the
     * target to answer after it (fab_rma_written) */
    op->dc = write && ((flags | ep->tx_op_flags) & FI_DELIVERY_COMPLETE) &&
             cvia_peer_local(rank) == 0 ? -1 : 0;
    op->flags = FI_RMA | (write ? FI_WRITE : FI_READ);
    op->report = fab_tx_report(ep, flags);
    op->rank = rank;
    op->len = len;
    fab_op_link(ep, op);
    return 0;
}


static ssize_t fab_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
                        uint64_t addr, uint64_t key, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    struct iovec v = { buf, len };
    return FAB_LOCKED(ep, fab_rma(ep, 0, &v, 1, src, addr, key, context, ep->tx_op_flags, 0, 0));
}

static ssize_t fab_readv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_rma(ep, 0, iov, count, src, addr, key, context, ep->tx_op_flags, 0, 0));
}

static ssize_t fab_readmsg(struct fid_ep *fep, const struct fi_msg_rma *m, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (m->rma_iov_count != 1)
        return -FI_EINVAL;
    return FAB_LOCKED(ep, fab_rma(ep, 0, m->msg_iov, m->iov_count, m->addr, m->rma_iov[0].addr,
                             m->rma_iov[0].key, m->context, flags, 0, 0));
}

static ssize_t fab_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                         fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    struct iovec v = { (void *)buf, len };
    return FAB_LOCKED(ep, fab_rma(ep, 1, &v, 1, dest, addr, key, context, ep->tx_op_flags, 0, 0));
}

static ssize_t fab_writev(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                          fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_rma(ep, 1, iov, count, dest, addr, key, context, ep->tx_op_flags, 0, 0));
}

static ssize_t fab_writemsg(struct fid_ep *fep, const struct fi_msg_rma *m, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (m->rma_iov_count != 1)
        return -FI_EINVAL;
    return FAB_LOCKED(ep, fab_rma(ep, 1, m->msg_iov, m->iov_count, m->addr, m->rma_iov[0].addr,
                             m->rma_iov[0].key, m->context, flags,
                             !!(flags & FI_REMOTE_CQ_DATA), m->data));
}

static ssize_t fab_inject_write(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
                                uint64_t addr, uint64_t key)
{
    struct fab_ep *ep = fab_ep_of(fep);
    struct iovec v = { (void *)buf, len };
    return FAB_LOCKED(ep, fab_rma(ep, 1, &v, 1, dest, addr, key, NULL, FI_INJECT, 0, 0));
}

static ssize_t fab_writedata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                             uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
                             void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    struct iovec v = { (void *)buf, len };
    return FAB_LOCKED(ep, fab_rma(ep, 1, &v, 1, dest, addr, key, context, ep->tx_op_flags, 1, data));
}

static ssize_t fab_inject_writedata(struct fid_ep *fep, const void *buf, size_t len,
                                    uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key)
{
    struct fab_ep *ep = fab_ep_of(fep);
    struct iovec v = { (void *)buf, len };
    return FAB_LOCKED(ep, fab_rma(ep, 1, &v, 1, dest, addr, key, NULL, FI_INJECT, 1, data));
}

struct fi_ops_rma fab_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = fab_read,
    .readv = fab_readv,
    .readmsg = fab_readmsg,
    .write = fab_write,
    .writev = fab_writev,
    .writemsg = fab_writemsg,
    .inject = fab_inject_write,
    .writedata = fab_writedata,
    .injectdata = fab_inject_writedata,
};

/* A write of @op went out: with a delivery-complete probe pending
 * (op->dc < 0) send it now; 1 if the operation must go on waiting. */
int fab_rma_written(struct fab_ep *ep, struct fab_op *op)
{
    if (op->dc >= 0)
        return op->dc && !op->fin;
    op->cookie = ++ep->cookie_gen;
    op->dc = 1;
    /* after the write in the pair's order: its answer means it landed
     * (owed without memory, still after the write) */
    fab_send_hdr(ep, op->rank, op->epid, FAB_OP_DC, op->cookie, 0, 0);
    return 1;
}

/* Immediate events of writes with data: completions on the receive CQ. */
static void fab_amo_owed_retry(struct fab_ep *ep);

void fab_rma_events(struct fab_ep *ep)
{
    cvia_imm_event_t ev[16];
    int n;

    if (ep->amo_owed)
        fab_amo_owed_retry(ep);
    if (!(ep->caps & FI_RMA) || !ep->rx_cq)
        return;
    while ((n = cvia_imm_poll(ev, 16)) > 0)
        for (int i = 0; i < n; i++)
            fab_cq_push(ep->rx_cq, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
                        ev[i].len, NULL, ev[i].imm, 0, FI_ADDR_NOTAVAIL);
}

/* ---- atomics ------------------------------------------------------------------- */

size_t fab_amo_max_count(int dt)
{
    size_t sz = fab_amo_size(dt), room = fab_cfg.eager;

    /* operands and compare values in one eager message; results back in one */
    return sz ? room / (2 * sz) : 0;
}

static ssize_t fab_atomic(struct fab_ep *ep, int kind, const void *buf, size_t count,
                          const void *compare, void *result, fi_addr_t peer, uint64_t addr,
                          uint64_t key, enum fi_datatype dt, enum fi_op aop, void *context,
                          uint64_t flags)
{
    size_t sz = fab_amo_size(dt), n;
    struct fab_amo *a;
    struct fab_op *op;
    int32_t rank;
    uint16_t epid;
    int rc;

    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (!(ep->caps & FI_ATOMIC))
        return -FI_EOPNOTSUPP;
    if (!fab_amo_valid(dt, aop, kind))
        return -FI_EOPNOTSUPP;
    if (!count || count > fab_amo_max_count(dt))
        return -FI_EINVAL;
    if (!ep->av || fab_av_resolve(ep->av, peer, &rank, &epid))
        return -FI_EINVAL;
    if ((rc = fab_ep_arm(ep)))
        return rc;
    n = sizeof(*a) + count * sz * (kind == FAB_AMO_COMPARE ? 2 : 1);
    if (!(op = fab_op_new(1)) || !(a = calloc(1, n))) {
        if (op)
            fab_op_free(ep, op);
        return -FI_EAGAIN;
    }
    a->h.op = FAB_OP_AMO;
    a->h.src_epid = ep->epid;
    a->h.cookie = op->cookie = ++ep->cookie_gen;
    a->addr = addr;
    a->key = key;
    a->count = (uint32_t)count;
    a->dt = (uint8_t)dt;
    a->aop = (uint8_t)aop;
    a->kind = (uint8_t)kind;
    if (aop != FI_ATOMIC_READ)
        memcpy(a + 1, buf, count * sz);
    if (kind == FAB_AMO_COMPARE)
        memcpy((char *)(a + 1) + count * sz, compare, count * sz);
    op->kind = FAB_TX_AMO;
    op->wire = a;
    op->context = context;
    op->flags = FI_ATOMIC | (kind == FAB_AMO_WRITE ? FI_WRITE : FI_READ);
    op->report = fab_tx_report(ep, flags);
    op->rank = rank;
    op->epid = epid;
    op->len = kind == FAB_AMO_WRITE ? 0 : count * sz;
    op->result = result;
    rc = cvia_isend(a, n, rank, FAB_TAG_BASE + epid, &op->req);
    if (rc) {
        fab_op_free(ep, op);   /* and a, its wire */
        return fab_errno(rc);
    }
    fab_op_link(ep, op);
    return 0;
}

/* An AMO answer waiting for a corevia request to carry it: the answer
 * (header and old values, @n bytes, the malloc'd block that is sent)
 * with this link after it, in the same block. */
struct fab_amo_owed {
    struct fab_amo_owed *next;
    void    *buf;
    size_t   n;
    int32_t  rank;
    uint16_t epid;
};
#define FAB_AMO_LINK_AT(n) (((n) + 7) & ~(size_t)7)

/* Send answer @r (@n bytes, FAB_AMO_LINK_AT(n) + a link allocated) to
 * (@rank, @epid), or owe it: the AMO is applied, so the answer is the
 * initiator's only way to learn its result. 0: sent or owed; -ENOMEM:
 * owed and the ones after it must wait (order kept). */
static int fab_amo_answer(struct fab_ep *ep, int32_t rank, uint16_t epid, void *r, size_t n,
                          int queued)
{
    struct fab_amo_owed *o = (void *)((char *)r + FAB_AMO_LINK_AT(n));
    int rc = queued || !ep->amo_owed ? fab_send_ctrl_keep(ep, rank, epid, r, n) : -ENOMEM;

    if (rc == 0)
        return 0;
    if (rc != -ENOMEM && rc != -EAGAIN) {   /* the peer is gone (or worse: say so) */
        if (cvia_peer_alive(rank) != 0)
            cvia_error(CORE, "libfabric provider: an atomic's answer to rank %d is lost: %s",
                       rank, cvia_strerror(rc));
        free(r);
        return 0;
    }
    if (!queued) {   /* after those already owed */
        *o = (struct fab_amo_owed){ NULL, r, n, rank, epid };
        if (ep->amo_owed_tail)
            ep->amo_owed_tail->next = o;
        else
            ep->amo_owed = o;
        ep->amo_owed_tail = o;
    }
    return -ENOMEM;
}

static void fab_amo_owed_retry(struct fab_ep *ep)
{
    struct fab_amo_owed *o;

    while ((o = ep->amo_owed)) {
        struct fab_amo_owed *next = o->next;
        if (fab_amo_answer(ep, o->rank, o->epid, o->buf, o->n, 1))
            return;
        if (!(ep->amo_owed = next))   /* o went with its block */
            ep->amo_owed_tail = NULL;
    }
}

void fab_amo_owed_flush(struct fab_ep *ep)
{
    unsigned left = 0;
    int32_t first = ep->amo_owed ? ep->amo_owed->rank : -1;

    fab_amo_owed_retry(ep);
    while (ep->amo_owed) {
        struct fab_amo_owed *o = ep->amo_owed;
        ep->amo_owed = o->next;
        free(o->buf);
        left++;
    }
    ep->amo_owed_tail = NULL;
    if (left)
        cvia_warn(CORE, "libfabric provider: endpoint %u closes owing %u atomics' answers "
                  "for want of memory (the first to rank %d); their initiators wait",
                  (unsigned)ep->epid, left, first);
}

/* The target: apply an AMO from (@rank, @epid), answer with the old values.
 * Without memory for the answer the AMO is not applied, and the answer
 * says so (-ENOMEM, header only: owed like a FIN if need be). */
void fab_amo_arrive(struct fab_ep *ep, int32_t rank, const char *buf, size_t n)
{
    const struct fab_amo *a = (const void *)buf;
    size_t sz = fab_amo_size(a->dt), want, rn;
    struct fab_hdr *r;
    uint64_t access;
    int rc;

    want = sizeof(*a) + (size_t)a->count * sz * (a->kind == FAB_AMO_COMPARE ? 2 : 1);
    if (!sz || n != want || !fab_amo_valid(a->dt, a->aop, a->kind))
        rc = -EINVAL;
    else
        rc = 0;
    rn = sizeof(*r) + (rc ? 0 : (size_t)a->count * sz);
    if (!(r = fab_fault("amo_answer") ? NULL
                                      : calloc(1, FAB_AMO_LINK_AT(rn) + sizeof(struct fab_amo_owed)))) {
        fab_send_hdr(ep, rank, a->h.src_epid, FAB_OP_AMO_RESP, a->h.cookie, -ENOMEM, 0);
        return;
    }
    r->op = FAB_OP_AMO_RESP;
    r->src_epid = ep->epid;
    r->cookie = a->h.cookie;
    if (rc == 0) {
        access = (a->aop == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) |
                 (a->kind != FAB_AMO_WRITE ? FI_REMOTE_READ : 0);
        rc = fab_dom_mr_apply(ep->dom, a->key, a->addr, (size_t)a->count * sz, access, a,
                              (const char *)(a + 1), r + 1);
    }
    r->status = rc;
    r->len = rc == 0 && a->kind != FAB_AMO_WRITE ? (size_t)a->count * sz : 0;
    rn = sizeof(*r) + r->len;
    struct fab_hdr *dup = fab_fault("amo_twice") ? malloc(rn) : NULL;   /* the tests' */
    if (dup)
        memcpy(dup, r, rn);
    (void)fab_amo_answer(ep, rank, a->h.src_epid, r, rn, 0);   /* r is gone after it */
    if (dup)
        (void)fab_send_ctrl(ep, rank, a->h.src_epid, dup, rn);
}

/* The initiator: the answer to one of our AMOs. One that no operation
 * waits for (its operation already ended: the peer was taken for gone;
 * or a second answer) is counted and logged, and touches nothing. */
void fab_amo_resp(struct fab_ep *ep, int32_t rank, const char *buf, size_t n)
{
    const struct fab_hdr *h = (const void *)buf;

    for (struct fab_op *op = ep->ops; op; op = op->next)
        if (op->kind == FAB_TX_AMO && op->cookie == h->cookie && op->rank == rank && !op->fin) {
            op->fin = 1;
            op->fin_rc = h->status;
            if (h->status == 0 && op->result && h->len == op->len && n == sizeof(*h) + h->len)
                memcpy(op->result, h + 1, h->len);
            else if (h->status == 0 && op->result)
                op->fin_rc = -EPROTO;
            return;
        }
    ep->amo_stray++;
    if ((ep->amo_stray & (ep->amo_stray - 1)) == 0)   /* 1, 2, 4, ...: not a flood */
        cvia_warn(CORE, "libfabric provider: endpoint %u: %lu stray atomic answers (the "
                  "last from rank %d, for no operation in flight: ended already or "
                  "answered twice), dropped", (unsigned)ep->epid, ep->amo_stray, rank);
}

static ssize_t fab_atomic_write(struct fid_ep *fep, const void *buf, size_t count, void *desc,
                                fi_addr_t dest, uint64_t addr, uint64_t key,
                                enum fi_datatype dt, enum fi_op aop, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_WRITE, buf, count, NULL, NULL, dest, addr, key, dt,
                                 aop, context, ep->tx_op_flags));
}

static ssize_t fab_atomic_writev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
                                 size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
                                 enum fi_datatype dt, enum fi_op aop, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (count != 1)
        return -FI_ENOSYS;
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_WRITE, iov[0].addr, iov[0].count, NULL, NULL,
                                 dest, addr, key, dt, aop, context, ep->tx_op_flags));
}

static ssize_t fab_atomic_writemsg(struct fid_ep *fep, const struct fi_msg_atomic *m,
                                   uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (m->iov_count != 1 || m->rma_iov_count != 1)
        return -FI_ENOSYS;
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_WRITE, m->msg_iov[0].addr, m->msg_iov[0].count,
                                 NULL, NULL, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key,
                                 m->datatype, m->op, m->context, flags));
}

static ssize_t fab_atomic_inject(struct fid_ep *fep, const void *buf, size_t count,
                                 fi_addr_t dest, uint64_t addr, uint64_t key,
                                 enum fi_datatype dt, enum fi_op aop)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_WRITE, buf, count, NULL, NULL, dest, addr, key, dt,
                                 aop, NULL, FI_INJECT));
}

static ssize_t fab_atomic_readwrite(struct fid_ep *fep, const void *buf, size_t count,
                                    void *desc, void *result, void *result_desc,
                                    fi_addr_t dest, uint64_t addr, uint64_t key,
                                    enum fi_datatype dt, enum fi_op aop, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_FETCH, buf, count, NULL, result, dest, addr, key,
                                 dt, aop, context, ep->tx_op_flags));
}

static ssize_t fab_atomic_readwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
                                     size_t count, struct fi_ioc *resultv, void **result_desc,
                                     size_t result_count, fi_addr_t dest, uint64_t addr,
                                     uint64_t key, enum fi_datatype dt, enum fi_op aop,
                                     void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (count != 1 || result_count != 1 || resultv[0].count != iov[0].count)
        return -FI_ENOSYS;
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_FETCH, iov[0].addr, iov[0].count, NULL,
                                 resultv[0].addr, dest, addr, key, dt, aop, context,
                                 ep->tx_op_flags));
}

static ssize_t fab_atomic_readwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *m,
                                       struct fi_ioc *resultv, void **result_desc,
                                       size_t result_count, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (m->iov_count != 1 || m->rma_iov_count != 1 || result_count != 1 ||
        resultv[0].count != m->msg_iov[0].count)
        return -FI_ENOSYS;
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_FETCH, m->msg_iov[0].addr, m->msg_iov[0].count,
                                 NULL, resultv[0].addr, m->addr, m->rma_iov[0].addr,
                                 m->rma_iov[0].key, m->datatype, m->op, m->context, flags));
}

static ssize_t fab_atomic_compwrite(struct fid_ep *fep, const void *buf, size_t count,
                                    void *desc, const void *compare, void *compare_desc,
                                    void *result, void *result_desc, fi_addr_t dest,
                                    uint64_t addr, uint64_t key, enum fi_datatype dt,
                                    enum fi_op aop, void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_COMPARE, buf, count, compare, result, dest, addr,
                                 key, dt, aop, context, ep->tx_op_flags));
}

static ssize_t fab_atomic_compwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
                                     size_t count, const struct fi_ioc *comparev,
                                     void **compare_desc, size_t compare_count,
                                     struct fi_ioc *resultv, void **result_desc,
                                     size_t result_count, fi_addr_t dest, uint64_t addr,
                                     uint64_t key, enum fi_datatype dt, enum fi_op aop,
                                     void *context)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (count != 1 || compare_count != 1 || result_count != 1 ||
        comparev[0].count != iov[0].count || resultv[0].count != iov[0].count)
        return -FI_ENOSYS;
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_COMPARE, iov[0].addr, iov[0].count,
                                 comparev[0].addr, resultv[0].addr, dest, addr, key, dt, aop,
                                 context, ep->tx_op_flags));
}

static ssize_t fab_atomic_compwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *m,
                                       const struct fi_ioc *comparev, void **compare_desc,
                                       size_t compare_count, struct fi_ioc *resultv,
                                       void **result_desc, size_t result_count, uint64_t flags)
{
    struct fab_ep *ep = fab_ep_of(fep);
    if (m->iov_count != 1 || m->rma_iov_count != 1 || compare_count != 1 ||
        result_count != 1 || comparev[0].count != m->msg_iov[0].count ||
        resultv[0].count != m->msg_iov[0].count)
        return -FI_ENOSYS;
    return FAB_LOCKED(ep, fab_atomic(ep, FAB_AMO_COMPARE, m->msg_iov[0].addr, m->msg_iov[0].count,
                                 comparev[0].addr, resultv[0].addr, m->addr, m->rma_iov[0].addr,
                                 m->rma_iov[0].key, m->datatype, m->op, m->context, flags));
}

static int fab_valid(int kind, enum fi_datatype dt, enum fi_op aop, size_t *count)
{
    if (!fab_amo_valid(dt, aop, kind))
        return -FI_EOPNOTSUPP;
    if (count)
        *count = fab_amo_max_count(dt);
    return 0;
}

static int fab_atomic_writevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op aop,
                                 size_t *count)
{
    return fab_valid(FAB_AMO_WRITE, dt, aop, count);
}

static int fab_atomic_readwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op aop,
                                     size_t *count)
{
    return fab_valid(FAB_AMO_FETCH, dt, aop, count);
}

static int fab_atomic_compwritevalid(struct fid_ep *ep, enum fi_datatype dt, enum fi_op aop,
                                     size_t *count)
{
    return fab_valid(FAB_AMO_COMPARE, dt, aop, count);
}

struct fi_ops_atomic fab_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = fab_atomic_write,
    .writev = fab_atomic_writev,
    .writemsg = fab_atomic_writemsg,
    .inject = fab_atomic_inject,
    .readwrite = fab_atomic_readwrite,
    .readwritev = fab_atomic_readwritev,
    .readwritemsg = fab_atomic_readwritemsg,
    .compwrite = fab_atomic_compwrite,
    .compwritev = fab_atomic_compwritev,
    .compwritemsg = fab_atomic_compwritemsg,
    .writevalid = fab_atomic_writevalid,
    .readwritevalid = fab_atomic_readwritevalid,
    .compwritevalid = fab_atomic_compwritevalid,
};

int fab_query_atomic(struct fid_domain *domain, enum fi_datatype dt, enum fi_op aop,
                     struct fi_atomic_attr *attr, uint64_t flags)
{
    int kind = flags & FI_COMPARE_ATOMIC ? FAB_AMO_COMPARE
             : flags & FI_FETCH_ATOMIC ? FAB_AMO_FETCH : FAB_AMO_WRITE;

    if (!fab_amo_valid(dt, aop, kind))
        return -FI_EOPNOTSUPP;
    if (attr) {
        attr->size = fab_amo_size(dt);
        attr->count = fab_amo_max_count(dt);
    }
    return 0;
}
