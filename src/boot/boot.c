/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Wire-up client: the rank side of boot_proto.h, a PMIx client
 * (boot_pmix.c), or a local job of one.
 *
 * Replies come in request order, so a reply left over from a request that
 * timed out is recognised by counting: gets_pending / fences_pending count
 * requests sent and not yet answered. Asynchronous event lines may arrive
 * between any two replies; they are queued for cvia__boot_poll(). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <corevia/cvia_errno.h>
#include "boot/boot.h"
#include "boot/boot_env.h"
#include "boot/boot_proto.h"
#ifdef CVIA_HAVE_PMIX
#include "boot/boot_pmix.h"
#endif
#include "util/log.h"
#include "util/clock.h"

struct boot_kv {
    char *key;
    char *val;
};

struct cvia_boot {
    int      fd;              /* launcher socket; -1 for a singleton or PMIx */
    struct boot_pmix *px;     /* PMIx backend, or NULL */
    int      rank, size, local_rank, local_size;
    uint64_t jobid;
    double   timeout_s;       /* bound of every blocking wait; <= 0: none */
    int      eof;             /* launcher closed the connection (or broke it) */
    int      refused;         /* ERR received since the last wait began */
    int      peer_lost;       /* EXIT/KILLED/TEARDOWN seen: no fence can complete */
    int      fences_pending;  /* FENCE sent, FENCED not yet received */
    int      gets_pending;    /* GET sent, VAL/NONE not yet received */
    int      get_found;       /* reply to the newest GET: 1 VAL, 0 NONE */
    char     get_val[CVIA_BOOT_VAL_MAX + 1];
    struct cvia_boot_event *evq;  /* queued events: evq[ev_head .. +ev_len) */
    int      ev_head, ev_len, ev_cap;
    struct boot_kv *kv;       /* singleton store */
    size_t   nkv, kv_cap;
    size_t   rlen;            /* bytes in rbuf */
    char     rbuf[2 * CVIA_BOOT_LINE_MAX];
};

/* Keys and values: 1..max bytes of printable ASCII other than space. */
static int boot_check_word(const char *s, size_t max)
{
    size_t n = 0;

    if (!s)
        return -EINVAL;
    for (; s[n]; n++)
        if ((unsigned char)s[n] <= ' ' || (unsigned char)s[n] > '~')
            return -EINVAL;
    return n == 0 || n > max ? -EINVAL : 0;
}

/* Integer variable @name in [min, max], strict decimal (digits only);
 * @expect describes the range in the message. Unset: @out is kept unless
 * @required. Returns 0 or -CVIA_ECONFIG (logged). */
static int boot_env_int(const char *name, int required, long min, long max,
                        const char *expect, int *out)
{
    const char *s = getenv(name);
    long v = 0;

    if (!s) {
        if (!required)
            return 0;
        cvia_error(BOOT, "%s: not set (required with CVIA_BOOT_ADDR)", name);
        return -CVIA_ECONFIG;
    }
    for (const char *p = s; *p && v <= max; p++)
        v = *p >= '0' && *p <= '9' ? v * 10 + (*p - '0') : LONG_MAX;
    if (!*s || v < min || v > max) {
        cvia_error(BOOT, "%s: invalid value '%s' (expected integer %s)", name, s, expect);
        return -CVIA_ECONFIG;
    }
    *out = (int)v;
    return 0;
}

static int boot_env_config(struct cvia_boot *b)
{
    static const char hex[] = "0123456789abcdefABCDEF";
    const char *s = getenv("CVIA_JOBID");
    char e[3][64];

    if (boot_env_int("CVIA_SIZE", 1, 1, INT_MAX, "1..2147483647", &b->size))
        return -CVIA_ECONFIG;
    snprintf(e[0], sizeof(e[0]), "0..CVIA_SIZE-1 = 0..%d", b->size - 1);
    snprintf(e[1], sizeof(e[1]), "1..CVIA_SIZE = 1..%d", b->size);
    if (boot_env_int("CVIA_RANK", 1, 0, b->size - 1, e[0], &b->rank))
        return -CVIA_ECONFIG;
    b->local_size = b->size;
    b->local_rank = b->rank;
    if (boot_env_int("CVIA_LOCAL_SIZE", 0, 1, b->size, e[1], &b->local_size))
        return -CVIA_ECONFIG;
    snprintf(e[2], sizeof(e[2]), "0..CVIA_LOCAL_SIZE-1 = 0..%d", b->local_size - 1);
    if (b->local_rank >= b->local_size)
        b->local_rank = 0;
    if (boot_env_int("CVIA_LOCAL_RANK", 0, 0, b->local_size - 1, e[2], &b->local_rank))
        return -CVIA_ECONFIG;
    if (!s) {
        cvia_error(BOOT, "CVIA_JOBID: not set (required with CVIA_BOOT_ADDR)");
        return -CVIA_ECONFIG;
    }
    if (strspn(s, hex) != 16 || s[16]) {
        cvia_error(BOOT, "CVIA_JOBID: invalid value '%s' (expected 16 hex digits)", s);
        return -CVIA_ECONFIG;
    }
    b->jobid = strtoull(s, NULL, 16);
    return 0;
}

static int boot_connect(struct cvia_boot *b, const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int err;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        cvia_error(BOOT, "CVIA_BOOT_ADDR: path '%s' is longer than %zu bytes",
                   path, sizeof(sa.sun_path) - 1);
        return -CVIA_EBOOT;
    }
    strcpy(sa.sun_path, path);
    b->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (b->fd < 0) {
        err = errno;
        cvia_error(BOOT, "socket: %s", strerror(err));
        return -CVIA_EBOOT;
    }
    while (connect(b->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (errno == EINTR)
            continue;
        err = errno;
        cvia_error(BOOT, "cannot connect to the launcher at %s: %s", path, strerror(err));
        close(b->fd);
        b->fd = -1;
        return -CVIA_EBOOT;
    }
    return 0;
}

static int boot_send(struct cvia_boot *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The variable that says a PMIx server started this process (mpirun,
 * prterun, srun --mpi=pmix), or NULL: boot_env.h, shared with the tools. */
static const char *boot_pmix_var(void)
{
    struct cvia_launch_env e = cvia__launch_env();
    return e.kind == CVIA_LAUNCHER_PMIX ? e.var : NULL;
}

static int boot_open_pmix(struct cvia_boot *b, const char *var)
{
#ifdef CVIA_HAVE_PMIX
    struct boot_ident id;
    int rc = cvia__boot_pmix_open(b->timeout_s, &id, &b->px);

    (void)var;
    if (rc)
        return rc;
    b->rank = id.rank;
    b->size = id.size;
    b->local_rank = id.local_rank;
    b->local_size = id.local_size;
    b->jobid = id.jobid;
    return 0;
#else
    cvia_error(BOOT, "started by a PMIx launcher (%s is set: mpirun, prterun or srun "
               "--mpi=pmix) but corevia was built without PMIx; rebuild with "
               "libpmix-dev, or start the ranks with cvia-run", var);
    return -CVIA_EBOOT;
#endif
}

int cvia__boot_open(double timeout_s, struct cvia_boot **boot_p)
{
    const char *addr = getenv("CVIA_BOOT_ADDR");
    const char *pmix_var;
    struct cvia_boot *b = calloc(1, sizeof(*b));
    int rc;

    if (!b)
        return -ENOMEM;
    b->fd = -1;
    b->timeout_s = timeout_s;
    if ((!addr || !*addr) && (pmix_var = boot_pmix_var())) {
        if ((rc = boot_open_pmix(b, pmix_var)))
            goto err_free;
        *boot_p = b;
        return 0;
    }
    if (!addr || !*addr) {
        const char *sz = getenv("CVIA_SIZE");
        const char *tasks = getenv("SLURM_STEP_NUM_TASKS");
        if (sz && strcmp(sz, "1"))
            cvia_warn(BOOT, "CVIA_SIZE=%s ignored: CVIA_BOOT_ADDR is not set, "
                      "running as a job of one", sz);
        if (tasks && strcmp(tasks, "1"))
            cvia_warn(BOOT, "srun started %s tasks without PMIx: each runs as a job of one "
                      "(use srun --mpi=pmix)", tasks);
        b->size = b->local_size = 1;
        if (getrandom(&b->jobid, sizeof(b->jobid), 0) != (ssize_t)sizeof(b->jobid))
            b->jobid = ((uint64_t)getpid() << 32) ^ (uint64_t)(cvia__clock_s() * 1e9);
        *boot_p = b;
        return 0;
    }
    if ((rc = boot_env_config(b)) || (rc = boot_connect(b, addr)))
        goto err_free;
    /* HELLO has no reply: a refusal (ERR, then close) fails the next wait */
    if ((rc = boot_send(b, "HELLO %d %016" PRIx64 " %d\n", b->rank, b->jobid,
                        (int)getpid())))
        goto err_close;
    *boot_p = b;
    return 0;

err_close:
    close(b->fd);
err_free:
    free(b);
    return rc;
}

void cvia__boot_close(struct cvia_boot *b)
{
    if (!b)
        return;
    if (b->fd >= 0)
        close(b->fd);
#ifdef CVIA_HAVE_PMIX
    cvia__boot_pmix_close(b->px);
#endif
    for (size_t i = 0; i < b->nkv; i++) {
        free(b->kv[i].key);
        free(b->kv[i].val);
    }
    free(b->kv);
    free(b->evq);
    free(b);
}

int      cvia__boot_rank(const struct cvia_boot *b)        { return b->rank; }
int      cvia__boot_size(const struct cvia_boot *b)        { return b->size; }
int      cvia__boot_local_rank(const struct cvia_boot *b)  { return b->local_rank; }
int      cvia__boot_local_size(const struct cvia_boot *b)  { return b->local_size; }
uint64_t cvia__boot_jobid(const struct cvia_boot *b)       { return b->jobid; }
int      cvia__boot_is_singleton(const struct cvia_boot *b) { return b->fd < 0 && !b->px; }

/* The connection is unusable from now on; say why once. */
static void boot_lost(struct cvia_boot *b, const char *why, int err)
{
    if (!b->eof)
        cvia_error(BOOT, "%s%s%s", why, err ? ": " : "", err ? strerror(err) : "");
    b->eof = 1;
}

static void boot_push_event(struct cvia_boot *b, int kind, int rank, int status)
{
    if (b->ev_head + b->ev_len == b->ev_cap) {
        if (b->ev_head > 0) {
            memmove(b->evq, b->evq + b->ev_head, (size_t)b->ev_len * sizeof(*b->evq));
            b->ev_head = 0;
        } else {
            int cap = b->ev_cap ? 2 * b->ev_cap : 16;
            void *q = realloc(b->evq, (size_t)cap * sizeof(*b->evq));
            if (!q) {
                cvia_error(BOOT, "out of memory: launcher event dropped");
                return;
            }
            b->evq = q;
            b->ev_cap = cap;
        }
    }
    b->evq[b->ev_head + b->ev_len++] = (struct cvia_boot_event){ kind, rank, status };
}

static void boot_line(struct cvia_boot *b, char *line)
{
    char *arg = strchr(line, ' ');
    int r, v;

    if (arg)
        *arg++ = '\0';
    if (!strcmp(line, "FENCED")) {
        if (b->fences_pending > 0)
            b->fences_pending--;
    } else if (!strcmp(line, "VAL") || !strcmp(line, "NONE")) {
        if (b->gets_pending > 0 && --b->gets_pending == 0) {
            b->get_found = arg != NULL;
            snprintf(b->get_val, sizeof(b->get_val), "%s", arg ? arg : "");
        }
    } else if (!strcmp(line, "EXIT") && arg && sscanf(arg, "%d %d", &r, &v) == 2) {
        boot_push_event(b, CVIA_BOOT_EV_EXIT, r, v);
        b->peer_lost = 1;
    } else if (!strcmp(line, "KILLED") && arg && sscanf(arg, "%d %d", &r, &v) == 2) {
        boot_push_event(b, CVIA_BOOT_EV_KILLED, r, v);
        b->peer_lost = 1;
    } else if (!strcmp(line, "TEARDOWN") && arg && sscanf(arg, "%d", &r) == 1) {
        boot_push_event(b, CVIA_BOOT_EV_ABORT, r, 0);
        b->peer_lost = 1;
    } else if (!strcmp(line, "ERR")) {
        cvia_error(BOOT, "launcher refused a request: %s", arg ? arg : "(no reason)");
        b->refused = 1;
    } else {
        cvia_warn_once(BOOT, "ignoring unexpected line from the launcher: '%s'", line);
    }
}

/* One recv(); split complete lines. */
static void boot_read(struct cvia_boot *b)
{
    ssize_t n;
    char *p, *nl;

    do
        n = recv(b->fd, b->rbuf + b->rlen, sizeof(b->rbuf) - b->rlen, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            boot_lost(b, "connection to the launcher failed", errno);
        return;
    }
    if (n == 0) {
        boot_lost(b, "the launcher closed the connection", 0);
        return;
    }
    b->rlen += (size_t)n;
    for (p = b->rbuf; (nl = memchr(p, '\n', b->rlen - (size_t)(p - b->rbuf))); p = nl + 1) {
        *nl = '\0';
        boot_line(b, p);
    }
    b->rlen -= (size_t)(p - b->rbuf);
    memmove(b->rbuf, p, b->rlen);
    if (b->rlen > CVIA_BOOT_LINE_MAX)
        boot_lost(b, "protocol error: overlong line from the launcher", 0);
}

static int boot_send(struct cvia_boot *b, const char *fmt, ...)
{
    char line[CVIA_BOOT_LINE_MAX + 1];
    va_list ap;
    size_t off = 0;
    int n;

    if (b->eof)
        return -CVIA_EBOOT;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || n > CVIA_BOOT_LINE_MAX)
        return -EINVAL;
    while (off < (size_t)n) {
        ssize_t w = send(b->fd, line + off, (size_t)n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            boot_lost(b, "cannot send to the launcher", errno);
            return -CVIA_EBOOT;
        }
        off += (size_t)w;
    }
    return 0;
}

/* Wait until *@pending is 0. With @fence, a lost peer ends the wait. */
static int boot_wait(struct cvia_boot *b, const int *pending, int fence,
                     const char *what)
{
    double deadline = b->timeout_s > 0 ? cvia__clock_s() + b->timeout_s : 0;

    b->refused = 0;
    for (;;) {
        if (!*pending)
            return 0;
        if (fence && b->peer_lost)
            return -CVIA_ENOPEER;
        if (b->eof || b->refused)
            return -CVIA_EBOOT;
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - cvia__clock_s();
            if (left <= 0) {
                cvia_error(BOOT, "%s: no reply from the launcher after %g s",
                           what, b->timeout_s);
                return -ETIMEDOUT;
            }
            ms = left * 1e3 + 1 > INT_MAX ? INT_MAX : (int)(left * 1e3) + 1;
        }
        struct pollfd pfd = { .fd = b->fd, .events = POLLIN };
        int rc = poll(&pfd, 1, ms);
        if (rc < 0 && errno != EINTR) {
            boot_lost(b, "poll on the launcher connection failed", errno);
            return -CVIA_EBOOT;
        }
        if (rc > 0)
            boot_read(b);
    }
}

static struct boot_kv *boot_kv_find(struct cvia_boot *b, const char *key)
{
    for (size_t i = 0; i < b->nkv; i++)
        if (!strcmp(b->kv[i].key, key))
            return &b->kv[i];
    return NULL;
}

static int boot_kv_put(struct cvia_boot *b, const char *key, const char *val)
{
    struct boot_kv *e = boot_kv_find(b, key);
    char *v = strdup(val);

    if (!v)
        return -ENOMEM;
    if (e) {
        free(e->val);
        e->val = v;
        return 0;
    }
    if (b->nkv == b->kv_cap) {
        size_t cap = b->kv_cap ? 2 * b->kv_cap : 8;
        void *kv = realloc(b->kv, cap * sizeof(*b->kv));
        if (!kv) {
            free(v);
            return -ENOMEM;
        }
        b->kv = kv;
        b->kv_cap = cap;
    }
    if (!(b->kv[b->nkv].key = strdup(key))) {
        free(v);
        return -ENOMEM;
    }
    b->kv[b->nkv++].val = v;
    return 0;
}

int cvia__boot_put(struct cvia_boot *b, const char *key, const char *val)
{
    if (boot_check_word(key, CVIA_BOOT_KEY_MAX) || boot_check_word(val, CVIA_BOOT_VAL_MAX))
        return -EINVAL;
#ifdef CVIA_HAVE_PMIX
    if (b->px)
        return cvia__boot_pmix_put(b->px, key, val);
#endif
    if (b->fd < 0)
        return boot_kv_put(b, key, val);
    return boot_send(b, "PUT %s %s\n", key, val);
}

int cvia__boot_get(struct cvia_boot *b, const char *key, char *val, size_t cap)
{
    const char *v;
    int rc;

    if (boot_check_word(key, CVIA_BOOT_KEY_MAX))
        return -EINVAL;
#ifdef CVIA_HAVE_PMIX
    if (b->px)
        return cvia__boot_pmix_get(b->px, key, val, cap);
#endif
    if (b->fd < 0) {
        struct boot_kv *e = boot_kv_find(b, key);
        if (!e)
            return -ENOENT;
        v = e->val;
    } else {
        if ((rc = boot_send(b, "GET %s\n", key)))
            return rc;
        b->gets_pending++;
        if ((rc = boot_wait(b, &b->gets_pending, 0, "get")))
            return rc;
        if (!b->get_found)
            return -ENOENT;
        v = b->get_val;
    }
    if (strlen(v) >= cap)
        return -ENOSPC;
    strcpy(val, v);
    return 0;
}

static void boot_log_lost_peer(struct cvia_boot *b)
{
    const struct cvia_boot_event *e = b->ev_len ? &b->evq[b->ev_head] : NULL;

    if (!e)
        cvia_error(BOOT, "fence failed: a rank has left the job");
    else if (e->kind == CVIA_BOOT_EV_EXIT)
        cvia_error(BOOT, "fence failed: rank %d exited with status %d without finalizing",
                   e->rank, e->status);
    else if (e->kind == CVIA_BOOT_EV_KILLED)
        cvia_error(BOOT, "fence failed: rank %d was killed by signal %d", e->rank, e->status);
    else
        cvia_error(BOOT, "fence failed: the launcher is tearing the job down");
}

int cvia__boot_fence(struct cvia_boot *b)
{
    int rc;

#ifdef CVIA_HAVE_PMIX
    if (b->px)
        return cvia__boot_pmix_fence(b->px);
#endif
    if (b->fd < 0)
        return 0;
    /* a rank that has left can never join a fence: fail at once */
    if (!b->peer_lost && !b->fences_pending) {
        /* after a timed-out fence the launcher still counts this rank in;
         * its FENCED ends this one */
        if ((rc = boot_send(b, "FENCE\n")))
            return rc;
        b->fences_pending = 1;
    }
    rc = boot_wait(b, &b->fences_pending, 1, "fence");
    if (rc == -CVIA_ENOPEER)
        boot_log_lost_peer(b);
    return rc;
}

int cvia__boot_fini(struct cvia_boot *b)
{
    /* PMIx: cvia__boot_close's PMIx_Finalize tells the launcher */
    return b->fd < 0 ? 0 : boot_send(b, "FINI\n");
}

int cvia__boot_poll(struct cvia_boot *b, struct cvia_boot_event *ev, int max)
{
    int n = 0;

#ifdef CVIA_HAVE_PMIX
    if (b->px)
        return cvia__boot_pmix_poll(b->px, ev, max);
#endif
    if (b->fd < 0)
        return 0;
    if (!b->ev_len && !b->eof)
        boot_read(b);
    while (n < max && b->ev_len > 0) {
        ev[n++] = b->evq[b->ev_head++];
        if (!--b->ev_len)
            b->ev_head = 0;
    }
    return n == 0 && b->eof ? -CVIA_EBOOT : n;
}

void cvia__boot_abort(struct cvia_boot *b, int code, const char *why)
{
    char text[CVIA_BOOT_LINE_MAX - 32];

    snprintf(text, sizeof(text), "%s", why && *why ? why : "abort");
    for (char *p = text; *p; p++)       /* one line on the wire */
        if ((unsigned char)*p < ' ' || *p == 0x7f)
            *p = ' ';
    cvia_error(BOOT, "aborting the job (code %d): %s", code, text);
#ifdef CVIA_HAVE_PMIX
    if (b && b->px)
        cvia__boot_pmix_abort(b->px, code, text);
#endif
    if (b && b->fd >= 0)
        boot_send(b, "ABORT %d %s\n", code, text);
}
