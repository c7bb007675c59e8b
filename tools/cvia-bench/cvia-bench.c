/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench: point-to-point latency and bandwidth between rank 0 and
 * rank 1, with the OSU Micro-Benchmarks definitions (osu_latency, osu_bw,
 * osu_bibw), so that its figures can be set beside theirs, and the memcpy
 * of one core beside them. This file measures; bench_opts.c parses the
 * command line, bench_run.c launches the job (and the crossover's jobs),
 * bench_place.c places the ranks, bench_output.c reports. The public API,
 * and the topology (cvia__topo_*) for the placement. */
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
#include "bench_mbw.h"
#include "boot/boot_env.h"
#include "util/clock.h"

#define BENCH_LARGE        8192     /* OSU's LARGE_MESSAGE_SIZE */
#define BENCH_ACK_LEN      4        /* osu_bw's reply */

/* Tags; matching is per (source, tag), so one tag serves both directions. */
enum { TAG_CTRL = 1, TAG_SYNC = 2, TAG_LAT = 10, TAG_BW = 100, TAG_ACK = 101,
       TAG_BIBW = 200 };

static int bench_rank = -1;
static const char *bench_step = "";       /* "latency 4096 B" while measuring */

/* ---- errors --------------------------------------------------------------- */

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

/* ---- measuring ------------------------------------------------------------ */

static int bench_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void bench_timer_info(struct bench_report *rep)
{
    enum { N = 1001 };
    uint64_t d[N], prev = cvia__clock_ns();
    struct timespec res;

    for (int i = 0; i < N; i++) {
        uint64_t t = cvia__clock_ns();
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
    unsigned char *sbuf, *rbuf; /* send / receive buffers, cycled through */
    size_t slen, rlen;          /* their lengths */
    size_t page;
    cvia_req_t *sreq, *rreq;
    cvia_status_t *st;
    unsigned char ack[64];      /* osu_bw's reply */
    unsigned char sync[8];
};

/* Buffers of one size start on a page boundary each. */
static size_t bench_stride(const struct bench_ctx *c, size_t size)
{
    return (size + c->page - 1) / c->page * c->page + (size ? 0 : c->page);
}

/* Receive buffers: --buffers, or a window of them with --check so every
 * message of a window lands apart and can be verified. */
static long bench_nrecv(const struct bench_ctx *c, const struct bench_result *r)
{
    long n = r->nbuf;

    if (c->o->check && (r->kind == BENCH_BW || r->kind == BENCH_BIBW) && r->window > n)
        n = r->window;
    return n;
}

/* The buffer of message @k (counted from the first of the size); with one
 * buffer (OSU's way, the default) no arithmetic at all, so the timed loop
 * is the one the foundation measured. */
static inline unsigned char *bench_sb(const struct bench_ctx *c, const struct bench_result *r,
                                      long k)
{
    if (r->nbuf == 1)
        return c->sbuf;
    return c->sbuf + (size_t)(k % r->nbuf) * bench_stride(c, r->size);
}

static inline unsigned char *bench_rb(const struct bench_ctx *c, const struct bench_result *r,
                                      long k)
{
    long n = bench_nrecv(c, r);

    if (n == 1)
        return c->rbuf;
    return c->rbuf + (size_t)(k % n) * bench_stride(c, r->size);
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
        unsigned char *sb = bench_sb(c, r, i), *rb = bench_rb(c, r, i);
        if (c->rank == 0) {
            uint64_t t0, t1;
            if (check)
                bench_pat_fill(sb, size, bench_seed(size, i, 0, c->run));
            t0 = cvia__clock_ns();
            BENCH_CALL("send", cvia_send(sb, size, 1, TAG_LAT));
            BENCH_CALL("recv", cvia_recv(rb, size, 1, TAG_LAT, stp));
            t1 = cvia__clock_ns();
            if (i >= r->warmup) {
                lat[i - r->warmup] = (double)(t1 - t0) / 2e3;
                sum += lat[i - r->warmup];
            }
            if (check)
                bench_pat_verify(rb, size, bench_seed(size, i, 1, c->run), i, 0, stp);
        } else {
            if (check)
                bench_pat_fill(sb, size, bench_seed(size, i, 1, c->run));
            BENCH_CALL("recv", cvia_recv(rb, size, 0, TAG_LAT, stp));
            BENCH_CALL("send", cvia_send(sb, size, 0, TAG_LAT));
            if (check)
                bench_pat_verify(rb, size, bench_seed(size, i, 0, c->run), i, 0, stp);
        }
    }
    if (c->rank == 0) {
        r->nsamples += (size_t)r->iters;
        r->runs[r->nruns++] = sum / (double)r->iters;
    }
}

/* --check: the send buffers of iteration @i's window hold its pattern. */
static void bench_fill_window(struct bench_ctx *c, struct bench_result *r, long i, int dir)
{
    for (long j = 0; j < r->window && j < r->nbuf; j++)
        bench_pat_fill(bench_sb(c, r, i * r->window + j), r->size,
                       bench_seed(r->size, i, dir, c->run));
}

static void bench_verify_window(struct bench_ctx *c, struct bench_result *r,
                                long i, int from)
{
    for (long j = 0; j < r->window; j++)
        bench_pat_verify(bench_rb(c, r, i * r->window + j), r->size,
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
            t0 = cvia__clock_ns();
        if (c->rank == 0) {
            if (check)
                bench_fill_window(c, r, i, 0);
            for (long j = 0; j < w; j++)
                BENCH_CALL("isend", cvia_isend(bench_sb(c, r, i * w + j), size, 1, TAG_BW,
                                               &c->sreq[j]));
            BENCH_CALL("waitall", cvia_waitall((size_t)w, c->sreq, NULL));
            BENCH_CALL("recv", cvia_recv(c->ack, BENCH_ACK_LEN, 1, TAG_ACK, NULL));
        } else {
            for (long j = 0; j < w; j++)
                BENCH_CALL("irecv", cvia_irecv(bench_rb(c, r, i * w + j), size, 0, TAG_BW,
                                               &c->rreq[j]));
            BENCH_CALL("waitall", cvia_waitall((size_t)w, c->rreq,
                                               check ? c->st : NULL));
            if (check)
                bench_verify_window(c, r, i, 0);
            BENCH_CALL("send", cvia_send(c->ack, BENCH_ACK_LEN, 0, TAG_ACK));
        }
    }
    t1 = cvia__clock_ns();
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
            t0 = cvia__clock_ns();
        if (check)
            bench_fill_window(c, r, i, c->rank);
        for (long j = 0; j < w; j++)
            BENCH_CALL("irecv", cvia_irecv(bench_rb(c, r, i * w + j), size, c->peer, TAG_BIBW,
                                           &c->rreq[j]));
        for (long j = 0; j < w; j++)
            BENCH_CALL("isend", cvia_isend(bench_sb(c, r, i * w + j), size, c->peer, TAG_BIBW,
                                           &c->sreq[j]));
        BENCH_CALL("waitall", cvia_waitall((size_t)w, c->sreq, NULL));
        BENCH_CALL("waitall", cvia_waitall((size_t)w, c->rreq, check ? c->st : NULL));
        if (check)
            bench_verify_window(c, r, i, c->peer);
    }
    t1 = cvia__clock_ns();
    if (c->rank == 0) {
        double s = (double)(t1 - t0) * 1e-9, msgs = 2.0 * (double)w * (double)r->iters;
        r->runs[r->nruns] = (double)size * msgs / s / 1e6;
        r->runs_rate[r->nruns++] = msgs / s;
    }
}

/* memcpy: what one core copies on its own, the yardstick of a single-copy
 * transfer (which also reads and writes each byte once). Rank 0 copies
 * window x iterations times from its send buffers to its receive buffers,
 * cycled through as the messages are; rank 1 waits. */
static void bench_memcpy(struct bench_ctx *c, struct bench_result *r)
{
    const size_t size = r->size;
    const long n = r->warmup + r->iters, w = r->window;
    uint64_t t0 = 0, t1;

    if (c->rank != 0)
        return;
    if (c->o->check)
        for (long k = 0; k < r->nbuf; k++)
            bench_pat_fill(bench_sb(c, r, k), size, bench_seed(size, k, 0, c->run));
    for (long i = 0; i < n; i++) {
        if (i == r->warmup)
            t0 = cvia__clock_ns();
        for (long j = 0; j < w; j++) {
            long k = i * w + j;
            memcpy(bench_rb(c, r, k), bench_sb(c, r, k), size);
            __asm__ volatile("" ::: "memory");   /* every copy happens */
        }
    }
    t1 = cvia__clock_ns();
    if (c->o->check)
        bench_pat_verify(bench_rb(c, r, n * w - 1), size,
                         bench_seed(size, (n * w - 1) % r->nbuf, 0, c->run), n - 1, w - 1, NULL);
    {
        double s = (double)(t1 - t0) * 1e-9, copies = (double)w * (double)r->iters;
        r->runs[r->nruns] = (double)size * copies / s / 1e6;
        r->runs_rate[r->nruns++] = copies / s;
    }
}

/* OSU's defaults, unless --iters / --warmup say otherwise; memcpy as bw. */
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

/* After the run: how each rank reaches the other (cvia_peer_info: the
 * mechanism, and the bytes it single-copied), to rank 0; for crossover,
 * also into the file its launcher named. */
static void bench_paths(struct bench_ctx *c, struct bench_report *rep)
{
    char mine[sizeof(rep->path[0])] = "";
    const char *info = getenv(BENCH_ENV_INFO);
    FILE *f;

    BENCH_CALL("peer info", cvia_peer_info(c->peer, mine, sizeof(mine)));
    if (c->rank == 1) {
        BENCH_CALL("exchange", cvia_send(mine, sizeof(mine), 0, TAG_CTRL));
        return;
    }
    memcpy(rep->path[0], mine, sizeof(mine));
    BENCH_CALL("exchange", cvia_recv(rep->path[1], sizeof(rep->path[1]), 1, TAG_CTRL, NULL));
    rep->path[1][sizeof(rep->path[1]) - 1] = '\0';
    if (info && *info && (f = fopen(info, "w"))) {
        fprintf(f, "path0=%s\npath1=%s\n", rep->path[0], rep->path[1]);
        fclose(f);
    }
}

/* The last-level cache of this CPU (sysfs; else the C library's idea), for
 * --buffers auto. */
static size_t bench_llc(void)
{
    size_t best = 0;

    for (int i = 0; i < 16; i++) {
        char path[96], line[64];
        FILE *f;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(f = fopen(path, "r")))
            break;
        if (fgets(line, sizeof(line), f)) {
            char *end;
            unsigned long long v = strtoull(line, &end, 10);
            v *= *end == 'M' ? 1u << 20 : *end == 'K' ? 1024u : 1u;
            if (v > best)
                best = (size_t)v;
        }
        fclose(f);
    }
    if (!best) {
        long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (v <= 0)
            v = sysconf(_SC_LEVEL2_CACHE_SIZE);
        best = v > 0 ? (size_t)v : 32u << 20;
    }
    return best;
}

void bench_buffers_plan(const struct bench_opts *o, struct bench_report *rep)
{
    rep->buffers = o->buffers;
    rep->arena = o->arena;
    rep->llc = bench_llc();
    /* each side cycles through twice the last-level cache, 16 MiB at least:
     * sender and receiver together then touch four caches' worth */
    rep->footprint = rep->llc * 2 > (16u << 20) ? rep->llc * 2 : 16u << 20;
}

static void *bench_alloc(const struct bench_ctx *c, size_t len)
{
    void *p = NULL;
    int rc;

    if (c->o->arena) {
        if ((rc = cvia_mem_alloc(len, NULL, &p)) < 0)
            bench_fail("--arena: cannot allocate %zu bytes: %s", len, cvia_strerror(rc));
    } else if (posix_memalign(&p, c->page, len ? len : 1)) {
        bench_fail("cannot allocate %zu bytes", len);
    }
    return p;
}

static void bench_release(const struct bench_ctx *c, void *p)
{
    if (c->o->arena)
        cvia_mem_free(p);
    else
        free(p);
}

static void bench_setup(struct bench_ctx *c, struct bench_report *rep)
{
    const struct bench_opts *o = c->o;

    c->page = (size_t)sysconf(_SC_PAGESIZE);
    c->sreq = calloc((size_t)o->window, sizeof(*c->sreq));
    c->rreq = calloc((size_t)o->window, sizeof(*c->rreq));
    c->st = calloc((size_t)o->window, sizeof(*c->st));
    if (!c->sreq || !c->rreq || !c->st)
        bench_fail("out of memory");

    bench_buffers_plan(o, rep);
    rep->nres = (size_t)o->nkinds * o->nsizes;
    if (!(rep->res = calloc(rep->nres, sizeof(*rep->res))))
        bench_fail("out of memory");
    for (size_t i = 0; i < rep->nres; i++) {
        struct bench_result *r = &rep->res[i];
        size_t stride;
        r->kind = o->order[i / o->nsizes];
        r->size = o->sizes[i % o->nsizes];
        bench_counts(o, r);
        stride = bench_stride(c, r->size);
        r->nbuf = o->buffers ? o->buffers :
                  (long)((rep->footprint + stride - 1) / stride);
        if (stride * (size_t)r->nbuf > c->slen)
            c->slen = stride * (size_t)r->nbuf;
        if (stride * (size_t)bench_nrecv(c, r) > c->rlen)
            c->rlen = stride * (size_t)bench_nrecv(c, r);
        r->runs = calloc((size_t)o->repeat, sizeof(double));
        r->runs_rate = calloc((size_t)o->repeat, sizeof(double));
        if (r->kind == BENCH_LATENCY && c->rank == 0)
            r->samples = calloc((size_t)o->repeat * (size_t)r->iters, sizeof(double));
        if (!r->runs || !r->runs_rate || (r->kind == BENCH_LATENCY && c->rank == 0 &&
                                          !r->samples))
            bench_fail("out of memory for %s results", bench_kind_name[r->kind]);
    }
    c->sbuf = bench_alloc(c, c->slen);
    c->rbuf = bench_alloc(c, c->rlen);
    /* touch every page now, outside the timing; osu's 'a' and 'b' */
    memset(c->sbuf, 'a', c->slen);
    memset(c->rbuf, 'b', c->rlen);
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
            case BENCH_MEMCPY:  bench_memcpy(c, r);  break;
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
    bench_release(c, c->sbuf);
    bench_release(c, c->rbuf);
    free(c->sreq);
    free(c->rreq);
    free(c->st);
    free(o->sizes);
}

/* Without a launcher: plan the placement, then launch the job(s). */
static int bench_launch(int argc, char **argv, struct bench_opts *o)
{
    struct bench_plan plan;
    int rc;

    if (o->placement >= 0) {
        if ((rc = bench_plan_make(o->placement, o->cpus, &plan)) < 0) {
            if (plan.text[0])
                fprintf(stderr, "cvia-bench: --placement: %s\n", plan.text);
            return 1;
        }
        if (rc > 0) {
            bench_plan_error(&plan);
            return 3;
        }
        plan.planned = 1;
        bench_plan_export(&plan);
        o->bind = "none";       /* the ranks pin themselves */
    }
    if (o->crossover)
        return bench_crossover(o, o->placement >= 0 ? &plan : NULL);
    return bench_relaunch(argc, argv, o->bind);
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
    if (bench_mbw_claims(argc, argv)) {     /* mbw, and its part of --help */
        free(orig);
        return bench_mbw_main(argc, argv);
    }
    memcpy(orig, argv, (size_t)argc * sizeof(*argv));   /* getopt permutes */
    bench_parse(argc, argv, &o);
    if (o.plan) {
        free(orig);
        free(o.sizes);
        return bench_rank0() ? bench_plan_print(o.placement, o.cpus) : 0;
    }
    /* started by cvia-run, mpirun or srun: a rank of that job, not a
     * launcher of a nested one */
    if (cvia__launch_env().kind == CVIA_LAUNCHER_NONE) {
        rc = bench_launch(argc, orig, &o);
        free(orig);
        free(o.sizes);
        return rc;
    }
    free(orig);
    if (o.crossover)
        bench_usage_error("crossover starts its own jobs: run it without a launcher");

    memset(&rep, 0, sizeof(rep));
    if (o.placement >= 0 || getenv(BENCH_ENV_CPUS)) {
        int r = cvia__launch_env().rank;
        if ((rc = bench_plan_pin(o.placement, o.cpus, r > 0 ? r : 0, &rep.plan))) {
            free(o.sizes);
            return rc;
        }
    }
    if ((rc = cvia_init_thread(NULL, NULL, o.thread, NULL)) < 0) {
        fprintf(stderr, "cvia-bench: init: %s\n", cvia_strerror(rc));
        free(o.sizes);
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
    bench_paths(&c, &rep);

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
