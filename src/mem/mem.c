/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The public memory API (cvia_mem_alloc / cvia_mem_free) over the
 * shareable arena (its CVIA_MEM_* variables: mem_param.c). Usable before
 * cvia_init() and after cvia_finalize(): the arena configures itself on
 * first use. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <corevia/corevia.h>
#include "mem/arena.h"
#include "mem/mem_tier.h"
#include "util/log.h"
#include "util/param.h"

int cvia_mem_alloc(size_t len, const char *kind, void **ptr_p)
{
    static int warned;
    int place, rc;

    if (!ptr_p)
        return -EINVAL;
    /* the default kind loads no topology: the common case stays cheap */
    if (!kind || !*kind || !strcmp(kind, "default"))
        return cvia__arena_alloc(len, 0, ptr_p);
    if ((rc = cvia__mem_kind_place(kind, "cvia_mem_alloc", &place)) < 0)
        return rc;
    rc = cvia__arena_alloc_place(len, 0, place, ptr_p);
    /* capacity: hbw-preferred falls back as when there is no hbw at all */
    if (rc == -ENOMEM && place && !strcmp(kind, "hbw-preferred")) {
        if (!warned) {
            warned = 1;
            cvia_warn(MEM, "cvia_mem_alloc: hbw-preferred: no room for %zu bytes on %s; "
                      "using default memory", len, cvia__mem_place_label(place));
        }
        rc = cvia__arena_alloc(len, 0, ptr_p);
    }
    return rc;
}

int cvia_mem_free(void *ptr)
{
    if (!ptr)
        return 0;
    return cvia__arena_free(ptr);
}
