/* SPDX-License-Identifier: BSD-3-Clause */
/* rwlock.c: the read-write lock (docs/algorithm.md, "Read-write locks").
 * A side of it is a lock handle of another kind: acquire, extend, release,
 * auto-extend, wake-up and the rest are the mutex's code, which calls the
 * hooks below where a side differs, and the scripts (scripts.c) decide on
 * each node. Here: the handles, the names of the lock's extra keys, the
 * acquisition round of each side, and the downgrade. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The keys next to the lock's key K (scripts.c): the readers' leases, and a
 * waiting writer's intent. Every name is made here, K and a suffix, so
 * that a key layout of another kind (a cluster's hash tags) is one change. */
static const char *const rw_suffix[2] = { RL_KEY_READERS, RL_KEY_INTENT };

/* "K:rd\0K:wi\0" for key K, with each name's length in len; NULL when out
 * of memory. */
static char *rw_key_names(const char *key, size_t key_len, size_t len[2])
{
    size_t total = 0;
    for (int k = 0; k < 2; k++) {
        len[k] = key_len + strlen(rw_suffix[k]);
        total += len[k] + 1;
    }
    char *names = malloc(total), *p = names;
    if (!names)
        return NULL;
    for (int k = 0; k < 2; k++) {
        memcpy(p, key, key_len);
        memcpy(p + key_len, rw_suffix[k], strlen(rw_suffix[k]) + 1);
        p += len[k] + 1;
    }
    return names;
}

static int new_side(redlock_lock **out, redlock_client *client, const char *resource, const rl_kind *kind,
                    char *errbuf, size_t errbuf_size)
{
    int rc = redlock_lock_open(out, client, resource, errbuf, errbuf_size);
    if (rc)
        return rc;
    redlock_lock *l = *out;
    l->rw_keys = rw_key_names(l->key, l->key_len, l->rw_keys_len);
    if (!l->rw_keys) {
        redlock_lock_free(l);
        *out = NULL;
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    l->kind = kind;
    return 0;
}

int redlock_lock_new_read(redlock_lock **out, redlock_client *client, const char *resource)
{
    return new_side(out, client, resource, &rl_kind_read, NULL, 0);
}

int redlock_lock_new_write(redlock_lock **out, redlock_client *client, const char *resource)
{
    return new_side(out, client, resource, &rl_kind_write, NULL, 0);
}

int redlock_lock_open_read(redlock_lock **out, redlock_client *client, const char *resource, char *errbuf,
                           size_t errbuf_size)
{
    return new_side(out, client, resource, &rl_kind_read, errbuf, errbuf_size);
}

int redlock_lock_open_write(redlock_lock **out, redlock_client *client, const char *resource, char *errbuf,
                            size_t errbuf_size)
{
    return new_side(out, client, resource, &rl_kind_write, errbuf, errbuf_size);
}

/* A reader always goes by the script. A writer is a plain SET NX PX, as a
 * mutex's, unless it waits (its refusals leave an intent), registers or
 * needs the counter. Fair mode is the mutex's: on a read-write lock the
 * order is writer preference, and the flag changes nothing. */
static void rw_acquire_round(redlock_lock *lock, rl_round *r, char *mode)
{
    char m[8];
    size_t n = 0;
    m[n++] = lock->kind == &rl_kind_read ? 'R' : 'W';
    for (const char *p = mode; *p; p++)
        if (*p != 'f')
            m[n++] = *p;
    if (lock->kind == &rl_kind_write && lock->rw_waiting)
        m[n++] = 'i';
    m[n] = '\0';
    memcpy(mode, m, n + 1);
    r->mode = mode;
    r->cmd = lock->kind == &rl_kind_read || n > 1 ? RL_CMD_RW_ACQUIRE : RL_CMD_SET;
}

/* A waiting writer asks again before its intent lapses. */
static int64_t rw_cap_delay(const redlock_lock *lock, int64_t delay_us)
{
    int64_t cap = (int64_t)RL_RW_INTENT_MS * 1000 / 3;
    return lock->rw_waiting && delay_us > cap ? cap : delay_us;
}

/* A reader's fencing token: the counter as the granting nodes have it (no commit). */
static uint64_t rw_reader_token(const rl_round *r)
{
    uint64_t max = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->out[i] == RL_YES && r->counter[i] > max)
            max = r->counter[i];
    return max;
}

/* A waiting writer that gave up takes its intent back, sent without
 * waiting for replies; member is its registration ("" for none). */
static void rw_give_up(redlock_lock *lock, const char *member)
{
    if (!lock->rw_waiting)
        return;
    rl_round r;
    rl_init_round(&r, lock, RL_CMD_RW_GIVE_UP, 0);
    r.member = member;   /* the intent may be kept under the registration */
    r.no_wait = 1;
    rl_round_run(lock->client, &r);
}

/* A reader extends and releases its own lease, not the writer's key. */
static rl_cmd rw_read_cmd(rl_cmd cmd)
{
    return cmd == RL_CMD_EXTEND ? RL_CMD_RW_EXTEND : cmd == RL_CMD_RELEASE ? RL_CMD_RW_RELEASE : cmd;
}

/* The two sides. A woken waiter of either asks by its script, not by a
 * plain SET (a reader's attempt is a script anyway, and one with its
 * registration wakes the next reader; a waiting writer's intent is kept
 * under its registration). A writer's extension is the mutex's, on its key. */
const rl_kind rl_kind_read = {
    .name = "read",
    .cmd = rw_read_cmd,
    .acquire_round = rw_acquire_round,
    .round_token = rw_reader_token,
};

const rl_kind rl_kind_write = {
    .name = "write",
    .acquire_round = rw_acquire_round,
    .cap_delay = rw_cap_delay,
    .give_up = rw_give_up,
    .batch_extend = 1,
};

/* After a failed downgrade the lock may be a writer on some nodes and a
 * reader on others: both are released, waiting for nothing. */
static void release_both(redlock_lock *lock)
{
    rl_round r;
    const rl_kind *sides[] = { &rl_kind_write, &rl_kind_read };
    for (size_t k = 0; k < 2; k++) {
        lock->kind = sides[k];
        rl_init_round(&r, lock, RL_CMD_RELEASE, 0);
        r.no_wait = 1;
        rl_round_run(lock->client, &r);
    }
    lock->kind = &rl_kind_write;
}

static int downgrade_locked(redlock_lock *lock)
{
    if (lock->kind != &rl_kind_write)
        return rl_lock_err(lock, REDLOCK_EINVAL, lock->kind == &rl_kind_read
                           ? "lock '%s' is a read lock: a read lock is never upgraded, and only a write lock is "
                             "downgraded (release it and acquire a write lock)"
                           : "lock '%s' is not a write lock (redlock_lock_new_write makes one)", lock->resource);
    int state = atomic_load(&lock->state);
    if (state == LOCK_LOST)
        return rl_lock_err(lock, lock->lost_code == REDLOCK_ELOST ? REDLOCK_ELOST : REDLOCK_EEXPIRED,
                           "lock '%s' was already lost: %.1900s", lock->resource,
                           lock->lost_msg ? lock->lost_msg : "");
    if (state != LOCK_HELD)
        return rl_lock_err(lock, REDLOCK_ESTATE, "lock '%s' is not held", lock->resource);
    redlock_client *c = lock->client;
    int64_t valid_until = atomic_load(&lock->valid_until_us);
    if (valid_until <= rl_now_us())
        return rl_lock_err(lock, REDLOCK_EEXPIRED, "write lock '%s' expired before its downgrade", lock->resource);

    rl_round r;
    rl_init_round(&r, lock, RL_CMD_RW_DOWNGRADE, lock->ttl_ms);
    r.cap_us = valid_until;   /* past it, the lock may have changed hands */
    rl_round_run(c, &r);
    rl_record_round(lock, &r, 0);
    int code = rl_decide_extend(r.out, r.n, c->quorum, r.decided_us, valid_until);
    if (code == 0) {
        lock->kind = &rl_kind_read;
        atomic_store(&lock->valid_until_us, r.start_us + (int64_t)lock->ttl_ms * 1000 - rl_drift_us(lock, lock->ttl_ms));
        atomic_fetch_add(&lock->n_ext, 1);
        return rl_lock_ok(lock);
    }
    rl_tally t = rl_tally_of(r.out, r.n);
    char m[RL_MSG_MAX];
    if (code == REDLOCK_ELOST)
        rl_fmt(m, sizeof m, "write lock '%s' lost before its downgrade: still ours on %d of %zu nodes, %d needed",
               lock->resource, t.yes, r.n, c->quorum);
    else if (code == REDLOCK_EEXPIRED)
        rl_fmt(m, sizeof m, "downgrade of '%s' confirmed only after its validity ran out", lock->resource);
    else
        rl_fmt(m, sizeof m, "downgrade of '%s' not confirmed: %d of %zu nodes confirmed, %d needed; the lock is "
               "released", lock->resource, t.yes, r.n, c->quorum);
    rl_describe_round(m, sizeof m, c, &r);
    release_both(lock);
    rl_mark_lost(lock, code, m, 0);
    return rl_lock_err(lock, code, "%s", m);
}

int redlock_lock_downgrade(redlock_lock *lock)
{
    if (!lock)
        return REDLOCK_EINVAL;
    /* Not while the auto-extend thread extends it as a writer in a batch
     * (it holds the mutex only to check and to record): after this, it
     * extends it as a reader. */
    rl_lock_unbatched(lock);
    int rc = downgrade_locked(lock);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}
