/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-run: forwarding the ranks' output. Each rank's stdout and stderr
 * come through a pipe of their own; whole lines are forwarded at a time,
 * so lines of different ranks never mix mid-line. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

static void run_write(int to, const char *p, size_t n)
{
    while (n && !run.out_dead[to]) {
        ssize_t w = write(to, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            struct pollfd pfd = { .fd = to, .events = POLLOUT };
            poll(&pfd, 1, -1);
            continue;
        }
        if (w < 0) {
            run.out_dead[to] = 1;   /* e.g. EPIPE: discard from now on */
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Forward @n bytes of @s's buffer; with --prefix, tag each line start
 * with "[rank] ", or "[rank@host] " when the job has --hosts. */
static void run_emit(int r, struct run_stream *s, size_t n)
{
    char tag[RUN_HOST_NAME_MAX + 32], stage[2 * RUN_OUTBUF];
    const char *host = run_host_name(r);
    size_t taglen, k = 0;

    if (!run.prefix) {
        run_write(s->to, s->buf, n);
    } else {
        if (host)
            taglen = (size_t)snprintf(tag, sizeof(tag), "[%d@%s] ", r, host);
        else
            taglen = (size_t)snprintf(tag, sizeof(tag), "[%d] ", r);
        if (taglen >= sizeof(tag))      /* cannot happen: names are bounded */
            taglen = sizeof(tag) - 1;
        for (size_t i = 0; i < n; i++) {
            if (s->bol) {
                if (k + taglen > sizeof(stage)) {
                    run_write(s->to, stage, k);
                    k = 0;
                }
                memcpy(stage + k, tag, taglen);
                k += taglen;
            }
            if (k == sizeof(stage)) {
                run_write(s->to, stage, k);
                k = 0;
            }
            stage[k++] = s->buf[i];
            s->bol = s->buf[i] == '\n';
        }
        run_write(s->to, stage, k);
    }
    s->len -= n;
    memmove(s->buf, s->buf + n, s->len);
}

/* Forward what has ended: at EOF all, a partial last line included. */
void run_stream_close(int r, struct run_stream *s)
{
    if (s->len) {
        run_emit(r, s, s->len);
        if (run.prefix && !s->bol)
            run_write(s->to, "\n", 1);
    }
    close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
}

/* Read what is there (at most a few buffers, for fairness); forward
 * complete lines, keep a partial one unless the buffer is full. */
void run_stream_read(int r, struct run_stream *s)
{
    for (int i = 0; i < 4 && s->fd >= 0; i++) {
        if (!s->buf && !(s->buf = malloc(RUN_OUTBUF)))
            return;
        ssize_t n = read(s->fd, s->buf + s->len, RUN_OUTBUF - s->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            run_stream_close(r, s);
            return;
        }
        s->len += (size_t)n;
        char *nl = memrchr(s->buf, '\n', s->len);
        size_t upto = nl ? (size_t)(nl - s->buf) + 1 : s->len == RUN_OUTBUF ? s->len : 0;
        if (upto)
            run_emit(r, s, upto);
    }
}

/* Forward what a rank has written so far, so that it precedes what we say
 * about that rank. */
void run_rank_drain(int r)
{
    struct run_rank *rk = &run.ranks[r];

    for (int i = 0; i < 16 && (rk->out.fd >= 0 || rk->err.fd >= 0); i++) {
        run_stream_read(r, &rk->out);
        run_stream_read(r, &rk->err);
    }
}

