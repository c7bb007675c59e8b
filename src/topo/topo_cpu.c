/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "topo/topo.h"
#include "topo/topo_cpu.h"

static const char *const rel_names[CVIA_REL_COUNT] = {
    "same", "l2", "l3", "numa", "package", "remote",
};

const char *cvia__topo_rel_name(int rel)
{
    return rel >= 0 && rel < CVIA_REL_COUNT ? rel_names[rel] : NULL;
}

int cvia__topo_rel_parse(const char *name)
{
    for (int i = 0; i < CVIA_REL_COUNT; i++)
        if (!strcmp(name, rel_names[i]))
            return i;
    return -1;
}

/* A directory is a fake Linux root (sys/, proc/): hwloc's linux backend
 * reads it when HWLOC_FSROOT names it, as lstopo --input DIR does. The x86
 * backend would read this machine's CPUID instead, so it is left out. */
int cvia__topo_load_fsroot(hwloc_topology_t t, const char *dir, char *err, size_t errcap)
{
    char probe[4096];
    const char *old = getenv("HWLOC_FSROOT");
    char *saved = old ? strdup(old) : NULL;
    int rc;

    snprintf(probe, sizeof(probe), "%s/sys/devices/system/cpu", dir);
    if (access(probe, R_OK) < 0) {
        snprintf(err, errcap, "'%s' is a directory but not a Linux sysfs dump "
                 "(no sys/devices/system/cpu)", dir);
        free(saved);
        return -CVIA_ETOPO;
    }
    setenv("HWLOC_FSROOT", dir, 1);
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
    rc = hwloc_topology_load(t);
    if (saved) {
        setenv("HWLOC_FSROOT", saved, 1);
        free(saved);
    } else {
        unsetenv("HWLOC_FSROOT");
    }
    if (rc < 0) {
        snprintf(err, errcap, "hwloc cannot load the sysfs dump '%s': %s", dir,
                 strerror(errno));
        return -CVIA_ETOPO;
    }
    return 0;
}

int cvia__topo_open_path(const char *path, hwloc_topology_t *topo_p, char *err,
                         size_t errcap)
{
    hwloc_topology_t t;
    struct stat st;
    int rc;

    if (!path) {
        char source[256];
        if ((rc = cvia__topo_open(&t, source, sizeof(source)))) {
            snprintf(err, errcap, "cannot load the topology (%s)", cvia_strerror(rc));
            return rc;
        }
        *topo_p = t;
        return 0;
    }
    if (stat(path, &st) < 0 || access(path, R_OK) < 0) {
        rc = -errno;
        snprintf(err, errcap, "cannot read topology '%s': %s", path, strerror(errno));
        return rc;
    }
    if (hwloc_topology_init(&t) < 0) {
        snprintf(err, errcap, "out of memory");
        return -ENOMEM;
    }
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (S_ISDIR(st.st_mode)) {
        if ((rc = cvia__topo_load_fsroot(t, path, err, errcap)))
            goto err_destroy;
    } else {
        if (hwloc_topology_set_xml(t, path) < 0) {
            snprintf(err, errcap, "'%s' is not an hwloc XML file", path);
            rc = -CVIA_ETOPO;
            goto err_destroy;
        }
        if (hwloc_topology_load(t) < 0) {
            snprintf(err, errcap, "hwloc cannot load '%s': %s", path, strerror(errno));
            rc = -CVIA_ETOPO;
            goto err_destroy;
        }
    }
    if (cvia__topo_ncores(t) <= 0) {
        snprintf(err, errcap, "topology '%s' has no cores", path);
        rc = -CVIA_ETOPO;
        goto err_destroy;
    }
    *topo_p = t;
    return 0;

err_destroy:
    hwloc_topology_destroy(t);
    return rc;
}

hwloc_obj_type_t cvia__topo_core_type(hwloc_topology_t t)
{
    return hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
}

int cvia__topo_ncores(hwloc_topology_t t)
{
    return hwloc_get_nbobjs_by_type(t, cvia__topo_core_type(t));
}

hwloc_obj_t cvia__topo_core(hwloc_topology_t t, int core)
{
    return core < 0 ? NULL : hwloc_get_obj_by_type(t, cvia__topo_core_type(t), (unsigned)core);
}

int cvia__topo_core_of_pu(hwloc_topology_t t, unsigned pu)
{
    hwloc_obj_t p = hwloc_get_pu_obj_by_os_index(t, pu);
    hwloc_obj_t c = !p || cvia__topo_core_type(t) == HWLOC_OBJ_PU ? p
                    : hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, p);
    return c ? (int)c->logical_index : -1;
}

int cvia__topo_core_first_pu(hwloc_topology_t t, int core)
{
    hwloc_obj_t c = cvia__topo_core(t, core);
    return c ? hwloc_bitmap_first(c->cpuset) : -1;
}

static hwloc_obj_type_t cache_type(unsigned level)
{
    static const hwloc_obj_type_t d[] = { HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
        HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE };
    return level >= 1 && level <= 5 ? d[level - 1] : HWLOC_OBJ_TYPE_MAX;
}

int cvia__topo_cpu_cache(hwloc_obj_t o)
{
    return o && hwloc_obj_type_is_cache(o->type) &&
           !(o->subtype && !strcasecmp(o->subtype, "MemorySideCache"));
}

hwloc_obj_t cvia__topo_core_cache(hwloc_topology_t t, int core, unsigned level)
{
    hwloc_obj_t c = cvia__topo_core(t, core), x;
    hwloc_obj_type_t ty = cache_type(level);

    if (!c || ty == HWLOC_OBJ_TYPE_MAX)
        return NULL;
    x = hwloc_get_ancestor_obj_by_type(t, ty, c);
    return cvia__topo_cpu_cache(x) ? x : NULL;
}

int cvia__topo_ncaches(hwloc_topology_t t, unsigned level)
{
    hwloc_obj_t x = NULL;
    int n = 0;

    if (cache_type(level) == HWLOC_OBJ_TYPE_MAX)
        return 0;
    while ((x = hwloc_get_next_obj_by_type(t, cache_type(level), x)))
        n += cvia__topo_cpu_cache(x);
    return n;
}

unsigned cvia__topo_last_level(hwloc_topology_t t)
{
    for (unsigned l = 5; l >= 1; l--)
        if (cvia__topo_ncaches(t, l) > 0)
            return l;
    return 0;
}

void cvia__topo_cores_in(hwloc_topology_t t, hwloc_const_cpuset_t cpuset,
                         hwloc_bitmap_t cores_out)
{
    hwloc_obj_t c = NULL;

    hwloc_bitmap_zero(cores_out);
    while ((c = hwloc_get_next_obj_by_type(t, cvia__topo_core_type(t), c)))
        if (!hwloc_bitmap_iszero(c->cpuset) && hwloc_bitmap_isincluded(c->cpuset, cpuset))
            hwloc_bitmap_set(cores_out, c->logical_index);
}

void cvia__topo_cores_cpuset(hwloc_topology_t t, hwloc_const_bitmap_t cores,
                             hwloc_cpuset_t out)
{
    int i;

    hwloc_bitmap_zero(out);
    hwloc_bitmap_foreach_begin(i, cores) {
        hwloc_obj_t c = cvia__topo_core(t, i);
        if (c)
            hwloc_bitmap_or(out, out, c->cpuset);
    } hwloc_bitmap_foreach_end();
}

int cvia__topo_cache_sharers(hwloc_topology_t t, int core, unsigned level,
                             hwloc_bitmap_t out)
{
    hwloc_obj_t cache = cvia__topo_core_cache(t, core, level);

    hwloc_bitmap_zero(out);
    if (!cache)
        return 0;
    cvia__topo_cores_in(t, cache->cpuset, out);
    return hwloc_bitmap_weight(out);
}

int cvia__topo_core_package(hwloc_topology_t t, int core)
{
    hwloc_obj_t c = cvia__topo_core(t, core);
    hwloc_obj_t p = c ? hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, c) : NULL;
    return p ? (int)p->logical_index : -1;
}

hwloc_const_cpuset_t cvia__topo_node_locality(hwloc_obj_t node)
{
    for (hwloc_obj_t o = node; o; o = o->parent)
        if (o->cpuset && !hwloc_bitmap_iszero(o->cpuset))
            return o->cpuset;
    return NULL;
}

/* Memory a subtype marks as other than ordinary: never a core's own node
 * while an ordinary one is as local (MCDRAM, HBM, NVM, CXL, GPU memory). */
static int node_special(hwloc_obj_t n)
{
    return n->subtype && *n->subtype && strcasecmp(n->subtype, "DRAM") != 0;
}

hwloc_obj_t cvia__topo_node_of(hwloc_topology_t t, hwloc_const_cpuset_t set)
{
    hwloc_obj_t n = NULL, best = NULL;
    int bestw = 0;

    if (!set || hwloc_bitmap_iszero(set))
        return NULL;
    /* by locality, not by tree position: a node may sit above the package
     * (one node for the machine), below it (several per package), beside
     * the cores in a group (SNC, KNL clusters) or at the root (fake KNL) */
    while ((n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n))) {
        hwloc_const_cpuset_t loc = cvia__topo_node_locality(n);
        int w;
        if (!loc || !hwloc_bitmap_isincluded(set, loc))
            continue;
        w = hwloc_bitmap_weight(loc);
        if (!best || w < bestw ||
            (w == bestw && node_special(best) && !node_special(n)) ||
            (w == bestw && node_special(best) == node_special(n) &&
             n->os_index < best->os_index)) {
            best = n;
            bestw = w;
        }
    }
    return best;
}

hwloc_obj_t cvia__topo_core_node(hwloc_topology_t t, int core)
{
    hwloc_obj_t c = cvia__topo_core(t, core);
    return c ? cvia__topo_node_of(t, c->cpuset) : NULL;
}

int cvia__topo_core_numa(hwloc_topology_t t, int core)
{
    hwloc_obj_t n = cvia__topo_core_node(t, core);
    return n ? (int)n->os_index : -1;
}

/* The deepest ancestor of @core that is a Die (AMD's CCD/Magny-Cours die,
 * Intel's dies), or NULL. */
static hwloc_obj_t core_die(hwloc_topology_t t, hwloc_obj_t core)
{
    return hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_DIE, core);
}

int cvia__topo_relation(hwloc_topology_t t, int a, int b)
{
    unsigned last = cvia__topo_last_level(t);
    hwloc_obj_t ca, cb, na, nb, pa, pb, da, db;

    if (a == b)
        return CVIA_REL_SAME;
    ca = cvia__topo_core(t, a);
    cb = cvia__topo_core(t, b);
    if (!ca || !cb)
        return CVIA_REL_REMOTE;
    na = cvia__topo_core_node(t, a);
    nb = cvia__topo_core_node(t, b);
    /* the nearest shared cache decides, named by its level (a KNL tile's
     * L2 is "l2" though it is the last level); a shared L1 counts as l2.
     * A cache shared across NUMA nodes (one L3 per package under sub-NUMA
     * clustering) does not bring the cores of the other node nearer than
     * those of the own node: such a pair is decided below. */
    for (unsigned l = 1; l <= last; l++) {
        hwloc_obj_t x = cvia__topo_core_cache(t, a, l);
        if (!x || !hwloc_bitmap_isincluded(cb->cpuset, x->cpuset))
            continue;
        if (na && nb && na != nb)
            break;
        return l >= 3 ? CVIA_REL_L3 : CVIA_REL_L2;
    }
    /* packages first: a NUMA node that spans packages (a recording without
     * NUMA information, hwloc's single node) does not make them near */
    pa = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, ca);
    pb = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, cb);
    if (pa && pb && pa != pb)
        return CVIA_REL_REMOTE;
    da = core_die(t, ca);
    db = core_die(t, cb);
    if (na && na == nb && (!da || !db || da == db))
        return CVIA_REL_NUMA;
    if (pa && pb)
        return CVIA_REL_PACKAGE;
    return CVIA_REL_REMOTE;
}
