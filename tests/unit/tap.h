/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A few lines of TAP for the unit tests (one binary per module), and a
 * capture of stderr so tests can check what the library logs. Header-only:
 * each test program includes it once. */
#ifndef COREVIA_TESTS_TAP_H
#define COREVIA_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int tap_n, tap_failed;

static int tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;

    printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!cond)
        tap_failed++;
    return cond;
}

/* A diagnostic line, "# ...", for the first failure inside a loop. */
static void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void tap_diag(const char *fmt, ...)
{
    va_list ap;

    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* Redirect stderr into a temporary file until capture_end(), which returns
 * what was written (truncated to 16 KiB). Not nestable. */
static char cap_text[16384];
static FILE *cap_file;
static int cap_saved = -1;

__attribute__((unused)) static void capture_start(void)
{
    fflush(stderr);
    cap_file = tmpfile();
    cap_saved = dup(STDERR_FILENO);
    if (!cap_file || cap_saved < 0 || dup2(fileno(cap_file), STDERR_FILENO) < 0) {
        printf("Bail out! cannot redirect stderr\n");
        exit(1);
    }
}

__attribute__((unused)) static const char *capture_end(void)
{
    size_t n;

    fflush(stderr);
    dup2(cap_saved, STDERR_FILENO);
    close(cap_saved);
    rewind(cap_file);
    n = fread(cap_text, 1, sizeof(cap_text) - 1, cap_file);
    cap_text[n] = '\0';
    fclose(cap_file);
    return cap_text;
}

#endif
