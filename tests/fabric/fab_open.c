/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The fabric tests' shared setup: fab_open.h. */
#include "fab_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name_swap.h"

#define STEP(call) do { if ((*rc = (int)(call)) < 0) return #call; } while (0)

const char *fab_getinfo(struct fab_open *o, const struct fab_opts *opts, int *rc)
{
    struct fi_info *hints = fi_allocinfo();

    memset(o, 0, sizeof(*o));
    if (!hints)
        return *rc = -FI_ENOMEM, "fi_allocinfo";
    hints->caps = opts->caps;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = opts->mr_mode;
    hints->domain_attr->threading = opts->threading;
    hints->tx_attr->msg_order = opts->msg_order;
    hints->rx_attr->msg_order = opts->msg_order;
    hints->fabric_attr->prov_name = strdup("corevia");
    *rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &o->info);
    fi_freeinfo(hints);
    return *rc < 0 ? "fi_getinfo" : NULL;
}

const char *fab_open_objects(struct fab_open *o, const struct fab_opts *opts, int *rc)
{
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = opts->cq_size };
    struct fi_cntr_attr cta = { .events = FI_CNTR_EVENTS_COMP };
    struct fi_av_attr ava = { .type = opts->av_type ? opts->av_type : FI_AV_TABLE };
    uint64_t dirs = opts->split_cq ? FI_TRANSMIT : FI_TRANSMIT | FI_RECV;

    STEP(fi_fabric(o->info->fabric_attr, &o->fabric, NULL));
    STEP(fi_domain(o->fabric, o->info, &o->domain, NULL));
    STEP(fi_av_open(o->domain, &ava, &o->av, NULL));
    STEP(fi_cq_open(o->domain, &cqa, &o->cq, NULL));
    o->rxcq = o->cq;
    if (opts->split_cq)
        STEP(fi_cq_open(o->domain, &cqa, &o->rxcq, NULL));
    if (opts->send_cntr)
        STEP(fi_cntr_open(o->domain, &cta, &o->txcntr, NULL));
    STEP(fi_endpoint(o->domain, o->info, &o->ep, NULL));
    STEP(fi_ep_bind(o->ep, &o->av->fid, 0));
    STEP(fi_ep_bind(o->ep, &o->cq->fid, dirs | opts->tx_cq_flags));
    if (opts->split_cq)
        STEP(fi_ep_bind(o->ep, &o->rxcq->fid, FI_RECV));
    if (o->txcntr)
        STEP(fi_ep_bind(o->ep, &o->txcntr->fid, FI_SEND));
    STEP(fi_enable(o->ep));
    return NULL;
}

const char *fab_open(struct fab_open *o, const struct fab_opts *opts, int *rc)
{
    const char *what = fab_getinfo(o, opts, rc);
    return what ? what : fab_open_objects(o, opts, rc);
}

const char *fab_close_rdm(struct fab_open *o, int *rc)
{
    STEP(fi_close(&o->ep->fid));
    STEP(fi_close(&o->av->fid));
    if (o->txcntr)
        STEP(fi_close(&o->txcntr->fid));
    if (o->rxcq != o->cq)
        STEP(fi_close(&o->rxcq->fid));
    STEP(fi_close(&o->cq->fid));
    STEP(fi_close(&o->domain->fid));
    STEP(fi_close(&o->fabric->fid));
    fi_freeinfo(o->info);
    o->info = NULL;
    return NULL;
}

int fab_rank(void)
{
    const char *r = getenv("CVIA_RANK");
    return atoi(r ? r : "0");
}

const char *fab_peer(struct fab_open *o, const char *dir, const char *stem, int me,
                     fi_addr_t *peer)
{
    static char why[64];
    char name[64], pname[64], mine[512], theirs[512];
    size_t len = sizeof(name);
    const char *err;
    int rc;

    if ((rc = fi_getname(&o->ep->fid, name, &len)) < 0) {
        snprintf(why, sizeof(why), "fi_getname = %d (%s)", rc, fi_strerror(-rc));
        return why;
    }
    snprintf(mine, sizeof(mine), "%s/%s.%d", dir, stem, me);
    snprintf(theirs, sizeof(theirs), "%s/%s.%d", dir, stem, 1 - me);
    if ((err = name_swap(mine, theirs, name, len, pname, sizeof(pname), 3000)))
        return err;
    if (fi_av_insert(o->av, pname, 1, peer, 0, NULL) != 1)
        return "fi_av_insert";
    return NULL;
}

enum fi_threading fab_mode_arg(int argc, char **argv, const char *prog)
{
    if (argc != 3 || (strcmp(argv[2], "domain") && strcmp(argv[2], "safe"))) {
        fprintf(stderr, "usage: cvia-run -n 2 %s DIR domain|safe\n", prog);
        exit(2);
    }
    return strcmp(argv[2], "domain") ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
}

static void fab_fail(const char *prog, int me, const char *what, int rc, int has_rc)
{
    if (has_rc)
        fprintf(stderr, "%s: rank %d: %s: %d (%s)\n", prog, me, what, rc, fi_strerror(-rc));
    else
        fprintf(stderr, "%s: rank %d: %s\n", prog, me, what);
    exit(1);
}

void fab_pair_up(struct fab_open *o, const struct fab_opts *opts, const char *dir,
                 const char *stem, int me, fi_addr_t *peer, const char *prog)
{
    int rc = 0;
    const char *what = o->info ? fab_open_objects(o, opts, &rc) : fab_open(o, opts, &rc);

    if (what)
        fab_fail(prog, me, what, rc, 1);
    if ((what = fab_peer(o, dir, stem, me, peer)))
        fab_fail(prog, me, what, 0, 0);
}

void fab_pair_down(struct fab_open *o, int me, const char *prog)
{
    int rc = 0;
    const char *what = fab_close_rdm(o, &rc);

    if (what)
        fab_fail(prog, me, what, rc, 1);
}
