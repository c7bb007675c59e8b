/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The one monotonic clock of corevia and its tools: CLOCK_MONOTONIC, read
 * through the vDSO (no system call), so it is cheap enough for progress
 * loops, and async-signal-safe (the DSM's fault handler reads it).
 * Deadlines and intervals everywhere are taken from it; nothing in the
 * library uses the wall clock. Programs that must not depend on corevia
 * (bench/peers, built against Open MPI or UCX alone) keep their own. */
#ifndef COREVIA_UTIL_CLOCK_H
#define COREVIA_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds since an arbitrary point (boot). */
static inline uint64_t cvia__clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same in seconds, for deadlines kept as doubles. */
static inline double cvia__clock_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
