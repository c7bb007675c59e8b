/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aff_netns.h"

int aff_lab_enter(pid_t keeper)
{
    char path[64];
    int fd, rc = 0;

    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)keeper);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    if (setns(fd, CLONE_NEWNET) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* A child in a new network namespace, sleeping until we die or kill it. */
static pid_t keeper_start(char *err, size_t cap)
{
    int p[2];
    char c = 0;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(err, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    if ((pid = fork()) < 0) {
        snprintf(err, cap, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        c = unshare(CLONE_NEWNET) == 0 ? 'y' : (char)(errno < 127 ? errno : 127);
        (void)!write(p[1], &c, 1);
        close(p[1]);
        if (c != 'y')
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    if (read(p[0], &c, 1) != 1 || c != 'y') {
        snprintf(err, cap, "cannot create a network namespace: %s",
                 c && c != 'y' ? strerror(c) : "keeper died");
        close(p[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    close(p[0]);
    return pid;
}

/* Run `ip ARGS` inside keeper's namespace; first line of its errors in err. */
static int ip_in(pid_t keeper, char *err, size_t cap, const char *const *args)
{
    int p[2], status;
    pid_t pid;
    ssize_t n;
    char buf[256];

    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    if ((pid = fork()) < 0) {
        close(p[0]);
        close(p[1]);
        return -errno;
    }
    if (pid == 0) {
        dup2(p[1], 2);
        dup2(p[1], 1);
        if (aff_lab_enter(keeper) < 0)
            _exit(126);
        execvp("ip", (char *const *)args);
        fprintf(stderr, "cannot run ip (iproute2): %s\n", strerror(errno));
        _exit(127);
    }
    close(p[1]);
    n = read(p[0], buf, sizeof(buf) - 1);
    close(p[0]);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
        char cmd[256] = "";
        for (int i = 0; args[i]; i++) {
            strncat(cmd, args[i], sizeof(cmd) - strlen(cmd) - 2);
            strncat(cmd, " ", sizeof(cmd) - strlen(cmd) - 1);
        }
        snprintf(err, cap, "%s failed: %s", cmd, buf[0] ? buf : "no message");
        return -1;
    }
    return 0;
}

#define IP(...) do { const char *const a_[] = { "ip", __VA_ARGS__, NULL }; \
        if (ip_in(k_, err, cap, a_)) goto err_down; } while (0)

int aff_lab_up(struct aff_lab *l, enum aff_lab_kind kind, int mtu, char *err, size_t cap)
{
    char mtus[16], peer[16];
    pid_t k_;

    memset(l, 0, sizeof(*l));
    l->kind = kind;
    l->mtu = mtu;
    snprintf(mtus, sizeof(mtus), "%d", mtu);
    if ((l->keeper_r = keeper_start(err, cap)) < 0)
        return -1;
    k_ = l->keeper_r;
    IP("link", "set", "lo", "up");
    if (kind == AFF_LAB_LOOPBACK) {
        l->keeper_s = l->keeper_r;
        snprintf(l->rdev, sizeof(l->rdev), "lo");
        snprintf(l->raddr, sizeof(l->raddr), "127.0.0.1");
        return 0;
    }
    if ((l->keeper_s = keeper_start(err, cap)) < 0)
        goto err_down;
    snprintf(peer, sizeof(peer), "%d", (int)l->keeper_r);
    k_ = l->keeper_s;
    IP("link", "set", "lo", "up");
    /* created inside the sender's namespace, its peer straight into the
     * receiver's: the names never exist outside them */
    IP("link", "add", "name", "cvia0", "mtu", mtus, "type", "veth", "peer", "name", "cvia1",
       "mtu", mtus, "netns", peer);
    IP("addr", "add", "198.18.0.1/24", "dev", "cvia0");
    IP("link", "set", "cvia0", "up");
    k_ = l->keeper_r;
    IP("addr", "add", "198.18.0.2/24", "dev", "cvia1");
    IP("link", "set", "cvia1", "up");
    snprintf(l->rdev, sizeof(l->rdev), "cvia1");
    snprintf(l->raddr, sizeof(l->raddr), "198.18.0.2");
    return 0;

err_down:
    aff_lab_down(l);
    return -1;
}

void aff_lab_down(struct aff_lab *l)
{
    pid_t ks = l->keeper_s, kr = l->keeper_r;

    if (kr > 0) {
        kill(kr, SIGKILL);
        waitpid(kr, NULL, 0);
    }
    if (ks > 0 && ks != kr) {
        kill(ks, SIGKILL);
        waitpid(ks, NULL, 0);
    }
    l->keeper_s = l->keeper_r = 0;
}

int aff_lab_rps(struct aff_lab *l, int pu)
{
    int p[2], status;
    pid_t pid;
    char rc = 0;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    if ((pid = fork()) < 0) {
        close(p[0]);
        close(p[1]);
        return -errno;
    }
    if (pid == 0) {
        char path[128], mask[64];
        int fd;
        /* sysfs shows the network namespace of whoever mounts it: a
         * private mount namespace with its own /sys, gone when we exit */
        if (aff_lab_enter(l->keeper_r) < 0 || unshare(CLONE_NEWNS) < 0 ||
            mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            umount2("/sys", MNT_DETACH) < 0 ||
            mount("sysfs", "/sys", "sysfs", 0, NULL) < 0) {
            rc = (char)errno;
            goto child_out;
        }
        snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-0/rps_cpus", l->rdev);
        if (pu < 0) {
            snprintf(mask, sizeof(mask), "0\n");
        } else {
            /* hex mask in 32-bit words, most significant first */
            int words = pu / 32 + 1, len = 0;
            for (int w = words - 1; w >= 0; w--)
                len += snprintf(mask + len, sizeof(mask) - (size_t)len, "%s%08x",
                                w == words - 1 ? "" : ",",
                                w == pu / 32 ? 1u << (pu % 32) : 0u);
            snprintf(mask + len, sizeof(mask) - (size_t)len, "\n");
        }
        if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0 ||
            write(fd, mask, strlen(mask)) < 0)
            rc = (char)errno;
        if (fd >= 0)
            close(fd);
child_out:
        (void)!write(p[1], &rc, 1);
        _exit(rc ? 1 : 0);
    }
    close(p[1]);
    if (read(p[0], &rc, 1) != 1)
        rc = EIO;
    close(p[0]);
    waitpid(pid, &status, 0);
    return rc ? -rc : 0;
}
