/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Every rank sends a greeting to rank 0, which prints them in rank order.
 *   cc hello.c $(pkg-config --cflags --libs corevia) -o hello
 *   cvia-run -n 4 ./hello */
#include <stdio.h>
#include <string.h>

#include <corevia/corevia.h>

int main(int argc, char **argv)
{
    char msg[128];
    int rc = cvia_init(&argc, &argv);

    if (rc) {
        fprintf(stderr, "hello: cvia_init: %s\n", cvia_strerror(rc));
        return 1;
    }
    int rank = cvia_rank(), size = cvia_size();
    if (rank != 0) {
        snprintf(msg, sizeof(msg), "hello from rank %d of %d", rank, size);
        rc = cvia_send(msg, strlen(msg) + 1, 0, 0);
    } else {
        printf("hello from rank 0 of %d\n", size);
        for (int src = 1; src < size && !rc; src++) {
            cvia_status_t st;
            rc = cvia_recv(msg, sizeof(msg), src, 0, &st);
            if (!rc)
                printf("%s (%zu bytes)\n", msg, st.len);
        }
    }
    if (rc)
        fprintf(stderr, "hello: rank %d: %s\n", rank, cvia_strerror(rc));
    int frc = cvia_finalize();
    return rc || frc ? 1 : 0;
}
