/* SPDX-License-Identifier: BSD-3-Clause */
/* listen.c: the wake-up listener (docs/algorithm.md, "Waking waiters"). A
 * client has a wake id; its waiting acquires register on the nodes as
 * "<wake id>:<number>" (scripts.c), and a release publishes the first
 * registration to the channel redlock:wake:<wake id>. Per node, one
 * listening connection is subscribed to that channel: opened by the first
 * waiting acquire (wake.c keeps the waiters), driven by the multiplexer
 * (mux.c) while anyone waits, reconnected with backoff. A message names a
 * waiter on the client's list, whose sleep it cuts short: the acquisition
 * that follows is an ordinary one, decided by SET NX on a majority. Fields
 * are guarded by the client's I/O mutex. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "engine/engine.h"

#define REFUSED_RETRY_MS 30000   /* a node that refused SUBSCRIBE is asked again after this */

static rl_listener *listener(redlock_client *cl, size_t i)
{
    rl_node *node = &cl->nodes[i];
    if (!node->listen)
        node->listen = calloc(1, sizeof *node->listen);
    return node->listen;
}

/* Changes the state, keeps the change to be told, and wakes the waiting
 * threads so that one of them tells it (rl_wake_report) without delay. */
static void set_state(redlock_client *cl, rl_listener *L, int state, const char *msg)
{
    int changed = L->state != state;
    L->state = state;
    rl_fmt(L->msg, sizeof L->msg, "%s", msg ? msg : "");
    if (!changed)
        return;
    int cap = (int)(sizeof L->untold / sizeof L->untold[0]);
    if (L->nuntold == cap) {   /* flapping faster than anyone reads: the oldest goes */
        memmove(&L->untold[0], &L->untold[1], sizeof L->untold[0] * (size_t)(cap - 1));
        L->nuntold--;
    }
    L->untold[L->nuntold].state = state;
    memcpy(L->untold[L->nuntold].msg, L->msg, sizeof L->msg);
    L->nuntold++;
    for (rl_waiter *w = cl->io->waiters; w; w = w->next) {
        int fd = atomic_load(&w->lock->wake_fd);
        if (fd >= 0) {
            uint64_t one = 1;
            ssize_t wr = write(fd, &one, sizeof one);
            (void)wr;
        }
    }
}

static void close_listener(rl_listener *L)
{
    redisFree(L->conn.ctx);   /* no I/O: in a forked child too */
    L->conn.ctx = NULL;
    L->conn.ssl = NULL;
    L->conn.state = RL_CONN_CLOSED;
    L->conn.wpending = 0;
    L->auth_owed = L->subscribed = 0;
}

/* Closes the connection: DOWN (retried with backoff) or REFUSED (retried
 * rarely). */
static void fail(redlock_client *cl, size_t i, int state, const char *msg, int64_t now)
{
    rl_listener *L = cl->nodes[i].listen;
    close_listener(L);
    if (state == REDLOCK_LISTENER_REFUSED) {
        L->retry_us = now + (int64_t)REFUSED_RETRY_MS * 1000;
    } else {
        L->backoff_ms = rl_policy_backoff_next_ms(L->backoff_ms);
        L->retry_us = now + (int64_t)L->backoff_ms * 1000;
        /* A cluster node: the next try goes to its next seed. PUBLISH is
         * delivered to subscribers on every member of a cluster, so any
         * member that answers will do. */
        if (cl->nodes[i].ep.cluster && cl->nodes[i].ep.nseeds)
            L->member = (L->member + 1) % (cl->nodes[i].ep.nseeds + 1);
    }
    set_state(cl, L, state, msg);
}

static void open_listener(redlock_client *cl, size_t i, int64_t now)
{
    rl_node *node = &cl->nodes[i];
    rl_listener *L = node->listen;
    char msg[RL_NODE_MSG_MAX];
    L->via = node->ep.cluster ? rl_route_seed(cl, i, L->member) : i;
    if (L->via == SIZE_MAX)
        L->via = i;
    if (rl_conn_socket(cl, L->via, &L->conn, now, msg, sizeof msg) != 0) {
        fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
        return;
    }
    /* Messages are flat arrays of three strings; the guard stays as set. */
    int ok = 1;
    if (node->ep.password) {
        ok = rl_conn_append_auth(node, L->conn.ctx) == REDIS_OK;
        L->auth_owed = 1;
    }
    if (!ok || redisAppendCommand(L->conn.ctx, "SUBSCRIBE redlock:wake:%s", cl->io->wake_id) != REDIS_OK) {
        fail(cl, i, REDLOCK_LISTENER_DOWN, "out of memory", now);
        return;
    }
    set_state(cl, L, REDLOCK_LISTENER_CONNECTING, NULL);
}

int64_t rl_listen_maintain(redlock_client *cl, int64_t now)
{
    int64_t next = INT64_MAX;
    if (!cl->io->nwaiters)
        return next;
    int64_t limit = ((int64_t)cl->opts.connect_timeout_ms + cl->opts.node_timeout_ms) * 1000;
    for (size_t i = 0; i < cl->n; i++) {
        rl_listener *L = listener(cl, i);
        if (!L)
            continue;
        if (L->conn.state != RL_CONN_CLOSED && !L->subscribed && now - L->conn.opened_us > limit)
            fail(cl, i, REDLOCK_LISTENER_DOWN, "not subscribed within the connect and node timeouts", now);
        if (L->conn.state == RL_CONN_CLOSED) {
            if (now >= L->retry_us)
                open_listener(cl, i, now);
            else if (L->retry_us < next)
                next = L->retry_us;
        }
        if (L->conn.state != RL_CONN_CLOSED && !L->subscribed && L->conn.opened_us + limit < next)
            next = L->conn.opened_us + limit + 1;
    }
    return next;
}

short rl_listen_poll_events(const redlock_client *cl, size_t i)
{
    const rl_listener *L = cl->nodes[i].listen;
    if (!L || !cl->io->nwaiters)
        return 0;
    switch (L->conn.state) {
    case RL_CONN_CONNECTING: return POLLOUT;
    case RL_CONN_HANDSHAKE: return L->conn.tls_want;
    case RL_CONN_READY: return (short)(POLLIN | (L->conn.wpending ? POLLOUT : 0));
    default: return 0;
    }
}

/* A message names one registration, what freed the lock (the released
 * value, or the registration that left) and the lock's key
 * ("<wake id>:<n> <tag>\n<key>"; earlier versions sent "<wake id>:<n>
 * <value>", and read a message up to its first space, so that both wake
 * each other's waiters): wake that waiter if it is ours. Every node tells of a
 * release; the waiter acts on each message that comes while it sleeps
 * (one that woke it early, its SET reaching a node before the release
 * did, is followed by the others, and one of them brings it back), but
 * not on messages about a release whose lock it found taken again
 * (rl_wake_spend). A message for a registration of ours that no longer
 * waits means that its leave never reached this node (the node was stopped
 * and the connection dropped): the leave is sent now, and it wakes the
 * next waiter, so a stale head neither swallows wake-ups nor lingers.
 * 1 if that leave was left partly written, for the leader to finish. */
static int deliver(redlock_client *cl, size_t i, const char *payload, size_t len)
{
    size_t idlen = strlen(cl->io->wake_id);
    if (len <= idlen + 1 || memcmp(payload, cl->io->wake_id, idlen) != 0 || payload[idlen] != ':')
        return 0;
    uint64_t id = 0;
    size_t k = idlen + 1;
    for (; k < len && payload[k] != ' ' && payload[k] != '\n'; k++) {
        if (payload[k] < '0' || payload[k] > '9' || id > UINT64_MAX / 10 - 1)
            return 0;
        id = id * 10 + (uint64_t)(payload[k] - '0');
    }
    /* The tag: after the space, up to the newline before the key. */
    const char *tag = k < len && payload[k] == ' ' ? payload + k + 1 : NULL;
    const char *nl = tag ? memchr(tag, '\n', len - (size_t)(tag - payload)) : NULL;
    size_t tlen = !tag ? 0 : nl ? (size_t)(nl - tag) : len - (size_t)(tag - payload);
    for (rl_waiter *w = cl->io->waiters; w; w = w->next) {
        if (w->id != id)
            continue;
        if (tag && tlen < sizeof w->tag) {
            if (w->spent[0] && strlen(w->spent) == tlen && memcmp(w->spent, tag, tlen) == 0)
                return 0;
            memcpy(w->tag, tag, tlen);
            w->tag[tlen] = '\0';
        }
        atomic_store(&w->node, (int)i);
        atomic_store(&w->woken, 1);
        int fd = atomic_load(&w->lock->wake_fd);
        if (fd >= 0) {
            uint64_t one = 1;
            ssize_t wr = write(fd, &one, sizeof one);
            (void)wr;
        }
        return 0;
    }
    if (nl && id && id <= cl->io->waiter_seq && k < RL_MEMBER_MAX) {
        char member[RL_MEMBER_MAX];
        memcpy(member, payload, k);
        member[k] = '\0';
        return rl_conn_send_leave(cl, i, nl + 1, len - (size_t)(nl + 1 - payload), member, rl_now_us());
    }
    return 0;
}

static int is_str(const redisReply *r, const char *s)
{
    return (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) && r->len == strlen(s) &&
           memcmp(r->str, s, r->len) == 0;
}

/* After a (re)subscription the node may have lost the queue (a restart
 * without persistence): every waiter tries once more, which registers it
 * again. */
static int wake_all(redlock_client *cl, size_t i)
{
    int kick = 0;
    for (rl_waiter *w = cl->io->waiters; w; w = w->next) {
        char payload[RL_MEMBER_MAX];
        int n = snprintf(payload, sizeof payload, "%s:%llu", cl->io->wake_id, (unsigned long long)w->id);
        kick |= deliver(cl, i, payload, (size_t)n);
    }
    return kick;
}

/* One reply on the listener; 1 as deliver. */
static int handle(redlock_client *cl, size_t i, const redisReply *rep, int64_t now)
{
    rl_listener *L = cl->nodes[i].listen;
    char msg[RL_NODE_MSG_MAX];
    if (L->auth_owed) {
        L->auth_owed = 0;
        if (rep->type == REDIS_REPLY_ERROR) {
            rl_fmt(msg, sizeof msg, "AUTH: %.120s", rep->str);
            fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
        }
        return 0;
    }
    if (!L->subscribed) {
        if (rep->type == REDIS_REPLY_ERROR) {
            rl_fmt(msg, sizeof msg, "SUBSCRIBE: %.120s", rep->str);
            fail(cl, i, strncmp(rep->str, "NOPERM", 6) == 0 ? REDLOCK_LISTENER_REFUSED : REDLOCK_LISTENER_DOWN,
                 msg, now);
        } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 && is_str(rep->element[0], "subscribe")) {
            L->subscribed = 1;
            L->backoff_ms = 0;
            int again = L->ever;
            L->ever = 1;
            set_state(cl, L, REDLOCK_LISTENER_READY, NULL);
            if (again)
                return wake_all(cl, i);
        } else {
            fail(cl, i, REDLOCK_LISTENER_DOWN, "unexpected reply to SUBSCRIBE", now);
        }
        return 0;
    }
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 && is_str(rep->element[0], "message") &&
        rep->element[2]->type == REDIS_REPLY_STRING)
        return deliver(cl, i, rep->element[2]->str, rep->element[2]->len);
    return 0;
}

static int flush(redlock_client *cl, size_t i, int64_t now)
{
    rl_listener *L = cl->nodes[i].listen;
    int done = 0;
    if (L->conn.ssl)
        ERR_clear_error();
    if (redisBufferWrite(L->conn.ctx, &done) == REDIS_ERR) {
        char msg[RL_NODE_MSG_MAX];
        rl_fmt(msg, sizeof msg, "write: %s", L->conn.ctx->errstr);
        fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
        return -1;
    }
    L->conn.wpending = !done;
    return 0;
}

/* 1 as deliver. */
static int read_messages(redlock_client *cl, size_t i, int64_t now)
{
    rl_listener *L = cl->nodes[i].listen;
    char msg[RL_NODE_MSG_MAX];
    int kick = 0;
    for (;;) {
        if (L->conn.ssl)
            ERR_clear_error();
        if (redisBufferRead(L->conn.ctx) == REDIS_ERR || rl_reply_check_buffer(L->conn.ctx, &L->conn.guard) != 0) {
            rl_fmt(msg, sizeof msg, "read: %s", rl_reply_error(L->conn.ctx, &L->conn.guard));
            fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
            return kick;
        }
        for (;;) {
            void *rep = NULL;
            if (redisGetReply(L->conn.ctx, &rep) == REDIS_ERR) {
                rl_fmt(msg, sizeof msg, "protocol: %s", rl_reply_error(L->conn.ctx, &L->conn.guard));
                fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
                return kick;
            }
            if (!rep)
                break;
            kick |= handle(cl, i, rep, now);
            rl_reply_free(rep);
            if (L->conn.state != RL_CONN_READY)
                return kick;
        }
        if (!L->conn.ssl || !SSL_has_pending(L->conn.ssl))
            break;
    }
    return kick;
}

int rl_listen_events(redlock_client *cl, size_t i, short revents, int64_t now)
{
    rl_listener *L = cl->nodes[i].listen;
    char msg[RL_NODE_MSG_MAX];
    if (L->conn.state == RL_CONN_CONNECTING) {
        if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
            return 0;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(L->conn.ctx->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            rl_fmt(msg, sizeof msg, "connect: %s", strerror(err));
            fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
            return 0;
        }
        if (cl->nodes[i].ep.tls) {
            if (rl_conn_tls_begin(cl, L->via, &L->conn, msg, sizeof msg) != 0) {
                fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
                return 0;
            }
            L->conn.state = RL_CONN_HANDSHAKE;
            revents = 0;
        } else {
            L->conn.state = RL_CONN_READY;
            revents = POLLOUT;
        }
    }
    if (L->conn.state == RL_CONN_HANDSHAKE) {
        int st = rl_conn_tls_step(cl, L->via, &L->conn, msg, sizeof msg);
        if (st < 0) {
            fail(cl, i, REDLOCK_LISTENER_DOWN, msg, now);
            return 0;
        }
        if (st > 0)
            return 0;
        L->conn.state = RL_CONN_READY;
        revents = POLLOUT;
    }
    if (L->conn.wpending && (revents & (POLLOUT | POLLERR | POLLHUP)) && flush(cl, i, now) != 0)
        return 0;
    return revents & (POLLIN | POLLERR | POLLHUP) ? read_messages(cl, i, now) : 0;
}

int rl_listen_fd(const redlock_client *cl, size_t i, uint32_t *gen)
{
    const rl_listener *L = cl->nodes[i].listen;
    *gen = L->conn.gen;
    return L->conn.ctx ? L->conn.ctx->fd : -1;
}

void rl_listen_free(redlock_client *cl, size_t i)
{
    rl_listener *L = cl->nodes[i].listen;
    if (!L)
        return;
    close_listener(L);
    free(L);
    cl->nodes[i].listen = NULL;
}

int rl_listen_new_id(char out[RL_WAKE_ID_LEN + 1])
{
    return rl_random_hex(out, RL_WAKE_ID_LEN / 2);
}

int rl_listen_state(const redlock_client *cl, size_t i, char *msg, size_t msgsize)
{
    const rl_listener *L = cl->nodes[i].listen;
    if (msg && msgsize)
        rl_fmt(msg, msgsize, "%s", L ? L->msg : "");
    return L ? L->state : REDLOCK_LISTENER_OFF;
}

size_t rl_listen_untold(redlock_client *cl, size_t i, rl_listen_change *out, size_t max)
{
    rl_listener *L = cl->nodes[i].listen;
    size_t k = 0;
    for (; L && k < (size_t)L->nuntold && k < max; k++) {
        out[k].state = L->untold[k].state;
        memcpy(out[k].msg, L->untold[k].msg, sizeof out[k].msg);
    }
    if (k) {
        memmove(&L->untold[0], &L->untold[k], sizeof L->untold[0] * (size_t)(L->nuntold - (int)k));
        L->nuntold -= (int)k;
    }
    return k;
}
