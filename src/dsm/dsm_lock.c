/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Distributed locks: one token per lock, one manager per lock (id mod
 * size) that remembers the last requester. A request goes to the manager,
 * which forwards it to that last requester; whoever holds the token (or
 * will hold it) passes it on at its release, with the write notices the
 * new holder lacks (those newer than the vector time in its request). A
 * rank that released a lock keeps the token until somebody asks for it,
 * so re-acquiring it costs no message (a "local" acquire). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/dsm.h"

int dsm_locks_init(struct dsm *d)
{
    d->locks = calloc((size_t)d->cfg.max_locks, sizeof(*d->locks));
    if (!d->locks)
        return -ENOMEM;
    for (long i = 0; i < d->cfg.max_locks; i++) {
        struct dsm_lockst *L = &d->locks[i];
        L->tail = (int32_t)(i % d->size);
        L->next = -1;
        L->have_token = L->tail == d->rank;
    }
    return 0;
}

void dsm_locks_fini(struct dsm *d)
{
    for (long i = 0; d->locks && i < d->cfg.max_locks; i++)
        free(d->locks[i].next_vt);
    free(d->locks);
    d->locks = NULL;
}

int cvia_dsm_lock_create(int *id_p)
{
    struct dsm *d = &dsm__g;
    int id;

    if (!d->up)
        return -CVIA_ENOINIT;
    if (!id_p)
        return -EINVAL;
    cvia_spin_lock(d->lk);
    if (d->next_lock >= d->cfg.max_locks) {
        cvia_spin_unlock(d->lk);
        dsm_err("more than %ld locks (CVIA_DSM_MAX_LOCKS)", d->cfg.max_locks);
        return -ENOSPC;
    }
    id = d->next_lock++;
    cvia_spin_unlock(d->lk);
    *id_p = id;
    return 0;
}

static int check_id(struct dsm *d, int id)
{
    if (!d->up)
        return -CVIA_ENOINIT;
    if (id < 0 || (id >= d->next_lock && id >= __atomic_load_n(&d->late_locks,
                                                                __ATOMIC_RELAXED))) {
        dsm_err("lock %d was never created", id);
        return -EINVAL;
    }
    return 0;
}

/* Hand the token of lock @id to @dest with the notices it lacks. */
static void grant(struct dsm *d, int id, int dest, struct dsm_buf *notes)
{
    struct dsm_hdr h = { .type = M_GRANT, .a = (uint32_t)id };

    dsm_send(d, dest, &h, notes->p, notes->len);
    dsm_buf_free(notes);
}

int cvia_dsm_lock(int id)
{
    struct dsm *d = &dsm__g;
    struct dsm_lockst *L;
    struct dsm_mail *m;
    struct dsm_hdr h = { .type = M_LOCK_REQ, .a = (uint32_t)id };
    uint32_t *vt;
    double t0;
    int rc;

    if ((rc = check_id(d, id)))
        return rc;
    if (d->scratch)        /* PARMACS replay: not a process yet */
        return 0;
    t0 = cvia__clock_s();
    L = &d->locks[id];
    cvia_spin_lock(d->lk);
    if (L->held) {
        cvia_spin_unlock(d->lk);
        dsm_err("lock %d: this rank already holds it", id);
        return -EDEADLK;
    }
    if (d->grp) {          /* the region is one memory: the futex word alone */
        cvia_spin_unlock(d->lk);
        int waited = dsm_group_lock(d, id);
        cvia_spin_lock(d->lk);
        L->held = 1;
        cvia_spin_unlock(d->lk);
        if (waited) {
            ADD(lock_remote, 1);
            d->st.lock_time += cvia__clock_s() - t0;
        } else {
            ADD(lock_local, 1);
        }
        return 0;
    }
    if (L->have_token) {
        L->held = 1;
        cvia_spin_unlock(d->lk);
        ADD(lock_local, 1);
        return 0;
    }
    cvia_spin_unlock(d->lk);

    /* what we wrote must reach its homes before notices invalidate it */
    dsm_end_interval(d, 0);
    if (!(vt = malloc((size_t)d->size * sizeof(*vt))))
        return -ENOMEM;
    cvia_spin_lock(d->lk);
    L->waiting = 1;
    memcpy(vt, d->vt, (size_t)d->size * sizeof(*vt));
    cvia_spin_unlock(d->lk);
    dsm_send(d, id % d->size, &h, vt, (size_t)d->size * sizeof(*vt));
    free(vt);

    m = dsm_mbox_wait(d, M_GRANT, -1, (uint32_t)id);
    cvia_spin_lock(d->lk);
    L->have_token = 1;
    L->held = 1;
    L->waiting = 0;
    rc = dsm_records_apply(d, m->data, m->len);
    cvia_spin_unlock(d->lk);
    if (rc)
        dsm_fatal(rc, "lock %d: malformed write notices from rank %d", id, m->h.src);
    dsm_merge_acquired(d);
    dsm_mail_free(m);
    ADD(lock_remote, 1);
    d->st.lock_time += cvia__clock_s() - t0;
    return 0;
}

int cvia_dsm_unlock(int id)
{
    struct dsm *d = &dsm__g;
    struct dsm_lockst *L;
    struct dsm_buf notes = { 0 };
    int rc, next = -1;

    if ((rc = check_id(d, id)))
        return rc;
    if (d->scratch)
        return 0;
    L = &d->locks[id];
    cvia_spin_lock(d->lk);
    if (!L->held) {
        cvia_spin_unlock(d->lk);
        dsm_err("unlock of lock %d, which this rank does not hold (unlock without "
                "lock, or a second unlock)", id);
        return -EPERM;
    }
    if (d->grp) {
        L->held = 0;
        cvia_spin_unlock(d->lk);
        dsm_group_unlock(d, id);
        return 0;
    }
    cvia_spin_unlock(d->lk);

    dsm_end_interval(d, 0);

    cvia_spin_lock(d->lk);
    L->held = 0;
    if (L->next >= 0) {
        next = L->next;
        L->next = -1;
        L->have_token = 0;
        dsm_records_since(d, L->next_vt, &notes);
        free(L->next_vt);
        L->next_vt = NULL;
    }
    cvia_spin_unlock(d->lk);
    if (next >= 0)
        grant(d, id, next, &notes);
    return 0;
}

/* The token holder (or the rank that will hold it next) learns who wants
 * it after it: grant now if idle, else remember. Service thread. */
static void forward_in(struct dsm *d, int id, int req, const char *vtp, size_t len)
{
    struct dsm_lockst *L = &d->locks[id];
    struct dsm_buf notes = { 0 };
    uint32_t *vt;

    if (len != (size_t)d->size * sizeof(uint32_t))
        dsm_fatal(-CVIA_EPROTO, "lock %d: request of rank %d without its vector time", id, req);
    cvia_spin_lock(d->lk);
    if (L->have_token && !L->held) {
        L->have_token = 0;
        vt = malloc(len);
        if (!vt)
            dsm_fatal(-ENOMEM, "out of memory");
        memcpy(vt, vtp, len);
        dsm_records_since(d, vt, &notes);
        cvia_spin_unlock(d->lk);
        free(vt);
        grant(d, id, req, &notes);
        return;
    }
    if (L->next >= 0) {
        cvia_spin_unlock(d->lk);
        dsm_fatal(-CVIA_EPROTO, "lock %d: two ranks queued behind rank %d", id, d->rank);
    }
    if (!(L->next_vt = malloc(len)))
        dsm_fatal(-ENOMEM, "out of memory");
    memcpy(L->next_vt, vtp, len);
    L->next = req;
    cvia_spin_unlock(d->lk);
}

void dsm_on_lock_req(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len)
{
    int id = (int)h->a, prev;

    if (h->a >= (uint32_t)d->cfg.max_locks || (int)(h->a % (uint32_t)d->size) != d->rank)
        dsm_fatal(-CVIA_EPROTO, "a request for lock %u that rank %d does not manage",
                  h->a, d->rank);
    cvia_spin_lock(d->lk);
    prev = d->locks[id].tail;
    d->locks[id].tail = h->src;
    cvia_spin_unlock(d->lk);
    if (prev == d->rank) {
        forward_in(d, id, h->src, p, len);
    } else {
        struct dsm_hdr f = { .type = M_LOCK_FWD, .a = h->a, .b = (uint32_t)h->src };
        dsm_send(d, prev, &f, p, len);
    }
}

void dsm_on_lock_fwd(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len)
{
    if (h->a >= (uint32_t)d->cfg.max_locks || h->b >= (uint32_t)d->size)
        dsm_fatal(-CVIA_EPROTO, "a malformed lock forward from rank %d", h->src);
    forward_in(d, (int)h->a, (int)h->b, p, len);
}
