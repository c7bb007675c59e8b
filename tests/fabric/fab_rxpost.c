/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_rxpost: the ways a one-buffer receive (fi_trecv, fi_recv) is posted
 * and completed. The provider posts one with a few stores when a spare
 * descriptor is at hand, nothing waits unexpected and its source resolves
 * (fab_recv_one), and completes an eager message that fits with one entry
 * written into the CQ (fab_rx_ok); everything else takes the general path
 * (fab_recv, fab_rx_done). Under cvia-run -n 2; names through files in
 * DIR (argv[1]); argv[2] the domain's threading, "domain" or "safe".
 *   phase A, every receive posted before rank 0 sends (on rank 1's word):
 *     16 tagged messages of 0-75 bytes, with and without CQ data, half of
 *     their receives directed at rank 0, half FI_ADDR_UNSPEC; two with one
 *     tag, which complete in the order their receives were posted; one of
 *     40 bytes into 16 (truncated: an error entry, olen 24, 16 bytes
 *     written, no more); an untagged one; one matched through ignore bits
 *     (its entry carries the sent tag); a receive posted in the middle
 *     whose message comes last of these (the ones sent after the middle
 *     meet it first in the queue and match a receive further on); one of
 *     two buffers with a gap between them, first in the queue when its
 *     message comes (the bytes split across both, the gap untouched);
 *     then an unmatched message U and a marker, whose receive completes
 *     after U is queued as unexpected;
 *   phase B, with U queued: a receive for another tag (posted behind it,
 *     completing only when rank 0 sends that tag), a receive for U's tag
 *     (completes at once with U's bytes), a directed receive from an
 *     address the AV does not hold (-FI_EINVAL, nothing posted).
 * Every entry is checked for context, flags, length, tag and data, every
 * buffer byte by byte, and no entry comes twice or unasked. Prints
 * "ok rxpost (THREADING)" on rank 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_tagged.h>

#include "fab_open.h"

static int me;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_rxpost: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_rxpost: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

#define NT 16                 /* phase A's tagged messages of their own tags */
#define CAP 80
enum { M_SAME1 = NT, M_SAME2, M_TRUNC, M_UNTAGGED, M_IGNORE, M_VEC, M_SKIP, M_MARK, M_U, M_OTHER,
       NMSG };
#define TAG_SAME 200
#define TAG_TRUNC 300
#define TAG_U 400
#define TAG_OTHER 401
#define TAG_IGN 0x5007u       /* received with tag 0x5000, ignore 0xff */
#define TAG_VEC 500
#define TAG_SKIP 501
#define VEC_CUT 5             /* M_VEC: bytes 0-4 at in[], the rest from VEC_GAP on */
#define VEC_GAP 8
#define TAG_MARK 9100
#define TAG_GO1 9001
#define TAG_GO2 9002
#define TAG_END 9003
#define TRUNC_LEN 40
#define TRUNC_CAP 16

static struct fid_ep *ep;
static struct fid_cq *cq;
static fi_addr_t peer;
static char ctx[NMSG], ctl_ctx;
static char seen[NMSG];
static unsigned char in[NMSG][CAP];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t len_of(int i)
{
    switch (i) {
    case M_SAME1: case M_SAME2: return 8;
    case M_TRUNC: return TRUNC_LEN;
    case M_UNTAGGED: return 12;
    case M_IGNORE: return 3;
    case M_VEC: return 30;
    case M_SKIP: return 6;
    case M_MARK: return 0;
    case M_U: return 20;
    case M_OTHER: return 9;
    default: return (size_t)(i * 5);   /* 0 .. 75 */
    }
}
static uint64_t tag_of(int i)
{
    switch (i) {
    case M_SAME1: case M_SAME2: return TAG_SAME;
    case M_TRUNC: return TAG_TRUNC;
    case M_UNTAGGED: return 0;
    case M_IGNORE: return TAG_IGN;
    case M_VEC: return TAG_VEC;
    case M_SKIP: return TAG_SKIP;
    case M_MARK: return TAG_MARK;
    case M_U: return TAG_U;
    case M_OTHER: return TAG_OTHER;
    default: return 100 + (uint64_t)i;
    }
}
static int has_data(int i)      { return i < NT && (i & 1); }
static uint64_t data_of(int i)  { return 0xd0d00000u + (uint64_t)i; }
static unsigned char byte_of(int i, size_t j) { return (unsigned char)(i * 11 + j * 3 + 5); }

/* Send message @i (an inject: the buffer is ours again at once). */
static void send_msg(int i)
{
    unsigned char b[CAP];
    size_t len = len_of(i);
    double t0 = now_s();
    ssize_t rc;

    for (size_t j = 0; j < len; j++)
        b[j] = byte_of(i, j);
    do {
        if (i == M_UNTAGGED)
            rc = fi_inject(ep, b, len, peer);
        else if (has_data(i))
            rc = fi_tinjectdata(ep, b, len, data_of(i), peer, tag_of(i));
        else
            rc = fi_tinject(ep, b, len, peer, tag_of(i));
        if (rc == -FI_EAGAIN) {
            struct fi_cq_tagged_entry e;
            EXPECT(now_s() - t0 < 20, "send %d refused for 20 s", i);
            EXPECT(fi_cq_read(cq, &e, 1) == -FI_EAGAIN, "a completion on rank 0");
        }
    } while (rc == -FI_EAGAIN);
    CHECK(rc);
}

/* A control word with @tag to the peer, or from it. */
static void ctl_send(uint64_t tag)
{
    uint64_t w = tag;
    CHECK(fi_tinject(ep, &w, sizeof(w), peer, tag));
}
static void ctl_wait(uint64_t tag)
{
    uint64_t w = 0;
    struct fi_cq_tagged_entry e;
    double t0 = now_s();
    ssize_t n;

    CHECK(fi_trecv(ep, &w, sizeof(w), NULL, peer, tag, 0, &ctl_ctx));
    while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
        EXPECT(now_s() - t0 < 20, "no word %llu from the peer after 20 s",
               (unsigned long long)tag);
    CHECK(n);
    EXPECT(e.op_context == &ctl_ctx && w == tag, "word %llu: context %p, value %llu",
           (unsigned long long)tag, e.op_context, (unsigned long long)w);
}

/* Message @i's receive completed with entry @e (an error entry's fields
 * for the truncated one): its fields and buffer. */
static void check_msg(int i, const struct fi_cq_tagged_entry *e)
{
    size_t len = len_of(i), got = i == M_TRUNC ? TRUNC_CAP : len;

    EXPECT(!seen[i], "receive %d completed twice", i);
    seen[i] = 1;
    EXPECT(e->len == got, "receive %d: length %zu, %zu expected", i, e->len, got);
    EXPECT((e->flags & FI_RECV) && (e->flags & (i == M_UNTAGGED ? FI_MSG : FI_TAGGED)),
           "receive %d: flags %#llx", i, (unsigned long long)e->flags);
    EXPECT(i == M_UNTAGGED || e->tag == tag_of(i), "receive %d: tag %#llx, %#llx sent", i,
           (unsigned long long)e->tag, (unsigned long long)tag_of(i));
    EXPECT(!!(e->flags & FI_REMOTE_CQ_DATA) == has_data(i), "receive %d: flags %#llx", i,
           (unsigned long long)e->flags);
    EXPECT(!has_data(i) || e->data == data_of(i), "receive %d: data %#llx", i,
           (unsigned long long)e->data);
    for (size_t b = 0; b < CAP; b++) {
        /* the two of one tag: the first posted receive has the first sent */
        unsigned char want = b < got ? byte_of(i, b) : 0xcc;
        if (i == M_VEC)   /* two buffers: [0, VEC_CUT) and [VEC_GAP, ...) */
            want = b < VEC_CUT ? byte_of(i, b)
                 : b < VEC_GAP || b >= VEC_GAP + len - VEC_CUT ? 0xcc
                 : byte_of(i, b - VEC_GAP + VEC_CUT);
        EXPECT(in[i][b] == want, "receive %d (%zu bytes): byte %zu is %#x, %#x expected", i,
               len, b, in[i][b], want);
    }
}

/* Read the CQ until the receives @mask names are all complete; no other
 * may come meanwhile. */
static void collect(const char *mask)
{
    double t0 = now_s();

    for (;;) {
        int left = 0;
        for (int i = 0; i < NMSG; i++)
            left += mask[i] && !seen[i];
        if (!left)
            return;
        struct fi_cq_tagged_entry e[4];
        ssize_t n = fi_cq_read(cq, e, 4);
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            CHECK(fi_cq_readerr(cq, &x, 0));
            EXPECT(x.op_context == &ctx[M_TRUNC], "an error entry (%d, %s) for receive %ld",
                   x.err, fi_strerror(x.err), (long)((char *)x.op_context - ctx));
            EXPECT(x.err == FI_ETRUNC && x.olen == TRUNC_LEN - TRUNC_CAP,
                   "the truncated receive: err %d, olen %zu", x.err, x.olen);
            struct fi_cq_tagged_entry t = { x.op_context, x.flags, x.len, x.buf, x.data, x.tag };
            EXPECT(mask[M_TRUNC], "the truncated receive completed early");
            check_msg(M_TRUNC, &t);
            continue;
        }
        if (n == -FI_EAGAIN) {
            EXPECT(now_s() - t0 < 20, "%d receives missing after 20 s", left);
            continue;
        }
        CHECK(n);
        for (ssize_t j = 0; j < n; j++) {
            const char *c = e[j].op_context;
            EXPECT(c >= ctx && c < ctx + NMSG, "a completion with an unknown context");
            int i = (int)(c - ctx);
            EXPECT(mask[i], "receive %d completed, not expected now", i);
            EXPECT(i != M_TRUNC, "the truncated receive completed without an error");
            check_msg(i, &e[j]);
        }
    }
}

static void post(int i, fi_addr_t src, uint64_t tag, uint64_t ignore, size_t cap)
{
    if (i == M_UNTAGGED)
        CHECK(fi_recv(ep, in[i], cap, NULL, src, &ctx[i]));
    else
        CHECK(fi_trecv(ep, in[i], cap, NULL, src, tag, ignore, &ctx[i]));
}

static void receiver(void)
{
    char mask[NMSG] = { 0 };
    uint64_t w = 0;

    memset(in, 0xcc, sizeof(in));
    struct iovec vec[2] = { { in[M_VEC], VEC_CUT }, { in[M_VEC] + VEC_GAP, CAP - VEC_GAP } };
    CHECK(fi_trecvv(ep, vec, NULL, 2, peer, TAG_VEC, 0, &ctx[M_VEC]));
    for (int i = 0; i < NT; i++) {
        post(i, i % 4 < 2 ? peer : FI_ADDR_UNSPEC, tag_of(i), 0, CAP);
        if (i == NT / 2)
            post(M_SKIP, FI_ADDR_UNSPEC, TAG_SKIP, 0, CAP);
    }
    post(M_SAME1, peer, TAG_SAME, 0, CAP);
    post(M_SAME2, FI_ADDR_UNSPEC, TAG_SAME, 0, CAP);
    post(M_TRUNC, peer, TAG_TRUNC, 0, TRUNC_CAP);
    post(M_UNTAGGED, peer, 0, 0, CAP);
    post(M_IGNORE, FI_ADDR_UNSPEC, 0x5000, 0xff, CAP);
    post(M_MARK, peer, TAG_MARK, 0, CAP);
    ctl_send(TAG_GO1);
    for (int i = 0; i <= M_MARK; i++)
        mask[i] = 1;
    collect(mask);

    /* U waits unexpected: a receive for another tag queues behind it, one
     * for U's tag takes it at once, a source the AV lacks is refused */
    post(M_OTHER, peer, TAG_OTHER, 0, CAP);
    post(M_U, FI_ADDR_UNSPEC, TAG_U, 0, CAP);
    mask[M_U] = 1;
    collect(mask);
    EXPECT(fi_trecv(ep, &w, sizeof(w), NULL, peer + 1000, 1, 0, &ctl_ctx) == -FI_EINVAL,
           "a receive from an address the AV does not hold was not refused");
    ctl_send(TAG_GO2);
    mask[M_OTHER] = 1;
    collect(mask);

    /* nothing more may come */
    struct fi_cq_tagged_entry e;
    for (int r = 0; r < 100; r++)
        EXPECT(fi_cq_read(cq, &e, 1) == -FI_EAGAIN, "an entry nobody asked for");
    ctl_send(TAG_END);
}

static void sender(void)
{
    ctl_wait(TAG_GO1);
    send_msg(M_VEC);
    for (int i = 0; i <= M_IGNORE; i++)
        send_msg(i);
    send_msg(M_SKIP);
    send_msg(M_U);
    send_msg(M_MARK);
    ctl_wait(TAG_GO2);
    send_msg(M_OTHER);
    ctl_wait(TAG_END);
}

int main(int argc, char **argv)
{
    struct fab_open o = { 0 };
    struct fab_opts opts = { .caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV };

    opts.threading = fab_mode_arg(argc, argv, "fab_rxpost");
    me = fab_rank();
    fab_pair_up(&o, &opts, argv[1], "rx", me, &peer, "fab_rxpost");
    EXPECT(o.info->tx_attr->inject_size >= CAP, "inject_size %zu", o.info->tx_attr->inject_size);
    ep = o.ep;
    cq = o.cq;

    if (me == 0)
        sender();
    else
        receiver();

    fab_pair_down(&o, me, "fab_rxpost");
    if (me == 1)
        printf("ok rxpost (%s)\n", argv[2]);
    return 0;
}
