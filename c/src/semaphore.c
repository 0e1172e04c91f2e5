/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.c: the counting semaphore (docs/algorithm.md, "Counting
 * semaphore"). A semaphore K of limit L is L slots, K:s0 .. K:s<L-1>, each
 * a Redlock mutex key: a permit is a slot held on a majority, so at most L
 * permits are held at once, as at most one owner holds a mutex. The limit
 * is kept beside the slots (K:limit) so that a caller passing another
 * limit is told. A semaphore is a redlock_lock of another kind: acquire,
 * extend, release, auto-extend, fencing and wake-up run the mutex's code,
 * with the commands swapped for the scripts below (rl_init_round asks
 * rl_sem_cmd), and an acquisition round that may be repeated on slots the
 * nodes said are free (rl_sem_run, from acquire.c's attempt). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The keys beside K, named in one place: "K:limit", "K:s<i>". The C side
 * never needs them (the scripts derive them from KEYS[1]); this Lua helper
 * is the one place a cluster-aware naming would change. */
#define RL_SEM_AUX_LUA \
    "local function rl_aux(k, w) return k .. '" RL_SEM_SEP "' .. w end " \
    "local function rl_slot(k, i) return rl_aux(k, '" RL_SEM_SLOT_PREFIX "' .. i) end "

/* The wake-up helpers of scripts.c, repeated here (scripts.c keeps them to
 * itself): the same text, so waiters of both kinds are woken the same way. */
#define RL_SEM_WAKE_LUA \
    "local function rl_bad(v) return type(v) == 'table' and v.err ~= nil end " \
    "local function rl_now() local t = redis.pcall('time') if rl_bad(t) then return nil end " \
    "return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end " \
    "local function rl_chan(m) return 'redlock:wake:' .. string.match(m, '^[^:]*') end " \
    "local function rl_drop(q, l, m) redis.pcall('zrem', q, m) redis.pcall('zrem', l, m) end " \
    "local function rl_purge(q, l, now) local g = redis.pcall('zrangebyscore', l, '-inf', now, 'LIMIT', 0, 32) " \
    "if rl_bad(g) then return false end for _, m in ipairs(g) do rl_drop(q, l, m) end return true end " \
    "local function rl_wake(q, l, skip, tag, key) " \
    "for _ = 1, 8 do local h = redis.pcall('zrange', q, 0, 1) if rl_bad(h) or not h[1] then return end " \
    "local m = h[1] if m == skip then m = h[2] end if not m then return end " \
    "local n = redis.pcall('publish', rl_chan(m), m .. ' ' .. tag .. '\\n' .. key) if rl_bad(n) then return end " \
    "if n > 0 then return end rl_drop(q, l, m) end end "

/* Acquisition. KEYS: K, K:wq, K:wl, K:fencing. ARGV: value, ttl, our
 * registration, ticket, lease, mode (as rl_script_acquire's, 'f' aside),
 * the limit L, the slots asked for ("3" or "3,4": all or none). First the
 * limit: a node that keeps another one while any of its slots is held
 * answers {-1, its limit}; with none held, the new limit replaces it.
 * Granted: {1} or {1, counter}, each slot set to the value with the TTL,
 * and K:limit kept at least as long. Refused (a slot asked for is taken):
 * {0, ms until the first holder's key expires, 1 if that holder's release
 * wakes us and no slot is free, free slots, the first free slots from the
 * first one asked for on, up to 8, "5,6"}: the client's next round asks
 * for a slot free on a majority. A refusal reads every slot: O(L). */
const char rl_script_sem_acquire[] =
    RL_SEM_WAKE_LUA RL_SEM_AUX_LUA
    "local k, q, l, me, mode = KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[6] "
    "local lk, lim = rl_aux(k, 'limit'), tonumber(ARGV[7]) "
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
    "if not v then nfree = nfree + 1 if #fr < 8 then fr[#fr + 1] = i end "
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
    "local lk = rl_aux(KEYS[1], 'limit') local t = redis.call('pttl', lk) "
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
    RL_SEM_WAKE_LUA
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

rl_cmd rl_sem_cmd(rl_cmd cmd)
{
    switch (cmd) {
    case RL_CMD_SET:
    case RL_CMD_ACQUIRE: return RL_CMD_SEM_ACQUIRE;
    case RL_CMD_EXTEND: return RL_CMD_SEM_EXTEND;
    case RL_CMD_RELEASE: return RL_CMD_SEM_RELEASE;
    case RL_CMD_FENCE_COMMIT: return RL_CMD_SEM_FENCE_COMMIT;
    default: return cmd;   /* LEAVE: the semaphore's queue is K's, as a mutex's */
    }
}

int redlock_lock_open_semaphore(redlock_lock **out, redlock_client *client, const char *resource, uint32_t limit,
                                uint32_t permits, char *errbuf, size_t errbuf_size)
{
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!out) {
        rl_fmt(errbuf, errbuf_size, "out is NULL");
        return REDLOCK_EINVAL;
    }
    *out = NULL;
    if (limit == 0 || limit > REDLOCK_MAX_SEM_LIMIT) {
        rl_fmt(errbuf, errbuf_size, "the semaphore's limit is %u: it must be 1 to %u", limit,
               (unsigned)REDLOCK_MAX_SEM_LIMIT);
        return REDLOCK_EINVAL;
    }
    if (permits == 0 || permits > limit) {
        rl_fmt(errbuf, errbuf_size, "%u permits asked for at once: it must be 1 to the limit, %u", permits, limit);
        return REDLOCK_EINVAL;
    }
    redlock_lock *l;
    int rc = redlock_lock_open(&l, client, resource, errbuf, errbuf_size);
    if (rc)
        return rc;
    l->sem_slots = calloc(permits, 5);   /* "999," each, the last comma a NUL */
    if (!l->sem_slots) {
        redlock_lock_free(l);
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    l->kind = RL_KIND_SEM;
    l->sem_limit = limit;
    l->sem_permits = permits;
    *out = l;
    return 0;
}

int redlock_lock_new_semaphore(redlock_lock **out, redlock_client *client, const char *resource, uint32_t limit,
                               uint32_t permits)
{
    return redlock_lock_open_semaphore(out, client, resource, limit, permits, NULL, 0);
}

int redlock_lock_semaphore_limit(const redlock_lock *lock, uint32_t *limit_out, uint32_t *permits_out)
{
    if (!lock || lock->kind != RL_KIND_SEM)
        return REDLOCK_EINVAL;
    if (limit_out)
        *limit_out = lock->sem_limit;
    if (permits_out)
        *permits_out = lock->sem_permits;
    return 0;
}

static void write_slots(redlock_lock *lock, const uint32_t *pick, uint32_t p)
{
    char *s = lock->sem_slots;
    size_t size = (size_t)lock->sem_permits * 5;
    s[0] = '\0';
    for (uint32_t k = 0; k < p; k++)
        rl_append(s, size, k ? ",%u" : "%u", pick[k]);
}

/* The clean-up after a round lost: a release, waking nobody, wherever our
 * value may have landed (as acquire.c's attempt does). */
static void clean_up(redlock_lock *lock, const rl_round *r)
{
    rl_round rel;
    rl_init_round(&rel, lock, RL_CMD_RELEASE, 0);
    rel.no_wait = 1;
    rel.wake = 0;
    rl_tally t = rl_tally_of(r->out, r->n);
    int any = 0, refused_only = t.no + t.unsent == (int)r->n;
    for (size_t i = 0; i < r->n; i++) {
        rl_outcome o = r->out[i];
        rel.skip[i] = o == RL_NO || o == RL_ERR_DOWN || (o == RL_UNSENT && r->sent[i] && refused_only);
        any |= !rel.skip[i];
    }
    if (any)
        rl_round_run(lock->client, &rel);
}

/* The p slots free on the most nodes, at least a quorum (ties at random),
 * after a round refused: a node that granted had the slots it was asked
 * for free; one that refused named its first free ones. 1 if found. */
static int choose(const redlock_lock *lock, const rl_round *r, uint32_t *pick)
{
    uint32_t L = lock->sem_limit, p = lock->sem_permits;
    uint16_t *cnt = calloc(L, sizeof *cnt);
    uint32_t *cand = malloc(L * sizeof *cand);
    int ok = 0;
    if (!cnt || !cand)
        goto out;
    for (size_t i = 0; i < r->n; i++) {
        if (r->out[i] == RL_YES) {
            for (uint32_t k = 0; k < p; k++)
                cnt[pick[k]]++;
        } else if (r->out[i] == RL_NO) {
            for (unsigned k = 0; k < r->sem_listed[i]; k++)
                if (r->sem_free[i][k] < L)
                    cnt[r->sem_free[i][k]]++;
        }
    }
    uint32_t n = 0;
    for (uint32_t s = 0; s < L; s++)
        if (cnt[s] >= r->quorum)
            cand[n++] = s;
    if (n < p)
        goto out;
    /* Shuffle, then order by count, highest first (stable insertion). */
    for (uint32_t a = n; a > 1; a--) {
        uint32_t b = rl_random_below(a), t = cand[a - 1];
        cand[a - 1] = cand[b];
        cand[b] = t;
    }
    for (uint32_t a = 1; a < n; a++)
        for (uint32_t b = a; b > 0 && cnt[cand[b - 1]] < cnt[cand[b]]; b--) {
            uint32_t t = cand[b];
            cand[b] = cand[b - 1];
            cand[b - 1] = t;
        }
    memcpy(pick, cand, p * sizeof *pick);
    ok = 1;
out:
    free(cnt);
    free(cand);
    return ok;
}

#define SEM_ROUNDS 3   /* rounds per attempt: the proposal, then two informed picks */

int rl_sem_run(redlock_lock *lock, rl_round *r)
{
    redlock_client *c = lock->client;
    uint32_t L = lock->sem_limit, p = lock->sem_permits;
    uint32_t *pick = malloc(p * sizeof *pick);
    if (!pick)
        return rl_lock_err(lock, REDLOCK_ENOMEM, "out of memory");
    /* The proposal: p slots in a row from a random start, so that
     * contenders that all find permits free mostly ask for different ones. */
    uint32_t start = rl_random_below(L);
    for (uint32_t k = 0; k < p; k++)
        pick[k] = (start + k) % L;
    write_slots(lock, pick, p);
    int rc = 0;
    for (int round = 1;; round++) {
        memset(r->sem_other, 0, sizeof r->sem_other);
        memset(r->sem_listed, 0, sizeof r->sem_listed);
        memset(r->sem_nfree, 0, sizeof r->sem_nfree);
        rl_round_run(c, r);
        rl_tally t = rl_tally_of(r->out, r->n);
        if (t.yes >= r->quorum)
            break;
        size_t other = r->n;
        for (size_t i = 0; i < r->n && other == r->n; i++)
            if (r->sem_other[i])
                other = i;
        if (other < r->n) {
            clean_up(lock, r);
            rl_record_round(lock, r, 0);
            rc = rl_lock_err(lock, REDLOCK_EINVAL,
                             "semaphore '%s' is in use with a limit of %u (node %s), not %u as given: every user "
                             "of a semaphore must pass the same limit",
                             lock->resource, r->sem_other[other], c->nodes[other].ep.display, L);
            break;
        }
        if (round == SEM_ROUNDS || !choose(lock, r, pick))
            break;
        /* A slot free on a majority: ask for it at once, under a new value
         * (a late grant of the round before is released by its own value). */
        clean_up(lock, r);
        lock->value[0] = RL_VALUE_MARK;
        if (rl_random_hex(lock->value + 1, RL_VALUE_BYTES) != 0) {
            rc = rl_lock_err(lock, REDLOCK_EIO, "getrandom failed: %s", strerror(errno));
            break;
        }
        write_slots(lock, pick, p);
        r->start_us = rl_now_us();
        r->cap_us = r->start_us + (int64_t)r->ttl_ms * 1000;
    }
    free(pick);
    return rc;
}
