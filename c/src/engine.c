/* engine.c: per-node connection pools and one multiplexed round: a command
 * is sent to every node at once over non-blocking hiredis contexts, and one
 * poll() loop reads the replies until the outcome is decided. */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include "internal.h"

struct rl_conn {
    redisContext *ctx;
    int connecting;  /* non-blocking connect not yet confirmed */
    int discard;     /* replies still owed to earlier rounds: read and drop */
};

typedef struct slot {
    rl_conn *c;
    int reused;      /* came from the pool */
    int retried;     /* a stale pooled connection was replaced once */
    int handshake;   /* AUTH/SELECT replies still to read */
    int hs_auth;     /* the next handshake reply is AUTH's */
    int main;        /* replies to our command still to read */
    int wpending;    /* output not fully written */
    int got_reply;
    int eval_sent;   /* NOSCRIPT fallback already used */
    int broken;      /* never return to the pool */
    int64_t deadline;
} slot;

const char rl_script_release[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const char rl_script_extend[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
char rl_sha_release[41];
char rl_sha_extend[41];

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;
static void scripts_init_once(void)
{
    rl_sha1_hex(rl_script_release, rl_sha_release);
    rl_sha1_hex(rl_script_extend, rl_sha_extend);
}
void rl_scripts_init(void)
{
    pthread_once(&scripts_once, scripts_init_once);
}

static void conn_free(rl_conn *c)
{
    if (!c)
        return;
    redisFree(c->ctx);
    free(c);
}

void rl_node_init(rl_node *node)
{
    pthread_mutex_init(&node->mu, NULL);
    node->n_idle = 0;
    atomic_init(&node->retry_after_us, 0);
    atomic_init(&node->backoff_ms, 0);
}

void rl_node_destroy(rl_node *node)
{
    for (int i = 0; i < node->n_idle; i++)
        conn_free(node->idle[i]);
    node->n_idle = 0;
    pthread_mutex_destroy(&node->mu);
    rl_endpoint_clear(&node->ep);
}

static rl_conn *checkout(rl_node *node)
{
    rl_conn *c = NULL;
    pthread_mutex_lock(&node->mu);
    if (node->n_idle > 0)
        c = node->idle[--node->n_idle];
    pthread_mutex_unlock(&node->mu);
    return c;
}

static void checkin(rl_node *node, rl_conn *c)
{
    pthread_mutex_lock(&node->mu);
    if (node->n_idle < RL_POOL_IDLE_MAX) {
        node->idle[node->n_idle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&node->mu);
    conn_free(c);
}

/* One stale pooled connection usually means the server restarted and all
 * of them are stale: drop them together. */
static void flush_idle(rl_node *node)
{
    rl_conn *old[RL_POOL_IDLE_MAX];
    int n;
    pthread_mutex_lock(&node->mu);
    n = node->n_idle;
    memcpy(old, node->idle, sizeof(rl_conn *) * (size_t)n);
    node->n_idle = 0;
    pthread_mutex_unlock(&node->mu);
    for (int i = 0; i < n; i++)
        conn_free(old[i]);
}

static void node_backoff(rl_node *node, int64_t now)
{
    uint32_t b = atomic_load(&node->backoff_ms);
    b = b ? (b * 2 > RL_BACKOFF_MAX_MS ? RL_BACKOFF_MAX_MS : b * 2) : RL_BACKOFF_MIN_MS;
    atomic_store(&node->backoff_ms, b);
    atomic_store(&node->retry_after_us, now + (int64_t)b * 1000);
}

static void node_healthy(rl_node *node)
{
    if (atomic_load_explicit(&node->backoff_ms, memory_order_relaxed) != 0) {
        atomic_store(&node->backoff_ms, 0);
        atomic_store(&node->retry_after_us, 0);
    }
}

static int conn_open(rl_node *node, rl_conn **out, char *msg, size_t msgsize)
{
    redisOptions o;
    memset(&o, 0, sizeof o);
    if (node->ep.path)
        REDIS_OPTIONS_SET_UNIX(&o, node->ep.path);
    else
        REDIS_OPTIONS_SET_TCP(&o, node->ep.host, node->ep.port);
    o.options |= REDIS_OPT_NONBLOCK;

    rl_conn *c = calloc(1, sizeof *c);
    if (!c) {
        rl_fmt(msg, msgsize, "out of memory");
        return REDLOCK_ENOMEM;
    }
    c->ctx = redisConnectWithOptions(&o);
    if (!c->ctx) {
        free(c);
        rl_fmt(msg, msgsize, "out of memory");
        return REDLOCK_ENOMEM;
    }
    if (c->ctx->err) {
        rl_fmt(msg, msgsize, "connect: %s", c->ctx->errstr);
        conn_free(c);
        return REDLOCK_EIO;
    }
    if (!node->ep.path) {
        int one = 1;
        /* Each round is one small write per node; Nagle would hold it back. */
        setsockopt(c->ctx->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    c->connecting = 1;
    *out = c;
    return 0;
}

static int append_main(rl_round *r, slot *s, int use_eval)
{
    redisContext *ctx = s->c->ctx;
    int rc;
    switch (r->cmd) {
    case RL_CMD_SET:
        rc = redisAppendCommand(ctx, "SET %b %s NX PX %u", r->key, r->key_len, r->value, r->ttl_ms);
        break;
    case RL_CMD_EXTEND:
        rc = use_eval
            ? redisAppendCommand(ctx, "EVAL %s 1 %b %s %u", rl_script_extend, r->key, r->key_len, r->value, r->ttl_ms)
            : redisAppendCommand(ctx, "EVALSHA %s 1 %b %s %u", rl_sha_extend, r->key, r->key_len, r->value, r->ttl_ms);
        break;
    default:
        rc = use_eval
            ? redisAppendCommand(ctx, "EVAL %s 1 %b %s", rl_script_release, r->key, r->key_len, r->value)
            : redisAppendCommand(ctx, "EVALSHA %s 1 %b %s", rl_sha_release, r->key, r->key_len, r->value);
        break;
    }
    s->main = 1;
    s->wpending = 1;
    return rc == REDIS_OK ? 0 : -1;
}

static int queue_cmds(const rl_node *node, rl_round *r, slot *s, int fresh)
{
    redisContext *ctx = s->c->ctx;
    if (fresh) {
        if (node->ep.password) {
            int rc = node->ep.user
                ? redisAppendCommand(ctx, "AUTH %s %s", node->ep.user, node->ep.password)
                : redisAppendCommand(ctx, "AUTH %s", node->ep.password);
            if (rc != REDIS_OK)
                return -1;
            s->handshake++;
            s->hs_auth = 1;
        }
        if (node->ep.db) {
            if (redisAppendCommand(ctx, "SELECT %d", node->ep.db) != REDIS_OK)
                return -1;
            s->handshake++;
        }
    }
    return append_main(r, s, 0);
}

static void finish(rl_round *r, size_t i, slot *s, rl_outcome out, int64_t now)
{
    r->out[i] = out;
    r->rtt_us[i] = now - r->start_us;
    if (out != RL_YES && out != RL_NO && out != RL_ERR_SERVER)
        s->broken = 1;
}

static int flush_out(slot *s)
{
    int done = 0;
    if (s->c->connecting || !s->wpending)
        return 0;
    if (redisBufferWrite(s->c->ctx, &done) == REDIS_ERR)
        return -1;
    s->wpending = !done;
    return 0;
}

/* Starts (or restarts) a node's part of the round on a fresh connection. */
static void start_fresh(redlock_client *cl, rl_round *r, size_t i, slot *s, int64_t now)
{
    rl_node *node = &cl->nodes[i];
    int rc = conn_open(node, &s->c, r->msg[i], RL_NODE_MSG_MAX);
    if (rc) {
        if (rc == REDLOCK_EIO)
            node_backoff(node, now);
        finish(r, i, s, RL_ERR_IO, now);
        return;
    }
    s->reused = 0;
    s->handshake = s->hs_auth = s->main = s->got_reply = s->eval_sent = 0;
    int64_t d = now + ((int64_t)cl->opts.node_timeout_ms + cl->opts.connect_timeout_ms) * 1000;
    s->deadline = (r->cap_us && d > r->cap_us) ? r->cap_us : d;
    if (queue_cmds(node, r, s, 1) != 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "out of memory");
        finish(r, i, s, RL_ERR_IO, now);
    }
}

static void start_slot(redlock_client *cl, rl_round *r, size_t i, slot *s, int64_t now)
{
    rl_node *node = &cl->nodes[i];
    if (r->skip[i]) {
        r->out[i] = RL_UNSENT;
        return;
    }
    int64_t after = atomic_load(&node->retry_after_us);
    if (after > now) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "unreachable, next reconnect in %lld ms",
               (long long)((after - now + 999) / 1000));
        r->out[i] = RL_ERR_DOWN;
        return;
    }
    s->c = checkout(node);
    if (!s->c) {
        start_fresh(cl, r, i, s, now);
        return;
    }
    s->reused = 1;
    int64_t d = r->start_us + (int64_t)cl->opts.node_timeout_ms * 1000;
    s->deadline = (r->cap_us && d > r->cap_us) ? r->cap_us : d;
    if (queue_cmds(node, r, s, 0) != 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "out of memory");
        finish(r, i, s, RL_ERR_IO, now);
        return;
    }
    if (flush_out(s) != 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "write: %s", s->c->ctx->errstr);
        finish(r, i, s, RL_ERR_IO, now);
    }
}

/* An I/O failure. A pooled connection that fails before any reply was
 * read was most likely stale (the server restarted); replace it once. The
 * command may have reached the old server, which is harmless: SET NX then
 * answers "held", and the scripts compare before acting. */
static void io_fail(redlock_client *cl, rl_round *r, size_t i, slot *s, const char *what, int64_t now)
{
    if (s->reused && !s->got_reply && !s->retried && now < s->deadline) {
        conn_free(s->c);
        s->c = NULL;
        flush_idle(&cl->nodes[i]);
        s->retried = 1;
        start_fresh(cl, r, i, s, now);
        return;
    }
    rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%s: %s", what,
           s->c->ctx->errstr[0] ? s->c->ctx->errstr : "connection error");
    finish(r, i, s, RL_ERR_IO, now);
}

static int is_auth_error(const char *e)
{
    return strncmp(e, "NOAUTH", 6) == 0 || strncmp(e, "WRONGPASS", 9) == 0 ||
           strstr(e, "password") != NULL;
}

static void on_reply(rl_round *r, size_t i, slot *s, redisReply *rep, int64_t now)
{
    s->got_reply = 1;
    if (s->c->discard > 0) {
        s->c->discard--;
        return;
    }
    if (s->handshake > 0) {
        int was_auth = s->hs_auth;
        s->handshake--;
        s->hs_auth = 0;
        if (rep->type == REDIS_REPLY_ERROR && r->out[i] == RL_PENDING) {
            int auth = was_auth || is_auth_error(rep->str);
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%s: %.120s", was_auth ? "AUTH" : "SELECT", rep->str);
            finish(r, i, s, auth ? RL_ERR_AUTH : RL_ERR_SERVER, now);
            s->broken = 1;
        }
        return;
    }
    s->main--;
    if (rep->type == REDIS_REPLY_ERROR) {
        if (strncmp(rep->str, "NOSCRIPT", 8) == 0 && r->cmd != RL_CMD_SET && !s->eval_sent) {
            /* Script cache flushed or server restarted: send the body once. */
            s->eval_sent = 1;
            if (append_main(r, s, 1) != 0 || flush_out(s) != 0) {
                rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "EVAL after NOSCRIPT failed");
                finish(r, i, s, RL_ERR_IO, now);
            }
            return;
        }
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%.150s", rep->str);
        finish(r, i, s, is_auth_error(rep->str) ? RL_ERR_AUTH : RL_ERR_SERVER, now);
        return;
    }
    if (r->cmd == RL_CMD_SET) {
        if (rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0) {
            finish(r, i, s, RL_YES, now);
        } else if (rep->type == REDIS_REPLY_NIL) {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "held by another owner");
            finish(r, i, s, RL_NO, now);
        } else {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "unexpected reply type %d to SET", rep->type);
            finish(r, i, s, RL_ERR_SERVER, now);
        }
        return;
    }
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1) {
        finish(r, i, s, RL_YES, now);
    } else if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "key gone or held by another owner");
        finish(r, i, s, RL_NO, now);
    } else {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "unexpected reply type %d to script", rep->type);
        finish(r, i, s, RL_ERR_SERVER, now);
    }
}

static void handle_events(redlock_client *cl, rl_round *r, size_t i, slot *s, short revents, int64_t now)
{
    redisContext *ctx = s->c->ctx;
    if (s->c->connecting) {
        if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(ctx->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            node_backoff(&cl->nodes[i], now);
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "connect: %s", strerror(err));
            finish(r, i, s, RL_ERR_IO, now);
            return;
        }
        s->c->connecting = 0;
        revents |= POLLOUT;
    }
    if (s->wpending && (revents & (POLLOUT | POLLERR | POLLHUP))) {
        if (flush_out(s) != 0) {
            io_fail(cl, r, i, s, "write", now);
            return;
        }
    }
    if (!(revents & (POLLIN | POLLERR | POLLHUP)))
        return;
    if (redisBufferRead(ctx) == REDIS_ERR) {
        io_fail(cl, r, i, s, "read", now);
        return;
    }
    while (r->out[i] == RL_PENDING) {
        void *rep = NULL;
        if (redisGetReply(ctx, &rep) == REDIS_ERR) {
            io_fail(cl, r, i, s, "protocol", now);
            return;
        }
        if (!rep)
            break;
        on_reply(r, i, s, rep, now);
        freeReplyObject(rep);
    }
}

/* 1 once more replies cannot change what the caller will conclude. */
static int decided(const rl_round *r)
{
    int yes = 0, no = 0, pending = 0, n = (int)r->n;
    for (size_t i = 0; i < r->n; i++) {
        if (r->out[i] == RL_PENDING)
            pending++;
        else if (r->out[i] == RL_YES)
            yes++;
        else if (r->out[i] == RL_NO)
            no++;
    }
    if (r->no_wait)
        return 0;
    if (yes >= r->quorum || pending == 0)
        return 1;
    if (yes + pending < r->quorum) {
        /* Acquisition has failed. For extend and release, wait for the rest
         * unless "not ours" is already certain, so that the caller can tell
         * "lost" from "could not reach enough nodes". */
        if (r->cmd == RL_CMD_SET || no > n - r->quorum)
            return 1;
    }
    return 0;
}

void rl_round_run(redlock_client *cl, rl_round *r)
{
    slot S[REDLOCK_MAX_NODES];
    struct pollfd pfd[REDLOCK_MAX_NODES];
    size_t map[REDLOCK_MAX_NODES];
    int64_t now = rl_now_us();

    rl_scripts_init();
    memset(S, 0, sizeof(slot) * r->n);
    for (size_t i = 0; i < r->n; i++) {
        r->out[i] = RL_PENDING;
        r->msg[i][0] = '\0';
        r->rtt_us[i] = 0;
    }
    for (size_t i = 0; i < r->n; i++)
        start_slot(cl, r, i, &S[i], now);

    for (;;) {
        if (decided(r))
            break;
        nfds_t nfds = 0;
        int64_t next = INT64_MAX;
        for (size_t i = 0; i < r->n; i++) {
            slot *s = &S[i];
            if (r->out[i] != RL_PENDING)
                continue;
            if (r->no_wait && !s->c->connecting && !s->wpending)
                continue; /* sent; replies are left for the pool to drop */
            pfd[nfds].fd = s->c->ctx->fd;
            pfd[nfds].events = POLLIN;
            if (s->c->connecting || s->wpending)
                pfd[nfds].events |= POLLOUT;
            pfd[nfds].revents = 0;
            map[nfds++] = i;
            if (s->deadline < next)
                next = s->deadline;
        }
        if (nfds == 0)
            break;
        int64_t wait_us = next - now;
        int timeout = wait_us <= 0 ? 0 : (int)((wait_us + 999) / 1000);
        int n = poll(pfd, nfds, timeout);
        now = rl_now_us();
        if (n < 0) {
            if (errno == EINTR) {
                r->interrupted = 1;
                continue;
            }
            for (nfds_t k = 0; k < nfds; k++) {
                rl_fmt(r->msg[map[k]], RL_NODE_MSG_MAX, "poll: %s", strerror(errno));
                finish(r, map[k], &S[map[k]], RL_ERR_IO, now);
            }
            break;
        }
        for (nfds_t k = 0; k < nfds && n > 0; k++) {
            if (pfd[k].revents) {
                size_t i = map[k];
                /* The fd may change if io_fail reconnects; revents belong to the old one. */
                if (S[i].c && S[i].c->ctx->fd == pfd[k].fd && r->out[i] == RL_PENDING)
                    handle_events(cl, r, i, &S[i], pfd[k].revents, now);
            }
        }
        for (size_t i = 0; i < r->n; i++) {
            if (r->out[i] == RL_PENDING && S[i].deadline <= now &&
                !(r->no_wait && !S[i].c->connecting && !S[i].wpending)) {
                rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "no reply within %lld ms",
                       (long long)((now - r->start_us) / 1000));
                finish(r, i, &S[i], RL_ERR_TIMEOUT, now);
            }
        }
    }

    for (size_t i = 0; i < r->n; i++) {
        slot *s = &S[i];
        rl_node *node = &cl->nodes[i];
        if (s->got_reply && !s->broken)
            node_healthy(node);
        if (!s->c)
            continue;
        if (r->out[i] == RL_PENDING) {
            /* Decided without this node. A reply may still come: if the
             * connection is clean apart from that, pool it and let the next
             * user drop the owed replies; otherwise close it. */
            if (!s->c->connecting && !s->wpending && !s->broken) {
                s->c->discard += s->handshake + s->main;
                checkin(node, s->c);
            } else {
                conn_free(s->c);
            }
            r->out[i] = RL_UNSENT;
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, r->no_wait ? "sent" : "not waited for (decided without it)");
        } else if (!s->broken && s->handshake == 0 && s->main == 0 && !s->wpending) {
            checkin(node, s->c);
        } else {
            conn_free(s->c);
        }
        s->c = NULL;
    }
}
