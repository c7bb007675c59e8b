/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The namespaces analyze measures in. They are anonymous: each is held by
 * a "keeper" child that dies with us (PR_SET_PDEATHSIG), so whatever ends
 * cvia-affinity (exit, signal, SIGKILL) they and their veth pair vanish;
 * nothing is named in /run/netns and nothing outside them is touched. */
#ifndef CVIA_AFF_NETNS_H
#define CVIA_AFF_NETNS_H

#include <stddef.h>
#include <sys/types.h>

enum aff_lab_kind { AFF_LAB_LOOPBACK, AFF_LAB_VETH };

struct aff_lab {
    enum aff_lab_kind kind;
    pid_t keeper_s, keeper_r;  /* sender / receiver namespace keepers (same for lo) */
    char  rdev[16];            /* receiving interface in the receiver namespace */
    char  raddr[64];           /* address the sender connects to */
    int   mtu;
};

/* Create the namespaces (veth: two joined by a veth pair with @mtu, and
 * 198.18.0.1/.2, the benchmarking range of RFC 2544; loopback: one with lo
 * up). 0, or -1 with a reason in err (nothing left behind). */
int  aff_lab_up(struct aff_lab *l, enum aff_lab_kind kind, int mtu, char *err, size_t cap);
void aff_lab_down(struct aff_lab *l);
/* Steer the receiving interface's receive processing to PU @pu with
 * rps_cpus (-1: clear): this plays the part of a NIC's interrupt core.
 * 0 or -errno. */
int  aff_lab_rps(struct aff_lab *l, int pu);
/* In a child: enter the namespace of keeper @keeper. 0 or -errno. */
int  aff_lab_enter(pid_t keeper);

#endif
