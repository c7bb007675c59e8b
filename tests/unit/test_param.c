/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of util/param.c: the value parsers, typed parsing with ranges,
 * formatting (round trip), loading from the environment with errors that
 * name the variable, unknown-variable warnings with suggestions, and the
 * soundness of every table (the library's and the layers' registered
 * ones), registration and cvia_var_info. TAP output. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <corevia/corevia.h>
#include <corevia/cvia_errno.h>
#include "util/log.h"
#include "util/param.h"

#include "tap.h"
#include "prov/shm/shm.h"

extern char **environ;

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Remove every CVIA_* variable, so that the environment is what the test
 * says it is (ctest sets CVIA_TEST_TIMEOUT_MULTIPLIER). */
static void clear_cvia_env(void)
{
    char name[256];

    for (;;) {
        char **e;
        for (e = environ; *e && strncmp(*e, "CVIA_", 5); e++)
            ;
        if (!*e)
            return;
        size_t len = strcspn(*e, "=");
        if (len >= sizeof(name))
            len = sizeof(name) - 1;
        memcpy(name, *e, len);
        name[len] = '\0';
        unsetenv(name);
    }
}

/* ------------------------------------------------------------- parsers */

static void test_parse_size(void)
{
    static const struct { const char *in; size_t out; } good[] = {
        { "0", 0 }, { "1", 1 }, { "4096", 4096 }, { "64k", 64 << 10 },
        { "64K", 64 << 10 }, { "4m", 4 << 20 }, { "4M", 4 << 20 },
        { "1g", 1 << 30 }, { "1G", 1 << 30 }, { "2t", 2ull << 40 },
        { "4KiB", 4096 }, { "4kib", 4096 }, { "4kb", 4096 }, { "4KB", 4096 },
        { "4kB", 4096 }, { "4MiB", 4 << 20 }, { "1GB", 1 << 30 }, { "4b", 4 },
        { "4B", 4 }, { "0k", 0 },
        /* fractions are accepted when they come to whole bytes */
        { "1.5k", 1536 }, { "0.5k", 512 }, { "2.25m", 9ull << 18 }, { "8.0", 8 },
        { "16777215t", 18446742974197923840ull },          /* 2^64 - 2^40 */
        { "9007199254740992", 9007199254740992ull },      /* 2^53 */
    };
    static const char *const bad[] = {
        "", "-1", "+1", "abc", "4x", "k", " 4", "4 ", "4 k", "4k ", "4kk", "4kbb",
        "4ki", "4ib", "1.5", "0.1k", "1.0001k", "4KiBx", "inf", "nan", ".5k",
        "4\n", "1e999", "1e3", "0x10",
    };
    static const char *const range[] = {
        "16777216t", "17179869184g", "18446744073709551616", "99999999999999999999",
    };
    int good_ok = 1, bad_ok = 1, range_ok = 1;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        size_t v = 12345;
        int rc = cvia__parse_size(good[i].in, &v);
        if (rc || v != good[i].out) {
            tap_diag("parse_size(\"%s\") = %d, %zu; expected 0, %zu", good[i].in, rc, v,
                     good[i].out);
            good_ok = 0;
        }
    }
    tap_ok(good_ok, "cvia__parse_size: plain, k/m/g/t, KiB/kb/KB spellings, 0, whole-byte "
           "fractions (1.5k), up to 2^64 - 2^40");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t v = 12345;
        int rc = cvia__parse_size(bad[i], &v);
        if (rc != -EINVAL || v != 12345) {
            tap_diag("parse_size(\"%s\") = %d, %zu; expected -EINVAL, untouched", bad[i], rc, v);
            bad_ok = 0;
        }
    }
    tap_ok(bad_ok, "cvia__parse_size: -EINVAL for \"\", -1, abc, 4x, spaces, bad units, "
           "fractions of a byte (1.5, 0.1k); output untouched");
    for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++) {
        size_t v = 12345;
        int rc = cvia__parse_size(range[i], &v);
        if (rc != -ERANGE || v != 12345) {
            tap_diag("parse_size(\"%s\") = %d, %zu; expected -ERANGE", range[i], rc, v);
            range_ok = 0;
        }
    }
    tap_ok(range_ok, "cvia__parse_size: -ERANGE at 2^64 and beyond (16777216t, "
           "17179869184g, 2^64)");
    tap_ok(cvia__parse_size(NULL, &(size_t){ 0 }) == -EINVAL, "cvia__parse_size(NULL) is -EINVAL");

    /* Byte counts are exact: no detour through a double. */
    {
        size_t v = 0;
        int rc = cvia__parse_size("9007199254740993", &v);
        tap_ok(rc != 0 || v == 9007199254740993ull, "cvia__parse_size(\"9007199254740993\") (2^53 + 1) is exact or refused, "
                 "never rounded (got rc %d, %zu)", rc, v);
        rc = cvia__parse_size("18446744073709551615", &v);
        tap_ok(rc == 0 && v == SIZE_MAX, "cvia__parse_size(\"18446744073709551615\") is SIZE_MAX (got rc %d)", rc);
    }
}

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fabs(b);
}

static void test_parse_time(void)
{
    static const struct { const char *in; double out; } good[] = {
        { "10us", 10e-6 }, { "5ms", 5e-3 }, { "2s", 2 }, { "1.5", 1.5 }, { "2m", 120 },
        { "1min", 60 }, { "1h", 3600 }, { "100ns", 100e-9 }, { "0", 0 }, { "0s", 0 },
        { ".5", 0.5 }, { "0.25ms", 0.25e-3 }, { "120s", 120 }, { "20ms", 0.02 },
        { "0.001", 1e-3 },
    };
    static const char *const bad[] = {
        "", "abc", "-1", "-5ms", "+1", " 1", "1 ", "5 ms", "5MS", "5S", "5msx", "5sec",
        "s", "ms", ".", "inf", "nan", "-inf", "1..5", "10 us",
        /* decimal only: strtod would take these */
        "0x10", "1e308", "1e-3", "1E3", "0x1p4", "infinity", "1.",
    };
    int good_ok = 1, bad_ok = 1;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        double v = -42;
        int rc = cvia__parse_time(good[i].in, &v);
        if (rc || !near(v, good[i].out)) {
            tap_diag("parse_time(\"%s\") = %d, %g; expected 0, %g", good[i].in, rc, v,
                     good[i].out);
            good_ok = 0;
        }
    }
    tap_ok(good_ok, "cvia__parse_time: 10us, 5ms, 2s, 1.5 (s), 2m, 1min, 1h, 100ns, .5, 0");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double v = -42;
        int rc = cvia__parse_time(bad[i], &v);
        if (rc != -EINVAL || v != -42) {
            tap_diag("parse_time(\"%s\") = %d, %g; expected -EINVAL, untouched", bad[i], rc, v);
            bad_ok = 0;
        }
    }
    tap_ok(bad_ok, "cvia__parse_time: -EINVAL for junk, negatives, spaces, unknown or "
           "upper-case units; output untouched");
    tap_ok(cvia__parse_time("1000000000000", &(double){ 0 }) == -ERANGE,
           "cvia__parse_time(\"1000000000000\") (13 digits) is -ERANGE");
    tap_ok(cvia__parse_time(NULL, &(double){ 0 }) == -EINVAL, "cvia__parse_time(NULL) is -EINVAL");
}

static void test_parse_bool(void)
{
    static const char *const yes[] = { "y", "yes", "on", "1", "true", "Y", "YES", "On", "TRUE" };
    static const char *const no[] = { "n", "no", "off", "0", "false", "N", "NO", "OFF", "False" };
    static const char *const bad[] = { "", "2", "-1", "yess", "oui", " y", "y ", "tru", "of" };
    int ok_yes = 1, ok_no = 1, ok_bad = 1, v;

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (v = 7, cvia__parse_bool(yes[i], &v) || v != 1) {
            tap_diag("parse_bool(\"%s\") not 1", yes[i]);
            ok_yes = 0;
        }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (v = 7, cvia__parse_bool(no[i], &v) || v != 0) {
            tap_diag("parse_bool(\"%s\") not 0", no[i]);
            ok_no = 0;
        }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (v = 7, cvia__parse_bool(bad[i], &v) != -EINVAL || v != 7) {
            tap_diag("parse_bool(\"%s\") accepted", bad[i]);
            ok_bad = 0;
        }
    tap_ok(ok_yes, "cvia__parse_bool: y/yes/on/1/true (any case) -> 1");
    tap_ok(ok_no, "cvia__parse_bool: n/no/off/0/false (any case) -> 0");
    tap_ok((v = 7, cvia__parse_bool("auto", &v) == 0 && v == -1) &&
           (v = 7, cvia__parse_bool("AUTO", &v) == 0 && v == -1),
           "cvia__parse_bool: auto -> -1");
    tap_ok(ok_bad && cvia__parse_bool(NULL, &v) == -EINVAL,
           "cvia__parse_bool: -EINVAL for \"\", 2, yess, spaces, NULL; output untouched");
}

static void test_parse_long(void)
{
    long v;
    int good = 1;

    good &= cvia__parse_long("0", &v) == 0 && v == 0;
    good &= cvia__parse_long("-42", &v) == 0 && v == -42;
    good &= cvia__parse_long("010", &v) == 0 && v == 10;   /* decimal, not octal */
    good &= cvia__parse_long("0x10", &v) == -EINVAL;
    good &= cvia__parse_long("9223372036854775807", &v) == 0 && v == LONG_MAX;
    good &= cvia__parse_long("-9223372036854775808", &v) == 0 && v == LONG_MIN;
    tap_ok(good, "cvia__parse_long: 0, -42, 010 is ten, 0x10 refused, LONG_MAX, LONG_MIN");
    v = 5;
    good = cvia__parse_long("9223372036854775808", &v) == -ERANGE && v == 5;
    good &= cvia__parse_long("", &v) == -EINVAL && cvia__parse_long(" 1", &v) == -EINVAL;
    good &= cvia__parse_long("1x", &v) == -EINVAL && cvia__parse_long("abc", &v) == -EINVAL;
    good &= cvia__parse_long("1 ", &v) == -EINVAL && cvia__parse_long(NULL, &v) == -EINVAL;
    tap_ok(good && v == 5, "cvia__parse_long: -ERANGE on overflow, -EINVAL on junk and spaces");
}

/* ------------------------------------------------------ cvia__param_parse */

static const char *const colours[] = { "red", "green", "blue", NULL };

struct tcfg {
    char   str[CVIA_PARAM_STRLEN];
    long   i;
    long   iu;                 /* unlimited */
    size_t sz;
    double t;
    int    b;
    int    tri;
    int    e;
};

static const struct cvia_param tparams[] = {
    { "STR", "hello", CVIA_PARAM_STRING, offsetof(struct tcfg, str), "a string", 0, 0, NULL },
    { "INT", "3", CVIA_PARAM_INT, offsetof(struct tcfg, i), "an int", -5, 5, NULL },
    { "INTU", "0", CVIA_PARAM_INT, offsetof(struct tcfg, iu), "an int", 0, 0, NULL },
    { "SIZE", "1k", CVIA_PARAM_SIZE, offsetof(struct tcfg, sz), "a size", 128, 1 << 20, NULL },
    { "TIME", "5ms", CVIA_PARAM_TIME, offsetof(struct tcfg, t), "a time", 0, 0, NULL },
    { "BOOL", "y", CVIA_PARAM_BOOL, offsetof(struct tcfg, b), "a bool", 0, 0, NULL },
    { "TRI", "auto", CVIA_PARAM_TRI, offsetof(struct tcfg, tri), "a tri", 0, 0, NULL },
    { "ENUM", "green", CVIA_PARAM_ENUM, offsetof(struct tcfg, e), "an enum", 0, 0, colours },
    { NULL }
};

static const struct cvia_param_table ttable = {
    .component = "utest", .prefix = "UTEST_", .params = tparams,
    .cfg_size = sizeof(struct tcfg),
};

enum { P_STR, P_INT, P_INTU, P_SIZE, P_TIME, P_BOOL, P_TRI, P_ENUM };

static void test_param_parse(void)
{
    struct tcfg c;
    char big[CVIA_PARAM_STRLEN + 1];
    int good;

    memset(&c, 0, sizeof(c));
    memset(big, 'x', sizeof(big));
    big[CVIA_PARAM_STRLEN - 1] = '\0';
    good = cvia__param_parse(&tparams[P_STR], "", c.str) == 0 && !strcmp(c.str, "");
    good &= cvia__param_parse(&tparams[P_STR], "a b,c=d", c.str) == 0 && !strcmp(c.str, "a b,c=d");
    good &= cvia__param_parse(&tparams[P_STR], big, c.str) == 0 && strlen(c.str) == 255;
    big[CVIA_PARAM_STRLEN - 1] = 'x';
    big[CVIA_PARAM_STRLEN] = '\0';
    good &= cvia__param_parse(&tparams[P_STR], big, c.str) == -ERANGE && strlen(c.str) == 255;
    tap_ok(good, "param_parse STRING: empty, spaces, 255 chars; 256 chars is -ERANGE, untouched");

    c.i = 99;
    good = cvia__param_parse(&tparams[P_INT], "-5", &c.i) == 0 && c.i == -5;
    good &= cvia__param_parse(&tparams[P_INT], "5", &c.i) == 0 && c.i == 5;
    good &= cvia__param_parse(&tparams[P_INT], "0", &c.i) == 0 && c.i == 0;
    good &= cvia__param_parse(&tparams[P_INT], "6", &c.i) == -ERANGE;
    good &= cvia__param_parse(&tparams[P_INT], "-6", &c.i) == -ERANGE;
    good &= cvia__param_parse(&tparams[P_INT], "99999999999999999999", &c.i) == -ERANGE;
    good &= cvia__param_parse(&tparams[P_INT], "3x", &c.i) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_INT], "", &c.i) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_INT], "1.0", &c.i) == -EINVAL;
    tap_ok(good && c.i == 0, "param_parse INT [-5, 5]: min and max accepted, min-1 and "
           "max+1 -ERANGE, junk -EINVAL, untouched on error");
    good = cvia__param_parse(&tparams[P_INTU], "-1000000", &c.iu) == 0 && c.iu == -1000000;
    good &= cvia__param_parse(&tparams[P_INTU], "9223372036854775807", &c.iu) == 0 &&
            c.iu == LONG_MAX;
    tap_ok(good, "param_parse INT with range 0,0: unlimited");

    c.sz = 7;
    good = cvia__param_parse(&tparams[P_SIZE], "128", &c.sz) == 0 && c.sz == 128;
    good &= cvia__param_parse(&tparams[P_SIZE], "1m", &c.sz) == 0 && c.sz == 1 << 20;
    good &= cvia__param_parse(&tparams[P_SIZE], "127", &c.sz) == -ERANGE;
    good &= cvia__param_parse(&tparams[P_SIZE], "1048577", &c.sz) == -ERANGE;
    good &= cvia__param_parse(&tparams[P_SIZE], "0", &c.sz) == -ERANGE;
    good &= cvia__param_parse(&tparams[P_SIZE], "2m", &c.sz) == -ERANGE;
    good &= cvia__param_parse(&tparams[P_SIZE], "-1", &c.sz) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_SIZE], "4x", &c.sz) == -EINVAL;
    tap_ok(good && c.sz == 1 << 20, "param_parse SIZE [128, 1m]: bounds accepted, "
           "127/1m+1/0/2m -ERANGE, junk -EINVAL, untouched on error");

    c.t = 9;
    good = cvia__param_parse(&tparams[P_TIME], "10us", &c.t) == 0 && near(c.t, 10e-6);
    good &= cvia__param_parse(&tparams[P_TIME], "-1", &c.t) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_TIME], "soon", &c.t) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_TIME], "1e308", &c.t) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_TIME], "0x10", &c.t) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_TIME], "61m", &c.t) == -ERANGE;
    tap_ok(good && near(c.t, 10e-6), "param_parse TIME: 10us; negative, junk, exponent, "
           "hex refused; beyond an hour -ERANGE");
    {   /* a table's own bounds, in microseconds: LIVENESS_INTERVAL-like */
        struct cvia_param lt = tparams[P_TIME];
        lt.min = 1000;         /* 1 ms */
        lt.max = 10000000;     /* 10 s */
        good = cvia__param_parse(&lt, "10s", &c.t) == 0 && near(c.t, 10);
        good &= cvia__param_parse(&lt, "1ms", &c.t) == 0 && near(c.t, 1e-3);
        good &= cvia__param_parse(&lt, "11s", &c.t) == -ERANGE;
        good &= cvia__param_parse(&lt, "999us", &c.t) == -ERANGE;
        tap_ok(good && near(c.t, 1e-3), "param_parse TIME with bounds [1ms, 10s]: bounds "
               "accepted, 11s and 999us -ERANGE");
    }

    c.b = 5;
    good = cvia__param_parse(&tparams[P_BOOL], "yes", &c.b) == 0 && c.b == 1;
    good &= cvia__param_parse(&tparams[P_BOOL], "off", &c.b) == 0 && c.b == 0;
    good &= cvia__param_parse(&tparams[P_BOOL], "auto", &c.b) == -EINVAL && c.b == 0;
    good &= cvia__param_parse(&tparams[P_BOOL], "maybe", &c.b) == -EINVAL && c.b == 0;
    tap_ok(good, "param_parse BOOL: yes/off; auto and junk -EINVAL, untouched");

    c.tri = 5;
    good = cvia__param_parse(&tparams[P_TRI], "auto", &c.tri) == 0 && c.tri == -1;
    good &= cvia__param_parse(&tparams[P_TRI], "1", &c.tri) == 0 && c.tri == 1;
    good &= cvia__param_parse(&tparams[P_TRI], "n", &c.tri) == 0 && c.tri == 0;
    good &= cvia__param_parse(&tparams[P_TRI], "sometimes", &c.tri) == -EINVAL && c.tri == 0;
    tap_ok(good, "param_parse TRI: auto -> -1, 1, n; junk -EINVAL");

    c.e = 9;
    good = cvia__param_parse(&tparams[P_ENUM], "red", &c.e) == 0 && c.e == 0;
    good &= cvia__param_parse(&tparams[P_ENUM], "blue", &c.e) == 0 && c.e == 2;
    good &= cvia__param_parse(&tparams[P_ENUM], "GREEN", &c.e) == 0 && c.e == 1;
    good &= cvia__param_parse(&tparams[P_ENUM], "purple", &c.e) == -EINVAL && c.e == 1;
    good &= cvia__param_parse(&tparams[P_ENUM], "", &c.e) == -EINVAL;
    good &= cvia__param_parse(&tparams[P_ENUM], "1", &c.e) == -EINVAL && c.e == 1;
    tap_ok(good, "param_parse ENUM: names (any case) -> index; other names, \"\", "
           "an index number -EINVAL");

    good = strstr(cvia__param_syntax(&tparams[P_ENUM]), "red|green|blue") != NULL;
    good &= strstr(cvia__param_syntax(&tparams[P_INT]), "-5..5") != NULL;
    good &= strstr(cvia__param_syntax(&tparams[P_SIZE]), "128..1048576") != NULL;
    tap_ok(good, "cvia__param_syntax lists enum names and INT/SIZE ranges");
}

/* --------------------------------------------------- format / round trip */

static size_t field_size(enum cvia_param_type t)
{
    switch (t) {
    case CVIA_PARAM_STRING: return CVIA_PARAM_STRLEN;
    case CVIA_PARAM_INT:    return sizeof(long);
    case CVIA_PARAM_SIZE:   return sizeof(size_t);
    case CVIA_PARAM_TIME:   return sizeof(double);
    case CVIA_PARAM_BOOL:
    case CVIA_PARAM_TRI:
    case CVIA_PARAM_ENUM:   return sizeof(int);
    }
    return 0;
}

static size_t field_align(enum cvia_param_type t)
{
    switch (t) {
    case CVIA_PARAM_STRING: return 1;
    case CVIA_PARAM_INT:    return _Alignof(long);
    case CVIA_PARAM_SIZE:   return _Alignof(size_t);
    case CVIA_PARAM_TIME:   return _Alignof(double);
    default:                return _Alignof(int);
    }
}

/* Same value? Times compare to 1e-12 relative: "5ms" is 5 * 1e-3, which
 * may be one ulp away from what "0.005" gives. */
static int same_value(const struct cvia_param *p, const void *a, const void *b)
{
    switch (p->type) {
    case CVIA_PARAM_STRING: return !strcmp(a, b);
    case CVIA_PARAM_INT:    return *(const long *)a == *(const long *)b;
    case CVIA_PARAM_SIZE:   return *(const size_t *)a == *(const size_t *)b;
    case CVIA_PARAM_TIME:   return near(*(const double *)b, *(const double *)a);
    default:                return *(const int *)a == *(const int *)b;
    }
}

/* text -> parse -> format -> parse: same value, and formatting again gives
 * the same text. 1 if so; on failure explains in a diagnostic. */
static int round_trip(const struct cvia_param *p, const char *text, const char *who)
{
    union { char s[CVIA_PARAM_STRLEN]; long l; size_t z; double d; int i; } v1, v2;
    char f1[CVIA_PARAM_STRLEN + 32], f2[CVIA_PARAM_STRLEN + 32];
    int rc;

    memset(&v1, 0, sizeof(v1));
    memset(&v2, 0, sizeof(v2));
    if ((rc = cvia__param_parse(p, text, &v1))) {
        tap_diag("%s: \"%s\" does not parse (%d)", who, text, rc);
        return 0;
    }
    cvia__param_format(p, &v1, f1, sizeof(f1));
    if ((rc = cvia__param_parse(p, f1, &v2))) {
        tap_diag("%s: \"%s\" formats as \"%s\", which does not parse (%d)", who, text, f1, rc);
        return 0;
    }
    if (!same_value(p, &v1, &v2)) {
        tap_diag("%s: \"%s\" formats as \"%s\", which parses to another value", who, text, f1);
        return 0;
    }
    cvia__param_format(p, &v2, f2, sizeof(f2));
    if (strcmp(f1, f2)) {
        tap_diag("%s: \"%s\" formats as \"%s\", then as \"%s\"", who, text, f1, f2);
        return 0;
    }
    return 1;
}

static void test_format(void)
{
    static const char *const sizes[] = {
        "0", "1", "1023", "1024", "1536", "4096", "64k", "65537", "4m", "3g", "1t", "5120t",
        "1099511627775", "9007199254740992",
    };
    static const char *const times[] = {
        "0", "1ns", "1us", "10us", "999us", "1ms", "5ms", "20ms", "0.5", "1", "1.5", "2",
        "120", "2m", "1h", "123.456",
    };
    static const char *const ints[] = {
        "0", "-1", "1", "2000", "-9223372036854775808", "9223372036854775807",
    };
    struct cvia_param ps = tparams[P_SIZE], pi = tparams[P_INTU];
    int good = 1;
    char buf[64];
    size_t z;

    ps.min = ps.max = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        good &= round_trip(&ps, sizes[i], "SIZE");
    tap_ok(good, "format/parse round trip of sizes 0 .. 2^53 (k/m/g/t when exact)");
    z = 64 << 10;
    cvia__param_format(&ps, &z, buf, sizeof(buf));
    good = !strcmp(buf, "64k");
    z = 1536;
    cvia__param_format(&ps, &z, buf, sizeof(buf));
    good &= !strcmp(buf, "1536");
    z = 0;
    cvia__param_format(&ps, &z, buf, sizeof(buf));
    good &= !strcmp(buf, "0");
    tap_ok(good, "SIZE formats 65536 as 64k, 1536 as 1536, 0 as 0");

    good = 1;
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
        good &= round_trip(&tparams[P_TIME], times[i], "TIME");
    tap_ok(good, "format/parse round trip of times 0, 1ns .. 1h");
    good = 1;
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        good &= round_trip(&pi, ints[i], "INT");
    tap_ok(good, "format/parse round trip of INT 0, +-1, LONG_MIN, LONG_MAX");
    good = round_trip(&tparams[P_BOOL], "y", "BOOL") & round_trip(&tparams[P_BOOL], "off", "BOOL");
    good &= round_trip(&tparams[P_TRI], "auto", "TRI") & round_trip(&tparams[P_TRI], "1", "TRI");
    good &= round_trip(&tparams[P_TRI], "no", "TRI");
    for (int i = 0; colours[i]; i++)
        good &= round_trip(&tparams[P_ENUM], colours[i], "ENUM");
    good &= round_trip(&tparams[P_STR], "", "STRING") &
            round_trip(&tparams[P_STR], "/tmp/a b.xml", "STRING");
    tap_ok(good, "format/parse round trip of BOOL, TRI, ENUM and STRING values");

    /* times print with as many digits as they need; sizes are exact */
    tap_ok(round_trip(&tparams[P_TIME], "1234.567", "TIME"),
           "format/parse round trip of time 1234.567 s (7 significant digits)");
    {
        size_t v1 = (1ull << 53) + 1, v2 = 0;
        int rc;
        cvia__param_format(&ps, &v1, buf, sizeof(buf));
        rc = cvia__param_parse(&ps, buf, &v2);
        tap_ok(rc == 0 && v2 == v1, "size 2^53 + 1 formats as \"%s\", which parses back to it (got rc %d, %zu)",
                 buf, rc, v2);
    }
}

/* ------------------------------------------------- the library's tables */

static void test_tables(void)
{
    regex_t re;
    char names[256][128];
    size_t nnames = 0;
    int ntables = 0;
    int good_name = 1, good_uniq = 1, good_desc = 1, good_layout = 1, good_range = 1;
    int good_dflt = 1, good_trip = 1, good_load = 1, good_tab = 1;

    if (regcomp(&re, "^CVIA_[A-Z0-9_]+$", REG_EXTENDED | REG_NOSUB)) {
        printf("Bail out! regcomp\n");
        exit(1);
    }
    clear_cvia_env();
    const struct cvia_param_table *t;
    for (int ti = 0; (t = cvia__param_table(ti)); ti++) {
        void *cfg;
        int rc;

        ntables++;
        if (!t->component || !t->component[0] || !t->prefix || !t->params || !t->cfg_size ||
            (t->prefix[0] && t->prefix[strlen(t->prefix) - 1] != '_')) {
            tap_diag("table %d (%s) is malformed", ti, t->component ? t->component : "?");
            good_tab = 0;
            continue;
        }
        for (const struct cvia_param *p = t->params; p->name; p++) {
            char var[128];

            cvia__param_varname(t, p, var, sizeof(var));
            if (regexec(&re, var, 0, NULL, 0)) {
                tap_diag("%s: name does not match ^CVIA_[A-Z0-9_]+$", var);
                good_name = 0;
            }
            for (size_t k = 0; k < nnames; k++) {
                if (!strcmp(names[k], var)) {
                    tap_diag("%s: declared twice", var);
                    good_uniq = 0;
                }
            }
            if (nnames < sizeof(names) / sizeof(names[0]))
                snprintf(names[nnames++], sizeof(names[0]), "%s", var);
            if (!p->desc || !p->desc[0] || strchr(p->desc, '\n')) {
                tap_diag("%s: description empty or not one line", var);
                good_desc = 0;
            }
            if ((unsigned)p->type > CVIA_PARAM_ENUM ||
                p->offset + field_size(p->type) > t->cfg_size ||
                p->offset % field_align(p->type)) {
                tap_diag("%s: field at offset %zu does not fit in %zu bytes", var,
                         p->offset, t->cfg_size);
                good_layout = 0;
                continue;
            }
            if ((p->type == CVIA_PARAM_INT || p->type == CVIA_PARAM_SIZE) &&
                (p->min || p->max) && p->min > p->max) {
                tap_diag("%s: min %ld > max %ld", var, p->min, p->max);
                good_range = 0;
            }
            if (p->type == CVIA_PARAM_SIZE && p->min < 0) {
                tap_diag("%s: negative min for a size", var);
                good_range = 0;
            }
            if (p->type == CVIA_PARAM_ENUM) {
                if (!p->values || !p->values[0]) {
                    tap_diag("%s: enum without values", var);
                    good_range = 0;
                    continue;
                }
                for (int a = 0; p->values[a]; a++)
                    for (int b = a + 1; p->values[b]; b++)
                        if (!strcasecmp(p->values[a], p->values[b])) {
                            tap_diag("%s: enum value %s twice", var, p->values[a]);
                            good_range = 0;
                        }
            }
            if (!p->dflt) {
                tap_diag("%s: no default", var);
                good_dflt = 0;
                continue;
            }
            {
                union { char s[CVIA_PARAM_STRLEN]; long l; size_t z; double d; int i; } v;
                if (cvia__param_parse(p, p->dflt, &v)) {
                    tap_diag("%s: default \"%s\" does not parse", var, p->dflt);
                    good_dflt = 0;
                    continue;
                }
            }
            good_trip &= round_trip(p, p->dflt, var);
        }
        /* with a clean environment, loading gives the defaults, silently */
        cfg = calloc(1, t->cfg_size);
        capture_start();
        rc = cvia__param_load(t, cfg);
        const char *err = capture_end();
        if (rc || err[0]) {
            tap_diag("loading table %s in a clean environment: %d, \"%s\"", t->component, rc, err);
            good_load = 0;
        }
        free(cfg);
    }
    regfree(&re);
    tap_ok(good_tab && ntables >= 4, "cvia__param_table: %d tables, each with a component, "
           "prefix ending in _, params and cfg_size", ntables);
    tap_ok(good_name, "every variable name (%zu) matches ^CVIA_[A-Z0-9_]+$", nnames);
    tap_ok(good_uniq, "every variable name is unique across tables");
    tap_ok(good_desc, "every variable has a non-empty, one-line description");
    tap_ok(good_layout, "every field lies inside its table's cfg_size, aligned for its type");
    tap_ok(good_range, "INT/SIZE ranges have min <= max; ENUMs have distinct values");
    tap_ok(good_dflt, "every default parses (and lies in its range)");
    tap_ok(good_trip, "every default survives format -> parse -> format unchanged");
    tap_ok(good_load, "cvia__param_load of every table in a clean environment: 0, no message");
}

/* ------------------------------------------------------ cvia__param_load */

extern const struct cvia_param_table cvia__shm_param_table;

static void test_load(void)
{
    struct tcfg c;
    const char *err;
    int rc;

    clear_cvia_env();
    memset(&c, 0x5a, sizeof(c));
    rc = cvia__param_load(&ttable, &c);
    tap_ok(rc == 0 && !strcmp(c.str, "hello") && c.i == 3 && c.iu == 0 && c.sz == 1024 &&
           near(c.t, 5e-3) && c.b == 1 && c.tri == -1 && c.e == 1,
           "param_load with no variable set: every field has its default");

    setenv("CVIA_UTEST_STR", "world", 1);
    setenv("CVIA_UTEST_INT", "-4", 1);
    setenv("CVIA_UTEST_SIZE", "64k", 1);
    setenv("CVIA_UTEST_TIME", "2s", 1);
    setenv("CVIA_UTEST_BOOL", "off", 1);
    setenv("CVIA_UTEST_TRI", "yes", 1);
    setenv("CVIA_UTEST_ENUM", "blue", 1);
    capture_start();
    rc = cvia__param_load(&ttable, &c);
    err = capture_end();
    tap_ok(rc == 0 && !err[0] && !strcmp(c.str, "world") && c.i == -4 && c.sz == 65536 &&
           c.t == 2 && c.b == 0 && c.tri == 1 && c.e == 2,
           "param_load with good values of every type: 0, values taken, nothing on stderr");

    setenv("CVIA_UTEST_INT", "junk", 1);
    capture_start();
    rc = cvia__param_load(&ttable, &c);
    err = capture_end();
    tap_ok(rc == -CVIA_ECONFIG, "param_load with CVIA_UTEST_INT=junk returns -CVIA_ECONFIG");
    tap_ok(c.i == 3, "... the bad field keeps its default (3, got %ld)", c.i);
    tap_ok(c.sz == 65536 && c.e == 2 && !strcmp(c.str, "world"),
           "... the other fields are still loaded from the environment");
    tap_ok(strstr(err, "CVIA_UTEST_INT") && strstr(err, "junk") && count_lines(err) == 1,
           "... one error line that names the variable and the value");
    if (!strstr(err, "CVIA_UTEST_INT"))
        tap_diag("stderr was: %s", err);

    setenv("CVIA_UTEST_INT", "6", 1);          /* out of range */
    setenv("CVIA_UTEST_SIZE", "2m", 1);        /* out of range */
    setenv("CVIA_UTEST_TRI", "perhaps", 1);
    capture_start();
    rc = cvia__param_load(&ttable, &c);
    err = capture_end();
    tap_ok(rc == -CVIA_ECONFIG && c.i == 3 && c.sz == 1024 && c.tri == -1 &&
           strstr(err, "CVIA_UTEST_INT") && strstr(err, "CVIA_UTEST_SIZE") &&
           strstr(err, "CVIA_UTEST_TRI") && count_lines(err) == 3,
           "param_load with 3 bad values (2 out of range): -CVIA_ECONFIG, defaults kept, "
           "one error per variable");
    clear_cvia_env();

    /* a table whose default does not parse is reported (a bug in a table) */
    {
        static const struct cvia_param broken[] = {
            { "X", "notanumber", CVIA_PARAM_INT, 0, "broken", 0, 0, NULL },
            { NULL }
        };
        static const struct cvia_param_table bt = {
            .component = "broken", .prefix = "UTEST_", .params = broken,
            .cfg_size = sizeof(long),
        };
        long x;
        capture_start();
        rc = cvia__param_load(&bt, &x);
        err = capture_end();
        tap_ok(rc == -CVIA_ECONFIG && strstr(err, "notanumber"),
               "param_load reports a default that does not parse");
    }

    /* the real shm table */
    {
        struct shm_cfg s;   /* the provider's own struct, whatever it grows to */
        setenv("CVIA_SHM_SLOT_SIZE", "64k", 1);
        setenv("CVIA_SHM_SLOTS", "8", 1);
        rc = cvia__param_load(&cvia__shm_param_table, &s);
        tap_ok(rc == 0 && s.slot_size == 65536 && s.nslots == 8,
               "shm table: CVIA_SHM_SLOT_SIZE=64k CVIA_SHM_SLOTS=8 loaded");
        setenv("CVIA_SHM_SLOT_SIZE", "abc", 1);
        capture_start();
        rc = cvia__param_load(&cvia__shm_param_table, &s);
        err = capture_end();
        tap_ok(rc == -CVIA_ECONFIG && s.slot_size == 16384 && s.nslots == 8 &&
               strstr(err, "CVIA_SHM_SLOT_SIZE") && count_lines(err) == 1,
               "shm table: CVIA_SHM_SLOT_SIZE=abc -> -CVIA_ECONFIG, 16k kept, error names "
               "the variable");
        clear_cvia_env();
    }
}

/* ----------------------------------------------- edit distance, unknowns */

static void test_edit_distance(void)
{
    char a[200], b[200];
    int good;

    good = cvia__edit_distance("", "") == 0;
    good &= cvia__edit_distance("abc", "") == 3 && cvia__edit_distance("", "abc") == 3;
    good &= cvia__edit_distance("kitten", "sitting") == 3;
    good &= cvia__edit_distance("sitting", "kitten") == 3;
    good &= cvia__edit_distance("flaw", "lawn") == 2;
    good &= cvia__edit_distance("abc", "abc") == 0;
    good &= cvia__edit_distance("abc", "ABC") == 0;              /* case-insensitive */
    good &= cvia__edit_distance("CVIA_SHM_SLOTSIZE", "CVIA_SHM_SLOT_SIZE") == 1;
    good &= cvia__edit_distance("CVIA_SHM_SLOT_SIZ", "CVIA_SHM_SLOT_SIZE") == 1;
    good &= cvia__edit_distance("CVIA_SHM_SLTO_SIZE", "CVIA_SHM_SLOT_SIZE") == 2;
    good &= cvia__edit_distance("CVIA_LOG", "CVIA_SHM_SLOT_SIZE") ==
            cvia__edit_distance("CVIA_SHM_SLOT_SIZE", "CVIA_LOG");
    tap_ok(good, "cvia__edit_distance: empty, kitten/sitting, flaw/lawn, symmetric, "
           "case-insensitive, typos of CVIA_SHM_SLOT_SIZE");
    memset(a, 'a', sizeof(a));
    memset(b, 'a', sizeof(b));
    a[127] = b[127] = '\0';
    good = cvia__edit_distance(a, b) == 0;
    b[126] = 'b';
    good &= cvia__edit_distance(a, b) == 1;
    b[126] = 'a';
    b[127] = 'a';
    b[150] = '\0';
    good &= cvia__edit_distance(a, b) == (size_t)-1;           /* b too long */
    a[127] = 'a';
    a[199] = '\0';
    b[127] = '\0';
    good &= cvia__edit_distance(a, b) == 72;                    /* long a is fine */
    tap_ok(good, "cvia__edit_distance: b of 127 chars works, longer b gives SIZE_MAX");
}

static void test_check_unknown(void)
{
    static const char *const extra[] = { "CVIA_SHM_SLOTSIZE", NULL };
    static const char *const tool[] = { "CVIA_MYTOOL_FOO", NULL };
    const char *err;
    int n;

    clear_cvia_env();
    capture_start();
    n = cvia__param_check_unknown(NULL);
    err = capture_end();
    tap_ok(n == 0 && !err[0], "check_unknown with no CVIA_* variable: 0, silent");

    setenv("CVIA_SHM_SLOTS", "8", 1);
    setenv("CVIA_LOG", "info", 1);
    setenv("CVIA_TOPOLOGY", "", 1);
    setenv("CVIA_RANK", "0", 1);
    setenv("CVIA_TEST_TIMEOUT_MULTIPLIER", "3", 1);
    capture_start();
    n = cvia__param_check_unknown(NULL);
    err = capture_end();
    tap_ok(n == 0 && !err[0], "check_unknown with known names of 5 tables: 0, silent");

    setenv("CVIA_SHM_SLOTSIZE", "1", 1);
    capture_start();
    n = cvia__param_check_unknown(NULL);
    err = capture_end();
    tap_ok(n == 1, "check_unknown with CVIA_SHM_SLOTSIZE=1 set: returns 1 (got %d)", n);
    tap_ok(strstr(err, "CVIA_SHM_SLOTSIZE") && strstr(err, "CVIA_SHM_SLOT_SIZE") &&
           count_lines(err) == 1,
           "... one warning naming it and suggesting CVIA_SHM_SLOT_SIZE");
    if (!strstr(err, "CVIA_SHM_SLOT_SIZE"))
        tap_diag("stderr was: %s", err);

    capture_start();
    n = cvia__param_check_unknown(extra);
    err = capture_end();
    tap_ok(n == 0 && !err[0], "check_unknown: a name in the caller's extra list is known");

    setenv("CVIA_MYTOOL_FO", "1", 1);
    setenv("CVIA_QQQQQQQQQQQQQQQQQQQQQQQQ", "1", 1);
    capture_start();
    n = cvia__param_check_unknown(tool);
    err = capture_end();
    tap_ok(n == 3 && count_lines(err) == 3 && strstr(err, "did you mean CVIA_MYTOOL_FOO") &&
           strstr(err, "CVIA_QQQQQQQQQQQQQQQQQQQQQQQQ") && strstr(err, "cvia-info -c"),
           "check_unknown with 3 unknowns: 3 warnings; suggests from the extra list; "
           "no suggestion for a far name (points to cvia-info -c)");

    cvia__log_set_level("error");
    capture_start();
    n = cvia__param_check_unknown(tool);
    err = capture_end();
    cvia__log_set_level("warn");
    tap_ok(n == 3 && !err[0], "check_unknown at CVIA_LOG=error: still counts, prints nothing");

    unsetenv("CVIA_SHM_SLOTSIZE");
    unsetenv("CVIA_MYTOOL_FO");
    unsetenv("CVIA_QQQQQQQQQQQQQQQQQQQQQQQQ");
    capture_start();
    n = cvia__param_check_unknown(NULL);
    err = capture_end();
    tap_ok(n == 0 && !err[0], "check_unknown after unsetting them: 0 again");
    clear_cvia_env();
}


extern const struct cvia_param_table cvia__dsm_param_table;
extern const struct cvia_param_table cvia__fab_param_table;

/* The layers register their tables (here: by the constructors of
 * dsm_param.c and fab_param.c, linked into this test as into their
 * libraries); the core lists them after its own, and cvia_var_info
 * describes every variable. */
static void test_registry(void)
{
    const struct cvia_param_table *t;
    int dsm = -1, fi = -1, n = 0, nvars = 0, rc, good = 1;
    cvia_var_info_t v;
    const char *err;

    clear_cvia_env();
    for (int ti = 0; (t = cvia__param_table(ti)); ti++, n++) {
        if (t == &cvia__dsm_param_table)
            dsm = ti;
        if (t == &cvia__fab_param_table)
            fi = ti;
    }
    tap_ok(dsm >= 0 && fi >= 0, "the DSM's and the provider's tables are registered at load "
           "(tables %d and %d of %d)", dsm, fi, n);
    tap_ok(cvia_var_register(&cvia__dsm_param_table) == 0 && cvia__param_table(n) == NULL,
           "registering a table again changes nothing");

    while ((rc = cvia_var_info(nvars, &v, sizeof(v))) == 0) {
        good &= v.name[0] == 'C' && v.component && v.syntax && v.desc && v.valid && !v.set;
        good &= !strcmp(v.value, v.dflt);
        nvars++;
    }
    tap_ok(rc == -ENOENT && nvars > 50 && good, "cvia_var_info: %d variables, each named, "
           "at its default in a clean environment; -ENOENT past the last", nvars);

    setenv("CVIA_DSM_SIZE", "64m", 1);
    setenv("CVIA_SHM_SLOT_SIZE", "abc", 1);
    int seen = 0;
    for (int i = 0; cvia_var_info(i, &v, sizeof(v)) == 0; i++) {
        if (!strcmp(v.name, "CVIA_DSM_SIZE"))
            seen += v.set && v.valid && !strcmp(v.value, "64m") && !strcmp(v.component, "dsm");
        if (!strcmp(v.name, "CVIA_SHM_SLOT_SIZE"))
            seen += v.set && !v.valid && !strcmp(v.value, v.dflt);
    }
    tap_ok(seen == 2, "cvia_var_info: a set value is shown as parsed; a bad one is flagged "
           "invalid and shows the default");
    unsetenv("CVIA_SHM_SLOT_SIZE");

    /* unloaded: the DSM's variables are gone, and its name space is not
     * reported unknown (the process may simply not use the DSM) */
    tap_ok(cvia_var_unregister(&cvia__dsm_param_table) == 0 &&
           cvia_var_unregister(&cvia__dsm_param_table) == -ENOENT,
           "cvia_var_unregister: 0, then -ENOENT");
    int found = 0;
    for (int i = 0; cvia_var_info(i, &v, sizeof(v)) == 0; i++)
        found |= !strcmp(v.name, "CVIA_DSM_SIZE");
    setenv("CVIA_DSM_SIZ", "1", 1);
    capture_start();
    rc = cvia__param_check_unknown(NULL);
    err = capture_end();
    tap_ok(!found && rc == 0 && !err[0], "DSM not loaded: its variables are not listed, and "
           "CVIA_DSM_* names are not reported unknown");
    cvia_var_register(&cvia__dsm_param_table);
    capture_start();
    rc = cvia__param_check_unknown(NULL);
    err = capture_end();
    tap_ok(rc == 1 && strstr(err, "did you mean CVIA_DSM_SIZE"),
           "DSM loaded again: CVIA_DSM_SIZ is unknown, CVIA_DSM_SIZE suggested");
    if (rc != 1)
        tap_diag("stderr was: %s", err);
    tap_ok(cvia_var_info(-1, &v, sizeof(v)) == -EINVAL && cvia_var_info(0, NULL, 1) == -EINVAL &&
           cvia_var_register(NULL) == -EINVAL, "bad arguments: -EINVAL");
    clear_cvia_env();
}

#define NTESTS 70

int main(void)
{
    printf("1..%d\n", NTESTS);
    fflush(stdout);
    test_parse_size();      /* 6 */
    test_parse_time();      /* 4 */
    test_parse_bool();      /* 4 */
    test_parse_long();      /* 2 */
    test_param_parse();     /* 10 */
    test_format();          /* 7 */
    test_tables();          /* 9 */
    test_load();            /* 10 */
    test_edit_distance();   /* 2 */
    test_check_unknown();   /* 8 */
    test_registry();        /* 8 */
    if (tap_n != NTESTS)
        printf("# planned %d tests, ran %d\n", NTESTS, tap_n);
    return tap_failed || tap_n != NTESTS ? 1 : 0;
}
