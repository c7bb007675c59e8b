/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* What threads_conform.c and threads_conform_work.c share. */
#ifndef THREADS_CONFORM_H
#define THREADS_CONFORM_H

#include <corevia/parmacs.h>

#define NPROC  4      /* 3 created by CREATE(fn) x2 and CREATE(fn, 2), and main */
#define ROUNDS 2000
#define NSLOT  8
#define NSUB   50

struct shared {
    LOCKDEC(lock)
    ALOCKDEC(slots, NSLOT)
    BARDEC(bar)
    GSDEC(gs)
    PAUSEDEC(go)
    CONDVARDEC(cv)
    long sum, slot[NSLOT];
    int seen[NPROC], taken[2][NSUB], arrived[3], phase_bad, waiting, woken, bcast;
};

extern struct shared *S;
void tc_work(void);

#endif
