/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of src/mem/: the shareable arena and cvia_mem_alloc/free.
 * Owner side: sizes and alignment, contains(), bad arguments, coalescing,
 * chunk recycling, random patterns from two threads, exhaustion (machine,
 * CVIA_MEM_LIMIT, index slots: -ENOMEM, no crash), no fd leak.
 * Peer side: a view of this process's own arena (pidfd_getfd of oneself is
 * always allowed) for generation checks over 200 chunk lifetimes and for
 * lock-free translates racing with chunk churn; then a real second process:
 * a forked child allocates and fills, the parent maps its arena through a
 * view, reads with plain loads, writes back, the child verifies; freed
 * chunks stop translating. Parent to child is allowed under yama
 * ptrace_scope 1 (a process may ptrace its descendants); where the kernel
 * refuses anyway (scope 2/3, seccomp) the two-process part is skipped.
 * TAP output, plan at the end. Bounded: no timing assertions. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "mem/arena.h"
#include "mem/arena_index.h"

#include "tap.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static int tmult = 1;

/* Byte i of a block holds (i * 31 + seed) mod 256. The pattern repeats
 * every 256 bytes (31 * 256 is 0 mod 256), so fill and check go through
 * one period with memcpy/memcmp: the same bytes as a byte loop, but
 * ThreadSanitizer checks each call as one range instead of every byte
 * (the byte loops made unit.arena 11.7 s of the TSan pass, 0.7 s of the
 * normal one). */
static void period(unsigned char t[256], unsigned seed)
{
    for (unsigned i = 0; i < 256; i++)
        t[i] = (unsigned char)(i * 31u + seed);
}

static void fill(void *p, size_t len, unsigned seed)
{
    unsigned char *c = p, t[256];

    period(t, seed);
    for (size_t i = 0; i < len; i += 256)
        memcpy(c + i, t, len - i < 256 ? len - i : 256);
}

static int check(const void *p, size_t len, unsigned seed)
{
    const unsigned char *c = p;
    unsigned char t[256];

    period(t, seed);
    for (size_t i = 0; i < len; i += 256)
        if (memcmp(c + i, t, len - i < 256 ? len - i : 256))
            return 0;
    return 1;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Mappings of arena chunks in this process ("memfd:cvia-arena (deleted)"). */
static int count_chunk_maps(void)
{
    char line[512];
    FILE *f = fopen("/proc/self/maps", "re");
    int n = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, "/memfd:cvia-arena (deleted)") != NULL;
    fclose(f);
    return n;
}

static void reconfigure(const char *chunk, const char *max, const char *large,
                        const char *limit, const char *slots)
{
    cvia__arena_fini();
#define SET(var, v) do { if (v) setenv(var, v, 1); else unsetenv(var); } while (0)
    SET("CVIA_MEM_CHUNK_SIZE", chunk);
    SET("CVIA_MEM_CHUNK_MAX", max);
    SET("CVIA_MEM_LARGE", large);
    SET("CVIA_MEM_LIMIT", limit);
    SET("CVIA_MEM_MAX_CHUNKS", slots);
#undef SET
}

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* ------------------------------------------------------------ owner side */

static void test_sizes(void)
{
    static const size_t lens[] = { 0, 1, 63, 64, 100, 4095, 4096, 5000, 65536,
                                   MiB - 1, 2 * MiB, 3 * MiB + 5 };
    static const size_t aligns[] = { 0, 1, 128, 256, 8192, 2 * MiB };
    enum { NL = sizeof(lens) / sizeof(lens[0]), NA = sizeof(aligns) / sizeof(aligns[0]) };
    void *p[NL][NA];
    int ok_align = 1, ok_data = 1, ok_contains = 1, ok_free = 1, rc_all = 1;
    int dummy;
    void *heap = malloc(64);

    for (int i = 0; i < NL; i++)
        for (int a = 0; a < NA; a++) {
            size_t want = aligns[a] > 64 ? aligns[a] : 64, n = lens[i] ? lens[i] : 1;
            if (lens[i] >= 4096 && want < 4096)
                want = 4096;
            if (cvia__arena_alloc(lens[i], aligns[a], &p[i][a])) {
                rc_all = 0;
                p[i][a] = NULL;
                continue;
            }
            if ((uintptr_t)p[i][a] % want) {
                tap_diag("len %zu align %zu: %p", lens[i], aligns[a], p[i][a]);
                ok_align = 0;
            }
            if (!cvia__arena_contains(p[i][a], n))
                ok_contains = 0;
            fill(p[i][a], n, (unsigned)(i * NA + a));
        }
    for (int i = 0; i < NL; i++)        /* nothing overlapped */
        for (int a = 0; a < NA; a++)
            if (p[i][a] && !check(p[i][a], lens[i] ? lens[i] : 1, (unsigned)(i * NA + a)))
                ok_data = 0;
    tap_ok(rc_all, "alloc of 12 sizes (0 .. 3 MiB) x 6 alignments succeeds");
    tap_ok(ok_align, "blocks are 64-byte, page (len >= 4096) or requested aligned");
    tap_ok(ok_data, "patterns written into every block are intact (no overlap)");
    tap_ok(ok_contains && !cvia__arena_contains(&dummy, 4) &&
           !cvia__arena_contains(heap, 64) && !cvia__arena_contains(NULL, 1),
           "contains(): 1 for every block, 0 for stack, heap and NULL");
    tap_ok(!cvia__arena_contains(p[NL - 1][0], 64 * MiB),
           "contains(): 0 for a range running past its chunk");
    for (int i = 0; i < NL; i++)
        for (int a = 0; a < NA; a++)
            if (p[i][a] && cvia__arena_free(p[i][a]))
                ok_free = 0;
    tap_ok(ok_free, "every block frees");
    free(heap);
}

static void test_errors(void)
{
    void *p = NULL, *q = (void *)0x1;
    char *heap = malloc(16);
    int ok;

    tap_ok(cvia__arena_alloc(10, 3, &p) == -EINVAL && cvia__arena_alloc(10, 48, &p) == -EINVAL &&
           cvia__arena_alloc(10, (size_t)1 << 31, &p) == -EINVAL &&
           cvia__arena_alloc(10, 0, NULL) == -EINVAL && p == NULL,
           "bad alignment or NULL ptr_p: -EINVAL, *ptr_p untouched");
    tap_ok(cvia__arena_alloc_place(10, 0, 1, &p) == -EINVAL, "unknown placement: -EINVAL");
    ok = cvia__arena_alloc(100, 0, &p) == 0;
    tap_ok(ok && cvia__arena_free(NULL) == -EINVAL && cvia__arena_free(heap) == -EINVAL &&
           cvia__arena_free((char *)p + 64) == -EINVAL && cvia__arena_free(p) == 0 &&
           cvia__arena_free(p) == -EINVAL,
           "free of NULL, heap, interior pointer, double free: -EINVAL");
    capture_start();    /* tiers (issue 4): test_mem_tier.c; here only malformed kinds */
    ok = cvia_mem_alloc(10, "hbw ", &q) == -EINVAL && q == (void *)0x1 &&
         cvia_mem_alloc(10, "node:", &q) == -EINVAL && cvia_mem_alloc(10, NULL, NULL) == -EINVAL;
    capture_end();
    tap_ok(ok, "cvia_mem_alloc: malformed kinds and a NULL ptr_p are -EINVAL");
    ok = cvia_mem_alloc(5000, NULL, &p) == 0 && cvia_mem_alloc(64, "default", &q) == 0 &&
         cvia__arena_contains(p, 5000) && cvia__arena_contains(q, 64);
    tap_ok(ok && cvia_mem_free(p) == 0 && cvia_mem_free(q) == 0 && cvia_mem_free(NULL) == 0 &&
           cvia_mem_free(heap) == -EINVAL,
           "cvia_mem_alloc(NULL / \"default\") and cvia_mem_free (NULL is a no-op)");
    free(heap);
}

/* Live chunks according to our own index (read-only mapping of its fd). */
static int live_chunks(void)
{
    int fd = cvia__arena_index_fd(), n = 0;
    struct cvia_arena_index *ix;
    size_t len = arena_index_bytes(1024);

    if (fd < 0)
        return -1;
    ix = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (ix == MAP_FAILED)
        return -1;
    for (uint32_t i = 0; i < ix->nslots; i++)
        n += atomic_load(&ix->ent[i].gen) != 0;
    munmap(ix, len);
    return n;
}

static void test_coalesce(void)
{
    void *b[4], *big;
    int ok = 1;

    reconfigure("1m", "1m", "1m", NULL, NULL);
    for (int i = 0; i < 4; i++)
        ok &= cvia__arena_alloc(256 * KiB, 0, &b[i]) == 0;
    tap_ok(ok && (char *)b[1] == (char *)b[0] + 256 * KiB && (char *)b[3] == (char *)b[0] + 768 * KiB &&
           cvia__arena_contains(b[0], MiB) && live_chunks() == 1,
           "four 256 KiB blocks fill one 1 MiB chunk, in address order");
    cvia__arena_free(b[2]);
    cvia__arena_free(b[1]);
    cvia__arena_free(b[3]);
    cvia__arena_free(b[0]);
    ok = cvia__arena_alloc(MiB - 4 * KiB, 0, &big) == 0;
    tap_ok(ok && big == b[0] && live_chunks() == 1,
           "after freeing them out of order the chunk is one free block again");
    cvia__arena_free(big);
    ok = cvia__arena_alloc(512 * KiB, 0, &b[0]) == 0 && cvia__arena_alloc(768 * KiB, 0, &b[1]) == 0 &&
         cvia__arena_alloc(768 * KiB, 0, &b[2]) == 0;
    tap_ok(ok && live_chunks() == 3, "the arena grows by new chunks");
    for (int i = 0; i < 3; i++)
        cvia__arena_free(b[i]);
    tap_ok(live_chunks() == 1, "freed empty chunks go back to the system, one is kept");
    ok = cvia__arena_alloc(2 * MiB, 0, &big) == 0 && live_chunks() == 2;
    cvia__arena_free(big);
    tap_ok(ok && live_chunks() == 1, "a large block has a chunk of its own, gone when freed");
}

struct rnd_args { unsigned seed; int ops; int ok; };

static void *rnd_worker(void *arg)
{
    struct rnd_args *a = arg;
    struct { void *p; size_t len; unsigned seed; } live[64] = { { 0 } };
    unsigned s = a->seed;

    a->ok = 1;
    for (int op = 0; op < a->ops; op++) {
        int k = (int)((s = s * 1103515245u + 12345u) >> 16) % 64;
        if (live[k].p) {
            if (!check(live[k].p, live[k].len, live[k].seed) || cvia__arena_free(live[k].p))
                a->ok = 0;
            live[k].p = NULL;
            continue;
        }
        s = s * 1103515245u + 12345u;
        live[k].len = (s >> 8) % 8 == 0 ? (s >> 12) % (3 * MiB) : (s >> 12) % (64 * KiB);
        live[k].seed = s;
        if (cvia__arena_alloc(live[k].len, (size_t)64 << ((s >> 4) % 4), &live[k].p)) {
            a->ok = 0;
            live[k].p = NULL;
            continue;
        }
        fill(live[k].p, live[k].len, live[k].seed);
    }
    for (int k = 0; k < 64; k++)
        if (live[k].p && (!check(live[k].p, live[k].len, live[k].seed) || cvia__arena_free(live[k].p)))
            a->ok = 0;
    return NULL;
}

static void test_random(void)
{
    struct rnd_args a[2] = { { 1, 3000, 0 }, { 2, 3000, 0 } };
    pthread_t t[2];

    reconfigure(NULL, NULL, NULL, NULL, NULL);
    rnd_worker(&a[0]);
    tap_ok(a[0].ok, "3000 random allocs/frees (0 .. 3 MiB, 4 alignments), patterns intact");
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, rnd_worker, &a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    tap_ok(a[0].ok && a[1].ok, "the same from two threads at once");
    tap_ok(live_chunks() <= 1, "everything freed: at most one empty chunk left (%d)", live_chunks());
}

static void test_exhaustion(void)
{
    void *p[64], *q = NULL;
    int n = 0, rc = 0, ok;

    tap_ok(cvia__arena_alloc(SIZE_MAX, 0, &q) == -ENOMEM &&
           cvia__arena_alloc((size_t)1 << 50, 0, &q) == -ENOMEM && q == NULL,
           "a request larger than the machine: -ENOMEM (no OOM kill, no SIGBUS)");
    reconfigure(NULL, NULL, NULL, "4m", NULL);
    while (n < 64 && (rc = cvia__arena_alloc(512 * KiB, 0, &p[n])) == 0)
        n++;
    tap_ok(rc == -ENOMEM && n >= 4 && n <= 8,
           "CVIA_MEM_LIMIT=4m: -ENOMEM after %d blocks of 512 KiB", n);
    while (n > 0)
        cvia__arena_free(p[--n]);
    ok = cvia__arena_alloc(512 * KiB, 0, &q) == 0;
    tap_ok(ok && cvia__arena_free(q) == 0, "after freeing, allocation works again");
    reconfigure(NULL, NULL, NULL, NULL, "16");
    capture_start();
    while (n < 64 && (rc = cvia__arena_alloc(MiB, 0, &p[n])) == 0)
        n++;
    tap_ok(rc == -ENOMEM && n == 16 && strstr(capture_end(), "raise CVIA_MEM_MAX_CHUNKS"),
           "CVIA_MEM_MAX_CHUNKS=16: -ENOMEM at the 17th own chunk, with one warning");
    while (n > 0)
        cvia__arena_free(p[--n]);
    reconfigure(NULL, NULL, NULL, NULL, NULL);
}

/* ------------------------------------------------- a view of ourselves */

static struct cvia_arena_view *self_view(void)
{
    struct cvia_arena_view *v = NULL;
    int pidfd = pidfd_open_(getpid());
    int rc = pidfd < 0 ? -errno : cvia__arena_view_open(pidfd, cvia__arena_index_fd(), &v);
    if (pidfd >= 0)
        close(pidfd);
    if (rc)
        tap_diag("view of our own arena: %s", strerror(-rc));
    return rc ? NULL : v;
}

static void test_self_view_generations(void)
{
    struct cvia_arena_view *v = self_view();
    int ok = v != NULL, maps0 = count_chunk_maps();

    for (int k = 0; k < 200 && ok; k++) {
        uint64_t *x, *alias;
        if (cvia__arena_alloc(2 * MiB, 0, (void **)&x)) {
            ok = 0;
            break;
        }
        x[0] = (uint64_t)k;
        x[2 * MiB / 8 - 1] = ~(uint64_t)k;
        alias = cvia__arena_view_translate(v, (uintptr_t)x, 2 * MiB);
        if (!alias || alias == x || alias[0] != (uint64_t)k || alias[2 * MiB / 8 - 1] != ~(uint64_t)k) {
            tap_diag("round %d: translate gave %p", k, (void *)alias);
            ok = 0;
        }
        alias[1] = 42;                  /* the alias is the same memory */
        ok &= x[1] == 42;
        ok &= cvia__arena_view_translate(v, (uintptr_t)x + 8, 8) == alias + 1;
        cvia__arena_free(x);
        if (cvia__arena_view_translate(v, (uintptr_t)x, 8)) {
            tap_diag("round %d: a freed chunk still translates", k);
            ok = 0;
        }
    }
    tap_ok(ok, "200 chunk lifetimes (same address, new generation): translate sees each "
           "chunk's own data and never a freed one");
    tap_ok(v && count_chunk_maps() == maps0, "the view dropped the mappings of freed chunks");
    cvia__arena_view_close(v);
}

struct race { struct cvia_arena_view *v; uint64_t *buf; atomic_int stop; atomic_int bad; atomic_long n; };

static void *race_reader(void *arg)
{
    struct race *r = arg;
    int dummy;

    while (!atomic_load(&r->stop) || atomic_load(&r->n) < 1000) {
        uint64_t *p = cvia__arena_view_translate(r->v, (uintptr_t)r->buf + 64, 64);
        if (!p || p[0] != 0x5eed || cvia__arena_view_translate(r->v, (uintptr_t)&dummy, 4))
            atomic_fetch_add(&r->bad, 1);
        atomic_fetch_add(&r->n, 1);
    }
    return NULL;
}

static void test_self_view_race(void)
{
    struct race r = { .v = self_view() };
    pthread_t t[2];
    int ok = r.v != NULL;

    if (ok && cvia__arena_alloc(4096, 0, (void **)&r.buf) == 0) {
        r.buf[8] = 0x5eed;
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, race_reader, &r);
        for (int k = 0; k < 300; k++) { /* chunk churn: the index keeps changing */
            void *x;
            if (cvia__arena_alloc(MiB + (size_t)(k % 4) * 4096, 0, &x) == 0)
                cvia__arena_free(x);
        }
        atomic_store(&r.stop, 1);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        cvia__arena_free(r.buf);
    } else {
        ok = 0;
    }
    tap_ok(ok && atomic_load(&r.bad) == 0,
           "two threads translate through one view while the owner adds and removes "
           "chunks: %ld translates, all right", (long)atomic_load(&r.n));
    cvia__arena_view_close(r.v);
}

/* ------------------------------------------------- a second process */

struct child_msg {
    int      fork_ok;       /* the child's arena started empty */
    int      idx_fd, pipe_fd;
    uint64_t a, b, stack;
};

#define A_LEN 10000
#define B_LEN (3 * MiB)

static int io_full(int fd, void *buf, size_t len, int writing)
{
    char *p = buf;
    while (len) {
        struct pollfd pfd = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
        ssize_t n;
        if (poll(&pfd, 1, 30000 * tmult) <= 0)
            return -1;
        n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void child_main(int rd, int wr, void *parent_block)
{
    struct child_msg msg = { 0 };
    void *a, *b, *c;
    char cmd, status;
    int local = 0;

    msg.fork_ok = !cvia__arena_contains(parent_block, 64) &&
                  cvia__arena_free(parent_block) == -EINVAL;
    if (cvia__arena_alloc(A_LEN, 0, &a) || cvia__arena_alloc(B_LEN, 0, &b))
        _exit(10);
    fill(a, A_LEN, 7);
    fill(b, B_LEN, 9);
    msg.idx_fd = cvia__arena_index_fd();
    msg.pipe_fd = wr;
    msg.a = (uintptr_t)a;
    msg.b = (uintptr_t)b;
    msg.stack = (uintptr_t)&local;
    if (io_full(wr, &msg, sizeof(msg), 1) || io_full(rd, &cmd, 1, 0))
        _exit(11);
    /* the parent has written through its view: check, then free b's chunk */
    status = (char)(check(a, A_LEN, 8) && check(b, B_LEN, 10));
    cvia__arena_free(b);
    if (io_full(wr, &status, 1, 1) || io_full(rd, &cmd, 1, 0))
        _exit(12);
    if (cvia__arena_alloc(B_LEN, 0, &c))
        _exit(13);
    fill(c, B_LEN, 11);
    msg.b = (uintptr_t)c;
    if (io_full(wr, &msg, sizeof(msg), 1) || io_full(rd, &cmd, 1, 0))
        _exit(14);
    _exit(status ? 0 : 15);
}

#define TWO_PROC_TESTS 11

static void test_two_processes(void)
{
    struct cvia_arena_view *v = NULL, *v2 = NULL;
    struct child_msg msg;
    int p2c[2], c2p[2], pidfd, rc, ok, wst = 0, maps0, done = tap_n;
    char cmd = 1, status = 0;
    unsigned char *pa, *pb, *pc;
    void *mine;
    pid_t pid;

    if (cvia__arena_alloc(4096, 0, &mine) || pipe(p2c) || pipe(c2p)) {
        printf("Bail out! cannot set up the two-process test\n");
        exit(1);
    }
    fill(mine, 4096, 3);
    fflush(stdout);
    if ((pid = fork()) == 0) {
        close(p2c[1]);
        close(c2p[0]);
        child_main(p2c[0], c2p[1], mine);
    }
    close(p2c[0]);
    close(c2p[1]);
    pidfd = pidfd_open_(pid);
    ok = pidfd >= 0 && io_full(c2p[0], &msg, sizeof(msg), 0) == 0;
    tap_ok(ok && msg.fork_ok, "forked child: the parent's arena is not inherited, its own works");
    rc = ok ? cvia__arena_view_open(pidfd, msg.idx_fd, &v) : -EINVAL;
    if (rc == -EPERM || rc == -ENOSYS || rc == -EACCES) {
        while (tap_n - done < TWO_PROC_TESTS)
            tap_ok(1, "# SKIP pidfd_getfd refused by the kernel (%s): ptrace_scope >= 2 "
                   "or seccomp", strerror(-rc));
        kill(pid, SIGKILL);
        goto out;
    }
    tap_ok(rc == 0, "parent opens a view of the child's arena: %s", rc ? strerror(-rc) : "ok");
    if (rc)
        v = NULL;
    tap_ok(cvia__arena_view_open(pidfd, msg.pipe_fd, &v2) == -CVIA_ESEGMENT &&
           cvia__arena_view_open(pidfd, 9999, &v2) == -EBADF,
           "a view of an fd that is not an arena index is refused");
    pa = v ? cvia__arena_view_translate(v, msg.a, A_LEN) : NULL;
    pb = v ? cvia__arena_view_translate(v, msg.b, B_LEN) : NULL;
    tap_ok(pa && pb && check(pa, A_LEN, 7) && check(pb, B_LEN, 9),
           "parent reads the child's patterns with plain loads (shared and own chunk)");
    tap_ok(v && pa && cvia__arena_view_translate(v, msg.a + 100, 16) == pa + 100 &&
           cvia__arena_view_translate(v, msg.b + B_LEN - 1, 1) == pb + B_LEN - 1,
           "translate again: the cached mapping");
    tap_ok(v && !cvia__arena_view_translate(v, msg.stack, 8) &&
           !cvia__arena_view_translate(v, 0x1000, 8) &&
           !cvia__arena_view_translate(v, msg.b + B_LEN - 8, 16) &&
           !cvia__arena_view_translate(v, msg.a, 1024 * MiB),
           "outside the arena, or running past a chunk: NULL");
    if (!pa || !pb) {
        kill(pid, SIGKILL);
        goto out;
    }
    fill(pa, A_LEN, 8);
    fill(pb, B_LEN, 10);
    maps0 = count_chunk_maps();
    ok = io_full(p2c[1], &cmd, 1, 1) == 0 && io_full(c2p[0], &status, 1, 0) == 0;
    tap_ok(ok && status == 1, "the child sees the parent's stores");
    tap_ok(!cvia__arena_view_translate(v, msg.b, 8) && count_chunk_maps() == maps0 - 1,
           "after the child frees a chunk it no longer translates; the mapping is dropped");
    ok = io_full(p2c[1], &cmd, 1, 1) == 0 && io_full(c2p[0], &msg, sizeof(msg), 0) == 0;
    pc = ok ? cvia__arena_view_translate(v, msg.b, B_LEN) : NULL;
    tap_ok(pc && check(pc, B_LEN, 11),
           "the child's next chunk (same slot, maybe same address) shows its own data");
    ok = io_full(p2c[1], &cmd, 1, 1) == 0 && waitpid(pid, &wst, 0) == pid;
    pid = 0;
    tap_ok(ok && WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the child exits cleanly (%d)", wst);
    tap_ok(cvia__arena_view_open(pidfd, msg.idx_fd, &v2) == -ESRCH,
           "a view of an exited process: -ESRCH");
out:
    if (pid > 0)
        waitpid(pid, &wst, 0);
    cvia__arena_view_close(v);
    if (pidfd >= 0)
        close(pidfd);
    close(p2c[1]);
    close(c2p[0]);
    tap_ok(check(mine, 4096, 3) && cvia__arena_free(mine) == 0,
           "the parent's own block is untouched by all this");
}

int main(void)
{
    const char *m = getenv("CVIA_TEST_TIMEOUT_MULTIPLIER");
    int fds0;

    if (m && atoi(m) > 0)
        tmult = atoi(m);
    signal(SIGPIPE, SIG_IGN);
    reconfigure(NULL, NULL, NULL, NULL, NULL);
    fds0 = count_fds();
    test_sizes();                   /* 6 */
    test_errors();                  /* 5 */
    test_coalesce();                /* 5 */
    test_random();                  /* 3 */
    test_exhaustion();              /* 4 */
    test_self_view_generations();   /* 2 */
    test_self_view_race();          /* 1 */
    test_two_processes();           /* 12 */
    cvia__arena_fini();
    tap_ok(count_fds() == fds0, "after fini and closing the views no fd is left open (%d, %d)",
           count_fds(), fds0);
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
