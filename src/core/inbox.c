/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Inboxes (CVIA_1.2): every message on a tag goes to a queue of buffers,
 * in the order the messages began to arrive, for a layer that matches
 * them itself (the libfabric provider, which kept CVIA_FI_RX_DEPTH
 * receives posted with cvia_irecv before: a request allocated, queued,
 * matched, reaped and freed per message, under the core's lock, and
 * arrivals beyond the posted receives went to the unexpected queue with
 * a malloc each).
 *
 * An entry is a struct cvia_req whose kind is CVIA_REQ_INBOX, so the
 * providers fill it as any posted receive (chunks, rendezvous, failure
 * when its sender dies) and its completion comes back through the same
 * upcall. Per message: one entry off the free list and onto the queue
 * (match), a flag (complete), off the queue (poll) and back on the free
 * list (release), under the inbox's lock, which follows the thread level
 * as the core's own (no locked instruction below CVIA_THREAD_MULTIPLE).
 *
 * Inboxes live in a table of CVIA_INBOX_MAX that only grows: a closed one
 * is reused by a later open, never freed, so a matcher that loaded its
 * pointer just before the close still finds valid memory (it looks at
 * `open` under the lock). A closed one is reused only once its close is
 * over (`closing`: entries still arriving are waited for, then freed) and
 * every message the application took has come back (`taken`): a message
 * released after its inbox's close is freed, never put on the free list
 * of a later life with another buffer size.
 *
 * The visitor (cvia_inbox_progress, CVIA_1.3): while a layer progresses
 * through it, a whole message of its inbox's tag that the shm provider
 * finds in one ring slot is offered to the layer's function first, in
 * the ring (provider upcall `visit`, before `match`): the layer matches
 * it against its own receives and copies the payload out, and the slot
 * goes back at once; no entry, no second match, no second copy. Only
 * while the inbox holds nothing (`queued`: entries matched and not
 * polled, complete or still arriving), so a message never overtakes an
 * earlier one of the tag; a message the function leaves goes to the
 * inbox, and the ones after it follow it there until the layer has
 * polled it. The visitor is the calling thread's (thread-local): another
 * thread's progress never runs the layer's code outside its locks. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/inbox.h"
#include "util/clock.h"
#include "util/log.h"

#define CVIA_INBOX_MAX 256   /* open at once, and closed ones kept for reuse */
#define CVIA_REQ_INBOX 0x40   /* beside enum cvia_req_kind */

struct ib_ent {
    struct cvia_req r;        /* first: r.x is what the providers fill */
    struct ib_ent *next;      /* free list or queue */
    void *big;                /* a message longer than the inbox's buffers */
    /* the inbox's buf_size bytes follow */
};

struct cvia_inbox {
    cvia_mlock_t lock;        /* everything below */
    _Atomic int open;
    _Atomic int tag;
    int broken;               /* a close timed out: never reused */
    int closing;              /* cvia_inbox_close at work (ib_open_lock) */
    size_t taken;             /* polled, not released yet */
    _Atomic size_t queued;    /* entries in head..tail (written under lock):
                               * the visitor's test, read without it */
    size_t buf_size;
    struct ib_ent *free;
    struct ib_ent *head, *tail;   /* matched, in match order */
};

/* The visitor of the cvia_inbox_progress running on this thread, if any.
 * initial-exec: the drain asks for every slot, and a TLS descriptor call
 * would cost more than the test (libcorevia is loaded with the program,
 * or with a provider whose few bytes of static TLS glibc keeps spare). */
struct ib_visitor {
    struct cvia_inbox *ib;
    int32_t tag;
    cvia_inbox_visit_fn fn;
    void *arg;
};
static _Thread_local const struct ib_visitor *ib_visiting
    __attribute__((tls_model("initial-exec")));

static struct cvia_inbox *_Atomic ib_tab[CVIA_INBOX_MAX];
static _Atomic int ib_nopen;
static pthread_mutex_t ib_open_lock = PTHREAD_MUTEX_INITIALIZER;

static char *ib_inline(struct ib_ent *e)
{
    return (char *)(e + 1);
}

/* ib->queued += @d (ib->lock held: a plain store, no locked instruction). */
static void ib_queued_add(struct cvia_inbox *ib, long d)
{
    size_t q = atomic_load_explicit(&ib->queued, memory_order_relaxed);
    atomic_store_explicit(&ib->queued, q + (size_t)d, memory_order_relaxed);
}

/* An entry of @ib for a message from @src (ib->lock held); NULL without
 * memory. */
static struct ib_ent *ib_take(struct cvia_inbox *ib, int src, uint16_t ctx, int32_t tag,
                              size_t msg_len, unsigned flags, uint64_t cookie, void *big)
{
    struct ib_ent *e = ib->free;

    if (e)
        ib->free = e->next;
    else if (!(e = malloc(sizeof(*e) + ib->buf_size)))
        return NULL;
    /* what the providers and the completion read, no more: each store
     * here waits behind the drain's write to the ring slot */
    e->r.kind = CVIA_REQ_INBOX;
    atomic_store_explicit(&e->r.complete, 0, memory_order_relaxed);
    e->r.x.peer = src;
    e->r.x.tag = tag;
    e->r.x.ctx = ctx;
    e->r.x.flags = 0;
    e->r.x.msg_len = msg_len;
    e->r.x.done = 0;
    e->r.x.prov_next = NULL;
    e->big = big;
    if (big) {
        e->r.x.buf = big;
        e->r.x.len = msg_len;
    } else {   /* a longer message whose buffer malloc refused: truncated */
        e->r.x.buf = ib_inline(e);
        e->r.x.len = ib->buf_size;
    }
    if (flags & CVIA_MATCH_RNDV) {
        e->r.x.flags = CVIA_XFER_RNDV;
        e->r.x.prov_cookie = cookie;
    }
    e->next = NULL;
    if (ib->tail)
        ib->tail->next = e;
    else
        ib->head = e;
    ib->tail = e;
    ib_queued_add(ib, 1);
    return e;
}

/* An entry of the open inbox of @tag for the message, or NULL (none open
 * on the tag, or no memory: the caller queues it as unexpected). */
static struct cvia_xfer *ib_route(int src, uint16_t ctx, int32_t tag, size_t msg_len,
                                  unsigned flags, uint64_t cookie)
{
    for (int i = 0; i < CVIA_INBOX_MAX; i++) {
        struct cvia_inbox *ib = atomic_load_explicit(&ib_tab[i], memory_order_acquire);
        struct ib_ent *e;
        void *big = NULL;

        if (!ib || !atomic_load_explicit(&ib->open, memory_order_acquire) ||
            atomic_load_explicit(&ib->tag, memory_order_relaxed) != tag)
            continue;
        if (msg_len > ib->buf_size && !(big = malloc(msg_len)))
            cvia_error(CORE, "out of memory for a %zu-byte message from rank %d to an "
                       "inbox; it arrives truncated", msg_len, src);
        cvia_mlock_lock(&ib->lock);
        if (!atomic_load_explicit(&ib->open, memory_order_relaxed) ||
            atomic_load_explicit(&ib->tag, memory_order_relaxed) != tag) {
            cvia_mlock_unlock(&ib->lock);   /* closed meanwhile */
            free(big);
            return NULL;
        }
        e = ib_take(ib, src, ctx, tag, msg_len, flags, cookie, big);
        cvia_mlock_unlock(&ib->lock);
        if (e)
            return &e->r.x;
        free(big);
        cvia_error(CORE, "out of memory for an inbox entry; a message from rank %d goes "
                   "to the receive queue", src);
        return NULL;
    }
    return NULL;
}

/* An inbox is open: the message is the inbox's, or the core's. Out of
 * line, so that cvia__inbox_match's usual case is a jump with no frame. */
static __attribute__((noinline)) struct cvia_xfer *
inbox_match_open(void *core, int src, uint16_t ctx, int32_t tag, size_t msg_len,
                 unsigned flags, uint64_t cookie)
{
    struct cvia_xfer *x = ib_route(src, ctx, tag, msg_len, flags, cookie);

    return x ? x : cvia__core_match(core, src, ctx, tag, msg_len, flags, cookie);
}

struct cvia_xfer *cvia__inbox_match(void *core, int src, uint16_t ctx, int32_t tag,
                                    size_t msg_len, unsigned flags, uint64_t cookie)
{
    if (__builtin_expect(atomic_load_explicit(&ib_nopen, memory_order_relaxed) == 0, 1) ||
        ctx != CVIA_CTX_USER)
        return cvia__core_match(core, src, ctx, tag, msg_len, flags, cookie);
    return inbox_match_open(core, src, ctx, tag, msg_len, flags, cookie);
}

struct cvia_xfer *cvia__inbox_recheck(int src, uint16_t ctx, int32_t tag, size_t msg_len,
                                      unsigned flags, uint64_t cookie)
{
    /* the open's count is bumped before its arm takes the core's lock, and
     * the caller holds that lock: an inbox opened before the arm's look
     * is seen here */
    if (ctx != CVIA_CTX_USER || atomic_load(&ib_nopen) == 0)
        return NULL;
    return ib_route(src, ctx, tag, msg_len, flags, cookie);
}

int cvia__inbox_visit(void *core, int src, uint16_t ctx, int32_t tag, const void *buf,
                      size_t len)
{
    const struct ib_visitor *v = ib_visiting;

    (void)core;
    /* the order matters: entries of the tag still queued (an earlier
     * message of this peer among them) keep every later one behind them.
     * A peer's messages are drained by one thread at a time (the
     * provider's lock), so its earlier entry is seen in queued here. */
    if (!v || v->tag != tag || ctx != CVIA_CTX_USER ||
        atomic_load_explicit(&v->ib->queued, memory_order_relaxed) ||
        !atomic_load_explicit(&v->ib->open, memory_order_relaxed) ||
        /* closed and reopened on another tag meanwhile (cvia_inbox_open
         * reuses a closed inbox): a message of the old tag is no inbox's */
        atomic_load_explicit(&v->ib->tag, memory_order_relaxed) != tag)
        return 0;
    return v->fn(v->arg, src, buf, len) == 1;
}

void cvia__inbox_complete(void *core, struct cvia_xfer *x, int status)
{
    struct cvia_req *r = cvia_container_of(x, struct cvia_req, x);

    if (__builtin_expect(r->kind != CVIA_REQ_INBOX, 1)) {
        cvia__core_complete(core, x, status);
        return;
    }
    r->status = status;
    atomic_store_explicit(&r->complete, 1, memory_order_release);
}

/* ---- the API ------------------------------------------------------------- */

int cvia_inbox_open(int tag, size_t buf_size, int prealloc, cvia_inbox_t *ib_p)
{
    struct cvia_inbox *ib = NULL;
    int slot = -1, rc = 0, fresh = 0;

    if (!cvia_initialized())
        return -CVIA_ENOINIT;
    if (tag < 0 || buf_size == 0 || buf_size > ((size_t)1 << 30) || prealloc < 0 ||
        prealloc > 65536 || !ib_p)
        return -EINVAL;
    pthread_mutex_lock(&ib_open_lock);
    for (int i = 0; i < CVIA_INBOX_MAX; i++) {
        struct cvia_inbox *t = atomic_load(&ib_tab[i]);
        if (!t) {
            if (slot < 0)
                slot = i;
        } else if (atomic_load(&t->open)) {
            if (atomic_load(&t->tag) == tag) {
                rc = -EBUSY;
                goto out;
            }
        } else if (!t->broken && !t->closing && !ib) {
            cvia_mlock_lock(&t->lock);
            if (!t->taken)
                ib = t;   /* a closed one, reused */
            cvia_mlock_unlock(&t->lock);
        }
    }
    if (!ib) {
        if (slot < 0) {
            rc = -EBUSY;
            goto out;
        }
        if (!(ib = calloc(1, sizeof(*ib)))) {
            rc = -ENOMEM;
            goto out;
        }
        cvia_mlock_init(&ib->lock);
        fresh = 1;
    }
    cvia_mlock_lock(&ib->lock);
    ib->lock.mode = cvia__mlock_mode;   /* the level of this corevia life */
    ib->buf_size = buf_size;
    ib->free = ib->head = ib->tail = NULL;
    atomic_store_explicit(&ib->queued, 0, memory_order_relaxed);
    for (int i = 0; i < prealloc; i++) {
        struct ib_ent *e = malloc(sizeof(*e) + buf_size);
        if (!e)
            break;   /* more come as needed */
        e->big = NULL;
        e->next = ib->free;
        ib->free = e;
    }
    atomic_store_explicit(&ib->tag, tag, memory_order_relaxed);
    atomic_store_explicit(&ib->open, 1, memory_order_release);
    cvia_mlock_unlock(&ib->lock);
    if (fresh)   /* published once open, for good */
        atomic_store_explicit(&ib_tab[slot], ib, memory_order_release);
    atomic_fetch_add(&ib_nopen, 1);
    *ib_p = ib;
out:
    pthread_mutex_unlock(&ib_open_lock);
    return rc;
}

int cvia_inbox_poll(cvia_inbox_t ib, cvia_inbox_msg_t *msgs, int max)
{
    struct ib_ent *e;
    int n = 0;

    if (!ib || max < 0 || (max && !msgs))
        return -EINVAL;
    /* nothing queued (a provider's every empty poll): no lock round. The
     * count is written under the lock by whoever queues, so an entry
     * queued before this call is seen here */
    if (!atomic_load_explicit(&ib->queued, memory_order_relaxed))
        return 0;
    cvia_mlock_lock(&ib->lock);
    while (n < max && (e = ib->head) &&
           atomic_load_explicit(&e->r.complete, memory_order_acquire)) {
        if (!(ib->head = e->next))
            ib->tail = NULL;
        msgs[n].source = e->r.x.peer;
        msgs[n].status = e->r.status;
        msgs[n].len = e->r.x.msg_len < e->r.x.len ? e->r.x.msg_len : e->r.x.len;
        msgs[n].buf = e->r.x.buf;
        msgs[n].priv = e;
        n++;
    }
    ib->taken += (size_t)n;
    if (n)
        ib_queued_add(ib, -(long)n);
    cvia_mlock_unlock(&ib->lock);
    return n;
}

int cvia_inbox_progress(cvia_inbox_t ib, cvia_inbox_visit_fn fn, void *arg)
{
    struct ib_visitor v;
    const struct ib_visitor *outer = ib_visiting;
    int rc;

    if (!ib || !fn)
        return -EINVAL;
    v.ib = ib;
    v.tag = atomic_load_explicit(&ib->tag, memory_order_relaxed);
    v.fn = fn;
    v.arg = arg;
    if (!atomic_load_explicit(&cvia__ctx.up.visiting, memory_order_relaxed))
        atomic_store_explicit(&cvia__ctx.up.visiting, 1, memory_order_relaxed);
    ib_visiting = &v;
    rc = cvia_progress();
    ib_visiting = outer;   /* a visitor's progress nested in another's */
    return rc;
}

void cvia_inbox_release(cvia_inbox_t ib, cvia_inbox_msg_t *msgs, int n)
{
    if (!ib || !msgs)
        return;
    cvia_mlock_lock(&ib->lock);
    for (int i = 0; i < n; i++) {
        struct ib_ent *e = msgs[i].priv;
        free(e->big);
        e->big = NULL;
        if (atomic_load_explicit(&ib->open, memory_order_relaxed)) {
            e->next = ib->free;
            ib->free = e;
        } else {
            free(e);   /* its inbox closed meanwhile: no free list to join */
        }
    }
    ib->taken -= (size_t)n < ib->taken ? (size_t)n : ib->taken;
    cvia_mlock_unlock(&ib->lock);
}

/* Are all of @ib's queued entries complete? (ib->lock held) */
static int ib_settled(const struct cvia_inbox *ib)
{
    for (const struct ib_ent *e = ib->head; e; e = e->next)
        if (!atomic_load_explicit(&e->r.complete, memory_order_acquire))
            return 0;
    return 1;
}

static void ib_free_list(struct ib_ent *e)
{
    while (e) {
        struct ib_ent *next = e->next;
        free(e->big);
        free(e);
        e = next;
    }
}

int cvia_inbox_close(cvia_inbox_t ib)
{
    double deadline;
    int settled;

    if (!ib)
        return -EINVAL;
    pthread_mutex_lock(&ib_open_lock);
    cvia_mlock_lock(&ib->lock);
    if (!atomic_load_explicit(&ib->open, memory_order_relaxed)) {
        cvia_mlock_unlock(&ib->lock);
        pthread_mutex_unlock(&ib_open_lock);
        return -EINVAL;
    }
    atomic_store_explicit(&ib->open, 0, memory_order_relaxed);
    ib->closing = 1;   /* not reused before the end of this close */
    settled = ib_settled(ib);
    cvia_mlock_unlock(&ib->lock);
    atomic_fetch_sub(&ib_nopen, 1);
    pthread_mutex_unlock(&ib_open_lock);
    /* messages still arriving into entries: the providers own them; a
     * sender that died fails them within the liveness bound, a datagram
     * retransmission completes them within its timeouts */
    deadline = cvia__clock_s() + (cvia__ctx.cfg.liveness > 5.0 ? cvia__ctx.cfg.liveness : 5.0);
    while (!settled) {
        if (cvia__clock_s() > deadline) {
            pthread_mutex_lock(&ib_open_lock);
            ib->broken = 1;
            ib->closing = 0;
            pthread_mutex_unlock(&ib_open_lock);
            cvia_warn(CORE, "inbox of tag %d closed while a message was still arriving; "
                      "its memory stays", atomic_load(&ib->tag));
            return -ETIMEDOUT;
        }
        (void)cvia_progress();
        cvia_mlock_lock(&ib->lock);
        settled = ib_settled(ib);
        cvia_mlock_unlock(&ib->lock);
    }
    pthread_mutex_lock(&ib_open_lock);
    cvia_mlock_lock(&ib->lock);
    ib_free_list(ib->head);
    ib_free_list(ib->free);
    ib->head = ib->tail = ib->free = NULL;
    atomic_store_explicit(&ib->queued, 0, memory_order_relaxed);
    ib->closing = 0;
    cvia_mlock_unlock(&ib->lock);
    pthread_mutex_unlock(&ib_open_lock);
    return 0;
}
