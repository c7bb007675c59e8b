/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Functional tests: the thread level a test asks of cvia_init_thread. */
#ifndef COREVIA_TESTS_FUNC_THREAD_LEVEL_H
#define COREVIA_TESTS_FUNC_THREAD_LEVEL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>

/* FUNC_THREAD_LEVEL (single, funneled, serialized, multiple; unset:
 * cvia_init, i.e. multiple): the level a test asks of cvia_init_thread.
 * Returns that level, or -1 for a value it does not know. */
static inline int func_thread_level(void)
{
    static const char *const names[] = { "single", "funneled", "serialized", "multiple" };
    const char *v = getenv("FUNC_THREAD_LEVEL");

    if (!v)
        return CVIA_THREAD_MULTIPLE;
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

/* cvia_init at FUNC_THREAD_LEVEL, checking the level granted. */
static inline int func_init(int *argc, char ***argv)
{
    int want = func_thread_level(), got = -1, rc;

    if (want < 0) {
        fprintf(stderr, "FUNC_THREAD_LEVEL: unknown level '%s'\n", getenv("FUNC_THREAD_LEVEL"));
        return -EINVAL;
    }
    if ((rc = cvia_init_thread(argc, argv, want, &got)))
        return rc;
    if (got != want || cvia_query_thread() != want) {
        fprintf(stderr, "thread level %d asked, %d granted, %d queried\n", want, got,
                cvia_query_thread());
        return -EPROTO;
    }
    return 0;
}

#endif
