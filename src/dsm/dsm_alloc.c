/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Shared allocation and homes.
 *
 * Collective allocation (cvia_dsm_alloc): every rank makes the same calls
 * in the same order (SPMD code does, and so does a PARMACS main up to its
 * first CREATE, which every rank replays), so each rank carves the same
 * units out of its own brk without a message.
 *
 * Late allocation (dsm_alloc_late, dsm_lock_create_late): PARMACS G_MALLOC
 * and LOCKINIT after the first CREATE, when the processes no longer run
 * the same code. Rank 0's service thread manages it: it takes the units
 * (or lock ids) above everything allocated so far, tells every other rank
 * (M_ALLOC_NOTE), and answers the caller (M_ALLOCATED) only when every
 * rank has installed them (M_ALLOC_ACK). A rank can learn the address only
 * from the caller, through shared memory or a message written after that
 * answer, so no rank ever meets a unit it does not know. Requests are
 * served one at a time, in arrival order.
 *
 * A rank replaying main (parmacs.c) past the first CREATE allocates
 * nothing: it asks rank 0 what rank 0's n-th late call returned (M_ALLOC_Q,
 * M_ALLOC_A), so that its private pointers and lock handles match rank 0's
 * at its own CREATE. Rank 0 records its late calls in order; a query for
 * one it has not made yet waits for it.
 *
 * Collective allocations never follow late ones on a rank (PARMACS makes
 * every call after the first CREATE a late one), and late units lie above
 * rank 0's brk at its first CREATE, which every replaying rank reaches
 * too: the two kinds never overlap. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dsm/dsm.h"

/* Give units [u0, u0 + nu) their homes and initial states. Under lock. */
static void units_install(struct dsm *d, size_t u0, size_t nu, int home)
{
    for (size_t i = 0; i < nu; i++) {
        struct dsm_unit *x = &d->u[u0 + i];
        int h = home >= 0 ? home :
                home == CVIA_DSM_HOME_RR ? (int)((u0 + i) % (size_t)d->size) :
                home == CVIA_DSM_HOME_BLOCK ? (int)(i * (size_t)d->size / nu) : -1;
        /* first touch: the claims of the allocation's i-th block are
         * decided by the rank its block placement would make home (the
         * same on every rank); a band written by the rank whose block it
         * is claims its units with no message */
        int mgr = (int)(i * (size_t)d->size / nu);
        if (d->xg) {
            /* the host's table: installed by the first member to get here
             * (the others may be using it already); as with one level,
             * every copy starts valid (zeros) and every home unit tracked */
            if (x->state == U_NONE) {
                x->mgr = (uint8_t)mgr;
                x->home = (int16_t)h;
                x->state = U_CLEAN;
            }
            d->uprot[u0 + i] = x->state == U_INVALID ? P_NONE :
                               x->state == U_EXCL ? P_RW : P_READ;
            continue;
        }
        x->mgr = (uint8_t)mgr;
        x->home = (int16_t)h;
        /* every copy starts valid: the memory reads as zeros everywhere;
         * with the region shared on this host, every rank writes it as its
         * home would with no copy elsewhere */
        if ((h == d->rank && d->size == 1) || d->grp) {
            x->state = U_EXCL;
            d->uprot[u0 + i] = P_RW;
        } else {
            x->state = U_CLEAN;
            d->uprot[u0 + i] = P_READ;
            if (h == d->rank)
                x->copyset = dsm_all_others(d, h);
        }
    }
    if (!d->scratch) {
        /* one call per run of equal protection */
        size_t i = 0;
        while (i < nu) {
            size_t j = i + 1;
            int p = d->uprot[u0 + i];
            while (j < nu && d->uprot[u0 + j] == p)
                j++;
            mprotect(d->base + (u0 + i) * d->unit, (j - i) * d->unit, p);
            i = j;
        }
        /* alone (or sharing the region on this host: each rank's page
         * tables), fault the memory in now, as the sequential build's
         * G_MALLOC does by clearing it: not inside the timed part of a
         * program (best effort: before Linux 5.14 it faults in on touch) */
#ifdef MADV_POPULATE_WRITE
        if ((d->size == 1 || d->grp) &&
            madvise(d->base + u0 * d->unit, nu * d->unit, MADV_POPULATE_WRITE) &&
            errno == EFAULT && d->grp)
            dsm_group_full(d, nu * d->unit);
#endif
    }
}

static int resolve_home(struct dsm *d, int home)
{
    if (home == CVIA_DSM_HOME_DEFAULT)
        home = d->cfg.home == DSM_HOME_RR ? CVIA_DSM_HOME_RR :
               d->cfg.home == DSM_HOME_FIRST_TOUCH ? CVIA_DSM_HOME_FIRST_TOUCH :
               CVIA_DSM_HOME_BLOCK;
    return home;
}

static size_t units_for(struct dsm *d, size_t len)
{
    return len ? (len + d->unit - 1) / d->unit : 1;
}

int cvia_dsm_alloc(size_t len, int home, void **ptr_p)
{
    struct dsm *d = &dsm__g;
    size_t nu, u0;

    if (!d->up)
        return -CVIA_ENOINIT;
    if (!ptr_p || home >= d->size || home < CVIA_DSM_HOME_FIRST_TOUCH)
        return -EINVAL;
    home = resolve_home(d, home);
    nu = units_for(d, len);
    cvia_spin_lock(d->lk);
    if (nu > (d->region - d->brk) / d->unit) {
        cvia_spin_unlock(d->lk);
        dsm_err("allocation of %zu bytes does not fit: %zu of the region's %zu bytes "
                "are left (CVIA_DSM_SIZE)", len, d->region - d->brk, d->region);
        return -ENOMEM;
    }
    u0 = d->brk / d->unit;
    units_install(d, u0, nu, home);
    __atomic_store_n(&d->brk, d->brk + nu * d->unit, __ATOMIC_RELEASE);
    cvia_spin_unlock(d->lk);
    dsm_group_reserve(d, u0, nu);   /* outside the host's lock: it may end the job */
    *ptr_p = d->base + u0 * d->unit;
    return 0;
}

void *cvia_dsm_malloc(size_t len)
{
    void *p = NULL;
    return cvia_dsm_alloc(len, CVIA_DSM_HOME_DEFAULT, &p) ? NULL : p;
}

int cvia_dsm_home_of(const void *addr)
{
    struct dsm *d = &dsm__g;
    const char *a = addr;
    int h;

    if (!d->up)
        return -CVIA_ENOINIT;
    if (a < d->base || a >= d->base + dsm_top(d))
        return -EINVAL;
    cvia_spin_lock(d->lk);
    h = d->u[(size_t)(a - d->base) / d->unit].home;
    cvia_spin_unlock(d->lk);
    return h;
}

/* ---- late allocation: the caller's side ------------------------------------ */

/* Rank 0 records its own late calls for the ranks that replay them, and
 * answers the queries that waited for this one. */
static void log_late(struct dsm *d, uint32_t first)
{
    struct dsm_mail *ready = NULL, **pp;

    cvia_spin_lock(d->lk);
    if (d->late_n == d->late_cap) {
        uint32_t cap = d->late_cap ? 2 * d->late_cap : 64;
        uint32_t *p = realloc(d->late_log, cap * sizeof(*p));
        if (!p) {
            cvia_spin_unlock(d->lk);
            dsm_fatal(-ENOMEM, "out of memory");
        }
        d->late_log = p;
        d->late_cap = cap;
    }
    d->late_log[d->late_n++] = first;
    for (pp = &d->late_wait; *pp;) {
        struct dsm_mail *m = *pp;
        if (m->h.a < d->late_n) {
            *pp = m->next;
            m->next = ready;
            ready = m;
        } else {
            pp = &m->next;
        }
    }
    cvia_spin_unlock(d->lk);
    while (ready) {
        struct dsm_mail *m = ready;
        struct dsm_hdr r = { .type = M_ALLOC_A, .a = m->h.a, .b = d->late_log[m->h.a] };
        ready = m->next;
        dsm_send(d, m->h.src, &r, NULL, 0);
        dsm_mail_free(m);
    }
}

/* Ask rank 0 for @count units (LATE_MEM) or locks and wait for the answer. */
static int late_request(struct dsm *d, int kind, uint32_t count, int home, uint32_t *first_p)
{
    struct dsm_hdr h = { .type = M_ALLOC, .pad = (uint16_t)kind, .a = count,
                         .b = (uint32_t)home };
    struct dsm_mail *m;
    int rc;

    if ((rc = dsm_send(d, 0, &h, NULL, 0)))
        return rc;
    m = dsm_mbox_wait(d, M_ALLOCATED, 0, UINT32_MAX);
    rc = -(int)m->h.b;
    *first_p = m->h.a;
    dsm_mail_free(m);
    if (!rc && d->rank == 0)
        log_late(d, *first_p);
    return rc;
}

int dsm_alloc_late(size_t len, int home, void **ptr_p)
{
    struct dsm *d = &dsm__g;
    uint32_t u0;
    size_t nu;
    int rc;

    if (!d->up)
        return -CVIA_ENOINIT;
    if (!ptr_p || home >= d->size || home < CVIA_DSM_HOME_FIRST_TOUCH)
        return -EINVAL;
    nu = units_for(d, len);
    if (nu > d->nunits) {
        dsm_err("allocation of %zu bytes does not fit in the region's %zu bytes "
                "(CVIA_DSM_SIZE)", len, d->region);
        return -ENOMEM;
    }
    if ((rc = late_request(d, LATE_MEM, (uint32_t)nu, resolve_home(d, home), &u0))) {
        if (rc == -ENOMEM)
            dsm_err("allocation of %zu bytes does not fit: the region's %zu bytes are "
                    "taken (CVIA_DSM_SIZE)", len, d->region);
        return rc;
    }
    *ptr_p = d->base + (size_t)u0 * d->unit;
    return 0;
}

int dsm_lock_create_late(int n, int *id_p)
{
    struct dsm *d = &dsm__g;
    uint32_t first;
    int rc;

    if (!d->up)
        return -CVIA_ENOINIT;
    if (n <= 0 || !id_p)
        return -EINVAL;
    if ((rc = late_request(d, LATE_LOCK, (uint32_t)n, 0, &first))) {
        if (rc == -ENOSPC)
            dsm_err("more than %ld locks (CVIA_DSM_MAX_LOCKS)", d->cfg.max_locks);
        return rc;
    }
    *id_p = (int)first;
    return 0;
}

int dsm_late_replay(int n, uint32_t *first_p)
{
    struct dsm *d = &dsm__g;
    struct dsm_hdr h = { .type = M_ALLOC_Q, .a = (uint32_t)n };
    struct dsm_mail *m;
    int rc;

    if (!d->up)
        return -CVIA_ENOINIT;
    if ((rc = dsm_send(d, 0, &h, NULL, 0)))
        return rc;
    m = dsm_mbox_wait(d, M_ALLOC_A, 0, (uint32_t)n);
    *first_p = m->h.b;
    dsm_mail_free(m);
    return 0;
}

/* ---- late allocation: the service threads ----------------------------------- */

/* Any rank: make a late allocation known here. */
static void install(struct dsm *d, int kind, uint32_t first, uint32_t n, int home)
{
    cvia_spin_lock(d->lk);
    if (kind == LATE_MEM) {
        size_t end = ((size_t)first + n) * d->unit;
        units_install(d, first, n, home);
        if (end > d->late_top)
            __atomic_store_n(&d->late_top, end, __ATOMIC_RELEASE);
    } else if ((int)(first + n) > d->late_locks) {
        __atomic_store_n(&d->late_locks, (int)(first + n), __ATOMIC_RELEASE);
    }
    cvia_spin_unlock(d->lk);
    if (kind == LATE_MEM)
        dsm_group_reserve(d, first, n);
}

/* Rank 0: place request @h, install it here and tell the others. Returns
 * 0 when the others must acknowledge, else an errno to answer with now. */
static int start(struct dsm *d, const struct dsm_hdr *h, uint32_t *first_p)
{
    uint32_t n = h->a;
    int home = (int32_t)h->b;

    if (!n || (h->pad == LATE_MEM && (home >= d->size || home < CVIA_DSM_HOME_FIRST_TOUCH)))
        return EINVAL;
    cvia_spin_lock(d->lk);
    if (h->pad == LATE_MEM) {
        size_t top = dsm_top(d);
        if (n > (d->region - top) / d->unit) {
            cvia_spin_unlock(d->lk);
            return ENOMEM;
        }
        *first_p = (uint32_t)(top / d->unit);
    } else {
        int top = d->next_lock > d->late_locks ? d->next_lock : d->late_locks;
        if ((long)n > d->cfg.max_locks - top) {
            cvia_spin_unlock(d->lk);
            return ENOSPC;
        }
        *first_p = (uint32_t)top;
    }
    cvia_spin_unlock(d->lk);
    install(d, h->pad, *first_p, n, home);
    struct dsm_hdr note = { .type = M_ALLOC_NOTE, .pad = h->pad, .a = *first_p, .b = n,
                            .c = (uint64_t)(int64_t)home };
    for (int r = 1; r < d->size; r++)
        dsm_send(d, r, &note, NULL, 0);
    return 0;
}

/* Rank 0: begin request @h, or answer it at once when it fails or when
 * there is nobody to tell. */
static void begin(struct dsm *d, struct dsm_hdr h)
{
    uint32_t first = 0;
    int err = start(d, &h, &first);
    struct dsm_hdr r = { .type = M_ALLOCATED, .a = first, .b = (uint32_t)err };

    if (!err && d->size > 1) {
        d->alloc_cur = r;
        d->alloc_to = h.src;
        d->alloc_acks = d->size - 1;
        return;
    }
    dsm_send(d, h.src, &r, NULL, 0);
}

/* Rank 0: begin queued requests while none is in progress. */
static void run_queue(struct dsm *d)
{
    while (d->alloc_q && !d->alloc_acks) {
        struct dsm_mail *m = d->alloc_q;
        struct dsm_hdr h = m->h;
        d->alloc_q = m->next;
        if (!d->alloc_q)
            d->alloc_q_tail = &d->alloc_q;
        dsm_mail_free(m);
        begin(d, h);
    }
}

static struct dsm_mail *mail_of(const struct dsm_hdr *h)
{
    struct dsm_mail *m = calloc(1, sizeof(*m));
    if (!m)
        dsm_fatal(-ENOMEM, "out of memory");
    m->h = *h;
    return m;
}

void dsm_on_alloc(struct dsm *d, const struct dsm_hdr *h)
{
    int manager = h->type != M_ALLOC_NOTE;

    if (manager != (d->rank == 0) || (h->type != M_ALLOC_Q && h->pad > LATE_LOCK))
        dsm_fatal(-CVIA_EPROTO, "a stray allocation message (type %u) from rank %d",
                  h->type, h->src);
    switch (h->type) {
    case M_ALLOC: {
        struct dsm_mail *m = mail_of(h);
        if (!d->alloc_q_tail)
            d->alloc_q_tail = &d->alloc_q;
        *d->alloc_q_tail = m;
        d->alloc_q_tail = &m->next;
        run_queue(d);
        break;
    }
    case M_ALLOC_NOTE: {
        struct dsm_hdr r = { .type = M_ALLOC_ACK };
        install(d, h->pad, h->a, h->b, (int)(int64_t)h->c);
        dsm_send(d, 0, &r, NULL, 0);
        break;
    }
    case M_ALLOC_ACK:
        if (d->alloc_acks <= 0)
            dsm_fatal(-CVIA_EPROTO, "a stray allocation acknowledgement from rank %d",
                      h->src);
        if (--d->alloc_acks == 0) {
            dsm_send(d, d->alloc_to, &d->alloc_cur, NULL, 0);
            run_queue(d);
        }
        break;
    case M_ALLOC_Q: {
        struct dsm_hdr r = { .type = M_ALLOC_A, .a = h->a };
        int now;
        cvia_spin_lock(d->lk);
        if ((now = h->a < d->late_n)) {
            r.b = d->late_log[h->a];
        } else {
            struct dsm_mail *m = mail_of(h);
            m->next = d->late_wait;
            d->late_wait = m;
        }
        cvia_spin_unlock(d->lk);
        if (now)
            dsm_send(d, h->src, &r, NULL, 0);
        break;
    }
    }
}

void dsm_alloc_fini(struct dsm *d)
{
    struct dsm_mail *m;

    while ((m = d->alloc_q)) {
        d->alloc_q = m->next;
        dsm_mail_free(m);
    }
    while ((m = d->late_wait)) {
        d->late_wait = m->next;
        dsm_mail_free(m);
    }
    free(d->late_log);
    d->late_log = NULL;
    d->late_n = d->late_cap = 0;
}
