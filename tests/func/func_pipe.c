/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Medium messages and windows of large ones (issue 17), run through
 * cvia-run by run.sh: func_pipe CASE [--token=X].
 *
 *   pipeline  every size across the ring/rendezvous thresholds (4 KiB to
 *             2 MiB, each power of two and its neighbours), payload
 *             checked; truncation, a CVIA_ANY_SOURCE receive and a
 *             cancelled receive of a pipelined message. FUNC_THRESHOLD=X:
 *             the threshold cvia_peer_info must report ("measured" for
 *             one the probe chose).
 *   window    256 messages of 64 KiB to one peer at once (rank 0 to 1),
 *             every one checked; FUNC_SPILL=0: none may have gone through
 *             the ring, FUNC_SPILL=1: some must have (CVIA_SHM_RNDV_SLOTS
 *             below 256), and still every byte arrives.
 *   medium    256 messages of 16 KiB to one peer at once, below the
 *             threshold (4 MiB: the ring holds 1 MiB, so the pair is busy),
 *             the last into a receive of half its size, every one
 *             checked; FUNC_WINDOW=1: some must have gone by rendezvous
 *             (CVIA_SHM_RNDV_WINDOW), FUNC_WINDOW=0: none.
 *   info      print cvia_peer_info for the next rank (tune.sh reads it).
 *
 * FUNC_ARENA=1: the buffers come from cvia_mem_alloc (shared arenas), and
 * FUNC_ARENA_MSGS=1 asks that sends below the threshold went by rendezvous
 * from the arena (CVIA_SHM_ARENA_THRESHOLD) and that no byte went by CMA
 * (loads and stores only), FUNC_ARENA_MSGS=0 that none did. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    uint64_t s = 0x6a09e667f3bcc909ull ^ ((uint64_t)src << 40) ^ ((uint64_t)len << 8) ^ seq;
    return s ? s : 1;
}

static int use_arena(void)
{
    const char *a = getenv("FUNC_ARENA");
    return a && *a == '1';
}

static unsigned char *buf_alloc(size_t len)
{
    void *p = NULL;

    if (use_arena())
        CHECK_RC(cvia_mem_alloc(len, NULL, &p));
    else if (!(p = malloc(len)))
        FAIL("malloc %zu", len);
    return p;
}

static void buf_free(unsigned char *p)
{
    if (use_arena())
        cvia_mem_free(p);
    else
        free(p);
}

/* FUNC_ARENA_MSGS: what went by rendezvous from the arena to @peer. */
static void check_arena(int peer)
{
    const char *want = getenv("FUNC_ARENA_MSGS"), *p;
    unsigned long long n, cma = 0, near = 0;
    char info[1024];

    if (!want || size < 2)
        return;
    CHECK_RC(cvia_peer_info(peer, info, sizeof(info)));
    if (!(p = strstr(info, "from an arena: ")) || sscanf(p, "from an arena: %llu", &n) != 1 ||
        !(p = strstr(info, "so far: ")) ||
        sscanf(p, "so far: %llu B by CMA, %llu B by load/store", &cma, &near) != 2)
        FAIL("no arena counters in: %s", info);
    if (*want == '1' ? !n || cma || !near : n != 0)
        FAIL("FUNC_ARENA_MSGS=%s, but: %s", want, info);
}

/* The counters of what was sent to @peer from the threshold up. */
static void counts(int peer, unsigned long long *single, unsigned long long *ring, char *info,
                   size_t cap)
{
    const char *p;

    CHECK_RC(cvia_peer_info(peer, info, cap));
    *single = *ring = 0;
    if (!(p = strstr(info, "sent from the threshold up: ")) ||
        sscanf(p, "sent from the threshold up: %llu messages single-copied, %llu through "
               "the ring", single, ring) != 2)
        FAIL("no message counters in: %s", info);
}

static void check_threshold(int peer)
{
    const char *want = getenv("FUNC_THRESHOLD"), *p;
    char info[1024], got[64] = "";

    if (!want)
        return;
    CHECK_RC(cvia_peer_info(peer, info, sizeof(info)));
    if ((p = strstr(info, "rings below ")))
        sscanf(p, "rings below %63[^ ,]", got);
    if (!strcmp(want, "measured") ? !strstr(info, "(measured") :
        strcmp(got, want) || strstr(info, "(measured"))
        FAIL("expected the threshold %s, but: %s", want, info);
}

static void one(unsigned char *s, unsigned char *r, size_t len, size_t cap, int to, int from,
                int src_arg, unsigned seq)
{
    cvia_req_t rr, sr;
    cvia_status_t st;
    size_t bad;
    int rc;

    fill(s, len, seed_of(rank, len, seq));
    memset(r + cap, 0xA5, 64);
    CHECK_RC(cvia_irecv(r, cap, src_arg, 5, &rr));
    CHECK_RC(cvia_isend(s, len, to, 5, &sr));
    rc = cvia_wait(&rr, &st);
    CHECK_RC(cvia_wait(&sr, NULL));
    if (rc != (len > cap ? -CVIA_ETRUNC : 0) || st.len != (len < cap ? len : cap) ||
        st.msg_len != len || st.source != from)
        FAIL("size %zu into %zu: %s len %zu msg_len %zu source %d", len, cap,
             cvia_err_name(rc), st.len, st.msg_len, st.source);
    if ((bad = verify(r, st.len, seed_of(from, len, seq))) != (size_t)-1)
        FAIL("size %zu: byte %zu differs", len, bad);
    for (int g = 0; g < 64; g++)
        if (r[cap + g] != 0xA5)
            FAIL("size %zu into %zu: write past the buffer", len, cap);
}

static void case_pipeline(void)
{
    const size_t max = 2u << 20;
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *s = buf_alloc(max + 64), *r = buf_alloc(max + 64);
    unsigned seq = 0;

    check_threshold(to);
    for (size_t p = 4096; p <= max; p *= 2) {
        size_t sizes[3] = { p - 1, p, p + 1 };
        for (int k = 0; k < 3; k++) {
            size_t len = sizes[k] > max ? max : sizes[k];
            one(s, r, len, len, to, from, from, seq++);
            one(s, r, len, len, to, from, CVIA_ANY_SOURCE, seq++);
        }
        /* truncation: an error with the bytes that fit, posted and unexpected */
        one(s, r, p, p / 2 + 3, to, from, from, seq++);
        {
            cvia_req_t rr, sr;
            cvia_status_t st;
            int rc;
            fill(s, p, seed_of(rank, p, seq));
            CHECK_RC(cvia_isend(s, p, to, 6, &sr));
            for (int k = 0; k < 50; k++)
                cvia_progress();
            CHECK_RC(cvia_irecv(r, p - 1, from, 6, &rr));
            rc = cvia_wait(&rr, &st);
            CHECK_RC(cvia_wait(&sr, NULL));
            if (rc != -CVIA_ETRUNC || st.len != p - 1 || st.msg_len != p)
                FAIL("unexpected %zu into %zu: %s len %zu", p, p - 1, cvia_err_name(rc), st.len);
            if (verify(r, p - 1, seed_of(from, p, seq)) != (size_t)-1)
                FAIL("unexpected truncated %zu: bytes differ", p);
            seq++;
        }
    }
    /* a receive cancelled before its message came: the message goes to the
     * next receive, whole */
    for (size_t len = 4096; len <= (256u << 10); len *= 4) {
        cvia_req_t rr, sr;
        cvia_status_t st;
        int rc;
        CHECK_RC(cvia_irecv(r, len, CVIA_ANY_SOURCE, 7, &rr));
        if ((rc = cvia_cancel(&rr)) || rr)
            FAIL("cancel of an unmatched receive of %zu: %s", len, cvia_err_name(rc));
        CHECK_RC(cvia_barrier());   /* nobody sends tag 7 before every cancel */
        fill(s, len, seed_of(rank, len, seq));
        CHECK_RC(cvia_isend(s, len, to, 7, &sr));
        memset(r, 0, len);
        CHECK_RC(cvia_irecv(r, len, CVIA_ANY_SOURCE, 7, &rr));
        CHECK_RC(cvia_wait(&rr, &st));
        CHECK_RC(cvia_wait(&sr, NULL));
        if (st.len != len || st.source != from ||
            verify(r, len, seed_of(from, len, seq)) != (size_t)-1)
            FAIL("after a cancel, %zu: len %zu source %d or bytes differ", len, st.len,
                 st.source);
        seq++;
        /* once matched (the sender's slots or RTS came before its barrier
         * message), a pipelined receive cannot be withdrawn */
        fill(s, len, seed_of(rank, len, seq));
        CHECK_RC(cvia_irecv(r, len, from, 8, &rr));
        CHECK_RC(cvia_isend(s, len, to, 8, &sr));
        CHECK_RC(cvia_barrier());
        if ((rc = cvia_cancel(&rr)) != -EBUSY || !rr)
            FAIL("cancel of a matched receive of %zu: %d (want -EBUSY)", len, rc);
        CHECK_RC(cvia_wait(&rr, &st));
        CHECK_RC(cvia_wait(&sr, NULL));
        if (st.len != len || verify(r, len, seed_of(from, len, seq)) != (size_t)-1)
            FAIL("after a refused cancel, %zu: bytes differ", len);
        seq++;
    }
    CHECK_RC(cvia_barrier());
    check_arena(to);
    buf_free(s);
    buf_free(r);
}

static void case_window(void)
{
    enum { N = 256 };
    const size_t len = 64u << 10;
    const char *spill = getenv("FUNC_SPILL");
    unsigned char *buf = buf_alloc((size_t)N * len);
    cvia_req_t req[N];
    unsigned long long single, ring;
    char info[1024];

    for (int round = 0; round < 2 && size > 1 && rank < 2; round++) {
        for (int i = 0; i < N; i++) {
            if (rank == 0) {
                fill(buf + (size_t)i * len, len, seed_of(0, len, (unsigned)(round * N + i)));
                CHECK_RC(cvia_isend(buf + (size_t)i * len, len, 1, i, &req[i]));
            } else {
                CHECK_RC(cvia_irecv(buf + (size_t)i * len, len, 0, i, &req[i]));
            }
        }
        for (int i = 0; i < N; i++) {
            cvia_status_t st;
            CHECK_RC(cvia_wait(&req[i], &st));
            if (rank == 1 && (st.len != len || st.tag != i))
                FAIL("message %d: len %zu tag %d", i, st.len, st.tag);
        }
        for (int i = 0; rank == 1 && i < N; i++)
            if (verify(buf + (size_t)i * len, len,
                       seed_of(0, len, (unsigned)(round * N + i))) != (size_t)-1)
                FAIL("round %d message %d differs", round, i);
    }
    if (rank == 0 && size > 1) {
        counts(1, &single, &ring, info, sizeof(info));
        printf("window of %d x %zu B: %llu single-copied, %llu through the ring\n", N, len,
               single, ring);
        if (single + ring != 2 * N)
            FAIL("%llu + %llu messages counted, %d sent: %s", single, ring, 2 * N, info);
        if (spill && *spill == '0' && ring)
            FAIL("messages went through the ring: %s", info);
        if (spill && *spill == '1' && (!ring || !single))
            FAIL("expected both paths with CVIA_SHM_RNDV_SLOTS < %d: %s", N, info);
    }
    CHECK_RC(cvia_barrier());
    buf_free(buf);
}

static unsigned long long window_count(int peer, char *info, size_t cap)
{
    unsigned long long n;
    const char *p;

    CHECK_RC(cvia_peer_info(peer, info, cap));
    if (!(p = strstr(info, "(CVIA_SHM_RNDV_WINDOW) when busy: ")) ||
        sscanf(p, "(CVIA_SHM_RNDV_WINDOW) when busy: %llu", &n) != 1)
        FAIL("no window counter in: %s", info);
    return n;
}

static void case_medium(void)
{
    enum { N = 256 };
    const size_t len = 16u << 10;
    const char *want = getenv("FUNC_WINDOW");
    unsigned char *buf = malloc((size_t)N * len);
    cvia_req_t req[N];
    unsigned long long single, ring, pooled;
    char info[1024];

    if (!buf)
        FAIL("malloc");
    for (int round = 0; round < 2 && size > 1 && rank < 2; round++) {
        for (int i = 0; i < N; i++) {
            unsigned char *b = buf + (size_t)i * len;
            if (rank == 0) {
                fill(b, len, seed_of(0, len, (unsigned)(round * N + i)));
                CHECK_RC(cvia_isend(b, len, 1, i, &req[i]));
            } else {
                memset(b + len / 2, 0xA5, len / 2);
                CHECK_RC(cvia_irecv(b, i == N - 1 ? len / 2 : len, 0, i, &req[i]));
            }
        }
        for (int i = 0; i < N; i++) {
            cvia_status_t st;
            int rc = cvia_wait(&req[i], &st);
            size_t got = rank == 1 && i == N - 1 ? len / 2 : len;
            if (rank == 0 ? rc != 0 : rc != (i == N - 1 ? -CVIA_ETRUNC : 0) ||
                st.len != got || st.msg_len != len || st.tag != i)
                FAIL("round %d message %d: %s len %zu msg_len %zu tag %d", round, i,
                     cvia_err_name(rc), st.len, st.msg_len, st.tag);
        }
        for (int i = 0; rank == 1 && i < N; i++) {
            unsigned char *b = buf + (size_t)i * len;
            size_t got = i == N - 1 ? len / 2 : len;
            if (verify(b, got, seed_of(0, len, (unsigned)(round * N + i))) != (size_t)-1)
                FAIL("round %d message %d differs", round, i);
            for (size_t k = got; k < len; k++)
                if (b[k] != 0xA5)
                    FAIL("round %d: write past the receive of %zu B", round, got);
        }
    }
    if (rank == 0 && size > 1) {
        pooled = window_count(1, info, sizeof(info));
        counts(1, &single, &ring, info, sizeof(info));
        printf("window of %d x %zu B below the threshold: %llu by rendezvous\n", N, len,
               pooled);
        if (single || ring || pooled > 2 * N)
            FAIL("%llu, %llu counted from the threshold up, %llu below: %s", single, ring,
                 pooled, info);
        if (want && *want == '1' && !pooled)
            FAIL("no message of a busy window went by rendezvous: %s", info);
        if (want && *want == '0' && pooled)
            FAIL("messages went by rendezvous with the window off: %s", info);
    }
    CHECK_RC(cvia_barrier());
    free(buf);
}

int main(int argc, char **argv)
{
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: func_pipe pipeline|window|medium|info\n");
        return 2;
    }
    if ((rc = func_init(&argc, &argv))) {
        fprintf(stderr, "func_pipe: cvia_init: %s\n", cvia_strerror(rc));
        return 1;
    }
    rank = cvia_rank();
    size = cvia_size();
    if (!strcmp(argv[1], "pipeline"))
        case_pipeline();
    else if (!strcmp(argv[1], "window"))
        case_window();
    else if (!strcmp(argv[1], "medium"))
        case_medium();
    else if (!strcmp(argv[1], "info")) {
        char info[1024];
        CHECK_RC(cvia_peer_info((rank + 1) % size, info, sizeof(info)));
        if (rank == 0)
            printf("path: %s\n", info);
    } else {
        fprintf(stderr, "func_pipe: unknown case %s\n", argv[1]);
        return 2;
    }
    if ((rc = cvia_finalize()))
        FAIL("cvia_finalize: %s", cvia_strerror(rc));
    if (rank == 0)
        printf("ok %s (%d ranks)\n", argv[1], size);
    return 0;
}
