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
 * slot_size a multiple of 8.
 *
 * Slot k begins at k * stride, stride = cvia_ring_stride(slot_size): the
 * slot size rounded up to an odd number of 64-byte lines. Every header is
 * the hot line of its slot (the sequence word both sides poll, and a small
 * message), and the L1 data cache picks a line's set from address bits
 * 6..11: with a stride that is a multiple of 4 KiB (the default 16 KiB
 * slot) every header of the ring falls in one set, which holds 8 or 12
 * lines, and a stream of small messages evicts the headers it is about to
 * use (8 B stream: 43.7-49.1 M/s at 16384 against 55.1-57.3 M/s at 16448,
 * BENCHMARKS.md, issue 14). An odd line count is coprime with the 64 sets,
 * so 64 consecutive headers fill 64 different sets. The payload keeps the
 * alignment it had: slots stay 64-byte aligned. */
#ifndef COREVIA_UTIL_RING_H
#define COREVIA_UTIL_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct cvia_ring {
    unsigned char *base;
    uint32_t       nslots;      /* power of two */
    uint32_t       slot_size;   /* bytes, sequence word included */
    uint32_t       stride;      /* bytes from one slot to the next:
                                 * cvia_ring_stride(slot_size) */
};

#define CVIA_RING_LINE 64u

/* The distance between slots of @slot_size bytes (a multiple of 8): the
 * size rounded up to whole lines, plus one line if that count is even. */
static inline uint32_t cvia_ring_stride(uint32_t slot_size)
{
    uint32_t lines = (slot_size + CVIA_RING_LINE - 1) / CVIA_RING_LINE;

    return (lines | 1u) * CVIA_RING_LINE;
}

/* Bytes a ring of @nslots slots of @slot_size bytes takes. */
static inline size_t cvia_ring_bytes(uint32_t nslots, uint32_t slot_size)
{
    return (size_t)nslots * cvia_ring_stride(slot_size);
}

/* Describe the ring at @base (cvia_ring_bytes(nslots, slot_size) bytes). */
static inline void cvia_ring_layout(struct cvia_ring *r, void *base, uint32_t nslots,
                                    uint32_t slot_size)
{
    r->base = (unsigned char *)base;
    r->nslots = nslots;
    r->slot_size = slot_size;
    r->stride = cvia_ring_stride(slot_size);
}

static inline _Atomic uint64_t *cvia_ring_seq(const struct cvia_ring *r, uint64_t pos)
{
    return (_Atomic uint64_t *)(void *)(r->base +
        (size_t)(pos & (r->nslots - 1)) * r->stride);
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
