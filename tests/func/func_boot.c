/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The wire-up layer's contract, whatever serves it (cvia-run's socket or
 * a PMIx server under mpirun): func_boot [CASE] [--token=X]. Every rank
 * publishes values that carry the jobid, so a get that succeeds also
 * proves that every rank derived the same jobid; local ranks must be
 * distinct; missing keys give -ENOENT, short buffers -ENOSPC; a key
 * without the ".<rank>" suffix is still found. Rank 0 prints "ok boot". */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/cvia_errno.h>
#include "boot/boot.h"

static int rank = -1;

#define FAIL(...) do { fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK_RC(call, want) do { int rc_ = (call); if (rc_ != (want)) \
        FAIL("%s -> %d (%s), want %d", #call, rc_, cvia_strerror(rc_), (want)); } while (0)

int main(void)
{
    struct cvia_boot *b;
    struct cvia_boot_event ev[4];
    char key[64], want[128], got[128], tiny[4];
    int size, lrank, lsize;
    uint64_t jobid;

    CHECK_RC(cvia__boot_open(60.0, &b), 0);
    rank = cvia__boot_rank(b);
    size = cvia__boot_size(b);
    lrank = cvia__boot_local_rank(b);
    lsize = cvia__boot_local_size(b);
    jobid = cvia__boot_jobid(b);
    if (size < 1 || rank < 0 || rank >= size || lsize < 1 || lsize > size ||
        lrank < 0 || lrank >= lsize)
        FAIL("identity rank %d size %d local %d/%d", rank, size, lrank, lsize);
    if (size > 1 && cvia__boot_is_singleton(b))
        FAIL("a job of %d ranks calls itself a singleton", size);
    printf("rank %d of %d, local %d of %d, jobid %016" PRIx64 "\n", rank, size, lrank,
           lsize, jobid);

    for (int round = 0; round < 2; round++) {
        snprintf(key, sizeof(key), "t%d.%d", round, rank);
        snprintf(want, sizeof(want), "v%d-%d-%016" PRIx64, round, rank, jobid);
        CHECK_RC(cvia__boot_put(b, key, want), 0);
        snprintf(key, sizeof(key), "lrank.%d", rank);
        snprintf(want, sizeof(want), "%d", lrank);
        if (round == 0)
            CHECK_RC(cvia__boot_put(b, key, want), 0);
        if (rank == 0 && round == 0)
            CHECK_RC(cvia__boot_put(b, "nosuffix", "from-rank-0"), 0);
        CHECK_RC(cvia__boot_fence(b), 0);
        for (int p = 0; p < size; p++) {
            snprintf(key, sizeof(key), "t%d.%d", round, p);
            snprintf(want, sizeof(want), "v%d-%d-%016" PRIx64, round, p, jobid);
            CHECK_RC(cvia__boot_get(b, key, got, sizeof(got)), 0);
            if (strcmp(got, want))
                FAIL("%s = '%s', want '%s' (another jobid?)", key, got, want);
        }
    }
    /* every rank of this host has its own local rank */
    if (lsize == size) {
        unsigned char *seen = calloc((size_t)size, 1);
        for (int p = 0; seen && p < size; p++) {
            int l;
            snprintf(key, sizeof(key), "lrank.%d", p);
            CHECK_RC(cvia__boot_get(b, key, got, sizeof(got)), 0);
            l = atoi(got);
            if (l < 0 || l >= size || seen[l]++)
                FAIL("local rank %d of rank %d is out of range or taken twice", l, p);
        }
        free(seen);
    }
    CHECK_RC(cvia__boot_get(b, "nosuffix", got, sizeof(got)), 0);
    if (strcmp(got, "from-rank-0"))
        FAIL("nosuffix = '%s'", got);
    CHECK_RC(cvia__boot_get(b, "missing.0", got, sizeof(got)), -ENOENT);
    snprintf(key, sizeof(key), "t0.%d", size + 7);   /* no such rank */
    CHECK_RC(cvia__boot_get(b, key, got, sizeof(got)), -ENOENT);
    CHECK_RC(cvia__boot_get(b, "t0.0", tiny, sizeof(tiny)), -ENOSPC);
    CHECK_RC(cvia__boot_put(b, "bad key", "x"), -EINVAL);
    CHECK_RC(cvia__boot_poll(b, ev, 4), 0);
    CHECK_RC(cvia__boot_fence(b), 0);
    CHECK_RC(cvia__boot_fini(b), 0);
    cvia__boot_close(b);
    if (rank == 0)
        printf("ok boot (%d ranks)\n", size);
    return 0;
}
