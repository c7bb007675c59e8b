/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The message-path lock's bias at CVIA_THREAD_MULTIPLE (util/mlock.h):
 * the thread that set the level takes the locks with plain stores (the
 * spinlock word stays 0 while it holds one) until another thread takes
 * one; that revocation waits for the owner's biased sections, and from
 * then on both threads exclude each other through the spinlock.
 *
 * Each round: the owner runs nested sections (a inside b, and trylock)
 * that move two counters together; partway through, a second thread
 * starts doing the same. Inside every section the two counters must be
 * equal and a third, written only inside, must hold the writer's mark
 * until it leaves; at the end every increment must be there.
 *
 *   test_mlock [ROUNDS]   (default 200)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "util/mlock.h"
#include "tap.h"

#define N_OWNER 20000
#define N_OTHER 20000

static cvia_mlock_t a, b;
static long x, y, inside_bad;
static int mark;
static atomic_int other_started;

/* One section: a, then b nested (or b alone by trylock, every 3rd). */
static void section(int who, long i)
{
    int use_try = i % 3 == 0;

    if (use_try) {
        while (!cvia_mlock_trylock(&b))
            cvia_cpu_relax();
    } else {
        cvia_mlock_lock(&a);
        cvia_mlock_lock(&b);
    }
    mark = who;
    if (x != y)
        inside_bad++;
    x++;
    for (volatile int k = 0; k < 8; k++)
        ;
    if (mark != who)
        inside_bad++;
    y++;
    if (use_try) {
        cvia_mlock_unlock(&b);
    } else {
        cvia_mlock_unlock(&b);
        cvia_mlock_unlock(&a);
    }
}

static void *other(void *arg)
{
    (void)arg;
    atomic_store(&other_started, 1);
    for (long i = 0; i < N_OTHER; i++)
        section(2, i);
    return NULL;
}

/* A trylock of a lock its caller already holds fails, biased or not (the
 * spinlock's word says held): progress tries its locks, and a thread that
 * re-enters it (a signal handler, a callback) must not take one twice.
 * Then a second thread revokes the bias (it hangs on a depth left at 1 by
 * a second entry: alarm). */
static void *take_b(void *arg)
{
    (void)arg;
    cvia_mlock_lock(&b);
    cvia_mlock_unlock(&b);
    return NULL;
}

static void trylock_held(void)
{
    pthread_t t;
    int again, during;

    cvia__mlock_set_level(CVIA_THREAD_MULTIPLE, 0);
    cvia_mlock_init(&a);
    cvia_mlock_init(&b);
    alarm(60);
    cvia_mlock_lock(&a);
    if ((again = cvia_mlock_trylock(&a)))
        cvia_mlock_unlock(&a);   /* what its caller does with a lock it got */
    /* the second thread's revocation waits for this hold: the owner's
     * trylock of @a then finds the bias REVOKING */
    if (pthread_create(&t, NULL, take_b, NULL)) {
        perror("pthread_create");
        exit(1);
    }
    while (atomic_load(&cvia__mlock_bias) == CVIA_BIAS_ON)
        cvia_cpu_relax();
    if ((during = cvia_mlock_trylock(&a)))
        cvia_mlock_unlock(&a);
    cvia_mlock_unlock(&a);
    pthread_join(t, NULL);   /* alarm: the depth never came back to 0 */
    alarm(0);
    tap_ok(!again, "the owner's trylock of a lock it holds biased fails");
    tap_ok(!during, "... and fails while another thread revokes the bias");
    tap_ok(atomic_load(&cvia__mlock_depth) == 0 && !atomic_load(&a.l.held) &&
           atomic_load(&cvia__mlock_bias) == CVIA_BIAS_OFF,
           "the revocation ended with no lock held");
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    int biased_seen = 1, held_word = 0, bad = 0, off_after = 1, sum_ok = 1;

    printf("1..7\n");
    trylock_held();
    for (int r = 0; r < rounds; r++) {
        pthread_t t;
        long start = (r * 7919) % N_OWNER;   /* where the other thread starts */

        cvia__mlock_set_level(CVIA_THREAD_MULTIPLE, 0);
        cvia_mlock_init(&a);
        cvia_mlock_init(&b);
        x = y = inside_bad = 0;
        atomic_store(&other_started, 0);
        /* alone: biased, the spinlock word untouched */
        cvia_mlock_lock(&a);
        if (atomic_load(&cvia__mlock_bias) != CVIA_BIAS_ON || !a.biased)
            biased_seen = 0;
        if (atomic_load(&a.l.held))
            held_word = 1;
        cvia_mlock_unlock(&a);
        for (long i = 0; i < N_OWNER; i++) {
            if (i == start && pthread_create(&t, NULL, other, NULL)) {
                perror("pthread_create");
                return 1;
            }
            section(1, i);
        }
        pthread_join(t, NULL);
        if (atomic_load(&cvia__mlock_bias) != CVIA_BIAS_OFF)
            off_after = 0;
        if (x != N_OWNER + N_OTHER || y != x)
            sum_ok = 0;
        bad += (int)inside_bad;
    }
    tap_ok(biased_seen && !held_word, "the owner alone takes a lock biased: no spinlock word "
           "written");
    tap_ok(off_after, "a second thread's lock revokes the bias for good");
    tap_ok(!bad, "no two sections overlapped across the revocation (%d seen) in %d rounds",
           bad, rounds);
    tap_ok(sum_ok, "every increment of both threads is there");
    return tap_failed ? 1 : 0;
}
