/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The one JSON reader and writer of corevia's tools and libraries: a small
 * reader (whole document into a tree: cvia-affinity's profiles, interrupt,
 * observation and state files) and a streaming writer that places the
 * commas (cvia-affinity, cvia-bench, cvia-info, the DSM's statistics).
 * Linked as the static library corevia_json; not part of the ABI. */
#ifndef COREVIA_UTIL_JSON_H
#define COREVIA_UTIL_JSON_H

#include <stddef.h>
#include <stdio.h>

enum aj_type { AJ_NULL, AJ_BOOL, AJ_NUM, AJ_STR, AJ_ARR, AJ_OBJ };

struct aj {
    enum aj_type type;
    double       num;      /* AJ_NUM; AJ_BOOL: 0/1 */
    char        *str;      /* AJ_STR */
    int          n;        /* AJ_ARR, AJ_OBJ: number of items */
    struct aj   *items;    /* AJ_ARR, AJ_OBJ */
    char       **keys;     /* AJ_OBJ: key of each item */
};

/* Parse @text; NULL on error with "line L column C: what" in @err. */
struct aj *aj_parse(const char *text, char *err, size_t errcap);
/* Read and parse a file; NULL with the reason in @err (starts with the path). */
struct aj *aj_parse_file(const char *path, char *err, size_t errcap);
void aj_free(struct aj *v);

const struct aj *aj_get(const struct aj *obj, const char *key);   /* NULL if absent */
double      aj_num(const struct aj *v, double dflt);              /* dflt unless AJ_NUM */
const char *aj_str(const struct aj *v, const char *dflt);         /* dflt unless AJ_STR */
int         aj_is(const struct aj *v, enum aj_type t);

/* Writer: tracks commas; keys are NULL inside arrays. With JW_PRETTY every
 * member of an object starts a line indented by its depth; arrays of
 * numbers and strings stay on one line, arrays of objects take a line per
 * object. */
#define JW_PRETTY 1
struct jw {
    FILE *f;
    int   depth;
    int   flags;
    int   first[64];
    char  in_arr[64];     /* this level is an array */
    char  arr_objs[64];   /* ... holding objects (one per line) */
};
void jw_init(struct jw *w, FILE *f);
void jw_init_flags(struct jw *w, FILE *f, int flags);
void jw_obj(struct jw *w, const char *key);     /* { */
void jw_arr(struct jw *w, const char *key);     /* [ */
void jw_end_obj(struct jw *w);
void jw_end_arr(struct jw *w);
void jw_str(struct jw *w, const char *key, const char *s);   /* NULL s: null */
void jw_num(struct jw *w, const char *key, double v);        /* %.10g; NaN: null */
void jw_fixed(struct jw *w, const char *key, double v, int decimals);   /* NaN: null */
void jw_int(struct jw *w, const char *key, long long v);
void jw_bool(struct jw *w, const char *key, int v);
void jw_null(struct jw *w, const char *key);
/* Escape @s as a JSON string literal onto @f. */
void jw_escape(FILE *f, const char *s);

#endif /* COREVIA_UTIL_JSON_H */
