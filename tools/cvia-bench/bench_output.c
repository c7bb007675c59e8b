/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench: summaries and reports (table, CSV, JSON, gnuplot PNG). */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "util/clock.h"
#include "util/json.h"

const char *const bench_kind_name[BENCH_NKINDS] = { "latency", "bw", "bibw", "memcpy" };

/* ---- help ---------------------------------------------------------------- */

void bench_help(void)
{
    printf(
"Usage: cvia-bench [OPTIONS] BENCH [BENCH...]\n"
"       cvia-bench [OPTIONS] crossover\n"
"       cvia-bench --plan [--placement CLASS] [--cpus LIST]\n"
"\n"
"Point-to-point benchmarks between rank 0 and rank 1, measured as the OSU\n"
"Micro-Benchmarks measure them. Started without a launcher, cvia-bench runs\n"
"itself under 'cvia-run -n 2 --bind core'. Ranks above 1 only wait.\n"
"\n"
"Benchmarks:\n"
"  latency   half the round trip of a blocking ping-pong (osu_latency),\n"
"            mean, p50 and p99\n"
"  bw        a window of non-blocking sends, then a 4-byte reply (osu_bw)\n"
"  bibw      windows of sends in both directions at once (osu_bibw)\n"
"  memcpy    memcpy() of one thread on rank 0's core, as many copies of each\n"
"            size as bw sends messages, from its send to its receive buffers\n"
"  all       latency bw bibw\n"
"  crossover latency and bw with two copies (CVIA_SHM_RNDV_THRESHOLD=1t) and\n"
"            single copy (=0), --repeat jobs of each interleaved [5], sizes\n"
"            [1k-1m]; reports from which size single copy wins: the\n"
"            CVIA_SHM_RNDV_THRESHOLD to use on this machine\n"
"\n"
"Options:\n"
"  -s, --sizes LIST      message sizes [1-4m: 1 B to 4 MiB, powers of two]\n"
"                        LIST is comma-separated: SIZE, LO-HI (LO, 2*LO, ...\n"
"                        up to HI), or LO-HI:xF (powers of F); units b, k, m, g\n"
"                        are powers of 1024. Example: 0,8,4k,1-64k:x4\n"
"  -i, --iters N         timed iterations per size [latency 10000 up to 8 KiB,\n"
"                        1000 above; bw and bibw 100 up to 8 KiB, 20 above]\n"
"  -w, --warmup N        untimed iterations before them [latency 100 up to\n"
"                        8 KiB, 10 above; bw and bibw 10 up to 8 KiB, 2 above]\n"
"  -W, --window N        messages in flight per iteration, bw and bibw [64]\n"
"  -r, --repeat N        run the whole set N times; report per size the median\n"
"                        of the runs, p50/p99 over all runs' iterations [1]\n"
"  -c, --check           verify the payload of every message [off]; slower:\n"
"                        figures taken with it are not for comparison\n"
"      --csv             print CSV instead of the table [table]\n"
"      --json            print JSON instead of the table [table]\n"
"  -o, --output FILE     write the CSV or JSON to FILE, the table still to\n"
"                        stdout; format from --csv/--json, else from the name\n"
"                        (*.json: JSON, otherwise CSV) [none]\n"
"  -p, --plot FILE.png   draw latency and bandwidth against size with\n"
"                        gnuplot [none]\n"
"  -b, --bind core|none  placement asked of cvia-run when cvia-bench launches\n"
"                        itself [core]\n"
"      --placement CLASS pin rank 0 and rank 1 to two cores chosen by what they\n"
"                        share, from the hwloc topology (CVIA_TOPOLOGY=FILE.xml\n"
"                        for a recorded machine): l2 (share an L2 cache), l3\n"
"                        (share the L3 or last-level cache, not an L2), package\n"
"                        (same package, no shared cache), remote (different\n"
"                        packages), any (the first two cores); a class this\n"
"                        machine lacks is an error (exit 3) [--bind]\n"
"      --plan            print the pair of CPUs --placement would use (every\n"
"                        class without --placement) and exit\n"
"      --cpus LIST       choose the pair among these CPUs only, like 0-3,8\n"
"                        [the CPUs this process may use; a recorded topology:\n"
"                        all of its CPUs]\n"
"      --buffers N|auto  cycle through N send and N receive buffers of each\n"
"                        size, so that large messages are not cache hits;\n"
"                        auto: as many as cover twice the last-level cache\n"
"                        (16 MiB at least) per side [1: one buffer, as OSU]\n"
"      --arena           allocate the buffers with cvia_mem_alloc() (shared\n"
"                        arena: single copy by loads and stores) [malloc]\n"
"      --thread LEVEL    thread level asked of cvia_init_thread: single,\n"
"                        funneled, serialized or multiple (locks on the\n"
"                        message path only at multiple) [single]\n"
"  -q, --quiet           no progress on stderr [shown when the run is expected\n"
"                        to take more than 3 s]\n"
"  -h, --help            print this help and exit\n"
"  -V, --version         print the version and exit\n"
"\n"
"MB is 10^6 bytes, as in OSU. Times use CLOCK_MONOTONIC.\n");
}

/* ---- statistics ----------------------------------------------------------- */

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double bench_median(const double *v, int n)
{
    double *t, m;

    if (n <= 0)
        return NAN;
    if (!(t = malloc((size_t)n * sizeof(*t))))
        return v[0];
    memcpy(t, v, (size_t)n * sizeof(*t));
    qsort(t, (size_t)n, sizeof(*t), bench_cmp_double);
    m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    free(t);
    return m;
}

/* Nearest-rank percentile of sorted @v: the smallest value with at least
 * p% of the values at or below it. */
static double bench_percentile(const double *v, size_t n, double p)
{
    size_t k = (size_t)ceil(p / 100.0 * (double)n);

    if (n == 0)
        return NAN;
    return v[k ? k - 1 : 0];
}

void bench_summarize(struct bench_result *r)
{
    r->latency_us = r->p50_us = r->p99_us = r->min_us = NAN;
    r->mb_s = r->msg_s = NAN;
    if (r->nruns == 0)
        return;
    if (r->kind == BENCH_LATENCY) {
        r->latency_us = bench_median(r->runs, r->nruns);
        if (r->samples && r->nsamples) {
            qsort(r->samples, r->nsamples, sizeof(double), bench_cmp_double);
            r->p50_us = bench_percentile(r->samples, r->nsamples, 50);
            r->p99_us = bench_percentile(r->samples, r->nsamples, 99);
            r->min_us = r->samples[0];
        }
    } else {
        r->mb_s = bench_median(r->runs, r->nruns);
        r->msg_s = bench_median(r->runs_rate, r->nruns);
    }
}

/* ---- progress ------------------------------------------------------------- */

#define BENCH_PROGRESS_S 3.0

static FILE *bench_progress_dirty;  /* where a \r progress line is showing */

/* A rough a-priori cost: 1 us per message plus copying at 2 GB/s. */
static double bench_estimate_s(const struct bench_result *r)
{
    double per = 1e-6 + (double)r->size / 2e9, n = (double)(r->iters + r->warmup);

    switch (r->kind) {
    case BENCH_LATENCY: return n * 2 * per;
    case BENCH_BW:      return n * ((double)r->window * per + 2e-6);
    case BENCH_MEMCPY:  return n * (double)r->window * (double)r->size / 5e9;
    default:            return n * 2 * (double)r->window * per;
    }
}

/* Under cvia-run, stderr is a pipe that the launcher forwards a whole line
 * at a time, so a \r line would never show. When the cvia-bench that
 * launched the job saw a terminal on stderr (BENCH_ENV_TTY), progress is
 * written to that terminal directly. */
static FILE *bench_progress_tty(void)
{
    const char *t = getenv(BENCH_ENV_TTY);
    int fd;

    if (isatty(STDERR_FILENO))
        return stderr;
    if (!t || strcmp(t, "1") || (fd = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)) < 0)
        return NULL;
    /* cvia-run puts each rank in a process group of its own, a background
     * one for the terminal: with "stty tostop" a write would stop us. */
    signal(SIGTTOU, SIG_IGN);
    return fdopen(fd, "w");
}

void bench_progress_start(struct bench_progress *p, const struct bench_report *rep,
                          int quiet)
{
    double est = 0;

    for (size_t i = 0; i < rep->nres; i++)
        est += bench_estimate_s(&rep->res[i]);
    memset(p, 0, sizeof(*p));
    p->quiet = quiet;
    p->repeat = rep->repeat;
    p->total = rep->nres * (size_t)rep->repeat;
    if (!quiet)
        p->tty = bench_progress_tty();
    p->t0 = cvia__clock_s();
    p->on = est * rep->repeat > BENCH_PROGRESS_S;
}

void bench_progress_step(struct bench_progress *p, const struct bench_result *r)
{
    FILE *f = p->tty ? p->tty : stderr;
    char runs[48] = "";

    p->step++;
    if (p->quiet || (!p->on && cvia__clock_s() - p->t0 <= BENCH_PROGRESS_S))
        return;
    p->on = 1;
    if (p->repeat > 1)
        snprintf(runs, sizeof(runs), "run %zu/%ld, ",
                 (p->step - 1) / (p->total / (size_t)p->repeat) + 1, p->repeat);
    fprintf(f, "%scvia-bench: %s%s %zu B (%zu/%zu)%s", p->tty ? "\r" : "", runs,
            bench_kind_name[r->kind], r->size, p->step, p->total,
            p->tty ? "\033[K" : "\n");
    fflush(f);
    bench_progress_dirty = p->tty;
}

void bench_progress_end(void)
{
    if (bench_progress_dirty) {
        fputs("\r\033[K", bench_progress_dirty);
        fflush(bench_progress_dirty);
        bench_progress_dirty = NULL;
    }
}

/* ---- placement ------------------------------------------------------------ */

void bench_cpulist(char *out, size_t cap)
{
    cpu_set_t set;
    size_t len = 0;

    out[0] = '\0';
    if (sched_getaffinity(0, sizeof(set), &set))
        return;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        int e = c;
        if (!CPU_ISSET(c, &set))
            continue;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0,
                                e > c ? "%s%d-%d" : "%s%d", len ? "," : "", c, e);
        if (len >= cap) {
            snprintf(out + cap - 4, 4, "...");
            return;
        }
        c = e;
    }
}

/* "AMD EPYC 7B13" from /proc/cpuinfo ("model name", or "cpu" elsewhere). */
void bench_machine(char *model, size_t cap, int *ncpus)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];

    snprintf(model, cap, "unknown");
    *ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon || (strncmp(line, "model name", 10) && strncmp(line, "cpu\t", 4)))
            continue;
        colon += 1 + strspn(colon + 1, " \t");
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(model, cap, "%s", colon);
        break;
    }
    if (f)
        fclose(f);
}

/* ---- table ---------------------------------------------------------------- */

static const char *bench_title(enum bench_kind k)
{
    switch (k) {
    case BENCH_LATENCY: return "Latency: half the round trip of a blocking ping-pong (osu_latency)";
    case BENCH_BW:      return "Bandwidth: a window of sends, then a 4-byte reply (osu_bw)";
    case BENCH_MEMCPY:  return "memcpy of one thread on rank 0's core (as many copies as bw sends)";
    default:            return "Bi-directional bandwidth: windows of sends both ways (osu_bibw)";
    }
}

/* "# iterations (warm-up): 10000 (100) for 1..8192 B; 1000 (10) for 16384.. B" */
static void bench_iter_line(FILE *f, const struct bench_result *r, size_t n)
{
    fputs("# iterations (warm-up):", f);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && r[j + 1].iters == r[i].iters && r[j + 1].warmup == r[i].warmup)
            j++;
        fprintf(f, "%s %ld (%ld) for %zu", i ? ";" : "", r[i].iters, r[i].warmup, r[i].size);
        if (j > i)
            fprintf(f, "..%zu", r[j].size);
        fputs(" B", f);
        i = j + 1;
    }
    if (r[0].kind != BENCH_LATENCY)
        fprintf(f, "; window %ld", r[0].window);
    fputc('\n', f);
}

static void bench_place_line(FILE *f, const struct bench_report *rep)
{
    const struct bench_place *p = &rep->place;

    fputs("# placement:", f);
    for (int i = 0; i < 2; i++) {
        fprintf(f, "%s rank %d on cpu %d", i ? "," : "", i, p->cpu[i]);
        if (p->cpu_end[i] != p->cpu[i])
            fprintf(f, " (cpu %d at the end)", p->cpu_end[i]);
        fprintf(f, " (allowed %s)", p->affinity[i][0] ? p->affinity[i] : "?");
    }
    fprintf(f, "; bind %s\n", rep->bind ? rep->bind : "by the launcher");
    if (rep->plan.planned)
        fprintf(f, "# placement class %s (asked: %s): %s\n", bench_class_name(rep->plan.found),
                bench_class_name(rep->plan.cls), rep->plan.text);
}

void bench_buffers_text(char *out, size_t cap, const struct bench_report *rep)
{
    const char *mem = rep->arena ? "cvia_mem_alloc (shared arena)" : "page-aligned malloc";

    if (rep->buffers == 1)
        snprintf(out, cap, "one send and one receive buffer for every message, as OSU "
                 "(cache-resident where the size fits the caches); %s", mem);
    else if (rep->buffers > 1)
        snprintf(out, cap, "cycling through %ld send and %ld receive buffers of each size "
                 "per rank; %s", rep->buffers, rep->buffers, mem);
    else
        snprintf(out, cap, "cycling through at least %zu MiB of send and of receive buffers "
                 "per rank (2 x the %zu KiB last-level cache), not cache-resident; %s",
                 rep->footprint >> 20, rep->llc >> 10, mem);
}

int bench_print_table(FILE *f, const struct bench_report *rep)
{
    fprintf(f, "# cvia-bench %s (corevia point-to-point, OSU definitions)\n", rep->version);
    fprintf(f, "# host %s (%s, %d CPUs), %s, %d ranks (rank 0 and 1 measure)\n",
            rep->host, rep->cpu_model, rep->ncpus, rep->date, rep->nranks);
    bench_place_line(f, rep);
    fprintf(f, "# timer: CLOCK_MONOTONIC, resolution %.0f ns, %.0f ns per read\n",
            rep->timer_res_ns, rep->timer_read_ns);
    if (rep->repeat > 1)
        fprintf(f, "# %d runs: latency, MB/s and msg/s are medians of the runs; "
                "p50 and p99 over the iterations of all runs\n", rep->repeat);
    if (rep->check)
        fputs("# --check: every payload verified; timings include it, not for comparison\n", f);
    {
        char b[320];
        bench_buffers_text(b, sizeof(b), rep);
        fprintf(f, "# buffers: %s\n", b);
    }
    fprintf(f, "# path (rank 0 to 1): %s\n", rep->path[0]);
    fprintf(f, "# path (rank 1 to 0): %s\n", rep->path[1]);
    for (size_t i = 0; i < rep->nres;) {
        const struct bench_result *r = &rep->res[i];
        size_t n = 0;
        while (i + n < rep->nres && rep->res[i + n].kind == r->kind)
            n++;
        fprintf(f, "\n# %s\n", bench_title(r->kind));
        bench_iter_line(f, r, n);
        if (r->kind == BENCH_LATENCY)
            fprintf(f, "# %-10s%14s%12s%12s\n", "size", "latency_us", "p50_us", "p99_us");
        else
            fprintf(f, "# %-10s%14s%14s\n", "size", "MB/s",
                    r->kind == BENCH_MEMCPY ? "copies/s" : "msg/s");
        for (size_t j = 0; j < n; j++, r++) {
            if (r->kind == BENCH_LATENCY)
                fprintf(f, "%-12zu%14.2f%12.2f%12.2f\n", r->size, r->latency_us,
                        r->p50_us, r->p99_us);
            else
                fprintf(f, "%-12zu%14.2f%14.0f\n", r->size, r->mb_s, r->msg_s);
        }
        i += n;
    }
    return ferror(f) ? -1 : 0;
}

/* ---- CSV and JSON ----------------------------------------------------------- */

/* A number, or nothing (CSV) / null (JSON) where it does not apply. */
static void bench_num(FILE *f, const char *fmt, double v, const char *none)
{
    if (isnan(v))
        fputs(none, f);
    else
        fprintf(f, fmt, v);
}

int bench_print_csv(FILE *f, const struct bench_report *rep)
{
    fputs("benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,"
          "latency_min_us,bandwidth_mb_s,msg_rate_per_s,buffers\n", f);
    for (size_t i = 0; i < rep->nres; i++) {
        const struct bench_result *r = &rep->res[i];
        fprintf(f, "%s,%zu,%ld,", bench_kind_name[r->kind], r->size, r->iters);
        bench_num(f, "%.4f", r->latency_us, "");
        fputc(',', f);
        bench_num(f, "%.4f", r->p50_us, "");
        fputc(',', f);
        bench_num(f, "%.4f", r->p99_us, "");
        fputc(',', f);
        bench_num(f, "%.4f", r->min_us, "");
        fputc(',', f);
        bench_num(f, "%.3f", r->mb_s, "");
        fputc(',', f);
        bench_num(f, "%.1f", r->msg_s, "");
        fprintf(f, ",%ld\n", r->nbuf);
    }
    return ferror(f) ? -1 : 0;
}

/* The report's header, shared by every JSON output of cvia-bench. */
void bench_json_head(struct jw *w, const struct bench_report *rep, const char *benchmark)
{
    jw_str(w, "tool", "cvia-bench");
    if (benchmark)
        jw_str(w, "benchmark", benchmark);
    jw_str(w, "version", rep->version);
    jw_str(w, "host", rep->host);
    jw_str(w, "cpu_model", rep->cpu_model);
    jw_int(w, "cpus_online", rep->ncpus);
    jw_str(w, "date", rep->date);
}

static void bench_json_runs(struct jw *w, const char *key, const double *v, int n, int decimals)
{
    jw_arr(w, key);
    for (int k = 0; k < n; k++)
        jw_fixed(w, NULL, v[k], decimals);
    jw_end_arr(w);
}

int bench_print_json(FILE *f, const struct bench_report *rep)
{
    const struct bench_place *p = &rep->place;
    struct jw w;
    char b[320];

    jw_init_flags(&w, f, JW_PRETTY);
    jw_obj(&w, NULL);
    bench_json_head(&w, rep, NULL);
    jw_int(&w, "ranks", rep->nranks);
    jw_obj(&w, "placement");
    jw_str(&w, "bind", rep->bind);
    jw_arr(&w, "cpus");
    jw_int(&w, NULL, p->cpu[0]);
    jw_int(&w, NULL, p->cpu[1]);
    jw_end_arr(&w);
    jw_arr(&w, "cpus_end");
    jw_int(&w, NULL, p->cpu_end[0]);
    jw_int(&w, NULL, p->cpu_end[1]);
    jw_end_arr(&w);
    jw_arr(&w, "allowed_cpus");
    jw_str(&w, NULL, p->affinity[0]);
    jw_str(&w, NULL, p->affinity[1]);
    jw_end_arr(&w);
    if (rep->plan.planned) {
        jw_str(&w, "class", bench_class_name(rep->plan.found));
        jw_str(&w, "requested", bench_class_name(rep->plan.cls));
        jw_arr(&w, "cores");
        jw_int(&w, NULL, rep->plan.core[0]);
        jw_int(&w, NULL, rep->plan.core[1]);
        jw_end_arr(&w);
        jw_arr(&w, "planned_cpus");
        jw_int(&w, NULL, rep->plan.cpu[0]);
        jw_int(&w, NULL, rep->plan.cpu[1]);
        jw_end_arr(&w);
        jw_str(&w, "shared", rep->plan.text);
    } else {
        jw_null(&w, "class");
    }
    jw_end_obj(&w);
    jw_str(&w, "path", rep->path[0]);
    jw_str(&w, "path_rank1", rep->path[1]);
    bench_buffers_text(b, sizeof(b), rep);
    jw_obj(&w, "buffers");
    if (rep->buffers)
        jw_int(&w, "count", rep->buffers);
    else
        jw_str(&w, "count", "auto");
    jw_int(&w, "footprint_bytes", rep->buffers ? 0 : (long long)rep->footprint);
    jw_int(&w, "llc_bytes", (long long)rep->llc);
    jw_bool(&w, "arena", rep->arena);
    jw_str(&w, "text", b);
    jw_end_obj(&w);
    jw_obj(&w, "timer");
    jw_str(&w, "clock", "CLOCK_MONOTONIC");
    jw_fixed(&w, "resolution_ns", rep->timer_res_ns, 0);
    jw_fixed(&w, "read_ns", rep->timer_read_ns, 0);
    jw_end_obj(&w);
    jw_int(&w, "repeat", rep->repeat);
    jw_bool(&w, "check", rep->check);
    jw_int(&w, "mb", 1000000);
    jw_arr(&w, "results");
    for (size_t i = 0; i < rep->nres; i++) {
        const struct bench_result *r = &rep->res[i];
        int lat = r->kind == BENCH_LATENCY;

        jw_obj(&w, NULL);
        jw_str(&w, "benchmark", bench_kind_name[r->kind]);
        jw_int(&w, "size_bytes", (long long)r->size);
        jw_int(&w, "iterations", r->iters);
        jw_int(&w, "warmup", r->warmup);
        jw_int(&w, "buffers", r->nbuf);
        if (lat)
            jw_null(&w, "window");
        else
            jw_int(&w, "window", r->window);
        jw_fixed(&w, "latency_us", r->latency_us, 4);
        jw_fixed(&w, "latency_p50_us", r->p50_us, 4);
        jw_fixed(&w, "latency_p99_us", r->p99_us, 4);
        jw_fixed(&w, "latency_min_us", r->min_us, 4);
        jw_fixed(&w, "bandwidth_mb_s", r->mb_s, 3);
        jw_fixed(&w, "msg_rate_per_s", r->msg_s, 1);
        jw_obj(&w, "runs");
        bench_json_runs(&w, lat ? "latency_us" : "bandwidth_mb_s", r->runs, r->nruns,
                        lat ? 4 : 3);
        if (!lat)
            bench_json_runs(&w, "msg_rate_per_s", r->runs_rate, r->nruns, 1);
        jw_end_obj(&w);
        jw_end_obj(&w);
    }
    jw_end_arr(&w);
    jw_end_obj(&w);
    return ferror(f) ? -1 : 0;
}

/* ---- gnuplot ---------------------------------------------------------------- */

/* Inside gnuplot's single quotes only the quote itself needs escaping. */
static void bench_gp_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* Text for a title: no quotes, backslashes or enhanced-text markup. */
static void bench_gp_text(char *dst, size_t cap, const char *src)
{
    size_t k = 0;

    for (; *src && k + 1 < cap; src++)
        dst[k++] = strchr("'\"\\^_@&{}~\n", *src) ? '?' : *src;
    dst[k] = '\0';
}

static void bench_gp_xtics(FILE *f, const struct bench_report *rep)
{
    size_t lo = SIZE_MAX, hi = 0;
    int first = 1;

    for (size_t i = 0; i < rep->nres; i++) {
        if (rep->res[i].size && rep->res[i].size < lo)
            lo = rep->res[i].size;
        if (rep->res[i].size > hi)
            hi = rep->res[i].size;
    }
    if (hi == 0)
        return;
    /* a margin, so that the end points and their tics are not on the frame */
    fprintf(f, "set xrange [%g:%g]\n", (double)lo / 1.3, (double)hi * 1.3);
    fputs("set xtics (", f);
    for (size_t s = 1; s && s <= hi; s *= 4) {
        if (s * 4 <= lo && s * 4 > s)
            continue;
        if (s >= (1ul << 30))
            fprintf(f, "%s\"%zuG\" %zu", first ? "" : ", ", s >> 30, s);
        else if (s >= (1ul << 20))
            fprintf(f, "%s\"%zuM\" %zu", first ? "" : ", ", s >> 20, s);
        else if (s >= 1024)
            fprintf(f, "%s\"%zuK\" %zu", first ? "" : ", ", s >> 10, s);
        else
            fprintf(f, "%s\"%zu\" %zu", first ? "" : ", ", s, s);
        first = 0;
        if (s > SIZE_MAX / 4)
            break;
    }
    fputs(")\n", f);
}

/* Data: one gnuplot data set (separated by two blank lines) per
 * benchmark present; sizes of 0 bytes cannot go on a log axis. */
static int bench_gp_data(FILE *f, const struct bench_report *rep, int index[BENCH_NKINDS])
{
    int n = 0;

    for (int k = 0; k < BENCH_NKINDS; k++) {
        index[k] = -1;
        for (size_t i = 0; i < rep->nres; i++) {
            const struct bench_result *r = &rep->res[i];
            if (r->kind != (enum bench_kind)k || r->size == 0)
                continue;
            if (index[k] < 0) {
                index[k] = n++;
                fprintf(f, "%s# %s\n", index[k] ? "\n\n" : "", bench_kind_name[k]);
            }
            if (k == BENCH_LATENCY)
                fprintf(f, "%zu %.6f %.6f %.6f\n", r->size, r->latency_us, r->p50_us,
                        r->p99_us);
            else
                fprintf(f, "%zu %.6f\n", r->size, r->mb_s);
        }
    }
    return n;
}

static void bench_gp_script(FILE *f, const char *png, const char *data,
                            const struct bench_report *rep, const int index[BENCH_NKINDS])
{
    int lat = index[BENCH_LATENCY] >= 0, bw = index[BENCH_BW] >= 0 || index[BENCH_BIBW] >= 0 ||
              index[BENCH_MEMCPY] >= 0;
    int panels = lat + bw;
    long window = 0;
    char host[128], model[128], title[400];

    for (size_t i = 0; i < rep->nres; i++)
        if (rep->res[i].kind != BENCH_LATENCY)
            window = rep->res[i].window;
    bench_gp_text(host, sizeof(host), rep->host);
    bench_gp_text(model, sizeof(model), rep->cpu_model);
    snprintf(title, sizeof(title), "cvia-bench %s on %s (%s), %s; rank 0 on cpu %d, "
             "rank 1 on cpu %d%s", rep->version, host, model, rep->date, rep->place.cpu[0],
             rep->place.cpu[1], rep->repeat > 1 ? "; medians of runs" : "");
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "  set terminal pngcairo size %d,540 font ',10'\n"
               "} else {\n  set terminal png size %d,540\n}\n",
            panels * 640, panels * 640);
    fputs("set output ", f);
    bench_gp_quoted(f, png);
    fputs("\nset datafile commentschars '#'\n", f);
    fprintf(f, "set multiplot layout 1,%d title '%s' noenhanced\n", panels, title);
    fputs("set grid\nset key top left Left reverse\nset logscale x 2\n"
          "set xlabel 'message size (bytes)'\n", f);
    bench_gp_xtics(f, rep);
    if (lat) {
        int ix = index[BENCH_LATENCY];
        fputs("set logscale y 10\nset title 'Latency (half round trip, osu\\_latency)'\n"
              "set ylabel 'latency (us)'\n", f);
        fputs("plot ", f);
        bench_gp_quoted(f, data);
        fprintf(f, " index %d using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mean', \\\n"
                   "     '' index %d using 1:3 with lines dt 2 title 'p50', \\\n"
                   "     '' index %d using 1:4 with lines dt 3 title 'p99'\n", ix, ix, ix);
        fputs("unset logscale y\n", f);
    }
    if (bw) {
        const char *sep = "plot ";
        fprintf(f, "set title 'Bandwidth (window %ld, osu\\_bw / osu\\_bibw)'\n"
                   "set ylabel 'bandwidth (MB/s, 1 MB = 10^6 bytes)'\n"
                   "set yrange [0:*]\n", window);
        for (int k = BENCH_BW; k <= BENCH_MEMCPY; k++) {
            if (index[k] < 0)
                continue;
            fputs(sep, f);
            bench_gp_quoted(f, data);
            fprintf(f, " index %d using 1:2 with linespoints lw 2 pt %d ps 0.6 title '%s'",
                    index[k], k == BENCH_BW ? 7 : k == BENCH_BIBW ? 5 : 9,
                    k == BENCH_BW ? "bw (one direction)" : k == BENCH_BIBW ?
                    "bibw (both directions)" : "memcpy (one thread)");
            sep = ", \\\n     ";
        }
        fputc('\n', f);
    }
    fputs("unset multiplot\nset output\n", f);
}

FILE *bench_tmpfile(char *path, size_t cap, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    int fd;
    FILE *f;

    if (!dir || !*dir || strchr(dir, '\n'))
        dir = "/tmp";
    snprintf(path, cap, "%s/cvia-bench-XXXXXX%s", dir, suffix);
    if ((fd = mkstemps(path, (int)strlen(suffix))) < 0)
        return NULL;
    if (!(f = fdopen(fd, "w"))) {
        close(fd);
        unlink(path);
    }
    return f;
}

/* fork/exec gnuplot SCRIPT; a close-on-exec pipe carries exec's errno back,
 * so "not installed" can be told from "failed". */
int bench_gp_run(const char *script)
{
    int pfd[2], err = 0, status;
    pid_t pid;

    if (pipe2(pfd, O_CLOEXEC))
        return -errno;
    fflush(NULL);
    if ((pid = fork()) < 0) {
        err = errno;
        close(pfd[0]);
        close(pfd[1]);
        return -err;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            dup2(devnull, STDOUT_FILENO);
        }
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        err = errno;
        if (write(pfd[1], &err, sizeof(err)) < 0)
            _exit(127);
        _exit(127);
    }
    close(pfd[1]);
    if (read(pfd[0], &err, sizeof(err)) != (ssize_t)sizeof(err))
        err = 0;
    close(pfd[0]);
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (err)
        return err == ENOENT ? -ENOENT : -err;
    if (!WIFEXITED(status))
        return 1000 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

int bench_plot(const char *png, const struct bench_report *rep)
{
    char data[4096], script[4096];
    int index[BENCH_NKINDS], rc;
    FILE *fd, *fs;
    struct stat st;

    if (!(fd = bench_tmpfile(data, sizeof(data), ".dat"))) {
        fprintf(stderr, "cvia-bench: --plot: temporary file: %s\n", strerror(errno));
        return -1;
    }
    if (bench_gp_data(fd, rep, index) == 0) {
        fclose(fd);
        unlink(data);
        fprintf(stderr, "cvia-bench: --plot: nothing to draw (only 0-byte sizes)\n");
        return -1;
    }
    if (fclose(fd) || !(fs = bench_tmpfile(script, sizeof(script), ".gp"))) {
        fprintf(stderr, "cvia-bench: --plot: temporary file: %s\n", strerror(errno));
        unlink(data);
        return -1;
    }
    bench_gp_script(fs, png, data, rep, index);
    if (fclose(fs)) {
        fprintf(stderr, "cvia-bench: --plot: %s: %s\n", script, strerror(errno));
        rc = -1;
    } else {
        rc = bench_gp_run(script);
    }
    unlink(data);
    unlink(script);
    if (rc == -ENOENT) {
        fprintf(stderr, "cvia-bench: --plot: gnuplot not found in PATH "
                "(install gnuplot, e.g. Debian's gnuplot-nox); no plot written\n");
        return -1;
    }
    if (rc < 0) {
        fprintf(stderr, "cvia-bench: --plot: cannot run gnuplot: %s\n", strerror(-rc));
        return -1;
    }
    if (rc > 0) {
        fprintf(stderr, "cvia-bench: --plot: gnuplot failed (%s %d); %s not written\n",
                rc >= 1000 ? "signal" : "exit status", rc >= 1000 ? rc - 1000 : rc, png);
        return -1;
    }
    if (stat(png, &st) || st.st_size == 0) {
        fprintf(stderr, "cvia-bench: --plot: gnuplot wrote no %s\n", png);
        return -1;
    }
    return 0;
}

/* ---- all of it -------------------------------------------------------------- */

int bench_report(struct bench_report *rep, const struct bench_out *o)
{
    int rc = 0;

    for (size_t i = 0; i < rep->nres; i++)
        bench_summarize(&rep->res[i]);
    if (o->file || (!o->csv && !o->json))
        rc |= bench_print_table(stdout, rep);
    if (o->csv || o->json) {
        FILE *f = o->file ? o->file : stdout;
        int frc = o->csv ? bench_print_csv(f, rep) : bench_print_json(f, rep);
        if (o->file && (fclose(o->file) || frc)) {
            fprintf(stderr, "cvia-bench: writing %s: %s\n", o->file_name, strerror(errno));
            rc = -1;
        }
    }
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "cvia-bench: writing stdout: %s\n", strerror(errno));
        rc = -1;
    }
    if (o->plot && bench_plot(o->plot, rep))
        rc = -1;
    return rc ? 1 : 0;
}
