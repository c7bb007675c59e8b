/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Memory registration. Messaging needs none (a rendezvous registers the
 * send buffer with corevia itself, for the time of the transfer), so the
 * messaging fi_info asks for no mr_mode bits; fi_mr_reg still works for
 * applications that register everything. A region with FI_REMOTE_READ or
 * FI_REMOTE_WRITE becomes a corevia registration (the RMA fi_info: mr_mode
 * FI_MR_VIRT_ADDR | FI_MR_PROV_KEY): its key is corevia's, which the
 * target's corevia checks on every access, and the domain lists it for
 * the atomics its provider applies. */
#include <stdlib.h>

#include "fabric/fab.h"

static int fab_mr_close(struct fid *fid)
{
    struct fab_mr *mr = fab_of(fid, struct fab_mr, fid.fid);

    if (mr->cmr) {
        fab_dom_mr_del(mr->dom, mr);
        cvia_mr_dereg(mr->cmr);
        fab_core_release();
    }
    atomic_fetch_sub(&mr->dom->refs, 1);
    free(mr);
    return 0;
}

static int fab_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int fab_mr_control(struct fid *fid, int command, void *arg)
{
    return -FI_ENOSYS;
}

static int fab_mr_ops_open(struct fid *fid, const char *name, uint64_t flags,
                           void **ops, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops fab_mr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_mr_close,
    .bind = fab_mr_bind,
    .control = fab_mr_control,
    .ops_open = fab_mr_ops_open,
};

static int fab_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                          struct fid_mr **mr_p)
{
    struct fab_domain *dom = fab_of(fid, struct fab_domain, fid.fid);
    struct fab_mr *mr;

    if (fid->fclass != FI_CLASS_DOMAIN || !attr || attr->iov_count > 1)
        return -FI_EINVAL;
    if (!(mr = calloc(1, sizeof(*mr))))
        return -FI_ENOMEM;
    mr->dom = dom;
    if (attr->iov_count) {
        mr->buf = attr->mr_iov[0].iov_base;
        mr->len = attr->mr_iov[0].iov_len;
    }
    mr->access = attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE);
    mr->fid.key = (uint64_t)(uintptr_t)mr;
    if (mr->access) {
        unsigned a = (mr->access & FI_REMOTE_READ ? CVIA_MR_REMOTE_READ : 0) |
                     (mr->access & FI_REMOTE_WRITE ? CVIA_MR_REMOTE_WRITE : 0);
        cvia_mr_desc_t d;
        int rc = fab_core_acquire();

        if (rc) {
            free(mr);
            return fab_errno(rc);
        }
        if ((rc = cvia_mr_reg((void *)mr->buf, mr->len, a, &mr->cmr)) == 0 &&
            (rc = cvia_mr_desc(mr->cmr, &d)) == 0)
            mr->fid.key = d.key;
        if (rc) {
            if (mr->cmr)
                cvia_mr_dereg(mr->cmr);
            fab_core_release();
            free(mr);
            return fab_errno(rc);
        }
        fab_dom_mr_add(dom, mr);
    }
    mr->fid.fid.fclass = FI_CLASS_MR;
    mr->fid.fid.context = attr->context;
    mr->fid.fid.ops = &fab_mr_fi_ops;
    mr->fid.mem_desc = mr;
    atomic_fetch_add(&dom->refs, 1);
    *mr_p = &mr->fid;
    return 0;
}

static int fab_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
                       uint64_t offset, uint64_t requested_key, uint64_t flags,
                       struct fid_mr **mr, void *context)
{
    struct fi_mr_attr attr = { .mr_iov = iov, .iov_count = count, .access = access,
                               .offset = offset, .requested_key = requested_key,
                               .context = context };
    return fab_mr_regattr(fid, &attr, flags, mr);
}

static int fab_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
                      uint64_t offset, uint64_t requested_key, uint64_t flags,
                      struct fid_mr **mr, void *context)
{
    struct iovec v = { (void *)buf, len };
    return fab_mr_regv(fid, &v, 1, access, offset, requested_key, flags, mr, context);
}

struct fi_ops_mr fab_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = fab_mr_reg,
    .regv = fab_mr_regv,
    .regattr = fab_mr_regattr,
};
