/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* libFuzzer harness of the dgram engine (issue 7): whatever arrives, the
 * header parser and the receive path must neither crash, nor read or
 * write out of bounds, nor break the engine's invariants; every request
 * must still complete exactly once when its peer goes.
 *
 * Each input feeds cvia__dg_parse the raw bytes, then drives a fresh
 * endpoint (rank 0 of 3; ranks 1 and 2 remote) through the real engine
 * (dgram_wire.c, dgram_tx.c, dgram_rx.c, compiled with the fuzzer's
 * instrumentation) with stub upcalls that give receive buffers, a
 * registered region and completion checks, and a stub link that reads
 * every byte sent. Input layout:
 *   byte 0       configuration: window, segment size, batch, fault hooks
 *   then records [ctl][len lo][len hi][len bytes]; ctl says what to do
 *                with the bytes (see FZ_*): make them pass the job tag and
 *                the checksum, aim them at a peer, put their sequence and
 *                acknowledgement in the window, point their one-sided
 *                fields at the region or a waiting request; or post a
 *                send, a write, a read; or let the clock run. The length's
 *                top bits (FZ_Q_*): queue the datagram into the link's
 *                receive batch instead of feeding it alone, and forge it
 *                (sealed, then its payload altered or cut: its header
 *                passes the first checks, its MAC fails).
 * A batch goes through cvia__dg_rx as a link's receive call would hand it
 * over: the MACs of the batch at once and the receiver's copy in NH's pass
 * (cvia__dg_place, cvia__nh2c) into the receive under way. With the MAC
 * on, every sealed payload byte has its top bit clear and every forged one
 * has it set, and DESIGN.md's invariant ("Authentication") is checked: a
 * receive's filled part (below rx_got) and a completed receive hold no
 * forged byte; a forged datagram may write only past rx_got.
 * The clock is virtual (cvia__dg_now is defined here), so every input
 * replays the same way.
 *
 * FUZZ_DGRAM_SEEDS=DIR: write a seed corpus of well-formed inputs (a
 * message in segments, a write with immediate data, a read, answers,
 * acknowledgements with holes, duplicates, a goodbye, past regressions)
 * into DIR at start. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <corevia/corevia.h>
#include "prov/dgram/dgram.h"
#include "util/log.h"

#define NRANKS      3
#define REGION_LEN  (64u << 10)
#define REGION_KEY  0x5eed0000c0ffeeull
#define NUSER       12
#define UBUF        (48u << 10)
#define RX_CAP_MAX  (96u << 10)
#define JOBID       0x0123456789abcdefull

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "fuzz_dgram: %s:%d: ", \
        __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } } while (0)

/* ---- the virtual clock -------------------------------------------------- */

static double fz_clock;

double cvia__dg_now(void)
{
    return fz_clock;
}

/* ---- stub core: receive buffers, region, completions -------------------- */

struct fz_rx {                  /* a receive the engine asked for */
    struct cvia_xfer x;
    struct fz_rx *next;
    unsigned char buf[];
};

static struct fz_rx *rx_live;   /* matched, not completed */
static int fz_auth;             /* the MAC is on: forged bytes are marked (top bit) */
static unsigned long n_placed, n_placed_forged;   /* FUZZ_DGRAM_STATS */
static unsigned char region[REGION_LEN];
static struct cvia_xfer user[NUSER];    /* sends, writes, reads of this rank */
static unsigned char ubuf[NUSER][UBUF];
static int user_posted[NUSER], user_done[NUSER];
static unsigned long n_lost, n_imm;

static struct cvia_xfer *fz_match(void *core, int src, uint16_t ctx, int32_t tag, size_t msg_len,
                                  unsigned flags, uint64_t cookie)
{
    /* the capacity: all of it, or a truncating part, within bounds */
    size_t cap = msg_len % 3 ? msg_len : msg_len / 2;
    struct fz_rx *r;

    (void)core, (void)flags, (void)cookie;
    CHECK(src > 0 && src < NRANKS, "match from rank %d", src);
    if (cap > RX_CAP_MAX)
        cap = RX_CAP_MAX;
    r = calloc(1, sizeof(*r) + cap);
    CHECK(r, "out of memory");
    r->x.buf = r->buf;
    r->x.len = cap;
    r->x.peer = src;
    r->x.tag = tag;
    r->x.ctx = ctx;
    r->x.flags = CVIA_XFER_UNEXP;
    r->x.msg_len = msg_len;   /* what the core's match promises */
    r->next = rx_live;
    rx_live = r;
    return &r->x;
}

static void fz_complete(void *core, struct cvia_xfer *x, int status)
{
    (void)core;
    for (struct fz_rx **l = &rx_live; *l; l = &(*l)->next)
        if (&(*l)->x == x) {
            struct fz_rx *r = *l;
            CHECK(status || x->msg_len <= x->len, "a truncated receive completed without error");
            CHECK(x->done <= x->msg_len, "receive done %zu of %zu", x->done, x->msg_len);
            if (fz_auth && !status)   /* nothing forged is ever delivered */
                for (size_t k = 0; k < x->msg_len && k < x->len; k++)
                    CHECK(!(r->buf[k] & 0x80), "a forged byte delivered at %zu of %zu", k,
                          x->msg_len);
            *l = r->next;
            free(r);   /* the engine must not touch it again */
            return;
        }
    for (int i = 0; i < NUSER; i++)
        if (x == &user[i]) {
            CHECK(user_posted[i], "completion of request %d that was never posted", i);
            CHECK(!user_done[i], "request %d completed twice", i);
            user_done[i] = 1;
            return;
        }
    CHECK(0, "completion of an unknown request %p", (void *)x);
}

static void fz_peer_lost(void *core, int peer, int err)
{
    (void)core, (void)err;
    CHECK(peer > 0 && peer < NRANKS, "rank %d lost", peer);
    n_lost++;
}

static int inside(uint64_t addr, uint64_t len)
{
    uint64_t base = (uint64_t)(uintptr_t)region;
    return addr >= base && len <= REGION_LEN && addr - base <= REGION_LEN - len;
}

static int fz_mr_check(void *core, uint64_t key, uint64_t addr, size_t len, unsigned access)
{
    (void)core, (void)access;
    return key == REGION_KEY && inside(addr, len) ? 0 : -EACCES;
}

static void fz_imm(void *core, int src, uint64_t imm, uint64_t key, uint64_t addr, size_t len)
{
    (void)core, (void)imm;
    CHECK(src > 0 && src < NRANKS && key == REGION_KEY && inside(addr, len),
          "immediate event for a write that was refused");
    n_imm++;
}

static const struct cvia_prov_upcalls fz_up = {
    .core = NULL, .match = fz_match, .complete = fz_complete, .peer_lost = fz_peer_lost,
    .mr_check = fz_mr_check, .imm = fz_imm,
};

/* ---- stub link ------------------------------------------------------------ */

static int link_cap = 1 << 30;   /* datagrams one send takes */
static unsigned char link_sink[65536];

static int fz_send(struct dg_ep *ep, struct dg_out *out, int n)
{
    int take = n < link_cap ? n : link_cap;

    for (int i = 0; i < take; i++) {
        size_t total = 0;
        CHECK(out[i].peer > 0 && out[i].peer < NRANKS && out[i].iovcnt >= 1 && out[i].iovcnt <= 3,
              "datagram to rank %d with %d pieces", out[i].peer, out[i].iovcnt);
        for (int k = 0; k < out[i].iovcnt; k++) {
            size_t len = out[i].iov[k].iov_len;
            CHECK(total + len <= sizeof(link_sink), "a datagram of over %zu bytes", total + len);
            memcpy(link_sink + total, out[i].iov[k].iov_base, len);   /* every byte readable */
            total += len;
        }
        CHECK(total >= sizeof(struct dg_hdr) && total <= ep->dgram_max,
              "a %zu-byte datagram (largest %zu)", total, ep->dgram_max);
    }
    return take;
}

/* The receive batch: datagrams queued by the input, handed over by recv. */
#define FZ_Q_MAX 64
#define FZ_Q_ROOM (16384 + 64)
static uint8_t q_buf[FZ_Q_MAX][FZ_Q_ROOM] __attribute__((aligned(64)));
static size_t q_len[FZ_Q_MAX];
static int q_n, q_at;

static int fz_recv(struct dg_ep *ep, struct dg_in *in, int max)
{
    int k = 0;

    (void)ep;
    for (; q_at < q_n && k < max; k++, q_at++) {
        memset(&in[k], 0, sizeof(in[k]));
        in[k].data = q_buf[q_at] + 56;   /* as udp: 8 bytes before a line */
        in[k].len = q_len[q_at];
    }
    return k;
}

static void fz_release(struct dg_ep *ep, struct dg_in *in, int n)
{
    (void)ep;
    for (int i = 0; i < n; i++)
        if (in[i].place) {
            n_placed++;
            n_placed_forged += !in[i].mac_ok;
        }
}

static int fz_from_peer(struct dg_ep *ep, int peer, const struct dg_in *in)
{
    (void)ep, (void)peer, (void)in;
    return 1;
}

static int fz_fd(struct dg_ep *ep)
{
    (void)ep;
    return -1;
}

static void fz_describe(struct dg_ep *ep, char *buf, size_t cap)
{
    (void)ep;
    snprintf(buf, cap, "fuzz");
}

static void fz_close(struct dg_ep *ep)
{
    (void)ep;
}

static const struct dg_link_ops fz_link = {
    .name = "fuzz", .send = fz_send, .recv = fz_recv, .release = fz_release,
    .from_peer = fz_from_peer, .fd = fz_fd, .describe = fz_describe, .close = fz_close,
};

/* ---- endpoint --------------------------------------------------------------- */

static const uint8_t same_host[NRANKS] = { 1, 0, 0 };

/* The payload hash's key, derived once from the fixed secret. */
static uint32_t *fz_nh_key(void)
{
    static uint32_t *nh;

    if (!nh) {
        struct dg_keys k = { .auth = 1 };
        for (int i = 0; i < 16; i++)
            k.secret[i] = (unsigned char)(0x51 * i + 3);
        CHECK(!cvia__dg_keys_derive(&k), "out of memory");
        nh = k.nh;
    }
    return nh;
}

static void ep_setup(struct dg_ep *ep, uint8_t conf)
{
    static const size_t segs[4] = { 200, 1432, 4096, 8192 };

    memset(ep, 0, sizeof(*ep));
    ep->args.rank = 0;
    ep->args.size = NRANKS;
    ep->args.jobid = JOBID;
    ep->args.up = &fz_up;
    ep->args.same_host = same_host;
    ep->link = &fz_link;
    ep->keys.job = cvia__dg_job_key(JOBID);
    ep->keys.auth = ep->cfg.auth = !((conf >> 5) & 1);
    fz_auth = ep->keys.auth;
    for (int i = 0; i < 16; i++)
        ep->keys.secret[i] = (unsigned char)(0x51 * i + 3);
    ep->keys.nh = fz_nh_key();
    ep->cfg.window = 8 << (conf & 3);           /* 8 .. 64 */
    ep->cfg.cut = (conf >> 4) & 1 ? DG_CUT_MVIA : DG_CUT_PAGE;   /* at page boundaries, or not */
    ep->cfg.inject = 2048;
    ep->cfg.rto = 0.001;
    ep->cfg.rto_max = 0.008;
    ep->cfg.ack_delay = 0.0005;
    ep->cfg.peer_timeout = 0.05;
    ep->cfg.csum_payload = 0;   /* bit 5: MAC over all, or CRC over headers */
    ep->cfg.batch = (conf >> 6) & 1 ? 4 : 32;
    if (conf >> 7) {
        CHECK(!cvia__dg_faults_parse("drop=0.1,dup=0.1,reorder=0.1,corrupt=0.1,seed=7",
                                     &ep->faults), "fault spec");
        ep->has_faults = 1;
    }
    cvia_mlock_init(&ep->qlock);
    cvia_mlock_init(&ep->busy);
    CHECK(!cvia__dg_ep_alloc(ep) && !cvia__dg_ep_segment(ep, segs[(conf >> 2) & 3]),
          "out of memory");
    ep->now = fz_clock;
    for (int i = 0; i < ep->nremote; i++)
        CHECK(!cvia__dg_peer_alloc(ep, &ep->peers[ep->remote[i]]), "peer_alloc");
}

static void ep_free(struct dg_ep *ep)
{
    cvia__dg_ep_free(ep);
}

/* What must hold between two engine calls. */
static void invariants(const struct dg_ep *ep)
{
    for (int i = 0; i < ep->nremote; i++) {
        const struct dg_peer *pp = &ep->peers[ep->remote[i]];
        uint32_t n = 0;
        if (pp->gone)
            continue;
        CHECK(dg_seq_le(pp->snd_una, pp->snd_tx) && dg_seq_le(pp->snd_tx, pp->snd_nxt),
              "snd_una %u snd_tx %u snd_nxt %u", pp->snd_una, pp->snd_tx, pp->snd_nxt);
        CHECK(pp->snd_nxt - pp->snd_una <= ep->win, "%u segments in flight, window %u",
              pp->snd_nxt - pp->snd_una, ep->win);
        for (uint32_t k = 0; k < ep->win; k++)
            n += !!pp->ooo[k];
        CHECK(n == pp->ooo_count, "%u kept early segments, count says %u", n, pp->ooo_count);
        CHECK(!pp->rx_active || pp->rx_got <= dg_lenoff(&pp->rx_first),
              "received %llu of a %llu-byte message", (unsigned long long)pp->rx_got,
              (unsigned long long)dg_lenoff(&pp->rx_first));
    }
    CHECK(ep->nout == 0, "%d datagrams left unflushed", ep->nout);
    /* the filled part of a receive under way holds no forged byte */
    for (int i = 0; fz_auth && i < ep->nremote; i++) {
        const struct dg_peer *pp = &ep->peers[ep->remote[i]];
        const struct cvia_xfer *x = pp->rx_x;
        if (pp->gone || !pp->rx_active || !x || x == &pp->rx_sink || !x->buf)
            continue;
        for (uint64_t k = 0; k < pp->rx_got && k < x->len; k++)
            CHECK(!(((const uint8_t *)x->buf)[k] & 0x80),
                  "a forged byte at %llu of a receive filled to %llu",
                  (unsigned long long)k, (unsigned long long)pp->rx_got);
    }
}

/* The queued batch through the link's receive path, as cvia__dg_rx runs
 * it from a progress call (the engine held). */
static void rx_batch(struct dg_ep *ep)
{
    if (q_n) {
        cvia_mlock_lock(&ep->busy);
        ep->now = fz_clock;
        while (q_at < q_n)
            cvia__dg_rx(ep);
        if (ep->nout)
            cvia__dg_flush(ep);
        cvia_mlock_unlock(&ep->busy);
    }
    q_n = q_at = 0;
}

static void run_engine(struct dg_ep *ep)
{
    if (!cvia_mlock_trylock(&ep->busy))
        return;
    ep->now = fz_clock;
    cvia__dg_tx(ep);
    cvia__dg_timers(ep);
    cvia__dg_flush(ep);
    cvia_mlock_unlock(&ep->busy);
}

/* ---- requests of this rank --------------------------------------------------- */

static struct cvia_xfer *pending_rma[NUSER];
static int npending_rma;

static int user_free_slot(void)
{
    for (int i = 0; i < NUSER; i++)
        if (!user_posted[i] || user_done[i])
            return i;
    return -1;
}

/* kind 0: message, 1: write, 2: write with immediate data, 3: read */
static void post(struct dg_ep *ep, int kind, int peer, size_t len, uint64_t off)
{
    int i = user_free_slot(), rc;
    struct cvia_xfer *x;

    if (i < 0)
        return;
    x = &user[i];
    memset(x, 0, sizeof(*x));
    x->buf = ubuf[i];
    x->len = len % (UBUF + 1);
    x->peer = peer;
    x->tag = (int32_t)(len & 7);
    x->ctx = CVIA_CTX_USER;
    user_posted[i] = 1;
    user_done[i] = 0;
    if (kind == 0) {
        rc = cvia__dg_send(ep, x);
    } else {
        x->rma_key = REGION_KEY;
        x->rma_addr = (uint64_t)(uintptr_t)region + off % REGION_LEN;
        x->rma_imm = off;
        x->flags = kind == 2 ? CVIA_XFER_IMM : 0;
        rc = cvia__dg_rma(ep, x, kind == 3 ? DG_RMAR : DG_RMAW);
        if (!rc && npending_rma < NUSER)
            pending_rma[npending_rma++] = x;
    }
    if (rc)
        user_posted[i] = 0;   /* refused: no completion comes */
}

/* ---- input records ------------------------------------------------------------- */

enum {
    FZ_SEAL  = 0x01,   /* the job tag, then the MAC (or CRC) made right */
    FZ_AIM   = 0x02,   /* from a remote rank (1 or 2), to us */
    FZ_WIN   = 0x04,   /* sequence in the receive window, ack in the send window
                        * (or, top bit set, about 2^31 away from its start) */
    FZ_EXT   = 0x08,   /* one-sided fields at the region, cookies of waiting requests */
    FZ_RUN   = 0x10,   /* then run the engine, the clock advanced by FZ_CLOCK */
    FZ_SHAPE = 0x20,   /* the next segment of what the peer is sending us, in order */
    FZ_CLOCK = 0xc0,   /* (ctl >> 6) * 2 ms */
    FZ_Q_BATCH = 0x8000,   /* in the length: into the receive batch */
    FZ_Q_FORGE = 0x4000,   /* in the length: sealed, then altered (or cut) */
    /* ctl with neither SEAL nor AIM but 0x80: post a request instead:
     * (ctl >> 2) & 3 its kind, 1 + ((ctl >> 4) & 1) its peer, 0x40: then
     * a link that takes only (arg >> 60) datagrams per send */
};

static struct cvia_xfer *pending_of(uint64_t cookie)
{
    for (int i = 0; i < npending_rma; i++)
        if ((uint64_t)(uintptr_t)pending_rma[i] == cookie)
            return pending_rma[i];
    return NULL;
}

/* Turn the bytes into what ctl asks for; returns the new length. */
static size_t fixup(struct dg_ep *ep, uint8_t ctl, int forge, uint8_t *d, size_t n)
{
    struct dg_hdr h;
    struct dg_ext e;
    size_t covered;
    uint64_t total = 0;
    int shaped = 0;

    if (n < sizeof(h))
        return n;
    memcpy(&h, d, sizeof(h));
    if (ctl & FZ_AIM) {
        dg_set_src(&h, 1 + (dg_src(&h) + 1) % 2);   /* 1 and 2 stay */
        dg_set_dst(&h, 0);
    }
    if ((ctl & FZ_WIN) && dg_src(&h) > 0 && dg_src(&h) < NRANKS) {
        const struct dg_peer *pp = &ep->peers[dg_src(&h)];
        uint64_t len = dg_lenoff(&h);
        h.seq = pp->rcv_nxt + h.seq % (ep->win + 4);
        if (h.ack >> 31)   /* around the half range, where the signed comparisons turn */
            h.ack = pp->snd_una + 0x80000000u + (h.ack & 0xff) - 0x80;
        else               /* something in flight, or all of it */
            h.ack = pp->snd_una + h.ack % (pp->snd_nxt - pp->snd_una + 1);
        if (h.flags & DG_F_FIRST)
            len %= 3 * ep->seg + 1;
        else if (h.tag & 1)
            len = pp->rx_got;
        dg_set_lenoff(&h, len);
    }
    if ((ctl & FZ_SHAPE) && dg_src(&h) > 0 && dg_src(&h) < NRANKS && h.type != DG_ACK &&
        h.type != DG_PING) {
        const struct dg_peer *pp = &ep->peers[dg_src(&h)];
        if (!(h.seq & 7))
            h.seq = pp->rcv_nxt;
        if (pp->rx_active) {   /* the next segment of the message under way */
            if ((h.flags & DG_F_EXT) && n >= sizeof(h) + sizeof(e)) {
                memmove(d + sizeof(h), d + sizeof(h) + sizeof(e), n - sizeof(h) - sizeof(e));
                n -= sizeof(e);   /* no extension after the first segment */
            }
            h.type = pp->rx_first.type;
            h.flags &= (uint8_t)~(DG_F_FIRST | DG_F_EXT | DG_F_LAST);
            dg_set_lenoff(&h, pp->rx_got);
            total = dg_lenoff(&pp->rx_first) - pp->rx_got;
        } else {   /* a message of its own */
            if (h.type < DG_MSG || h.type > DG_BYE)
                h.type = (uint8_t)(DG_MSG + h.type % DG_BYE);
            h.flags |= DG_F_FIRST;
            h.flags &= (uint8_t)~(DG_F_LAST | DG_F_EXT);
            if (h.type != DG_MSG && h.type != DG_BYE && n >= sizeof(h) + sizeof(e))
                h.flags |= DG_F_EXT;
            if (h.type == DG_RMAR || h.type == DG_WACK || h.type == DG_BYE)
                dg_set_lenoff(&h, 0);
            total = dg_lenoff(&h);
        }
        shaped = 1;
    }
    if ((ctl & FZ_EXT) && (h.flags & DG_F_EXT) && n >= sizeof(h) + sizeof(e)) {
        memcpy(&e, d + sizeof(h), sizeof(e));
        if (!(e.key & 1))
            e.key = REGION_KEY;
        e.addr = (uint64_t)(uintptr_t)region + e.addr % (REGION_LEN + 64);
        if ((h.type == DG_WACK || h.type == DG_RRESP) && npending_rma)
            e.aux = (uint64_t)(uintptr_t)pending_rma[e.aux % (uint64_t)npending_rma];
        if (h.type == DG_RMAR)
            e.aux %= 3 * ep->seg;
        if (h.type == DG_RRESP || h.type == DG_WACK)
            e.aux2 = e.aux2 % 4 ? 0 : (uint64_t)-EACCES;
        memcpy(d + sizeof(h), &e, sizeof(e));
        if (shaped && h.type == DG_RRESP && (h.flags & DG_F_FIRST)) {
            struct cvia_xfer *x = pending_of(e.aux);
            if (x && !(h.tag & 1)) {   /* the length the read waits for */
                total = x->len;
                dg_set_lenoff(&h, total);
            }
        }
    }
    if (shaped) {   /* the payload: what is left of the message at most */
        size_t off = sizeof(h) + ((h.flags & DG_F_EXT) ? sizeof(e) : 0);
        if (off <= n && n - off >= total) {
            n = off + (size_t)total;
            h.flags |= DG_F_LAST;
        }
    }
    size_t poff = sizeof(h) + ((h.flags & DG_F_EXT) ? sizeof(e) : 0);
    if ((ctl & FZ_SEAL) && ep->keys.auth)   /* a genuine payload: top bits clear */
        for (size_t k = poff; k < n; k++)
            d[k] &= 0x7f;
    if (ctl & FZ_SEAL) {
        struct iovec iov[3];
        covered = n;
        h.job = dg_jobtag(ep->keys.job);
        h.flags = (uint8_t)((h.flags & ~DG_F_AUTH) | (ep->keys.auth ? DG_F_AUTH : 0));
        if (!ep->keys.auth && (h.flags & DG_F_HCSUM)) {
            covered = sizeof(h) + ((h.flags & DG_F_EXT) ? sizeof(e) : 0);
            if (covered > n)
                covered = n;
        }
        iov[0].iov_base = &h;
        iov[0].iov_len = sizeof(h);
        if (ep->keys.auth && (h.flags & DG_F_EXT) && n >= sizeof(h) + sizeof(e)) {
            /* the extension alone, then the payload (as the engine seals) */
            iov[1].iov_base = d + sizeof(h);
            iov[1].iov_len = sizeof(e);
            iov[2].iov_base = d + sizeof(h) + sizeof(e);
            iov[2].iov_len = n - sizeof(h) - sizeof(e);
            cvia__dg_seal(&h, iov, 3, 3, &ep->keys, cvia__dg_esn_in(ep, &h));
        } else {
            iov[1].iov_base = d + sizeof(h);
            iov[1].iov_len = covered - sizeof(h);
            cvia__dg_seal(&h, iov, 2, 2, &ep->keys, cvia__dg_esn_in(ep, &h));
        }
    }
    if (forge && poff < n) {   /* a forged payload: top bits set; cut short, or not */
        int cut = d[poff] & 1;
        for (size_t k = poff; k < n; k++)
            d[k] |= 0x80;
        if (cut && n - poff > 1)
            n = poff + (n - poff) / 2;
    } else if (forge) {
        h.mac ^= 1;
    }
    memcpy(d, &h, sizeof(h));
    return n;
}

/* The parser alone: never past the end, a payload inside the datagram. */
static void check_parse(const uint8_t *d, size_t n, const struct dg_keys *key)
{
    struct dg_hdr h;
    struct dg_ext e;
    const uint8_t *payload = NULL;
    size_t plen = 0;
    int bad = cvia__dg_parse(d, n, key, &h, &e, &payload, &plen, NULL, NULL);

    CHECK(bad >= DG_OK && bad <= DG_BAD_FORMAT, "parse returned %d", bad);
    if (bad == DG_OK)
        CHECK(!(h.flags & DG_F_AUTH) == !key->auth, "the other CVIA_DGRAM_AUTH setting passed");
    if (bad == DG_OK)
        CHECK(payload >= d + sizeof(h) && payload + plen == d + n, "payload outside the datagram");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t d[65536 + 64];
    struct dg_ep ep;
    size_t pos = 1;

    if (!size)
        return 0;
    {
        struct dg_keys k = { .job = cvia__dg_job_key(JOBID), .auth = 0, .nh = fz_nh_key() };
        check_parse(data, size, &k);
        check_parse(data + 1, size - 1, &k);
        k.auth = 1;
        check_parse(data, size, &k);
    }

    fz_clock = 1000.0;
    link_cap = 1 << 30;
    q_n = q_at = 0;
    memset(user_posted, 0, sizeof(user_posted));
    memset(user_done, 0, sizeof(user_done));
    npending_rma = 0;
    ep_setup(&ep, data[0]);
    /* something in flight to each peer, so that acknowledgements and
     * answers have a window and waiting requests to act on */
    post(&ep, 0, 1, 100, 0);
    post(&ep, 0, 1, 5000, 0);
    post(&ep, 2, 1, 300, 64);
    post(&ep, 3, 2, 128, 4096);
    run_engine(&ep);
    invariants(&ep);

    while (pos + 3 <= size) {
        uint8_t ctl = data[pos];
        size_t n = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;
        int queue = !!(n & FZ_Q_BATCH), forge = !!(n & FZ_Q_FORGE);
        n &= FZ_Q_FORGE - 1;
        pos += 3;
        if (n > size - pos)
            n = size - pos;
        if (!queue || q_n == FZ_Q_MAX || q_n == (int)ep.cfg.batch) {
            rx_batch(&ep);   /* what was queued goes first, in order */
            invariants(&ep);
        }
        if (!(ctl & (FZ_SEAL | FZ_AIM)) && (ctl & 0x80)) {
            uint64_t arg = 0;
            memcpy(&arg, data + pos, n < 8 ? n : 8);
            post(&ep, (ctl >> 2) & 3, 1 + ((ctl >> 4) & 1), (size_t)(arg & 0xffff), arg >> 16);
            link_cap = (ctl & 0x40) ? (int)(arg >> 60) : 1 << 30;
            pos += n;
            invariants(&ep);
            continue;
        }
        memcpy(d, data + pos, n);
        pos += n;
        n = fixup(&ep, ctl, forge, d, n);
        if (queue && n <= FZ_Q_ROOM - 64) {
            memcpy(q_buf[q_n] + 56, d, n);
            q_len[q_n++] = n;
            if (ctl & FZ_RUN) {   /* the batch now, then the clock */
                rx_batch(&ep);
                fz_clock += (double)(ctl >> 6) * 2e-3;
                run_engine(&ep);
            }
            invariants(&ep);
            continue;
        }
        cvia_mlock_lock(&ep.busy);   /* input runs with the engine held, as cvia__dg_rx does */
        ep.now = fz_clock;
        cvia__dg_input(&ep, d, n, NULL);
        cvia_mlock_unlock(&ep.busy);
        if (ctl & FZ_RUN) {
            fz_clock += (double)(ctl >> 6) * 2e-3;
            run_engine(&ep);
        } else if (ep.nout) {   /* acknowledgements queued by input go out */
            cvia_mlock_lock(&ep.busy);
            cvia__dg_flush(&ep);
            cvia_mlock_unlock(&ep.busy);
        }
        invariants(&ep);
    }
    rx_batch(&ep);
    invariants(&ep);
    /* a few rounds of timers, then every peer goes: all must complete */
    link_cap = 1 << 30;
    for (int r = 0; r < 3; r++) {
        fz_clock += 0.004;
        run_engine(&ep);
        invariants(&ep);
    }
    for (int i = 0; i < ep.nremote; i++)
        cvia__dg_peer_gone(&ep, ep.remote[i], -CVIA_ENOPEER);
    for (int i = 0; i < NUSER; i++)
        CHECK(!user_posted[i] || user_done[i], "request %d never completed", i);
    CHECK(!rx_live, "a receive (from rank %d) never completed", rx_live->x.peer);
    ep_free(&ep);
    return 0;
}

/* ---- seed corpus ------------------------------------------------------------------ */

static size_t rec(uint8_t *out, uint8_t ctl, const void *d, size_t n)
{
    out[0] = ctl;
    out[1] = (uint8_t)n;
    out[2] = (uint8_t)(n >> 8);
    memcpy(out + 3, d, n);
    return 3 + n;
}

/* A record of the receive batch (FZ_Q_BATCH), forged or not. */
static size_t recq(uint8_t *out, uint8_t ctl, int forge, const void *d, size_t n)
{
    size_t k = rec(out, ctl, d, n);
    out[2] |= (uint8_t)((FZ_Q_BATCH | (forge ? FZ_Q_FORGE : 0)) >> 8);
    return k;
}

static size_t dgram(uint8_t *out, uint8_t type, uint8_t flags, uint32_t src, uint32_t seq,
                    uint32_t ack, uint32_t sack, uint64_t lenoff, const struct dg_ext *e,
                    size_t plen)
{
    struct dg_hdr h = { .type = type, .flags = flags, .seq = seq, .ack = ack, .sack = sack,
                        .tag = 5 };
    size_t n = sizeof(h);

    dg_set_src(&h, src);
    dg_set_lenoff(&h, lenoff & DG_MAX_LEN);

    memcpy(out, &h, sizeof(h));
    if (e) {
        memcpy(out + n, e, sizeof(*e));
        n += sizeof(*e);
    }
    for (size_t i = 0; i < plen; i++)
        out[n + i] = (uint8_t)(i * 7 + seq);
    return n + plen;
}

static void write_seed(const char *dir, const char *name, const uint8_t *d, size_t n)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "wb"))) {
        fwrite(d, 1, n, f);
        fclose(f);
    }
}

static void make_seeds(const char *dir)
{
    static uint8_t in[65536], dg[16384];
    const uint8_t all = FZ_SEAL | FZ_AIM | FZ_WIN | FZ_EXT | FZ_RUN;
    struct dg_ext e = { .key = REGION_KEY, .addr = 128, .aux = 42, .aux2 = 0 };
    size_t n, k;

    mkdir(dir, 0755);
    /* a 3000-byte message in three segments (1432-byte segments, conf 0x04) */
    n = 0;
    in[n++] = 0x04 | 1;
    k = dgram(dg, DG_MSG, DG_F_FIRST, 1, 1, 1, 0, 3000, NULL, 1432);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    k = dgram(dg, DG_MSG, 0, 1, 2, 1, 0, 1432, NULL, 1432);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    k = dgram(dg, DG_MSG, DG_F_LAST, 1, 3, 1, 0, 2864, NULL, 136);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    write_seed(dir, "msg3", in, n);
    /* the same out of order, with a duplicate */
    n = 1;
    k = dgram(dg, DG_MSG, DG_F_LAST, 1, 3, 1, 0, 2864, NULL, 136);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    k = dgram(dg, DG_MSG, DG_F_FIRST, 1, 1, 1, 0, 3000, NULL, 1432);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    k = dgram(dg, DG_MSG, 0, 1, 2, 1, 0, 1432, NULL, 1432);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    write_seed(dir, "msg3-ooo", in, n);
    /* a write with immediate data, a read, their answers, an ACK with a
     * SACK hole, a PING, a goodbye */
    n = 0;
    in[n++] = 0x04 | 2;
    k = dgram(dg, DG_RMAW, DG_F_FIRST | DG_F_LAST | DG_F_EXT | DG_F_IMM, 1, 1, 1, 0, 200, &e, 200);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    e.aux = 64;
    k = dgram(dg, DG_RMAR, DG_F_FIRST | DG_F_LAST | DG_F_EXT, 1, 2, 1, 0, 0, &e, 0);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    e.aux = 0;
    k = dgram(dg, DG_WACK, DG_F_FIRST | DG_F_LAST | DG_F_EXT, 1, 3, 3, 0, 0, &e, 0);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    e.aux = 1;
    k = dgram(dg, DG_RRESP, DG_F_FIRST | DG_F_LAST | DG_F_EXT, 2, 1, 2, 0, 128, &e, 128 - 32);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    k = dgram(dg, DG_ACK, 0, 1, 4, 2, 0x5, 0, NULL, 0);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    k = dgram(dg, DG_PING, DG_F_ACKREQ, 2, 2, 1, 0, 0, NULL, 0);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    k = dgram(dg, DG_BYE, DG_F_FIRST | DG_F_LAST, 1, 4, 4, 0, 0, NULL, 0);
    n += rec(in + n, all & ~FZ_WIN, dg, k);
    write_seed(dir, "rma", in, n);
    /* posts, a full link, the clock running out (peer timeout) */
    n = 0;
    in[n++] = 0x80 | 0x04;   /* with fault hooks */
    {
        uint64_t arg = (uint64_t)9000 | (uint64_t)256 << 16 | (uint64_t)1 << 60;
        n += rec(in + n, 0x80 | 0x40, &arg, sizeof(arg));   /* a message, a link taking 1 */
        arg = 20000;
        n += rec(in + n, 0x80 | 1 << 2, &arg, sizeof(arg));  /* a write */
    }
    k = dgram(dg, DG_ACK, 0, 1, 1, 2, 0, 0, NULL, 0);
    for (int i = 0; i < 12; i++)
        n += rec(in + n, (uint8_t)((all & ~FZ_WIN) | 0xc0), dg, k);   /* 6 ms each */
    write_seed(dir, "timeout", in, n);
    /* shaped by the harness: messages and one-sided operations in order */
    n = 0;
    in[n++] = 0x04 | 1;
    for (int i = 0; i < 16; i++) {
        uint8_t type = (uint8_t)(DG_MSG + i % DG_BYE);
        e.aux = (uint64_t)i;
        k = dgram(dg, type, DG_F_FIRST, 1 + (uint32_t)(i & 1), 1, 1, 0, 700u * (unsigned)i, &e,
                  1000);
        n += rec(in + n, all | FZ_SHAPE, dg, k);
    }
    write_seed(dir, "shaped", in, n);
    /* regression: everything to rank 1 acknowledged (the 100 and 5000-byte
     * messages and the write: 6 segments of 1432 bytes), then an ack 2^31
     * past that empty window: the engine took it for new and walked
     * snd_una 2^31 steps past snd_nxt */
    n = 0;
    in[n++] = 0x04;
    k = dgram(dg, DG_ACK, 0, 1, 1, 6, 0, 0, NULL, 0);
    n += rec(in + n, FZ_SEAL | FZ_AIM | FZ_WIN, dg, k);
    k = dgram(dg, DG_ACK, 0, 1, 1, 0x80000080u, 0, 0, NULL, 0);
    n += rec(in + n, FZ_SEAL | FZ_AIM | FZ_WIN, dg, k);
    write_seed(dir, "ack-half-range", in, n);
    /* the receiver's copy in NH's pass (cvia__dg_place, cvia__nh2c): a
     * 4000-byte message from rank 1 in three 1432-byte segments (in the
     * receive window: FZ_WIN, an even tag so that offsets stay); its first
     * alone, then a receive batch of the rest with forged copies (payload
     * altered, or cut short) before the genuine ones, a duplicate, the
     * last before the second; then all of it in one batch (the batch cut
     * after the first segment); then in order with forged ones between */
    {
        const uint8_t q = FZ_SEAL | FZ_AIM | FZ_WIN;   /* no RUN: stays queued */
        static uint8_t s1[2048], s2[2][2048], s3[2][2048];
        size_t k1, k2, k3;
        struct dg_hdr h;
        /* sequence numbers relative to rcv_nxt when the record is read:
         * [0] the first segment still queued before them, [1] delivered */
        k1 = dgram(s1, DG_MSG, DG_F_FIRST, 1, 0, 0, 0, 4000, NULL, 1432);
        for (int a = 0; a < 2; a++) {
            k2 = dgram(s2[a], DG_MSG, 0, 1, 1 - (uint32_t)a, 0, 0, 1432, NULL, 1432);
            k3 = dgram(s3[a], DG_MSG, DG_F_LAST, 1, 2 - (uint32_t)a, 0, 0, 2864, NULL, 1136);
        }
        uint8_t *all_of[5] = { s1, s2[0], s2[1], s3[0], s3[1] };
        for (int i = 0; i < 5; i++) {
            memcpy(&h, all_of[i], sizeof(h));
            h.tag = 4;
            memcpy(all_of[i], &h, sizeof(h));
        }
        s2[0][sizeof(h)] |= 1;   /* their forged copies are cut short */
        s2[1][sizeof(h)] |= 1;
        n = 0;
        in[n++] = 0x04;
        n += rec(in + n, q | FZ_RUN, s1, k1);
        n += recq(in + n, q, 1, s2[1], k2);
        n += recq(in + n, q, 0, s3[1], k3);
        n += recq(in + n, q, 0, s2[1], k2);
        n += recq(in + n, q, 0, s2[1], k2);
        n += recq(in + n, q, 1, s3[1], k3);
        n += recq(in + n, q, 0, s3[1], k3);
        write_seed(dir, "fused", in, n);
        n = 1;
        n += recq(in + n, q, 0, s1, k1);
        n += recq(in + n, q, 1, s2[0], k2);
        n += recq(in + n, q, 0, s2[0], k2);
        n += recq(in + n, q, 0, s3[0], k3);
        write_seed(dir, "fused-cut", in, n);
        n = 1;
        n += rec(in + n, q | FZ_RUN, s1, k1);
        n += recq(in + n, q, 0, s2[1], k2);
        n += recq(in + n, q, 1, s3[1], k3);
        n += recq(in + n, q, 0, s3[1], k3);
        n += recq(in + n, q, 1, s3[1], k3);
        write_seed(dir, "fused-inorder", in, n);
    }
}

static void print_stats(void)
{
    fprintf(stdout, "fuzz_dgram: %lu datagrams copied in NH's pass, %lu of them forged\n",
            n_placed, n_placed_forged);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *seeds = getenv("FUZZ_DGRAM_SEEDS");

    (void)argc, (void)argv;
    if (getenv("FUZZ_DGRAM_STATS"))
        atexit(print_stats);
    if (seeds && *seeds)
        make_seeds(seeds);
    return 0;
}
