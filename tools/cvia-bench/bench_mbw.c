/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench mbw: N concurrent pairs, rank i sending to rank i+N, all at
 * once, with the osu_mbw_mr definition: each sender posts a window of 64
 * non-blocking sends and waits for a 4-byte reply per window; the
 * aggregate bandwidth is the bytes of all pairs over the senders' mean
 * time, the message rate likewise. Pairs are placed from the hwloc
 * topology (paper 001's study: pairs inside a KNL tile, sharing an L2,
 * against pairs across tiles): the launching cvia-bench plans one CPU per
 * rank, starts 2N ranks under cvia-run with --bind none, and each rank
 * pins itself before cvia_init (so its shm segment is first touched
 * there). Buffers come from malloc or cvia_mem_alloc(KIND); the shm
 * segment's tier is CVIA_MEM_SHM_KIND. At the end every rank reports
 * where its memory is, per NUMA node (move_pages, numa_maps), and rank 0
 * sums it: the paper's footprint comparison.
 *
 * Unlike the rest of cvia-bench this file uses internal headers (topo/,
 * mem/): the pairing is a topology decision and the accounting reads the
 * library's regions; both are corevia's own, not a public API yet. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
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
#include "mem/mem_tier.h"
#include "topo/topo.h"
#include "topo/topo_cpu.h"
#include "topo/topo_mem.h"
#include "util/param.h"
#include "bench.h"
#include "bench_mbw.h"
#include "bench_mbw_int.h"
#include "boot/boot_env.h"
#include "util/clock.h"

#define MBW_LARGE      8192         /* osu's LARGE_MESSAGE_SIZE */
#define MBW_MAX_PAIRS  4096
#define MBW_MAX_SIZES  256
#define MBW_ACK_LEN    4
#define MBW_STAT_NODES 64           /* nodes reported per rank */
#define MBW_BUF_CAP    ((size_t)256 << 20)   /* per side, all slots */


enum { TAG_MBW = 300, TAG_MBW_ACK, TAG_MBW_TIME, TAG_MBW_MEM };

struct mbw_opts {
    long   pairs;
    int    pairing;
    size_t sizes[MBW_MAX_SIZES];
    size_t nsizes;
    long   iters, warmup, window, repeat, buffers;
    int    check, quiet, csv, plan;
    const char *kind;               /* --buffer-kind; NULL: malloc */
    const char *cpus, *output, *footprint;
};


static int mbw_rank = -1;

/* ---- errors --------------------------------------------------------------- */

static int mbw_rank0(void)
{
    return cvia__launch_env().rank <= 0;
}

void mbw_usage(const char *fmt, ...)
{
    va_list ap;

    if (mbw_rank0()) {
        fputs("cvia-bench: mbw: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (try --help)\n", stderr);
    }
    exit(2);
}

void mbw_fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (mbw_rank > 0)
        fprintf(stderr, "cvia-bench: mbw: rank %d: %s\n", mbw_rank, msg);
    else
        fprintf(stderr, "cvia-bench: mbw: %s\n", msg);
    if (cvia_initialized())
        cvia_abort(1, msg);
    exit(1);
}

#define MBW_CALL(what, expr)                                                \
    do {                                                                    \
        int rc_ = (expr);                                                   \
        if (rc_ == -CVIA_EABORT)                                            \
            exit(1);                                                        \
        if (rc_ < 0)                                                        \
            mbw_fail("%s: %s", (what), cvia_strerror(rc_));                 \
    } while (0)

/* ---- options -------------------------------------------------------------- */

int bench_mbw_claims(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "mbw") || !strcmp(argv[i], "--help") ||
            !strcmp(argv[i], "-h"))
            return 1;
    }
    return 0;
}

static void mbw_help(void)
{
    printf(
"\n"
"Multi-pair bandwidth:\n"
"  cvia-bench mbw [--pairs N] [--pairing MODE] [OPTIONS]\n"
"  mbw       N concurrent pairs, rank i sending to rank i+N, all at once, as\n"
"            osu_mbw_mr: a window of non-blocking sends, a 4-byte reply per\n"
"            window; aggregate MB/s and messages/s over the pairs. cvia-bench\n"
"            starts 2N ranks under cvia-run, each pinned where the pairing puts\n"
"            it; more ranks than cores is allowed (correctness only, said in\n"
"            the output). Runs alone, not with other benchmarks.\n"
"  -n, --pairs N         concurrent pairs [1]\n"
"      --pairing MODE    where the pairs run, from the hwloc topology\n"
"                        (CVIA_TOPOLOGY=FILE.xml for a recorded machine):\n"
"                        intra-tile (both ranks of a pair share an L2 cache, a\n"
"                        KNL tile), inter-tile (no pair shares an L2, partners\n"
"                        otherwise as near as can be, on the cores intra-tile\n"
"                        would use where possible), compact (rank r on\n"
"                        the r-th usable core), scatter (ranks spread evenly\n"
"                        over the usable cores) [compact]; a pairing the\n"
"                        machine cannot give is an error (exit 3)\n"
"      --buffer-kind KIND  send and receive buffers from cvia_mem_alloc(KIND):\n"
"                        default, hbw, hbw-preferred, ddr, node:N,\n"
"                        near-nic:IFNAME [malloc, as OSU]; the shm segment's\n"
"                        tier is CVIA_MEM_SHM_KIND (the paper's 'shared memory\n"
"                        only' and 'both' variants)\n"
"      --footprint FILE  write, per NUMA node, the bytes corevia placed there\n"
"                        (move_pages) and the ranks' totals (numa_maps, summed\n"
"                        as numastat -p sums processes) as CSV\n"
"  With mbw, --sizes [1-4m], --iters, --warmup, --window [64], --repeat,\n"
"  --buffers N, --check, --csv, --output, --cpus, --plan (print the pairing\n"
"  and exit) and --quiet mean what they mean above.\n");
}

static size_t mbw_size(const char *item, const char *text, size_t len)
{
    char buf[64];
    size_t s;

    if (len == 0 || len >= sizeof(buf))
        mbw_usage("--sizes: bad item '%s'", item);
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (cvia__parse_size(buf, &s) || s > ((size_t)1 << 30))
        mbw_usage("--sizes: '%s' is not a size up to 1g", buf);
    return s;
}

static void mbw_add(struct mbw_opts *o, size_t s)
{
    for (size_t i = 0; i < o->nsizes; i++)
        if (o->sizes[i] == s)
            return;
    if (o->nsizes == MBW_MAX_SIZES)
        mbw_usage("--sizes: more than %d sizes", MBW_MAX_SIZES);
    o->sizes[o->nsizes++] = s;
}

static int mbw_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* SIZE, LO-HI (powers of 2), LO-HI:xF; comma-separated. */
static void mbw_sizes(const char *text, struct mbw_opts *o)
{
    char *copy = strdup(text), *save = NULL, *it;

    if (!copy || !*text)
        mbw_usage("--sizes: empty list");
    o->nsizes = 0;
    for (it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(it, '-'), *colon = strchr(it, ':');
        size_t lo, hi, f = 2;
        if (!dash) {
            mbw_add(o, mbw_size(it, it, strlen(it)));
            continue;
        }
        lo = mbw_size(it, it, (size_t)(dash - it));
        hi = mbw_size(it, dash + 1, colon ? (size_t)(colon - dash - 1) : strlen(dash + 1));
        if (colon) {
            long l;
            const char *fs = colon[1] == 'x' ? colon + 2 : colon + 1;
            if (cvia__parse_long(fs, &l) || l < 2 || l > 1024)
                mbw_usage("--sizes: bad factor in '%s'", it);
            f = (size_t)l;
        }
        if (lo == 0 || hi < lo)
            mbw_usage("--sizes: bad range '%s'", it);
        for (size_t s = lo; s <= hi; s *= f) {
            mbw_add(o, s);
            if (s > hi / f)
                break;
        }
    }
    free(copy);
    qsort(o->sizes, o->nsizes, sizeof(o->sizes[0]), mbw_cmp_size);
}

static long mbw_long(const char *opt, const char *text, long min, long max)
{
    long l;

    if (cvia__parse_long(text, &l) || l < min || l > max)
        mbw_usage("%s: '%s' is not a number in %ld..%ld", opt, text, min, max);
    return l;
}

static void mbw_parse(int argc, char **argv, struct mbw_opts *o)
{
    enum { O_CSV = 256, O_PAIRING, O_KIND, O_CPUS, O_PLAN, O_BUFFERS, O_FOOT };
    static const struct option lopts[] = {
        { "pairs",   required_argument, NULL, 'n' },
        { "pairing", required_argument, NULL, O_PAIRING },
        { "buffer-kind", required_argument, NULL, O_KIND },
        { "footprint", required_argument, NULL, O_FOOT },
        { "sizes",   required_argument, NULL, 's' },
        { "iters",   required_argument, NULL, 'i' },
        { "warmup",  required_argument, NULL, 'w' },
        { "window",  required_argument, NULL, 'W' },
        { "repeat",  required_argument, NULL, 'r' },
        { "buffers", required_argument, NULL, O_BUFFERS },
        { "check",   no_argument,       NULL, 'c' },
        { "csv",     no_argument,       NULL, O_CSV },
        { "output",  required_argument, NULL, 'o' },
        { "cpus",    required_argument, NULL, O_CPUS },
        { "plan",    no_argument,       NULL, O_PLAN },
        { "quiet",   no_argument,       NULL, 'q' },
        { "help",    no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int c, seen_mbw = 0;

    memset(o, 0, sizeof(*o));
    o->pairs = 1;
    o->pairing = MBW_PAIR_COMPACT;
    o->iters = o->warmup = -1;
    o->window = 64;
    o->repeat = 1;
    o->buffers = 1;
    mbw_sizes("1-4m", o);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":n:s:i:w:W:r:co:qh", lopts, NULL)) != -1) {
        switch (c) {
        case 'n': o->pairs = mbw_long("--pairs", optarg, 1, MBW_MAX_PAIRS); break;
        case O_PAIRING:
            for (o->pairing = 0; o->pairing < MBW_PAIR_N; o->pairing++)
                if (!strcmp(optarg, mbw_pairing_names[o->pairing]))
                    break;
            if (o->pairing == MBW_PAIR_N)
                mbw_usage("--pairing: '%s' is not intra-tile, inter-tile, compact or "
                          "scatter", optarg);
            break;
        case O_KIND: {
            struct cvia_kind k;
            if (cvia__kind_parse(optarg, &k) < 0)
                mbw_usage("--buffer-kind: '%s' is not a memory kind (default, hbw, "
                          "hbw-preferred, ddr, node:N, near-nic:IFNAME)", optarg);
            o->kind = optarg;
            break;
        }
        case O_FOOT: o->footprint = optarg; break;
        case 's': mbw_sizes(optarg, o); break;
        case 'i': o->iters = mbw_long("--iters", optarg, 1, 100000000); break;
        case 'w': o->warmup = mbw_long("--warmup", optarg, 0, 100000000); break;
        case 'W': o->window = mbw_long("--window", optarg, 1, 1 << 16); break;
        case 'r': o->repeat = mbw_long("--repeat", optarg, 1, 1000); break;
        case O_BUFFERS: o->buffers = mbw_long("--buffers", optarg, 1, 1 << 16); break;
        case 'c': o->check = 1; break;
        case O_CSV: o->csv = 1; break;
        case 'o': o->output = optarg; break;
        case O_CPUS: o->cpus = optarg; break;
        case O_PLAN: o->plan = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h':
            if (mbw_rank0()) {
                bench_help();
                mbw_help();
            }
            exit(0);
        case ':':
            mbw_usage("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt && optopt < 256)
                mbw_usage("unknown option '-%c' (or not one of mbw's)", optopt);
            mbw_usage("unknown option '%s' (or not one of mbw's)", argv[optind - 1]);
        }
    }
    for (; optind < argc; optind++) {
        if (strcmp(argv[optind], "mbw"))
            mbw_usage("'%s': mbw runs alone, not with other benchmarks", argv[optind]);
        seen_mbw = 1;
    }
    if (!seen_mbw)
        mbw_usage("no benchmark given");
    if ((o->output && !*o->output) || (o->footprint && !*o->footprint))
        mbw_usage("empty file name");
}

/* ---- launching ------------------------------------------------------------ */

static int mbw_is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int mbw_launch(int argc, char **argv, const struct mbw_plan *p)
{
    char self[PATH_MAX], runner[PATH_MAX + 16], np[16], *plan;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    const char *slash, *path = getenv("PATH");
    size_t off = 0;
    char **args;
    int k = 0;

    if (getenv(MBW_ENV_PLAN)) {
        fprintf(stderr, "cvia-bench: mbw: started by cvia-run but CVIA_BOOT_ADDR is not set\n");
        return 1;
    }
    if (n <= 0) {
        fprintf(stderr, "cvia-bench: cannot find own executable: %s\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    slash = strrchr(self, '/');
    snprintf(runner, sizeof(runner), "%.*s/cvia-run", (int)(slash - self), self);
    while (!mbw_is_exec(runner) && path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        snprintf(runner, sizeof(runner), "%.*s/cvia-run", len ? (int)len : 1, len ? path : ".");
        path = end ? end + 1 : NULL;
    }
    if (!mbw_is_exec(runner)) {
        fprintf(stderr, "cvia-bench: cvia-run not found next to %s nor in PATH\n", self);
        return 2;
    }
    if (!(plan = malloc((size_t)p->nranks * 12 + 16)) ||
        !(args = calloc((size_t)argc + 8, sizeof(*args)))) {
        fprintf(stderr, "cvia-bench: out of memory\n");
        return 1;
    }
    off = (size_t)sprintf(plan, "%d:", p->usable);
    for (int r = 0; r < p->nranks; r++)
        off += (size_t)sprintf(plan + off, "%s%d", r ? "," : "", p->pu[r]);
    snprintf(np, sizeof(np), "%d", p->nranks);
    args[k++] = runner;
    args[k++] = "-n";
    args[k++] = np;
    args[k++] = "--bind";
    args[k++] = "none";
    args[k++] = "--";
    args[k++] = self;
    for (int i = 1; i < argc; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    setenv(MBW_ENV_PLAN, plan, 1);
    setenv(BENCH_ENV_REEXEC, "none", 1);
    fflush(NULL);
    execv(runner, args);
    fprintf(stderr, "cvia-bench: cannot run %s: %s\n", runner, strerror(errno));
    free(plan);
    free(args);
    return 1;
}

/* ---- measuring ------------------------------------------------------------ */

static uint64_t mbw_word(uint64_t seed, uint64_t i)
{
    uint64_t x = (seed + i) * 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

static uint64_t mbw_seed(size_t size, long iter, int pair, int run)
{
    uint64_t x = (uint64_t)size * 0x100000001B3ull ^ ((uint64_t)iter << 20) ^
                 ((uint64_t)pair << 40) ^ ((uint64_t)run << 56);
    return (x ^ (x >> 31)) * 0x9E3779B97F4A7C15ull;
}

static void mbw_fill(unsigned char *p, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = mbw_word(seed, i / 8);
        memcpy(p + i, &w, len - i < 8 ? len - i : 8);
    }
}

static void mbw_verify(const unsigned char *p, size_t len, uint64_t seed, long iter,
                       long j, const cvia_status_t *st)
{
    if (st->error || st->len != len)
        mbw_fail("size %zu iteration %ld message %ld: %zu of %zu bytes (error %d)", len,
                 iter, j, st->len, len, st->error);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = mbw_word(seed, i / 8);
        if (memcmp(p + i, &w, len - i < 8 ? len - i : 8))
            mbw_fail("size %zu iteration %ld message %ld: data differ near byte %zu",
                     len, iter, j, i);
    }
}

struct mbw_ctx {
    const struct mbw_opts *o;
    int rank, pairs, peer, sender, pair;
    unsigned char *sbuf, *rbuf;
    size_t stride;
    long sslots, rslots;
    cvia_req_t *req;
    cvia_status_t *st;
    unsigned char ack[8];
};

static void *mbw_alloc(const struct mbw_opts *o, size_t len)
{
    void *p = NULL;
    int rc;

    if (o->kind) {
        if ((rc = cvia_mem_alloc(len, o->kind, &p)) < 0)
            mbw_fail("cvia_mem_alloc(%zu, %s): %s", len, o->kind, cvia_strerror(rc));
    } else if (posix_memalign(&p, 4096, len)) {
        mbw_fail("cannot allocate %zu bytes", len);
    }
    memset(p, 'a', len);   /* touch outside the timing: pages placed now */
    return p;
}

static void mbw_free(const struct mbw_opts *o, void *p)
{
    if (o->kind)
        cvia_mem_free(p);
    else
        free(p);
}

/* One size: osu_mbw_mr's loop; the sender's elapsed seconds. */
static double mbw_one(struct mbw_ctx *c, size_t size, long iters, long warmup, int run)
{
    const long w = c->o->window;
    double t0 = 0;

    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup) {
            MBW_CALL("barrier", cvia_barrier());
            t0 = cvia__clock_s();
        }
        if (c->sender) {
            unsigned char *sb = c->sbuf + (size_t)(i % c->sslots) * c->stride;
            if (c->o->check)
                mbw_fill(sb, size, mbw_seed(size, i, c->pair, run));
            for (long j = 0; j < w; j++) {
                unsigned char *b = c->o->check ? sb
                                   : c->sbuf + (size_t)(j % c->sslots) * c->stride;
                MBW_CALL("isend", cvia_isend(b, size, c->peer, TAG_MBW, &c->req[j]));
            }
            MBW_CALL("waitall", cvia_waitall((size_t)w, c->req, NULL));
            MBW_CALL("recv ack", cvia_recv(c->ack, MBW_ACK_LEN, c->peer, TAG_MBW_ACK, NULL));
        } else {
            for (long j = 0; j < w; j++)
                MBW_CALL("irecv", cvia_irecv(c->rbuf + (size_t)(j % c->rslots) * c->stride,
                                             size, c->peer, TAG_MBW, &c->req[j]));
            MBW_CALL("waitall", cvia_waitall((size_t)w, c->req, c->st));
            if (c->o->check)
                for (long j = 0; j < w; j++)
                    mbw_verify(c->rbuf + (size_t)j * c->stride, size,
                               mbw_seed(size, i, c->pair, run), i, j, &c->st[j]);
            MBW_CALL("send ack", cvia_send(c->ack, MBW_ACK_LEN, c->peer, TAG_MBW_ACK));
        }
    }
    return cvia__clock_s() - t0;
}

static int mbw_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double mbw_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), mbw_cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct mbw_row {
    size_t size;
    long iters;
    double mb_s, msg_s, min_pair_mb_s;
};

/* ---- reporting ------------------------------------------------------------ */

static const char *mbw_bytes(uint64_t v, char *buf, size_t cap)
{
    if (v >= (1ull << 30))
        snprintf(buf, cap, "%.2f GiB", (double)v / (1ull << 30));
    else if (v >= (1ull << 20))
        snprintf(buf, cap, "%.2f MiB", (double)v / (1ull << 20));
    else
        snprintf(buf, cap, "%.1f KiB", (double)v / 1024);
    return buf;
}

/* Memory per node summed over ranks: [0] shm, [1] arena, [2] total,
 * [3] peers' regions mapped (counted in their owners too). */
static void mbw_footprint(FILE *f, FILE *csv, uint64_t (*m)[MBW_STAT_NODES],
                          const struct cvia_tiers *T)
{
    uint64_t s[4] = { 0 };
    char a[32], b[32], c[32], d[32], e[32];

    fprintf(f, "# memory per NUMA node, all ranks: corevia's own placements (shm "
            "segments, arena buffers; move_pages), the ranks' totals (numa_maps, "
            "summed as numastat -p sums processes) and those totals with each shared "
            "segment and arena counted once (unique)\n");
    fprintf(f, "# %-5s %-6s %-12s %-12s %-12s %-12s %s\n", "node", "tier", "shm-segment",
            "arena", "corevia", "ranks-total", "ranks-unique");
    if (csv)
        fprintf(csv, "node,tier,shm_bytes,arena_bytes,corevia_bytes,ranks_total_bytes,"
                "ranks_unique_bytes\n");
    for (int n = 0; n < MBW_STAT_NODES; n++) {
        int g = T ? cvia__tiers_node_tier(T, (unsigned)n) : -1;
        const char *tn = g >= 0 ? T->tier[g].name : "-";
        if (!m[0][n] && !m[1][n] && !m[2][n])
            continue;
        uint64_t uniq = m[2][n] > m[3][n] ? m[2][n] - m[3][n] : 0;
        fprintf(f, "# %-5d %-6s %-12s %-12s %-12s %-12s %s\n", n, tn, mbw_bytes(m[0][n], a, 32),
                mbw_bytes(m[1][n], b, 32), mbw_bytes(m[0][n] + m[1][n], c, 32),
                mbw_bytes(m[2][n], d, 32), mbw_bytes(uniq, e, 32));
        if (csv)
            fprintf(csv, "%d,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                    n, tn, m[0][n], m[1][n], m[0][n] + m[1][n], m[2][n], uniq);
        for (int k = 0; k < 3; k++)
            s[k] += m[k][n];
        s[3] += uniq;
    }
    fprintf(f, "# %-5s %-6s %-12s %-12s %-12s %-12s %s\n", "all", "", mbw_bytes(s[0], a, 32),
            mbw_bytes(s[1], b, 32), mbw_bytes(s[0] + s[1], c, 32), mbw_bytes(s[2], d, 32),
            mbw_bytes(s[3], e, 32));
}

static void mbw_header(FILE *f, const struct mbw_opts *o, const struct mbw_plan *p,
                       hwloc_topology_t t, const struct cvia_tiers *T, const char *source,
                       const char *pre)
{
    char host[256] = "unknown", model[128], date[32], kbuf[64];
    const char *shm = getenv("CVIA_MEM_SHM_KIND"), *tiers = getenv("CVIA_MEM_TIERS");
    time_t now = time(NULL);
    struct tm tm;
    int ncpus = 0;

    gethostname(host, sizeof(host) - 1);
    bench_machine(model, sizeof(model), &ncpus);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    snprintf(kbuf, sizeof(kbuf), "cvia_mem_alloc(%s)", o->kind ? o->kind : "");
    fprintf(f, "%scvia-bench mbw (corevia %s): %d concurrent pair(s), rank i -> rank i+%d, "
            "osu_mbw_mr definition (window %ld, 4-byte reply per window)\n", pre,
            cvia_version(), p->pairs, p->pairs, o->window);
    fprintf(f, "%shost %s, %s, %d CPUs online, %s; topology: %s\n", pre, host, model,
            ncpus, date, source);
    fprintf(f, "%sbuffers: %s, %ld per side%s; shm segment: CVIA_MEM_SHM_KIND=%s%s%s\n", pre,
            o->kind ? kbuf : "malloc", o->buffers, o->check ? ", every message checked" : "",
            shm && *shm ? shm : "default", tiers && *tiers ? ", CVIA_MEM_TIERS=" : "",
            tiers && *tiers ? tiers : "");
    fprintf(f, "%spairing %s; sender and receiver as rank:core/PU (hwloc logical core, "
            "OS PU)\n", pre, mbw_pairing_names[o->pairing]);
    mbw_plan_print(f, t, T, p, o->pairing, pre);
    if (o->repeat > 1)
        fprintf(f, "%seach figure: the median of %ld runs\n", pre, o->repeat);
}

/* ---- main ----------------------------------------------------------------- */

int bench_mbw_main(int argc, char **argv)
{
    struct mbw_opts o;
    struct mbw_plan plan = { 0 };
    struct mbw_ctx c;
    struct mbw_row *rows;
    hwloc_topology_t t = NULL;
    const struct cvia_tiers *T = NULL;
    char source[256] = "", err[320];
    uint64_t (*mem)[MBW_STAT_NODES] = NULL;
    FILE *out = NULL, *foot = NULL;
    double *runs, *rates, *mins, *times;
    size_t maxsz;
    int rc, size;

    mbw_parse(argc, argv, &o);
    if (o.plan || cvia__launch_env().kind == CVIA_LAUNCHER_NONE) {
        if (mbw_open_topo(&t, &T, source, sizeof(source), &plan.xml) < 0)
            return 1;
        if ((rc = mbw_plan_make(t, (int)o.pairs, o.pairing, o.cpus, &plan, err, sizeof(err)))) {
            fprintf(stderr, "cvia-bench: mbw: %s (%s)\n", err, source);
            return rc;
        }
        if (o.plan) {
            if (mbw_rank0()) {
                printf("# mbw plan on %s: %d pair(s), %s, %d usable core(s); sender and "
                       "receiver as rank:cCORE/pPU (hwloc logical core, OS PU), memory "
                       "nodes by OS index\n", source, plan.pairs, mbw_pairing_names[o.pairing],
                       plan.usable);
                mbw_plan_print(stdout, t, T, &plan, o.pairing, "");
            }
            mbw_plan_free(&plan);
            return 0;
        }
        if (plan.xml) {
            fprintf(stderr, "cvia-bench: mbw: CVIA_TOPOLOGY names a recorded machine: "
                    "its pairing can be printed (--plan), not run here\n");
            mbw_plan_free(&plan);
            return 2;
        }
        rc = mbw_launch(argc, argv, &plan);
        mbw_plan_free(&plan);
        return rc;
    }

    /* a rank: pin first, so that what it allocates is placed from there */
    {
        struct cvia_launch_env le = cvia__launch_env();
        int nr = le.size, me = le.rank > 0 ? le.rank : 0;
        cpu_set_t cs;
        if (nr < 0 || le.rank < 0) {
            fprintf(stderr, "cvia-bench: mbw: %s says this is a rank of a job, but not "
                    "which rank of how many (%s)\n", le.var,
                    le.rank < 0 ? "no rank" : "no OMPI_COMM_WORLD_SIZE or SLURM_STEP_NUM_TASKS");
            return 2;
        }
        if (nr != 2 * o.pairs) {
            if (me == 0)
                fprintf(stderr, "cvia-bench: mbw: --pairs %ld needs %ld ranks, the job "
                        "has %d\n", o.pairs, 2 * o.pairs, nr);
            return 2;
        }
        if (mbw_open_topo(&t, &T, source, sizeof(source), &plan.xml) < 0)
            return 1;
        if (mbw_plan_from_env(t, nr, &plan) < 0 &&
            (rc = mbw_plan_make(t, (int)o.pairs, o.pairing, o.cpus, &plan, err, sizeof(err)))) {
            if (me == 0)
                fprintf(stderr, "cvia-bench: mbw: %s (%s)\n", err, source);
            return rc;
        }
        CPU_ZERO(&cs);
        CPU_SET(plan.pu[me], &cs);
        if (sched_setaffinity(0, sizeof(cs), &cs) < 0) {
            fprintf(stderr, "cvia-bench: mbw: rank %d: cannot pin to CPU %d: %s\n", me,
                    plan.pu[me], strerror(errno));
            return 1;
        }
    }
    if ((rc = cvia_init(NULL, NULL)) < 0) {
        fprintf(stderr, "cvia-bench: mbw: init: %s\n", cvia_strerror(rc));
        return 1;
    }
    mbw_rank = cvia_rank();
    size = cvia_size();
    memset(&c, 0, sizeof(c));
    c.o = &o;
    c.rank = mbw_rank;
    c.pairs = (int)o.pairs;
    c.sender = mbw_rank < c.pairs;
    c.pair = mbw_rank % c.pairs;
    c.peer = c.sender ? mbw_rank + c.pairs : mbw_rank - c.pairs;
    maxsz = o.sizes[o.nsizes - 1];
    c.stride = (maxsz + 4095) / 4096 * 4096;
    c.sslots = o.buffers;
    c.rslots = o.check && o.buffers < o.window ? o.window : o.buffers;
    if ((size_t)c.rslots > MBW_BUF_CAP / c.stride || (size_t)c.sslots > MBW_BUF_CAP / c.stride)
        mbw_fail("%ld buffers of %zu bytes per side are more than %zu MiB", c.rslots,
                 c.stride, MBW_BUF_CAP >> 20);
    if (c.sender)
        c.sbuf = mbw_alloc(&o, c.stride * (size_t)c.sslots);
    else
        c.rbuf = mbw_alloc(&o, c.stride * (size_t)c.rslots);
    c.req = calloc((size_t)o.window, sizeof(*c.req));
    c.st = calloc((size_t)o.window, sizeof(*c.st));
    rows = calloc(o.nsizes, sizeof(*rows));
    runs = calloc((size_t)o.repeat, sizeof(double));
    rates = calloc((size_t)o.repeat, sizeof(double));
    mins = calloc((size_t)o.repeat, sizeof(double));
    times = calloc((size_t)c.pairs, sizeof(double));
    mem = calloc(4, sizeof(*mem));
    if (!c.req || !c.st || !rows || !runs || !rates || !mins || !times || !mem)
        mbw_fail("out of memory");
    if (mbw_rank == 0 && o.output && !(out = fopen(o.output, "w")))
        mbw_fail("%s: %s", o.output, strerror(errno));
    if (mbw_rank == 0 && o.footprint && !(foot = fopen(o.footprint, "w")))
        mbw_fail("%s: %s", o.footprint, strerror(errno));

    for (size_t si = 0; si < o.nsizes; si++) {
        size_t sz = o.sizes[si];
        long iters = o.iters > 0 ? o.iters : sz > MBW_LARGE ? 20 : 100;
        long warmup = o.warmup >= 0 ? o.warmup : sz > MBW_LARGE ? 2 : 10;
        for (int run = 0; run < o.repeat; run++) {
            double tt = mbw_one(&c, sz, iters, warmup, run);
            if (mbw_rank == 0) {
                double sum = tt, worst = tt;
                times[0] = tt;
                for (int k = 1; k < c.pairs; k++) {
                    MBW_CALL("gather", cvia_recv(&times[k], sizeof(double), k,
                                                 TAG_MBW_TIME, NULL));
                    sum += times[k];
                    if (times[k] > worst)
                        worst = times[k];
                }
                double msgs = (double)c.pairs * (double)iters * (double)o.window;
                double mean = sum / c.pairs;
                runs[run] = (double)sz * msgs / mean / 1e6;
                rates[run] = msgs / mean;
                mins[run] = (double)sz * (double)iters * (double)o.window / worst / 1e6;
            } else if (c.sender) {
                MBW_CALL("gather", cvia_send(&tt, sizeof(tt), 0, TAG_MBW_TIME));
            }
        }
        if (mbw_rank == 0) {
            rows[si].size = sz;
            rows[si].iters = iters;
            rows[si].mb_s = mbw_median(runs, (int)o.repeat);
            rows[si].msg_s = mbw_median(rates, (int)o.repeat);
            rows[si].min_pair_mb_s = mbw_median(mins, (int)o.repeat);
        }
    }

    /* where the memory is, each rank's, summed at rank 0 */
    {
        struct cvia_mem_stat *s = calloc(1, sizeof(*s));
        uint64_t mine[4][MBW_STAT_NODES];
        if (!s)
            mbw_fail("out of memory");
        memset(mine, 0, sizeof(mine));
        if ((rc = cvia__mem_stat(0, 1, s)) < 0)
            mbw_fail("memory accounting: %s", cvia_strerror(rc));
        for (int n = 0; n < MBW_STAT_NODES && n < s->maxnode; n++) {
            mine[0][n] = s->shm[n];
            mine[1][n] = s->arena[n];
            mine[2][n] = s->total[n];
            mine[3][n] = s->peer[n];
        }
        free(s);
        if (mbw_rank == 0) {
            memcpy(mem, mine, sizeof(mine));
            for (int r = 1; r < size; r++) {
                uint64_t theirs[4][MBW_STAT_NODES];
                MBW_CALL("gather memory", cvia_recv(theirs, sizeof(theirs), r, TAG_MBW_MEM, NULL));
                for (int k = 0; k < 4; k++)
                    for (int n = 0; n < MBW_STAT_NODES; n++)
                        mem[k][n] += theirs[k][n];
            }
        } else {
            MBW_CALL("gather memory", cvia_send(mine, sizeof(mine), 0, TAG_MBW_MEM));
        }
    }
    MBW_CALL("barrier", cvia_barrier());
    if ((rc = cvia_finalize()) < 0)
        fprintf(stderr, "cvia-bench: mbw: finalize: %s\n", cvia_strerror(rc));

    if (mbw_rank == 0) {
        /* the table on stdout (unless --csv); CSV, '#' header first, on
         * stdout with --csv and in --output */
        FILE *streams[2] = { o.csv ? NULL : stdout, o.csv ? stdout : out };
        if (streams[0]) {
            mbw_header(stdout, &o, &plan, t, T, source, "# ");
            printf("# %-10s %14s %14s %18s\n", "Size", "MB/s", "Messages/s",
                   "slowest-pair-MB/s");
            for (size_t i = 0; i < o.nsizes; i++)
                printf("%-12zu %14.2f %14.2f %18.2f\n", rows[i].size, rows[i].mb_s,
                       rows[i].msg_s, rows[i].min_pair_mb_s);
        }
        if (streams[1]) {
            FILE *csv = streams[1];
            const char *shm = getenv("CVIA_MEM_SHM_KIND");
            mbw_header(csv, &o, &plan, t, T, source, "# ");
            fprintf(csv, "size,pairs,pairing,buffers,shm_kind,mb_s,msg_s,min_pair_mb_s,"
                    "iters,window,runs,oversubscribed\n");
            for (size_t i = 0; i < o.nsizes; i++)
                fprintf(csv, "%zu,%d,%s,%s,%s,%.3f,%.3f,%.3f,%ld,%ld,%ld,%d\n", rows[i].size,
                        plan.pairs, mbw_pairing_names[o.pairing], o.kind ? o.kind : "malloc",
                        shm && *shm ? shm : "default", rows[i].mb_s, rows[i].msg_s,
                        rows[i].min_pair_mb_s, rows[i].iters, o.window, o.repeat,
                        plan.oversub);
        }
        mbw_footprint(stdout, foot, mem, T);
        if (out && fclose(out))
            rc = -1;
        if (foot && fclose(foot))
            rc = -1;
    }
    if (c.sbuf)
        mbw_free(&o, c.sbuf);
    if (c.rbuf)
        mbw_free(&o, c.rbuf);
    free(c.req);
    free(c.st);
    free(rows);
    free(runs);
    free(rates);
    free(mins);
    free(times);
    free(mem);
    mbw_plan_free(&plan);
    return rc < 0;
}
