/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-strerror CODE...: name and describe corevia error codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>

int main(int argc, char **argv)
{
    int rc = 0;

    if (argc < 2) {
        fprintf(stderr, "cvia-strerror: missing error code (try --help)\n");
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("Usage: cvia-strerror CODE...\n"
               "Print the name and meaning of corevia error codes (the sign is "
               "ignored: -257 and 257 are CVIA_ENOPEER).\n"
               "  -l, --list     list corevia's own codes\n"
               "  -h, --help     this help\n"
               "  -V, --version  print the version and exit\n");
        return 0;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        printf("cvia-strerror (corevia) %s\n", cvia_version());
        return 0;
    }
    if (!strcmp(argv[1], "-l") || !strcmp(argv[1], "--list")) {
        for (int e = CVIA_ERRNO_BASE; e < CVIA_ERRNO_LAST; e++)
            printf("%d\t%s\t%s\n", e, cvia_err_name(e), cvia_strerror(e));
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        char *end;
        long v = strtol(argv[i], &end, 0);
        if (!*argv[i] || *end || v < -100000 || v > 100000) {
            fprintf(stderr, "cvia-strerror: not an error code: '%s' (try --help)\n", argv[i]);
            rc = 2;
            continue;
        }
        printf("%ld\t%s\t%s\n", v, cvia_err_name((int)v), cvia_strerror((int)v));
    }
    return rc;
}
