/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of src/topo/topo_mem.c on recorded machines (hwloc's XML
 * backend, tests/data/topologies): tier order on KNL SNC-4 flat (subtypes
 * only), fake KNL SNC-4 hybrid (bandwidth attribute), KNL all-to-all with
 * root-attached nodes, a CXL machine whose expanders are not NUMA nodes,
 * a one-node KNL (cache mode), an 8-node Opteron, a machine recorded
 * without Core objects (each PU a core), and nodes that nothing but a
 * tie-break tells apart (twin CPU-less nodes: one tier, not ddr and
 * far), on-package memory recorded without subtypes or attributes (KNL
 * stripped, Xeon Max flat as hwloc 2.2 records it) and what is not (the
 * same nodes farther than the other socket, or no distances); every core's hbw node
 * is the MCDRAM node of its own cluster and its intra-tile partner the
 * other core of its L2; kinds parse, decide, refuse and fall back; the
 * override is checked. Pure: no live machine involved.
 * Usage: test_tiers TOPOLOGY_DIR. TAP output, plan at the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/cvia_errno.h>
#include "topo/topo_cpu.h"
#include "topo/topo_mem.h"

#include "tap.h"

static const char *dir;

static hwloc_topology_t load(const char *file)
{
    char path[1024], err[256];
    hwloc_topology_t t;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (cvia__topo_open_path(path, &t, err, sizeof(err)) < 0) {
        tap_diag("%s", err);
        return NULL;
    }
    return t;
}

static int nodes_are(hwloc_const_bitmap_t b, const char *list)
{
    char l[128];
    hwloc_bitmap_list_snprintf(l, sizeof(l), b);
    if (strcmp(l, list))
        tap_diag("nodes %s, expected %s", l, list);
    return !strcmp(l, list);
}

static int decide(hwloc_topology_t t, const struct cvia_tiers *T, const char *kind,
                  const char *cpus, struct cvia_tier_decision *d)
{
    struct cvia_kind k;
    hwloc_bitmap_t w = hwloc_bitmap_alloc();
    char err[256];
    int rc;

    if (cvia__kind_parse(kind, &k) < 0) {
        hwloc_bitmap_free(w);
        d->nodes = NULL;
        return -EINVAL;
    }
    if (cpus)
        hwloc_bitmap_list_sscanf(w, cpus);
    rc = cvia__tiers_decide(t, T, &k, cpus ? w : NULL, d, err, sizeof(err));
    hwloc_bitmap_free(w);
    return rc;
}

/* The OS index of the NUMA node of @subtype ("" for plain) in the Group
 * (cluster) above @core. */
static int cluster_node(hwloc_topology_t t, int core, int want_mcdram)
{
    hwloc_obj_t c = cvia__topo_core(t, core), g = c;

    while (g && !(g->type == HWLOC_OBJ_GROUP && g->memory_arity))
        g = g->parent;
    for (hwloc_obj_t m = g ? g->memory_first_child : NULL; m; m = m->next_sibling) {
        int is = m->subtype && !strcmp(m->subtype, "MCDRAM");
        if (m->type == HWLOC_OBJ_NUMANODE && is == want_mcdram)
            return (int)m->os_index;
    }
    return -2;
}

static void test_knl(void)
{
    hwloc_topology_t t = load("knl.xml");
    struct cvia_tiers T;
    struct cvia_tier_decision d;
    hwloc_bitmap_t sh;
    char err[256];
    int bad = 0, badl2 = 0, hbw, ddr;

    if (!tap_ok(t != NULL, "knl.xml loads")) return;
    tap_ok(cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0, "knl.xml: tiers built");
    hbw = cvia__tiers_find(&T, "hbw");
    ddr = cvia__tiers_find(&T, "ddr");
    tap_ok(T.by == CVIA_TIERS_BY_SUBTYPE && T.ntiers == 2 && hbw == 0 && ddr == 1 &&
           nodes_are(T.tier[0].nodes, "4-7") && nodes_are(T.tier[1].nodes, "0-3"),
           "knl.xml (SNC-4 flat, no attributes): ranked by subtype, hbw = MCDRAM 4-7 first, ddr 0-3");
    sh = hwloc_bitmap_alloc();
    for (int c = 0; c < T.ncores; c++) {
        int h = T.local[c * CVIA_TIERS_MAX + hbw], dd = T.local[c * CVIA_TIERS_MAX + ddr];
        if (h != cluster_node(t, c, 1) || dd != cluster_node(t, c, 0)) {
            if (!bad++)
                tap_diag("core %d: hbw %d ddr %d, cluster has %d and %d", c, h, dd,
                         cluster_node(t, c, 1), cluster_node(t, c, 0));
        }
        /* its intra-tile partner: the one other core of its L2 */
        if (cvia__topo_cache_sharers(t, c, 2, sh) != 2 || !hwloc_bitmap_isset(sh, (unsigned)c) ||
            cvia__topo_relation(t, c, hwloc_bitmap_first(sh) == c ? hwloc_bitmap_last(sh)
                                                                   : hwloc_bitmap_first(sh)) == CVIA_REL_SAME)
            badl2++;
    }
    hwloc_bitmap_free(sh);
    tap_ok(T.ncores == 64 && !bad, "knl.xml: each of the 64 cores' hbw node is the MCDRAM node "
           "of its own cluster, its ddr node the cluster's DDR");
    tap_ok(!badl2, "knl.xml: each core shares its L2 (tile) with exactly one other core");
    tap_ok(decide(t, &T, "hbw", "0", &d) == 0 && d.bind && nodes_are(d.nodes, "4"),
           "knl.xml: hbw on PU 0 binds to node 4");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "hbw", "16-17", &d) == 0 && nodes_are(d.nodes, "5"),
           "knl.xml: hbw on PUs 16-17 (second cluster) binds to node 5");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "hbw", "0,16", &d) == 0 && nodes_are(d.nodes, "4-5"),
           "knl.xml: hbw on PUs of two clusters binds to both clusters' MCDRAM");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "hbw", NULL, &d) == 0 && nodes_are(d.nodes, "4-7"),
           "knl.xml: hbw anywhere binds to every MCDRAM node");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "ddr", "40", &d) == 0 && nodes_are(d.nodes, "3"),
           "knl.xml: ddr on PU 40 binds to its cluster's DDR node 3");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "hbw-preferred", "0", &d) == 0 && d.bind && !d.fallback &&
           nodes_are(d.nodes, "4"), "knl.xml: hbw-preferred is hbw where there is some");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "node:6", "0", &d) == 0 && nodes_are(d.nodes, "6") &&
           (hwloc_bitmap_free(d.nodes), decide(t, &T, "node:9", "0", &d)) == -ENODEV,
           "knl.xml: node:6 binds to 6, node:9 is ENODEV");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "near-nic:ens2f0", "0", &d) == 0 && d.bind &&
           cvia__tiers_node_tier(&T, (unsigned)hwloc_bitmap_first(d.nodes)) == ddr,
           "knl.xml: near-nic:ens2f0 binds to ddr memory");
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "near-nic:nosuch0", "0", &d) == -ENODEV,
           "knl.xml: near-nic of an unknown interface is ENODEV");
    hwloc_bitmap_free(d.nodes);

    /* the override */
    cvia__tiers_free(&T);
    tap_ok(cvia__tiers_build(t, "hbw:4-5;ddr:0-3", &T, err, sizeof(err)) == 0 &&
           T.by == CVIA_TIERS_BY_OVERRIDE && T.ntiers == 3 &&
           !strcmp(T.tier[2].name, "other") && nodes_are(T.tier[2].nodes, "6-7"),
           "override hbw:4-5;ddr:0-3: the nodes left out form a last tier 'other'");
    cvia__tiers_free(&T);
    tap_ok(cvia__tiers_build(t, "fast:4-7", &T, err, sizeof(err)) == 0 && T.ntiers == 2 &&
           !strcmp(T.tier[0].name, "fast") && !strcmp(T.tier[1].name, "ddr") &&
           T.local[40 * CVIA_TIERS_MAX + 0] == 6,
           "override fast:4-7: the rest becomes ddr; each core still gets its local node");
    cvia__tiers_free(&T);
    {
        static const char *const bad_specs[] = { "hbw:4-9", "hbw:4;ddr:4", "hbw", "HBW:4",
                                                  "hbw:x", ":4", "a:1;a:2", "" };
        int ok = 1;
        for (size_t i = 0; i < sizeof(bad_specs) / sizeof(*bad_specs); i++) {
            int rc = cvia__tiers_build(t, bad_specs[i], &T, err, sizeof(err));
            if (!strcmp(bad_specs[i], "")) {        /* empty: no override */
                ok &= rc == 0 && T.by == CVIA_TIERS_BY_SUBTYPE;
                cvia__tiers_free(&T);
                continue;
            }
            if (rc != -CVIA_ECONFIG || !err[0]) {
                tap_diag("override '%s': rc %d", bad_specs[i], rc);
                ok = 0;
            }
            if (rc == 0)
                cvia__tiers_free(&T);
        }
        tap_ok(ok, "bad overrides (unknown node, node twice, no nodes, bad name, ...) are "
               "CVIA_ECONFIG with a reason");
    }
    hwloc_topology_destroy(t);
}

static void test_fake_knl(void)
{
    hwloc_topology_t t = load("64intel64-fakeKNL-SNC4-hybrid.xml");
    struct cvia_tiers T;
    struct cvia_tier_decision d;
    char err[256];
    int bad = 0;

    if (!tap_ok(t != NULL, "64intel64-fakeKNL-SNC4-hybrid.xml loads")) return;
    tap_ok(cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0 &&
           T.by == CVIA_TIERS_BY_SUBTYPE && T.ntiers == 2 &&
           !strcmp(T.tier[0].name, "hbw") && nodes_are(T.tier[0].nodes, "4-7") &&
           !strcmp(T.tier[1].name, "ddr") && nodes_are(T.tier[1].nodes, "0-3"),
           "fake KNL SNC-4 hybrid: ranked by subtype, hbw 4-7 then ddr 0-3");
    {
        /* the same machine as a recording without subtypes holds it (hwloc
         * before its MCDRAM detection, Linux without HBM tagging): the
         * bandwidth attribute must rank it the same way */
        struct cvia_tiers U;
        hwloc_obj_t n = NULL;
        while ((n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n))) {
            free(n->subtype);       /* hwloc frees it with free() at destroy */
            n->subtype = NULL;
        }
        /* names: without a subtype the tier of the cores' own nodes is
         * "ddr" (the smallest OS index of each locality), not the tier of
         * most capacity: this fake machine gives its MCDRAM more than its
         * DDR */
        tap_ok(cvia__tiers_build(t, NULL, &U, err, sizeof(err)) == 0 &&
               U.by == CVIA_TIERS_BY_BANDWIDTH && U.ntiers == 2 &&
               nodes_are(U.tier[0].nodes, "4-7") && nodes_are(U.tier[1].nodes, "0-3") &&
               !strcmp(U.tier[0].name, "hbw") && !strcmp(U.tier[1].name, "ddr") &&
               !memcmp(U.local, T.local, sizeof(int) * CVIA_TIERS_MAX * (size_t)T.ncores),
               "fake KNL without subtypes: ranked by the bandwidth attribute into the same "
               "tiers (hbw 4-7, ddr 0-3), and the same node per core in each");
        if (U.ntiers)
            cvia__tiers_free(&U);
    }
    for (int i = 0; i < T.nnodes; i++)
        if (T.node[i].bandwidth != (T.node[i].subtype[0] ? 90000u : 22500u))
            bad++;
    tap_ok(!bad, "fake KNL: node bandwidths from hwloc (90000 and 22500 MiB/s)");
    bad = 0;
    for (int c = 0; c < T.ncores; c++) {
        hwloc_obj_t core = cvia__topo_core(t, c);
        int h = T.local[c * CVIA_TIERS_MAX + 0];
        hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(t, (unsigned)h);
        if (!n || !hwloc_bitmap_isincluded(core->cpuset, n->cpuset))
            bad++;
    }
    tap_ok(!bad, "fake KNL: each core's hbw node is local to it");
    tap_ok(decide(t, &T, "hbw", "0", &d) == 0 && nodes_are(d.nodes, "7"),
           "fake KNL: hbw on PU 0 is node 7 (its cluster's MCDRAM, not node 4)");
    hwloc_bitmap_free(d.nodes);
    cvia__tiers_free(&T);
    hwloc_topology_destroy(t);
}

static void test_one_tier(const char *file, const char *name, int nnodes)
{
    hwloc_topology_t t = load(file);
    struct cvia_tiers T;
    struct cvia_tier_decision d;
    char err[256];

    if (!tap_ok(t != NULL, "%s loads", file)) return;
    tap_ok(cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0 && T.ntiers == 1 &&
           T.nnodes == nnodes && !strcmp(T.tier[0].name, "ddr") && T.by == CVIA_TIERS_BY_NONE,
           "%s (%s): one tier, ddr, of %d node(s)", file, name, nnodes);
    tap_ok(decide(t, &T, "hbw", "0", &d) == -ENODEV, "%s: hbw is refused (ENODEV)", file);
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "hbw-preferred", "0", &d) == 0 && !d.bind && d.fallback,
           "%s: hbw-preferred falls back to default placement", file);
    hwloc_bitmap_free(d.nodes);
    tap_ok(decide(t, &T, "default", "0", &d) == 0 && !d.bind && !d.fallback,
           "%s: default binds nothing", file);
    hwloc_bitmap_free(d.nodes);
    if (!strcmp(file, "cxlmem+dax.v2.xml"))
        tap_ok(strstr(T.note, "4 CXL memory device(s)") && strstr(T.note, "1 DAX"),
               "cxlmem+dax: the note says the 4 CXL expanders and the DAX device are no tier");
    if (nnodes == 8) {      /* 64amd64: each die's cores get their own node */
        int bad = 0;
        for (int c = 0; c < T.ncores; c++)
            if (T.local[c * CVIA_TIERS_MAX] != cvia__topo_core_numa(t, c))   /* OS index */
                bad++;
        tap_ok(!bad, "%s: each core's ddr node is its own die's", file);
    }
    if (!strcmp(file, "fakeheterodistances.xml"))  /* PUs straight under L3s */
        tap_ok(T.ncores == 8 && cvia__topo_ncores(t) == 8 && cvia__topo_core_of_pu(t, 6) == 1 &&
               cvia__topo_core_first_pu(t, 7) == 42,
               "%s: without Core objects each of the 8 PUs is a core (PU 6 is core 1, "
               "core 7 is PU 42)", file);
    cvia__tiers_free(&T);
    hwloc_topology_destroy(t);
}

static void test_a2a(void)
{
    hwloc_topology_t t = load("8intel64-fakeKNL-A2A-hybrid.rootattachednumas.xml");
    struct cvia_tiers T;
    char err[256];

    if (!tap_ok(t != NULL, "8intel64-fakeKNL-A2A-hybrid.rootattachednumas.xml loads")) return;
    tap_ok(cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0 && T.ntiers == 2 &&
           nodes_are(T.tier[cvia__tiers_find(&T, "hbw")].nodes, "1") &&
           nodes_are(T.tier[cvia__tiers_find(&T, "ddr")].nodes, "0") &&
           cvia__tiers_find(&T, "hbw") == 0,
           "fake KNL all-to-all, nodes attached to the machine: hbw 1 before ddr 0");
    cvia__tiers_free(&T);
    hwloc_topology_destroy(t);
}

static void strip_subtypes(hwloc_topology_t t)
{
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n))) {
        free(n->subtype);           /* hwloc frees it with free() at destroy */
        n->subtype = NULL;
    }
}

/* The OS-index matrix @v (n x n, nodes 0..n-1) as the topology's only
 * NUMA distances. */
static int set_distances(hwloc_topology_t t, unsigned n, const hwloc_uint64_t *v)
{
    hwloc_obj_t objs[8];
    hwloc_distances_add_handle_t h;

    if (n > 8 || hwloc_distances_remove(t) < 0)
        return -1;
    for (unsigned i = 0; i < n; i++)
        if (!(objs[i] = hwloc_get_numanode_obj_by_os_index(t, i)))
            return -1;
    h = hwloc_distances_add_create(t, "test", HWLOC_DISTANCES_KIND_FROM_USER |
                                   HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0);
    return h && hwloc_distances_add_values(t, h, n, objs, (hwloc_uint64_t *)v, 0) == 0 &&
           hwloc_distances_add_commit(t, h, 0) == 0 ? 0 : -1;
}

/* On-package memory recorded with neither subtype nor attribute (issue 19
 * item 3): KNL without its MCDRAM subtypes, a Xeon Max pair in flat mode
 * as hwloc 2.2 records it; and what the rule must not take for it. */
static void test_on_package(void)
{
    struct cvia_tiers T, U;
    char err[256];
    hwloc_topology_t t = load("knl.xml");

    if (tap_ok(t != NULL, "knl.xml loads")) {
        int ok = cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0;
        strip_subtypes(t);
        ok &= cvia__tiers_build(t, NULL, &U, err, sizeof(err)) == 0;
        tap_ok(ok && U.by == CVIA_TIERS_BY_ONPACKAGE && U.ntiers == 2 &&
               !strcmp(U.tier[0].name, "hbw") && nodes_are(U.tier[0].nodes, "4-7") &&
               !strcmp(U.tier[1].name, "ddr") && nodes_are(U.tier[1].nodes, "0-3") &&
               !memcmp(U.local, T.local, sizeof(int) * CVIA_TIERS_MAX * (size_t)T.ncores),
               "knl.xml without MCDRAM subtypes: the 4 GiB nodes beside each cluster's 24 GiB "
               "are hbw, with the same node per core as with subtypes");
        cvia__tiers_free(&U);
        tap_ok(hwloc_distances_remove(t) == 0 &&
               cvia__tiers_build(t, NULL, &U, err, sizeof(err)) == 0 &&
               U.by == CVIA_TIERS_BY_ONPACKAGE && nodes_are(U.tier[0].nodes, "4-7") &&
               !memcmp(U.local, T.local, sizeof(int) * CVIA_TIERS_MAX * (size_t)T.ncores),
               "knl.xml with neither subtypes nor distances: one package, still hbw 4-7");
        cvia__tiers_free(&U);
        cvia__tiers_free(&T);
        hwloc_topology_destroy(t);
    }

    t = load("derived/Intel-SapphireRapids-2xXeonMax9460.flat-hwloc22.xml");
    if (tap_ok(t != NULL, "the derived Xeon Max flat-mode recording loads")) {
        /* CXL-like: the 64 GiB nodes farther than the other socket's DDR */
        static const hwloc_uint64_t far[16] = { 10, 21, 31, 41, 21, 10, 41, 31,
                                                31, 41, 10, 41, 41, 31, 41, 10 };
        tap_ok(cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0 &&
               T.by == CVIA_TIERS_BY_ONPACKAGE && T.ntiers == 2 &&
               !strcmp(T.tier[0].name, "hbw") && nodes_are(T.tier[0].nodes, "2-3") &&
               !strcmp(T.tier[1].name, "ddr") && nodes_are(T.tier[1].nodes, "0-1") &&
               T.local[0 * CVIA_TIERS_MAX + 0] == 2 && T.local[40 * CVIA_TIERS_MAX + 0] == 3,
               "Xeon Max flat, hwloc 2.2 (no subtype, no attribute): HBM 2-3 is hbw, core 0's "
               "is node 2, core 40's node 3");
        cvia__tiers_free(&T);
        tap_ok(set_distances(t, 4, far) == 0 &&
               cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0 &&
               T.by == CVIA_TIERS_BY_DISTANCE && cvia__tiers_find(&T, "hbw") < 0 &&
               !strcmp(T.tier[0].name, "ddr") && nodes_are(T.tier[0].nodes, "0-1") &&
               nodes_are(T.tier[1].nodes, "2-3"),
               "the same with the small nodes farther (31) than the other socket's DDR (21): "
               "not on-package, far");
        cvia__tiers_free(&T);
        tap_ok(hwloc_distances_remove(t) == 0 &&
               cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0 &&
               T.by == CVIA_TIERS_BY_DISTANCE && cvia__tiers_find(&T, "hbw") < 0 &&
               !strcmp(T.tier[1].name, "far") && nodes_are(T.tier[1].nodes, "2-3"),
               "the same without distances: two packages, nothing tells HBM from a device "
               "beside the socket, far");
        cvia__tiers_free(&T);
        hwloc_topology_destroy(t);
    }

    t = load("28intel64-2p2g7c-CoD.nogroups.v1tov2.xml");
    if (tap_ok(t != NULL, "28intel64-2p2g7c-CoD.nogroups.v1tov2.xml loads")) {
        tap_ok(cvia__tiers_build(t, NULL, &T, err, sizeof(err)) == 0 &&
               T.by == CVIA_TIERS_BY_NONE && T.ntiers == 1 &&
               T.local[0 * CVIA_TIERS_MAX] == 0 && T.local[14 * CVIA_TIERS_MAX] == 2,
               "cluster-on-die without Groups (15.7 and 16 GiB nodes of one locality): twins, "
               "one tier, each package's own node its smallest OS index");
        cvia__tiers_free(&T);
        hwloc_topology_destroy(t);
    }
}

static void test_kinds(void)
{
    static const char *const good[] = { "default", "hbw", "hbw-preferred", "ddr", "node:0",
                                        "node:4095", "near-nic:ib0", NULL };
    static const char *const bad[] = { "bogus", "hbw ", "HBW", "node:", "node:x", "node:-1",
                                       "node:4096", "node:1x", "near-nic:", "near-nic:a/b",
                                       "near-nic:a b", NULL };
    struct cvia_kind k;
    char buf[96];
    int ok = 1;

    for (int i = 0; good[i]; i++) {
        ok &= cvia__kind_parse(good[i], &k) == 0;
        cvia__kind_format(&k, buf, sizeof(buf));
        ok &= !strcmp(buf, good[i]);
    }
    ok &= cvia__kind_parse(NULL, &k) == 0 && k.type == CVIA_KIND_DEFAULT;
    tap_ok(ok, "kinds parse and print back (NULL is default)");
    ok = 1;
    for (int i = 0; bad[i]; i++)
        if (cvia__kind_parse(bad[i], &k) != -EINVAL) {
            tap_diag("'%s' parsed", bad[i]);
            ok = 0;
        }
    tap_ok(ok, "malformed kinds are EINVAL");
}

int main(int argc, char **argv)
{
    dir = argc > 1 ? argv[1] : "tests/data/topologies";
    test_kinds();
    test_knl();
    test_fake_knl();
    test_a2a();
    test_on_package();
    test_one_tier("cxlmem+dax.v2.xml", "CXL expanders, not NUMA nodes", 1);
    test_one_tier("Intel-KnightsLanding-XeonPhi-7210.xml", "KNL, one node: cache mode", 1);
    test_one_tier("64amd64-4p2n4ca2co.xml", "4-socket Opteron, 8 dies", 8);
    test_one_tier("fakeheterodistances.xml", "no Core objects, a node per PU", 8);
    test_one_tier("16amd64-8n2c-cpusets.xml", "two CPU-less nodes of one locality", 5);
    printf("1..%d\n", tap_n);
    return tap_failed != 0;
}
