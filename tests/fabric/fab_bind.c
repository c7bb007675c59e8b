/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/*
 * fab_bind: an endpoint binds only to a CQ or counter of its own domain.
 * A CQ's lock is on or off by its domain's threading, and with it off
 * (FI_THREAD_DOMAIN) a completion is written into the ring with no lock
 * (fab_cq_push, inline); an endpoint of a second FI_THREAD_DOMAIN domain,
 * driven by its own thread as that threading allows, would push into the
 * first domain's CQ unlocked while that domain's thread reads it. Two
 * domains of one fabric: the cross binds are refused (-FI_EINVAL), the
 * endpoint's own domain's objects still bind and it enables. Under
 * cvia-run -n 1. Prints "ok bind".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define CHECK(call) do { long _rc = (long)(call); if (_rc < 0) { \
        fprintf(stderr, "fab_bind: %s:%d: %s = %ld (%s)\n", __FILE__, __LINE__, #call, _rc, \
                fi_strerror((int)-_rc)); exit(1); } } while (0)
#define EXPECT(cond, ...) do { if (!(cond)) { fprintf(stderr, "fab_bind: "); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

int main(void)
{
    struct fi_info *hints = fi_allocinfo(), *info;
    struct fid_fabric *fabric;
    struct fid_domain *d1, *d2;
    struct fid_av *av2;
    struct fid_cq *cq1, *cq2;
    struct fid_cntr *cn1, *cn2;
    struct fid_ep *ep2;
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
    struct fi_cntr_attr cta = { .events = FI_CNTR_EVENTS_COMP };
    struct fi_av_attr ava = { .type = FI_AV_TABLE };
    int rc;

    EXPECT(hints, "fi_allocinfo");
    hints->caps = FI_TAGGED | FI_MSG;
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup("corevia");
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    CHECK(fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &d1, NULL));
    CHECK(fi_domain(fabric, info, &d2, NULL));
    CHECK(fi_cq_open(d1, &cqa, &cq1, NULL));
    CHECK(fi_cq_open(d2, &cqa, &cq2, NULL));
    CHECK(fi_cntr_open(d1, &cta, &cn1, NULL));
    CHECK(fi_cntr_open(d2, &cta, &cn2, NULL));
    CHECK(fi_av_open(d2, &ava, &av2, NULL));
    CHECK(fi_endpoint(d2, info, &ep2, NULL));
    rc = fi_ep_bind(ep2, &cq1->fid, FI_TRANSMIT | FI_RECV);
    EXPECT(rc == -FI_EINVAL, "an endpoint bound to another domain's CQ: %d (%s)", rc,
           fi_strerror(-rc));
    rc = fi_ep_bind(ep2, &cn1->fid, FI_SEND);
    EXPECT(rc == -FI_EINVAL, "an endpoint bound to another domain's counter: %d (%s)", rc,
           fi_strerror(-rc));
    CHECK(fi_ep_bind(ep2, &av2->fid, 0));
    CHECK(fi_ep_bind(ep2, &cq2->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_ep_bind(ep2, &cn2->fid, FI_SEND));
    CHECK(fi_enable(ep2));
    CHECK(fi_close(&ep2->fid));
    CHECK(fi_close(&av2->fid));
    CHECK(fi_close(&cn2->fid));
    CHECK(fi_close(&cn1->fid));
    CHECK(fi_close(&cq2->fid));
    CHECK(fi_close(&cq1->fid));
    CHECK(fi_close(&d2->fid));
    CHECK(fi_close(&d1->fid));
    CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
    printf("ok bind\n");
    return 0;
}
