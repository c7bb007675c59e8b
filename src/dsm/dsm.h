/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* DSM internals. The DSM is a consumer of the public core API
 * (<corevia/corevia.h>) and of util/ only: it never includes core/ or prov/.
 *
 * Threads. One application thread (the "app") and one service thread (the
 * "svc") per process. The svc owns every incoming event: it is the only
 * caller of cvia_imm_poll() and of cvia_test() on the DSM's receives. The
 * app sends requests itself (outside signal context) and waits for their
 * answers in the mailbox; the SIGSEGV handler never calls corevia: it hands
 * a fetch to the svc through the fault slot and sleeps on a futex.
 *
 * Locking. One spinlock, d->lock, protects the unit table, the dirty list,
 * the interval logs, the vector time and the lock table. It is taken by the
 * app (also inside the SIGSEGV handler) and by the svc; neither ever holds
 * it across a wait for the other, and the app never touches the
 * application view of the shared region while holding it (the DSM itself
 * reads and writes only the protocol view), so the handler can never find
 * it held by the thread it interrupted. d->send_lock orders the posting of
 * a header and its body (pairs from two threads must not interleave) and
 * protects the pending-send list. Order: lock, then send_lock.
 *
 * Invariant that makes the handler safe: a DSM fault happens only in
 * application code, never inside corevia or the DSM (neither touches the
 * application view), so the interrupted thread holds no corevia lock, no
 * DSM lock and no malloc lock; the handler itself calls no corevia
 * function, no malloc and no stdio (only atomics, memcpy, mprotect, futex
 * and clock_gettime). */
#ifndef COREVIA_DSM_DSM_H
#define COREVIA_DSM_DSM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <corevia/corevia.h>
#include <corevia/dsm.h>
#include "dsm/dsm_cfg.h"
#include "util/lock.h"
#include "util/log.h"
#include "util/clock.h"

/* Tags the DSM reserves in the user tag space. */
#define DSM_TAG_BODY  0x7fff0101  /* payloads too long for an inbox slot */
#define DSM_TAG_INIT  0x7fff0102  /* start-up exchange */
#define DSM_TAG_WATCH 0x7fff0103  /* never sent: a receive that fails when a peer dies */

#define DSM_MAX_RANKS 64        /* copysets are 64-bit masks */
#define DSM_SLOT      8192      /* inbox slot: header + inline payload; more goes in a body */
#define DSM_SLOTS     8         /* inbox slots per sender */

/* The subsystem the DSM logs under (util/log.h has no DSM bit yet). */
#define dsm_err(...)  cvia_error(CORE, "dsm: " __VA_ARGS__)
#define dsm_warn(...) cvia_warn(CORE, "dsm: " __VA_ARGS__)
#define dsm_info(...) cvia_info(CORE, "dsm: " __VA_ARGS__)

/* ---- units ------------------------------------------------------------ */

enum {
    U_NONE = 0,     /* not allocated */
    U_INVALID,      /* non-home: no valid copy (PROT_NONE) */
    U_CLEAN,        /* valid, write-protected (home: tracked, copies exist) */
    U_DIRTY,        /* written in the current interval (non-home: twinned) */
    U_EXCL,         /* home only: no copy anywhere else, writable, untracked */
};

enum { P_NONE = 0, P_READ = 1, P_RW = 3 };

enum { PF_NONE = 0, PF_FLIGHT, PF_STALE };   /* STALE: invalidated again meanwhile */

/* One per unit; with groups across hosts (dsm_group.c, d->xg) the table
 * lives in the host's segment and every member of the host reads and
 * writes the same entries under the host's lock (d->lk). What belongs to
 * one process (its protection, its poll mark) is in d->uprot, d->upollw. */
struct dsm_unit {
    uint8_t  state;
    uint8_t  mpend;      /* groups: a barrier's merge of it is pending */
    int16_t  home;       /* -1: not decided yet (first touch) */
    uint8_t  pf;         /* PF_*: a prefetch of this unit is on its way */
    uint8_t  mgr;        /* first touch: the rank that decides its home (the
                            allocation's block placement, so a rank that
                            writes its own block claims with no message) */
    uint8_t  used;       /* touched since it was fetched: worth a prefetch */
    uint8_t  fetched:1;  /* non-home: fetched before, so the home tracks it */
    uint8_t  sticky:1;   /* home: fetched by somebody once, tracked for good */
    uint8_t  ahead:1;    /* non-home: fetched ahead (fetch-ahead), not touched yet */
    uint8_t  noted:1;    /* non-home: a poll note came (a fetch then repeats) */
    uint8_t  indirty:1;  /* in d->dirty (a unit dropped by a poll note while
                            dirty may be written again in the same interval) */
    uint32_t wepoch;     /* epoch of the first write since the last poll tick */
    uint64_t copyset;    /* home: other ranks that may hold a valid copy */
    uint64_t bwriters;   /* barrier scratch: writers in the epoch */
    uint64_t wmask;      /* groups: members that wrote it since their last release */
    uint32_t iepoch;     /* groups: the barrier (epoch + 1) a member invalidated it at */
    uint32_t pad2;
};

/* ---- intervals and write notices --------------------------------------- */

/* One interval of one rank: the units it wrote. On the wire: owner, id, n,
 * then n unit numbers, all uint32. */
struct dsm_rec {
    uint32_t id, n;
    uint32_t *units;
};

/* Intervals of one owner that this rank knows, ids base .. base + n - 1,
 * since the last barrier (barriers make every older one known to all). */
struct dsm_ilog {
    uint32_t base, n, cap;
    struct dsm_rec *recs;
};

/* A growable byte buffer. */
struct dsm_buf {
    char  *p;
    size_t len, cap;
};

/* ---- messages -----------------------------------------------------------
 * Control messages travel as the paper's requests do: an RDMA write with
 * immediate data into the receiver's inbox, DSM_SLOTS slots per sender,
 * used in turn; the receiver returns credits by writing how many it has
 * consumed back to the sender with immediate data (IMM_CREDIT, the count in
 * the immediate); the sender's service thread takes the count from the
 * event, never from the landed bytes, which the provider may write in
 * pieces from another thread (tcp receives straight into the region, from
 * whichever thread progresses it: the watchdog's liveness check too), and
 * publishes it in d->credit. A message
 * with no credit left waits in the sender's outbox, which the service
 * thread drains. A payload longer than a slot follows as a tagged message
 * (DSM_TAG_BODY), posted with the header so that per-sender order pairs
 * them. */

enum {
    M_FETCH = 1,    /* a = unit, b = requester's barrier epoch, c = landing slot
                       + 1 (0: straight into the page); pad = 1: a prefetch,
                       payload: more units to prefetch, (unit, slot + 1)
                       uint32 pairs */
    M_CLAIM,        /* a = unit: first touch, to the unit's manager */
    M_CLAIMED,      /* a = unit, b = home */
    M_LOCK_REQ,     /* a = lock; payload = requester's vector time */
    M_LOCK_FWD,     /* a = lock, b = requester; payload = its vector time */
    M_GRANT,        /* a = lock; payload = write notices */
    M_BAR_ARRIVE,   /* a = epoch; payload = the sender's intervals since the last barrier */
    M_BAR_RELEASE,  /* a = epoch; payload = every interval of the epoch */
    M_START,        /* PARMACS CREATE: a = process; payload = write notices */
    M_END,          /* a created process returned; payload = write notices */
    M_FIN_ARRIVE,   /* payload = cvia_dsm_stats_t */
    M_FIN_RELEASE,
    /* late allocation (dsm_alloc.c); pad = LATE_MEM or LATE_LOCK */
    M_ALLOC,        /* to rank 0: a = count (units or locks), b = home */
    M_ALLOC_NOTE,   /* rank 0 to the others: a = first, b = count, c = home */
    M_ALLOC_ACK,    /* back to rank 0: installed */
    M_ALLOCATED,    /* rank 0 to the caller: a = first, b = 0 or errno */
    M_ALLOC_Q,      /* a replaying rank to rank 0: a = n, main's n-th late call */
    M_ALLOC_A,      /* back: a = n, b = its first unit or lock */
    M_POLLNOTE,     /* a = n; payload = n (unit, epoch of its write) uint32 pairs:
                       written since the sender's last poll tick, now at home */
    M_TYPES
};

struct dsm_hdr {
    uint16_t type;
    uint16_t pad;
    int32_t  src;
    uint32_t a, b;
    uint64_t c;
    uint64_t body;       /* bytes that follow in a DSM_TAG_BODY message */
};

enum { LATE_MEM = 0, LATE_LOCK = 1 };

/* A message the svc received for the app, waiting in the mailbox. */
struct dsm_mail {
    struct dsm_mail *next;
    struct dsm_hdr h;
    char  *data;         /* payload (malloc'd), NULL if none */
    size_t len;
};

/* ---- waiting ------------------------------------------------------------ */

enum { F_IDLE = 0, F_REQ, F_SENT, F_DONE };
enum { FK_FETCH = 1, FK_CLAIM, FK_WAITPF };

/* The fault slot: the SIGSEGV handler's request to the svc. */
struct dsm_fault_slot {
    _Atomic uint32_t state;   /* F_*; the handler sleeps on it */
    uint32_t unit;
    int      kind;            /* FK_* */
};

/* One-sided immediate data: kind in the top byte. */
#define IMM_KIND(imm)  ((unsigned)((imm) >> 56))
#define IMM_PAGE  1u          /* bits 40..55: 0 a fault; a prefetch: its landing slot
                                 (copy mode), or how many units from the low 40
                                 bits (zcopy, pull: one write) */
#define IMM_DIFF  2u          /* bits 48..55: buffer (0/1), low 48: sequence */
#define IMM_ACK   3u          /* a diff buffer was freed: bit 48 the buffer,
                                 low 48 bits the sequence acked */
#define IMM_MSG   4u          /* a control message in an inbox slot */
#define IMM_CREDIT 5u         /* low 56 bits: the receiver's consumed count */
#define IMM_CREDIT_MASK ((UINT64_C(1) << 56) - 1)

struct dsm_pending {          /* a send or write whose buffer we own */
    struct dsm_pending *next;
    cvia_req_t req;
    void *buf;                /* freed on completion (may be NULL) */
};

struct dsm_out {              /* a message waiting for an inbox slot */
    struct dsm_out *next;
    char  *msg, *body;
    size_t len, blen;
};

/* ---- locks --------------------------------------------------------------- */

struct dsm_lockst {
    int32_t  tail;            /* manager: the last requester */
    int32_t  next;            /* holder: whom to pass the token to, or -1 */
    uint32_t *next_vt;        /* that requester's vector time (malloc'd) */
    uint8_t  have_token, held, waiting;
};

/* ---- groups across hosts: the head of the host's segment ---------------- */

struct dsm_xctl {
    cvia_spinlock_t lock;     /* the host's d->lk */
    char pad0[60];
    _Atomic uint32_t rel;     /* the release mutex (Drepper's three states) */
    char pad1[60];
    size_t ndirty;            /* units in the host's dirty list (under lock) */
    uint64_t ntracked;        /* home units of the host that left U_EXCL, in the
                                 tracked list (under lock; each at most once) */
};

/* ---- the DSM ---------------------------------------------------------------- */

struct dsm {
    int      up;
    int      rank, size;
    int      own_cvia;        /* cvia_dsm_init() called cvia_init() */
    struct dsm_cfg cfg;
    size_t   unit, page, region, nunits;
    char    *base;            /* application view: protections drive faults */
    char    *pview;           /* protocol view: same memfd, always writable */
    char    *twins;           /* twin of unit u at twins + u * unit */
    int      memfd;
    int      grp;             /* CVIA_DSM_LEVELS=2 and every rank on this host:
                                 the region is one segment for all (dsm_group.c) */
    struct dsm_gctl *gctl;    /* its control area: barrier, lock words */
    char     gname[64];       /* rank 0: its name until every rank opened it */
    double   gspin;           /* spin before naps at its locks and barrier */
    int      scratch;         /* PARMACS replay: base is private scratch memory */
    size_t   brk;             /* bytes allocated collectively (unit multiple) */
    int      next_lock;       /* lock ids handed out collectively */
    size_t   late_top;        /* end of the late allocations known here (bytes) */
    int      late_locks;      /* end of the late lock ids known here */

    cvia_spinlock_t lock;     /* see the top of this file */
    cvia_spinlock_t *lk;      /* &lock, or the host's lock in its segment (xg) */
    struct dsm_unit *u;
    uint8_t  *uprot;          /* [unit] protection of this process's app view
                                 (or due, in scratch) */
    uint8_t  *upollw;         /* [unit] in d->pollw */
    /* groups across hosts (dsm_group.c): the ranks of one host share the
     * region, its twins and its unit table (a segment per host); HLRC runs
     * between hosts */
    int       xg;
    uint64_t  gmask;          /* the ranks of this host */
    int       gleader;        /* its lowest rank */
    struct dsm_xctl *xctl;    /* the segment's control part */
    size_t    xbytes;         /* the whole segment, mapped at xmap */
    char     *xmap;
    uint32_t *tracked;        /* the host's tracked list (in the segment) */
    uint64_t  trk_rel, trk_tick; /* how much of it this rank's release and poll
                                 tick have taken in */
    uint32_t *mine;           /* units this rank wrote since its last release */
    size_t    nmine;
    uint32_t *mq;             /* svc: dirty units a poll note asked to merge */
    size_t    nmq, mq_cap;
    char     *mbuf;           /* one unit, for a merge's read */
    uint32_t *amq;            /* app: dirty units an acquire's notices name */
    size_t    namq, amq_cap;
    uint32_t *dirty;          /* units written this interval */
    size_t   ndirty;
    uint32_t *pollw;          /* units written since the last poll tick */
    size_t   npollw;
    _Atomic int in_release;   /* app: ending an interval (excludes a poll flush) */
    _Atomic int pflush;       /* svc: a poll flush is writing to homes */
    _Atomic int in_fin;       /* app: finalizing, no more poll ticks */
    uint32_t *stale;          /* svc: dirty units a poll note dropped (lock) */
    size_t   nstale, stale_cap;
    uint32_t renote[64];      /* app: clean units installed with a poll note
                               * still pending, dropped at the next tick (lock) */
    uint32_t nrenote;
    uint32_t *vt;             /* vector time: last interval known, per owner */
    uint32_t *bar_vt;         /* vt at the last barrier */
    struct dsm_ilog *log;     /* per owner */
    uint32_t epoch;           /* barriers completed */
    struct dsm_lockst *locks;

    /* registered memory */
    cvia_mr_t mr_view, mr_diff, mr_flags, mr_land, mr_inbox, mr_credit;
    cvia_mr_desc_t *peer_view, *peer_diff, *peer_flags, *peer_land, *peer_inbox, *peer_credit;
    char    *inbox;           /* [sender][DSM_SLOTS] slots of DSM_SLOT bytes */
    _Atomic uint64_t *credit; /* as sender: [receiver] slots it has consumed
                                 (stored by the svc from IMM_CREDIT events) */
    uint64_t *credit_land;    /* as sender: [receiver] where the credit writes
                                 land (registered; read by nobody) */
    uint64_t *tx_seq;         /* as sender: [receiver] messages written (send_lock) */
    uint64_t *consumed, *returned; /* as receiver: [sender], svc only */
    uint64_t *cons_src;       /* as receiver: [sender] value written back */
    struct dsm_out **out_head, ***out_tail; /* [receiver], send_lock */
    int       nout;           /* messages in outboxes (send_lock) */
    char    *diffarea;        /* as home: [writer][2] buffers of diff_buf */
    _Atomic uint64_t *flags;  /* as writer: [home][2] sequence acked by the home
                                 (stored by the svc from IMM_ACK events) */
    uint64_t *flags_land;     /* as writer: [home][2] where the acks land
                                 (registered; read by nobody: see IMM_CREDIT) */
    uint64_t *ack_src;        /* as home: [writer][2] value written back */
    char    *land;            /* copy mode: [slot] where a fetched unit lands;
                                 slot 0 for faults, the others for prefetches */
    uint16_t *pf_free;        /* free prefetch landing slots (under lock) */
    int       npf_free;
    size_t    ahead_end;      /* svc, fetch-ahead: one past the last unit the
                                 latest fault fetch (or its fetch-ahead) asked for */
    size_t    run[3];         /* svc, fetch-ahead: starts of the latest runs */
    size_t    stride, slen;   /* svc, fetch-ahead: the last stride followed and
                                 its runs' length (0: none yet) */
    uint32_t  ahead_asked, ahead_used; /* fetch-ahead's recent units, and those
                                 touched (under lock): below half, it probes */
    uint32_t  ahead_skips;    /* svc: patterns not followed meanwhile */
    /* as writer: per home, the sequence last sent into each buffer */
    uint64_t *dw_seq;         /* [home][2] */
    uint8_t  *dw_next;        /* [home] buffer to use next */
    uint64_t  diff_seq;
    char     *stage[2];       /* diff staging buffers, used alternately */
    cvia_req_t stage_req[2];
    int       stage_next;
    _Atomic uint32_t ack_word; /* bumped by the svc on IMM_ACK; app sleeps on it */

    /* service thread */
    pthread_t svc, watchdog;
    int       svc_started, watch_started;
    _Atomic int stop;
    _Atomic uint32_t kick;    /* svc sleeps on it while idle */
    _Atomic int app_waiting;  /* svc polls without sleeping while > 0 */
    int       woke_app;       /* svc: it just woke the app thread */
    struct dsm_fault_slot fault;
    struct dsm_mail *mbox, **mbox_tail;   /* under lock */
    _Atomic uint32_t mbox_seq;            /* app sleeps on it */
    cvia_spinlock_t send_lock;
    struct dsm_pending *pend, **pend_tail; /* under send_lock */
    size_t    npend;
    struct dsm_mail *deferred;            /* svc only: fetches from a later epoch */
    /* barrier master (rank 0), svc only */
    int       bar_count;
    struct dsm_buf bar_union;
    int       fin_count;
    cvia_dsm_stats_t *fin_stats;
    /* late allocation: manager (rank 0's svc) */
    struct dsm_mail *alloc_q, **alloc_q_tail; /* requests waiting their turn */
    struct dsm_hdr alloc_cur; /* the answer to the one being installed everywhere */
    int       alloc_to;       /* and whom to send it to */
    int       alloc_acks;     /* acks still missing (0: none in progress) */
    /* late allocation: rank 0's own calls, in order, for replaying ranks */
    uint32_t *late_log;       /* under lock */
    uint32_t  late_n, late_cap;
    struct dsm_mail *late_wait; /* queries for calls not made yet (under lock) */

    /* statistics: counters move by ADD (both threads count), the times
     * only in the application thread; read them with dsm_stats_snapshot */
    cvia_dsm_stats_t st;
    int       stats_mode;     /* DSM_STATS_* */
    FILE     *stats_out;
    _Atomic(cvia_dsm_fatal_fn) fatal_fn; /* set by the application at any time */
    _Atomic int fatal;
    _Atomic int finishing;    /* the last end message arrived: peers may be gone */
};

extern struct dsm dsm__g;

/* Every rank but @home, as a copyset. */
static inline uint64_t dsm_all_others(const struct dsm *d, int home)
{
    uint64_t all = d->size >= 64 ? ~0ull : (1ull << d->size) - 1;
    return all & ~(1ull << home);
}

/* End of the allocated part of the region, collective or late. Read
 * without the lock (also by the SIGSEGV handler): both only grow. */
static inline size_t dsm_top(const struct dsm *d)
{
    size_t b = __atomic_load_n(&d->brk, __ATOMIC_ACQUIRE);
    size_t l = __atomic_load_n(&d->late_top, __ATOMIC_ACQUIRE);
    return b > l ? b : l;
}

/* dsm_init.c */
int  dsm_map_real(struct dsm *d);     /* scratch -> real view (under lock) */
void dsm_fatal(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* dsm_group.c: the region shared by the ranks of one host */
int  dsm_group_setup(struct dsm *d);  /* collective, before the region is mapped */
void dsm_group_fini(struct dsm *d);
int  dsm_group_lock(struct dsm *d, int id);   /* 1 if it waited */
void dsm_group_unlock(struct dsm *d, int id);
void dsm_group_barrier(struct dsm *d);
void dsm_group_full(struct dsm *d, size_t len) __attribute__((noreturn));
void dsm_group_reserve(struct dsm *d, size_t u0, size_t nu);
/* groups across hosts */
static inline int dsm_ghome(const struct dsm *d, int home)   /* home on this host */
{
    return home == d->rank || (d->xg && home >= 0 && (d->gmask >> home) & 1);
}
void dsm_group_xfini(struct dsm *d);                   /* unmaps the table */
void dsm_rel_lock(struct dsm *d);
int  dsm_rel_trylock(struct dsm *d);
void dsm_rel_unlock(struct dsm *d);
void dsm_merge(struct dsm *d, uint32_t u);             /* with dsm_rel_lock held */
void dsm_merge_list(struct dsm *d, const uint32_t *u, size_t n);  /* app thread */
void dsm_merge_queued(struct dsm *d);                   /* svc */
void dsm_merge_acquired(struct dsm *d);                 /* app: merge d->amq */

/* dsm_alloc.c */
int  dsm_alloc_late(size_t len, int home, void **ptr_p);
int  dsm_lock_create_late(int n, int *id_p);
int  dsm_late_replay(int n, uint32_t *first_p);  /* replaying rank: main's n-th late call */
void dsm_on_alloc(struct dsm *d, const struct dsm_hdr *h);       /* svc: M_ALLOC* */
void dsm_alloc_fini(struct dsm *d);

/* dsm_fault.c */
int  dsm_fault_install(struct dsm *d);
void dsm_fault_remove(struct dsm *d);
int  dsm_fault(struct dsm *d, size_t u, int write);   /* also from cvia_dsm_touch */
void dsm_unit_prot(struct dsm *d, size_t u, int prot); /* under lock */
void dsm_claimed(struct dsm *d, struct dsm_unit *x, int home); /* under lock */
void dsm_prot_all(struct dsm *d);                     /* under lock: apply every due protection */
void dsm_prefetch(struct dsm *d, const uint32_t *units, size_t n);
#define DSM_PFB_MAX 64        /* units in one prefetch request */
struct dsm_pfb {              /* prefetch requests to one home, gathered */
    int      home;
    uint32_t epoch;
    size_t   n;
    uint32_t pair[2 * DSM_PFB_MAX];   /* unit, landing slot + 1 (copy) or 0 */
};
void dsm_pf_add(struct dsm *d, struct dsm_pfb *b, struct dsm_unit *x, uint32_t u, int home);
void dsm_pf_flush(struct dsm *d, struct dsm_pfb *b);
void dsm_pf_wait(cvia_req_t *reqs, const uint32_t *units, size_t np);
void dsm_pf_pulled(struct dsm *d, struct dsm_unit *x);
void dsm_page_landed(struct dsm *d, uint64_t imm);    /* svc */
int  dsm_pull(struct dsm *d, size_t u);                /* svc or app, not in a handler */

/* dsm_svc.c */
int  dsm_svc_start(struct dsm *d);
void dsm_svc_stop(struct dsm *d);
void dsm_svc_forget(void);
void dsm_kick(struct dsm *d);
int  dsm_send(struct dsm *d, int dest, struct dsm_hdr *h, const void *data, size_t len);
void dsm_pending_add(struct dsm *d, cvia_req_t req, void *buf);
struct dsm_mail *dsm_mbox_wait(struct dsm *d, int type, int src, uint32_t a);
void dsm_mail_free(struct dsm_mail *m);
void dsm_futex_wait(_Atomic uint32_t *w, uint32_t val, double timeout);
void dsm_futex_wake(_Atomic uint32_t *w);

/* dsm_proto.c: intervals, write notices, diffs */
int  dsm_end_interval(struct dsm *d, int barrier);
void dsm_poll_tick(struct dsm *d);                                    /* svc */
void dsm_on_pollnote(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len); /* svc */
void dsm_poll_mark(struct dsm *d, struct dsm_unit *x, size_t u);      /* under lock */
void dsm_records_since(struct dsm *d, const uint32_t *vt, struct dsm_buf *b); /* under lock */
int  dsm_records_apply(struct dsm *d, const char *p, size_t len);            /* under lock */
void dsm_own_since_barrier(struct dsm *d, struct dsm_buf *b);                 /* under lock */
void dsm_log_gc(struct dsm *d);                                               /* under lock */
void dsm_diff_apply(struct dsm *d, int src, uint64_t off, uint64_t len, uint64_t imm);
int  dsm_buf_put(struct dsm_buf *b, const void *p, size_t n);
void dsm_buf_free(struct dsm_buf *b);

/* dsm_lock.c */
int  dsm_locks_init(struct dsm *d);
void dsm_locks_fini(struct dsm *d);
void dsm_on_lock_req(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len);
void dsm_on_lock_fwd(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len);

/* dsm_barrier.c */
void dsm_on_bar_arrive(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len);
void dsm_on_fin_arrive(struct dsm *d, const struct dsm_hdr *h, const char *p, size_t len);
int  dsm_fin(struct dsm *d);

/* dsm_stats.c */
#define ADD(field, v) __atomic_fetch_add(&d->st.field, (v), __ATOMIC_RELAXED)
void dsm_stats_snapshot(struct dsm *d, cvia_dsm_stats_t *s);
void dsm_stats_print(struct dsm *d, const cvia_dsm_stats_t *all, int n, FILE *out, int json);

/* parmacs.c uses these */
int  dsm_init_common(int *argc, char ***argv, int replay);
int  dsm_create_send(int proc);       /* rank 0: release to a new process */
int  dsm_become(int proc);            /* replaying rank: become process proc */
int  dsm_end_send(void);              /* created process: release to rank 0 */
int  dsm_wait_end(void);              /* rank 0: acquire from one ended process */

#endif
