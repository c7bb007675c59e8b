/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* `cvia-affinity analyze`: the variable analyser (paper 003, 3.2). For each
 * candidate <receive-processing core, process core> it runs bounded streams
 * of its own between namespaces it creates, over kernel TCP or over
 * corevia's network provider (--transport), and records bandwidth, the CPU
 * of the receiving process and of softirq work, and the interval between
 * receive calls (corevia: between received messages); from these: the best
 * core class per device, the CPU demand, and the intensity thresholds. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aff.h"
#include "aff_netns.h"
#include "aff_stream.h"
#include "aff_sys.h"
#include "util/param.h"

#define SUB "analyze"
#define MAX_RUNS 50
#define MAX_RATES 8

enum { OPT_TRANSPORT = 256, OPT_PROVIDER, OPT_WINDOW, OPT_LAUNCHER };

struct an_opts {
    int    dev_lo, dev_veth;
    int    irq_pu;
    double duration;
    int    runs;
    double rates[MAX_RATES];
    int    nrates;
    int    all_cores;
    int    mtu;
    size_t chunk;
    const char *output;
    int    json, quiet;
    int    corevia;            /* --transport corevia */
    const char *provider;      /* its CVIA_NET */
    int    window;             /* corevia: messages in flight */
    char   launcher[4096];     /* cvia-run */
    char   self[4096];         /* this executable, for the ranks */
};

struct sample {
    double bw, cpu_proc, cpu_softirq, interval_us;
};

struct cand {
    int    rel;            /* -1: unpinned */
    int    core;           /* -1: unpinned */
    int    n;
    struct sample s[MAX_RUNS];
    struct aff_meas med;
};

static struct aff_lab *live_lab;

static void on_signal(int sig)
{
    /* the keepers die with us anyway; this only makes it prompt */
    if (live_lab)
        aff_lab_down(live_lab);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The PUs of core @core, or (-1: unpinned) every PU of the machine. */
static hwloc_const_bitmap_t pus_of(hwloc_topology_t t, int core)
{
    hwloc_obj_t c = core >= 0 ? cvia__topo_core(t, core) : NULL;

    return c ? c->cpuset : hwloc_topology_get_topology_cpuset(t);
}

struct child_msg {
    int port;
    int rc;
    struct aff_stream_res r;
};

/* One stream over corevia: a cvia-run job, rank 0 (the sender) in the
 * sender namespace on @score, rank 1 in the receiver namespace on @core. */
static int one_stream_corevia(hwloc_topology_t t, struct aff_lab *lab, const struct an_opts *o,
                              int core, int score, double rate, double secs,
                              struct sample *out, char *err, size_t cap)
{
    char ks[64], kr[64], rcpus[256], scpus[256];
    struct aff_cstream_job j = { .launcher = o->launcher, .self = o->self,
                                 .provider = o->provider, .ns_send = ks, .ns_recv = kr };
    struct aff_cstream_opts co = { .secs = secs, .rate = rate, .omit = 0, .timeout = secs + 30,
                                   .chunk = o->chunk, .window = o->window,
                                   .recv_cpus = rcpus, .send_cpus = scpus };
    struct aff_cstream_res res;

    snprintf(ks, sizeof(ks), "/proc/%d/ns/net", (int)lab->keeper_s);
    snprintf(kr, sizeof(kr), "/proc/%d/ns/net", (int)lab->keeper_r);
    hwloc_bitmap_list_snprintf(rcpus, sizeof(rcpus), pus_of(t, core));
    hwloc_bitmap_list_snprintf(scpus, sizeof(scpus), pus_of(t, score));
    if (aff_cstream_run(&j, &co, &res, err, cap))
        return -1;
    out->bw = res.r.bytes / fmax(res.r.secs, res.send_secs);
    out->cpu_proc = res.cpu_cores;
    out->cpu_softirq = res.softirq_cores;
    out->interval_us = 1e6 * res.r.secs / res.r.calls;
    return 0;
}

/* One stream: sink in the receiver namespace on @core (-1: unpinned),
 * source in the sender namespace on @score. 0 or -1 (err says why). */
static int one_stream(hwloc_topology_t t, struct aff_lab *lab, const struct an_opts *o,
                      int core, int score, double rate, double secs, struct sample *out,
                      char *err, size_t cap)
{
    int sp[2], qp[2], status;
    pid_t sink, src;
    struct child_msg m = { 0 }, q = { 0 };
    struct aff_cpustat c0 = { 0 }, c1 = { 0 };
    long hz = sysconf(_SC_CLK_TCK);
    double si = 0, deadline;

    if (o->corevia)
        return one_stream_corevia(t, lab, o, core, score, rate, secs, out, err, cap);
    if (pipe2(sp, O_CLOEXEC) < 0 || pipe2(qp, O_CLOEXEC) < 0) {
        snprintf(err, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    if ((sink = fork()) == 0) {
        int lfd = -1, fd;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(sp[0]);
        if ((m.rc = aff_lab_enter(lab->keeper_r)) == 0) {
            aff_pin_self(pus_of(t, core));
            lfd = aff_stream_listen(lab->raddr, 0, &m.port);
            if (lfd < 0)
                m.rc = lfd;
        }
        (void)!write(sp[1], &m, sizeof(m));   /* ready: the port */
        if (m.rc)
            _exit(1);
        fd = aff_stream_accept(lfd, secs + 20);
        m.rc = fd < 0 ? fd : aff_stream_recv(fd, o->chunk, secs + 20, 0, &m.r);
        (void)!write(sp[1], &m, sizeof(m));
        _exit(0);
    }
    close(sp[1]);
    if (sink < 0 || read(sp[0], &m, sizeof(m)) != sizeof(m) || m.rc) {
        snprintf(err, cap, "receiver could not start: %s", m.rc ? strerror(-m.rc) : "fork");
        goto err_kill;
    }
    aff_cpustat_read(&c0);
    if ((src = fork()) == 0) {
        int fd;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(qp[0]);
        if ((q.rc = aff_lab_enter(lab->keeper_s)) == 0) {
            aff_pin_self(pus_of(t, score));
            fd = aff_stream_connect(lab->raddr, m.port, 10);
            q.rc = fd < 0 ? fd : aff_stream_send(fd, secs, rate, o->chunk, &q.r);
        }
        (void)!write(qp[1], &q, sizeof(q));
        _exit(0);
    }
    close(qp[1]);
    deadline = cvia__clock_s() + secs + 30;
    /* bounded wait for the receiver's result */
    for (;;) {
        struct pollfd p = { .fd = sp[0], .events = POLLIN };
        int left = (int)((deadline - cvia__clock_s()) * 1000);
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            snprintf(err, cap, "stream did not finish within %.0f s", secs + 30);
            kill(src, SIGKILL);
            goto err_kill;
        }
        break;
    }
    if (read(sp[0], &m, sizeof(m)) != sizeof(m) || read(qp[0], &q, sizeof(q)) != sizeof(q)) {
        snprintf(err, cap, "a stream process died");
        kill(src, SIGKILL);
        goto err_kill;
    }
    waitpid(src, &status, 0);
    waitpid(sink, &status, 0);
    aff_cpustat_read(&c1);
    for (int c = 0; c < c0.n && c < c1.n; c++)
        si += (double)(c1.softirq[c] - c0.softirq[c]);
    aff_cpustat_free(&c0);
    aff_cpustat_free(&c1);
    close(sp[0]);
    close(qp[0]);
    if (m.rc || q.rc) {
        snprintf(err, cap, "stream failed: %s", strerror(-(m.rc ? m.rc : q.rc)));
        return -1;
    }
    if (m.r.secs <= 0 || m.r.calls < 2) {
        snprintf(err, cap, "stream moved almost nothing (%.0f bytes)", m.r.bytes);
        return -1;
    }
    /* over the longer of the receiver's time (first to last byte) and the
     * sender's: a receiver that started late and drained buffered data in a
     * burst does not count as fast */
    out->bw = m.r.bytes / fmax(m.r.secs, q.r.secs);
    out->cpu_proc = m.r.cpu_s / m.r.secs;
    out->cpu_softirq = si / (double)(hz > 0 ? hz : 100) / m.r.secs;
    out->interval_us = 1e6 * m.r.secs / m.r.calls;
    return 0;

err_kill:
    if (sink > 0) {
        kill(sink, SIGKILL);
        waitpid(sink, NULL, 0);
    }
    aff_cpustat_free(&c0);
    close(sp[0]);
    close(qp[0]);
    return -1;
}

/* Medians of candidate @k's samples, or (@by_class) of every candidate of
 * its class. */
static struct aff_meas pool(const struct cand *cand, int ncand, int k, int by_class)
{
    static double v[4][64 * MAX_RUNS];
    int n = 0;

    for (int j = 0; j < ncand; j++) {
        if (by_class ? cand[j].rel != cand[k].rel : j != k)
            continue;
        for (int i = 0; i < cand[j].n; i++, n++) {
            v[0][n] = cand[j].s[i].bw;
            v[1][n] = cand[j].s[i].cpu_proc;
            v[2][n] = cand[j].s[i].cpu_softirq;
            v[3][n] = cand[j].s[i].interval_us;
        }
    }
    return (struct aff_meas){ cand[k].rel, median(v[0], n), median(v[1], n), median(v[2], n),
                              median(v[3], n), n };
}

static const char *cand_name(const struct cand *c)
{
    return c->rel < 0 ? "unpinned" : cvia__topo_rel_name(c->rel);
}

static void progress(const struct an_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void progress(const struct an_opts *o, const char *fmt, ...)
{
    va_list ap;
    if (o->quiet)
        return;
    fprintf(stderr, "cvia-affinity analyze: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* CPU per byte matters more than the raw sum: compare at equal bandwidth */
static double cpu_total(const struct aff_meas *m)
{
    return m->cpu_proc + m->cpu_softirq;
}

static int analyze_device(hwloc_topology_t t, const struct an_opts *o, enum aff_lab_kind kind,
                          struct aff_prof_dev *pd, FILE *txt)
{
    struct aff_lab lab;
    struct cand cand[64];
    int ncand = 0, irq_core = cvia__topo_core_of_pu(t, (unsigned)o->irq_pu), sender = -1;
    int ncores = cvia__topo_ncores(t), best = -1, worst = -1;
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    char err[512];
    const char *dname = kind == AFF_LAB_LOOPBACK ? "lo" : "veth";
    const char *what = o->corevia ? "messages" : "reads";   /* the calls timed */
    char tname[48];
    double paced_iv[MAX_RATES], paced_best[MAX_RATES], paced_worst[MAX_RATES];
    int matters[MAX_RATES + 1];
    struct aff_meas best_m, worst_m;
    char sender_txt[32];

    memset(pd, 0, sizeof(*pd));
    if (irq_core < 0) {
        aff_err(SUB, "--irq-core %d: no such PU here", o->irq_pu);
        hwloc_bitmap_free(used);
        return -1;
    }
    /* one core per class around the receive-processing core (or all) */
    for (int rel = 0; rel < CVIA_REL_COUNT; rel++)
        for (int c = 0; c < ncores && ncand < 63; c++)
            if (cvia__topo_relation(t, irq_core, c) == rel) {
                cand[ncand++] = (struct cand){ .rel = rel, .core = c };
                hwloc_bitmap_set(used, c);
                if (!o->all_cores)
                    break;
            }
    cand[ncand++] = (struct cand){ .rel = -1, .core = -1 };
    /* the sender on a core none of the candidates uses, else unpinned */
    for (int c = ncores - 1; c >= 0 && sender < 0; c--)
        if (!hwloc_bitmap_isset(used, c) && c != irq_core)
            sender = c;
    hwloc_bitmap_free(used);

    if (aff_lab_up(&lab, kind, o->mtu, err, sizeof(err))) {
        aff_err(SUB, "%s: %s", dname, err);
        return -1;
    }
    live_lab = &lab;
    if (aff_lab_rps(&lab, cvia__topo_core_first_pu(t, irq_core)) < 0) {
        aff_err(SUB, "%s: cannot set rps_cpus of %s: %s", dname, lab.rdev, strerror(errno));
        goto err_down;
    }
    if (o->corevia)
        snprintf(tname, sizeof(tname), "corevia %s", o->provider);
    else
        snprintf(tname, sizeof(tname), "kernel TCP");
    if (sender >= 0)
        snprintf(sender_txt, sizeof(sender_txt), "on core %d", sender);
    else
        snprintf(sender_txt, sizeof(sender_txt), "unpinned");
    progress(o, "%s: %s streams, receive processing (rps_cpus) on core %d (PU %d), sender %s, "
             "%d candidate(s) x %d run(s) x %.1f s", dname, tname, irq_core,
             cvia__topo_core_first_pu(t, irq_core), sender_txt, ncand, o->runs, o->duration);
    for (int r = 0; r < o->runs; r++)
        for (int k = 0; k < ncand; k++) {
            struct cand *c = &cand[(k + r) % ncand];   /* rotate: interleaved runs */
            struct sample s;
            if (one_stream(t, &lab, o, c->core, sender, 0, o->duration, &s, err, sizeof(err))) {
                aff_err(SUB, "%s: %s", dname, err);
                goto err_down;
            }
            c->s[c->n++] = s;
            progress(o, "%s: run %d/%d: %-8s core %-3d %8.3f Gbit/s  process %.2f core  "
                     "softirq %.2f core  %.1f us between %s", dname, r + 1, o->runs,
                     cand_name(c), c->core, 8e-9 * s.bw, s.cpu_proc, s.cpu_softirq,
                     s.interval_us, what);
        }
    /* medians per candidate (for the table) and per class (samples of all
     * its cores pooled) */
    for (int k = 0; k < ncand; k++)
        cand[k].med = pool(cand, ncand, k, 0);
    {
        int cls[CVIA_REL_COUNT], n = 0;
        for (int k = 0; k < ncand; k++)
            if (cand[k].rel >= 0 && (n == 0 || cls[n - 1] != cand[k].rel))
                cls[n++] = cand[k].rel;
        struct aff_meas m[CVIA_REL_COUNT];
        for (int i = 0; i < n; i++)
            for (int k = 0; k < ncand; k++)
                if (cand[k].rel == cls[i]) {
                    m[i] = pool(cand, ncand, k, 1);
                    break;
                }
        /* rank: bandwidth, and within 2% the lower CPU */
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0; j--) {
                const struct aff_meas *a = &m[j - 1], *b = &m[j];
                int swap = fabs(a->bw - b->bw) <= 0.02 * fmax(a->bw, b->bw)
                           ? cpu_total(b) < cpu_total(a) : b->bw > a->bw;
                if (!swap)
                    break;
                struct aff_meas x = m[j];
                m[j] = m[j - 1];
                m[j - 1] = x;
            }
        for (int i = 0; i < n; i++) {
            pd->rank[pd->nrank++] = m[i].rel;
            pd->meas[pd->nmeas++] = m[i];
        }
        for (int k = 0; k < ncand; k++)
            if (cand[k].rel < 0)
                pd->meas[pd->nmeas++] = cand[k].med;
        for (int k = 0; k < ncand; k++) {
            if (best < 0 && cand[k].rel == m[0].rel)
                best = k;
            if (worst < 0 && cand[k].rel == m[n - 1].rel)
                worst = k;
        }
        pd->demand = m[0].cpu_proc;
        pd->best_bw = m[0].bw;
        best_m = m[0];
        worst_m = m[n - 1];
    }
    snprintf(pd->device, sizeof(pd->device), "%s", dname);
    snprintf(pd->driver, sizeof(pd->driver), "%s", kind == AFF_LAB_LOOPBACK ? "loopback" : "veth");
    snprintf(pd->transport, sizeof(pd->transport), "%s", o->corevia ? "corevia" : "kernel-tcp");
    snprintf(pd->provider, sizeof(pd->provider), "%s", o->corevia ? o->provider : "");
    pd->min_interval_us = INFINITY;
    for (int k = 0; k < ncand; k++)
        pd->min_interval_us = fmin(pd->min_interval_us, cand[k].med.interval_us);

    /* thresholds: at which rates does the placement still matter? It
     * matters where the best and worst class differ by the margins below
     * in their medians and their runs do not overlap (this machine is
     * noisy: one lucky run is not a difference) */
    {
        double lo[2][2] = { { INFINITY, INFINITY }, { INFINITY, INFINITY } };
        double hi[2][2] = { { 0, 0 }, { 0, 0 } };   /* [best|worst][bw|cpu per byte] */
        for (int k = 0; k < ncand; k++)
            for (int w = 0; w < 2; w++)
                if (cand[k].rel == (w ? worst_m.rel : best_m.rel))
                    for (int i = 0; i < cand[k].n; i++) {
                        double bw = cand[k].s[i].bw;
                        double cpb = (cand[k].s[i].cpu_proc + cand[k].s[i].cpu_softirq) / bw;
                        lo[w][0] = fmin(lo[w][0], bw);
                        hi[w][0] = fmax(hi[w][0], bw);
                        lo[w][1] = fmin(lo[w][1], cpb);
                        hi[w][1] = fmax(hi[w][1], cpb);
                    }
        matters[0] = (worst_m.bw < 0.95 * best_m.bw && hi[1][0] < lo[0][0]) ||
                     (cpu_total(&worst_m) / worst_m.bw > 1.10 * cpu_total(&best_m) / best_m.bw &&
                      lo[1][1] > hi[0][1]);
    }
    for (int i = 0; i < o->nrates; i++) {
        double rate = o->rates[i] * pd->best_bw, secs = fmin(o->duration, 1.0);
        double bwv[2][MAX_RUNS], cpv[2][MAX_RUNS], ivv[MAX_RUNS], mb[2], mc[2];
        double cmin[2] = { INFINITY, INFINITY }, cmax[2] = { 0, 0 };
        for (int r = 0; r < o->runs; r++)
            for (int w = 0; w < 2; w++) {
                int which = (w + r) % 2;    /* alternate who goes first */
                struct sample smp;
                if (which == 1 && worst == best) {
                    bwv[1][r] = bwv[0][r];
                    cpv[1][r] = cpv[0][r];
                    continue;
                }
                if (one_stream(t, &lab, o, cand[which ? worst : best].core, sender, rate, secs,
                               &smp, err, sizeof(err))) {
                    aff_err(SUB, "%s: paced stream: %s", dname, err);
                    goto err_down;
                }
                bwv[which][r] = smp.bw;
                cpv[which][r] = smp.cpu_proc + smp.cpu_softirq;
                cmin[which] = fmin(cmin[which], cpv[which][r]);
                cmax[which] = fmax(cmax[which], cpv[which][r]);
                if (which == 0)
                    ivv[r] = smp.interval_us;
            }
        if (worst == best) {
            cmin[1] = cmin[0];
            cmax[1] = cmax[0];
        }
        for (int w = 0; w < 2; w++) {
            mb[w] = median(bwv[w], o->runs);
            mc[w] = median(cpv[w], o->runs);
        }
        paced_iv[i] = median(ivv, o->runs);
        paced_best[i] = mc[0];
        paced_worst[i] = mc[1];
        matters[i + 1] = mb[1] < 0.95 * mb[0] ||
                         (fabs(mc[1] - mc[0]) >= fmax(0.05, 0.10 * mc[0]) &&
                          (cmin[1] > cmax[0] || cmax[1] < cmin[0]));
        progress(o, "%s: paced at %.0f%% (%.3f Gbit/s), %d run(s): %s %.2f core, %s %.2f core, "
                 "%.1f us between %s: placement %s", dname, 100 * o->rates[i], 8e-9 * rate,
                 o->runs, cand_name(&cand[best]), paced_best[i], cand_name(&cand[worst]),
                 paced_worst[i], paced_iv[i], what,
                 matters[i + 1] ? "matters" : "does not matter");
    }
    aff_lab_down(&lab);
    live_lab = NULL;
    if (!matters[0] || best_m.rel == worst_m.rel) {
        pd->high_interval_us = 2 * pd->min_interval_us;
        pd->low_interval_us = 20 * pd->min_interval_us;
        snprintf(pd->derivation, sizeof(pd->derivation),
                 "fallback: placement changed nothing measurable here (best and worst class "
                 "within 5%% bandwidth and 10%% CPU per byte, or their runs overlap); high = 2x, "
                 "low = 20x the shortest interval");
    } else {
        int hi = 0;   /* index into matters[]: 0 = saturation */
        while (hi < o->nrates && matters[hi + 1])
            hi++;
        pd->high_interval_us = 1.2 * (hi == 0 ? pd->min_interval_us : paced_iv[hi - 1]);
        if (hi < o->nrates)
            pd->low_interval_us = paced_iv[hi];
        else
            pd->low_interval_us = 10 * pd->high_interval_us;
        if (pd->low_interval_us <= pd->high_interval_us)
            pd->low_interval_us = 2 * pd->high_interval_us;
        snprintf(pd->derivation, sizeof(pd->derivation),
                 "measured: placement matters down to %.0f%% of the best bandwidth, not at "
                 "%s", hi == 0 ? 100.0 : 100 * o->rates[hi - 1],
                 hi < o->nrates ? "the next rate tested" : "any rate tested (low = 10x high)");
    }
    if (txt) {
        fprintf(txt, "device %s (%s, MTU %d) over %s: receive processing on core %d (PU %d, "
                "rps_cpus), sender %s\n", pd->device, kind == AFF_LAB_LOOPBACK ? "loopback in a "
                "private namespace" : "veth pair between two namespaces", o->mtu, tname,
                irq_core, cvia__topo_core_first_pu(t, irq_core), sender_txt);
        fprintf(txt, "  %-9s %5s %14s %12s %12s %14s\n", "class", "core", "bandwidth",
                "process CPU", "softirq CPU", o->corevia ? "msg interval" : "read interval");
        for (int k = 0; k < ncand; k++)
            fprintf(txt, "  %-9s %5d %9.3f Gb/s %12.2f %12.2f %11.1f us\n", cand_name(&cand[k]),
                    cand[k].core, 8e-9 * cand[k].med.bw, cand[k].med.cpu_proc,
                    cand[k].med.cpu_softirq, cand[k].med.interval_us);
        fprintf(txt, "  best first:");
        for (int i = 0; i < pd->nrank; i++)
            fprintf(txt, " %s", cvia__topo_rel_name(pd->rank[i]));
        fprintf(txt, "; demand %.2f core; high <= %.1f us, low >= %.1f us between calls\n"
                "  (%s)\n", pd->demand, pd->high_interval_us, pd->low_interval_us,
                pd->derivation);
    }
    return 0;

err_down:
    aff_lab_down(&lab);
    live_lab = NULL;
    return -1;
}

static void analyze_usage(FILE *f)
{
    char provs[128];

    aff_cstream_providers(provs, sizeof(provs));
    fprintf(f,
"Usage: cvia-affinity analyze [OPTIONS]\n"
"The variable analyser. In network namespaces it creates (and always removes),\n"
"it steers the receive processing of a device to one core (rps_cpus, standing\n"
"for a NIC's interrupt core) and runs bounded streams of its own with the\n"
"receiving process on one core of each class around it (same core, sharing L2,\n"
"sharing L3, same NUMA node, same package, remote) and unpinned. It records\n"
"bandwidth, the CPU of the process and of softirq work, and the interval\n"
"between receive calls; ranks the classes; derives the CPU demand and the\n"
"high/medium/low intensity thresholds from paced streams; writes a profile.\n"
"The streams go over kernel TCP, or over corevia's network provider: then each\n"
"is a cvia-run job of two ranks in the two namespaces of the veth pair, and\n"
"the interval is the one between received messages (the provider's system\n"
"calls are made inside the library, where they cannot be counted). Progress\n"
"goes to stderr.\n"
"\n"
"      --transport kernel-tcp|corevia\n"
"                        what the streams go over (default: kernel-tcp)\n"
"      --provider NAME   corevia: the network provider, passed to the ranks\n"
"                        as CVIA_NET (default: $CVIA_NET, else tcp; built: %s)\n"
"      --window N        corevia: messages in flight (default: 16)\n"
"      --launcher PATH   corevia: cvia-run (default: next to cvia-affinity,\n"
"                        then in the build tree, then in PATH)\n"
"  -D, --device lo|veth  measure this device kind; repeatable (default: both;\n"
"                        corevia: veth, since ranks of one namespace use shm)\n"
"  -I, --irq-core PU     PU that does the receive processing (default: 0)\n"
"  -t, --duration TIME   length of each stream (default: 2s)\n"
"  -r, --runs N          interleaved runs per candidate, medians kept (default: 3)\n"
"  -R, --rates LIST      paced rates, fractions of the best bandwidth, for the\n"
"                        thresholds (default: 0.5,0.2,0.05)\n"
"  -a, --all-cores       every core as a candidate, not one per class\n"
"  -m, --mtu N           MTU of the veth pair (default: 1500)\n"
"  -C, --chunk SIZE      bytes per read/write call or message (default: 128k)\n"
"  -o, --output FILE     write the profile (JSON) to FILE (default: not written)\n"
"  -j, --json            print the profile (JSON) on stdout instead of the table\n"
"  -q, --quiet           no progress on stderr\n"
"  -h, --help            this help\n", provs);
}

int aff_analyze_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "device", required_argument, NULL, 'D' },
        { "irq-core", required_argument, NULL, 'I' },
        { "duration", required_argument, NULL, 't' },
        { "runs", required_argument, NULL, 'r' },
        { "rates", required_argument, NULL, 'R' },
        { "all-cores", no_argument, NULL, 'a' },
        { "mtu", required_argument, NULL, 'm' },
        { "chunk", required_argument, NULL, 'C' },
        { "output", required_argument, NULL, 'o' },
        { "json", no_argument, NULL, 'j' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "transport", required_argument, NULL, OPT_TRANSPORT },
        { "provider", required_argument, NULL, OPT_PROVIDER },
        { "window", required_argument, NULL, OPT_WINDOW },
        { "launcher", required_argument, NULL, OPT_LAUNCHER },
        { NULL, 0, NULL, 0 }
    };
    struct an_opts o = { .irq_pu = 0, .duration = 2, .runs = 3, .rates = { 0.5, 0.2, 0.05 },
                         .nrates = 3, .mtu = 1500, .chunk = 128 * 1024, .window = 16 };
    const char *launcher = NULL;
    char provs[128];
    int window_set = 0;
    struct aff_profile prof = { 0 };
    hwloc_topology_t t;
    char err[512], notes[768];
    int c, rc = 1;
    long v;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":D:I:t:r:R:am:C:o:jqh", opts, NULL)) != -1) {
        switch (c) {
        case 'D':
            if (!strcmp(optarg, "lo") || !strcmp(optarg, "loopback"))
                o.dev_lo = 1;
            else if (!strcmp(optarg, "veth"))
                o.dev_veth = 1;
            else
                aff_usage_error(SUB, "--device %s: this tool measures lo and veth (a physical "
                                "NIC needs a remote peer, which it does not drive)", optarg);
            break;
        case 'I':
            if (cvia__parse_long(optarg, &v) || v < 0 || v >= CPU_SETSIZE)
                aff_usage_error(SUB, "--irq-core %s: expected a PU number", optarg);
            o.irq_pu = (int)v;
            break;
        case 't':
            if (cvia__parse_time(optarg, &o.duration) || o.duration < 0.05 || o.duration > 600)
                aff_usage_error(SUB, "--duration %s: expected 50ms to 10m", optarg);
            break;
        case 'r':
            if (cvia__parse_long(optarg, &v) || v < 1 || v > MAX_RUNS)
                aff_usage_error(SUB, "--runs %s: expected 1 to %d", optarg, MAX_RUNS);
            o.runs = (int)v;
            break;
        case 'R': {
            char buf[256], *save = NULL, *tok;
            snprintf(buf, sizeof(buf), "%s", optarg);
            o.nrates = 0;
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *end;
                double f = strtod(tok, &end);
                if (*end || !(f > 0 && f < 1) || o.nrates == MAX_RATES)
                    aff_usage_error(SUB, "--rates %s: expected fractions in (0, 1), "
                                    "largest first", optarg);
                if (o.nrates && f >= o.rates[o.nrates - 1])
                    aff_usage_error(SUB, "--rates %s: largest first", optarg);
                o.rates[o.nrates++] = f;
            }
            break;
        }
        case 'a': o.all_cores = 1; break;
        case 'm':
            if (cvia__parse_long(optarg, &v) || v < 576 || v > 65535)
                aff_usage_error(SUB, "--mtu %s: expected 576 to 65535", optarg);
            o.mtu = (int)v;
            break;
        case 'C':
            if (cvia__parse_size(optarg, &o.chunk) || o.chunk < 1024 || o.chunk > (16u << 20))
                aff_usage_error(SUB, "--chunk %s: expected 1k to 16m", optarg);
            break;
        case 'o': o.output = optarg; break;
        case 'j': o.json = 1; break;
        case 'q': o.quiet = 1; break;
        case OPT_TRANSPORT:
            if (!strcmp(optarg, "corevia"))
                o.corevia = 1;
            else if (!strcmp(optarg, "kernel-tcp"))
                o.corevia = 0;
            else
                aff_usage_error(SUB, "--transport %s: expected kernel-tcp or corevia", optarg);
            break;
        case OPT_PROVIDER: o.provider = optarg; break;
        case OPT_WINDOW:
            if (cvia__parse_long(optarg, &v) || v < 1 || v > 1024)
                aff_usage_error(SUB, "--window %s: expected 1 to 1024", optarg);
            o.window = (int)v;
            window_set = 1;
            break;
        case OPT_LAUNCHER: launcher = optarg; break;
        case 'h': analyze_usage(stdout); return 0;
        default: aff_getopt_fail(SUB, c, argv);
        }
    }
    if (optind < argc)
        aff_usage_error(SUB, "unexpected argument %s", argv[optind]);
    if (!o.corevia && (o.provider || launcher || window_set))
        aff_usage_error(SUB, "--%s is for --transport corevia", o.provider ? "provider" :
                        launcher ? "launcher" : "window");
    if (o.corevia) {
        if (o.dev_lo)
            aff_usage_error(SUB, "--device lo: corevia joins ranks of one namespace by shared "
                            "memory, not by its network provider: --transport corevia "
                            "measures veth only");
        o.dev_veth = 1;
        if (!o.provider)
            o.provider = getenv("CVIA_NET") && *getenv("CVIA_NET") ? getenv("CVIA_NET") : "tcp";
        if (!aff_cstream_provider_ok(o.provider)) {
            aff_cstream_providers(provs, sizeof(provs));
            aff_usage_error(SUB, "--provider %s: this corevia has no such network provider "
                            "(it has: %s)", o.provider, provs);
        }
    }
    if (!o.dev_lo && !o.dev_veth)
        o.dev_lo = o.dev_veth = 1;
    if (getenv("CVIA_TOPOLOGY") && *getenv("CVIA_TOPOLOGY")) {
        aff_err(SUB, "measures this machine: unset CVIA_TOPOLOGY");
        return 1;
    }
    if (geteuid() != 0) {
        aff_err(SUB, "needs root (it creates network namespaces and sets rps_cpus)");
        return 1;
    }
    if (o.corevia) {
        struct stat st;
        if (aff_find_launcher(o.self, sizeof(o.self), o.launcher, sizeof(o.launcher))) {
            if (!launcher) {
                aff_err(SUB, "--transport corevia: cvia-run not found next to %s, in the "
                        "build tree nor in PATH; give --launcher", o.self[0] ? o.self : "us");
                return 1;
            }
        }
        if (launcher) {
            if (stat(launcher, &st) || !S_ISREG(st.st_mode) || access(launcher, X_OK)) {
                aff_err(SUB, "--launcher %s: not an executable file", launcher);
                return 1;
            }
            snprintf(o.launcher, sizeof(o.launcher), "%s", launcher);
        }
        if (!o.self[0]) {
            aff_err(SUB, "cannot find our own executable in /proc/self/exe");
            return 1;
        }
    }
    if (o.output) {   /* fail now, not after a minute of measuring */
        FILE *f = fopen(o.output, "a");
        if (!f) {
            aff_err(SUB, "cannot write %s: %s", o.output, strerror(errno));
            return 1;
        }
        fclose(f);
    }
    if (cvia__topo_open_path(NULL, &t, err, sizeof(err)))
        return 1;
    if (cvia__topo_core_of_pu(t, (unsigned)o.irq_pu) < 0) {
        aff_err(SUB, "--irq-core %d: no such PU here", o.irq_pu);
        hwloc_topology_destroy(t);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    if (o.corevia)
        snprintf(notes, sizeof(notes), "streams over corevia's %s provider (cvia-run jobs of two "
                 "ranks, %zu-byte messages, %d in flight) between two namespaces; intervals are "
                 "between received messages: the provider's own system calls are made inside "
                 "the library and are not counted; process CPU includes its progress polling; "
                 "receive processing placed with rps_cpus; %d run(s) of %.2f s per candidate, "
                 "medians", o.provider, o.chunk, o.window, o.runs, o.duration);
    else
        snprintf(notes, sizeof(notes), "streams over kernel TCP (read/write of %zu bytes); "
                 "receive processing placed with rps_cpus; %d run(s) of %.2f s per candidate, "
                 "medians", o.chunk, o.runs, o.duration);
    if (o.dev_lo && analyze_device(t, &o, AFF_LAB_LOOPBACK, &prof.dev[prof.ndev],
                                   o.json ? NULL : stdout) == 0)
        prof.ndev++;
    else if (o.dev_lo)
        goto out;
    if (o.dev_veth && analyze_device(t, &o, AFF_LAB_VETH, &prof.dev[prof.ndev],
                                     o.json ? NULL : stdout) == 0)
        prof.ndev++;
    else if (o.dev_veth)
        goto out;
    if (!o.json)
        printf("note: %s\n", notes);
    if (o.output || o.json) {
        FILE *f = o.output ? fopen(o.output, "w") : stdout;
        struct jw w;
        if (!f) {
            aff_err(SUB, "cannot write %s: %s", o.output, strerror(errno));
            goto out;
        }
        jw_init(&w, f);
        jw_obj(&w, NULL);
        aff_profile_write(&prof, &w, notes);
        jw_end_obj(&w);
        if (o.output && fclose(f)) {
            aff_err(SUB, "cannot write %s: %s", o.output, strerror(errno));
            goto out;
        }
        if (o.output && o.json) {   /* both: the file, and the same on stdout */
            jw_init(&w, stdout);
            jw_obj(&w, NULL);
            aff_profile_write(&prof, &w, notes);
            jw_end_obj(&w);
        }
        if (o.output)
            progress(&o, "profile written to %s", o.output);
    }
    rc = 0;
out:
    hwloc_topology_destroy(t);
    return rc;
}
