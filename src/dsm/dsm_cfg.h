/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The DSM's CVIA_DSM_* settings. The table (dsm_param.c) is compiled into
 * libcorevia, so cvia-info lists the variables and the unknown-name check
 * knows them; the DSM library reads them with cvia__param_load(). */
#ifndef COREVIA_DSM_CFG_H
#define COREVIA_DSM_CFG_H

#include <stddef.h>
#include "util/param.h"

enum { DSM_HOME_BLOCK = 0, DSM_HOME_RR, DSM_HOME_FIRST_TOUCH };
enum { DSM_FETCH_ZCOPY = 0, DSM_FETCH_COPY, DSM_FETCH_PULL };
enum { DSM_STATS_NONE = 0, DSM_STATS_TEXT, DSM_STATS_JSON };

struct dsm_cfg {
    size_t size;                 /* virtual size of the shared region */
    size_t unit;                 /* coherence unit, a multiple of the page */
    int    home;                 /* DSM_HOME_* */
    int    fetch;                /* DSM_FETCH_* */
    size_t diff_buf;             /* each of the two diff buffers per writer */
    double nap;                  /* service thread sleep while idle */
    double slice;                /* service thread's scheduler slice */
    double wait_spin;            /* hot polling while the app waits */
    long   polls;                /* idle polls before it sleeps */
    double poll;                 /* flush and announce unsynchronized writes */
    double idle;                 /* naps before the service thread blocks */
    long   prefetch;             /* units refetched at a barrier */
    long   ahead;                /* units fetched ahead of a fault that streams */
    int    stats;                /* DSM_STATS_* */
    char   stats_file[CVIA_PARAM_STRLEN];
    long   max_locks;
    char   addr[CVIA_PARAM_STRLEN];
    long   levels;               /* 2: ranks of one host share the region */
};

extern const struct cvia_param_table cvia__dsm_param_table;

#endif
