/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* `cvia-affinity daemon`: the dynamic decision module (paper 003, 3.3).
 * Every period: observe (aff_sys.c), decide (aff_decide.c), apply
 * (sched_setaffinity on every thread of a process), log. --replay runs the
 * same decisions on recorded observations, for tests. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "aff.h"
#include "aff_sys.h"
#include "util/param.h"

#define SUB "daemon"
#define MAX_SOCKS 1024
#define MAX_TASKS 512

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
    stop_sig = sig;
}


static void daemon_usage(FILE *f)
{
    fprintf(f,
"Usage: cvia-affinity daemon [OPTIONS] (--pid PID | --comm NAME | --cgroup PATH)...\n"
"       cvia-affinity daemon --replay FILE [--topology FILE] [--irqs FILE] [--profile FILE]\n"
"The dynamic decision module. Every period it measures each watched process's\n"
"communication intensity (the interval between its read/write calls from\n"
"/proc/PID/io, its TCP bytes from sock_diag) and each core's idle capacity\n"
"(/proc/stat); pins high-intensity processes to the best core near their\n"
"device's interrupt core whose idle capacity covers their demand, else to the\n"
"next group; confines medium ones to the best group; leaves low ones to the\n"
"scheduler. On SIGTERM or SIGINT it gives every process its original affinity.\n"
"\n"
"  -P, --pid PID[,PID]   watch these processes (all their threads)\n"
"  -c, --comm NAME       watch processes whose command name is NAME\n"
"  -g, --cgroup PATH     watch the processes of this cgroup (v2) and below it;\n"
"                        relative paths are under /sys/fs/cgroup\n"
"  -p, --profile FILE    profile written by analyze: core order, CPU demand and\n"
"                        intensity thresholds per device (default: none; then\n"
"                        high <= %.0f us between calls, low >= %.0f us, demand =\n"
"                        measured CPU use)\n"
"  -T, --period TIME     decision period (default: 1s)\n"
"  -d, --duration TIME   stop after this long (default: run until signalled)\n"
"  -q, --irq-core IF=PU  receive processing of interface IF runs on PU (for\n"
"                        devices without interrupt lines; default: its rps_cpus,\n"
"                        else its interrupts' smp_affinity)\n"
"  -n, --dry-run         decide and log, change nothing\n"
"  -j, --json            one JSON object per decision on stdout\n"
"  -v, --verbose         log every decision each period (default: only new ones)\n"
"  -r, --replay FILE     decide on recorded observations (JSON periods) instead of\n"
"                        this machine; implies --dry-run\n"
"  -t, --topology FILE|DIR  with --replay: the recorded machine (default: this one)\n"
"  -i, --irqs FILE       with --replay: interrupt lines per interface (JSON)\n"
"  -h, --help            this help\n",
            AFF_DFLT_HIGH_INTERVAL_US, AFF_DFLT_LOW_INTERVAL_US);
}

/* ---- live --------------------------------------------------------------------- */

struct sock_prev {
    unsigned long inode;
    uint64_t bytes;
};

struct tracked {
    int    pid;
    unsigned long long start;
    char   comm[32];
    int    seen, fresh;
    double t_prev;
    unsigned long long cpu_prev, calls_prev;
    int    nsock;
    struct sock_prev socks[64];
    unsigned long netns;
    /* affinities: what we found and what we set */
    int    touched;
    cpu_set_t applied, orig_main;
    int    ntask;
    pid_t  tid[64];
    cpu_set_t orig[64];
    /* last decision logged */
    int    last_action, last_level;
    cpu_set_t last_set;
};

struct live {
    struct aff_env *e;
    struct aff_dopts *o;
    struct aff_model m;
    struct aff_params prm;
    struct aff_state st;
    struct aff_cpustat cs_prev, cs_now;
    double cs_t;
    int    ntr;
    struct tracked *tr[AFF_MAX_WATCH];
    int    nns;
    struct aff_netns ns[16];
    struct aff_sock *dump[16];
    int    ndump[16];
    int    private_mounts;
    long   max_watched;
    int    dev_ns[AFF_MAX_DEV];          /* namespace index of a device, -1 */
    char   dev_if[AFF_MAX_DEV][64];      /* its name inside that namespace */
};

static int cmp_sock(const void *a, const void *b)
{
    const struct aff_sock *x = a, *y = b;
    return x->inode < y->inode ? -1 : x->inode > y->inode;
}

static struct aff_netns *netns_for(struct live *L, int pid, int *idx)
{
    unsigned long ino;

    if (aff_pid_netns(pid, &ino))
        return NULL;
    for (int i = 0; i < L->nns; i++)
        if (L->ns[i].ino == ino) {
            *idx = i;
            return &L->ns[i];
        }
    if (L->nns == (int)(sizeof(L->ns) / sizeof(L->ns[0])))
        return NULL;
    *idx = L->nns;
    if (aff_netns_open(pid, &L->ns[L->nns], L->private_mounts) < 0) {
        aff_err(SUB, "pid %d: cannot measure its sockets in network namespace %lu: %s; "
                "classifying it by its calls only", pid, ino, strerror(-L->ns[L->nns].err));
    }
    L->ns[L->nns].ino = ino;
    return &L->ns[L->nns++];
}

static int want_comm(const struct aff_dopts *o, const char *comm)
{
    for (int i = 0; i < o->ncomms; i++)
        if (!strcmp(o->comms[i], comm))
            return 1;
    return 0;
}

static void add_pid(int *pids, int *n, int pid)
{
    for (int i = 0; i < *n; i++)
        if (pids[i] == pid)
            return;
    if (*n < AFF_MAX_WATCH)
        pids[(*n)++] = pid;
}

static void cgroup_pids(const char *dir, int depth, int *pids, int *n)
{
    char path[4096];
    FILE *f;
    DIR *d;
    struct dirent *de;
    int pid;

    if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
        return;   /* deeper than any path can be */
    if ((f = fopen(path, "re"))) {
        while (fscanf(f, "%d", &pid) == 1)
            add_pid(pids, n, pid);
        fclose(f);
    }
    if (depth >= 8 || !(d = opendir(dir)))
        return;
    while ((de = readdir(d)))
        if (de->d_type == DT_DIR && de->d_name[0] != '.') {
            if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
                cgroup_pids(path, depth + 1, pids, n);
        }
    closedir(d);
}

static void cgroup_path(const char *arg, char *buf, size_t cap)
{
    if (!strncmp(arg, "/sys/fs/cgroup", 14))
        snprintf(buf, cap, "%s", arg);
    else
        snprintf(buf, cap, "/sys/fs/cgroup/%s", arg[0] == '/' ? arg + 1 : arg);
}

static int discover(struct live *L, int *pids)
{
    const struct aff_dopts *o = L->o;
    int n = 0, self = getpid();

    for (int i = 0; i < o->npids; i++)
        if (kill(o->pids[i], 0) == 0 || errno == EPERM)
            add_pid(pids, &n, o->pids[i]);
    if (o->ncomms) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            char path[64], comm[64];
            FILE *f;
            int pid = atoi(de->d_name);
            if (pid <= 0 || pid == self)
                continue;
            snprintf(path, sizeof(path), "/proc/%d/comm", pid);
            if (!(f = fopen(path, "re")))
                continue;
            if (fgets(comm, sizeof(comm), f)) {
                comm[strcspn(comm, "\n")] = '\0';
                if (want_comm(o, comm))
                    add_pid(pids, &n, pid);
            }
            fclose(f);
        }
        if (d)
            closedir(d);
    }
    for (int i = 0; i < o->ncgroups; i++) {
        char path[4096];
        cgroup_path(o->cgroups[i], path, sizeof(path));
        cgroup_pids(path, 0, pids, &n);
    }
    return n;
}

static struct tracked *track(struct live *L, int pid)
{
    struct aff_pidstat ps;
    struct tracked *t;

    if (aff_pidstat_read(pid, 0, &ps))
        return NULL;
    for (int i = 0; i < L->ntr; i++)
        if (L->tr[i]->pid == pid) {
            if (L->tr[i]->start == ps.start)
                return L->tr[i];
            /* the pid was reused: a new process */
            aff_state_forget(&L->st, pid);
            memset(L->tr[i], 0, sizeof(*L->tr[i]));
            t = L->tr[i];
            goto init;
        }
    if (L->ntr == AFF_MAX_WATCH || !(t = calloc(1, sizeof(*t))))
        return NULL;
    L->tr[L->ntr++] = t;
init:
    t->pid = pid;
    t->start = ps.start;
    t->fresh = 1;
    snprintf(t->comm, sizeof(t->comm), "%s", ps.comm);
    return t;
}

/* Confine every thread of @t to @set, saving each thread's affinity the
 * first time. 0 or -errno. */
static int apply_set(struct tracked *t, const cpu_set_t *set)
{
    pid_t tids[MAX_TASKS];
    int n = aff_pid_tasks(t->pid, tids, MAX_TASKS), rc = 0;

    if (n < 0)
        return n;
    if (!t->touched && sched_getaffinity(t->pid, sizeof(t->orig_main), &t->orig_main) < 0)
        return -errno;
    for (int i = 0; i < n; i++) {
        int k;
        for (k = 0; k < t->ntask; k++)
            if (t->tid[k] == tids[i])
                break;
        if (k == t->ntask && t->ntask < 64) {
            cpu_set_t cur;
            t->tid[k] = tids[i];
            if (sched_getaffinity(tids[i], sizeof(cur), &cur) < 0)
                continue;
            /* a thread born while we held the process inherited our set */
            t->orig[k] = t->touched && CPU_EQUAL(&cur, &t->applied) ? t->orig_main : cur;
            t->ntask++;
        }
        if (sched_setaffinity(tids[i], sizeof(*set), set) < 0 && errno != ESRCH && !rc)
            rc = -errno;
    }
    t->touched = 1;
    t->applied = *set;
    return rc;
}

/* Give back each thread's affinity, unless someone changed it since. */
static int restore_one(struct tracked *t, int quiet)
{
    int left = 0;

    if (!t->touched)
        return 0;
    for (int k = 0; k < t->ntask; k++) {
        cpu_set_t cur;
        if (sched_getaffinity(t->tid[k], sizeof(cur), &cur) < 0)
            continue;   /* thread gone */
        if (!CPU_EQUAL(&cur, &t->applied)) {
            left++;
            continue;
        }
        sched_setaffinity(t->tid[k], sizeof(t->orig[k]), &t->orig[k]);
    }
    if (left && !quiet)
        aff_err(SUB, "pid %d (%s): %d thread(s) had their affinity changed by someone else "
                "since; left as they are", t->pid, t->comm, left);
    t->touched = 0;
    t->ntask = 0;
    return left;
}

/* Receive-processing core of interface @ifname in namespace @ns from its
 * rps_cpus, when they all lie in one core; -1 otherwise. */
static int rps_anchor(struct live *L, const struct aff_netns *ns, const char *ifname)
{
    cpu_set_t rps;
    int core = -1;

    if (aff_netns_rps(ns, ifname, &rps) || CPU_COUNT(&rps) == 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &rps)) {
            int k = cvia__topo_core_of_pu(L->m.topo, (unsigned)c);
            if (k < 0 || (core >= 0 && k != core))
                return -1;
            core = k;
        }
    return core;
}

static void log_device(const struct aff_dev *d)
{
    char where[160], lbl[AFF_NAMELEN + 32];

    if (d->anchor >= 0)
        snprintf(where, sizeof(where), "core %d (%s)", d->anchor, d->anchor_why);
    else
        snprintf(where, sizeof(where), "no known core (%s)", d->anchor_why);
    aff_err(SUB, "device %s (driver %s): receive processing on %s; %s%s", d->name,
            d->driver[0] ? d->driver : "?", where, d->prof ? "profile of " : "no profile",
            d->prof ? aff_profile_label(d->prof, lbl, sizeof(lbl)) : "");
}

/* The device of a socket's local address, added to the model on first
 * sight. Interfaces of other network namespaces are named IF@NETNS (the
 * namespace's inode): two containers may both have an eth0. */
static const char *device_of(struct live *L, int nsi, const struct aff_sock *s)
{
    const struct aff_netns *ns = &L->ns[nsi];
    const struct aff_ifaddr *ifa = aff_netns_if_of(ns, s->family, s->laddr);
    struct aff_dev *d;
    unsigned long mine = 0;
    char key[AFF_NAMELEN];

    if (!ifa)
        return NULL;
    aff_pid_netns(0, &mine);
    if (ns->ino == mine)
        snprintf(key, sizeof(key), "%s", ifa->name);
    else
        snprintf(key, sizeof(key), "%.30s@%lu", ifa->name, ns->ino);
    for (int i = 0; i < L->m.ndev; i++)
        if (!strcmp(L->m.dev[i].name, key))
            return L->m.dev[i].name;
    if (L->m.ndev == AFF_MAX_DEV)
        return NULL;
    d = &L->m.dev[L->m.ndev];
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", key);
    snprintf(d->driver, sizeof(d->driver), "%s", ifa->driver);
    d->local = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(L->m.topo));
    d->anchor = -1;
    snprintf(d->anchor_why, sizeof(d->anchor_why), "no interrupt lines, no rps_cpus");
    for (int k = 0; k < L->o->nirq_core; k++)
        if (!strcmp(L->o->irq_core[k].ifname, ifa->name) ||
            !strcmp(L->o->irq_core[k].ifname, key)) {
            d->anchor = cvia__topo_core_of_pu(L->m.topo, (unsigned)L->o->irq_core[k].pu);
            snprintf(d->anchor_why, sizeof(d->anchor_why), "--irq-core");
        }
    if (d->anchor < 0 && (d->anchor = rps_anchor(L, ns, ifa->name)) >= 0)
        snprintf(d->anchor_why, sizeof(d->anchor_why), "rps_cpus");
    d->prof = L->e->have_prof ? aff_profile_match(&L->e->prof, ifa->name, d->driver) : NULL;
    L->dev_ns[L->m.ndev] = nsi;
    snprintf(L->dev_if[L->m.ndev], sizeof(L->dev_if[0]), "%s", ifa->name);
    L->m.ndev++;
    log_device(d);
    return d->name;
}

/* Interrupts move (irqbalance, an administrator) and rps_cpus change: look
 * again every few periods, and say when a device's core changed. */
static void refresh_anchors(struct live *L)
{
    for (int i = 0; i < L->m.ndev; i++) {
        struct aff_dev *d = &L->m.dev[i];
        int now = d->anchor;
        char why[96] = "";
        if (!strcmp(d->anchor_why, "--irq-core"))
            continue;
        if (i < L->e->nics.n) {          /* a device of this machine's topology */
            struct cvia_nic *nic = &L->e->nics.v[i];
            for (int k = 0; k < nic->nirqs; k++) {
                if (cvia__irq_affinity_read(L->e->root, nic->irqs[k].irq, nic->irqs[k].affinity))
                    hwloc_bitmap_zero(nic->irqs[k].affinity);
                if (cvia__irq_effective_read(L->e->root, nic->irqs[k].irq, nic->irqs[k].effective))
                    hwloc_bitmap_zero(nic->irqs[k].effective);
            }
            now = aff_nic_anchor(L->e, i, 1, why, sizeof(why));
        } else if (L->dev_ns[i] >= 0) {
            now = rps_anchor(L, &L->ns[L->dev_ns[i]], L->dev_if[i]);
            snprintf(why, sizeof(why), "%s", now >= 0 ? "rps_cpus" : "no interrupt lines, no rps_cpus");
        }
        if (now != d->anchor) {
            d->anchor = now;
            snprintf(d->anchor_why, sizeof(d->anchor_why), "%.*s, changed",
                     (int)sizeof(d->anchor_why) - 10, why);
            log_device(d);
        }
    }
}

static void observe_proc(struct live *L, struct tracked *t, struct aff_pobs *p, double t_now)
{
    struct aff_pidstat ps;
    unsigned long long calls = 0, cpu;
    unsigned long inodes[MAX_SOCKS];
    struct sock_prev socks[64];
    int nsock = 0, ni, nsi = -1, have_calls;
    double dt = t_now - t->t_prev, bytes = 0, best_dev_bytes = -1;
    uint64_t dev_bytes[AFF_MAX_DEV] = { 0 };
    const char *dev_name[AFF_MAX_DEV] = { 0 };
    int ndev = 0, sock_known = 0;

    memset(p, 0, sizeof(*p));
    p->pid = t->pid;
    p->last_pu = -1;
    p->bytes_per_s = p->calls_per_s = -1;
    snprintf(p->comm, sizeof(p->comm), "%s", t->comm);
    if (aff_pidstat_read(t->pid, 0, &ps))
        return;
    cpu = ps.utime + ps.stime;
    p->last_pu = ps.processor;
    have_calls = aff_pidio_calls(t->pid, &calls) == 0;
    if (netns_for(L, t->pid, &nsi) && L->ns[nsi].diag_fd >= 0 && L->dump[nsi]) {
        sock_known = 1;
        ni = aff_pid_sockets(t->pid, inodes, MAX_SOCKS);
        for (int i = 0; i < ni; i++) {
            struct aff_sock key = { .inode = inodes[i] }, *s;
            uint64_t b, prev = 0;
            int known = 0;
            s = bsearch(&key, L->dump[nsi], (size_t)L->ndump[nsi], sizeof(key), cmp_sock);
            if (!s)
                continue;
            b = s->bytes_acked + s->bytes_received;
            for (int k = 0; k < t->nsock; k++)
                if (t->socks[k].inode == s->inode) {
                    prev = t->socks[k].bytes;
                    known = 1;
                }
            if (nsock < 64)
                socks[nsock++] = (struct sock_prev){ s->inode, b };
            if (!known && t->fresh)
                continue;    /* its bytes predate our first look */
            if (b >= prev) {
                const char *dn = device_of(L, nsi, s);
                int k;
                bytes += (double)(b - prev);
                for (k = 0; k < ndev; k++)
                    if (dev_name[k] == dn)
                        break;
                if (k == ndev && ndev < AFF_MAX_DEV)
                    dev_name[ndev++] = dn;
                if (k < AFF_MAX_DEV)
                    dev_bytes[k] += b - prev;
            }
        }
    }
    for (int k = 0; k < ndev; k++)
        if (dev_name[k] && (double)dev_bytes[k] > best_dev_bytes) {
            best_dev_bytes = (double)dev_bytes[k];
            snprintf(p->device, sizeof(p->device), "%s", dev_name[k]);
        }
    p->fresh = t->fresh || dt <= 0;
    if (!p->fresh) {
        long hz = sysconf(_SC_CLK_TCK);
        p->cpu = (double)(cpu - t->cpu_prev) / (double)(hz > 0 ? hz : 100) / dt;
        if (have_calls)
            p->calls_per_s = (double)(calls - t->calls_prev) / dt;
        if (sock_known)
            p->bytes_per_s = bytes / dt;
    }
    t->fresh = 0;
    t->t_prev = t_now;
    t->cpu_prev = cpu;
    t->calls_prev = calls;
    t->nsock = nsock;
    memcpy(t->socks, socks, (size_t)nsock * sizeof(socks[0]));
}

static void period(struct live *L, long k, double t0)
{
    int pids[AFF_MAX_WATCH], npids = discover(L, pids);
    struct aff_obs obs = { 0 };
    struct aff_decision *d = NULL;
    double t = cvia__clock_s(), dt = t - L->cs_t;
    int n;

    if (npids > L->max_watched)
        L->max_watched = npids;
    /* cores: idle share of each PU since the last period */
    aff_cpustat_read(&L->cs_now);
    obs.npu = L->cs_now.n;
    obs.busy = calloc((size_t)obs.npu + 1, sizeof(double));
    obs.proc = calloc((size_t)npids + 1, sizeof(*obs.proc));
    obs.period_s = L->o->period;
    if (!obs.busy || !obs.proc)
        goto out;
    for (int c = 0; c < obs.npu; c++) {
        unsigned long long b = L->cs_now.busy[c] - L->cs_prev.busy[c];
        unsigned long long i = L->cs_now.idle[c] - L->cs_prev.idle[c];
        obs.busy[c] = b + i ? (double)b / (double)(b + i) : 0;
    }
    /* sockets of every namespace with a watched process, once */
    for (int i = 0; i < L->nns; i++) {
        free(L->dump[i]);
        L->dump[i] = NULL;
        L->ndump[i] = 0;
    }
    for (int i = 0; i < npids; i++) {
        int nsi;
        struct aff_netns *ns = netns_for(L, pids[i], &nsi);
        if (ns && ns->diag_fd >= 0 && !L->dump[nsi]) {
            if (aff_diag_dump(ns->diag_fd, &L->dump[nsi], &L->ndump[nsi]) == 0 && L->dump[nsi])
                qsort(L->dump[nsi], (size_t)L->ndump[nsi], sizeof(struct aff_sock), cmp_sock);
            if (!L->dump[nsi])   /* empty but valid */
                L->dump[nsi] = calloc(1, sizeof(struct aff_sock));
        }
    }
    for (int i = 0; i < L->ntr; i++)
        L->tr[i]->seen = 0;
    for (int i = 0; i < npids; i++) {
        struct tracked *tr = track(L, pids[i]);
        if (!tr)
            continue;
        tr->seen = 1;
        observe_proc(L, tr, &obs.proc[obs.nproc], t);
        if (obs.proc[obs.nproc].pid)
            obs.nproc++;
    }
    /* processes gone: forget them */
    for (int i = 0; i < L->ntr;) {
        if (!L->tr[i]->seen) {
            aff_err(SUB, "period %ld: pid %d (%s) is gone", k, L->tr[i]->pid, L->tr[i]->comm);
            free(L->tr[i]);
            L->tr[i] = L->tr[--L->ntr];
        } else {
            i++;
        }
    }
    n = aff_decide(&L->m, &L->prm, &obs, &L->st, &d);
    for (int i = 0; i < n; i++) {
        struct aff_decision *x = &d[i];
        struct tracked *tr = NULL;
        cpu_set_t set;
        int rc = 0, news;
        for (int q = 0; q < L->ntr; q++)
            if (L->tr[q]->pid == x->pid)
                tr = L->tr[q];
        if (!tr)
            continue;
        aff_cpuset_of(x->cpuset, &set);
        if (x->changed && !L->o->dry) {
            if (x->action == AFF_ACT_RELEASE)
                restore_one(tr, 0);
            else if (x->action == AFF_ACT_PIN_CORE || x->action == AFF_ACT_PIN_GROUP)
                rc = apply_set(tr, &set);
        }
        if (rc) {
            size_t l = strlen(x->reason);
            snprintf(x->reason + l, sizeof(x->reason) - l, " [not applied: %s]",
                     strerror(-rc));
        }
        news = x->changed || (int)x->action != tr->last_action || x->level != tr->last_level ||
               !CPU_EQUAL(&set, &tr->last_set);
        if (news || L->o->verbose)
            aff_log_decision(&L->m, L->o, k, t - t0, x);
        tr->last_action = x->action;
        tr->last_level = x->level;
        tr->last_set = set;
    }
    if (n > 0)
        aff_decisions_free(d, n);
out:
    free(obs.busy);
    free(obs.proc);
    {   /* swap the /proc/stat snapshots */
        struct aff_cpustat tmp = L->cs_prev;
        L->cs_prev = L->cs_now;
        L->cs_now = tmp;
    }
    L->cs_t = t;
    (void)dt;
}

static int check_permission(const struct aff_dopts *o)
{
    for (int i = 0; i < o->npids; i++) {
        cpu_set_t s;
        if (sched_getaffinity(o->pids[i], sizeof(s), &s) < 0) {
            aff_err(SUB, "no process %d", o->pids[i]);
            return -1;
        }
        if (!o->dry && sched_setaffinity(o->pids[i], sizeof(s), &s) < 0) {
            aff_err(SUB, "pid %d: no permission to change its affinity (%s); run as root or "
                    "as its owner, or use --dry-run", o->pids[i], strerror(errno));
            return -1;
        }
    }
    for (int i = 0; i < o->ncgroups; i++) {
        char path[4096];
        cgroup_path(o->cgroups[i], path, sizeof(path));
        strncat(path, "/cgroup.procs", sizeof(path) - strlen(path) - 1);
        if (access(path, R_OK) < 0) {
            aff_err(SUB, "cgroup %s: cannot read %s: %s", o->cgroups[i], path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

static int run_live(struct aff_env *e, struct aff_dopts *o)
{
    struct live L;
    struct sigaction sa;
    double t0, cpu0, elapsed, used;
    long k;
    int irqb;

    memset(&L, 0, sizeof(L));
    L.e = e;
    L.o = o;
    for (int i = 0; i < AFF_MAX_DEV; i++)
        L.dev_ns[i] = -1;
    if (check_permission(o))
        return 1;
    if (aff_model_from_env(e, &L.m, 1)) {
        aff_err(SUB, "out of memory");
        return 1;
    }
    aff_params_default(&L.prm);
    for (int q = 0; q < L.m.ndev; q++)
        for (int k2 = 0; k2 < o->nirq_core; k2++)
            if (!strcmp(o->irq_core[k2].ifname, L.m.dev[q].name)) {
                L.m.dev[q].anchor = cvia__topo_core_of_pu(e->topo, (unsigned)o->irq_core[k2].pu);
                snprintf(L.m.dev[q].anchor_why, sizeof(L.m.dev[q].anchor_why), "--irq-core");
            }
    /* a private mount namespace lets us read rps_cpus of other network
     * namespaces; without it (not root) those devices have no anchor */
    L.private_mounts = aff_private_mounts() == 0;
    if ((irqb = aff_irqbalance_pid("/")))
        aff_err(SUB, "irqbalance is running (pid %d): it places the interrupts, this daemon "
                "only the processes, anchored where the interrupts are now", irqb);
    aff_err(SUB, "watching %d pid(s), %d command name(s), %d cgroup(s) every %.3g s%s%s%s",
            o->npids, o->ncomms, o->ncgroups, o->period, o->dry ? " (dry run)" : "",
            e->have_prof ? ", profile " : ", no profile (default thresholds)",
            e->have_prof ? e->profile : "");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    t0 = cvia__clock_s();
    cpu0 = aff_cpu_self();
    aff_cpustat_read(&L.cs_prev);
    L.cs_t = t0;
    for (k = 1; !stop_sig; k++) {
        struct timespec ts;
        double next = t0 + (double)k * o->period;
        if (o->duration > 0 && next > t0 + o->duration + 1e-6)
            break;
        ts.tv_sec = (time_t)next;
        ts.tv_nsec = (long)((next - (double)ts.tv_sec) * 1e9);
        while (!stop_sig && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        if (stop_sig)
            break;
        if (k % 10 == 0)
            refresh_anchors(&L);
        period(&L, k, t0);
    }
    for (int i = 0; i < L.ntr; i++) {
        restore_one(L.tr[i], 0);
        free(L.tr[i]);
    }
    elapsed = cvia__clock_s() - t0;
    used = aff_cpu_self() - cpu0;
    if (o->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w, NULL);
        jw_obj(&w, "summary");
        jw_num(&w, "seconds", elapsed);
        jw_int(&w, "periods", k - 1);
        jw_int(&w, "max_watched", L.max_watched);
        jw_num(&w, "cpu_seconds", used);
        jw_num(&w, "cpu_percent_of_core", elapsed > 0 ? 100 * used / elapsed : 0);
        jw_str(&w, "stopped_by", stop_sig ? strsignal(stop_sig) : "duration");
        jw_end_obj(&w);
        jw_end_obj(&w);
    }
    aff_err(SUB, "%s after %.1f s, %ld period(s); original affinities restored; this daemon "
            "used %.3f s of CPU = %.3f%% of one core", stop_sig ? strsignal(stop_sig) : "stopped",
            elapsed, k - 1, used, elapsed > 0 ? 100 * used / elapsed : 0);
    for (int i = 0; i < L.nns; i++) {
        free(L.dump[i]);
        aff_netns_close(&L.ns[i]);
    }
    aff_cpustat_free(&L.cs_prev);
    aff_cpustat_free(&L.cs_now);
    aff_state_free(&L.st);
    aff_model_free(&L.m);
    return 0;
}

static int parse_pids(const char *arg, struct aff_dopts *o)
{
    char buf[1024], *save = NULL, *tok;

    snprintf(buf, sizeof(buf), "%s", arg);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || v <= 0 || v > 4194304 || o->npids == AFF_MAX_WATCH)
            return -1;
        o->pids[o->npids++] = (int)v;
    }
    return 0;
}

int aff_daemon_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pid", required_argument, NULL, 'P' },
        { "comm", required_argument, NULL, 'c' },
        { "cgroup", required_argument, NULL, 'g' },
        { "profile", required_argument, NULL, 'p' },
        { "period", required_argument, NULL, 'T' },
        { "duration", required_argument, NULL, 'd' },
        { "irq-core", required_argument, NULL, 'q' },
        { "dry-run", no_argument, NULL, 'n' },
        { "json", no_argument, NULL, 'j' },
        { "verbose", no_argument, NULL, 'v' },
        { "replay", required_argument, NULL, 'r' },
        { "topology", required_argument, NULL, 't' },
        { "irqs", required_argument, NULL, 'i' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    struct aff_dopts o = { .period = 1.0 };
    struct aff_env e = { 0 };
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":P:c:g:p:T:d:q:njvr:t:i:h", opts, NULL)) != -1) {
        switch (c) {
        case 'P':
            if (parse_pids(optarg, &o))
                aff_usage_error(SUB, "--pid %s: expected process ids (1,2,3)", optarg);
            break;
        case 'c':
            if (o.ncomms == 32 || !*optarg || strlen(optarg) > 15)
                aff_usage_error(SUB, "--comm %s: a command name has 1 to 15 characters", optarg);
            o.comms[o.ncomms++] = optarg;
            break;
        case 'g':
            if (o.ncgroups == 16)
                aff_usage_error(SUB, "too many --cgroup");
            o.cgroups[o.ncgroups++] = optarg;
            break;
        case 'p': e.profile = optarg; break;
        case 'T':
            if (cvia__parse_time(optarg, &o.period) || o.period < 0.01 || o.period > 3600)
                aff_usage_error(SUB, "--period %s: expected a time from 10ms to 1h", optarg);
            break;
        case 'd':
            if (cvia__parse_time(optarg, &o.duration) || o.duration <= 0)
                aff_usage_error(SUB, "--duration %s: expected a time > 0", optarg);
            break;
        case 'q': {
            char *eq = strchr(optarg, '=');
            long pu;
            if (!eq || eq == optarg || eq - optarg >= 64 || o.nirq_core == 16 ||
                cvia__parse_long(eq + 1, &pu) || pu < 0 || pu >= CPU_SETSIZE)
                aff_usage_error(SUB, "--irq-core %s: expected INTERFACE=PU", optarg);
            snprintf(o.irq_core[o.nirq_core].ifname, 64, "%.*s", (int)(eq - optarg), optarg);
            o.irq_core[o.nirq_core++].pu = (int)pu;
            break;
        }
        case 'n': o.dry = 1; break;
        case 'j': o.json = 1; break;
        case 'v': o.verbose = 1; break;
        case 'r': o.replay = optarg; break;
        case 't': e.topology = optarg; break;
        case 'i': e.irqs = optarg; break;
        case 'h': daemon_usage(stdout); return 0;
        default: aff_getopt_fail(SUB, c, argv);
        }
    }
    if (optind < argc)
        aff_usage_error(SUB, "unexpected argument %s", argv[optind]);
    if (!o.replay && !o.npids && !o.ncomms && !o.ncgroups)
        aff_usage_error(SUB, "nothing to watch: give --pid, --comm or --cgroup");
    if (!o.replay && (e.topology || e.irqs))
        aff_usage_error(SUB, "--topology and --irqs describe a recorded machine: only with "
                        "--replay");
    if (!o.replay && getenv("CVIA_TOPOLOGY") && *getenv("CVIA_TOPOLOGY")) {
        aff_err(SUB, "places processes on this machine: unset CVIA_TOPOLOGY (recorded machines "
                "only with --replay)");
        return 1;
    }
    if (o.replay) {
        o.dry = 1;
        if (!e.topology && getenv("CVIA_TOPOLOGY") && *getenv("CVIA_TOPOLOGY"))
            e.topology = getenv("CVIA_TOPOLOGY");
        if (!e.topology)
            e.proc_root = NULL;
    }
    if (aff_env_open(&e, SUB))
        return 1;
    rc = o.replay ? aff_run_replay(&e, &o) : run_live(&e, &o);
    aff_env_close(&e);
    return rc;
}
