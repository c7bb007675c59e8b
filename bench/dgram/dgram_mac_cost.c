/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* dgram_mac_cost: the datagram MAC of one message, as the engine computes
 * it, without the network (issue 16, BENCHMARKS.md "The MAC at MTU 1500,
 * third pass"). The sender seals the message's datagrams (header and
 * payload where they lie, cvia__dg_seal_begin) and signs them in one
 * SipHash batch, as cvia__dg_flush does; the receiver checks the same
 * datagrams laid back to back (a GRO buffer) with cvia__dg_mac_batch, as
 * cvia__dg_rx does. Before each side a 256 KiB copy evicts L1 and part of
 * L2, as the kernel's copies do. Prints the median and minimum over the
 * rounds of each side's time per message, and per datagram. A second
 * line gives the receiver with its copy of the payloads to the receive
 * buffer: the copy alone (what it does without the MAC), the check then
 * the copy (two passes over the bytes), and the check with the copy in
 * NH's pass (cvia__nh2c, in[i].place as cvia__dg_place gives it), each
 * after its own eviction; "MAC's share" is what each adds to the copy.
 *   dgram_mac_cost [--seg BYTES] [--size BYTES] [--rounds N] [--gro-at BYTES]
 * (--seg: payload per datagram, 1432 by default (udp at MTU 1500; eth
 * 1460, both 8192 at MTU 9000); --size: 65536; --rounds: 2000;
 * --gro-at: where the first datagram starts past a cache line, 56 by
 * default, so that its byte 8, where the MAC starts, is on one, as udp
 * places its receive buffers; 16 is where malloc put them before.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "prov/dgram/dgram.h"
#include "util/siphash.h"

static long opt_num(const char *name, const char *v, long lo, long hi)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(v ? v : "", &end, 10);
    if (!v || errno || end == v || *end || n < lo || n > hi) {
        fprintf(stderr, "dgram_mac_cost: %s: a number from %ld to %ld, not '%s'\n", name, lo, hi,
                v ? v : "");
        exit(2);
    }
    return n;
}

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long seg = 1432, size = 65536, rounds = 2000, gro_at = 56;
    const size_t evict_n = 256 << 10;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seg"))
            seg = opt_num("--seg", i + 1 < argc ? argv[++i] : NULL, 16, DG_NH_MAX - 40);
        else if (!strcmp(argv[i], "--size"))
            size = opt_num("--size", i + 1 < argc ? argv[++i] : NULL, 1, 16 << 20);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = opt_num("--rounds", i + 1 < argc ? argv[++i] : NULL, 1, 10000000);
        else if (!strcmp(argv[i], "--gro-at"))
            gro_at = opt_num("--gro-at", i + 1 < argc ? argv[++i] : NULL, 0, 63);
        else {
            fprintf(stderr, "dgram_mac_cost: unknown option %s (--seg, --size, --rounds, "
                    "--gro-at)\n",
                    argv[i]);
            return 2;
        }
    }

    int nd = (int)((size + seg - 1) / seg), bad = 0;
    struct dg_keys k = { .job = 0x6a6f62, .auth = 1 };
    unsigned char *user = malloc((size_t)size), *gro_mem = NULL, *gro;
    unsigned char *ev_from = malloc(evict_n), *ev_to = malloc(evict_n);
    struct dg_hdr *hd = calloc((size_t)nd, sizeof(*hd));
    uint64_t (*tail)[4] = calloc((size_t)nd, sizeof(*tail)), *tag = calloc((size_t)nd, 8);
    struct dg_in *in = calloc((size_t)nd, sizeof(*in));
    double *ts = calloc((size_t)rounds, sizeof(double)), *tr = calloc((size_t)rounds, sizeof(double));
    double *tc = calloc((size_t)rounds, sizeof(double));   /* copy alone */
    double *t2p = calloc((size_t)rounds, sizeof(double));  /* check, then copy */
    double *tf = calloc((size_t)rounds, sizeof(double));   /* check with the copy */
    unsigned char *dest = malloc((size_t)size);

    if (posix_memalign((void **)&gro_mem, 64, (size_t)nd * (size_t)(seg + 40) + 64))
        return 1;
    gro = gro_mem + gro_at;
    if (!user || !ev_from || !ev_to || !hd || !tail || !tag || !in || !ts || !tr || !tc || !t2p ||
        !tf || !dest)
        return 1;
    for (int i = 0; i < 16; i++)
        k.secret[i] = (unsigned char)(i * 37 + 11);
    if (cvia__dg_keys_derive(&k))
        return 1;
    for (long i = 0; i < size; i++)
        user[i] = (unsigned char)(i * 13 + 5);
    memset(ev_from, 1, evict_n);
    memset(ev_to, 2, evict_n);
    for (long r = 0; r < rounds; r++) {
        size_t at = 0;
        double t0, t1, t2, t3;
        memcpy(ev_to, ev_from, evict_n);
        t0 = now_ns();
        for (int i = 0; i < nd; i++) {   /* cvia__dg_flush: seal each, sign all */
            size_t off = (size_t)i * (size_t)seg;
            size_t len = (size_t)size - off < (size_t)seg ? (size_t)size - off : (size_t)seg;
            struct iovec iov[2] = { { &hd[i], sizeof(hd[i]) }, { user + off, len } };
            hd[i].type = 1;   /* DG_MSG */
            hd[i].flags = DG_F_AUTH;
            hd[i].job = dg_jobtag(k.job);
            hd[i].seq = (uint32_t)(r * nd + i);
            cvia__dg_seal_begin(&hd[i], iov, 2, 2, &k, 0, tail[i]);
        }
        cvia__siphash24_4w(k.secret, (const uint64_t (*)[4])tail, tag, (size_t)nd);
        for (int i = 0; i < nd; i++)
            hd[i].mac = tag[i];
        t1 = now_ns();
        for (int i = 0; i < nd; i++) {   /* the kernel's GRO buffer */
            size_t off = (size_t)i * (size_t)seg;
            size_t len = (size_t)size - off < (size_t)seg ? (size_t)size - off : (size_t)seg;
            memcpy(gro + at, &hd[i], sizeof(hd[i]));
            memcpy(gro + at + sizeof(hd[i]), user + off, len);
            in[i].data = gro + at;
            in[i].len = sizeof(hd[i]) + len;
            at += sizeof(hd[i]) + len;
        }
        memcpy(ev_to, ev_from, evict_n);
        t2 = now_ns();
        cvia__dg_mac_batch(&k, in, nd, NULL, NULL, tail, tag, NULL);
        t3 = now_ns();
        for (int i = 0; i < nd; i++)
            bad += in[i].mac_ok != 1;
        ts[r] = t1 - t0;
        tr[r] = t3 - t2;
        /* the receiver with its copy: alone, after the check, in the check */
        for (int mode = 0; mode < 3; mode++) {
            memset(dest, 0, (size_t)size);
            memcpy(ev_to, ev_from, evict_n);
            t2 = now_ns();
            if (mode == 2)
                for (int i = 0; i < nd; i++)
                    in[i].place = dest + (size_t)i * (size_t)seg;
            if (mode)
                cvia__dg_mac_batch(&k, in, nd, NULL, NULL, tail, tag, NULL);
            for (int i = 0; i < nd; i++)
                if (!in[i].place)
                    memcpy(dest + (size_t)i * (size_t)seg, in[i].data + sizeof(hd[i]),
                           in[i].len - sizeof(hd[i]));
            t3 = now_ns();
            for (int i = 0; i < nd; i++) {
                bad += mode && in[i].mac_ok != 1;
                in[i].place = NULL;
            }
            bad += memcmp(dest, user, (size_t)size) != 0;
            (mode == 0 ? tc : mode == 1 ? t2p : tf)[r] = t3 - t2;
        }
    }
    qsort(ts, (size_t)rounds, sizeof(double), cmp_d);
    qsort(tr, (size_t)rounds, sizeof(double), cmp_d);
    printf("message %ld B in %d datagrams of %ld B, %ld rounds: seal %.0f ns (min %.0f), "
           "check %.0f ns (min %.0f), both %.0f ns: %.1f ns per datagram; %d failed\n",
           size, nd, seg, rounds, ts[rounds / 2], ts[0], tr[rounds / 2], tr[0],
           ts[rounds / 2] + tr[rounds / 2], (ts[rounds / 2] + tr[rounds / 2]) / nd, bad);
    qsort(tc, (size_t)rounds, sizeof(double), cmp_d);
    qsort(t2p, (size_t)rounds, sizeof(double), cmp_d);
    qsort(tf, (size_t)rounds, sizeof(double), cmp_d);
    printf("receiver with the copy: copy alone %.0f ns (min %.0f), check then copy %.0f ns "
           "(min %.0f), check with the copy %.0f ns (min %.0f); MAC's share %.0f / %.0f ns\n",
           tc[rounds / 2], tc[0], t2p[rounds / 2], t2p[0], tf[rounds / 2], tf[0],
           t2p[rounds / 2] - tc[rounds / 2], tf[rounds / 2] - tc[rounds / 2]);
    cvia__dg_keys_free(&k);
    free(tc), free(t2p), free(tf), free(dest);
    free(user), free(gro_mem), free(ev_from), free(ev_to), free(hd), free(tail), free(tag), free(in);
    free(ts), free(tr);
    return bad ? 1 : 0;
}
