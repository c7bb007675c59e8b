/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench mbw's pairing: one CPU per rank from the hwloc topology, so
 * that each pair shares an L2 cache (intra-tile), none does (inter-tile),
 * or ranks fill the cores in order (compact) or spread over them
 * (scatter). A pure function of the topology and the usable CPUs, so
 * --plan on a recorded machine (CVIA_TOPOLOGY) shows a KNL's pairing. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem_tier.h"
#include "topo/topo.h"
#include "topo/topo_cpu.h"
#include "topo/topo_mem.h"
#include "bench_mbw_int.h"

const char *const mbw_pairing_names[MBW_PAIR_N] = {
    "intra-tile", "inter-tile", "compact", "scatter",
};

static int mbw_l2(hwloc_topology_t t, int core)
{
    hwloc_obj_t l2 = cvia__topo_core_cache(t, core, 2);
    return l2 ? (int)l2->logical_index : -1 - core;    /* none: a tile of its own */
}

/* Usable cores (logical indices, ascending) and each one's PU: --cpus, or
 * this process's CPUs, or every core of a recorded topology. */
static int mbw_usable(hwloc_topology_t t, const char *cpus, int xml, int *core, int *pu)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int n = 0, nc = cvia__topo_ncores(t);
    cpu_set_t cs;

    if (!set)
        mbw_fail("out of memory");
    if (cpus) {
        if (hwloc_bitmap_list_sscanf(set, cpus) < 0 || hwloc_bitmap_iszero(set))
            mbw_usage("--cpus: '%s' is not a CPU list (0-3,8)", cpus);
    } else if (xml) {
        hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(t));
    } else if (sched_getaffinity(0, sizeof(cs), &cs) == 0) {
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &cs))
                hwloc_bitmap_set(set, (unsigned)i);
    }
    for (int c = 0; c < nc; c++) {
        hwloc_obj_t o = cvia__topo_core(t, c);
        hwloc_bitmap_t both = hwloc_bitmap_alloc();
        if (!both)
            mbw_fail("out of memory");
        hwloc_bitmap_and(both, o->cpuset, set);
        if (!hwloc_bitmap_iszero(both)) {
            core[n] = c;
            pu[n++] = hwloc_bitmap_first(both);
        }
        hwloc_bitmap_free(both);
    }
    hwloc_bitmap_free(set);
    return n;
}

/* Plan one CPU per rank. 0, or 3 with a message when the machine cannot
 * give that pairing. */
int mbw_plan_make(hwloc_topology_t t, int pairs, int pairing, const char *cpus,
                  struct mbw_plan *p, char *err, size_t errcap)
{
    int nc = cvia__topo_ncores(t), nu, base, *U, *P, *taken, (*cand)[2] = NULL, ncand = 0;

    p->pairs = pairs;
    p->nranks = 2 * p->pairs;
    U = calloc((size_t)nc + 1, sizeof(int));
    P = calloc((size_t)nc + 1, sizeof(int));
    taken = calloc((size_t)nc + 1, sizeof(int));
    p->core = calloc((size_t)p->nranks, sizeof(int));
    p->pu = calloc((size_t)p->nranks, sizeof(int));
    if (!U || !P || !taken || !p->core || !p->pu)
        mbw_fail("out of memory");
    nu = p->usable = mbw_usable(t, cpus, p->xml, U, P);
    if (nu == 0) {
        snprintf(err, errcap, "no usable core (--cpus %s)", cpus ? cpus : "");
        goto fail;
    }
    p->oversub = p->nranks > nu;
    base = p->oversub ? (nu / 2 > 0 ? nu / 2 : 1) : p->pairs;   /* distinct pairs */

    switch (pairing) {
    case MBW_PAIR_COMPACT:
        for (int r = 0; r < p->nranks; r++)
            p->core[r] = r % nu;
        break;
    case MBW_PAIR_SCATTER:
        for (int r = 0; r < p->nranks; r++)
            p->core[r] = p->oversub ? r % nu : (int)((long)r * nu / p->nranks);
        break;
    case MBW_PAIR_INTRA:
        /* pairs of usable cores under one L2, tile after tile */
        cand = calloc((size_t)nu, sizeof(*cand));
        if (!cand)
            mbw_fail("out of memory");
        for (int i = 0; i < nu; i++) {
            int j;
            if (taken[i])
                continue;
            for (j = i + 1; j < nu; j++)
                if (!taken[j] && mbw_l2(t, U[j]) == mbw_l2(t, U[i]))
                    break;
            if (j < nu) {
                taken[i] = taken[j] = 1;
                cand[ncand][0] = i;
                cand[ncand++][1] = j;
            }
        }
        if (ncand == 0) {
            snprintf(err, errcap, "intra-tile: no two of the %d usable cores share an L2 "
                     "cache here, so no pair can run inside a tile", nu);
            goto fail;
        }
        if (ncand < base) {
            if (!p->oversub) {
                snprintf(err, errcap, "intra-tile: only %d pair(s) of usable cores share "
                         "an L2 cache, %d asked", ncand, p->pairs);
                goto fail;
            }
            base = ncand;
        }
        for (int k = 0; k < p->pairs; k++) {
            p->core[k] = cand[k % base][0];
            p->core[k + p->pairs] = cand[k % base][1];
        }
        break;
    case MBW_PAIR_INTER:
        /* senders in core order; each receiver the nearest free core (by
         * what they share: L3, NUMA node, package) outside the sender's
         * L2, taken first among the 2N first usable cores - the very cores
         * intra-tile uses - so that only the L2 differs */
        for (int k = 0; k < base; k++) {
            int s = 0, r = -1, rrel = CVIA_REL_COUNT, lim = 2 * base;
            while (s < nu && taken[s])
                s++;
            if (s == nu) {
                snprintf(err, errcap, "inter-tile: not enough usable cores");
                goto fail;
            }
            taken[s] = 1;
            for (int pass = 0; pass < 2 && r < 0; pass++, lim = nu)
                for (int j = 0; j < lim && j < nu; j++) {
                    int rel;
                    if (taken[j] || mbw_l2(t, U[j]) == mbw_l2(t, U[s]))
                        continue;
                    rel = cvia__topo_relation(t, U[s], U[j]);
                    if (rel < rrel) {
                        r = j;
                        rrel = rel;
                    }
                }
            if (r < 0) {
                snprintf(err, errcap, "inter-tile: no free usable core outside the L2 of "
                         "core %d (all %d usable cores share one L2)", U[s], nu);
                goto fail;
            }
            taken[r] = 1;
            p->core[k] = s;
            p->core[k + p->pairs] = r;
        }
        for (int k = base; k < p->pairs; k++) {
            p->core[k] = p->core[k % base];
            p->core[k + p->pairs] = p->core[k % base + p->pairs];
        }
        break;
    }
    for (int r = 0; r < p->nranks; r++) {     /* usable index -> core, PU */
        int i = p->core[r];
        p->core[r] = U[i];
        p->pu[r] = P[i];
    }
    free(U);
    free(P);
    free(taken);
    free(cand);
    return 0;
fail:
    free(U);
    free(P);
    free(taken);
    free(cand);
    mbw_plan_free(p);
    return 3;
}

void mbw_plan_free(struct mbw_plan *p)
{
    free(p->core);
    free(p->pu);
    p->core = p->pu = NULL;
}

/* The plan as the launching cvia-bench exported it. */
int mbw_plan_from_env(hwloc_topology_t t, int nranks, struct mbw_plan *p)
{
    const char *e = getenv(MBW_ENV_PLAN);
    char *end;

    if (!e)
        return -1;
    p->usable = (int)strtol(e, &end, 10);
    if (*end != ':' || p->usable <= 0)
        mbw_fail("%s: malformed plan", MBW_ENV_PLAN);
    e = end + 1;
    p->nranks = nranks;
    p->oversub = nranks > p->usable;
    p->pairs = nranks / 2;
    p->core = calloc((size_t)nranks, sizeof(int));
    p->pu = calloc((size_t)nranks, sizeof(int));
    if (!p->core || !p->pu)
        mbw_fail("out of memory");
    for (int r = 0; r < nranks; r++) {
        long v = strtol(e, &end, 10);
        if (end == e || v < 0 || (*end != ',' && *end != '\0'))
            mbw_fail("%s: malformed plan", MBW_ENV_PLAN);
        p->pu[r] = (int)v;
        p->core[r] = t ? cvia__topo_core_of_pu(t, (unsigned)v) : -1;
        e = *end ? end + 1 : end;
    }
    return 0;
}

/* One line per pair: cores, PUs, what they share, their hbw (else ddr)
 * nodes; and a summary. */
void mbw_plan_print(FILE *f, hwloc_topology_t t, const struct cvia_tiers *T,
                           const struct mbw_plan *p, int pairing, const char *pre)
{
    int counts[CVIA_REL_COUNT] = { 0 }, g = -1;

    if (T && (g = cvia__tiers_find(T, "hbw")) < 0)
        g = cvia__tiers_find(T, "ddr");
    fprintf(f, "%s%-5s %-13s %-13s %-7s %s\n", pre, "pair", "sender", "receiver",
            "shares", g >= 0 ? T->tier[g].name : "");
    for (int k = 0; k < p->pairs; k++) {
        int s = k, r = k + p->pairs, rel = -1;
        char a[32], b[32], mem[32] = "";
        if (p->core[s] >= 0 && p->core[r] >= 0) {
            rel = cvia__topo_relation(t, p->core[s], p->core[r]);
            counts[rel]++;
        }
        snprintf(a, sizeof(a), "%d:c%d/p%d", s, p->core[s], p->pu[s]);
        snprintf(b, sizeof(b), "%d:c%d/p%d", r, p->core[r], p->pu[r]);
        if (g >= 0 && p->core[s] >= 0 && p->core[r] >= 0 && p->core[s] < T->ncores &&
            p->core[r] < T->ncores)
            snprintf(mem, sizeof(mem), "%d %d", T->local[p->core[s] * CVIA_TIERS_MAX + g],
                     T->local[p->core[r] * CVIA_TIERS_MAX + g]);
        fprintf(f, "%s%-5d %-13s %-13s %-7s %s\n", pre, k, a, b,
                rel >= 0 ? cvia__topo_rel_name(rel) : "?", mem);
    }
    fprintf(f, "%s%s:", pre, pairing >= 0 ? mbw_pairing_names[pairing] : "pairs");
    for (int i = 0; i < CVIA_REL_COUNT; i++)
        if (counts[i])
            fprintf(f, " %d pair(s) %s", counts[i],
                    i == CVIA_REL_L2 ? "share an L2 (intra-tile)" :
                    i == CVIA_REL_SAME ? "on one core" : i == CVIA_REL_L3 ?
                    "share an L3, not an L2 (inter-tile)" : i == CVIA_REL_NUMA ?
                    "share a NUMA node, no cache (inter-tile)" : i == CVIA_REL_PACKAGE ?
                    "share a package only (inter-tile)" : "in different packages (inter-tile)");
    fprintf(f, "\n");
    if (p->oversub)
        fprintf(f, "%soversubscribed: %d ranks on %d usable core(s): ranks share cores, "
                "so the figures show correctness, not performance\n", pre, p->nranks,
                p->usable);
}

int mbw_open_topo(hwloc_topology_t *t, const struct cvia_tiers **T, char *source,
                         size_t cap, int *xml)
{
    int rc;

    if ((rc = cvia__mem_tiers(t, T)) < 0)
        return rc;      /* said why */
    {
        const char *e = getenv("CVIA_TOPOLOGY"), *slash;
        snprintf(source, cap, "%s", e && *e ? e : "this machine");
        if ((slash = strrchr(source, '/')))
            memmove(source, slash + 1, strlen(slash + 1) + 1);
        *xml = e && *e;
    }
    return 0;
}

