/* SPDX-License-Identifier: BSD-3-Clause */
/* multilock_scripts.c: the Lua of the multi-resource lock (multilock.c,
 * docs/algorithm.md "Multi-resource locks"), beside scripts.c's and used
 * the same ways: EVAL, EVALSHA and the "redlock" function library. Data
 * only, so that the engine (proto.c) and scripts.c depend on nothing else.
 *
 * KEYS of every script: per resource, in canonical order (sorted by name),
 * its key K, its queue's keys K:wq and K:wl (as the mutex's, scripts.c)
 * and its fencing counter K:fencing: 4 keys a resource. Every key is
 * declared, so a node that is a Redis Cluster routes them, and refuses
 * (CROSSSLOT) a set whose keys are not in one slot. One script sets all
 * of a node's keys or none: no node ever holds part of a set. */
#include "internal.h"
#include "wake_lua.h"

/* The keys of resource i (1-based) of KEYS. */
#define RL_MULTI_LUA \
    "local n = #KEYS / 4 " \
    "local function rl_k(i) return KEYS[4 * i - 3] end " \
    "local function rl_q(i) return KEYS[4 * i - 2] end " \
    "local function rl_l(i) return KEYS[4 * i - 1] end " \
    "local function rl_ours(v) return #v == 41 and string.sub(v, 1, 1) == 'w' " \
    "and not string.find(v, '[^0-9a-f]', 2) end "

/* Acquisition. ARGV: value, ttl, our registration ('' for none), ticket,
 * lease, mode: as rl_script_acquire's ('j', 'r', 'd', 'c'; fair mode 'f'
 * is not applied to a set). Granted when every key is free: all are set
 * to the value with the TTL, and {1} or {1, the highest of the keys'
 * counters} comes back. Refused when any is held: nothing is written
 * but the waiter's registration, in the queue of each key that is held
 * (the release of any of them wakes it); a registered waiter that was
 * queued at a key that is free now leaves that queue and passes the
 * wake-up it may have swallowed to the next waiter there. {0, ms until the
 * last held key expires (-1: unknown), 1 if every holder's release wakes
 * the queue}. */
const char rl_script_multi_acquire[] =
    RL_WAKE_LUA RL_MULTI_LUA
    "local me, mode = ARGV[3], ARGV[6] "
    "local function has(c) return string.find(mode, c, 1, true) ~= nil end "
    "local held = {} "
    "for i = 1, n do held[i] = redis.call('get', rl_k(i)) end "
    "local any = false for i = 1, n do if held[i] then any = true break end end "
    "if not any then "
    "for i = 1, n do redis.call('set', rl_k(i), ARGV[1], 'PX', ARGV[2]) end "
    "if me ~= '' and has('d') then for i = 1, n do rl_drop(rl_q(i), rl_l(i), me) end end "
    "if has('c') then local m = '0' for i = 1, n do local c = redis.call('get', KEYS[4 * i]) "
    "if c and (#c > #m or (#c == #m and c > m)) then m = c end end return {1, m} end "
    "return {1} end "
    "if me ~= '' and has('j') then local now = nil "
    "for i = 1, n do local q, l = rl_q(i), rl_l(i) "
    "if held[i] then local added = redis.pcall('zadd', q, 'NX', ARGV[4], me) "
    "if added == 1 or has('r') then now = now or rl_now() if now then local lease = tonumber(ARGV[5]) "
    "if added == 1 then rl_purge(q, l, now) end "
    "redis.pcall('zadd', l, now + lease, me) redis.pcall('pexpire', q, lease) redis.pcall('pexpire', l, lease) "
    "end end "
    "elseif redis.pcall('zrem', q, me) == 1 then redis.pcall('zrem', l, me) rl_wake(q, l, me, ARGV[1], rl_k(i)) end end end "
    "local t, marked = 0, 1 "
    "for i = 1, n do if held[i] then local p = redis.pcall('pttl', rl_k(i)) if rl_bad(p) then p = -1 end "
    "if p < 0 then t = -1 elseif t >= 0 and p > t then t = p end "
    "if not rl_ours(held[i]) then marked = 0 end end end "
    "return {0, t, marked}";
/* ARGV: value, ttl. All or none: every key must still hold the value. */
const char rl_script_multi_extend[] =
    RL_MULTI_LUA
    "for i = 1, n do if redis.call('get', rl_k(i)) ~= ARGV[1] then return 0 end end "
    "for i = 1, n do redis.call('pexpire', rl_k(i), ARGV[2]) end return 1";
/* ARGV: value, wake ('0': nobody), our registration ('' if none), as
 * rl_script_release's. Deletes each key still ours, waking the first
 * waiter of each key it freed; the registration leaves every queue. 1 if
 * every key was ours. */
const char rl_script_multi_release[] =
    RL_WAKE_LUA RL_MULTI_LUA
    "local gone, freed = 0, {} "
    "for i = 1, n do if redis.call('get', rl_k(i)) == ARGV[1] then redis.call('del', rl_k(i)) "
    "gone = gone + 1 freed[i] = true end end "
    "if gone == 0 and ARGV[3] == '' then return 0 end "
    "for i = 1, n do local q, l = rl_q(i), rl_l(i) if rl_has(q) then "
    "if ARGV[3] ~= '' then rl_drop(q, l, ARGV[3]) end "
    "if freed[i] and ARGV[2] ~= '0' then rl_wake(q, l, ARGV[3], ARGV[1], rl_k(i)) end end end "
    "return gone == n and 1 or 0";
/* ARGV: value, token: every counter rises to the token if every key is
 * still ours (as rl_script_fence_commit, for each resource of the set). */
const char rl_script_multi_fence_commit[] =
    RL_MULTI_LUA
    "for i = 1, n do if redis.call('get', rl_k(i)) ~= ARGV[1] then return 0 end end "
    "for i = 1, n do local c = redis.call('get', KEYS[4 * i]) "
    "if not c or #c < #ARGV[2] or (#c == #ARGV[2] and c < ARGV[2]) then redis.call('set', KEYS[4 * i], ARGV[2]) end end "
    "return 1";
/* ARGV: the registration, wake ('0': nobody). A waiter gives up: it
 * leaves every queue of the set, and where a key is free the next waiter
 * is woken (as rl_script_leave). */
const char rl_script_multi_leave[] =
    RL_WAKE_LUA RL_MULTI_LUA
    "for i = 1, n do local q, l = rl_q(i), rl_l(i) rl_drop(q, l, ARGV[1]) "
    "if ARGV[2] ~= '0' and not redis.call('get', rl_k(i)) and rl_has(q) then "
    "rl_wake(q, l, ARGV[1], ARGV[1], rl_k(i)) end end return 1";

char rl_sha_multi_acquire[41], rl_sha_multi_extend[41], rl_sha_multi_release[41], rl_sha_multi_fence_commit[41],
    rl_sha_multi_leave[41];
