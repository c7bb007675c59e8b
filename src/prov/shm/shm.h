/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* shm provider: private structures.
 *
 * Each rank owns one segment. Peers map it. It holds, at offsets every
 * rank computes the same way from the job size and the CVIA_SHM_* settings:
 *
 *   0          struct shm_seg_hdr
 *   cma_off    uint8_t cma[nranks]: 1 if this rank may copy straight into
 *              or out of rank p's memory (Cross Memory Attach probe)
 *   mr_off     struct shm_mr mr[mr_max]: regions this rank registered for
 *              remote access; peers check every one-sided access here
 *   rv_off     struct shm_rndv rv[nranks * rv_per_peer]: this rank's
 *              outgoing rendezvous transfers, up to rv_per_peer per
 *              destination. Reserved, not allocated: the file has a hole
 *              there, and the sender commits (fallocate) a page of blocks
 *              for a destination only when all it committed are in use
 *   ring_off   one receive ring per sender on this host (itself included),
 *              in rank order: local index lidx[rank]
 *
 * A ring (util/ring.h) is single-producer / single-consumer: the sender
 * writes slots, the owner reads them, and they share no head/tail counter,
 * so a small message costs one cache line in flight. Messages longer than
 * a slot are cut into consecutive slots (FIRST ... LAST) and pipelined.
 *
 * Rendezvous (messages of at least CVIA_SHM_RNDV_THRESHOLD bytes): the
 * sender fills a block in its own segment (buffer address, length) and
 * sends only a small RTS slot. The receiver, once the message is matched,
 * copies once: it pulls the bytes (READ: process_vm_readv, or plain
 * loads from the sender's shared arena), or publishes its buffer in the
 * block (CTS) so the sender pushes them (WRITE: process_vm_writev), or
 * both copy disjoint chunks claimed from the block's counter (COOP). The
 * receiver ends the transfer with DONE, after which the sender completes
 * and reuses the block. No lock is held across a copy or a system call.
 *
 * Locks per peer (paper 000, 3.2: small, separate critical sections):
 * tx_lock (send queue, ring position as producer, pending rendezvous and
 * reads), rx_lock (ring position as consumer, message being received,
 * pending receive-side rendezvous). Order: rx_lock before tx_lock, both
 * before the core's locks. */
#ifndef COREVIA_PROV_SHM_H
#define COREVIA_PROV_SHM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "prov/prov.h"
#include "util/mlock.h"
#include "util/ring.h"
#include "util/copy.h"

#define SHM_MAGIC       0x326d687361697663ull   /* "cviashm2": slots at
                                                  * cvia_ring_stride() */
#define SHM_CACHELINE   64
#define SHM_NAME_MAX    64

/* slot flags */
#define SHM_SLOT_FIRST  0x01
#define SHM_SLOT_LAST   0x02
#define SHM_SLOT_RTS    0x04   /* rendezvous request: payload = block index */
#define SHM_SLOT_IMM    0x08   /* immediate event: payload = struct shm_imm */
#define SHM_SLOT_RMAW   0x10   /* one-sided write through the ring */
#define SHM_SLOT_RMAR   0x20   /* one-sided read request */
#define SHM_SLOT_RRESP  0x40   /* answer to a read request */
#define SHM_SLOT_LINE2  0x80   /* payload from the slot's second cache line
                                  * (a piece, shm_piece.c), not right after
                                  * the header */
_Static_assert((SHM_SLOT_LINE2 >> 2) == 32, "shm_drain: LINE2 >> 2 is the line's rest");
#define SHM_SLOT_KINDS  (SHM_SLOT_RTS | SHM_SLOT_IMM | SHM_SLOT_RMAW | \
                         SHM_SLOT_RMAR | SHM_SLOT_RRESP)

/* provider-private xfer flags (high bits of cvia_xfer.flags) */
#define SHM_XFER_OP     0x8000  /* the xfer is a struct shm_op's wire view */

struct shm_seg_hdr {
    uint64_t magic;
    uint64_t jobid;
    uint64_t self_addr;      /* this header's address in its owner: CMA probe */
    uint32_t owner;          /* rank that reads these rings */
    uint32_t nranks;
    uint32_t nlocal;         /* ranks on this host: rings */
    uint32_t dynamic;        /* no launcher: peers claim rings (shm_dyn.c) */
    uint32_t nslots;         /* power of two */
    uint32_t slot_size;      /* bytes, header included, multiple of 64 */
    uint32_t rv_per_peer;
    uint32_t mr_max;
    uint64_t ring_bytes;     /* stride between rings */
    uint64_t cma_off, mr_off, rv_off, ring_off;
    uint64_t claim_off;      /* dynamic: struct shm_claim[nranks] */
    uint64_t nonce_hash;     /* dynamic: shm_dyn_hash(owner's nonce) */
    _Atomic uint32_t claim_gen;   /* dynamic: bumped by each claim posted */
    int32_t  pid;
    _Atomic int32_t arena_fd;     /* owner's arena index memfd number, -1 none */
    _Atomic uint32_t finalized;   /* owner finished cleanly */
    /* blocking waits (shm_block): the owner's threads asleep on @wake, and
     * the word itself, bumped by a sender that finds sleepers */
    _Alignas(64) _Atomic uint32_t sleepers;
    _Atomic uint32_t wake;
};

/* 32 bytes. A payload of up to 32 bytes follows in the same cache line. */
struct shm_slot {
    _Atomic uint64_t seq;
    uint32_t len;            /* payload bytes in this slot */
    uint16_t flags;          /* SHM_SLOT_* */
    uint16_t ctx;
    int32_t  tag;
    uint32_t reserved;
    uint64_t msg_len;        /* FIRST slots: whole message length */
};
#define SHM_SLOT_HDR ((size_t)sizeof(struct shm_slot))

/* An exported registration; key 0: free. The owner clears key, writes the
 * fields, then sets key (release); a reader checks key before and after. */
struct shm_mr {
    _Atomic uint64_t key;
    uint64_t addr;
    uint64_t len;
    uint32_t access;
    uint32_t reserved;
};

/* Dynamic mode: ring k of a segment is written by the process that holds
 * claim k (0: the owner itself). A connecting process claims a ring in the
 * peer's segment (FREE -> BUSY -> POSTED) and reserves one in its own for
 * the answer (RESERVED); the owner, in its progress, checks the proof
 * against its private nonce and answers ACCEPTED (both rings in use), DUP
 * (already connected, or a simultaneous connection that wins) or REFUSED. */
enum shm_claim_state {
    SHM_CLAIM_FREE = 0, SHM_CLAIM_BUSY, SHM_CLAIM_POSTED, SHM_CLAIM_ACCEPTED,
    SHM_CLAIM_DUP, SHM_CLAIM_REFUSED, SHM_CLAIM_RESERVED,
};

struct shm_claim {
    _Atomic uint32_t state;  /* enum shm_claim_state */
    int32_t  pid;            /* claimer (RESERVED: the peer it is for) */
    uint64_t seg_rand;       /* its segment's random part */
    uint64_t proof[2];       /* the owner's nonce, as the claimer was given it */
    uint32_t idx;            /* claimer's peer index for the owner */
    uint32_t ring_back;      /* ring in the claimer's segment for the answer */
    uint32_t cma;            /* claimer may use CMA on the owner */
    uint32_t owner_idx;      /* ACCEPTED: owner's peer index for the claimer */
    uint32_t owner_cma;      /* ACCEPTED: the owner may use CMA on the claimer */
    uint32_t reserved[3];
};

/* What cvia_addr() gives in dynamic mode (40 bytes). */
struct shm_dyn_addr {
    uint32_t magic;          /* SHM_DYN_MAGIC */
    int32_t  pid;
    uint64_t host;           /* hash of boot id and network namespace */
    uint64_t seg_rand;
    uint64_t nonce[2];
};
#define SHM_DYN_MAGIC 0x31647663u   /* "cvd1" */
_Static_assert(sizeof(struct shm_dyn_addr) == CVIA_DYN_ADDR_HOST &&
               offsetof(struct shm_dyn_addr, nonce) == offsetof(struct cvia_dyn_addr, nonce),
               "shm's address is the host part of struct cvia_dyn_addr");

enum shm_rv_state { SHM_RV_FREE = 0, SHM_RV_RTS, SHM_RV_CTS, SHM_RV_DONE };
enum shm_copy_mode { SHM_COPY_AUTO = 0, SHM_COPY_READ, SHM_COPY_WRITE, SHM_COPY_COOP };

/* shm_rndv.hint: the sender had other transfers to the peer in flight
 * when it sent this one (a window): both sides copy it, in halves. */
#define SHM_RV_HINT_WINDOW 1u

/* A rendezvous transfer, in the sender's segment. */
struct shm_rndv {
    _Atomic uint32_t state;  /* enum shm_rv_state */
    _Atomic int32_t  error;  /* first error of either side */
    uint32_t mode;           /* receiver's choice, with CTS */
    uint32_t hint;           /* sender's SHM_RV_HINT_*, with RTS */
    uint64_t src;            /* sender's buffer, in the sender */
    uint64_t msg_len;
    uint64_t dst;            /* receiver's buffer, in the receiver (CTS) */
    uint64_t len;            /* bytes to move: min(msg_len, capacity) */
    uint64_t chunk;          /* bytes per claimed chunk */
    uint64_t reserved2;
    /* the contended counters on a line of their own */
    _Alignas(64) _Atomic uint64_t next;   /* next chunk to claim */
    _Atomic uint64_t done;                /* bytes copied, both sides */
};

/* Immediate event and one-sided headers carried in slots (32 bytes). */
struct shm_rma_hdr {
    uint64_t key;
    uint64_t addr;           /* target address, in the target */
    uint64_t a;              /* RMAW/IMM: immediate; RMAR: length; RRESP: cookie */
    uint64_t b;              /* RMAW: CVIA_XFER_IMM or 0; IMM: length;
                              * RMAR: cookie; RRESP: status (int64) */
};
#define SHM_RMA_HDR ((size_t)sizeof(struct shm_rma_hdr))

/* A provider-owned message with a 32-byte header before its data: one-sided
 * operations through the ring. `x` is what travels through the send queue
 * (its buf/len are the data, its done counts header and data). */
struct shm_op {
    struct cvia_xfer x;
    struct cvia_xfer *user;  /* the core's request, completed with it; NULL: internal */
    uint16_t slot_flags;     /* SHM_SLOT_RMAW / RMAR / RRESP */
    struct shm_rma_hdr hdr;
};

struct shm_cfg {
    long   nslots;
    size_t slot_size;
    char   rndv_text[256];   /* CVIA_SHM_RNDV_THRESHOLD as given: auto or a size */
    size_t rndv_threshold;   /* in use: rndv_text, or what shm_tune measured */
    char   window_text[256]; /* CVIA_SHM_RNDV_WINDOW as given: auto or a size */
    size_t rv_window;        /* in use: below the threshold, a window's messages
                              * from this size go by rendezvous (shm_rndv_window) */
    int    cma;              /* tri: -1 auto, 0 never, 1 required */
    int    arena;
    int    copy_mode;        /* enum shm_copy_mode */
    size_t coop_threshold;
    size_t coop_chunk;
    long   rv_per_peer;
    long   mr_max;
    size_t piece;            /* in use: one-slot messages longer than this go
                              * a piece per slot (shm_piece.c); 0: whole.
                              * Before its text: with the text first, 4 KiB
                              * took 1.08x the time in the host's slow state
                              * (the fields after the config moved) */
    char   piece_text[256];  /* CVIA_SHM_PIECE as given: auto or a size */
    int    reprobe;          /* CVIA_SHM_REPROBE: the probes' caches ignored, rewritten */
    int    probe_check;      /* CVIA_SHM_PROBE_CHECK: a probe validated before it is cached */
    size_t arena_threshold;  /* below the threshold, a send from my arena of
                              * this size or more goes by rendezvous */
    size_t arena_coop;       /* both buffers in arenas: both sides copy halves
                              * from this size (CVIA_SHM_COPY=auto) */
};

struct cvia_arena_view;

/* What this rank knows about one peer. */
struct shm_peer {
    /* as producer into the peer's segment, under tx_lock */
    cvia_mlock_t  tx_lock;
    struct cvia_ring tx_ring;    /* my ring inside the peer's segment */
    uint64_t         tx_pos;
    int              tx_started; /* FIRST slot of the head message written */
    struct cvia_xfer *txq_head, *txq_tail;
    struct cvia_xfer *rv_send;   /* sends waiting in rendezvous (prov_next) */
    struct cvia_xfer *reads;     /* reads through the ring waiting for data */
    uint8_t         *rv_users;   /* [rv_per_peer] threads copying for a block */
    uint32_t        *rv_free;    /* [rv_per_peer] stack of my free blocks */
    uint32_t         rv_nfree;   /* entries on rv_free */
    uint32_t         rv_top;     /* blocks committed for this destination */
    /* as consumer of my own segment, under rx_lock */
    cvia_mlock_t  rx_lock;
    struct cvia_ring rx_ring;
    uint64_t         rx_pos;
    struct cvia_xfer *rx_cur;    /* message being received */
    struct shm_op    rx_op;      /* its header, for one-sided messages */
    struct cvia_xfer *rv_recv;   /* receives waiting for the sender's chunks */
    _Atomic int      rv_pending; /* entries on rv_send and rv_recv: counted
                                  * as they are linked and unlinked, so a
                                  * poller never misses one */
    /* the peer's segment */
    struct shm_seg_hdr *seg;
    size_t           seg_bytes;
    pid_t            pid;
    int              pidfd;      /* -1 if unavailable */
    uint8_t          can_cma;    /* I may copy into/out of the peer */
    uint8_t          peer_cma;   /* the peer may copy into/out of me */
    _Atomic uint64_t bytes_cma;    /* single-copy bytes by Cross Memory Attach */
    _Atomic uint64_t bytes_near;   /* single-copy bytes by load/store (arena, self) */
    _Atomic uint64_t msgs_rndv;    /* sends to the peer that went by rendezvous */
    _Atomic uint64_t msgs_window;  /* sends below the threshold that went by
                                    * rendezvous, in a window (shm_rndv_window) */
    _Atomic uint64_t msgs_spill;   /* sends at or above the threshold that found no
                                    * block (CVIA_SHM_RNDV_SLOTS or memory
                                    * exhausted) and went through the ring */
    struct cvia_arena_view *view;  /* the peer's arena, opened on first use */
    _Atomic int      view_failed;
    _Atomic int      gone;       /* reported through peer_lost */
    int              remote_idx; /* my index in the peer's tables (its rv
                                  * blocks for me): my rank in a job */
    uint64_t         seg_rand;   /* dynamic: the peer's identity with pid */
    _Atomic uint64_t msgs_arena;   /* sends below the threshold from my arena that
                                    * went by rendezvous (CVIA_SHM_ARENA_THRESHOLD);
                                    * last, so that the fields above keep their
                                    * offsets */
    struct shm_look *look;         /* &ep->look[this peer] */
};

/* The empty poll's look at one peer's ring (shm_progress): the sequence
 * word of the slot it reads next and the value that word holds once the
 * slot is full. Kept by whoever moves rx_pos (shm_rx_next); a peer whose
 * ring is not to be read (not attached, another host, gone, detached)
 * points at the endpoint's look_none, which never holds its want. Read
 * without a lock as a pair of hints: a torn pair is a false "something"
 * (the work path looks again under the lock) or one missed poll, never a
 * lasting miss. */
struct shm_look {
    _Atomic uint64_t *seq;
    uint64_t          want;
};

struct cvia_prov_ep {
    struct cvia_prov_args args;
    struct shm_cfg    cfg;
    uint32_t          nslots;
    uint32_t          slot_size;
    size_t            ring_bytes;
    size_t            seg_bytes;
    uint64_t          cma_off, mr_off, rv_off, ring_off;
    char              name[SHM_NAME_MAX];  /* my segment, "" once unlinked */
    int               seg_fd;              /* my segment's file: commits blocks */
    int               rndv_probed;         /* rndv_threshold came from shm_tune */
    _Atomic int       spill_said;          /* the first spill was logged */
    struct shm_seg_hdr *seg;               /* my segment */
    struct shm_peer  *peers;               /* [size]; seg NULL for other hosts */
    int              *lidx;                /* [size]: ring index, -1 elsewhere */
    int               nlocal;
    _Atomic int       npending;            /* peers with queued sends */
    _Atomic int       rv_total;            /* the peers' rv_pending, summed: the
                                            * empty poll's one load for them */
    struct shm_look  *look;                /* [size]: per peer, the next slot */
    _Atomic uint64_t  look_none;           /* 0: what a look at nothing reads */
    int               membarrier;          /* registered for the global expedited
                                            * membarrier (shm_block) */
    _Atomic int       poll_start;          /* round-robin fairness */
    int               rndv_any;            /* rendezvous possible with someone */
    /* peers [0, nvis) are set up (size in a job; dynamic: grows, published
     * with release after the peer's fields are written) */
    _Atomic int       nvis;
    /* dynamic mode (shm_dyn.c) */
    uint64_t          claim_off;
    uint64_t          seg_rand;            /* my segment's random part */
    uint64_t          nonce[2];            /* private; peers present it */
    uint64_t          host;
    cvia_mlock_t      dyn_lock;            /* claims, new peers */
    _Atomic uint32_t  claim_seen;          /* claim_gen last scanned */
    int               connecting;          /* a connect in flight to ... */
    int32_t           conn_pid;
    uint64_t          conn_rand;
};

static inline int shm_npeers(struct cvia_prov_ep *ep)
{
    return atomic_load_explicit(&ep->nvis, memory_order_acquire);
}

/* @peer's look at its next slot, from rx_ring and rx_pos (rx_lock held,
 * or the peer not yet visible to pollers). */
static inline void shm_look_set(struct shm_peer *pp)
{
    CVIA_HINT_STORE(pp->look->seq, cvia_ring_seq(&pp->rx_ring, pp->rx_pos));
    CVIA_HINT_STORE(pp->look->want, pp->rx_pos + 1);
}

/* @peer's ring is not to be looked at by the empty poll. */
static inline void shm_look_none(struct cvia_prov_ep *ep, struct shm_peer *pp)
{
    CVIA_HINT_STORE(pp->look->seq, &ep->look_none);
    CVIA_HINT_STORE(pp->look->want, 1);
}

/* The slot @s at rx_pos consumed (rx_lock held): back to the producer, the
 * position past it, the empty poll's look at the next one. */
static inline void shm_rx_next(struct shm_peer *pp, void *s)
{
    cvia_ring_release(&pp->rx_ring, s, pp->rx_pos);
    CVIA_HINT_STORE(pp->rx_pos, pp->rx_pos + 1);
    shm_look_set(pp);
}

/* The rendezvous count of @pp and the endpoint's sum move together. */
#define shm_rv_count(ep, pp, v) do {                                          \
        cvia_mcount_add(&(pp)->rv_pending, (v));                              \
        cvia_mcount_add(&(ep)->rv_total, (v));                                \
    } while (0)

/* Describe ring @k of the segment mapped at @seg (its slots at
 * cvia_ring_stride(slot_size), util/ring.h). */
static inline void shm_ring_at(const struct cvia_prov_ep *ep, void *seg, size_t k,
                               struct cvia_ring *r)
{
    cvia_ring_layout(r, (unsigned char *)seg + ep->ring_off + k * ep->ring_bytes,
                     ep->nslots, ep->slot_size);
}

static inline struct shm_claim *shm_claims(struct shm_seg_hdr *h)
{
    return (struct shm_claim *)(void *)((char *)h + h->claim_off);
}

static inline struct shm_mr *shm_mr_table(struct shm_seg_hdr *h)
{
    return (struct shm_mr *)(void *)((char *)h + h->mr_off);
}

static inline struct shm_rndv *shm_rv_block(struct shm_seg_hdr *h, int dest,
                                            uint32_t i)
{
    return (struct shm_rndv *)(void *)((char *)h + h->rv_off) +
           (size_t)dest * h->rv_per_peer + i;
}

static inline uint8_t *shm_cma_table(struct shm_seg_hdr *h)
{
    return (uint8_t *)h + h->cma_off;
}

/* Copy a slot's payload: inline up to 32 bytes (util/copy.h), so that no
 * memcpy call sits on the 8 B message path (sender's slot write,
 * receiver's copy out). */
static inline void shm_copy_payload(void *dst, const void *src, size_t n)
{
    cvia__copy_small(dst, src, n);
}

/* CVIA_SHM_COOP_CHUNK=0: half of @len, rounded up to a page (at least one) */
static inline uint64_t shm_half_chunk(uint64_t len)
{
    uint64_t h = (len / 2 + 4095) & ~(uint64_t)4095;
    return h ? h : 4096;
}

/* shm_seg.c */
void shm_seg_layout(struct cvia_prov_ep *ep);
int  shm_seg_commit_rv(struct cvia_prov_ep *ep, int dest, uint32_t first, uint32_t n);
int  shm_seg_create(struct cvia_prov_ep *ep);
int  shm_seg_map(struct cvia_prov_ep *ep, const char *name, void **addr_p);
int  shm_seg_attach(struct cvia_prov_ep *ep, int peer, const char *name);
void shm_seg_unlink(struct cvia_prov_ep *ep);
void shm_seg_detach_all(struct cvia_prov_ep *ep);
int  shm_seg_cleanup_stale(void);
void shm_probe_cma(struct cvia_prov_ep *ep);

/* shm_dyn.c */
int  shm_dyn_init(struct cvia_prov_ep *ep);
int  shm_dyn_addr(struct cvia_prov_ep *ep, void *buf, size_t cap);
int  shm_dyn_connect(struct cvia_prov_ep *ep, const void *addr, size_t len, int *peer);
int  shm_dyn_poll(struct cvia_prov_ep *ep);   /* claims posted to me */
void shm_dyn_reclaim(struct cvia_prov_ep *ep, int peer);
uint64_t shm_dyn_hash(const uint64_t nonce[2]);

/* shm_msg.c */
int  shm_send(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  shm_inject(struct cvia_prov_ep *ep, int peer, uint16_t ctx, int32_t tag,
                const struct iovec *iov, int n, size_t len);
int  shm_enqueue(struct cvia_prov_ep *ep, int peer, struct cvia_xfer *x);
int  shm_progress(struct cvia_prov_ep *ep);
int  shm_block(struct cvia_prov_ep *ep, double max_s, const _Atomic uint32_t *kicks,
               uint32_t seen);
void shm_kick(struct cvia_prov_ep *ep);
int  shm_check_peers(struct cvia_prov_ep *ep);
void shm_peer_gone(struct cvia_prov_ep *ep, int peer, int err);

/* shm_rndv.c */
int  shm_rndv_use(struct cvia_prov_ep *ep, int peer, const struct cvia_xfer *x);
int  shm_rndv_send(struct cvia_prov_ep *ep, struct cvia_xfer *x);
/* below the threshold: a rendezvous if @x (>= CVIA_SHM_RNDV_WINDOW) finds
 * the pair busy (a window in flight), else the ring */
int  shm_rndv_send_window(struct cvia_prov_ep *ep, struct cvia_xfer *x);
/* below the threshold, from CVIA_SHM_ARENA_THRESHOLD: @x's buffer lies in
 * my shared arena and single copy is possible (then shm_rndv_send_arena) */
int  shm_rndv_arena_use(struct cvia_prov_ep *ep, const struct cvia_xfer *x);
int  shm_rndv_send_arena(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  shm_rndv_start(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  shm_rndv_progress(struct cvia_prov_ep *ep, int peer);
void shm_rndv_fail(struct cvia_prov_ep *ep, int peer, int err);
int  shm_copy(struct cvia_prov_ep *ep, int peer, int pull, void *local,
              uint64_t remote, size_t len);

/* shm_tune.c: the rendezvous threshold measured on this machine (cached
 * per boot under the user's runtime directory); 0 or -errno */
int  shm_tune_threshold(uint32_t nslots, uint32_t slot_size, size_t coop_from,
                        size_t coop_chunk, size_t *threshold, int *cached);
/* the same, and from the same figures @window: the size from which a
 * window's messages are cheaper single-copied by either core than through
 * the ring (*threshold where the figures do not say) */
int  shm_tune_threshold_window(uint32_t nslots, uint32_t slot_size, size_t coop_from,
                               size_t coop_chunk, size_t *threshold, size_t *window,
                               int *cached, int flags);
int  shm_tune_parse(const char *text, size_t *threshold, int *is_auto);
int  shm_piece_parse(const char *text, size_t *piece, int *is_auto);
int  shm_tune_piece(uint32_t slot_size, size_t *piece, int *cached, int flags);
/* @flags of the probes: */
#define SHM_PROBE_AGAIN   1   /* CVIA_SHM_REPROBE: whatever the cache says */
#define SHM_PROBE_NOCHECK 2   /* CVIA_SHM_PROBE_CHECK=n: one measurement, cached as is */
/* A probe's validation (shm_tune.c, issue 16): -EBUSY from a probe means
 * it was rejected (the machine busy meanwhile, or its two measurements
 * disagreed) and the default is in use. */
#define SHM_PROBE_MAX_AGE_S  86400.0   /* an accepted probe is used for a day */
#define SHM_PROBE_RETRY_S    60.0      /* a rejected one: the default for a minute */
#define SHM_PROBE_MAX_STEAL  0.10      /* of the CPUs' time, stolen by the hypervisor */
#define SHM_PROBE_MAX_OTHERS 0.30      /* of the CPUs' time, used by other processes */
struct shm_probe_load {
    int ok;
    unsigned long long total, idle, steal;
    double cpu, wall;
};
void shm_probe_load_begin(struct shm_probe_load *l);
/* 1 (with @why) when the machine was too busy since begin for a figure */
int  shm_probe_load_end(const struct shm_probe_load *l, char *why, size_t cap);
/* A cache file's text whose key matched: 1 use its answer, 0 a rejected
 * probe's (the default meanwhile), -1 measure again (too old, undated,
 * SHM_PROBE_AGAIN in @flags; a rejected one under SHM_PROBE_NOCHECK). shm_cache_stamp: the lines that date a probe and say why it
 * was rejected (@rejected NULL: accepted); their length. */
int  shm_cache_verdict(const char *text, int flags);
int  shm_cache_stamp(char *buf, size_t cap, const char *rejected);
/* After a probe's measurements (@rc): -ETIMEDOUT counts as busy; a
 * rejection (-EBUSY, @why: 96 bytes) is logged and written to the cache
 * @fd (@path) after @key; any other error logged. @what, @dflt: what was
 * probed and what is used instead. Returns the probe's rc as it now is. */
int  shm_probe_reject(int rc, int fd, const char *path, const char *key, char *why,
                      const char *what, const char *dflt);
/* The probes' per-boot cache file NAME (shm_tune.c): opened (created 0600,
 * not followed, refused unless this user's private regular file with one
 * link) and locked, waiting up to @wait_ms for a rank that measures; -1
 * when none can be used. @path gets its name. */
int  shm_cache_open(const char *name, char *path, size_t cap, int wait_ms);
void shm_boot_id(char *buf, size_t cap);
/* A probe's second thread on any CPU but @me (of @ncpu): 0 or -errno. */
int  shm_probe_thread(pthread_t *th, int me, int ncpu, void *(*fn)(void *), void *arg);

/* A message of @total bytes goes a piece per slot (shm_piece.c): it fits
 * one slot (cap payload bytes) and is longer than @piece (0: never). Each
 * piece starts at the slot's second cache line (SHM_SLOT_LINE2), so that
 * both copies move whole lines. */
static inline int shm_piece_on(size_t cap, size_t piece, size_t total)
{
    return piece && total <= cap && total > piece;
}

/* Payload bytes of the next slot of a message of @total bytes with @left
 * still to write: a piece, or as much as a slot takes. */
static inline size_t shm_piece_len(size_t cap, size_t piece, size_t total, size_t left)
{
    size_t n = left < cap ? left : cap;

    if (shm_piece_on(cap, piece, total)) {
        size_t most = piece < cap - (SHM_CACHELINE - SHM_SLOT_HDR) ? piece :
                      cap - (SHM_CACHELINE - SHM_SLOT_HDR);
        if (n > most)
            n = most;
    }
    return n;
}

/* shm_rma.c */
int  shm_mr_export(struct cvia_prov_ep *ep, uint64_t key, const void *addr,
                   size_t len, unsigned access);
int  shm_mr_unexport(struct cvia_prov_ep *ep, uint64_t key);
int  shm_write(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  shm_read(struct cvia_prov_ep *ep, struct cvia_xfer *x);
/* a one-sided message arrived complete, or its header did (rx_lock held) */
struct cvia_xfer *shm_rma_begin(struct cvia_prov_ep *ep, int peer, uint16_t flags,
                                const struct shm_rma_hdr *h, size_t data_len);
void shm_rma_end(struct cvia_prov_ep *ep, int peer, uint16_t flags,
                 struct cvia_xfer *x, int status);
void shm_op_done(struct cvia_prov_ep *ep, struct cvia_xfer *x, int status);

#endif
