/* SPDX-License-Identifier: BSD-3-Clause */
/* attempt.c: one acquisition attempt: a fresh value, SET NX PX (or the
 * acquire script of the lock's kind) on every node, decided at quorum
 * within the validity, the fencing token committed, a clean-up release
 * after a failure, and what a refusal says about waiting. acquire.c runs
 * the attempts and the waits between them. */
#include <errno.h>
#include <string.h>

#include "internal.h"

static int commit_token(redlock_lock *lock, const rl_round *set, int64_t valid_until, uint64_t *token)
{
    redlock_client *c = lock->client;
    uint64_t max = 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->out[i] == RL_YES && set->counter[i] > max)
            max = set->counter[i];
    if (max == UINT64_MAX)
        return rl_lock_err(lock, REDLOCK_ESERVER, "the fencing counter of '%s' is at its maximum", lock->resource);
    *token = max + 1;
    char digits[24];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)*token);

    rl_round r;
    rl_init_round(&r, lock, RL_CMD_FENCE_COMMIT, 0);
    r.token = digits;
    r.cap_us = valid_until;
    for (size_t i = 0; i < set->n; i++)
        r.skip[i] = set->out[i] == RL_NO || set->out[i] == RL_ERR_DOWN;
    rl_round_run(c, &r);
    rl_record_round(lock, &r, 0);
    int code = rl_decide_extend(r.out, r.n, c->quorum, r.decided_us, valid_until);
    if (code == 0)
        return 0;
    rl_tally t = rl_tally_of(r.out, r.n);
    if (code == REDLOCK_ELOST)
        code = REDLOCK_ENOQUORUM;  /* the key vanished from nodes in between: no acquisition */
    if (code == REDLOCK_EEXPIRED)
        rl_lock_err(lock, code, "token %s of '%s' recorded on a majority only after the validity ran out",
                digits, lock->resource);
    else
        rl_lock_err(lock, code, "acquired, but token %s was recorded on %d of %zu nodes, %d needed", digits, t.yes, r.n,
                c->quorum);
    rl_describe_round(rl_errbuf(lock), RL_MSG_MAX, c, &r);
    return code;
}

/* A waiter is done: its registration leaves the queue, sent without
 * waiting for replies: on every node when it gives up (all), else after an
 * acquisition only where it was refused or got no answer (a node that
 * granted dropped it, or in fair mode keeps it for the release to drop;
 * one not waited for most likely granted too). If the lock is free
 * there, the next waiter is woken (scripts.c). */
void rl_leave_queue(redlock_lock *lock, const char *member, const rl_outcome *out, int all)
{
    rl_round r;
    rl_init_round(&r, lock, RL_CMD_LEAVE, 0);
    r.member = member;
    r.no_wait = 1;
    for (size_t i = 0; i < r.n; i++)
        r.skip[i] = !all && (out[i] == RL_YES || out[i] == RL_UNSENT);
    rl_round_run(lock->client, &r);
}

static void read_hint(const rl_round *r, wait_hint *h)
{
    int64_t ms[REDLOCK_MAX_NODES];
    h->yes = h->no = h->marked = h->trouble = 0;
    for (size_t i = 0; i < r->n; i++) {
        h->yes += r->out[i] == RL_YES;
        /* A node that failed (timed out, down, an error) may be where the
         * holder's release, or its expiry, goes unseen. One out of the vote
         * (quarantined) answers, and the others' refusals tell the rest. */
        h->trouble += r->out[i] != RL_YES && r->out[i] != RL_NO && r->out[i] != RL_UNSENT &&
                      r->out[i] != RL_ERR_QUARANTINE;
        if (r->out[i] != RL_NO)
            continue;
        h->marked += r->marked[i];
        ms[h->no++] = r->hint_ms[i];
    }
    /* The median refusal: one node's leftover key with a long TTL does not
     * make the waiter sleep past the real holder's expiry. */
    for (int a = 1; a < h->no; a++)
        for (int b = a; b > 0 && ms[b - 1] > ms[b]; b--) {
            int64_t t = ms[b];
            ms[b] = ms[b - 1];
            ms[b - 1] = t;
        }
    h->hint_ms = h->no ? ms[h->no / 2] : -1;
}

/* The round that acquires: a plain SET NX PX, or the acquire script
 * (scripts.c) when waiting with a registration (member), in fair mode, or
 * with fencing. */
static void acquire_round(redlock_lock *lock, rl_round *r, uint32_t ttl_ms, const char *member, uint64_t ticket,
                          int calm, int renew, int drop, char mode[8])
{
    /* Fair mode orders waiters while the nodes are calm; right after a
     * node failed, nodes may name different heads, and a queue only some
     * of them know must not hold the lock up: everyone may take it then. */
    int fencing = rl_lock_fencing(lock), fair = (lock->pol.flags & REDLOCK_OPT_FAIR) && calm;
    int n = 0;
    if (member[0])
        mode[n++] = 'j';
    if (member[0] && renew)
        mode[n++] = 'r';
    if (member[0] && drop)
        mode[n++] = 'd';
    if (fair)
        mode[n++] = 'f';
    if (fencing)
        mode[n++] = 'c';
    mode[n] = '\0';
    rl_init_round(r, lock, n ? RL_CMD_ACQUIRE : RL_CMD_SET, ttl_ms);
    r->member = member;
    r->mode = mode;
    r->ticket = ticket;
    r->lease_ms = rl_policy_wake_lease_ms(&lock->pol);
    if (lock->kind->acquire_round)
        lock->kind->acquire_round(lock, r, mode);
}

int rl_attempt_begin(redlock_lock *lock, rl_round *r, uint32_t ttl_ms, const char *member, uint64_t ticket,
                     int calm, int renew, int drop, char mode[8])
{
    lock->value[0] = RL_VALUE_MARK;
    if (rl_random_hex(lock->value + 1, RL_VALUE_BYTES) != 0)
        return rl_lock_err(lock, REDLOCK_EIO, "getrandom failed: %s", strerror(errno));
    acquire_round(lock, r, ttl_ms, member, ticket, calm, renew, drop, mode);
    r->cap_us = r->start_us + (int64_t)ttl_ms * 1000;
    return 0;
}

int rl_attempt_end(redlock_lock *lock, rl_round *r, uint32_t ttl_ms, uint32_t number, const char *member,
                   wait_hint *h)
{
    redlock_client *c = lock->client;
    rl_record_round(lock, r, 0);
    read_hint(r, h);
    int64_t now = rl_now_us();

    rl_tally t = rl_tally_of(r->out, r->n);
    int64_t valid_until = r->start_us + (int64_t)ttl_ms * 1000 - rl_drift_us(lock, ttl_ms);
    int code = rl_decide_acquire(r->out, r->n, c->quorum, valid_until, now);
    uint64_t token = 0;
    if (code == 0 && rl_lock_fencing(lock) && lock->kind->round_token)
        token = lock->kind->round_token(r);   /* the counter as it is: readers commit nothing */
    else if (code == 0 && rl_lock_fencing(lock))
        code = commit_token(lock, r, valid_until, &token);
    if (code == 0) {
        atomic_store(&lock->token, token);
        atomic_store(&lock->valid_until_us, valid_until);
        atomic_store(&lock->state, LOCK_HELD);
        lock->acquired_us = r->start_us;
        lock->ttl_ms = ttl_ms;
        atomic_store(&lock->n_ext, 0);
        rl_lock_ok(lock);
        rl_emit(lock, REDLOCK_EVENT_ACQUIRED, 0, NULL, r, 0, number, rl_now_us() - r->start_us);
        if (member[0] && t.yes + t.unsent < (int)r->n)
            rl_leave_queue(lock, member, r->out, 0);   /* registered where it was refused, or may be */
        return 0;
    }

    if (lock->errcode != code || !rl_errmsg(lock)[0]) {
        int hard = t.auth + t.perm + t.server + t.io + t.tls;
        if (code == REDLOCK_EEXPIRED)
            rl_lock_err(lock, code, "acquired on %d of %zu nodes, but %lld ms of the %u ms TTL had passed (drift allowance %lld ms)",
                    t.yes, r->n, (long long)((now - r->start_us) / 1000), ttl_ms,
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
    }

    /* Release wherever our SET may have landed: every node but those that
     * refused it (another owner's key is there) and those skipped while
     * down. An error is no proof: a pipelined SET runs after a failed AUTH
     * on a server without a password, or before a connection breaks. */
    rl_round rel;
    rl_init_round(&rel, lock, RL_CMD_RELEASE, 0);
    rel.no_wait = 1;
    /* It wakes nobody: another owner most likely holds the lock, and a
     * waiter woken for nothing would fail, clean up and wake the next in
     * turn. Contenders of a split vote part by their jitter. */
    rel.wake = 0;
    int any = 0, refused_only = t.no + t.unsent == (int)r->n;
    for (size_t i = 0; i < r->n; i++) {
        rl_outcome o = r->out[i];
        /* A node not waited for in a round lost to refusals releases by
         * itself if its late reply is a grant (conn.c); after an error, or
         * in a won round that expired, the release goes now. */
        rel.skip[i] = o == RL_NO || o == RL_ERR_DOWN || (o == RL_UNSENT && r->sent[i] && refused_only);
        any |= !rel.skip[i];
    }
    if (any)
        rl_round_run(c, &rel);
    atomic_store(&lock->state, LOCK_IDLE);
    rl_emit(lock, REDLOCK_EVENT_ACQUIRE_FAILED, code, rl_errmsg(lock), r, 0, number, rl_now_us() - r->start_us);
    return code;
}
