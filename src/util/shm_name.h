/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Names of corevia's POSIX shared-memory objects, one pattern for every
 * creator (the shm provider's segments, the DSM's host region) and for
 * the clean-up that finds a dead process's leftovers:
 *     /cvia-<uid>-<pid>-<64 random bits, 16 hex digits>
 * uid and pid let a later job remove a dead process's object; the random
 * part means another user cannot create our names first. */
#ifndef COREVIA_UTIL_SHM_NAME_H
#define COREVIA_UTIL_SHM_NAME_H

#include <stddef.h>
#include <stdint.h>

#define CVIA_SHM_NAME_MAX 64

/* Create a new object under a fresh name (O_CREAT | O_EXCL, 0600; a name
 * taken is drawn again, 64 draws at most): its descriptor, with @name
 * (@cap bytes) and, if not NULL, *@rand (the random part) set; or a
 * negative errno: -EIO when the kernel gave no random bits (@name empty),
 * else shm_open's (@name the last one tried, for the caller's message). */
int cvia__shm_create(char *name, size_t cap, uint64_t *rand);

#endif
