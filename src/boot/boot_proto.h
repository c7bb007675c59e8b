/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The launcher <-> rank wire protocol (shared by src/boot/boot.c and
 * tools/cvia-run). One SOCK_STREAM unix socket per rank; every message is
 * one text line ending in '\n', words separated by single spaces, at most
 * CVIA_BOOT_LINE_MAX bytes.
 *
 * rank -> launcher
 *   HELLO <rank> <jobid-hex> <pid>     first line; launcher checks rank and job
 *   PUT <key> <value>                  no reply
 *   GET <key>                          reply: VAL <value> | NONE
 *   FENCE                              reply: FENCED once all ranks sent FENCE
 *   FINI                               no reply; this rank's exit is clean
 *   ABORT <code> <text...>             launcher tears the job down
 *
 * launcher -> rank (replies above, plus asynchronous events at any time,
 * including between a request and its reply)
 *   EXIT <rank> <code>                 rank exited without FINI
 *   KILLED <rank> <signal>             rank died of a signal
 *   TEARDOWN <rank>                    job ending (rank = cause, -1 = timeout/signal)
 *   ERR <text...>                      request refused (bad HELLO, bad line)
 */
#ifndef COREVIA_BOOT_PROTO_H
#define COREVIA_BOOT_PROTO_H

#define CVIA_BOOT_LINE_MAX 1200
#define CVIA_BOOT_KEY_MAX  64
#define CVIA_BOOT_VAL_MAX  1024

#endif
