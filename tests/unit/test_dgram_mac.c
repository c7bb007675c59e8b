/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of the datagram MAC (src/prov/dgram/dgram_wire.c): what the
 * sender seals from its pieces (header, extension, payload) the receiver
 * accepts whole, with and without an extension, for every length up to a
 * page; and refuses (DG_BAD_MAC) every single flipped bit, the datagram cut
 * short or grown by a zero byte (NH pads with zeros: the length in the MAC
 * tells them apart), another secret (an earlier job's), and the AUTH flag
 * cleared with a valid CRC (a downgrade). TAP output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prov/dgram/dgram.h"

#include "tap.h"

#define JOBID 0x0123456789abcdefull

static int check(const uint8_t *d, size_t len, const struct dg_keys *k)
{
    struct dg_hdr h;
    struct dg_ext e;
    const uint8_t *pl;
    size_t pll;

    return cvia__dg_parse(d, len, k, &h, &e, &pl, &pll, NULL, NULL);
}

/* Seal a datagram of @len bytes from @src as the engine does: pieces. */
static void seal(uint8_t *d, size_t len, int ext, const struct dg_keys *k)
{
    struct dg_hdr h;
    struct iovec iov[3];
    int n = 1;

    memcpy(&h, d, sizeof(h));
    h.type = ext ? DG_RMAW : DG_MSG;
    h.flags = (uint8_t)(DG_F_FIRST | DG_F_LAST | (ext ? DG_F_EXT : 0) | (k->auth ? DG_F_AUTH : 0));
    h.job = dg_jobtag(k->job);
    iov[0].iov_base = &h;
    iov[0].iov_len = sizeof(h);
    if (ext) {
        iov[n].iov_base = d + sizeof(h);
        iov[n++].iov_len = sizeof(struct dg_ext);
    }
    if (len > sizeof(h) + (ext ? sizeof(struct dg_ext) : 0)) {
        iov[n].iov_base = d + sizeof(h) + (ext ? sizeof(struct dg_ext) : 0);
        iov[n].iov_len = len - sizeof(h) - (ext ? sizeof(struct dg_ext) : 0);
        n++;
    }
    cvia__dg_seal(&h, iov, n, n, k, 0);
    memcpy(d, &h, sizeof(h));
}

int main(void)
{
    static uint8_t d[4096 + 200];
    struct dg_keys k = { .job = cvia__dg_job_key(JOBID), .auth = 1 };
    struct dg_keys other = k, crc = k;
    int bad_ok = 0, bad_flip = 0, bad_len = 0, bad_other = 0, bad_down = 0;
    uint64_t r = 1;

    for (int i = 0; i < 16; i++) {
        k.secret[i] = (unsigned char)(i * 29 + 7);
        other.secret[i] = (unsigned char)(i * 29 + 8);
    }
    if (cvia__dg_keys_derive(&k) || cvia__dg_keys_derive(&other))
        return 1;
    crc.auth = 0;
    for (size_t i = 0; i < sizeof(d); i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        d[i] = (uint8_t)(r >> 56);
    }
    for (int ext = 0; ext < 2; ext++) {
        size_t min = sizeof(struct dg_hdr) + (ext ? sizeof(struct dg_ext) : 0);
        for (size_t len = min; len <= min + 4096; len += len < min + 80 ? 1 : 61) {
            int flips = len <= min + 80 || len % 7 == 0;
            seal(d, len, ext, &k);
            if (check(d, len, &k) != DG_OK && !bad_ok++)
                tap_diag("ext %d length %zu: refused", ext, len);
            for (size_t bit = 0; flips && bit < len * 8; bit++) {
                if (bit / 8 == 10 || bit / 8 == 11)
                    continue;   /* the job tag: foreign, not forged */
                d[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                if (check(d, len, &k) != DG_BAD_MAC && !bad_flip++)
                    tap_diag("ext %d length %zu: bit %zu flipped passed", ext, len, bit);
                d[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            }
            {
                uint8_t keep = d[len];
                d[len] = 0;
                if ((check(d, len + 1, &k) != DG_BAD_MAC || check(d, len - 1, &k) == DG_OK) &&
                    !bad_len++)
                    tap_diag("ext %d length %zu: grown or cut, passed", ext, len);
                d[len] = keep;
            }
            if (check(d, len, &other) != DG_BAD_MAC && !bad_other++)
                tap_diag("ext %d length %zu: passed under another secret", ext, len);
            seal(d, len, ext, &crc);   /* CVIA_DGRAM_AUTH=no's CRC, no AUTH flag */
            if (check(d, len, &k) != DG_BAD_MAC && !bad_down++)
                tap_diag("ext %d length %zu: the CRC-sealed one passed", ext, len);
            if (check(d, len, &crc) != DG_OK && !bad_down++)
                tap_diag("ext %d length %zu: the CRC-sealed one refused without auth", ext, len);
        }
    }
    tap_ok(!bad_ok, "sealed in pieces, accepted whole (with and without extension)");
    tap_ok(!bad_flip, "every flipped bit outside the job tag fails the MAC");
    tap_ok(!bad_len, "one zero byte more or one byte less fails the MAC");
    tap_ok(!bad_other, "another secret (an earlier job's) fails the MAC");
    tap_ok(!bad_down, "a CRC-sealed datagram fails under the MAC, passes without it");
    printf("1..%d\n", tap_n);
    cvia__dg_keys_free(&k);
    cvia__dg_keys_free(&other);
    return tap_failed ? 1 : 0;
}
