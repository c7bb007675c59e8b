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
#include <netinet/udp.h>
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
    int  gso;
    int  gro;
    int  connect;
    int  wait;
};

static const struct cvia_param udp_params[] = {
    { "IF", "", CVIA_PARAM_STRING, offsetof(struct udp_cfg, ifname),
      "Network interface whose IPv4 address peers send to, and whose MTU sizes the "
      "segments (empty: the first interface that is up and not loopback, else loopback).",
      0, 0, NULL },
    { "PORT", "0", CVIA_PARAM_INT, offsetof(struct udp_cfg, port),
      "UDP port to bind (0: any free port).", 0, 65535, NULL },
    { "GSO", "yes", CVIA_PARAM_BOOL, offsetof(struct udp_cfg, gso),
      "Send runs of full segments to one peer as one UDP_SEGMENT (GSO) buffer, gathered "
      "from the window: one trip through the stack for up to 64 datagrams.", 0, 0, NULL },
    { "GRO", "yes", CVIA_PARAM_BOOL, offsetof(struct udp_cfg, gro),
      "Accept coalesced datagrams (UDP_GRO) and split them here: one receive for a run "
      "of segments.", 0, 0, NULL },
    { "CONNECT", "yes", CVIA_PARAM_BOOL, offsetof(struct udp_cfg, connect),
      "With one peer on another host (in a job started by a launcher), connect the socket "
      "to it: the kernel then finds the route once instead of at every send, and hands "
      "arriving datagrams to the socket without a route lookup of their own (early "
      "demultiplexing). A job with more remote peers, or without a launcher, keeps one "
      "unconnected socket for all.", 0, 0, NULL },
    { "WAIT", "no", CVIA_PARAM_BOOL, offsetof(struct udp_cfg, wait),
      "Where a waiting rank would yield its core (the core found shared, every peer on "
      "another host), receive in the kernel instead, blocking until a datagram comes or "
      "the next scheduler tick: one system call where the yield and the receive make two. "
      "Measured slower on one core (the wake-up costs more than the call it saves; "
      "cvia-udp(7)); no: yield, then receive without blocking.", 0, 0, NULL },
    { NULL }
};

const struct cvia_param_table cvia__udp_param_table = {
    .component = "udp", .prefix = "UDP_", .params = udp_params,
    .cfg_size = sizeof(struct udp_cfg),
};

#define UDP_CMSG  64     /* control room per message: UDP_SEGMENT or UDP_GRO */
#define UDP_GSO_MAX 64   /* datagrams per GSO buffer (the kernel's UDP_MAX_SEGMENTS) */

struct udp_link {
    struct udp_cfg cfg;
    int    fd;
    int    mtu;
    char   ifname[IF_NAMESIZE];
    struct sockaddr_in self;    /* what peers send to: the interface's address, our port */
    struct sockaddr_in *peer;   /* [size] */
    int    connected;           /* the socket is connected to the only remote peer */
    int    rx_dirty;            /* receive headers the last recvmmsg wrote */
    struct mmsghdr *msgs;       /* [batch] */
    struct iovec *giov;         /* [3 * batch] a GSO run's gathered pieces */
    int   *gcount;              /* [batch] datagrams in each message sent */
    unsigned char *cmsg;        /* [batch * UDP_CMSG] */
    struct iovec *iov;          /* [batch] receive buffers */
    struct mmsghdr *rmsgs;      /* [batch] the receive vector */
    unsigned char *rcmsg;       /* [batch * UDP_CMSG] */
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
    free(u->giov);
    free(u->gcount);
    free(u->cmsg);
    free(u->iov);
    free(u->rmsgs);
    free(u->rcmsg);
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
    size_t pad, stride;

    if (!u)
        return -ENOMEM;
    u->fd = -1;
    ep->link_priv = u;
    if ((rc = cvia__param_load(&cvia__udp_param_table, &u->cfg)) || (rc = udp_pick_if(u, &ip)))
        goto err;
    /* blocking only where dg_wait asks (MSG_WAITFORONE): every other call
     * passes MSG_DONTWAIT */
    u->fd = socket(AF_INET, SOCK_DGRAM | (u->cfg.wait ? 0 : SOCK_NONBLOCK) | SOCK_CLOEXEC, 0);
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
    /* other jobs' datagrams and other ranks' do not wake this one: the
     * filter sees the UDP header first */
    if ((rc = cvia__dg_attach_filter(u->fd, (uint32_t)sizeof(struct udphdr), 0, ep->keys.job,
                                     ep->args.rank))) {
        cvia_error(NET, "udp: attaching the socket filter: %s", strerror(-rc));
        goto err;
    }
    udp_bufsize(u->fd, ep->cfg.rcvbuf);
    if (u->cfg.wait) {
        /* a blocking receive ends at the next tick at most (the kernel
         * rounds up to one jiffy): a timer due meanwhile is that late */
        struct timeval tv = { 0, 1 };
        if (setsockopt(u->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0)
            ep->rx_wait = 1;
    }
    if (u->cfg.gro) {
        int one = 1;
        if (setsockopt(u->fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) < 0)
            u->cfg.gro = 0;
    }
    /* a coalesced (GRO) datagram is up to 64 KiB */
    u->bufsz = u->cfg.gro || u->mtu > 65536 ? 65536 : (size_t)u->mtu;
    u->peer = calloc((size_t)ep->args.size, sizeof(*u->peer));
    u->msgs = calloc((size_t)n, sizeof(*u->msgs));
    u->giov = calloc(3 * (size_t)n, sizeof(*u->giov));
    u->gcount = calloc((size_t)n, sizeof(*u->gcount));
    u->cmsg = calloc((size_t)n, UDP_CMSG);
    u->iov = calloc((size_t)n, sizeof(*u->iov));
    u->rmsgs = calloc((size_t)n, sizeof(*u->rmsgs));
    u->rcmsg = calloc((size_t)n, UDP_CMSG);
    u->from = calloc((size_t)n, sizeof(*u->from));
    stride = (u->bufsz + 63) / 64 * 64;
    u->bufs = malloc((size_t)n * stride + 64);
    if (!u->peer || !u->msgs || !u->giov || !u->gcount || !u->cmsg || !u->iov || !u->rmsgs ||
        !u->rcmsg || !u->from || !u->bufs) {
        rc = -ENOMEM;
        goto err;
    }
    /* every buffer 8 bytes before a cache line: the MAC's NH, over a
     * datagram from its byte 8 on, then loads whole lines (at 1432-byte
     * segments every datagram of a GRO buffer, 1472 = 23 x 64 bytes):
     * 20 % off NH on Zen 4 (BENCHMARKS.md) */
    pad = (64 - ((uintptr_t)u->bufs + DG_MAC_SKIP) % 64) % 64;
    for (int i = 0; i < n; i++) {
        u->iov[i].iov_base = u->bufs + pad + (size_t)i * stride;
        u->iov[i].iov_len = u->bufsz;
    }
    u->rx_dirty = n;   /* the first receive sets every header */
    ep->rx_call = 1;   /* every receive is a recvmmsg: CVIA_DGRAM_RX_GAP */
    inet_ntop(AF_INET, &ip, ips, sizeof(ips));
    snprintf(addr, cap, "%s:%u", ips, (unsigned)ntohs(sa.sin_port));
    u->self.sin_family = AF_INET;
    u->self.sin_addr = ip;
    u->self.sin_port = sa.sin_port;
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
    /* the only remote peer of a launcher's job: one route lookup for all
     * sends, early demultiplexing of what arrives; nothing else may come
     * (udp_from_peer takes only its address anyway) */
    if (u->cfg.connect && !ep->dyn && ep->nremote == 1) {
        if (connect(u->fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
            u->connected = 1;
        else
            cvia_warn(NET, "udp: connecting the socket to rank %d (%s): %s; sending "
                      "unconnected", peer, addr, strerror(errno));
    }
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

static size_t out_len(const struct dg_out *o)
{
    size_t n = 0;

    for (int i = 0; i < o->iovcnt; i++)
        n += o->iov[i].iov_len;
    return n;
}

/* Group out[] into messages: a run of datagrams to one peer, all of the
 * first one's length but the last (which may be shorter), goes as one GSO
 * buffer; the rest one message each. Returns the number of messages. */
static int udp_group(struct dg_ep *ep, struct udp_link *u, struct dg_out *out, int n)
{
    int m = 0, g = 0;

    for (int i = 0; i < n && m < (int)ep->cfg.batch;) {
        struct msghdr *mh = &u->msgs[m].msg_hdr;
        size_t gso = out_len(&out[i]), total = gso, last = gso;
        int j = i + 1;

        if (u->cfg.gso)
            while (j < n && j - i < UDP_GSO_MAX && out[j].peer == out[i].peer && last == gso) {
                size_t l = out_len(&out[j]);
                if (l > gso || total + l > 65000)
                    break;
                total += l;
                last = l;
                j++;
            }
        memset(mh, 0, sizeof(*mh));
        if (!u->connected) {   /* a connected socket's route is cached: no address */
            mh->msg_name = &u->peer[out[i].peer];
            mh->msg_namelen = sizeof(struct sockaddr_in);
        }
        mh->msg_iov = &u->giov[g];
        for (int k = i; k < j; k++)
            for (int v = 0; v < out[k].iovcnt; v++)
                u->giov[g++] = out[k].iov[v];
        mh->msg_iovlen = (size_t)(&u->giov[g] - mh->msg_iov);
        if (j - i > 1) {
            struct cmsghdr *cm;
            uint16_t seg = (uint16_t)gso;
            mh->msg_control = u->cmsg + (size_t)m * UDP_CMSG;
            mh->msg_controllen = CMSG_SPACE(sizeof(seg));
            cm = CMSG_FIRSTHDR(mh);
            cm->cmsg_level = IPPROTO_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof(seg));
            memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
        }
        u->gcount[m++] = j - i;
        i = j;
    }
    return m;
}

static int udp_send(struct dg_ep *ep, struct dg_out *out, int n)
{
    struct udp_link *u = ul(ep);
    int rc, m, sent = 0;

    if (n > (int)ep->cfg.batch)
        n = (int)ep->cfg.batch;
    m = udp_group(ep, u, out, n);
    do
        rc = sendmmsg(u->fd, u->msgs, (unsigned)m, MSG_DONTWAIT);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return 0;
        if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH)
            return u->gcount[0];   /* as if lost on the way: sent again later */
        if (errno == EIO && u->cfg.gso) {
            /* the device cannot take GSO buffers: one datagram at a time */
            cvia_warn(NET, "udp: no UDP GSO on %s; sending datagrams one by one", u->ifname);
            u->cfg.gso = 0;
            return 0;
        }
        return -errno;
    }
    for (int i = 0; i < rc; i++)
        sent += u->gcount[i];
    return sent;
}

static int udp_recv(struct dg_ep *ep, struct dg_in *in, int max)
{
    struct udp_link *u = ul(ep);
    int rc, n = 0, was = u->rx_dirty;

    /* the buffers were set at open: only what the kernel changes is reset,
     * in the headers the last calls filled (a poll that finds nothing must
     * stay cheap) */
    for (int i = 0; i < max && i < was; i++) {
        struct msghdr *m = &u->rmsgs[i].msg_hdr;
        m->msg_name = &u->from[i];
        m->msg_namelen = sizeof(u->from[i]);
        m->msg_iov = &u->iov[i];
        m->msg_iovlen = 1;
        m->msg_control = u->cfg.gro ? u->rcmsg + (size_t)i * UDP_CMSG : NULL;
        m->msg_controllen = u->cfg.gro ? UDP_CMSG : 0;
        m->msg_flags = 0;
    }
    /* dg_wait: the first datagram may be waited for, the rest not */
    rc = recvmmsg(u->fd, u->rmsgs, (unsigned)max, ep->rx_block ? MSG_WAITFORONE : MSG_DONTWAIT,
                  NULL);
    if (rc < 0 && errno == EINTR)   /* a signal ends a wait as input would */
        rc = recvmmsg(u->fd, u->rmsgs, (unsigned)max, MSG_DONTWAIT, NULL);
    ep->rx_block = 0;
    ep->rx_drained = rc < max;
    u->rx_dirty = was > max ? was : rc > 0 ? rc : 0;
    if (rc < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED ? 0 : -errno;
    for (int i = 0; i < rc; i++) {
        struct msghdr *m = &u->rmsgs[i].msg_hdr;
        const uint8_t *p = u->iov[i].iov_base;
        size_t len = u->rmsgs[i].msg_len, seg = len;
        /* a truncated datagram is no datagram of ours: its length fails */
        if (m->msg_flags & MSG_TRUNC)
            len = seg = 0;
        for (struct cmsghdr *cm = u->cfg.gro ? CMSG_FIRSTHDR(m) : NULL; cm; cm = CMSG_NXTHDR(m, cm))
            if (cm->cmsg_level == IPPROTO_UDP && cm->cmsg_type == UDP_GRO) {
                int g;
                memcpy(&g, CMSG_DATA(cm), sizeof(g));
                if (g > 0)
                    seg = (size_t)g;
            }
        /* a coalesced buffer: the datagrams it was made of, back to back */
        do {
            size_t l = len < seg ? len : seg;
            in[n].data = p;
            in[n].len = l;
            memcpy(in[n].from, &u->from[i], sizeof(u->from[i]));
            n++;
            p += l;
            len -= l;
        } while (len && n < max * DG_IN_PER_RECV);
    }
    return n;
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

static int udp_fd(struct dg_ep *ep)
{
    return ul(ep)->fd;
}

static void udp_describe(struct dg_ep *ep, char *buf, size_t cap)
{
    struct udp_link *u = ul(ep);

    snprintf(buf, cap, "UDP on %s (MTU %d), sendmmsg/recvmmsg batches of %ld%s", u->ifname,
             u->mtu, ep->cfg.batch,
             u->connected ? ", socket connected to its one remote peer" : "");
}

/* Launcher-free: DG_NET_UDP, flags (the engine's), port, IPv4 address,
 * the last two in network order. */
static void udp_pack(struct dg_ep *ep, uint8_t net[8])
{
    struct udp_link *u = ul(ep);

    net[0] = DG_NET_UDP;
    net[1] = 0;
    memcpy(net + 2, &u->self.sin_port, 2);
    memcpy(net + 4, &u->self.sin_addr, 4);
}

static int udp_unpack(const uint8_t net[8], char *addr, size_t cap)
{
    struct in_addr ip;
    uint16_t port;
    char ips[INET_ADDRSTRLEN];

    if (net[0] != DG_NET_UDP)
        return -1;
    memcpy(&port, net + 2, 2);
    memcpy(&ip, net + 4, 4);
    if (!port || !inet_ntop(AF_INET, &ip, ips, sizeof(ips)))
        return -1;
    snprintf(addr, cap, "%s:%u", ips, (unsigned)ntohs(port));
    return 0;
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
    .fd = udp_fd,
    .describe = udp_describe,
    .close = udp_close,
    .pack = udp_pack,
    .unpack = udp_unpack,
};

extern const struct cvia_prov_ops cvia__udp_ops;

const struct cvia_prov_desc cvia_prov_udp = {
    .name   = "udp",
    .desc   = "reliable segmented datagrams over UDP between hosts (M-VIA's protocol)",
    .scope  = CVIA_PROV_NET,
    .ops    = &cvia__udp_ops,
    .params = &cvia__udp_param_table,
};
