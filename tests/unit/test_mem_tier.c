/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of memory placement on the live machine: cvia_mem_alloc()
 * with node:N and ddr really places the pages (move_pages query on every
 * page, numa_maps shows the bind policy); hbw where there is none is
 * ENODEV with one error, hbw-preferred falls back with one warning; bad
 * kinds are EINVAL; a placement its nodes cannot hold is ENOMEM before any
 * mbind; the accounting finds the regions. A child with CVIA_MEM_TIERS
 * naming node 0 "hbw" checks hbw placement and capacity exhaustion (hbw:
 * ENOMEM; hbw-preferred: one warning, then the default). Bounded, no
 * timing. TAP output, plan at the end. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "mem/arena.h"
#include "mem/mem_tier.h"

#include "tap.h"

#define MiB ((size_t)1 << 20)

/* Nodes of every page of [p, p+len), after touching them: -1 if they
 * differ or one is not placed, else the node. */
static int pages_node(void *p, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
    void **pages = calloc(n, sizeof(*pages));
    int *st = calloc(n, sizeof(*st)), node = -2;

    if (!pages || !st)
        return -3;
    for (size_t i = 0; i < n; i++) {
        pages[i] = (char *)p + i * page;
        ((volatile char *)pages[i])[0] = 1;
    }
    if (syscall(SYS_move_pages, 0, n, pages, NULL, st, 0) < 0) {
        node = -4;
    } else {
        for (size_t i = 0; i < n; i++) {
            if (st[i] < 0 || (node >= 0 && st[i] != node)) {
                node = -1;
                break;
            }
            node = st[i];
        }
    }
    free(pages);
    free(st);
    return node;
}

/* The policy numa_maps shows for the mapping that starts at @p. */
static int policy_of(void *p, char *out, size_t cap)
{
    char line[1024], addr[32];
    FILE *f = fopen("/proc/self/numa_maps", "re");

    out[0] = '\0';
    if (!f)
        return -1;
    snprintf(addr, sizeof(addr), "%lx ", (unsigned long)(uintptr_t)p);
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, addr, strlen(addr))) {
            sscanf(line + strlen(addr), "%63s", out);
            break;
        }
    fclose(f);
    return out[0] ? 0 : -1;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

static void test_live(void)
{
    hwloc_topology_t t;
    const struct cvia_tiers *T;
    struct cvia_mem_stat *s;
    const char *err;
    char pol[64];
    void *p = NULL, *q = NULL, *r = NULL;
    int rc, has_hbw, ddr;

    tap_ok(cvia__mem_tiers(&t, &T) == 0, "live tiers load");
    has_hbw = cvia__tiers_find(T, "hbw") >= 0;
    ddr = cvia__tiers_find(T, "ddr");

    /* bad kinds */
    {
        static const char *const bad[] = { "bogus", "node:", "node:x", "node:-1",
                                           "near-nic:", "HBW", NULL };
        int ok = 1;
        capture_start();
        for (int i = 0; bad[i]; i++)
            ok &= cvia_mem_alloc(64, bad[i], &q) == -EINVAL && q == NULL;
        err = capture_end();
        tap_ok(ok && strstr(err, "unknown memory kind 'bogus'"),
               "malformed kinds: EINVAL, *ptr untouched, an error naming the kind");
    }
    capture_start();
    rc = cvia_mem_alloc(64, "node:999", &q);
    err = capture_end();
    tap_ok(rc == -ENODEV && strstr(err, "no NUMA node 999"), "node:999: ENODEV, said why");
    capture_start();
    rc = cvia_mem_alloc(64, "near-nic:nosuch0", &q);
    err = capture_end();
    tap_ok(rc == -ENODEV && strstr(err, "nosuch0"), "near-nic:nosuch0: ENODEV, said why");

    /* node:0, really placed */
    rc = cvia_mem_alloc(MiB + 100, "node:0", &p);
    tap_ok(rc == 0 && p && cvia__arena_contains(p, MiB + 100), "node:0: 1 MiB from the arena");
    tap_ok(rc == 0 && pages_node(p, MiB + 100) == 0,
           "node:0: move_pages finds every page on node 0");
    tap_ok(rc == 0 && policy_of(p, pol, sizeof(pol)) == 0 && !strcmp(pol, "bind:0"),
           "node:0: numa_maps shows the chunk bound to node 0 (%s)", pol);
    if (ddr >= 0) {
        rc = cvia_mem_alloc(3 * MiB, "ddr", &r);
        int nd = rc == 0 ? pages_node(r, 3 * MiB) : -5;
        tap_ok(rc == 0 && nd >= 0 && cvia__tiers_node_tier(T, (unsigned)nd) == ddr,
               "ddr: every page on a node of the ddr tier (node %d)", nd);
        cvia_mem_free(r);
    } else {
        tap_ok(1, "# SKIP no ddr tier here");
    }

    /* hbw: refused where there is none, said once */
    if (!has_hbw) {
        capture_start();
        rc = cvia_mem_alloc(64, "hbw", &q);
        int rc2 = cvia_mem_alloc(64, "hbw", &q);
        err = capture_end();
        tap_ok(rc == -ENODEV && rc2 == -ENODEV && q == NULL &&
               count(err, "no high-bandwidth tier") == 1,
               "hbw without high-bandwidth memory: ENODEV, one error for two calls");
        capture_start();
        rc = cvia_mem_alloc(4096, "hbw-preferred", &q);
        rc2 = cvia_mem_alloc(4096, "hbw-preferred", &r);
        err = capture_end();
        tap_ok(rc == 0 && rc2 == 0 && count(err, "hbw-preferred") == 1 &&
               count(err, "warn") == 1,
               "hbw-preferred without it: default memory, one warning for two calls");
        tap_ok(policy_of(q, pol, sizeof(pol)) == 0 && !strncmp(pol, "default", 7),
               "hbw-preferred fallback: no policy on its chunk (%s)", pol);
        cvia_mem_free(q);
        cvia_mem_free(r);
    } else {
        tap_ok(1, "# SKIP this machine has high-bandwidth memory");
        tap_ok(1, "# SKIP this machine has high-bandwidth memory");
        tap_ok(1, "# SKIP this machine has high-bandwidth memory");
    }

    /* a placement its nodes cannot hold: ENOMEM before any mbind */
    {
        int64_t fr = cvia__mem_node_free(0);
        int place;
        if (fr > 0 && cvia__mem_kind_place("node:0", "test", &place) == 0 && place > 0) {
            size_t len = (size_t)fr + ((size_t)1 << 30);
            void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
            rc = m == MAP_FAILED ? -errno : cvia__mem_place_apply(m, len, place);
            tap_ok(rc == -ENOMEM && (policy_of(m, pol, sizeof(pol)), strncmp(pol, "bind", 4)),
                   "a region larger than node 0's free memory: ENOMEM, not bound (%s)", pol);
            if (m != MAP_FAILED)
                munmap(m, len);
        } else {
            tap_ok(1, "# SKIP node 0's free memory is unknown");
        }
    }

    /* accounting: the node:0 block is found, page by page */
    s = calloc(1, sizeof(*s));
    rc = s ? cvia__mem_stat(0, 1, s) : -ENOMEM;
    tap_ok(rc == 0 && s->regions >= 2 && s->arena[0] >= MiB + 100 && s->arena_size >= MiB &&
           s->total[0] >= s->arena[0] && s->absent == 0 && s->shm_size == 0,
           "accounting: arena bytes on node 0 (move_pages) within the process total "
           "(numa_maps); no shm segment in a process without cvia_init");
    {
        struct cvia_mem_stat *o = calloc(1, sizeof(*o));
        rc = o ? cvia__mem_stat(getpid(), 0, o) : -ENOMEM;
        tap_ok(rc == 0 && o->arena[0] == s->arena[0] && o->regions == s->regions,
               "accounting by pid reads the same regions");
        free(o);
    }
    free(s);
    tap_ok(cvia_mem_free(p) == 0, "free");
}

/* In a child: node 0 named hbw by CVIA_MEM_TIERS. */
static void test_override_child(void)
{
    const char *err;
    void *p = NULL, *q = NULL;
    int rc, rc2;

    setenv("CVIA_MEM_TIERS", "hbw:0", 1);
    rc = cvia_mem_alloc(2 * MiB, "hbw", &p);
    tap_ok(rc == 0 && pages_node(p, 2 * MiB) == 0, "CVIA_MEM_TIERS=hbw:0: hbw lands on node 0");
    capture_start();
    rc = cvia_mem_alloc(64, "ddr", &q);
    err = capture_end();
    tap_ok(rc == -ENODEV && strstr(err, "no ddr tier"), "CVIA_MEM_TIERS=hbw:0: no ddr tier: ENODEV");
    rc = cvia_mem_alloc((size_t)1 << 46, "hbw", &q);
    tap_ok(rc == -ENOMEM && q == NULL, "64 TiB of hbw: ENOMEM, no crash");
    capture_start();
    rc = cvia_mem_alloc((size_t)1 << 46, "hbw-preferred", &q);
    rc2 = cvia_mem_alloc((size_t)1 << 46, "hbw-preferred", &q);
    err = capture_end();
    tap_ok(rc == -ENOMEM && rc2 == -ENOMEM && count(err, "no room") == 1,
           "64 TiB of hbw-preferred: one warning that it falls back, then the default "
           "fails too: ENOMEM, no crash");
    rc = cvia_mem_alloc(4096, "hbw-preferred", &q);
    tap_ok(rc == 0 && pages_node(q, 4096) == 0, "hbw-preferred with room: hbw (node 0)");
    cvia_mem_free(p);
    cvia_mem_free(q);
}

int main(void)
{
    pid_t pid;
    int st;

    /* the child first, before this process loads its tiers */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        test_override_child();
        fflush(stdout);
        _exit(tap_failed ? 1 : 0);
    }
    /* the child printed its lines with its own counter: count them here */
    waitpid(pid, &st, 0);
    tap_n += 5;
    tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the CVIA_MEM_TIERS child passed");
    test_live();
    printf("1..%d\n", tap_n);
    return tap_failed != 0;
}
