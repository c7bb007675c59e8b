/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* An ocean-like multigrid stencil: SPLASH-2 ocean's core is a multigrid
 * solver of elliptic equations on a square grid; this is that solver on
 * its own, for the Poisson problem  u_xx + u_yy = f  on the unit square
 * with u = 0 on the border, f = -2 pi^2 sin(pi x) sin(pi y) (so the exact
 * solution is sin(pi x) sin(pi y)). V-cycles over levels of (n/2^l + 1)^2
 * points down to 5 x 5: red-black Gauss-Seidel smoothing, the
 * residual, full-weighting restriction, bilinear prolongation, each a
 * phase over row bands, one band per process, between barriers; levels
 * of 129 points a side or fewer (and the coarsest grid) are done by
 * process 0 alone, as multigrid codes agglomerate coarse levels. Every phase reads only
 * what the previous phase wrote (a red-black half-sweep reads the other
 * colour), so the result does not depend on the partition: the DSM run
 * must equal the sequential reference bit for bit. Norms are maxima,
 * gathered per process and combined in order.
 *
 *   ocean [small|paper] [-n N] [-c CYCLES] [-a POINTS] [-p P] [--check] [--stats[=json]]
 *
 * Defaults: N = 1024 (1025 x 1025 points, 9 levels), 10 V-cycles, levels
 * of 129 points a side or fewer on process 0 (-a 0: every level shared
 * out but the coarsest). --check
 * runs the sequential reference (the same phases on private memory) and
 * compares every point of the solution. Built with -DCVIA_PARMACS_NULL this
 * same source is the sequential program. */
#include "../common/app.h"

MAIN_ENV

#define MAXLEV 16
#define MAXP   64
#define NU     2            /* smoothing sweeps before and after */
#define COARSE 40           /* sweeps on the coarsest grid */

struct global {
    BARDEC(start)
    double rmax[MAXP];      /* each process's residual maximum */
    double hist[64];        /* the residual after each V-cycle */
    unsigned long t0, t1;
};

/* one level's arrays, shared on the DSM, private in the reference */
struct grids {
    double *u[MAXLEV], *f[MAXLEV], *r[MAXLEV];
};

static struct global *G;
static struct grids S;                 /* the shared ones */
static int N = 1024, cycles = 10, P, L;
static int agglom = 129;               /* -a: process 0 alone from this many points a side */

static int npts(int l) { return (N >> l) + 1; }     /* points per side */

#define AT(a, l, i, j) (a)[(size_t)(i) * npts(l) + (j)]

/* Interior rows [lo, hi) of level l that process p owns. */
static void band(int l, int p, int *lo, int *hi)
{
    int m = npts(l) - 2;   /* interior rows: 1 .. m */
    *lo = 1 + (int)((long)p * m / P);
    *hi = 1 + (int)((long)(p + 1) * m / P);
}

static void smooth(struct grids *g, int l, int colour, int lo, int hi)
{
    int n = npts(l);
    double h = 1.0 / (n - 1), h2 = h * h, *u = g->u[l], *f = g->f[l];

    for (int i = lo; i < hi; i++)
        for (int j = 2 - ((i + colour) & 1); j < n - 1; j += 2)
            AT(u, l, i, j) = 0.25 * (AT(u, l, i - 1, j) + AT(u, l, i + 1, j) +
                                     AT(u, l, i, j - 1) + AT(u, l, i, j + 1) -
                                     h2 * AT(f, l, i, j));
}

/* r = f - A u on rows [lo, hi); returns their largest |r|. */
static double residual(struct grids *g, int l, int lo, int hi)
{
    int n = npts(l);
    double h = 1.0 / (n - 1), ih2 = 1.0 / (h * h), m = 0.0;
    double *u = g->u[l], *f = g->f[l], *r = g->r[l];

    for (int i = lo; i < hi; i++)
        for (int j = 1; j < n - 1; j++) {
            double v = AT(f, l, i, j) -
                       (AT(u, l, i - 1, j) + AT(u, l, i + 1, j) + AT(u, l, i, j - 1) +
                        AT(u, l, i, j + 1) - 4.0 * AT(u, l, i, j)) * ih2;
            AT(r, l, i, j) = v;
            if (fabs(v) > m)
                m = fabs(v);
        }
    return m;
}

/* f and u of level l + 1 on its rows [lo, hi): full weighting of r_l, 0. */
static void restrict_to(struct grids *g, int l, int lo, int hi)
{
    int nc = npts(l + 1);
    double *r = g->r[l], *fc = g->f[l + 1], *uc = g->u[l + 1];

    for (int I = lo; I < hi; I++)
        for (int J = 1; J < nc - 1; J++) {
            int i = 2 * I, j = 2 * J;
            AT(fc, l + 1, I, J) =
                (4.0 * AT(r, l, i, j) +
                 2.0 * (AT(r, l, i - 1, j) + AT(r, l, i + 1, j) + AT(r, l, i, j - 1) +
                        AT(r, l, i, j + 1)) +
                 AT(r, l, i - 1, j - 1) + AT(r, l, i - 1, j + 1) + AT(r, l, i + 1, j - 1) +
                 AT(r, l, i + 1, j + 1)) / 16.0;
            AT(uc, l + 1, I, J) = 0.0;
        }
}

/* u_l += the bilinear interpolation of u_{l+1}, on rows [lo, hi). */
static void prolong(struct grids *g, int l, int lo, int hi)
{
    int n = npts(l);
    double *u = g->u[l], *uc = g->u[l + 1];

    for (int i = lo; i < hi; i++)
        for (int j = 1; j < n - 1; j++) {
            int I = i / 2, J = j / 2;
            double v;
            if (!(i & 1) && !(j & 1))
                v = AT(uc, l + 1, I, J);
            else if (!(i & 1))
                v = 0.5 * (AT(uc, l + 1, I, J) + AT(uc, l + 1, I, J + 1));
            else if (!(j & 1))
                v = 0.5 * (AT(uc, l + 1, I, J) + AT(uc, l + 1, I + 1, J));
            else
                v = 0.25 * (AT(uc, l + 1, I, J) + AT(uc, l + 1, I, J + 1) +
                            AT(uc, l + 1, I + 1, J) + AT(uc, l + 1, I + 1, J + 1));
            AT(u, l, i, j) += v;
        }
}

/* The right-hand side and a zero start on rows [lo, hi) of the finest level
 * (the border rows stay as allocated: zero). */
static void init_rows(struct grids *g, int lo, int hi)
{
    int n = npts(0);
    double h = 1.0 / (n - 1), pi = 3.14159265358979323846;

    for (int i = lo; i < hi; i++)
        for (int j = 1; j < n - 1; j++) {
            AT(g->f[0], 0, i, j) = -2.0 * pi * pi * sin(pi * i * h) * sin(pi * j * h);
            AT(g->u[0], 0, i, j) = 0.0;
        }
}

/* Levels from Lp down are small: process 0 does them alone (a barrier
 * costs more than their work), the others wait at the next barrier. */
static int Lp;

/* Whether process p works on level l's rows, and which: its band on the
 * levels shared out, all of them for process 0 below. */
static int mine(int l, int p, int *lo, int *hi)
{
    if (l < Lp) {
        band(l, p, lo, hi);
        return 1;
    }
    *lo = 1;
    *hi = npts(l) - 1;
    return p == 0;
}

/* One V-cycle, as process p of P; @p sync 0 (the reference, with P = 1):
 * no barriers. */
static void vcycle(struct grids *g, int p, int sync)
{
    int lo, hi;

#define PHASE_END(l) do { if (sync && (l) < Lp) BARRIER(G->start, P); } while (0)
    for (int l = 0; l < L; l++) {
        int on = mine(l, p, &lo, &hi);
        for (int s = 0; s < NU; s++)
            for (int c = 0; c < 2; c++) {
                if (on)
                    smooth(g, l, c, lo, hi);
                PHASE_END(l);
            }
        if (on)
            residual(g, l, lo, hi);
        PHASE_END(l);
        if (mine(l + 1, p, &lo, &hi))
            restrict_to(g, l, lo, hi);
        PHASE_END(l);
    }
    if (p == 0) {
        int m = npts(L) - 1;
        for (int s = 0; s < COARSE; s++)
            for (int c = 0; c < 2; c++)
                smooth(g, L, c, 1, m);
    }
    for (int l = L - 1; l >= 0; l--) {
        int on = mine(l, p, &lo, &hi);
        if (l == Lp - 1)
            PHASE_END(l);          /* process 0 finished the levels below */
        if (on)
            prolong(g, l, lo, hi);
        PHASE_END(l);
        for (int s = 0; s < NU; s++)
            for (int c = 0; c < 2; c++) {
                if (on)
                    smooth(g, l, c, lo, hi);
                PHASE_END(l);
            }
    }
#undef PHASE_END
}

static void slave(void)
{
    int p = CVIA_PARMACS_ME(), lo, hi;

    band(0, p, &lo, &hi);
    init_rows(&S, lo, hi);
    BARRIER(G->start, P);
    if (p == 0)
        CLOCK(G->t0);
    for (int k = 0; k < cycles; k++) {
        vcycle(&S, p, 1);
        G->rmax[p] = residual(&S, 0, lo, hi);
        BARRIER(G->start, P);
        if (p == 0) {
            double m = 0.0;
            for (int q = 0; q < P; q++)
                m = G->rmax[q] > m ? G->rmax[q] : m;
            G->hist[k] = m;
        }
    }
    if (p == 0)
        CLOCK(G->t1);
}

static void free_grids(struct grids *g)
{
    for (int l = 0; l <= L; l++) {
        free(g->u[l]);
        free(g->f[l]);
        free(g->r[l]);
    }
}

/* The sequential reference: the same phases on private arrays. */
static int check(void)
{
    struct grids g = { { 0 }, { 0 }, { 0 } };
    size_t bad = 0;
    double hist[64];

    for (int l = 0; l <= L; l++) {
        size_t n = (size_t)npts(l) * npts(l);
        g.u[l] = calloc(n, sizeof(double));
        g.f[l] = calloc(n, sizeof(double));
        g.r[l] = calloc(n, sizeof(double));
        if (!g.u[l] || !g.f[l] || !g.r[l]) {
            free_grids(&g);
            return -1;
        }
    }
    init_rows(&g, 1, npts(0) - 1);
    for (int k = 0; k < cycles; k++) {
        int sp = P;
        P = 1;                     /* one band: the whole grid */
        vcycle(&g, 0, 0);
        hist[k] = residual(&g, 0, 1, npts(0) - 1);
        P = sp;
    }
    for (size_t i = 0; i < (size_t)npts(0) * npts(0); i++)
        if (memcmp(&g.u[0][i], &S.u[0][i], sizeof(double)))
            if (bad++ < 5)
                fprintf(stderr, "ocean: point %zu: %.17g/%.17g (reference/dsm)\n", i,
                        g.u[0][i], S.u[0][i]);
    for (int k = 0; k < cycles; k++)
        if (memcmp(&hist[k], &G->hist[k], sizeof(double)) && bad++ < 5)
            fprintf(stderr, "ocean: residual after cycle %d: %g/%g (reference/dsm)\n", k,
                    hist[k], G->hist[k]);
    free_grids(&g);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct app_common c = { 0 };
    unsigned long t_start, t_end;
    char size[64];
    int first;

    if (app_preset_small("ocean", argc, argv, &first)) {
        N = 512, cycles = 3;          /* two levels shared out, six by process 0 */
        c.check = 1;
    }
    for (int i = first; i < argc; i++) {
        if (app_common_flag(&c, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            N = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            cycles = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-a") && i + 1 < argc)
            agglom = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: ocean [small|paper] [-n N] [-c CYCLES] [-a POINTS] [-p P] "
                    "[--check] [--stats[=json]]\n");
            return 2;
        }
    }
    if (N < 8 || (N & (N - 1)) || N > (1 << 14) || cycles < 1 || cycles > 64 || agglom < 0) {
        fprintf(stderr, "ocean: need N a power of two in 8..16384, 1 <= CYCLES <= 64, "
                "POINTS >= 0\n");
        return 2;
    }
    for (L = 0; (N >> L) > 4; L++)
        ;                              /* the coarsest grid: 5 x 5 points */
    for (Lp = 1; Lp < L && npts(Lp) > agglom; Lp++)
        ;                              /* levels of agglom points or less: process 0 */
    MAIN_INITENV(, 0);
    P = app_procs(&c, "ocean");
    if (P > MAXP || P > N / 2) {
        fprintf(stderr, "ocean: %d processes: at most %d for N = %d\n", P,
                MAXP < N / 2 ? MAXP : N / 2, N);
        return 2;
    }
    CLOCK(t_start);
    G = G_MALLOC(sizeof(*G));
    for (int l = 0; l <= L; l++) {
        size_t bytes = (size_t)npts(l) * npts(l) * sizeof(double);
        /* homes where the writes are: the levels shared out at the rank
         * that writes each unit first (its band: the byte blocks of
         * CVIA_DSM_HOME_BLOCK miss the bands' row boundaries), the ones
         * process 0 does alone at process 0 (cut in blocks, half of each
         * was homed at another rank: a twin and a diff per unit there in
         * each phase; 346 twins on 2 ranks at the small size, now 74) */
#define LEVEL_HOME(l) ((l) < Lp ? CVIA_DSM_HOME_FIRST_TOUCH : 0)   /* the DSM's only */
        S.u[l] = G_MALLOC_HOME(bytes, LEVEL_HOME(l));
        S.f[l] = G_MALLOC_HOME(bytes, LEVEL_HOME(l));
        S.r[l] = G_MALLOC_HOME(bytes, LEVEL_HOME(l));
#undef LEVEL_HOME
    }
    BARINIT(G->start, P);
    if (!c.quiet)
        printf("ocean: %d x %d, %d levels, %d V-cycles, %d processes\n", N + 1, N + 1, L + 1,
               cycles, P);
    for (int i = 1; i < P; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(P - 1);
    CLOCK(t_end);
    if (!c.quiet) {
        double err = 0.0, h = 1.0 / N, pi = 3.14159265358979323846;
        for (int i = 0; i <= N; i++)
            for (int j = 0; j <= N; j++) {
                double e = fabs(AT(S.u[0], 0, i, j) - sin(pi * i * h) * sin(pi * j * h));
                err = e > err ? e : err;
            }
        printf("ocean: residual %.3e after the first V-cycle, %.3e after the last; "
               "error %.3e\n", G->hist[0], G->hist[cycles - 1], err);
    }
    snprintf(size, sizeof(size), "%dx%d", N + 1, cycles);
    if (app_finish(&c, check, "ocean", size, P, (double)(G->t1 - G->t0) * 1e-6,
                   (double)(t_end - t_start) * 1e-6)) {
        fprintf(stderr, "ocean: the result differs from the sequential reference\n");
        exit(1);
    }
    MAIN_END;
}
