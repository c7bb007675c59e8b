/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Between bench_mbw.c (options, job, measuring, report) and
 * bench_mbw_plan.c (the pairing). Private to cvia-bench mbw. */
#ifndef CVIA_BENCH_MBW_INT_H
#define CVIA_BENCH_MBW_INT_H

#include <hwloc.h>
#include <stddef.h>
#include <stdio.h>

#include "topo/topo_mem.h"

/* The plan, set by the launching cvia-bench: "USABLE:PU,PU,..." (usable
 * cores, then each rank's CPU). Not CVIA_*: the library warns about CVIA_
 * names it does not know. */
#define MBW_ENV_PLAN "COREVIA_BENCH_MBW"

enum { MBW_PAIR_INTRA, MBW_PAIR_INTER, MBW_PAIR_COMPACT, MBW_PAIR_SCATTER, MBW_PAIR_N };
extern const char *const mbw_pairing_names[MBW_PAIR_N];

struct mbw_plan {
    int  pairs, nranks, usable, oversub;   /* oversub: more ranks than cores */
    int *core, *pu;                 /* per rank: core logical index, PU OS index */
    int  xml;                       /* the topology is a recorded one */
};

/* Usage error (exit 2) and run-time failure (takes the job down, exit 1);
 * under a launcher only rank 0 prints usage errors. */
__attribute__((format(printf, 1, 2), noreturn)) void mbw_usage(const char *fmt, ...);
__attribute__((format(printf, 1, 2), noreturn)) void mbw_fail(const char *fmt, ...);

/* Plan one CPU per rank for @pairs pairs (rank i -> rank i+pairs) among
 * @cpus (NULL: this process's CPUs; every CPU of a recorded topology).
 * More ranks than usable cores: the distinct pairs that fit, repeated
 * (p->oversub). 0, or 3 with @err when the machine cannot give that
 * pairing (no two cores under one L2, ...). */
int  mbw_plan_make(hwloc_topology_t t, int pairs, int pairing, const char *cpus,
                   struct mbw_plan *p, char *err, size_t errcap);
/* The plan the launching cvia-bench exported (MBW_ENV_PLAN); -1: none. */
int  mbw_plan_from_env(hwloc_topology_t t, int nranks, struct mbw_plan *p);
void mbw_plan_free(struct mbw_plan *p);
/* One line per pair (cores, PUs, what they share, their nodes of the
 * fastest tier) and a summary, each line starting with @pre. */
void mbw_plan_print(FILE *f, hwloc_topology_t t, const struct cvia_tiers *T,
                    const struct mbw_plan *p, int pairing, const char *pre);
/* The topology and tiers the library decides on, and its name (the file
 * of CVIA_TOPOLOGY without its directory, or "this machine"). */
int  mbw_open_topo(hwloc_topology_t *t, const struct cvia_tiers **T, char *source,
                   size_t cap, int *xml);

#endif
