/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-run: the launcher's side of the wire-up protocol
 * (src/boot/boot_proto.h): connections, HELLO, the key-value store (a
 * tsearch() tree) and fences. */
#include <alloca.h>
#include <errno.h>
#include <limits.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>

#include "run.h"

struct run_kv {
    char  *val;
    char   key[];
};

/* ---------------------------------------------------------- connections */

void run_conn_close(struct run_conn *c)
{
    if (c->fd < 0)
        return;
    close(c->fd);
    c->fd = -1;
    if (c->rank >= 0)
        run.ranks[c->rank].conn = NULL;
    else
        run.nanon--;
}

void run_conn_flush(struct run_conn *c)
{
    while (c->outlen && c->fd >= 0) {
        ssize_t w = send(c->fd, c->out, c->outlen, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        if (w < 0) {
            /* the peer is gone; keep reading what it sent before (an
             * ABORT, say) until EOF closes the connection */
            c->wdead = 1;
            c->outlen = 0;
            return;
        }
        c->outlen -= (size_t)w;
        memmove(c->out, c->out + w, c->outlen);
    }
}

void run_send(struct run_conn *c, const char *fmt, ...)
{
    char line[CVIA_BOOT_LINE_MAX + 1];
    va_list ap;
    int n;

    if (!c || c->fd < 0 || c->wdead)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof(line))
        return;
    if (c->outlen + (size_t)n > c->outcap) {
        size_t cap = c->outcap ? 2 * c->outcap : 4096;
        while (cap < c->outlen + (size_t)n)
            cap *= 2;
        char *p = realloc(c->out, cap);
        if (!p) {
            run_conn_close(c);
            return;
        }
        c->out = p;
        c->outcap = cap;
    }
    memcpy(c->out + c->outlen, line, (size_t)n);
    c->outlen += (size_t)n;
    run_conn_flush(c);
}

static void run_refuse(struct run_conn *c, const char *why)
{
    run_send(c, "ERR %s\n", why);
    if (run.info)
        run_msg("refused a connection: %s", why);
    run_conn_close(c);
}

/* Send @line to every connected rank but @except. */
void run_broadcast(int except, const char *line)
{
    for (int r = 0; r < run.np; r++)
        if (r != except && run.ranks[r].alive)
            run_send(run.ranks[r].conn, "%s", line);
}

/* ------------------------------------------------------ key-value store */

static int run_kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct run_kv *)a)->key, ((const struct run_kv *)b)->key);
}

static void run_kv_free(void *e)
{
    free(((struct run_kv *)e)->val);
    free(e);
}

static int run_kv_put(const char *key, const char *val)
{
    struct run_kv *e = malloc(sizeof(*e) + strlen(key) + 1), **slot;

    if (!e || !(e->val = strdup(val))) {
        free(e);
        return -ENOMEM;
    }
    strcpy(e->key, key);
    if (!(slot = tsearch(e, &run.kv, run_kv_cmp))) {
        run_kv_free(e);
        return -ENOMEM;
    }
    if (*slot != e) {           /* key known: replace the value */
        free((*slot)->val);
        (*slot)->val = e->val;
        free(e);
    }
    return 0;
}

static const char *run_kv_get(const char *key)
{
    struct run_kv *k = alloca(sizeof(*k) + strlen(key) + 1), **slot;

    strcpy(k->key, key);
    slot = tfind(k, &run.kv, run_kv_cmp);
    return slot ? (*slot)->val : NULL;
}

void run_kv_destroy(void)
{
    tdestroy(run.kv, run_kv_free);
    run.kv = NULL;
}

/* ------------------------------------------------------------- requests */

static int run_word_ok(const char *s, size_t max)
{
    size_t n = 0;

    for (; s && s[n]; n++)
        if ((unsigned char)s[n] <= ' ' || (unsigned char)s[n] > '~')
            return 0;
    return n > 0 && n <= max;
}

static void run_hello(struct run_conn *c, char *arg)
{
    char *w[3], *save = NULL;
    struct run_rank *rk;
    const char *why = NULL;
    int r, pid, i;

    for (i = 0; i < 3 && (w[i] = strtok_r(i ? NULL : arg, " ", &save)); i++)
        ;
    if (i < 3 || strtok_r(NULL, " ", &save) || !run_int_ok(w[0], INT_MIN, INT_MAX, &r) ||
        !run_int_ok(w[2], 1, INT_MAX, &pid))
        why = "malformed HELLO";
    else if (r < 0 || r >= run.np)
        why = "no such rank in this job";
    else if (strcasecmp(w[1], run.jobid))
        why = "wrong job id";
    else if (run.ranks[r].conn)
        why = "this rank is already connected";
    else if (!run.ranks[r].alive)
        why = "this rank has exited";
    if (why) {
        run_refuse(c, why);
        return;
    }
    rk = &run.ranks[r];
    run.nanon--;
    c->rank = r;
    rk->conn = c;
    rk->hello = 1;
    rk->fini = 0;
    rk->lib_pid = pid;
    if (rk->in_fence) {         /* a new program in the same rank starts afresh */
        rk->in_fence = 0;
        run.fence_count--;
    }
    for (i = 0; i < run.np; i++)        /* what it missed */
        if (run.ranks[i].event[0])
            run_send(c, "%s", run.ranks[i].event);
    if (run.phase != RUN_RUNNING)
        run_send(c, "TEARDOWN %d\n", run.cause);
}

static void run_fence(struct run_rank *rk)
{
    if (rk->in_fence)
        return;                 /* re-sent after a client-side timeout */
    rk->in_fence = 1;
    if (++run.fence_count < run.np)
        return;
    for (int r = 0; r < run.np; r++) {
        run.ranks[r].in_fence = 0;
        run_send(run.ranks[r].conn, "FENCED\n");
    }
    run.fence_count = 0;
}

static void run_line(struct run_conn *c, char *line)
{
    char *arg = strchr(line, ' '), *val;
    struct run_rank *rk;
    const char *v;
    int code;

    if (arg)
        *arg++ = '\0';
    if (c->rank < 0) {
        if (strcmp(line, "HELLO") || !arg)
            run_refuse(c, "expected HELLO <rank> <jobid> <pid>");
        else
            run_hello(c, arg);
        return;
    }
    rk = &run.ranks[c->rank];
    if (!strcmp(line, "PUT") && arg && (val = strchr(arg, ' '))) {
        *val++ = '\0';
        if (!run_word_ok(arg, CVIA_BOOT_KEY_MAX) || !run_word_ok(val, CVIA_BOOT_VAL_MAX))
            run_refuse(c, "bad key or value in PUT");
        else if (run_kv_put(arg, val))
            run_refuse(c, "out of memory");
    } else if (!strcmp(line, "GET") && run_word_ok(arg, CVIA_BOOT_KEY_MAX)) {
        if ((v = run_kv_get(arg)))
            run_send(c, "VAL %s\n", v);
        else
            run_send(c, "NONE\n");
    } else if (!strcmp(line, "FENCE") && !arg) {
        run_fence(rk);
    } else if (!strcmp(line, "FINI") && !arg) {
        rk->fini = 1;
    } else if (!strcmp(line, "ABORT") && arg) {
        val = strchr(arg, ' ');
        if (val)
            *val++ = '\0';
        if (!run_int_ok(arg, INT_MIN, INT_MAX, &code))
            code = 1;
        run_rank_drain(c->rank);
        run_msg("rank %d aborted the job (code %d): %s", c->rank, code, val ? val : "");
        if (!run.status)
            run.status = code & 0xff ? code & 0xff : 1;
        run_teardown(c->rank);
    } else {
        run_refuse(c, "malformed or unknown request");
    }
}

void run_conn_read(struct run_conn *c)
{
    while (c->fd >= 0) {
        ssize_t n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            run_conn_close(c);
            return;
        }
        c->inlen += (size_t)n;
        char *p = c->in, *nl;
        while (c->fd >= 0 && (nl = memchr(p, '\n', c->inlen - (size_t)(p - c->in)))) {
            *nl = '\0';
            run_line(c, p);
            p = nl + 1;
        }
        c->inlen -= (size_t)(p - c->in);
        memmove(c->in, p, c->inlen);
        if (c->inlen == sizeof(c->in))
            run_refuse(c, "line too long");
    }
}

void run_accept(void)
{
    for (;;) {
        int fd = accept4(run.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;             /* EAGAIN, or out of descriptors: retry later */
        }
        struct run_conn *c = calloc(1, sizeof(*c));
        if (!c || run.nanon > run.np + 16) {    /* stray clients: not ours */
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->rank = -1;
        c->next = run.conns;
        run.conns = c;
        run.nanon++;
    }
}

/* Free closed connections; only between poll rounds, when no pointer to
 * them is held. */
void run_conn_sweep(void)
{
    for (struct run_conn **pp = &run.conns, *c; (c = *pp);) {
        if (c->fd < 0) {
            *pp = c->next;
            free(c->out);
            free(c);
        } else {
            pp = &c->next;
        }
    }
}
