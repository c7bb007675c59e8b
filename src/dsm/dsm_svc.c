/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The service thread (the paper's "communication thread"): it owns every
 * incoming event, all of which arrive as one-sided writes with immediate
 * data: control messages into inbox slots, units into faulting pages, diffs
 * into diff buffers, and the acks that free them. It polls them with
 * cvia_imm_poll() alone, which never backs off: a request is seen on the
 * next poll, whatever the idle history of the thread.
 *
 * While the application thread waits for it (a fault, a lock, a barrier)
 * it polls without pause; while the application computes, it polls
 * CVIA_DSM_POLLS times after its last event, naps CVIA_DSM_NAP at a time
 * for CVIA_DSM_IDLE, and then sleeps: with every
 * peer on this host in cvia_imm_block(), until a peer writes (corevia's
 * futex in the shm segment) or the application kicks (cvia_imm_kick(),
 * async-signal-safe, so the fault handler may); with peers elsewhere,
 * where corevia could only poll its sockets, CVIA_DSM_NAP at a time on a
 * futex the application can kick. Polling with 50 us naps cost a rank
 * 11% of a CPU while it computed, on the core it shares with the
 * application when pinned.
 * While the application waits and nothing arrives, it also tests a receive
 * that only a dead peer completes (with an error), so that corevia's
 * liveness checks run and a lost peer ends the job instead of hanging it. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dsm/dsm.h"

/* The watch receive stays posted for the life of the process: corevia has
 * no cancel, and cvia_finalize() releases it. */
static cvia_req_t watch_req;
static char watch_buf[8];
static _Atomic int svc_sleeping;


void dsm_futex_wait(_Atomic uint32_t *w, uint32_t val, double timeout)
{
    struct timespec ts, *tp = NULL;

    if (timeout > 0) {
        ts.tv_sec = (time_t)timeout;
        ts.tv_nsec = (long)((timeout - (double)ts.tv_sec) * 1e9);
        tp = &ts;
    }
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

void dsm_futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Async-signal-safe (the fault handler kicks). The service thread naps
 * on d->kick (svc_sleeping 1) or sleeps in cvia_imm_block() (2); only the
 * latter needs corevia's kick, which also wakes whatever else sleeps on
 * this rank's shm segment. */
void dsm_kick(struct dsm *d)
{
    int s;

    atomic_fetch_add(&d->kick, 1);
    if ((s = atomic_load(&svc_sleeping))) {
        dsm_futex_wake(&d->kick);
        if (s == 2)
            cvia_imm_kick();
    }
}

/* ---- sending ------------------------------------------------------------------ */

void dsm_pending_add(struct dsm *d, cvia_req_t req, void *buf)
{
    struct dsm_pending *p = malloc(sizeof(*p));

    if (!p)
        dsm_fatal(-ENOMEM, "out of memory");
    p->next = NULL;
    p->req = req;
    p->buf = buf;
    cvia_spin_lock(&d->send_lock);
    CVIA_HINT_STORE(*d->pend_tail, p);
    d->pend_tail = &p->next;
    CVIA_HINT_STORE(d->npend, d->npend + 1);
    cvia_spin_unlock(&d->send_lock);
}

/* Under send_lock: write message @m into the next inbox slot at @dest and
 * post its body, if any. The caller checked the credit. */
static void put_slot(struct dsm *d, int dest, char *m, size_t len, char *body, size_t blen)
{
    uint64_t seq = d->tx_seq[dest]++;
    size_t off = ((size_t)d->rank * DSM_SLOTS + seq % DSM_SLOTS) * DSM_SLOT;
    cvia_req_t r1 = NULL, r2 = NULL;
    int rc;

    rc = cvia_write(m, len, &d->peer_inbox[dest], off, CVIA_WRITE_IMM,
                    ((uint64_t)IMM_MSG << 56) | (seq & 0xffffffffffffull), &r1);
    if (!rc && body)
        rc = cvia_isend(body, blen, dest, DSM_TAG_BODY, &r2);
    if (rc) {
        cvia_spin_unlock(&d->send_lock);
        dsm_fatal(rc, "sending to rank %d: %s", dest, cvia_strerror(rc));
    }
    /* the pending list is under send_lock too: append in place */
    struct dsm_pending *p1 = malloc(sizeof(*p1)), *p2 = body ? malloc(sizeof(*p2)) : NULL;
    if (!p1 || (body && !p2)) {
        cvia_spin_unlock(&d->send_lock);
        dsm_fatal(-ENOMEM, "out of memory");
    }
    p1->next = NULL; p1->req = r1; p1->buf = m;
    CVIA_HINT_STORE(*d->pend_tail, p1);
    d->pend_tail = &p1->next;
    CVIA_HINT_STORE(d->npend, d->npend + 1);
    if (p2) {
        p2->next = NULL; p2->req = r2; p2->buf = body;
        CVIA_HINT_STORE(*d->pend_tail, p2);
        d->pend_tail = &p2->next;
        CVIA_HINT_STORE(d->npend, d->npend + 1);
    }
}

static int has_credit(struct dsm *d, int dest)
{
    return d->tx_seq[dest] - atomic_load_explicit(&d->credit[dest], memory_order_acquire)
           < DSM_SLOTS;
}

int dsm_send(struct dsm *d, int dest, struct dsm_hdr *h, const void *data, size_t len)
{
    size_t inl = sizeof(*h) + len <= DSM_SLOT ? len : 0;
    char *m = malloc(sizeof(*h) + inl), *b = NULL;

    h->src = d->rank;
    h->body = inl == len ? 0 : len;
    if (!m || (h->body && !(b = malloc(len))))
        dsm_fatal(-ENOMEM, "out of memory for a %zu-byte message", len);
    memcpy(m, h, sizeof(*h));
    if (inl)
        memcpy(m + sizeof(*h), data, inl);
    if (b)
        memcpy(b, data, len);
    cvia_spin_lock(&d->send_lock);
    if (!d->out_head[dest] && has_credit(d, dest)) {
        put_slot(d, dest, m, sizeof(*h) + inl, b, h->body);
        cvia_spin_unlock(&d->send_lock);
    } else {
        /* no slot free at the receiver: the service thread sends it later,
         * in order, when credits come back */
        struct dsm_out *o = malloc(sizeof(*o));
        if (!o) {
            cvia_spin_unlock(&d->send_lock);
            dsm_fatal(-ENOMEM, "out of memory");
        }
        o->next = NULL;
        o->msg = m;
        o->len = sizeof(*h) + inl;
        o->body = b;
        o->blen = h->body;
        *d->out_tail[dest] = o;
        d->out_tail[dest] = &o->next;
        d->nout++;
        cvia_spin_unlock(&d->send_lock);
        dsm_kick(d);
    }
    ADD(msgs_sent, 1);
    ADD(msg_bytes, sizeof(*h) + len);
    return 0;
}

/* Service thread: send what waited for credits. */
static int drain_out(struct dsm *d)
{
    int n = 0;

    cvia_spin_lock(&d->send_lock);
    for (int dest = 0; dest < d->size && d->nout; dest++) {
        struct dsm_out *o;
        while ((o = d->out_head[dest]) && has_credit(d, dest)) {
            d->out_head[dest] = o->next;
            if (!o->next)
                d->out_tail[dest] = &d->out_head[dest];
            d->nout--;
            put_slot(d, dest, o->msg, o->len, o->body, o->blen);
            free(o);
            n++;
        }
    }
    cvia_spin_unlock(&d->send_lock);
    return n;
}

/* Complete what was sent, oldest first, stopping at the first unfinished.
 * On shm a write is complete when posted; over a network it waits for the
 * target's answer, so this runs now and then, not on every poll (testing
 * an unfinished request makes corevia's idle back-off sleep). */
static int reap(struct dsm *d)
{
    int n = 0;

    for (;;) {
        struct dsm_pending *p;
        int done = 0, rc;

        cvia_spin_lock(&d->send_lock);
        p = d->pend;
        cvia_spin_unlock(&d->send_lock);
        if (!p)
            break;
        rc = cvia_test(&p->req, &done, NULL);
        if (rc && !atomic_load(&d->finishing))
            dsm_fatal(rc, "a transfer failed: %s", cvia_strerror(rc));
        if (!done)
            break;
        cvia_spin_lock(&d->send_lock);
        CVIA_HINT_STORE(d->pend, p->next);
        if (!d->pend)
            d->pend_tail = &d->pend;
        CVIA_HINT_STORE(d->npend, d->npend - 1);
        cvia_spin_unlock(&d->send_lock);
        free(p->buf);
        free(p);
        n++;
    }
    return n;
}

/* ---- the mailbox: messages for the application thread ------------------------- */

static void mbox_put(struct dsm *d, const struct dsm_hdr *h, char *data, size_t len)
{
    struct dsm_mail *m = malloc(sizeof(*m));

    if (!m)
        dsm_fatal(-ENOMEM, "out of memory");
    m->next = NULL;
    m->h = *h;
    m->data = data;
    m->len = len;
    cvia_spin_lock(d->lk);
    *d->mbox_tail = m;
    d->mbox_tail = &m->next;
    cvia_spin_unlock(d->lk);
    atomic_fetch_add(&d->mbox_seq, 1);
    dsm_futex_wake(&d->mbox_seq);
    d->woke_app = 1;
}

void dsm_mail_free(struct dsm_mail *m)
{
    if (m) {
        free(m->data);
        free(m);
    }
}

/* Wait for a message of @type (from @src unless < 0, with a == @a unless
 * UINT32_MAX) and take it. The app thread only. */
struct dsm_mail *dsm_mbox_wait(struct dsm *d, int type, int src, uint32_t a)
{
    for (;;) {
        uint32_t seq = atomic_load(&d->mbox_seq);
        struct dsm_mail **pp, *m = NULL;

        cvia_spin_lock(d->lk);
        for (pp = &d->mbox; *pp; pp = &(*pp)->next) {
            struct dsm_mail *c = *pp;
            if (c->h.type == type && (src < 0 || c->h.src == src) &&
                (a == UINT32_MAX || c->h.a == a)) {
                m = c;
                *pp = c->next;
                if (d->mbox_tail == &c->next)
                    d->mbox_tail = pp;
                break;
            }
        }
        cvia_spin_unlock(d->lk);
        if (m)
            return m;
        atomic_fetch_add(&d->app_waiting, 1);
        dsm_kick(d);
        dsm_futex_wait(&d->mbox_seq, seq, 0);
        atomic_fetch_sub(&d->app_waiting, 1);
    }
}

/* ---- pages and homes ------------------------------------------------------------- */

static void defer(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len)
{
    struct dsm_mail *m = calloc(1, sizeof(*m));

    if (!m || (len && !(m->data = malloc(len))))
        dsm_fatal(-ENOMEM, "out of memory");
    if (len)
        memcpy(m->data, p, len);
    m->len = len;
    m->h = *h;
    m->next = d->deferred;
    d->deferred = m;
}

static void serve_run(struct dsm *d, const struct dsm_hdr *h, size_t u, size_t n, uint64_t c);

/* As home: send unit h->a to h->src, straight into its faulting page (or
 * its landing slot), and the units of the payload's pairs too; consecutive
 * units that go straight into the pages (a prefetch in zcopy or pull mode)
 * in one RDMA write (LU's 8 KiB blocks, ocean's rows: one TCP message and
 * one event at the requester instead of one a unit). */
static void on_fetch(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len)
{
    const size_t np = len / (2 * sizeof(uint32_t)) + 1;

    if (len % (2 * sizeof(uint32_t)) || (len && !h->pad))
        dsm_fatal(-CVIA_EPROTO, "a malformed fetch from rank %d", h->src);
    cvia_spin_lock(d->lk);
    if (h->b > d->epoch) {
        /* the requester passed a barrier this rank is still finishing:
         * serve it once the barrier's copyset changes are done */
        cvia_spin_unlock(d->lk);
        defer(d, h, p, len);
        return;
    }
    cvia_spin_unlock(d->lk);
    for (size_t i = 0, n; i < np; i += n) {
        /* pair i: the header's unit (i = 0), or the payload's pair i - 1 */
        uint32_t pr[2] = { h->a, (uint32_t)h->c }, nx[2];
        if (i)
            memcpy(pr, p + (i - 1) * sizeof(pr), sizeof(pr));
        for (n = 1; h->pad && !pr[1] && i + n < np && n < DSM_PFB_MAX; n++) {
            memcpy(nx, p + (i + n - 1) * sizeof(nx), sizeof(nx));
            if (nx[1] || nx[0] != pr[0] + n)
                break;
        }
        serve_run(d, h, pr[0], n, pr[1]);
    }
}

/* Units @u .. @u + @n - 1 to h->src: the copy exists from now on. */
static void serve_run(struct dsm *d, const struct dsm_hdr *h, size_t u, size_t n, uint64_t c)
{
    size_t off = u * d->unit;
    int src = h->src, rc;
    cvia_req_t req = NULL;
    void *bounce = NULL;

    cvia_spin_lock(d->lk);
    if (u >= d->nunits || n > d->nunits - u)
        dsm_fatal(-CVIA_EPROTO, "rank %d fetched unit %zu from rank %d, beyond the region",
                  src, u + n - 1, d->rank);
    for (size_t v = u; v < u + n; v++) {
        struct dsm_unit *x = &d->u[v];
        if (x->home != d->rank)
            dsm_fatal(-CVIA_EPROTO, "rank %d fetched unit %zu from rank %d, not its home",
                      src, v, d->rank);
        /* from now on a write here must be noticed: the copy exists; and since
         * the requester may later read the unit without asking (pull), it stays
         * tracked for good */
        x->copyset |= 1ull << src;
        x->sticky = 1;
        if (x->state == U_EXCL) {
            x->state = U_CLEAN;
            /* groups: the other ranks of this host may write it without a
             * fault until they take this in (their next release, poll tick) */
            if (d->xg)
                d->tracked[d->xctl->ntracked++] = (uint32_t)v;
        }
        if (x->state == U_CLEAN)
            dsm_unit_prot(d, v, P_READ);
    }
    cvia_spin_unlock(d->lk);

    /* the tag tells the requester a fault's unit (0) from a prefetch's:
     * its landing slot (copy mode), or how many units the write carries */
    uint64_t tag = h->pad ? (c ? c - 1 : n) : 0;
    uint64_t imm = ((uint64_t)IMM_PAGE << 56) | (tag << 40) | u;
    if (c) {   /* copy mode: through a send buffer into a receive buffer */
        if (!(bounce = malloc(d->unit)))
            dsm_fatal(-ENOMEM, "out of memory");
        memcpy(bounce, d->pview + off, d->unit);
        rc = cvia_write(bounce, d->unit, &d->peer_land[src], (c - 1) * d->unit,
                        CVIA_WRITE_IMM, imm, &req);
    } else {
        rc = cvia_write(d->pview + off, n * d->unit, &d->peer_view[src], off, CVIA_WRITE_IMM,
                        imm, &req);
    }
    if (rc)
        dsm_fatal(rc, "writing unit %zu to rank %d: %s", u, src, cvia_strerror(rc));
    dsm_pending_add(d, req, bounce);
    ADD(pages_served, n);
    ADD(rdma_writes, 1);
    ADD(rdma_bytes, n * d->unit);
}

/* As a unit's manager (first touch): the first claimer becomes home. */
static void on_claim(struct dsm *d, const struct dsm_hdr *h)
{
    struct dsm_hdr r = { .type = M_CLAIMED, .a = h->a };

    cvia_spin_lock(d->lk);
    if (d->u[h->a].home < 0)
        d->u[h->a].home = (int16_t)h->src;
    r.b = (uint32_t)d->u[h->a].home;
    cvia_spin_unlock(d->lk);
    dsm_send(d, h->src, &r, NULL, 0);
}

static void fault_done(struct dsm *d)
{
    atomic_store_explicit(&d->fault.state, F_DONE, memory_order_release);
    dsm_futex_wake(&d->fault.state);
    d->woke_app = 1;
}

/* Unit @x's home is @home, as its manager decided. Under lock. */
void dsm_claimed(struct dsm *d, struct dsm_unit *x, int home)
{
    x->home = (int16_t)home;
    if (home == d->rank) {
        /* never written before: every rank's zero copy is valid */
        x->copyset = dsm_all_others(d, d->rank);
    }
}

static void on_claimed(struct dsm *d, const struct dsm_hdr *h)
{
    cvia_spin_lock(d->lk);
    dsm_claimed(d, &d->u[h->a], (int)h->b);
    cvia_spin_unlock(d->lk);
    fault_done(d);
}

/* Fetch-ahead (CVIA_DSM_AHEAD, at most 64): predict from this rank's fault
 * fetches which units it reads next and ask for them with the fault's own,
 * as a barrier's prefetch does (tagged writes, or RDMA reads of units
 * fetched before), so that their round trips overlap the fault's. Two
 * patterns, over runs (a run: fault fetches at consecutive units, counting
 * the units asked for ahead):
 *  - a stream: the third unit of a run or later (barnes reads process 0's
 *    tree, ocean a neighbour's rows): the next `ahead` units that follow;
 *  - a stride: a run starts S units after the previous run's start, which
 *    started S after the one before, and runs were L <= `ahead` long (LU on
 *    2 ranks reads 8 KiB blocks 64 units apart, a column of its matrix):
 *    the rest of this run and the next runs at S, 2S, ... up to `ahead`.
 * Units of this rank, valid ones and ones on their way are skipped. They
 * land valid and inaccessible; the first touch is a local fault (counted
 * in prefetch_hits). A copy taken now is what a fault would fetch now: the
 * requester's last acquire is behind it, and a notice that comes later
 * invalidates it as it would the fault's copy. Service thread, fault slot
 * F_SENT (the application thread waits, so nothing of this rank faults
 * meanwhile). @first: the fault's own RDMA read (pull), waited for with
 * the others. */
#define AHEAD_GAP 16
static void fetch_ahead(struct dsm *d, size_t u, cvia_req_t first)
{
    const size_t k = d->cfg.ahead > 0 && !d->xg ? (size_t)d->cfg.ahead : 0;
    size_t cand[64], nc = 0, np = 0;
    cvia_req_t reqs[65];
    uint32_t pulled[65];
    size_t adv_s = 0, adv_m = 0, adv_len = 0;

    if (u >= d->ahead_end && u <= d->ahead_end + AHEAD_GAP) {   /* the run goes on */
        d->ahead_end = u + 1;
        if (u >= d->run[0] + 2)                              /* a stream */
            for (size_t v = u + 1; v < d->nunits && nc < k; v++)
                cand[nc++] = v;
    } else {                                                 /* a new run */
        size_t len = d->ahead_end - d->run[0];
        d->run[2] = d->run[1];
        d->run[1] = d->run[0];
        d->run[0] = u;
        d->ahead_end = u + 1;
        /* a stride: three runs S apart; or two, S being the stride
         * followed last (LU's next column: its first two blocks, not
         * three, tell the pattern) */
        int again = d->stride && d->run[1] < u && u - d->run[1] == d->stride;
        if (again)
            len = d->slen;
        if (k && len <= k && len > 0 &&
            (again || (d->run[2] < d->run[1] && d->run[1] < u &&
                       u - d->run[1] == d->run[1] - d->run[2]))) {
            size_t s = u - d->run[1], m;
            for (size_t v = u + 1; v < u + len && v < d->nunits; v++)
                cand[nc++] = v;
            for (m = 1; nc + len <= k && u + m * s + len <= d->nunits; m++)
                for (size_t v = u + m * s; v < u + m * s + len; v++)
                    cand[nc++] = v;
            if (m > 1) {   /* applied below if the guess is sent */
                adv_s = s;
                adv_m = m;
                adv_len = len;
            }
        } else if (k && len > 1 && len <= k) {
            /* no pattern yet: a run as long as the previous one (LU's
             * 8 KiB blocks are two units; the second one no fault) */
            for (size_t v = u + 1; v < u + len && v < d->nunits; v++)
                cand[nc++] = v;
        }
    }
    if (first) {
        reqs[np] = first;
        pulled[np++] = (uint32_t)u;
    }
    cvia_spin_lock(d->lk);
    d->u[u].ahead = 0;
    /* guesses that go unused cost a fetch and a home unit tracked for
     * good (FFT's transposes run past what a phase reads): while fewer
     * than half of the recent ones were touched, only one pattern in 8
     * is followed (a probe, so that the ratio can recover) */
    if (nc && d->ahead_asked >= 4 * k && 2 * d->ahead_used < d->ahead_asked &&
        (++d->ahead_skips & 7))
        nc = 0;
    if (nc && adv_m > 1) {   /* as if the runs asked for were faults; a
                              * skipped guess leaves the stride as it
                              * was, so the next run still continues it */
        d->stride = adv_s;
        d->slen = adv_len;
        d->run[0] = u + (adv_m - 1) * adv_s;
        d->run[1] = d->run[0] - adv_s;
        d->ahead_end = d->run[0] + adv_len;
    }
    if (d->ahead_asked >= 64 * k) {   /* recent ones: halve both */
        d->ahead_asked /= 2;
        d->ahead_used /= 2;
    }
    cvia_spin_unlock(d->lk);
    struct dsm_pfb b = { .n = 0 };
    for (size_t i = 0; i < nc; i++) {
        size_t v = cand[i];
        struct dsm_unit *x = &d->u[v];
        int home;

        if (v >= d->ahead_end)
            d->ahead_end = v + 1;
        cvia_spin_lock(d->lk);
        if (x->state != U_INVALID || x->pf || x->home < 0 || x->home == d->rank) {
            cvia_spin_unlock(d->lk);
            continue;
        }
        if (d->cfg.fetch == DSM_FETCH_COPY && !d->npf_free) {
            cvia_spin_unlock(d->lk);
            break;
        }
        home = x->home;
        if (d->cfg.fetch == DSM_FETCH_PULL && x->fetched) {
            size_t off = v * d->unit;
            x->noted = 0;
            cvia_spin_unlock(d->lk);
            int rc = cvia_read(d->pview + off, d->unit, &d->peer_view[home], off, &reqs[np]);
            if (rc)
                dsm_fatal(rc, "reading unit %zu from rank %d: %s", v, home, cvia_strerror(rc));
            pulled[np++] = (uint32_t)v;
            continue;
        }
        x->ahead = 1;
        d->ahead_asked++;
        dsm_pf_add(d, &b, x, (uint32_t)v, home);
    }
    dsm_pf_flush(d, &b);
    dsm_pf_wait(reqs, pulled, np);
    if (first) {   /* the fault's unit: the handler makes it valid */
        ADD(rdma_bytes, d->unit);
        memmove(pulled, pulled + 1, --np * sizeof(*pulled));
    }
    cvia_spin_lock(d->lk);
    for (size_t i = 0; i < np; i++) {
        struct dsm_unit *x = &d->u[pulled[i]];
        if (x->noted || x->state != U_INVALID)   /* a poll note came meanwhile */
            continue;
        x->ahead = 1;
        d->ahead_asked++;
        dsm_pf_pulled(d, x);                     /* inaccessible until touched */
    }
    cvia_spin_unlock(d->lk);
}

/* The handler asked for something. */
static int poll_fault(struct dsm *d)
{
    struct dsm_hdr h = { 0 };
    int dest;

    if (atomic_load_explicit(&d->fault.state, memory_order_acquire) != F_REQ)
        return 0;
    atomic_store(&d->fault.state, F_SENT);
    h.a = d->fault.unit;
    cvia_spin_lock(d->lk);
    if (d->fault.kind == FK_FETCH && d->cfg.fetch == DSM_FETCH_PULL &&
        d->u[h.a].fetched) {
        /* the home tracks this unit: read it ourselves */
        cvia_req_t req = NULL;
        size_t off = (size_t)h.a * d->unit;
        int rc;
        cvia_spin_unlock(d->lk);
        if ((rc = cvia_read(d->pview + off, d->unit, &d->peer_view[d->u[h.a].home], off, &req)))
            dsm_fatal(rc, "reading unit %u from rank %d: %s", h.a, d->u[h.a].home,
                      cvia_strerror(rc));
        fetch_ahead(d, h.a, req);
        fault_done(d);
        return 1;
    }
    if (d->fault.kind == FK_FETCH) {
        h.type = M_FETCH;
        h.b = d->epoch;
        h.c = d->cfg.fetch == DSM_FETCH_COPY;    /* landing slot 0 + 1 */
        dest = d->u[h.a].home;
    } else {
        h.type = M_CLAIM;
        dest = d->u[h.a].mgr;
    }
    cvia_spin_unlock(d->lk);
    dsm_send(d, dest, &h, NULL, 0);
    if (h.type == M_FETCH)   /* after the fault's request: it goes first */
        fetch_ahead(d, h.a, NULL);
    return 1;
}

static void on_msg(struct dsm *d, int src, uint64_t off, uint64_t len);

/* Credits from receiver @src: its consumed count, low 56 bits (from the
 * event: the landed word may still be in pieces). Only this thread stores
 * d->credit; the count only grows, so it moves by the distance modulo 2^56
 * (an older count, were one ever seen late, changes nothing). Release:
 * pairs with has_credit()'s acquire. */
static void on_credit(struct dsm *d, int src, uint64_t low)
{
    uint64_t c, step;

    if (src < 0 || src >= d->size)
        dsm_fatal(-CVIA_EPROTO, "credits from rank %d", src);
    c = atomic_load_explicit(&d->credit[src], memory_order_relaxed);
    step = (low - c) & IMM_CREDIT_MASK;
    if (step && step <= IMM_CREDIT_MASK / 2)
        atomic_store_explicit(&d->credit[src], c + step, memory_order_release);
}

static int poll_imm(struct dsm *d)
{
    cvia_imm_event_t ev[16];
    int n = cvia_imm_poll(ev, 16);

    if (n < 0)
        dsm_fatal(n, "polling for one-sided events: %s", cvia_strerror(n));
    for (int i = 0; i < n; i++) {
        switch (IMM_KIND(ev[i].imm)) {
        case IMM_PAGE:
            dsm_page_landed(d, ev[i].imm);
            break;
        case IMM_DIFF:
            dsm_diff_apply(d, ev[i].source, ev[i].off, ev[i].len, ev[i].imm);
            break;
        case IMM_ACK:   /* from the event, not the landed word: see IMM_CREDIT */
            if (ev[i].source < 0 || ev[i].source >= d->size)
                dsm_fatal(-CVIA_EPROTO, "an ack from rank %d", ev[i].source);
            atomic_store_explicit(&d->flags[ev[i].source * 2 + ((ev[i].imm >> 48) & 1)],
                                  ev[i].imm & ((UINT64_C(1) << 48) - 1), memory_order_release);
            atomic_fetch_add(&d->ack_word, 1);
            dsm_futex_wake(&d->ack_word);
            d->woke_app = 1;
            break;
        case IMM_MSG:
            on_msg(d, ev[i].source, ev[i].off, ev[i].len);
            break;
        case IMM_CREDIT:
            on_credit(d, ev[i].source, ev[i].imm & IMM_CREDIT_MASK);
            break;
        default:
            dsm_warn("unknown immediate 0x%llx from rank %d",
                     (unsigned long long)ev[i].imm, ev[i].source);
        }
    }
    return n;
}

static void dispatch(struct dsm *d, const struct dsm_hdr *h, char *data, size_t len,
                     int owned)
{
    switch (h->type) {
    case M_FETCH:       on_fetch(d, h, data, len); break;
    case M_CLAIM:       on_claim(d, h); break;
    case M_CLAIMED:     on_claimed(d, h); break;
    case M_LOCK_REQ:    dsm_on_lock_req(d, h, data, len); break;
    case M_LOCK_FWD:    dsm_on_lock_fwd(d, h, data, len); break;
    case M_BAR_ARRIVE:  dsm_on_bar_arrive(d, h, data, len); break;
    case M_FIN_ARRIVE:  dsm_on_fin_arrive(d, h, data, len); break;
    case M_ALLOC:
    case M_ALLOC_NOTE:
    case M_ALLOC_ACK:
    case M_ALLOC_Q:     dsm_on_alloc(d, h); break;
    case M_POLLNOTE:    dsm_on_pollnote(d, h, data, len); break;
    case M_GRANT:
    case M_BAR_RELEASE:
    case M_START:
    case M_END:
    case M_ALLOCATED:
    case M_ALLOC_A:
    case M_FIN_RELEASE: {
        char *copy = data;
        if (h->type == M_FIN_RELEASE && h->a == 1)   /* nobody sends after this */
            atomic_store(&d->finishing, 1);
        if (len && !owned) {
            if (!(copy = malloc(len)))
                dsm_fatal(-ENOMEM, "out of memory");
            memcpy(copy, data, len);
        }
        mbox_put(d, h, len ? copy : NULL, len);
        if (!len && owned)
            free(data);
        return;
    }
    default:
        dsm_warn("unknown message type %u from rank %d", h->type, h->src);
    }
    if (owned)
        free(data);
}

/* A control message in inbox slot @off from @src; the slot is ours until
 * we hand the credit back. */
static void on_msg(struct dsm *d, int src, uint64_t off, uint64_t len)
{
    struct dsm_hdr h;
    const char *slot = d->inbox + off;

    if (src < 0 || src >= d->size || off / (DSM_SLOTS * DSM_SLOT) != (uint64_t)src ||
        len < sizeof(h) || len > DSM_SLOT)
        dsm_fatal(-CVIA_EPROTO, "a malformed message from rank %d", src);
    memcpy(&h, slot, sizeof(h));
    if (h.src != src)
        dsm_fatal(-CVIA_EPROTO, "rank %d sent a message signed %d", src, h.src);
    if (h.body) {
        char *body = malloc(h.body);
        int rc;
        if (!body)
            dsm_fatal(-ENOMEM, "out of memory for a %llu-byte message",
                      (unsigned long long)h.body);
        /* posted by the sender together with the header: it completes as
         * long as the sender progresses, which its service thread does */
        rc = cvia_recv(body, h.body, src, DSM_TAG_BODY, NULL);
        if (rc)
            dsm_fatal(rc, "receiving from rank %d: %s", src, cvia_strerror(rc));
        dispatch(d, &h, body, h.body, 1);
    } else {
        dispatch(d, &h, (char *)slot + sizeof(h), len - sizeof(h), 0);
    }
    /* the slot is free: hand credits back in batches */
    d->consumed[src]++;
    if (d->consumed[src] - d->returned[src] >= DSM_SLOTS / 2 && !atomic_load(&d->finishing)) {
        cvia_req_t req = NULL;
        int rc;
        d->cons_src[src] = d->consumed[src];
        d->returned[src] = d->consumed[src];
        rc = cvia_write(&d->cons_src[src], sizeof(uint64_t), &d->peer_credit[src],
                        (uint64_t)d->rank * sizeof(uint64_t), CVIA_WRITE_IMM,
                        ((uint64_t)IMM_CREDIT << 56) | (d->consumed[src] & IMM_CREDIT_MASK),
                        &req);
        /* a sender that has already left sends nothing more: its refusal
         * (its region withdrawn at the very end) is no error */
        if (!rc)
            dsm_pending_add(d, req, NULL);
        ADD(rdma_writes, 1);
        ADD(rdma_bytes, sizeof(uint64_t));
    }
}

/* Liveness. corevia notices a dead peer only in its idle back-off (a wait
 * or a test that finds nothing) or in cvia_check_peers(), and neither the
 * service thread (a test that finds nothing makes corevia yield or nap,
 * which would delay service) nor an application thread that computes goes
 * there. The watchdog does: every DSM_WATCH_PERIOD it asks corevia to look
 * for dead peers, which fails the watch receive (any source, a tag nobody
 * sends on) with an error once a peer has died; the rank then ends
 * (dsm_fatal) instead of waiting for ever on a peer that is gone.
 * It runs at the normal priority and sleeps in between, on a futex of its
 * own, never inside corevia: the check takes a provider's locks for a
 * moment (tcp's receive lock, tcp_check_peers), and a thread of the idle
 * class preempted while holding one could wait seconds to run again while
 * every other thread's trylock failed (an earlier watchdog blocked in
 * cvia_wait() at SCHED_IDLE, and so ran the providers' progress). */
#define DSM_WATCH_PERIOD 0.1   /* seconds */
static _Atomic uint32_t watch_quit;

static void *watchdog_main(void *arg)
{
    struct dsm *d = arg;
    sigset_t all;
    int rc, done = 0;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!atomic_load(&watch_quit)) {
        dsm_futex_wait(&watch_quit, 0, DSM_WATCH_PERIOD);
        if (atomic_load(&watch_quit))
            break;
        (void)cvia_check_peers();
        rc = cvia_reap(&watch_req, &done, NULL);
        if (!done)
            continue;
        watch_req = NULL;   /* only this thread reaps it while it runs */
        if (rc && !atomic_load(&d->finishing) && !atomic_load(&d->stop))
            dsm_fatal(rc, "%s", cvia_strerror(rc));
        break;
    }
    return NULL;
}

static int retry_deferred(struct dsm *d, uint32_t *seen)
{
    struct dsm_mail *list, *m;
    uint32_t e;

    cvia_spin_lock(d->lk);
    e = d->epoch;
    cvia_spin_unlock(d->lk);
    if (e == *seen || !d->deferred)
        return 0;
    *seen = e;
    list = d->deferred;
    d->deferred = NULL;
    while ((m = list)) {
        list = m->next;
        on_fetch(d, &m->h, m->data, m->len);   /* may defer it again */
        dsm_mail_free(m);
    }
    return 1;
}

/* sched_setattr(2)'s argument, as the kernel defines it (glibc has none). */
struct dsm_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t  sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};

/* A short slice for this thread: under EEVDF a waking task with a shorter
 * slice preempts the running one, so a request does not wait out the
 * application thread's slice. Older kernels ignore or refuse it: fine. */
static void svc_set_slice(struct dsm *d)
{
    struct dsm_sched_attr a;

    if (d->cfg.slice <= 0)
        return;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.sched_policy = 0;   /* SCHED_OTHER */
    a.sched_runtime = (uint64_t)(d->cfg.slice * 1e9);
    if (syscall(SYS_sched_setattr, 0, &a, 0))
        dsm_info("the service thread keeps the default scheduler slice: %s",
                 strerror(errno));
}

static void *svc_main(void *arg)
{
    struct dsm *d = arg;
    sigset_t all;
    unsigned idle = 0, loops = 0;
    uint32_t seen_epoch = 0;
    double quiet_since = 0, next_tick = 0, napping_since = 0;
    unsigned tloops = 0;
    const int ticks = d->cfg.poll > 0 && d->size > 1 && !d->grp;  /* grp: nothing to flush */

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    prctl(PR_SET_TIMERSLACK, 1UL);   /* naps as short as asked */
    svc_set_slice(d);
    for (;;) {
        int n = poll_fault(d) + poll_imm(d);

        if (d->nout)
            n += drain_out(d);
        if (d->deferred)
            n += retry_deferred(d, &seen_epoch);
        if (d->nmq)            /* groups: dirty copies a poll note named */
            dsm_merge_queued(d);
        if (ticks && (!(++tloops & 1023) || !n)) {
            double t = cvia__clock_s();
            if (t >= next_tick) {
                next_tick = t + d->cfg.poll;
                dsm_poll_tick(d);
            }
        }
        /* pend and npend are under send_lock: peeked at here as hints */
        if (CVIA_HINT_LOAD(d->pend) && (!(++loops & 127) || CVIA_HINT_LOAD(d->npend) > 256 ||
                                        atomic_load(&d->stop)))
            reap(d);
        if (n) {
            idle = 0;
            quiet_since = 0;
            napping_since = 0;
            if (d->woke_app) {
                /* the application thread, likely on this core, has what
                 * it waited for: let it run now rather than after our slice */
                d->woke_app = 0;
                sched_yield();
            }
            continue;
        }
        if (atomic_load(&d->stop) && !CVIA_HINT_LOAD(d->pend) && !d->nout)
            break;
        if (atomic_load(&d->app_waiting) > 0) {
            /* the application waits on us: poll hot, for a while; then nap
             * between polls, leaving the core to whoever needs it (another
             * rank's application, the watchdog) */
            if (!(++idle & 255)) {
                double t = cvia__clock_s();
                if (!quiet_since)
                    quiet_since = t;
                else if (t - quiet_since > d->cfg.wait_spin)
                    goto nap;
            }
            cvia_cpu_relax();
            continue;
        }
        quiet_since = 0;
        if (++idle < (unsigned)d->cfg.polls) {
            cvia_cpu_relax();
            continue;
        }
    nap:;
        uint32_t k = atomic_load(&d->kick), ck = cvia_imm_kicks();
        int waiting = atomic_load(&d->app_waiting) > 0;
        atomic_store(&svc_sleeping, 1);
        if ((waiting || !atomic_load(&d->app_waiting)) && !atomic_load(&d->stop) &&
            atomic_load(&d->fault.state) != F_REQ && atomic_load(&d->kick) == k) {
            int rc = -EOPNOTSUPP;
            double t = cvia__clock_s();
            if (!napping_since)
                napping_since = t;
            /* nothing owed, the application computes, and nothing came
             * for CVIA_DSM_IDLE: sleep until a peer writes or the
             * application kicks (with messages waiting for credits, or
             * fetches deferred to the epoch, it naps, as measured; the
             * credits' IMM_CREDIT event would wake it now). Until then nap: a fault's request is served
             * within a nap, without a wake-up through the kernel */
            if (!waiting && !d->nout && !d->deferred && t - napping_since >= d->cfg.idle) {
                /* announced, then the kick looked at again: a kicker that
                 * missed the 2 bumped the kick before we look */
                atomic_store(&svc_sleeping, 2);
                rc = atomic_load(&d->kick) == k ? cvia_imm_block(ck, ticks ? d->cfg.poll : 0) : 0;
            }
            if (rc == -EOPNOTSUPP)
                dsm_futex_wait(&d->kick, k, d->cfg.nap > 0 ? d->cfg.nap : 1e-6);
            else if (rc < 0)
                dsm_fatal(rc, "waiting for one-sided events: %s", cvia_strerror(rc));
        }
        atomic_store(&svc_sleeping, 0);
    }
    return NULL;
}

int dsm_svc_start(struct dsm *d)
{
    int rc;

    if (!watch_req) {
        rc = cvia_irecv(watch_buf, sizeof(watch_buf), CVIA_ANY_SOURCE, DSM_TAG_WATCH, &watch_req);
        if (rc) {
            dsm_err("posting the watch receive: %s", cvia_strerror(rc));
            return rc;
        }
    }
    atomic_store(&d->stop, 0);
    if ((rc = pthread_create(&d->svc, NULL, svc_main, d))) {
        dsm_err("starting the service thread: %s", strerror(rc));
        return -rc;
    }
    d->svc_started = 1;
    if (d->size == 1)   /* no peer that could die */
        return 0;
    atomic_store(&watch_quit, 0);
    if ((rc = pthread_create(&d->watchdog, NULL, watchdog_main, d)))
        dsm_warn("no watchdog thread (%s): a dead peer may go unnoticed until "
                 "the launcher ends the job", strerror(rc));
    else
        d->watch_started = 1;
    return 0;
}

/* Before cvia_finalize(): complete the watch receive (a message to
 * ourselves), so that corevia has no request of ours left. */
void dsm_svc_forget(void)
{
    struct dsm *d = &dsm__g;
    char one = 1;

    if (d->watch_started) {      /* it ends within its sleep */
        atomic_store(&watch_quit, 1);
        dsm_futex_wake(&watch_quit);
        pthread_join(d->watchdog, NULL);
        d->watch_started = 0;
    }
    if (!watch_req)
        return;
    if (cvia_send(&one, 1, cvia_rank(), DSM_TAG_WATCH))
        return;
    cvia_wait(&watch_req, NULL);
    watch_req = NULL;
}

void dsm_svc_stop(struct dsm *d)
{
    if (!d->svc_started)
        return;
    atomic_store(&d->stop, 1);
    dsm_kick(d);
    pthread_join(d->svc, NULL);
    d->svc_started = 0;
    /* requests are corevia's until completed: finish every one */
    for (int s = 0; s < 2; s++)
        if (d->stage_req[s])
            cvia_wait(&d->stage_req[s], NULL);
    while (d->pend) {
        struct dsm_pending *p = d->pend;
        d->pend = p->next;
        cvia_wait(&p->req, NULL);
        free(p->buf);
        free(p);
    }
    d->pend_tail = &d->pend;
    d->npend = 0;
    while (d->deferred) {   /* a deferred list fetch has its pairs (dsm18b) */
        struct dsm_mail *m = d->deferred;
        d->deferred = m->next;
        dsm_mail_free(m);
    }
    while (d->mbox) {
        struct dsm_mail *m = d->mbox;
        d->mbox = m->next;
        dsm_mail_free(m);
    }
    d->mbox_tail = &d->mbox;
}
