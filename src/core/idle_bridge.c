/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Sleeping on peers of both kinds (issue 16): a rank with peers on this
 * host and on others must wake for a slot a local peer publishes (a futex
 * word in its shm segment, shm_block) and for a datagram or byte on the
 * network provider's socket (poll). No single kernel wait takes both on
 * Debian 12's kernel (io_uring's futex wait came in 6.7), so the rank
 * keeps one helper thread, started at the first such sleep, that polls
 * the network sockets while a thread of the rank sleeps on the futex, and
 * kicks it (cvia_imm_kick's path: the kicks counter, then the wake word)
 * when a socket turns readable. A local peer's wake-up goes to the
 * sleeper directly, as on one host; a network one takes one more hop.
 *
 * The helper sleeps on a futex of its own while nobody sleeps on the
 * rank's side: a sleeper bumps @gen (and wakes the helper if it waits),
 * the helper polls until a socket is readable, kicks, and then waits for
 * the next sleep (a readable socket that the rank has not drained yet
 * would otherwise wake it over and over). When the rank's sleeper leaves
 * first (a local peer woke it), the helper stays in poll: the next
 * datagram, or the next sleep's bump, is what it waits for anyway. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "util/log.h"

struct cvia_bridge {
    struct cvia_ctx *c;
    pthread_t th;
    pid_t pid;                /* the process that started the helper */
    int efd;                  /* stop: breaks the helper's poll */
    int shm;                  /* index of the provider with block() */
    _Atomic uint32_t gen;     /* bumped by every sleep that wants the sockets watched */
    _Atomic int nsleep;       /* threads of the rank in such a sleep */
    _Atomic int waiting;      /* the helper sleeps on gen */
    _Atomic int stop;
};

static pthread_mutex_t bridge_lock = PTHREAD_MUTEX_INITIALIZER;   /* c->bridge's creation */

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

int cvia__net_fds(struct cvia_ctx *c, struct pollfd *fds, int *who, int cap)
{
    int n = 0;

    for (int i = 0; i < c->nprov && n < cap; i++) {
        const struct cvia_prov_ops *ops = c->prov[i].desc->ops;
        int fd = ops->wait_fd ? ops->wait_fd(c->prov[i].ep) : -1;
        if (fd >= 0) {
            if (who)
                who[n] = i;
            fds[n].fd = fd;
            fds[n].events = POLLIN;
            fds[n++].revents = 0;
        }
    }
    return n;
}

static void *bridge_main(void *arg)
{
    struct cvia_bridge *b = arg;
    struct cvia_ctx *c = b->c;
    struct pollfd fds[CVIA_MAX_PROV + 1];
    /* the last sleep a kick went to: none yet. Not gen's value now: the
     * sleep that started this thread has bumped gen already, often before
     * the thread runs, and taking that as served parked the helper through
     * the first sleep (a lost wake-up of a liveness interval when the
     * network provider sets no timer, as tcp; func.hosts.tcp.idle-mixed) */
    uint32_t served = 0;
    int ms = (int)(c->cfg.liveness * 1e3) + 1;

    while (!atomic_load(&b->stop)) {
        uint32_t g = atomic_load(&b->gen);
        if (g == served || atomic_load(&b->nsleep) == 0) {
            struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
            atomic_store(&b->waiting, 1);
            /* a sleep that bumped gen after the load above makes this
             * return at once; one that found waiting set wakes it */
            if (atomic_load(&b->gen) == g && !atomic_load(&b->stop))
                (void)futex(&b->gen, FUTEX_WAIT, g, &ts);
            atomic_store(&b->waiting, 0);
            continue;
        }
        int n = cvia__net_fds(c, fds, NULL, CVIA_MAX_PROV);
        fds[n].fd = b->efd;
        fds[n].events = POLLIN;
        fds[n].revents = 0;
        if (poll(fds, (nfds_t)n + 1, ms) <= 0)
            continue;
        if (fds[n].revents)
            break;   /* stop */
        for (int i = 0; i < n; i++)
            if (fds[i].revents) {
                served = g;
                atomic_fetch_add(&c->kicks, 1);
                c->prov[b->shm].desc->ops->kick(c->prov[b->shm].ep);
                break;
            }
    }
    return NULL;
}

static struct cvia_bridge *bridge_start(struct cvia_ctx *c, int shm)
{
    struct cvia_bridge *b = calloc(1, sizeof(*b));
    sigset_t all, old;
    int rc;

    if (!b)
        return NULL;
    b->c = c;
    b->shm = shm;
    b->pid = getpid();
    if ((b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        cvia_warn(CORE, "idle wait: eventfd: %s; waits on peers of both kinds nap instead",
                  cvia_strerror(-errno));
        free(b);
        return NULL;
    }
    /* the helper takes no signal of the program's */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&b->th, NULL, bridge_main, b);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        cvia_warn(CORE, "idle wait: no helper thread (%s); waits on peers of both kinds "
                  "nap instead", cvia_strerror(-rc));
        close(b->efd);
        free(b);
        return NULL;
    }
    return b;
}

int cvia__bridge_block(struct cvia_ctx *c, int shm, double max_s, const _Atomic uint32_t *kicks,
                       uint32_t seen)
{
    struct cvia_bridge *b;
    int slept;

    /* a real mutex, whatever the thread level: at SINGLE to SERIALIZED
     * the core's locks are no-ops, yet a layer's waiter thread
     * (cvia_input_wait, FI_WAIT_FD) may come here beside the application */
    pthread_mutex_lock(&bridge_lock);
    b = c->bridge;
    if (b && b->pid != getpid()) {   /* a forked child: the helper stayed in the parent */
        close(b->efd);               /* the child's copies; the parent keeps its own */
        free(b);
        b = c->bridge = NULL;
    }
    if (!b && !c->bridge_failed && !(b = c->bridge = bridge_start(c, shm)))
        c->bridge_failed = 1;
    pthread_mutex_unlock(&bridge_lock);
    if (!b)
        return -EOPNOTSUPP;
    atomic_fetch_add(&b->nsleep, 1);
    atomic_fetch_add(&b->gen, 1);
    if (atomic_load(&b->waiting))
        (void)futex(&b->gen, FUTEX_WAKE, INT_MAX, NULL);
    slept = c->prov[shm].desc->ops->block(c->prov[shm].ep, max_s, kicks, seen);
    atomic_fetch_sub(&b->nsleep, 1);
    return slept;
}

void cvia__bridge_stop(struct cvia_ctx *c)
{
    struct cvia_bridge *b;
    uint64_t one = 1;

    pthread_mutex_lock(&bridge_lock);
    b = c->bridge;
    c->bridge = NULL;
    c->bridge_failed = 0;
    pthread_mutex_unlock(&bridge_lock);
    if (b && b->pid != getpid()) {   /* a forked child's copies (no thread here) */
        close(b->efd);
        free(b);
        return;
    }
    if (!b)
        return;
    atomic_store(&b->stop, 1);
    atomic_fetch_add(&b->gen, 1);
    (void)futex(&b->gen, FUTEX_WAKE, INT_MAX, NULL);
    while (write(b->efd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
    pthread_join(b->th, NULL);
    close(b->efd);
    free(b);
}
