/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_lifecycle: the provider's objects in every order a program may use,
 * under cvia-run -n 2 and through libfabric's API only (the program never
 * calls cvia_init: the provider owns corevia's life).
 *   1. two fabrics (and domains) open at once;
 *   2. a whole stack, one message each way, then closes in the wrong order
 *      first: a CQ, AV or domain still in use answers -FI_EBUSY and stays
 *      usable; then everything closes and corevia is finalized;
 *   3. a second whole stack in the same process: corevia comes up again.
 * Names are exchanged through files in DIR (argv[1]), as a program with
 * its own out-of-band channel would. Prints "ok lifecycle" on rank 0.
 *   fab_lifecycle DIR death: rank 1 dies (SIGKILL) after one exchange while
 * rank 0 waits in a directed receive from it: rank 0 must get an error
 * completion (FI_EIO) within corevia's liveness bound, and prints
 * "ok death" (the launcher then ends the job, which fails).
 *   fab_lifecycle DIR thread: the thread level corevia comes up at follows
 * the first domain (CVIA_FI_THREAD=auto, the default): FI_THREAD_DOMAIN
 * first gives CVIA_THREAD_SERIALIZED, and while it holds, a domain asking
 * FI_THREAD_SAFE is refused and fi_getinfo gives such hints no entry, one
 * asking FI_THREAD_DOMAIN is granted; once everything closed, FI_THREAD_SAFE
 * first gives CVIA_THREAD_MULTIPLE, after which any domain is granted.
 * Last, the program brings corevia up itself at CVIA_THREAD_SERIALIZED:
 * an FI_THREAD_SAFE domain is then refused, an FI_THREAD_DOMAIN one is not.
 * Under CVIA_FI_THREAD=safe corevia is at CVIA_THREAD_MULTIPLE in the first
 * two parts and nothing is refused. Prints "ok thread" on rank 0.
 */
#include <errno.h>
#include <signal.h>
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

#include <corevia/corevia.h>

#include "name_swap.h"

static int me;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_lifecycle: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_lifecycle: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

struct stack {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_cq *cq;
    fi_addr_t peer;
};

/* fi_getinfo for @threading (FI_THREAD_UNSPEC: none asked); its code in @rc_p,
 * or a failure of the test when @rc_p is NULL. */
static struct fi_info *get_info_thr(enum fi_threading threading, int *rc_p)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    int rc;

    hints->caps = FI_TAGGED | FI_DIRECTED_RECV;   /* receives name their source */
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup("corevia");
    hints->domain_attr->threading = threading;
    rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info);
    if (rc_p)
        *rc_p = rc;
    else
        CHECK(rc);
    fi_freeinfo(hints);
    return info;
}

static struct fi_info *get_info(void)
{
    return get_info_thr(FI_THREAD_UNSPEC, NULL);
}

/* Write our name to DIR/ROUND.RANK, wait (bounded) for the peer's. */
static void swap_names(const char *dir, int round, const void *name, size_t len,
                       void *peer, size_t cap)
{
    char mine[512], theirs[512];
    const char *err;

    snprintf(mine, sizeof(mine), "%s/%d.%d", dir, round, me);
    snprintf(theirs, sizeof(theirs), "%s/%d.%d", dir, round, 1 - me);
    err = name_swap(mine, theirs, name, len, peer, cap, 3000);
    EXPECT(!err, "%s", err);
}

static void wait_one(struct fid_cq *cq, uint64_t want_flag)
{
    struct fi_cq_tagged_entry e;
    ssize_t n;

    for (long i = 0; (n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN; i++)
        EXPECT(i < 2000000000L, "no completion");
    if (n < 0) {
        struct fi_cq_err_entry err = { 0 };
        fi_cq_readerr(cq, &err, 0);
        EXPECT(0, "error completion %d (%s)", err.err, fi_strerror(err.err));
    }
    EXPECT(!want_flag || (e.flags & want_flag), "completion flags %#llx", (unsigned long long)e.flags);
}

static void open_stack_thr(struct stack *s, const char *dir, int round,
                           enum fi_threading threading)
{
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
    struct fi_av_attr ava = { .type = FI_AV_TABLE };
    char name[64], pname[64];
    size_t len = sizeof(name);

    s->info = get_info_thr(threading, NULL);
    CHECK(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
    CHECK(fi_domain(s->fabric, s->info, &s->domain, NULL));
    CHECK(fi_av_open(s->domain, &ava, &s->av, NULL));
    CHECK(fi_cq_open(s->domain, &cqa, &s->cq, NULL));
    CHECK(fi_endpoint(s->domain, s->info, &s->ep, NULL));
    CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
    CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(s->ep));
    CHECK(fi_getname(&s->ep->fid, name, &len));
    swap_names(dir, round, name, len, pname, sizeof(pname));
    EXPECT(fi_av_insert(s->av, pname, 1, &s->peer, 0, NULL) == 1, "fi_av_insert");
}

static void open_stack(struct stack *s, const char *dir, int round)
{
    open_stack_thr(s, dir, round, FI_THREAD_UNSPEC);
}

static void close_stack(struct stack *s)
{
    CHECK(fi_close(&s->ep->fid));
    CHECK(fi_close(&s->av->fid));
    CHECK(fi_close(&s->cq->fid));
    CHECK(fi_close(&s->domain->fid));
    CHECK(fi_close(&s->fabric->fid));
    fi_freeinfo(s->info);
}

static void exchange(struct stack *s, int round);

/* A second domain asking @threading on @s's fabric: granted, or refused
 * (fi_domain fails, and fi_getinfo has no entry for it) as @granted says. */
static void second_domain(struct stack *s, enum fi_threading threading, int granted,
                          const char *why)
{
    struct fid_domain *d2 = NULL;
    int rc;
    struct fi_info *info = get_info_thr(threading, &rc);

    if (granted) {
        EXPECT(rc == 0 && info, "%s: fi_getinfo gave %d (%s)", why, rc, fi_strerror(-rc));
        EXPECT(info->domain_attr->threading == threading, "%s: granted threading %d",
               why, (int)info->domain_attr->threading);
        CHECK(fi_domain(s->fabric, info, &d2, NULL));
        CHECK(fi_close(&d2->fid));
        fi_freeinfo(info);
        return;
    }
    EXPECT(rc == -FI_ENODATA, "%s: fi_getinfo gave %d, not -FI_ENODATA", why, rc);
    fi_freeinfo(info);
    /* the same request by hand: the entry the first domain was opened with */
    info = fi_dupinfo(s->info);
    info->domain_attr->threading = threading;
    rc = fi_domain(s->fabric, info, &d2, NULL);
    EXPECT(rc == -FI_EINVAL, "%s: fi_domain gave %d, not -FI_EINVAL", why, rc);
    fi_freeinfo(info);
}

/* Which thread level corevia comes up at, from the first domain. */
static int thread_levels(const char *dir)
{
    const char *env = getenv("CVIA_FI_THREAD");
    int safe = env && !strcmp(env, "safe");
    struct stack s;

    EXPECT(!env || safe || !strcmp(env, "auto"), "CVIA_FI_THREAD=%s: run with auto or safe", env);
    open_stack_thr(&s, dir, 1, FI_THREAD_DOMAIN);
    exchange(&s, 1);
    EXPECT(cvia_query_thread() == (safe ? CVIA_THREAD_MULTIPLE : CVIA_THREAD_SERIALIZED),
           "first domain FI_THREAD_DOMAIN: corevia at level %d", cvia_query_thread());
    second_domain(&s, FI_THREAD_SAFE, safe, "FI_THREAD_SAFE after an FI_THREAD_DOMAIN domain");
    second_domain(&s, FI_THREAD_DOMAIN, 1, "a second FI_THREAD_DOMAIN domain");
    exchange(&s, 2);
    close_stack(&s);
    EXPECT(!cvia_initialized(), "corevia still up after every object closed");

    open_stack_thr(&s, dir, 3, FI_THREAD_SAFE);
    exchange(&s, 3);
    EXPECT(cvia_query_thread() == CVIA_THREAD_MULTIPLE,
           "first domain FI_THREAD_SAFE: corevia at level %d", cvia_query_thread());
    second_domain(&s, FI_THREAD_DOMAIN, 1, "FI_THREAD_DOMAIN after an FI_THREAD_SAFE domain");
    second_domain(&s, FI_THREAD_SAFE, 1, "a second FI_THREAD_SAFE domain");
    exchange(&s, 4);
    close_stack(&s);
    EXPECT(!cvia_initialized(), "corevia still up after the second stack closed");

    /* the program brings corevia up itself, serialized: under auto only
     * FI_THREAD_DOMAIN domains may share it */
    struct fi_info *info = get_info_thr(FI_THREAD_DOMAIN, NULL);
    struct fid_fabric *f;
    struct fid_domain *d;
    int rc;
    CHECK(cvia_init_thread(NULL, NULL, CVIA_THREAD_SERIALIZED, NULL));
    CHECK(fi_fabric(info->fabric_attr, &f, NULL));
    info->domain_attr->threading = FI_THREAD_SAFE;
    rc = fi_domain(f, info, &d, NULL);
    EXPECT(safe ? rc == 0 : rc == -FI_EINVAL, "FI_THREAD_SAFE domain on a serialized corevia "
           "the program started: fi_domain gave %d", rc);
    if (rc == 0)
        CHECK(fi_close(&d->fid));
    info->domain_attr->threading = FI_THREAD_DOMAIN;
    CHECK(fi_domain(f, info, &d, NULL));
    CHECK(fi_close(&d->fid));
    CHECK(fi_close(&f->fid));
    fi_freeinfo(info);
    CHECK(cvia_finalize());
    if (me == 0)
        printf("ok thread (CVIA_FI_THREAD=%s)\n", safe ? "safe" : "auto");
    return 0;
}

static void exchange(struct stack *s, int round)
{
    int out = 1000 * round + me, in = -1;

    CHECK(fi_trecv(s->ep, &in, sizeof(in), NULL, s->peer, 5, 0, NULL));
    CHECK(fi_tsend(s->ep, &out, sizeof(out), NULL, s->peer, 5, NULL));
    wait_one(s->cq, 0);
    wait_one(s->cq, 0);
    EXPECT(in == 1000 * round + 1 - me, "round %d: got %d", round, in);
}

/* A peer dies while we wait for it: an error completion, not a hang. */
static int death(const char *dir)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry err = { 0 };
    struct stack s;
    int in = 0;
    ssize_t n;

    open_stack(&s, dir, 1);
    exchange(&s, 1);
    if (me == 1)
        raise(SIGKILL);
    CHECK(fi_trecv(s.ep, &in, sizeof(in), NULL, s.peer, 6, 0, NULL));
    time_t t0 = time(NULL);
    while ((n = fi_cq_read(s.cq, &e, 1)) == -FI_EAGAIN)
        EXPECT(time(NULL) - t0 < 60, "no completion 60 s after the peer died");
    EXPECT(n == -FI_EAVAIL, "a completion (%zd) from a dead peer", n);
    EXPECT(fi_cq_readerr(s.cq, &err, 0) == 1, "fi_cq_readerr");
    EXPECT(err.err == FI_EIO, "error %d (%s), wanted FI_EIO", err.err, fi_strerror(err.err));
    printf("ok death (FI_EIO after %ld s, prov_errno %d)\n", (long)(time(NULL) - t0),
           err.prov_errno);
    fflush(stdout);
    fi_close(&s.ep->fid);
    return 0;
}

int main(int argc, char **argv)
{
    struct fid_fabric *f1, *f2;
    struct fid_domain *d1, *d2;
    struct fi_info *info;
    struct stack s;

    if (argc != 2 && !(argc == 3 && (!strcmp(argv[2], "death") || !strcmp(argv[2], "thread")))) {
        fprintf(stderr, "usage: cvia-run -n 2 fab_lifecycle DIR [death|thread]\n");
        return 2;
    }
    me = atoi(getenv("CVIA_RANK") ? getenv("CVIA_RANK") : "0");
    if (argc == 3)
        return !strcmp(argv[2], "death") ? death(argv[1]) : thread_levels(argv[1]);

    /* 1. two fabrics at once */
    info = get_info();
    CHECK(fi_fabric(info->fabric_attr, &f1, NULL));
    CHECK(fi_fabric(info->fabric_attr, &f2, NULL));
    CHECK(fi_domain(f1, info, &d1, NULL));
    CHECK(fi_domain(f2, info, &d2, NULL));
    CHECK(fi_close(&d2->fid));
    CHECK(fi_close(&f2->fid));
    CHECK(fi_close(&d1->fid));
    CHECK(fi_close(&f1->fid));
    fi_freeinfo(info);

    /* 2. a stack, then closes in the wrong order first */
    open_stack(&s, argv[1], 1);
    exchange(&s, 1);
    EXPECT(cvia_initialized(), "corevia is not up with an endpoint open");
    EXPECT(fi_close(&s.cq->fid) == -FI_EBUSY, "a CQ in use must not close");
    EXPECT(fi_close(&s.av->fid) == -FI_EBUSY, "an AV in use must not close");
    EXPECT(fi_close(&s.domain->fid) == -FI_EBUSY, "a domain in use must not close");
    exchange(&s, 2);   /* and everything still works */
    CHECK(fi_close(&s.ep->fid));
    CHECK(fi_close(&s.cq->fid));
    CHECK(fi_close(&s.av->fid));
    CHECK(fi_close(&s.domain->fid));
    CHECK(fi_close(&s.fabric->fid));
    fi_freeinfo(s.info);
    EXPECT(!cvia_initialized(), "corevia still up after every object closed");

    /* 3. a second life in the same process */
    open_stack(&s, argv[1], 3);
    exchange(&s, 3);
    CHECK(fi_close(&s.ep->fid));
    CHECK(fi_close(&s.av->fid));
    CHECK(fi_close(&s.cq->fid));
    CHECK(fi_close(&s.domain->fid));
    CHECK(fi_close(&s.fabric->fid));
    fi_freeinfo(s.info);
    EXPECT(!cvia_initialized(), "corevia still up after the second stack closed");
    if (me == 0)
        printf("ok lifecycle\n");
    return 0;
}
