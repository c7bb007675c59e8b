/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The thread level the message-path locks follow (util/mlock.h). */
#include <pthread.h>
#include <stdlib.h>

#include <corevia/corevia.h>
#include "util/log.h"
#include "util/mlock.h"

/* locking until cvia_init_thread says otherwise */
int cvia__mlock_mode = CVIA_MLOCK_ON;
static int mlock_level = CVIA_THREAD_MULTIPLE;
static pthread_t mlock_owner;

static const char *const level_names[] = {
    "CVIA_THREAD_SINGLE", "CVIA_THREAD_FUNNELED", "CVIA_THREAD_SERIALIZED",
    "CVIA_THREAD_MULTIPLE",
};

void cvia__mlock_set_level(int level, int check)
{
    mlock_level = level;
    mlock_owner = pthread_self();
    cvia__mlock_mode = level == CVIA_THREAD_MULTIPLE ? CVIA_MLOCK_ON :
                       check ? CVIA_MLOCK_CHECK : CVIA_MLOCK_OFF;
}

void cvia__mlock_check_owner(const cvia_mlock_t *m)
{
    (void)m;
    if (mlock_level <= CVIA_THREAD_FUNNELED && !pthread_equal(pthread_self(), mlock_owner)) {
        cvia_error(CORE, "CVIA_THREAD_CHECK: a thread other than the one that initialized "
                   "called corevia at %s; abort", level_names[mlock_level]);
        abort();
    }
}

void cvia__mlock_check_take(cvia_mlock_t *m)
{
    cvia__mlock_check_owner(m);
    if (atomic_exchange_explicit(&m->l.held, 1, memory_order_acquire))
        cvia__mlock_misuse(m);
}

_Noreturn void cvia__mlock_misuse(const cvia_mlock_t *m)
{
    cvia_error(CORE, "CVIA_THREAD_CHECK: two threads inside corevia at once at %s (lock %p); "
               "use CVIA_THREAD_MULTIPLE or serialize the calls; abort",
               level_names[mlock_level], (const void *)m);
    abort();
}
