/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Core internals: the process-wide context, requests and matching. */
#ifndef COREVIA_CORE_CORE_H
#define COREVIA_CORE_CORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <corevia/corevia.h>
#include <corevia/cvia_errno.h>
#include "prov/prov.h"
#include "util/mlock.h"

#define CVIA_MAX_PROV 8
#define CVIA_KICK_SLOTS 8   /* cvia_input_wait sleepers in poll() woken at once by a kick */
/* without a launcher: peer indices over a life per CVIA_MAX_PEERS */
#define CVIA_DYN_INDEX_MULT 4

#define cvia_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

enum cvia_req_kind {
    CVIA_REQ_SEND = 1,
    CVIA_REQ_RECV,
    CVIA_REQ_UNEXP,     /* a message that arrived before its receive */
    CVIA_REQ_WRITE,
    CVIA_REQ_READ,
};

struct cvia_req {
    struct cvia_xfer x;        /* first member: what the provider sees */
    uint8_t  kind;
    _Atomic uint8_t complete;  /* set last, with release: status is valid */
    uint8_t  direct;           /* UNEXP: its bytes land in the partner's buffer */
    uint8_t  nomem;            /* UNEXP: no memory for the payload */
    int      status;
    int      src_want;         /* RECV: source or CVIA_ANY_SOURCE */
    int      tag_want;         /* RECV: tag or CVIA_ANY_TAG */
    struct cvia_req *next, *prev;   /* posted / unexpected queue */
    struct cvia_req *partner;  /* UNEXP <-> RECV once matched */
};

struct cvia_req_queue {
    struct cvia_req *head, *tail;
};

struct cvia_core_cfg {
    int    log_level;
    char   log_subsys[256];
    double spin_time;
    double yield_time;
    double boot_timeout;
    double liveness;
    int    net;                /* index in cvia__net_names */
    int    thread_check;       /* CVIA_THREAD_CHECK */
    long   max_peers;          /* CVIA_MAX_PEERS */
};

/* CVIA_NET values: the provider for ranks on other hosts. */
extern const char *const cvia__net_names[];

/* A registered region (cvia_mr_reg). */
struct cvia_mr {
    uint64_t key;              /* (generation << 32) | (index + 1) */
    uint64_t addr, len;
    unsigned access;
    uint32_t index;
};

struct cvia_ctx {
    int      initialized;
    int      thread_level;     /* CVIA_THREAD_*, as provided */
    /* Locks, in the order they may nest: provider locks, then lock, then
     * mr_lock or imm_lock. The core never calls a provider with one held. */
    cvia_mlock_t lock;      /* posted, unexp, free_reqs, peer_lost, nlost */
    cvia_mlock_t slow_lock; /* liveness checks (boot socket is not shared) */
    cvia_mlock_t mr_lock;   /* mrs */
    cvia_mlock_t imm_lock;  /* imm queue */
    int      rank, size;
    /* peer indices in use: size in a launcher's job; without one (dynamic)
     * 1 + the peers cvia_connect() or an inbound connection added, up to
     * cap (CVIA_MAX_PEERS), the length of the per-peer arrays */
    _Atomic int npeers;
    int      cap;
    int      dynamic;
    uint64_t jobid;
    struct cvia_boot *boot;
    struct cvia_core_cfg cfg;
    struct {
        const struct cvia_prov_desc *desc;
        struct cvia_prov_ep *ep;
    } prov[CVIA_MAX_PROV];
    int      nprov;
    uint8_t *peer_prov;        /* provider index per peer */
    _Atomic uint8_t *peer_lost; /* once a peer is gone: 1 (CVIA_ENOPEER), 2 (CVIA_EABORT);
                                  written under lock, read without it too */
    int      lost_err;         /* the error the first lost peer was failed with */
    uint8_t *same_host;        /* 1 for ranks on this host */
    int      nremote;          /* ranks elsewhere */
    int      nlost;
    int      aborted;          /* launcher tears the job down */
    struct cvia_req_queue posted;
    struct cvia_req_queue unexp;
    struct cvia_req *free_reqs;
    struct cvia_prov_upcalls up;
    double   next_check;       /* time of the next liveness check */
    _Atomic uint32_t kicks;    /* cvia_imm_kick() count (cvia_imm_block) */
    _Atomic int imm_sleepers;  /* threads in cvia_imm_block() */
    /* cvia_input_wait with every peer remote sleeps in poll(), where no
     * futex is kicked: each such waiter holds a slot (busy) with an
     * eventfd of its own (efd + 1; 0: none yet; made at the slot's first
     * use, closed by the finalize), and a kick writes the eventfd of every
     * slot that is armed. One eventfd per waiter: with one for all, a
     * waiter that woke read back the kick meant for another one still on
     * its way into poll(), which then slept its whole bound */
    struct {
        _Atomic int efd, busy, armed;
    } kick_slot[CVIA_KICK_SLOTS];
    /* the helper that watches the sockets while a waiter with peers of
     * both kinds sleeps on shm's futex (idle_bridge.c; slow_lock) */
    struct cvia_bridge *bridge;
    int      bridge_failed;
    /* registered regions, by index */
    struct cvia_mr **mrs;
    uint32_t mr_cap;
    uint32_t mr_gen;
    /* immediate events not yet taken: a growing ring */
    cvia_imm_event_t *imm;
    size_t   imm_head, imm_len, imm_cap;
};

extern struct cvia_ctx cvia__ctx;

/* req.c */
struct cvia_req *cvia__req_alloc(struct cvia_ctx *c);
void cvia__req_free(struct cvia_ctx *c, struct cvia_req *r);
void cvia__req_pool_fini(struct cvia_ctx *c);
int  cvia__cancel(struct cvia_ctx *c, struct cvia_req *r);
struct cvia_xfer *cvia__core_match(void *core, int src, uint16_t ctx,
                                   int32_t tag, size_t msg_len, unsigned flags,
                                   uint64_t cookie);
void cvia__core_complete(void *core, struct cvia_xfer *x, int status);
void cvia__core_peer_lost(void *core, int peer, int err);
int  cvia__core_peer_new(void *core, struct cvia_prov_ep *ep);
void cvia__core_peer_unused(void *core, int peer);
int  cvia__isend_ctx(struct cvia_ctx *c, const void *buf, size_t len, int dest,
                     int tag, uint16_t ctx, struct cvia_req **req_p);
int  cvia__irecv_ctx(struct cvia_ctx *c, void *buf, size_t cap, int src,
                     int tag, uint16_t ctx, struct cvia_req **req_p);
int  cvia__wait_req(struct cvia_ctx *c, struct cvia_req *r);
/* cvia_send and cvia_recv: a request on the caller's stack, waited for
 * before they return (no pool round; req.c) */
int  cvia__send_blocking(struct cvia_ctx *c, const void *buf, size_t len, int dest,
                         int tag, uint16_t ctx);
int  cvia__recv_blocking(struct cvia_ctx *c, struct cvia_req *r, void *buf, size_t cap,
                         int src, int tag, uint16_t ctx);

/* Valid peer indices: [0, cvia__npeers(c)) */
static inline int cvia__npeers(struct cvia_ctx *c)
{
    return atomic_load_explicit(&c->npeers, memory_order_acquire);
}

/* The error for an operation with a lost @peer: what it was failed with. */
static inline int cvia__peer_err(const struct cvia_ctx *c, int peer)
{
    return c->peer_lost[peer] == 2 ? -CVIA_EABORT : -CVIA_ENOPEER;
}

/* rma.c */
int  cvia__core_mr_check(void *core, uint64_t key, uint64_t addr, size_t len,
                         unsigned access);
void cvia__core_imm(void *core, int src, uint64_t imm, uint64_t key,
                    uint64_t addr, size_t len);
void cvia__rma_fini(struct cvia_ctx *c);

/* context.c */
int  cvia__progress(struct cvia_ctx *c);
/* Has @r completed (its status valid)? Inline: a wait loop asks at every
 * poll. */
static inline int cvia__req_done(const struct cvia_req *r)
{
    return atomic_load_explicit(&r->complete, memory_order_acquire);
}

/* A waiter's back-off state: zero it when a wait starts or progress is made. */
struct cvia_idle {
    unsigned n;     /* idle polls in a row */
    int      spinning;   /* in the spin phase (clock read every 16th poll) */
    double   t0;    /* when the first of them was */
};
void cvia__idle_step(struct cvia_ctx *c, struct cvia_idle *w, int may_block, unsigned s);

/* Back off after an idle poll (context.c, cvia__idle_step). The spin
 * phase reads the clock every 16th poll only, and its other polls are a
 * pause inline here: a ping-pong's wait is a few polls, and a call per
 * poll lengthened the loop that notices the message. */
static inline void cvia__idle(struct cvia_ctx *c, struct cvia_idle *w, int may_block)
{
    unsigned s = ++w->n;

    if (w->spinning && (s & 15) && s != 1) {
        cvia_cpu_relax();
        return;
    }
    cvia__idle_step(c, w, may_block, s);
}

/* The network providers' wait descriptors (wait_fd) into @fds, POLLIN,
 * and, if @who, each one's provider index; at most @cap; their count
 * (idle_bridge.c). */
struct pollfd;
int  cvia__net_fds(struct cvia_ctx *c, struct pollfd *fds, int *who, int cap);
/* idle_bridge.c: sleep in provider @shm's block() until a local peer
 * writes, a network socket turns readable, @max_s passes or *@kicks moves
 * from @seen; -EOPNOTSUPP if no helper thread could be started. */
/* tests only: called in cvia_input_wait between its last look at the kick
 * count and its poll() (context.c) */
extern void (*cvia__input_wait_hook)(void);
int  cvia__bridge_block(struct cvia_ctx *c, int shm, double max_s, const _Atomic uint32_t *kicks,
                        uint32_t seen);
void cvia__bridge_stop(struct cvia_ctx *c);

#endif
