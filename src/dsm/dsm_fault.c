/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Fault handling: mprotect + SIGSEGV on the application view.
 *
 * The handler path is async-signal-safe by construction: it takes d->lock
 * (atomics and sched_yield), copies with memcpy, changes protections with
 * mprotect, reads clock_gettime and sleeps on a futex. Anything that needs
 * communication (a fetch, a first-touch claim) goes to the service thread
 * through the fault slot; the handler never calls corevia, malloc or
 * stdio. It can never find d->lock held by the thread it interrupted,
 * because DSM faults only happen in application code (the DSM and corevia
 * never touch the application view).
 *
 * Unit states (dsm.h): a non-home unit goes INVALID -> CLEAN on a fetch
 * (read-only) -> DIRTY on the first write (twin, writable) -> CLEAN at the
 * end of the interval (diff sent home); a write notice from another rank
 * makes it INVALID again. A home unit is never invalid: EXCL (writable, no
 * copy elsewhere, writes untracked), CLEAN (copies exist: write-protected
 * so that a write is noticed) or DIRTY. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include "dsm/dsm.h"

static struct sigaction old_segv;
static int installed;

void dsm_unit_prot(struct dsm *d, size_t u, int prot)
{
    if (d->uprot[u] == prot)
        return;
    d->uprot[u] = (uint8_t)prot;
    if (!d->scratch)
        mprotect(d->base + u * d->unit, d->unit, prot);
}

void dsm_prot_all(struct dsm *d)
{
    size_t n = dsm_top(d) / d->unit, i = 0;

    while (i < n) {
        size_t j = i + 1;
        int p = d->uprot[i];
        while (j < n && d->uprot[j] == p)
            j++;
        mprotect(d->base + i * d->unit, (j - i) * d->unit, p);
        i = j;
    }
}

/* 1 for a write, 0 for a read, -1 when the machine does not say. */
static int fault_is_write(void *ucv)
{
#if defined(__x86_64__)
    const ucontext_t *uc = ucv;
    return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)ucv;
    return -1;
#endif
}

/* Sleep until the service thread marks the fault slot done. */
static void fault_sleep(struct dsm *d)
{
    uint32_t s;

    while ((s = atomic_load_explicit(&d->fault.state, memory_order_acquire)) != F_DONE)
        dsm_futex_wait(&d->fault.state, s, 0);
    atomic_store_explicit(&d->fault.state, F_IDLE, memory_order_relaxed);
    atomic_fetch_sub(&d->app_waiting, 1);
}

/* Hand unit @u to the service thread and sleep until it is done. */
static void fault_request(struct dsm *d, size_t u, int kind)
{
    d->fault.unit = (uint32_t)u;
    d->fault.kind = kind;
    atomic_fetch_add(&d->app_waiting, 1);
    atomic_store_explicit(&d->fault.state, F_REQ, memory_order_release);
    dsm_kick(d);
    fault_sleep(d);
}

/* A write to unit @u since the last poll tick: the next tick makes it
 * visible to ranks that poll it (dsm_poll_tick). Under lock. */
void dsm_poll_mark(struct dsm *d, struct dsm_unit *x, size_t u)
{
    if (d->cfg.poll <= 0 || d->size < 2)
        return;
    x->wepoch = d->epoch;   /* the latest: copies fetched up to it are dropped */
    if (!d->upollw[u]) {
        d->upollw[u] = 1;
        d->pollw[d->npollw++] = (uint32_t)u;
    }
}

static void make_dirty(struct dsm *d, size_t u)
{
    d->u[u].state = U_DIRTY;
    if (!d->u[u].indirty) {
        d->u[u].indirty = 1;
        if (d->xg)
            d->dirty[d->xctl->ndirty++] = (uint32_t)u;
        else
            d->dirty[d->ndirty++] = (uint32_t)u;
    }
    dsm_poll_mark(d, &d->u[u], u);
    ADD(write_faults, 1);
}

/* Groups: this rank writes unit @u (a DIRTY unit of its host) until its
 * next release. Under lock. */
static void mark_mine(struct dsm *d, size_t u)
{
    uint64_t me = 1ull << d->rank;

    if (!(d->u[u].wmask & me)) {
        d->u[u].wmask |= me;
        d->mine[d->nmine++] = (uint32_t)u;
    }
}

/* dsm_fault with groups across hosts (d->xg), entered under lock with the
 * unit allocated and its home known. The state is the host's; the
 * protection is this process's. A unit another member is fetching is
 * waited for (the fetch lands in the one page); a fetch that an
 * invalidation overtook (PF_STALE) is repeated. */
static int fault_xg(struct dsm *d, size_t u, int write, double t0)
{
    struct dsm_unit *x = &d->u[u];
    const uint64_t me = 1ull << d->rank;
    struct timespec nap = { 0, 20000 };

    if (dsm_ghome(d, x->home) && x->state == U_EXCL) {
        dsm_unit_prot(d, u, P_RW);   /* untracked: no copy on another host */
        cvia_spin_unlock(d->lk);
        d->st.fault_time += cvia__clock_s() - t0;
        return 0;
    }
    if (!dsm_ghome(d, x->home)) {
        for (int again = 0; x->state == U_INVALID;) {
            if (x->pf != PF_NONE) {   /* a member of this host fetches it */
                cvia_spin_unlock(d->lk);
                nanosleep(&nap, NULL);
                cvia_spin_lock(d->lk);
                continue;
            }
            x->pf = PF_FLIGHT;
            cvia_spin_unlock(d->lk);
            fault_request(d, u, FK_FETCH);
            cvia_spin_lock(d->lk);
            if (d->cfg.fetch == DSM_FETCH_COPY)
                memcpy(d->pview + u * d->unit, d->land, d->unit);
            int stale = x->pf == PF_STALE;
            x->pf = PF_NONE;
            ADD(fetches, 1);
            ADD(pages_fetched, d->unit / d->page);
            ADD(fetch_bytes, d->unit);
            if (stale && ++again < 64)   /* invalidated while on its way */
                continue;
            x->state = U_CLEAN;
            x->used = 1;
            x->fetched = 1;
            if (!write)
                ADD(read_faults, 1);
        }
        if (write && x->state == U_CLEAN) {
            memcpy(d->twins + u * d->unit, d->pview + u * d->unit, d->unit);
            ADD(twins, 1);
        }
    }
    if (write) {
        if (x->state != U_DIRTY)
            make_dirty(d, u);
        else
            dsm_poll_mark(d, x, u);
        mark_mine(d, u);
    }
    dsm_unit_prot(d, u, x->state == U_DIRTY && (x->wmask & me) ? P_RW : P_READ);
    cvia_spin_unlock(d->lk);
    d->st.fault_time += cvia__clock_s() - t0;
    return 0;
}

/* Resolve an access to unit @u. Returns 0, or -EFAULT when @u is not
 * allocated (a real segmentation fault). Safe in the SIGSEGV handler. */
int dsm_fault(struct dsm *d, size_t u, int write)
{
    double t0 = cvia__clock_s();
    struct dsm_unit *x = &d->u[u];

    cvia_spin_lock(d->lk);
    if (x->state == U_NONE) {
        cvia_spin_unlock(d->lk);
        return -EFAULT;
    }
    if (x->home < 0 && (write || x->state == U_INVALID)) {
        /* first touch: the unit's manager decides who is home; this rank,
         * if it is the manager (what the service thread would do for a
         * claim of its own, without the message to itself) */
        if (x->mgr == d->rank) {
            dsm_claimed(d, x, d->rank);
        } else {
            cvia_spin_unlock(d->lk);
            fault_request(d, u, FK_CLAIM);
            cvia_spin_lock(d->lk);
        }
    }
    if (d->xg)
        return fault_xg(d, u, write, t0);
    if (x->home == d->rank) {
        if (write && x->state == U_CLEAN)
            make_dirty(d, u);
        else if (write && x->state == U_DIRTY)   /* re-armed by a poll tick */
            dsm_poll_mark(d, x, u);
        dsm_unit_prot(d, u, x->state == U_CLEAN ? P_READ : P_RW);
        cvia_spin_unlock(d->lk);
        d->st.fault_time += cvia__clock_s() - t0;
        return 0;
    }
    if (x->state == U_CLEAN && d->uprot[u] == P_NONE) {
        /* a prefetched unit, touched for the first time: it is in place,
         * this fault only records the use */
        x->used = 1;
        ADD(prefetch_hits, 1);
        if (x->ahead) {
            x->ahead = 0;
            d->ahead_used++;
        }
    }
    if (x->state == U_INVALID && x->pf == PF_FLIGHT) {
        /* a prefetch is on its way: wait for it rather than ask again (the
         * service thread checks the slot under the lock when it lands) */
        d->fault.unit = (uint32_t)u;
        d->fault.kind = FK_WAITPF;
        atomic_fetch_add(&d->app_waiting, 1);
        atomic_store_explicit(&d->fault.state, F_SENT, memory_order_release);
        cvia_spin_unlock(d->lk);
        dsm_kick(d);
        fault_sleep(d);
        cvia_spin_lock(d->lk);
        x->used = 1;
        ADD(prefetch_waits, 1);
        if (x->ahead) {
            x->ahead = 0;
            d->ahead_used++;
        }
        if (!write)
            ADD(read_faults, 1);
    }
    for (int again = 0; x->state == U_INVALID; again++) {
        /* a poll note that comes while the unit is on its way may be about
         * a write the fetch missed: fetch once more (the note is sent once
         * the write is at its home, so the second fetch has it) */
        x->noted = 0;
        cvia_spin_unlock(d->lk);
        fault_request(d, u, FK_FETCH);
        cvia_spin_lock(d->lk);
        if (d->cfg.fetch == DSM_FETCH_COPY)   /* the paper's base: one more copy */
            memcpy(d->pview + u * d->unit, d->land, d->unit);
        if (x->noted && again < 2)
            continue;
        if (x->noted) {
            /* notes keep coming while it is on its way: this access gets
             * this copy, and the service thread's next poll tick drops it
             * (a note consumed by a flight and then ignored left a reader
             * on its stale copy for good: dsm.poll-zcopy.np4 waited 60 s) */
            if (d->nrenote == sizeof(d->renote) / sizeof(d->renote[0]))
                continue;   /* the list is full: fetch again */
            d->renote[d->nrenote++] = (uint32_t)u;
        }
        x->state = U_CLEAN;
        x->used = 1;
        x->fetched = 1;
        ADD(fetches, 1);
        ADD(pages_fetched, d->unit / d->page);
        ADD(fetch_bytes, d->unit);
        if (!write)
            ADD(read_faults, 1);
    }
    if (write && x->state == U_CLEAN) {
        memcpy(d->twins + u * d->unit, d->pview + u * d->unit, d->unit);
        ADD(twins, 1);
        make_dirty(d, u);
    } else if (write && x->state == U_DIRTY) {   /* re-armed by a poll tick */
        dsm_poll_mark(d, x, u);
    }
    dsm_unit_prot(d, u, x->state == U_DIRTY ? P_RW : P_READ);
    cvia_spin_unlock(d->lk);
    d->st.fault_time += cvia__clock_s() - t0;
    return 0;
}

/* ---- prefetch -------------------------------------------------------------- */

/* Read unit @u from its home into our protocol view (RDMA read). Only for
 * a unit this rank fetched before: its home tracks every write to it. */
int dsm_pull(struct dsm *d, size_t u)
{
    cvia_req_t req = NULL;
    size_t off = u * d->unit;
    int rc = cvia_read(d->pview + off, d->unit, &d->peer_view[d->u[u].home], off, &req);

    if (!rc)
        rc = cvia_wait(&req, NULL);
    if (rc)
        dsm_fatal(rc, "reading unit %zu from rank %d: %s", u, d->u[u].home,
                  cvia_strerror(rc));
    ADD(rdma_bytes, d->unit);
    return 0;
}

/* Send the requests gathered in @b, one M_FETCH for all (the first unit
 * in the header, the others as (unit, landing slot + 1) pairs after it):
 * the home serves them in one pass. One message instead of one a unit
 * matters across hosts: a message is a TCP send, the home's service
 * thread handles each, and past DSM_SLOTS of them the rest wait for
 * credits, a round trip for each DSM_SLOTS / 2. */
void dsm_pf_flush(struct dsm *d, struct dsm_pfb *b)
{
    struct dsm_hdr h = { .type = M_FETCH, .pad = 1 };

    if (!b->n)
        return;
    h.a = b->pair[0];
    h.c = b->pair[1];
    h.b = b->epoch;
    dsm_send(d, b->home, &h, b->pair + 2, (b->n - 1) * 2 * sizeof(uint32_t));
    b->n = 0;
}

/* A unit asked for by message, ahead of its touch (barrier prefetch,
 * fetch-ahead): called with d->lk held and the unit eligible (invalid,
 * nothing in flight, another's home, a landing slot free in copy mode);
 * returns with it released. The request joins @b (sent by dsm_pf_flush,
 * or here when @b is full or for another home). */
void dsm_pf_add(struct dsm *d, struct dsm_pfb *b, struct dsm_unit *x, uint32_t u, int home)
{
    uint32_t c = 0;

    if (d->cfg.fetch == DSM_FETCH_COPY)
        c = (uint32_t)d->pf_free[--d->npf_free] + 1;
    x->pf = PF_FLIGHT;
    b->epoch = d->epoch;
    cvia_spin_unlock(d->lk);
    if (b->n && (b->home != home || b->n == DSM_PFB_MAX))
        dsm_pf_flush(d, b);
    b->home = home;
    b->pair[2 * b->n] = u;
    b->pair[2 * b->n + 1] = c;
    b->n++;
    ADD(prefetches, 1);
}

/* A unit read ahead (pull) is in place: valid, but left inaccessible
 * until touched (see dsm_page_landed). d->lk held. */
void dsm_pf_pulled(struct dsm *d, struct dsm_unit *x)
{
    x->state = U_CLEAN;
    ADD(prefetches, 1);
    ADD(fetches, 1);
    ADD(pages_fetched, d->unit / d->page);
    ADD(fetch_bytes, d->unit);
    ADD(rdma_bytes, d->unit);
}

/* The RDMA reads of @np units read ahead (pull): a failed one ends the job. */
void dsm_pf_wait(cvia_req_t *reqs, const uint32_t *units, size_t np)
{
    for (size_t i = 0; i < np; i++) {
        int rc = cvia_wait(&reqs[i], NULL);
        if (rc)
            dsm_fatal(rc, "reading unit %u: %s", units[i], cvia_strerror(rc));
    }
}

/* Ask the homes of @units (invalidated at a barrier, valid and used before
 * it) for them now, so that they are back before they are touched. App
 * thread, outside signal context. A unit fetched before is read at once
 * (pull); another is asked for and arrives as a tagged write. */
void dsm_prefetch(struct dsm *d, const uint32_t *units, size_t n)
{
    cvia_req_t *reqs = NULL;
    uint32_t *pulled = NULL;
    size_t np = 0;
    struct dsm_pfb b = { .n = 0 };

    if (d->cfg.fetch == DSM_FETCH_PULL && n) {
        reqs = calloc(n, sizeof(*reqs));
        pulled = malloc(n * sizeof(*pulled));
        if (!reqs || !pulled)
            dsm_fatal(-ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        struct dsm_unit *x = &d->u[units[i]];
        int home;

        cvia_spin_lock(d->lk);
        if (x->state != U_INVALID || x->pf || x->home < 0 || dsm_ghome(d, x->home) ||
            (d->cfg.fetch == DSM_FETCH_COPY && !d->npf_free) ||
            (d->xg && !(reqs && x->fetched))) {   /* groups: pulls only */
            cvia_spin_unlock(d->lk);
            continue;
        }
        home = x->home;
        x->ahead = 0;   /* the barrier's guess now, not fetch-ahead's */
        if (reqs && x->fetched) {
            size_t off = (size_t)units[i] * d->unit;
            x->noted = 0;
            if (d->xg)    /* members of this host wait for it */
                x->pf = PF_FLIGHT;
            cvia_spin_unlock(d->lk);
            int rc = cvia_read(d->pview + off, d->unit, &d->peer_view[home], off, &reqs[np]);
            if (rc)
                dsm_fatal(rc, "reading unit %u from rank %d: %s", units[i], home,
                          cvia_strerror(rc));
            pulled[np++] = units[i];
            continue;
        }
        dsm_pf_add(d, &b, x, units[i], home);
    }
    dsm_pf_flush(d, &b);
    dsm_pf_wait(reqs, pulled, np);
    cvia_spin_lock(d->lk);
    for (size_t i = 0; i < np; i++) {
        struct dsm_unit *x = &d->u[pulled[i]];
        /* valid, but left inaccessible until touched (see dsm_page_landed);
         * unless a poll note came meanwhile: then fetched again on touch
         * (groups: or an invalidation, which marks the flight stale) */
        if (d->xg) {
            int stale = x->pf != PF_FLIGHT;
            x->pf = PF_NONE;
            if (stale)
                continue;
        } else if (x->noted) {
            continue;
        }
        dsm_pf_pulled(d, x);
    }
    cvia_spin_unlock(d->lk);
    free(reqs);
    free(pulled);
}

static void fault_done(struct dsm *d)
{
    atomic_store_explicit(&d->fault.state, F_DONE, memory_order_release);
    dsm_futex_wake(&d->fault.state);
    d->woke_app = 1;
}

/* A unit arrived (service thread). A fault's is finished by the handler;
 * a prefetch's is made valid here, unless it was invalidated again while
 * on its way. */
void dsm_page_landed(struct dsm *d, uint64_t imm)
{
    size_t u = (size_t)(imm & ((1ull << 40) - 1));
    unsigned tag = (unsigned)((imm >> 40) & 0xffff);
    struct dsm_unit *x;

    /* a prefetch: copy mode names its landing slot, the others how many
     * consecutive units the write carried (the home's one write for them) */
    size_t n = d->cfg.fetch == DSM_FETCH_COPY ? 1 : tag;

    if (!tag) {
        fault_done(d);
        return;
    }
    if (u >= d->nunits || n > d->nunits - u)
        dsm_fatal(-CVIA_EPROTO, "a unit %zu beyond the region arrived", u + n - 1);
    cvia_spin_lock(d->lk);
    for (size_t v = u; v < u + n; v++) {
        x = &d->u[v];
        if (d->cfg.fetch == DSM_FETCH_COPY) {
            if (x->pf == PF_FLIGHT)
                memcpy(d->pview + v * d->unit, d->land + (size_t)tag * d->unit, d->unit);
            d->pf_free[d->npf_free++] = (uint16_t)tag;
        }
        if (x->pf == PF_FLIGHT && x->state == U_INVALID) {
            /* valid, but left inaccessible: the first touch tells whether
             * the prefetch was used, which decides whether to prefetch it
             * again */
            x->state = U_CLEAN;
            ADD(fetches, 1);
            ADD(pages_fetched, d->unit / d->page);
            ADD(fetch_bytes, d->unit);
        }
        x->pf = PF_NONE;
        if (atomic_load(&d->fault.state) == F_SENT && d->fault.kind == FK_WAITPF &&
            d->fault.unit == v)
            fault_done(d);
    }
    cvia_spin_unlock(d->lk);
}

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
    struct dsm *d = &dsm__g;
    int saved = errno;
    char *a = si->si_addr;

    if (d->up && !d->scratch && a >= d->base && a < d->base + dsm_top(d)) {
        size_t u = (size_t)(a - d->base) / d->unit;
        int w = fault_is_write(uc);
        if (w < 0)   /* a fault on a readable unit can only be a write */
            w = __atomic_load_n(&d->uprot[u], __ATOMIC_RELAXED) == P_READ;
        if (dsm_fault(d, u, w) == 0) {
            errno = saved;
            return;
        }
    }
    /* not a DSM fault: whoever handled SIGSEGV before us, or the default */
    if ((old_segv.sa_flags & SA_SIGINFO) && old_segv.sa_sigaction) {
        old_segv.sa_sigaction(sig, si, uc);
    } else if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN) {
        old_segv.sa_handler(sig);
    } else {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGSEGV, &dfl, NULL);   /* the access faults again and kills */
    }
    errno = saved;
}

int dsm_fault_install(struct dsm *d)
{
    struct sigaction sa;

    (void)d;
    if (installed)
        return 0;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv)) {
        dsm_err("installing the SIGSEGV handler: %s", strerror(errno));
        return -errno;
    }
    installed = 1;
    return 0;
}

void dsm_fault_remove(struct dsm *d)
{
    (void)d;
    if (!installed)
        return;
    sigaction(SIGSEGV, &old_segv, NULL);
    installed = 0;
}
