/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * line_pingpong: the floor under an intra-node 8 B ping-pong. Two threads,
 * pinned to two CPUs, hand one cache line back and forth: the pinger
 * stores i into the line and spins until the ponger has stored -i back.
 * One round trip is two cache-line transfers and nothing else (no ring,
 * no request, no matching). Prints the median of each round's p50 half
 * round trip, the same statistic cvia-bench latency reports.
 *
 *   line_pingpong [--cpus A,B] [--iters N] [--rounds R]
 *
 * With --lines 2 each direction has a line of its own (a flag written by
 * one side only, as corevia's rings are): the pinger writes line 0 and
 * reads line 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct line {
    _Alignas(64) _Atomic int64_t v;
    char pad[64 - sizeof(int64_t)];
};

static struct line lines[2];
static int cpu[2] = { 0, 1 };
static long iters = 100000;
static int nlines = 1;
static pthread_barrier_t start;

static void pin(int c)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(c, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
        fprintf(stderr, "line_pingpong: --cpus: cannot pin to CPU %d\n", c);
        exit(2);
    }
}

static void *ponger(void *arg)
{
    _Atomic int64_t *in = &lines[0].v, *out = &lines[nlines - 1].v;
    long rounds = (long)(intptr_t)arg;

    pin(cpu[1]);
    for (long r = 0; r < rounds; r++) {
        pthread_barrier_wait(&start);
        for (int64_t i = 1; i <= iters; i++) {
            while (atomic_load_explicit(in, memory_order_acquire) != i)
                __builtin_ia32_pause();
            atomic_store_explicit(out, -i, memory_order_release);
        }
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long parse_long(const char *opt, const char *s, long lo)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo) {
        fprintf(stderr, "line_pingpong: %s: '%s' is not an integer >= %ld\n", opt, s, lo);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long rounds = 5;
    double *t, *med;
    pthread_t th;

    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--iters"))
            iters = parse_long("--iters", argv[++i], 1);
        else if (i + 1 < argc && !strcmp(argv[i], "--rounds"))
            rounds = parse_long("--rounds", argv[++i], 1);
        else if (i + 1 < argc && !strcmp(argv[i], "--lines"))
            nlines = (int)parse_long("--lines", argv[++i], 1);
        else if (i + 1 < argc && !strcmp(argv[i], "--cpus")) {
            if (sscanf(argv[++i], "%d,%d", &cpu[0], &cpu[1]) != 2 || cpu[0] < 0 || cpu[1] < 0) {
                fprintf(stderr, "line_pingpong: --cpus: '%s' is not A,B\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: line_pingpong [--cpus A,B] [--iters N] [--rounds R] "
                    "[--lines 1|2]\n");
            return 2;
        }
    }
    if (nlines > 2) {
        fprintf(stderr, "line_pingpong: --lines: %d is not 1 or 2\n", nlines);
        return 2;
    }
    t = malloc((size_t)iters * sizeof(*t));
    med = malloc((size_t)rounds * sizeof(*med));
    if (!t || !med)
        return 1;
    pthread_barrier_init(&start, NULL, 2);
    if (pthread_create(&th, NULL, ponger, (void *)(intptr_t)rounds))
        return 1;
    pin(cpu[0]);
    _Atomic int64_t *out = &lines[0].v, *in = &lines[nlines - 1].v;
    for (long r = 0; r < rounds; r++) {
        atomic_store(out, 0);
        atomic_store(in, 0);
        pthread_barrier_wait(&start);
        for (int64_t i = 1; i <= iters; i++) {
            double t0 = now_ns();
            atomic_store_explicit(out, i, memory_order_release);
            while (atomic_load_explicit(in, memory_order_acquire) != -i)
                __builtin_ia32_pause();
            t[i - 1] = (now_ns() - t0) / 2;
        }
        qsort(t, (size_t)iters, sizeof(*t), cmp_double);
        med[r] = t[iters / 2];
        printf("round %ld: p50 half round trip %.1f ns\n", r + 1, med[r]);
    }
    pthread_join(th, NULL);
    qsort(med, (size_t)rounds, sizeof(*med), cmp_double);
    printf("line_pingpong: CPUs %d,%d, %d line%s, median of %ld rounds: %.1f ns (%.4f us)\n",
           cpu[0], cpu[1], nlines, nlines > 1 ? "s" : "", rounds, med[rounds / 2],
           med[rounds / 2] / 1000);
    free(t);
    free(med);
    return 0;
}
