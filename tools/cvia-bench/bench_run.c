/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench: launching jobs. Without a launcher cvia-bench replaces itself
 * with "cvia-run -n 2 -- cvia-bench ARGS"; 'crossover' instead runs such
 * jobs one after the other, two copies (CVIA_SHM_RNDV_THRESHOLD=1t) and
 * single copy (=0) in turn, and reports from which size single copy wins:
 * the threshold to recommend for this machine. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "bench.h"
#include "util/json.h"

/* ---- finding cvia-run ------------------------------------------------------ */

static int bench_is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* cvia-run next to our own executable, else in PATH. */
static int bench_find_runner(const char *self, char *out, size_t cap)
{
    const char *slash = strrchr(self, '/');
    const char *path = getenv("PATH");

    if (slash && (size_t)snprintf(out, cap, "%.*s/cvia-run", (int)(slash - self),
                                  self) < cap && bench_is_exec(out))
        return 0;
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if ((size_t)snprintf(out, cap, "%.*s/cvia-run", len ? (int)len : 1,
                             len ? path : ".") < cap && bench_is_exec(out))
            return 0;
        path = end ? end + 1 : NULL;
    }
    return -1;
}

/* Our own executable and the cvia-run to start it with: 0, or the exit
 * status after saying why not. */
static int bench_programs(char *self, size_t scap, char *runner, size_t rcap)
{
    ssize_t n;

    if (getenv(BENCH_ENV_REEXEC)) {
        fprintf(stderr, "cvia-bench: started by cvia-run but CVIA_BOOT_ADDR is not set\n");
        return 1;
    }
    if ((n = readlink("/proc/self/exe", self, scap - 1)) <= 0) {
        fprintf(stderr, "cvia-bench: cannot find own executable: %s\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    if (bench_find_runner(self, runner, rcap)) {
        fprintf(stderr, "cvia-bench: cvia-run not found next to %s nor in PATH; "
                "start cvia-bench under a launcher\n", self);
        return 2;
    }
    return 0;
}

/* Run "cvia-run -n 2 --bind B -- SELF ARGS..." in place of this process. */
int bench_relaunch(int argc, char **argv, const char *bind)
{
    char self[PATH_MAX], runner[PATH_MAX + 16];
    char **args;
    int k = 0, rc;

    if ((rc = bench_programs(self, sizeof(self), runner, sizeof(runner))))
        return rc;
    if (!(args = calloc((size_t)argc + 8, sizeof(*args)))) {
        fprintf(stderr, "cvia-bench: out of memory\n");
        return 1;
    }
    args[k++] = runner;
    args[k++] = "-n";
    args[k++] = "2";
    args[k++] = "--bind";
    args[k++] = (char *)bind;
    args[k++] = "--";
    args[k++] = self;
    for (int i = 1; i < argc; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    setenv(BENCH_ENV_REEXEC, bind, 1);
    setenv(BENCH_ENV_TTY, isatty(STDERR_FILENO) ? "1" : "0", 1);
    fflush(NULL);
    execv(runner, args);
    fprintf(stderr, "cvia-bench: cannot run %s: %s\n", runner, strerror(errno));
    free(args);
    return 1;
}

/* ---- crossover ------------------------------------------------------------- */

enum { XV_TWO, XV_ONE, XV_N };                       /* the two variants */
static const char *const xv_name[XV_N] = { "twocopy", "single" };
static const char *const xv_thr[XV_N] = { "1t", "0" };

struct xover {
    size_t n;                       /* sizes */
    int    runs;
    double *v[XV_N][2];             /* [variant][0 latency, 1 bw][size * runs + run] */
    double med[XV_N][2][BENCH_MAX_XSIZES];
    double ratio[2][BENCH_MAX_XSIZES];  /* median of the runs' paired ratios */
    char   path[XV_N][2][512];      /* cvia_peer_info of rank 0 and rank 1 */
    size_t cross[2];                /* single copy wins from (0: nowhere) */
    size_t rec;                     /* recommended threshold (0: none) */
};

static double xv_median(double *v, int n)
{
    double t[n > 0 ? n : 1];
    int m = 0;

    for (int i = 0; i < n; i++)
        if (!isnan(v[i]))
            t[m++] = v[i];
    if (!m)
        return NAN;
    for (int i = 1; i < m; i++)       /* insertion sort: a handful of runs */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return m % 2 ? t[m / 2] : (t[m / 2 - 1] + t[m / 2]) / 2;
}

/* "1048576" -> "1m": the spelling CVIA_SHM_RNDV_THRESHOLD takes. */
static void xv_size(char *out, size_t cap, size_t s)
{
    if (s && s % (1u << 20) == 0)
        snprintf(out, cap, "%zum", s >> 20);
    else if (s && s % 1024 == 0)
        snprintf(out, cap, "%zuk", s >> 10);
    else
        snprintf(out, cap, "%zu", s);
}

/* One child job; its CSV goes to @csv, its path lines to @info. */
static int xv_job(char **args, int variant, const char *bind, const char *csv,
                  const char *info)
{
    pid_t pid;
    int status, fd;

    fflush(NULL);
    if ((pid = fork()) < 0)
        return -errno;
    if (pid == 0) {
        if ((fd = open(csv, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0 ||
            dup2(fd, STDOUT_FILENO) < 0)
            _exit(127);
        setenv("CVIA_SHM_RNDV_THRESHOLD", xv_thr[variant], 1);
        setenv(BENCH_ENV_REEXEC, bind, 1);
        setenv(BENCH_ENV_TTY, "0", 1);
        setenv(BENCH_ENV_INFO, info, 1);
        execv(args[0], args);
        fprintf(stderr, "cvia-bench: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Read the child's CSV (benchmark,size_bytes,iterations,latency_us,...,
 * bandwidth_mb_s,...) into run @run of @variant. */
static int xv_read(struct xover *x, const struct bench_opts *o, int variant, int run,
                   const char *csv, const char *info)
{
    char line[1024];
    FILE *f = fopen(csv, "r");
    int got = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        char *fld[10] = { 0 }, *p = line;
        int nf = 0;
        size_t size;
        /* strsep keeps empty fields */
        while (nf < 10 && (fld[nf] = strsep(&p, ",\n")))
            nf++;
        if (nf < 9 || !strcmp(fld[0], "benchmark"))
            continue;
        size = strtoull(fld[1], NULL, 10);
        for (size_t i = 0; i < x->n; i++) {
            if (o->sizes[i] != size)
                continue;
            if (!strcmp(fld[0], "latency") && *fld[3])
                x->v[variant][0][i * (size_t)x->runs + (size_t)run] = strtod(fld[3], NULL);
            else if (!strcmp(fld[0], "bw") && *fld[7])
                x->v[variant][1][i * (size_t)x->runs + (size_t)run] = strtod(fld[7], NULL);
            else
                continue;
            got++;
        }
    }
    fclose(f);
    if ((f = fopen(info, "r"))) {
        while (fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\n")] = '\0';
            int which = !strncmp(line, "path0=", 6) ? 0 : !strncmp(line, "path1=", 6) ? 1 : -1;
            if (which >= 0) {
                size_t m = strnlen(line + 6, sizeof(x->path[0][0]) - 1);
                memcpy(x->path[variant][which], line + 6, m);
                x->path[variant][which][m] = '\0';
            }
        }
        fclose(f);
    }
    return got == (int)(2 * x->n) ? 0 : -1;
}

/* Medians; ratios (> 1: single copy better), each the median over runs
 * of the ratio of the two jobs of that run, which ran one after the other:
 * on a VM whose speed shifts between modes for seconds at a time, pairs
 * measured moments apart compare like with like where medians taken apart
 * may not. The crossovers: the smallest size from which single copy wins
 * at every larger size. */
static void xv_summarize(struct xover *x, const struct bench_opts *o)
{
    double r[x->runs > 0 ? x->runs : 1];

    for (int v = 0; v < XV_N; v++)
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < x->n; i++)
                x->med[v][k][i] = xv_median(x->v[v][k] + i * (size_t)x->runs, x->runs);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < x->n; i++) {
            for (int j = 0; j < x->runs; j++) {
                double two = x->v[XV_TWO][k][i * (size_t)x->runs + (size_t)j];
                double one = x->v[XV_ONE][k][i * (size_t)x->runs + (size_t)j];
                r[j] = k == 0 ? two / one : one / two;
            }
            x->ratio[k][i] = xv_median(r, x->runs);
        }
    for (int k = 0; k < 2; k++) {
        x->cross[k] = 0;
        for (size_t i = x->n; i-- > 0;) {
            if (!(x->ratio[k][i] > 1))
                break;
            x->cross[k] = o->sizes[i];
        }
    }
    x->rec = x->cross[0] && x->cross[1] ?
             (x->cross[0] > x->cross[1] ? x->cross[0] : x->cross[1]) : 0;
}

static double xv_ratio(const struct xover *x, int k, size_t i)
{
    return x->ratio[k][i];
}

static void xv_verdict(char *out, size_t cap, const struct xover *x, const struct bench_opts *o)
{
    char a[32], b[32], r[32];

    snprintf(a, sizeof(a), "%zu B", x->cross[0]);
    snprintf(b, sizeof(b), "%zu B", x->cross[1]);
    xv_size(r, sizeof(r), x->rec);
    if (x->rec)
        snprintf(out, cap, "single copy wins from %s in latency and from %s in bandwidth "
                 "(at every larger size measured): recommended CVIA_SHM_RNDV_THRESHOLD=%s%s",
                 x->cross[0] ? a : "-", x->cross[1] ? b : "-", r,
                 x->rec == o->sizes[0] ? " (or lower: it wins at the smallest size measured)" : "");
    else
        snprintf(out, cap, "single copy does not win at the largest sizes measured in %s: "
                 "no crossover up to %zu B (keep CVIA_SHM_RNDV_THRESHOLD above it, or 1t)",
                 !x->cross[0] && !x->cross[1] ? "latency nor bandwidth" :
                 !x->cross[0] ? "latency" : "bandwidth", o->sizes[x->n - 1]);
}

static void xv_header(FILE *f, const struct xover *x, const struct bench_opts *o,
                      const struct bench_report *rep)
{
    char buf[256];

    fprintf(f, "# cvia-bench %s crossover: two copies (CVIA_SHM_RNDV_THRESHOLD=1t) vs single "
            "copy (CVIA_SHM_RNDV_THRESHOLD=0), latency and bw (OSU definitions)\n", rep->version);
    fprintf(f, "# host %s (%s, %d CPUs), %s; %d runs of each, interleaved (ABBA); medians\n",
            rep->host, rep->cpu_model, rep->ncpus, rep->date, x->runs);
    if (rep->plan.planned)
        fprintf(f, "# placement %s: rank 0 on cpu %d, rank 1 on cpu %d: %s\n",
                bench_class_name(rep->plan.cls), rep->plan.cpu[0], rep->plan.cpu[1],
                rep->plan.text);
    else
        fprintf(f, "# placement: --bind %s (no --placement)\n", o->bind);
    bench_buffers_text(buf, sizeof(buf), rep);
    fprintf(f, "# buffers: %s\n", buf);
    for (int v = 0; v < XV_N; v++)
        fprintf(f, "# path (%s): %s\n", xv_name[v], x->path[v][0]);
    if (strstr(x->path[XV_ONE][0], "for every size"))
        fprintf(f, "# NOTE: single copy is not available to this pair (see the path above): "
                "both variants measured two copies\n");
}

static void xv_table(FILE *f, const struct xover *x, const struct bench_opts *o,
                     const struct bench_report *rep)
{
    char verdict[512];

    xv_header(f, x, o, rep);
    fprintf(f, "# ratio > 1: single copy better (latency: two/single; bandwidth: single/two), the "
            "median over runs of each run's ratio (its two jobs ran one after the other)\n");
    fprintf(f, "# %-10s%13s%13s%8s%14s%14s%8s\n", "size", "lat_2copy_us", "lat_1copy_us",
            "ratio", "bw_2copy_MB/s", "bw_1copy_MB/s", "ratio");
    for (size_t i = 0; i < x->n; i++)
        fprintf(f, "%-12zu%13.2f%13.2f%8.2f%14.0f%14.0f%8.2f\n", o->sizes[i],
                x->med[XV_TWO][0][i], x->med[XV_ONE][0][i], xv_ratio(x, 0, i),
                x->med[XV_TWO][1][i], x->med[XV_ONE][1][i], xv_ratio(x, 1, i));
    xv_verdict(verdict, sizeof(verdict), x, o);
    fprintf(f, "# %s\n", verdict);
}

static void xv_num(FILE *f, const char *fmt, double v, const char *none)
{
    if (isnan(v) || isinf(v))
        fputs(none, f);
    else
        fprintf(f, fmt, v);
}

static void xv_csv(FILE *f, const struct xover *x, const struct bench_opts *o)
{
    fputs("size_bytes,latency_twocopy_us,latency_single_us,latency_ratio,"
          "bandwidth_twocopy_mb_s,bandwidth_single_mb_s,bandwidth_ratio,"
          "single_wins_latency,single_wins_bw\n", f);
    for (size_t i = 0; i < x->n; i++) {
        fprintf(f, "%zu,", o->sizes[i]);
        for (int k = 0; k < 2; k++) {
            xv_num(f, k ? "%.3f," : "%.4f,", x->med[XV_TWO][k][i], ",");
            xv_num(f, k ? "%.3f," : "%.4f,", x->med[XV_ONE][k][i], ",");
            xv_num(f, "%.4f,", xv_ratio(x, k, i), ",");
        }
        fprintf(f, "%d,%d\n", xv_ratio(x, 0, i) > 1, xv_ratio(x, 1, i) > 1);
    }
}

static void xv_json(FILE *f, const struct xover *x, const struct bench_opts *o,
                    const struct bench_report *rep)
{
    char verdict[512], buf[256], key[64];
    struct jw w;

    jw_init_flags(&w, f, JW_PRETTY);
    jw_obj(&w, NULL);
    bench_json_head(&w, rep, "crossover");
    jw_int(&w, "runs", x->runs);
    jw_int(&w, "mb", 1000000);
    jw_obj(&w, "placement");
    if (rep->plan.planned) {
        jw_str(&w, "class", bench_class_name(rep->plan.cls));
        jw_str(&w, "found", bench_class_name(rep->plan.found));
        jw_arr(&w, "cpus");
        jw_int(&w, NULL, rep->plan.cpu[0]);
        jw_int(&w, NULL, rep->plan.cpu[1]);
        jw_end_arr(&w);
        jw_arr(&w, "cores");
        jw_int(&w, NULL, rep->plan.core[0]);
        jw_int(&w, NULL, rep->plan.core[1]);
        jw_end_arr(&w);
        jw_str(&w, "shared", rep->plan.text);
    } else {
        jw_str(&w, "bind", o->bind);
    }
    jw_end_obj(&w);
    bench_buffers_text(buf, sizeof(buf), rep);
    jw_str(&w, "buffers", buf);
    jw_obj(&w, "variants");
    for (int v = 0; v < XV_N; v++) {
        jw_obj(&w, xv_name[v]);
        snprintf(buf, sizeof(buf), "CVIA_SHM_RNDV_THRESHOLD=%s", xv_thr[v]);
        jw_str(&w, "env", buf);
        jw_str(&w, "path", x->path[v][0]);
        jw_str(&w, "path_rank1", x->path[v][1]);
        jw_end_obj(&w);
    }
    jw_end_obj(&w);
    jw_arr(&w, "results");
    for (size_t i = 0; i < x->n; i++) {
        jw_obj(&w, NULL);
        jw_int(&w, "size_bytes", (long long)o->sizes[i]);
        for (int k = 0; k < 2; k++) {
            const char *m = k ? "bandwidth" : "latency", *u = k ? "mb_s" : "us";
            for (int v = 0; v < XV_N; v++) {
                snprintf(key, sizeof(key), "%s_%s_%s", m, xv_name[v], u);
                jw_fixed(&w, key, x->med[v][k][i], 4);
            }
            snprintf(key, sizeof(key), "%s_ratio", m);
            jw_fixed(&w, key, xv_ratio(x, k, i), 4);
        }
        jw_obj(&w, "runs");
        for (int v = 0; v < XV_N; v++)
            for (int k = 0; k < 2; k++) {
                snprintf(key, sizeof(key), "%s_%s", k ? "bandwidth" : "latency", xv_name[v]);
                jw_arr(&w, key);
                for (int r = 0; r < x->runs; r++)
                    jw_fixed(&w, NULL, x->v[v][k][i * (size_t)x->runs + (size_t)r], 4);
                jw_end_arr(&w);
            }
        jw_end_obj(&w);
        jw_end_obj(&w);
    }
    jw_end_arr(&w);
    xv_verdict(verdict, sizeof(verdict), x, o);
    jw_obj(&w, "crossover");
    if (x->cross[0])
        jw_int(&w, "latency_bytes", (long long)x->cross[0]);
    else
        jw_null(&w, "latency_bytes");
    if (x->cross[1])
        jw_int(&w, "bandwidth_bytes", (long long)x->cross[1]);
    else
        jw_null(&w, "bandwidth_bytes");
    if (x->rec) {
        xv_size(buf, sizeof(buf), x->rec);
        jw_str(&w, "recommended_threshold", buf);
        jw_int(&w, "recommended_bytes", (long long)x->rec);
    } else {
        jw_null(&w, "recommended_threshold");
        jw_null(&w, "recommended_bytes");
    }
    jw_str(&w, "verdict", verdict);
    jw_end_obj(&w);
    jw_end_obj(&w);
}

static int xv_plot(const char *png, const struct xover *x, const struct bench_opts *o,
                   const struct bench_report *rep)
{
    char data[4096], script[4096];
    FILE *fd, *fs;
    int rc;

    if (!(fd = bench_tmpfile(data, sizeof(data), ".dat")))
        return -errno;
    for (size_t i = 0; i < x->n; i++)
        fprintf(fd, "%zu %g %g %g %g\n", o->sizes[i], x->med[XV_TWO][0][i],
                x->med[XV_ONE][0][i], x->med[XV_TWO][1][i], x->med[XV_ONE][1][i]);
    if (fclose(fd) || !(fs = bench_tmpfile(script, sizeof(script), ".gp"))) {
        unlink(data);
        return -errno;
    }
    fprintf(fs, "set terminal pngcairo size 1280,540 font ',10'\nset output '%s'\n"
            "set multiplot layout 1,2 title 'cvia-bench crossover on %s, %d runs, medians' "
            "noenhanced\nset grid\nset logscale x 2\nset key top left\n"
            "set xlabel 'message size (bytes)'\nset logscale y\n"
            "set ylabel 'latency (us)'\nset title 'latency'\n"
            "plot '%s' u 1:2 w lp title 'two copies (1t)', '' u 1:3 w lp title 'single copy (0)'\n"
            "unset logscale y\nset yrange [0:*]\nset ylabel 'MB/s (10^6 B)'\n"
            "set title 'bandwidth (window %ld)'\n"
            "plot '%s' u 1:4 w lp title 'two copies (1t)', '' u 1:5 w lp title 'single copy (0)'\n"
            "unset multiplot\n", png, rep->host, x->runs, data, o->window, data);
    rc = fclose(fs) ? -errno : bench_gp_run(script);
    unlink(data);
    unlink(script);
    return rc;
}

int bench_crossover(const struct bench_opts *o, const struct bench_plan *plan)
{
    char self[PATH_MAX], runner[PATH_MAX + 16], sizes[4096], csv[4096], info[4096];
    char num[6][24];
    char *args[40];
    struct bench_report rep;
    struct xover x;
    FILE *tf;
    int k = 0, rc, len = 0, fail = 0;

    if ((rc = bench_programs(self, sizeof(self), runner, sizeof(runner))))
        return rc;
    memset(&x, 0, sizeof(x));
    memset(&rep, 0, sizeof(rep));
    x.n = o->nsizes;
    x.runs = (int)o->repeat;
    for (size_t i = 0; i < o->nsizes; i++)
        len += snprintf(sizes + len, sizeof(sizes) - (size_t)len, "%s%zu", i ? "," : "",
                        o->sizes[i]);
    args[k++] = runner;
    args[k++] = "-n";
    args[k++] = "2";
    args[k++] = "--bind";
    args[k++] = (char *)o->bind;
    args[k++] = "--";
    args[k++] = self;
    args[k++] = "latency";
    args[k++] = "bw";
    args[k++] = "--sizes";
    args[k++] = sizes;
    args[k++] = "--csv";
    args[k++] = "--quiet";
    snprintf(num[0], sizeof(num[0]), "%ld", o->window);
    args[k++] = "--window";
    args[k++] = num[0];
    if (o->iters > 0) {
        snprintf(num[1], sizeof(num[1]), "%ld", o->iters);
        args[k++] = "--iters";
        args[k++] = num[1];
    }
    if (o->warmup >= 0) {
        snprintf(num[2], sizeof(num[2]), "%ld", o->warmup);
        args[k++] = "--warmup";
        args[k++] = num[2];
    }
    snprintf(num[3], sizeof(num[3]), o->buffers ? "%ld" : "auto", o->buffers);
    args[k++] = "--buffers";
    args[k++] = num[3];
    if (o->arena)
        args[k++] = "--arena";
    {
        static const char *const names[] = { "single", "funneled", "serialized", "multiple" };
        args[k++] = "--thread";
        args[k++] = (char *)names[o->thread];
    }
    if (o->check)
        args[k++] = "--check";
    args[k] = NULL;

    for (int v = 0; v < XV_N; v++)
        for (int m = 0; m < 2; m++)
            if (!(x.v[v][m] = calloc(x.n * (size_t)x.runs, sizeof(double)))) {
                fprintf(stderr, "cvia-bench: out of memory\n");
                return 1;
            }
    if (!(tf = bench_tmpfile(csv, sizeof(csv), ".csv")) || fclose(tf) ||
        !(tf = bench_tmpfile(info, sizeof(info), ".txt")) || fclose(tf)) {
        fprintf(stderr, "cvia-bench: crossover: temporary file: %s\n", strerror(errno));
        return 1;
    }
    for (int r = 0; r < x.runs && !fail; r++)
        for (int j = 0; j < XV_N && !fail; j++) {
            int v = r % 2 ? XV_N - 1 - j : j;   /* ABBA: neither goes first every time */
            if (!o->quiet)
                fprintf(stderr, "cvia-bench: crossover run %d/%d: %s (CVIA_SHM_RNDV_THRESHOLD=%s)\n",
                        r + 1, x.runs, xv_name[v], xv_thr[v]);
            rc = xv_job(args, v, o->bind, csv, info);
            if (rc) {
                fprintf(stderr, "cvia-bench: crossover: run %d (%s) failed (%s %d)\n", r + 1,
                        xv_name[v], rc < 0 ? "error" : "status", rc < 0 ? -rc : rc);
                fail = 1;
            } else if (xv_read(&x, o, v, r, csv, info)) {
                fprintf(stderr, "cvia-bench: crossover: run %d (%s) gave incomplete results\n",
                        r + 1, xv_name[v]);
                fail = 1;
            }
        }
    unlink(csv);
    unlink(info);
    if (!fail) {
        FILE *out = stdout;
        xv_summarize(&x, o);
        rep.version = cvia_version();
        if (gethostname(rep.host, sizeof(rep.host) - 1))
            snprintf(rep.host, sizeof(rep.host), "unknown");
        bench_machine(rep.cpu_model, sizeof(rep.cpu_model), &rep.ncpus);
        {
            time_t now = time(NULL);
            struct tm tm;
            strftime(rep.date, sizeof(rep.date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
        }
        if (plan)
            rep.plan = *plan;
        bench_buffers_plan(o, &rep);
        if (o->output || (!o->csv && !o->json))
            xv_table(stdout, &x, o, &rep);
        if (o->output && !(out = fopen(o->output, "w"))) {
            fprintf(stderr, "cvia-bench: %s: %s\n", o->output, strerror(errno));
            fail = 1;
        } else if (o->csv || o->json) {
            o->csv ? xv_csv(out, &x, o) : xv_json(out, &x, o, &rep);
            if (out != stdout && fclose(out)) {
                fprintf(stderr, "cvia-bench: writing %s: %s\n", o->output, strerror(errno));
                fail = 1;
            }
        }
        if (fflush(stdout))
            fail = 1;
        if (o->plot && (rc = xv_plot(o->plot, &x, o, &rep))) {
            fprintf(stderr, "cvia-bench: --plot: %s\n", rc == -ENOENT ?
                    "gnuplot not found in PATH (Debian: gnuplot-nox); no plot written" :
                    "gnuplot failed; no plot written");
            fail = 1;
        }
    }
    for (int v = 0; v < XV_N; v++)
        for (int m = 0; m < 2; m++)
            free(x.v[v][m]);
    return fail;
}
