/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A SPLASH-2-style program in PARMACS, built through m4 (c.m4.corevia and
 * c.m4.null): ids from a lock, self-scheduling with a global subscript, a
 * lock-protected sum, a pause flag, barriers, and the thread semantics of
 * process creation: each process must see the private globals (and private
 * heap) that main had when it created it. Shared memory and locks made
 * after the first creation ("late": by main between two creations, and by
 * every process in its own code) must work everywhere, and processes
 * created after main's late allocation must hold main's pointer to it.
 * Prints "ok m4" on success.
 * (m4 expands macro names in comments too: they are spelled in lower case
 * here.) */
MAIN_ENV
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NITEMS 400
#define NLATE  3000          /* longs in each process's own block: several units */
#define NMID   1500          /* longs in main's block between two creations */

struct GlobalMemory {
    LOCKDEC(idlock)
    LOCKDEC(sumlock)
    BARDEC(start)
    GSDEC(gs)
    PAUSEDEC(done)
    ALOCKDEC(slots, 8)
    int  id;
    long sum;
    long seen[64];
    long slot[8];
    LOCKDEC(midlock)
    long *mid;               /* main's late block */
    long midtaken;
    long *late[64];          /* each process's own block */
    LOCKDEC(latelock[64])    /* and its own lock, made by that process */
    long latecount[64];
} *Global;

int  P = 0;
int  magic;          /* private: different at each creation */
long *table;         /* private heap, filled by main */
long *Mid;           /* private copy of main's late pointer (NULL before it) */

void SlaveStart()
{
    int MyNum, s, me = magic - 100;
    long local = 0;

    LOCK(Global->idlock)
    MyNum = Global->id++;
    UNLOCK(Global->idlock)
    LOCK(Global->sumlock)
    Global->seen[me] += 1;
    UNLOCK(Global->sumlock)
    BARRIER(Global->start, P)
    /* late: a block and a lock of our own, published for the others */
    long *mine = (long *) G_MALLOC(NLATE * sizeof(long));
    for (int j = 0; j < NLATE; j++)
        mine[j] = (long)MyNum * 100000 + j;
    LOCKINIT(Global->latelock[MyNum])
    Global->late[MyNum] = mine;
    if (Mid && Mid != Global->mid)
        Global->latecount[MyNum] = -1000;   /* replay lost main's pointer */
    BARRIER(Global->start, P)
    for (int k = 0; k < P; k++) {
        long *b = Global->late[k], bad = 0;
        for (int j = 0; j < NLATE; j++)
            bad += b[j] != (long)k * 100000 + j;
        LOCK(Global->latelock[k])
        Global->latecount[k] += bad ? 1000 : 1;
        UNLOCK(Global->latelock[k])
    }
    LOCK(Global->midlock)
    for (int j = 0; j < NMID; j++)
        if (Global->mid[j] != 7L * j)
            Global->midtaken += 1000;
    Global->midtaken += 1;
    UNLOCK(Global->midlock)
    for (;;) {
        GETSUB(Global->gs, s, NITEMS - 1, P)
        if (s < 0)
            break;
        local += (long)s * table[s % 16];
        ALOCK(Global->slots, s % 8)
        Global->slot[s % 8] += 1;
        AULOCK(Global->slots, s % 8)
    }
    LOCK(Global->sumlock)
    Global->sum += local;
    UNLOCK(Global->sumlock)
    BARRIER(Global->start, P)
    if (MyNum == P - 1)
        SETPAUSE(Global->done)
}

/* main's block, made between the first and the second creation */
void MakeMid()
{
    Mid = (long *) G_MALLOC(NMID * sizeof(long));
    for (int j = 0; j < NMID; j++)
        Mid[j] = 7L * j;
    LOCKINIT(Global->midlock)
    Global->mid = Mid;
}

int main(int argc, char *argv[])
{
    unsigned long t0, t1;
    long want = 0;
    int bad = 0;

    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            P = atoi(argv[++i]);
    MAIN_INITENV(,1000000)
    if (!P)
        P = CVIA_PARMACS_NPROCS();
    CLOCK(t0)
    Global = (struct GlobalMemory *) G_MALLOC(sizeof(struct GlobalMemory));
    LOCKINIT(Global->idlock)
    LOCKINIT(Global->sumlock)
    BARINIT(Global->start)
    GSINIT(Global->gs)
    PAUSEINIT(Global->done)
    ALOCKINIT(Global->slots, 8)
    Global->id = 0;
    table = malloc(16 * sizeof(long));
    for (int i = 0; i < 16; i++)
        table[i] = 3 * i + 1;
    for (int i = 1; i < P; i++) {
        magic = 100 + i;
        CREATE(SlaveStart)
        if (i == 1)
            MakeMid();   /* late: processes 2.. replay it and must get the same */
    }
    if (P == 1)
        MakeMid();
    magic = 100;
    SlaveStart();
    WAITPAUSE(Global->done)
    WAIT_FOR_END(P - 1)
    CLOCK(t1)
    for (long s = 0; s < NITEMS; s++)
        want += s * table[s % 16];
    if (Global->sum != want) {
        printf("sum %ld, expected %ld\n", Global->sum, want);
        bad = 1;
    }
    for (int i = 0; i < P; i++)
        if (Global->seen[i] != 1) {
            printf("process %d saw magic %d times (creation lost its private globals)\n", i,
                   (int)Global->seen[i]);
            bad = 1;
        }
    for (int k = 0; k < P; k++)
        if (Global->latecount[k] != P) {
            printf("process %d's late block or lock: count %ld, expected %d\n", k,
                   Global->latecount[k], P);
            bad = 1;
        }
    if (Global->midtaken != P) {
        printf("main's late block: %ld, expected %d\n", Global->midtaken, P);
        bad = 1;
    }
    long slots = 0;
    for (int i = 0; i < 8; i++)
        slots += Global->slot[i];
    if (slots != NITEMS) {
        printf("slots add to %ld, expected %d\n", slots, NITEMS);
        bad = 1;
    }
    if (!bad)
        printf("ok m4 %d processes (%lu us)\n", P, t1 - t0);
    fflush(stdout);
    if (bad)
        exit(1);
    MAIN_END
}
