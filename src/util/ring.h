/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Bounded single-producer / single-consumer ring of fixed-size slots,
 * placeable in shared memory (no pointers inside, only offsets).
 *
 * Each slot begins with a 64-bit sequence word: for position pos (a 64-bit
 * counter each side keeps privately) the slot index is pos % nslots, and
 * the slot holds data for the consumer when seq == pos + 1, which the
 * producer stores (release) once the slot is filled. The consumer never
 * writes a slot: it publishes how far it has read in a word of its own
 * (head, on a cache line after the slots), every CVIA_RING_BATCH slots and
 * when it stops reading (cvia_ring_flush); the producer keeps the last head
 * it read and loads it again only when its copy says the ring is full. So
 * a small message costs one line written by the producer and read by the
 * consumer (its sequence word and up to 32 bytes of payload share it):
 * the producer does not read the slot before writing it, and the consumer
 * does not write it back, which in the one-word-per-slot scheme (Vyukov's
 * bounded queue, the first version) moved each line twice more. No lock,
 * no system call. nslots must be a power of two and at least 2, slot_size
 * a multiple of 8; a ring takes CVIA_RING_BYTES(nslots, slot_size). */
#ifndef COREVIA_UTIL_RING_H
#define COREVIA_UTIL_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* head sits two lines past the slots: the adjacent-line prefetcher pairs
 * lines, and head should not travel with the last slot */
#define CVIA_RING_HEAD_OFF(nslots, slot_size) ((size_t)(nslots) * (size_t)(slot_size) + 128)
#define CVIA_RING_BYTES(nslots, slot_size)    (CVIA_RING_HEAD_OFF(nslots, slot_size) + 64)

struct cvia_ring {
    unsigned char    *base;
    _Atomic uint64_t *head;      /* positions the consumer has finished with */
    uint64_t          head_seen; /* producer: the last head it loaded */
    uint64_t          head_pub;  /* consumer: the last head it published */
    uint32_t          nslots;    /* power of two */
    uint32_t          slot_size; /* bytes, sequence word included */
};

/* Slots the consumer reads before it publishes its head while it goes on
 * reading: a quarter of the ring, so a producer that runs ahead finds room
 * before the consumer stops. */
#define CVIA_RING_BATCH(r) ((r)->nslots >= 8 ? (r)->nslots / 4 : 1)

/* Point @r at the ring at @base (either side; nothing in shared memory is
 * touched). */
static inline void cvia_ring_attach(struct cvia_ring *r, void *base, uint32_t nslots,
                                    uint32_t slot_size)
{
    r->base = (unsigned char *)base;
    r->head = (_Atomic uint64_t *)(void *)(r->base + CVIA_RING_HEAD_OFF(nslots, slot_size));
    r->head_seen = 0;
    r->head_pub = 0;
    r->nslots = nslots;
    r->slot_size = slot_size;
}

static inline _Atomic uint64_t *cvia_ring_seq(const struct cvia_ring *r, uint64_t pos)
{
    return (_Atomic uint64_t *)(void *)(r->base +
        (size_t)(pos & (r->nslots - 1)) * r->slot_size);
}

/* Empty the ring for lap 0 (attached). Not concurrent with anything. */
static inline void cvia_ring_init(struct cvia_ring *r)
{
    for (uint32_t i = 0; i < r->nslots; i++)
        atomic_store_explicit(cvia_ring_seq(r, i), 0, memory_order_relaxed);
    atomic_store_explicit(r->head, 0, memory_order_release);
    r->head_seen = r->head_pub = 0;
}

/* Producer: the slot for @pos if it is free, else NULL (ring full). */
static inline void *cvia_ring_claim(struct cvia_ring *r, uint64_t pos)
{
    if (pos - r->head_seen >= r->nslots) {
        r->head_seen = atomic_load_explicit(r->head, memory_order_acquire);
        if (pos - r->head_seen >= r->nslots)
            return NULL;
    }
    return (void *)cvia_ring_seq(r, pos);
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

/* Consumer: every slot before @next is read and may be reused. */
static inline void cvia_ring_flush(struct cvia_ring *r, uint64_t next)
{
    if (r->head_pub != next) {
        atomic_store_explicit(r->head, next, memory_order_release);
        r->head_pub = next;
    }
}

/* Consumer: done with the slot of @pos (its bytes are copied out); the
 * producer hears of it within CVIA_RING_BATCH slots or at the next flush. */
static inline void cvia_ring_release(struct cvia_ring *r, uint64_t pos)
{
    if (pos + 1 - r->head_pub >= CVIA_RING_BATCH(r))
        cvia_ring_flush(r, pos + 1);
}

#endif
