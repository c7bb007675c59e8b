/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Fault injection for the tests (fab.h, fab_fault): built only into the
 * tests' copy of the provider (FAB_FAULT_INJECT), never installed.
 * FAB_FAULT=point[:N] fails the first N (default 1) calls of fab_fault
 * at that point. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab.h"

int fab_fault(const char *point)
{
    static _Atomic long used;
    const char *v = getenv("FAB_FAULT");
    size_t n = strlen(point);
    long max = 1;

    if (!v || strncmp(v, point, n) || (v[n] && v[n] != ':'))
        return 0;
    if (v[n] == ':')
        max = strtol(v + n + 1, NULL, 10);
    return atomic_fetch_add(&used, 1) < max;
}
