/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.c: the counting semaphore (docs/algorithm.md, "Counting
 * semaphore"). A semaphore K of limit L is L slots, K:s0 .. K:s<L-1>, each
 * a Redlock mutex key: a permit is a slot held on a majority, so at most L
 * permits are held at once, as at most one owner holds a mutex. The limit
 * is kept beside the slots (K:limit) so that a caller passing another
 * limit is told. A semaphore is a redlock_lock of another kind: acquire,
 * extend, release, auto-extend, fencing and wake-up run the mutex's code,
 * with the commands swapped for the scripts of semaphore_scripts.c
 * (rl_kind_sem's cmd, rl_sem_cmd), and an acquisition round that may be
 * repeated on slots the nodes said are free (its run_acquire, sem_run). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
    int rc = client && resource ? rl_cluster_key_problem(client, resource, 1, errbuf, errbuf_size) : 0;
    if (rc)
        return rc;
    rc = redlock_lock_open(&l, client, resource, errbuf, errbuf_size);
    if (rc)
        return rc;
    l->sem_slots = calloc(permits, 5);   /* "999," each, the last comma a NUL */
    if (!l->sem_slots) {
        redlock_lock_free(l);
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    l->kind = &rl_kind_sem;
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
    if (!lock || lock->kind != &rl_kind_sem)
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
 * value may have landed (as attempt.c does). */
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

/* Whether node i said slot s is free in round r: a node that granted had
 * the slots asked for (pick) free; one that refused named its first free
 * ones. */
static int said_free(const rl_round *r, size_t i, uint32_t s, const uint32_t *pick, uint32_t p)
{
    if (r->out[i] == RL_YES) {
        for (uint32_t k = 0; k < p; k++)
            if (pick[k] == s)
                return 1;
    } else if (r->out[i] == RL_NO) {
        for (unsigned k = 0; k < r->sem_listed[i]; k++)
            if (r->sem_free[i][k] == s)
                return 1;
    }
    return 0;
}

/* After a round refused: p slots that a quorum of nodes all said are free
 * (each node grants all of a handle's slots or none), taken greedily from
 * the slots free on the most nodes, ties at random. 1 if found, into pick. */
static int choose(const redlock_lock *lock, const rl_round *r, uint32_t *pick)
{
    uint32_t L = lock->sem_limit, p = lock->sem_permits;
    uint16_t *cnt = calloc(L, sizeof *cnt);
    uint32_t *cand = malloc(L * sizeof *cand), *chosen = malloc(p * sizeof *chosen);
    unsigned char with[REDLOCK_MAX_NODES];   /* nodes free for every slot chosen so far */
    int ok = 0;
    if (!cnt || !cand || !chosen)
        goto out;
    for (size_t i = 0; i < r->n; i++)
        for (uint32_t s = 0; s < L; s++)
            cnt[s] += (uint16_t)said_free(r, i, s, pick, p);
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
    for (size_t i = 0; i < r->n; i++)
        with[i] = 1;
    uint32_t got = 0;
    for (uint32_t a = 0; a < n && got < p; a++) {
        int still = 0;
        for (size_t i = 0; i < r->n; i++)
            still += with[i] && said_free(r, i, cand[a], pick, p);
        if (still < r->quorum)
            continue;
        for (size_t i = 0; i < r->n; i++)
            with[i] = with[i] && said_free(r, i, cand[a], pick, p);
        chosen[got++] = cand[a];
    }
    if (got == p) {
        memcpy(pick, chosen, p * sizeof *pick);
        ok = 1;
    }
out:
    free(cnt);
    free(cand);
    free(chosen);
    return ok;
}

#define SEM_ROUNDS 3   /* rounds per attempt: the proposal, then two informed picks */

/* Runs an acquisition round of a semaphore (attempt.c's, through its
 * kind): up to three rounds, each after the last told which slots are
 * free; r is the last. 0 (r decides), or REDLOCK_EINVAL with the lock's
 * message set when the nodes keep another limit, having cleaned up. */
static int sem_run(redlock_lock *lock, rl_round *r)
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
        rl_epoch_run(c, r);
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

/* A semaphore's permit: its rounds act on its slots (rl_sem_cmd), and an
 * attempt may ask again for the slots the nodes said are free. */
const rl_kind rl_kind_sem = {
    .name = "semaphore",
    .cmd = rl_sem_cmd,
    .run_acquire = sem_run,
};
