/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/**
 * @file dsm.h
 * @brief corevia DSM: page-based software distributed shared memory with
 *        home-based lazy release consistency (HLRC), after KDSM-V (paper 004).
 *
 * Every rank maps one shared region at the same virtual address. Memory
 * from cvia_dsm_alloc() is coherent at the granularity of a *unit*
 * (CVIA_DSM_UNIT, a multiple of the page) under release consistency: what
 * a rank wrote before cvia_dsm_unlock() is seen by the next rank that
 * takes the lock with cvia_dsm_lock(), and what any rank wrote before
 * cvia_dsm_barrier() is seen by every rank after it. Data races outside
 * locks and barriers give undefined values, as in any release-consistent
 * memory.
 *
 * Each unit has a home rank that keeps its master copy. A rank touching a
 * unit it holds no valid copy of takes a page fault; the home then writes
 * the unit straight into the faulting page (RDMA write with immediate
 * data, no copy on either side). The first write to a cached unit makes a
 * twin; at the next release the difference is written to the home, which
 * applies it. Write notices travel with lock grants and barriers and
 * invalidate stale copies.
 *
 * Rules of use (see cvia-dsm(7)):
 * - one application thread per process touches the shared region; the
 *   library runs one service thread of its own;
 * - never pass shared memory to corevia calls or to system calls (read(),
 *   write(), ...): the kernel does not take DSM faults for them; copy
 *   through private memory, or call cvia_dsm_touch() first;
 * - cvia_dsm_alloc() and cvia_dsm_lock_create() are collective in the
 *   sense that every rank makes the same calls in the same order (SPMD
 *   code does). PARMACS programs may allocate anywhere: G_MALLOC and
 *   LOCKINIT after the first CREATE go through rank 0 (parmacs.h).
 *
 * All calls return 0 (or a non-negative value where stated) or a negative
 * error code (cvia_strerror()).
 */
#ifndef COREVIA_DSM_H
#define COREVIA_DSM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <corevia/corevia.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Home placement of an allocation's units (cvia_dsm_alloc()). */
enum cvia_dsm_home {
    CVIA_DSM_HOME_DEFAULT = -1,     /**< CVIA_DSM_HOME */
    CVIA_DSM_HOME_RR = -2,          /**< unit i of the region on rank i % size */
    CVIA_DSM_HOME_BLOCK = -3,       /**< the allocation cut in size contiguous blocks */
    CVIA_DSM_HOME_FIRST_TOUCH = -4, /**< the first rank that writes the unit */
    /* 0 .. size-1: every unit on that rank */
};

/**
 * Start the DSM: cvia_init() if not done yet, agree on the shared
 * region's address, register it, start the service thread. Collective.
 * Fails with -::CVIA_ECONFIG for a bad CVIA_DSM_* variable, -EADDRINUSE
 * when no address is free on every rank (set CVIA_DSM_ADDR), -ENOMEM.
 */
CVIA_API int cvia_dsm_init(int *argc, char ***argv);

/** Collective: wait for every rank, gather and print statistics (if
 *  asked for), stop the service thread, unmap, and cvia_finalize() if
 *  cvia_dsm_init() started corevia. */
CVIA_API int cvia_dsm_finalize(void);

/** This rank, and the number of ranks. */
CVIA_API int cvia_dsm_rank(void);
CVIA_API int cvia_dsm_size(void);

/** Coherence unit in bytes (CVIA_DSM_UNIT). */
CVIA_API size_t cvia_dsm_unit(void);

/**
 * Allocate @p len bytes of shared memory, unit-aligned, at the same
 * address on every rank, homes placed by @p home (an ::cvia_dsm_home or
 * a rank). Every rank must make the same calls in the same order. The
 * memory reads as zeros. Returns -ENOMEM when CVIA_DSM_SIZE is exhausted.
 */
CVIA_API int cvia_dsm_alloc(size_t len, int home, void **ptr_p);

/** cvia_dsm_alloc() with the default placement; NULL on failure. */
CVIA_API void *cvia_dsm_malloc(size_t len);

/** Home rank of the unit holding @p addr (-1: not decided yet, for
 *  first touch), or a negative error for an address outside allocations. */
CVIA_API int cvia_dsm_home_of(const void *addr);

/** @name Locks: distributed tokens, one manager per lock (id % size). */
/** Make a lock and return its id in @p *id_p; ids are handed out in call
 *  order, so every rank making the same calls gets the same ids. */
CVIA_API int cvia_dsm_lock_create(int *id_p);
/** Acquire: blocks until the token arrives with its write notices.
 *  -EDEADLK if this rank already holds it, -EINVAL for a bad id. */
CVIA_API int cvia_dsm_lock(int id);
/** Release. -EPERM (and an error message naming the lock) if this rank
 *  does not hold it: unlock without lock, or a second unlock. */
CVIA_API int cvia_dsm_unlock(int id);

/** Global barrier: every write before it, by any rank, is seen after it
 *  by every rank. */
CVIA_API int cvia_dsm_barrier(void);

/** Make [@p addr, @p addr + @p len) readable (or writable with @p write)
 *  now, so that it can be handed to a system call. */
CVIA_API int cvia_dsm_touch(const void *addr, size_t len, int write);

/** What this rank counted since cvia_dsm_init(). */
typedef struct cvia_dsm_stats {
    uint64_t read_faults;      /**< faults on a unit with no valid copy, by a read */
    uint64_t write_faults;     /**< faults by a write (fetch, twin or home write) */
    uint64_t fetches;          /**< units fetched from their homes */
    uint64_t pages_fetched;    /**< pages in them */
    uint64_t fetch_bytes;
    uint64_t pages_served;     /**< units this rank, as home, sent */
    uint64_t prefetches;       /**< units fetched at a barrier before a fault */
    uint64_t prefetch_hits;    /**< first touches of a prefetched unit (a local fault) */
    uint64_t prefetch_waits;   /**< faults that waited for a prefetch on its way */
    uint64_t twins;
    uint64_t diffs;            /**< unit diffs made */
    uint64_t diff_bytes;       /**< changed bytes in them */
    uint64_t diffs_applied;    /**< unit diffs applied as home */
    uint64_t notices_sent;     /**< write notices (unit, interval) sent */
    uint64_t notices_recv;     /**< write notices received */
    uint64_t invalidations;
    uint64_t intervals;
    uint64_t lock_local;       /**< acquires served by a cached token */
    uint64_t lock_remote;      /**< acquires that needed messages */
    uint64_t barriers;
    double   barrier_time;     /**< seconds spent in cvia_dsm_barrier() */
    double   fault_time;       /**< seconds spent in fault handling */
    double   lock_time;        /**< seconds spent waiting for lock grants */
    uint64_t msgs_sent;        /**< control messages */
    uint64_t msg_bytes;
    uint64_t rdma_writes;      /**< pages, diffs and flags written one-sided */
    uint64_t rdma_bytes;
} cvia_dsm_stats_t;

/** This rank's counters. */
CVIA_API int cvia_dsm_stats(cvia_dsm_stats_t *s);

/** Ask cvia_dsm_finalize() to print every rank's counters and their sum
 *  on rank 0: @p json 0 for a table, 1 for JSON; @p out NULL for stdout.
 *  CVIA_DSM_STATS does the same from the environment. */
CVIA_API int cvia_dsm_stats_at_exit(int json, FILE *out);

/** Called once, with the error code and the message, when the DSM meets
 *  an error it cannot recover from (a peer died, the launcher tears the
 *  job down); the rank then exits with status 1. Runs on any thread. */
typedef void (*cvia_dsm_fatal_fn)(int err, const char *msg);
CVIA_API void cvia_dsm_on_fatal(cvia_dsm_fatal_fn fn);

#ifdef __cplusplus
}
#endif
#endif
