/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The public memory API (cvia_mem_alloc / cvia_mem_free) over the
 * shareable arena, and the CVIA_MEM_* parameters. Usable before
 * cvia_init() and after cvia_finalize(): the arena configures itself on
 * first use. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <corevia/corevia.h>
#include "mem/arena.h"
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
    { NULL }
};

const struct cvia_param_table cvia__mem_param_table = {
    .component = "mem", .prefix = "MEM_", .params = mem_params,
    .cfg_size = sizeof(struct cvia_mem_cfg),
};

int cvia_mem_alloc(size_t len, const char *kind, void **ptr_p)
{
    if (!ptr_p)
        return -EINVAL;
    /* Issue 4 (memory tiers) adds hbw, hbw-preferred, ddr, node:N and
     * near-nic:IF here, each mapped to an arena placement. */
    if (kind && strcmp(kind, "default"))
        return -EINVAL;
    return cvia__arena_alloc(len, 0, ptr_p);
}

int cvia_mem_free(void *ptr)
{
    if (!ptr)
        return 0;
    return cvia__arena_free(ptr);
}
