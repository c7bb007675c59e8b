/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Wire-up through PMIx, for ranks that Open MPI's mpirun, PRRTE's prterun
 * or Slurm's srun --mpi=pmix started (boot.c picks this backend when the
 * environment names a PMIx server and CVIA_BOOT_ADDR is not set).
 *
 *   rank, size           PMIx_Init's proc, PMIX_JOB_SIZE
 *   local rank, size     PMIX_LOCAL_RANK, PMIX_LOCAL_SIZE
 *   jobid                a 64-bit hash of the namespace: the same on every
 *                        rank, different for every job the launcher runs
 *   put                  PMIx_Put(PMIX_GLOBAL); PMIx_Commit before the fence
 *   fence                PMIx_Fence_nb over the whole namespace with
 *                        PMIX_COLLECT_DATA, waited for with our own timeout
 *   get                  PMIx_Get(PMIX_OPTIONAL) on the proc that put the key:
 *                        every key of corevia ends in ".<rank of the putter>"
 *                        (host.3, shm.3, tcp.3, udp.3); a key without such a
 *                        suffix is looked for on every rank
 *   abort                PMIx_Abort (the launcher ends the whole job)
 *
 * Liveness. An event handler turns the PMIx process-termination events
 * (PMIX_ERR_PROC_TERM_WO_SYNC, PMIX_ERR_EXIT_NONZERO_TERM,
 * PMIX_ERR_PROC_ABORTED_BY_SIG, a PMIX_EVENT_PROC_TERMINATED with a non-zero
 * exit code, ...) into the EXIT / KILLED / ABORT events of cvia__boot_poll.
 * Open MPI 4.1's mpirun (ORTE, Debian 12's openmpi-bin) delivers none of
 * them: when a rank dies or exits non-zero, mpirun kills the other ranks
 * (SIGTERM, then SIGKILL) and reports the culprit itself; with
 * --enable-recovery the other ranks live on and still get no event (ORTE
 * fails to send it: "PMIX ERROR: BAD-PARAM in pmix_event_notification.c").
 * There the providers' own detection ends waits on a dead peer (shm's
 * pidfds, tcp's end of stream, the datagram engine's peer timeout). PRRTE
 * and Slurm may deliver the events; this was not tested here.
 *
 * PMIx calls back on its own progress thread: the event queue and the
 * fence state are guarded by bpx_lock. Only one boot handle exists at a
 * time (cvia_init), so the handler finds it through bpx_active. PMIx_Init
 * and PMIx_Finalize count references: an MPI library in the same process
 * may hold its own. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pmix.h>

#include <corevia/cvia_errno.h>
#include "boot/boot.h"
#include "boot/boot_pmix.h"
#include "util/log.h"

#define BPX_EVQ_MAX 64   /* events held between two polls */

struct boot_pmix {
    pmix_proc_t me;
    int         size;
    double      timeout_s;       /* bound of a fence; <= 0: none */
    int         dirty;           /* puts not yet committed */
    pthread_cond_t cond;         /* fence done, or an event: with bpx_lock */
    /* guarded by bpx_lock (written by PMIx's thread) */
    int         fence_pending;   /* Fence_nb issued, callback not yet run */
    uintptr_t   fence_gen;       /* which Fence_nb: its callback's cbdata */
    pmix_status_t fence_status;  /* the callback's status */
    int         peer_lost;       /* a rank has left: no fence can complete */
    int         server_lost;     /* PMIX_ERR_LOST_CONNECTION */
    int         ev_len, ev_dropped;
    struct cvia_boot_event evq[BPX_EVQ_MAX];
};

static pthread_mutex_t bpx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct boot_pmix *bpx_active;   /* the open handle, for callbacks */
/* Fence_nb's info must outlive the call: it lives here, set once */
static pmix_info_t bpx_fence_info;
static bool bpx_collect = true;
static uintptr_t bpx_fence_gen;        /* fences issued by this process */

/* Stable 64-bit hash of the namespace (FNV-1a, then a 64-bit finalizer
 * so that namespaces differing in one digit differ in every bit). */
static uint64_t bpx_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h ? h : 1;
}

/* An unsigned integer of job information; -1 if absent or not an integer. */
static long bpx_get_uint(const pmix_proc_t *proc, const char *key)
{
    pmix_value_t *v = NULL;
    long r = -1;

    if (PMIx_Get(proc, key, NULL, 0, &v) != PMIX_SUCCESS || !v)
        return -1;
    switch (v->type) {
    case PMIX_UINT8:     r = v->data.uint8; break;
    case PMIX_UINT16:    r = v->data.uint16; break;
    case PMIX_UINT32:    r = (long)v->data.uint32; break;
    case PMIX_UINT64:    r = v->data.uint64 > INT32_MAX ? -1 : (long)v->data.uint64; break;
    case PMIX_SIZE:      r = v->data.size > INT32_MAX ? -1 : (long)v->data.size; break;
    case PMIX_PROC_RANK: r = (long)v->data.rank; break;
    case PMIX_INT:       r = v->data.integer < 0 ? -1 : v->data.integer; break;
    case PMIX_INT32:     r = v->data.int32 < 0 ? -1 : v->data.int32; break;
    default:             break;
    }
    PMIX_VALUE_RELEASE(v);
    return r;
}

static void bpx_push(struct boot_pmix *px, int kind, int rank, int status)
{
    if (px->ev_len == BPX_EVQ_MAX) {
        px->ev_dropped++;
        return;
    }
    px->evq[px->ev_len++] = (struct cvia_boot_event){ kind, rank, status };
}

/* PMIx's thread: a process of some job terminated, or the server is gone. */
static void bpx_event(size_t ref, pmix_status_t st, const pmix_proc_t *source,
                      pmix_info_t info[], size_t ninfo, pmix_info_t *results,
                      size_t nresults, pmix_event_notification_cbfunc_fn_t cbfunc,
                      void *cbdata)
{
    const pmix_proc_t *who = source;
    int code = 0, kind = -1;

    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) &&
            info[i].value.type == PMIX_PROC)
            who = info[i].value.data.proc;
        else if (PMIX_CHECK_KEY(&info[i], PMIX_EXIT_CODE) && info[i].value.type == PMIX_INT)
            code = info[i].value.data.integer;
    }
    switch (st) {
    case PMIX_ERR_PROC_TERM_WO_SYNC:
    case PMIX_ERR_EXIT_NONZERO_TERM:
        kind = CVIA_BOOT_EV_EXIT;
        break;
    case PMIX_EVENT_PROC_TERMINATED:   /* a clean exit after finalize is no failure */
        kind = code ? CVIA_BOOT_EV_EXIT : -1;
        break;
    case PMIX_ERR_PROC_ABORTED_BY_SIG:
        kind = CVIA_BOOT_EV_KILLED;
        break;
    case PMIX_ERR_PROC_ABORTED:
    case PMIX_ERR_PROC_REQUESTED_ABORT:
    case PMIX_ERR_PROC_KILLED_BY_CMD:
        kind = CVIA_BOOT_EV_ABORT;
        break;
    default:
        break;
    }
    pthread_mutex_lock(&bpx_lock);
    struct boot_pmix *px = bpx_active;
    if (px && st == PMIX_ERR_LOST_CONNECTION) {
        px->server_lost = 1;
        pthread_cond_broadcast(&px->cond);
    } else if (px && kind >= 0 && who && PMIX_CHECK_NSPACE(who->nspace, px->me.nspace) &&
               who->rank != px->me.rank) {
        int rank = who->rank < (pmix_rank_t)px->size ? (int)who->rank : -1;
        if (rank < 0 && kind != CVIA_BOOT_EV_ABORT)
            kind = CVIA_BOOT_EV_ABORT;   /* the whole job, or a rank we do not know */
        bpx_push(px, kind, rank, code);
        px->peer_lost = 1;
        pthread_cond_broadcast(&px->cond);
    }
    pthread_mutex_unlock(&bpx_lock);
    if (cbfunc)
        cbfunc(PMIX_SUCCESS, NULL, 0, NULL, NULL, cbdata);
}

static void bpx_register_events(void)
{
    pmix_status_t codes[] = {
        PMIX_ERR_PROC_TERM_WO_SYNC, PMIX_ERR_EXIT_NONZERO_TERM, PMIX_EVENT_PROC_TERMINATED,
        PMIX_ERR_PROC_ABORTED_BY_SIG, PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_REQUESTED_ABORT,
        PMIX_ERR_PROC_KILLED_BY_CMD, PMIX_ERR_LOST_CONNECTION,
    };
    pmix_info_t info;
    pmix_status_t rc;

    PMIX_INFO_LOAD(&info, PMIX_EVENT_HDLR_NAME, "corevia-boot", PMIX_STRING);
    /* no callback: blocking, returns the handler's reference or an error */
    rc = PMIx_Register_event_handler(codes, sizeof(codes) / sizeof(codes[0]), &info, 1,
                                     bpx_event, NULL, NULL);
    PMIX_INFO_DESTRUCT(&info);
    if (rc < 0)   /* not fatal: the providers detect dead peers themselves */
        cvia_info(BOOT, "PMIx: no termination events (%s); relying on the providers",
                  PMIx_Error_string(rc));
}

int cvia__boot_pmix_open(double timeout_s, struct boot_ident *id, struct boot_pmix **px_p)
{
    struct boot_pmix *px = calloc(1, sizeof(*px));
    pthread_condattr_t ca;
    pmix_proc_t job;
    pmix_status_t st;
    long size, lrank, lsize;

    if (!px)
        return -ENOMEM;
    px->timeout_s = timeout_s;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&px->cond, &ca);
    pthread_condattr_destroy(&ca);

    st = PMIx_Init(&px->me, NULL, 0);
    if (st != PMIX_SUCCESS) {
        const char *ns = getenv("PMIX_NAMESPACE");
        cvia_error(BOOT, "PMIx_Init failed: %s (PMIX_NAMESPACE=%s; is the launcher "
                   "that set PMIX_* still running?)", PMIx_Error_string(st), ns ? ns : "unset");
        goto err_free;
    }
    PMIX_LOAD_PROCID(&job, px->me.nspace, PMIX_RANK_WILDCARD);
    size = bpx_get_uint(&job, PMIX_JOB_SIZE);
    if (size < 1 || px->me.rank >= (pmix_rank_t)size) {
        cvia_error(BOOT, "PMIx: job %s gives no usable job size (%ld) for rank %u",
                   px->me.nspace, size, px->me.rank);
        goto err_fini;
    }
    lrank = bpx_get_uint(&px->me, PMIX_LOCAL_RANK);
    lsize = bpx_get_uint(&job, PMIX_LOCAL_SIZE);
    if (lsize < 1 || lsize > size || lrank < 0 || lrank >= lsize) {
        cvia_warn(BOOT, "PMIx: no usable local rank/size (%ld/%ld): taking rank/size",
                  lrank, lsize);
        lrank = px->me.rank;
        lsize = size;
    }
    px->size = (int)size;
    id->rank = (int)px->me.rank;
    id->size = (int)size;
    id->local_rank = (int)lrank;
    id->local_size = (int)lsize;
    id->jobid = bpx_hash(px->me.nspace);
    PMIX_INFO_LOAD(&bpx_fence_info, PMIX_COLLECT_DATA, &bpx_collect, PMIX_BOOL);

    pthread_mutex_lock(&bpx_lock);
    bpx_active = px;
    pthread_mutex_unlock(&bpx_lock);
    bpx_register_events();
    cvia_debug(BOOT, "PMIx: namespace %s rank %d of %d, local %d of %d, jobid %016" PRIx64,
               px->me.nspace, id->rank, id->size, id->local_rank, id->local_size, id->jobid);
    *px_p = px;
    return 0;

err_fini:
    PMIx_Finalize(NULL, 0);
err_free:
    pthread_cond_destroy(&px->cond);
    free(px);
    return -CVIA_EBOOT;
}

void cvia__boot_pmix_close(struct boot_pmix *px)
{
    pmix_status_t st;

    if (!px)
        return;
    /* from now on callbacks (a late fence, an event) find nothing */
    pthread_mutex_lock(&bpx_lock);
    bpx_active = NULL;
    pthread_mutex_unlock(&bpx_lock);
    /* the launcher counts a rank that exits without PMIx_Finalize as failed */
    st = PMIx_Finalize(NULL, 0);
    if (st != PMIX_SUCCESS)
        cvia_debug(BOOT, "PMIx_Finalize: %s", PMIx_Error_string(st));
    pthread_cond_destroy(&px->cond);
    free(px);
}

int cvia__boot_pmix_put(struct boot_pmix *px, const char *key, const char *val)
{
    pmix_value_t v;
    pmix_status_t st;

    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_STRING;
    v.data.string = (char *)val;     /* PMIx_Put copies it */
    st = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (st != PMIX_SUCCESS) {
        cvia_error(BOOT, "PMIx_Put %s: %s", key, PMIx_Error_string(st));
        return -CVIA_EBOOT;
    }
    px->dirty = 1;
    return 0;
}

/* The rank a key belongs to: its ".<rank>" suffix; -1 if it has none. */
static int bpx_owner(const char *key, int size)
{
    const char *dot = strrchr(key, '.');
    long r = 0;

    if (!dot || !dot[1])
        return -1;
    for (const char *p = dot + 1; *p; p++) {
        if (*p < '0' || *p > '9' || r >= size)
            return -1;
        r = r * 10 + (*p - '0');
    }
    return r < size ? (int)r : -1;
}

/* 0, -ENOENT, -ENOSPC, or -CVIA_EBOOT (logged). */
static int bpx_get_from(struct boot_pmix *px, int rank, const char *key,
                        char *val, size_t cap)
{
    pmix_proc_t proc;
    pmix_info_t info;
    pmix_value_t *v = NULL;
    pmix_status_t st;
    bool opt = true;
    int rc = 0;

    PMIX_LOAD_PROCID(&proc, px->me.nspace, (pmix_rank_t)rank);
    /* after a collecting fence the data is here: never ask the server */
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &opt, PMIX_BOOL);
    st = PMIx_Get(&proc, key, &info, 1, &v);
    PMIX_INFO_DESTRUCT(&info);
    if (st == PMIX_ERR_NOT_FOUND || st == PMIX_ERR_PROC_ENTRY_NOT_FOUND)
        return -ENOENT;
    if (st != PMIX_SUCCESS || !v) {
        cvia_error(BOOT, "PMIx_Get %s from rank %d: %s", key, rank, PMIx_Error_string(st));
        return -CVIA_EBOOT;
    }
    if (v->type != PMIX_STRING || !v->data.string) {
        cvia_error(BOOT, "PMIx_Get %s from rank %d: not a string (type %d)", key, rank,
                   (int)v->type);
        rc = -CVIA_EBOOT;
    } else if (strlen(v->data.string) >= cap) {
        rc = -ENOSPC;
    } else {
        strcpy(val, v->data.string);
    }
    PMIX_VALUE_RELEASE(v);
    return rc;
}

int cvia__boot_pmix_get(struct boot_pmix *px, const char *key, char *val, size_t cap)
{
    int owner = bpx_owner(key, px->size), rc = -ENOENT;

    if (owner >= 0)
        return bpx_get_from(px, owner, key, val, cap);
    for (int r = 0; r < px->size && rc == -ENOENT; r++)
        rc = bpx_get_from(px, r, key, val, cap);
    return rc;
}

static void bpx_fence_done(pmix_status_t st, void *cbdata)
{
    pthread_mutex_lock(&bpx_lock);
    if (bpx_active && bpx_active->fence_gen == (uintptr_t)cbdata) {
        bpx_active->fence_status = st;
        bpx_active->fence_pending = 0;
        pthread_cond_broadcast(&bpx_active->cond);
    }
    pthread_mutex_unlock(&bpx_lock);
}

static void bpx_log_lost_peer(const struct cvia_boot_event *e)
{
    if (!e)
        cvia_error(BOOT, "fence failed: a rank has left the job");
    else if (e->kind == CVIA_BOOT_EV_EXIT)
        cvia_error(BOOT, "fence failed: rank %d exited with status %d without finalizing",
                   e->rank, e->status);
    else if (e->kind == CVIA_BOOT_EV_KILLED)
        cvia_error(BOOT, "fence failed: rank %d was killed (status %d)", e->rank, e->status);
    else
        cvia_error(BOOT, "fence failed: the launcher is tearing the job down (rank %d)",
                   e->rank);
}

int cvia__boot_pmix_fence(struct boot_pmix *px)
{
    struct timespec dl;
    struct cvia_boot_event first;
    pmix_status_t st;
    int rc = 0, have_first = 0, issue;

    if (px->dirty) {
        if ((st = PMIx_Commit()) != PMIX_SUCCESS) {
            cvia_error(BOOT, "PMIx_Commit: %s", PMIx_Error_string(st));
            return -CVIA_EBOOT;
        }
        px->dirty = 0;
    }
    pthread_mutex_lock(&bpx_lock);
    /* after a timed-out fence the server still counts this rank in: wait
     * for that one rather than starting another */
    issue = !px->fence_pending && !px->peer_lost && !px->server_lost;
    if (issue) {
        px->fence_pending = 1;
        px->fence_gen = ++bpx_fence_gen;
    }
    pthread_mutex_unlock(&bpx_lock);
    if (issue) {
        /* NULL procs: every process of our namespace */
        st = PMIx_Fence_nb(NULL, 0, &bpx_fence_info, 1, bpx_fence_done,
                           (void *)px->fence_gen);
        if (st != PMIX_SUCCESS) {
            pthread_mutex_lock(&bpx_lock);
            px->fence_pending = 0;
            pthread_mutex_unlock(&bpx_lock);
            cvia_error(BOOT, "PMIx_Fence_nb: %s", PMIx_Error_string(st));
            return -CVIA_EBOOT;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (px->timeout_s > 0) {
        double t = (double)dl.tv_nsec * 1e-9 + px->timeout_s;
        dl.tv_sec += (time_t)t;
        dl.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
    }
    pthread_mutex_lock(&bpx_lock);
    for (;;) {
        if (!px->fence_pending) {
            st = px->fence_status;
            rc = st == PMIX_SUCCESS ? 0 : -CVIA_EBOOT;
            break;
        }
        if (px->peer_lost) {
            rc = -CVIA_ENOPEER;
            if ((have_first = px->ev_len > 0))
                first = px->evq[0];
            break;
        }
        if (px->server_lost) {
            rc = -CVIA_EBOOT;
            break;
        }
        if (px->timeout_s <= 0) {
            pthread_cond_wait(&px->cond, &bpx_lock);
        } else if (pthread_cond_timedwait(&px->cond, &bpx_lock, &dl) == ETIMEDOUT &&
                   px->fence_pending && !px->peer_lost && !px->server_lost) {
            rc = -ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&bpx_lock);
    if (rc == -CVIA_ENOPEER)
        bpx_log_lost_peer(have_first ? &first : NULL);
    else if (rc == -ETIMEDOUT)
        cvia_error(BOOT, "fence: not complete after %g s (PMIx)", px->timeout_s);
    else if (rc && px->server_lost)
        cvia_error(BOOT, "fence failed: lost the connection to the PMIx server");
    else if (rc)
        cvia_error(BOOT, "PMIx fence failed: %s", PMIx_Error_string(st));
    return rc;
}

int cvia__boot_pmix_poll(struct boot_pmix *px, struct cvia_boot_event *ev, int max)
{
    int n, dropped;

    pthread_mutex_lock(&bpx_lock);
    n = px->ev_len < max ? px->ev_len : max;
    memcpy(ev, px->evq, (size_t)n * sizeof(*ev));
    memmove(px->evq, px->evq + n, (size_t)(px->ev_len - n) * sizeof(*ev));
    px->ev_len -= n;
    dropped = px->ev_dropped;
    px->ev_dropped = 0;
    if (n == 0 && px->server_lost)
        n = -CVIA_EBOOT;
    pthread_mutex_unlock(&bpx_lock);
    if (dropped)
        cvia_warn(BOOT, "PMIx: %d termination events dropped (queue full)", dropped);
    return n;
}

void cvia__boot_pmix_abort(struct boot_pmix *px, int code, const char *why)
{
    pmix_status_t st;

    (void)px;
    /* NULL procs: the whole namespace; returns once the server has it,
     * or not at all when the launcher kills this process first */
    st = PMIx_Abort(code ? code : 1, why, NULL, 0);
    if (st != PMIX_SUCCESS)
        cvia_error(BOOT, "PMIx_Abort: %s", PMIx_Error_string(st));
}
