/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of util/siphash: the 64 reference vectors of SipHash-2-4
 * (key 00 01 .. 0f, message 00 01 .. n-1 for n = 0 .. 63, as in the
 * paper's reference code; n = 15 is its Appendix A example), whole and
 * fed in every split into two pieces and byte by byte, from unaligned
 * addresses; and a key bit or a message bit changes the tag. TAP output. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/siphash.h"

#include "tap.h"

static const uint64_t vec[64] = {
    0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d,
    0xcf2794e0277187b7, 0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137,
    0x93f5f5799a932462, 0x9e0082df0ba9e4b0, 0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7,
    0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee, 0xa129ca6149be45e5,
    0x3f2acc7f57c29bdb, 0x699ae9f52cbe4794, 0x4bc1b3f0968dd39c, 0xbb6dc91da77961bd,
    0xbed65cf21aa2ee98, 0xd0f2cbb02e3b67c7, 0x93536795e3a33e88, 0xa80c038ccd5ccec8,
    0xb8ad50c6f649af94, 0xbce192de8a85b8ea, 0x17d835b85bbb15f3, 0x2f2e6163076bcfad,
    0xde4daaaca71dc9a5, 0xa6a2506687956571, 0xad87a3535c49ef28, 0x32d892fad841c342,
    0x7127512f72f27cce, 0xa7f32346f95978e3, 0x12e0b01abb051238, 0x15e034d40fa197ae,
    0x314dffbe0815a3b4, 0x027990f029623981, 0xcadcd4e59ef40c4d, 0x9abfd8766a33735c,
    0x0e3ea96b5304a7d0, 0xad0c42d6fc585992, 0x187306c89bc215a9, 0xd4a60abcf3792b95,
    0xf935451de4f21df2, 0xa9538f0419755787, 0xdb9acddff56ca510, 0xd06c98cd5c0975eb,
    0xe612a3cb9ecba951, 0xc766e62cfcadaf96, 0xee64435a9752fe72, 0xa192d576b245165a,
    0x0a8787bf8ecb74b2, 0x81b3e73d20b49b6f, 0x7fa8220ba3b2ecea, 0x245731c13ca42499,
    0xb78dbfaf3a8d83bd, 0xea1ad565322a1a0b, 0x60e61c23a3795013, 0x6606d7e446282b93,
    0x6ca4ecb15c5f91e1, 0x9f626da15c9625f3, 0xe51b38608ef25f57, 0x958a324ceb064572,
};

int main(void)
{
    unsigned char key[16], msg[64 + 1];
    int bad_whole = 0, bad_split = 0, bad_bytes = 0, bad_unal = 0, same = 0;

    for (int i = 0; i < 16; i++)
        key[i] = (unsigned char)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (unsigned char)i;
    for (size_t n = 0; n < 64; n++) {
        struct cvia_sip s;
        uint64_t t = cvia__siphash24(key, msg, n);
        if (t != vec[n] && !bad_whole++)
            tap_diag("n=%zu: %016llx, want %016llx", n, (unsigned long long)t,
                     (unsigned long long)vec[n]);
        for (size_t cut = 0; cut <= n; cut++) {
            cvia__sip_init(&s, key);
            cvia__sip_update(&s, msg, cut);
            cvia__sip_update(&s, msg + cut, n - cut);
            if (cvia__sip_final(&s) != vec[n] && !bad_split++)
                tap_diag("n=%zu cut at %zu differs", n, cut);
        }
        cvia__sip_init(&s, key);
        for (size_t b = 0; b < n; b++)
            cvia__sip_update(&s, msg + b, 1);
        if (cvia__sip_final(&s) != vec[n] && !bad_bytes++)
            tap_diag("n=%zu byte by byte differs", n);
    }
    {
        unsigned char buf[64 + 8];
        for (int off = 1; off < 8; off++) {
            memcpy(buf + off, msg, 64);
            for (size_t n = 0; n < 64; n++)
                if (cvia__siphash24(key, buf + off, n) != vec[n] && !bad_unal++)
                    tap_diag("n=%zu at offset %d differs", n, off);
        }
    }
    tap_ok(!bad_whole, "the 64 reference vectors, whole");
    tap_ok(!bad_split, "every split into two updates");
    tap_ok(!bad_bytes, "one byte per update");
    tap_ok(!bad_unal, "from unaligned buffers");
    for (int bit = 0; bit < 128; bit++) {
        key[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        same += cvia__siphash24(key, msg, 40) == vec[40];
        key[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    for (int bit = 0; bit < 40 * 8; bit++) {
        msg[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        same += cvia__siphash24(key, msg, 40) == vec[40];
        msg[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    tap_ok(!same, "every flipped key or message bit changes the tag (%d unchanged)", same);
    {   /* batches of 32-byte messages, every size 0..40 (a vector's worth,
         * a short tail, the scalar remainder): the reference vector 32 for
         * message 00..1f, and each tag as cvia__siphash24 of its bytes */
        static uint64_t in[40][4], out[40];
        uint64_t r = 7;
        int bad_vec = 0, bad_batch = 0, tried[9] = { 0 };
        for (int i = 0; i < 40; i++)
            for (int w = 0; w < 4; w++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                in[i][w] = r;
            }
        memcpy(in[5], msg, 32);   /* little-endian words of 00..1f on x86 */
        for (size_t k = 0; k < 3 * 41; k++) {   /* 8 lanes, 4, 1: those the CPU has */
            size_t n = k % 41;
            tried[cvia__siphash24_4w_lanes(k < 41 ? 8 : k < 82 ? 4 : 1)] = 1;
            memset(out, 0, sizeof(out));
            cvia__siphash24_4w(key, (const uint64_t (*)[4])in, out, n);
            for (size_t i = 0; i < n; i++) {
                unsigned char b[32];
                for (int w = 0; w < 4; w++)
                    for (int j = 0; j < 8; j++)
                        b[8 * w + j] = (unsigned char)(in[i][w] >> (8 * j));
                if (out[i] != cvia__siphash24(key, b, 32) && !bad_batch++)
                    tap_diag("batch of %zu: message %zu differs", n, i);
                if (i == 5 && out[i] != vec[32] && !bad_vec++)
                    tap_diag("batch of %zu: the reference vector differs", n);
            }
            cvia__siphash24_4w_scalar(key, (const uint64_t (*)[4])in, out, n);
            for (size_t i = 0; i < n; i++) {
                unsigned char b[32];
                for (int w = 0; w < 4; w++)
                    for (int j = 0; j < 8; j++)
                        b[8 * w + j] = (unsigned char)(in[i][w] >> (8 * j));
                if (out[i] != cvia__siphash24(key, b, 32) && !bad_batch++)
                    tap_diag("scalar batch of %zu: message %zu differs", n, i);
            }
        }
        cvia__siphash24_4w_lanes(8);
        tap_ok(!bad_batch && !bad_vec, "batches of 32-byte messages give cvia__siphash24's "
               "tags, every batch size 0..40, in%s%s%s", tried[8] ? " 8 lanes (AVX-512)," : "",
               tried[4] ? " 4 lanes (AVX2)," : "", tried[1] ? " 1 lane" : "");
    }
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
