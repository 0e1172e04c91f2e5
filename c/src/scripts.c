/* SPDX-License-Identifier: BSD-3-Clause */
/* scripts.c: the Lua the library runs on the nodes, written once and used
 * two ways: as scripts (EVAL, or EVALSHA by their SHA1) and wrapped into the
 * "redlock" function library (FCALL, for REDLOCK_OPT_FUNCTIONS). Each
 * compares the key's value with ours before it acts, so a command that
 * arrives late can only act on our own lock.
 *
 * Waiting (docs/algorithm.md, "Waking waiters"): next to a lock's key K a
 * node keeps K:wq, the waiters in arrival order (a sorted set scored by the
 * waiter's ticket) and K:wl, when each waiter's registration lapses (scored
 * by the node's clock). Everything about them is a hint: calls on them go through
 * redis.pcall, so a user whose ACL does not allow them, or a node out of
 * memory, still gets and releases locks, only without wake-ups. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include "wake_lua.h"

/* KEYS: K, K:wq, K:wl. ARGV: value, wake ('0': wake nobody), our own
 * registration ('' if none): a waiter that won with a plain SET NX
 * (acquire.c) is still in the queue, and leaves it here, whether or not
 * the lock was still ours; it is not woken. The usual release, with no
 * queue, runs three commands and defines nothing. */
const char rl_script_release[] =
    "local mine = redis.call('get', KEYS[1]) == ARGV[1] "
    "if mine then redis.call('del', KEYS[1]) elseif ARGV[3] == '' then return 0 end "
    "local e = redis.pcall('get', KEYS[2]) if not (type(e) == 'table' and e.err ~= nil) then return mine and 1 or 0 end "
    RL_WAKE_LUA
    "if ARGV[3] ~= '' then rl_drop(KEYS[2], KEYS[3], ARGV[3]) end "
    "if mine and ARGV[2] ~= '0' then rl_wake(KEYS[2], KEYS[3], ARGV[3], ARGV[1], KEYS[1]) end return mine and 1 or 0";
const char rl_script_extend[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
/* Acquisition when waiting, in fair mode or with fencing. KEYS: K, K:wq,
 * K:wl, the fencing counter. ARGV: value, ttl, our registration (the
 * client's wake id ':' a number; '' for none), ticket (orders the queue),
 * lease ms (a registration not renewed within it lapses, and the queue's
 * keys expire with the last one), mode ('j' join the queue when refused,
 * 'r' renew the registration's lease, 'd' drop it when granted (an earlier
 * attempt registered), 'f' fair, 'c' return the counter).
 * A waiter renews a few times per lease (acquire.c): its other refused
 * attempts write nothing, which matters with appendfsync always, where
 * every write costs the node a sync.
 * In fair mode a free key is refused to anyone but the head of the queue
 * whose client still listens; the head is woken again then, in case its
 * message was lost. Granted: {1} or {1, counter}. Refused: {0, ms to wait
 * at most, 1 if the holder's release will wake us: its value is ours, 'w'
 * and 40 hex digits}; {0, 0, 1, 1} when the key is free but kept for the
 * head: ask again as polling would, or when woken. */
const char rl_script_acquire[] =
    RL_WAKE_LUA
    "local k, q, l, me, mode = KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[6] "
    "local blocked = false "
    "local v = redis.call('get', k) "
    "if not v then "
    "if string.find(mode, 'f', 1, true) and rl_has(q) then local now = rl_now() "
    "if now and rl_purge(q, l, now) then for _ = 1, 8 do local h = redis.pcall('zrange', q, 0, 0) "
    "if rl_bad(h) or not h[1] or h[1] == me then break end "
    "local ns = redis.pcall('pubsub', 'numsub', rl_chan(h[1])) "
    "if rl_bad(ns) or tonumber(ns[2]) > 0 then blocked = true break end rl_drop(q, l, h[1]) end end end "
    "if not blocked then redis.call('set', k, ARGV[1], 'PX', ARGV[2]) "
    "if me ~= '' and string.find(mode, 'd', 1, true) then rl_drop(q, l, me) end "
    "if string.find(mode, 'c', 1, true) then return {1, redis.call('get', KEYS[4]) or '0'} end return {1} end end "
    "if me ~= '' and string.find(mode, 'j', 1, true) then local added = redis.pcall('zadd', q, 'NX', ARGV[4], me) "
    "if added == 1 or string.find(mode, 'r', 1, true) then local now = rl_now() if now then "
    "local lease = tonumber(ARGV[5]) if added == 1 then rl_purge(q, l, now) end "
    "redis.pcall('zadd', l, now + lease, me) redis.pcall('pexpire', q, lease) redis.pcall('pexpire', l, lease) "
    "end end end "
    "if blocked then rl_wake(q, l, me, ARGV[1], k) return {0, 0, 1, 1} end "
    "local t = redis.pcall('pttl', k) if rl_bad(t) then t = -1 end "
    "local ours = #v == 41 and string.sub(v, 1, 1) == 'w' and not string.find(v, '[^0-9a-f]', 2) "
    "return {0, t, ours and 1 or 0}";
/* A waiter gives up, or a client is told of a registration of its own that
 * no longer waits. KEYS: K, K:wq, K:wl. ARGV: the registration, wake ('0':
 * nobody). If the lock is free, the next waiter is woken: the message that
 * reached a waiter that left is passed on. */
const char rl_script_leave[] =
    RL_WAKE_LUA
    "rl_drop(KEYS[2], KEYS[3], ARGV[1]) "
    "if ARGV[2] ~= '0' and not redis.call('get', KEYS[1]) and rl_has(KEYS[2]) then "
    "rl_wake(KEYS[2], KEYS[3], ARGV[1], ARGV[1], KEYS[1]) end return 1";
/* Fencing (docs/fencing.md): raise the counter to ARGV[2] if the lock is
 * still ours. KEYS[2] is the counter. Counters are compared as decimal
 * strings, since Lua numbers are doubles. */
const char rl_script_fence_commit[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end "
    "local c = redis.call('get', KEYS[2]) "
    "if not c or #c < #ARGV[2] or (#c == #ARGV[2] and c < ARGV[2]) then redis.call('set', KEYS[2], ARGV[2]) end "
    "return 1";

/* Many locks extended at once (the auto-extend thread's batches): KEYS are
 * the locks' keys, ARGV each one's value and ttl in turn. One array entry per
 * key, 1 if extended: the same compare-and-extend as rl_script_extend, done
 * for each key on its own. */
const char rl_script_extend_many[] =
    "local r = {} for i = 1, #KEYS do if redis.call('get', KEYS[i]) == ARGV[2 * i - 1] then "
    "r[i] = redis.call('pexpire', KEYS[i], ARGV[2 * i]) else r[i] = 0 end end return r";
char rl_sha_extend_many[41];
/* Many independent acquisitions' first attempts (redlock_lock_acquire_many):
 * SET NX PX for each key (KEYS) with its value and ttl (ARGV in turn), 1 if
 * set; and the clean-up of those that lost, compare-and-delete of each key
 * that still holds its value (ARGV's second of each pair unused), waking
 * nobody, as a lost attempt's clean-up never does. */
const char rl_script_set_many[] =
    "local r = {} for i = 1, #KEYS do "
    "r[i] = redis.call('set', KEYS[i], ARGV[2 * i - 1], 'NX', 'PX', ARGV[2 * i]) and 1 or 0 end return r";
const char rl_script_release_many[] =
    "local r = {} for i = 1, #KEYS do if redis.call('get', KEYS[i]) == ARGV[2 * i - 1] then "
    "redis.call('del', KEYS[i]) r[i] = 1 else r[i] = 0 end end return r";
char rl_sha_set_many[41];
char rl_sha_release_many[41];
/* Elections (election.c, docs/algorithm.md "Leader election"). KEYS: K
 * (the election's lock), K:leader (the record: a hash of the owner's lock
 * value o, term t, revision n and value v) and K:obs (the observers'
 * registrations, scored by when they lapse on the node's clock). ARGV: op,
 * owner, term, revision, value, observer, lease ms. 'w' writes the record
 * if the lock is ours and the record is not newer (terms and revisions are
 * compared as decimal strings); 'c' clears the owner if it is ours; both
 * then publish "<registration> <term>:<revision>" to every observer still
 * listening (a hint, by redis.pcall). Any other op reads: {1 when the
 * record's owner holds the lock, term, revision, value (only then), the
 * lock's PTTL}, and renews the observer's registration if one is given. */
const char rl_script_elect[] =
    "local k, rec, obs, op = KEYS[1], KEYS[2], KEYS[3], ARGV[1] "
    "local function bad(v) return type(v) == 'table' and v.err ~= nil end "
    "local function older(a, b) return #a < #b or (#a == #b and a < b) end "
    "local function now() local t = redis.pcall('time') if bad(t) then return nil end "
    "return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end "
    "local function tell(tag) local n = now() if not n then return end "
    "redis.pcall('zremrangebyscore', obs, '-inf', n) local m = redis.pcall('zrange', obs, 0, 255) "
    "if bad(m) then return end for _, x in ipairs(m) do "
    "local c = redis.pcall('publish', 'redlock:wake:' .. string.match(x, '^[^:]*'), x .. ' ' .. tag) "
    "if c == 0 then redis.pcall('zrem', obs, x) end end end "
    "if op == 'w' then if redis.call('get', k) ~= ARGV[2] then return 0 end "
    "local r = redis.call('hmget', rec, 't', 'n') "
    "if r[1] and (older(ARGV[3], r[1]) or (r[1] == ARGV[3] and r[2] and older(ARGV[4], r[2]))) then return 0 end "
    "redis.call('hset', rec, 'o', ARGV[2], 't', ARGV[3], 'n', ARGV[4], 'v', ARGV[5]) "
    "tell(ARGV[3] .. ':' .. ARGV[4]) return 1 end "
    "if op == 'c' then if redis.call('hget', rec, 'o') ~= ARGV[2] then return 0 end "
    "redis.call('hset', rec, 'o', '') tell(ARGV[3] .. ':0') return 1 end "
    "if ARGV[6] ~= '' then local n = now() if n then local lease = tonumber(ARGV[7]) "
    "redis.pcall('zadd', obs, n + lease, ARGV[6]) redis.pcall('pexpire', obs, lease) end end "
    "local v = redis.call('get', k) local r = redis.call('hmget', rec, 'o', 't', 'n', 'v') "
    "local here = v and r[1] and r[1] == v "
    "return {here and 1 or 0, r[2] or '0', r[3] or '0', here and r[4] or '', redis.call('pttl', k)}";

/* ---- the read-write lock (rwlock.c; docs/algorithm.md, "Read-write
 * locks") ----
 * KEYS: K, K:wq, K:wl, the fencing counter, K:rd, K:wi. A writer holds K
 * as a mutex holder does (its value), so the two exclude each other.
 * Readers hold K in one of two forms. A lone reader holds it as
 * RL_RW_MARK ':' and its value, and K's TTL is its lease, as a mutex
 * holder's is: it takes and gives back the lock with the mutex's commands,
 * no clock, no sorted set. Shared, K holds RL_RW_MARK alone, and K:rd has
 * each reader's value scored by the end of its lease on the node's clock
 * (a second reader turns the lone form into this one, with the first
 * reader's lease end read from K's TTL). K and K:rd always last at least
 * as long as every lease that runs (rl_cover), so K is free only when no
 * reader's lease runs on this node; while K has the lone form, its reader's
 * lease is the only one that runs (that form is only written where K was
 * free or a writer's). Ended leases are ignored and go with K:rd's TTL;
 * the last reader to leave frees K. K:wi, a waiting writer's intent, keeps
 * new readers out for ARGV[7] ms after each of its refused attempts; it
 * holds the writer's registration (or value), so the last reader's release
 * wakes that writer first. */
#define RL_RW_LUA \
    "local k, q, l, rd, wi = KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6] " RL_RW_FNS
/* The functions, on the locals k and rd. rl_take writes a granted reader's
 * lease, v being K's value (false if free, or of another type: then SET NX
 * fails and GET raises WRONGTYPE, rl_script_rw_read's): the lone form where K was free
 * (or already this reader's), a lease in K:rd where readers share, and the
 * lone form turned into the shared one (the first reader's lease ends when
 * K's TTL does). */
#define RL_RW_FNS \
    "local function rl_clock() local t = redis.call('time') " \
    "return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end " \
    "local function rl_cover(ms) if redis.call('pttl', k) < ms then " \
    "redis.call('pexpire', k, ms) redis.call('pexpire', rd, ms) end end " \
    "local function rl_rdr(v) return v == '" RL_RW_MARK "' or string.sub(v, 1, 8) == '" RL_RW_MARK ":' end " \
    "local function rl_take(v, val, ttl) local one = '" RL_RW_MARK ":' .. val " \
    "if not v then if not redis.call('set', k, one, 'NX', 'PX', ttl) then redis.call('get', k) end " \
    "elseif v == one then redis.call('set', k, one, 'PX', ttl) " \
    "elseif v == '" RL_RW_MARK "' then redis.call('zadd', rd, rl_clock() + ttl, val) rl_cover(ttl) " \
    "else local now, p = rl_clock(), redis.call('pttl', k) if p < 0 then p = ttl end " \
    "redis.call('zadd', rd, now + p, string.sub(v, 9), now + ttl, val) " \
    "if ttl > p then p = ttl end redis.call('set', k, '" RL_RW_MARK "', 'PX', p) redis.call('pexpire', rd, p) end end "
#define RL_RW_WRITER_VALUE(v) \
    "(#" v " == 41 and string.sub(" v ", 1, 1) == 'w' and not string.find(" v ", '[^0-9a-f]', 2))"
/* ARGV: value, ttl, registration ('' none), ticket, lease, mode, intent ms.
 * Mode: 'R' read or 'W' write; 'j', 'r', 'd', 'c' as rl_script_acquire's; 'i'
 * leave an intent when refused (a registered writer's intent is not
 * overwritten by another's; an unregistered one's value changes with each
 * attempt, so it is). A writer's grant clears the intent: other writers
 * still waiting set it again on their next refusal. Replies as
 * rl_script_acquire's. A reader that finds K free takes it in the lone form
 * (one SET); one that finds a lone reader there (not itself) turns K into
 * the shared form. A granted reader that waited wakes the next
 * waiter: readers queued behind a writer's release come in one after
 * another, and the chain stops at a writer, which is refused while they
 * read. (A reader that did not wait found the lock free for readers, so
 * nobody waited for readers to be let in.) */
const char rl_script_rw_acquire[] =
    RL_WAKE_LUA RL_RW_LUA
    "local me, mode, ttl = ARGV[3], ARGV[6], tonumber(ARGV[2]) "
    "local function has(c) return string.find(mode, c, 1, true) ~= nil end "
    "local read, tag = has('R'), ARGV[1] if me ~= '' then tag = me end "
    "local v, ok, t, marked = false, false, -1, 0 "
    "if read then local g = redis.call('mget', k, wi) v = g[1] "
    "if not v or rl_rdr(v) then if g[2] then t = redis.call('pttl', wi) else ok = true end end "
    "else v = redis.call('get', k) ok = not v end "
    "if ok then "
    "if read then rl_take(v, ARGV[1], ttl) else redis.call('set', k, ARGV[1], 'PX', ttl) redis.call('del', wi) end "
    "if me ~= '' then if has('d') then rl_drop(q, l, me) end "
    "if read and rl_has(q) then rl_wake(q, l, me, ARGV[1], k) end end "
    "if has('c') then return {1, redis.call('get', KEYS[4]) or '0'} end return {1} end "
    "if not read and has('i') then local i = redis.call('get', wi) "
    "if not i or i == tag or not string.find(i, ':', 1, true) then redis.call('set', wi, tag, 'PX', ARGV[7]) i = tag end "
    "if v and rl_rdr(v) and i == tag and me ~= '' then marked = 1 end end "
    "if me ~= '' and has('j') then local added = redis.pcall('zadd', q, 'NX', ARGV[4], me) "
    "if added == 1 or has('r') then local now = rl_now() if now then "
    "local lease = tonumber(ARGV[5]) if added == 1 then rl_purge(q, l, now) end "
    "redis.pcall('zadd', l, now + lease, me) redis.pcall('pexpire', q, lease) redis.pcall('pexpire', l, lease) "
    "end end end "
    "if t < 0 and v then t = redis.call('pttl', k) "
    "if not rl_rdr(v) and " RL_RW_WRITER_VALUE("v") " then marked = 1 end end "
    "return {0, t, marked}";
/* A read attempt with nothing more to do (mode "R": no registration, no
 * counter), which is every first attempt of a reader that is not woken:
 * rl_script_rw_acquire's decision in a short script with short arguments,
 * as every argument costs the node time to parse and to copy into Lua.
 * KEYS: K, K:rd, K:wi. ARGV: value, ttl. Where K is free and no writer's
 * intent waits it is one MGET and one SET, before any function is made.
 * Granted: 1 (not {1}: a table reply costs the node more to convert);
 * refused: as rl_script_rw_acquire's. MGET says nothing (nil) of a key of
 * another type, so the SET is NX: where K is such a key, GET then fails
 * with WRONGTYPE, as it does in the other scripts, and K stays. */
const char rl_script_rw_read[] =
    "local k, rd, wi = KEYS[1], KEYS[2], KEYS[3] "
    "local g = redis.call('mget', k, wi) local v = g[1] "
    "if not v and not g[2] then "
    "if redis.call('set', k, '" RL_RW_MARK ":' .. ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end "
    "return redis.call('get', k) end "
    RL_RW_FNS
    "if g[2] and (not v or rl_rdr(v)) then return {0, redis.call('pttl', wi), 0} end "
    "if rl_rdr(v) then rl_take(v, ARGV[1], tonumber(ARGV[2])) return 1 end "
    "return {0, redis.call('pttl', k), " RL_RW_WRITER_VALUE("v") " and 1 or 0}";
/* ARGV: value, ttl. A reader's lease runs ttl from now if it still runs:
 * the lone form's is K's TTL. */
const char rl_script_rw_extend[] =
    RL_RW_LUA
    "local v = redis.call('get', k) "
    "if v == '" RL_RW_MARK ":' .. ARGV[1] then return redis.call('pexpire', k, ARGV[2]) end "
    "if v ~= '" RL_RW_MARK "' then return 0 end "
    "local now = rl_clock() local s = redis.call('zscore', rd, ARGV[1]) "
    "if not s or tonumber(s) <= now then return 0 end "
    "redis.call('zadd', rd, now + tonumber(ARGV[2]), ARGV[1]) rl_cover(tonumber(ARGV[2])) return 1";
/* ARGV: value, wake ('0': nobody), our registration ('' if none): a
 * reader that won with a plain attempt while the nodes were not calm
 * (acquire.c) is still in the queue, and leaves it here, as with
 * rl_script_release. 0 if the reader's lease had run out here. A lone
 * reader deletes K, as a mutex holder does, and with no queue that is all
 * (GET, DEL and the queue's check, before any function is made); in the
 * shared form, the last reader frees K. Then, when waiters are queued, the
 * release wakes the writer whose intent waits (a waiting writer that left
 * an intent under its registration is queued), or else the first one. */
const char rl_script_rw_release[] =
    "local v, freed = redis.call('get', KEYS[1]), false "
    "if ARGV[3] == '' and v == '" RL_RW_MARK ":' .. ARGV[1] then redis.call('del', KEYS[1]) freed = true "
    "if ARGV[2] == '0' then return 1 end local e = redis.pcall('get', KEYS[2]) "
    "if not (type(e) == 'table' and e.err ~= nil) then return 1 end end "
    RL_WAKE_LUA RL_RW_LUA
    "if not freed then "
    "if ARGV[3] ~= '' and rl_has(q) then rl_drop(q, l, ARGV[3]) end "
    "if v == '" RL_RW_MARK ":' .. ARGV[1] then redis.call('del', k) else "
    "local now = rl_clock() local s = redis.call('zscore', rd, ARGV[1]) if not s then return 0 end "
    "redis.call('zrem', rd, ARGV[1]) if tonumber(s) <= now then return 0 end "
    "if redis.call('zcount', rd, '(' .. now, '+inf') > 0 then return 1 end "
    "if v == '" RL_RW_MARK "' then redis.call('del', k) end end "
    "if ARGV[2] == '0' or not rl_has(q) then return 1 end end "
    "local i = redis.call('get', wi) "
    "if i and string.find(i, ':', 1, true) then "
    "local n = redis.pcall('publish', rl_chan(i), i .. ' ' .. ARGV[1] .. '\\n' .. k) "
    "if not rl_bad(n) and n > 0 then return 1 end end "
    "rl_wake(q, l, ARGV[3], ARGV[1], k) return 1";
/* ARGV: value, ttl. The writer becomes a lone reader in one step (one SET
 * of K), so no other writer can come in between; readers waiting are
 * woken. */
const char rl_script_rw_downgrade[] =
    RL_WAKE_LUA RL_RW_LUA
    "if redis.call('get', k) ~= ARGV[1] then return 0 end "
    "redis.call('set', k, '" RL_RW_MARK ":' .. ARGV[1], 'PX', ARGV[2]) "
    "if rl_has(q) then rl_wake(q, l, '', ARGV[1], k) end return 1";
/* ARGV: value, wake, registration. A writer that stops waiting: its intent
 * goes, if it is still its own (its registration, or its last value). */
const char rl_script_rw_give_up[] =
    "local i = redis.call('get', KEYS[6]) "
    "if i and (i == ARGV[1] or (ARGV[3] ~= '' and i == ARGV[3])) then redis.call('del', KEYS[6]) end return 1";

/* A node's epoch (epoch.c, docs/algorithm.md "Quarantine"). KEYS: the
 * marker M, whose absence means the node's data went (a restart without
 * persistence, a wipe, a failover to a replica that missed it), and Q, the
 * reason of the node's quarantine ("<length ms> <why>", PX the length).
 * M's value is the longest TTL recorded; its PTTL says the rest in bands
 * (internal.h, RL_EPOCH_BASE_MS): made with PX RL_EPOCH_BORN_MS, put out of
 * the vote for Q ms with PX RL_EPOCH_BASE_MS + Q. ARGV: mode, the caller's TTL, the
 * quarantine's length in ms, its reason. Modes: 'c' checks (and records
 * the TTL), 'f' marks a new deployment, 'q' marks a node that lost its
 * data and puts it out, 'j' puts out a node whose clock jumped; a longer
 * quarantine already there stays. Returns {M there (0/1), the longest TTL,
 * M's PTTL (-3 unknown), Q's reason or '', 1 if the ACL allows PTTL}: a
 * client that has its TTL recorded and PTTL allowed checks with a plain
 * PTTL of M instead (proto.c). PTTL is read only where the ACL allows it
 * (without it, no clock check and no young markers; nothing in ACL LOG). A
 * marker without a TTL (made before the bands) gets the base. */
const char rl_script_epoch[] =
    "local B, N, Y = " RL_EPOCH_BASE_MS_STR ", " RL_EPOCH_BORN_MS_STR ", " RL_EPOCH_YOUNG_MS_STR " "
    "local md, qms = ARGV[1], tonumber(ARGV[3]) "
    "local ok = 1 if redis.acl_check_cmd and not redis.acl_check_cmd('pttl', KEYS[1]) then ok = 0 end "
    "local function pttl() if ok == 0 then return -3 end local t = redis.pcall('pttl', KEYS[1]) "
    "if type(t) ~= 'number' then ok = 0 return -3 end return t end "
    "local m = redis.call('get', KEYS[1]) local p = pttl() "
    "local out = md == 'q' or md == 'j' local want = N if out then want = B + qms end "
    "local w = false "
    "if not m then if md == 'c' then return {0, 0, -2, '', ok} end "
    "redis.call('set', KEYS[1], ARGV[2], 'px', string.format('%.0f', want)) m = ARGV[2] w = true "
    "if out then redis.call('set', KEYS[2], ARGV[3] .. ' ' .. ARGV[4], 'px', ARGV[3]) end "
    "else if p == -1 then redis.call('pexpire', KEYS[1], string.format('%.0f', N - Y)) w = true end "
    "if out and p < want then redis.call('pexpire', KEYS[1], string.format('%.0f', want)) "
    "redis.call('set', KEYS[2], ARGV[3] .. ' ' .. ARGV[4], 'px', ARGV[3]) w = true end end "
    "local old = tonumber(string.match(m, '^%d+')) or 0 "
    "if tonumber(ARGV[2]) > old then redis.call('set', KEYS[1], ARGV[2], 'keepttl') old = tonumber(ARGV[2]) end "
    "if w then p = pttl() end "
    "local q = redis.call('get', KEYS[2]) "
    "return {1, old, p, q and (string.match(q, '^%-?%d+ (.*)$') or q) or '', ok}";

char rl_sha_release[41];
char rl_sha_extend[41];
char rl_sha_acquire[41];
char rl_sha_leave[41];
char rl_sha_fence_commit[41];
char rl_sha_elect[41];
char rl_sha_rw_acquire[41];
char rl_sha_rw_extend[41];
char rl_sha_rw_release[41];
char rl_sha_rw_downgrade[41];
char rl_sha_rw_give_up[41];
char rl_sha_rw_read[41];
char rl_sha_epoch[41];

static const struct {
    const char *function;
    const char *body;
} library[] = {
    { "redlock_release", rl_script_release },
    { "redlock_extend", rl_script_extend },
    { "redlock_acquire", rl_script_acquire },
    { "redlock_leave", rl_script_leave },
    { "redlock_fence_commit", rl_script_fence_commit },
    { "redlock_elect", rl_script_elect },
    { "redlock_rw_acquire", rl_script_rw_acquire },
    { "redlock_rw_extend", rl_script_rw_extend },
    { "redlock_rw_release", rl_script_rw_release },
    { "redlock_rw_downgrade", rl_script_rw_downgrade },
    { "redlock_rw_give_up", rl_script_rw_give_up },
    /* The counting semaphore (semaphore.c) */
    { "redlock_sem_acquire", rl_script_sem_acquire },
    { "redlock_sem_extend", rl_script_sem_extend },
    { "redlock_sem_release", rl_script_sem_release },
    { "redlock_sem_fence_commit", rl_script_sem_fence_commit },
    { "redlock_extend_many", rl_script_extend_many },
    { "redlock_set_many", rl_script_set_many },
    { "redlock_release_many", rl_script_release_many },
    { "redlock_rw_read", rl_script_rw_read },
    /* The multi-resource lock (multilock.c) */
    { "redlock_multi_acquire", rl_script_multi_acquire },
    { "redlock_multi_extend", rl_script_multi_extend },
    { "redlock_multi_release", rl_script_multi_release },
    { "redlock_multi_fence_commit", rl_script_multi_fence_commit },
    { "redlock_multi_leave", rl_script_multi_leave },
    { "redlock_epoch", rl_script_epoch },
};

/* The same scripts as a Redis 7 function library: each body becomes a
 * function whose parameters carry the names the body uses. */
char rl_function_library[RL_FUNCTION_LIBRARY_MAX];

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;
static void scripts_init_once(void)
{
    rl_sha1_hex(rl_script_release, rl_sha_release);
    rl_sha1_hex(rl_script_extend, rl_sha_extend);
    rl_sha1_hex(rl_script_acquire, rl_sha_acquire);
    rl_sha1_hex(rl_script_leave, rl_sha_leave);
    rl_sha1_hex(rl_script_fence_commit, rl_sha_fence_commit);
    rl_sha1_hex(rl_script_elect, rl_sha_elect);
    rl_sha1_hex(rl_script_rw_acquire, rl_sha_rw_acquire);
    rl_sha1_hex(rl_script_rw_extend, rl_sha_rw_extend);
    rl_sha1_hex(rl_script_rw_release, rl_sha_rw_release);
    rl_sha1_hex(rl_script_rw_downgrade, rl_sha_rw_downgrade);
    rl_sha1_hex(rl_script_rw_give_up, rl_sha_rw_give_up);
    rl_sha1_hex(rl_script_sem_acquire, rl_sha_sem_acquire);
    rl_sha1_hex(rl_script_sem_extend, rl_sha_sem_extend);
    rl_sha1_hex(rl_script_sem_release, rl_sha_sem_release);
    rl_sha1_hex(rl_script_sem_fence_commit, rl_sha_sem_fence_commit);
    rl_sha1_hex(rl_script_extend_many, rl_sha_extend_many);
    rl_sha1_hex(rl_script_set_many, rl_sha_set_many);
    rl_sha1_hex(rl_script_release_many, rl_sha_release_many);
    rl_sha1_hex(rl_script_rw_read, rl_sha_rw_read);
    rl_sha1_hex(rl_script_multi_acquire, rl_sha_multi_acquire);
    rl_sha1_hex(rl_script_multi_extend, rl_sha_multi_extend);
    rl_sha1_hex(rl_script_multi_release, rl_sha_multi_release);
    rl_sha1_hex(rl_script_multi_fence_commit, rl_sha_multi_fence_commit);
    rl_sha1_hex(rl_script_multi_leave, rl_sha_multi_leave);
    rl_sha1_hex(rl_script_epoch, rl_sha_epoch);
    size_t len = (size_t)snprintf(rl_function_library, sizeof rl_function_library, "#!lua name=redlock\n");
    for (size_t k = 0; k < sizeof library / sizeof library[0]; k++) {
        int w = snprintf(rl_function_library + len, sizeof rl_function_library - len,
                         "redis.register_function('%s', function(KEYS, ARGV) %s end)\n", library[k].function,
                         library[k].body);
        if (w < 0 || (size_t)w >= sizeof rl_function_library - len) {
            /* A cut library fails to compile on every node with a message
             * that names no cause: a build that outgrew the buffer stops here. */
            fprintf(stderr, "redlock: the function library outgrew RL_FUNCTION_LIBRARY_MAX (%d bytes) at '%s'\n",
                    RL_FUNCTION_LIBRARY_MAX, library[k].function);
            abort();
        }
        len += (size_t)w;
    }
}

void rl_scripts_init(void)
{
    pthread_once(&scripts_once, scripts_init_once);
}
