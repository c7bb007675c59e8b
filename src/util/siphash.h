/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012): a keyed 64-bit PRF, used as the MAC of the datagram providers.
 * The key is 16 bytes, read as two little-endian words (k0 = bytes 0-7,
 * k1 = bytes 8-15) as the paper does; the message is absorbed a 64-bit
 * word at a time. Incremental, so that a datagram gathered from several
 * buffers (header, extension, payload) is hashed where it lies. */
#ifndef COREVIA_UTIL_SIPHASH_H
#define COREVIA_UTIL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct cvia_sip {
    uint64_t v0, v1, v2, v3;
    uint64_t tail;     /* bytes of an unfinished word, little-endian */
    uint64_t len;      /* bytes absorbed so far */
};

/* @key: 16 bytes. */
void cvia__sip_init(struct cvia_sip *s, const unsigned char key[16]);
void cvia__sip_update(struct cvia_sip *s, const void *buf, size_t len);
uint64_t cvia__sip_final(struct cvia_sip *s);
/* The whole message at once. */
uint64_t cvia__siphash24(const unsigned char key[16], const void *buf, size_t len);
/* @n messages of four 64-bit words each (32 bytes, the words as numbers,
 * not bytes: the same tags as cvia__siphash24 of their little-endian
 * bytes), tags into @out: eight lanes at a time with AVX-512, four with
 * AVX2, where the CPU has them. A batch of datagram MACs costs about one
 * SipHash's latency per eight instead of one each. */
void cvia__siphash24_4w(const unsigned char key[16], const uint64_t (*in)[4], uint64_t *out,
                        size_t n);
/* For the unit test: use @lanes (8, 4 or 1) from now on, if the CPU can;
 * returns the lanes now in use. */
int cvia__siphash24_4w_lanes(int lanes);
/* The scalar one (the reference of the unit test). */
void cvia__siphash24_4w_scalar(const unsigned char key[16], const uint64_t (*in)[4],
                               uint64_t *out, size_t n);

#endif
