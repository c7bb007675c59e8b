/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench --placement: choose the two cores of rank 0 and rank 1 by what
 * they share (paper 000, section 4.3: cores sharing a cache vs cores in
 * different packages), from the hwloc topology of this machine or of the
 * XML named by CVIA_TOPOLOGY, among the CPUs the process may use. The
 * launching cvia-bench plans; the ranks pin themselves before cvia_init()
 * from what it put in their environment. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#include <corevia/corevia.h>
#include "topo/topo.h"
#include "topo/topo_cpu.h"
#include "bench.h"

static const char *const bench_class_names[BENCH_NCLASSES] = {
    "any", "l2", "l3", "package", "remote",
};

const char *bench_class_name(int cls)
{
    return cls >= 0 && cls < BENCH_NCLASSES ? bench_class_names[cls] : "?";
}

int bench_class_parse(const char *name)
{
    for (int i = 0; i < BENCH_NCLASSES; i++)
        if (!strcmp(name, bench_class_names[i]))
            return i;
    return -1;
}

static void bench_size_text(char *out, size_t cap, hwloc_uint64_t b)
{
    if (b >= (1ull << 20) && b % (1ull << 20) == 0)
        snprintf(out, cap, "%llu MiB", (unsigned long long)(b >> 20));
    else
        snprintf(out, cap, "%llu KiB", (unsigned long long)(b >> 10));
}

/* The level of the nearest cache that cores @a and @b share, 0 if none. */
static unsigned bench_shared_level(hwloc_topology_t t, int a, int b)
{
    unsigned last = cvia__topo_last_level(t);
    hwloc_obj_t cb = cvia__topo_core(t, b);

    for (unsigned l = 1; cb && l <= last; l++) {
        hwloc_obj_t x = cvia__topo_core_cache(t, a, l);
        if (x && hwloc_bitmap_isincluded(cb->cpuset, x->cpuset))
            return l;
    }
    return 0;
}

/* Class of the pair of distinct cores (a, b): BENCH_CLASS_L2 ... REMOTE,
 * or -1 for the same core. The relation (topo_cpu.h) decides; the paper's
 * classes have no "numa": a NUMA node without a shared cache is the
 * package class. */
static int bench_pair_class(hwloc_topology_t t, int a, int b)
{
    switch (cvia__topo_relation(t, a, b)) {
    case CVIA_REL_SAME:    return -1;
    case CVIA_REL_L2:      return BENCH_CLASS_L2;
    case CVIA_REL_L3:      return BENCH_CLASS_L3;
    case CVIA_REL_NUMA:
    case CVIA_REL_PACKAGE: return BENCH_CLASS_PACKAGE;
    default:               return BENCH_CLASS_REMOTE;
    }
}

/* What the chosen pair shares, in words: cores by logical index (L#),
 * NUMA nodes by OS index (P#, as numactl names them). */
static void bench_pair_text(hwloc_topology_t t, struct bench_plan *p)
{
    int a = p->core[0], b = p->core[1];
    int pa = cvia__topo_core_package(t, a), pb = cvia__topo_core_package(t, b);
    int na = cvia__topo_core_numa(t, a), nb = cvia__topo_core_numa(t, b);
    unsigned lvl = bench_shared_level(t, a, b);
    char sz[32], nodes[64];

    if (na == nb)
        snprintf(nodes, sizeof(nodes), "NUMA node P#%d", na);
    else
        snprintf(nodes, sizeof(nodes), "NUMA nodes P#%d and P#%d", na, nb);
    if (lvl && (p->found == BENCH_CLASS_L2 || p->found == BENCH_CLASS_L3)) {
        hwloc_obj_t x = cvia__topo_core_cache(t, a, lvl);
        hwloc_bitmap_t sh = hwloc_bitmap_alloc();
        int ns = sh ? cvia__topo_cache_sharers(t, a, lvl, sh) : 0;
        hwloc_bitmap_free(sh);
        bench_size_text(sz, sizeof(sz), x->attr->cache.size);
        snprintf(p->text, sizeof(p->text), "cores L#%d and L#%d share the L%u (%s, %d cores)%s",
                 a, b, lvl, sz, ns, lvl > 2 ? ", not an L2" : "");
    } else if (p->found == BENCH_CLASS_PACKAGE && pa >= 0 && lvl) {
        snprintf(p->text, sizeof(p->text), "cores L#%d and L#%d are in package L#%d on %s; "
                 "their L%u spans both nodes (sub-NUMA clustering), so it does not count",
                 a, b, pa, nodes, lvl);
    } else if (p->found == BENCH_CLASS_PACKAGE && pa >= 0) {
        snprintf(p->text, sizeof(p->text), "cores L#%d and L#%d are in package L#%d and "
                 "share no cache (%s)", a, b, pa, nodes);
    } else if (p->found == BENCH_CLASS_PACKAGE) {
        snprintf(p->text, sizeof(p->text), "cores L#%d and L#%d share no cache (%s; the "
                 "topology records no package)", a, b, nodes);
    } else if (pa >= 0 && pb >= 0) {
        snprintf(p->text, sizeof(p->text), "cores L#%d and L#%d are in packages L#%d and L#%d",
                 a, b, pa, pb);
    } else {
        snprintf(p->text, sizeof(p->text), "cores L#%d and L#%d are on %s (the topology "
                 "records no package)", a, b, nodes);
    }
}

/* Why no usable pair is of class @cls, in words. */
static void bench_missing_text(hwloc_topology_t t, const int *core, int n,
                               int cls, struct bench_plan *p)
{
    unsigned last = cvia__topo_last_level(t);
    int maxshare = 0, pk0 = n ? cvia__topo_core_package(t, core[0]) : -1, onepk = 1;
    hwloc_bitmap_t sh = hwloc_bitmap_alloc();
    char head[200];

    snprintf(head, sizeof(head), "%d usable core%s (cpus %s)", n, n == 1 ? "" : "s",
             *p->cpus ? p->cpus : "none");
    for (int i = 0; i < n; i++) {
        if (cvia__topo_core_package(t, core[i]) != pk0)
            onepk = 0;
        if (sh && cls == BENCH_CLASS_L2) {
            int k = cvia__topo_cache_sharers(t, core[i], 2, sh);
            maxshare = k > maxshare ? k : maxshare;
        }
    }
    hwloc_bitmap_free(sh);
    if (n < 2)
        snprintf(p->text, sizeof(p->text), "%s: two are needed", head);
    else if (cls == BENCH_CLASS_L2 && !cvia__topo_core_cache(t, core[0], 2))
        snprintf(p->text, sizeof(p->text), "%s: the topology records no L2 cache", head);
    else if (cls == BENCH_CLASS_L2)
        snprintf(p->text, sizeof(p->text), "%s: no two share an L2 (each L2 serves %d core%s)",
                 head, maxshare, maxshare == 1 ? "" : "s");
    else if (cls == BENCH_CLASS_L3 && last == 0)
        snprintf(p->text, sizeof(p->text), "%s: the topology records no CPU cache", head);
    else if (cls == BENCH_CLASS_L3 && last < 3)
        snprintf(p->text, sizeof(p->text), "%s: the machine has no L3 (last-level cache: L%u)",
                 head, last);
    else if (cls == BENCH_CLASS_L3)
        snprintf(p->text, sizeof(p->text), "%s: no two share a cache of level 3 or above "
                 "without sharing an L2", head);
    else if (cls == BENCH_CLASS_REMOTE && pk0 < 0)
        snprintf(p->text, sizeof(p->text), "%s: the topology records no package", head);
    else if (cls == BENCH_CLASS_REMOTE && onepk)
        snprintf(p->text, sizeof(p->text), "%s: all in one package", head);
    else if (cls == BENCH_CLASS_PACKAGE)
        snprintf(p->text, sizeof(p->text), "%s: no two in the same package without a "
                 "shared cache", head);
    else
        snprintf(p->text, sizeof(p->text), "%s: no pair of that class", head);
}

/* The CPUs to choose from: this process's affinity on this machine, every
 * CPU of a recorded topology; intersected with @cpus if given. */
static int bench_usable(hwloc_topology_t t, const char *cpus, hwloc_bitmap_t set,
                        char *err, size_t cap)
{
    hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(t));
    if (hwloc_topology_is_thissystem(t)) {
        cpu_set_t cs;
        hwloc_bitmap_t mine = hwloc_bitmap_alloc();
        if (!mine || sched_getaffinity(0, sizeof(cs), &cs)) {
            snprintf(err, cap, "sched_getaffinity: %s", strerror(errno));
            hwloc_bitmap_free(mine);
            return -1;
        }
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &cs))
                hwloc_bitmap_set(mine, (unsigned)c);
        hwloc_bitmap_and(set, set, mine);
        hwloc_bitmap_free(mine);
    }
    if (cpus) {
        hwloc_bitmap_t want = hwloc_bitmap_alloc();
        if (!want || hwloc_bitmap_list_sscanf(want, cpus) < 0 || hwloc_bitmap_iszero(want)) {
            snprintf(err, cap, "--cpus: '%s' is not a CPU list (like 0-3,8)", cpus);
            hwloc_bitmap_free(want);
            return -2;
        }
        hwloc_bitmap_and(set, set, want);
        hwloc_bitmap_free(want);
    }
    return 0;
}

static int bench_plan_in(hwloc_topology_t t, int cls, const char *cpus, struct bench_plan *p)
{
    int ncores = cvia__topo_ncores(t), n = 0, rc;
    int *core = calloc((size_t)(ncores > 0 ? ncores : 1), sizeof(int));
    int *pu = calloc((size_t)(ncores > 0 ? ncores : 1), sizeof(int));
    hwloc_bitmap_t set = hwloc_bitmap_alloc(), x = hwloc_bitmap_alloc();

    if (!core || !pu || !set || !x) {
        snprintf(p->text, sizeof(p->text), "out of memory");
        rc = -1;
        goto out;
    }
    if ((rc = bench_usable(t, cpus, set, p->text, sizeof(p->text))))
        goto out;
    /* each core that has a usable PU, and its first usable PU */
    for (int c = 0; c < ncores; c++) {
        hwloc_bitmap_and(x, cvia__topo_core(t, c)->cpuset, set);
        if (hwloc_bitmap_iszero(x))
            continue;
        core[n] = c;
        pu[n++] = hwloc_bitmap_first(x);
    }
    hwloc_bitmap_zero(x);
    for (int i = 0; i < n; i++)
        hwloc_bitmap_set(x, (unsigned)pu[i]);
    hwloc_bitmap_list_snprintf(p->cpus, sizeof(p->cpus), set);
    p->ncores = n;
    rc = 1;
    for (int i = 0; i < n && rc == 1; i++)
        for (int j = i + 1; j < n; j++) {
            int k = bench_pair_class(t, core[i], core[j]);
            if (k < 0 || (cls != BENCH_CLASS_ANY && k != cls))
                continue;
            p->found = k;
            p->core[0] = core[i];
            p->core[1] = core[j];
            p->cpu[0] = pu[i];
            p->cpu[1] = pu[j];
            bench_pair_text(t, p);
            rc = 0;
            break;
        }
    if (rc == 1)
        bench_missing_text(t, core, n, cls, p);
out:
    free(core);
    free(pu);
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(x);
    return rc;
}

/* On failure cvia__topo_open has said why (one line): @err is left empty
 * so that no caller says it again. */
static int bench_topo(hwloc_topology_t *t, char *source, size_t cap, char *err, size_t ecap)
{
    int rc = cvia__topo_open(t, source, cap);

    if (rc < 0 && ecap)
        err[0] = '\0';
    return rc;
}

int bench_plan_make(int cls, const char *cpus, struct bench_plan *p)
{
    hwloc_topology_t t;
    int rc;

    memset(p, 0, sizeof(*p));
    p->cls = cls;
    p->found = -1;
    p->cpu[0] = p->cpu[1] = p->core[0] = p->core[1] = -1;
    if (bench_topo(&t, p->source, sizeof(p->source), p->text, sizeof(p->text)) < 0)
        return -1;
    rc = bench_plan_in(t, cls, cpus, p);
    hwloc_topology_destroy(t);
    return rc;
}

void bench_plan_error(const struct bench_plan *p)
{
    fprintf(stderr, "cvia-bench: placement %s does not exist on %s: %s; "
            "nothing measured\n", bench_class_name(p->cls), p->source, p->text);
}

/* --plan: every class (cls < 0) or one. 0, 3 when the one asked for is
 * missing, 1 on error. */
int bench_plan_print(int cls, const char *cpus)
{
    struct bench_plan p;
    char pair[32];
    int rc = 0;

    for (int k = cls < 0 ? 1 : cls; k <= (cls < 0 ? BENCH_NCLASSES : cls); k++) {
        int c = k % BENCH_NCLASSES, r = bench_plan_make(c, cpus, &p);
        if (r < 0) {
            if (p.text[0])
                fprintf(stderr, "cvia-bench: --plan: %s\n", p.text);
            return 1;
        }
        if (k == (cls < 0 ? 1 : cls))
            printf("# placement classes on %s, usable cpus %s (%d core%s): class, cpus of "
                   "rank 0 and rank 1, why\n", p.source, *p.cpus ? p.cpus : "none", p.ncores,
                   p.ncores == 1 ? "" : "s");
        snprintf(pair, sizeof(pair), "%d,%d", p.cpu[0], p.cpu[1]);
        if (r == 0)
            printf("%-8s %-9s %s%s%s\n", bench_class_name(c), pair, p.text,
                   c == BENCH_CLASS_ANY ? ": class " : "",
                   c == BENCH_CLASS_ANY ? bench_class_name(p.found) : "");
        else
            printf("%-8s %-9s %s\n", bench_class_name(c), "none", p.text);
        if (r == 1 && cls >= 0) {
            bench_plan_error(&p);
            rc = 3;
        }
    }
    return fflush(stdout) ? 1 : rc;
}

/* In the environment of the ranks: where each goes and what the pair is. */
void bench_plan_export(const struct bench_plan *p)
{
    char v[64];

    snprintf(v, sizeof(v), "%d,%d", p->cpu[0], p->cpu[1]);
    setenv(BENCH_ENV_CPUS, v, 1);
    snprintf(v, sizeof(v), "%s,%s,%d,%d", bench_class_name(p->cls), bench_class_name(p->found),
             p->core[0], p->core[1]);
    setenv(BENCH_ENV_CLASS, v, 1);
    setenv(BENCH_ENV_SHARE, p->text, 1);
}

/* A rank (before cvia_init): read what the launching cvia-bench planned, or
 * plan here (under a launcher of the user's); pin ranks 0 and 1. Fills
 * @p for the report. 0, 3 (class missing: said on rank 0), 1 (error). */
int bench_plan_pin(int cls, const char *cpus, int rank, struct bench_plan *p)
{
    const char *e = getenv(BENCH_ENV_CPUS), *k = getenv(BENCH_ENV_CLASS);
    cpu_set_t set;

    memset(p, 0, sizeof(*p));
    if (e && k) {
        char req[16] = "", got[16] = "";
        if (sscanf(e, "%d,%d", &p->cpu[0], &p->cpu[1]) != 2 ||
            sscanf(k, "%15[^,],%15[^,],%d,%d", req, got, &p->core[0], &p->core[1]) != 4) {
            fprintf(stderr, "cvia-bench: bad %s / %s in the environment\n", BENCH_ENV_CPUS,
                    BENCH_ENV_CLASS);
            return 1;
        }
        p->cls = bench_class_parse(req);
        p->found = bench_class_parse(got);
        snprintf(p->text, sizeof(p->text), "%s", getenv(BENCH_ENV_SHARE) ?
                 getenv(BENCH_ENV_SHARE) : "");
    } else {
        int rc = bench_plan_make(cls, cpus, p);
        if (rc) {
            if (rank == 0 && rc > 0)
                bench_plan_error(p);
            else if (rank == 0 && p->text[0])
                fprintf(stderr, "cvia-bench: --placement: %s\n", p->text);
            return rc > 0 ? 3 : 1;
        }
    }
    p->planned = 1;
    if (rank < 0 || rank > 1)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(p->cpu[rank], &set);
    if (sched_setaffinity(0, sizeof(set), &set)) {
        fprintf(stderr, "cvia-bench: rank %d: cannot pin to cpu %d: %s\n", rank,
                p->cpu[rank], strerror(errno));
        return 1;
    }
    return 0;
}
