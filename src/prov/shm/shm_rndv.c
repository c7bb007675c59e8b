/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Single-copy rendezvous (the LiMIC design on today's kernel): the sender
 * announces its buffer, the receiver copies once, or the sender does, or
 * both at once on disjoint chunks. See shm.h for the block protocol.
 *
 * The copy itself (shm_copy) is plain memcpy when the far buffer lies in
 * the peer's shared arena (or in this process), else Cross Memory Attach.
 * It runs with no lock held: chunks are claimed from the block's atomic
 * counter, so any number of threads of either process can help. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "mem/arena.h"
#include "prov/shm/shm.h"
#include "util/log.h"

static struct cvia_arena_view *shm_view(struct cvia_prov_ep *ep, struct shm_peer *pp)
{
    struct cvia_arena_view *v = __atomic_load_n(&pp->view, __ATOMIC_ACQUIRE), *mine = NULL;
    int fd;

    if (v || atomic_load_explicit(&pp->view_failed, memory_order_relaxed) ||
        !ep->cfg.arena || pp->pidfd < 0)
        return v;
    fd = atomic_load_explicit(&pp->seg->arena_fd, memory_order_acquire);
    if (fd < 0)
        return NULL;   /* no arena yet: ask again later */
    if (cvia__arena_view_open(pp->pidfd, fd, &mine)) {
        atomic_store_explicit(&pp->view_failed, 1, memory_order_relaxed);
        cvia_info(SHM, "cannot map the arena of pid %d; using other copy paths",
                  (int)pp->pid);
        return NULL;
    }
    /* another thread may have opened it meanwhile: keep one */
    if (!__atomic_compare_exchange_n(&pp->view, &v, mine, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        cvia__arena_view_close(mine);
        return v;
    }
    return mine;
}

/* Local address of the peer's [remote, remote + len) if it is mapped here
 * (the peer is this process, or the range lies in its shared arena). */
static void *shm_translate(struct cvia_prov_ep *ep, int peer, uint64_t remote, size_t len)
{
    struct shm_peer *pp = &ep->peers[peer];
    struct cvia_arena_view *v;

    if (peer == ep->args.rank)
        return (void *)(uintptr_t)remote;
    v = shm_view(ep, pp);
    return v ? cvia__arena_view_translate(v, remote, len) : NULL;
}

/* Copy @len bytes between @local and the peer's @remote: pull (peer ->
 * local) or push; by load/store where the range is mapped here, else by
 * Cross Memory Attach where the kernel allows it. 0, -EFAULT, -EPERM
 * (no way to reach the peer's memory: the caller goes through the ring),
 * -CVIA_ENOPEER. */
int shm_copy(struct cvia_prov_ep *ep, int peer, int pull, void *local,
             uint64_t remote, size_t len)
{
    struct shm_peer *pp = &ep->peers[peer];
    void *near;

    if (!len)
        return 0;
    if ((near = shm_translate(ep, peer, remote, len))) {
        if (pull)
            memcpy(local, near, len);
        else
            memcpy(near, local, len);
        cvia_mcount_add(&pp->bytes_near, len);
        return 0;
    }
    if (!pp->can_cma)
        return -EPERM;
    cvia_mcount_add(&pp->bytes_cma, len);
    while (len) {
        struct iovec l = { local, len };
        struct iovec r = { (void *)(uintptr_t)remote, len };
        ssize_t n = pull ? process_vm_readv(pp->pid, &l, 1, &r, 1, 0)
                         : process_vm_writev(pp->pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EFAULT;
            return e == ESRCH ? -CVIA_ENOPEER : -e;
        }
        local = (char *)local + n;
        remote += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

int shm_rndv_use(struct cvia_prov_ep *ep, int peer, const struct cvia_xfer *x)
{
    struct shm_peer *pp = &ep->peers[peer];

    if (peer == ep->args.rank || pp->peer_cma || pp->can_cma)
        return 1;
    /* no Cross Memory Attach: still single copy if the peer can map the
     * buffer from my arena */
    return ep->cfg.arena && ep->cfg.cma == 0 && cvia__arena_contains(x->buf, x->len);
}

/* Blocks committed at a time for one destination: a page of them. */
#define SHM_RV_GROW ((uint32_t)(4096 / sizeof(struct shm_rndv)))

/* A free block of mine for @pp's destination @dest (tx_lock held): from the
 * free stack, else from a page newly committed. -1 when the destination
 * has CVIA_SHM_RNDV_SLOTS in flight or the memory for more is refused. */
static int64_t rv_take(struct cvia_prov_ep *ep, struct shm_peer *pp, int dest, int *err)
{
    uint32_t max = (uint32_t)ep->cfg.rv_per_peer, n, rc;

    *err = 0;
    if (pp->rv_nfree)
        return pp->rv_free[--pp->rv_nfree];
    if (pp->rv_top >= max)
        return -1;
    if (!pp->rv_free && !(pp->rv_free = malloc((size_t)max * sizeof(*pp->rv_free)))) {
        *err = -ENOMEM;
        return -1;
    }
    n = max - pp->rv_top < SHM_RV_GROW ? max - pp->rv_top : SHM_RV_GROW;
    if ((rc = (uint32_t)-shm_seg_commit_rv(ep, dest, pp->rv_top, n))) {
        *err = -(int)rc;
        return -1;
    }
    for (uint32_t k = n; k-- > 1;)   /* the lowest one is used now */
        pp->rv_free[pp->rv_nfree++] = pp->rv_top + k;
    pp->rv_top += n;
    return pp->rv_top - n;
}

/* The pair is busy (tx_lock held): the peer has not yet taken the last
 * slot I wrote to it, or sends to it wait in the queue or in rendezvous.
 * A message sent now would wait behind them. */
static int rv_busy(struct shm_peer *pp)
{
    return pp->txq_head || pp->rv_send ||
           (pp->tx_pos && cvia_ring_peek(&pp->tx_ring, pp->tx_pos - 1));
}

/* Fill my block @i for @x and queue its RTS. */
static int rv_announce(struct cvia_prov_ep *ep, struct cvia_xfer *x, int64_t i, uint32_t hint)
{
    struct shm_peer *pp = &ep->peers[x->peer];
    struct shm_rndv *b = shm_rv_block(ep->seg, x->peer, (uint32_t)i);
    int err;

    b->src = (uint64_t)(uintptr_t)x->buf;
    b->msg_len = x->len;
    b->dst = b->len = b->chunk = 0;
    b->mode = 0;
    b->hint = hint;
    atomic_store_explicit(&b->error, 0, memory_order_relaxed);
    atomic_store_explicit(&b->next, 0, memory_order_relaxed);
    atomic_store_explicit(&b->done, 0, memory_order_relaxed);
    /* published to the receiver by the RTS slot's release store */
    atomic_store_explicit(&b->state, SHM_RV_RTS, memory_order_relaxed);
    x->prov_cookie = (uint64_t)i;
    x->flags |= CVIA_XFER_RNDV;
    if ((err = shm_enqueue(ep, x->peer, x))) {   /* the peer is gone */
        cvia_mlock_lock(&pp->tx_lock);
        if (pp->rv_nfree < pp->rv_top)
            pp->rv_free[pp->rv_nfree++] = (uint32_t)i;
        cvia_mlock_unlock(&pp->tx_lock);
    }
    return err;
}

/* A rendezvous for @x, counted in @count; the ring where no block is free. */
static int rv_send(struct cvia_prov_ep *ep, struct cvia_xfer *x, _Atomic uint64_t *count)
{
    struct shm_peer *pp = &ep->peers[x->peer];
    uint32_t hint = 0;
    int64_t i;
    int err;

    cvia_mlock_lock(&pp->tx_lock);
    i = rv_take(ep, pp, x->peer, &err);
    /* in a window, below the cooperative size: both sides copy it */
    if (i >= 0 && x->len < ep->cfg.coop_threshold && x->peer != ep->args.rank && rv_busy(pp))
        hint = SHM_RV_HINT_WINDOW;
    cvia_mlock_unlock(&pp->tx_lock);
    if (i < 0) {   /* no block: this one goes through the ring */
        cvia_mcount_add(&pp->msgs_spill, 1);
        if (!atomic_exchange_explicit(&ep->spill_said, 1, memory_order_relaxed)) {
            if (err)
                cvia_warn(SHM, "no memory for more rendezvous blocks to rank %d (%s): "
                          "messages beyond %u in flight take two copies",
                          x->peer, cvia_strerror(err), (unsigned)pp->rv_top);
            else
                cvia_info(SHM, "%ld rendezvous transfers in flight to rank %d "
                          "(CVIA_SHM_RNDV_SLOTS): the next ones take two copies",
                          ep->cfg.rv_per_peer, x->peer);
        }
        return shm_enqueue(ep, x->peer, x);
    }
    cvia_mcount_add(count, 1);
    return rv_announce(ep, x, i, hint);
}

int shm_rndv_send(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    return rv_send(ep, x, &ep->peers[x->peer].msgs_rndv);
}

int shm_rndv_arena_use(struct cvia_prov_ep *ep, const struct cvia_xfer *x)
{
    return ep->cfg.arena && cvia__arena_contains(x->buf, x->len) &&
           shm_rndv_use(ep, x->peer, x);
}

/* Below the threshold, from CVIA_SHM_ARENA_THRESHOLD (issue 17): the send
 * buffer lies in my arena, which the receiver maps, so single copy costs
 * it one memcpy and no system call, where the ring costs both sides a
 * copy. */
int shm_rndv_send_arena(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    return rv_send(ep, x, &ep->peers[x->peer].msgs_arena);
}

/* Below the threshold (issue 17): a message that finds the pair busy goes
 * by rendezvous, copied once by both sides in halves (coop), where the
 * ring would have both copy all of it; the pair still uses the ring
 * whenever the receiver has caught up. Needs CMA both ways. */
int shm_rndv_send_window(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    struct shm_peer *pp = &ep->peers[x->peer];
    int64_t i = -1;
    int err;

    if (x->peer == ep->args.rank || !pp->can_cma || !pp->peer_cma ||
        ep->cfg.copy_mode != SHM_COPY_AUTO)
        return shm_enqueue(ep, x->peer, x);
    cvia_mlock_lock(&pp->tx_lock);
    if (rv_busy(pp))
        i = rv_take(ep, pp, x->peer, &err);
    cvia_mlock_unlock(&pp->tx_lock);
    if (i < 0)   /* not busy, or no block free: the ring, as below the window */
        return shm_enqueue(ep, x->peer, x);
    cvia_mcount_add(&pp->msgs_window, 1);
    return rv_announce(ep, x, i, SHM_RV_HINT_WINDOW);
}

/* Claim and copy chunks until none is left. @pull: the receiver's side. */
static void rv_claim_loop(struct cvia_prov_ep *ep, int peer, struct shm_rndv *b,
                          int pull, char *local_base)
{
    uint64_t len = b->len, chunk = b->chunk;
    uint64_t nchunks = chunk ? (len + chunk - 1) / chunk : 0;
    uint64_t k;

    while ((k = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < nchunks) {
        uint64_t off = k * chunk, n = len - off < chunk ? len - off : chunk;
        int rc = pull ? shm_copy(ep, peer, 1, local_base + off, b->src + off, (size_t)n)
                      : shm_copy(ep, peer, 0, local_base + off, b->dst + off, (size_t)n);
        if (rc) {
            int32_t zero = 0;
            atomic_compare_exchange_strong(&b->error, &zero, rc);
        }
        atomic_fetch_add_explicit(&b->done, n, memory_order_release);
    }
}

static int rv_choose_mode(struct cvia_prov_ep *ep, struct shm_peer *pp, int peer,
                          const struct shm_rndv *b, const void *dst, size_t len)
{
    int can_read = pp->can_cma, can_write = pp->peer_cma;
    int mode = ep->cfg.copy_mode;

    if (peer == ep->args.rank)
        return SHM_COPY_READ;
    if (shm_translate(ep, peer, b->src, len)) {
        /* plain loads; both buffers in arenas: each side copies a half by
         * loads and stores (a sender that cannot reach my arena leaves
         * both halves to me) */
        if (mode == SHM_COPY_AUTO && len >= ep->cfg.arena_coop &&
            cvia__arena_contains(dst, len))
            return SHM_COPY_COOP;
        return SHM_COPY_READ;
    }
    /* a window's: both copy, each its half of the destination. Whole
     * messages shared out between the two sides were as fast on a quiet
     * host and up to 2x slower where the vCPUs sat apart: with the same
     * receive buffer for each message (OSU) every line then moved
     * between the cores at each message (BENCHMARKS.md, issue 17). */
    if ((b->hint & SHM_RV_HINT_WINDOW) && mode == SHM_COPY_AUTO && can_read && can_write &&
        len < ep->cfg.coop_threshold)
        return SHM_COPY_COOP;
    if (mode == SHM_COPY_AUTO)
        mode = len >= ep->cfg.coop_threshold ? SHM_COPY_COOP : SHM_COPY_READ;
    if (mode == SHM_COPY_COOP && !(can_read && can_write))
        mode = can_read ? SHM_COPY_READ : SHM_COPY_WRITE;
    if (mode == SHM_COPY_READ && !can_read && can_write)
        mode = SHM_COPY_WRITE;
    if (mode == SHM_COPY_WRITE && !can_write && can_read)
        mode = SHM_COPY_READ;
    return mode;
}

/* Receiver side: @x (its buf/len are the receive buffer) was matched to a
 * rendezvous message from x->peer. */
int shm_rndv_start(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    int peer = x->peer;
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct shm_rndv *b = shm_rv_block(pp->seg, pp->remote_idx, (uint32_t)x->prov_cookie);
    size_t len = x->msg_len < x->len ? x->msg_len : x->len;
    int mode;

    /* The block must be the sender's RTS. The ring slot that named it
     * already ordered it; this acquire also orders it, for ThreadSanitizer,
     * after the DONE another thread of ours stored when the block last
     * served (the sender's reuse in between is in another process, which
     * TSan cannot see), and refuses a slot naming a block not in use. */
    if (atomic_load_explicit(&b->state, memory_order_acquire) != SHM_RV_RTS) {
        cvia_error(SHM, "rank %d: rendezvous block %u is not a request: protocol error", peer,
                   (unsigned)x->prov_cookie);
        x->done = 0;
        up->complete(up->core, x, -CVIA_EPROTO);
        return 0;
    }
    mode = rv_choose_mode(ep, pp, peer, b, x->buf, len);
    b->dst = (uint64_t)(uintptr_t)x->buf;
    b->len = len;
    b->chunk = mode == SHM_COPY_READ ? (len ? len : 1) :
               ep->cfg.coop_chunk ? ep->cfg.coop_chunk : shm_half_chunk(len);
    b->mode = (uint32_t)mode;
    if (mode != SHM_COPY_READ)   /* the sender may join in */
        atomic_store_explicit(&b->state, SHM_RV_CTS, memory_order_release);
    if (mode != SHM_COPY_WRITE)
        rv_claim_loop(ep, peer, b, 1, x->buf);
    if (atomic_load_explicit(&b->done, memory_order_acquire) == len) {
        int err = atomic_load_explicit(&b->error, memory_order_relaxed);
        atomic_store_explicit(&b->state, SHM_RV_DONE, memory_order_release);
        x->done = x->msg_len;
        up->complete(up->core, x, err ? err : x->msg_len > x->len ? -CVIA_ETRUNC : 0);
        return 0;
    }
    /* the sender's chunks are still coming */
    cvia_mlock_lock(&pp->rx_lock);
    x->prov_next = pp->rv_recv;
    CVIA_HINT_STORE(pp->rv_recv, x);
    shm_rv_count(ep, pp, 1);
    cvia_mlock_unlock(&pp->rx_lock);
    return 0;
}

int shm_rndv_progress(struct cvia_prov_ep *ep, int peer)
{
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *x, **link, *finished = NULL;
    uint32_t help[8];
    int nhelp = 0, events = 0, unlinked = 0;

    /* sender side: help copy where the receiver asked, finish what is DONE */
    if (CVIA_HINT_LOAD(pp->rv_send) && cvia_mlock_trylock(&pp->tx_lock)) {
        for (link = &pp->rv_send; (x = *link);) {
            uint32_t i = (uint32_t)x->prov_cookie;
            struct shm_rndv *b = shm_rv_block(ep->seg, peer, i);
            uint32_t st = atomic_load_explicit(&b->state, memory_order_acquire);
            if (st == SHM_RV_DONE && !pp->rv_users[i]) {
                x->prov_cookie = (uint64_t)(uint32_t)atomic_load(&b->error);
                atomic_store_explicit(&b->state, SHM_RV_FREE, memory_order_relaxed);
                pp->rv_free[pp->rv_nfree++] = i;
                CVIA_HINT_STORE(*link, x->prov_next);
                x->prov_next = finished;
                finished = x;
                unlinked++;
                continue;
            }
            if (st == SHM_RV_CTS && b->mode != SHM_COPY_READ && nhelp < 8 &&
                atomic_load_explicit(&b->next, memory_order_relaxed) * b->chunk < b->len) {
                pp->rv_users[i]++;
                help[nhelp++] = i;
            }
            link = &x->prov_next;
        }
        cvia_mlock_unlock(&pp->tx_lock);
    }
    for (int h = 0; h < nhelp; h++) {
        struct shm_rndv *b = shm_rv_block(ep->seg, peer, help[h]);
        /* a receive buffer I can reach neither by CMA nor in the peer's
         * arena (an arena's coop): the receiver copies all of it */
        if (pp->can_cma || shm_translate(ep, peer, b->dst, b->len))
            rv_claim_loop(ep, peer, b, 0, (char *)(uintptr_t)b->src);
        cvia_mlock_lock(&pp->tx_lock);
        pp->rv_users[help[h]]--;
        cvia_mlock_unlock(&pp->tx_lock);
        events++;
    }
    while ((x = finished)) {
        int err = (int)(int32_t)(uint32_t)x->prov_cookie;
        finished = x->prov_next;
        x->prov_next = NULL;
        x->done = x->len;
        up->complete(up->core, x, err);
        events++;
    }
    /* receiver side: end the transfers whose last chunk has landed */
    if (CVIA_HINT_LOAD(pp->rv_recv) && cvia_mlock_trylock(&pp->rx_lock)) {
        for (link = &pp->rv_recv; (x = *link);) {
            struct shm_rndv *b = shm_rv_block(pp->seg, pp->remote_idx,
                                              (uint32_t)x->prov_cookie);
            if (atomic_load_explicit(&b->done, memory_order_acquire) == b->len) {
                CVIA_HINT_STORE(*link, x->prov_next);
                x->prov_next = finished;
                finished = x;
                unlinked++;
                continue;
            }
            link = &x->prov_next;
        }
        cvia_mlock_unlock(&pp->rx_lock);
    }
    while ((x = finished)) {
        struct shm_rndv *b = shm_rv_block(pp->seg, pp->remote_idx, (uint32_t)x->prov_cookie);
        int err = atomic_load_explicit(&b->error, memory_order_relaxed);
        finished = x->prov_next;
        x->prov_next = NULL;
        atomic_store_explicit(&b->state, SHM_RV_DONE, memory_order_release);
        x->done = x->msg_len;
        up->complete(up->core, x, err ? err : x->msg_len > x->len ? -CVIA_ETRUNC : 0);
        events++;
    }
    if (unlinked)
        shm_rv_count(ep, pp, -(unlinked));
    return events;
}

/* @peer is gone: fail the rendezvous transfers with it. */
void shm_rndv_fail(struct cvia_prov_ep *ep, int peer, int err)
{
    struct shm_peer *pp = &ep->peers[peer];
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct cvia_xfer *s, *r, *x;
    int n = 0;

    cvia_mlock_lock(&pp->tx_lock);
    s = pp->rv_send;
    CVIA_HINT_STORE(pp->rv_send, NULL);
    /* every block is free again, those of sends still queued included
     * (dynamic mode may give the index to another peer) */
    for (uint32_t k = 0; pp->rv_free && k < pp->rv_top; k++)
        pp->rv_free[k] = pp->rv_top - 1 - k;
    pp->rv_nfree = pp->rv_top;
    cvia_mlock_unlock(&pp->tx_lock);
    cvia_mlock_lock(&pp->rx_lock);
    r = pp->rv_recv;
    CVIA_HINT_STORE(pp->rv_recv, NULL);
    cvia_mlock_unlock(&pp->rx_lock);
    for (x = s; x; x = x->prov_next)
        n++;
    for (x = r; x; x = x->prov_next)
        n++;
    if (n)
        shm_rv_count(ep, pp, -(n));
    while ((x = s)) {
        s = x->prov_next;
        x->prov_next = NULL;
        up->complete(up->core, x, err);
    }
    while ((x = r)) {
        r = x->prov_next;
        x->prov_next = NULL;
        up->complete(up->core, x, err);
    }
}
