/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_auto: FI_PROGRESS_AUTO under cvia-run -n 2. Both ranks open a domain
 * asking for automatic progress (messaging, RMA and atomics). Rank 1
 * registers a counter, tells rank 0 where it is, posts a 1 MiB tagged
 * receive and then stops calling libfabric: it watches its own memory.
 * Rank 0 adds 1 to the counter ROUNDS times with fi_atomic and sends the
 * 1 MiB message, and waits for every completion. Each of those needs rank
 * 1's side to act (apply the atomic and answer; match the rendezvous, read
 * the bytes, answer FIN): with manual progress rank 0 would wait forever
 * (the test's limit), so only the provider's progress thread can make it
 * pass. Rank 0 then says so in a file; rank 1, which has been waiting for
 * that file, finds the receive's completion in its CQ, the counter at
 * ROUNDS and the message in its buffer.
 * Then blocking reads: fi_cq_signal wakes a thread in fi_cq_sread on an
 * idle CQ (-FI_EAGAIN); rank 0 waits in fi_cq_sread (no limit) for a
 * message rank 1 sends after a pause, and prints the CPU time that wait
 * took (it sleeps in corevia, not in a polling loop).
 *   fab_auto DIR      names exchanged through files in DIR
 * Prints "ok auto" on rank 0.
 *   fab_auto --refused   (alone, with CVIA_FI_THREAD=domain): hints asking
 * for automatic progress get no entry; prints "ok refused".
 * The domain asks FI_THREAD_DOMAIN with automatic progress, as an MPI
 * library below MPI_THREAD_MULTIPLE would: the provider must still bring
 * corevia up at MULTIPLE and keep the domain's locks (TSan checks it).
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "name_swap.h"

#define ROUNDS 100
#define BIG    (1u << 20)

static int me;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_auto: rank %d: %s:%d: %s = %ld (%s)\n", me, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_auto: rank %d: ", me); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

/* Round by round through files in DIR (auto<round>.<rank>). */
static void swap(const char *dir, const void *mine, size_t len, void *theirs)
{
    static int round;
    char me_path[512], peer_path[512];
    const char *err;

    round++;
    snprintf(me_path, sizeof(me_path), "%s/auto%d.%d", dir, round, me);
    snprintf(peer_path, sizeof(peer_path), "%s/auto%d.%d", dir, round, 1 - me);
    err = name_swap(me_path, peer_path, mine, len, theirs, len, 3000);
    EXPECT(!err, "%s", err);
}

static void wait_cq(struct fid_cq *cq, int n)
{
    struct fi_cq_tagged_entry e;
    ssize_t r;

    for (int got = 0; got < n;) {
        r = fi_cq_read(cq, &e, 1);
        if (r == -FI_EAGAIN)
            continue;
        if (r < 0) {
            struct fi_cq_err_entry err = { 0 };
            fi_cq_readerr(cq, &err, 0);
            EXPECT(0, "error completion %d (%s)", err.err, fi_strerror(err.err));
        }
        got += (int)r;
    }
}

static void *sread_idle(void *arg)
{
    struct fi_cq_tagged_entry e;
    return (void *)(intptr_t)fi_cq_sread(arg, &e, 1, NULL, -1);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char pattern(size_t i)
{
    return (char)(i * 7 + 3);
}

int main(int argc, char **argv)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
    struct fi_av_attr ava = { .type = FI_AV_TABLE };
    char name[64], pname[64];
    size_t len = sizeof(name);
    fi_addr_t peer;
    const char *r = getenv("CVIA_RANK");

    EXPECT(argc == 2, "usage: fab_auto DIR (under cvia-run -n 2) | fab_auto --refused");
    hints->caps = FI_TAGGED | FI_RMA | FI_ATOMIC;
    hints->ep_attr->type = FI_EP_RDM;
    /* as Open MPI below MPI_THREAD_MULTIPLE: one application thread at a
     * time; the progress thread is the provider's, so corevia must still
     * run at MULTIPLE and the domain keep its locks */
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
    hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup("corevia");
    if (!strcmp(argv[1], "--refused")) {
        int rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info);
        EXPECT(rc == -FI_ENODATA, "FI_PROGRESS_AUTO at CVIA_FI_THREAD=domain: fi_getinfo = %d "
               "(%s), not -FI_ENODATA", rc, fi_strerror(-rc));
        fi_freeinfo(hints);
        printf("ok refused\n");
        return 0;
    }
    EXPECT(r, "run under cvia-run -n 2");
    me = atoi(r);
    CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    EXPECT(info->domain_attr->data_progress == FI_PROGRESS_AUTO &&
           info->domain_attr->control_progress == FI_PROGRESS_AUTO,
           "asked for FI_PROGRESS_AUTO, got data %d control %d",
           info->domain_attr->data_progress, info->domain_attr->control_progress);

    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    CHECK(fi_av_open(domain, &ava, &av, NULL));
    CHECK(fi_cq_open(domain, &cqa, &cq, NULL));
    CHECK(fi_endpoint(domain, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(ep));
    CHECK(fi_getname(&ep->fid, name, &len));
    EXPECT(len <= sizeof(name), "name of %zu bytes", len);

    char *big = malloc(BIG);
    EXPECT(big, "out of memory");
    uint64_t *counter = aligned_alloc(64, 64);
    EXPECT(counter, "out of memory");
    *counter = 0;
    struct fid_mr *mr = NULL;
    struct { char name[64]; uint64_t addr, key; } mine = { .addr = 0 }, theirs;

    memcpy(mine.name, name, len);
    if (me == 1) {
        CHECK(fi_mr_reg(domain, counter, sizeof(*counter), FI_REMOTE_READ | FI_REMOTE_WRITE,
                        0, 0, 0, &mr, NULL));
        mine.addr = (uint64_t)(uintptr_t)counter;
        mine.key = fi_mr_key(mr);
        memset(big, 0, BIG);
        CHECK(fi_trecv(ep, big, BIG, NULL, FI_ADDR_UNSPEC, 7, 0, big));
    }
    /* rank 1's receive is posted before rank 0 can learn its name */
    swap(argv[1], &mine, sizeof(mine), &theirs);
    memcpy(pname, theirs.name, sizeof(pname));
    EXPECT(fi_av_insert(av, pname, 1, &peer, 0, NULL) == 1, "fi_av_insert");

    if (me == 0) {
        uint64_t one = 1;
        for (size_t i = 0; i < BIG; i++)
            big[i] = pattern(i);
        for (int i = 0; i < ROUNDS; i++) {
            ssize_t rc;
            while ((rc = fi_atomic(ep, &one, 1, NULL, peer, theirs.addr, theirs.key,
                                   FI_UINT64, FI_SUM, NULL)) == -FI_EAGAIN)
                (void)fi_cq_read(cq, NULL, 0);
            CHECK(rc);
            wait_cq(cq, 1);
        }
        CHECK(fi_tsend(ep, big, BIG, NULL, peer, 7, big));
        wait_cq(cq, 1);
        swap(argv[1], "done", 4, name);   /* rank 1 may look now */
    } else {
        /* no libfabric call until rank 0 is done (its limit: 30 s); the
         * memory is looked at only after the CQ, whose lock orders it after
         * the progress thread's writes */
        swap(argv[1], "wait", 4, name);
        wait_cq(cq, 1);   /* the receive's completion is there */
        EXPECT(*counter == ROUNDS, "counter at %llu, not %d",
               (unsigned long long)*counter, ROUNDS);
        for (size_t k = 0; k < BIG; k++)
            EXPECT(big[k] == pattern(k), "byte %zu of the message is wrong", k);
    }
    /* fi_cq_signal wakes a blocked fi_cq_sread (whenever it comes) */
    struct fid_cq *idle_cq;
    pthread_t t;
    void *ret;
    CHECK(fi_cq_open(domain, &cqa, &idle_cq, NULL));
    EXPECT(!pthread_create(&t, NULL, sread_idle, idle_cq), "pthread_create");
    usleep(20000);
    CHECK(fi_cq_signal(idle_cq));
    EXPECT(!pthread_join(t, &ret), "pthread_join");
    EXPECT((intptr_t)ret == -FI_EAGAIN, "fi_cq_sread after fi_cq_signal: %ld, not -FI_EAGAIN",
           (long)(intptr_t)ret);
    CHECK(fi_close(&idle_cq->fid));

    /* a blocking read that waits for a message sent after a pause */
    uint64_t word = 0;
    if (me == 0) {
        struct fi_cq_tagged_entry e;
        CHECK(fi_trecv(ep, &word, sizeof(word), NULL, peer, 11, 0, &word));
        double w0 = wall_s(), c0 = cpu_s();
        ssize_t n = fi_cq_sread(cq, &e, 1, NULL, -1);
        double w = wall_s() - w0, c = cpu_s() - c0;
        EXPECT(n == 1 && e.op_context == &word && e.tag == 11 && word == 0x5eed,
               "fi_cq_sread = %zd, tag %llu, word %#llx", n, (unsigned long long)e.tag,
               (unsigned long long)word);
        printf("sread: waited %.0f ms, %.1f ms of CPU\n", w * 1e3, c * 1e3);
    } else {
        usleep(300000);
        word = 0x5eed;
        CHECK(fi_tsend(ep, &word, sizeof(word), NULL, peer, 11, NULL));
        wait_cq(cq, 1);
    }

    /* both done before anyone closes: a 0-byte message each way */
    CHECK(fi_trecv(ep, NULL, 0, NULL, peer, 9, 0, NULL));
    CHECK(fi_tsend(ep, NULL, 0, NULL, peer, 9, NULL));
    wait_cq(cq, 2);

    if (mr)
        CHECK(fi_close(&mr->fid));
    CHECK(fi_close(&ep->fid));
    CHECK(fi_close(&cq->fid));
    CHECK(fi_close(&av->fid));
    CHECK(fi_close(&domain->fid));
    CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
    free(big);
    free(counter);
    if (me == 0)
        printf("ok auto\n");
    return 0;
}
