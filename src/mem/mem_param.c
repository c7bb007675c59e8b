/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* CVIA_MEM_* variables (the arena and the memory tiers), apart from the
 * arena so that the tier code can be built without it (cvia-info). */
#include <stddef.h>

#include "mem/arena.h"
#include "mem/mem_tier.h"
#include "util/param.h"

static const struct cvia_param mem_params[] = {
    { "CHUNK_SIZE", "2m", CVIA_PARAM_SIZE, offsetof(struct cvia_mem_cfg, chunk_size),
      "Size of the first shared chunk of the cvia_mem_alloc arena (a memfd that "
      "peers on the node map); each further chunk doubles, up to CVIA_MEM_CHUNK_MAX.",
      64 << 10, 1L << 40, NULL },
    { "CHUNK_MAX", "64m", CVIA_PARAM_SIZE, offsetof(struct cvia_mem_cfg, chunk_max),
      "Largest shared chunk of the arena (chunks grow by doubling up to this).",
      64 << 10, 1L << 40, NULL },
    { "LARGE", "1m", CVIA_PARAM_SIZE, offsetof(struct cvia_mem_cfg, large),
      "Allocations of at least this size get an arena chunk of their own, "
      "returned to the system when freed (capped at CVIA_MEM_CHUNK_SIZE).",
      4 << 10, 1L << 40, NULL },
    { "LIMIT", "0", CVIA_PARAM_SIZE, offsetof(struct cvia_mem_cfg, limit),
      "Most bytes the arena may hold at once; beyond it cvia_mem_alloc fails "
      "with ENOMEM (0: only the machine's memory limits it).",
      0, 0, NULL },
    { "MAX_CHUNKS", "1024", CVIA_PARAM_INT, offsetof(struct cvia_mem_cfg, max_chunks),
      "Most arena chunks at once (slots in the index that peers read; each "
      "chunk holds one file descriptor).",
      16, 65536, NULL },
    { "TIERS", "", CVIA_PARAM_STRING, offsetof(struct cvia_mem_cfg, tiers),
      "Memory tiers named by hand, fastest first, instead of ranking the NUMA nodes "
      "from hwloc (bandwidth and latency attributes, subtypes, distances): "
      "NAME:NODES;... with NUMA node OS indices, e.g. hbw:4-7;ddr:0-3. Nodes left "
      "out form a last tier, ddr if no tier is named so. cvia-info --tiers shows "
      "the result.", 0, 0, NULL },
    { "SHM_KIND", "default", CVIA_PARAM_STRING, offsetof(struct cvia_mem_cfg, shm_kind),
      "Memory kind of each rank's shared-memory receive segment, bound before its "
      "pages are allocated: default, hbw, hbw-preferred, ddr, node:N or "
      "near-nic:IFNAME (as cvia_mem_alloc). hbw without such memory makes cvia_init "
      "fail with ENODEV; hbw-preferred falls back to default with one warning.",
      0, 0, NULL },
    { NULL }
};

const struct cvia_param_table cvia__mem_param_table = {
    .component = "mem", .prefix = "MEM_", .params = mem_params,
    .cfg_size = sizeof(struct cvia_mem_cfg),
};
