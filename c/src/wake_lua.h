/* SPDX-License-Identifier: BSD-3-Clause */
/* wake_lua.h: the Lua that every script waking a waiter starts with, one
 * text for all kinds of lock, so that waiters are woken the same way. */
#ifndef RL_WAKE_LUA_H
#define RL_WAKE_LUA_H

/* Shared by the scripts that wake a waiter (scripts.c, semaphore_scripts.c): the node's clock in ms
 * (nil if TIME is refused), rl_purge, which drops lapsed registrations
 * (run when a waiter registers, and by fair mode's check), and rl_wake,
 * which publishes "<registration> <tag>\n<key>" (tag: the released value,
 * or the registration that left; a client reads up to the first space, as
 * earlier versions did, so versions wake each other's waiters) to the
 * client of the first remaining one (skipping `skip`, the caller's own
 * registration) until a client listens: PUBLISH says how many received
 * it, so a waiter whose process died is dropped at once. A client that
 * gets a message for a registration that no longer waits (its leave was
 * lost with a node's connection) sends the leave for that key
 * (engine/listen.c), which wakes the next waiter. rl_has
 * tells whether the queue exists by the WRONGTYPE error that GET gives on a
 * sorted set: GET is a command every lock user may run, so users without
 * the queue's commands (docs/security.md) see no ACL denials from
 * releases. Nothing is reserved for the woken waiter: a free lock goes to
 * whoever asks first (fair mode aside), so a registration that only some
 * nodes know, or a waiter that never comes, can hold nobody up. */
#define RL_WAKE_LUA \
    "local function rl_bad(v) return type(v) == 'table' and v.err ~= nil end " \
    "local function rl_now() local t = redis.pcall('time') if rl_bad(t) then return nil end " \
    "return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end " \
    "local function rl_chan(m) return 'redlock:wake:' .. string.match(m, '^[^:]*') end " \
    "local function rl_drop(q, l, m) redis.pcall('zrem', q, m) redis.pcall('zrem', l, m) end " \
    "local function rl_has(q) local e = redis.pcall('get', q) return rl_bad(e) end " \
    "local function rl_purge(q, l, now) local g = redis.pcall('zrangebyscore', l, '-inf', now, 'LIMIT', 0, 32) " \
    "if rl_bad(g) then return false end for _, m in ipairs(g) do rl_drop(q, l, m) end return true end " \
    "local function rl_wake(q, l, skip, tag, key) " \
    "for _ = 1, 8 do local h = redis.pcall('zrange', q, 0, 1) if rl_bad(h) or not h[1] then return end " \
    "local m = h[1] if m == skip then m = h[2] end if not m then return end " \
    "local n = redis.pcall('publish', rl_chan(m), m .. ' ' .. tag .. '\\n' .. key) if rl_bad(n) then return end " \
    "if n > 0 then return end rl_drop(q, l, m) end end "

#endif
