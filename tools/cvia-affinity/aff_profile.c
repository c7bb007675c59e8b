/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The profile the analyser writes and the daemon reads, and the --irqs
 * file that gives interrupt lines to recorded topologies. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aff.h"

#define PROFILE_FORMAT "corevia-affinity-profile/1"

static int rel_or_unpinned(const char *s)
{
    if (!strcmp(s, "unpinned"))
        return -1;
    return cvia__topo_rel_parse(s);
}

int aff_profile_load(const char *path, struct aff_profile *p, char *err, size_t errcap)
{
    char jerr[512];
    struct aj *root = aj_parse_file(path, jerr, sizeof(jerr));
    const struct aj *devs;

    memset(p, 0, sizeof(*p));
    if (!root) {
        snprintf(err, errcap, "profile %s", jerr);
        return -1;
    }
    snprintf(p->source, sizeof(p->source), "%s", path);
    if (strcmp(aj_str(aj_get(root, "format"), ""), PROFILE_FORMAT)) {
        snprintf(err, errcap, "profile %s: not a cvia-affinity profile (\"format\" is not \"%s\")",
                 path, PROFILE_FORMAT);
        goto err_free;
    }
    devs = aj_get(root, "devices");
    if (!aj_is(devs, AJ_ARR) || devs->n == 0) {
        snprintf(err, errcap, "profile %s: \"devices\" must be a non-empty array", path);
        goto err_free;
    }
    for (int i = 0; i < devs->n && p->ndev < AFF_MAX_DEV; i++) {
        const struct aj *dv = &devs->items[i], *meas, *rank, *thr;
        struct aff_prof_dev *d = &p->dev[p->ndev];
        const char *name = aj_str(aj_get(dv, "device"), NULL);

        if (!aj_is(dv, AJ_OBJ) || !name || !*name) {
            snprintf(err, errcap, "profile %s: devices[%d] has no \"device\" name", path, i);
            goto err_free;
        }
        snprintf(d->device, sizeof(d->device), "%s", name);
        snprintf(d->driver, sizeof(d->driver), "%s", aj_str(aj_get(dv, "driver"), ""));
        snprintf(d->transport, sizeof(d->transport), "%s",
                 aj_str(aj_get(dv, "transport"), "kernel-tcp"));
        snprintf(d->provider, sizeof(d->provider), "%s", aj_str(aj_get(dv, "provider"), ""));
        if (strcmp(d->transport, "kernel-tcp") && strcmp(d->transport, "corevia")) {
            snprintf(err, errcap, "profile %s: device %s: unknown transport \"%s\" "
                     "(kernel-tcp or corevia)", path, name, d->transport);
            goto err_free;
        }
        meas = aj_get(dv, "classes");
        if (!aj_is(meas, AJ_ARR) || meas->n == 0) {
            snprintf(err, errcap, "profile %s: device %s has no \"classes\" array", path, name);
            goto err_free;
        }
        for (int k = 0; k < meas->n && d->nmeas < CVIA_REL_COUNT + 1; k++) {
            const struct aj *m = &meas->items[k];
            const char *cls = aj_str(aj_get(m, "class"), "");
            struct aff_meas *o = &d->meas[d->nmeas];
            int rel = rel_or_unpinned(cls);
            if (rel < -1 || (rel == -1 && strcmp(cls, "unpinned"))) {
                snprintf(err, errcap, "profile %s: device %s: unknown class \"%s\"", path,
                         name, cls);
                goto err_free;
            }
            o->rel = rel;
            o->bw = aj_num(aj_get(m, "bandwidth_Bps"), NAN);
            o->cpu_proc = aj_num(aj_get(m, "cpu_process"), NAN);
            o->cpu_softirq = aj_num(aj_get(m, "cpu_softirq"), 0);
            o->interval_us = aj_num(aj_get(m, "interval_us"), NAN);
            o->runs = (int)aj_num(aj_get(m, "runs"), 1);
            if (!(o->bw >= 0) || !(o->cpu_proc >= 0)) {
                snprintf(err, errcap, "profile %s: device %s class %s: bandwidth_Bps and "
                         "cpu_process must be numbers >= 0", path, name, cls);
                goto err_free;
            }
            d->nmeas++;
        }
        rank = aj_get(dv, "rank");
        if (aj_is(rank, AJ_ARR))
            for (int k = 0; k < rank->n && d->nrank < CVIA_REL_COUNT; k++) {
                int rel = cvia__topo_rel_parse(aj_str(&rank->items[k], "?"));
                if (rel < 0) {
                    snprintf(err, errcap, "profile %s: device %s: unknown class \"%s\" in rank",
                             path, name, aj_str(&rank->items[k], "?"));
                    goto err_free;
                }
                d->rank[d->nrank++] = rel;
            }
        d->demand = aj_num(aj_get(dv, "demand_cores"), NAN);
        d->best_bw = aj_num(aj_get(dv, "best_bandwidth_Bps"), NAN);
        d->min_interval_us = aj_num(aj_get(dv, "min_interval_us"), NAN);
        thr = aj_get(dv, "thresholds");
        d->high_interval_us = aj_num(aj_get(thr, "high_interval_us"), NAN);
        d->low_interval_us = aj_num(aj_get(thr, "low_interval_us"), NAN);
        snprintf(d->derivation, sizeof(d->derivation), "%s",
                 aj_str(aj_get(thr, "derivation"), ""));
        if (!(d->demand > 0) || !(d->best_bw > 0) || !(d->high_interval_us > 0) ||
            !(d->low_interval_us > d->high_interval_us)) {
            snprintf(err, errcap, "profile %s: device %s needs demand_cores > 0, "
                     "best_bandwidth_Bps > 0 and thresholds with 0 < high_interval_us < "
                     "low_interval_us", path, name);
            goto err_free;
        }
        p->ndev++;
    }
    aj_free(root);
    return 0;

err_free:
    aj_free(root);
    return -1;
}

const char *aff_profile_label(const struct aff_prof_dev *d, char *buf, size_t cap)
{
    if (!strcmp(d->transport, "corevia"))
        snprintf(buf, cap, "%s (corevia %s)", d->device, d->provider[0] ? d->provider : "?");
    else
        snprintf(buf, cap, "%s", d->device);
    return buf;
}

const struct aff_prof_dev *aff_profile_match(const struct aff_profile *p, const char *device,
                                             const char *driver)
{
    if (!p)
        return NULL;
    for (int i = 0; i < p->ndev; i++)
        if (!strcmp(p->dev[i].device, device))
            return &p->dev[i];
    if (driver && *driver)
        for (int i = 0; i < p->ndev; i++)
            if (!strcmp(p->dev[i].driver, driver))
                return &p->dev[i];
    return NULL;
}

void aff_profile_write(const struct aff_profile *p, struct jw *w, const char *notes)
{
    jw_str(w, "format", PROFILE_FORMAT);
    if (notes)
        jw_str(w, "notes", notes);
    jw_arr(w, "devices");
    for (int i = 0; i < p->ndev; i++) {
        const struct aff_prof_dev *d = &p->dev[i];
        jw_obj(w, NULL);
        jw_str(w, "device", d->device);
        jw_str(w, "driver", d->driver);
        jw_str(w, "transport", d->transport[0] ? d->transport : "kernel-tcp");
        if (d->provider[0])
            jw_str(w, "provider", d->provider);
        jw_arr(w, "classes");
        for (int k = 0; k < d->nmeas; k++) {
            const struct aff_meas *m = &d->meas[k];
            jw_obj(w, NULL);
            jw_str(w, "class", m->rel < 0 ? "unpinned" : cvia__topo_rel_name(m->rel));
            jw_num(w, "bandwidth_Bps", m->bw);
            jw_num(w, "cpu_process", m->cpu_proc);
            jw_num(w, "cpu_softirq", m->cpu_softirq);
            jw_num(w, "interval_us", m->interval_us);
            jw_int(w, "runs", m->runs);
            jw_end_obj(w);
        }
        jw_end_arr(w);
        jw_arr(w, "rank");
        for (int k = 0; k < d->nrank; k++)
            jw_str(w, NULL, cvia__topo_rel_name(d->rank[k]));
        jw_end_arr(w);
        jw_num(w, "demand_cores", d->demand);
        jw_num(w, "best_bandwidth_Bps", d->best_bw);
        jw_num(w, "min_interval_us", d->min_interval_us);
        jw_obj(w, "thresholds");
        jw_num(w, "high_interval_us", d->high_interval_us);
        jw_num(w, "low_interval_us", d->low_interval_us);
        jw_str(w, "derivation", d->derivation);
        jw_end_obj(w);
        jw_end_obj(w);
    }
    jw_end_arr(w);
}

/* ---- --irqs FILE ---------------------------------------------------------- */

static int irq_list(const struct aj *a, struct cvia_nic *nic, hwloc_const_bitmap_t aff,
                    const char *path, char *err, size_t errcap)
{
    if (!aj_is(a, AJ_ARR)) {
        snprintf(err, errcap, "%s: interface %s: expected an array of interrupt numbers",
                 path, nic->name);
        return -1;
    }
    for (int k = 0; k < a->n; k++) {
        double v = aj_num(&a->items[k], -1);
        if (!(v >= 0 && v < 1e7 && v == floor(v))) {
            snprintf(err, errcap, "%s: interface %s: interrupt numbers must be "
                     "integers >= 0", path, nic->name);
            return -1;
        }
        if (cvia__nic_add_irq(nic, (unsigned)v, "", aff) < 0) {
            snprintf(err, errcap, "out of memory");
            return -1;
        }
    }
    return 0;
}

int aff_irqs_load(const char *path, hwloc_topology_t t, struct cvia_nic_list *nics,
                  char *err, size_t errcap)
{
    char jerr[512];
    struct aj *root = aj_parse_file(path, jerr, sizeof(jerr));
    hwloc_bitmap_t set = hwloc_bitmap_alloc(), aff = hwloc_bitmap_alloc();
    int rc = -1;

    if (!root) {
        snprintf(err, errcap, "interrupt file %s", jerr);
        goto out;
    }
    if (!set || !aff) {
        snprintf(err, errcap, "out of memory");
        goto out;
    }
    if (!aj_is(root, AJ_OBJ)) {
        snprintf(err, errcap, "%s: expected an object {\"interface\": [irq, ...]}", path);
        goto out;
    }
    for (int i = 0; i < root->n; i++) {
        const char *name = root->keys[i];
        const struct aj *v = &root->items[i], *list;
        struct cvia_nic *nic = cvia__nic_find(nics, name);
        const char *local = aj_str(aj_get(v, "local_cpus"), NULL);
        const char *cur = aj_str(aj_get(v, "smp_affinity"), NULL);

        if (!*name || strlen(name) >= CVIA_NIC_NAMELEN) {
            snprintf(err, errcap, "%s: bad interface name \"%s\"", path, name);
            goto out;
        }
        if (local && hwloc_bitmap_list_sscanf(set, local) < 0) {
            snprintf(err, errcap, "%s: interface %s: local_cpus \"%s\" is not a CPU list",
                     path, name, local);
            goto out;
        }
        if (local && !hwloc_bitmap_intersects(set, hwloc_topology_get_topology_cpuset(t))) {
            snprintf(err, errcap, "%s: interface %s: local_cpus \"%s\" names no PU of "
                     "this topology", path, name, local);
            goto out;
        }
        hwloc_bitmap_zero(aff);
        if (cur && hwloc_bitmap_list_sscanf(aff, cur) < 0) {
            snprintf(err, errcap, "%s: interface %s: smp_affinity \"%s\" is not a CPU list",
                     path, name, cur);
            goto out;
        }
        if (!nic) {
            if (!local) {
                snprintf(err, errcap, "%s: interface %s is not in the topology; give its "
                         "\"local_cpus\"", path, name);
                goto out;
            }
            if (!(nic = cvia__nic_add(t, nics, name, set))) {
                snprintf(err, errcap, "out of memory");
                goto out;
            }
        } else if (local) {
            cvia__nic_set_locality(t, nic, set);
        }
        list = aj_is(v, AJ_ARR) ? v : aj_get(v, "irqs");
        if (irq_list(list, nic, aff, path, err, errcap))
            goto out;
        /* interfaces of the same PCI function share the lines */
        for (int k = 0; k < nics->n; k++) {
            struct cvia_nic *o = &nics->v[k];
            if (o != nic && nic->pci[0] && !strcmp(o->pci, nic->pci))
                for (int q = 0; q < nic->nirqs; q++)
                    cvia__nic_add_irq(o, nic->irqs[q].irq, "", nic->irqs[q].affinity);
        }
    }
    rc = 0;
out:
    aj_free(root);
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(aff);
    return rc;
}
