/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <corevia/cvia_errno.h>
#include "util/log.h"
#include "util/param.h"

int cvia__parse_long(const char *text, long *out)
{
    char *end;
    long v;

    if (!text || !*text || isspace((unsigned char)*text))
        return -EINVAL;
    errno = 0;
    v = strtol(text, &end, 10);   /* "010" is ten, not eight */
    if (errno == ERANGE)
        return -ERANGE;
    if (*end)
        return -EINVAL;
    *out = v;
    return 0;
}

/* digits [. digits] [unit [b|ib]]; integer part exact (no double), a
 * fraction only where the unit makes it whole bytes ("1.5k"). */
int cvia__parse_size(const char *text, size_t *out)
{
    unsigned long long whole;
    double frac = 0;
    const char *p;
    char *end;
    unsigned shift = 0;

    if (!text || !isdigit((unsigned char)*text))
        return -EINVAL;
    errno = 0;
    whole = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    p = end;
    if (*p == '.') {
        const char *f = ++p;
        double scale = 0.1;
        if (!isdigit((unsigned char)*p))
            return -EINVAL;
        for (; isdigit((unsigned char)*p); p++, scale /= 10)
            frac += (*p - '0') * scale;
        (void)f;
    }
    switch (tolower((unsigned char)*p)) {
    case '\0':                  break;
    case 'b': p++;              break;
    case 'k': shift = 10; p++;  break;
    case 'm': shift = 20; p++;  break;
    case 'g': shift = 30; p++;  break;
    case 't': shift = 40; p++;  break;
    default:  return -EINVAL;
    }
    if (shift && (*p == 'b' || *p == 'B'))                     /* "4kb", "4KB" */
        p++;
    else if (shift && (*p == 'i' || *p == 'I') && (p[1] == 'b' || p[1] == 'B'))
        p += 2;                                                /* "4KiB" */
    if (*p)
        return -EINVAL;
    if (shift && whole > (ULLONG_MAX >> shift))
        return -ERANGE;
    whole <<= shift;
    if (frac != 0) {
        double extra = frac * (double)(1ull << shift);
        if (extra != (double)(unsigned long long)extra)
            return -EINVAL;   /* not a whole number of bytes */
        if (whole > ULLONG_MAX - (unsigned long long)extra)
            return -ERANGE;
        whole += (unsigned long long)extra;
    }
    if (whole > SIZE_MAX)
        return -ERANGE;
    *out = (size_t)whole;
    return 0;
}

/* Decimal only: digits, an optional fraction, an optional unit. No sign,
 * exponent, hex, inf or nan (strtod takes "0x10" and "1e308", and a
 * liveness interval of 1e308 s is a dead peer never detected). */
int cvia__parse_time(const char *text, double *out)
{
    const char *end;
    char num[40];
    double v, scale = 1.0;
    int digits = 0, fdigits = 0;

    if (!text)
        return -EINVAL;
    for (end = text; isdigit((unsigned char)*end); end++)
        if (++digits > 12)
            return -ERANGE;   /* twelve digits of seconds: beyond any bound */
    if (*end == '.') {
        for (end++; isdigit((unsigned char)*end); end++)
            fdigits++;
        if (!fdigits)
            return -EINVAL;
    }
    if (!digits && !fdigits)
        return -EINVAL;
    if ((size_t)(end - text) >= sizeof(num))
        return -EINVAL;
    memcpy(num, text, (size_t)(end - text));
    num[end - text] = '\0';
    v = strtod(num, NULL);   /* the checked digits, correctly rounded */
    if (!*end || !strcmp(end, "s"))
        scale = 1.0;
    else if (!strcmp(end, "ms"))
        scale = 1e-3;
    else if (!strcmp(end, "us"))
        scale = 1e-6;
    else if (!strcmp(end, "ns"))
        scale = 1e-9;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        scale = 60.0;
    else if (!strcmp(end, "h"))
        scale = 3600.0;
    else
        return -EINVAL;
    *out = v * scale;
    return 0;
}

int cvia__parse_bool(const char *text, int *out)
{
    static const char *const yes[] = { "y", "yes", "1", "on", "true", NULL };
    static const char *const no[]  = { "n", "no", "0", "off", "false", NULL };

    if (!text)
        return -EINVAL;
    for (int i = 0; yes[i]; i++)
        if (!strcasecmp(text, yes[i])) { *out = 1; return 0; }
    for (int i = 0; no[i]; i++)
        if (!strcasecmp(text, no[i])) { *out = 0; return 0; }
    if (!strcasecmp(text, "auto") || !strcasecmp(text, "try")) {
        *out = -1;
        return 0;
    }
    return -EINVAL;
}

int cvia__param_parse(const struct cvia_param *p, const char *text, void *out)
{
    int rc, b;
    long l;
    size_t s;
    double t;

    switch (p->type) {
    case CVIA_PARAM_STRING:
        if (strlen(text) >= CVIA_PARAM_STRLEN)
            return -ERANGE;
        strcpy(out, text);
        return 0;
    case CVIA_PARAM_INT:
        if ((rc = cvia__parse_long(text, &l)))
            return rc;
        if ((p->min || p->max) && (l < p->min || l > p->max))
            return -ERANGE;
        *(long *)out = l;
        return 0;
    case CVIA_PARAM_SIZE:
        if ((rc = cvia__parse_size(text, &s)))
            return rc;
        if ((p->min || p->max) ? s < (size_t)p->min || s > (size_t)p->max
                               : (unsigned long long)s > CVIA_PARAM_SIZE_MAX)
            return -ERANGE;
        *(size_t *)out = s;
        return 0;
    case CVIA_PARAM_TIME:
        if ((rc = cvia__parse_time(text, &t)))
            return rc;
        /* bounds in microseconds when the table gives them, else an hour */
        if (t < (p->min ? (double)p->min * 1e-6 : 0) ||
            t > (p->max ? (double)p->max * 1e-6 : CVIA_PARAM_TIME_MAX))
            return -ERANGE;
        *(double *)out = t;
        return 0;
    case CVIA_PARAM_BOOL:
    case CVIA_PARAM_TRI:
        if ((rc = cvia__parse_bool(text, &b)))
            return rc;
        if (b < 0 && p->type == CVIA_PARAM_BOOL)
            return -EINVAL;
        *(int *)out = b;
        return 0;
    case CVIA_PARAM_ENUM:
        for (int i = 0; p->values && p->values[i]; i++) {
            if (!strcasecmp(text, p->values[i])) {
                *(int *)out = i;
                return 0;
            }
        }
        return -EINVAL;
    }
    return -EINVAL;
}

void cvia__param_format(const struct cvia_param *p, const void *field,
                        char *buf, size_t cap)
{
    switch (p->type) {
    case CVIA_PARAM_STRING:
        snprintf(buf, cap, "%s", (const char *)field);
        break;
    case CVIA_PARAM_INT:
        snprintf(buf, cap, "%ld", *(const long *)field);
        break;
    case CVIA_PARAM_SIZE: {
        size_t v = *(const size_t *)field;
        static const char units[] = "kmgt";
        int u = -1;
        while (v && !(v & 1023) && u < 3) {
            v >>= 10;
            u++;
        }
        if (u >= 0)
            snprintf(buf, cap, "%zu%c", v, units[u]);
        else
            snprintf(buf, cap, "%zu", v);
        break;
    }
    case CVIA_PARAM_TIME: {
        /* the shortest text in a natural unit that parses back exactly */
        double t = *(const double *)field, scale = 1, back;
        const char *unit = "s";
        if (t != 0 && t < 1e-3) {
            scale = 1e-6;
            unit = "us";
        } else if (t != 0 && t < 1) {
            scale = 1e-3;
            unit = "ms";
        }
        for (int prec = 0; prec <= 20; prec++) {
            snprintf(buf, cap, "%.*f%s", prec, t / scale, unit);
            if (!cvia__parse_time(buf, &back) && back == t)
                break;
            if (prec == 20)   /* unit scaling cannot be exact: plain seconds */
                snprintf(buf, cap, "%.20f", t);
        }
        break;
    }
    case CVIA_PARAM_BOOL:
        snprintf(buf, cap, "%s", *(const int *)field ? "y" : "n");
        break;
    case CVIA_PARAM_TRI: {
        int v = *(const int *)field;
        snprintf(buf, cap, "%s", v < 0 ? "auto" : v ? "y" : "n");
        break;
    }
    case CVIA_PARAM_ENUM:
        snprintf(buf, cap, "%s", p->values[*(const int *)field]);
        break;
    }
}

const char *cvia__param_syntax(const struct cvia_param *p)
{
    static char buf[512];

    switch (p->type) {
    case CVIA_PARAM_STRING: return "string";
    case CVIA_PARAM_INT:
        if (p->min || p->max) {
            snprintf(buf, sizeof(buf), "integer %ld..%ld", p->min, p->max);
            return buf;
        }
        return "integer";
    case CVIA_PARAM_SIZE:
        if (p->min || p->max) {
            snprintf(buf, sizeof(buf),
                     "memory size with optional unit (64k, 4m), %ld..%ld bytes",
                     p->min, p->max);
            return buf;
        }
        return "memory size with optional unit (64k, 4m), up to 1024t";
    case CVIA_PARAM_TIME:
        snprintf(buf, sizeof(buf), "decimal time with optional unit (10us, 5ms, 2s; "
                 "default s), %gs..%gs", p->min ? (double)p->min * 1e-6 : 0.0,
                 p->max ? (double)p->max * 1e-6 : CVIA_PARAM_TIME_MAX);
        return buf;
    case CVIA_PARAM_BOOL: return "boolean (y|n)";
    case CVIA_PARAM_TRI:  return "y|n|auto";
    case CVIA_PARAM_ENUM: {
        size_t n = 0;
        buf[0] = '\0';
        for (int i = 0; p->values[i]; i++)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
                                  i ? "|" : "", p->values[i]);
        return buf;
    }
    }
    return "?";
}

void cvia__param_varname(const struct cvia_param_table *t,
                         const struct cvia_param *p, char *buf, size_t cap)
{
    snprintf(buf, cap, "CVIA_%s%s", t->prefix, p->name);
}

int cvia__param_load(const struct cvia_param_table *t, void *cfg)
{
    char var[128];
    int rc = 0;

    for (const struct cvia_param *p = t->params; p->name; p++) {
        void *field = (char *)cfg + p->offset;
        const char *env;
        int err;

        err = cvia__param_parse(p, p->dflt, field);
        if (err) {   /* a bug in the table: fail loudly in tests */
            cvia_error(CONF, "default '%s' of %s_%s does not parse", p->dflt,
                       t->component, p->name);
            rc = -CVIA_ECONFIG;
            continue;
        }
        cvia__param_varname(t, p, var, sizeof(var));
        env = getenv(var);
        if (!env)
            continue;
        err = cvia__param_parse(p, env, field);
        if (err) {
            cvia_error(CONF, "%s: invalid value '%s' (expected %s)", var, env,
                       cvia__param_syntax(p));
            cvia__param_parse(p, p->dflt, field);
            rc = -CVIA_ECONFIG;
        }
    }
    return rc;
}

size_t cvia__edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[128];

    if (lb >= sizeof(row) / sizeof(row[0]))
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = toupper((unsigned char)a[i - 1]) ==
                          toupper((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
