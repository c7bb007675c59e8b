/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Peers without a launcher (dynamic mode, cvia_connect).
 *
 * A process without cvia-run or PMIx is a job of one whose segment has a
 * ring and a claim for every peer index it may ever have (CVIA_MAX_PEERS):
 * ring 0 is its own, the others are taken one per connected peer. Its
 * address (struct shm_dyn_addr) names the segment (pid and the random
 * part of its name), the host, and a 128-bit nonce drawn at start that
 * never enters the segment: only its hash does, for an early check.
 *
 * Connecting X -> Y: X maps Y's segment (0600: the same user only),
 * checks the hash, reserves a ring r in its own segment for Y's answers,
 * takes a peer index, claims a free ring k in Y's segment (a CAS on the
 * claim's state) and writes into the claim Y's nonce as it was given it,
 * its identity, r, its index and whether it may use CMA on Y; then it
 * bumps Y's claim counter, wakes Y and waits. Y sees the counter move in
 * its progress, compares the proof with its private nonce (a claim with
 * the wrong one is REFUSED: a name guessed or forged never gets a ring
 * read nor a single copy), maps X's segment, checks that r is reserved
 * there for Y, takes its own index for X, sets the peer up (send into r,
 * receive from k) and publishes it, then answers ACCEPTED with its index.
 * X sets its side up the same way. Both sides are complete before either
 * is published to its progress, so no half-made peer is ever polled.
 *
 * Two processes connecting to each other at once: each sees the other's
 * claim while it waits for its own; the claim of the smaller (pid, segment)
 * wins on both sides, the other is answered DUP, and its sender finds the
 * peer made from the winning claim. A peer already known is answered DUP.
 *
 * A peer that dies (pidfd) or closes (its segment's finalized flag) is
 * failed as a rank is; then its ring in our segment is reset and its claim
 * freed for the next peer, and its segment name unlinked if a SIGKILL left
 * it. Peer indices are not reused (4 x CVIA_MAX_PEERS over a process's
 * life, rings CVIA_MAX_PEERS). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "prov/shm/shm.h"
#include "util/log.h"
#include "util/clock.h"

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 31;
    h *= 0x7fb5d329728ea185ull;
    h ^= h >> 27;
    h *= 0x81dadef4bc2dd44dull;
    h ^= h >> 33;
    return h;
}

/* Published in the segment for a connecting peer's early check. Not a
 * cryptographic hash: the gate is the owner's comparison with the nonce
 * itself, which never leaves the process but in its address. */
uint64_t shm_dyn_hash(const uint64_t nonce[2])
{
    return mix64(mix64(nonce[0] ^ 0x243f6a8885a308d3ull) ^ nonce[1]) | 1;
}

/* Same host as peers see it: the kernel's boot id and network namespace
 * (the core's rule for a job's ranks). */
static uint64_t dyn_host(void)
{
    char boot_id[64] = "unknown";
    struct stat st;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    uint64_t h = 0xcbf29ce484222325ull;

    if (f) {
        if (!fgets(boot_id, sizeof(boot_id), f))
            strcpy(boot_id, "unknown");
        fclose(f);
    }
    if (stat("/proc/self/ns/net", &st) < 0)
        st.st_ino = 0;
    for (const char *c = boot_id; *c && *c != '\n'; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    return mix64(h ^ (uint64_t)st.st_ino);
}

int shm_dyn_init(struct cvia_prov_ep *ep)
{
    /* the core drew it (getrandom): the network provider's keys come
     * from the same secret, in the same address */
    ep->nonce[0] = ep->args.nonce[0];
    ep->nonce[1] = ep->args.nonce[1];
    ep->host = dyn_host();
    ep->lidx[0] = 0;   /* ring 0: my own */
    for (int p = 1; p < ep->args.size; p++)
        ep->lidx[p] = -1;
    return 0;
}

int shm_dyn_addr(struct cvia_prov_ep *ep, void *buf, size_t cap)
{
    struct shm_dyn_addr a;

    if (cap < sizeof(a))
        return -ENOBUFS;
    memset(&a, 0, sizeof(a));
    a.magic = SHM_DYN_MAGIC;
    a.pid = (int32_t)getpid();
    a.host = ep->host;
    a.seg_rand = ep->seg_rand;
    a.nonce[0] = ep->nonce[0];
    a.nonce[1] = ep->nonce[1];
    memcpy(buf, &a, sizeof(a));
    return (int)sizeof(a);
}

static void dyn_seg_name(char *buf, size_t cap, int32_t pid, uint64_t seg_rand)
{
    snprintf(buf, cap, "/cvia-%u-%d-%016llx", (unsigned)getuid(), (int)pid,
             (unsigned long long)seg_rand);
}

/* Map the segment of (pid, seg_rand): ours (owner, 0600), made with the
 * same geometry (CVIA_SHM_*, CVIA_MAX_PEERS). */
static int dyn_map(struct cvia_prov_ep *ep, int32_t pid, uint64_t seg_rand,
                   struct shm_seg_hdr **hdr_p)
{
    char name[SHM_NAME_MAX];
    struct shm_seg_hdr *h;
    void *addr;
    int rc;

    dyn_seg_name(name, sizeof(name), pid, seg_rand);
    if ((rc = shm_seg_map(ep, name, &addr)) < 0) {
        if (rc != -CVIA_ESEGMENT)
            cvia_info(SHM, "cannot map segment %s of a peer: %s", name, strerror(-rc));
        return rc == -ENOENT ? -CVIA_ENOPEER : rc;
    }
    h = addr;
    atomic_thread_fence(memory_order_acquire);
    if (h->magic != SHM_MAGIC || !h->dynamic || h->pid != pid ||
        h->nranks != (uint32_t)ep->args.size || h->nlocal != (uint32_t)ep->nlocal ||
        h->nslots != ep->nslots ||
        h->slot_size != ep->slot_size || h->ring_off != ep->ring_off ||
        h->rv_off != ep->rv_off || h->mr_off != ep->mr_off ||
        h->claim_off != ep->claim_off || h->rv_per_peer != (uint32_t)ep->cfg.rv_per_peer) {
        cvia_error(SHM, "segment %s is not a launcher-free peer's with these "
                   "CVIA_MAX_PEERS and CVIA_SHM_* settings", name);
        munmap(addr, ep->seg_bytes);
        return -CVIA_ESEGMENT;
    }
    *hdr_p = h;
    return 0;
}

static int dyn_find(struct cvia_prov_ep *ep, int32_t pid, uint64_t seg_rand)
{
    int n = shm_npeers(ep);

    for (int p = 1; p < n; p++) {
        struct shm_peer *pp = &ep->peers[p];
        if (pp->seg && pp->pid == pid && pp->seg_rand == seg_rand &&
            !atomic_load_explicit(&pp->gone, memory_order_relaxed))
            return p;
    }
    return -1;
}

static int dyn_probe_cma(pid_t pid, const struct shm_seg_hdr *h, int mode)
{
    uint64_t word = 0;
    struct iovec l = { &word, sizeof(word) };
    struct iovec r = { (void *)(uintptr_t)h->self_addr, sizeof(word) };

    if (mode == 0)   /* CVIA_SHM_CMA=n */
        return 0;
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(word) &&
           word == SHM_MAGIC;
}

/* A ring of my segment for a peer's messages: reset and marked RESERVED
 * for (pid, seg_rand). */
static int dyn_reserve(struct cvia_prov_ep *ep, int32_t pid, uint64_t seg_rand)
{
    struct shm_claim *cl = shm_claims(ep->seg);

    for (int k = 1; k < ep->nlocal; k++) {
        uint32_t want = SHM_CLAIM_FREE;
        if (!atomic_compare_exchange_strong(&cl[k].state, &want, SHM_CLAIM_BUSY))
            continue;
        struct cvia_ring r;
        shm_ring_at(ep, ep->seg, (size_t)k, &r);
        cvia_ring_init(&r);
        cl[k].pid = pid;
        cl[k].seg_rand = seg_rand;
        atomic_store_explicit(&cl[k].state, SHM_CLAIM_RESERVED, memory_order_release);
        return k;
    }
    return -ENOSPC;
}

static void dyn_release(struct cvia_prov_ep *ep, int k)
{
    atomic_store_explicit(&shm_claims(ep->seg)[k].state, SHM_CLAIM_FREE, memory_order_release);
}

/* Fill peer @j and publish it to progress (dyn_lock held). */
static void dyn_publish(struct cvia_prov_ep *ep, int j, struct shm_seg_hdr *h, int32_t pid,
                        uint64_t seg_rand, int tx_ring, int rx_ring, int remote_idx,
                        int can_cma, int peer_cma)
{
    struct shm_peer *pp = &ep->peers[j];

    pp->seg = h;
    pp->seg_bytes = ep->seg_bytes;
    pp->pid = pid;
    pp->seg_rand = seg_rand;
    pp->remote_idx = remote_idx;
    shm_ring_at(ep, h, (size_t)tx_ring, &pp->tx_ring);
    pp->tx_pos = 0;
    shm_ring_at(ep, ep->seg, (size_t)rx_ring, &pp->rx_ring);
    pp->rx_pos = 0;
    shm_look_set(pp);
    ep->lidx[j] = rx_ring;
    pp->can_cma = (uint8_t)can_cma;
    pp->peer_cma = (uint8_t)peer_cma;
    if (can_cma || peer_cma)
        ep->rndv_any = 1;
    pp->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pp->pidfd >= 0)
        fcntl(pp->pidfd, F_SETFD, FD_CLOEXEC);
    else
        cvia_info(SHM, "pidfd_open(%d): %s; its death is seen when it closes",
                  (int)pid, strerror(errno));
    if (j + 1 > atomic_load_explicit(&ep->nvis, memory_order_relaxed))
        atomic_store_explicit(&ep->nvis, j + 1, memory_order_release);
    cvia_info(SHM, "peer %d: pid %d, rings %d/%d, CMA %s", j, (int)pid, tx_ring, rx_ring,
              can_cma ? (peer_cma ? "both ways" : "pull") : peer_cma ? "push" : "no");
}

/* (pid, rand) pairs in a fixed order: which of two crossing claims wins */
static int dyn_less(int32_t pa, uint64_t ra, int32_t pb, uint64_t rb)
{
    return pa != pb ? pa < pb : ra < rb;
}

/* Answer a posted claim, unless its claimer withdrew it meanwhile. */
static void dyn_answer(struct shm_claim *c, uint32_t state)
{
    uint32_t want = SHM_CLAIM_POSTED;

    atomic_compare_exchange_strong_explicit(&c->state, &want, state, memory_order_acq_rel,
                                            memory_order_relaxed);
}

/* Take the claims posted to me (dyn_lock held). */
static int dyn_accept(struct cvia_prov_ep *ep)
{
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct shm_claim *cl = shm_claims(ep->seg);
    int events = 0;

    atomic_store_explicit(&ep->claim_seen,
                          atomic_load_explicit(&ep->seg->claim_gen, memory_order_acquire),
                          memory_order_relaxed);
    for (int k = 1; k < ep->nlocal; k++) {
        struct shm_claim *c = &cl[k];
        struct shm_seg_hdr *h;
        int j, ex;

        if (atomic_load_explicit(&c->state, memory_order_acquire) != SHM_CLAIM_POSTED)
            continue;
        events++;
        if (c->proof[0] != ep->nonce[0] || c->proof[1] != ep->nonce[1]) {
            cvia_warn(SHM, "refused a connection from pid %d: its address for this "
                      "process has the wrong nonce (guessed or forged)", (int)c->pid);
            dyn_answer(c, SHM_CLAIM_REFUSED);
            continue;
        }
        if ((ex = dyn_find(ep, c->pid, c->seg_rand)) >= 0 ||
            (ep->connecting && ep->conn_pid == c->pid && ep->conn_rand == c->seg_rand &&
             dyn_less((int32_t)getpid(), ep->seg_rand, c->pid, c->seg_rand))) {
            c->owner_idx = ex >= 0 ? (uint32_t)ex : 0;
            dyn_answer(c, SHM_CLAIM_DUP);
            continue;
        }
        if (dyn_map(ep, c->pid, c->seg_rand, &h)) {
            dyn_answer(c, SHM_CLAIM_REFUSED);
            continue;
        }
        struct shm_claim *back = c->ring_back > 0 && c->ring_back < (uint32_t)ep->nlocal ?
                                 &shm_claims(h)[c->ring_back] : NULL;
        if (!back || atomic_load_explicit(&back->state, memory_order_acquire) != SHM_CLAIM_RESERVED ||
            back->pid != (int32_t)getpid() || back->seg_rand != ep->seg_rand ||
            c->idx == 0 || c->idx >= (uint32_t)ep->args.size) {
            cvia_warn(SHM, "refused a connection from pid %d: no ring reserved for "
                      "the answer", (int)c->pid);
            munmap(h, ep->seg_bytes);
            dyn_answer(c, SHM_CLAIM_REFUSED);
            continue;
        }
        if ((j = up->peer_new(up->core, ep)) < 0) {
            cvia_warn(SHM, "refused a connection from pid %d: its %d peer indices "
                      "(%d x CVIA_MAX_PEERS) are used up", (int)c->pid, ep->args.size,
                      ep->args.size / ep->nlocal);
            munmap(h, ep->seg_bytes);
            dyn_answer(c, SHM_CLAIM_REFUSED);
            continue;
        }
        int cma = dyn_probe_cma(c->pid, h, ep->cfg.cma);
        /* the claimer writes into ring k only once accepted: reset it from
         * whatever an earlier, dead peer left there */
        struct cvia_ring ring;
        shm_ring_at(ep, ep->seg, (size_t)k, &ring);
        cvia_ring_init(&ring);
        dyn_publish(ep, j, h, c->pid, c->seg_rand, (int)c->ring_back, k, (int)c->idx,
                    cma, (int)c->cma);
        c->owner_idx = (uint32_t)j;
        c->owner_cma = (uint32_t)cma;
        uint32_t want = SHM_CLAIM_POSTED;
        if (!atomic_compare_exchange_strong_explicit(&c->state, &want, SHM_CLAIM_ACCEPTED,
                                                     memory_order_acq_rel,
                                                     memory_order_acquire))
            shm_peer_gone(ep, j, -CVIA_ENOPEER);   /* it gave up meanwhile */
    }
    return events;
}

int shm_dyn_poll(struct cvia_prov_ep *ep)
{
    int events;

    if (!cvia_mlock_trylock(&ep->dyn_lock))
        return 0;   /* a connect in flight takes them */
    events = dyn_accept(ep);
    cvia_mlock_unlock(&ep->dyn_lock);
    return events;
}

static int dyn_alive(pid_t pid)
{
    return kill(pid, 0) == 0 || errno != ESRCH;
}

int shm_dyn_connect(struct cvia_prov_ep *ep, const void *addr, size_t len, int *peer)
{
    const struct cvia_prov_upcalls *up = ep->args.up;
    struct shm_dyn_addr a;
    struct shm_seg_hdr *h = NULL;
    struct shm_claim *c = NULL;
    int r = -1, j = -1, mine = -1, ex, rc, k;
    double deadline;

    /* the host's part; a network provider's may follow (struct cvia_dyn_addr) */
    if (len != sizeof(a) && len != sizeof(struct cvia_dyn_addr))
        return -EINVAL;
    memcpy(&a, addr, sizeof(a));
    if (a.magic != SHM_DYN_MAGIC)
        return -EINVAL;
    if (a.host != ep->host)
        return -CVIA_ENOPROV;
    if (a.pid == (int32_t)getpid() && a.seg_rand == ep->seg_rand) {
        if (a.nonce[0] != ep->nonce[0] || a.nonce[1] != ep->nonce[1])
            return -EACCES;
        *peer = 0;
        return 0;
    }
    cvia_mlock_lock(&ep->dyn_lock);
    if ((j = dyn_find(ep, a.pid, a.seg_rand)) >= 0) {
        *peer = j;
        cvia_mlock_unlock(&ep->dyn_lock);
        return 0;
    }
    if ((rc = dyn_map(ep, a.pid, a.seg_rand, &h)))
        goto out;
    if (h->nonce_hash != shm_dyn_hash(a.nonce)) {
        cvia_error(SHM, "address of pid %d refused: wrong nonce (guessed, forged, or "
                   "of an earlier process)", (int)a.pid);
        rc = -EACCES;
        goto out;
    }
    if ((r = dyn_reserve(ep, a.pid, a.seg_rand)) < 0 ||
        (mine = up->peer_new(up->core, ep)) < 0) {
        cvia_error(SHM, "cannot connect to pid %d: %s", (int)a.pid, r < 0 ?
                   "CVIA_MAX_PEERS peers connected here already" :
                   "this process's peer indices (4 x CVIA_MAX_PEERS over its life) are used up");
        rc = -ENOSPC;
        goto out;
    }
    for (k = 1; k < ep->nlocal; k++) {
        uint32_t want = SHM_CLAIM_FREE;
        if (atomic_compare_exchange_strong(&shm_claims(h)[k].state, &want, SHM_CLAIM_BUSY))
            break;
    }
    if (k == ep->nlocal) {
        cvia_error(SHM, "cannot connect to pid %d: it has CVIA_MAX_PEERS=%d peers "
                   "connected already", (int)a.pid, ep->nlocal);
        rc = -ENOSPC;
        goto out;
    }
    c = &shm_claims(h)[k];
    c->pid = (int32_t)getpid();
    c->seg_rand = ep->seg_rand;
    c->proof[0] = a.nonce[0];
    c->proof[1] = a.nonce[1];
    c->idx = (uint32_t)mine;
    c->ring_back = (uint32_t)r;
    c->cma = (uint32_t)dyn_probe_cma(a.pid, h, ep->cfg.cma);
    atomic_store_explicit(&c->state, SHM_CLAIM_POSTED, memory_order_release);
    atomic_fetch_add_explicit(&h->claim_gen, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&h->sleepers, memory_order_seq_cst)) {
        atomic_fetch_add_explicit(&h->wake, 1, memory_order_release);
        syscall(SYS_futex, &h->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
    ep->connecting = 1;
    ep->conn_pid = a.pid;
    ep->conn_rand = a.seg_rand;
    deadline = cvia__clock_s() + ep->args.connect_timeout;
    for (unsigned i = 0;; i++) {
        uint32_t st = atomic_load_explicit(&c->state, memory_order_acquire);
        if (st == SHM_CLAIM_ACCEPTED) {
            dyn_publish(ep, mine, h, a.pid, a.seg_rand, k, r, (int)c->owner_idx,
                        (int)c->cma, (int)c->owner_cma);
            *peer = mine;
            h = NULL;
            rc = 0;
            break;
        }
        if (st == SHM_CLAIM_REFUSED) {
            cvia_error(SHM, "pid %d refused the connection (wrong nonce, or its "
                       "CVIA_MAX_PEERS reached)", (int)a.pid);
            atomic_store_explicit(&c->state, SHM_CLAIM_FREE, memory_order_release);
            rc = -EACCES;
            break;
        }
        if (st == SHM_CLAIM_DUP) {
            /* it knows us already, or its own connection to us wins: the peer
             * is (or will be) the one made from its claim */
            atomic_store_explicit(&c->state, SHM_CLAIM_FREE, memory_order_release);
            c = NULL;
            dyn_release(ep, r);
            r = -1;
            for (;;) {
                dyn_accept(ep);
                if ((j = dyn_find(ep, a.pid, a.seg_rand)) >= 0) {
                    *peer = j;
                    rc = 0;
                    break;
                }
                if (!dyn_alive(a.pid) || cvia__clock_s() > deadline) {
                    rc = dyn_alive(a.pid) ? -ETIMEDOUT : -CVIA_ENOPEER;
                    break;
                }
                sched_yield();
            }
            break;
        }
        dyn_accept(ep);   /* a connection to us that crosses ours */
        if ((ex = dyn_find(ep, a.pid, a.seg_rand)) >= 0) {
            /* it won: we took its claim, it may not look at ours again
             * (it may be done with corevia for now): withdraw ours */
            uint32_t want = SHM_CLAIM_POSTED;
            if (atomic_compare_exchange_strong(&c->state, &want, SHM_CLAIM_FREE) ||
                want == SHM_CLAIM_DUP || want == SHM_CLAIM_REFUSED) {
                atomic_store_explicit(&c->state, SHM_CLAIM_FREE, memory_order_release);
                c = NULL;
                *peer = ex;
                rc = 0;
                break;
            }
            continue;   /* accepted after all: taken above */
        }
        if ((i & 63) == 63) {
            if (!dyn_alive(a.pid)) {
                rc = -CVIA_ENOPEER;
                break;
            }
            if (cvia__clock_s() > deadline) {
                cvia_error(SHM, "pid %d did not take the connection within "
                           "CVIA_BOOT_TIMEOUT (it must call into corevia)", (int)a.pid);
                rc = -ETIMEDOUT;
                break;
            }
        }
        sched_yield();
    }
    if (rc == 0 && !c && r > 0) {   /* withdrawn: the ring we reserved is not needed */
        dyn_release(ep, r);
        r = -1;
    }
    if (rc && c) {
        /* withdraw: the peer may still take it; if it has, it finds us gone
         * later (our index for it stays unused) */
        uint32_t want = SHM_CLAIM_POSTED;
        if (!atomic_compare_exchange_strong(&c->state, &want, SHM_CLAIM_FREE) &&
            want == SHM_CLAIM_ACCEPTED)
            r = -1;   /* its answers go there: keep the ring out of reuse */
    }
    ep->connecting = 0;
out:
    if (mine >= 0 && !(rc == 0 && *peer == mine))   /* a connection that lost */
        up->peer_unused(up->core, mine);
    if (rc && r > 0)
        dyn_release(ep, r);
    if (h)
        munmap(h, ep->seg_bytes);
    cvia_mlock_unlock(&ep->dyn_lock);
    return rc;
}

/* @peer is gone and failed: its ring in my segment serves the next peer;
 * its segment's name goes if it was killed before unlinking it. */
void shm_dyn_reclaim(struct cvia_prov_ep *ep, int peer)
{
    struct shm_peer *pp = &ep->peers[peer];
    char name[SHM_NAME_MAX];
    int k = ep->lidx[peer];

    if (peer == 0 || k <= 0)
        return;
    cvia_mlock_lock(&pp->rx_lock);
    dyn_release(ep, k);
    cvia_mlock_unlock(&pp->rx_lock);
    /* a peer that exited or closed corevia unlinked its own name; one that
     * was killed did not (it may still be a zombie: no liveness test here,
     * the name is its segment's for this life of corevia only) */
    dyn_seg_name(name, sizeof(name), pp->pid, pp->seg_rand);
    if (shm_unlink(name) == 0)
        cvia_info(SHM, "removed segment %s of dead peer %d", name, peer);
}
