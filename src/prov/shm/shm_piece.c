/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Medium messages published in pieces (issue 17), and the probe that
 * chooses the piece size on this machine.
 *
 * A message that fits one slot is copied twice: the sender copies it into
 * the slot and publishes it, then the receiver copies it out. Written whole,
 * the two copies follow one another; published a piece per slot, the
 * receiver copies piece k out while the sender copies piece k+1 in, and only
 * the last piece's copy-out follows the sender's last store. Each piece
 * costs one more hand-off of a slot's sequence line, so a piece too small
 * loses what the overlap gains (on the EPYC KVM guest: 4 KiB in 2 KiB
 * pieces 0.83x the time of one slot, in 1 KiB pieces 0.98x; BENCHMARKS.md).
 *
 * The probe runs what a send does, on two threads of this process on two
 * CPUs (the receiver here, the sender on any other CPU): a ring of the
 * endpoint's geometry, a message of 4 KiB, 8 KiB and 16 KiB (those that fit
 * a slot) written whole and in pieces of 2 and 4 KiB, each one-way
 * transfer timed by the receiver, the fastest of interleaved tries kept
 * (a loaded machine only makes some slower). It keeps the piece with the
 * lowest sum over the sizes if that beats whole slots by 3 % or more, else
 * 0 (whole slots). No 1 KiB candidate: the probe's receiver spins on each
 * piece in a tight loop, the provider's goes back through its progress
 * loop, so the probe credits small pieces with more than they give: it
 * chose 1k in 4 of 5 runs in the host's slow state, where 1 KiB pieces took
 * 0.98x the time of whole slots in cvia-bench's ping-pong and 2 KiB pieces
 * 0.83x (BENCHMARKS.md). Cached per boot beside the rendezvous threshold's file
 * ($XDG_RUNTIME_DIR/corevia-shm-piece, or /dev/shm/corevia-shm-piece-UID;
 * 0600, this user's only), keyed by the boot id and the slot size; a file
 * lock makes one rank measure while the others wait. One CPU: 0. */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "prov/shm/shm.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/param.h"
#include "util/ring.h"

#define PIECE_NSIZES   3            /* 4, 8, 16 KiB */
#define PIECE_NCHOICES 3            /* whole, 2k, 4k */
#define PIECE_TRIES    64           /* per size and choice, at most */
#define PIECE_BUDGET_S 2.0          /* the whole probe; past it: no answer */
#define PIECE_SIZE_S   0.01         /* per size, once 4 rounds are in */
#define PIECE_NSLOTS   64
#define PIECE_FORMAT   "corevia-shm-piece 2"   /* 2: validated, dated (shm_tune.c) */


static const size_t piece_choice[PIECE_NCHOICES] = { 0, 2048, 4096 };

static const struct cvia_param piece_param = {
    "PIECE", "0", CVIA_PARAM_SIZE, 0, "", 0, 0, NULL
};

int shm_piece_parse(const char *text, size_t *piece, int *is_auto)
{
    *is_auto = !strcmp(text, "auto");
    if (*is_auto)
        return 0;
    if (cvia__param_parse(&piece_param, text, piece))
        return -1;
    return *piece && *piece < 64 ? -1 : 0;
}

struct piece_probe {
    struct cvia_ring ring;
    unsigned char *src, *dst;
    size_t cap;                           /* payload bytes per slot */
    double deadline;
    _Alignas(64) _Atomic uint64_t cmd;    /* receiver -> sender: seq */
    _Atomic uint64_t len, piece;
    _Alignas(64) uint64_t prod_pos;
    _Alignas(64) _Atomic int failed;
};

static int piece_late(struct piece_probe *t, unsigned *spins)
{
    if (++*spins & 0xffff)
        return atomic_load_explicit(&t->failed, memory_order_relaxed);
    if (cvia__clock_s() > t->deadline)
        atomic_store_explicit(&t->failed, 1, memory_order_relaxed);
    return atomic_load_explicit(&t->failed, memory_order_relaxed);
}

/* The sender: each command is one message, in slots of at most piece bytes. */
static void *piece_sender(void *arg)
{
    struct piece_probe *t = arg;
    uint64_t seen = 0;
    unsigned spins = 0;

    for (;;) {
        uint64_t c;
        while ((c = atomic_load_explicit(&t->cmd, memory_order_acquire)) == seen)
            if (piece_late(t, &spins))
                return NULL;
        seen = c;
        if (c == UINT64_MAX)
            return NULL;
        size_t len = (size_t)atomic_load_explicit(&t->len, memory_order_relaxed);
        size_t piece = (size_t)atomic_load_explicit(&t->piece, memory_order_relaxed);
        for (size_t off = 0; off < len;) {
            unsigned char *s;
            size_t n = shm_piece_len(t->cap, piece, len, len - off);
            while (!(s = cvia_ring_claim(&t->ring, t->prod_pos)))
                if (piece_late(t, &spins))
                    return NULL;
            memcpy(s + (shm_piece_on(t->cap, piece, len) ? SHM_CACHELINE : SHM_SLOT_HDR),
                   t->src + off, n);
            cvia_ring_publish(s, t->prod_pos++);
            off += n;
        }
    }
}

/* One message, as the receiver sees it: seconds, -1 when late. */
static double piece_once(struct piece_probe *t, size_t len, size_t piece, uint64_t seq,
                         uint64_t *cons_pos)
{
    unsigned spins = 0;
    double t0 = cvia__clock_s();

    atomic_store_explicit(&t->len, len, memory_order_relaxed);
    atomic_store_explicit(&t->piece, piece, memory_order_relaxed);
    atomic_store_explicit(&t->cmd, seq, memory_order_release);
    for (size_t off = 0; off < len;) {
        unsigned char *s;
        size_t n = shm_piece_len(t->cap, piece, len, len - off);
        while (!(s = cvia_ring_peek(&t->ring, *cons_pos)))
            if (piece_late(t, &spins))
                return -1;
        memcpy(t->dst + off, s + (shm_piece_on(t->cap, piece, len) ? SHM_CACHELINE :
                                  SHM_SLOT_HDR), n);
        cvia_ring_release(&t->ring, s, (*cons_pos)++);
        off += n;
    }
    return cvia__clock_s() - t0;
}

/* best[s][c]: fastest transfer of size 4k << s with piece_choice[c]. */
static int piece_measure(uint32_t slot_size, double best[PIECE_NSIZES][PIECE_NCHOICES])
{
    struct piece_probe *t;
    pthread_t th;
    int me = sched_getcpu(), ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), rc = 0;
    uint64_t seq = 0, cons_pos = 0;
    const size_t max = 16384;

    if (ncpu < 2 || me < 0)
        return -ENOTSUP;   /* one CPU: nothing overlaps */
    if (posix_memalign((void **)&t, 64, sizeof(*t)))
        return -ENOMEM;
    memset(t, 0, sizeof(*t));
    t->cap = slot_size - SHM_SLOT_HDR;
    cvia_ring_layout(&t->ring, NULL, PIECE_NSLOTS, slot_size);
    if (posix_memalign((void **)&t->ring.base, 4096, cvia_ring_bytes(PIECE_NSLOTS, slot_size)) ||
        !(t->src = malloc(max)) || !(t->dst = malloc(max))) {
        rc = -ENOMEM;
        goto out;
    }
    memset(t->src, 0x5a, max);
    memset(t->dst, 0, max);
    cvia_ring_init(&t->ring);
    t->deadline = cvia__clock_s() + PIECE_BUDGET_S;
    if ((rc = shm_probe_thread(&th, me, ncpu, piece_sender, t)))
        goto out;
    for (int s = 0; s < PIECE_NSIZES && !rc; s++) {
        size_t len = (size_t)4096 << s;
        double t0 = cvia__clock_s();
        for (int c = 0; c < PIECE_NCHOICES; c++)
            best[s][c] = 1e9;
        if (len > t->cap)
            continue;   /* needs more than a slot: not a one-slot message */
        for (int k = 0; k < PIECE_TRIES && !rc && (k < 4 || cvia__clock_s() - t0 < PIECE_SIZE_S); k++)
            for (int c = 0; c < PIECE_NCHOICES && !rc; c++) {
                double d = piece_once(t, len, piece_choice[c], ++seq, &cons_pos);
                if (d < 0)
                    rc = -ETIMEDOUT;
                else if (d < best[s][c])
                    best[s][c] = d;
            }
    }
    if (atomic_load(&t->failed))
        rc = -ETIMEDOUT;
    atomic_store_explicit(&t->failed, 1, memory_order_relaxed);   /* sender: stop */
    atomic_store_explicit(&t->cmd, UINT64_MAX, memory_order_release);
    pthread_join(th, NULL);
out:
    free(t->src);
    free(t->dst);
    free(t->ring.base);
    free(t);
    return rc;
}

/* The piece with the lowest sum over the measured sizes, if it beats whole
 * slots by 3 % or more; else 0. */
static size_t piece_decide(double best[PIECE_NSIZES][PIECE_NCHOICES])
{
    double sum[PIECE_NCHOICES] = { 0 };
    int pick = 0;

    for (int c = 0; c < PIECE_NCHOICES; c++)
        for (int s = 0; s < PIECE_NSIZES; s++)
            if (best[s][0] < 1e9)
                sum[c] += best[s][c];
    for (int c = 1; c < PIECE_NCHOICES; c++)
        if (sum[c] < sum[pick])
            pick = c;
    return pick && sum[pick] <= 0.97 * sum[0] ? piece_choice[pick] : 0;
}

int shm_tune_piece(uint32_t slot_size, size_t *piece, int *cached, int flags)
{
    char path[512] = "", boot[64] = "", key[160], text[1024], why[96] = "";
    double best[PIECE_NSIZES][PIECE_NCHOICES], best2[PIECE_NSIZES][PIECE_NCHOICES];
    struct shm_probe_load load;
    int fd = -1, rc;
    size_t p1 = 0, p2 = 0;

    *cached = 0;
    *piece = 0;
    shm_boot_id(boot, sizeof(boot));
    snprintf(key, sizeof(key), "%s\nboot %s\nslot %u\n", PIECE_FORMAT, boot, (unsigned)slot_size);
    if (boot[0])
        fd = shm_cache_open("piece", path, sizeof(path), 10000);   /* two budgets */
    if (fd >= 0) {
        ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
        unsigned long long v;
        const char *p;
        int verdict;
        text[n > 0 ? n : 0] = 0;
        if (n > 0 && !strncmp(text, key, strlen(key)) &&
            (verdict = shm_cache_verdict(text, flags)) >= 0) {
            if (verdict == 0) {   /* a rejected probe, not long ago: whole slots */
                close(fd);
                return -EBUSY;
            }
            if ((p = strstr(text, "\npiece ")) && sscanf(p, "\npiece %llu", &v) == 1 &&
                (v == 0 || (v >= 64 && v <= slot_size))) {
                *piece = (size_t)v;
                *cached = 1;
                close(fd);
                return 0;
            }
        }
    }
    /* twice, on a quiet machine, the same answer: else rejected */
    shm_probe_load_begin(&load);
    rc = piece_measure(slot_size, best);
    if (!rc && (flags & SHM_PROBE_NOCHECK))   /* one measurement, as it is */
        memcpy(best2, best, sizeof(best));
    else if (!rc && shm_probe_load_end(&load, why, sizeof(why)))
        rc = -EBUSY;   /* busy already: no second measurement */
    else if (!rc && !(rc = piece_measure(slot_size, best2)) &&
             shm_probe_load_end(&load, why, sizeof(why)))
        rc = -EBUSY;
    if (!rc && (p1 = piece_decide(best)) != (p2 = piece_decide(best2))) {
        snprintf(why, sizeof(why), "two measurements chose %zu and %zu bytes", p1, p2);
        rc = -EBUSY;
    }
    rc = shm_probe_reject(rc, fd, path, key, why, "piece size", "whole slots");
    if (!rc) {
        size_t len = strlen(key);
        *piece = p1;
        memcpy(text, key, len);
        len += (size_t)shm_cache_stamp(text + len, sizeof(text) - len, NULL);
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "piece %zu\n# size  whole_ns  2k_ns  4k_ns (fastest one-way)\n",
                                *piece);
        for (int s = 0; s < PIECE_NSIZES && len < sizeof(text); s++)
            if (best[s][0] < 1e9)
                len += (size_t)snprintf(text + len, sizeof(text) - len, "%d %.0f %.0f %.0f\n",
                                        4096 << s, best[s][0] * 1e9, best[s][1] * 1e9,
                                        best[s][2] * 1e9);
        if (len >= sizeof(text))
            len = sizeof(text) - 1;
        if (fd >= 0 && (ftruncate(fd, 0) || pwrite(fd, text, len, 0) != (ssize_t)len))
            cvia_warn(SHM, "cannot write %s: %s", path, strerror(errno));
        cvia_info(SHM, "piece size measured: %zu bytes", *piece);
    }
    if (fd >= 0)
        close(fd);
    return rc;
}
