/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* shm provider: descriptor, parameters, wire-up and teardown. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "boot/boot.h"
#include "prov/shm/shm.h"
#include "util/log.h"
#include "util/param.h"

static const struct cvia_param shm_params[] = {
    { "SLOTS", "64", CVIA_PARAM_INT, offsetof(struct shm_cfg, nslots),
      "Slots in each per-pair ring (a power of two); a message of up to "
      "SLOTS x (SLOT_SIZE - 32) bytes is written without waiting for the receiver.",
      2, 65536, NULL },
    { "SLOT_SIZE", "16k", CVIA_PARAM_SIZE, offsetof(struct shm_cfg, slot_size),
      "Bytes per ring slot, a 32-byte header included (a multiple of 64); "
      "larger messages are pipelined through consecutive slots.",
      128, 16 << 20, NULL },
    { NULL }
};

const struct cvia_param_table cvia__shm_param_table = {
    .component = "shm", .prefix = "SHM_", .params = shm_params,
    .cfg_size = sizeof(struct shm_cfg),
};

static int shm_open_ep(const struct cvia_prov_args *args, struct cvia_prov_ep **ep_p)
{
    struct cvia_prov_ep *ep;
    char key[32];
    int rc;

    ep = calloc(1, sizeof(*ep));
    if (!ep)
        return -ENOMEM;
    ep->args = *args;
    rc = cvia__param_load(&cvia__shm_param_table, &ep->cfg);
    if (rc)
        goto err_free;
    if (ep->cfg.nslots & (ep->cfg.nslots - 1)) {
        cvia_error(CONF, "CVIA_SHM_SLOTS: invalid value '%ld' (expected a power of two)",
                   ep->cfg.nslots);
        rc = -CVIA_ECONFIG;
        goto err_free;
    }
    if (ep->cfg.slot_size % SHM_CACHELINE) {
        cvia_error(CONF, "CVIA_SHM_SLOT_SIZE: invalid value '%zu' (expected a "
                   "multiple of %d)", ep->cfg.slot_size, SHM_CACHELINE);
        rc = -CVIA_ECONFIG;
        goto err_free;
    }
    ep->nslots = (uint32_t)ep->cfg.nslots;
    ep->slot_size = (uint32_t)ep->cfg.slot_size;
    {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        ep->ring_bytes = ((size_t)ep->nslots * ep->slot_size + page - 1) / page * page;
    }
    ep->seg_bytes = SHM_HDR_BYTES + (size_t)args->size * ep->ring_bytes;
    ep->peers = calloc((size_t)args->size, sizeof(*ep->peers));
    if (!ep->peers) {
        rc = -ENOMEM;
        goto err_free;
    }
    for (int p = 0; p < args->size; p++)
        ep->peers[p].pidfd = -1;

    rc = shm_seg_create(ep);
    if (rc)
        goto err_free_peers;
    snprintf(key, sizeof(key), "shm.%d", args->rank);
    rc = cvia__boot_put(args->boot, key, ep->name);
    if (rc)
        goto err_seg;
    *ep_p = ep;
    return 0;

err_seg:
    shm_seg_unlink(ep);
    shm_seg_detach_all(ep);
err_free_peers:
    free(ep->peers);
err_free:
    free(ep);
    return rc;
}

static int shm_connect(struct cvia_prov_ep *ep)
{
    char key[32], name[SHM_NAME_MAX];
    int rc;

    for (int p = 0; p < ep->args.size; p++) {
        if (p == ep->args.rank) {
            rc = shm_seg_attach(ep, p, ep->name);
        } else {
            snprintf(key, sizeof(key), "shm.%d", p);
            rc = cvia__boot_get(ep->args.boot, key, name, sizeof(name));
            if (rc) {
                cvia_error(SHM, "no segment name published by rank %d: %s", p,
                           cvia_strerror(rc));
                return rc == -ENOENT ? -CVIA_EBOOT : rc;
            }
            rc = shm_seg_attach(ep, p, name);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int shm_ready(struct cvia_prov_ep *ep)
{
    /* every peer has mapped my segment: the name is no longer needed, and
     * from now on nothing is left in /dev/shm whatever happens to us */
    shm_seg_unlink(ep);
    return 0;
}

static int shm_close(struct cvia_prov_ep *ep, int clean)
{
    if (!ep)
        return 0;
    if (clean && ep->seg)
        atomic_store_explicit(&ep->seg->finalized, 1, memory_order_release);
    shm_seg_unlink(ep);
    shm_seg_detach_all(ep);
    free(ep->peers);
    free(ep);
    return 0;
}

static int shm_reachable(struct cvia_prov_ep *ep, int peer)
{
    /* all ranks of a cvia-run job share the node */
    return peer >= 0 && peer < ep->args.size;
}

static void shm_describe(char *buf, size_t cap)
{
    struct shm_cfg cfg;
    char slot[32];

    if (cvia__param_load(&cvia__shm_param_table, &cfg)) {
        snprintf(buf, cap, "misconfigured (see the error above)");
        return;
    }
    cvia__param_format(&shm_params[1], &cfg.slot_size, slot, sizeof(slot));
    snprintf(buf, cap, "available: per-pair rings of %ld slots x %s in /dev/shm, "
             "two-copy eager and pipelined", cfg.nslots, slot);
}

static int shm_cleanup(void)
{
    return shm_seg_cleanup_stale();
}

static const struct cvia_prov_ops shm_ops = {
    .size        = sizeof(struct cvia_prov_ops),
    .open        = shm_open_ep,
    .connect     = shm_connect,
    .ready       = shm_ready,
    .close       = shm_close,
    .reachable   = shm_reachable,
    .send        = shm_send,
    .progress    = shm_progress,
    .check_peers = shm_check_peers,
    .peer_gone   = shm_peer_gone,
    .describe    = shm_describe,
    .cleanup     = shm_cleanup,
};

const struct cvia_prov_desc cvia_prov_shm = {
    .name   = "shm",
    .desc   = "intra-node shared-memory rings",
    .ops    = &shm_ops,
    .params = &cvia__shm_param_table,
};
