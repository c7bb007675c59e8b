/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_txflags: which small sends produce a completion, through the
 * provider's one-buffer send path (fab_send_one: the header and payload
 * straight into the peer's ring, the completion written in place) and
 * the ring copy of an injected message's pieces (shm_copy_small), at
 * every size from 0 to 100 bytes around their 4, 8, 16 and 32-byte cases.
 * Under cvia-run -n 2; names through files in DIR (argv[1]); argv[2] the
 * domain's threading: "domain" (the provider's locks off) or "safe".
 * Rank 0's transmit CQ is bound with FI_SELECTIVE_COMPLETION and a
 * transmit counter; for each size it sends eight messages: fi_tsend,
 * fi_tsendmsg(FI_COMPLETION), fi_tsenddata, fi_tinject, fi_tinjectdata,
 * fi_send, fi_sendmsg(FI_COMPLETION), fi_injectdata.
 *   phase 1, the endpoint's transmit op flags 0: only the two *msg sends
 *            with FI_COMPLETION complete;
 *   phase 2, op flags FI_COMPLETION (fi_control FI_SETOPSFLAG, as Open
 *            MPI's mtl ofi has them): every send but the three injects.
 * Either way the counter counts all of them, every completion carries its
 * own context and FI_SEND with FI_TAGGED or FI_MSG, none comes twice and
 * no other comes (the CQ is empty once the counter is complete and rank 1
 * has everything). Rank 1 checks every message's bytes, length, tag and
 * remote CQ data. Prints "ok txflags (THREADING)" on rank 0.
 */
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
        fprintf(stderr, "fab_txflags: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_txflags: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 23, 24, 25,
                                31, 32, 33, 40, 48, 64, 100 };
#define NSIZE (sizeof(sizes) / sizeof(sizes[0]))
#define NKIND 8                      /* the eight sends above, in that order */
#define NMSG ((int)(2 * NSIZE * NKIND))   /* both phases */
#define CAP 128

static struct fid_ep *ep;
static struct fid_cq *txcq, *rxcq;
static struct fid_cntr *txcntr;
static fi_addr_t peer;
static char ctx[NMSG], done_ctx;
static char seen[NMSG];
static unsigned char bufs[NMSG][CAP];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int tagged_kind(int k)   { return k < 5; }
static int data_kind(int k)     { return k == 2 || k == 4 || k == 7; }
static int inject_kind(int k)   { return k == 3 || k == 4 || k == 7; }
static int msg_kind(int k)      { return k == 1 || k == 6; }   /* *msg with FI_COMPLETION */
static uint64_t tag_of(int i)   { return 1000 + (uint64_t)i; }
static uint64_t data_of(int i)  { return 0xda7a0000u + (uint64_t)i; }
static unsigned char byte_of(int i, size_t j) { return (unsigned char)(i * 7 + j * 13 + 1); }

/* Does message @i (phase = i / (NSIZE * NKIND)) get a completion? */
static int reported(int i)
{
    int phase = i / (int)(NSIZE * NKIND), k = i % NKIND;
    return msg_kind(k) || (phase == 1 && !inject_kind(k));
}

/* One read of up to 5 entries of @cq: their number, or 0 for none; an
 * error completion ends the test. */
static ssize_t read_cq(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
    ssize_t n = fi_cq_read(cq, e, 5);

    if (n == -FI_EAGAIN)
        return 0;
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry x = { 0 };
        fi_cq_readerr(cq, &x, 0);
        EXPECT(0, "error completion %d (%s) on the %s CQ", x.err, fi_strerror(x.err),
               cq == txcq ? "transmit" : "receive");
    }
    CHECK(n);
    return n;
}

/* One read of the transmit CQ: completions are checked and counted in
 * @got. */
static void tx_poll(int *got)
{
    struct fi_cq_tagged_entry e[5];
    ssize_t n = read_cq(txcq, e);

    for (ssize_t j = 0; j < n; j++) {
        const char *c = e[j].op_context;
        EXPECT(c >= ctx && c < ctx + NMSG, "a send completion with an unknown context");
        int i = (int)(c - ctx);
        EXPECT(reported(i), "send %d (size %zu, kind %d, phase %d) completed, no completion "
               "asked for", i, sizes[(i / NKIND) % NSIZE], i % NKIND, i / (int)(NSIZE * NKIND));
        EXPECT(!seen[i], "send %d completed twice", i);
        EXPECT((e[j].flags & FI_SEND) &&
               (e[j].flags & (tagged_kind(i % NKIND) ? FI_TAGGED : FI_MSG)),
               "send %d: flags %#llx", i, (unsigned long long)e[j].flags);
        seen[i] = 1;
        (*got)++;
    }
}

static void send_one(int i, int *got)
{
    int k = i % NKIND;
    size_t len = sizes[(i / NKIND) % NSIZE];
    unsigned char *b = bufs[i];
    struct iovec iov = { b, len };
    struct fi_msg_tagged mt = { .msg_iov = &iov, .iov_count = 1, .addr = peer,
                                .tag = tag_of(i), .context = &ctx[i] };
    struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = peer, .context = &ctx[i] };
    double t0 = now_s();
    ssize_t rc;

    for (size_t j = 0; j < len; j++)
        b[j] = byte_of(i, j);
    do {
        switch (k) {
        case 0: rc = fi_tsend(ep, b, len, NULL, peer, tag_of(i), &ctx[i]); break;
        case 1: rc = fi_tsendmsg(ep, &mt, FI_COMPLETION); break;
        case 2: rc = fi_tsenddata(ep, b, len, NULL, data_of(i), peer, tag_of(i), &ctx[i]); break;
        case 3: rc = fi_tinject(ep, b, len, peer, tag_of(i)); break;
        case 4: rc = fi_tinjectdata(ep, b, len, data_of(i), peer, tag_of(i)); break;
        case 5: rc = fi_send(ep, b, len, NULL, peer, &ctx[i]); break;
        case 6: rc = fi_sendmsg(ep, &m, FI_COMPLETION); break;
        default: rc = fi_injectdata(ep, b, len, data_of(i), peer); break;
        }
        if (rc == -FI_EAGAIN) {
            EXPECT(now_s() - t0 < 20, "send %d refused for 20 s", i);
            tx_poll(got);
        }
    } while (rc == -FI_EAGAIN);
    CHECK(rc);
    if (inject_kind(k))   /* the buffer is ours again at once */
        memset(b, 0xee, len);
}

static void sender(void)
{
    int got = 0, want = 0;
    double t0;

    for (int i = 0; i < NMSG; i++) {
        if (i == (int)(NSIZE * NKIND)) {   /* phase 2: op flags as mtl ofi's */
            uint64_t f = FI_TRANSMIT | FI_COMPLETION;
            CHECK(fi_control(&ep->fid, FI_SETOPSFLAG, &f));
        }
        send_one(i, &got);
        want += reported(i);
    }
    t0 = now_s();
    while (got < want || fi_cntr_read(txcntr) < NMSG) {
        EXPECT(now_s() - t0 < 20, "%d of %d completions, counter %llu of %d after 20 s",
               got, want, (unsigned long long)fi_cntr_read(txcntr), (int)NMSG);
        tx_poll(&got);
    }
    EXPECT(fi_cntr_readerr(txcntr) == 0, "counter errors: %llu",
           (unsigned long long)fi_cntr_readerr(txcntr));
    /* rank 1 has all of them: then nothing more may come */
    uint64_t word = 0;
    struct fi_cq_tagged_entry e[5];
    CHECK(fi_trecv(ep, &word, sizeof(word), NULL, peer, 7777, 0, &done_ctx));
    t0 = now_s();
    while (read_cq(rxcq, e) == 0) {
        EXPECT(now_s() - t0 < 20, "no word from rank 1 after 20 s");
        tx_poll(&got);
    }
    EXPECT(word == 0x600d, "rank 1's word %#llx", (unsigned long long)word);
    for (int r = 0; r < 100; r++)
        tx_poll(&got);
    EXPECT(got == want, "%d send completions, %d expected", got, want);
    EXPECT(fi_cntr_read(txcntr) == NMSG, "counter %llu, %d sends",
           (unsigned long long)fi_cntr_read(txcntr), (int)NMSG);
}

static void receiver(void)
{
    static unsigned char in[NMSG][CAP];
    int got = 0;
    double t0 = now_s();

    /* tagged by their own tag; the untagged ones in the order they are sent */
    for (int i = 0; i < NMSG; i++) {
        memset(in[i], 0xcc, CAP);
        if (tagged_kind(i % NKIND))
            CHECK(fi_trecv(ep, in[i], CAP, NULL, peer, tag_of(i), 0, &ctx[i]));
        else
            CHECK(fi_recv(ep, in[i], CAP, NULL, peer, &ctx[i]));
    }
    while (got < NMSG) {
        struct fi_cq_tagged_entry e[5];
        ssize_t n = read_cq(rxcq, e);
        if (n == 0) {
            EXPECT(now_s() - t0 < 20, "%d of %d messages after 20 s", got, (int)NMSG);
            continue;
        }
        for (ssize_t j = 0; j < n; j++) {
            const char *c = e[j].op_context;
            EXPECT(c >= ctx && c < ctx + NMSG, "a receive completion with an unknown context");
            int i = (int)(c - ctx), k = i % NKIND;
            size_t len = sizes[(i / NKIND) % NSIZE];
            EXPECT(!seen[i], "receive %d completed twice", i);
            seen[i] = 1;
            EXPECT(e[j].len == len, "message %d (kind %d): %zu bytes, %zu sent", i, k,
                   e[j].len, len);
            EXPECT(!tagged_kind(k) || e[j].tag == tag_of(i), "message %d: tag %llu", i,
                   (unsigned long long)e[j].tag);
            EXPECT(!!(e[j].flags & FI_REMOTE_CQ_DATA) == data_kind(k),
                   "message %d (kind %d): flags %#llx", i, k, (unsigned long long)e[j].flags);
            EXPECT(!data_kind(k) || e[j].data == data_of(i), "message %d: data %#llx", i,
                   (unsigned long long)e[j].data);
            for (size_t b = 0; b < CAP; b++)
                EXPECT(in[i][b] == (b < len ? byte_of(i, b) : 0xcc),
                       "message %d (size %zu, kind %d): byte %zu is %#x", i, len, k, b,
                       in[i][b]);
            got++;
        }
    }
    uint64_t word = 0x600d;
    CHECK(fi_tinject(ep, &word, sizeof(word), peer, 7777));
}

int main(int argc, char **argv)
{
    struct fab_open o;
    struct fab_opts opts = { .caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV,
                             .av_type = FI_AV_MAP, .cq_size = 16, .split_cq = 1,
                             .tx_cq_flags = FI_SELECTIVE_COMPLETION, .send_cntr = 1 };
    const char *err;
    int rc;

    opts.threading = fab_mode_arg(argc, argv, "fab_txflags");
    me = fab_rank();
    err = fab_getinfo(&o, &opts, &rc);
    EXPECT(!err, "%s: %d (%s)", err, rc, fi_strerror(-rc));
    EXPECT(o.info->tx_attr->inject_size >= 100, "inject_size %zu", o.info->tx_attr->inject_size);
    EXPECT(o.info->domain_attr->cq_data_size >= 4, "cq_data_size %zu",
           o.info->domain_attr->cq_data_size);
    o.info->tx_attr->op_flags = 0;
    fab_pair_up(&o, &opts, argv[1], "tx", me, &peer, "fab_txflags");
    ep = o.ep;
    txcq = o.cq;
    rxcq = o.rxcq;
    txcntr = o.txcntr;

    if (me == 0)
        sender();
    else
        receiver();

    fab_pair_down(&o, me, "fab_txflags");
    if (me == 0)
        printf("ok txflags (%s)\n", argv[2]);
    return 0;
}
