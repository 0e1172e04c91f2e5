/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore_scripts.c: the Lua of the counting semaphore (semaphore.c,
 * docs/algorithm.md "Counting semaphore"), beside scripts.c's and used the
 * same ways: EVAL, EVALSHA and the "redlock" function library. Data only,
 * so that the engine (proto.c) and scripts.c depend on nothing else. */
#include "internal.h"
#include "wake_lua.h"

/* The keys beside K, named in one place: "K:limit", "K:s<i>". The C side
 * never needs them (the scripts derive them from KEYS[1]); this Lua helper
 * is the one place a cluster-aware naming would change. */
#define RL_SEM_AUX_LUA \
    "local function rl_aux(k, w) return k .. '" RL_SEM_SEP "' .. w end " \
    "local function rl_slot(k, i) return rl_aux(k, '" RL_SEM_SLOT_PREFIX "' .. i) end "

/* Acquisition. KEYS: K, K:wq, K:wl, K:fencing. ARGV: value, ttl, our
 * registration, ticket, lease, mode (as rl_script_acquire's, 'f' aside),
 * the limit L, the slots asked for ("3" or "3,4": all or none). First the
 * limit: a node that keeps another one while any of its slots is held
 * answers {-1, its limit}; with none held, the new limit replaces it.
 * Granted: {1} or {1, counter}, each slot set to the value with the TTL,
 * and K:limit kept at least as long. Refused (a slot asked for is taken):
 * {0, ms until the first holder's key expires, 1 if that holder's release
 * wakes us and no slot is free, free slots, the first free slots from the
 * first one asked for on, up to 16, "5,6"}: the client's next round asks
 * for a slot free on a majority. A refusal reads every slot: O(L). */
const char rl_script_sem_acquire[] =
    RL_WAKE_LUA RL_SEM_AUX_LUA
    "local k, q, l, me, mode = KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[6] "
    "local lk, lim = rl_aux(k, '" RL_KEY_SEM_LIMIT "'), tonumber(ARGV[7]) "
    "local cur = redis.call('get', lk) "
    "if cur and cur ~= ARGV[7] then local n = tonumber(cur) "
    "if not n or n > 100000 then return {-1, cur} end "
    "for i = 0, n - 1 do if redis.call('exists', rl_slot(k, i)) == 1 then return {-1, cur} end end cur = nil end "
    "local want = {} for s in string.gmatch(ARGV[8], '%d+') do want[#want + 1] = rl_slot(k, s) end "
    "local free = #want > 0 "
    "for _, sk in ipairs(want) do if redis.call('exists', sk) == 1 then free = false break end end "
    "if free then for _, sk in ipairs(want) do redis.call('set', sk, ARGV[1], 'PX', ARGV[2]) end "
    "if not cur or redis.call('pttl', lk) < tonumber(ARGV[2]) then "
    "redis.call('set', lk, ARGV[7], 'PX', tonumber(ARGV[2]) * 2) end "
    "if me ~= '' then rl_drop(q, l, me) end "
    "if string.find(mode, 'c', 1, true) then return {1, redis.call('get', KEYS[4]) or '0'} end return {1} end "
    "if me ~= '' and string.find(mode, 'j', 1, true) then local added = redis.pcall('zadd', q, 'NX', ARGV[4], me) "
    "if added == 1 or string.find(mode, 'r', 1, true) then local now = rl_now() if now then "
    "local lease = tonumber(ARGV[5]) if added == 1 then rl_purge(q, l, now) end "
    "redis.pcall('zadd', l, now + lease, me) redis.pcall('pexpire', q, lease) redis.pcall('pexpire', l, lease) "
    "end end end "
    "local start = tonumber(string.match(ARGV[8], '%d+')) or 0 "
    "local fr, nfree, hint, marked = {}, 0, -1, 0 "
    "for j = 0, lim - 1 do local i = (start + j) % lim local sk = rl_slot(k, i) local v = redis.call('get', sk) "
    "if not v then nfree = nfree + 1 if #fr < 16 then fr[#fr + 1] = i end "
    "else local t = redis.call('pttl', sk) if hint < 0 or (t >= 0 and t < hint) then hint = t "
    "marked = (#v == 41 and string.sub(v, 1, 1) == 'w' and not string.find(v, '[^0-9a-f]', 2)) and 1 or 0 "
    "end end end "
    "if nfree > 0 then marked = 0 end "
    "return {0, hint, marked, nfree, table.concat(fr, ',')}";
/* KEYS: K. ARGV: value, ttl, the slots, the limit. All the slots or none:
 * each must still hold the value. K:limit lives at least as long (as in
 * the acquisition). */
const char rl_script_sem_extend[] =
    RL_SEM_AUX_LUA
    "local ks = {} for s in string.gmatch(ARGV[3], '%d+') do local sk = rl_slot(KEYS[1], s) "
    "if redis.call('get', sk) ~= ARGV[1] then return 0 end ks[#ks + 1] = sk end "
    "if #ks == 0 then return 0 end "
    "for _, sk in ipairs(ks) do redis.call('pexpire', sk, ARGV[2]) end "
    "local lk = rl_aux(KEYS[1], '" RL_KEY_SEM_LIMIT "') local t = redis.call('pttl', lk) "
    "if t == -2 then redis.call('set', lk, ARGV[4], 'PX', tonumber(ARGV[2]) * 2) "
    "elseif t >= 0 and t < tonumber(ARGV[2]) then redis.call('pexpire', lk, tonumber(ARGV[2]) * 2) end return 1";
/* KEYS: K, K:wq, K:wl. ARGV: value, wake ('0': nobody), our registration,
 * the slots. Deletes each slot still ours; 1 if all were. A release that
 * freed a slot wakes the first waiter, as the mutex's does. */
const char rl_script_sem_release[] =
    RL_SEM_AUX_LUA
    "local all, gone = 1, 0 "
    "for s in string.gmatch(ARGV[4], '%d+') do local sk = rl_slot(KEYS[1], s) "
    "if redis.call('get', sk) == ARGV[1] then redis.call('del', sk) gone = gone + 1 else all = 0 end end "
    "if gone == 0 then return 0 end "
    "local e = redis.pcall('get', KEYS[2]) if not (type(e) == 'table' and e.err ~= nil) then return all end "
    RL_WAKE_LUA
    "if ARGV[2] ~= '0' then rl_wake(KEYS[2], KEYS[3], ARGV[3], ARGV[1], KEYS[1]) end return all";
/* KEYS: K, K:fencing. ARGV: value, token, the slots: the counter rises to
 * the token if the slots are still ours (as rl_script_fence_commit). */
const char rl_script_sem_fence_commit[] =
    RL_SEM_AUX_LUA
    "local n = 0 for s in string.gmatch(ARGV[3], '%d+') do n = n + 1 "
    "if redis.call('get', rl_slot(KEYS[1], s)) ~= ARGV[1] then return 0 end end if n == 0 then return 0 end "
    "local c = redis.call('get', KEYS[2]) "
    "if not c or #c < #ARGV[2] or (#c == #ARGV[2] and c < ARGV[2]) then redis.call('set', KEYS[2], ARGV[2]) end "
    "return 1";

char rl_sha_sem_acquire[41], rl_sha_sem_extend[41], rl_sha_sem_release[41], rl_sha_sem_fence_commit[41];
