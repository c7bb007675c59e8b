/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */

/*
 * net_pingpong: a bare ping-pong between two hosts over the kernel's own
 * transports, the baseline of scripts/repro-mvia.sh (issue 7, paper 002's
 * "TCP/IP written with the socket library"):
 *
 *   tcp  a TCP stream (TCP_NODELAY), each message written and read whole
 *   udp  a connected UDP socket, each message cut into datagrams of at most
 *        --chunk bytes (default: what the path MTU carries, so IP never
 *        fragments)
 *   raw  AF_PACKET SOCK_DGRAM frames of EtherType 0x88B6 (IEEE 802 local
 *        experimental 2; corevia's eth provider uses 0x88B5, so the two never
 *        mix), each message cut into frames of at most the interface's MTU
 *
 * No reliability is added: udp and raw rely on the link losing nothing
 * (true of an idle veth pair with large socket buffers). A datagram that
 * does not come within --timeout seconds is an error, never a hang.
 *
 * Definitions are the OSU ones, as cvia-bench and osu_mpi use them:
 *   latency  half the round trip of a blocking ping-pong, mean over the
 *            timed iterations after warm-up, and p50/p99/min of the
 *            per-iteration half round trips (nearest rank)
 *   bw       the client sends a window of messages, then waits for a 4-byte
 *            ack (osu_bw); MB = 10^6 bytes
 * Iterations follow OSU: latency 10000 (+100 warm-up) up to 8 KiB, 1000
 * (+10) above; bw 100 (+10) up to 8 KiB, 20 (+2) above; window 64.
 *
 * The client tells the server the whole schedule (sizes, iterations, window,
 * chunk) at the start, so the server needs only --server and the transport;
 * it serves one client and exits. The client prints CSV with the columns of
 * `cvia-bench --csv`, one row per benchmark and size, as each completes.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define DEFAULT_PORT      47600
#define DEFAULT_ETHERTYPE 0x88B6
#define LARGE_MSG         8192
#define MAX_SIZES         128
#define MAX_MSG           (64u << 20)
#define HELLO_MAGIC       0x4e50504eu   /* "NPPN" */
#define READY_MAGIC       0x5944524eu
#define PROTO_VERSION     1
#define ACK_BYTES         4
#define RAW_MIN_PAYLOAD   46            /* Ethernet pads shorter payloads */

enum transport { T_TCP, T_UDP, T_RAW };
static const char *const tname[] = { "tcp", "udp", "raw" };

enum { B_LAT = 1, B_BW = 2 };

/* What the client asks of the server; also the first datagram (hello).
 * Both ends are this same program on the same machine type: host order. */
struct config {
    uint32_t magic;
    uint32_t version;
    uint32_t benches;          /* B_LAT | B_BW */
    uint32_t nsizes;
    uint32_t chunk;            /* datagram payload at most (udp, raw) */
    uint32_t window;
    uint32_t check;            /* fill and verify payloads */
    int32_t  iters;            /* 0: OSU default per size */
    int32_t  warmup;           /* -1: OSU default per size */
    uint32_t sizes[MAX_SIZES];
};

struct ready {
    uint32_t magic;
    uint32_t version;
    uint32_t chunk;            /* the server's limit, for information */
    uint32_t pad;
};

struct opts {
    enum transport t;
    int server;
    const char *peer;          /* client: host or MAC */
    const char *bind_addr;     /* server: address to listen on */
    int port;
    const char *iface;
    int ethertype;
    double timeout;            /* seconds without progress: error */
    int spin;
    size_t sockbuf;
    int verbose;
    struct config cfg;
};

static const char *prog = "net_pingpong";
static volatile sig_atomic_t stop_signal;

/* ---- small helpers ---------------------------------------------------- */

static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try --help)\n");
    exit(2);
}

static void note(const struct opts *o, const char *fmt, ...)
{
    va_list ap;
    if (!o->verbose)
        return;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(void)
{
    printf(
"Usage: net_pingpong --server [-t tcp|udp|raw] [OPTIONS]\n"
"       net_pingpong --client ADDR [-t tcp|udp|raw] [OPTIONS]\n"
"\n"
"A bare ping-pong over kernel TCP sockets, UDP sockets or raw Ethernet\n"
"frames (AF_PACKET, EtherType 0x88B6), for comparison with corevia's tcp,\n"
"udp and eth providers. Start the server first (or at the same time: the\n"
"client retries for --timeout seconds); the client sends the schedule,\n"
"measures and prints CSV on stdout with the columns of cvia-bench --csv:\n"
"  benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,\n"
"  latency_min_us,bandwidth_mb_s,msg_rate_per_s,buffers\n"
"The server serves one client, then exits 0.\n"
"\n"
"  latency  half the round trip of a blocking ping-pong: mean, p50, p99, min\n"
"  bw       a window of messages, then a 4-byte ack (osu_bw); MB = 10^6 B\n"
"\n"
"Roles and addresses:\n"
"  -S, --server          wait for one client\n"
"  -c, --client ADDR     connect to the server at ADDR: tcp and udp: an IPv4\n"
"                        address or host name; raw: the server interface's\n"
"                        MAC address (aa:bb:cc:dd:ee:ff)\n"
"  -t, --transport T     tcp, udp or raw [tcp]\n"
"  -p, --port N          TCP or UDP port [%d]\n"
"  -B, --bind ADDR       server: listen on this IPv4 address only [any]\n"
"  -I, --iface NAME      raw: the interface [the first one that is up, not\n"
"                        loopback, with an Ethernet address]\n"
"      --ethertype N     raw: EtherType, decimal or 0x hex [0x88B6]\n"
"\n"
"Schedule (client):\n"
"  -b, --bench LIST      latency, bw or all (latency,bw) [all]\n"
"  -s, --sizes LIST      comma-separated: SIZE, LO-HI (powers of two from\n"
"                        LO), LO-HI:+STEP (LO, LO+STEP, ...); units k, m\n"
"                        (powers of 1024) [32-64k]\n"
"  -i, --iters N         timed iterations per size [OSU's, see above]\n"
"  -w, --warmup N        untimed iterations before them [OSU's]\n"
"  -W, --window N        bw: messages per window [64]\n"
"      --chunk N         udp, raw: largest datagram payload [udp: path MTU\n"
"                        less 28 (IP and UDP headers); raw: the MTU]\n"
"      --check           fill every message with a pattern and verify it\n"
"                        (slower: not for timing)\n"
"\n"
"Both:\n"
"      --spin            poll without blocking (MSG_DONTWAIT) [block]\n"
"      --sockbuf BYTES   udp, raw: socket send and receive buffers (as root\n"
"                        past net.core.[rw]mem_max) [32m]; tcp: set only\n"
"                        when given (else the kernel autotunes)\n"
"      --timeout S       fail when nothing arrives for S seconds [10]\n"
"  -v, --verbose         say what is set up, on stderr\n"
"  -h, --help            this text\n"
"\n"
"Exit status: 0 done; 1 error (a lost datagram, a refused or silent peer:\n"
"said on stderr); 2 bad usage.\n", DEFAULT_PORT);
}

static int parse_ulong(const char *s, unsigned long long *v, int units)
{
    char *end;
    unsigned long long x;

    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    x = strtoull(s, &end, 0);
    if (errno || end == s)
        return -1;
    if (units && *end) {
        unsigned long long m = 1;
        switch (*end) {
        case 'k': case 'K': m = 1024ull; break;
        case 'm': case 'M': m = 1024ull * 1024; break;
        case 'g': case 'G': m = 1024ull * 1024 * 1024; break;
        case 'b': case 'B': m = 1; break;
        default: return -1;
        }
        if (x > ULLONG_MAX / m)
            return -1;
        x *= m;
        end++;
    }
    if (*end)
        return -1;
    *v = x;
    return 0;
}

static void add_size(struct config *c, unsigned long long v, const char *text)
{
    if (v == 0 || v > MAX_MSG)
        usage_error("--sizes: '%s': sizes are 1 to %u bytes", text, MAX_MSG);
    if (c->nsizes >= MAX_SIZES)
        usage_error("--sizes: at most %d sizes", MAX_SIZES);
    c->sizes[c->nsizes++] = (uint32_t)v;
}

static void parse_sizes(const char *text, struct config *c)
{
    char *copy = strdup(text), *save = NULL, *item;

    if (!copy)
        die("out of memory");
    c->nsizes = 0;
    for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(item, '-'), *colon;
        unsigned long long lo, hi, step = 0;

        if (!dash) {
            if (parse_ulong(item, &lo, 1))
                usage_error("--sizes: '%s' is not a size", item);
            add_size(c, lo, item);
            continue;
        }
        *dash = 0;
        colon = strchr(dash + 1, ':');
        if (colon) {
            *colon = 0;
            if (colon[1] != '+' || parse_ulong(colon + 2, &step, 1) || step == 0)
                usage_error("--sizes: after ':' expected +STEP, like 1k-64k:+1k");
        }
        if (parse_ulong(item, &lo, 1) || parse_ulong(dash + 1, &hi, 1) || lo == 0 || hi < lo)
            usage_error("--sizes: '%s-%s' is not a range LO-HI with 0 < LO <= HI", item, dash + 1);
        for (unsigned long long v = lo; v <= hi; v = step ? v + step : v * 2)
            add_size(c, v, item);
    }
    free(copy);
    if (c->nsizes == 0)
        usage_error("--sizes: no sizes in '%s'", text);
}

static long iters_for(const struct config *c, uint32_t bench, uint32_t size)
{
    if (c->iters > 0)
        return c->iters;
    if (bench == B_LAT)
        return size <= LARGE_MSG ? 10000 : 1000;
    return size <= LARGE_MSG ? 100 : 20;
}

static long warmup_for(const struct config *c, uint32_t bench, uint32_t size)
{
    if (c->warmup >= 0)
        return c->warmup;
    if (bench == B_LAT)
        return size <= LARGE_MSG ? 100 : 10;
    return size <= LARGE_MSG ? 10 : 2;
}

/* ---- the link ------------------------------------------------------------ */

struct link {
    enum transport t;
    int fd;
    int spin;
    double timeout;
    size_t chunk;                   /* datagram payload at most */
    struct sockaddr_ll peer_ll;     /* raw: where frames go */
    unsigned char peer_mac[ETH_ALEN];
    int have_peer;
    const char *who;                /* "server" or "client", for errors */
};

static void set_timeout(int fd, double s)
{
    struct timeval tv = { .tv_sec = (time_t)s, .tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6) };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void set_bufs(const struct opts *o, int fd)
{
    int v = o->sockbuf > INT_MAX / 2 ? INT_MAX / 2 : (int)o->sockbuf, got = 0;
    socklen_t len = sizeof(got);

    if (!o->sockbuf)
        return;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len);
    note(o, "socket buffers: asked %d bytes, receive buffer is %d", v, got);
    if ((size_t)got < o->sockbuf)
        fprintf(stderr, "%s: warning: receive buffer %d bytes, not the %zu asked "
                "(not root? net.core.rmem_max); a window may overflow it\n", prog, got, o->sockbuf);
}

/* Send exactly @len bytes of one message. */
static void send_msg(struct link *l, const unsigned char *buf, size_t len)
{
    if (l->t == T_TCP) {
        size_t done = 0;
        while (done < len) {
            ssize_t n = send(l->fd, buf + done, len - done, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    die("%s: send blocked for %.0f s: the peer reads nothing", l->who, l->timeout);
                die("%s: send: %s", l->who, strerror(errno));
            }
            done += (size_t)n;
        }
        return;
    }
    double full_since = 0;
    for (size_t off = 0; off < len || (len == 0 && off == 0);) {
        size_t n = len - off < l->chunk ? len - off : l->chunk;
        ssize_t r;
        if (l->t == T_UDP)
            r = send(l->fd, buf + off, n, 0);
        else
            r = sendto(l->fd, buf + off, n, 0, (const struct sockaddr *)&l->peer_ll, sizeof(l->peer_ll));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS || errno == EAGAIN) {   /* queue full: retry a while */
                double t = now_s();
                if (full_since == 0)
                    full_since = t;
                if (t - full_since < l->timeout)
                    continue;
                die("%s: the send queue stayed full for %.0f s", l->who, l->timeout);
            }
            if (errno == ECONNREFUSED)
                die("%s: the peer's port is closed (it exited or never started)", l->who);
            die("%s: send of a %zu-byte datagram: %s", l->who, n, strerror(errno));
        }
        if ((size_t)r != n)
            die("%s: sent %zd of a %zu-byte datagram", l->who, r, n);
        full_since = 0;
        off += n;
        if (len == 0)
            break;
    }
}

/* One datagram into @buf (room @cap); returns its length. Waits at most
 * l->timeout. Drops frames from anyone but the peer (raw). */
static size_t recv_dgram(struct link *l, unsigned char *buf, size_t cap, struct sockaddr_ll *from_out)
{
    double deadline = 0;
    int flags = MSG_TRUNC | (l->spin ? MSG_DONTWAIT : 0);

    for (;;) {
        struct sockaddr_ll from;
        socklen_t flen = sizeof(from);
        ssize_t r;

        if (l->t == T_RAW)
            r = recvfrom(l->fd, buf, cap, flags, (struct sockaddr *)&from, &flen);
        else
            r = recv(l->fd, buf, cap, flags);
        if (r < 0) {
            if (errno == EINTR && !stop_signal)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (l->spin) {
                    double t = now_s();
                    if (deadline == 0)
                        deadline = t + l->timeout;
                    if (t < deadline)
                        continue;
                }
                die("%s: nothing arrived for %.0f s (a datagram lost? %s has no "
                    "retransmission; or the peer stopped)", l->who, l->timeout, tname[l->t]);
            }
            if (errno == ECONNREFUSED)
                die("%s: the peer's port is closed (it exited or never started)", l->who);
            die("%s: receive: %s", l->who, strerror(errno));
        }
        if (l->t == T_RAW) {
            if (from.sll_pkttype == PACKET_OUTGOING)
                continue;
            if (l->have_peer && memcmp(from.sll_addr, l->peer_mac, ETH_ALEN))
                continue;   /* someone else's frame of our EtherType */
            if (from_out)
                *from_out = from;
        }
        return (size_t)r;
    }
}

/* A hello (or its answer) said twice arrives in the data phase: skip it.
 * @buf holds at least its first 4 bytes, @len is its real length. */
static int is_handshake(const unsigned char *buf, size_t len)
{
    uint32_t m;
    if (len != sizeof(struct config) && len != sizeof(struct ready))
        return 0;
    memcpy(&m, buf, sizeof(m));
    return m == HELLO_MAGIC || m == READY_MAGIC;
}

/* Receive exactly one message of @len bytes into @buf. */
static void recv_msg(struct link *l, unsigned char *buf, size_t len)
{
    if (l->t == T_TCP) {
        size_t done = 0;
        double deadline = 0;
        while (done < len) {
            ssize_t n = recv(l->fd, buf + done, len - done, l->spin ? MSG_DONTWAIT : MSG_WAITALL);
            if (n == 0)
                die("%s: the peer closed the connection", l->who);
            if (n < 0) {
                if (errno == EINTR && !stop_signal)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    double t = now_s();
                    if (l->spin && deadline == 0)
                        deadline = t + l->timeout;
                    if (l->spin && t < deadline)
                        continue;
                    die("%s: nothing arrived for %.0f s (the peer stopped?)", l->who, l->timeout);
                }
                die("%s: receive: %s", l->who, strerror(errno));
            }
            done += (size_t)n;
            deadline = 0;
        }
        return;
    }
    for (size_t off = 0; off < len || (len == 0 && off == 0);) {
        size_t want = len - off < l->chunk ? len - off : l->chunk;
        size_t got = recv_dgram(l, buf + off, want, NULL);
        if (got != want) {
            if (want >= 4 && is_handshake(buf + off, got))
                continue;   /* a late duplicate of the handshake */
            /* Ethernet pads payloads shorter than 46 bytes on real NICs */
            if (!(l->t == T_RAW && want < RAW_MIN_PAYLOAD && got == RAW_MIN_PAYLOAD))
                die("%s: expected a %zu-byte datagram, got %zu bytes (out of step: "
                    "a datagram lost or from an earlier run?)", l->who, want, got);
        }
        off += want;
        if (len == 0)
            break;
    }
}

/* ---- payload check ------------------------------------------------------ */

static void fill(unsigned char *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(seed * 31u + i * 7u);
}

static void verify(const struct link *l, const unsigned char *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (unsigned char)(seed * 31u + i * 7u))
            die("%s: --check: byte %zu of a %zu-byte message is wrong", l->who, i, len);
}

/* ---- setup ------------------------------------------------------------- */

static int iface_mtu(int fd, const char *name)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    if (ioctl(fd, SIOCGIFMTU, &ifr))
        return -1;
    return ifr.ifr_mtu;
}

/* The interface for raw frames: --iface, or the first that is up, not
 * loopback, and has an Ethernet address. */
static void pick_iface(const struct opts *o, char *name, size_t cap, int *ifindex, unsigned char *mac,
                       int *mtu)
{
    struct if_nameindex *ni = if_nameindex(), *i;
    int fd = socket(AF_INET, SOCK_DGRAM, 0), found = 0;

    if (!ni || fd < 0)
        die("cannot list network interfaces: %s", strerror(errno));
    for (i = ni; i->if_name && !found; i++) {
        struct ifreq ifr;
        if (o->iface && strcmp(o->iface, i->if_name))
            continue;
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->if_name);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) || !(ifr.ifr_flags & IFF_UP) || (ifr.ifr_flags & IFF_LOOPBACK))
            continue;
        if (ioctl(fd, SIOCGIFHWADDR, &ifr) || ifr.ifr_hwaddr.sa_family != 1 /* ARPHRD_ETHER */)
            continue;
        memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
        snprintf(name, cap, "%s", i->if_name);
        *ifindex = (int)i->if_index;
        *mtu = iface_mtu(fd, i->if_name);
        found = 1;
    }
    if_freenameindex(ni);
    close(fd);
    if (!found) {
        if (o->iface)
            die("--iface %s: no such Ethernet interface that is up", o->iface);
        die("raw: no Ethernet interface that is up (give --iface)");
    }
}

static int parse_mac(const char *s, unsigned char *mac)
{
    unsigned v[ETH_ALEN];
    char tail;
    if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
        return -1;
    for (int i = 0; i < ETH_ALEN; i++) {
        if (v[i] > 255)
            return -1;
        mac[i] = (unsigned char)v[i];
    }
    return 0;
}

static void resolve(const struct opts *o, const char *host, struct sockaddr_in *sa)
{
    struct addrinfo hints, *res = NULL;
    int rc;
    char port[16];

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    hints.ai_socktype = o->t == T_TCP ? SOCK_STREAM : SOCK_DGRAM;
    hints.ai_flags = host ? 0 : AI_PASSIVE;
    snprintf(port, sizeof(port), "%d", o->port);
    if ((rc = getaddrinfo(host, port, &hints, &res)) || !res)
        die("%s: %s", host ? host : "(any)", gai_strerror(rc));
    memcpy(sa, res->ai_addr, sizeof(*sa));
    freeaddrinfo(res);
}

/* udp: the largest datagram payload the connected path carries unfragmented */
static size_t udp_path_chunk(int fd)
{
    int mtu = 0;
    socklen_t len = sizeof(mtu);
    if (getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) || mtu < 68)
        return 1472;
    return (size_t)mtu - 28;
}

static void tcp_setup(const struct opts *o, struct link *l)
{
    int one = 1;
    struct sockaddr_in sa;

    resolve(o, o->server ? o->bind_addr : o->peer, &sa);
    if (o->server) {
        int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct timeval tv = { .tv_sec = (time_t)o->timeout };
        fd_set rd;
        if (lfd < 0)
            die("socket: %s", strerror(errno));
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
            die("tcp: cannot listen on port %d: %s", o->port, strerror(errno));
        note(o, "tcp: listening on port %d", o->port);
        FD_ZERO(&rd);
        FD_SET(lfd, &rd);
        if (select(lfd + 1, &rd, NULL, NULL, &tv) <= 0)
            die("server: no client came within %.0f s", o->timeout);
        if ((l->fd = accept(lfd, NULL, NULL)) < 0)
            die("accept: %s", strerror(errno));
        close(lfd);
    } else {
        double deadline = now_s() + o->timeout;
        for (;;) {
            if ((l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
                die("socket: %s", strerror(errno));
            if (connect(l->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                break;
            if ((errno != ECONNREFUSED && errno != ENETUNREACH && errno != EHOSTUNREACH) ||
                now_s() > deadline)
                die("tcp: cannot connect to %s port %d: %s", o->peer, o->port, strerror(errno));
            close(l->fd);
            usleep(20000);
        }
    }
    setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (o->sockbuf)
        set_bufs(o, l->fd);
}

static void udp_setup(const struct opts *o, struct link *l)
{
    struct sockaddr_in sa;

    if ((l->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        die("socket: %s", strerror(errno));
    set_bufs(o, l->fd);
    resolve(o, o->server ? o->bind_addr : o->peer, &sa);
    if (o->server) {
        int one = 1;
        setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)))
            die("udp: cannot bind port %d: %s", o->port, strerror(errno));
        note(o, "udp: bound to port %d", o->port);
    } else if (connect(l->fd, (struct sockaddr *)&sa, sizeof(sa))) {
        die("udp: connect to %s port %d: %s", o->peer, o->port, strerror(errno));
    }
}

static void raw_setup(const struct opts *o, struct link *l, int *mtu)
{
    char name[IF_NAMESIZE];
    int ifindex, one = 1;
    unsigned char mac[ETH_ALEN];
    struct sockaddr_ll sll;

    pick_iface(o, name, sizeof(name), &ifindex, mac, mtu);
    if ((l->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons((uint16_t)o->ethertype))) < 0) {
        if (errno == EPERM)
            die("raw: AF_PACKET needs CAP_NET_RAW (run as root)");
        die("raw: socket(AF_PACKET): %s", strerror(errno));
    }
    memset(&sll, 0, sizeof(sll));
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons((uint16_t)o->ethertype);
    sll.sll_ifindex = ifindex;
    if (bind(l->fd, (struct sockaddr *)&sll, sizeof(sll)))
        die("raw: bind to %s: %s", name, strerror(errno));
    setsockopt(l->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));  /* else filtered */
    set_bufs(o, l->fd);
    l->peer_ll = sll;
    l->peer_ll.sll_halen = ETH_ALEN;
    note(o, "raw: %s (MTU %d), MAC %02x:%02x:%02x:%02x:%02x:%02x, EtherType 0x%04x", name, *mtu,
         mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], o->ethertype);
    if (!o->server) {
        if (parse_mac(o->peer, l->peer_mac))
            usage_error("raw: --client wants the server's MAC address, like 02:00:00:00:00:01, "
                        "not '%s'", o->peer);
        memcpy(l->peer_ll.sll_addr, l->peer_mac, ETH_ALEN);
        l->have_peer = 1;
    }
}

/* ---- the server ---------------------------------------------------------- */

static void serve(const struct opts *o, struct link *l, int mtu)
{
    struct config c;
    struct ready rdy = { READY_MAGIC, PROTO_VERSION, 0, 0 };
    unsigned char *buf;
    uint32_t maxsz = ACK_BYTES;

    /* the hello: the schedule. Datagrams: from whoever says hello first;
     * the rest of the run is with that peer alone. */
    if (l->t == T_TCP) {
        recv_msg(l, (unsigned char *)&c, sizeof(c));
    } else {
        struct sockaddr_storage from;
        socklen_t flen;
        for (;;) {
            ssize_t r;
            flen = sizeof(from);
            r = recvfrom(l->fd, &c, sizeof(c), MSG_TRUNC, (struct sockaddr *)&from, &flen);
            if (r < 0) {
                if (errno == EINTR && !stop_signal)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    die("server: no client came within %.0f s", o->timeout);
                die("server: receive: %s", strerror(errno));
            }
            if (l->t == T_RAW && ((struct sockaddr_ll *)&from)->sll_pkttype == PACKET_OUTGOING)
                continue;
            if ((size_t)r == sizeof(c) && c.magic == HELLO_MAGIC)
                break;
            note(o, "ignored a %zd-byte datagram that is not a hello", r);
        }
        if (l->t == T_UDP) {
            if (connect(l->fd, (struct sockaddr *)&from, flen))
                die("udp: connect to the client: %s", strerror(errno));
        } else {
            const struct sockaddr_ll *ll = (const struct sockaddr_ll *)&from;
            memcpy(l->peer_mac, ll->sll_addr, ETH_ALEN);
            memcpy(l->peer_ll.sll_addr, ll->sll_addr, ETH_ALEN);
            l->have_peer = 1;
            note(o, "raw: client %02x:%02x:%02x:%02x:%02x:%02x", l->peer_mac[0], l->peer_mac[1],
                 l->peer_mac[2], l->peer_mac[3], l->peer_mac[4], l->peer_mac[5]);
        }
    }
    if (c.magic != HELLO_MAGIC || c.version != PROTO_VERSION)
        die("server: the client is not a net_pingpong of this version");
    if (c.nsizes == 0 || c.nsizes > MAX_SIZES || c.window == 0 || c.chunk == 0)
        die("server: the client's schedule is malformed");
    for (uint32_t i = 0; i < c.nsizes; i++) {
        if (c.sizes[i] == 0 || c.sizes[i] > MAX_MSG)
            die("server: the client's schedule is malformed");
        if (c.sizes[i] > maxsz)
            maxsz = c.sizes[i];
    }
    if (l->t != T_TCP)
        l->chunk = c.chunk;
    if (l->t == T_RAW && mtu > 0 && c.chunk > (uint32_t)mtu)
        die("server: the client's frames (%u bytes) do not fit this interface's MTU %d", c.chunk, mtu);
    rdy.chunk = c.chunk;
    send_msg(l, (const unsigned char *)&rdy, sizeof(rdy));
    note(o, "serving %u sizes, window %u, chunk %u", c.nsizes, c.window, c.chunk);

    if (!(buf = malloc(maxsz)))
        die("out of memory");
    memset(buf, 0, maxsz);
    for (uint32_t bench = B_LAT; bench <= B_BW; bench <<= 1) {
        if (!(c.benches & bench))
            continue;
        for (uint32_t i = 0; i < c.nsizes; i++) {
            size_t sz = c.sizes[i];
            long n = warmup_for(&c, bench, c.sizes[i]) + iters_for(&c, bench, c.sizes[i]);
            for (long it = 0; it < n; it++) {
                if (bench == B_LAT) {
                    recv_msg(l, buf, sz);
                    if (c.check) {
                        verify(l, buf, sz, (uint32_t)it);
                        fill(buf, sz, (uint32_t)it + 1);
                    }
                    send_msg(l, buf, sz);
                } else {
                    for (uint32_t w = 0; w < c.window; w++) {
                        recv_msg(l, buf, sz);
                        if (c.check)
                            verify(l, buf, sz, (uint32_t)(it * c.window + w));
                    }
                    send_msg(l, buf, ACK_BYTES);
                }
            }
        }
    }
    free(buf);
}

/* ---- the client ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *sorted, long n, double p)   /* nearest rank */
{
    long r = (long)(p / 100.0 * (double)n + 0.999999999);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return sorted[r - 1];
}

static void handshake(const struct opts *o, struct link *l)
{
    struct ready rdy;

    if (l->t == T_TCP) {
        send_msg(l, (const unsigned char *)&o->cfg, sizeof(o->cfg));
        recv_msg(l, (unsigned char *)&rdy, sizeof(rdy));
    } else {
        /* The server may not be up yet: say hello every 200 ms until it
         * answers, within --timeout. */
        double deadline = now_s() + o->timeout;
        for (;;) {
            size_t got;
            int flags = MSG_TRUNC | MSG_DONTWAIT;
            ssize_t r;
            double until = now_s() + 0.2;
            if (l->t == T_UDP)
                r = send(l->fd, &o->cfg, sizeof(o->cfg), 0);
            else
                r = sendto(l->fd, &o->cfg, sizeof(o->cfg), 0, (const struct sockaddr *)&l->peer_ll,
                           sizeof(l->peer_ll));
            if (r < 0 && errno != ECONNREFUSED && errno != EINTR && errno != ENOBUFS && errno != EAGAIN)
                die("client: sending the hello: %s", strerror(errno));
            got = 0;
            while (now_s() < until) {
                struct sockaddr_ll from;
                socklen_t flen = sizeof(from);
                r = l->t == T_RAW ? recvfrom(l->fd, &rdy, sizeof(rdy), flags, (struct sockaddr *)&from, &flen)
                                  : recv(l->fd, &rdy, sizeof(rdy), flags);
                if (r < 0) {
                    if (errno == ECONNREFUSED || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                        usleep(1000);
                        continue;
                    }
                    die("client: receive: %s", strerror(errno));
                }
                if (l->t == T_RAW && (from.sll_pkttype == PACKET_OUTGOING ||
                                      memcmp(from.sll_addr, l->peer_mac, ETH_ALEN)))
                    continue;
                got = (size_t)r;
                if (got == sizeof(rdy) && rdy.magic == READY_MAGIC)
                    break;
                got = 0;
            }
            if (got)
                break;
            if (now_s() > deadline)
                die("client: no %s server answered at %s within %.0f s", tname[l->t], o->peer, o->timeout);
        }
    }
    if (rdy.magic != READY_MAGIC || rdy.version != PROTO_VERSION)
        die("client: the server is not a net_pingpong of this version");
}

static void client(const struct opts *o, struct link *l)
{
    const struct config *c = &o->cfg;
    uint32_t maxsz = ACK_BYTES;
    unsigned char *buf;
    double *samples;
    long maxit = 1;

    handshake(o, l);
    for (uint32_t i = 0; i < c->nsizes; i++) {
        if (c->sizes[i] > maxsz)
            maxsz = c->sizes[i];
        if (iters_for(c, B_LAT, c->sizes[i]) > maxit)
            maxit = iters_for(c, B_LAT, c->sizes[i]);
    }
    buf = malloc(maxsz);
    samples = malloc((size_t)maxit * sizeof(*samples));
    if (!buf || !samples)
        die("out of memory");
    memset(buf, 0, maxsz);
    printf("benchmark,size_bytes,iterations,latency_us,latency_p50_us,latency_p99_us,"
           "latency_min_us,bandwidth_mb_s,msg_rate_per_s,buffers\n");
    fflush(stdout);

    for (uint32_t bench = B_LAT; bench <= B_BW; bench <<= 1) {
        if (!(c->benches & bench))
            continue;
        for (uint32_t i = 0; i < c->nsizes; i++) {
            size_t sz = c->sizes[i];
            long warm = warmup_for(c, bench, c->sizes[i]), iters = iters_for(c, bench, c->sizes[i]);
            if (bench == B_LAT) {
                double sum = 0;
                for (long it = 0; it < warm + iters; it++) {
                    double t0, t1;
                    if (c->check)
                        fill(buf, sz, (uint32_t)it);
                    t0 = now_s();
                    send_msg(l, buf, sz);
                    recv_msg(l, buf, sz);
                    t1 = now_s();
                    if (c->check)
                        verify(l, buf, sz, (uint32_t)it + 1);
                    if (it >= warm) {
                        samples[it - warm] = (t1 - t0) * 1e6 / 2;
                        sum += samples[it - warm];
                    }
                }
                qsort(samples, (size_t)iters, sizeof(*samples), cmp_double);
                printf("latency,%zu,%ld,%.4f,%.4f,%.4f,%.4f,,,1\n", sz, iters, sum / (double)iters,
                       pct(samples, iters, 50), pct(samples, iters, 99), samples[0]);
            } else {
                double t0 = 0, t1;
                for (long it = 0; it < warm + iters; it++) {
                    if (it == warm)
                        t0 = now_s();
                    for (uint32_t w = 0; w < c->window; w++) {
                        if (c->check)
                            fill(buf, sz, (uint32_t)(it * c->window + w));
                        send_msg(l, buf, sz);
                    }
                    recv_msg(l, buf, ACK_BYTES);
                }
                t1 = now_s();
                double msgs = (double)iters * c->window;
                printf("bw,%zu,%ld,,,,,%.3f,%.1f,1\n", sz, iters, msgs * (double)sz / (t1 - t0) / 1e6,
                       msgs / (t1 - t0));
            }
            fflush(stdout);
        }
    }
    free(buf);
    free(samples);
}

/* ---- main ----------------------------------------------------------------- */

static void on_signal(int sig)
{
    stop_signal = sig;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "server", no_argument, NULL, 'S' },      { "client", required_argument, NULL, 'c' },
        { "transport", required_argument, NULL, 't' }, { "port", required_argument, NULL, 'p' },
        { "bind", required_argument, NULL, 'B' },  { "iface", required_argument, NULL, 'I' },
        { "ethertype", required_argument, NULL, 'E' }, { "bench", required_argument, NULL, 'b' },
        { "sizes", required_argument, NULL, 's' }, { "iters", required_argument, NULL, 'i' },
        { "warmup", required_argument, NULL, 'w' }, { "window", required_argument, NULL, 'W' },
        { "chunk", required_argument, NULL, 'C' }, { "check", no_argument, NULL, 'K' },
        { "spin", no_argument, NULL, 'P' },        { "sockbuf", required_argument, NULL, 'F' },
        { "timeout", required_argument, NULL, 'T' }, { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 }
    };
    struct opts o;
    struct link l;
    unsigned long long v;
    int opt, sockbuf_given = 0, mtu = 0;
    unsigned long long chunk = 0;
    struct sigaction sa;

    memset(&o, 0, sizeof(o));
    memset(&l, 0, sizeof(l));
    o.t = T_TCP;
    o.port = DEFAULT_PORT;
    o.ethertype = DEFAULT_ETHERTYPE;
    o.timeout = 10;
    o.sockbuf = 32u << 20;
    o.cfg.magic = HELLO_MAGIC;
    o.cfg.version = PROTO_VERSION;
    o.cfg.benches = B_LAT | B_BW;
    o.cfg.window = 64;
    o.cfg.warmup = -1;
    parse_sizes("32-64k", &o.cfg);

    while ((opt = getopt_long(argc, argv, "Sc:t:p:B:I:b:s:i:w:W:vh", lo, NULL)) != -1) {
        switch (opt) {
        case 'S': o.server = 1; break;
        case 'c': o.peer = optarg; break;
        case 't':
            if (!strcmp(optarg, "tcp")) o.t = T_TCP;
            else if (!strcmp(optarg, "udp")) o.t = T_UDP;
            else if (!strcmp(optarg, "raw") || !strcmp(optarg, "eth")) o.t = T_RAW;
            else usage_error("--transport '%s': tcp, udp or raw", optarg);
            break;
        case 'p':
            if (parse_ulong(optarg, &v, 0) || v == 0 || v > 65535)
                usage_error("--port '%s': 1 to 65535", optarg);
            o.port = (int)v;
            break;
        case 'B': o.bind_addr = optarg; break;
        case 'I': o.iface = optarg; break;
        case 'E':
            if (parse_ulong(optarg, &v, 0) || v < 0x600 || v > 0xffff)
                usage_error("--ethertype '%s': 0x0600 to 0xffff", optarg);
            o.ethertype = (int)v;
            break;
        case 'b':
            if (!strcmp(optarg, "latency")) o.cfg.benches = B_LAT;
            else if (!strcmp(optarg, "bw")) o.cfg.benches = B_BW;
            else if (!strcmp(optarg, "all") || !strcmp(optarg, "latency,bw") || !strcmp(optarg, "bw,latency"))
                o.cfg.benches = B_LAT | B_BW;
            else usage_error("--bench '%s': latency, bw or all", optarg);
            break;
        case 's': parse_sizes(optarg, &o.cfg); break;
        case 'i':
            if (parse_ulong(optarg, &v, 0) || v == 0 || v > 10000000)
                usage_error("--iters '%s': 1 to 10000000", optarg);
            o.cfg.iters = (int32_t)v;
            break;
        case 'w':
            if (parse_ulong(optarg, &v, 0) || v > 10000000)
                usage_error("--warmup '%s': 0 to 10000000", optarg);
            o.cfg.warmup = (int32_t)v;
            break;
        case 'W':
            if (parse_ulong(optarg, &v, 0) || v == 0 || v > 4096)
                usage_error("--window '%s': 1 to 4096", optarg);
            o.cfg.window = (uint32_t)v;
            break;
        case 'C':
            if (parse_ulong(optarg, &chunk, 1) || chunk < 64 || chunk > 65507)
                usage_error("--chunk '%s': 64 to 65507 bytes", optarg);
            break;
        case 'K': o.cfg.check = 1; break;
        case 'P': o.spin = 1; break;
        case 'F':
            if (parse_ulong(optarg, &v, 1) || v > (1ull << 30))
                usage_error("--sockbuf '%s': 0 to 1g", optarg);
            o.sockbuf = (size_t)v;
            sockbuf_given = 1;
            break;
        case 'T': {
            char *end;
            errno = 0;
            o.timeout = strtod(optarg, &end);
            if (errno || *end || !(o.timeout >= 0.1 && o.timeout <= 86400))
                usage_error("--timeout '%s': 0.1 to 86400 seconds", optarg);
            break;
        }
        case 'v': o.verbose = 1; break;
        case 'h': usage(); return 0;
        default: usage_error("bad option");
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (o.server == !!o.peer)
        usage_error("give either --server or --client ADDR");
    if (o.server && o.bind_addr && o.t == T_RAW)
        usage_error("--bind is for tcp and udp");
    if (o.t == T_TCP && !sockbuf_given)
        o.sockbuf = 0;   /* let TCP autotune */

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    l.t = o.t;
    l.spin = o.spin;
    l.timeout = o.timeout;
    l.who = o.server ? "server" : "client";
    switch (o.t) {
    case T_TCP: tcp_setup(&o, &l); break;
    case T_UDP: udp_setup(&o, &l); break;
    case T_RAW: raw_setup(&o, &l, &mtu); break;
    }

    if (o.t == T_UDP && !o.server)
        l.chunk = chunk ? chunk : udp_path_chunk(l.fd);
    else if (o.t == T_RAW && !o.server) {
        if (chunk && (int)chunk > mtu)
            usage_error("--chunk %llu: more than the MTU %d of the interface", chunk, mtu);
        l.chunk = chunk ? chunk : (size_t)mtu;
    } else
        l.chunk = 65507;   /* the server learns it from the hello */
    if (!o.server) {
        o.cfg.chunk = o.t == T_TCP ? 65507 : (uint32_t)l.chunk;
        note(&o, "%s client: chunk %zu bytes, %u sizes", tname[o.t], l.chunk, o.cfg.nsizes);
    }
    set_timeout(l.fd, o.timeout);

    if (o.server) {
        serve(&o, &l, mtu);
    } else {
        client(&o, &l);
    }
    if (stop_signal)
        die("stopped by signal %d", (int)stop_signal);
    close(l.fd);
    return 0;
}
