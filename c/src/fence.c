/* SPDX-License-Identifier: BSD-3-Clause */
/* fence.c: the store's side of fencing (docs/fencing.md, "Protecting your
 * store"). A token protects nothing unless the store refuses a write that
 * carries an older one; this is the one script every binding runs on its
 * own client to the store (a Redis or Valkey server or cluster, not
 * necessarily a lock node), and the one rule for the fence key's name, so
 * that the comparison, the naming and the lifetime are written once.
 *
 * The script: KEYS[1] the fence key (redlock_fence_key), KEYS[2] the data
 * key (absent for "advance"); ARGV[1] the token (decimal, 1 to 2^64 - 1),
 * ARGV[2] the fence's retention in ms, ARGV[3] the operation, ARGV[4...]
 * its arguments: "set" VALUE [PX], "del", "hset" FIELD VALUE ..., "rpush"
 * VALUE ..., "incrby" N, or "advance" (no data key: only raise the fence,
 * as a new holder does before it reads, so that a late writer is refused
 * from then on). Tokens are compared as decimal strings (length, then
 * bytes), never as Lua numbers, which are doubles and lose integers above
 * 2^53. A token at least the fence's is applied and recorded; an older one
 * is refused with "FENCED <token> <fence> ...", naming both. The fence key
 * lives for the longer of what it has left and the retention, from every
 * write: a resource no longer written to loses its fence after the
 * retention, and a holder stalled longer than that after the resource's
 * last write is not fenced (docs/fencing.md says how to choose it). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "engine/engine.h"

static const char fence_script[] =
    "local t, keep, op = ARGV[1], tonumber(ARGV[2]), ARGV[3] "
    "if not string.match(t, '^[1-9]%d*$') or #t > 20 or (#t == 20 and t > '18446744073709551615') then "
    "return redis.error_reply('ERR redlock fence: the token must be a decimal integer from 1 to 2^64-1, not ' .. t) end "
    "if not keep or keep < 1 or keep > 1e15 then "
    "return redis.error_reply('ERR redlock fence: retention must be 1 ms to 10^15 ms') end "
    "if KEYS[2] == KEYS[1] then return redis.error_reply('ERR redlock fence: the data key is the fence key') end "
    "local f = redis.call('get', KEYS[1]) "
    "if f and (#f > #t or (#f == #t and f > t)) then "
    "return redis.error_reply('FENCED ' .. t .. ' ' .. f .. ' token ' .. t .. ' is older than ' .. f .. "
    "', the highest this resource has seen: a later holder has written') end "
    "local r "
    "if op == 'set' then "
    "if ARGV[5] then r = redis.call('set', KEYS[2], ARGV[4], 'px', ARGV[5]) else r = redis.call('set', KEYS[2], ARGV[4]) end "
    "elseif op == 'del' then r = redis.call('del', KEYS[2]) "
    "elseif op == 'hset' then r = redis.call('hset', KEYS[2], unpack(ARGV, 4)) "
    "elseif op == 'rpush' then r = redis.call('rpush', KEYS[2], unpack(ARGV, 4)) "
    "elseif op == 'incrby' then r = redis.call('incrby', KEYS[2], ARGV[4]) "
    "elseif op ~= 'advance' then return redis.error_reply('ERR redlock fence: unknown operation ' .. op) end "
    "local left = f and redis.call('pttl', KEYS[1]) or -2 "
    "if left < keep then left = keep end "
    "redis.call('set', KEYS[1], t, 'px', string.format('%.0f', left)) "
    "if op == 'advance' then return f or '0' end "
    "return r";

static char fence_sha[41];
static pthread_once_t fence_once = PTHREAD_ONCE_INIT;

static void fence_init(void)
{
    rl_sha1_hex(fence_script, fence_sha);
}

const char *redlock_fence_script(void)
{
    return fence_script;
}

const char *redlock_fence_script_sha1(void)
{
    pthread_once(&fence_once, fence_init);
    return fence_sha;
}

int redlock_fence_key(char *out, size_t size, const char *resource)
{
    if (!resource || !*resource || (!out && size))
        return REDLOCK_EINVAL;
    size_t len = strlen(resource), st, tl;
    if (len > REDLOCK_MAX_RESOURCE_LEN || !rl_key_taggable(resource, len))
        return REDLOCK_EINVAL;
    /* The name that shares the resource's slot on a cluster store: its own
     * tag if it has one, else the whole name as the tag (as a lock's keys
     * beside it are named on a cluster node, docs/cluster.md). */
    int tagged = rl_key_tag(resource, len, &st, &tl);
    int n = snprintf(out, size, tagged ? "%s" RL_KEY_STORE_FENCE : "{%s}" RL_KEY_STORE_FENCE, resource);
    return n < 0 ? REDLOCK_EINVAL : n;
}

/* One decimal token, 1 to 2^64 - 1, no sign, no leading zero: the digits
 * from *p up to end or a space; advances *p past them. */
static int fence_number(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (s == end || *s < '1' || *s > '9')
        return 0;
    for (; s < end && *s != ' '; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return 1;
}

int redlock_fence_refusal(const char *msg, size_t len, uint64_t *token, uint64_t *fence)
{
    /* "FENCED <token> <fence>", then the end or a space and the script's
     * words: the error reply as every client hands it over. */
    uint64_t t, f;
    if (!msg || len < 7 || memcmp(msg, "FENCED ", 7))
        return 0;
    const char *p = msg + 7, *end = msg + len;
    if (!fence_number(&p, end, &t) || p == end || *p++ != ' ' || !fence_number(&p, end, &f))
        return 0;
    if (token)
        *token = t;
    if (fence)
        *fence = f;
    return 1;
}
