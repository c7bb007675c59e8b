/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* dgram: reliable, ordered, segmented delivery over an unreliable datagram
 * link (paper 002's M-VIA, reliable as its VI was on a lossless switch).
 * The udp and eth providers are this engine over two links (UDP sockets,
 * AF_PACKET frames); the engine owns the protocol, a link only moves
 * datagrams.
 *
 * Wire: every datagram is a 40-byte header and up to one segment of
 * payload. The header carries what every segment needs (sequence number,
 * cumulative and selective acknowledgement, the message's tag and length
 * or the segment's offset) so that a page-sized segment fills a
 * page-sized payload exactly (a 4096-byte segment in a 4136-byte eth MTU,
 * the paper's 4138). One-sided operations add a 32-byte extension to their
 * first segment. A MAC (NH, then SipHash-2-4) keyed by the job's secret
 * (16 random bytes that rank 0 draws and the launcher or PMIx hands to
 * the others) covers header, extension and payload, and is checked
 * before anything of a datagram is used: forged, altered and earlier
 * jobs' datagrams fail it and are dropped, counted (CVIA_DGRAM_AUTH=no: a
 * CRC-32C keyed by the public job key instead, which catches corruption
 * only). The job tag in
 * the header is public; the socket filters drop other jobs' datagrams in
 * the kernel.
 *
 * Reliability: per peer, sequence numbers count segments; the receiver
 * acknowledges cumulatively with a 32-bit SACK map (a standalone ACK adds
 * 256 more bits in the extension), piggybacked on its own traffic or alone
 * when asked (ACKREQ), when a quarter of the window is owed, out of order,
 * when a segment fills a hole, or after a short delay. The sender keeps a
 * window of segments, resends a hole once three segments above it are
 * selectively acknowledged, or a segment sent a quarter round trip after
 * it arrived (RACK), if something sent after its last try arrived (fast
 * retransmit), and the oldest on a timer from the measured round trip
 * (RFC 6298's SRTT/RTTVAR, at least CVIA_DGRAM_RTO_MIN above SRTT) with
 * exponential backoff;
 * a congestion window shrinks to 0.7 when a window of data loses more than
 * an eighth of itself (a burst, as an overflowing queue makes; scattered
 * random loss is no congestion), drops to its floor (a quarter of the
 * window) on a timeout and grows back (slow start, then one segment per
 * window); a decrease is undone when the receiver reports every
 * retransmission of it as a duplicate (one a timeout began: the
 * timeouts' retransmissions).
 * It declares the peer dead when nothing it sent has been acknowledged for
 * CVIA_DGRAM_PEER_TIMEOUT. The receiver drops duplicates and keeps
 * out-of-order segments in a reorder buffer.
 *
 * Zero copy where it pays: a message above CVIA_DGRAM_INJECT is sent
 * straight from the user's buffer (completed when acknowledged); smaller
 * ones are copied into the window slot and completed at once. The
 * receiver places each in-order payload at its offset of the destination
 * (the posted receive, the registered region). Threads: one thread runs
 * the engine at a time (ep->busy, taken with trylock); others only queue
 * sends under ep->qlock. */
#ifndef COREVIA_PROV_DGRAM_H
#define COREVIA_PROV_DGRAM_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "prov/prov.h"
#include "util/mlock.h"
#include "util/param.h"

/* ---- wire ---------------------------------------------------------- */

enum dg_type {
    DG_MSG = 1,   /* tagged message: ctx, tag, total length */
    DG_RMAW,      /* one-sided write: ext key, addr, aux = imm, aux2 = cookie */
    DG_WACK,      /* its answer: ext aux = cookie, aux2 = status */
    DG_RMAR,      /* read request: ext key, addr, aux = length, aux2 = cookie */
    DG_RRESP,     /* its answer: ext aux = cookie, aux2 = status; data follows */
    DG_BYE,       /* clean finalize */
    DG_TYPE_DATA_MAX = DG_BYE,
    DG_ACK = 16,  /* acknowledgement alone (consumes no sequence number) */
    DG_PING,      /* liveness probe: an ACK that asks for an ACK */
    /* launcher-free peers (dgram_dyn.c): outside any window, payload a
     * struct dg_hello */
    DG_HELLO,     /* connect: who I am, my index for you, your cookie */
    DG_CHAL,      /* prove you are at that address: echo this cookie */
    DG_HACK,      /* accepted: my index for you */
    DG_TYPE_MAX = DG_HACK,
};

#define DG_F_FIRST  0x01   /* first segment: lenoff = total length */
#define DG_F_LAST   0x02   /* last segment of its message */
#define DG_F_ACKREQ 0x04   /* acknowledge at once */
#define DG_F_IMM    0x08   /* RMAW: raise immediate data at the target */
#define DG_F_EXT    0x10   /* struct dg_ext precedes the payload */
#define DG_F_CTX    0x20   /* MSG: the core's internal context (else the user's) */
#define DG_F_HCSUM  0x40   /* CVIA_DGRAM_AUTH=no: the CRC covers header and extension only */
#define DG_F_AUTH   0x80   /* sealed with the MAC (CVIA_DGRAM_AUTH=yes) */

/* 40 bytes, so that a page of payload fills the paper's 4138-byte eth MTU
 * with 2 bytes to spare; 24-bit ranks and a 48-bit length leave room for
 * a 64-bit MAC in front. Multi-byte fields are in host order (the ranks
 * and the length little-endian bytes), as every peer of a job shares it. */
struct dg_hdr {
    uint64_t mac;      /* NH + SipHash-2-4 keyed by the job secret over all
                        * that follows it (CVIA_DGRAM_AUTH=no: the CRC-32C
                        * keyed by the job key, zero-extended) */
    uint8_t  type;
    uint8_t  flags;
    uint16_t job;      /* the job tag (public, from the job id): tells
                        * foreign from forged; the socket filters check it */
    uint32_t seq;
    uint32_t ack;      /* every seq below it has arrived */
    uint32_t sack;     /* bit i: seq ack + 1 + i has arrived (DG_ACK with
                        * DG_F_EXT: the extension's 256 bits go on, bit j of
                        * word k: seq ack + 33 + 64 k + j) */
    int32_t  tag;      /* DG_ACK: duplicates received from its destination so
                        * far, modulo 2^31 (its retransmissions that were not
                        * needed: a reported count, so lost ACKs lose nothing) */
    uint8_t  src[3];   /* sender's rank */
    uint8_t  dst[3];   /* receiver's rank (ranks of a host share its MAC) */
    uint8_t  lenoff[6];   /* FIRST: message length, else the segment's offset */
};
_Static_assert(sizeof(struct dg_hdr) == 40, "dgram header is 40 bytes");

#define DG_HDR_JOB_OFF 10   /* offsetof(struct dg_hdr, job), for the socket filters */
#define DG_HDR_DST_OFF 31   /* offsetof(struct dg_hdr, dst) */
#define DG_MAC_SKIP    8    /* the MAC covers the datagram from here */
#define DG_MAX_RANKS   (1 << 24)
#define DG_MAX_LEN     ((UINT64_C(1) << 48) - 1)
#define DG_SACK_BITS   32     /* in every header */
#define DG_SACK_EXT_BITS 256  /* more in a standalone ACK's extension */
#define DG_DUPTHRESH   3      /* SACKed segments above a hole that make it lost */

static inline uint64_t dg_get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;

    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline void dg_put_le(uint8_t *p, int n, uint64_t v)
{
    for (int i = 0; i < n; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline uint64_t dg_lenoff(const struct dg_hdr *h) { return dg_get_le(h->lenoff, 6); }
static inline uint32_t dg_src(const struct dg_hdr *h) { return (uint32_t)dg_get_le(h->src, 3); }
static inline uint32_t dg_dst(const struct dg_hdr *h) { return (uint32_t)dg_get_le(h->dst, 3); }
static inline uint16_t dg_ctx(const struct dg_hdr *h) { return (h->flags & DG_F_CTX) ? 1 : 0; }
static inline void dg_set_lenoff(struct dg_hdr *h, uint64_t v) { dg_put_le(h->lenoff, 6, v); }
static inline void dg_set_src(struct dg_hdr *h, uint32_t v) { dg_put_le(h->src, 3, v); }
static inline void dg_set_dst(struct dg_hdr *h, uint32_t v) { dg_put_le(h->dst, 3, v); }

static inline uint16_t dg_jobtag(uint64_t key)
{
    return (uint16_t)key;
}

struct dg_ext {
    uint64_t key;
    uint64_t addr;
    uint64_t aux;
    uint64_t aux2;
};
_Static_assert(sizeof(struct dg_ext) == 32, "dgram extension is 32 bytes");

/* Why a datagram was refused (dg_parse). */
enum dg_bad {
    DG_OK = 0,
    DG_BAD_SHORT,     /* shorter than a header */
    DG_BAD_FOREIGN,   /* another job's (or no job's): the job tag differs */
    DG_BAD_CSUM,      /* CVIA_DGRAM_AUTH=no: the CRC fails (corrupt) */
    DG_BAD_MAC,       /* our job tag, but the MAC fails (forged, altered, an
                       * earlier job's) or the other CVIA_DGRAM_AUTH setting */
    DG_BAD_FORMAT,    /* checksum right, fields impossible */
};

/* What a datagram is sealed and checked with. */
struct dg_keys {
    uint64_t job;              /* public, from the job id: job tag, CRC seed */
    int      auth;             /* 1: MAC with @secret; 0: CRC-32C with @job */
    unsigned char secret[16];  /* from getrandom, distributed by the launcher */
    uint32_t *nh;              /* [CVIA_NH_KEY_WORDS(DG_NH_MAX)]: the payload
                                * hash's key, derived from @secret */
    void     *nh_mem;          /* its allocation (nh is 32 bytes into it) */
};

/* The MAC: SipHash-2-4 keyed by the secret over 24 bytes, the length and
 * NH of the datagram after the MAC field (header, extension, payload; two
 * iterations: 2^-64 collisions, ~10x faster than SipHash over the bytes):
 * a universal hash then a PRF. Up to DG_NH_MAX bytes after the MAC field. */
#define DG_NH_MAX (65536 + 64)
/* Derive k->nh from k->secret (allocates); free with cvia__dg_keys_free. */
int  cvia__dg_keys_derive(struct dg_keys *k);
void cvia__dg_keys_free(struct dg_keys *k);

struct dg_in;

/* Check a received datagram: header copied to @h, payload (after any
 * extension, copied to @ext) at *payload. Pure: no state, never reads past
 * @len (the fuzzer's entry point). With the MAC, @esn (if not NULL) gives
 * the high halves of its sequence and ack (dg_esn) from the raw header,
 * read for nothing else before the MAC has passed; NULL: 0. */
int cvia__dg_parse(const void *buf, size_t len, const struct dg_keys *k, struct dg_hdr *h,
                   struct dg_ext *ext, const uint8_t **payload, size_t *plen,
                   uint64_t (*esn)(const void *arg, const struct dg_hdr *h), const void *arg);
/* Fill h->mac for a datagram made of @iov: iov[0] the header, then the
 * extension alone if h has DG_F_EXT, then at most one payload; @esn the
 * high halves of its sequence and ack (dg_esn), in the MAC only; with
 * CVIA_DGRAM_AUTH=no, the CRC covers only the first @covered iovecs. */
void cvia__dg_seal(struct dg_hdr *h, const struct iovec *iov, int n, int covered,
                   const struct dg_keys *k, uint64_t esn);
/* The same in two steps, for a batch of datagrams (one SipHash call for
 * all, cvia__siphash24_4w): 1 with @tail the MAC's SipHash input (h->mac
 * is then SipHash of it under k->secret), or 0 with h->mac set (the CRC). */
int  cvia__dg_seal_begin(struct dg_hdr *h, const struct iovec *iov, int n, int covered,
                         const struct dg_keys *k, uint64_t esn, uint64_t tail[4]);
/* For @n received datagrams: in[i].mac_ok = 1 where the MAC matched (as
 * cvia__dg_parse would check it), 0 otherwise (not checked, or failed:
 * cvia__dg_parse decides). @tail, @tag: room for @n. One SipHash call per
 * part of the batch (a batch is cut after a message's first segment).
 * Where a place is given (@place_fn, or in[i].place), NH's pass also
 * copies the payload there (cvia__nh2c); place stays set only where it
 * did. */
typedef uint8_t *dg_place_fn(const void *arg, const struct dg_in *in, int i, int n,
                             const struct dg_hdr *h, uint32_t *gen, int *cut);
int  cvia__dg_mac_batch(const struct dg_keys *k, struct dg_in *in, int n,
                        uint64_t (*esn)(const void *arg, const struct dg_hdr *h), const void *arg,
                        uint64_t (*tail)[4], uint64_t *tag, dg_place_fn *place_fn);
/* @place_fn (with @arg, may be NULL: in[i].place as the caller set it):
 * where datagram i's payload goes, asked once its header passed the first
 * checks, or NULL; *cut = 1: check only up to it (returns how many were). */
dg_place_fn cvia__dg_place;
/* cvia__dg_parse for a datagram whose MAC cvia__dg_mac_batch found good. */
int  cvia__dg_parse_macd(const void *buf, size_t len, const struct dg_keys *k, struct dg_hdr *h,
                         struct dg_ext *ext, const uint8_t **payload, size_t *plen);
uint32_t cvia__crc32c(uint32_t crc, const void *buf, size_t len);
/* The job's public datagram key (never 0): the job tag, the first
 * sequence numbers, the CRC seed when CVIA_DGRAM_AUTH=no. */
uint64_t cvia__dg_job_key(uint64_t jobid);
/* Attach a classic BPF filter to @fd that lets in only datagrams of this
 * job (the header's job tag) for @rank, the header at offset @base of what
 * the socket's filter sees (eth: 0; UDP: 8, past the UDP header); with
 * @not_outgoing, also drops what this host sends (AF_PACKET). 0 or -errno. */
int cvia__dg_attach_filter(int fd, uint32_t base, int not_outgoing, uint64_t jobkey, int rank);
/* A fresh job secret from the kernel's generator. 0 or -errno. */
int cvia__dg_new_secret(unsigned char secret[16]);

/* Launcher-free peers: the payload of HELLO, CHAL and HACK (dgram_dyn.c).
 * A frame to process P is sealed with P's keys, which come from P's
 * address (its nonce): a sender must have been handed it. */
struct dg_hello {
    uint64_t id;          /* the sender's public identity (its job key) */
    uint8_t  net[8];      /* HELLO: the sender's link address */
    int32_t  pid;         /* the sender's, for messages */
    uint32_t idx;         /* HELLO, HACK: the sender's index for the receiver */
    uint32_t your_idx;    /* CHAL, HACK: the receiver's index for the sender */
    uint32_t pad;
    uint64_t echo;        /* CHAL: the cookie; HELLO: it echoed (0: none yet) */
    uint64_t salt;        /* HELLO: fresh, for the key's encryption */
    uint8_t  key[16];     /* HELLO: the sender's MAC secret, encrypted under
                           * the receiver's (SipHash-2-4 in counter mode) */
};
_Static_assert(sizeof(struct dg_hello) == 64, "dgram hello is 64 bytes");

static inline int dg_seq_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static inline int dg_seq_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}

/* Extended sequence numbers (issue 16, as ESP's, RFC 4303): sequence and
 * ack are 64-bit counts of which the header carries the low 32 bits; the
 * high halves are implicit and go into the MAC (cvia__dg_seal's @esn:
 * seq's high half << 32 | ack's). The high half of @s is the one that puts
 * it nearest @ref, whose high half is @ref_hi: a datagram is never more
 * than a window from the counter it is compared with, so both ends agree,
 * while one recorded 2^32 segments earlier gets the wrong high half and
 * fails the MAC. */
static inline uint32_t dg_seq_hi(uint32_t s, uint32_t ref, uint32_t ref_hi)
{
    if (dg_seq_lt(s, ref))
        return s > ref ? ref_hi - 1 : ref_hi;
    return s < ref ? ref_hi + 1 : ref_hi;
}

static inline uint64_t dg_esn(uint32_t seq_hi, uint32_t ack_hi)
{
    return (uint64_t)seq_hi << 32 | ack_hi;
}

/* ---- configuration (CVIA_DGRAM_*) ---------------------------------- */

enum { DG_CUT_PAGE, DG_CUT_MVIA, DG_CUT_FILL };

struct dg_cfg {
    size_t segment;        /* payload per datagram; 0: from the MTU */
    int    cut;            /* DG_CUT_* */
    long   window;         /* segments in flight per peer */
    size_t inject;         /* copy-and-complete up to this size */
    double rto;            /* retransmission timeout before a round trip is measured */
    double rto_min;        /* added to SRTT at least: the RTO's floor */
    double rto_max;
    double ack_delay;
    double peer_timeout;
    char   faults[CVIA_PARAM_STRLEN];
    int    csum_payload;   /* 1: CRC over the payload too (auth off) */
    int    auth;           /* 1: SipHash-2-4 MAC on every datagram */
    int    stats;          /* print counters at finalize */
    size_t rcvbuf;
    long   batch;          /* datagrams per sendmmsg/recvmmsg */
    double rx_gap;         /* no receive call this soon after an empty one */
};

extern const struct cvia_param_table cvia__dgram_param_table;

/* Fault hooks, parsed from CVIA_DGRAM_FAULTS ("drop=0.01,dup=0.01,..."). */
struct dg_faults {
    double drop, dup, reorder, corrupt;
    uint64_t rng;
};
int cvia__dg_faults_parse(const char *text, struct dg_faults *f);

/* ---- the link beneath --------------------------------------------- */

struct dg_ep;

/* One datagram to send: header, optional extension, payload. */
struct dg_out {
    int peer;
    int iovcnt;
    struct iovec iov[3];
};

/* A link's recv may split one received buffer (UDP GRO) into up to this
 * many datagrams: dg_in arrays hold max * DG_IN_PER_RECV entries. */
#define DG_IN_PER_RECV 64

/* One datagram received, in link memory until released. */
struct dg_in {
    const uint8_t *data;
    size_t len;
    uint32_t link_tag;     /* the link's token for its source (eth: ifindex) */
    unsigned char from[32];   /* the link's source address, for the check */
    uint8_t mac_ok;           /* cvia__dg_mac_batch found its MAC good */
    /* Where its payload belongs if it is the next segment of the message
     * being received (cvia__dg_place, before the MAC); cvia__dg_mac_batch
     * copies it there in NH's pass and leaves it set only if it did, else
     * NULL. @place_gen: that message's rx_gen. */
    uint8_t *place;
    uint32_t place_gen;
};

struct dg_link_ops {
    const char *name;
    /* Open the link, write the address peers send to into @addr. */
    int    (*open)(struct dg_ep *ep, char *addr, size_t cap);
    /* Learn @peer's address (as its open wrote it). */
    int    (*attach)(struct dg_ep *ep, int peer, const char *addr);
    /* Bytes one datagram may carry for this engine (header + payload). */
    size_t (*room)(struct dg_ep *ep);
    /* Send; returns how many went out (0 when the link is full) or -errno. */
    int    (*send)(struct dg_ep *ep, struct dg_out *out, int n);
    /* Receive up to @max; returns how many, 0 when none, or -errno. */
    int    (*recv)(struct dg_ep *ep, struct dg_in *in, int max);
    /* Done with what recv returned. */
    void   (*release)(struct dg_ep *ep, struct dg_in *in, int n);
    /* 1 if @in came from where @peer's address says. */
    int    (*from_peer)(struct dg_ep *ep, int peer, const struct dg_in *in);
    /* The descriptor poll() reports input on. */
    int    (*fd)(struct dg_ep *ep);
    /* One line: interface, MTU, mechanism. */
    void   (*describe)(struct dg_ep *ep, char *buf, size_t cap);
    void   (*close)(struct dg_ep *ep);
    /* Launcher-free peers (NULL where the link has none): this endpoint's
     * address in 8 bytes (net[0] the link's kind, net[1] flags), and
     * those 8 bytes back into the text attach() takes (-1: not this
     * link's). */
    void   (*pack)(struct dg_ep *ep, uint8_t net[8]);
    int    (*unpack)(const uint8_t net[8], char *addr, size_t cap);
};

#define DG_NET_UDP  1      /* net[0]: the kind of link */
#define DG_NET_ETH  2
#define DG_NET_AUTH 0x01   /* net[1]: CVIA_DGRAM_AUTH=yes */

/* A launcher-free peer (dgram_dyn.c), by peer index. */
/* FAILED: a connect timed out; the index stays this identity's, so that
 * a retry (or a late HACK) completes it with the index the peer knows */
enum { DG_DYN_NONE = 0, DG_DYN_CONNECTING, DG_DYN_UP, DG_DYN_FAILED };
struct dg_dyn {
    int      state;           /* DG_DYN_*; busy */
    uint64_t id;              /* its identity (job key from its nonce) */
    uint32_t ridx;            /* its index for us: the src of our frames */
    int32_t  pid;
    uint8_t  net[8];
    struct dg_keys tx;        /* frames to it are sealed with these */
    unsigned char enc[16];    /* CONNECTING: encrypts our secret in HELLOs to it */
    double   hello_at, hello_gap;   /* CONNECTING: the last HELLO, and the next's delay */
    uint64_t echo;            /* CONNECTING: the cookie it challenged us with */
    double   probe_since;     /* waiting on it and it fell silent: since then */
};

/* ---- engine state -------------------------------------------------- */

/* A slot of a peer's send window. */
struct dg_slot {
    struct dg_hdr hdr;
    struct dg_ext ext;
    const void *data;           /* payload: user buffer, region or copy */
    size_t   len;
    struct cvia_xfer *done_x;   /* completed when this slot is acknowledged */
    uint64_t inj_end;           /* its copy ends there in the ring (0: none) */
    double   sent_at;           /* 0: not sent yet */
    uint32_t txo;               /* the peer's transmission count when last sent */
    uint16_t tries;
    uint8_t  sacked;
};

/* A provider-owned outgoing message (answers, requests, bye). */
struct dg_op {
    struct cvia_xfer x;   /* buf/len: the payload */
    uint8_t type;
    uint8_t flags;
    struct dg_ext ext;
};
_Static_assert(offsetof(struct dg_op, x) == 0, "cvia__prov_fail_list frees the xfer");

#define DG_XFER_OP   0x4000   /* the xfer is a struct dg_op's */
#define DG_XFER_RMA  0x2000   /* a user's write or read: waits for its answer */

struct dg_peer {
    int      remote;          /* 1: reached through this link */
    int      gone;
    int      bye;
    /* sending */
    struct cvia_xfer *q_head, *q_tail;    /* posted, not yet segmented (qlock;
                                           * q_head through CVIA_HINT_* so
                                           * progress may peek without it) */
    struct cvia_xfer *cur;    /* being segmented (busy) */
    int      cur_first;
    uint32_t snd_una, snd_nxt;
    uint32_t snd_hi;          /* high half of the 64-bit snd_nxt (wraps so far) */
    uint32_t snd_tx;          /* lowest cut segment never sent */
    uint32_t ackreq_at;       /* where the last ACKREQ for the window went */
    struct dg_slot *win;      /* [window] */
    unsigned char *inj;       /* [cvia__dg_inj_size]: byte ring of copied segments */
    uint64_t inj_head, inj_tail;   /* next free byte; oldest byte in use */
    double   last_ack_at;     /* when snd_una last moved (or now, if idle) */
    /* loss recovery and congestion (dgram_tx.c) */
    double   srtt, rttvar;    /* RFC 6298, from segments acknowledged on their first try */
    double   rto;             /* srtt + max(4 rttvar, RTO_MIN); CVIA_DGRAM_RTO before a sample */
    unsigned backoff;         /* timeouts since the last sample: RTO x 2^backoff */
    int      has_rtt;
    uint32_t cwnd, ssthresh;  /* segments */
    uint32_t cwnd_acc;        /* segments acknowledged toward the next +1 */
    uint32_t recover;         /* no further decrease until snd_una passes it */
    int      in_recovery;
    uint32_t loss_end;        /* a round of loss detection ends when snd_una passes it */
    uint32_t loss_n;          /* segments found lost in this round */
    int      loss_round;
    uint32_t txo_next;        /* datagrams of data sent to the peer, first tries and again */
    uint32_t txo_acked;       /* the latest txo known to have arrived */
    double   txo_acked_at;    /* when that one was sent */
    int      has_txo_acked;
    int      rack_hold;       /* a retransmission's arrival alone was news once: held */
    uint32_t sacked_n;        /* slots in [snd_una, snd_nxt) selectively acknowledged */
    uint32_t undo_cwnd, undo_ssthresh;   /* before the last decrease */
    uint32_t undo_retx;       /* its retransmissions not yet reported duplicate */
    int      undo_valid;
    int      undo_rto;        /* a timeout was part of it */
    int      undo_by_rto;     /* a timeout began it (no recovery was under way) */
    uint32_t undo_rto_retx;   /* the timeouts' retransmissions not yet reported duplicate */
    uint32_t undo_flight;     /* a timeout began it: what was in flight then */
    uint32_t undo_fretx;      /* fast retransmissions since (by SACK) */
    uint32_t dups_rcvd;       /* receiving: duplicates from the peer, in every ACK */
    uint32_t dups_seen;       /* sending: the peer's dups_rcvd last seen */
    struct dg_ext ack_ext;    /* a standalone ACK's further SACK bits */
    /* one-sided requests waiting for their answer (busy) */
    struct cvia_xfer *waiting;
    /* receiving */
    uint32_t rcv_nxt;
    uint32_t rcv_hi;          /* high half of the 64-bit rcv_nxt */
    uint32_t ack_owed;        /* data segments since our last ack */
    int      ack_now;
    double   ack_owed_since;
    double   last_heard;
    double   pinged_at;
    double   dup_ack_at;      /* when a duplicate last made us acknowledge */
    struct dg_hdr ack_hdr;    /* a standalone ACK or PING being sent */
    uint32_t ooo_count;
    uint8_t  **ooo;           /* [window] out-of-order datagrams, copied */
    /* the message being received */
    struct dg_hdr rx_first;   /* its first segment's header */
    struct dg_ext rx_ext;
    struct cvia_xfer *rx_x;   /* destination (NULL between messages) */
    struct cvia_xfer rx_sink; /* one-sided target, or nothing */
    uint64_t rx_got;
    int      rx_status;
    int      rx_active;
    uint32_t rx_gen;          /* counts the messages begun */
    /* cvia__dg_place's view within one receive batch (pl_batch): the next
     * sequence and offset if every segment it placed were good */
    uint64_t pl_batch, pl_got;
    uint32_t pl_seq, pl_gen;
    int      pl_ok;
};

struct dg_stats {
    uint64_t tx, rx, retx, acks, dups, ooo, corrupt, foreign, format, faults, stale, other;
    uint64_t forged;               /* failed the MAC: forged, altered, an earlier job's */
    uint64_t rx_calls, tx_calls;   /* link recv calls that returned datagrams; link sends */
    uint64_t fretx, rtos;          /* retx by SACK (fast retransmit); timeouts */
    uint64_t undos;                /* decreases undone: every retransmission was a duplicate */
    uint64_t replays;              /* launcher-free: a HELLO (MAC good) of a known identity
                                    * that is not the live peer's: gone, another secret, an
                                    * index it gave up; a replay of an earlier one, dropped */
    uint64_t waits;                /* receives that waited in the kernel (prov op wait) */
};

struct dg_ep {
    struct cvia_prov_args args;
    struct dg_cfg cfg;
    const struct dg_link_ops *link;
    void    *link_priv;
    struct dg_keys keys;      /* keys.job: the public job key */
    size_t   seg;             /* payload bytes per segment */
    uint32_t win;             /* window, segments */
    struct dg_faults faults;
    int      has_faults;
    struct dg_peer *peers;    /* [size] */
    int     *remote;          /* ranks on other hosts */
    int      nremote;
    cvia_mlock_t qlock;    /* posted-send queues */
    cvia_mlock_t busy;     /* one thread runs the engine */
    unsigned idle;   /* progress calls without an event (busy; also reset
                      * by the liveness check unlocked: CVIA_HINT_*) */
    double   now;             /* this progress call's clock */
    /* one receive call per wake-up (CVIA_DGRAM_RX_GAP), for links whose
     * recv is a system call: they set rx_call at open and rx_drained at
     * every recv (1: that call emptied the socket); cvia__dg_rx skips the
     * link until rx_gap after rx_quiet_from (the empty receive, or the
     * send after it), unless rx_now (a peer died: take what it sent) */
    int      rx_call, rx_drained, rx_now;
    /* rx_wait: the link's recv can block in the kernel (set at open);
     * rx_block: this receive may (dg_wait): until one datagram comes or
     * the link's bound (udp: the socket's SO_RCVTIMEO, one tick) */
    int      rx_wait, rx_block;
    double   rx_quiet_from;
    struct dg_out *out;       /* [batch] */
    struct dg_slot **out_slot;   /* [batch]: the slot each out sends, or NULL (ACK) */
    struct dg_out *fout;      /* [2 * batch]: the batch after fault hooks */
    int      nout;
    size_t   dgram_max;       /* largest datagram: header, extension, segment */
    struct dg_in *in;         /* [batch * DG_IN_PER_RECV] */
    uint64_t (*mac_in)[4];    /* [batch * DG_IN_PER_RECV]: SipHash inputs of a batch */
    uint64_t *mac_tag;        /* [batch * DG_IN_PER_RECV]: their tags */
    uint64_t rx_batch;        /* receive batches so far (cvia__dg_place) */
    int      *mac_at;         /* [batch]: out[] index of each sender's input */
    unsigned char *scratch;   /* [2 * batch * dgram_max]: corrupted copies */
    struct dg_stats st;
    /* launcher-free (args.dynamic): keys.secret and keys.job come from the
     * address's nonce; peers come and go (dgram_dyn.c) */
    struct dg_dyn *dyn;       /* [size], NULL in a launcher's job */
    unsigned char enc[16];    /* decrypts the key in a HELLO to us */
    unsigned char cookie[16]; /* random: the CHAL cookies' key */
    /* a HELLO, CHAL or HACK that passed the MAC (busy) */
    void   (*ctl_in)(struct dg_ep *ep, const struct dg_hdr *h, const uint8_t *payload,
                     size_t plen, const struct dg_in *in);
};

/* Frames to @peer: sealed with its keys (launcher-free) or the job's. */
static inline const struct dg_keys *dg_tx_keys(const struct dg_ep *ep, int peer)
{
    return ep->dyn ? &ep->dyn[peer].tx : &ep->keys;
}

/* The addressing fields of a frame to @peer: the job tag, our rank and
 * its (launcher-free: its tag, our index at its side, and 0). */
static inline void dg_hdr_route(const struct dg_ep *ep, struct dg_hdr *h, int peer)
{
    if (ep->dyn) {
        h->job = dg_jobtag(ep->dyn[peer].tx.job);
        dg_set_src(h, ep->dyn[peer].ridx);
        dg_set_dst(h, 0);
    } else {
        h->job = dg_jobtag(ep->keys.job);
        dg_set_src(h, (uint32_t)ep->args.rank);
        dg_set_dst(h, (uint32_t)peer);
    }
}

/* dgram_tx.c */
int  cvia__dg_send(struct dg_ep *ep, struct cvia_xfer *x);
int  cvia__dg_rma(struct dg_ep *ep, struct cvia_xfer *x, uint8_t type);
void cvia__dg_answer(struct dg_ep *ep, int peer, uint8_t type, uint64_t cookie, int status,
                     const void *buf, size_t len);
int  cvia__dg_tx(struct dg_ep *ep);
void cvia__dg_ack_in(struct dg_ep *ep, int peer, const struct dg_hdr *h, const struct dg_ext *e);
int  cvia__dg_timers(struct dg_ep *ep);
int  cvia__dg_flush(struct dg_ep *ep);
void cvia__dg_queue_ack(struct dg_ep *ep, int peer, uint8_t type);
int  cvia__dg_send_bye(struct dg_ep *ep);
/* The engine's memory: arrays for args.size ranks and cfg.batch
 * datagrams, the remote peers marked from args.same_host, the window
 * rounded to a power of two (alloc); the per-batch scratch once the
 * segment size is known (segment); all of it, unsent answers too (free;
 * not @ep itself). */
int  cvia__dg_ep_alloc(struct dg_ep *ep);
int  cvia__dg_ep_segment(struct dg_ep *ep, size_t seg);
void cvia__dg_ep_free(struct dg_ep *ep);
int  cvia__dg_peer_alloc(struct dg_ep *ep, struct dg_peer *pp);
size_t cvia__dg_inj_size(const struct dg_ep *ep);   /* bytes of a peer's copy ring */

/* dgram_rx.c */
/* Seconds from @now until the next timer of the engine is due (busy held). */
double cvia__dg_next_timer(struct dg_ep *ep, double now);
int  cvia__dg_rx(struct dg_ep *ep);
int  cvia__dg_input(struct dg_ep *ep, const uint8_t *buf, size_t len, const struct dg_in *in);
/* cvia__dg_parse's @esn for a datagram arriving at @arg (a struct dg_ep):
 * its sequence's high half from the sender's peer's rcv_nxt, its ack's
 * from snd_nxt; 0 where there is no such peer. */
uint64_t cvia__dg_esn_in(const void *arg, const struct dg_hdr *h);
void cvia__dg_peer_gone(struct dg_ep *ep, int peer, int err);

/* dgram_dyn.c: launcher-free peers */
int  cvia__dg_dyn_open(struct dg_ep *ep);
int  cvia__dg_dyn_addr(struct dg_ep *ep, void *buf, size_t cap);
int  cvia__dg_dyn_connect(struct dg_ep *ep, const void *addr, size_t len, int *peer);
void cvia__dg_dyn_probe(struct dg_ep *ep);
void cvia__dg_dyn_free(struct dg_ep *ep);

/* dgram_prov.c: the provider ops over a link */
int  cvia__dg_open(const struct cvia_prov_args *args, const struct dg_link_ops *link,
                   struct cvia_prov_ep **ep_p);
double cvia__dg_now(void);

#endif
