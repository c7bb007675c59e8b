/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Logger: CVIA_LOG sets the level, CVIA_LOG_SUBSYS selects subsystems.
 * Messages go to stderr as "corevia[rank] level subsys: text". Nothing in the
 * library prints to stdout. debug and trace compile away unless
 * CVIA_ENABLE_DEBUG is defined (Debug builds). */
#ifndef COREVIA_UTIL_LOG_H
#define COREVIA_UTIL_LOG_H

#include <stdarg.h>

enum cvia_log_level {
    CVIA_LOG_ERROR = 0,
    CVIA_LOG_WARN,
    CVIA_LOG_INFO,
    CVIA_LOG_DEBUG,
    CVIA_LOG_TRACE,
};

/* Subsystems, one bit each; CVIA_LOG_SUBSYS=shm,boot selects by name. */
#define CVIA__LOG_SUBSYS_MAP(X) \
    X(CORE, "core") X(SHM, "shm") X(BOOT, "boot") X(CONF, "conf") \
    X(TOPO, "topo") X(UTIL, "util") X(MEM, "mem") X(NET, "net") X(DSM, "dsm")

enum cvia_log_subsys {
#define X(id, str) CVIA_SUB_##id,
    CVIA__LOG_SUBSYS_MAP(X)
#undef X
    CVIA_SUB_COUNT
};

extern int cvia__log_level;          /* current level */
extern unsigned cvia__log_mask;      /* enabled subsystems */

/* Parse CVIA_LOG / CVIA_LOG_SUBSYS from strings (NULL = leave as is).
 * Returns 0 or -EINVAL (the caller names the variable). */
int cvia__log_set_level(const char *level);
int cvia__log_set_subsys(const char *list);
/* Take CVIA_LOG and CVIA_LOG_SUBSYS from the environment, keeping the
 * current setting for an unset or malformed value (cvia_init names those).
 * For the libraries above the core (the DSM, the libfabric provider): each
 * links its own private copy of this logger, since libcorevia.so exports
 * nothing but the public API. */
void cvia__log_from_env(void);
/* Rank shown in the prefix (-1: none yet). */
void cvia__log_set_rank(int rank);

void cvia__log(int level, int subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define cvia__log_on(lvl, sub) \
    ((lvl) <= cvia__log_level && (cvia__log_mask & (1u << CVIA_SUB_##sub)))

#define cvia_error(sub, ...) cvia__log(CVIA_LOG_ERROR, CVIA_SUB_##sub, __VA_ARGS__)
#define cvia_warn(sub, ...)  do { if (cvia__log_on(CVIA_LOG_WARN, sub)) \
        cvia__log(CVIA_LOG_WARN, CVIA_SUB_##sub, __VA_ARGS__); } while (0)
#define cvia_info(sub, ...)  do { if (cvia__log_on(CVIA_LOG_INFO, sub)) \
        cvia__log(CVIA_LOG_INFO, CVIA_SUB_##sub, __VA_ARGS__); } while (0)
#ifdef CVIA_ENABLE_DEBUG
#define cvia_debug(sub, ...) do { if (cvia__log_on(CVIA_LOG_DEBUG, sub)) \
        cvia__log(CVIA_LOG_DEBUG, CVIA_SUB_##sub, __VA_ARGS__); } while (0)
#define cvia_trace(sub, ...) do { if (cvia__log_on(CVIA_LOG_TRACE, sub)) \
        cvia__log(CVIA_LOG_TRACE, CVIA_SUB_##sub, __VA_ARGS__); } while (0)
#else
#define cvia_debug(sub, ...) do { } while (0)
#define cvia_trace(sub, ...) do { } while (0)
#endif

/* Warn once per call site. */
#define cvia_warn_once(sub, ...) do { static int cvia__once_; \
        if (!cvia__once_) { cvia__once_ = 1; cvia_warn(sub, __VA_ARGS__); } } while (0)

#endif
