/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The setup the fabric test programs share (fab_open.c): an RDM endpoint
 * of the corevia provider with its fabric, domain, AV and CQ(s), opened
 * and closed in one call each, and the name swap between the two ranks
 * of a cvia-run -n 2 job that gives each the other's address. Every call
 * answers NULL when done, else what failed (the failing call's code in
 * *rc where there is one), for the test's own report. */
#ifndef COREVIA_TESTS_FABRIC_FAB_OPEN_H
#define COREVIA_TESTS_FABRIC_FAB_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

/* What the test asks for; zero fields: the defaults named. */
struct fab_opts {
    uint64_t caps;
    int mr_mode;
    enum fi_threading threading;   /* FI_THREAD_UNSPEC: the provider's choice */
    enum fi_av_type av_type;       /* FI_AV_UNSPEC: FI_AV_TABLE */
    size_t cq_size;                /* 0: the provider's */
    uint64_t msg_order;            /* hinted for both directions (0: none asked) */
    int split_cq;                  /* a transmit CQ (cq) and a receive CQ (rxcq) */
    uint64_t tx_cq_flags;          /* more flags for the transmit CQ's bind */
    int send_cntr;                 /* a completion counter bound with FI_SEND */
};

struct fab_open {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;             /* both directions; the transmit one with split_cq */
    struct fid_cq *rxcq;           /* the receive CQ: cq itself without split_cq */
    struct fid_cntr *txcntr;       /* with send_cntr, else NULL */
    struct fid_ep *ep;
};

/* fi_getinfo on the corevia provider with @opts' hints, into o->info (the
 * rest of *o zeroed): a test may check or adjust the entry before
 * fab_open_objects. */
const char *fab_getinfo(struct fab_open *o, const struct fab_opts *opts, int *rc);
/* The fabric, domain, AV, CQ(s), counter and endpoint of o->info, bound
 * and enabled. */
const char *fab_open_objects(struct fab_open *o, const struct fab_opts *opts, int *rc);
/* Both of the above. */
const char *fab_open(struct fab_open *o, const struct fab_opts *opts, int *rc);
/* All of it, in the reverse order, and o->info. */
const char *fab_close_rdm(struct fab_open *o, int *rc);

static inline const char *fab_open_rdm_thr(struct fab_open *o, uint64_t caps, int mr_mode,
                                           enum fi_threading threading, int *rc)
{
    struct fab_opts opts = { .caps = caps, .mr_mode = mr_mode, .threading = threading };
    return fab_open(o, &opts, rc);
}

static inline const char *fab_open_rdm(struct fab_open *o, uint64_t caps, int mr_mode, int *rc)
{
    return fab_open_rdm_thr(o, caps, mr_mode, FI_THREAD_UNSPEC, rc);
}

/* This process's rank in its cvia-run job (CVIA_RANK; 0 without one). */
int fab_rank(void);

/* The two ranks' endpoint names through the files DIR/STEM.0 and
 * DIR/STEM.1 (name_swap.h; 30 s at most), the peer's inserted into o->av
 * as *peer. */
const char *fab_peer(struct fab_open *o, const char *dir, const char *stem, int me,
                     fi_addr_t *peer);

/* The command line "DIR domain|safe" of a two-rank test @prog: the
 * threading to ask for (FI_THREAD_DOMAIN or FI_THREAD_SAFE); exits 2
 * with a usage line on any other. */
enum fi_threading fab_mode_arg(int argc, char **argv, const char *prog);

/* fab_open (fab_open_objects where the test has o->info already: *o zeroed
 * before, else fab_getinfo's), then fab_peer; and fab_close_rdm. On a
 * failure they say what failed as "PROG: rank ME: ..." and exit 1. */
void fab_pair_up(struct fab_open *o, const struct fab_opts *opts, const char *dir,
                 const char *stem, int me, fi_addr_t *peer, const char *prog);
void fab_pair_down(struct fab_open *o, int me, const char *prog);

#endif
