/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* `cvia-affinity daemon --replay`: the decisions of the daemon on recorded
 * observations of a recorded machine, and the decision log both share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aff.h"

#define SUB "daemon"

static const char *action_name(enum aff_action a)
{
    static const char *const n[] = { "none", "wait", "keep", "pin-core", "pin-group",
                                     "release" };
    return n[a];
}

void aff_log_decision(const struct aff_model *m, const struct aff_dopts *o, long period,
                         double t, const struct aff_decision *d)
{
    char pus[256];

    aff_fmt_pus(d->cpuset, pus, sizeof(pus));
    if (o->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w, NULL);
        jw_num(&w, "t", t);
        jw_int(&w, "period", period);
        jw_int(&w, "pid", d->pid);
        jw_str(&w, "comm", d->comm);
        jw_str(&w, "device", d->device);
        jw_str(&w, "level", aff_level_name(d->level));
        jw_str(&w, "action", action_name(d->action));
        jw_bool(&w, "changed", d->changed);
        if (d->action == AFF_ACT_PIN_CORE || d->action == AFF_ACT_PIN_GROUP ||
            d->action == AFF_ACT_KEEP) {
            jw_str(&w, "cpus", pus);
            jw_str(&w, "group", d->group);
            if (d->core >= 0)
                jw_int(&w, "core", d->core);
        }
        jw_num(&w, "demand", d->demand);
        jw_num(&w, "idle", d->avail);
        jw_num(&w, "interval_us", d->intensity_us);
        jw_num(&w, "bytes_per_s", d->bytes_per_s);
        jw_str(&w, "reason", d->reason);
        jw_end_obj(&w);
        fflush(stdout);
        return;
    }
    (void)m;
    fprintf(o->replay ? stdout : stderr, "%speriod %ld: pid %d (%s)%s%s: %s%s%s\n",
            o->replay ? "" : "cvia-affinity daemon: ", period, d->pid, d->comm,
            d->device[0] ? " on " : "", d->device, d->reason,
            d->changed ? " -> " : "",
            d->changed ? (d->action == AFF_ACT_RELEASE ? "original affinity" : pus) : "");
}

/* ---- replay ----------------------------------------------------------------- */

static int obs_from_json(const struct aj *per, int idx, hwloc_topology_t t, struct aff_obs *o,
                         char *err, size_t cap)
{
    const struct aj *busy = aj_get(per, "busy"), *procs = aj_get(per, "procs");
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int last = hwloc_bitmap_last(hwloc_topology_get_topology_cpuset(t));

    memset(o, 0, sizeof(*o));
    o->npu = last + 1;
    o->busy = calloc((size_t)o->npu + 1, sizeof(double));
    if (!set || !o->busy) {
        snprintf(err, cap, "out of memory");
        goto err;
    }
    if (busy && !aj_is(busy, AJ_OBJ)) {
        snprintf(err, cap, "periods[%d].busy must be an object {\"CPULIST\": fraction}", idx);
        goto err;
    }
    for (int i = 0; busy && i < busy->n; i++) {
        double v = aj_num(&busy->items[i], -1);
        int pu;
        if (hwloc_bitmap_list_sscanf(set, busy->keys[i]) < 0 || !(v >= 0 && v <= 1)) {
            snprintf(err, cap, "periods[%d].busy: \"%s\": %g is not a CPU list with a "
                     "fraction in [0, 1]", idx, busy->keys[i], v);
            goto err;
        }
        hwloc_bitmap_foreach_begin(pu, set) {
            if (pu < o->npu)
                o->busy[pu] = v;
        } hwloc_bitmap_foreach_end();
    }
    if (!aj_is(procs, AJ_ARR)) {
        snprintf(err, cap, "periods[%d] has no \"procs\" array", idx);
        goto err;
    }
    o->proc = calloc((size_t)procs->n + 1, sizeof(*o->proc));
    if (!o->proc) {
        snprintf(err, cap, "out of memory");
        goto err;
    }
    for (int i = 0; i < procs->n; i++) {
        const struct aj *p = &procs->items[i];
        struct aff_pobs *q = &o->proc[o->nproc];
        double pid = aj_num(aj_get(p, "pid"), -1);
        if (!(pid > 0)) {
            snprintf(err, cap, "periods[%d].procs[%d] needs a \"pid\" > 0", idx, i);
            goto err;
        }
        q->pid = (int)pid;
        snprintf(q->comm, sizeof(q->comm), "%s", aj_str(aj_get(p, "comm"), "?"));
        snprintf(q->device, sizeof(q->device), "%s", aj_str(aj_get(p, "device"), ""));
        q->bytes_per_s = aj_num(aj_get(p, "bytes_per_s"), -1);
        q->calls_per_s = aj_num(aj_get(p, "calls_per_s"), -1);
        q->cpu = aj_num(aj_get(p, "cpu"), 0);
        q->last_pu = (int)aj_num(aj_get(p, "last_pu"), -1);
        q->fresh = aj_is(aj_get(p, "fresh"), AJ_BOOL) && aj_get(p, "fresh")->num;
        q->allowed = NULL;
        o->nproc++;
    }
    hwloc_bitmap_free(set);
    return 0;
err:
    hwloc_bitmap_free(set);
    free(o->busy);
    free(o->proc);
    memset(o, 0, sizeof(*o));
    return -1;
}

int aff_run_replay(struct aff_env *e, const struct aff_dopts *o)
{
    char err[600];
    struct aj *root = aj_parse_file(o->replay, err, sizeof(err));
    const struct aj *periods;
    struct aff_model m;
    struct aff_params prm;
    struct aff_state st = { 0 };
    struct aff_obs *obs = NULL;
    int rc = 1, nobs = 0;

    if (!root) {
        aff_err(SUB, "observations %s", err);
        return 1;
    }
    periods = aj_get(root, "periods");
    if (!aj_is(periods, AJ_ARR)) {
        aff_err(SUB, "%s: expected {\"periods\": [...]}", o->replay);
        aj_free(root);
        return 1;
    }
    if (aff_model_from_env(e, &m, 0)) {
        aff_err(SUB, "out of memory");
        aj_free(root);
        return 1;
    }
    aff_params_default(&prm);
    /* devices named in the observations but unknown to the topology */
    for (int k = 0; k < periods->n; k++) {
        const struct aj *procs = aj_get(&periods->items[k], "procs");
        for (int i = 0; aj_is(procs, AJ_ARR) && i < procs->n; i++) {
            const char *dev = aj_str(aj_get(&procs->items[i], "device"), "");
            int found = !*dev;
            for (int q = 0; q < m.ndev; q++)
                found |= !strcmp(m.dev[q].name, dev);
            if (!found && m.ndev < AFF_MAX_DEV) {
                struct aff_dev *d = &m.dev[m.ndev++];
                memset(d, 0, sizeof(*d));
                snprintf(d->name, sizeof(d->name), "%s", dev);
                d->anchor = -1;
                snprintf(d->anchor_why, sizeof(d->anchor_why), "not in the topology");
                d->local = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(e->topo));
                d->prof = e->have_prof ? aff_profile_match(&e->prof, dev, NULL) : NULL;
            }
        }
    }
    for (int q = 0; q < m.ndev; q++)
        for (int k = 0; k < o->nirq_core; k++)
            if (!strcmp(o->irq_core[k].ifname, m.dev[q].name)) {
                m.dev[q].anchor = cvia__topo_core_of_pu(e->topo, (unsigned)o->irq_core[k].pu);
                snprintf(m.dev[q].anchor_why, sizeof(m.dev[q].anchor_why), "--irq-core");
            }
    /* read every period first: a bad file prints nothing but the error */
    if (!(obs = calloc((size_t)periods->n + 1, sizeof(*obs)))) {
        aff_err(SUB, "out of memory");
        goto out;
    }
    for (int k = 0; k < periods->n; k++, nobs++)
        if (obs_from_json(&periods->items[k], k, e->topo, &obs[k], err, sizeof(err))) {
            aff_err(SUB, "%s: %s", o->replay, err);
            goto out;
        }
    if (!o->json)
        for (int q = 0; q < m.ndev; q++) {
            char lbl[AFF_NAMELEN + 32];
            printf("device %s: interrupt core %d (%s)%s%s\n", m.dev[q].name, m.dev[q].anchor,
                   m.dev[q].anchor_why, m.dev[q].prof ? ", profile " : "",
                   m.dev[q].prof ? aff_profile_label(m.dev[q].prof, lbl, sizeof(lbl)) : "");
        }
    for (int k = 0; k < nobs; k++) {
        struct aff_decision *d;
        int n;
        obs[k].period_s = o->period;
        n = aff_decide(&m, &prm, &obs[k], &st, &d);
        if (n < 0) {
            aff_err(SUB, "out of memory");
            goto out;
        }
        for (int i = 0; i < n; i++)
            aff_log_decision(&m, o, st.period, k * o->period, &d[i]);
        aff_decisions_free(d, n);
    }
    rc = 0;
out:
    for (int k = 0; obs && k < nobs; k++) {
        free(obs[k].busy);
        free(obs[k].proc);
    }
    free(obs);
    aff_state_free(&st);
    aff_model_free(&m);
    aj_free(root);
    return rc;
}
