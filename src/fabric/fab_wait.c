/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* FI_WAIT_FD: a CQ or counter opened with it hands the application an
 * eventfd (fi_control FI_GETWAIT) to put in its epoll set, and
 * fi_trywait() says whether it may sleep on it.
 *
 * What makes the fd readable:
 * - a completion pushed to the CQ, or a counter bumped, while the object
 *   is armed (by the application's own progress in another thread, or the
 *   FI_PROGRESS_AUTO thread); fi_cq_signal;
 * - input for this process that needs the application's progress: a peer
 *   on this host writing into our shm rings, a datagram or segment on a
 *   network socket. corevia's futex doorbell cannot be put in an epoll
 *   set, so the domain has one waiter thread that sleeps in
 *   cvia_input_wait() (shm's futex, the sockets' readiness; it progresses
 *   nothing, so the domain keeps its threading and locks) while some
 *   object is armed, and writes the armed objects' eventfds when it wakes;
 * - a deadline: 1 ms after an fi_trywait that found operations in flight
 *   on the object's endpoints (a retransmission timer, a rendezvous that
 *   moves by polling), CVIA_FI_LIVENESS otherwise (dead peers are looked
 *   for by the progress the application then runs).
 *
 * fi_trywait drains the eventfd, arms the object, then looks: entries in
 * the CQ (or a counter changed since it was last read) give -FI_EAGAIN and
 * disarm it. Arming before the look, with a push's load of the flag after
 * its entry is published, means no completion falls between the two. An
 * object is signalled once per arming. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fabric/fab.h"
#include "util/log.h"

#define FAB_WAIT_CHUNK 10e-3   /* the waiter drops its hold on corevia this often */

struct fab_waiter {
    pthread_t thread;
    pthread_mutex_t lock;    /* objs, their deadlines, stop */
    pthread_cond_t cond;
    struct fab_waitobj *objs;
    int stop;
    uint64_t sleep_dl;       /* the deadline it sleeps towards in corevia; 0: not asleep there */
    unsigned long wakes, signals;
};

static void fab_wait_nap(double s)
{
    struct timespec ts = { .tv_sec = (time_t)s,
                           .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&ts, NULL);
}

/* @w armed: disarm it and make its fd readable. */
void fab_wait_fire(struct fab_waitobj *w)
{
    uint64_t one = 1;

    if (atomic_exchange(&w->armed, 0)) {
        ssize_t r = write(w->efd, &one, sizeof(one));
        (void)r;   /* EAGAIN: the counter is already far from zero, readable */
    }
}

/* Waiter lock held: the earliest deadline among armed objects, 0 if none. */
static uint64_t fab_wait_next(struct fab_waiter *wt)
{
    uint64_t first = 0;

    for (struct fab_waitobj *w = wt->objs; w; w = w->next)
        if (atomic_load(&w->armed) && (!first || w->deadline < first))
            first = w->deadline;
    return first;
}

static void *fab_waiter_main(void *arg)
{
    struct fab_waiter *wt = arg;

    pthread_mutex_lock(&wt->lock);
    for (;;) {
        uint64_t dl = 0;
        while (!wt->stop && !(dl = fab_wait_next(wt)))
            pthread_cond_wait(&wt->cond, &wt->lock);
        if (wt->stop)
            break;
        uint64_t now = cvia__clock_ns();
        int rc = 0, held = 0;
        uint32_t kicks = 0;
        double s = 0;
        if (dl > now) {
            s = (double)(dl - now) * 1e-9;
            if (s > FAB_WAIT_CHUNK)
                s = FAB_WAIT_CHUNK;
            /* a reference on corevia while asleep in it: a last endpoint
             * closing meanwhile finalizes after the chunk. The kick count
             * and the deadline slept towards are taken under the lock, so
             * that an arm with a sooner deadline (fab_wait_arm) either sees
             * this sleep and kicks it, or comes before and is in dl */
            if ((held = fab_core_hold_if_up())) {
                kicks = cvia_imm_kicks();
                wt->sleep_dl = now + (uint64_t)(s * 1e9);
            }
        }
        pthread_mutex_unlock(&wt->lock);

        if (dl > now) {
            if (held) {
                rc = cvia_input_wait(kicks, s);
                fab_core_release();
            } else {
                fab_wait_nap(1e-3);   /* nothing open: no input can come */
            }
            now = cvia__clock_ns();
        }
        pthread_mutex_lock(&wt->lock);
        wt->sleep_dl = 0;
        wt->wakes++;
        for (struct fab_waitobj *w = wt->objs; w; w = w->next)
            if (atomic_load(&w->armed) && (rc != 0 || w->deadline <= now)) {
                fab_wait_fire(w);
                wt->signals++;
            }
    }
    pthread_mutex_unlock(&wt->lock);
    return NULL;
}

int fab_wait_open(struct fab_domain *d, struct fab_waitobj **wp)
{
    struct fab_waitobj *w = calloc(1, sizeof(*w));
    struct fab_waiter *wt;
    int rc = 0;

    if (!w)
        return -FI_ENOMEM;
    if ((w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        cvia_error(CORE, "libfabric provider: FI_WAIT_FD: eventfd: %s", strerror(errno));
        free(w);
        return -FI_EMFILE;
    }
    w->dom = d;
    pthread_mutex_lock(&d->wait_lock);
    if (!(wt = d->waiter)) {
        if (!(wt = calloc(1, sizeof(*wt)))) {
            rc = -FI_ENOMEM;
            goto out;
        }
        pthread_mutex_init(&wt->lock, NULL);
        pthread_cond_init(&wt->cond, NULL);
        if ((rc = pthread_create(&wt->thread, NULL, fab_waiter_main, wt))) {
            cvia_error(CORE, "libfabric provider: cannot start the thread behind FI_WAIT_FD: %s",
                       strerror(rc));
            pthread_cond_destroy(&wt->cond);
            pthread_mutex_destroy(&wt->lock);
            free(wt);
            rc = -FI_EOTHER;
            goto out;
        }
        d->waiter = wt;
    }
    pthread_mutex_lock(&wt->lock);
    w->next = wt->objs;
    wt->objs = w;
    pthread_mutex_unlock(&wt->lock);
out:
    pthread_mutex_unlock(&d->wait_lock);
    if (rc) {
        close(w->efd);
        free(w);
        return rc;
    }
    *wp = w;
    return 0;
}

/* Once it returns, the waiter holds no pointer to @w. */
void fab_wait_close(struct fab_waitobj *w)
{
    struct fab_waiter *wt;

    if (!w)
        return;
    pthread_mutex_lock(&w->dom->wait_lock);
    if ((wt = w->dom->waiter)) {
        pthread_mutex_lock(&wt->lock);
        for (struct fab_waitobj **pp = &wt->objs; *pp; pp = &(*pp)->next)
            if (*pp == w) {
                *pp = w->next;
                break;
            }
        pthread_mutex_unlock(&wt->lock);
    }
    pthread_mutex_unlock(&w->dom->wait_lock);
    close(w->efd);
    free(w);
}

/* At domain close: every object is closed, the thread waits on its condition. */
void fab_wait_stop(struct fab_domain *d)
{
    struct fab_waiter *wt = d->waiter;

    if (!wt)
        return;
    pthread_mutex_lock(&wt->lock);
    wt->stop = 1;
    pthread_cond_broadcast(&wt->cond);
    pthread_mutex_unlock(&wt->lock);
    pthread_join(wt->thread, NULL);
    cvia_debug(CORE, "libfabric provider: FI_WAIT_FD thread: %lu wakes, %lu fds signalled",
               wt->wakes, wt->signals);
    pthread_cond_destroy(&wt->cond);
    pthread_mutex_destroy(&wt->lock);
    free(wt);
    d->waiter = NULL;
}

/* Empty the eventfd, then arm @w with a deadline @busy ? 1 ms : the
 * liveness interval from now, and get the waiter looking. */
void fab_wait_arm(struct fab_waitobj *w, int busy)
{
    struct fab_waiter *wt = w->dom->waiter;
    uint64_t v, dl;

    while (read(w->efd, &v, sizeof(v)) > 0)
        ;
    dl = cvia__clock_ns() + (busy ? 1000000ull : (uint64_t)(fab_cfg.liveness * 1e9));
    pthread_mutex_lock(&wt->lock);
    /* the waiter sleeps in corevia towards a later deadline: wake it to
     * sleep again towards this one (a kick wakes it as input would, so
     * only when needed: every busy fi_trywait kicked once, and a loop
     * waiting on a late peer woke about three times a millisecond) */
    int sooner = wt->sleep_dl && dl < wt->sleep_dl;
    w->deadline = dl;
    atomic_store(&w->armed, 1);
    pthread_cond_signal(&wt->cond);
    pthread_mutex_unlock(&wt->lock);
    if (sooner && fab_core_hold_if_up()) {
        cvia_imm_kick();
        fab_core_release();
    }
}

/* fi_trywait: 0 when every object is armed and nothing is pending; else
 * -FI_EAGAIN (the objects armed so far stay armed: a spurious wake-up at
 * most). */
int fab_trywait(struct fid_fabric *f, struct fid **fids, int count)
{
    (void)f;
    if (count < 0 || (count && !fids))
        return -FI_EINVAL;
    for (int i = 0; i < count; i++) {
        int rc;
        if (!fids[i])
            return -FI_EINVAL;
        switch (fids[i]->fclass) {
        case FI_CLASS_CQ:
            rc = fab_cq_trywait(fab_of(fids[i], struct fab_cq, fid.fid));
            break;
        case FI_CLASS_CNTR:
            rc = fab_cntr_trywait(fab_of(fids[i], struct fab_cntr, fid.fid));
            break;
        default:
            rc = -FI_EINVAL;   /* no wait object of ours */
        }
        if (rc)
            return rc;
    }
    return 0;
}
