/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A copy of a few bytes of a length known only at run time, inline: the
 * small message's payload (shm's slot written and read, the provider's
 * copy of an arrival into the application's buffer). */
#ifndef COREVIA_UTIL_COPY_H
#define COREVIA_UTIL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Up to 32 bytes (a payload that shares the line of its slot header) by
 * overlapping word moves; a call into the C library's memcpy, through the
 * PLT and its size dispatch, cost more than the copy. Longer: memcpy. */
static inline void cvia__copy_small(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    if (n > 32) {
        memcpy(d, s, n);
    } else if (n >= 16) {
        uint64_t a, b, c, e;
        memcpy(&a, s, 8);
        memcpy(&b, s + 8, 8);
        memcpy(&c, s + n - 16, 8);
        memcpy(&e, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + 8, &b, 8);
        memcpy(d + n - 16, &c, 8);
        memcpy(d + n - 8, &e, 8);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n) {
        unsigned char a = s[0], b = s[n / 2], c = s[n - 1];
        d[0] = a;
        d[n / 2] = b;
        d[n - 1] = c;
    }
}

#endif
