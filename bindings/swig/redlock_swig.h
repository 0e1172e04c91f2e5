/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_swig.h: what the SWIG wrapper (redlock.i) and a language's support
 * file (java/redlock_jni.c) share: the outcome of one wrapped call. */
#ifndef REDLOCK_SWIG_H
#define REDLOCK_SWIG_H

#include <stdlib.h>
#include <string.h>
#define REDLOCK_EXPERIMENTAL   /* the wrappers use redlock_lock_acquire_many */
#include "redlock.h"

/* The size of the buffers that receive a node's or a listener's message. */
#define RL_MESSAGE_SIZE 512

/* The outcome of one call: a negative REDLOCK_E* code and the C detail text
 * (redlock_lock_errmsg or redlock_client_open's errbuf), copied because the
 * lock it came from may be freed before the wrapper raises. */
typedef struct rl_status {
    int code;
    char *detail;
} rl_status;

/* strdup is POSIX, not C11; NULL on failure (the message then falls back
 * to redlock_strerror). */
static inline char *rl_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    return copy ? memcpy(copy, s, n) : NULL;
}

static inline void rl_fail(rl_status *st, int code, const char *detail) {
    st->code = code;
    free(st->detail);
    st->detail = (detail && *detail) ? rl_strdup(detail) : NULL;
}

/* Failure of a lock call: the detail travels with the handle (no thread-local
 * error in the C API). */
static inline void rl_lock_fail(rl_status *st, const redlock_lock *lock, int code) {
    rl_fail(st, code, redlock_lock_errmsg(lock));
}

#endif
