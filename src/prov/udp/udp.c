/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* udp provider: the dgram engine over one UDP socket per rank. Datagrams
 * leave in batches by sendmmsg (gathered from the window: header,
 * extension, and the payload where it lies) and arrive in batches by
 * recvmmsg. Don't-fragment is set: a segment never becomes IP fragments;
 * the segment size follows the interface's MTU (see dgram.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "prov/dgram/dgram.h"
#include "util/log.h"

struct udp_cfg {
    char ifname[CVIA_PARAM_STRLEN];
    long port;
};

static const struct cvia_param udp_params[] = {
    { "IF", "", CVIA_PARAM_STRING, offsetof(struct udp_cfg, ifname),
      "Network interface whose IPv4 address peers send to, and whose MTU sizes the "
      "segments (empty: the first interface that is up and not loopback, else loopback).",
      0, 0, NULL },
    { "PORT", "0", CVIA_PARAM_INT, offsetof(struct udp_cfg, port),
      "UDP port to bind (0: any free port).", 0, 65535, NULL },
    { NULL }
};

const struct cvia_param_table cvia__udp_param_table = {
    .component = "udp", .prefix = "UDP_", .params = udp_params,
    .cfg_size = sizeof(struct udp_cfg),
};

struct udp_link {
    struct udp_cfg cfg;
    int    fd;
    int    mtu;
    char   ifname[IF_NAMESIZE];
    struct sockaddr_in *peer;   /* [size] */
    struct mmsghdr *msgs;       /* [batch] */
    struct iovec *iov;          /* [batch] receive buffers */
    struct sockaddr_in *from;   /* [batch] */
    unsigned char *bufs;        /* [batch * bufsz] */
    size_t bufsz;
};

static struct udp_link *ul(struct dg_ep *ep)
{
    return ep->link_priv;
}

/* The interface to publish: its name, IPv4 address and MTU. */
static int udp_pick_if(struct udp_link *u, struct in_addr *ip)
{
    struct ifaddrs *ifa, *i, *pick = NULL;
    struct ifreq ifr;
    int fd;

    if (getifaddrs(&ifa) < 0)
        return -errno;
    for (int pass = 0; pass < 2 && !pick; pass++)
        for (i = ifa; i && !pick; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
                continue;
            if (u->cfg.ifname[0] ? strcmp(u->cfg.ifname, i->ifa_name) != 0
                                 : !!(i->ifa_flags & IFF_LOOPBACK) != pass)
                continue;
            pick = i;
        }
    if (!pick) {
        freeifaddrs(ifa);
        if (u->cfg.ifname[0])
            cvia_error(CONF, "CVIA_UDP_IF=%s: no such interface with an IPv4 address that "
                       "is up", u->cfg.ifname);
        else
            cvia_error(NET, "udp: no interface with an IPv4 address is up");
        return -ENODEV;
    }
    *ip = ((struct sockaddr_in *)(void *)pick->ifa_addr)->sin_addr;
    snprintf(u->ifname, sizeof(u->ifname), "%s", pick->ifa_name);
    freeifaddrs(ifa);
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", u->ifname);
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        cvia_error(NET, "udp: MTU of %s: %s", u->ifname, strerror(e));
        return -e;
    }
    close(fd);
    u->mtu = ifr.ifr_mtu;
    return 0;
}

static void udp_close(struct dg_ep *ep)
{
    struct udp_link *u = ul(ep);

    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    free(u->peer);
    free(u->msgs);
    free(u->iov);
    free(u->from);
    free(u->bufs);
    free(u);
    ep->link_priv = NULL;
}

static void udp_bufsize(int fd, size_t want)
{
    int b = want > (1u << 30) ? (1 << 30) : (int)want;

    /* past net.core.[rw]mem_max where privileged; else what is allowed */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &b, sizeof(b)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &b, sizeof(b)) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
}

static int udp_open(struct dg_ep *ep, char *addr, size_t cap)
{
    struct udp_link *u = calloc(1, sizeof(*u));
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t sl = sizeof(sa);
    struct in_addr ip;
    char ips[INET_ADDRSTRLEN];
    int rc, pmtu = IP_PMTUDISC_DO, n = (int)ep->cfg.batch;

    if (!u)
        return -ENOMEM;
    u->fd = -1;
    ep->link_priv = u;
    if ((rc = cvia__param_load(&cvia__udp_param_table, &u->cfg)) || (rc = udp_pick_if(u, &ip)))
        goto err;
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        rc = -errno;
        cvia_error(NET, "udp: socket: %s", strerror(errno));
        goto err;
    }
    sa.sin_port = htons((uint16_t)u->cfg.port);
    if (bind(u->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(u->fd, (struct sockaddr *)&sa, &sl) < 0) {
        rc = -errno;
        cvia_error(NET, "udp: cannot bind port %ld: %s", u->cfg.port, strerror(errno));
        goto err;
    }
    setsockopt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
    udp_bufsize(u->fd, ep->cfg.rcvbuf);
    u->bufsz = (size_t)u->mtu > 65536 ? 65536 : (size_t)u->mtu;
    u->peer = calloc((size_t)ep->args.size, sizeof(*u->peer));
    u->msgs = calloc((size_t)n, sizeof(*u->msgs));
    u->iov = calloc((size_t)n, sizeof(*u->iov));
    u->from = calloc((size_t)n, sizeof(*u->from));
    u->bufs = malloc((size_t)n * u->bufsz);
    if (!u->peer || !u->msgs || !u->iov || !u->from || !u->bufs) {
        rc = -ENOMEM;
        goto err;
    }
    inet_ntop(AF_INET, &ip, ips, sizeof(ips));
    snprintf(addr, cap, "%s:%u", ips, (unsigned)ntohs(sa.sin_port));
    return 0;
err:
    udp_close(ep);
    return rc;
}

static int udp_attach(struct dg_ep *ep, int peer, const char *addr)
{
    struct udp_link *u = ul(ep);
    char ip[64];
    const char *colon = strrchr(addr, ':');
    struct sockaddr_in *sa = &u->peer[peer];

    if (!colon || (size_t)(colon - addr) >= sizeof(ip))
        goto bad;
    memcpy(ip, addr, (size_t)(colon - addr));
    ip[colon - addr] = '\0';
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1 || !sa->sin_port)
        goto bad;
    return 0;
bad:
    cvia_error(NET, "udp: rank %d published a bad address '%s'", peer, addr);
    return -CVIA_EBOOT;
}

static size_t udp_room(struct dg_ep *ep)
{
    int mtu = ul(ep)->mtu;

    /* IPv4 (20) and UDP (8) headers; a UDP datagram holds 65507 at most */
    return mtu - 28 > 65507 ? 65507 : (size_t)(mtu - 28);
}

static int udp_send(struct dg_ep *ep, struct dg_out *out, int n)
{
    struct udp_link *u = ul(ep);
    int rc;

    if (n > (int)ep->cfg.batch)
        n = (int)ep->cfg.batch;
    for (int i = 0; i < n; i++) {
        struct msghdr *m = &u->msgs[i].msg_hdr;
        memset(m, 0, sizeof(*m));
        m->msg_name = &u->peer[out[i].peer];
        m->msg_namelen = sizeof(struct sockaddr_in);
        m->msg_iov = out[i].iov;
        m->msg_iovlen = (size_t)out[i].iovcnt;
    }
    do
        rc = sendmmsg(u->fd, u->msgs, (unsigned)n, MSG_DONTWAIT);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return 0;
        if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH)
            return 1;   /* as if lost on the way: the first is skipped, retried later */
        return -errno;
    }
    return rc;
}

static int udp_recv(struct dg_ep *ep, struct dg_in *in, int max)
{
    struct udp_link *u = ul(ep);
    int rc;

    for (int i = 0; i < max; i++) {
        struct msghdr *m = &u->msgs[i].msg_hdr;
        u->iov[i].iov_base = u->bufs + (size_t)i * u->bufsz;
        u->iov[i].iov_len = u->bufsz;
        memset(m, 0, sizeof(*m));
        m->msg_name = &u->from[i];
        m->msg_namelen = sizeof(u->from[i]);
        m->msg_iov = &u->iov[i];
        m->msg_iovlen = 1;
    }
    do
        rc = recvmmsg(u->fd, u->msgs, (unsigned)max, MSG_DONTWAIT, NULL);
    while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED ? 0 : -errno;
    for (int i = 0; i < rc; i++) {
        in[i].data = u->iov[i].iov_base;
        /* a truncated datagram is no datagram of ours: its length fails */
        in[i].len = (u->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : u->msgs[i].msg_len;
        memcpy(in[i].from, &u->from[i], sizeof(u->from[i]));
    }
    return rc;
}

static void udp_release(struct dg_ep *ep, struct dg_in *in, int n)
{
    (void)ep, (void)in, (void)n;   /* the buffers are reused by the next recv */
}

static int udp_from_peer(struct dg_ep *ep, int peer, const struct dg_in *in)
{
    const struct sockaddr_in *want = &ul(ep)->peer[peer];
    struct sockaddr_in got;

    memcpy(&got, in->from, sizeof(got));
    return got.sin_port == want->sin_port && got.sin_addr.s_addr == want->sin_addr.s_addr;
}

static void udp_describe(struct dg_ep *ep, char *buf, size_t cap)
{
    struct udp_link *u = ul(ep);

    snprintf(buf, cap, "UDP on %s (MTU %d), sendmmsg/recvmmsg batches of %ld", u->ifname,
             u->mtu, ep->cfg.batch);
}

const struct dg_link_ops cvia__udp_link = {
    .name = "udp",
    .open = udp_open,
    .attach = udp_attach,
    .room = udp_room,
    .send = udp_send,
    .recv = udp_recv,
    .release = udp_release,
    .from_peer = udp_from_peer,
    .describe = udp_describe,
    .close = udp_close,
};

extern const struct cvia_prov_ops cvia__udp_ops;

const struct cvia_prov_desc cvia_prov_udp = {
    .name   = "udp",
    .desc   = "reliable segmented datagrams over UDP between hosts (M-VIA's protocol)",
    .scope  = CVIA_PROV_NET,
    .ops    = &cvia__udp_ops,
    .params = &cvia__udp_param_table,
};
