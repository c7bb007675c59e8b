/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The process-wide context: init / finalize, progress, the idle back-off
 * with its liveness checks, barrier and the public entry points. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "boot/boot.h"
#include "core/core.h"
#include "core/inbox.h"
#include "util/log.h"
#include "util/param.h"
#include "util/clock.h"

#ifndef CVIA_VERSION_STRING
#define CVIA_VERSION_STRING "0.1.0"
#endif

extern const struct cvia_param_table cvia__core_param_table;

struct cvia_ctx cvia__ctx;
/* The launcher connection cvia_job_info() opened before cvia_init, which
 * cvia_init then takes over. */
static struct cvia_boot *pre_boot;

const char *cvia_version(void)
{
    return CVIA_VERSION_STRING;
}

static __attribute__((noinline)) int progress_all(struct cvia_ctx *c)
{
    int events = 0;

    for (int i = 0; i < c->nprov; i++)
        events += c->prov[i].desc->ops->progress(c->prov[i].ep);
    return events;
}

int cvia__progress(struct cvia_ctx *c)
{
    if (c->nprov == 1)   /* one provider (one host): a jump, no frame */
        return c->prov[0].desc->ops->progress(c->prov[0].ep);
    return progress_all(c);
}

/* Every peer reachable through provider @pi is gone with @err. */
static void fail_peer(struct cvia_ctx *c, int peer, int err)
{
    if (c->peer_lost[peer])
        return;
    int pi = c->peer_prov[peer];
    c->prov[pi].desc->ops->peer_gone(c->prov[pi].ep, peer, err);
    /* providers report through peer_lost; make sure it happened */
    cvia__core_peer_lost(c, peer, err);
}

static void check_liveness(struct cvia_ctx *c)
{
    struct cvia_boot_event ev[16];
    int n;

    while ((n = cvia__boot_poll(c->boot, ev, 16)) > 0) {
        for (int i = 0; i < n; i++) {
            switch (ev[i].kind) {
            case CVIA_BOOT_EV_EXIT:
            case CVIA_BOOT_EV_KILLED:
                if (ev[i].rank >= 0 && ev[i].rank < c->size && ev[i].rank != c->rank) {
                    if (!c->peer_lost[ev[i].rank])
                        cvia_error(CORE, "rank %d %s %d", ev[i].rank,
                                   ev[i].kind == CVIA_BOOT_EV_EXIT ?
                                   "exited without finalizing, status" :
                                   "was killed by signal", ev[i].status);
                    fail_peer(c, ev[i].rank, -CVIA_ENOPEER);
                }
                break;
            case CVIA_BOOT_EV_ABORT:
                if (!c->aborted)
                    cvia_error(CORE, "the launcher is tearing the job down");
                c->aborted = 1;
                for (int p = 0; p < c->size; p++)
                    if (p != c->rank)
                        fail_peer(c, p, -CVIA_EABORT);
                break;
            }
        }
    }
    if (n < 0 && !c->aborted) {
        cvia_error(CORE, "lost the connection to the launcher: %s", cvia_strerror(n));
        c->aborted = 1;
        for (int p = 0; p < c->size; p++)
            if (p != c->rank)
                fail_peer(c, p, -CVIA_EABORT);
    }
    for (int i = 0; i < c->nprov; i++)
        c->prov[i].desc->ops->check_peers(c->prov[i].ep);
}

/* @max_s, or less if the network provider's next timer comes sooner (1 ms
 * where it cannot say); 100 us at least, so that a timer progress cannot
 * move yet (a full socket) is no busy loop. */
static double timer_cut(const struct cvia_prov_ops *ops, struct cvia_prov_ep *ep, double max_s)
{
    double t = ops->idle ? ops->idle(ep) : 1e-3;

    if (t < 1e-4)
        t = 1e-4;
    return t < max_s ? t : max_s;
}

/* Block until there is work, a liveness interval at most: when every
 * peer is on another host, in poll() on the network providers' sockets;
 * when every peer is on this host, on the shm segment's futex (block());
 * with peers of both kinds, on that futex while a helper thread polls the
 * sockets and kicks it (idle_bridge.c). The network provider's next
 * timer (idle()) cuts the sleep short. Without a way to block (no helper
 * thread), nap 50 us. */
static void idle_block(struct cvia_ctx *c)
{
    struct pollfd fds[CVIA_MAX_PROV];
    int who[CVIA_MAX_PROV];
    double max_s = c->cfg.liveness;
    int n = cvia__net_fds(c, fds, who, CVIA_MAX_PROV), shm = -1;

    for (int k = 0; k < n; k++)
        max_s = timer_cut(c->prov[who[k]].desc->ops, c->prov[who[k]].ep, max_s);
    for (int i = 0; i < c->nprov && shm < 0; i++)
        if (c->prov[i].desc->ops->block)
            shm = i;
    int nremote = __atomic_load_n(&c->nremote, __ATOMIC_RELAXED);   /* grows (dynamic) */
    if (n && (c->dynamic ? nremote == cvia__npeers(c) - 1 : nremote == c->size - 1)) {
        struct timespec ts = { (time_t)max_s, (long)((max_s - (double)(time_t)max_s) * 1e9) };
        (void)ppoll(fds, (nfds_t)n, &ts, NULL);
        return;
    }
    if (shm >= 0 && !nremote) {   /* every peer on this host: sleep until one writes */
        c->prov[shm].desc->ops->block(c->prov[shm].ep, max_s, NULL, 0);
        return;
    }
    if (shm >= 0 && n && cvia__bridge_block(c, shm, max_s, &c->kicks, atomic_load(&c->kicks)) >= 0)
        return;
    struct timespec nap = { 0, 50000 };   /* 50 us */
    nanosleep(&nap, NULL);
}

/* The network provider's wait (prov op wait) when every peer is on
 * another host: its events, or -EAGAIN (none can wait now). */
static int net_wait(struct cvia_ctx *c)
{
    int nremote = __atomic_load_n(&c->nremote, __ATOMIC_RELAXED);

    if (c->dynamic ? nremote != cvia__npeers(c) - 1 : nremote != c->size - 1)
        return -EAGAIN;
    for (int i = 0; i < c->nprov; i++)
        if (c->prov[i].desc->ops->wait)
            return c->prov[i].desc->ops->wait(c->prov[i].ep);
    return -EAGAIN;
}

static long thread_nivcsw(void)
{
    struct rusage ru;

    return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nivcsw;
}

/* Back off while nothing happens: spin for CVIA_SPIN_TIME, then yield at
 * every poll, then (waits that may block) block after CVIA_YIELD_TIME.
 * A yield that let another task run means the core is shared (ranks
 * pinned together, an oversubscribed node): spinning then only delays the
 * rank we wait for, so it is skipped for a while. Every liveness interval
 * look for dead peers, so a wait on a dead peer ends in bounded time. */
void cvia__idle_step(struct cvia_ctx *c, struct cvia_idle *w, int may_block, unsigned s)
{
    static _Thread_local double shared_until;   /* core found shared until then */
    double t, el;

    /* cvia__idle (core.h) did the spin phase's polls between clock reads */
    t = cvia__clock_s();
    if (s == 1)
        w->t0 = t;
    el = t - w->t0;
    w->spinning = el < c->cfg.spin_time && t >= shared_until;
    if (w->spinning) {
        cvia_cpu_relax();
    } else if (el < c->cfg.yield_time || !may_block) {
        /* did the yield let another task run? A long yield alone does not
         * say (the host steals time from the whole vCPU); the thread's
         * involuntary switches do: a yield that switches counts there.
         * Checked only when the shared mark is not fresh. */
        int check = t >= shared_until - 0.005;
        long before = check ? thread_nivcsw() : 0;
        double t1;
        /* the core is shared and the mark fresh: where every peer is on
         * another host, the network provider waits in its receive (a
         * datagram wakes it), one call in place of the yield and the
         * receive after it; the yield that checks the mark stays, and a
         * wait that may not block (cvia_test's loop) only yields */
        if (check || !may_block || net_wait(c) < 0)
            sched_yield();
        t1 = cvia__clock_s();
        if (check && t1 - t > 2e-6 && thread_nivcsw() > before)
            shared_until = t1 + 0.01;
        t = t1;
    } else {
        idle_block(c);
        t = cvia__clock_s();
        s = 0;   /* a blocked wait looks for dead peers after every sleep */
    }
    if ((s & 31) == 0 && cvia_mlock_trylock(&c->slow_lock)) {
        if (t >= c->next_check) {
            c->next_check = t + c->cfg.liveness;
            check_liveness(c);
        }
        cvia_mlock_unlock(&c->slow_lock);
    }
}

static int core_load_config(struct cvia_ctx *c)
{
    int rc = cvia__param_load(&cvia__core_param_table, &c->cfg);

    cvia__log_level = c->cfg.log_level;
    if (cvia__log_set_subsys(c->cfg.log_subsys)) {
        cvia_error(CONF, "CVIA_LOG_SUBSYS: invalid value '%s' (expected a "
                   "comma-separated list of core, shm, boot, conf, topo, util, mem, or all)",
                   c->cfg.log_subsys);
        cvia__log_set_subsys("all");
        rc = -CVIA_ECONFIG;
    }
    return rc;
}

/* This host, as peers on it see it: the kernel's boot id and the network
 * namespace (ranks in different namespaces are different "hosts" even on
 * one machine, as the network lab makes them). */
static void host_key(char *buf, size_t cap)
{
    char boot_id[64] = "unknown";
    struct stat st;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    if (f) {
        if (!fgets(boot_id, sizeof(boot_id), f))
            strcpy(boot_id, "unknown");
        boot_id[strcspn(boot_id, "\n")] = '\0';
        fclose(f);
    }
    if (stat("/proc/self/ns/net", &st) < 0)
        st.st_ino = 0;
    snprintf(buf, cap, "%s:%llu", boot_id, (unsigned long long)st.st_ino);
}

/* Which ranks share this host: put our key, fence, read everyone's. */
static int find_host_peers(struct cvia_ctx *c)
{
    char mine[128], key[32], theirs[128];
    int rc;

    host_key(mine, sizeof(mine));
    snprintf(key, sizeof(key), "host.%d", c->rank);
    if ((rc = cvia__boot_put(c->boot, key, mine)) || (rc = cvia__boot_fence(c->boot)))
        return rc;
    for (int p = 0; p < c->size; p++) {
        if (p == c->rank) {
            c->same_host[p] = 1;
            continue;
        }
        snprintf(key, sizeof(key), "host.%d", p);
        if ((rc = cvia__boot_get(c->boot, key, theirs, sizeof(theirs)))) {
            cvia_error(CORE, "rank %d published no host identity: %s", p, cvia_strerror(rc));
            return rc == -ENOENT ? -CVIA_EBOOT : rc;
        }
        c->same_host[p] = !strcmp(mine, theirs);
        if (!c->same_host[p])
            c->nremote++;
    }
    return 0;
}

/* Dynamic mode: the secret in this process's address. */
static int draw_nonce(uint64_t nonce[2])
{
    size_t got = 0;

    while (got < 2 * sizeof(uint64_t)) {
        ssize_t n = getrandom((char *)nonce + got, 2 * sizeof(uint64_t) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            cvia_error(CORE, "getrandom for this process's address: %s",
                       n < 0 ? strerror(errno) : "no bytes");
            return n < 0 ? -errno : -EIO;
        }
        got += (size_t)n;
    }
    return 0;
}

static void close_providers(struct cvia_ctx *c, int clean)
{
    for (int i = c->nprov - 1; i >= 0; i--)
        c->prov[i].desc->ops->close(c->prov[i].ep, clean);
    c->nprov = 0;
}

int cvia_init(int *argc, char ***argv)
{
    return cvia_init_thread(argc, argv, CVIA_THREAD_MULTIPLE, NULL);
}

int cvia_query_thread(void)
{
    return cvia__ctx.initialized ? cvia__ctx.thread_level : -CVIA_ENOINIT;
}

int cvia_init_thread(int *argc, char ***argv, int required, int *provided)
{
    struct cvia_ctx *c = &cvia__ctx;
    int rc;

    (void)argc;
    (void)argv;
    if (c->initialized)
        return -EALREADY;
    if (required < CVIA_THREAD_SINGLE || required > CVIA_THREAD_MULTIPLE)
        return -EINVAL;
    memset(c, 0, sizeof(*c));
    rc = core_load_config(c);
    if (rc)
        return rc;
    cvia__param_check_unknown(NULL);
    /* every level is granted as asked; the locks made from here on follow it */
    c->thread_level = required;
    cvia__mlock_set_level(required, c->cfg.thread_check);
    if (provided)
        *provided = required;

    if (pre_boot) {   /* cvia_job_info() connected already */
        c->boot = pre_boot;
        pre_boot = NULL;
    } else if ((rc = cvia__boot_open(c->cfg.boot_timeout, &c->boot))) {
        return rc;
    }
    c->rank = cvia__boot_rank(c->boot);
    c->size = cvia__boot_size(c->boot);
    c->jobid = cvia__boot_jobid(c->boot);
    cvia__log_set_rank(c->rank);
    /* no launcher: a job of one whose peer table grows (cvia_connect) */
    c->dynamic = cvia__boot_standalone(c->boot) && c->cfg.max_peers > 1;
    /* indices are not reused (requests and AVs may name a dead peer's):
     * room for four peers' lives per ring, rings being what costs */
    c->cap = c->dynamic ? CVIA_DYN_INDEX_MULT * (int)c->cfg.max_peers : c->size;
    atomic_store_explicit(&c->npeers, c->size, memory_order_relaxed);

    c->peer_prov = calloc((size_t)c->cap, 1);
    c->peer_lost = calloc((size_t)c->cap, 1);
    c->same_host = calloc((size_t)c->cap, 1);
    if (!c->peer_prov || !c->peer_lost || !c->same_host) {
        rc = -ENOMEM;
        goto err_free;
    }
    if ((rc = find_host_peers(c)))
        goto err_free;
    cvia_mlock_init(&c->lock);
    cvia_mlock_init(&c->slow_lock);
    cvia_mlock_init(&c->mr_lock);
    cvia_mlock_init(&c->imm_lock);
    c->up.core = c;
    c->up.match = cvia__inbox_match;         /* on to cvia__core_match */
    c->up.complete = cvia__inbox_complete;   /* on to cvia__core_complete */
    c->up.visit = cvia__inbox_visit;         /* cvia_inbox_progress's visitor */
    c->up.peer_lost = cvia__core_peer_lost;
    c->up.mr_check = cvia__core_mr_check;
    c->up.imm = cvia__core_imm;
    c->up.peer_new = cvia__core_peer_new;
    c->up.peer_unused = cvia__core_peer_unused;

    struct cvia_prov_args args = {
        .boot = c->boot, .rank = c->rank, .size = c->cap,
        .jobid = c->jobid, .up = &c->up, .same_host = c->same_host,
        .dynamic = c->dynamic, .rings = (int)c->cfg.max_peers,
        .connect_timeout = c->cfg.boot_timeout,
    };
    if (c->dynamic && (rc = draw_nonce(args.nonce)))
        goto err_free;
    /* without a launcher the network provider comes up only when CVIA_NET
     * is set in the environment (a peer on another host is then possible:
     * one socket, and an idle engine looked at every 16th progress) */
    const char *net_env = getenv("CVIA_NET");
    int dyn_net = c->dynamic && net_env && *net_env;
    /* the host's provider always; the network one CVIA_NET names, if some
     * rank lives elsewhere (or, without a launcher, CVIA_NET asks for it) */
    for (int i = 0; cvia__prov_list[i] && c->nprov < CVIA_MAX_PROV; i++) {
        const struct cvia_prov_desc *d = cvia__prov_list[i];
        struct cvia_prov_ep *ep;
        if (d->scope == CVIA_PROV_NET &&
            ((!c->nremote && !dyn_net) || strcmp(d->name, cvia__net_names[c->cfg.net])))
            continue;
        if (d->scope == CVIA_PROV_NET && c->dynamic && !d->ops->dyn_connect) {
            cvia_warn(CORE, "CVIA_NET=%s: without a launcher only udp, eth and xdp reach peers "
                      "on other hosts; this process reaches its own host's only", d->name);
            continue;
        }
        rc = d->ops->open(&args, &ep);
        if (rc)   /* the provider logged why */
            goto err_close;
        c->prov[c->nprov].desc = d;
        c->prov[c->nprov].ep = ep;
        c->nprov++;
    }
    if ((rc = cvia__boot_fence(c->boot)))
        goto err_close;
    for (int i = 0; i < c->nprov; i++)
        if ((rc = c->prov[i].desc->ops->connect(c->prov[i].ep)))
            goto err_close;
    if ((rc = cvia__boot_fence(c->boot)))
        goto err_close;
    for (int i = 0; i < c->nprov; i++)
        if ((rc = c->prov[i].desc->ops->ready(c->prov[i].ep)))
            goto err_close;
    explicit_bzero(args.nonce, sizeof(args.nonce));
    for (int p = 0; p < c->size; p++) {
        int i;
        for (i = 0; i < c->nprov; i++)
            if (c->prov[i].desc->ops->reachable(c->prov[i].ep, p))
                break;
        if (i == c->nprov) {
            cvia_error(CORE, "no provider reaches rank %d%s", p, c->same_host[p] ? "" :
                       " on another host (is CVIA_NET's provider built?)");
            rc = -CVIA_ENOPROV;
            goto err_close;
        }
        c->peer_prov[p] = (uint8_t)i;
    }
    c->initialized = 1;
    return 0;

err_close:
    explicit_bzero(args.nonce, sizeof(args.nonce));
    close_providers(c, 0);
err_free:
    free(c->peer_prov);
    free(c->peer_lost);
    free(c->same_host);
    cvia__boot_close(c->boot);
    memset(c, 0, sizeof(*c));
    cvia__mlock_set_level(CVIA_THREAD_MULTIPLE, 0);   /* locking again */
    return rc;
}

#define CHECK_INIT(c) do { if (!(c)->initialized) return -CVIA_ENOINIT; } while (0)

int cvia__core_peer_new(void *core, struct cvia_prov_ep *ep)
{
    struct cvia_ctx *c = core;
    int pi, j;

    for (pi = 0; pi < c->nprov && c->prov[pi].ep != ep; pi++)
        ;
    cvia_mlock_lock(&c->lock);
    j = atomic_load_explicit(&c->npeers, memory_order_relaxed);
    if (!c->dynamic || pi == c->nprov || j >= c->cap) {
        cvia_mlock_unlock(&c->lock);
        return -ENOSPC;
    }
    c->peer_prov[j] = (uint8_t)pi;
    c->same_host[j] = c->prov[pi].desc->scope == CVIA_PROV_LOCAL;
    if (!c->same_host[j])
        __atomic_fetch_add(&c->nremote, 1, __ATOMIC_RELAXED);
    atomic_store_explicit(&c->npeers, j + 1, memory_order_release);
    cvia_mlock_unlock(&c->lock);
    return j;
}

void cvia__core_peer_unused(void *core, int peer)
{
    struct cvia_ctx *c = core;

    cvia_mlock_lock(&c->lock);
    if (peer > 0 && peer < atomic_load_explicit(&c->npeers, memory_order_relaxed))
        c->peer_lost[peer] = 1;   /* not in nlost: no peer was lost */
    cvia_mlock_unlock(&c->lock);
}

/* The provider that serves dynamic peers of @scope (shm: this host; the
 * network one CVIA_NET named: other hosts), or -1. */
static int dyn_prov(struct cvia_ctx *c, int scope)
{
    if (!c->dynamic)
        return -1;
    for (int i = 0; i < c->nprov; i++)
        if (c->prov[i].desc->ops->dyn_connect && c->prov[i].desc->scope == scope)
            return i;
    return -1;
}

/* The host provider's part, then the network provider's (struct
 * cvia_dyn_addr): 40 or 48 bytes. */
int cvia_addr(void *buf, size_t *len)
{
    struct cvia_ctx *c = &cvia__ctx;
    int pi, ni, rc, n;

    CHECK_INIT(c);
    if (!len || (!buf && *len))
        return -EINVAL;
    if ((pi = dyn_prov(c, CVIA_PROV_LOCAL)) < 0)
        return -EOPNOTSUPP;
    char tmp[CVIA_ADDR_MAX];
    rc = c->prov[pi].desc->ops->dyn_addr(c->prov[pi].ep, tmp, sizeof(tmp));
    if (rc < 0)
        return rc;
    n = rc;
    if ((ni = dyn_prov(c, CVIA_PROV_NET)) >= 0) {
        rc = c->prov[ni].desc->ops->dyn_addr(c->prov[ni].ep, tmp + n, sizeof(tmp) - (size_t)n);
        if (rc < 0)
            return rc;
        n += rc;
    }
    if (*len < (size_t)n) {
        *len = (size_t)n;
        return -ENOBUFS;
    }
    memcpy(buf, tmp, (size_t)n);
    *len = (size_t)n;
    return 0;
}

/* The host's provider first (same host: shared memory); the network
 * provider for a peer it declines as another host's. */
int cvia_connect(const void *addr, size_t len, int *peer)
{
    struct cvia_ctx *c = &cvia__ctx;
    int pi, ni, rc;

    CHECK_INIT(c);
    if (!addr || !peer)
        return -EINVAL;
    if ((pi = dyn_prov(c, CVIA_PROV_LOCAL)) < 0)
        return -EOPNOTSUPP;
    rc = c->prov[pi].desc->ops->dyn_connect(c->prov[pi].ep, addr, len, peer);
    if (rc != -CVIA_ENOPROV)
        return rc;
    if ((ni = dyn_prov(c, CVIA_PROV_NET)) < 0) {
        cvia_error(CORE, "cvia_connect: the address is another host's; without CVIA_NET=udp "
                   "(or eth) in the environment this process reaches its own host only");
        return rc;
    }
    return c->prov[ni].desc->ops->dyn_connect(c->prov[ni].ep, addr, len, peer);
}

int cvia_initialized(void)
{
    return cvia__ctx.initialized;
}

int cvia_rank(void)
{
    return cvia__ctx.initialized ? cvia__ctx.rank : -CVIA_ENOINIT;
}

int cvia_size(void)
{
    return cvia__ctx.initialized ? cvia__ctx.size : -CVIA_ENOINIT;
}


int cvia_isend(const void *buf, size_t len, int dest, int tag, cvia_req_t *req_p)
{
    struct cvia_ctx *c = &cvia__ctx;

    CHECK_INIT(c);
    if (!req_p)
        return -EINVAL;
    return cvia__isend_ctx(c, buf, len, dest, tag, CVIA_CTX_USER, req_p);
}

int cvia_irecv(void *buf, size_t cap, int source, int tag, cvia_req_t *req_p)
{
    struct cvia_ctx *c = &cvia__ctx;

    CHECK_INIT(c);
    if (!req_p)
        return -EINVAL;
    return cvia__irecv_ctx(c, buf, cap, source, tag, CVIA_CTX_USER, req_p);
}

static void fill_status(const struct cvia_req *r, cvia_status_t *st)
{
    if (!st)
        return;
    st->source = r->x.peer;
    st->tag = r->x.tag;
    st->error = r->status;
    if (r->kind != CVIA_REQ_RECV) {
        st->len = r->x.len;
        st->msg_len = r->x.len;
    } else {
        st->msg_len = r->x.msg_len;
        st->len = r->x.msg_len < r->x.len ? r->x.msg_len : r->x.len;
    }
}

int cvia_wait(cvia_req_t *req, cvia_status_t *status)
{
    struct cvia_ctx *c = &cvia__ctx;
    struct cvia_req *r;
    int rc;

    CHECK_INIT(c);
    if (!req)
        return -EINVAL;
    if (!(r = *req)) {
        if (status)
            memset(status, 0, sizeof(*status));
        return 0;
    }
    rc = cvia__wait_req(c, r);
    fill_status(r, status);
    cvia__req_free(c, r);
    *req = NULL;
    return rc;
}

int cvia_cancel(cvia_req_t *req)
{
    struct cvia_ctx *c = &cvia__ctx;
    int rc;

    CHECK_INIT(c);
    if (!req)
        return -EINVAL;
    if (!*req)
        return 0;
    if (!(rc = cvia__cancel(c, *req)))
        *req = NULL;
    return rc;
}

int cvia_test(cvia_req_t *req, int *done, cvia_status_t *status)
{
    static _Thread_local struct cvia_idle test_idle;   /* idle tests in a row */
    struct cvia_ctx *c = &cvia__ctx;
    struct cvia_req *r;

    CHECK_INIT(c);
    if (!req || !done)
        return -EINVAL;
    if (!(r = *req)) {
        *done = 1;
        return 0;
    }
    if (!cvia__req_done(r)) {
        if (cvia__progress(c) > 0)
            test_idle.n = 0;
        else if (!cvia__req_done(r))   /* a test loop backs off (never blocks) and
                                        * notices dead peers too */
            cvia__idle(c, &test_idle, 0);
    }
    return cvia_reap(req, done, status);
}

int cvia_reap(cvia_req_t *req, int *done, cvia_status_t *status)
{
    struct cvia_ctx *c = &cvia__ctx;
    struct cvia_req *r;
    int rc;

    CHECK_INIT(c);
    if (!req || !done)
        return -EINVAL;
    if (!(r = *req)) {
        *done = 1;
        return 0;
    }
    if (!cvia__req_done(r)) {
        *done = 0;
        return 0;
    }
    *done = 1;
    rc = r->status;
    fill_status(r, status);
    cvia__req_free(c, r);
    *req = NULL;
    return rc;
}

/* one-way: the key itself keys the datagram checks */
static uint64_t job_hash(uint64_t key)
{
    uint64_t h = key ^ 0x6a09e667f3bcc908ull;

    for (int i = 0; i < 3; i++) {
        h ^= h >> 31;
        h *= 0x7fb5d329728ea185ull;
        h ^= h >> 27;
        h *= 0x81dadef4bc2dd44dull;
    }
    h ^= h >> 33;
    return h ? h : 1;
}

uint64_t cvia_job_id(void)
{
    return cvia__ctx.initialized ? job_hash(cvia__ctx.jobid) : 0;
}

int cvia_job_info(int *rank, int *size, uint64_t *job_id)
{
    struct cvia_ctx *c = &cvia__ctx;
    const struct cvia_boot *b;
    int rc;

    if (c->initialized) {
        if (rank)
            *rank = c->rank;
        if (size)
            *size = c->size;
        if (job_id)
            *job_id = job_hash(c->jobid);
        return 0;
    }
    if (!pre_boot) {
        struct cvia_ctx tmp;
        memset(&tmp, 0, sizeof(tmp));
        if ((rc = core_load_config(&tmp)))
            return rc;
        if ((rc = cvia__boot_open(tmp.cfg.boot_timeout, &pre_boot)))
            return rc;
    }
    b = pre_boot;
    if (rank)
        *rank = cvia__boot_rank(b);
    if (size)
        *size = cvia__boot_size(b);
    if (job_id)
        *job_id = job_hash(cvia__boot_jobid(b));
    return 0;
}

int cvia_peer_local(int peer)
{
    struct cvia_ctx *c = &cvia__ctx;

    CHECK_INIT(c);
    if (peer < 0 || peer >= cvia__npeers(c))
        return -EINVAL;
    return c->same_host[peer] ? 1 : 0;
}

int cvia_peer_alive(int peer)
{
    struct cvia_ctx *c = &cvia__ctx;
    int lost;

    CHECK_INIT(c);
    if (peer < 0 || peer >= cvia__npeers(c))
        return -EINVAL;
    cvia_mlock_lock(&c->lock);
    lost = c->peer_lost[peer];
    cvia_mlock_unlock(&c->lock);
    return !lost;
}

int cvia_waitall(size_t n, cvia_req_t reqs[], cvia_status_t statuses[])
{
    struct cvia_ctx *c = &cvia__ctx;
    int first = 0;

    CHECK_INIT(c);
    if (n && !reqs)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        int rc = cvia_wait(&reqs[i], statuses ? &statuses[i] : NULL);
        if (rc && !first)
            first = rc;
    }
    return first;
}

int cvia_send(const void *buf, size_t len, int dest, int tag)
{
    struct cvia_ctx *c = &cvia__ctx;

    CHECK_INIT(c);
    return cvia__send_blocking(c, buf, len, dest, tag, CVIA_CTX_USER);
}

int cvia_recv(void *buf, size_t cap, int source, int tag, cvia_status_t *status)
{
    struct cvia_ctx *c = &cvia__ctx;
    struct cvia_req r;
    int rc;

    CHECK_INIT(c);
    rc = cvia__recv_blocking(c, &r, buf, cap, source, tag, CVIA_CTX_USER);
    if (cvia__req_done(&r))   /* not when the arguments were refused */
        fill_status(&r, status);
    return rc;
}

int cvia_progress(void)
{
    CHECK_INIT(&cvia__ctx);
    return cvia__progress(&cvia__ctx);
}

int cvia_check_peers(void)
{
    struct cvia_ctx *c = &cvia__ctx;
    int lost;

    CHECK_INIT(c);
    cvia_mlock_lock(&c->slow_lock);
    c->next_check = cvia__clock_s() + c->cfg.liveness;
    check_liveness(c);
    cvia_mlock_unlock(&c->slow_lock);
    cvia_mlock_lock(&c->lock);
    lost = c->nlost;
    cvia_mlock_unlock(&c->lock);
    return lost;
}

uint32_t cvia_imm_kicks(void)
{
    return atomic_load(&cvia__ctx.kicks);
}

void cvia_imm_kick(void)
{
    struct cvia_ctx *c = &cvia__ctx;

    atomic_fetch_add(&c->kicks, 1);
    for (int i = 0; i < c->nprov; i++)
        if (c->prov[i].desc->ops->kick)
            c->prov[i].desc->ops->kick(c->prov[i].ep);
    /* the waiters in cvia_input_wait's poll, each on its own eventfd
     * (after the count: a waiter arms its slot, then looks at the count) */
    for (int i = 0; i < CVIA_KICK_SLOTS; i++)
        if (atomic_load(&c->kick_slot[i].armed)) {
            int fd = atomic_load(&c->kick_slot[i].efd) - 1;
            uint64_t one = 1;
            if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
                /* EAGAIN: the counter is far from zero, readable anyway */
            }
        }
}

/* Test hook (tests/func/func_kick.c, linked with the internal library):
 * called by cvia_input_wait between its last look at the kick count and
 * its poll(), the window a kick must not be lost in. NULL otherwise. */
void (*cvia__input_wait_hook)(void);

/* A slot of cvia_input_wait's, with its eventfd made and drained (a kick
 * that came after its last holder looked is no news), not yet armed; -1
 * if every slot is taken or no eventfd can be made (that waiter then
 * sleeps in 1 ms slices and looks at the count after each). */
static int kick_slot_take(struct cvia_ctx *c)
{
    for (int i = 0; i < CVIA_KICK_SLOTS; i++) {
        int free_ = 0, none = 0, fd;
        uint64_t v;
        if (atomic_load(&c->kick_slot[i].busy) ||
            !atomic_compare_exchange_strong(&c->kick_slot[i].busy, &free_, 1))
            continue;
        if ((fd = atomic_load(&c->kick_slot[i].efd) - 1) < 0) {
            if ((fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
                atomic_store(&c->kick_slot[i].busy, 0);
                return -1;
            }
            if (!atomic_compare_exchange_strong(&c->kick_slot[i].efd, &none, fd + 1)) {
                close(fd);   /* cannot happen: the slot is ours */
                fd = none - 1;
            }
        }
        if (read(fd, &v, sizeof(v)) < 0) {
            /* EAGAIN: nothing in it */
        }
        return i;
    }
    return -1;
}

/* Where every peer is on this host, sleep on the shm futex until a peer
 * writes (or a kick); with peers on this host and others, the same with
 * the helper watching the sockets (idle_bridge.c), until the network
 * provider's next timer at most. Where every peer is elsewhere (no
 * futex a peer writes), -EOPNOTSUPP: the caller naps. */
int cvia_imm_block(uint32_t kicks, double max_s)
{
    struct cvia_ctx *c = &cvia__ctx;
    const struct cvia_prov_ops *ops = NULL;
    int n, pi = -1, nfd = 0, slept = 0;
    int nremote = __atomic_load_n(&c->nremote, __ATOMIC_RELAXED);

    CHECK_INIT(c);
    if (nremote && nremote == (c->dynamic ? cvia__npeers(c) : c->size) - 1)
        return -EOPNOTSUPP;
    for (int i = 0; i < c->nprov && pi < 0; i++)
        if (c->prov[i].desc->ops->block)
            ops = c->prov[pi = i].desc->ops;
    if (!ops)
        return -EOPNOTSUPP;
    if (max_s <= 0 || max_s > c->cfg.liveness)
        max_s = c->cfg.liveness;
    for (int i = 0; nremote && i < c->nprov; i++) {
        const struct cvia_prov_ops *o = c->prov[i].desc->ops;
        if (!o->wait_fd || o->wait_fd(c->prov[i].ep) < 0)
            continue;
        nfd++;
        max_s = timer_cut(o, c->prov[i].ep, max_s);
    }
    if (nremote && !nfd)
        return -EOPNOTSUPP;
    if ((n = cvia_imm_poll(NULL, 0)) < 0)   /* progress once */
        return n;
    /* announced before looking: an event another thread's progress queues
     * from now on kicks us (cvia__imm_event), one queued before is seen */
    atomic_fetch_add(&c->imm_sleepers, 1);
    cvia_mlock_lock(&c->imm_lock);
    n = c->imm_len;
    cvia_mlock_unlock(&c->imm_lock);
    if (n || atomic_load(&c->kicks) != kicks) {
        atomic_fetch_sub(&c->imm_sleepers, 1);
        return n > 0;
    }
    if (nremote)
        slept = cvia__bridge_block(c, pi, max_s, &c->kicks, kicks);
    else
        ops->block(c->prov[pi].ep, max_s, &c->kicks, kicks);
    atomic_fetch_sub(&c->imm_sleepers, 1);
    if (slept < 0)
        return -EOPNOTSUPP;
    if (cvia_mlock_trylock(&c->slow_lock)) {
        double t = cvia__clock_s();
        if (t >= c->next_check) {
            c->next_check = t + c->cfg.liveness;
            check_liveness(c);
        }
        cvia_mlock_unlock(&c->slow_lock);
    }
    return 0;
}

/* For a thread that only waits (a layer's wait object: the libfabric
 * provider's FI_WAIT_FD), at every thread level: nothing is progressed
 * and no request is read, only the providers' doorbells. Every peer on
 * other hosts: poll the network sockets for all of @max_s. Otherwise shm
 * sleeps on its futex (a peer's write into our rings wakes it); when a
 * socket may also bring input (some peer on another host, or a
 * launcher-free process whose peers can still come), idle_bridge.c's
 * helper thread watches the sockets meanwhile, as for idle_block. */
int cvia_input_wait(uint32_t kicks, double max_s)
{
    struct cvia_ctx *c = &cvia__ctx;
    struct pollfd fds[CVIA_MAX_PROV + 1];
    const struct cvia_prov_ops *bops = NULL;
    int n, pb = -1;

    CHECK_INIT(c);
    n = cvia__net_fds(c, fds, NULL, CVIA_MAX_PROV);
    for (int i = 0; i < c->nprov && pb < 0; i++)
        if (c->prov[i].desc->ops->block)
            bops = c->prov[i].desc->ops, pb = i;
    if (max_s < 0)
        max_s = 0;
    int nremote = __atomic_load_n(&c->nremote, __ATOMIC_RELAXED);
    int all_remote = c->dynamic ? 0 : nremote == c->size - 1;
    if (n && (all_remote || !bops)) {
        /* no futex here for a kick to wake: the waiter's own eventfd
         * beside the sockets, armed before the last look at the count (the
         * kick bumps the count, then looks for armed slots), so none is
         * missed; its own, so that no other waiter reads its kick */
        int slot = kick_slot_take(c), ready = 0, rc = 0;
        double t0 = cvia__clock_s(), left = max_s;
        nfds_t nf = (nfds_t)n;
        if (slot >= 0) {
            fds[nf++] = (struct pollfd){ .fd = atomic_load(&c->kick_slot[slot].efd) - 1,
                                         .events = POLLIN };
            atomic_store(&c->kick_slot[slot].armed, 1);
        }
        for (;;) {
            double cut = slot < 0 && left > 1e-3 ? 1e-3 : left;
            int ms = (int)(cut * 1e3 + 0.999);
            if (atomic_load(&c->kicks) != kicks)
                break;
            if (cvia__input_wait_hook)
                cvia__input_wait_hook();
            if ((rc = poll(fds, nf, ms)) != 0)
                break;
            left = max_s - (cvia__clock_s() - t0);
            if (slot >= 0 || left <= 0)
                break;
        }
        if (slot >= 0) {
            atomic_store(&c->kick_slot[slot].armed, 0);
            atomic_store(&c->kick_slot[slot].busy, 0);
        }
        for (int i = 0; rc > 0 && i < n; i++)
            ready |= fds[i].revents != 0;
        return ready || atomic_load(&c->kicks) != kicks;
    }
    if (!bops) {   /* nothing to sleep on: a nap, then "may be" */
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
        return 1;
    }
    /* block() answers 0 at once while our rings hold something (or a
     * rendezvous or a connection waits), so after any wake the next call
     * tells a peer's write from a timeout. With sockets too, the helper
     * thread of idle_bridge.c watches them during the sleep and kicks the
     * futex; without it (no thread could be started), slices of 1 ms with
     * a look at the sockets after each */
    double t0 = cvia__clock_s(), left = max_s;
    int bridge = n > 0;
    for (;;) {
        double slice = n && !bridge && left > 1e-3 ? 1e-3 : left;
        int slept = bridge ? cvia__bridge_block(c, pb, slice, &c->kicks, kicks) : -1;
        if (atomic_load(&c->kicks) != kicks)
            return 1;
        if (slept < 0) {
            bridge = 0;
            slept = bops->block(c->prov[pb].ep, slice, &c->kicks, kicks);
        }
        if (!slept)
            return 1;
        if (n && poll(fds, (nfds_t)n, 0) > 0)
            return 1;
        left = max_s - (cvia__clock_s() - t0);
        if (left <= 0)
            return atomic_load(&c->kicks) != kicks;
    }
}

/* Dissemination barrier: ceil(log2 N) rounds of zero-byte messages on the
 * internal context, round number as tag. */
static int core_barrier(struct cvia_ctx *c)
{
    int first = 0;

    for (int k = 1, round = 0; k < c->size; k <<= 1, round++) {
        struct cvia_req *rr = NULL, *sr = NULL;
        int to = (c->rank + k) % c->size;
        int from = (c->rank - k + c->size) % c->size;
        int rc = cvia__irecv_ctx(c, NULL, 0, from, round, CVIA_CTX_INTERNAL, &rr);
        if (rc)
            return rc;
        rc = cvia__isend_ctx(c, NULL, 0, to, round, CVIA_CTX_INTERNAL, &sr);
        if (rc)
            first = rc;
        else if ((rc = cvia__wait_req(c, sr)) && !first)
            first = rc;
        if (sr)
            cvia__req_free(c, sr);
        if ((rc = cvia__wait_req(c, rr)) && !first)
            first = rc;
        cvia__req_free(c, rr);
        if (first)
            return first;
    }
    return 0;
}

int cvia_barrier(void)
{
    CHECK_INIT(&cvia__ctx);
    return core_barrier(&cvia__ctx);
}

int cvia_finalize(void)
{
    struct cvia_ctx *c = &cvia__ctx;
    int rc;

    CHECK_INIT(c);
    rc = core_barrier(c);
    if (rc)
        cvia_error(CORE, "finalize: barrier failed: %s", cvia_strerror(rc));
    cvia__bridge_stop(c);
    for (int i = 0; i < CVIA_KICK_SLOTS; i++)
        if (atomic_load(&c->kick_slot[i].efd) > 0) {
            close(atomic_load(&c->kick_slot[i].efd) - 1);
            atomic_store(&c->kick_slot[i].efd, 0);
        }
    close_providers(c, rc == 0);
    if (rc == 0)
        cvia__boot_fini(c->boot);
    cvia__boot_close(c->boot);
    cvia__req_pool_fini(c);
    cvia__rma_fini(c);
    free(c->peer_prov);
    free(c->peer_lost);
    free(c->same_host);
    memset(c, 0, sizeof(*c));
    cvia__mlock_set_level(CVIA_THREAD_MULTIPLE, 0);   /* locking again */
    cvia__log_set_rank(-1);
    return rc;
}

void cvia_abort(int code, const char *why)
{
    struct cvia_ctx *c = &cvia__ctx;

    if (c->initialized && c->boot)
        cvia__boot_abort(c->boot, code, why ? why : "cvia_abort");
    else
        cvia_error(CORE, "abort: %s", why ? why : "cvia_abort");
    _exit(code ? code : 1);
}
