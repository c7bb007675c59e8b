/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-affinity: processor affinity of communication processes and of the
 * interrupts of their devices (paper 003): topo | analyze | daemon | stream. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>
#include "aff.h"

/* One line on stderr: "cvia-affinity SUB: MESSAGE[TAIL]". */
static void say(const char *sub, const char *tail, const char *fmt, va_list ap)
{
    fprintf(stderr, "cvia-affinity%s%s: ", sub ? " " : "", sub ? sub : "");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "%s\n", tail);
}

void aff_err(const char *sub, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say(sub, "", fmt, ap);
    va_end(ap);
}

void aff_usage_error(const char *sub, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say(sub, " (try --help)", fmt, ap);
    va_end(ap);
    exit(2);
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: cvia-affinity COMMAND [OPTIONS]\n"
"Measure, decide and apply the processor affinity of communication processes\n"
"and of the interrupts of their network devices (corevia paper 003).\n"
"\n"
"Commands:\n"
"  topo      the static collector: packages, caches and the cores sharing them,\n"
"            NUMA nodes, network interfaces with their locality, interrupt\n"
"            lines and affinity; proposes an interrupt core per device and the\n"
"            process core groups around it; --apply sets it, --restore undoes\n"
"  analyze   the variable analyser: bounded streams of its own per candidate\n"
"            core, over kernel TCP or corevia's network provider; bandwidth, CPU\n"
"            of the process and of softirq work, interval between receive calls;\n"
"            writes a profile (JSON)\n"
"  daemon    the dynamic decision module: every period, measures the watched\n"
"            processes' communication intensity and the cores' idle capacity,\n"
"            pins high-intensity processes near their device's interrupt core\n"
"  stream    a bounded stream source or sink over kernel TCP, or a corevia job\n"
"            of two ranks (what analyze runs; for tests and the evaluation script)\n"
"\n"
"  -h, --help     this help; COMMAND --help for the options of a command\n"
"  -V, --version  corevia's version\n"
"\n"
"Every command prints text by default and JSON with --json.\n");
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd)
        aff_usage_error(NULL, "missing command: topo, analyze, daemon or stream");
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
        printf("cvia-affinity (corevia) %s\n", cvia_version());
        return 0;
    }
    if (!strcmp(cmd, "topo"))
        return aff_topo_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "analyze") || !strcmp(cmd, "analyse"))
        return aff_analyze_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "daemon"))
        return aff_daemon_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "stream"))
        return aff_stream_main(argc - 1, argv + 1);
    if (cmd[0] == '-')
        aff_usage_error(NULL, "unknown option %s", cmd);
    aff_usage_error(NULL, "unknown command '%s' (topo, analyze, daemon, stream)", cmd);
}
