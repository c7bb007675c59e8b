/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* What the PARMACS applications share: flags common to all of them, the
 * report line, the sequential-reference comparison. Header-only, so that
 * the same source builds on the DSM, with -DCVIA_PARMACS_NULL as the
 * sequential program and with -DCVIA_PARMACS_THREADS on POSIX threads. */
#ifndef COREVIA_APPS_APP_H
#define COREVIA_APPS_APP_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/parmacs.h>

struct app_common {
    int procs;          /* -p N; 0: one per rank */
    int check;          /* --check: run the sequential reference and compare */
    int stats;          /* --stats (1) or --stats=json (2) */
    int quiet;
};

/* Take the common flags out of argv; returns 1 if argv[*i] was one. */
static inline int app_common_flag(struct app_common *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];

    if (!strcmp(a, "-p") && *i + 1 < argc) {
        char *end;
        long v = strtol(argv[++*i], &end, 10);
        if (*end || end == argv[*i] || v < 1 || v > 1 << 20) {
            fprintf(stderr, "%s: -p %s: not a process count (1 or more)\n", argv[0], argv[*i]);
            exit(2);
        }
        c->procs = (int)v;
        return 1;
    }
    if (!strcmp(a, "--check")) { c->check = 1; return 1; }
    if (!strcmp(a, "--stats")) { c->stats = 1; return 1; }
    if (!strcmp(a, "--stats=json")) { c->stats = 2; return 1; }
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { c->quiet = 1; return 1; }
    if (!strncmp(a, "--token=", 8))   /* the test runner's marker */
        return 1;
    return 0;
}

/* A first argument without a dash names a preset: "small" is the size the
 * tests run (and checks against the reference), "paper" the paper's.
 * Returns 1 for small, 0 for paper or none (setting *first to the index of
 * the first flag); another word ends the program (exit 2). */
static inline int app_preset_small(const char *name, int argc, char **argv, int *first)
{
    const char *p = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;

    *first = p ? 2 : 1;
    if (p && strcmp(p, "small") && strcmp(p, "paper")) {
        fprintf(stderr, "%s: unknown preset %s (small, paper)\n", name, p);
        exit(2);
    }
    return p && !strcmp(p, "small");
}

/* After MAIN_INITENV: the process count, checked against the ranks. */
static inline int app_procs(struct app_common *c, const char *name)
{
    int n = CVIA_PARMACS_NPROCS();

#ifdef CVIA_PARMACS_THREADS
    /* the threads build starts as many threads as -p asks (1 without it) */
    if (c->procs > CVIA_PARMACS_MAX_THREADS) {
        fprintf(stderr, "%s: -p %d: the threads build runs 1 to %d threads\n", name, c->procs,
                CVIA_PARMACS_MAX_THREADS);
        exit(2);
    }
    n = c->procs ? c->procs : 1;
#endif
    if (!c->procs)
        c->procs = n;
    if (c->procs != n) {
        fprintf(stderr, "%s: -p %d, but %s %d: run one rank per process\n", name, c->procs,
#ifdef CVIA_PARMACS_NULL
                "the sequential build runs", n);
#else
                "the job has", n);
#endif
        exit(2);
    }
    if (c->stats)
        CVIA_PARMACS_STATS(c->stats == 2);
    return c->procs;
}

/* One line for people and scripts alike. */
static inline void app_report(const char *name, const char *size, int procs, double t_par,
                              double t_total, const char *check)
{
    printf("RESULT app=%s size=%s procs=%d time=%.6f total=%.6f check=%s build=%s\n",
           name, size, procs, t_par, t_total, check,
#if defined(CVIA_PARMACS_NULL)
           "seq"
#elif defined(CVIA_PARMACS_THREADS)
           "threads"
#else
           "dsm"
#endif
           );
    fflush(stdout);
}

/* After the run: compare with the sequential reference when asked (check()
 * returns 0 when equal, < 0 on an error of its own), print the RESULT
 * line; 1 if the comparison failed. */
static inline int app_finish(const struct app_common *c, int (*check)(void), const char *name,
                             const char *size, int procs, double t_par, double t_total)
{
    const char *verdict = "skipped";

    if (c->check) {
        int r = check();
        verdict = r == 0 ? "ok" : r < 0 ? "error" : "FAILED";
    }
    app_report(name, size, procs, t_par, t_total, verdict);
    return c->check && strcmp(verdict, "ok");
}

#endif
