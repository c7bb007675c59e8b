/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Launcher-free peers on other hosts (issue 14, item 3): the dgram engine
 * in a job of one whose peers come by cvia_connect or by connecting to it.
 *
 * Keys. A process's address carries a 128-bit nonce (the core's, from
 * getrandom). From it, with SipHash-2-4 keyed by the nonce over a label:
 * its MAC secret (16 bytes), its public identity (the job key: the job tag
 * its socket filter admits, 64 bits), and an encryption key (16 bytes).
 * Every frame TO a process is sealed with that process's MAC secret, and
 * a process checks every frame with its own: only a process that was
 * handed the address (or was told the secret by its owner, below) can get
 * a frame accepted.
 *
 * Connecting X -> Y (X was handed Y's address):
 *   X takes an index ix for Y, and sends HELLO {X's identity, link
 *   address, ix, X's secret encrypted under Y's key, cookie echo 0}.
 *   Y (the MAC checks: the sender knows Y's address) does not know X: it
 *   answers CHAL {a cookie: SipHash of X's identity, ix, link address and
 *   a 16-second epoch under a random key of Y's}, sealed with X's secret,
 *   to the link address the HELLO names; it keeps no state.
 *   X sends HELLO again with the cookie; Y takes an index iy, sets the
 *   peer up (window, keys) and answers HACK {iy}. X sets up its side.
 * The cookie is what makes a HELLO recorded earlier (another incarnation
 * of X, whose nonce Y cannot tell from a live one's) useless after two
 * epochs, and a HELLO naming someone else's link address useless: only
 * the owner of that address sees the CHAL. Afterwards each side's frames
 * carry, as their source, the index the RECEIVER has for the sender (ridx,
 * learnt from HELLO or HACK) and 0 as destination, so the receiver finds
 * the peer as in a launcher's job; their link source must be the peer's.
 *
 * Crossing connects (each inserts the other at once): each side has one
 * CONNECTING entry for the other's identity; a HELLO from a peer we are
 * connecting to completes our entry at once (we were handed its address:
 * no cookie needed) and is answered HACK. Either order ends with one
 * index per side.
 *
 * A peer that BYEs (closed corevia) or stops answering (probes from a
 * waiter, CVIA_DGRAM_PEER_TIMEOUT) is failed; its index is never reused.
 * Runs with ep->busy held, but cvia__dg_dyn_connect, which takes it. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "prov/dgram/dgram.h"
#include "util/log.h"
#include "util/siphash.h"

#define DG_HELLO_GAP0   0.02   /* first HELLO resend, then doubling */
#define DG_HELLO_GAPMAX 0.5
#define DG_COOKIE_EPOCH 16.0   /* seconds: a CHAL's cookie stays good 16-32 s */

enum {   /* key derivation labels */
    KDF_MAC0 = 0x636d6163306b6476ull, KDF_MAC1, KDF_JOB, KDF_ENC0, KDF_ENC1,
};

static uint64_t kdf(const uint64_t nonce[2], uint64_t label)
{
    unsigned char key[16];
    uint64_t v;

    memcpy(key, nonce, 16);
    v = cvia__siphash24(key, &label, sizeof(label));
    explicit_bzero(key, sizeof(key));
    return v;
}

/* What a nonce gives: the MAC secret, the identity, the HELLO key. */
static void dyn_keys(const uint64_t nonce[2], unsigned char secret[16], uint64_t *id,
                     unsigned char enc[16])
{
    uint64_t w[2];

    w[0] = kdf(nonce, KDF_MAC0);
    w[1] = kdf(nonce, KDF_MAC1);
    memcpy(secret, w, 16);
    *id = kdf(nonce, KDF_JOB) | 1;   /* never 0: 0 is no job key */
    w[0] = kdf(nonce, KDF_ENC0);
    w[1] = kdf(nonce, KDF_ENC1);
    memcpy(enc, w, 16);
    explicit_bzero(w, sizeof(w));
}

/* 16 bytes of keystream for @salt under @enc: SipHash as a PRF in counter
 * mode. The plaintext is always the sender's own secret, so a salt used
 * twice reveals nothing new. */
static void keystream(const unsigned char enc[16], uint64_t salt, unsigned char out[16])
{
    uint64_t in[2] = { salt, 0 }, w[2];

    w[0] = cvia__siphash24(enc, in, sizeof(in));
    in[1] = 1;
    w[1] = cvia__siphash24(enc, in, sizeof(in));
    memcpy(out, w, 16);
}

static uint64_t cookie_of(const struct dg_ep *ep, const struct dg_hello *hl, uint64_t epoch)
{
    uint64_t in[4];

    in[0] = hl->id;
    in[1] = hl->idx;
    memcpy(&in[2], hl->net, 8);
    in[3] = epoch;
    return cvia__siphash24(ep->cookie, in, sizeof(in)) | 1;   /* 0: no cookie */
}

static void ctl_in(struct dg_ep *ep, const struct dg_hdr *h, const uint8_t *payload,
                   size_t plen, const struct dg_in *in);

static struct cvia_prov_ep *prov_ep(struct dg_ep *ep)
{
    return (struct cvia_prov_ep *)(void *)ep;   /* the provider's ep begins with it */
}

int cvia__dg_dyn_open(struct dg_ep *ep)
{
    int rc;

    if (!ep->link->pack || !ep->link->unpack) {
        cvia_error(NET, "%s: no launcher-free peers over this link", ep->link->name);
        return -CVIA_ENOPROV;
    }
    if (!(ep->dyn = calloc((size_t)ep->args.size, sizeof(*ep->dyn))))
        return -ENOMEM;
    dyn_keys(ep->args.nonce, ep->keys.secret, &ep->keys.job, ep->enc);
    if ((rc = cvia__dg_new_secret(ep->cookie))) {
        cvia_error(NET, "%s: drawing the cookie key (getrandom): %s", ep->link->name,
                   strerror(-rc));
        return rc;
    }
    if (ep->keys.auth && (rc = cvia__dg_keys_derive(&ep->keys)))
        return rc;
    ep->ctl_in = ctl_in;
    return 0;
}

void cvia__dg_dyn_free(struct dg_ep *ep)
{
    if (!ep->dyn)
        return;
    for (int j = 0; j < ep->args.size; j++) {
        cvia__dg_keys_free(&ep->dyn[j].tx);
        explicit_bzero(&ep->dyn[j], sizeof(ep->dyn[j]));
    }
    free(ep->dyn);
    ep->dyn = NULL;
    explicit_bzero(ep->enc, sizeof(ep->enc));
    explicit_bzero(ep->cookie, sizeof(ep->cookie));
}

static void pack_net(struct dg_ep *ep, uint8_t net[8])
{
    ep->link->pack(ep, net);
    net[1] = ep->keys.auth ? DG_NET_AUTH : 0;
}

int cvia__dg_dyn_addr(struct dg_ep *ep, void *buf, size_t cap)
{
    uint8_t net[8];

    if (cap < sizeof(net))
        return -ENOBUFS;
    pack_net(ep, net);
    memcpy(buf, net, sizeof(net));
    return (int)sizeof(net);
}

/* A HELLO, CHAL or HACK, sealed with @k, to the link address in @slot's
 * place (slot 0, ours, never a remote peer: a reply to a sender not yet
 * a peer). */
static void ctl_send(struct dg_ep *ep, int slot, uint8_t type, const struct dg_keys *k,
                     struct dg_hello *hl)
{
    struct dg_hdr h;
    struct dg_out o;

    memset(&h, 0, sizeof(h));
    h.type = type;
    h.flags = k->auth ? DG_F_AUTH : 0;
    h.job = dg_jobtag(k->job);
    o.peer = slot;
    o.iovcnt = 2;
    o.iov[0].iov_base = &h;
    o.iov[0].iov_len = sizeof(h);
    o.iov[1].iov_base = hl;
    o.iov[1].iov_len = sizeof(*hl);
    cvia__dg_seal(&h, o.iov, 2, 2, k, 0);   /* no sequence yet */
    if (ep->link->send(ep, &o, 1) == 1)
        ep->st.tx++;
}

static void send_hello(struct dg_ep *ep, int j)
{
    static _Atomic uint64_t salts;
    struct dg_dyn *d = &ep->dyn[j];
    struct dg_hello hl;
    unsigned char ks[16];

    memset(&hl, 0, sizeof(hl));
    hl.id = ep->keys.job;
    pack_net(ep, hl.net);
    hl.pid = (int32_t)getpid();
    hl.idx = (uint32_t)j;
    hl.echo = d->echo;
    hl.salt = (uint64_t)(ep->now * 1e9) ^ (atomic_fetch_add(&salts, 1) << 40);
    keystream(d->enc, hl.salt, ks);
    for (int i = 0; i < 16; i++)
        hl.key[i] = ep->keys.secret[i] ^ ks[i];
    ctl_send(ep, j, DG_HELLO, &d->tx, &hl);
    explicit_bzero(&hl, sizeof(hl));
    explicit_bzero(ks, sizeof(ks));
    d->hello_at = ep->now;
}

static void send_hack(struct dg_ep *ep, int j)
{
    struct dg_hello hl;

    memset(&hl, 0, sizeof(hl));
    hl.id = ep->keys.job;
    pack_net(ep, hl.net);
    hl.pid = (int32_t)getpid();
    hl.idx = (uint32_t)j;
    hl.your_idx = ep->dyn[j].ridx;
    ctl_send(ep, j, DG_HACK, &ep->dyn[j].tx, &hl);
}

/* The peer at @j is complete: its window, and in the engine's loops. */
static int make_up(struct dg_ep *ep, int j)
{
    struct dg_peer *pp = &ep->peers[j];
    int rc;

    if ((rc = cvia__dg_peer_alloc(ep, pp))) {
        cvia_error(NET, "%s: no memory for peer %d's window", ep->link->name, j);
        return rc;
    }
    pp->remote = 1;
    ep->dyn[j].state = DG_DYN_UP;
    ep->remote[ep->nremote] = j;
    CVIA_HINT_STORE(ep->nremote, ep->nremote + 1);   /* progress peeks without busy */
    explicit_bzero(ep->dyn[j].enc, sizeof(ep->dyn[j].enc));
    return 0;
}

/* The peer's keys from its secret (@secret) and identity. */
static int set_tx_keys(struct dg_ep *ep, struct dg_dyn *d, const unsigned char secret[16],
                       uint64_t id)
{
    cvia__dg_keys_free(&d->tx);
    memcpy(d->tx.secret, secret, 16);
    d->tx.job = id;
    d->tx.auth = ep->keys.auth;
    return d->tx.auth ? cvia__dg_keys_derive(&d->tx) : 0;
}

static int find_id(const struct dg_ep *ep, uint64_t id)
{
    for (int j = 1; j < ep->args.size; j++)
        if (ep->dyn[j].state != DG_DYN_NONE && ep->dyn[j].id == id)
            return j;
    return -1;
}

static void on_hello(struct dg_ep *ep, const struct dg_hello *hl, const struct dg_in *in)
{
    const struct cvia_prov_upcalls *up = ep->args.up;
    unsigned char secret[16], ks[16];
    char addr[64];
    uint64_t epoch = (uint64_t)(ep->now / DG_COOKIE_EPOCH);
    int j;

    (void)in;   /* where it came from does not matter: replies go to hl->net */
    if (ep->link->unpack(hl->net, addr, sizeof(addr)) < 0 ||
        !(hl->net[1] & DG_NET_AUTH) != !ep->keys.auth || hl->idx == 0 ||
        hl->idx >= DG_MAX_RANKS || hl->id == ep->keys.job) {
        ep->st.format++;
        return;
    }
    keystream(ep->enc, hl->salt, ks);
    for (int i = 0; i < 16; i++)
        secret[i] = hl->key[i] ^ ks[i];
    explicit_bzero(ks, sizeof(ks));
    if ((j = find_id(ep, hl->id)) >= 0) {
        struct dg_dyn *d = &ep->dyn[j];
        if (ep->peers[j].gone || memcmp(d->tx.secret, secret, 16)) {
            ep->st.replays++;   /* failed already; or not the secret its address gives */
            goto out;
        }
        if (d->state == DG_DYN_CONNECTING || d->state == DG_DYN_FAILED) {
            /* we connect to it too (crossing), or did and gave up */
            d->ridx = hl->idx;
            if (make_up(ep, j))
                goto out;
        } else if (d->ridx != hl->idx) {
            ep->st.replays++;   /* an index it gave up: not ours to answer */
            goto out;
        }
        send_hack(ep, j);   /* first time, or our HACK was lost */
        goto out;
    }
    if (hl->echo != cookie_of(ep, hl, epoch) && hl->echo != cookie_of(ep, hl, epoch - 1)) {
        /* prove you are there: the cookie goes to the address the HELLO
         * names, sealed with the secret it carries; nothing is kept */
        struct dg_keys k;
        struct dg_hello ch;
        memset(&k, 0, sizeof(k));
        memcpy(k.secret, secret, 16);
        k.job = hl->id;
        k.auth = ep->keys.auth;
        if ((k.auth && cvia__dg_keys_derive(&k)) || ep->link->attach(ep, 0, addr)) {
            cvia__dg_keys_free(&k);
            goto out;
        }
        memset(&ch, 0, sizeof(ch));
        ch.id = ep->keys.job;
        pack_net(ep, ch.net);
        ch.pid = (int32_t)getpid();
        ch.your_idx = hl->idx;
        ch.echo = cookie_of(ep, hl, epoch);
        ctl_send(ep, 0, DG_CHAL, &k, &ch);
        cvia__dg_keys_free(&k);
        explicit_bzero(&k, sizeof(k));
        goto out;
    }
    /* a new peer that proved its address: it arrives before the
     * application inserts it (RDM), as on shm */
    if ((j = up->peer_new(up->core, prov_ep(ep))) < 0) {
        cvia_warn(NET, "%s: refused pid %d on another host: this process's peer indices "
                  "(4 x CVIA_MAX_PEERS over its life) are used up", ep->link->name,
                  (int)hl->pid);
        goto out;
    }
    struct dg_dyn *d = &ep->dyn[j];
    d->id = hl->id;
    d->ridx = hl->idx;
    d->pid = hl->pid;
    memcpy(d->net, hl->net, sizeof(d->net));
    if (set_tx_keys(ep, d, secret, hl->id) || ep->link->attach(ep, j, addr) ||
        (d->state = DG_DYN_CONNECTING, make_up(ep, j))) {
        d->state = DG_DYN_NONE;
        up->peer_unused(up->core, j);
        goto out;
    }
    cvia_info(NET, "%s: peer %d is pid %d at %s (it connected)", ep->link->name, j,
              (int)hl->pid, addr);
    send_hack(ep, j);
out:
    explicit_bzero(secret, sizeof(secret));
}

static void ctl_in(struct dg_ep *ep, const struct dg_hdr *h, const uint8_t *payload,
                   size_t plen, const struct dg_in *in)
{
    struct dg_hello hl;
    struct dg_dyn *d;
    uint32_t j;

    if (plen != sizeof(hl)) {
        ep->st.format++;
        return;
    }
    memcpy(&hl, payload, sizeof(hl));
    if (h->type == DG_HELLO) {
        on_hello(ep, &hl, in);
        explicit_bzero(&hl, sizeof(hl));
        return;
    }
    /* CHAL, HACK: answers to our HELLO, from where we sent it */
    j = hl.your_idx;
    if (j == 0 || j >= (uint32_t)ep->args.size || ep->dyn[j].id != hl.id ||
        !(ep->dyn[j].state == DG_DYN_CONNECTING ||
          (ep->dyn[j].state == DG_DYN_FAILED && h->type == DG_HACK)) ||
        (in && !ep->link->from_peer(ep, (int)j, in))) {
        ep->st.foreign++;   /* not for a connection of ours in progress */
        return;
    }
    d = &ep->dyn[j];
    if (h->type == DG_CHAL) {
        d->echo = hl.echo;
        send_hello(ep, (int)j);
    } else if (hl.idx && hl.idx < DG_MAX_RANKS) {
        d->ridx = hl.idx;
        make_up(ep, (int)j);
    }
}

int cvia__dg_dyn_connect(struct dg_ep *ep, const void *addr, size_t len, int *peer)
{
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_dyn_addr a;
    unsigned char secret[16], enc[16];
    char text[64];
    uint64_t id;
    double deadline;
    int j, rc = 0, owner = 0;

    if (len == CVIA_DYN_ADDR_HOST) {
        cvia_error(NET, "%s: the peer on another host has no network transport up (start "
                   "it with CVIA_NET=%s)", ep->link->name, ep->link->name);
        return -CVIA_ENOPROV;
    }
    if (len != sizeof(a))
        return -EINVAL;
    memcpy(&a, addr, sizeof(a));
    if (ep->link->unpack(a.net, text, sizeof(text)) < 0) {
        cvia_error(NET, "%s: the address of pid %d is for another network transport (its "
                   "CVIA_NET differs)", ep->link->name, (int)a.pid);
        return -CVIA_ENOPROV;
    }
    if (!(a.net[1] & DG_NET_AUTH) != !ep->keys.auth) {
        cvia_error(CONF, "CVIA_DGRAM_AUTH=%s here but %s at pid %d: both must have the same "
                   "setting", ep->keys.auth ? "yes" : "no", ep->keys.auth ? "no" : "yes",
                   (int)a.pid);
        return -CVIA_ECONFIG;
    }
    dyn_keys(a.nonce, secret, &id, enc);
    explicit_bzero(&a.nonce, sizeof(a.nonce));
    if (id == ep->keys.job) {
        explicit_bzero(secret, sizeof(secret));
        return -EINVAL;   /* our own nonce on another host: not a real address */
    }
    cvia_mlock_lock(&ep->busy);
    if ((j = find_id(ep, id)) < 0) {
        if ((j = up->peer_new(up->core, prov_ep(ep))) < 0) {
            cvia_mlock_unlock(&ep->busy);
            cvia_error(NET, "%s: cannot connect to pid %d: this process's peer indices "
                       "(4 x CVIA_MAX_PEERS over its life) are used up", ep->link->name,
                       (int)a.pid);
            rc = -ENOSPC;
            goto out;
        }
        struct dg_dyn *d = &ep->dyn[j];
        owner = 1;
        d->id = id;
        d->pid = a.pid;
        memcpy(d->net, a.net, sizeof(d->net));
        memcpy(d->enc, enc, sizeof(enc));
        d->echo = 0;
        d->hello_at = 0;
        d->hello_gap = DG_HELLO_GAP0;
        if ((rc = set_tx_keys(ep, d, secret, id)) || (rc = ep->link->attach(ep, j, text))) {
            cvia_mlock_unlock(&ep->busy);
            up->peer_unused(up->core, j);
            goto out;
        }
        d->state = DG_DYN_CONNECTING;
    } else if (ep->dyn[j].state == DG_DYN_FAILED) {   /* again, with the same index */
        struct dg_dyn *d = &ep->dyn[j];
        owner = 1;
        memcpy(d->enc, enc, sizeof(enc));
        d->echo = 0;
        d->hello_at = 0;
        d->hello_gap = DG_HELLO_GAP0;
        d->state = DG_DYN_CONNECTING;
    }
    cvia_mlock_unlock(&ep->busy);
    deadline = cvia__dg_now() + ep->args.connect_timeout;
    for (;;) {
        struct dg_dyn *d = &ep->dyn[j];
        cvia_mlock_lock(&ep->busy);
        ep->now = cvia__dg_now();
        cvia__dg_rx(ep);   /* CHAL, HACK, a crossing HELLO; other peers' traffic */
        if (d->state == DG_DYN_CONNECTING && ep->now - d->hello_at >= d->hello_gap) {
            if (d->hello_at)
                d->hello_gap = d->hello_gap * 2 < DG_HELLO_GAPMAX ? d->hello_gap * 2
                                                                  : DG_HELLO_GAPMAX;
            send_hello(ep, j);
        }
        cvia__dg_tx(ep);
        cvia__dg_timers(ep);
        cvia__dg_flush(ep);
        if (d->state == DG_DYN_CONNECTING && owner && ep->now > deadline)
            d->state = DG_DYN_FAILED;   /* its index stays reserved for it */
        int state = d->state, gone = ep->peers[j].gone;
        cvia_mlock_unlock(&ep->busy);
        if (gone) {
            rc = -CVIA_ENOPEER;
            break;
        }
        if (state == DG_DYN_UP) {
            *peer = j;
            break;
        }
        if (state == DG_DYN_FAILED) {   /* timed out here or in another thread's wait */
            cvia_error(NET, "%s: pid %d at %s did not answer within CVIA_BOOT_TIMEOUT (a "
                       "wrong or stale address, or it does not call into corevia)",
                       ep->link->name, (int)d->pid, text);
            rc = -ETIMEDOUT;
            break;
        }
        sched_yield();
    }
out:
    explicit_bzero(secret, sizeof(secret));
    explicit_bzero(enc, sizeof(enc));
    return rc;
}

/* Called by a waiter now and then (check_peers): a peer silent for a
 * quarter of CVIA_DGRAM_PEER_TIMEOUT is probed (PING, answered by its
 * progress); one that stays silent for all of it, probed for half of it
 * at least, is dead. A launcher's job learns of deaths from the launcher;
 * here nobody else would tell. */
void cvia__dg_dyn_probe(struct dg_ep *ep)
{
    const double t = ep->cfg.peer_timeout;

    for (int i = 0; i < ep->nremote; i++) {
        int peer = ep->remote[i];
        struct dg_peer *pp = &ep->peers[peer];
        struct dg_dyn *d = &ep->dyn[peer];
        double quiet = ep->now - pp->last_heard;

        if (pp->gone)
            continue;
        if (quiet < t / 4) {
            d->probe_since = 0;
            continue;
        }
        if (!d->probe_since)
            d->probe_since = ep->now;
        if (quiet > t && ep->now - d->probe_since >= t / 2) {
            cvia_error(NET, "%s: peer %d (pid %d) answered no probe for %gs; declaring it "
                       "dead (CVIA_DGRAM_PEER_TIMEOUT)", ep->link->name, peer, (int)d->pid,
                       quiet);
            cvia__dg_peer_gone(ep, peer, -CVIA_ENOPEER);
            continue;
        }
        if (ep->now - pp->pinged_at >= (ep->cfg.rto_max < t / 4 ? ep->cfg.rto_max : t / 4)) {
            pp->pinged_at = ep->now;
            cvia__dg_queue_ack(ep, peer, DG_PING);
        }
    }
}
