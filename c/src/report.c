/* SPDX-License-Identifier: BSD-3-Clause */
/* report.c: what a round tells the caller: the lock handle's error detail,
 * the failure detail naming each node, the per-node report of a lock's last
 * round, and the metrics hook. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

int rl_lock_err(redlock_lock *lock, int code, const char *fmt, ...)
{
    va_list ap;
    lock->errcode = code;
    va_start(ap, fmt);
    vsnprintf(lock->errmsg, sizeof lock->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

int rl_lock_ok(redlock_lock *lock)
{
    lock->errcode = 0;
    lock->errmsg[0] = '\0';
    return 0;
}

static const char *outcome_word(rl_outcome o)
{
    switch (o) {
    case RL_YES: return "OK";
    case RL_NO: return "refused";
    case RL_ERR_SERVER: return "server error";
    case RL_ERR_AUTH: return "auth error";
    case RL_ERR_IO: return "I/O error";
    case RL_ERR_TIMEOUT: return "timeout";
    case RL_ERR_DOWN: return "down";
    case RL_ERR_TLS: return "TLS error";
    case RL_UNSENT: return "skipped";
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
static int node_outcome(const rl_round *r, size_t i, int *code)
{
    *code = 0;
    switch (r->out[i]) {
    case RL_YES: return REDLOCK_NODE_OK;
    case RL_NO: return REDLOCK_NODE_REFUSED;
    case RL_ERR_SERVER: *code = REDLOCK_ESERVER; return REDLOCK_NODE_ERROR;
    case RL_ERR_AUTH: *code = REDLOCK_EAUTH; return REDLOCK_NODE_ERROR;
    case RL_ERR_IO: *code = REDLOCK_EIO; return REDLOCK_NODE_ERROR;
    case RL_ERR_TLS: *code = REDLOCK_ETLS; return REDLOCK_NODE_ERROR;
    case RL_ERR_TIMEOUT: *code = REDLOCK_ETIMEDOUT; return REDLOCK_NODE_TIMEOUT;
    case RL_ERR_DOWN: *code = REDLOCK_EIO; return REDLOCK_NODE_DOWN;
    case RL_UNSENT: return r->sent[i] ? REDLOCK_NODE_NOT_WAITED : REDLOCK_NODE_NONE;
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

/* Keeps the round as the lock's last (mutex held), and tells on_event about
 * each node that failed in it. */
void rl_record_round(redlock_lock *lock, const rl_round *r, int automatic)
{
    redlock_client *c = lock->client;
    for (size_t i = 0; i < r->n; i++) {
        rl_report *rep = &lock->report[i];
        rep->outcome = (unsigned char)node_outcome(r, i, &rep->code);
        rep->unreachable = r->unreachable[i];
        rep->rtt_us = r->out[i] == RL_UNSENT || r->out[i] == RL_ERR_DOWN ? 0 : r->rtt_us[i];
        memcpy(rep->msg, r->msg[i], sizeof rep->msg);
        if (rep->code)
            atomic_store(&c->trouble_us, rl_now_us());
    }
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

void rl_emit(redlock_lock *lock, int type, int code, const char *msg, const rl_round *r, int automatic,
                 uint32_t attempt, int64_t elapsed_us)
{
    redlock_client *c = lock->client;
    if (!c->opts.on_event)
        return;
    redlock_event ev;
    event_init(&ev, lock, type, code, msg, automatic, elapsed_us);
    ev.attempt = attempt;
    ev.nodes_ok = r ? rl_tally_of(r->out, r->n).yes : 0;
    if (type == REDLOCK_EVENT_ACQUIRED || type == REDLOCK_EVENT_EXTENDED)
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
            rl_outcome o = r->out[i];
            rtts[i] = o == RL_YES || o == RL_NO || o == RL_ERR_SERVER || o == RL_ERR_AUTH ? r->rtt_us[i] : -1;
        }
        ev.node_rtts_us = rtts;
    }
    c->opts.on_event(&ev, c->opts.on_event_userdata);
}

void rl_emit_acquire_done(redlock_lock *lock, int rc, int64_t start_us)
{
    redlock_client *c = lock->client;
    if (!c->opts.on_event)
        return;
    redlock_event ev;
    event_init(&ev, lock, REDLOCK_EVENT_ACQUIRE_DONE, rc, rc ? lock->errmsg : NULL, 0, rl_now_us() - start_us);
    ev.attempt = lock->attempts;
    c->opts.on_event(&ev, c->opts.on_event_userdata);
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
