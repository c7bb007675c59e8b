/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Between the arena's allocator (arena.c) and its system side
 * (arena_chunk.c: memfd, fallocate, seals, mmap, the index). Private to
 * src/mem/. Every function here is called with the arena mutex held. */
#ifndef COREVIA_MEM_ARENA_INT_H
#define COREVIA_MEM_ARENA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "mem/arena.h"

/* src/mem/ logs as subsystem UTIL (CVIA_LOG_SUBSYS=util) until util/log.h
 * gets a "mem" subsystem. */

/* A chunk as the system sees it. */
struct cvia_arena_os {
    char    *base;
    size_t   size;      /* a multiple of the page size */
    int      fd;        /* the memfd, open for the chunk's whole life */
    uint32_t slot;      /* its entry in the index */
    uint64_t gen;       /* its generation there (never reused) */
};

/* Create the index memfd with @nslots entries and publish it for
 * cvia__arena_contains(). 0 or -errno. */
int cvia__arena_index_open(uint32_t nslots);

/* The index's fd number, -1 when none. */
int cvia__arena_index_fdnum(void);

/* Unmap and close the index (teardown). */
void cvia__arena_index_close(void);

/* In a forked child: forget the index (its mapping was not inherited)
 * and close the inherited fd. */
void cvia__arena_index_forget(void);

/* Create a chunk of @size bytes (a page multiple) whose address is a
 * multiple of @align (a power of two >= the page size) on placement
 * @place, its memory reserved, and list it in the index. 0, -ENOMEM
 * (memory or index slots exhausted), -EINVAL (@place), or -errno. */
int cvia__arena_os_create(size_t size, size_t align, int place,
                          struct cvia_arena_os *os);

/* Remove the chunk from the index, then unmap and close it. */
void cvia__arena_os_destroy(struct cvia_arena_os *os);

#endif
