/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* NH, two Toeplitz iterations (see nh.h): a scalar loop over 16-byte
 * blocks, an AVX2 loop over 64-byte blocks (four 32x32->64 products per
 * instruction) and an AVX-512 one over 128 (eight; with AVX-512BW for the
 * masked last step), the widest the CPU
 * has chosen once at the first call; cvia__nh2v, the same over a
 * datagram's pieces (header, extension, payload) in one pass, fused
 * with AVX-512 (one reduction of the lanes instead of one per piece);
 * cvia__nh2c, NH and a copy of the bytes hashed in one pass. */
#include <string.h>

#include "util/nh.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static inline uint32_t le32(const unsigned char *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

/* One 16-byte block: both iterations, key words k[0..3] and k[4..7]. */
static inline void nh_block(const unsigned char *p, const uint32_t *k, uint64_t *a0, uint64_t *a1)
{
    uint32_t m0 = le32(p), m1 = le32(p + 4), m2 = le32(p + 8), m3 = le32(p + 12);

    *a0 += (uint64_t)(uint32_t)(m0 + k[0]) * (uint32_t)(m1 + k[1]) +
           (uint64_t)(uint32_t)(m2 + k[2]) * (uint32_t)(m3 + k[3]);
    *a1 += (uint64_t)(uint32_t)(m0 + k[4]) * (uint32_t)(m1 + k[5]) +
           (uint64_t)(uint32_t)(m2 + k[6]) * (uint32_t)(m3 + k[7]);
}

/* The blocks from @p on, the last one zero-padded. */
static void nh_tail(const unsigned char *p, size_t len, const uint32_t *k, uint64_t *a0,
                    uint64_t *a1)
{
    for (; len >= 16; p += 16, len -= 16, k += 4)
        nh_block(p, k, a0, a1);
    if (len) {
        unsigned char last[16] = { 0 };
        memcpy(last, p, len);
        nh_block(last, k, a0, a1);
    }
}

void cvia__nh2_scalar(const void *msg, size_t len, const uint32_t *key, uint64_t out[2])
{
    uint64_t a0 = 0, a1 = 0;

    nh_tail(msg, len, key, &a0, &a1);
    out[0] = a0;
    out[1] = a1;
}

#if defined(__x86_64__) && !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
__attribute__((target("avx2")))
void cvia__nh2_avx2(const void *msg, size_t len, const uint32_t *key, uint64_t out[2])
{
    const unsigned char *p = msg;
    const uint32_t *k = key;
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    __m256i t0 = _mm256_setzero_si256(), t1 = _mm256_setzero_si256();
    uint64_t lane[4], a0, a1;

    /* 64 bytes per round, two independent sums per iteration */
    for (; len >= 64; p += 64, len -= 64, k += 16) {
        __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
        __m256i x = _mm256_add_epi32(m, _mm256_loadu_si256((const __m256i *)(const void *)k));
        __m256i y = _mm256_add_epi32(m, _mm256_loadu_si256((const __m256i *)(const void *)(k + 4)));
        __m256i u = _mm256_add_epi32(n, _mm256_loadu_si256((const __m256i *)(const void *)(k + 8)));
        __m256i v = _mm256_add_epi32(n, _mm256_loadu_si256((const __m256i *)(const void *)(k + 12)));
        s0 = _mm256_add_epi64(s0, _mm256_mul_epu32(x, _mm256_srli_epi64(x, 32)));
        s1 = _mm256_add_epi64(s1, _mm256_mul_epu32(y, _mm256_srli_epi64(y, 32)));
        t0 = _mm256_add_epi64(t0, _mm256_mul_epu32(u, _mm256_srli_epi64(u, 32)));
        t1 = _mm256_add_epi64(t1, _mm256_mul_epu32(v, _mm256_srli_epi64(v, 32)));
    }
    s0 = _mm256_add_epi64(s0, t0);
    s1 = _mm256_add_epi64(s1, t1);
    _mm256_storeu_si256((__m256i *)(void *)lane, s0);
    a0 = lane[0] + lane[1] + lane[2] + lane[3];
    _mm256_storeu_si256((__m256i *)(void *)lane, s1);
    a1 = lane[0] + lane[1] + lane[2] + lane[3];
    nh_tail(p, len, k, &a0, &a1);
    out[0] = a0;
    out[1] = a1;
}

/* AVX-512: 128 bytes per round, eight products per instruction; the last
 * bytes (under 64) in one masked step: the message zero-padded to its
 * 16-byte block, no key word read past the last block's, and the
 * products of lanes past the last block left out (zero words there would
 * still add key products).
 *
 * The loop is bound by the vector pipes (Zen 4: eight 512-bit operations
 * per 64 bytes, two iterations of add, word swap, multiply, accumulate),
 * so it loads each key word once: the key shifted by four words (the
 * second iteration's) is made from two loaded vectors with valignd
 * instead of two more unaligned loads, and half the word swaps are
 * vpshufd, which runs beside the shifts. The key vector carried to the
 * next round is loaded only while a whole round follows, so no word past
 * CVIA_NH_KEY_WORDS is read. 8-10 % fewer cycles than loading both keys
 * (BENCHMARKS.md, "The MAC at MTU 1500, third pass"). @acc: s0, s1, t0,
 * t1, kept from piece to piece; @len a multiple of 16 except for the
 * last piece; @d, if not NULL (a constant at every call: the stores go
 * where it is NULL), gets a copy of the @len bytes read. */
struct nh512_acc {
    __m512i s0, s1, t0, t1;
};

__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void nh512_run(const unsigned char *p, size_t len, const uint32_t *k,
                             struct nh512_acc *acc, unsigned char *d)
{
    __m512i s0 = acc->s0, s1 = acc->s1, t0 = acc->t0, t1 = acc->t1;

    if (len >= 192) {
        __m512i K = _mm512_loadu_si512((const void *)k);
        do {
            __m512i m = _mm512_loadu_si512((const void *)p);
            __m512i n = _mm512_loadu_si512((const void *)(p + 64));
            __m512i K1 = _mm512_loadu_si512((const void *)(k + 16));
            __m512i K2 = _mm512_loadu_si512((const void *)(k + 32));
            __m512i x = _mm512_add_epi32(m, K);
            if (d) {
                _mm512_storeu_si512((void *)d, m);
                _mm512_storeu_si512((void *)(d + 64), n);
                d += 128;
            }
            __m512i y = _mm512_add_epi32(m, _mm512_alignr_epi32(K1, K, 4));
            __m512i u = _mm512_add_epi32(n, K1);
            __m512i v = _mm512_add_epi32(n, _mm512_alignr_epi32(K2, K1, 4));
            K = K2;
            s0 = _mm512_add_epi64(s0, _mm512_mul_epu32(x, _mm512_shuffle_epi32(x, 0xb1)));
            s1 = _mm512_add_epi64(s1, _mm512_mul_epu32(y, _mm512_shuffle_epi32(y, 0xb1)));
            t0 = _mm512_add_epi64(t0, _mm512_mul_epu32(u, _mm512_srli_epi64(u, 32)));
            t1 = _mm512_add_epi64(t1, _mm512_mul_epu32(v, _mm512_srli_epi64(v, 32)));
            p += 128, len -= 128, k += 32;
        } while (len >= 192);
    }
    if (len >= 128) {   /* the last whole round: its keys loaded as such */
        __m512i m = _mm512_loadu_si512((const void *)p);
        __m512i n = _mm512_loadu_si512((const void *)(p + 64));
        __m512i x = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)k));
        __m512i y = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)(k + 4)));
        __m512i u = _mm512_add_epi32(n, _mm512_loadu_si512((const void *)(k + 16)));
        if (d) {
            _mm512_storeu_si512((void *)d, m);
            _mm512_storeu_si512((void *)(d + 64), n);
            d += 128;
        }
        __m512i v = _mm512_add_epi32(n, _mm512_loadu_si512((const void *)(k + 20)));
        s0 = _mm512_add_epi64(s0, _mm512_mul_epu32(x, _mm512_shuffle_epi32(x, 0xb1)));
        s1 = _mm512_add_epi64(s1, _mm512_mul_epu32(y, _mm512_shuffle_epi32(y, 0xb1)));
        t0 = _mm512_add_epi64(t0, _mm512_mul_epu32(u, _mm512_srli_epi64(u, 32)));
        t1 = _mm512_add_epi64(t1, _mm512_mul_epu32(v, _mm512_srli_epi64(v, 32)));
        p += 128, len -= 128, k += 32;
    }
    if (len >= 64) {
        __m512i m = _mm512_loadu_si512((const void *)p);
        __m512i x = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)k));
        __m512i y = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)(k + 4)));
        s0 = _mm512_add_epi64(s0, _mm512_mul_epu32(x, _mm512_srli_epi64(x, 32)));
        s1 = _mm512_add_epi64(s1, _mm512_mul_epu32(y, _mm512_srli_epi64(y, 32)));
        if (d) {
            _mm512_storeu_si512((void *)d, m);
            d += 64;
        }
        p += 64, len -= 64, k += 16;
    }
    if (len) {   /* 1..63 bytes: b blocks of 16 */
        unsigned b = (unsigned)((len + 15) / 16);
        __mmask64 bm = (__mmask64)((1ull << len) - 1);
        __mmask16 wm = (__mmask16)(b == 4 ? 0xffffu : (1u << (4 * b)) - 1);
        __mmask8 lm = (__mmask8)((1u << (2 * b)) - 1);
        __m512i m = _mm512_maskz_loadu_epi8(bm, (const void *)p);
        __m512i x = _mm512_add_epi32(m, _mm512_maskz_loadu_epi32(wm, (const void *)k));
        __m512i y = _mm512_add_epi32(m, _mm512_maskz_loadu_epi32(wm, (const void *)(k + 4)));
        s0 = _mm512_add_epi64(s0, _mm512_maskz_mul_epu32(lm, x, _mm512_srli_epi64(x, 32)));
        s1 = _mm512_add_epi64(s1, _mm512_maskz_mul_epu32(lm, y, _mm512_srli_epi64(y, 32)));
        if (d)
            _mm512_mask_storeu_epi8((void *)d, bm, m);
    }
    acc->s0 = s0, acc->s1 = s1, acc->t0 = t0, acc->t1 = t1;
}

/* summed unsigned (mod 2^64): gcc's _mm512_reduce_add_epi64 adds
 * signed long longs, which overflows (UBSan says so) */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void nh512_out(const struct nh512_acc *acc, uint64_t out[2])
{
    uint64_t lane[8], a0 = 0, a1 = 0;

    _mm512_storeu_si512((void *)lane, _mm512_add_epi64(acc->s0, acc->t0));
    for (int i = 0; i < 8; i++)
        a0 += lane[i];
    _mm512_storeu_si512((void *)lane, _mm512_add_epi64(acc->s1, acc->t1));
    for (int i = 0; i < 8; i++)
        a1 += lane[i];
    out[0] = a0;
    out[1] = a1;
}

__attribute__((target("avx512f,avx512bw")))
void cvia__nh2_avx512(const void *msg, size_t len, const uint32_t *key, uint64_t out[2])
{
    struct nh512_acc acc = { _mm512_setzero_si512(), _mm512_setzero_si512(),
                             _mm512_setzero_si512(), _mm512_setzero_si512() };

    nh512_run(msg, len, key, &acc, NULL);
    nh512_out(&acc, out);
}

/* NH of @len bytes (at least CVIA_NH2C_SKIP) and a copy of those past
 * the first CVIA_NH2C_SKIP to @dst, in one pass: each 64 bytes loaded once
 * for both (the receiver's MAC and its copy of a segment to the receive
 * buffer). The first 64 bytes alone, their upper half stored; then the
 * loop with its stores. */
__attribute__((target("avx512f,avx512bw")))
void cvia__nh2c_avx512(const void *msg, size_t len, const uint32_t *key, uint64_t out[2],
                       void *dst)
{
    const unsigned char *p = msg;
    struct nh512_acc acc = { _mm512_setzero_si512(), _mm512_setzero_si512(),
                             _mm512_setzero_si512(), _mm512_setzero_si512() };

    _Static_assert(CVIA_NH2C_SKIP == 32, "the first step stores the upper 32 bytes");
    if (len >= 64) {
        __m512i m = _mm512_loadu_si512((const void *)p);
        __m512i x = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)key));
        __m512i y = _mm512_add_epi32(m, _mm512_loadu_si512((const void *)(key + 4)));
        acc.s0 = _mm512_mul_epu32(x, _mm512_srli_epi64(x, 32));
        acc.s1 = _mm512_mul_epu32(y, _mm512_srli_epi64(y, 32));
        _mm256_storeu_si256((__m256i *)dst, _mm512_extracti64x4_epi64(m, 1));
        nh512_run(p + 64, len - 64, key + 16, &acc, (unsigned char *)dst + 32);
    } else {
        nh512_run(p, len, key, &acc, NULL);
        memcpy(dst, p + CVIA_NH2C_SKIP, len - CVIA_NH2C_SKIP);
    }
    nh512_out(&acc, out);
}

__attribute__((target("avx512f,avx512bw")))
void cvia__nh2v_avx512(const struct cvia_nh_piece *pc, int n, const uint32_t *key,
                       uint64_t out[2])
{
    struct nh512_acc acc = { _mm512_setzero_si512(), _mm512_setzero_si512(),
                             _mm512_setzero_si512(), _mm512_setzero_si512() };

    const uint32_t *k[8];
    size_t at = 0;

    /* the last piece first: a datagram's header, just written by the
     * caller, is read by a vector load that store forwarding cannot serve
     * until the stores retire; behind the payload's loop that costs
     * nothing (the sum does not depend on the order) */
    if (n <= 8) {
        for (int i = 0; i < n; i++) {
            k[i] = key + at / 4;
            at += pc[i].len;
        }
        for (int i = n - 1; i >= 0; i--)
            nh512_run(pc[i].p, pc[i].len, k[i], &acc, NULL);
    } else {
        for (int i = 0; i < n; i++) {
            nh512_run(pc[i].p, pc[i].len, key, &acc, NULL);
            key += pc[i].len / 4;
        }
    }
    nh512_out(&acc, out);
}
#endif

static void nh2_first(const void *msg, size_t len, const uint32_t *key, uint64_t out[2]);
static void (*nh2_impl)(const void *, size_t, const uint32_t *, uint64_t *) = nh2_first;
static void nh2v_first(const struct cvia_nh_piece *pc, int n, const uint32_t *key,
                       uint64_t out[2]);
static void (*nh2v_impl)(const struct cvia_nh_piece *, int, const uint32_t *,
                         uint64_t *) = nh2v_first;
static void nh2c_first(const void *msg, size_t len, const uint32_t *key, uint64_t out[2],
                       void *dst);
static void (*nh2c_impl)(const void *, size_t, const uint32_t *, uint64_t *, void *) = nh2c_first;

/* Without AVX-512: NH, then the copy. */
void cvia__nh2c_2pass(const void *msg, size_t len, const uint32_t *key, uint64_t out[2],
                      void *dst)
{
    cvia__nh2(msg, len, key, out);
    memcpy(dst, (const unsigned char *)msg + CVIA_NH2C_SKIP, len - CVIA_NH2C_SKIP);
}

#if defined(__x86_64__) && !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
/* AVX2: pieces one by one through its loop, their sums added (a piece
 * but the last is whole 16-byte blocks, so no padding between). */
void cvia__nh2v_avx2(const struct cvia_nh_piece *pc, int n, const uint32_t *key, uint64_t out[2])
{
    uint64_t part[2];

    out[0] = out[1] = 0;
    for (int i = 0; i < n; i++) {
        cvia__nh2_avx2(pc[i].p, pc[i].len, key, part);
        out[0] += part[0];
        out[1] += part[1];
        key += pc[i].len / 4;
    }
}
#endif

void cvia__nh2v_scalar(const struct cvia_nh_piece *pc, int n, const uint32_t *key, uint64_t out[2])
{
    uint64_t a0 = 0, a1 = 0;

    for (int i = 0; i < n; i++) {
        nh_tail(pc[i].p, pc[i].len, key, &a0, &a1);
        key += pc[i].len / 4;
    }
    out[0] = a0;
    out[1] = a1;
}

static void nh_choose(void)
{
    void (*f)(const void *, size_t, const uint32_t *, uint64_t *) = cvia__nh2_scalar;
    void (*v)(const struct cvia_nh_piece *, int, const uint32_t *, uint64_t *) = cvia__nh2v_scalar;
    void (*c)(const void *, size_t, const uint32_t *, uint64_t *, void *) = cvia__nh2c_2pass;

#if defined(__x86_64__) && !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
        f = cvia__nh2_avx512;
        v = cvia__nh2v_avx512;
        c = cvia__nh2c_avx512;
    } else if (__builtin_cpu_supports("avx2")) {
        f = cvia__nh2_avx2;
        v = cvia__nh2v_avx2;
    }
#endif
    __atomic_store_n(&nh2_impl, f, __ATOMIC_RELEASE);
    __atomic_store_n(&nh2v_impl, v, __ATOMIC_RELEASE);
    __atomic_store_n(&nh2c_impl, c, __ATOMIC_RELEASE);
}

static void nh2c_first(const void *msg, size_t len, const uint32_t *key, uint64_t out[2],
                       void *dst)
{
    nh_choose();
    __atomic_load_n(&nh2c_impl, __ATOMIC_ACQUIRE)(msg, len, key, out, dst);
}

void cvia__nh2c(const void *msg, size_t len, const uint32_t *key, uint64_t out[2], void *dst)
{
    __atomic_load_n(&nh2c_impl, __ATOMIC_ACQUIRE)(msg, len, key, out, dst);
}

static void nh2_first(const void *msg, size_t len, const uint32_t *key, uint64_t out[2])
{
    nh_choose();
    __atomic_load_n(&nh2_impl, __ATOMIC_ACQUIRE)(msg, len, key, out);
}

static void nh2v_first(const struct cvia_nh_piece *pc, int n, const uint32_t *key,
                       uint64_t out[2])
{
    nh_choose();
    __atomic_load_n(&nh2v_impl, __ATOMIC_ACQUIRE)(pc, n, key, out);
}

void cvia__nh2(const void *msg, size_t len, const uint32_t *key, uint64_t out[2])
{
    __atomic_load_n(&nh2_impl, __ATOMIC_ACQUIRE)(msg, len, key, out);
}

void cvia__nh2v(const struct cvia_nh_piece *pc, int n, const uint32_t *key, uint64_t out[2])
{
    __atomic_load_n(&nh2v_impl, __ATOMIC_ACQUIRE)(pc, n, key, out);
}
