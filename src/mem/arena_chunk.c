/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The system side of the arena: chunk memfds (reserved, sealed, mapped
 * MAP_SHARED), and the index that lists them for peers (arena_index.h).
 * Everything except cvia__arena_contains() runs with the arena mutex held
 * (arena.c), so the index has a single writer. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "mem/arena.h"
#include "mem/arena_index.h"
#include "mem/arena_int.h"
#include "mem/mem_tier.h"
#include "util/log.h"

#define ARENA_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

static int idx_fd = -1;
static size_t idx_bytes;
/* Published for the lock-free cvia__arena_contains(). */
static struct cvia_arena_index *_Atomic idx;
static uint64_t next_gen = 1;     /* never reused, even across fini */

/* ---------------------------------------------------------------- index */

/* Seqlock writer (Boehm's C11 form): odd, fence, entries, even. */
static void arena_index_write_begin(struct cvia_arena_index *ix)
{
    uint64_t s = atomic_load_explicit(&ix->seq, memory_order_relaxed);
    atomic_store_explicit(&ix->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void arena_index_write_end(struct cvia_arena_index *ix)
{
    uint64_t s = atomic_load_explicit(&ix->seq, memory_order_relaxed);
    atomic_store_explicit(&ix->seq, s + 1, memory_order_release);
}

static int arena_memfd(const char *name)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0)
        return -errno;
    /* memfds are created 0777: keep /proc/<pid>/fd/<n> to this user */
    if (fchmod(fd, 0600) < 0)
        cvia_debug(MEM, "fchmod memfd %s: %s", name, strerror(errno));
    return fd;
}

/* Reserve the pages now (a full machine fails here, not with SIGBUS on
 * first touch). ENOSPC from tmpfs means the same as ENOMEM. */
static int arena_reserve(int fd, size_t size)
{
    int rc;

    do {
        rc = fallocate(fd, 0, 0, (off_t)size);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0)
        return 0;
    return errno == ENOSPC ? -ENOMEM : -errno;
}

int cvia__arena_index_open(uint32_t nslots)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = (arena_index_bytes(nslots) + page - 1) & ~(page - 1);
    struct cvia_arena_index *ix;
    int fd, rc;

    if ((fd = arena_memfd("cvia-arena-index")) < 0) {
        cvia_error(MEM, "memfd_create for the arena index: %s", strerror(-fd));
        return fd;
    }
    rc = ftruncate(fd, (off_t)bytes) < 0 ? -errno : arena_reserve(fd, bytes);
    if (rc < 0) {
        cvia_error(MEM, "cannot size the arena index (%zu bytes): %s", bytes,
                   strerror(-rc));
        goto err_close;
    }
    ix = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ix == MAP_FAILED) {
        rc = -errno;
        cvia_error(MEM, "mmap arena index: %s", strerror(errno));
        goto err_close;
    }
    madvise(ix, bytes, MADV_DONTFORK);
    ix->magic     = CVIA_ARENA_MAGIC;
    ix->version   = CVIA_ARENA_VERSION;
    ix->nslots    = nslots;
    ix->pid       = (int32_t)getpid();
    ix->ient_size = (uint32_t)sizeof(struct cvia_arena_ient);
    atomic_store_explicit(&ix->seq, 0, memory_order_relaxed);
    atomic_store_explicit(&ix->hiwater, 0, memory_order_relaxed);
    /* Peers map it read-only; with FUTURE_WRITE (Linux 5.1) the kernel
     * refuses them a writable mapping too, while ours stays writable. */
    if (fcntl(fd, F_ADD_SEALS, ARENA_SEALS | F_SEAL_FUTURE_WRITE) < 0 &&
        fcntl(fd, F_ADD_SEALS, ARENA_SEALS) < 0)
        cvia_debug(MEM, "cannot seal the arena index: %s", strerror(errno));
    fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
    idx_fd = fd;
    idx_bytes = bytes;
    atomic_store_explicit(&idx, ix, memory_order_release);
    return 0;

err_close:
    close(fd);
    return rc;
}

int cvia__arena_index_fdnum(void)
{
    return idx_fd;
}

void cvia__arena_index_close(void)
{
    struct cvia_arena_index *ix = atomic_exchange(&idx, NULL);

    if (ix)
        munmap(ix, idx_bytes);
    if (idx_fd >= 0)
        close(idx_fd);
    idx_fd = -1;
}

void cvia__arena_index_forget(void)
{
    atomic_store(&idx, NULL);       /* MADV_DONTFORK: not mapped here */
    if (idx_fd >= 0)
        close(idx_fd);
    idx_fd = -1;
}

int cvia__arena_contains(const void *ptr, size_t len)
{
    struct cvia_arena_index *ix = atomic_load_explicit(&idx, memory_order_acquire);
    struct cvia_arena_snap snap;
    uint64_t seq;

    if (!ix || !ptr)
        return 0;
    return arena_index_find(ix, ix->nslots, (uint64_t)(uintptr_t)ptr, len, &snap, &seq) == 1;
}

/* --------------------------------------------------------------- chunks */

/* Bytes the machine can still give us, best effort: MemAvailable plus free
 * swap, and the room left under our cgroup v2 memory.max. tmpfs does not
 * limit memfds, so without this a request larger than the machine would
 * make fallocate wake the OOM killer instead of failing. */
static uint64_t arena_mem_room(void)
{
    uint64_t room = UINT64_MAX, avail = 0, swap = 0, max, cur;
    char line[512], path[600];
    FILE *f;

    if ((f = fopen("/proc/meminfo", "re"))) {
        int got = 0;
        while (fgets(line, sizeof(line), f)) {
            unsigned long long kb;
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
                avail = kb * 1024, got |= 1;
            else if (sscanf(line, "SwapFree: %llu kB", &kb) == 1)
                swap = kb * 1024, got |= 2;
        }
        fclose(f);
        if (got & 1)
            room = avail + swap;
    }
    if (room == UINT64_MAX) {
        struct sysinfo si;
        if (sysinfo(&si) == 0)
            room = ((uint64_t)si.freeram + si.bufferram + si.freeswap) * si.mem_unit;
    }
    if ((f = fopen("/proc/self/cgroup", "re"))) {
        while (fgets(line, sizeof(line), f)) {
            FILE *m;
            if (strncmp(line, "0::", 3))
                continue;
            line[strcspn(line, "\n")] = '\0';
            snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", line + 3);
            if (!(m = fopen(path, "re")))
                continue;
            if (fscanf(m, "%" SCNu64, &max) != 1)   /* "max": no limit */
                max = UINT64_MAX;
            fclose(m);
            snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.current", line + 3);
            if (max == UINT64_MAX || !(m = fopen(path, "re")))
                continue;
            if (fscanf(m, "%" SCNu64, &cur) != 1)
                cur = 0;
            fclose(m);
            /* page cache (not shmem: that is on the anon lists) is reclaimable */
            snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.stat", line + 3);
            if ((m = fopen(path, "re"))) {
                char key[64];
                uint64_t v;
                while (fscanf(m, "%63s %" SCNu64, key, &v) == 2)
                    if (!strcmp(key, "active_file") || !strcmp(key, "inactive_file"))
                        cur = cur > v ? cur - v : 0;
                fclose(m);
            }
            if (cur < max && max - cur < room)
                room = max - cur;
            else if (cur >= max)
                room = 0;
        }
        fclose(f);
    }
    return room;
}

/* A placement (mem_tier.c): mbind of [addr, len) with the tier's policy
 * and nodes, after a check that they have room. It runs between mmap and
 * fallocate so that the pages fallocate allocates are placed by the
 * policy (the memfd's shared policy). */
static int arena_chunk_place(void *addr, size_t len, int place)
{
    return cvia__mem_place_apply(addr, len, place);
}

/* Map @fd at an address that is a multiple of @align. */
static void *arena_map(int fd, size_t size, size_t align)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start;
    char *res, *p;

    if (align <= page)
        return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    res = mmap(NULL, size + align, PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED)
        return MAP_FAILED;
    start = ((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1);
    p = mmap((void *)start, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        munmap(res, size + align);
        errno = e;
        return MAP_FAILED;
    }
    if (p > res)
        munmap(res, (size_t)(p - res));
    if (res + size + align > p + size)
        munmap(p + size, (size_t)(res + size + align - (p + size)));
    return p;
}

int cvia__arena_os_create(size_t size, size_t align, int place,
                          struct cvia_arena_os *os)
{
    struct cvia_arena_index *ix = atomic_load_explicit(&idx, memory_order_relaxed);
    struct cvia_arena_ient *e;
    uint64_t room, hi;
    uint32_t slot;
    char *base;
    int fd, rc;

    if (!ix)
        return -EINVAL;
    for (slot = 0; slot < ix->nslots; slot++)
        if (!atomic_load_explicit(&ix->ent[slot].gen, memory_order_relaxed))
            break;
    if (slot == ix->nslots) {
        cvia_warn_once(MEM, "arena index full: %u chunks live; raise "
                       "CVIA_MEM_MAX_CHUNKS", ix->nslots);
        return -ENOMEM;
    }
    if ((room = arena_mem_room()) < size) {
        cvia_info(MEM, "arena chunk of %zu bytes: only %" PRIu64
                  " bytes of memory left", size, room);
        return -ENOMEM;
    }
    if ((fd = arena_memfd("cvia-arena")) < 0) {
        cvia_info(MEM, "memfd_create: %s", strerror(-fd));
        return fd;
    }
    if (ftruncate(fd, (off_t)size) < 0) {
        rc = errno == EFBIG ? -ENOMEM : -errno;
        cvia_info(MEM, "ftruncate arena chunk to %zu: %s", size, strerror(errno));
        goto err_close;
    }
    base = arena_map(fd, size, align);
    if (base == MAP_FAILED) {
        rc = -errno;
        cvia_info(MEM, "mmap arena chunk of %zu bytes: %s", size, strerror(errno));
        goto err_close;
    }
    if ((rc = arena_chunk_place(base, size, place)) < 0)
        goto err_unmap;
    if ((rc = arena_reserve(fd, size)) < 0) {
        cvia_info(MEM, "cannot reserve %zu bytes for an arena chunk: %s", size,
                  strerror(-rc));
        goto err_unmap;
    }
    /* peers must not be able to shrink it under us (SIGBUS) */
    if (fcntl(fd, F_ADD_SEALS, ARENA_SEALS | F_SEAL_SEAL) < 0)
        cvia_debug(MEM, "cannot seal an arena chunk: %s", strerror(errno));
    madvise(base, size, MADV_DONTFORK);

    os->base = base;
    os->size = size;
    os->fd   = fd;
    os->slot = slot;
    os->gen  = next_gen++;

    e = &ix->ent[slot];
    arena_index_write_begin(ix);
    atomic_store_explicit(&e->base, (uint64_t)(uintptr_t)base, memory_order_relaxed);
    atomic_store_explicit(&e->size, size, memory_order_relaxed);
    atomic_store_explicit(&e->fd, fd, memory_order_relaxed);
    atomic_store_explicit(&e->gen, os->gen, memory_order_relaxed);
    hi = atomic_load_explicit(&ix->hiwater, memory_order_relaxed);
    if (slot + 1 > hi)
        atomic_store_explicit(&ix->hiwater, slot + 1, memory_order_relaxed);
    arena_index_write_end(ix);
    return 0;

err_unmap:
    munmap(base, size);
err_close:
    close(fd);
    return rc;
}

void cvia__arena_os_destroy(struct cvia_arena_os *os)
{
    struct cvia_arena_index *ix = atomic_load_explicit(&idx, memory_order_relaxed);

    /* out of the index before the fd closes (arena_index.h) */
    if (ix) {
        struct cvia_arena_ient *e = &ix->ent[os->slot];
        arena_index_write_begin(ix);
        atomic_store_explicit(&e->gen, 0, memory_order_relaxed);
        atomic_store_explicit(&e->base, 0, memory_order_relaxed);
        atomic_store_explicit(&e->size, 0, memory_order_relaxed);
        atomic_store_explicit(&e->fd, -1, memory_order_relaxed);
        arena_index_write_end(ix);
    }
    munmap(os->base, os->size);
    close(os->fd);
    os->fd = -1;
}
