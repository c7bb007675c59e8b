/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Kinds to placements, placements to mbind, and the shm segment's tier.
 *
 * Order of operations for a placed region (arena chunk or shm segment):
 * mmap the (still empty) file, mbind the mapping, then fallocate. For
 * tmpfs and memfd files mbind sets the file's shared policy, which the
 * kernel consults when it allocates a page of the file, fallocate
 * included; fallocate allocates every page at once, so a policy set after
 * it would only govern pages that do not exist. The decision is taken on
 * the topology of CVIA_TOPOLOGY when set: a node that the recorded machine
 * has and this one lacks is -ENODEV, never a silent move. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mempolicy.h>

#include <corevia/cvia_errno.h>
#include "mem/arena.h"
#include "mem/mem_tier.h"
#include "topo/topo.h"
#include "util/log.h"
#include "util/param.h"

#define MASK_WORDS (CVIA_MEM_NODES_MAX / (8 * sizeof(unsigned long)))

struct mem_place {
    int  used;
    int  mode;                          /* MPOL_BIND */
    unsigned long mask[MASK_WORDS];     /* OS node indices */
    char label[96];
};

static pthread_mutex_t mt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_place places[CVIA_MEM_PLACES_MAX] = {
    [0] = { .used = 1, .label = "default" },
};
static struct {
    int state;                  /* 0: not loaded; 1: ready; < 0: the error */
    int is_xml;
    char source[256];
    hwloc_topology_t topo;
    struct cvia_tiers tiers;
} mt;

/* fork(): a child must not inherit mt_lock held by another thread */
static pthread_once_t mt_once = PTHREAD_ONCE_INIT;
static void mt_atfork_prepare(void) { pthread_mutex_lock(&mt_lock); }
static void mt_atfork_parent(void)  { pthread_mutex_unlock(&mt_lock); }
static void mt_atfork_child(void)   { pthread_mutex_init(&mt_lock, NULL); }
static void mt_register_atfork(void)
{
    pthread_atfork(mt_atfork_prepare, mt_atfork_parent, mt_atfork_child);
}

/* --------------------------------------------------------------- tiers */

static int mt_load_locked(void)
{
    struct cvia_mem_cfg cfg;
    char err[256];
    int rc;

    if (mt.state)
        return mt.state < 0 ? mt.state : 0;
    pthread_once(&mt_once, mt_register_atfork);
    if ((rc = cvia__param_load(&cvia__mem_param_table, &cfg)) < 0)
        return rc;              /* not cached: the environment may be fixed */
    if ((rc = cvia__topo_open(&mt.topo, mt.source, sizeof(mt.source))) < 0) {
        mt.state = rc;
        return rc;
    }
    mt.is_xml = strcmp(mt.source, "this machine") != 0;
    if ((rc = cvia__tiers_build(mt.topo, cfg.tiers, &mt.tiers, err, sizeof(err))) < 0) {
        if (rc == -CVIA_ECONFIG)
            cvia_error(CONF, "CVIA_MEM_TIERS: invalid value '%s' (%s)", cfg.tiers, err);
        else
            cvia_error(MEM, "memory tiers of %s: %s", mt.source, err);
        hwloc_topology_destroy(mt.topo);
        mt.topo = NULL;
        mt.state = rc;
        return rc;
    }
    mt.state = 1;
    return 0;
}

int cvia__mem_tiers(hwloc_topology_t *t_p, const struct cvia_tiers **tiers_p)
{
    int rc;

    pthread_mutex_lock(&mt_lock);
    rc = mt_load_locked();
    pthread_mutex_unlock(&mt_lock);
    if (rc == 0) {
        *t_p = mt.topo;
        *tiers_p = &mt.tiers;
    }
    return rc;
}

/* ------------------------------------------------------------ policies */

static long mt_mbind(void *addr, size_t len, int mode, const unsigned long *mask)
{
    return syscall(SYS_mbind, addr, len, mode, mask, (unsigned long)CVIA_MEM_NODES_MAX + 1, 0u);
}

/* Nodes this process may allocate on (cpuset cgroup, online nodes). */
static int mt_mems_allowed(unsigned long *mask)
{
    int mode;

    memset(mask, 0, MASK_WORDS * sizeof(*mask));
    if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)CVIA_MEM_NODES_MAX + 1,
                NULL, (unsigned long)MPOL_F_MEMS_ALLOWED) < 0)
        return -errno;
    return 0;
}

static void mask_from_bitmap(hwloc_const_bitmap_t b, unsigned long *mask)
{
    int i;

    memset(mask, 0, MASK_WORDS * sizeof(*mask));
    hwloc_bitmap_foreach_begin(i, b) {
        if (i < CVIA_MEM_NODES_MAX)
            mask[(unsigned)i / (8 * sizeof(long))] |= 1ul << ((unsigned)i % (8 * sizeof(long)));
    } hwloc_bitmap_foreach_end();
}

static int mask_isset(const unsigned long *mask, unsigned i)
{
    return i < CVIA_MEM_NODES_MAX &&
           (mask[i / (8 * sizeof(long))] >> (i % (8 * sizeof(long)))) & 1;
}

/* The PUs this process may run on, as hwloc sees CPU numbers. */
static hwloc_bitmap_t mt_where(void)
{
    hwloc_bitmap_t w = hwloc_bitmap_alloc();
    cpu_set_t set;

    if (!w)
        return NULL;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set))
                hwloc_bitmap_set(w, (unsigned)i);
    return w;
}

/* The place for (mode, mask), added if new. Called with mt_lock. */
static int mt_place_get(int mode, const unsigned long *mask, const char *label)
{
    int free_slot = -1;

    for (int p = 1; p < CVIA_MEM_PLACES_MAX; p++) {
        if (!places[p].used) {
            if (free_slot < 0)
                free_slot = p;
            continue;
        }
        if (places[p].mode == mode && !memcmp(places[p].mask, mask, sizeof(places[p].mask)))
            return p;
    }
    if (free_slot < 0) {
        cvia_warn_once(MEM, "more than %d distinct memory placements; using the "
                       "default one for the others", CVIA_MEM_PLACES_MAX - 1);
        return 0;
    }
    places[free_slot].mode = mode;
    memcpy(places[free_slot].mask, mask, sizeof(places[free_slot].mask));
    snprintf(places[free_slot].label, sizeof(places[free_slot].label), "%s", label);
    places[free_slot].used = 1;
    return free_slot;
}

int cvia__mem_kind_place(const char *kind, const char *what, int *place_p)
{
    static int warned_fallback, errored[8];
    struct cvia_tier_decision d = { 0 };
    struct cvia_kind k;
    unsigned long mask[MASK_WORDS], allowed[MASK_WORDS];
    hwloc_bitmap_t where = NULL;
    char err[256], label[96], nodes[64];
    int rc;

    if (cvia__kind_parse(kind, &k) < 0) {
        cvia_error(MEM, "%s: unknown memory kind '%s' (expected default, hbw, "
                   "hbw-preferred, ddr, node:N or near-nic:IFNAME)", what, kind);
        return -EINVAL;
    }
    if (k.type == CVIA_KIND_DEFAULT) {
        *place_p = 0;
        return 0;
    }
    pthread_mutex_lock(&mt_lock);
    if ((rc = mt_load_locked()) < 0)
        goto out;
    if (!(where = mt_where())) {
        rc = -ENOMEM;
        goto out;
    }
    rc = cvia__tiers_decide(mt.topo, &mt.tiers, &k, where, &d, err, sizeof(err));
    if (rc < 0) {
        if (!errored[k.type]) {     /* said once per kind: callers may probe */
            errored[k.type] = 1;
            cvia_error(MEM, "%s: %s%s%s", what, err, mt.is_xml ? " in " : "",
                       mt.is_xml ? mt.source : "");
        }
        goto out;
    }
    if (!d.bind) {
        if (d.fallback && !warned_fallback) {
            warned_fallback = 1;
            cvia_warn(MEM, "%s: hbw-preferred: no high-bandwidth memory on %s; "
                      "using default memory", what, mt.is_xml ? mt.source : "this machine");
        }
        *place_p = 0;
        goto out;
    }
    mask_from_bitmap(d.nodes, mask);
    if (mt_mems_allowed(allowed) == 0) {
        for (unsigned w = 0; w < MASK_WORDS; w++)
            if (mask[w] & ~allowed[w]) {
                hwloc_bitmap_list_snprintf(nodes, sizeof(nodes), d.nodes);
                cvia_error(MEM, "%s: %s: node(s) %s %s", what, kind, nodes,
                           mt.is_xml ? "of the recorded topology are not on this machine "
                                       "(CVIA_TOPOLOGY decides, this machine allocates)"
                                     : "are not allowed to this process (cpuset)");
                rc = -ENODEV;
                goto out;
            }
    }
    hwloc_bitmap_list_snprintf(nodes, sizeof(nodes), d.nodes);
    snprintf(label, sizeof(label), "%s:%s", kind, nodes);
    *place_p = mt_place_get(MPOL_BIND, mask, label);
out:
    pthread_mutex_unlock(&mt_lock);
    hwloc_bitmap_free(where);
    hwloc_bitmap_free(d.nodes);
    return rc;
}

int cvia__mem_place_known(int place)
{
    int ok;

    if (place < 0 || place >= CVIA_MEM_PLACES_MAX)
        return 0;
    pthread_mutex_lock(&mt_lock);
    ok = places[place].used;
    pthread_mutex_unlock(&mt_lock);
    return ok;
}

const char *cvia__mem_place_label(int place)
{
    return place >= 0 && place < CVIA_MEM_PLACES_MAX && places[place].used
           ? places[place].label : "?";
}

int64_t cvia__mem_node_free(unsigned os)
{
    char path[96], line[256];
    int64_t free_kb = -1, inact = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/meminfo", os);
    if (!(f = fopen(path, "re")))
        return -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned n;
        long long kb;
        char key[64];
        if (sscanf(line, "Node %u %63[^:]: %lld kB", &n, key, &kb) != 3)
            continue;
        if (!strcmp(key, "MemFree"))
            free_kb = kb;
        else if (!strcmp(key, "Inactive(file)"))
            inact = kb;
    }
    fclose(f);
    return free_kb < 0 ? -1 : (free_kb + inact) * 1024;
}

int cvia__mem_place_apply(void *addr, size_t len, int place)
{
    struct mem_place pl;
    uint64_t room = 0;
    int known = 0;

    if (place == 0)
        return 0;
    if (place < 0 || place >= CVIA_MEM_PLACES_MAX)
        return -EINVAL;
    pthread_mutex_lock(&mt_lock);
    pl = places[place];
    pthread_mutex_unlock(&mt_lock);
    if (!pl.used)
        return -EINVAL;
    /* A bound allocation the nodes cannot hold would wake the OOM killer
     * (constrained to these nodes) instead of failing: refuse it here. */
    for (unsigned i = 0; i < CVIA_MEM_NODES_MAX; i++) {
        int64_t f;
        if (!mask_isset(pl.mask, i) || (f = cvia__mem_node_free(i)) < 0)
            continue;
        room += (uint64_t)f;
        known = 1;
    }
    if (known && room < len) {
        cvia_info(MEM, "%s: %zu bytes asked, %" PRIu64 " free on its node(s)", pl.label,
                  len, room);
        return -ENOMEM;
    }
    if (mt_mbind(addr, len, pl.mode, pl.mask) < 0) {
        int e = errno;
        cvia_error(MEM, "mbind %s (%zu bytes): %s", pl.label, len, strerror(e));
        return -e;
    }
    return 0;
}

int cvia__mem_shm_place(void *addr, size_t len)
{
    static int warned;
    struct cvia_mem_cfg cfg;
    int place, rc;

    if ((rc = cvia__param_load(&cvia__mem_param_table, &cfg)) < 0)
        return rc;
    if (!cfg.shm_kind[0] || !strcmp(cfg.shm_kind, "default"))
        return 0;               /* no topology loaded, nothing to do */
    if ((rc = cvia__mem_kind_place(cfg.shm_kind, "CVIA_MEM_SHM_KIND", &place)) < 0)
        return rc == -EINVAL ? -CVIA_ECONFIG : rc;
    rc = cvia__mem_place_apply(addr, len, place);
    if (rc == -ENOMEM && !strcmp(cfg.shm_kind, "hbw-preferred")) {
        if (!warned) {
            warned = 1;
            cvia_warn(MEM, "CVIA_MEM_SHM_KIND=hbw-preferred: no room for the %zu-byte "
                      "segment on %s; using default memory", len,
                      cvia__mem_place_label(place));
        }
        return 0;
    }
    if (rc == -ENOMEM)
        cvia_error(MEM, "CVIA_MEM_SHM_KIND=%s: no room for the %zu-byte segment on %s",
                   cfg.shm_kind, len, cvia__mem_place_label(place));
    if (rc == 0 && place)
        cvia_info(MEM, "shm segment (%zu bytes) on %s", len, cvia__mem_place_label(place));
    return rc;
}
