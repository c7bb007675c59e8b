/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* dgram receiving: check each datagram, take its acknowledgement, drop
 * duplicates, keep what arrives early, and deliver segments in order into
 * their destination (the matched receive, the registered region, the
 * waiting read). Runs with ep->busy held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>
#include "prov/dgram/dgram.h"
#include "util/log.h"

/* An early segment, kept until its turn. */
struct dg_early {
    struct dg_hdr hdr;
    struct dg_ext ext;
    size_t len;
    uint8_t payload[];
};

static struct cvia_xfer *dg_take_waiting(struct dg_ep *ep, struct dg_peer *pp, uint64_t cookie)
{
    struct cvia_xfer **l, *x;

    cvia_mlock_lock(&ep->qlock);
    for (l = &pp->waiting; *l && (uint64_t)(uintptr_t)*l != cookie; l = &(*l)->prov_next)
        ;
    x = *l;
    if (x)
        CVIA_HINT_STORE(*l, x->prov_next);
    cvia_mlock_unlock(&ep->qlock);
    if (x)
        x->prov_next = NULL;
    return x;
}

static void dg_proto_error(struct dg_ep *ep, int peer, const char *what)
{
    ep->st.format++;
    cvia_error(NET, "%s: %s from rank %d; dropping the peer", ep->link->name, what, peer);
    cvia__dg_peer_gone(ep, peer, -CVIA_EPROTO);
}

/* A message's first segment: decide where its bytes go. */
static int dg_begin(struct dg_ep *ep, int peer, const struct dg_hdr *h, const struct dg_ext *e)
{
    struct dg_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *x;
    int rc;

    pp->rx_first = *h;
    pp->rx_ext = *e;
    pp->rx_got = 0;
    pp->rx_status = 0;
    pp->rx_x = NULL;
    pp->rx_active = 1;
    switch (h->type) {
    case DG_MSG:
        x = up->match(up->core, peer, dg_ctx(h), h->tag, (size_t)dg_lenoff(h), 0, 0);
        pp->rx_x = x;
        return 0;
    case DG_RMAW:
        pp->rx_status = up->mr_check(up->core, e->key, e->addr, (size_t)dg_lenoff(h),
                                     CVIA_MR_REMOTE_WRITE);
        pp->rx_sink.buf = pp->rx_status ? NULL : (void *)(uintptr_t)e->addr;
        pp->rx_sink.len = pp->rx_status ? 0 : (size_t)dg_lenoff(h);
        pp->rx_sink.prov_next = NULL;
        pp->rx_x = &pp->rx_sink;
        return 0;
    case DG_RMAR:
        if (dg_lenoff(h))
            return -CVIA_EPROTO;
        rc = up->mr_check(up->core, e->key, e->addr, (size_t)e->aux, CVIA_MR_REMOTE_READ);
        cvia__dg_answer(ep, peer, DG_RRESP, e->aux2, rc,
                        rc ? NULL : (const void *)(uintptr_t)e->addr, rc ? 0 : (size_t)e->aux);
        return 0;
    case DG_WACK:
        if (dg_lenoff(h))
            return -CVIA_EPROTO;
        if ((x = dg_take_waiting(ep, pp, e->aux))) {
            x->done = x->len;
            up->complete(up->core, x, (int)(int64_t)e->aux2);
        }
        return 0;
    case DG_RRESP:
        x = dg_take_waiting(ep, pp, e->aux);
        pp->rx_status = (int)(int64_t)e->aux2;
        if (x && !pp->rx_status && dg_lenoff(h) == x->len) {
            pp->rx_x = x;
            x->done = 0;
        } else {
            if (x && !pp->rx_status)
                pp->rx_status = -CVIA_EPROTO;
            pp->rx_sink.buf = NULL;
            pp->rx_sink.len = 0;
            pp->rx_sink.prov_next = x;   /* failed at the end */
            pp->rx_x = &pp->rx_sink;
        }
        return 0;
    case DG_BYE:
        pp->bye = 1;
        pp->ack_now = 1;
        return dg_lenoff(h) ? -CVIA_EPROTO : 0;
    }
    return -CVIA_EPROTO;
}

static void dg_end(struct dg_ep *ep, int peer)
{
    struct dg_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    const struct dg_hdr *h = &pp->rx_first;
    const struct dg_ext *e = &pp->rx_ext;
    struct cvia_xfer *x = pp->rx_x;

    pp->rx_x = NULL;
    pp->rx_active = 0;
    switch (h->type) {
    case DG_MSG:
        up->complete(up->core, x, x->msg_len > x->len ? -CVIA_ETRUNC : 0);
        break;
    case DG_RMAW:
        if (!pp->rx_status && (h->flags & DG_F_IMM))
            up->imm(up->core, peer, e->aux, e->key, e->addr, (size_t)dg_lenoff(h));
        cvia__dg_answer(ep, peer, DG_WACK, e->aux2, pp->rx_status, NULL, 0);
        break;
    case DG_RRESP:
        if (x == &pp->rx_sink) {
            x = pp->rx_sink.prov_next;
            pp->rx_sink.prov_next = NULL;
        }
        if (x) {
            x->done = x->len;
            up->complete(up->core, x, pp->rx_status);
        }
        break;
    }
}

/* The in-order segment: place its payload (unless the MAC's pass already
 * did: @in's place, cvia__dg_place). 0, or -1 if the peer was dropped. */
static int dg_deliver(struct dg_ep *ep, int peer, const struct dg_hdr *h, const struct dg_ext *e,
                      const uint8_t *payload, size_t plen, const struct dg_in *in)
{
    struct dg_peer *pp = &ep->peers[peer];
    struct cvia_xfer *x;
    uint64_t total;

    if (h->type == DG_ACK || h->type == DG_PING)
        return 0;
    if (h->flags & DG_F_FIRST) {
        pp->rx_gen++;
        if (pp->rx_active) {
            dg_proto_error(ep, peer, "a message began inside another");
            return -1;
        }
        if (dg_begin(ep, peer, h, e)) {
            dg_proto_error(ep, peer, "a malformed request");
            return -1;
        }
        if (pp->gone)
            return -1;
        if (!pp->rx_x && h->type != DG_MSG) {   /* answers and requests end here */
            pp->rx_active = 0;
            return 0;
        }
    } else if (!pp->rx_active || dg_lenoff(h) != pp->rx_got || h->type != pp->rx_first.type) {
        dg_proto_error(ep, peer, "a segment out of its message");
        return -1;
    }
    total = dg_lenoff(&pp->rx_first);
    if (plen > total - pp->rx_got) {
        dg_proto_error(ep, peer, "a segment past its message's end");
        return -1;
    }
    x = pp->rx_x;
    if (x && plen) {
        /* re-read buf/len every time: the core may have redirected an
         * unexpected message into a receive posted since */
        if (pp->rx_got < x->len) {
            size_t room = x->len - (size_t)pp->rx_got;
            uint8_t *to = (uint8_t *)x->buf + pp->rx_got;
            /* placed by the MAC's pass: this segment's bytes, at this
             * message's offset, and nothing has written there since (the
             * plan's places in a batch only move forward, and every
             * other copy lands below rx_got) */
            if (!(in && in->place == to && in->place_gen == pp->rx_gen && plen <= room))
                memcpy(to, payload, plen < room ? plen : room);
        }
    }
    pp->rx_got += plen;
    if (x && x != &pp->rx_sink)
        x->done = (size_t)pp->rx_got;
    if (pp->rx_got == total) {
        if (!(h->flags & DG_F_LAST)) {
            dg_proto_error(ep, peer, "a message that does not end on its last segment");
            return -1;
        }
        dg_end(ep, peer);
    }
    return 0;
}

/* Keep an early segment until its turn (a copy: the link's buffer goes back). */
static void dg_keep(struct dg_ep *ep, struct dg_peer *pp, const struct dg_hdr *h,
                    const struct dg_ext *e, const uint8_t *payload, size_t plen)
{
    uint32_t i = h->seq % ep->win;
    struct dg_early *k;

    if (pp->ooo[i]) {
        ep->st.dups++;
        pp->dups_rcvd++;
        return;
    }
    if (!(k = malloc(sizeof(*k) + plen)))
        return;   /* as if lost: it comes again */
    k->hdr = *h;
    k->ext = *e;
    k->len = plen;
    memcpy(k->payload, payload, plen);
    pp->ooo[i] = (uint8_t *)k;
    pp->ooo_count++;
    ep->st.ooo++;
}

uint64_t cvia__dg_esn_in(const void *arg, const struct dg_hdr *h)
{
    const struct dg_ep *ep = arg;
    uint32_t src = dg_src(h);
    const struct dg_peer *pp;

    /* connection set-up has no sequence; a datagram for another rank or
     * from a stranger gets 0, and fails the MAC (or would be refused after) */
    if (h->type >= DG_HELLO || dg_dst(h) != (uint32_t)ep->args.rank ||
        src >= (uint32_t)ep->args.size || !ep->peers[src].remote)
        return 0;
    pp = &ep->peers[src];
    return dg_esn(dg_seq_hi(h->seq, pp->rcv_nxt, pp->rcv_hi),
                  dg_seq_hi(h->ack, pp->snd_nxt, pp->snd_hi));
}

int cvia__dg_input(struct dg_ep *ep, const uint8_t *buf, size_t len, const struct dg_in *in)
{
    struct dg_hdr h;
    struct dg_ext e;
    const uint8_t *payload;
    size_t plen;
    struct dg_peer *pp;
    int peer, bad;

    /* nothing of a datagram is used before it passed the MAC (or CRC) */
    bad = in && in->mac_ok ? cvia__dg_parse_macd(buf, len, &ep->keys, &h, &e, &payload, &plen)
                           : cvia__dg_parse(buf, len, &ep->keys, &h, &e, &payload, &plen,
                                            cvia__dg_esn_in, ep);
    if (bad) {
        if (bad == DG_BAD_FOREIGN)
            ep->st.foreign++;
        else if (bad == DG_BAD_CSUM)
            ep->st.corrupt++;
        else if (bad == DG_BAD_MAC)
            ep->st.forged++;
        else
            ep->st.format++;
        return 0;
    }
    if (h.type >= DG_HELLO) {   /* launcher-free connection set-up */
        if (ep->ctl_in)
            ep->ctl_in(ep, &h, payload, plen, in);
        else
            ep->st.format++;
        return 0;
    }
    if (dg_dst(&h) != (uint32_t)ep->args.rank) {
        ep->st.other++;   /* for another rank of this host (eth: one MAC) */
        return 0;
    }
    peer = (int)dg_src(&h);
    if (dg_src(&h) >= (uint32_t)ep->args.size || !ep->peers[peer].remote ||
        (in && !ep->link->from_peer(ep, peer, in))) {
        ep->st.foreign++;   /* right key, wrong sender: refused */
        return 0;
    }
    pp = &ep->peers[peer];
    if (pp->gone)
        return 0;
    ep->st.rx++;
    pp->last_heard = ep->now;
    cvia__dg_ack_in(ep, peer, &h, &e);
    if (pp->gone)
        return 1;
    if (h.type == DG_ACK)
        return 0;
    if (h.type == DG_PING) {
        pp->ack_now = 1;
        pp->ack_owed++;
        return 0;
    }
    if (dg_seq_lt(h.seq, pp->rcv_nxt)) {
        /* its acknowledgement was lost, or a replay: never delivered
         * again, and acknowledged again at most once per ACK_DELAY (or RTO/8), so
         * that a flood of replays does not become a flood of ACKs (a
         * sender's retransmission comes an RTO apart) */
        ep->st.dups++;
        pp->dups_rcvd++;
        if (ep->now - pp->dup_ack_at >= (ep->cfg.ack_delay < ep->cfg.rto / 8 ?
                                          ep->cfg.ack_delay : ep->cfg.rto / 8)) {
            pp->dup_ack_at = ep->now;
            pp->ack_now = 1;
            pp->ack_owed++;
        }
        return 0;
    }
    if (!dg_seq_lt(h.seq, pp->rcv_nxt + ep->win)) {
        ep->st.stale++;   /* beyond the window: the sender cannot have sent it */
        return 0;
    }
    if (!pp->ack_owed)
        pp->ack_owed_since = ep->now;
    pp->ack_owed++;
    if (h.seq != pp->rcv_nxt) {
        dg_keep(ep, pp, &h, &e, payload, plen);
        pp->ack_now = 1;   /* a hole: tell the sender at once (SACK) */
        return 0;
    }
    if ((h.flags & DG_F_ACKREQ) || pp->ooo_count)
        pp->ack_now = 1;   /* asked, or it fills (part of) a hole: at once */
    if (dg_deliver(ep, peer, &h, &e, payload, plen, in))
        return 1;
    if (++pp->rcv_nxt == 0)
        pp->rcv_hi++;
    /* what arrived early and is next now */
    while (pp->ooo_count) {
        uint32_t i = pp->rcv_nxt % ep->win;
        struct dg_early *k = (struct dg_early *)pp->ooo[i];
        int rc;
        if (!k || k->hdr.seq != pp->rcv_nxt)
            break;
        pp->ooo[i] = NULL;
        pp->ooo_count--;
        if (k->hdr.flags & DG_F_ACKREQ)
            pp->ack_now = 1;
        rc = dg_deliver(ep, peer, &k->hdr, &k->ext, k->payload, k->len, NULL);
        free(k);
        if (rc)
            return 1;
        if (++pp->rcv_nxt == 0)
            pp->rcv_hi++;
    }
    return 1;
}

/* In the MAC's pass over a receive batch (cvia__dg_mac_batch), before
 * NH of datagram @i: if it reads as the
 * next segment of the message being received from its peer (a message's
 * continuation, its sequence and offset those after the segments planned
 * before it in the batch, all of it inside the receive buffer), where its
 * payload goes, so that NH's pass over it copies it there (cvia__nh2c):
 * one pass over the bytes instead of NH's and then dg_deliver's copy.
 * Read from the raw header, before the MAC: a forged datagram planned so
 * writes only where no byte of its message has landed yet (at or past
 * rx_got; the plan's offsets only grow within a batch, and a message is
 * filled in order, early segments kept aside), and the genuine segments
 * write there before the receive completes; dg_deliver uses a place only
 * for a datagram whose MAC is good, at the offset it arrives at.
 * A message's first segment is matched only once its MAC passed, so where
 * the rest goes is not known before: the batch is cut after a first
 * segment that the next datagram continues (a GRO buffer is one message
 * from its first segment on, at udp's 64 KiB), and its rest planned after
 * it is delivered (*cut = 1). Its header @h passed dg_pre's checks (job
 * tag, MAC flag, length) and nothing else. */
uint8_t *cvia__dg_place(const void *arg, const struct dg_in *in, int i, int n,
                        const struct dg_hdr *h, uint32_t *gen, int *cut)
{
    struct dg_ep *ep = (struct dg_ep *)(uintptr_t)arg;
    struct dg_peer *pp;
    struct cvia_xfer *x;
    uint32_t src;
    uint64_t plen;
    uint8_t *at;

    if (h->type != DG_MSG || (h->flags & DG_F_EXT) || in[i].len <= sizeof(*h) ||
        dg_dst(h) != (uint32_t)ep->args.rank || (src = dg_src(h)) >= (uint32_t)ep->args.size)
        return NULL;
    if (h->flags & DG_F_FIRST) {
        struct dg_hdr nx;
        if ((h->flags & DG_F_LAST) || i + 1 == n || in[i + 1].len <= sizeof(nx))
            return NULL;
        memcpy(&nx, in[i + 1].data, sizeof(nx));
        *cut = nx.type == DG_MSG && !(nx.flags & DG_F_FIRST) && dg_src(&nx) == src;
        return NULL;
    }
    pp = &ep->peers[src];
    if (!pp->remote || pp->gone)
        return NULL;
    if (pp->pl_batch != ep->rx_batch) {   /* its first in this batch: from its state */
        pp->pl_batch = ep->rx_batch;
        pp->pl_seq = pp->rcv_nxt;
        pp->pl_got = pp->rx_got;
        pp->pl_gen = pp->rx_gen;
        pp->pl_ok = pp->rx_active && pp->rx_x && pp->rx_x != &pp->rx_sink &&
                    pp->rx_first.type == DG_MSG && pp->rx_x->buf;
    }
    if (!pp->pl_ok)
        return NULL;
    x = pp->rx_x;
    plen = in[i].len - sizeof(*h);
    if (h->seq != pp->pl_seq || dg_lenoff(h) != pp->pl_got ||
        plen > dg_lenoff(&pp->rx_first) - pp->pl_got || pp->pl_got + plen > x->len)
        return NULL;
    at = (uint8_t *)x->buf + pp->pl_got;
    *gen = pp->pl_gen;
    pp->pl_seq++;
    pp->pl_got += plen;
    if (h->flags & DG_F_LAST)
        pp->pl_ok = 0;
    return at;
}

int cvia__dg_rx(struct dg_ep *ep)
{
    int events = 0;

    if (ep->rx_call && ep->rx_drained && !ep->rx_now &&
        ep->now - ep->rx_quiet_from < ep->cfg.rx_gap)
        return 0;   /* nothing can have come since the socket was found empty */
    for (int round = 0; round < 4; round++) {
        int n = ep->link->recv(ep, ep->in, (int)ep->cfg.batch);
        if (n <= 0)
            break;
        ep->st.rx_calls++;
        /* the MACs of the whole batch in one SipHash call, or of each part
         * cvia__dg_place cuts it into (the high halves of the sequence
         * numbers from the state before any of it: a datagram's is the
         * same until its peer's window moves 2^31) */
        for (int at = 0, m; at < n; at += m) {
            struct dg_in *in = ep->in + at;
            ep->rx_batch++;
            m = cvia__dg_mac_batch(&ep->keys, in, n - at, cvia__dg_esn_in, ep, ep->mac_in,
                                   ep->mac_tag, cvia__dg_place);
            for (int i = 0; i < m; i++)
                events += cvia__dg_input(ep, in[i].data, in[i].len, &in[i]);
        }
        ep->link->release(ep, ep->in, n);
        if (n < (int)ep->cfg.batch)
            break;
    }
    return events;
}

/* @peer is gone: fail everything that involves it. */
void cvia__dg_peer_gone(struct dg_ep *ep, int peer, int err)
{
    struct dg_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *q, *w, *x;

    cvia_mlock_lock(&ep->qlock);
    if (pp->gone) {
        cvia_mlock_unlock(&ep->qlock);
        return;
    }
    pp->gone = 1;
    q = pp->q_head;
    CVIA_HINT_STORE(pp->q_head, NULL);
    pp->q_tail = NULL;
    w = pp->waiting;
    CVIA_HINT_STORE(pp->waiting, NULL);
    cvia_mlock_unlock(&ep->qlock);
    if ((x = pp->rx_x) && pp->rx_active) {
        pp->rx_x = NULL;
        if (x == &pp->rx_sink)
            x = pp->rx_sink.prov_next;
        if (x)
            up->complete(up->core, x, err);
    }
    pp->rx_active = 0;
    if (pp->cur) {   /* being cut: its head is not in q */
        pp->cur->prov_next = q;
        q = pp->cur;
        pp->cur = NULL;
    }
    cvia__prov_fail_list(up, q, err, DG_XFER_OP);
    if (pp->win) {
        for (uint32_t seq = pp->snd_una; dg_seq_lt(seq, pp->snd_nxt); seq++) {
            struct dg_slot *s = &pp->win[seq % ep->win];
            if ((x = s->done_x)) {
                s->done_x = NULL;
                up->complete(up->core, x, err);
            }
        }
        pp->snd_una = pp->snd_nxt;
        pp->sacked_n = 0;
    }
    cvia__prov_fail_list(up, w, err, 0);
    for (uint32_t i = 0; pp->ooo && i < ep->win; i++) {
        free(pp->ooo[i]);
        pp->ooo[i] = NULL;
    }
    pp->ooo_count = 0;
    up->peer_lost(up->core, peer, err);
}
