/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Topology from hwloc: the live machine, or the XML file named by
 * CVIA_TOPOLOGY, so decisions for a big machine can be checked on a small one. */
#ifndef COREVIA_TOPO_TOPO_H
#define COREVIA_TOPO_TOPO_H

#include <hwloc.h>
#include <stdint.h>

struct cvia_topo_cfg {
    char xml[256];
};

struct cvia_topo_summary {
    int      is_xml;              /* loaded from a file */
    char     source[256];         /* "this machine" or the file */
    int      packages, cores, pus, numa_nodes;
    int      l1, l2, l3;          /* data/unified caches of each level */
    uint64_t l2_bytes, l3_bytes;  /* size of one such cache */
    int      cores_per_l2, cores_per_l3;
    uint64_t total_memory;
    int      numa_hbm;            /* NUMA nodes whose subtype says HBM/MCDRAM */
    int      nics;                /* OS devices of network type */
};

/* Load (and own) a topology: the XML in CVIA_TOPOLOGY if set, else this
 * machine. Returns 0, -CVIA_ECONFIG (bad variable), -CVIA_ETOPO. */
int  cvia__topo_open(hwloc_topology_t *topo_p, char *source, size_t cap);
void cvia__topo_summarize(hwloc_topology_t topo, struct cvia_topo_summary *s);

#endif
