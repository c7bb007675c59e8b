/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* PARMACS on the DSM: one process per "thread", CREATE by replay of main
 * plus the creator's writable image (see include/corevia/parmacs.h for the
 * model). Every function here runs in application context: the ones that
 * read or write shared memory (GETSUB, PAUSE, the condition variables)
 * take DSM faults like application code, and hold no DSM-internal lock
 * while they do.
 *
 * Two things travel from rank 0 besides the DSM's own hand-off:
 * - stdin: rank 0's stdin goes through a pipe fed by a thread that keeps
 *   a record of every byte it passed on. At its j-th CREATE rank 0 sends
 *   what was recorded since the last one to the ranks still replaying
 *   (j and above; the part is rank j's last), and at MAIN_END to the ranks
 *   never created. A replaying rank reads stdin from a pipe that a thread
 *   of its own fills with those parts, closing it when rank 0's stdin has
 *   ended and all of it arrived; a read past what has arrived waits for
 *   rank 0's next CREATE, so the replay never reads past what rank 0's
 *   stdio had read at the same point and takes the same path through the
 *   input, while it runs alongside rank 0's serial part. At its own CREATE
 *   the rank puts /dev/null behind fd 0 and joins the thread, which has
 *   its last part by then.
 * - the image: at CREATE k rank 0 sends process k the writable part of the
 *   main executable (PT_LOAD segments with PF_W, less PT_GNU_RELRO: .data,
 *   .bss) and the list of its own mappings; process k lays it over its
 *   own, word by word, except where rank 0's word is an address inside
 *   one of rank 0's mappings (other than the shared region) and the
 *   replay left another value that is an address inside one of this
 *   rank's mappings (or NULL): such a word is a pointer to private memory
 *   that is not shipped (heap, stack, a library, the executable under
 *   address randomization), and the replayed one names the replayed
 *   object. The copies go word by word through volatile accesses in
 *   functions not instrumented by ASan: the segments hold ASan's global
 *   redzones, which memcpy would report. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <corevia/parmacs.h>
#include "dsm/dsm.h"

#define PM_TAG_STDIN 0x7fff0110   /* rank 0 -> replaying ranks: stdin since the last part */
#define PM_TAG_IMAGE 0x7fff0111   /* rank 0 -> created process: the writable image */
#define PM_TAG_REPLAYED 0x7fff0112 /* every rank -> all: my replay passed the first CREATE */
#define PM_MAX_RANGES 16
#define PM_FD_BASE    400         /* our own descriptors: above the program's */
#define PM_MAX_MAPS   4096

static int booted;
static int created;          /* processes started by CREATE (replayed or real) */
static int waited;           /* ... and waited for by WAIT_FOR_END */
static int proc = -1;        /* the process this rank is; -1: replaying */
static int saved_stdout = -1;
static int late_calls;       /* replaying: G_MALLOC/LOCKINIT calls past CREATE 1 */

/* stdin: rank 0's record, and a replaying rank's memfd */
static pthread_mutex_t in_mu = PTHREAD_MUTEX_INITIALIZER;
static char  *in_rec;
static size_t in_len, in_cap, in_sent;
static int    in_on;         /* rank 0 records (size > 1 at start-up) */
static int    in_eof;        /* rank 0: its stdin ended (all of it recorded) */
static pthread_t in_thr;     /* replaying rank: the thread filling fd 0 */
static int    in_thr_on;
__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "corevia parmacs (rank %d): ", dsm__g.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void check(int rc, const char *what)
{
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "corevia parmacs (rank %d): %s: %s\n", dsm__g.rank, what,
                cvia_strerror(rc));
        exit(1);
    }
}

/* A close-on-exec copy of @fd numbered PM_FD_BASE or above, so that the
 * descriptors the program opens get the same numbers on every rank as far
 * as ours are concerned (a descriptor kept in a global is a number, and
 * the created process receives rank 0's); @fd itself is closed unless it
 * is 0, 1 or 2. */
static int high_fd(int fd)
{
    int h = fcntl(fd, F_DUPFD_CLOEXEC, PM_FD_BASE);
    if (h < 0)
        h = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (h >= 0 && fd > 2)
        close(fd);
    return h;
}

static void stdin_start(void);
static void stdin_done(void);
static void stdin_send(int first_rank);

/* Start the DSM (MAIN_ENV's constructor, or MAIN_INITENV, or the first
 * G_MALLOC or LOCKINIT): on rank 0 the program runs; elsewhere it replays
 * main quietly until this rank's CREATE. */
void cvia_parmacs_boot(void)
{
    if (booted)
        return;
    booted = 1;
    check(dsm_init_common(NULL, NULL, 1), "starting the DSM");
    if (dsm__g.size > 1)
        stdin_start();
    if (dsm__g.rank == 0) {
        proc = 0;
        return;
    }
    fflush(stdout);
    saved_stdout = high_fd(1);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 1);
        close(null);
    }
}

void cvia_parmacs_init(void)
{
    cvia_parmacs_boot();
}

static void unmute(void)
{
    if (saved_stdout >= 0) {
        fflush(stdout);
        dup2(saved_stdout, 1);
        close(saved_stdout);
        saved_stdout = -1;
    }
}

void cvia_parmacs_main_end(void)
{
    cvia_parmacs_boot();
    if (proc < 0) {
        unmute();
        die("the program created %d processes; this rank (%d) was never one: run "
            "as many ranks as processes", created + 1, dsm__g.rank);
    }
    if (dsm__g.rank == 0)
        stdin_send(created + 1);   /* ranks still replaying are waiting for it */
    check(cvia_dsm_finalize(), "ending the DSM");
    exit(0);
}

/* Until the first CREATE every rank runs (or replays) the same main, so
 * G_MALLOC and LOCKINIT are collective calls that need no message. After
 * it they are "late" (dsm_alloc.c): a live process asks rank 0, and a rank
 * still replaying main asks rank 0 what rank 0's call returned. */
void *cvia_parmacs_malloc(size_t size, int home)
{
    void *p = NULL;
    uint32_t u0;

    cvia_parmacs_boot();
    if (!created) {
        check(cvia_dsm_alloc(size, home, &p), "G_MALLOC");
    } else if (proc >= 0) {
        check(dsm_alloc_late(size, home, &p), "G_MALLOC");
    } else {
        check(dsm_late_replay(late_calls++, &u0), "G_MALLOC");
        p = dsm__g.base + (size_t)u0 * dsm__g.unit;
    }
    return p;
}

/* G_MALLOC(size, proc): the memory of process proc holds it (its home);
 * proc -1 (the one-argument form) or out of range: the default placement. */
void *cvia_parmacs_malloc_on(size_t size, long p)
{
    cvia_parmacs_boot();
    return cvia_parmacs_malloc(size, p >= 0 && p < dsm__g.size ? (int)p : CVIA_DSM_HOME_DEFAULT);
}

/* @n locks with consecutive ids; the first one's id. */
static int make_locks(int n, const char *what)
{
    int id = -1, first = -1;
    uint32_t v;

    cvia_parmacs_boot();
    if (!created) {
        for (int i = 0; i < n; i++) {
            check(cvia_dsm_lock_create(&id), what);
            if (i == 0)
                first = id;
        }
    } else if (proc >= 0) {
        check(dsm_lock_create_late(n, &first), what);
    } else {
        check(dsm_late_replay(late_calls++, &v), what);
        first = (int)v;
    }
    return first;
}

void cvia_parmacs_lock_init(cvia_parmacs_lock_t *l)
{
    l->id = make_locks(1, "LOCKINIT");
}

/* ALOCKINIT(a, n): a[0..n-1] become n locks (one request for all). */
void cvia_parmacs_alock_init(cvia_parmacs_lock_t *a, long n)
{
    if (n <= 0 || n > INT32_MAX)
        die("ALOCKINIT of %ld locks: want 1 or more", n);
    int first = make_locks((int)n, "ALOCKINIT");
    for (long i = 0; i < n; i++)
        a[i].id = first + (int)i;
}

void cvia_parmacs_lock(int id)
{
    check(cvia_dsm_lock(id), "LOCK");
}

void cvia_parmacs_unlock(int id)
{
    check(cvia_dsm_unlock(id), "UNLOCK");
}

void cvia_parmacs_barrier(int n)
{
    if (proc >= 0 && n != dsm__g.size)
        die("BARRIER for %d processes in a job of %d ranks: every rank must be a "
            "process that takes part", n, dsm__g.size);
    check(cvia_dsm_barrier(), "BARRIER");
}

void cvia_parmacs_gs_init(cvia_parmacs_gs_t *g)
{
    cvia_parmacs_lock_init(&g->lock);
    g->sub = 0;
    g->count = 0;
}

int cvia_parmacs_getsub(cvia_parmacs_gs_t *g, int last, int nprocs)
{
    int s, id = g->lock.id;

    cvia_parmacs_lock(id);
    if (g->sub <= last) {
        s = g->sub++;
    } else {
        s = -1;
        if (++g->count == nprocs)
            g->sub = g->count = 0;
    }
    cvia_parmacs_unlock(id);
    return s;
}

void cvia_parmacs_pause_init(cvia_parmacs_pause_t *p)
{
    cvia_parmacs_lock_init(&p->lock);
    p->flag = 0;
}

void cvia_parmacs_pause_set(cvia_parmacs_pause_t *p, int v)
{
    int id = p->lock.id;
    cvia_parmacs_lock(id);
    p->flag = v;
    cvia_parmacs_unlock(id);
}

/* Sleep between polls of a shared word: 10 us doubling to 1 ms. */
static void nap(long *ns)
{
    struct timespec ts = { 0, *ns };
    nanosleep(&ts, NULL);
    if (*ns < 1000000)
        *ns *= 2;
}

void cvia_parmacs_pause_wait(cvia_parmacs_pause_t *p)
{
    int id = p->lock.id;
    long ns = 10000;

    for (;;) {
        int f;
        cvia_parmacs_lock(id);
        f = p->flag;
        cvia_parmacs_unlock(id);
        if (f)
            return;
        nap(&ns);
    }
}

/* Condition variables: a waiter takes a ticket under the variable's own
 * lock before it lets go of the caller's, so no signal can fall between
 * the two; a signal grants the oldest ticket still waiting, a broadcast
 * every ticket taken. */
void cvia_parmacs_cond_init(cvia_parmacs_cond_t *c)
{
    cvia_parmacs_lock_init(&c->lock);
    c->tickets = 0;
    c->granted = 0;
}

void cvia_parmacs_cond_wait(cvia_parmacs_cond_t *c, cvia_parmacs_lock_t *l)
{
    int id = c->lock.id, t, g;
    long ns = 10000;

    cvia_parmacs_lock(id);
    t = c->tickets++;
    cvia_parmacs_unlock(id);
    cvia_parmacs_unlock(l->id);
    for (;;) {
        cvia_parmacs_lock(id);
        g = c->granted;
        cvia_parmacs_unlock(id);
        if (g > t)
            break;
        nap(&ns);
    }
    cvia_parmacs_lock(l->id);
}

void cvia_parmacs_cond_signal(cvia_parmacs_cond_t *c, int all)
{
    int id = c->lock.id;

    cvia_parmacs_lock(id);
    if (all)
        c->granted = c->tickets;
    else if (c->granted < c->tickets)
        c->granted++;
    cvia_parmacs_unlock(id);
}

/* ---- stdin ------------------------------------------------------------------ */

static int in_pipe_w = -1, in_orig = -1;

#define PM_IN_LAST 1u   /* the last part for this rank */
#define PM_IN_EOF  2u   /* rank 0's stdin ended: nothing follows */

struct pm_part { uint64_t n; uint32_t flags, pad; };

/* 0, or -1 when nobody reads any more (the program closed its stdin). */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Rank 0: pass stdin on to the program, recording every byte first. */
static void *stdin_tee(void *arg)
{
    char buf[65536];

    (void)arg;
    for (;;) {
        ssize_t r = read(in_orig, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        pthread_mutex_lock(&in_mu);
        if (in_len + (size_t)r > in_cap) {
            size_t cap = in_cap ? in_cap : 65536;
            while (cap < in_len + (size_t)r)
                cap *= 2;
            char *p = realloc(in_rec, cap);
            if (!p) {
                pthread_mutex_unlock(&in_mu);
                fprintf(stderr, "corevia parmacs (rank 0): out of memory recording stdin\n");
                _exit(1);
            }
            in_rec = p;
            in_cap = cap;
        }
        memcpy(in_rec + in_len, buf, (size_t)r);
        in_len += (size_t)r;
        pthread_mutex_unlock(&in_mu);
        if (write_all(in_pipe_w, buf, (size_t)r))
            break;   /* the program closed its stdin */
    }
    pthread_mutex_lock(&in_mu);
    in_eof = 1;
    pthread_mutex_unlock(&in_mu);
    close(in_pipe_w);
    close(in_orig);
    return NULL;
}

/* A replaying rank: rank 0's parts into our stdin pipe, until our last. */
static void *stdin_fill(void *arg)
{
    sigset_t pipe_sig;
    int open_w = 1;

    (void)arg;
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);   /* a closed reader: EPIPE */
    for (;;) {
        struct pm_part h;
        char *part = NULL;
        check(cvia_recv(&h, sizeof(h), 0, PM_TAG_STDIN, NULL), "receiving stdin");
        if (h.n) {
            if (!(part = malloc(h.n)))
                die("stdin: out of memory for %llu bytes", (unsigned long long)h.n);
            check(cvia_recv(part, h.n, 0, PM_TAG_STDIN, NULL), "receiving stdin");
            if (open_w && write_all(in_pipe_w, part, h.n))
                open_w = 0;
            free(part);
        }
        if (open_w && (h.flags & (PM_IN_EOF | PM_IN_LAST))) {
            close(in_pipe_w);   /* the replay reads the end where rank 0 did */
            open_w = 0;
        }
        if (h.flags & PM_IN_LAST)
            return NULL;
    }
}

static void stdin_start(void)
{
    int fds[2];
    pthread_t t;

    if (dsm__g.rank != 0) {
        if (pipe2(fds, O_CLOEXEC) || dup2(fds[0], 0) < 0)
            die("stdin: cannot make its pipe: %s", strerror(errno));
        close(fds[0]);
        fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);   /* fewer waits; best effort */
        in_pipe_w = high_fd(fds[1]);
        if (pthread_create(&in_thr, NULL, stdin_fill, NULL))
            die("stdin: cannot start its thread");
        in_thr_on = 1;
        return;
    }
    in_orig = high_fd(0);
    if (in_orig < 0)
        return;   /* no stdin at all: the parts are empty and say so */
    if (pipe2(fds, O_CLOEXEC) || dup2(fds[0], 0) < 0)
        die("stdin: cannot make its pipe: %s", strerror(errno));
    close(fds[0]);
    in_pipe_w = high_fd(fds[1]);
    in_on = 1;
    if (pthread_create(&t, NULL, stdin_tee, NULL))
        die("stdin: cannot start its thread");
    pthread_detach(t);
}

/* Rank 0: what stdin delivered since the last part, to ranks @first_rank
 * and above (the ones replaying beyond this point); the part is the last
 * for @first_rank, and for all of them at MAIN_END (@first_rank past the
 * processes created). */
static void stdin_send(int first_rank)
{
    struct dsm *d = &dsm__g;
    struct pm_part h = { 0, 0, 0 };
    char *part = NULL;

    if (first_rank >= d->size)
        return;
    if (in_on) {
        pthread_mutex_lock(&in_mu);
        h.n = in_len - in_sent;
        if (h.n && !(part = malloc(h.n)))
            die("stdin: out of memory");
        if (h.n)
            memcpy(part, in_rec + in_sent, h.n);
        in_sent = in_len;
        if (in_eof)
            h.flags |= PM_IN_EOF;
        pthread_mutex_unlock(&in_mu);
    } else {
        h.flags |= PM_IN_EOF;
    }
    for (int r = first_rank; r < d->size; r++) {
        struct pm_part hr = h;
        if (r == first_rank || first_rank > created)
            hr.flags |= PM_IN_LAST;
        check(cvia_send(&hr, sizeof(hr), r, PM_TAG_STDIN), "sending stdin");
        if (h.n)
            check(cvia_send(part, h.n, r, PM_TAG_STDIN), "sending stdin");
    }
    free(part);
}

/* A replaying rank at its own CREATE: a created process reads no stdin;
 * the thread has (or is about to have) its last part. */
static void stdin_done(void)
{
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

    if (null >= 0) {
        dup2(null, 0);   /* closes the pipe: a blocked writer gets EPIPE */
        close(null);
    }
    if (in_thr_on) {
        pthread_join(in_thr, NULL);
        in_thr_on = 0;
    }
}

/* ---- the creator's image ------------------------------------------------------ */

struct pm_range { uint64_t off, len; };          /* from the executable's load address */
struct pm_map   { uint64_t lo, hi; };
struct pm_head  { uint64_t base, nranges, nmaps, bytes, brk, locks; };

struct pm_exe {
    uintptr_t base;
    int n;
    struct pm_range r[PM_MAX_RANGES];
};

static int exe_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
    struct pm_exe *e = arg;
    uintptr_t relro_lo = 0, relro_hi = 0;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);

    (void)sz;
    e->base = (uintptr_t)info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) {
            relro_lo = ph->p_vaddr;
            relro_hi = (ph->p_vaddr + ph->p_memsz) & ~(pg - 1);   /* as ld.so protects it */
        }
    }
    for (int i = 0; i < info->dlpi_phnum && e->n < PM_MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = ph->p_vaddr, hi = ph->p_vaddr + ph->p_memsz;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || hi <= lo)
            continue;
        if (relro_hi > relro_lo && lo < relro_hi && hi > relro_lo)
            lo = relro_hi > lo ? relro_hi : lo;   /* the part after RELRO */
        if (hi > lo)
            e->r[e->n++] = (struct pm_range){ lo, hi - lo };
    }
    return 1;   /* the first object is the main program */
}

static void exe_ranges(struct pm_exe *e)
{
    memset(e, 0, sizeof(*e));
    dl_iterate_phdr(exe_cb, e);
}

/* Rank 0's mappings other than the shared region that a pointer can
 * name: an address in one of them is private to rank 0. Left out, besides
 * the region: inaccessible mappings (guard pages, reservations) and those
 * of 1 TiB or more (sanitizer shadow memory, which would make every
 * number from 2^31 to 2^44, a clock in microseconds say, look like an
 * address). Sorted, as /proc lists them. */
static size_t own_maps(struct pm_map *m, size_t cap)
{
    struct dsm *d = &dsm__g;
    uintptr_t rlo = (uintptr_t)d->base, rhi = rlo + d->region;
    FILE *f = fopen("/proc/self/maps", "r");
    size_t n = 0;
    unsigned long lo, hi;
    char line[512], perm[8];

    if (!f)
        die("CREATE: cannot read /proc/self/maps: %s", strerror(errno));
    while (n < cap && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3)
            continue;
        if ((lo >= rlo && hi <= rhi) || !strncmp(perm, "---", 3) || hi - lo >= (1ul << 40))
            continue;
        m[n++] = (struct pm_map){ lo, hi };
    }
    fclose(f);
    return n;
}

static int in_maps(const struct pm_map *m, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v < m[mid].lo)
            hi = mid;
        else if (v >= m[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

/* Copies over global redzones: no ASan checks, no memcpy (intercepted). */
__attribute__((no_sanitize_address, no_sanitize("thread"), noinline))
static void image_save(char *dst, uintptr_t src, size_t len)
{
    volatile const unsigned char *s = (volatile const unsigned char *)src;
    for (size_t i = 0; i < len; i++)
        dst[i] = (char)s[i];
}

__attribute__((no_sanitize_address, no_sanitize("thread"), noinline))
static void image_lay(uintptr_t dst, const char *src, size_t len, const struct pm_map *m,
                      size_t nm, const struct pm_map *mine, size_t nmine)
{
    volatile unsigned char *d = (volatile unsigned char *)dst;
    size_t i = 0;

    for (; i < len && ((dst + i) & 7); i++)
        d[i] = (unsigned char)src[i];
    for (; i + 8 <= len; i += 8) {
        volatile uint64_t *w = (volatile uint64_t *)(dst + i);
        uint64_t theirs, here = *w;
        memcpy(&theirs, src + i, 8);
        if (theirs != here && !(in_maps(m, nm, theirs) && (!here || in_maps(mine, nmine, here))))
            *w = theirs;
    }
    for (; i < len; i++)
        d[i] = (unsigned char)src[i];
}

/* Rank 0, at CREATE @k: the image as it is now, to process k. */
static void image_send(int k)
{
    struct pm_exe e;
    struct pm_head h;
    size_t nm, off;
    struct pm_map *m = malloc(PM_MAX_MAPS * sizeof(*m));
    char *buf;

    if (!m)
        die("CREATE: out of memory");
    exe_ranges(&e);
    nm = own_maps(m, PM_MAX_MAPS);
    h = (struct pm_head){ e.base, (uint64_t)e.n, nm, 0, dsm__g.brk, (uint64_t)dsm__g.next_lock };
    for (int i = 0; i < e.n; i++)
        h.bytes += e.r[i].len;
    size_t total = sizeof(e.r[0]) * (size_t)e.n + sizeof(*m) * nm + h.bytes;
    if (!(buf = malloc(total ? total : 1)))
        die("CREATE: out of memory for the %zu-byte image", total);
    memcpy(buf, e.r, sizeof(e.r[0]) * (size_t)e.n);
    off = sizeof(e.r[0]) * (size_t)e.n;
    memcpy(buf + off, m, sizeof(*m) * nm);
    off += sizeof(*m) * nm;
    for (int i = 0; i < e.n; i++) {
        image_save(buf + off, e.base + e.r[i].off, e.r[i].len);
        off += e.r[i].len;
    }
    check(cvia_send(&h, sizeof(h), k, PM_TAG_IMAGE), "CREATE: sending the image");
    check(cvia_send(buf, total, k, PM_TAG_IMAGE), "CREATE: sending the image");
    free(buf);
    free(m);
}

/* Process k: rank 0's image over ours. */
static void image_take(void)
{
    struct pm_exe e;
    struct pm_head h;
    char *buf;

    check(cvia_recv(&h, sizeof(h), 0, PM_TAG_IMAGE, NULL), "CREATE: receiving the image");
    exe_ranges(&e);
    size_t total = sizeof(e.r[0]) * h.nranges + sizeof(struct pm_map) * h.nmaps + h.bytes;
    if (!(buf = malloc(total ? total : 1)))
        die("CREATE: out of memory for the %zu-byte image", total);
    check(cvia_recv(buf, total, 0, PM_TAG_IMAGE, NULL), "CREATE: receiving the image");
    const struct pm_range *r = (const struct pm_range *)buf;
    const struct pm_map *m = (const struct pm_map *)(buf + sizeof(*r) * h.nranges);
    const char *p = buf + sizeof(*r) * h.nranges + sizeof(*m) * h.nmaps;
    struct pm_map *mine = malloc(PM_MAX_MAPS * sizeof(*mine));
    size_t nmine;

    if (!mine)
        die("CREATE: out of memory");
    nmine = own_maps(mine, PM_MAX_MAPS);
    if (h.nranges != (uint64_t)e.n || memcmp(r, e.r, sizeof(*r) * (size_t)e.n))
        die("CREATE: rank 0 runs another executable than rank %d (its writable "
            "segments differ)", dsm__g.rank);
    if (h.brk != dsm__g.brk || h.locks != (uint64_t)dsm__g.next_lock)
        die("CREATE: before the first CREATE rank 0 allocated %llu bytes and %llu locks, "
            "this rank's replay %zu and %d: the serial part of main allocated shared "
            "memory or locks by the clock, the pid or random numbers",
            (unsigned long long)h.brk, (unsigned long long)h.locks, dsm__g.brk,
            dsm__g.next_lock);
    for (int i = 0; i < e.n; i++) {
        image_lay(e.base + e.r[i].off, p, e.r[i].len, m, h.nmaps, mine, nmine);
        p += e.r[i].len;
    }
    free(mine);
    free(buf);
}

/* ---- CREATE and WAIT_FOR_END ------------------------------------------------------ */

/* What every rank did before the first CREATE (its shared allocations and
 * locks, the homes they name) must be done on every rank before any
 * process touches shared memory: a replay runs alongside rank 0 and may be
 * slower than the process it serves, whose home is one of its units. Each
 * rank says so once, at the first CREATE, and each process (rank 0 after
 * the first CREATE, a created one before its function) waits for all. */
static void replayed_say(void)
{
    struct dsm *d = &dsm__g;
    char tok = 1;

    for (int r = 0; r < d->size; r++)
        if (r != d->rank)
            check(cvia_send(&tok, 1, r, PM_TAG_REPLAYED), "CREATE: telling the replay's end");
}

static void replayed_wait(void)
{
    static int done;
    struct dsm *d = &dsm__g;
    char tok;

    if (done)
        return;
    done = 1;
    for (int r = 0; r < d->size; r++)
        if (r != d->rank)
            check(cvia_recv(&tok, 1, r, PM_TAG_REPLAYED, NULL),
                  "CREATE: waiting for the replays to reach the first CREATE");
}

void cvia_parmacs_create(void (*fn)(void))
{
    struct dsm *d = &dsm__g;
    int k;

    cvia_parmacs_boot();
    k = ++created;
    if (k >= d->size)
        die("CREATE of process %d in a job of %d ranks: run one rank per process",
            k, d->size);
    if (k == 1)
        replayed_say();
    if (d->rank == 0) {
        stdin_send(k);   /* for process k's replay and the ones after it */
        check(dsm_create_send(k), "CREATE");
        image_send(k);
        replayed_wait();
        return;
    }
    if (d->rank != k)
        return;          /* still replaying towards our own CREATE */
    unmute();
    stdin_done();
    proc = k;
    check(dsm_become(k), "CREATE");
    image_take();
    replayed_wait();
    fn();
    /* the "thread" returned: release to rank 0 (WAIT_FOR_END), then keep
     * serving this rank's home units until the job ends */
    dsm_end_send();
    check(cvia_dsm_finalize(), "ending the DSM");
    exit(0);
}

/* CREATE(fn): @n 0. CREATE(fn, n): n - 1 processes, then fn here. */
void cvia_parmacs_create_n(void (*fn)(void), long n)
{
    if (n == 0) {
        cvia_parmacs_create(fn);
        return;
    }
    if (n < 0)
        die("CREATE(fn, %ld): the number of processes must be 1 or more", n);
    for (long i = 1; i < n; i++)
        cvia_parmacs_create(fn);
    fn();
}

void cvia_parmacs_wait_for_end(long n)
{
    cvia_parmacs_boot();
    if (proc != 0)
        die("WAIT_FOR_END on rank %d, which was never created (the program "
            "created %d processes)", dsm__g.rank, created + 1);
    if (n < 0)
        die("WAIT_FOR_END(%ld): a negative count", n);
    while (n-- > 0 && waited < created) {
        dsm_wait_end();
        waited++;
    }
}

int cvia_parmacs_nprocs(void)
{
    cvia_parmacs_boot();
    return dsm__g.size;
}

int cvia_parmacs_me(void)
{
    return proc < 0 ? 0 : proc;   /* replaying: running process 0's main */
}
