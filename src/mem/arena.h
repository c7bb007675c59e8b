/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Shareable arenas: memory that a peer process on the node maps and then
 * reads or writes with plain loads and stores, no system call per copy
 * (what XPMEM does, without a kernel module).
 *
 * Owner side: the arena is a set of chunks, each a memfd file
 * ("cvia-arena") mapped MAP_SHARED, its pages reserved with fallocate when
 * the chunk is created (a full machine is -ENOMEM at alloc time, never a
 * SIGBUS later). Allocations are carved from chunks first-fit with
 * coalescing; allocations of at least CVIA_MEM_LARGE get a chunk of their
 * own, unmapped when freed. The allocator's bookkeeping lives in private
 * memory, so a peer's stray write into a chunk cannot corrupt it. A small
 * memfd "index" lists the live chunks (owner's fd number, base address,
 * size, generation); peers read it without locks (seqlock + per-entry
 * generation, see arena_index.h).
 *
 * Peer side: a view opens the owner's index with pidfd_getfd() and maps it
 * read-only; translate() finds the chunk that holds an address, maps it on
 * first use (pidfd_getfd + mmap MAP_SHARED) and caches the mapping. A chunk
 * the owner has freed is never translated again: its mapping is dropped on
 * the next translate after the owner's index changed.
 *
 * Who can map the memory: the chunk fds are close-on-exec, never passed on,
 * and have no name in any filesystem. pidfd_getfd() needs
 * PTRACE_MODE_ATTACH_REALCREDS over the owner, the very permission that
 * Cross Memory Attach (process_vm_readv/writev) needs: the kernel only lets
 * a process in that already may read and write the owner's memory (same
 * user and not blocked by yama's ptrace_scope or a security module, or
 * CAP_SYS_PTRACE). Under yama ptrace_scope 1 that means an ancestor (or a
 * process the owner named with PR_SET_PTRACER: cvia-run's ranks are
 * siblings, so under scope 1 they need that, as they do for CMA); where it
 * is refused, view_open fails with -EPERM and the caller copies another
 * way. Scope 2 needs CAP_SYS_PTRACE, scope 3 forbids it.
 * One more door exists: /proc/<pid>/fd/<n> can
 * reopen a chunk for a process with ptrace *read* access (same user,
 * owner dumpable; yama does not restrict read mode); the chunks are
 * fchmod 0600, so that door is within the same user's trust boundary, as
 * is the shm provider's /dev/shm segment before it is unlinked. A peer can
 * neither shrink nor grow a chunk (sealed) nor write the index (sealed
 * F_SEAL_FUTURE_WRITE where the kernel has it).
 *
 * fork(): chunks are MADV_DONTFORK; a child starts with an empty arena of
 * its own (pointers from the parent's arena are not valid in the child,
 * as with RDMA-registered memory). Views are not for use in a child: open
 * new ones there.
 *
 * Thread safety: owner calls are serialized by one mutex (not the fast
 * path); cvia__arena_contains() reads the index without the lock. A view
 * may be used by several threads at once: translate of an already mapped
 * chunk is lock-free (a few loads and compares, no system call); mapping
 * and dropping take the view's mutex. */
#ifndef COREVIA_MEM_ARENA_H
#define COREVIA_MEM_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "util/param.h"

/* CVIA_MEM_* settings (table in mem.c), read on the arena's first use. */
struct cvia_mem_cfg {
    size_t chunk_size;   /* first shared chunk */
    size_t chunk_max;    /* chunks double up to this */
    size_t large;        /* allocations >= this get their own chunk */
    size_t limit;        /* most bytes of chunks at once; 0 = no limit */
    long   max_chunks;   /* index slots: most chunks at once */
    char   tiers[CVIA_PARAM_STRLEN];     /* CVIA_MEM_TIERS (mem_tier.c) */
    char   shm_kind[CVIA_PARAM_STRLEN];  /* CVIA_MEM_SHM_KIND (mem_tier.c) */
};

extern const struct cvia_param_table cvia__mem_param_table;

/* ------------------------------------------------------------ owner side */

/* Allocate @len bytes (0 counts as 1) aligned to @align (0 = 64; a power of
 * two up to 1 GiB); len >= 4096 is always page-aligned and never shares a
 * page with another allocation. Returns 0, -EINVAL (bad argument),
 * -ENOMEM (memory, CVIA_MEM_LIMIT or index slots exhausted), another
 * -errno of a system call that failed (e.g. -EMFILE), or -CVIA_ECONFIG (bad
 * CVIA_MEM_* variable). *ptr_p is set on success only. */
int cvia__arena_alloc(size_t len, size_t align, void **ptr_p);

/* The same on a placement: 0 is the default (no policy); others are
 * handed out by cvia__mem_kind_place() (mem_tier.h), each an mbind policy
 * applied to every new chunk between its mmap and its fallocate (see
 * arena_chunk_place() in arena_chunk.c). Chunks of different placements
 * never share memory. A placement never handed out is -EINVAL; -ENOMEM
 * also when the placement's nodes have no room for a new chunk. */
int cvia__arena_alloc_place(size_t len, size_t align, int place, void **ptr_p);

/* Free what cvia__arena_alloc returned. -EINVAL if @ptr is not the start
 * of a live allocation. */
int cvia__arena_free(void *ptr);

/* 1 if [ptr, ptr+len) lies inside one chunk of this process's arena, else
 * 0. Lock-free. */
int cvia__arena_contains(const void *ptr, size_t len);

/* This process's index memfd (created on first use, with the arena), or
 * -errno. Peers pass the number to cvia__arena_view_open(). The fd stays
 * open, and its number the same, until cvia__arena_fini(). */
int cvia__arena_index_fd(void);

/* Unmap and close everything, forget the configuration (the next use
 * starts afresh). For library teardown, after the user freed all, or at
 * exit: pointers still outstanding become invalid. */
void cvia__arena_fini(void);

/* ------------------------------------------------------------- peer side */

struct cvia_arena_view;

/* Open a view of the arena of the process behind @peer_pidfd (a pidfd, not
 * taken over: the view keeps a duplicate) whose index is fd number
 * @peer_index_fd_number in that process. Returns 0, -EPERM when the kernel
 * refuses pidfd_getfd (ptrace policy: yama, another user, a security
 * module), -ESRCH (peer gone), -EBADF (no such fd there), -ENOSYS (kernel
 * older than 5.6 or seccomp), -CVIA_ESEGMENT (that fd is not an arena
 * index), -ENOMEM. */
int cvia__arena_view_open(int peer_pidfd, int peer_index_fd_number,
                          struct cvia_arena_view **view_p);

/* A local pointer to the peer's [peer_addr, peer_addr+len) if the range
 * lies inside one of its live chunks, mapping that chunk on first use;
 * NULL if it does not, or if mapping failed (the caller then uses another
 * copy path). Once mapped: lock-free, no system call. The pointer stays
 * valid until the owner frees that chunk (after which the next translate
 * drops the mapping: an owner must not free a buffer that is being copied)
 * or the view is closed. */
void *cvia__arena_view_translate(struct cvia_arena_view *v, uint64_t peer_addr,
                                 size_t len);

/* Unmap everything the view mapped and free it. NULL is a no-op. */
void cvia__arena_view_close(struct cvia_arena_view *v);

#endif
