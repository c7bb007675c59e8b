/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_errnomem: an operation's error completion never vanishes for want
 * of memory (issue 16). Run with the tests' copy of the provider (fault
 * injection, FI_PROVIDER_PATH=build/fabric-fault), one process under
 * cvia-run -n 1. With FAB_FAULT=cqerr:N set by the program, the first N
 * error records the CQ would allocate cannot be had:
 *   1. N tagged receives are posted and cancelled: N FI_ECANCELED errors,
 *      one for each context, must come out of fi_cq_readerr;
 *   2. N FI_PEEK receives that find nothing: N FI_ENOMSG errors (or the
 *      peek is refused with -FI_EAGAIN, which the program retries after
 *      the fault is over: either way it learns its answer).
 * Prints "ok errnomem".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fab_open.h"

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_errnomem: %s:%d: %s = %ld (%s)\n", __FILE__, __LINE__, #call, \
                _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_errnomem: "); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

#define N 12

static struct fid_cq *cq;

/* Take every error now queued; each must be @err for a context in
 * ctx[0..N): seen[] counts them. */
static int drain_errors(const char *ctx, int *seen, int err)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry x;
    int got = 0;

    for (int tries = 0; tries < 1000; tries++) {
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == -FI_EAGAIN)
            continue;
        EXPECT(n == -FI_EAVAIL, "fi_cq_read gave %zd, only errors expected", n);
        memset(&x, 0, sizeof(x));
        EXPECT(fi_cq_readerr(cq, &x, 0) == 1, "fi_cq_readerr");
        EXPECT(x.err == err, "error %d (%s), %d expected", x.err, fi_strerror(x.err), err);
        const char *c = x.op_context;
        EXPECT(c >= ctx && c < ctx + N, "an error with an unknown context");
        seen[c - ctx]++;
        got++;
        tries = 0;
    }
    return got;
}

int main(void)
{
    struct fab_open o;
    struct fid_ep *ep;
    const char *what;
    int rc;
    static char rctx[N], pctx[N], buf[N][64];
    int seen[N] = { 0 }, refused[N] = { 0 };
    char fault[32];

    what = fab_open_rdm(&o, FI_TAGGED, 0, &rc);
    EXPECT(!what, "%s = %d (%s)", what, rc, fi_strerror(-rc));
    ep = o.ep;
    cq = o.cq;

    /* 1. cancelled receives */
    for (int i = 0; i < N; i++)
        CHECK(fi_trecv(ep, buf[i], sizeof(buf[i]), NULL, FI_ADDR_UNSPEC, 77, 0, &rctx[i]));
    snprintf(fault, sizeof(fault), "cqerr:%d", N);
    setenv("FAB_FAULT", fault, 1);
    for (int i = 0; i < N; i++)
        CHECK(fi_cancel(&ep->fid, &rctx[i]));
    unsetenv("FAB_FAULT");
    int got = drain_errors(rctx, seen, FI_ECANCELED);
    for (int i = 0; i < N; i++)
        EXPECT(seen[i] == 1, "cancelled receive %d: %d errors (of %d in all)", i, seen[i], got);

    /* 2. peeks that find nothing */
    memset(seen, 0, sizeof(seen));
    snprintf(fault, sizeof(fault), "cqerr:%d", N + 1);   /* a new setting: counted afresh */
    setenv("FAB_FAULT", fault, 1);
    for (int i = 0; i < N; i++) {
        struct iovec iov = { buf[i], sizeof(buf[i]) };
        struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
                                   .tag = 99, .context = &pctx[i] };
        ssize_t prc = fi_trecvmsg(ep, &m, FI_PEEK);
        EXPECT(prc == 0 || prc == -FI_EAGAIN, "peek %d: %zd", i, prc);
        refused[i] = prc == -FI_EAGAIN;
    }
    unsetenv("FAB_FAULT");
    for (int i = 0; i < N; i++)
        if (refused[i]) {   /* told at once: asked again */
            struct iovec iov = { buf[i], sizeof(buf[i]) };
            struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1,
                                       .addr = FI_ADDR_UNSPEC, .tag = 99,
                                       .context = &pctx[i] };
            CHECK(fi_trecvmsg(ep, &m, FI_PEEK));
        }
    got = drain_errors(pctx, seen, FI_ENOMSG);
    for (int i = 0; i < N; i++)
        EXPECT(seen[i] == 1, "peek %d: %d errors (of %d in all)", i, seen[i], got);

    what = fab_close_rdm(&o, &rc);
    EXPECT(!what, "%s = %d (%s)", what, rc, fi_strerror(-rc));
    printf("ok errnomem\n");
    return 0;
}
