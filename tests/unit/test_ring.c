/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of util/ring.h, the single-producer / single-consumer ring of
 * sequence-numbered slots: initial state, full and empty detection, laps,
 * 64-bit position counters far beyond 2^32 (and across 2^64), and a
 * two-thread stress test with payload checks. TAP output. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/ring.h"

#include "tap.h"

/* --------------------------------------------------------------- helpers */

struct test_ring {
    struct cvia_ring r;
    void *mem;
};

static void ring_new(struct test_ring *t, uint32_t nslots, uint32_t slot_size)
{
    size_t bytes = cvia_ring_bytes(nslots, slot_size);

    t->mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!t->mem) {
        printf("Bail out! out of memory\n");
        exit(1);
    }
    memset(t->mem, 0xa5, bytes);   /* init must not rely on zeroed memory */
    cvia_ring_layout(&t->r, t->mem, nslots, slot_size);
    cvia_ring_init(&t->r);
}

/* Make every slot look as the ring does at position @start (a multiple of
 * nslots, any 64-bit value): the state a ring reaches after start/nslots
 * full laps, without running them. */
static void ring_jump(const struct cvia_ring *r, uint64_t start)
{
    for (uint32_t i = 0; i < r->nslots; i++)
        atomic_store_explicit(cvia_ring_seq(r, start + i), start + i, memory_order_relaxed);
}

static uint64_t slot_seq(const void *slot)
{
    return atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)slot, memory_order_relaxed);
}

/* Payload: the words after the sequence word. */
static uint64_t *slot_data(void *slot)
{
    return (uint64_t *)slot + 1;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* -------------------------------------------------- single-threaded tests */

/* The layout (ring.h): slots of slot_size bytes that do not overlap, each on
 * a 64-byte line, inside cvia_ring_bytes(), and no two of 64 consecutive
 * headers in the same L1 set (address bits 6..11), so the headers a stream
 * of small messages polls do not evict one another. With slot k at
 * k * slot_size, the default 16 KiB slot put every header in one set. */
static void test_layout(void)
{
    static const uint32_t sizes[] = { 64, 128, 192, 4096, 4160, 8192, 10240,
                                      16384, 16448, 65536 };
    const uint32_t nslots = 128;

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        struct test_ring t;
        size_t bytes = cvia_ring_bytes(nslots, sizes[k]);
        int good = 1;

        ring_new(&t, nslots, sizes[k]);
        for (uint32_t i = 0; i < nslots && good; i++) {
            uintptr_t a = (uintptr_t)cvia_ring_seq(&t.r, i);
            uintptr_t off = a - (uintptr_t)t.mem;
            uint64_t sets = 0;

            if (a % 64 || off + sizes[k] > bytes ||
                (i && a - (uintptr_t)cvia_ring_seq(&t.r, i - 1) < sizes[k])) {
                tap_diag("slot %u of %u bytes at offset %zu of %zu", i, sizes[k],
                         (size_t)off, bytes);
                good = 0;
            }
            for (uint32_t j = i; j < i + 64 && j < nslots && good; j++) {
                uint64_t set = 1ull << (((uintptr_t)cvia_ring_seq(&t.r, j) >> 6) & 63);
                if (sets & set) {
                    tap_diag("%u-byte slots: header %u in the set of one of %u..%u",
                             sizes[k], j, i, j - 1);
                    good = 0;
                }
                sets |= set;
            }
        }
        tap_ok(good, "layout: %u-byte slots apart, aligned, 64 consecutive headers "
               "in 64 sets", sizes[k]);
        free(t.mem);
    }
}

static void test_init(void)
{
    static const uint32_t ns[] = { 2, 4, 8, 64, 1024 };

    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        struct test_ring t;
        int good = 1;

        ring_new(&t, ns[k], 64);
        for (uint32_t i = 0; i < ns[k]; i++) {
            void *slot = cvia_ring_claim(&t.r, i);
            if (slot_seq(cvia_ring_seq(&t.r, i)) != i ||
                slot != (void *)((unsigned char *)t.mem + (size_t)i * 64) ||
                cvia_ring_peek(&t.r, i) != NULL) {
                good = 0;
                tap_diag("nslots %u: slot %u wrong after init", ns[k], i);
                break;
            }
        }
        tap_ok(good, "init nslots=%u: slot i has seq i, every slot free, none full", ns[k]);
        tap_ok(cvia_ring_claim(&t.r, ns[k]) == NULL,
               "init nslots=%u: position nslots (next lap) is not free yet", ns[k]);
        free(t.mem);
    }
}

/* Fill, detect full, drain, detect empty, at an arbitrary starting
 * position, checking slot addresses and payloads. */
static int fill_drain(const struct cvia_ring *r, uint64_t start, const char *what)
{
    uint32_t n = r->nslots;
    size_t words = (r->slot_size - 8) / 8;

    if (cvia_ring_peek(r, start)) {
        tap_diag("%s: ring not empty at start", what);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t p = start + i;   /* wraps modulo 2^64 like the ring's users */
        void *slot = cvia_ring_claim(r, p);
        if (!slot || slot != (void *)cvia_ring_seq(r, p)) {
            tap_diag("%s: claim(%llu) failed", what, (unsigned long long)p);
            return 0;
        }
        for (size_t w = 0; w < words; w++)
            slot_data(slot)[w] = mix(p * 131 + w);
        /* published slots only: the consumer sees nothing before publish */
        if (cvia_ring_peek(r, p)) {
            tap_diag("%s: peek(%llu) saw an unpublished slot", what, (unsigned long long)p);
            return 0;
        }
        cvia_ring_publish(slot, p);
        if (cvia_ring_claim(r, p)) {
            tap_diag("%s: claim(%llu) again after publish", what, (unsigned long long)p);
            return 0;
        }
    }
    /* full: the producer's next position is refused */
    if (cvia_ring_claim(r, start + n)) {
        tap_diag("%s: claim(%llu) on a full ring", what, (unsigned long long)(start + n));
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t p = start + i;
        void *slot = cvia_ring_peek(r, p);
        if (!slot || slot != (void *)cvia_ring_seq(r, p)) {
            tap_diag("%s: peek(%llu) failed", what, (unsigned long long)p);
            return 0;
        }
        for (size_t w = 0; w < words; w++) {
            if (slot_data(slot)[w] != mix(p * 131 + w)) {
                tap_diag("%s: payload of %llu word %zu", what, (unsigned long long)p, w);
                return 0;
            }
        }
        cvia_ring_release(r, slot, p);
        if (cvia_ring_peek(r, p)) {
            tap_diag("%s: peek(%llu) again after release", what, (unsigned long long)p);
            return 0;
        }
        /* the freed slot is the producer's for the next lap, not this one */
        if (cvia_ring_claim(r, p) || cvia_ring_claim(r, p + n) != slot) {
            tap_diag("%s: slot of %llu not free for lap+1 after release", what,
                     (unsigned long long)p);
            return 0;
        }
    }
    /* empty: the consumer's next position holds nothing */
    if (cvia_ring_peek(r, start + n)) {
        tap_diag("%s: peek(%llu) on an empty ring", what, (unsigned long long)(start + n));
        return 0;
    }
    return 1;
}

static void test_fill_drain(void)
{
    static const uint32_t ns[] = { 2, 4, 8, 64 };

    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        struct test_ring t;
        int good = 1;

        ring_new(&t, ns[k], 128);
        for (uint64_t lap = 0; lap < 3 && good; lap++)
            good = fill_drain(&t.r, lap * ns[k], "fill/drain");
        tap_ok(good, "nslots=%u: fill to full, claim refused; drain to empty, peek "
               "refused; payloads intact, 3 laps", ns[k]);
        free(t.mem);
    }
}

/* Claiming a position other than the producer's current one must fail:
 * the ring only hands out the slot of the lap it is in. */
static void test_wrong_lap(void)
{
    struct test_ring t;
    int good = 1;

    ring_new(&t, 4, 64);
    for (uint64_t p = 4; p < 16; p++)
        good &= cvia_ring_claim(&t.r, p) == NULL;
    for (uint64_t p = 0; p < 16; p++)
        good &= cvia_ring_peek(&t.r, p) == NULL;
    cvia_ring_publish(cvia_ring_claim(&t.r, 0), 0);
    good &= cvia_ring_peek(&t.r, 0) != NULL;
    good &= cvia_ring_peek(&t.r, 4) == NULL;    /* same slot, a later lap */
    good &= cvia_ring_claim(&t.r, 4) == NULL;
    tap_ok(good, "claim/peek of a position of another lap (same slot) is refused");
    free(t.mem);
}

/* Many laps with a changing fill level against a model FIFO. */
static void test_laps(uint32_t nslots, uint64_t start, uint64_t nmsg, const char *what)
{
    struct test_ring t;
    uint64_t head = start, tail = start;   /* producer, consumer positions */
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ nslots;
    int good = 1;

    ring_new(&t, nslots, 64);
    if (start)
        ring_jump(&t.r, start);
    while (tail - start < nmsg && good) {
        /* produce a random burst, up to "full" */
        rng = mix(rng + 1);
        for (uint64_t k = rng % (nslots + 1); k && head - start < nmsg; k--) {
            void *slot = cvia_ring_claim(&t.r, head);
            if (!slot) {
                if (head - tail != nslots) {
                    tap_diag("%s: claim(%llu) refused with %llu of %u full", what,
                             (unsigned long long)head, (unsigned long long)(head - tail),
                             nslots);
                    good = 0;
                }
                break;
            }
            if (head - tail >= nslots) {
                tap_diag("%s: claim(%llu) granted on a full ring", what,
                         (unsigned long long)head);
                good = 0;
                break;
            }
            slot_data(slot)[0] = head;
            slot_data(slot)[1] = ~head;
            cvia_ring_publish(slot, head);
            head++;
        }
        /* consume a random burst, up to "empty" */
        rng = mix(rng + 1);
        for (uint64_t k = rng % (nslots + 1); k && good; k--) {
            void *slot = cvia_ring_peek(&t.r, tail);
            if (!slot) {
                if (head != tail) {
                    tap_diag("%s: peek(%llu) refused with %llu full", what,
                             (unsigned long long)tail, (unsigned long long)(head - tail));
                    good = 0;
                }
                break;
            }
            if (head == tail || slot_data(slot)[0] != tail || slot_data(slot)[1] != ~tail) {
                tap_diag("%s: peek(%llu) gave wrong data", what, (unsigned long long)tail);
                good = 0;
                break;
            }
            cvia_ring_release(&t.r, slot, tail);
            tail++;
        }
    }
    tap_ok(good && tail - start == nmsg, "%s", what);
    free(t.mem);
}

/* The 64-bit positions: one full cycle of the producer/consumer protocol
 * straddling 2^32 and 2^64. */
static void test_big_positions(void)
{
    static const uint32_t ns[] = { 2, 4, 8, 64 };
    char what[160];

    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        uint32_t n = ns[k];
        struct test_ring t;
        int good = 1;
        /* a start position that is a multiple of n, some laps before 2^32 */
        uint64_t s32 = ((uint64_t)UINT32_MAX + 1) - 3ull * n;
        uint64_t s64 = 0 - 3ull * n;   /* 3 laps before the 64-bit wrap */

        ring_new(&t, n, 64);
        ring_jump(&t.r, s32);
        for (int lap = 0; lap < 6 && good; lap++)
            good = fill_drain(&t.r, s32 + (uint64_t)lap * n, "near 2^32");
        tap_ok(good, "nslots=%u: 6 full laps across position 2^32 (start %llu)", n,
               (unsigned long long)s32);

        ring_jump(&t.r, s64);
        good = 1;
        for (int lap = 0; lap < 6 && good; lap++)
            good = fill_drain(&t.r, s64 + (uint64_t)lap * n, "near 2^64");
        tap_ok(good, "nslots=%u: 6 full laps across the 64-bit wrap of the position", n);
        free(t.mem);

        snprintf(what, sizeof(what), "nslots=%u: 100000 messages in random bursts "
                 "starting 2^32 - 1000 laps", n);
        test_laps(n, ((uint64_t)UINT32_MAX + 1) - 1000ull * n, 100000, what);
    }
}

/* More than 2^20 laps of a small ring, quickly (single-threaded): the
 * positions pass 2^22 and every slot's sequence word has cycled. */
static void test_many_laps(void)
{
    struct test_ring t;
    uint64_t pos, laps = (1u << 20) + 17;
    uint32_t n = 4;
    int good = 1;

    ring_new(&t, n, 32);
    for (pos = 0; pos < laps * n && good; pos++) {
        void *slot = cvia_ring_claim(&t.r, pos);
        void *got;
        if (!slot) {
            good = 0;
            break;
        }
        slot_data(slot)[0] = pos;
        cvia_ring_publish(slot, pos);
        got = cvia_ring_peek(&t.r, pos);
        if (got != slot || slot_data(got)[0] != pos || cvia_ring_peek(&t.r, pos + 1)) {
            good = 0;
            break;
        }
        cvia_ring_release(&t.r, got, pos);
    }
    if (!good)
        tap_diag("failed at position %llu", (unsigned long long)pos);
    tap_ok(good, "nslots=4: %llu laps one message at a time", (unsigned long long)laps);
    for (uint32_t i = 0; i < n && good; i++)
        good = slot_seq(cvia_ring_seq(&t.r, laps * n + i)) == laps * n + i;
    tap_ok(good, "after the laps, slot i's seq is lap*nslots + i");
    free(t.mem);
}

/* ------------------------------------------------- two-thread stress test */

struct stress {
    struct cvia_ring r;
    uint64_t nmsg;
    uint64_t start;
    /* results, written by their thread before it ends */
    uint64_t bad_at;            /* consumer: first bad message + 1, 0 if none */
    uint64_t received;
    uint64_t prod_yields, cons_yields;
};

static void *producer(void *arg)
{
    struct stress *s = arg;
    size_t words = (s->r.slot_size - 8) / 8;
    uint64_t yields = 0;

    for (uint64_t m = 0; m < s->nmsg; m++) {
        uint64_t pos = s->start + m;
        void *slot;
        unsigned spins = 0;

        while (!(slot = cvia_ring_claim(&s->r, pos))) {
            /* 2 vCPUs, time-sliced: let the consumer run */
            if (++spins > 64) {
                sched_yield();
                yields++;
                spins = 0;
            }
        }
        uint64_t *d = slot_data(slot);
        /* word 0: message number; word 1: how many words are filled;
         * then a pattern derived from both */
        size_t len = 2 + (size_t)(mix(m) % (words - 1));   /* 2..words */
        d[0] = m;
        d[1] = len;
        for (size_t w = 2; w < len; w++)
            d[w] = mix(m ^ (w << 48));
        cvia_ring_publish(slot, pos);
    }
    s->prod_yields = yields;
    return NULL;
}

static void *consumer(void *arg)
{
    struct stress *s = arg;
    size_t words = (s->r.slot_size - 8) / 8;
    uint64_t yields = 0;
    uint64_t m;

    for (m = 0; m < s->nmsg; m++) {
        uint64_t pos = s->start + m;
        void *slot;
        unsigned spins = 0;

        while (!(slot = cvia_ring_peek(&s->r, pos))) {
            if (++spins > 64) {
                sched_yield();
                yields++;
                spins = 0;
            }
        }
        const uint64_t *d = slot_data(slot);
        int ok = d[0] == m && d[1] >= 2 && d[1] <= words;
        for (size_t w = 2; ok && w < d[1]; w++)
            ok = d[w] == mix(m ^ (w << 48));
        if (!ok) {
            s->bad_at = m + 1;
            /* release anyway so that the producer can finish */
        }
        cvia_ring_release(&s->r, slot, pos);
        if (s->bad_at)
            break;
    }
    if (s->bad_at) {
        /* drain what the producer still sends, without checking */
        for (m++; m < s->nmsg; m++) {
            void *slot;
            while (!(slot = cvia_ring_peek(&s->r, s->start + m)))
                sched_yield();
            cvia_ring_release(&s->r, slot, s->start + m);
        }
    }
    s->received = m;
    s->cons_yields = yields;
    return NULL;
}

static void test_stress(uint32_t nslots, uint32_t slot_size, uint64_t nmsg, uint64_t start)
{
    struct test_ring t;
    struct stress s;
    pthread_t pt, ct;
    int good;

    ring_new(&t, nslots, slot_size);
    if (start)
        ring_jump(&t.r, start);
    memset(&s, 0, sizeof(s));
    s.r = t.r;
    s.nmsg = nmsg;
    s.start = start;
    if (pthread_create(&ct, NULL, consumer, &s) || pthread_create(&pt, NULL, producer, &s)) {
        printf("Bail out! pthread_create failed\n");
        exit(1);
    }
    pthread_join(pt, NULL);
    pthread_join(ct, NULL);
    if (s.bad_at)
        tap_diag("first bad message: %llu", (unsigned long long)(s.bad_at - 1));
    good = !s.bad_at && s.received == nmsg;
    /* afterwards the ring is empty and the producer owns every slot */
    good &= cvia_ring_peek(&t.r, start + nmsg) == NULL;
    for (uint32_t i = 0; i < nslots; i++)
        good &= cvia_ring_claim(&t.r, start + nmsg + i) != NULL;
    tap_ok(good, "2 threads, nslots=%u slot_size=%u%s: %llu messages in order, payloads "
           "intact, ring empty after (yields: producer %llu, consumer %llu)",
           nslots, slot_size, start ? ", positions across 2^32" : "",
           (unsigned long long)nmsg, (unsigned long long)s.prod_yields,
           (unsigned long long)s.cons_yields);
    free(t.mem);
}

/* ------------------------------------------------------------------ main */

/* Fewer messages under sanitizers (TSan is ~20x slower); -DSTRESS_SCALE=N
 * overrides. */
#ifndef STRESS_SCALE
#if defined(__SANITIZE_THREAD__)
#define STRESS_SCALE 10
#elif defined(__SANITIZE_ADDRESS__)
#define STRESS_SCALE 4
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_SCALE 10
#elif __has_feature(address_sanitizer)
#define STRESS_SCALE 4
#endif
#endif
#endif
#ifndef STRESS_SCALE
#define STRESS_SCALE 1
#endif

int main(void)
{
    /* enough handoffs to exercise every interleaving, few enough to stay
     * bounded when the machine is loaded (2 vCPUs, other tests running) */
    const uint64_t base = 400000 / STRESS_SCALE;

    printf("1..%d\n", 10 + 10 + 4 + 1 + 12 + 2 + 4);
    fflush(stdout);
    test_layout();              /* 10 */
    test_init();                /* 10 */
    test_fill_drain();          /* 4 */
    test_wrong_lap();           /* 1 */
    test_big_positions();       /* 12 */
    test_many_laps();           /* 2 */
    test_stress(2, 64, base / 2, 0);                        /* 4 */
    test_stress(8, 64, base, 0);
    test_stress(64, 256, base, 0);
    test_stress(8, 128, base / 4, ((uint64_t)UINT32_MAX + 1) - 8 * 1000);
    return tap_failed ? 1 : 0;
}
