/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench: point-to-point latency and bandwidth between rank 0 and
 * rank 1, with the OSU Micro-Benchmarks definitions (osu_latency, osu_bw,
 * osu_bibw), so that its figures can be set beside theirs. This file
 * parses options, launches itself under cvia-run when needed and measures;
 * bench_output.c reports. Only the public API and the util parsers. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "util/param.h"
#include "bench.h"

#define BENCH_LARGE        8192     /* OSU's LARGE_MESSAGE_SIZE */
#define BENCH_MAX_SIZE     (1ul << 30)
#define BENCH_MAX_SIZES    4096
#define BENCH_ACK_LEN      4        /* osu_bw's reply */

/* Tags; matching is per (source, tag), so one tag serves both directions. */
enum { TAG_CTRL = 1, TAG_SYNC = 2, TAG_LAT = 10, TAG_BW = 100, TAG_ACK = 101,
       TAG_BIBW = 200 };

struct bench_opts {
    enum bench_kind order[BENCH_NKINDS];  /* as given, without repeats */
    int    nkinds;
    size_t *sizes;                        /* ascending, no repeats */
    size_t nsizes;
    long   iters, warmup;                 /* -1: OSU default for the size */
    long   window;
    long   repeat;
    int    check, quiet, csv, json;
    const char *output, *plot, *bind;
};

static int bench_rank = -1;
static const char *bench_step = "";       /* "latency 4096 B" while measuring */

/* ---- errors --------------------------------------------------------------- */

/* Before cvia_init(): under a launcher, only rank 0 speaks. */
static int bench_rank0(void)
{
    const char *r = getenv("CVIA_RANK");
    return !r || !strcmp(r, "0");
}

static __attribute__((format(printf, 1, 2), noreturn))
void bench_usage_error(const char *fmt, ...)
{
    va_list ap;

    if (bench_rank0()) {
        fputs("cvia-bench: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (try --help)\n", stderr);
    }
    exit(2);
}

/* A failure while the job runs: say where, then take the job down so the
 * peer does not wait for a message that will never come. */
static __attribute__((format(printf, 1, 2), noreturn))
void bench_fail(const char *fmt, ...)
{
    char msg[512], rk[32] = "";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    bench_progress_end();
    if (bench_rank > 0)
        snprintf(rk, sizeof(rk), "rank %d: ", bench_rank);
    fprintf(stderr, "cvia-bench: %s%s%s%s\n", rk, bench_step,
            *bench_step ? ": " : "", msg);
    if (cvia_initialized())
        cvia_abort(1, msg);
    exit(1);
}

/* -CVIA_EABORT: another rank failed and has said why; the launcher is
 * ending the job, so leave quietly. */
#define BENCH_CALL(what, expr)                                              \
    do {                                                                    \
        int rc_ = (expr);                                                   \
        if (rc_ == -CVIA_EABORT) {                                          \
            bench_progress_end();                                           \
            exit(1);                                                        \
        }                                                                   \
        if (rc_ < 0)                                                        \
            bench_fail("%s: %s", (what), cvia_strerror(rc_));               \
    } while (0)

/* ---- options -------------------------------------------------------------- */

static size_t *bench_add_size(size_t *v, size_t *n, size_t s)
{
    if (*n >= BENCH_MAX_SIZES)
        bench_usage_error("--sizes: more than %d sizes", BENCH_MAX_SIZES);
    if (s > BENCH_MAX_SIZE)
        bench_usage_error("--sizes: %zu bytes is above the limit of 1 GiB", s);
    if (!(v = realloc(v, (*n + 1) * sizeof(*v)))) {
        fprintf(stderr, "cvia-bench: out of memory\n");
        exit(1);
    }
    v[(*n)++] = s;
    return v;
}

static size_t bench_size_arg(const char *item, const char *text, size_t len)
{
    char buf[64];
    size_t s;

    if (len == 0 || len >= sizeof(buf))
        bench_usage_error("--sizes: bad item '%s'", item);
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (cvia__parse_size(buf, &s))
        bench_usage_error("--sizes: '%s' is not a size", buf);
    return s;
}

static int bench_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* "0,8,4k,1-64k:x4" -> ascending sizes without repeats. */
static void bench_parse_sizes(const char *text, struct bench_opts *o)
{
    char *copy = strdup(text), *save = NULL, *item;
    size_t *v = NULL, n = 0, k = 0;

    if (!copy || !*text || text[strlen(text) - 1] == ',' || *text == ',' ||
        strstr(text, ",,"))
        bench_usage_error("--sizes: empty item in '%s'", text);
    for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(item, '-'), *colon = strchr(item, ':');
        size_t lo, hi, f = 2;

        if (!dash) {
            if (colon)
                bench_usage_error("--sizes: ':xF' needs a range in '%s'", item);
            v = bench_add_size(v, &n, bench_size_arg(item, item, strlen(item)));
            continue;
        }
        lo = bench_size_arg(item, item, (size_t)(dash - item));
        hi = bench_size_arg(item, dash + 1,
                            colon ? (size_t)(colon - dash - 1) : strlen(dash + 1));
        if (colon) {
            long l;
            const char *fs = colon + 1;
            if (*fs == 'x' || *fs == 'X' || *fs == '*')
                fs++;
            if (cvia__parse_long(fs, &l) || l < 2 || l > 1024)
                bench_usage_error("--sizes: bad factor in '%s' (want :x2 .. :x1024)", item);
            f = (size_t)l;
        }
        if (lo == 0 || hi < lo)
            bench_usage_error("--sizes: bad range '%s' (want 1 <= LO <= HI)", item);
        for (size_t s = lo; s <= hi; s *= f) {
            v = bench_add_size(v, &n, s);
            if (s > hi / f)
                break;
        }
    }
    free(copy);
    qsort(v, n, sizeof(*v), bench_cmp_size);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1])
            v[k++] = v[i];
    free(o->sizes);
    o->sizes = v;
    o->nsizes = k;
}

static long bench_long_arg(const char *opt, const char *text, long min, long max)
{
    long l;

    if (cvia__parse_long(text, &l) || l < min || l > max)
        bench_usage_error("%s: '%s' is not a number in %ld..%ld", opt, text, min, max);
    return l;
}

static void bench_add_kind(struct bench_opts *o, enum bench_kind k)
{
    for (int i = 0; i < o->nkinds; i++)
        if (o->order[i] == k)
            return;
    o->order[o->nkinds++] = k;
}

static void bench_parse(int argc, char **argv, struct bench_opts *o)
{
    enum { OPT_CSV = 256, OPT_JSON };
    static const struct option lopts[] = {
        { "sizes",   required_argument, NULL, 's' },
        { "iters",   required_argument, NULL, 'i' },
        { "warmup",  required_argument, NULL, 'w' },
        { "window",  required_argument, NULL, 'W' },
        { "repeat",  required_argument, NULL, 'r' },
        { "check",   no_argument,       NULL, 'c' },
        { "csv",     no_argument,       NULL, OPT_CSV },
        { "json",    no_argument,       NULL, OPT_JSON },
        { "output",  required_argument, NULL, 'o' },
        { "plot",    required_argument, NULL, 'p' },
        { "bind",    required_argument, NULL, 'b' },
        { "quiet",   no_argument,       NULL, 'q' },
        { "help",    no_argument,       NULL, 'h' },
        { "version", no_argument,       NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    int c;

    memset(o, 0, sizeof(*o));
    o->iters = o->warmup = -1;
    o->window = 64;
    o->repeat = 1;
    o->bind = "core";
    bench_parse_sizes("1-4m", o);

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:i:w:W:r:co:p:b:qhV", lopts, NULL)) != -1) {
        switch (c) {
        case 's': bench_parse_sizes(optarg, o); break;
        case 'i': o->iters = bench_long_arg("--iters", optarg, 1, 100000000); break;
        case 'w': o->warmup = bench_long_arg("--warmup", optarg, 0, 100000000); break;
        case 'W': o->window = bench_long_arg("--window", optarg, 1, 1 << 20); break;
        case 'r': o->repeat = bench_long_arg("--repeat", optarg, 1, 10000); break;
        case 'c': o->check = 1; break;
        case OPT_CSV:  o->csv = 1; break;
        case OPT_JSON: o->json = 1; break;
        case 'o': o->output = optarg; break;
        case 'p': o->plot = optarg; break;
        case 'b':
            if (strcmp(optarg, "core") && strcmp(optarg, "none"))
                bench_usage_error("--bind: '%s' is not core or none", optarg);
            o->bind = optarg;
            break;
        case 'q': o->quiet = 1; break;
        case 'h':
            if (bench_rank0())
                bench_help();
            exit(0);
        case 'V':
            if (bench_rank0())
                printf("cvia-bench (corevia) %s\n", cvia_version());
            exit(0);
        case ':':
            bench_usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt && optopt < 256)
                bench_usage_error("unknown option '-%c'", optopt);
            bench_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (o->csv && o->json)
        bench_usage_error("--csv and --json exclude each other");
    if (o->output && !*o->output)
        bench_usage_error("--output: empty file name");
    if (o->plot && (!*o->plot || strchr(o->plot, '\n')))
        bench_usage_error("--plot: bad file name");
    if (o->output && !o->csv && !o->json) {
        size_t l = strlen(o->output);
        if (l >= 5 && !strcasecmp(o->output + l - 5, ".json"))
            o->json = 1;
        else
            o->csv = 1;
    }
    if (optind >= argc)
        bench_usage_error("no benchmark given (latency, bw, bibw or all)");
    for (; optind < argc; optind++) {
        const char *b = argv[optind];
        if (!strcmp(b, "all")) {
            for (int k = 0; k < BENCH_NKINDS; k++)
                bench_add_kind(o, (enum bench_kind)k);
            continue;
        }
        int k;
        for (k = 0; k < BENCH_NKINDS; k++)
            if (!strcmp(b, bench_kind_name[k]))
                break;
        if (k == BENCH_NKINDS)
            bench_usage_error("unknown benchmark '%s' (latency, bw, bibw, all)", b);
        bench_add_kind(o, (enum bench_kind)k);
    }
}

/* ---- launching ------------------------------------------------------------ */

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

/* Run "cvia-run -n 2 --bind B -- SELF ARGS..." in place of this process. */
static int bench_relaunch(int argc, char **argv, const char *bind)
{
    char self[PATH_MAX], runner[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char **args;
    int k = 0;

    if (getenv(BENCH_ENV_REEXEC)) {
        fprintf(stderr, "cvia-bench: started by cvia-run but CVIA_BOOT_ADDR is not set\n");
        return 1;
    }
    if (n <= 0) {
        fprintf(stderr, "cvia-bench: cannot find own executable: %s\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    if (bench_find_runner(self, runner, sizeof(runner))) {
        fprintf(stderr, "cvia-bench: cvia-run not found next to %s nor in PATH; "
                "start cvia-bench under a launcher\n", self);
        return 2;
    }
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
    return 1;
}

/* ---- measuring ------------------------------------------------------------ */

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void bench_timer_info(struct bench_report *rep)
{
    enum { N = 1001 };
    uint64_t d[N], prev = bench_now_ns();
    struct timespec res;

    for (int i = 0; i < N; i++) {
        uint64_t t = bench_now_ns();
        d[i] = t - prev;
        prev = t;
    }
    qsort(d, N, sizeof(d[0]), bench_cmp_u64);
    rep->timer_read_ns = (double)d[N / 2];
    rep->timer_res_ns = clock_getres(CLOCK_MONOTONIC, &res) ? 0 :
                        (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
}

/* --check payload: 64-bit words that depend on the message (size,
 * iteration, direction, run) and on their position, so that stale, shifted
 * or foreign data shows. */
static uint64_t bench_seed(size_t size, long iter, int dir, int run)
{
    uint64_t x = (uint64_t)size * 0x100000001B3ull ^ ((uint64_t)iter << 20) ^
                 ((uint64_t)dir << 62) ^ ((uint64_t)run << 48);
    x ^= x >> 31;
    return x * 0x9E3779B97F4A7C15ull;
}

static inline uint64_t bench_pat_word(uint64_t seed, uint64_t i)
{
    uint64_t x = (seed + i) * 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

static void bench_pat_fill(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = buf;
    size_t n = len / 8, i;

    for (i = 0; i < n; i++) {
        uint64_t w = bench_pat_word(seed, i);
        memcpy(p + 8 * i, &w, 8);
    }
    if (len % 8) {
        uint64_t w = bench_pat_word(seed, n);
        memcpy(p + 8 * n, &w, len % 8);
    }
}

static void bench_pat_verify(const void *buf, size_t len, uint64_t seed,
                             long iter, long slot, const cvia_status_t *st)
{
    const unsigned char *p = buf;

    if (st && (st->len != len || st->msg_len != len || st->error))
        bench_fail("iteration %ld message %ld: %zu of %zu bytes delivered (error %d)",
                   iter, slot, st->len, len, st->error);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = bench_pat_word(seed, i / 8);
        size_t m = len - i < 8 ? len - i : 8;
        if (memcmp(p + i, &w, m)) {
            size_t b = 0;
            while (p[i + b] == ((const unsigned char *)&w)[b])
                b++;
            bench_fail("iteration %ld message %ld: data differ at byte %zu "
                       "(0x%02x, expected 0x%02x)", iter, slot, i + b, p[i + b],
                       ((const unsigned char *)&w)[b]);
        }
    }
}

/* Everything one rank needs to measure. */
struct bench_ctx {
    const struct bench_opts *o;
    int    rank, peer, run;
    unsigned char *sbuf, *rbuf; /* rbuf: one slot, or window slots (--check) */
    size_t stride;              /* bytes between receive slots */
    cvia_req_t *sreq, *rreq;
    cvia_status_t *st;
    unsigned char ack[64];      /* osu_bw's reply */
    unsigned char sync[8];
};

static unsigned char *bench_rslot(struct bench_ctx *c, long j)
{
    return c->rbuf + (c->o->check ? (size_t)j * c->stride : 0);
}

/* A barrier of the two ranks that measure (ranks above 1 are not in it). */
static void bench_pair_sync(struct bench_ctx *c)
{
    cvia_req_t r;

    BENCH_CALL("sync", cvia_isend(c->sync, 0, c->peer, TAG_SYNC, &r));
    BENCH_CALL("sync", cvia_recv(c->sync, sizeof(c->sync), c->peer, TAG_SYNC, NULL));
    BENCH_CALL("sync", cvia_wait(&r, NULL));
}

/* osu_latency: rank 0 sends then receives, rank 1 receives then sends;
 * each timed iteration's round trip is kept, halved, in microseconds. */
static void bench_latency(struct bench_ctx *c, struct bench_result *r)
{
    const int check = c->o->check;
    const size_t size = r->size;
    const long n = r->warmup + r->iters;
    double *lat = c->rank == 0 ? r->samples + r->nsamples : NULL, sum = 0;
    cvia_status_t st, *stp = check ? &st : NULL;

    for (long i = 0; i < n; i++) {
        if (c->rank == 0) {
            uint64_t t0, t1;
            if (check)
                bench_pat_fill(c->sbuf, size, bench_seed(size, i, 0, c->run));
            t0 = bench_now_ns();
            BENCH_CALL("send", cvia_send(c->sbuf, size, 1, TAG_LAT));
            BENCH_CALL("recv", cvia_recv(c->rbuf, size, 1, TAG_LAT, stp));
            t1 = bench_now_ns();
            if (i >= r->warmup) {
                lat[i - r->warmup] = (double)(t1 - t0) / 2e3;
                sum += lat[i - r->warmup];
            }
            if (check)
                bench_pat_verify(c->rbuf, size, bench_seed(size, i, 1, c->run), i, 0, stp);
        } else {
            if (check)
                bench_pat_fill(c->sbuf, size, bench_seed(size, i, 1, c->run));
            BENCH_CALL("recv", cvia_recv(c->rbuf, size, 0, TAG_LAT, stp));
            BENCH_CALL("send", cvia_send(c->sbuf, size, 0, TAG_LAT));
            if (check)
                bench_pat_verify(c->rbuf, size, bench_seed(size, i, 0, c->run), i, 0, stp);
        }
    }
    if (c->rank == 0) {
        r->nsamples += (size_t)r->iters;
        r->runs[r->nruns++] = sum / (double)r->iters;
    }
}

static void bench_verify_window(struct bench_ctx *c, struct bench_result *r,
                                long i, int from)
{
    for (long j = 0; j < r->window; j++)
        bench_pat_verify(bench_rslot(c, j), r->size,
                         bench_seed(r->size, i, from, c->run), i, j, &c->st[j]);
}

/* osu_bw: rank 0 posts a window of sends, rank 1 a window of receives;
 * after both complete, rank 1 replies with 4 bytes. */
static void bench_bw(struct bench_ctx *c, struct bench_result *r)
{
    const int check = c->o->check;
    const size_t size = r->size;
    const long n = r->warmup + r->iters, w = r->window;
    uint64_t t0 = 0, t1;

    for (long i = 0; i < n; i++) {
        if (i == r->warmup)
            t0 = bench_now_ns();
        if (c->rank == 0) {
            if (check)
                bench_pat_fill(c->sbuf, size, bench_seed(size, i, 0, c->run));
            for (long j = 0; j < w; j++)
                BENCH_CALL("isend", cvia_isend(c->sbuf, size, 1, TAG_BW, &c->sreq[j]));
            BENCH_CALL("waitall", cvia_waitall((size_t)w, c->sreq, NULL));
            BENCH_CALL("recv", cvia_recv(c->ack, BENCH_ACK_LEN, 1, TAG_ACK, NULL));
        } else {
            for (long j = 0; j < w; j++)
                BENCH_CALL("irecv", cvia_irecv(bench_rslot(c, j), size, 0, TAG_BW,
                                               &c->rreq[j]));
            BENCH_CALL("waitall", cvia_waitall((size_t)w, c->rreq,
                                               check ? c->st : NULL));
            if (check)
                bench_verify_window(c, r, i, 0);
            BENCH_CALL("send", cvia_send(c->ack, BENCH_ACK_LEN, 0, TAG_ACK));
        }
    }
    t1 = bench_now_ns();
    if (c->rank == 0) {
        double s = (double)(t1 - t0) * 1e-9, msgs = (double)w * (double)r->iters;
        r->runs[r->nruns] = (double)size * msgs / s / 1e6;
        r->runs_rate[r->nruns++] = msgs / s;
    }
}

/* osu_bibw: both ranks post a window of receives and a window of sends,
 * then wait for both; traffic in both directions counts. */
static void bench_bibw(struct bench_ctx *c, struct bench_result *r)
{
    const int check = c->o->check;
    const size_t size = r->size;
    const long n = r->warmup + r->iters, w = r->window;
    uint64_t t0 = 0, t1;

    for (long i = 0; i < n; i++) {
        if (i == r->warmup)
            t0 = bench_now_ns();
        if (check)
            bench_pat_fill(c->sbuf, size, bench_seed(size, i, c->rank, c->run));
        for (long j = 0; j < w; j++)
            BENCH_CALL("irecv", cvia_irecv(bench_rslot(c, j), size, c->peer, TAG_BIBW,
                                           &c->rreq[j]));
        for (long j = 0; j < w; j++)
            BENCH_CALL("isend", cvia_isend(c->sbuf, size, c->peer, TAG_BIBW, &c->sreq[j]));
        BENCH_CALL("waitall", cvia_waitall((size_t)w, c->sreq, NULL));
        BENCH_CALL("waitall", cvia_waitall((size_t)w, c->rreq, check ? c->st : NULL));
        if (check)
            bench_verify_window(c, r, i, c->peer);
    }
    t1 = bench_now_ns();
    if (c->rank == 0) {
        double s = (double)(t1 - t0) * 1e-9, msgs = 2.0 * (double)w * (double)r->iters;
        r->runs[r->nruns] = (double)size * msgs / s / 1e6;
        r->runs_rate[r->nruns++] = msgs / s;
    }
}

/* OSU's defaults, unless --iters / --warmup say otherwise. */
static void bench_counts(const struct bench_opts *o, struct bench_result *r)
{
    int large = r->size > BENCH_LARGE;

    if (r->kind == BENCH_LATENCY) {
        r->iters = large ? 1000 : 10000;
        r->warmup = large ? 10 : 100;
        r->window = 0;
    } else {
        r->iters = large ? 20 : 100;
        r->warmup = large ? 2 : 10;
        r->window = o->window;
    }
    if (o->iters > 0)
        r->iters = o->iters;
    if (o->warmup >= 0)
        r->warmup = o->warmup;
}

/* ---- the job -------------------------------------------------------------- */

/* Rank 1 tells rank 0 where it runs; rank 0 tells rank 1 whether to go on. */
static int bench_exchange(struct bench_ctx *c, struct bench_place *pl, int end, int go)
{
    struct { int cpu; char aff[96]; } me, peer;

    memset(&me, 0, sizeof(me));
    me.cpu = sched_getcpu();
    bench_cpulist(me.aff, sizeof(me.aff));
    if (c->rank == 0) {
        BENCH_CALL("exchange", cvia_recv(&peer, sizeof(peer), 1, TAG_CTRL, NULL));
        BENCH_CALL("exchange", cvia_send(&go, sizeof(go), 1, TAG_CTRL));
        if (end) {
            pl->cpu_end[0] = me.cpu;
            pl->cpu_end[1] = peer.cpu;
        } else {
            pl->cpu[0] = me.cpu;
            pl->cpu[1] = peer.cpu;
            memcpy(pl->affinity[0], me.aff, sizeof(me.aff));
            memcpy(pl->affinity[1], peer.aff, sizeof(peer.aff));
        }
    } else {
        BENCH_CALL("exchange", cvia_send(&me, sizeof(me), 0, TAG_CTRL));
        BENCH_CALL("exchange", cvia_recv(&go, sizeof(go), 0, TAG_CTRL, NULL));
    }
    return go;
}

static void *bench_alloc(size_t len)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);

    if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, len ? len : 1))
        bench_fail("cannot allocate %zu bytes", len);
    return p;
}

static void bench_setup(struct bench_ctx *c, struct bench_report *rep)
{
    const struct bench_opts *o = c->o;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), maxsz = o->sizes[o->nsizes - 1];
    long slots = 1;

    c->stride = (maxsz + page - 1) / page * page;
    if (c->stride == 0)
        c->stride = page;
    for (int k = 0; k < o->nkinds; k++)
        if (o->check && o->order[k] != BENCH_LATENCY)
            slots = o->window;
    c->sbuf = bench_alloc(c->stride);
    c->rbuf = bench_alloc(c->stride * (size_t)slots);
    /* touch every page now, outside the timing; osu's 'a' and 'b' */
    memset(c->sbuf, 'a', c->stride);
    memset(c->rbuf, 'b', c->stride * (size_t)slots);
    c->sreq = calloc((size_t)o->window, sizeof(*c->sreq));
    c->rreq = calloc((size_t)o->window, sizeof(*c->rreq));
    c->st = calloc((size_t)o->window, sizeof(*c->st));
    if (!c->sreq || !c->rreq || !c->st)
        bench_fail("out of memory");

    rep->nres = (size_t)o->nkinds * o->nsizes;
    if (!(rep->res = calloc(rep->nres, sizeof(*rep->res))))
        bench_fail("out of memory");
    for (size_t i = 0; i < rep->nres; i++) {
        struct bench_result *r = &rep->res[i];
        r->kind = o->order[i / o->nsizes];
        r->size = o->sizes[i % o->nsizes];
        bench_counts(o, r);
        r->runs = calloc((size_t)o->repeat, sizeof(double));
        r->runs_rate = calloc((size_t)o->repeat, sizeof(double));
        if (r->kind == BENCH_LATENCY && c->rank == 0)
            r->samples = calloc((size_t)o->repeat * (size_t)r->iters, sizeof(double));
        if (!r->runs || !r->runs_rate || (r->kind == BENCH_LATENCY && c->rank == 0 &&
                                          !r->samples))
            bench_fail("out of memory for %s results", bench_kind_name[r->kind]);
    }
}

static void bench_measure(struct bench_ctx *c, struct bench_report *rep)
{
    const struct bench_opts *o = c->o;
    struct bench_progress p;
    char step[64];

    bench_progress_start(&p, rep, o->quiet || c->rank != 0);

    for (c->run = 0; c->run < o->repeat; c->run++) {
        for (size_t i = 0; i < rep->nres; i++) {
            struct bench_result *r = &rep->res[i];
            snprintf(step, sizeof(step), "%s %zu B", bench_kind_name[r->kind], r->size);
            bench_step = step;
            bench_progress_step(&p, r);
            bench_pair_sync(c);
            switch (r->kind) {
            case BENCH_LATENCY: bench_latency(c, r); break;
            case BENCH_BW:      bench_bw(c, r);      break;
            default:            bench_bibw(c, r);    break;
            }
        }
    }
    bench_step = "";
    bench_progress_end();
}

/* Everything, so that sanitizer builds (CVIA_SANITIZE) end clean. */
static void bench_free(struct bench_ctx *c, struct bench_report *rep,
                       struct bench_opts *o)
{
    for (size_t i = 0; i < rep->nres; i++) {
        free(rep->res[i].runs);
        free(rep->res[i].runs_rate);
        free(rep->res[i].samples);
    }
    free(rep->res);
    free(c->sbuf);
    free(c->rbuf);
    free(c->sreq);
    free(c->rreq);
    free(c->st);
    free(o->sizes);
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    struct bench_report rep;
    struct bench_ctx c;
    char **orig = calloc((size_t)argc + 1, sizeof(*orig));
    FILE *out = NULL;
    int rc, size, go = 1;

    if (!orig)
        return 1;
    memcpy(orig, argv, (size_t)argc * sizeof(*argv));   /* getopt permutes */
    bench_parse(argc, argv, &o);
    if (!getenv("CVIA_BOOT_ADDR"))
        return bench_relaunch(argc, orig, o.bind);
    free(orig);

    if ((rc = cvia_init(NULL, NULL)) < 0) {
        fprintf(stderr, "cvia-bench: init: %s\n", cvia_strerror(rc));
        return 1;
    }
    bench_rank = cvia_rank();
    size = cvia_size();
    if (size < 2) {
        fprintf(stderr, "cvia-bench: needs 2 ranks, the job has %d\n", size);
        cvia_finalize();
        free(o.sizes);
        return 2;
    }
    if (bench_rank >= 2) {
        BENCH_CALL("barrier", cvia_barrier());
        free(o.sizes);
        return cvia_finalize() < 0;
    }

    memset(&rep, 0, sizeof(rep));
    memset(&c, 0, sizeof(c));
    c.o = &o;
    c.rank = bench_rank;
    c.peer = 1 - bench_rank;
    if (bench_rank == 0 && o.output && !(out = fopen(o.output, "w"))) {
        fprintf(stderr, "cvia-bench: %s: %s\n", o.output, strerror(errno));
        go = 0;
    }
    if (!bench_exchange(&c, &rep.place, 0, go)) {
        cvia_barrier();
        cvia_finalize();
        free(o.sizes);
        return 1;
    }
    rep.version = cvia_version();
    rep.nranks = size;
    rep.repeat = (int)o.repeat;
    rep.check = o.check;
    rep.bind = getenv(BENCH_ENV_REEXEC);
    if (gethostname(rep.host, sizeof(rep.host) - 1))
        snprintf(rep.host, sizeof(rep.host), "unknown");
    bench_machine(rep.cpu_model, sizeof(rep.cpu_model), &rep.ncpus);
    {
        time_t now = time(NULL);
        struct tm tm;
        strftime(rep.date, sizeof(rep.date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    }
    if (bench_rank == 0)
        bench_timer_info(&rep);

    bench_setup(&c, &rep);
    bench_measure(&c, &rep);
    bench_exchange(&c, &rep.place, 1, 1);

    BENCH_CALL("barrier", cvia_barrier());
    if ((rc = cvia_finalize()) < 0)
        fprintf(stderr, "cvia-bench: finalize: %s\n", cvia_strerror(rc));
    if (bench_rank == 0) {
        struct bench_out bo = { o.csv, o.json, out, o.output, o.plot };
        if (bench_report(&rep, &bo))
            rc = -1;
    }
    bench_free(&c, &rep, &o);
    return rc < 0;
}
