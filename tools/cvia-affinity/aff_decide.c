/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The decisions of cvia-affinity, and nothing else: no file, no /proc, no
 * clock. Everything comes in as arguments (topology, profile through the
 * model, observations, previous state), so the same code runs live in the
 * daemon and on recorded machines in the tests. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aff.h"

static const int default_order[CVIA_REL_COUNT] = {
    CVIA_REL_L2, CVIA_REL_L3, CVIA_REL_SAME, CVIA_REL_NUMA, CVIA_REL_PACKAGE,
    CVIA_REL_REMOTE,
};

const char *aff_level_name(int level)
{
    static const char *const n[] = { "low", "medium", "high" };
    return level >= 0 && level <= 2 ? n[level] : "?";
}

void aff_params_default(struct aff_params *p)
{
    p->keep_factor = 0.8;
    p->better_factor = 1.25;
    p->short_periods = 2;
    p->down_periods = 3;
    p->min_dwell = 5;
    p->band = 1.25;
}

void aff_fmt_pus(hwloc_const_bitmap_t pus, char *buf, size_t cap)
{
    if (!pus || hwloc_bitmap_iszero(pus))
        snprintf(buf, cap, "none");
    else
        hwloc_bitmap_list_snprintf(buf, cap, pus);
}

void aff_fmt_cores(hwloc_topology_t t, hwloc_const_bitmap_t cores, char *buf, size_t cap)
{
    hwloc_bitmap_t pus = hwloc_bitmap_alloc();
    char c[512], p[512];

    if (!pus || hwloc_bitmap_iszero(cores)) {
        snprintf(buf, cap, "none");
        hwloc_bitmap_free(pus);
        return;
    }
    cvia__topo_cores_cpuset(t, cores, pus);
    hwloc_bitmap_list_snprintf(c, sizeof(c), cores);
    hwloc_bitmap_list_snprintf(p, sizeof(p), pus);
    snprintf(buf, cap, "%s %s (PUs %s)", hwloc_bitmap_weight(cores) > 1 ? "cores" : "core",
             c, p);
    hwloc_bitmap_free(pus);
}

void aff_model_free(struct aff_model *m)
{
    for (int i = 0; i < m->ndev; i++)
        hwloc_bitmap_free(m->dev[i].local);
    m->ndev = 0;
}

/* ---- static collector: interrupt core per device -------------------------- */

static int llc_id(hwloc_topology_t t, int core)
{
    unsigned last = cvia__topo_last_level(t);
    hwloc_obj_t c = last ? cvia__topo_core_cache(t, core, last) : NULL;
    return c ? (int)c->logical_index : -1;
}

int aff_propose_irq_cores(hwloc_topology_t t, const struct cvia_nic_list *nics, int *core_out)
{
    hwloc_bitmap_t used = hwloc_bitmap_alloc(), used_llc = hwloc_bitmap_alloc();
    hwloc_bitmap_t local = hwloc_bitmap_alloc();
    int any_irqs = 0;

    if (!used || !used_llc || !local) {
        hwloc_bitmap_free(used);
        hwloc_bitmap_free(used_llc);
        hwloc_bitmap_free(local);
        return -ENOMEM;
    }
    for (int i = 0; i < nics->n; i++) {
        any_irqs |= nics->v[i].nirqs > 0;
        core_out[i] = -1;
    }
    /* devices with interrupt lines first: they claim their cores; where no
     * line is known at all (a recorded machine without --irqs) every
     * device is assumed to have some */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nics->n; i++) {
            const struct cvia_nic *nic = &nics->v[i];
            int claims = !any_irqs || nic->nirqs > 0;
            int best = -1, best_score = 99, c, j;

            if (claims != (pass == 0))
                continue;
            /* interfaces of one PCI function share its interrupt lines */
            for (j = 0; j < nics->n; j++)
                if (j != i && nic->pci[0] && !strcmp(nic->pci, nics->v[j].pci) &&
                    core_out[j] >= 0 && (j < i || nics->v[j].nirqs > 0))
                    break;
            if (j < nics->n) {
                core_out[i] = core_out[j];
                continue;
            }
            cvia__topo_cores_in(t, nic->cpuset, local);
            if (hwloc_bitmap_iszero(local))
                cvia__topo_cores_in(t, hwloc_topology_get_topology_cpuset(t), local);
            hwloc_bitmap_foreach_begin(c, local) {
                int l = llc_id(t, c);
                int score = hwloc_bitmap_isset(used, c) ? 2
                          : (l >= 0 && hwloc_bitmap_isset(used_llc, l)) ? 1 : 0;
                if (score < best_score) {
                    best_score = score;
                    best = c;
                }
            } hwloc_bitmap_foreach_end();
            core_out[i] = best;
            if (best >= 0 && claims) {
                hwloc_bitmap_set(used, best);
                if (llc_id(t, best) >= 0)
                    hwloc_bitmap_set(used_llc, llc_id(t, best));
            }
        }
    hwloc_bitmap_free(used);
    hwloc_bitmap_free(used_llc);
    hwloc_bitmap_free(local);
    return 0;
}

/* ---- core groups in order of preference ----------------------------------- */

void aff_groups_free(struct aff_group *g, int n)
{
    for (int i = 0; i < n; i++)
        hwloc_bitmap_free(g[i].cores);
}

/* How far core @c's memory is from the anchor's: 0 for the same own NUMA
 * node, else the latency distance of the two nodes (@dm), else 1. */
static hwloc_uint64_t mem_dist(const struct aff_model *m, struct hwloc_distances_s *dm,
                               hwloc_obj_t anchor_node, int c)
{
    hwloc_obj_t n = cvia__topo_core_node(m->topo, c);
    hwloc_uint64_t to = 1, back;

    if (n == anchor_node)
        return 0;
    if (dm && n && anchor_node &&
        hwloc_distances_obj_pair_values(dm, anchor_node, n, &to, &back) == 0 && to > 0)
        return to;
    return 1;
}

/* Split each group of @g (@n of them) by mem_dist(), nearest first. Returns
 * the new count, at most AFF_MAX_GROUPS, or -ENOMEM. */
static int split_by_memory(const struct aff_model *m, const struct aff_dev *d,
                           struct aff_group *g, int n)
{
    struct aff_group out[AFF_MAX_GROUPS];
    struct hwloc_distances_s *dm[1];
    unsigned ndm = 1;
    hwloc_obj_t an = cvia__topo_core_node(m->topo, d->anchor);
    int k = 0, rc = 0;

    if (hwloc_distances_get_by_type(m->topo, HWLOC_OBJ_NUMANODE, &ndm, dm,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 || !ndm)
        dm[0] = NULL;
    for (int i = 0; i < n; i++) {
        hwloc_uint64_t last = 0;
        int c, first = 1;
        /* each distinct distance, ascending: one pass per distance, bounded
         * by the group's size */
        for (int left = hwloc_bitmap_weight(g[i].cores); left > 0;) {
            hwloc_uint64_t next = UINT64_MAX;
            hwloc_bitmap_foreach_begin(c, g[i].cores) {
                hwloc_uint64_t v = mem_dist(m, dm[0], an, c);
                if ((first || v > last) && v < next)
                    next = v;
            } hwloc_bitmap_foreach_end();
            if (k == AFF_MAX_GROUPS) {          /* the rest joins the last */
                hwloc_bitmap_foreach_begin(c, g[i].cores) {
                    hwloc_uint64_t v = mem_dist(m, dm[0], an, c);
                    if (first || v > last)
                        hwloc_bitmap_set(out[k - 1].cores, (unsigned)c);
                } hwloc_bitmap_foreach_end();
                break;
            }
            out[k] = g[i];
            if (!(out[k].cores = hwloc_bitmap_alloc())) {
                rc = -ENOMEM;
                break;
            }
            hwloc_bitmap_foreach_begin(c, g[i].cores) {
                if (mem_dist(m, dm[0], an, c) == next) {
                    hwloc_bitmap_set(out[k].cores, (unsigned)c);
                    left--;
                }
            } hwloc_bitmap_foreach_end();
            k++;
            last = next;
            first = 0;
        }
        if (rc)
            break;
    }
    if (dm[0])
        hwloc_distances_release(m->topo, dm[0]);
    aff_groups_free(g, n);
    if (rc) {
        aff_groups_free(out, k);
        return rc;
    }
    memcpy(g, out, sizeof(*g) * (size_t)k);
    return k;
}

int aff_groups(const struct aff_model *m, const struct aff_dev *d, struct aff_group *g)
{
    int order[CVIA_REL_COUNT], norder = 0, n = 0;

    if (d->anchor < 0) {
        hwloc_bitmap_t local = hwloc_bitmap_alloc(), rest = hwloc_bitmap_alloc();
        if (!local || !rest) {
            hwloc_bitmap_free(local);
            hwloc_bitmap_free(rest);
            return -ENOMEM;
        }
        cvia__topo_cores_in(m->topo, d->local, local);
        cvia__topo_cores_in(m->topo, hwloc_topology_get_topology_cpuset(m->topo), rest);
        hwloc_bitmap_andnot(rest, rest, local);
        if (!hwloc_bitmap_iszero(local)) {
            g[n].rel = -1;
            snprintf(g[n].label, sizeof(g[n].label), "%s",
                     hwloc_bitmap_iszero(rest) ? "any" : "local");
            g[n++].cores = local;
        } else {
            hwloc_bitmap_free(local);
        }
        if (!hwloc_bitmap_iszero(rest)) {
            g[n].rel = -1;
            snprintf(g[n].label, sizeof(g[n].label), "%s", n ? "other" : "any");
            g[n++].cores = rest;
        } else {
            hwloc_bitmap_free(rest);
        }
        return n;
    }
    if (d->prof)
        for (int i = 0; i < d->prof->nrank; i++)
            order[norder++] = d->prof->rank[i];
    for (int i = 0; i < CVIA_REL_COUNT; i++) {
        int dup = 0;
        for (int k = 0; k < norder; k++)
            dup |= order[k] == default_order[i];
        if (!dup)
            order[norder++] = default_order[i];
    }
    for (int i = 0; i < norder; i++) {
        hwloc_bitmap_t cores = hwloc_bitmap_alloc();
        if (!cores) {
            aff_groups_free(g, n);
            return -ENOMEM;
        }
        for (int c = 0; c < m->ncores; c++)
            if (cvia__topo_relation(m->topo, d->anchor, c) == order[i])
                hwloc_bitmap_set(cores, c);
        if (hwloc_bitmap_iszero(cores)) {
            hwloc_bitmap_free(cores);
            continue;
        }
        g[n].rel = order[i];
        snprintf(g[n].label, sizeof(g[n].label), "%s", cvia__topo_rel_name(order[i]));
        g[n++].cores = cores;
    }
    return split_by_memory(m, d, g, n);
}

/* ---- one period of the dynamic decision module ---------------------------- */

void aff_state_free(struct aff_state *st)
{
    for (int i = 0; i < st->n; i++)
        hwloc_bitmap_free(st->v[i].target);
    free(st->v);
    memset(st, 0, sizeof(*st));
}

void aff_state_forget(struct aff_state *st, int pid)
{
    for (int i = 0; i < st->n; i++)
        if (st->v[i].pid == pid) {
            hwloc_bitmap_free(st->v[i].target);
            st->v[i] = st->v[--st->n];
            return;
        }
}

static struct aff_pstate *state_get(struct aff_state *st, int pid)
{
    struct aff_pstate *s;

    for (int i = 0; i < st->n; i++)
        if (st->v[i].pid == pid)
            return &st->v[i];
    if (st->n == st->cap) {
        int cap = st->cap ? st->cap * 2 : 16;
        struct aff_pstate *v = realloc(st->v, (size_t)cap * sizeof(*v));
        if (!v)
            return NULL;
        st->v = v;
        st->cap = cap;
    }
    s = &st->v[st->n];
    memset(s, 0, sizeof(*s));
    if (!(s->target = hwloc_bitmap_alloc()))
        return NULL;
    s->pid = pid;
    s->core = -1;
    st->n++;
    return s;
}

void aff_decisions_free(struct aff_decision *d, int n)
{
    for (int i = 0; i < n; i++)
        hwloc_bitmap_free(d[i].cpuset);
    free(d);
}

static const struct aff_dev *model_dev(const struct aff_model *m, const char *name)
{
    for (int i = 0; i < m->ndev; i++)
        if (!strcmp(m->dev[i].name, name))
            return &m->dev[i];
    return NULL;
}

/* Level from the interval between communication calls (the paper's
 * measure), with the thresholds of the device's profile. While a process
 * holds a level, the interval has to exceed that level's threshold by
 * `band` before it counts as lower.
 *
 * The calls are what /proc/PID/io counts: read- and write-type system
 * calls, not recv/send/recvmsg/sendmsg/poll, which is how corevia's
 * providers (and many other programs) move their data. When the bytes on a
 * process's sockets are more than the calls seen could carry (none seen,
 * or over AFF_MAX_BYTES_PER_CALL each), the interval is derived from the
 * bytes instead: the one a receiver of the profile's streams would have at
 * that rate (the profile's bytes per call at saturation, best bandwidth x
 * shortest interval), else at AFF_DFLT_BYTES_PER_CALL per call. */
static int classify(const struct aff_pobs *p, const struct aff_prof_dev *prof, int cur,
                    const struct aff_params *prm, double *interval_us, char *why, size_t cap)
{
    double hi = prof ? prof->high_interval_us : AFF_DFLT_HIGH_INTERVAL_US;
    double lo = prof ? prof->low_interval_us : AFF_DFLT_LOW_INTERVAL_US;
    double iv;
    char src[160] = "";

    *interval_us = INFINITY;
    if (p->bytes_per_s >= 0 && p->bytes_per_s < AFF_MIN_BYTES_PER_S) {
        snprintf(why, cap, "%.0f B/s on its sockets", p->bytes_per_s);
        return AFF_LOW;
    }
    if (p->bytes_per_s >= AFF_MIN_BYTES_PER_S &&
        (p->calls_per_s <= 0 || p->bytes_per_s / p->calls_per_s > AFF_MAX_BYTES_PER_CALL)) {
        int from_prof = prof && prof->best_bw > 0 && prof->min_interval_us > 0;
        double per_call = from_prof ? prof->best_bw * prof->min_interval_us * 1e-6
                                    : AFF_DFLT_BYTES_PER_CALL;
        iv = 1e6 * per_call / p->bytes_per_s;
        snprintf(src, sizeof(src), " (from its socket bytes at %.0f B per call%s: its %.0f "
                 "read/write calls/s cannot carry %.3g B/s)", per_call,
                 from_prof ? " as in the profile" : "", fmax(p->calls_per_s, 0), p->bytes_per_s);
    } else if (p->calls_per_s <= 0) {
        snprintf(why, cap, "no communication calls seen");
        return AFF_LOW;
    } else {
        iv = 1e6 / p->calls_per_s;
    }
    *interval_us = iv;
    if (cur >= AFF_HIGH)
        hi *= prm->band;
    if (cur >= AFF_MEDIUM)
        lo *= prm->band;
    if (iv <= hi) {
        snprintf(why, cap, "interval %.1f us%s <= %.1f us", iv, src, hi);
        return AFF_HIGH;
    }
    if (iv < lo) {
        snprintf(why, cap, "interval %.1f us%s in (%.1f, %.1f) us", iv, src, hi, lo);
        return AFF_MEDIUM;
    }
    snprintf(why, cap, "interval %.1f us%s >= %.1f us", iv, src, lo);
    return AFF_LOW;
}

/* CPU the process needs on a core of class @rel: what it uses now, or what
 * the profile measured for that class scaled by its share of the device's
 * best bandwidth, whichever is larger (a starved process uses less than
 * it needs). */
static double demand_for(const struct aff_pobs *p, const struct aff_prof_dev *prof, int rel)
{
    double d = p->cpu > 0 ? p->cpu : 0;

    if (prof) {
        const struct aff_meas *best = NULL;
        for (int i = 0; i < prof->nmeas; i++)
            if (prof->meas[i].rel == rel)
                best = &prof->meas[i];
        double pd = best ? best->cpu_proc : prof->demand;
        double scale = 1.0;
        if (p->bytes_per_s >= 0 && prof->best_bw > 0)
            scale = fmin(1.0, p->bytes_per_s / prof->best_bw);
        d = fmax(d, pd * scale);
    }
    return fmin(fmax(d, 0.05), 64.0);
}

/* Capacity is counted in cores: a core's idle capacity is the mean idle
 * share of its PUs, so a hyperthread beside a busy sibling is not an idle
 * core (the paper's machines had no SMT; its "idle core" is this). A
 * process's own use of a core is its CPU time spread over the core's PUs. */
struct ctx {
    const struct aff_model *m;
    const struct aff_params *prm;
    const struct aff_obs *obs;
    double *avail;          /* per core: idle capacity left, in cores */
    int    *npu;            /* per core: PUs */
    int    *core_of_pu;
};

static int proc_core(const struct ctx *x, const struct aff_pobs *p)
{
    return p->last_pu >= 0 && p->last_pu < x->obs->npu ? x->core_of_pu[p->last_pu] : -1;
}

/* Idle capacity of core @c as seen by process @p: its own use counts as
 * free where it runs now. */
static double own_share(const struct ctx *x, const struct aff_pobs *p, int c)
{
    return fmin(fmax(p->cpu, 0), 1.0 * x->npu[c]) / (x->npu[c] > 0 ? x->npu[c] : 1);
}

static double avail_for(const struct ctx *x, const struct aff_pobs *p, int c)
{
    return x->avail[c] + (proc_core(x, p) == c ? own_share(x, p, c) : 0);
}

static void take(struct ctx *x, const struct aff_pobs *p, hwloc_const_bitmap_t cores,
                 double demand)
{
    int now = proc_core(x, p), n = hwloc_bitmap_weight(cores), c;

    if (now >= 0)
        x->avail[now] += own_share(x, p, now);
    hwloc_bitmap_foreach_begin(c, cores) {
        x->avail[c] -= demand / (n > 0 ? n : 1);
    } hwloc_bitmap_foreach_end();
}

static void take_core(struct ctx *x, const struct aff_pobs *p, int core, double demand)
{
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    if (!one)
        return;
    hwloc_bitmap_set(one, core);
    take(x, p, one, demand);
    hwloc_bitmap_free(one);
}

/* Best single core, groups in order: returns core and group index, or -1. */
static int best_core(struct ctx *x, const struct aff_pobs *p, const struct aff_prof_dev *prof,
                     const struct aff_group *g, int ng, int below, double factor,
                     int *gi_out, double *demand_out, double *avail_out)
{
    for (int gi = 0; gi < ng && gi < below; gi++) {
        double dem = demand_for(p, prof, g[gi].rel);
        int best = -1, c;
        double besta = -1;
        hwloc_bitmap_foreach_begin(c, g[gi].cores) {
            double a = avail_for(x, p, c);
            if (a > besta + 1e-9) {
                besta = a;
                best = c;
            }
        } hwloc_bitmap_foreach_end();
        if (best >= 0 && besta >= dem * factor) {
            *gi_out = gi;
            *demand_out = dem;
            *avail_out = besta;
            return best;
        }
    }
    return -1;
}

static double group_avail(struct ctx *x, const struct aff_pobs *p, hwloc_const_bitmap_t cores)
{
    double a = 0;
    int c;
    hwloc_bitmap_foreach_begin(c, cores) {
        a += avail_for(x, p, c);
    } hwloc_bitmap_foreach_end();
    return a;
}

static int group_of_core(const struct aff_group *g, int ng, int core)
{
    for (int i = 0; i < ng; i++)
        if (hwloc_bitmap_isset(g[i].cores, core))
            return i;
    return -1;
}

static void set_core(struct ctx *x, struct aff_decision *d, struct aff_pstate *s, int core)
{
    hwloc_obj_t c = cvia__topo_core(x->m->topo, core);
    hwloc_bitmap_copy(d->cpuset, c->cpuset);
    d->core = core;
    d->changed = !(s->placed == 1 && s->core == core);
    d->action = d->changed ? AFF_ACT_PIN_CORE : AFF_ACT_KEEP;
    if (d->changed)
        s->since_move = 0;
    s->placed = 1;
    s->core = core;
    s->short_of = 0;
    hwloc_bitmap_copy(s->target, c->cpuset);
}

static void place_high(struct ctx *x, const struct aff_pobs *p, const struct aff_dev *dev,
                       struct aff_pstate *s, struct aff_decision *d, const char *lvl_why)
{
    const struct aff_prof_dev *prof = dev ? dev->prof : NULL;
    struct aff_group g[AFF_MAX_GROUPS];
    struct aff_dev any = { .anchor = -1 };
    char cores[256], anchor[64] = "";
    int ng, gi = -1, core;
    double dem = 0, av = 0;

    if (!dev) {
        any.local = (hwloc_bitmap_t)hwloc_topology_get_topology_cpuset(x->m->topo);
        dev = &any;
    }
    if ((ng = aff_groups(x->m, dev, g)) <= 0) {
        d->action = AFF_ACT_NONE;
        snprintf(d->reason, sizeof(d->reason), "high (%s); no core group", lvl_why);
        return;
    }
    if (dev->anchor >= 0)
        snprintf(anchor, sizeof(anchor), " of core %d", dev->anchor);
    /* where we put it before: stay while the core covers it */
    if (s->placed == 1 && s->core >= 0 && s->core < x->m->ncores) {
        int cur = s->core, cg = group_of_core(g, ng, cur);
        double need = demand_for(p, prof, cg >= 0 ? g[cg].rel : -1);
        double a = avail_for(x, p, cur);
        if (a >= need * x->prm->keep_factor) {
            int up = -1, ugi = -1;
            double ud = 0, ua = 0;
            if (s->since_move >= x->prm->min_dwell && cg > 0)
                up = best_core(x, p, prof, g, ng, cg, x->prm->better_factor, &ugi, &ud, &ua);
            if (up >= 0) {
                set_core(x, d, s, up);
                take_core(x, p, up, ud);
                d->demand = ud;
                d->avail = ua;
                snprintf(d->group, sizeof(d->group), "%s", g[ugi].label);
                snprintf(d->reason, sizeof(d->reason),
                         "high (%s); up from %s to %s%s: core %d idle %.2f >= %.2f x demand %.2f",
                         lvl_why, cg >= 0 ? g[cg].label : "?", g[ugi].label, anchor, up, ua,
                         x->prm->better_factor, ud);
            } else {
                set_core(x, d, s, cur);
                take_core(x, p, cur, need);
                d->demand = need;
                d->avail = a;
                snprintf(d->group, sizeof(d->group), "%s", cg >= 0 ? g[cg].label : "?");
                snprintf(d->reason, sizeof(d->reason),
                         "high (%s); stays on core %d (%s%s): idle %.2f covers demand %.2f",
                         lvl_why, cur, d->group, anchor, a, need);
            }
            aff_groups_free(g, ng);
            return;
        }
        if (++s->short_of < x->prm->short_periods) {
            set_core(x, d, s, cur);
            take_core(x, p, cur, need);
            s->short_of = x->prm->short_periods - 1;   /* set_core cleared it */
            d->demand = need;
            d->avail = a;
            snprintf(d->group, sizeof(d->group), "%s", cg >= 0 ? g[cg].label : "?");
            snprintf(d->reason, sizeof(d->reason),
                     "high (%s); core %d short (idle %.2f < %.2f x demand %.2f) for 1 period: waiting",
                     lvl_why, cur, a, x->prm->keep_factor, need);
            aff_groups_free(g, ng);
            return;
        }
    }
    core = best_core(x, p, prof, g, ng, ng, 1.0, &gi, &dem, &av);
    if (core >= 0) {
        char pre[64] = "";
        if (s->placed == 1 && s->core != core)
            snprintf(pre, sizeof(pre), "core %d fell short, moved to ", s->core);
        set_core(x, d, s, core);
        take_core(x, p, core, dem);
        d->demand = dem;
        d->avail = av;
        snprintf(d->group, sizeof(d->group), "%s", g[gi].label);
        snprintf(d->reason, sizeof(d->reason),
                 "high (%s); %score %d, %s%s%s: idle %.2f covers demand %.2f",
                 lvl_why, pre, core, g[gi].label, anchor,
                 gi > 0 ? " (better groups busy)" : "", av, dem);
        aff_groups_free(g, ng);
        return;
    }
    /* no single core covers it: the first group that does, as a set (a
     * group of every core would constrain nothing) */
    for (gi = 0; gi < ng; gi++) {
        if (hwloc_bitmap_weight(g[gi].cores) >= x->m->ncores)
            continue;
        dem = demand_for(p, prof, g[gi].rel);
        av = group_avail(x, p, g[gi].cores);
        if (av >= dem) {
            hwloc_bitmap_t pus = hwloc_bitmap_alloc();
            cvia__topo_cores_cpuset(x->m->topo, g[gi].cores, pus);
            d->changed = !(s->placed == 2 && hwloc_bitmap_isequal(s->target, pus));
            d->action = d->changed ? AFF_ACT_PIN_GROUP : AFF_ACT_KEEP;
            hwloc_bitmap_copy(d->cpuset, pus);
            hwloc_bitmap_copy(s->target, pus);
            hwloc_bitmap_free(pus);
            if (d->changed)
                s->since_move = 0;
            s->placed = 2;
            s->core = -1;
            take(x, p, g[gi].cores, dem);
            d->demand = dem;
            d->avail = av;
            snprintf(d->group, sizeof(d->group), "%s", g[gi].label);
            aff_fmt_cores(x->m->topo, g[gi].cores, cores, sizeof(cores));
            snprintf(d->reason, sizeof(d->reason),
                     "high (%s); no single core has idle %.2f: group %s%s, %s (idle %.2f)",
                     lvl_why, dem, g[gi].label, anchor, cores, av);
            aff_groups_free(g, ng);
            return;
        }
    }
    d->action = s->placed ? AFF_ACT_RELEASE : AFF_ACT_NONE;
    d->changed = s->placed != 0;
    s->placed = 0;
    s->core = -1;
    hwloc_bitmap_zero(s->target);
    snprintf(d->reason, sizeof(d->reason),
             "high (%s); no core or group has idle capacity for demand %.2f: left to the scheduler",
             lvl_why, demand_for(p, prof, -1));
    aff_groups_free(g, ng);
}

/* A medium process is confined to the smallest prefix of the groups (best
 * first, each widened by the next) whose idle capacity covers it: near the
 * device, but the scheduler still balances inside. */
static void place_medium(struct ctx *x, const struct aff_pobs *p, const struct aff_dev *dev,
                         struct aff_pstate *s, struct aff_decision *d, const char *lvl_why)
{
    const struct aff_prof_dev *prof = dev ? dev->prof : NULL;
    struct aff_group g[AFF_MAX_GROUPS];
    struct aff_dev any = { .anchor = -1 };
    hwloc_bitmap_t pus = hwloc_bitmap_alloc(), cores = hwloc_bitmap_alloc();
    char txt[256];
    int ng, gi;

    if (!dev) {
        any.local = (hwloc_bitmap_t)hwloc_topology_get_topology_cpuset(x->m->topo);
        dev = &any;
    }
    ng = aff_groups(x->m, dev, g);
    for (gi = 0; gi < ng && pus && cores; gi++) {
        double dem = demand_for(p, prof, g[gi].rel), av;
        int same;
        hwloc_bitmap_or(cores, cores, g[gi].cores);
        if (hwloc_bitmap_weight(cores) >= x->m->ncores)
            break;     /* every core: that is no placement */
        av = group_avail(x, p, cores);
        cvia__topo_cores_cpuset(x->m->topo, cores, pus);
        same = s->placed == 2 && hwloc_bitmap_isequal(s->target, pus);
        if (av < dem * (same ? x->prm->keep_factor : 1.0))
            continue;
        d->changed = !same;
        d->action = same ? AFF_ACT_KEEP : AFF_ACT_PIN_GROUP;
        if (!same)
            s->since_move = 0;
        hwloc_bitmap_copy(d->cpuset, pus);
        hwloc_bitmap_copy(s->target, pus);
        s->placed = 2;
        s->core = -1;
        take(x, p, cores, dem);
        d->demand = dem;
        d->avail = av;
        snprintf(d->group, sizeof(d->group), "%s", g[gi].label);
        aff_fmt_cores(x->m->topo, cores, txt, sizeof(txt));
        snprintf(d->reason, sizeof(d->reason),
                 "medium (%s); %s groups up to %s: %s, idle %.2f covers demand %.2f",
                 lvl_why, same ? "stays in the" : "confined to the", g[gi].label, txt, av, dem);
        goto out;
    }
    d->action = s->placed ? AFF_ACT_RELEASE : AFF_ACT_NONE;
    d->changed = s->placed != 0;
    s->placed = 0;
    s->core = -1;
    hwloc_bitmap_zero(s->target);
    snprintf(d->reason, sizeof(d->reason),
             "medium (%s); no group has idle capacity: left to the scheduler", lvl_why);
out:
    aff_groups_free(g, ng > 0 ? ng : 0);
    hwloc_bitmap_free(pus);
    hwloc_bitmap_free(cores);
}

struct order_item {
    int idx, level, placed_core;
    double rate;
    int pid;
};

static int order_cmp(const void *a, const void *b)
{
    const struct order_item *x = a, *y = b;
    if (x->level != y->level)
        return y->level - x->level;
    if (x->placed_core != y->placed_core)      /* incumbents keep their cores */
        return y->placed_core - x->placed_core;
    if (x->rate != y->rate)
        return x->rate < y->rate ? 1 : -1;
    return x->pid - y->pid;
}

int aff_decide(const struct aff_model *m, const struct aff_params *prm,
               const struct aff_obs *obs, struct aff_state *st, struct aff_decision **out)
{
    struct ctx x = { m, prm, obs, NULL, NULL, NULL };
    struct aff_decision *d;
    struct order_item *ord;
    char (*why)[320];
    int npu = obs->npu > 0 ? obs->npu : 1;

    *out = NULL;
    st->period++;
    d = calloc((size_t)obs->nproc + 1, sizeof(*d));
    ord = calloc((size_t)obs->nproc + 1, sizeof(*ord));
    why = calloc((size_t)obs->nproc + 1, sizeof(*why));
    x.avail = calloc((size_t)m->ncores + 1, sizeof(double));
    x.npu = calloc((size_t)m->ncores + 1, sizeof(int));
    x.core_of_pu = calloc((size_t)npu, sizeof(int));
    if (!d || !ord || !why || !x.avail || !x.npu || !x.core_of_pu)
        goto err_nomem;
    for (int i = 0; i < npu; i++)
        x.core_of_pu[i] = -1;
    for (int c = 0; c < m->ncores; c++) {
        hwloc_obj_t o = cvia__topo_core(m->topo, c);
        int pu;
        hwloc_bitmap_foreach_begin(pu, o->cpuset) {
            double b = pu < obs->npu ? obs->busy[pu] : 0;
            x.avail[c] += 1.0 - fmin(fmax(b, 0), 1);
            x.npu[c]++;
            if (pu < npu)
                x.core_of_pu[pu] = c;
        } hwloc_bitmap_foreach_end();
        if (x.npu[c] > 1)
            x.avail[c] /= x.npu[c];
    }
    for (int i = 0; i < st->n; i++)
        st->v[i].seen = 0;

    /* pass 1: levels */
    for (int i = 0; i < obs->nproc; i++) {
        const struct aff_pobs *p = &obs->proc[i];
        const struct aff_dev *dev = model_dev(m, p->device);
        struct aff_pstate *s = state_get(st, p->pid);
        double iv;
        int raw;

        if (!s || !(d[i].cpuset = hwloc_bitmap_alloc()))
            goto err_nomem;
        s->seen = 1;
        d[i].pid = p->pid;
        d[i].core = -1;
        d[i].bytes_per_s = p->bytes_per_s;
        snprintf(d[i].comm, sizeof(d[i].comm), "%s", p->comm);
        snprintf(d[i].device, sizeof(d[i].device), "%s", p->device);
        ord[i] = (struct order_item){ i, -1, 0, p->bytes_per_s, p->pid };
        if (p->fresh) {
            d[i].level = s->level;
            d[i].action = AFF_ACT_WAIT;
            snprintf(d[i].reason, sizeof(d[i].reason), "first period: measuring");
            continue;
        }
        raw = classify(p, dev ? dev->prof : NULL, s->level, prm, &iv, why[i], sizeof(why[i]));
        d[i].intensity_us = iv;
        if (raw > s->level) {
            s->level = raw;
            s->below = 0;
        } else if (raw < s->level) {
            if (++s->below >= prm->down_periods) {
                s->level = raw;
                s->below = 0;
            } else {
                size_t l = strlen(why[i]);
                snprintf(why[i] + l, sizeof(why[i]) - l, "; stays %s %d/%d periods",
                         aff_level_name(s->level), s->below, prm->down_periods);
            }
        } else {
            s->below = 0;
        }
        s->since_move++;
        d[i].level = s->level;
        ord[i].level = s->level;
        ord[i].placed_core = s->placed == 1;
    }
    qsort(ord, (size_t)obs->nproc, sizeof(*ord), order_cmp);

    /* pass 2: placements, most intense first */
    for (int k = 0; k < obs->nproc; k++) {
        int i = ord[k].idx;
        const struct aff_pobs *p = &obs->proc[i];
        const struct aff_dev *dev = model_dev(m, p->device);
        struct aff_pstate *s = state_get(st, p->pid);

        if (ord[k].level < 0)
            continue;
        if (s->level == AFF_HIGH) {
            place_high(&x, p, dev, s, &d[i], why[i]);
        } else if (s->level == AFF_MEDIUM) {
            place_medium(&x, p, dev, s, &d[i], why[i]);
        } else if (s->placed) {
            d[i].action = AFF_ACT_RELEASE;
            d[i].changed = 1;
            s->placed = 0;
            s->core = -1;
            hwloc_bitmap_zero(s->target);
            snprintf(d[i].reason, sizeof(d[i].reason), "low (%s): original affinity back",
                     why[i]);
        } else {
            d[i].action = AFF_ACT_NONE;
            snprintf(d[i].reason, sizeof(d[i].reason), "low (%s): left to the scheduler",
                     why[i]);
        }
    }
    /* processes gone since the last period */
    for (int i = 0; i < st->n;)
        if (!st->v[i].seen)
            aff_state_forget(st, st->v[i].pid);
        else
            i++;
    free(ord);
    free(why);
    free(x.avail);
    free(x.npu);
    free(x.core_of_pu);
    *out = d;
    return obs->nproc;

err_nomem:
    if (d)
        aff_decisions_free(d, obs->nproc);
    free(ord);
    free(why);
    free(x.avail);
    free(x.npu);
    free(x.core_of_pu);
    return -ENOMEM;
}
