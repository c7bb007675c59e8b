/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Cores and what they share: caches at each level, packages, NUMA nodes,
 * and the relation of two cores as a placement decision sees it. Cores are
 * named by hwloc logical index (L#: cores have no OS-wide number), CPU sets
 * hold PU OS indices (what taskset, sched_setaffinity and
 * smp_affinity_list take), NUMA nodes their OS index (numactl, /sys). */
#ifndef COREVIA_TOPO_TOPO_CPU_H
#define COREVIA_TOPO_TOPO_CPU_H

#include <hwloc.h>
#include <stddef.h>

/* How core B stands to core A, nearest first. */
enum cvia_topo_rel {
    CVIA_REL_SAME = 0,   /* the same core (hyperthread siblings included) */
    CVIA_REL_L2,         /* shares an L1 or L2 cache */
    CVIA_REL_L3,         /* shares an L3 (or L4), no L2 */
    CVIA_REL_NUMA,       /* same own NUMA node (and die), no shared cache */
    CVIA_REL_PACKAGE,    /* same package, another NUMA node / die */
    CVIA_REL_REMOTE,     /* another package */
    CVIA_REL_COUNT
};

/* "same", "l2", "l3", "numa", "package", "remote"; NULL if out of range. */
const char *cvia__topo_rel_name(int rel);
/* Inverse of the above; -1 if unknown. */
int cvia__topo_rel_parse(const char *name);

/* Load a topology from @path: an hwloc XML file, or a directory holding a
 * fake Linux /sys and /proc tree (hwloc's tests' linux-sysfs dumps), or
 * NULL for CVIA_TOPOLOGY / this machine (cvia__topo_open). I/O devices are
 * kept. Does not log: on failure returns -CVIA_ETOPO, -ENOENT, -EACCES...
 * with one line of explanation in @err. */
int cvia__topo_open_path(const char *path, hwloc_topology_t *topo_p,
                         char *err, size_t errcap);

/* Load @t (initialised, filters set) from the Linux sysfs dump in @dir
 * (sys/, proc/), as lstopo --input DIR does. 0, or -CVIA_ETOPO with one
 * line in @err. */
int cvia__topo_load_fsroot(hwloc_topology_t t, const char *dir, char *err, size_t errcap);

/* The objects corevia calls cores: hwloc's Core objects, or the PUs where
 * a topology records none (hwloc's XML allows PUs straight under caches
 * or packages, e.g. its fakeheterodistances.xml): each PU is then a core
 * of its own, as lstopo draws it. */
hwloc_obj_type_t cvia__topo_core_type(hwloc_topology_t t);
int         cvia__topo_ncores(hwloc_topology_t t);
hwloc_obj_t cvia__topo_core(hwloc_topology_t t, int core);
/* Logical index of the core holding PU OS index @pu; -1 if none. */
int cvia__topo_core_of_pu(hwloc_topology_t t, unsigned pu);
/* PU OS index of the first PU of @core (where an interrupt is sent). */
int cvia__topo_core_first_pu(hwloc_topology_t t, int core);

/* A CPU cache: a cache object that is not a memory-side cache. hwloc 2.0
 * recorded KNL's MCDRAM in cache mode as an L3 of subtype
 * "MemorySideCache" (hwloc 2.1 and later: a MemCache object); it caches
 * memory, not cores, so it is no shared cache of theirs. */
int cvia__topo_cpu_cache(hwloc_obj_t o);
/* Number of CPU caches of @level. */
int cvia__topo_ncaches(hwloc_topology_t t, unsigned level);
/* The CPU cache of @level (1, 2, 3, ...; data or unified) above @core;
 * NULL if the machine has none at that level. */
hwloc_obj_t cvia__topo_core_cache(hwloc_topology_t t, int core, unsigned level);
/* Deepest cache level present on the machine (0 if none recorded). */
unsigned cvia__topo_last_level(hwloc_topology_t t);
/* Cores (as a bitmap of core logical indices) that share the level-@level
 * cache with @core, itself included; returns how many, 0 if no such cache
 * (@out is then emptied). */
int cvia__topo_cache_sharers(hwloc_topology_t t, int core, unsigned level,
                             hwloc_bitmap_t out);

/* Logical index of @core's package; -1 if the topology has none. */
int cvia__topo_core_package(hwloc_topology_t t, int core);
/* A NUMA node's locality: its CPU set, or (a CPU-less node recorded with
 * an empty set) that of the nearest ancestor that has one. */
hwloc_const_cpuset_t cvia__topo_node_locality(hwloc_obj_t node);
/* The own NUMA node of the PUs in @set, found by locality whatever the
 * nesting: the node with the smallest locality that covers @set; among
 * equals, ordinary memory (no subtype, or DRAM) before MCDRAM, HBM, NVM,
 * CXL or GPU memory (KNL's and Xeon Max's DDR beside their MCDRAM/HBM),
 * then the smallest OS index: Linux numbers the nodes that hold CPUs
 * before memory-only ones (KNL's DDR 0-3 before MCDRAM 4-7, Xeon Max's
 * DDR before HBM, CXL and NVDIMM last), and the OS index, unlike hwloc's
 * logical order, is the same in every recording of a machine (a hwloc 1.x
 * re-export reorders nodes of one locality). NULL if no node covers @set. */
hwloc_obj_t cvia__topo_node_of(hwloc_topology_t t, hwloc_const_cpuset_t set);
/* cvia__topo_node_of() for @core's PUs. */
hwloc_obj_t cvia__topo_core_node(hwloc_topology_t t, int core);
/* The OS index of that node (what numactl, /sys and mbind use); -1. */
int cvia__topo_core_numa(hwloc_topology_t t, int core);

/* Relation of core @b to core @a (enum cvia_topo_rel), the one function
 * every tool asks:
 *   same     the same core;
 *   l2, l3   they share a cache, named by its level: a Bulldozer module
 *            (one L2) and a KNL tile (one L2, the last level) are "l2", a
 *            Magny-Cours die (one L3) "l3", a shared L1 counts as l2; a
 *            cache shared by cores of different NUMA nodes (one L3 per
 *            package under sub-NUMA clustering) is not counted;
 *   remote   different packages, whatever the NUMA nodes say (a node that
 *            spans packages is a recording without NUMA information);
 *   numa     one package (or none recorded), the same own NUMA node
 *            (cvia__topo_core_node) and, where dies are recorded, one die;
 *   package  one package, another NUMA node or die;
 *   remote   also: no package recorded and different NUMA nodes. */
int cvia__topo_relation(hwloc_topology_t t, int a, int b);

/* Cores (logical indices, as a bitmap) whose PUs all lie in @cpuset. */
void cvia__topo_cores_in(hwloc_topology_t t, hwloc_const_cpuset_t cpuset,
                         hwloc_bitmap_t cores_out);
/* The PUs of the cores in @cores (bitmap of core logical indices). */
void cvia__topo_cores_cpuset(hwloc_topology_t t, hwloc_const_bitmap_t cores,
                             hwloc_cpuset_t out);

#endif
