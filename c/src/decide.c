/* SPDX-License-Identifier: BSD-3-Clause */
/* decide.c: the Redlock decisions as pure functions of what each node said
 * and when, kept apart from the I/O so they can be read, tested and fuzzed
 * on their own (tests/fuzz/fuzz_decide.c). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

rl_tally rl_tally_of(const rl_outcome *out, size_t n)
{
    rl_tally t = { 0 };
    for (size_t i = 0; i < n; i++) {
        switch (out[i]) {
        case RL_YES: t.yes++; break;
        case RL_NO: t.no++; break;
        case RL_ERR_AUTH: t.auth++; break;
        case RL_ERR_PERM: t.perm++; break;
        case RL_ERR_SERVER: t.server++; break;
        case RL_ERR_TLS: t.tls++; break;
        case RL_UNSENT: t.unsent++; break;
        default: t.io++; break;
        }
    }
    return t;
}

int rl_failure_code(const rl_tally *t)
{
    int refused = t->auth + t->perm;
    if (t->tls > refused && t->tls > t->server && t->tls > t->io)
        return REDLOCK_ETLS;
    if (refused > t->server && refused > t->io && refused > t->tls)
        return t->auth >= t->perm ? REDLOCK_EAUTH : REDLOCK_EPERM;
    if (t->server > refused && t->server > t->io && t->server > t->tls)
        return REDLOCK_ESERVER;
    return REDLOCK_ENOQUORUM;
}

int rl_refusal_code(const rl_tally *t, size_t n, int quorum)
{
    if (t->auth + t->perm <= (int)n - quorum)
        return 0;
    return t->auth >= t->perm ? REDLOCK_EAUTH : REDLOCK_EPERM;
}

int rl_decide_acquire(const rl_outcome *out, size_t n, int quorum, int64_t valid_until_us, int64_t now_us)
{
    rl_tally t = rl_tally_of(out, n);
    if (t.yes >= quorum)
        return valid_until_us > now_us ? 0 : REDLOCK_EEXPIRED;
    /* Nodes that refuse the client (a password, a command) will refuse
     * every attempt: when they alone rule a quorum out, that is the answer,
     * whatever the others said. A minority of them is only named. */
    int refused = rl_refusal_code(&t, n, quorum);
    if (refused)
        return refused;
    /* Contention only when the refusals alone rule a quorum out: otherwise
     * the nodes that failed (or were never heard) made the difference, and
     * calling that "held by another owner" would hide an outage. */
    if (t.no > (int)n - quorum)
        return REDLOCK_ENOTACQUIRED;
    /* A minority that refuses the client must not end a wait that the
     * others can still win: it counts as a node that failed. */
    t.io += t.auth + t.perm;
    t.auth = t.perm = 0;
    return rl_failure_code(&t);
}

int rl_decide_extend(const rl_outcome *out, size_t n, int quorum, int64_t decided_us, int64_t valid_until_us)
{
    rl_tally t = rl_tally_of(out, n);
    int unknown = (int)n - t.yes - t.no;
    if (t.yes >= quorum)
        return decided_us < valid_until_us ? 0 : REDLOCK_EEXPIRED;
    if (t.yes + unknown < quorum)
        return REDLOCK_ELOST;   /* certain: too many nodes said "not ours" */
    int refused = rl_refusal_code(&t, n, quorum);
    return refused ? refused : rl_failure_code(&t);
}

int rl_decide_release(const rl_outcome *out, size_t n, int quorum)
{
    rl_tally t = rl_tally_of(out, n);
    int unknown = (int)n - t.yes - t.no;
    if (t.yes >= quorum)
        return 0;
    if (t.yes + unknown < quorum)
        return REDLOCK_ELOST;
    int refused = rl_refusal_code(&t, n, quorum);
    return refused ? refused : rl_failure_code(&t);
}

int rl_round_wait_set(const rl_outcome *out, size_t n, int quorum, int acquire, unsigned char *wait)
{
    int yes = 0, no = 0, pending = 0;
    for (size_t i = 0; i < n; i++) {
        yes += out[i] == RL_YES;
        no += out[i] == RL_NO;
        pending += out[i] == RL_PENDING;
    }
    int decided = yes >= quorum || pending == 0;
    if (!decided && yes + pending < quorum) {
        /* The round has failed. Wait for the rest only while the reason is
         * uncertain: refusals alone rule a quorum out ("held by another
         * owner", "lost"), or, for an acquisition, failures alone do ("no
         * quorum"). Otherwise the caller could not tell the two apart. */
        int failed = (int)n - yes - no - pending;
        decided = no > (int)n - quorum || (acquire && failed > (int)n - quorum);
    }
    for (size_t i = 0; i < n; i++)
        wait[i] = !decided && out[i] == RL_PENDING;
    return decided ? 0 : pending;
}

void rl_batch_outcomes(const rl_round *r, size_t k, rl_outcome *out)
{
    const rl_batch *b = r->batch;
    for (size_t i = 0; i < r->n; i++)
        out[i] = r->out[i] != RL_YES ? r->out[i] : b->res[i * b->m + k] ? RL_YES : RL_NO;
}

/* An EXTEND_MANY round is decided once each of its locks is, as a round of
 * its own would be: a node that refused one key must not end the wait for
 * the others' quorum. */
static int batch_decided(const rl_round *r)
{
    unsigned char wait[REDLOCK_MAX_NODES];
    rl_outcome out[REDLOCK_MAX_NODES];
    int any_pending = 0;
    for (size_t i = 0; i < r->n; i++)
        any_pending |= r->out[i] == RL_PENDING;
    if (!any_pending)
        return 1;
    for (size_t k = 0; k < r->batch->m; k++) {
        rl_batch_outcomes(r, k, out);
        if (rl_round_wait_set(out, r->n, r->quorum, r->cmd == RL_CMD_SET_MANY, wait) != 0)
            return 0;
    }
    return 1;
}

/* A semaphore's acquisition lost on the slots it proposed goes on to ask
 * for slots the nodes said are free (semaphore.c's choose). A refusal names
 * the node's free slots, so the round waits for the nodes still to answer
 * while they can make a slot free on a majority and what came so far
 * cannot: two quick refusals that name no common slot would otherwise end
 * the attempt while a slower node, one that ran a release before them,
 * names the slot free with one of them. A node that keeps another limit
 * decides it (the caller is told). */
static int sem_informed(const rl_round *r)
{
    int pending = 0, yes = 0;
    for (size_t i = 0; i < r->n; i++) {
        pending += r->out[i] == RL_PENDING;
        yes += r->out[i] == RL_YES;
        if (r->sem_other[i])
            return 1;
    }
    if (yes >= r->quorum || pending == 0)
        return 1;   /* won, or every node has answered: the common case, decided at once */
    unsigned char cnt[REDLOCK_MAX_SEM_LIMIT];
    uint32_t L = r->sem_limit < REDLOCK_MAX_SEM_LIMIT ? r->sem_limit : REDLOCK_MAX_SEM_LIMIT;
    uint32_t p = 0;
    memset(cnt, 0, L);
    for (const char *s = r->sem_slots ? r->sem_slots : ""; *s;) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s)
            break;
        p++;
        for (size_t i = 0; i < r->n && v < L; i++)
            cnt[v] += r->out[i] == RL_YES;
        s = *end == ',' ? end + 1 : end;
    }
    for (size_t i = 0; i < r->n; i++)
        for (unsigned k = 0; r->out[i] == RL_NO && k < r->sem_listed[i]; k++)
            if (r->sem_free[i][k] < L)
                cnt[r->sem_free[i][k]]++;
    uint32_t ready = 0, hopeful = 0;
    for (uint32_t s = 0; s < L; s++) {
        ready += cnt[s] >= r->quorum;
        hopeful += cnt[s] + pending >= r->quorum;
    }
    return ready >= p || hopeful < p;
}

int rl_cmd_acquires(rl_cmd cmd)
{
    return cmd == RL_CMD_SET || cmd == RL_CMD_ACQUIRE || cmd == RL_CMD_RW_ACQUIRE || cmd == RL_CMD_SEM_ACQUIRE ||
           cmd == RL_CMD_MULTI_ACQUIRE;
}

int rl_epoch_markers(const rl_epoch_node *ep, size_t n, int *young)
{
    int marker = 0;
    *young = 1;
    for (size_t i = 0; i < n; i++) {
        if (!ep[i].heard || !ep[i].marker)
            continue;
        marker = 1;
        if (!ep[i].young)
            *young = 0;
    }
    if (!marker)
        *young = 0;
    return marker;
}

int rl_round_decided(const rl_round *r)
{
    unsigned char wait[REDLOCK_MAX_NODES];
    if (r->no_wait)
        return 1;
    if (r->batch)
        return batch_decided(r);
    if (r->cmd == RL_CMD_EPOCH && r->partner) {
        /* behind its acquisition: the nodes that granted it must answer */
        if (!r->partner->decided_us)
            return 0;
        for (size_t i = 0; i < r->n; i++)
            if (r->partner->out[i] == RL_YES && r->out[i] == RL_PENDING)
                return 0;
        return 1;
    }
    int acquires = rl_cmd_acquires(r->cmd);
    const rl_outcome *out = r->out;
    rl_outcome counted[REDLOCK_MAX_NODES];
    if (acquires && r->check) {
        /* A grant counts once the check behind it found the node whole:
         * its marker there and no quarantine (epoch.c). Until its reply,
         * the node is still pending. */
        int young, marker = rl_epoch_markers(r->check->epoch, r->n, &young);
        for (size_t i = 0; i < r->n; i++) {
            const rl_epoch_node *e = &r->check->epoch[i];
            counted[i] = r->out[i];
            if (r->out[i] != RL_YES)
                continue;
            if (r->check->out[i] == RL_PENDING)
                counted[i] = RL_PENDING;
            else if (!e->heard || e->q_ms != 0 || e->jump_ms > 0 || e->doubt_ms > 0 || (!e->marker && marker))
                counted[i] = RL_ERR_QUARANTINE;
            /* no marker where no node has one yet: a new deployment, if a
             * majority says so (epoch.c) */
        }
        /* A grant from a node without a marker, and none heard yet: a new
         * deployment only if no node has one, so every check is awaited
         * (a node that still has its marker must be heard). */
        for (size_t i = 0; i < r->n && !marker; i++) {
            const rl_epoch_node *e = &r->check->epoch[i];
            if (r->out[i] == RL_YES && e->heard && !e->marker) {
                for (size_t k = 0; k < r->n; k++)
                    if (r->check->out[k] == RL_PENDING)
                        return 0;
                break;
            }
        }
        out = counted;
    }
    if (rl_round_wait_set(out, r->n, r->quorum, acquires, wait) != 0)
        return 0;
    return r->cmd != RL_CMD_SEM_ACQUIRE || sem_informed(r);
}
