/* SPDX-License-Identifier: BSD-3-Clause */
/* fifo.c: what a connection owes. Every command handed to a connection
 * gets a request at the tail of its FIFO, and replies are matched to the
 * head, in order (RESP has no other way to tell them apart). A round that
 * returns without a node's reply leaves its request behind as an orphan:
 * the reply, when it comes, is read and dropped, unless the orphan carries
 * a command to send on a condition (a late NOSCRIPT, a refusal to a waiter
 * whose acquisition won elsewhere, a grant to an attempt lost to
 * refusals). Below conn.c: nothing here writes, reads or closes. */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "engine.h"

rl_req *rl_fifo_at(rl_conn *c, uint32_t k)
{
    return &c->q[(c->head + k) % c->cap];
}

rl_req *rl_fifo_push(rl_conn *c)
{
    if (c->len == c->cap) {
        if (c->cap >= RL_PIPE_MAX)
            return NULL;
        uint32_t cap = c->cap ? c->cap * 2 : 8;
        rl_req *q = malloc(sizeof *q * cap);
        if (!q)
            return NULL;
        for (uint32_t k = 0; k < c->len; k++)
            q[k] = *rl_fifo_at(c, k);
        free(c->q);
        c->q = q;
        c->cap = cap;
        c->head = 0;
    }
    rl_req *e = rl_fifo_at(c, c->len++);
    memset(e, 0, sizeof *e);
    return e;
}

void rl_fifo_pop(rl_conn *c)
{
    rl_req *e = rl_fifo_at(c, 0);
    if (e->resend && e->resend_if != RL_IF_NOSCRIPT)
        c->late_cmds--;
    free(e->resend);
    redisFreeCommand(e->redirect);
    c->head = (c->head + 1) % c->cap;
    c->len--;
    c->seq0++;
}

rl_req *rl_fifo_find(rl_conn *c, uint64_t seq)
{
    return seq >= c->seq0 && seq - c->seq0 < c->len ? rl_fifo_at(c, (uint32_t)(seq - c->seq0)) : NULL;
}

/* Queues a command: its bytes into the context's buffer, its request into
 * the FIFO. NULL when the FIFO is full or out of memory. */
rl_req *rl_fifo_enqueue(rl_conn *c, const char *buf, size_t len, int64_t now)
{
    rl_req *e = rl_fifo_push(c);
    if (!e)
        return NULL;
    if (redisAppendFormattedCommand(c->ctx, buf, len) != REDIS_OK) {
        c->len--;  /* the entry just pushed: nothing was queued */
        return NULL;
    }
    e->kind = RL_REQ_CMD;
    e->sent_us = now;
    c->wpending = !c->gated || c->gate_bytes > 0;   /* behind the gate, it waits for the probe */
    return e;
}

void rl_fifo_asking(rl_conn *c, int64_t now)
{
    static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
    rl_fifo_enqueue(c, asking_cmd, sizeof asking_cmd - 1, now);
}

/* The reply to the front request, whose round returned without it. */
void rl_fifo_late_reply(rl_conn *c, const redisReply *rep, int64_t now)
{
    /* NOSCRIPT means it never ran; a refusal to an acquisition that won
     * elsewhere left the waiter registered here, and it is not waiting any
     * more; a grant to one lost to refusals holds a key nobody will use. */
    rl_req *e = rl_fifo_at(c, 0);
    int err = rep->type == REDIS_REPLY_ERROR;
    char *resend = e->resend;
    size_t resend_len = e->resend_len;
    unsigned char cmd = e->resend_cmd, via = e->resend_via, cond = e->resend_if, asked = e->asked;
    int first = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
                rep->element[0]->type == REDIS_REPLY_INTEGER ? (int)rep->element[0]->integer : -1;
    /* A grant: SET's OK, the acquire script's {1, ...}, or a bare 1 (the
     * read-write lock's read scripts answer a grant so). */
    int granted = first == 1 || (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1) ||
                  (rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0);
    if (resend && cond != RL_IF_NOSCRIPT)
        c->late_cmds--;
    e->resend = NULL;
    rl_fifo_pop(c);
    int go = resend && (cond == RL_IF_REFUSED ? first == 0
                        : cond == RL_IF_GRANTED ? granted
                        : err && strncmp(rep->str, "NOSCRIPT", 8) == 0);
    if (go && asked)
        rl_fifo_asking(c, now);
    rl_req *n = go ? rl_fifo_enqueue(c, resend, resend_len, now) : NULL;
    if (n) {
        n->asked = asked;
        n->cmd = cmd;
        n->via = via;
        if (via == RL_VIA_EVAL)
            c->scripts_sent |= 1u << cmd;
    }
    free(resend);
}

/* Prepares cmd (for r's lock) to be sent if the late reply to e meets cond. */
static void late_command(rl_conn *c, rl_req *e, rl_round *r, rl_cmd cmd, int via, int cond)
{
    rl_cmd was = r->cmd;
    r->cmd = cmd;
    long long len = rl_proto_format_node(&e->resend, r, via, c->tagged);
    r->cmd = was;
    e->resend_len = len < 0 ? 0 : (size_t)len;
    if (len < 0)
        e->resend = NULL;
    e->resend_cmd = (unsigned char)cmd;
    e->resend_via = (unsigned char)via;
    e->resend_if = (unsigned char)cond;
    if (e->resend && cond != RL_IF_NOSCRIPT)
        c->late_cmds++;
}

/* 1 if every node that answered the round's acquisition refused it: lost
 * to another owner, with no error that could hide a SET that ran (acquire.c
 * cleans up after those without waiting for anything). */
static int refused_only(const rl_round *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->out[i] != RL_NO && r->out[i] != RL_PENDING && r->out[i] != RL_UNSENT)
            return 0;
    return 1;
}

/* 1 if a majority granted the round's acquisition. */
static int won(const rl_round *r)
{
    int yes = 0;
    for (size_t i = 0; i < r->n; i++)
        yes += r->out[i] == RL_YES;
    return yes >= r->quorum;
}

void rl_conn_orphan(redlock_client *cl, size_t i, rl_round *r)
{
    if (r->out[i] != RL_PENDING)
        return;
    rl_conn *c = rl_nodeat(cl, r->shard[i])->conn;   /* node i's, or its cluster shard's */
    rl_req *e = c ? rl_fifo_find(c, r->seq[i]) : NULL;
    if (e && e->round == r) {
        e->round = NULL;
        e->resend_cmd = (unsigned char)r->cmd;
        e->resend_via = RL_VIA_EVAL;
        e->resend_if = RL_IF_NOSCRIPT;
        if (e->via == RL_VIA_EVALSHA && rl_proto_resend_late(r->cmd)) {
            late_command(c, e, r, r->cmd, RL_VIA_EVAL, RL_IF_NOSCRIPT);
        } else if (rl_cmd_acquires(r->cmd) && r->member[0] && won(r)) {
            /* If this node refused, the waiter is registered here: have it
             * leave once the refusal arrives (scripts.c). */
            late_command(c, e, r, r->cmd == RL_CMD_MULTI_ACQUIRE ? RL_CMD_MULTI_LEAVE : RL_CMD_LEAVE,
                         r->via_fcall ? RL_VIA_FCALL : RL_VIA_EVAL, RL_IF_REFUSED);
        } else if (rl_cmd_acquires(r->cmd) && refused_only(r)) {
            /* Lost to refusals: if this node granted it after all, release
             * it there when the grant arrives, waking nobody (acquire.c
             * leaves such nodes out of its clean-up). A reader's is its own.
             * A mutex's leaves the waiter's registration in place, as
             * acquire.c's clean-up does: in fair mode it keeps the free
             * key for the waiter (acquire.c's keeps_place). */
            int wake = r->wake;
            const char *member = r->member;
            r->wake = 0;
            rl_cmd rel = r->cmd == RL_CMD_RW_ACQUIRE && strchr(r->mode, 'R') ? RL_CMD_RW_RELEASE
                         : r->cmd == RL_CMD_SEM_ACQUIRE ? RL_CMD_SEM_RELEASE
                         : r->cmd == RL_CMD_MULTI_ACQUIRE ? RL_CMD_MULTI_RELEASE : RL_CMD_RELEASE;
            if (rel == RL_CMD_RELEASE)
                r->member = "";
            late_command(c, e, r, rel, r->via_fcall ? RL_VIA_FCALL : RL_VIA_EVAL, RL_IF_GRANTED);
            r->wake = wake;
            r->member = member;
        }
    }
    r->out[i] = RL_UNSENT;
    r->sent[i] = 1;
    rl_fmt(r->msg[i], RL_NODE_MSG_MAX, r->no_wait ? "sent" : "not waited for (decided without it)");
}
