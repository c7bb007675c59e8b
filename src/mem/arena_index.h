/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The arena index: a memfd that the owner maps read-write and its peers
 * map read-only. It lists the owner's live chunks. Private to src/mem/.
 *
 * Protocol (one writer: the owner, under its arena mutex; any number of
 * lock-free readers in this and other processes):
 *  - seq is a seqlock counter: odd while the owner writes. A reader that
 *    saw the same even value before and after reading entries has a
 *    consistent snapshot.
 *  - Each entry carries the generation of the chunk it describes: 0 for an
 *    empty slot, else a number the owner never reuses. The owner empties a
 *    slot (gen = 0) before it closes the chunk's fd, and publishes a slot
 *    (gen last) only after the chunk's fd is open. So a peer that read
 *    (gen g, fd n), called pidfd_getfd(n), and then still reads gen g in
 *    that slot holds the chunk's own file, not a later file that reused
 *    the fd number (the owner's close and the peer's pidfd_getfd order
 *    through the kernel's fd table).
 *  - A peer that cached chunk g in slot i knows it is dead as soon as slot
 *    i holds anything else than g, even without a consistent snapshot.
 * Fields are C11 atomics (relaxed loads are plain loads); the header's
 * constant part is written before the index fd is handed to anyone. */
#ifndef COREVIA_MEM_ARENA_INDEX_H
#define COREVIA_MEM_ARENA_INDEX_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CVIA_ARENA_MAGIC   0x5844494169766363ull   /* "ccviAIDX" */
#define CVIA_ARENA_VERSION 1u

struct cvia_arena_ient {
    _Atomic uint64_t gen;    /* 0: empty slot */
    _Atomic uint64_t base;   /* owner's address of the chunk */
    _Atomic uint64_t size;   /* bytes, a multiple of the page size */
    _Atomic int64_t  fd;     /* owner's fd number of the chunk's memfd */
};

struct cvia_arena_index {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;         /* entries that follow */
    int32_t  pid;            /* owner's pid (diagnostics) */
    uint32_t ient_size;      /* sizeof(struct cvia_arena_ient) */
    _Atomic uint64_t seq;    /* seqlock: odd while the owner writes */
    _Atomic uint64_t hiwater;/* slots >= hiwater have never been used */
    uint64_t reserved[3];
    struct cvia_arena_ient ent[];
};

/* What a reader copies out of an entry. */
struct cvia_arena_snap {
    uint64_t gen, base, size;
    int64_t  fd;
    uint32_t slot;
};

/* Give up after this many inconsistent reads (an owner that died while
 * writing leaves seq odd forever): the caller treats it as "not found". */
#define CVIA_ARENA_READ_TRIES 100000

static inline size_t arena_index_bytes(uint32_t nslots)
{
    return sizeof(struct cvia_arena_index) +
           (size_t)nslots * sizeof(struct cvia_arena_ient);
}

/* [addr, addr+len) inside [base, base+size)? Overflow-safe. */
static inline int arena_range_in(uint64_t addr, size_t len, uint64_t base,
                                 uint64_t size)
{
    return addr >= base && addr - base < size && len <= size - (addr - base);
}

/* Find the live entry that holds [addr, addr+len) in a consistent snapshot,
 * looking at no more than @nslots entries (the reader's own idea of the
 * size of its mapping, not the shared header's). 1: found (*out filled);
 * 0: not in the index; -1: no consistent read. *seq_p gets the seq value
 * the answer is consistent with. */
static inline int arena_index_find(const struct cvia_arena_index *ix,
                                   uint32_t nslots, uint64_t addr, size_t len,
                                   struct cvia_arena_snap *out, uint64_t *seq_p)
{
    for (int tries = 0; tries < CVIA_ARENA_READ_TRIES; tries++) {
        uint64_t s = atomic_load_explicit(&ix->seq, memory_order_acquire);
        uint64_t hi;
        int found = 0;

        if (s & 1) {
            if (tries > 64)
                sched_yield();
            continue;
        }
        hi = atomic_load_explicit(&ix->hiwater, memory_order_relaxed);
        if (hi > nslots)
            hi = nslots;
        for (uint32_t i = 0; i < hi && !found; i++) {
            const struct cvia_arena_ient *e = &ix->ent[i];
            uint64_t g = atomic_load_explicit(&e->gen, memory_order_relaxed);
            uint64_t b, z;
            if (!g)
                continue;
            b = atomic_load_explicit(&e->base, memory_order_relaxed);
            z = atomic_load_explicit(&e->size, memory_order_relaxed);
            if (!arena_range_in(addr, len, b, z))
                continue;
            out->gen  = g;
            out->base = b;
            out->size = z;
            out->fd   = atomic_load_explicit(&e->fd, memory_order_relaxed);
            out->slot = i;
            found = 1;
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&ix->seq, memory_order_relaxed) != s)
            continue;
        *seq_p = s;
        return found;
    }
    return -1;
}

#endif
