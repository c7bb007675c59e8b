/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_amo_nomem: an atomic's answer is never lost (issue 16). Under
 * cvia-run -n 2 with the tests' copy of the provider (fault injection);
 * names through files in DIR (argv[1]); argv[2] the target's FAB_FAULT:
 *   ctrl_isend:K  corevia has no request for the first K answers (the
 *                 atomics are applied): they must be sent later, in order;
 *   amo_answer:K  no memory for the first K answers: those atomics are not
 *                 applied and answer FI_ENOMEM, which the initiator retries;
 *   amo_twice:K   the first K answers come twice: the second is a stray,
 *                 counted and logged by the initiator, and changes nothing.
 * Rank 1 (the target) registers a counter and serves; rank 0 adds 1 to it
 * N times with fi_fetch_atomic, one at a time: the i-th answer must be
 * i, each within 10 s. Then rank 1 checks the counter is N.
 * Prints "ok amo (FAULT), E errors retried" on rank 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fab_open.h"
#include "name_swap.h"

#define N 20

static int me;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_amo_nomem: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_amo_nomem: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

static struct fid_cq *cq;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The next completion, within @bound s: 0, or its error (positive FI_*). */
static int next_within(void **ctx, double bound)
{
    struct fi_cq_tagged_entry e;
    double t0 = now_s();

    for (;;) {
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) {
            *ctx = e.op_context;
            return 0;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry x = { 0 };
            EXPECT(fi_cq_readerr(cq, &x, 0) == 1, "fi_cq_readerr");
            *ctx = x.op_context;
            return x.err;
        }
        EXPECT(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
        EXPECT(now_s() - t0 < bound, "no completion in %.0f s (an answer lost?)", bound);
    }
}

static int next(void **ctx)
{
    return next_within(ctx, 10);
}

int main(int argc, char **argv)
{
    struct fab_open o;
    struct fid_ep *ep;
    struct fid_mr *mr = NULL;
    const char *what;
    int rc0;
    struct { char name[64]; uint64_t addr, key; } mine = { .addr = 0 }, theirs;
    char path[2][512];
    size_t len = sizeof(mine.name);
    fi_addr_t peer;
    static uint64_t counter;
    uint64_t word = 0;
    int errors = 0;
    void *ctx;
    const char *r = getenv("CVIA_RANK");

    EXPECT(argc == 3 && r, "usage: fab_amo_nomem DIR FAULT (under cvia-run -n 2)");
    me = atoi(r);
    what = fab_open_rdm(&o, FI_TAGGED | FI_ATOMIC,
                        FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, &rc0);
    EXPECT(!what, "%s = %d (%s)", what, rc0, fi_strerror(-rc0));
    ep = o.ep;
    cq = o.cq;
    CHECK(fi_getname(&ep->fid, mine.name, &len));
    if (me == 1) {
        CHECK(fi_mr_reg(o.domain, &counter, sizeof(counter), FI_REMOTE_READ | FI_REMOTE_WRITE,
                        0, 0, 0, &mr, NULL));
        mine.addr = (uint64_t)(uintptr_t)&counter;
        mine.key = fi_mr_key(mr);
        CHECK(fi_trecv(ep, &word, sizeof(word), NULL, FI_ADDR_UNSPEC, 9, 0, &word));
        setenv("FAB_FAULT", argv[2], 1);   /* from now on: the answers */
    }
    for (int i = 0; i < 2; i++)
        snprintf(path[i], sizeof(path[i]), "%s/amo.%d", argv[1], i);
    const char *err = name_swap(path[me], path[1 - me], &mine, sizeof(mine), &theirs,
                                sizeof(theirs), 3000);
    EXPECT(!err, "%s", err);
    EXPECT(fi_av_insert(o.av, theirs.name, 1, &peer, 0, NULL) == 1, "fi_av_insert");

    if (me == 0) {
        uint64_t one = 1, old;
        for (int i = 0; i < N;) {
            ssize_t rc;
            old = UINT64_MAX;
            while ((rc = fi_fetch_atomic(ep, &one, 1, NULL, &old, NULL, peer, theirs.addr,
                                         theirs.key, FI_UINT64, FI_SUM, &old)) == -FI_EAGAIN)
                (void)fi_cq_read(cq, NULL, 0);
            CHECK(rc);
            int e = next(&ctx);
            EXPECT(ctx == &old, "a completion for another context");
            if (e == FI_ENOMEM && !strncmp(argv[2], "amo_answer", 10)) {
                errors++;   /* not applied: again */
                continue;
            }
            EXPECT(e == 0, "atomic %d: error %d (%s)", i, e, fi_strerror(e));
            EXPECT(old == (uint64_t)i, "atomic %d fetched %llu", i, (unsigned long long)old);
            i++;
        }
        if (!strncmp(argv[2], "amo_answer", 10))
            EXPECT(errors == atoi(strchr(argv[2], ':') + 1), "%d atomics answered FI_ENOMEM",
                   errors);
        /* done; rank 1's reply comes after every answer it sent (in order) */
        CHECK(fi_trecv(ep, &word, sizeof(word), NULL, peer, 10, 0, &word));
        CHECK(fi_tsend(ep, &one, sizeof(one), NULL, peer, 9, &one));
        for (int k = 0; k < 2; k++) {
            EXPECT(next(&ctx) == 0, "the last exchange failed");
            EXPECT(ctx == &one || ctx == &word, "an unexpected completion");
        }
    } else {
        /* serve (the reads progress) until rank 0 is done */
        EXPECT(next_within(&ctx, 30) == 0 && ctx == &word, "the done message");
        unsetenv("FAB_FAULT");
        EXPECT(counter == N, "counter at %llu, not %d", (unsigned long long)counter, N);
        CHECK(fi_tsend(ep, &word, sizeof(word), NULL, peer, 10, &counter));
        EXPECT(next(&ctx) == 0 && ctx == &counter, "the reply");
    }
    if (mr)
        CHECK(fi_close(&mr->fid));
    what = fab_close_rdm(&o, &rc0);
    EXPECT(!what, "%s = %d (%s)", what, rc0, fi_strerror(-rc0));
    if (me == 0)
        printf("ok amo (%s), %d errors retried\n", argv[2], errors);
    return 0;
}
