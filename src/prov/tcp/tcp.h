/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* tcp provider: plain and robust, the baseline and the fallback between
 * hosts. One connection per pair of ranks (the higher rank connects, the
 * lower accepts; a hello with the job key comes first, so connections of
 * other jobs are refused). Every frame is a 48-byte header and its payload.
 * A message's payload is read straight from the socket into the receive
 * buffer; one-sided writes straight into the registered region, after the
 * target checked the access against its own registrations. Writes and
 * reads are answered (WACK / RRESP), so an initiator learns of a refusal
 * on its request. Single-threaded inside: one lock per endpoint, held only
 * for list work, never across a system call that can block. */
#ifndef COREVIA_PROV_TCP_H
#define COREVIA_PROV_TCP_H

#include <stdint.h>
#include <sys/types.h>

#include "prov/prov.h"
#include "util/mlock.h"

#define TCP_MAGIC 0x3170637461697663ull   /* "cviatcp1" */

enum tcp_type {
    TCP_MSG = 1,     /* tagged message: ctx, tag, len */
    TCP_RMAW,        /* one-sided write: key, addr, len, aux = imm, aux2 = cookie */
    TCP_WACK,        /* its answer: aux = cookie, aux2 = status */
    TCP_RMAR,        /* read request: key, addr, aux = length, aux2 = cookie */
    TCP_RRESP,       /* its answer: aux = cookie, aux2 = status, len bytes follow */
    TCP_BYE,         /* clean finalize: an end of stream after it is not a death */
};

#define TCP_F_IMM 0x1

struct tcp_hdr {
    uint8_t  type;
    uint8_t  flags;
    uint16_t ctx;
    int32_t  tag;
    uint64_t len;    /* payload bytes that follow */
    uint64_t key;
    uint64_t addr;
    uint64_t aux;
    uint64_t aux2;
};
_Static_assert(sizeof(struct tcp_hdr) == 48, "tcp header is 48 bytes");

struct tcp_hello {
    uint64_t magic;
    uint64_t jobid;
    int32_t  rank;
    int32_t  reserved;
};

/* provider-private xfer flag */
#define TCP_XFER_OP 0x4000   /* the xfer is a struct tcp_op's wire view */

/* A provider-owned frame (one-sided traffic and answers). */
struct tcp_op {
    struct cvia_xfer x;      /* buf/len: the payload */
    struct tcp_hdr hdr;
};
_Static_assert(offsetof(struct tcp_op, x) == 0, "cvia__prov_fail_list frees the xfer");

struct tcp_cfg {
    char   ifname[256];
    double connect_timeout;
    long   sndbuf;
};

struct tcp_peer {
    int      fd;             /* -1: none (same host, or gone) */
    int      bye;            /* it finalized cleanly */
    int      gone;
    /* sending, under ep->lock */
    struct cvia_xfer *txq_head, *txq_tail;
    struct tcp_hdr tx_hdr;   /* header of the head frame */
    size_t   tx_hdr_done;    /* header bytes written */
    /* receiving (progress runs one thread at a time: ep->rx_busy) */
    struct tcp_hdr rx_hdr;
    size_t   rx_hdr_done;
    struct cvia_xfer *rx_x;  /* where the payload goes (NULL: discard) */
    size_t   rx_done;        /* payload bytes read */
    int      rx_status;      /* for the current frame's completion */
    struct cvia_xfer rx_sink; /* a one-sided payload's target, or nothing */
    /* one-sided requests waiting for their answer, under ep->lock */
    struct cvia_xfer *waiting;
};

struct cvia_prov_ep {
    struct cvia_prov_args args;
    struct tcp_cfg cfg;
    int      listen_fd;
    int      epfd;           /* every connection, for a waiter's poll (wait_fd); -1: none */
    struct tcp_peer *peers;  /* [size] */
    int      nremote;
    cvia_mlock_t lock;    /* tx queues, waiting lists */
    cvia_mlock_t rx_busy; /* one thread polls and reads at a time */
    unsigned idle;           /* progress calls that found nothing */
};

/* tcp_msg.c */
int  tcp_send(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  tcp_write(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  tcp_read(struct cvia_prov_ep *ep, struct cvia_xfer *x);
int  tcp_progress(struct cvia_prov_ep *ep);
void tcp_peer_gone(struct cvia_prov_ep *ep, int peer, int err);
int  tcp_send_bye(struct cvia_prov_ep *ep);

#endif
