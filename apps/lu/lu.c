/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* SPLASH-2-style blocked LU factorization (contiguous blocks, no pivoting)
 * of an n x n diagonally dominant matrix. Blocks of B x B doubles are
 * stored contiguously, each homed at the process that owns it in a 2-D
 * scatter (cyclic) distribution, as SPLASH's "contiguous blocks" LU. Step
 * k: the owner factors the diagonal block; the owners of the blocks in
 * row and column k update them with it; every owner of an interior block
 * subtracts the product of its row and column perimeter blocks. Barriers
 * between the three phases.
 *
 *   lu [small|paper] [-n N] [-b B] [-p P] [--check] [--stats[=json]]
 *
 * Default n = 1024, B = 32 (8 KiB blocks). --check rebuilds L * U on
 * private memory and compares it with the original matrix (the residual,
 * relative to the largest entry, below 1e-9). */
#include "../common/app.h"

MAIN_ENV

struct global {
    BARDEC(start)
    unsigned long t0, t1;
};

static struct global *G;
static double **blk;          /* private table of the shared blocks' addresses */
static int n = 1024, B = 32, nb, P, pr, pc;

static double *block(int i, int j)
{
    return blk[(size_t)i * nb + j];
}

static int owner(int i, int j)
{
    return (i % pr) * pc + (j % pc);
}

static double a_init(int i, int j)
{
    /* a fixed pseudo-random matrix, strongly diagonal: no pivoting needed */
    unsigned long h = (unsigned long)i * 2654435761ul ^ (unsigned long)j * 40503ul;
    h ^= h >> 13;
    h *= 0x5bd1e995ul;
    h ^= h >> 15;
    double v = (double)(h % 20000) / 10000.0 - 1.0;
    return i == j ? v + 2.0 * n : v;
}

/* Factor a diagonal block in place: A = L U, L unit lower. */
static void lu_diag(double *a)
{
    for (int k = 0; k < B; k++)
        for (int i = k + 1; i < B; i++) {
            a[i * B + k] /= a[k * B + k];
            double l = a[i * B + k];
            for (int j = k + 1; j < B; j++)
                a[i * B + j] -= l * a[k * B + j];
        }
}

/* A row block: A := L^-1 A, with L the unit lower part of @d. */
static void lu_row(double *a, const double *d)
{
    for (int k = 0; k < B; k++)
        for (int i = k + 1; i < B; i++) {
            double l = d[i * B + k];
            for (int j = 0; j < B; j++)
                a[i * B + j] -= l * a[k * B + j];
        }
}

/* A column block: A := A U^-1, with U the upper part of @d. */
static void lu_col(double *a, const double *d)
{
    for (int i = 0; i < B; i++)
        for (int k = 0; k < B; k++) {
            a[i * B + k] /= d[k * B + k];
            double v = a[i * B + k];
            for (int j = k + 1; j < B; j++)
                a[i * B + j] -= v * d[k * B + j];
        }
}

/* A := A - L * U for an interior block. */
static void lu_inner(double *a, const double *l, const double *u)
{
    for (int i = 0; i < B; i++)
        for (int k = 0; k < B; k++) {
            double v = l[i * B + k];
            for (int j = 0; j < B; j++)
                a[i * B + j] -= v * u[k * B + j];
        }
}

static void slave(void)
{
    int p = CVIA_PARMACS_ME();

    for (int bi = 0; bi < nb; bi++)           /* owners fill their blocks */
        for (int bj = 0; bj < nb; bj++)
            if (owner(bi, bj) == p)
                for (int i = 0; i < B; i++)
                    for (int j = 0; j < B; j++)
                        block(bi, bj)[i * B + j] = a_init(bi * B + i, bj * B + j);
    BARRIER(G->start, P);
    if (p == 0)
        CLOCK(G->t0);
    for (int k = 0; k < nb; k++) {
        if (owner(k, k) == p)
            lu_diag(block(k, k));
        BARRIER(G->start, P);
        for (int j = k + 1; j < nb; j++) {
            if (owner(k, j) == p)
                lu_row(block(k, j), block(k, k));
            if (owner(j, k) == p)
                lu_col(block(j, k), block(k, k));
        }
        BARRIER(G->start, P);
        for (int i = k + 1; i < nb; i++)
            for (int j = k + 1; j < nb; j++)
                if (owner(i, j) == p)
                    lu_inner(block(i, j), block(i, k), block(k, j));
        BARRIER(G->start, P);
    }
    if (p == 0)
        CLOCK(G->t1);
}

static int check(void)
{
    double *L = calloc((size_t)n * n, sizeof(double)), *U = calloc((size_t)n * n, sizeof(double));
    double err = 0, mag = 0;

    if (!L || !U)
        return -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double v = block(i / B, j / B)[(i % B) * B + j % B];
            if (i > j)
                L[(size_t)i * n + j] = v;
            else
                U[(size_t)i * n + j] = v;
            if (i == j)
                L[(size_t)i * n + j] = 1.0;
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            int kmax = i < j ? i : j;
            for (int k = 0; k <= kmax; k++)
                s += L[(size_t)i * n + k] * U[(size_t)k * n + j];
            double a = a_init(i, j), e = fabs(s - a);
            if (e > err)
                err = e;
            if (fabs(a) > mag)
                mag = fabs(a);
        }
    free(L);
    free(U);
    if (err > 1e-9 * mag) {
        fprintf(stderr, "lu: max |LU - A| = %g against a largest entry %g\n", err, mag);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct app_common c = { 0 };
    unsigned long t_start, t_end;
    char size[32];
    int first;

    if (app_preset_small("lu", argc, argv, &first)) {
        n = 192;
        B = 16;
        c.check = 1;
    }
    for (int i = first; i < argc; i++) {
        if (app_common_flag(&c, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            B = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: lu [small|paper] [-n N] [-b B] [-p P] [--check] "
                    "[--stats[=json]]\n");
            return 2;
        }
    }
    if (B < 2 || n < B || n % B) {
        fprintf(stderr, "lu: need B >= 2 dividing N\n");
        return 2;
    }
    nb = n / B;
    MAIN_INITENV(, 0);
    P = app_procs(&c, "lu");
    for (pr = 1; pr * pr <= P; pr++)      /* the squarest pr x pc grid */
        ;
    for (pr--; P % pr; pr--)
        ;
    pc = P / pr;
    CLOCK(t_start);
    G = G_MALLOC(sizeof(*G));
    blk = malloc((size_t)nb * nb * sizeof(*blk));
    for (int bi = 0; bi < nb; bi++)
        for (int bj = 0; bj < nb; bj++)
            blk[(size_t)bi * nb + bj] = G_MALLOC_HOME((size_t)B * B * sizeof(double),
                                                      owner(bi, bj));
    BARINIT(G->start, P);
    if (!c.quiet)
        printf("lu: %d x %d, blocks of %d x %d, %d processes (%d x %d)\n", n, n, B, B, P,
               pr, pc);
    for (int i = 1; i < P; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(P - 1);
    CLOCK(t_end);
    snprintf(size, sizeof(size), "%dx%d/b%d", n, n, B);
    if (app_finish(&c, check, "lu", size, P, (double)(G->t1 - G->t0) * 1e-6,
                   (double)(t_end - t_start) * 1e-6))
        exit(1);
    MAIN_END;
}
