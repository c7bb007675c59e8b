/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-run: forwarding the ranks' output, and our stdin to them. Each
 * rank's stdout and stderr come through a pipe of their own; whole lines
 * are forwarded at a time, so lines of different ranks never mix mid-line.
 * Our stdin goes to rank 0 (--stdin: one rank, all, none) through a pipe
 * per receiving rank, a chunk at a time: the next chunk is read only when
 * every receiver took the last one, so a rank that does not read holds the
 * others back once its pipe is full (as under mpirun), and a rank that
 * exits or closes its stdin drops out. */
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


/* ------------------------------------------------------------------ stdin */

int run_stdin_gets(int r)
{
    return run.stdin_to == RUN_STDIN_ALL || run.stdin_to == r;
}

static int run_stdin_pending(int r)
{
    const struct run_rank *rk = &run.ranks[r];
    return rk->in_fd >= 0 && rk->in_off < run.inlen;
}

/* The chunk is handed out: the next one may be read. Nobody left to read
 * it: stop reading stdin at all. */
int run_stdin_want(void)
{
    int open = 0;

    if (run.in_eof || !run.ranks)
        return 0;
    for (int r = 0; r < run.np; r++) {
        if (run_stdin_pending(r))
            return 0;
        open |= run.ranks[r].in_fd >= 0;
    }
    if (!open)
        run.in_eof = 1;         /* every receiver has gone: leave stdin alone */
    return !run.in_eof;
}

void run_stdin_close(int r)
{
    struct run_rank *rk = &run.ranks[r];

    if (rk->in_fd >= 0)
        close(rk->in_fd);
    rk->in_fd = -1;
}

/* As much of the chunk as rank r's pipe takes now; the rest at POLLOUT. */
void run_stdin_write(int r)
{
    struct run_rank *rk = &run.ranks[r];

    while (run_stdin_pending(r)) {
        ssize_t w = write(rk->in_fd, run.inbuf + rk->in_off, run.inlen - rk->in_off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        if (w < 0) {            /* EPIPE: it closed its stdin or exited */
            run_stdin_close(r);
            return;
        }
        rk->in_off += (size_t)w;
    }
}

/* poll() said our stdin is readable: one chunk, handed to every receiver
 * still there; end of input (or an error: EIO from a terminal we are in
 * the background of) closes their pipes, so they see end of file. */
void run_stdin_read(void)
{
    ssize_t n;

    if (!run.inbuf && !(run.inbuf = malloc(RUN_INBUF))) {
        run_msg("out of memory: stdin is not forwarded");
        n = 0;
    } else {
        do
            n = read(0, run.inbuf, RUN_INBUF);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno == EAGAIN)
            return;
    }
    if (n <= 0) {
        run.in_eof = 1;
        run.inlen = 0;
        for (int r = 0; r < run.np; r++)
            run_stdin_close(r);
        return;
    }
    run.inlen = (size_t)n;
    for (int r = 0; r < run.np; r++) {
        run.ranks[r].in_off = 0;
        run_stdin_write(r);
    }
}
