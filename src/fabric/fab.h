/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The libfabric provider "corevia": an external provider (libcorevia-fi.so)
 * that libfabric loads from FI_PROVIDER_PATH, built as a client of
 * corevia's public API (it sits above core/, like the DSM): its messages
 * travel as corevia messages, so every transport (shm rings and single
 * copy, udp, eth, tcp) serves it without a second copy of any of them.
 *
 * Files:
 *   fab_prov.c   fi_prov_ini, getinfo (attributes and hint filtering),
 *                fabric, domain, the corevia core's lifetime
 *   fab_av.c     address vector: names <-> fi_addr_t
 *   fab_cq.c     completion queues and counters
 *   fab_ep.c     endpoints: life, binding, names, cancel, progress
 *   fab_msg.c    the wire protocol over corevia: eager, rendezvous by RDMA
 *                read, matching of tagged and untagged receives
 *   fab_mr.c     memory registration (local descriptors; no remote access yet)
 *   fab_auto.c   FI_PROGRESS_AUTO: a domain's progress thread
 *   fab_wait.c   FI_WAIT_FD: eventfds for CQs and counters, fi_trywait
 *   fab_param.c  CVIA_FI_* (compiled into libcorevia: the library's table
 *                list names it, as for the DSM)
 *
 * Protocol (one corevia tag per endpoint id, FAB_TAG_BASE + epid, whose
 * messages from any peer go to the endpoint's corevia inbox, cvia_inbox_open,
 * without a corevia request each):
 *   EAGER  header + payload, for messages up to CVIA_FI_EAGER;
 *   RTS    header + the sender's buffer as a read-only corevia region: the
 *          receiver that matches it reads the bytes straight into the
 *          receive buffer (cvia_read: one copy by CMA or the arena on a
 *          host, segmented datagrams between hosts), then sends
 *   FIN    back to the sender's endpoint, which completes the send.
 * Messages between a pair of endpoints are matched in the order they were
 * sent (FI_ORDER_SAS): corevia delivers a pair's messages in order and the
 * endpoint consumes its posted receives in the order it posted them. */
#ifndef COREVIA_FABRIC_FAB_H
#define COREVIA_FABRIC_FAB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include <corevia/corevia.h>
#include "fabric/fab_cfg.h"
#include "util/lock.h"
#include "util/clock.h"

#define FAB_NAME        "corevia"
#define FAB_VERSION     FI_VERSION(0, 1)
#define FAB_TAG_BASE    0x7fff0000       /* corevia tag of endpoint id 0 */
#define FAB_DATA_TAG    0x40000000       /* pushed rendezvous data: | epid << 23 | n */
#define FAB_MAX_EP      0xffff
#define FAB_IOV_MAX     4
#define FAB_NAME_MAGIC  0x49465643u      /* "CVFI" */

#define fab_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* What fi_getname() gives, 64 bytes (Open MPI's limit) in both forms.
 * Version 1, in a launcher's job: enough to reach the endpoint from any
 * rank of the same corevia job; the job id is a one-way hash of the job
 * key. Version 2, without a launcher: the process's cvia_addr() (host,
 * pid, segment, nonce), which fi_av_insert gives to cvia_connect. */
struct fab_name {
    uint32_t magic;
    uint16_t version;
    uint16_t epid;
    int32_t  rank;
    uint32_t pad;
    uint64_t job;
    uint8_t  spare[40];
};

struct fab_name_dyn {
    uint32_t magic;
    uint16_t version;        /* 2 */
    uint16_t epid;
    uint32_t len;            /* bytes of addr in use */
    uint32_t pad;
    uint8_t  addr[CVIA_ADDR_MAX];
};
_Static_assert(sizeof(struct fab_name) == 64 && sizeof(struct fab_name_dyn) == 64,
               "an fi_getname name is 64 bytes");

enum { FAB_OP_EAGER = 1, FAB_OP_RTS, FAB_OP_FIN, FAB_OP_AMO, FAB_OP_AMO_RESP, FAB_OP_DC, FAB_OP_CTS };
#define FAB_H_TAGGED 0x1     /* fi_tsend* (else fi_send*): matched separately */
#define FAB_H_DATA   0x2     /* carries remote CQ data */

/* RTS and FIN carry all of it; EAGER only its first FAB_EAGER_HDR bytes,
 * then the CQ data (8 bytes, with FAB_H_DATA), then the payload: an 8-byte
 * message with data fits the 32 bytes corevia's shm rings carry in the
 * cache line of their slot header. */
struct fab_hdr {
    uint8_t  op;
    uint8_t  flags;          /* FAB_H_* */
    uint16_t src_epid;
    int32_t  status;         /* FIN: 0 or the receiver's negative error */
    uint64_t tag;            /* CTS: the corevia tag the data is to be pushed on */
    uint64_t data;
    uint64_t len;            /* RTS: message length */
    uint64_t cookie;         /* RTS / FIN: the sender's handle */
};
#define FAB_EAGER_HDR offsetof(struct fab_hdr, data)

struct fab_rts {
    struct fab_hdr h;
    cvia_mr_desc_t desc;     /* the sender's buffer, remote-read only */
};

/* AMO: the operands follow (count elements; then as many compare values
 * for FAB_AMO_COMPARE). AMO_RESP is a struct fab_hdr (status, len) and
 * the old values. */
struct fab_amo {
    struct fab_hdr h;
    uint64_t addr, key;
    uint32_t count;
    uint8_t  dt, aop, kind, pad;
};

/* ---- objects ------------------------------------------------------------ */

/* The provider's own locks (endpoint, completion queue, the endpoint sets
 * they progress). In an FI_THREAD_DOMAIN domain the application calls
 * into the domain's objects from one thread at a time: the lock is off,
 * a load and a predictable branch, and no locked instruction follows the
 * store that hands a message to the peer's ring. Any other level: a
 * spinlock. Fixed when the object is opened, from its domain. */
typedef struct {
    cvia_spinlock_t l;
    int on;
} fab_lock_t;

static inline void fab_lock_init(fab_lock_t *k, int on)
{
    cvia_spin_init(&k->l);
    k->on = on;
}

static inline void fab_lock(fab_lock_t *k)
{
    if (k->on)
        cvia_spin_lock(&k->l);
}

static inline int fab_trylock(fab_lock_t *k)
{
    return !k->on || cvia_spin_trylock(&k->l);
}

static inline void fab_unlock(fab_lock_t *k)
{
    if (k->on)
        cvia_spin_unlock(&k->l);
}

struct fab_fabric {
    struct fid_fabric fid;
};

struct fab_mr;
struct fab_auto;
struct fab_waiter;

#define FAB_AUTO_EP_MAX 64   /* endpoints of one FI_PROGRESS_AUTO domain */

struct fab_domain {
    struct fid_domain fid;
    struct fab_fabric *fabric;
    enum fi_threading threading;
    int auto_progress;       /* FI_PROGRESS_AUTO: a thread drives its endpoints */
    pthread_mutex_t auto_lock;
    struct fab_auto *autop;  /* the thread, from the first armed endpoint on */
    pthread_mutex_t wait_lock;
    struct fab_waiter *waiter;  /* FI_WAIT_FD's thread, from the first such object on */
    atomic_int refs;         /* AVs, CQs, endpoints, MRs open on it */
    pthread_mutex_t mr_lock; /* mrs, and atomics applied to them */
    struct fab_mr *mrs;      /* regions open to remote access */
};

/* An entry: rank << 16 | endpoint id; FAB_AV_GONE once removed. */
typedef _Atomic uint64_t fab_av_entry_t;
#define FAB_AV_GONE UINT64_MAX

/* Entries are only ever appended (a removed one is marked), and a grown
 * table keeps the old one until the AV closes, so senders resolve an
 * address without a lock: they load the published table and count. */
struct fab_av {
    struct fid_av fid;
    struct fab_domain *dom;
    enum fi_av_type type;
    int core_held;           /* holds a reference on corevia */
    pthread_mutex_t lock;    /* inserts and removals */
    fab_av_entry_t *_Atomic e;
    atomic_size_t n;
    size_t cap;
    void  *old;              /* tables replaced by bigger ones, freed at close */
    atomic_int refs;         /* endpoints bound */
    /* launcher-free names as inserted, by fi_addr_t, for fi_av_lookup
     * (lock; NULL until the first version 2 name) */
    struct fab_name_dyn *names;
    size_t names_cap;
};

/* One completion, in the largest format; the formats are prefixes of it. */
struct fab_cqe {
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
};

struct fab_cqerr {
    struct fab_cqerr *next;
    struct fi_cq_err_entry e;
};
/* The room an error record takes (fab_cq_push_err): a failed receive's
 * descriptor has it, a failed send, RMA or atomic's operation block
 * (struct fab_op) becomes it: nothing is reserved on the success path. */
#define FAB_CQERR_ROOM sizeof(struct fab_cqerr)
#define FAB_CQ_ERR_RESERVE 16   /* records a CQ keeps for errors with no room */

struct fab_ep;

/* FI_WAIT_FD of a CQ or counter (fab_wait.c). */
struct fab_waitobj {
    struct fab_waitobj *next;   /* the domain's waiter's list (its lock) */
    struct fab_domain *dom;
    int efd;                    /* eventfd, nonblocking */
    atomic_int armed;           /* fi_trywait said 0: the next event writes efd */
    uint64_t deadline;          /* ns: signalled then at the latest (waiter's lock) */
};

/* The endpoints a CQ or counter drives when it is read. A reader
 * progresses a copy of the list without the lock; @busy counts such
 * readers, so an endpoint leaving the set can wait until none holds it. */
struct fab_epset {
    fab_lock_t lock;
    struct fab_ep *eps[8];
    int n;
    atomic_int busy;
};

struct fab_cq {
    struct fid_cq fid;
    struct fab_domain *dom;
    size_t esize;            /* bytes of one entry in the format asked for */
    fab_lock_t lock;
    struct fab_cqe *ring;
    size_t head, len, cap;   /* cap: a power of two */
    struct fab_cqerr *err_head, *err_tail;
    struct fab_cqerr *err_spare;   /* the reserve (lock) */
    unsigned err_nspare;
    unsigned long err_lost;  /* errors that found neither memory nor reserve */
    struct fab_epset set;    /* endpoints to progress when read */
    unsigned idle;           /* empty reads in a row, when lock is off */
    atomic_int drained;      /* a read emptied the queue: the next read
                              * answers from the queue, without progress */
    atomic_int refs;
    atomic_int sleepers;     /* threads asleep in fi_cq_sread: a push kicks them */
    atomic_int signaled;     /* fi_cq_signal: the next (or current) sread returns */
    struct fab_waitobj *w;   /* FI_WAIT_FD, else NULL */
};

struct fab_cntr {
    struct fid_cntr fid;
    struct fab_domain *dom;
    atomic_uint_least64_t val, err;
    atomic_uint_least64_t seen_val, seen_err;   /* at the last read or fi_trywait */
    struct fab_epset set;
    atomic_int refs;
    struct fab_waitobj *w;   /* FI_WAIT_FD, else NULL */
};

struct fab_mr {
    struct fid_mr fid;
    struct fab_domain *dom;
    struct fab_mr *dom_next;
    const void *buf;
    size_t len;
    uint64_t access;         /* FI_REMOTE_READ / FI_REMOTE_WRITE */
    cvia_mr_t cmr;           /* corevia's registration, for remote access */
};

/* A posted receive. */
struct fab_rx {
    struct fab_rx *next, *prev;
    void    *context;
    uint64_t flags;          /* FI_TAGGED or FI_MSG, and the op flags */
    uint64_t tag, ignore;
    int32_t  src_rank;       /* -1: any */
    int32_t  src_epid;
    size_t   iov_count, cap;
    struct iovec iov[FAB_IOV_MAX];
};

/* A message no receive has matched yet. */
struct fab_unexp {
    struct fab_unexp *next, *prev;
    int32_t  rank;
    uint16_t epid;
    uint8_t  op, hflags;
    uint64_t tag, data, len;
    void    *payload;        /* EAGER: a copy of the bytes (NULL if none) */
    struct fab_rts rts;      /* RTS */
    void    *claimed;        /* FI_CLAIM: the context that owns it */
};

/* An operation that waits for corevia: a send (eager, RTS then FIN, or a
 * control message), or the read of a rendezvous. */
enum { FAB_TX_EAGER = 1, FAB_TX_RTS, FAB_TX_CTRL, FAB_RD, FAB_RMA, FAB_TX_AMO };
struct fab_op {
    struct fab_op *next;
    int      kind;
    cvia_req_t req;          /* NULL once corevia completed it */
    int      req_rc;
    int      fin;            /* RTS: the FIN came (with fin_rc); RMA: the DC answer */
    int      dc;             /* RMA write: delivery-complete probe sent, FIN awaited */
    int      pushed;         /* RD: the sender pushes (another host): no FIN */
    int      fin_rc;
    void    *context;
    uint64_t flags;          /* completion flags (FI_SEND | FI_TAGGED ...) */
    int      report;         /* generate a completion */
    int32_t  rank;           /* the peer */
    uint16_t epid;
    size_t   len;            /* bytes of the message (RD: msg length) */
    uint64_t tag, data;
    void    *wire;           /* what corevia sends: header (+ payload) */
    int      wire_pooled;    /* wire came from ep->wire_free */
    cvia_mr_t mr;            /* RTS: the registered send buffer (peer on this host) */
    const void *sbuf;        /* RTS: the contiguous send buffer */
    cvia_req_t push;         /* RTS to another host: the data, pushed after CTS */
    int      pushing;        /* RTS: CTS came, push posted (or failed: fin) */
    void    *bounce;         /* RTS/RD with several iovs: contiguous copy */
    struct fab_rx *rx;       /* RD: the receive being filled */
    uint64_t cookie;         /* RD: the sender's handle; RTS, AMO: ours */
    void    *result;         /* AMO: where the old values go */
    size_t   iov_count;      /* RMA read into several iovs: scatter at the end */
    struct iovec iov[FAB_IOV_MAX];
};

#define FAB_INBOX_BATCH 16   /* inbox messages taken at a time */
#define FAB_OWED_MAX 64      /* control messages owed at most, for want of memory */

struct fab_ep {
    struct fid_ep fid;
    struct fab_domain *dom;
    struct fab_av *av;
    struct fab_cq *tx_cq, *rx_cq;
    struct fab_cntr *tx_cntr, *rx_cntr, *wr_cntr, *rd_cntr;
    int      tx_selective, rx_selective;
    uint64_t tx_op_flags, rx_op_flags;
    uint64_t caps;
    int      enabled;
    int      core_held;          /* holds a reference on corevia */
    int      armed;              /* the inbox open */
    int      arm_rc;             /* arming failed: every operation fails with it */
    uint16_t epid;
    fab_lock_t lock;             /* short sections: a mutex cost 2x on 8 B latency */
    /* posted and unexpected, tagged (0) and untagged (1) */
    struct fab_rx    *posted_head[2], *posted_tail[2];
    struct fab_unexp *unexp_head[2], *unexp_tail[2];
    struct fab_op *ops;          /* sends and reads in flight */
    cvia_inbox_t inbox;          /* the endpoint's tag's arrivals, once armed */
    /* arrivals taken from corevia that could not be queued as unexpected
     * for want of memory: retried first at the next progress, in order
     * (a batch of the inbox, from held_off on; an early message in
     * early_buf, the other early ones still in corevia's queue) */
    cvia_inbox_msg_t held[FAB_INBOX_BATCH];
    int      nheld, held_off;
    char    *early_buf;
    int32_t  early_src;
    size_t   early_len;
    /* header-only control messages (FIN, CTS, DC) owed for want of
     * memory (their header, or corevia's request), sent at the next
     * progress and once more at close (the peer's operation waits for
     * them); fab_send_hdr */
    struct {
        int32_t rank; uint16_t epid; uint8_t op; int status; uint64_t cookie; uint64_t tag;
    } owed[FAB_OWED_MAX];
    unsigned nowed;
    size_t   slot_size;          /* the largest message of ours but a pushed one */
    int      nlost_seen;
    unsigned check_tick;         /* progress rounds, to read the clock rarely */
    double   next_check;
    uint64_t cookie_gen;
    uint32_t data_gen;           /* data tags handed out by CTS */
    /* AMO answers (applied: to be sent, never applied again) that corevia
     * had no request for, in order; sent at the next progress (fab_rma.c) */
    struct fab_amo_owed *amo_owed, *amo_owed_tail;
    unsigned long amo_stray;     /* AMO answers no operation of ours waited for */
    void    *wire_free;          /* spare send buffers of slot_size bytes */
    struct fab_rx *rx_free;      /* spare receive descriptors */
};

/* ---- shared helpers -------------------------------------------------------- */

extern struct fi_provider fab_prov;
extern struct fab_cfg fab_cfg;

/* fab_prov.c */
int  fab_core_acquire(void);        /* corevia initialized (by us or the app) */
void fab_core_release(void);
int  fab_core_hold_if_up(void);     /* 1: a reference taken on corevia, which is up */
/* rank, size and job id, before corevia's wire-up too */
int  fab_job(int32_t *rank, int32_t *size, uint64_t *job);
int  fab_job_of_one(void);
/* corevia up and the endpoint's inbox open (ep->lock held) */
int  fab_ep_arm(struct fab_ep *ep);
int  fab_errno(int cvia_rc);        /* a corevia code as a negative FI_* code */

/* fab_av.c */
int  fab_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
                 struct fid_av **av, void *context);
int  fab_av_resolve(struct fab_av *av, fi_addr_t addr, int32_t *rank, uint16_t *epid);
/* @addr's entry (rank << 16 | endpoint id) without a lock, FAB_AV_GONE
 * when it names none (out of the table, or removed). */
static inline uint64_t fab_av_entry(struct fab_av *av, fi_addr_t addr)
{
    if (addr >= atomic_load_explicit(&av->n, memory_order_acquire))
        return FAB_AV_GONE;
    return atomic_load_explicit(&atomic_load_explicit(&av->e, memory_order_acquire)[addr + 1],
                                memory_order_relaxed);
}
fi_addr_t fab_av_reverse(struct fab_av *av, int32_t rank, uint16_t epid);

/* fab_cq.c */
int  fab_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
                 struct fid_cq **cq, void *context);
int  fab_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
                 void *context);
int  fab_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
                   struct fid_cntr **cntr, void *context);
int  fab_epset_add(struct fab_epset *set, struct fab_ep *ep);
void fab_epset_del(struct fab_epset *set, struct fab_ep *ep);
/* A completion into @cq: fab_cq_push (fab.h, below) writes it in place
 * where it can, fab_cq_push_locked in every other case (a lock, a ring to
 * grow). */
void fab_cq_push_locked(struct fab_cq *cq, void *ctx, uint64_t flags, size_t len,
                        void *buf, uint64_t data, uint64_t tag, fi_addr_t src);
/* A thread asleep on @cq or its wait fd learns of an event. */
void fab_cq_wake(struct fab_cq *cq);
/* An error completion. @room: memory the caller gives up to carry it
 * (malloc'd, FAB_CQERR_ROOM bytes at least: a failed receive's descriptor,
 * a failed operation's own block), so that it cannot be lost; NULL: allocated,
 * else from the CQ's reserve. */
void fab_cq_push_err(struct fab_cq *cq, void *room, void *ctx, uint64_t flags, size_t len,
                     uint64_t data, uint64_t tag, size_t olen, int err, int prov_errno);

/* fab_ep.c */
int  fab_ep_open(struct fid_domain *domain, struct fi_info *info,
                 struct fid_ep **ep, void *context);
void fab_ep_progress(struct fab_ep *ep);          /* takes ep->lock */

static inline struct fab_ep *fab_ep_of(struct fid_ep *fep)
{
    return fab_of(fep, struct fab_ep, fid);
}

/* An operation table entry: @expr under the endpoint's lock. */
#define FAB_LOCKED(ep, expr) ({ ssize_t _r; fab_lock(&(ep)->lock); _r = (expr); \
                                fab_unlock(&(ep)->lock); _r; })

/* Do the objects of domain @d take their locks? */
static inline int fab_dom_locks(const struct fab_domain *d)
{
    /* a progress thread (FI_PROGRESS_AUTO) is a second thread in the domain */
    return d->threading != FI_THREAD_DOMAIN || d->auto_progress;
}

/* fab_cq.c: one step of a blocking wait (fi_cq_sread, fi_cntr_wait) that
 * started at @t0 (ns) with a limit of @timeout ms (-1: none): poll 64
 * times, yield for 100 us, then sleep in corevia (cvia_imm_block, from
 * @kicks read before the last poll) for at most @chunk seconds, or nap 50
 * us where it cannot sleep (peers on other hosts). */
int  fab_backoff_spin(unsigned *idle, uint64_t t0, uint64_t now);   /* 0: time to sleep */
void fab_backoff_sleep(uint64_t t0, uint64_t now, int timeout, uint32_t kicks, double chunk);

/* fab_msg.c (ep->lock held) */
/* What every transmit checks first: the endpoint works, @dest resolves to
 * (@rank, @epid), corevia is up; @len gets the iovs' total. 0 or -FI_*. */
int  fab_tx_begin(struct fab_ep *ep, const struct iovec *iov, size_t count, fi_addr_t dest,
                  uint64_t flags, int32_t *rank, uint16_t *epid, size_t *len);
/* Does a transmit with @flags get a completion entry? */
int  fab_tx_report(const struct fab_ep *ep, uint64_t flags);
extern struct fi_ops_msg fab_msg_ops;
extern struct fi_ops_tagged fab_tagged_ops;
void fab_progress_locked(struct fab_ep *ep);
/* Arming: the messages for the endpoint that corevia received before its
 * inbox opened, handed to the matching first. 0 when all were taken;
 * -FI_ENOMEM when one could not be queued: it waits in @buf, which the
 * endpoint keeps (early_buf), and the next progress goes on from it.
 * fab_held_drop: the endpoint closes, what it held goes. */
int  fab_take_early(struct fab_ep *ep, char *buf);   /* buf: ep->slot_size bytes */
void fab_held_drop(struct fab_ep *ep);
void fab_ep_flush(struct fab_ep *ep, int err);    /* fail everything left */
void fab_ep_free_spares(struct fab_ep *ep);
int  fab_cancel_locked(struct fab_ep *ep, void *context);

void fab_op_link(struct fab_ep *ep, struct fab_op *op);
/* A zeroed operation (NULL without memory). @reports: it may end in an
 * error completion, whose record its own block becomes (fab_tx_done):
 * nothing more is allocated for it. */
struct fab_op *fab_op_new(int reports);
void fab_op_free(struct fab_ep *ep, struct fab_op *op);   /* and what it holds */
/* Send @buf (malloc'd, @n bytes; freed once sent, or at once on an
 * error) to (@rank, @epid); nobody waits for its completion. 0, or
 * corevia's error: -ENOMEM (no request now) or the peer's. fab_send_hdr:
 * a header-only FIN, CTS or DC, owed (retried at each progress and at
 * close) where there is no memory for it. */
int fab_send_ctrl(struct fab_ep *ep, int32_t rank, uint16_t epid, void *buf, size_t n);
/* The same, but an error leaves @buf the caller's. */
int fab_send_ctrl_keep(struct fab_ep *ep, int32_t rank, uint16_t epid, void *buf, size_t n);
void fab_send_hdr(struct fab_ep *ep, int32_t rank, uint16_t epid, uint8_t op,
                  uint64_t cookie, int status, uint64_t tag);

/* fab_rma.c */
extern struct fi_ops_rma fab_rma_ops;
extern struct fi_ops_atomic fab_atomic_ops;
int  fab_query_atomic(struct fid_domain *domain, enum fi_datatype dt, enum fi_op op,
                      struct fi_atomic_attr *attr, uint64_t flags);
size_t fab_amo_max_count(int dt);
void fab_rma_events(struct fab_ep *ep);                 /* ep->lock held */
int  fab_rma_written(struct fab_ep *ep, struct fab_op *op);
void fab_amo_arrive(struct fab_ep *ep, int32_t rank, const char *buf, size_t n);
void fab_amo_resp(struct fab_ep *ep, int32_t rank, const char *buf, size_t n);
/* Close: the AMO answers still owed, tried once more, then dropped (logged). */
void fab_amo_owed_flush(struct fab_ep *ep);
void fab_dom_mr_add(struct fab_domain *d, struct fab_mr *mr);
void fab_dom_mr_del(struct fab_domain *d, struct fab_mr *mr);

/* fab_mr.c */
extern struct fi_ops_mr fab_mr_ops;

/* fab_auto.c: an armed endpoint joins its domain's progress thread (started
 * by the first), leaves it before it closes; the thread stops at domain
 * close. Nothing happens for a FI_PROGRESS_MANUAL domain. */
int  fab_auto_add(struct fab_domain *d, struct fab_ep *ep);
void fab_auto_del(struct fab_domain *d, struct fab_ep *ep);
void fab_auto_stop(struct fab_domain *d);

/* fab_wait.c */
int  fab_wait_open(struct fab_domain *d, struct fab_waitobj **w);
void fab_wait_close(struct fab_waitobj *w);
void fab_wait_stop(struct fab_domain *d);
void fab_wait_arm(struct fab_waitobj *w, int busy);
void fab_wait_fire(struct fab_waitobj *w);
int  fab_trywait(struct fid_fabric *f, struct fid **fids, int count);
/* fab_cq.c: fi_trywait on one object */
int  fab_cq_trywait(struct fab_cq *cq);
int  fab_cntr_trywait(struct fab_cntr *c);

/* An event reached @w's object: signal its fd if fi_trywait armed it (a
 * seq_cst load after the event was published, against the arming's store
 * before its look). */
static inline void fab_wait_event(struct fab_waitobj *w)
{
    if (w && atomic_load(&w->armed))
        fab_wait_fire(w);
}

/* A completion: with one thread in the domain (the CQ's lock off) and
 * room in the ring, the entry is written once, in place, with no lock and
 * no call; a thread asleep on the CQ (fi_cq_sread) or its wait fd is told
 * (fab_cq_wake, out of line: with the lock off the only thread is the
 * pusher, so it is the rare case). */
/* Can a completion go straight into @cq's ring (fab_cq_put)? */
static inline int fab_cq_room(const struct fab_cq *cq)
{
    return !cq->lock.on && cq->len < cq->cap;
}

/* The entry written in place (fab_cq_room said yes); 1 when a sleeper or
 * the wait object is to learn of it (fab_cq_wake). */
static inline int fab_cq_put(struct fab_cq *cq, void *ctx, uint64_t flags, size_t len,
                             void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
    struct fab_cqe *e = &cq->ring[(cq->head + cq->len++) & (cq->cap - 1)];

    e->e = (struct fi_cq_tagged_entry){ ctx, flags, len, buf, data, tag };
    e->src = src;
    return atomic_load_explicit(&cq->sleepers, memory_order_seq_cst) || cq->w;
}

static inline void fab_cq_push(struct fab_cq *cq, void *ctx, uint64_t flags, size_t len,
                               void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
    if (__builtin_expect(fab_cq_room(cq), 1)) {
        if (fab_cq_put(cq, ctx, flags, len, buf, data, tag, src))
            fab_cq_wake(cq);
        return;
    }
    fab_cq_push_locked(cq, ctx, flags, len, buf, data, tag, src);
}

/* A counter moved. */
static inline void fab_cntr_bump(struct fab_cntr *c, int err)
{
    atomic_fetch_add(err ? &c->err : &c->val, 1);
    fab_wait_event(c->w);
}

/* Fault injection, compiled into the tests' copy of the provider only
 * (tests/fabric: libcorevia-fi.so built with FAB_FAULT_INJECT, in its own
 * directory): fab_fault("point") is 1 where FAB_FAULT names the point,
 * as "point" (its first call fails) or "point:N" (its first N calls). In
 * the provider that is installed it is the constant 0. */
#ifdef FAB_FAULT_INJECT
int fab_fault(const char *point);
#else
#define fab_fault(point) 0
#endif

#endif
