/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A small spinlock for short critical sections (queue links, ring
 * positions), never held across a system call or a long copy (paper 000,
 * section 3.2: small, distributed critical sections). Test-and-test-and-set
 * with pause, then sched_yield, so an oversubscribed machine still makes
 * progress when the holder was preempted. */
#ifndef COREVIA_UTIL_LOCK_H
#define COREVIA_UTIL_LOCK_H

#include <sched.h>
#include <stdatomic.h>

typedef struct {
    atomic_int held;
} cvia_spinlock_t;

#define CVIA_SPINLOCK_INIT { 0 }

static inline void cvia_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A field written under a lock and peeked at without it, as a hint ("is
 * there anything for me?"), goes through these on both sides so that the
 * peek is not a data race; relaxed, so they cost a plain load or store. */
#define CVIA_HINT_LOAD(field)       __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define CVIA_HINT_STORE(field, val) __atomic_store_n(&(field), (val), __ATOMIC_RELAXED)

static inline void cvia_spin_init(cvia_spinlock_t *l)
{
    atomic_init(&l->held, 0);
}

static inline int cvia_spin_trylock(cvia_spinlock_t *l)
{
    return !atomic_load_explicit(&l->held, memory_order_relaxed) &&
           !atomic_exchange_explicit(&l->held, 1, memory_order_acquire);
}

/* The contended part of cvia_spin_lock, out of line: inlined, its loop and
 * its sched_yield call made every caller save registers it did not need
 * on the uncontended path. */
__attribute__((noinline, cold, unused)) static void cvia_spin_lock_slow(cvia_spinlock_t *l)
{
    unsigned spins = 0;

    while (!cvia_spin_trylock(l)) {
        if (++spins < 128)
            cvia_cpu_relax();
        else
            sched_yield();
    }
}

static inline void cvia_spin_lock(cvia_spinlock_t *l)
{
    if (__builtin_expect(!cvia_spin_trylock(l), 0))
        cvia_spin_lock_slow(l);
}

static inline void cvia_spin_unlock(cvia_spinlock_t *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_release);
}

#endif
