/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of util/nh: the dispatched implementation, and each vector
 * loop the CPU can run (AVX2, AVX-512), equal the scalar loop for every length up to 1 KiB and some up
 * to 64 KiB, from unaligned buffers, reading no key word past
 * CVIA_NH_KEY_WORDS (the key is allocated to exactly that: ASan checks);
 * NH over pieces (cvia__nh2v: dispatched, scalar, AVX2, AVX-512 fused) equals
 * NH of the pieces laid end to end; NH with the copy (cvia__nh2c) equals
 * NH and copies exactly the bytes past its header, nothing outside them;
 * the definition on a worked example; trailing zero bytes of the message
 * are padding (the MAC adds the length, so that is its job); a changed
 * byte changes both iterations, a key word at least one. TAP output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/nh.h"

#include "tap.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    enum { MAX = 65536 };
    unsigned char *buf = malloc(MAX + 8);
    int bad = 0, same = 0, nvec = 0;
    uint64_t a[2], b[2];

    if (!buf)
        return 1;
    for (size_t i = 0; i < MAX + 8; i++)
        buf[i] = (unsigned char)next();
    for (size_t len = 0; len <= MAX; len = len < 1024 ? len + 1 : len * 2 + 13) {
        size_t nk = CVIA_NH_KEY_WORDS(len);
        uint32_t *key = malloc(nk * sizeof(*key));
        if (!key)
            return 1;
        for (size_t i = 0; i < nk; i++)
            key[i] = (uint32_t)next();
        for (int off = 0; off < 8; off += 3) {
            cvia__nh2(buf + off, len, key, a);
            cvia__nh2_scalar(buf + off, len, key, b);
            if ((a[0] != b[0] || a[1] != b[1]) && !bad++)
                tap_diag("length %zu offset %d: %016llx %016llx, scalar %016llx %016llx", len, off,
                         (unsigned long long)a[0], (unsigned long long)a[1],
                         (unsigned long long)b[0], (unsigned long long)b[1]);
#ifdef CVIA_NH_X86
            if (__builtin_cpu_supports("avx2")) {
                cvia__nh2_avx2(buf + off, len, key, a);
                nvec++;
                if ((a[0] != b[0] || a[1] != b[1]) && !bad++)
                    tap_diag("length %zu offset %d: AVX2 differs", len, off);
            }
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
                cvia__nh2_avx512(buf + off, len, key, a);
                nvec++;
                if ((a[0] != b[0] || a[1] != b[1]) && !bad++)
                    tap_diag("length %zu offset %d: AVX-512 differs", len, off);
            }
#endif
        }
        if (len >= 16) {   /* a flipped byte, a changed key word */
            buf[len / 2] ^= 0x40;
            cvia__nh2(buf, len, key, b);
            buf[len / 2] ^= 0x40;
            cvia__nh2(buf, len, key, a);
            same += a[0] == b[0] || a[1] == b[1];
            key[nk - 5] ^= 0x100;   /* used by one iteration at least */
            cvia__nh2(buf, len, key, b);
            same += a[0] == b[0] && a[1] == b[1];
        }
        free(key);
    }
    tap_ok(!bad, "dispatched NH and %d vector runs equal the scalar loop (lengths 0..1024 "
           "and up to 64 KiB)", nvec);
    {
        /* NH over pieces (a datagram's header, extension, payload): each
         * but the last a multiple of 16 bytes, from unaligned addresses
         * apart from each other; equal to the scalar loop over them laid
         * end to end, for all three loops and every split tried */
        int vbad = 0, runs = 0;
        unsigned char *cat = malloc(MAX);
        if (!cat)
            return 1;
        for (int t = 0; t < 3000; t++) {
            struct cvia_nh_piece pc[10];   /* over 8: the fused loop's other order */
            size_t at = 0, total = 0;
            int n = 1 + (int)(next() % 10);
            for (int i = 0; i < n; i++) {
                size_t len = i < n - 1 ? 16 * (next() % (t % 7 == 0 ? 300 : 12))
                                       : next() % (t % 5 == 0 ? 9000 : 400);
                size_t off = 1 + next() % 13;
                if (at + off + len > MAX || total + len > MAX)
                    len = 0;
                pc[i].p = buf + at + off;
                pc[i].len = len;
                memcpy(cat + total, pc[i].p, len);
                at += off + len;
                total += len;
            }
            size_t nk = CVIA_NH_KEY_WORDS(total);
            uint32_t *key = malloc(nk * sizeof(*key));
            if (!key)
                return 1;
            for (size_t i = 0; i < nk; i++)
                key[i] = (uint32_t)next();
            cvia__nh2_scalar(cat, total, key, b);
            cvia__nh2v(pc, n, key, a);
            vbad += a[0] != b[0] || a[1] != b[1];
            cvia__nh2v_scalar(pc, n, key, a);
            vbad += a[0] != b[0] || a[1] != b[1];
            runs += 2;
#ifdef CVIA_NH_X86
            if (__builtin_cpu_supports("avx2")) {
                cvia__nh2v_avx2(pc, n, key, a);
                vbad += a[0] != b[0] || a[1] != b[1];
                runs++;
            }
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
                cvia__nh2v_avx512(pc, n, key, a);
                vbad += a[0] != b[0] || a[1] != b[1];
                runs++;
            }
#endif
            if (vbad && vbad == 1 && !bad++)
                tap_diag("pieces: %d, %zu bytes in all: differs", n, total);
            free(key);
        }
        free(cat);
        tap_ok(!vbad, "NH over pieces equals NH of them laid end to end (%d runs, %d differ)",
               runs, vbad);
    }
    {
        /* NH with the copy (cvia__nh2c: dispatched, two passes, AVX-512):
         * the sums of the scalar loop and the bytes past the first
         * CVIA_NH2C_SKIP copied, for every length from CVIA_NH2C_SKIP to
         * 1 KiB and some up to 64 KiB, source and destination at unaligned
         * offsets; the destination allocated to exactly the bytes copied
         * (ASan: nothing written past it) between guard bytes that stay */
        int cbad = 0, runs = 0;
        for (size_t len = CVIA_NH2C_SKIP; len <= MAX; len = len < 1024 ? len + 1 : len * 2 + 13) {
            size_t nk = CVIA_NH_KEY_WORDS(len), nc = len - CVIA_NH2C_SKIP;
            uint32_t *key = malloc(nk * sizeof(*key));
            unsigned char *dst = malloc(nc + 128);
            if (!key || !dst)
                return 1;
            for (size_t i = 0; i < nk; i++)
                key[i] = (uint32_t)next();
            for (int off = 0; off < 8; off += 3) {
                size_t dof = (size_t)(off * 7) % 64;   /* before the copy: dof guard bytes */
                void (*fn[3])(const void *, size_t, const uint32_t *, uint64_t *, void *) = {
                    cvia__nh2c, cvia__nh2c_2pass, NULL
                };
#ifdef CVIA_NH_X86
                if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
                    fn[2] = cvia__nh2c_avx512;
#endif
                cvia__nh2_scalar(buf + off, len, key, b);
                for (int f = 0; f < 3 && fn[f]; f++) {
                    memset(dst, 0xa5, nc + 128);
                    fn[f](buf + off, len, key, a, dst + dof);
                    int wrong = a[0] != b[0] || a[1] != b[1] ||
                                memcmp(dst + dof, buf + off + CVIA_NH2C_SKIP, nc) != 0;
                    for (size_t i = 0; i < nc + 128; i++)
                        wrong |= (i < dof || i >= dof + nc) && dst[i] != 0xa5;
                    if (wrong && !cbad++)
                        tap_diag("NH with copy %d, length %zu offset %d: differs", f, len, off);
                    runs++;
                }
            }
            free(dst);
            if (len >= 1024) {   /* exact-size destination: ASan sees any store past it */
                unsigned char *ex = malloc(nc);
                if (!ex)
                    return 1;
                cvia__nh2c(buf + 3, len, key, a, ex);
                cbad += memcmp(ex, buf + 3 + CVIA_NH2C_SKIP, nc) != 0;
                free(ex);
            }
            free(key);
        }
        tap_ok(!cbad, "NH with the copy equals NH, and copies exactly the bytes past the "
               "header (%d runs, %d wrong)", runs, cbad);
    }
    tap_ok(!same, "a flipped byte changes both iterations, a key word one at least (%d did not)", same);
    {
        /* 16 bytes: words 1..4, key 0..7: (1+0)(2+1) + (3+2)(4+3) = 38;
         * second iteration (1+4)(2+5) + (3+6)(4+7) = 134 */
        uint32_t key[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, w[4] = { 1, 2, 3, 4 };
        unsigned char m[16];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                m[4 * i + j] = (unsigned char)(w[i] >> (8 * j));
        cvia__nh2(m, 16, key, a);
        tap_ok(a[0] == 38 && a[1] == 134, "the definition on a worked example (%llu, %llu)",
               (unsigned long long)a[0], (unsigned long long)a[1]);
        /* products wrap mod 2^64, additions of words mod 2^32 */
        key[0] = 0xffffffffu;   /* (1 + 0xffffffff) mod 2^32 = 0: the first product vanishes */
        cvia__nh2(m, 16, key, a);
        tap_ok(a[0] == 35, "word additions wrap mod 2^32 (%llu)", (unsigned long long)a[0]);
        cvia__nh2(m, 13, key, b);
        m[13] = m[14] = m[15] = 0;
        cvia__nh2(m, 16, key, a);
        tap_ok(a[0] == b[0] && a[1] == b[1], "a short last block is zero-padded");
    }
    printf("1..%d\n", tap_n);
    free(buf);
    return tap_failed ? 1 : 0;
}
