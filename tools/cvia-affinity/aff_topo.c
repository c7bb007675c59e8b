/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* `cvia-affinity topo`: the static collector (paper 003, 3.1), and the
 * interrupt placement it proposes, applied and restored. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "topo/topo.h"
#include "aff.h"

#define STATE_FORMAT "corevia-affinity-irq-state/1"
#define SUB "topo"

/* ---- environment shared with the daemon ----------------------------------- */

int aff_env_open(struct aff_env *e, const char *sub)
{
    char err[512];
    int rc;

    e->live = !e->topology;
    e->root = e->proc_root ? e->proc_root : (e->live && !e->irqs ? "/" : NULL);
    if ((rc = cvia__topo_open_path(e->topology, &e->topo, err, sizeof(err)))) {
        if (e->topology)
            aff_err(sub, "%s", err);
        /* else cvia__topo_open has said why */
        return -1;
    }
    if (cvia__nic_list(e->topo, &e->nics)) {
        aff_err(sub, "out of memory");
        goto err_topo;
    }
    if (e->irqs && aff_irqs_load(e->irqs, e->topo, &e->nics, err, sizeof(err))) {
        aff_err(sub, "%s", err);
        goto err_nics;
    }
    if (!e->irqs && e->root)
        for (int i = 0; i < e->nics.n; i++) {
            rc = cvia__nic_read_irqs(e->root, &e->nics.v[i]);
            if (rc < 0 && rc != -ENODEV && rc != -ENOENT && e->proc_root) {
                aff_err(sub, "interrupts of %s under %s: %s", e->nics.v[i].name, e->root,
                        strerror(-rc));
                goto err_nics;
            }
        }
    if (e->profile) {
        if (aff_profile_load(e->profile, &e->prof, err, sizeof(err))) {
            aff_err(sub, "%s", err);
            goto err_nics;
        }
        e->have_prof = 1;
    }
    if (!(e->proposed = calloc((size_t)e->nics.n + 1, sizeof(int))) ||
        aff_propose_irq_cores(e->topo, &e->nics, e->proposed)) {
        aff_err(sub, "out of memory");
        goto err_nics;
    }
    return 0;

err_nics:
    free(e->proposed);
    e->proposed = NULL;
    cvia__nic_list_free(&e->nics);
err_topo:
    hwloc_topology_destroy(e->topo);
    e->topo = NULL;
    return -1;
}

void aff_env_close(struct aff_env *e)
{
    free(e->proposed);
    e->proposed = NULL;
    cvia__nic_list_free(&e->nics);
    if (e->topo)
        hwloc_topology_destroy(e->topo);
    e->topo = NULL;
}

int aff_nic_anchor(const struct aff_env *e, int i, int prefer_current, char *why, size_t cap)
{
    const struct cvia_nic *nic = &e->nics.v[i];
    hwloc_bitmap_t all = hwloc_bitmap_alloc();
    int core = -1, known = 0;

    snprintf(why, cap, "no interrupt lines known");
    if (!all || nic->nirqs == 0) {
        hwloc_bitmap_free(all);
        /* a recorded PCI device has interrupts, just not in the file */
        if (!e->live && nic->pci[0] && !e->irqs) {
            snprintf(why, cap, "proposed (interrupt lines not recorded)");
            return e->proposed[i];
        }
        return -1;
    }
    /* where the kernel actually sends them, where it says so */
    for (int k = 0; k < nic->nirqs; k++) {
        hwloc_const_bitmap_t b = !hwloc_bitmap_iszero(nic->irqs[k].effective)
                                 ? nic->irqs[k].effective : nic->irqs[k].affinity;
        if (!hwloc_bitmap_iszero(b)) {
            hwloc_bitmap_or(all, all, b);
            known = 1;
        }
    }
    if (prefer_current && known) {
        hwloc_bitmap_t cores = hwloc_bitmap_alloc();
        hwloc_bitmap_t pus = hwloc_bitmap_alloc();
        int c = -1;
        if (cores && pus) {
            /* confined to one core's PUs: that core handles them */
            hwloc_bitmap_foreach_begin(c, all) {
                int k = cvia__topo_core_of_pu(e->topo, (unsigned)c);
                if (k >= 0)
                    hwloc_bitmap_set(cores, k);
            } hwloc_bitmap_foreach_end();
            if (hwloc_bitmap_weight(cores) == 1) {
                core = hwloc_bitmap_first(cores);
                snprintf(why, cap, "current interrupt affinity");
            }
        }
        hwloc_bitmap_free(cores);
        hwloc_bitmap_free(pus);
    }
    if (core < 0) {
        core = e->proposed[i];
        snprintf(why, cap, "%s", prefer_current && known
                 ? "proposed (interrupts now spread over several cores)" : "proposed");
    }
    hwloc_bitmap_free(all);
    return core;
}

int aff_model_from_env(const struct aff_env *e, struct aff_model *m, int prefer_current)
{
    memset(m, 0, sizeof(*m));
    m->topo = e->topo;
    m->ncores = cvia__topo_ncores(e->topo);
    for (int i = 0; i < e->nics.n && m->ndev < AFF_MAX_DEV; i++) {
        struct aff_dev *d = &m->dev[m->ndev];
        const struct cvia_nic *nic = &e->nics.v[i];
        snprintf(d->name, sizeof(d->name), "%s", nic->name);
        snprintf(d->pci, sizeof(d->pci), "%s", nic->pci);
        if (!(d->local = hwloc_bitmap_dup(nic->cpuset))) {
            aff_model_free(m);
            return -ENOMEM;
        }
        d->nirqs = nic->nirqs;
        d->anchor = aff_nic_anchor(e, i, prefer_current, d->anchor_why, sizeof(d->anchor_why));
        d->prof = e->have_prof ? aff_profile_match(&e->prof, nic->name, NULL) : NULL;
        m->ndev++;
    }
    return 0;
}

int aff_irqbalance_pid(const char *root)
{
    char path[4096], comm[64];
    DIR *d;
    struct dirent *de;
    int pid = 0;

    snprintf(path, sizeof(path), "%s/proc", root && strcmp(root, "/") ? root : "");
    if (!(d = opendir(path)))
        return 0;
    while (!pid && (de = readdir(d))) {
        FILE *f;
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "%s/proc/%s/comm", root && strcmp(root, "/") ? root : "",
                 de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (fgets(comm, sizeof(comm), f) && !strcmp(strtok(comm, "\n") ? comm : "", "irqbalance"))
            pid = atoi(de->d_name);
        fclose(f);
    }
    closedir(d);
    return pid;
}

/* ---- report ---------------------------------------------------------------- */

static void topo_usage(FILE *f)
{
    fprintf(f,
"Usage: cvia-affinity topo [OPTIONS]\n"
"The static collector: packages, caches and the cores that share them, NUMA\n"
"nodes, network interfaces with their PCI locality, interrupt lines and\n"
"current smp_affinity; proposes one interrupt core per device on its local\n"
"package, and the groups of cores for its communication processes, best first.\n"
"\n"
"  -t, --topology FILE|DIR  hwloc XML file or Linux sysfs dump to analyse instead of\n"
"                     this machine (default: CVIA_TOPOLOGY, else this machine)\n"
"  -i, --irqs FILE    interrupt lines per interface, JSON: {\"ib0\": [60, 61]} or\n"
"                     {\"eth2\": {\"irqs\": [..], \"local_cpus\": \"0-5\",\n"
"                     \"smp_affinity\": \"0-23\"}} (default: read from this machine)\n"
"  -p, --profile FILE order the core groups as the analyser measured them\n"
"                     (default: l2, l3, same, numa, package, remote)\n"
"      --proc-root DIR  read (and with --apply write) proc/ and sys/ under DIR\n"
"                     (default: /)\n"
"  -a, --apply        set each device's interrupt lines to its proposed core,\n"
"                     saving the old values in the state file first\n"
"  -r, --restore      put back the values saved by --apply, remove the state file\n"
"  -s, --state FILE   state file of --apply/--restore (default:\n"
"                     /run/cvia-affinity/irq-state.json under --proc-root)\n"
"  -n, --dry-run      with --apply/--restore: say what would change, change nothing\n"
"  -j, --json         JSON output\n"
"  -R, --relations    also list, for every core, the others by relation (same,\n"
"                     l2, l3, numa, package, remote): what every decision uses\n"
"  -h, --help         this help\n");
}

static void fmt_pus_of_core(hwloc_topology_t t, int core, char *buf, size_t cap)
{
    hwloc_obj_t c = cvia__topo_core(t, core);
    aff_fmt_pus(c ? c->cpuset : NULL, buf, cap);
}

/* NUMA node @n lies in package @pk: its locality is inside the package's. */
static int node_in(hwloc_obj_t n, hwloc_obj_t pk)
{
    hwloc_const_cpuset_t loc = cvia__topo_node_locality(n);
    return loc && hwloc_bitmap_isincluded(loc, pk->cpuset);
}

/* The NUMA node after @prev (NULL: the first) by OS index: listings must
 * not follow hwloc's logical order, which a hwloc 1.x re-export of the
 * same machine changes for nodes of one locality. */
static hwloc_obj_t next_node_os(hwloc_topology_t t, hwloc_obj_t prev)
{
    hwloc_obj_t n = NULL, best = NULL;

    while ((n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)))
        if ((!prev || n->os_index > prev->os_index) &&
            (!best || n->os_index < best->os_index))
            best = n;
    return best;
}

/* "NUMA node OS[ subtype]: cores ... (PUs ...)[, packages ...]" */
static void print_node(hwloc_topology_t t, hwloc_obj_t n, const char *indent,
                       hwloc_bitmap_t cores, char *buf, size_t cap)
{
    hwloc_const_cpuset_t loc = cvia__topo_node_locality(n);
    int npk = loc ? hwloc_get_nbobjs_inside_cpuset_by_type(t, loc, HWLOC_OBJ_PACKAGE) : 0;

    hwloc_bitmap_zero(cores);
    if (loc)
        cvia__topo_cores_in(t, loc, cores);
    aff_fmt_cores(t, cores, buf, cap);
    printf("%sNUMA node %u%s%s: %s", indent, n->os_index, n->subtype ? " " : "",
           n->subtype ? n->subtype : "", loc ? buf : "no CPU locality recorded");
    if (!*indent && npk > 1)
        printf(", spans %d packages", npk);
    else if (!*indent && hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE) <= 0)
        printf(", no package recorded");
    printf("\n");
}

static void report_text(struct aff_env *e, const struct aff_model *m, int irqb)
{
    hwloc_topology_t t = e->topo;
    struct cvia_topo_summary s;
    hwloc_bitmap_t cores = hwloc_bitmap_alloc();
    unsigned last = cvia__topo_last_level(t);
    char buf[1024];
    hwloc_obj_t pk = NULL;

    cvia__topo_summarize(t, &s);
    printf("topology  %s\n", e->topology ? e->topology : "this machine");
    printf("          %d package(s), %d cores, %d PUs, %d NUMA node(s)\n", s.packages,
           s.cores, s.pus, s.numa_nodes);
    printf("          cores, packages and caches by hwloc logical index; PUs and NUMA "
           "nodes by OS index\n");
    for (unsigned l = 1; l <= last; l++) {
        hwloc_obj_t c = cvia__topo_core_cache(t, 0, l);
        int n = cvia__topo_cache_sharers(t, 0, l, cores);
        if (c)
            printf("          L%u: %d x %llu KiB, %d core(s) each\n", l,
                   cvia__topo_ncaches(t, l),
                   (unsigned long long)(c->attr->cache.size >> 10), n);
    }
    while ((pk = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, pk))) {
        hwloc_obj_t n = NULL, l3 = NULL;
        cvia__topo_cores_in(t, pk->cpuset, cores);
        aff_fmt_cores(t, cores, buf, sizeof(buf));
        printf("package %u: %s\n", pk->logical_index, buf);
        while ((n = next_node_os(t, n)))
            if (node_in(n, pk))
                print_node(t, n, "  ", cores, buf, sizeof(buf));
        if (last >= 2 && cvia__topo_core_cache(t, 0, last))
            while ((l3 = hwloc_get_next_obj_by_type(t, cvia__topo_core_cache(t, 0, last)->type,
                                                    l3)))
                if (cvia__topo_cpu_cache(l3) && hwloc_bitmap_isincluded(l3->cpuset, pk->cpuset)) {
                    cvia__topo_cores_in(t, l3->cpuset, cores);
                    aff_fmt_cores(t, cores, buf, sizeof(buf));
                    printf("  L%u #%u: %s\n", last, l3->logical_index, buf);
                }
    }
    /* nodes no single package holds: one node for the machine (a package
     * inside a NUMA node), or no package recorded at all */
    {
        hwloc_obj_t n = NULL;
        while ((n = next_node_os(t, n))) {
            int inside = 0;
            pk = NULL;
            while ((pk = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, pk)))
                inside |= node_in(n, pk);
            if (!inside)
                print_node(t, n, "", cores, buf, sizeof(buf));
        }
    }
    if (!e->nics.n)
        printf("network interfaces: none in this topology%s\n",
               e->live ? " (virtual ones such as veth and lo have no locality)" : "");
    for (int i = 0; i < e->nics.n; i++) {
        const struct cvia_nic *nic = &e->nics.v[i];
        const struct aff_dev *d = &m->dev[i];
        struct aff_group g[AFF_MAX_GROUPS];
        int ng;

        printf("interface %s", nic->name);
        if (nic->pci[0])
            printf(": PCI %s %s", nic->pci, nic->kind);
        else
            printf(": %s", nic->kind);
        if (nic->siblings[0])
            printf(" (with %s)", nic->siblings);
        printf("\n");
        aff_fmt_pus(nic->cpuset, buf, sizeof(buf));
        if (nic->local_known) {
            printf("  local:");
            if (nic->package >= 0)
                printf(" package %d,", nic->package);
            if (nic->numa >= 0)
                printf(" NUMA node %d,", nic->numa);
            printf(" PUs %s\n", buf);
        } else
            printf("  local: the whole machine (no narrower locality recorded)\n");
        if (!nic->nirqs) {
            printf("  interrupts: none %s\n", e->root || e->irqs ? "found"
                   : "known (recorded topologies have none: give --irqs FILE)");
        } else {
            printf("  interrupts:");
            for (int k = 0; k < nic->nirqs; k++) {
                char eff[256];
                aff_fmt_pus(nic->irqs[k].affinity, buf, sizeof(buf));
                aff_fmt_pus(nic->irqs[k].effective, eff, sizeof(eff));
                printf(" %u%s%s -> %s", nic->irqs[k].irq, nic->irqs[k].action[0] ? " " : "",
                       nic->irqs[k].action, hwloc_bitmap_iszero(nic->irqs[k].affinity)
                       ? "?" : buf);
                if (!hwloc_bitmap_iszero(nic->irqs[k].effective) &&
                    !hwloc_bitmap_isequal(nic->irqs[k].effective, nic->irqs[k].affinity))
                    printf(" (now %s)", eff);
                if (k + 1 < nic->nirqs)
                    printf(",");
            }
            printf("\n");
        }
        fmt_pus_of_core(t, e->proposed[i], buf, sizeof(buf));
        printf("  proposed interrupt core: core %d (PU %d)%s\n", e->proposed[i],
               cvia__topo_core_first_pu(t, e->proposed[i]),
               nic->nirqs ? "" : ", where its interrupts should go");
        if (d->anchor >= 0 && d->anchor != e->proposed[i])
            printf("  interrupts are now handled by core %d (%s)\n", d->anchor, d->anchor_why);
        ng = aff_groups(m, d, g);
        if (ng > 0) {
            int pc = hwloc_bitmap_first(g[0].cores);
            fmt_pus_of_core(t, pc, buf, sizeof(buf));
            printf("  communication process core (all cores idle, this interface alone): "
                   "core %d (PUs %s)\n", pc, buf);
        }
        printf("  process cores, best first%s:\n",
               d->prof ? " (measured order)" : "");
        for (int k = 0; k < ng; k++) {
            aff_fmt_cores(t, g[k].cores, buf, sizeof(buf));
            printf("    %d. %-8s %s\n", k + 1, g[k].label, buf);
        }
        aff_groups_free(g, ng > 0 ? ng : 0);
    }
    if (irqb)
        printf("irqbalance is running (pid %d): it moves interrupts on its own; ban the "
               "lines above from it (IRQBALANCE_BANNED_CPUS / --banirq) or stop it\n", irqb);
    hwloc_bitmap_free(cores);
}

/* Every core's relation to every other: the table every decision reads. */
static void report_relations(hwloc_topology_t t)
{
    int n = cvia__topo_ncores(t);
    hwloc_bitmap_t cls[CVIA_REL_COUNT];
    char buf[1024];

    for (int r = 0; r < CVIA_REL_COUNT; r++)
        if (!(cls[r] = hwloc_bitmap_alloc())) {
            while (r--)
                hwloc_bitmap_free(cls[r]);
            return;
        }
    printf("relations (cores by logical index): from each core, the other cores by class\n");
    for (int a = 0; a < n; a++) {
        for (int r = 0; r < CVIA_REL_COUNT; r++)
            hwloc_bitmap_zero(cls[r]);
        for (int b = 0; b < n; b++)
            if (b != a)
                hwloc_bitmap_set(cls[cvia__topo_relation(t, a, b)], (unsigned)b);
        printf("core %d:", a);
        for (int r = CVIA_REL_SAME + 1; r < CVIA_REL_COUNT; r++)
            if (!hwloc_bitmap_iszero(cls[r])) {
                hwloc_bitmap_list_snprintf(buf, sizeof(buf), cls[r]);
                printf(" %s %s;", cvia__topo_rel_name(r), buf);
            }
        printf("\n");
    }
    for (int r = 0; r < CVIA_REL_COUNT; r++)
        hwloc_bitmap_free(cls[r]);
}

static void report_json(struct aff_env *e, const struct aff_model *m, int irqb, struct jw *w)
{
    hwloc_topology_t t = e->topo;
    struct cvia_topo_summary s;
    hwloc_bitmap_t cores = hwloc_bitmap_alloc(), pus = hwloc_bitmap_alloc();
    unsigned last = cvia__topo_last_level(t);
    char buf[1024];

    cvia__topo_summarize(t, &s);
    jw_str(w, "source", e->topology ? e->topology : "this machine");
    jw_int(w, "packages", s.packages);
    jw_int(w, "cores", s.cores);
    jw_int(w, "pus", s.pus);
    jw_int(w, "numa_nodes", s.numa_nodes);
    jw_arr(w, "core_list");
    for (int c = 0; c < m->ncores; c++) {
        jw_obj(w, NULL);
        jw_int(w, "core", c);
        fmt_pus_of_core(t, c, buf, sizeof(buf));
        jw_str(w, "pus", buf);
        jw_int(w, "package", cvia__topo_core_package(t, c));
        jw_int(w, "numa", cvia__topo_core_numa(t, c));
        jw_obj(w, "shares");
        for (unsigned l = 1; l <= last; l++) {
            char key[8];
            snprintf(key, sizeof(key), "L%u", l);
            if (cvia__topo_cache_sharers(t, c, l, cores) > 0) {
                hwloc_bitmap_list_snprintf(buf, sizeof(buf), cores);
                jw_str(w, key, buf);
            }
        }
        jw_end_obj(w);
        jw_end_obj(w);
    }
    jw_end_arr(w);
    jw_arr(w, "interfaces");
    for (int i = 0; i < e->nics.n; i++) {
        const struct cvia_nic *nic = &e->nics.v[i];
        const struct aff_dev *d = &m->dev[i];
        struct aff_group g[AFF_MAX_GROUPS];
        int ng;

        jw_obj(w, NULL);
        jw_str(w, "name", nic->name);
        jw_str(w, "pci", nic->pci[0] ? nic->pci : NULL);
        jw_str(w, "kind", nic->kind);
        jw_str(w, "siblings", nic->siblings);
        aff_fmt_pus(nic->cpuset, buf, sizeof(buf));
        jw_str(w, "local_pus", buf);
        jw_bool(w, "local_known", nic->local_known);
        jw_int(w, "package", nic->package);
        jw_int(w, "numa", nic->numa);
        jw_arr(w, "irqs");
        for (int k = 0; k < nic->nirqs; k++) {
            jw_obj(w, NULL);
            jw_int(w, "irq", nic->irqs[k].irq);
            jw_str(w, "action", nic->irqs[k].action);
            if (hwloc_bitmap_iszero(nic->irqs[k].affinity)) {
                jw_null(w, "smp_affinity");
            } else {
                aff_fmt_pus(nic->irqs[k].affinity, buf, sizeof(buf));
                jw_str(w, "smp_affinity", buf);
            }
            if (hwloc_bitmap_iszero(nic->irqs[k].effective)) {
                jw_null(w, "effective_affinity");
            } else {
                aff_fmt_pus(nic->irqs[k].effective, buf, sizeof(buf));
                jw_str(w, "effective_affinity", buf);
            }
            jw_end_obj(w);
        }
        jw_end_arr(w);
        jw_int(w, "proposed_core", e->proposed[i]);
        jw_int(w, "proposed_pu", cvia__topo_core_first_pu(t, e->proposed[i]));
        jw_int(w, "anchor_core", d->anchor);
        jw_str(w, "anchor", d->anchor_why);
        jw_arr(w, "groups");
        ng = aff_groups(m, d, g);
        for (int k = 0; k < ng; k++) {
            jw_obj(w, NULL);
            jw_str(w, "class", g[k].label);
            hwloc_bitmap_list_snprintf(buf, sizeof(buf), g[k].cores);
            jw_str(w, "cores", buf);
            cvia__topo_cores_cpuset(t, g[k].cores, pus);
            hwloc_bitmap_list_snprintf(buf, sizeof(buf), pus);
            jw_str(w, "pus", buf);
            jw_end_obj(w);
        }
        aff_groups_free(g, ng > 0 ? ng : 0);
        jw_end_arr(w);
        jw_end_obj(w);
    }
    jw_end_arr(w);
    if (irqb)
        jw_int(w, "irqbalance_pid", irqb);
    else
        jw_null(w, "irqbalance_pid");
    hwloc_bitmap_free(cores);
    hwloc_bitmap_free(pus);
}

/* ---- apply / restore ------------------------------------------------------ */

struct irq_change {
    unsigned irq;
    char device[CVIA_NIC_NAMELEN];
    char old[256], new_[256];
    int  done;
};

static void default_state(const char *root, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/run/cvia-affinity/irq-state.json",
             root && strcmp(root, "/") ? root : "");
}

static int mkdirs_for(const char *file)
{
    char dir[4096];
    char *p;

    snprintf(dir, sizeof(dir), "%s", file);
    if (!(p = strrchr(dir, '/')) || p == dir)
        return 0;
    *p = '\0';
    for (p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static int write_state(const char *path, const char *root, const struct irq_change *c, int n)
{
    char tmp[4200];
    FILE *f;
    struct jw w;
    int rc;

    if ((rc = mkdirs_for(path)))
        return rc;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (!(f = fopen(tmp, "w")))
        return -errno;
    jw_init(&w, f);
    jw_obj(&w, NULL);
    jw_str(&w, "format", STATE_FORMAT);
    jw_str(&w, "proc_root", root);
    jw_arr(&w, "irqs");
    for (int i = 0; i < n; i++) {
        jw_obj(&w, NULL);
        jw_int(&w, "irq", c[i].irq);
        jw_str(&w, "device", c[i].device);
        jw_str(&w, "old", c[i].old);
        jw_str(&w, "new", c[i].new_);
        jw_end_obj(&w);
    }
    jw_end_arr(&w);
    jw_end_obj(&w);
    if (fflush(f) || fsync(fileno(f))) {
        rc = -errno;
        fclose(f);
        unlink(tmp);
        return rc;
    }
    fclose(f);
    if (rename(tmp, path) < 0) {
        rc = -errno;
        unlink(tmp);
        return rc;
    }
    return 0;
}

/* Read a state file into *c (malloc'd). -1 with err. A missing file is n=0. */
static int read_state(const char *path, struct irq_change **c, int *n, char *err, size_t cap)
{
    char jerr[400];
    struct aj *root;
    const struct aj *irqs;

    *c = NULL;
    *n = 0;
    if (access(path, F_OK) < 0 && errno == ENOENT)
        return 0;
    if (!(root = aj_parse_file(path, jerr, sizeof(jerr)))) {
        snprintf(err, cap, "state file %s", jerr);
        return -1;
    }
    irqs = aj_get(root, "irqs");
    if (strcmp(aj_str(aj_get(root, "format"), ""), STATE_FORMAT) || !aj_is(irqs, AJ_ARR)) {
        snprintf(err, cap, "%s is not a cvia-affinity state file", path);
        aj_free(root);
        return -1;
    }
    *c = calloc((size_t)irqs->n + 1, sizeof(**c));
    for (int i = 0; *c && i < irqs->n; i++) {
        const struct aj *it = &irqs->items[i];
        double v = aj_num(aj_get(it, "irq"), -1);
        const char *old = aj_str(aj_get(it, "old"), NULL);
        hwloc_bitmap_t b = hwloc_bitmap_alloc();
        int bad = !(v >= 0) || !old || !b || hwloc_bitmap_list_sscanf(b, old) < 0 ||
                  hwloc_bitmap_iszero(b);
        hwloc_bitmap_free(b);
        if (bad) {
            snprintf(err, cap, "%s: entry %d is malformed", path, i);
            free(*c);
            *c = NULL;
            aj_free(root);
            return -1;
        }
        (*c)[i].irq = (unsigned)v;
        snprintf((*c)[i].device, sizeof((*c)[i].device), "%s",
                 aj_str(aj_get(it, "device"), ""));
        snprintf((*c)[i].old, sizeof((*c)[i].old), "%s", old);
        snprintf((*c)[i].new_, sizeof((*c)[i].new_), "%s", aj_str(aj_get(it, "new"), ""));
        (*n)++;
    }
    aj_free(root);
    if (!*c) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    return 0;
}

static int set_list(const char *root, unsigned irq, const char *list)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    int rc;

    if (!b)
        return -ENOMEM;
    rc = hwloc_bitmap_list_sscanf(b, list) < 0 ? -EINVAL : cvia__irq_affinity_write(root, irq, b);
    hwloc_bitmap_free(b);
    return rc;
}

static const char *why_errno(int rc)
{
    if (rc == -EACCES || rc == -EPERM)
        return "permission denied (run as root)";
    if (rc == -EIO)
        return "the kernel refuses to move this line (managed or per-CPU interrupt)";
    return strerror(-rc);
}

static int do_apply(struct aff_env *e, const char *state, int dry, int json, int irqb)
{
    struct irq_change *c = NULL, *prev = NULL;
    int n = 0, nprev = 0, rc = 1, any = 0;
    char err[600], cur[256], want[256];
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    struct jw w;

    if (read_state(state, &prev, &nprev, err, sizeof(err))) {
        aff_err(SUB, "%s", err);
        goto out;
    }
    for (int i = 0; i < e->nics.n; i++)
        n += e->nics.v[i].nirqs;
    if (!(c = calloc((size_t)n + 1, sizeof(*c))) || !b) {
        aff_err(SUB, "out of memory");
        goto out;
    }
    n = 0;
    for (int i = 0; i < e->nics.n; i++) {
        const struct cvia_nic *nic = &e->nics.v[i];
        int pu = cvia__topo_core_first_pu(e->topo, e->proposed[i]);
        for (int k = 0; k < nic->nirqs; k++) {
            int dup = 0, r;
            for (int q = 0; q < n; q++)
                dup |= c[q].irq == nic->irqs[k].irq;
            if (dup || pu < 0)
                continue;
            if ((r = cvia__irq_affinity_read(e->root, nic->irqs[k].irq, b))) {
                aff_err(SUB, "irq %u of %s: cannot read %s/proc/irq/%u/smp_affinity_list: %s; "
                        "nothing changed", nic->irqs[k].irq, nic->name,
                        strcmp(e->root, "/") ? e->root : "", nic->irqs[k].irq, why_errno(r));
                goto out;
            }
            hwloc_bitmap_list_snprintf(cur, sizeof(cur), b);
            snprintf(want, sizeof(want), "%d", pu);
            c[n].irq = nic->irqs[k].irq;
            snprintf(c[n].device, sizeof(c[n].device), "%s", nic->name);
            snprintf(c[n].old, sizeof(c[n].old), "%s", cur);
            /* applied before: the original value is the one saved then */
            for (int q = 0; q < nprev; q++)
                if (prev[q].irq == c[n].irq)
                    snprintf(c[n].old, sizeof(c[n].old), "%s", prev[q].old);
            snprintf(c[n].new_, sizeof(c[n].new_), "%s", want);
            c[n].done = !strcmp(cur, want);
            n++;
        }
    }
    if (n == 0) {
        if (json) {
            jw_init(&w, stdout);
            jw_obj(&w, NULL);
            jw_arr(&w, "changes");
            jw_end_arr(&w);
            jw_str(&w, "note", "no interface with interrupt lines: nothing to set");
            jw_end_obj(&w);
        } else {
            printf("nothing to set: no interface here has interrupt lines%s\n",
                   e->live ? " (virtual devices such as veth, lo and bridges have none)" : "");
        }
        rc = 0;
        goto out;
    }
    if (!dry) {
        /* keep, for lines applied before and not in this run, their entries */
        struct irq_change *all = calloc((size_t)(n + nprev) + 1, sizeof(*all));
        int m = n;
        if (!all) {
            aff_err(SUB, "out of memory");
            goto out;
        }
        memcpy(all, c, (size_t)n * sizeof(*c));
        for (int q = 0; q < nprev; q++) {
            int found = 0;
            for (int k = 0; k < n; k++)
                found |= prev[q].irq == c[k].irq;
            if (!found)
                all[m++] = prev[q];
        }
        int r = write_state(state, e->root, all, m);
        free(all);
        if (r) {
            aff_err(SUB, "cannot write state file %s: %s; nothing changed", state, strerror(-r));
            goto out;
        }
        for (int k = 0; k < n; k++) {
            if (c[k].done)
                continue;
            if ((r = set_list(e->root, c[k].irq, c[k].new_))) {
                /* undo what was done, then the state file */
                for (int q = 0; q < k; q++)
                    if (!c[q].done)
                        set_list(e->root, c[q].irq, c[q].old);
                if (nprev)
                    write_state(state, e->root, prev, nprev);
                else
                    unlink(state);
                aff_err(SUB, "irq %u of %s: cannot set affinity %s: %s; nothing changed",
                        c[k].irq, c[k].device, c[k].new_, why_errno(r));
                goto out;
            }
            any = 1;
        }
    }
    if (json) {
        jw_init(&w, stdout);
        jw_obj(&w, NULL);
        jw_bool(&w, "dry_run", dry);
        jw_str(&w, "state", state);
        jw_arr(&w, "changes");
        for (int k = 0; k < n; k++) {
            jw_obj(&w, NULL);
            jw_int(&w, "irq", c[k].irq);
            jw_str(&w, "device", c[k].device);
            jw_str(&w, "old", c[k].old);
            jw_str(&w, "new", c[k].new_);
            jw_end_obj(&w);
        }
        jw_end_arr(&w);
        if (irqb)
            jw_int(&w, "irqbalance_pid", irqb);
        jw_end_obj(&w);
    } else {
        for (int k = 0; k < n; k++)
            printf("irq %u (%s): %s -> %s%s\n", c[k].irq, c[k].device, c[k].old, c[k].new_,
                   dry ? " (dry run)" : c[k].done ? " (already)" : "");
        if (!dry)
            printf("saved the old values in %s (cvia-affinity topo --restore puts them back)\n",
                   state);
        if (irqb)
            printf("warning: irqbalance (pid %d) is running and may move these lines again\n",
                   irqb);
    }
    (void)any;
    rc = 0;
out:
    free(c);
    free(prev);
    hwloc_bitmap_free(b);
    return rc;
}

static int do_restore(const char *root, const char *state, int dry, int json)
{
    struct irq_change *c = NULL;
    int n = 0, rc = 1;
    char err[600], cur[256];
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    struct jw w;

    if (!b) {
        aff_err(SUB, "out of memory");
        return 1;
    }
    if (read_state(state, &c, &n, err, sizeof(err))) {
        aff_err(SUB, "%s", err);
        goto out;
    }
    if (access(state, F_OK) < 0) {
        if (json) {
            jw_init(&w, stdout);
            jw_obj(&w, NULL);
            jw_arr(&w, "restored");
            jw_end_arr(&w);
            jw_str(&w, "note", "no state file: nothing to restore");
            jw_end_obj(&w);
        } else {
            printf("nothing to restore: no state file %s\n", state);
        }
        rc = 0;
        goto out;
    }
    /* check every line first, so a failure changes nothing */
    for (int k = 0; k < n; k++) {
        int r = cvia__irq_affinity_read(root, c[k].irq, b);
        if (r) {
            aff_err(SUB, "irq %u (%s): %s; nothing restored", c[k].irq, c[k].device,
                    why_errno(r));
            goto out;
        }
        hwloc_bitmap_list_snprintf(cur, sizeof(cur), b);
        c[k].done = strcmp(cur, c[k].new_) != 0;   /* changed by someone since */
    }
    for (int k = 0; k < n && !dry; k++) {
        int r = set_list(root, c[k].irq, c[k].old);
        if (r) {
            for (int q = 0; q < k; q++)
                set_list(root, c[q].irq, c[q].new_);
            aff_err(SUB, "irq %u (%s): cannot set affinity %s: %s; nothing restored",
                    c[k].irq, c[k].device, c[k].old, why_errno(r));
            goto out;
        }
    }
    if (!dry && unlink(state) < 0) {
        aff_err(SUB, "restored, but cannot remove %s: %s", state, strerror(errno));
        goto out;
    }
    if (json) {
        jw_init(&w, stdout);
        jw_obj(&w, NULL);
        jw_bool(&w, "dry_run", dry);
        jw_arr(&w, "restored");
        for (int k = 0; k < n; k++) {
            jw_obj(&w, NULL);
            jw_int(&w, "irq", c[k].irq);
            jw_str(&w, "device", c[k].device);
            jw_str(&w, "affinity", c[k].old);
            jw_bool(&w, "changed_since_apply", c[k].done);
            jw_end_obj(&w);
        }
        jw_end_arr(&w);
        jw_end_obj(&w);
    } else {
        for (int k = 0; k < n; k++)
            printf("irq %u (%s): back to %s%s%s\n", c[k].irq, c[k].device, c[k].old,
                   c[k].done ? " (it had been changed since --apply)" : "",
                   dry ? " (dry run)" : "");
    }
    rc = 0;
out:
    free(c);
    hwloc_bitmap_free(b);
    return rc;
}

int aff_topo_main(int argc, char **argv)
{
    enum { OPT_PROC_ROOT = 1000 };
    static const struct option opts[] = {
        { "topology", required_argument, NULL, 't' },
        { "irqs", required_argument, NULL, 'i' },
        { "profile", required_argument, NULL, 'p' },
        { "proc-root", required_argument, NULL, OPT_PROC_ROOT },
        { "apply", no_argument, NULL, 'a' },
        { "restore", no_argument, NULL, 'r' },
        { "state", required_argument, NULL, 's' },
        { "dry-run", no_argument, NULL, 'n' },
        { "json", no_argument, NULL, 'j' },
        { "relations", no_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    struct aff_env e = { 0 };
    struct aff_model m;
    const char *state = NULL;
    char state_buf[4096];
    int apply = 0, restore = 0, dry = 0, json = 0, rels = 0, c, rc, irqb;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":t:i:p:ars:njRh", opts, NULL)) != -1) {
        switch (c) {
        case 't': e.topology = optarg; break;
        case 'i': e.irqs = optarg; break;
        case 'p': e.profile = optarg; break;
        case OPT_PROC_ROOT: e.proc_root = optarg; break;
        case 'a': apply = 1; break;
        case 'r': restore = 1; break;
        case 's': state = optarg; break;
        case 'n': dry = 1; break;
        case 'j': json = 1; break;
        case 'R': rels = 1; break;
        case 'h': topo_usage(stdout); return 0;
        default: aff_getopt_fail(SUB, c, argv);
        }
    }
    if (optind < argc)
        aff_usage_error(SUB, "unexpected argument %s", argv[optind]);
    if (apply && restore)
        aff_usage_error(SUB, "--apply and --restore exclude each other");
    if (rels && (json || apply || restore))
        aff_usage_error(SUB, "--relations is a text report: not with --json, --apply or "
                        "--restore");
    if (!e.topology && getenv("CVIA_TOPOLOGY") && *getenv("CVIA_TOPOLOGY"))
        e.topology = getenv("CVIA_TOPOLOGY");
    if ((apply || restore) && e.topology && !e.proc_root)
        aff_usage_error(SUB, "--%s changes this machine: drop --topology, or give a "
                        "--proc-root to work on", apply ? "apply" : "restore");
    if (e.proc_root) {
        struct stat st;
        if (stat(e.proc_root, &st) < 0 || !S_ISDIR(st.st_mode)) {
            aff_err(SUB, "--proc-root %s: not a directory", e.proc_root);
            return 1;
        }
    }
    if (!state) {
        default_state(e.proc_root, state_buf, sizeof(state_buf));
        state = state_buf;
    }
    if (restore)
        return do_restore(e.proc_root ? e.proc_root : "/", state, dry, json);
    if (aff_env_open(&e, SUB))
        return 1;
    if (aff_model_from_env(&e, &m, 0)) {
        aff_env_close(&e);
        aff_err(SUB, "out of memory");
        return 1;
    }
    irqb = e.root ? aff_irqbalance_pid(e.root) : 0;
    if (apply) {
        if (!e.root)
            e.root = e.proc_root ? e.proc_root : "/";
        rc = do_apply(&e, state, dry, json, irqb);
    } else {
        rc = 0;
        if (json) {
            struct jw w;
            jw_init(&w, stdout);
            jw_obj(&w, NULL);
            report_json(&e, &m, irqb, &w);
            jw_end_obj(&w);
        } else {
            report_text(&e, &m, irqb);
            if (rels)
                report_relations(e.topo);
        }
    }
    aff_model_free(&m);
    aff_env_close(&e);
    return rc;
}
