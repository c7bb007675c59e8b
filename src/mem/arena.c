/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The arena's allocator: first-fit with coalescing inside shared chunks
 * (2 MiB, doubling up to CVIA_MEM_CHUNK_MAX), one chunk of its own for
 * every allocation of CVIA_MEM_LARGE or more (unmapped when freed), at most
 * one empty shared chunk kept for reuse. The bookkeeping (blocks, free
 * lists, a hash from address to block) is private memory: peers map the
 * chunks read-write, and a stray write of theirs must not be able to
 * corrupt the allocator. All state is protected by arena_lock; allocation
 * is not a fast path. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "mem/arena.h"
#include "mem/arena_int.h"
#include "mem/mem_tier.h"
#include "util/log.h"
#include "util/param.h"

#define ARENA_MIN_ALIGN   64u              /* a cache line */
#define ARENA_MAX_ALIGN   ((size_t)1 << 30)
#define ARENA_PAGE_LEN    4096u            /* from here on: page-aligned */
#define ARENA_SPARE_MAX   64               /* block nodes kept for reuse */

struct arena_chunk;

struct arena_block {
    struct arena_block *prev, *next;    /* address order in the chunk */
    struct arena_block *fprev, *fnext;  /* chunk's free list (free blocks) */
    struct arena_block *hnext;          /* hash chain (used blocks) */
    struct arena_chunk *chunk;
    size_t off, size;
    int    used;
};

struct arena_chunk {
    struct arena_chunk *prev, *next;    /* arena.shared or arena.own */
    struct cvia_arena_os os;
    int    place;
    int    own;                         /* holds one large allocation */
    size_t used;                        /* bytes in used blocks */
    struct arena_block *blocks;         /* address order */
    struct arena_block *free;
};

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;

static struct {
    int    ready;               /* configured, index created */
    struct cvia_mem_cfg cfg;
    size_t page;
    struct arena_chunk *shared; /* first-fit order: oldest first */
    struct arena_chunk *own;    /* one large allocation each */
    unsigned nshared, nempty;   /* shared chunks; those with nothing used */
    size_t held;                /* bytes of all chunks */
    struct arena_block **hash;  /* used blocks by address */
    size_t nbuckets, nhashed;
    struct arena_block *spare;  /* recycled nodes, linked by next */
    int    nspare;
} arena;

/* ------------------------------------------------------------ metadata */

static struct arena_block *arena_node_get(void)
{
    struct arena_block *b = arena.spare;

    if (b) {
        arena.spare = b->next;
        arena.nspare--;
        memset(b, 0, sizeof(*b));
        return b;
    }
    return calloc(1, sizeof(*b));
}

static void arena_node_put(struct arena_block *b)
{
    if (arena.nspare >= ARENA_SPARE_MAX) {
        free(b);
        return;
    }
    b->next = arena.spare;
    arena.spare = b;
    arena.nspare++;
}

/* Make sure @n nodes can be had without failing halfway through a split. */
static int arena_node_reserve(int n)
{
    while (arena.nspare < n) {
        struct arena_block *b = calloc(1, sizeof(*b));
        if (!b)
            return -ENOMEM;
        b->next = arena.spare;
        arena.spare = b;
        arena.nspare++;
    }
    return 0;
}

static size_t arena_hash_of(uintptr_t p, size_t nbuckets)
{
    uint64_t h = (uint64_t)(p >> 6) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (nbuckets - 1);
}

static int arena_hash_grow(void)
{
    size_t nb = arena.nbuckets ? arena.nbuckets * 2 : 256;
    struct arena_block **h = calloc(nb, sizeof(*h));

    if (!h)
        return -ENOMEM;
    for (size_t i = 0; i < arena.nbuckets; i++) {
        struct arena_block *b = arena.hash[i], *n;
        for (; b; b = n) {
            size_t k = arena_hash_of((uintptr_t)(b->chunk->os.base + b->off), nb);
            n = b->hnext;
            b->hnext = h[k];
            h[k] = b;
        }
    }
    free(arena.hash);
    arena.hash = h;
    arena.nbuckets = nb;
    return 0;
}

static void arena_hash_add(struct arena_block *b)
{
    size_t k = arena_hash_of((uintptr_t)(b->chunk->os.base + b->off), arena.nbuckets);

    b->hnext = arena.hash[k];
    arena.hash[k] = b;
    arena.nhashed++;
}

static struct arena_block *arena_hash_take(const void *ptr)
{
    struct arena_block **pp;

    if (!arena.nbuckets)
        return NULL;
    pp = &arena.hash[arena_hash_of((uintptr_t)ptr, arena.nbuckets)];
    for (; *pp; pp = &(*pp)->hnext) {
        struct arena_block *b = *pp;
        if (b->chunk->os.base + b->off == (const char *)ptr) {
            *pp = b->hnext;
            arena.nhashed--;
            return b;
        }
    }
    return NULL;
}

/* --------------------------------------------------------------- lists */

static void arena_free_push(struct arena_chunk *c, struct arena_block *b)
{
    b->fprev = NULL;
    b->fnext = c->free;
    if (c->free)
        c->free->fprev = b;
    c->free = b;
}

static void arena_free_unlink(struct arena_chunk *c, struct arena_block *b)
{
    if (b->fprev)
        b->fprev->fnext = b->fnext;
    else
        c->free = b->fnext;
    if (b->fnext)
        b->fnext->fprev = b->fprev;
    b->fprev = b->fnext = NULL;
}

/* Insert @n after @b in address order. */
static void arena_block_after(struct arena_block *b, struct arena_block *n)
{
    n->prev = b;
    n->next = b->next;
    if (b->next)
        b->next->prev = n;
    b->next = n;
}

static void arena_block_unlink(struct arena_chunk *c, struct arena_block *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        c->blocks = b->next;
    if (b->next)
        b->next->prev = b->prev;
}

static void arena_chunk_link(struct arena_chunk **head, struct arena_chunk *c)
{
    struct arena_chunk **pp = head, *last = NULL;

    while (*pp) {                       /* append: first fit finds old ones first */
        last = *pp;
        pp = &(*pp)->next;
    }
    c->prev = last;
    c->next = NULL;
    *pp = c;
}

static void arena_chunk_unlink(struct arena_chunk **head, struct arena_chunk *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        *head = c->next;
    if (c->next)
        c->next->prev = c->prev;
}

/* -------------------------------------------------------------- chunks */

static int arena_chunk_new(size_t size, size_t align, int place, int own,
                           struct arena_chunk **c_p)
{
    struct arena_chunk *c;
    struct arena_block *b;
    int rc;

    if (arena.cfg.limit && (size > arena.cfg.limit || arena.held > arena.cfg.limit - size)) {
        cvia_info(MEM, "arena chunk of %zu bytes: CVIA_MEM_LIMIT (%zu) reached",
                  size, arena.cfg.limit);
        return -ENOMEM;
    }
    c = calloc(1, sizeof(*c));
    b = arena_node_get();
    if (!c || !b) {
        rc = -ENOMEM;
        goto err_free;
    }
    if ((rc = cvia__arena_os_create(size, align, place, &c->os)) < 0)
        goto err_free;
    c->place = place;
    c->own = own;
    b->chunk = c;
    b->off = 0;
    b->size = size;
    c->blocks = b;
    arena_free_push(c, b);
    arena.held += size;
    if (own) {
        arena_chunk_link(&arena.own, c);
    } else {
        arena_chunk_link(&arena.shared, c);
        arena.nshared++;
        arena.nempty++;                 /* until something is carved from it */
    }
    *c_p = c;
    return 0;

err_free:
    if (b)
        arena_node_put(b);
    free(c);
    return rc;
}

static void arena_chunk_del(struct arena_chunk *c)
{
    struct arena_block *b, *n;

    if (c->own) {
        arena_chunk_unlink(&arena.own, c);
    } else {
        arena_chunk_unlink(&arena.shared, c);
        arena.nshared--;
        if (!c->used)
            arena.nempty--;
    }
    arena.held -= c->os.size;
    cvia__arena_os_destroy(&c->os);
    for (b = c->blocks; b; b = n) {
        n = b->next;
        arena_node_put(b);
    }
    free(c);
}

/* ------------------------------------------------------------ carving */

/* Carve [pad, pad+len) of free block @b into a used block (nodes reserved). */
static struct arena_block *arena_carve(struct arena_chunk *c, struct arena_block *b,
                                       size_t pad, size_t len)
{
    if (pad) {                          /* b keeps the front, stays free */
        struct arena_block *n = arena_node_get();
        n->chunk = c;
        n->off = b->off + pad;
        n->size = b->size - pad;
        b->size = pad;
        arena_block_after(b, n);
        b = n;
    } else {
        arena_free_unlink(c, b);
    }
    if (b->size > len) {                /* the tail stays free */
        struct arena_block *t = arena_node_get();
        t->chunk = c;
        t->off = b->off + len;
        t->size = b->size - len;
        b->size = len;
        arena_block_after(b, t);
        arena_free_push(c, t);
    }
    b->used = 1;
    if (!c->used && !c->own)
        arena.nempty--;
    c->used += len;
    arena_hash_add(b);
    return b;
}

static struct arena_block *arena_fit(struct arena_chunk *c, size_t len, size_t align)
{
    for (struct arena_block *b = c->free; b; b = b->fnext) {
        uintptr_t at = (uintptr_t)c->os.base + b->off;
        size_t pad = (size_t)(((at + align - 1) & ~(uintptr_t)(align - 1)) - at);
        if (pad <= b->size && b->size - pad >= len)
            return arena_carve(c, b, pad, len);
    }
    return NULL;
}

/* ------------------------------------------------------------- set-up */

static void arena_atfork_prepare(void) { pthread_mutex_lock(&arena_lock); }
static void arena_atfork_parent(void)  { pthread_mutex_unlock(&arena_lock); }

/* The child did not inherit the chunks (MADV_DONTFORK): forget them, close
 * the inherited fds, start again on first use. */
static void arena_atfork_child(void)
{
    struct arena_chunk *lists[2] = { arena.shared, arena.own };

    pthread_mutex_init(&arena_lock, NULL);
    for (int l = 0; l < 2; l++) {
        struct arena_chunk *c, *n;
        for (c = lists[l]; c; c = n) {
            struct arena_block *b, *bn;
            n = c->next;
            close(c->os.fd);
            for (b = c->blocks; b; b = bn) {
                bn = b->next;
                free(b);
            }
            free(c);
        }
    }
    while (arena.spare) {
        struct arena_block *b = arena.spare;
        arena.spare = b->next;
        free(b);
    }
    free(arena.hash);
    cvia__arena_index_forget();
    memset(&arena, 0, sizeof(arena));
}

static void arena_register_atfork(void)
{
    pthread_atfork(arena_atfork_prepare, arena_atfork_parent, arena_atfork_child);
}

static int arena_setup(void)
{
    struct cvia_mem_cfg cfg;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int rc;

    if (arena.ready)
        return 0;
    pthread_once(&arena_once, arena_register_atfork);
    if ((rc = cvia__param_load(&cvia__mem_param_table, &cfg)) < 0)
        return rc;
    cfg.chunk_size = (cfg.chunk_size + page - 1) & ~(page - 1);
    if (cfg.chunk_max < cfg.chunk_size)
        cfg.chunk_max = cfg.chunk_size;
    /* anything below the threshold fits a fresh shared chunk */
    if (cfg.large > cfg.chunk_size)
        cfg.large = cfg.chunk_size;
    if (!arena.nbuckets && (rc = arena_hash_grow()) < 0)
        return rc;
    if ((rc = cvia__arena_index_open((uint32_t)cfg.max_chunks)) < 0)
        return rc;
    arena.cfg = cfg;
    arena.page = page;
    arena.ready = 1;
    return 0;
}

/* ------------------------------------------------------------- the API */

static int arena_alloc_locked(size_t len, size_t align, int place, void **ptr_p)
{
    struct arena_chunk *c;
    struct arena_block *b = NULL;
    size_t page = arena.page, csize;
    int rc;

    if (len >= ARENA_PAGE_LEN) {        /* pages of its own */
        len = (len + page - 1) & ~(page - 1);
        if (align < page)
            align = page;
    } else {
        len = (len + ARENA_MIN_ALIGN - 1) & ~(size_t)(ARENA_MIN_ALIGN - 1);
    }
    if ((rc = arena_node_reserve(2)) < 0)
        return rc;
    if (arena.nhashed >= arena.nbuckets && (rc = arena_hash_grow()) < 0)
        return rc;

    if (len >= arena.cfg.large || align > page) {
        csize = (len + page - 1) & ~(page - 1);
        if ((rc = arena_chunk_new(csize, align > page ? align : page, place, 1, &c)) < 0)
            return rc;
        b = arena_carve(c, c->blocks, 0, len);
        *ptr_p = c->os.base;
        return 0;
    }
    for (c = arena.shared; c && !b; c = c->next)
        if (c->place == place)
            b = arena_fit(c, len, align);
    if (!b) {
        /* 2 MiB, 4 MiB, ... up to chunk_max; on ENOMEM, the smallest */
        csize = arena.cfg.chunk_size;
        for (unsigned i = 0; i < arena.nshared && csize < arena.cfg.chunk_max; i++)
            csize *= 2;
        if (csize > arena.cfg.chunk_max)
            csize = arena.cfg.chunk_max;
        rc = arena_chunk_new(csize, csize >= (2u << 20) ? (2u << 20) : page, place, 0, &c);
        if (rc == -ENOMEM && csize > arena.cfg.chunk_size)
            rc = arena_chunk_new(arena.cfg.chunk_size, page, place, 0, &c);
        if (rc < 0)
            return rc;
        /* len < large <= chunk_size and align <= page: it fits at 0 */
        if (!(b = arena_fit(c, len, align)))
            return -ENOMEM;
    }
    *ptr_p = b->chunk->os.base + b->off;
    return 0;
}

int cvia__arena_alloc_place(size_t len, size_t align, int place, void **ptr_p)
{
    int rc;

    if (!ptr_p || (align & (align - 1)) || align > ARENA_MAX_ALIGN ||
        !cvia__mem_place_known(place))
        return -EINVAL;
    if (len > SIZE_MAX / 4)
        return -ENOMEM;
    if (len == 0)
        len = 1;
    if (align < ARENA_MIN_ALIGN)
        align = ARENA_MIN_ALIGN;
    pthread_mutex_lock(&arena_lock);
    rc = arena_setup();
    if (rc == 0)
        rc = arena_alloc_locked(len, align, place, ptr_p);
    pthread_mutex_unlock(&arena_lock);
    return rc;
}

int cvia__arena_alloc(size_t len, size_t align, void **ptr_p)
{
    return cvia__arena_alloc_place(len, align, 0, ptr_p);
}

int cvia__arena_free(void *ptr)
{
    struct arena_block *b;
    struct arena_chunk *c;

    if (!ptr)
        return -EINVAL;
    pthread_mutex_lock(&arena_lock);
    if (!(b = arena_hash_take(ptr))) {
        pthread_mutex_unlock(&arena_lock);
        return -EINVAL;
    }
    c = b->chunk;
    c->used -= b->size;
    b->used = 0;
    if (c->own) {                       /* a large allocation's own chunk */
        arena_chunk_del(c);
        goto out;
    }
    if (b->next && !b->next->used) {    /* absorb the free block after */
        struct arena_block *n = b->next;
        arena_free_unlink(c, n);
        arena_block_unlink(c, n);
        b->size += n->size;
        arena_node_put(n);
    }
    if (b->prev && !b->prev->used) {    /* the free block before absorbs b */
        b->prev->size += b->size;
        arena_block_unlink(c, b);
        arena_node_put(b);
    } else {
        arena_free_push(c, b);
    }
    if (!c->used) {
        arena.nempty++;
        if (arena.nempty > 1)           /* keep one empty chunk, not more */
            arena_chunk_del(c);
    }
out:
    pthread_mutex_unlock(&arena_lock);
    return 0;
}

int cvia__arena_index_fd(void)
{
    int rc;

    pthread_mutex_lock(&arena_lock);
    rc = arena_setup();
    if (rc == 0)
        rc = cvia__arena_index_fdnum();
    pthread_mutex_unlock(&arena_lock);
    return rc;
}

void cvia__arena_fini(void)
{
    pthread_mutex_lock(&arena_lock);
    while (arena.own)
        arena_chunk_del(arena.own);
    while (arena.shared)
        arena_chunk_del(arena.shared);
    while (arena.spare) {
        struct arena_block *b = arena.spare;
        arena.spare = b->next;
        free(b);
    }
    free(arena.hash);
    cvia__arena_index_close();
    memset(&arena, 0, sizeof(arena));
    pthread_mutex_unlock(&arena_lock);
}
