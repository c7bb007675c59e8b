/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Wire-up client: rank, size, job key, and a key-value store with
 * put / get / fence, served by the launcher (cvia-run) over a unix socket,
 * or by a PMIx server (boot_pmix.c) when mpirun, prterun or srun --mpi=pmix
 * started the process: CVIA_BOOT_ADDR set -> cvia-run; else PMIX_NAMESPACE,
 * PMIX_RANK or PMIX_SERVER_URI* set -> PMIx (an error if built without
 * libpmix); else a job of one.
 *
 * The launcher passes, in each rank's environment:
 *   CVIA_RANK, CVIA_SIZE        rank and job size
 *   CVIA_BOOT_ADDR              path of the launcher's unix socket
 *   CVIA_JOBID                  16 hex digits: the job's random key
 *   CVIA_LOCAL_RANK, CVIA_LOCAL_SIZE   rank and size on this host
 * Without CVIA_BOOT_ADDR the process is a job of one (singleton) and every
 * call works locally.
 *
 * Wire protocol: see boot_proto.h. */
#ifndef COREVIA_BOOT_BOOT_H
#define COREVIA_BOOT_BOOT_H

#include <stddef.h>
#include <stdint.h>

struct cvia_boot;

/* Events the launcher reports asynchronously about other ranks. */
enum cvia_boot_event_kind {
    CVIA_BOOT_EV_EXIT,    /* rank exited (status = exit code) without finalizing */
    CVIA_BOOT_EV_KILLED,  /* rank died of a signal (status = signal) */
    CVIA_BOOT_EV_ABORT,   /* job is being torn down (rank = culprit or -1) */
};
struct cvia_boot_event {
    int kind;
    int rank;
    int status;
};

/* Connect (or become a singleton). @timeout_s bounds every blocking wait
 * (fence, get). Returns 0, -CVIA_EBOOT (message logged) or -ENOMEM. */
int cvia__boot_open(double timeout_s, struct cvia_boot **boot_p);
void cvia__boot_close(struct cvia_boot *b);

int      cvia__boot_rank(const struct cvia_boot *b);
int      cvia__boot_size(const struct cvia_boot *b);
int      cvia__boot_local_rank(const struct cvia_boot *b);
int      cvia__boot_local_size(const struct cvia_boot *b);
uint64_t cvia__boot_jobid(const struct cvia_boot *b);
/* 1 without a launcher (no cvia-run, no PMIx): a job of one */
int      cvia__boot_standalone(const struct cvia_boot *b);
int      cvia__boot_is_singleton(const struct cvia_boot *b);

/* Publish @val under @key (both: printable, no whitespace, key <= 64,
 * val <= 1024 bytes). Visible to others after the next fence. A key ends
 * in ".<rank of the putter>" (host.3, tcp.3): PMIx stores data per process
 * and cvia__boot_get asks that rank for it (other keys: every rank). */
int cvia__boot_put(struct cvia_boot *b, const char *key, const char *val);

/* Fetch a value some rank put before the last fence. -ENOENT if absent,
 * -ENOSPC if @cap is too small. */
int cvia__boot_get(struct cvia_boot *b, const char *key, char *val, size_t cap);

/* Block until every rank has called fence. Fails with -CVIA_ENOPEER if a
 * rank died first, -ETIMEDOUT after the timeout. */
int cvia__boot_fence(struct cvia_boot *b);

/* Tell the launcher this rank has finalized cleanly (its exit is normal). */
int cvia__boot_fini(struct cvia_boot *b);

/* Non-blocking: read pending events. Returns the number stored in @ev
 * (at most @max), 0 if none, or a negative error (launcher gone:
 * -CVIA_EBOOT). Never blocks, one recv() system call. */
int cvia__boot_poll(struct cvia_boot *b, struct cvia_boot_event *ev, int max);

/* Ask the launcher to end the job; logs @why. */
void cvia__boot_abort(struct cvia_boot *b, int code, const char *why);

#endif
