/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A view of another process's arena: its index mapped read-only, and its
 * chunks mapped on first use, one cached mapping per index slot.
 *
 * Fast path (lock-free, no system call): if the index's seq still equals
 * the value at which every cached mapping was last checked (`seen`), the
 * cached mappings are all live; look the address up in them (last hit
 * first). Each cached mapping is itself a tiny seqlock on its generation,
 * so a concurrent install in another thread is never half-read.
 * Slow path (view mutex): drop the mappings of chunks the owner removed,
 * find the chunk in a consistent snapshot of the index, pidfd_getfd +
 * mmap it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "mem/arena.h"
#include "mem/arena_index.h"
#include "mem/arena_int.h"
#include "util/log.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438   /* same number on every architecture */
#endif

struct view_map {
    _Atomic uint64_t  gen;     /* 0: nothing mapped; else the chunk's generation */
    _Atomic uint64_t  base;    /* owner's address */
    _Atomic uint64_t  size;
    _Atomic uintptr_t local;   /* our mapping */
};

struct cvia_arena_view {
    const struct cvia_arena_index *ix;
    size_t   ix_bytes;
    uint32_t nslots;
    int      pidfd;             /* our duplicate of the caller's */
    _Atomic uint64_t seen;      /* index seq at which all maps were checked */
    _Atomic uint32_t hint;      /* slot of the last hit */
    _Atomic uint32_t hi;        /* maps[hi..] are empty */
    pthread_mutex_t lock;       /* installs and drops (writers of maps[]) */
    struct view_map maps[];     /* by index slot */
};

static int view_getfd(int pidfd, int fd)
{
    return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

int cvia__arena_view_open(int peer_pidfd, int peer_index_fd_number,
                          struct cvia_arena_view **view_p)
{
    const struct cvia_arena_index *ix;
    struct cvia_arena_view *v;
    struct stat st;
    int fd, rc;

    if (!view_p || peer_pidfd < 0 || peer_index_fd_number < 0)
        return -EINVAL;
    if ((fd = view_getfd(peer_pidfd, peer_index_fd_number)) < 0) {
        rc = -errno;
        cvia_info(MEM, "pidfd_getfd of a peer's arena index: %s%s", strerror(errno),
                  errno == EPERM ? " (ptrace policy forbids it)" : "");
        return rc;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size < sizeof(struct cvia_arena_index)) {
        cvia_info(MEM, "peer's fd %d is not an arena index", peer_index_fd_number);
        rc = -CVIA_ESEGMENT;
        goto err_close;
    }
    ix = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (ix == MAP_FAILED) {
        rc = -errno;
        cvia_info(MEM, "mmap a peer's arena index: %s", strerror(errno));
        goto err_close;
    }
    if (ix->magic != CVIA_ARENA_MAGIC || ix->version != CVIA_ARENA_VERSION ||
        ix->ient_size != sizeof(struct cvia_arena_ient) || ix->nslots == 0 ||
        arena_index_bytes(ix->nslots) > (size_t)st.st_size) {
        cvia_info(MEM, "peer's fd %d is not an arena index of this version",
                  peer_index_fd_number);
        rc = -CVIA_ESEGMENT;
        goto err_unmap;
    }
    v = calloc(1, sizeof(*v) + (size_t)ix->nslots * sizeof(struct view_map));
    if (!v) {
        rc = -ENOMEM;
        goto err_unmap;
    }
    if ((v->pidfd = fcntl(peer_pidfd, F_DUPFD_CLOEXEC, 3)) < 0) {
        rc = -errno;
        free(v);
        goto err_unmap;
    }
    close(fd);
    v->ix = ix;
    v->ix_bytes = (size_t)st.st_size;
    v->nslots = ix->nslots;
    atomic_init(&v->seen, 1);           /* odd: matches no index state */
    pthread_mutex_init(&v->lock, NULL);
    *view_p = v;
    return 0;

err_unmap:
    munmap((void *)(uintptr_t)ix, (size_t)st.st_size);
err_close:
    close(fd);
    return rc;
}

/* The local pointer for [addr, addr+len) if map @m holds it. */
static inline void *view_hit(struct view_map *m, uint64_t addr, size_t len)
{
    uint64_t g = atomic_load_explicit(&m->gen, memory_order_acquire);
    uint64_t base, size;
    uintptr_t local;

    if (!g)
        return NULL;
    base  = atomic_load_explicit(&m->base, memory_order_relaxed);
    size  = atomic_load_explicit(&m->size, memory_order_relaxed);
    local = atomic_load_explicit(&m->local, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&m->gen, memory_order_relaxed) != g ||
        !arena_range_in(addr, len, base, size))
        return NULL;
    return (char *)local + (addr - base);
}

/* With v->lock held. */
static void view_drop(struct view_map *m)
{
    void *local = (void *)atomic_load_explicit(&m->local, memory_order_relaxed);
    size_t size = (size_t)atomic_load_explicit(&m->size, memory_order_relaxed);

    atomic_store_explicit(&m->gen, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    munmap(local, size);
}

/* Drop every mapping whose chunk left the index; with v->lock held. A slot
 * that shows anything but the cached generation is dead for good (gens
 * are never reused), so no consistent snapshot is needed to drop; one is
 * needed to declare the survivors current (seen). */
static void view_sweep(struct cvia_arena_view *v)
{
    uint64_t s = atomic_load_explicit(&v->ix->seq, memory_order_acquire);
    uint32_t hi = atomic_load_explicit(&v->hi, memory_order_relaxed);

    if (s == atomic_load_explicit(&v->seen, memory_order_relaxed))
        return;
    for (uint32_t i = 0; i < hi; i++) {
        uint64_t g = atomic_load_explicit(&v->maps[i].gen, memory_order_relaxed);
        if (g && atomic_load_explicit(&v->ix->ent[i].gen, memory_order_relaxed) != g)
            view_drop(&v->maps[i]);
    }
    atomic_thread_fence(memory_order_acquire);
    if (!(s & 1) && atomic_load_explicit(&v->ix->seq, memory_order_relaxed) == s)
        atomic_store_explicit(&v->seen, s, memory_order_release);
}

/* Map the chunk of snapshot @e; with v->lock held. */
static void *view_map_chunk(struct cvia_arena_view *v, const struct cvia_arena_snap *e,
                            uint64_t addr)
{
    struct view_map *m = &v->maps[e->slot];
    struct stat st;
    void *local;
    int fd;

    if ((fd = view_getfd(v->pidfd, (int)e->fd)) < 0) {
        cvia_debug(MEM, "pidfd_getfd of a peer's arena chunk: %s", strerror(errno));
        return NULL;
    }
    /* Still the same chunk in that slot after we got the fd? Then the fd is
     * that chunk's file, not one that reused the number (arena_index.h). */
    if (atomic_load_explicit(&v->ix->ent[e->slot].gen, memory_order_acquire) != e->gen ||
        fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != e->size) {
        close(fd);
        return NULL;
    }
    local = mmap(NULL, (size_t)e->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (local == MAP_FAILED) {
        cvia_debug(MEM, "mmap a peer's arena chunk of %" PRIu64 " bytes: %s",
                   e->size, strerror(errno));
        return NULL;
    }
    atomic_thread_fence(memory_order_release);  /* after an earlier drop's gen = 0 */
    atomic_store_explicit(&m->base, e->base, memory_order_relaxed);
    atomic_store_explicit(&m->size, e->size, memory_order_relaxed);
    atomic_store_explicit(&m->local, (uintptr_t)local, memory_order_relaxed);
    atomic_store_explicit(&m->gen, e->gen, memory_order_release);
    if (e->slot + 1 > atomic_load_explicit(&v->hi, memory_order_relaxed))
        atomic_store_explicit(&v->hi, e->slot + 1, memory_order_release);
    atomic_store_explicit(&v->hint, e->slot, memory_order_relaxed);
    return (char *)local + (addr - e->base);
}

static void *view_slow(struct cvia_arena_view *v, uint64_t addr, size_t len)
{
    struct cvia_arena_snap e = { 0 };
    struct view_map *m;
    uint64_t s, g;
    void *p = NULL;

    pthread_mutex_lock(&v->lock);
    view_sweep(v);
    if (arena_index_find(v->ix, v->nslots, addr, len, &e, &s) == 1) {
        m = &v->maps[e.slot];
        g = atomic_load_explicit(&m->gen, memory_order_relaxed);
        if (g && g != e.gen)            /* removed after the sweep looked */
            view_drop(m);
        if (g == e.gen)
            p = view_hit(m, addr, len);
        else
            p = view_map_chunk(v, &e, addr);
    }
    pthread_mutex_unlock(&v->lock);
    return p;
}

void *cvia__arena_view_translate(struct cvia_arena_view *v, uint64_t peer_addr,
                                 size_t len)
{
    uint64_t s = atomic_load_explicit(&v->ix->seq, memory_order_acquire);

    if (s == atomic_load_explicit(&v->seen, memory_order_acquire)) {
        uint32_t h = atomic_load_explicit(&v->hint, memory_order_relaxed);
        uint32_t hi = atomic_load_explicit(&v->hi, memory_order_acquire);
        void *p = view_hit(&v->maps[h], peer_addr, len);

        if (p)
            return p;
        for (uint32_t i = 0; i < hi; i++) {
            if (i != h && (p = view_hit(&v->maps[i], peer_addr, len))) {
                atomic_store_explicit(&v->hint, i, memory_order_relaxed);
                return p;
            }
        }
    }
    return view_slow(v, peer_addr, len);
}

void cvia__arena_view_close(struct cvia_arena_view *v)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < v->hi; i++)
        if (atomic_load_explicit(&v->maps[i].gen, memory_order_relaxed))
            view_drop(&v->maps[i]);
    munmap((void *)(uintptr_t)v->ix, v->ix_bytes);
    close(v->pidfd);
    pthread_mutex_destroy(&v->lock);
    free(v);
}
