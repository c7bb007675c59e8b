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
/* --placement, planned by the launching cvia-bench: "CPU0,CPU1" (rank 0
 * and rank 1 pin themselves there), "ASKED,FOUND,CORE0,CORE1" (classes and
 * core logical indices), and what the pair shares in words. */
#define BENCH_ENV_CPUS   "COREVIA_BENCH_CPUS"
#define BENCH_ENV_CLASS  "COREVIA_BENCH_CLASS"
#define BENCH_ENV_SHARE  "COREVIA_BENCH_SHARE"
/* crossover: a file where rank 0 of a child job writes the path lines */
#define BENCH_ENV_INFO   "COREVIA_BENCH_INFO"

enum bench_kind { BENCH_LATENCY, BENCH_BW, BENCH_BIBW, BENCH_MEMCPY, BENCH_NKINDS };

#define BENCH_MAX_XSIZES 64   /* sizes of a crossover */

/* What the command line asked for. */
struct bench_opts {
    enum bench_kind order[BENCH_NKINDS];  /* as given, without repeats */
    int    nkinds;
    size_t *sizes;                        /* ascending, no repeats */
    size_t nsizes;
    long   iters, warmup;                 /* -1: OSU default for the size */
    long   window;
    long   repeat;
    long   buffers;                       /* per side; 0: auto */
    int    check, quiet, csv, json, arena;
    int    thread;                        /* CVIA_THREAD_* given to cvia_init_thread */
    int    crossover, plan;
    int    sizes_given, repeat_given;
    int    placement;                     /* BENCH_CLASS_*, -1: not asked */
    const char *cpus;                     /* --cpus LIST or NULL */
    const char *output, *plot, *bind;
};

/* bench_opts.c: parse the command line (exits 2 on a usage error, 0
 * after --help / --version); under a launcher only rank 0 speaks. */
void bench_parse(int argc, char **argv, struct bench_opts *o);
int  bench_rank0(void);
__attribute__((format(printf, 1, 2), noreturn))
void bench_usage_error(const char *fmt, ...);

/* "latency", "bw", "bibw", "memcpy" */
extern const char *const bench_kind_name[BENCH_NKINDS];

/* One (benchmark, size): the raw data of every run and, after
 * bench_summarize(), the figures that are reported. */
struct bench_result {
    enum bench_kind kind;
    size_t size;
    long   iters;       /* timed iterations per run */
    long   warmup;      /* untimed iterations before them */
    long   window;      /* bw, bibw: messages in flight per iteration;
                         * memcpy: copies per iteration */
    long   nbuf;        /* buffers of this size cycled through, per side */
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

/* --placement classes, nearest first; "any" takes the first two cores. */
enum { BENCH_CLASS_ANY, BENCH_CLASS_L2, BENCH_CLASS_L3, BENCH_CLASS_PACKAGE,
       BENCH_CLASS_REMOTE, BENCH_NCLASSES };

/* A chosen pair of cores (bench_place.c). */
struct bench_plan {
    int  planned;         /* --placement was given and this is filled */
    int  cls, found;      /* class asked for; class of the pair found */
    int  cpu[2];          /* PU OS index for rank 0 and rank 1 */
    int  core[2];         /* their cores' logical indices */
    int  ncores;          /* usable cores */
    char cpus[128];       /* usable CPUs, "0-3,8" */
    char source[256];     /* "this machine" or the CVIA_TOPOLOGY file */
    char text[320];       /* what they share, or why no pair exists */
};

const char *bench_class_name(int cls);
int  bench_class_parse(const char *name);   /* -1 if unknown */
/* 0: found; 1: no pair of that class (p->text says why); -1: error */
int  bench_plan_make(int cls, const char *cpus, struct bench_plan *p);
void bench_plan_error(const struct bench_plan *p);
/* --plan: one class, or every class when cls < 0; the exit status */
int  bench_plan_print(int cls, const char *cpus);
void bench_plan_export(const struct bench_plan *p);
/* In a rank before cvia_init(): 0, 1 (error), 3 (class missing) */
int  bench_plan_pin(int cls, const char *cpus, int rank, struct bench_plan *p);

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
    struct bench_plan plan;   /* --placement, if given */
    char   path[2][512];      /* cvia_peer_info() of rank 0 (to 1), rank 1 (to 0) */
    long   buffers;           /* --buffers: N, or 0 for auto */
    size_t footprint;         /* auto: bytes cycled through per side */
    size_t llc;               /* the last-level cache size it was derived from */
    int    arena;             /* buffers from cvia_mem_alloc() */
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

/* For other plots: a temporary file under $TMPDIR ending in @suffix, and
 * gnuplot run on a script: 0, -ENOENT (no gnuplot), -errno, or gnuplot's
 * status (1000 + signal). */
FILE *bench_tmpfile(char *path, size_t cap, const char *suffix);
int   bench_gp_run(const char *script);
/* "# buffers: ..." in words */
void  bench_buffers_text(char *out, size_t cap, const struct bench_report *rep);
struct jw;
/* tool, version, host, cpu_model, cpus_online, date (and benchmark) */
void  bench_json_head(struct jw *w, const struct bench_report *rep, const char *benchmark);

/* --buffers auto: the bytes each side cycles through (rep->footprint,
 * rep->llc); rep->buffers, rep->arena from @o. */
void bench_buffers_plan(const struct bench_opts *o, struct bench_report *rep);

/* bench_run.c: replace this process with cvia-run -n 2 -- cvia-bench ARGS
 * (returns only on failure: the exit status); run the crossover's jobs
 * and report (the exit status). */
int bench_relaunch(int argc, char **argv, const char *bind);
int bench_crossover(const struct bench_opts *o, const struct bench_plan *plan);

#endif
