/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* tcp provider: parameters, addresses, the connection mesh, teardown. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "boot/boot.h"
#include "prov/tcp/tcp.h"
#include "util/log.h"
#include "util/param.h"
#include "util/clock.h"

static const struct cvia_param tcp_params[] = {
    { "IF", "", CVIA_PARAM_STRING, offsetof(struct tcp_cfg, ifname),
      "Network interface whose IPv4 addresses peers connect to (empty: every "
      "interface that is up, loopback last).", 0, 0, NULL },
    { "CONNECT_TIMEOUT", "30s", CVIA_PARAM_TIME, offsetof(struct tcp_cfg, connect_timeout),
      "Longest wait for the connections to all peers at cvia_init.", 0, 0, NULL },
    { "SNDBUF", "0", CVIA_PARAM_SIZE, offsetof(struct tcp_cfg, sndbuf),
      "Socket send and receive buffer size (0: the kernel's autotuning).", 0, 1L << 30, NULL },
    { NULL }
};

const struct cvia_param_table cvia__tcp_param_table = {
    .component = "tcp", .prefix = "TCP_", .params = tcp_params,
    .cfg_size = sizeof(struct tcp_cfg),
};

/* Wait for @events on @fd until @deadline. 1 ready, 0 timeout, -errno. */
static int tcp_wait(int fd, short events, double deadline)
{
    for (;;) {
        struct pollfd p = { fd, events, 0 };
        double left = deadline - cvia__clock_s();
        int rc;
        if (left <= 0)
            return 0;
        rc = poll(&p, 1, (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -errno;
        if (rc > 0)
            return 1;
    }
}

static int tcp_io_all(int fd, void *buf, size_t len, int out, double deadline)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = out ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        int rc = tcp_wait(fd, out ? POLLOUT : POLLIN, deadline);
        if (rc <= 0)
            return rc ? rc : -ETIMEDOUT;
    }
    return 0;
}

static void tcp_tune(struct cvia_prov_ep *ep, int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (ep->cfg.sndbuf > 0) {
        int b = (int)ep->cfg.sndbuf;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* "a.b.c.d:port,..." for the interfaces peers may reach us on. */
static int tcp_addresses(struct cvia_prov_ep *ep, int port, char *buf, size_t cap)
{
    struct ifaddrs *ifa, *i;
    size_t n = 0;
    int loop_too = 0;

    if (getifaddrs(&ifa) < 0)
        return -errno;
    for (int pass = 0; pass < 2; pass++) {   /* real interfaces first */
        for (i = ifa; i; i = i->ifa_next) {
            char ip[INET_ADDRSTRLEN];
            int is_loop;
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
                continue;
            if (ep->cfg.ifname[0] && strcmp(ep->cfg.ifname, i->ifa_name))
                continue;
            is_loop = !!(i->ifa_flags & IFF_LOOPBACK);
            if (is_loop != pass)
                continue;
            loop_too |= is_loop;
            inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, ip,
                      sizeof(ip));
            if (n + strlen(ip) + 8 >= cap)
                break;
            n += (size_t)snprintf(buf + n, cap - n, "%s%s:%d", n ? "," : "", ip, port);
        }
    }
    freeifaddrs(ifa);
    if (!n) {
        cvia_error(CORE, "tcp: no IPv4 address on %s to offer peers",
                   ep->cfg.ifname[0] ? ep->cfg.ifname : "any interface that is up");
        return -ENODEV;
    }
    (void)loop_too;
    return 0;
}

static int tcp_open(const struct cvia_prov_args *args, struct cvia_prov_ep **ep_p)
{
    struct cvia_prov_ep *ep = calloc(1, sizeof(*ep));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
    socklen_t sl = sizeof(sa);
    char key[32], addrs[1024];
    int rc, one = 1;

    if (!ep)
        return -ENOMEM;
    ep->args = *args;
    ep->listen_fd = -1;
    cvia_mlock_init(&ep->lock);
    cvia_mlock_init(&ep->rx_busy);
    if ((rc = cvia__param_load(&cvia__tcp_param_table, &ep->cfg)))
        goto err_free;
    if (!(ep->peers = calloc((size_t)args->size, sizeof(*ep->peers)))) {
        rc = -ENOMEM;
        goto err_free;
    }
    for (int p = 0; p < args->size; p++) {
        ep->peers[p].fd = -1;
        ep->nremote += !args->same_host[p];
    }
    ep->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ep->listen_fd < 0) {
        rc = -errno;
        cvia_error(CORE, "tcp: socket: %s", strerror(errno));
        goto err_free;
    }
    setsockopt(ep->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(ep->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(ep->listen_fd, args->size) < 0 ||
        getsockname(ep->listen_fd, (struct sockaddr *)&sa, &sl) < 0) {
        rc = -errno;
        cvia_error(CORE, "tcp: cannot listen: %s", strerror(errno));
        goto err_close;
    }
    if ((rc = tcp_addresses(ep, ntohs(sa.sin_port), addrs, sizeof(addrs))))
        goto err_close;
    snprintf(key, sizeof(key), "tcp.%d", args->rank);
    if ((rc = cvia__boot_put(args->boot, key, addrs)))
        goto err_close;
    *ep_p = ep;
    return 0;

err_close:
    close(ep->listen_fd);
err_free:
    free(ep->peers);
    free(ep);
    return rc;
}

/* Connect to @peer's published addresses, say hello. */
static int tcp_dial(struct cvia_prov_ep *ep, int peer, double deadline)
{
    char key[32], addrs[1024], *save = NULL;
    struct tcp_hello hello = { TCP_MAGIC, ep->args.jobid, ep->args.rank, 0 };
    int rc = -EHOSTUNREACH;

    snprintf(key, sizeof(key), "tcp.%d", peer);
    if ((rc = cvia__boot_get(ep->args.boot, key, addrs, sizeof(addrs)))) {
        cvia_error(CORE, "tcp: rank %d published no address", peer);
        return rc == -ENOENT ? -CVIA_EBOOT : rc;
    }
    for (char *a = strtok_r(addrs, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        struct sockaddr_in sa = { .sin_family = AF_INET };
        char *colon = strrchr(a, ':');
        int fd, err = 0;
        socklen_t el = sizeof(err);
        if (!colon)
            continue;
        *colon = '\0';
        if (inet_pton(AF_INET, a, &sa.sin_addr) != 1)
            continue;
        sa.sin_port = htons((uint16_t)atoi(colon + 1));
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
            rc = -errno;
            close(fd);
            continue;
        }
        if (tcp_wait(fd, POLLOUT, deadline) <= 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
            rc = err ? -err : -ETIMEDOUT;
            close(fd);
            continue;
        }
        if ((rc = tcp_io_all(fd, &hello, sizeof(hello), 1, deadline))) {
            close(fd);
            continue;
        }
        tcp_tune(ep, fd);
        ep->peers[peer].fd = fd;
        return 0;
    }
    cvia_error(CORE, "tcp: cannot connect to rank %d at %s: %s", peer, key, cvia_strerror(rc));
    return rc;
}

static int tcp_connect(struct cvia_prov_ep *ep)
{
    double deadline = cvia__clock_s() + ep->cfg.connect_timeout;
    int me = ep->args.rank, expect = 0, rc;

    /* the higher rank dials; a dial completes in the listener's backlog
     * even before that rank accepts, so this order cannot deadlock */
    for (int p = 0; p < me; p++)
        if (!ep->args.same_host[p] && (rc = tcp_dial(ep, p, deadline)))
            return rc;
    for (int p = me + 1; p < ep->args.size; p++)
        expect += !ep->args.same_host[p];
    while (expect > 0) {
        struct tcp_hello h;
        int fd;
        if ((rc = tcp_wait(ep->listen_fd, POLLIN, deadline)) <= 0) {
            cvia_error(CORE, "tcp: %d peer(s) did not connect within %gs", expect,
                       ep->cfg.connect_timeout);
            return rc ? rc : -ETIMEDOUT;
        }
        fd = accept4(ep->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            continue;
        if (tcp_io_all(fd, &h, sizeof(h), 0, deadline) || h.magic != TCP_MAGIC ||
            h.jobid != ep->args.jobid || h.rank <= me || h.rank >= ep->args.size ||
            ep->args.same_host[h.rank] || ep->peers[h.rank].fd >= 0) {
            cvia_warn(CORE, "tcp: refused a connection that is not from a rank of this "
                      "job expected here");
            close(fd);
            continue;
        }
        tcp_tune(ep, fd);
        ep->peers[h.rank].fd = fd;
        expect--;
    }
    return 0;
}

/* Every connection is made. One epoll set holds them all, so that a
 * waiter sleeps until any turns readable (a frame, or a peer's end of
 * stream) in one poll() on one descriptor (wait_fd); a connection closed
 * when its peer is gone leaves the set by itself. Without it (epoll
 * refused), waiters nap as before. */
static int tcp_ready(struct cvia_prov_ep *ep)
{
    close(ep->listen_fd);
    ep->listen_fd = -1;
    if (!ep->nremote)
        return 0;
    if ((ep->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        cvia_warn(NET, "tcp: epoll_create1: %s; blocked waits will nap", strerror(errno));
        return 0;
    }
    for (int p = 0; p < ep->args.size; p++) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)p };
        if (ep->peers[p].fd >= 0 && epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->peers[p].fd, &ev) < 0) {
            cvia_warn(NET, "tcp: epoll_ctl: %s; blocked waits will nap", strerror(errno));
            close(ep->epfd);
            ep->epfd = -1;
            break;
        }
    }
    return 0;
}

static int tcp_wait_fd(struct cvia_prov_ep *ep)
{
    return ep->epfd;
}

/* A waiter is about to sleep on the epoll set: nothing of tcp's is timed
 * (a dead peer shows as an end of stream, which wakes it), except frames
 * a full socket holds back, which progress must retry. The next progress
 * looks at the sockets, whatever its skip count. */
static double tcp_idle(struct cvia_prov_ep *ep)
{
    int pending = 0;

    CVIA_HINT_STORE(ep->idle, 0);
    for (int p = 0; p < ep->args.size && !pending; p++)
        pending = CVIA_HINT_LOAD(ep->peers[p].txq_head) != NULL;
    return pending ? 0 : 1e9;
}

static int tcp_close(struct cvia_prov_ep *ep, int clean)
{
    if (!ep)
        return 0;
    if (clean)
        tcp_send_bye(ep);
    for (int p = 0; p < ep->args.size; p++)
        if (ep->peers[p].fd >= 0)
            close(ep->peers[p].fd);
    if (ep->listen_fd >= 0)
        close(ep->listen_fd);
    if (ep->epfd >= 0)
        close(ep->epfd);
    free(ep->peers);
    free(ep);
    return 0;
}

static int tcp_reachable(struct cvia_prov_ep *ep, int peer)
{
    return peer >= 0 && peer < ep->args.size && ep->peers[peer].fd >= 0;
}

static int tcp_check_peers(struct cvia_prov_ep *ep)
{
    return tcp_progress(ep);   /* a dead peer shows as an end of stream */
}

static void tcp_gone(struct cvia_prov_ep *ep, int peer, int err)
{
    cvia_mlock_lock(&ep->rx_busy);
    if (ep->peers[peer].fd >= 0 || !ep->peers[peer].gone)
        tcp_peer_gone(ep, peer, err);
    cvia_mlock_unlock(&ep->rx_busy);
}

static void tcp_describe(char *buf, size_t cap)
{
    snprintf(buf, cap, "available: ranks on other hosts (CVIA_NET=tcp), one connection "
             "per pair, payload received straight into the receive buffer");
}

static void tcp_peer_info(struct cvia_prov_ep *ep, int peer, char *buf, size_t cap)
{
    snprintf(buf, cap, "tcp: one connection (fd %d), messages and one-sided operations "
             "framed with 48-byte headers", ep->peers[peer].fd);
}

static int tcp_mr_noop(struct cvia_prov_ep *ep, uint64_t key, const void *addr,
                       size_t len, unsigned access)
{
    return 0;   /* accesses are checked by the core's table on arrival */
}

static int tcp_mr_dereg_noop(struct cvia_prov_ep *ep, uint64_t key)
{
    return 0;
}

static int tcp_no_rndv(struct cvia_prov_ep *ep, struct cvia_xfer *x)
{
    return -ENOSYS;   /* tcp never announces a message without its bytes */
}

static const struct cvia_prov_ops tcp_ops = {
    .size        = sizeof(struct cvia_prov_ops),
    .open        = tcp_open,
    .connect     = tcp_connect,
    .ready       = tcp_ready,
    .close       = tcp_close,
    .reachable   = tcp_reachable,
    .send        = tcp_send,
    .progress    = tcp_progress,
    .check_peers = tcp_check_peers,
    .peer_gone   = tcp_gone,
    .describe    = tcp_describe,
    .cleanup     = cvia__prov_no_cleanup,
    .rndv_start  = tcp_no_rndv,
    .mr_reg      = tcp_mr_noop,
    .mr_dereg    = tcp_mr_dereg_noop,
    .write       = tcp_write,
    .read        = tcp_read,
    .peer_info   = tcp_peer_info,
    .wait_fd     = tcp_wait_fd,
    .idle        = tcp_idle,
};

const struct cvia_prov_desc cvia_prov_tcp = {
    .name   = "tcp",
    .desc   = "TCP between hosts: the baseline and the fallback",
    .scope  = CVIA_PROV_NET,
    .ops    = &tcp_ops,
    .params = &cvia__tcp_param_table,
};
