/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A bounded TCP stream: one side writes chunks for a fixed time (optionally
 * paced to a rate), the other reads until end of stream, counting bytes,
 * read calls and its own CPU time. */
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

#endif
