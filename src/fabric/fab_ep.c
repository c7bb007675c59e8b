/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Endpoints: open (which brings corevia up, through whatever launched the
 * process: cvia-run, or PMIx under mpirun / srun), bind to an AV, CQs and
 * counters, enable (open the endpoint's corevia inbox), name, cancel, close. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab.h"

static atomic_int fab_next_epid;

void fab_ep_progress(struct fab_ep *ep)
{
    /* another thread progressing this endpoint does the same work */
    if (!fab_trylock(&ep->lock))
        return;
    fab_progress_locked(ep);
    fab_unlock(&ep->lock);
}

static void fab_ep_unbind_all(struct fab_ep *ep)
{
    if (ep->tx_cq) {
        fab_epset_del(&ep->tx_cq->set, ep);
        atomic_fetch_sub(&ep->tx_cq->refs, 1);
    }
    if (ep->rx_cq && ep->rx_cq != ep->tx_cq) {
        fab_epset_del(&ep->rx_cq->set, ep);
    }
    if (ep->rx_cq)
        atomic_fetch_sub(&ep->rx_cq->refs, 1);
    if (ep->tx_cntr) {
        fab_epset_del(&ep->tx_cntr->set, ep);
        atomic_fetch_sub(&ep->tx_cntr->refs, 1);
    }
    if (ep->rx_cntr) {
        if (ep->rx_cntr != ep->tx_cntr)
            fab_epset_del(&ep->rx_cntr->set, ep);
        atomic_fetch_sub(&ep->rx_cntr->refs, 1);
    }
    if (ep->wr_cntr) {
        fab_epset_del(&ep->wr_cntr->set, ep);
        atomic_fetch_sub(&ep->wr_cntr->refs, 1);
    }
    if (ep->rd_cntr) {
        fab_epset_del(&ep->rd_cntr->set, ep);
        atomic_fetch_sub(&ep->rd_cntr->refs, 1);
    }
    if (ep->av)
        atomic_fetch_sub(&ep->av->refs, 1);
}

static int fab_ep_close(struct fid *fid)
{
    struct fab_ep *ep = fab_of(fid, struct fab_ep, fid.fid);

    /* off the progress thread and every CQ and counter first: then nobody
     * else can progress it */
    fab_auto_del(ep->dom, ep);
    fab_ep_unbind_all(ep);
    fab_lock(&ep->lock);
    if (ep->enabled) {
        /* the owed AMO answers first: one sent now but not done at once
         * is an operation that fab_ep_flush waits for and frees */
        fab_amo_owed_flush(ep);
        fab_ep_flush(ep, -FI_ECANCELED);
        /* messages still arriving into the inbox finish first */
        if (ep->armed) {
            fab_held_drop(ep);
            (void)cvia_inbox_close(ep->inbox);
        }
        ep->enabled = 0;
    }
    fab_ep_free_spares(ep);
    fab_unlock(&ep->lock);
    atomic_fetch_sub(&ep->dom->refs, 1);
    if (ep->core_held)
        fab_core_release();
    free(ep);
    return 0;
}

static int fab_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct fab_ep *ep = fab_of(fid, struct fab_ep, fid.fid);
    int rc = 0;

    if (ep->enabled)
        return -FI_EOPBADSTATE;
    switch (bfid->fclass) {
    case FI_CLASS_AV: {
        struct fab_av *av = fab_of(bfid, struct fab_av, fid.fid);
        if (ep->av)
            return -FI_EINVAL;
        ep->av = av;
        atomic_fetch_add(&av->refs, 1);
        return 0;
    }
    case FI_CLASS_CQ: {
        struct fab_cq *cq = fab_of(bfid, struct fab_cq, fid.fid);
        if (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
            return -FI_EBADFLAGS;
        /* a CQ's lock is on or off by its own domain's threading (the
         * inline push writes without it): another domain's endpoint,
         * driven by another thread, would push into it unlocked */
        if (cq->dom != ep->dom)
            return -FI_EINVAL;
        if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
            return -FI_EINVAL;
        if ((rc = fab_epset_add(&cq->set, ep)))
            return rc;
        if (flags & FI_TRANSMIT) {
            ep->tx_cq = cq;
            ep->tx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
            atomic_fetch_add(&cq->refs, 1);
        }
        if (flags & FI_RECV) {
            ep->rx_cq = cq;
            ep->rx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
            atomic_fetch_add(&cq->refs, 1);
        }
        return 0;
    }
    case FI_CLASS_CNTR: {
        struct fab_cntr *c = fab_of(bfid, struct fab_cntr, fid.fid);
        if (flags & ~(uint64_t)(FI_SEND | FI_RECV | FI_WRITE | FI_READ))
            return -FI_EBADFLAGS;   /* FI_REMOTE_*: no counting at the target */
        if (c->dom != ep->dom)   /* its epset's lock is its domain's, as a CQ's */
            return -FI_EINVAL;
        if (((flags & FI_SEND) && ep->tx_cntr) || ((flags & FI_RECV) && ep->rx_cntr) ||
            ((flags & FI_WRITE) && ep->wr_cntr) || ((flags & FI_READ) && ep->rd_cntr))
            return -FI_EINVAL;
        if ((rc = fab_epset_add(&c->set, ep)))
            return rc;
        if (flags & FI_SEND) {
            ep->tx_cntr = c;
            atomic_fetch_add(&c->refs, 1);
        }
        if (flags & FI_RECV) {
            ep->rx_cntr = c;
            atomic_fetch_add(&c->refs, 1);
        }
        if (flags & FI_WRITE) {
            ep->wr_cntr = c;
            atomic_fetch_add(&c->refs, 1);
        }
        if (flags & FI_READ) {
            ep->rd_cntr = c;
            atomic_fetch_add(&c->refs, 1);
        }
        return 0;
    }
    case FI_CLASS_EQ:
        return 0;   /* an RDM endpoint here has no connection events */
    default:
        return -FI_ENOSYS;
    }
}

/* Bring corevia up (first-use wire-up) and open the endpoint's inbox. */
int fab_ep_arm(struct fab_ep *ep)
{
    int rc;

    if (ep->armed)
        return 0;
    if (ep->arm_rc)
        return ep->arm_rc;
    if (!ep->core_held) {
        if ((rc = fab_core_acquire()))
            return ep->arm_rc = fab_errno(rc);
        ep->core_held = 1;
    }
    /* the buffer the messages that came before the open are taken into,
     * before the open: without it the arm fails with nothing changed (the
     * early messages stay in corevia's receive queue, and the next call
     * tries again; not kept in arm_rc) */
    char *early = fab_fault("take_early") ? NULL : malloc(ep->slot_size);
    if (!early)
        return -FI_ENOMEM;
    /* buffers for the messages of the endpoint's tag, kept by corevia: a
     * header and an eager payload fit one (longer ones get their own) */
    if ((rc = cvia_inbox_open(FAB_TAG_BASE + ep->epid, ep->slot_size, (int)fab_cfg.rx_depth,
                              &ep->inbox))) {
        free(early);
        return ep->arm_rc = fab_errno(rc);
    }
    /* corevia is up: the domain's progress thread may call it now */
    if ((rc = fab_auto_add(ep->dom, ep))) {
        (void)cvia_inbox_close(ep->inbox);
        free(early);
        return ep->arm_rc = rc;
    }
    ep->armed = 1;
    if (fab_take_early(ep, early) == 0)
        free(early);   /* else one waits in it for memory (ep->early_buf) */
    return 0;
}

static int fab_ep_enable(struct fab_ep *ep)
{
    if (ep->enabled)
        return 0;
    if (!ep->av || (!ep->tx_cq && !ep->tx_cntr) || (!ep->rx_cq && !ep->rx_cntr))
        return -FI_ENOCQ;
    ep->slot_size = FAB_EAGER_HDR + sizeof(uint64_t) + fab_cfg.eager;
    if (ep->slot_size < sizeof(struct fab_rts))
        ep->slot_size = sizeof(struct fab_rts);
    ep->nlost_seen = 0;
    ep->enabled = 1;
    /* with the open wire-up corevia is up: arm now; else at first use */
    if (ep->core_held) {
        int rc = fab_ep_arm(ep);
        if (rc) {
            ep->enabled = 0;
            return rc;
        }
    }
    return 0;
}

static int fab_ep_control(struct fid *fid, int command, void *arg)
{
    struct fab_ep *ep = fab_of(fid, struct fab_ep, fid.fid);
    int rc;

    switch (command) {
    case FI_ENABLE:
        fab_lock(&ep->lock);
        rc = fab_ep_enable(ep);
        fab_unlock(&ep->lock);
        return rc;
    case FI_GETOPSFLAG: {
        uint64_t *f = arg;
        if (!f)
            return -FI_EINVAL;
        if (*f & FI_TRANSMIT)
            *f = ep->tx_op_flags;
        else if (*f & FI_RECV)
            *f = ep->rx_op_flags;
        else
            return -FI_EINVAL;
        return 0;
    }
    case FI_SETOPSFLAG: {
        uint64_t *f = arg;
        if (!f)
            return -FI_EINVAL;
        if (*f & FI_TRANSMIT)
            ep->tx_op_flags = *f & ~(uint64_t)FI_TRANSMIT;
        else if (*f & FI_RECV)
            ep->rx_op_flags = *f & ~(uint64_t)FI_RECV;
        else
            return -FI_EINVAL;
        return 0;
    }
    default:
        return -FI_ENOSYS;
    }
}

static int fab_ep_ops_open(struct fid *fid, const char *name, uint64_t flags,
                           void **ops, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops fab_ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_ep_close,
    .bind = fab_ep_bind,
    .control = fab_ep_control,
    .ops_open = fab_ep_ops_open,
};

static ssize_t fab_ep_cancel(fid_t fid, void *context)
{
    struct fab_ep *ep = fab_of(fid, struct fab_ep, fid.fid);
    ssize_t rc;

    fab_lock(&ep->lock);
    rc = fab_cancel_locked(ep, context);
    fab_unlock(&ep->lock);
    return rc;
}

static int fab_ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
    if (level != FI_OPT_ENDPOINT)
        return -FI_ENOPROTOOPT;
    if (optname == FI_OPT_MIN_MULTI_RECV || optname == FI_OPT_CM_DATA_SIZE) {
        if (!optlen || *optlen < sizeof(size_t))
            return -FI_ETOOSMALL;
        *(size_t *)optval = 0;
        *optlen = sizeof(size_t);
        return 0;
    }
    return -FI_ENOPROTOOPT;
}

static int fab_ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
    return -FI_ENOPROTOOPT;
}

static int fab_no_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
                      struct fid_ep **tx_ep, void *context)
{
    return -FI_ENOSYS;
}

static int fab_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
                         struct fid_ep **rx_ep, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fab_size_left(struct fid_ep *ep)
{
    return 1 << 16;   /* queues grow: FI_RM_ENABLED */
}

static struct fi_ops_ep fab_ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = fab_ep_cancel,
    .getopt = fab_ep_getopt,
    .setopt = fab_ep_setopt,
    .tx_ctx = fab_no_ctx,
    .rx_ctx = fab_no_rx_ctx,
    .rx_size_left = fab_size_left,
    .tx_size_left = fab_size_left,
};

static int fab_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
    struct fab_ep *ep = fab_of(fid, struct fab_ep, fid.fid);
    struct fab_name n = { FAB_NAME_MAGIC, 1, ep->epid, 0, 0, 0, { 0 } };
    size_t cap = *addrlen;

    if (cvia_initialized()) {   /* launcher-free: the core's address */
        struct fab_name_dyn d;
        size_t len = sizeof(d.addr);
        memset(&d, 0, sizeof(d));
        if (cvia_addr(d.addr, &len) == 0) {
            d.magic = FAB_NAME_MAGIC;
            d.version = 2;
            d.epid = ep->epid;
            d.len = (uint32_t)len;
            *addrlen = sizeof(d);
            if (cap < sizeof(d))
                return -FI_ETOOSMALL;
            memcpy(addr, &d, sizeof(d));
            return 0;
        }
    }
    if (fab_job(&n.rank, NULL, &n.job))
        return -FI_EOPBADSTATE;
    *addrlen = sizeof(n);
    if (cap < sizeof(n))
        return -FI_ETOOSMALL;
    memcpy(addr, &n, sizeof(n));
    return 0;
}

static int fab_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
    return -FI_ENOSYS;   /* a name is the rank's and the endpoint's */
}

static int fab_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
    return -FI_ENOSYS;
}

static int fab_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t len)
{
    return -FI_ENOSYS;
}

static int fab_no_listen(struct fid_pep *pep)
{
    return -FI_ENOSYS;
}

static int fab_no_accept(struct fid_ep *ep, const void *param, size_t len)
{
    return -FI_ENOSYS;
}

static int fab_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t len)
{
    return -FI_ENOSYS;
}

static int fab_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int fab_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
                       struct fid_mc **mc, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops_cm fab_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = fab_ep_setname,
    .getname = fab_ep_getname,
    .getpeer = fab_no_getpeer,
    .connect = fab_no_connect,
    .listen = fab_no_listen,
    .accept = fab_no_accept,
    .reject = fab_no_reject,
    .shutdown = fab_no_shutdown,
    .join = fab_no_join,
};

int fab_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **fep,
                void *context)
{
    struct fab_domain *dom = fab_of(domain, struct fab_domain, fid);
    struct fab_ep *ep;
    int rc, id;

    if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
        return -FI_EINVAL;
    if ((id = atomic_fetch_add(&fab_next_epid, 1)) > FAB_MAX_EP)
        return -FI_ENOSPC;
    int hold = fab_cfg.wireup == FAB_WIREUP_OPEN || fab_job_of_one();
    if ((rc = hold ? fab_core_acquire() : fab_job(NULL, NULL, NULL)))
        return fab_errno(rc);
    if (!(ep = calloc(1, sizeof(*ep)))) {
        if (hold)
            fab_core_release();
        return -FI_ENOMEM;
    }
    ep->core_held = hold;
    ep->dom = dom;
    ep->epid = (uint16_t)id;
    ep->caps = info->caps ? info->caps : (FI_MSG | FI_TAGGED | FI_DIRECTED_RECV);
    ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
    ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
    fab_lock_init(&ep->lock, fab_dom_locks(dom));
    ep->fid.fid.fclass = FI_CLASS_EP;
    ep->fid.fid.context = context;
    ep->fid.fid.ops = &fab_ep_fi_ops;
    ep->fid.ops = &fab_ep_ops;
    ep->fid.cm = &fab_cm_ops;
    ep->fid.msg = &fab_msg_ops;
    ep->fid.tagged = &fab_tagged_ops;
    ep->fid.rma = &fab_rma_ops;
    ep->fid.atomic = &fab_atomic_ops;
    /* no collectives offered: that table stays NULL */
    atomic_fetch_add(&dom->refs, 1);
    *fep = &ep->fid;
    return 0;
}
