/* SPDX-License-Identifier: BSD-3-Clause */
/* scripts.c: the Lua the library runs on the nodes, written once and used
 * two ways: as scripts (EVAL, or EVALSHA by their SHA1) and wrapped into the
 * "redlock" function library (FCALL, for REDLOCK_OPT_FUNCTIONS). Each
 * compares the key's value with ours before it acts, so a command that
 * arrives late can only act on our own lock. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char rl_script_release[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const char rl_script_extend[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
/* Fencing (docs/fencing.md). KEYS[2] is the counter. Acquire: SET NX PX and,
 * if it was set, the counter in the same step (0 when the key is missing).
 * Commit: raise the counter to ARGV[2] if the lock is still ours. Counters
 * are compared as decimal strings, since Lua numbers are doubles. */
const char rl_script_acquire_fenced[] =
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "return redis.call('get', KEYS[2]) or '0' end return false";
const char rl_script_fence_commit[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end "
    "local c = redis.call('get', KEYS[2]) "
    "if not c or #c < #ARGV[2] or (#c == #ARGV[2] and c < ARGV[2]) then redis.call('set', KEYS[2], ARGV[2]) end "
    "return 1";

char rl_sha_release[41];
char rl_sha_extend[41];
char rl_sha_acquire_fenced[41];
char rl_sha_fence_commit[41];

static const struct {
    const char *function;
    const char *body;
} library[] = {
    { "redlock_release", rl_script_release },
    { "redlock_extend", rl_script_extend },
    { "redlock_acquire_fenced", rl_script_acquire_fenced },
    { "redlock_fence_commit", rl_script_fence_commit },
};

/* The same scripts as a Redis 7 function library: each body becomes a
 * function whose parameters carry the names the body uses. */
char rl_function_library[2048];

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;
static void scripts_init_once(void)
{
    rl_sha1_hex(rl_script_release, rl_sha_release);
    rl_sha1_hex(rl_script_extend, rl_sha_extend);
    rl_sha1_hex(rl_script_acquire_fenced, rl_sha_acquire_fenced);
    rl_sha1_hex(rl_script_fence_commit, rl_sha_fence_commit);
    rl_fmt(rl_function_library, sizeof rl_function_library, "#!lua name=redlock\n");
    for (size_t k = 0; k < sizeof library / sizeof library[0]; k++)
        rl_append(rl_function_library, sizeof rl_function_library,
                  "redis.register_function('%s', function(KEYS, ARGV) %s end)\n", library[k].function,
                  library[k].body);
}

void rl_scripts_init(void)
{
    pthread_once(&scripts_once, scripts_init_once);
}
