/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* FI_PROGRESS_AUTO: a domain opened with automatic progress (a hint asked
 * for it) gets one thread that drives its endpoints while the application
 * is elsewhere, so that a peer's rendezvous, atomics and RMA with data
 * complete at this side without this side calling libfabric.
 *
 * The thread exists while the domain has an armed endpoint (corevia is up
 * then, so the thread never races cvia_init or cvia_finalize). Each round
 * it progresses the domain's endpoints (a trylock each: a thread of the
 * application already in there does the same work) and then sleeps:
 * cvia_imm_block() when some peer is on this host (woken by any peer's
 * write into our rings, or at once if they hold anything; with peers on
 * other hosts too, also by their datagrams, through corevia's helper
 * thread), a nap of CVIA_FI_AUTO_NAP where every peer is on another host
 * (corevia has no wait on its sockets alone for a layer above it). An endpoint leaving the
 * domain kicks the thread out of its sleep and waits for its round to end.
 *
 * Needs corevia at CVIA_THREAD_MULTIPLE (the thread and the application
 * both call it): with CVIA_FI_THREAD=domain, hints asking for automatic
 * progress get no entry. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fabric/fab.h"
#include "util/log.h"

struct fab_auto {
    pthread_t thread;
    pthread_mutex_t lock;    /* eps, n, stop; cond waits on it */
    pthread_cond_t cond;
    struct fab_ep *eps[FAB_AUTO_EP_MAX];
    int n;
    int stop;
    int busy;                /* the thread is in a round (with a copy of eps) */
    unsigned long rounds, sleeps, naps;   /* for the debug log at the end */
};

static void fab_auto_nap(double s)
{
    struct timespec ts = { .tv_sec = (time_t)s,
                           .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&ts, NULL);
}

static void *fab_auto_main(void *arg)
{
    struct fab_auto *a = arg;
    struct fab_ep *eps[FAB_AUTO_EP_MAX];

    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->stop && a->n == 0)
            pthread_cond_wait(&a->cond, &a->lock);
        if (a->stop)
            break;
        int n = a->n;
        memcpy(eps, a->eps, (size_t)n * sizeof(eps[0]));
        a->busy = 1;
        pthread_mutex_unlock(&a->lock);

        uint32_t kicks = cvia_imm_kicks();
        for (int i = 0; i < n; i++)
            fab_ep_progress(eps[i]);
        int rc = cvia_imm_block(kicks, fab_cfg.liveness);
        a->rounds++;
        if (rc == 0)
            a->sleeps++;
        if (rc < 0) {   /* peers on other hosts (or none left): nap */
            fab_auto_nap(fab_cfg.auto_nap);
            a->naps++;
        } else {
            sched_yield();   /* a round that did not sleep leaves the CPU a moment */
        }

        pthread_mutex_lock(&a->lock);
        a->busy = 0;
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

int fab_auto_add(struct fab_domain *d, struct fab_ep *ep)
{
    struct fab_auto *a;
    int rc = 0;

    if (!d->auto_progress)
        return 0;
    pthread_mutex_lock(&d->auto_lock);
    if (!(a = d->autop)) {
        if (!(a = calloc(1, sizeof(*a)))) {
            rc = -FI_ENOMEM;
            goto out;
        }
        pthread_mutex_init(&a->lock, NULL);
        pthread_cond_init(&a->cond, NULL);
        if ((rc = pthread_create(&a->thread, NULL, fab_auto_main, a))) {
            cvia_error(CORE, "libfabric provider: cannot start the progress thread of an "
                       "FI_PROGRESS_AUTO domain: %s", strerror(rc));
            pthread_cond_destroy(&a->cond);
            pthread_mutex_destroy(&a->lock);
            free(a);
            rc = -FI_EOTHER;
            goto out;
        }
        d->autop = a;
    }
    pthread_mutex_lock(&a->lock);
    if (a->n == FAB_AUTO_EP_MAX) {
        rc = -FI_ENOSPC;
    } else {
        a->eps[a->n++] = ep;
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->lock);
out:
    pthread_mutex_unlock(&d->auto_lock);
    return rc;
}

/* Once it returns, the thread holds no pointer to @ep. */
void fab_auto_del(struct fab_domain *d, struct fab_ep *ep)
{
    struct fab_auto *a;
    int found = 0;

    pthread_mutex_lock(&d->auto_lock);
    if ((a = d->autop)) {
        pthread_mutex_lock(&a->lock);
        for (int i = 0; i < a->n; i++)
            if (a->eps[i] == ep) {
                a->eps[i] = a->eps[--a->n];
                found = 1;
                break;
            }
        /* out of its sleep (corevia is still up: @ep holds it), then wait
         * for the round that may have copied @ep */
        if (found && a->busy)
            cvia_imm_kick();
        while (found && a->busy)
            pthread_cond_wait(&a->cond, &a->lock);
        pthread_mutex_unlock(&a->lock);
    }
    pthread_mutex_unlock(&d->auto_lock);
}

/* At domain close: no endpoint is left, the thread waits on its condition. */
void fab_auto_stop(struct fab_domain *d)
{
    struct fab_auto *a = d->autop;

    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    cvia_debug(CORE, "libfabric provider: progress thread: %lu rounds, %lu slept, %lu naps",
               a->rounds, a->sleeps, a->naps);
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->lock);
    free(a);
    d->autop = NULL;
}
