/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

struct parser {
    const char *s, *p;
    char *err;
    size_t errcap;
    int depth;
};

static void p_fail(struct parser *ps, const char *what)
{
    int line = 1, col = 1;

    if (ps->err[0])
        return;
    for (const char *q = ps->s; q < ps->p && *q; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(ps->err, ps->errcap, "line %d column %d: %s", line, col, what);
}

static void ws(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static int parse_value(struct parser *ps, struct aj *v);

static int put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
}

static char *parse_string(struct parser *ps)
{
    size_t cap = 16, len = 0;
    char *out;

    if (*ps->p != '"') {
        p_fail(ps, "expected a string");
        return NULL;
    }
    ps->p++;
    if (!(out = malloc(cap)))
        return NULL;
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (len + 4 >= cap) {
            char *o = realloc(out, cap *= 2);
            if (!o) {
                free(out);
                return NULL;
            }
            out = o;
        }
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            p_fail(ps, c ? "control character in a string" : "unterminated string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            out[len++] = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        switch (*ps->p) {
        case '"': out[len++] = '"'; break;
        case '\\': out[len++] = '\\'; break;
        case '/': out[len++] = '/'; break;
        case 'b': out[len++] = '\b'; break;
        case 'f': out[len++] = '\f'; break;
        case 'n': out[len++] = '\n'; break;
        case 'r': out[len++] = '\r'; break;
        case 't': out[len++] = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 1; i <= 4; i++) {
                char h = ps->p[i];
                if (!isxdigit((unsigned char)h)) {
                    p_fail(ps, "bad \\u escape");
                    free(out);
                    return NULL;
                }
                cp = cp * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0'
                                          : (tolower((unsigned char)h) - 'a' + 10));
            }
            ps->p += 4;
            len += (size_t)put_utf8(out + len, cp ? cp : '?');
            break;
        }
        default:
            p_fail(ps, "bad escape in a string");
            free(out);
            return NULL;
        }
        ps->p++;
    }
    out[len] = '\0';
    return out;
}

static int parse_items(struct parser *ps, struct aj *v, int obj)
{
    char close = obj ? '}' : ']';
    int cap = 0;

    ps->p++;
    ws(ps);
    if (*ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        if (v->n == cap) {
            struct aj *it;
            char **k;
            cap = cap ? cap * 2 : 4;
            if (!(it = realloc(v->items, (size_t)cap * sizeof(*it))))
                return -1;
            v->items = it;
            if (obj) {
                if (!(k = realloc(v->keys, (size_t)cap * sizeof(*k))))
                    return -1;
                v->keys = k;
            }
        }
        ws(ps);
        if (obj) {
            if (!(key = parse_string(ps)))
                return -1;
            ws(ps);
            if (*ps->p != ':') {
                free(key);
                p_fail(ps, "expected ':'");
                return -1;
            }
            ps->p++;
        }
        memset(&v->items[v->n], 0, sizeof(v->items[0]));
        if (obj)
            v->keys[v->n] = key;
        v->n++;
        if (parse_value(ps, &v->items[v->n - 1]))
            return -1;
        ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return 0;
        }
        p_fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        return -1;
    }
}

static int parse_value(struct parser *ps, struct aj *v)
{
    ws(ps);
    if (++ps->depth > 64) {
        p_fail(ps, "nested too deeply");
        return -1;
    }
    switch (*ps->p) {
    case '{':
        v->type = AJ_OBJ;
        if (parse_items(ps, v, 1))
            return -1;
        break;
    case '[':
        v->type = AJ_ARR;
        if (parse_items(ps, v, 0))
            return -1;
        break;
    case '"':
        v->type = AJ_STR;
        if (!(v->str = parse_string(ps)))
            return -1;
        break;
    case 't':
    case 'f':
    case 'n':
        if (!strncmp(ps->p, "true", 4)) {
            v->type = AJ_BOOL;
            v->num = 1;
            ps->p += 4;
        } else if (!strncmp(ps->p, "false", 5)) {
            v->type = AJ_BOOL;
            ps->p += 5;
        } else if (!strncmp(ps->p, "null", 4)) {
            v->type = AJ_NULL;
            ps->p += 4;
        } else {
            p_fail(ps, "unexpected word");
            return -1;
        }
        break;
    default: {
        char *end;
        if (*ps->p != '-' && !isdigit((unsigned char)*ps->p)) {
            p_fail(ps, *ps->p ? "unexpected character" : "unexpected end of input");
            return -1;
        }
        errno = 0;
        v->num = strtod(ps->p, &end);
        if (end == ps->p || errno == ERANGE || !isfinite(v->num)) {
            p_fail(ps, "bad number");
            return -1;
        }
        v->type = AJ_NUM;
        ps->p = end;
    }
    }
    ps->depth--;
    return 0;
}

static void aj_clear(struct aj *v)
{
    if (v->type == AJ_ARR || v->type == AJ_OBJ) {
        for (int i = 0; i < v->n; i++) {
            aj_clear(&v->items[i]);
            if (v->keys)
                free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    free(v->str);
}

void aj_free(struct aj *v)
{
    if (v) {
        aj_clear(v);
        free(v);
    }
}

struct aj *aj_parse(const char *text, char *err, size_t errcap)
{
    struct parser ps = { text, text, err, errcap, 0 };
    struct aj *v = calloc(1, sizeof(*v));

    err[0] = '\0';
    if (!v) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    if (parse_value(&ps, v) == 0) {
        ws(&ps);
        if (!*ps.p)
            return v;
        p_fail(&ps, "trailing characters after the value");
    }
    if (!err[0])
        snprintf(err, errcap, "out of memory");
    aj_free(v);
    return NULL;
}

struct aj *aj_parse_file(const char *path, char *err, size_t errcap)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL, inner[256];
    size_t len = 0, cap = 0;
    struct aj *v;

    if (!f) {
        snprintf(err, errcap, "%s: %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        size_t n;
        if (len + 4096 + 1 > cap) {
            char *b = realloc(buf, cap = cap ? cap * 2 : 8192);
            if (!b) {
                free(buf);
                fclose(f);
                snprintf(err, errcap, "%s: out of memory", path);
                return NULL;
            }
            buf = b;
        }
        n = fread(buf + len, 1, 4096, f);
        len += n;
        if (n < 4096)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errcap, "%s: read error", path);
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    buf[len] = '\0';
    if (strlen(buf) != len) {
        snprintf(err, errcap, "%s: not JSON (NUL byte)", path);
        free(buf);
        return NULL;
    }
    v = aj_parse(buf, inner, sizeof(inner));
    free(buf);
    if (!v)
        snprintf(err, errcap, "%s: not valid JSON: %s", path, inner);
    return v;
}

const struct aj *aj_get(const struct aj *obj, const char *key)
{
    if (!obj || obj->type != AJ_OBJ)
        return NULL;
    for (int i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return &obj->items[i];
    return NULL;
}

double aj_num(const struct aj *v, double dflt)
{
    return v && v->type == AJ_NUM ? v->num : dflt;
}

const char *aj_str(const struct aj *v, const char *dflt)
{
    return v && v->type == AJ_STR ? v->str : dflt;
}

int aj_is(const struct aj *v, enum aj_type t)
{
    return v && v->type == t;
}

/* ---- writer ------------------------------------------------------------ */

void jw_escape(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void jw_init_flags(struct jw *w, FILE *f, int flags)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
    w->flags = flags;
    w->first[0] = 1;
}

void jw_init(struct jw *w, FILE *f)
{
    jw_init_flags(w, f, 0);
}

static void jw_indent(struct jw *w, int depth)
{
    fputc('\n', w->f);
    for (int i = 0; i < depth; i++)
        fputs("  ", w->f);
}

/* Before a value: the comma, a line break in pretty mode, the key. */
static void jw_key_as(struct jw *w, const char *key, int obj)
{
    if (!w->first[w->depth])
        fputs(w->flags & JW_PRETTY && w->in_arr[w->depth] && !obj ? ", " : ",", w->f);
    if (w->flags & JW_PRETTY && w->depth > 0 && (!w->in_arr[w->depth] || obj))
        jw_indent(w, w->depth);
    w->first[w->depth] = 0;
    if (key) {
        jw_escape(w->f, key);
        fputs(w->flags & JW_PRETTY ? ": " : ":", w->f);
    }
}

static void jw_key(struct jw *w, const char *key)
{
    jw_key_as(w, key, 0);
}

static void jw_open(struct jw *w, const char *key, int c, int arr)
{
    jw_key_as(w, key, !arr);
    fputc(c, w->f);
    if (!arr && w->in_arr[w->depth])
        w->arr_objs[w->depth] = 1;
    if (w->depth < 63) {
        w->first[++w->depth] = 1;
        w->in_arr[w->depth] = (char)arr;
        w->arr_objs[w->depth] = 0;
    }
}

static void jw_close(struct jw *w, int c)
{
    if (w->flags & JW_PRETTY && !w->first[w->depth] && (!w->in_arr[w->depth] || w->arr_objs[w->depth]))
        jw_indent(w, w->depth - 1);
    fputc(c, w->f);
    if (w->depth > 0)
        w->depth--;
    if (w->depth == 0)
        fputc('\n', w->f);
}

void jw_obj(struct jw *w, const char *key)
{
    jw_open(w, key, '{', 0);
}

void jw_arr(struct jw *w, const char *key)
{
    jw_open(w, key, '[', 1);
}

void jw_end_obj(struct jw *w)
{
    jw_close(w, '}');
}

void jw_end_arr(struct jw *w)
{
    jw_close(w, ']');
}

void jw_str(struct jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    if (s)
        jw_escape(w->f, s);
    else
        fputs("null", w->f);
}

void jw_num(struct jw *w, const char *key, double v)
{
    jw_key(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.10g", v);
    else
        fputs("null", w->f);
}

void jw_fixed(struct jw *w, const char *key, double v, int decimals)
{
    jw_key(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.*f", decimals, v);
    else
        fputs("null", w->f);
}

void jw_int(struct jw *w, const char *key, long long v)
{
    jw_key(w, key);
    fprintf(w->f, "%lld", v);
}

void jw_bool(struct jw *w, const char *key, int v)
{
    jw_key(w, key);
    fputs(v ? "true" : "false", w->f);
}

void jw_null(struct jw *w, const char *key)
{
    jw_key(w, key);
    fputs("null", w->f);
}
