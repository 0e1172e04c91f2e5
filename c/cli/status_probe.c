/* SPDX-License-Identifier: BSD-3-Clause */
/* status_probe.c: what 'redlock status' reads of one node, over hiredis:
 * the key's value and PTTL, a read-write lock's live readers and a waiting
 * writer's intent, a semaphore's limit and slots, and the waiters' queue.
 * Reads only. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "status.h"

/* Records a live reader's value on ns (ids has room for every one). */
static void add_id(node_state *ns, const char *p, size_t len)
{
    char *c = malloc(len + 1);
    if (!c)
        return;
    memcpy(c, p, len);
    c[len] = '\0';
    ns->ids[ns->n_ids].p = c;
    ns->ids[ns->n_ids++].len = len;
}

/* Readers, intent and waiters of node i, on ctx after GET and PTTL: 0, or
 * -1 with the error in ns (a node whose ACL refuses these still shows the
 * key: they are then -1). */
static void probe_rw(redisContext *ctx, const char *key, size_t key_len, node_state *ns)
{
    char *k = malloc(key_len + 4);
    ns->readers = ns->intent_ms = ns->waiters = -1;
    if (!k)
        return;
    memcpy(k, key, key_len);
    static const char *const suffix[3] = { ":rd", ":wi", ":wq" };
    redisAppendCommand(ctx, "TIME");
    memcpy(k + key_len, suffix[0], 3);
    redisAppendCommand(ctx, "ZRANGE %b 0 -1 WITHSCORES", k, key_len + 3);
    memcpy(k + key_len, suffix[1], 3);
    redisAppendCommand(ctx, "PTTL %b", k, key_len + 3);
    memcpy(k + key_len, suffix[2], 3);
    redisAppendCommand(ctx, "ZCARD %b", k, key_len + 3);
    free(k);
    redisReply *r[4] = { NULL, NULL, NULL, NULL };
    char err[256];
    for (int i = 0; i < 4; i++)
        if (cli_read_reply(ctx, &r[i], err, sizeof err))
            break;
    if (r[0] && r[0]->type == REDIS_REPLY_ARRAY && r[0]->elements == 2 && r[1] && r[1]->type == REDIS_REPLY_ARRAY) {
        long long now = atoll(r[0]->element[0]->str) * 1000 + atoll(r[0]->element[1]->str) / 1000;
        ns->readers = 0;
        ns->ids = calloc(r[1]->elements / 2 + 1, sizeof *ns->ids);
        for (size_t i = 1; i < r[1]->elements; i += 2) {
            const redisReply *m = r[1]->element[i - 1], *s = r[1]->element[i];
            if (s->type != REDIS_REPLY_STRING || atoll(s->str) <= now)
                continue;
            ns->readers++;
            if (ns->ids && m->type == REDIS_REPLY_STRING)
                add_id(ns, m->str, m->len);
        }
    }
    /* A lone reader holds K itself (RW_MARK ':' its value), not K:rd. */
    size_t m = strlen(RW_MARK) + 1;
    if (ns->readers >= 0 && ns->state == ST_HELD && ns->value && ns->value_len > m &&
        !memcmp(ns->value, RW_MARK ":", m)) {
        ns->readers++;
        if (ns->ids)
            add_id(ns, ns->value + m, ns->value_len - m);
    }
    if (r[2] && r[2]->type == REDIS_REPLY_INTEGER)
        ns->intent_ms = r[2]->integer;
    if (r[3] && r[3]->type == REDIS_REPLY_INTEGER)
        ns->waiters = r[3]->integer;
    for (int i = 0; i < 4; i++)
        rl_reply_free(r[i]);
}


/* The semaphore beside key: K:limit, then K:s0.. (the library's names,
 * docs/c-api.md), and the waiters' queue K:wq. Read after GET/PTTL on the
 * same connection; errors leave the node a plain lock. */
static void probe_semaphore(redisContext *ctx, const char *key, size_t key_len, node_state *ns)
{
    char err[128];
    redisReply *lim = NULL, *wq = NULL;
    redisAppendCommand(ctx, "GET %b:limit", key, key_len);
    redisAppendCommand(ctx, "ZCARD %b:wq", key, key_len);
    if (cli_read_reply(ctx, &lim, err, sizeof err) || cli_read_reply(ctx, &wq, err, sizeof err)) {
        rl_reply_free(lim);
        rl_reply_free(wq);
        return;
    }
    long limit = 0;
    if (lim->type == REDIS_REPLY_STRING && cli_parse_long(lim->str, 1, REDLOCK_MAX_SEM_LIMIT, &limit) == 0) {
        ns->waiters = wq->type == REDIS_REPLY_INTEGER ? wq->integer : 0;
        ns->slot = calloc((size_t)limit, 1);
        if (ns->slot) {
            for (long i = 0; i < limit; i++)
                redisAppendCommand(ctx, "EXISTS %b:s%ld", key, key_len, i);
            ns->sem_limit = limit;
            for (long i = 0; i < limit; i++) {
                redisReply *e = NULL;
                if (cli_read_reply(ctx, &e, err, sizeof err)) {
                    ns->sem_limit = 0;   /* the connection failed: nothing more to read */
                    break;
                }
                ns->slot[i] = e->type == REDIS_REPLY_INTEGER && e->integer == 1;
                ns->held += ns->slot[i];
                rl_reply_free(e);
            }
        }
    }
    rl_reply_free(lim);
    rl_reply_free(wq);
}

void status_probe(const cli_common *common, const char *url, const char *key, size_t key_len, int64_t timeout_ms,
                  node_state *ns)
{
    rl_endpoint ep;
    char err[512];
    ns->ttl_ms = -2;
    if (cli_endpoint_parse(url, &ep, err, sizeof err)) {
        /* Reported before probing; not reached. */
        ns->state = ST_ERROR;
        snprintf(ns->error, sizeof ns->error, "%s", err);
        rl_endpoint_clear(&ep);
        return;
    }
    snprintf(ns->url, sizeof ns->url, "%s", ep.display);
    /* Hardens ctx's reader: it must outlive ctx, freed below. */
    rl_reply_guard guard = RL_REPLY_GUARD_INSPECT;
    int fail;
    redisContext *ctx = cli_connect(common, &ep, timeout_ms, &guard, err, sizeof err, &fail);
    rl_endpoint_clear(&ep);
    if (!ctx) {
        ns->state = ST_ERROR;
        snprintf(ns->error, sizeof ns->error, "%s", err);
        return;
    }
    /* GET and PTTL pipelined: one round trip, read back to back. */
    redisAppendCommand(ctx, "GET %b", key, key_len);
    redisAppendCommand(ctx, "PTTL %b", key, key_len);
    redisReply *get = NULL, *pttl = NULL;
    if (cli_read_reply(ctx, &get, ns->error, sizeof ns->error) ||
        cli_read_reply(ctx, &pttl, ns->error, sizeof ns->error)) {
        ns->state = ST_ERROR;
    } else if (get->type == REDIS_REPLY_ERROR) {
        ns->state = ST_ERROR;
        snprintf(ns->error, sizeof ns->error, "GET: %.*s", (int)get->len, get->str);
    } else if (get->type == REDIS_REPLY_NIL) {
        ns->state = ST_FREE;
    } else if (get->type == REDIS_REPLY_STRING && pttl->type != REDIS_REPLY_INTEGER) {
        ns->state = ST_ERROR;
        snprintf(ns->error, sizeof ns->error, "unexpected reply type %d to PTTL (not a Redis server?)", pttl->type);
    } else if (get->type == REDIS_REPLY_STRING) {
        ns->state = ST_HELD;
        ns->value = malloc(get->len + 1);
        if (ns->value) {
            memcpy(ns->value, get->str, get->len);
            ns->value[get->len] = '\0';
            ns->value_len = get->len;
        }
        ns->ttl_ms = pttl->integer;
        if (ns->ttl_ms == -2)  /* expired between the two commands */
            ns->state = ST_FREE;
    } else {
        ns->state = ST_ERROR;
        snprintf(ns->error, sizeof ns->error, "unexpected reply type %d to GET (not a Redis server?)", get->type);
    }
    if (ns->state != ST_ERROR)
        probe_semaphore(ctx, key, key_len, ns);
    rl_reply_free(get);
    rl_reply_free(pttl);
    if (ns->state != ST_ERROR)
        probe_rw(ctx, key, key_len, ns);
    redisFree(ctx);
}
