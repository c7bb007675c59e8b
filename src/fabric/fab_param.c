/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* CVIA_FI_* variables of the libfabric provider: the only place they are
 * documented (cvia-info and man/cvia-config.7.md are generated from this
 * table). Compiled into libcorevia-fi.so, which reads it and registers
 * it with libcorevia while loaded. */
#include <stddef.h>

#include <corevia/corevia.h>

#include "fabric/fab_cfg.h"

static const char *const fab_wireup_names[] = { "open", "first-use", NULL };
static const char *const fab_thread_names[] = { "safe", "domain", "auto", NULL };

static const struct cvia_param fab_params[] = {
    { "EAGER", "16k", CVIA_PARAM_SIZE, offsetof(struct fab_cfg, eager),
      "libfabric provider: the largest message sent in one piece with its "
      "header (copied into a buffer of the receiver's inbox, then into the "
      "application's); longer ones go by rendezvous, the receiver reading "
      "the bytes once, straight into its buffer.", 0, 1 << 24, NULL },
    { "RX_DEPTH", "16", CVIA_PARAM_INT, offsetof(struct fab_cfg, rx_depth),
      "libfabric provider: receive buffers (each of CVIA_FI_EAGER bytes plus "
      "a header) made for an endpoint's corevia inbox when it is armed; "
      "more are made as a stream needs them, and kept.",
      1, 4096, NULL },
    { "INJECT", "4k", CVIA_PARAM_SIZE, offsetof(struct fab_cfg, inject),
      "libfabric provider: inject_size it reports (fi_inject and FI_INJECT "
      "up to this size; at most CVIA_FI_EAGER).", 0, 1 << 24, NULL },
    { "LIVENESS", "20ms", CVIA_PARAM_TIME, offsetof(struct fab_cfg, liveness),
      "libfabric provider: how often an endpoint with operations in flight "
      "asks corevia for dead peers while its completion queue is polled; "
      "the operations involving a dead peer then complete with FI_EIO (at "
      "most 10 s).",
      0, 10000000, NULL },
    { "WIREUP", "open", CVIA_PARAM_ENUM, offsetof(struct fab_cfg, wireup),
      "libfabric provider: when corevia's collective wire-up runs: open (the "
      "first address vector or endpoint, as every rank of an MPI job opens "
      "them in MPI_Init) or first-use (the first operation that needs a peer: "
      "a send, or polling with a receive posted; names and address vectors "
      "work before it), for programs whose processes open their endpoints at "
      "different times and exchange names themselves, such as fi_pingpong "
      "under cvia-run.", 0, 0, fab_wireup_names },
    { "THREAD", "auto", CVIA_PARAM_ENUM, offsetof(struct fab_cfg, thread),
      "libfabric provider: the threading it grants and the thread level it asks "
      "of corevia. auto: what the first domain asks decides; a domain asking "
      "FI_THREAD_DOMAIN (Open MPI below MPI_THREAD_MULTIPLE) brings corevia up "
      "at CVIA_THREAD_SERIALIZED, any other level (or none: FI_THREAD_SAFE is "
      "granted) at CVIA_THREAD_MULTIPLE; while corevia runs serialized, a "
      "further domain must ask FI_THREAD_DOMAIN too (others are refused, and "
      "fi_getinfo gives them no entry); corevia brought up by the application "
      "keeps its level, and below CVIA_THREAD_MULTIPLE only FI_THREAD_DOMAIN "
      "domains are granted. safe: FI_THREAD_SAFE unless asked "
      "otherwise, corevia at CVIA_THREAD_MULTIPLE (locks on the message path) "
      "whatever the domains ask. domain: at most FI_THREAD_DOMAIN, corevia at "
      "CVIA_THREAD_SERIALIZED (no lock or atomic read-modify-write on corevia's "
      "message path); hints asking FI_THREAD_SAFE or FI_THREAD_FID get no entry "
      "and such a domain is refused. At FI_THREAD_DOMAIN the provider takes no "
      "lock of its own either: the application calls it from one thread at a "
      "time, in every domain of the process together (one domain, or MPI below "
      "MPI_THREAD_MULTIPLE); a process that drives two FI_THREAD_DOMAIN domains "
      "from two threads at once sets safe.", 0, 0, fab_thread_names },
    { "AUTO_NAP", "100us", CVIA_PARAM_TIME, offsetof(struct fab_cfg, auto_nap),
      "libfabric provider: how long the progress thread of an FI_PROGRESS_AUTO "
      "domain sleeps between rounds while some peer of the process is on another "
      "host (with every peer on this host it sleeps until a peer writes to it "
      "instead). Shorter answers a peer's rendezvous, atomics and RMA sooner "
      "when the application is not calling libfabric; longer costs less CPU "
      "when idle (at 100us about 10,000 wake-ups a second).",
      1, 1000000, NULL },
    { NULL }
};

const struct cvia_param_table cvia__fab_param_table = {
    .component = "fi", .prefix = "FI_", .params = fab_params,
    .cfg_size = sizeof(struct fab_cfg),
};

/* Known to libcorevia (cvia_var_info, the unknown-name check) while this
 * provider is loaded. */
__attribute__((constructor)) static void register_params(void)
{
    cvia_var_register(&cvia__fab_param_table);
}

__attribute__((destructor)) static void unregister_params(void)
{
    cvia_var_unregister(&cvia__fab_param_table);
}
