/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A bounded stream: one side writes chunks for a fixed time (optionally
 * paced to a rate), the other reads until end of stream, counting bytes,
 * read calls and its own CPU time; over kernel TCP (aff_stream.c) or over
 * corevia's network provider between two namespaces (aff_cstream.c). */
#ifndef CVIA_AFF_STREAM_H
#define CVIA_AFF_STREAM_H

#include <stddef.h>

struct aff_stream_res {
    double bytes;        /* payload moved */
    double secs;         /* first byte to end of stream (receiver) or send time */
    double calls;        /* read / write calls that moved data */
    double cpu_s;        /* user + system time of this process */
    double min_gap_us;   /* shortest time between two such calls */
};

/* Listen on ADDR (NULL: any) and PORT (0: any); the port chosen in
 * *port_out. Returns the socket or -errno. */
int aff_stream_listen(const char *addr, int port, int *port_out);
/* Connect, retrying for up to @timeout seconds (the peer may still be
 * starting). Returns the socket or -errno. */
int aff_stream_connect(const char *addr, int port, double timeout);
/* Accept one connection within @timeout seconds; returns it or -errno. */
int aff_stream_accept(int lfd, double timeout);
/* Read until end of stream or @timeout seconds without data; the first
 * @omit seconds of data are left out of the result. 0 or -errno. */
int aff_stream_recv(int fd, size_t chunk, double timeout, double omit, struct aff_stream_res *r);
/* Write for @secs seconds, at most @rate bytes/s (0: as fast as possible),
 * then shut the connection down. 0 or -errno. */
int aff_stream_send(int fd, double secs, double rate, size_t chunk, struct aff_stream_res *r);

/* ---- the same over corevia (aff_cstream.c) ------------------------------- */

/* A stream of tagged messages from rank 0 to rank 1 of a corevia job. */
struct aff_cstream_opts {
    double secs;              /* the sender sends this long */
    double rate;              /* at most this many bytes/s (0: as fast as it can) */
    double omit;              /* the receiver leaves the first seconds out */
    double timeout;           /* each rank gives up (SIGALRM) after this long */
    size_t chunk;             /* bytes per message */
    int    window;            /* messages in flight (sends posted, receives posted) */
    const char *recv_cpus;    /* CPU lists the ranks pin themselves to, or NULL */
    const char *send_cpus;
};

struct aff_cstream_res {
    struct aff_stream_res r;  /* of the receiver; calls are completed messages */
    double cpu_cores;         /* receiver's CPU over its measured window */
    double softirq_cores;     /* softirq work of the machine over that window */
    double send_secs;         /* how long the sender sent */
    char   provider[32];      /* what joined the ranks: "tcp", ... */
    char   path[256];         /* cvia_peer_info() of the receiver */
};

/* In a rank of `cvia-run -n 2` (the stream command with --transport
 * corevia): rank 0 sends, rank 1 receives and prints the result, JSON or a
 * line. Returns the exit status (after one line on stderr if not 0). */
int aff_cstream_rank(const struct aff_cstream_opts *o, int json);

struct aff_cstream_job {
    const char *launcher;     /* cvia-run */
    const char *self;         /* this cvia-affinity */
    const char *provider;     /* CVIA_NET of the ranks */
    const char *ns_send;      /* network namespaces: cvia-run --hosts names or */
    const char *ns_recv;      /* paths (/proc/PID/ns/net) */
};
/* Run one stream as a job of cvia-run and collect the receiver's result;
 * bounded (cvia-run --timeout, then SIGKILL). 0, or -1 with the reason
 * (the job's own error line where it printed one) in err. */
int aff_cstream_run(const struct aff_cstream_job *j, const struct aff_cstream_opts *o,
                    struct aff_cstream_res *res, char *err, size_t cap);

/* The network providers this corevia has (CVIA_NET's values), as "tcp,
 * udp"; and whether @name is one of them. */
int aff_cstream_providers(char *buf, size_t cap);
int aff_cstream_provider_ok(const char *name);
/* Our own executable into @self, and cvia-run into @out: next to it (an
 * installation), two levels up (the build tree), else in PATH. 0 or -1. */
int aff_find_launcher(char *self, size_t scap, char *out, size_t cap);

#endif
