/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/**
 * @file parmacs.h
 * @brief The ANL PARMACS macros that SPLASH-2 programs are written in, on
 *        the corevia DSM, one process per "thread".
 *
 * The same macros are in share/corevia/c.m4.corevia for programs built the
 * SPLASH way (`m4 c.m4.corevia prog.C > prog.c`). Compile with
 * -DCVIA_PARMACS_NULL for the sequential (uniprocessor) version of the
 * same source, as SPLASH's c.m4.null: no DSM, G_MALLOC is calloc, CREATE
 * is an error.
 *
 * Process model. Run the program with cvia-run, one rank per process the
 * program creates (1 + the number of CREATE calls). Every rank runs main
 * from the start; on ranks other than 0 the shared region is private
 * scratch memory and standard output is muted until the rank's CREATE,
 * so they replay main deterministically: G_MALLOC returns the same
 * addresses, LOCKINIT the same ids, and every private global and heap
 * object holds, at the k-th CREATE, what it holds on rank 0 there. Rank k
 * then becomes process k: it maps the real shared region, acquires from
 * rank 0 (everything rank 0 wrote before CREATE is visible) and calls the
 * function; when it returns, the process's writes are released to rank 0
 * (WAIT_FOR_END acquires them) and the rank waits, still serving its home
 * pages, until MAIN_END on rank 0 ends the job. This works the same on
 * one host or many, needs no shipping of the process image, and costs
 * each rank the serial part of main; it requires that part to be
 * deterministic (no decision on time, pid or random seeds from the clock)
 * and not to depend on shared data written by created processes.
 *
 * G_MALLOC and the *INIT macros that make locks may be used anywhere,
 * also after the first CREATE and in created processes: there each call
 * asks rank 0, which has every rank install the memory or lock before it
 * answers (a round trip to rank 0 and one to every rank; see cvia-dsm(7)).
 */
#ifndef COREVIA_PARMACS_H
#define COREVIA_PARMACS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Microseconds: SPLASH's CLOCK unit. On the monotonic clock where the
 * program is compiled with POSIX visible (the usual case); under a strict
 * ISO C mode (-std=c11 without _POSIX_C_SOURCE or _GNU_SOURCE) time.h
 * declares neither clock_gettime nor CLOCK_MONOTONIC, and C11's
 * timespec_get (the realtime clock) stands in. */
static inline unsigned long cvia_parmacs_clock(void)
{
    struct timespec ts;
#if defined(CLOCK_MONOTONIC)
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);
#endif
    return (unsigned long)ts.tv_sec * 1000000ul + (unsigned long)ts.tv_nsec / 1000ul;
}

#ifdef CVIA_PARMACS_NULL
/* ---- sequential: the uniprocessor version of the same source ---------------- */

typedef struct { int id; } cvia_parmacs_lock_t;
typedef struct { int base, n; } cvia_parmacs_alock_t;
typedef struct { int sub, count; } cvia_parmacs_gs_t;
typedef struct { int flag; } cvia_parmacs_pause_t;

/* Page-aligned and zeroed, as the DSM's memory; aligned_alloc (C11)
 * wants a multiple of the alignment. */
static inline void *cvia_parmacs_null_malloc(size_t n)
{
    size_t len = (n + 4095) / 4096 * 4096;
    void *p = aligned_alloc(4096, len ? len : 4096);
    if (p)
        memset(p, 0, len ? len : 4096);
    return p;
}

static inline int cvia_parmacs_null_getsub(cvia_parmacs_gs_t *g, int last, int nprocs)
{
    int s;
    if (g->sub <= last) {
        s = g->sub++;
    } else {
        s = -1;
        if (++g->count == nprocs)
            g->sub = g->count = 0;
    }
    return s;
}

#define CVIA_PARMACS_NPROCS()   1
#define CVIA_PARMACS_ME()       0
#define CVIA_PARMACS_STATS(json) ((void)(json))

#define MAIN_ENV
#define EXTERN_ENV
#define MAIN_INITENV(...)       ((void)0)
#define MAIN_END                exit(0)
#define G_MALLOC(size)          cvia_parmacs_null_malloc(size)
#define G_MALLOC_HOME(size, h)  cvia_parmacs_null_malloc(size)
#define G_FREE(p)               ((void)(p))
#define NU_MALLOC(size, n)      cvia_parmacs_null_malloc(size)
#define LOCKDEC(n)              cvia_parmacs_lock_t n;
#define LOCKINIT(n)             ((n).id = 0)
#define LOCK(n)                 ((void)0)
#define UNLOCK(n)               ((void)0)
#define ALOCKDEC(n, k)          cvia_parmacs_alock_t n;
#define ALOCKINIT(a, k)         ((a).base = 0, (a).n = (k))
#define ALOCK(n, i)             ((void)(i))
#define AULOCK(n, i)            ((void)(i))
#define BARDEC(n)               int n;
#define BARINIT(n, ...)         ((n) = 0)
#define BARRIER(n, k)           ((void)(k))
#define GSDEC(n)                cvia_parmacs_gs_t n;
#define GSINIT(n)               ((n).sub = (n).count = 0)
#define GETSUB(n, s, l, p)      ((s) = cvia_parmacs_null_getsub(&(n), (l), (p)))
#define PAUSEDEC(n)             cvia_parmacs_pause_t n;
#define PAUSEINIT(n)            ((n).flag = 0)
#define CLEARPAUSE(n)           ((n).flag = 0)
#define SETPAUSE(n)             ((n).flag = 1)
#define EVENT(n)                ((n).flag = 1)
#define WAITPAUSE(n)            ((void)0)
#define PAUSE(n)                ((void)0)
#define CREATE(fn)              do { fprintf(stderr, "No more processors -- this is a " \
                                     "uniprocessor version!\n"); exit(-1); } while (0)
#define WAIT_FOR_END(n)         ((void)(n))
#define CLOCK(x)                ((x) = cvia_parmacs_clock())

#else
/* ---- the corevia DSM ------------------------------------------------------------ */

#include <corevia/dsm.h>

/* Handles live in shared memory (SPLASH declares them inside G_MALLOC'd
 * structs): a lock is its DSM lock id. */
typedef struct { int id; } cvia_parmacs_lock_t;
typedef struct { int base, n; } cvia_parmacs_alock_t;
typedef struct { cvia_parmacs_lock_t lock; int sub, count; } cvia_parmacs_gs_t;
typedef struct { cvia_parmacs_lock_t lock; volatile int flag; } cvia_parmacs_pause_t;

CVIA_API void  cvia_parmacs_init(void);
CVIA_API void  cvia_parmacs_main_end(void) __attribute__((noreturn));
CVIA_API void *cvia_parmacs_malloc(size_t size, int home);
CVIA_API void  cvia_parmacs_lock_init(cvia_parmacs_lock_t *l);
CVIA_API void  cvia_parmacs_lock(int id);
CVIA_API void  cvia_parmacs_unlock(int id);
CVIA_API void  cvia_parmacs_alock_init(cvia_parmacs_alock_t *a, int n);
CVIA_API void  cvia_parmacs_barrier(int n);
CVIA_API void  cvia_parmacs_gs_init(cvia_parmacs_gs_t *g);
CVIA_API int   cvia_parmacs_getsub(cvia_parmacs_gs_t *g, int last, int nprocs);
CVIA_API void  cvia_parmacs_pause_init(cvia_parmacs_pause_t *p);
CVIA_API void  cvia_parmacs_pause_set(cvia_parmacs_pause_t *p, int v);
CVIA_API void  cvia_parmacs_pause_wait(cvia_parmacs_pause_t *p);
CVIA_API void  cvia_parmacs_create(void (*fn)(void));
CVIA_API void  cvia_parmacs_wait_for_end(int n);
/* Not PARMACS: the number of ranks (the processes to create is one less)
 * and this process's number, for programs that size themselves. */
CVIA_API int   cvia_parmacs_nprocs(void);
CVIA_API int   cvia_parmacs_me(void);

#define CVIA_PARMACS_NPROCS()   cvia_parmacs_nprocs()
#define CVIA_PARMACS_ME()       cvia_parmacs_me()
#define CVIA_PARMACS_STATS(json) cvia_dsm_stats_at_exit((json), NULL)

#define MAIN_ENV
#define EXTERN_ENV
#define MAIN_INITENV(...)       cvia_parmacs_init()
#define MAIN_END                cvia_parmacs_main_end()
#define G_MALLOC(size)          cvia_parmacs_malloc((size), CVIA_DSM_HOME_DEFAULT)
#define G_MALLOC_HOME(size, h)  cvia_parmacs_malloc((size), (h))
#define G_FREE(p)               ((void)(p))
#define NU_MALLOC(size, n)      cvia_parmacs_malloc((size), CVIA_DSM_HOME_DEFAULT)
#define LOCKDEC(n)              cvia_parmacs_lock_t n;
#define LOCKINIT(n)             cvia_parmacs_lock_init(&(n))
#define LOCK(n)                 cvia_parmacs_lock((n).id)
#define UNLOCK(n)               cvia_parmacs_unlock((n).id)
#define ALOCKDEC(n, k)          cvia_parmacs_alock_t n;
#define ALOCKINIT(n, k)         cvia_parmacs_alock_init(&(n), (k))
#define ALOCK(n, i)             cvia_parmacs_lock((n).base + (i))
#define AULOCK(n, i)            cvia_parmacs_unlock((n).base + (i))
#define BARDEC(n)               int n;
#define BARINIT(n, ...)         ((n) = 0)
#define BARRIER(n, k)           cvia_parmacs_barrier(k)
#define GSDEC(n)                cvia_parmacs_gs_t n;
#define GSINIT(n)               cvia_parmacs_gs_init(&(n))
#define GETSUB(n, s, l, p)      ((s) = cvia_parmacs_getsub(&(n), (l), (p)))
#define PAUSEDEC(n)             cvia_parmacs_pause_t n;
#define PAUSEINIT(n)            cvia_parmacs_pause_init(&(n))
#define CLEARPAUSE(n)           cvia_parmacs_pause_set(&(n), 0)
#define SETPAUSE(n)             cvia_parmacs_pause_set(&(n), 1)
#define EVENT(n)                cvia_parmacs_pause_set(&(n), 1)
#define WAITPAUSE(n)            cvia_parmacs_pause_wait(&(n))
#define PAUSE(n)                cvia_parmacs_pause_wait(&(n))
#define CREATE(fn)              cvia_parmacs_create(fn)
#define WAIT_FOR_END(n)         cvia_parmacs_wait_for_end(n)
#define CLOCK(x)                ((x) = cvia_parmacs_clock())

#endif

#ifdef __cplusplus
}
#endif
#endif
