/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The kernel TCP stream analyze measures with, and `cvia-affinity stream`,
 * the same thing as a command for scripts (scripts/affinity-eval.sh); with
 * --transport corevia the command runs the stream of aff_cstream.c. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "aff.h"
#include "aff_stream.h"
#include "util/param.h"

#define SUB "stream"

enum { OPT_TRANSPORT = 256, OPT_SEND_CPU };

static int resolve(const char *addr, int port, int passive, struct sockaddr_storage *ss,
                   socklen_t *len)
{
    struct addrinfo hints = { 0 }, *ai;
    char ps[16];
    int rc;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    snprintf(ps, sizeof(ps), "%d", port);
    if ((rc = getaddrinfo(addr, ps, &hints, &ai)))
        return -EINVAL;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int aff_stream_listen(const char *addr, int port, int *port_out)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1, rc;

    if ((rc = resolve(addr, port, 1, &ss, &len)))
        return rc;
    if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 8) < 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    len = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &len);
    if (port_out)
        *port_out = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

int aff_stream_connect(const char *addr, int port, double timeout)
{
    struct sockaddr_storage ss;
    socklen_t len;
    double end = cvia__clock_s() + timeout;
    int rc;

    if ((rc = resolve(addr, port, 0, &ss, &len)))
        return rc;
    for (;;) {
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        if (connect(fd, (struct sockaddr *)&ss, len) == 0)
            return fd;
        rc = -errno;
        close(fd);
        if ((rc != -ECONNREFUSED && rc != -ENETUNREACH && rc != -EADDRNOTAVAIL) || cvia__clock_s() > end)
            return rc;
        usleep(20000);
    }
}

int aff_stream_accept(int lfd, double timeout)
{
    struct pollfd p = { .fd = lfd, .events = POLLIN };
    int rc = poll(&p, 1, (int)(timeout * 1000));
    int fd;

    if (rc == 0)
        return -ETIMEDOUT;
    if (rc < 0)
        return -errno;
    if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
        return -errno;
    return fd;
}

/* read() and write(), not recv()/send(): they are what /proc/PID/io counts
 * (syscr, syscw), which is how the daemon sees a process's calls */
int aff_stream_recv(int fd, size_t chunk, double timeout, double omit, struct aff_stream_res *r)
{
    char *buf = malloc(chunk);
    double cpu0 = aff_cpu_self(), t0 = 0, last = 0, first = -1;
    struct timeval tv = { (time_t)timeout, (long)((timeout - floor(timeout)) * 1e6) };
    int rc = 0;

    memset(r, 0, sizeof(*r));
    r->min_gap_us = INFINITY;
    if (!buf)
        return -ENOMEM;
    /* a bound on a silent peer */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (;;) {
        ssize_t n = read(fd, buf, chunk);
        double t = cvia__clock_s();
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
            break;
        }
        if (n == 0)
            break;
        if (first < 0)
            first = t;
        if (t - first < omit) {   /* warm-up: not counted */
            cpu0 = aff_cpu_self();
            continue;
        }
        if (r->calls == 0)
            t0 = t;
        else if ((t - last) * 1e6 < r->min_gap_us)
            r->min_gap_us = (t - last) * 1e6;
        last = t;
        r->bytes += (double)n;
        r->calls++;
    }
    r->secs = last > t0 ? last - t0 : 0;
    r->cpu_s = aff_cpu_self() - cpu0;
    free(buf);
    return rc;
}

int aff_stream_send(int fd, double secs, double rate, size_t chunk, struct aff_stream_res *r)
{
    char *buf = malloc(chunk);
    double cpu0 = aff_cpu_self(), t0 = cvia__clock_s(), t;
    int rc = 0;

    memset(r, 0, sizeof(*r));
    if (!buf)
        return -ENOMEM;
    memset(buf, 0x5a, chunk);
    signal(SIGPIPE, SIG_IGN);
    while ((t = cvia__clock_s()) - t0 < secs) {
        ssize_t n;
        if (rate > 0) {
            double due = t0 + r->bytes / rate;
            if (due > t) {
                struct timespec ts = { (time_t)(due - t), (long)((due - t - floor(due - t)) * 1e9) };
                nanosleep(&ts, NULL);
                continue;
            }
        }
        n = write(fd, buf, chunk);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        r->bytes += (double)n;
        r->calls++;
    }
    r->secs = cvia__clock_s() - t0;
    shutdown(fd, SHUT_WR);
    /* wait for the receiver to close, so its count is complete */
    {
        char c;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5000) > 0)
            (void)!recv(fd, &c, 1, 0);
    }
    r->cpu_s = aff_cpu_self() - cpu0;
    free(buf);
    return rc;
}

/* ---- the command ------------------------------------------------------------ */

static void stream_usage(FILE *f)
{
    fprintf(f,
"Usage: cvia-affinity stream (--listen [ADDR:]PORT | --connect ADDR:PORT) [OPTIONS]\n"
"       cvia-run -n 2 --hosts NS_SEND,NS_RECV -- cvia-affinity stream --transport corevia\n"
"                [OPTIONS]\n"
"One bounded stream, what analyze measures with. Over kernel TCP (default):\n"
"by default the listening side receives and the connecting side sends (as\n"
"iperf3's server and client). Over corevia: a job of two ranks, rank 0 sends\n"
"tagged messages to rank 1 through corevia's network provider (CVIA_NET, so the\n"
"ranks must be in two network namespaces). The receiver reports bytes, seconds,\n"
"bandwidth, read calls (corevia: completed messages), the mean and shortest\n"
"interval between them and its own CPU time (corevia: and the machine's softirq\n"
"work). Use it only on loopback or inside network namespaces you made\n"
"(scripts/netlab.sh).\n"
"\n"
"      --transport kernel-tcp|corevia  (default: kernel-tcp)\n"
"  -l, --listen [ADDR:]PORT  kernel-tcp: accept one connection (default address: any)\n"
"  -c, --connect ADDR:PORT   kernel-tcp: connect (retrying up to --timeout)\n"
"  -s, --send                kernel-tcp: this side sends (default: the connecting side)\n"
"  -r, --recv                kernel-tcp: this side receives (default: the listening side)\n"
"  -t, --time TIME           how long the sender sends (default: 10s)\n"
"  -R, --rate RATE           pace the sender to RATE bits/s, with k/m/g suffixes\n"
"                            (default: 0, as fast as it can)\n"
"  -C, --chunk SIZE          bytes per send / receive call or message (default: 128k)\n"
"  -W, --window N            corevia: messages in flight (default: 16)\n"
"  -P, --cpu LIST            run on these PUs (0-3,8); corevia: the receiving rank\n"
"                            (default: where the scheduler puts it)\n"
"      --send-cpu LIST       corevia: the sending rank's PUs (default: unpinned)\n"
"  -O, --omit TIME           receiver: leave the first TIME of data out of the\n"
"                            result (warm-up; default: 0)\n"
"  -T, --timeout TIME        give up waiting for the peer or its data after this\n"
"                            (corevia: each rank ends after this; default: --time\n"
"                            + --omit + 30s)\n"
"  -j, --json                JSON result\n"
"  -h, --help                this help\n");
}

static int split_addr(const char *arg, char *addr, size_t cap, int *port, int need_addr)
{
    const char *colon = strrchr(arg, ':');
    long p;

    addr[0] = '\0';
    if (!colon) {
        if (need_addr)
            return -1;
        colon = arg - 1;
    } else {
        size_t n = (size_t)(colon - arg);
        if (n >= cap)
            return -1;
        memcpy(addr, arg, n);
        addr[n] = '\0';
        if (addr[0] == '[' && n >= 2 && addr[n - 1] == ']') {
            memmove(addr, addr + 1, n - 2);
            addr[n - 2] = '\0';
        }
    }
    if (cvia__parse_long(colon + 1, &p) || p < 0 || p > 65535 || (need_addr && !addr[0]))
        return -1;
    *port = (int)p;
    return 0;
}

static int parse_rate(const char *s, double *bits)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || v < 0 || !isfinite(v))
        return -1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': v *= 1e3; end++; break;
    case 'm': case 'M': v *= 1e6; end++; break;
    case 'g': case 'G': v *= 1e9; end++; break;
    default: return -1;
    }
    if (*end && strcmp(end, "bit") && strcmp(end, "bps"))
        return -1;
    *bits = v;
    return 0;
}

int aff_stream_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "connect", required_argument, NULL, 'c' },
        { "send", no_argument, NULL, 's' },
        { "recv", no_argument, NULL, 'r' },
        { "time", required_argument, NULL, 't' },
        { "rate", required_argument, NULL, 'R' },
        { "chunk", required_argument, NULL, 'C' },
        { "cpu", required_argument, NULL, 'P' },
        { "omit", required_argument, NULL, 'O' },
        { "timeout", required_argument, NULL, 'T' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { "transport", required_argument, NULL, OPT_TRANSPORT },
        { "window", required_argument, NULL, 'W' },
        { "send-cpu", required_argument, NULL, OPT_SEND_CPU },
        { NULL, 0, NULL, 0 }
    };
    const char *listen_arg = NULL, *connect_arg = NULL, *cpus = NULL, *send_cpus = NULL;
    char addr[256];
    double secs = 10, rate_bits = 0, timeout = -1, omit = 0;
    size_t chunk = 128 * 1024;
    int send_side = -1, json = 0, corevia = 0, window = 16, port, fd, c, rc;
    struct aff_stream_res r;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":l:c:srt:R:C:W:P:O:T:jh", opts, NULL)) != -1) {
        switch (c) {
        case 'l': listen_arg = optarg; break;
        case 'c': connect_arg = optarg; break;
        case 's': send_side = 1; break;
        case 'r': send_side = 0; break;
        case 't':
            if (cvia__parse_time(optarg, &secs) || secs <= 0 || secs > 86400)
                aff_usage_error(SUB, "--time %s: expected a time > 0", optarg);
            break;
        case 'R':
            if (parse_rate(optarg, &rate_bits))
                aff_usage_error(SUB, "--rate %s: expected bits/s such as 500m or 1g", optarg);
            break;
        case 'C':
            if (cvia__parse_size(optarg, &chunk) || chunk < 1 || chunk > (64u << 20))
                aff_usage_error(SUB, "--chunk %s: expected 1 byte to 64m", optarg);
            break;
        case 'P':
            if (!aff_cpulist_ok(optarg))
                aff_usage_error(SUB, "--cpu %s: expected a PU number or a list (0-3,8)", optarg);
            cpus = optarg;
            break;
        case 'O':
            if (cvia__parse_time(optarg, &omit) || omit < 0 || omit > 3600)
                aff_usage_error(SUB, "--omit %s: expected a time >= 0", optarg);
            break;
        case 'T':
            if (cvia__parse_time(optarg, &timeout) || timeout <= 0)
                aff_usage_error(SUB, "--timeout %s: expected a time > 0", optarg);
            break;
        case 'W': {
            long v;
            if (cvia__parse_long(optarg, &v) || v < 1 || v > 1024)
                aff_usage_error(SUB, "--window %s: expected 1 to 1024", optarg);
            window = (int)v;
            break;
        }
        case OPT_TRANSPORT:
            if (!strcmp(optarg, "corevia"))
                corevia = 1;
            else if (!strcmp(optarg, "kernel-tcp"))
                corevia = 0;
            else
                aff_usage_error(SUB, "--transport %s: expected kernel-tcp or corevia", optarg);
            break;
        case OPT_SEND_CPU:
            if (!aff_cpulist_ok(optarg))
                aff_usage_error(SUB, "--send-cpu %s: expected a PU number or a list (0-3,8)",
                                optarg);
            send_cpus = optarg;
            break;
        case 'j': json = 1; break;
        case 'h': stream_usage(stdout); return 0;
        default: aff_getopt_fail(SUB, c, argv);
        }
    }
    if (optind < argc)
        aff_usage_error(SUB, "unexpected argument %s", argv[optind]);
    if (timeout < 0)
        timeout = secs + omit + 30;
    if (corevia) {
        struct aff_cstream_opts co = { .secs = secs, .rate = rate_bits / 8, .omit = omit,
                                       .timeout = timeout, .chunk = chunk, .window = window,
                                       .recv_cpus = cpus, .send_cpus = send_cpus };
        if (chunk < 64)
            aff_usage_error(SUB, "--chunk %zu: --transport corevia needs 64 bytes at least",
                            chunk);
        if (listen_arg || connect_arg || send_side >= 0)
            aff_usage_error(SUB, "--transport corevia: no --listen, --connect, --send or "
                            "--recv (rank 0 sends, rank 1 receives)");
        return aff_cstream_rank(&co, json);
    }
    if (send_cpus)
        aff_usage_error(SUB, "--send-cpu is for --transport corevia (use --cpu on each side)");
    if (!!listen_arg == !!connect_arg)
        aff_usage_error(SUB, "give exactly one of --listen and --connect");
    if (send_side < 0)
        send_side = connect_arg != NULL;
    if (split_addr(listen_arg ? listen_arg : connect_arg, addr, sizeof(addr), &port,
                   connect_arg != NULL))
        aff_usage_error(SUB, "%s: expected %s", listen_arg ? listen_arg : connect_arg,
                        listen_arg ? "[ADDR:]PORT" : "ADDR:PORT");
    if (cpus && (rc = aff_pin_self_list(cpus)) < 0) {
        aff_err(SUB, "--cpu %s: %s", cpus, strerror(-rc));
        return 1;
    }
    if (listen_arg) {
        int lfd = aff_stream_listen(addr[0] ? addr : NULL, port, &port);
        if (lfd < 0) {
            aff_err(SUB, "cannot listen on %s: %s", listen_arg, strerror(-lfd));
            return 1;
        }
        fd = aff_stream_accept(lfd, timeout);
        close(lfd);
        if (fd < 0) {
            aff_err(SUB, "no connection on port %d within %.0f s: %s", port, timeout,
                    strerror(-fd));
            return 1;
        }
    } else {
        fd = aff_stream_connect(addr, port, timeout);
        if (fd < 0) {
            aff_err(SUB, "cannot connect to %s: %s", connect_arg, strerror(-fd));
            return 1;
        }
    }
    rc = send_side ? aff_stream_send(fd, secs, rate_bits / 8, chunk, &r)
                   : aff_stream_recv(fd, chunk, timeout, omit, &r);
    close(fd);
    if (rc) {
        aff_err(SUB, "%s failed after %.0f bytes: %s", send_side ? "send" : "receive", r.bytes,
                strerror(-rc));
        return 1;
    }
    if (json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w, NULL);
        jw_str(&w, "role", send_side ? "send" : "recv");
        jw_str(&w, "transport", "kernel-tcp");
        jw_num(&w, "bytes", r.bytes);
        jw_num(&w, "seconds", r.secs);
        jw_num(&w, "bits_per_second", r.secs > 0 ? 8 * r.bytes / r.secs : 0);
        jw_num(&w, "calls", r.calls);
        jw_num(&w, "interval_us", r.calls > 0 ? 1e6 * r.secs / r.calls : 0);
        jw_num(&w, "cpu_seconds", r.cpu_s);
        jw_num(&w, "cpu_cores", r.secs > 0 ? r.cpu_s / r.secs : 0);
        jw_end_obj(&w);
    } else {
        printf("%s %.0f bytes in %.3f s: %.3f Gbit/s, %.0f calls (%.2f us apart), CPU %.3f s "
               "(%.0f%% of a core)\n", send_side ? "sent" : "received", r.bytes, r.secs,
               r.secs > 0 ? 8e-9 * r.bytes / r.secs : 0, r.calls,
               r.calls > 0 ? 1e6 * r.secs / r.calls : 0, r.cpu_s,
               r.secs > 0 ? 100 * r.cpu_s / r.secs : 0);
    }
    return 0;
}
