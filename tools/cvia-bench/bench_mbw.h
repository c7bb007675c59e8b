/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia-bench mbw: N concurrent pairs (osu_mbw_mr), pairs placed from the
 * topology (bench_mbw.c). Private to the tool. */
#ifndef CVIA_BENCH_MBW_H
#define CVIA_BENCH_MBW_H

/* 1 if this command line is mbw's (the "mbw" benchmark), or asks for
 * --help (mbw appends its part to the help). */
int bench_mbw_claims(int argc, char **argv);

/* The whole of cvia-bench for such a command line: the exit status. */
int bench_mbw_main(int argc, char **argv);

#endif
