/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Every built-in provider, in order of preference per peer. An explicit
 * list rather than constructors, so static links hold no surprises. */
#include <errno.h>
#include <stddef.h>

#include <corevia/cvia_errno.h>
#include "prov/prov.h"

extern const struct cvia_prov_desc cvia_prov_shm;
extern const struct cvia_prov_desc cvia_prov_tcp;
extern const struct cvia_prov_desc cvia_prov_udp;
extern const struct cvia_prov_desc cvia_prov_eth;
#if CVIA_HAVE_XDP
extern const struct cvia_prov_desc cvia_prov_xdp;
#endif

const struct cvia_prov_desc *const cvia__prov_list[] = {
    &cvia_prov_shm,
    &cvia_prov_tcp,
    &cvia_prov_udp,
    &cvia_prov_eth,
#if CVIA_HAVE_XDP
    &cvia_prov_xdp,   /* built where libxdp and libbpf are */
#endif
    NULL,
};

int cvia__prov_no_op(struct cvia_prov_ep *ep)
{
    (void)ep;
    return -ENOSYS;
}

int cvia__prov_no_cleanup(void)
{
    return 0;
}
