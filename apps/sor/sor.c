/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Rice SOR (the TreadMarks benchmark of paper 004): red-black successive
 * over-relaxation on an M x N grid of floats, red and black points in two
 * arrays of (M + 2) rows of N / 2, so that a row of one color is 4 KiB at
 * N = 2048 (one unit). Each process owns a band of rows; the arrays' homes
 * are placed in the same bands, so a process fetches only its neighbours'
 * boundary rows, once per phase. The top edge is held at 1, the rest of
 * the border at 0.
 *
 *   sor [small|paper] [-m M] [-n N] [-i ITER] [-p P] [--check] [--stats[=json]]
 *
 * Defaults: 2048 x 2048, 100 iterations (the paper's table 1). --check runs
 * the sequential reference (same arithmetic, private memory) and compares
 * every point bit for bit. Built with -DCVIA_PARMACS_NULL this same source
 * is the sequential program. */
#include "../common/app.h"

MAIN_ENV

struct global {
    BARDEC(start)
    unsigned long t0, t1;
};

static struct global *G;
static float *red, *black;      /* [M + 2][W] each, in shared memory */
static int M = 2048, N = 2048, W, iters = 100, P;

#define R(i, k) red[(size_t)(i) * W + (k)]
#define B(i, k) black[(size_t)(i) * W + (k)]

/* One process's rows: [lo, hi). */
static void band(int p, int *lo, int *hi)
{
    *lo = 1 + (int)((long)p * M / P);
    *hi = 1 + (int)((long)(p + 1) * M / P);
}

static void sweep_red(float *r, const float *b, int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        float *ri = r + (size_t)i * W;
        const float *up = b + (size_t)(i - 1) * W, *dn = b + (size_t)(i + 1) * W,
                    *bi = b + (size_t)i * W;
        if (i & 1)
            for (int k = 0; k < W - 1; k++)
                ri[k] = (up[k] + dn[k] + bi[k] + bi[k + 1]) / 4.0f;
        else
            for (int k = 1; k < W; k++)
                ri[k] = (up[k] + dn[k] + bi[k - 1] + bi[k]) / 4.0f;
    }
}

static void sweep_black(float *b, const float *r, int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        float *bi = b + (size_t)i * W;
        const float *up = r + (size_t)(i - 1) * W, *dn = r + (size_t)(i + 1) * W,
                    *ri = r + (size_t)i * W;
        if (i & 1)
            for (int k = 1; k < W; k++)
                bi[k] = (up[k] + dn[k] + ri[k - 1] + ri[k]) / 4.0f;
        else
            for (int k = 0; k < W - 1; k++)
                bi[k] = (up[k] + dn[k] + ri[k] + ri[k + 1]) / 4.0f;
    }
}

static void init_rows(float *r, float *b, int lo, int hi)
{
    for (int i = lo; i < hi; i++)
        for (int k = 0; k < W; k++) {
            r[(size_t)i * W + k] = i == 0 ? 1.0f : 0.0f;
            b[(size_t)i * W + k] = i == 0 ? 1.0f : 0.0f;
        }
}

static void slave(void)
{
    int p = CVIA_PARMACS_ME(), lo, hi;

    band(p, &lo, &hi);
    /* each process initializes its own rows (and the borders next to them) */
    init_rows(red, black, p == 0 ? 0 : lo, p == P - 1 ? M + 2 : hi);
    BARRIER(G->start, P);
    if (p == 0)
        CLOCK(G->t0);
    for (int it = 0; it < iters; it++) {
        sweep_red(red, black, lo, hi);
        BARRIER(G->start, P);
        sweep_black(black, red, lo, hi);
        BARRIER(G->start, P);
    }
    if (p == 0)
        CLOCK(G->t1);
}

/* The sequential reference: the same sweeps on private arrays. */
static int check(void)
{
    size_t n = (size_t)(M + 2) * W;
    float *r = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    size_t bad = 0;

    if (!r || !b)
        return -1;
    init_rows(r, b, 0, M + 2);
    for (int it = 0; it < iters; it++) {
        sweep_red(r, b, 1, M + 1);
        sweep_black(b, r, 1, M + 1);
    }
    for (size_t i = 0; i < n; i++)
        if (memcmp(&r[i], &red[i], sizeof(float)) || memcmp(&b[i], &black[i], sizeof(float)))
            if (bad++ < 5)
                fprintf(stderr, "sor: point %zu: red %g/%g black %g/%g (reference/dsm)\n",
                        i, r[i], red[i], b[i], black[i]);
    free(r);
    free(b);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct app_common c = { 0 };
    unsigned long t_start, t_end;
    char size[64];
    int first;

    if (app_preset_small("sor", argc, argv, &first)) {
        M = 300, N = 256, iters = 10;
        c.check = 1;
    }
    for (int i = first; i < argc; i++) {
        if (app_common_flag(&c, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "-m") && i + 1 < argc)
            M = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            N = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: sor [small|paper] [-m M] [-n N] [-i ITER] [-p P] "
                    "[--check] [--stats[=json]]\n");
            return 2;
        }
    }
    if (M < 2 || N < 4 || N % 2 || iters < 0) {
        fprintf(stderr, "sor: need M >= 2, an even N >= 4, ITER >= 0\n");
        return 2;
    }
    W = N / 2;
    MAIN_INITENV(, 0);
    P = app_procs(&c, "sor");
    if (P > M) {
        fprintf(stderr, "sor: more processes (%d) than rows (%d)\n", P, M);
        return 2;
    }
    CLOCK(t_start);
    G = G_MALLOC(sizeof(*G));
    red = G_MALLOC_HOME((size_t)(M + 2) * W * sizeof(float), CVIA_DSM_HOME_BLOCK);
    black = G_MALLOC_HOME((size_t)(M + 2) * W * sizeof(float), CVIA_DSM_HOME_BLOCK);
    BARINIT(G->start, P);
    if (!c.quiet)
        printf("sor: %d x %d, %d iterations, %d processes\n", M, N, iters, P);
    for (int i = 1; i < P; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(P - 1);
    CLOCK(t_end);
    snprintf(size, sizeof(size), "%dx%dx%d", M, N, iters);
    if (app_finish(&c, check, "sor", size, P, (double)(G->t1 - G->t0) * 1e-6,
                   (double)(t_end - t_start) * 1e-6)) {
        fprintf(stderr, "sor: the result differs from the sequential reference\n");
        exit(1);
    }
    MAIN_END;
}
