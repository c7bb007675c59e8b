/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* DSM consistency stress, SPMD through the API (run by func/run.sh):
 *   counter   lock-protected counters incremented by every rank: no lost update
 *   merge     many writers to disjoint words (and bytes) of one unit: diffs merge
 *   barrier   data written before a barrier is seen after it by every rank
 *   migrate   a record passed from rank to rank under one lock
 *   errors    unlock without lock, double unlock, recursive lock: clear errors
 *   touch     a system call (read) into shared memory after cvia_dsm_touch
 *   death     a rank dies; every survivor must end with an error, not hang
 *   big       DSM_TEST_BIG MiB (64) allocated, every rank writes its share,
 *             every rank checks all of it after a barrier
 *   ownbytes  a rank writes and re-reads its own bytes of a unit with no
 *             synchronization while a rank of its host (np 4 under
 *             func/hosts.sh: ranks 0 and 2 on one host) acquires a lock
 *             from a rank of the other host that wrote other bytes of the
 *             same unit: the writer must always read back what it wrote
 *   levels    counter, merge, barrier, migrate and touch, then the path the
 *             ranks took, from this rank's counters, against DSM_TEST_EXPECT:
 *             "shared" (CVIA_DSM_LEVELS=2 on one host: no fault, fetch,
 *             twin, diff or write notice at all), "protocol" (one-level:
 *             this rank fetched or diffed units) or "groups" (two hosts
 *             under func/hosts.sh, ranks r and r + 2 on one host: a rank
 *             sees its host partner's write with no synchronization at all,
 *             which with CVIA_DSM_POLL=0 only a shared region gives, and
 *             the ranks still fetched or diffed across hosts)
 *   hostmerge two ranks of one host (np 4 under func/hosts.sh: 0 and 2, then
 *             1 and 3) write disjoint bytes of one unit, interleaved, with
 *             no synchronization between them, once for a unit homed on
 *             the other host and once for one homed on their own; after a
 *             barrier the other host's ranks must read both ranks' bytes
 *   excl      (np 4 under func/hosts.sh) a unit homed on rank 0 and written
 *             by rank 2 alone becomes exclusive to their host at a barrier
 *             (rank 2 then writes it with no fault); rank 1 on the other
 *             host reads it (the home tracks it again), then rank 2 writes
 *             it once more with no synchronization in between: after the
 *             next barrier every rank must read rank 2's last value
 *   claims    first-touch homes: each rank writes the units of its own
 *             block of a first-touch allocation (64 units a rank), which
 *             it manages, and must send no message for it (counters, run
 *             with CVIA_DSM_POLL=0); after a barrier each rank writes one
 *             unit of the next rank's block (a claim by message); after
 *             another every unit must be homed at its first writer and read
 *             as written
 * Every rank prints "ok CASE" on success. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

#include <corevia/dsm.h>

static unsigned long cvia_parmacs_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long)ts.tv_sec * 1000000ul + (unsigned long)ts.tv_nsec / 1000ul;
}

static int me, np;

#define FAIL(...) do { fprintf(stderr, "rank %d: FAIL: ", me); fprintf(stderr, __VA_ARGS__); \
                       fputc('\n', stderr); exit(1); } while (0)
#define CHECK(rc) do { int rc_ = (rc); if (rc_) FAIL("%s: %s", #rc, cvia_strerror(rc_)); } while (0)

static int iters(int dflt)
{
    const char *e = getenv("DSM_TEST_ITERS");
    return e ? atoi(e) : dflt;
}

static int t_counter(void)
{
    enum { NC = 4 };
    long *c;
    int lk[NC], n = iters(200);

    /* counters on different homes and locks with different managers */
    CHECK(cvia_dsm_alloc(NC * 4096, CVIA_DSM_HOME_RR, (void **)&c));
    for (int i = 0; i < NC; i++)
        CHECK(cvia_dsm_lock_create(&lk[i]));
    CHECK(cvia_dsm_barrier());
    for (int k = 0; k < n; k++) {
        int i = (k + me) % NC;
        CHECK(cvia_dsm_lock(lk[i]));
        c[i * 512] += 1;
        c[i * 512 + 1 + me] += 1;      /* this rank's share, same unit */
        CHECK(cvia_dsm_unlock(lk[i]));
    }
    CHECK(cvia_dsm_barrier());
    long total = 0;
    for (int i = 0; i < NC; i++) {
        long per = 0;
        total += c[i * 512];
        for (int r = 0; r < np; r++)
            per += c[i * 512 + 1 + r];
        if (per != c[i * 512])
            FAIL("counter %d is %ld but the ranks' shares add to %ld", i, c[i * 512], per);
    }
    if (total != (long)n * np)
        FAIL("counters add to %ld, expected %ld: lost updates", total, (long)n * np);
    /* and once more under the lock alone: each holder sees the last one's value */
    long before = c[0];
    CHECK(cvia_dsm_barrier());
    CHECK(cvia_dsm_lock(lk[0]));
    c[0] += 1;
    CHECK(cvia_dsm_unlock(lk[0]));
    CHECK(cvia_dsm_barrier());
    if (c[0] != before + np)
        FAIL("counter 0 is %ld after the last round, expected %ld", c[0], before + np);
    return 0;
}

static int t_merge(void)
{
    size_t unit = cvia_dsm_unit();
    uint32_t *w;
    unsigned char *b;
    int rounds = iters(20);

    /* one unit homed on the last rank: every other rank writes through diffs */
    CHECK(cvia_dsm_alloc(unit, np - 1, (void **)&w));
    CHECK(cvia_dsm_alloc(unit, CVIA_DSM_HOME_RR, (void **)&b));
    CHECK(cvia_dsm_barrier());
    size_t nw = unit / 4;
    for (int k = 1; k <= rounds; k++) {
        for (size_t i = (size_t)me; i < nw; i += (size_t)np)
            w[i] = (uint32_t)(k * 1000003u + i);
        for (size_t i = (size_t)me; i < unit; i += (size_t)np)
            b[i] = (unsigned char)(k + i);
        CHECK(cvia_dsm_barrier());
        for (size_t i = 0; i < nw; i++)
            if (w[i] != (uint32_t)(k * 1000003u + i))
                FAIL("round %d: word %zu is %u, expected %u (written by rank %zu)", k, i,
                     w[i], (uint32_t)(k * 1000003u + i), i % (size_t)np);
        for (size_t i = 0; i < unit; i++)
            if (b[i] != (unsigned char)(k + i))
                FAIL("round %d: byte %zu is %u, expected %u", k, i, b[i],
                     (unsigned char)(k + i));
        CHECK(cvia_dsm_barrier());
    }
    return 0;
}

static int t_barrier(void)
{
    size_t unit = cvia_dsm_unit(), n = 8 * unit / sizeof(double);
    double *a;
    int rounds = iters(30);

    CHECK(cvia_dsm_alloc(n * sizeof(double), CVIA_DSM_HOME_DEFAULT, (void **)&a));
    CHECK(cvia_dsm_barrier());
    for (int k = 0; k < rounds; k++) {
        int writer = k % np;
        if (me == writer)
            for (size_t i = 0; i < n; i++)
                a[i] = k * 1.5 + (double)i;
        CHECK(cvia_dsm_barrier());
        for (size_t i = 0; i < n; i++)
            if (a[i] != k * 1.5 + (double)i)
                FAIL("round %d: a[%zu] = %g, expected %g (writer %d)", k, i, a[i],
                     k * 1.5 + (double)i, writer);
        CHECK(cvia_dsm_barrier());
    }
    return 0;
}

static int t_migrate(void)
{
    struct rec { long seq; long last; long sum; long hist[64]; } *r;
    int lk, n = iters(100);

    CHECK(cvia_dsm_alloc(sizeof(*r), 0, (void **)&r));
    CHECK(cvia_dsm_lock_create(&lk));
    CHECK(cvia_dsm_barrier());
    for (int k = 0; k < n; k++) {
        CHECK(cvia_dsm_lock(lk));
        long s = r->seq;
        r->seq = s + 1;
        r->sum += s;
        r->last = me;
        r->hist[me]++;
        CHECK(cvia_dsm_unlock(lk));
    }
    CHECK(cvia_dsm_barrier());
    long N = (long)n * np;
    if (r->seq != N || r->sum != N * (N - 1) / 2)
        FAIL("seq %ld sum %ld, expected %ld and %ld", r->seq, r->sum, N, N * (N - 1) / 2);
    for (int i = 0; i < np; i++)
        if (r->hist[i] != n)
            FAIL("rank %d counted %ld, expected %d", i, r->hist[i], n);
    return 0;
}

static int t_errors(void)
{
    int lk, rc;

    CHECK(cvia_dsm_lock_create(&lk));
    rc = cvia_dsm_unlock(lk);
    if (rc != -EPERM)
        FAIL("unlock without lock returned %d, expected -EPERM", rc);
    CHECK(cvia_dsm_lock(lk));
    rc = cvia_dsm_lock(lk);
    if (rc != -EDEADLK)
        FAIL("second lock returned %d, expected -EDEADLK", rc);
    CHECK(cvia_dsm_unlock(lk));
    rc = cvia_dsm_unlock(lk);
    if (rc != -EPERM)
        FAIL("double unlock returned %d, expected -EPERM", rc);
    rc = cvia_dsm_lock(lk + 1000);
    if (rc != -EINVAL)
        FAIL("lock of an unknown id returned %d, expected -EINVAL", rc);
    CHECK(cvia_dsm_barrier());
    return 0;
}

static int t_touch(void)
{
    char *s;
    const char msg[] = "corevia dsm touch\n";
    char path[] = "/tmp/cvia-dsm-touch-XXXXXX";
    int fd;

    CHECK(cvia_dsm_alloc(cvia_dsm_unit(), 0, (void **)&s));
    CHECK(cvia_dsm_barrier());
    if (me == np - 1) {
        if ((fd = mkstemp(path)) < 0 || write(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
            FAIL("temporary file: %s", strerror(errno));
        lseek(fd, 0, SEEK_SET);
        CHECK(cvia_dsm_touch(s, sizeof(msg), 1));
        if (read(fd, s, sizeof(msg)) != (ssize_t)sizeof(msg))
            FAIL("read into touched shared memory: %s", strerror(errno));
        close(fd);
        unlink(path);
    }
    CHECK(cvia_dsm_barrier());
    if (strcmp(s, msg))
        FAIL("read '%s' from shared memory", s);
    return 0;
}

/* Not a check: the cost of an empty barrier and of a lock handed around. */
static int t_latency(void)
{
    int lk, n = iters(2000);
    double t0, t1, t2;
    long *x;

    CHECK(cvia_dsm_alloc(4096, 0, (void **)&x));
    CHECK(cvia_dsm_lock_create(&lk));
    CHECK(cvia_dsm_barrier());
    t0 = (double)cvia_parmacs_clock_us();
    for (int i = 0; i < n; i++)
        CHECK(cvia_dsm_barrier());
    t1 = (double)cvia_parmacs_clock_us();
    for (int i = 0; i < n; i++)
        CHECK(cvia_barrier());
    t2 = (double)cvia_parmacs_clock_us();
    if (me == 0)
        printf("dsm barrier %.1f us, core barrier %.1f us\n", (t1 - t0) / n, (t2 - t1) / n);
    /* the same after 1 ms of work: the service thread has gone to sleep */
    int nw = n / 10;
    double tw = 0, tb = 0;
    for (int i = 0; i < nw; i++) {
        double a = (double)cvia_parmacs_clock_us();
        volatile double z = 0;
        while ((double)cvia_parmacs_clock_us() - a < 1000)
            z += 1;
        double b = (double)cvia_parmacs_clock_us();
        CHECK(cvia_dsm_barrier());
        tb += (double)cvia_parmacs_clock_us() - b;
        tw += b - a;
    }
    if (me == 0)
        printf("after 1 ms of work: dsm barrier %.1f us\n", tb / nw);
    return 0;
}

/* Not a check: the time of a fault that fetches a unit, the home waiting
 * in a barrier (its service thread awake). Rank 1 writes K units each
 * round; after a barrier rank 0 reads one byte of each. */
static int t_fetch(void)
{
    size_t unit = cvia_dsm_unit();
    int K = 256, rounds = iters(20);
    char *a;
    double tot = 0;

    if (np < 2)
        return 0;
    CHECK(cvia_dsm_alloc((size_t)K * unit, 1, (void **)&a));
    CHECK(cvia_dsm_barrier());
    for (int r = 0; r < rounds; r++) {
        if (me == 1)
            for (int k = 0; k < K; k++)
                memset(a + (size_t)k * unit, r + k, unit);
        CHECK(cvia_dsm_barrier());
        if (me == 0) {
            volatile char sink = 0;
            double t0 = (double)cvia_parmacs_clock_us();
            for (int k = 0; k < K; k++)
                sink += a[(size_t)k * unit + (size_t)(r * 7 + k) % unit];
            if (r >= 2)    /* the first rounds make the units tracked */
                tot += (double)cvia_parmacs_clock_us() - t0;
            (void)sink;
        }
        CHECK(cvia_dsm_barrier());
    }
    if (me == 0)
        printf("fetch: unit %zu bytes, %.2f us per fetch (%.1f MB/s)\n", unit,
               tot / ((rounds - 2) * (double)K), (rounds - 2) * (double)K * unit / tot);
    return 0;
}

static int t_big(void)
{
    const char *e = getenv("DSM_TEST_BIG");
    size_t n = (size_t)(e ? atol(e) : 64) << 20, nw = n / sizeof(long);
    long *a;

    CHECK(cvia_dsm_alloc(n, CVIA_DSM_HOME_BLOCK, (void **)&a));
    for (size_t i = nw * (size_t)me / (size_t)np; i < nw * (size_t)(me + 1) / (size_t)np; i++)
        a[i] = (long)(i * 7 + 1);
    CHECK(cvia_dsm_barrier());
    for (size_t i = 0; i < nw; i++)
        if (a[i] != (long)(i * 7 + 1))
            FAIL("word %zu is %ld, expected %ld", i, a[i], (long)(i * 7 + 1));
    return 0;
}

static int t_claims(void)
{
    const size_t unit = cvia_dsm_unit(), per = 64, nu = per * (size_t)np;
    cvia_dsm_stats_t s0, s1;
    char *a;

    CHECK(cvia_dsm_alloc(nu * unit, CVIA_DSM_HOME_FIRST_TOUCH, (void **)&a));
    CHECK(cvia_dsm_barrier());
    /* this rank's block, but its first unit (the previous rank's to write) */
    CHECK(cvia_dsm_stats(&s0));
    for (size_t u = per * (size_t)me + 1; u < per * (size_t)(me + 1); u++)
        *(long *)(a + u * unit) = (long)(u * 3 + 1);
    CHECK(cvia_dsm_stats(&s1));
    /* none of its own; rank 0's service thread may still be sending the
     * barrier's releases (np - 1), and nobody claims from it until the
     * next barrier. Before dsm18b: a claim (and its answer) a unit. */
    if (s1.msgs_sent - s0.msgs_sent >= (uint64_t)np)
        FAIL("claiming %zu units of its own block sent %llu messages", per - 1,
             (unsigned long long)(s1.msgs_sent - s0.msgs_sent));
    if (s1.write_faults - s0.write_faults != per - 1)
        FAIL("%llu write faults for %zu first writes",
             (unsigned long long)(s1.write_faults - s0.write_faults), per - 1);
    CHECK(cvia_dsm_barrier());
    /* the first unit of the next rank's block: claimed from that rank */
    size_t v = per * (size_t)((me + 1) % np);
    *(long *)(a + v * unit) = (long)(v * 3 + 1);
    CHECK(cvia_dsm_barrier());
    for (size_t u = 0; u < nu; u++) {
        int writer = (int)(u / per), h;
        if (u % per == 0)
            writer = (writer + np - 1) % np;
        /* the read learns the home (a rank that did not write the unit
         * asks its manager when it first needs the copy) */
        if (*(long *)(a + u * unit) != (long)(u * 3 + 1))
            FAIL("unit %zu reads %ld, expected %ld", u, *(long *)(a + u * unit),
                 (long)(u * 3 + 1));
        if ((h = cvia_dsm_home_of(a + u * unit)) != writer)
            FAIL("unit %zu homed at %d, first written by rank %d", u, h, writer);
    }
    return 0;
}

/* The race groups across hosts must survive (DESIGN.md, "Why it is still
 * not built"): rank 0's acquire brings a notice for unit b, written by
 * rank 1 (its home, on the other host), while rank 2 (rank 0's host) keeps
 * writing other bytes of b. Whatever rank 0's host does to refresh b, rank
 * 2 must read back its own last write (program order), and after the
 * barrier every rank sees both ranks' bytes. np >= 3. */
static int t_ownbytes(void)
{
    size_t unit = cvia_dsm_unit();
    volatile unsigned char *b;
    volatile unsigned *done;
    int lk, rounds = iters(50);

    if (np < 3)
        FAIL("ownbytes needs 3 ranks or more, not %d", np);
    CHECK(cvia_dsm_alloc(unit, 1, (void **)&b));
    CHECK(cvia_dsm_alloc(unit, 2, (void **)&done));
    CHECK(cvia_dsm_lock_create(&lk));
    CHECK(cvia_dsm_barrier());
    if (me == 1) {
        for (int k = 1; k <= rounds; k++) {
            CHECK(cvia_dsm_lock(lk));
            for (int i = 0; i < 64; i++)
                b[i] = (unsigned char)k;
            CHECK(cvia_dsm_unlock(lk));
        }
    } else if (me == 0) {
        int last = 0;
        for (int k = 1; k <= rounds; k++) {
            CHECK(cvia_dsm_lock(lk));
            int v = b[0];
            for (int i = 1; i < 64; i++)
                if (b[i] != v)
                    FAIL("under the lock, byte %d is %d and byte 0 %d", i, b[i], v);
            if (v < last)
                FAIL("under the lock, the value went back from %d to %d", last, v);
            last = v;
            CHECK(cvia_dsm_unlock(lk));
        }
        done[0] = 1;          /* seen by rank 2 within the poll bound */
    } else if (me == 2) {
        /* until rank 0 is done, at most 10 s: every loop bounded */
        unsigned long end = cvia_parmacs_clock_us() + 10000000ul;
        unsigned v = 0;
        do {
            v = v % 250 + 1;
            for (int i = 128; i < 192; i++)
                b[i] = (unsigned char)v;
            for (int i = 128; i < 192; i++)
                if (b[i] != (unsigned char)v)
                    FAIL("byte %d is %d, but this rank wrote %u there last", i, b[i], v);
        } while (!done[0] && cvia_parmacs_clock_us() < end);
        done[1] = v;
    }
    CHECK(cvia_dsm_barrier());
    for (int i = 0; i < 64; i++)
        if (b[i] != (unsigned char)rounds)
            FAIL("after the barrier, byte %d is %d, expected rank 1's last %d", i, b[i], rounds);
    for (int i = 128; i < 192; i++)
        if (b[i] != (unsigned char)done[1])
            FAIL("after the barrier, byte %d is %d, expected rank 2's last %u", i, b[i], done[1]);
    return 0;
}

/* Under func/hosts.sh with 4 ranks: ranks 0 and 2 share a host, 1 and 3
 * the other. Rank 0 (1) writes a word of a unit homed on the other host,
 * rank 2 (3) waits for it with no synchronization, at most 10 s. */
static int host_partner_sees(void)
{
    volatile uint32_t *w;
    size_t unit = cvia_dsm_unit();

    if (np != 4)
        FAIL("DSM_TEST_EXPECT=groups wants 4 ranks on two hosts, not %d", np);
    CHECK(cvia_dsm_alloc(2 * unit, CVIA_DSM_HOME_RR, (void **)&w));  /* homes 0, 1 */
    CHECK(cvia_dsm_barrier());
    /* rank 0 writes into unit 1 (home rank 1), rank 1 into unit 0 */
    size_t mine = me % 2 == 0 ? unit / 4 : 0;
    if (me < 2) {
        w[mine + 16] = 0xc0ffee00u + (uint32_t)me;
    } else {
        unsigned long end = cvia_parmacs_clock_us() + 10000000ul;
        uint32_t want = 0xc0ffee00u + (uint32_t)(me - 2);
        while (w[mine + 16] != want && cvia_parmacs_clock_us() < end)
            ;
        if (w[mine + 16] != want)
            FAIL("rank %d's write (0x%x) never showed here in 10 s without "
                 "synchronization: the region is not shared with this host's ranks",
                 me - 2, want);
    }
    CHECK(cvia_dsm_barrier());
    return 0;
}

static int t_hostmerge(void)
{
    size_t unit = cvia_dsm_unit();
    unsigned char *b;
    int rounds = iters(20);

    if (np != 4)
        FAIL("hostmerge wants 4 ranks on two hosts, not %d", np);
    /* unit 0 homed on rank 1 (host 2), unit 1 on rank 0 (host 1) */
    CHECK(cvia_dsm_alloc(2 * unit, CVIA_DSM_HOME_RR, (void **)&b));
    CHECK(cvia_dsm_barrier());
    for (int k = 1; k <= rounds; k++) {
        int host = k % 2;                 /* the writing host this round */
        if (me % 2 == host) {
            /* disjoint bytes of both units, interleaved word by word: the
             * two members' writes meet in one page and one twin */
            for (size_t i = (size_t)(me / 2) * 8; i < 2 * unit; i += 16)
                memset(b + i, (int)(unsigned char)(k * 7 + me + i / 16), 8);
        }
        CHECK(cvia_dsm_barrier());
        for (size_t i = 0; i < 2 * unit; i++) {
            size_t w = (i / 8) % 2;       /* which member wrote byte i */
            unsigned char want = (unsigned char)(k * 7 + host + 2 * (int)w + (int)((i & ~(size_t)15) / 16));
            if (b[i] != want)
                FAIL("round %d: byte %zu (unit %zu, written by rank %d) is %u, expected %u",
                     k, i, i / unit, host + 2 * (int)w, b[i], want);
        }
        CHECK(cvia_dsm_barrier());
    }
    return 0;
}

static int t_excl(void)
{
    size_t unit = cvia_dsm_unit();
    int rounds = iters(5);
    uint32_t *x;
    volatile uint32_t *flag;

    if (np != 4)
        FAIL("excl wants 4 ranks on two hosts, not %d", np);
    CHECK(cvia_dsm_alloc((size_t)rounds * unit, 0, (void **)&x));   /* a fresh unit a round */
    CHECK(cvia_dsm_alloc(unit, 2, (void **)&flag));
    CHECK(cvia_dsm_barrier());
    for (int k = 0; k < rounds; k++) {
        volatile uint32_t *xk = x + (size_t)k * unit / 4;
        if (me == 2)
            xk[0] = 100u + (uint32_t)k;
        CHECK(cvia_dsm_barrier());   /* written by its home's host alone: exclusive there */
        CHECK(cvia_dsm_barrier());
        if (me == 1) {
            if (xk[0] != 100u + (uint32_t)k)
                FAIL("round %d: read %u, expected rank 2's %u", k, xk[0], 100u + (uint32_t)k);
            flag[0] = (uint32_t)k + 1;   /* a copy is here now: rank 2 may go on */
        } else if (me == 2) {
            unsigned long end = cvia_parmacs_clock_us() + 10000000ul;
            while (flag[0] != (uint32_t)k + 1 && cvia_parmacs_clock_us() < end)
                ;
            if (flag[0] != (uint32_t)k + 1)
                FAIL("round %d: rank 1's flag never came (within 10 s)", k);
            xk[0] = 200u + (uint32_t)k;
        }
        CHECK(cvia_dsm_barrier());
        if (xk[0] != 200u + (uint32_t)k)
            FAIL("round %d: after the barrier the unit reads %u, expected rank 2's last "
                 "write %u", k, xk[0], 200u + (uint32_t)k);
        CHECK(cvia_dsm_barrier());
    }
    return 0;
}

static int t_levels(void)
{
    const char *want = getenv("DSM_TEST_EXPECT");
    cvia_dsm_stats_t s;

    if (!want || (strcmp(want, "shared") && strcmp(want, "protocol") && strcmp(want, "groups")))
        FAIL("DSM_TEST_EXPECT must be shared, protocol or groups, not '%s'", want ? want : "");
    if (t_counter() || t_merge() || t_barrier() || t_migrate() || t_touch())
        return 1;
    if (!strcmp(want, "groups") && host_partner_sees())
        return 1;
    CHECK(cvia_dsm_stats(&s));
    uint64_t traffic = s.read_faults + s.write_faults + s.fetches + s.twins + s.diffs +
                       s.diffs_applied + s.notices_sent + s.notices_recv + s.rdma_writes;
    if (!s.barriers)
        FAIL("no barrier counted");
    if (!strcmp(want, "shared") && traffic)
        FAIL("expected the region shared on this host, but this rank took %llu faults, "
             "%llu fetches, %llu diffs, %llu notices sent",
             (unsigned long long)(s.read_faults + s.write_faults),
             (unsigned long long)s.fetches, (unsigned long long)s.diffs,
             (unsigned long long)s.notices_sent);
    if (strcmp(want, "shared") && np > 1 && !(s.fetches + s.diffs))
        FAIL("expected the protocol between hosts, but this rank neither fetched nor diffed");
    return 0;
}

static void on_fatal(int err, const char *msg)
{
    printf("rank %d: expected-error: %s (%s)\n", me, msg, cvia_err_name(err));
    fflush(stdout);
}

static int t_death(void)
{
    int lk;
    long *x;

    cvia_dsm_on_fatal(on_fatal);
    CHECK(cvia_dsm_alloc(4096, CVIA_DSM_HOME_RR, (void **)&x));
    CHECK(cvia_dsm_lock_create(&lk));
    CHECK(cvia_dsm_barrier());
    if (me == np - 1)
        _exit(3);     /* dies holding nothing, while the others need it */
    for (;;) {        /* barriers and locks: each must end in an error */
        CHECK(cvia_dsm_lock(lk));
        x[0]++;
        CHECK(cvia_dsm_unlock(lk));
        CHECK(cvia_dsm_barrier());
    }
    return 1;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "counter";
    int rc;

    CHECK(cvia_dsm_init(&argc, &argv));
    me = cvia_dsm_rank();
    np = cvia_dsm_size();
    if (!strcmp(c, "counter"))        rc = t_counter();
    else if (!strcmp(c, "merge"))     rc = t_merge();
    else if (!strcmp(c, "barrier"))   rc = t_barrier();
    else if (!strcmp(c, "migrate"))   rc = t_migrate();
    else if (!strcmp(c, "errors"))    rc = t_errors();
    else if (!strcmp(c, "touch"))     rc = t_touch();
    else if (!strcmp(c, "death"))     rc = t_death();
    else if (!strcmp(c, "latency"))   rc = t_latency();
    else if (!strcmp(c, "fetch"))     rc = t_fetch();
    else if (!strcmp(c, "levels"))    rc = t_levels();
    else if (!strcmp(c, "ownbytes"))  rc = t_ownbytes();
    else if (!strcmp(c, "hostmerge")) rc = t_hostmerge();
    else if (!strcmp(c, "excl"))      rc = t_excl();
    else if (!strcmp(c, "big"))       rc = t_big();
    else if (!strcmp(c, "claims"))    rc = t_claims();
    else if (!strcmp(c, "all"))
        rc = t_counter() || t_merge() || t_barrier() || t_migrate() || t_touch();
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    if (getenv("DSM_TEST_STATS"))
        cvia_dsm_stats_at_exit(!strcmp(getenv("DSM_TEST_STATS"), "json"), NULL);
    CHECK(cvia_dsm_finalize());
    if (!rc)
        printf("ok %s rank %d\n", c, me);
    return rc;
}
