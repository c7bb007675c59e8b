/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Segment life: create (0600, named cvia-<uid>-<pid>-<n>), attach peers',
 * unlink once every peer has attached, and unlink from a fatal-signal
 * handler or atexit if the process dies before that. The launcher and
 * `cvia-info --cleanup` remove what a SIGKILL leaves. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "mem/mem_tier.h"
#include "util/shm_name.h"
#include "prov/shm/shm.h"
#include "util/log.h"

/* Path of the one segment this process may still have to unlink; read by
 * the signal handler, so a fixed buffer and a flag. */
static char seg_path[SHM_NAME_MAX + 16];
static volatile sig_atomic_t seg_path_set;
static int handlers_installed;
static const int fatal_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
                                     SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
static struct sigaction old_actions[sizeof(fatal_signals) / sizeof(int)];

static void shm_fatal_handler(int sig)
{
    if (seg_path_set) {
        seg_path_set = 0;
        unlink(seg_path);   /* async-signal-safe */
    }
    for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(int); i++) {
        if (fatal_signals[i] == sig) {
            sigaction(sig, &old_actions[i], NULL);
            break;
        }
    }
    raise(sig);
}

static void shm_atexit(void)
{
    if (seg_path_set) {
        seg_path_set = 0;
        unlink(seg_path);
    }
}

static void shm_install_handlers(void)
{
    struct sigaction sa;

    if (handlers_installed)
        return;
    handlers_installed = 1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = shm_fatal_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(int); i++) {
        struct sigaction cur;
        sigaction(fatal_signals[i], NULL, &cur);
        old_actions[i] = cur;
        /* leave alone signals the application handles or ignores */
        if (cur.sa_handler != SIG_DFL || (cur.sa_flags & SA_SIGINFO))
            continue;
        sigaction(fatal_signals[i], &sa, NULL);
    }
    atexit(shm_atexit);
}

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Offsets of the segment's parts; every rank computes the same. */
void shm_seg_layout(struct cvia_prov_ep *ep)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), off, n = (size_t)ep->args.size;

    off = align_up(sizeof(struct shm_seg_hdr), SHM_CACHELINE);
    ep->cma_off = off;
    off = align_up(off + n, SHM_CACHELINE);
    ep->mr_off = off;
    off = align_up(off + (size_t)ep->cfg.mr_max * sizeof(struct shm_mr), SHM_CACHELINE);
    /* the blocks on pages of their own: the segment's only hole, committed
     * page by page as a destination needs more (shm_seg_commit_rv) */
    ep->rv_off = off = align_up(off, page);
    off = align_up(off + n * (size_t)ep->cfg.rv_per_peer * sizeof(struct shm_rndv), page);
    ep->claim_off = 0;
    if (ep->args.dynamic) {   /* one claim per ring */
        ep->claim_off = off;
        off += (size_t)ep->nlocal * sizeof(struct shm_claim);
    }
    ep->ring_off = align_up(off, page);
    ep->ring_bytes = align_up(cvia_ring_bytes(ep->nslots, ep->slot_size), page);
    ep->seg_bytes = ep->ring_off + (size_t)ep->nlocal * ep->ring_bytes;
}

/* Allocate the memory of my blocks [first, first + n) for @dest, so that
 * writing them cannot fault. 0, or -ENOSPC (and the like) when /dev/shm or
 * the memory limit says no: the caller sends through the ring instead. */
int shm_seg_commit_rv(struct cvia_prov_ep *ep, int dest, uint32_t first, uint32_t n)
{
    size_t off = ep->rv_off + ((size_t)dest * (size_t)ep->cfg.rv_per_peer + first) *
                 sizeof(struct shm_rndv);
    int rc;

    if (ep->seg_fd < 0)
        return -EBADF;
    rc = posix_fallocate(ep->seg_fd, (off_t)off, (off_t)(n * sizeof(struct shm_rndv)));
    return -rc;
}

int shm_seg_create(struct cvia_prov_ep *ep)
{
    struct shm_seg_hdr *hdr;
    void *addr;
    int fd = -1, rc;

    /* util/shm_name.h: uid and pid let a later job remove the segment of
     * a dead one (shm_seg_cleanup_stale); the random part means another
     * user cannot create our names first */
    if ((fd = cvia__shm_create(ep->name, sizeof(ep->name), &ep->seg_rand)) < 0) {
        rc = fd;
        if (rc == -EIO)
            cvia_error(SHM, "getrandom for a segment name failed");
        else
            cvia_error(SHM, "cannot create segment %s: %s", ep->name, strerror(-rc));
        ep->name[0] = '\0';
        return rc;
    }
    snprintf(seg_path, sizeof(seg_path), "/dev/shm%s", ep->name);
    seg_path_set = 1;
    shm_install_handlers();

    /* umask may only take bits away, but be explicit about 0600 */
    if (fchmod(fd, 0600) < 0) {
        rc = -errno;
        cvia_error(SHM, "fchmod segment %s: %s", ep->name, strerror(errno));
        goto err_unlink;
    }
    /* map the still empty file first: the tier (CVIA_MEM_SHM_KIND) is an
     * mbind of this mapping, and it only places pages allocated after it */
    addr = mmap(NULL, ep->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        rc = -errno;
        cvia_error(SHM, "mmap segment %s (%zu bytes): %s", ep->name,
                   ep->seg_bytes, strerror(errno));
        goto err_unlink;
    }
    if ((rc = cvia__mem_shm_place(addr, ep->seg_bytes)) < 0)
        goto err_unmap;
    /* reserve the memory now (this allocates every page, on the tier just
     * bound), so a full /dev/shm is an error here and not a SIGBUS later;
     * all but the rendezvous blocks, which are committed as they are
     * needed (a hole until then, never touched before) */
    if (ftruncate(fd, (off_t)ep->seg_bytes) < 0)
        rc = errno;
    else if (!(rc = posix_fallocate(fd, 0, (off_t)ep->rv_off))) {
        size_t rv_end = ep->claim_off ? ep->claim_off : ep->ring_off;
        rc = posix_fallocate(fd, (off_t)rv_end, (off_t)(ep->seg_bytes - rv_end));
    }
    if (rc) {
        cvia_error(SHM, "cannot reserve %zu bytes for segment %s: %s "
                   "(is /dev/shm large enough?)", ep->seg_bytes, ep->name,
                   strerror(rc));
        rc = -rc;
        goto err_unmap;
    }
    ep->seg_fd = fd;

    hdr = addr;   /* fallocate gave zeroes: mr and rv tables start free */
    hdr->jobid       = ep->args.jobid;
    hdr->self_addr   = (uint64_t)(uintptr_t)hdr;
    hdr->owner       = (uint32_t)ep->args.rank;
    hdr->nranks      = (uint32_t)ep->args.size;
    hdr->nlocal      = (uint32_t)ep->nlocal;
    hdr->nslots      = ep->nslots;
    hdr->slot_size   = ep->slot_size;
    hdr->rv_per_peer = (uint32_t)ep->cfg.rv_per_peer;
    hdr->mr_max      = (uint32_t)ep->cfg.mr_max;
    hdr->ring_bytes  = ep->ring_bytes;
    hdr->cma_off     = ep->cma_off;
    hdr->mr_off      = ep->mr_off;
    hdr->rv_off      = ep->rv_off;
    hdr->ring_off    = ep->ring_off;
    hdr->claim_off   = ep->claim_off;
    hdr->dynamic     = (uint32_t)ep->args.dynamic;
    hdr->nonce_hash  = ep->args.dynamic ? shm_dyn_hash(ep->nonce) : 0;
    hdr->pid         = (int32_t)getpid();
    atomic_store_explicit(&hdr->arena_fd, -1, memory_order_relaxed);
    atomic_store_explicit(&hdr->finalized, 0, memory_order_relaxed);
    for (int p = 0; p < ep->args.size; p++) {
        struct cvia_ring *r = &ep->peers[p].rx_ring;
        if (ep->lidx[p] < 0)
            continue;   /* on another host: no ring */
        shm_ring_at(ep, addr, (size_t)ep->lidx[p], r);
        cvia_ring_init(r);
        ep->peers[p].rx_pos = 0;
    }
    /* dynamic: every ring may be claimed later; claims start FREE (zero) */
    for (int k = 1; ep->args.dynamic && k < ep->nlocal; k++) {
        struct cvia_ring r;
        shm_ring_at(ep, addr, (size_t)k, &r);
        cvia_ring_init(&r);
    }
    /* magic last: a reader that sees it sees an initialized segment */
    atomic_thread_fence(memory_order_release);
    hdr->magic = SHM_MAGIC;
    ep->seg = hdr;
    return 0;

err_unmap:
    munmap(addr, ep->seg_bytes);
err_unlink:
    close(fd);
    shm_seg_unlink(ep);
    return rc;
}

/* Open and map the segment @name of a peer: ours (this user's, mode 0600)
 * and of this endpoint's geometry (seg_bytes). 0 with the mapping in
 * *@addr_p; -CVIA_ESEGMENT (said here) for a segment that is not ours or
 * not of this size; -errno, unsaid, where it cannot be opened or mapped
 * (-ENOENT: no such segment: the caller knows what that means). */
int shm_seg_map(struct cvia_prov_ep *ep, const char *name, void **addr_p)
{
    struct stat st;
    void *addr;
    int fd, rc;

    fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0 || st.st_uid != getuid() || (st.st_mode & 077)) {
        cvia_error(SHM, "segment %s has another owner or mode: refused", name);
        close(fd);
        return -CVIA_ESEGMENT;
    }
    if ((size_t)st.st_size != ep->seg_bytes) {
        cvia_error(SHM, "segment %s has another size (%lld bytes, %zu here): the peer "
                   "runs with other CVIA_MAX_PEERS or CVIA_SHM_* settings", name,
                   (long long)st.st_size, ep->seg_bytes);
        close(fd);
        return -CVIA_ESEGMENT;
    }
    addr = mmap(NULL, ep->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    rc = addr == MAP_FAILED ? -errno : 0;
    close(fd);
    if (rc)
        return rc;
    *addr_p = addr;
    return 0;
}

int shm_seg_attach(struct cvia_prov_ep *ep, int peer, const char *name)
{
    struct shm_peer *pp = &ep->peers[peer];
    struct shm_seg_hdr *hdr;
    void *addr;
    int rc;

    if (peer == ep->args.rank) {
        hdr = ep->seg;
        pp->seg = hdr;
        pp->seg_bytes = 0;   /* not mapped twice */
        goto found;
    }
    if ((rc = shm_seg_map(ep, name, &addr)) < 0) {
        if (rc != -CVIA_ESEGMENT)
            cvia_error(SHM, "cannot map segment %s of rank %d: %s", name, peer,
                       strerror(-rc));
        return rc;
    }
    hdr = addr;
    pp->seg = hdr;
    pp->seg_bytes = ep->seg_bytes;
    atomic_thread_fence(memory_order_acquire);
    if (hdr->magic != SHM_MAGIC || hdr->jobid != ep->args.jobid ||
        hdr->owner != (uint32_t)peer || hdr->nranks != (uint32_t)ep->args.size ||
        hdr->nlocal != (uint32_t)ep->nlocal ||
        hdr->nslots != ep->nslots || hdr->slot_size != ep->slot_size ||
        hdr->ring_off != ep->ring_off || hdr->rv_off != ep->rv_off ||
        hdr->mr_off != ep->mr_off || hdr->rv_per_peer != (uint32_t)ep->cfg.rv_per_peer) {
        cvia_error(SHM, "segment %s does not belong to rank %d of this job, or "
                   "was made with other CVIA_SHM_* settings", name, peer);
        return -CVIA_ESEGMENT;
    }
found:
    if (pp->rx_ring.base)
        shm_look_set(pp);   /* the empty poll reads its ring from now */
    shm_ring_at(ep, hdr, (size_t)ep->lidx[ep->args.rank], &pp->tx_ring);
    pp->tx_pos = 0;
    pp->pid = hdr->pid;
    pp->pidfd = -1;
    if (peer != ep->args.rank) {
        pp->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)hdr->pid, 0);
        if (pp->pidfd < 0)
            cvia_info(SHM, "pidfd_open(%d) for rank %d: %s; relying on the "
                      "launcher to report its death", (int)hdr->pid, peer,
                      strerror(errno));
        else
            fcntl(pp->pidfd, F_SETFD, FD_CLOEXEC);
    }
    return 0;
}

void shm_seg_unlink(struct cvia_prov_ep *ep)
{
    if (!ep->name[0])
        return;
    seg_path_set = 0;
    if (shm_unlink(ep->name) < 0 && errno != ENOENT)
        cvia_warn(SHM, "shm_unlink %s: %s", ep->name, strerror(errno));
    ep->name[0] = '\0';
}

void shm_seg_detach_all(struct cvia_prov_ep *ep)
{
    for (int p = 0; p < ep->args.size; p++) {
        struct shm_peer *pp = &ep->peers[p];
        if (pp->seg && pp->seg_bytes)
            munmap(pp->seg, pp->seg_bytes);
        pp->seg = NULL;
        shm_look_none(ep, pp);   /* its ring goes with my segment */
        if (pp->pidfd >= 0)
            close(pp->pidfd);
        pp->pidfd = -1;
    }
    if (ep->seg)
        munmap(ep->seg, ep->seg_bytes);
    ep->seg = NULL;
    if (ep->seg_fd >= 0)
        close(ep->seg_fd);
    ep->seg_fd = -1;
}

/* May this rank copy straight into and out of each peer's memory? Read the
 * peer's segment header through Cross Memory Attach at the address the
 * peer published; the kernel applies the same ptrace-access check to
 * process_vm_writev. The answers go into my segment so that peers learn
 * whether I can reach them. Only peers that proved they belong to this job
 * (segment magic and job key, checked at attach) are probed. */
void shm_probe_cma(struct cvia_prov_ep *ep)
{
    uint8_t *tab = shm_cma_table(ep->seg);
    int refused = 0, first_err = 0;

    for (int p = 0; p < ep->args.size; p++) {
        struct shm_peer *pp = &ep->peers[p];
        uint64_t word = 0;
        struct iovec l = { &word, sizeof(word) }, r;

        if (p == ep->args.rank) {
            tab[p] = 1;   /* myself: plain memcpy */
            continue;
        }
        tab[p] = 0;
        if (ep->cfg.cma == 0 || !pp->seg)   /* off, or on another host */
            continue;
        r.iov_base = (void *)(uintptr_t)pp->seg->self_addr;
        r.iov_len = sizeof(word);
        if (process_vm_readv(pp->pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(word) &&
            word == SHM_MAGIC) {
            tab[p] = 1;
        } else {
            refused++;
            if (!first_err)
                first_err = errno ? errno : EIO;
        }
    }
    if (refused)
        cvia_warn_once(SHM, "Cross Memory Attach refused for %d peer(s) (%s%s); "
                       "large messages use the two-copy path%s", refused,
                       strerror(first_err),
                       first_err == EPERM ? ": the kernel's ptrace access check - "
                       "Yama ptrace_scope, a non-dumpable process or another user" : "",
                       ep->cfg.cma == 1 ? "" : " (CVIA_SHM_CMA=auto)");
}

/* Remove /dev/shm/cvia-<uid>-<pid>-<hex> of this user whose <pid> is gone:
 * ours by name and by owner (a file another user made under our name is
 * theirs, whatever it is called). */
int shm_seg_cleanup_stale(void)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *de;
    int removed = 0;
    unsigned uid;
    int pid;
    char hex[17];

    if (!d)
        return -errno;
    while ((de = readdir(d))) {
        char tail;
        if (sscanf(de->d_name, "cvia-%u-%d-%16[0-9a-f]%c", &uid, &pid, hex, &tail) != 3 ||
            strlen(hex) != 16)
            continue;
        if (uid != (unsigned)getuid() || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            st.st_uid != getuid() || !S_ISREG(st.st_mode))
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/%s", de->d_name);
        if (shm_unlink(path) == 0) {
            removed++;
            cvia_info(SHM, "removed stale segment %s (pid %d is gone)", path, pid);
        }
    }
    closedir(d);
    return removed;
}
