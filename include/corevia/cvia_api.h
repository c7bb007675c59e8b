/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/**
 * @file cvia_api.h
 * @brief CVIA_API marks the functions that corevia's shared libraries
 *        export.
 *
 * The libraries are built with -fvisibility=hidden and a linker version
 * script (node CVIA_1.0): a function is part of the ABI only if a public
 * header declares it with CVIA_API. Included by every public header; it
 * need not be included directly.
 */
#ifndef COREVIA_CVIA_API_H
#define COREVIA_CVIA_API_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define CVIA_API __attribute__((visibility("default")))
#else
#define CVIA_API
#endif

#endif
