/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The PMIx backend of the wire-up client (boot_pmix.c), used by boot.c when
 * a PMIx server started the process (Open MPI's mpirun, PRRTE's prterun,
 * Slurm's srun --mpi=pmix) and CVIA_BOOT_ADDR is not set. Built only with
 * CVIA_HAVE_PMIX. Same contracts as the cvia__boot_* functions of boot.h;
 * keys and values arrive already checked. */
#ifndef COREVIA_BOOT_PMIX_H
#define COREVIA_BOOT_PMIX_H

#include <stddef.h>
#include <stdint.h>

struct cvia_boot_event;
struct boot_pmix;

/* What the launcher told us about this process and its job. */
struct boot_ident {
    int      rank, size, local_rank, local_size;
    uint64_t jobid;           /* hash of the PMIx namespace: the same on every rank */
};

int  cvia__boot_pmix_open(double timeout_s, struct boot_ident *id, struct boot_pmix **px_p);
void cvia__boot_pmix_close(struct boot_pmix *px);
int  cvia__boot_pmix_put(struct boot_pmix *px, const char *key, const char *val);
int  cvia__boot_pmix_get(struct boot_pmix *px, const char *key, char *val, size_t cap);
int  cvia__boot_pmix_fence(struct boot_pmix *px);
int  cvia__boot_pmix_poll(struct boot_pmix *px, struct cvia_boot_event *ev, int max);
void cvia__boot_pmix_abort(struct boot_pmix *px, int code, const char *why);

#endif
