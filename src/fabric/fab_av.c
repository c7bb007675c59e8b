/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Address vector: the names from fi_getname() (rank, endpoint id, job) as
 * fi_addr_t. Both types are one table; an fi_addr_t is the index of the
 * insertion, which FI_AV_TABLE requires and FI_AV_MAP allows. A name of
 * another corevia job (another job id) is refused: corevia reaches only
 * the ranks of its own job, and single copy is only ever done between
 * them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/fab.h"
#include "util/log.h"

static int fab_name_check(const struct fab_name *n)
{
    int32_t size;
    uint64_t job;

    if (n->magic != FAB_NAME_MAGIC || (n->version != 1 && n->version != 2))
        return -FI_EINVAL;
    if (n->version == 2)
        return 0;   /* checked by cvia_connect */
    if (fab_job(NULL, &size, &job) || n->job != job || n->rank < 0 || n->rank >= size)
        return -FI_EADDRNOTAVAIL;
    return 0;
}

/* Keep a launcher-free name at fi_addr_t @k for fi_av_lookup (lock held). */
static int fab_av_keep_name(struct fab_av *av, size_t k, const struct fab_name *name)
{
    if (k >= av->names_cap) {
        size_t cap = av->names_cap ? av->names_cap : 16;
        while (cap <= k)
            cap *= 2;
        struct fab_name_dyn *nn = realloc(av->names, cap * sizeof(*nn));
        if (!nn)
            return -FI_ENOMEM;
        memset(nn + av->names_cap, 0, (cap - av->names_cap) * sizeof(*nn));
        av->names = nn;
        av->names_cap = cap;
    }
    memcpy(&av->names[k], name, sizeof(av->names[k]));
    return 0;
}

static int fab_av_insert(struct fid_av *fav, const void *addr, size_t count,
                         fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    struct fab_av *av = fab_of(fav, struct fab_av, fid);
    const struct fab_name *names = addr;
    int done = 0;

    if (flags)
        return -FI_EBADFLAGS;
    if (count && !addr)
        return -FI_EINVAL;
    pthread_mutex_lock(&av->lock);
    size_t n0 = atomic_load(&av->n);
    if (n0 + count > av->cap) {
        size_t cap = av->cap ? av->cap : 64;
        while (cap < n0 + count)
            cap *= 2;
        fab_av_entry_t *e = malloc((cap + 1) * sizeof(*e)), *old = atomic_load(&av->e);
        if (!e) {
            pthread_mutex_unlock(&av->lock);
            return -FI_ENOMEM;
        }
        /* slot 0 links the retired tables; entries start at 1 */
        for (size_t i = 0; i < n0; i++)
            atomic_init(&e[i + 1], atomic_load_explicit(&old[i + 1], memory_order_relaxed));
        if (old) {
            memcpy((void *)old, &av->old, sizeof(void *));
            av->old = (void *)old;
        }
        atomic_store_explicit(&av->e, e, memory_order_release);
        av->cap = cap;
    }
    fab_av_entry_t *e = atomic_load(&av->e);
    for (size_t i = 0; i < count; i++) {
        struct fab_name n;

        memcpy(&n, &names[i], sizeof(n));
        if (fab_name_check(&n)) {
            if (fi_addr)
                fi_addr[i] = FI_ADDR_NOTAVAIL;
            continue;
        }
        if (n.version == 2) {   /* launcher-free: the core's peer index */
            struct fab_name_dyn d;
            int peer, rc;
            memcpy(&d, &names[i], sizeof(d));
            rc = d.len <= sizeof(d.addr) ? cvia_connect(d.addr, d.len, &peer) : -EINVAL;
            if (rc) {
                cvia_error(CORE, "fi_av_insert: name %zu refused: %s", i, cvia_strerror(rc));
                if (fi_addr)
                    fi_addr[i] = FI_ADDR_NOTAVAIL;
                continue;
            }
            n.rank = peer;
        }
        size_t k = atomic_load_explicit(&av->n, memory_order_relaxed);
        if (n.version == 2 && fab_av_keep_name(av, k, &names[i])) {
            if (fi_addr)
                fi_addr[i] = FI_ADDR_NOTAVAIL;   /* no memory: not inserted */
            continue;
        }
        atomic_store_explicit(&e[k + 1], (uint64_t)(uint32_t)n.rank << 16 | n.epid,
                              memory_order_relaxed);
        if (fi_addr)
            fi_addr[i] = k;
        atomic_store_explicit(&av->n, k + 1, memory_order_release);
        done++;
    }
    pthread_mutex_unlock(&av->lock);
    return done;
}

static int fab_av_insertsvc(struct fid_av *av, const char *node, const char *service,
                            fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    return -FI_ENOSYS;   /* corevia names are not host:port pairs */
}

static int fab_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
                            const char *service, size_t svccnt, fi_addr_t *fi_addr,
                            uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static int fab_av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
    struct fab_av *av = fab_of(fav, struct fab_av, fid);
    int rc = 0;

    pthread_mutex_lock(&av->lock);
    for (size_t i = 0; i < count; i++) {
        if (fi_addr[i] >= atomic_load(&av->n))
            rc = -FI_EINVAL;
        else
            atomic_store(&atomic_load(&av->e)[fi_addr[i] + 1], FAB_AV_GONE);
    }
    pthread_mutex_unlock(&av->lock);
    return rc;
}

static int fab_av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
    struct fab_av *av = fab_of(fav, struct fab_av, fid);
    struct fab_name n = { FAB_NAME_MAGIC, 1, 0, 0, 0, 0, { 0 } };
    int32_t rank;
    uint16_t epid;

    if (cvia_initialized() && cvia_addr(NULL, &(size_t){ 0 }) != -EOPNOTSUPP) {
        /* launcher-free: the name as it was inserted */
        int rc = -FI_EINVAL;
        pthread_mutex_lock(&av->lock);
        if (fi_addr < atomic_load(&av->n) && fi_addr < av->names_cap &&
            av->names[fi_addr].magic == FAB_NAME_MAGIC &&
            atomic_load(&atomic_load(&av->e)[fi_addr + 1]) != FAB_AV_GONE) {
            memcpy(addr, &av->names[fi_addr], *addrlen < sizeof(struct fab_name_dyn) ?
                   *addrlen : sizeof(struct fab_name_dyn));
            rc = 0;
        }
        pthread_mutex_unlock(&av->lock);
        *addrlen = sizeof(struct fab_name_dyn);
        return rc;
    }
    if (fab_job(NULL, NULL, &n.job))
        return -FI_EOPBADSTATE;
    if (fab_av_resolve(av, fi_addr, &rank, &epid))
        return -FI_EINVAL;
    n.rank = rank;
    n.epid = epid;
    memcpy(addr, &n, *addrlen < sizeof(n) ? *addrlen : sizeof(n));
    *addrlen = sizeof(n);
    return 0;
}

static const char *fab_av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
    struct fab_name n;
    char tmp[96];
    int k;

    memcpy(&n, addr, sizeof(n));
    if (n.version == 2) {   /* the address is opaque: show its pid */
        struct fab_name_dyn d;
        int32_t pid = 0;
        memcpy(&d, addr, sizeof(d));
        if (d.len >= 8)
            memcpy(&pid, d.addr + 4, sizeof(pid));
        k = snprintf(tmp, sizeof(tmp), "corevia://local/pid%d/%u", (int)pid, (unsigned)n.epid);
    } else {
        k = snprintf(tmp, sizeof(tmp), "corevia://%016llx/%d/%u", (unsigned long long)n.job,
                     (int)n.rank, (unsigned)n.epid);
    }
    if (*len) {
        size_t c = (size_t)k + 1 < *len ? (size_t)k + 1 : *len;
        memcpy(buf, tmp, c - 1);
        buf[c - 1] = '\0';
    }
    *len = (size_t)k + 1;
    return buf;
}

static int fab_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
                      struct fid_av_set **av_set, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops_av fab_av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = fab_av_insert,
    .insertsvc = fab_av_insertsvc,
    .insertsym = fab_av_insertsym,
    .remove = fab_av_remove,
    .lookup = fab_av_lookup,
    .straddr = fab_av_straddr,
    .av_set = fab_av_set,
};

static int fab_av_close(struct fid *fid)
{
    struct fab_av *av = fab_of(fid, struct fab_av, fid.fid);

    if (atomic_load(&av->refs))
        return -FI_EBUSY;
    atomic_fetch_sub(&av->dom->refs, 1);
    pthread_mutex_destroy(&av->lock);
    free((void *)atomic_load(&av->e));
    free(av->names);
    while (av->old) {
        void *next;
        memcpy(&next, av->old, sizeof(void *));
        free(av->old);
        av->old = next;
    }
    if (av->core_held)
        fab_core_release();
    free(av);
    return 0;
}

static int fab_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;   /* no event queue: inserts complete at once */
}

static int fab_av_control(struct fid *fid, int command, void *arg)
{
    return -FI_ENOSYS;
}

static int fab_av_ops_open(struct fid *fid, const char *name, uint64_t flags,
                           void **ops, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops fab_av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fab_av_close,
    .bind = fab_av_bind,
    .control = fab_av_control,
    .ops_open = fab_av_ops_open,
};

int fab_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
                struct fid_av **fav, void *context)
{
    struct fab_domain *dom = fab_of(domain, struct fab_domain, fid);
    struct fab_av *av;
    int rc;

    if (attr) {
        if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
            return -FI_EINVAL;
        if (attr->name || attr->rx_ctx_bits || (attr->flags & ~(uint64_t)0))
            return -FI_ENOSYS;   /* no shared AVs, no scalable endpoints, no events */
    }
    /* names carry the job's id: the launcher must be reached to check them;
     * without one (a job of one) inserts connect: corevia must be up */
    int hold = fab_cfg.wireup == FAB_WIREUP_OPEN || fab_job_of_one();
    if ((rc = hold ? fab_core_acquire() : fab_job(NULL, NULL, NULL)))
        return fab_errno(rc);
    if (!(av = calloc(1, sizeof(*av)))) {
        if (hold)
            fab_core_release();
        return -FI_ENOMEM;
    }
    av->core_held = hold;
    av->dom = dom;
    av->type = attr && attr->type != FI_AV_UNSPEC ? attr->type : FI_AV_MAP;
    pthread_mutex_init(&av->lock, NULL);
    av->fid.fid.fclass = FI_CLASS_AV;
    av->fid.fid.context = context;
    av->fid.fid.ops = &fab_av_fi_ops;
    av->fid.ops = &fab_av_ops;
    atomic_fetch_add(&dom->refs, 1);
    *fav = &av->fid;
    return 0;
}

int fab_av_resolve(struct fab_av *av, fi_addr_t addr, int32_t *rank, uint16_t *epid)
{
    uint64_t v = fab_av_entry(av, addr);

    if (v == FAB_AV_GONE)
        return -FI_EINVAL;
    *rank = (int32_t)(v >> 16);
    *epid = (uint16_t)v;
    return 0;
}

fi_addr_t fab_av_reverse(struct fab_av *av, int32_t rank, uint16_t epid)
{
    uint64_t want = (uint64_t)(uint32_t)rank << 16 | epid;
    size_t n;
    fab_av_entry_t *e;

    if (!av)
        return FI_ADDR_NOTAVAIL;
    n = atomic_load_explicit(&av->n, memory_order_acquire);
    e = atomic_load_explicit(&av->e, memory_order_acquire);
    /* MPI inserts every rank in rank order: try the rank's own index first */
    if ((size_t)rank < n && atomic_load_explicit(&e[rank + 1], memory_order_relaxed) == want)
        return (fi_addr_t)rank;
    for (size_t i = 0; i < n; i++)
        if (atomic_load_explicit(&e[i + 1], memory_order_relaxed) == want)
            return i;
    return FI_ADDR_NOTAVAIL;
}
