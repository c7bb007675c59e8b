/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Conformance, ANL's conventions (c.m4.corevia): a program written the way
 * the original SPLASH-2 programs are, built with m4 as a user builds one.
 * One check per requirement, each reported on its own line:
 *   create     CREATE(fn) one process per call, WAIT_FOR_END(number created)
 *   globals    each process sees the creator's .data/.bss as they were at
 *              its CREATE, also values the replay cannot reproduce (pid,
 *              clock, rand), pointers into shared memory chosen from them,
 *              and pointers into the private heap, the executable and to
 *              functions
 *   stdin      the master's input (stdin) as the master read it, and a
 *              private heap array built from it
 *   gmalloc    G_MALLOC as an expression inside a condition, with a second
 *              argument (the home), G_MALLOC_F, and before MAIN_INITENV
 *   condvar    CONDVARWAIT/CONDVARSIGNAL/CONDVARBCAST
 *   alock      lock arrays indexed directly, ALOCK and AGETL
 *   headers    system headers before and after MAIN_ENV (built -Werror)
 * Prints "ok conform-anl N processes" when every check passed.
 * (m4 expands macro names in comments too: they are spelled in lower case
 * below.) Input on stdin: a count n, then n integers. */
#include <sys/user.h>
#include <stdio.h>
MAIN_ENV
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAXP   64
#define NSLOT  16
#define NARR   3000           /* longs: several pages of .bss */
#define NLOCKS 12
#define ROUNDS 20

struct GlobalMemory {
    LOCKDEC(idlock)
    LOCKDEC(cvlock)
    CONDVARDEC(turncv)
    CONDVARDEC(donecv)
    ALOCKDEC(locks, NLOCKS)
    BARDEC(start)
    int  nextid;
    int  turn, order[MAXP], norder, arrived;
    long counts[NLOCKS];
    /* what the master had at each creation */
    long pid_at[MAXP], rand_at[MAXP], clock_at[MAXP], data_at[MAXP], magic_at[MAXP];
    long arrsum_at[MAXP];
    long *slot_at[MAXP];
    long in_n, in_sum;
    long *early, *homed, *viaf;
    long slots[NSLOT];
    /* what each process found: a bit per failed item */
    int  bad_globals[MAXP], bad_stdin[MAXP], bad_gmalloc[MAXP];
    int  ended;
} *Global;

int P = 1;
/* private globals: .data (initialized) and .bss */
long g_data = 5;
long g_pid, g_rand, g_clock, g_idx, g_magic;
long g_arr[NARR];
long *g_slot;                  /* into shared memory, chosen by pid */
long *g_pstat = &g_arr[0];     /* into the executable's .bss */
long *g_heap;                  /* private heap, built from stdin */
long g_in_n, g_in_sum;
long (*g_fn)(long);
const char *g_name;
long *Early;                   /* G_MALLOC before MAIN_INITENV */

long twice(long x) { return 2 * x; }
long thrice(long x) { return 3 * x; }

/* the headers check: names a library header must not take from us */
static int unit = 1, rank = 2, size = 3, base = 4, home = 5, region = 6;

void Work()
{
    int MyNum, i, j, bad;
    long s;

    LOCK(Global->idlock)
    MyNum = Global->nextid++;
    UNLOCK(Global->idlock)

    /* globals: as the master had them at our creation */
    bad = 0;
    if (g_idx < 0 || g_idx >= MAXP)
        bad |= 1;
    else {
        if (g_pid != Global->pid_at[g_idx]) bad |= 2;
        if (g_rand != Global->rand_at[g_idx]) bad |= 4;
        if (g_clock != Global->clock_at[g_idx]) bad |= 8;
        if (g_data != Global->data_at[g_idx]) bad |= 16;
        if (g_magic != Global->magic_at[g_idx]) bad |= 32;
        for (s = 0, i = 0; i < NARR; i++)
            s += g_arr[i];
        if (s != Global->arrsum_at[g_idx]) bad |= 64;
        if (g_slot != Global->slot_at[g_idx]) bad |= 128;
    }
    if (g_pstat != &g_arr[7] || *g_pstat != g_arr[7]) bad |= 256;
    if (!g_fn || g_fn(21) != ((Global->in_n & 1) ? 63 : 42)) bad |= 512;
    if (!g_name || strcmp(g_name, (Global->in_n & 1) ? "odd" : "even")) bad |= 1024;
    Global->bad_globals[MyNum] = bad;

    /* stdin: the master's input, and the heap array built from it */
    bad = 0;
    if (g_in_n != Global->in_n || g_in_sum != Global->in_sum) bad |= 1;
    if (!g_heap) bad |= 2;
    else {
        for (s = 0, i = 0; i < g_in_n; i++)
            s += g_heap[i];
        if (s != 3 * Global->in_sum) bad |= 4;
    }
    Global->bad_stdin[MyNum] = bad;

    /* gmalloc: blocks the master made every way, seen from here */
    bad = 0;
    if (Early != Global->early) bad |= 1;
    for (i = 0; i < 512; i++) {
        if (Global->early[i] != 11L * i) bad |= 2;
        if (Global->homed[i] != 13L * i) bad |= 4;
        if (Global->viaf[i] != 17L * i) bad |= 8;
    }
    Global->bad_gmalloc[MyNum] = bad;

    BARRIER(Global->start, P)

    /* condvar: each process in turn (broadcast), then the last one in
     * wakes process 0 (signal) */
    LOCK(Global->cvlock)
    while (Global->turn != MyNum)
        CONDVARWAIT(Global->turncv, Global->cvlock)
    Global->order[Global->norder++] = MyNum;
    Global->turn++;
    CONDVARBCAST(Global->turncv)
    UNLOCK(Global->cvlock)
    LOCK(Global->cvlock)
    if (++Global->arrived == P)
        CONDVARSIGNAL(Global->donecv)
    if (MyNum == 0)
        while (Global->arrived < P)
            CONDVARWAIT(Global->donecv, Global->cvlock)
    UNLOCK(Global->cvlock)

    /* alock: three ways to one lock of an array */
    for (j = 0; j < ROUNDS; j++)
        for (i = 0; i < NLOCKS; i++) {
            switch ((i + j + MyNum) % 3) {
            case 0:
                ALOCK(Global->locks, i)
                Global->counts[i] += 1;
                AULOCK(Global->locks, i)
                break;
            case 1:
                LOCK(AGETL(Global->locks, i))
                Global->counts[i] += 1;
                UNLOCK(AGETL(Global->locks, i))
                break;
            default:
                LOCK(Global->locks[i])
                Global->counts[i] += 1;
                UNLOCK(Global->locks[i])
            }
        }

    BARRIER(Global->start, P)
    LOCK(Global->idlock)
    Global->ended++;
    UNLOCK(Global->idlock)
}

static int report(const char *name, int ok, const char *why)
{
    if (ok)
        printf("check %s ok\n", name);
    else
        printf("check %s FAIL: %s\n", name, why);
    return !ok;
}

int main(int argc, char *argv[])
{
    int i, fails = 0;
    long v, *p;
    char why[256];

    Early = (long *) G_MALLOC(512 * sizeof(long));
    MAIN_INITENV(,4000000)
    (void)argc; (void)argv;
    P = CVIA_PARMACS_NPROCS();
    if (P > MAXP) {
        fprintf(stderr, "conform-anl: at most %d processes\n", MAXP);
        exit(2);
    }
    if (scanf("%ld", &g_in_n) != 1 || g_in_n < 1 || g_in_n > 100000) {
        fprintf(stderr, "conform-anl: stdin must hold a count n (1..100000) and n integers\n");
        exit(2);
    }
    g_heap = (long *) malloc((size_t)g_in_n * sizeof(long));
    for (i = 0; i < g_in_n; i++) {
        if (scanf("%ld", &v) != 1) {
            fprintf(stderr, "conform-anl: stdin ended after %d of %ld integers\n", i, g_in_n);
            exit(2);
        }
        g_in_sum += v;
        g_heap[i] = 3 * v;
    }
    g_fn = (g_in_n & 1) ? thrice : twice;
    g_name = (g_in_n & 1) ? "odd" : "even";
    g_pstat = &g_arr[7];

    if ((Global = (struct GlobalMemory *) G_MALLOC(sizeof(struct GlobalMemory))) == NULL) {
        fprintf(stderr, "conform-anl: G_MALLOC failed\n");
        exit(2);
    }
    Global->homed = (long *) G_MALLOC(512 * sizeof(long), P > 1 ? 1 : 0);
    Global->viaf = (long *) G_MALLOC_F(512 * sizeof(long));
    Global->early = Early;
    for (i = 0; i < 512; i++) {
        Early[i] = 11L * i;
        Global->homed[i] = 13L * i;
        Global->viaf[i] = 17L * i;
    }
    LOCKINIT(Global->idlock)
    LOCKINIT(Global->cvlock)
    CONDVARINIT(Global->turncv)
    CONDVARINIT(Global->donecv)
    ALOCKINIT(Global->locks, NLOCKS)
    BARINIT(Global->start, P)
    Global->in_n = g_in_n;
    Global->in_sum = g_in_sum;

    /* values no replay can reproduce: the pid, the clock, rand seeded by both */
    srand((unsigned)(getpid() ^ time(NULL)));
    for (i = 1; i <= P; i++) {
        int k = i < P ? i : 0;            /* the master's own view last */
        g_idx = k;
        g_pid = getpid();
        CLOCK(g_clock)
        g_rand = rand();
        g_data = 5 + g_pid % 1000 + k;
        g_magic = 100 + k + (g_rand % 7) * 1000;
        for (v = 0, p = g_arr; p < g_arr + NARR; p++) {
            *p = (g_rand + (p - g_arr)) % 1009;
            v += *p;
        }
        g_slot = &Global->slots[(g_pid + k) % NSLOT];
        Global->pid_at[k] = g_pid;
        Global->rand_at[k] = g_rand;
        Global->clock_at[k] = g_clock;
        Global->data_at[k] = g_data;
        Global->magic_at[k] = g_magic;
        Global->arrsum_at[k] = v;
        Global->slot_at[k] = g_slot;
        if (k)
            CREATE(Work)
    }
    Work();
    WAIT_FOR_END(P - 1)

    why[0] = 0;
    if (Global->ended != P)
        snprintf(why, sizeof(why), "%d of %d processes ended", Global->ended, P);
    fails += report("create", Global->ended == P, why);
    for (i = 0, v = 0; i < P; i++)
        if (Global->bad_globals[i] && !v) {
            snprintf(why, sizeof(why), "process %d: mask %#x (1 idx 2 pid 4 rand 8 clock "
                     "16 data 32 magic 64 bss 128 shared ptr 256 exe ptr 512 fn 1024 str)",
                     i, Global->bad_globals[i]);
            v = 1;
        }
    fails += report("globals", !v, why);
    for (i = 0, v = 0; i < P; i++)
        if (Global->bad_stdin[i] && !v) {
            snprintf(why, sizeof(why), "process %d: mask %#x (1 values 2 no heap 4 heap)", i,
                     Global->bad_stdin[i]);
            v = 1;
        }
    fails += report("stdin", !v, why);
    v = 0;
    for (i = 0; i < P; i++)
        if (Global->bad_gmalloc[i] && !v) {
            snprintf(why, sizeof(why), "process %d: mask %#x (1 early ptr 2 early 4 homed 8 _f)",
                     i, Global->bad_gmalloc[i]);
            v = 1;
        }
    if (!v && P > 1 && cvia_dsm_home_of(Global->homed) != 1) {
        snprintf(why, sizeof(why), "G_MALLOC(size, 1) is homed on rank %d",
                 cvia_dsm_home_of(Global->homed));
        v = 1;
    }
    fails += report("gmalloc", !v, why);
    v = Global->norder != P;
    for (i = 0; i < Global->norder; i++)
        v |= Global->order[i] != i;
    snprintf(why, sizeof(why), "%d turns taken, out of order: %d", Global->norder, (int)v);
    fails += report("condvar", !v && Global->arrived == P, why);
    for (i = 0, v = 0; i < NLOCKS; i++)
        if (Global->counts[i] != (long)P * ROUNDS)
            v = 1;
    snprintf(why, sizeof(why), "a counter is not %d", P * ROUNDS);
    fails += report("alock", !v, why);
    fails += report("headers", unit + rank + size + base + home + region == 21 &&
                    PAGE_SIZE % 4096 == 0, "names or PAGE_SIZE taken");
    if (!fails)
        printf("ok conform-anl %d processes\n", P);
    fflush(stdout);
    if (fails)
        exit(1);
    MAIN_END
}
