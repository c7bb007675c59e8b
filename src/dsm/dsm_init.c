/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* DSM start and end: the shared region (one memfd mapped twice, at one
 * address agreed by every rank), registration and descriptor exchange,
 * finalize, fatal errors. Allocation is in dsm_alloc.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dsm/dsm.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct dsm dsm__g;

/* What every rank tells rank 0 at start, and rank 0 tells everyone back. */
struct dsm_peer_info {
    uint64_t unit, region, diff_buf, prefetch;
    cvia_mr_desc_t view, diff, flags, land, inbox, credit;
};

void dsm_fatal(int err, const char *fmt, ...)
{
    struct dsm *d = &dsm__g;
    char msg[512];
    va_list ap;

    if (atomic_exchange(&d->fatal, 1))
        for (;;)            /* another thread reports it and ends the process */
            pause();
    if (d->gname[0])         /* rank 0, before every rank opened the segment */
        shm_unlink(d->gname);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cvia_error(DSM, "dsm: %s; ending this rank", msg);
    cvia_dsm_fatal_fn fn = atomic_load(&d->fatal_fn);
    if (fn)
        fn(err, msg);
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}

void cvia_dsm_on_fatal(cvia_dsm_fatal_fn fn)
{
    atomic_store(&dsm__g.fatal_fn, fn);
}

/* ---- the region ------------------------------------------------------------ */

/* Reserve [addr, addr + len) here. Returns 0, or -EADDRINUSE. */
static int reserve_at(uintptr_t addr, size_t len)
{
    void *p = mmap((void *)addr, len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        return -EADDRINUSE;
    if ((uintptr_t)p != addr) {   /* a kernel without MAP_FIXED_NOREPLACE */
        munmap(p, len);
        return -EADDRINUSE;
    }
    return 0;
}

/* Rank 0 proposes an address, every rank reserves it there, rank 0 tells
 * whether all could; a few proposals before giving up. */
static int agree_address(struct dsm *d)
{
    const size_t align = 2u << 20;
    uintptr_t old[8];
    int nold = 0, rc = -EADDRINUSE;

    for (int attempt = 0; attempt < 8; attempt++) {
        uint64_t addr = 0;
        int32_t ok, all = 1;

        if (d->rank == 0) {
            if (d->cfg.addr[0]) {
                addr = strtoull(d->cfg.addr, NULL, 16);
                if (!addr || addr % d->page) {
                    dsm_err("CVIA_DSM_ADDR '%s' is not a page-aligned hex address",
                            d->cfg.addr);
                    addr = 0;
                } else if (reserve_at(addr, d->region)) {
                    dsm_err("CVIA_DSM_ADDR %s: %zu bytes are not free there on rank 0",
                            d->cfg.addr, d->region);
                    addr = 0;
                }
            } else {
                char *p = mmap(NULL, d->region + align, PROT_NONE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                if (p != MAP_FAILED) {
                    uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
                    if (a > (uintptr_t)p)
                        munmap(p, a - (uintptr_t)p);
                    munmap((char *)a + d->region, (uintptr_t)p + align - a);
                    addr = a;
                }
            }
            for (int r = 1; r < d->size; r++)
                if ((rc = cvia_send(&addr, sizeof(addr), r, DSM_TAG_INIT)))
                    return rc;
            ok = addr != 0;
        } else {
            if ((rc = cvia_recv(&addr, sizeof(addr), 0, DSM_TAG_INIT, NULL)))
                return rc;
            ok = addr && !reserve_at(addr, d->region);
            if ((rc = cvia_send(&ok, sizeof(ok), 0, DSM_TAG_INIT)))
                return rc;
        }
        if (d->rank == 0) {
            all = ok;
            for (int r = 1; r < d->size; r++) {
                int32_t v;
                if ((rc = cvia_recv(&v, sizeof(v), r, DSM_TAG_INIT, NULL)))
                    return rc;
                all &= v;
            }
            for (int r = 1; r < d->size; r++)
                if ((rc = cvia_send(&all, sizeof(all), r, DSM_TAG_INIT)))
                    return rc;
        } else if ((rc = cvia_recv(&all, sizeof(all), 0, DSM_TAG_INIT, NULL))) {
            return rc;
        }
        if (all) {
            d->base = (char *)(uintptr_t)addr;
            for (int i = 0; i < nold; i++)
                munmap((void *)old[i], d->region);
            return 0;
        }
        if (ok) {           /* keep rank 0's failed pick so that it is not picked again */
            if (d->rank == 0 && nold < 8 && !d->cfg.addr[0])
                old[nold++] = (uintptr_t)addr;
            else
                munmap((void *)(uintptr_t)addr, d->region);
        }
        if (d->cfg.addr[0] || !addr)
            break;
    }
    for (int i = 0; i < nold; i++)
        munmap((void *)old[i], d->region);
    dsm_err("no address range of %zu bytes is free on every rank (set CVIA_DSM_ADDR "
            "or a smaller CVIA_DSM_SIZE)", d->region);
    return -EADDRINUSE;
}

/* Switch the application view from private scratch memory (PARMACS replay)
 * to the memfd, with the protections the unit states call for. Under lock. */
int dsm_map_real(struct dsm *d)
{
    void *p = mmap(d->base, d->region, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE,
                   d->memfd, 0);
    if (p == MAP_FAILED)
        return -errno;
    d->scratch = 0;
    if (d->xg) {
        /* the host's states moved on while this rank replayed */
        for (size_t u = 0; u < dsm_top(d) / d->unit; u++)
            d->uprot[u] = d->u[u].state == U_INVALID ? P_NONE :
                          d->u[u].state == U_NONE ? P_NONE :
                          d->u[u].state == U_EXCL ? P_RW : P_READ;
    }
    dsm_prot_all(d);
    dsm_group_reserve(d, 0, dsm_top(d) / d->unit);   /* as units_install does */
#ifdef MADV_POPULATE_WRITE
    if (d->grp &&   /* as units_install does for the units allocated so far */
        madvise(d->base, dsm_top(d), MADV_POPULATE_WRITE) && errno == EFAULT)
        dsm_group_full(d, dsm_top(d));
#endif
    return 0;
}

static int map_region(struct dsm *d, int scratch)
{
    void *p;

    if (d->grp || d->xg)       /* the host's segment, sized by its leader */
        goto mapped;
    d->memfd = memfd_create("cvia-dsm", MFD_CLOEXEC);
    if (d->memfd < 0) {
        dsm_err("memfd_create: %s", strerror(errno));
        return -errno;
    }
    if (ftruncate(d->memfd, (off_t)d->region)) {
        dsm_err("sizing the %zu-byte region: %s", d->region, strerror(errno));
        return -errno;
    }
mapped:
    d->pview = mmap(NULL, d->region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                    d->memfd, 0);
    if (d->pview == MAP_FAILED) {
        d->pview = NULL;
        dsm_err("mapping the protocol view: %s", strerror(errno));
        return -errno;
    }
    if (scratch)
        p = mmap(d->base, d->region, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    else
        p = mmap(d->base, d->region, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE,
                 d->memfd, 0);
    if (p == MAP_FAILED) {
        dsm_err("mapping the application view: %s", strerror(errno));
        return -errno;
    }
    d->scratch = scratch;
    if (d->xg)                 /* the host's twins, after its region */
        d->twins = mmap(NULL, d->region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                        d->memfd, (off_t)d->region);
    else
        d->twins = mmap(NULL, d->region, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (d->twins == MAP_FAILED) {
        d->twins = NULL;
        return -ENOMEM;
    }
    return 0;
}

static void *zalloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1))
        return NULL;
    memset(p, 0, n);
    return p;
}

static int alloc_tables(struct dsm *d)
{
    size_t P = (size_t)d->size;

    if (!d->xg) {              /* else the host's, in its segment */
        d->u = calloc(d->nunits, sizeof(*d->u));
        d->dirty = malloc(d->nunits * sizeof(*d->dirty));
    } else {
        d->mine = malloc(d->nunits * sizeof(*d->mine));
        d->mbuf = malloc(d->unit);
        if (!d->mine || !d->mbuf)
            return -ENOMEM;
    }
    d->uprot = calloc(d->nunits, 1);
    d->upollw = calloc(d->nunits, 1);
    d->pollw = malloc(d->nunits * sizeof(*d->pollw));
    d->vt = calloc(P, sizeof(*d->vt));
    d->bar_vt = calloc(P, sizeof(*d->bar_vt));
    d->log = calloc(P, sizeof(*d->log));
    d->flags = zalloc(P * 4 * sizeof(*d->flags));
    d->ack_src = zalloc(P * 2 * sizeof(*d->ack_src));
    d->dw_seq = calloc(P * 2, sizeof(*d->dw_seq));
    d->dw_next = calloc(P, 1);
    d->land = mmap(NULL, d->unit * (size_t)(1 + d->cfg.prefetch), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (d->land == MAP_FAILED)
        d->land = NULL;
    d->pf_free = calloc((size_t)d->cfg.prefetch + 1, sizeof(*d->pf_free));
    d->stage[0] = malloc(d->cfg.diff_buf);
    d->stage[1] = malloc(d->cfg.diff_buf);
    d->peer_view = calloc(P * 6, sizeof(cvia_mr_desc_t));
    d->diffarea = mmap(NULL, P * 2 * d->cfg.diff_buf, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (d->diffarea == MAP_FAILED)
        d->diffarea = NULL;
    d->inbox = mmap(NULL, P * DSM_SLOTS * DSM_SLOT, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (d->inbox == MAP_FAILED)
        d->inbox = NULL;
    d->credit = zalloc(2 * P * sizeof(*d->credit));
    d->tx_seq = calloc(P * 4, sizeof(uint64_t));
    d->out_head = calloc(P, sizeof(*d->out_head));
    d->out_tail = calloc(P, sizeof(*d->out_tail));
    if (!d->u || !d->dirty || !d->pollw || !d->uprot || !d->upollw || !d->vt || !d->bar_vt || !d->log || !d->flags ||
        !d->ack_src || !d->dw_seq || !d->dw_next || !d->land || !d->stage[0] ||
        !d->stage[1] || !d->peer_view || !d->diffarea || !d->inbox || !d->credit ||
        !d->tx_seq || !d->out_head || !d->out_tail || !d->pf_free)
        return -ENOMEM;
    for (long i = d->cfg.prefetch; i >= 1; i--)
        d->pf_free[d->npf_free++] = (uint16_t)i;
    d->consumed = d->tx_seq + P;
    d->returned = d->tx_seq + 2 * P;
    d->cons_src = d->tx_seq + 3 * P;
    d->credit_land = (uint64_t *)(d->credit + P);
    d->flags_land = (uint64_t *)(d->flags + 2 * P);
    for (size_t r = 0; r < P; r++)
        d->out_tail[r] = &d->out_head[r];
    d->peer_diff = d->peer_view + P;
    d->peer_flags = d->peer_view + 2 * P;
    d->peer_land = d->peer_view + 3 * P;
    d->peer_inbox = d->peer_view + 4 * P;
    d->peer_credit = d->peer_view + 5 * P;
    for (size_t i = 0; i < d->nunits && !d->xg; i++)
        d->u[i].home = -1;
    return dsm_locks_init(d);
}

static int register_and_exchange(struct dsm *d)
{
    struct dsm_peer_info me, *all;
    size_t P = (size_t)d->size;
    int rc;

    if ((rc = cvia_mr_reg(d->pview, d->region, CVIA_MR_REMOTE_READ | CVIA_MR_REMOTE_WRITE,
                          &d->mr_view)) ||
        (rc = cvia_mr_reg(d->diffarea, P * 2 * d->cfg.diff_buf, CVIA_MR_REMOTE_WRITE,
                          &d->mr_diff)) ||
        (rc = cvia_mr_reg(d->flags_land, P * 2 * sizeof(*d->flags_land), CVIA_MR_REMOTE_WRITE,
                          &d->mr_flags)) ||
        (rc = cvia_mr_reg(d->land, d->unit * (size_t)(1 + d->cfg.prefetch),
                          CVIA_MR_REMOTE_WRITE, &d->mr_land)) ||
        (rc = cvia_mr_reg(d->inbox, P * DSM_SLOTS * DSM_SLOT, CVIA_MR_REMOTE_WRITE,
                          &d->mr_inbox)) ||
        (rc = cvia_mr_reg(d->credit_land, P * sizeof(*d->credit_land), CVIA_MR_REMOTE_WRITE,
                          &d->mr_credit))) {
        dsm_err("registering the DSM's memory: %s", cvia_strerror(rc));
        return rc;
    }
    memset(&me, 0, sizeof(me));
    me.unit = d->unit;
    me.region = d->region;
    me.diff_buf = d->cfg.diff_buf;
    me.prefetch = (uint64_t)d->cfg.prefetch;
    cvia_mr_desc(d->mr_view, &me.view);
    cvia_mr_desc(d->mr_diff, &me.diff);
    cvia_mr_desc(d->mr_flags, &me.flags);
    cvia_mr_desc(d->mr_land, &me.land);
    cvia_mr_desc(d->mr_inbox, &me.inbox);
    cvia_mr_desc(d->mr_credit, &me.credit);
    if (!(all = calloc(P, sizeof(*all))))
        return -ENOMEM;
    if (d->rank == 0) {
        all[0] = me;
        for (int r = 1; r < d->size && !rc; r++)
            rc = cvia_recv(&all[r], sizeof(all[r]), r, DSM_TAG_INIT, NULL);
        for (int r = 1; r < d->size && !rc; r++)
            rc = cvia_send(all, P * sizeof(*all), r, DSM_TAG_INIT);
    } else {
        rc = cvia_send(&me, sizeof(me), 0, DSM_TAG_INIT);
        if (!rc)
            rc = cvia_recv(all, P * sizeof(*all), 0, DSM_TAG_INIT, NULL);
    }
    for (size_t r = 0; r < P && !rc; r++) {
        if (all[r].unit != me.unit || all[r].region != me.region ||
            all[r].diff_buf != me.diff_buf || all[r].prefetch != me.prefetch) {
            dsm_err("rank %zu runs with CVIA_DSM_UNIT/SIZE/DIFF_BUF/PREFETCH %" PRIu64 "/%"
                    PRIu64 "/%" PRIu64 "/%" PRIu64 ", this rank with %zu/%zu/%zu/%ld: every "
                    "rank needs the same", r, all[r].unit, all[r].region, all[r].diff_buf,
                    all[r].prefetch, d->unit, d->region, d->cfg.diff_buf, d->cfg.prefetch);
            rc = -CVIA_ECONFIG;
            break;
        }
        d->peer_view[r] = all[r].view;
        d->peer_diff[r] = all[r].diff;
        d->peer_flags[r] = all[r].flags;
        d->peer_land[r] = all[r].land;
        d->peer_inbox[r] = all[r].inbox;
        d->peer_credit[r] = all[r].credit;
    }
    free(all);
    return rc;
}

static void release_all(struct dsm *d)
{
    if (d->mr_view) cvia_mr_dereg(d->mr_view);
    if (d->mr_diff) cvia_mr_dereg(d->mr_diff);
    if (d->mr_flags) cvia_mr_dereg(d->mr_flags);
    if (d->mr_land) cvia_mr_dereg(d->mr_land);
    if (d->mr_inbox) cvia_mr_dereg(d->mr_inbox);
    if (d->mr_credit) cvia_mr_dereg(d->mr_credit);
    d->mr_view = d->mr_diff = d->mr_flags = d->mr_land = d->mr_inbox = d->mr_credit = NULL;
    if (d->base)
        munmap(d->base, d->region);
    if (d->pview)
        munmap(d->pview, d->region);
    if (d->twins)
        munmap(d->twins, d->region);
    if (d->diffarea)
        munmap(d->diffarea, (size_t)d->size * 2 * d->cfg.diff_buf);
    if (d->inbox)
        munmap(d->inbox, (size_t)d->size * DSM_SLOTS * DSM_SLOT);
    if (d->memfd > 0)
        close(d->memfd);
    dsm_group_fini(d);
    for (int o = 0; d->log && o < d->size; o++) {
        for (uint32_t i = 0; i < d->log[o].n; i++)
            free(d->log[o].recs[i].units);
        free(d->log[o].recs);
    }
    dsm_locks_fini(d);
    dsm_alloc_fini(d);
    if (!d->xg) {
        free(d->u);
        free(d->dirty);
    }
    dsm_group_xfini(d);
    free(d->uprot); free(d->upollw); free(d->mine); free(d->mbuf); free(d->mq); free(d->amq);
    free(d->pollw); free(d->stale); free(d->vt); free(d->bar_vt); free(d->log);
    free((void *)d->flags); free(d->ack_src); free(d->dw_seq); free(d->dw_next);
    if (d->land)
        munmap(d->land, d->unit * (size_t)(1 + d->cfg.prefetch));
    free(d->pf_free); free(d->stage[0]); free(d->stage[1]); free(d->peer_view);
    free(d->fin_stats);
    free((void *)d->credit); free(d->tx_seq); free(d->out_head); free(d->out_tail);
    dsm_buf_free(&d->bar_union);
    cvia_dsm_fatal_fn fn = d->fatal_fn;
    memset(d, 0, sizeof(*d));
    d->fatal_fn = fn;
}

int dsm_init_common(int *argc, char ***argv, int replay)
{
    struct dsm *d = &dsm__g;
    int rc;

    if (d->up)
        return -EBUSY;
    cvia_dsm_fatal_fn fn = d->fatal_fn;
    memset(d, 0, sizeof(*d));
    d->fatal_fn = fn;
    d->memfd = -1;
    d->lk = &d->lock;
    if (!cvia_initialized()) {
        if ((rc = cvia_init(argc, argv)))
            return rc;
        d->own_cvia = 1;
    }
    if ((rc = cvia__param_load(&cvia__dsm_param_table, &d->cfg)))
        goto err;
    d->rank = cvia_rank();
    d->size = cvia_size();
    cvia__log_from_env();   /* this library's own copy of the logger */
    cvia__log_set_rank(d->rank);
    d->page = (size_t)sysconf(_SC_PAGESIZE);
    d->unit = d->cfg.unit;
    if (d->size > DSM_MAX_RANKS) {
        dsm_err("%d ranks: the DSM supports at most %d", d->size, DSM_MAX_RANKS);
        rc = -EINVAL;
        goto err;
    }
    if (d->unit % d->page) {
        dsm_err("CVIA_DSM_UNIT %zu is not a multiple of the page size %zu", d->unit, d->page);
        rc = -CVIA_ECONFIG;
        goto err;
    }
    d->region = (d->cfg.size + d->unit - 1) / d->unit * d->unit;
    d->nunits = d->region / d->unit;
    cvia_spin_init(&d->lock);
    cvia_spin_init(&d->send_lock);
    d->mbox_tail = &d->mbox;
    d->alloc_q_tail = &d->alloc_q;
    d->pend_tail = &d->pend;
    d->stats_mode = d->cfg.stats;
    if ((rc = agree_address(d)))
        goto err;
    if ((rc = dsm_group_setup(d))) {
        munmap(d->base, d->region);
        d->base = NULL;
        goto err;
    }
    if ((rc = map_region(d, replay && d->rank != 0)) || (rc = alloc_tables(d)) ||
        (rc = register_and_exchange(d)))
        goto err_release;
    if ((rc = dsm_fault_install(d)))
        goto err_release;
    d->up = 1;
    if ((rc = dsm_svc_start(d))) {
        d->up = 0;
        dsm_fault_remove(d);
        goto err_release;
    }
    return 0;

err_release:
    release_all(d);
err:
    if (d->own_cvia) {
        dsm_svc_forget();
        cvia_finalize();
    }
    d->own_cvia = 0;
    return rc;
}

int cvia_dsm_init(int *argc, char ***argv)
{
    return dsm_init_common(argc, argv, 0);
}

int cvia_dsm_finalize(void)
{
    struct dsm *d = &dsm__g;
    int rc, own;

    if (!d->up)
        return -CVIA_ENOINIT;
    rc = dsm_fin(d);
    dsm_svc_stop(d);
    dsm_svc_forget();
    dsm_fault_remove(d);
    own = d->own_cvia;
    release_all(d);
    if (own) {
        int rc2 = cvia_finalize();
        if (!rc)
            rc = rc2;
    }
    return rc;
}

int cvia_dsm_rank(void)
{
    return dsm__g.up ? dsm__g.rank : -CVIA_ENOINIT;
}

int cvia_dsm_size(void)
{
    return dsm__g.up ? dsm__g.size : -CVIA_ENOINIT;
}

size_t cvia_dsm_unit(void)
{
    return dsm__g.unit;
}

int cvia_dsm_touch(const void *addr, size_t len, int write)
{
    struct dsm *d = &dsm__g;
    const char *a = addr;
    size_t top = dsm_top(d);
    int rc = 0;

    if (!d->up)
        return -CVIA_ENOINIT;
    if (!len)
        return 0;
    if (a < d->base || len > top || a - d->base > (ptrdiff_t)(top - len))
        return -EINVAL;
    if (d->scratch)
        return 0;
    for (size_t u = (size_t)(a - d->base) / d->unit;
         u <= (size_t)(a + len - 1 - d->base) / d->unit && !rc; u++) {
        int need = write ? P_RW : P_READ;
        cvia_spin_lock(d->lk);
        int ok = (d->uprot[u] & need) == need;
        cvia_spin_unlock(d->lk);
        if (!ok)
            rc = dsm_fault(d, u, write);
    }
    return rc;
}

int cvia_dsm_stats(cvia_dsm_stats_t *s)
{
    if (!dsm__g.up)
        return -CVIA_ENOINIT;
    if (!s)
        return -EINVAL;
    dsm_stats_snapshot(&dsm__g, s);
    return 0;
}

int cvia_dsm_stats_at_exit(int json, FILE *out)
{
    if (!dsm__g.up)
        return -CVIA_ENOINIT;
    dsm__g.stats_mode = json ? DSM_STATS_JSON : DSM_STATS_TEXT;
    dsm__g.stats_out = out;
    return 0;
}
