/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_dyn: two processes started without any launcher (no cvia-run, no
 * PMIx, no CVIA_BOOT_ADDR) reach each other through the provider: each
 * writes its fi_getname() name to DIR/ROLE.name, reads the other's and
 * inserts it (tests/fabric/dyn.sh starts both).
 *   fab_dyn a|b DIR [MODE]
 * MODE (both processes get the same):
 *   msg    (default) b inserts a's name only after a's first message came:
 *          its source must be FI_ADDR_NOTAVAIL then, the peer's address
 *          after. Then untagged and tagged, eager (100 B) and rendezvous
 *          (1 MiB) each way, tagged ones received out of order by tag,
 *          every payload checked; fi_av_lookup gives the inserted name
 *          back. Prints "ok ROLE".
 *   death  after one exchange (and 100 ms of progress) a dies (SIGKILL)
 *          while b waits in a directed receive from it: b gets an error
 *          completion, no hang, and prints "ok death".
 *   forge  a changes one byte of the nonce in b's name: fi_av_insert refuses
 *          it (FI_ADDR_NOTAVAIL), the true name then works. "ok forge".
 *   reclaim (run with CVIA_MAX_PEERS=2: one peer at a time) a connects to b,
 *          sends, and dies; b sees the death (a directed receive fails),
 *          writes DIR/ready; c (fab_dyn c DIR reclaim, started by the
 *          script) then connects to b on the ring a had: "ok reclaim".
 *   replay (tests/fabric/replay.sh, across hosts, a and c bound to one udp
 *          port) a connects to b, sends, gets an answer, closes; b sees it gone (a directed
 *          receive fails) and writes DIR/ready; c, a new incarnation at a's
 *          address, connects to b and sends; b writes DIR/ready2 and waits
 *          for DIR/replayed (the script replayed a's recorded HELLOs), then
 *          keeps a wildcard receive posted for 500 ms: nothing may match it.
 *          b then answers c. "ok replay" (b), "ok replay a", "ok replay c".
 *   nonet  (across hosts with CVIA_NET=tcp: launcher-free peers are served
 *          over udp and eth only) each inserts the other's name: refused at
 *          once (FI_ADDR_NOTAVAIL, within 2 s), not a hang. "ok nonet".
 *   threads both insert each other at once (connections that cross) while
 *          a second thread of each polls a receive CQ of its own for the
 *          other's message (progress racing with the connection being
 *          published); then one message each way. "ok threads".
 */
#include <errno.h>
#include <pthread.h>
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

#include "name_swap.h"

static const char *role;

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_dyn %s: %s:%d: %s = %ld (%s)\n", role, __FILE__, \
                __LINE__, #call, _rc, fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_dyn %s: ", role); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

#define BIG (1 << 20)
#define SMALL 100

static struct fid_ep *ep;
static struct fid_cq *cq, *rxcq;   /* rxcq: receives, "threads" mode only */
static struct fid_av *av;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

/* Wait (20 s at most) for the completion of @ctx; its entry in *@e and the
 * source in *@src. Returns 0, or the error's code. */
static int wait_ctx_on(struct fid_cq *q, void *ctx, struct fi_cq_tagged_entry *e,
                       fi_addr_t *src);

static int wait_ctx(void *ctx, struct fi_cq_tagged_entry *e, fi_addr_t *src)
{
    return wait_ctx_on(cq, ctx, e, src);
}

static int wait_ctx_on(struct fid_cq *q, void *ctx, struct fi_cq_tagged_entry *e,
                       fi_addr_t *src)
{
    double end = now() + 20;

    for (;;) {
        struct fi_cq_tagged_entry ent;
        fi_addr_t from = FI_ADDR_UNSPEC;
        ssize_t n = fi_cq_readfrom(q, &ent, 1, &from);
        if (n == 1) {
            EXPECT(ent.op_context == ctx, "completion of %p, waiting for %p",
                   ent.op_context, ctx);
            if (e)
                *e = ent;
            if (src)
                *src = from;
            return 0;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = { 0 };
            CHECK(fi_cq_readerr(q, &err, 0));
            EXPECT(err.op_context == ctx, "error completion of %p, waiting for %p",
                   err.op_context, ctx);
            return err.err ? err.err : FI_EOTHER;
        }
        EXPECT(n == -FI_EAGAIN, "fi_cq_readfrom = %zd (%s)", n, fi_strerror((int)-n));
        EXPECT(now() < end, "no completion within 20 s");
    }
}

static void swap_names(const char *dir, const void *name, size_t len, void *peer, size_t cap)
{
    char path[512], theirs[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.pid", dir, role);   /* for the segment check */
    EXPECT((f = fopen(path, "w")) && fprintf(f, "%d\n", (int)getpid()) > 0 && !fclose(f),
           "cannot write %s", path);
    snprintf(path, sizeof(path), "%s/%s.name", dir, role);
    snprintf(theirs, sizeof(theirs), "%s/%s.name", dir, role[0] == 'b' ? "a" : "b");
    const char *err = name_swap(path, theirs, name, len, peer, cap, 2000);
    EXPECT(!err, "%s", err);
}

static void send_one(int tagged, const void *buf, size_t len, fi_addr_t to, uint64_t tag)
{
    char ctx;
    if (tagged)
        CHECK(fi_tsend(ep, buf, len, NULL, to, tag, &ctx));
    else
        CHECK(fi_send(ep, buf, len, NULL, to, &ctx));
    EXPECT(wait_ctx(&ctx, NULL, NULL) == 0, "send of %zu bytes failed", len);
}

/* "threads": the second thread's receive, on its own CQ */
static unsigned char rx_buf[SMALL];
static int rx_rc = -1;

static void *rx_thread(void *arg)
{
    char ctx;

    (void)arg;
    if (fi_recv(ep, rx_buf, SMALL, NULL, FI_ADDR_UNSPEC, &ctx) == 0)
        rx_rc = wait_ctx_on(rxcq, &ctx, NULL, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    struct fi_info *hints, *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fi_av_attr av_attr = { .type = FI_AV_MAP };
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
    char name[64], peer_name[64];
    size_t len = sizeof(name);
    const char *mode;
    fi_addr_t peer = FI_ADDR_NOTAVAIL, src;
    unsigned char *big, *small;
    int a;

    if (argc < 3 || (strcmp(argv[1], "a") && strcmp(argv[1], "b") && strcmp(argv[1], "c"))) {
        fprintf(stderr, "usage: fab_dyn a|b|c DIR [msg|death|forge|threads|reclaim|replay|nonet]\n");
        return 2;
    }
    role = argv[1];
    a = role[0] == 'a';
    mode = argc > 3 ? argv[3] : "msg";
    EXPECT(!getenv("CVIA_BOOT_ADDR") && !getenv("PMIX_RANK"),
           "must run without a launcher");
    hints = fi_allocinfo();
    hints->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE;
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup("corevia");
    CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
    CHECK(fi_endpoint(domain, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    if (!strcmp(mode, "threads")) {
        CHECK(fi_cq_open(domain, &cq_attr, &rxcq, NULL));
        CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT));
        CHECK(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
    } else {
        CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    }
    CHECK(fi_enable(ep));
    CHECK(fi_getname(&ep->fid, name, &len));
    EXPECT(len <= 64, "name of %zu bytes (Open MPI takes 64 at most)", len);
    if (role[0] == 'c') {   /* reclaim: after a's death, b's name */
        char path[512];
        snprintf(path, sizeof(path), "%s/ready", argv[2]);
        for (int i = 0; i < 2000 && access(path, R_OK); i++)
            usleep(10000);
        EXPECT(!access(path, R_OK), "b never saw a die");
    }
    swap_names(argv[2], name, len, peer_name, sizeof(peer_name));
    EXPECT((big = malloc(BIG)) && (small = malloc(SMALL)), "out of memory");

    if (!strcmp(mode, "threads")) {
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, rx_thread, NULL) == 0, "pthread_create");
        EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert refused");
        fill(small, SMALL, a ? 51 : 52);
        send_one(0, small, SMALL, peer, 0);
        pthread_join(t, NULL);
        EXPECT(rx_rc == 0, "the second thread's receive failed (%d)", rx_rc);
        check(rx_buf, SMALL, a ? 52 : 51, "threads");
        printf("ok threads\n");
        goto done;
    }

    if (!strcmp(mode, "reclaim")) {
        char ctx;
        if (role[0] != 'b') {   /* a, then c: connect to b, one message */
            EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert refused");
            fill(small, SMALL, role[0] == 'a' ? 61 : 62);
            send_one(0, small, SMALL, peer, 0);
            if (role[0] == 'a') {
                fflush(stdout);
                raise(SIGKILL);
            }
            printf("ok reclaim c\n");
            goto done;
        }
        CHECK(fi_recv(ep, small, SMALL, NULL, FI_ADDR_UNSPEC, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, NULL) == 0, "a's message");
        check(small, SMALL, 61, "a's message");
        EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert of a refused");
        CHECK(fi_recv(ep, small, SMALL, NULL, peer, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, NULL) != 0, "a receive from dead a completed");
        char path[512];
        FILE *f;
        snprintf(path, sizeof(path), "%s/ready", argv[2]);
        EXPECT((f = fopen(path, "w")) && !fclose(f), "cannot write %s", path);
        CHECK(fi_recv(ep, small, SMALL, NULL, FI_ADDR_UNSPEC, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, NULL) == 0, "c's message (on a's ring)");
        check(small, SMALL, 62, "c's message");
        printf("ok reclaim\n");
        goto done;
    }

    if (!strcmp(mode, "replay")) {
        char ctx, path[512];
        FILE *f;
        if (role[0] != 'b') {   /* a, then c: connect to b, one message */
            EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert refused");
            fill(small, SMALL, role[0] == 'a' ? 71 : 72);
            send_one(0, small, SMALL, peer, 0);
            /* a: until b has inserted it; c: until b is done with the replay */
            CHECK(fi_recv(ep, small, SMALL, NULL, peer, &ctx));
            EXPECT(wait_ctx(&ctx, NULL, NULL) == 0, "b's answer");
            check(small, SMALL, role[0] == 'a' ? 70 : 73, "b's answer");
            printf("ok replay %c\n", role[0]);
            goto done;
        }
        CHECK(fi_recv(ep, small, SMALL, NULL, FI_ADDR_UNSPEC, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, NULL) == 0, "a's message");
        check(small, SMALL, 71, "a's message");
        EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert of a refused");
        fill(small, SMALL, 70);
        send_one(0, small, SMALL, peer, 0);
        CHECK(fi_recv(ep, small, SMALL, NULL, peer, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, NULL) != 0, "a receive from closed a completed");
        snprintf(path, sizeof(path), "%s/ready", argv[2]);
        EXPECT((f = fopen(path, "w")) && !fclose(f), "cannot write %s", path);
        CHECK(fi_recv(ep, small, SMALL, NULL, FI_ADDR_UNSPEC, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, NULL) == 0, "c's message");
        check(small, SMALL, 72, "c's message");
        snprintf(path, sizeof(path), "%s/c.name", argv[2]);
        EXPECT((f = fopen(path, "r")) && fread(peer_name, 1, len, f) == len && !fclose(f),
               "cannot read %s", path);
        EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert of c refused");
        snprintf(path, sizeof(path), "%s/ready2", argv[2]);
        EXPECT((f = fopen(path, "w")) && !fclose(f), "cannot write %s", path);
        snprintf(path, sizeof(path), "%s/replayed", argv[2]);
        for (int i = 0; i < 2000 && access(path, R_OK); i++) {
            (void)fi_cq_read(cq, NULL, 0);   /* progress: the replay is taken meanwhile */
            usleep(10000);
        }
        EXPECT(!access(path, R_OK), "the script never replayed");
        CHECK(fi_recv(ep, small, SMALL, NULL, FI_ADDR_UNSPEC, &ctx));
        for (double end = now() + 0.5; now() < end; usleep(1000)) {
            struct fi_cq_tagged_entry e;
            ssize_t n = fi_cq_read(cq, &e, 1);
            EXPECT(n == -FI_EAGAIN, "something arrived after the replay (%zd)", n);
        }
        CHECK(fi_cancel(&ep->fid, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, NULL) == FI_ECANCELED, "the cancel");
        fill(small, SMALL, 73);
        send_one(0, small, SMALL, peer, 0);
        printf("ok replay\n");
        goto done;
    }

    if (!strcmp(mode, "nonet")) {
        double t0 = now();
        EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 0 && peer == FI_ADDR_NOTAVAIL,
               "another host's name was inserted with CVIA_NET=tcp");
        EXPECT(now() - t0 < 2, "the refusal took %.1f s", now() - t0);
        printf("ok nonet\n");
        goto done;
    }

    if (!strcmp(mode, "forge")) {
        if (a) {
            char forged[64];
            memcpy(forged, peer_name, len);
            forged[12 + 39] ^= 0x5a;   /* 12-byte header, then the address: its
                                        * last byte is the nonce's (shm_dyn_addr) */
            EXPECT(fi_av_insert(av, forged, 1, &peer, 0, NULL) == 0 && peer == FI_ADDR_NOTAVAIL,
                   "a name with a changed nonce was inserted");
            EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "true name refused");
            fill(small, SMALL, 1);
            send_one(1, small, SMALL, peer, 7);
            printf("ok forge\n");
        } else {
            char ctx;
            CHECK(fi_trecv(ep, small, SMALL, NULL, FI_ADDR_UNSPEC, 7, 0, &ctx));
            EXPECT(wait_ctx(&ctx, NULL, NULL) == 0, "receive failed");
            check(small, SMALL, 1, "forge");
        }
        goto done;
    }

    if (a) {
        EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert refused");
        fill(small, SMALL, 1);
        send_one(0, small, SMALL, peer, 0);        /* b has not inserted us */
    } else {
        char ctx;
        CHECK(fi_recv(ep, small, SMALL, NULL, FI_ADDR_UNSPEC, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, &src) == 0, "first receive failed");
        check(small, SMALL, 1, "first message");
        EXPECT(src == FI_ADDR_NOTAVAIL, "source of a peer not inserted is %llu, "
               "not FI_ADDR_NOTAVAIL", (unsigned long long)src);
        EXPECT(fi_av_insert(av, peer_name, 1, &peer, 0, NULL) == 1, "insert refused");
        fill(small, SMALL, 2);
        send_one(0, small, SMALL, peer, 0);
    }
    {   /* fi_av_lookup gives the name back as it was inserted */
        char back[64];
        size_t blen = sizeof(back);
        CHECK(fi_av_lookup(av, peer, back, &blen));
        EXPECT(blen == len && !memcmp(back, peer_name, len), "fi_av_lookup: another name "
               "(%zu bytes) than the one inserted", blen);
    }
    if (a) {
        char ctx;
        CHECK(fi_recv(ep, small, SMALL, NULL, peer, &ctx));
        EXPECT(wait_ctx(&ctx, NULL, &src) == 0, "reply failed");
        check(small, SMALL, 2, "reply");
        EXPECT(src == peer, "source of the reply is %llu, not %llu",
               (unsigned long long)src, (unsigned long long)peer);
    }

    if (!strcmp(mode, "death")) {
        if (a) {
            /* progress a while first: our acknowledgements out, so that b
             * owes nothing unacknowledged and only its liveness checks
             * (shm: the pidfd; across hosts: probes) can find the death */
            for (double end = now() + 0.1; now() < end;) {
                struct fi_cq_tagged_entry ent;
                (void)fi_cq_read(cq, &ent, 1);
            }
            fflush(stdout);
            raise(SIGKILL);
        }
        char ctx;
        CHECK(fi_trecv(ep, big, BIG, NULL, peer, 99, 0, &ctx));
        int err = wait_ctx(&ctx, NULL, NULL);
        EXPECT(err != 0, "a receive from a dead peer completed");
        printf("ok death (%s)\n", fi_strerror(err));
        goto done;
    }

    /* each way: untagged and tagged, eager and rendezvous; tagged ones
     * received in the opposite order of their sending */
    for (int turn = 0; turn < 2; turn++) {
        int sender = turn == 0 ? a : !a;
        if (sender) {
            fill(small, SMALL, 10 + turn);
            send_one(0, small, SMALL, peer, 0);
            fill(big, BIG, 20 + turn);
            send_one(0, big, BIG, peer, 0);
            fill(big, BIG, 30 + turn);
            send_one(1, big, BIG, peer, 5);   /* rendezvous: waits for its receive */
            fill(small, SMALL, 40 + turn);
            send_one(1, small, SMALL, peer, 6);
        } else {
            char c1, c2, c3, c4;
            unsigned char *big2 = malloc(BIG), *small2 = malloc(SMALL);
            struct fi_cq_tagged_entry e;
            EXPECT(big2 && small2, "out of memory");
            CHECK(fi_recv(ep, small, SMALL, NULL, peer, &c1));
            EXPECT(wait_ctx(&c1, &e, &src) == 0 && e.len == SMALL, "untagged eager");
            check(small, SMALL, 10 + turn, "untagged eager");
            CHECK(fi_recv(ep, big, BIG, NULL, peer, &c2));
            EXPECT(wait_ctx(&c2, &e, &src) == 0 && e.len == BIG, "untagged rendezvous");
            check(big, BIG, 20 + turn, "untagged rendezvous");
            /* tag 6 first: the eager one after the rendezvous must wait */
            CHECK(fi_trecv(ep, small2, SMALL, NULL, peer, 6, 0, &c4));
            CHECK(fi_trecv(ep, big2, BIG, NULL, peer, 5, 0, &c3));
            EXPECT(wait_ctx(&c3, &e, &src) == 0 && e.len == BIG && e.tag == 5,
                   "tagged rendezvous");
            check(big2, BIG, 30 + turn, "tagged rendezvous");
            EXPECT(src == peer, "tagged source");
            EXPECT(wait_ctx(&c4, &e, &src) == 0 && e.len == SMALL && e.tag == 6,
                   "tagged eager");
            check(small2, SMALL, 40 + turn, "tagged eager");
            free(big2);
            free(small2);
        }
    }
    printf("ok %s\n", role);
done:
    fflush(stdout);
    CHECK(fi_close(&ep->fid));
    CHECK(fi_close(&cq->fid));
    if (rxcq)
        CHECK(fi_close(&rxcq->fid));
    CHECK(fi_close(&av->fid));
    CHECK(fi_close(&domain->fid));
    CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
    free(big);
    free(small);
    return 0;
}
