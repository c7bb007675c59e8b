/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Unit test of the error codes (util/errno.c: cvia_strerror, cvia_err_name)
 * and of the logger's settings and line format (util/log.c). TAP output. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corevia/cvia_errno.h>
#include "util/log.h"

#include "tap.h"

/* ----------------------------------------------------------- error codes */

static const struct { int val; const char *name, *msg; } codes[] = {
#define X(name, val, msg) { (val), "CVIA_" #name, (msg) },
    CVIA_ERRNO_MAP(X)
#undef X
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

static void test_codes(void)
{
    int good_name = 1, good_msg = 1, good_uniq = 1, good_range = 1, good_sign = 1;

    for (size_t i = 0; i < NCODES; i++) {
        const char *n = cvia_err_name(codes[i].val);
        const char *m = cvia_strerror(codes[i].val);

        if (!n || strcmp(n, codes[i].name) || strncmp(n, "CVIA_E", 6)) {
            tap_diag("cvia_err_name(%d) = %s, expected %s", codes[i].val, n ? n : "NULL",
                     codes[i].name);
            good_name = 0;
        }
        if (!m || strcmp(m, codes[i].msg) || !m[0]) {
            tap_diag("cvia_strerror(%d) = %s", codes[i].val, m ? m : "NULL");
            good_msg = 0;
        }
        if (codes[i].val < CVIA_ERRNO_BASE || codes[i].val >= CVIA_ERRNO_LAST) {
            tap_diag("%s = %d outside [CVIA_ERRNO_BASE, CVIA_ERRNO_LAST)", codes[i].name,
                     codes[i].val);
            good_range = 0;
        }
        for (size_t j = 0; j < i; j++) {
            if (codes[i].val == codes[j].val || !strcmp(codes[i].name, codes[j].name) ||
                !strcmp(codes[i].msg, codes[j].msg)) {
                tap_diag("%s and %s share a value, name or message", codes[i].name,
                         codes[j].name);
                good_uniq = 0;
            }
        }
        if (strcmp(cvia_err_name(-codes[i].val), n) ||
            strcmp(cvia_strerror(-codes[i].val), m)) {
            tap_diag("%s: negative code named or described differently", codes[i].name);
            good_sign = 0;
        }
    }
    tap_ok(NCODES >= 10 && CVIA_ERRNO_BASE == 256, "CVIA_ERRNO_MAP has %zu codes from 256",
           NCODES);
    tap_ok(good_name, "cvia_err_name of every code is \"CVIA_<NAME>\"");
    tap_ok(good_msg, "cvia_strerror of every code is its non-empty message");
    tap_ok(good_uniq, "values, names and messages are distinct");
    tap_ok(good_range, "every value lies in [CVIA_ERRNO_BASE, CVIA_ERRNO_LAST)");
    tap_ok(NCODES == (size_t)(CVIA_ERRNO_LAST - CVIA_ERRNO_BASE),
           "the codes are contiguous: CVIA_ERRNO_LAST - CVIA_ERRNO_BASE == %zu "
           "(cvia-strerror -l relies on it)", NCODES);
    tap_ok(good_sign, "the sign is ignored: -CVIA_X and CVIA_X give the same name and message");
    tap_ok(!strcmp(cvia_err_name(-CVIA_ENOPEER), "CVIA_ENOPEER") &&
           !strcmp(cvia_err_name(257), "CVIA_ENOPEER") && CVIA_ENOPEER == 257,
           "257 and -257 are CVIA_ENOPEER");
}

static void test_errno_values(void)
{
    static const struct { int e; const char *name; } sys[] = {
        { EINVAL, "EINVAL" }, { ENOMEM, "ENOMEM" }, { ETIMEDOUT, "ETIMEDOUT" },
        { EAGAIN, "EAGAIN" }, { ENOENT, "ENOENT" }, { EPIPE, "EPIPE" },
        { ERANGE, "ERANGE" }, { EINTR, "EINTR" },
    };
    int good_name = 1, good_msg = 1;

    for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
        char want[256];
        snprintf(want, sizeof(want), "%s", strerror(sys[i].e));
        if (strcmp(cvia_err_name(sys[i].e), sys[i].name) ||
            strcmp(cvia_err_name(-sys[i].e), sys[i].name)) {
            tap_diag("cvia_err_name(+-%d) is not %s", sys[i].e, sys[i].name);
            good_name = 0;
        }
        if (strcmp(cvia_strerror(-sys[i].e), want) || strcmp(cvia_strerror(sys[i].e), want)) {
            tap_diag("cvia_strerror(+-%d) is not \"%s\"", sys[i].e, want);
            good_msg = 0;
        }
    }
    tap_ok(good_name, "errno values pass through: cvia_err_name(-EINVAL) is \"EINVAL\", ...");
    tap_ok(good_msg, "errno values pass through: cvia_strerror(-EINVAL) is strerror(EINVAL), ...");
    tap_ok(!strcmp(cvia_strerror(0), "success") && !strcmp(cvia_err_name(0), "OK"),
           "0 is \"OK\", \"success\"");
}

static void test_unknown(void)
{
    static const int unk[] = { CVIA_ERRNO_LAST, -CVIA_ERRNO_LAST, CVIA_ERRNO_LAST + 1, 999,
                               4095, 100000, -100000, INT_MAX, -INT_MAX };
    int good = 1, never_null = 1;

    for (size_t i = 0; i < sizeof(unk) / sizeof(unk[0]); i++) {
        if (strcmp(cvia_strerror(unk[i]), "unknown error") ||
            strcmp(cvia_err_name(unk[i]), "unknown error")) {
            tap_diag("code %d: \"%s\" / \"%s\"", unk[i], cvia_err_name(unk[i]),
                     cvia_strerror(unk[i]));
            good = 0;
        }
    }
    tap_ok(good, "codes from CVIA_ERRNO_BASE up that are not in the map, up to INT_MAX, "
           "either sign: \"unknown error\"");
    for (int e = -5000; e <= 5000; e++) {
        const char *n = cvia_err_name(e), *m = cvia_strerror(e);
        if (!n || !m || !n[0] || !m[0]) {
            tap_diag("code %d: NULL or empty", e);
            never_null = 0;
            break;
        }
    }
    tap_ok(never_null, "every code in -5000..5000 (unassigned errno values included) has a "
           "non-NULL, non-empty name and message");

    /* INT_MIN has no positive counterpart: negating it is undefined. Run
     * it in a child so that a sanitizer abort is reported, not fatal. */
    {
        pid_t pid;
        int st = 0;

        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            const char *n = cvia_err_name(INT_MIN), *m = cvia_strerror(INT_MIN);
            _exit(n && m && n[0] && m[0] ? 0 : 1);
        }
        /* the child's sanitizer report, if any, goes to stderr */
        waitpid(pid, &st, 0);
        tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                 "cvia_strerror(INT_MIN) and cvia_err_name(INT_MIN): no undefined "
                 "behaviour, never NULL");
    }
}

/* --------------------------------------------------------------- logging */

static void test_log_level(void)
{
    static const struct { const char *in; int lvl; } good[] = {
        { "error", CVIA_LOG_ERROR }, { "warn", CVIA_LOG_WARN }, { "info", CVIA_LOG_INFO },
        { "debug", CVIA_LOG_DEBUG }, { "trace", CVIA_LOG_TRACE }, { "WARNING", CVIA_LOG_WARN },
        { "Info", CVIA_LOG_INFO }, { "ERROR", CVIA_LOG_ERROR }, { "warning", CVIA_LOG_WARN },
    };
    static const char *const bad[] = { "bogus", "3", "warnings", " info", "info ", "err" };
    int ok1 = 1, ok2 = 1;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cvia__log_level = -7;
        if (cvia__log_set_level(good[i].in) || cvia__log_level != good[i].lvl) {
            tap_diag("cvia__log_set_level(\"%s\") -> level %d", good[i].in, cvia__log_level);
            ok1 = 0;
        }
    }
    tap_ok(ok1, "cvia__log_set_level: error/warn/info/debug/trace, any case, \"warning\"");
    cvia__log_set_level("info");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (cvia__log_set_level(bad[i]) != -EINVAL || cvia__log_level != CVIA_LOG_INFO) {
            tap_diag("cvia__log_set_level(\"%s\") accepted or changed the level", bad[i]);
            ok2 = 0;
        }
    }
    tap_ok(ok2, "cvia__log_set_level: -EINVAL for bogus, 3, spaces; level unchanged");
    tap_ok(cvia__log_set_level(NULL) == 0 && cvia__log_set_level("") == 0 &&
           cvia__log_level == CVIA_LOG_INFO,
           "cvia__log_set_level(NULL or \"\"): 0, level unchanged");
    cvia__log_set_level("warn");
}

static void test_log_subsys(void)
{
    char big[400];
    int good;

    good = cvia__log_set_subsys("shm,boot") == 0 &&
           cvia__log_mask == ((1u << CVIA_SUB_SHM) | (1u << CVIA_SUB_BOOT));
    tap_ok(good, "cvia__log_set_subsys(\"shm,boot\"): mask of shm and boot (0x%x)",
           cvia__log_mask);
    good = cvia__log_set_subsys("bogus") == -EINVAL &&
           cvia__log_mask == ((1u << CVIA_SUB_SHM) | (1u << CVIA_SUB_BOOT));
    good &= cvia__log_set_subsys("shm,bogus") == -EINVAL &&
            cvia__log_mask == ((1u << CVIA_SUB_SHM) | (1u << CVIA_SUB_BOOT));
    tap_ok(good, "cvia__log_set_subsys(\"bogus\"), (\"shm,bogus\"): -EINVAL, mask unchanged");
    good = cvia__log_set_subsys("CORE,Topo,conf,util") == 0 &&
           cvia__log_mask == ((1u << CVIA_SUB_CORE) | (1u << CVIA_SUB_TOPO) |
                              (1u << CVIA_SUB_CONF) | (1u << CVIA_SUB_UTIL));
    tap_ok(good, "cvia__log_set_subsys: names in any case, every subsystem name known");
    good = cvia__log_set_subsys("all") == 0 && cvia__log_mask == ~0u;
    cvia__log_set_subsys("shm");
    good &= cvia__log_set_subsys("") == 0 && cvia__log_mask == ~0u;
    cvia__log_set_subsys("shm");
    good &= cvia__log_set_subsys(NULL) == 0 && cvia__log_mask == ~0u;
    tap_ok(good, "cvia__log_set_subsys(\"all\", \"\", NULL): every subsystem");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cvia__log_set_subsys("shm");
    tap_ok(cvia__log_set_subsys(big) == -EINVAL && cvia__log_mask == 1u << CVIA_SUB_SHM,
           "cvia__log_set_subsys of a 399-char list: -EINVAL, mask unchanged");
    cvia__log_set_subsys("all");
}

static void test_log_output(void)
{
    const char *out;
    char longmsg[3000];
    size_t len;

    cvia__log_set_level("warn");
    cvia__log_set_subsys("all");
    cvia__log_set_rank(-1);
    capture_start();
    cvia_warn(SHM, "hello %d", 42);
    out = capture_end();
    tap_ok(!strcmp(out, "corevia warn shm: hello 42\n"),
           "a warning is one line \"corevia warn shm: hello 42\"");

    cvia__log_set_rank(3);
    capture_start();
    cvia_error(BOOT, "x");
    out = capture_end();
    tap_ok(!strcmp(out, "corevia[3] error boot: x\n"), "with a rank: \"corevia[3] error boot: x\"");
    cvia__log_set_rank(-1);

    capture_start();
    cvia__log_set_level("error");
    cvia_warn(SHM, "hidden");
    cvia_info(SHM, "hidden");
    cvia__log_set_level("warn");
    cvia_info(SHM, "hidden");
    cvia__log_set_subsys("boot");
    cvia_warn(SHM, "hidden");
    cvia_warn(BOOT, "shown");
    cvia_error(SHM, "errors ignore the subsystem mask");
    cvia__log_set_subsys("all");
    out = capture_end();
    tap_ok(!strcmp(out, "corevia warn boot: shown\ncorevia error shm: errors ignore the "
                        "subsystem mask\n"),
           "level and subsystem filters: only what is enabled is printed; errors always");
    if (strcmp(out, "corevia warn boot: shown\ncorevia error shm: errors ignore the "
                    "subsystem mask\n"))
        tap_diag("got: %s", out);

    memset(longmsg, 'z', sizeof(longmsg) - 1);
    longmsg[sizeof(longmsg) - 1] = '\0';
    capture_start();
    cvia_error(CORE, "%s", longmsg);
    out = capture_end();
    len = strlen(out);
    tap_ok(len > 100 && len <= 1024 && out[len - 1] == '\n' && !strchr(out, '\n')[1],
           "a 3000-char message is cut to one line of at most 1024 bytes (%zu)", len);

    errno = ENOSPC;
    capture_start();
    cvia_error(CORE, "keeps errno");
    capture_end();
    tap_ok(errno == ENOSPC, "logging preserves errno");
}

#define NTESTS 27

int main(void)
{
    printf("1..%d\n", NTESTS);
    fflush(stdout);
    test_codes();           /* 8 */
    test_errno_values();    /* 3 */
    test_unknown();         /* 3 */
    test_log_level();       /* 3 */
    test_log_subsys();      /* 5 */
    test_log_output();      /* 5 */
    if (tap_n != NTESTS)
        printf("# planned %d tests, ran %d\n", NTESTS, tap_n);
    return tap_failed || tap_n != NTESTS ? 1 : 0;
}
