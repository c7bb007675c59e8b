/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-run: start N ranks of a program, on this host or spread over network
 * namespaces standing for hosts (--hosts), serve their wire-up
 * (src/boot/boot_proto.h), forward their output, and end the whole job when
 * one rank fails. Single-threaded: one poll() loop over a signalfd, the
 * listening socket, the ranks' sockets and output pipes; it never spins.
 * This file: options, setup, spawning, the ranks' lifecycle and the loop;
 * run.h says where the rest is.
 *
 * An exited rank stays a zombie (seen with waitid(WNOWAIT)) until the very
 * end, so its pid, which is also its process group id, cannot be reused
 * while we may still killpg() that group. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
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
#include "util/log.h"
#include "util/param.h"
#include "run.h"
#include "util/clock.h"

#ifndef CVIA_VERSION_STRING
#define RUN_STR_(x) #x
#define RUN_STR(x) RUN_STR_(x)
#define CVIA_VERSION_STRING RUN_STR(CVIA_VERSION_MAJOR) "." \
    RUN_STR(CVIA_VERSION_MINOR) "." RUN_STR(CVIA_VERSION_PATCH)
#endif

struct run_state run = {
    .bind = RUN_BIND_AUTO, .map = RUN_MAP_CYCLIC, .grace = RUN_GRACE_DFLT,
    .lfd = -1, .sfd = -1, .stdin_to = 0,
};

void run_msg(const char *fmt, ...)
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

_Noreturn void run_usage(const char *fmt, ...)
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
int run_int_ok(const char *s, long min, long max, int *out)
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
"Start N ranks of PROG on this host, or spread over network namespaces\n"
"that stand for hosts, serve their corevia wire-up (rank, size, key-value\n"
"put/get/fence), forward their output, and end the whole job when one\n"
"rank fails.\n"
"\n"
"Options:\n"
"  -n, --np N        number of ranks, 1..%d (required)\n"
"      --hosts LIST  comma-separated network namespaces, one per \"host\":\n"
"                    NAME (/run/netns/NAME, as made by ip netns add) or a\n"
"                    path to a namespace file; each rank enters its host's\n"
"                    namespace before PROG starts (default: none, every\n"
"                    rank stays in cvia-run's namespace, a single host)\n"
"      --map-by WAY  how ranks are placed on the hosts: cyclic: rank r on\n"
"                    host r %% H; block: consecutive ranks on a host, N/H\n"
"                    each, the first N%%H hosts one more (default: cyclic)\n"
"      --bind MODE   core: pin each rank to the l-th CPU this command may\n"
"                    use, l being its rank on its host (modulo the number\n"
"                    of CPUs; every host counts as having all of them);\n"
"                    none: leave affinity alone (default: core if no host\n"
"                    has more ranks than usable CPUs, here %d, else none)\n"
"      --timeout T   kill the job after T and exit 124; T in seconds or with\n"
"                    a unit: 500ms, 30s, 2m, 1h (default: 0 = no limit)\n"
"      --grace T     after a rank fails or aborts, give the others T to exit\n"
"                    by themselves, then SIGTERM, then SIGKILL %g s later\n"
"                    (default: %gs)\n"
"      --prefix      prefix every output line with \"[rank] \", or with\n"
"                    \"[rank@host] \" under --hosts (default: off; output is\n"
"                    still forwarded whole lines at a time)\n"
"      --stdin WHO   which ranks read cvia-run's stdin: a rank number, all\n"
"                    (each rank gets a copy) or none (/dev/null for every\n"
"                    rank); the others get /dev/null (default: 0, as mpirun)\n"
"  -h, --help        print this help and exit\n"
"  -V, --version     print the version and exit\n"
"\n"
"Environment of each rank (set by cvia-run):\n"
"  CVIA_RANK          rank, 0..N-1\n"
"  CVIA_SIZE          N\n"
"  CVIA_LOCAL_RANK    rank among the ranks on its host (without --hosts:\n"
"                     CVIA_RANK)\n"
"  CVIA_LOCAL_SIZE    ranks on its host (without --hosts: N)\n"
"  CVIA_BOOT_ADDR     path of the launcher's unix socket\n"
"  CVIA_JOBID         the job's random key, 16 lowercase hex digits\n"
"Stdin: forwarded to rank 0 (see --stdin) until it ends; a rank that exits\n"
"or closes its stdin stops receiving it; the other ranks read /dev/null.\n"
"Each option may be given once: a repeated one is a usage error.\n"
"\n"
"Environment read by cvia-run:\n"
"  TMPDIR             where the private socket directory goes (default /tmp)\n"
"  CVIA_LOG           at info or above, report removed shared-memory segments\n"
"\n"
"Exit status: the first non-zero status of a rank (128+S if it died of\n"
"signal S); 124 after --timeout; 128+S if cvia-run got signal S (SIGINT,\n"
"SIGTERM, SIGHUP); 2 for usage errors, an unknown host included; 1 if\n"
"the launcher itself failed (it may not enter a host, say); else 0.\n", RUN_NP_MAX, run.ncpus, RUN_TERM_WAIT, RUN_GRACE_DFLT);
    exit(0);
}

static void run_parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        { "np",      required_argument, NULL, 'n' },
        { "hosts",   required_argument, NULL, 'H' },
        { "map-by",  required_argument, NULL, 'm' },
        { "bind",    required_argument, NULL, 'b' },
        { "timeout", required_argument, NULL, 't' },
        { "grace",   required_argument, NULL, 'g' },
        { "prefix",  no_argument,       NULL, 'p' },
        { "stdin",   required_argument, NULL, 's' },
        { "help",    no_argument,       NULL, 'h' },
        { "version", no_argument,       NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    /* every option at most once: "-n 2 -n 3" is a mistake, not "3" */
    static const char *const names[][2] = {
        { "n", "-n/--np" }, { "H", "--hosts" }, { "m", "--map-by" }, { "b", "--bind" },
        { "t", "--timeout" }, { "g", "--grace" }, { "p", "--prefix" }, { "s", "--stdin" },
    };
    const char *stdin_arg = NULL;
    char seen[128] = { 0 };
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:n:hV", opts, NULL)) != -1) {
        if (c > 0 && c < (int)sizeof(seen) && c != ':' && c != '?' && seen[c]++) {
            for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (names[i][0][0] == c)
                    run_usage("option %s given more than once", names[i][1]);
        }
        switch (c) {
        case 'n':
            if (!run_int_ok(optarg, 1, RUN_NP_MAX, &run.np))
                run_usage("invalid -n value '%s' (expected 1..%d)", optarg, RUN_NP_MAX);
            break;
        case 'H':
            run.hosts_arg = optarg;
            break;
        case 'm':
            if (!strcmp(optarg, "cyclic"))
                run.map = RUN_MAP_CYCLIC;
            else if (!strcmp(optarg, "block"))
                run.map = RUN_MAP_BLOCK;
            else
                run_usage("invalid --map-by value '%s' (expected cyclic or block)", optarg);
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
        case 's':
            stdin_arg = optarg;
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
    if (!stdin_arg)
        run.stdin_to = 0;
    else if (!strcmp(stdin_arg, "none"))
        run.stdin_to = RUN_STDIN_NONE;
    else if (!strcmp(stdin_arg, "all"))
        run.stdin_to = RUN_STDIN_ALL;
    else if (!run_int_ok(stdin_arg, 0, run.np - 1, &run.stdin_to))
        run_usage("invalid --stdin value '%s' (expected none, all or a rank 0..%d)",
                  stdin_arg, run.np - 1);
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
    long need;
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
    /* each rank costs 3 descriptors here: socket and two pipes, a fourth
     * if it reads our stdin (and each host one, already open) */
    getrlimit(RLIMIT_NOFILE, &run.nofile);
    rl = run.nofile;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    need = (long)run.np * 3 + run.nhosts + 64 +
           (run.stdin_to == RUN_STDIN_ALL ? run.np : run.stdin_to >= 0);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)need > rl.rlim_cur) {
        run_msg("-n %d needs about %ld open files, the limit is %ju (ulimit -n)",
                run.np, need, (uintmax_t)rl.rlim_cur);
        return -1;
    }
    /* a background job reading a terminal gets EIO instead of stopping */
    {
        struct sigaction ign = { .sa_handler = SIG_IGN };
        sigaction(SIGTTIN, &ign, &run.ttin);
    }
    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
        run_msg("getrandom: %s", strerror(errno));
        return -1;
    }
    snprintf(run.jobid, sizeof(run.jobid), "%016" PRIx64, id);
    run.ranks = calloc((size_t)run.np, sizeof(*run.ranks));
    if (!run.ranks) {
        run_msg("out of memory");
        return -1;
    }
    run_hosts_place();
    for (int r = 0; r < run.np; r++)
        run.ranks[r].out.fd = run.ranks[r].err.fd = run.ranks[r].in_fd = -1;
    /* every host is a machine of its own with our CPUs (see --help) */
    run_get_cpus();
    if (run.bind == RUN_BIND_AUTO)
        run.bind = run.ncpus > 0 && run_hosts_max_size() <= run.ncpus ?
                   RUN_BIND_CORE : RUN_BIND_NONE;
    return run_listen();
}

/* --------------------------------------------------------------- spawning */

static _Noreturn void run_child(int r, int in, int out, int err)
{
    const struct run_rank *rk = &run.ranks[r];
    char num[4][16];
    sigset_t none;

    setpgid(0, 0);
    /* the launcher may have died before prctl: then getppid() changed */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != run.self)
        _exit(127);
    if (in < 0 && (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        _exit(127);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(127);
    run_host_enter(r);          /* from here on, we are on our host */
    snprintf(num[0], sizeof(num[0]), "%d", r);
    snprintf(num[1], sizeof(num[1]), "%d", run.np);
    snprintf(num[2], sizeof(num[2]), "%d", rk->local_rank);
    snprintf(num[3], sizeof(num[3]), "%d", run.hosts[rk->host].nranks);
    if (setenv("CVIA_RANK", num[0], 1) || setenv("CVIA_SIZE", num[1], 1) ||
        setenv("CVIA_LOCAL_RANK", num[2], 1) || setenv("CVIA_LOCAL_SIZE", num[3], 1) ||
        setenv("CVIA_BOOT_ADDR", run.addr.sun_path, 1) || setenv("CVIA_JOBID", run.jobid, 1))
        _exit(127);
    if (run.bind == RUN_BIND_CORE && run.ncpus > 0) {
        int cpu = run.cpus[rk->local_rank % run.ncpus];
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
    sigaction(SIGTTIN, &run.ttin, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(run.argv[0], run.argv);
    dprintf(2, "cvia-run: cannot execute %s: %s\n", run.argv[0], strerror(errno));
    _exit(127);
}

static int run_spawn(int r)
{
    struct run_rank *rk = &run.ranks[r];
    int out[2], err[2], in[2] = { -1, -1 }, e;
    pid_t pid;

    if (run_stdin_gets(r) && pipe2(in, O_CLOEXEC))
        goto err_msg;
    if (pipe2(out, O_CLOEXEC))
        goto err_close_in;
    if (pipe2(err, O_CLOEXEC))
        goto err_close_out;
    pid = fork();
    if (pid < 0)
        goto err_close_err;
    if (pid == 0)
        run_child(r, in[0], out[1], err[1]);
    setpgid(pid, pid);          /* also here: no window where killpg misses it */
    close(out[1]);
    close(err[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    if (in[0] >= 0) {
        close(in[0]);
        fcntl(in[1], F_SETFL, O_NONBLOCK);
        rk->in_fd = in[1];
    }
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
err_close_in:
    e = errno;
    if (in[0] >= 0) {
        close(in[0]);
        close(in[1]);
    }
    errno = e;
err_msg:
    run_msg("cannot start rank %d: %s", r, strerror(errno));
    return -1;
}

/* ------------------------------------------------------ ranks' lifecycle */

static void run_killall(int sig)
{
    /* setup may have failed before the table existed (a low ulimit -n) */
    for (int r = 0; run.ranks && r < run.np; r++)
        if (run.ranks[r].pid > 0)   /* never killpg(0): that is our own group */
            killpg(run.ranks[r].pid, sig);
}

static void run_set_phase(int phase, double wait)
{
    run.phase = phase;
    run.phase_deadline = cvia__clock_s() + wait;
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
void run_teardown(int cause)
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
    run_stdin_close(r);
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
        const char *host = run_host_name(r);
        char where[RUN_HOST_NAME_MAX + 16] = "";
        if (host)
            snprintf(where, sizeof(where), " on host %s", host);
        if (sig) {
            const char *name = sigabbrev_np(si->si_status);
            run_msg("rank %d (pid %d)%s killed by signal %s%s%s", r, (int)rk->pid, where,
                    name ? "SIG" : "", name ? name : "", si->si_code == CLD_DUMPED ?
                    " (core dumped)" : "");
        } else {
            run_msg("rank %d (pid %d)%s exited with status %d", r, (int)rk->pid, where,
                    si->si_status);
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
    double now = cvia__clock_s(), next = -1;

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

enum { RUN_PFD_SIG, RUN_PFD_LISTEN, RUN_PFD_CONN, RUN_PFD_OUT, RUN_PFD_ERR, RUN_PFD_STDIN,
       RUN_PFD_IN };

static void run_loop(void)
{
    size_t cap = 3 + 4 * (size_t)run.np + (size_t)run.np + 32;
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
            if (run.ranks[r].in_fd >= 0 && run.ranks[r].in_off < run.inlen)
                RUN_ADD(run.ranks[r].in_fd, POLLOUT, RUN_PFD_IN, r, NULL);
        }
        if (run_stdin_want())
            RUN_ADD(0, POLLIN, RUN_PFD_STDIN, -1, NULL);
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
            case RUN_PFD_STDIN:  run_stdin_read(); break;
            case RUN_PFD_IN:     run_stdin_write(tag[i].r); break;
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

/* The library names its segments cvia-<uid>-<pid>-<random hex>; only files
 * this user owns are removed (another user's file under such a name is
 * theirs, whatever it is called). */
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
        struct stat st;
        off = 0;
        if (sscanf(de->d_name, "cvia-%lu-%ld-%n", &uid, &pid, &off) == 2 && off &&
            uid == (unsigned long)getuid() && run_pid_is_ours(pid) &&
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_uid == getuid() && S_ISREG(st.st_mode) &&
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
        run_stdin_close(r);
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
    run_kv_destroy();
    run_hosts_close();
    free(run.ranks);
    free(run.cpus);
    free(run.inbuf);
}

int main(int argc, char **argv)
{
    run_parse_args(argc, argv);
    run_hosts_open();           /* a host that is not there: exit 2 */
    if (run_setup()) {
        run_finish();
        return 1;
    }
    if (run.timeout > 0)
        run.job_deadline = cvia__clock_s() + run.timeout;
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
