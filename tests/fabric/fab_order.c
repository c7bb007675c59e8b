/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_order: FI_ORDER_SAS through the provider's receive paths at once:
 * the visitor (cvia_inbox_progress: a one-slot eager message matched and
 * copied from the ring slot, to a posted receive or the unexpected queue),
 * the inbox (an eager message of more than a slot, a rendezvous RTS, a
 * control message), truncation and cancel on both. Under cvia-run -n 2;
 * names through files in DIR (argv[1]); argv[2] the domain's threading:
 * "domain" (locks off) or "safe" (then a second thread of the receiver
 * reads its transmit CQ all along: its progress runs the visitor too,
 * under the endpoint's lock).
 * Rank 0 sends NMSG tagged messages, tag = sequence number, of sizes
 * cycling through 0, 8, 24, 1000, 16000 (one ring slot), 16384 (eager,
 * more than a slot) and 100000 (rendezvous). Rank 1 keeps a window of
 * receives posted with every tag bit ignored (they must match in the
 * order sent), posting the next after each completion and sleeping now
 * and then so that some arrive unexpected; every fifth receive holds 4
 * bytes only (FI_ETRUNC, olen the rest), every eleventh has no buffer
 * at all (NULL, 0: FI_ETRUNC but for an empty message), and every seventh post is
 * preceded by a receive for a tag never sent, cancelled at once
 * (FI_ECANCELED, never matched). Every message must complete exactly
 * once, with its bytes, in the receive posted in its place: receive k
 * gets message k (the CQ may report an error ahead of earlier successes:
 * its own queue). Prints "ok order (THREADING)".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fab_open.h"

static int me;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_order: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_order: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

static const size_t sizes[] = { 0, 8, 24, 1000, 16000, 16384, 100000 };
#define NSIZE (sizeof(sizes) / sizeof(sizes[0]))
#define NMSG 3000
#define WINDOW 8
#define SMALL 4
#define NEVER_TAG 0x7fffffffull
#define DONE_TAG 0x7ffffffeull

static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static fi_addr_t peer;
static atomic_int stop;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t len_of(int i)     { return sizes[(size_t)i % NSIZE]; }
static unsigned char byte_of(int i, size_t j) { return (unsigned char)(i * 7 + j * 13 + 1); }
static int small_recv(int r)    { return r % 5 == 4; }

static void sender(void)
{
    static unsigned char *bufs[NMSG];
    static char ctx[NMSG];
    int got = 0;
    double t0;

    for (int i = 0; i < NMSG; i++) {
        size_t len = len_of(i);
        ssize_t rc;
        EXPECT((bufs[i] = malloc(len ? len : 1)), "out of memory");
        for (size_t j = 0; j < len; j++)
            bufs[i][j] = byte_of(i, j);
        t0 = now_s();
        while ((rc = fi_tsend(ep, bufs[i], len, NULL, peer, (uint64_t)i, &ctx[i])) ==
               -FI_EAGAIN) {
            struct fi_cq_tagged_entry e[8];
            ssize_t n = fi_cq_read(txcq, e, 8);
            EXPECT(n == -FI_EAGAIN || n >= 0, "transmit CQ: %zd", n);
            got += n > 0 ? (int)n : 0;
            EXPECT(now_s() - t0 < 30, "send %d refused for 30 s", i);
        }
        CHECK(rc);
    }
    t0 = now_s();
    while (got < NMSG) {
        struct fi_cq_tagged_entry e[8];
        ssize_t n = fi_cq_read(txcq, e, 8);
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            fi_cq_readerr(txcq, &x, 0);
            EXPECT(0, "send error %d (%s)", x.err, fi_strerror(x.err));
        }
        EXPECT(n == -FI_EAGAIN || n >= 0, "transmit CQ: %zd", n);
        got += n > 0 ? (int)n : 0;
        EXPECT(now_s() - t0 < 60, "%d of %d sends complete after 60 s", got, NMSG);
    }
    /* rank 1 has everything once its word comes */
    uint64_t word = 0;
    char dctx;
    struct fi_cq_tagged_entry e;
    CHECK(fi_trecv(ep, &word, sizeof(word), NULL, peer, DONE_TAG, 0, &dctx));
    t0 = now_s();
    while (fi_cq_read(rxcq, &e, 1) != 1)
        EXPECT(now_s() - t0 < 60, "no word from rank 1 after 60 s");
    EXPECT(word == 0x600d, "rank 1's word %#llx", (unsigned long long)word);
    for (int i = 0; i < NMSG; i++)
        free(bufs[i]);
}

/* The receiver's second thread (safe): progress through another CQ. */
static void *reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        struct fi_cq_tagged_entry e[4];
        ssize_t n = fi_cq_read(txcq, e, 4);
        EXPECT(n == -FI_EAGAIN, "the receiver's transmit CQ: %zd", n);
    }
    return NULL;
}

struct rx {
    int r;                   /* the receive's number, in posting order */
    unsigned char *buf;
    size_t cap;
};

static void receiver(int safe)
{
    static struct rx rxs[NMSG];
    static char never_ctx[NMSG], done[NMSG];
    int posted = 0, next = 0, cancelled = 0, ncancel = 0, truncated = 0;
    double t0 = now_s(), last = t0;
    pthread_t th;

    if (safe)
        EXPECT(pthread_create(&th, NULL, reader, NULL) == 0, "pthread_create");
    while (next < NMSG) {
        while (posted < NMSG && posted - next < WINDOW) {
            struct rx *x = &rxs[posted];
            x->r = posted;
            x->cap = posted % 11 == 6 ? 0 : small_recv(posted) ? SMALL : 100000;
            x->buf = x->cap ? malloc(x->cap) : NULL;   /* no buffer at all: NULL, 0 */
            EXPECT(x->buf || !x->cap, "out of memory");
            if (x->cap)
                memset(x->buf, 0xcc, x->cap);
            if (posted % 7 == 3) {   /* a receive nothing matches, cancelled */
                CHECK(fi_trecv(ep, x->buf, x->cap, NULL, peer, NEVER_TAG, 0,
                               &never_ctx[posted]));
                CHECK(fi_cancel(&ep->fid, &never_ctx[posted]));
                ncancel++;
            }
            CHECK(fi_trecv(ep, x->buf, x->cap, NULL, peer, 0, ~0ull, x));
            posted++;
        }
        if (next % 97 == 13)
            usleep(2000);   /* let some arrive unexpected */
        struct fi_cq_tagged_entry e[4];
        ssize_t n = fi_cq_read(rxcq, e, 4);
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            CHECK(fi_cq_readerr(rxcq, &x, 0));
            if (x.err == FI_ECANCELED) {
                char *c = x.op_context;
                EXPECT(c >= never_ctx && c < never_ctx + NMSG, "a cancel for an unknown context");
                cancelled++;
                continue;
            }
            EXPECT(x.err == FI_ETRUNC, "receive error %d (%s)", x.err, fi_strerror(x.err));
            struct rx *r = x.op_context;
            EXPECT(r >= rxs && r < rxs + NMSG, "a truncation for an unknown context");
            int i = r->r;
            EXPECT(x.tag == (uint64_t)i, "receive %d got message %llu (truncated): out of "
                   "order", i, (unsigned long long)x.tag);
            EXPECT(!done[i], "receive %d completed twice", i);
            done[i] = 1;
            EXPECT(len_of(i) > r->cap, "message %d (%zu bytes) truncated "
                   "in a receive of %zu", i, len_of(i), r->cap);
            EXPECT(x.len == r->cap && x.olen == len_of(i) - r->cap,
                   "message %d truncated: len %zu olen %zu", i, x.len, x.olen);
            for (size_t b = 0; b < r->cap; b++)
                EXPECT(r->buf[b] == byte_of(i, b), "message %d (truncated): byte %zu", i, b);
            free(r->buf);
            truncated++;
            next++;
            last = now_s();
            continue;
        }
        EXPECT(n == -FI_EAGAIN || n >= 0, "receive CQ: %zd", n);
        if (n <= 0) {
            EXPECT(now_s() - last < 30, "message %d of %d not there after 30 s", next, NMSG);
            continue;
        }
        for (ssize_t j = 0; j < n; j++) {
            struct rx *r = e[j].op_context;
            EXPECT(r >= rxs && r < rxs + NMSG, "a receive completion with an unknown context");
            int i = r->r;
            size_t len = len_of(i);
            EXPECT(e[j].tag == (uint64_t)i, "receive %d got message %llu: out of order",
                   i, (unsigned long long)e[j].tag);
            EXPECT(!done[i], "receive %d completed twice", i);
            done[i] = 1;
            EXPECT(e[j].len == len, "message %d: %zu bytes, %zu sent", i, e[j].len, len);
            EXPECT(len <= r->cap, "message %d (%zu bytes) not truncated in a receive of %zu",
                   i, len, r->cap);
            for (size_t b = 0; b < len; b++)
                EXPECT(r->buf[b] == byte_of(i, b), "message %d: byte %zu", i, b);
            EXPECT(len == r->cap || r->buf[len] == 0xcc, "message %d: written past its end", i);
            free(r->buf);
            next++;
        }
        last = now_s();
    }
    t0 = now_s();
    while (cancelled < ncancel) {   /* every cancel reported, once */
        struct fi_cq_err_entry x = { 0 };
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(rxcq, &e, 1);
        EXPECT(n == -FI_EAGAIN || n == -FI_EAVAIL, "a completion after the last message");
        if (n == -FI_EAVAIL) {
            CHECK(fi_cq_readerr(rxcq, &x, 0));
            EXPECT(x.err == FI_ECANCELED, "an error %d after the last message", x.err);
            cancelled++;
        }
        EXPECT(now_s() - t0 < 10, "%d of %d cancels reported", cancelled, ncancel);
    }
    atomic_store(&stop, 1);
    if (safe)
        pthread_join(th, NULL);
    uint64_t word = 0x600d;
    CHECK(fi_tinject(ep, &word, sizeof(word), peer, DONE_TAG));
    printf("fab_order: %d messages in order, %d truncated, %d cancels\n", NMSG, truncated,
           cancelled);
}

int main(int argc, char **argv)
{
    struct fab_open o = { 0 };
    struct fab_opts opts = { .caps = FI_TAGGED | FI_DIRECTED_RECV, .av_type = FI_AV_MAP,
                             .split_cq = 1, .msg_order = FI_ORDER_SAS };
    int safe;

    opts.threading = fab_mode_arg(argc, argv, "fab_order");
    safe = opts.threading == FI_THREAD_SAFE;
    me = fab_rank();
    fab_pair_up(&o, &opts, argv[1], "ord", me, &peer, "fab_order");
    ep = o.ep;
    txcq = o.cq;
    rxcq = o.rxcq;

    if (me == 0)
        sender();
    else
        receiver(safe);

    fab_pair_down(&o, me, "fab_order");
    if (me == 0)
        printf("ok order (%s)\n", argv[2]);
    return 0;
}
