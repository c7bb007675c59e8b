/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* CVIA_DSM_* variables: the only place they are documented (cvia-info and
 * man/cvia-config.7.md are generated from this table). Compiled into the
 * DSM library, which reads it (src/dsm/dsm_init.c) and registers it with
 * libcorevia while loaded. */
#include <stddef.h>

#include <corevia/corevia.h>

#include "dsm/dsm_cfg.h"

static const char *const dsm_home_names[] = { "block", "rr", "first-touch", NULL };
static const char *const dsm_fetch_names[] = { "zcopy", "copy", "pull", NULL };
static const char *const dsm_stats_names[] = { "none", "text", "json", NULL };

static const struct cvia_param dsm_params[] = {
    { "SIZE", "1g", CVIA_PARAM_SIZE, offsetof(struct dsm_cfg, size),
      "Virtual size of the DSM's shared region, reserved at the same address on "
      "every rank; memory is used only where it is touched.", 1L << 20, 1L << 40, NULL },
    { "UNIT", "4k", CVIA_PARAM_SIZE, offsetof(struct dsm_cfg, unit),
      "Coherence granularity, a multiple of the page size: a unit is fetched, "
      "twinned, diffed and invalidated whole.", 4096, 1 << 26, NULL },
    { "HOME", "block", CVIA_PARAM_ENUM, offsetof(struct dsm_cfg, home),
      "Home placement of cvia_dsm_malloc() and G_MALLOC units: block (each "
      "allocation cut into one contiguous block per rank), rr (unit i on rank "
      "i mod size), first-touch (the first rank that writes the unit).",
      0, 0, dsm_home_names },
    { "FETCH", "pull", CVIA_PARAM_ENUM, offsetof(struct dsm_cfg, fetch),
      "How a faulting rank gets a unit: zcopy, the home writes it straight into "
      "the faulting page (RDMA write with immediate, no copy on either side); "
      "copy, through a send and a receive buffer (the paper's base); pull, "
      "zcopy the first time, after which the home keeps the unit write-tracked "
      "and the rank reads it itself (RDMA read into the faulting page), without "
      "waiting for the home's service thread.", 0, 0, dsm_fetch_names },
    { "DIFF_BUF", "64k", CVIA_PARAM_SIZE, offsetof(struct dsm_cfg, diff_buf),
      "Size of each of the two diff buffers a home keeps for every writer "
      "(used alternately; a larger diff is sent in pieces).", 4096, 1 << 26, NULL },
    { "NAP", "50us", CVIA_PARAM_TIME, offsetof(struct dsm_cfg, nap),
      "How long the DSM service thread sleeps between polls where it cannot "
      "sleep until work comes: while its application thread waits (after "
      "CVIA_DSM_WAIT_SPIN), and, with ranks on other hosts, while it computes "
      "(then the longest a peer's request waits). With every rank on one host "
      "a computing rank's service thread sleeps until a peer writes to it or "
      "its application needs it.",
      0, 0, NULL },
    { "IDLE", "1ms", CVIA_PARAM_TIME, offsetof(struct dsm_cfg, idle),
      "While its application thread computes, how long after its last event "
      "the DSM service thread keeps napping CVIA_DSM_NAP at a time before it "
      "sleeps until a peer writes to it or its application needs it (with "
      "every rank on one host; elsewhere it keeps napping): short enough that "
      "a long computation pays nothing, long enough that faults in quick "
      "succession do not each wait for a wake-up through the kernel.",
      0, 0, NULL },
    { "SLICE", "0", CVIA_PARAM_TIME, offsetof(struct dsm_cfg, slice),
      "Scheduler time slice the DSM service thread asks for (sched_setattr, "
      "honoured by EEVDF from Linux 6.12); 0 keeps the kernel's default. "
      "Measured on a 2-vCPU VM: 100us made every application slower.",
      0, 0, NULL },
    { "WAIT_SPIN", "1ms", CVIA_PARAM_TIME, offsetof(struct dsm_cfg, wait_spin),
      "While the application thread waits (fault, lock, barrier), how long the "
      "service thread polls without pause before it sleeps CVIA_DSM_NAP between "
      "polls: long enough for a barrier, short enough to leave the core to "
      "others when ranks outnumber cores. With the region shared on one host "
      "(CVIA_DSM_LEVELS) the waiting rank itself spins this long at a lock or "
      "barrier (not at all when the ranks outnumber the CPUs), then naps "
      "CVIA_DSM_NAP at a time for up to a second, then sleeps until woken.", 0, 0, NULL },
    { "POLLS", "200", CVIA_PARAM_INT, offsetof(struct dsm_cfg, polls),
      "Idle polls the DSM service thread makes after its last event before "
      "it starts to sleep.", 0, 100000000, NULL },
    { "POLL", "200ms", CVIA_PARAM_TIME, offsetof(struct dsm_cfg, poll),
      "How often a rank makes the writes it did since the last time visible "
      "to ranks that read them without synchronizing (a flag polled in a "
      "loop): its service thread writes the changed bytes of units not "
      "released yet to their homes and tells every rank to drop its copies of "
      "the units written. A write is then seen by a rank polling it within "
      "about CVIA_DSM_POLL plus a message and a fetch, whatever either rank "
      "does (two unsynchronized writes are not ordered: data read after a "
      "flag still needs an acquire); 0 turns this off (HLRC alone: a write is "
      "seen only after an acquire that follows the writer's release).", 0, 0, NULL },
    { "PREFETCH", "64", CVIA_PARAM_INT, offsetof(struct dsm_cfg, prefetch),
      "At a barrier, how many of the units it invalidates (among those this "
      "rank had touched since it fetched them) a rank fetches again at once, "
      "before they are touched; 0: fetch on fault only.", 0, 4096, NULL },
    { "AHEAD", "32", CVIA_PARAM_INT, offsetof(struct dsm_cfg, ahead),
      "Fetch-ahead: when a rank's fault fetches follow a pattern, each such "
      "fetch also asks for up to this many of the units the pattern says "
      "come next, in the same moment and in one message to each home, so "
      "that their round trips overlap: "
      "a stream (the third consecutive unit of a run of fetches, or later: "
      "the units that follow; a run goes on over gaps of up to 16 units) or "
      "a stride (runs of at most CVIA_DSM_AHEAD "
      "units starting S units apart, twice, or once if S is the stride "
      "followed last: the rest of this run and the next "
      "runs at S, 2S, ...); with no pattern, a new run asks for as many "
      "units as the previous run had. Units of this rank and valid ones are skipped; "
      "one that arrives is made accessible on its first touch, without a "
      "message. While fewer than half of the recent units it fetched were "
      "touched, only one pattern in 8 is followed. One level only (not "
      "within groups across hosts); 0 turns it off. In copy mode "
      "(CVIA_DSM_FETCH=copy) the units land in CVIA_DSM_PREFETCH's slots, so "
      "no more than that many are in flight, and none with "
      "CVIA_DSM_PREFETCH=0.", 0, 64, NULL },
    { "STATS", "none", CVIA_PARAM_ENUM, offsetof(struct dsm_cfg, stats),
      "At cvia_dsm_finalize, rank 0 prints every rank's DSM counters and "
      "their sum: none, text (a table) or json.", 0, 0, dsm_stats_names },
    { "STATS_FILE", "", CVIA_PARAM_STRING, offsetof(struct dsm_cfg, stats_file),
      "File that CVIA_DSM_STATS output goes to (empty: standard output).",
      0, 0, NULL },
    { "MAX_LOCKS", "4096", CVIA_PARAM_INT, offsetof(struct dsm_cfg, max_locks),
      "Most DSM locks a program may create.", 1, 1 << 24, NULL },
    { "ADDR", "", CVIA_PARAM_STRING, offsetof(struct dsm_cfg, addr),
      "Address (hex) of the shared region on every rank; empty: rank 0 picks "
      "a free range and the others map it at the same place.", 0, 0, NULL },
    { "LEVELS", "2", CVIA_PARAM_INT, offsetof(struct dsm_cfg, levels),
      "2: when every rank runs on one host, the ranks map one shared segment "
      "(0600, unlinked as soon as all have it) as the region, so the hardware "
      "keeps it coherent: no fault, fetch, twin or diff, and locks and "
      "barriers are futex words in shared memory. When the ranks span "
      "hosts and a host has two or more, the ranks of each host share one "
      "segment (region, twins, unit table) and the home-based protocol runs "
      "between hosts only (groups; locks and barriers stay messages). "
      "1: every rank keeps its own copy and runs the home-based "
      "protocol with every other rank, on one host too (the paper's "
      "comparison). Every rank needs the same value.", 1, 2, NULL },
    { NULL }
};

const struct cvia_param_table cvia__dsm_param_table = {
    .component = "dsm", .prefix = "DSM_", .params = dsm_params,
    .cfg_size = sizeof(struct dsm_cfg),
};

/* Known to libcorevia (cvia_var_info, the unknown-name check) while this
 * DSM library is loaded. */
__attribute__((constructor)) static void register_params(void)
{
    cvia_var_register(&cvia__dsm_param_table);
}

__attribute__((destructor)) static void unregister_params(void)
{
    cvia_var_unregister(&cvia__dsm_param_table);
}
