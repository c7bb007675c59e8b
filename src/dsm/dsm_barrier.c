/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Barriers, the end of the DSM, and the PARMACS process hand-offs.
 *
 * Barrier: each rank ends its interval (its diffs are at their homes),
 * sends the intervals it made since the last barrier to rank 0 and waits;
 * rank 0's service thread, once every rank arrived, sends the union back.
 * Every rank then learns, per unit written in the epoch, who wrote it:
 * - a non-home rank keeps its copy only if it was the sole writer;
 * - the home keeps in the copyset only that sole writer (if it had a
 *   copy); with nobody left the unit becomes exclusive: writable at the
 *   home with no write fault until somebody fetches it again.
 * All intervals are then known everywhere, so the logs are emptied.
 * Fetches from a rank already past the barrier wait at a home that has not
 * finished it (the epoch in M_FETCH), so a copyset is never cleared after
 * a copy it should have recorded. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dsm/dsm.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Protections of the units in @t (sorted), one mprotect per run. */
static void prot_runs(struct dsm *d, const uint32_t *t, size_t n)
{
    size_t i = 0;

    if (d->scratch)
        return;
    while (i < n) {
        size_t j = i + 1;
        int p = d->uprot[t[i]];
        while (j < n && t[j] == t[j - 1] + 1 && d->uprot[t[j]] == p)
            j++;
        mprotect(d->base + (size_t)t[i] * d->unit, (j - i) * d->unit, p);
        i = j;
    }
}

/* Groups across hosts: unit @u was written in the epoch by @w (ranks).
 * Units of this host's homes stay as they are (always tracked); a copy
 * written only on this host is current (one memory); else the first
 * member through this barrier invalidates it for the host (x->iepoch),
 * and the others only drop their own access while it is still invalid.
 * A copy the host writes (another member is past the barrier already, or
 * wrote it after its release) is merged instead (@mg); the members that
 * come later merge it too while that merge is pending (x->mpend), so that
 * none reads it unmerged. Under lock. */
static void union_xg(struct dsm *d, uint32_t u, uint64_t w, uint32_t *pf, size_t *npf,
                     uint32_t *mg, size_t *nmg)
{
    struct dsm_unit *x = &d->u[u];

    if (dsm_ghome(d, x->home)) {
        /* as one level: a home unit written by this host alone (every
         * other host drops its copy at this barrier) and never fetched
         * since it was untracked becomes exclusive: writable on every
         * rank of the host without a fault, until a fetch tracks it again
         * (the tracked list, dsm_proto.c) */
        if (x->iepoch != d->epoch + 1) {
            x->iepoch = d->epoch + 1;
            if (x->state == U_CLEAN && !x->sticky && !(w & ~d->gmask))
                x->state = U_EXCL;
        }
        if (x->state != U_DIRTY)
            d->uprot[u] = x->state == U_EXCL ? P_RW : P_READ;
        return;
    }
    if (!(w & ~d->gmask))
        return;
    if (x->iepoch == d->epoch + 1) {
        if (x->state == U_INVALID)
            d->uprot[u] = P_NONE;
        else if (x->mpend)       /* not merged yet: do it too, rather than read it */
            mg[(*nmg)++] = u;
        return;
    }
    x->iepoch = d->epoch + 1;
    if (x->pf == PF_FLIGHT)
        x->pf = PF_STALE;
    if (x->state == U_CLEAN || x->state == U_INVALID) {
        if (x->state == U_CLEAN)
            ADD(invalidations, 1);
        x->state = U_INVALID;
        d->uprot[u] = P_NONE;
        if (x->used && *npf < (size_t)d->cfg.prefetch && !x->pf)
            pf[(*npf)++] = u;
        x->used = 0;
    } else if (x->state == U_DIRTY) {
        x->mpend = 1;
        mg[(*nmg)++] = u;
    }
}

/* Under lock. Units this rank held valid and now invalidates go into
 * @pf (up to CVIA_DSM_PREFETCH) to be fetched again at once; with
 * groups, units to merge go into *@mg_p (malloc'd). */
static int apply_union(struct dsm *d, const char *p, size_t len, uint32_t *pf, size_t *npf,
                       uint32_t **mg_p, size_t *nmg)
{
    const char *q = p, *end = p + len;
    uint32_t *touched = NULL;
    size_t nt = 0, cap = 0;
    const uint64_t me = 1ull << d->rank;

    while (q < end) {
        uint32_t h[3];
        if ((size_t)(end - q) < sizeof(h))
            goto bad;
        memcpy(h, q, sizeof(h));
        q += sizeof(h);
        if (h[0] >= (uint32_t)d->size || (size_t)(end - q) / 4 < h[2])
            goto bad;
        if (h[1] > d->vt[h[0]]) {
            d->vt[h[0]] = h[1];
            if (h[0] != (uint32_t)d->rank)
                ADD(notices_recv, h[2]);
        }
        if (nt + h[2] > cap) {
            cap = (nt + h[2]) * 2;
            uint32_t *t = realloc(touched, cap * sizeof(*t));
            if (!t)
                dsm_fatal(-ENOMEM, "out of memory");
            touched = t;
        }
        for (uint32_t i = 0; i < h[2]; i++) {
            uint32_t u;
            memcpy(&u, q + 4 * (size_t)i, 4);
            if (u >= d->nunits)
                goto bad;
            if (!d->u[u].bwriters)
                touched[nt++] = u;
            d->u[u].bwriters |= 1ull << h[0];
        }
        q += 4 * (size_t)h[2];
    }
    if (d->xg && nt && !(*mg_p = malloc(nt * sizeof(**mg_p))))
        dsm_fatal(-ENOMEM, "out of memory");
    for (size_t i = 0; i < nt; i++) {
        struct dsm_unit *x = &d->u[touched[i]];
        uint64_t w = x->bwriters;

        x->bwriters = 0;
        if (d->xg) {
            union_xg(d, touched[i], w, pf, npf, *mg_p, nmg);
        } else if (x->home == d->rank) {
            uint64_t keep = 0;
            if (!(w & (w - 1)) && !(w & me) && (x->copyset & w))
                keep = w;
            x->copyset = keep;
            /* a unit somebody fetched once stays tracked: it may be read
             * again without asking us (pull) */
            x->state = keep || x->sticky ? U_CLEAN : U_EXCL;
            d->uprot[touched[i]] = keep || x->sticky ? P_READ : P_RW;
        } else if (w != me) {
            if (x->pf == PF_FLIGHT)
                x->pf = PF_STALE;
            if (x->state == U_CLEAN || x->state == U_DIRTY) {
                x->state = U_INVALID;
                d->uprot[touched[i]] = P_NONE;
                ADD(invalidations, 1);
                if (x->used && *npf < (size_t)d->cfg.prefetch && !x->pf)
                    pf[(*npf)++] = touched[i];
                x->used = 0;
            }
        }
    }
    if (nt) {
        qsort(touched, nt, sizeof(*touched), cmp_u32);
        prot_runs(d, touched, nt);
    }
    free(touched);
    return 0;
bad:
    free(touched);
    return -CVIA_EPROTO;
}

int cvia_dsm_barrier(void)
{
    struct dsm *d = &dsm__g;
    struct dsm_buf b = { 0 };
    struct dsm_hdr h = { .type = M_BAR_ARRIVE };
    struct dsm_mail *m;
    uint32_t *pf = NULL, *mg = NULL;
    size_t npf = 0, nmg = 0;
    double t0;
    int rc;

    if (!d->up)
        return -CVIA_ENOINIT;
    if (d->scratch)
        return 0;
    t0 = cvia__clock_s();
    if (d->grp) {          /* one memory: meet on the host's counter */
        dsm_group_barrier(d);
        cvia_spin_lock(d->lk);
        d->epoch++;
        cvia_spin_unlock(d->lk);
        ADD(barriers, 1);
        d->st.barrier_time += cvia__clock_s() - t0;
        return 0;
    }
    if (d->size == 1) {
        /* alone: nobody to meet and nothing to tell (every unit is this
         * rank's own, exclusive, never twinned). The epoch moves as after
         * a barrier, without the round trip through the service thread
         * (two messages, a credit write and two wake-ups: 0.36 ms a
         * barrier, 15-25 % of SOR's and ocean's time on one rank) */
        dsm_end_interval(d, 1);
        cvia_spin_lock(d->lk);
        dsm_log_gc(d);
        memcpy(d->bar_vt, d->vt, sizeof(*d->vt));
        d->epoch++;
        cvia_spin_unlock(d->lk);
        ADD(barriers, 1);
        d->st.barrier_time += cvia__clock_s() - t0;
        return 0;
    }
    if (d->cfg.prefetch && !(pf = malloc((size_t)d->cfg.prefetch * sizeof(*pf))))
        return -ENOMEM;
    dsm_end_interval(d, 1);
    cvia_spin_lock(d->lk);
    dsm_own_since_barrier(d, &b);
    h.a = d->epoch;
    cvia_spin_unlock(d->lk);
    dsm_send(d, 0, &h, b.p, b.len);
    dsm_buf_free(&b);

    m = dsm_mbox_wait(d, M_BAR_RELEASE, 0, h.a);
    cvia_spin_lock(d->lk);
    rc = apply_union(d, m->data, m->len, pf, &npf, &mg, &nmg);
    dsm_log_gc(d);
    memcpy(d->bar_vt, d->vt, (size_t)d->size * sizeof(*d->vt));
    d->epoch++;
    cvia_spin_unlock(d->lk);
    dsm_kick(d);   /* fetches that waited for this epoch */
    if (rc)
        dsm_fatal(rc, "barrier: malformed write notices");
    dsm_merge_list(d, mg, nmg);
    free(mg);
    dsm_prefetch(d, pf, npf);
    free(pf);
    dsm_mail_free(m);
    ADD(barriers, 1);
    d->st.barrier_time += cvia__clock_s() - t0;
    return 0;
}

/* Rank 0's service thread: one more rank arrived. */
void dsm_on_bar_arrive(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len)
{
    if (d->rank != 0)
        dsm_fatal(-CVIA_EPROTO, "rank %d sent a barrier arrival to rank %d", h->src, d->rank);
    if (len)
        dsm_buf_put(&d->bar_union, p, len);
    if (++d->bar_count < d->size)
        return;
    struct dsm_hdr r = { .type = M_BAR_RELEASE, .a = h->a };
    for (int k = 0; k < d->size; k++)
        dsm_send(d, k, &r, d->bar_union.p, d->bar_union.len);
    d->bar_union.len = 0;
    d->bar_count = 0;
}

/* ---- the end -------------------------------------------------------------------- */

/* Rank 0's service thread. Round 0 makes sure every rank is done with
 * the DSM; round 1 then collects counters that can no longer change. */
void dsm_on_fin_arrive(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len)
{
    if (d->rank != 0 || h->src < 0 || h->src >= d->size || h->a > 1)
        dsm_fatal(-CVIA_EPROTO, "a stray end message from rank %d", h->src);
    if (h->a == 1) {
        if (!d->fin_stats && !(d->fin_stats = calloc((size_t)d->size, sizeof(*d->fin_stats))))
            dsm_fatal(-ENOMEM, "out of memory");
        memcpy(&d->fin_stats[h->src], p,
               len < sizeof(cvia_dsm_stats_t) ? len : sizeof(cvia_dsm_stats_t));
    }
    if (++d->fin_count < d->size)
        return;
    struct dsm_hdr r = { .type = M_FIN_RELEASE, .a = h->a };
    for (int k = 0; k < d->size; k++)
        dsm_send(d, k, &r, NULL, 0);
    d->fin_count = 0;
}

/* Every rank arrives; rank 0 prints the counters; nobody asks anything of
 * anybody afterwards, so the service threads may stop. */
int dsm_fin(struct dsm *d)
{
    cvia_dsm_stats_t s;

    if (!d->scratch)
        dsm_end_interval(d, 0);
    /* no poll notes from here on, and none left in an outbox: a peer may
     * leave once every rank has arrived */
    atomic_store(&d->in_fin, 1);
    for (int nout = 1; nout;) {
        cvia_spin_lock(&d->send_lock);
        nout = d->nout || atomic_load(&d->pflush);
        cvia_spin_unlock(&d->send_lock);
        if (nout)
            sched_yield();
    }
    for (uint32_t round = 0; round < 2; round++) {
        struct dsm_hdr h = { .type = M_FIN_ARRIVE, .a = round };
        dsm_stats_snapshot(d, &s);
        dsm_send(d, 0, &h, &s, round ? sizeof(s) : 0);
        dsm_mail_free(dsm_mbox_wait(d, M_FIN_RELEASE, 0, round));
    }
    if (d->rank == 0 && d->stats_mode != DSM_STATS_NONE && d->fin_stats) {
        FILE *out = d->stats_out ? d->stats_out : stdout;
        int own = 0;
        if (d->cfg.stats_file[0]) {
            FILE *f = fopen(d->cfg.stats_file, "w");
            if (f) {
                out = f;
                own = 1;
            } else {
                dsm_warn("CVIA_DSM_STATS_FILE %s: %s; printing to stdout",
                         d->cfg.stats_file, strerror(errno));
            }
        }
        dsm_stats_print(d, d->fin_stats, d->size, out, d->stats_mode == DSM_STATS_JSON);
        if (own)
            fclose(out);
        else
            fflush(out);
    }
    return 0;
}

/* ---- PARMACS: a process created by CREATE acquires from its creator, and
 * its end is a release to rank 0 -------------------------------------------------- */

static void send_all_notices(struct dsm *d, int dest, struct dsm_hdr *h)
{
    struct dsm_buf b = { 0 };
    uint32_t *zero = calloc((size_t)d->size, sizeof(*zero));

    if (!zero)
        dsm_fatal(-ENOMEM, "out of memory");
    dsm_end_interval(d, 0);
    cvia_spin_lock(d->lk);
    dsm_records_since(d, zero, &b);
    cvia_spin_unlock(d->lk);
    dsm_send(d, dest, h, b.p, b.len);
    dsm_buf_free(&b);
    free(zero);
}

static int take_notices(struct dsm *d, struct dsm_mail *m)
{
    int rc;

    cvia_spin_lock(d->lk);
    rc = dsm_records_apply(d, m->data, m->len);
    cvia_spin_unlock(d->lk);
    if (rc)
        dsm_fatal(rc, "malformed write notices from rank %d", m->h.src);
    dsm_merge_acquired(d);
    dsm_mail_free(m);
    return 0;
}

int dsm_create_send(int proc)
{
    struct dsm *d = &dsm__g;
    struct dsm_hdr h = { .type = M_START, .a = (uint32_t)proc };

    if (!d->up)
        return -CVIA_ENOINIT;
    if (proc <= 0 || proc >= d->size)
        return -ESRCH;
    send_all_notices(d, proc, &h);
    return 0;
}

int dsm_become(int proc)
{
    struct dsm *d = &dsm__g;
    int rc;

    cvia_spin_lock(d->lk);
    rc = d->scratch ? dsm_map_real(d) : 0;
    cvia_spin_unlock(d->lk);
    if (rc) {
        dsm_err("mapping the shared region: %s", strerror(-rc));
        return rc;
    }
    return take_notices(d, dsm_mbox_wait(d, M_START, 0, (uint32_t)proc));
}

int dsm_end_send(void)
{
    struct dsm *d = &dsm__g;
    struct dsm_hdr h = { .type = M_END };

    send_all_notices(d, 0, &h);
    return 0;
}

int dsm_wait_end(void)
{
    struct dsm *d = &dsm__g;

    return take_notices(d, dsm_mbox_wait(d, M_END, -1, UINT32_MAX));
}
