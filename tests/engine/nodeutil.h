/* SPDX-License-Identifier: BSD-3-Clause */
/* nodeutil.h: the engine tests' direct line to the nodes (one command on
 * node i, bypassing the library) and to the harness's control socket
 * (restart, pause, resume). Include after ../c/testutil.h. */
#ifndef REDLOCK_TESTS_NODEUTIL_H
#define REDLOCK_TESTS_NODEUTIL_H

#include <hiredis/hiredis.h>

static redisContext *node_conn(size_t i)
{
    const char *hostport = strstr(t_urls[i], "://");
    char host[128];
    int port = 0;
    if (!hostport || sscanf(hostport + 3, "%127[^:]:%d", host, &port) != 2)
        return NULL;
    struct timeval tv = { 5, 0 };
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* One command on node i: its integer reply, the element count of an array
 * reply, 0 for a nil, or -1 (error, node down). */
static long long node_q(size_t i, const char *fmt, ...)
{
    redisContext *c = node_conn(i);
    if (!c)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    long long v = -1;
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_ARRAY)
        v = (long long)r->elements;
    else if (r && r->type == REDIS_REPLY_NIL)
        v = 0;
    else if (r && r->type == REDIS_REPLY_STATUS)
        v = 1;
    else if (r && r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "node %zu: %s\n", i, r->str);
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* A harness control command (restart, pause, resume...) over its socket:
 * 0 once it answered +OK. */
static int harness(const char *fmt, ...)
{
    const char *path = getenv("REDLOCK_HARNESS");
    if (!path) {
        fprintf(stderr, "REDLOCK_HARNESS is not set: run under tests/harness/nodes.py exec\n");
        return -1;
    }
    struct timeval tv = { 60, 0 };
    redisContext *c = redisConnectUnixWithTimeout(path, tv);
    if (!c || c->err) {
        redisFree(c);
        return -1;
    }
    redisSetTimeout(c, tv);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int ok = r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) && strcmp(r->str, "OK") == 0;
    if (!ok)
        fprintf(stderr, "harness: %s\n", r && r->str ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
    return ok ? 0 : -1;
}

#endif
