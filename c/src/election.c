/* SPDX-License-Identifier: BSD-3-Clause */
/* election.c: leader election over the lock's machinery (docs/algorithm.md,
 * "Leader election"). A campaign is a waiting acquire of the election's
 * lock with fencing forced on, so its token is the term; the leader keeps
 * it auto-extended and writes a record (owner, term, revision, value) next
 * to it on a majority; observers read the record from a majority and sleep
 * on the wake-up listener, registered in K:obs, between reads. Every script
 * compares the lock's value first (scripts.c, rl_script_elect). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

/* The election's keys besides the lock's own: K + suffix, made here only,
 * so that a change of naming (hash tags for a cluster) is one place. */
enum { AUX_RECORD, AUX_OBSERVERS, AUX_N };
static const char *const aux_suffix[AUX_N] = { RL_KEY_LEADER, RL_KEY_OBSERVERS };

/* An observer that hears nothing reads again after this long at most while
 * too few listeners are subscribed (the polling fallback). */
#define ELECT_POLL_MS 100

struct redlock_election {
    redlock_lock *lock;       /* the campaign's lock: fencing forced on */
    redlock_lock *obs;        /* the observer's: never acquired; its eventfd and cancel */
    char *aux[AUX_N];
    size_t aux_len[AUX_N];
    redlock_lost_fn on_lost;
    void *on_lost_userdata;
    _Atomic uint64_t term;    /* of our leadership, 0 when not leading */
    uint64_t revision;
    char value[REDLOCK_ELECTION_MAX_VALUE + 1];
    pthread_mutex_t obs_mu;   /* one observe at a time */
    rl_waiter waiter;         /* the observer's registration (made on its first observe) */
    char member[RL_MEMBER_MAX];
    char errmsg[RL_MSG_MAX];
};

static int aux_key(redlock_election *e, int which)
{
    const redlock_lock *l = e->lock;
    size_t slen = strlen(aux_suffix[which]);
    e->aux[which] = malloc(l->key_len + slen + 1);
    if (!e->aux[which])
        return -1;
    memcpy(e->aux[which], l->key, l->key_len);
    memcpy(e->aux[which] + l->key_len, aux_suffix[which], slen + 1);
    e->aux_len[which] = l->key_len + slen;
    return 0;
}

static int fail(redlock_election *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(redlock_election *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->errmsg, sizeof e->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

/* The lock's failure as the election's. */
static int fail_lock(redlock_election *e, int code)
{
    rl_fmt(e->errmsg, sizeof e->errmsg, "%s", redlock_lock_errmsg(e->lock));
    return code;
}

int redlock_election_new(redlock_election **out, redlock_client *client, const char *name)
{
    return redlock_election_open(out, client, name, NULL, 0);
}

int redlock_election_open(redlock_election **out, redlock_client *client, const char *name, char *errbuf,
                          size_t errbuf_size)
{
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!out) {
        rl_fmt(errbuf, errbuf_size, "out is NULL");
        return REDLOCK_EINVAL;
    }
    *out = NULL;
    if (!client || !name) {
        rl_fmt(errbuf, errbuf_size, "%s is NULL", client ? "name" : "client");
        return REDLOCK_EINVAL;
    }
    size_t len = strlen(name);
    /* The lock refuses ":fencing" only when the client mints tokens; an
     * election always does. */
    if (len >= RL_FENCE_SUFFIX_LEN && memcmp(name + len - RL_FENCE_SUFFIX_LEN, RL_FENCE_SUFFIX, RL_FENCE_SUFFIX_LEN) == 0) {
        rl_fmt(errbuf, errbuf_size, "the election name '%s' ends in '%s': an election's term is a fencing token, and "
               "that is the key of another name's counter", name, RL_FENCE_SUFFIX);
        return REDLOCK_EINVAL;
    }
    redlock_election *e = calloc(1, sizeof *e);
    if (!e) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    int rc = redlock_lock_open(&e->lock, client, name, errbuf, errbuf_size);
    if (rc == 0)
        rc = redlock_lock_open(&e->obs, client, name, errbuf, errbuf_size);
    if (rc == 0 && (aux_key(e, AUX_RECORD) != 0 || aux_key(e, AUX_OBSERVERS) != 0)) {
        rc = REDLOCK_ENOMEM;
        rl_fmt(errbuf, errbuf_size, "out of memory");
    }
    if (rc) {
        redlock_lock_free(e->lock);
        redlock_lock_free(e->obs);
        free(e->aux[AUX_RECORD]);
        free(e->aux[AUX_OBSERVERS]);
        free(e);
        return rc;
    }
    e->lock->fencing = 1;
    /* Candidates are few and a quick hand-over is the point of an
     * election: its campaigns are woken by the leader's release, and its
     * observers by every change, whatever the client's default, unless the
     * client said REDLOCK_OPT_NO_WAKE. */
    e->lock->pol.flags |= REDLOCK_OPT_WAKE;
    e->obs->pol.flags |= REDLOCK_OPT_WAKE;
    atomic_init(&e->term, 0);
    pthread_mutex_init(&e->obs_mu, NULL);
    *out = e;
    return 0;
}

void redlock_election_free(redlock_election *e)
{
    if (!e)
        return;
    rl_async_forget(e->obs);   /* an observe under way ends first: it uses the waiter */
    rl_wake_leave(e->obs->client, &e->waiter);
    redlock_lock_free(e->lock);
    redlock_lock_free(e->obs);
    free(e->aux[AUX_RECORD]);
    free(e->aux[AUX_OBSERVERS]);
    pthread_mutex_destroy(&e->obs_mu);
    free(e);
}

int redlock_election_on_lost(redlock_election *e, redlock_lost_fn on_lost, void *userdata)
{
    if (!e)
        return REDLOCK_EINVAL;
    e->on_lost = on_lost;
    e->on_lost_userdata = userdata;
    return 0;
}

/* 0, or REDLOCK_EINVAL with why value cannot be a leader's. */
static int value_problem(redlock_election *e, const char *value)
{
    if (!value)
        return fail(e, REDLOCK_EINVAL, "the value is NULL");
    size_t len = strlen(value);
    if (len > REDLOCK_ELECTION_MAX_VALUE)
        return fail(e, REDLOCK_EINVAL, "the value is %zu bytes, over the limit of %d", len,
                    REDLOCK_ELECTION_MAX_VALUE);
    return 0;
}

/* A round of the election script on lock's key; op 'w', 'c' or 'r'. */
static void elect_round(redlock_election *e, rl_round *r, redlock_lock *lock, const char *op)
{
    rl_init_round(r, lock, RL_CMD_ELECT, 0);
    for (int k = 0; k < 2; k++) {
        r->ekeys[k] = e->aux[k];
        r->ekey_len[k] = e->aux_len[k];
    }
    for (int k = 0; k < RL_ELECT_ARGS; k++)
        r->eargv[k] = "";
    r->eargv[0] = op;
    r->elect = NULL;
}

/* Writes the record (term, revision, value) if the lock is still ours, on
 * a majority within the validity: 0, or a failure code with the reason.
 * The lock's mutex is held. */
static int write_record(redlock_election *e, uint64_t term, uint64_t revision, const char *value)
{
    redlock_lock *l = e->lock;
    char t[24], n[24];
    snprintf(t, sizeof t, "%llu", (unsigned long long)term);
    snprintf(n, sizeof n, "%llu", (unsigned long long)revision);
    int64_t valid_until = atomic_load(&l->valid_until_us);
    rl_round r;
    elect_round(e, &r, l, "w");
    r.eargv[1] = l->value;
    r.eargv[2] = t;
    r.eargv[3] = n;
    r.eargv[4] = value;
    r.cap_us = valid_until;
    rl_round_run(l->client, &r);
    rl_record_round(l, &r, 0);
    int code = rl_decide_extend(r.out, r.n, l->client->quorum, r.decided_us, valid_until);
    if (code == 0)
        return 0;
    rl_tally tl = rl_tally_of(r.out, r.n);
    fail(e, code, "the leader's record (term %s, revision %s) of '%s' was written on %d of %zu nodes, %d needed%s",
         t, n, l->resource, tl.yes, r.n, l->client->quorum,
         code == REDLOCK_ELOST ? ": the election is no longer ours" :
         code == REDLOCK_EEXPIRED ? ", after the validity ran out" : "");
    rl_describe_round(e->errmsg, sizeof e->errmsg, l->client, &r);
    return code;
}

/* What rules a campaign out before it waits: 0, or the code with the reason. */
static int campaign_check(redlock_election *e, const char *value)
{
    int rc = value_problem(e, value);
    if (rc)
        return rc;
    if (redlock_lock_is_held(e->lock))
        return fail(e, REDLOCK_ESTATE, "already leading '%s' (term %llu)", e->lock->resource,
                    (unsigned long long)atomic_load(&e->term));
    return 0;
}

/* The election's lock was just acquired: the record written with the new
 * term, the leadership auto-extended. 0, or the code (the lock released,
 * which wakes the next campaigner). */
static int campaign_won(redlock_election *e, const char *value)
{
    redlock_lock *l = e->lock;
    uint64_t term = redlock_lock_fencing_token(l);
    pthread_mutex_lock(&l->mu);
    int rc = term ? write_record(e, term, 1, value)
                  : fail(e, REDLOCK_ESERVER, "acquired '%s' without a fencing token", l->resource);
    pthread_mutex_unlock(&l->mu);
    /* Until the end of a hold near 50 days (the client's max_hold_ms may
     * bound it sooner). */
    if (rc == 0)
        rc = redlock_lock_auto_extend(l, UINT32_MAX, 0, e->on_lost, e->on_lost_userdata, NULL);
    if (rc) {
        char why[RL_MSG_MAX];
        rl_fmt(why, sizeof why, "%s", e->errmsg[0] ? e->errmsg : redlock_lock_errmsg(l));
        redlock_lock_release(l);   /* wakes the next campaigner */
        rl_fmt(e->errmsg, sizeof e->errmsg, "%s", why);
        return rc;
    }
    e->revision = 1;
    memcpy(e->value, value, strlen(value) + 1);
    atomic_store(&e->term, term);
    e->errmsg[0] = '\0';
    return 0;
}

int redlock_election_campaign(redlock_election *e, const char *value, uint32_t ttl_ms, int64_t wait_ms)
{
    if (!e)
        return REDLOCK_EINVAL;
    int rc = campaign_check(e, value);
    if (rc)
        return rc;
    rc = redlock_lock_acquire(e->lock, ttl_ms, wait_ms);
    return rc ? fail_lock(e, rc) : campaign_won(e, value);
}

/* An asynchronous campaign: its value and callback until the lock's
 * acquire ends. */
typedef struct campaign {
    redlock_election *e;
    redlock_campaigned_fn done;
    void *userdata;
    char value[];
} campaign;

static void campaign_acquired(redlock_lock *lock, int rc, void *userdata)
{
    campaign *c = userdata;
    (void)lock;
    rc = rc ? fail_lock(c->e, rc) : campaign_won(c->e, c->value);
    redlock_campaigned_fn done = c->done;
    redlock_election *e = c->e;
    void *ud = c->userdata;
    free(c);
    done(e, rc, ud);
}

/* What a campaign or resign started without blocking is checked for first:
 * 0, or the code (call names it in the message). */
static int lock_call_check(redlock_election *e, int has_done, const char *call)
{
    if (!e)
        return REDLOCK_EINVAL;
    if (!has_done)
        return fail(e, REDLOCK_EINVAL, "%s needs a done callback", call);
    if (rl_async_pending(e->lock))
        return REDLOCK_ESTATE;   /* the message is the call's under way */
    return 0;
}

int redlock_election_campaign_async(redlock_election *e, const char *value, uint32_t ttl_ms, int64_t wait_ms,
                                    redlock_campaigned_fn done, void *userdata)
{
    int rc = lock_call_check(e, done != NULL, "redlock_election_campaign_async");
    if (rc)
        return rc;
    rc = campaign_check(e, value);
    if (rc)
        return rc;
    size_t len = strlen(value) + 1;
    campaign *c = malloc(sizeof *c + len);
    if (!c)
        return fail(e, REDLOCK_ENOMEM, "out of memory");
    c->e = e;
    c->done = done;
    c->userdata = userdata;
    memcpy(c->value, value, len);
    rc = redlock_lock_acquire_async(e->lock, ttl_ms, wait_ms, campaign_acquired, c);
    if (rc) {
        free(c);
        return fail_lock(e, rc);
    }
    return 0;
}

int redlock_election_proclaim(redlock_election *e, const char *value)
{
    if (!e)
        return REDLOCK_EINVAL;
    int rc = value_problem(e, value);
    if (rc)
        return rc;
    redlock_lock *l = e->lock;
    pthread_mutex_lock(&l->mu);
    uint64_t term = atomic_load(&e->term);
    if (!term || !redlock_lock_is_held(l)) {
        pthread_mutex_unlock(&l->mu);
        return fail(e, REDLOCK_ESTATE, "not the leader of '%s'", l->resource);
    }
    rc = write_record(e, term, e->revision + 1, value);
    if (rc == 0) {
        e->revision++;
        memcpy(e->value, value, strlen(value) + 1);
        e->errmsg[0] = '\0';
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int redlock_election_resign(redlock_election *e)
{
    if (!e)
        return REDLOCK_EINVAL;
    redlock_lock *l = e->lock;
    uint64_t term = atomic_exchange(&e->term, 0);
    if (!term || atomic_load(&l->state) == LOCK_IDLE)
        return fail(e, REDLOCK_ESTATE, "not the leader of '%s'", l->resource);
    char owner[RL_VALUE_LEN + 1];
    memcpy(owner, l->value, sizeof owner);
    /* The release first: it wakes the next campaigner at once. */
    int rc = redlock_lock_release(l);
    if (rc)
        fail_lock(e, rc);
    else
        e->errmsg[0] = '\0';
    /* Then the record's owner, if still ours, is cleared, which tells the
     * observers; not waited for: a new leader's record is not touched. */
    char t[24];
    snprintf(t, sizeof t, "%llu", (unsigned long long)term);
    rl_round r;
    elect_round(e, &r, l, "c");
    r.eargv[1] = owner;
    r.eargv[2] = t;
    r.no_wait = 1;
    rl_round_run(l->client, &r);
    return rc;
}

/* An asynchronous resign or proclaim: one step, the blocking call, on the
 * client's acquire thread. */
typedef struct step_run {
    rl_acq a;                  /* first: the queue frees it */
    redlock_election *e;
    redlock_campaigned_fn done;
    void *userdata;
    int proclaim;
    char value[];              /* proclaim's, copied */
} step_run;

static int step_once(rl_acq *a)
{
    step_run *r = (step_run *)a;
    a->rc = r->proclaim ? redlock_election_proclaim(r->e, r->value) : redlock_election_resign(r->e);
    return 0;
}

static void step_report(rl_acq *a)
{
    step_run *r = (step_run *)a;
    r->done(r->e, a->rc, r->userdata);
}

/* Queues resign (value NULL) or proclaim (value) of e: 0, or the code. */
static int start_step(redlock_election *e, const char *value, redlock_campaigned_fn done, void *userdata)
{
    size_t len = value ? strlen(value) + 1 : 0;
    step_run *r = calloc(1, sizeof *r + len);
    if (!r)
        return fail(e, REDLOCK_ENOMEM, "out of memory");
    r->a.step = step_once;
    r->a.report = step_report;
    r->e = e;
    r->done = done;
    r->userdata = userdata;
    r->proclaim = value != NULL;
    if (value)
        memcpy(r->value, value, len);
    const char *why;
    int rc = rl_async_start(e->lock, &r->a, &why);
    if (rc) {
        free(r);
        return fail(e, rc, "%s", why);
    }
    return 0;
}

int redlock_election_resign_async(redlock_election *e, redlock_campaigned_fn done, void *userdata)
{
    int rc = lock_call_check(e, done != NULL, "redlock_election_resign_async");
    return rc ? rc : start_step(e, NULL, done, userdata);
}

int redlock_election_proclaim_async(redlock_election *e, const char *value, redlock_campaigned_fn done,
                                    void *userdata)
{
    int rc = lock_call_check(e, done != NULL, "redlock_election_proclaim_async");
    if (!rc)
        rc = value_problem(e, value);
    return rc ? rc : start_step(e, value, done, userdata);
}

/* The state a majority agrees on, from the nodes that answered a read:
 * the leader of the term that a quorum holds, with the highest revision a
 * quorum has (a node with exactly it exists: fewer than a quorum have a
 * higher one); else none, with the highest term a quorum has recorded.
 * *expires_ms: when the leader may lapse on a majority, for observers. */
static void agree(const rl_round *r, int quorum, redlock_leader *out, int64_t *expires_ms)
{
    const rl_elect_node *nd = r->elect;
    memset((char *)out + sizeof out->version, 0, sizeof *out - sizeof out->version);
    *expires_ms = -1;
    for (size_t i = 0; i < r->n; i++) {
        if (r->out[i] != RL_YES || !nd[i].present)
            continue;
        uint64_t term = nd[i].term;
        int same = 0;
        for (size_t j = 0; j < r->n; j++)
            same += r->out[j] == RL_YES && nd[j].present && nd[j].term == term;
        if (same < quorum)
            continue;
        uint64_t best = 0;
        size_t from = i;
        for (size_t j = 0; j < r->n; j++) {
            if (r->out[j] != RL_YES || !nd[j].present || nd[j].term != term || nd[j].revision <= best)
                continue;
            int atleast = 0;
            for (size_t k = 0; k < r->n; k++)
                atleast += r->out[k] == RL_YES && nd[k].present && nd[k].term == term &&
                           nd[k].revision >= nd[j].revision;
            if (atleast >= quorum) {
                best = nd[j].revision;
                from = j;
            }
        }
        out->present = 1;
        out->term = term;
        out->revision = best;
        out->value_len = strlen(nd[from].value);
        memcpy(out->value, nd[from].value, out->value_len + 1);
        for (size_t j = 0; j < r->n; j++)
            if (r->out[j] == RL_YES && nd[j].present && nd[j].term == term && nd[j].pttl_ms > *expires_ms)
                *expires_ms = nd[j].pttl_ms;
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (r->out[i] != RL_YES || nd[i].term <= out->term)
            continue;
        int atleast = 0;
        for (size_t j = 0; j < r->n; j++)
            atleast += r->out[j] == RL_YES && nd[j].term >= nd[i].term;
        if (atleast >= quorum)
            out->term = nd[i].term;
    }
}

/* One read from a majority into out; member registers an observer (or "").
 * 0 or a failure code with the reason. */
static int read_state(redlock_election *e, const char *member, redlock_leader *out, int64_t *expires_ms)
{
    redlock_lock *l = e->obs;
    redlock_client *c = l->client;
    rl_elect_node *nodes = calloc(c->n, sizeof *nodes);
    if (!nodes)
        return fail(e, REDLOCK_ENOMEM, "out of memory");
    char lease[16];
    snprintf(lease, sizeof lease, "%u", rl_policy_wake_lease_ms(&l->pol));
    rl_round r;
    elect_round(e, &r, l, "r");
    r.eargv[5] = member;
    r.eargv[6] = lease;
    r.elect = nodes;
    /* Every node that answers within its deadline, not the first quorum:
     * a write acknowledged by a majority is then on a majority of the
     * answers (the nodes that acknowledged it are among them), even while
     * it is still on its way to the others. A read that stopped at the
     * first quorum could meet the one node the write had not reached yet,
     * and call the leader that just returned from campaign "none". */
    r.quorum = (int)c->n;
    rl_round_run(c, &r);
    rl_tally t = rl_tally_of(r.out, r.n);
    int rc = 0;
    if (t.yes >= c->quorum) {
        agree(&r, c->quorum, out, expires_ms);
    } else {
        rc = fail(e, rl_failure_code(&t), "the leader of '%s' could not be read: %d of %zu nodes answered, %d needed",
                  l->resource, t.yes, r.n, c->quorum);
        rl_describe_round(e->errmsg, sizeof e->errmsg, c, &r);
    }
    free(nodes);
    return rc;
}

static int check_out(const redlock_leader *out)
{
    return out && out->version >= 1 && out->version <= REDLOCK_LEADER_VERSION ? 0 : REDLOCK_EINVAL;
}

int redlock_election_leader(redlock_election *e, redlock_leader *out)
{
    if (!e)
        return REDLOCK_EINVAL;
    if (check_out(out))
        return fail(e, REDLOCK_EINVAL, "out is NULL or its version is not REDLOCK_LEADER_VERSION");
    int64_t expires;
    redlock_leader got;
    got.version = out->version;
    int rc = read_state(e, "", &got, &expires);
    if (rc == 0) {
        *out = got;
        e->errmsg[0] = '\0';
    }
    return rc;
}

/* 1 when now comes after last in the order of states: terms, then
 * revisions, and "none" after term T after every revision of T. A none of
 * a later term than last's is a change too: a leadership came and went
 * between two reads. */
static int later(const redlock_leader *now, const redlock_leader *last)
{
    if (now->present)
        return now->term > last->term ||
               (now->term == last->term && last->present && now->revision > last->revision);
    return last->present || now->term > last->term;
}

/* An observe's progress across its reads: redlock_election_observe keeps
 * it on its stack, redlock_election_observe_async in the client's queue. */
typedef struct obs_run {
    rl_acq a;                 /* the queue's part: a.lock is e->obs, a.rc the result */
    redlock_election *e;
    redlock_leader *last;     /* the caller's: written on a change */
    int64_t wait_ms, deadline, renew_us;
    int listen, started;
    redlock_observed_fn done;
    void *userdata;
} obs_run;

static void obs_begin(obs_run *o)
{
    redlock_election *e = o->e;
    redlock_lock *l = e->obs;
    redlock_client *c = l->client;
    o->deadline = o->wait_ms > 0 ? rl_now_us() + o->wait_ms * 1000 : INT64_MAX;
    if (!e->member[0])
        rl_wake_name(c, &e->waiter, l, e->member, sizeof e->member);
    rl_lock_wake_fd(l);
    o->listen = redlock_flags_wake(l->pol.flags);
    if (o->listen)
        rl_wake_listen(c, &e->waiter);
    o->renew_us = (int64_t)rl_policy_wake_lease_ms(&l->pol) * 1000 / 3;
    o->started = 1;
}

static void obs_end(obs_run *o)
{
    redlock_election *e = o->e;
    if (o->listen) {
        rl_wake_leave(e->obs->client, &e->waiter);
        e->waiter.listening = 0;   /* the next observe joins the list again */
    }
}

/* One read: 1 when the observe is over (o->a.rc: 0 with *last the change,
 * or the failure), 0 to nap until o->a.nap_until_us. */
static int obs_read(obs_run *o)
{
    redlock_election *e = o->e;
    redlock_lock *l = e->obs;
    redlock_client *c = l->client;
    redlock_leader *last = o->last;
    if (atomic_load(&l->cancel)) {
        o->a.rc = fail(e, REDLOCK_ECANCELED, "observing '%s' was cancelled", l->resource);
        return 1;
    }
    atomic_store(&e->waiter.woken, 0);
    redlock_leader now;
    now.version = last->version;
    int64_t expires_ms = -1;
    int rc = read_state(e, o->listen ? e->member : "", &now, &expires_ms);
    o->a.rc = rc;
    if (rc && !redlock_error_is_retryable(rc))
        return 1;
    if (rc == 0 && later(&now, last)) {
        if (!now.present && now.term < last->term)
            now.term = last->term;   /* never a term backwards */
        *last = now;
        e->errmsg[0] = '\0';
        return 1;
    }
    int64_t t = rl_now_us();
    if (o->wait_ms == REDLOCK_WAIT_NONE || t >= o->deadline) {
        if (rc == 0)
            o->a.rc = fail(e, REDLOCK_ETIMEDOUT, "no change of the leader of '%s' within %lld ms", l->resource,
                           (long long)o->wait_ms);
        return 1;
    }
    /* Messages wake us; without enough listeners, or after a failed read,
     * poll. Nobody tells of a lapse: read again when the leader's lock may
     * have expired, and renew the registration in time. */
    int64_t next = t + o->renew_us;
    if (rc || !o->listen || rl_wake_ready(c) < c->quorum)
        next = t + ELECT_POLL_MS * 1000;
    if (expires_ms >= 0 && t + (expires_ms + 1) * 1000 < next)
        next = t + (expires_ms + 1) * 1000;
    if (next > o->deadline)
        next = o->deadline;
    o->a.nap_until_us = next;
    return 0;
}

/* Where the nap before the next read stands: REDLOCK_ECANCELED, 0 (read
 * again: woken by a message, or due) or -1 (still on). */
static int obs_nap_state(obs_run *o)
{
    redlock_election *e = o->e;
    if (atomic_load(&e->obs->cancel))
        return REDLOCK_ECANCELED;
    if (atomic_load(&e->waiter.woken))
        return 0;
    return o->a.nap_until_us - rl_now_us() <= 0 ? 0 : -1;
}

/* Sleeps until the nap's state is not -1: 0, or REDLOCK_ECANCELED. */
static int nap(obs_run *o)
{
    int fd = rl_lock_wake_fd(o->e->obs);
    for (;;) {
        int why = obs_nap_state(o);
        if (why != -1)
            return why;
        int64_t left = o->a.nap_until_us - rl_now_us();
        int ms = left > 0 ? (int)((left + 999) / 1000) : 0;
        struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
        if ((fd >= 0 ? poll(&p, 1, ms) : poll(NULL, 0, ms < 10 ? ms : 10)) > 0) {
            uint64_t v;
            ssize_t rd = read(fd, &v, sizeof v);
            (void)rd;
        }
    }
}

static int observe_locked(redlock_election *e, redlock_leader *last, int64_t wait_ms)
{
    obs_run o;
    memset(&o, 0, sizeof o);
    o.e = e;
    o.last = last;
    o.wait_ms = wait_ms;
    obs_begin(&o);
    while (!obs_read(&o)) {
        if (nap(&o)) {
            o.a.rc = fail(e, REDLOCK_ECANCELED, "observing '%s' was cancelled", e->obs->resource);
            break;
        }
    }
    obs_end(&o);
    return o.a.rc;
}

static int check_observe_args(redlock_election *e, const redlock_leader *last, int64_t wait_ms)
{
    if (check_out(last))
        return fail(e, REDLOCK_EINVAL, "last is NULL or its version is not REDLOCK_LEADER_VERSION");
    if ((wait_ms < 0 && wait_ms != REDLOCK_WAIT_FOREVER) || wait_ms > (int64_t)REDLOCK_MAX_WAIT_MS)
        return fail(e, REDLOCK_EINVAL, "wait_ms %lld is out of range", (long long)wait_ms);
    return 0;
}

int redlock_election_observe(redlock_election *e, redlock_leader *last, int64_t wait_ms)
{
    if (!e)
        return REDLOCK_EINVAL;
    int rc = check_observe_args(e, last, wait_ms);
    if (rc)
        return rc;
    pthread_mutex_lock(&e->obs_mu);
    /* One observe at a time: an asynchronous one holds the handle until its done. */
    rc = rl_async_pending(e->obs) ? REDLOCK_ESTATE : observe_locked(e, last, wait_ms);
    pthread_mutex_unlock(&e->obs_mu);
    return rc;
}

/* An asynchronous observe's step, on the queue's thread: 1 to nap on, 0 when over. */
static int observe_step(rl_acq *a)
{
    obs_run *o = (obs_run *)a;
    if (!o->started) {
        obs_begin(o);
    } else {
        int why = obs_nap_state(o);
        if (why == -1)
            return 1;
        if (why == REDLOCK_ECANCELED) {
            a->rc = fail(o->e, REDLOCK_ECANCELED, "observing '%s' was cancelled", o->e->obs->resource);
            obs_end(o);
            return 0;
        }
    }
    if (!obs_read(o))
        return 1;
    obs_end(o);
    return 0;
}

static void observe_report(rl_acq *a)
{
    obs_run *o = (obs_run *)a;
    o->done(o->e, a->rc, o->userdata);
}

int redlock_election_observe_async(redlock_election *e, redlock_leader *last, int64_t wait_ms,
                                   redlock_observed_fn done, void *userdata)
{
    if (!e)
        return REDLOCK_EINVAL;
    if (!done)
        return fail(e, REDLOCK_EINVAL, "redlock_election_observe_async needs a done callback");
    int rc = check_observe_args(e, last, wait_ms);
    if (rc)
        return rc;
    /* Not while a blocking observe holds the handle, nor another one. */
    if (pthread_mutex_trylock(&e->obs_mu) != 0)
        return REDLOCK_ESTATE;
    if (rl_async_pending(e->obs)) {
        pthread_mutex_unlock(&e->obs_mu);
        return REDLOCK_ESTATE;
    }
    obs_run *o = calloc(1, sizeof *o);
    if (!o) {
        pthread_mutex_unlock(&e->obs_mu);
        return fail(e, REDLOCK_ENOMEM, "out of memory");
    }
    o->a.step = observe_step;
    o->a.report = observe_report;
    o->e = e;
    o->last = last;
    o->wait_ms = wait_ms;
    o->done = done;
    o->userdata = userdata;
    const char *why;
    rc = rl_async_start(e->obs, &o->a, &why);
    pthread_mutex_unlock(&e->obs_mu);
    if (rc) {
        free(o);
        return fail(e, rc, "%s", why);
    }
    return 0;
}

void redlock_election_cancel(redlock_election *e)
{
    if (!e)
        return;
    redlock_lock_cancel(e->lock);
    redlock_lock_cancel(e->obs);
}

void redlock_election_cancel_reset(redlock_election *e)
{
    if (!e)
        return;
    redlock_lock_cancel_reset(e->lock);
    redlock_lock_cancel_reset(e->obs);
}

int redlock_election_is_leader(const redlock_election *e)
{
    return e && atomic_load(&((redlock_election *)e)->term) && redlock_lock_is_held(e->lock);
}

uint64_t redlock_election_term(const redlock_election *e)
{
    return redlock_election_is_leader(e) ? atomic_load(&((redlock_election *)e)->term) : 0;
}

const redlock_lock *redlock_election_lock(const redlock_election *e)
{
    return e ? e->lock : NULL;
}

const char *redlock_election_errmsg(const redlock_election *e)
{
    return e ? e->errmsg : "election is NULL";
}
