/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The PARMACS threads mode (-DCVIA_PARMACS_THREADS) macro by macro, in two
 * files (threads_conform_work.c has the processes' code), since its state
 * must be one copy across a program's files: both CREATE conventions and
 * both WAIT_FOR_END counts, GET_PID numbers, G_MALLOC zeroed and aligned,
 * LOCK, lock arrays, BARRIER(b, n) reused across phases, GETSUB handing
 * out every subscript once and resetting, a pause and a condition
 * variable. Prints "ok threads" and exits 0, or names what failed. */
#include <stdint.h>

#include "threads_conform.h"

struct shared *S;

static int fail(const char *what)
{
    printf("threads_conform: %s\n", what);
    return 1;
}

int main(void)
{
    int bad = 0;

    MAIN_INITENV(, 0);
    S = G_MALLOC(sizeof(*S) + 100);
    if ((uintptr_t)S % 4096)
        bad |= fail("G_MALLOC not page-aligned");
    for (size_t i = 0; i < sizeof(*S); i++)
        if (((unsigned char *)S)[i])
            return fail("G_MALLOC not zeroed");
    LOCKINIT(S->lock);
    ALOCKINIT(S->slots, NSLOT);
    BARINIT(S->bar, NPROC);
    GSINIT(S->gs);
    PAUSEINIT(S->go);
    CONDVARINIT(S->cv);

    /* ANL: one thread per CREATE(fn), the creator waits for the number
     * created; Splash-3: CREATE(fn, P) runs fn in the caller as well and
     * WAIT_FOR_END gets the total (one more than is left to join) */
    CREATE(tc_work);
    CREATE(tc_work);
    CREATE(tc_work, 2);
    WAIT_FOR_END(NPROC);

    for (int i = 0; i < NPROC; i++)
        if (S->seen[i] != 1)
            bad |= fail("GET_PID: a process number seen other than once");
    if (S->sum != (long)NPROC * ROUNDS)
        bad |= fail("LOCK: lost updates");
    for (int k = 0; k < NSLOT; k++)
        if (S->slot[k] != (long)NPROC * ROUNDS / NSLOT)
            bad |= fail("ALOCK: lost updates");
    for (int r = 0; r < 2; r++)
        for (int s = 0; s < NSUB; s++)
            if (S->taken[r][s] != 1)
                bad |= fail("GETSUB: a subscript not handed out exactly once");
    if (S->phase_bad)
        bad |= fail("BARRIER: a process passed before all arrived");
    if (S->woken != NPROC - 1 || !S->go.flag)
        bad |= fail("CONDVAR or pause: not every waiter woke");
    if (!bad)
        printf("ok threads\n");
    return bad;
}
