/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Polling on a shared flag with no synchronization (issue 18): the
 * processes pass a token round a ring by spinning on a shared turn
 * variable, with no lock, barrier or pause between the start and the end,
 * as SPLASH programs wait for a flag. Each hop must be seen in bounded time
 * (CVIA_DSM_POLL): a process that does not see its turn within 60 s stops
 * with a message. The turn lives in a unit homed on the first process, so
 * both a home writer and writers elsewhere are exercised; it counts the
 * hops (round * P + process), so a hop seen twice or skipped is noticed.
 * Only the turn is read before the end: the DSM bounds when a write is
 * seen, it does not order two unsynchronized writes (see cvia-dsm(7)).
 * Prints "ok poll" on success.
 * (m4 expands macro names in comments too: they are spelled in lower case
 * here.) */
MAIN_ENV
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 10
#define LIMIT_US 60000000UL

struct GlobalMemory {
    LOCKDEC(idlock)
    BARDEC(start)
    int  id;
    volatile long turn;          /* hops so far: process turn % P holds the token */
    long mine[64];               /* hops each process made */
} *Global;

int P = 0;

void SlaveStart()
{
    int MyNum;
    unsigned long t0, t;

    LOCK(Global->idlock)
    MyNum = Global->id++;
    UNLOCK(Global->idlock)
    BARRIER(Global->start, P)
    for (int r = 0; r < ROUNDS; r++) {
        CLOCK(t0)
        long want = (long)r * P + MyNum, seen;
        while ((seen = Global->turn) != want) {
            CLOCK(t)
            if (seen > want || seen < want - P) {
                printf("process %d: round %d: turn %ld, expected at most %ld and at "
                       "least %ld\n", MyNum, r, seen, want, want - P);
                fflush(stdout);
                exit(1);
            }
            if (t - t0 > LIMIT_US) {
                printf("process %d: round %d: turn %ld never became %ld in 60 s\n",
                       MyNum, r, seen, want);
                fflush(stdout);
                exit(1);
            }
        }
        Global->mine[MyNum] += 1;
        Global->turn = want + 1;
    }
    BARRIER(Global->start, P)
}

int main(int argc, char *argv[])
{
    int bad = 0;

    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            P = atoi(argv[++i]);
    MAIN_INITENV(,1000000)
    if (!P)
        P = CVIA_PARMACS_NPROCS();
    Global = (struct GlobalMemory *) G_MALLOC(sizeof(struct GlobalMemory));
    LOCKINIT(Global->idlock)
    BARINIT(Global->start)
    Global->id = 0;
    Global->turn = 0;
    for (int i = 1; i < P; i++)
        CREATE(SlaveStart)
    SlaveStart();
    WAIT_FOR_END(P - 1)
    if (Global->turn != (long)ROUNDS * P) {
        printf("%ld hops, expected %ld\n", Global->turn, (long)ROUNDS * P);
        bad = 1;
    }
    for (int i = 0; i < P; i++)
        if (Global->mine[i] != ROUNDS) {
            printf("process %d made %ld hops, expected %d\n", i, Global->mine[i], ROUNDS);
            bad = 1;
        }
    if (!bad)
        printf("ok poll %d processes\n", P);
    fflush(stdout);
    if (bad)
        exit(1);
    MAIN_END
}
