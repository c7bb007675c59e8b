/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* SipHash-2-4, word at a time: two compression rounds per 64-bit word,
 * four finalization rounds (see siphash.h). */
#include <string.h>

#include "util/siphash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3) do {                                   \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);      \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                         \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                         \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);      \
    } while (0)

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

void cvia__sip_init(struct cvia_sip *s, const unsigned char key[16])
{
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);

    s->v0 = k0 ^ 0x736f6d6570736575ull;   /* "somepseudorandomlygeneratedbytes" */
    s->v1 = k1 ^ 0x646f72616e646f6dull;
    s->v2 = k0 ^ 0x6c7967656e657261ull;
    s->v3 = k1 ^ 0x7465646279746573ull;
    s->tail = 0;
    s->len = 0;
}

void cvia__sip_update(struct cvia_sip *s, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3, m;
    unsigned have = (unsigned)(s->len & 7);

    s->len += len;
    if (have) {   /* complete the word a previous call left open */
        while (have < 8 && len) {
            s->tail |= (uint64_t)*p++ << (8 * have++);
            len--;
        }
        if (have < 8)
            goto out;
        m = s->tail;
        s->tail = 0;
        v3 ^= m;
        SIPROUND(v0, v1, v2, v3);
        SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    for (; len >= 8; p += 8, len -= 8) {
        m = load_le64(p);
        v3 ^= m;
        SIPROUND(v0, v1, v2, v3);
        SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    for (unsigned i = 0; i < len; i++)
        s->tail |= (uint64_t)p[i] << (8 * i);
out:
    s->v0 = v0, s->v1 = v1, s->v2 = v2, s->v3 = v3;
}

uint64_t cvia__sip_final(struct cvia_sip *s)
{
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    uint64_t b = s->tail | s->len << 56;

    v3 ^= b;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t cvia__siphash24(const unsigned char key[16], const void *buf, size_t len)
{
    struct cvia_sip s;

    cvia__sip_init(&s, key);
    cvia__sip_update(&s, buf, len);
    return cvia__sip_final(&s);
}
