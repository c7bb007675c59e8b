/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aff_sys.h"

/* ---- /proc/stat ------------------------------------------------------------ */

void aff_cpustat_free(struct aff_cpustat *s)
{
    free(s->busy);
    free(s->idle);
    free(s->softirq);
    free(s->steal);
    memset(s, 0, sizeof(*s));
}

int aff_cpustat_read(struct aff_cpustat *s)
{
    char line[1024];
    FILE *f = fopen("/proc/stat", "re");
    int max = -1;

    if (!f)
        return -errno;
    if (!s->busy) {
        long n = sysconf(_SC_NPROCESSORS_CONF);
        s->n = n > 0 ? (int)n : 1;
        if (s->n < CPU_SETSIZE)
            s->n = CPU_SETSIZE;    /* CPU numbers may be sparse */
        s->busy = calloc((size_t)s->n, sizeof(*s->busy));
        s->idle = calloc((size_t)s->n, sizeof(*s->idle));
        s->softirq = calloc((size_t)s->n, sizeof(*s->softirq));
        s->steal = calloc((size_t)s->n, sizeof(*s->steal));
        if (!s->busy || !s->idle || !s->softirq || !s->steal) {
            fclose(f);
            aff_cpustat_free(s);
            return -ENOMEM;
        }
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long long v[10] = { 0 };
        int cpu;
        if (strncmp(line, "cpu", 3) || !isdigit((unsigned char)line[3]))
            continue;
        if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 8 || cpu < 0 || cpu >= s->n)
            continue;
        /* user nice system idle iowait irq softirq steal */
        s->busy[cpu] = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        s->idle[cpu] = v[3] + v[4];
        s->softirq[cpu] = v[6];
        s->steal[cpu] = v[7];
        if (cpu > max)
            max = cpu;
    }
    fclose(f);
    return max < 0 ? -ENOENT : 0;
}

/* ---- /proc/PID ------------------------------------------------------------- */

int aff_pidstat_read(int pid, int tid, struct aff_pidstat *s)
{
    char path[128], buf[2048], *p, *q;
    ssize_t n;
    int fd, field;

    if (tid)
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
    else
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return n < 0 ? -errno : -ESRCH;
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: it ends at the last ')' */
    if (!(p = strchr(buf, '(')) || !(q = strrchr(buf, ')')))
        return -EINVAL;
    memset(s, 0, sizeof(*s));
    snprintf(s->comm, sizeof(s->comm), "%.*s", (int)(q - p - 1), p + 1);
    p = q + 2;
    s->processor = -1;
    for (field = 3; *p && field <= 39; field++) {
        char *end;
        if (field == 3)
            s->state = *p;
        else if (field == 14)
            s->utime = strtoull(p, &end, 10);
        else if (field == 15)
            s->stime = strtoull(p, &end, 10);
        else if (field == 22)
            s->start = strtoull(p, &end, 10);
        else if (field == 39)
            s->processor = atoi(p);
        if (!(p = strchr(p, ' ')))
            break;
        p++;
    }
    return 0;
}

int aff_pidio_calls(int pid, unsigned long long *calls)
{
    char path[64], line[128];
    unsigned long long r = 0, w = 0;
    int got = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/io", pid);
    if (!(f = fopen(path, "re")))
        return -errno;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "syscr: %llu", &r) == 1)
            got |= 1;
        else if (sscanf(line, "syscw: %llu", &w) == 1)
            got |= 2;
    }
    fclose(f);
    if (got != 3)
        return -EACCES;
    *calls = r + w;
    return 0;
}

int aff_pid_sockets(int pid, unsigned long *inodes, int cap)
{
    char path[64], link[300], target[64];
    DIR *d;
    struct dirent *e;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    if (!(d = opendir(path)))
        return -errno;
    while ((e = readdir(d)) && n < cap) {
        ssize_t len;
        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "/proc/%d/fd/%s", pid, e->d_name);
        if ((len = readlink(link, target, sizeof(target) - 1)) <= 0)
            continue;
        target[len] = '\0';
        if (!strncmp(target, "socket:[", 8))
            inodes[n++] = strtoul(target + 8, NULL, 10);
    }
    closedir(d);
    return n;
}

int aff_pid_tasks(int pid, pid_t *tids, int cap)
{
    char path[64];
    DIR *d;
    struct dirent *e;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    if (!(d = opendir(path)))
        return -errno;
    while ((e = readdir(d)) && n < cap)
        if (isdigit((unsigned char)e->d_name[0]))
            tids[n++] = (pid_t)atoi(e->d_name);
    closedir(d);
    return n;
}

int aff_pid_netns(int pid, unsigned long *ino)
{
    char path[64];
    struct stat st;

    if (pid)
        snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
    else
        snprintf(path, sizeof(path), "/proc/self/ns/net");
    if (stat(path, &st) < 0)
        return -errno;
    *ino = (unsigned long)st.st_ino;
    return 0;
}

/* ---- sock_diag -------------------------------------------------------------- */

int aff_diag_open(void)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    return fd < 0 ? -errno : fd;
}

static int diag_family(int fd, int family, struct aff_sock **v, int *n, int *cap)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req;
    struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
    static char buf[65536] __attribute__((aligned(8)));

    memset(&req, 0, sizeof(req));
    req.nlh.nlmsg_len = sizeof(req);
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.r.sdiag_family = (unsigned char)family;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_ext = 1 << (INET_DIAG_INFO - 1);
    req.r.idiag_states = 0xfff & ~(1u << 10);   /* every state but LISTEN */
    if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -errno;
    for (;;) {
        /* MSG_TRUNC: the real length, so a message larger than the buffer
         * is an error rather than a silently cut dump */
        ssize_t len = recv(fd, buf, sizeof(buf), MSG_TRUNC);
        struct nlmsghdr *h;
        if (len < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if ((size_t)len > sizeof(buf))
            return -EMSGSIZE;
        for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
            struct inet_diag_msg *m;
            struct rtattr *a;
            int alen;
            if (h->nlmsg_type == NLMSG_DONE)
                return 0;
            if (h->nlmsg_type == NLMSG_ERROR) {
                struct nlmsgerr *e = NLMSG_DATA(h);
                return e->error ? e->error : -EIO;
            }
            if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
                continue;
            m = NLMSG_DATA(h);
            if (*n == *cap) {
                int nc = *cap ? *cap * 2 : 64;
                struct aff_sock *nv = realloc(*v, (size_t)nc * sizeof(*nv));
                if (!nv)
                    return -ENOMEM;
                *v = nv;
                *cap = nc;
            }
            struct aff_sock *s = &(*v)[*n];
            memset(s, 0, sizeof(*s));
            s->inode = m->idiag_inode;
            s->family = m->idiag_family;
            memcpy(s->laddr, m->id.idiag_src, family == AF_INET ? 4 : 16);
            alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
            for (a = (struct rtattr *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
                struct tcp_info ti;
                size_t have = RTA_PAYLOAD(a);
                if (a->rta_type != INET_DIAG_INFO)
                    continue;
                memset(&ti, 0, sizeof(ti));
                memcpy(&ti, RTA_DATA(a), have < sizeof(ti) ? have : sizeof(ti));
                if (have >= offsetof(struct tcp_info, tcpi_bytes_received) + 8) {
                    s->bytes_acked = ti.tcpi_bytes_acked;
                    s->bytes_received = ti.tcpi_bytes_received;
                }
            }
            if (s->inode)
                (*n)++;
        }
    }
}

int aff_diag_dump(int fd, struct aff_sock **v, int *n)
{
    int cap = 0, rc;

    *v = NULL;
    *n = 0;
    if ((rc = diag_family(fd, AF_INET, v, n, &cap)) == 0)
        rc = diag_family(fd, AF_INET6, v, n, &cap);
    if (rc) {
        free(*v);
        *v = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- network namespaces ------------------------------------------------------- */

static void if_driver(int sock, const char *name, unsigned flags, char *out, size_t cap)
{
    struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
    struct ifreq ifr;

    out[0] = '\0';
    if (flags & IFF_LOOPBACK) {
        snprintf(out, cap, "loopback");
        return;
    }
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    ifr.ifr_data = (char *)&info;
    if (ioctl(sock, SIOCETHTOOL, &ifr) == 0)
        snprintf(out, cap, "%s", info.driver);
}

static int read_ifaddrs(struct aff_netns *ns)
{
    struct ifaddrs *ifa, *i;
    int sock, n = 0;

    if (getifaddrs(&ifa) < 0)
        return -errno;
    for (i = ifa; i; i = i->ifa_next)
        n++;
    free(ns->ifs);
    ns->nif = 0;
    if (!(ns->ifs = calloc((size_t)n + 1, sizeof(*ns->ifs)))) {
        freeifaddrs(ifa);
        return -ENOMEM;
    }
    sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    for (i = ifa; i; i = i->ifa_next) {
        struct aff_ifaddr *o = &ns->ifs[ns->nif];
        int fam = i->ifa_addr ? i->ifa_addr->sa_family : 0;
        if (fam != AF_INET && fam != AF_INET6)
            continue;
        snprintf(o->name, sizeof(o->name), "%s", i->ifa_name);
        o->family = fam;
        o->ifindex = (int)if_nametoindex(i->ifa_name);
        if (fam == AF_INET) {
            memcpy(o->addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
            if (i->ifa_netmask)
                memcpy(o->mask, &((struct sockaddr_in *)i->ifa_netmask)->sin_addr, 4);
        } else {
            memcpy(o->addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
            if (i->ifa_netmask)
                memcpy(o->mask, &((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr, 16);
        }
        if (sock >= 0)
            if_driver(sock, i->ifa_name, i->ifa_flags, o->driver, sizeof(o->driver));
        ns->nif++;
    }
    if (sock >= 0)
        close(sock);
    freeifaddrs(ifa);
    return 0;
}

int aff_private_mounts(void)
{
    if (unshare(CLONE_NEWNS) < 0)
        return -errno;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return -errno;
    /* a scratch tmpfs, seen by no one else, to hold sysfs mounts */
    if (mount("cvia-affinity", "/mnt", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=64k,mode=0700") < 0)
        return -errno;
    return 0;
}

int aff_netns_open(int pid, struct aff_netns *ns, int want_sysfs)
{
    char path[64];
    int self = -1, target = -1, rc = 0;
    unsigned long my_ino = 0;

    memset(ns, 0, sizeof(*ns));
    ns->diag_fd = -1;
    if ((rc = aff_pid_netns(pid, &ns->ino)) || (rc = aff_pid_netns(0, &my_ino)))
        goto out;
    if (ns->ino != my_ino) {
        snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
        if ((self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0 ||
            (target = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            rc = -errno;
            goto out;
        }
        if (setns(target, CLONE_NEWNET) < 0) {
            rc = -errno;
            goto out;
        }
    }
    if ((ns->diag_fd = aff_diag_open()) < 0)
        rc = ns->diag_fd;
    if (!rc)
        rc = read_ifaddrs(ns);
    if (!rc && want_sysfs) {
        /* sysfs shows the network namespace of whoever mounts it */
        snprintf(ns->sysfs, sizeof(ns->sysfs), "/mnt/ns%lu", ns->ino);
        if ((mkdir(ns->sysfs, 0700) < 0 && errno != EEXIST) ||
            mount("sysfs", ns->sysfs, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  NULL) < 0)
            ns->sysfs[0] = '\0';   /* rps_cpus unknown; not fatal */
    }
    if (self >= 0 && setns(self, CLONE_NEWNET) < 0 && !rc)
        rc = -errno;
out:
    if (self >= 0)
        close(self);
    if (target >= 0)
        close(target);
    if (rc && ns->diag_fd >= 0) {
        close(ns->diag_fd);
        ns->diag_fd = -1;
    }
    ns->err = rc;
    return rc;
}

void aff_netns_close(struct aff_netns *ns)
{
    if (ns->diag_fd >= 0)
        close(ns->diag_fd);
    if (ns->sysfs[0])
        umount2(ns->sysfs, MNT_DETACH);
    free(ns->ifs);
    memset(ns, 0, sizeof(*ns));
    ns->diag_fd = -1;
}

const struct aff_ifaddr *aff_netns_if_of(const struct aff_netns *ns, int family,
                                         const unsigned char *a)
{
    const struct aff_ifaddr *best = NULL;
    int best_bits = -1, len = family == AF_INET ? 4 : 16;

    /* an IPv4-mapped IPv6 address is the IPv4 one */
    if (family == AF_INET6 && !memcmp(a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
        a += 12;
        family = AF_INET;
        len = 4;
    }
    for (int i = 0; i < ns->nif; i++) {
        const struct aff_ifaddr *f = &ns->ifs[i];
        int bits = 0, match = 1;
        if (f->family != family)
            continue;
        for (int k = 0; k < len; k++) {
            if ((a[k] & f->mask[k]) != (f->addr[k] & f->mask[k]))
                match = 0;
            bits += __builtin_popcount(f->mask[k]);
        }
        if (!memcmp(a, f->addr, (size_t)len))
            bits += 1000;   /* the exact address wins */
        if (match && bits > best_bits) {
            best = f;
            best_bits = bits;
        }
    }
    return best;
}

int aff_netns_rps(const struct aff_netns *ns, const char *ifname, cpu_set_t *set)
{
    char path[1024], text[1100];
    DIR *d;
    struct dirent *e;

    CPU_ZERO(set);
    if (!ns->sysfs[0])
        return -ENOENT;
    snprintf(path, sizeof(path), "%s/class/net/%s/queues", ns->sysfs, ifname);
    if (!(d = opendir(path)))
        return -errno;
    while ((e = readdir(d))) {
        FILE *f;
        size_t len;
        int bit = 0;
        if (strncmp(e->d_name, "rx-", 3))
            continue;
        snprintf(path, sizeof(path), "%s/class/net/%s/queues/%s/rps_cpus", ns->sysfs, ifname,
                 e->d_name);
        if (!(f = fopen(path, "re")))
            continue;
        if (!fgets(text, sizeof(text), f))
            text[0] = '\0';
        fclose(f);
        /* hex mask, comma-separated 32-bit words, most significant first */
        len = strcspn(text, "\n");
        for (size_t k = len; k-- > 0;) {
            int v;
            if (text[k] == ',')
                continue;
            v = isdigit((unsigned char)text[k]) ? text[k] - '0'
              : isxdigit((unsigned char)text[k]) ? tolower((unsigned char)text[k]) - 'a' + 10
              : 0;
            for (int b = 0; b < 4; b++, bit++)
                if ((v >> b) & 1 && bit < CPU_SETSIZE)
                    CPU_SET(bit, set);
        }
    }
    closedir(d);
    return 0;
}
