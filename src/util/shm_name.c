/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "util/shm_name.h"

int cvia__shm_create(char *name, size_t cap, uint64_t *rand)
{
    int fd = -1;

    for (int tries = 0; tries < 64; tries++) {
        uint64_t r;
        ssize_t n;
        do
            n = getrandom(&r, sizeof(r), 0);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(r)) {
            name[0] = '\0';
            return -EIO;
        }
        snprintf(name, cap, "/cvia-%u-%d-%016llx", (unsigned)getuid(), (int)getpid(),
                 (unsigned long long)r);
        if (rand)
            *rand = r;
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0)
        return -errno;   /* @name stays: the caller's message names it */
    return fd;
}
