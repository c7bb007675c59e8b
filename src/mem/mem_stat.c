/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Where memory is, per NUMA node: the regions corevia placed (a process's
 * own shm segments and arena chunks, found by name in /proc/PID/maps and
 * checked page by page with move_pages(2) in query mode) and everything
 * the process maps (/proc/PID/numa_maps, summed as numastat -p sums it).
 * Works on another process too (same user, or CAP_SYS_PTRACE), which is
 * how cvia-info --mem --pid reads a running job. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mem/mem_tier.h"

#define STAT_BATCH 4096     /* pages per move_pages call */

struct region {
    uintptr_t start, end;
    int shm;                /* 1: shm segment, 0: arena memfd, 2: a peer's */
};

static void stat_node(struct cvia_mem_stat *s, uint64_t *v, int node, uint64_t bytes)
{
    if (node < 0 || node >= CVIA_MEM_NODES_MAX)
        return;
    v[node] += bytes;
    if (node + 1 > s->maxnode)
        s->maxnode = node + 1;
}

/* Inodes of the memfds @pid holds open (arena chunks: only the owner does). */
static int stat_fd_inodes(const char *procdir, ino_t **v_p, size_t *n_p)
{
    char path[512], link[256];
    struct dirent *de;
    ino_t *v = NULL;
    size_t n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "%s/fd", procdir);
    if (!(d = opendir(path)))
        return -errno;
    while ((de = readdir(d))) {
        struct stat st;
        ssize_t l;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/fd/%s", procdir, de->d_name);
        l = readlink(path, link, sizeof(link) - 1);
        if (l <= 0)
            continue;
        link[l] = '\0';
        if (strncmp(link, "/memfd:cvia-arena", 17) || stat(path, &st) < 0)
            continue;
        ino_t *nv = realloc(v, (n + 1) * sizeof(*v));
        if (!nv)
            break;
        v = nv;
        v[n++] = st.st_ino;
    }
    closedir(d);
    *v_p = v;
    *n_p = n;
    return 0;
}

static int stat_regions(const char *procdir, pid_t real_pid, struct region **r_p,
                        size_t *n_p)
{
    char path[512], line[1024];
    struct region *r = NULL;
    ino_t *inos = NULL;
    size_t n = 0, ninos = 0;
    FILE *f;
    int rc;

    if ((rc = stat_fd_inodes(procdir, &inos, &ninos)) < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/maps", procdir);
    if (!(f = fopen(path, "re"))) {
        free(inos);
        return -errno;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long long a, b, ino;
        char perms[8], dev[16], name[600] = "";
        unsigned long long off;
        int shm = -1;
        if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %599[^\n]", &a, &b, perms, &off,
                   dev, &ino, name) < 6)
            continue;
        char *p = name;
        while (isspace((unsigned char)*p))
            p++;
        if (!strncmp(p, "/dev/shm/cvia-", 14)) {
            unsigned uid;
            int pid;
            char hex[17];   /* the name's random part (shm_seg.c) */
            if (sscanf(p + 14, "%u-%d-%16[0-9a-f]", &uid, &pid, hex) == 3)
                shm = pid == real_pid ? 1 : 2;
        } else if (!strncmp(p, "/memfd:cvia-arena", 17)) {
            shm = 2;
            for (size_t i = 0; i < ninos; i++)
                if (inos[i] == (ino_t)ino)
                    shm = 0;
        }
        if (shm < 0)
            continue;
        struct region *nr = realloc(r, (n + 1) * sizeof(*r));
        if (!nr)
            break;
        r = nr;
        r[n].start = (uintptr_t)a;
        r[n].end = (uintptr_t)b;
        r[n].shm = shm;
        n++;
    }
    fclose(f);
    free(inos);
    *r_p = r;
    *n_p = n;
    return 0;
}

static int stat_numa_maps(const char *procdir, struct cvia_mem_stat *s)
{
    char path[512], *line = NULL;
    size_t cap = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/numa_maps", procdir);
    if (!(f = fopen(path, "re")))
        return -errno;
    while (getline(&line, &cap, f) > 0) {
        uint64_t kb = 4, pages[64];
        int nodes[64], k = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
            unsigned nd;
            unsigned long long v;
            if (sscanf(tok, "N%u=%llu", &nd, &v) == 2 && k < 64) {
                nodes[k] = (int)nd;
                pages[k++] = v;
            } else if (sscanf(tok, "kernelpagesize_kB=%llu", &v) == 1) {
                kb = v;
            }
        }
        for (int i = 0; i < k; i++)
            stat_node(s, s->total, nodes[i], pages[i] * kb * 1024);
    }
    free(line);
    fclose(f);
    return 0;
}

int cvia__mem_stat(pid_t pid, int touch, struct cvia_mem_stat *s)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), nreg = 0;
    pid_t real = pid ? pid : getpid();
    struct region *reg = NULL;
    void **pages = NULL;
    int *status = NULL, rc;
    char procdir[64];

    memset(s, 0, sizeof(*s));
    snprintf(procdir, sizeof(procdir), pid ? "/proc/%d" : "/proc/self", (int)pid);
    if ((rc = stat_regions(procdir, real, &reg, &nreg)) < 0)
        return rc;
    pages = malloc(STAT_BATCH * sizeof(*pages));
    status = malloc(STAT_BATCH * sizeof(*status));
    if (!pages || !status) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t r = 0; r < nreg; r++) {
        uintptr_t a = reg[r].start;
        int own = reg[r].shm != 2;
        uint64_t *v = reg[r].shm == 2 ? s->peer : reg[r].shm ? s->shm : s->arena;
        if (reg[r].shm == 1)
            s->shm_size += reg[r].end - reg[r].start;
        else if (reg[r].shm == 0)
            s->arena_size += reg[r].end - reg[r].start;
        s->regions += own;
        while (a < reg[r].end) {
            unsigned long cnt = 0;
            for (; a < reg[r].end && cnt < STAT_BATCH; a += page, cnt++) {
                pages[cnt] = (void *)a;
                if (touch && !pid && own)
                    (void)*(volatile const char *)a;
            }
            if (syscall(SYS_move_pages, (int)pid, cnt, pages, NULL, status, 0) < 0) {
                rc = -errno;
                goto out;
            }
            for (unsigned long i = 0; i < cnt; i++) {
                if (status[i] >= 0)
                    stat_node(s, v, status[i], page);
                else if (own)
                    s->absent += page;
            }
        }
    }
    rc = stat_numa_maps(procdir, s);
out:
    free(reg);
    free(pages);
    free(status);
    return rc;
}
