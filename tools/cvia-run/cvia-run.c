/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-run: start N ranks of a program on this host, serve their wire-up
 * (src/boot/boot_proto.h), forward their output, and end the whole job when
 * one rank fails. Single-threaded: one poll() loop over a signalfd, the
 * listening socket, the ranks' sockets and output pipes; it never spins.
 *
 * An exited rank stays a zombie (seen with waitid(WNOWAIT)) until the very
 * end, so its pid, which is also its process group id, cannot be reused
 * while we may still killpg() that group. */
#include <alloca.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <search.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <corevia/corevia.h>
#include "boot/boot_proto.h"
#include "util/log.h"
#include "util/param.h"

#ifndef CVIA_VERSION_STRING
#define RUN_STR_(x) #x
#define RUN_STR(x) RUN_STR_(x)
#define CVIA_VERSION_STRING RUN_STR(CVIA_VERSION_MAJOR) "." \
    RUN_STR(CVIA_VERSION_MINOR) "." RUN_STR(CVIA_VERSION_PATCH)
#endif

#define RUN_NP_MAX     65536
#define RUN_OUTBUF     16384   /* per stream: longer lines are cut */
#define RUN_TERM_WAIT  2.0     /* SIGTERM -> SIGKILL */
#define RUN_KILL_WAIT  3.0     /* SIGKILL -> give up waiting */
#define RUN_GRACE_DFLT 5.0

enum { RUN_BIND_AUTO = -1, RUN_BIND_NONE, RUN_BIND_CORE };
enum { RUN_RUNNING, RUN_GRACE, RUN_TERM, RUN_KILL };

struct run_stream {             /* one output pipe of one rank */
    int    fd;                  /* read end; -1 once closed */
    int    to;                  /* 1 or 2 */
    int    bol;                 /* the next byte starts a line */
    size_t len;
    char  *buf;                 /* RUN_OUTBUF bytes, allocated on first use */
};

struct run_conn {
    struct run_conn *next;
    int    fd;                  /* -1 once closed; freed by run_conn_sweep() */
    int    rank;                /* -1 until HELLO */
    int    wdead;               /* sending failed: read only */
    size_t inlen, outlen, outcap;
    char  *out;
    char   in[CVIA_BOOT_LINE_MAX];
};

struct run_rank {
    pid_t  pid;                 /* 0: never started */
    int    alive;               /* not yet seen exiting */
    int    hello, fini, in_fence;
    pid_t  lib_pid;             /* pid in HELLO (differs under a wrapper) */
    char   event[48];           /* EXIT/KILLED line sent about it, for late HELLOs */
    struct run_conn  *conn;
    struct run_stream out, err;
};

struct run_kv {                 /* the key-value store: a tsearch() tree */
    char  *val;
    char   key[];
};

static struct {
    int     np, bind, prefix;
    double  timeout, grace;
    char  **argv;
    char    dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct sockaddr_un addr;
    int     lfd, sfd, info;
    pid_t   self;
    char    jobid[17];
    struct rlimit nofile;       /* as inherited, restored in ranks */
    int    *cpus, ncpus;
    struct run_rank *ranks;
    int     nalive, nanon;
    struct run_conn *conns;
    int     phase, cause, status, out_dead[3];
    double  job_deadline, phase_deadline;
    int     fence_count;        /* ranks in the current fence; 0 after each FENCED */
    void   *kv;
} run = { .bind = RUN_BIND_AUTO, .grace = RUN_GRACE_DFLT, .lfd = -1, .sfd = -1 };

static double run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run_msg(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n = snprintf(line, sizeof(line), "cvia-run: ");

    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(2, line, (size_t)n) < 0) { /* nowhere left to report it */ }
}

static _Noreturn void run_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void run_usage(const char *fmt, ...)
{
    va_list ap;

    fputs("cvia-run: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try --help)\n", stderr);
    exit(2);
}

/* Strict decimal, optionally negative, in [min, max]. */
static int run_int_ok(const char *s, long min, long max, int *out)
{
    char *end;
    long v;

    if (!s || !(*s == '-' || (*s >= '0' && *s <= '9')))
        return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return 0;
    *out = (int)v;
    return 1;
}

/* ------------------------------------------------------------------ setup */

static void run_get_cpus(void)
{
    for (int n = 1024; n <= (1 << 18); n *= 2) {
        cpu_set_t *set = CPU_ALLOC(n);
        size_t sz = CPU_ALLOC_SIZE(n);
        if (!set)
            return;
        if (sched_getaffinity(0, sz, set) == 0) {
            run.cpus = malloc((size_t)CPU_COUNT_S(sz, set) * sizeof(int));
            for (int i = 0; run.cpus && i < (int)(sz * 8); i++)
                if (CPU_ISSET_S((size_t)i, sz, set))
                    run.cpus[run.ncpus++] = i;
            CPU_FREE(set);
            return;
        }
        CPU_FREE(set);
        if (errno != EINVAL)
            return;
    }
}

static void run_help(void)
{
    run_get_cpus();
    printf(
"Usage: cvia-run -n N [OPTIONS] [--] PROG [ARGS...]\n"
"\n"
"Start N ranks of PROG on this host, serve their corevia wire-up (rank,\n"
"size, key-value put/get/fence), forward their output, and end the whole\n"
"job when one rank fails.\n"
"\n"
"Options:\n"
"  -n, --np N        number of ranks, 1..%d (required)\n"
"      --bind MODE   core: pin rank r to the r-th CPU this command may use\n"
"                    (modulo their number); none: leave affinity alone\n"
"                    (default: core if N <= usable CPUs, here %d, else none)\n"
"      --timeout T   kill the job after T and exit 124; T in seconds or with\n"
"                    a unit: 500ms, 30s, 2m, 1h (default: 0 = no limit)\n"
"      --grace T     after a rank fails or aborts, give the others T to exit\n"
"                    by themselves, then SIGTERM, then SIGKILL %g s later\n"
"                    (default: %gs)\n"
"      --prefix      prefix every output line with \"[rank] \" (default: off;\n"
"                    output is still forwarded whole lines at a time)\n"
"  -h, --help        print this help and exit\n"
"  -V, --version     print the version and exit\n"
"\n"
"Environment of each rank (set by cvia-run):\n"
"  CVIA_RANK          rank, 0..N-1\n"
"  CVIA_SIZE          N\n"
"  CVIA_LOCAL_RANK    rank among the ranks on this host (= CVIA_RANK)\n"
"  CVIA_LOCAL_SIZE    ranks on this host (= N)\n"
"  CVIA_BOOT_ADDR     path of the launcher's unix socket\n"
"  CVIA_JOBID         the job's random key, 16 lowercase hex digits\n"
"Stdin of each rank is /dev/null.\n"
"\n"
"Environment read by cvia-run:\n"
"  TMPDIR             where the private socket directory goes (default /tmp)\n"
"  CVIA_LOG           at info or above, report removed shared-memory segments\n"
"\n"
"Exit status: the first non-zero status of a rank (128+S if it died of\n"
"signal S); 124 after --timeout; 128+S if cvia-run got signal S (SIGINT,\n"
"SIGTERM, SIGHUP); 2 for usage errors; 1 if the launcher itself failed;\n"
"else 0.\n", RUN_NP_MAX, run.ncpus, RUN_TERM_WAIT, RUN_GRACE_DFLT);
    exit(0);
}

static void run_parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        { "np",      required_argument, NULL, 'n' },
        { "bind",    required_argument, NULL, 'b' },
        { "timeout", required_argument, NULL, 't' },
        { "grace",   required_argument, NULL, 'g' },
        { "prefix",  no_argument,       NULL, 'p' },
        { "help",    no_argument,       NULL, 'h' },
        { "version", no_argument,       NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:n:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!run_int_ok(optarg, 1, RUN_NP_MAX, &run.np))
                run_usage("invalid -n value '%s' (expected 1..%d)", optarg, RUN_NP_MAX);
            break;
        case 'b':
            if (!strcmp(optarg, "core"))
                run.bind = RUN_BIND_CORE;
            else if (!strcmp(optarg, "none"))
                run.bind = RUN_BIND_NONE;
            else
                run_usage("invalid --bind value '%s' (expected core or none)", optarg);
            break;
        case 't':
        case 'g':
            if (cvia__parse_time(optarg, c == 't' ? &run.timeout : &run.grace) ||
                (c == 't' ? run.timeout : run.grace) > 1e9)
                run_usage("invalid --%s value '%s' (expected seconds, e.g. 10, 1.5, 30s, 2m)",
                          c == 't' ? "timeout" : "grace", optarg);
            break;
        case 'p':
            run.prefix = 1;
            break;
        case 'h':
            run_help();
            break;
        case 'V':
            printf("cvia-run (corevia) %s\n", CVIA_VERSION_STRING);
            exit(0);
        case ':':
            run_usage("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt)
                run_usage("unknown option '-%c'", optopt);
            run_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!run.np)
        run_usage("the number of ranks is required: -n N");
    if (optind >= argc)
        run_usage("no program given");
    run.argv = argv + optind;
}

/* The private directory (0700) and the listening socket inside it. */
static int run_listen(void)
{
    const char *tmp = getenv("TMPDIR");
    size_t max = sizeof(run.addr.sun_path) - sizeof("/boot.sock");

    if (!tmp || !*tmp || strlen(tmp) + sizeof("/cvia-run.XXXXXX") > max)
        tmp = "/tmp";
    snprintf(run.dir, sizeof(run.dir), "%s/cvia-run.XXXXXX", tmp);
    if (!mkdtemp(run.dir)) {
        run_msg("cannot create a directory in %s: %s", tmp, strerror(errno));
        run.dir[0] = '\0';
        return -1;
    }
    run.addr.sun_family = AF_UNIX;
    memcpy(run.addr.sun_path, run.dir, strlen(run.dir));
    strcat(run.addr.sun_path, "/boot.sock");     /* fits: checked above */
    run.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (run.lfd < 0 || bind(run.lfd, (struct sockaddr *)&run.addr, sizeof(run.addr)) ||
        listen(run.lfd, run.np < SOMAXCONN ? SOMAXCONN : run.np)) {
        run_msg("cannot listen on %s: %s", run.addr.sun_path, strerror(errno));
        return -1;
    }
    return 0;
}

static int run_setup(void)
{
    uint64_t id;
    sigset_t set;
    struct rlimit rl;
    int fd;

    /* 0, 1 and 2 open, so that no pipe we make lands there */
    while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
        ;
    if (fd > 2)
        close(fd);
    run.self = getpid();
    run.info = cvia__log_set_level(getenv("CVIA_LOG")) == 0 &&
               cvia__log_level >= CVIA_LOG_INFO;
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    run.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (run.sfd < 0) {
        run_msg("signalfd: %s", strerror(errno));
        return -1;
    }
    /* each rank costs 3 descriptors here: socket and two pipes */
    getrlimit(RLIMIT_NOFILE, &run.nofile);
    rl = run.nofile;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)run.np * 3 + 64 > rl.rlim_cur) {
        run_msg("-n %d needs about %d file descriptors, the limit is %ju",
                run.np, run.np * 3 + 64, (uintmax_t)rl.rlim_cur);
        return -1;
    }
    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
        run_msg("getrandom: %s", strerror(errno));
        return -1;
    }
    snprintf(run.jobid, sizeof(run.jobid), "%016" PRIx64, id);
    run_get_cpus();
    if (run.bind == RUN_BIND_AUTO)
        run.bind = run.ncpus > 0 && run.np <= run.ncpus ? RUN_BIND_CORE : RUN_BIND_NONE;
    run.ranks = calloc((size_t)run.np, sizeof(*run.ranks));
    if (!run.ranks) {
        run_msg("out of memory");
        return -1;
    }
    for (int r = 0; r < run.np; r++)
        run.ranks[r].out.fd = run.ranks[r].err.fd = -1;
    return run_listen();
}

/* --------------------------------------------------------------- spawning */

static _Noreturn void run_child(int r, int out, int err)
{
    char num[2][16];
    sigset_t none;
    int fd;

    setpgid(0, 0);
    /* the launcher may have died before prctl: then getppid() changed */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != run.self)
        _exit(127);
    if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 || dup2(fd, 0) < 0 ||
        dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(127);
    snprintf(num[0], sizeof(num[0]), "%d", r);
    snprintf(num[1], sizeof(num[1]), "%d", run.np);
    if (setenv("CVIA_RANK", num[0], 1) || setenv("CVIA_SIZE", num[1], 1) ||
        setenv("CVIA_LOCAL_RANK", num[0], 1) || setenv("CVIA_LOCAL_SIZE", num[1], 1) ||
        setenv("CVIA_BOOT_ADDR", run.addr.sun_path, 1) || setenv("CVIA_JOBID", run.jobid, 1))
        _exit(127);
    if (run.bind == RUN_BIND_CORE && run.ncpus > 0) {
        int cpu = run.cpus[r % run.ncpus];
        cpu_set_t *set = CPU_ALLOC(cpu + 1);
        size_t sz = CPU_ALLOC_SIZE(cpu + 1);
        if (set) {
            CPU_ZERO_S(sz, set);
            CPU_SET_S((size_t)cpu, sz, set);
            if (sched_setaffinity(0, sz, set))
                dprintf(2, "cvia-run: rank %d: cannot bind to CPU %d: %s\n",
                        r, cpu, strerror(errno));
        }
    }
    setrlimit(RLIMIT_NOFILE, &run.nofile);
    signal(SIGPIPE, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(run.argv[0], run.argv);
    dprintf(2, "cvia-run: cannot execute %s: %s\n", run.argv[0], strerror(errno));
    _exit(127);
}

static int run_spawn(int r)
{
    struct run_rank *rk = &run.ranks[r];
    int out[2], err[2], e;
    pid_t pid;

    if (pipe2(out, O_CLOEXEC))
        goto err_msg;
    if (pipe2(err, O_CLOEXEC))
        goto err_close_out;
    pid = fork();
    if (pid < 0)
        goto err_close_err;
    if (pid == 0)
        run_child(r, out[1], err[1]);
    setpgid(pid, pid);          /* also here: no window where killpg misses it */
    close(out[1]);
    close(err[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    rk->pid = pid;
    rk->alive = 1;
    rk->out = (struct run_stream){ .fd = out[0], .to = 1, .bol = 1 };
    rk->err = (struct run_stream){ .fd = err[0], .to = 2, .bol = 1 };
    run.nalive++;
    return 0;

err_close_err:
    e = errno;
    close(err[0]);
    close(err[1]);
    errno = e;
err_close_out:
    e = errno;
    close(out[0]);
    close(out[1]);
    errno = e;
err_msg:
    run_msg("cannot start rank %d: %s", r, strerror(errno));
    return -1;
}

/* ------------------------------------------------------ output forwarding */

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

/* Forward @n bytes of @s's buffer; with --prefix, tag each line start. */
static void run_emit(int r, struct run_stream *s, size_t n)
{
    char tag[16], stage[2 * RUN_OUTBUF];
    size_t taglen, k = 0;

    if (!run.prefix) {
        run_write(s->to, s->buf, n);
    } else {
        taglen = (size_t)snprintf(tag, sizeof(tag), "[%d] ", r);
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
static void run_stream_close(int r, struct run_stream *s)
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
static void run_stream_read(int r, struct run_stream *s)
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
static void run_rank_drain(int r)
{
    struct run_rank *rk = &run.ranks[r];

    for (int i = 0; i < 16 && (rk->out.fd >= 0 || rk->err.fd >= 0); i++) {
        run_stream_read(r, &rk->out);
        run_stream_read(r, &rk->err);
    }
}

/* -------------------------------------------------- launcher <-> ranks */

static void run_conn_close(struct run_conn *c)
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

static void run_conn_flush(struct run_conn *c)
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

static void run_send(struct run_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_send(struct run_conn *c, const char *fmt, ...)
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
static void run_broadcast(int except, const char *line)
{
    for (int r = 0; r < run.np; r++)
        if (r != except && run.ranks[r].alive)
            run_send(run.ranks[r].conn, "%s", line);
}

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

static int run_word_ok(const char *s, size_t max)
{
    size_t n = 0;

    for (; s && s[n]; n++)
        if ((unsigned char)s[n] <= ' ' || (unsigned char)s[n] > '~')
            return 0;
    return n > 0 && n <= max;
}

static void run_teardown(int cause);

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

static void run_conn_read(struct run_conn *c)
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

static void run_accept(void)
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
static void run_conn_sweep(void)
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

/* ------------------------------------------------------ ranks' lifecycle */

static void run_killall(int sig)
{
    for (int r = 0; r < run.np; r++)
        if (run.ranks[r].pid > 0)   /* never killpg(0): that is our own group */
            killpg(run.ranks[r].pid, sig);
}

static void run_set_phase(int phase, double wait)
{
    run.phase = phase;
    run.phase_deadline = run_now() + wait;
    if (phase == RUN_TERM || phase == RUN_KILL) {
        if (run.info && run.nalive)
            run_msg("sending %s to %d remaining rank(s)",
                    phase == RUN_TERM ? "SIGTERM" : "SIGKILL", run.nalive);
        run_killall(phase == RUN_TERM ? SIGTERM : SIGKILL);
    }
}

/* Is a corevia program (one that said HELLO, so hears TEARDOWN) still
 * running? Only those are worth the grace period. */
static int run_grace_useful(void)
{
    for (int r = 0; r < run.np; r++)
        if (run.ranks[r].alive && run.ranks[r].hello)
            return 1;
    return 0;
}

/* Tell everyone the job ends, give corevia ranks --grace to exit by
 * themselves (they can say why), then SIGTERM. */
static void run_teardown(int cause)
{
    char line[32];

    if (run.phase != RUN_RUNNING)
        return;
    run.cause = cause;
    snprintf(line, sizeof(line), "TEARDOWN %d\n", cause);
    run_broadcast(-1, line);
    if (run.grace > 0 && run_grace_useful())
        run_set_phase(RUN_GRACE, run.grace);
    else
        run_set_phase(RUN_TERM, RUN_TERM_WAIT);
}

static void run_rank_exited(int r, const siginfo_t *si)
{
    struct run_rank *rk = &run.ranks[r];
    int sig = si->si_code != CLD_EXITED;

    /* its last words (and an ABORT) come before our verdict */
    if (rk->conn)
        run_conn_read(rk->conn);
    run_rank_drain(r);
    if (!sig && si->si_status == 0) {
        if (rk->hello && !rk->fini) {
            snprintf(rk->event, sizeof(rk->event), "EXIT %d 0\n", r);
            run_broadcast(r, rk->event);
        }
        return;
    }
    if (!run.status)
        run.status = sig ? 128 + si->si_status : si->si_status;
    /* deaths we caused with SIGTERM/SIGKILL are expected: say nothing */
    if (run.phase < RUN_TERM) {
        if (sig) {
            const char *name = sigabbrev_np(si->si_status);
            run_msg("rank %d (pid %d) killed by signal %s%s%s", r, (int)rk->pid,
                    name ? "SIG" : "", name ? name : "", si->si_code == CLD_DUMPED ?
                    " (core dumped)" : "");
        } else {
            run_msg("rank %d (pid %d) exited with status %d", r, (int)rk->pid, si->si_status);
        }
    }
    snprintf(rk->event, sizeof(rk->event), "%s %d %d\n", sig ? "KILLED" : "EXIT",
             r, si->si_status);
    run_broadcast(r, rk->event);
    run_teardown(r);
}

static void run_check_children(void)
{
    for (int r = 0; r < run.np; r++) {
        siginfo_t si;
        if (!run.ranks[r].alive)
            continue;
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)run.ranks[r].pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
            if (errno == EINTR) {
                r--;
                continue;
            }
            si.si_pid = run.ranks[r].pid;     /* ECHILD: cannot happen; do not wait on it */
            si.si_code = CLD_KILLED;
            si.si_status = SIGKILL;
        }
        if (si.si_pid == 0)
            continue;
        run.ranks[r].alive = 0;
        run.nalive--;
        run_rank_exited(r, &si);
    }
}

static void run_signals(void)
{
    struct signalfd_siginfo si;
    int child = 0;

    while (read(run.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            child = 1;
        } else if (run.phase < RUN_TERM) {
            run_msg("got SIG%s, terminating the job", sigabbrev_np((int)si.ssi_signo));
            if (!run.status)
                run.status = 128 + (int)si.ssi_signo;
            if (run.phase == RUN_RUNNING) {
                run.cause = -1;
                run_broadcast(-1, "TEARDOWN -1\n");
            }
            run_set_phase(RUN_TERM, RUN_TERM_WAIT);
        } else if (run.phase == RUN_TERM) {
            run_set_phase(RUN_KILL, RUN_KILL_WAIT);   /* asked twice: now */
        }
    }
    if (child)
        run_check_children();
}

/* Deadlines: the job's --timeout, then each teardown phase. Returns the
 * poll() timeout in ms, or -2 to stop waiting. */
static int run_timers(void)
{
    double now = run_now(), next = -1;

    if (run.phase == RUN_RUNNING && run.timeout > 0) {
        if (now >= run.job_deadline) {
            run_msg("timeout after %g s, killing the job", run.timeout);
            run.status = 124;
            run_teardown(-1);
        } else {
            next = run.job_deadline;
        }
    }
    if (run.phase != RUN_RUNNING &&
        (now >= run.phase_deadline || (run.phase == RUN_GRACE && !run_grace_useful()))) {
        if (run.phase == RUN_GRACE)
            run_set_phase(RUN_TERM, RUN_TERM_WAIT);
        else if (run.phase == RUN_TERM)
            run_set_phase(RUN_KILL, RUN_KILL_WAIT);
        else
            return -2;
    }
    if (run.phase != RUN_RUNNING)
        next = run.phase_deadline;
    if (next < 0)
        return -1;
    double ms = (next - now) * 1e3 + 1;
    return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

enum { RUN_PFD_SIG, RUN_PFD_LISTEN, RUN_PFD_CONN, RUN_PFD_OUT, RUN_PFD_ERR };

static void run_loop(void)
{
    size_t cap = 2 + 3 * (size_t)run.np + (size_t)run.np + 32;
    struct pollfd *pfd = malloc(cap * sizeof(*pfd));
    struct { int kind, r; struct run_conn *c; } *tag = malloc(cap * sizeof(*tag));
    size_t n;

    if (!pfd || !tag) {
        run_msg("out of memory");
        run.status = run.status ? run.status : 1;
        run_set_phase(RUN_KILL, RUN_KILL_WAIT);
        free(pfd);
        free(tag);
        return;
    }
#define RUN_ADD(f, ev, k, rr, cc) do { if (n < cap) { \
        pfd[n] = (struct pollfd){ .fd = (f), .events = (ev) }; \
        tag[n].kind = (k); tag[n].r = (rr); tag[n].c = (cc); n++; } } while (0)
    while (run.nalive > 0) {
        int ms = run_timers();
        if (ms == -2) {
            run_msg("%d rank(s) did not exit after SIGKILL; giving up on them", run.nalive);
            break;
        }
        n = 0;
        RUN_ADD(run.sfd, POLLIN, RUN_PFD_SIG, -1, NULL);
        if (run.nanon <= run.np + 16)
            RUN_ADD(run.lfd, POLLIN, RUN_PFD_LISTEN, -1, NULL);
        for (struct run_conn *c = run.conns; c; c = c->next)
            RUN_ADD(c->fd, POLLIN | (c->outlen ? POLLOUT : 0), RUN_PFD_CONN, -1, c);
        for (int r = 0; r < run.np; r++) {
            if (run.ranks[r].out.fd >= 0)
                RUN_ADD(run.ranks[r].out.fd, POLLIN, RUN_PFD_OUT, r, NULL);
            if (run.ranks[r].err.fd >= 0)
                RUN_ADD(run.ranks[r].err.fd, POLLIN, RUN_PFD_ERR, r, NULL);
        }
        if (poll(pfd, (nfds_t)n, ms) < 0) {
            if (errno == EINTR)
                continue;
            run_msg("poll: %s", strerror(errno));
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (!pfd[i].revents)
                continue;
            switch (tag[i].kind) {
            case RUN_PFD_SIG:    run_signals(); break;
            case RUN_PFD_LISTEN: run_accept(); break;
            case RUN_PFD_OUT:    run_stream_read(tag[i].r, &run.ranks[tag[i].r].out); break;
            case RUN_PFD_ERR:    run_stream_read(tag[i].r, &run.ranks[tag[i].r].err); break;
            case RUN_PFD_CONN:
                if (pfd[i].revents & POLLOUT)
                    run_conn_flush(tag[i].c);
                if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                    run_conn_read(tag[i].c);
                break;
            }
        }
        run_conn_sweep();
    }
#undef RUN_ADD
    free(pfd);
    free(tag);
}

/* ---------------------------------------------------------------- finish */

static int run_pid_is_ours(long pid)
{
    for (int r = 0; r < run.np; r++) {
        const struct run_rank *rk = &run.ranks[r];
        if (rk->pid > 0 && pid == rk->pid)
            return 1;           /* a zombie still: its pid is not reused */
        if (rk->lib_pid > 0 && pid == rk->lib_pid && kill(rk->lib_pid, 0) < 0 &&
            errno == ESRCH)
            return 1;
    }
    return 0;
}

/* The library names its segments cvia-<uid>-<pid>-<n>. */
static void run_cleanup_shm(void)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *de;
    unsigned long uid;
    long pid;
    int off, count = 0;

    if (!d)
        return;
    while ((de = readdir(d))) {
        off = 0;
        if (sscanf(de->d_name, "cvia-%lu-%ld-%n", &uid, &pid, &off) == 2 && off &&
            uid == (unsigned long)getuid() && run_pid_is_ours(pid) &&
            unlinkat(dirfd(d), de->d_name, 0) == 0)
            count++;
    }
    closedir(d);
    if (run.info)
        run_msg("removed %d leftover shared-memory segment(s) of the job", count);
}

static void run_finish(void)
{
    /* whatever the ranks left in their process groups goes too */
    run_killall(SIGKILL);
    for (int r = 0; run.ranks && r < run.np; r++) {
        struct run_rank *rk = &run.ranks[r];
        for (int i = 0; i < 16 && rk->out.fd >= 0; i++)
            run_stream_read(r, &rk->out);
        for (int i = 0; i < 16 && rk->err.fd >= 0; i++)
            run_stream_read(r, &rk->err);
        if (rk->out.fd >= 0)
            run_stream_close(r, &rk->out);
        if (rk->err.fd >= 0)
            run_stream_close(r, &rk->err);
    }
    if (run.ranks)
        run_cleanup_shm();
    for (int r = 0; run.ranks && r < run.np; r++)
        if (run.ranks[r].pid > 0)
            waitpid(run.ranks[r].pid, NULL, WNOHANG);
    for (struct run_conn *c = run.conns; c; c = c->next)
        run_conn_close(c);
    run_conn_sweep();
    if (run.lfd >= 0)
        close(run.lfd);
    if (run.addr.sun_path[0])
        unlink(run.addr.sun_path);
    if (run.dir[0])
        rmdir(run.dir);
    tdestroy(run.kv, run_kv_free);
    free(run.ranks);
    free(run.cpus);
}

int main(int argc, char **argv)
{
    run_parse_args(argc, argv);
    if (run_setup()) {
        run_finish();
        return 1;
    }
    if (run.timeout > 0)
        run.job_deadline = run_now() + run.timeout;
    for (int r = 0; r < run.np; r++) {
        if (run_spawn(r)) {
            run.status = 1;
            run_teardown(-1);
            break;
        }
    }
    run_loop();
    run_finish();
    return run.status;
}
