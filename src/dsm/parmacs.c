/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* PARMACS on the DSM: one process per "thread", CREATE by deterministic
 * replay (see include/corevia/parmacs.h for the model). Every function
 * here runs in application context: the ones that read or write shared
 * memory (GETSUB, PAUSE) take DSM faults like application code, and hold
 * no DSM-internal lock while they do. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <corevia/parmacs.h>
#include "dsm/dsm.h"

static int created;          /* CREATE calls seen (replayed or real) */
static int proc = -1;        /* the process this rank is; -1: replaying */
static int saved_stdout = -1;
static int late_calls;       /* replaying: G_MALLOC/LOCKINIT calls past CREATE 1 */

static void die(const char *fmt, int a, int b)
{
    fflush(stdout);
    fprintf(stderr, "corevia parmacs (rank %d): ", dsm__g.rank);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    exit(1);
}

static void check(int rc, const char *what)
{
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "corevia parmacs (rank %d): %s: %s\n", dsm__g.rank, what,
                cvia_strerror(rc));
        exit(1);
    }
}

void cvia_parmacs_init(void)
{
    check(dsm_init_common(NULL, NULL, 1), "starting the DSM");
    if (dsm__g.rank == 0) {
        proc = 0;
        return;
    }
    /* replay main quietly until this rank's CREATE */
    fflush(stdout);
    saved_stdout = dup(1);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 1);
        close(null);
    }
}

static void unmute(void)
{
    if (saved_stdout >= 0) {
        fflush(stdout);
        dup2(saved_stdout, 1);
        close(saved_stdout);
        saved_stdout = -1;
    }
}

void cvia_parmacs_main_end(void)
{
    if (proc < 0) {
        unmute();
        die("the program created %d processes; this rank (%d) was never one: run "
            "as many ranks as processes", created + 1, dsm__g.rank);
    }
    check(cvia_dsm_finalize(), "ending the DSM");
    exit(0);
}

/* Until the first CREATE every rank runs (or replays) the same main, so
 * G_MALLOC and LOCKINIT are collective calls that need no message. After
 * it they are "late" (dsm_alloc.c): a live process asks rank 0, and a rank
 * still replaying main asks rank 0 what rank 0's call returned. */
void *cvia_parmacs_malloc(size_t size, int home)
{
    void *p = NULL;
    uint32_t u0;

    if (!created) {
        check(cvia_dsm_alloc(size, home, &p), "G_MALLOC");
    } else if (proc >= 0) {
        check(dsm_alloc_late(size, home, &p), "G_MALLOC");
    } else {
        check(dsm_late_replay(late_calls++, &u0), "G_MALLOC");
        p = dsm__g.base + (size_t)u0 * dsm__g.unit;
    }
    return p;
}

/* @n locks with consecutive ids; the first one's id. */
static int make_locks(int n, const char *what)
{
    int id = -1, first = -1;
    uint32_t v;

    if (!created) {
        for (int i = 0; i < n; i++) {
            check(cvia_dsm_lock_create(&id), what);
            if (i == 0)
                first = id;
        }
    } else if (proc >= 0) {
        check(dsm_lock_create_late(n, &first), what);
    } else {
        check(dsm_late_replay(late_calls++, &v), what);
        first = (int)v;
    }
    return first;
}

void cvia_parmacs_lock_init(cvia_parmacs_lock_t *l)
{
    l->id = make_locks(1, "LOCKINIT");
}

void cvia_parmacs_alock_init(cvia_parmacs_alock_t *a, int n)
{
    if (n <= 0)
        die("ALOCKINIT of %d locks", n, 0);
    a->base = make_locks(n, "ALOCKINIT");
    a->n = n;
}

void cvia_parmacs_lock(int id)
{
    check(cvia_dsm_lock(id), "LOCK");
}

void cvia_parmacs_unlock(int id)
{
    check(cvia_dsm_unlock(id), "UNLOCK");
}

void cvia_parmacs_barrier(int n)
{
    if (proc >= 0 && n != dsm__g.size)
        die("BARRIER for %d processes in a job of %d ranks: every rank must be a "
            "process that takes part", n, dsm__g.size);
    check(cvia_dsm_barrier(), "BARRIER");
}

void cvia_parmacs_gs_init(cvia_parmacs_gs_t *g)
{
    cvia_parmacs_lock_init(&g->lock);
    g->sub = 0;
    g->count = 0;
}

int cvia_parmacs_getsub(cvia_parmacs_gs_t *g, int last, int nprocs)
{
    int s, id = g->lock.id;

    cvia_parmacs_lock(id);
    if (g->sub <= last) {
        s = g->sub++;
    } else {
        s = -1;
        if (++g->count == nprocs)
            g->sub = g->count = 0;
    }
    cvia_parmacs_unlock(id);
    return s;
}

void cvia_parmacs_pause_init(cvia_parmacs_pause_t *p)
{
    cvia_parmacs_lock_init(&p->lock);
    p->flag = 0;
}

void cvia_parmacs_pause_set(cvia_parmacs_pause_t *p, int v)
{
    int id = p->lock.id;
    cvia_parmacs_lock(id);
    p->flag = v;
    cvia_parmacs_unlock(id);
}

void cvia_parmacs_pause_wait(cvia_parmacs_pause_t *p)
{
    int id = p->lock.id;
    long nap = 10000;

    for (;;) {
        int f;
        cvia_parmacs_lock(id);
        f = p->flag;
        cvia_parmacs_unlock(id);
        if (f)
            return;
        struct timespec ts = { 0, nap };
        nanosleep(&ts, NULL);
        if (nap < 1000000)
            nap *= 2;
    }
}

void cvia_parmacs_create(void (*fn)(void))
{
    struct dsm *d = &dsm__g;
    int k = ++created;

    if (k >= d->size)
        die("CREATE of process %d in a job of %d ranks: run one rank per process",
            k, d->size);
    if (d->rank == 0) {
        check(dsm_create_send(k), "CREATE");
        return;
    }
    if (d->rank != k)
        return;   /* still replaying towards our own CREATE */
    unmute();
    proc = k;
    check(dsm_become(k), "CREATE");
    fn();
    /* the "thread" returned: release to rank 0 (WAIT_FOR_END), then keep
     * serving this rank's home units until the job ends */
    dsm_end_send();
    check(cvia_dsm_finalize(), "ending the DSM");
    exit(0);
}

void cvia_parmacs_wait_for_end(int n)
{
    if (proc != 0)
        die("WAIT_FOR_END on rank %d, which was never created (the program "
            "created %d processes)", dsm__g.rank, created + 1);
    for (int i = 0; i < n; i++)
        dsm_wait_end();
}

int cvia_parmacs_nprocs(void)
{
    return dsm__g.size;
}

int cvia_parmacs_me(void)
{
    return proc < 0 ? 0 : proc;   /* replaying: running process 0's main */
}
