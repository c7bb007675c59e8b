/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_waitfd: an event loop over FI_WAIT_FD with manual progress, as
 * Mercury or libfabric's fabtests run one: a CQ and a receive counter
 * opened with FI_WAIT_FD, their fds (fi_control FI_GETWAIT) in an epoll
 * set, fi_trywait before every epoll_wait, fi_cq_read after it. Two
 * launcher-free processes (tests/fabric/dyn.sh starts them, names through
 * files):
 *   fab_waitfd a|b DIR
 * - 40 round trips of 8 B, 4 KiB and 1 MiB (a rendezvous) messages, the
 *   side that answers sleeping 1 ms first on every other round, so the
 *   waiting side is asleep in epoll_wait when the message comes;
 * - then b waits on its receive counter's fd alone while a sends 5
 *   messages 2 ms apart;
 * - fi_cq_signal makes the CQ's fd readable, and fi_trywait reports it
 *   once (-FI_EAGAIN), then 0 again.
 * Every payload is checked. epoll_wait has no time limit: an fd that is
 * never signalled hangs the program until the script's limit. It must
 * have slept (epoll_wait returned an event after fi_trywait said 0) at
 * least 10 times, so the fd path was the one exercised. Prints "ok ROLE".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "name_swap.h"

static const char *role;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_waitfd %s: %s:%d: %s = %ld (%s)\n", role, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_waitfd %s: ", role); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

#define ROUNDS 40
#define BIG (1 << 20)
#define LATE 5

static struct fid_fabric *fabric;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_cntr *rxcntr;
static int epfd, cntr_epfd;
static unsigned long sleeps, tries;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static void check(const unsigned char *p, size_t n, unsigned seed, const char *what)
{
    for (size_t i = 0; i < n; i++)
        EXPECT(p[i] == (unsigned char)(seed * 131u + i * 7u + (i >> 9)),
               "%s: byte %zu is %u", what, i, p[i]);
}

/* Sleep in epoll_wait on @efd if fi_trywait on @fids says so. */
static void wait_on(int efd, struct fid **fids, int n)
{
    struct epoll_event ev[2];
    int rc;

    tries++;
    rc = fi_trywait(fabric, fids, n);
    if (rc == -FI_EAGAIN)
        return;
    CHECK(rc);
    do
        rc = epoll_wait(efd, ev, 2, -1);   /* no limit: the fd must come */
    while (rc < 0 && errno == EINTR);
    EXPECT(rc > 0, "epoll_wait = %d (%s)", rc, strerror(errno));
    sleeps++;
}

/* The completion of @ctx, through the event loop. */
static void wait_ctx(void *ctx)
{
    struct fid *fids[2] = { &cq->fid, &rxcntr->fid };

    for (;;) {
        struct fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) {
            EXPECT(e.op_context == ctx, "completion of %p, waiting for %p", e.op_context, ctx);
            return;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = { 0 };
            CHECK(fi_cq_readerr(cq, &err, 0));
            EXPECT(0, "error completion: %s", fi_strerror(err.err));
        }
        EXPECT(n == -FI_EAGAIN, "fi_cq_read = %zd", n);
        wait_on(epfd, fids, 2);
    }
}

static void xfer(int send, void *buf, size_t len, fi_addr_t peer, uint64_t tag)
{
    char ctx;

    for (;;) {
        ssize_t rc = send ? fi_tsend(ep, buf, len, NULL, peer, tag, &ctx)
                          : fi_trecv(ep, buf, len, NULL, peer, tag, 0, &ctx);
        if (rc == 0)
            break;
        EXPECT(rc == -FI_EAGAIN, "fi_t%s = %zd", send ? "send" : "recv", rc);
        (void)fi_cq_read(cq, NULL, 0);
    }
    wait_ctx(&ctx);
}

static void add_fd(int efd, fid_t fid)
{
    int fd = -1;
    enum fi_wait_obj obj = FI_WAIT_UNSPEC;
    struct epoll_event ev = { .events = EPOLLIN };

    CHECK(fi_control(fid, FI_GETWAIT, &fd));
    CHECK(fi_control(fid, FI_GETWAITOBJ, &obj));
    EXPECT(fd >= 0 && obj == FI_WAIT_FD, "wait object %d, fd %d", (int)obj, fd);
    ev.data.fd = fd;
    EXPECT(epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    struct fi_info *hints, *info;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *plain;
    struct fid_wait *ws;
    struct fi_av_attr av_attr = { .type = FI_AV_MAP };
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD };
    struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_FD };
    struct fi_wait_attr wait_attr = { .wait_obj = FI_WAIT_FD };
    char name[64], peer_name[64], path[512], theirs[512];
    size_t len = sizeof(name);
    fi_addr_t peer;
    unsigned char *buf;
    int a, fd;

    if (argc < 3 || (strcmp(argv[1], "a") && strcmp(argv[1], "b"))) {
        fprintf(stderr, "usage: fab_waitfd a|b DIR\n");
        return 2;
    }
    role = argv[1];
    a = role[0] == 'a';
    hints = fi_allocinfo();
    hints->caps = FI_TAGGED | FI_DIRECTED_RECV;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->fabric_attr->prov_name = strdup("corevia");
    CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    /* what is declined, and a CQ without an fd */
    EXPECT(fi_wait_open(fabric, &wait_attr, &ws) == -FI_ENOSYS, "fi_wait_open not declined");
    CHECK(fi_cq_open(domain, &(struct fi_cq_attr){ .format = FI_CQ_FORMAT_TAGGED,
                                                  .wait_obj = FI_WAIT_NONE }, &plain, NULL));
    EXPECT(fi_control(&plain->fid, FI_GETWAIT, &fd) < 0, "an fd from a FI_WAIT_NONE CQ");
    EXPECT(fi_trywait(fabric, (struct fid *[]){ &plain->fid }, 1) == -FI_EINVAL,
           "fi_trywait on a CQ without a wait object");
    CHECK(fi_close(&plain->fid));

    CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
    CHECK(fi_cntr_open(domain, &cntr_attr, &rxcntr, NULL));
    CHECK(fi_endpoint(domain, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_ep_bind(ep, &rxcntr->fid, FI_RECV));
    CHECK(fi_enable(ep));
    EXPECT((epfd = epoll_create1(EPOLL_CLOEXEC)) >= 0 &&
           (cntr_epfd = epoll_create1(EPOLL_CLOEXEC)) >= 0, "epoll_create1");
    add_fd(epfd, &cq->fid);
    add_fd(epfd, &rxcntr->fid);
    add_fd(cntr_epfd, &rxcntr->fid);

    CHECK(fi_getname(&ep->fid, name, &len));
    snprintf(path, sizeof(path), "%s/%s.pid", argv[2], role);   /* for the segment check */
    FILE *f = fopen(path, "w");
    EXPECT(f && fprintf(f, "%d\n", (int)getpid()) > 0 && !fclose(f), "cannot write %s", path);
    snprintf(path, sizeof(path), "%s/%s.name", argv[2], role);
    snprintf(theirs, sizeof(theirs), "%s/%s.name", argv[2], a ? "b" : "a");
    const char *err = name_swap(path, theirs, name, len, peer_name, sizeof(peer_name), 2000);
    EXPECT(!err, "%s", err);
    EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert refused");
    EXPECT((buf = malloc(BIG)), "out of memory");

    /* round trips: a sends, b answers; the answering side is late on odd rounds */
    static const size_t sizes[] = { 8, 4096, BIG };
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = sizes[r % 3];
        if (a) {
            if (r & 1)
                usleep(1000);
            fill(buf, n, (unsigned)r);
            xfer(1, buf, n, peer, (uint64_t)r);
            memset(buf, 0, n);
            xfer(0, buf, n, peer, (uint64_t)r | 1u << 20);
            check(buf, n, (unsigned)r + 1000, "b's answer");
        } else {
            memset(buf, 0, n);
            xfer(0, buf, n, peer, (uint64_t)r);
            check(buf, n, (unsigned)r, "a's message");
            if (r & 1)
                usleep(1000);
            fill(buf, n, (unsigned)r + 1000);
            xfer(1, buf, n, peer, (uint64_t)r | 1u << 20);
        }
    }

    /* the counter's fd alone */
    if (a) {
        for (int i = 0; i < LATE; i++) {
            usleep(2000);
            fill(buf, 64, 500u + (unsigned)i);
            xfer(1, buf, 64, peer, 1u << 21 | (uint64_t)i);
        }
        memset(buf, 0, 1);   /* b's "done": a must not close before b has it all */
        xfer(0, buf, 1, peer, 1u << 22);
    } else {
        static unsigned char late[LATE][64];
        static char ctx[LATE];
        uint64_t base = fi_cntr_read(rxcntr);
        struct fid *fids[1] = { &rxcntr->fid };
        for (int i = 0; i < LATE; i++)
            CHECK(fi_trecv(ep, late[i], 64, NULL, peer, 1u << 21 | (uint64_t)i, 0, &ctx[i]));
        while (fi_cntr_read(rxcntr) < base + LATE)
            wait_on(cntr_epfd, fids, 1);
        for (int i = 0; i < LATE; i++) {
            check(late[i], 64, 500u + (unsigned)i, "a's late message");
            wait_ctx(&ctx[i]);   /* their CQ entries, in order */
        }
        xfer(1, buf, 1, peer, 1u << 22);
    }
    EXPECT(fi_cntr_readerr(rxcntr) == 0, "%lu receive errors",
           (unsigned long)fi_cntr_readerr(rxcntr));
    fprintf(stderr, "fab_waitfd %s: %lu fi_trywait, %lu sleeps in epoll_wait\n", role,
            tries, sleeps);
    EXPECT(sleeps >= 10, "only %lu sleeps in epoll_wait: the fd path was not exercised",
           sleeps);

    /* fi_cq_signal makes the fd readable; fi_trywait reports it once */
    {
        struct fid *fids[1] = { &cq->fid };
        struct epoll_event ev;
        int rc;
        CHECK(fi_trywait(fabric, fids, 1));
        CHECK(fi_cq_signal(cq));
        do
            rc = epoll_wait(epfd, &ev, 1, 10000);
        while (rc < 0 && errno == EINTR);
        EXPECT(rc == 1, "fi_cq_signal did not make the fd readable (%d)", rc);
        EXPECT(fi_trywait(fabric, fids, 1) == -FI_EAGAIN, "fi_trywait missed fi_cq_signal");
        EXPECT(fi_trywait(fabric, fids, 1) == 0, "fi_trywait still busy after the signal");
    }

    close(epfd);
    close(cntr_epfd);
    CHECK(fi_close(&ep->fid));
    CHECK(fi_close(&rxcntr->fid));
    CHECK(fi_close(&cq->fid));
    CHECK(fi_close(&av->fid));
    CHECK(fi_close(&domain->fid));
    CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
    free(buf);
    printf("ok %s\n", role);
    return 0;
}
