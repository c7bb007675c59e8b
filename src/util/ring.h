/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Bounded single-producer / single-consumer ring of fixed-size slots,
 * placeable in shared memory (no pointers inside, only offsets).
 *
 * Each slot begins with a 64-bit sequence word (Vyukov's bounded queue):
 * for position pos (a 64-bit counter each side keeps privately) the slot
 * index is pos % nslots, and the slot is
 *   free for the producer   when seq == pos
 *   full for the consumer   when seq == pos + 1
 * The producer publishes with seq = pos + 1 (release), the consumer frees
 * with seq = pos + nslots (release). No shared head or tail counter, no
 * lock, no system call; a small message and its sequence word share one
 * cache line. nslots must be a power of two and at least 2 (with one slot
 * the published value pos + 1 would read as free for the next lap),
 * slot_size a multiple of 8. */
#ifndef COREVIA_UTIL_RING_H
#define COREVIA_UTIL_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct cvia_ring {
    unsigned char *base;
    uint32_t       nslots;      /* power of two */
    uint32_t       slot_size;   /* bytes, sequence word included */
};

static inline _Atomic uint64_t *cvia_ring_seq(const struct cvia_ring *r, uint64_t pos)
{
    return (_Atomic uint64_t *)(void *)(r->base +
        (size_t)(pos & (r->nslots - 1)) * r->slot_size);
}

/* Set every slot free for lap 0. Not concurrent with anything. */
static inline void cvia_ring_init(const struct cvia_ring *r)
{
    for (uint32_t i = 0; i < r->nslots; i++)
        atomic_store_explicit(cvia_ring_seq(r, i), i, memory_order_release);
}

/* Producer: the slot for @pos if it is free, else NULL (ring full). */
static inline void *cvia_ring_claim(const struct cvia_ring *r, uint64_t pos)
{
    _Atomic uint64_t *seq = cvia_ring_seq(r, pos);
    return atomic_load_explicit(seq, memory_order_acquire) == pos ? (void *)seq : NULL;
}

/* Producer: hand the filled slot of @pos to the consumer. */
static inline void cvia_ring_publish(void *slot, uint64_t pos)
{
    atomic_store_explicit((_Atomic uint64_t *)slot, pos + 1, memory_order_release);
}

/* Consumer: the slot for @pos if it holds data, else NULL (ring empty). */
static inline void *cvia_ring_peek(const struct cvia_ring *r, uint64_t pos)
{
    _Atomic uint64_t *seq = cvia_ring_seq(r, pos);
    return atomic_load_explicit(seq, memory_order_acquire) == pos + 1 ? (void *)seq : NULL;
}

/* Consumer: give the slot of @pos back to the producer for its next lap. */
static inline void cvia_ring_release(const struct cvia_ring *r, void *slot, uint64_t pos)
{
    atomic_store_explicit((_Atomic uint64_t *)slot, pos + r->nslots, memory_order_release);
}

#endif
