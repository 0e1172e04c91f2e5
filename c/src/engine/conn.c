/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.c: a node's one connection, shared by every lock of the client. Its
 * states (CLOSED, CONNECTING, HANDSHAKE, READY) change only in
 * rl_conn_transition. Every command handed to it goes into its FIFO of
 * owed replies, is written whole, and is answered in order: by its round
 * while that waits, else read and dropped by whoever drives next. A
 * connection that fails is closed at once and everything it still owed
 * counts as failed. So no command is ever half-written, or left in a buffer
 * nothing drives, and no reply is ever taken for a later command's. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <hiredis/sds.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "engine.h"

/* ---- opening ---- */

static rl_req *push_setup(rl_conn *c, int kind, int64_t now)
{
    rl_req *e = rl_fifo_push(c);
    if (e) {
        e->kind = (unsigned char)kind;
        e->sent_us = now;
    }
    return e;
}

/* The probe: the release this client would send, on a key no lock uses,
 * with a value nobody holds (so it only reads). It runs before any of the
 * client's commands on a new connection, and nothing goes until it has
 * answered (the gate, flush): a node that refuses the client (no password,
 * a wrong one, an ACL without EVALSHA or FCALL, the command renamed or
 * disabled) is found out before a plain SET takes a lock there that could
 * not then be released or extended. Its few arguments also get through to
 * a server that wants a password, which closes the connection of an
 * unauthenticated client that sends more than 10, as a lock's scripts do:
 * its NOAUTH says why. A refusal to touch the probe's key says nothing of
 * the lock's keys (an ACL may allow only those), so it is let through. */
static int append_probe(redlock_client *cl, redisContext *ctx)
{
    char key[REDLOCK_MAX_PREFIX_LEN + 32], wq[sizeof key + 3], wl[sizeof key + 3];
    rl_fmt(key, sizeof key, "%.*s{redlock:probe}", (int)cl->prefix_len, cl->prefix ? cl->prefix : "");
    rl_fmt(wq, sizeof wq, "%s:wq", key);
    rl_fmt(wl, sizeof wl, "%s:wl", key);
    if (cl->opts.flags & REDLOCK_OPT_FUNCTIONS)
        return redisAppendCommand(ctx, "FCALL redlock_release 3 %s %s %s redlock-probe 0 %s", key, wq, wl, "");
    return redisAppendCommand(ctx, "EVALSHA %s 3 %s %s %s redlock-probe 0 %s", rl_sha_release, key, wq, wl, "");
}

/* 1 if the probe's reply lets the client's commands go; else 0 with the
 * node's outcome and message. */
static int probe_passed(const redisReply *rep, rl_outcome *out, char *msg, size_t size)
{
    if (rep->type != REDIS_REPLY_ERROR)
        return 1;
    /* NOSCRIPT: EVALSHA is allowed, the script goes as EVAL when needed;
     * MOVED, ASK and the like: the ACL had passed it (it is checked first). */
    char part[RL_NODE_MSG_MAX];
    rl_outcome o = rl_proto_error(rep->str, part, sizeof part);
    if (o == RL_ERR_SERVER || (o == RL_ERR_PERM && strstr(rep->str, "permissions to access") != NULL))
        return 1;
    *out = o;
    rl_fmt(msg, size, "%s", part);
    return 0;
}

/* CLOSED -> CONNECTING, with AUTH, SELECT and the probe queued first, and
 * the gate shut behind them. 0, or -1 with the reason in msg. */
static int conn_open(redlock_client *cl, size_t i, int64_t now, char *msg, size_t msgsize)
{
    rl_node *node = rl_nodeat(cl, i);
    rl_conn *c = node->conn;
    if (rl_conn_socket(cl, i, c, now, msg, msgsize) != 0) {
        if (strcmp(msg, "out of memory") != 0)
            rl_conn_backoff(node, now, msg, 1);
        return -1;
    }
    int ok = 1;
    if (node->ep.password)
        ok = rl_conn_append_auth(node, c->ctx) == REDIS_OK && push_setup(c, RL_REQ_AUTH, now);
    if (ok && node->ep.db)
        ok = redisAppendCommand(c->ctx, "SELECT %d", node->ep.db) == REDIS_OK && push_setup(c, RL_REQ_SELECT, now);
    if (ok)
        ok = append_probe(cl, c->ctx) == REDIS_OK && push_setup(c, RL_REQ_PROBE, now);
    if (ok) {
        c->gated = 1;
        c->gate_bytes = sdslen(c->ctx->obuf);
    }
    if (!ok) {
        rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_IO, "out of memory");
        rl_fmt(msg, msgsize, "out of memory");
        return -1;
    }
    return 0;
}

/* ---- writing and reading ---- */

static void io_fail(redlock_client *cl, size_t i, const char *what)
{
    rl_conn *c = rl_nodeat(cl, i)->conn;
    char msg[RL_NODE_MSG_MAX];
    if (c->ssl && !c->guard.why && !rl_tls_reason(NULL) && !c->last_reply_us) {
        /* A server that rejects the client after the handshake (no client
         * certificate, TLS 1.3) sends an alert and resets the connection;
         * the alert may still wait to be read, and it says why. */
        char sink[256];
        SSL_read(c->ssl, sink, sizeof sink);
    }
    if (c->guard.why) {
        rl_fmt(msg, sizeof msg, "protocol: %s", c->guard.why);
    } else if (c->ssl && rl_tls_reason(NULL)) {
        /* hiredis reports a failed SSL_read/SSL_write without the reason,
         * e.g. the alert of a server that refused our client certificate. */
        rl_tls_describe(c->ssl, SSL_ERROR_SSL, what, NULL, msg, sizeof msg);
        rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_TLS, msg);
        return;
    } else {
        rl_fmt(msg, sizeof msg, "%s: %s", what, c->ctx->errstr[0] ? c->ctx->errstr : "connection error");
        if (!c->last_reply_us && !c->ssl && !rl_nodeat(cl, i)->ep.path && strcmp(what, "protocol") != 0)
            rl_append(msg, sizeof msg, " (closed before any reply; a TLS port needs rediss://)");
    }
    rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_IO, msg);
}

/* Writes what is buffered before the gate (the setup commands and the
 * probe) and holds back the rest: hiredis writes its whole buffer, so it
 * is given only the part before the gate. */
static int write_gated(redisContext *ctx, rl_conn *c, int *done)
{
    sds all = ctx->obuf;
    size_t total = sdslen(all), g = c->gate_bytes < total ? c->gate_bytes : total;
    sds head = sdsnewlen(all, g), rest = sdsnewlen(all + g, total - g);
    if (!head || !rest) {
        sdsfree(head);
        sdsfree(rest);
        return REDIS_ERR;
    }
    ctx->obuf = head;
    sdsfree(all);
    int rc = redisBufferWrite(ctx, done);
    c->gate_bytes = sdslen(ctx->obuf);
    sds joined = sdscatsds(ctx->obuf, rest);
    sdsfree(rest);
    if (!joined)
        return REDIS_ERR;
    ctx->obuf = joined;
    *done = c->gate_bytes == 0;
    return rc;
}

/* Writes what is buffered, as far as the socket takes it: 0, or -1 once
 * the connection has been closed. */
static int flush(redlock_client *cl, size_t i)
{
    rl_conn *c = rl_nodeat(cl, i)->conn;
    if (c->state != RL_CONN_READY || !c->wpending)
        return 0;
    int done = 0;
    if (c->ssl)
        ERR_clear_error();
    if ((c->gated ? write_gated(c->ctx, c, &done) : redisBufferWrite(c->ctx, &done)) == REDIS_ERR) {
        io_fail(cl, i, "write");
        return -1;
    }
    c->wpending = !done;
    return 0;
}

static int submit_to(redlock_client *cl, size_t L, size_t j, rl_round *r, int64_t now, int ask);
static void wake_leader(redlock_client *cl);
static void late_redirect(redlock_client *cl, size_t j, rl_req *e, const redisReply *rep, int64_t now);
#define RL_HOPS_MAX 5   /* redirects followed per node per round */

/* A NOSCRIPT to node i's EVALSHA (the script cache was flushed, or the
 * server restarted): the body goes once, as EVAL, in the same round.
 * 1 if queued. */
static int resend_as_eval(rl_conn *c, int cluster, rl_round *r, size_t i, unsigned char cmd, unsigned char asked,
                          int64_t now)
{
    char *own = NULL;
    long long own_len = cluster ? rl_proto_format_node(&own, r, RL_VIA_EVAL, 1) : 0;
    if (!cluster && !r->fmt[RL_VIA_EVAL]) {
        long long len = rl_proto_format(&r->fmt[RL_VIA_EVAL], r, RL_VIA_EVAL);
        r->fmt_len[RL_VIA_EVAL] = len < 0 ? 0 : (size_t)len;
    }
    if (asked && own && own_len > 0)
        rl_fifo_asking(c, now);   /* on the importing shard of an ASK: again, or it answers MOVED */
    rl_req *n = own && own_len > 0 ? rl_fifo_enqueue(c, own, (size_t)own_len, now)
                : r->fmt[RL_VIA_EVAL] && !cluster
                ? rl_fifo_enqueue(c, r->fmt[RL_VIA_EVAL], r->fmt_len[RL_VIA_EVAL], now) : NULL;
    redisFreeCommand(own);
    if (!n)
        return 0;
    n->round = r;
    n->asked = asked;
    n->cmd = cmd;
    n->via = RL_VIA_EVAL;
    r->seq[i] = c->seq0 + c->len - 1;
    r->via[i] = RL_VIA_EVAL;
    r->resent[i] = 1;
    c->scripts_sent |= 1u << cmd;
    return 1;
}

/* What node i's reply said beyond its outcome, kept in the round. */
static void keep_parsed(rl_round *r, size_t i, const rl_parsed *p)
{
    r->counter[i] = p->counter;
    r->hint_ms[i] = p->hint_ms;
    r->marked[i] = (unsigned char)p->marked;
    r->sem_other[i] = p->sem_other;
    r->sem_nfree[i] = p->sem_nfree;
    r->sem_listed[i] = p->sem_listed;
    memcpy(r->sem_free[i], p->sem_free, sizeof p->sem_free);
}

/* The reply to the FIFO's front request. */
static void dispatch(redlock_client *cl, size_t i, redisReply *rep, int64_t now)
{
    rl_node *node = rl_nodeat(cl, i);
    rl_conn *c = node->conn;
    c->last_reply_us = now;
    /* Any answer proves the node is back. */
    node->suspect = 0;
    node->backoff_ms = 0;
    node->retry_after_us = 0;
    if (!c->len) {
        rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_IO, "a reply that no command asked for");
        return;
    }
    rl_req *e = rl_fifo_at(c, 0);
    int err = rep->type == REDIS_REPLY_ERROR;
    if (e->kind == RL_REQ_MAP) {
        rl_fifo_pop(c);
        rl_route_map_reply(cl, i, rep, now);
        return;
    }
    if (e->kind == RL_REQ_AUTH || e->kind == RL_REQ_SELECT) {
        int auth = e->kind == RL_REQ_AUTH;
        rl_fifo_pop(c);
        if (err) {
            char msg[RL_NODE_MSG_MAX], part[RL_NODE_MSG_MAX - 8];
            rl_outcome o = rl_proto_error(rep->str, part, sizeof part);
            rl_fmt(msg, sizeof msg, "%s: %s", auth ? "AUTH" : "SELECT", part);
            rl_conn_transition(cl, i, RL_CONN_CLOSED, auth ? RL_ERR_AUTH : o, msg);
        }
        return;
    }
    if (e->kind == RL_REQ_PROBE) {
        rl_outcome o;
        char msg[RL_NODE_MSG_MAX];
        rl_fifo_pop(c);
        if (!probe_passed(rep, &o, msg, sizeof msg)) {
            rl_conn_transition(cl, i, RL_CONN_CLOSED, o, msg);
            return;
        }
        c->gated = 0;   /* the gate opens: read_replies flushes what waited */
        c->gate_bytes = 0;
        c->wpending = sdslen(c->ctx->obuf) > 0;
        /* A follower whose round was decided meanwhile waits for its
         * command to be written (rl_round_gated): tell it to look again. */
        for (uint32_t k = 0; k < c->len; k++) {
            rl_round *w = rl_fifo_at(c, k)->round;
            if (w && w->following)
                pthread_cond_signal(&w->cv);
        }
        return;
    }
    rl_round *r = e->round;
    if (!r) {
        if (node->ep.cluster)
            late_redirect(cl, i, e, rep, now);
        else
            rl_fifo_late_reply(c, rep, now);
        return;
    }
    /* A shard connection answers for the node it serves. */
    size_t j = i;
    i = rl_logical(cl, j);
    size_t to;
    int ask;
    if (node->ep.cluster && r->hops[i] < RL_HOPS_MAX && rl_route_redirect(cl, j, rep, &to, &ask)) {
        /* MOVED (the map is corrected) or ASK (a slot migrating): the
         * command never ran here; it goes to the shard named. An EVAL that
         * never ran loaded no script here either. */
        if (e->via == RL_VIA_EVAL)
            c->scripts_sent &= ~(1u << e->cmd);
        rl_fifo_pop(c);
        r->hops[i]++;
        if (submit_to(cl, i, to, r, now, ask))
            wake_leader(cl);
        return;
    }
    rl_parsed p;
    unsigned char cmd = e->cmd, asked = e->asked;
    p.node = i;
    rl_proto_parse(r, e->via, rep, &p);
    if (r->batch && p.out == RL_YES)
        rl_proto_many_results(r, i, rep);
    rl_fifo_pop(c);
    if (p.out == RL_PENDING && !r->resent[i]) {
        /* Script cache flushed or server restarted: send the body once. */
        if (resend_as_eval(c, node->ep.cluster, r, i, cmd, asked, now))
            return;
        rl_fmt(p.msg, sizeof p.msg, "EVAL after NOSCRIPT could not be queued");
        p.out = RL_ERR_IO;
    } else if (p.out == RL_PENDING) {
        rl_fmt(p.msg, sizeof p.msg, "NOSCRIPT again after EVAL");
        p.out = RL_ERR_SERVER;
    }
    keep_parsed(r, i, &p);
    if (node->ep.cluster) {
        char shard[300];   /* who answered */
        rl_route_shard_name(cl, j, shard, sizeof shard);
        if (!p.msg[0])
            rl_fmt(p.msg, sizeof p.msg, "shard %s", shard);
        else
            rl_append(p.msg, sizeof p.msg, " (shard %s)", shard);
    }
    rl_conn_finish(r, i, p.out, p.msg, now);
}

static void read_replies(redlock_client *cl, size_t i, int64_t now)
{
    rl_conn *c = rl_nodeat(cl, i)->conn;
    for (;;) {
        if (c->ssl)
            ERR_clear_error();
        if (redisBufferRead(c->ctx) == REDIS_ERR) {
            io_fail(cl, i, "read");
            return;
        }
        if (rl_reply_check_buffer(c->ctx, &c->guard) != 0) {
            io_fail(cl, i, "read");
            return;
        }
        for (;;) {
            void *rep = NULL;
            if (redisGetReply(c->ctx, &rep) == REDIS_ERR) {
                io_fail(cl, i, "protocol");
                return;
            }
            if (!rep)
                break;
            dispatch(cl, i, rep, now);
            rl_reply_free(rep);
            if (c->state != RL_CONN_READY)
                return;
        }
        /* Decrypted bytes that OpenSSL holds are invisible to poll(). */
        if (!c->ssl || !SSL_has_pending(c->ssl))
            break;
    }
    flush(cl, i);   /* a NOSCRIPT answered with EVAL */
}

void rl_conn_events(redlock_client *cl, size_t i, short revents, int64_t now)
{
    rl_node *node = rl_nodeat(cl, i);
    rl_conn *c = node->conn;
    char msg[RL_NODE_MSG_MAX];
    if (c->state == RL_CONN_CONNECTING) {
        if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->ctx->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            rl_fmt(msg, sizeof msg, "connect: %s", strerror(err));
            rl_conn_backoff(node, now, msg, 1);
            rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_IO, msg);
            return;
        }
        if (!node->ep.tls) {
            rl_conn_transition(cl, i, RL_CONN_READY, RL_PENDING, NULL);
            flush(cl, i);
            return;
        }
        if (rl_conn_tls_begin(cl, i, c, msg, sizeof msg) != 0) {
            rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_TLS, msg);
            return;
        }
        rl_conn_transition(cl, i, RL_CONN_HANDSHAKE, RL_PENDING, NULL);
        revents = 0;
    }
    if (c->state == RL_CONN_HANDSHAKE) {
        int st = rl_conn_tls_step(cl, i, c, msg, sizeof msg);
        if (st < 0) {
            rl_conn_transition(cl, i, RL_CONN_CLOSED, RL_ERR_TLS, msg);
            return;
        }
        if (st > 0)
            return;
        rl_conn_transition(cl, i, RL_CONN_READY, RL_PENDING, NULL);
        revents = POLLOUT;   /* handshake done: send what is queued */
    }
    if (c->wpending && (revents & (POLLOUT | POLLERR | POLLHUP)) && flush(cl, i) != 0)
        return;
    if (revents & (POLLIN | POLLERR | POLLHUP))
        read_replies(cl, i, now);
}

/* Before a cluster node's command on c: the slot map asked for when due
 * (CLUSTER NODES, route.c), and ASKING for an ASK redirect. Their replies
 * are read by dispatch (the map) or dropped (ASKING: no round). */
static void cluster_extras(redlock_client *cl, size_t L, rl_conn *c, int ask, int64_t now)
{
    static const char nodes_cmd[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n";
    if (rl_route_refresh_due(cl, L, now)) {
        rl_req *m = rl_fifo_enqueue(c, nodes_cmd, sizeof nodes_cmd - 1, now);
        if (m)
            m->kind = RL_REQ_MAP;
    }
    if (ask)
        rl_fifo_asking(c, now);
}

/* A redirect read by a follower (no poll under way of its own) may open a
 * socket that the leader, in poll(), does not know of: wake it. A write to
 * the client's eventfd, as rl_io_wake_leader does (mux.c is above). */
static void wake_leader(redlock_client *cl)
{
    if (cl->io->polling) {
        uint64_t one = 1;
        ssize_t w = write(cl->io->wake_fd, &one, sizeof one);
        (void)w;
    }
}

/* A late reply on cluster connection j to e, whose round returned (a
 * clean-up release, a leave, an acquisition decided without this node): a
 * MOVED or ASK sends its command on to the shard named, with what it was
 * to send on a condition (fifo.c), so that a release is not lost to a
 * resharding; anything else is a late reply as on any node. */
static void late_redirect(redlock_client *cl, size_t j, rl_req *e, const redisReply *rep, int64_t now)
{
    rl_conn *c = rl_nodeat(cl, j)->conn;
    size_t to;
    int ask;
    if (!e->redirect || e->hops >= RL_HOPS_MAX || !rl_route_redirect(cl, j, rep, &to, &ask)) {
        rl_fifo_late_reply(c, rep, now);
        return;
    }
    rl_req was = *e;
    if (e->via == RL_VIA_EVAL)
        c->scripts_sent &= ~(1u << e->cmd);   /* it never ran here: no script loaded */
    if (e->resend && e->resend_if != RL_IF_NOSCRIPT)
        c->late_cmds--;
    e->resend = NULL;
    e->redirect = NULL;
    rl_fifo_pop(c);
    rl_node *node = rl_nodeat(cl, to);
    char msg[RL_NODE_MSG_MAX];
    if (!node->conn && !(node->conn = calloc(1, sizeof *node->conn)))
        goto drop;
    node->conn->tagged = 1;
    rl_conn *d = node->conn;
    if (d->state == RL_CONN_CLOSED && (node->retry_after_us > now || conn_open(cl, to, now, msg, sizeof msg) != 0))
        goto drop;
    if (d->len >= RL_PIPE_MAX / 2)
        goto drop;
    cluster_extras(cl, rl_logical(cl, to), d, ask, now);
    rl_req *n = rl_fifo_enqueue(d, was.redirect, was.redirect_len, now);
    if (!n)
        goto drop;
    n->round = NULL;
    n->asked = (unsigned char)ask;
    n->cmd = was.cmd;
    n->via = was.via;
    n->redirect = was.redirect;
    n->redirect_len = was.redirect_len;
    n->hops = (unsigned char)(was.hops + 1);
    n->resend = was.resend;
    n->resend_len = was.resend_len;
    n->resend_cmd = was.resend_cmd;
    n->resend_via = was.resend_via;
    n->resend_if = was.resend_if;
    if (n->resend && n->resend_if != RL_IF_NOSCRIPT)
        d->late_cmds++;
    flush(cl, to);
    wake_leader(cl);
    return;
drop:
    free(was.resend);
    redisFreeCommand(was.redirect);
}

/* Hands r's command for node L to connection j (L itself, or one of its
 * cluster's shards: route.c); ask: an ASK redirect, ASKING goes first. */
/* Node j's connection, for node L's request in r: checked, and opened if
 * it was closed (*opened then). NULL, the round told why, when it cannot
 * carry the request now. *fresh: it was not ready before this call. */
static rl_conn *usable_conn(redlock_client *cl, size_t L, size_t j, rl_round *r, int64_t now, int *fresh,
                            int *opened)
{
    rl_node *node = rl_nodeat(cl, j);
    char msg[RL_NODE_MSG_MAX];
    *opened = 0;
    if (!node->conn && !(node->conn = calloc(1, sizeof *node->conn))) {
        rl_conn_finish(r, L, RL_ERR_IO, "out of memory", now);
        return NULL;
    }
    node->conn->tagged = node->ep.cluster != 0;   /* fifo.c formats its late commands so */
    rl_conn *c = node->conn;
    /* (A forked child never gets here with the parent's connections:
     * rl_io_enter drops them first.) */
    rl_conn_check_stall(cl, j, now);
    /* A node that answered within the last millisecond is not checked: one
     * syscall per node per round saved on a busy client, and no node
     * restarts that fast. (A node timeout was too long: a release right
     * after a quick restart went down the dead connection and was lost.) */
    if (c->state == RL_CONN_READY && !c->len && now - c->last_reply_us > 1000 && rl_conn_closed_while_idle(c))
        rl_conn_transition(cl, j, RL_CONN_CLOSED, RL_ERR_IO, "closed by the node");
    *fresh = c->state != RL_CONN_READY;
    if (c->state == RL_CONN_CLOSED) {
        if (node->retry_after_us > now) {
            rl_fmt(msg, sizeof msg, "unreachable, next reconnect in %lld ms (%s)",
                   (long long)((node->retry_after_us - now + 999) / 1000), node->down_why);
            r->unreachable[L] = (unsigned char)node->down_unreachable;
            rl_conn_finish(r, L, RL_ERR_DOWN, msg, now);
            return NULL;
        }
        if (conn_open(cl, j, now, msg, sizeof msg) != 0) {
            r->unreachable[L] = strcmp(msg, "out of memory") != 0;   /* e.g. a name that does not resolve */
            rl_conn_finish(r, L, RL_ERR_IO, msg, now);
            return NULL;
        }
        *opened = 1;   /* a new socket: the leader must poll it */
    }
    return c;
}

/* How r's command goes to node L over c: FCALL, EVALSHA, or EVAL where a
 * NOSCRIPT could not be answered in this round: on a connection that never
 * sent the script (its server may never have seen it), to a node that may
 * not answer in time, and after a redirect of a command this round already
 * re-sent as EVAL (a cluster's shard that answered NOSCRIPT, then MOVED or
 * ASK). A round that does not wait (a clean-up release, a leave) is
 * answered later: its late NOSCRIPT is re-sent as EVAL (rl_conn_orphan). */
static int send_way(const rl_round *r, const rl_conn *c, const rl_node *node, size_t L)
{
    if (r->via_fcall)
        return RL_VIA_FCALL;
    if (rl_proto_is_script(r->cmd) && (!(c->scripts_sent & (1u << r->cmd)) || node->suspect || r->resent[L]))
        return RL_VIA_EVAL;
    return RL_VIA_EVALSHA;
}

static int submit_to(redlock_client *cl, size_t L, size_t j, rl_round *r, int64_t now, int ask)
{
    rl_node *node = rl_nodeat(cl, j);
    char msg[RL_NODE_MSG_MAX];
    int fresh = 0, opened = 0;
    r->shard[L] = (uint16_t)j;
    rl_conn *c = usable_conn(cl, L, j, r, now, &fresh, &opened);
    if (!c)
        return 0;
    int via = send_way(r, c, node, L);
    /* A cluster node's command names the auxiliary keys its own way: it
     * is formatted for it alone (the round's copy serves the others). */
    char *own = NULL;
    long long own_len = node->ep.cluster ? rl_proto_format_node(&own, r, via, 1) : 0;
    if (own_len < 0) {
        rl_conn_finish(r, L, RL_ERR_IO, rl_key_taggable(r->key, r->key_len) ? "out of memory"
               : "the key holds a '}' but no hash tag: its keys cannot share a cluster slot", now);
        return opened;
    }
    if (!own && !r->fmt[via]) {
        long long len = rl_proto_format(&r->fmt[via], r, via);
        if (len < 0) {
            rl_conn_finish(r, L, RL_ERR_IO, "out of memory", now);
            return opened;
        }
        r->fmt_len[via] = (size_t)len;
    }
    /* A node that stopped reading (paused) piles requests up. New ones are
     * refused rather than the connection closed: what is queued still runs
     * in order when it wakes, and a new connection could overtake it. New
     * acquisitions stop at half the limit, so the releases that may follow
     * the SETs already queued still find room. */
    uint32_t limit = rl_cmd_acquires(r->cmd) ? RL_PIPE_MAX / 2 : RL_PIPE_MAX;
    /* An extension is of no use late, and one to a node that timed out,
     * has said nothing since and does not even take what is queued on its
     * socket (stopped, cut off) would only wait in this client's output
     * buffer until the connection is dropped as stalled: with thousands of
     * locks on the watchdog, megabytes. The round counts it as failed
     * without sending it, as it would count the timeout. */
    int extension = r->cmd == RL_CMD_EXTEND || r->cmd == RL_CMD_EXTEND_MANY || r->cmd == RL_CMD_MULTI_EXTEND ||
                    r->cmd == RL_CMD_RW_EXTEND || r->cmd == RL_CMD_SEM_EXTEND;
    if (extension && node->suspect && c->state == RL_CONN_READY && c->wpending && c->len) {
        redisFreeCommand(own);
        rl_fmt(msg, sizeof msg, "not answering and not reading: %u replies owed, its socket full", (unsigned)c->len);
        rl_conn_finish(r, L, RL_ERR_IO, msg, now);
        return opened;
    }
    if (node->ep.cluster && c->len < limit)
        cluster_extras(cl, L, c, ask, now);
    rl_req *e = c->len < limit ? rl_fifo_enqueue(c, own ? own : r->fmt[via], own ? (size_t)own_len : r->fmt_len[via],
                                                  now) : NULL;
    if (e && own) {
        e->redirect = own;   /* kept, should a redirect come after the round returned */
        e->redirect_len = (size_t)own_len;
        e->hops = r->hops[L];
    } else {
        redisFreeCommand(own);
    }
    if (!e) {
        rl_fmt(msg, sizeof msg, c->len >= limit ? "owes %u replies: not answering" : "out of memory",
               (unsigned)c->len);
        rl_conn_finish(r, L, RL_ERR_IO, msg, now);
        return opened;
    }
    e->round = r;
    e->asked = (unsigned char)ask;
    e->cmd = (unsigned char)r->cmd;
    e->via = (unsigned char)via;
    if (via == RL_VIA_EVAL)
        c->scripts_sent |= 1u << r->cmd;
    r->seq[L] = c->seq0 + c->len - 1;
    r->via[L] = (unsigned char)via;
    int64_t d = r->start_us + rl_policy_node_wait_us(&cl->opts, fresh, node->suspect);
    r->deadline[L] = r->cap_us && d > r->cap_us ? r->cap_us : d;
    if (cl->io->hold_flush)
        return opened;   /* the next round's submit, to the same node, writes both */
    /* The socket took part of it: the leader writes the rest. */
    return (flush(cl, j) == 0 && c->wpending) || opened;
}

int rl_conn_submit(redlock_client *cl, size_t i, rl_round *r, int64_t now)
{
    if (r->skip[i]) {
        r->out[i] = r->skip[i] == RL_SKIP_QUARANTINE ? RL_ERR_QUARANTINE : RL_UNSENT;
        return 0;
    }
    r->hops[i] = 0;
    /* A cluster node: the connection of the shard that owns the key's slot. */
    size_t j = cl->nodes[i].ep.cluster ? rl_route_pick(cl, i, r->key, r->key_len, now) : i;
    return submit_to(cl, i, j, r, now, 0);
}

int rl_conn_send_leave(redlock_client *cl, size_t i, const char *key, size_t key_len, const char *member,
                       int64_t now)
{
    /* a cluster node's: the shard that owns the key's slot */
    size_t j = cl->nodes[i].ep.cluster ? rl_route_pick(cl, i, key, key_len, now) : i;
    rl_conn *c = rl_nodeat(cl, j)->conn;
    if (!c || c->state != RL_CONN_READY || c->len >= RL_PIPE_MAX / 2)
        return 0;
    rl_round r;
    memset(&r, 0, sizeof r);
    r.cmd = RL_CMD_LEAVE;
    r.key = key;
    r.key_len = key_len;
    r.member = member;
    r.wake = 1;
    int via = cl->opts.flags & REDLOCK_OPT_FUNCTIONS ? RL_VIA_FCALL : RL_VIA_EVAL;
    char *buf = NULL;
    long long len = rl_proto_format_node(&buf, &r, via, cl->nodes[i].ep.cluster);
    rl_req *e = len > 0 ? rl_fifo_enqueue(c, buf, (size_t)len, now) : NULL;
    if (e) {
        e->round = NULL;   /* late from the start: its reply is read and dropped */
        e->cmd = RL_CMD_LEAVE;
        e->via = (unsigned char)via;
        if (via == RL_VIA_EVAL)
            c->scripts_sent |= 1u << RL_CMD_LEAVE;
    }
    redisFreeCommand(buf);
    return e && flush(cl, j) == 0 && c->wpending;
}

/* The round's deadline for node i passed with no reply. */
void rl_conn_expire(redlock_client *cl, size_t i, rl_round *r, int64_t now)
{
    rl_node *node = rl_nodeat(cl, r->shard[i]);   /* the connection that carries it (route.c) */
    rl_conn *c = node->conn;
    char msg[RL_NODE_MSG_MAX];
    /* A batch of extensions takes a node longer than one command, behind
     * other batches on the same connection: it is waited for while the
     * node keeps answering (it replied within a node timeout) and its
     * locks' validity leaves time (extend_many.c). A node that has gone
     * quiet, paused or stopped, is given up as for any round. */
    int64_t step = (int64_t)cl->opts.node_timeout_ms * 1000;
    if (r->batch && now < r->batch->wait_until_us && c && c->state == RL_CONN_READY &&
        now - c->last_reply_us < step) {
        r->deadline[i] = now + step < r->batch->wait_until_us ? now + step : r->batch->wait_until_us;
        return;
    }
    int handshake = c && c->state == RL_CONN_HANDSHAKE;
    /* Still connecting: no reply could come; not a slow node. */
    r->unreachable[i] = c && c->state == RL_CONN_CONNECTING;
    rl_fmt(msg, sizeof msg, handshake ? "TLS handshake not finished within %lld ms" : "no reply within %lld ms",
           (long long)((now - r->start_us) / 1000));
    rl_conn_orphan(cl, i, r);   /* the request stays: its late reply is read and dropped */
    node->suspect = 1;
    r->sent[i] = 0;
    /* A command still behind the handshake has not been sent yet (it will
     * be, once the handshake completes): an I/O failure for this round, not
     * a timeout that may hide a reply. */
    rl_conn_finish(r, i, handshake ? RL_ERR_IO : RL_ERR_TIMEOUT, msg, now);
}
