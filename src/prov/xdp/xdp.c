/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* xdp provider: the dgram engine on eth's frames (its EtherType, the
 * datagram at offset 0 of the payload), moved through an AF_XDP socket
 * (libxdp's ring helpers over libbpf) instead of AF_PACKET.
 *
 * One UMEM of CVIA_XDP_FRAMES 4 KiB chunks, shared by receive and
 * transmit: half of it sits in the fill ring for the kernel to receive
 * into, the other half is this link's transmit pool, returned through the
 * completion ring. A received frame is read in place and its chunk goes
 * back to the fill ring when the engine is done with it; a datagram to
 * send is written once into a free chunk behind its Ethernet header and
 * posted on the TX ring; one sendto() kicks a whole batch, and only when
 * the kernel asks for it (need-wakeup). Zero-copy where the driver
 * offers it, copy mode otherwise (veth).
 *
 * The XDP program is ours, not libxdp's default (which redirects every
 * frame of the queue and would take ARP and IP from the kernel): a dozen
 * BPF instructions, built here with this job's EtherType, job tag and
 * rank as immediates, that redirect to our socket only our EtherType's
 * frames carrying our job tag and our rank as destination, and pass
 * everything else to the kernel (ARP, IP, other jobs, and this host's
 * other ranks, which receive through eth's AF_PACKET socket). It is
 * attached through a BPF link whose only reference is this process's
 * descriptor: no pinned object, so it detaches when the process exits or
 * dies, and it never replaces a program someone else attached.
 *
 * One socket per interface queue: the lowest rank of a host on the
 * interface takes queue CVIA_XDP_QUEUE, the host's other ranks use eth
 * (same frames, so every pair still talks); so does every rank where the
 * kernel, the interface or the privileges refuse AF_XDP, with one warning
 * (CVIA_XDP_FALLBACK=no: an error instead). Needs CAP_NET_ADMIN and
 * CAP_BPF (root). */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <xdp/xsk.h>

#include <corevia/corevia.h>
#include "prov/dgram/dgram.h"
#include "prov/eth/eth.h"
#include "util/log.h"

enum { XDP_MODE_AUTO, XDP_MODE_NATIVE, XDP_MODE_GENERIC };
static const char *const xdp_modes[] = { "auto", "native", "generic", NULL };

struct xdp_cfg {
    int  mode;
    long frames;
    long queue;
    int  fallback;
};

static const struct cvia_param xdp_params[] = {
    { "MODE", "auto", CVIA_PARAM_ENUM, offsetof(struct xdp_cfg, mode),
      "How the XDP program that steers corevia's frames to the AF_XDP socket is attached: "
      "native (in the driver; veth has it), generic (in the kernel's receive path, any "
      "interface), or auto (native, else generic). The interface and EtherType are "
      "CVIA_ETH_IF's and CVIA_ETH_TYPE's; a frame is at most 3520 bytes whatever the MTU.",
      0, 0, xdp_modes },
    { "FRAMES", "4096", CVIA_PARAM_INT, offsetof(struct xdp_cfg, frames),
      "4 KiB chunks of the UMEM (a power of two): half receive (in the fill ring), half "
      "transmit; the UMEM takes this x 4 KiB of locked memory.",
      64, 1 << 18, NULL },
    { "QUEUE", "0", CVIA_PARAM_INT, offsetof(struct xdp_cfg, queue),
      "Receive queue of the interface the AF_XDP socket binds to. Frames arriving on "
      "another queue go to the kernel and are lost to corevia: on a multi-queue NIC steer "
      "the EtherType to this queue (ethtool -N IF flow-type ether proto 0x88b5 action Q) "
      "or use one channel (ethtool -L IF combined 1). A veth has one queue.",
      0, 1023, NULL },
    { "FALLBACK", "yes", CVIA_PARAM_BOOL, offsetof(struct xdp_cfg, fallback),
      "Where the kernel, the interface or the privileges (CAP_BPF, CAP_NET_ADMIN) refuse "
      "AF_XDP, or the queue is taken, use eth's AF_PACKET socket on the same interface "
      "(CAP_NET_RAW), with one warning naming the step and the error (not udp: its "
      "frames differ; the frames are eth's, so xdp and eth ranks talk); no: fail with "
      "that error instead. A host's ranks other than its lowest always use eth's socket "
      "(one AF_XDP socket per queue), whatever this says.",
      0, 0, NULL },
    { NULL }
};

const struct cvia_param_table cvia__xdp_param_table = {
    .component = "xdp", .prefix = "XDP_", .params = xdp_params,
    .cfg_size = sizeof(struct xdp_cfg),
};

#define XDP_CHUNK  4096u   /* one page: the UMEM's largest aligned chunk */
/* A frame must fit a chunk after the kernel's XDP headroom, and, where a
 * driver builds the frame in a page (veth), leave room for the page's
 * shared-info tail too: beyond that a frame arrives in fragments, which a
 * socket without XDP_USE_SG drops. */
#define XDP_FRAME_MAX (XDP_CHUNK - XDP_PACKET_HEADROOM - 320u)
/* bytes a datagram may have: the engine's room (also eth's, when it stands in) */
#define XDP_ROOM   (XDP_FRAME_MAX - ETH_HLEN)

struct xdp_link {
    struct xdp_cfg cfg;
    struct eth_iface nic;
    unsigned char (*peer)[ETH_ALEN];   /* [size] */
    /* the socket and its UMEM */
    void  *area;
    size_t area_bytes;
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fq, tx;
    struct xsk_ring_cons cq, rx;
    int    fd;
    uint64_t *free_tx;       /* [ntx]: chunks free to send from */
    unsigned nfree, ntx, nrx;
    uint64_t *rx_taken;      /* [nrx]: chunks recv handed to the engine */
    unsigned taken;
    int    zerocopy;
    /* the program */
    int    map_fd, prog_fd, link_fd;
    int    generic;
    struct xdp_link *live_next;   /* xdp_live's list */
};

/* ---- forked children ------------------------------------------------- */

/* The program stays attached while any descriptor of its BPF link is
 * open, and the interface's queue stays taken while any descriptor of the
 * socket is: both are inherited by a child the rank forks (exec closes
 * them, fork alone does not). A child that outlived its rank would keep
 * the program steering the next job's frames to a dead socket and the
 * queue from the next job's rank. So every open link is listed here, and
 * a forked child gives up its copies of both at once (the link's
 * descriptor; the socket's descriptor and ring mappings) and forgets the
 * rest (a child cannot use its parent's corevia context). */
static pthread_mutex_t xdp_live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xdp_link *xdp_live;
static pthread_once_t xdp_fork_once = PTHREAD_ONCE_INIT;

static void xdp_fork_prepare(void) { pthread_mutex_lock(&xdp_live_lock); }
static void xdp_fork_parent(void)  { pthread_mutex_unlock(&xdp_live_lock); }
static void xdp_fork_child(void)
{
    for (struct xdp_link *x = xdp_live; x; x = x->live_next) {
        if (x->link_fd >= 0)
            close(x->link_fd);
        /* the socket lives on while any mapping of its rings does, not
         * only its descriptor: libxdp's deletes unmap the rings (fill and
         * completion with the UMEM) and close the descriptors */
        if (x->xsk)
            xsk_socket__delete(x->xsk);
        if (x->umem)
            xsk_umem__delete(x->umem);
        x->link_fd = x->fd = -1;
        x->xsk = NULL;
        x->umem = NULL;
    }
    xdp_live = NULL;
    pthread_mutex_init(&xdp_live_lock, NULL);
}
static void xdp_fork_init(void)
{
    pthread_atfork(xdp_fork_prepare, xdp_fork_parent, xdp_fork_child);
}

static void xdp_live_add(struct xdp_link *x)
{
    pthread_once(&xdp_fork_once, xdp_fork_init);
    pthread_mutex_lock(&xdp_live_lock);
    x->live_next = xdp_live;
    xdp_live = x;
    pthread_mutex_unlock(&xdp_live_lock);
}

static void xdp_live_remove(struct xdp_link *x)
{
    pthread_mutex_lock(&xdp_live_lock);
    for (struct xdp_link **pp = &xdp_live; *pp; pp = &(*pp)->live_next)
        if (*pp == x) {
            *pp = x->live_next;
            break;
        }
    pthread_mutex_unlock(&xdp_live_lock);
}

static struct xdp_link *xl(struct dg_ep *ep)
{
    return ep->link_priv;
}

/* ---- the program ---------------------------------------------------- */

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
                                                 .off = (o), .imm = (i) })
#define LDX(sz, d, s, o)  INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define MOVR(d, s)        INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOVI(d, i)        INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADDI(d, i)        INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define LSHI(d, i)        INSN(BPF_ALU64 | BPF_LSH | BPF_K, d, 0, 0, i)
#define ORR(d, s)         INSN(BPF_ALU64 | BPF_OR | BPF_X, d, s, 0, 0)
#define JGTR(d, s, o)     INSN(BPF_JMP | BPF_JGT | BPF_X, d, s, o, 0)
#define JNEI(d, i, o)     INSN(BPF_JMP | BPF_JNE | BPF_K, d, 0, o, i)
#define CALL(f)           INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT()            INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* The steering program: XDP_REDIRECT into @map at the frame's receive
 * queue when the frame is ours (EtherType, job tag, destination rank),
 * else XDP_PASS (also when the queue has no socket of ours). Written as
 * instructions rather than compiled from C: its three constants differ
 * per job and rank and go in as immediates, so no object file has to be
 * found at run time, clang is needed at no point, and nothing but a map
 * is shared with the kernel. */
static int xdp_prog(int map_fd, uint16_t ethertype, uint16_t job, uint32_t rank, int frags)
{
    const int hdr = ETH_HLEN;
    struct bpf_insn p[] = {
        LDX(BPF_W, BPF_REG_2, BPF_REG_1, offsetof(struct xdp_md, data)),
        LDX(BPF_W, BPF_REG_3, BPF_REG_1, offsetof(struct xdp_md, data_end)),
        MOVR(BPF_REG_4, BPF_REG_2),
        ADDI(BPF_REG_4, hdr + (int)sizeof(struct dg_hdr)),
        JGTR(BPF_REG_4, BPF_REG_3, 18),                                   /* short: pass */
        LDX(BPF_H, BPF_REG_5, BPF_REG_2, offsetof(struct ethhdr, h_proto)),
        JNEI(BPF_REG_5, htons(ethertype), 16),                            /* not ours */
        LDX(BPF_H, BPF_REG_5, BPF_REG_2, hdr + DG_HDR_JOB_OFF),
        JNEI(BPF_REG_5, job, 14),                                         /* another job */
        LDX(BPF_B, BPF_REG_5, BPF_REG_2, hdr + DG_HDR_DST_OFF),          /* rank: 3 bytes LE */
        LDX(BPF_B, BPF_REG_6, BPF_REG_2, hdr + DG_HDR_DST_OFF + 1),
        LSHI(BPF_REG_6, 8),
        ORR(BPF_REG_5, BPF_REG_6),
        LDX(BPF_B, BPF_REG_6, BPF_REG_2, hdr + DG_HDR_DST_OFF + 2),
        LSHI(BPF_REG_6, 16),
        ORR(BPF_REG_5, BPF_REG_6),
        JNEI(BPF_REG_5, (int32_t)rank, 6),                                /* another rank */
        LDX(BPF_W, BPF_REG_2, BPF_REG_1, offsetof(struct xdp_md, rx_queue_index)),
        /* r1 = the map (a 16-byte load of its descriptor) */
        INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd),
        INSN(0, 0, 0, 0, 0),
        MOVI(BPF_REG_3, XDP_PASS),   /* what to return when the queue has no socket */
        CALL(BPF_FUNC_redirect_map),
        EXIT(),
        MOVI(BPF_REG_0, XDP_PASS),   /* 23: every jump above lands here */
        EXIT(),
    };
    LIBBPF_OPTS(bpf_prog_load_opts, o, .prog_flags = frags ? BPF_F_XDP_HAS_FRAGS : 0);
    /* the jump offsets above count on this layout */
    _Static_assert(sizeof(p) / sizeof(p[0]) == 25, "xdp program layout");
    return bpf_prog_load(BPF_PROG_TYPE_XDP, "cvia_steer", "Dual BSD/GPL", p,
                         sizeof(p) / sizeof(p[0]), &o);
}

/* The map, the program, the socket in the map, the program on the
 * interface through a link the descriptor owns: 0, or -errno with *why
 * set. */
static int xdp_attach_prog(struct dg_ep *ep, struct xdp_link *x, const char **why)
{
    uint32_t q = (uint32_t)x->cfg.queue;
    int fd = x->fd, rc;

    x->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "cvia_xsks", 4, 4, q + 1, NULL);
    if (x->map_fd < 0) {
        *why = "creating the socket map";
        return x->map_fd;
    }
    if (bpf_map_update_elem(x->map_fd, &q, &fd, 0) < 0) {
        *why = "putting the socket into the map";
        return -errno;
    }
    for (int frags = 1; frags >= 0; frags--) {
        x->prog_fd = xdp_prog(x->map_fd, (uint16_t)x->nic.ethertype, dg_jobtag(ep->keys.job),
                              (uint32_t)ep->args.rank, frags);
        if (x->prog_fd >= 0)
            break;
    }
    if (x->prog_fd < 0) {
        *why = "loading the XDP program";
        return x->prog_fd;
    }
    rc = -EOPNOTSUPP;
    if (x->cfg.mode != XDP_MODE_GENERIC) {
        LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_DRV_MODE);
        x->link_fd = bpf_link_create(x->prog_fd, x->nic.ifindex, BPF_XDP, &lo);
        rc = x->link_fd < 0 ? x->link_fd : 0;
        *why = "attaching the XDP program in native mode";
    }
    if (rc && rc != -EBUSY && rc != -EEXIST && x->cfg.mode == XDP_MODE_AUTO) {
        LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_SKB_MODE);
        x->link_fd = bpf_link_create(x->prog_fd, x->nic.ifindex, BPF_XDP, &lo);
        rc = x->link_fd < 0 ? x->link_fd : 0;
        x->generic = 1;
        *why = "attaching the XDP program in generic mode";
    }
    if (x->cfg.mode == XDP_MODE_GENERIC && rc == -EOPNOTSUPP) {
        LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_SKB_MODE);
        x->link_fd = bpf_link_create(x->prog_fd, x->nic.ifindex, BPF_XDP, &lo);
        rc = x->link_fd < 0 ? x->link_fd : 0;
        x->generic = 1;
        *why = "attaching the XDP program in generic mode";
    }
    if (rc == -EBUSY || rc == -EEXIST)
        *why = "attaching the XDP program (the interface has another one)";
    return rc;
}

/* ---- the socket ------------------------------------------------------- */

static int xdp_socket(struct xdp_link *x, const char **why)
{
    struct xsk_umem_config uc = { 0 };
    struct xsk_socket_config sc = { 0 };
    unsigned n = (unsigned)x->cfg.frames;
    uint32_t idx;
    int rc;

    x->nrx = x->ntx = n / 2;
    x->area_bytes = (size_t)n * XDP_CHUNK;
    x->area = mmap(NULL, x->area_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (x->area == MAP_FAILED) {
        x->area = NULL;
        *why = "mapping the UMEM";
        return -errno;
    }
    uc.fill_size = x->nrx;
    uc.comp_size = x->ntx;
    uc.frame_size = XDP_CHUNK;
    uc.frame_headroom = 0;
    if ((rc = xsk_umem__create(&x->umem, x->area, x->area_bytes, &x->fq, &x->cq, &uc))) {
        x->umem = NULL;
        *why = "registering the UMEM";
        return rc;
    }
    sc.rx_size = x->nrx;
    sc.tx_size = x->ntx;
    sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;   /* our program, not libxdp's */
    /* zero-copy where the driver has it, else copy */
    sc.bind_flags = XDP_USE_NEED_WAKEUP | XDP_ZEROCOPY;
    rc = xsk_socket__create(&x->xsk, x->nic.ifname, (uint32_t)x->cfg.queue, x->umem, &x->rx,
                            &x->tx, &sc);
    x->zerocopy = !rc;
    /* A socket of a process that just exited leaves the queue only when
     * the kernel's deferred release has run (measured: a run started right
     * after another found the queue taken): EBUSY is retried for 1 s. */
    for (int tries = 0; rc && tries < 50; tries++) {
        if (rc == -EBUSY)
            usleep(20000);
        sc.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY;
        rc = xsk_socket__create(&x->xsk, x->nic.ifname, (uint32_t)x->cfg.queue, x->umem, &x->rx,
                                &x->tx, &sc);
        if (rc != -EBUSY)
            break;
    }
    if (rc) {
        x->xsk = NULL;
        *why = rc == -EBUSY ? "binding the socket (the queue has another AF_XDP socket)"
             : rc == -EINVAL ? "binding the AF_XDP socket to queue CVIA_XDP_QUEUE (has the "
                               "interface that queue?)"
             : "creating the AF_XDP socket";
        return rc;
    }
    x->fd = xsk_socket__fd(x->xsk);
    /* the first half of the UMEM to the fill ring, the second to the TX pool */
    if (xsk_ring_prod__reserve(&x->fq, x->nrx, &idx) != x->nrx) {
        *why = "filling the fill ring";
        return -ENOBUFS;
    }
    for (unsigned i = 0; i < x->nrx; i++)
        *xsk_ring_prod__fill_addr(&x->fq, idx + i) = (uint64_t)i * XDP_CHUNK;
    xsk_ring_prod__submit(&x->fq, x->nrx);
    x->free_tx = malloc(x->ntx * sizeof(*x->free_tx));
    x->rx_taken = malloc(x->nrx * sizeof(*x->rx_taken));
    if (!x->free_tx || !x->rx_taken) {
        *why = "allocating";
        return -ENOMEM;
    }
    for (unsigned i = 0; i < x->ntx; i++)
        x->free_tx[i] = (uint64_t)(x->nrx + i) * XDP_CHUNK;
    x->nfree = x->ntx;
    return 0;
}

static void xdp_close(struct dg_ep *ep)
{
    struct xdp_link *x = xl(ep);

    if (!x)
        return;
    xdp_live_remove(x);
    if (x->xsk) {   /* what the kernel dropped: nothing, where the rings keep up */
        struct xdp_statistics st = { 0 };
        socklen_t l = sizeof(st);
        if (!getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &l))
            cvia_info(NET, "xdp: socket drops: rx %llu (rx ring full %llu, fill ring empty %llu), "
                      "invalid rx %llu, invalid tx %llu", (unsigned long long)st.rx_dropped,
                      (unsigned long long)st.rx_ring_full,
                      (unsigned long long)st.rx_fill_ring_empty_descs,
                      (unsigned long long)st.rx_invalid_descs,
                      (unsigned long long)st.tx_invalid_descs);
    }
    if (x->link_fd >= 0)   /* detaches the program */
        close(x->link_fd);
    if (x->prog_fd >= 0)
        close(x->prog_fd);
    if (x->xsk)
        xsk_socket__delete(x->xsk);
    if (x->umem)
        xsk_umem__delete(x->umem);
    if (x->map_fd >= 0)
        close(x->map_fd);
    if (x->area)
        munmap(x->area, x->area_bytes);
    free(x->free_tx);
    free(x->rx_taken);
    free(x->peer);
    free(x);
    ep->link_priv = NULL;
}

/* ---- eth standing in -------------------------------------------------- */

/* eth's ops under the name xdp (the boot keys and the logs stay the
 * provider's), with the datagram size of xdp's chunks, so that xdp and
 * eth ranks of a job cut the same segments. */
static struct dg_link_ops xdp_eth;
static pthread_once_t xdp_eth_once = PTHREAD_ONCE_INIT;
static char xdp_eth_why[96];

static size_t xdp_eth_room(struct dg_ep *ep)
{
    size_t r = cvia__eth_link.room(ep);
    return r < XDP_ROOM ? r : XDP_ROOM;
}

static void xdp_eth_describe(struct dg_ep *ep, char *buf, size_t cap)
{
    char e[200];

    cvia__eth_link.describe(ep, e, sizeof(e));
    snprintf(buf, cap, "eth's AF_PACKET socket in place of AF_XDP (%s): %s", xdp_eth_why, e);
}

static void xdp_eth_init(void)
{
    xdp_eth = cvia__eth_link;
    xdp_eth.name = "xdp";
    xdp_eth.room = xdp_eth_room;
    xdp_eth.describe = xdp_eth_describe;
}

/* ---- the link ------------------------------------------------------- */

static void xdp_addr(const unsigned char *mac, char *addr, size_t cap)
{
    snprintf(addr, cap, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
             mac[5]);
}

/* 1 when a rank of this host below ours is also on the network: it takes
 * the interface's queue, and this rank stands in with eth. */
static int xdp_not_first(const struct dg_ep *ep)
{
    if (ep->args.dynamic || !ep->args.same_host)
        return 0;
    for (int r = 0; r < ep->args.rank; r++)
        if (ep->args.same_host[r])
            return 1;
    return 0;
}

static int xdp_open(struct dg_ep *ep, char *addr, size_t cap)
{
    struct xdp_link *x = calloc(1, sizeof(*x));
    const char *why = "";
    int rc;

    if (!x)
        return -ENOMEM;
    x->fd = x->map_fd = x->prog_fd = x->link_fd = -1;
    ep->link_priv = x;
    xdp_live_add(x);
    if ((rc = cvia__param_load(&cvia__xdp_param_table, &x->cfg)))
        goto err;
    if (x->cfg.frames & (x->cfg.frames - 1)) {
        cvia_error(CONF, "CVIA_XDP_FRAMES=%ld: not a power of two", x->cfg.frames);
        rc = -CVIA_ECONFIG;
        goto err;
    }
    if ((rc = cvia__eth_iface(&x->nic)))
        goto err;
    if (!(x->peer = calloc((size_t)ep->args.size, sizeof(*x->peer)))) {
        rc = -ENOMEM;
        goto err;
    }
    if (xdp_not_first(ep)) {
        why = "a lower rank of this host has the queue";
        rc = -EBUSY;
        goto fallback;
    }
    if ((rc = xdp_socket(x, &why)) || (rc = xdp_attach_prog(ep, x, &why)))
        goto fallback;
    ep->rx_call = 0;   /* frames are read in place from the RX ring */
    xdp_addr(x->nic.mac, addr, cap);
    return 0;
fallback:
    if (!x->cfg.fallback) {
        cvia_error(NET, "xdp: %s on %s: %s (CVIA_XDP_FALLBACK=no)", why, x->nic.ifname,
                   strerror(-rc));
        goto err;
    }
    if (rc == -EBUSY && !strcmp(why, "a lower rank of this host has the queue"))
        cvia_info(NET, "xdp: %s of %s; this rank uses eth's AF_PACKET socket", why,
                  x->nic.ifname);
    else
        cvia_warn(NET, "xdp: %s on %s: %s; using eth's AF_PACKET socket instead "
                  "(CVIA_XDP_FALLBACK=no to fail)", why, x->nic.ifname, strerror(-rc));
    xdp_close(ep);
    pthread_once(&xdp_eth_once, xdp_eth_init);
    snprintf(xdp_eth_why, sizeof(xdp_eth_why), "%s", why);
    ep->link = &xdp_eth;
    return xdp_eth.open(ep, addr, cap);
err:
    xdp_close(ep);
    return rc;
}

static int xdp_attach(struct dg_ep *ep, int peer, const char *addr)
{
    unsigned m[ETH_ALEN];
    char end;

    if (sscanf(addr, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
               &end) != 6) {
        cvia_error(NET, "xdp: rank %d published a bad address '%s'", peer, addr);
        return -CVIA_EBOOT;
    }
    for (int i = 0; i < ETH_ALEN; i++)
        xl(ep)->peer[peer][i] = (unsigned char)m[i];
    return 0;
}

static size_t xdp_room(struct dg_ep *ep)
{
    size_t mtu = (size_t)xl(ep)->nic.mtu;
    return mtu < XDP_ROOM ? mtu : XDP_ROOM;
}

/* Chunks the kernel has sent from, back to the pool. */
static void xdp_reclaim(struct xdp_link *x)
{
    uint32_t idx;
    unsigned n = xsk_ring_cons__peek(&x->cq, x->ntx, &idx);

    for (unsigned i = 0; i < n; i++)
        x->free_tx[x->nfree++] = *xsk_ring_cons__comp_addr(&x->cq, idx + i);
    if (n)
        xsk_ring_cons__release(&x->cq, n);
}

static int xdp_send(struct dg_ep *ep, struct dg_out *out, int n)
{
    struct xdp_link *x = xl(ep);
    uint32_t idx;
    unsigned k;

    if (n > (int)ep->cfg.batch)
        n = (int)ep->cfg.batch;
    xdp_reclaim(x);
    k = (unsigned)n < x->nfree ? (unsigned)n : x->nfree;
    for (unsigned i = 0; i < k; i++) {   /* the engine never cuts past the room */
        size_t len = ETH_HLEN;
        for (int v = 0; v < out[i].iovcnt; v++)
            len += out[i].iov[v].iov_len;
        if (len > XDP_FRAME_MAX) {
            if (!i)
                return -EMSGSIZE;
            k = i;
        }
    }
    /* the ring takes all or nothing: ask for less until it fits */
    while (k && xsk_ring_prod__reserve(&x->tx, k, &idx) != k)
        k /= 2;
    for (unsigned i = 0; i < k; i++) {
        uint64_t a = x->free_tx[--x->nfree];
        unsigned char *p = xsk_umem__get_data(x->area, a);
        struct ethhdr *eh = (struct ethhdr *)(void *)p;
        size_t len = ETH_HLEN;
        struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);

        memcpy(eh->h_dest, x->peer[out[i].peer], ETH_ALEN);
        memcpy(eh->h_source, x->nic.mac, ETH_ALEN);
        eh->h_proto = htons((uint16_t)x->nic.ethertype);
        for (int v = 0; v < out[i].iovcnt; v++) {
            memcpy(p + len, out[i].iov[v].iov_base, out[i].iov[v].iov_len);
            len += out[i].iov[v].iov_len;
        }
        d->addr = a;
        d->len = (uint32_t)len;
        d->options = 0;
    }
    if (k)
        xsk_ring_prod__submit(&x->tx, k);
    /* Copy mode always wants the kick, zero-copy only when the driver
     * sleeps. In copy mode one kick sends at most 32 frames (the kernel's
     * TX_BATCH_SIZE) and answers EAGAIN while more wait: kick on, or the
     * rest would leave only at the next send, long after the engine
     * stamped them sent (spurious retransmissions). Bounded: EAGAIN also
     * means no send buffer, which waits for completions. */
    for (unsigned kicks = 0; xsk_ring_prod__needs_wakeup(&x->tx) && kicks <= k / 32 + 1;
         kicks++) {
        ssize_t rc = sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
        if (rc >= 0)
            break;
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            continue;
        /* frames the kernel did not take stay in the ring for the next kick */
        if (errno != EBUSY && errno != ENOBUFS && errno != ENETDOWN)
            return k ? (int)k : -errno;
        break;
    }
    return (int)k;
}

static int xdp_recv(struct dg_ep *ep, struct dg_in *in, int max)
{
    struct xdp_link *x = xl(ep);
    uint32_t idx;
    unsigned n = xsk_ring_cons__peek(&x->rx, (uint32_t)max, &idx);

    x->taken = n;
    for (unsigned i = 0; i < n; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
        uint64_t a = xsk_umem__add_offset_to_addr(d->addr);
        const unsigned char *p = xsk_umem__get_data(x->area, a);

        x->rx_taken[i] = xsk_umem__extract_addr(d->addr) & ~(uint64_t)(XDP_CHUNK - 1);
        if (d->len < ETH_HLEN) {
            in[i].data = p;
            in[i].len = 0;
            memset(in[i].from, 0, ETH_ALEN);
            continue;
        }
        in[i].data = p + ETH_HLEN;
        in[i].len = d->len - ETH_HLEN;
        memcpy(in[i].from, ((const struct ethhdr *)(const void *)p)->h_source, ETH_ALEN);
    }
    return (int)n;
}

static void xdp_release(struct dg_ep *ep, struct dg_in *in, int n)
{
    struct xdp_link *x = xl(ep);
    uint32_t idx;

    (void)in, (void)n;
    if (!x->taken)
        return;
    /* as many chunks went out of the fill ring as came in: they fit */
    if (xsk_ring_prod__reserve(&x->fq, x->taken, &idx) == x->taken) {
        for (unsigned i = 0; i < x->taken; i++)
            *xsk_ring_prod__fill_addr(&x->fq, idx + i) = x->rx_taken[i];
        xsk_ring_prod__submit(&x->fq, x->taken);
    }
    xsk_ring_cons__release(&x->rx, x->taken);
    x->taken = 0;
    if (xsk_ring_prod__needs_wakeup(&x->fq))
        recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

static int xdp_from_peer(struct dg_ep *ep, int peer, const struct dg_in *in)
{
    return !memcmp(in->from, xl(ep)->peer[peer], ETH_ALEN);
}

static int xdp_fd(struct dg_ep *ep)
{
    return xl(ep)->fd;   /* polls readable when the RX ring has a frame */
}

static void xdp_describe(struct dg_ep *ep, char *buf, size_t cap)
{
    struct xdp_link *x = xl(ep);

    snprintf(buf, cap, "EtherType 0x%04lx on %s (MTU %d), AF_XDP socket on queue %ld "
             "(%s XDP, %s), UMEM of %u frames read and written in place, need-wakeup",
             x->nic.ethertype, x->nic.ifname, x->nic.mtu, x->cfg.queue,
             x->generic ? "generic" : "native", x->zerocopy ? "zero-copy" : "copy mode",
             x->nrx + x->ntx);
}

/* Launcher-free: eth's address form (the frames are eth's). */
static void xdp_pack(struct dg_ep *ep, uint8_t net[8])
{
    net[0] = DG_NET_ETH;
    net[1] = 0;
    memcpy(net + 2, xl(ep)->nic.mac, ETH_ALEN);
}

static int xdp_unpack(const uint8_t net[8], char *addr, size_t cap)
{
    if (net[0] != DG_NET_ETH)
        return -1;
    xdp_addr(net + 2, addr, cap);
    return 0;
}

const struct dg_link_ops cvia__xdp_link = {
    .name = "xdp",
    .open = xdp_open,
    .attach = xdp_attach,
    .room = xdp_room,
    .send = xdp_send,
    .recv = xdp_recv,
    .release = xdp_release,
    .from_peer = xdp_from_peer,
    .fd = xdp_fd,
    .describe = xdp_describe,
    .close = xdp_close,
    .pack = xdp_pack,
    .unpack = xdp_unpack,
};

extern const struct cvia_prov_ops cvia__xdp_ops;

const struct cvia_prov_desc cvia_prov_xdp = {
    .name   = "xdp",
    .desc   = "reliable segmented datagrams in raw Ethernet frames through AF_XDP sockets",
    .scope  = CVIA_PROV_NET,
    .ops    = &cvia__xdp_ops,
    .params = &cvia__xdp_param_table,
};
