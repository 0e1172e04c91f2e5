/* SPDX-License-Identifier: BSD-3-Clause */
/* reply.c: a hiredis reply reader that builds only flat replies, within
 * size limits, so that no node can crash or exhaust its client (see
 * rlcommon.h). The objects are ordinary redisReply structs. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "rlcommon.h"

static void *refuse(const redisReadTask *task, const char *why)
{
    rl_reply_guard *g = task->privdata;
    if (g && !g->why)
        g->why = why;
    return NULL;
}

/* A new object, hung into its parent array when it has one. Arrays never
 * nest, so the parent is always the root. */
static void *make(const redisReadTask *task, int type)
{
    if (task->parent && task->parent->parent)
        return refuse(task, "reply nested deeper than any lock command answers");
    redisReply *r = calloc(1, sizeof *r);
    if (!r)
        return refuse(task, "out of memory reading a reply");
    r->type = type;
    if (task->parent) {
        redisReply *parent = task->parent->obj;
        if (!parent || task->idx < 0 || (size_t)task->idx >= parent->elements) {
            free(r);
            return refuse(task, "malformed array reply");
        }
        parent->element[task->idx] = r;
    }
    return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
    rl_reply_guard *g = task->privdata;
    if (g && len > g->max_string)
        return refuse(task, "string reply longer than the limit");
    char *copy = malloc(len + 1);
    if (!copy)
        return refuse(task, "out of memory reading a reply");
    redisReply *r = make(task, task->type == REDIS_REPLY_ERROR || task->type == REDIS_REPLY_STATUS
                                   ? task->type : REDIS_REPLY_STRING);
    if (!r) {
        free(copy);
        return NULL;
    }
    memcpy(copy, str, len);
    copy[len] = '\0';
    r->str = copy;
    r->len = len;
    return r;
}

static void *create_array(const redisReadTask *task, size_t elements)
{
    rl_reply_guard *g = task->privdata;
    if (task->type != REDIS_REPLY_ARRAY)
        return refuse(task, "map, set or push reply where none is expected");
    if (task->parent)
        return refuse(task, "reply nested deeper than any lock command answers");
    if (g && elements > g->max_elements)
        return refuse(task, "array reply longer than the limit");
    redisReply *r = make(task, REDIS_REPLY_ARRAY);
    if (!r)
        return NULL;
    if (elements) {
        r->element = calloc(elements, sizeof *r->element);
        if (!r->element) {
            free(r);
            return refuse(task, "out of memory reading a reply");
        }
    }
    r->elements = elements;
    return r;
}

static void *create_integer(const redisReadTask *task, long long value)
{
    redisReply *r = make(task, REDIS_REPLY_INTEGER);
    if (r)
        r->integer = value;
    return r;
}

static void *create_double(const redisReadTask *task, double value, char *str, size_t len)
{
    (void)value; (void)str; (void)len;
    return refuse(task, "RESP3 double reply where none is expected");
}

static void *create_nil(const redisReadTask *task)
{
    return make(task, REDIS_REPLY_NIL);
}

static void *create_bool(const redisReadTask *task, int value)
{
    (void)value;
    return refuse(task, "RESP3 boolean reply where none is expected");
}

void rl_reply_free(void *reply)
{
    redisReply *r = reply;
    if (!r)
        return;
    /* Flat by construction: one level of elements, no recursion. */
    for (size_t i = 0; r->element && i < r->elements; i++) {
        if (r->element[i]) {
            free(r->element[i]->str);
            free(r->element[i]);
        }
    }
    free(r->element);
    free(r->str);
    free(r);
}

static redisReplyObjectFunctions flat_functions = {
    create_string, create_array, create_integer, create_double, create_nil, create_bool, rl_reply_free,
};

void rl_reply_harden(redisContext *ctx, rl_reply_guard *g)
{
    redisReader *rd = ctx->reader;
    rd->fn = &flat_functions;
    rd->privdata = g;
    rd->maxelements = (long long)g->max_elements;
    g->why = NULL;
}

int rl_reply_check_buffer(const redisContext *ctx, rl_reply_guard *g)
{
    const redisReader *rd = ctx->reader;
    if (rd->len - rd->pos <= g->max_buffered)
        return 0;
    if (!g->why)
        g->why = "reply larger than the limit";
    return -1;
}

const char *rl_reply_error(const redisContext *ctx, const rl_reply_guard *g)
{
    if (g && g->why)
        return g->why;
    return ctx->errstr[0] ? ctx->errstr : "connection error";
}

int rl_reply_read(redisContext *ctx, rl_reply_guard *g, redisReply **out)
{
    *out = NULL;
    for (;;) {
        void *rep = NULL;
        if (g->why)
            return REDIS_ERR;
        if (redisGetReplyFromReader(ctx, &rep) != REDIS_OK)
            return REDIS_ERR;
        if (rep) {
            *out = rep;
            return REDIS_OK;
        }
        int done = 0;
        while (!done)
            if (redisBufferWrite(ctx, &done) != REDIS_OK)
                return REDIS_ERR;
        if (redisBufferRead(ctx) != REDIS_OK)
            return REDIS_ERR;
        if (rl_reply_check_buffer(ctx, g) != 0)
            return REDIS_ERR;
    }
}
