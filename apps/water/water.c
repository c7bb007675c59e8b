/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* A water-nsquared-like molecular dynamics (the irregular application):
 * nmol particles in a periodic box under a Lennard-Jones potential with
 * the minimum-image convention, O(n^2) pairs each counted once (the
 * half-shell of SPLASH-2 water-nsquared: molecule i with the next n/2).
 * Each process owns a contiguous range of molecules, accumulates the
 * forces of its pairs privately, then adds them into the shared force
 * array block by block, each block of molecules under its own lock
 * (ALOCK), as water-nsquared does per molecule: many writers to the same
 * units under different locks, merged at the homes by diffs. The
 * potential energy is summed under one lock; the positions advance with a
 * leapfrog step between barriers.
 *
 *   water [small|paper] [-n NMOL] [-s STEPS] [-p P] [--check] [--stats[=json]]
 *
 * Default 1728 molecules, 5 steps (the paper's table 1). --check runs the
 * same simulation on private memory and compares positions and energy
 * (relative 1e-9: only the order of the force sums differs). */
#include "../common/app.h"

MAIN_ENV

#define MB 32                 /* molecules per force lock */
#define MAXBLK 4096           /* force locks: up to MAXBLK * MB molecules */

struct global {
    BARDEC(start)
    LOCKDEC(elock)
    ALOCKDEC(flock, MAXBLK)
    double epot[64];          /* potential energy of each step */
    unsigned long t0, t1;
};

static struct global *G;
static double *pos, *vel, *frc;       /* shared, [nmol][3] */
static int nmol = 1728, steps = 5, P, nblk;
static double L, dt = 0.0005;

static void range(int p, int *lo, int *hi)
{
    *lo = (int)((long)p * nmol / P);
    *hi = (int)((long)(p + 1) * nmol / P);
}

static void init_state(double *x, double *v, int lo, int hi)
{
    int side = 1;
    while (side * side * side < nmol)
        side++;
    double a = L / side;
    for (int i = lo; i < hi; i++) {
        int ix = i % side, iy = (i / side) % side, iz = i / (side * side);
        x[3 * i + 0] = (ix + 0.5) * a + 0.05 * a * sin(1.3 * i);
        x[3 * i + 1] = (iy + 0.5) * a + 0.05 * a * cos(0.7 * i);
        x[3 * i + 2] = (iz + 0.5) * a + 0.05 * a * sin(0.3 * i + 1.0);
        v[3 * i + 0] = 0.1 * sin(2.1 * i);
        v[3 * i + 1] = 0.1 * cos(1.7 * i);
        v[3 * i + 2] = 0.1 * sin(0.9 * i + 2.0);
    }
}

static double wrap(double d)
{
    if (d > 0.5 * L)
        d -= L;
    else if (d < -0.5 * L)
        d += L;
    return d;
}

/* Forces and energy of the pairs (i, j) with i in [lo, hi), j in the next
 * half of the ring, into @f (private, all molecules). */
static double pair_forces(const double *x, double *f, int lo, int hi)
{
    const double rc2 = 0.24 * L * L, sig2 = 1.0;
    double e = 0;

    for (int i = lo; i < hi; i++) {
        int kmax = nmol / 2 - ((nmol % 2 == 0 && i >= nmol / 2) ? 1 : 0);
        for (int k = 1; k <= kmax; k++) {
            int j = (i + k) % nmol;
            double dx = wrap(x[3 * i] - x[3 * j]), dy = wrap(x[3 * i + 1] - x[3 * j + 1]),
                   dz = wrap(x[3 * i + 2] - x[3 * j + 2]);
            double r2 = dx * dx + dy * dy + dz * dz;
            if (r2 > rc2)
                continue;
            double s2 = sig2 / r2, s6 = s2 * s2 * s2;
            double fr = 24.0 * s6 * (2.0 * s6 - 1.0) / r2;
            e += 4.0 * s6 * (s6 - 1.0);
            f[3 * i] += fr * dx; f[3 * i + 1] += fr * dy; f[3 * i + 2] += fr * dz;
            f[3 * j] -= fr * dx; f[3 * j + 1] -= fr * dy; f[3 * j + 2] -= fr * dz;
        }
    }
    return e;
}

static void advance(double *x, double *v, const double *f, int lo, int hi)
{
    for (int i = lo; i < hi; i++)
        for (int d = 0; d < 3; d++) {
            v[3 * i + d] += dt * f[3 * i + d];
            double y = x[3 * i + d] + dt * v[3 * i + d];
            x[3 * i + d] = y - L * floor(y / L);
        }
}

static void slave(void)
{
    int p = CVIA_PARMACS_ME(), lo, hi;
    double *f = malloc((size_t)nmol * 3 * sizeof(double));

    range(p, &lo, &hi);
    init_state(pos, vel, lo, hi);
    BARRIER(G->start, P);
    if (p == 0)
        CLOCK(G->t0);
    for (int s = 0; s < steps; s++) {
        for (int i = 3 * lo; i < 3 * hi; i++)
            frc[i] = 0;
        memset(f, 0, (size_t)nmol * 3 * sizeof(double));
        BARRIER(G->start, P);
        double e = pair_forces(pos, f, lo, hi);
        /* add this process's contributions, one molecule block at a time,
         * starting at its own so that the processes spread over the locks */
        for (int b0 = 0; b0 < nblk; b0++) {
            int b = (b0 + lo / MB) % nblk, m0 = b * MB, m1 = m0 + MB < nmol ? m0 + MB : nmol;
            int any = 0;
            for (int i = 3 * m0; i < 3 * m1 && !any; i++)
                any = f[i] != 0;
            if (!any)
                continue;
            ALOCK(G->flock, b);
            for (int i = 3 * m0; i < 3 * m1; i++)
                frc[i] += f[i];
            AULOCK(G->flock, b);
        }
        LOCK(G->elock);
        G->epot[s] += e;
        UNLOCK(G->elock);
        BARRIER(G->start, P);
        advance(pos, vel, frc, lo, hi);
        BARRIER(G->start, P);
    }
    if (p == 0)
        CLOCK(G->t1);
    free(f);
}

static int check(void)
{
    size_t n3 = (size_t)nmol * 3;
    double *x = malloc(n3 * sizeof(double)), *v = malloc(n3 * sizeof(double)),
           *f = malloc(n3 * sizeof(double));
    double err = 0, eerr = 0;

    if (!x || !v || !f)
        return -1;
    init_state(x, v, 0, nmol);
    for (int s = 0; s < steps; s++) {
        memset(f, 0, n3 * sizeof(double));
        double e = pair_forces(x, f, 0, nmol);
        advance(x, v, f, 0, nmol);
        double de = fabs(e - G->epot[s]) / (fabs(e) > 1 ? fabs(e) : 1);
        if (de > eerr)
            eerr = de;
    }
    for (size_t i = 0; i < n3; i++) {
        double d = fabs(wrap(x[i] - pos[i]));
        if (d > err)
            err = d;
    }
    free(x);
    free(v);
    free(f);
    if (err > 1e-9 * L || eerr > 1e-9) {
        fprintf(stderr, "water: positions differ by %g (box %g), energies by %g (relative)\n",
                err, L, eerr);
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

    if (app_preset_small("water", argc, argv, &first)) {
        nmol = 343;
        steps = 3;
        c.check = 1;
    }
    for (int i = first; i < argc; i++) {
        if (app_common_flag(&c, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            nmol = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            steps = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: water [small|paper] [-n NMOL] [-s STEPS] [-p P] "
                    "[--check] [--stats[=json]]\n");
            return 2;
        }
    }
    if (nmol < 8 || nmol > MAXBLK * MB || steps < 1 || steps > 64) {
        fprintf(stderr, "water: need 8 <= NMOL <= %d and 1 <= STEPS <= 64\n", MAXBLK * MB);
        return 2;
    }
    L = cbrt((double)nmol) * 1.2;      /* a liquid-like density */
    nblk = (nmol + MB - 1) / MB;
    MAIN_INITENV(, 0);
    P = app_procs(&c, "water");
    CLOCK(t_start);
    G = G_MALLOC(sizeof(*G));
    pos = G_MALLOC_HOME((size_t)nmol * 3 * sizeof(double), CVIA_DSM_HOME_BLOCK);
    vel = G_MALLOC_HOME((size_t)nmol * 3 * sizeof(double), CVIA_DSM_HOME_BLOCK);
    frc = G_MALLOC_HOME((size_t)nmol * 3 * sizeof(double), CVIA_DSM_HOME_BLOCK);
    BARINIT(G->start, P);
    LOCKINIT(G->elock);
    ALOCKINIT(G->flock, nblk);
    if (!c.quiet)
        printf("water: %d molecules, %d steps, %d processes\n", nmol, steps, P);
    for (int i = 1; i < P; i++)
        CREATE(slave);
    slave();
    WAIT_FOR_END(P - 1);
    CLOCK(t_end);
    snprintf(size, sizeof(size), "%dx%d", nmol, steps);
    if (app_finish(&c, check, "water", size, P, (double)(G->t1 - G->t0) * 1e-6,
                   (double)(t_end - t_start) * 1e-6))
        exit(1);
    MAIN_END;
}
