/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-affinity: the three parts of paper 003 (static collector, variable
 * analyser, dynamic decision module) over hwloc and /proc.
 *
 *   aff_decide.c   the decisions: interrupt core per device, core groups in
 *                  order of preference, and each period's placement of the
 *                  watched processes; a pure function of (topology, profile,
 *                  observations, previous state), so tests run it on
 *                  recorded machines
 *   aff_profile.c  the profile (analyser's output) and the --irqs file
 *   aff_topo.c     `topo`: the static collector, --apply / --restore
 *   aff_analyze.c  `analyze`: bounded streams, measured system variables
 *   aff_stream.c   the kernel TCP stream source / sink of analyze and `stream`
 *   aff_cstream.c  the same over corevia's network provider, as cvia-run jobs
 *   aff_netns.c    namespaces analyze creates (and always removes)
 *   aff_daemon.c   `daemon`: observe, decide, apply
 *   aff_replay.c   `daemon --replay`: the decisions on recorded observations
 *   aff_sys.c      /proc readers, sock_diag, affinities of tasks
 *   aff_util.c     clocks, own CPU time, pinning, the end of the getopt loops
 */
#ifndef CVIA_AFF_H
#define CVIA_AFF_H

#include <hwloc.h>
#include <sched.h>
#include <stdio.h>

#include "topo/topo_cpu.h"
#include "topo/topo_nic.h"
#include "util/json.h"
#include "util/clock.h"

#define AFF_MAX_DEV   32
#define AFF_NAMELEN   64

/* ---- profile (written by analyze, read by daemon) ----------------------- */

struct aff_meas {            /* one placement class of one device */
    int    rel;              /* enum cvia_topo_rel, or -1: not pinned */
    double bw;               /* bytes/s received, median over runs */
    double cpu_proc;         /* cores used by the receiving process */
    double cpu_softirq;      /* cores of softirq work, all cores */
    double interval_us;      /* mean time between its receive calls (corevia:
                                between the messages it received) */
    int    runs;
};

struct aff_prof_dev {
    char   device[AFF_NAMELEN];   /* interface it was measured on, or a kind */
    char   driver[32];            /* "veth", "loopback", "mlx4_core", ... */
    char   transport[16];         /* what the streams went over: "kernel-tcp",
                                     "corevia" (older profiles: kernel-tcp) */
    char   provider[16];          /* corevia: its network provider ("tcp") */
    int    nmeas;
    struct aff_meas meas[CVIA_REL_COUNT + 1];
    int    nrank;
    int    rank[CVIA_REL_COUNT];  /* classes, best first */
    double demand;                /* cores a saturating process needs (best class) */
    double best_bw;               /* bytes/s on the best class */
    double min_interval_us;       /* shortest mean interval between calls seen */
    double high_interval_us;      /* interval <= this: high intensity */
    double low_interval_us;       /* interval >= this: low intensity */
    char   derivation[256];       /* how the thresholds were found */
};

struct aff_profile {
    int ndev;
    struct aff_prof_dev dev[AFF_MAX_DEV];
    char source[256];
};

/* Defaults without a profile (documented in the man page). */
#define AFF_DFLT_HIGH_INTERVAL_US 100.0     /* >= 10,000 calls/s */
#define AFF_DFLT_LOW_INTERVAL_US  10000.0   /* < 100 calls/s */
#define AFF_MIN_BYTES_PER_S       65536.0   /* below: low whatever the calls */
/* A process whose socket bytes need more than this per read/write call
 * seen communicates through calls /proc/PID/io does not count (recv,
 * sendmsg, ...: corevia's providers); its interval then comes from its
 * bytes, at the profile's bytes per call, else at the default below. */
#define AFF_MAX_BYTES_PER_CALL    (1024.0 * 1024.0)
#define AFF_DFLT_BYTES_PER_CALL   65536.0

/* 0, or -1 with a one-line reason in err. */
int  aff_profile_load(const char *path, struct aff_profile *p, char *err, size_t errcap);
void aff_profile_write(const struct aff_profile *p, struct jw *w, const char *notes);
const struct aff_prof_dev *aff_profile_match(const struct aff_profile *p,
                                             const char *device, const char *driver);
/* "DEVICE", or "DEVICE (corevia PROVIDER)" for a profile measured over
 * corevia, into @buf. */
const char *aff_profile_label(const struct aff_prof_dev *d, char *buf, size_t cap);

/* The --irqs file: {"IF": [irq, ...]} or {"IF": {"irqs": [...],
 * "local_cpus": "0-5", "smp_affinity": "0-23"}}. Interfaces the topology
 * lacks are added with the given locality. 0 or -1 with err. */
int aff_irqs_load(const char *path, hwloc_topology_t t, struct cvia_nic_list *nics,
                  char *err, size_t errcap);

/* ---- the model the decisions work on ------------------------------------ */

struct aff_dev {
    char   name[AFF_NAMELEN];     /* interface */
    char   driver[32];
    char   pci[32];               /* PCI function, groups interfaces */
    int    anchor;                /* core where its receive processing runs
                                     (interrupt or RPS core), -1 unknown */
    char   anchor_why[96];        /* "proposed", "smp_affinity", "rps_cpus", ... */
    hwloc_bitmap_t local;         /* PUs local to the device */
    int    nirqs;
    const struct aff_prof_dev *prof;   /* may be NULL */
};

struct aff_model {
    hwloc_topology_t topo;
    int    ncores;
    int    ndev;
    struct aff_dev dev[AFF_MAX_DEV];
};

/* Interrupt core proposal of the static collector, one per device (by PCI
 * function): on the device's local package, a core not yet given another
 * device's interrupts, in a last-level cache group not yet holding one when
 * possible. Returns the core (logical index). */
int aff_propose_irq_cores(hwloc_topology_t t, const struct cvia_nic_list *nics,
                          int *core_out /* [nics->n] */);

/* Core groups for a device, best first: with an anchor, by relation to it
 * (the profile's measured order, else l2, l3, same, numa, package,
 * remote), and within a relation nearest memory first: the cores whose own
 * NUMA node is the anchor's, then by NUMA distance from it (packages that
 * share the anchor's node, or a Group of packages, before the rest of the
 * machine); without an anchor, local cores then the others. At most
 * AFF_MAX_GROUPS (further distances join the last). */
#define AFF_MAX_GROUPS 16
struct aff_group {
    int  rel;                  /* enum cvia_topo_rel, or -1 */
    char label[16];            /* "l3", "local", "other" */
    hwloc_bitmap_t cores;      /* core logical indices */
};
int  aff_groups(const struct aff_model *m, const struct aff_dev *d,
                struct aff_group *g /* [AFF_MAX_GROUPS] */);
void aff_groups_free(struct aff_group *g, int n);

/* ---- observations, state, decisions ------------------------------------- */

enum aff_level { AFF_LOW = 0, AFF_MEDIUM, AFF_HIGH };
const char *aff_level_name(int level);

struct aff_pobs {
    int    pid;
    char   comm[32];
    char   device[AFF_NAMELEN];   /* most of its socket bytes go here; "" unknown */
    double bytes_per_s;           /* socket bytes in + out per second; < 0 unknown */
    double calls_per_s;           /* read/write system calls per second; < 0 unknown */
    double cpu;                   /* cores used over the period */
    int    last_pu;               /* PU it last ran on, -1 */
    int    fresh;                 /* first period: rates not known yet */
    hwloc_bitmap_t allowed;       /* current affinity (PUs) */
};

struct aff_obs {
    double period_s;
    int    npu;                   /* size of busy[] (max PU OS index + 1) */
    double *busy;                 /* fraction of each PU busy over the period */
    int    nproc;
    struct aff_pobs *proc;
};

struct aff_pstate {
    int    pid;
    int    level;
    int    below;                 /* consecutive periods under its level */
    int    short_of;              /* consecutive periods its core fell short */
    int    since_move;
    int    placed;                /* 0 none, 1 core, 2 group */
    int    core;                  /* placed == 1 */
    hwloc_bitmap_t target;        /* PUs it is confined to by us */
    int    seen;
};

struct aff_state {
    int    n, cap;
    struct aff_pstate *v;
    long   period;
};

enum aff_action {
    AFF_ACT_NONE = 0,    /* nothing to do: left to the scheduler */
    AFF_ACT_WAIT,        /* measuring (first period) */
    AFF_ACT_KEEP,        /* stays where we put it */
    AFF_ACT_PIN_CORE,    /* confine to one core */
    AFF_ACT_PIN_GROUP,   /* confine to a group of cores */
    AFF_ACT_RELEASE,     /* give back its original affinity */
};

struct aff_decision {
    int    pid;
    char   comm[32];
    char   device[AFF_NAMELEN];
    int    level;
    enum aff_action action;
    int    changed;               /* the affinity must be changed now */
    int    core;                  /* PIN_CORE, KEEP of a core */
    char   group[16];             /* label of the group chosen */
    hwloc_bitmap_t cpuset;        /* PUs for PIN_* / KEEP */
    double demand, avail, intensity_us, bytes_per_s;
    char   reason[640];
};

/* Tunables of the decisions (defaults: aff_params_default). */
struct aff_params {
    double keep_factor;        /* keep a core while it covers this x demand (0.8) */
    double better_factor;      /* move up a group when a core covers this x demand (1.25) */
    int    short_periods;      /* periods short of capacity before moving (2) */
    int    down_periods;       /* periods below a level before lowering it (3) */
    int    min_dwell;          /* periods on a core before moving up (5) */
    double band;               /* interval hysteresis factor for lowering (1.25) */
};
void aff_params_default(struct aff_params *p);

/* One period: classify each observed process, place the high ones on the
 * best core that covers their demand (else the next group), confine the
 * medium ones to the best group that covers it, release the low ones we
 * had placed. Updates @st. Returns the number of decisions in *out (free
 * with aff_decisions_free), or -ENOMEM. */
int  aff_decide(const struct aff_model *m, const struct aff_params *prm,
                const struct aff_obs *obs, struct aff_state *st,
                struct aff_decision **out);
void aff_decisions_free(struct aff_decision *d, int n);
void aff_state_free(struct aff_state *st);
void aff_state_forget(struct aff_state *st, int pid);

/* ---- what topo and daemon share: topology, interfaces, profile ----------- */

struct aff_env {
    const char *topology;         /* --topology FILE|DIR; NULL: this machine */
    const char *irqs;             /* --irqs FILE */
    const char *proc_root;        /* --proc-root DIR; NULL: default */
    const char *profile;          /* --profile FILE */
    const char *root;             /* where interrupts are read: NULL none */
    int    live;                  /* the topology is this machine's */
    hwloc_topology_t topo;
    struct cvia_nic_list nics;
    int   *proposed;              /* proposed interrupt core per interface */
    struct aff_profile prof;
    int    have_prof;
};

/* Load all of it; on failure prints one line "cvia-affinity SUB: ..." and
 * returns -1 (nothing is changed). */
int  aff_env_open(struct aff_env *e, const char *sub);
void aff_env_close(struct aff_env *e);
/* Anchor of an interface: the core all its interrupts are confined to
 * now (live), else the proposal; -1 without interrupt lines. */
int  aff_nic_anchor(const struct aff_env *e, int nic, int prefer_current, char *why,
                    size_t cap);
/* A model with one device per interface of @e. */
int  aff_model_from_env(const struct aff_env *e, struct aff_model *m, int prefer_current);
/* irqbalance running under ROOT/proc? Its pid, 0 if not. */
int  aff_irqbalance_pid(const char *root);

/* ---- shared helpers (aff_util.c) ----------------------------------------- */

double aff_cpu_self(void);            /* user + system time of this process, seconds */
/* @pus as a cpu_set_t; returns how many PUs it holds. */
int  aff_cpuset_of(hwloc_const_bitmap_t pus, cpu_set_t *set);
/* Confine the calling thread (and the threads and children it starts
 * later) to @pus, or to the PUs of a CPU list such as "0-3,8". 0 or -errno
 * (-EINVAL: empty or malformed). */
int  aff_pin_self(hwloc_const_bitmap_t pus);
int  aff_pin_self_list(const char *list);
/* 1 if @list is a non-empty CPU list of PU numbers below CPU_SETSIZE. */
int  aff_cpulist_ok(const char *list);
/* The end of every getopt loop: a missing argument (c == ':') or an
 * unknown option, as a usage error (exit 2). */
void aff_getopt_fail(const char *sub, int c, char **argv) __attribute__((noreturn));

void aff_fmt_cores(hwloc_topology_t t, hwloc_const_bitmap_t cores, char *buf, size_t cap);
void aff_fmt_pus(hwloc_const_bitmap_t pus, char *buf, size_t cap);
void aff_model_free(struct aff_model *m);

#define AFF_MAX_WATCH 256

/* Options of the daemon (aff_daemon.c parses them). */
struct aff_dopts {
    int    pids[AFF_MAX_WATCH], npids;
    const char *comms[32];
    int    ncomms;
    const char *cgroups[16];
    int    ncgroups;
    double period, duration;
    int    dry, json, verbose;
    const char *replay;
    struct { char ifname[64]; int pu; } irq_core[16];
    int    nirq_core;
};

/* One decision as a log line (text on stderr, or stdout for --replay) or
 * a JSON object on stdout. */
void aff_log_decision(const struct aff_model *m, const struct aff_dopts *o, long period,
                      double t, const struct aff_decision *d);
/* daemon --replay. 0 or 1 (said why). */
int  aff_run_replay(struct aff_env *e, const struct aff_dopts *o);

/* subcommands */
int aff_topo_main(int argc, char **argv);
int aff_analyze_main(int argc, char **argv);
int aff_daemon_main(int argc, char **argv);
int aff_stream_main(int argc, char **argv);

/* common: "cvia-affinity SUB: " prefix for errors */
void aff_err(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void aff_usage_error(const char *sub, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
