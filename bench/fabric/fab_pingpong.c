/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_pingpong: what the libfabric provider layer costs. Two ranks under
 * cvia-run (or mpirun) ping-pong the same sizes through corevia's own API
 * (cvia_send / cvia_recv) and through libfabric with the corevia provider
 * (fi_tsend / fi_trecv, completions polled from the CQ), in interleaved
 * rounds, and print the median of each round's p50 half round trip and
 * their ratio. Every payload is checked.
 *
 *   cvia-run -n 2 fab_pingpong [--sizes 8,4096] [--iters N] [--rounds R] [--csv]
 *                              [--thread serialized|multiple] [--calls plain|mtl]
 *                              [--test latency|rate] [--window W] [--only cvia|fi]
 *
 * --calls mtl: the fi side makes the calls Open MPI's mtl ofi (4.1) makes
 * for a blocking MPI_Send/MPI_Recv ping-pong: fi_tinjectdata (the source
 * rank as CQ data) up to the provider's inject size, else fi_tsenddata and
 * a wait for its completion; fi_trecv; and each wait reads the CQ 100
 * entries at a time until -FI_EAGAIN, then looks whether its operation
 * completed (opal_progress -> ompi_mtl_ofi_progress). Against osu_mpi
 * latency over the provider, what is left is Open MPI's own code (pml cm,
 * the mtl's requests and callbacks, opal_progress). Default: plain, the
 * fi_tsend / one-entry reads of any small libfabric program.
 *
 * --test rate: the message rate of a stream instead of the ping-pong, as
 * osu_mbw_mr measures it (one pair): rank 0 posts a window of W (64)
 * non-blocking sends, waits for them all, then for a 4-byte reply that
 * rank 1 sends once it has received the whole window into W posted
 * receives. The cvia side uses cvia_isend/cvia_irecv and cvia_waitall; the
 * fi side makes the calls Open MPI's mtl ofi makes for it: fi_trecv for
 * each receive, fi_tsenddata (the source rank as CQ data, a completion per
 * message) for each send, 100-entry fi_cq_read until -FI_EAGAIN while it
 * waits, fi_tinjectdata for the reply. Printed: the median over the rounds
 * of each round's messages per second (10^6/s), and fi / cvia.
 *
 * --only cvia|fi: run that side alone (for a profiler); the other reads 0.
 *
 * --thread: the level both APIs run at. serialized (default, a single-
 * threaded program as MPI below MPI_THREAD_MULTIPLE): cvia_init_thread at
 * CVIA_THREAD_SERIALIZED and a domain asking FI_THREAD_DOMAIN; multiple:
 * cvia_init (CVIA_THREAD_MULTIPLE) and the provider's default, FI_THREAD_SAFE.
 *
 * FI_PROVIDER_PATH must name the directory of libcorevia-fi.so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <corevia/corevia.h>

#define MAX_SIZES 32

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static fi_addr_t peer_addr;
static int multiple;   /* --thread multiple */
static int mtl_calls;  /* --calls mtl */
static size_t inject_size;
static int rate_test;  /* --test rate */
static int window = 64;
static int only = -1;  /* --only cvia|fi: 0 or 1, for profiling one side */

static void die(const char *what, long rc)
{
    fprintf(stderr, "fab_pingpong: rank %d: %s: %ld (%s)\n", cvia_rank(), what, rc,
            rc < 0 ? fi_strerror((int)-rc) : "");
    cvia_abort(1, what);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fab_open(void)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
    struct fi_av_attr ava = { .type = FI_AV_MAP };
    char name[64], pname[64];
    size_t len = sizeof(name);
    long rc;
    int peer = 1 - cvia_rank();

    hints->caps = FI_TAGGED;
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup("corevia");
    hints->domain_attr->threading = multiple ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
    if ((rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info)))
        die("fi_getinfo (is FI_PROVIDER_PATH set?)", rc);
    if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
        (rc = fi_domain(fabric, info, &domain, NULL)) ||
        (rc = fi_endpoint(domain, info, &ep, NULL)) ||
        (rc = fi_cq_open(domain, &cqa, &cq, NULL)) ||
        (rc = fi_av_open(domain, &ava, &av, NULL)) ||
        (rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(ep, &av->fid, 0)) ||
        (rc = fi_enable(ep)) ||
        (rc = fi_getname(&ep->fid, name, &len)))
        die("opening the fabric", rc);
    /* the names go through corevia itself, which the provider shares */
    if ((rc = cvia_send(name, len, peer, 1)) || (rc = cvia_recv(pname, sizeof(pname), peer, 1, NULL)))
        die("exchanging names", rc);
    if ((rc = fi_av_insert(av, pname, 1, &peer_addr, 0, NULL)) != 1)
        die("fi_av_insert", rc);
    inject_size = info->tx_attr->inject_size;
    fi_freeinfo(hints);
    fi_freeinfo(info);
}

static void fab_close(void)
{
    fi_close(&ep->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
}

static void fi_wait1(void)
{
    struct fi_cq_tagged_entry e;
    ssize_t n;

    while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
        ;
    if (n != 1) {
        struct fi_cq_err_entry err = { 0 };
        fi_cq_readerr(cq, &err, 0);
        die("completion", -err.err);
    }
}

/* As mtl ofi waits: batches of 100 until the CQ answers -FI_EAGAIN, then
 * is ours among them? (one operation outstanding: any completion is). */
static void fi_wait_mtl(void)
{
    static struct fi_cq_tagged_entry e[100];
    ssize_t n;
    int got = 0;

    for (;;) {
        while ((n = fi_cq_read(cq, e, 100)) > 0)
            got += (int)n;
        if (n != -FI_EAGAIN) {
            struct fi_cq_err_entry err = { 0 };
            fi_cq_readerr(cq, &err, 0);
            die("completion", -err.err);
        }
        if (got)
            return;
    }
}

static void fi_send_one(const char *sbuf, size_t size)
{
    long rc;

    if (!mtl_calls) {
        if ((rc = fi_tsend(ep, sbuf, size, NULL, peer_addr, 7, NULL)))
            die("fi_tsend", rc);
        fi_wait1();
    } else if (size <= inject_size) {
        if ((rc = fi_tinjectdata(ep, sbuf, size, (uint64_t)cvia_rank(), peer_addr, 7)))
            die("fi_tinjectdata", rc);
    } else {
        if ((rc = fi_tsenddata(ep, sbuf, size, NULL, (uint64_t)cvia_rank(), peer_addr, 7, NULL)))
            die("fi_tsenddata", rc);
        fi_wait_mtl();
    }
}

static void fi_recv_one(char *rbuf, size_t size)
{
    long rc;

    if ((rc = fi_trecv(ep, rbuf, size, NULL, peer_addr, 7, 0, NULL)))
        die("fi_trecv", rc);
    if (mtl_calls)
        fi_wait_mtl();
    else
        fi_wait1();
}

/* One round: @iters ping-pongs of @size bytes; returns the p50 half round trip. */
static double round_p50(int use_fi, size_t size, int iters, char *sbuf, char *rbuf, double *t)
{
    int me = cvia_rank(), peer = 1 - me;
    long rc;

    for (int i = -iters / 10; i < iters; i++) {
        double t0 = now_us();
        memset(sbuf, (char)(i + me), size < 8 ? size : 8);
        if (me == 0) {
            if (use_fi) {
                fi_send_one(sbuf, size);
                fi_recv_one(rbuf, size);
            } else {
                if ((rc = cvia_send(sbuf, size, peer, 7)) ||
                    (rc = cvia_recv(rbuf, size, peer, 7, NULL)))
                    die("cvia", rc);
            }
        } else {
            if (use_fi) {
                fi_recv_one(rbuf, size);
                fi_send_one(sbuf, size);
            } else {
                if ((rc = cvia_recv(rbuf, size, peer, 7, NULL)) ||
                    (rc = cvia_send(sbuf, size, peer, 7)))
                    die("cvia", rc);
            }
        }
        if (size && rbuf[0] != (char)(i + peer))
            die("payload check", rbuf[0]);
        if (i >= 0)
            t[i] = (now_us() - t0) / 2;
    }
    qsort(t, (size_t)iters, sizeof(double), cmp_double);
    return t[iters / 2];
}


/* ---- --test rate ---------------------------------------------------------- */

/* Read the CQ as mtl ofi does (100 entries until -FI_EAGAIN); returns the
 * completions seen (no error expected). */
static long fi_drain_mtl(void)
{
    static struct fi_cq_tagged_entry e[100];
    ssize_t n;
    long got = 0;

    while ((n = fi_cq_read(cq, e, 100)) > 0)
        got += n;
    if (n != -FI_EAGAIN) {
        struct fi_cq_err_entry err = { 0 };
        fi_cq_readerr(cq, &err, 0);
        die("completion", -err.err);
    }
    return got;
}

/* One round of @iters windows of @size bytes; returns messages per second. */
static double round_rate(int use_fi, size_t size, int iters, char *sbuf, char *rbuf)
{
    int me = cvia_rank(), peer = 1 - me;
    cvia_req_t *reqs = calloc((size_t)window, sizeof(*reqs));
    int ack = 0;
    double t0 = 0;
    long rc;

    if (!reqs)
        die("out of memory", -ENOMEM);
    for (int i = -iters / 10; i < iters; i++) {
        if (i == 0)
            t0 = now_us();
        if (me == 0) {
            memset(sbuf, (char)i, size < 8 ? size : 8);
            if (use_fi) {
                long need = window;
                for (int w = 0; w < window; w++)
                    if ((rc = fi_tsenddata(ep, sbuf, size, NULL, (uint64_t)me, peer_addr, 7,
                                           &reqs[w])))
                        die("fi_tsenddata", rc);
                while (need > 0)
                    need -= fi_drain_mtl();
                if ((rc = fi_trecv(ep, &ack, sizeof(ack), NULL, peer_addr, 8, 0, &ack)))
                    die("fi_trecv", rc);
                fi_wait_mtl();
            } else {
                for (int w = 0; w < window; w++)
                    if ((rc = cvia_isend(sbuf, size, peer, 7, &reqs[w])))
                        die("cvia_isend", rc);
                if ((rc = cvia_waitall((size_t)window, reqs, NULL)) ||
                    (rc = cvia_recv(&ack, sizeof(ack), peer, 8, NULL)))
                    die("cvia", rc);
            }
        } else {
            /* each receive of a window into its own slice of rbuf */
            if (use_fi) {
                long need = window;
                for (int w = 0; w < window; w++)
                    if ((rc = fi_trecv(ep, rbuf + (size_t)w * size, size, NULL, peer_addr, 7, 0,
                                       &reqs[w])))
                        die("fi_trecv", rc);
                while (need > 0)
                    need -= fi_drain_mtl();
                if ((rc = fi_tinjectdata(ep, &ack, sizeof(ack), (uint64_t)me, peer_addr, 8)))
                    die("fi_tinjectdata", rc);
            } else {
                for (int w = 0; w < window; w++)
                    if ((rc = cvia_irecv(rbuf + (size_t)w * size, size, peer, 7, &reqs[w])))
                        die("cvia_irecv", rc);
                if ((rc = cvia_waitall((size_t)window, reqs, NULL)) ||
                    (rc = cvia_send(&ack, sizeof(ack), peer, 8)))
                    die("cvia", rc);
            }
            if (size && (rbuf[0] != (char)i || rbuf[(size_t)(window - 1) * size] != (char)i))
                die("payload check", rbuf[0]);
        }
    }
    double t = now_us() - t0;
    free(reqs);
    return (double)iters * window / t;   /* 10^6 messages per second */
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = { 8, 4096 }, nsizes = 2, maxsize = 0;
    int iters = 10000, rounds = 5, csv = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cvia-run -n 2 fab_pingpong [--sizes S,S,...] [--iters N] "
                   "[--rounds R] [--csv] [--thread serialized|multiple] [--calls plain|mtl]\n"
                   "       [--test latency|rate] [--window W] [--only cvia|fi]\n"
                   "8 B and 4 KiB half round trips through cvia_send/recv and through\n"
                   "fi_tsend/trecv with the corevia provider, interleaved; medians.\n"
                   "--test rate: osu_mbw_mr's message rate (window W, 64) through\n"
                   "cvia_isend/irecv and through mtl ofi's calls (fi_tsenddata, fi_trecv,\n"
                   "100-entry CQ reads), in 10^6 messages/s.\n");
            return 0;
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            char *s = argv[++i], *end;
            nsizes = 0;
            while (*s && nsizes < MAX_SIZES) {
                sizes[nsizes++] = strtoul(s, &end, 10);
                if (end == s) {
                    fprintf(stderr, "fab_pingpong: bad --sizes '%s'\n", argv[i]);
                    return 2;
                }
                s = *end == ',' ? end + 1 : end;
            }
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--csv")) {
            csv = 1;
        } else if (!strcmp(argv[i], "--thread") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "serialized") && strcmp(v, "multiple")) {
                fprintf(stderr, "fab_pingpong: --thread: '%s' is not serialized or multiple\n", v);
                return 2;
            }
            multiple = !strcmp(v, "multiple");
        } else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "plain") && strcmp(v, "mtl")) {
                fprintf(stderr, "fab_pingpong: --calls: '%s' is not plain or mtl\n", v);
                return 2;
            }
            mtl_calls = !strcmp(v, "mtl");
        } else if (!strcmp(argv[i], "--test") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "latency") && strcmp(v, "rate")) {
                fprintf(stderr, "fab_pingpong: --test: '%s' is not latency or rate\n", v);
                return 2;
            }
            rate_test = !strcmp(v, "rate");
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "cvia") && strcmp(v, "fi")) {
                fprintf(stderr, "fab_pingpong: --only: '%s' is not cvia or fi\n", v);
                return 2;
            }
            only = !strcmp(v, "fi");
        } else if (!strcmp(argv[i], "--window") && i + 1 < argc) {
            window = atoi(argv[++i]);
            if (window < 1 || window > 4096) {
                fprintf(stderr, "fab_pingpong: --window must be 1..4096\n");
                return 2;
            }
        } else {
            fprintf(stderr, "fab_pingpong: unknown argument '%s' (try --help)\n", argv[i]);
            return 2;
        }
    }
    if (iters < 10 || rounds < 1 || rounds > 99) {
        fprintf(stderr, "fab_pingpong: --iters must be >= 10, --rounds 1..99\n");
        return 2;
    }
    if (rate_test)
        mtl_calls = 1;   /* the stream is always made of mtl ofi's calls */
    int rc = cvia_init_thread(&argc, &argv, multiple ? CVIA_THREAD_MULTIPLE
                                                     : CVIA_THREAD_SERIALIZED, NULL);
    if (rc) {
        fprintf(stderr, "fab_pingpong: cvia_init_thread: %s\n", cvia_strerror(rc));
        return 1;
    }
    if (cvia_size() != 2) {
        fprintf(stderr, "fab_pingpong: needs exactly 2 ranks (cvia-run -n 2)\n");
        cvia_finalize();
        return 2;
    }
    for (size_t k = 0; k < nsizes; k++)
        if (sizes[k] > maxsize)
            maxsize = sizes[k];
    char *sbuf = calloc(1, maxsize + 1), *rbuf = calloc((size_t)window, maxsize + 1);
    double *t = calloc((size_t)iters, sizeof(double));
    double (*p50)[2][100] = calloc(nsizes, sizeof(*p50));
    if (!sbuf || !rbuf || !t || !p50)
        die("out of memory", -ENOMEM);
    fab_open();
    for (int r = 0; r < rounds; r++)
        for (size_t k = 0; k < nsizes; k++)
            for (int m = 0; m < 2; m++) {
                int use_fi = (r + m) & 1;   /* alternate which goes first */
                if (only >= 0 && use_fi != only) {
                    p50[k][use_fi][r] = 0;
                    continue;
                }
                p50[k][use_fi][r] = rate_test ? round_rate(use_fi, sizes[k], iters, sbuf, rbuf)
                                              : round_p50(use_fi, sizes[k], iters, sbuf, rbuf, t);
            }
    if (cvia_rank() == 0) {
        if (csv)
            printf(rate_test ? "size,cvia_mmsg_s,fi_mmsg_s,ratio\n"
                             : "size,cvia_p50_us,fi_p50_us,ratio\n");
        else
            printf("# median over %d rounds of each round's %s, %s\n"
                   "# size        cvia          fi     fi/cvia\n", rounds,
                   rate_test ? "message rate (10^6/s, window of W)" : "p50 half round trip (us)",
                   mtl_calls ? (multiple ? "CVIA_THREAD_MULTIPLE, FI_THREAD_SAFE, mtl ofi's calls"
                                         : "CVIA_THREAD_SERIALIZED, FI_THREAD_DOMAIN, mtl ofi's calls")
                             : (multiple ? "CVIA_THREAD_MULTIPLE, FI_THREAD_SAFE"
                                         : "CVIA_THREAD_SERIALIZED, FI_THREAD_DOMAIN"));
        for (size_t k = 0; k < nsizes; k++) {
            qsort(p50[k][0], (size_t)rounds, sizeof(double), cmp_double);
            qsort(p50[k][1], (size_t)rounds, sizeof(double), cmp_double);
            double c = p50[k][0][rounds / 2], f = p50[k][1][rounds / 2];
            printf(csv ? "%zu,%.3f,%.3f,%.3f\n" : "%-8zu %9.3f %11.3f %11.3f\n", sizes[k], c, f,
                   f / c);
        }
    }
    fab_close();
    free(sbuf);
    free(rbuf);
    free(t);
    free(p50);
    return cvia_finalize() ? 1 : 0;
}
