/* SPDX-License-Identifier: BSD-3-Clause */
/* status_probe.c: what 'redlock status' reads of one node, over hiredis:
 * the key's value and PTTL, a read-write lock's live readers and a waiting
 * writer's intent, a semaphore's limit and slots, and the waiters' queue.
 * A cluster node is read on the shard of the key's slot, reached as the
 * library reaches it. Reads only. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth_fix.h"
#include "lib_private.h"
#include "status.h"

/* The library's own routing of a redis-cluster:// node (lib_private.h), so
 * that status follows a redirect exactly as a lock client does (the
 * MOVED/ASK grammar, "MOVED 42 :7001", members known by hostname and ip,
 * the URL's other seeds), and names the keys beside K as the library does. */

#define MAX_REDIRECTS 5

static const rl_endpoint *endpoint_of(redlock_client *router, size_t j)
{
    return (const rl_endpoint *)(const void *)rl_nodeat(router, j);
}

/* The connection being read. After an ASK redirect (a slot that migrates)
 * each command goes after its own ASKING, whose +OK is read and dropped. */
typedef struct pconn {
    redisContext *ctx;
    int asking;
    int cluster;               /* the keys beside K are named for a cluster node */
} pconn;

static void p_append(pconn *pc, const char *fmt, ...)
{
    va_list ap;
    if (pc->asking)
        redisAppendCommand(pc->ctx, "ASKING");
    va_start(ap, fmt);
    redisvAppendCommand(pc->ctx, fmt, ap);
    va_end(ap);
}

static int p_read(pconn *pc, redisReply **out, char *err, size_t errsize)
{
    if (pc->asking) {
        redisReply *ok = NULL;
        int rc = cli_read_reply(pc->ctx, &ok, err, errsize);
        rl_reply_free(ok);
        if (rc) {
            *out = NULL;
            return rc;
        }
    }
    return cli_read_reply(pc->ctx, out, err, errsize);
}

/* K and a suffix, as the library names the keys of the read-write lock and
 * of the waiters' queue beside K: "{K}suffix" on a cluster node when K has
 * no hash tag (engine/proto.c), so that they share K's slot. NULL when out
 * of memory. */
static char *aux_key(const pconn *pc, const char *key, size_t key_len, const char *suffix, size_t *len)
{
    size_t st, tl, sl = strlen(suffix);
    int wrap = pc->cluster && !rl_key_tag(key, key_len, &st, &tl);
    char *k = malloc(key_len + sl + 3), *p = k;
    if (!k)
        return NULL;
    if (wrap)
        *p++ = '{';
    memcpy(p, key, key_len);
    p += key_len;
    if (wrap)
        *p++ = '}';
    memcpy(p, suffix, sl + 1);
    *len = (size_t)(p - k) + sl;
    return k;
}

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

/* Readers, intent and waiters of node i, on pc after GET and PTTL (a node
 * whose ACL refuses these still shows the key: they are then -1). */
static void probe_rw(pconn *pc, const char *key, size_t key_len, node_state *ns)
{
    static const char *const suffix[3] = { RL_KEY_READERS, RL_KEY_INTENT, RL_KEY_QUEUE };
    char *k[3];
    size_t len[3];
    ns->readers = ns->intent_ms = ns->waiters = -1;
    for (int i = 0; i < 3; i++)
        k[i] = aux_key(pc, key, key_len, suffix[i], &len[i]);
    if (!k[0] || !k[1] || !k[2]) {
        for (int i = 0; i < 3; i++)
            free(k[i]);
        return;
    }
    p_append(pc, "TIME");
    p_append(pc, "ZRANGE %b 0 -1 WITHSCORES", k[0], len[0]);
    p_append(pc, "PTTL %b", k[1], len[1]);
    p_append(pc, "GET %b", k[1], len[1]);
    p_append(pc, "ZCARD %b", k[2], len[2]);
    for (int i = 0; i < 3; i++)
        free(k[i]);
    redisReply *r[5] = { NULL, NULL, NULL, NULL, NULL };
    char err[256];
    for (int i = 0; i < 5; i++)
        if (p_read(pc, &r[i], err, sizeof err))
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
    /* A registered writer's intent is its registration, "id:n"; an
     * unregistered one's is its value, which has no ':' (scripts.c). */
    if (r[3] && r[3]->type == REDIS_REPLY_STRING)
        ns->intent_queued = memchr(r[3]->str, ':', r[3]->len) != NULL;
    if (r[4] && r[4]->type == REDIS_REPLY_INTEGER)
        ns->waiters = r[4]->integer;
    for (int i = 0; i < 5; i++)
        rl_reply_free(r[i]);
}


/* The semaphore beside key: K:limit, then K:s0.. (the library's names,
 * docs/c-api.md; on a cluster node K has a hash tag, so they share its
 * slot), and the waiters' queue K:wq. Read after GET/PTTL on the same
 * connection; errors leave the node a plain lock. */
static void probe_semaphore(pconn *pc, const char *key, size_t key_len, node_state *ns)
{
    char err[128];
    redisReply *lim = NULL, *wq = NULL;
    size_t wql;
    char *wqk = aux_key(pc, key, key_len, RL_KEY_QUEUE, &wql);
    if (!wqk)
        return;
    p_append(pc, "GET %b" RL_KEY_SEM_SEP RL_KEY_SEM_LIMIT, key, key_len);
    p_append(pc, "ZCARD %b", wqk, wql);
    free(wqk);
    if (p_read(pc, &lim, err, sizeof err) || p_read(pc, &wq, err, sizeof err)) {
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
                p_append(pc, "EXISTS %b" RL_KEY_SEM_SEP RL_KEY_SEM_SLOT "%ld", key, key_len, i);
            ns->sem_limit = limit;
            for (long i = 0; i < limit; i++) {
                redisReply *e = NULL;
                if (p_read(pc, &e, err, sizeof err)) {
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

/* What the node said (its final '.' dropped), then the fix: the error of
 * a node that refuses the client. */
static void auth_error(char *out, size_t size, const char *said, size_t len, const char *fix)
{
    if (len && said[len - 1] == '.')
        len--;
    snprintf(out, size, "%.*s; %s", (int)(len < 300 ? len : 300), said, fix);
}

/* The reason a connection failed into out, with the fix when the node
 * refused the URL's password. */
static void connect_error(char *out, size_t size, const char *err, int fail)
{
    if (fail == CLI_FAIL_AUTH)
        auth_error(out, size, err, strlen(err), cli_auth_fix(err));
    else
        snprintf(out, size, "%s", err);
}

/* A cluster node's router: a client of the library over that one URL,
 * never connected, whose route.c data says where each redirect leads (the
 * connection index to open, with the seed's credentials and TLS). NULL
 * when the library cannot make one: redirects are then errors. */
static redlock_client *make_router(const char *url)
{
    redlock_client *router = NULL;
    if (redlock_client_new(&router, &url, 1, NULL) != 0)
        return NULL;
    return router;
}

/* Connects to the first seed of node i that answers, on the router's
 * connection index *j: the context, or NULL with the first failure in ns. */
static redisContext *connect_seed(const cli_common *common, redlock_client *router, const rl_endpoint *ep,
                                  int64_t timeout_ms, rl_reply_guard *guard, size_t *j, node_state *ns)
{
    char err[512], first[512] = "";
    int fail, first_fail = 0;
    for (size_t k = 0;; k++) {
        size_t at = router ? rl_route_seed(router, 0, k) : k == 0 ? 0 : SIZE_MAX;
        if (at == SIZE_MAX)
            break;
        *guard = (rl_reply_guard)RL_REPLY_GUARD_INSPECT;
        redisContext *ctx = cli_connect(common, router ? endpoint_of(router, at) : ep, timeout_ms, guard, err,
                                        sizeof err, &fail);
        if (ctx) {
            *j = at;
            return ctx;
        }
        if (!first[0]) {
            snprintf(first, sizeof first, "%s", err);
            first_fail = fail;
        }
        if (fail == CLI_FAIL_AUTH)
            break;   /* every seed has the same credentials */
    }
    ns->state = ST_ERROR;
    connect_error(ns->error, sizeof ns->error, first, first_fail);
    return NULL;
}

/* The quarantine's keys of the client's prefix (the first prefix_len bytes
 * of key; c/src/epoch.c): the marker, and whether the node is out of the
 * vote, why and for how long. On a set with a cluster node, the key's
 * slot's marker, which lives on the shard that owns the key. */
static void probe_quarantine(pconn *pc, const char *key, size_t key_len, size_t prefix_len, int per_slot,
                             node_state *ns)
{
    char err[128], mkey[1100];
    redisReply *m = NULL, *q = NULL, *t = NULL;
    if (per_slot) {
        char tag[32];
        if (rl_cluster_slot_tag(rl_keyslot(key, key_len), tag, sizeof tag) < 0)
            return;
        snprintf(mkey, sizeof mkey, "%.*s{%s}", (int)prefix_len, key, tag);
    } else {
        snprintf(mkey, sizeof mkey, "%.*s" RL_KEY_EPOCH, (int)prefix_len, key);
    }
    p_append(pc, "EXISTS %s", mkey);
    p_append(pc, "GET %s" RL_KEY_QUARANTINE, mkey);
    p_append(pc, "PTTL %s" RL_KEY_QUARANTINE, mkey);
    if (!p_read(pc, &m, err, sizeof err) && !p_read(pc, &q, err, sizeof err) && !p_read(pc, &t, err, sizeof err) &&
        m->type == REDIS_REPLY_INTEGER && t->type == REDIS_REPLY_INTEGER) {
        ns->marker = m->integer == 1;
        ns->quarantine_ms = t->integer > 0 ? t->integer : 0;
        if (ns->quarantine_ms && q->type == REDIS_REPLY_STRING) {
            const char *why = memchr(q->str, ' ', q->len);   /* "<until> <why>" */
            why = why ? why + 1 : q->str;
            snprintf(ns->quarantine_why, sizeof ns->quarantine_why, "%.*s", (int)(q->len - (size_t)(why - q->str)), why);
        }
    }
    rl_reply_free(m);
    rl_reply_free(q);
    rl_reply_free(t);
}

void status_probe(const cli_common *common, const char *url, const char *key, size_t key_len, size_t prefix_len,
                  int per_slot, int64_t timeout_ms, node_state *ns)
{
    ns->marker = -1;
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
    redlock_client *router = ep.cluster ? make_router(url) : NULL;
    pconn pc = { NULL, 0, ep.cluster };
    /* Hardens ctx's reader: it must outlive ctx, freed below. */
    rl_reply_guard guard;
    size_t j = 0;
    pc.ctx = connect_seed(common, router, &ep, timeout_ms, &guard, &j, ns);
    rl_endpoint_clear(&ep);
    redisReply *get = NULL, *pttl = NULL;
    for (int hops = 0; pc.ctx; hops++) {
        /* GET and PTTL pipelined: one round trip, read back to back. */
        p_append(&pc, "GET %b", key, key_len);
        p_append(&pc, "PTTL %b", key, key_len);
        if (p_read(&pc, &get, ns->error, sizeof ns->error) || p_read(&pc, &pttl, ns->error, sizeof ns->error)) {
            ns->state = ST_ERROR;
            break;
        }
        size_t to;
        int ask = 0;
        if (!router || get->type != REDIS_REPLY_ERROR || hops == MAX_REDIRECTS ||
            !rl_route_redirect(router, j, get, &to, &ask))
            break;
        /* The key's slot is another shard's (MOVED), or moves there (ASK). */
        rl_reply_free(get);
        rl_reply_free(pttl);
        get = pttl = NULL;
        redisFree(pc.ctx);
        guard = (rl_reply_guard)RL_REPLY_GUARD_INSPECT;
        int fail;
        const rl_endpoint *shard = endpoint_of(router, to);
        pc.ctx = cli_connect(common, shard, timeout_ms, &guard, err, sizeof err, &fail);
        pc.asking = ask;
        j = to;
        if (!pc.ctx) {
            char why[512];
            connect_error(why, sizeof why, err, fail);
            ns->state = ST_ERROR;
            snprintf(ns->error, sizeof ns->error, "the key's shard %.100s: %.380s",
                     shard->display ? shard->display : "?", why);
        }
    }
    if (!pc.ctx || ns->state == ST_ERROR) {
        /* a connection that failed: ns->error says why */
    } else if (get->type == REDIS_REPLY_ERROR && cli_is_noauth(get->str)) {
        ns->state = ST_ERROR;
        auth_error(ns->error, sizeof ns->error, get->str, get->len, CLI_FIX_NOAUTH);
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
    rl_reply_free(get);
    rl_reply_free(pttl);
    if (ns->state != ST_ERROR)
        probe_semaphore(&pc, key, key_len, ns);
    if (ns->state != ST_ERROR)
        probe_rw(&pc, key, key_len, ns);
    if (ns->state != ST_ERROR)
        probe_quarantine(&pc, key, key_len, prefix_len, per_slot, ns);
    if (pc.ctx)
        redisFree(pc.ctx);
    if (router)
        redlock_client_free(router);
}
