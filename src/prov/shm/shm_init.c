/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* shm provider: descriptor, parameters, wire-up and teardown. */
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "boot/boot.h"
#include "mem/arena.h"
#include "prov/shm/shm.h"
#include "util/log.h"
#include "util/param.h"

static const char *const copy_modes[] = { "auto", "read", "write", "coop", NULL };

static const struct cvia_param shm_params[] = {
    { "SLOTS", "64", CVIA_PARAM_INT, offsetof(struct shm_cfg, nslots),
      "Slots in each per-pair ring (a power of two); a message of up to "
      "SLOTS x (SLOT_SIZE - 32) bytes is written without waiting for the receiver.",
      2, 65536, NULL },
    { "SLOT_SIZE", "16k", CVIA_PARAM_SIZE, offsetof(struct shm_cfg, slot_size),
      "Bytes per ring slot, a 32-byte header included (a multiple of 64); "
      "larger messages are pipelined through consecutive slots.",
      128, 16 << 20, NULL },
    { "RNDV_THRESHOLD", "auto", CVIA_PARAM_STRING, offsetof(struct shm_cfg, rndv_text),
      "Messages of at least this many bytes are copied once (rendezvous) where "
      "Cross Memory Attach or a shared arena allows; smaller ones are pipelined "
      "through the ring (the sender copies slot k+1 in while the receiver copies "
      "slot k out). auto: the size from which single copy measured no slower, "
      "probed at the first start after boot (two threads, ring against "
      "process_vm_readv, 4k-1m; at least 16k, at most 512k) and cached in $XDG_RUNTIME_DIR/corevia-shm-tune "
      "(/dev/shm/corevia-shm-tune-UID without a private runtime directory; 0600, "
      "used only if this user's own private file; validated, used for a day; "
      "CVIA_SHM_REPROBE=y or deleting it measures again); where the probe cannot run "
      "or is rejected, 32k. "
      "A size (64k) overrides the probe; a huge value (1t) turns single copy off. "
      "`cvia-bench crossover` measures the crossover between two ranks.",
      0, 0, NULL },
    { "CMA", "auto", CVIA_PARAM_TRI, offsetof(struct shm_cfg, cma),
      "Copy with Cross Memory Attach (process_vm_readv/writev): auto probes each "
      "peer at start and falls back to two copies, with one warning, where the "
      "kernel refuses (ptrace policy, containers); y makes a refusal an error at "
      "cvia_init; n never uses it (single copy then only from shared arenas).",
      0, 0, NULL },
    { "ARENA", "y", CVIA_PARAM_BOOL, offsetof(struct shm_cfg, arena),
      "Map peers' shared arenas (memory from cvia_mem_alloc) to copy to and from "
      "them with plain loads and stores, without a system call.",
      0, 0, NULL },
    { "COPY", "auto", CVIA_PARAM_ENUM, offsetof(struct shm_cfg, copy_mode),
      "Who copies a rendezvous message: read (the receiver pulls), write (the "
      "sender pushes into the posted receive), coop (both, on disjoint chunks), or "
      "auto (coop from CVIA_SHM_COOP_THRESHOLD up, read below).",
      0, 0, copy_modes },
    { "COOP_THRESHOLD", "512k", CVIA_PARAM_SIZE, offsetof(struct shm_cfg, coop_threshold),
      "With CVIA_SHM_COPY=auto, messages of at least this size are copied by both "
      "sides at once (where both may use Cross Memory Attach). 512k: from there it "
      "measured faster than the receiver's copy alone, in latency and bandwidth, "
      "below it not (BENCHMARKS.md, issue 3); 1t turns it off.",
      0, 0, NULL },
    { "COOP_CHUNK", "0", CVIA_PARAM_SIZE, offsetof(struct shm_cfg, coop_chunk),
      "Bytes per chunk claimed by either side in a cooperative or sender-side copy; "
      "0: half the message (rounded up to a page), so that each side copies its half "
      "in one system call (4 MiB: 1.2x the bandwidth of 256k chunks on a KVM guest, "
      "BENCHMARKS.md, issue 17). Else at least 4k.",
      0, 1 << 30, NULL },
    { "RNDV_SLOTS", "1024", CVIA_PARAM_INT, offsetof(struct shm_cfg, rv_per_peer),
      "Most rendezvous transfers a rank may have in flight to one peer. Only "
      "address space is reserved for them (128 bytes each, for every rank of the "
      "job: 128 KiB per rank at the default, in every segment, and each rank maps "
      "its host's segments; lower it for jobs of many thousands of ranks under a "
      "virtual-memory limit, ulimit -v); the memory is "
      "committed a page (32 transfers) at a time as a peer needs more. Beyond "
      "the limit, or when /dev/shm refuses the memory (one warning), a large "
      "message goes through the ring; cvia_peer_info counts those messages.",
      1, 1 << 20, NULL },
    { "MR_MAX", "1024", CVIA_PARAM_INT, offsetof(struct shm_cfg, mr_max),
      "Regions a rank may have registered for one-sided access at once.",
      1, 1 << 20, NULL },
    { "RNDV_WINDOW", "auto", CVIA_PARAM_STRING, offsetof(struct shm_cfg, window_text),
      "Below CVIA_SHM_RNDV_THRESHOLD, a message of at least this size that finds "
      "the pair busy (the peer has not yet taken the last slot written to it, or "
      "earlier sends wait) goes by rendezvous too, copied once by both sides in "
      "halves (the receiver by process_vm_readv, the sender by process_vm_writev) "
      "where the ring would make both copy every byte. Where both ranks may use "
      "Cross Memory Attach and CVIA_SHM_COPY is auto. auto: from the threshold "
      "probe's figures, the "
      "smallest size (16k or more) from which one process_vm_readv took at most 2.5x the ring's "
      "time (the threshold itself where the probe did not run, e.g. a threshold "
      "given as a size). A size sets it (a message under 8k is copied by one side, "
      "not in halves); 1t turns it off.",
      0, 0, NULL },
    { "PIECE", "auto", CVIA_PARAM_STRING, offsetof(struct shm_cfg, piece_text),
      "A message longer than this that fits one ring slot is published a piece "
      "per slot, so that the receiver copies one piece out while the sender "
      "copies the next in (4 KiB in 2 KiB pieces: 0.83x the time of one slot on "
      "a KVM guest, BENCHMARKS.md, issue 17). auto: measured at the first start "
      "after boot (two threads, 4-16 KiB whole and in 2k and 4k pieces; the "
      "fastest piece if 3 % faster than whole slots, else 0) and cached in "
      "$XDG_RUNTIME_DIR/corevia-shm-piece (/dev/shm/corevia-shm-piece-UID "
      "without a private runtime directory; 0600; validated and dated like "
      "the threshold's; CVIA_SHM_REPROBE=y or deleting it measures again); "
      "0 on one CPU. 0: whole slots; a size (2k, at least 64) overrides the probe.",
      0, 0, NULL },
    { "REPROBE", "n", CVIA_PARAM_BOOL, offsetof(struct shm_cfg, reprobe),
      "y: measure the rendezvous threshold and the piece size again now, whatever "
      "their caches say, and rewrite the caches (see CVIA_SHM_RNDV_THRESHOLD). "
      "Without it a cached probe is used for a day after it was taken; a probe is "
      "cached only when its two measurements agree on a quiet machine (under 10 % "
      "stolen by a hypervisor, under 30 % of the CPUs used by other processes; "
      "else the default is used and the probe taken again a minute later). "
      "Deleting the files ($XDG_RUNTIME_DIR/corevia-shm-tune*, -piece*) also measures "
      "again.",
      0, 0, NULL },
    { "PROBE_CHECK", "y", CVIA_PARAM_BOOL, offsetof(struct shm_cfg, probe_check),
      "y: a probe (rendezvous threshold, piece size) measures twice and is cached "
      "only if both choose the same and the machine was quiet meanwhile (see "
      "CVIA_SHM_REPROBE); n: one measurement, cached as it is (the behaviour before "
      "issue 16, for a machine known to be busy whose figures are wanted anyway).",
      0, 0, NULL },
    { "ARENA_THRESHOLD", "8k", CVIA_PARAM_SIZE, offsetof(struct shm_cfg, arena_threshold),
      "Below CVIA_SHM_RNDV_THRESHOLD, a message of at least this size whose send "
      "buffer lies in the sender's shared arena (cvia_mem_alloc) goes by rendezvous: "
      "the receiver copies it once by plain loads, no system call, where the ring "
      "makes both sides copy it (8 KiB to 256 KiB: 1.5-2.4x the ring's bandwidth and "
      "0.5-0.7x its latency on a KVM guest; 4 KiB no faster, BENCHMARKS.md, issue 17). "
      "1t turns it off.",
      0, 0, NULL },
    { "ARENA_COOP", "64k", CVIA_PARAM_SIZE, offsetof(struct shm_cfg, arena_coop),
      "With CVIA_SHM_COPY=auto, a rendezvous message of at least this size whose send "
      "and receive buffers both lie in shared arenas is copied by both sides at once, "
      "each its half by loads and stores (64-256 KiB: 1.15-1.55x the bandwidth of the "
      "receiver's copy alone on a KVM guest; 16-32 KiB slower, BENCHMARKS.md, issue 17). "
      "1t: the receiver copies alone.",
      0, 0, NULL },
    { NULL }
};

const struct cvia_param_table cvia__shm_param_table = {
    .component = "shm", .prefix = "SHM_", .params = shm_params,
    .cfg_size = sizeof(struct shm_cfg),
};

static int shm_probe_flags(const struct shm_cfg *cfg)
{
    return (cfg->reprobe ? SHM_PROBE_AGAIN : 0) | (cfg->probe_check ? 0 : SHM_PROBE_NOCHECK);
}

/* CVIA_SHM_PIECE: a size, or auto (shm_piece.c). */
static int shm_piece_cfg(struct shm_cfg *cfg)
{
    int is_auto, cached;

    if (shm_piece_parse(cfg->piece_text, &cfg->piece, &is_auto)) {
        cvia_error(CONF, "CVIA_SHM_PIECE: invalid value '%s' (expected auto, 0 or a "
                   "size of at least 64 bytes)", cfg->piece_text);
        return -1;
    }
    cached = 0;
    int rc = is_auto ? shm_tune_piece((uint32_t)cfg->slot_size, &cfg->piece, &cached,
                                      shm_probe_flags(cfg)) : 0;
    if (rc)
        cfg->piece = 0;
    cvia_info(SHM, "one-slot messages in pieces of %zu bytes (0: whole; %s)", cfg->piece,
              !is_auto ? "CVIA_SHM_PIECE" : rc == -EBUSY ? "probe rejected: default" :
              cached ? "measured, cached" : "measured");
    return 0;
}

/* CVIA_SHM_RNDV_THRESHOLD: a size, or auto (shm_tune.c). @probed: 1 when
 * measured now, 2 when read from the cache, 3 when the probe was rejected
 * (the default, said so), 0 when given or defaulted. */
static int shm_resolve_threshold(struct shm_cfg *cfg, int *probed, size_t *window)
{
    int is_auto, cached;

    *probed = 0;
    *window = 0;
    if (shm_tune_parse(cfg->rndv_text, &cfg->rndv_threshold, &is_auto)) {
        cvia_error(CONF, "CVIA_SHM_RNDV_THRESHOLD: invalid value '%s' (expected auto or "
                   "%s)", cfg->rndv_text, cvia__param_syntax(&shm_params[6]));
        return -CVIA_ECONFIG;
    }
    if (!is_auto)
        return 0;
    cfg->rndv_threshold = 32 << 10;   /* where the probe cannot run */
    if (cfg->cma == 0 && !cfg->arena)
        return 0;   /* no single copy at all: nothing to choose */
    int rc = shm_tune_threshold_window((uint32_t)cfg->nslots, (uint32_t)cfg->slot_size,
                                       cfg->copy_mode == SHM_COPY_AUTO ? cfg->coop_threshold :
                                       cfg->copy_mode == SHM_COPY_COOP ? 0 : (size_t)1 << 50,
                                       cfg->coop_chunk, &cfg->rndv_threshold, window, &cached,
                                       shm_probe_flags(cfg));
    if (!rc)
        *probed = cached ? 2 : 1;
    else if (rc == -EBUSY)
        *probed = 3;   /* rejected: the default, said so */
    return 0;
}

/* CVIA_SHM_RNDV_WINDOW: a size, or auto (the probe's, else the threshold:
 * nothing below it). After shm_resolve_threshold. */
static int shm_resolve_window(struct shm_cfg *cfg, int probed, size_t probed_window)
{
    int is_auto;

    if (shm_tune_parse(cfg->window_text, &cfg->rv_window, &is_auto)) {
        cvia_error(CONF, "CVIA_SHM_RNDV_WINDOW: invalid value '%s' (expected auto or a "
                   "size such as 16k)", cfg->window_text);
        return -CVIA_ECONFIG;
    }
    if (is_auto)
        cfg->rv_window = probed == 1 || probed == 2 ? probed_window : cfg->rndv_threshold;
    return 0;
}

static int shm_open_ep(const struct cvia_prov_args *args, struct cvia_prov_ep **ep_p)
{
    struct cvia_prov_ep *ep;
    char key[32];
    size_t window;
    int rc;

    ep = calloc(1, sizeof(*ep));
    if (!ep)
        return -ENOMEM;
    ep->args = *args;
    ep->seg_fd = -1;
    rc = cvia__param_load(&cvia__shm_param_table, &ep->cfg);
    if (rc)
        goto err_free;
    if (ep->cfg.nslots & (ep->cfg.nslots - 1)) {
        cvia_error(CONF, "CVIA_SHM_SLOTS: invalid value '%ld' (expected a power of two)",
                   ep->cfg.nslots);
        rc = -CVIA_ECONFIG;
        goto err_free;
    }
    if (ep->cfg.slot_size % SHM_CACHELINE) {
        cvia_error(CONF, "CVIA_SHM_SLOT_SIZE: invalid value '%zu' (expected a "
                   "multiple of %d)", ep->cfg.slot_size, SHM_CACHELINE);
        rc = -CVIA_ECONFIG;
        goto err_free;
    }
    if (ep->cfg.coop_chunk && ep->cfg.coop_chunk < 4096) {
        cvia_error(CONF, "CVIA_SHM_COOP_CHUNK: invalid value '%zu' (expected 0 or at "
                   "least 4096)", ep->cfg.coop_chunk);
        rc = -CVIA_ECONFIG;
        goto err_free;
    }
    if ((rc = shm_resolve_threshold(&ep->cfg, &ep->rndv_probed, &window)) ||
        (rc = shm_resolve_window(&ep->cfg, ep->rndv_probed, window)) ||
        (rc = shm_piece_cfg(&ep->cfg) ? -CVIA_ECONFIG : 0))
        goto err_free;
    /* every rank registers, so that a sleeper's membarrier reaches the
     * CPUs running its senders (shm_block) */
    ep->membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
    ep->nslots = (uint32_t)ep->cfg.nslots;
    ep->slot_size = (uint32_t)ep->cfg.slot_size;
    if (!(ep->lidx = malloc((size_t)args->size * sizeof(int)))) {
        rc = -ENOMEM;
        goto err_free;
    }
    for (int p = 0; p < args->size; p++)
        ep->lidx[p] = args->same_host[p] ? ep->nlocal++ : -1;
    if (args->dynamic) {   /* a ring for every peer that may come */
        ep->nlocal = args->rings;
        if ((rc = shm_dyn_init(ep)))
            goto err_free;
    }
    shm_seg_layout(ep);
    ep->peers = calloc((size_t)args->size, sizeof(*ep->peers));
    if (!ep->peers) {
        rc = -ENOMEM;
        goto err_free;
    }
    if (!(ep->look = calloc((size_t)args->size, sizeof(*ep->look)))) {
        rc = -ENOMEM;
        goto err_free_peers;
    }
    for (int p = 0; p < args->size; p++) {
        struct shm_peer *pp = &ep->peers[p];
        pp->look = &ep->look[p];
        shm_look_none(ep, pp);   /* until its ring may be read */
        pp->pidfd = -1;
        pp->remote_idx = args->rank;
        cvia_mlock_init(&pp->tx_lock);
        cvia_mlock_init(&pp->rx_lock);
        if (!(pp->rv_users = calloc((size_t)ep->cfg.rv_per_peer, 1))) {
            rc = -ENOMEM;
            goto err_free_peers;
        }
    }
    /* Under Yama's ptrace_scope 1 ranks (siblings) may not use CMA on each
     * other; allow it for our launcher's descendants - the job - only. */
    if (ep->cfg.cma != 0 && args->size > 1 && !args->dynamic && getppid() > 1) {
        FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
        int scope = 0;
        if (f) {
            if (fscanf(f, "%d", &scope) != 1)
                scope = 0;
            fclose(f);
        }
        if (scope == 1 && prctl(PR_SET_PTRACER, (unsigned long)getppid(), 0, 0, 0) == 0)
            cvia_info(SHM, "yama ptrace_scope 1: allowed the launcher's descendants "
                      "(pid %d) to use Cross Memory Attach on this rank", (int)getppid());
    }

    rc = shm_seg_create(ep);
    if (rc)
        goto err_free_peers;
    if (ep->cfg.arena) {
        int fd = cvia__arena_index_fd();
        atomic_store_explicit(&ep->seg->arena_fd, fd >= 0 ? fd : -1, memory_order_release);
    }
    cvia_mlock_init(&ep->dyn_lock);
    atomic_store_explicit(&ep->nvis, args->dynamic ? 1 : args->size, memory_order_relaxed);
    snprintf(key, sizeof(key), "shm.%d", args->rank);
    rc = cvia__boot_put(args->boot, key, ep->name);
    if (rc)
        goto err_seg;
    *ep_p = ep;
    return 0;

err_seg:
    shm_seg_unlink(ep);
    shm_seg_detach_all(ep);
err_free_peers:
    for (int p = 0; p < args->size; p++)
        free(ep->peers[p].rv_users), free(ep->peers[p].rv_free);
    free(ep->peers);
    free(ep->look);
err_free:
    free(ep->lidx);
    free(ep);
    return rc;
}

static int shm_connect(struct cvia_prov_ep *ep)
{
    char key[32], name[SHM_NAME_MAX];
    int rc;

    for (int p = 0; p < ep->args.size; p++) {
        if (ep->lidx[p] < 0)
            continue;   /* another host: another provider's */
        if (p == ep->args.rank) {
            rc = shm_seg_attach(ep, p, ep->name);
        } else {
            snprintf(key, sizeof(key), "shm.%d", p);
            rc = cvia__boot_get(ep->args.boot, key, name, sizeof(name));
            if (rc) {
                cvia_error(SHM, "no segment name published by rank %d: %s", p,
                           cvia_strerror(rc));
                return rc == -ENOENT ? -CVIA_EBOOT : rc;
            }
            rc = shm_seg_attach(ep, p, name);
        }
        if (rc)
            return rc;
    }
    shm_probe_cma(ep);
    return 0;
}

static int shm_ready(struct cvia_prov_ep *ep)
{
    int me = ep->args.rank;

    /* dynamic: the name stays until close, for peers that come later (a
     * fatal signal or exit unlinks it; a peer that sees us killed does) */
    if (ep->args.dynamic)
        return 0;
    /* every peer has mapped my segment: the name is no longer needed, and
     * from now on nothing is left in /dev/shm whatever happens to us */
    shm_seg_unlink(ep);
    /* every peer has probed me: learn who may copy into and out of me */
    for (int p = 0; p < ep->args.size; p++) {
        struct shm_peer *pp = &ep->peers[p];
        if (!pp->seg)
            continue;
        pp->can_cma = shm_cma_table(ep->seg)[p];
        pp->peer_cma = shm_cma_table(pp->seg)[me];
        if (pp->can_cma || pp->peer_cma)
            ep->rndv_any = 1;
    }
    if (ep->cfg.cma == 1)
        for (int p = 0; p < ep->args.size; p++)
            if (ep->peers[p].seg && !ep->peers[p].can_cma) {
                cvia_error(SHM, "CVIA_SHM_CMA=y: Cross Memory Attach to rank %d is "
                           "refused by the kernel", p);
                return -EPERM;
            }
    return 0;
}

static int shm_close(struct cvia_prov_ep *ep, int clean)
{
    if (!ep)
        return 0;
    if (clean && ep->seg)
        atomic_store_explicit(&ep->seg->finalized, 1, memory_order_release);
    shm_seg_unlink(ep);
    for (int p = 0; p < ep->args.size; p++) {
        if (ep->peers[p].view)
            cvia__arena_view_close(ep->peers[p].view);
        free(ep->peers[p].rv_users);
        free(ep->peers[p].rv_free);
    }
    shm_seg_detach_all(ep);
    free(ep->peers);
    free(ep->look);
    free(ep->lidx);
    free(ep);
    return 0;
}

static int shm_reachable(struct cvia_prov_ep *ep, int peer)
{
    return peer >= 0 && peer < ep->args.size && ep->lidx[peer] >= 0;
}

/* " (coop from 512k, read below)" where auto switches to cooperative copy at
 * a size (CVIA_SHM_COOP_THRESHOLD below 1t), "" otherwise: cvia-info and the
 * path report show the mechanism in use. */
static void shm_coop_note(const struct shm_cfg *cfg, char *buf, size_t cap)
{
    char t[32];

    buf[0] = 0;
    if (cfg->copy_mode != SHM_COPY_AUTO || cfg->cma == 0 ||
        cfg->coop_threshold >= ((size_t)1 << 40))
        return;
    cvia__param_format(&shm_params[6], &cfg->coop_threshold, t, sizeof(t));
    snprintf(buf, cap, " (coop from %s, read below)", t);
}

static void shm_describe(char *buf, size_t cap)
{
    struct shm_cfg cfg;
    char slot[32];

    if (cvia__param_load(&cvia__shm_param_table, &cfg)) {
        snprintf(buf, cap, "misconfigured (see the error above)");
        return;
    }
    char thr[300], coop[64];
    FILE *f;
    int scope = -1;

    cvia__param_format(&shm_params[1], &cfg.slot_size, slot, sizeof(slot));
    if (!strcmp(cfg.rndv_text, "auto"))
        snprintf(thr, sizeof(thr), "a size measured per boot (CVIA_SHM_RNDV_THRESHOLD=auto)");
    else
        snprintf(thr, sizeof(thr), "%s", cfg.rndv_text);
    shm_coop_note(&cfg, coop, sizeof(coop));
    if ((f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r"))) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = -1;
        fclose(f);
    }
    snprintf(buf, cap, "available: per-pair rings of %ld slots x %s in /dev/shm "
             "(two copies); from %s single copy by %s%s%s, copy mode %s%s",
             cfg.nslots, slot, thr,
             cfg.cma == 0 ? "shared arenas only (CVIA_SHM_CMA=n)" :
             "Cross Memory Attach (probed per peer at start; two copies where refused)",
             cfg.cma == 0 ? "" : scope < 0 ? ", no Yama ptrace restriction" :
             scope == 0 ? ", yama ptrace_scope 0" :
             scope == 1 ? ", yama ptrace_scope 1: permitted for the job's ranks" :
             ", yama ptrace_scope >= 2: refused",
             cfg.arena ? " and arenas" : "", copy_modes[cfg.copy_mode], coop);
}

static void shm_peer_info(struct cvia_prov_ep *ep, int peer, char *buf, size_t cap)
{
    struct shm_peer *pp = &ep->peers[peer];
    char thr[64], coop[64];

    size_t n;

    cvia__param_format(&shm_params[6], &ep->cfg.rndv_threshold, thr, sizeof(thr));
    if (ep->rndv_probed)
        strcat(thr, ep->rndv_probed == 1 ? " (measured)" : ep->rndv_probed == 2 ?
                    " (measured, cached)" : " (default: probe rejected)");
    shm_coop_note(&ep->cfg, coop, sizeof(coop));
    if (peer == ep->args.rank)
        snprintf(buf, cap, "shm: self, single copy (memcpy) from %s", thr);
    else if (pp->can_cma || pp->peer_cma)
        snprintf(buf, cap, "shm: two-copy rings below %s, single copy above by "
                 "Cross Memory Attach (%s%s%s), copy mode %s%s%s", thr,
                 pp->can_cma ? "pull" : "", pp->can_cma && pp->peer_cma ? "+" : "",
                 pp->peer_cma ? "push" : "", copy_modes[ep->cfg.copy_mode],
                 pp->can_cma && pp->peer_cma ? coop : "", ep->cfg.arena ? ", arenas by load/store" : "");
    else
        snprintf(buf, cap, "shm: two-copy rings for every size (Cross Memory Attach "
                 "%s)%s", ep->cfg.cma == 0 ? "off: CVIA_SHM_CMA=n" : "refused by the kernel",
                 ep->cfg.arena && ep->cfg.cma == 0 ? "; single copy from arenas" : "");
    n = strlen(buf);
    if (n < cap)
        snprintf(buf + n, cap - n, "; single-copied so far: %llu B by CMA, %llu B by "
                 "load/store; sent from the threshold up: %llu messages single-copied, "
                 "%llu through the ring; below it, from %zu B (CVIA_SHM_RNDV_WINDOW) when "
                 "busy: %llu single-copied, from an arena: %llu single-copied",
                 (unsigned long long)atomic_load_explicit(&pp->bytes_cma, memory_order_relaxed),
                 (unsigned long long)atomic_load_explicit(&pp->bytes_near, memory_order_relaxed),
                 (unsigned long long)atomic_load_explicit(&pp->msgs_rndv, memory_order_relaxed),
                 (unsigned long long)atomic_load_explicit(&pp->msgs_spill, memory_order_relaxed),
                 ep->cfg.rv_window,
                 (unsigned long long)atomic_load_explicit(&pp->msgs_window, memory_order_relaxed),
                 (unsigned long long)atomic_load_explicit(&pp->msgs_arena, memory_order_relaxed));
}

static int shm_mr_reg(struct cvia_prov_ep *ep, uint64_t key, const void *addr,
                      size_t len, unsigned access)
{
    return shm_mr_export(ep, key, addr, len, access);
}

static int shm_mr_dereg(struct cvia_prov_ep *ep, uint64_t key)
{
    return shm_mr_unexport(ep, key);
}

static int shm_cleanup(void)
{
    return shm_seg_cleanup_stale();
}

static const struct cvia_prov_ops shm_ops = {
    .size        = sizeof(struct cvia_prov_ops),
    .open        = shm_open_ep,
    .connect     = shm_connect,
    .ready       = shm_ready,
    .close       = shm_close,
    .reachable   = shm_reachable,
    .send        = shm_send,
    .progress    = shm_progress,
    .check_peers = shm_check_peers,
    .block       = shm_block,
    .kick        = shm_kick,
    .peer_gone   = shm_peer_gone,
    .describe    = shm_describe,
    .cleanup     = shm_cleanup,
    .rndv_start  = shm_rndv_start,
    .mr_reg      = shm_mr_reg,
    .mr_dereg    = shm_mr_dereg,
    .write       = shm_write,
    .read        = shm_read,
    .peer_info   = shm_peer_info,
    .dyn_addr    = shm_dyn_addr,
    .dyn_connect = shm_dyn_connect,
    .inject      = shm_inject,
};

const struct cvia_prov_desc cvia_prov_shm = {
    .name   = "shm",
    .desc   = "intra-node shared-memory rings",
    .scope  = CVIA_PROV_LOCAL,
    .ops    = &shm_ops,
    .params = &cvia__shm_param_table,
};
