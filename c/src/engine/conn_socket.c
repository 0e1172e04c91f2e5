/* SPDX-License-Identifier: BSD-3-Clause */
/* conn_socket.c: opening a node's socket, for its lock connection (conn.c)
 * and for its listener (listen.c) alike: a non-blocking connect that no
 * program this process runs inherits, that never raises SIGPIPE, read
 * through the hardened reader (c/common/reply.c); and the node's AUTH. */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "engine.h"

int rl_conn_socket(redlock_client *cl, size_t i, rl_conn *c, int64_t now, char *msg, size_t msgsize)
{
    rl_node *node = rl_nodeat(cl, i);
    redisOptions o;
    memset(&o, 0, sizeof o);
    if (node->ep.path)
        REDIS_OPTIONS_SET_UNIX(&o, node->ep.path);
    else
        REDIS_OPTIONS_SET_TCP(&o, node->ep.host, node->ep.port);
    o.options |= REDIS_OPT_NONBLOCK;
    c->ctx = redisConnectWithOptions(&o);
    if (!c->ctx) {
        rl_fmt(msg, msgsize, "out of memory");
        return -1;
    }
    if (c->ctx->err) {
        rl_fmt(msg, msgsize, "connect: %s", c->ctx->errstr);
        redisFree(c->ctx);
        c->ctx = NULL;
        return -1;
    }
    if (!node->ep.path) {
        int one = 1;
        /* Each round is one small write per node; Nagle would hold it back. */
        setsockopt(c->ctx->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    /* hiredis doesn't set close-on-exec: a program this process runs must
     * not inherit the node connections. */
    fcntl(c->ctx->fd, F_SETFD, fcntl(c->ctx->fd, F_GETFD) | FD_CLOEXEC);
    rl_conn_nosignal(c->ctx);
    c->guard = (rl_reply_guard)RL_REPLY_GUARD_LOCK;
    if (node->ep.cluster) {
        /* CLUSTER NODES (route.c): a line of about 200 bytes per member */
        c->guard.max_string = 1024 * 1024;
        c->guard.max_buffered = 4 * 1024 * 1024;
    }
    rl_reply_harden(c->ctx, &c->guard);
    c->pid = rl_pid();
    c->gen++;
    c->opened_us = now;
    c->last_reply_us = 0;
    c->scripts_sent = 0;
    c->wpending = 1;
    c->state = RL_CONN_CONNECTING;
    return 0;
}

int rl_conn_append_auth(const rl_node *node, redisContext *ctx)
{
    return node->ep.user ? redisAppendCommand(ctx, "AUTH %s %s", node->ep.user, node->ep.password)
                         : redisAppendCommand(ctx, "AUTH %s", node->ep.password);
}
