/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_early: messages that reach an endpoint before it is enabled (the
 * provider's arm takes them from corevia's receive queue, fab_take_early)
 * come once each and in order, also when the arm fails for want of memory
 * the first time. Under cvia-run -n 2; names through files in DIR.
 *   Rank 0 opens two endpoints, `ctl` (enabled) and `late` (not yet).
 *   Rank 1 sends N tagged messages to `late`, then a marker to `ctl`: once
 *   rank 0 has the marker (its reads progressed corevia), the N are in
 *   corevia's receive queue. Rank 0 then enables `late`. With FAB_FAULT=
 *   take_early (set by the program for this fi_enable from FAB_EARLY_FAULT;
 *   the tests' copy of the provider, built with fault injection) the arm's
 *   buffer cannot be had: fi_enable must answer
 *   -FI_ENOMEM, and a second fi_enable must succeed. Rank 1 then sends N
 *   more, which reach the armed endpoint's inbox, and a second marker;
 *   rank 0 reads `late`'s CQ 20 times with nothing posted (its progress
 *   takes them: provider-side unexpected messages). Then all 2N messages
 *   must complete 2N receives posted after that, in order, with their
 *   payloads (20 s at most: one left behind never comes).
 *   FAB_EARLY_FAULT / FAB_LATE_FAULT: the FAB_FAULT the program sets for
 *   the enable / for the reads of stage 2 (with "unexp:K" the first K
 *   messages to be queued as unexpected find no memory: they must be held
 *   and queued later, not dropped).
 *   Last, rank 1 sends NR messages past the eager size to `ctl` (a
 *   rendezvous: rank 0 reads them, and its FIN completes the send) and
 *   waits for their completions; FAB_FIN_FAULT: the FAB_FAULT rank 0 sets
 *   for it ("fin:K": no memory for the first K FINs, "ctrl_isend:K": no
 *   corevia request for the first K control messages' sends; they must be
 *   owed and sent later, or those sends never complete).
 * Prints "ok early" on rank 0.
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
#include "name_swap.h"

static int me;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_early: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_early: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

#define N 20
#define N2 (2 * N)
#define NR 3
#define RLEN (40 * 1024)   /* past CVIA_FI_EAGER (16 KiB) */
#define TAG_RNDV 11
#define LEN 200
#define TAG_MSG 5
#define TAG_MARK 9
#define TAG_DONE 10

static struct fid_domain *domain;
static struct fid_av *av;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read @want completions from @cq, none an error; their contexts in
 * order into @ctx (may be NULL). Bounded: 20 s. */
static void collect(struct fid_cq *cq, int want, void **ctx)
{
    struct fi_cq_tagged_entry e[4];
    double t0 = now_s();
    int got = 0;

    while (got < want) {
        ssize_t n = fi_cq_read(cq, e, want - got < 4 ? want - got : 4);
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
        for (ssize_t i = 0; i < n; i++)
            if (ctx)
                ctx[got + i] = e[i].op_context;
        got += (int)n;
    }
}

static void open_ep(struct fi_info *info, struct fid_ep **ep, struct fid_cq **cq)
{
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 64 };

    CHECK(fi_cq_open(domain, &cqa, cq, NULL));
    CHECK(fi_endpoint(domain, info, ep, NULL));
    CHECK(fi_ep_bind(*ep, &av->fid, 0));
    CHECK(fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV));
}

static void payload(unsigned char *p, int i)
{
    for (int k = 0; k < LEN; k++)
        p[k] = (unsigned char)(i * 31 + k * 7 + 1);
}

int main(int argc, char **argv)
{
    struct fab_open o;
    struct fid_ep *ctl, *late = NULL;
    struct fid_cq *cq_ctl, *cq_late = NULL;
    int orc;
    char names[2][128], pnames[2][128], mine[512], theirs[512];
    size_t len = sizeof(names[0]), len2 = sizeof(names[1]);
    const char *err;
    fi_addr_t peer[2];
    uint64_t word = 0;
    static unsigned char bufs[N2][LEN];
    char ctxs[N2], wctx;
    void *got[N2];

    if (argc != 2) {
        fprintf(stderr, "usage: cvia-run -n 2 fab_early DIR\n");
        return 2;
    }
    me = fab_rank();
    err = fab_open(&o, &(struct fab_opts){ .caps = FI_TAGGED | FI_DIRECTED_RECV,
                                           .threading = FI_THREAD_SAFE,
                                           .av_type = FI_AV_TABLE, .cq_size = 64 }, &orc);
    EXPECT(!err, "%s: %d (%s)", err, orc, fi_strerror(-orc));
    domain = o.domain;
    av = o.av;
    ctl = o.ep;
    cq_ctl = o.cq;
    CHECK(fi_getname(&ctl->fid, names[0], &len));
    if (me == 0) {
        open_ep(o.info, &late, &cq_late);
        CHECK(fi_getname(&late->fid, names[1], &len2));
        EXPECT(len2 == len, "names of %zu and %zu bytes", len, len2);
    } else {
        memcpy(names[1], names[0], len);
    }
    snprintf(mine, sizeof(mine), "%s/early.%d", argv[1], me);
    snprintf(theirs, sizeof(theirs), "%s/early.%d", argv[1], 1 - me);
    err = name_swap(mine, theirs, names, sizeof(names), pnames, sizeof(pnames), 3000);
    EXPECT(!err, "%s", err);
    EXPECT(fi_av_insert(av, pnames[0], 1, &peer[0], 0, NULL) == 1, "fi_av_insert");

    if (me == 1) {
        EXPECT(fi_av_insert(av, pnames[1], 1, &peer[1], 0, NULL) == 1, "fi_av_insert");
        for (int i = 0; i < N; i++) {
            payload(bufs[i], i);
            CHECK(fi_tsend(ctl, bufs[i], LEN, NULL, peer[1], TAG_MSG, &ctxs[i]));
        }
        collect(cq_ctl, N, NULL);
        word = 0x3a;   /* after the N, on the same path: they are in before it */
        CHECK(fi_tsend(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, &wctx));
        collect(cq_ctl, 1, NULL);
        /* stage 2, once `late` is enabled */
        CHECK(fi_trecv(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, 0, &wctx));
        collect(cq_ctl, 1, NULL);
        EXPECT(word == 0x2a, "rank 0's go: %llu", (unsigned long long)word);
        for (int i = N; i < N2; i++) {
            payload(bufs[i], i);
            CHECK(fi_tsend(ctl, bufs[i], LEN, NULL, peer[1], TAG_MSG, &ctxs[i]));
        }
        collect(cq_ctl, N, NULL);
        word = 0x3b;
        CHECK(fi_tsend(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, &wctx));
        collect(cq_ctl, 1, NULL);
        /* the rendezvous ones, once rank 0 says so */
        CHECK(fi_trecv(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, 0, &wctx));
        collect(cq_ctl, 1, NULL);
        EXPECT(word == 0x4a, "rank 0's go: %llu", (unsigned long long)word);
        static unsigned char big[NR][RLEN];
        for (int i = 0; i < NR; i++) {
            memset(big[i], 0x40 + i, RLEN);
            CHECK(fi_tsend(ctl, big[i], RLEN, NULL, peer[0], TAG_RNDV, &ctxs[i]));
        }
        collect(cq_ctl, NR, NULL);   /* each needs rank 0's FIN */
        word = 0x5a;
        CHECK(fi_tsend(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, &wctx));
        collect(cq_ctl, 1, NULL);
        CHECK(fi_trecv(ctl, &word, sizeof(word), NULL, peer[0], TAG_DONE, 0, &wctx));
        collect(cq_ctl, 1, NULL);
        EXPECT(word == 0xd0, "rank 0's last word: %llu", (unsigned long long)word);
    } else {
        CHECK(fi_trecv(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, 0, &wctx));
        collect(cq_ctl, 1, NULL);
        EXPECT(word == 0x3a, "rank 1's marker: %llu", (unsigned long long)word);
        /* the fault for this arm only (ctl's came before) */
        if (getenv("FAB_EARLY_FAULT"))
            setenv("FAB_FAULT", getenv("FAB_EARLY_FAULT"), 1);
        int rc = fi_enable(late);
        if (getenv("FAB_FAULT") && !strncmp(getenv("FAB_FAULT"), "take_early", 10)) {
            EXPECT(rc == -FI_ENOMEM, "fi_enable with the arm's buffer refused answered %d "
                   "(%s), -FI_ENOMEM expected", rc, fi_strerror(-rc));
            rc = fi_enable(late);
        }
        CHECK(rc);
        unsetenv("FAB_FAULT");
        /* stage 2: N more into the armed endpoint's inbox, then taken by
         * reads with nothing posted */
        word = 0x2a;
        CHECK(fi_tsend(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, &wctx));
        collect(cq_ctl, 1, NULL);
        CHECK(fi_trecv(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, 0, &wctx));
        collect(cq_ctl, 1, NULL);
        EXPECT(word == 0x3b, "rank 1's second marker: %llu", (unsigned long long)word);
        if (getenv("FAB_LATE_FAULT"))
            setenv("FAB_FAULT", getenv("FAB_LATE_FAULT"), 1);
        for (int i = 0; i < 20; i++) {
            struct fi_cq_tagged_entry e;
            ssize_t n = fi_cq_read(cq_late, &e, 1);
            EXPECT(n == -FI_EAGAIN, "a read of late's CQ with nothing posted: %zd", n);
        }
        memset(bufs, 0, sizeof(bufs));
        for (int i = 0; i < N2; i++)
            CHECK(fi_trecv(late, bufs[i], LEN, NULL, peer[0], TAG_MSG, 0, &ctxs[i]));
        collect(cq_late, N2, got);
        for (int i = 0; i < N2; i++) {
            unsigned char want[LEN];
            payload(want, i);
            EXPECT(got[i] == &ctxs[i], "receive %d completed as number %td", i,
                   (char *)got[i] - ctxs);
            EXPECT(!memcmp(bufs[i], want, LEN), "message %d: wrong payload (taken twice, "
                   "or out of order)", i);
        }
        /* rendezvous messages: their FINs (owed, with FAB_FIN_FAULT) */
        static unsigned char big[NR][RLEN];
        if (getenv("FAB_FIN_FAULT"))
            setenv("FAB_FAULT", getenv("FAB_FIN_FAULT"), 1);
        for (int i = 0; i < NR; i++)
            CHECK(fi_trecv(ctl, big[i], RLEN, NULL, peer[0], TAG_RNDV, 0, &ctxs[i]));
        word = 0x4a;
        CHECK(fi_tsend(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, &wctx));
        collect(cq_ctl, NR + 1, NULL);
        for (int i = 0; i < NR; i++)
            for (int k = 0; k < RLEN; k++)
                EXPECT(big[i][k] == 0x40 + i, "rendezvous message %d: byte %d", i, k);
        /* rank 1's sends complete (by our FINs) before its word comes */
        CHECK(fi_trecv(ctl, &word, sizeof(word), NULL, peer[0], TAG_MARK, 0, &wctx));
        collect(cq_ctl, 1, NULL);
        EXPECT(word == 0x5a, "rank 1's word after its rendezvous sends: %llu",
               (unsigned long long)word);
        unsetenv("FAB_FAULT");
        word = 0xd0;
        CHECK(fi_tsend(ctl, &word, sizeof(word), NULL, peer[0], TAG_DONE, &wctx));
        collect(cq_ctl, 1, NULL);
        CHECK(fi_close(&late->fid));
        CHECK(fi_close(&cq_late->fid));
    }
    err = fab_close_rdm(&o, &orc);
    EXPECT(!err, "%s: %d (%s)", err, orc, fi_strerror(-orc));
    if (me == 0)
        printf("ok early (%d messages, %d rendezvous; FAB_EARLY_FAULT=%s, FAB_LATE_FAULT=%s, "
               "FAB_FIN_FAULT=%s)\n", N2, NR,
               getenv("FAB_EARLY_FAULT") ? getenv("FAB_EARLY_FAULT") : "",
               getenv("FAB_LATE_FAULT") ? getenv("FAB_LATE_FAULT") : "",
               getenv("FAB_FIN_FAULT") ? getenv("FAB_FIN_FAULT") : "");
    return 0;
}
