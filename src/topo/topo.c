/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "topo/topo.h"
#include "topo/topo_cpu.h"
#include "util/log.h"
#include "util/param.h"

static const struct cvia_param topo_params[] = {
    { "TOPOLOGY", "", CVIA_PARAM_STRING, offsetof(struct cvia_topo_cfg, xml),
      "hwloc XML file (like HWLOC_XMLFILE), or a directory holding a Linux "
      "sysfs dump (like lstopo --input DIR), to use instead of this machine's "
      "topology, for the library and every tool.", 0, 0, NULL },
    { NULL }
};

const struct cvia_param_table cvia__topo_param_table = {
    .component = "topo", .prefix = "", .params = topo_params,
    .cfg_size = sizeof(struct cvia_topo_cfg),
};

int cvia__topo_open(hwloc_topology_t *topo_p, char *source, size_t cap)
{
    struct cvia_topo_cfg cfg;
    hwloc_topology_t t;
    int rc;

    if ((rc = cvia__param_load(&cvia__topo_param_table, &cfg)))
        return rc;
    if (hwloc_topology_init(&t) < 0)
        return -ENOMEM;
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (cfg.xml[0]) {
        struct stat st;
        if (access(cfg.xml, R_OK) < 0 || stat(cfg.xml, &st) < 0) {
            cvia_error(TOPO, "CVIA_TOPOLOGY: cannot read '%s': %s", cfg.xml,
                       strerror(errno));
            hwloc_topology_destroy(t);
            return -CVIA_ECONFIG;
        }
        if (S_ISDIR(st.st_mode)) {      /* a Linux sysfs dump, as lstopo --input DIR */
            char err[512];
            if ((rc = cvia__topo_load_fsroot(t, cfg.xml, err, sizeof(err)))) {
                cvia_error(TOPO, "CVIA_TOPOLOGY: %s", err);
                hwloc_topology_destroy(t);
                return rc;
            }
            goto loaded;
        }
        if (hwloc_topology_set_xml(t, cfg.xml) < 0) {
            cvia_error(TOPO, "CVIA_TOPOLOGY: '%s' is not an hwloc XML file", cfg.xml);
            hwloc_topology_destroy(t);
            return -CVIA_ETOPO;
        }
    }
    if (hwloc_topology_load(t) < 0) {
        cvia_error(TOPO, "hwloc cannot load the topology%s%s: %s",
                   cfg.xml[0] ? " from " : "", cfg.xml, strerror(errno));
        hwloc_topology_destroy(t);
        return -CVIA_ETOPO;
    }
loaded:
    if (source)
        snprintf(source, cap, "%s", cfg.xml[0] ? cfg.xml : "this machine");
    *topo_p = t;
    return 0;
}

static int cores_under(hwloc_topology_t t, hwloc_obj_t o)
{
    return hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset, cvia__topo_core_type(t));
}

void cvia__topo_summarize(hwloc_topology_t t, struct cvia_topo_summary *s)
{
    hwloc_obj_t o;

    memset(s, 0, sizeof(*s));
    s->packages   = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
    s->cores      = cvia__topo_ncores(t);
    s->pus        = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    s->numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    s->l1         = cvia__topo_ncaches(t, 1);
    s->l2         = cvia__topo_ncaches(t, 2);
    s->l3         = cvia__topo_ncaches(t, 3);
    o = NULL;
    while ((o = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_L2CACHE, o)) && !cvia__topo_cpu_cache(o))
        ;
    if (o) {
        s->l2_bytes = o->attr->cache.size;
        s->cores_per_l2 = cores_under(t, o);
    }
    o = NULL;
    while ((o = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_L3CACHE, o)) && !cvia__topo_cpu_cache(o))
        ;
    if (o) {
        s->l3_bytes = o->attr->cache.size;
        s->cores_per_l3 = cores_under(t, o);
    }
    o = NULL;
    while ((o = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, o))) {
        s->total_memory += o->attr->numanode.local_memory;
        if (o->subtype && (!strcasecmp(o->subtype, "MCDRAM") ||
                           !strcasecmp(o->subtype, "HBM")))
            s->numa_hbm++;
    }
    o = NULL;
    while ((o = hwloc_get_next_osdev(t, o)))
        if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK)
            s->nics++;
}
