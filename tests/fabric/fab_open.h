/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The objects of an RDM endpoint of the corevia provider, opened and
 * closed in one call each, for test programs that need only one endpoint
 * with one CQ for both directions. Header-only. */
#ifndef COREVIA_TESTS_FABRIC_FAB_OPEN_H
#define COREVIA_TESTS_FABRIC_FAB_OPEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

struct fab_open {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
};

/* 0, or the failing call's name (its code in *rc). @threading: the
 * domain's (FI_THREAD_UNSPEC: the provider's choice). */
static const char *fab_open_rdm_thr(struct fab_open *o, uint64_t caps, int mr_mode,
                                    enum fi_threading threading, int *rc)
{
    struct fi_info *hints = fi_allocinfo();
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
    struct fi_av_attr ava = { .type = FI_AV_TABLE };

    memset(o, 0, sizeof(*o));
    if (!hints)
        return *rc = -FI_ENOMEM, "fi_allocinfo";
    hints->caps = caps;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = mr_mode;
    hints->domain_attr->threading = threading;
    hints->fabric_attr->prov_name = strdup("corevia");
    *rc = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &o->info);
    fi_freeinfo(hints);
#define FAB_OPEN_STEP(call) do { if ((*rc = (call)) < 0) return #call; } while (0)
    if (*rc < 0)
        return "fi_getinfo";
    FAB_OPEN_STEP(fi_fabric(o->info->fabric_attr, &o->fabric, NULL));
    FAB_OPEN_STEP(fi_domain(o->fabric, o->info, &o->domain, NULL));
    FAB_OPEN_STEP(fi_av_open(o->domain, &ava, &o->av, NULL));
    FAB_OPEN_STEP(fi_cq_open(o->domain, &cqa, &o->cq, NULL));
    FAB_OPEN_STEP(fi_endpoint(o->domain, o->info, &o->ep, NULL));
    FAB_OPEN_STEP(fi_ep_bind(o->ep, &o->av->fid, 0));
    FAB_OPEN_STEP(fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV));
    FAB_OPEN_STEP(fi_enable(o->ep));
    return NULL;
}

static inline const char *fab_open_rdm(struct fab_open *o, uint64_t caps, int mr_mode, int *rc)
{
    return fab_open_rdm_thr(o, caps, mr_mode, FI_THREAD_UNSPEC, rc);
}

/* In the reverse order; 0, or the failing close's name. */
static const char *fab_close_rdm(struct fab_open *o, int *rc)
{
    FAB_OPEN_STEP(fi_close(&o->ep->fid));
    FAB_OPEN_STEP(fi_close(&o->av->fid));
    FAB_OPEN_STEP(fi_close(&o->cq->fid));
    FAB_OPEN_STEP(fi_close(&o->domain->fid));
    FAB_OPEN_STEP(fi_close(&o->fabric->fid));
#undef FAB_OPEN_STEP
    fi_freeinfo(o->info);
    return NULL;
}

#endif
