/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Threaded stress (issue 16, item 1): at CVIA_THREAD_MULTIPLE, several
 * threads per rank run a random but reproducible mix of operations with
 * both neighbours in a ring, every payload checked:
 *
 *   exchange  a directed message to the right, one from the left, of a
 *             size from 0 B to 300 kB (eager and rendezvous)
 *   wildcard  a message to each neighbour; two CVIA_ANY_SOURCE receives
 *             take them, whichever comes first (the tag alternates from one
 *             wildcard step to the next: a neighbour cannot finish a step
 *             without my message of that step, so it is at most one step
 *             ahead, on the other tag)
 *   cancel    a receive nothing will match is withdrawn; a receive the
 *             left neighbour's message will match is withdrawn too, racing
 *             the arrival: either it is withdrawn (and a new receive takes
 *             the message) or it has matched (-EBUSY) and completes
 *   write     (thread 0) a one-sided write with immediate data into the
 *             right neighbour's region; the immediate event from the left
 *             is checked against the bytes it announces, then acknowledged
 *
 * Mode "blocking" (func_stress blocking) runs only blocking exchanges
 * instead, beside a thread that only progresses (op_blocking).
 *
 * The mix is drawn from (thread, iteration) alone, so the threads of every
 * rank draw the same operation at the same step. FUNC_STRESS_ITERS (150)
 * and FUNC_STRESS_THREADS (4) size the run; FUNC_ARENA=1 takes buffers
 * from cvia_mem_alloc. scripts/stress.sh repeats it for the 200-run
 * figure. The library has no probe call: probing is the libfabric
 * provider's (its tests under Open MPI cover MPI_Probe and MPI_Improbe). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <corevia/corevia.h>
#include "pattern.h"

#define MAX_THREADS 16
#define MAX_LEN     300000
#define HDR         16            /* src, thread, iteration, length */
#define RMA_SLOT    (512u << 10)   /* > MAX_LEN */

static int rank, size, left, right, iters = 150, nthreads = 4, arena;
static unsigned char *region;     /* the left neighbour writes here */
static cvia_mr_desc_t right_desc; /* I write here */

#define FAIL(...) do { fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK_RC(call) do { int rc_ = (call); if (rc_) \
        FAIL("%s -> %s (%s)", #call, cvia_err_name(rc_), cvia_strerror(rc_)); } while (0)

enum { OP_EXCHANGE, OP_WILDCARD, OP_CANCEL, OP_WRITE, OP_N };

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t seed_of(int src, int t, int it, size_t len)
{
    uint64_t s = mix(((uint64_t)src << 40) ^ ((uint64_t)t << 32) ^ (uint64_t)it ^ (len << 20));
    return s ? s : 1;
}

static size_t len_of(int t, int it, int k)
{
    static const size_t sizes[] = { 0, 1, 16, 100, 4096, 5000, 40000, 70000, 300000 };
    return sizes[mix((uint64_t)t * 7919 + (uint64_t)it * 104729 + (uint64_t)k) % 9];
}

static unsigned char *buf_alloc(size_t len)
{
    void *p;

    if (arena) {
        CHECK_RC(cvia_mem_alloc(len, NULL, &p));
        return p;
    }
    if (!(p = malloc(len)))
        FAIL("malloc %zu", len);
    return p;
}

static void buf_free(unsigned char *p)
{
    if (arena)
        cvia_mem_free(p);
    else
        free(p);
}

/* A message with a header saying whose it is, then the pattern. */
static void make(unsigned char *b, size_t len, int t, int it)
{
    uint32_t h[4] = { (uint32_t)rank, (uint32_t)t, (uint32_t)it, (uint32_t)len };

    memcpy(b, h, HDR);
    fill(b + HDR, len - HDR, seed_of(rank, t, it, len));
}

/* The source of a good message of thread @t at step @it, or FAIL. */
static int check(const unsigned char *b, size_t got, int t, int it, int want_src)
{
    uint32_t h[4];
    size_t bad;

    if (got < HDR)
        FAIL("thread %d step %d: %zu bytes, shorter than the header", t, it, got);
    memcpy(h, b, HDR);
    if (h[1] != (uint32_t)t || h[2] != (uint32_t)it || h[3] != got ||
        (want_src >= 0 && h[0] != (uint32_t)want_src) || (int)h[0] >= size)
        FAIL("thread %d step %d: header says source %u thread %u step %u length %u, got %zu bytes",
             t, it, h[0], h[1], h[2], h[3], got);
    if ((bad = verify(b + HDR, got - HDR, seed_of((int)h[0], t, it, got))) != (size_t)-1)
        FAIL("thread %d step %d: %zu bytes from rank %u differ at byte %zu", t, it, got, h[0],
             bad + HDR);
    return (int)h[0];
}

static int tag_of(int t, int what)
{
    return 1000 + t * 16 + what;
}

static void op_exchange(int t, int it, unsigned char *s, unsigned char *r)
{
    size_t len = len_of(t, it, 0) < HDR ? HDR : len_of(t, it, 0);
    cvia_req_t rr, sr;
    cvia_status_t st;

    make(s, len, t, it);
    CHECK_RC(cvia_irecv(r, MAX_LEN, left, tag_of(t, 0), &rr));
    CHECK_RC(cvia_isend(s, len, right, tag_of(t, 0), &sr));
    CHECK_RC(cvia_wait(&sr, NULL));
    CHECK_RC(cvia_wait(&rr, &st));
    if (st.source != left || st.tag != tag_of(t, 0) || st.len != len)
        FAIL("exchange: source %d tag %d len %zu", st.source, st.tag, st.len);
    check(r, st.len, t, it, left);
}

/* @k: how many wildcard steps this thread has done before this one */
static void op_wildcard(int t, int it, int k0, unsigned char *s, unsigned char *r)
{
    size_t len = len_of(t, it, 1) < HDR ? HDR : len_of(t, it, 1);
    int tag = tag_of(t, 2 + (k0 & 1)), seen[2];
    cvia_req_t rr[2], sr[2];
    cvia_status_t st;

    make(s, len, t, it);
    for (int k = 0; k < 2; k++)
        CHECK_RC(cvia_irecv(r + (size_t)k * MAX_LEN, MAX_LEN, CVIA_ANY_SOURCE, tag, &rr[k]));
    CHECK_RC(cvia_isend(s, len, left, tag, &sr[0]));
    CHECK_RC(cvia_isend(s, len, right, tag, &sr[1]));
    for (int k = 0; k < 2; k++)
        CHECK_RC(cvia_wait(&sr[k], NULL));
    for (int k = 0; k < 2; k++) {
        CHECK_RC(cvia_wait(&rr[k], &st));
        if (st.len != len)
            FAIL("wildcard: %zu bytes from %d, sent %zu", st.len, st.source, len);
        seen[k] = check(r + (size_t)k * MAX_LEN, st.len, t, it, st.source);
    }
    if (!((seen[0] == left && seen[1] == right) || (seen[0] == right && seen[1] == left)))
        FAIL("wildcard: got ranks %d and %d, want %d and %d", seen[0], seen[1], left, right);
}

static unsigned long cancelled_races, matched_races;

static void op_cancel(int t, int it, unsigned char *s, unsigned char *r)
{
    size_t len = len_of(t, it, 2) < HDR ? HDR : len_of(t, it, 2);
    cvia_req_t never, maybe, sr;
    cvia_status_t st;
    int rc;

    CHECK_RC(cvia_irecv(r, MAX_LEN, left, tag_of(t, 5), &never));
    CHECK_RC(cvia_irecv(r + MAX_LEN, MAX_LEN, left, tag_of(t, 4), &maybe));
    make(s, len, t, it);
    CHECK_RC(cvia_isend(s, len, right, tag_of(t, 4), &sr));
    CHECK_RC(cvia_cancel(&never));
    if (never)
        FAIL("cancel of a receive nothing matches left the request set");
    rc = cvia_cancel(&maybe);
    if (rc == 0) {
        __atomic_add_fetch(&cancelled_races, 1, __ATOMIC_RELAXED);
        CHECK_RC(cvia_recv(r + MAX_LEN, MAX_LEN, left, tag_of(t, 4), &st));
    } else if (rc == -EBUSY) {
        __atomic_add_fetch(&matched_races, 1, __ATOMIC_RELAXED);
        CHECK_RC(cvia_wait(&maybe, &st));
    } else {
        FAIL("cancel: %s", cvia_strerror(rc));
    }
    CHECK_RC(cvia_wait(&sr, NULL));
    if (st.source != left || st.len != len)
        FAIL("cancel race: source %d len %zu, want %d and %zu", st.source, st.len, left, len);
    check(r + MAX_LEN, st.len, t, it, left);
}

static void op_write(int t, int it, unsigned char *s)
{
    size_t len = len_of(t, it, 3) ? len_of(t, it, 3) : 1;
    uint64_t off = (uint64_t)(it & 3) * RMA_SLOT;
    cvia_imm_event_t ev;
    cvia_req_t q;
    size_t bad;
    char ack;

    fill(s, len, seed_of(rank, t, it, len));
    CHECK_RC(cvia_write(s, len, &right_desc, off, CVIA_WRITE_IMM, (uint64_t)it, &q));
    CHECK_RC(cvia_wait(&q, NULL));
    CHECK_RC(cvia_imm_wait(&ev));
    if (ev.source != left || ev.imm != (uint64_t)it || ev.len != len || ev.off != off)
        FAIL("write step %d: event from %d imm %llu len %llu off %llu", it, ev.source,
             (unsigned long long)ev.imm, (unsigned long long)ev.len,
             (unsigned long long)ev.off);
    if ((bad = verify(region + off, len, seed_of(left, t, it, len))) != (size_t)-1)
        FAIL("write step %d: %zu bytes from rank %d differ at byte %zu", it, len, left, bad);
    /* the left neighbour may reuse the slot once I have looked */
    CHECK_RC(cvia_send(&ack, 1, left, tag_of(t, 6)));
    CHECK_RC(cvia_recv(&ack, 1, right, tag_of(t, 6), NULL));
}

/* Mode "blocking": cvia_send and cvia_recv only, whose requests live on
 * the calling thread's stack (no pool), while a further thread does
 * nothing but progress, so that a receive is often completed by a thread
 * other than its own, and must not be touched once complete. A ring of
 * blocking sends would stall on rendezvous sizes: rank 0 receives first.
 * Every other step the receive takes CVIA_ANY_SOURCE (only the left
 * neighbour sends on the tag); messages that arrive before their receive
 * take the unexpected path (whole, partly arrived, or rendezvous). */
static void op_blocking(int t, int it, unsigned char *s, unsigned char *r)
{
    size_t len = len_of(t, it, 4) < HDR ? HDR : len_of(t, it, 4);
    int from = (it & 1) ? CVIA_ANY_SOURCE : left, tag = tag_of(t, 7);
    cvia_status_t st;

    make(s, len, t, it);
    if (rank != 0)
        CHECK_RC(cvia_send(s, len, right, tag));
    memset(&st, 0xA5, sizeof(st));
    CHECK_RC(cvia_recv(r, MAX_LEN, from, tag, &st));
    if (rank == 0)
        CHECK_RC(cvia_send(s, len, right, tag));
    if (st.source != left || st.tag != tag || st.len != len || st.msg_len != len || st.error)
        FAIL("blocking step %d: source %d tag %d len %zu msg_len %zu error %d, want %d %d %zu",
             it, st.source, st.tag, st.len, st.msg_len, st.error, left, tag, len);
    check(r, st.len, t, it, left);
}

static int blocking_mode;
static int progress_stop;

static void *progress_body(void *arg)
{
    unsigned long n = 0;

    (void)arg;
    while (!__atomic_load_n(&progress_stop, __ATOMIC_ACQUIRE)) {
        int rc = cvia_progress();
        if (rc < 0)
            FAIL("cvia_progress: %s", cvia_strerror(rc));
        n++;
    }
    return (void *)(uintptr_t)n;
}

static unsigned long done_ops[OP_N];

static void *body(void *arg)
{
    int t = (int)(intptr_t)arg;
    unsigned char *s = buf_alloc(MAX_LEN), *r = buf_alloc(2 * MAX_LEN);
    int wsteps = 0;

    for (int it = 0; it < iters; it++) {
        int op = (int)(mix(((uint64_t)t << 32) | (uint64_t)it) % OP_N);

        if (blocking_mode) {
            op_blocking(t, it, s, r);
            __atomic_add_fetch(&done_ops[OP_EXCHANGE], 1, __ATOMIC_RELAXED);
            continue;
        }
        if (op == OP_WRITE && t != 0)
            op = OP_EXCHANGE;   /* immediate events are per process: one consumer */
        switch (op) {
        case OP_EXCHANGE: op_exchange(t, it, s, r); break;
        case OP_WILDCARD: op_wildcard(t, it, wsteps++, s, r); break;
        case OP_CANCEL:   op_cancel(t, it, s, r); break;
        case OP_WRITE:    op_write(t, it, s); break;
        }
        __atomic_add_fetch(&done_ops[op], 1, __ATOMIC_RELAXED);
    }
    buf_free(s);
    buf_free(r);
    return NULL;
}

static int env_int(const char *name, int dflt, int lo, int hi)
{
    const char *v = getenv(name);
    char *end;
    long x;

    if (!v)
        return dflt;
    x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        fprintf(stderr, "func_stress: %s: '%s' is not a whole number in %d..%d\n", name, v,
                lo, hi);
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS], prog;
    cvia_mr_desc_t mine;
    cvia_mr_t mr;
    int got = -1, rc;

    if (argc > 1 && !strcmp(argv[1], "blocking"))
        blocking_mode = 1;
    else if (argc > 1 && strcmp(argv[1], "stress")) {
        fprintf(stderr, "func_stress: unknown mode '%s' (stress or blocking)\n", argv[1]);
        return 2;
    }

    iters = env_int("FUNC_STRESS_ITERS", 150, 1, 1000000);
    nthreads = env_int("FUNC_STRESS_THREADS", 4, 1, MAX_THREADS);
    arena = getenv("FUNC_ARENA") && !strcmp(getenv("FUNC_ARENA"), "1");
    if ((rc = cvia_init_thread(&argc, &argv, CVIA_THREAD_MULTIPLE, &got))) {
        fprintf(stderr, "func_stress: cvia_init_thread: %s\n", cvia_strerror(rc));
        return 1;
    }
    if (got != CVIA_THREAD_MULTIPLE)
        FAIL("asked for CVIA_THREAD_MULTIPLE, got level %d", got);
    rank = cvia_rank();
    size = cvia_size();
    if (size < 2)
        FAIL("needs 2 ranks at least, has %d", size);
    left = (rank - 1 + size) % size;
    right = (rank + 1) % size;

    region = buf_alloc(4 * RMA_SLOT);
    memset(region, 0, 4 * RMA_SLOT);
    CHECK_RC(cvia_mr_reg(region, 4 * RMA_SLOT, CVIA_MR_REMOTE_WRITE, &mr));
    CHECK_RC(cvia_mr_desc(mr, &mine));
    CHECK_RC(cvia_send(&mine, sizeof(mine), left, 1));
    CHECK_RC(cvia_recv(&right_desc, sizeof(right_desc), right, 1, NULL));

    if (blocking_mode && pthread_create(&prog, NULL, progress_body, NULL))
        FAIL("pthread_create");
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, body, (void *)(intptr_t)t))
            FAIL("pthread_create");
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    if (blocking_mode) {
        void *polls;
        __atomic_store_n(&progress_stop, 1, __ATOMIC_RELEASE);
        pthread_join(prog, &polls);
        printf("rank %d: %d threads x %d blocking exchanges beside a progress thread "
               "(%lu polls); every payload and status checked\n", rank, nthreads, iters,
               (unsigned long)(uintptr_t)polls);
        CHECK_RC(cvia_barrier());
        CHECK_RC(cvia_mr_dereg(mr));
        buf_free(region);
        CHECK_RC(cvia_finalize());
        return 0;
    }
    CHECK_RC(cvia_barrier());
    CHECK_RC(cvia_mr_dereg(mr));
    buf_free(region);
    printf("rank %d: %d threads x %d steps: %lu exchanges, %lu wildcard pairs, %lu cancels "
           "(%lu withdrawn before the message, %lu matched first), %lu writes; "
           "every payload checked\n", rank, nthreads, iters, done_ops[OP_EXCHANGE],
           done_ops[OP_WILDCARD], done_ops[OP_CANCEL], cancelled_races, matched_races,
           done_ops[OP_WRITE]);
    CHECK_RC(cvia_finalize());
    return 0;
}
