/* SPDX-License-Identifier: BSD-3-Clause */
/* extend_many.c: many held locks extended together, as the auto-extend
 * thread does with all the locks due in the same window. One script per
 * node covers up to RL_BATCH_MAX keys; the rounds of a batch are pipelined
 * on each node's one connection and run at once. Each lock is still decided
 * on its own, at quorum, exactly as rl_extend_locked decides one (see
 * docs/algorithm.md, "Many locks, one watchdog"). Locks whose extension
 * is not the mutex's (a set of resources, a reader's lease, a semaphore's
 * permit) get a round each of their own command after the batch, a few
 * dozen of them pipelined at a time. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* When lock k's quorum confirmed: the quorum-th earliest OK among the
 * nodes, or the round's end when no quorum did. */
static int64_t decided_at(const rl_round *r, const rl_outcome *out, int quorum)
{
    int64_t t[REDLOCK_MAX_NODES];
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (out[i] == RL_YES)
            t[n++] = r->start_us + r->rtt_us[i];
    if (n < (size_t)quorum)
        return r->decided_us;
    /* A partial selection sort: quorum is at most 33. */
    for (size_t a = 0; a < (size_t)quorum; a++)
        for (size_t b = a + 1; b < n; b++)
            if (t[b] < t[a]) {
                int64_t x = t[a];
                t[a] = t[b];
                t[b] = x;
            }
    return t[quorum - 1];
}

static const char *word(rl_outcome o)
{
    switch (o) {
    case RL_YES: return "OK";
    case RL_NO: return "refused (key gone or held by another owner)";
    case RL_ERR_TIMEOUT: return "timeout";
    case RL_ERR_DOWN: return "down";
    case RL_UNSENT: return "skipped";
    default: return "failed";
    }
}

/* "; node: what" for each node, from the lock's own outcomes. */
static void describe(char *m, size_t msize, const redlock_client *c, const rl_round *r, const rl_outcome *out)
{
    for (size_t i = 0; i < r->n; i++) {
        if (out[i] == RL_YES)
            rl_append(m, msize, "; %s: OK in %.1f ms", c->nodes[i].ep.display, (double)r->rtt_us[i] / 1000.0);
        else
            rl_append(m, msize, "; %s: %s%s%s", c->nodes[i].ep.display, word(out[i]),
                      out[i] != RL_NO && r->msg[i][0] ? ": " : "", out[i] != RL_NO ? r->msg[i] : "");
    }
}

/* Lock k of round r: the decision, and what follows from it (as in
 * rl_extend_locked). */
static int conclude(redlock_lock *lock, const rl_round *r, size_t k, uint32_t ttl_ms, int64_t valid_until,
                    int automatic, char *m, size_t msize, rl_msgs **shared)
{
    redlock_client *c = lock->client;
    rl_outcome out[REDLOCK_MAX_NODES];
    rl_batch_outcomes(r, k, out);
    rl_record_round_shared(lock, r, out, automatic, shared);
    int64_t decided = decided_at(r, out, c->quorum);
    int code = rl_decide_extend(out, r->n, c->quorum, decided, valid_until);
    if (code == 0) {
        atomic_store(&lock->valid_until_us, r->start_us + (int64_t)ttl_ms * 1000 - rl_drift_us(lock, ttl_ms));
        atomic_fetch_add(&lock->n_ext, 1);
        rl_emit_out(lock, REDLOCK_EVENT_EXTENDED, 0, NULL, r, out, automatic, 0, decided - r->start_us);
        return 0;
    }
    rl_tally t = rl_tally_of(out, r->n);
    int unknown = (int)r->n - t.yes - t.no;
    if (code == REDLOCK_ELOST)
        rl_fmt(m, msize, "lock '%s' lost: still ours on %d of %zu nodes, %d needed", lock->resource, t.yes, r->n,
               c->quorum);
    else if (code == REDLOCK_EEXPIRED)
        rl_fmt(m, msize, "extension of '%s' confirmed only after its validity ran out", lock->resource);
    else
        rl_fmt(m, msize, "could not extend '%s': %d of %zu nodes confirmed, %d needed, %d could not answer",
               lock->resource, t.yes, r->n, c->quorum, unknown);
    describe(m, msize, c, r, out);
    if (code == REDLOCK_ELOST)
        rl_mark_lost(lock, code, m, automatic);
    else
        rl_emit_out(lock, REDLOCK_EVENT_EXTEND_FAILED, code, m, r, out, automatic, 0, r->decided_us - r->start_us);
    return code;
}

#define SINGLE 1   /* rcs[k] of a lock that is not batched */

/* Whether the lock's extension is the mutex's compare-and-extend of its
 * key (mutex held): a mutex's, or a write lock's (its key is the mutex's).
 * A reader's lease and a semaphore's slots have commands of their own. */
static int batched(const redlock_lock *lock)
{
    /* On a cluster node many locks' keys span slots: one round each. */
    return lock->kind->batch_extend && !rl_client_has_cluster(lock->client);
}

/* A failure's message, owned, or NULL (none, or out of memory). */
static char *keep(const char *m)
{
    return m[0] ? strdup(m) : NULL;
}

/* The other kinds (a multi-resource lock's set, a reader's lease, a
 * semaphore's permit) send their own commands: a round each, as
 * redlock_lock_extend would send it, but RL_SINGLES_AT_ONCE rounds at a time,
 * pipelined on the same connections, each decided on its own. The mutex
 * is held as in the batch: to check and to conclude, not across the
 * rounds. The locks marked SINGLE in rcs. */
static void singles(redlock_client *c, redlock_lock **locks, const uint32_t *ttls, size_t n, int automatic,
                    int *rcs, char **msgs)
{
    char tmp[RL_MSG_MAX];
    size_t idx[RL_SINGLES_AT_ONCE];
    int64_t valid[RL_SINGLES_AT_ONCE];
    rl_round *rounds = NULL;
    for (size_t k = 0; k < n;) {
        size_t m = 0;
        for (; k < n && m < RL_SINGLES_AT_ONCE; k++) {
            if (rcs[k] != SINGLE)
                continue;
            if (!rounds && !(rounds = calloc(RL_SINGLES_AT_ONCE, sizeof *rounds))) {
                rcs[k] = REDLOCK_ENOMEM;
                msgs[k] = keep("out of memory");
                continue;
            }
            pthread_mutex_lock(&locks[k]->mu);
            rcs[k] = rl_extend_begin(locks[k], ttls[k], &rounds[m], &valid[m], tmp, sizeof tmp);
            pthread_mutex_unlock(&locks[k]->mu);
            msgs[k] = rcs[k] ? keep(tmp) : NULL;
            if (rcs[k] == 0)
                idx[m++] = k;
        }
        if (!m)
            continue;
        rl_round_run_many(c, rounds, m);
        for (size_t j = 0; j < m; j++) {
            redlock_lock *l = locks[idx[j]];
            pthread_mutex_lock(&l->mu);
            rcs[idx[j]] = rl_extend_end(l, &rounds[j], ttls[idx[j]], valid[j], automatic, tmp, sizeof tmp);
            pthread_mutex_unlock(&l->mu);
            msgs[idx[j]] = rcs[idx[j]] == REDLOCK_ELOST || rcs[idx[j]] == REDLOCK_EEXPIRED ? keep(tmp) : NULL;
        }
    }
    free(rounds);
}

enum { S_GO, S_VALID, S_ROUNDS, S_BATCHES, S_KEYS, S_VALUES, S_LENS, S_TTL, S_RES };

/* Checks every lock: those that can be batched and pass go into go[] (their
 * index into locks) with their validity; the others get their code and
 * message, or SINGLE (after the batch). How many went into go. */
static size_t check_all(redlock_lock **locks, const uint32_t *ttls, size_t n, int *rcs, char **msgs, size_t *go,
                        int64_t *valid)
{
    char tmp[RL_MSG_MAX];
    size_t m = 0;
    int64_t now = rl_now_us();
    for (size_t k = 0; k < n; k++) {
        pthread_mutex_lock(&locks[k]->mu);
        if (!batched(locks[k])) {
            pthread_mutex_unlock(&locks[k]->mu);
            rcs[k] = SINGLE;   /* after the batch */
            msgs[k] = NULL;
            continue;
        }
        rcs[k] = rl_extend_check(locks[k], ttls[k], now, tmp, sizeof tmp);
        int64_t v = atomic_load(&locks[k]->valid_until_us);
        pthread_mutex_unlock(&locks[k]->mu);
        msgs[k] = rcs[k] ? keep(tmp) : NULL;
        if (rcs[k] == 0 && go && valid) {
            valid[m] = v;
            go[m++] = k;
        } else if (rcs[k] == 0) {
            msgs[k] = keep("out of memory");
            rcs[k] = REDLOCK_ENOMEM;
        }
    }
    return m;
}

/* The EXTEND_MANY round of batch b, whose locks' validities end at the
 * latest at cap_us and the earliest at first_end. */
static void batch_round(redlock_client *c, rl_round *r, rl_batch *b, int64_t cap_us, int64_t first_end)
{
    r->cmd = RL_CMD_EXTEND_MANY;
    r->batch = b;
    r->key = b->keys[0];
    r->key_len = b->key_lens[0];
    r->fkey = r->key;
    r->fkey_len = r->key_len;
    r->value = b->values[0];
    r->member = "";
    r->mode = "";
    /* No node is waited for past the last validity among its locks:
     * the others' replies are useless by then. */
    r->cap_us = cap_us;
    r->quorum = c->quorum;
    r->n = c->n;
    r->start_us = rl_now_us();
    /* A node's reply to a batch is worth waiting for while it can still
     * save every lock in it: while the node keeps answering
     * (rl_conn_expire), up to half the validity the first of them has
     * left, so that a retry still fits in the other half. The node
     * timeout is for one command; a batch is hundreds of keys, behind
     * other batches on the same connection, and a node on a loaded
     * machine that answered them late was counted as failed, its
     * locks retried, and the retries added to its backlog. A node that
     * has gone quiet is given up after a node timeout, as in any
     * round: a lock that needs it (held on a bare quorum that includes
     * it) must not hold up the thread and every other lock. A minority
     * that does not answer costs nothing otherwise: each lock is
     * decided once a quorum has. */
    b->wait_until_us = first_end > r->start_us ? r->start_us + (first_end - r->start_us) / 2 : 0;
}

void rl_extend_many(redlock_client *c, redlock_lock **locks, const uint32_t *ttls, size_t n, int automatic,
                    int *rcs, char **msgs, rl_scratch *sc)
{
    char tmp[RL_MSG_MAX];
    /* Those that pass the checks, in order: their index into locks. */
    size_t *go = rl_scratch_get(sc, S_GO, n * sizeof *go, 0);
    int64_t *valid = rl_scratch_get(sc, S_VALID, n * sizeof *valid, 0);
    size_t m = check_all(locks, ttls, n, rcs, msgs, go, valid);
    size_t nr = (m + RL_BATCH_MAX - 1) / RL_BATCH_MAX;
    rl_round *rounds = nr ? rl_scratch_get(sc, S_ROUNDS, nr * sizeof *rounds, 1) : NULL;
    rl_batch *batches = nr ? rl_scratch_get(sc, S_BATCHES, nr * sizeof *batches, 1) : NULL;
    const char **keys = rl_scratch_get(sc, S_KEYS, m * sizeof *keys, 0);
    const char **values = rl_scratch_get(sc, S_VALUES, m * sizeof *values, 0);
    size_t *key_lens = rl_scratch_get(sc, S_LENS, m * sizeof *key_lens, 0);
    uint32_t *ttl = rl_scratch_get(sc, S_TTL, m * sizeof *ttl, 0);
    unsigned char *res = rl_scratch_get(sc, S_RES, m * c->n, 1);
    if (m && (!rounds || !batches || !keys || !values || !key_lens || !ttl || !res)) {
        for (size_t j = 0; j < m; j++) {
            msgs[go[j]] = keep("out of memory");
            rcs[go[j]] = REDLOCK_ENOMEM;
        }
        nr = 0;
    }
    for (size_t j = 0; j < nr; j++) {
        size_t first = j * RL_BATCH_MAX, count = m - first < RL_BATCH_MAX ? m - first : RL_BATCH_MAX;
        rl_batch *b = &batches[j];
        b->m = count;
        b->keys = keys + first;
        b->key_lens = key_lens + first;
        b->values = values + first;
        b->ttl_ms = ttl + first;
        b->res = res + first * c->n;
        rl_round *r = &rounds[j];
        int64_t cap_us = 0, first_end = INT64_MAX;
        for (size_t k = 0; k < count; k++) {
            if (valid[first + k] < first_end)
                first_end = valid[first + k];
            redlock_lock *l = locks[go[first + k]];
            keys[first + k] = l->key;
            key_lens[first + k] = l->key_len;
            values[first + k] = l->value;
            ttl[first + k] = ttls[go[first + k]];
            if (valid[first + k] > cap_us)
                cap_us = valid[first + k];
        }
        batch_round(c, r, b, cap_us, first_end);
    }
    if (nr)
        rl_round_run_many(c, rounds, nr);
    for (size_t j = 0; j < nr; j++) {
        size_t first = j * RL_BATCH_MAX;
        rl_msgs *shared = NULL;   /* the round's messages, kept once for all its locks */
        for (size_t k = 0; k < batches[j].m; k++) {
            size_t idx = go[first + k];
            pthread_mutex_lock(&locks[idx]->mu);
            rcs[idx] = conclude(locks[idx], &rounds[j], k, ttls[idx], valid[first + k], automatic, tmp,
                                sizeof tmp, &shared);
            pthread_mutex_unlock(&locks[idx]->mu);
            /* The loss's message is the owner's to read; a failed try's is
             * in the lock's report, and on_event had it. */
            msgs[idx] = rcs[idx] == REDLOCK_ELOST || rcs[idx] == REDLOCK_EEXPIRED ? keep(tmp) : NULL;
        }
        rl_msgs_unref(shared);
    }
    singles(c, locks, ttls, n, automatic, rcs, msgs);
    rl_scratch_put(sc, S_GO, go);
    rl_scratch_put(sc, S_VALID, valid);
    rl_scratch_put(sc, S_ROUNDS, rounds);
    rl_scratch_put(sc, S_BATCHES, batches);
    rl_scratch_put(sc, S_KEYS, keys);
    rl_scratch_put(sc, S_VALUES, values);
    rl_scratch_put(sc, S_LENS, key_lens);
    rl_scratch_put(sc, S_TTL, ttl);
    rl_scratch_put(sc, S_RES, res);
}
