/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The provider interface of the dgram engine, shared by udp and eth: open
 * (link, addresses, configuration), connect (learn peers, size segments),
 * progress, teardown. Each provider is this with its own link. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <corevia/corevia.h>
#include "boot/boot.h"
#include "prov/dgram/dgram.h"
#include "util/log.h"
#include "util/clock.h"

#define DG_PAGE 4096u

struct cvia_prov_ep {
    struct dg_ep dg;
};

/* A function of its own, not the inline helper: the window's unit test
 * links the engine with a simulated clock in its place. */
double cvia__dg_now(void)
{
    return cvia__clock_s();
}

static void dg_free(struct dg_ep *ep)
{
    volatile unsigned char *secret = ep->keys.secret;   /* wiped, not optimized away */

    for (size_t i = 0; i < sizeof(ep->keys.secret); i++)
        secret[i] = 0;
    cvia__dg_keys_free(&ep->keys);
    cvia__dg_dyn_free(ep);
    cvia__dg_ep_free(ep);
    free((char *)ep - offsetof(struct cvia_prov_ep, dg));
}

/* The job secret: rank 0 draws it and publishes it through the boot
 * store (the launcher's socket, private to the user, or PMIx's job-private
 * store) with its CVIA_DGRAM_AUTH setting, "<link>.auth.0" = "yes-<hex>" or
 * "no"; every rank with remote peers reads it after the fence. Never in a
 * name, argv, the environment or a log line. */
static int dg_secret_put(struct dg_ep *ep)
{
    char key[64], val[48];
    int rc;

    if (ep->args.rank != 0 || ep->args.size < 2)
        return 0;
    snprintf(key, sizeof(key), "%s.auth.0", ep->link->name);   /* rank 0's (PMIx: by suffix) */
    if (ep->keys.auth) {
        if ((rc = cvia__dg_new_secret(ep->keys.secret))) {
            cvia_error(NET, "%s: drawing the job secret (getrandom): %s", ep->link->name,
                       strerror(-rc));
            return rc;
        }
        memcpy(val, "yes-", 4);
        for (int i = 0; i < 16; i++) {
            val[4 + 2 * i] = "0123456789abcdef"[ep->keys.secret[i] >> 4];
            val[5 + 2 * i] = "0123456789abcdef"[ep->keys.secret[i] & 15];
        }
        val[36] = '\0';
        if ((rc = cvia__dg_keys_derive(&ep->keys)))
            return rc;
    } else {
        snprintf(val, sizeof(val), "no");
    }
    rc = cvia__boot_put(ep->args.boot, key, val);
    explicit_bzero(val, sizeof(val));
    return rc;
}

static int dg_hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int dg_secret_get(struct dg_ep *ep)
{
    char key[64], val[64];
    int rc, theirs;

    if (ep->args.rank == 0)
        return 0;
    snprintf(key, sizeof(key), "%s.auth.0", ep->link->name);   /* rank 0's (PMIx: by suffix) */
    if ((rc = cvia__boot_get(ep->args.boot, key, val, sizeof(val)))) {
        cvia_error(NET, "%s: rank 0 published no job secret", ep->link->name);
        return rc == -ENOENT ? -CVIA_EBOOT : rc;
    }
    theirs = !strncmp(val, "yes-", 4);
    if (theirs != ep->keys.auth) {
        cvia_error(CONF, "CVIA_DGRAM_AUTH=%s on rank %d but %s on rank 0: every rank must "
                   "have the same setting", ep->keys.auth ? "yes" : "no", ep->args.rank,
                   theirs ? "yes" : "no");
        rc = -CVIA_ECONFIG;
    } else if (theirs) {
        rc = strlen(val) == 36 ? 0 : -CVIA_EBOOT;
        for (int i = 0; i < 16 && !rc; i++) {
            int hi = dg_hexval(val[4 + 2 * i]), lo = dg_hexval(val[5 + 2 * i]);
            if (hi < 0 || lo < 0)
                rc = -CVIA_EBOOT;
            else
                ep->keys.secret[i] = (unsigned char)(hi << 4 | lo);
        }
        if (rc)
            cvia_error(NET, "%s: the job secret from rank 0 is malformed", ep->link->name);
        else
            rc = cvia__dg_keys_derive(&ep->keys);
    } else if (strcmp(val, "no")) {
        cvia_error(NET, "%s: rank 0's CVIA_DGRAM_AUTH setting is unreadable", ep->link->name);
        rc = -CVIA_EBOOT;
    }
    explicit_bzero(val, sizeof(val));
    return rc;
}

int cvia__dg_open(const struct cvia_prov_args *args, const struct dg_link_ops *link,
                  struct cvia_prov_ep **ep_p)
{
    struct cvia_prov_ep *pe = calloc(1, sizeof(*pe));
    struct dg_ep *ep = &pe->dg;
    char key[64], addr[512];
    int rc;

    if (!pe)
        return -ENOMEM;
    ep->args = *args;
    ep->link = link;
    ep->keys.job = cvia__dg_job_key(args->jobid);
    cvia_mlock_init(&ep->qlock);
    cvia_mlock_init(&ep->busy);
    if ((rc = cvia__param_load(&cvia__dgram_param_table, &ep->cfg)))
        goto err;
    if (ep->cfg.faults[0]) {
        if (cvia__dg_faults_parse(ep->cfg.faults, &ep->faults)) {
            cvia_error(CONF, "CVIA_DGRAM_FAULTS=%s: expected drop=P,dup=P,reorder=P,corrupt=P "
                       "(P in [0,1]) and seed=N, comma-separated", ep->cfg.faults);
            rc = -CVIA_ECONFIG;
            goto err;
        }
        ep->faults.rng ^= (uint64_t)args->rank * 0x9e3779b97f4a7c15ull;
        ep->has_faults = 1;
        if (ep->faults.corrupt > 0)
            ep->cfg.csum_payload = 1;   /* the hook corrupts past the link's check */
    }
    ep->keys.auth = ep->cfg.auth;
    if (args->size > DG_MAX_RANKS) {
        cvia_error(NET, "%s: %d ranks; the datagram header carries ranks below %d",
                   link->name, args->size, DG_MAX_RANKS);
        rc = -CVIA_ECONFIG;
        goto err;
    }
    /* launcher-free: keys from this process's nonce (dgram_dyn.c); in a
     * job: the job's secret, drawn by rank 0 */
    if ((rc = args->dynamic ? cvia__dg_dyn_open(ep) : dg_secret_put(ep)))
        goto err;
    if ((rc = cvia__dg_ep_alloc(ep)))
        goto err;
    if ((rc = link->open(ep, addr, sizeof(addr))))
        goto err;
    snprintf(key, sizeof(key), "%s.%d", link->name, args->rank);
    if ((rc = cvia__boot_put(args->boot, key, addr))) {
        link->close(ep);
        goto err;
    }
    *ep_p = pe;
    return 0;
err:
    dg_free(ep);
    return rc;
}

/* Segment size: CVIA_DGRAM_SEGMENT, or the largest page multiple that
 * fits the link (all of it when a page does not). */
static int dg_size(struct dg_ep *ep)
{
    size_t room = ep->link->room(ep), fit;

    if (room <= sizeof(struct dg_hdr) + sizeof(struct dg_ext)) {
        cvia_error(NET, "%s: the link carries only %zu bytes per datagram", ep->link->name, room);
        return -CVIA_ECONFIG;
    }
    fit = room - sizeof(struct dg_hdr);
    if (fit > 65000)
        fit = 65000;
    if (ep->cfg.segment) {
        if (ep->cfg.segment > fit || ep->cfg.segment <= sizeof(struct dg_ext)) {
            cvia_error(CONF, "CVIA_DGRAM_SEGMENT=%zu does not fit this link: %zu bytes at "
                       "most (MTU less %zu bytes of headers)", ep->cfg.segment, fit,
                       sizeof(struct dg_hdr));
            return -CVIA_ECONFIG;
        }
        ep->seg = ep->cfg.segment;
    } else if (ep->cfg.cut != DG_CUT_FILL && fit >= DG_PAGE) {
        ep->seg = fit & ~(size_t)(DG_PAGE - 1);
    } else {
        ep->seg = fit;
    }
    return cvia__dg_ep_segment(ep, ep->seg);
}

static int dg_connect(struct cvia_prov_ep *pe)
{
    struct dg_ep *ep = &pe->dg;
    int rc;

    if (ep->dyn)   /* peers come later (cvia__dg_dyn_connect, HELLO) */
        return dg_size(ep);
    if (!ep->nremote)
        return 0;
    if ((rc = dg_secret_get(ep)))
        return rc;
    if ((rc = dg_size(ep)))
        return rc;
    ep->now = cvia__dg_now();
    for (int i = 0; i < ep->nremote; i++) {
        int peer = ep->remote[i];
        char key[64], addr[512];
        snprintf(key, sizeof(key), "%s.%d", ep->link->name, peer);
        if ((rc = cvia__boot_get(ep->args.boot, key, addr, sizeof(addr)))) {
            cvia_error(NET, "%s: rank %d published no address", ep->link->name, peer);
            return rc == -ENOENT ? -CVIA_EBOOT : rc;
        }
        if ((rc = ep->link->attach(ep, peer, addr)))
            return rc;
        if ((rc = cvia__dg_peer_alloc(ep, &ep->peers[peer])))
            return rc;
    }
    return 0;
}

static int dg_ready(struct cvia_prov_ep *pe)
{
    (void)pe;
    return 0;
}

static void dg_print_stats(struct dg_ep *ep)
{
    const struct dg_stats *s = &ep->st;

    fprintf(stderr, "corevia[%d] %s stats: segment %zu window %u tx %llu rx %llu retx %llu "
            "acks %llu dup %llu ooo %llu corrupt %llu foreign %llu forged %llu format %llu "
            "stale %llu faults %llu other %llu rx_calls %llu tx_calls %llu fretx %llu rtos %llu undos %llu replays %llu waits %llu\n",
            ep->args.rank,
            ep->link->name, ep->seg, ep->win,
            (unsigned long long)s->tx, (unsigned long long)s->rx, (unsigned long long)s->retx,
            (unsigned long long)s->acks, (unsigned long long)s->dups,
            (unsigned long long)s->ooo, (unsigned long long)s->corrupt,
            (unsigned long long)s->foreign, (unsigned long long)s->forged,
            (unsigned long long)s->format,
            (unsigned long long)s->stale, (unsigned long long)s->faults,
            (unsigned long long)s->other, (unsigned long long)s->rx_calls,
            (unsigned long long)s->tx_calls, (unsigned long long)s->fretx,
            (unsigned long long)s->rtos, (unsigned long long)s->undos,
            (unsigned long long)s->replays, (unsigned long long)s->waits);
}

static int dg_close(struct cvia_prov_ep *pe, int clean)
{
    struct dg_ep *ep;

    if (!pe)
        return 0;
    ep = &pe->dg;
    if (clean && ep->nremote && ep->scratch && cvia__dg_send_bye(ep))
        cvia_warn(NET, "%s: not every peer acknowledged this rank's last data and goodbye "
                  "within the finalize bound", ep->link->name);
    if (ep->cfg.stats)
        dg_print_stats(ep);
    ep->link->close(ep);
    dg_free(ep);
    return 0;
}

static int dg_reachable(struct cvia_prov_ep *pe, int peer)
{
    struct dg_ep *ep = &pe->dg;

    return peer >= 0 && peer < ep->args.size && ep->peers[peer].remote &&
           ep->peers[peer].win && !ep->peers[peer].gone;
}

static int dg_send(struct cvia_prov_ep *pe, struct cvia_xfer *x)
{
    return cvia__dg_send(&pe->dg, x);
}

static int dg_write(struct cvia_prov_ep *pe, struct cvia_xfer *x)
{
    return cvia__dg_rma(&pe->dg, x, DG_RMAW);
}

static int dg_read(struct cvia_prov_ep *pe, struct cvia_xfer *x)
{
    return cvia__dg_rma(&pe->dg, x, DG_RMAR);
}

/* One pass of the engine (busy held): receive, send, timers, flush.
 * @wait: the first receive may block in the kernel (dg_wait; the gap
 * after a send does not apply to it). */
static int dg_pass(struct dg_ep *ep, int wait)
{
    int events;

    ep->now = cvia__dg_now();
    ep->rx_block = ep->rx_now = wait;
    events = cvia__dg_rx(ep);
    ep->rx_block = ep->rx_now = 0;
    if (wait)
        ep->now = cvia__dg_now();   /* after the sleep */
    events += cvia__dg_tx(ep);
    events += cvia__dg_timers(ep);
    cvia__dg_flush(ep);
    CVIA_HINT_STORE(ep->idle, events ? 0 : CVIA_HINT_LOAD(ep->idle) + 1);
    return events;
}

static int dg_progress(struct cvia_prov_ep *pe)
{
    struct dg_ep *ep = &pe->dg;
    int events = 0, pending = 0;

    if ((!CVIA_HINT_LOAD(ep->nremote) && !ep->dyn) || !cvia_mlock_trylock(&ep->busy))
        return 0;
    for (int i = 0; i < ep->nremote && !pending; i++) {
        struct dg_peer *pp = &ep->peers[ep->remote[i]];
        pending = CVIA_HINT_LOAD(pp->q_head) || pp->cur || pp->snd_una != pp->snd_nxt || pp->ack_owed ||
                  pp->rx_active || CVIA_HINT_LOAD(pp->waiting);
    }
    /* nothing moving for a while: look at the link every 16th call, so the
     * shm traffic of the same job does not pay a system call per progress */
    if (!pending) {
        unsigned idle = CVIA_HINT_LOAD(ep->idle);
        if (idle > 64 && (idle & 15)) {
            CVIA_HINT_STORE(ep->idle, idle + 1);
            cvia_mlock_unlock(&ep->busy);
            return 0;
        }
    }
    events = dg_pass(ep, 0);
    cvia_mlock_unlock(&ep->busy);
    return events;
}

/* How long a waiter may sleep before a timer of the engine is due (a
 * retransmission, a delayed ACK, a silent peer's probe); then the next
 * progress reads the link at once (not every 16th call). */
static double dg_idle(struct cvia_prov_ep *pe)
{
    struct dg_ep *ep = &pe->dg;
    double next;

    if (!cvia_mlock_trylock(&ep->busy))
        return 1e-3;   /* another thread is moving it */
    next = cvia__dg_next_timer(ep, cvia__dg_now());
    CVIA_HINT_STORE(ep->idle, 0);
    cvia_mlock_unlock(&ep->busy);
    return next;
}

/* prov op wait: progress whose first receive blocks in the kernel, where
 * the core would yield and then receive. Only when nothing is due before
 * input can bring it (no ACK owed, nothing to send): a timer that falls
 * due meanwhile (a retransmission) waits for the link's bound, a tick. */
static int dg_wait(struct cvia_prov_ep *pe)
{
    struct dg_ep *ep = &pe->dg;
    int events, ok = ep->rx_wait;

    if (!ok || !cvia_mlock_trylock(&ep->busy))
        return -EAGAIN;
    for (int i = 0; i < ep->nremote && ok; i++) {
        const struct dg_peer *pp = &ep->peers[ep->remote[i]];
        ok = !pp->ack_owed && !pp->gone;
    }
    if (!ok || cvia__dg_next_timer(ep, cvia__dg_now()) <= 0) {
        cvia_mlock_unlock(&ep->busy);
        return -EAGAIN;
    }
    ep->st.waits++;
    events = dg_pass(ep, 1);
    cvia_mlock_unlock(&ep->busy);
    return events;
}

static int dg_check_peers(struct cvia_prov_ep *pe)
{
    struct dg_ep *ep = &pe->dg;

    CVIA_HINT_STORE(ep->idle, 0);
    if (ep->dyn && cvia_mlock_trylock(&ep->busy)) {   /* nobody else says who died */
        ep->now = cvia__dg_now();
        cvia__dg_dyn_probe(ep);
        cvia__dg_flush(ep);
        cvia_mlock_unlock(&ep->busy);
    }
    return dg_progress(pe);
}

static void dg_gone(struct cvia_prov_ep *pe, int peer, int err)
{
    struct dg_ep *ep = &pe->dg;

    cvia_mlock_lock(&ep->busy);
    ep->now = cvia__dg_now();
    ep->rx_now = 1;
    cvia__dg_rx(ep);   /* what it sent before dying is delivered first */
    ep->rx_now = 0;
    if (ep->peers[peer].remote)
        cvia__dg_peer_gone(ep, peer, err);
    cvia_mlock_unlock(&ep->busy);
}

static void dg_peer_info(struct cvia_prov_ep *pe, int peer, char *buf, size_t cap)
{
    struct dg_ep *ep = &pe->dg;
    char link[160];

    ep->link->describe(ep, link, sizeof(link));
    snprintf(buf, cap, "%s: %zu-byte segments (CVIA_DGRAM_CUT=%s), window %u, inject up to %zu B, "
             "%s; %s", ep->link->name, ep->seg,
             ep->cfg.cut == DG_CUT_PAGE ? "page" : ep->cfg.cut == DG_CUT_MVIA ? "mvia" : "fill",
             ep->win, ep->cfg.inject,
             ep->keys.auth ? "NH+SipHash-2-4 MAC over all (job secret)" :
             ep->cfg.csum_payload ? "CRC-32C over all" : "CRC-32C over headers", link);
    (void)peer;
}

static int dg_wait_fd(struct cvia_prov_ep *pe)
{
    struct dg_ep *ep = &pe->dg;

    return CVIA_HINT_LOAD(ep->nremote) || ep->dyn ? ep->link->fd(ep) : -1;
}

static int dg_mr_noop(struct cvia_prov_ep *pe, uint64_t key, const void *addr, size_t len,
                      unsigned access)
{
    (void)pe, (void)key, (void)addr, (void)len, (void)access;
    return 0;   /* accesses are checked against the core's table on arrival */
}

static int dg_mr_dereg_noop(struct cvia_prov_ep *pe, uint64_t key)
{
    (void)pe, (void)key;
    return 0;
}

static int dg_no_rndv(struct cvia_prov_ep *pe, struct cvia_xfer *x)
{
    (void)pe, (void)x;
    return -ENOSYS;   /* every message carries its bytes */
}

static int dg_dyn_addr(struct cvia_prov_ep *pe, void *buf, size_t cap)
{
    return cvia__dg_dyn_addr(&pe->dg, buf, cap);
}

static int dg_dyn_connect(struct cvia_prov_ep *pe, const void *addr, size_t len, int *peer)
{
    return cvia__dg_dyn_connect(&pe->dg, addr, len, peer);
}

#define DG_PROV_OPS(open_fn, describe_fn, ...) {                               \
    .size = sizeof(struct cvia_prov_ops), .open = open_fn, .connect = dg_connect, \
    .ready = dg_ready, .close = dg_close, .reachable = dg_reachable,           \
    .send = dg_send, .progress = dg_progress, .check_peers = dg_check_peers,   \
    .peer_gone = dg_gone, .describe = describe_fn,                             \
    .cleanup = cvia__prov_no_cleanup, .rndv_start = dg_no_rndv,                \
    .mr_reg = dg_mr_noop, .mr_dereg = dg_mr_dereg_noop, .write = dg_write,     \
    .read = dg_read, .peer_info = dg_peer_info, .wait_fd = dg_wait_fd, .idle = dg_idle,   \
    .wait = dg_wait,                                                           \
    __VA_ARGS__ }

extern const struct dg_link_ops cvia__udp_link;

static int udp_open(const struct cvia_prov_args *args, struct cvia_prov_ep **ep_p)
{
    return cvia__dg_open(args, &cvia__udp_link, ep_p);
}

static void udp_describe(char *buf, size_t cap)
{
    snprintf(buf, cap, "available: ranks on other hosts (CVIA_NET=udp), reliable segmented "
             "datagrams over UDP");
}

const struct cvia_prov_ops cvia__udp_ops = DG_PROV_OPS(udp_open, udp_describe,
                                                       .dyn_addr = dg_dyn_addr,
                                                       .dyn_connect = dg_dyn_connect);

extern const struct dg_link_ops cvia__eth_link;

static int eth_open(const struct cvia_prov_args *args, struct cvia_prov_ep **ep_p)
{
    return cvia__dg_open(args, &cvia__eth_link, ep_p);
}

static void eth_describe(char *buf, size_t cap)
{
    snprintf(buf, cap, "available: ranks on other hosts (CVIA_NET=eth), reliable segmented "
             "datagrams in raw Ethernet frames (AF_PACKET)");
}

const struct cvia_prov_ops cvia__eth_ops = DG_PROV_OPS(eth_open, eth_describe,
                                                       .dyn_addr = dg_dyn_addr,
                                                       .dyn_connect = dg_dyn_connect);

#if CVIA_HAVE_XDP
extern const struct dg_link_ops cvia__xdp_link;

static int xdp_open(const struct cvia_prov_args *args, struct cvia_prov_ep **ep_p)
{
    return cvia__dg_open(args, &cvia__xdp_link, ep_p);
}

static void xdp_describe(char *buf, size_t cap)
{
    snprintf(buf, cap, "available: ranks on other hosts (CVIA_NET=xdp), reliable segmented "
             "datagrams in raw Ethernet frames (AF_XDP, eth's AF_PACKET where refused)");
}

const struct cvia_prov_ops cvia__xdp_ops = DG_PROV_OPS(xdp_open, xdp_describe,
                                                       .dyn_addr = dg_dyn_addr,
                                                       .dyn_connect = dg_dyn_connect);
#endif
