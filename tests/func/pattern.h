/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Test payloads: a xorshift64 stream from a seed, 8 bytes a step (fast
 * enough for 64 MiB), and its check. Shared by the functional tests. */
#ifndef COREVIA_TESTS_FUNC_PATTERN_H
#define COREVIA_TESTS_FUNC_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void fill(unsigned char *p, size_t len, uint64_t s)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        memcpy(p + i, &s, 8);
    }
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    for (size_t k = 0; i < len; i++, k++)
        p[i] = (unsigned char)(s >> (8 * k));
}

/* The offset of the first wrong byte, or (size_t)-1 if all are right. */
static inline size_t verify(const unsigned char *p, size_t len, uint64_t s)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        if (memcmp(p + i, &s, 8))
            for (size_t k = 0; k < 8; k++)
                if (p[i + k] != (unsigned char)(s >> (8 * k)))
                    return i + k;
    }
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    for (size_t k = 0; i < len; i++, k++)
        if (p[i] != (unsigned char)(s >> (8 * k)))
            return i;
    return (size_t)-1;
}

#endif
