/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Two-level sharing, the one-host part (issue 18 item 4): when every rank
 * of the job runs on this host (CVIA_DSM_LEVELS=2, the default), the ranks
 * map one shared segment as the region instead of one memfd each, so the
 * hardware keeps the region coherent: every allocated unit is writable
 * everywhere (U_EXCL, no fault, no twin, no diff, no fetch), and locks and
 * barriers are futex words in a control area of the same segment. Intervals
 * then never contain a unit, so the messages that remain (CREATE and end
 * hand-offs, late allocation, the end of the DSM) carry no notices.
 *
 * The segment: rank 0 creates /cvia-<uid>-<pid>-<64 random bits> (0600,
 * the shm provider's name pattern, so a later job removes it if rank 0 is
 * killed before the next step), sends the name, every rank opens and maps
 * it and answers, and rank 0 unlinks it before anyone goes on: from then
 * it has no name, and the memory goes when the last rank unmaps it or
 * dies. A rank that cannot open it makes every rank fall back to the
 * one-level protocol (a warning, not an error); ranks that disagree on
 * CVIA_DSM_LEVELS stop at init.
 *
 * When the job spans hosts, the ranks of each host form a group instead
 * (below, "groups across hosts"). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dsm/dsm.h"
#include "util/shm_name.h"

#define GLOCK_STRIDE 64   /* one cache line per lock word */

struct dsm_gctl {
    _Atomic uint32_t bar_count;
    char pad0[60];
    _Atomic uint32_t bar_gen;
    _Atomic uint32_t bar_sleepers;
    char pad1[56];
    /* then max_locks words, GLOCK_STRIDE bytes apart: 0 free, 1 held,
     * 2 held with waiters (Drepper's futex mutex) */
};

#define GCTL_HDR 128

/* What rank 0 tells every rank at start. */
struct group_offer {
    int32_t levels;       /* rank 0's CVIA_DSM_LEVELS */
    int32_t grp;          /* 1: open @name */
    int32_t xg;           /* 1: the job spans hosts: groups per host if worth it */
    int32_t pad;
    char    name[64];
};

static size_t ctl_bytes(const struct dsm *d)
{
    size_t n = GCTL_HDR + (size_t)d->cfg.max_locks * GLOCK_STRIDE;
    return (n + d->page - 1) / d->page * d->page;
}

static _Atomic uint32_t *lock_word(struct dsm *d, int id)
{
    return (_Atomic uint32_t *)((char *)d->gctl + GCTL_HDR + (size_t)id * GLOCK_STRIDE);
}

static void gfutex_wait(_Atomic uint32_t *w, uint32_t val)
{
    /* a timeout only so that a wait never outlives its reason by long
     * (a dead peer ends the process through the watchdog anyway) */
    struct timespec ts = { 0, 100 * 1000 * 1000 };
    syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void gfutex_wake(_Atomic uint32_t *w, int n)
{
    syscall(SYS_futex, w, FUTEX_WAKE, n, NULL, NULL, 0);
}

/* ---- start and end ----------------------------------------------------------- */

static int map_ctl(struct dsm *d, int fd)
{
    void *p = mmap(NULL, ctl_bytes(d), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   (off_t)d->region);
    if (p == MAP_FAILED)
        return -errno;
    d->gctl = p;
    return 0;
}

static void undo(struct dsm *d)
{
    if (d->gctl)
        munmap(d->gctl, ctl_bytes(d));
    d->gctl = NULL;
    if (d->memfd >= 0)
        close(d->memfd);
    d->memfd = -1;
    if (d->gname[0])
        shm_unlink(d->gname);
    d->gname[0] = '\0';
    d->grp = 0;
}

/* Rank 0: create the segment; 0 or a negative errno (then no segment). */
static int create_segment(struct dsm *d)
{
    size_t bytes = d->region + ctl_bytes(d);
    int fd, rc;

    /* the shm provider's name pattern, so that a later job removes it if
     * rank 0 is killed before it unlinks it */
    if ((fd = cvia__shm_create(d->gname, sizeof(d->gname), NULL)) < 0) {
        if (fd != -EIO)
            dsm_warn("creating the host's shared region %s: %s", d->gname, strerror(-fd));
        d->gname[0] = '\0';
        return fd;
    }
    d->memfd = fd;
    rc = fchmod(fd, 0600) || ftruncate(fd, (off_t)bytes) ? -errno : map_ctl(d, fd);
    if (rc) {
        dsm_warn("sizing the host's shared region %s (%zu bytes): %s", d->gname, bytes,
                 strerror(-rc));
        undo(d);
    }
    return rc;
}

/* A member: open its leader's segment @name, which must be this user's
 * 0600 segment of @bytes; its descriptor, or a negative errno (warned). */
static int seg_open(const char *name, size_t bytes)
{
    struct stat st;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0), rc;

    if (fd < 0) {
        rc = -errno;
        dsm_warn("opening the host's shared region %s: %s", name, strerror(errno));
        return rc;
    }
    if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 0777) != 0600 ||
        (size_t)st.st_size != bytes) {
        dsm_warn("the host's shared region %s is not this user's 0600 segment of %zu "
                 "bytes", name, bytes);
        close(fd);
        return -EACCES;
    }
    return fd;
}

/* Other ranks: open rank 0's segment (rank 0 unlinks it); 0 or a negative
 * errno. */
static int open_segment(struct dsm *d, const char *name)
{
    int fd = seg_open(name, d->region + ctl_bytes(d)), rc;

    if (fd < 0)
        return fd;
    d->memfd = fd;
    if ((rc = map_ctl(d, fd))) {
        dsm_warn("mapping the host's shared region %s: %s", name, strerror(-rc));
        undo(d);
        return rc;
    }
    return 0;
}

/* ---- groups across hosts ------------------------------------------------------
 *
 * When the job spans hosts (CVIA_DSM_LEVELS=2, some host with two ranks or
 * more), the ranks of each host (corevia's cvia_peer_local) form a group
 * whose lowest rank, the leader, creates a segment as the one-host path
 * does: [region][twins][control: struct dsm_xctl, the unit table, the
 * dirty list]. Every member maps the region as both its views, so the
 * hardware keeps it coherent on the host, and works on the one unit table
 * and twins under the segment's lock (d->lk), with its own protections.
 * HLRC runs between hosts: homes stay ranks, but every member of a home's
 * host treats the unit as home (dsm_ghome); intervals are per rank and
 * name every unit the host has dirty (dsm_proto.c). Locks and barriers
 * are still the one-level messages between all ranks. */

static size_t xctl_bytes(const struct dsm *d)
{
    size_t n = d->page + d->nunits * sizeof(struct dsm_unit) + 2 * d->nunits * sizeof(uint32_t);
    return (n + d->page - 1) / d->page * d->page;
}

static int xmap(struct dsm *d, int fd)
{
    void *p = mmap(NULL, xctl_bytes(d), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   (off_t)(2 * d->region));
    if (p == MAP_FAILED)
        return -errno;
    d->xmap = p;
    d->xbytes = xctl_bytes(d);
    d->xctl = p;
    d->u = (struct dsm_unit *)(void *)((char *)p + d->page);
    d->dirty = (uint32_t *)(void *)((char *)d->u + d->nunits * sizeof(struct dsm_unit));
    d->tracked = d->dirty + d->nunits;
    return 0;
}

void dsm_group_xfini(struct dsm *d)
{
    if (d->xmap)
        munmap(d->xmap, d->xbytes);
    d->xmap = NULL;
    d->xctl = NULL;
    if (d->xg) {
        d->u = NULL;
        d->dirty = NULL;
    }
    d->tracked = NULL;
}

static void xundo(struct dsm *d)
{
    dsm_group_xfini(d);
    d->xg = 0;
    d->lk = &d->lock;
    if (d->memfd >= 0)
        close(d->memfd);
    d->memfd = -1;
    if (d->gname[0])
        shm_unlink(d->gname);
    d->gname[0] = '\0';
}

/* Leader: create the host's segment; 0 or a negative errno. */
static int xcreate(struct dsm *d)
{
    size_t bytes = 2 * d->region + xctl_bytes(d);
    int fd, rc;

    if ((fd = cvia__shm_create(d->gname, sizeof(d->gname), NULL)) < 0) {
        dsm_warn("creating the host's shared region %s: %s", d->gname, strerror(-fd));
        d->gname[0] = '\0';
        return fd;
    }
    d->memfd = fd;
    rc = fchmod(fd, 0600) || ftruncate(fd, (off_t)bytes) ? -errno : 0;
    /* the control part is written at once: its pages are taken now, so a
     * /dev/shm too small for them is this warning (one level follows),
     * not a SIGBUS; the region's and twins' pages are taken as units are
     * allocated (dsm_group_reserve) */
    if (!rc)
        rc = -posix_fallocate(fd, (off_t)(2 * d->region), (off_t)xctl_bytes(d));
    if (!rc)
        rc = xmap(d, fd);
    if (rc) {
        dsm_warn("sizing the host's shared region %s (%zu bytes): %s", d->gname, bytes,
                 strerror(-rc));
        xundo(d);
    }
    return rc;
}

/* Groups across hosts: take the pages of units [u0, u0 + nu) in the
 * host's segment, region and twins, as they are allocated (every member
 * does; the second time is free). The segment lives in /dev/shm: where
 * it cannot hold them the job ends with the cause (dsm_group_full), where
 * a later touch would be a SIGBUS. */
void dsm_group_reserve(struct dsm *d, size_t u0, size_t nu)
{
    int e;

    if (!d->xg || d->memfd < 0 || !nu)
        return;
    /* tmpfs gives up with EINTR when a signal is pending (a profiler's
     * timer): again; any other failure leaves pages untaken, as full */
    do
        e = posix_fallocate(d->memfd, (off_t)(u0 * d->unit), (off_t)(nu * d->unit));
    while (e == EINTR);
    if (!e) {
        do
            e = posix_fallocate(d->memfd, (off_t)(d->region + u0 * d->unit),
                                (off_t)(nu * d->unit));
        while (e == EINTR);
    }
    if (e)
        dsm_group_full(d, 2 * nu * d->unit);
}

/* Member: open the leader's segment; 0 or a negative errno. */
static int xopen(struct dsm *d, const char *name)
{
    int fd = seg_open(name, 2 * d->region + xctl_bytes(d)), rc;

    if (fd < 0)
        return fd;
    d->memfd = fd;
    if ((rc = xmap(d, fd))) {
        dsm_warn("mapping the host's shared region %s: %s", name, strerror(-rc));
        xundo(d);
    }
    return rc;
}

/* Every rank, once rank 0 said the job spans hosts with groups worth
 * having: leaders create, members open, rank 0 collects every host's
 * outcome and tells everyone. 0 (d->xg tells the outcome) or an error. */
static int xsetup(struct dsm *d, uint64_t leaders)
{
    int32_t ok = 1, all = 1;
    char name[64];
    int rc = 0;

    if (d->rank == d->gleader) {
        ok = !xcreate(d);
        memset(name, 0, sizeof(name));
        if (ok)
            snprintf(name, sizeof(name), "%s", d->gname);
        for (int r = d->rank + 1; r < d->size && !rc; r++)
            if ((d->gmask >> r) & 1)
                rc = cvia_send(name, sizeof(name), r, DSM_TAG_INIT);
        for (int r = d->rank + 1; r < d->size && !rc; r++) {
            int32_t v;
            if ((d->gmask >> r) & 1 && !(rc = cvia_recv(&v, sizeof(v), r, DSM_TAG_INIT, NULL)))
                ok &= v == 1;
        }
        if (d->gname[0])
            shm_unlink(d->gname);
        d->gname[0] = '\0';
        if (!rc && d->rank != 0)
            rc = cvia_send(&ok, sizeof(ok), 0, DSM_TAG_INIT);
    } else {
        rc = cvia_recv(name, sizeof(name), d->gleader, DSM_TAG_INIT, NULL);
        name[sizeof(name) - 1] = '\0';
        if (!rc) {
            ok = name[0] && !xopen(d, name);
            rc = cvia_send(&ok, sizeof(ok), d->gleader, DSM_TAG_INIT);
        }
    }
    if (!rc && d->rank == 0) {
        all = ok;
        for (int r = 1; r < d->size && !rc; r++) {
            int32_t v;
            if (!((leaders >> r) & 1))   /* the other hosts' leaders report */
                continue;
            if (!(rc = cvia_recv(&v, sizeof(v), r, DSM_TAG_INIT, NULL)))
                all &= v == 1;
        }
        for (int r = 1; r < d->size && !rc; r++)
            rc = cvia_send(&all, sizeof(all), r, DSM_TAG_INIT);
    } else if (!rc) {
        rc = cvia_recv(&all, sizeof(all), 0, DSM_TAG_INIT, NULL);
    }
    if (rc || all != 1) {
        xundo(d);
        if (!rc && d->rank == 0)
            dsm_warn("a rank could not open its host's shared region: every rank runs "
                     "the one-level protocol");
        return rc;
    }
    d->xg = 1;
    d->lk = &d->xctl->lock;
    d->gspin = (int)__builtin_popcountll(d->gmask) > sysconf(_SC_NPROCESSORS_ONLN) ? 0 :
               d->cfg.wait_spin;
    dsm_info("CVIA_DSM_LEVELS=2: %d ranks of this host share the region; HLRC between hosts",
             (int)__builtin_popcountll(d->gmask));
    return 0;
}

/* What every rank answers rank 0's offer with. */
struct group_answer {
    int32_t ok;           /* 1 opened (or nothing to open), 0 not, -1 other levels */
    int32_t leader;       /* the lowest rank of its host */
    int32_t members;      /* ranks on its host */
};

int dsm_group_setup(struct dsm *d)
{
    struct group_offer o;
    struct group_answer a;
    int32_t all = 1, maxm = 1;
    uint64_t leaders = 1;
    int rc = 0;

    d->grp = 0;
    d->xg = 0;
    d->gctl = NULL;
    d->gname[0] = '\0';
    if (d->size == 1)
        return 0;
    d->gmask = 1ull << d->rank;
    for (int r = 0; r < d->size; r++)
        if (r != d->rank && cvia_peer_local(r) == 1)
            d->gmask |= 1ull << r;
    d->gleader = __builtin_ctzll(d->gmask);
    memset(&o, 0, sizeof(o));
    if (d->rank == 0) {
        o.levels = (int32_t)d->cfg.levels;
        o.grp = d->cfg.levels == 2 && d->gmask == (d->size >= 64 ? ~0ull : (1ull << d->size) - 1);
        o.xg = d->cfg.levels == 2 && !o.grp;
        if (o.grp && create_segment(d))
            o.grp = 0;
        snprintf(o.name, sizeof(o.name), "%s", d->gname);
        for (int r = 1; r < d->size && !rc; r++)
            rc = cvia_send(&o, sizeof(o), r, DSM_TAG_INIT);
        for (int r = 1; r < d->size && !rc; r++) {
            if (!(rc = cvia_recv(&a, sizeof(a), r, DSM_TAG_INIT, NULL))) {
                if (a.ok < 0)
                    all = -1;
                else if (!a.ok && all > 0)
                    all = 0;
                if (a.leader == r)
                    leaders |= 1ull << r;
                if (a.members > maxm)
                    maxm = a.members;
            }
        }
        if (d->gname[0])          /* every rank that could open it has */
            shm_unlink(d->gname);
        d->gname[0] = '\0';
        if ((int)__builtin_popcountll(d->gmask) > maxm)
            maxm = (int)__builtin_popcountll(d->gmask);
        if (all > 0 && o.xg)      /* groups across hosts: worth it with a host of two */
            all = maxm > 1 ? 2 : 0;
        else if (!o.grp && all > 0)
            all = 0;
        for (int r = 1; r < d->size && !rc; r++)
            rc = cvia_send(&all, sizeof(all), r, DSM_TAG_INIT);
    } else {
        if ((rc = cvia_recv(&o, sizeof(o), 0, DSM_TAG_INIT, NULL)))
            return rc;
        o.name[sizeof(o.name) - 1] = '\0';
        a.ok = 1;
        a.leader = d->gleader;
        a.members = (int32_t)__builtin_popcountll(d->gmask);
        if (o.levels != (int32_t)d->cfg.levels) {
            dsm_err("rank 0 runs with CVIA_DSM_LEVELS %d, this rank with %ld: every rank "
                    "needs the same", (int)o.levels, d->cfg.levels);
            a.ok = -1;
        } else if (o.grp) {
            a.ok = !open_segment(d, o.name);
        }
        if ((rc = cvia_send(&a, sizeof(a), 0, DSM_TAG_INIT)) ||
            (rc = cvia_recv(&all, sizeof(all), 0, DSM_TAG_INIT, NULL))) {
            undo(d);
            return rc;
        }
    }
    if (!rc && all == 2)
        return xsetup(d, leaders);
    if (rc || all != 1) {
        undo(d);
        if (rc)
            return rc;
        if (all < 0) {
            if (d->rank == 0)
                dsm_err("the ranks run with different CVIA_DSM_LEVELS: every rank needs "
                        "the same");
            return -CVIA_ECONFIG;
        }
        if (o.grp && d->rank == 0)
            dsm_warn("a rank could not open the host's shared region: every rank runs "
                     "the one-level protocol");
        return 0;
    }
    d->grp = 1;
    d->gspin = d->size > sysconf(_SC_NPROCESSORS_ONLN) ? 0 : d->cfg.wait_spin;
    dsm_info("CVIA_DSM_LEVELS=2: the %d ranks share the region on this host", d->size);
    return 0;
}

void dsm_group_fini(struct dsm *d)
{
    if (d->gctl)
        munmap(d->gctl, ctl_bytes(d));
    d->gctl = NULL;
    if (d->gname[0])
        shm_unlink(d->gname);
    d->gname[0] = '\0';
}

/* The segment lives in /dev/shm, whose size may be less than the memory
 * (a container's 64 MiB): an allocation that cannot be faulted in ends the
 * job with the cause here, where a later touch would be a SIGBUS. */
void dsm_group_full(struct dsm *d, size_t len)
{
    struct statvfs sv;
    unsigned long long freeb = 0;

    if (!statvfs("/dev/shm", &sv))
        freeb = (unsigned long long)sv.f_bavail * sv.f_frsize;
    dsm_fatal(-ENOSPC, "the host's shared region cannot hold %zu more bytes: /dev/shm has "
              "%llu bytes free (enlarge it, or run one-level with CVIA_DSM_LEVELS=1)",
              len, freeb);
}

/* ---- locks --------------------------------------------------------------------- */

/* How a rank waits for a word of the host's segment to change. As the
 * one-level service thread polls while its application waits: first
 * without pause for CVIA_DSM_WAIT_SPIN, then in CVIA_DSM_NAP naps, and only
 * after a second of naps on the futex. A rank that sleeps on the futex at
 * once gives its core away, and on a busy machine winning it back costs a
 * scheduler slice per wait: SOR on 2 ranks under load 15 spent 1.3-2.0 s
 * of 100 iterations in barriers that way (one-level: 0.1-0.3 s); a rank
 * that naps stays a short sleeper, which the scheduler runs again soon.
 * With more ranks than CPUs it does not spin (d->gspin 0): the spinner
 * would hold the core of a rank it waits for (4 ranks on 2 vCPUs: LU
 * 0.20 s spinning, 0.12 s not). */
struct gwait {
    double end;           /* end of the current phase (0: not started) */
    int    phase;         /* 0 spin, 1 nap, 2 futex */
};

/* 1 when @w no longer holds @val; 0 once the spin and the naps are over
 * (w->phase is then 2: wait on the futex). */
static int wait_while(struct dsm *d, _Atomic uint32_t *w, uint32_t val, struct gwait *g)
{
    struct timespec nap = { 0, (long)(d->cfg.nap * 1e9) };

    for (unsigned i = 1; g->phase < 2; i++) {
        if (atomic_load_explicit(w, memory_order_acquire) != val)
            return 1;
        if (g->phase == 0)
            cvia_cpu_relax();
        else if (nap.tv_nsec)
            nanosleep(&nap, NULL);
        else
            sched_yield();
        if (g->phase == 1 || !(i & 63)) {
            double t = cvia__clock_s();
            if (!g->end) {
                g->end = t + (g->phase ? 1.0 : d->gspin);
            } else if (t >= g->end) {
                g->phase++;
                g->end = 0;
            }
        }
    }
    return atomic_load_explicit(w, memory_order_acquire) != val;
}

static int word_lock(struct dsm *d, _Atomic uint32_t *w);
static void word_unlock(_Atomic uint32_t *w);

/* Returns 1 if the lock had to wait. */
int dsm_group_lock(struct dsm *d, int id)
{
    return word_lock(d, lock_word(d, id));
}

void dsm_group_unlock(struct dsm *d, int id)
{
    word_unlock(lock_word(d, id));
}

static int word_lock(struct dsm *d, _Atomic uint32_t *w)
{
    uint32_t c = 0;
    struct gwait g = { 0, 0 };

    if (atomic_compare_exchange_strong(w, &c, 1))
        return 0;
    /* held (c): wait until it looks free and take it, until the naps end */
    while (wait_while(d, w, c, &g)) {
        c = 0;
        if (atomic_compare_exchange_strong(w, &c, 1))
            return 1;
    }
    c = atomic_load(w);
    if (c != 2)
        c = atomic_exchange(w, 2);
    while (c != 0) {
        gfutex_wait(w, 2);
        c = atomic_exchange(w, 2);
    }
    return 1;
}

static void word_unlock(_Atomic uint32_t *w)
{
    if (atomic_fetch_sub(w, 1) != 1) {
        atomic_store(w, 0);
        gfutex_wake(w, 1);
    }
}

/* ---- barriers ------------------------------------------------------------------- */

void dsm_group_barrier(struct dsm *d)
{
    struct dsm_gctl *g = d->gctl;
    uint32_t gen = atomic_load(&g->bar_gen);
    struct gwait gw = { 0, 0 };

    if (atomic_fetch_add(&g->bar_count, 1) == (uint32_t)d->size - 1) {
        atomic_store(&g->bar_count, 0);
        atomic_store(&g->bar_gen, gen + 1);
        if (atomic_load(&g->bar_sleepers))
            gfutex_wake(&g->bar_gen, INT_MAX);
        return;
    }
    if (wait_while(d, &g->bar_gen, gen, &gw))
        return;
    atomic_fetch_add(&g->bar_sleepers, 1);
    while (atomic_load(&g->bar_gen) == gen)
        gfutex_wait(&g->bar_gen, gen);
    atomic_fetch_sub(&g->bar_sleepers, 1);
}

/* ---- groups across hosts: the release mutex and two-way merges ---------------------
 *
 * One release, merge or poll flush of a host at a time (the release
 * mutex, a futex word in the segment): while one runs no diff of the host
 * is in flight but its own, and the twins are its alone. */

void dsm_rel_lock(struct dsm *d)
{
    word_lock(d, &d->xctl->rel);
}

int dsm_rel_trylock(struct dsm *d)
{
    uint32_t c = 0;
    return atomic_compare_exchange_strong(&d->xctl->rel, &c, 1);
}

void dsm_rel_unlock(struct dsm *d)
{
    word_unlock(&d->xctl->rel);
}

/* A unit the host writes (DIRTY) was written on another host: the home's
 * copy is read into a buffer, and only the bytes where it differs from the
 * twin are written into the page and the twin. Bytes the host wrote since
 * its last diff differ from the twin in the page but not at the home (the
 * host's diffs made the home equal to the twin there, and none is in
 * flight: the caller holds the release mutex), so they stay; no member is
 * stopped. A unit that became clean meanwhile is simply dropped. */
void dsm_merge(struct dsm *d, uint32_t u)
{
    struct dsm_unit *x = &d->u[u];
    size_t off = (size_t)u * d->unit;
    cvia_req_t req = NULL;
    int home, rc;

    cvia_spin_lock(d->lk);
    if (x->state != U_DIRTY || dsm_ghome(d, x->home)) {
        x->mpend = 0;
        if (x->state == U_CLEAN && !dsm_ghome(d, x->home)) {
            x->state = U_INVALID;
            x->used = 0;
            ADD(invalidations, 1);
        }
        if (x->state == U_INVALID)
            dsm_unit_prot(d, u, P_NONE);
        cvia_spin_unlock(d->lk);
        return;
    }
    home = x->home;
    cvia_spin_unlock(d->lk);
    rc = cvia_read(d->mbuf, d->unit, &d->peer_view[home], off, &req);
    if (!rc)
        rc = cvia_wait(&req, NULL);
    if (rc)
        dsm_fatal(rc, "reading unit %u from rank %d: %s", u, home, cvia_strerror(rc));
    ADD(rdma_bytes, d->unit);
    ADD(fetches, 1);
    ADD(fetch_bytes, d->unit);
    cvia_spin_lock(d->lk);
    if (x->state == U_DIRTY) {
        const unsigned char *h = (const unsigned char *)d->mbuf;
        unsigned char *pg = (unsigned char *)d->pview + off;
        unsigned char *tw = (unsigned char *)d->twins + off;
        for (size_t i = 0; i < d->unit; i += 8) {
            if (!memcmp(h + i, tw + i, 8))
                continue;
            for (size_t j = i; j < i + 8; j++) {
                if (h[j] != tw[j]) {
                    pg[j] = h[j];
                    tw[j] = h[j];
                }
            }
        }
    } else if (x->state == U_CLEAN) {   /* cleaned meanwhile: dropped instead */
        x->state = U_INVALID;
        x->used = 0;
        dsm_unit_prot(d, u, P_NONE);
    }
    x->mpend = 0;
    cvia_spin_unlock(d->lk);
}

void dsm_merge_list(struct dsm *d, const uint32_t *u, size_t n)
{
    if (!n)
        return;
    dsm_rel_lock(d);
    for (size_t i = 0; i < n; i++)
        dsm_merge(d, u[i]);
    dsm_rel_unlock(d);
}

void dsm_merge_acquired(struct dsm *d)
{
    uint32_t *q;
    size_t n;

    if (!d->xg || !d->namq)
        return;
    q = d->amq;
    n = d->namq;
    d->amq = NULL;
    d->namq = d->amq_cap = 0;
    dsm_merge_list(d, q, n);
    free(q);
}

/* The service thread, for poll notes: only when the mutex is free (the
 * application thread may hold it, waiting for this thread's service). */
void dsm_merge_queued(struct dsm *d)
{
    if (!d->nmq || atomic_load(&d->in_fin))
        return;
    if (!dsm_rel_trylock(d))
        return;
    for (size_t i = 0; i < d->nmq; i++)
        dsm_merge(d, d->mq[i]);
    d->nmq = 0;
    dsm_rel_unlock(d);
}
