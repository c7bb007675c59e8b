/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* eth provider: the dgram engine directly on Ethernet frames, beneath IP,
 * as M-VIA ran (paper 002). An AF_PACKET socket bound to one interface and
 * a local-experimental EtherType (IEEE 802 0x88B5 by default); a classic
 * BPF filter lets in only frames of this job (the header's job tag) for
 * this rank (ranks of a host share the interface's MAC, so the header's
 * destination rank decides).
 *
 * With CVIA_ETH_RING=yes (the default) frames move through PACKET_MMAP
 * rings (TPACKET_V2): they arrive in a receive ring that the engine reads
 * in place (no system call to receive), and leave through a transmit ring
 * on a second, send-only packet socket (SOCK_RAW, protocol 0: it receives
 * nothing): each datagram of a batch is written in place into a ring frame
 * behind its Ethernet header, and one send() hands the whole batch (the
 * segments of a message, and of every message waiting) to the kernel,
 * which takes the frames' pages into its buffers without another copy.
 * With CVIA_ETH_RING=no, or where the kernel refuses a ring, frames go by
 * sendmmsg (gathered from the send window) and come by recvmmsg.
 * Needs CAP_NET_RAW. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <endian.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "prov/dgram/dgram.h"
#include "prov/eth/eth.h"
#include "util/log.h"

struct eth_cfg {
    char ifname[CVIA_PARAM_STRLEN];
    long ethertype;
    int  ring;
    long ring_frames;
    int  qdisc_bypass;
};

static const struct cvia_param eth_params[] = {
    { "IF", "", CVIA_PARAM_STRING, offsetof(struct eth_cfg, ifname),
      "Ethernet interface to use; peers must share its link (empty: the first "
      "interface that is up, has an Ethernet address and is not loopback).", 0, 0, NULL },
    { "TYPE", "34997", CVIA_PARAM_INT, offsetof(struct eth_cfg, ethertype),
      "EtherType of corevia's frames, decimal (34997 = 0x88B5, IEEE 802 local "
      "experimental 1).", 1536, 65535, NULL },
    { "RING", "yes", CVIA_PARAM_BOOL, offsetof(struct eth_cfg, ring),
      "Move frames through PACKET_MMAP rings (TPACKET_V2): received frames are read in "
      "place from a receive ring (no system call to receive), and a batch of frames "
      "(the segments of a message, and of every message waiting) is written in place "
      "into a transmit ring and sent with one send(); no: the plain socket, sendmmsg "
      "gathered from the send window and recvmmsg (also the fallback, with a warning, "
      "where the kernel refuses a ring).", 0, 0, NULL },
    { "RING_FRAMES", "512", CVIA_PARAM_INT, offsetof(struct eth_cfg, ring_frames),
      "Frames in each ring (receive and transmit) when CVIA_ETH_RING=yes; each frame "
      "holds one MTU-sized datagram, so the rings take about 2 x this x the MTU of "
      "kernel memory.", 64, 1 << 20, NULL },
    { "QDISC_BYPASS", "no", CVIA_PARAM_BOOL, offsetof(struct eth_cfg, qdisc_bypass),
      "Send past the interface's queueing discipline (PACKET_QDISC_BYPASS): a tc rate "
      "limit on the interface then no longer applies, and packet captures (tcpdump) on "
      "this host no longer see the frames sent.", 0, 0, NULL },
    { NULL }
};

const struct cvia_param_table cvia__eth_param_table = {
    .component = "eth", .prefix = "ETH_", .params = eth_params,
    .cfg_size = sizeof(struct eth_cfg),
};

struct eth_link {
    struct eth_cfg cfg;
    int    fd;
    int    ifindex;
    int    mtu;
    char   ifname[IF_NAMESIZE];
    unsigned char mac[ETH_ALEN];
    unsigned char (*peer)[ETH_ALEN];   /* [size] */
    struct sockaddr_ll *dest;          /* [size] */
    struct mmsghdr *msgs;              /* [batch] */
    /* the receive ring */
    unsigned char *ring;
    size_t ring_bytes, frame_size, block_size;
    unsigned frames, per_block, head, taken;
    /* the transmit ring, on its own send-only socket */
    int    txfd;
    unsigned char *tx;
    size_t tx_bytes, tx_frame_size, tx_block_size, tx_max;
    unsigned tx_frames, tx_per_block, tx_head;
    size_t tx_vnet;      /* bytes of virtio-net header before each frame (or 0) */
    int    tx_kick;      /* frames wait in the ring for a send() (eth_tx_kick) */
    /* without a ring */
    struct iovec *iov;
    struct sockaddr_ll *from;
    unsigned char *bufs;
    size_t bufsz;
};

static struct eth_link *el(struct dg_ep *ep)
{
    return ep->link_priv;
}

static int eth_if_info(struct eth_link *e, const char *name)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ok;

    if (fd < 0)
        return -errno;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    ok = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) &&
         !(ifr.ifr_flags & IFF_LOOPBACK);
    if (ok && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0 && ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER) {
        memcpy(e->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
        ok = ioctl(fd, SIOCGIFMTU, &ifr) == 0;
        e->mtu = ifr.ifr_mtu;
    } else {
        ok = 0;
    }
    close(fd);
    if (!ok)
        return -ENODEV;
    snprintf(e->ifname, sizeof(e->ifname), "%s", name);
    e->ifindex = (int)if_nametoindex(name);
    return e->ifindex ? 0 : -ENODEV;
}

static int eth_pick_if(struct eth_link *e)
{
    struct if_nameindex *ni, *i;
    int rc = -ENODEV;

    if (e->cfg.ifname[0]) {
        if ((rc = eth_if_info(e, e->cfg.ifname)))
            cvia_error(CONF, "CVIA_ETH_IF=%s: not an Ethernet interface that is up",
                       e->cfg.ifname);
        return rc;
    }
    if (!(ni = if_nameindex()))
        return -errno;
    for (i = ni; i->if_index && rc; i++)
        rc = eth_if_info(e, i->if_name);
    if_freenameindex(ni);
    if (rc)
        cvia_error(NET, "eth: no Ethernet interface is up (set CVIA_ETH_IF)");
    return rc;
}


int cvia__eth_iface(struct eth_iface *out)
{
    struct eth_link e = { .fd = -1, .txfd = -1 };
    int rc;

    if ((rc = cvia__param_load(&cvia__eth_param_table, &e.cfg)) || (rc = eth_pick_if(&e)))
        return rc;
    memset(out, 0, sizeof(*out));
    snprintf(out->ifname, sizeof(out->ifname), "%s", e.ifname);
    out->ifindex = e.ifindex;
    out->mtu = e.mtu;
    memcpy(out->mac, e.mac, ETH_ALEN);
    out->ethertype = e.cfg.ethertype;
    return 0;
}


/* A TPACKET_V2 ring (@opt: PACKET_RX_RING or PACKET_TX_RING) of at least
 * @want frames of @frame_size bytes on @fd, in blocks of 64 KiB or the
 * next power of two that holds a frame, mapped: 0, or a negative errno. */
static int eth_map_ring(int fd, int opt, size_t frame_size, long want, unsigned char **base,
                        size_t *bytes, size_t *block_size, unsigned *per_block, unsigned *frames)
{
    struct tpacket_req req;
    void *m;

    *block_size = 1u << 16;
    while (*block_size < frame_size)
        *block_size <<= 1;
    *per_block = (unsigned)(*block_size / frame_size);
    req.tp_block_size = (unsigned)*block_size;
    req.tp_frame_size = (unsigned)frame_size;
    req.tp_block_nr = (unsigned)((want + *per_block - 1) / *per_block);
    req.tp_frame_nr = req.tp_block_nr * *per_block;
    if (setsockopt(fd, SOL_PACKET, opt, &req, sizeof(req)) < 0)
        return -errno;
    *frames = req.tp_frame_nr;
    *bytes = (size_t)req.tp_block_nr * *block_size;
    m = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -errno;
    *base = m;
    return 0;
}

/* Frame @i of such a ring. */
static struct tpacket2_hdr *eth_ring_frame(unsigned char *base, size_t block_size,
                                           unsigned per_block, size_t frame_size, unsigned i)
{
    return (struct tpacket2_hdr *)(void *)(base + (size_t)(i / per_block) * block_size +
                                           (size_t)(i % per_block) * frame_size);
}

/* The receive ring; 0, or a negative error (then recvmmsg is used). */
static int eth_ring(struct eth_link *e)
{
    int v = TPACKET_V2;
    size_t hdr = TPACKET_ALIGN(sizeof(struct tpacket2_hdr)) + TPACKET_ALIGN(sizeof(struct sockaddr_ll));

    if (setsockopt(e->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0)
        return -errno;
    /* header, address, up to 16 bytes of link header room, the frame */
    e->frame_size = TPACKET_ALIGN(hdr + 16 + (size_t)e->mtu + 64);
    return eth_map_ring(e->fd, PACKET_RX_RING, e->frame_size, e->cfg.ring_frames, &e->ring,
                        &e->ring_bytes, &e->block_size, &e->per_block, &e->frames);
}

/* The transmit ring: a send-only packet socket (SOCK_RAW, so each frame
 * names its own destination in its Ethernet header and one send() may
 * carry frames for several peers; protocol 0, so it receives nothing)
 * bound to the interface, with a TPACKET_V2 TX ring. 0, or a negative
 * error (then sendmmsg is used). */
static int eth_tx_ring(struct eth_link *e, size_t sndbuf)
{
    int v = TPACKET_V2, one = 1, rc;
    struct sockaddr_ll sll = { .sll_family = AF_PACKET };

    e->txfd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (e->txfd < 0)
        return -errno;
    if (setsockopt(e->txfd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0)
        return -errno;
    /* a frame the kernel finds malformed is dropped (as if lost on the
     * wire) rather than stopping the ring at it */
    if (setsockopt(e->txfd, SOL_PACKET, PACKET_LOSS, &one, sizeof(one)) < 0)
        return -errno;
    /* A virtio-net header in front of each frame whose hdr_len covers the
     * whole frame makes the kernel copy the frame into the buffer it sends
     * instead of attaching the ring's pages: a virtual link (veth) that
     * hands the buffer to another namespace must otherwise copy such
     * pages into fresh ones (skb_copy_ubufs), a page allocation per frame.
     * Where the option is refused, frames go as pages. */
    e->tx_vnet = setsockopt(e->txfd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) == 0 ?
                 sizeof(struct virtio_net_hdr) : 0;
    /* the kernel reads a frame's data after the aligned tpacket2_hdr */
    e->tx_max = e->tx_vnet + ETH_HLEN + (size_t)e->mtu;
    e->tx_frame_size = TPACKET_ALIGN(TPACKET_ALIGN(sizeof(struct tpacket2_hdr)) + e->tx_max);
    if ((rc = eth_map_ring(e->txfd, PACKET_TX_RING, e->tx_frame_size, e->cfg.ring_frames, &e->tx,
                           &e->tx_bytes, &e->tx_block_size, &e->tx_per_block, &e->tx_frames)))
        return rc;
    sll.sll_ifindex = e->ifindex;   /* sll_protocol 0: no frame comes in here */
    if (bind(e->txfd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
        return -errno;
    if (e->cfg.qdisc_bypass)
        setsockopt(e->txfd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
    {   /* frames in flight hold send buffer until the kernel is done with them */
        int b = sndbuf > (1u << 30) ? (1 << 30) : (int)sndbuf;
        if (setsockopt(e->txfd, SOL_SOCKET, SO_SNDBUFFORCE, &b, sizeof(b)) < 0)
            setsockopt(e->txfd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
    }
    return 0;
}

static void eth_tx_ring_drop(struct eth_link *e)
{
    if (e->tx)
        munmap(e->tx, e->tx_bytes);
    e->tx = NULL;
    if (e->txfd >= 0)
        close(e->txfd);
    e->txfd = -1;
}

static void eth_close(struct dg_ep *ep)
{
    struct eth_link *e = el(ep);

    if (!e)
        return;
    if (e->ring)
        munmap(e->ring, e->ring_bytes);
    eth_tx_ring_drop(e);
    if (e->fd >= 0)
        close(e->fd);
    free(e->peer);
    free(e->dest);
    free(e->msgs);
    free(e->iov);
    free(e->from);
    free(e->bufs);
    free(e);
    ep->link_priv = NULL;
}

static int eth_open(struct dg_ep *ep, char *addr, size_t cap)
{
    struct eth_link *e = calloc(1, sizeof(*e));
    struct sockaddr_ll sll = { .sll_family = AF_PACKET };
    int rc, n = (int)ep->cfg.batch, one = 1;

    if (!e)
        return -ENOMEM;
    e->fd = -1;
    e->txfd = -1;
    ep->link_priv = e;
    if ((rc = cvia__param_load(&cvia__eth_param_table, &e->cfg)) || (rc = eth_pick_if(e)))
        goto err;
    e->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                   htons((uint16_t)e->cfg.ethertype));
    if (e->fd < 0) {
        rc = -errno;
        cvia_error(NET, "eth: AF_PACKET socket: %s%s", strerror(errno),
                   errno == EPERM ? " (needs CAP_NET_RAW; use CVIA_NET=udp otherwise)" : "");
        goto err;
    }
    /* only frames of this job for this rank, and none this host sends */
    if ((rc = cvia__dg_attach_filter(e->fd, 0, 1, ep->keys.job, ep->args.rank))) {
        cvia_error(NET, "eth: attaching the frame filter: %s", strerror(-rc));
        goto err;
    }
    if (e->cfg.ring && (rc = eth_ring(e)))
        cvia_warn(NET, "eth: no PACKET_MMAP receive ring (%s); receiving by recvmmsg",
                  strerror(-rc));
    if (e->cfg.ring && (rc = eth_tx_ring(e, ep->cfg.rcvbuf))) {
        cvia_warn(NET, "eth: no PACKET_MMAP transmit ring (%s); sending by sendmmsg",
                  strerror(-rc));
        eth_tx_ring_drop(e);
    }
    sll.sll_protocol = htons((uint16_t)e->cfg.ethertype);
    sll.sll_ifindex = e->ifindex;
    if (bind(e->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
        rc = -errno;
        cvia_error(NET, "eth: bind to %s: %s", e->ifname, strerror(errno));
        goto err;
    }
    if (e->cfg.qdisc_bypass && !e->tx)
        setsockopt(e->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
    if (!e->tx) {
        int b = (int)ep->cfg.rcvbuf;
        if (setsockopt(e->fd, SOL_SOCKET, SO_SNDBUFFORCE, &b, sizeof(b)) < 0)
            setsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
        if (!e->ring && setsockopt(e->fd, SOL_SOCKET, SO_RCVBUFFORCE, &b, sizeof(b)) < 0)
            setsockopt(e->fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
    }
    e->peer = calloc((size_t)ep->args.size, sizeof(*e->peer));
    e->dest = calloc((size_t)ep->args.size, sizeof(*e->dest));
    e->msgs = calloc((size_t)n, sizeof(*e->msgs));
    e->iov = calloc((size_t)n, sizeof(*e->iov));
    e->from = calloc((size_t)n, sizeof(*e->from));
    e->bufsz = (size_t)e->mtu;
    e->bufs = e->ring ? NULL : malloc((size_t)n * e->bufsz);
    if (!e->peer || !e->dest || !e->msgs || !e->iov || !e->from || (!e->ring && !e->bufs)) {
        rc = -ENOMEM;
        goto err;
    }
    ep->rx_call = !e->ring;   /* recvmmsg: CVIA_DGRAM_RX_GAP */
    snprintf(addr, cap, "%02x:%02x:%02x:%02x:%02x:%02x", e->mac[0], e->mac[1], e->mac[2],
             e->mac[3], e->mac[4], e->mac[5]);
    return 0;
err:
    eth_close(ep);
    return rc;
}

static int eth_attach(struct dg_ep *ep, int peer, const char *addr)
{
    struct eth_link *e = el(ep);
    unsigned m[ETH_ALEN];
    char end;
    struct sockaddr_ll *d = &e->dest[peer];

    if (sscanf(addr, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
               &end) != 6) {
        cvia_error(NET, "eth: rank %d published a bad address '%s'", peer, addr);
        return -CVIA_EBOOT;
    }
    for (int i = 0; i < ETH_ALEN; i++)
        e->peer[peer][i] = (unsigned char)m[i];
    d->sll_family = AF_PACKET;
    d->sll_protocol = htons((uint16_t)e->cfg.ethertype);
    d->sll_ifindex = e->ifindex;
    d->sll_halen = ETH_ALEN;
    memcpy(d->sll_addr, e->peer[peer], ETH_ALEN);
    return 0;
}

static size_t eth_room(struct dg_ep *ep)
{
    return (size_t)el(ep)->mtu;   /* nothing between our header and Ethernet's */
}

static struct tpacket2_hdr *eth_tx_frame(struct eth_link *e, unsigned i)
{
    return eth_ring_frame(e->tx, e->tx_block_size, e->tx_per_block, e->tx_frame_size, i);
}

/* Is the last frame marked for sending still waiting for the kernel? */
static int eth_tx_last_waits(struct eth_link *e)
{
    const struct tpacket2_hdr *f = eth_tx_frame(e, (e->tx_head + e->tx_frames - 1) % e->tx_frames);
    return __atomic_load_n(&f->tp_status, __ATOMIC_ACQUIRE) == TP_STATUS_SEND_REQUEST;
}

/* Frames marked in the ring that no send() has handed over yet: after a
 * send() that took part of a batch, or a ring full of them (the next frame
 * to write is one: nothing can be added, only a send() frees it). */
static int eth_tx_waiting(struct eth_link *e)
{
    const struct tpacket2_hdr *f = eth_tx_frame(e, e->tx_head);
    return e->tx_kick || __atomic_load_n(&f->tp_status, __ATOMIC_ACQUIRE) == TP_STATUS_SEND_REQUEST;
}

/* Hand the kernel every frame marked in the ring. Frames it did not take
 * stay marked and go with the next call: send() stops at the first frame
 * it has no send buffer for (a full device queue, or a rate limit holding
 * the socket's earlier frames) and still returns what it took. The engine
 * may have nothing more to send then (its window is in those frames), so
 * every receive pass calls this again while frames wait (eth_recv). */
static int eth_tx_kick(struct eth_link *e)
{
    int rc;

    do
        rc = (int)send(e->txfd, NULL, 0, MSG_DONTWAIT);
    while (rc < 0 && errno == EINTR);
    e->tx_kick = rc < 0 || eth_tx_last_waits(e);
    if (rc < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
        return -errno;
    return 0;
}

/* The ring: write each datagram in place behind its Ethernet header, mark
 * it for sending, and hand them all to the kernel with one send(). A frame
 * the kernel still holds (sending, or its buffer not yet freed by the
 * receiving side) ends the batch there: the engine sends the rest later. */
static int eth_send_ring(struct dg_ep *ep, struct eth_link *e, struct dg_out *out, int n)
{
    int k = 0, rc;

    for (; k < n; k++) {
        struct tpacket2_hdr *f = eth_tx_frame(e, e->tx_head);
        unsigned char *p = (unsigned char *)f + TPACKET_ALIGN(sizeof(*f));
        struct ethhdr *eh = (struct ethhdr *)(void *)(p + e->tx_vnet);
        size_t len = e->tx_vnet + ETH_HLEN;

        if (__atomic_load_n(&f->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE)
            break;
        memcpy(eh->h_dest, e->peer[out[k].peer], ETH_ALEN);
        memcpy(eh->h_source, e->mac, ETH_ALEN);
        eh->h_proto = htons((uint16_t)e->cfg.ethertype);
        for (int v = 0; v < out[k].iovcnt; v++) {
            if (len + out[k].iov[v].iov_len > e->tx_max)
                return -EMSGSIZE;   /* the engine never cuts past the MTU */
            memcpy(p + len, out[k].iov[v].iov_base, out[k].iov[v].iov_len);
            len += out[k].iov[v].iov_len;
        }
        if (e->tx_vnet) {   /* no offload; copy all of the frame (little-endian) */
            struct virtio_net_hdr vh = { .hdr_len = (uint16_t)htole16((uint16_t)(len - e->tx_vnet)) };
            memcpy(p, &vh, sizeof(vh));
        }
        f->tp_len = (uint32_t)len;
        __atomic_store_n(&f->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
        e->tx_head = (e->tx_head + 1) % e->tx_frames;
    }
    (void)ep;
    if (!k && !eth_tx_waiting(e))
        return 0;
    rc = eth_tx_kick(e);
    return rc < 0 && !k ? rc : k;
}

static int eth_send(struct dg_ep *ep, struct dg_out *out, int n)
{
    struct eth_link *e = el(ep);
    int rc;

    if (n > (int)ep->cfg.batch)
        n = (int)ep->cfg.batch;
    if (e->tx)
        return eth_send_ring(ep, e, out, n);
    for (int i = 0; i < n; i++) {
        struct msghdr *m = &e->msgs[i].msg_hdr;
        memset(m, 0, sizeof(*m));
        m->msg_name = &e->dest[out[i].peer];
        m->msg_namelen = sizeof(struct sockaddr_ll);
        m->msg_iov = out[i].iov;
        m->msg_iovlen = (size_t)out[i].iovcnt;
    }
    do
        rc = sendmmsg(e->fd, e->msgs, (unsigned)n, MSG_DONTWAIT);
    while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ? 0 : -errno;
    return rc;
}

static struct tpacket2_hdr *eth_frame(struct eth_link *e, unsigned i)
{
    return eth_ring_frame(e->ring, e->block_size, e->per_block, e->frame_size, i);
}

static int eth_recv(struct dg_ep *ep, struct dg_in *in, int max)
{
    struct eth_link *e = el(ep);
    int n = 0, rc;

    if (e->tx && e->tx_kick)
        (void)eth_tx_kick(e);   /* an error shows at the next send */
    if (e->ring) {
        e->taken = 0;
        while (n < max && e->taken < e->frames) {
            struct tpacket2_hdr *f = eth_frame(e, (e->head + e->taken) % e->frames);
            const struct sockaddr_ll *sll;
            if (!(__atomic_load_n(&f->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
                break;
            sll = (const struct sockaddr_ll *)(const void *)
                  ((const unsigned char *)f + TPACKET_ALIGN(sizeof(*f)));
            in[n].data = (const uint8_t *)f + f->tp_net;
            /* a frame cut short by the ring is no frame of ours: its length fails */
            in[n].len = f->tp_len > f->tp_snaplen ? 0 : f->tp_snaplen;
            memcpy(in[n].from, sll->sll_addr, ETH_ALEN);
            e->taken++;
            n++;
        }
        return n;
    }
    for (int i = 0; i < max; i++) {
        struct msghdr *m = &e->msgs[i].msg_hdr;
        e->iov[i].iov_base = e->bufs + (size_t)i * e->bufsz;
        e->iov[i].iov_len = e->bufsz;
        memset(m, 0, sizeof(*m));
        m->msg_name = &e->from[i];
        m->msg_namelen = sizeof(e->from[i]);
        m->msg_iov = &e->iov[i];
        m->msg_iovlen = 1;
    }
    do
        rc = recvmmsg(e->fd, e->msgs, (unsigned)max, MSG_DONTWAIT, NULL);
    while (rc < 0 && errno == EINTR);
    ep->rx_drained = rc < max;
    if (rc < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    for (int i = 0; i < rc; i++) {
        in[i].data = e->iov[i].iov_base;
        in[i].len = (e->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : e->msgs[i].msg_len;
        memcpy(in[i].from, e->from[i].sll_addr, ETH_ALEN);
    }
    return rc;
}

static void eth_release(struct dg_ep *ep, struct dg_in *in, int n)
{
    struct eth_link *e = el(ep);

    (void)in, (void)n;
    if (!e->ring)
        return;
    for (unsigned i = 0; i < e->taken; i++)
        __atomic_store_n(&eth_frame(e, (e->head + i) % e->frames)->tp_status, TP_STATUS_KERNEL,
                         __ATOMIC_RELEASE);
    e->head = (e->head + e->taken) % e->frames;
    e->taken = 0;
}

static int eth_from_peer(struct dg_ep *ep, int peer, const struct dg_in *in)
{
    return !memcmp(in->from, el(ep)->peer[peer], ETH_ALEN);
}

static int eth_fd(struct dg_ep *ep)
{
    return el(ep)->fd;   /* polls readable when the ring has a frame */
}

static void eth_describe(struct dg_ep *ep, char *buf, size_t cap)
{
    struct eth_link *e = el(ep);
    char rx[64], tx[64];

    if (e->ring)
        snprintf(rx, sizeof(rx), "receive ring of %u frames read in place", e->frames);
    else
        snprintf(rx, sizeof(rx), "recvmmsg batches of %ld", ep->cfg.batch);
    if (e->tx)
        snprintf(tx, sizeof(tx), "transmit ring of %u frames, one send per batch%s", e->tx_frames,
                 e->cfg.qdisc_bypass ? ", qdisc bypass" : "");
    else
        snprintf(tx, sizeof(tx), "sendmmsg batches of %ld", ep->cfg.batch);
    snprintf(buf, cap, "EtherType 0x%04lx on %s (MTU %d), %s, %s", e->cfg.ethertype, e->ifname,
             e->mtu, rx, tx);
}

/* Launcher-free: DG_NET_ETH, flags (the engine's), the interface's MAC.
 * The processes of a host share it; each one's socket filter admits only
 * frames with its own job tag (16 bits of its identity), and the MAC
 * sorts out the 1 in 65536 pairs whose tags meet. */
static void eth_pack(struct dg_ep *ep, uint8_t net[8])
{
    net[0] = DG_NET_ETH;
    net[1] = 0;
    memcpy(net + 2, el(ep)->mac, ETH_ALEN);
}

static int eth_unpack(const uint8_t net[8], char *addr, size_t cap)
{
    if (net[0] != DG_NET_ETH)
        return -1;
    snprintf(addr, cap, "%02x:%02x:%02x:%02x:%02x:%02x", net[2], net[3], net[4], net[5],
             net[6], net[7]);
    return 0;
}

const struct dg_link_ops cvia__eth_link = {
    .name = "eth",
    .open = eth_open,
    .attach = eth_attach,
    .room = eth_room,
    .send = eth_send,
    .recv = eth_recv,
    .release = eth_release,
    .from_peer = eth_from_peer,
    .fd = eth_fd,
    .describe = eth_describe,
    .close = eth_close,
    .pack = eth_pack,
    .unpack = eth_unpack,
};

extern const struct cvia_prov_ops cvia__eth_ops;

const struct cvia_prov_desc cvia_prov_eth = {
    .name   = "eth",
    .desc   = "reliable segmented datagrams in raw Ethernet frames between hosts (M-VIA)",
    .scope  = CVIA_PROV_NET,
    .ops    = &cvia__eth_ops,
    .params = &cvia__eth_param_table,
};
