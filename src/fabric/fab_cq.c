/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Completion queues and counters. Reading one drives the progress of the
 * endpoints bound to it (FI_PROGRESS_MANUAL: corevia starts no thread).
 * A queue grows as needed (FI_RM_ENABLED: an application never overruns
 * it); errors wait in their own list and make fi_cq_read return
 * -FI_EAVAIL until fi_cq_readerr takes them, as libfabric specifies. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fabric/fab.h"
#include "util/log.h"

static void fab_epset_progress(struct fab_epset *set)
{
    struct fab_ep *eps[8];
    int n;

    if (!set->lock.on) {   /* one thread: the set cannot change under us */
        for (int i = 0; i < set->n; i++) {
            struct fab_ep *ep = set->eps[i];
            if (!ep->lock.on)   /* the same domain's endpoint: no lock to try */
                fab_progress_locked(ep);
            else
                fab_ep_progress(ep);
        }
        return;
    }
    fab_lock(&set->lock);
    n = set->n;
    memcpy(eps, set->eps, (size_t)n * sizeof(eps[0]));
    if (set->lock.on)   /* an endpoint closing waits for us */
        atomic_fetch_add(&set->busy, 1);
    fab_unlock(&set->lock);
    for (int i = 0; i < n; i++)
        fab_ep_progress(eps[i]);
    if (set->lock.on)
        atomic_fetch_sub(&set->busy, 1);
}

int fab_epset_add(struct fab_epset *set, struct fab_ep *ep)
{
    int rc = 0;

    fab_lock(&set->lock);
    for (int i = 0; i < set->n; i++)
        if (set->eps[i] == ep)
            goto out;
    if (set->n == 8)
        rc = -FI_ENOSPC;
    else
        set->eps[set->n++] = ep;
out:
    fab_unlock(&set->lock);
    return rc;
}

/* Once it returns, no reader holds @ep. */
void fab_epset_del(struct fab_epset *set, struct fab_ep *ep)
{
    fab_lock(&set->lock);
    for (int i = 0; i < set->n; i++)
        if (set->eps[i] == ep) {
            set->eps[i] = set->eps[--set->n];
            break;
        }
    fab_unlock(&set->lock);
    while (atomic_load(&set->busy))
        sched_yield();
}

/* A thread may sleep on @cq in corevia: wake it (corevia is up: whoever
 * pushes is progressing an endpoint). */
void fab_cq_wake(struct fab_cq *cq)
{
    if (atomic_load(&cq->sleepers))
        cvia_imm_kick();
    fab_wait_event(cq->w);
}

void fab_cq_push_locked(struct fab_cq *cq, void *ctx, uint64_t flags, size_t len,
                        void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
    fab_lock(&cq->lock);
    if (cq->len == cq->cap) {
        size_t cap = cq->cap * 2;
        struct fab_cqe *r = malloc(cap * sizeof(*r));
        if (!r) {   /* keep the event: report it as an error instead */
            fab_unlock(&cq->lock);
            fab_cq_push_err(cq, NULL, ctx, flags, len, data, tag, 0, FI_ENOMEM, 0);
            return;
        }
        for (size_t i = 0; i < cq->len; i++)
            r[i] = cq->ring[(cq->head + i) & (cq->cap - 1)];
        free(cq->ring);
        cq->ring = r;
        cq->head = 0;
        cq->cap = cap;
    }
    struct fab_cqe *e = &cq->ring[(cq->head + cq->len++) & (cq->cap - 1)];
    e->e = (struct fi_cq_tagged_entry){ ctx, flags, len, buf, data, tag };
    e->src = src;
    fab_unlock(&cq->lock);
    fab_cq_wake(cq);
}

/* The record of an error, which nothing may lose for want of memory:
 * @room when the caller gives one (the failed operation's own memory, or
 * a record it reserved when the operation began: malloc'd, at least
 * FAB_CQERR_ROOM bytes, the CQ's from now on), else a new one, else one
 * of the CQ's reserve (taken at its open, refilled by fi_cq_readerr). */
static struct fab_cqerr *fab_cqerr_get(struct fab_cq *cq, void *room)
{
    struct fab_cqerr *x = room;

    if (x || (x = fab_fault("cqerr") ? NULL : malloc(sizeof(*x))))
        return x;
    fab_lock(&cq->lock);
    if ((x = cq->err_spare)) {
        cq->err_spare = x->next;
        cq->err_nspare--;
    } else {
        cq->err_lost++;
    }
    fab_unlock(&cq->lock);
    return x;
}

void fab_cq_push_err(struct fab_cq *cq, void *room, void *ctx, uint64_t flags, size_t len,
                     uint64_t data, uint64_t tag, size_t olen, int err, int prov_errno)
{
    struct fab_cqerr *x = fab_cqerr_get(cq, room);

    if (!x) {   /* only a completion that had no room of its own (fab_cq_push) */
        cvia_warn(CORE, "libfabric provider: no memory to report error %d (context %p); "
                  "%lu errors lost on this CQ", err, ctx, (unsigned long)cq->err_lost);
        return;
    }
    memset(x, 0, sizeof(*x));
    x->e.op_context = ctx;
    x->e.flags = flags;
    x->e.len = len;
    x->e.data = data;
    x->e.tag = tag;
    x->e.olen = olen;
    x->e.err = err;
    x->e.prov_errno = prov_errno;
    fab_lock(&cq->lock);
    if (cq->err_tail)
        cq->err_tail->next = x;
    else
        cq->err_head = x;
    cq->err_tail = x;
    fab_unlock(&cq->lock);
    fab_cq_wake(cq);
}

/* Nothing queued, no error, and no other thread that could queue one
 * meanwhile: the usual finding of a poll, answered without the call. */
static inline int fab_cq_idle(const struct fab_cq *cq)
{
    return !cq->lock.on && !cq->len && !cq->err_head;
}

/* The ring's first @k entries (k <= its length) into @buf in the CQ's
 * format, their sources into @src if asked. The ring's fields are read once
 * into locals: stores into @buf could alias them, and a reload of head, len
 * and cap for every entry cost more than the entry's copy. */
static void fab_cq_copy_out(const struct fab_cq *cq, char *buf, size_t k, fi_addr_t *src)
{
    const struct fab_cqe *ring = cq->ring;
    size_t head = cq->head, mask = cq->cap - 1, esize = cq->esize;

    if (esize == sizeof(ring->e)) {   /* FI_CQ_FORMAT_TAGGED: a copy of known size, no call */
        for (size_t i = 0; i < k; i++, head = (head + 1) & mask)
            memcpy(buf + i * sizeof(ring->e), &ring[head].e, sizeof(ring->e));
    } else {
        for (size_t i = 0; i < k; i++, head = (head + 1) & mask)
            memcpy(buf + i * esize, &ring[head].e, esize);
    }
    if (src)
        for (size_t i = 0; i < k; i++)
            src[i] = ring[(cq->head + i) & mask].src;
}

/* Up to @count entries, all of those queued at once: Open MPI's mtl ofi
 * reads with room for 100, and a progress round that drained a window of
 * arrivals queued one completion for each. */
static ssize_t fab_cq_take(struct fab_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
    size_t n;

    fab_lock(&cq->lock);
    if (cq->err_head) {
        fab_unlock(&cq->lock);
        return -FI_EAVAIL;
    }
    n = count < cq->len ? count : cq->len;
    if (n) {
        fab_cq_copy_out(cq, buf, n, src);
        cq->head = (cq->head + n) & (cq->cap - 1);
        cq->len -= n;
        if (!cq->len)   /* emptied: the next read may skip progress */
            atomic_store_explicit(&cq->drained, 1, memory_order_relaxed);
    }
    fab_unlock(&cq->lock);
    return n ? (ssize_t)n : -FI_EAGAIN;
}

/* An application that spins on fi_cq_read (as MPI and fi_pingpong do)
 * gives its core away now and then after a long run of empty reads, the
 * back-off corevia's own polls have: with ranks sharing a core, the peer it
 * waits for then runs within a yield instead of a scheduler time slice
 * (fi_pingpong across two namespaces pinned to one CPU: 4 ms a transfer
 * without it). A read that finds something resets the run. */
#define FAB_IDLE_SPIN 256

/* The run of empty reads: one reader at a time (FI_THREAD_DOMAIN), the
 * CQ's; else the thread's. A provider's thread-local costs a
 * __tls_get_addr call, so the thread's run is counted out of line, in a
 * tail call: the read then holds no value across it (four saved registers,
 * not five, on the empty poll). */
static _Thread_local unsigned fab_idle_tls;

static ssize_t fab_cq_run(unsigned *idle, ssize_t n)
{
    if (n != -FI_EAGAIN)
        *idle = 0;
    else if (++*idle > FAB_IDLE_SPIN && *idle % 16 == 0)
        sched_yield();
    return n;
}

static __attribute__((noinline)) ssize_t fab_cq_run_tls(ssize_t n)
{
    return fab_cq_run(&fab_idle_tls, n);
}

/* A read that leaves the queue empty is followed, in most callers, by
 * another read at once, to see that it is empty (or, reading one entry at
 * a time, to look for the next): Open MPI's mtl ofi reads until
 * -FI_EAGAIN before it hands the completions to the MPI layer, so that
 * read is on the path of every message (an MPI_Recv returns only after
 * it). That read answers from the queue without a progress round; the
 * round (the inbox's arrivals matched, its buffers given back) is the
 * next read's, while the caller waits anyway. Never two such reads in a row: a
 * caller polling fi_cq_read progresses at least every other read. */
static ssize_t fab_cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
    struct fab_cq *cq = fab_of(fcq, struct fab_cq, fid);
    ssize_t n;

    if (atomic_load_explicit(&cq->drained, memory_order_relaxed)) {
        /* never two such reads in a row */
        n = fab_cq_idle(cq) ? -FI_EAGAIN : fab_cq_take(cq, buf, count, src);
        atomic_store_explicit(&cq->drained, 0, memory_order_relaxed);
        return n;
    }
    if (!cq->set.lock.on && cq->set.n == 1 && !cq->set.eps[0]->lock.on)
        fab_progress_locked(cq->set.eps[0]);   /* Open MPI's one endpoint, one thread */
    else
        fab_epset_progress(&cq->set);
    n = fab_cq_idle(cq) ? -FI_EAGAIN : fab_cq_take(cq, buf, count, src);
    return cq->lock.on ? fab_cq_run_tls(n) : fab_cq_run(&cq->idle, n);
}

static ssize_t fab_cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
    return fab_cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t fab_cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
    struct fab_cq *cq = fab_of(fcq, struct fab_cq, fid);
    struct fab_cqerr *x;
    uint32_t api = cq->dom->fabric->fid.api_version;

    fab_lock(&cq->lock);
    if (!(x = cq->err_head)) {
        fab_unlock(&cq->lock);
        return -FI_EAGAIN;
    }
    cq->err_head = x->next;
    if (!cq->err_head)
        cq->err_tail = NULL;
    fab_unlock(&cq->lock);
    /* before 1.5 the entry ended at prov_errno and err_data (no size) */
    if (FI_VERSION_GE(api, FI_VERSION(1, 5))) {
        void *keep = buf->err_data;
        size_t keep_size = buf->err_data_size;
        *buf = x->e;
        buf->err_data = keep_size ? keep : NULL;
        buf->err_data_size = 0;
    } else {
        memcpy(buf, &x->e, offsetof(struct fi_cq_err_entry, err_data_size));
        buf->err_data = NULL;
    }
    fab_lock(&cq->lock);   /* the reserve refilled first */
    if (cq->err_nspare < FAB_CQ_ERR_RESERVE) {
        x->next = cq->err_spare;
        cq->err_spare = x;
        cq->err_nspare++;
        x = NULL;
    }
    fab_unlock(&cq->lock);
    free(x);
    return 1;
}

int fab_backoff_spin(unsigned *idle, uint64_t t0, uint64_t now)
{
    if (++*idle < 64)
        return 1;
    if (now - t0 < 100000ull) {
        sched_yield();
        return 1;
    }
    return 0;
}

void fab_backoff_sleep(uint64_t t0, uint64_t now, int timeout, uint32_t kicks, double chunk)
{
    if (timeout >= 0) {
        double left = (double)timeout * 1e-3 - (double)(now - t0) * 1e-9;
        if (left < chunk)
            chunk = left;
    }
    /* corevia held up meanwhile: a last endpoint closing in another thread
     * finalizes it after this sleep, not under it */
    if (chunk > 0 && fab_core_hold_if_up()) {
        int rc = cvia_imm_block(kicks, chunk);
        fab_core_release();
        if (rc >= 0)
            return;
    }
    struct timespec ts = { 0, 50000 };
    nanosleep(&ts, NULL);
}

/* Block (bounded by @timeout ms, -1: no bound) until something completes:
 * progress, then sleep until a peer writes to this process, a thread of
 * it pushes to this CQ, or fi_cq_signal (then -FI_EAGAIN, as libfabric's
 * own utility CQs answer). */
static ssize_t fab_cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count,
                                fi_addr_t *src, const void *cond, int timeout)
{
    struct fab_cq *cq = fab_of(fcq, struct fab_cq, fid);
    uint64_t t0 = cvia__clock_ns(), now;
    unsigned idle = 0;
    ssize_t n;

    for (;;) {
        if (atomic_exchange(&cq->signaled, 0))
            return -FI_EAGAIN;
        uint32_t kicks = cvia_imm_kicks();
        fab_epset_progress(&cq->set);
        if ((n = fab_cq_take(cq, buf, count, src)) != -FI_EAGAIN)
            return n;
        now = cvia__clock_ns();
        if (timeout >= 0 && now - t0 >= (uint64_t)timeout * 1000000ull)
            return -FI_EAGAIN;
        if (fab_backoff_spin(&idle, t0, now))
            continue;
        /* announced, then a last look: a push from now on kicks us */
        atomic_fetch_add(&cq->sleepers, 1);
        if ((n = fab_cq_take(cq, buf, count, src)) == -FI_EAGAIN && !atomic_load(&cq->signaled))
            fab_backoff_sleep(t0, now, timeout, kicks, fab_cfg.liveness);
        atomic_fetch_sub(&cq->sleepers, 1);
        if (n != -FI_EAGAIN)
            return n;
    }
}

static ssize_t fab_cq_sread(struct fid_cq *fcq, void *buf, size_t count,
                            const void *cond, int timeout)
{
    return fab_cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int fab_cq_signal(struct fid_cq *fcq)
{
    struct fab_cq *cq = fab_of(fcq, struct fab_cq, fid);

    atomic_store(&cq->signaled, 1);
    if (atomic_load(&cq->sleepers) && fab_core_hold_if_up()) {
        cvia_imm_kick();
        fab_core_release();
    }
    fab_wait_event(cq->w);
    return 0;
}

/* Do @set's endpoints have operations in flight (that may move without
 * input: timers, a rendezvous read)? */
static int fab_epset_busy(struct fab_epset *set)
{
    int busy = 0;

    fab_lock(&set->lock);
    for (int i = 0; i < set->n && !busy; i++)
        busy = FAB_LOCKED(set->eps[i], set->eps[i]->ops != NULL) != 0;
    fab_unlock(&set->lock);
    return busy;
}

int fab_cq_trywait(struct fab_cq *cq)
{
    int pending;

    if (!cq->w)
        return -FI_EINVAL;
    fab_wait_arm(cq->w, fab_epset_busy(&cq->set));
    fab_lock(&cq->lock);
    pending = cq->len || cq->err_head;
    fab_unlock(&cq->lock);
    /* fi_cq_signal, taken here once (an event loop may never sread) */
    pending |= atomic_exchange(&cq->signaled, 0);
    if (pending) {
        atomic_store(&cq->w->armed, 0);
        return -FI_EAGAIN;
    }
    return 0;
}

int fab_cntr_trywait(struct fab_cntr *c)
{
    if (!c->w)
        return -FI_EINVAL;
    fab_wait_arm(c->w, fab_epset_busy(&c->set));
    uint64_t v = atomic_load(&c->val), e = atomic_load(&c->err);
    if (v != atomic_exchange(&c->seen_val, v) || e != atomic_exchange(&c->seen_err, e)) {
        atomic_store(&c->w->armed, 0);
        return -FI_EAGAIN;
    }
    return 0;
}

static const char *fab_cq_strerror(struct fid_cq *fcq, int prov_errno, const void *err_data,
                                   char *buf, size_t len)
{
    /* prov_errno is corevia's code, made positive */
    const char *s = cvia_strerror(prov_errno > 0 ? -prov_errno : prov_errno);

    if (buf && len) {
        snprintf(buf, len, "%s", s);
        return buf;
    }
    return s;
}

static struct fi_ops_cq fab_cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = fab_cq_read,
    .readfrom = fab_cq_readfrom,
    .readerr = fab_cq_readerr,
    .sread = fab_cq_sread,
    .sreadfrom = fab_cq_sreadfrom,
    .signal = fab_cq_signal,
    .strerror = fab_cq_strerror,
};

static void fab_cqerr_free(struct fab_cqerr *x)
{
    while (x) {
        struct fab_cqerr *next = x->next;
        free(x);
        x = next;
    }
}

static int fab_cq_close(struct fid *fid)
{
    struct fab_cq *cq = fab_of(fid, struct fab_cq, fid.fid);

    if (atomic_load(&cq->refs))
        return -FI_EBUSY;
    fab_wait_close(cq->w);
    fab_cqerr_free(cq->err_head);
    fab_cqerr_free(cq->err_spare);
    atomic_fetch_sub(&cq->dom->refs, 1);
    free(cq->ring);
    free(cq);
    return 0;
}

static int fab_cq_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int fab_wait_control(struct fab_waitobj *w, int command, void *arg)
{
    switch (command) {
    case FI_GETWAIT:
        if (!w)
            return -FI_ENODATA;   /* opened with FI_WAIT_NONE or FI_WAIT_UNSPEC */
        if (!arg)
            return -FI_EINVAL;
        *(int *)arg = w->efd;
        return 0;
    case FI_GETWAITOBJ:
        if (!arg)
            return -FI_EINVAL;
        *(enum fi_wait_obj *)arg = w ? FI_WAIT_FD : FI_WAIT_NONE;
        return 0;
    default:
        return -FI_ENOSYS;
    }
}

static int fab_cq_control(struct fid *fid, int command, void *arg)
{
    return fab_wait_control(fab_of(fid, struct fab_cq, fid.fid)->w, command, arg);
}

static int fab_cntr_control(struct fid *fid, int command, void *arg)
{
    return fab_wait_control(fab_of(fid, struct fab_cntr, fid.fid)->w, command, arg);
}

static int fab_eq_control(struct fid *fid, int command, void *arg)
{
    return -FI_ENOSYS;   /* no wait object to hand out */
}

static int fab_cq_ops_open(struct fid *fid, const char *name, uint64_t flags,
                           void **ops, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops fab_cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_cq_close,
    .bind = fab_cq_bind,
    .control = fab_cq_control,
    .ops_open = fab_cq_ops_open,
};

int fab_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
                struct fid_cq **fcq, void *context)
{
    struct fab_domain *dom = fab_of(domain, struct fab_domain, fid);
    struct fab_cq *cq;
    size_t esize;

    switch (attr ? attr->format : FI_CQ_FORMAT_UNSPEC) {
    case FI_CQ_FORMAT_CONTEXT: esize = sizeof(struct fi_cq_entry); break;
    case FI_CQ_FORMAT_MSG:     esize = sizeof(struct fi_cq_msg_entry); break;
    case FI_CQ_FORMAT_DATA:    esize = sizeof(struct fi_cq_data_entry); break;
    case FI_CQ_FORMAT_UNSPEC:
    case FI_CQ_FORMAT_TAGGED:  esize = sizeof(struct fi_cq_tagged_entry); break;
    default: return -FI_ENOSYS;
    }
    /* sread/sreadfrom sleep in corevia whatever the wait object; FI_WAIT_FD
     * also hands out an eventfd (fab_wait.c); no wait sets, no mutex */
    if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
        attr->wait_obj != FI_WAIT_FD)
        return -FI_ENOSYS;
    if (attr && (attr->wait_cond != FI_CQ_COND_NONE || attr->wait_set))
        return -FI_ENOSYS;
    if (!(cq = calloc(1, sizeof(*cq))))
        return -FI_ENOMEM;
    /* a power of two, so that the ring's index is a mask, not a division */
    cq->cap = attr && attr->size > 64 ? 64 : 1024;
    while (attr && cq->cap < attr->size && cq->cap < ((size_t)1 << 30))
        cq->cap *= 2;
    if (!(cq->ring = malloc(cq->cap * sizeof(*cq->ring)))) {
        free(cq);
        return -FI_ENOMEM;
    }
    for (int i = 0; i < FAB_CQ_ERR_RESERVE; i++) {
        struct fab_cqerr *x = malloc(sizeof(*x));
        if (!x) {
            fab_cqerr_free(cq->err_spare);
            free(cq->ring);
            free(cq);
            return -FI_ENOMEM;
        }
        x->next = cq->err_spare;
        cq->err_spare = x;
        cq->err_nspare++;
    }
    if (attr && attr->wait_obj == FI_WAIT_FD) {
        int rc = fab_wait_open(dom, &cq->w);
        if (rc) {
            fab_cqerr_free(cq->err_spare);
            free(cq->ring);
            free(cq);
            return rc;
        }
    }
    cq->dom = dom;
    cq->esize = esize;
    fab_lock_init(&cq->lock, fab_dom_locks(dom));
    fab_lock_init(&cq->set.lock, fab_dom_locks(dom));
    cq->fid.fid.fclass = FI_CLASS_CQ;
    cq->fid.fid.context = context;
    cq->fid.fid.ops = &fab_cq_fi_ops;
    cq->fid.ops = &fab_cq_ops;
    atomic_fetch_add(&dom->refs, 1);
    *fcq = &cq->fid;
    return 0;
}

/* ---- counters ----------------------------------------------------------------- */

static uint64_t fab_cntr_read(struct fid_cntr *fc)
{
    struct fab_cntr *c = fab_of(fc, struct fab_cntr, fid);

    fab_epset_progress(&c->set);
    uint64_t v = atomic_load(&c->val);
    if (c->w)
        atomic_store_explicit(&c->seen_val, v, memory_order_relaxed);
    return v;
}

static uint64_t fab_cntr_readerr(struct fid_cntr *fc)
{
    struct fab_cntr *c = fab_of(fc, struct fab_cntr, fid);

    fab_epset_progress(&c->set);
    uint64_t e = atomic_load(&c->err);
    if (c->w)
        atomic_store_explicit(&c->seen_err, e, memory_order_relaxed);
    return e;
}

static int fab_cntr_add(struct fid_cntr *fc, uint64_t v)
{
    atomic_fetch_add(&fab_of(fc, struct fab_cntr, fid)->val, v);
    return 0;
}

static int fab_cntr_set(struct fid_cntr *fc, uint64_t v)
{
    atomic_store(&fab_of(fc, struct fab_cntr, fid)->val, v);
    return 0;
}

static int fab_cntr_adderr(struct fid_cntr *fc, uint64_t v)
{
    atomic_fetch_add(&fab_of(fc, struct fab_cntr, fid)->err, v);
    return 0;
}

static int fab_cntr_seterr(struct fid_cntr *fc, uint64_t v)
{
    atomic_store(&fab_of(fc, struct fab_cntr, fid)->err, v);
    return 0;
}

static int fab_cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
    struct fab_cntr *c = fab_of(fc, struct fab_cntr, fid);
    uint64_t t0 = cvia__clock_ns(), err0 = atomic_load(&c->err);
    unsigned idle = 0;

    for (;;) {
        uint32_t kicks = cvia_imm_kicks();
        fab_epset_progress(&c->set);
        if (atomic_load(&c->val) >= threshold)
            return 0;
        if (atomic_load(&c->err) != err0)
            return -FI_EAVAIL;
        uint64_t now = cvia__clock_ns();
        if (timeout >= 0 && now - t0 >= (uint64_t)timeout * 1000000ull)
            return -FI_ETIMEDOUT;
        /* counters are bumped by other threads without a kick: short sleeps */
        if (!fab_backoff_spin(&idle, t0, now))
            fab_backoff_sleep(t0, now, timeout, kicks, 1e-3);
    }
}

static struct fi_ops_cntr fab_cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = fab_cntr_read,
    .readerr = fab_cntr_readerr,
    .add = fab_cntr_add,
    .set = fab_cntr_set,
    .wait = fab_cntr_wait,
    .adderr = fab_cntr_adderr,
    .seterr = fab_cntr_seterr,
};

static int fab_cntr_close(struct fid *fid)
{
    struct fab_cntr *c = fab_of(fid, struct fab_cntr, fid.fid);

    if (atomic_load(&c->refs))
        return -FI_EBUSY;
    fab_wait_close(c->w);
    atomic_fetch_sub(&c->dom->refs, 1);
    free(c);
    return 0;
}

static struct fi_ops fab_cntr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_cntr_close,
    .bind = fab_cq_bind,
    .control = fab_cntr_control,
    .ops_open = fab_cq_ops_open,
};

int fab_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
                  struct fid_cntr **fc, void *context)
{
    struct fab_domain *dom = fab_of(domain, struct fab_domain, fid);
    struct fab_cntr *c;

    if (attr && attr->events != FI_CNTR_EVENTS_COMP)
        return -FI_ENOSYS;
    if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
        attr->wait_obj != FI_WAIT_FD)
        return -FI_ENOSYS;
    if (attr && attr->wait_set)
        return -FI_ENOSYS;
    if (!(c = calloc(1, sizeof(*c))))
        return -FI_ENOMEM;
    c->dom = dom;
    if (attr && attr->wait_obj == FI_WAIT_FD) {
        int rc = fab_wait_open(dom, &c->w);
        if (rc) {
            free(c);
            return rc;
        }
    }
    fab_lock_init(&c->set.lock, fab_dom_locks(dom));
    c->fid.fid.fclass = FI_CLASS_CNTR;
    c->fid.fid.context = context;
    c->fid.fid.ops = &fab_cntr_fi_ops;
    c->fid.ops = &fab_cntr_ops;
    atomic_fetch_add(&dom->refs, 1);
    *fc = &c->fid;
    return 0;
}

/* ---- event queue ------------------------------------------------------------------ */

/* An RDM endpoint of this provider has no connection events and its AV
 * inserts complete at once, so an event queue only ever reports what the
 * application writes into it: enough for programs that open one anyway
 * (fi_pingpong does) and bind it to their endpoint. */
struct fab_eq_ev {
    struct fab_eq_ev *next;
    uint32_t event;
    size_t len;
    char data[];
};

struct fab_eq {
    struct fid_eq fid;
    pthread_mutex_t lock;
    struct fab_eq_ev *head, *tail;
};

static ssize_t fab_eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
                           uint64_t flags)
{
    struct fab_eq *eq = fab_of(feq, struct fab_eq, fid);
    struct fab_eq_ev *ev;
    ssize_t n;

    pthread_mutex_lock(&eq->lock);
    if (!(ev = eq->head)) {
        pthread_mutex_unlock(&eq->lock);
        return -FI_EAGAIN;
    }
    if (len < ev->len) {
        pthread_mutex_unlock(&eq->lock);
        return -FI_ETOOSMALL;
    }
    if (!(flags & FI_PEEK)) {
        eq->head = ev->next;
        if (!eq->head)
            eq->tail = NULL;
    }
    pthread_mutex_unlock(&eq->lock);
    if (event)
        *event = ev->event;
    memcpy(buf, ev->data, ev->len);
    n = (ssize_t)ev->len;
    if (!(flags & FI_PEEK))
        free(ev);
    return n;
}

static ssize_t fab_eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
    return -FI_EAGAIN;
}

static ssize_t fab_eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
                            uint64_t flags)
{
    struct fab_eq *eq = fab_of(feq, struct fab_eq, fid);
    struct fab_eq_ev *ev = malloc(sizeof(*ev) + len);

    if (!ev)
        return -FI_ENOMEM;
    ev->next = NULL;
    ev->event = event;
    ev->len = len;
    memcpy(ev->data, buf, len);
    pthread_mutex_lock(&eq->lock);
    if (eq->tail)
        eq->tail->next = ev;
    else
        eq->head = ev;
    eq->tail = ev;
    pthread_mutex_unlock(&eq->lock);
    return (ssize_t)len;
}

static ssize_t fab_eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
                            int timeout, uint64_t flags)
{
    uint64_t t0 = cvia__clock_ns();
    ssize_t n;

    while ((n = fab_eq_read(feq, event, buf, len, flags)) == -FI_EAGAIN) {
        if (timeout >= 0 && cvia__clock_ns() - t0 >= (uint64_t)timeout * 1000000ull)
            return -FI_EAGAIN;
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    return n;
}

static const char *fab_eq_strerror(struct fid_eq *feq, int prov_errno, const void *err_data,
                                   char *buf, size_t len)
{
    return fab_cq_strerror(NULL, prov_errno, err_data, buf, len);
}

static struct fi_ops_eq fab_eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = fab_eq_read,
    .readerr = fab_eq_readerr,
    .write = fab_eq_write,
    .sread = fab_eq_sread,
    .strerror = fab_eq_strerror,
};

static int fab_eq_close(struct fid *fid)
{
    struct fab_eq *eq = fab_of(fid, struct fab_eq, fid.fid);

    while (eq->head) {
        struct fab_eq_ev *ev = eq->head;
        eq->head = ev->next;
        free(ev);
    }
    pthread_mutex_destroy(&eq->lock);
    free(eq);
    return 0;
}

static struct fi_ops fab_eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_eq_close,
    .bind = fab_cq_bind,
    .control = fab_eq_control,
    .ops_open = fab_cq_ops_open,
};

int fab_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **feq,
                void *context)
{
    struct fab_eq *eq;

    if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
        return -FI_ENOSYS;
    if (!(eq = calloc(1, sizeof(*eq))))
        return -FI_ENOMEM;
    pthread_mutex_init(&eq->lock, NULL);
    eq->fid.fid.fclass = FI_CLASS_EQ;
    eq->fid.fid.context = context;
    eq->fid.fid.ops = &fab_eq_fi_ops;
    eq->fid.ops = &fab_eq_ops;
    *feq = &eq->fid;
    return 0;
}
