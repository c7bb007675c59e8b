/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-info --tiers / --kind / --mem: the memory tiers corevia decides on,
 * where a memory kind goes, and where a process's memory is. */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "mem/mem_tier.h"
#include "topo/topo.h"
#include "topo/topo_mem.h"
#include "info_mem.h"

static const char *fmt_bytes(uint64_t v, char *buf, size_t cap)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double d = (double)v;
    int u = 0;

    while (d >= 1024 && u < 4) {
        d /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", v);
    else
        snprintf(buf, cap, "%.1f %s", d, unit[u]);
    return buf;
}

static const char *tier_of(const struct cvia_tiers *T, int node)
{
    int g = node < 0 ? -1 : cvia__tiers_node_tier(T, (unsigned)node);
    return g < 0 ? "-" : T->tier[g].name;
}

static int info_where(const char *cpus, hwloc_bitmap_t where)
{
    cpu_set_t set;

    if (cpus) {
        if (hwloc_bitmap_list_sscanf(where, cpus) < 0 || hwloc_bitmap_iszero(where)) {
            fprintf(stderr, "cvia-info: --cpus: '%s' is not a CPU list (0-3,8)\n", cpus);
            return -1;
        }
        return 0;
    }
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set))
                hwloc_bitmap_set(where, (unsigned)i);
    return 0;
}

int info_tiers(const char *cpus, char *const *kinds, int nkinds)
{
    const struct cvia_tiers *T;
    hwloc_topology_t t;
    hwloc_bitmap_t where;
    char b1[32], l[128], src[300];
    int rc = 0;

    if (cvia__mem_tiers(&t, &T) < 0)
        return 1;           /* said why */
    {
        /* the file's name only: golden outputs must not depend on paths */
        const char *xml = getenv("CVIA_TOPOLOGY"), *slash;
        snprintf(src, sizeof(src), "%s", xml && *xml ? xml : "this machine");
        if ((slash = strrchr(src, '/')))
            memmove(src, slash + 1, strlen(slash + 1) + 1);
    }
    if (T->by == CVIA_TIERS_BY_NONE)
        printf("# memory tiers of %s (%d NUMA node%s): one tier, nothing tells the "
               "nodes apart\n", src, T->nnodes, T->nnodes > 1 ? "s" : "");
    else
        printf("# memory tiers of %s (%d NUMA nodes), ranked by %s, fastest first\n",
               src, T->nnodes, cvia__tiers_by_name(T->by));
    printf("%-5s %-8s %-14s %s\n", "tier", "name", "nodes", "capacity");
    for (int g = 0; g < T->ntiers; g++) {
        hwloc_bitmap_list_snprintf(l, sizeof(l), T->tier[g].nodes);
        printf("%-5d %-8s %-14s %s\n", g, T->tier[g].name, l,
               fmt_bytes(T->tier[g].capacity, b1, sizeof(b1)));
    }
    printf("# NUMA nodes (OS index)\n");
    printf("%-5s %-8s %-9s %-10s %-14s %-10s %s\n", "node", "tier", "subtype", "capacity",
           "bandwidth", "latency", "PUs");
    /* by OS index, not hwloc's logical order: a hwloc 1.x re-export of the
     * same machine orders nodes of one locality differently */
    for (unsigned os = 0, left = (unsigned)T->nnodes; left; os++) {
        const struct cvia_tier_node *n = NULL;
        char bw[32] = "-", lat[32] = "-";
        for (int i = 0; i < T->nnodes && !n; i++)
            if (T->node[i].os == os)
                n = &T->node[i];
        if (!n)
            continue;
        left--;
        if (n->bandwidth)
            snprintf(bw, sizeof(bw), "%" PRIu64 " MiB/s", n->bandwidth);
        if (n->latency)
            snprintf(lat, sizeof(lat), "%" PRIu64 " ns", n->latency);
        printf("%-5u %-8s %-9s %-10s %-14s %-10s %d\n", n->os, T->tier[n->tier].name,
               n->subtype[0] ? n->subtype : "-", fmt_bytes(n->capacity, b1, sizeof(b1)),
               bw, lat, n->pus);
    }
    printf("# each core's node in each tier (cores by hwloc logical index)\n");
    printf("%-10s", "cores");
    for (int g = 0; g < T->ntiers; g++)
        printf(" %-6s", T->tier[g].name);
    printf("\n");
    for (int c = 0; c < T->ncores;) {
        int e = c;
        const int *a = &T->local[c * CVIA_TIERS_MAX];
        while (e + 1 < T->ncores &&
               !memcmp(a, &T->local[(e + 1) * CVIA_TIERS_MAX], sizeof(int) * CVIA_TIERS_MAX))
            e++;
        if (e > c)
            snprintf(l, sizeof(l), "%d-%d", c, e);
        else
            snprintf(l, sizeof(l), "%d", c);
        printf("%-10s", l);
        for (int g = 0; g < T->ntiers; g++)
            printf(" %-6d", a[g]);
        printf("\n");
        c = e + 1;
    }
    if (T->note[0])
        printf("# note: %s\n", T->note);
    if (!nkinds)
        return 0;
    if (!(where = hwloc_bitmap_alloc()))
        return 1;
    if (info_where(cpus, where) < 0) {
        hwloc_bitmap_free(where);
        return 2;
    }
    hwloc_bitmap_list_snprintf(l, sizeof(l), where);
    printf("# memory kinds for a process on PUs %s\n", l);
    for (int i = 0; i < nkinds; i++) {
        struct cvia_tier_decision d;
        struct cvia_kind k;
        char err[256];
        int r;
        if (cvia__kind_parse(kinds[i], &k) < 0) {
            printf("%-16s error: not a memory kind (default, hbw, hbw-preferred, ddr, "
                   "node:N, near-nic:IFNAME): EINVAL\n", kinds[i]);
            rc = 1;
            continue;
        }
        r = cvia__tiers_decide(t, T, &k, where, &d, err, sizeof(err));
        if (r < 0) {
            printf("%-16s error: %s: %s\n", kinds[i], err, cvia_err_name(r));
            rc = 1;
        } else {
            printf("%-16s %s%s\n", kinds[i], d.what, d.fallback ? " [fallback, one warning]" : "");
        }
        hwloc_bitmap_free(d.nodes);
    }
    hwloc_bitmap_free(where);
    return rc;
}

/* This machine's tiers, whatever CVIA_TOPOLOGY says: a process's memory
 * is here, and a recorded machine's nodes and sizes are not its own. 0,
 * or -1 (said why; the table is then printed without tiers). */
static int info_live_tiers(hwloc_topology_t *t_p, struct cvia_tiers *T)
{
    const char *ov = getenv("CVIA_MEM_TIERS");
    char err[256];
    int rc;

    if (hwloc_topology_init(t_p) < 0)
        return -1;
    if (hwloc_topology_load(*t_p) < 0) {
        fprintf(stderr, "cvia-info: --mem: hwloc cannot load this machine's topology: %s\n",
                strerror(errno));
        hwloc_topology_destroy(*t_p);
        return -1;
    }
    if ((rc = cvia__tiers_build(*t_p, ov, T, err, sizeof(err))) < 0) {
        fprintf(stderr, "cvia-info: --mem: memory tiers of this machine: %s\n", err);
        hwloc_topology_destroy(*t_p);
        return -1;
    }
    return 0;
}

int info_mem(pid_t pid)
{
    const struct cvia_tiers *T = NULL;
    struct cvia_tiers live;
    struct cvia_mem_stat *s = calloc(1, sizeof(*s));
    hwloc_topology_t t = NULL;
    const char *xml = getenv("CVIA_TOPOLOGY");
    uint64_t sum[4] = { 0 };
    char b[6][32];
    int rc, maxnode;

    if (!s)
        return 1;
    if (info_live_tiers(&t, &live) == 0)
        T = &live;
    rc = cvia__mem_stat(pid, 0, s);
    if (rc < 0) {
        fprintf(stderr, "cvia-info: --mem: process %d: %s\n", (int)(pid ? pid : getpid()),
                cvia_strerror(rc));
        goto err;
    }
    if (xml && *xml)
        printf("# this machine's NUMA nodes, tiers and sizes: CVIA_TOPOLOGY (%s) names a "
               "recorded machine, and a process's memory is here\n", xml);
    printf("# memory of process %d per NUMA node: what corevia placed (its own shm "
           "segments and cvia_mem_alloc arena, page by page with move_pages), and all "
           "it maps (numa_maps, as numastat -p counts it)\n", (int)(pid ? pid : getpid()));
    printf("%-5s %-6s %-11s %-11s %-11s %-13s %-11s %s\n", "node", "tier", "shm-segment",
           "arena", "corevia", "process-total", "node-free", "node-size");
    maxnode = s->maxnode;
    for (int i = 0; T && i < T->nnodes; i++)
        if ((int)T->node[i].os + 1 > maxnode)
            maxnode = (int)T->node[i].os + 1;
    for (int n = 0; n < maxnode && n < CVIA_MEM_NODES_MAX; n++) {
        int64_t fr = cvia__mem_node_free((unsigned)n);
        uint64_t size = 0;
        int known = 0;
        for (int i = 0; T && i < T->nnodes; i++)
            if ((int)T->node[i].os == n) {
                size = T->node[i].capacity;
                known = 1;
            }
        if (!known && !s->shm[n] && !s->arena[n] && !s->total[n] && fr < 0)
            continue;
        printf("%-5d %-6s %-11s %-11s %-11s %-13s %-11s %s\n", n, T ? tier_of(T, n) : "-",
               fmt_bytes(s->shm[n], b[0], 32), fmt_bytes(s->arena[n], b[1], 32),
               fmt_bytes(s->shm[n] + s->arena[n], b[2], 32),
               fmt_bytes(s->total[n], b[3], 32),
               fr < 0 ? "-" : fmt_bytes((uint64_t)fr, b[4], 32),
               known ? fmt_bytes(size, b[5], 32) : "-");
        sum[0] += s->shm[n];
        sum[1] += s->arena[n];
        sum[2] += s->total[n];
    }
    printf("%-5s %-6s %-11s %-11s %-11s %s\n", "all", "", fmt_bytes(sum[0], b[0], 32),
           fmt_bytes(sum[1], b[1], 32), fmt_bytes(sum[0] + sum[1], b[2], 32),
           fmt_bytes(sum[2], b[3], 32));
    {
        uint64_t peer = 0;
        for (int n = 0; n < s->maxnode; n++)
            peer += s->peer[n];
        printf("# %d corevia region(s) of %s; %s of them not mapped in the process yet; "
               "the total includes %s of other processes' segments and arenas mapped "
               "here\n", s->regions, fmt_bytes(s->shm_size + s->arena_size, b[0], 32),
               fmt_bytes(s->absent, b[1], 32), fmt_bytes(peer, b[2], 32));
    }
    free(s);
    if (T) {
        cvia__tiers_free(&live);
        hwloc_topology_destroy(t);
    }
    return 0;
err:
    free(s);
    if (T) {
        cvia__tiers_free(&live);
        hwloc_topology_destroy(t);
    }
    return 1;
}
