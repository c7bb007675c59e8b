/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Memory tiers from hwloc (topo_mem.h has the rules). Pure: no system
 * call, no logging; errors come back as text for the caller to report. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <corevia/cvia_errno.h>
#include "topo/topo_cpu.h"
#include "topo/topo_mem.h"
#include "topo/topo_nic.h"

#define TIER_GAP 1.25   /* a value this much worse than the last starts a tier */

static const char *const by_names[] = {
    "CVIA_MEM_TIERS", "bandwidth (hwloc memory attribute)",
    "latency (hwloc memory attribute)", "NUMA subtype", "locality and distances",
    "on-package memory (locality and capacity; distances across packages)", "nothing: one tier",
};

const char *cvia__tiers_by_name(int by)
{
    return by >= 0 && by <= CVIA_TIERS_BY_NONE ? by_names[by] : "?";
}

/* Subtype classes, fastest first. */
enum { CLS_NONE = -1, CLS_HBW = 0, CLS_DDR, CLS_SLOW, CLS_GPU, CLS_COUNT };
static const char *const cls_names[CLS_COUNT] = { "hbw", "ddr", "slow", "gpu" };

static int subtype_class(const char *s)
{
    if (!s || !*s)
        return CLS_NONE;
    if (!strcasecmp(s, "MCDRAM") || !strcasecmp(s, "HBM"))
        return CLS_HBW;
    if (!strcasecmp(s, "DRAM"))
        return CLS_DDR;
    if (!strcasecmp(s, "NVM") || !strcasecmp(s, "SPM") || !strncasecmp(s, "CXL", 3))
        return CLS_SLOW;
    if (!strcasecmp(s, "GPUMemory"))
        return CLS_GPU;
    return CLS_NONE;
}

/* Working state of one build. */
struct tb {
    hwloc_topology_t t;
    struct cvia_tiers *T;
    hwloc_obj_t *obj;           /* NUMA node objects, logical order */
    int *group;                 /* node -> group (rank order) */
    int ngroups;
    uint64_t *dist;             /* [i * n + j] by logical index, or NULL */
};

/* ------------------------------------------------------------ attributes */

/* A node's locality (topo_cpu.h): the same rule as the relations use. */
#define node_locality(n) cvia__topo_node_locality(n)

/* @id's value for node @n from its best initiator among those local to it
 * (else the best of all); 0 when hwloc has none. */
static uint64_t node_attr(hwloc_topology_t t, hwloc_memattr_id_t id, hwloc_obj_t n,
                          int higher_better)
{
    struct hwloc_location *ini;
    hwloc_uint64_t *val, v = 0;
    uint64_t best = 0, best_local = 0;
    unsigned nr = 0;

    if (hwloc_memattr_get_initiators(t, id, n, 0, &nr, NULL, NULL) < 0 || nr == 0)
        return hwloc_memattr_get_value(t, id, n, NULL, 0, &v) == 0 ? v : 0;
    ini = calloc(nr, sizeof(*ini));
    val = calloc(nr, sizeof(*val));
    if (ini && val && hwloc_memattr_get_initiators(t, id, n, 0, &nr, ini, val) == 0) {
        for (unsigned i = 0; i < nr; i++) {
            hwloc_const_cpuset_t cs = NULL;
            int local;
            if (ini[i].type == HWLOC_LOCATION_TYPE_CPUSET)
                cs = ini[i].location.cpuset;
            else if (ini[i].type == HWLOC_LOCATION_TYPE_OBJECT && ini[i].location.object)
                cs = ini[i].location.object->cpuset;
            local = cs && node_locality(n) && hwloc_bitmap_intersects(cs, node_locality(n));
            if (!val[i])
                continue;
            if (!best || (higher_better ? val[i] > best : val[i] < best))
                best = val[i];
            if (local && (!best_local || (higher_better ? val[i] > best_local
                                                        : val[i] < best_local)))
                best_local = val[i];
        }
    }
    free(ini);
    free(val);
    return best_local ? best_local : best;
}

/* hwloc's Capacity attribute (the node's memory, as local_memory). */
static uint64_t node_capacity(hwloc_topology_t t, hwloc_obj_t n)
{
    hwloc_uint64_t v = 0;

    if (hwloc_memattr_get_value(t, HWLOC_MEMATTR_ID_CAPACITY, n, NULL, 0, &v) == 0 && v)
        return v;
    return n->attr->numanode.local_memory;
}

static void load_distances(struct tb *b)
{
    struct hwloc_distances_s *d[4];
    unsigned nr = 4, n = (unsigned)b->T->nnodes;

    if (hwloc_distances_get_by_type(b->t, HWLOC_OBJ_NUMANODE, &nr, d,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 || !nr)
        return;
    if (nr > 4)
        nr = 4;
    if (d[0]->nbobjs == n && (b->dist = calloc((size_t)n * n, sizeof(*b->dist)))) {
        for (unsigned i = 0; i < n; i++)
            for (unsigned j = 0; j < n; j++) {
                int a = hwloc_distances_obj_index(d[0], b->obj[i]);
                int c = hwloc_distances_obj_index(d[0], b->obj[j]);
                b->dist[i * n + j] = a < 0 || c < 0 ? UINT64_MAX
                                                    : d[0]->values[(unsigned)a * n + (unsigned)c];
            }
    }
    for (unsigned i = 0; i < nr; i++)
        hwloc_distances_release(b->t, d[i]);
}

/* ---------------------------------------------------------------- ranks */

static int cmp_u64_desc(uint64_t a, uint64_t b) { return a < b ? 1 : a > b ? -1 : 0; }

/* Group nodes by @key (already positive for all): sorted best first, a gap
 * of more than TIER_GAP starts a new group. */
static void group_by_value(struct tb *b, const uint64_t *key, int higher_better)
{
    int n = b->T->nnodes, *ord = malloc((size_t)n * sizeof(int));

    if (!ord)
        return;
    for (int i = 0; i < n; i++)
        ord[i] = i;
    for (int i = 1; i < n; i++)       /* insertion sort: stable, n is small */
        for (int j = i; j > 0; j--) {
            int c = cmp_u64_desc(key[ord[j - 1]], key[ord[j]]);
            if (!higher_better)
                c = -c;
            if (c <= 0)
                break;
            int x = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = x;
        }
    b->ngroups = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0) {
            double prev = (double)key[ord[i - 1]], cur = (double)key[ord[i]];
            double ratio = higher_better ? prev / cur : cur / prev;
            if (ratio > TIER_GAP)
                b->ngroups++;
        }
        b->group[ord[i]] = b->ngroups;
    }
    b->ngroups++;
    free(ord);
}

/* The node a core would get by default (tier < 0: its own node, as
 * cvia__topo_node_of() finds it), or its node in tier @tier: the most
 * local node (smallest locality that contains the core), the smallest OS
 * index of equals (the same in every recording of the machine). */
static int nearest_node(struct tb *b, hwloc_obj_t core, int tier)
{
    int best = -1, bestw = 0;

    if (tier < 0) {     /* the core's own node: the relations' rule */
        hwloc_obj_t own = cvia__topo_node_of(b->t, core->cpuset);
        for (int i = 0; i < b->T->nnodes; i++)
            if (b->obj[i] == own)
                return i;
        return -1;
    }
    for (int i = 0; i < b->T->nnodes; i++) {
        hwloc_const_cpuset_t loc = node_locality(b->obj[i]);
        int w;
        if (tier >= 0 && b->T->node[i].tier != tier)
            continue;
        if (!loc || !hwloc_bitmap_isincluded(core->cpuset, loc))
            continue;
        w = hwloc_bitmap_weight(loc);
        if (best < 0 || w < bestw ||
            (w == bestw && b->T->node[i].os < b->T->node[best].os)) {
            best = i;
            bestw = w;
        }
    }
    return best;
}

/* The package whose PUs include @set, NULL if none does (one node for two
 * packages) or the topology has no Package object. */
static hwloc_obj_t package_of(hwloc_topology_t t, hwloc_const_cpuset_t set)
{
    hwloc_obj_t p = NULL;

    while ((p = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, p)))
        if (p->cpuset && hwloc_bitmap_isincluded(set, p->cpuset))
            return p;
    return NULL;
}

/* Is node @i on-package memory beside own node @d (KNL's MCDRAM, Xeon
 * Max's HBM) though no subtype nor memory attribute says so (hwloc before
 * 2.3, no HMAT, a hwloc 1.x recording, subtypes lost)? All must hold:
 *   - @i has no subtype and the very locality of @d: memory of the same
 *     cores, not of a package or the machine around them;
 *   - @i holds at most 3/4 of @d's capacity: on-package memory is the
 *     small one (KNL: 16 GiB beside at least 48 GiB of DDR4; Xeon Max:
 *     64 GiB beside at least 128 GiB of DDR5), while the nodes that
 *     cluster-on-die or sub-NUMA clustering split a package into, when a
 *     recording lost their CPU sets, are of a size (within a few %);
 *   - on a machine of several packages, @i is nearer to @d than the own
 *     node of any other package is: memory in the package, not a device
 *     beside it (a CXL expander or NVDIMM is farther than the other
 *     socket's DDR). Without distances this cannot be told, and the node
 *     stays "far"; with one package there is no other socket to compare.
 * What nothing here can tell apart: a memory-only device local to one
 * package, smaller than its DDR and nearer than the other socket's
 * (CVIA_MEM_TIERS overrides). */
static int on_package(struct tb *b, int i, int d, const int *primary)
{
    int n = b->T->nnodes;
    hwloc_const_cpuset_t li = node_locality(b->obj[i]), ld = node_locality(b->obj[d]);
    hwloc_obj_t pkg;

    if (!li || !ld || !hwloc_bitmap_isequal(li, ld) ||
        subtype_class(b->T->node[i].subtype) != CLS_NONE ||
        b->T->node[i].capacity / 3 > b->T->node[d].capacity / 4)
        return 0;
    if (hwloc_get_nbobjs_by_type(b->t, HWLOC_OBJ_PACKAGE) <= 1)
        return 1;
    if (!b->dist || !(pkg = package_of(b->t, ld)))
        return 0;
    for (int x = 0; x < n; x++) {
        hwloc_const_cpuset_t lx = node_locality(b->obj[x]);
        if (primary[x] != 1 || !lx || hwloc_bitmap_isincluded(lx, pkg->cpuset))
            continue;
        if (b->dist[(size_t)d * n + i] >= b->dist[(size_t)d * n + x])
            return 0;
    }
    return 1;
}

/* Groups by locality: on-package memory (on_package()) first when there is
 * any, then the cores' own nodes and their twins, then the others by
 * distance. Returns the group of the own nodes. */
static int group_by_locality(struct tb *b, int *primary)
{
    int n = b->T->nnodes, hbm = 0;
    hwloc_obj_t c = NULL;

    while ((c = hwloc_get_next_obj_by_type(b->t, cvia__topo_core_type(b->t), c))) {
        int i = nearest_node(b, c, -1);
        if (i >= 0)
            primary[i] = 1;
    }
    /* on-package memory: marked 3, a group of its own before the own nodes */
    for (int i = 0; i < n; i++)
        for (int d = 0; d < n && !primary[i]; d++)
            if (primary[d] == 1 && on_package(b, i, d, primary)) {
                primary[i] = 3;
                hbm = 1;
            }
    /* a node the recording cannot tell from some core's own node is as
     * near to that core: the same locality, the same kind of memory and
     * about its size (within a factor of 2; KNL's MCDRAM and Xeon Max's
     * HBM beside their DDR are not). Else the tie-break that chose the
     * own node would send its twin to "far": a hwloc 1.x recording of
     * cluster-on-die without Groups (two nodes over one package), the
     * CPU-less nodes left to a cgroup-restricted machine. */
    for (int i = 0; i < n; i++) {
        hwloc_const_cpuset_t li = node_locality(b->obj[i]);
        uint64_t ci = b->T->node[i].capacity;
        if (primary[i] || !li)
            continue;
        for (int j = 0; j < n; j++) {
            hwloc_const_cpuset_t lj = node_locality(b->obj[j]);
            uint64_t cj = b->T->node[j].capacity;
            if (primary[j] == 1 && lj && hwloc_bitmap_isequal(li, lj) &&
                subtype_class(b->T->node[i].subtype) == subtype_class(b->T->node[j].subtype) &&
                ci / 2 <= cj && cj / 2 <= ci) {
                primary[i] = 2;
                break;
            }
        }
    }
    /* primary nodes: group 0; the others by distance to the nearest
     * primary node where distances are known, else one group */
    uint64_t *key = calloc((size_t)n, sizeof(*key));
    int others = 0;
    if (!key)
        return 0;
    for (int i = 0; i < n; i++) {
        if (primary[i])
            continue;
        others++;
        key[i] = UINT64_MAX;
        for (int j = 0; j < n && b->dist; j++)
            if ((primary[j] == 1 || primary[j] == 2) && b->dist[(size_t)j * n + i] < key[i])
                key[i] = b->dist[(size_t)j * n + i];
    }
    b->ngroups = 1;
    /* each distinct key (ascending) is one more group */
    while (others) {
        uint64_t next = UINT64_MAX;
        for (int i = 0; i < n; i++)
            if (!primary[i] && b->group[i] == 0 && key[i] <= next)
                next = key[i];
        for (int i = 0; i < n; i++)
            if (!primary[i] && b->group[i] == 0 && key[i] == next) {
                b->group[i] = b->ngroups;
                others--;
            }
        b->ngroups++;
    }
    for (int i = 0; i < n; i++) {
        if (primary[i] == 3)
            b->group[i] = 0;
        else if (primary[i])
            b->group[i] = hbm;
        else
            b->group[i] += hbm;
    }
    b->ngroups += hbm;
    free(key);
    return hbm;
}

/* The group holding most cores' own nodes (cvia__topo_node_of()), -1 if
 * no core has one: ordinary memory when attributes rank the nodes and no
 * subtype names them. Not the group of most capacity: hwloc's fake KNL
 * gives its MCDRAM more than its DDR, and a recording without subtypes
 * must name its tiers as the one with them does. */
static int own_group(struct tb *b)
{
    int votes[CVIA_TIERS_MAX] = { 0 }, best = -1;
    hwloc_obj_t c = NULL;

    while ((c = hwloc_get_next_obj_by_type(b->t, cvia__topo_core_type(b->t), c))) {
        int i = nearest_node(b, c, -1);
        if (i >= 0 && b->group[i] >= 0 && b->group[i] < CVIA_TIERS_MAX)
            votes[b->group[i]]++;
    }
    for (int g = 0; g < b->ngroups && g < CVIA_TIERS_MAX; g++)
        if (votes[g] && (best < 0 || votes[g] > votes[best]))
            best = g;
    return best;
}

/* Class of a group: the one its typed nodes agree on, else CLS_NONE. */
static int group_class(struct tb *b, int g)
{
    int cls = CLS_NONE, mixed = 0;

    for (int i = 0; i < b->T->nnodes; i++) {
        int c;
        if (b->group[i] != g || (c = subtype_class(b->T->node[i].subtype)) == CLS_NONE)
            continue;
        if (cls == CLS_NONE)
            cls = c;
        else if (cls != c)
            mixed = 1;
    }
    return mixed ? CLS_NONE : cls;
}

static uint64_t group_capacity(struct tb *b, int g)
{
    uint64_t s = 0;
    for (int i = 0; i < b->T->nnodes; i++)
        if (b->group[i] == g)
            s += b->T->node[i].capacity;
    return s;
}

/* Groups (in rank order) become tiers with names. @ddr_hint: the group
 * that is ordinary memory when no subtype says which (-1: most capacity
 * among the untyped). */
static int name_tiers(struct tb *b, int ddr_hint, const char *below)
{
    struct cvia_tiers *T = b->T;
    int cls[CVIA_TIERS_MAX], ddr = -1, uses[CLS_COUNT + 2] = { 0 };
    uint64_t cap = 0;

    if (b->ngroups > CVIA_TIERS_MAX)
        b->ngroups = CVIA_TIERS_MAX;    /* merge the slowest: cannot happen below 8 classes */
    for (int i = 0; i < T->nnodes; i++)
        if (b->group[i] >= CVIA_TIERS_MAX)
            b->group[i] = CVIA_TIERS_MAX - 1;
    for (int g = 0; g < b->ngroups; g++) {
        cls[g] = group_class(b, g);
        if (cls[g] == CLS_DDR && ddr < 0)
            ddr = g;
    }
    if (ddr < 0 && ddr_hint >= 0 && cls[ddr_hint] == CLS_NONE)
        ddr = ddr_hint;
    if (ddr < 0)
        for (int g = 0; g < b->ngroups; g++)
            if (cls[g] == CLS_NONE && (ddr < 0 || group_capacity(b, g) > cap)) {
                ddr = g;
                cap = group_capacity(b, g);
            }
    for (int g = 0; g < b->ngroups; g++) {
        int c = cls[g];
        const char *base;
        int k;
        if (c == CLS_NONE)
            c = g == ddr ? CLS_DDR : (ddr >= 0 && g < ddr) ? CLS_HBW : CLS_COUNT;
        base = c < CLS_COUNT ? cls_names[c] : below;
        k = ++uses[c < CLS_COUNT ? c : CLS_COUNT];
        if (k == 1)
            snprintf(T->tier[g].name, sizeof(T->tier[g].name), "%s", base);
        else
            snprintf(T->tier[g].name, sizeof(T->tier[g].name), "%s%d", base, k);
        if (!(T->tier[g].nodes = hwloc_bitmap_alloc()))
            return -ENOMEM;
    }
    T->ntiers = b->ngroups;
    for (int i = 0; i < T->nnodes; i++) {
        struct cvia_tier *tr = &T->tier[b->group[i]];
        T->node[i].tier = b->group[i];
        hwloc_bitmap_set(tr->nodes, T->node[i].os);
        tr->capacity += T->node[i].capacity;
    }
    return 0;
}

/* ------------------------------------------------------------- override */

static int override_tiers(struct tb *b, const char *spec, char *err, size_t errcap)
{
    struct cvia_tiers *T = b->T;
    char *copy = strdup(spec), *save = NULL, *item;
    hwloc_bitmap_t seen = hwloc_bitmap_alloc(), set = hwloc_bitmap_alloc();
    hwloc_const_nodeset_t all = hwloc_topology_get_topology_nodeset(b->t);
    int rc = -CVIA_ECONFIG, has_ddr = 0;

    if (!copy || !seen || !set) {
        rc = -ENOMEM;
        goto out;
    }
    for (item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *colon = strchr(item, ':'), *name = item;
        int g = T->ntiers;
        while (isspace((unsigned char)*name))
            name++;
        if (!colon || colon == name || (size_t)(colon - name) >= CVIA_TIER_NAMELEN) {
            snprintf(err, errcap, "'%s' is not NAME:NODES (e.g. hbw:4-7;ddr:0-3)", item);
            goto out;
        }
        *colon = '\0';
        for (char *p = name; *p; p++)
            if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-' &&
                *p != '_') {
                snprintf(err, errcap, "tier name '%s': use a-z, 0-9, - and _", name);
                goto out;
            }
        if (cvia__tiers_find(T, name) >= 0) {
            snprintf(err, errcap, "tier '%s' named twice", name);
            goto out;
        }
        if (g >= CVIA_TIERS_MAX) {
            snprintf(err, errcap, "more than %d tiers", CVIA_TIERS_MAX);
            goto out;
        }
        if (hwloc_bitmap_list_sscanf(set, colon + 1) < 0 || hwloc_bitmap_iszero(set) ||
            hwloc_bitmap_weight(set) < 0) {
            snprintf(err, errcap, "tier '%s': '%s' is not a list of NUMA nodes (0-3,8)",
                     name, colon + 1);
            goto out;
        }
        if (!hwloc_bitmap_isincluded(set, all)) {
            char l[64];
            hwloc_bitmap_andnot(set, set, all);
            hwloc_bitmap_list_snprintf(l, sizeof(l), set);
            snprintf(err, errcap, "tier '%s': no NUMA node %s in the topology", name, l);
            goto out;
        }
        if (hwloc_bitmap_intersects(set, seen)) {
            char l[64];
            hwloc_bitmap_and(set, set, seen);
            hwloc_bitmap_list_snprintf(l, sizeof(l), set);
            snprintf(err, errcap, "node %s is in two tiers", l);
            goto out;
        }
        hwloc_bitmap_or(seen, seen, set);
        snprintf(T->tier[g].name, sizeof(T->tier[g].name), "%s", name);
        has_ddr |= !strcmp(name, "ddr");
        T->ntiers++;
        for (int i = 0; i < T->nnodes; i++)
            if (hwloc_bitmap_isset(set, T->node[i].os))
                b->group[i] = g;
    }
    if (!T->ntiers) {
        snprintf(err, errcap, "no tier given (e.g. hbw:4-7;ddr:0-3)");
        goto out;
    }
    if (!hwloc_bitmap_isincluded(all, seen)) {     /* the rest: one more tier */
        if (T->ntiers >= CVIA_TIERS_MAX) {
            snprintf(err, errcap, "more than %d tiers with the unnamed nodes", CVIA_TIERS_MAX);
            goto out;
        }
        snprintf(T->tier[T->ntiers].name, CVIA_TIER_NAMELEN, "%s", has_ddr ? "other" : "ddr");
        for (int i = 0; i < T->nnodes; i++)
            if (!hwloc_bitmap_isset(seen, T->node[i].os))
                b->group[i] = T->ntiers;
        T->ntiers++;
    }
    for (int g = 0; g < T->ntiers; g++)
        if (!(T->tier[g].nodes = hwloc_bitmap_alloc())) {
            rc = -ENOMEM;
            goto out;
        }
    for (int i = 0; i < T->nnodes; i++) {
        struct cvia_tier *tr = &T->tier[b->group[i]];
        T->node[i].tier = b->group[i];
        hwloc_bitmap_set(tr->nodes, T->node[i].os);
        tr->capacity += T->node[i].capacity;
    }
    rc = 0;
out:
    free(copy);
    hwloc_bitmap_free(seen);
    hwloc_bitmap_free(set);
    return rc;
}

/* Memory hwloc shows as devices only: CXL memory devices and DAX. */
static void note_devices(struct tb *b)
{
    hwloc_obj_t o = NULL;
    int cxl = 0, dax = 0;

    while ((o = hwloc_get_next_osdev(b->t, o))) {
        if (o->subtype && !strcasecmp(o->subtype, "CXLMem"))
            cxl++;
        else if (o->name && !strncmp(o->name, "dax", 3))
            dax++;
    }
    if (cxl || dax)
        snprintf(b->T->note, sizeof(b->T->note),
                 "%d CXL memory device(s) and %d DAX device(s) are not NUMA nodes here, "
                 "so not tiers (daxctl reconfigure-device --mode=system-ram makes a DAX "
                 "device one)", cxl, dax);
}

/* --------------------------------------------------------------- build */

static void core_locals(struct tb *b)
{
    struct cvia_tiers *T = b->T;
    int n = T->nnodes;

    for (int c = 0; c < T->ncores; c++) {
        hwloc_obj_t core = cvia__topo_core(b->t, c);
        int home = core ? nearest_node(b, core, -1) : -1;
        for (int g = 0; g < CVIA_TIERS_MAX; g++) {
            int i = -1;
            if (g < T->ntiers && core) {
                i = nearest_node(b, core, g);
                if (i < 0 && home >= 0 && b->dist) {        /* nearest by distance */
                    uint64_t best = UINT64_MAX;
                    for (int j = 0; j < n; j++)
                        if (T->node[j].tier == g && b->dist[(size_t)home * n + j] < best) {
                            best = b->dist[(size_t)home * n + j];
                            i = j;
                        }
                }
                for (int j = 0; j < n && i < 0; j++)        /* else the tier's first */
                    if (T->node[j].tier == g)
                        i = j;
            }
            T->local[c * CVIA_TIERS_MAX + g] = i < 0 ? -1 : (int)T->node[i].os;
        }
    }
}

int cvia__tiers_build(hwloc_topology_t t, const char *override, struct cvia_tiers *T,
                      char *err, size_t errcap)
{
    struct tb b = { .t = t, .T = T };
    uint64_t *bw = NULL, *lat = NULL;
    int n, rc = -ENOMEM, have_bw = 1, have_lat = 1, classes = 0, *primary = NULL;
    unsigned cls_seen = 0;

    memset(T, 0, sizeof(*T));
    if (err && errcap)
        err[0] = '\0';
    n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    if (n <= 0) {
        snprintf(err, errcap, "the topology has no NUMA node");
        return -CVIA_ETOPO;
    }
    T->nnodes = n;
    T->ncores = cvia__topo_ncores(t);
    if (T->ncores < 0)
        T->ncores = 0;
    T->node = calloc((size_t)n, sizeof(*T->node));
    T->local = calloc((size_t)(T->ncores ? T->ncores : 1) * CVIA_TIERS_MAX, sizeof(int));
    b.obj = calloc((size_t)n, sizeof(*b.obj));
    b.group = calloc((size_t)n, sizeof(int));
    bw = calloc((size_t)n, sizeof(*bw));
    lat = calloc((size_t)n, sizeof(*lat));
    primary = calloc((size_t)n, sizeof(int));
    if (!T->node || !T->local || !b.obj || !b.group || !bw || !lat || !primary)
        goto out;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
        struct cvia_tier_node *tn = &T->node[i];
        b.obj[i] = o;
        tn->os = o->os_index;
        tn->logical = (int)o->logical_index;
        snprintf(tn->subtype, sizeof(tn->subtype), "%s", o->subtype ? o->subtype : "");
        tn->capacity = node_capacity(t, o);
        tn->pus = node_locality(o) ? hwloc_bitmap_weight(node_locality(o)) : 0;
        tn->bandwidth = bw[i] = node_attr(t, HWLOC_MEMATTR_ID_BANDWIDTH, o, 1);
        tn->latency = lat[i] = node_attr(t, HWLOC_MEMATTR_ID_LATENCY, o, 0);
        have_bw &= bw[i] != 0;
        have_lat &= lat[i] != 0;
        cls_seen |= 1u << (subtype_class(tn->subtype) == CLS_NONE ? CLS_DDR
                                                                 : subtype_class(tn->subtype));
    }
    for (int c = 0; c < CLS_COUNT; c++)
        classes += !!(cls_seen & (1u << c));
    load_distances(&b);
    note_devices(&b);

    if (override && *override) {
        rc = override_tiers(&b, override, err, errcap);
        if (rc)
            goto out;
        T->by = CVIA_TIERS_BY_OVERRIDE;
        core_locals(&b);
        goto out;
    }
    b.ngroups = 1;              /* all in group 0 unless a rule applies */
    T->by = CVIA_TIERS_BY_NONE;
    /* subtypes first: they survive every way of recording a machine (hwloc
     * 1.x XML keeps them as "Type" infos, which hwloc 2 reads back) while
     * memory attributes do not (v1 XML, hwloc before 2.3, no HMAT) */
    if (n > 1 && classes > 1) {
        for (int i = 0; i < n; i++) {
            int c = subtype_class(T->node[i].subtype);
            b.group[i] = c == CLS_NONE ? CLS_DDR : c;
        }
        /* renumber the classes present, in class order */
        int map[CLS_COUNT], k = 0;
        for (int c = 0; c < CLS_COUNT; c++)
            map[c] = cls_seen & (1u << c) ? k++ : -1;
        for (int i = 0; i < n; i++)
            b.group[i] = map[b.group[i]];
        b.ngroups = k;
        T->by = CVIA_TIERS_BY_SUBTYPE;
    }
    if (n > 1 && b.ngroups == 1 && have_bw) {
        group_by_value(&b, bw, 1);
        T->by = b.ngroups > 1 ? CVIA_TIERS_BY_BANDWIDTH : T->by;
    }
    if (n > 1 && b.ngroups == 1 && have_lat) {
        group_by_value(&b, lat, 0);
        T->by = b.ngroups > 1 ? CVIA_TIERS_BY_LATENCY : T->by;
    }
    if (n > 1 && b.ngroups == 1) {
        int own = group_by_locality(&b, primary);
        if (b.ngroups > 1) {
            T->by = own ? CVIA_TIERS_BY_ONPACKAGE : CVIA_TIERS_BY_DISTANCE;
            rc = name_tiers(&b, own, "far");
        } else {
            for (int i = 0; i < n; i++)
                b.group[i] = 0;
            rc = name_tiers(&b, 0, "slow");
        }
    } else {
        rc = name_tiers(&b, own_group(&b), "slow");
    }
    if (rc == 0)
        core_locals(&b);
out:
    free(b.obj);
    free(b.group);
    free(b.dist);
    free(bw);
    free(lat);
    free(primary);
    if (rc)
        cvia__tiers_free(T);
    return rc;
}

void cvia__tiers_free(struct cvia_tiers *T)
{
    for (int g = 0; g < CVIA_TIERS_MAX; g++)
        hwloc_bitmap_free(T->tier[g].nodes);
    free(T->node);
    free(T->local);
    memset(T, 0, sizeof(*T));
}

int cvia__tiers_find(const struct cvia_tiers *T, const char *name)
{
    for (int g = 0; g < T->ntiers; g++)
        if (!strcmp(T->tier[g].name, name))
            return g;
    return -1;
}

int cvia__tiers_node_tier(const struct cvia_tiers *T, unsigned os)
{
    for (int i = 0; i < T->nnodes; i++)
        if (T->node[i].os == os)
            return T->node[i].tier;
    return -1;
}

/* ---------------------------------------------------------------- kinds */

int cvia__kind_parse(const char *s, struct cvia_kind *k)
{
    memset(k, 0, sizeof(*k));
    if (!s || !*s || !strcmp(s, "default")) {
        k->type = CVIA_KIND_DEFAULT;
    } else if (!strcmp(s, "hbw")) {
        k->type = CVIA_KIND_HBW;
    } else if (!strcmp(s, "hbw-preferred")) {
        k->type = CVIA_KIND_HBW_PREFERRED;
    } else if (!strcmp(s, "ddr")) {
        k->type = CVIA_KIND_DDR;
    } else if (!strncmp(s, "node:", 5)) {
        char *end;
        unsigned long v;
        if (!isdigit((unsigned char)s[5]))
            return -EINVAL;
        errno = 0;
        v = strtoul(s + 5, &end, 10);
        if (errno || *end || v > 4095)
            return -EINVAL;
        k->type = CVIA_KIND_NODE;
        k->node = (unsigned)v;
    } else if (!strncmp(s, "near-nic:", 9)) {
        size_t l = strlen(s + 9);
        if (l == 0 || l >= sizeof(k->nic) || strpbrk(s + 9, " \t/:"))
            return -EINVAL;
        k->type = CVIA_KIND_NEAR_NIC;
        memcpy(k->nic, s + 9, l + 1);
    } else {
        return -EINVAL;
    }
    return 0;
}

void cvia__kind_format(const struct cvia_kind *k, char *buf, size_t cap)
{
    static const char *const names[] = { "default", "hbw", "hbw-preferred", "ddr" };

    if (k->type == CVIA_KIND_NODE)
        snprintf(buf, cap, "node:%u", k->node);
    else if (k->type == CVIA_KIND_NEAR_NIC)
        snprintf(buf, cap, "near-nic:%s", k->nic);
    else if (k->type >= 0 && k->type <= CVIA_KIND_DDR)
        snprintf(buf, cap, "%s", names[k->type]);
    else
        snprintf(buf, cap, "?");
}

/* Nodes of tier @g local to the cores that @where touches; the whole tier
 * if it touches none. */
static void tier_local(hwloc_topology_t t, const struct cvia_tiers *T, int g,
                       hwloc_const_cpuset_t where, hwloc_bitmap_t out)
{
    hwloc_obj_t c = NULL;

    hwloc_bitmap_zero(out);
    while (where && (c = hwloc_get_next_obj_by_type(t, cvia__topo_core_type(t), c))) {
        int l;
        if ((int)c->logical_index >= T->ncores || !hwloc_bitmap_intersects(c->cpuset, where))
            continue;
        l = T->local[(int)c->logical_index * CVIA_TIERS_MAX + g];
        if (l >= 0)
            hwloc_bitmap_set(out, (unsigned)l);
    }
    if (hwloc_bitmap_iszero(out))
        hwloc_bitmap_copy(out, T->tier[g].nodes);
}

static void tiers_list(const struct cvia_tiers *T, char *buf, size_t cap)
{
    size_t off = 0;

    buf[0] = '\0';
    for (int g = 0; g < T->ntiers && off < cap; g++) {
        char l[64];
        hwloc_bitmap_list_snprintf(l, sizeof(l), T->tier[g].nodes);
        off += (size_t)snprintf(buf + off, cap - off, "%s%s:%s", g ? ";" : "",
                                T->tier[g].name, l);
    }
}

int cvia__tiers_decide(hwloc_topology_t t, const struct cvia_tiers *T,
                       const struct cvia_kind *k, hwloc_const_cpuset_t where,
                       struct cvia_tier_decision *d, char *err, size_t errcap)
{
    char l[96], tl[160], kind[80];
    int g;

    memset(d, 0, sizeof(*d));
    if (err && errcap)
        err[0] = '\0';
    if (!(d->nodes = hwloc_bitmap_alloc()))
        return -ENOMEM;
    cvia__kind_format(k, kind, sizeof(kind));
    tiers_list(T, tl, sizeof(tl));
    switch (k->type) {
    case CVIA_KIND_DEFAULT:
        snprintf(d->what, sizeof(d->what), "default: no policy (first touch, or the "
                 "process's own policy)");
        return 0;
    case CVIA_KIND_HBW:
    case CVIA_KIND_HBW_PREFERRED:
    case CVIA_KIND_DDR:
        g = cvia__tiers_find(T, k->type == CVIA_KIND_DDR ? "ddr" : "hbw");
        if (g < 0 && k->type == CVIA_KIND_HBW_PREFERRED) {
            d->fallback = 1;
            snprintf(d->what, sizeof(d->what), "default: no high-bandwidth tier "
                     "(tiers %.*s)", (int)sizeof(d->what) - 48, tl);
            return 0;
        }
        if (g < 0) {
            snprintf(err, errcap, "%s: no %s tier on this machine (tiers %s)", kind,
                     k->type == CVIA_KIND_DDR ? "ddr" : "high-bandwidth", tl);
            return -ENODEV;
        }
        tier_local(t, T, g, where, d->nodes);
        break;
    case CVIA_KIND_NODE:
        if (cvia__tiers_node_tier(T, k->node) < 0) {
            char all[64];
            hwloc_bitmap_list_snprintf(all, sizeof(all), hwloc_topology_get_topology_nodeset(t));
            snprintf(err, errcap, "%s: no NUMA node %u (nodes %s)", kind, k->node, all);
            return -ENODEV;
        }
        hwloc_bitmap_only(d->nodes, k->node);
        break;
    case CVIA_KIND_NEAR_NIC: {
        struct cvia_nic_list nl;
        struct cvia_nic *nic;
        int ddr = cvia__tiers_find(T, "ddr");
        if (cvia__nic_list(t, &nl) < 0)
            return -ENOMEM;
        if (!(nic = cvia__nic_find(&nl, k->nic))) {
            size_t off = 0;
            char names[128] = "";
            for (int i = 0; i < nl.n && off < sizeof(names); i++)
                off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
                                        i ? " " : "", nl.v[i].name);
            snprintf(err, errcap, "%s: no network interface '%s' in the topology "
                     "(interfaces: %s)", kind, k->nic, nl.n ? names : "none");
            cvia__nic_list_free(&nl);
            return -ENODEV;
        }
        if (!nic->local_known || hwloc_bitmap_iszero(nic->nodeset)) {
            /* attached to the whole machine: the process's own ddr */
            if (ddr >= 0)
                tier_local(t, T, ddr, where, d->nodes);
            else
                hwloc_bitmap_copy(d->nodes, hwloc_topology_get_topology_nodeset(t));
        } else {
            if (ddr >= 0)
                hwloc_bitmap_and(d->nodes, nic->nodeset, T->tier[ddr].nodes);
            if (hwloc_bitmap_iszero(d->nodes))
                hwloc_bitmap_copy(d->nodes, nic->nodeset);
        }
        cvia__nic_list_free(&nl);
        break;
    }
    default:
        snprintf(err, errcap, "unknown kind");
        return -EINVAL;
    }
    d->bind = 1;
    hwloc_bitmap_list_snprintf(l, sizeof(l), d->nodes);
    snprintf(d->what, sizeof(d->what), "%.80s: bind to node%s %.64s", kind,
             hwloc_bitmap_weight(d->nodes) > 1 ? "s" : "", l);
    return 0;
}
