/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The rendezvous threshold, measured on this machine (issue 17).
 *
 * Below the threshold a message is pipelined through the ring: the sender
 * copies slot k+1 in while the receiver copies slot k out, two copies that
 * overlap on two cores. From it the receiver pulls the sender's buffer in
 * one Cross Memory Attach call: one copy, plus the kernel's page pinning
 * and a system call. Which wins at a size depends on the machine (caches,
 * the cost of pinning in a VM), so the provider measures both, the way
 * they run: two threads of this process on two CPUs, one producing into a
 * ring of the endpoint's geometry (util/ring.h), the other copying out,
 * against the same hand-off followed by process_vm_readv (from the
 * cooperative threshold on, both threads copying chunks by CMA, the
 * sender pushing and the receiver pulling, as CVIA_SHM_COPY=auto does).
 * The threshold is
 * the smallest size (16 KiB to 512 KiB, powers of two) at which, and at
 * every larger measured size, single copy was no slower (else 512 KiB), each the fastest of interleaved
 * transfers (the figure of two threads that both ran: a loaded machine only
 * makes some slower).
 *
 * The result is cached per boot in $XDG_RUNTIME_DIR/corevia-shm-tune (mode
 * 0600, this user's only; /run/user/UID when the variable is unset, and
 * /dev/shm/corevia-shm-tune-UID without a private runtime directory), keyed
 * by the boot id and the slot geometry; a file lock makes one rank of a job
 * measure while the others wait for its answer. A file that is not this
 * user's private regular file is not used (every process then measures,
 * about 30 ms). Sanitizer builds keep theirs apart (corevia-shm-tune-asan,
 * -tsan). CVIA_SHM_RNDV_THRESHOLD set to a size skips all of this.
 *
 * A probe is validated before it is cached (issue 16: one taken under
 * load chose a bad threshold that every later job of the boot used): it
 * measures twice, and the two must choose the same threshold, on a machine
 * that was quiet meanwhile (shm_probe_load: /proc/stat's steal, and the
 * CPU time of everything but this process, over the probe). A rejected
 * probe leaves the default (32k) and says so in the file for
 * SHM_PROBE_RETRY_S, after which the next start measures again; an
 * accepted one is used for SHM_PROBE_MAX_AGE_S; CVIA_SHM_REPROBE=y
 * measures again at once and rewrites the file. */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "prov/shm/shm.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/param.h"
#include "util/ring.h"

#define TUNE_MIN      4096u
#define TUNE_NSIZES   9           /* 4 KiB .. 1 MiB */
#define TUNE_CAP      (512u << 10)  /* the largest threshold chosen */
#define TUNE_FLOOR    (16u << 10)   /* the smallest threshold chosen (below) */
#define TUNE_ROUNDS   7
#define TUNE_BUDGET_S 5.0         /* the whole probe; past it: no answer */
#define TUNE_SIZE_S   0.02        /* per size, once 3 pairs are in */
#define TUNE_WAIT_MS  25000       /* for another rank's probe: two budgets and some */
#define TUNE_FORMAT   "corevia-shm-tune 4"   /* 3: the 16 KiB floor; 4: validated, dated */

/* A sanitizer's build copies at its own speed: its answer goes to a file
 * of its own, so its figures never become a plain build's. */
#if defined(__SANITIZE_ADDRESS__)
#define TUNE_FLAVOUR "-asan"
#elif defined(__SANITIZE_THREAD__)
#define TUNE_FLAVOUR "-tsan"
#else
#define TUNE_FLAVOUR ""
#endif

static const struct cvia_param thr_param = {
    "RNDV_THRESHOLD", "32k", CVIA_PARAM_SIZE, 0, "", 0, 0, NULL
};

int shm_tune_parse(const char *text, size_t *threshold, int *is_auto)
{
    *is_auto = !strcmp(text, "auto");
    if (*is_auto)
        return 0;
    return cvia__param_parse(&thr_param, text, threshold);
}

enum { CMD_RING = 1, CMD_CMA = 2, CMD_COOP = 3, CMD_STOP = 4 };

struct tune {
    struct cvia_ring ring;
    unsigned char *src, *dst;
    size_t payload;               /* bytes per slot after the header word */
    double deadline;
    _Alignas(64) _Atomic uint64_t cmd;   /* consumer -> producer: seq << 8 | kind */
    _Atomic uint64_t size;
    _Alignas(64) _Atomic uint64_t rts;   /* producer -> consumer (CMA): seq */
    size_t chunk;                        /* COOP: bytes per claimed chunk */
    _Alignas(64) _Atomic uint64_t next;  /* COOP: next chunk to claim */
    _Atomic uint64_t done;               /* COOP: bytes copied, both threads */
    _Alignas(64) uint64_t prod_pos;      /* producer's private position */
    _Alignas(64) _Atomic int failed;
};

static int late(struct tune *t, unsigned *spins)
{
    if (++*spins & 0xffff)
        return atomic_load_explicit(&t->failed, memory_order_relaxed);
    if (cvia__clock_s() > t->deadline)
        atomic_store_explicit(&t->failed, 1, memory_order_relaxed);
    return atomic_load_explicit(&t->failed, memory_order_relaxed);
}

/* Claim chunks and copy them by Cross Memory Attach, as a cooperative
 * rendezvous does: the receiver pulls (@pull), the sender pushes. */
static void coop_copy(struct tune *t, int pull)
{
    size_t len = (size_t)atomic_load_explicit(&t->size, memory_order_relaxed);
    size_t chunk = t->chunk ? t->chunk : (size_t)shm_half_chunk(len);
    uint64_t nchunks = (len + chunk - 1) / chunk, k;

    while ((k = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed)) < nchunks) {
        size_t off = (size_t)k * chunk, n = len - off < chunk ? len - off : chunk;
        struct iovec l = { (pull ? t->dst : t->src) + off, n };
        struct iovec r = { (pull ? t->src : t->dst) + off, n };
        if ((pull ? process_vm_readv(getpid(), &l, 1, &r, 1, 0)
                  : process_vm_writev(getpid(), &l, 1, &r, 1, 0)) != (ssize_t)n)
            atomic_store_explicit(&t->failed, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->done, n, memory_order_release);
    }
}

/* The sender's side: what a send does for each command. */
static void *tune_producer(void *arg)
{
    struct tune *t = arg;
    uint64_t seen = 0;
    unsigned spins = 0;

    for (;;) {
        uint64_t c;
        while ((c = atomic_load_explicit(&t->cmd, memory_order_acquire)) == seen)
            if (late(t, &spins))
                return NULL;
        seen = c;
        if ((c & 0xff) == CMD_STOP)
            return NULL;
        if ((c & 0xff) == CMD_CMA || (c & 0xff) == CMD_COOP) {
            atomic_store_explicit(&t->rts, c >> 8, memory_order_release);
            if ((c & 0xff) == CMD_COOP)   /* the sender joins in, pushing */
                coop_copy(t, 0);
            continue;
        }
        size_t len = (size_t)atomic_load_explicit(&t->size, memory_order_relaxed), off = 0;
        while (off < len) {
            unsigned char *s;
            while (!(s = cvia_ring_claim(&t->ring, t->prod_pos)))
                if (late(t, &spins))
                    return NULL;
            size_t n = len - off < t->payload ? len - off : t->payload;
            memcpy(s + SHM_SLOT_HDR, t->src + off, n);
            cvia_ring_publish(s, t->prod_pos++);
            off += n;
        }
    }
}

/* One transfer of @len bytes by @kind, as the receiver sees it. -1: late. */
static double tune_once(struct tune *t, int kind, size_t len, uint64_t seq,
                        uint64_t *cons_pos)
{
    unsigned spins = 0;
    double t0 = cvia__clock_s();

    atomic_store_explicit(&t->size, len, memory_order_relaxed);
    atomic_store_explicit(&t->next, 0, memory_order_relaxed);
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    atomic_store_explicit(&t->cmd, seq << 8 | (uint64_t)kind, memory_order_release);
    if (kind == CMD_COOP) {
        while (atomic_load_explicit(&t->rts, memory_order_acquire) != seq)
            if (late(t, &spins))
                return -1;
        coop_copy(t, 1);
        while (atomic_load_explicit(&t->done, memory_order_acquire) != len)
            if (late(t, &spins))
                return -1;
    } else if (kind == CMD_CMA) {
        struct iovec l = { t->dst, len }, r = { t->src, len };
        while (atomic_load_explicit(&t->rts, memory_order_acquire) != seq)
            if (late(t, &spins))
                return -1;
        if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)len)
            return -1;
    } else {
        for (size_t off = 0; off < len;) {
            unsigned char *s;
            while (!(s = cvia_ring_peek(&t->ring, *cons_pos)))
                if (late(t, &spins))
                    return -1;
            size_t n = len - off < t->payload ? len - off : t->payload;
            memcpy(t->dst + off, s + SHM_SLOT_HDR, n);
            cvia_ring_release(&t->ring, s, (*cons_pos)++);
            off += n;
        }
    }
    return cvia__clock_s() - t0;
}

/* Measure: ring[i], cma[i] in seconds for size TUNE_MIN << i. 0 or -errno. */
static int tune_measure(uint32_t nslots, uint32_t slot_size, size_t coop_from,
                        size_t coop_chunk, double *ring, double *cma)
{
    const size_t max = (size_t)TUNE_MIN << (TUNE_NSIZES - 1);
    struct tune *t;
    pthread_t th;
    int me = sched_getcpu(), ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), rc = 0;
    uint64_t seq = 0, cons_pos = 0;

    if (ncpu < 2 || me < 0)
        return -ENOTSUP;   /* one CPU: the pipeline would not overlap */
    if (posix_memalign((void **)&t, 64, sizeof(*t)))
        return -ENOMEM;
    memset(t, 0, sizeof(*t));
    cvia_ring_layout(&t->ring, NULL, nslots, slot_size);
    t->payload = slot_size - SHM_SLOT_HDR;
    t->chunk = coop_chunk;
    if (posix_memalign((void **)&t->ring.base, 4096, cvia_ring_bytes(nslots, slot_size)) ||
        !(t->src = malloc(max)) || !(t->dst = malloc(max))) {
        rc = -ENOMEM;
        goto out;
    }
    memset(t->src, 0x5a, max);
    memset(t->dst, 0, max);
    cvia_ring_init(&t->ring);
    t->deadline = cvia__clock_s() + TUNE_BUDGET_S;
    /* the producer on any other CPU: the sender's rank runs on another */
    if ((rc = shm_probe_thread(&th, me, ncpu, tune_producer, t)))
        goto out;
    for (int i = 0; i < TUNE_NSIZES && !rc; i++) {
        size_t len = (size_t)TUNE_MIN << i;
        /* 21 to 112 pairs: the largest sizes need as many tries as the
         * small ones to catch one that both threads ran through */
        int per = len >= (64u << 10) ? 3 : (int)((256u << 10) / len);
        double r = 1e9, c = 1e9, d;
        if (per > 16)
            per = 16;
        /* every transfer timed on its own, the fastest kept: a round the
         * scheduler cut into says nothing about the copy */
        double t0 = cvia__clock_s();
        /* interleaved; on a busy machine, what 20 ms gave (3 pairs at least) */
        for (int k = 0; k < TUNE_ROUNDS * per && !rc &&
                        (k < 3 || cvia__clock_s() - t0 < TUNE_SIZE_S); k++) {
            if ((d = tune_once(t, CMD_RING, len, ++seq, &cons_pos)) < 0)
                rc = -ETIMEDOUT;
            else if (d < r)
                r = d;
            if (!rc && (d = tune_once(t, len >= coop_from ? CMD_COOP : CMD_CMA, len, ++seq,
                                      &cons_pos)) < 0)
                rc = -ETIMEDOUT;
            else if (!rc && d < c)
                c = d;
        }
        ring[i] = r;
        cma[i] = c;
    }
    if (atomic_load(&t->failed))
        rc = -ETIMEDOUT;
    atomic_store_explicit(&t->failed, 1, memory_order_relaxed);   /* producer: stop */
    atomic_store_explicit(&t->cmd, (seq + 1) << 8 | CMD_STOP, memory_order_release);
    pthread_join(th, NULL);
out:
    free(t->src);
    free(t->dst);
    free(t->ring.base);
    free(t);
    return rc;
}

/* The smallest size from which single copy won at every size measured
 * above it too: a stray figure (a ring transfer the scheduler interrupted,
 * which made one recorded probe choose 16k where the ring won at every
 * larger size) cannot start single copy, only a run of wins to the top.
 * At most TUNE_CAP: the ring is for
 * medium messages; above, single copy (cooperative from 512k) keeps the
 * bandwidth of two cores and the ring's gain, where there is one, is
 * small, while a ring slowed by a busy or reshuffled machine (a VM's
 * vCPUs moved apart) costs several times over (BENCHMARKS.md, issue 17). */
static size_t tune_decide(const double *ring, const double *cma)
{
    int from = TUNE_NSIZES;

    while (from > 0 && cma[from - 1] <= ring[from - 1])
        from--;
    /* Never below 16 KiB (one default slot): a process_vm_readv costs a
     * system call and the pinning of the pages whatever its length, about
     * 2 us here, and a window of small messages has one call each where the
     * ring pipelines them. When the probe's threads share a CPU with other
     * work, its ring figures at 4-8 KiB are time-slicing, not the ring: on
     * the 2-vCPU KVM guest (2026-11-26, load 5) the probe measured the ring
     * at 2.27 us for 4 KiB and CMA at 2.05 and chose 4 KiB, while two ranks
     * measured in the same minutes 4 KiB p50 0.68-0.94 us through the ring
     * against 2.17-2.41 us by CMA, and 4 KiB bandwidth 2.3-5.6 GB/s against
     * 0.9-1.7 (BENCHMARKS.md, "The merged tree, sixth session"). */
    if (from < TUNE_NSIZES && ((size_t)TUNE_MIN << from) < TUNE_CAP)
        return (size_t)TUNE_MIN << from < TUNE_FLOOR ? TUNE_FLOOR : (size_t)TUNE_MIN << from;
    return TUNE_CAP;
}

int shm_probe_thread(pthread_t *th, int me, int ncpu, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    cpu_set_t other;
    int rc;

    CPU_ZERO(&other);
    for (int c = 0; c < ncpu && c < CPU_SETSIZE; c++)
        if (c != me)
            CPU_SET(c, &other);
    pthread_attr_init(&attr);
    pthread_attr_setaffinity_np(&attr, sizeof(other), &other);
    rc = pthread_create(th, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return -rc;
}

/* /proc/stat's first line: all CPUs' jiffies in all, idle (with iowait),
 * stolen by the hypervisor. 0, or -1 where it cannot be read. */
static int stat_cpu(unsigned long long *total, unsigned long long *idle,
                    unsigned long long *steal)
{
    unsigned long long v[8] = { 0 };
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7]) : 0;

    if (f)
        fclose(f);
    if (n < 8)
        return -1;
    *total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    *idle = v[3] + v[4];
    *steal = v[7];
    return 0;
}

static double self_cpu_s(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru))
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

void shm_probe_load_begin(struct shm_probe_load *l)
{
    l->ok = !stat_cpu(&l->total, &l->idle, &l->steal);
    l->cpu = self_cpu_s();
    l->wall = cvia__clock_s();
}

int shm_probe_load_end(const struct shm_probe_load *l, char *why, size_t cap)
{
    unsigned long long total, idle, steal;
    double hz = (double)sysconf(_SC_CLK_TCK), ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
    double wall = cvia__clock_s() - l->wall, cpu = self_cpu_s() - l->cpu, dt, others;

    if (!l->ok || stat_cpu(&total, &idle, &steal) || hz <= 0 || ncpu < 1 ||
        total <= l->total)
        return 0;   /* cannot tell: as before */
    dt = (double)(total - l->total);
    /* CPU time of everything but this process, a share of all the CPUs */
    others = ((dt - (double)(idle - l->idle) - (double)(steal - l->steal)) / hz - cpu) /
             (wall * ncpu);
    if ((double)(steal - l->steal) > SHM_PROBE_MAX_STEAL * dt) {
        snprintf(why, cap, "the hypervisor took %.0f %% of the CPUs",
                 100.0 * (double)(steal - l->steal) / dt);
        return 1;
    }
    if (others > SHM_PROBE_MAX_OTHERS) {
        snprintf(why, cap, "other work used %.0f %% of the CPUs", 100.0 * others);
        return 1;
    }
    return 0;
}

static double boot_s(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_BOOTTIME, &ts))
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* When this process started, in CLOCK_BOOTTIME seconds (/proc/self/stat's
 * 22nd field); 0 where it cannot be read. */
static double self_start_s(void)
{
    char buf[1024], *p;
    unsigned long long ticks;
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

    if (f)
        fclose(f);
    buf[n] = 0;
    if (!(p = strrchr(buf, ')')) ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
               "%*d %*d %llu", &ticks) != 1)
        return 0;
    return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

int shm_cache_verdict(const char *text, int flags)
{
    const char *p = strstr(text, "\nprobed ");
    double at, age;

    if (!p || sscanf(p, "\nprobed %lf", &at) != 1)
        return -1;
    /* measure again, unless another rank of this job did since we started */
    if ((flags & SHM_PROBE_AGAIN) && at < self_start_s())
        return -1;
    age = boot_s() - at;
    if (age < -1)   /* from the future: not this boot's clock */
        return -1;
    if (strstr(text, "\nrejected "))   /* not for one who wants no check */
        return age < SHM_PROBE_RETRY_S && !(flags & SHM_PROBE_NOCHECK) ? 0 : -1;
    return age < SHM_PROBE_MAX_AGE_S ? 1 : -1;
}

int shm_cache_stamp(char *buf, size_t cap, const char *rejected)
{
    return snprintf(buf, cap, "probed %.3f\n%s%s%s", boot_s(), rejected ? "rejected " : "",
                    rejected ? rejected : "", rejected ? "\n" : "");
}

int shm_probe_reject(int rc, int fd, const char *path, const char *key, char *why,
                     const char *what, const char *dflt)
{
    char text[512];
    size_t len = strlen(key);

    if (rc == -ETIMEDOUT) {   /* out of its time: as busy, said once for all */
        strcpy(why, "it ran out of its time");
        rc = -EBUSY;
    }
    if (rc && rc != -EBUSY)
        cvia_info(SHM, "cannot measure the %s (%s): %s", what, strerror(-rc), dflt);
    if (rc != -EBUSY)
        return rc;
    cvia_info(SHM, "%s probe rejected (%s): %s, measured again in %.0f s", what, why, dflt,
              SHM_PROBE_RETRY_S);
    if (len >= sizeof(text))
        return rc;
    memcpy(text, key, len);
    len += (size_t)shm_cache_stamp(text + len, sizeof(text) - len, why);
    if (len >= sizeof(text))
        len = sizeof(text) - 1;
    if (fd >= 0 && (ftruncate(fd, 0) || pwrite(fd, text, len, 0) != (ssize_t)len))
        cvia_warn(SHM, "cannot write %s: %s", path, strerror(errno));
    return rc;
}

/* The cache file NAME ("tune", "piece"): $XDG_RUNTIME_DIR/corevia-shm-NAME
 * if this user has a private runtime directory, else (root, cron)
 * /dev/shm/corevia-shm-NAME-UID, emptied at boot too. */
static int cache_path(const char *name, char *buf, size_t cap)
{
    const char *dir = getenv("XDG_RUNTIME_DIR");
    char def[64];
    struct stat st;

    if (!dir || dir[0] != '/') {
        snprintf(def, sizeof(def), "/run/user/%u", (unsigned)getuid());
        dir = def;
    }
    if (stat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 077))   /* no private runtime directory: the file's owner is checked */
        return snprintf(buf, cap, "/dev/shm/corevia-shm-%s%s-%u", name, TUNE_FLAVOUR,
                        (unsigned)getuid()) < (int)cap ? 0 : -ENAMETOOLONG;
    return snprintf(buf, cap, "%s/corevia-shm-%s%s", dir, name, TUNE_FLAVOUR) < (int)cap ?
           0 : -ENAMETOOLONG;
}

int shm_cache_open(const char *name, char *path, size_t cap, int wait_ms)
{
    struct stat st;
    int fd;

    if (cache_path(name, path, cap))
        return -1;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    /* one link only: a hard link to another file of this user (one of its
     * live segments, where fs.protected_hardlinks is off) would pass the
     * other checks and be truncated by the writer */
    if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
                    (st.st_mode & 077) || st.st_nlink != 1)) {
        cvia_warn(SHM, "%s is not a private file of this user: not used", path);
        close(fd);
        return -1;
    }
    /* another rank measures: wait for its answer, @wait_ms at most (a
     * holder that was stopped must not stop us; measure alone then) */
    for (int k = 0; fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0; k++) {
        if (errno != EWOULDBLOCK || k == wait_ms) {
            close(fd);
            return -1;
        }
        usleep(1000);
    }
    return fd;
}

void shm_boot_id(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    buf[0] = 0;
    if (f) {
        if (!fgets(buf, (int)cap, f))
            buf[0] = 0;
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
}

/* A window's messages below the threshold: in the ring each one keeps
 * both cores busy for about ring[i] (one copies in while the other copies
 * out); single-copied in halves by both sides (shm_rndv_send_window) it
 * keeps each core busy for about cma[i] / 2, and cma[i] (one transfer,
 * hand-off included) overstates that: in a window the hand-offs overlap
 * the copies. Measured (BENCHMARKS.md, issue 17): in the host's fast
 * state, where a probe finds cma 2.1x the ring at 256 KiB and 2.06x at
 * 16 KiB, a window by single copy still had 1.4-1.5x and 1.1x the ring's
 * bandwidth, and a ring slowed by the host costs 5x. So single copy where
 * cma[i] <= 2.5 ring[i]: the
 * smallest size from which that holds at every measured size up to the
 * threshold and below @coop_from (cma[] is two cores' time from there). */
static size_t tune_window(const double *ring, const double *cma, size_t coop_from,
                          size_t thr)
{
    int from = 0;

    while (from < TUNE_NSIZES && ((size_t)TUNE_MIN << from) < thr)
        from++;
    while (from > 0 && ((size_t)TUNE_MIN << (from - 1)) < coop_from &&
           ((size_t)TUNE_MIN << (from - 1)) >= TUNE_FLOOR &&   /* as the threshold */
           cma[from - 1] <= 2.5 * ring[from - 1])
        from--;
    return (size_t)TUNE_MIN << from < thr ? (size_t)TUNE_MIN << from : thr;
}

/* The figures a cache file holds ("SIZE RING_NS CMA_NS" lines); 0 when all
 * TUNE_NSIZES are there. */
static int tune_figures(const char *text, double *ring, double *cma)
{
    const char *p = strstr(text, "\n# size");
    int got = 0;

    while (p && (p = strchr(p + 1, '\n')) && p[1]) {
        unsigned long long sz;
        double r, c;
        if (sscanf(p + 1, "%llu %lf %lf", &sz, &r, &c) != 3)
            break;
        for (int i = 0; i < TUNE_NSIZES; i++)
            if (sz == (unsigned long long)TUNE_MIN << i) {
                ring[i] = r * 1e-9;
                cma[i] = c * 1e-9;
                got |= 1 << i;
            }
    }
    return got == (1 << TUNE_NSIZES) - 1 ? 0 : -1;
}

int shm_tune_threshold(uint32_t nslots, uint32_t slot_size, size_t coop_from,
                       size_t coop_chunk, size_t *threshold, int *cached)
{
    size_t window;

    return shm_tune_threshold_window(nslots, slot_size, coop_from, coop_chunk, threshold,
                                     &window, cached, 0);
}

int shm_tune_threshold_window(uint32_t nslots, uint32_t slot_size, size_t coop_from,
                              size_t coop_chunk, size_t *threshold, size_t *window,
                              int *cached, int flags)
{
    char path[512] = "", boot[64], key[160], text[2048], why[96] = "";
    double ring[TUNE_NSIZES], cma[TUNE_NSIZES], ring2[TUNE_NSIZES], cma2[TUNE_NSIZES];
    struct shm_probe_load load;
    int fd = -1, rc;
    size_t thr = 0, thr2 = 0;

    *cached = 0;
    shm_boot_id(boot, sizeof(boot));
    snprintf(key, sizeof(key), "%s\nboot %s\nring %u x %u\ncoop from %zu by %zu\n",
             TUNE_FORMAT, boot, (unsigned)nslots, (unsigned)slot_size, coop_from, coop_chunk);
    if (boot[0])
        fd = shm_cache_open("tune", path, sizeof(path), TUNE_WAIT_MS);
    if (fd >= 0) {
        ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
        unsigned long long v;
        const char *p;
        int verdict;
        text[n > 0 ? n : 0] = 0;
        if (n > 0 && !strncmp(text, key, strlen(key)) &&
            (verdict = shm_cache_verdict(text, flags)) >= 0) {
            close(fd);   /* releases the lock */
            if (verdict == 0)   /* a rejected probe, not long ago: the default */
                return -EBUSY;
            if ((p = strstr(text, "\nthreshold ")) && sscanf(p, "\nthreshold %llu", &v) == 1 &&
                v >= TUNE_MIN) {
                *threshold = *window = (size_t)v;
                if (!tune_figures(text, ring, cma))
                    *window = tune_window(ring, cma, coop_from, (size_t)v);
                *cached = 1;
                return 0;
            }
            fd = shm_cache_open("tune", path, sizeof(path), TUNE_WAIT_MS);   /* unreadable: again */
        }
    }
    /* twice, on a quiet machine, the same answer: else rejected */
    shm_probe_load_begin(&load);
    rc = tune_measure(nslots, slot_size, coop_from, coop_chunk, ring, cma);
    if (!rc && (flags & SHM_PROBE_NOCHECK)) {   /* one measurement, as it is */
        memcpy(ring2, ring, sizeof(ring));
        memcpy(cma2, cma, sizeof(cma));
    } else if (!rc && shm_probe_load_end(&load, why, sizeof(why))) {
        rc = -EBUSY;   /* busy already: no second measurement */
    } else if (!rc && !(rc = tune_measure(nslots, slot_size, coop_from, coop_chunk, ring2,
                                          cma2)) && shm_probe_load_end(&load, why, sizeof(why))) {
        rc = -EBUSY;
    }
    if (!rc && (thr = tune_decide(ring, cma)) != (thr2 = tune_decide(ring2, cma2))) {
        snprintf(why, sizeof(why), "two measurements chose %zu and %zu bytes", thr, thr2);
        rc = -EBUSY;
    }
    rc = shm_probe_reject(rc, fd, path, key, why, "rendezvous threshold", "32k");
    if (!rc) {
        size_t len = strlen(key);
        for (int i = 0; i < TUNE_NSIZES; i++) {   /* the faster of the two, each */
            ring[i] = ring2[i] < ring[i] ? ring2[i] : ring[i];
            cma[i] = cma2[i] < cma[i] ? cma2[i] : cma[i];
        }
        *threshold = thr;
        *window = tune_window(ring, cma, coop_from, thr);
        memcpy(text, key, len);
        len += (size_t)shm_cache_stamp(text + len, sizeof(text) - len, NULL);
        len += (size_t)snprintf(text + len, sizeof(text) - len, "threshold %zu\n"
                                "# size  ring_ns  single_copy_ns (receiver's time, fastest)\n", thr);
        for (int i = 0; i < TUNE_NSIZES && len < sizeof(text); i++)
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%zu %.0f %.0f\n",
                                    (size_t)TUNE_MIN << i, ring[i] * 1e9, cma[i] * 1e9);
        if (len >= sizeof(text))
            len = sizeof(text) - 1;
        if (fd >= 0 && (ftruncate(fd, 0) || pwrite(fd, text, len, 0) != (ssize_t)len))
            cvia_warn(SHM, "cannot write %s: %s", path, strerror(errno));
        cvia_info(SHM, "rendezvous threshold measured: %zu bytes", thr);
    }
    if (fd >= 0)
        close(fd);
    return rc;
}
