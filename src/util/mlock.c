/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The thread level the message-path locks follow (util/mlock.h). */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include "util/log.h"
#include "util/mlock.h"

/* locking until cvia_init_thread says otherwise */
int cvia__mlock_mode = CVIA_MLOCK_ON;
static int mlock_level = CVIA_THREAD_MULTIPLE;
static pthread_t mlock_owner;

atomic_int cvia__mlock_bias = CVIA_BIAS_OFF;
const char *cvia__mlock_owner_key;
atomic_uint cvia__mlock_depth;
_Thread_local char cvia__mlock_self __attribute__((tls_model("initial-exec")));
static pthread_mutex_t revoke_mu = PTHREAD_MUTEX_INITIALIZER;
static int membarrier_ok = -1;   /* registered for PRIVATE_EXPEDITED: 1 */

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
    /* called with no other thread inside corevia (init, finalize): the
     * bias starts afresh with this thread as its owner */
    if (membarrier_ok < 0)
        membarrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                                0, 0) == 0;
    atomic_store(&cvia__mlock_depth, 0);
    cvia__mlock_owner_key = &cvia__mlock_self;
    atomic_store(&cvia__mlock_bias, level == CVIA_THREAD_MULTIPLE && membarrier_ok ?
                 CVIA_BIAS_ON : CVIA_BIAS_OFF);
}

void cvia__mlock_revoke(void)
{
    pthread_mutex_lock(&revoke_mu);
    if (atomic_load(&cvia__mlock_bias) == CVIA_BIAS_ON) {
        atomic_store(&cvia__mlock_bias, CVIA_BIAS_REVOKING);
        /* every running thread of the process passes a full barrier: the
         * owner either sees REVOKING at its second look or its depth
         * store is visible below */
        if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) < 0)
            abort();   /* registered at set_level: cannot fail */
        for (unsigned spins = 0;
             atomic_load_explicit(&cvia__mlock_depth, memory_order_acquire); spins++) {
            if (spins < 128)
                cvia_cpu_relax();
            else
                sched_yield();
        }
        atomic_store_explicit(&cvia__mlock_bias, CVIA_BIAS_OFF, memory_order_release);
    }
    pthread_mutex_unlock(&revoke_mu);
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
