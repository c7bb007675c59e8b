/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* What the eth link shares with the xdp link, which moves the same frames
 * (eth's EtherType, the dgram datagram at offset 0 of the payload) through
 * an AF_XDP socket, and falls back to eth where it cannot. */
#ifndef COREVIA_PROV_ETH_H
#define COREVIA_PROV_ETH_H

#include <net/if.h>
#include <stddef.h>

struct dg_link_ops;

/* The interface and EtherType as CVIA_ETH_IF and CVIA_ETH_TYPE choose
 * them (logs why not): 0, or a negative error. */
struct eth_iface {
    char ifname[IF_NAMESIZE];
    int  ifindex;
    int  mtu;
    unsigned char mac[6];
    long ethertype;
};
int cvia__eth_iface(struct eth_iface *out);

extern const struct dg_link_ops cvia__eth_link;

#endif
