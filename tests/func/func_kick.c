/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * cvia_input_wait wakes on a kick where every peer is on another host
 * (there it sleeps in poll() on the network sockets, where no futex is
 * kicked): on rank 0 a waiter thread sleeps with a long bound (30 s)
 * while the main thread kicks it NKICK times, each once the waiter is back
 * asleep, and counts the waiter's wakes by kick. Two ranks on two hosts
 * (hosts.sh): rank 1 only waits for rank 0's last word, so nothing comes
 * in meanwhile (and what does, rank 0's main thread takes: the waiter
 * progresses nothing). Each kick must be counted before the waiter's 30 s
 * bound; a waiter that ignores kicks until its bound fails on the first
 * one (after 5 s).
 *
 * Mode two: two waiter threads, A and B, each with its own count of
 * wakes. In each of NTWO rounds A sleeps in poll() while B is held (by
 * corevia's test hook, cvia__input_wait_hook: this program links the
 * internal library) after its last look at the kick count and before its
 * poll(); then one kick; once A has woken, B is let go and must wake too
 * (within 5 s, of a 30 s bound). With one eventfd for both, A read the
 * kick back before B slept on it, and B slept its whole bound.
 *
 *   func_kick kick|two    (under hosts.sh, two ranks, CVIA_NET set)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>

#define NKICK 20
#define NTWO 5

static _Atomic int stop, asleep;
static _Atomic long wakes, timeouts, errors;

/* mode two: per waiter (0: A, 1: B) */
extern void (*cvia__input_wait_hook)(void);   /* corevia's, internal */
static _Atomic int asleep2[2];
static _Atomic long wakes2[2], timeouts2[2];
static _Atomic long hold_round, held_round, release_round;
static _Thread_local int is_b;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *waiter(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        uint32_t k = cvia_imm_kicks();
        int rc;
        atomic_store(&asleep, 1);
        rc = cvia_input_wait(k, 30.0);
        atomic_store(&asleep, 0);
        if (rc < 0)
            atomic_fetch_add(&errors, 1);
        else if (rc == 0)
            atomic_fetch_add(&timeouts, 1);
        else if (cvia_imm_kicks() != k)
            atomic_fetch_add(&wakes, 1);
    }
    return NULL;
}

/* B, once per round that asks for it: wait where a lost kick would be
 * lost, until the main thread lets it go (10 s at most) */
static void hold_b(void)
{
    long r = atomic_load(&hold_round);

    if (!is_b || r == 0 || atomic_load(&held_round) == r)
        return;
    atomic_store(&held_round, r);
    for (int s = 0; s < 200000 && atomic_load(&release_round) != r; s++)
        usleep(50);
}

static void *waiter2(void *arg)
{
    int me = (int)(long)arg;

    is_b = me == 1;
    while (!atomic_load(&stop)) {
        uint32_t k;
        int rc;
        /* B: into each wait once its round is set up (10 s at most) */
        for (int s = 0; is_b && s < 200000 && !atomic_load(&stop) &&
             atomic_load(&hold_round) <= atomic_load(&wakes2[1]); s++)
            usleep(50);
        if (atomic_load(&stop))
            break;
        k = cvia_imm_kicks();
        atomic_store(&asleep2[me], 1);
        rc = cvia_input_wait(k, 30.0);
        atomic_store(&asleep2[me], 0);
        if (rc < 0)
            atomic_fetch_add(&errors, 1);
        else if (rc == 0)
            atomic_fetch_add(&timeouts2[me], 1);
        else if (cvia_imm_kicks() != k)
            atomic_fetch_add(&wakes2[me], 1);
    }
    return NULL;
}

/* progress meanwhile (rank 1's traffic, if any), until @n wakes of
 * waiter @me or @s seconds */
static int await_wakes(int me, long n, double s)
{
    double until = now() + s;

    while (atomic_load(&wakes2[me]) < n && now() < until) {
        (void)cvia_progress();
        usleep(100);
    }
    return atomic_load(&wakes2[me]) >= n;
}

static int two_waiters(void)
{
    pthread_t t[2];

    cvia__input_wait_hook = hold_b;
    for (long w = 0; w < 2; w++)
        if (pthread_create(&t[w], NULL, waiter2, (void *)w)) {
            fprintf(stderr, "func_kick: FAIL: pthread_create\n");
            return 1;
        }
    for (long i = 1; i <= NTWO; i++) {
        atomic_store(&hold_round, i);
        /* B held past its last look at the count; A asleep in poll() */
        for (int s = 0; s < 1000000 && atomic_load(&held_round) != i; s++)
            usleep(10);
        for (int s = 0; s < 1000000 && !atomic_load(&asleep2[0]); s++)
            usleep(10);
        for (int s = 0; s < 20; s++) {
            (void)cvia_progress();
            usleep(100);
        }
        if (atomic_load(&held_round) != i) {
            fprintf(stderr, "func_kick: FAIL: round %ld: waiter B never reached the hook\n", i);
            _exit(1);
        }
        cvia_imm_kick();
        if (!await_wakes(0, i, 5.0)) {
            fprintf(stderr, "func_kick: FAIL: round %ld: waiter A did not see the kick\n", i);
            _exit(1);
        }
        atomic_store(&release_round, i);
        if (!await_wakes(1, i, 5.0)) {
            fprintf(stderr, "func_kick: FAIL: round %ld: the kick was lost for waiter B (it "
                    "sleeps on after A woke; %ld wakes, %ld timeouts)\n", i,
                    atomic_load(&wakes2[1]), atomic_load(&timeouts2[1]));
            _exit(1);   /* B still sleeps in corevia */
        }
    }
    atomic_store(&hold_round, 0);
    atomic_store(&stop, 1);
    cvia_imm_kick();
    for (int w = 0; w < 2; w++)
        pthread_join(t[w], NULL);
    cvia__input_wait_hook = NULL;
    /* B sat out the last kick (stop); A saw it unless it had left */
    for (int w = 0; w < 2; w++)
        if (atomic_load(&wakes2[w]) < NTWO || atomic_load(&wakes2[w]) > NTWO + 1 - w ||
            atomic_load(&timeouts2[w]) || atomic_load(&errors)) {
            fprintf(stderr, "func_kick: FAIL: waiter %c: %ld wakes for %d kicks, %ld timeouts, "
                    "%ld errors\n", "AB"[w], atomic_load(&wakes2[w]), NTWO + 1,
                    atomic_load(&timeouts2[w]), atomic_load(&errors));
            return 1;
        }
    printf("func_kick: two waiters, %d rounds, %ld + %ld wakes, 0 timeouts: ok\n", NTWO,
           atomic_load(&wakes2[0]), atomic_load(&wakes2[1]));
    return 0;
}

int main(int argc, char **argv)
{
    pthread_t t;
    int rc, word = 0, two = argc > 1 && !strcmp(argv[1], "two");

    if ((rc = cvia_init(&argc, &argv))) {
        fprintf(stderr, "func_kick: cvia_init: %s\n", cvia_strerror(rc));
        return 1;
    }
    if (cvia_size() != 2 || cvia_peer_local(1 - cvia_rank()) != 0) {
        fprintf(stderr, "func_kick: FAIL: needs two ranks on two hosts (every peer remote)\n");
        return 1;
    }
    if (cvia_rank() == 1) {
        rc = cvia_recv(&word, sizeof(word), 0, 7, NULL);
        if (rc || word != 0x5d) {
            fprintf(stderr, "func_kick: FAIL: rank 0's last word: %s\n", cvia_strerror(rc));
            return 1;
        }
        return cvia_finalize() ? 1 : 0;
    }
    if (two) {
        if (two_waiters())
            return 1;
        goto done;
    }
    if (pthread_create(&t, NULL, waiter, NULL)) {
        fprintf(stderr, "func_kick: FAIL: pthread_create\n");
        return 1;
    }
    for (long i = 1; i <= NKICK; i++) {
        /* the waiter back in its wait (a kick before it sleeps counts too:
         * its count was read before) */
        for (int s = 0; s < 1000000 && !atomic_load(&asleep); s++)
            usleep(10);
        for (int s = 0; s < 20; s++) {   /* most likely inside poll() now */
            (void)cvia_progress();
            usleep(100);
        }
        cvia_imm_kick();
        double until = now() + 5.0;
        while (atomic_load(&wakes) < i && now() < until) {
            (void)cvia_progress();
            usleep(100);
        }
        if (atomic_load(&wakes) < i) {
            fprintf(stderr, "func_kick: FAIL: kick %ld not seen by the waiter in cvia_input_wait "
                    "(%ld wakes, %ld timeouts)\n", i, atomic_load(&wakes), atomic_load(&timeouts));
            _exit(1);   /* the waiter still sleeps in corevia */
        }
    }
    atomic_store(&stop, 1);
    cvia_imm_kick();
    pthread_join(t, NULL);
    if (atomic_load(&wakes) != NKICK + 1 || atomic_load(&timeouts) || atomic_load(&errors)) {
        fprintf(stderr, "func_kick: FAIL: %ld wakes for %d kicks, %ld timeouts, %ld errors\n",
                atomic_load(&wakes), NKICK + 1, atomic_load(&timeouts), atomic_load(&errors));
        return 1;
    }
    printf("func_kick: %d kicks, %ld wakes, 0 timeouts: ok\n", NKICK + 1, atomic_load(&wakes));
done:
    word = 0x5d;
    if ((rc = cvia_send(&word, sizeof(word), 1, 7))) {
        fprintf(stderr, "func_kick: FAIL: cvia_send: %s\n", cvia_strerror(rc));
        return 1;
    }
    return cvia_finalize() ? 1 : 0;
}
