/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The DSM's counters, printed by rank 0 at the end: a table (one column
 * per rank and the sum) or JSON. One X-macro list gives both. */
#include <stdio.h>
#include <string.h>

#include "dsm/dsm.h"
#include "util/json.h"

#define DSM_COUNTERS(X)                         \
    X(read_faults)   X(write_faults)            \
    X(fetches)       X(pages_fetched)           \
    X(fetch_bytes)   X(pages_served)            \
    X(prefetches)    X(prefetch_hits)           \
    X(prefetch_waits)                           \
    X(twins)         X(diffs)                   \
    X(diff_bytes)    X(diffs_applied)           \
    X(notices_sent)  X(notices_recv)            \
    X(invalidations) X(intervals)               \
    X(lock_local)    X(lock_remote)             \
    X(barriers)      X(msgs_sent)               \
    X(msg_bytes)     X(rdma_writes)             \
    X(rdma_bytes)

#define DSM_TIMES(X) X(barrier_time) X(fault_time) X(lock_time)

static void sum_stats(const cvia_dsm_stats_t *all, int n, cvia_dsm_stats_t *t)
{
    *t = (cvia_dsm_stats_t){ 0 };
    for (int r = 0; r < n; r++) {
#define X(f) t->f += all[r].f;
        DSM_COUNTERS(X)
        DSM_TIMES(X)
#undef X
    }
}

static void json_one(struct jw *w, const char *key, const cvia_dsm_stats_t *s)
{
    jw_obj(w, key);
#define X(f) jw_int(w, #f, (long long)s->f);
    DSM_COUNTERS(X)
#undef X
#define X(f) jw_fixed(w, #f, s->f, 6);
    DSM_TIMES(X)
#undef X
    jw_end_obj(w);
}

/* A copy of the counters while the service thread may be adding to them:
 * every member is 8 bytes, each loaded on its own. */
void dsm_stats_snapshot(struct dsm *d, cvia_dsm_stats_t *s)
{
    _Static_assert(sizeof(*s) % sizeof(uint64_t) == 0 &&
                   _Alignof(cvia_dsm_stats_t) == _Alignof(uint64_t),
                   "cvia_dsm_stats_t holds 8-byte members only");
    const unsigned char *from = (const unsigned char *)&d->st;
    unsigned char *to = (unsigned char *)s;

    for (size_t i = 0; i < sizeof(*s); i += sizeof(uint64_t)) {
        uint64_t w;
        __atomic_load((const uint64_t *)(const void *)(from + i), &w, __ATOMIC_RELAXED);
        memcpy(to + i, &w, sizeof(w));
    }
}

void dsm_stats_print(struct dsm *d, const cvia_dsm_stats_t *all, int n, FILE *out, int json)
{
    static const char *const fetch[] = { "zcopy", "copy", "pull" };
    const char *mode = fetch[d->cfg.fetch < 3 ? d->cfg.fetch : 0];
    cvia_dsm_stats_t t;

    sum_stats(all, n, &t);
    if (json) {
        struct jw w;

        jw_init(&w, out);
        jw_obj(&w, NULL);
        jw_obj(&w, "dsm");
        jw_int(&w, "ranks", n);
        jw_int(&w, "unit", (long long)d->unit);
        jw_str(&w, "fetch", mode);
        json_one(&w, "total", &t);
        jw_arr(&w, "per_rank");
        for (int r = 0; r < n; r++)
            json_one(&w, NULL, &all[r]);
        jw_end_arr(&w);
        jw_end_obj(&w);
        jw_end_obj(&w);
        return;
    }
    fprintf(out, "# corevia dsm statistics: %d ranks, unit %zu bytes, fetch %s\n", n,
            d->unit, mode);
    fprintf(out, "%-14s %14s", "counter", "total");
    for (int r = 0; r < n && n > 1; r++)
        fprintf(out, " %12s%-2d", "rank", r);
    fputc('\n', out);
#define X(f) do {                                                            \
        fprintf(out, "%-14s %14llu", #f, (unsigned long long)t.f);           \
        for (int r = 0; r < n && n > 1; r++)                                 \
            fprintf(out, " %14llu", (unsigned long long)all[r].f);           \
        fputc('\n', out);                                                    \
    } while (0);
    DSM_COUNTERS(X)
#undef X
#define X(f) do {                                                            \
        fprintf(out, "%-14s %14.6f", #f, t.f);                               \
        for (int r = 0; r < n && n > 1; r++)                                 \
            fprintf(out, " %14.6f", all[r].f);                               \
        fputc('\n', out);                                                    \
    } while (0);
    DSM_TIMES(X)
#undef X
}
