/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* NH, the universal hash at the bottom of UMAC (Black, Halevi, Krawczyk,
 * Krovetz and Rogaway, "UMAC: fast and secure message authentication",
 * CRYPTO 1999; RFC 4418): the sum over pairs of 32-bit words of
 * (m[2i] + k[2i]) * (m[2i+1] + k[2i+1]), the additions mod 2^32 and the
 * products and sum mod 2^64. For a random key unknown to the adversary,
 * two messages of the same length collide with probability 2^-32; two
 * iterations with the key shifted by four words (UMAC's Toeplitz
 * construction) make it 2^-64. Not a MAC by itself: its output must go
 * through a PRF (the datagram MAC hashes it with SipHash-2-4, with the
 * message length). Little-endian words; the message is zero-padded to 16
 * bytes. AVX-512 or AVX2 where the CPU has it, else a scalar loop (same
 * result). */
#ifndef COREVIA_UTIL_NH_H
#define COREVIA_UTIL_NH_H

#include <stddef.h>
#include <stdint.h>

/* 32-bit key words that hashing @len bytes reads. */
#define CVIA_NH_KEY_WORDS(len) ((((size_t)(len) + 15) / 16) * 4 + 4)

/* Both iterations of NH over @len bytes of @msg: out[0], out[1]. */
void cvia__nh2(const void *msg, size_t len, const uint32_t *key, uint64_t out[2]);
/* A piece of a message: NH of @n pieces is NH of them laid end to end
 * when every piece but the last is a multiple of 16 bytes (the key runs
 * on from piece to piece). */
struct cvia_nh_piece {
    const void *p;
    size_t len;
};
void cvia__nh2v(const struct cvia_nh_piece *pc, int n, const uint32_t *key, uint64_t out[2]);
/* NH of @len bytes (len >= CVIA_NH2C_SKIP) as cvia__nh2, and a copy of
 * all but the first CVIA_NH2C_SKIP of them to @dst (a datagram's payload
 * after its header), in one pass where the CPU has AVX-512. */
#define CVIA_NH2C_SKIP 32
void cvia__nh2c(const void *msg, size_t len, const uint32_t *key, uint64_t out[2], void *dst);
void cvia__nh2c_2pass(const void *msg, size_t len, const uint32_t *key, uint64_t out[2],
                      void *dst);
/* The portable loop alone, and (x86-64, only where the CPU has them) the
 * vector loops: the unit test compares them. */
void cvia__nh2_scalar(const void *msg, size_t len, const uint32_t *key, uint64_t out[2]);
void cvia__nh2v_scalar(const struct cvia_nh_piece *pc, int n, const uint32_t *key, uint64_t out[2]);
#if defined(__x86_64__) && !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#define CVIA_NH_X86 1
void cvia__nh2_avx2(const void *msg, size_t len, const uint32_t *key, uint64_t out[2]);
void cvia__nh2_avx512(const void *msg, size_t len, const uint32_t *key, uint64_t out[2]);
void cvia__nh2v_avx2(const struct cvia_nh_piece *pc, int n, const uint32_t *key, uint64_t out[2]);
void cvia__nh2v_avx512(const struct cvia_nh_piece *pc, int n, const uint32_t *key,
                       uint64_t out[2]);
void cvia__nh2c_avx512(const void *msg, size_t len, const uint32_t *key, uint64_t out[2],
                       void *dst);
#endif

#endif
