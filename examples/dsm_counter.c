/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The DSM in a few lines: every rank adds to one shared counter under a
 * lock, 100 times; after a barrier every rank reads the sum.
 *   cc dsm_counter.c $(pkg-config --cflags --libs corevia-dsm) -o dsm_counter
 *   cvia-run -n 4 ./dsm_counter */
#include <stdio.h>

#include <corevia/dsm.h>

int main(int argc, char **argv)
{
    long *counter;
    int lock, rc = cvia_dsm_init(&argc, &argv);

    if (rc) {
        fprintf(stderr, "dsm_counter: cvia_dsm_init: %s\n", cvia_strerror(rc));
        return 1;
    }
    if ((rc = cvia_dsm_alloc(sizeof(*counter), 0, (void **)&counter)) ||
        (rc = cvia_dsm_lock_create(&lock)))
        goto out;
    for (int i = 0; i < 100 && !rc; i++) {
        if (!(rc = cvia_dsm_lock(lock))) {
            ++*counter;
            rc = cvia_dsm_unlock(lock);
        }
    }
    if (!rc)
        rc = cvia_dsm_barrier();
    if (!rc && cvia_dsm_rank() == 0)
        printf("counter %ld of %d\n", *counter, 100 * cvia_dsm_size());
    if (!rc && *counter != 100L * cvia_dsm_size())
        rc = -1;
out:
    if (rc)
        fprintf(stderr, "dsm_counter: rank %d: %s\n", cvia_dsm_rank(),
                rc == -1 ? "wrong sum" : cvia_strerror(rc));
    int frc = cvia_dsm_finalize();
    return rc || frc ? 1 : 0;
}
