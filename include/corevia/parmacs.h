/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/**
 * @file parmacs.h
 * @brief The PARMACS macros that SPLASH-2 programs are written in (ANL's
 *        originals and the Splash-3 revision), on the corevia DSM, one
 *        process per "thread".
 *
 * The same macros are in share/corevia/c.m4.corevia (ANL's conventions)
 * and c.m4.corevia.splash3 (Splash-3's) for programs built the SPLASH way
 * (`m4 c.m4.corevia prog.C > prog.c`). Compile with -DCVIA_PARMACS_NULL
 * for the sequential (uniprocessor) version of the same source, as
 * SPLASH's c.m4.null: no DSM, G_MALLOC is calloc, CREATE is an error.
 * Compile with -DCVIA_PARMACS_THREADS (and -pthread) for the same source
 * on POSIX threads, as SPLASH's c.m4.null.POSIX: CREATE starts a thread,
 * memory is shared by the hardware (the "threads" builds, APP-threads).
 * This header is ANL's convention: G_MALLOC is an expression.
 *
 * Process model. Run the program with cvia-run, one rank per process the
 * program creates (1 + the number of processes CREATE starts). Every rank
 * runs main from the start; on ranks other than 0 the shared region is
 * private scratch memory and standard output is muted until the rank's
 * CREATE, so they replay main: G_MALLOC returns the same addresses,
 * LOCKINIT the same ids, and the private heap is built by the same calls.
 * Rank k then becomes process k: rank 0 ships it the writable image of the
 * main executable (.data and .bss) as it is at the call, which the rank
 * lays over its own, it maps the real shared region, acquires from rank 0
 * (everything rank 0 wrote before CREATE is visible) and calls the
 * function; when it returns, the process's writes are released to rank 0
 * (WAIT_FOR_END acquires them) and the rank waits, still serving its home
 * pages, until MAIN_END on rank 0 ends the job. A word of the image that
 * holds, on rank 0, an address inside one of rank 0's own mappings other
 * than the shared region (its heap, stack, libraries, the executable) is
 * not taken where the replay left another address (or NULL) there: that
 * memory is not shipped, and the replayed pointer names the replayed
 * object. So
 * globals that the master computed from its input, the clock or random
 * numbers arrive as the master had them; heap objects arrive as the replay
 * built them. The stdin that rank 0 read before a CREATE is replayed to the
 * ranks that replay main (see cvia-dsm(7), "PARMACS").
 *
 * MAIN_ENV starts the DSM before main (a constructor), so that G_MALLOC
 * and stdin work before MAIN_INITENV; without it MAIN_INITENV or the first
 * G_MALLOC or LOCKINIT starts it. G_MALLOC and the *INIT macros that make
 * locks may be used anywhere, also after the first CREATE and in created
 * processes: there each call asks rank 0, which has every rank install the
 * memory or lock before it answers (see cvia-dsm(7)).
  */
#ifndef COREVIA_PARMACS_H
#define COREVIA_PARMACS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef CVIA_PARMACS_THREADS
#include <errno.h>
#endif

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

/* The PARMACS names below are C macros unless CVIA_PARMACS_NO_MACROS is
 * defined (the m4 files define it: m4 expands those names itself, and the
 * program's own identifiers and system headers meet no macro of ours).
 * Splash-3's PAGE_SIZE, for alignment arithmetic, is 4096 unless the
 * program or a system header (<sys/user.h>) defined it before; the m4
 * files define it for Splash-3 only (CVIA_PARMACS_PAGE_SIZE): ANL's
 * macros have none, and ANL programs that use it define their own. */
#if !defined(PAGE_SIZE) && (!defined(CVIA_PARMACS_NO_MACROS) || defined(CVIA_PARMACS_PAGE_SIZE))
#define PAGE_SIZE 4096
#endif

/* First and second argument of a variadic use, with defaults: the
 * optional arguments of CREATE and G_MALLOC. */
#define CVIA_PARMACS_A1(a, ...) a
#define CVIA_PARMACS_A2(a, b, ...) b

#if defined(CVIA_PARMACS_NULL) || defined(CVIA_PARMACS_THREADS)
/* G_MALLOC of the sequential and the threads builds: page-aligned and
 * zeroed, as the DSM's memory; aligned_alloc (C11) wants a multiple of the
 * alignment. */
static inline void *cvia_parmacs_page_malloc(size_t n)
{
    size_t len = (n + 4095) / 4096 * 4096;
    void *p = aligned_alloc(4096, len ? len : 4096);
    if (p)
        memset(p, 0, len ? len : 4096);
    return p;
}
#endif

#ifdef CVIA_PARMACS_NULL
/* ---- sequential: the uniprocessor version of the same source ---------------- */

typedef struct { int id; } cvia_parmacs_lock_t;
typedef struct { int sub, count; } cvia_parmacs_gs_t;
typedef struct { int flag; } cvia_parmacs_pause_t;
typedef struct { int waiters; } cvia_parmacs_cond_t;

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

/* A uniprocessor cannot start another process; Splash-3's CREATE(fn, 1)
 * (the caller alone) is just the call. */
static inline void cvia_parmacs_null_create(void (*fn)(void), long n)
{
    if (n == 0 || n > 1) {
        fprintf(stderr, "No more processors -- this is a uniprocessor version!\n");
        exit(-1);
    }
    fn();
}

/* Nobody else can signal: a wait would never end. */
static inline void cvia_parmacs_null_cond_wait(void)
{
    fprintf(stderr, "CONDVARWAIT in a uniprocessor run: no other process can signal\n");
    exit(-1);
}

#define CVIA_PARMACS_NPROCS()   1
#define CVIA_PARMACS_ME()       0
#define CVIA_PARMACS_STATS(json) ((void)(json))

#ifndef CVIA_PARMACS_NO_MACROS
#define MAIN_ENV
#define EXTERN_ENV
#define MAIN_INITENV(...)       ((void)0)
#define MAIN_END                exit(0)
#define G_MALLOC(...)           cvia_parmacs_page_malloc(CVIA_PARMACS_A1(__VA_ARGS__, 0))
#define G_MALLOC_HOME(size, h)  cvia_parmacs_page_malloc(size)
#define NU_MALLOC(...)          cvia_parmacs_page_malloc(CVIA_PARMACS_A1(__VA_ARGS__, 0))
#define LOCKINIT(n)             ((n).id = 0)
#define LOCK(n)                 ((void)0)
#define UNLOCK(n)               ((void)0)
#define ALOCKINIT(a, k)         ((void)(a), (void)(k))
#define ALOCK(n, i)             ((void)(i))
#define AULOCK(n, i)            ((void)(i))
#define BARRIER(n, k)           ((void)(k))
#define GSINIT(n)               ((n).sub = (n).count = 0)
#define GETSUB(n, s, l, p)      ((s) = cvia_parmacs_null_getsub(&(n), (l), (p)))
#define PAUSEINIT(n)            ((n).flag = 0)
#define CLEARPAUSE(n)           ((n).flag = 0)
#define SETPAUSE(n)             ((n).flag = 1)
#define EVENT(n)                ((n).flag = 1)
#define WAITPAUSE(n)            ((void)0)
#define PAUSE(n)                ((void)0)
#define CONDVARINIT(c)          ((c).waiters = 0)
#define CONDVARWAIT(c, l)       cvia_parmacs_null_cond_wait()
#define CONDVARSIGNAL(c)        ((void)0)
#define CONDVARBCAST(c)         ((void)0)
#define CREATE(...)             cvia_parmacs_null_create(CVIA_PARMACS_A1(__VA_ARGS__, 0), \
                                                         CVIA_PARMACS_A2(__VA_ARGS__, 0, 0))
#define WAIT_FOR_END(n)         ((void)(n))
#define GET_PID(x)              ((x) = 0)
#endif



#elif defined(CVIA_PARMACS_THREADS)
/* ---- POSIX threads: the same source on one shared address space ------------------ */
/* What SPLASH's c.m4.null.POSIX gives: every process a pthread of this
 * one process, memory shared by the hardware. The state below (the thread
 * table and each thread's number) is in weak definitions, so that a
 * program of several files that all include this header has one copy. */

#include <pthread.h>

typedef struct { pthread_mutex_t m; } cvia_parmacs_lock_t;
typedef struct { pthread_mutex_t m; int sub, count; } cvia_parmacs_gs_t;
typedef struct { pthread_mutex_t m; pthread_cond_t c; int flag; } cvia_parmacs_pause_t;
typedef struct { pthread_cond_t c; } cvia_parmacs_cond_t;
/* BARRIER(b, n): the count comes with each use (ANL's BARINIT has none),
 * so a generation barrier of a mutex and a condition variable. */
typedef struct { pthread_mutex_t m; pthread_cond_t c; int in; unsigned gen; } cvia_parmacs_bar_t;

/* The most processes one run may create (CREATE beyond it is an error). */
#define CVIA_PARMACS_MAX_THREADS 1024

__attribute__((weak)) __thread int cvia_parmacs_thr_me;
__attribute__((weak)) pthread_mutex_t cvia_parmacs_thr_mu = PTHREAD_MUTEX_INITIALIZER;
__attribute__((weak)) pthread_t cvia_parmacs_thr_tab[CVIA_PARMACS_MAX_THREADS];
/* processes created (the next one's number is created + 1); joined */
__attribute__((weak)) int cvia_parmacs_thr_created, cvia_parmacs_thr_joined;

static inline void cvia_parmacs_thr_die(const char *what, int err)
{
    fprintf(stderr, "parmacs (threads): %s: %s\n", what, strerror(err));
    exit(-1);
}

static inline void cvia_parmacs_thr_mutex_init(pthread_mutex_t *m)
{
    int e = pthread_mutex_init(m, NULL);
    if (e)
        cvia_parmacs_thr_die("pthread_mutex_init", e);
}

static inline void cvia_parmacs_thr_cond_init(pthread_cond_t *c)
{
    int e = pthread_cond_init(c, NULL);
    if (e)
        cvia_parmacs_thr_die("pthread_cond_init", e);
}

static inline void cvia_parmacs_thr_alock_init(cvia_parmacs_lock_t *a, long n)
{
    for (long i = 0; i < n; i++)
        cvia_parmacs_thr_mutex_init(&a[i].m);
}

static inline void cvia_parmacs_thr_bar_init(cvia_parmacs_bar_t *b)
{
    cvia_parmacs_thr_mutex_init(&b->m);
    cvia_parmacs_thr_cond_init(&b->c);
    b->in = 0;
    b->gen = 0;
}

/* The n-th arrival releases the n - 1 waiting; a new generation starts. */
static inline void cvia_parmacs_thr_barrier(cvia_parmacs_bar_t *b, long n)
{
    pthread_mutex_lock(&b->m);
    if (++b->in >= n) {
        b->in = 0;
        b->gen++;
        pthread_cond_broadcast(&b->c);
    } else {
        unsigned g = b->gen;
        while (g == b->gen)
            pthread_cond_wait(&b->c, &b->m);
    }
    pthread_mutex_unlock(&b->m);
}

static inline void cvia_parmacs_thr_gs_init(cvia_parmacs_gs_t *g)
{
    cvia_parmacs_thr_mutex_init(&g->m);
    g->sub = g->count = 0;
}

/* As the DSM's: the next subscript up to last, then -1 to each caller; the
 * nprocs-th -1 resets the counter for the next loop. */
static inline int cvia_parmacs_thr_getsub(cvia_parmacs_gs_t *g, int last, int nprocs)
{
    int s;
    pthread_mutex_lock(&g->m);
    if (g->sub <= last) {
        s = g->sub++;
    } else {
        s = -1;
        if (++g->count == nprocs)
            g->sub = g->count = 0;
    }
    pthread_mutex_unlock(&g->m);
    return s;
}

static inline void cvia_parmacs_thr_pause_init(cvia_parmacs_pause_t *p)
{
    cvia_parmacs_thr_mutex_init(&p->m);
    cvia_parmacs_thr_cond_init(&p->c);
    p->flag = 0;
}

static inline void cvia_parmacs_thr_pause_set(cvia_parmacs_pause_t *p, int v)
{
    pthread_mutex_lock(&p->m);
    p->flag = v;
    if (v)
        pthread_cond_broadcast(&p->c);
    pthread_mutex_unlock(&p->m);
}

/* Returns once the flag is set (it stays set until CLEARPAUSE). */
static inline void cvia_parmacs_thr_pause_wait(cvia_parmacs_pause_t *p)
{
    pthread_mutex_lock(&p->m);
    while (!p->flag)
        pthread_cond_wait(&p->c, &p->m);
    pthread_mutex_unlock(&p->m);
}

struct cvia_parmacs_thr_start { void (*fn)(void); int me; };

static inline void *cvia_parmacs_thr_main(void *arg)
{
    struct cvia_parmacs_thr_start st = *(struct cvia_parmacs_thr_start *)arg;
    free(arg);
    cvia_parmacs_thr_me = st.me;
    st.fn();
    return NULL;
}

static inline void cvia_parmacs_thr_spawn(void (*fn)(void))
{
    struct cvia_parmacs_thr_start *st;
    int e, k;

    pthread_mutex_lock(&cvia_parmacs_thr_mu);
    k = cvia_parmacs_thr_created;
    if (k >= CVIA_PARMACS_MAX_THREADS) {
        fprintf(stderr, "parmacs (threads): CREATE: more than %d processes\n",
                CVIA_PARMACS_MAX_THREADS);
        exit(-1);
    }
    st = (struct cvia_parmacs_thr_start *)malloc(sizeof *st);
    if (!st)
        cvia_parmacs_thr_die("CREATE", ENOMEM);
    st->fn = fn;
    st->me = k + 1;
    e = pthread_create(&cvia_parmacs_thr_tab[k], NULL, cvia_parmacs_thr_main, st);
    if (e)
        cvia_parmacs_thr_die("CREATE: pthread_create", e);
    cvia_parmacs_thr_created = k + 1;
    pthread_mutex_unlock(&cvia_parmacs_thr_mu);
}

/* CREATE(fn): one new thread (ANL). CREATE(fn, P): P - 1 new threads,
 * then fn in the caller (Splash-3). */
static inline void cvia_parmacs_thr_create(void (*fn)(void), long n)
{
    if (n <= 0) {
        cvia_parmacs_thr_spawn(fn);
        return;
    }
    for (long i = 1; i < n; i++)
        cvia_parmacs_thr_spawn(fn);
    fn();
}

/* Joins the threads created and not yet joined, n at most (ANL programs
 * pass the number created, Splash-3 programs the total). */
static inline void cvia_parmacs_thr_wait_for_end(long n)
{
    for (long i = 0; i < n; i++) {
        pthread_t t;
        int e;
        pthread_mutex_lock(&cvia_parmacs_thr_mu);
        if (cvia_parmacs_thr_joined >= cvia_parmacs_thr_created) {
            pthread_mutex_unlock(&cvia_parmacs_thr_mu);
            return;
        }
        t = cvia_parmacs_thr_tab[cvia_parmacs_thr_joined++];
        pthread_mutex_unlock(&cvia_parmacs_thr_mu);
        e = pthread_join(t, NULL);
        if (e)
            cvia_parmacs_thr_die("WAIT_FOR_END: pthread_join", e);
    }
}

/* The number of processes is the program's to choose (-p): 0, unknown. */
#define CVIA_PARMACS_NPROCS()   0
#define CVIA_PARMACS_ME()       cvia_parmacs_thr_me
#define CVIA_PARMACS_STATS(json) ((void)(json))

#ifndef CVIA_PARMACS_NO_MACROS
#define MAIN_ENV
#define EXTERN_ENV
#define MAIN_INITENV(...)       ((void)0)
#define MAIN_END                exit(0)
#define G_MALLOC(...)           cvia_parmacs_page_malloc(CVIA_PARMACS_A1(__VA_ARGS__, 0))
#define G_MALLOC_HOME(size, h)  cvia_parmacs_page_malloc(size)
#define NU_MALLOC(...)          cvia_parmacs_page_malloc(CVIA_PARMACS_A1(__VA_ARGS__, 0))
#define LOCKINIT(n)             cvia_parmacs_thr_mutex_init(&(n).m)
#define LOCK(n)                 pthread_mutex_lock(&(n).m)
#define UNLOCK(n)               pthread_mutex_unlock(&(n).m)
#define ALOCKINIT(n, k)         cvia_parmacs_thr_alock_init((n), (k))
#define ALOCK(n, i)             pthread_mutex_lock(&(n)[i].m)
#define AULOCK(n, i)            pthread_mutex_unlock(&(n)[i].m)
#define BARDEC(n)               cvia_parmacs_bar_t n;
#define BARINIT(n, ...)         cvia_parmacs_thr_bar_init(&(n))
#define BARRIER(n, k)           cvia_parmacs_thr_barrier(&(n), (k))
#define GSINIT(n)               cvia_parmacs_thr_gs_init(&(n))
#define GETSUB(n, s, l, p)      ((s) = cvia_parmacs_thr_getsub(&(n), (l), (p)))
#define PAUSEINIT(n)            cvia_parmacs_thr_pause_init(&(n))
#define CLEARPAUSE(n)           cvia_parmacs_thr_pause_set(&(n), 0)
#define SETPAUSE(n)             cvia_parmacs_thr_pause_set(&(n), 1)
#define EVENT(n)                cvia_parmacs_thr_pause_set(&(n), 1)
#define WAITPAUSE(n)            cvia_parmacs_thr_pause_wait(&(n))
#define PAUSE(n)                cvia_parmacs_thr_pause_wait(&(n))
#define CONDVARINIT(v)          cvia_parmacs_thr_cond_init(&(v).c)
#define CONDVARWAIT(v, l)       pthread_cond_wait(&(v).c, &(l).m)
#define CONDVARSIGNAL(v)        pthread_cond_signal(&(v).c)
#define CONDVARBCAST(v)         pthread_cond_broadcast(&(v).c)
#define CREATE(...)             cvia_parmacs_thr_create(CVIA_PARMACS_A1(__VA_ARGS__, 0), \
                                    (long)CVIA_PARMACS_A2(__VA_ARGS__, 0, 0))
#define WAIT_FOR_END(n)         cvia_parmacs_thr_wait_for_end(n)
#define GET_PID(x)              ((x) = cvia_parmacs_thr_me)
#endif

#else
/* ---- the corevia DSM ------------------------------------------------------------ */

#include <corevia/dsm.h>

/* Handles live in shared memory (SPLASH declares them inside G_MALLOC'd
 * structs): a lock is its DSM lock id; a lock array (ALOCKDEC) is an array
 * of them, indexed directly. */
typedef struct { int id; } cvia_parmacs_lock_t;
typedef struct { cvia_parmacs_lock_t lock; int sub, count; } cvia_parmacs_gs_t;
typedef struct { cvia_parmacs_lock_t lock; volatile int flag; } cvia_parmacs_pause_t;
/* A condition variable: waiters take tickets, signals grant them in order. */
typedef struct { cvia_parmacs_lock_t lock; int tickets, granted; } cvia_parmacs_cond_t;

CVIA_API void  cvia_parmacs_boot(void);
CVIA_API void  cvia_parmacs_init(void);
CVIA_API void  cvia_parmacs_main_end(void) __attribute__((noreturn));
CVIA_API void *cvia_parmacs_malloc(size_t size, int home);
CVIA_API void *cvia_parmacs_malloc_on(size_t size, long proc);
CVIA_API void  cvia_parmacs_lock_init(cvia_parmacs_lock_t *l);
CVIA_API void  cvia_parmacs_lock(int id);
CVIA_API void  cvia_parmacs_unlock(int id);
CVIA_API void  cvia_parmacs_alock_init(cvia_parmacs_lock_t *a, long n);
CVIA_API void  cvia_parmacs_barrier(int n);
CVIA_API void  cvia_parmacs_gs_init(cvia_parmacs_gs_t *g);
CVIA_API int   cvia_parmacs_getsub(cvia_parmacs_gs_t *g, int last, int nprocs);
CVIA_API void  cvia_parmacs_pause_init(cvia_parmacs_pause_t *p);
CVIA_API void  cvia_parmacs_pause_set(cvia_parmacs_pause_t *p, int v);
CVIA_API void  cvia_parmacs_pause_wait(cvia_parmacs_pause_t *p);
CVIA_API void  cvia_parmacs_cond_init(cvia_parmacs_cond_t *c);
CVIA_API void  cvia_parmacs_cond_wait(cvia_parmacs_cond_t *c, cvia_parmacs_lock_t *l);
CVIA_API void  cvia_parmacs_cond_signal(cvia_parmacs_cond_t *c, int all);
CVIA_API void  cvia_parmacs_create(void (*fn)(void));
CVIA_API void  cvia_parmacs_create_n(void (*fn)(void), long n);
CVIA_API void  cvia_parmacs_wait_for_end(long n);
/* Not PARMACS: the number of ranks (the processes to create is one less)
 * and this process's number, for programs that size themselves. */
CVIA_API int   cvia_parmacs_nprocs(void);
CVIA_API int   cvia_parmacs_me(void);

/* MAIN_ENV: start the DSM before main, so that G_MALLOC before
 * MAIN_INITENV and the replay of stdin work. */
#define CVIA_PARMACS_BOOT \
    __attribute__((constructor)) static void cvia_parmacs_main_env(void) { cvia_parmacs_boot(); }

#define CVIA_PARMACS_NPROCS()   cvia_parmacs_nprocs()
#define CVIA_PARMACS_ME()       cvia_parmacs_me()
#define CVIA_PARMACS_STATS(json) cvia_dsm_stats_at_exit((json), NULL)

#ifndef CVIA_PARMACS_NO_MACROS
#define MAIN_ENV                CVIA_PARMACS_BOOT
#define EXTERN_ENV
#define MAIN_INITENV(...)       cvia_parmacs_init()
#define MAIN_END                cvia_parmacs_main_end()
/* G_MALLOC(size) or G_MALLOC(size, proc): proc, where given, is the
 * process whose memory should hold it (its home). */
#define G_MALLOC(...)           cvia_parmacs_malloc_on(CVIA_PARMACS_A1(__VA_ARGS__, 0), \
                                    (long)CVIA_PARMACS_A2(__VA_ARGS__, -1, 0))
#define G_MALLOC_HOME(size, h)  cvia_parmacs_malloc((size), (h))
#define NU_MALLOC(...)          cvia_parmacs_malloc_on(CVIA_PARMACS_A1(__VA_ARGS__, 0), \
                                    (long)CVIA_PARMACS_A2(__VA_ARGS__, -1, 0))
#define LOCKINIT(n)             cvia_parmacs_lock_init(&(n))
#define LOCK(n)                 cvia_parmacs_lock((n).id)
#define UNLOCK(n)               cvia_parmacs_unlock((n).id)
#define ALOCKINIT(n, k)         cvia_parmacs_alock_init((n), (k))
#define ALOCK(n, i)             cvia_parmacs_lock((n)[i].id)
#define AULOCK(n, i)            cvia_parmacs_unlock((n)[i].id)
#define BARRIER(n, k)           cvia_parmacs_barrier(k)
#define GSINIT(n)               cvia_parmacs_gs_init(&(n))
#define GETSUB(n, s, l, p)      ((s) = cvia_parmacs_getsub(&(n), (l), (p)))
#define PAUSEINIT(n)            cvia_parmacs_pause_init(&(n))
#define CLEARPAUSE(n)           cvia_parmacs_pause_set(&(n), 0)
#define SETPAUSE(n)             cvia_parmacs_pause_set(&(n), 1)
#define EVENT(n)                cvia_parmacs_pause_set(&(n), 1)
#define WAITPAUSE(n)            cvia_parmacs_pause_wait(&(n))
#define PAUSE(n)                cvia_parmacs_pause_wait(&(n))
#define CONDVARINIT(c)          cvia_parmacs_cond_init(&(c))
#define CONDVARWAIT(c, l)       cvia_parmacs_cond_wait(&(c), &(l))
#define CONDVARSIGNAL(c)        cvia_parmacs_cond_signal(&(c), 0)
#define CONDVARBCAST(c)         cvia_parmacs_cond_signal(&(c), 1)
/* CREATE(fn): one new process (ANL). CREATE(fn, P): P - 1 new processes,
 * then fn in the caller (Splash-3). */
#define CREATE(...)             cvia_parmacs_create_n(CVIA_PARMACS_A1(__VA_ARGS__, 0), \
                                    (long)CVIA_PARMACS_A2(__VA_ARGS__, 0, 0))
/* Waits for the processes created and not yet waited for, n at most: ANL
 * programs pass the number created, Splash-3 programs the total. */
#define WAIT_FOR_END(n)         cvia_parmacs_wait_for_end(n)
#define GET_PID(x)              ((x) = cvia_parmacs_me())
#endif


#endif

/* ---- the same in both ------------------------------------------------------------ */

#ifndef CVIA_PARMACS_NO_MACROS
#define LOCKDEC(n)              cvia_parmacs_lock_t n;
#define ALOCKDEC(n, k)          cvia_parmacs_lock_t n[k];
#define AGETL(n, i)             ((n)[i])
#ifndef CVIA_PARMACS_THREADS
#define BARDEC(n)               int n;
#define BARINIT(n, ...)         ((n) = 0)
#endif
#define GSDEC(n)                cvia_parmacs_gs_t n;
#define PAUSEDEC(n)             cvia_parmacs_pause_t n;
#define CONDVARDEC(c)           cvia_parmacs_cond_t c;
#define G_FREE(...)             ((void)0)
#define CLOCK(x)                ((x) = cvia_parmacs_clock())
/* Region of interest (for simulators) and fences: a fence orders this
 * process's accesses; between processes, order comes from LOCK, BARRIER
 * and the pause and condition macros (release consistency). */
#define SPLASH3_ROI_BEGIN()     ((void)0)
#define SPLASH3_ROI_END()       ((void)0)
#define RELEASE_FENCE()         __atomic_thread_fence(__ATOMIC_RELEASE)
#define ACQUIRE_FENCE()         __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define FULL_FENCE()            __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif


#ifdef __cplusplus
}
#endif
#endif
