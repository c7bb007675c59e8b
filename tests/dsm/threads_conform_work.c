/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The processes of threads_conform.c, in a file of their own. */
#include <sched.h>

#include "threads_conform.h"

void tc_work(void)
{
    int me, s, n;

    GET_PID(me);
    if (me < 0 || me >= NPROC)
        abort();
    LOCK(S->lock);
    S->seen[me]++;
    UNLOCK(S->lock);
    for (int i = 0; i < ROUNDS; i++) {
        LOCK(S->lock);
        S->sum++;
        UNLOCK(S->lock);
        ALOCK(S->slots, i % NSLOT);
        S->slot[i % NSLOT]++;
        AULOCK(S->slots, i % NSLOT);
    }
    /* three phases through one barrier: nobody may see a phase short */
    for (int ph = 0; ph < 3; ph++) {
        LOCK(S->lock);
        S->arrived[ph]++;
        UNLOCK(S->lock);
        BARRIER(S->bar, NPROC);
        LOCK(S->lock);
        if (S->arrived[ph] != NPROC)
            S->phase_bad = 1;
        UNLOCK(S->lock);
    }
    /* two loops of GETSUB: the counter resets after every process saw -1 */
    for (int r = 0; r < 2; r++) {
        for (;;) {
            GETSUB(S->gs, s, NSUB - 1, NPROC);
            if (s < 0)
                break;
            LOCK(S->lock);
            S->taken[r][s]++;
            UNLOCK(S->lock);
        }
        BARRIER(S->bar, NPROC);
    }
    /* process 0 waits until the others wait on the condition variable,
     * then wakes them with one broadcast (a lost wake-up hangs: the
     * test's timeout fails it); they wait for the pause first */
    if (me == 0) {
        SETPAUSE(S->go);
        for (;;) {
            LOCK(S->lock);
            n = S->waiting;
            if (n == NPROC - 1) {
                S->bcast = 1;
                CONDVARBCAST(S->cv);
                UNLOCK(S->lock);
                break;
            }
            UNLOCK(S->lock);
            sched_yield();
        }
    } else {
        WAITPAUSE(S->go);
        LOCK(S->lock);
        S->waiting++;
        while (!S->bcast)
            CONDVARWAIT(S->cv, S->lock);
        S->woken++;
        UNLOCK(S->lock);
    }
}
