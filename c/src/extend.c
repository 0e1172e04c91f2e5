/* SPDX-License-Identifier: BSD-3-Clause */
/* extend.c: a held lock: its validity and the clock-drift allowance, the
 * round every operation on it starts from, one extension (the owner's
 * redlock_lock_extend and the auto-extend thread both run rl_extend_locked),
 * and its loss. Below lock.c and watch.c, which both use it. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int64_t rl_drift_us(const redlock_lock *lock, uint32_t ttl_ms)
{
    return (int64_t)((double)ttl_ms * lock->pol.drift_factor * 1000.0) + (int64_t)lock->pol.drift_min_ms * 1000;
}

/* "" or the reason ttl_ms cannot be used, in msg; 0 or REDLOCK_EINVAL. */
int rl_ttl_problem(const redlock_lock *lock, uint32_t ttl_ms, char *msg, size_t size)
{
    if (ttl_ms == 0) {
        rl_fmt(msg, size, "ttl_ms must be greater than 0");
        return REDLOCK_EINVAL;
    }
    if (ttl_ms > REDLOCK_MAX_TTL_MS) {
        rl_fmt(msg, size, "ttl_ms %u is over the limit of %u (one day); use extend for longer holds", ttl_ms,
               REDLOCK_MAX_TTL_MS);
        return REDLOCK_EINVAL;
    }
    int64_t d = rl_drift_us(lock, ttl_ms);
    if (d >= (int64_t)ttl_ms * 1000) {
        rl_fmt(msg, size, "ttl_ms %u is too small: the clock-drift allowance (%lld ms) leaves no validity", ttl_ms,
               (long long)(d / 1000));
        return REDLOCK_EINVAL;
    }
    return 0;
}

void rl_init_round(rl_round *r, redlock_lock *lock, rl_cmd cmd, uint32_t ttl_ms)
{
    r->cmd = cmd;
    r->key = lock->key;
    r->key_len = lock->key_len;
    r->fkey = lock->key;
    r->fkey_len = lock->fkey_len;
    r->token = NULL;
    r->value = lock->value;
    r->member = lock->member;   /* a release does not wake the releaser's own registration */
    r->mode = "";
    r->ticket = 0;
    r->lease_ms = 0;
    r->wake = 1;
    r->ttl_ms = ttl_ms;
    r->start_us = rl_now_us();
    r->cap_us = 0;
    r->quorum = lock->client->quorum;
    r->no_wait = 0;
    r->n = lock->client->n;
    r->batch = NULL;
    r->check = NULL;
    memset(r->skip, 0, r->n);
    /* A read-write lock's rounds carry its keys (rwlock.c); a reader
     * extends and releases its own lease. */
    r->rw_keys[0] = lock->rw_keys;
    r->rw_keys[1] = lock->rw_keys ? lock->rw_keys + lock->rw_keys_len[0] + 1 : NULL;
    r->rw_keys_len[0] = lock->rw_keys_len[0];
    r->rw_keys_len[1] = lock->rw_keys_len[1];
    r->intent_ms = RL_RW_INTENT_MS;
    /* A semaphore's permit: the same operation on its slots (semaphore.c). */
    r->sem_slots = lock->sem_slots;
    r->sem_limit = lock->sem_limit;
    /* A multi-resource lock: the same operation on every key of its set (multilock.c). */
    r->multi = lock->multi;
    /* The kind's own command for it: a reader's lease, a semaphore's slots, a set's keys. */
    if (lock->kind->cmd)
        r->cmd = lock->kind->cmd(cmd);
}

void rl_mark_lost(redlock_lock *lock, int code, const char *msg, int automatic)
{
    lock->lost_code = code;
    free(lock->lost_msg);
    lock->lost_msg = strdup(msg);   /* NULL if out of memory: read as "" */
    atomic_store(&lock->state, LOCK_LOST);
    atomic_store(&lock->token, 0);
    rl_emit(lock, REDLOCK_EVENT_LOST, code, msg, NULL, automatic, 0, 0);
}

/* What rules an extension out before any round (shared with extend_many.c). */
int rl_extend_check(redlock_lock *lock, uint32_t ttl_ms, int64_t now, char *m, size_t msize)
{
    m[0] = '\0';
    int rc = rl_ttl_problem(lock, ttl_ms, m, msize);
    if (rc)
        return rc;
    int state = atomic_load(&lock->state);
    if (state == LOCK_LOST) {
        rl_fmt(m, msize, "lock '%s' was already lost: %s", lock->resource, lock->lost_msg ? lock->lost_msg : "");
        return lock->lost_code == REDLOCK_ELOST ? REDLOCK_ELOST : REDLOCK_EEXPIRED;
    }
    if (state != LOCK_HELD) {
        rl_fmt(m, msize, "lock '%s' is not held", lock->resource);
        return REDLOCK_ESTATE;
    }

    redlock_client *c = lock->client;
    int64_t valid_until = atomic_load(&lock->valid_until_us);
    if (valid_until <= now) {
        rl_fmt(m, msize, "lock '%s' expired %lld ms ago; an expired lock is never extended", lock->resource,
               (long long)((now - valid_until) / 1000));
        return REDLOCK_EEXPIRED;
    }
    uint32_t n_ext = atomic_load(&lock->n_ext);
    if (c->opts.max_extensions && n_ext >= c->opts.max_extensions) {
        rl_fmt(m, msize, "lock '%s' was extended %u times, the limit (max_extensions)", lock->resource, n_ext);
        return REDLOCK_ELIMIT;
    }
    if (c->opts.max_hold_ms &&
        now + (int64_t)ttl_ms * 1000 - lock->acquired_us > (int64_t)c->opts.max_hold_ms * 1000) {
        rl_fmt(m, msize, "extending '%s' by %u ms would hold it past max_hold_ms (%u)", lock->resource, ttl_ms,
               c->opts.max_hold_ms);
        return REDLOCK_ELIMIT;
    }
    return 0;
}

int rl_extend_begin(redlock_lock *lock, uint32_t ttl_ms, rl_round *r, int64_t *valid_until, char *m, size_t msize)
{
    int rc = rl_extend_check(lock, ttl_ms, rl_now_us(), m, msize);
    if (rc)
        return rc;
    *valid_until = atomic_load(&lock->valid_until_us);
    rl_init_round(r, lock, RL_CMD_EXTEND, ttl_ms);
    /* Replies after the current validity are useless: the lock may have
     * changed hands in between. */
    r->cap_us = *valid_until;
    return 0;
}

int rl_extend_end(redlock_lock *lock, const rl_round *r, uint32_t ttl_ms, int64_t valid_until, int automatic,
                  char *m, size_t msize)
{
    redlock_client *c = lock->client;
    rl_record_round(lock, r, automatic);
    rl_tally t = rl_tally_of(r->out, r->n);
    int unknown = (int)r->n - t.yes - t.no;
    /* Within validity means when the quorum confirmed, not when the last
     * straggler was read. */
    int code = rl_decide_extend(r->out, r->n, c->quorum, r->decided_us, valid_until);
    if (code == 0) {
        atomic_store(&lock->valid_until_us, r->start_us + (int64_t)ttl_ms * 1000 - rl_drift_us(lock, ttl_ms));
        atomic_fetch_add(&lock->n_ext, 1);
        rl_emit(lock, REDLOCK_EVENT_EXTENDED, 0, NULL, r, automatic, 0, r->decided_us - r->start_us);
        return 0;
    }
    if (code == REDLOCK_ELOST)
        rl_fmt(m, msize, "lock '%s' lost: still ours on %d of %zu nodes, %d needed", lock->resource, t.yes, r->n,
               c->quorum);
    else if (code == REDLOCK_EEXPIRED)
        rl_fmt(m, msize, "extension of '%s' confirmed only after its validity ran out", lock->resource);
    else
        rl_fmt(m, msize, "could not extend '%s': %d of %zu nodes confirmed, %d needed, %d could not answer",
               lock->resource, t.yes, r->n, c->quorum, unknown);
    rl_describe_round(m, msize, c, r);
    if (code == REDLOCK_ELOST)
        rl_mark_lost(lock, code, m, automatic);
    else
        rl_emit(lock, REDLOCK_EVENT_EXTEND_FAILED, code, m, r, automatic, 0, r->decided_us - r->start_us);
    return code;
}

/* One extension of a held lock, its mutex held: by the owner
 * (redlock_lock_extend) or by the auto-extend thread (automatic). Not past the
 * current validity, nor past max_extensions or max_hold_ms. 0, or a failure
 * code with the reason in m; a lock found lost is marked so. */
int rl_extend_locked(redlock_lock *lock, uint32_t ttl_ms, int automatic, char *m, size_t msize)
{
    rl_round r;
    int64_t valid_until;
    int rc = rl_extend_begin(lock, ttl_ms, &r, &valid_until, m, msize);
    if (rc)
        return rc;
    rl_round_run(lock->client, &r);
    return rl_extend_end(lock, &r, ttl_ms, valid_until, automatic, m, msize);
}

/* 1 if the auto-extend thread is extending the lock right now, in a batch
 * (watch.c): the owner's own extension waits, with the mutex let go. Here,
 * not in watch.c, which calls this file. */
static int watch_busy(redlock_lock *l)
{
    if (!atomic_load_explicit(&l->ae.used, memory_order_acquire))
        return 0;
    rl_watch *w = &l->client->watch;
    pthread_mutex_lock(&w->mu);
    int busy = l->ae.busy && !(w->started && pthread_equal(pthread_self(), w->thread));
    pthread_mutex_unlock(&w->mu);
    return busy;
}

static void watch_wait_idle(redlock_lock *l)
{
    rl_watch *w = &l->client->watch;
    pthread_mutex_lock(&w->mu);
    while (l->ae.busy && !pthread_equal(pthread_self(), w->thread))
        pthread_cond_wait(&w->idle, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void rl_lock_unbatched(redlock_lock *lock)
{
    for (;;) {
        pthread_mutex_lock(&lock->mu);
        if (!watch_busy(lock))
            break;
        pthread_mutex_unlock(&lock->mu);
        watch_wait_idle(lock);
    }
}

int redlock_lock_extend(redlock_lock *lock, uint32_t ttl_ms)
{
    if (!lock)
        return REDLOCK_EINVAL;
    /* Not while the auto-extend thread extends it in a batch (it holds
     * the mutex only to check and to record). */
    rl_lock_unbatched(lock);
    char m[RL_MSG_MAX];
    int rc = rl_extend_locked(lock, ttl_ms, 0, m, sizeof m);
    if (rc)
        rl_lock_err(lock, rc, "%s", m);
    else
        rl_lock_ok(lock);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

int64_t redlock_lock_validity_ms(const redlock_lock *lock)
{
    if (!lock || atomic_load(&lock->state) != LOCK_HELD)
        return 0;
    int64_t left = atomic_load(&lock->valid_until_us) - rl_now_us();
    /* Round toward minus infinity so that 0 never hides an expired lock. */
    return left >= 0 ? left / 1000 : -((-left + 999) / 1000);
}

uint32_t redlock_lock_extensions(const redlock_lock *lock)
{
    return lock ? atomic_load(&lock->n_ext) : 0;
}

int redlock_lock_is_held(const redlock_lock *lock)
{
    return lock && atomic_load(&lock->state) == LOCK_HELD && atomic_load(&lock->valid_until_us) > rl_now_us();
}

uint64_t redlock_lock_fencing_token(const redlock_lock *lock)
{
    return redlock_lock_is_held(lock) ? atomic_load(&lock->token) : 0;
}

/* The size of each version of redlock_lock_options; 0 for an unknown one. */
