/* SPDX-License-Identifier: BSD-3-Clause */
/* conn_state.c: a connection's state and health, apart from its I/O
 * (conn.c): how a round is told a node's outcome, a node's backoff, the
 * one place where a connection changes state (rl_conn_transition, which
 * fails everything it still owed when it closes), what a poll should wait
 * for, and whether a node is calm, has stalled, or closed an idle
 * connection. conn.c calls into this file, never the other way. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/ssl.h>

#include "engine.h"

/* ---- rounds ---- */

void rl_conn_finish(rl_round *r, size_t i, rl_outcome out, const char *msg, int64_t now)
{
    r->out[i] = out;
    r->rtt_us[i] = now - r->start_us;
    if (msg)
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%s", msg);
    /* A follower waits on its condition variable until its round is decided. */
    if (r->following && rl_round_decided(r))
        pthread_cond_signal(&r->cv);
    /* A check's reply may decide the acquisition it follows (epoch.c). */
    if (r->cmd == RL_CMD_EPOCH && r->partner && r->partner->following && rl_round_decided(r->partner))
        pthread_cond_signal(&r->partner->cv);
}

/* why: the failure, told to the rounds that skip the node meanwhile;
 * unreachable: it was a connect that failed. */
void rl_conn_backoff(rl_node *node, int64_t now, const char *why, int unreachable)
{
    node->backoff_ms = rl_policy_backoff_next_ms(node->backoff_ms);
    node->retry_after_us = now + (int64_t)node->backoff_ms * 1000;
    rl_fmt(node->down_why, sizeof node->down_why, "%s", why);
    node->down_unreachable = unreachable;
}

/* ---- states ---- */

/* Closing a socket with unread data sends RST instead of FIN, and a server
 * that gets RST may drop commands it has not run yet, such as the release
 * just written. Drop what has arrived first: whatever arrives later answers
 * a command the server has already run. */
static void close_socket(rl_conn *c)
{
    if (c->ctx && c->ctx->fd >= 0 && c->state == RL_CONN_READY && c->pid == rl_pid()) {
        char sink[4096];
        while (recv(c->ctx->fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
    }
    redisFree(c->ctx);   /* frees c->ssl too once handed over */
    c->ctx = NULL;
    c->ssl = NULL;
}

void rl_conn_transition(redlock_client *cl, size_t i, rl_conn_state to, rl_outcome fail, const char *why)
{
    rl_conn *c = rl_nodeat(cl, i)->conn;
    if (to != RL_CONN_CLOSED) {
        c->state = to;
        return;
    }
    int64_t now = rl_now_us();
    /* A connect that failed: the node could not be reached (a TLS failure
     * means something answered). */
    int unreachable = c->state == RL_CONN_CONNECTING && fail != RL_ERR_TLS;
    /* Everything it owed fails: the rounds that still wait learn why (a
     * shard connection's rounds, for the node it serves: route.c). */
    size_t L = rl_logical(cl, i);
    while (c->len) {
        rl_req *e = rl_fifo_at(c, 0);
        if (e->round && e->round->out[L] == RL_PENDING && e->round->shard[L] == i) {
            e->round->unreachable[L] = (unsigned char)unreachable;
            rl_conn_finish(e->round, L, fail, why, now);
        }
        rl_fifo_pop(c);
    }
    close_socket(c);
    c->state = RL_CONN_CLOSED;
    c->wpending = 0;
    c->gated = 0;
    c->gate_bytes = 0;
    c->scripts_sent = 0;
}

/* A forked child shares the parent's sockets: it drops its copies without
 * touching them, or the rounds of the parent's threads they point to. */
static void forget(rl_conn *c)
{
    while (c->len)
        rl_fifo_pop(c);
    redisFree(c->ctx);   /* closes this process's copy of the socket; sends nothing */
    c->ctx = NULL;
    c->ssl = NULL;
    c->state = RL_CONN_CLOSED;
    c->wpending = 0;
    c->gated = 0;
    c->gate_bytes = 0;
    c->scripts_sent = 0;
}

void rl_conn_free(redlock_client *cl, size_t i)
{
    rl_conn *c = rl_nodeat(cl, i)->conn;
    if (!c)
        return;
    if (c->pid != rl_pid())
        forget(c);
    else
        rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_IO, "client closed");
    free(c->q);
    free(c);
    rl_nodeat(cl, i)->conn = NULL;
}

short rl_conn_poll_events(const redlock_client *cl, size_t i)
{
    const rl_conn *c = rl_nodeat(cl, i)->conn;
    if (!c)
        return 0;
    switch (c->state) {
    case RL_CONN_CONNECTING: return POLLOUT;
    case RL_CONN_HANDSHAKE: return c->tls_want;
    case RL_CONN_READY: return (short)(POLLIN | (c->wpending ? POLLOUT : 0));
    default: return 0;
    }
}

int rl_conn_needs_driving(const redlock_client *cl, size_t i)
{
    const rl_conn *c = rl_nodeat(cl, i)->conn;
    return c && (c->state == RL_CONN_CONNECTING || c->state == RL_CONN_HANDSHAKE ||
                 (c->state == RL_CONN_READY && (c->wpending || c->gated)));   /* gated: the probe's reply opens it */
}

int rl_round_gated(const redlock_client *cl, const rl_round *r)
{
    if (r->no_wait)
        return 0;
    for (size_t i = 0; i < r->n; i++) {
        /* A node that timed out lately is not waited for here either: a
         * paused minority still costs a round nothing. */
        const rl_conn *c = r->out[i] == RL_PENDING && !rl_nodeat(cl, i)->suspect ? rl_nodeat(cl, r->shard[i])->conn : NULL;
        if (c && c->gated && c->state != RL_CONN_CLOSED)
            return 1;
    }
    return 0;
}

uint32_t rl_conn_late_cmds(const redlock_client *cl, size_t i)
{
    const rl_conn *c = rl_nodeat(cl, i)->conn;
    return c && c->state != RL_CONN_CLOSED ? c->late_cmds : 0;
}

/* 1 if bytes wait to be read: replies that have come, only not read yet by
 * a busy leader (or by nobody: a round decided at quorum leaves the slower
 * nodes' replies in the socket until the next round), prove nothing has
 * stalled. */
static int reply_waiting(rl_conn *c)
{
    char b;
    if (c->ssl && SSL_has_pending(c->ssl))
        return 1;
    if (c->ctx->reader && c->ctx->reader->len > c->ctx->reader->pos)
        return 1;
    return recv(c->ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

int rl_conn_calm(const redlock_client *cl, size_t i, int64_t now)
{
    const rl_node *node = rl_nodeat(cl, i);
    const rl_conn *c = node->conn;
    if (node->suspect || node->retry_after_us > now)
        return 0;
    /* Not connected yet (a new client) is not trouble; a connection that
     * owes an old reply is, and so is one that was closed: a stopped or
     * paused node's connection is dropped once it owes replies for too
     * long (rl_conn_check_stall), and an empty FIFO must not read as calm. */
    if (!c)
        return 1;
    if (c->state == RL_CONN_CLOSED)
        return 0;
    if (!c->len || now - rl_fifo_at((rl_conn *)c, 0)->sent_us < (int64_t)cl->opts.node_timeout_ms * 1000)
        return 1;
    /* An old reply owed: trouble only if it has not come. A holder that
     * released long after a round decided at quorum still owes the slower
     * nodes' replies of that round, unread in the socket: they prove the
     * node answers, and a release must not wake nobody for them. */
    return c->state == RL_CONN_READY && reply_waiting((rl_conn *)c);
}

uint32_t rl_conn_owed(const redlock_client *cl, size_t i)
{
    const rl_conn *c = rl_nodeat(cl, i)->conn;
    return c && c->state != RL_CONN_CLOSED ? c->len : 0;
}

void rl_conn_check_stall(redlock_client *cl, size_t i, int64_t now)
{
    rl_node *node = rl_nodeat(cl, i);
    rl_conn *c = node->conn;
    char msg[RL_NODE_MSG_MAX];
    if (!c || c->state == RL_CONN_CLOSED)
        return;
    if (c->state != RL_CONN_READY) {
        int64_t limit = ((int64_t)cl->opts.connect_timeout_ms + cl->opts.node_timeout_ms) * 1000;
        if (now - c->opened_us > limit) {
            /* Not even accepting connections: back off. */
            rl_fmt(msg, sizeof msg, "%s not finished within %lld ms",
                   c->state == RL_CONN_HANDSHAKE ? "TLS handshake" : "connect", (long long)(limit / 1000));
            rl_conn_backoff(node, now, msg, c->state == RL_CONN_CONNECTING);
            rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_IO, msg);
        }
        return;
    }
    if (!c->len)
        return;
    /* Silent since the oldest owed request was sent, or since its last
     * reply: a pipelined connection whose node stops (SIGSTOP, a
     * partition) had answered the requests before that one after it was
     * sent, and must not look alive for ever for that. */
    int64_t oldest = rl_fifo_at(c, 0)->sent_us;
    int64_t quiet = c->last_reply_us > oldest ? c->last_reply_us : oldest;
    if (now - quiet > rl_policy_stall_us(&cl->opts) && !reply_waiting(c)) {
        /* A partition can leave a connection that never answers again, even
         * once the network heals: close it (FIN: the node still runs what
         * it was sent) and let the next round open a new one. */
        rl_fmt(msg, sizeof msg, "no reply for %lld ms: connection dropped", (long long)((now - quiet) / 1000));
        rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_TIMEOUT, msg);
    }
}

/* 1 if an idle connection was closed by the node (restart, idle timeout):
 * one recv without waiting. Then the round opens a new one instead of
 * losing its command on the dead one. */
int rl_conn_closed_while_idle(rl_conn *c)
{
    char b;
    ssize_t n = recv(c->ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}
