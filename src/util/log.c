/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/log.h"

int cvia__log_level = CVIA_LOG_WARN;
unsigned cvia__log_mask = ~0u;
static int log_rank = -1;

static const char *const level_names[] = {
    "error", "warn", "info", "debug", "trace",
};
static const char *const subsys_names[] = {
#define X(id, str) str,
    CVIA__LOG_SUBSYS_MAP(X)
#undef X
};

int cvia__log_set_level(const char *level)
{
    if (!level || !*level)
        return 0;
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (!strcasecmp(level, level_names[i])) {
            cvia__log_level = (int)i;
            return 0;
        }
    }
    if (!strcasecmp(level, "warning")) {
        cvia__log_level = CVIA_LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

int cvia__log_set_subsys(const char *list)
{
    unsigned mask = 0;
    char buf[256];

    if (!list || !*list || !strcasecmp(list, "all")) {
        cvia__log_mask = ~0u;
        return 0;
    }
    if (strlen(list) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < CVIA_SUB_COUNT; i++)
            if (!strcasecmp(tok, subsys_names[i]))
                break;
        if (i == CVIA_SUB_COUNT)
            return -EINVAL;
        mask |= 1u << i;
    }
    cvia__log_mask = mask;
    return 0;
}

void cvia__log_from_env(void)
{
    /* either leaves the setting alone when the value does not parse */
    (void)cvia__log_set_level(getenv("CVIA_LOG"));
    (void)cvia__log_set_subsys(getenv("CVIA_LOG_SUBSYS"));
}

void cvia__log_set_rank(int rank)
{
    log_rank = rank;
}

void cvia__log(int level, int subsys, const char *fmt, ...)
{
    char line[1024];
    int n, saved = errno;
    va_list ap;

    if (log_rank >= 0)
        n = snprintf(line, sizeof(line), "corevia[%d] %s %s: ", log_rank,
                     level_names[level], subsys_names[subsys]);
    else
        n = snprintf(line, sizeof(line), "corevia %s %s: ",
                     level_names[level], subsys_names[subsys]);
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    /* one write() so lines of different ranks do not interleave */
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    errno = saved;
}
