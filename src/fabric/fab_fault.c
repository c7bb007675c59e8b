/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Fault injection for the tests (fab.h, fab_fault): built only into the
 * tests' copy of the provider (FAB_FAULT_INJECT), never installed.
 * FAB_FAULT=point[:N] fails the first N (default 1) calls of fab_fault
 * at that point; a test that changes FAB_FAULT starts the count again
 * (read at each call: a test sets it between stages, with no other thread
 * in the provider). */
#include <stdlib.h>
#include <string.h>

#include "fabric/fab.h"

int fab_fault(const char *point)
{
    static char last[64];
    static long used;
    const char *v = getenv("FAB_FAULT");
    size_t n = strlen(point);
    long max = 1;

    if (!v || strncmp(v, point, n) || (v[n] && v[n] != ':'))
        return 0;
    if (strncmp(v, last, sizeof(last) - 1)) {   /* a new setting */
        strncpy(last, v, sizeof(last) - 1);
        used = 0;
    }
    if (v[n] == ':')
        max = strtol(v + n + 1, NULL, 10);
    return used++ < max;
}
