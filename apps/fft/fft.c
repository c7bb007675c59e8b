/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* SPLASH-2-style 1-D complex FFT, six-step (Bailey): N = 2^m points seen
 * as a sqrt(N) x sqrt(N) matrix; transpose, FFT the rows, multiply by the
 * twiddle factors, transpose, FFT the rows, transpose. Each process owns a
 * band of rows of each matrix (its home); a transpose reads every other
 * process's band: the communication-bound phase, all page fetches.
 *
 *   fft [small|paper] [-m M] [-p P] [--check] [--stats[=json]]
 *
 * Default m = 20 (1 Mi points, 16 MiB per matrix); the input is a fixed
 * function of the index. --check computes the same transform with a plain
 * iterative radix-2 FFT on private memory and compares (relative error
 * below 1e-9). */
#include "../common/app.h"

MAIN_ENV

typedef struct { double re, im; } cplx;

struct global {
    BARDEC(start)
    unsigned long t0, t1;
};

static struct global *G;
static cplx *x, *trans, *roots, *twid;   /* shared */
static int m = 20, P;
static long N, rootN;

static void band(int p, long *lo, long *hi)
{
    *lo = p * rootN / P;
    *hi = (p + 1) * rootN / P;
}

static cplx input(long i)
{
    cplx c = { sin(0.001 * (double)i) + 0.5 * cos(0.37 * (double)(i % 977)),
               cos(0.002 * (double)i) - 0.25 * sin(0.11 * (double)(i % 1013)) };
    return c;
}

static cplx cmul(cplx a, cplx b)
{
    cplx c = { a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re };
    return c;
}

/* In-place iterative radix-2 FFT of length n (a power of two) with roots
 * w[k] = exp(-2 pi i k / n), k < n / 2. */
static void fft_row(cplx *a, long n, const cplx *w, long wstride)
{
    for (long i = 1, j = 0; i < n; i++) {
        long bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            cplx t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (long len = 2; len <= n; len <<= 1) {
        long half = len >> 1, step = n / len;
        for (long i = 0; i < n; i += len)
            for (long k = 0; k < half; k++) {
                cplx t = cmul(a[i + k + half], w[k * step * wstride]);
                cplx u = a[i + k];
                a[i + k].re = u.re + t.re;
                a[i + k].im = u.im + t.im;
                a[i + k + half].re = u.re - t.re;
                a[i + k + half].im = u.im - t.im;
            }
    }
}

/* dst[r][c] = src[c][r] for the rows r of [lo, hi), in blocks so that a
 * fetched unit of src is used for several rows before moving on. */
static void transpose(cplx *dst, const cplx *src, long lo, long hi)
{
    const long B = 32;
    for (long cb = 0; cb < rootN; cb += B)
        for (long r = lo; r < hi; r++)
            for (long c = cb; c < cb + B && c < rootN; c++)
                dst[r * rootN + c] = src[c * rootN + r];
}

static void slave(void)
{
    int p = CVIA_PARMACS_ME();
    long lo, hi;

    band(p, &lo, &hi);
    /* each process makes its share of the input, the roots and twiddles */
    for (long i = lo * rootN; i < hi * rootN; i++) {
        long r = i / rootN, c = i % rootN;
        x[i] = input(i);
        twid[i].re = cos(-2.0 * M_PI * (double)(r * c) / (double)N);
        twid[i].im = sin(-2.0 * M_PI * (double)(r * c) / (double)N);
    }
    if (p == 0)
        for (long k = 0; k < rootN / 2; k++) {
            roots[k].re = cos(-2.0 * M_PI * (double)k / (double)rootN);
            roots[k].im = sin(-2.0 * M_PI * (double)k / (double)rootN);
        }
    BARRIER(G->start, P);
    if (p == 0)
        CLOCK(G->t0);
    transpose(trans, x, lo, hi);                 /* 1 */
    BARRIER(G->start, P);
    for (long r = lo; r < hi; r++) {             /* 2, 3 */
        fft_row(trans + r * rootN, rootN, roots, 1);
        for (long c = 0; c < rootN; c++)
            trans[r * rootN + c] = cmul(trans[r * rootN + c], twid[r * rootN + c]);
    }
    BARRIER(G->start, P);
    transpose(x, trans, lo, hi);                 /* 4 */
    BARRIER(G->start, P);
    for (long r = lo; r < hi; r++)               /* 5 */
        fft_row(x + r * rootN, rootN, roots, 1);
    BARRIER(G->start, P);
    transpose(trans, x, lo, hi);                 /* 6: the result, in order */
    BARRIER(G->start, P);
    if (p == 0)
        CLOCK(G->t1);
}

static int check(void)
{
    cplx *a = malloc((size_t)N * sizeof(cplx)), *w = malloc((size_t)N / 2 * sizeof(cplx));
    double err = 0, mag = 0;

    if (!a || !w)
        return -1;
    for (long i = 0; i < N; i++)
        a[i] = input(i);
    for (long k = 0; k < N / 2; k++) {
        w[k].re = cos(-2.0 * M_PI * (double)k / (double)N);
        w[k].im = sin(-2.0 * M_PI * (double)k / (double)N);
    }
    fft_row(a, N, w, 1);
    for (long i = 0; i < N; i++) {
        double dr = a[i].re - trans[i].re, di = a[i].im - trans[i].im;
        double e = sqrt(dr * dr + di * di), g = sqrt(a[i].re * a[i].re + a[i].im * a[i].im);
        if (e > err)
            err = e;
        if (g > mag)
            mag = g;
    }
    free(a);
    free(w);
    if (err > 1e-9 * mag) {
        fprintf(stderr, "fft: max error %g against a largest value %g\n", err, mag);
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

    if (app_preset_small("fft", argc, argv, &first)) {
        m = 12;
        c.check = 1;
    }
    for (int i = first; i < argc; i++) {
        if (app_common_flag(&c, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            m = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: fft [small|paper] [-m M] [-p P] [--check] "
                    "[--stats[=json]]\n");
            return 2;
        }
    }
    if (m < 4 || m > 28 || m % 2) {
        fprintf(stderr, "fft: M must be even, 4 .. 28\n");
        return 2;
    }
    N = 1L << m;
    rootN = 1L << (m / 2);
    MAIN_INITENV(, 0);
    P = app_procs(&c, "fft");
    if (P > rootN) {
        fprintf(stderr, "fft: more processes (%d) than rows (%ld)\n", P, rootN);
        return 2;
    }
    CLOCK(t_start);
    G = G_MALLOC(sizeof(*G));
    x = G_MALLOC_HOME((size_t)N * sizeof(cplx), CVIA_DSM_HOME_BLOCK);
    trans = G_MALLOC_HOME((size_t)N * sizeof(cplx), CVIA_DSM_HOME_BLOCK);
    twid = G_MALLOC_HOME((size_t)N * sizeof(cplx), CVIA_DSM_HOME_BLOCK);
    roots = G_MALLOC((size_t)rootN / 2 * sizeof(cplx));
    BARINIT(G->start, P);
    if (!c.quiet)
        printf("fft: %ld points (m = %d), %d processes\n", N, m, P);
    for (int i = 1; i < P; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(P - 1);
    CLOCK(t_end);
    snprintf(size, sizeof(size), "m%d", m);
    if (app_finish(&c, check, "fft", size, P, (double)(G->t1 - G->t0) * 1e-6,
                   (double)(t_end - t_start) * 1e-6))
        exit(1);
    MAIN_END;
}
