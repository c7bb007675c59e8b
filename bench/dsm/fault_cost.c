/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */

/*
 * dsm_fault_cost: what a page-based DSM pays to detect an access, per fault
 * and per re-arm, on a memfd-backed MAP_SHARED region (the DSM's own kind of
 * memory). Standalone: plain C11 + Linux headers, nothing of corevia.
 *
 *   sigsegv-wp    region PROT_READ; one write per unit; the SIGSEGV handler
 *                 (SA_SIGINFO) mprotects the unit READ|WRITE and returns.
 *                 Re-arm: mprotect(PROT_READ).
 *   uffd-wp       region registered with userfaultfd, UFFDIO_REGISTER_MODE_WP,
 *                 populated and write-protected (UFFDIO_WRITEPROTECT); one
 *                 write per unit; a handler thread (poll + read of uffd_msg)
 *                 clears the unit's protection (UFFDIO_WRITEPROTECT mode 0),
 *                 which wakes the faulter. Re-arm: UFFDIO_WRITEPROTECT(WP).
 *   sigsegv-none  region PROT_NONE; one read per unit; the handler mprotects
 *                 the unit PROT_READ (the DSM's invalid-page path).
 *                 Re-arm: mprotect(PROT_NONE).
 *   uffd-minor    the memfd filled through a second mapping (the protocol
 *                 view); the application view registered with
 *                 UFFDIO_REGISTER_MODE_MINOR and zapped (MADV_DONTNEED); one
 *                 read per unit; the handler thread maps the unit's page-cache
 *                 pages with UFFDIO_CONTINUE (zero copy). Re-arm:
 *                 MADV_DONTNEED.
 *
 * The uffd mechanisms run twice: handler thread on the faulter's CPU
 * (same) and on another CPU (other). The faulting (main) thread is pinned to
 * the first CPU of the affinity mask, the "other" handler to the second.
 *
 * Each round, for each mechanism (order rotating from round to round): a
 * fresh memfd and mappings, armed once (untimed), one warm fault pass
 * (untimed), then timed: re-arm with one call per unit, a fault pass, re-arm
 * with one call over the whole region, a fault pass. Reported per unit:
 *   fault       the mean of the two timed fault passes (trap + handler fix +
 *               return to the access), divided by the units
 *   re-arm      the per-unit re-arm pass, divided by the units
 *   bulk        the one-call re-arm, divided by the units
 * as the median and min-max over the rounds. Every pass checks that it took
 * exactly one fault per unit.
 *
 * Exit status: 0 every requested mechanism measured; 77 a requested mechanism
 * is not supported here (the others are still measured and printed); 1 a
 * runtime error; 2 bad usage.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Newer than some installed headers. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#define PROG         "dsm_fault_cost"
#define EXIT_USAGE   2
#define EXIT_SKIP    77
#define MAX_PAGES    (1u << 20)     /* 4 GiB of 4 KiB pages */
#define MAX_ROUNDS   1000
#define HANDLER_IDLE_S 120          /* a handler with no event and no stop */
#define IOCTL_RETRIES  1000         /* EAGAIN from a uffd ioctl */

/* ---- configuration ------------------------------------------------------ */

enum mech { M_SEGV_WP, M_UFFD_WP, M_SEGV_NONE, M_UFFD_MINOR, M_COUNT };
static const char *const mech_name[M_COUNT] = { "sigsegv-wp", "uffd-wp", "sigsegv-none", "uffd-minor" };
static const char *const mech_rearm[M_COUNT] = { "mprotect(READ)", "UFFDIO_WRITEPROTECT", "mprotect(NONE)",
                                                 "MADV_DONTNEED" };
static const int mech_uffd[M_COUNT] = { 0, 1, 0, 1 };
static const int mech_write[M_COUNT] = { 1, 1, 0, 0 };

enum cpu_mode { CPU_NA, CPU_SAME, CPU_OTHER };
static const char *const cpu_name[] = { "-", "same", "other" };

struct cfg {
    size_t page, npages, unit, units, len;
    int rounds, csv;
    int want_same, want_other;
    unsigned mechs;               /* bit per enum mech */
    int cpu_a, cpu_b;             /* cpu_b < 0: no second CPU */
};

struct row {
    enum mech m;
    enum cpu_mode cpu;
    int supported;
    char why[160];                /* why not supported */
    double *fault, *rearm, *bulk; /* ns per unit, one per round */
};

/* ---- small helpers ------------------------------------------------------ */

_Noreturn static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (--help for usage)\n");
    va_end(ap);
    exit(EXIT_USAGE);
}

static void setf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A decimal count with an optional binary suffix k, m or g. */
static int parse_size(const char *s, unsigned long long *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || (shift && v > (~0ULL >> shift)))
        return -1;
    *out = v << shift;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stat3 { double med, min, max; };

static struct stat3 stats(const double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    struct stat3 r = { n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1] };
    return r;
}

/* ---- userfaultfd: opening and features ---------------------------------- */

static const char *const feature_name[] = {
    "PAGEFAULT_FLAG_WP", "EVENT_FORK", "EVENT_REMAP", "EVENT_REMOVE", "MISSING_HUGETLBFS",
    "MISSING_SHMEM", "EVENT_UNMAP", "SIGBUS", "THREAD_ID", "MINOR_HUGETLBFS", "MINOR_SHMEM",
    "EXACT_ADDRESS", "WP_HUGETLBFS_SHMEM", "WP_UNPOPULATED", "POISON", "WP_ASYNC", "MOVE",
};

/* A new userfaultfd (O_NONBLOCK), by the system call or /dev/userfaultfd. */
static int uffd_new(char *why, size_t whylen)
{
#ifdef SYS_userfaultfd
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0 && errno == EINVAL)   /* kernels before UFFD_USER_MODE_ONLY */
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0)
        return fd;
    int e = errno;
#else
    int e = ENOSYS;
#endif
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev >= 0) {
        int fd2 = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
        int e2 = errno;
        close(dev);
        if (fd2 >= 0)
            return fd2;
        setf(why, whylen, "userfaultfd(2): %s; /dev/userfaultfd: %s", strerror(e), strerror(e2));
    } else {
        setf(why, whylen, "userfaultfd(2): %s; /dev/userfaultfd: %s", strerror(e), strerror(errno));
    }
    return -1;
}

/* A userfaultfd with the API handshake done for @features. */
static int uffd_open(uint64_t features, char *why, size_t whylen)
{
    int fd = uffd_new(why, whylen);
    if (fd < 0)
        return -1;
    struct uffdio_api api = { .api = UFFD_API, .features = features };
    if (ioctl(fd, UFFDIO_API, &api)) {
        setf(why, whylen, "UFFDIO_API (features 0x%llx): %s", (unsigned long long)features, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- the SIGSEGV handler ------------------------------------------------ */

enum segv_why { SW_NONE, SW_OUTSIDE, SW_LOOP, SW_MPROTECT };

static struct {
    char *volatile base;
    volatile size_t len, unit;
    volatile int prot;
    volatile sig_atomic_t armed;       /* a pass is running: errors jump */
    volatile unsigned long faults, cap;
    volatile int why, err;
    void *volatile addr;
} sg;
static sigjmp_buf sg_jmp;

static void segv_handler(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)uctx;
    char *a = si->si_addr;
    if (!sg.armed) {              /* not ours: die of it with the default */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGSEGV, &dfl, NULL);
        return;
    }
    if (a < sg.base || a >= sg.base + sg.len) {
        sg.armed = 0;
        sg.why = SW_OUTSIDE;
        sg.addr = a;
        siglongjmp(sg_jmp, 1);
    }
    if (++sg.faults > sg.cap) {
        sg.armed = 0;
        sg.why = SW_LOOP;
        siglongjmp(sg_jmp, 1);
    }
    size_t u = (size_t)(a - sg.base) / sg.unit;
    if (mprotect(sg.base + u * sg.unit, sg.unit, sg.prot)) {
        sg.err = errno;
        sg.armed = 0;
        sg.why = SW_MPROTECT;
        siglongjmp(sg_jmp, 1);
    }
}

/* ---- the uffd handler thread -------------------------------------------- */

struct handler {
    pthread_t th;
    int uffd, stopfd;
    char *base;
    size_t len, unit;
    int minor;                    /* UFFDIO_CONTINUE, else UFFDIO_WRITEPROTECT */
    atomic_ulong faults;          /* all passes */
    atomic_ulong limit;           /* more faults than this: a loop, stop */
    atomic_int failed;
    char msg[200];
};

static void handler_fail(struct handler *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->msg, sizeof h->msg, fmt, ap);
    va_end(ap);
    atomic_store(&h->failed, 1);
}

/* Make the unit at @start accessible and wake its faulter. */
static int handler_resolve(struct handler *h, char *start)
{
    for (int tries = 0; tries < IOCTL_RETRIES; tries++) {
        int rc;
        if (h->minor) {
            struct uffdio_continue c = { .range = { (uintptr_t)start, h->unit }, .mode = 0 };
            rc = ioctl(h->uffd, UFFDIO_CONTINUE, &c);
            if (rc && errno == EEXIST) {   /* already mapped: just wake */
                struct uffdio_range r = { (uintptr_t)start, h->unit };
                rc = ioctl(h->uffd, UFFDIO_WAKE, &r);
            }
        } else {
            struct uffdio_writeprotect wp = { .range = { (uintptr_t)start, h->unit }, .mode = 0 };
            rc = ioctl(h->uffd, UFFDIO_WRITEPROTECT, &wp);
        }
        if (rc == 0)
            return 0;
        if (errno != EAGAIN && errno != EINTR) {
            handler_fail(h, "%s: %s", h->minor ? "UFFDIO_CONTINUE" : "UFFDIO_WRITEPROTECT(0)",
                         strerror(errno));
            return -1;
        }
    }
    handler_fail(h, "%s: EAGAIN %d times", h->minor ? "UFFDIO_CONTINUE" : "UFFDIO_WRITEPROTECT(0)",
                 IOCTL_RETRIES);
    return -1;
}

/* Until the stop eventfd fires, an error, or HANDLER_IDLE_S without either.
 * On an error the range is unregistered and its waiters woken: a blocked
 * faulter then faults as on plain memory, so the main thread never hangs. */
static void *handler_main(void *arg)
{
    struct handler *h = arg;
    int idle = 0;
    while (!atomic_load(&h->failed)) {
        struct pollfd p[2] = { { h->uffd, POLLIN, 0 }, { h->stopfd, POLLIN, 0 } };
        int n = poll(p, 2, 1000);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            handler_fail(h, "poll: %s", strerror(errno));
            break;
        }
        if (n == 0) {
            if (++idle >= HANDLER_IDLE_S)
                handler_fail(h, "handler thread: no event and no stop for %d s", HANDLER_IDLE_S);
            continue;
        }
        idle = 0;
        if (p[1].revents)
            break;
        if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
            handler_fail(h, "poll on the userfaultfd: revents 0x%x", (unsigned)p[0].revents);
            break;
        }
        struct uffd_msg m[32];
        ssize_t r = read(h->uffd, m, sizeof m);
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            handler_fail(h, "read of the userfaultfd: %s", strerror(errno));
            break;
        }
        for (size_t i = 0; i < (size_t)r / sizeof m[0]; i++) {
            if (m[i].event != UFFD_EVENT_PAGEFAULT) {
                handler_fail(h, "unexpected userfaultfd event %u", (unsigned)m[i].event);
                break;
            }
            char *a = (char *)(uintptr_t)m[i].arg.pagefault.address;
            if (a < h->base || a >= h->base + h->len) {
                handler_fail(h, "fault at %p outside the region", (void *)a);
                break;
            }
            if (atomic_fetch_add(&h->faults, 1) + 1 > atomic_load(&h->limit)) {
                handler_fail(h, "more than twice as many faults as units in one pass");
                break;
            }
            size_t u = (size_t)(a - h->base) / h->unit;
            if (handler_resolve(h, h->base + u * h->unit))
                break;
        }
    }
    if (atomic_load(&h->failed)) {   /* unregistering wakes only MISSING faults */
        struct uffdio_range r = { (uintptr_t)h->base, h->len };
        ioctl(h->uffd, UFFDIO_UNREGISTER, &r);
        ioctl(h->uffd, UFFDIO_WAKE, &r);
    }
    return NULL;
}

/* ---- one mechanism, one round ------------------------------------------- */

struct region {
    const struct cfg *c;
    enum mech m;
    int memfd, uffd, stopfd;
    char *app, *proto;            /* proto: uffd-minor only */
    struct handler h;
    int h_started, segv_installed;
    struct sigaction old_segv;
};

static void region_free(struct region *g)
{
    if (g->h_started) {
        uint64_t one = 1;
        if (write(g->stopfd, &one, sizeof one) != sizeof one)
            atomic_store(&g->h.failed, 1);   /* the handler also stops on failed */
        pthread_join(g->h.th, NULL);
        g->h_started = 0;
    }
    if (g->segv_installed) {
        sg.armed = 0;
        sigaction(SIGSEGV, &g->old_segv, NULL);
        g->segv_installed = 0;
    }
    if (g->uffd >= 0)
        close(g->uffd);   /* unregisters and wakes */
    if (g->stopfd >= 0)
        close(g->stopfd);
    if (g->app)
        munmap(g->app, g->c->len);
    if (g->proto)
        munmap(g->proto, g->c->len);
    if (g->memfd >= 0)
        close(g->memfd);
    g->uffd = g->stopfd = g->memfd = -1;
    g->app = g->proto = NULL;
}

static int arm(struct region *g, char *start, size_t len, char *err, size_t errlen)
{
    int rc = 0;
    switch (g->m) {
    case M_SEGV_WP:
        rc = mprotect(start, len, PROT_READ);
        break;
    case M_SEGV_NONE:
        rc = mprotect(start, len, PROT_NONE);
        break;
    case M_UFFD_WP: {
        struct uffdio_writeprotect wp = { .range = { (uintptr_t)start, len },
                                          .mode = UFFDIO_WRITEPROTECT_MODE_WP };
        rc = ioctl(g->uffd, UFFDIO_WRITEPROTECT, &wp);
        break;
    }
    case M_UFFD_MINOR:
        rc = madvise(start, len, MADV_DONTNEED);
        break;
    default:
        break;
    }
    if (rc)
        setf(err, errlen, "%s: re-arm with %s: %s", mech_name[g->m], mech_rearm[g->m], strerror(errno));
    return rc;
}

/* Time one write or read per unit; check one fault per unit. */
static int fault_pass(struct region *g, double *ns, char *err, size_t errlen)
{
    const struct cfg *c = g->c;
    volatile char *p = (volatile char *)g->app;
    volatile unsigned long before = 0;
    unsigned long faults;
    volatile unsigned sum = 0;
    double t0, t1;

    if (!mech_uffd[g->m]) {
        sg.faults = 0;
        sg.cap = 2 * c->units + 16;
        sg.why = SW_NONE;
        if (sigsetjmp(sg_jmp, 1)) {
            switch (sg.why) {
            case SW_OUTSIDE:
                setf(err, errlen, "%s: SIGSEGV at %p, outside the region", mech_name[g->m], sg.addr);
                break;
            case SW_LOOP:
                setf(err, errlen, "%s: more than %lu faults in one pass", mech_name[g->m], sg.cap);
                break;
            default:
                setf(err, errlen, "%s: mprotect in the handler: %s", mech_name[g->m], strerror(sg.err));
                break;
            }
            return -1;
        }
        sg.armed = 1;
    } else {
        before = atomic_load(&g->h.faults);
        atomic_store(&g->h.limit, before + 2 * c->units + 16);
    }
    t0 = now_ns();
    if (mech_write[g->m])
        for (size_t i = 0; i < c->units; i++)
            p[i * c->unit] = (char)i;
    else
        for (size_t i = 0; i < c->units; i++)
            sum += (unsigned char)p[i * c->unit];
    t1 = now_ns();
    if (!mech_uffd[g->m]) {
        sg.armed = 0;
        faults = sg.faults;
    } else {
        if (atomic_load(&g->h.failed)) {
            setf(err, errlen, "%s: %s", mech_name[g->m], g->h.msg);
            return -1;
        }
        faults = atomic_load(&g->h.faults) - before;
    }
    if (faults != c->units) {
        setf(err, errlen, "%s: %lu faults for %zu units in one pass (sum %u)", mech_name[g->m], faults,
             c->units, sum);
        return -1;
    }
    *ns = t1 - t0;
    return 0;
}

/* One round of one row: three samples into round @k of the row. */
static int run_row(const struct cfg *c, struct row *rw, int k, char *err, size_t errlen)
{
    struct region g;
    memset(&g, 0, sizeof g);
    g.c = c;
    g.m = rw->m;
    g.memfd = g.uffd = g.stopfd = -1;
    int rc = -1;

    g.memfd = memfd_create("dsm_fault_cost", MFD_CLOEXEC);
    if (g.memfd < 0) {
        setf(err, errlen, "memfd_create: %s", strerror(errno));
        goto out;
    }
    if (ftruncate(g.memfd, (off_t)c->len)) {
        setf(err, errlen, "ftruncate of the memfd to %zu bytes: %s", c->len, strerror(errno));
        goto out;
    }
    g.app = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, g.memfd, 0);
    if (g.app == MAP_FAILED) {
        g.app = NULL;
        setf(err, errlen, "mmap of %zu bytes: %s", c->len, strerror(errno));
        goto out;
    }
    madvise(g.app, c->len, MADV_NOHUGEPAGE);   /* 4 KiB ptes whatever shmem_enabled says */
    char *fill = g.app;
    if (g.m == M_UFFD_MINOR) {
        g.proto = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, g.memfd, 0);
        if (g.proto == MAP_FAILED) {
            g.proto = NULL;
            setf(err, errlen, "mmap of the protocol view: %s", strerror(errno));
            goto out;
        }
        madvise(g.proto, c->len, MADV_NOHUGEPAGE);
        fill = g.proto;
    }
    for (size_t i = 0; i < c->len; i += c->page)   /* populate page cache (and app ptes) */
        fill[i] = 1;

    if (mech_uffd[g.m]) {
        uint64_t want = g.m == M_UFFD_WP
                            ? UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM
                            : UFFD_FEATURE_MINOR_SHMEM;
        g.uffd = uffd_open(want, err, errlen);
        if (g.uffd < 0)
            goto out;
        struct uffdio_register reg = { .range = { (uintptr_t)g.app, c->len },
                                       .mode = g.m == M_UFFD_WP ? UFFDIO_REGISTER_MODE_WP
                                                                : UFFDIO_REGISTER_MODE_MINOR };
        if (ioctl(g.uffd, UFFDIO_REGISTER, &reg)) {
            setf(err, errlen, "UFFDIO_REGISTER mode %s on the memfd mapping: %s",
                 g.m == M_UFFD_WP ? "WP" : "MINOR", strerror(errno));
            goto out;
        }
        uint64_t need = 1ULL << (g.m == M_UFFD_WP ? _UFFDIO_WRITEPROTECT : _UFFDIO_CONTINUE);
        if (!(reg.ioctls & need)) {
            setf(err, errlen, "UFFDIO_REGISTER does not offer %s on the memfd mapping",
                 g.m == M_UFFD_WP ? "UFFDIO_WRITEPROTECT" : "UFFDIO_CONTINUE");
            goto out;
        }
        g.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (g.stopfd < 0) {
            setf(err, errlen, "eventfd: %s", strerror(errno));
            goto out;
        }
        g.h.uffd = g.uffd;
        g.h.stopfd = g.stopfd;
        g.h.base = g.app;
        g.h.len = c->len;
        g.h.unit = c->unit;
        g.h.minor = g.m == M_UFFD_MINOR;
        atomic_init(&g.h.faults, 0);
        atomic_init(&g.h.limit, 2 * c->units + 16);
        atomic_init(&g.h.failed, 0);
        pthread_attr_t at;
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(rw->cpu == CPU_OTHER ? c->cpu_b : c->cpu_a, &set);
        pthread_attr_init(&at);
        int e = pthread_attr_setaffinity_np(&at, sizeof set, &set);
        if (!e)
            e = pthread_create(&g.h.th, &at, handler_main, &g.h);
        pthread_attr_destroy(&at);
        if (e) {
            setf(err, errlen, "starting the handler thread: %s", strerror(e));
            goto out;
        }
        g.h_started = 1;
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = segv_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sg.base = g.app;
        sg.len = c->len;
        sg.unit = c->unit;
        sg.prot = g.m == M_SEGV_WP ? PROT_READ | PROT_WRITE : PROT_READ;
        sg.armed = 0;
        if (sigaction(SIGSEGV, &sa, &g.old_segv)) {
            setf(err, errlen, "sigaction(SIGSEGV): %s", strerror(errno));
            goto out;
        }
        g.segv_installed = 1;
    }

    /* armed once, a warm pass, then the timed passes */
    double f1, f2, t0, tr, tb;
    if (arm(&g, g.app, c->len, err, errlen) || fault_pass(&g, &f1, err, errlen))
        goto out;
    t0 = now_ns();
    for (size_t i = 0; i < c->units; i++)
        if (arm(&g, g.app + i * c->unit, c->unit, err, errlen))
            goto out;
    tr = now_ns() - t0;
    if (fault_pass(&g, &f1, err, errlen))
        goto out;
    t0 = now_ns();
    if (arm(&g, g.app, c->len, err, errlen))
        goto out;
    tb = now_ns() - t0;
    if (fault_pass(&g, &f2, err, errlen))
        goto out;
    rw->fault[k] = (f1 + f2) / 2 / (double)c->units;
    rw->rearm[k] = tr / (double)c->units;
    rw->bulk[k] = tb / (double)c->units;
    rc = 0;
out:
    region_free(&g);
    if (rc == 0 && mech_uffd[g.m] && atomic_load(&g.h.failed)) {
        setf(err, errlen, "%s: %s", mech_name[g.m], g.h.msg);
        rc = -1;
    }
    return rc;
}

/* ---- output ------------------------------------------------------------- */

static void fmt_ns(char *buf, size_t len, double v)
{
    if (v < 100)
        snprintf(buf, len, "%.1f", v);
    else
        snprintf(buf, len, "%.0f", v);
}

static void fmt_stat(char *buf, size_t len, const double *v, int n)
{
    struct stat3 s = stats(v, n);
    char a[24], b[24], m[24];
    fmt_ns(m, sizeof m, s.med);
    fmt_ns(a, sizeof a, s.min);
    fmt_ns(b, sizeof b, s.max);
    snprintf(buf, len, "%s [%s-%s]", m, a, b);
}

static void features_string(char *buf, size_t len, uint64_t f)
{
    size_t off = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < 64 && off < len; i++) {
        if (!(f & (1ULL << i)))
            continue;
        if (i < sizeof feature_name / sizeof feature_name[0])
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "", feature_name[i]);
        else
            off += (size_t)snprintf(buf + off, len - off, "%sbit%u", off ? " " : "", i);
    }
}

static void print_table(const struct cfg *c, struct row *rows, int nrows)
{
    printf("%-13s %-7s %-26s %-20s %-26s %s\n", "mechanism", "handler", "fault ns/unit", "re-arm op",
           "re-arm ns/unit (per unit)", "re-arm ns/unit (one call)");
    for (int i = 0; i < nrows; i++) {
        struct row *r = &rows[i];
        if (!r->supported) {
            printf("%-13s %-7s unsupported: %s\n", mech_name[r->m], cpu_name[r->cpu], r->why);
            continue;
        }
        char f[96], a[96], b[96];
        fmt_stat(f, sizeof f, r->fault, c->rounds);
        fmt_stat(a, sizeof a, r->rearm, c->rounds);
        fmt_stat(b, sizeof b, r->bulk, c->rounds);
        printf("%-13s %-7s %-26s %-20s %-26s %s\n", mech_name[r->m], cpu_name[r->cpu], f, mech_rearm[r->m],
               a, b);
    }
    printf("# median [min-max] over %d rounds; fault = trap + handler fix + retry of the access;\n"
           "# re-arm per unit = one call per unit; one call = one call over the region / units\n",
           c->rounds);
}

static void print_csv(const struct cfg *c, struct row *rows, int nrows)
{
    printf("mechanism,handler_cpu,status,page_bytes,unit_bytes,units,rounds,rearm_op,"
           "fault_ns_med,fault_ns_min,fault_ns_max,rearm_ns_med,rearm_ns_min,rearm_ns_max,"
           "bulk_ns_med,bulk_ns_min,bulk_ns_max\n");
    for (int i = 0; i < nrows; i++) {
        struct row *r = &rows[i];
        printf("%s,%s,%s,%zu,%zu,%zu,%d,%s", mech_name[r->m], cpu_name[r->cpu],
               r->supported ? "ok" : "unsupported", c->page, c->unit, c->units, c->rounds, mech_rearm[r->m]);
        if (!r->supported) {
            printf(",,,,,,,,,\n");
            continue;
        }
        struct stat3 s[3] = { stats(r->fault, c->rounds), stats(r->rearm, c->rounds),
                              stats(r->bulk, c->rounds) };
        for (int j = 0; j < 3; j++)
            printf(",%.1f,%.1f,%.1f", s[j].med, s[j].min, s[j].max);
        printf("\n");
    }
}

/* ---- main ---------------------------------------------------------------- */

static void usage(void)
{
    printf(
"usage: " PROG " [options]\n"
"Cost per fault and per re-arm of the access-detection mechanisms a page-based\n"
"DSM can use, on a memfd-backed MAP_SHARED region:\n"
"  sigsegv-wp    PROT_READ, write per unit, SIGSEGV handler mprotects READ|WRITE\n"
"  uffd-wp       userfaultfd MODE_WP, write per unit, handler thread clears WP\n"
"  sigsegv-none  PROT_NONE, read per unit, SIGSEGV handler mprotects READ\n"
"  uffd-minor    userfaultfd MODE_MINOR on a zapped view, read per unit,\n"
"                handler thread UFFDIO_CONTINUE (page cache filled by a 2nd view)\n"
"Options:\n"
"  -n, --pages N      region size in pages (default 4096; at most %u)\n"
"  -u, --unit BYTES   protection unit, a multiple of the page (default the page;\n"
"                     suffix k/m); the region must be a whole number of units\n"
"  -r, --rounds R     rounds, mechanisms interleaved in rotating order (default 7)\n"
"  -m, --mech LIST    comma-separated mechanisms from the list above (default all)\n"
"      --same-cpu     uffd handler thread on the faulting thread's CPU\n"
"      --other-cpu    uffd handler thread on another CPU (default: both)\n"
"      --csv          CSV instead of the text table (notes go to stderr)\n"
"  -h, --help         this text\n"
"Reported per unit, median [min-max] over the rounds, in ns: the fault, the\n"
"re-arm with one call per unit, and the re-arm with one call over the region.\n"
"Exit: 0 all measured; 77 a requested mechanism is unsupported here (named on\n"
"stderr; the rest is still measured); 1 runtime error; 2 bad usage.\n", MAX_PAGES);
}

int main(int argc, char **argv)
{
    struct cfg c;
    memset(&c, 0, sizeof c);
    long ps = sysconf(_SC_PAGESIZE);
    c.page = ps > 0 ? (size_t)ps : 4096;
    c.npages = 4096;
    c.unit = c.page;
    c.rounds = 7;
    c.mechs = (1u << M_COUNT) - 1;
    c.cpu_b = -1;

    enum { O_SAME = 256, O_OTHER, O_CSV };
    static const struct option opts[] = {
        { "pages", required_argument, NULL, 'n' },  { "unit", required_argument, NULL, 'u' },
        { "rounds", required_argument, NULL, 'r' }, { "mech", required_argument, NULL, 'm' },
        { "same-cpu", no_argument, NULL, O_SAME },  { "other-cpu", no_argument, NULL, O_OTHER },
        { "csv", no_argument, NULL, O_CSV },        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0;
    int o;
    unsigned long long v;
    while ((o = getopt_long(argc, argv, ":n:u:r:m:h", opts, NULL)) != -1) {
        switch (o) {
        case 'n':
            if (parse_size(optarg, &v) || v < 1 || v > MAX_PAGES)
                usage_error("-n '%s': 1 to %u pages", optarg, MAX_PAGES);
            c.npages = (size_t)v;
            break;
        case 'u':
            if (parse_size(optarg, &v) || v < c.page || v % c.page || v > (unsigned long long)MAX_PAGES * c.page)
                usage_error("-u '%s': a multiple of the page size %zu bytes", optarg, c.page);
            c.unit = (size_t)v;
            break;
        case 'r':
            if (parse_size(optarg, &v) || v < 1 || v > MAX_ROUNDS)
                usage_error("--rounds '%s': 1 to %d", optarg, MAX_ROUNDS);
            c.rounds = (int)v;
            break;
        case 'm': {
            char buf[256];
            if (strlen(optarg) >= sizeof buf)
                usage_error("--mech: list too long");
            strcpy(buf, optarg);
            c.mechs = 0;
            char *save = NULL;
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int j;
                for (j = 0; j < M_COUNT && strcmp(t, mech_name[j]); j++)
                    ;
                if (j == M_COUNT)
                    usage_error("--mech '%s': sigsegv-wp, uffd-wp, sigsegv-none or uffd-minor", t);
                c.mechs |= 1u << j;
            }
            if (!c.mechs)
                usage_error("--mech: no mechanism in '%s'", optarg);
            break;
        }
        case O_SAME: c.want_same = 1; break;
        case O_OTHER: c.want_other = 1; break;
        case O_CSV: c.csv = 1; break;
        case 'h': usage(); return 0;
        case ':':
            usage_error("%s: needs an argument", argv[optind - 1]);
            break;
        default:
            if (optopt)
                usage_error("unknown option '-%c'", optopt);
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (!c.want_same && !c.want_other)
        c.want_same = c.want_other = 1;
    c.len = c.npages * c.page;
    if (c.unit > c.len || c.len % c.unit)
        usage_error("-u %zu: the region (%zu pages = %zu bytes) is not a whole number of units", c.unit,
                    c.npages, c.len);
    c.units = c.len / c.unit;

    /* CPUs: the faulter on the first of the mask, "other" on the second */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set)) {
        fprintf(stderr, PROG ": sched_getaffinity: %s\n", strerror(errno));
        return 1;
    }
    c.cpu_a = -1;
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (!CPU_ISSET(i, &set))
            continue;
        if (c.cpu_a < 0)
            c.cpu_a = i;
        else if (c.cpu_b < 0)
            c.cpu_b = i;
    }
    CPU_ZERO(&set);
    CPU_SET(c.cpu_a, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        fprintf(stderr, PROG ": pinning to CPU %d: %s\n", c.cpu_a, strerror(errno));
        return 1;
    }

    /* what the kernel offers */
    char uwhy[200] = "";
    uint64_t offered = 0;
    int have_uffd = 0;
    int fd = uffd_new(uwhy, sizeof uwhy);
    if (fd >= 0) {
        struct uffdio_api api = { .api = UFFD_API, .features = 0 };   /* answers all it offers */
        if (ioctl(fd, UFFDIO_API, &api) == 0) {
            offered = api.features;
            have_uffd = 1;
        } else {
            setf(uwhy, sizeof uwhy, "UFFDIO_API: %s", strerror(errno));
        }
        close(fd);
    }

    /* the rows */
    struct row rows[8];
    int nrows = 0;
    for (int m = 0; m < M_COUNT; m++) {
        if (!(c.mechs & (1u << m)))
            continue;
        enum cpu_mode modes[2];
        int nm = 0;
        if (!mech_uffd[m]) {
            modes[nm++] = CPU_NA;
        } else {
            if (c.want_same)
                modes[nm++] = CPU_SAME;
            if (c.want_other)
                modes[nm++] = CPU_OTHER;
        }
        for (int j = 0; j < nm; j++) {
            struct row *r = &rows[nrows++];
            memset(r, 0, sizeof *r);
            r->m = (enum mech)m;
            r->cpu = modes[j];
            r->supported = 1;
            if (mech_uffd[m] && !have_uffd) {
                r->supported = 0;
                setf(r->why, sizeof r->why, "no userfaultfd (%s)", uwhy);
            } else if (m == M_UFFD_WP && !(offered & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
                r->supported = 0;
                setf(r->why, sizeof r->why, "missing UFFD_FEATURE_PAGEFAULT_FLAG_WP");
            } else if (m == M_UFFD_WP && !(offered & UFFD_FEATURE_WP_HUGETLBFS_SHMEM)) {
                r->supported = 0;
                setf(r->why, sizeof r->why, "missing UFFD_FEATURE_WP_HUGETLBFS_SHMEM");
            } else if (m == M_UFFD_MINOR && !(offered & UFFD_FEATURE_MINOR_SHMEM)) {
                r->supported = 0;
                setf(r->why, sizeof r->why, "missing UFFD_FEATURE_MINOR_SHMEM");
            } else if (modes[j] == CPU_OTHER && c.cpu_b < 0) {
                r->supported = 0;
                setf(r->why, sizeof r->why, "--other-cpu needs a second CPU in the affinity mask");
            }
            if (r->supported) {
                r->fault = calloc((size_t)c.rounds, sizeof(double));
                r->rearm = calloc((size_t)c.rounds, sizeof(double));
                r->bulk = calloc((size_t)c.rounds, sizeof(double));
                if (!r->fault || !r->rearm || !r->bulk) {
                    fprintf(stderr, PROG ": out of memory\n");
                    for (int i = 0; i < nrows; i++) {
                        free(rows[i].fault);
                        free(rows[i].rearm);
                        free(rows[i].bulk);
                    }
                    return 1;
                }
            }
        }
    }

    /* the header */
    FILE *note = c.csv ? stderr : stdout;
    struct utsname un;
    char feat[600];
    if (uname(&un))
        strcpy(un.release, "?");
    features_string(feat, sizeof feat, offered);
    fprintf(note, "# " PROG ": %zu pages x %zu B, unit %zu B (%zu units), memfd MAP_SHARED, %d rounds\n",
            c.npages, c.page, c.unit, c.units, c.rounds);
    fprintf(note, "# Linux %s; faulter on CPU %d, other CPU %d\n", un.release, c.cpu_a, c.cpu_b);
    if (have_uffd)
        fprintf(note, "# uffd features offered (0x%llx): %s\n", (unsigned long long)offered, feat);
    else
        fprintf(note, "# userfaultfd not available: %s\n", uwhy);
    fprintf(note, "# uffd-wp on shmem: %s; WP_UNPOPULATED: %s; uffd-minor on shmem: %s\n",
            have_uffd && (offered & UFFD_FEATURE_PAGEFAULT_FLAG_WP) &&
                    (offered & UFFD_FEATURE_WP_HUGETLBFS_SHMEM) ? "yes" : "no",
            offered & UFFD_FEATURE_WP_UNPOPULATED ? "yes" : "no",
            offered & UFFD_FEATURE_MINOR_SHMEM ? "yes" : "no");
    fflush(note);

    /* the rounds, rotating the order */
    int rc = 0;
    char err[400] = "";
    for (int k = 0; k < c.rounds && rc == 0; k++)
        for (int i = 0; i < nrows && rc == 0; i++) {
            struct row *r = &rows[(k + i) % nrows];
            if (r->supported && run_row(&c, r, k, err, sizeof err))
                rc = 1;
        }

    if (rc) {
        fprintf(stderr, PROG ": %s\n", err);
    } else {
        if (c.csv)
            print_csv(&c, rows, nrows);
        else
            print_table(&c, rows, nrows);
        for (int i = 0; i < nrows; i++)
            if (!rows[i].supported) {
                fprintf(stderr, PROG ": %s (%s handler): unsupported: %s\n", mech_name[rows[i].m],
                        cpu_name[rows[i].cpu], rows[i].why);
                rc = EXIT_SKIP;
            }
    }
    for (int i = 0; i < nrows; i++) {
        free(rows[i].fault);
        free(rows[i].rearm);
        free(rows[i].bulk);
    }
    return rc;
}
