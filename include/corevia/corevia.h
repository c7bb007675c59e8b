/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/**
 * @file corevia.h
 * @brief corevia core API: wire-up, tagged point-to-point messaging,
 *        requests and barrier.
 *
 * A process calls cvia_init() once. Under `cvia-run` it learns its rank and
 * the job size from the launcher and connects to every peer; run directly,
 * it is a job of one (rank 0, size 1). Messages are matched by
 * (source, tag) in the order they were sent, as in MPI; ::CVIA_ANY_SOURCE
 * and ::CVIA_ANY_TAG are wildcards on the receive side.
 *
 * All calls return 0 (or a non-negative value where stated) on success and
 * a negative error code on failure; see cvia_errno.h. Calls made before
 * cvia_init() or after cvia_finalize() return -::CVIA_ENOINIT.
 *
 * Threads: in this version a process drives corevia from one thread at a
 * time (the caller's); no hidden threads are started.
 */
#ifndef COREVIA_COREVIA_H
#define COREVIA_COREVIA_H

#include <stddef.h>
#include <stdint.h>
#include <corevia/cvia_errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CVIA_VERSION_MAJOR 0
#define CVIA_VERSION_MINOR 1
#define CVIA_VERSION_PATCH 0

/** Wildcard source for cvia_irecv(). */
#define CVIA_ANY_SOURCE (-1)
/** Wildcard tag for cvia_irecv(). User tags are 0 .. ::CVIA_TAG_MAX. */
#define CVIA_ANY_TAG    (-1)
#define CVIA_TAG_MAX    INT32_MAX

/** An outstanding operation. Owned by corevia until cvia_wait() or a
 *  cvia_test() that reports completion releases it (and sets it to NULL). */
typedef struct cvia_req *cvia_req_t;

/** What a completed operation reports. */
typedef struct cvia_status {
    int    source;  /**< sender's rank (receives), destination (sends) */
    int    tag;     /**< message tag */
    size_t len;     /**< bytes delivered into the buffer */
    size_t msg_len; /**< bytes the sender sent (> len when truncated) */
    int    error;   /**< 0, or the negative code the operation failed with */
} cvia_status_t;

/** Version string, "0.1.0". */
const char *cvia_version(void);

/**
 * Initialize corevia: read CVIA_* variables, connect to the launcher (if
 * any) and wire up every peer. @p argc / @p argv may be NULL.
 * Returns -::CVIA_ECONFIG for a malformed CVIA_* variable (the message names
 * it), -::CVIA_EBOOT when the launcher cannot be reached.
 */
int cvia_init(int *argc, char ***argv);

/** Synchronize with every rank, then release every resource. Outstanding
 *  requests are cancelled. Returns the first error met (resources are
 *  released all the same). */
int cvia_finalize(void);

/** 1 between cvia_init() and cvia_finalize(), else 0. */
int cvia_initialized(void);

/** This process's rank (0 .. size-1), or -::CVIA_ENOINIT. */
int cvia_rank(void);

/** Number of ranks in the job, or -::CVIA_ENOINIT. */
int cvia_size(void);

/**
 * Start sending @p len bytes at @p buf to rank @p dest with @p tag.
 * @p buf must stay valid and unchanged until the request completes.
 * Returns -EINVAL for a bad rank or tag, -::CVIA_ENOPEER if @p dest is gone.
 */
int cvia_isend(const void *buf, size_t len, int dest, int tag,
               cvia_req_t *req_p);

/**
 * Start receiving into @p buf (capacity @p cap) a message from @p source
 * (or ::CVIA_ANY_SOURCE) with @p tag (or ::CVIA_ANY_TAG). A longer message
 * completes the request with -::CVIA_ETRUNC after filling @p cap bytes;
 * nothing beyond @p cap is ever written.
 */
int cvia_irecv(void *buf, size_t cap, int source, int tag, cvia_req_t *req_p);

/** Blocking forms of cvia_isend() / cvia_irecv(). @p status may be NULL. */
int cvia_send(const void *buf, size_t len, int dest, int tag);
int cvia_recv(void *buf, size_t cap, int source, int tag,
              cvia_status_t *status);

/**
 * Wait for @p *req to complete, fill @p status (may be NULL), release the
 * request and set @p *req to NULL. Returns the operation's result
 * (0, -::CVIA_ETRUNC, -::CVIA_ENOPEER, ...). A NULL @p *req returns 0.
 */
int cvia_wait(cvia_req_t *req, cvia_status_t *status);

/**
 * Make progress once; if @p *req is complete, set @p *done to 1 and act as
 * cvia_wait(), else set @p *done to 0 and return 0.
 */
int cvia_test(cvia_req_t *req, int *done, cvia_status_t *status);

/** Wait for all @p n requests (NULL entries are skipped). @p statuses may
 *  be NULL. Returns 0 or the first error among the requests; every
 *  request is released either way. */
int cvia_waitall(size_t n, cvia_req_t reqs[], cvia_status_t statuses[]);

/** Block until every rank has entered the barrier. */
int cvia_barrier(void);

/** Drive communication once without blocking. Returns the number of
 *  events processed (>= 0) or a negative error. */
int cvia_progress(void);

/** Abort the whole job: tell the launcher, which ends every rank.
 *  Does not return. */
void cvia_abort(int code, const char *why);

#ifdef __cplusplus
}
#endif
#endif
