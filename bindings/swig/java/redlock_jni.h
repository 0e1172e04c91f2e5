/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_jni.h: the hand-written JNI support of the Java binding
 * (redlock_jni.c), called from the wrapper SWIG generates from redlock_java.i. */
#ifndef REDLOCK_JNI_H
#define REDLOCK_JNI_H

#include <jni.h>
#include <stddef.h>
#include <stdint.h>
#define REDLOCK_EXPERIMENTAL   /* rl_java_acquire_many */
#include "redlock.h"
#include "redlock_swig.h"

/* ---- Strings and exceptions ---- */

/* A Java byte[] holding s as UTF-8 (not JNI's modified UTF-8); NULL s gives
 * an empty array. NULL with OutOfMemoryError pending. */
jbyteArray rl_java_bytes(JNIEnv *env, const char *s);

/* Throws the io.redlock.RedlockException subclass for code (unless an
 * exception is already pending); detail may be NULL. */
void rl_java_throw(JNIEnv *env, int code, const char *detail);

/* Copies a byte[] (a String encoded to UTF-8 in Java) into a malloc'd C
 * string; a NUL inside is refused. 0, or -1 with an exception pending. */
int rl_java_cstring(JNIEnv *env, jbyteArray in, const char *what, char **out);

/* A byte[][] of node URLs as a malloc'd array of C strings (NULL elements
 * stay NULL, for the C library to refuse); free with rl_java_free_list.
 * 0, or -1 with an exception pending. */
int rl_java_node_list(JNIEnv *env, jobjectArray in, char ***out, size_t *n);
void rl_java_free_list(char **list, size_t n);

/* A Java long that must fit a uint32_t instead of wrapping around (-1 would
 * become a 49-day TTL). 0, or -1 with InvalidArgumentException pending. */
int rl_java_uint32(JNIEnv *env, jlong in, const char *what, uint32_t *out);

/* ---- The callback hooks of redlock.i, and what Java adds to them ---- */

/* redlock_client_open, plus the client's own event sink when the options
 * carry a Java listener (rl_java_set_listener). */
int rl_java_open(redlock_client **out, const char *const *nodes, size_t n_nodes,
                 const redlock_options *options, char *err, size_t errsize);
/* Drops the event listener held by options. */
void rl_java_options_free(redlock_options *options);

/* Lock.autoExtend: dispatch is a NativeCallbacks.LostDispatch, or NULL. */
void rl_java_auto_extend(rl_status *st, redlock_lock *lock, uint32_t max_hold_ms, jobject dispatch);
/* redlock_lock_acquire_async, its result to dispatch (a NativeCallbacks.AcquireDispatch). */
void rl_java_acquire_async(rl_status *st, redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms, jobject dispatch);
/* Lock.releaseAsync (extend 0) and Lock.extendAsync (extend 1, to ttl_ms):
 * redlock_lock_release_async or redlock_lock_extend_async, told to dispatch
 * (a NativeCallbacks.RoundDispatch) as an acquire is. */
void rl_java_round_async(rl_status *st, redlock_lock *lock, int extend, uint32_t ttl_ms, jobject dispatch);
/* Options.setEventListener: the options hold listener (NULL unsets). 0 or REDLOCK_ENOMEM. */
int rl_java_set_listener(redlock_options *options, jobject listener);
/* Lock.nodeResults, one node: a NodeResult made by NativeCallbacks. */
jobject rl_java_node_result(const redlock_lock *lock, size_t i, jobject url);
/* Redlock.tryAcquireMany: redlock_lock_acquire_many over locks (a Lock[]
 * of no null element; self the Redlock), holding every Lock's monitor and
 * then self's during the call, as a RedlockException[] with null for each
 * lock held now and, for the others, the exception of its code and detail
 * (made, not thrown; a closed Lock's is a LockStateException). The C
 * library checks the list (another client's lock, one twice, too many).
 * NULL with st set, or an exception pending. */
jobjectArray rl_java_acquire_many(rl_status *st, redlock_client *client, jobjectArray locks, uint32_t ttl_ms,
                                  jobject self);

#endif
