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
 *   func_kick kick    (under hosts.sh, two ranks, CVIA_NET set)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>

#define NKICK 20

static _Atomic int stop, asleep;
static _Atomic long wakes, timeouts, errors;

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

int main(int argc, char **argv)
{
    pthread_t t;
    int rc, word = 0;

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
    word = 0x5d;
    if ((rc = cvia_send(&word, sizeof(word), 1, 7))) {
        fprintf(stderr, "func_kick: FAIL: cvia_send: %s\n", cvia_strerror(rc));
        return 1;
    }
    printf("func_kick: %d kicks, %ld wakes, 0 timeouts: ok\n", NKICK + 1, atomic_load(&wakes));
    return cvia_finalize() ? 1 : 0;
}
