/* SPDX-License-Identifier: BSD-3-Clause */
/* acquire_many.c: one attempt at each of many independent locks of one
 * client, all pipelined as rounds under way at once (a dispatcher taking
 * a lock per message is not limited to one round trip at a time). Each
 * lock's attempt is the plain SET NX PX of attempt.c's first attempt,
 * decided at quorum on its own; a lost attempt is cleaned up as there. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LATER 1   /* results[k] until acquire.c has made the attempt */

/* A lock this call cannot batch (fencing, the client's or an election
 * lock's, needs its token commit, fair mode its queue, a read-write lock's
 * side or a semaphore's permit its own commands): acquire.c does it, one
 * attempt, after the batch. */
static int plain(const redlock_lock *lock)
{
    return !rl_lock_fencing(lock) && !(lock->pol.flags & REDLOCK_OPT_FAIR) &&
           lock->kind->batch_acquire && !rl_client_has_cluster(lock->client);
}

/* The checks of acquire.c's check_acquire (mutex held): 0 or the code, with the message set. */
static int check(redlock_lock *lock, uint32_t ttl_ms)
{
    char why[RL_MSG_MAX];
    int rc = rl_ttl_problem(lock, ttl_ms, why, sizeof why);
    if (rc)
        return rl_lock_err(lock, rc, "%s", why);
    if (redlock_lock_is_held(lock))
        return rl_lock_err(lock, REDLOCK_ESTATE, "lock '%s' is already held by this handle", lock->resource);
    if (atomic_load(&lock->cancel))
        return rl_lock_err(lock, REDLOCK_ECANCELED,
                           "acquisition of '%s' is cancelled (redlock_lock_cancel_reset clears it)", lock->resource);
    lock->value[0] = RL_VALUE_MARK;
    if (rl_random_hex(lock->value + 1, RL_VALUE_BYTES) != 0)
        return rl_lock_err(lock, REDLOCK_EIO, "getrandom failed: %s", strerror(errno));
    lock->member[0] = '\0';
    return 0;
}

/* Lock k's attempt in round r (mutex held): 0 or its code; *clean says
 * whether a clean-up release must follow, and skip[i] the nodes it skips. */
static int conclude(redlock_lock *lock, const rl_round *r, size_t k, uint32_t ttl_ms, unsigned char *skip,
                    int *clean, int64_t call_us, rl_msgs **shared)
{
    redlock_client *c = lock->client;
    rl_outcome out[REDLOCK_MAX_NODES];
    rl_batch_outcomes(r, k, out);
    rl_record_round_shared(lock, r, out, 0, shared);
    int64_t now = rl_now_us();
    rl_tally t = rl_tally_of(out, r->n);
    int64_t valid_until = r->start_us + (int64_t)ttl_ms * 1000 - rl_drift_us(lock, ttl_ms);
    int code = rl_decide_acquire(out, r->n, c->quorum, valid_until, now);
    *clean = 0;
    if (code == 0) {
        atomic_store(&lock->token, 0);
        atomic_store(&lock->valid_until_us, valid_until);
        atomic_store(&lock->state, LOCK_HELD);
        lock->acquired_us = r->start_us;
        lock->ttl_ms = ttl_ms;
        atomic_store(&lock->n_ext, 0);
        rl_lock_ok(lock);
        rl_emit_out(lock, REDLOCK_EVENT_ACQUIRED, 0, NULL, r, out, 0, 1, now - r->start_us);
        rl_emit_acquire_done(lock, 0, call_us);
        return 0;
    }
    int hard = t.auth + t.perm + t.server + t.io + t.tls;
    if (code == REDLOCK_EEXPIRED)
        rl_lock_err(lock, code, "acquired on %d of %zu nodes, but %lld ms of the %u ms TTL had passed (drift "
                    "allowance %lld ms)", t.yes, r->n, (long long)((now - r->start_us) / 1000), ttl_ms,
                    (long long)(rl_drift_us(lock, ttl_ms) / 1000));
    else if (code == REDLOCK_ENOTACQUIRED)
        rl_lock_err(lock, code, "not acquired: %d of %zu nodes granted, %d needed", t.yes, r->n, c->quorum);
    else if (code == REDLOCK_EAUTH || code == REDLOCK_EPERM)
        rl_lock_err(lock, code, "%d of %zu nodes refused the client (%d granted, %d needed)",
                    t.auth + t.perm, r->n, t.yes, c->quorum);
    else
        rl_lock_err(lock, code, "%s: %d of %zu nodes granted, %d needed, %d could not answer",
                    code == REDLOCK_ENOQUORUM ? "no quorum" : redlock_strerror(code), t.yes, r->n, c->quorum, hard);
    rl_describe_round(rl_errbuf(lock), RL_MSG_MAX, c, r);
    /* As attempt.c: release wherever our SET may have landed, but for the
     * nodes that refused it and those skipped while down. A node not
     * waited for gets it too: its late grant is not released by the
     * connection for a batch, and the release runs after the SET there. */
    for (size_t i = 0; i < r->n; i++) {
        skip[i] = out[i] == RL_NO || out[i] == RL_ERR_DOWN;
        *clean |= !skip[i];
    }
    atomic_store(&lock->state, LOCK_IDLE);
    rl_emit_out(lock, REDLOCK_EVENT_ACQUIRE_FAILED, code, rl_errmsg(lock), r, out, 0, 1, now - r->start_us);
    rl_emit_acquire_done(lock, code, call_us);
    return code;
}

/* Rounds of up to RL_BATCH_MAX locks (locks[idx[..]]) with cmd; res gets
 * room for every node's answer on each. */
typedef struct chunks {
    size_t nr;
    rl_round *rounds;
    rl_batch *b;
    const char **keys, **values;
    size_t *lens;
    uint32_t *ttls;
    unsigned char *res;
} chunks;

static void chunks_free(chunks *ch)
{
    free(ch->rounds);
    free(ch->b);
    free(ch->keys);
    free(ch->values);
    free(ch->lens);
    free(ch->ttls);
    free(ch->res);
}

static int chunks_make(chunks *ch, redlock_client *c, rl_cmd cmd, redlock_lock *const *locks, const size_t *idx,
                       size_t m, uint32_t ttl_ms)
{
    memset(ch, 0, sizeof *ch);
    ch->nr = (m + RL_BATCH_MAX - 1) / RL_BATCH_MAX;
    ch->rounds = calloc(ch->nr, sizeof *ch->rounds);
    ch->b = calloc(ch->nr, sizeof *ch->b);
    ch->keys = malloc(m * sizeof *ch->keys);
    ch->values = malloc(m * sizeof *ch->values);
    ch->lens = malloc(m * sizeof *ch->lens);
    ch->ttls = malloc(m * sizeof *ch->ttls);
    ch->res = calloc(m, c->n);
    if (!ch->rounds || !ch->b || !ch->keys || !ch->values || !ch->lens || !ch->ttls || !ch->res) {
        chunks_free(ch);
        return REDLOCK_ENOMEM;
    }
    for (size_t j = 0; j < m; j++) {
        ch->keys[j] = locks[idx[j]]->key;
        ch->lens[j] = locks[idx[j]]->key_len;
        ch->values[j] = locks[idx[j]]->value;
        ch->ttls[j] = ttl_ms;
    }
    for (size_t q = 0; q < ch->nr; q++) {
        size_t first = q * RL_BATCH_MAX, count = m - first < RL_BATCH_MAX ? m - first : RL_BATCH_MAX;
        rl_batch *b = &ch->b[q];
        b->m = count;
        b->keys = ch->keys + first;
        b->key_lens = ch->lens + first;
        b->values = ch->values + first;
        b->ttl_ms = ch->ttls + first;
        b->res = ch->res + first * c->n;
        rl_round *r = &ch->rounds[q];
        rl_init_round(r, locks[idx[first]], cmd, ttl_ms);
        r->batch = b;
        r->member = "";
        if (cmd == RL_CMD_SET_MANY) {
            r->cap_us = r->start_us + (int64_t)ttl_ms * 1000;
            /* A script over hundreds of keys takes a node longer than one
             * SET: a node that keeps answering is waited for up to a
             * quarter of the TTL (rl_conn_expire), one that went quiet
             * for a node timeout is not. */
            b->wait_until_us = r->start_us + (int64_t)ttl_ms * 1000 / 4;
        }
    }
    return 0;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(redlock_lock *const *)a, y = (uintptr_t)*(redlock_lock *const *)b;
    return x < y ? -1 : x > y;
}

/* The call's own checks, before any lock is touched: 0, or the code with
 * why in errbuf (no client or list, too many locks, a NULL lock, another
 * client's lock, the same handle twice: two acquisitions at once on one
 * handle). The one copy of them: the bindings convert and call. */
static int check_set(redlock_client *client, redlock_lock *const *locks, size_t n, const int *results,
                     char *errbuf, size_t errbuf_size)
{
    if (!client || (!locks && n) || (!results && n)) {
        rl_fmt(errbuf, errbuf_size, "%s is NULL", !client ? "client" : !locks ? "locks" : "results");
        return REDLOCK_EINVAL;
    }
    if (n > REDLOCK_ACQUIRE_MANY_MAX) {
        rl_fmt(errbuf, errbuf_size, "%zu locks at once, over the limit of %d (REDLOCK_ACQUIRE_MANY_MAX)", n,
               REDLOCK_ACQUIRE_MANY_MAX);
        return REDLOCK_EINVAL;
    }
    for (size_t k = 0; k < n; k++) {
        if (!locks[k]) {
            rl_fmt(errbuf, errbuf_size, "lock %zu of %zu is NULL", k, n);
            return REDLOCK_EINVAL;
        }
        if (locks[k]->client != client) {
            rl_fmt(errbuf, errbuf_size, "the lock of '%.200s' belongs to another client", locks[k]->resource);
            return REDLOCK_EINVAL;
        }
    }
    redlock_lock **sorted = malloc(n * sizeof *sorted);
    if (n && !sorted) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    if (n)
        memcpy(sorted, locks, n * sizeof *sorted);
    if (n > 1)
        qsort(sorted, n, sizeof *sorted, by_address);
    const redlock_lock *dup = NULL;
    for (size_t k = 1; k < n && !dup; k++)
        if (sorted[k] == sorted[k - 1])
            dup = sorted[k];
    free(sorted);
    if (dup) {
        rl_fmt(errbuf, errbuf_size, "the lock of '%.200s' is given twice: each lock must be given once",
               dup->resource);
        return REDLOCK_EINVAL;
    }
    return 0;
}

/* The clean-up of the locks lost[0..nlost): one release per node that may
 * hold a lost lock's key (skip, c->n bytes per lost lock, says where not),
 * in as few rounds as they need, waiting for nothing. */
static void release_lost(redlock_client *c, redlock_lock *const *locks, const size_t *lost, size_t nlost,
                         const unsigned char *skip)
{
    chunks rel;
    if (chunks_make(&rel, c, RL_CMD_RELEASE_MANY, locks, lost, nlost, 0) != 0)
        return;
    /* A node that every lost lock of a round skips is not sent it. */
    for (size_t q = 0; q < rel.nr; q++) {
        rl_round *r = &rel.rounds[q];
        r->no_wait = 1;
        for (size_t i = 0; i < c->n; i++) {
            int all = 1;
            for (size_t k = 0; k < rel.b[q].m; k++)
                all &= skip[(q * RL_BATCH_MAX + k) * c->n + i];
            r->skip[i] = (unsigned char)all;
        }
    }
    rl_round_run_many(c, rel.rounds, rel.nr);
    chunks_free(&rel);
}

int redlock_lock_acquire_many(redlock_client *c, redlock_lock *const *locks, size_t n, uint32_t ttl_ms,
                              int *results, char *errbuf, size_t errbuf_size)
{
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    int rc = check_set(c, locks, n, results, errbuf, errbuf_size);
    if (rc || n == 0)
        return rc;
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    int64_t call_us = rl_now_us();   /* each lock's acquire call, as the hook tells it */
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        redlock_lock *l = locks[k];
        results[k] = LATER;
        if (!plain(l))
            continue;
        if (!redlock_lock_is_held(l))
            rl_watch_remove(l);   /* as redlock_lock_acquire: not under the mutex */
        pthread_mutex_lock(&l->mu);
        results[k] = check(l, ttl_ms);
        if (results[k]) {
            l->attempts = 0;   /* REDLOCK_EVENT_ACQUIRE_DONE: no attempt made */
            rl_emit_acquire_done(l, results[k], call_us);
        }
        pthread_mutex_unlock(&l->mu);
        if (results[k] == 0)
            idx[m++] = k;
    }
    chunks set;
    if (m && chunks_make(&set, c, RL_CMD_SET_MANY, locks, idx, m, ttl_ms) != 0) {
        for (size_t j = 0; j < m; j++) {
            pthread_mutex_lock(&locks[idx[j]]->mu);
            results[idx[j]] = rl_lock_err(locks[idx[j]], REDLOCK_ENOMEM, "out of memory");
            locks[idx[j]]->attempts = 0;
            rl_emit_acquire_done(locks[idx[j]], REDLOCK_ENOMEM, call_us);
            pthread_mutex_unlock(&locks[idx[j]]->mu);
        }
        m = 0;
    }
    if (m) {
        rl_epoch_run_many(c, set.rounds, set.nr);   /* a node out of the vote does not count (epoch.c) */
        /* The clean-up: one release per node that may hold a lost lock's
         * key, in as few rounds as the losers need. */
        unsigned char *skip = malloc(m * c->n);
        size_t *lost = malloc(m * sizeof *lost), nlost = 0;
        rl_msgs *shared = NULL;   /* a round's messages, kept once for all its locks */
        for (size_t j = 0; j < m; j++) {
            redlock_lock *l = locks[idx[j]];
            int clean = 0;
            unsigned char sk[REDLOCK_MAX_NODES];
            if (j % RL_BATCH_MAX == 0) {
                rl_msgs_unref(shared);
                shared = NULL;
            }
            pthread_mutex_lock(&l->mu);
            results[idx[j]] = conclude(l, &set.rounds[j / RL_BATCH_MAX], j % RL_BATCH_MAX, ttl_ms, sk, &clean,
                                       call_us, &shared);
            pthread_mutex_unlock(&l->mu);
            if (clean && skip && lost) {
                memcpy(skip + nlost * c->n, sk, c->n);
                lost[nlost++] = idx[j];
            }
        }
        rl_msgs_unref(shared);
        chunks_free(&set);
        if (nlost)
            release_lost(c, locks, lost, nlost, skip);
        free(skip);
        free(lost);
    }
    free(idx);
    /* Fencing and fair mode: one attempt each, as redlock_lock_acquire makes it. */
    for (size_t k = 0; k < n; k++)
        if (results[k] == LATER)
            results[k] = redlock_lock_acquire(locks[k], ttl_ms, REDLOCK_WAIT_NONE);
    return 0;
}
