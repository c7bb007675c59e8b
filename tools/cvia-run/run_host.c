/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-run --hosts: network namespaces standing for the hosts of a job.
 *
 * The library tells hosts apart by boot id and network namespace
 * (src/core/context.c, host_key), so ranks in different namespaces talk
 * through the network provider and ranks of one namespace through shm. The
 * launcher's unix socket is a filesystem path, reachable from every
 * namespace, so wire-up needs nothing more.
 *
 * Every namespace is opened, checked and entered once by the launcher
 * itself before any rank starts, so that a wrong name or a missing
 * permission stops the job before anything runs. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "run.h"

static _Noreturn void run_oom(void)
{
    run_msg("out of memory");
    exit(1);
}

/* One host of --hosts: open it and check that it is a network namespace
 * that no earlier host already names. @self is the launcher's own. */
static void run_host_open(int i, char *name, const struct stat *self)
{
    struct run_host *h = &run.hosts[i];
    char path[RUN_HOST_NAME_MAX + sizeof("/run/netns/")];
    struct stat st;
    int type;

    if (!*name)
        run_usage("--hosts: empty host name in '%s'", run.hosts_arg);
    if (strlen(name) > RUN_HOST_NAME_MAX)
        run_usage("--hosts: host name longer than %d characters", RUN_HOST_NAME_MAX);
    if (strchr(name, '/'))
        snprintf(path, sizeof(path), "%s", name);
    else if (!strcmp(name, ".") || !strcmp(name, ".."))
        run_usage("--hosts: invalid host name '%s'", name);
    else
        snprintf(path, sizeof(path), "/run/netns/%s", name);

    h->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (h->fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
        run_msg("no such host '%s': no network namespace %s", name, path);
        exit(2);
    }
    if (h->fd < 0) {
        run_msg("host '%s': cannot open %s: %s", name, path, strerror(errno));
        exit(errno == EACCES || errno == EPERM ? 1 : 2);
    }
    type = ioctl(h->fd, NS_GET_NSTYPE);
    if (type != CLONE_NEWNET || fstat(h->fd, &st)) {
        run_msg("host '%s': %s is not a network namespace", name, path);
        exit(2);
    }
    for (int j = 0; j < i; j++) {
        struct stat o;
        if (run.hosts[j].fd >= 0 && fstat(run.hosts[j].fd, &o) == 0 &&
            o.st_dev == st.st_dev && o.st_ino == st.st_ino) {
            run_msg("hosts '%s' and '%s' are the same network namespace",
                    run.hosts[j].name, name);
            exit(2);
        }
    }
    if (!(h->name = strdup(name)))
        run_oom();
    if (self && st.st_dev == self->st_dev && st.st_ino == self->st_ino) {
        /* our own namespace: nothing to enter. Keep the descriptor until
         * every host is checked: it tells a later duplicate. */
        h->nranks = -1;
    }
}

/* Enter every host and come back: a missing permission fails here, before
 * any rank runs, rather than in every rank. */
static void run_hosts_try(void)
{
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

    if (self < 0) {
        run_msg("cannot open /proc/self/ns/net: %s", strerror(errno));
        exit(1);
    }
    for (int i = 0; i < run.nhosts; i++) {
        if (run.hosts[i].fd < 0)
            continue;
        if (setns(run.hosts[i].fd, CLONE_NEWNET)) {
            run_msg("cannot enter host '%s': %s", run.hosts[i].name, strerror(errno));
            exit(1);
        }
        if (setns(self, CLONE_NEWNET)) {
            run_msg("cannot return to the launcher's network namespace: %s",
                    strerror(errno));
            exit(1);
        }
    }
    close(self);
}

void run_hosts_open(void)
{
    struct stat self, *selfp = &self;
    char *list, *p, *name;
    int n = 1;

    if (!run.hosts_arg) {
        if (!(run.hosts = calloc(1, sizeof(*run.hosts))))
            run_oom();
        run.hosts[0].fd = -1;
        run.nhosts = 1;
        return;
    }
    for (const char *c = run.hosts_arg; *c; c++)
        n += *c == ',';
    if (n > RUN_HOSTS_MAX)
        run_usage("--hosts: %d hosts, at most %d", n, RUN_HOSTS_MAX);
    if (!(run.hosts = calloc((size_t)n, sizeof(*run.hosts))) ||
        !(list = strdup(run.hosts_arg)))
        run_oom();
    for (int i = 0; i < n; i++)
        run.hosts[i].fd = -1;
    if (stat("/proc/self/ns/net", &self))
        selfp = NULL;
    p = list;
    while ((name = strsep(&p, ",")))
        run_host_open(run.nhosts++, name, selfp);
    free(list);
    for (int i = 0; i < run.nhosts; i++) {
        if (run.hosts[i].nranks < 0) {      /* the launcher's: stay there */
            close(run.hosts[i].fd);
            run.hosts[i].fd = -1;
            run.hosts[i].nranks = 0;
        }
    }
    run.hosts_given = 1;
    run_hosts_try();
}

/* cyclic: rank r on host r % H. block: N/H consecutive ranks per host, the
 * first N%H hosts one more, so no host is left empty while another has
 * two ranks more (Slurm's block distribution). */
void run_hosts_place(void)
{
    int H = run.nhosts, q = run.np / H, rem = run.np % H;

    for (int i = 0; i < H; i++)
        run.hosts[i].nranks = 0;
    for (int r = 0; r < run.np; r++) {
        int h;
        if (run.map == RUN_MAP_CYCLIC)
            h = r % H;
        else if (r < rem * (q + 1))
            h = r / (q + 1);
        else
            h = rem + (r - rem * (q + 1)) / q;
        run.ranks[r].host = h;
        run.ranks[r].local_rank = run.hosts[h].nranks++;
    }
}

int run_hosts_max_size(void)
{
    int max = 0;

    for (int i = 0; i < run.nhosts; i++)
        if (run.hosts[i].nranks > max)
            max = run.hosts[i].nranks;
    return max;
}

const char *run_host_name(int r)
{
    return run.hosts_given ? run.hosts[run.ranks[r].host].name : NULL;
}

/* Best effort, as `ip netns exec` does: a mount namespace of the rank's
 * own with a sysfs of its network namespace on /sys, so that
 * /sys/class/net shows the host's interfaces (what hwloc and MTU look-ups
 * read). The cgroup tree is put back under it (hwloc reads the cpuset
 * there). Without permission to mount, /sys stays the launcher's. */
static void run_host_sysfs(void)
{
    struct statvfs sv;
    unsigned long flags = 0;
    int cg;

    if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
        return;     /* nothing we mount can leak to the launcher's namespace now */
    if (statvfs("/sys", &sv) == 0 && (sv.f_flag & ST_RDONLY))
        flags |= MS_RDONLY;
    cg = open("/sys/fs/cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (mount("sysfs", "/sys", "sysfs", flags | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0 &&
        cg >= 0) {
        char fdpath[32];
        snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", cg);
        mount(fdpath, "/sys/fs/cgroup", NULL, MS_BIND | MS_REC, NULL);
    }
    if (cg >= 0)
        close(cg);
}

/* In the child, before exec: enter the rank's host. */
void run_host_enter(int r)
{
    const struct run_host *h = &run.hosts[run.ranks[r].host];

    if (h->fd < 0)
        return;
    if (setns(h->fd, CLONE_NEWNET)) {
        dprintf(2, "cvia-run: rank %d: cannot enter host '%s': %s\n", r, h->name,
                strerror(errno));
        _exit(127);
    }
    run_host_sysfs();
}

void run_hosts_close(void)
{
    for (int i = 0; run.hosts && i < run.nhosts; i++) {
        if (run.hosts[i].fd >= 0)
            close(run.hosts[i].fd);
        free(run.hosts[i].name);
    }
    free(run.hosts);
    run.hosts = NULL;
}
