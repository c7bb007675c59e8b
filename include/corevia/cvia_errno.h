/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/**
 * @file cvia_errno.h
 * @brief corevia error codes.
 *
 * Every corevia function returns 0 on success or a negative code. Codes
 * below ::CVIA_ERRNO_BASE are plain errno values passed on unchanged
 * (-EINVAL, -ENOMEM, ...); codes from ::CVIA_ERRNO_BASE up are corevia's own.
 * cvia_strerror() describes either kind, cvia_err_name() names it.
 */
#ifndef COREVIA_CVIA_ERRNO_H
#define COREVIA_CVIA_ERRNO_H

#include <corevia/cvia_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CVIA_ERRNO_BASE 256

/** X(name, value, message): the single list behind the enum and strings. */
#define CVIA_ERRNO_MAP(X)                                                   \
    X(ETRUNC,    256, "message truncated: receive buffer too small")        \
    X(ENOPEER,   257, "peer process has exited or was killed")              \
    X(ESEGMENT,  258, "shared-memory segment is unusable")                  \
    X(ETOPO,     259, "topology input is invalid")                          \
    X(ENOINIT,   260, "corevia is not initialized")                         \
    X(EBOOT,     261, "bootstrap (launcher wire-up) failed")                \
    X(ECONFIG,   262, "invalid value in a CVIA_* configuration variable")   \
    X(EABORT,    263, "job aborted by another rank or the launcher")        \
    X(EPROTO,    264, "protocol error: unexpected data from a peer")        \
    X(ENOPROV,   265, "no provider can reach this peer")

enum {
#define CVIA__ERRNO_ENUM(name, val, msg) CVIA_##name = (val),
    CVIA_ERRNO_MAP(CVIA__ERRNO_ENUM)
#undef CVIA__ERRNO_ENUM
    CVIA_ERRNO_LAST
};

/** Human-readable description of @p err (sign ignored). Never NULL. */
CVIA_API const char *cvia_strerror(int err);

/** Symbolic name of @p err ("CVIA_ETRUNC", "EINVAL"); sign ignored. Never NULL. */
CVIA_API const char *cvia_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif
