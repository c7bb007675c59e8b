/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The provider's entry: fi_prov_ini, getinfo, fabric and domain objects,
 * and the corevia core's lifetime under libfabric. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fabric/fab.h"
#include "util/log.h"

struct fab_cfg fab_cfg;
static int fab_cfg_rc = 1;     /* 1: not loaded yet */
static pthread_mutex_t fab_core_lock = PTHREAD_MUTEX_INITIALIZER;
static int fab_core_refs;      /* endpoints using the core */
static int fab_core_ours;      /* we called cvia_init (so we finalize) */
static int fab_ndomains;       /* domains open */
/* The thread level corevia runs at (or will be brought up at) under
 * CVIA_FI_THREAD=auto: -1 while no domain decided it, else CVIA_THREAD_*;
 * decided anew once every domain closed and corevia is down. */
static int fab_level = -1;

int fab_errno(int rc)
{
    if (rc >= 0)
        return 0;
    switch (-rc) {
    case CVIA_ETRUNC:   return -FI_ETRUNC;
    case CVIA_ENOPEER:
    case CVIA_EABORT:   return -FI_EIO;
    case CVIA_ENOINIT:  return -FI_EOPBADSTATE;
    case CVIA_ENOPROV:  return -FI_EADDRNOTAVAIL;
    case ENOSPC:        return -FI_ENOSPC;
    case ETIMEDOUT:     return -FI_ETIMEDOUT;
    case CVIA_ECONFIG:  return -FI_EINVAL;
    case EACCES:        return -FI_EACCES;
    case ENOMEM:        return -FI_ENOMEM;
    case EINVAL:        return -FI_EINVAL;
    case EFAULT:        return -FI_EFAULT;
    case EAGAIN:        return -FI_EAGAIN;
    case EBUSY:         return -FI_EBUSY;
    default:            return -FI_EOTHER;
    }
}

/* CVIA_FI_*: read once; garbage names the variable (cvia's logger). */
static int fab_load_cfg(void)
{
    pthread_mutex_lock(&fab_core_lock);
    if (fab_cfg_rc == 1) {
        cvia__log_from_env();   /* the provider's own copy of the logger */
        fab_cfg_rc = cvia__param_load(&cvia__fab_param_table, &fab_cfg);
        if (fab_cfg.inject > fab_cfg.eager)
            fab_cfg.inject = fab_cfg.eager;
    }
    pthread_mutex_unlock(&fab_core_lock);
    return fab_cfg_rc;
}

int fab_core_acquire(void)
{
    int rc = 0;

    pthread_mutex_lock(&fab_core_lock);
    if (fab_core_refs == 0 && !cvia_initialized()) {
        rc = cvia_init_thread(NULL, NULL, fab_level >= 0 ? fab_level : CVIA_THREAD_MULTIPLE,
                              NULL);
        fab_core_ours = rc == 0;
        if (rc == 0)
            cvia_info(CORE, "libfabric provider: corevia up at %s (CVIA_FI_THREAD=%s)",
                      fab_level == CVIA_THREAD_SERIALIZED ? "CVIA_THREAD_SERIALIZED"
                                                          : "CVIA_THREAD_MULTIPLE",
                      fab_cfg.thread == FAB_THREAD_SAFE ? "safe" :
                      fab_cfg.thread == FAB_THREAD_DOMAIN ? "domain" : "auto");
    }
    if (rc == 0)
        fab_core_refs++;
    pthread_mutex_unlock(&fab_core_lock);
    return rc;
}

int fab_core_hold_if_up(void)
{
    int up;

    pthread_mutex_lock(&fab_core_lock);
    if ((up = fab_core_refs > 0))
        fab_core_refs++;
    pthread_mutex_unlock(&fab_core_lock);
    return up;
}

int fab_job(int32_t *rank, int32_t *size, uint64_t *job)
{
    int r, n, rc;
    uint64_t j;

    if ((rc = cvia_job_info(&r, &n, &j)))
        return rc;
    if (rank)
        *rank = r;
    if (size)
        *size = n;
    if (job)
        *job = j;
    return 0;
}

/* A job of one (no launcher, or one rank): nothing collective to defer,
 * and its names are cvia_addr()'s, which need corevia up. */
int fab_job_of_one(void)
{
    int32_t size;

    return fab_job(NULL, &size, NULL) == 0 && size == 1;
}

void fab_core_release(void)
{
    pthread_mutex_lock(&fab_core_lock);
    if (--fab_core_refs == 0 && fab_core_ours) {
        /* every rank closes its endpoint at the end (MPI_Finalize): the
         * core's closing barrier is collective; a dead peer fails it fast */
        (void)cvia_finalize();
        fab_core_ours = 0;
    }
    pthread_mutex_unlock(&fab_core_lock);
}

/* CVIA_FI_THREAD: what a domain gets when it asks for nothing, and whether
 * a level it asks for is one the provider grants. Under auto the level the
 * first domain decided holds while corevia runs serialized. Read without
 * fab_core_lock: a getinfo racing a domain's open may be answered either
 * way, and the open decides. */
static int fab_serialized(void)
{
    return fab_cfg.thread == FAB_THREAD_DOMAIN ||
           (fab_cfg.thread == FAB_THREAD_AUTO &&
            __atomic_load_n(&fab_level, __ATOMIC_RELAXED) == CVIA_THREAD_SERIALIZED);
}

static enum fi_threading fab_threading_default(void)
{
    return fab_serialized() ? FI_THREAD_DOMAIN : FI_THREAD_SAFE;
}

static int fab_threading_ok(enum fi_threading t)
{
    if (fab_cfg.thread == FAB_THREAD_DOMAIN)
        return t != FI_THREAD_SAFE && t != FI_THREAD_FID;
    return !fab_serialized() || t == FI_THREAD_UNSPEC || t == FI_THREAD_DOMAIN;
}

static const char *fab_threading_name(enum fi_threading t)
{
    switch (t) {
    case FI_THREAD_SAFE:       return "FI_THREAD_SAFE";
    case FI_THREAD_FID:        return "FI_THREAD_FID";
    case FI_THREAD_DOMAIN:     return "FI_THREAD_DOMAIN";
    case FI_THREAD_COMPLETION: return "FI_THREAD_COMPLETION";
    case FI_THREAD_ENDPOINT:   return "FI_THREAD_ENDPOINT";
    default:                   return "another threading level";
    }
}

/* A domain with threading @t opens: is it granted, and (the first one)
 * which level corevia comes up at. 0 or -FI_EINVAL, said why. A domain
 * with automatic progress (@progress_thread) has the provider's thread
 * calling corevia beside the application whatever @t says: it counts as
 * one asking FI_THREAD_SAFE. */
static int fab_domain_admit(enum fi_threading t, int progress_thread)
{
    int rc = 0;

    if (progress_thread && fab_cfg.thread == FAB_THREAD_DOMAIN) {
        cvia_error(CORE, "CVIA_FI_THREAD=domain: a domain asking FI_PROGRESS_AUTO is refused "
                   "(its progress thread needs corevia at CVIA_THREAD_MULTIPLE)");
        return -FI_EINVAL;
    }
    if (progress_thread)
        t = FI_THREAD_SAFE;
    pthread_mutex_lock(&fab_core_lock);
    if (fab_cfg.thread == FAB_THREAD_DOMAIN) {
        if (t == FI_THREAD_SAFE || t == FI_THREAD_FID) {
            cvia_error(CORE, "CVIA_FI_THREAD=domain: a domain asking FI_THREAD_SAFE or "
                       "FI_THREAD_FID is refused (use CVIA_FI_THREAD=safe)");
            rc = -FI_EINVAL;
        }
        __atomic_store_n(&fab_level, CVIA_THREAD_SERIALIZED, __ATOMIC_RELAXED);
    } else if (fab_cfg.thread == FAB_THREAD_SAFE) {
        __atomic_store_n(&fab_level, CVIA_THREAD_MULTIPLE, __ATOMIC_RELAXED);
    } else if (fab_ndomains == 0 && fab_core_refs == 0) {
        /* auto, nothing open: this domain decides (corevia brought up
         * by the application keeps the level it was given) */
        int lv = cvia_initialized() ? cvia_query_thread()
                 : t == FI_THREAD_DOMAIN ? CVIA_THREAD_SERIALIZED : CVIA_THREAD_MULTIPLE;
        if (lv < CVIA_THREAD_MULTIPLE && t != FI_THREAD_DOMAIN) {
            cvia_error(CORE, "CVIA_FI_THREAD=auto: the application brought corevia up below "
                       "CVIA_THREAD_MULTIPLE; a domain asking %s is refused",
                       fab_threading_name(t));
            rc = -FI_EINVAL;
        } else {
            __atomic_store_n(&fab_level, lv < CVIA_THREAD_MULTIPLE ? CVIA_THREAD_SERIALIZED
                                                                   : CVIA_THREAD_MULTIPLE,
                             __ATOMIC_RELAXED);
        }
    } else if (fab_level == CVIA_THREAD_SERIALIZED && t != FI_THREAD_DOMAIN) {
        cvia_error(CORE, "CVIA_FI_THREAD=auto: corevia runs at CVIA_THREAD_SERIALIZED for "
                   "the FI_THREAD_DOMAIN domain opened first; a domain asking %s is refused "
                   "(set CVIA_FI_THREAD=safe for a process that mixes them)",
                   fab_threading_name(t));
        rc = -FI_EINVAL;
    }
    if (rc == 0)
        fab_ndomains++;
    pthread_mutex_unlock(&fab_core_lock);
    return rc;
}

static void fab_domain_gone(void)
{
    pthread_mutex_lock(&fab_core_lock);
    /* the last one: the next first domain decides again (corevia went
     * down with the last endpoint, address vector and region) */
    if (--fab_ndomains == 0 && fab_core_refs == 0 && fab_cfg.thread == FAB_THREAD_AUTO)
        __atomic_store_n(&fab_level, -1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&fab_core_lock);
}

/* ---- getinfo --------------------------------------------------------------- */

/* Two entries: messaging, which needs no registration (mr_mode 0: what MPI's
 * tagged path wants), and messaging plus RMA and atomics, whose keys and
 * addresses are corevia's (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY). */
#define FAB_PRIMARY_CAPS (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | \
                          FI_LOCAL_COMM | FI_REMOTE_COMM)
#define FAB_SECONDARY_CAPS (FI_SOURCE | FI_REMOTE_CQ_DATA)
#define FAB_CAPS (FAB_PRIMARY_CAPS | FAB_SECONDARY_CAPS)
#define FAB_RMA_CAPS (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define FAB_OP_FLAGS (FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
                      FI_DELIVERY_COMPLETE)
#define FAB_TAG_FORMAT 0xaaaaaaaaaaaaaaaaull   /* FI_TAG_GENERIC: all 64 bits */
#define FAB_RMA_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY)

/* Does the application's mr_mode allow what entry @rma needs? */
static int fab_mr_mode_ok(uint32_t version, int mode, int rma)
{
    if (!rma)
        return 1;   /* messaging needs no registration: any mode will do */
    if (!FI_VERSION_GE(version, FI_VERSION(1, 5)))
        return mode == FI_MR_UNSPEC || mode == FI_MR_BASIC;
    if (mode == FI_MR_BASIC)
        return 1;
    return (mode & FAB_RMA_MR_MODE) == FAB_RMA_MR_MODE;
}

static int fab_hints_ok(uint32_t version, const struct fi_info *h, int rma)
{
    uint64_t mask = FAB_CAPS | (rma ? FAB_RMA_CAPS : 0);

    if (!h)
        return 1;
    if (h->caps & ~mask)
        return 0;
    if (h->addr_format != FI_FORMAT_UNSPEC)
        return 0;
    if (h->ep_attr) {
        if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
            return 0;
        if (h->ep_attr->protocol != FI_PROTO_UNSPEC)
            return 0;
        if (h->ep_attr->max_msg_size > SIZE_MAX / 2)
            return 0;
        if (h->ep_attr->tx_ctx_cnt > 1 || h->ep_attr->rx_ctx_cnt > 1)
            return 0;
    }
    if (h->tx_attr) {
        if ((h->tx_attr->caps & ~mask) ||
            (h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS) ||
            (h->tx_attr->comp_order & ~(uint64_t)FI_ORDER_NONE) ||
            (h->tx_attr->op_flags & ~(uint64_t)FAB_OP_FLAGS) ||
            h->tx_attr->iov_limit > FAB_IOV_MAX || h->tx_attr->inject_size > fab_cfg.inject ||
            h->tx_attr->rma_iov_limit > (rma ? 1u : 0u))
            return 0;
    }
    if (h->rx_attr) {
        if ((h->rx_attr->caps & ~mask) ||
            (h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS) ||
            (h->rx_attr->comp_order & ~(uint64_t)FI_ORDER_NONE) ||
            (h->rx_attr->op_flags & ~(uint64_t)FI_COMPLETION) ||
            h->rx_attr->iov_limit > FAB_IOV_MAX || h->rx_attr->total_buffered_recv)
            return 0;
    }
    if (h->domain_attr) {
        const struct fi_domain_attr *d = h->domain_attr;

        if (d->name && strcmp(d->name, FAB_NAME))
            return 0;
        /* CVIA_FI_THREAD=domain: the application serializes per domain */
        if (!fab_threading_ok(d->threading))
            return 0;
        /* automatic progress is a thread calling corevia beside the
         * application: corevia at CVIA_THREAD_MULTIPLE only */
        if ((d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO) &&
            fab_serialized())
            return 0;
        if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE)
            return 0;
        if (d->cq_data_size > 8 || d->auth_key_size)
            return 0;
        if (d->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM))
            return 0;
        if (!fab_mr_mode_ok(version, d->mr_mode, rma))
            return 0;
    } else if (rma && FI_VERSION_GE(version, FI_VERSION(1, 5)) && h) {
        return 0;   /* hints without a domain: mr_mode 0, no bits supported */
    }
    if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, FAB_NAME))
        return 0;
    return 1;
}

static struct fi_info *fab_info_make(uint32_t version, const struct fi_info *hints, int rma)
{
    uint64_t mask = FAB_CAPS | (rma ? FAB_RMA_CAPS : 0), caps = mask;
    struct fi_info *fi;

    if (!fab_hints_ok(version, hints, rma) || !(fi = fi_allocinfo()))
        return NULL;
    if (hints && hints->caps) {
        /* what was asked, plus the primary caps implied when none were named */
        caps = hints->caps;
        if (!(caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)))
            caps |= FI_MSG | FI_TAGGED;
        if (!(caps & (FI_SEND | FI_RECV)))
            caps |= FI_SEND | FI_RECV;
        if ((caps & (FI_RMA | FI_ATOMIC)) &&
            !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
            caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
        if (!(caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)))
            caps |= FI_LOCAL_COMM | FI_REMOTE_COMM;
        caps &= mask;
    }
    fi->caps = caps;
    fi->mode = 0;            /* FI_CONTEXT and friends: not needed */
    fi->addr_format = FI_FORMAT_UNSPEC;

    fi->tx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ |
                                FI_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM);
    fi->tx_attr->mode = 0;
    fi->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
    fi->tx_attr->msg_order = FI_ORDER_SAS;
    fi->tx_attr->comp_order = FI_ORDER_NONE;
    fi->tx_attr->inject_size = fab_cfg.inject;
    fi->tx_attr->size = 1 << 16;
    fi->tx_attr->iov_limit = FAB_IOV_MAX;
    fi->tx_attr->rma_iov_limit = rma ? 1 : 0;

    fi->rx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
                                FI_REMOTE_CQ_DATA | FI_RMA | FI_ATOMIC | FI_REMOTE_READ |
                                FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM);
    fi->rx_attr->mode = 0;
    fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
    fi->rx_attr->msg_order = FI_ORDER_SAS;
    fi->rx_attr->comp_order = FI_ORDER_NONE;
    fi->rx_attr->total_buffered_recv = 0;
    fi->rx_attr->size = 1 << 16;
    fi->rx_attr->iov_limit = FAB_IOV_MAX;

    fi->ep_attr->type = FI_EP_RDM;
    fi->ep_attr->protocol = FI_PROTO_UNSPEC;
    fi->ep_attr->protocol_version = 1;
    fi->ep_attr->max_msg_size = SIZE_MAX / 2;
    fi->ep_attr->msg_prefix_size = 0;
    fi->ep_attr->mem_tag_format = FAB_TAG_FORMAT;
    fi->ep_attr->tx_ctx_cnt = 1;
    fi->ep_attr->rx_ctx_cnt = 1;

    fi->domain_attr->name = strdup(FAB_NAME);
    fi->domain_attr->threading = hints && hints->domain_attr &&
        hints->domain_attr->threading != FI_THREAD_UNSPEC ?
        hints->domain_attr->threading : fab_threading_default();
    /* manual unless automatic was asked for (then a thread per domain) */
    fi->domain_attr->control_progress = hints && hints->domain_attr &&
        hints->domain_attr->control_progress == FI_PROGRESS_AUTO ?
        FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
    fi->domain_attr->data_progress = hints && hints->domain_attr &&
        hints->domain_attr->data_progress == FI_PROGRESS_AUTO ?
        FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
    fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
    fi->domain_attr->av_type = hints && hints->domain_attr &&
        hints->domain_attr->av_type != FI_AV_UNSPEC ? hints->domain_attr->av_type : FI_AV_MAP;
    if (!FI_VERSION_GE(version, FI_VERSION(1, 5)))
        fi->domain_attr->mr_mode = rma ? FI_MR_BASIC : FI_MR_SCALABLE;
    else
        fi->domain_attr->mr_mode = rma ? FAB_RMA_MR_MODE : 0;
    fi->domain_attr->mr_key_size = 8;
    fi->domain_attr->cq_data_size = 8;
    fi->domain_attr->cq_cnt = 64;
    fi->domain_attr->ep_cnt = FAB_MAX_EP;
    fi->domain_attr->tx_ctx_cnt = FAB_MAX_EP;
    fi->domain_attr->rx_ctx_cnt = FAB_MAX_EP;
    fi->domain_attr->max_ep_tx_ctx = 1;
    fi->domain_attr->max_ep_rx_ctx = 1;
    fi->domain_attr->cntr_cnt = 64;
    fi->domain_attr->mr_iov_limit = 1;
    fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
    fi->domain_attr->mr_cnt = 1 << 16;

    fi->fabric_attr->name = strdup(FAB_NAME);
    fi->fabric_attr->prov_version = FAB_VERSION;
    fi->fabric_attr->api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    if (!fi->domain_attr->name || !fi->fabric_attr->name) {
        fi_freeinfo(fi);
        return NULL;
    }
    return fi;
}

static int fab_getinfo(uint32_t version, const char *node, const char *service,
                       uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
    struct fi_info *msg, *rma;

    *info = NULL;
    if (fab_load_cfg())
        return -FI_EINVAL;
    /* names are exchanged, never resolved from a host and port */
    if (node || service || (flags & FI_SOURCE))
        return -FI_ENODATA;
    msg = fab_info_make(version, hints, 0);
    rma = fab_info_make(version, hints, 1);
    if (msg) {
        msg->next = rma;
        *info = msg;
    } else {
        *info = rma;
    }
    return *info ? 0 : -FI_ENODATA;
}

/* ---- fabric ------------------------------------------------------------------ */

static int fab_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                           struct fid_domain **dom, void *context);

static int fab_fabric_close(struct fid *fid)
{
    free(fab_of(fid, struct fab_fabric, fid.fid));
    return 0;
}

static int fab_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int fab_no_control(struct fid *fid, int command, void *arg)
{
    return -FI_ENOSYS;
}

static int fab_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
                           void **ops, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops fab_fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_fabric_close,
    .bind = fab_no_bind,
    .control = fab_no_control,
    .ops_open = fab_no_ops_open,
};

static int fab_no_pep(struct fid_fabric *f, struct fi_info *i, struct fid_pep **p, void *c)
{
    return -FI_ENOSYS;
}
static int fab_no_wait(struct fid_fabric *f, struct fi_wait_attr *a, struct fid_wait **w)
{
    return -FI_ENOSYS;
}

static struct fi_ops_fabric fab_fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = fab_domain_open,
    .passive_ep = fab_no_pep,
    .eq_open = fab_eq_open,
    .wait_open = fab_no_wait,
    .trywait = fab_trywait,
};

static int fab_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                           void *context)
{
    struct fab_fabric *f;

    if (fab_load_cfg())
        return -FI_EINVAL;
    if (attr && attr->name && strcmp(attr->name, FAB_NAME))
        return -FI_EINVAL;
    if (!(f = calloc(1, sizeof(*f))))
        return -FI_ENOMEM;
    f->fid.fid.fclass = FI_CLASS_FABRIC;
    f->fid.fid.context = context;
    f->fid.fid.ops = &fab_fabric_fi_ops;
    f->fid.ops = &fab_fabric_ops;
    *fabric = &f->fid;
    return 0;
}

/* ---- domain ---------------------------------------------------------------- */

static int fab_domain_close(struct fid *fid)
{
    struct fab_domain *d = fab_of(fid, struct fab_domain, fid.fid);

    if (atomic_load(&d->refs))
        return -FI_EBUSY;
    fab_auto_stop(d);
    fab_wait_stop(d);
    pthread_mutex_destroy(&d->auto_lock);
    pthread_mutex_destroy(&d->wait_lock);
    pthread_mutex_destroy(&d->mr_lock);
    free(d);
    fab_domain_gone();
    return 0;
}

static struct fi_ops fab_domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_domain_close,
    .bind = fab_no_bind,
    .control = fab_no_control,
    .ops_open = fab_no_ops_open,
};

static int fab_no_sep(struct fid_domain *d, struct fi_info *i, struct fid_ep **e, void *c)
{
    return -FI_ENOSYS;
}
static int fab_no_poll(struct fid_domain *d, struct fi_poll_attr *a, struct fid_poll **p)
{
    return -FI_ENOSYS;
}
static int fab_no_stx(struct fid_domain *d, struct fi_tx_attr *a, struct fid_stx **s, void *c)
{
    return -FI_ENOSYS;
}
static int fab_no_srx(struct fid_domain *d, struct fi_rx_attr *a, struct fid_ep **e, void *c)
{
    return -FI_ENOSYS;
}
static int fab_no_coll(struct fid_domain *d, enum fi_collective_op o,
                       struct fi_collective_attr *a, uint64_t f)
{
    return -FI_ENOSYS;
}

static struct fi_ops_domain fab_domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = fab_av_open,
    .cq_open = fab_cq_open,
    .endpoint = fab_ep_open,
    .scalable_ep = fab_no_sep,
    .cntr_open = fab_cntr_open,
    .poll_open = fab_no_poll,
    .stx_ctx = fab_no_stx,
    .srx_ctx = fab_no_srx,
    .query_atomic = fab_query_atomic,
    .query_collective = fab_no_coll,
};

static int fab_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                           struct fid_domain **dom, void *context)
{
    struct fab_domain *d;

    if (info && info->domain_attr && info->domain_attr->name &&
        strcmp(info->domain_attr->name, FAB_NAME))
        return -FI_EINVAL;
    if (!(d = calloc(1, sizeof(*d))))
        return -FI_ENOMEM;
    d->fabric = fab_of(fabric, struct fab_fabric, fid);
    d->threading = info && info->domain_attr ? info->domain_attr->threading :
                   fab_threading_default();
    if (d->threading == FI_THREAD_UNSPEC)
        d->threading = fab_threading_default();
    d->auto_progress = info && info->domain_attr &&
        (info->domain_attr->data_progress == FI_PROGRESS_AUTO ||
         info->domain_attr->control_progress == FI_PROGRESS_AUTO);
    if (fab_domain_admit(d->threading, d->auto_progress)) {
        free(d);
        return -FI_EINVAL;
    }
    if (d->auto_progress && cvia_initialized() && cvia_query_thread() != CVIA_THREAD_MULTIPLE) {
        cvia_error(CORE, "libfabric provider: FI_PROGRESS_AUTO needs corevia at "
                   "CVIA_THREAD_MULTIPLE (the application initialized it at a lower level)");
        fab_domain_gone();
        free(d);
        return -FI_EINVAL;
    }
    pthread_mutex_init(&d->auto_lock, NULL);
    pthread_mutex_init(&d->wait_lock, NULL);
    d->fid.fid.fclass = FI_CLASS_DOMAIN;
    d->fid.fid.context = context;
    d->fid.fid.ops = &fab_domain_fi_ops;
    d->fid.ops = &fab_domain_ops;
    d->fid.mr = &fab_mr_ops;
    pthread_mutex_init(&d->mr_lock, NULL);
    *dom = &d->fid;
    return 0;
}

/* ---- the provider ------------------------------------------------------------ */

static void fab_cleanup(void)
{
}

struct fi_provider fab_prov = {
    .version = FAB_VERSION,
    .fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
    .name = FAB_NAME,
    .getinfo = fab_getinfo,
    .fabric = fab_fabric_open,
    .cleanup = fab_cleanup,
};

FI_EXT_INI
{
    return &fab_prov;
}
