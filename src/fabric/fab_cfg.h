/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* CVIA_FI_* values (table in fab_param.c, compiled into libcorevia and the provider). */
#ifndef COREVIA_FABRIC_FAB_CFG_H
#define COREVIA_FABRIC_FAB_CFG_H

#include <stddef.h>

#include "util/param.h"

struct fab_cfg {
    size_t eager;        /* largest message sent with its header */
    long   rx_depth;     /* inbox buffers made in advance per endpoint */
    size_t inject;       /* inject_size reported */
    double liveness;     /* how often an endpoint with work looks for dead peers */
    int    wireup;       /* FAB_WIREUP_* */
    int    thread;       /* FAB_THREAD_* */
    double auto_nap;     /* FI_PROGRESS_AUTO with peers on other hosts: sleep per round */
};

enum { FAB_THREAD_SAFE, FAB_THREAD_DOMAIN, FAB_THREAD_AUTO };

enum { FAB_WIREUP_OPEN, FAB_WIREUP_FIRST_USE };

extern const struct cvia_param_table cvia__fab_param_table;

#endif
