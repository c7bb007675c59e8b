/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Configuration: every CVIA_* variable is declared once, in a component's
 * table, with its type, default and one-line description. The table is the
 * only documentation: cvia-info prints it and the man page is generated
 * from it. Variable name = "CVIA_" + component prefix + name. */
#ifndef COREVIA_UTIL_PARAM_H
#define COREVIA_UTIL_PARAM_H

#include <stddef.h>
#include <stdint.h>

enum cvia_param_type {
    CVIA_PARAM_STRING,   /* char[CVIA_PARAM_STRLEN] */
    CVIA_PARAM_INT,      /* long; range [min, max] */
    CVIA_PARAM_SIZE,     /* size_t; "64k", "4m", "1g", plain bytes */
    CVIA_PARAM_TIME,     /* double seconds; "10us", "5ms", "2s", "1.5" (s);
                          * decimal only, within [min, max] microseconds,
                          * or 0..CVIA_PARAM_TIME_MAX when both are 0 */
    CVIA_PARAM_BOOL,     /* int 0/1; y/n/yes/no/1/0/on/off/true/false */
    CVIA_PARAM_TRI,      /* int -1 (auto)/0/1; as bool plus "auto" */
    CVIA_PARAM_ENUM,     /* int index into values[] */
};

#define CVIA_PARAM_STRLEN 256

/* The longest time any CVIA_* time variable takes, in seconds. */
#define CVIA_PARAM_TIME_MAX 3600.0

struct cvia_param {
    const char *name;       /* without prefix: "SLOT_SIZE" */
    const char *dflt;       /* default, as the user would write it */
    enum cvia_param_type type;
    size_t      offset;     /* offset of the field in the component's struct */
    const char *desc;       /* one line */
    long        min, max;   /* INT, SIZE: accepted range (0,0 = unlimited);
                             * TIME: in microseconds (0,0 = 0..an hour) */
    const char *const *values; /* ENUM: NULL-terminated names */
};

/* A component's table: env prefix ("SHM_" or "" for core), a name for
 * display, and the table itself, terminated by { NULL }. */
struct cvia_param_table {
    const char *component;  /* "core", "shm", "boot", ... */
    const char *prefix;     /* "", "SHM_", ... */
    const struct cvia_param *params;
    size_t      cfg_size;   /* sizeof the struct the offsets point into */
};

/* The @i-th table this process knows: the library's own, then those the
 * layers above registered (cvia_var_register); NULL past the last. An
 * unregistered layer leaves an empty table behind (src/core/param_list.c). */
const struct cvia_param_table *cvia__param_table(int i);

/* Prefixes of the layers above the core (NULL-terminated): their names are
 * not reported unknown in a process that has not loaded them. */
extern const char *const cvia__param_layer_prefixes[];

/* Fill @cfg from defaults, then from the environment. On a bad value logs
 * one error naming the variable and returns -CVIA_ECONFIG; @cfg is then
 * left with defaults for the bad entry. */
int cvia__param_load(const struct cvia_param_table *t, void *cfg);

/* Parse one value of @p's type into @out. 0 or -EINVAL / -ERANGE. */
int cvia__param_parse(const struct cvia_param *p, const char *text, void *out);

/* Write the value at @field (of @p's type) as text. */
void cvia__param_format(const struct cvia_param *p, const void *field,
                        char *buf, size_t cap);

/* Human description of the syntax of @p's type ("memory size with optional
 * unit (64k, 4m)"). */
const char *cvia__param_syntax(const struct cvia_param *p);

/* Full variable name into buf: "CVIA_SHM_SLOT_SIZE". */
void cvia__param_varname(const struct cvia_param_table *t,
                         const struct cvia_param *p, char *buf, size_t cap);

/* Look at environ for CVIA_* names no table declares and warn once for
 * each, suggesting the nearest known name. Returns the number found.
 * Extra names the caller knows (tools' own) may be passed in @extra
 * (NULL-terminated, may be NULL). */
int cvia__param_check_unknown(const char *const *extra);

/* Edit distance (for suggestions); exposed for tests. */
size_t cvia__edit_distance(const char *a, const char *b);

/* Parsers reused by tools for their options. */
int cvia__parse_size(const char *text, size_t *out);
int cvia__parse_time(const char *text, double *out);
int cvia__parse_bool(const char *text, int *out);   /* allows "auto" -> -1 when tri */
int cvia__parse_long(const char *text, long *out);

#endif
