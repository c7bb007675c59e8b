/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <errno.h>
#include <string.h>

#include <corevia/cvia_errno.h>

/* |err| without overflow for INT_MIN (which is no code: "unknown error") */
static unsigned err_abs(int err)
{
    return err < 0 ? 0u - (unsigned)err : (unsigned)err;
}

const char *cvia_strerror(int err_in)
{
    unsigned err = err_abs(err_in);
    if (err == 0)
        return "success";
    if (err < CVIA_ERRNO_BASE)
        return strerror((int)err);
    switch (err) {
#define X(name, val, msg) case (val): return (msg);
    CVIA_ERRNO_MAP(X)
#undef X
    }
    return "unknown error";
}

const char *cvia_err_name(int err_in)
{
    unsigned err = err_abs(err_in);
    if (err == 0)
        return "OK";
    if (err < CVIA_ERRNO_BASE) {
        const char *n = strerrorname_np((int)err);
        return n ? n : "unknown errno";
    }
    switch (err) {
#define X(name, val, msg) case (val): return "CVIA_" #name;
    CVIA_ERRNO_MAP(X)
#undef X
    }
    return "unknown error";
}
