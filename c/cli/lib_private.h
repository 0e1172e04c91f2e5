/* SPDX-License-Identifier: BSD-3-Clause */
/* lib_private.h: the few internals of libredlock that the tool uses, so that
 * doctor probes the nodes with what the library really runs instead of
 * copies that drift. The tool links the static library (redlock_static, see
 * CMakeLists.txt here), in which these symbols are visible; they are not
 * part of the ABI, and the shared library does not export them. They are
 * declared here rather than by including c/src/internal.h, so that the tool
 * depends on exactly these. */
#ifndef REDLOCK_CLI_LIB_PRIVATE_H
#define REDLOCK_CLI_LIB_PRIVATE_H

#include <stddef.h>

/* c/src/scripts.c. The release script: KEYS K, K:wq, K:wl; ARGV value,
 * wake ('0': wake nobody), the caller's waiter registration ('' if none).
 * The extension script: KEYS K; ARGV value, TTL in ms. */
extern const char rl_script_release[];
extern const char rl_script_extend[];

/* c/src/util.c: 2 * nbytes hex digits of getrandom(2) and a NUL into out;
 * 0, or -1 if nbytes > 64 or getrandom failed. */
int rl_random_hex(char *out, size_t nbytes);

#endif
