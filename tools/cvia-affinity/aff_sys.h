/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* What cvia-affinity reads from the running system: /proc/stat, a
 * process's stat, io and sockets, TCP sockets through sock_diag netlink
 * (tcp_info bytes_acked / bytes_received), interfaces of a network
 * namespace, and task affinities. */
#ifndef CVIA_AFF_SYS_H
#define CVIA_AFF_SYS_H

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

/* Per-CPU times from /proc/stat, in clock ticks, indexed by CPU number. */
struct aff_cpustat {
    int n;                        /* highest CPU number + 1 */
    unsigned long long *busy;     /* user+nice+system+irq+softirq+steal */
    unsigned long long *idle;     /* idle+iowait */
    unsigned long long *softirq;
    unsigned long long *steal;
};
int  aff_cpustat_read(struct aff_cpustat *s);
void aff_cpustat_free(struct aff_cpustat *s);

struct aff_pidstat {
    char comm[32];
    char state;
    unsigned long long utime, stime;   /* ticks */
    unsigned long long start;          /* starttime, ticks after boot */
    int processor;                     /* PU it last ran on */
};
/* /proc/PID/stat (tid 0) or /proc/PID/task/TID/stat. 0 or -errno. */
int aff_pidstat_read(int pid, int tid, struct aff_pidstat *s);
/* syscr + syscw of /proc/PID/io: read- and write-type system calls. */
int aff_pidio_calls(int pid, unsigned long long *calls);
/* Socket inodes among PID's open files; returns how many (<= cap) or -errno. */
int aff_pid_sockets(int pid, unsigned long *inodes, int cap);
/* Thread ids of PID; returns how many (<= cap) or -errno. */
int aff_pid_tasks(int pid, pid_t *tids, int cap);
/* Inode of PID's network namespace (0 = self). 0 or -errno. */
int aff_pid_netns(int pid, unsigned long *ino);

/* One TCP socket seen through sock_diag. */
struct aff_sock {
    unsigned long inode;
    uint64_t bytes_acked, bytes_received;
    int family;
    unsigned char laddr[16];
};
/* NETLINK_SOCK_DIAG socket in the caller's current network namespace. */
int aff_diag_open(void);
/* Dump every non-listening TCP socket (IPv4 and IPv6). *v malloc'd. */
int aff_diag_dump(int fd, struct aff_sock **v, int *n);

/* Interfaces of a network namespace: addresses, driver. */
struct aff_ifaddr {
    char name[64];
    char driver[32];              /* ethtool driver, "loopback", or "" */
    int  ifindex;
    int  family;
    unsigned char addr[16], mask[16];
};
struct aff_netns {
    unsigned long ino;            /* namespace inode */
    int   diag_fd;                /* sock_diag socket opened inside it */
    int   nif;
    struct aff_ifaddr *ifs;
    char  sysfs[256];             /* a sysfs of that namespace (private mount) */
    int   err;                    /* could not enter it: -errno */
};
/* Enter the namespace of @pid (if not ours), open a diag socket there and
 * read its interfaces, come back. 0 or -errno (ns->err). */
int  aff_netns_open(int pid, struct aff_netns *ns, int want_sysfs);
void aff_netns_close(struct aff_netns *ns);
/* The interface holding local address @a (family, 4 or 16 bytes). */
const struct aff_ifaddr *aff_netns_if_of(const struct aff_netns *ns, int family,
                                         const unsigned char *a);
/* rps_cpus of IF's receive queues, from the namespace's sysfs: the CPUs
 * that do its receive processing; 0 with an empty set when unset. */
int aff_netns_rps(const struct aff_netns *ns, const char *ifname, cpu_set_t *set);

/* Leave the mount namespace we share with the rest of the system so that
 * sysfs of other network namespaces can be mounted privately. */
int aff_private_mounts(void);

#endif
