/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The core's CVIA_* variables, the list of the library's tables and the
 * tables the layers above register (cvia-info prints them through
 * cvia_var_info, the man page is generated from them, and unknown CVIA_*
 * names are checked against them). */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "core/core.h"
#include "util/param.h"

static const char *const log_levels[] = {
    "error", "warn", "info", "debug", "trace", NULL
};

const char *const cvia__net_names[] = { "tcp", "udp", "eth", "xdp", NULL };

static const struct cvia_param core_params[] = {
    { "LOG", "warn", CVIA_PARAM_ENUM, offsetof(struct cvia_core_cfg, log_level),
      "Logging level for messages on stderr (debug and trace need a Debug build).",
      0, 0, log_levels },
    { "LOG_SUBSYS", "all", CVIA_PARAM_STRING, offsetof(struct cvia_core_cfg, log_subsys),
      "Comma-separated subsystems to log: core, shm, boot, conf, topo, util, mem, net, dsm, or all.",
      0, 0, NULL },
    { "SPIN_TIME", "20us", CVIA_PARAM_TIME, offsetof(struct cvia_core_cfg, spin_time),
      "How long a waiting rank polls without giving up the CPU before it yields "
      "(sched_yield at every poll); skipped while its core is found shared (a yield "
      "that let another task run), so ranks on one core hand it over at once.",
      0, 0, NULL },
    { "YIELD_TIME", "10ms", CVIA_PARAM_TIME, offsetof(struct cvia_core_cfg, yield_time),
      "How long a waiting rank yields at every poll before it blocks: in poll() on the "
      "network provider's socket (woken by the next datagram) when every peer is on "
      "another host, asleep until a peer writes to it (a futex in its shm segment, "
      "CVIA_LIVENESS_INTERVAL at most) when every peer is on this host, and with peers "
      "of both kinds on that futex while a helper thread polls the sockets and wakes "
      "it; a sleep ends by udp's or eth's next timer (a retransmission, a delayed "
      "acknowledgement) at the latest, and after 1 ms with tcp. "
      "cvia_test never blocks.",
      0, 0, NULL },
    { "BOOT_TIMEOUT", "120s", CVIA_PARAM_TIME, offsetof(struct cvia_core_cfg, boot_timeout),
      "Longest wait for the launcher during wire-up (fence, get) before cvia_init fails.",
      0, 0, NULL },
    { "NET", "tcp", CVIA_PARAM_ENUM, offsetof(struct cvia_core_cfg, net),
      "Provider for ranks on other hosts (another boot, or another network "
      "namespace); ranks on this host always use shm. xdp (where built with "
      "libxdp) moves eth's frames through AF_XDP sockets, with eth standing in "
      "where AF_XDP is refused (CVIA_XDP_FALLBACK). Without a launcher the "
      "network provider is opened only when this variable is set in the "
      "environment, and udp, eth and xdp serve launcher-free peers (cvia_connect to "
      "another host's address; tcp: this host's peers only, one warning).",
      0, 0, cvia__net_names },
    { "THREAD_CHECK", "no", CVIA_PARAM_BOOL, offsetof(struct cvia_core_cfg, thread_check),
      "Check the thread level given to cvia_init_thread: below "
      "CVIA_THREAD_MULTIPLE, two threads found inside corevia at once (or, at "
      "single and funneled, a call from a thread other than the initializing "
      "one) print an error naming the level and abort. Costs one atomic "
      "exchange per lock; at CVIA_THREAD_MULTIPLE it changes nothing.",
      0, 0, NULL },
    { "MAX_PEERS", "8", CVIA_PARAM_INT, offsetof(struct cvia_core_cfg, max_peers),
      "Without a launcher (no cvia-run, no PMIx): how many processes on this host, "
      "itself included, this process can be connected with at once through "
      "cvia_connect() (the libfabric provider's fi_av_insert of launcher-free names), "
      "either way. The shared-memory segment has one ring of CVIA_SHM_SLOTS x "
      "CVIA_SHM_SLOT_SIZE per peer, reserved at cvia_init; a dead peer's ring serves "
      "the next one. Peer indices are not reused: 4 x this many over the process's "
      "life, peers on other hosts (CVIA_NET=udp, eth or xdp) included. Every process must use the "
      "same value. 1: no dynamic peers. Ignored in a launcher's job.",
      1, 4096, NULL },
    { "LIVENESS_INTERVAL", "20ms", CVIA_PARAM_TIME, offsetof(struct cvia_core_cfg, liveness),
      "How often an idle waiter checks whether its peers are still alive; a dead "
      "peer is reported within about this time (at most 10 s, so that it cannot "
      "be turned off by accident).",
      0, 10000000, NULL },
    { NULL }
};

const struct cvia_param_table cvia__core_param_table = {
    .component = "core", .prefix = "", .params = core_params,
    .cfg_size = sizeof(struct cvia_core_cfg),
};

/* Set by the launcher, read by src/boot/boot.c; declared here so that they
 * are documented and known. Users do not set them by hand. */
struct boot_doc { char s[CVIA_PARAM_STRLEN]; };
static const struct cvia_param boot_params[] = {
    { "RANK", "0", CVIA_PARAM_STRING, 0,
      "Set by cvia-run: this process's rank, 0 .. CVIA_SIZE-1.", 0, 0, NULL },
    { "SIZE", "1", CVIA_PARAM_STRING, 0,
      "Set by cvia-run: number of ranks in the job.", 0, 0, NULL },
    { "LOCAL_RANK", "0", CVIA_PARAM_STRING, 0,
      "Set by cvia-run: rank among the ranks on this host.", 0, 0, NULL },
    { "LOCAL_SIZE", "1", CVIA_PARAM_STRING, 0,
      "Set by cvia-run: number of ranks on this host.", 0, 0, NULL },
    { "BOOT_ADDR", "", CVIA_PARAM_STRING, 0,
      "Set by cvia-run: the launcher's unix socket; unset: the PMIx server's job if a "
      "PMIx launcher (mpirun, prterun, srun --mpi=pmix) started the process, else a job "
      "of one.",
      0, 0, NULL },
    { "JOBID", "", CVIA_PARAM_STRING, 0,
      "Set by cvia-run: the job's random 64-bit key (16 hex digits); segments "
      "and peers of other jobs are refused.", 0, 0, NULL },
    { NULL }
};

const struct cvia_param_table cvia__boot_param_table = {
    .component = "boot", .prefix = "", .params = boot_params,
    .cfg_size = sizeof(struct boot_doc),
};

/* Variables of the test suite (tests/), documented with the rest. */
struct test_cfg { long mult; };
static const struct cvia_param test_params[] = {
    { "TIMEOUT_MULTIPLIER", "1", CVIA_PARAM_INT, offsetof(struct test_cfg, mult),
      "Test suite only: multiplies every test's time limit (slow or sanitizer builds).",
      1, 1000, NULL },
    { NULL }
};

const struct cvia_param_table cvia__test_param_table = {
    .component = "test", .prefix = "TEST_", .params = test_params,
    .cfg_size = sizeof(struct test_cfg),
};

extern const struct cvia_param_table cvia__shm_param_table;
extern const struct cvia_param_table cvia__tcp_param_table;
extern const struct cvia_param_table cvia__udp_param_table;
extern const struct cvia_param_table cvia__eth_param_table;
#if CVIA_HAVE_XDP
extern const struct cvia_param_table cvia__xdp_param_table;
#endif
extern const struct cvia_param_table cvia__dgram_param_table;
extern const struct cvia_param_table cvia__topo_param_table;
extern const struct cvia_param_table cvia__mem_param_table;

/* The library's own tables. The layers above the core (the DSM library,
 * the libfabric provider) register theirs when they are loaded: the core
 * knows their variables only in a process that uses them. */
static const struct cvia_param_table *const core_tables[] = {
    &cvia__core_param_table,
    &cvia__boot_param_table,
    &cvia__topo_param_table,
    &cvia__mem_param_table,
    &cvia__shm_param_table,
    &cvia__tcp_param_table,
    &cvia__udp_param_table,
    &cvia__eth_param_table,
#if CVIA_HAVE_XDP
    &cvia__xdp_param_table,
#endif
    &cvia__dgram_param_table,
};
#define NCORE ((int)(sizeof(core_tables) / sizeof(core_tables[0])))

/* Registered tables, filled in order and never compacted: a slot once
 * used holds a table or, after cvia_var_unregister, the empty table. */
#define NLAYERS 8
static _Atomic(const struct cvia_param_table *) layer_tables[NLAYERS];
static const struct cvia_param no_params[] = { { NULL } };
static const struct cvia_param_table gone = {
    .component = "", .prefix = "", .params = no_params, .cfg_size = 1,
};

/* Name spaces of the layers above the core that belong to this project
 * (src/dsm, src/fabric): a CVIA_DSM_* or CVIA_FI_* name in a process that
 * has not loaded that layer is not reported as unknown. The core knows
 * the prefixes, not the variables. */
const char *const cvia__param_layer_prefixes[] = { "DSM_", "FI_", NULL };

/* Order: the library's, the layers', and the test suite's last. */
const struct cvia_param_table *cvia__param_table(int i)
{
    int used = 0;

    if (i < 0)
        return NULL;
    if (i < NCORE)
        return core_tables[i];
    i -= NCORE;
    /* slots fill in order and are never emptied: the used ones come first */
    while (used < NLAYERS && atomic_load_explicit(&layer_tables[used], memory_order_acquire))
        used++;
    if (i < used)
        return atomic_load_explicit(&layer_tables[i], memory_order_acquire);
    return i == used ? &cvia__test_param_table : NULL;
}

int cvia_var_register(const struct cvia_param_table *t)
{
    if (!t || !t->component || !t->prefix || !t->params || !t->component[0])
        return -EINVAL;
    for (int i = 0; i < NLAYERS; i++) {
        const struct cvia_param_table *cur =
            atomic_load_explicit(&layer_tables[i], memory_order_acquire);

        if (cur == t || (cur && cur != &gone && !strcmp(cur->prefix, t->prefix)))
            return 0;   /* already known (this copy or another of the layer) */
    }
    for (int i = 0; i < NLAYERS; i++) {
        const struct cvia_param_table *cur =
            atomic_load_explicit(&layer_tables[i], memory_order_acquire);

        while (!cur || cur == &gone) {
            if (atomic_compare_exchange_weak_explicit(&layer_tables[i], &cur, t,
                                                      memory_order_acq_rel,
                                                      memory_order_acquire))
                return 0;
        }
    }
    return -ENOSPC;
}

int cvia_var_unregister(const struct cvia_param_table *t)
{
    for (int i = 0; i < NLAYERS; i++) {
        const struct cvia_param_table *cur = t;

        if (atomic_compare_exchange_strong_explicit(&layer_tables[i], &cur, &gone,
                                                    memory_order_acq_rel,
                                                    memory_order_relaxed))
            return 0;
    }
    return -ENOENT;
}
