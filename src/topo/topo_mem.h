/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Memory tiers: the NUMA nodes of a topology ranked fastest first, each
 * core's local node in every tier, and the placement a memory kind
 * ("hbw", "ddr", "node:N", ...) stands for on a set of CPUs. A pure
 * function of the hwloc topology (live, or the XML in CVIA_TOPOLOGY) and
 * an optional override, so a 2-core machine can check a KNL's decisions.
 *
 * Ranking, the first rule that tells the nodes apart wins:
 *   1. the override (CVIA_MEM_TIERS, "hbw:4-7;ddr:0-3": tiers fastest
 *      first, nodes by OS index);
 *   2. NUMA subtypes: "MCDRAM"/"HBM" above plain memory ("DRAM" or none),
 *      "NVM"/"SPM"/"CXL-*" and "GPUMemory" below it (hwloc 3 dropped its
 *      KNL-only detection, so no KNL info key is read). First because
 *      they survive every way of recording a machine: hwloc 1.x XML keeps
 *      them, memory attributes it drops;
 *   3. hwloc's Bandwidth memory attribute (HMAT), for each node its best
 *      initiator among those local to it; then the Latency attribute;
 *      nodes within 25% of each other share a tier;
 *   4. locality, capacity and distances: each core's own node
 *      (topo_cpu.h) is ordinary memory ("ddr"). An untyped node of the
 *      very locality of an own node, at most 3/4 of its size and, on a
 *      machine of several packages, nearer to it than any other
 *      package's own node (so distances are needed there), is on-package
 *      memory: "hbw", a tier before ddr (KNL's MCDRAM, Xeon Max's HBM
 *      recorded without subtypes or attributes: hwloc 2.2 in flat mode).
 *      A node of an own node's locality, kind and about its size shares
 *      its tier; the others form tiers after it ("far"), ordered by their
 *      distance to the nearest own node (one "far" tier without
 *      distances). Distances alone never make a node high-bandwidth:
 *      they are latencies (KNL's MCDRAM is farther than the other
 *      clusters' DDR).
 * Names: a subtype names its tier (MCDRAM/HBM: hbw; DRAM: ddr); else the
 * untyped tier holding most cores' own nodes is "ddr", tiers faster than
 * it "hbw", slower ones "slow" (numbered from the second: hbw2, slow2). The
 * capacity is hwloc's Capacity attribute. Memory that
 * hwloc shows only as devices (CXL memory devices, DAX) is not a NUMA node
 * and so not a tier; the note says so. */
#ifndef COREVIA_TOPO_TOPO_MEM_H
#define COREVIA_TOPO_TOPO_MEM_H

#include <hwloc.h>
#include <stddef.h>
#include <stdint.h>

#define CVIA_TIER_NAMELEN 16
#define CVIA_TIERS_MAX    8

/* What ranked the tiers. */
enum cvia_tiers_by {
    CVIA_TIERS_BY_OVERRIDE,
    CVIA_TIERS_BY_BANDWIDTH,
    CVIA_TIERS_BY_LATENCY,
    CVIA_TIERS_BY_SUBTYPE,
    CVIA_TIERS_BY_DISTANCE,
    CVIA_TIERS_BY_ONPACKAGE,    /* locality, capacity, distances: hbw found */
    CVIA_TIERS_BY_NONE,         /* one node, or all alike */
};

struct cvia_tier_node {
    unsigned os;                /* OS index: what mbind and numa_maps use */
    int      logical;
    int      tier;              /* index into tiers->tier */
    char     subtype[16];       /* hwloc subtype ("MCDRAM") or "" */
    uint64_t capacity;          /* bytes */
    uint64_t bandwidth;         /* MiB/s (hwloc Bandwidth); 0: unknown */
    uint64_t latency;           /* ns (hwloc Latency); 0: unknown */
    int      pus;               /* PUs in its locality */
};

struct cvia_tier {
    char     name[CVIA_TIER_NAMELEN];
    hwloc_bitmap_t nodes;       /* OS indices */
    uint64_t capacity;
};

struct cvia_tiers {
    int by;                     /* enum cvia_tiers_by */
    int nnodes;
    struct cvia_tier_node *node;    /* hwloc logical order */
    int ntiers;
    struct cvia_tier tier[CVIA_TIERS_MAX];  /* fastest first */
    int ncores;
    int *local;                 /* [core * CVIA_TIERS_MAX + tier]: the core's
                                 * node in that tier (OS index), -1 if none */
    char note[256];             /* memory left out and why, or "" */
};

/* What ranked them, in words: "NUMA subtype", "nothing: one tier", ... */
const char *cvia__tiers_by_name(int by);

/* Rank @t's NUMA nodes into tiers. @override: CVIA_MEM_TIERS syntax, NULL
 * or "" for none. Returns 0, -CVIA_ECONFIG (bad override: @err says why),
 * -CVIA_ETOPO (no NUMA node), -ENOMEM. Free with cvia__tiers_free(). */
int  cvia__tiers_build(hwloc_topology_t t, const char *override,
                       struct cvia_tiers *tiers, char *err, size_t errcap);
void cvia__tiers_free(struct cvia_tiers *tiers);

/* Index of the tier named @name, -1 if none. */
int cvia__tiers_find(const struct cvia_tiers *tiers, const char *name);
/* The tier of OS node @os, -1 if the topology has no such node. */
int cvia__tiers_node_tier(const struct cvia_tiers *tiers, unsigned os);

/* -------------------------------------------------------------- kinds */

enum cvia_kind_type {
    CVIA_KIND_DEFAULT,          /* no policy: first touch, or the process's */
    CVIA_KIND_HBW,              /* the high-bandwidth tier, or -ENODEV */
    CVIA_KIND_HBW_PREFERRED,    /* hbw, else default (one warning) */
    CVIA_KIND_DDR,              /* ordinary memory */
    CVIA_KIND_NODE,             /* one NUMA node, by OS index */
    CVIA_KIND_NEAR_NIC,         /* ordinary memory local to an interface */
};

struct cvia_kind {
    int      type;
    unsigned node;              /* CVIA_KIND_NODE */
    char     nic[64];           /* CVIA_KIND_NEAR_NIC */
};

/* "default" (or NULL, ""), "hbw", "hbw-preferred", "ddr", "node:N",
 * "near-nic:IFNAME". 0 or -EINVAL. */
int cvia__kind_parse(const char *text, struct cvia_kind *k);
/* Back to text. */
void cvia__kind_format(const struct cvia_kind *k, char *buf, size_t cap);

/* Where @k puts memory for a process running on @where (PU OS indices;
 * NULL: anywhere). */
struct cvia_tier_decision {
    int  bind;                  /* 1: bind to @nodes; 0: default placement */
    hwloc_bitmap_t nodes;       /* OS indices; allocated by decide, free it */
    int  fallback;              /* hbw-preferred without hbw: default instead */
    char what[160];             /* one line: "hbw: node 4 (local to PUs 0)" */
};

/* Decide. The nodes of a tier are those local to the cores of @where
 * (each core's node in that tier), or the whole tier when @where covers
 * no core. Returns 0, or -ENODEV (no such tier, node or interface: @err
 * says which), -ENOMEM. d->nodes is allocated even on error (free it with
 * hwloc_bitmap_free). */
int cvia__tiers_decide(hwloc_topology_t t, const struct cvia_tiers *tiers,
                       const struct cvia_kind *k, hwloc_const_cpuset_t where,
                       struct cvia_tier_decision *d, char *err, size_t errcap);

#endif
