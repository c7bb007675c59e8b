/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia_inject (CVIA_1.2): a small message put on its way at once, without
 * a request: what a layer sending a stream of small messages (the
 * libfabric provider's eager sends) would otherwise pay per message in
 * cvia_isend and cvia_reap, a request allocated, zeroed, completed,
 * reaped and freed, and its own copy of header and payload into one
 * buffer. Only a provider with an inject operation (shm) takes it. */
#include <errno.h>
#include <stddef.h>
#include <sys/uio.h>

#include "core/core.h"

int cvia_inject(const void *hdr, size_t hlen, const void *buf, size_t len, int dest, int tag)
{
    struct cvia_ctx *c = &cvia__ctx;
    const struct cvia_prov_ops *ops;
    struct iovec iov[2] = { { (void *)hdr, hlen }, { (void *)buf, len } };
    int pi;

    if (!c->initialized)
        return -CVIA_ENOINIT;
    if (dest < 0 || dest >= cvia__npeers(c) || tag < 0 || (!hdr && hlen) || (!buf && len))
        return -EINVAL;
    if (c->peer_lost[dest])
        return cvia__peer_err(c, dest);
    pi = c->peer_prov[dest];
    ops = c->prov[pi].desc->ops;
    if (ops->size < offsetof(struct cvia_prov_ops, inject) + sizeof(ops->inject) || !ops->inject)
        return -EAGAIN;
    return ops->inject(c->prov[pi].ep, dest, CVIA_CTX_USER, tag, iov, 2, hlen + len);
}
