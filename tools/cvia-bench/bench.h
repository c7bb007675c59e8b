/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench: what the measuring part (cvia-bench.c) hands to the
 * reporting part (bench_output.c). Private to the tool. */
#ifndef CVIA_BENCH_H
#define CVIA_BENCH_H

#include <stddef.h>
#include <stdio.h>

/* Set by cvia-bench in the environment of the job it launches: the --bind
 * it asked cvia-run for (and a guard against relaunching in a loop), and
 * whether its own stderr was a terminal. Not CVIA_*: the library warns
 * about CVIA_ names it does not know. */
#define BENCH_ENV_REEXEC "COREVIA_BENCH_BIND"
#define BENCH_ENV_TTY    "COREVIA_BENCH_TTY"

enum bench_kind { BENCH_LATENCY, BENCH_BW, BENCH_BIBW, BENCH_NKINDS };

/* "latency", "bw", "bibw" */
extern const char *const bench_kind_name[BENCH_NKINDS];

/* One (benchmark, size): the raw data of every run and, after
 * bench_summarize(), the figures that are reported. */
struct bench_result {
    enum bench_kind kind;
    size_t size;
    long   iters;       /* timed iterations per run */
    long   warmup;      /* untimed iterations before them */
    long   window;      /* bw, bibw: messages in flight per iteration */
    int    nruns;       /* runs filled in so far */
    double *runs;       /* per run: mean latency (us) or bandwidth (MB/s) */
    double *runs_rate;  /* bw, bibw, per run: messages per second */
    double *samples;    /* latency: half round trip (us) of every timed
                         * iteration of every run, iters * repeat entries */
    size_t nsamples;
    /* Summary. Latency: median over runs of each run's mean; p50, p99
     * and min pooled over the iterations of all runs. Bandwidth and
     * message rate: median over runs. */
    double latency_us, p50_us, p99_us, min_us;
    double mb_s, msg_s;
};

/* Where rank 0 and rank 1 ran. */
struct bench_place {
    int  cpu[2];          /* sched_getcpu() at the start */
    int  cpu_end[2];      /* and at the end (may differ with --bind none) */
    char affinity[2][96]; /* allowed CPUs, "0-3,8" */
};

/* The CPUs this process may run on, as a list: "0-3,8". */
void bench_cpulist(char *out, size_t cap);

/* The processor's model name and the number of CPUs online. */
void bench_machine(char *model, size_t cap, int *ncpus);

struct bench_report {
    const char *version;  /* cvia_version() */
    char   host[256];
    char   cpu_model[128];
    int    ncpus;         /* online */
    char   date[32];      /* UTC, ISO 8601 */
    const char *bind;     /* "core"/"none" when cvia-bench launched itself,
                           * NULL when started by a launcher */
    int    nranks;
    struct bench_place place;
    double timer_res_ns;  /* clock_getres(CLOCK_MONOTONIC) */
    double timer_read_ns; /* median cost of one clock_gettime() */
    int    repeat;
    int    check;
    struct bench_result *res;
    size_t nres;
};

/* --help, on stdout. */
void bench_help(void);

/* Progress on stderr: "cvia-bench: latency 4096 B (13/23)", redrawn with
 * \r on a terminal, one line per step otherwise; shown when the run is
 * expected to take more than 3 s or has already taken that long. */
struct bench_progress {
    FILE  *tty;               /* a terminal to redraw on, or NULL */
    int    on, quiet;
    long   repeat;
    size_t step, total;
    double t0;
};
void bench_progress_start(struct bench_progress *p, const struct bench_report *rep,
                          int quiet);
void bench_progress_step(struct bench_progress *p, const struct bench_result *r);
/* Clear a \r progress line (before the results or an error message). */
void bench_progress_end(void);

/* Where the results go (rank 0, after the job). */
struct bench_out {
    int   csv, json;          /* neither: the table on stdout */
    FILE *file;               /* --output, open; NULL: stdout */
    const char *file_name;
    const char *plot;         /* --plot PNG or NULL */
};
/* Summarize, print, plot. 0, or 1 after printing what failed. */
int bench_report(struct bench_report *rep, const struct bench_out *o);

/* Fill the summary fields of @r from its runs and samples (sorts the
 * samples). */
void bench_summarize(struct bench_result *r);

/* The human table (osu-like: '#' header lines, then one row per size). */
int bench_print_table(FILE *f, const struct bench_report *rep);
int bench_print_csv(FILE *f, const struct bench_report *rep);
int bench_print_json(FILE *f, const struct bench_report *rep);

/* Draw @png with gnuplot. Prints its own one-line error; 0 or -1. */
int bench_plot(const char *png, const struct bench_report *rep);

#endif
