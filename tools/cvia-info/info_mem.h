/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-info's memory-tier views (info_mem.c): --tiers, --kind, --mem. */
#ifndef CVIA_INFO_MEM_H
#define CVIA_INFO_MEM_H

#include <sys/types.h>

#define INFO_MAX_KINDS 16

/* The tiers of the topology (CVIA_TOPOLOGY / this machine, CVIA_MEM_TIERS),
 * each node, each core's node per tier; then, for each of @kinds, where it
 * places memory for a process on @cpus (PU list; NULL: this process's
 * affinity). 0, or 1 after printing what failed. */
int info_tiers(const char *cpus, char *const *kinds, int nkinds);

/* Per NUMA node: tier, size, free memory, and the memory of process @pid
 * (0: cvia-info itself): what corevia placed there (move_pages) and the
 * process's total (numa_maps, as numastat -p). 0, or 1. */
int info_mem(pid_t pid);

#endif
