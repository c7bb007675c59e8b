/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Network interfaces: from hwloc's OS devices with their PCI locality (the
 * NUMA nodes and PUs near the device), and, on a live machine, their
 * interrupt lines (sys/class/net/IF/device/msi_irqs, proc/interrupts) and
 * each line's smp_affinity_list. Every path is read under a root
 * directory ("/" normally) so tests can supply a fake /proc and /sys. */
#ifndef COREVIA_TOPO_TOPO_NIC_H
#define COREVIA_TOPO_TOPO_NIC_H

#include <hwloc.h>
#include <stddef.h>

#define CVIA_NIC_NAMELEN 64

struct cvia_nic_irq {
    unsigned irq;
    char     action[64];        /* name in /proc/interrupts ("mlx4-comp-0"), or "" */
    hwloc_bitmap_t affinity;    /* current smp_affinity_list; empty if unknown */
    hwloc_bitmap_t effective;   /* effective_affinity_list: where the kernel
                                   actually sends it; empty if unknown */
};

struct cvia_nic {
    char name[CVIA_NIC_NAMELEN];    /* interface ("ib0") */
    char pci[32];                   /* PCI function "0000:05:00.0", or "" */
    char kind[32];                  /* PCI class ("InfiniBand"), or "virtual" */
    char siblings[128];             /* other OS devices on that function */
    hwloc_bitmap_t cpuset;          /* PUs local to the device */
    hwloc_bitmap_t nodeset;         /* NUMA nodes local to the device */
    int  local_known;               /* locality narrower than the machine */
    int  package;                   /* package holding all local PUs (logical), or -1 */
    int  numa;                      /* its NUMA node (OS index), or -1 */
    int  from_topology;             /* 1: an hwloc OS device; 0: added by name */
    int  nirqs;
    struct cvia_nic_irq *irqs;
};

struct cvia_nic_list {
    int n;
    struct cvia_nic *v;
};

/* Network interfaces of @t (OS devices of network type), in hwloc order.
 * 0 or -ENOMEM. Free with cvia__nic_list_free. */
int  cvia__nic_list(hwloc_topology_t t, struct cvia_nic_list *l);
void cvia__nic_list_free(struct cvia_nic_list *l);
struct cvia_nic *cvia__nic_find(struct cvia_nic_list *l, const char *name);

/* Add an interface the topology does not record, local to @cpuset (NULL:
 * the whole machine). Returns it, or NULL (no memory). */
struct cvia_nic *cvia__nic_add(hwloc_topology_t t, struct cvia_nic_list *l,
                               const char *name, hwloc_const_cpuset_t cpuset);
/* Set a NIC's locality to @cpuset (recomputes package, NUMA node). */
void cvia__nic_set_locality(hwloc_topology_t t, struct cvia_nic *nic,
                            hwloc_const_cpuset_t cpuset);

/* Append interrupt line @irq to @nic (no duplicates). @affinity may be
 * NULL (unknown). 0 or -ENOMEM. */
int cvia__nic_add_irq(struct cvia_nic *nic, unsigned irq, const char *action,
                      hwloc_const_cpuset_t affinity);

/* Find @nic's interrupt lines under @root: ROOT/sys/class/net/IF/device/
 * msi_irqs (or the parent device's, for virtio), else the device's legacy
 * irq; names and current affinities from ROOT/proc. Returns the number
 * found (0: the interface has no interrupt line, as veth or lo), or -errno. */
int cvia__nic_read_irqs(const char *root, struct cvia_nic *nic);

/* ROOT/proc/irq/N/smp_affinity_list: read into @set / write @set.
 * 0 or -errno (-EIO from the kernel: the line cannot be moved). */
int cvia__irq_affinity_read(const char *root, unsigned irq, hwloc_bitmap_t set);
/* ROOT/proc/irq/N/effective_affinity_list (Linux 4.15+; on x86 a moved
 * MSI follows at its next interrupt). 0 or -errno. */
int cvia__irq_effective_read(const char *root, unsigned irq, hwloc_bitmap_t set);
int cvia__irq_affinity_write(const char *root, unsigned irq, hwloc_const_bitmap_t set);

/* The driver-given action name of @irq in ROOT/proc/interrupts ("" if
 * none). 0 or -errno. */
int cvia__irq_action(const char *root, unsigned irq, char *buf, size_t cap);

#endif
