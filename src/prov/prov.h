/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The contract between the core and a transport (provider).
 *
 * The core owns tag matching and requests; a provider moves the bytes of
 * messages, in order per (sender, receiver) pair. A provider never includes
 * core headers: it reaches the core only through the upcalls it is given at
 * open time (layering: util <- boot <- prov <- core).
 *
 * Life of a job, as the core drives it:
 *   open()      allocate resources, publish addresses with cvia__boot_put()
 *   -- boot fence --
 *   connect()   read peers' addresses, attach to them
 *   -- boot fence --
 *   ready()     every peer is attached (shm: unlink the segment names)
 *   ... send() / progress() ...
 *   close()
 */
#ifndef COREVIA_PROV_PROV_H
#define COREVIA_PROV_PROV_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>

struct cvia_boot;
struct cvia_param_table;
struct cvia_prov_ep;   /* each provider defines it, embedding nothing */

/* The part of a request a provider sees. Receives: the provider writes
 * message byte i at buf + i for i < len and drops the bytes beyond len
 * (truncation); done counts message bytes consumed, kept or dropped. The
 * core may change buf/len of a receive between two progress calls (it
 * redirects an unexpected message into a receive posted later), so a
 * provider re-reads them for every chunk. */
struct cvia_xfer {
    void      *buf;
    size_t     len;       /* send: message length; receive: capacity */
    size_t     msg_len;   /* receive: length the sender announced */
    size_t     done;      /* bytes moved so far */
    int        peer;      /* send: destination; receive: source */
    int32_t    tag;
    uint16_t   ctx;       /* CVIA_CTX_USER or CVIA_CTX_INTERNAL */
    uint16_t   flags;     /* CVIA_XFER_* */
    struct cvia_xfer *prov_next;   /* provider's queue link while it owns it */
    uint64_t   prov_cookie;        /* provider's, e.g. a rendezvous handle */
    /* one-sided operations: the remote side */
    uint64_t   rma_addr;  /* target address in the target's address space */
    uint64_t   rma_key;
    uint64_t   rma_imm;
};

/* xfer flags */
#define CVIA_XFER_UNEXP  0x1   /* core: an unexpected message (set by match) */
#define CVIA_XFER_RNDV   0x2   /* provider: payload not carried yet; the core
                                * calls rndv_start() once it has a buffer */
#define CVIA_XFER_IMM    0x4   /* write: raise an immediate event at the target */

/* match() flags */
#define CVIA_MATCH_RNDV  0x1   /* the message's bytes will be fetched later:
                                * an unexpected one needs no buffer */

#define CVIA_CTX_USER     0
#define CVIA_CTX_INTERNAL 1

struct cvia_prov_upcalls {
    void *core;
    /* A message from @src begins: return where to put it (a posted receive
     * or a new unexpected entry, flagged CVIA_XFER_UNEXP). The returned
     * xfer has msg_len set and done 0. With CVIA_MATCH_RNDV a posted
     * receive comes back flagged CVIA_XFER_RNDV with @cookie in prov_cookie
     * (the provider starts the transfer); an unexpected entry is queued with
     * the same and NULL is returned: another thread may claim it at once
     * (the core calls rndv_start then), so the provider must not touch it.
     * Without CVIA_MATCH_RNDV, never NULL. */
    struct cvia_xfer *(*match)(void *core, int src, uint16_t ctx, int32_t tag,
                               size_t msg_len, unsigned flags, uint64_t cookie);
    /* @x is finished: a send's buffer is free again, a receive's bytes are
     * all in (status 0, or negative). */
    void (*complete)(void *core, struct cvia_xfer *x, int status);
    /* A whole message from @src, @len bytes at @buf (the provider's own
     * memory, a ring slot), before match: 1 when the core's visitor took it
     * (matched and copied out by the layer above, in this call: the
     * provider releases the memory at once, no match, no complete), 0 to go
     * on with match. A provider that delivers whole messages from its own
     * memory may call it; the others never need to. Only once @visiting
     * is set (the first cvia_inbox_progress, for good): a program that
     * never visits pays one load per message, not a call (the call in
     * shm's drain cost corevia's own 8 B stream a third of its rate). */
    int  (*visit)(void *core, int src, uint16_t ctx, int32_t tag, const void *buf,
                  size_t len);
    _Atomic int visiting;
    /* @peer is gone (its remaining data already delivered): fail whatever
     * still involves it. */
    void (*peer_lost)(void *core, int peer, int err);
    /* A peer wants to access [addr, addr+len) of a region of ours registered
     * under @key with @access (CVIA_MR_REMOTE_*): 0 if allowed. */
    int  (*mr_check)(void *core, uint64_t key, uint64_t addr, size_t len,
                     unsigned access);
    /* A peer's write with immediate data has landed. */
    void (*imm)(void *core, int src, uint64_t imm, uint64_t key, uint64_t addr,
                size_t len);
    /* Dynamic mode: a new peer reached through @ep (connected by us or by
     * it): reserve the next peer index and route it to @ep. The index is
     * valid for the core at once; the provider makes the peer's own state
     * visible to its progress before any message of it can arrive.
     * Returns the index, or -ENOSPC when CVIA_MAX_PEERS is reached. */
    int  (*peer_new)(void *core, struct cvia_prov_ep *ep);
    /* An index from peer_new that the provider gave up before anyone
     * learned it (a connection that lost a race): operations naming it
     * fail with -CVIA_ENOPEER; no request is failed, nothing counts it. */
    void (*peer_unused)(void *core, int peer);
};

struct cvia_prov_args {
    struct cvia_boot *boot;
    int    rank;
    int    size;
    uint64_t jobid;
    const struct cvia_prov_upcalls *up;
    /* [size]: 1 for the ranks on this host (same boot and network
     * namespace), this rank included */
    const uint8_t *same_host;
    /* no launcher: rank 0, size = the peer indices the table has room for
     * over the process's life; peers come and go through dyn_connect /
     * inbound connections, same_host is 1 for index 0 only */
    int    dynamic;
    int    rings;             /* dynamic: peers at once (CVIA_MAX_PEERS, self included) */
    double connect_timeout;   /* dyn_connect's longest wait for the peer */
    /* dynamic: this process's 128-bit secret from getrandom, drawn by the
     * core, in its address (struct cvia_dyn_addr): only a process handed
     * the address knows it */
    uint64_t nonce[2];
};

/* Dynamic mode: a process's address (cvia_addr), the host provider's part
 * then the network provider's, each written by its dyn_addr; the core
 * concatenates them. 40 bytes without a network provider, 48 with. */
struct cvia_dyn_addr {
    uint32_t magic;           /* the host provider's (shm: "cvd1") */
    int32_t  pid;
    uint64_t host;            /* hash of boot id and network namespace */
    uint64_t seg_rand;        /* the host provider's segment */
    uint64_t nonce[2];        /* cvia_prov_args.nonce */
    uint8_t  net[8];          /* the network provider's endpoint (dgram.h) */
};
#define CVIA_DYN_ADDR_HOST 40   /* bytes of the host provider's part */
_Static_assert(sizeof(struct cvia_dyn_addr) == 48, "an address is CVIA_ADDR_MAX bytes");

struct cvia_prov_ep;   /* each provider defines it, embedding nothing */

struct cvia_prov_ops {
    size_t size;   /* sizeof(struct cvia_prov_ops) when built */
    int  (*open)(const struct cvia_prov_args *args, struct cvia_prov_ep **ep_p);
    int  (*connect)(struct cvia_prov_ep *ep);
    int  (*ready)(struct cvia_prov_ep *ep);
    /* @clean: every rank finalized together; else tear down fast. */
    int  (*close)(struct cvia_prov_ep *ep, int clean);
    /* 1 if this endpoint reaches @peer, else 0. */
    int  (*reachable)(struct cvia_prov_ep *ep, int peer);
    /* Start sending @x; completion comes through up->complete (possibly
     * before send returns). 0 or a negative error (then no completion). */
    int  (*send)(struct cvia_prov_ep *ep, struct cvia_xfer *x);
    /* Move what can be moved without blocking; returns events (>= 0). */
    int  (*progress)(struct cvia_prov_ep *ep);
    /* Slow path, called by an idle waiter now and then: detect dead peers
     * and report them through up->peer_lost. */
    int  (*check_peers)(struct cvia_prov_ep *ep);
    /* The launcher says @peer is gone: deliver what it already sent, then
     * report it with up->peer_lost. */
    void (*peer_gone)(struct cvia_prov_ep *ep, int peer, int err);
    /* One line of state for cvia-info ("ready: 64 slots x 16k per pair"). */
    void (*describe)(char *buf, size_t cap);
    /* Remove resources left behind by dead processes (cvia-info --cleanup).
     * Returns how many were removed. */
    int  (*cleanup)(void);
    /* The core matched an unexpected CVIA_XFER_RNDV message to a receive:
     * @x->buf / @x->len now name the receive buffer. Fetch the bytes and
     * complete @x. Called without core locks held. */
    int  (*rndv_start)(struct cvia_prov_ep *ep, struct cvia_xfer *x);
    /* Register / deregister a region for remote access (so the provider can
     * publish it where peers check it). */
    int  (*mr_reg)(struct cvia_prov_ep *ep, uint64_t key, const void *addr,
                   size_t len, unsigned access);
    int  (*mr_dereg)(struct cvia_prov_ep *ep, uint64_t key);
    /* One-sided: x->buf/len local, x->peer target, x->rma_addr/key remote,
     * CVIA_XFER_IMM with x->rma_imm. Completion through up->complete once
     * the local buffer may be reused. */
    int  (*write)(struct cvia_prov_ep *ep, struct cvia_xfer *x);
    int  (*read)(struct cvia_prov_ep *ep, struct cvia_xfer *x);
    /* One line on how this endpoint reaches @peer (mechanism, thresholds). */
    void (*peer_info)(struct cvia_prov_ep *ep, int peer, char *buf, size_t cap);
    /* A descriptor that polls readable when input may be waiting, for a
     * waiter that blocks; -1 (or a NULL slot) if there is none. */
    int  (*wait_fd)(struct cvia_prov_ep *ep);
    /* Sleep until input may be waiting for @ep, @max_s seconds have
     * passed, or (@kicks not NULL) *@kicks differs from @seen: 1 if it
     * slept, 0 if there was something to do at once. NULL where the
     * provider cannot (the core then naps). */
    int  (*block)(struct cvia_prov_ep *ep, double max_s, const _Atomic uint32_t *kicks,
                  uint32_t seen);
    /* Wake a thread of this rank asleep in block() (after the caller
     * changed the kicks word it passed): async-signal-safe. */
    void (*kick)(struct cvia_prov_ep *ep);
    /* A waiter is about to sleep on wait_fd (issue 16): how many seconds
     * until the provider's next timer is due (a retransmission, a delayed
     * ACK, a silent peer's probe), so that the sleep ends in time for
     * progress to run it; a large number when only input can bring work.
     * Also makes the next progress look at the link. NULL: 1 ms. */
    double (*idle)(struct cvia_prov_ep *ep);
    /* The core's waiter, its core found shared and every peer on another
     * host, would yield: instead receive, blocking in the kernel until
     * input comes or the next scheduler tick at most, and progress what
     * came (one system call where the yield and a receive made two).
     * Returns the events progressed, or -EAGAIN where it cannot wait now
     * (another thread runs the engine, something is due at once, the link
     * cannot block): the core yields then. NULL: always -EAGAIN. */
    int  (*wait)(struct cvia_prov_ep *ep);
    /* Dynamic mode (args.dynamic): this endpoint's address, what a peer
     * gives dyn_connect; returns its length or a negative error. */
    int  (*dyn_addr)(struct cvia_prov_ep *ep, void *buf, size_t cap);
    /* Reach the process whose address (struct cvia_dyn_addr, @len bytes)
     * is @addr: its peer index in *@peer (the same index if it is already
     * a peer). -CVIA_ENOPROV if @addr is not for this provider (another
     * host; no network part), other negative errors. */
    int  (*dyn_connect)(struct cvia_prov_ep *ep, const void *addr, size_t len, int *peer);
    /* cvia_inject: put a message of @n pieces (@len bytes in all) to @peer
     * on its way now, without an xfer and without a completion, if that
     * can be done at once and in order with @peer's earlier messages:
     * 0, -EAGAIN (nothing sent: the core's caller uses an xfer), or
     * another negative error. NULL: always -EAGAIN. */
    int  (*inject)(struct cvia_prov_ep *ep, int peer, uint16_t ctx, int32_t tag,
                   const struct iovec *iov, int n, size_t len);
};

/* What a provider reaches: the ranks on this host, or those elsewhere. */
enum cvia_prov_scope {
    CVIA_PROV_LOCAL = 1,   /* shm: same host, always opened */
    CVIA_PROV_NET,         /* tcp, udp, eth: other hosts, the one CVIA_NET names */
};

struct cvia_prov_desc {
    const char *name;
    const char *desc;
    int         scope;      /* enum cvia_prov_scope */
    const struct cvia_prov_ops *ops;
    const struct cvia_param_table *params;
};

/* Every provider built in, NULL-terminated (src/core/prov_list.c). */
extern const struct cvia_prov_desc *const cvia__prov_list[];

/* A peer is gone: fail every xfer of the prov_next list @x with @err;
 * the provider's own (flag @own set, the xfer the first member of a
 * malloc'd block) are freed instead. */
static inline void cvia__prov_fail_list(const struct cvia_prov_upcalls *up, struct cvia_xfer *x,
                                        int err, uint16_t own)
{
    while (x) {
        struct cvia_xfer *next = x->prov_next;
        x->prov_next = NULL;
        if (x->flags & own)
            free(x);
        else
            up->complete(up->core, x, err);
        x = next;
    }
}

/* Shared stubs for slots a provider does not support. */
int  cvia__prov_no_op(struct cvia_prov_ep *ep);
int  cvia__prov_no_cleanup(void);

#endif
