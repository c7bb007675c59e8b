/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Multi-process functional tests of the core API, run through cvia-run by
 * run.sh: func_p2p CASE [--token=X]. Every rank checks what it receives and
 * exits non-zero on the first mismatch; rank 0 prints "ok CASE". Death
 * cases print "expected-error <name>" from every surviving rank. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "thread_level.h"

static int rank, size;

#define FAIL(...) do { fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK_RC(call) do { int rc_ = (call); if (rc_) \
        FAIL("%s -> %s (%s)", #call, cvia_err_name(rc_), cvia_strerror(rc_)); } while (0)

/* Payload stream: xorshift64 seeded by (src, dst, size, seq), so every
 * byte of every message is checked, not a sample. */
static uint64_t seed_of(int src, int dst, size_t len, unsigned seq)
{
    uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^
                 ((uint64_t)len * 0x100000001b3ull) ^ seq;
    return s ? s : 1;
}

static void fill(unsigned char *p, size_t len, uint64_t s)
{
    for (size_t i = 0; i < len; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        p[i] = (unsigned char)s;
    }
}

static size_t verify(const unsigned char *p, size_t len, uint64_t s)
{
    for (size_t i = 0; i < len; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        if (p[i] != (unsigned char)s)
            return i;
    }
    return (size_t)-1;
}

#define GUARD 64
static unsigned char *alloc_guarded(size_t len)
{
    unsigned char *p = malloc(len + GUARD);
    if (!p)
        FAIL("out of memory for %zu bytes", len);
    memset(p + len, 0xA5, GUARD);
    return p;
}

static void check_guard(const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < GUARD; i++)
        if (p[len + i] != 0xA5)
            FAIL("write past the receive buffer at +%zu", i);
}

/* every size 0 .. 8 MiB: 0..70, then 2^k - 1, 2^k, 2^k + 1 */
static size_t make_sizes(size_t *out)
{
    size_t n = 0;
    for (size_t s = 0; s <= 70; s++)
        out[n++] = s;
    for (size_t p = 128; p <= (8u << 20); p <<= 1) {
        out[n++] = p - 1;
        out[n++] = p;
        if (p < (8u << 20))
            out[n++] = p + 1;
    }
    out[n++] = 12345;      /* odd sizes that straddle slot boundaries */
    out[n++] = 16352 * 3;
    out[n++] = 1000003;
    return n;
}

static void case_sizes(void)
{
    size_t sizes[160], n = make_sizes(sizes);
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    unsigned char *sbuf = malloc((8u << 20) + 1), *rbuf = alloc_guarded(8u << 20);

    for (size_t i = 0; i < n; i++) {
        size_t len = sizes[i];
        cvia_req_t rr, sr;
        cvia_status_t st;
        size_t bad;

        fill(sbuf, len, seed_of(rank, to, len, (unsigned)i));
        memset(rbuf, 0, len);
        memset(rbuf + len, 0xA5, GUARD);
        CHECK_RC(cvia_irecv(rbuf, len, from, 7, &rr));
        CHECK_RC(cvia_isend(sbuf, len, to, 7, &sr));
        CHECK_RC(cvia_wait(&sr, NULL));
        CHECK_RC(cvia_wait(&rr, &st));
        if (st.len != len || st.msg_len != len || st.source != from || st.tag != 7)
            FAIL("size %zu: status len %zu msg_len %zu source %d tag %d", len, st.len,
                 st.msg_len, st.source, st.tag);
        if ((bad = verify(rbuf, len, seed_of(from, rank, len, (unsigned)i))) != (size_t)-1)
            FAIL("size %zu: byte %zu differs", len, bad);
        check_guard(rbuf, len);
    }
    free(sbuf);
    free(rbuf);
}

/* Per-(source, tag) order: every rank sends M numbered messages to every
 * other rank, tags cycling 0..2, all outstanding; receivers take them tag
 * by tag in reverse tag order and must see the numbers rising. */
static void case_order(void)
{
    enum { M = 300, TAGS = 3 };
    uint32_t *out = malloc(sizeof(uint32_t) * M * (size_t)size);
    uint32_t *in = malloc(sizeof(uint32_t) * M * (size_t)size);
    cvia_req_t *sreq = calloc((size_t)M * size, sizeof(cvia_req_t));
    cvia_req_t *rreq = calloc((size_t)M * size, sizeof(cvia_req_t));
    size_t ns = 0, nr = 0;

    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        for (int i = 0; i < M; i++) {
            out[ns] = (uint32_t)i;
            CHECK_RC(cvia_isend(&out[ns], sizeof(uint32_t), p, i % TAGS, &sreq[ns]));
            ns++;
        }
    }
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        for (int tag = TAGS - 1; tag >= 0; tag--)
            for (int i = tag; i < M; i += TAGS) {
                CHECK_RC(cvia_irecv(&in[nr], sizeof(uint32_t), p, tag, &rreq[nr]));
                nr++;
            }
    }
    CHECK_RC(cvia_waitall(nr, rreq, NULL));
    CHECK_RC(cvia_waitall(ns, sreq, NULL));
    nr = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank)
            continue;
        for (int tag = TAGS - 1; tag >= 0; tag--)
            for (int i = tag; i < M; i += TAGS, nr++)
                if (in[nr] != (uint32_t)i)
                    FAIL("from %d tag %d: expected message %d, got %u", p, tag, i, in[nr]);
    }
    free(out); free(in); free(sreq); free(rreq);
}

/* Wildcards: every rank but 0 sends K messages (tag 10 + i % 4) to rank 0,
 * carrying (src, i). Rank 0 takes all tag-10 messages by (ANY_SOURCE, 10),
 * then K/4 per source by (src, ANY_TAG), then the rest by (ANY, ANY).
 * Status must match the payload, each (source, tag) stream must rise, and
 * a (src, ANY_TAG) receive must take that source's oldest message. */
static void case_wildcard(void)
{
    enum { K = 96, Q = K / 4 };
    if (rank != 0) {
        int msg[K][2];
        cvia_req_t req[K];
        for (int i = 0; i < K; i++) {
            msg[i][0] = rank;
            msg[i][1] = i;
            CHECK_RC(cvia_isend(msg[i], sizeof(msg[i]), 0, 10 + i % 4, &req[i]));
        }
        CHECK_RC(cvia_waitall(K, req, NULL));
        return;
    }
    int *last = malloc(sizeof(int) * (size_t)size * 4);
    int *last_any = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size * 4; i++)
        last[i] = -1;
    for (int i = 0; i < size; i++)
        last_any[i] = -1;
    int total = K * (size - 1);
    for (int n = 0; n < total; n++) {
        int msg[2], src = CVIA_ANY_SOURCE, tag = CVIA_ANY_TAG, phase;
        cvia_status_t st;
        if (n < Q * (size - 1)) {
            phase = 1;
            tag = 10;
        } else if (n < 2 * Q * (size - 1)) {
            phase = 2;
            src = 1 + (n - Q * (size - 1)) / Q;
        } else {
            phase = 3;
        }
        int rc = cvia_recv(msg, sizeof(msg), src, tag, &st);
        if (rc)
            FAIL("phase %d recv(%d, %d): %s", phase, src, tag, cvia_strerror(rc));
        if (st.source != msg[0] || st.tag != 10 + msg[1] % 4 || st.len != sizeof(msg))
            FAIL("status (src %d tag %d len %zu) does not match payload (%d, %d)",
                 st.source, st.tag, st.len, msg[0], msg[1]);
        if ((src != CVIA_ANY_SOURCE && st.source != src) ||
            (tag != CVIA_ANY_TAG && st.tag != tag))
            FAIL("asked for (%d, %d), got (%d, %d)", src, tag, st.source, st.tag);
        int *l = &last[msg[0] * 4 + msg[1] % 4];
        if (msg[1] <= *l)
            FAIL("from %d tag %d: message %d after %d", msg[0], st.tag, msg[1], *l);
        *l = msg[1];
        if (phase >= 2) {   /* tags 11..13 only remain: arrival order per source */
            if (msg[1] <= last_any[msg[0]])
                FAIL("from %d: message %d taken after %d", msg[0], msg[1], last_any[msg[0]]);
            last_any[msg[0]] = msg[1];
        }
    }
    free(last);
    free(last_any);
}

/* 1000 outstanding requests each way, receives posted first, then 1000
 * sends that arrive before their receives (unexpected queue). */
static void case_many(void)
{
    enum { N = 1000 };
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    static uint64_t sbuf[N][4], rbuf[N][4];
    static cvia_req_t sr[N], rr[N];

    for (int round = 0; round < 2; round++) {
        if (round == 0)
            for (int i = 0; i < N; i++)
                CHECK_RC(cvia_irecv(rbuf[i], sizeof(rbuf[i]), from, i, &rr[i]));
        for (int i = 0; i < N; i++) {
            sbuf[i][0] = (uint64_t)rank << 32 | (uint64_t)i;
            sbuf[i][3] = ~sbuf[i][0];
            CHECK_RC(cvia_isend(sbuf[i], sizeof(sbuf[i]), to, i, &sr[i]));
        }
        if (round == 1) {
            CHECK_RC(cvia_barrier());   /* let them all arrive unexpected */
            for (int i = N - 1; i >= 0; i--)
                CHECK_RC(cvia_irecv(rbuf[i], sizeof(rbuf[i]), from, i, &rr[i]));
        }
        CHECK_RC(cvia_waitall(N, sr, NULL));
        CHECK_RC(cvia_waitall(N, rr, NULL));
        for (int i = 0; i < N; i++)
            if (rbuf[i][0] != ((uint64_t)from << 32 | (uint64_t)i) || rbuf[i][3] != ~rbuf[i][0])
                FAIL("round %d message %d corrupted", round, i);
        CHECK_RC(cvia_barrier());
    }
}

/* Truncation: an error on that request, nothing written past the buffer,
 * and the stream behind it intact. Messages of 24 bytes (one slot: shm's
 * plain drain) and of 1 MiB (many slots or a rendezvous). */
static void case_trunc(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    const size_t big = 1u << 20;
    unsigned char *s = malloc(big), *r = alloc_guarded(big);
    const size_t lens[] = { 24, big };
    size_t caps[] = { 0, 1, 8, 23, 100, 4096, 16352, 100000 };
    const size_t ncaps = sizeof(caps) / sizeof(caps[0]);

    for (size_t m = 0; m < 2; m++)
    for (size_t k = 0; k < ncaps; k++) {
        if (caps[k] >= lens[m])
            continue;
        for (int unexpected = 0; unexpected < 2; unexpected++) {
            size_t cap = caps[k], len = lens[m], bad;
            cvia_req_t rr, sr, rr2, sr2;
            cvia_status_t st;
            unsigned tagseq = (unsigned)((m * ncaps + k) * 2 + (size_t)unexpected);

            fill(s, big, seed_of(rank, to, big, tagseq));
            memset(r + cap, 0xA5, GUARD);
            if (!unexpected)
                CHECK_RC(cvia_irecv(r, cap, from, 1, &rr));
            CHECK_RC(cvia_isend(s, len, to, 1, &sr));
            CHECK_RC(cvia_isend(s, 64, to, 2, &sr2));     /* follows the truncated one */
            if (unexpected) {
                /* a large send may wait for its receive (rendezvous), so
                 * it is waited on only after the receive is posted */
                CHECK_RC(cvia_barrier());
                CHECK_RC(cvia_irecv(r, cap, from, 1, &rr));
            }
            int rc = cvia_wait(&rr, &st);
            if (rc != -CVIA_ETRUNC || st.error != -CVIA_ETRUNC)
                FAIL("cap %zu: expected CVIA_ETRUNC, got %s", cap, cvia_err_name(rc));
            if (st.len != cap || st.msg_len != len)
                FAIL("cap %zu: status len %zu msg_len %zu", cap, st.len, st.msg_len);
            if ((bad = verify(r, cap, seed_of(from, rank, big, tagseq))) != (size_t)-1)
                FAIL("cap %zu: kept byte %zu differs", cap, bad);
            check_guard(r, cap);
            CHECK_RC(cvia_wait(&sr, NULL));
            unsigned char small[64];
            CHECK_RC(cvia_irecv(small, sizeof(small), from, 2, &rr2));
            CHECK_RC(cvia_wait(&rr2, NULL));
            if ((bad = verify(small, 64, seed_of(from, rank, big, tagseq))) != (size_t)-1)
                FAIL("message after a truncated one is corrupted at %zu", bad);
            CHECK_RC(cvia_wait(&sr2, NULL));
            CHECK_RC(cvia_barrier());
        }
    }
    free(s);
    free(r);
}

/* Every rank but 0 waits in a blocking receive while rank 0 sleeps
 * FUNC_IDLE_SECONDS (default 0.5), then sends each its send time. Each
 * waiter reports the CPU it used while it waited (getrusage: share of one
 * core) and how long after the send it woke (CLOCK_MONOTONIC, one host).
 * Checked here: the message; the figures are for scripts/idle-cost.sh. */
static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void case_idle(void)
{
    const char *e = getenv("FUNC_IDLE_SECONDS");
    double secs = e ? atof(e) : 0.5, sent;

    if (secs <= 0 || secs > 60)
        FAIL("FUNC_IDLE_SECONDS: '%s' is not in (0, 60]", e);
    CHECK_RC(cvia_barrier());
    if (rank == 0) {
        struct timespec nap = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
        nanosleep(&nap, NULL);
        for (int p = 1; p < size; p++) {
            sent = mono_now();
            CHECK_RC(cvia_send(&sent, sizeof(sent), p, 9));
        }
    } else {
        double t0 = mono_now(), c0 = cpu_now(), t1, c1;
        cvia_status_t st;
        CHECK_RC(cvia_recv(&sent, sizeof(sent), 0, 9, &st));
        t1 = mono_now();
        c1 = cpu_now();
        if (st.len != sizeof(sent) || sent < t0 || sent > t1)
            FAIL("idle: the message (%zu bytes, sent at %.6f) is not rank 0's", st.len, sent);
        printf("idle rank %d: waited %.3f s, cpu %.3f %% of a core, woke %.1f us after the send\n",
               rank, t1 - t0, 100.0 * (c1 - c0) / (t1 - t0), (t1 - sent) * 1e6);
    }
    CHECK_RC(cvia_barrier());
}

/* A blocked receive with peers on this host and on others (issue 16):
 * each rank in turn waits for a message from a peer of each kind, which
 * that peer sends after sleeping past the waiter's spin and yield phases,
 * so the waiter sleeps in the kernel (on shm's futex, the helper thread
 * polling the sockets) and must be woken by the message: a local peer's
 * through the futex, a remote one's through the helper. Run with a long
 * CVIA_LIVENESS_INTERVAL, a lost wake-up shows as a test that does not
 * finish. Checked: every message, and that the job spans hosts. */
static void case_idle_mixed(void)
{
    struct timespec nap = { 0, 60 * 1000000L };   /* CVIA_YIELD_TIME is 10 ms */
    int kinds[2] = { -1, -1 };   /* a local peer and a remote one of mine */

    for (int p = 0; p < size; p++) {
        int l = cvia_peer_local(p);
        if (p != rank && l >= 0 && kinds[!l] < 0)
            kinds[!l] = p;
    }
    if (kinds[0] < 0 || kinds[1] < 0)
        FAIL("idle-mixed: rank %d has no %s peer (run it over two hosts, 4 ranks)", rank,
             kinds[0] < 0 ? "local" : "remote");
    for (int w = 0; w < size; w++)
        for (int k = 0; k < 2; k++) {
            CHECK_RC(cvia_barrier());
            /* the waiter's peer of kind k: ask it (rank w names it) */
            int from = -1, v;
            if (rank == w)
                from = kinds[k];
            for (int p = 0; p < size; p++)
                if (p != w) {
                    if (rank == w)
                        CHECK_RC(cvia_send(&from, sizeof(from), p, 20));
                    else if (rank == p)
                        CHECK_RC(cvia_recv(&from, sizeof(from), w, 20, NULL));
                }
            if (rank == w) {
                cvia_status_t st;
                v = -1;
                CHECK_RC(cvia_recv(&v, sizeof(v), from, 21, &st));
                if (st.len != sizeof(v) || v != from * 1000 + w)
                    FAIL("idle-mixed: from rank %d (%s) got %d, not %d", from,
                         k ? "remote" : "local", v, from * 1000 + w);
            } else if (rank == from) {
                nanosleep(&nap, NULL);
                v = rank * 1000 + w;
                CHECK_RC(cvia_send(&v, sizeof(v), w, 21));
            }
        }
    CHECK_RC(cvia_barrier());
}

static void case_barrier(void)
{
    for (int i = 0; i < 300; i++) {
        /* a message in flight around each barrier must not disturb it */
        int to = (rank + 1) % size, from = (rank - 1 + size) % size, v = i, got = -1;
        cvia_req_t sr, rr;
        CHECK_RC(cvia_isend(&v, sizeof(v), to, 0, &sr));
        CHECK_RC(cvia_barrier());
        CHECK_RC(cvia_irecv(&got, sizeof(got), from, 0, &rr));
        CHECK_RC(cvia_wait(&rr, NULL));
        CHECK_RC(cvia_wait(&sr, NULL));
        if (got != i)
            FAIL("barrier round %d: got message %d", i, got);
    }
}

/* cvia_cancel: an unmatched receive is withdrawn (and a message sent later
 * goes to the next receive), a matched one and a send are not. */
static void case_cancel(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size, v = rank, got = -1, rc;
    cvia_req_t rr, sr, lone;

    CHECK_RC(cvia_irecv(&got, sizeof(got), CVIA_ANY_SOURCE, 77, &lone));
    if ((rc = cvia_cancel(&lone)) || lone)
        FAIL("cancel of an unmatched receive: %d, request %p", rc, (void *)lone);
    CHECK_RC(cvia_cancel(&lone));   /* NULL: nothing to do */
    CHECK_RC(cvia_irecv(&got, sizeof(got), from, 5, &rr));
    CHECK_RC(cvia_isend(&v, sizeof(v), to, 5, &sr));
    CHECK_RC(cvia_wait(&sr, NULL));
    CHECK_RC(cvia_barrier());        /* our message has been matched by now */
    rc = cvia_cancel(&rr);
    if (rc != -EBUSY || !rr)
        FAIL("cancel of a matched receive: %d (want -EBUSY), request %p", rc, (void *)rr);
    CHECK_RC(cvia_wait(&rr, NULL));
    if (got != from)
        FAIL("after a refused cancel: got %d from rank %d", got, from);
    CHECK_RC(cvia_isend(&v, sizeof(v), to, 6, &sr));
    if ((rc = cvia_cancel(&sr)) != -EBUSY)
        FAIL("cancel of a send: %d (want -EBUSY)", rc);
    CHECK_RC(cvia_wait(&sr, NULL));
    CHECK_RC(cvia_recv(&got, sizeof(got), from, 6, NULL));
    /* a message for a withdrawn receive's tag goes to the next receive */
    CHECK_RC(cvia_irecv(&got, sizeof(got), from, 7, &rr));
    CHECK_RC(cvia_cancel(&rr));
    CHECK_RC(cvia_barrier());        /* nobody sends tag 7 before every cancel */
    CHECK_RC(cvia_send(&v, sizeof(v), to, 7));
    got = -1;
    CHECK_RC(cvia_recv(&got, sizeof(got), from, 7, NULL));
    if (got != from)
        FAIL("after a cancel: got %d from rank %d", got, from);
}

/* Unexpected messages, large and small, taken out of order; and a receive
 * posted while a large message is still arriving. */
static void case_unexpected(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    const size_t big = 3u << 20;
    unsigned char *s = malloc(big), *r = alloc_guarded(big);
    size_t lens[] = { 5, big, 0, 70000, 33 };
    cvia_req_t sr[5];
    unsigned char *p[5];

    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < 5; i++) {
            /* each message its own buffer; a large send may wait for its
             * receive (rendezvous), so all are waited on at the end */
            p[i] = malloc(lens[i] ? lens[i] : 1);
            fill(p[i], lens[i], seed_of(rank, to, lens[i], (unsigned)(rep * 5 + i)));
            CHECK_RC(cvia_isend(p[i], lens[i], to, 100 + i, &sr[i]));
        }
        if (rep == 1)
            CHECK_RC(cvia_barrier());   /* all fully unexpected */
        for (int i = 4; i >= 0; i--) {
            cvia_status_t st;
            size_t bad;
            memset(r + lens[i], 0xA5, GUARD);
            CHECK_RC(cvia_recv(r, lens[i], from, 100 + i, &st));
            if (st.len != lens[i])
                FAIL("unexpected %d: len %zu", i, st.len);
            if ((bad = verify(r, lens[i], seed_of(from, rank, lens[i], (unsigned)(rep * 5 + i)))) != (size_t)-1)
                FAIL("unexpected message %d (%zu B) differs at %zu", i, lens[i], bad);
            check_guard(r, lens[i]);
        }
        CHECK_RC(cvia_waitall(5, sr, NULL));
        for (int i = 0; i < 5; i++)
            free(p[i]);
        CHECK_RC(cvia_barrier());
    }
    /* partially arrived: the sender pushes 3 MiB while the receiver only
     * polls, then posts the receive */
    fill(s, big, seed_of(rank, to, big, 99));
    CHECK_RC(cvia_isend(s, big, to, 200, &sr[0]));
    for (int i = 0; i < 50; i++)
        cvia_progress();
    cvia_status_t st;
    CHECK_RC(cvia_recv(r, big, from, 200, &st));
    CHECK_RC(cvia_wait(&sr[0], NULL));
    size_t bad = verify(r, big, seed_of(from, rank, big, 99));
    if (bad != (size_t)-1)
        FAIL("partially unexpected 3 MiB message differs at %zu", bad);
    check_guard(r, big);
    free(s);
    free(r);
}

/* 1 once process @pid has ended (gone, or a zombie not yet reaped). */
static int pid_ended(pid_t pid)
{
    char path[64], buf[256], *p;
    FILE *f;

    if (kill(pid, 0) && errno == ESRCH)
        return 1;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return 1;
    p = fgets(buf, sizeof(buf), f);
    fclose(f);
    p = p ? strrchr(buf, ')') : NULL;   /* "pid (comm) S ..." */
    return p && (p[2] == 'Z' || p[2] == 'X');
}

/* The last rank leaves without finalizing (exit 0) or is killed in the
 * middle of a large send; the others are waiting on it and must get an
 * error, not hang. Every survivor first posts its receive and tells the
 * victim so; only then does the victim die. The victim's message (64 MiB,
 * two-copy path: run with CVIA_SHM_RNDV_THRESHOLD=1t) is far larger than a
 * ring, but its isend pushes for as long as the ring has room: rank 0,
 * draining at the same time on the other CPU, could take it whole before
 * the kill. So rank 0 makes no corevia call between telling the victim and
 * the victim's end (it knows the pid; same host or another namespace of
 * this machine), and the message can never arrive whole. */
static int case_death(int kill_it)
{
    int victim = size - 1;
    const size_t big = 64u << 20;
    int32_t vpid = (int32_t)getpid();

    CHECK_RC(cvia_barrier());
    if (kill_it) {   /* the victim's pid, for rank 0 */
        if (rank == victim && victim != 0)
            CHECK_RC(cvia_send(&vpid, sizeof(vpid), 0, 78));
        else if (rank == 0 && victim != 0)
            CHECK_RC(cvia_recv(&vpid, sizeof(vpid), victim, 78, NULL));
    }
    if (rank == victim) {
        for (int p = 0; p < size - 1; p++)
            CHECK_RC(cvia_recv(NULL, 0, CVIA_ANY_SOURCE, 77, NULL));
        if (kill_it) {
            unsigned char *s = calloc(1, big);
            cvia_req_t sr;
            CHECK_RC(cvia_isend(s, big, 0, 5, &sr));
            raise(SIGKILL);
        }
        _exit(0);
    }
    unsigned char *r = malloc(big);
    cvia_status_t st;
    cvia_req_t rr;
    int rc = rank == 0 ? cvia_irecv(r, big, victim, 5, &rr)
                       : cvia_irecv(r, 16, CVIA_ANY_SOURCE, 5, &rr);
    if (rc)
        FAIL("posting the receive: %s", cvia_err_name(rc));
    CHECK_RC(cvia_send(NULL, 0, victim, 77));
    if (kill_it && rank == 0) {
        /* no progress (no draining) until the victim has ended: 20 s at most */
        for (int i = 0; i < 20000 && !pid_ended((pid_t)vpid); i++) {
            struct timespec ms = { 0, 1000000 };
            nanosleep(&ms, NULL);
        }
    }
    rc = cvia_wait(&rr, &st);
    if (rc == -CVIA_ENOPEER || rc == -CVIA_EABORT) {
        printf("rank %d: expected-error %s\n", rank, cvia_err_name(rc));
        fflush(stdout);
        return 3;
    }
    FAIL("waiting on a dead rank returned %s", cvia_err_name(rc));
}

/* Killed from outside (tests/slurm: kill -KILL of one rank of an srun
 * step): every rank says it is ready, with its pid, then waits on a
 * wildcard receive that only a lost peer completes (with an error). The
 * wait is bounded: nobody dying within FUNC_HOLD_S (default 120 s) fails. */
static int case_hold(void)
{
    const char *e = getenv("FUNC_HOLD_S");
    double limit = e ? atof(e) : 120, waited = 0;
    cvia_status_t st;
    cvia_req_t rr;
    int rc, buf;

    CHECK_RC(cvia_barrier());
    printf("rank %d pid %d: hold-ready\n", rank, (int)getpid());
    fflush(stdout);
    CHECK_RC(cvia_irecv(&buf, sizeof(buf), CVIA_ANY_SOURCE, 99, &rr));
    for (int done = 0;;) {
        rc = cvia_test(&rr, &done, &st);
        if (done || rc)
            break;
        struct timespec ms = { 0, 10000000 };
        nanosleep(&ms, NULL);
        if ((waited += 0.01) > limit)
            FAIL("no peer died within %g s", limit);
    }
    if (rc == 0)
        FAIL("a message came on tag 99 from rank %d", st.source);
    if (rc == -CVIA_ENOPEER || rc == -CVIA_EABORT) {
        printf("rank %d: expected-error %s\n", rank, cvia_err_name(rc));
        fflush(stdout);
        return 3;
    }
    FAIL("waiting on a lost peer returned %s", cvia_err_name(rc));
}

/* A rank that never waits in corevia (it only polls) learns that a peer
 * died from cvia_check_peers(): 0 while every peer runs, then more than 0
 * once the last rank has left without finalizing. */
static int case_check_peers(void)
{
    int victim = size - 1, n;

    CHECK_RC(cvia_barrier());
    if ((n = cvia_check_peers()) != 0)
        FAIL("cvia_check_peers() with every peer running: %d", n);
    CHECK_RC(cvia_barrier());
    if (rank == victim)
        _exit(0);
    for (int i = 0; i < 20000; i++) {   /* about 20 s at most */
        struct timespec ms = { 0, 1000000 };
        if ((n = cvia_check_peers()) < 0)
            FAIL("cvia_check_peers(): %s", cvia_err_name(n));
        if (n > 0) {
            printf("rank %d: expected-error %d peers gone\n", rank, n);
            fflush(stdout);
            return 3;
        }
        nanosleep(&ms, NULL);
    }
    FAIL("cvia_check_peers() did not notice a dead rank in 20 s");
}

/* Single process: errors before init, bad arguments, after finalize. */
static int case_api(void)
{
    cvia_req_t r = NULL;
    int x = 0, rc;

    if (cvia_rank() != -CVIA_ENOINIT || cvia_size() != -CVIA_ENOINIT ||
        cvia_isend(&x, 4, 0, 0, &r) != -CVIA_ENOINIT ||
        cvia_irecv(&x, 4, 0, 0, &r) != -CVIA_ENOINIT ||
        cvia_wait(&r, NULL) != -CVIA_ENOINIT || cvia_barrier() != -CVIA_ENOINIT ||
        cvia_finalize() != -CVIA_ENOINIT || cvia_progress() != -CVIA_ENOINIT ||
        cvia_check_peers() != -CVIA_ENOINIT ||
        cvia_initialized() != 0)
        FAIL("a call before cvia_init did not return CVIA_ENOINIT");
    CHECK_RC(cvia_init(NULL, NULL));
    if (cvia_init(NULL, NULL) != -EALREADY)
        FAIL("second cvia_init did not fail with EALREADY");
    if (cvia_rank() != 0 || cvia_size() != 1)
        FAIL("singleton rank %d size %d", cvia_rank(), cvia_size());
    if ((rc = cvia_isend(&x, 4, 1, 0, &r)) != -EINVAL ||
        (rc = cvia_isend(&x, 4, -1, 0, &r)) != -EINVAL ||
        (rc = cvia_isend(&x, 4, 0, -3, &r)) != -EINVAL ||
        (rc = cvia_irecv(&x, 4, 7, 0, &r)) != -EINVAL ||
        (rc = cvia_irecv(&x, 4, -3, 0, &r)) != -EINVAL ||   /* -2: CVIA_ANY_LIVE_SOURCE */
        (rc = cvia_irecv(&x, 4, 0, -2, &r)) != -EINVAL ||
        (rc = cvia_isend(NULL, 4, 0, 0, &r)) != -EINVAL ||
        (rc = cvia_isend(&x, 4, 0, 0, NULL)) != -EINVAL)
        FAIL("bad argument accepted or wrong code: %s", cvia_err_name(rc));
    /* the blocking calls refuse the same, and a refused receive leaves its
     * status alone (their requests are on their own stacks) */
    cvia_status_t st0, st1;
    memset(&st0, 0x5A, sizeof(st0));
    st1 = st0;
    if ((rc = cvia_send(&x, 4, 1, 0)) != -EINVAL ||
        (rc = cvia_send(&x, 4, 0, -3)) != -EINVAL ||
        (rc = cvia_send(NULL, 4, 0, 0)) != -EINVAL ||
        (rc = cvia_recv(&x, 4, 7, 0, &st1)) != -EINVAL ||
        (rc = cvia_recv(&x, 4, 0, -2, &st1)) != -EINVAL ||
        (rc = cvia_recv(NULL, 4, 0, 0, &st1)) != -EINVAL)
        FAIL("bad argument to a blocking call accepted or wrong code: %s", cvia_err_name(rc));
    if (memcmp(&st0, &st1, sizeof(st0)))
        FAIL("a refused cvia_recv wrote its status");
    /* self messages work */
    int y = 0;
    x = 42;
    CHECK_RC(cvia_send(&x, sizeof(x), 0, 3));
    CHECK_RC(cvia_recv(&y, sizeof(y), CVIA_ANY_SOURCE, CVIA_ANY_TAG, &st1));
    if (y != 42)
        FAIL("self message lost");
    if (st1.source != 0 || st1.tag != 3 || st1.len != sizeof(y) || st1.msg_len != sizeof(x) ||
        st1.error)
        FAIL("self message's status: source %d tag %d len %zu msg_len %zu error %d",
             st1.source, st1.tag, st1.len, st1.msg_len, st1.error);
    int done = 0;
    CHECK_RC(cvia_irecv(&y, sizeof(y), 0, 9, &r));
    CHECK_RC(cvia_test(&r, &done, NULL));
    if (done || !r)
        FAIL("receive completed with no message");
    CHECK_RC(cvia_send(&x, sizeof(x), 0, 9));
    for (int i = 0; i < 1000 && !done; i++)
        CHECK_RC(cvia_test(&r, &done, NULL));
    if (!done || r)
        FAIL("cvia_test never completed");
    /* launcher-free addresses: this process's own, checked like a peer's */
    unsigned char a[CVIA_ADDR_MAX + 8];
    size_t alen = 0;
    int p = -1;
    if ((rc = cvia_addr(NULL, &alen)) != -ENOBUFS || alen == 0 || alen > CVIA_ADDR_MAX)
        FAIL("cvia_addr with no room: %s, length %zu", cvia_err_name(rc), alen);
    alen = sizeof(a);
    CHECK_RC(cvia_addr(a, &alen));
    CHECK_RC(cvia_connect(a, alen, &p));
    if (p != 0)
        FAIL("cvia_connect to my own address gave peer %d, not 0", p);
    if ((rc = cvia_connect(a, alen - 1, &p)) != -EINVAL ||
        (rc = cvia_connect(NULL, alen, &p)) != -EINVAL ||
        (rc = cvia_connect(a, alen, NULL)) != -EINVAL)
        FAIL("a malformed address accepted or wrong code: %s", cvia_err_name(rc));
    a[alen - 1] ^= 1;   /* the nonce's last byte */
    if ((rc = cvia_connect(a, alen, &p)) != -EACCES)
        FAIL("an address with a wrong nonce: %s, not EACCES", cvia_err_name(rc));
    if (cvia_peer_local(1) != -EINVAL || cvia_peer_alive(1) != -EINVAL)
        FAIL("peer index 1 valid before any peer connected");
    CHECK_RC(cvia_finalize());
    if (cvia_addr(a, &alen) != -CVIA_ENOINIT || cvia_connect(a, alen, &p) != -CVIA_ENOINIT)
        FAIL("cvia_addr/cvia_connect after finalize did not return CVIA_ENOINIT");
    if (cvia_rank() != -CVIA_ENOINIT || cvia_send(&x, 4, 0, 0) != -CVIA_ENOINIT)
        FAIL("a call after cvia_finalize did not return CVIA_ENOINIT");
    if (strcmp(cvia_err_name(-CVIA_ETRUNC), "CVIA_ETRUNC") ||
        strcmp(cvia_err_name(-EINVAL), "EINVAL") || !cvia_strerror(123456))
        FAIL("error names");
    printf("ok api\n");
    return 0;
}

int main(int argc, char **argv)
{
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: func_p2p CASE\n");
        return 2;
    }
    if (!strcmp(argv[1], "api"))
        return case_api();
    if ((rc = func_init(&argc, &argv))) {
        fprintf(stderr, "func_p2p: cvia_init: %s\n", cvia_strerror(rc));
        return 1;
    }
    rank = cvia_rank();
    size = cvia_size();
    {   /* a launcher's job has no launcher-free addresses */
        unsigned char a[CVIA_ADDR_MAX];
        size_t alen = sizeof(a);
        if (size > 1 && (rc = cvia_addr(a, &alen)) != -EOPNOTSUPP)
            FAIL("cvia_addr in a job of %d: %s, not EOPNOTSUPP", size, cvia_err_name(rc));
    }
    if (!strcmp(argv[1], "sizes"))           case_sizes();
    else if (!strcmp(argv[1], "order"))      case_order();
    else if (!strcmp(argv[1], "wildcard"))   case_wildcard();
    else if (!strcmp(argv[1], "many"))       case_many();
    else if (!strcmp(argv[1], "trunc"))      case_trunc();
    else if (!strcmp(argv[1], "barrier"))    case_barrier();
    else if (!strcmp(argv[1], "idle"))       case_idle();
    else if (!strcmp(argv[1], "idle-mixed")) case_idle_mixed();
    else if (!strcmp(argv[1], "unexpected")) case_unexpected();
    else if (!strcmp(argv[1], "cancel"))     case_cancel();
    else if (!strcmp(argv[1], "death-exit")) return case_death(0);
    else if (!strcmp(argv[1], "death-kill")) return case_death(1);
    else if (!strcmp(argv[1], "check-peers")) return case_check_peers();
    else if (!strcmp(argv[1], "hold"))       return case_hold();
    else if (!strcmp(argv[1], "init-only"))  ;
    else {
        fprintf(stderr, "func_p2p: unknown case %s\n", argv[1]);
        return 2;
    }
    if ((rc = cvia_finalize()))
        FAIL("cvia_finalize: %s", cvia_strerror(rc));
    if (rank == 0)
        printf("ok %s (%d ranks)\n", argv[1], size);
    return 0;
}
