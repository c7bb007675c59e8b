/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Inboxes (cvia_inbox_open): a tag's messages go to a queue of buffers
 * instead of to the requests' matching. The providers' match and complete
 * upcalls come here first; with no inbox open they go straight on to
 * req.c's. */
#ifndef COREVIA_CORE_INBOX_H
#define COREVIA_CORE_INBOX_H

#include <stddef.h>
#include <stdint.h>

struct cvia_xfer;

/* The upcalls the core hands its providers (context.c). */
struct cvia_xfer *cvia__inbox_match(void *core, int src, uint16_t ctx, int32_t tag,
                                    size_t msg_len, unsigned flags, uint64_t cookie);
void cvia__inbox_complete(void *core, struct cvia_xfer *x, int status);
/* A provider's whole message in its own memory, offered before match: 1
 * when the visitor of a cvia_inbox_progress running on this thread took
 * it (see there), 0 otherwise. */
int cvia__inbox_visit(void *core, int src, uint16_t ctx, int32_t tag, const void *buf,
                      size_t len);
/* req.c, under the core's lock, before a message of the user context goes
 * to the unexpected queue: an inbox opened on its tag since the matcher
 * looked takes it (the entry, or NULL: no inbox on the tag, or no memory).
 * An arm that opens an inbox and then takes the tag's early messages
 * under the same lock sees every message either queued or in the inbox. */
struct cvia_xfer *cvia__inbox_recheck(int src, uint16_t ctx, int32_t tag, size_t msg_len,
                                      unsigned flags, uint64_t cookie);

#endif
