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
 * Threads: several threads of a process may post, test, wait and progress
 * at once (each request is waited on by one thread). corevia starts no
 * thread of its own: progress happens in the caller's calls.
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
/** Wildcard source for cvia_irecv() that the loss of a peer does not
 *  fail: it matches a message from any rank, and stays posted while other
 *  ranks live (a ::CVIA_ANY_SOURCE receive fails with -::CVIA_ENOPEER as
 *  soon as any peer is gone, as MPI's does). For layers that multiplex
 *  their own traffic over corevia and handle lost peers themselves. */
#define CVIA_ANY_LIVE_SOURCE (-2)
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
CVIA_API const char *cvia_version(void);

/**
 * Initialize corevia: read CVIA_* variables, connect to the launcher (if
 * any) and wire up every peer. @p argc / @p argv may be NULL.
 * Returns -::CVIA_ECONFIG for a malformed CVIA_* variable (the message names
 * it), -::CVIA_EBOOT when the launcher cannot be reached.
 */
CVIA_API int cvia_init(int *argc, char ***argv);

/** Thread levels, as MPI's (the values are ordered). */
enum {
    CVIA_THREAD_SINGLE = 0,     /**< one thread in the process */
    CVIA_THREAD_FUNNELED = 1,   /**< only the initializing thread calls corevia */
    CVIA_THREAD_SERIALIZED = 2, /**< any thread, never two at once */
    CVIA_THREAD_MULTIPLE = 3,   /**< any thread, at any time */
};

/**
 * cvia_init() with a thread level: @p required is one of CVIA_THREAD_*,
 * and the level granted is stored in @p provided (may be NULL). Below
 * CVIA_THREAD_MULTIPLE the message path takes no lock and makes no atomic
 * read-modify-write; the application keeps its promise (CVIA_THREAD_CHECK
 * detects a broken one). cvia_init() is cvia_init_thread() at
 * CVIA_THREAD_MULTIPLE. Returns -EINVAL for an unknown level, else as
 * cvia_init().
 */
CVIA_API int cvia_init_thread(int *argc, char ***argv, int required, int *provided);

/** The level cvia_init_thread() granted, or -::CVIA_ENOINIT. */
CVIA_API int cvia_query_thread(void);

/** Synchronize with every rank, then release every resource. Outstanding
 *  requests are cancelled. Returns the first error met (resources are
 *  released all the same). */
CVIA_API int cvia_finalize(void);

/** 1 between cvia_init() and cvia_finalize(), else 0. */
CVIA_API int cvia_initialized(void);

/** This process's rank (0 .. size-1), or -::CVIA_ENOINIT. */
CVIA_API int cvia_rank(void);

/** Number of ranks in the job, or -::CVIA_ENOINIT. */
CVIA_API int cvia_size(void);

/**
 * Start sending @p len bytes at @p buf to rank @p dest with @p tag.
 * @p buf must stay valid and unchanged until the request completes.
 * A small message completes once it is buffered; a large one (from
 * CVIA_SHM_RNDV_THRESHOLD) is copied once, straight into the receive
 * buffer, and so completes only after the receiver has posted a matching
 * receive, as large MPI sends do: never wait on a large send before the
 * matching receive can be posted.
 * Returns -EINVAL for a bad rank or tag, -::CVIA_ENOPEER if @p dest is gone.
 */
CVIA_API int cvia_isend(const void *buf, size_t len, int dest, int tag,
               cvia_req_t *req_p);

/**
 * Start receiving into @p buf (capacity @p cap) a message from @p source
 * (or ::CVIA_ANY_SOURCE) with @p tag (or ::CVIA_ANY_TAG). A longer message
 * completes the request with -::CVIA_ETRUNC after filling @p cap bytes;
 * nothing beyond @p cap is ever written.
 */
CVIA_API int cvia_irecv(void *buf, size_t cap, int source, int tag, cvia_req_t *req_p);

/** Blocking forms of cvia_isend() / cvia_irecv(). @p status may be NULL. */
CVIA_API int cvia_send(const void *buf, size_t len, int dest, int tag);
CVIA_API int cvia_recv(void *buf, size_t cap, int source, int tag,
              cvia_status_t *status);

/**
 * Wait for @p *req to complete, fill @p status (may be NULL), release the
 * request and set @p *req to NULL. Returns the operation's result
 * (0, -::CVIA_ETRUNC, -::CVIA_ENOPEER, ...). A NULL @p *req returns 0.
 */
CVIA_API int cvia_wait(cvia_req_t *req, cvia_status_t *status);

/**
 * Make progress once; if @p *req is complete, set @p *done to 1 and act as
 * cvia_wait(), else set @p *done to 0 and return 0.
 */
CVIA_API int cvia_test(cvia_req_t *req, int *done, cvia_status_t *status);

/**
 * Withdraw a receive that no message has matched yet: it is released and
 * @p *req set to NULL (0). A receive already matched, or a send, cannot be
 * withdrawn: -EBUSY, and the request must be waited for as usual. A NULL
 * @p *req returns 0. What a loop of pre-posted receives calls at its end.
 */
CVIA_API int cvia_cancel(cvia_req_t *req);

/**
 * Take @p *req if it has completed, as cvia_test() does, but without
 * making progress and without backing off: for a caller that drives
 * progress itself with cvia_progress() and looks at many requests per
 * round. Sets @p *done to 1 (and releases the request) or 0.
 */
CVIA_API int cvia_reap(cvia_req_t *req, int *done, cvia_status_t *status);

/** Wait for all @p n requests (NULL entries are skipped). @p statuses may
 *  be NULL. Returns 0 or the first error among the requests; every
 *  request is released either way. */
CVIA_API int cvia_waitall(size_t n, cvia_req_t reqs[], cvia_status_t statuses[]);

/** Block until every rank has entered the barrier. */
CVIA_API int cvia_barrier(void);

/** Drive communication once without blocking. Returns the number of
 *  events processed (>= 0) or a negative error. */
CVIA_API int cvia_progress(void);

/** Look for dead peers now, as waits do every CVIA_LIVENESS_INTERVAL (the
 *  launcher's notices, each peer's process or connection): for a thread
 *  that polls (cvia_imm_poll(), cvia_test()) but never waits in corevia.
 *  Requests that involve a dead peer then complete with an error. Returns
 *  how many peers are gone so far (crashed, or exited after finalizing:
 *  0 while every peer runs), or a negative error. */
CVIA_API int cvia_check_peers(void);

/** @name One-sided communication (the VIA model: RDMA write, with or
 *  without immediate data, and RDMA read)
 *
 * A rank registers a region and ships its descriptor to peers by message;
 * a peer then writes into or reads from it without the owner posting
 * anything. The owner's side checks every access against its live
 * registrations (key, bounds, rights), so a stale or forged descriptor
 * fails with -EACCES instead of touching memory. On the node the copy is
 * done once, by the initiator (Cross Memory Attach, or plain loads and
 * stores where the region lies in a shared arena); where the kernel forbids
 * that, the bytes travel through the shared-memory rings.
 * @{ */

#define CVIA_MR_REMOTE_READ  0x1u   /**< peers may cvia_read() the region */
#define CVIA_MR_REMOTE_WRITE 0x2u   /**< peers may cvia_write() the region */

typedef struct cvia_mr *cvia_mr_t;

/** Everything a peer needs to reach a registered region. Plain data: send
 *  it to peers as the bytes of a message. */
typedef struct cvia_mr_desc {
    uint64_t addr;     /**< start of the region in its owner's address space */
    uint64_t len;      /**< bytes */
    uint64_t key;      /**< checked by the owner on every access */
    int32_t  rank;     /**< owner */
    uint32_t access;   /**< CVIA_MR_REMOTE_* */
} cvia_mr_desc_t;

/** Register [@p buf, @p buf + @p len) for remote @p access. The memory must
 *  stay valid until cvia_mr_dereg(). */
CVIA_API int cvia_mr_reg(void *buf, size_t len, unsigned access, cvia_mr_t *mr_p);
/** The descriptor to give to peers. */
CVIA_API int cvia_mr_desc(cvia_mr_t mr, cvia_mr_desc_t *desc);
/** Withdraw the region; later accesses by peers fail with -EACCES. */
CVIA_API int cvia_mr_dereg(cvia_mr_t mr);

/** cvia_write() flag: raise an immediate event at the target once the data
 *  is in place (the VIA "RDMA write with immediate"). */
#define CVIA_WRITE_IMM 0x1u

/**
 * Copy @p len bytes from @p local to offset @p off of the region @p remote.
 * Completion means @p local may be reused. The target sees the data no
 * later than an immediate event of this write (CVIA_WRITE_IMM with @p imm),
 * or than any message the initiator sends it after the completion.
 * Returns -EACCES (offset or length outside the region, no write right,
 * region withdrawn), -CVIA_ENOPEER, -EFAULT (bad local buffer) on the call
 * or on the request.
 */
CVIA_API int cvia_write(const void *local, size_t len, const cvia_mr_desc_t *remote,
               uint64_t off, unsigned flags, uint64_t imm, cvia_req_t *req_p);

/** Copy @p len bytes at offset @p off of the region @p remote into
 *  @p local. Errors as cvia_write(). */
CVIA_API int cvia_read(void *local, size_t len, const cvia_mr_desc_t *remote,
              uint64_t off, cvia_req_t *req_p);

/** An immediate event: a peer's write with CVIA_WRITE_IMM has landed. */
typedef struct cvia_imm_event {
    int      source;   /**< the writer */
    uint64_t imm;      /**< its immediate data */
    uint64_t key;      /**< the region written */
    uint64_t off;      /**< offset of the write in the region */
    uint64_t len;      /**< bytes written */
} cvia_imm_event_t;

/** Take up to @p max pending immediate events without blocking, oldest
 *  first (per writer, in the order of its writes). Returns the count. */
CVIA_API int cvia_imm_poll(cvia_imm_event_t *ev, int max);
/** Block until an immediate event arrives and take it. Fails with
 *  -CVIA_ENOPEER if every peer is gone. */
CVIA_API int cvia_imm_wait(cvia_imm_event_t *ev);
/** For a thread that polls cvia_imm_poll() and sleeps when idle, woken by
 *  peers' writes or by other threads of its rank: the count of
 *  cvia_imm_kick() calls, to read before the last poll and look at. */
CVIA_API uint32_t cvia_imm_kicks(void);
/** Sleep, without the spin and yield phases of cvia_imm_wait(), until an
 *  immediate event may be pending, cvia_imm_kick() has been called since
 *  cvia_imm_kicks() returned @p kicks, or @p max_s seconds pass (at most,
 *  and for 0, CVIA_LIVENESS_INTERVAL; dead peers are looked for after).
 *  Returns 1 if events are pending, 0, or -EOPNOTSUPP where it cannot
 *  sleep until a peer writes (every peer is on another host, or no
 *  helper thread could be started for a job on several hosts: the caller
 *  then naps itself), or another negative error. */
CVIA_API int cvia_imm_block(uint32_t kicks, double max_s);
/** Sleep until input may be waiting for this process (a peer wrote into
 *  its rings, a network socket is readable), cvia_imm_kick() has been
 *  called since cvia_imm_kicks() returned @p kicks, or @p max_s seconds
 *  pass. Progresses nothing and reads no request, so a thread that only
 *  waits (a wait object handed to an event loop) may call it while another
 *  thread progresses, at every thread level. Returns 1 if input may be
 *  waiting (the caller's thread that progresses should look), 0 if @p max_s
 *  passed, or a negative error. */
CVIA_API int cvia_input_wait(uint32_t kicks, double max_s);
/** Wake a thread of this rank in cvia_imm_block(). Async-signal-safe. */
CVIA_API void cvia_imm_kick(void);
/** @} */

/** An identifier of this job, the same on every rank and different for
 *  every job (a one-way hash of the job's key, so it may be shown and
 *  exchanged freely); 0 before cvia_init(). What layers above corevia put
 *  in the names they exchange, to refuse a name from another job. */
CVIA_API uint64_t cvia_job_id(void);

/**
 * This process's rank, the job size and cvia_job_id(), also before
 * cvia_init(): it then connects to the launcher (cvia-run, or PMIx), which
 * involves no other rank, and cvia_init() takes that connection over. For
 * layers that hand out their address before the collective wire-up (a
 * libfabric endpoint's name). Any pointer may be NULL. Errors as
 * cvia_init()'s launcher step.
 */
CVIA_API int cvia_job_info(int *rank, int *size, uint64_t *job_id);

/** @name Peers without a launcher (version node CVIA_1.1)
 *
 * A process started without cvia-run or PMIx is a job of one whose peer
 * table can grow: it hands its address (cvia_addr()) to another such
 * process by any means (a file, a pipe, a socket), which reaches it with
 * cvia_connect() and gets a peer index for cvia_send(), cvia_isend(),
 * cvia_read() and the rest. The connection is both ways: the process
 * connected to learns the peer at its next progress and receives from
 * it with CVIA_ANY_SOURCE (cvia_status_t.source is its index) or sends to
 * the index once it knows it. Processes on the same host only (shared
 * memory, single copy by Cross Memory Attach), of the same user. At most
 * CVIA_MAX_PEERS - 1 peers at once (a dead one's place is reused), and 4 x
 * CVIA_MAX_PEERS - 1 over the process's life. A peer that dies is
 * detected like a rank (CVIA_LIVENESS_INTERVAL): its operations fail with
 * -CVIA_ENOPEER.
 * @{ */

/** Longest address cvia_addr() gives. */
#define CVIA_ADDR_MAX 48

/**
 * This process's address for cvia_connect(): at most ::CVIA_ADDR_MAX
 * opaque bytes (host identity, pid, segment, and a random nonce that a
 * peer must present: an address guessed or forged is refused; with
 * CVIA_NET=udp or eth in the environment, also the endpoint that peers
 * on other hosts reach). @p *len is
 * the buffer's capacity on entry, the address's length on return
 * (-ENOBUFS, with the length needed, if it is too small). -EOPNOTSUPP in
 * a launcher's job or with CVIA_MAX_PEERS=1.
 */
CVIA_API int cvia_addr(void *buf, size_t *len);

/**
 * Reach the process whose cvia_addr() is @p addr and store its peer index
 * in @p *peer (the same index again if it is already a peer, 0 for this
 * process's own address). Waits for the peer to take the connection in
 * its progress (any corevia call that progresses; CVIA_BOOT_TIMEOUT at
 * most). A peer on another host is reached over udp (eth) when both
 * processes have CVIA_NET=udp (eth). Errors: -CVIA_ENOPROV (another host,
 * and not the same network transport on both sides), -ETIMEDOUT also for another host's address with a wrong
 * nonce (its datagrams are dropped unanswered), -CVIA_ECONFIG (another
 * CVIA_DGRAM_AUTH), -EACCES
 * (the nonce does not match: a forged or stale address), -CVIA_ESEGMENT
 * (the peer's segment is unusable: other CVIA_SHM_* or CVIA_MAX_PEERS
 * settings, another user), -ENOSPC (CVIA_MAX_PEERS peers at once, here
 * or there, or the indices of this process's life used up), -CVIA_ENOPEER (the peer is gone), -ETIMEDOUT, -EOPNOTSUPP as
 * cvia_addr().
 */
CVIA_API int cvia_connect(const void *addr, size_t len, int *peer);
/** @} */

/** 1 if @p peer runs on this host (reached through shared memory: a
 *  cvia_write() to it has landed when it completes), 0 if on another
 *  host, -EINVAL for a bad rank. */
CVIA_API int cvia_peer_local(int peer);

/** 1 while @p peer is alive, 0 once corevia knows it is gone (after a
 *  liveness check, see cvia_check_peers()), -EINVAL for a bad rank. */
CVIA_API int cvia_peer_alive(int peer);

/** One line describing how this rank reaches @p peer (transport, copy
 *  mechanism, thresholds), for tools and logs. */
CVIA_API int cvia_peer_info(int peer, char *buf, size_t cap);

/** @name Memory for communication buffers
 *
 * cvia_mem_alloc() returns memory from this process's shareable arena
 * (memfd-backed, MAP_SHARED): a peer on the same node maps it on first use,
 * and a transfer whose source or destination lies in it is then copied with
 * plain loads and stores, without a system call. Only processes that the
 * kernel would also let use Cross Memory Attach on this one (ptrace
 * permission) can map it. Both calls may be used before cvia_init() and
 * after cvia_finalize(). In a child created by fork(), memory from the
 * parent's arena is not mapped (as with registered memory in RDMA stacks).
 * @{ */

/**
 * Allocate @p len bytes (0 counts as 1) of kind @p kind and store the
 * address in @p *ptr_p (set on success only). Blocks are 64-byte aligned;
 * from 4096 bytes on they are page-aligned and share no page with another
 * block. @p kind places the memory on a tier of the machine (the NUMA
 * nodes ranked from hwloc, see `cvia-info --tiers`; CVIA_MEM_TIERS names
 * them by hand, CVIA_TOPOLOGY decides on a recorded machine):
 *  - NULL or "default": no policy (first touch, or the process's own, as
 *    numactl sets it); loads no topology;
 *  - "hbw": the high-bandwidth tier (MCDRAM, HBM), the node(s) local to
 *    the CPUs this process may run on; -ENODEV where there is none;
 *  - "hbw-preferred": hbw, else default memory, with one warning per
 *    process (also when the hbw nodes have no room left);
 *  - "ddr": ordinary memory local to those CPUs; "node:N": NUMA node N (OS
 *    index); "near-nic:IFNAME": ordinary memory local to that network
 *    interface. A node or interface that does not exist is -ENODEV.
 * The pages are bound (mbind) before they are allocated, so every page is
 * where the kind says; memory of different kinds never shares a page.
 * Returns -EINVAL for a malformed kind, -ENODEV as above, -ENOMEM when the
 * machine's memory, the free memory of the kind's nodes (checked before
 * binding rather than left to the OOM killer), CVIA_MEM_LIMIT or the
 * arena's chunk slots are exhausted (checked when the memory is reserved,
 * so a full machine never shows up later as a SIGBUS), -::CVIA_ECONFIG for
 * a malformed CVIA_MEM_* variable.
 */
CVIA_API int cvia_mem_alloc(size_t len, const char *kind, void **ptr_p);

/** Free memory from cvia_mem_alloc(). NULL is a no-op (0); anything else
 *  not returned by cvia_mem_alloc(), or already freed, is -EINVAL. The
 *  memory must not be in use by an outstanding operation. */
CVIA_API int cvia_mem_free(void *ptr);
/** @} */

/** @name A layer's small messages without a request each: inboxes and
 *  inject (version node CVIA_1.2)
 *
 * For a layer above corevia that matches messages itself (the libfabric
 * provider): every message that arrives on @p tag from any peer goes to
 * the inbox, in the order the peers' messages began to arrive, instead of
 * to cvia_irecv()'s matching; corevia allocates no request for it and
 * keeps no receive posted. The layer calls cvia_progress(), takes what
 * has arrived with cvia_inbox_poll() and hands the buffers back with
 * cvia_inbox_release(). A message of a peer that dies while it arrives
 * comes out with a negative status. Messages on @p tag that arrived
 * before cvia_inbox_open() stay with cvia_irecv().
 * @{ */

/** An inbox (cvia_inbox_open). */
typedef struct cvia_inbox *cvia_inbox_t;

/** A message taken from an inbox; its bytes are valid until it is released. */
typedef struct cvia_inbox_msg {
    int         source;  /**< the sender */
    int         status;  /**< 0, or the negative code it failed with */
    size_t      len;     /**< bytes at buf */
    const void *buf;     /**< the message */
    void       *priv;    /**< corevia's */
} cvia_inbox_msg_t;

/** Send every message with @p tag (>= 0) to a new inbox from now on.
 *  @p buf_size: bytes of the buffers it keeps (a longer message gets one
 *  of its own); @p prealloc: buffers made at once (more come as needed).
 *  -EINVAL for a bad argument, -EBUSY if the tag has one already or the
 *  process has 256 inboxes (open, closing, or closed with messages not
 *  released yet; a closed one is reused), -ENOMEM. */
CVIA_API int cvia_inbox_open(int tag, size_t buf_size, int prealloc, cvia_inbox_t *ib_p);
/** Take up to @p max messages that have arrived completely, in arrival
 *  order, without progressing anything. Returns the count. */
CVIA_API int cvia_inbox_poll(cvia_inbox_t ib, cvia_inbox_msg_t *msgs, int max);
/** Hand back @p n messages taken by cvia_inbox_poll(). */
CVIA_API void cvia_inbox_release(cvia_inbox_t ib, cvia_inbox_msg_t *msgs, int n);
/** Stop sending the tag's messages to the inbox (later ones go to
 *  cvia_irecv()'s matching), let those arriving finish, progressing for at
 *  most 5 s (or CVIA_LIVENESS_INTERVAL if longer), and drop what was not
 *  taken. A message taken and not released yet stays valid; releasing it
 *  later frees it. Before cvia_finalize(). 0, or -ETIMEDOUT when a message
 *  was still arriving then (the inbox's memory then stays, never reused). */
CVIA_API int cvia_inbox_close(cvia_inbox_t ib);

/** Takes a message of an inbox's tag straight from where it arrived
 *  (cvia_inbox_progress): @p buf, @p len bytes from @p source, valid only
 *  during the call. Returns 1 when it took the message (matched it and
 *  copied what it keeps), 0 to leave it to the inbox. */
typedef int (*cvia_inbox_visit_fn)(void *arg, int source, const void *buf, size_t len);
/** cvia_progress(), during which a whole message of @p ib's tag that a
 *  peer on this host put into one shm ring slot, arriving while @p ib
 *  holds no message (none arriving, none not yet polled), is first
 *  offered to @p fn (one match and one copy, from the slot, which is
 *  released at once); what @p fn leaves, and every other message, goes
 *  to the inbox as before. @p fn runs on the calling thread only, inside
 *  this call: the caller's own locks cover it. It must not call corevia.
 *  Returns what cvia_progress() returns; -EINVAL for a bad argument. */
CVIA_API int cvia_inbox_progress(cvia_inbox_t ib, cvia_inbox_visit_fn fn, void *arg);

/** Send a small message made of two pieces, @p hdr then @p buf (either may
 *  be empty), to @p dest with @p tag now, without a request, if corevia
 *  can buffer it at once after @p dest's earlier messages: 0 (sent; both
 *  buffers are free again), -EAGAIN when it cannot (nothing sent: use
 *  cvia_isend(); always so for a peer on another host and for a message
 *  of more than one shm slot), or cvia_isend()'s errors. */
CVIA_API int cvia_inject(const void *hdr, size_t hlen, const void *buf, size_t len, int dest,
                         int tag);
/** @} */

/** Abort the whole job: tell the launcher, which ends every rank.
 *  Does not return. */
CVIA_API void cvia_abort(int code, const char *why);

/** @name Introspection: configuration variables and providers
 *
 * What cvia-info shows, for any program: every `CVIA_*` variable this
 * process knows (the core's, and those of the layers it has loaded: the
 * DSM library, the libfabric provider) with its value in force, and the
 * providers built into the library with their state on this machine.
 * Added in version node CVIA_1.1.
 * @{ */

/** Room for a variable's value or default, printed. */
#define CVIA_VAR_VALUE_MAX 288

/** One configuration variable, as cvia_var_info() describes it. */
typedef struct cvia_var_info {
    char        name[64];   /**< full name: "CVIA_SHM_SLOT_SIZE" */
    const char *component;  /**< "core", "shm", "dsm", "fi", ... */
    const char *syntax;     /**< what a value looks like */
    const char *desc;       /**< what it does */
    char        dflt[CVIA_VAR_VALUE_MAX];   /**< the default, printed as value is */
    char        value[CVIA_VAR_VALUE_MAX];  /**< the value in force */
    int         set;        /**< 1 if the environment sets it */
    int         valid;      /**< 0 if the environment's value does not parse
                             *   (value then shows the default) */
    const char *dflt_text;  /**< the default as the documentation writes it */
} cvia_var_info_t;

/**
 * Describe the @p index-th variable (0, 1, ... in a stable order: by
 * component, then as declared). @p size is sizeof(cvia_var_info_t) as the
 * caller was compiled (later versions may add fields at the end). 0, or
 * -ENOENT past the last one, -EINVAL for a bad argument. The strings stay
 * valid while the layer that declared the variable stays loaded.
 */
CVIA_API int cvia_var_info(int index, cvia_var_info_t *info, size_t size);

/** Warn once on stderr (at CVIA_LOG=warn) for each `CVIA_*` name in the
 *  environment that no loaded component declares, suggesting the nearest
 *  known name; cvia_init() does the same. Returns how many it found. */
CVIA_API int cvia_var_check(void);

/** A table of variables (corevia's own format, src/util/param.h): not part
 *  of the API; only corevia's own layers, built from the same source, make
 *  one. */
struct cvia_param_table;

/**
 * For corevia's own layers above the core (the DSM library, the libfabric
 * provider): make their variables known to cvia_var_info() and to the
 * check for unknown `CVIA_*` names, for as long as they are loaded. A
 * second registration of the same prefix is a no-op. 0, -EINVAL, or
 * -ENOSPC when too many layers are registered.
 */
CVIA_API int cvia_var_register(const struct cvia_param_table *table);
/** Forget a table before the layer that owns it is unloaded. 0 or -ENOENT. */
CVIA_API int cvia_var_unregister(const struct cvia_param_table *table);

/** A provider built into the library, as cvia_provider_info() describes it. */
typedef struct cvia_provider_info {
    const char *name;       /**< "shm", "tcp", "udp", "eth" */
    const char *desc;       /**< one line: what it is */
    char        state[512]; /**< whether and how it works on this machine */
} cvia_provider_info_t;

/** Describe the @p index-th provider; @p size as for cvia_var_info(). 0,
 *  -ENOENT past the last one, -EINVAL. */
CVIA_API int cvia_provider_info(int index, cvia_provider_info_t *info, size_t size);

/** Remove what jobs of this user that died left behind for the @p index-th
 *  provider (shared-memory segments of processes that no longer exist).
 *  The number removed, -ENOENT past the last provider, or another negative
 *  code. Never touches a live job's resources. */
CVIA_API int cvia_provider_cleanup(int index);
/** @} */

#ifdef __cplusplus
}
#endif
#endif
