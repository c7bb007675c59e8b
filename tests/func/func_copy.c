/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Functional tests of single-copy transfers and one-sided operations, run
 * through cvia-run by run.sh: func_copy CASE [--token=X]. The copy path is
 * chosen by the environment (CVIA_SHM_CMA, CVIA_SHM_COPY, ...), so each
 * case runs once per path; `paths` prints which path it measured. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "thread_level.h"
#include "pattern.h"

static int rank, size;

#define FAIL(...) do { fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK_RC(call) do { int rc_ = (call); if (rc_) \
        FAIL("%s -> %s (%s)", #call, cvia_err_name(rc_), cvia_strerror(rc_)); } while (0)

static uint64_t seed_of(int src, size_t len, unsigned seq)
{
    uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)src << 48) ^ ((uint64_t)len * 0x100000001b3ull) ^ seq;
    return s ? s : 1;
}

static int use_arena(void)
{
    const char *a = getenv("FUNC_ARENA");
    return a && *a == '1';
}

/* Buffers from the arena when FUNC_ARENA=1, else from mmap; +64 guard. */
static unsigned char *buf_alloc(size_t len)
{
    void *p;
    if (use_arena()) {
        CHECK_RC(cvia_mem_alloc(len + 4096 + 64, NULL, &p));
    } else {
        p = mmap(NULL, len + 4096 + 64, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            FAIL("mmap %zu", len);
    }
    return p;
}

static void buf_free(unsigned char *p, size_t len)
{
    if (use_arena())
        cvia_mem_free(p);
    else
        munmap(p, len + 4096 + 64);
}

/* FUNC_EXPECT=cma|near|ring: which mechanism must have carried the large
 * transfers with @peer, as the provider counts them. Keeps a forced path
 * from silently falling back to another. */
static void expect_path(int peer)
{
    const char *want = getenv("FUNC_EXPECT");
    unsigned long long cma = 0, near = 0;
    char info[512], *p;

    if (!want || size < 2)
        return;
    CHECK_RC(cvia_peer_info(peer, info, sizeof(info)));
    if ((p = strstr(info, "so far: ")))
        sscanf(p, "so far: %llu B by CMA, %llu B by load/store", &cma, &near);
    if ((!strcmp(want, "cma") && (!cma || near)) ||
        (!strcmp(want, "near") && (!near || cma)) ||
        (!strcmp(want, "ring") && (cma || near)))
        FAIL("expected the %s path, but: %s", want, info);
}

/* Every size 0 B .. 64 MiB on the path the environment selects, at
 * aligned and misaligned offsets, buffers spanning page boundaries. */
static void case_paths(void)
{
    static const size_t sizes[] = {
        0, 1, 8, 4095, 4096, 4097, 16383, 32767, 32768, 32769, 65536, 100003,
        262144, 1 << 20, (1 << 20) + 13, 4 << 20, 16 << 20, 64 << 20,
    };
    static const size_t offs[] = { 0, 1, 7, 4093 };
    const size_t max = 64u << 20;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *s = buf_alloc(max), *r = buf_alloc(max);
    unsigned seq = 0;
    char info[256];

    CHECK_RC(cvia_peer_info(to, info, sizeof(info)));
    if (rank == 0)
        printf("path: %s%s\n", info, use_arena() ? " (buffers from cvia_mem_alloc)" : "");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++, seq++) {
            size_t len = sizes[i], so = offs[o], ro = offs[(o + 1) % 4], bad;
            cvia_req_t rr, sr;
            cvia_status_t st;
            if (len > (16u << 20) && o)
                continue;   /* the biggest sizes once, aligned */
            fill(s + so, len, seed_of(rank, len, seq));
            memset(r + ro + len, 0xA5, 64);
            CHECK_RC(cvia_irecv(r + ro, len, from, 3, &rr));
            CHECK_RC(cvia_isend(s + so, len, to, 3, &sr));
            CHECK_RC(cvia_wait(&rr, &st));
            CHECK_RC(cvia_wait(&sr, NULL));
            if (st.len != len)
                FAIL("size %zu: len %zu", len, st.len);
            if ((bad = verify(r + ro, len, seed_of(from, len, seq))) != (size_t)-1)
                FAIL("size %zu offsets %zu/%zu: byte %zu differs", len, so, ro, bad);
            for (int g = 0; g < 64; g++)
                if (r[ro + len + g] != 0xA5)
                    FAIL("size %zu: write past the buffer", len);
        }
    }
    /* truncation on the single-copy path, posted and unexpected */
    for (int unexpected = 0; unexpected < 2; unexpected++) {
        size_t len = 1 << 20, cap = 100000;
        cvia_req_t rr, sr;
        cvia_status_t st;
        fill(s, len, seed_of(rank, len, 777));
        memset(r + cap, 0xA5, 64);
        if (!unexpected)
            CHECK_RC(cvia_irecv(r, cap, from, 4, &rr));
        CHECK_RC(cvia_isend(s, len, to, 4, &sr));
        if (unexpected) {
            for (int k = 0; k < 100; k++)
                cvia_progress();
            CHECK_RC(cvia_irecv(r, cap, from, 4, &rr));
        }
        int rc = cvia_wait(&rr, &st);
        CHECK_RC(cvia_wait(&sr, NULL));
        if (rc != -CVIA_ETRUNC || st.len != cap || st.msg_len != len)
            FAIL("truncation: %s len %zu msg_len %zu", cvia_err_name(rc), st.len, st.msg_len);
        if (verify(r, cap, seed_of(from, len, 777)) != (size_t)-1)
            FAIL("truncated bytes differ");
        for (int g = 0; g < 64; g++)
            if (r[cap + g] != 0xA5)
                FAIL("truncation wrote past the buffer");
    }
    CHECK_RC(cvia_barrier());
    expect_path(to);
    buf_free(s, max);
    buf_free(r, max);
}

/* A bad address is an error on the request, never a crash (rendezvous
 * sizes: the copy is a system call that can say EFAULT). */
static void case_efault(void)
{
    const size_t len = 1 << 20;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *good = buf_alloc(len);
    /* a hole: two pages mapped, the second unmapped */
    unsigned char *holey = mmap(NULL, len, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(holey + 4096, len - 4096);
    cvia_req_t rr, sr;

    memset(good, 1, len);
    /* bad receive buffer */
    CHECK_RC(cvia_irecv(holey, len, from, 9, &rr));
    CHECK_RC(cvia_isend(good, len, to, 9, &sr));
    int rrc = cvia_wait(&rr, NULL), src = cvia_wait(&sr, NULL);
    if (rrc != -EFAULT)
        FAIL("receive into a hole: %s, expected EFAULT", cvia_err_name(rrc));
    if (src != 0 && src != -EFAULT)
        FAIL("send to a bad receive buffer: %s", cvia_err_name(src));
    CHECK_RC(cvia_barrier());
    /* bad send buffer */
    CHECK_RC(cvia_irecv(good, len, from, 10, &rr));
    CHECK_RC(cvia_isend(holey, len, to, 10, &sr));
    rrc = cvia_wait(&rr, NULL);
    src = cvia_wait(&sr, NULL);
    if (rrc != -EFAULT)
        FAIL("receive from a bad send buffer: %s, expected EFAULT", cvia_err_name(rrc));
    if (src != 0 && src != -EFAULT)
        FAIL("send from a hole: %s", cvia_err_name(src));
    CHECK_RC(cvia_barrier());
    printf("rank %d: bad addresses gave EFAULT\n", rank);
    buf_free(good, len);
}

/* Several threads per rank send and receive at once, each on its own tag,
 * eager and rendezvous sizes mixed. Below CVIA_THREAD_MULTIPLE the threads
 * keep the promise of CVIA_THREAD_SERIALIZED: each call under one mutex,
 * waits by cvia_test (FUNC_NO_MUTEX=1 breaks the promise on purpose). */
#define NTHREADS 4
static pthread_mutex_t ser = PTHREAD_MUTEX_INITIALIZER;
static int serialize;

#define SER(call) ({ int ser_rc_;                                   \
        if (serialize) pthread_mutex_lock(&ser);                \
        ser_rc_ = (call);                                           \
        if (serialize) pthread_mutex_unlock(&ser);              \
        ser_rc_; })

static int ser_wait(cvia_req_t *req, cvia_status_t *st)
{
    int done = 0, rc;

    if (!serialize && cvia_query_thread() == CVIA_THREAD_MULTIPLE)
        return cvia_wait(req, st);
    while (!(rc = SER(cvia_test(req, &done, st))) && !done)
        sched_yield();
    return rc;
}

static void *thread_body(void *arg)
{
    int t = (int)(intptr_t)arg, to = (rank + 1) % size, from = (rank - 1 + size) % size;
    static const size_t sizes[] = { 1, 100, 5000, 40000, 300000, 70 };
    size_t max = 300000;
    unsigned char *s = malloc(max), *r = malloc(max);

    for (unsigned it = 0; it < 60; it++) {
        size_t len = sizes[(it + (unsigned)t) % 6];
        cvia_req_t rr, sr;
        cvia_status_t st;
        fill(s, len, seed_of(rank * 16 + t, len, it));
        CHECK_RC(SER(cvia_irecv(r, max, from, 100 + t, &rr)));
        CHECK_RC(SER(cvia_isend(s, len, to, 100 + t, &sr)));
        CHECK_RC(ser_wait(&sr, NULL));
        CHECK_RC(ser_wait(&rr, &st));
        if (st.len != len || verify(r, len, seed_of(from * 16 + t, len, it)) != (size_t)-1)
            FAIL("thread %d iteration %u: %zu bytes corrupted", t, it, len);
    }
    free(s);
    free(r);
    return NULL;
}

static void case_threads(void)
{
    pthread_t th[NTHREADS];

    serialize = cvia_query_thread() < CVIA_THREAD_MULTIPLE && !getenv("FUNC_NO_MUTEX");
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, thread_body, (void *)(intptr_t)t);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    CHECK_RC(cvia_barrier());
}

/* One-sided: each rank registers a region and sends its descriptor to the
 * previous rank, which writes into it (with and without immediate data),
 * reads it back, and is refused outside it and after deregistration. */
static void case_rma(void)
{
    const size_t len = 8u << 20;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *region = buf_alloc(len), *local = buf_alloc(len);
    cvia_mr_t mr;
    cvia_mr_desc_t mine, theirs;
    cvia_req_t q;
    static const size_t wl[] = { 1, 64, 4096, 100000, 1 << 20, 3 << 20 };

    memset(region, 0, len);
    CHECK_RC(cvia_mr_reg(region, len, CVIA_MR_REMOTE_READ | CVIA_MR_REMOTE_WRITE, &mr));
    CHECK_RC(cvia_mr_desc(mr, &mine));
    /* my region is written by the rank before me */
    CHECK_RC(cvia_send(&mine, sizeof(mine), from, 50));
    CHECK_RC(cvia_recv(&theirs, sizeof(theirs), to, 50, NULL));
    if (theirs.rank != to)
        FAIL("descriptor of rank %d names rank %d", to, theirs.rank);

    uint64_t off = 0;
    for (unsigned i = 0; i < sizeof(wl) / sizeof(wl[0]); i++) {
        fill(local, wl[i], seed_of(rank, wl[i], 100 + i));
        CHECK_RC(cvia_write(local, wl[i], &theirs, off + i, CVIA_WRITE_IMM, 1000 + i, &q));
        CHECK_RC(cvia_wait(&q, NULL));
        off += wl[i] + 4096;
    }
    /* the writes to me: one event each, in order, with the data in place */
    off = 0;
    for (unsigned i = 0; i < sizeof(wl) / sizeof(wl[0]); i++) {
        cvia_imm_event_t ev;
        size_t bad;
        CHECK_RC(cvia_imm_wait(&ev));
        if (ev.source != from || ev.imm != 1000 + i || ev.len != wl[i] ||
            ev.off != off + i || ev.key != mine.key)
            FAIL("event %u: source %d imm %llu len %llu off %llu", i, ev.source,
                 (unsigned long long)ev.imm, (unsigned long long)ev.len,
                 (unsigned long long)ev.off);
        if ((bad = verify(region + off + i, wl[i], seed_of(from, wl[i], 100 + i))) != (size_t)-1)
            FAIL("write %u (%zu B) differs at %zu", i, wl[i], bad);
        off += wl[i] + 4096;
    }
    CHECK_RC(cvia_barrier());
    /* read back what I wrote into the next rank */
    off = 0;
    for (unsigned i = 0; i < sizeof(wl) / sizeof(wl[0]); i++) {
        size_t bad;
        memset(local, 0, wl[i]);
        CHECK_RC(cvia_read(local, wl[i], &theirs, off + i, &q));
        CHECK_RC(cvia_wait(&q, NULL));
        if ((bad = verify(local, wl[i], seed_of(rank, wl[i], 100 + i))) != (size_t)-1)
            FAIL("read %u differs at %zu", i, bad);
        off += wl[i] + 4096;
    }
    /* a plain write, seen after a message */
    memset(local, 0x5a, 4096);
    CHECK_RC(cvia_write(local, 4096, &theirs, len - 4096, 0, 0, &q));
    CHECK_RC(cvia_wait(&q, NULL));
    CHECK_RC(cvia_send(NULL, 0, to, 51));
    CHECK_RC(cvia_recv(NULL, 0, from, 51, NULL));
    for (int k = 0; k < 4096; k++)
        if (region[len - 4096 + k] != 0x5a)
            FAIL("plain write not visible after a later message");
    /* refused: out of bounds, forged key */
    int rc = cvia_write(local, 2, &theirs, len - 1, 0, 0, &q);
    if (rc != -EACCES)
        FAIL("write past the region: %s", cvia_err_name(rc));
    cvia_mr_desc_t forged = theirs;
    forged.key ^= 0x100000000ull;
    rc = cvia_write(local, 8, &forged, 0, 0, 0, &q);
    if (rc == 0)
        rc = cvia_wait(&q, NULL);
    if (rc != -EACCES)
        FAIL("write with a forged key: %s", cvia_err_name(rc));
    forged = theirs;
    forged.len = len * 2;   /* a descriptor that lies about the size */
    rc = cvia_write(local, 8, &forged, len + 8, 0, 0, &q);
    if (rc == 0)
        rc = cvia_wait(&q, NULL);
    if (rc != -EACCES)
        FAIL("write beyond the real region with a lying descriptor: %s", cvia_err_name(rc));
    CHECK_RC(cvia_barrier());
    /* withdrawn: later accesses are refused */
    expect_path(to);
    CHECK_RC(cvia_mr_dereg(mr));
    CHECK_RC(cvia_barrier());
    rc = cvia_write(local, 8, &theirs, 0, 0, 0, &q);
    if (rc == 0)
        rc = cvia_wait(&q, NULL);
    if (rc != -EACCES)
        FAIL("write to a withdrawn region: %s", cvia_err_name(rc));
    rc = cvia_read(local, 8, &theirs, 0, &q);
    if (rc == 0)
        rc = cvia_wait(&q, NULL);
    if (rc != -EACCES)
        FAIL("read of a withdrawn region: %s", cvia_err_name(rc));
    CHECK_RC(cvia_barrier());
    buf_free(region, len);
    buf_free(local, len);
}

/* The last rank dies while a rendezvous it started is in flight: with
 * CVIA_SHM_COPY=write the receiver waits for the sender's pushes, which
 * never come. Survivors post their receives first and tell the victim. */
/* Wait for @req by cvia_test alone: every look is the wait loop's poll
 * (shm_progress), never the test before a sleep (shm_busy). */
static int poll_wait(cvia_req_t *req)
{
    int done = 0, rc;

    while (!(rc = cvia_test(req, &done, NULL)) && !done)
        ;
    return rc;
}

static int polling;   /* case_death by poll_wait (poll-death) */

static int case_death(void)
{
    const size_t big = 64u << 20;
    int victim = size - 1;
    cvia_req_t rr;
    int rc;

    CHECK_RC(cvia_barrier());
    if (rank == victim) {
        unsigned char *s = calloc(1, big);
        cvia_req_t sr;
        for (int p = 0; p < size - 1; p++)
            CHECK_RC(cvia_recv(NULL, 0, CVIA_ANY_SOURCE, 77, NULL));
        CHECK_RC(cvia_isend(s, big, 0, 5, &sr));
        raise(SIGKILL);
    }
    /* FUNC_ARENA=1: the sender would have pushed by stores into my arena */
    unsigned char *r = rank == 0 ? buf_alloc(big) : NULL;
    rc = rank == 0 ? cvia_irecv(r, big, victim, 5, &rr) : cvia_irecv(NULL, 0, victim, 6, &rr);
    if (rc)
        FAIL("posting the receive: %s", cvia_err_name(rc));
    CHECK_RC(cvia_send(NULL, 0, victim, 77));
    rc = polling ? poll_wait(&rr) : cvia_wait(&rr, NULL);
    if (rc == 0)
        FAIL("a transfer with a dead rank completed");
    printf("rank %d: expected-error %s\n", rank, cvia_err_name(rc));
    fflush(stdout);
    return 3;
}

/* Rare work seen by the empty poll (branch lat14: shm_work looks at one
 * word per ring and one per kind of rare event): rank 0 takes from every
 * other rank a rendezvous (CVIA_SHM_COPY=write: it completes only when the
 * receiver's progress sees the sender's pushes, no ring slot announcing
 * them) and then an 8-byte message, waiting for each by cvia_test alone,
 * rounds over, payloads checked. */
static void case_poll_rare(void)
{
    const size_t big = 1u << 20;
    unsigned char *b = buf_alloc(big);

    for (unsigned round = 0; round < 20; round++) {
        CHECK_RC(cvia_barrier());
        for (int p = 1; p < size; p++) {
            cvia_req_t req;
            uint64_t w = 0;
            if (rank == 0) {
                memset(b, 0, big);
                CHECK_RC(cvia_irecv(b, big, p, 30, &req));
                CHECK_RC(poll_wait(&req));
                if (verify(b, big, seed_of(p, big, round)) != (size_t)-1)
                    FAIL("rendezvous %u from %d: payload differs", round, p);
                CHECK_RC(cvia_irecv(&w, sizeof(w), p, 31, &req));
                CHECK_RC(poll_wait(&req));
                if (w != seed_of(p, 8, round))
                    FAIL("8 B message %u from %d: payload differs", round, p);
            } else if (rank == p) {
                fill(b, big, seed_of(p, big, round));
                CHECK_RC(cvia_isend(b, big, 0, 30, &req));
                CHECK_RC(poll_wait(&req));
                w = seed_of(p, 8, round);
                CHECK_RC(cvia_send(&w, sizeof(w), 0, 31));
            }
        }
    }
    buf_free(b, big);
}

/* The last rank dies while the others wait for an immediate event: the
 * wait ends with CVIA_ENOPEER, the cause, even once the launcher tears the
 * job down behind it (which used to turn it into CVIA_EABORT). */
static int case_imm_death(void)
{
    cvia_imm_event_t ev;
    int rc;

    CHECK_RC(cvia_barrier());
    /* the victim dies only once every other rank has left the barrier (a
     * rank still in it when the launcher tears the job down gets
     * CVIA_EABORT there, which is not what this case tests) */
    if (rank == size - 1) {
        for (int p = 0; p < size - 1; p++)
            CHECK_RC(cvia_recv(NULL, 0, CVIA_ANY_SOURCE, 78, NULL));
        raise(SIGKILL);
    }
    CHECK_RC(cvia_send(NULL, 0, size - 1, 78));
    rc = cvia_imm_wait(&ev);
    if (rc != -CVIA_ENOPEER)
        FAIL("cvia_imm_wait with a dead peer: %s, expected CVIA_ENOPEER", cvia_err_name(rc));
    printf("rank %d: expected-error %s\n", rank, cvia_err_name(rc));
    fflush(stdout);
    return 3;
}

/* cvia_imm_block(): a thread asleep in it wakes for a kick from another
 * thread of its rank and for a peer's write with immediate data. Run with
 * CVIA_LIVENESS_INTERVAL=10s: a lost wake-up then sleeps 10 s a round, and
 * the rounds add up to the test's time limit. */
#define BLOCK_ROUNDS 100
static _Atomic int blk_done, blk_kick, blk_seen;

static void *blk_sleeper(void *arg)
{
    cvia_imm_event_t ev[8];
    int got = 0, seen = 0;

    (void)arg;
    while (!atomic_load(&blk_done)) {
        uint32_t k = cvia_imm_kicks();
        int n = cvia_imm_poll(ev, 8), rc;
        if (n < 0)
            FAIL("cvia_imm_poll: %s", cvia_err_name(n));
        for (int i = 0; i < n; i++) {
            char one = 1;
            if (ev[i].source != 1 || ev[i].imm != (uint64_t)++got)
                FAIL("immediate %llu from rank %d, expected %d from rank 1",
                     (unsigned long long)ev[i].imm, ev[i].source, got);
            CHECK_RC(cvia_send(&one, 1, 1, 61));
        }
        if (atomic_load(&blk_kick) != seen) {
            seen = atomic_load(&blk_kick);
            atomic_store(&blk_seen, seen);
            continue;
        }
        if (n)
            continue;
        rc = cvia_imm_block(k, 0);
        if (rc < 0)
            FAIL("cvia_imm_block: %s", cvia_err_name(rc));
    }
    if (got != (size > 1 ? BLOCK_ROUNDS : 0))
        FAIL("%d immediate events, expected %d", got, size > 1 ? BLOCK_ROUNDS : 0);
    return NULL;
}

static void case_imm_block(void)
{
    static uint64_t word;
    cvia_mr_t mr;
    cvia_mr_desc_t mine, theirs;

    CHECK_RC(cvia_mr_reg(&word, sizeof(word), CVIA_MR_REMOTE_WRITE, &mr));
    CHECK_RC(cvia_mr_desc(mr, &mine));
    if (rank == 0 && size > 1)
        CHECK_RC(cvia_send(&mine, sizeof(mine), 1, 60));
    if (rank == 1)
        CHECK_RC(cvia_recv(&theirs, sizeof(theirs), 0, 60, NULL));
    if (rank == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, blk_sleeper, NULL))
            FAIL("pthread_create");
        for (int i = 1; i <= BLOCK_ROUNDS; i++) {
            long spins = 0;
            atomic_store(&blk_kick, i);
            cvia_imm_kick();
            while (atomic_load(&blk_seen) != i)
                if (++spins > 2000000000L)
                    FAIL("kick %d never seen", i);
                else if (!(spins & 63))
                    sched_yield();
        }
        CHECK_RC(cvia_barrier());   /* rank 1 writes now */
        CHECK_RC(cvia_barrier());   /* and is done */
        atomic_store(&blk_done, 1);
        cvia_imm_kick();
        pthread_join(t, NULL);
    } else {
        CHECK_RC(cvia_barrier());
        for (int i = 1; rank == 1 && i <= BLOCK_ROUNDS; i++) {
            uint64_t v = (uint64_t)i;
            char ack;
            cvia_req_t req;
            CHECK_RC(cvia_write(&v, sizeof(v), &theirs, 0, CVIA_WRITE_IMM, v, &req));
            CHECK_RC(cvia_wait(&req, NULL));
            CHECK_RC(cvia_recv(&ack, 1, 0, 61, NULL));
        }
        CHECK_RC(cvia_barrier());
    }
    CHECK_RC(cvia_barrier());
    CHECK_RC(cvia_mr_dereg(mr));
    if (rank == 0)
        printf("imm-block: %d kicks and %d writes woke the sleeper\n", BLOCK_ROUNDS,
               size > 1 ? BLOCK_ROUNDS : 0);
}

int main(int argc, char **argv)
{
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: func_copy CASE\n");
        return 2;
    }
    if (!strcmp(argv[1], "fallback")) {
        /* make CMA to us impossible (a non-dumpable process may only be
         * reached by a tracer with CAP_SYS_PTRACE; run.sh drops it) */
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    if ((rc = func_init(&argc, &argv))) {
        fprintf(stderr, "func_copy: cvia_init: %s\n", cvia_strerror(rc));
        return 1;
    }
    rank = cvia_rank();
    size = cvia_size();
    if (!strcmp(argv[1], "fallback")) {
        char info[256];
        CHECK_RC(cvia_peer_info((rank + 1) % size, info, sizeof(info)));
        if (size > 1 && !strstr(info, "two-copy rings for every size"))
            FAIL("CMA should be refused here, yet: %s", info);
    }
    if (!strcmp(argv[1], "paths") || !strcmp(argv[1], "fallback"))
        case_paths();
    else if (!strcmp(argv[1], "efault"))  case_efault();
    else if (!strcmp(argv[1], "threads")) case_threads();
    else if (!strcmp(argv[1], "rma"))     case_rma();
    else if (!strcmp(argv[1], "imm-block")) case_imm_block();
    else if (!strcmp(argv[1], "death"))   return case_death();
    else if (!strcmp(argv[1], "poll-death")) return polling = 1, case_death();
    else if (!strcmp(argv[1], "poll-rare")) case_poll_rare();
    else if (!strcmp(argv[1], "imm-death")) return case_imm_death();
    else {
        fprintf(stderr, "func_copy: unknown case %s\n", argv[1]);
        return 2;
    }
    if ((rc = cvia_finalize()))
        FAIL("cvia_finalize: %s", cvia_strerror(rc));
    if (rank == 0)
        printf("ok %s (%d ranks)\n", argv[1], size);
    return 0;
}
