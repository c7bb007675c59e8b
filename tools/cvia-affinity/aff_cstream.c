/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The stream over corevia's network provider: a job of two ranks started
 * by cvia-run, rank 0 sending tagged messages to rank 1 through the public
 * API (corevia.h), in two network namespaces so that corevia takes its
 * network provider (CVIA_NET) and not shared memory between them. The
 * receiving rank measures what the kernel stream measures (bytes, time,
 * its own CPU, softirq work of the machine) except the interval between
 * system calls: the provider makes those inside the library (recv,
 * sendmsg, poll while it polls for progress), where neither this program
 * nor /proc/PID/io sees them, so the interval it reports is the one
 * between completed messages. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "aff.h"
#include "aff_stream.h"
#include "aff_sys.h"
#include "util/param.h"
#include "boot/boot_env.h"

#define SUB "stream"
#define TAG_DATA 7             /* data messages, then one struct cs_end */
#define OUT_CAP  (64 * 1024)   /* what we keep of the job's output */

/* ---- in the ranks ------------------------------------------------------------ */

/* The last message: shorter than any data message (chunk >= 64), it says
 * what the sender sent and for how long, so that the receiver can tell a
 * burst out of socket buffers (it was descheduled while the sender kept
 * going) from the stream's rate. */
struct cs_end {
    uint64_t magic;
    double   bytes, secs;
};
#define CS_END_MAGIC 0x63766961656e6421ull   /* "cviaend!" */

static __attribute__((format(printf, 1, 2), noreturn)) void cs_fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    aff_err(SUB, "rank %s: %s", getenv("CVIA_RANK") ? getenv("CVIA_RANK") : "?", msg);
    if (cvia_initialized())
        cvia_abort(1, msg);
    exit(1);
}

static void cs_send(const struct aff_cstream_opts *o)
{
    char *buf = malloc(o->chunk);
    cvia_req_t *req = calloc((size_t)o->window, sizeof(*req));
    double t0, t, sent = 0;
    struct cs_end end = { .magic = CS_END_MAGIC };
    int rc;

    if (!buf || !req)
        cs_fail("out of memory");
    memset(buf, 0x5a, o->chunk);
    /* the receiver has posted its receives and is running */
    if ((rc = cvia_barrier()))
        cs_fail("barrier: %s", cvia_strerror(rc));
    t0 = cvia__clock_s();
    for (int i = 0;; i = (i + 1) % o->window) {
        if (req[i] && (rc = cvia_wait(&req[i], NULL)))
            cs_fail("send: %s", cvia_strerror(rc));
        if ((t = cvia__clock_s()) - t0 >= o->secs)
            break;
        if (o->rate > 0) {
            /* paced: keep progressing (the provider writes what is queued
             * only in our calls), napping while far from due */
            double due = t0 + sent / o->rate;
            while ((t = cvia__clock_s()) < due && t - t0 < o->secs) {
                cvia_progress();
                if (due - t > 200e-6) {
                    struct timespec nap = { 0, 100000 };
                    nanosleep(&nap, NULL);
                }
            }
            if (t - t0 >= o->secs)
                break;
        }
        if ((rc = cvia_isend(buf, o->chunk, 1, TAG_DATA, &req[i])))
            cs_fail("send: %s", cvia_strerror(rc));
        sent += (double)o->chunk;
    }
    if ((rc = cvia_waitall((size_t)o->window, req, NULL)))
        cs_fail("send: %s", cvia_strerror(rc));
    end.bytes = sent;
    end.secs = cvia__clock_s() - t0;
    if ((rc = cvia_send(&end, sizeof(end), 1, TAG_DATA)))
        cs_fail("send: %s", cvia_strerror(rc));
    free(req);
    free(buf);
}

static void cs_recv(const struct aff_cstream_opts *o, const char *path, int json)
{
    char *bufs = malloc((size_t)o->window * o->chunk);
    cvia_req_t *req = calloc((size_t)o->window, sizeof(*req));
    struct aff_stream_res r = { .min_gap_us = INFINITY };
    struct aff_cpustat c0 = { 0 }, c1 = { 0 };
    struct cs_end end;
    double first = -1, t0 = 0, last = 0, cpu0 = 0, win, si = 0;
    long hz = sysconf(_SC_CLK_TCK);
    char prov[32];
    int rc;

    if (!bufs || !req)
        cs_fail("out of memory");
    for (int i = 0; i < o->window; i++)
        if ((rc = cvia_irecv(bufs + (size_t)i * o->chunk, o->chunk, 0, TAG_DATA, &req[i])))
            cs_fail("receive: %s", cvia_strerror(rc));
    if ((rc = cvia_barrier()))
        cs_fail("barrier: %s", cvia_strerror(rc));
    if (o->omit <= 0) {
        /* the window opens with the sender's start, not with the first
         * message: a receiver the scheduler keeps waiting is slow, not a
         * burst at memory speed from the socket buffers */
        t0 = cvia__clock_s();
        cpu0 = aff_cpu_self();
        aff_cpustat_read(&c0);
    }
    for (int i = 0;; i = (i + 1) % o->window) {
        cvia_status_t st;
        double t;
        rc = cvia_wait(&req[i], &st);
        t = cvia__clock_s();
        if (rc)
            cs_fail("receive: %s", cvia_strerror(rc));
        if (st.len < o->chunk) {       /* the end */
            if (st.len == sizeof(end))
                memcpy(&end, bufs + (size_t)i * o->chunk, sizeof(end));
            if (st.len != sizeof(end) || end.magic != CS_END_MAGIC)
                cs_fail("receive: a message of %zu bytes, neither data (%zu) nor the end",
                        st.len, o->chunk);
            break;
        }
        if (first < 0)
            first = t;
        if (t - first >= o->omit) {    /* else warm-up: not counted */
            if (r.calls == 0 && o->omit > 0) {
                t0 = t;
                cpu0 = aff_cpu_self();
                aff_cpustat_read(&c0);
            } else if (r.calls > 0 && (t - last) * 1e6 < r.min_gap_us) {
                r.min_gap_us = (t - last) * 1e6;
            }
            last = t;
            r.bytes += (double)st.len;
            r.calls++;
        }
        if ((rc = cvia_irecv(bufs + (size_t)i * o->chunk, o->chunk, 0, TAG_DATA, &req[i])))
            cs_fail("receive: %s", cvia_strerror(rc));
    }
    win = cvia__clock_s() - t0;
    r.cpu_s = aff_cpu_self() - cpu0;
    for (int i = 0; i < o->window; i++)   /* the receives the end left posted */
        if (req[i] && cvia_cancel(&req[i]) == -EBUSY)
            cvia_wait(&req[i], NULL);
    aff_cpustat_read(&c1);
    for (int c = 0; c < c0.n && c < c1.n; c++)
        si += (double)(c1.softirq[c] - c0.softirq[c]);
    aff_cpustat_free(&c0);
    aff_cpustat_free(&c1);
    r.secs = last > t0 ? last - t0 : 0;
    if (r.calls < 2 || r.secs <= 0)
        cs_fail("the stream moved almost nothing (%.0f bytes in %.0f messages)", r.bytes,
                r.calls);
    si = si / (double)(hz > 0 ? hz : 100) / win;
    snprintf(prov, sizeof(prov), "%.*s", (int)strcspn(path, ":"), path);
    if (json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w, NULL);
        jw_str(&w, "role", "recv");
        jw_str(&w, "transport", "corevia");
        jw_str(&w, "provider", prov);
        jw_str(&w, "path", path);
        jw_num(&w, "bytes", r.bytes);
        jw_num(&w, "seconds", r.secs);
        jw_num(&w, "bits_per_second", 8 * r.bytes / r.secs);
        jw_num(&w, "calls", r.calls);
        jw_num(&w, "interval_us", 1e6 * r.secs / r.calls);
        jw_num(&w, "min_interval_us", r.min_gap_us);
        jw_num(&w, "cpu_seconds", r.cpu_s);
        jw_num(&w, "cpu_cores", win > 0 ? r.cpu_s / win : 0);
        jw_num(&w, "softirq_cores", si);
        jw_num(&w, "sender_bytes", end.bytes);
        jw_num(&w, "sender_seconds", end.secs);
        jw_end_obj(&w);
    } else {
        printf("received %.0f bytes in %.3f s over corevia (%s): %.3f Gbit/s, %.0f messages "
               "(%.2f us apart, %.2f us at least), CPU %.3f s (%.0f%% of a core), softirq "
               "%.2f core; the sender sent %.0f bytes in %.3f s\n", r.bytes, r.secs, prov,
               8e-9 * r.bytes / r.secs, r.calls, 1e6 * r.secs / r.calls, r.min_gap_us, r.cpu_s,
               win > 0 ? 100 * r.cpu_s / win : 0, si, end.bytes, end.secs);
    }
    fflush(stdout);
    free(req);
    free(bufs);
}

int aff_cstream_rank(const struct aff_cstream_opts *o, int json)
{
    struct cvia_launch_env le = cvia__launch_env();   /* cvia-run, mpirun or srun */
    const char *cpus;
    char path[256];
    int rank, rc;

    if (le.kind == CVIA_LAUNCHER_NONE || le.rank < 0) {
        aff_err(SUB, "--transport corevia is a job of two ranks: start it with cvia-run -n 2 "
                "--hosts NS_SEND,NS_RECV (rank 0 sends, rank 1 receives), or with mpirun "
                "or srun --mpi=pmix on two hosts");
        return 2;
    }
    if (le.size >= 0 && le.size != 2) {
        aff_err(SUB, "--transport corevia: needs a job of 2 ranks, not %d", le.size);
        return 2;
    }
    rank = le.rank == 1;
    /* pinned before cvia_init, so that its buffers are first touched there */
    cpus = rank ? o->recv_cpus : o->send_cpus;
    if (cpus && (rc = aff_pin_self_list(cpus)) < 0)
        cs_fail("cannot run on CPUs %s: %s", cpus, strerror(-rc));
    /* a bound on the whole rank: a peer that hangs ends the job */
    alarm((unsigned)ceil(o->timeout));
    if ((rc = cvia_init(NULL, NULL)))
        cs_fail("cvia_init: %s", cvia_strerror(rc));
    if (cvia_size() != 2)
        cs_fail("--transport corevia: needs a job of 2 ranks, not %d", cvia_size());
    if ((rc = cvia_peer_info(1 - rank, path, sizeof(path))) < 0)
        cs_fail("cvia_peer_info: %s", cvia_strerror(rc));
    if (!strncmp(path, "shm", 3)) {
        /* said once, by the receiver; both end cleanly */
        if (rank)
            aff_err(SUB, "the two ranks share a host, so corevia joins them by shared memory, "
                    "not by its network provider: start them in two network namespaces "
                    "(cvia-run --hosts)");
        cvia_finalize();
        return 1;
    }
    if (rank)
        cs_recv(o, path, json);
    else
        cs_send(o);
    if ((rc = cvia_finalize()))
        cs_fail("cvia_finalize: %s", cvia_strerror(rc));
    return 0;
}

/* ---- starting the job ---------------------------------------------------------- */

/* Network providers this corevia has (the values CVIA_NET takes). */
static const struct cvia_param *net_param(void)
{
    const struct cvia_param_table *t;
    for (int i = 0; (t = cvia__param_table(i)); i++) {
        if (strcmp(t->prefix, ""))
            continue;
        for (const struct cvia_param *p = t->params; p->name; p++)
            if (!strcmp(p->name, "NET") && p->type == CVIA_PARAM_ENUM && p->values)
                return p;
    }
    return NULL;
}

int aff_cstream_providers(char *buf, size_t cap)
{
    const struct cvia_param *p = net_param();
    size_t n = 0;

    buf[0] = '\0';
    for (int i = 0; p && p->values[i] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", p->values[i]);
    return p ? 0 : -1;
}

int aff_cstream_provider_ok(const char *name)
{
    const struct cvia_param *p = net_param();

    for (int i = 0; p && p->values[i]; i++)
        if (!strcmp(p->values[i], name))
            return 1;
    return 0;
}

static int is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int aff_find_launcher(char *self, size_t scap, char *out, size_t cap)
{
    static const char *const near[] = { "cvia-run", "../../cvia-run" };  /* installed, build tree */
    const char *path = getenv("PATH"), *slash;
    ssize_t n = readlink("/proc/self/exe", self, scap - 1);

    if (n <= 0)
        return -1;
    self[n] = '\0';
    slash = strrchr(self, '/');
    for (size_t i = 0; slash && i < sizeof(near) / sizeof(near[0]); i++)
        if ((size_t)snprintf(out, cap, "%.*s/%s", (int)(slash - self), self, near[i]) < cap &&
            is_exec(out))
            return 0;
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len && (size_t)snprintf(out, cap, "%.*s/cvia-run", (int)len, path) < cap &&
            is_exec(out))
            return 0;
        path = end ? end + 1 : NULL;
    }
    return -1;
}

/* Read what the job writes on @fd[0] and @fd[1] until both close or
 * @deadline (monotonic). Returns 0, or -ETIMEDOUT. */
static int drain(int fd[2], char *buf[2], size_t len[2], double deadline)
{
    int open_ = 2;

    while (open_) {
        struct pollfd p[2];
        int n = 0, left = (int)((deadline - cvia__clock_s()) * 1000);
        if (left <= 0)
            return -ETIMEDOUT;
        for (int i = 0; i < 2; i++)
            if (fd[i] >= 0)
                p[n++] = (struct pollfd){ .fd = fd[i], .events = POLLIN };
        if (poll(p, (nfds_t)n, left) < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        for (int k = 0; k < n; k++) {
            int i = p[k].fd == fd[0] ? 0 : 1;
            char tmp[4096];
            ssize_t got;
            if (!p[k].revents)
                continue;
            got = read(fd[i], tmp, sizeof(tmp));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                close(fd[i]);
                fd[i] = -1;
                open_--;
                continue;
            }
            if (len[i] + (size_t)got < OUT_CAP) {   /* beyond: dropped */
                memcpy(buf[i] + len[i], tmp, (size_t)got);
                len[i] += (size_t)got;
                buf[i][len[i]] = '\0';
            }
        }
    }
    return 0;
}

/* The line of @text that says most about a failure: ours or cvia-run's,
 * else the first. */
static void why_failed(const char *text, char *err, size_t cap)
{
    static const char *const marks[] = { "cvia-affinity", "cvia-run:", "corevia error", NULL };
    const char *l = NULL;

    for (int m = 0; marks[m] && !l; m++)
        l = strstr(text, marks[m]);
    if (!l)
        l = text;
    snprintf(err, cap, "%.*s", (int)strcspn(l, "\n"), l);
}

int aff_cstream_run(const struct aff_cstream_job *j, const struct aff_cstream_opts *o,
                    struct aff_cstream_res *res, char *err, size_t cap)
{
    char hosts[512], secs[32], rate[32], chunk[32], window[32], omit[32], tmo[32];
    const char *argv[40];
    char *buf[2] = { NULL, NULL };
    size_t len[2] = { 0, 0 };
    int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, fd[2], status = 0, n = 0, rc = -1;
    double job_limit = o->secs + o->omit + 30;   /* cvia_init, teardown: seconds */
    struct aj *v = NULL;
    pid_t pid;

    memset(res, 0, sizeof(*res));
    snprintf(hosts, sizeof(hosts), "%s,%s", j->ns_send, j->ns_recv);
    snprintf(secs, sizeof(secs), "%.6g", o->secs);
    snprintf(rate, sizeof(rate), "%.0f", 8 * o->rate);
    snprintf(chunk, sizeof(chunk), "%zu", o->chunk);
    snprintf(window, sizeof(window), "%d", o->window);
    snprintf(omit, sizeof(omit), "%.6g", o->omit);
    snprintf(tmo, sizeof(tmo), "%.0f", ceil(job_limit));
    argv[n++] = j->launcher;
    argv[n++] = "-n";
    argv[n++] = "2";
    argv[n++] = "--hosts";
    argv[n++] = hosts;           /* cyclic: rank 0 sends from the first */
    argv[n++] = "--bind";
    argv[n++] = "none";          /* the ranks pin themselves */
    argv[n++] = "--timeout";
    argv[n++] = tmo;
    argv[n++] = "--";
    argv[n++] = j->self;
    argv[n++] = "stream";
    argv[n++] = "--transport";
    argv[n++] = "corevia";
    argv[n++] = "--time";
    argv[n++] = secs;
    argv[n++] = "--rate";
    argv[n++] = rate;
    argv[n++] = "--chunk";
    argv[n++] = chunk;
    argv[n++] = "--window";
    argv[n++] = window;
    argv[n++] = "--omit";
    argv[n++] = omit;
    if (o->recv_cpus) {
        argv[n++] = "--cpu";
        argv[n++] = o->recv_cpus;
    }
    if (o->send_cpus) {
        argv[n++] = "--send-cpu";
        argv[n++] = o->send_cpus;
    }
    argv[n++] = "--json";
    argv[n] = NULL;

    if (!(buf[0] = calloc(1, OUT_CAP)) || !(buf[1] = calloc(1, OUT_CAP))) {
        snprintf(err, cap, "out of memory");
        goto out;
    }
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        snprintf(err, cap, "pipe: %s", strerror(errno));
        goto out;
    }
    if ((pid = fork()) < 0) {
        snprintf(err, cap, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* and the ranks die with cvia-run */
        dup2(out[1], 1);
        dup2(errp[1], 2);
        setenv("CVIA_NET", j->provider, 1);
        execv(j->launcher, (char *const *)argv);
        fprintf(stderr, "cvia-affinity: cannot run %s: %s\n", j->launcher, strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(errp[1]);
    out[1] = errp[1] = -1;
    fd[0] = out[0];
    fd[1] = errp[0];
    out[0] = errp[0] = -1;
    if (drain(fd, buf, len, cvia__clock_s() + job_limit + 15) < 0) {
        /* cvia-run's own --timeout should have come first: it is stuck */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        snprintf(err, cap, "the corevia job did not end within %.0f s", job_limit + 15);
        for (int i = 0; i < 2; i++)
            if (fd[i] >= 0)
                close(fd[i]);
        goto out;
    }
    waitpid(pid, &status, 0);
    for (const char *l = buf[0]; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (*l == '{') {
            char jerr[256], line[4096];
            snprintf(line, sizeof(line), "%.*s", (int)strcspn(l, "\n"), l);
            if ((v = aj_parse(line, jerr, sizeof(jerr))) &&
                !strcmp(aj_str(aj_get(v, "role"), ""), "recv"))
                break;
            aj_free(v);
            v = NULL;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) || !v) {
        if (len[1])
            why_failed(buf[1], err, cap);
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 124)
            snprintf(err, cap, "the corevia job ran past %.0f s", ceil(job_limit));
        else
            snprintf(err, cap, "the corevia job ended with status %d and no result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        goto out;
    }
    res->r.bytes = aj_num(aj_get(v, "bytes"), 0);
    res->r.secs = aj_num(aj_get(v, "seconds"), 0);
    res->r.calls = aj_num(aj_get(v, "calls"), 0);
    res->r.cpu_s = aj_num(aj_get(v, "cpu_seconds"), 0);
    res->r.min_gap_us = aj_num(aj_get(v, "min_interval_us"), NAN);
    res->cpu_cores = aj_num(aj_get(v, "cpu_cores"), NAN);
    res->softirq_cores = aj_num(aj_get(v, "softirq_cores"), NAN);
    res->send_secs = aj_num(aj_get(v, "sender_seconds"), 0);
    snprintf(res->provider, sizeof(res->provider), "%s", aj_str(aj_get(v, "provider"), ""));
    snprintf(res->path, sizeof(res->path), "%s", aj_str(aj_get(v, "path"), ""));
    if (strcmp(res->provider, j->provider)) {
        snprintf(err, cap, "the ranks were joined by %s, not by %s", res->provider[0] ?
                 res->provider : "an unknown path", j->provider);
        goto out;
    }
    rc = 0;
out:
    aj_free(v);
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    free(buf[0]);
    free(buf[1]);
    return rc;
}
