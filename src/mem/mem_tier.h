/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Memory tiers on the live process: a memory kind ("hbw", "node:2", ...)
 * becomes an arena placement (an mbind policy applied to each new chunk
 * between its mmap and its fallocate), the shm segment gets the tier of
 * CVIA_MEM_SHM_KIND, and the per-node accounting (move_pages, numa_maps)
 * shows where it all landed. Decisions come from topo/topo_mem.h on the
 * topology in CVIA_TOPOLOGY (or this machine) and CVIA_MEM_TIERS. */
#ifndef COREVIA_MEM_MEM_TIER_H
#define COREVIA_MEM_MEM_TIER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "topo/topo_mem.h"

#define CVIA_MEM_PLACES_MAX 64      /* distinct (policy, nodes) at once */
#define CVIA_MEM_NODES_MAX  1024    /* NUMA node OS indices below this */

/* The topology and tiers decisions run on (loaded once, kept for the
 * process's life). 0, or the error of cvia__topo_open / cvia__tiers_build
 * (logged once). */
int cvia__mem_tiers(hwloc_topology_t *t_p, const struct cvia_tiers **tiers_p);

/* The arena placement for @kind in this process (bound where the calling
 * thread's process may run). 0 with *place_p (0: default, no policy), or
 * -EINVAL (bad kind), -ENODEV (no such tier, node or interface; also a
 * node that the recorded topology has but this machine does not),
 * -CVIA_ECONFIG / -CVIA_ETOPO. hbw-preferred without hbw is place 0 with
 * one warning. @what names the setting in messages ("cvia_mem_alloc",
 * "CVIA_MEM_SHM_KIND"). */
int cvia__mem_kind_place(const char *kind, const char *what, int *place_p);

/* 1 if @place was handed out by cvia__mem_kind_place (0 always is). */
int cvia__mem_place_known(int place);
/* "default", "hbw:4", "node:0" ... */
const char *cvia__mem_place_label(int place);

/* Apply @place to the fresh, untouched mapping [addr, addr+len): check
 * that its nodes have room (free memory), then mbind. 0, -ENOMEM (the
 * nodes are full: nothing was bound), or -errno of mbind. */
int cvia__mem_place_apply(void *addr, size_t len, int place);

/* Called by the shm provider between mmap and the reserve of its segment
 * (shm_seg_create): apply CVIA_MEM_SHM_KIND. 0, or an error for which
 * cvia_init fails (logged): -CVIA_ECONFIG, -ENODEV, -ENOMEM. */
int cvia__mem_shm_place(void *addr, size_t len);

/* ------------------------------------------------------------ accounting */

/* Where a process's memory is, per NUMA node (OS index), in bytes. */
struct cvia_mem_stat {
    int      maxnode;                   /* highest node with bytes, + 1 */
    uint64_t shm[CVIA_MEM_NODES_MAX];   /* its own shm segments (move_pages) */
    uint64_t arena[CVIA_MEM_NODES_MAX]; /* its own arena chunks (move_pages) */
    uint64_t total[CVIA_MEM_NODES_MAX]; /* every mapping (numa_maps, as numastat -p) */
    uint64_t peer[CVIA_MEM_NODES_MAX];  /* of it, other processes' shm segments and
                                         * arena chunks mapped here (counted in their
                                         * owners too: total - peer counts a job's
                                         * shared memory once) */
    uint64_t shm_size, arena_size;      /* bytes of those regions */
    uint64_t absent;                    /* of them, pages not mapped in this
                                         * process (not yet touched) */
    int      regions;                   /* shm segments + arena chunks found */
};

/* Fill @s for process @pid (0: this one). With @touch (this process
 * only), read one byte of every page of its own regions first, so that
 * move_pages sees them: the pages exist already (fallocate), so this maps
 * them without adding to the footprint. A segment is the process's own if
 * its name carries its pid (cvia-UID-PID-N); an arena chunk if the
 * process holds its memfd open (peers close theirs after mapping).
 * 0 or -errno (-ESRCH, -EACCES: another user's process). */
int cvia__mem_stat(pid_t pid, int touch, struct cvia_mem_stat *s);

/* Free memory of NUMA node @os on this machine (MemFree + Inactive(file)
 * of /sys/devices/system/node/nodeN/meminfo), or -1 if unknown. */
int64_t cvia__mem_node_free(unsigned os);

#endif
