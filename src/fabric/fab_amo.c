/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* Atomic arithmetic for the provider's atomics: corevia has no remote
 * atomics, so the target's provider applies them in its progress (under
 * its endpoint lock: atomic with respect to every other atomic it
 * applies, which is what MPI_Accumulate and libfabric ask of atomics; not
 * with respect to plain RMA writes or the CPU, as libfabric allows). */
#include <string.h>

#include "fabric/fab_amo.h"

size_t fab_amo_size(int dt)
{
    switch (dt) {
    case FI_INT8: case FI_UINT8: return 1;
    case FI_INT16: case FI_UINT16: return 2;
    case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
    case FI_INT64: case FI_UINT64: case FI_DOUBLE: return 8;
    default: return 0;
    }
}

static int fab_amo_is_int(int dt)
{
    return dt >= FI_INT8 && dt <= FI_UINT64;
}

int fab_amo_valid(int dt, int op, int kind)
{
    if (!fab_amo_size(dt) || op < 0 || op >= FI_ATOMIC_OP_LAST)
        return 0;
    switch (kind) {
    case FAB_AMO_WRITE:     /* fi_atomic */
        if (op == FI_ATOMIC_READ || op >= FI_CSWAP)
            return 0;
        break;
    case FAB_AMO_FETCH:     /* fi_fetch_atomic */
        if (op >= FI_CSWAP)
            return 0;
        break;
    case FAB_AMO_COMPARE:   /* fi_compare_atomic */
        if (op < FI_CSWAP)
            return 0;
        break;
    default:
        return 0;
    }
    if (!fab_amo_is_int(dt) &&
        (op == FI_BOR || op == FI_BAND || op == FI_BXOR || op == FI_MSWAP))
        return 0;
    return 1;
}

#define FAB_AMO_APPLY(T)                                                          \
    static void fab_amo_##T(int op, T *dst, const T *src, const T *cmp, T *old,    \
                            size_t n)                                               \
    {                                                                               \
        for (size_t i = 0; i < n; i++) {                                            \
            T d = dst[i], s = src ? src[i] : (T)0, c = cmp ? cmp[i] : (T)0, r = d;  \
            if (old)                                                                \
                old[i] = d;                                                         \
            switch (op) {                                                           \
            case FI_MIN: r = s < d ? s : d; break;                                  \
            case FI_MAX: r = s > d ? s : d; break;                                  \
            case FI_SUM: r = (T)(d + s); break;                                     \
            case FI_PROD: r = (T)(d * s); break;                                    \
            case FI_LOR: r = (T)(d || s); break;                                    \
            case FI_LAND: r = (T)(d && s); break;                                   \
            case FI_LXOR: r = (T)(!d != !s); break;                                 \
            case FI_ATOMIC_READ: r = d; break;                                      \
            case FI_ATOMIC_WRITE: r = s; break;                                     \
            case FI_CSWAP: if (c == d) r = s; break;                                \
            case FI_CSWAP_NE: if (c != d) r = s; break;                             \
            case FI_CSWAP_LE: if (c <= d) r = s; break;                             \
            case FI_CSWAP_LT: if (c < d) r = s; break;                              \
            case FI_CSWAP_GE: if (c >= d) r = s; break;                             \
            case FI_CSWAP_GT: if (c > d) r = s; break;                              \
            default: FAB_AMO_BITS(T)                                                \
            }                                                                       \
            dst[i] = r;                                                             \
        }                                                                           \
    }

#define FAB_AMO_BITS(T)                                                         \
    if (op == FI_BOR) r = (T)(d | s);                                           \
    else if (op == FI_BAND) r = (T)(d & s);                                     \
    else if (op == FI_BXOR) r = (T)(d ^ s);                                     \
    else if (op == FI_MSWAP) r = (T)((s & c) | (d & ~c));                       \
    break;
FAB_AMO_APPLY(int8_t)
FAB_AMO_APPLY(uint8_t)
FAB_AMO_APPLY(int16_t)
FAB_AMO_APPLY(uint16_t)
FAB_AMO_APPLY(int32_t)
FAB_AMO_APPLY(uint32_t)
FAB_AMO_APPLY(int64_t)
FAB_AMO_APPLY(uint64_t)
#undef FAB_AMO_BITS
#define FAB_AMO_BITS(T) break;   /* bitwise ops: refused for floats by fab_amo_valid */
typedef float fab_float;
typedef double fab_double;
FAB_AMO_APPLY(fab_float)
FAB_AMO_APPLY(fab_double)

/* dst: target memory (any alignment: copied through aligned temporaries). */
void fab_amo_apply(int dt, int op, void *dst, const void *src, const void *cmp, void *old,
                   size_t count)
{
    uint64_t d[64], s[64], c[64], o[64];
    size_t sz = fab_amo_size(dt);

    for (size_t done = 0; done < count;) {
        size_t n = count - done < 64 ? count - done : 64;
        char *dp = (char *)dst + done * sz;

        memcpy(d, dp, n * sz);
        if (src)
            memcpy(s, (const char *)src + done * sz, n * sz);
        if (cmp)
            memcpy(c, (const char *)cmp + done * sz, n * sz);
        switch (dt) {
#define CASE(E, T) case E: fab_amo_##T(op, (T *)(void *)d, src ? (T *)(void *)s : NULL, \
                                    cmp ? (T *)(void *)c : NULL, old ? (T *)(void *)o : NULL, n); break;
        CASE(FI_INT8, int8_t)
        CASE(FI_UINT8, uint8_t)
        CASE(FI_INT16, int16_t)
        CASE(FI_UINT16, uint16_t)
        CASE(FI_INT32, int32_t)
        CASE(FI_UINT32, uint32_t)
        CASE(FI_INT64, int64_t)
        CASE(FI_UINT64, uint64_t)
        CASE(FI_FLOAT, fab_float)
        CASE(FI_DOUBLE, fab_double)
#undef CASE
        default: return;
        }
        memcpy(dp, d, n * sz);
        if (old)
            memcpy((char *)old + done * sz, o, n * sz);
        done += n;
    }
}
