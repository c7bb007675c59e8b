/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The out-of-band channel of the fabric tests: two processes exchange
 * their fi_getname names (or any small record) through files, as a
 * program with its own channel would. Header-only, for test programs. */
#ifndef COREVIA_TESTS_FABRIC_NAME_SWAP_H
#define COREVIA_TESTS_FABRIC_NAME_SWAP_H

#include <stdio.h>
#include <unistd.h>

/* Write @len bytes of @buf to the file @mine (whole, by a rename), then
 * wait up to @polls x 10 ms for the file @theirs and read exactly @len
 * bytes of it into @out (@cap bytes). NULL when done, else what failed,
 * for the caller's own report. */
static const char *name_swap(const char *mine, const char *theirs, const void *buf,
                             size_t len, void *out, size_t cap, int polls)
{
    static char why[600];
    char tmp[520];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", mine);
    if (!(f = fopen(tmp, "w")) || fwrite(buf, 1, len, f) != len || fclose(f)) {
        snprintf(why, sizeof(why), "cannot write %s", tmp);
        return why;
    }
    if (rename(tmp, mine)) {
        snprintf(why, sizeof(why), "cannot rename %s", tmp);
        return why;
    }
    for (int i = 0; i < polls && access(theirs, R_OK); i++)
        usleep(10000);
    if (!(f = fopen(theirs, "r"))) {
        snprintf(why, sizeof(why), "nothing from the peer in %s after %d ms", theirs,
                 polls * 10);
        return why;
    }
    size_t n = fread(out, 1, cap, f);
    fclose(f);
    if (n != len) {
        snprintf(why, sizeof(why), "%s holds %zu bytes, not %zu", theirs, n, len);
        return why;
    }
    return NULL;
}

#endif
