/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */

/*
 * osu_mpi: the OSU micro-benchmark definitions, re-implemented for the peer
 * comparisons (scripts/compare-peers.sh, scripts/compare-mpi.sh).  Not OSU
 * code; same definitions:
 *
 *   latency  half the round trip of a blocking MPI_Send/MPI_Recv ping-pong,
 *            mean over the timed iterations after warm-up (osu_latency); we
 *            also keep every iteration's half round trip for p50/p99/min.
 *   bw       rank 0 posts a window of 64 MPI_Isend, MPI_Waitall, then waits
 *            for a 4-byte ack from rank 1, which posted 64 MPI_Irecv
 *            (osu_bw).  MB = 10^6 bytes.
 *   bibw     both ranks post 64 MPI_Irecv and 64 MPI_Isend, MPI_Waitall
 *            (osu_bibw); bytes in both directions count.
 *   mbw_mr   osu_mbw_mr with one pair: as bw (rank 0 sends a window of 64,
 *            rank 1 acks with 4 bytes), but the clock starts after a barrier
 *            that ends the warm-up, and the time is the senders' largest
 *            (MPI_Reduce MPI_MAX; receivers count 0), as osu_mbw_mr; the
 *            figure of merit is the message rate, messages / s.
 *
 * Iterations follow OSU: latency 10000 (+100 warm-up) up to 8 KiB, 1000
 * (+10) above; bw/bibw/mbw_mr 100 (+10) up to 8 KiB, 20 (+2) above.
 *
 * --csv prints the same columns as `cvia-bench --csv`, so one parser reads
 * both.  Percentiles are nearest-rank over the per-iteration samples.
 *
 * --buffers N|auto cycles through N send and N receive buffers of each size
 * (auto: as many as cover twice the last-level cache, 16 MiB at least, per
 * side), as `cvia-bench --buffers` does, so that large messages are not
 * cache hits; OSU (and the default, 1) reuses one buffer.
 */

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LARGE_MSG     8192
#define WINDOW        64
#define MAX_SIZES     64
#define DEFAULT_MAX   (4u << 20)
#define TAG_DATA      1
#define TAG_ACK       2

enum mode { MODE_LATENCY, MODE_BW, MODE_BIBW, MODE_MBW_MR };

static const char *const mode_name[] = { "latency", "bw", "bibw", "mbw_mr" };

static const char csv_header[] =
    "benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,"
    "latency_min_us,bandwidth_mb_s,msg_rate_per_s";

struct opts {
    enum mode mode;
    int       csv;
    size_t    sizes[MAX_SIZES];
    int       nsizes;
    long      iters;   /* 0: OSU default for the size */
    long      warmup;  /* -1: OSU default for the size */
    long      buffers; /* per side; 0: auto */
};

/* The buffers of one size: nbuf of them, stride bytes apart. */
struct bufs {
    char   *s, *r;
    size_t stride;
    long   nbuf;
};

static char *sb_at(const struct bufs *b, long k) { return b->s + (size_t)(k % b->nbuf) * b->stride; }
static char *rb_at(const struct bufs *b, long k) { return b->r + (size_t)(k % b->nbuf) * b->stride; }

/* The largest cache of CPU 0 (sysfs), 32 MiB if unknown. */
static size_t llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], line[64], *end;
        FILE *f;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(f = fopen(path, "r")))
            break;
        if (fgets(line, sizeof(line), f)) {
            unsigned long long v = strtoull(line, &end, 10);
            v *= *end == 'M' ? 1u << 20 : *end == 'K' ? 1024u : 1u;
            if (v > best)
                best = (size_t)v;
        }
        fclose(f);
    }
    return best ? best : 32u << 20;
}

static void size_bufs(const struct opts *o, size_t size, size_t footprint, struct bufs *b)
{
    b->stride = (size + 4095) / 4096 * 4096;
    b->nbuf = o->buffers ? o->buffers : (long)((footprint + b->stride - 1) / b->stride);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "Usage: %s latency|bw|bibw|mbw_mr [options]   (run with exactly 2 ranks)\n"
            "  --sizes LIST     comma-separated message sizes in bytes; suffixes k/K (KiB)\n"
            "                   and m/M (MiB) accepted (default: 1,2,4,...,4M)\n"
            "  --csv            print CSV (same columns as cvia-bench --csv)\n"
            "  -i, --iterations N  timed iterations per size (default: OSU's, see below)\n"
            "  -x, --warmup N      warm-up iterations per size (default: OSU's)\n"
            "  --buffers N|auto cycle through N send and N receive buffers per size\n"
            "                   (auto: 2 x the last-level cache, >= 16 MiB, per side);\n"
            "                   default 1, as OSU\n"
            "  -h, --help       this text\n"
            "OSU defaults: latency 10000/100 for sizes <= %d, 1000/10 above;\n"
            "              bw, bibw, mbw_mr 100/10 for sizes <= %d, 20/2 above; window %d.\n"
            "mbw_mr: osu_mbw_mr with one pair (rank 0 sends, rank 1 receives): timed\n"
            "              by the sender from a barrier after the warm-up.\n",
            prog, LARGE_MSG, LARGE_MSG, WINDOW);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    default: break;
    }
    if (*end != '\0' || v == 0 || v > (unsigned long long)INT_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_sizes(const char *list, struct opts *o)
{
    char buf[1024];
    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    o->nsizes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->nsizes == MAX_SIZES || parse_size(tok, &o->sizes[o->nsizes]) != 0)
            return -1;
        o->nsizes++;
    }
    return o->nsizes > 0 ? 0 : -1;
}

static int parse_long(const char *s, long min, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

/* Returns 0 to run, 1 for --help, 2 on a usage error. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof(*o));
    o->warmup = -1;
    o->buffers = 1;
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
        return 1;
    if (!strcmp(argv[1], "latency"))
        o->mode = MODE_LATENCY;
    else if (!strcmp(argv[1], "bw"))
        o->mode = MODE_BW;
    else if (!strcmp(argv[1], "bibw"))
        o->mode = MODE_BIBW;
    else if (!strcmp(argv[1], "mbw_mr"))
        o->mode = MODE_MBW_MR;
    else
        return 2;
    for (size_t s = 1; s <= DEFAULT_MAX; s <<= 1)
        o->sizes[o->nsizes++] = s;

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return 1;
        if (!strcmp(a, "--csv")) {
            o->csv = 1;
        } else if (!strcmp(a, "--sizes") && v) {
            if (parse_sizes(v, o))
                return 2;
            i++;
        } else if ((!strcmp(a, "-i") || !strcmp(a, "--iterations")) && v) {
            if (parse_long(v, 1, &o->iters))
                return 2;
            i++;
        } else if ((!strcmp(a, "-x") || !strcmp(a, "--warmup")) && v) {
            if (parse_long(v, 0, &o->warmup))
                return 2;
            i++;
        } else if (!strcmp(a, "--buffers") && v) {
            if (!strcmp(v, "auto"))
                o->buffers = 0;
            else if (parse_long(v, 1, &o->buffers))
                return 2;
            i++;
        } else {
            return 2;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *sorted, long n, double p)
{
    long r = (long)((p / 100.0) * (double)n + 0.999999999);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return sorted[r - 1];
}

struct result {
    long   iters;
    double lat_mean, lat_p50, lat_p99, lat_min; /* us, latency only */
    double mb_s, msg_s;                          /* bw, bibw and mbw_mr only */
};

static void run_latency(int rank, size_t size, long iters, long warmup,
                        const struct bufs *b, double *samples, struct result *r)
{
    double t_start = 0.0;
    int peer = 1 - rank;

    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        char *sbuf = sb_at(b, i), *rbuf = rb_at(b, i);
        if (i == warmup)
            t_start = t0;
        if (rank == 0) {
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
        }
        if (rank == 0 && i >= warmup)
            samples[i - warmup] = (now_us() - t0) / 2.0;
    }
    if (rank != 0)
        return;
    double total = now_us() - t_start;
    qsort(samples, (size_t)iters, sizeof(*samples), cmp_double);
    r->iters    = iters;
    r->lat_mean = total / (2.0 * (double)iters);
    r->lat_p50  = pct(samples, iters, 50.0);
    r->lat_p99  = pct(samples, iters, 99.0);
    r->lat_min  = samples[0];
}

static void run_bw(int rank, int bidir, size_t size, long iters, long warmup,
                   const struct bufs *b, struct result *r)
{
    MPI_Request req[2 * WINDOW];
    double t_start = 0.0;
    int peer = 1 - rank;
    char ack[4] = { 0 };

    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t_start = now_us();
        int n = 0;
        if (bidir || rank == 1)
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rb_at(b, i * WINDOW + w), (int)size, MPI_CHAR, peer, TAG_DATA,
                          MPI_COMM_WORLD, &req[n++]);
        if (bidir || rank == 0)
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sb_at(b, i * WINDOW + w), (int)size, MPI_CHAR, peer, TAG_DATA,
                          MPI_COMM_WORLD, &req[n++]);
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        if (!bidir) {
            if (rank == 0)
                MPI_Recv(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    if (rank != 0)
        return;
    double secs = (now_us() - t_start) * 1e-6;
    double msgs = (double)WINDOW * (double)iters * (bidir ? 2.0 : 1.0);
    r->iters = iters;
    r->mb_s  = msgs * (double)size / secs / 1e6;
    r->msg_s = msgs / secs;
}

/*
 * osu_mbw_mr with one pair (rank 0 the sender, rank 1 the receiver): each
 * iteration a window of 64 MPI_Isend / MPI_Irecv, MPI_Waitall, then a
 * 4-byte ack from the receiver.  A barrier ends the warm-up; the sender
 * times from there, and the reported time is the senders' largest
 * (MPI_Reduce MPI_MAX with the receivers' 0), as osu_mbw_mr.
 */
static void run_mbw_mr(int rank, size_t size, long iters, long warmup,
                       const struct bufs *b, struct result *r)
{
    MPI_Request req[WINDOW];
    double t_start = 0.0, t = 0.0, tmax = 0.0;
    int peer = 1 - rank;
    char ack[4] = { 0 };

    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup) {
            MPI_Barrier(MPI_COMM_WORLD);
            t_start = now_us();
        }
        if (rank == 0) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sb_at(b, i * WINDOW + w), (int)size, MPI_CHAR, peer, TAG_DATA,
                          MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rb_at(b, i * WINDOW + w), (int)size, MPI_CHAR, peer, TAG_DATA,
                          MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        t = (now_us() - t_start) * 1e-6;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    double msgs = (double)WINDOW * (double)iters;
    r->iters = iters;
    r->mb_s  = msgs * (double)size / tmax / 1e6;
    r->msg_s = msgs / tmax;
}

static void print_result(const struct opts *o, size_t size, const struct result *r)
{
    if (o->csv) {
        if (o->mode == MODE_LATENCY)
            printf("%s,%zu,%ld,%.3f,%.3f,%.3f,%.3f,,\n", mode_name[o->mode], size,
                   r->iters, r->lat_mean, r->lat_p50, r->lat_p99, r->lat_min);
        else
            printf("%s,%zu,%ld,,,,,%.2f,%.0f\n", mode_name[o->mode], size, r->iters,
                   r->mb_s, r->msg_s);
    } else if (o->mode == MODE_LATENCY) {
        printf("%-10zu %10ld %12.3f %12.3f %12.3f %12.3f\n", size, r->iters,
               r->lat_mean, r->lat_p50, r->lat_p99, r->lat_min);
    } else {
        printf("%-10zu %10ld %14.2f %14.0f\n", size, r->iters, r->mb_s, r->msg_s);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct opts o;
    int rank, nranks;
    int pa = parse_args(argc, argv, &o);

    if (pa == 1) {
        usage(stdout, argv[0]);
        return 0;
    }
    if (pa == 2) {
        usage(stderr, argv[0]);
        return 2;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 2) {
        if (rank == 0)
            fprintf(stderr, "osu_mpi: needs exactly 2 ranks, got %d\n", nranks);
        MPI_Finalize();
        return 2;
    }

    size_t max_size = 0, footprint = llc_bytes() * 2;
    long max_iters = 0;
    struct bufs b;
    if (footprint < (16u << 20))
        footprint = 16u << 20;
    for (int i = 0; i < o.nsizes; i++) {
        size_bufs(&o, o.sizes[i], footprint, &b);
        if (b.stride * (size_t)b.nbuf > max_size)
            max_size = b.stride * (size_t)b.nbuf;
        long it = o.iters ? o.iters : (o.sizes[i] <= LARGE_MSG ? 10000 : 1000);
        if (it > max_iters)
            max_iters = it;
    }

    /* Page-aligned and touched, as OSU does, so first-touch faults stay out of the timing. */
    char *sbuf = NULL, *rbuf = NULL;
    double *samples = malloc((size_t)max_iters * sizeof(double));
    if (posix_memalign((void **)&sbuf, 4096, max_size) ||
        posix_memalign((void **)&rbuf, 4096, max_size) || !samples) {
        fprintf(stderr, "osu_mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 'a', max_size);
    memset(rbuf, 'b', max_size);

    if (rank == 0) {
        if (o.csv)
            printf("%s\n", csv_header);
        else if (o.mode == MODE_LATENCY)
            printf("# osu_mpi latency (one-way = RTT/2, us)\n%-10s %10s %12s %12s %12s %12s\n",
                   "# size", "iters", "mean", "p50", "p99", "min");
        else
            printf("# osu_mpi %s (window %d, MB = 10^6 B)\n%-10s %10s %14s %14s\n",
                   mode_name[o.mode], WINDOW, "# size", "iters", "MB/s", "msg/s");
    }

    for (int i = 0; i < o.nsizes; i++) {
        size_t size = o.sizes[i];
        int large = size > LARGE_MSG;
        struct result r = { 0 };
        long iters, warmup;
        size_bufs(&o, size, footprint, &b);
        b.s = sbuf;
        b.r = rbuf;
        if (o.mode == MODE_LATENCY) {
            iters  = o.iters ? o.iters : (large ? 1000 : 10000);
            warmup = o.warmup >= 0 ? o.warmup : (large ? 10 : 100);
            run_latency(rank, size, iters, warmup, &b, samples, &r);
        } else {
            iters  = o.iters ? o.iters : (large ? 20 : 100);
            warmup = o.warmup >= 0 ? o.warmup : (large ? 2 : 10);
            if (o.mode == MODE_MBW_MR)
                run_mbw_mr(rank, size, iters, warmup, &b, &r);
            else
                run_bw(rank, o.mode == MODE_BIBW, size, iters, warmup, &b, &r);
        }
        if (rank == 0)
            print_result(&o, size, &r);
    }

    free(samples);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
