/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The message path's locks (core queues, provider queues and rings), which
 * follow the thread level chosen at cvia_init_thread():
 *   CVIA_MLOCK_ON     CVIA_THREAD_MULTIPLE: a cvia_spinlock_t.
 *   CVIA_MLOCK_OFF    single, funneled, serialized: no lock, no atomic
 *                     read-modify-write; one load and a predictable branch.
 *   CVIA_MLOCK_CHECK  the same levels under CVIA_THREAD_CHECK=yes: the
 *                     lock is taken with an exchange and a second thread
 *                     finding it held is the application's misuse of its
 *                     level (two threads inside corevia at once), reported
 *                     and aborted on; at single and funneled levels the
 *                     caller must also be the thread that initialized.
 * Counters that only threads could race on move by cvia_mcount_add. Only
 * libcorevia uses these (the level and the misuse report: util/mlock.c).
 *
 * The bias (CVIA_MLOCK_ON; issue 16, the multiple level's 8 B latency):
 * until a second thread takes one of these locks, the thread that set the
 * level (the bias owner) takes and releases them with plain loads and
 * stores: no atomic exchange, so no wait for the store buffer (a ring
 * slot just written into a peer's segment) on every lock. It counts the
 * locks it holds that way in cvia__mlock_depth, then looks at
 * cvia__mlock_bias again; the first other thread to take a lock revokes
 * the bias once for the process (cvia__mlock_revoke: bias to REVOKING,
 * membarrier(PRIVATE_EXPEDITED), so that every running thread of the
 * process has passed a full barrier, wait for the owner's depth to reach
 * 0, bias to OFF). Dekker's pattern with the owner's fence replaced by the
 * membarrier: either the owner's depth store is seen by the revoker, or
 * the owner sees the revocation and backs out. From then on every thread,
 * the owner included, takes the spinlock. Without membarrier, no bias. */
#ifndef COREVIA_UTIL_MLOCK_H
#define COREVIA_UTIL_MLOCK_H

#include "util/lock.h"

enum { CVIA_MLOCK_OFF = 0, CVIA_MLOCK_ON = 1, CVIA_MLOCK_CHECK = 2 };

typedef struct {
    cvia_spinlock_t l;
    int mode;                 /* CVIA_MLOCK_*, set before any use */
    int biased;               /* held by the bias owner without l (its own field) */
} cvia_mlock_t;

/* The mode every message-path lock takes (util/mlock.c). */
extern int cvia__mlock_mode;

/* The bias (above): its state, the owner's key (the address of the
 * owner's copy of cvia__mlock_self) and the locks it holds biased. */
enum { CVIA_BIAS_OFF = 0, CVIA_BIAS_ON = 1, CVIA_BIAS_REVOKING = 2 };
extern atomic_int cvia__mlock_bias;
extern const char *cvia__mlock_owner_key;
extern atomic_uint cvia__mlock_depth;
extern _Thread_local char cvia__mlock_self __attribute__((tls_model("initial-exec")));
/* Another thread's first lock while the bias is not OFF (out of line). */
void cvia__mlock_revoke(void);

/* cvia_init_thread: locks made from now on follow @level (CVIA_THREAD_*),
 * checked if @check; the calling thread is the initializing one. */
void cvia__mlock_set_level(int level, int check);
/* A CVIA_MLOCK_CHECK lock: the caller is a thread the level allows, or the
 * report and abort(). */
void cvia__mlock_check_owner(const cvia_mlock_t *m);
_Noreturn void cvia__mlock_misuse(const cvia_mlock_t *m);

static inline void cvia_mlock_init(cvia_mlock_t *m)
{
    cvia_spin_init(&m->l);
    m->mode = cvia__mlock_mode;
    m->biased = 0;
}

/* CVIA_MLOCK_ON: 1 if the bias owner took @m with plain stores; 0 if @m
 * must be taken with the spinlock (after revoking the bias, for a thread
 * that is not its owner); for a trylock (@try), -1 if the owner already
 * holds @m biased: held, as the spinlock word would have said (its word is
 * 0, so a trylock of it would take the lock a second time, and the inner
 * unlock would leave the depth count one too high for good). */
static inline int cvia__mlock_bias_take(cvia_mlock_t *m, int try)
{
    unsigned d;

    if (cvia__mlock_owner_key != &cvia__mlock_self) {
        if (__builtin_expect(atomic_load_explicit(&cvia__mlock_bias, memory_order_acquire) !=
                             CVIA_BIAS_OFF, 0))
            cvia__mlock_revoke();
        return 0;
    }
    if (try && m->biased)   /* written by this thread alone */
        return -1;
    if (atomic_load_explicit(&cvia__mlock_bias, memory_order_relaxed) != CVIA_BIAS_ON)
        return 0;
    d = atomic_load_explicit(&cvia__mlock_depth, memory_order_relaxed);
    atomic_store_explicit(&cvia__mlock_depth, d + 1, memory_order_relaxed);
    /* the revoker's membarrier stands for the full fence here */
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(atomic_load_explicit(&cvia__mlock_bias, memory_order_relaxed) ==
                         CVIA_BIAS_ON, 1)) {
        m->biased = 1;
        return 1;
    }
    /* revoked meanwhile: back out; the owner takes the spinlock without
     * waiting for the revocation (the revoker waits for it) */
    atomic_store_explicit(&cvia__mlock_depth, d, memory_order_release);
    return 0;
}

static inline void cvia__mlock_bias_drop(cvia_mlock_t *m)
{
    m->biased = 0;
    atomic_store_explicit(&cvia__mlock_depth,
                          atomic_load_explicit(&cvia__mlock_depth, memory_order_relaxed) - 1,
                          memory_order_release);
}

/* CVIA_MLOCK_CHECK's lock: the owner check, then the exchange that finds a
 * second thread inside (util/mlock.c; out of line, so that the levels
 * below MULTIPLE save no register for it). */
void cvia__mlock_check_take(cvia_mlock_t *m);

/* The mode is tested for OFF first: the levels below MULTIPLE pay one load
 * and one predicted branch per lock and unlock, and nothing else is laid
 * out on their path (issue 16: the single level's 8 B latency). */
/* No lock at this level (single, funneled, serialized): a caller may take
 * a path that neither locks nor unlocks. */
static inline int cvia_mlock_is_off(const cvia_mlock_t *m)
{
    return m->mode == CVIA_MLOCK_OFF;
}

static inline int cvia_mlock_trylock(cvia_mlock_t *m)
{
    if (__builtin_expect(m->mode == CVIA_MLOCK_OFF, 1))
        return 1;
    if (m->mode == CVIA_MLOCK_ON) {
        int b = cvia__mlock_bias_take(m, 1);
        return b > 0 || (b == 0 && cvia_spin_trylock(&m->l));
    }
    cvia__mlock_check_take(m);
    return 1;
}

static inline void cvia_mlock_lock(cvia_mlock_t *m)
{
    if (__builtin_expect(m->mode == CVIA_MLOCK_OFF, 1))
        return;
    if (m->mode == CVIA_MLOCK_ON) {
        if (!cvia__mlock_bias_take(m, 0))
            cvia_spin_lock(&m->l);
    } else {
        cvia__mlock_check_take(m);
    }
}

static inline void cvia_mlock_unlock(cvia_mlock_t *m)
{
    if (m->mode == CVIA_MLOCK_OFF)
        return;
    if (m->biased)
        cvia__mlock_bias_drop(m);
    else
        cvia_spin_unlock(&m->l);
}

/* Add @v to a counter (any _Atomic integer) that other threads read,
 * relaxed, and that several threads move only at CVIA_THREAD_MULTIPLE.
 * Counters shared with other processes are not for this. */
#define cvia_mcount_add(a, v) do {                                              \
        if (cvia__mlock_mode == CVIA_MLOCK_ON)                                  \
            atomic_fetch_add_explicit((a), (v), memory_order_relaxed);          \
        else                                                                    \
            atomic_store_explicit((a), atomic_load_explicit((a),                \
                                  memory_order_relaxed) + (v),                  \
                                  memory_order_relaxed);                        \
    } while (0)

#endif
