/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_cqread: what fi_cq_read answers around the provider's two shortcuts
 * (DESIGN.md, the libfabric provider, "Reading a CQ"): a read right after
 * one that emptied the queue does no progress round, and the queue's ring
 * is indexed by a mask (its size a power of two, grown by doubling).
 * Under cvia-run -n 2; names through files in DIR (argv[1]); argv[2] the
 * domain's threading: "domain" (FI_THREAD_DOMAIN: the provider's locks
 * off) or "safe" (FI_THREAD_SAFE: on).
 *   1. Rounds of N tagged sends each way (N = 100, 300, 77) into a CQ
 *      opened with size 100 (rounds run back to back: a round's messages
 *      may come before the receives for them), read in batches of 7: every
 *      send and every receive completes once, the receives in the order they were posted, with
 *      the bytes sent in that order (a send the peer's ring could not take
 *      at once completes later: sends in any order); most sends complete
 *      at once on one host, so the ring wraps and grows while it holds
 *      entries.
 *   2. Rank 1 posts receives A and B, then tells rank 0, which sends A's
 *      message (only that one can complete on rank 1 now). The read
 *      that returns A leaves the queue empty; fi_cancel(B) then queues an
 *      error, and the next read must report it (-FI_EAVAIL, FI_ECANCELED
 *      for B's context), not -FI_EAGAIN.
 *   3. After that drained read, a message rank 0 sends only when told to
 *      must still arrive through reads alone (bounded: 20 s).
 * Prints "ok cqread (THREADING)" on rank 0.
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

#include "fab_open.h"

static int me;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_cqread: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_cqread: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

#define NMAX 300
#define BATCH 7

static struct fid_ep *ep;
static struct fid_cq *cq;
static fi_addr_t peer;
static char txctx[NMAX], rxctx[NMAX], ctl_ctx, a_ctx, b_ctx;
static uint64_t inbuf[NMAX];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read (batches of BATCH) until @want completions came; none may be an
 * error. Each is handed to @fn. Bounded: 20 s. */
static void collect(int want, void (*fn)(const struct fi_cq_tagged_entry *))
{
    struct fi_cq_tagged_entry e[BATCH];
    double t0 = now_s();
    int got = 0;

    while (got < want) {
        ssize_t n = fi_cq_read(cq, e, BATCH);
        if (n == -FI_EAGAIN) {
            EXPECT(now_s() - t0 < 20, "%d of %d completions after 20 s", got, want);
            continue;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = { 0 };
            fi_cq_readerr(cq, &err, 0);
            EXPECT(0, "error completion %d (%s)", err.err, fi_strerror(err.err));
        }
        CHECK(n);
        EXPECT(n <= BATCH && got + n <= want, "%zd completions at once, %d of %d before",
               n, got, want);
        for (ssize_t i = 0; i < n; i++)
            fn(&e[i]);
        got += (int)n;
    }
}

static int next_tx, next_rx, round_n;
static char tx_seen[NMAX];

static void check_one(const struct fi_cq_tagged_entry *e)
{
    const char *c = e->op_context;

    if (c >= txctx && c < txctx + NMAX) {
        EXPECT(e->flags & FI_SEND, "send context without FI_SEND (%#llx)",
               (unsigned long long)e->flags);
        EXPECT(!tx_seen[c - txctx], "send %td completed twice", c - txctx);
        tx_seen[c - txctx] = 1;
        next_tx++;
    } else if (c >= rxctx && c < rxctx + NMAX) {
        int i = (int)(c - rxctx);
        EXPECT(e->flags & FI_RECV, "receive context without FI_RECV");
        EXPECT(i == next_rx, "receive %d completed, %d expected", i, next_rx);
        EXPECT(e->len == sizeof(uint64_t) && e->tag == 10,
               "receive %d: len %zu tag %llu", i, e->len, (unsigned long long)e->tag);
        EXPECT(inbuf[i] == (uint64_t)(1000000 * (1 - me) + 1000 * round_n + i),
               "receive %d of round %d: %llu", i, round_n, (unsigned long long)inbuf[i]);
        next_rx++;
    } else {
        EXPECT(0, "a completion with an unknown context");
    }
}

static void ignore_one(const struct fi_cq_tagged_entry *e)
{
    (void)e;
}

/* One message of @tag (a word) each way, to keep the ranks in step. */
static void step(uint64_t tag)
{
    uint64_t out = tag, in = 0;

    CHECK(fi_trecv(ep, &in, sizeof(in), NULL, peer, tag, 0, &ctl_ctx));
    CHECK(fi_tsend(ep, &out, sizeof(out), NULL, peer, tag, &ctl_ctx));
    collect(2, ignore_one);
    EXPECT(in == tag, "step %llu: got %llu", (unsigned long long)tag, (unsigned long long)in);
}

static void round_of(int r, int n)
{
    static uint64_t out[NMAX];

    round_n = r;
    next_tx = next_rx = 0;
    memset(tx_seen, 0, sizeof(tx_seen));
    for (int i = 0; i < n; i++)
        CHECK(fi_trecv(ep, &inbuf[i], sizeof(inbuf[i]), NULL, peer, 10, 0, &rxctx[i]));
    for (int i = 0; i < n; i++) {
        out[i] = (uint64_t)(1000000 * me + 1000 * r + i);
        CHECK(fi_tsend(ep, &out[i], sizeof(out[i]), NULL, peer, 10, &txctx[i]));
    }
    collect(2 * n, check_one);
    EXPECT(next_tx == n && next_rx == n, "round %d: %d sends, %d receives", r, next_tx, next_rx);
}

int main(int argc, char **argv)
{
    struct fab_open o = { 0 };
    struct fab_opts opts = { .caps = FI_TAGGED | FI_DIRECTED_RECV, .av_type = FI_AV_TABLE,
                             .cq_size = 100 };

    opts.threading = fab_mode_arg(argc, argv, "fab_cqread");
    me = fab_rank();
    fab_pair_up(&o, &opts, argv[1], "cq", me, &peer, "fab_cqread");
    ep = o.ep;
    cq = o.cq;

    /* 1. batches through a ring that wraps and grows */
    round_of(1, 100);
    round_of(2, NMAX);
    round_of(3, 77);

    /* 2. an error queued after a read that emptied the queue */
    if (me == 1) {
        uint64_t a = 0, b = 0;
        struct fi_cq_tagged_entry e[4];
        struct fi_cq_err_entry x = { 0 };
        double t0 = now_s();
        ssize_t n;

        uint64_t ready = 0x7ead;
        CHECK(fi_trecv(ep, &a, sizeof(a), NULL, peer, 20, 0, &a_ctx));
        CHECK(fi_trecv(ep, &b, sizeof(b), NULL, peer, 21, 0, &b_ctx));
        CHECK(fi_tinject(ep, &ready, sizeof(ready), peer, 24));   /* no completion */
        while ((n = fi_cq_read(cq, e, 4)) == -FI_EAGAIN)
            EXPECT(now_s() - t0 < 20, "no completion for A after 20 s");
        EXPECT(n == 1 && e[0].op_context == &a_ctx && a == 0xa,
               "read %zd, A's completion with 0xa expected (got %llu)", n, (unsigned long long)a);
        CHECK(fi_cancel(&ep->fid, &b_ctx));
        n = fi_cq_read(cq, e, 4);
        EXPECT(n == -FI_EAVAIL, "the read after a cancel answered %zd, -FI_EAVAIL expected", n);
        EXPECT(fi_cq_readerr(cq, &x, 0) == 1, "fi_cq_readerr");
        EXPECT(x.err == FI_ECANCELED && x.op_context == &b_ctx,
               "error %d (%s), FI_ECANCELED for B expected", x.err, fi_strerror(x.err));

        /* 3. the queue is empty and was drained: reads alone bring C */
        uint64_t c = 0, go = 0xc0;
        CHECK(fi_trecv(ep, &c, sizeof(c), NULL, peer, 22, 0, &a_ctx));
        CHECK(fi_tinject(ep, &go, sizeof(go), peer, 23));
        t0 = now_s();
        while ((n = fi_cq_read(cq, e, 4)) == -FI_EAGAIN)
            EXPECT(now_s() - t0 < 20, "no completion for C after 20 s of reads");
        EXPECT(n == 1 && e[0].op_context == &a_ctx && c == 0xc,
               "read %zd, C's completion with 0xc expected (got %llu)", n, (unsigned long long)c);
    } else {
        uint64_t a = 0xa, c = 0xc, go = 0, ready = 0;
        double t0 = now_s();
        struct fi_cq_tagged_entry e[4];
        ssize_t n;

        CHECK(fi_trecv(ep, &ready, sizeof(ready), NULL, peer, 24, 0, &b_ctx));
        collect(1, ignore_one);
        EXPECT(ready == 0x7ead, "rank 1's ready word: %llu", (unsigned long long)ready);
        CHECK(fi_tsend(ep, &a, sizeof(a), NULL, peer, 20, &a_ctx));
        collect(1, ignore_one);
        CHECK(fi_trecv(ep, &go, sizeof(go), NULL, peer, 23, 0, &b_ctx));
        while ((n = fi_cq_read(cq, e, 4)) == -FI_EAGAIN)
            EXPECT(now_s() - t0 < 20, "no word from rank 1 after 20 s");
        EXPECT(n == 1 && go == 0xc0, "read %zd, rank 1's word %llu", n, (unsigned long long)go);
        CHECK(fi_tsend(ep, &c, sizeof(c), NULL, peer, 22, &a_ctx));
        collect(1, ignore_one);
    }
    step(300);

    fab_pair_down(&o, me, "fab_cqread");
    if (me == 0)
        printf("ok cqread (%s)\n", argv[2]);
    return 0;
}
