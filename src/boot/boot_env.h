/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Which launcher started this process, read from its environment alone: no
 * connection, no library state, so it may be asked before cvia_init().
 * boot.c chooses its backend with it; the tools ask it whether they already
 * are a rank of a job (cvia-run, or mpirun / prterun / srun --mpi=pmix)
 * and must join it instead of starting a job of their own. Header-only: a
 * tool that links only the public library can use it too. */
#ifndef COREVIA_BOOT_ENV_H
#define COREVIA_BOOT_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cvia_launcher {
    CVIA_LAUNCHER_NONE,         /* a job of one: a tool may start a job itself */
    CVIA_LAUNCHER_CVIA_RUN,     /* CVIA_BOOT_ADDR: cvia-run's socket */
    CVIA_LAUNCHER_PMIX,         /* a PMIx server: mpirun, prterun, srun --mpi=pmix */
};

struct cvia_launch_env {
    enum cvia_launcher kind;
    const char *var;            /* the variable that told (NULL for NONE) */
    int rank, size;             /* as far as the environment says; -1: not before cvia_init */
};

static inline int cvia__launch_env_int(const char *name)
{
    const char *s = getenv(name);
    char *end;
    long v;

    if (!s || !*s)
        return -1;
    v = strtol(s, &end, 10);
    return *end || v < 0 || v > (1L << 30) ? -1 : (int)v;
}

/* CVIA_BOOT_ADDR wins (cvia-run under a PMIx launcher is cvia-run's job);
 * else PMIX_NAMESPACE, PMIX_RANK or any PMIX_SERVER_URI* says PMIx. The
 * size before cvia_init is what the launcher also puts in the environment:
 * Open MPI's OMPI_COMM_WORLD_SIZE, Slurm's SLURM_STEP_NUM_TASKS. */
static inline struct cvia_launch_env cvia__launch_env(void)
{
    extern char **environ;
    static char uri[32];
    struct cvia_launch_env e = { CVIA_LAUNCHER_NONE, NULL, 0, 1 };
    const char *s;

    if ((s = getenv("CVIA_BOOT_ADDR")) && *s) {
        e.kind = CVIA_LAUNCHER_CVIA_RUN;
        e.var = "CVIA_BOOT_ADDR";
        e.rank = cvia__launch_env_int("CVIA_RANK");
        e.size = cvia__launch_env_int("CVIA_SIZE");
        return e;
    }
    if ((s = getenv("PMIX_NAMESPACE")) && *s)
        e.var = "PMIX_NAMESPACE";
    else if ((s = getenv("PMIX_RANK")) && *s)
        e.var = "PMIX_RANK";
    else
        for (char **v = environ; v && *v; v++)
            if (!strncmp(*v, "PMIX_SERVER_URI", sizeof("PMIX_SERVER_URI") - 1)) {
                snprintf(uri, sizeof(uri), "%.*s", (int)strcspn(*v, "="), *v);
                e.var = uri;
                break;
            }
    if (!e.var)
        return e;
    e.kind = CVIA_LAUNCHER_PMIX;
    e.rank = cvia__launch_env_int("PMIX_RANK");
    if ((e.size = cvia__launch_env_int("OMPI_COMM_WORLD_SIZE")) < 0)
        e.size = cvia__launch_env_int("SLURM_STEP_NUM_TASKS");
    return e;
}

#endif
