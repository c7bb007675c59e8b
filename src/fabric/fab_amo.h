/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Atomic arithmetic on the target's memory (fab_amo.c). */
#ifndef COREVIA_FABRIC_FAB_AMO_H
#define COREVIA_FABRIC_FAB_AMO_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>

enum { FAB_AMO_WRITE = 1, FAB_AMO_FETCH, FAB_AMO_COMPARE };

/* Bytes of one element of @dt; 0 for a type the provider does not do
 * (complex, long double, 128-bit). */
size_t fab_amo_size(int dt);
/* 1 if (@dt, @op) is an atomic of @kind (FAB_AMO_*) the provider does. */
int    fab_amo_valid(int dt, int op, int kind);
/* dst[i] = op(dst[i], src[i], cmp[i]) for @count elements; the old values
 * into @old when not NULL. */
void   fab_amo_apply(int dt, int op, void *dst, const void *src, const void *cmp, void *old,
                     size_t count);

#endif
