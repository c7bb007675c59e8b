/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* shm provider: private structures.
 *
 * Each rank owns one receive segment holding one ring per sender (itself
 * included). A ring (util/ring.h) is single-producer / single-consumer: the
 * sender writes slots, the owner reads them, and they share no head/tail
 * counter, so a small message costs one cache line in flight. Messages
 * longer than a slot are cut into
 * consecutive slots (FIRST ... LAST) and pipelined: the consumer drains
 * slots while the producer fills the next ones.
 *
 * Segment layout (offsets in bytes):
 *   0          struct shm_seg_hdr        (one page)
 *   4096       ring of sender 0          (ring_bytes)
 *   4096 + p * ring_bytes                ring of sender p
 */
#ifndef COREVIA_PROV_SHM_H
#define COREVIA_PROV_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "prov/prov.h"
#include "util/ring.h"

#define SHM_MAGIC       0x316d687361697663ull   /* "cviashm1" */
#define SHM_HDR_BYTES   4096
#define SHM_CACHELINE   64
#define SHM_NAME_MAX    64

#define SHM_SLOT_FIRST  0x1
#define SHM_SLOT_LAST   0x2

struct shm_seg_hdr {
    uint64_t magic;
    uint64_t jobid;
    uint32_t owner;          /* rank that reads these rings */
    uint32_t nranks;
    uint32_t nslots;         /* power of two */
    uint32_t slot_size;      /* bytes, header included, multiple of 64 */
    uint64_t ring_bytes;     /* stride between rings */
    int32_t  pid;
    _Atomic uint32_t finalized;   /* owner finished cleanly */
};

/* 32 bytes; the payload follows, so a message of up to 32 bytes travels in
 * the slot's first cache line together with its header. */
struct shm_slot {
    _Atomic uint64_t seq;
    uint32_t len;            /* payload bytes in this slot */
    uint16_t flags;          /* SHM_SLOT_FIRST | SHM_SLOT_LAST */
    uint16_t ctx;
    int32_t  tag;
    uint32_t reserved;
    uint64_t msg_len;        /* FIRST slots: whole message length */
};
#define SHM_SLOT_HDR ((size_t)sizeof(struct shm_slot))

struct shm_cfg {
    long   nslots;
    size_t slot_size;
};

/* What this rank knows about one peer. */
struct shm_peer {
    /* as producer into the peer's segment */
    struct cvia_ring tx_ring;    /* my ring inside the peer's segment */
    uint64_t         tx_pos;
    int              tx_started; /* FIRST slot of the head message written */
    struct cvia_xfer *txq_head, *txq_tail;
    /* as consumer of my own segment */
    struct cvia_ring rx_ring;
    uint64_t         rx_pos;
    struct cvia_xfer *rx_cur;    /* message being received */
    /* the peer's segment */
    struct shm_seg_hdr *seg;
    size_t           seg_bytes;
    pid_t            pid;
    int              pidfd;      /* -1 if unavailable */
    int              gone;       /* reported through peer_lost */
};

struct cvia_prov_ep {
    struct cvia_prov_args args;
    struct shm_cfg    cfg;
    uint32_t          nslots;
    uint32_t          slot_size;
    size_t            ring_bytes;
    size_t            seg_bytes;
    char              name[SHM_NAME_MAX];  /* my segment, "" once unlinked */
    struct shm_seg_hdr *seg;               /* my segment */
    struct shm_peer  *peers;               /* [size] */
    int               npending;            /* peers with queued sends */
    int               poll_start;          /* round-robin fairness */
};

/* shm_seg.c */
int  shm_seg_create(struct cvia_prov_ep *ep);
int  shm_seg_attach(struct cvia_prov_ep *ep, int peer, const char *name);
void shm_seg_unlink(struct cvia_prov_ep *ep);
void shm_seg_detach_all(struct cvia_prov_ep *ep);
int  shm_seg_cleanup_stale(void);

/* shm_msg.c */
int  shm_send(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  shm_progress(struct cvia_prov_ep *ep);
int  shm_check_peers(struct cvia_prov_ep *ep);
void shm_peer_gone(struct cvia_prov_ep *ep, int peer, int err);


#endif
