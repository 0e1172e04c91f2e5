/* SPDX-License-Identifier: BSD-3-Clause */
/* report.c: what a round tells the caller: the lock handle's error detail,
 * the failure detail naming each node, the per-node report of a lock's last
 * round, and the metrics hook. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

char *rl_errbuf(redlock_lock *lock)
{
    if (!lock->errmsg && !(lock->errmsg = calloc(1, RL_MSG_MAX))) {
        /* Out of memory: the detail is written nowhere anyone reads. */
        static _Thread_local char lost[RL_MSG_MAX];
        return lost;
    }
    return lock->errmsg;
}

const char *rl_errmsg(const redlock_lock *lock)
{
    return lock->errmsg ? lock->errmsg : lock->errcode ? "(no detail: out of memory)" : "";
}

int rl_lock_err(redlock_lock *lock, int code, const char *fmt, ...)
{
    va_list ap;
    lock->errcode = code;
    va_start(ap, fmt);
    vsnprintf(rl_errbuf(lock), RL_MSG_MAX, fmt, ap);
    va_end(ap);
    return code;
}

int rl_lock_ok(redlock_lock *lock)
{
    /* The detail goes with the failure: a lock that failed once and then
     * succeeded (a retried attempt on a loaded machine) keeps no 2 KB
     * buffer for as long as it is held. */
    lock->errcode = 0;
    free(lock->errmsg);
    lock->errmsg = NULL;
    return 0;
}

static const char *outcome_word(rl_outcome o)
{
    switch (o) {
    case RL_YES: return "OK";
    case RL_NO: return "refused";
    case RL_ERR_SERVER: return "server error";
    case RL_ERR_AUTH: return "auth error";
    case RL_ERR_PERM: return "command refused";
    case RL_ERR_IO: return "I/O error";
    case RL_ERR_TIMEOUT: return "timeout";
    case RL_ERR_DOWN: return "down";
    case RL_ERR_TLS: return "TLS error";
    case RL_UNSENT: return "skipped";
    case RL_ERR_QUARANTINE: return "quarantined";
    default: return "pending";
    }
}

/* Appends "; node i (url): what" for every node to buf. */
void rl_describe_round(char *buf, size_t size, const redlock_client *c, const rl_round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->out[i] == RL_YES)
            rl_append(buf, size, "; %s: OK in %.1f ms", c->nodes[i].ep.display, (double)r->rtt_us[i] / 1000.0);
        else
            rl_append(buf, size, "; %s: %s%s%s", c->nodes[i].ep.display, outcome_word(r->out[i]),
                      r->msg[i][0] ? ": " : "", r->msg[i]);
    }
}

/* A node's part of a round as the public report has it. */
static int node_outcome(const rl_round *r, const rl_outcome *out, size_t i, int *code)
{
    *code = 0;
    switch (out[i]) {
    case RL_YES: return REDLOCK_NODE_OK;
    case RL_NO: return REDLOCK_NODE_REFUSED;
    case RL_ERR_SERVER: *code = REDLOCK_ESERVER; return REDLOCK_NODE_ERROR;
    case RL_ERR_AUTH: *code = REDLOCK_EAUTH; return REDLOCK_NODE_ERROR;
    case RL_ERR_PERM: *code = REDLOCK_EPERM; return REDLOCK_NODE_ERROR;
    case RL_ERR_IO: *code = REDLOCK_EIO; return REDLOCK_NODE_ERROR;
    case RL_ERR_TLS: *code = REDLOCK_ETLS; return REDLOCK_NODE_ERROR;
    case RL_ERR_TIMEOUT: *code = REDLOCK_ETIMEDOUT; return REDLOCK_NODE_TIMEOUT;
    case RL_ERR_DOWN: *code = REDLOCK_EIO; return REDLOCK_NODE_DOWN;
    case RL_UNSENT: return r->sent[i] ? REDLOCK_NODE_NOT_WAITED : REDLOCK_NODE_NONE;
    case RL_ERR_QUARANTINE: *code = REDLOCK_ENOQUORUM; return REDLOCK_NODE_QUARANTINED;
    default: return REDLOCK_NODE_NONE;
    }
}

/* The fields every event has. */
static void event_init(redlock_event *ev, const redlock_lock *lock, int type, int code, const char *msg,
                       int automatic, int64_t elapsed_us)
{
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    ev->code = code;
    ev->lock = lock;
    ev->resource = lock->resource;
    ev->message = msg ? msg : "";
    ev->automatic = automatic;
    ev->quorum = lock->client->quorum;
    ev->n_nodes = lock->client->n;
    ev->elapsed_us = elapsed_us;
}

/* The messages that most rounds give a node, kept once for every lock
 * (proto.c, fifo.c): the static copy of m, or NULL. */
static const char *common_msg(const char *m)
{
    static const char *const common[] = {
        "", "held by another owner", "key gone or held by another owner",
        "free, but kept for a waiter that came first", "not waited for (decided without it)", "sent",
    };
    for (size_t k = 0; k < sizeof common / sizeof common[0]; k++)
        if (strcmp(m, common[k]) == 0)
            return common[k];
    return NULL;
}

/* Keeps the round as the lock's last (mutex held), and tells on_event about
 * each node that failed in it. */
void rl_record_round(redlock_lock *lock, const rl_round *r, int automatic)
{
    rl_record_round_shared(lock, r, r->out, automatic, NULL);
}

/* The same with out for the round's outcomes: one lock's part of a round
 * over many (a node that answered for every key may have refused this one). */
void rl_record_round_out(redlock_lock *lock, const rl_round *r, const rl_outcome *out, int automatic)
{
    rl_record_round_shared(lock, r, out, automatic, NULL);
}

void rl_msgs_unref(rl_msgs *m)
{
    if (m && atomic_fetch_sub(&m->refs, 1) == 1)
        free(m);
}

/* The round's messages that are not common ones, packed in node order
 * (refs 1), or NULL when it has none (or out of memory). */
static rl_msgs *pack(const rl_round *r)
{
    size_t need = 0;
    for (size_t i = 0; i < r->n; i++)
        if (!common_msg(r->msg[i]))
            need += strnlen(r->msg[i], RL_NODE_MSG_MAX - 1) + 1;
    rl_msgs *m = need ? malloc(sizeof *m + need) : NULL;
    if (!m)
        return NULL;
    atomic_init(&m->refs, 1);
    char *p = m->text;
    for (size_t i = 0; i < r->n; i++) {
        if (common_msg(r->msg[i]))
            continue;
        size_t len = strnlen(r->msg[i], RL_NODE_MSG_MAX - 1);
        memcpy(p, r->msg[i], len);
        p[len] = '\0';
        p += len + 1;
    }
    return m;
}

void rl_record_round_shared(redlock_lock *lock, const rl_round *r, const rl_outcome *out, int automatic,
                            rl_msgs **shared)
{
    redlock_client *c = lock->client;
    /* A message takes room only where a node had something of its own to
     * say (the common ones are the same for every lock), and then once
     * per round, not per lock: the round's such messages, packed, shared
     * by every lock that recorded the round, replace the lock's last. A
     * lock whose last round had none keeps none (docs/performance.md,
     * memory per held lock). */
    int own = 0;
    for (size_t i = 0; i < r->n && !own; i++)
        own = !common_msg(r->msg[i]) && !(out[i] == RL_NO && r->out[i] == RL_YES);
    rl_msgs *msgs = NULL;
    if (own) {
        if (shared && *shared) {
            msgs = *shared;
            atomic_fetch_add(&msgs->refs, 1);
        } else if ((msgs = pack(r)) && shared) {
            *shared = msgs;
            atomic_fetch_add(&msgs->refs, 1);
        }
    }
    const char *p = msgs ? msgs->text : NULL;
    for (size_t i = 0; i < r->n; i++) {
        rl_report *rep = &lock->report[i];
        int code;
        rep->outcome = (unsigned char)node_outcome(r, out, i, &code);
        rep->code = (int16_t)code;
        rep->unreachable = r->unreachable[i];
        int64_t rtt = out[i] == RL_UNSENT || out[i] == RL_ERR_DOWN ? 0 : r->rtt_us[i];
        rep->rtt_us = rtt > INT32_MAX ? INT32_MAX : (int32_t)rtt;
        const char *common = common_msg(r->msg[i]);
        if (out[i] == RL_NO && r->out[i] == RL_YES) {
            rep->msg = "key gone or held by another owner";   /* this lock's, in a round of many */
        } else if (common) {
            rep->msg = common;
        } else {
            rep->msg = p ? p : "";   /* out of memory: the outcome and code still tell */
        }
        if (!common && p)
            p += strlen(p) + 1;
        /* A node out of the vote answered: the queue on the others is
         * whole and their messages wake our waiters. Counted as trouble it
         * would keep this client from waking anyone (release_locked) for
         * the whole quarantine, while other clients' waiters, who never
         * saw it, sleep on for a wake-up that does not come. */
        if (rep->code && rep->outcome != REDLOCK_NODE_QUARANTINED)
            atomic_store(&c->trouble_us, rl_now_us());
    }
    rl_msgs_unref(lock->report_msgs);
    lock->report_msgs = msgs;
    if (!c->opts.on_event)
        return;
    for (size_t i = 0; i < r->n; i++) {
        const rl_report *rep = &lock->report[i];
        if (rep->code == 0)
            continue;
        redlock_event ev;
        event_init(&ev, lock, REDLOCK_EVENT_NODE_ERROR, rep->code, rep->msg, automatic, r->decided_us - r->start_us);
        ev.node = i;
        ev.node_outcome = rep->outcome;
        ev.node_rtt_us = rep->rtt_us;
        c->opts.on_event(&ev, c->opts.on_event_userdata);
    }
}

void rl_emit_out(redlock_lock *lock, int type, int code, const char *msg, const rl_round *r, const rl_outcome *out,
                 int automatic, uint32_t attempt, int64_t elapsed_us)
{
    redlock_client *c = lock->client;
    if (!c->opts.on_event)
        return;
    redlock_event ev;
    event_init(&ev, lock, type, code, msg, automatic, elapsed_us);
    ev.attempt = attempt;
    ev.nodes_ok = r ? rl_tally_of(out, r->n).yes : 0;
    if (type == REDLOCK_EVENT_ACQUIRED || type == REDLOCK_EVENT_EXTENDED || type == REDLOCK_EVENT_AT_RISK)
        ev.validity_ms = (atomic_load(&lock->valid_until_us) - rl_now_us()) / 1000;
    if (type == REDLOCK_EVENT_ACQUIRED)
        ev.fencing_token = atomic_load(&lock->token);
    /* Metrics (docs/observability.md): attempts per call, held time, round-trip times. */
    if (type == REDLOCK_EVENT_ACQUIRED || type == REDLOCK_EVENT_ACQUIRE_FAILED)
        lock->attempts = attempt;
    if ((type == REDLOCK_EVENT_RELEASED || type == REDLOCK_EVENT_RELEASE_FAILED || type == REDLOCK_EVENT_LOST) &&
        lock->acquired_us && lock->held_told_us != lock->acquired_us) {
        ev.held_us = rl_now_us() - lock->acquired_us;
        lock->held_told_us = lock->acquired_us;
    }
    int64_t rtts[REDLOCK_MAX_NODES];
    if (r) {
        for (size_t i = 0; i < r->n; i++) {
            rl_outcome o = out[i];
            rtts[i] = o == RL_YES || o == RL_NO || o == RL_ERR_SERVER || o == RL_ERR_AUTH || o == RL_ERR_PERM ? r->rtt_us[i] : -1;
        }
        ev.node_rtts_us = rtts;
    }
    c->opts.on_event(&ev, c->opts.on_event_userdata);
}

void rl_emit(redlock_lock *lock, int type, int code, const char *msg, const rl_round *r, int automatic,
                 uint32_t attempt, int64_t elapsed_us)
{
    rl_emit_out(lock, type, code, msg, r, r ? r->out : NULL, automatic, attempt, elapsed_us);
}

void rl_emit_acquire_done(redlock_lock *lock, int rc, int64_t start_us)
{
    redlock_client *c = lock->client;
    if (!c->opts.on_event)
        return;
    redlock_event ev;
    event_init(&ev, lock, REDLOCK_EVENT_ACQUIRE_DONE, rc, rc ? rl_errmsg(lock) : NULL, 0, rl_now_us() - start_us);
    ev.attempt = lock->attempts;
    c->opts.on_event(&ev, c->opts.on_event_userdata);
}

/* "N of M nodes confirmed, Q needed; node: what" for each node, from the
 * lock's report of its last round (mutex held). */
void rl_describe_report(char *buf, size_t size, const redlock_lock *lock)
{
    const redlock_client *c = lock->client;
    int yes = 0;
    for (size_t i = 0; i < c->n; i++)
        yes += lock->report[i].outcome == REDLOCK_NODE_OK;
    rl_append(buf, size, "%d of %zu nodes confirmed, %d needed", yes, c->n, c->quorum);
    static const char *const words[] = {
        [REDLOCK_NODE_NONE] = "not asked", [REDLOCK_NODE_OK] = "OK", [REDLOCK_NODE_REFUSED] = "refused",
        [REDLOCK_NODE_ERROR] = "error", [REDLOCK_NODE_TIMEOUT] = "timeout", [REDLOCK_NODE_DOWN] = "down",
        [REDLOCK_NODE_NOT_WAITED] = "not waited for",
    };
    for (size_t i = 0; i < c->n; i++) {
        const rl_report *rep = &lock->report[i];
        const char *w = rep->outcome < sizeof words / sizeof words[0] ? words[rep->outcome] : "?";
        if (rep->outcome == REDLOCK_NODE_OK)
            rl_append(buf, size, "; %s: OK in %.1f ms", c->nodes[i].ep.display, (double)rep->rtt_us / 1000.0);
        else
            rl_append(buf, size, "; %s: %s%s%s", c->nodes[i].ep.display, w, rep->msg[0] ? ": " : "", rep->msg);
    }
}

int redlock_lock_node_result(const redlock_lock *lock, size_t i, int *code_out, int64_t *rtt_us_out, char *msgbuf,
                             size_t msgbuf_size)
{
    if (!lock || i >= lock->client->n)
        return REDLOCK_EINVAL;
    redlock_lock *l = (redlock_lock *)lock;  /* the mutex only */
    pthread_mutex_lock(&l->mu);
    const rl_report *rep = &l->report[i];
    int outcome = rep->outcome;
    if (code_out)
        *code_out = rep->code;
    if (rtt_us_out)
        *rtt_us_out = rep->rtt_us;
    if (msgbuf && msgbuf_size)
        rl_fmt(msgbuf, msgbuf_size, "%s", rep->msg);
    pthread_mutex_unlock(&l->mu);
    return outcome;
}

void rl_emit_woken(redlock_lock *lock, uint32_t attempt, size_t node)
{
    redlock_client *c = lock->client;
    if (!c->opts.on_event)
        return;
    redlock_event ev;
    event_init(&ev, lock, REDLOCK_EVENT_WOKEN, 0, NULL, 0, 0);
    ev.attempt = attempt;
    ev.node = node;
    c->opts.on_event(&ev, c->opts.on_event_userdata);
}
