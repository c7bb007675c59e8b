/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Helpers every command uses: clocks, the process's own CPU time, CPU
 * sets from hwloc bitmaps, pinning, and the end of each getopt loop. */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "aff.h"

double aff_cpu_self(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

int aff_cpuset_of(hwloc_const_bitmap_t pus, cpu_set_t *set)
{
    int pu;

    CPU_ZERO(set);
    hwloc_bitmap_foreach_begin(pu, pus) {
        if (pu < CPU_SETSIZE)
            CPU_SET(pu, set);
    } hwloc_bitmap_foreach_end();
    return CPU_COUNT(set);
}

int aff_pin_self(hwloc_const_bitmap_t pus)
{
    cpu_set_t set;

    if (aff_cpuset_of(pus, &set) == 0)
        return -EINVAL;
    return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

int aff_pin_self_list(const char *list)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    int rc;

    if (!b)
        return -ENOMEM;
    rc = hwloc_bitmap_list_sscanf(b, list) < 0 || hwloc_bitmap_iszero(b) ? -EINVAL
                                                                        : aff_pin_self(b);
    hwloc_bitmap_free(b);
    return rc;
}

int aff_cpulist_ok(const char *list)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    int ok;

    if (!b)
        return 0;
    ok = *list && strspn(list, "0123456789,-") == strlen(list) &&
         hwloc_bitmap_list_sscanf(b, list) == 0 && !hwloc_bitmap_iszero(b) &&
         hwloc_bitmap_weight(b) > 0 && hwloc_bitmap_last(b) < CPU_SETSIZE;
    hwloc_bitmap_free(b);
    return ok;
}

void aff_getopt_fail(const char *sub, int c, char **argv)
{
    if (c == ':')
        aff_usage_error(sub, "option %s needs an argument", argv[optind - 1]);
    if (optopt)
        aff_usage_error(sub, "unknown option -%c", optopt);
    aff_usage_error(sub, "unknown option %s", argv[optind - 1]);
}
