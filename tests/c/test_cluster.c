/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cluster.c: Redis/Valkey Clusters as Redlock nodes (docs/cluster.md),
 * run under tests/harness/rcluster.py exec: independent clusters of several
 * shards, one redis-cluster:// URL each. Locks on keys over every slot range
 * (so that each node routes to every shard and follows its first MOVEDs),
 * from several threads of one client, with fencing and auto-extension;
 * each node's report names the shard that answered; a slot migrated under a
 * held lock, extended through ASK after the target forgot the script; the
 * function library loaded on every master. Built for the sanitizer runs:
 * the routing (engine/route.c) under ASan, UBSan and TSan. */
#include "testutil.h"

#include <pthread.h>

#include <hiredis/hiredis.h>

#define THREADS 4
#define PER_THREAD 150

static redlock_client *client;
static int thread_failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    int t = (int)(long)arg, bad = 0;
    for (int k = 0; k < PER_THREAD; k++) {
        char name[64];
        snprintf(name, sizeof name, "cl:%d:%d", t, k);
        redlock_lock *lock = NULL;
        if (redlock_lock_new(&lock, client, name) != 0) {
            bad++;
            continue;
        }
        if (redlock_lock_acquire(lock, 5000, 0) != 0 || redlock_lock_fencing_token(lock) == 0 ||
            redlock_lock_extend(lock, 5000) != 0 || redlock_lock_release(lock) != 0)
            bad++;
        redlock_lock_free(lock);
    }
    pthread_mutex_lock(&mu);
    thread_failures += bad;
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void test_threads_over_all_slots(void)
{
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    CHECK(thread_failures == 0);
}

static void test_report_names_a_shard(void)
{
    const char *ports = getenv("REDLOCK_TEST_CLUSTER_PORTS");
    CHECK(ports != NULL);
    int named = 0;
    for (int k = 0; k < 64 && ports; k++) {
        char name[32];
        snprintf(name, sizeof name, "cl:report:%d", k);
        redlock_lock *lock = NULL;
        CHECK_RC(redlock_lock_new(&lock, client, name), 0);
        CHECK_LOCK_RC(lock, redlock_lock_acquire(lock, 5000, 0), 0);
        for (size_t i = 0; i < t_nurls; i++) {
            int code = 0;
            int64_t rtt = 0;
            char msg[256] = "";
            int out = redlock_lock_node_result(lock, i, &code, &rtt, msg, sizeof msg);
            if (out == REDLOCK_NODE_OK) {
                /* "shard 127.0.0.1:<port>", a master port of that cluster */
                const char *p = strstr(msg, "shard 127.0.0.1:");
                CHECK(p != NULL);
                if (p) {
                    char port[16];
                    snprintf(port, sizeof port, "%s", p + 16);
                    CHECK(strstr(ports, port) != NULL);
                    named++;
                }
            }
        }
        CHECK_LOCK_RC(lock, redlock_lock_release(lock), 0);
        redlock_lock_free(lock);
    }
    CHECK(named >= 64 * 2);
}

static void test_auto_extend(void)
{
    redlock_lock *locks[8];
    for (int k = 0; k < 8; k++) {
        char name[32];
        snprintf(name, sizeof name, "cl:ae:%d", k);
        CHECK_RC(redlock_lock_new(&locks[k], client, name), 0);
        CHECK_RC(redlock_lock_acquire(locks[k], 300, 0), 0);
        CHECK_RC(redlock_lock_auto_extend(locks[k], 0, 0, NULL, NULL, NULL), 0);
    }
    struct timespec ts = { 0, 700 * 1000000L };
    nanosleep(&ts, NULL);   /* past two TTLs: only extensions keep them */
    for (int k = 0; k < 8; k++) {
        CHECK(redlock_lock_is_held(locks[k]));
        CHECK_RC(redlock_lock_release(locks[k]), 0);
        redlock_lock_free(locks[k]);
    }
}

/* The master ports of cluster c (REDLOCK_TEST_CLUSTER_PORTS: "p1 p2 p3,p1 p2 p3,..."). */
static int cluster_ports(int c, int *out, int max)
{
    const char *all = getenv("REDLOCK_TEST_CLUSTER_PORTS");
    for (; all && c > 0; c--) {
        all = strchr(all, ',');
        if (all)
            all++;
    }
    int n = 0;
    while (all && *all && *all != ',' && n < max) {
        char *end;
        long p = strtol(all, &end, 10);
        if (end == all)
            break;
        out[n++] = (int)p;
        all = end;
        while (*all == ' ')
            all++;
    }
    return n;
}

static redisReply *admin(int port, const char *fmt, ...)
{
    redisContext *ctx = redisConnect("127.0.0.1", port);
    if (!ctx || ctx->err) {
        redisFree(ctx);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    redisFree(ctx);
    return r;
}

/* The index in ports of the master that owns key's slot (EXISTS answers
 * there; elsewhere MOVED), or -1. */
static int owner_of(const int *ports, int n, const char *key)
{
    for (int k = 0; k < n; k++) {
        redisReply *r = admin(ports[k], "EXISTS %s", key);
        int mine = r && r->type == REDIS_REPLY_INTEGER;
        freeReplyObject(r);
        if (mine)
            return k;
    }
    return -1;
}

static long long admin_int(int port, const char *fmt, const char *arg)
{
    redisReply *r = admin(port, fmt, arg);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v;
}

/* PTTL of key on an importing shard: after ASKING, on one connection. */
static long long asking_pttl(int port, const char *key)
{
    redisContext *ctx = redisConnect("127.0.0.1", port);
    long long v = -3;
    if (ctx && !ctx->err && redisAppendCommand(ctx, "ASKING") == REDIS_OK &&
        redisAppendCommand(ctx, "PTTL %s", key) == REDIS_OK) {
        redisReply *a = NULL, *b = NULL;
        if (redisGetReply(ctx, (void **)&a) == REDIS_OK && redisGetReply(ctx, (void **)&b) == REDIS_OK && b &&
            b->type == REDIS_REPLY_INTEGER)
            v = b->integer;
        freeReplyObject(a);
        freeReplyObject(b);
    }
    redisFree(ctx);
    return v;
}

static int node0_ok_on(redlock_lock *lock, int port)
{
    int code = 0;
    int64_t rtt = 0;
    char msg[256] = "", want[64];
    snprintf(want, sizeof want, "shard 127.0.0.1:%d", port);
    return redlock_lock_node_result(lock, 0, &code, &rtt, msg, sizeof msg) == REDLOCK_NODE_OK && !strcmp(msg, want);
}

static void test_migration_extends_through_ask(void)
{
    int ports[8], n = cluster_ports(0, ports, 8);
    CHECK(n >= 2);
    if (n < 2)
        return;
    const char *key = "{cl:mig}:a";
    int src = owner_of(ports, n, key), dst = (src + 1) % n;
    CHECK(src >= 0);
    if (src < 0)
        return;
    redlock_lock *lock = NULL, *probe = NULL;
    CHECK_RC(redlock_lock_new(&lock, client, key), 0);
    CHECK_LOCK_RC(lock, redlock_lock_acquire(lock, 30000, 0), 0);
    /* The client's connection to dst sends the extension script (a key dst
     * owns), then dst forgets it: the moved key's extension meets NOSCRIPT
     * after ASKING. */
    char other[32];
    for (int k = 0;; k++) {
        snprintf(other, sizeof other, "cl:mig:d%d", k);
        if (owner_of(ports, n, other) == dst)
            break;
    }
    CHECK_RC(redlock_lock_new(&probe, client, other), 0);
    CHECK_LOCK_RC(probe, redlock_lock_acquire(probe, 30000, 0), 0);
    CHECK_LOCK_RC(probe, redlock_lock_extend(probe, 30000), 0);
    CHECK_LOCK_RC(probe, redlock_lock_release(probe), 0);
    redlock_lock_free(probe);

    redisReply *r = admin(ports[src], "CLUSTER KEYSLOT %s", key);
    long long slot = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    char ids[8][64];
    for (int k = 0; k < n; k++) {
        r = admin(ports[k], "CLUSTER MYID");
        snprintf(ids[k], sizeof ids[k], "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "?");
        freeReplyObject(r);
    }
    r = admin(ports[dst], "CLUSTER SETSLOT %lld IMPORTING %s", slot, ids[src]);
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = admin(ports[src], "CLUSTER SETSLOT %lld MIGRATING %s", slot, ids[dst]);
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = admin(ports[src], "MIGRATE 127.0.0.1 %d %s 0 5000 KEYS %s", ports[dst], "", key);
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = admin(ports[dst], "SCRIPT FLUSH");
    freeReplyObject(r);

    /* Through ASK, to the target: node 0 takes two hops where the others
     * take one, so a round is often decided without it; its extension
     * still lands there, as late work the next calls carry on. */
    long long before = asking_pttl(ports[dst], key);
    int ok = 0;
    for (int k = 0; k < 200 && !ok; k++) {
        CHECK_LOCK_RC(lock, redlock_lock_extend(lock, 30000), 0);
        ok = asking_pttl(ports[dst], key) > before;
        if (!ok) {
            struct timespec ts = { 0, 10 * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    CHECK(before > 0 && ok);
    for (int k = 0; k < n; k++) {
        r = admin(ports[k], "CLUSTER SETSLOT %lld NODE %s", slot, ids[dst]);
        freeReplyObject(r);
    }
    /* Each round is decided at quorum, and on a loaded machine node 0 can
     * be the one not waited for many rounds in a row: up to 100, a few ms
     * apart. */
    ok = 0;
    for (int k = 0; k < 100 && !ok; k++) {
        CHECK_LOCK_RC(lock, redlock_lock_extend(lock, 30000), 0);
        ok = node0_ok_on(lock, ports[dst]);   /* the slot handed over: MOVED, then straight there */
        if (!ok) {
            struct timespec ts = { 0, 5 * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    CHECK(ok);
    CHECK(admin_int(ports[dst], "PTTL %s", key) > 20000);
    CHECK_LOCK_RC(lock, redlock_lock_release(lock), 0);
    /* A release decided at quorum may leave node 0's DEL in flight. */
    CHECK(EVENTUALLY(admin_int(ports[dst], "EXISTS %s", key) == 0, 5000, "the key gone from the target"));
    redlock_lock_free(lock);
}

static void test_functions_on_every_master(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.flags |= REDLOCK_OPT_FUNCTIONS | REDLOCK_OPT_FENCING;
    o.node_timeout_ms = 1000;
    redlock_client *fc = NULL;
    char err[1024];
    CHECK_RC(redlock_client_open(&fc, (const char *const *)t_urls, t_nurls, &o, err, sizeof err), 0);
    if (!fc)
        return;
    int rc = redlock_client_load_functions(fc, err, sizeof err);
    CHECK_RC(rc, 0);
    if (rc)
        fprintf(stderr, "load_functions: %s\n", err);
    for (int c = 0; c < (int)t_nurls; c++) {
        int ports[8], n = cluster_ports(c, ports, 8);
        for (int k = 0; k < n; k++) {
            redisReply *r = admin(ports[k], "FUNCTION LIST LIBRARYNAME redlock");
            CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
            freeReplyObject(r);
        }
    }
    for (int k = 0; k < 30; k++) {
        char name[32];
        snprintf(name, sizeof name, "cl:fn:%d", k);
        redlock_lock *lock = NULL;
        CHECK_RC(redlock_lock_new(&lock, fc, name), 0);
        CHECK_LOCK_RC(lock, redlock_lock_acquire(lock, 5000, 0), 0);
        CHECK_LOCK_RC(lock, redlock_lock_extend(lock, 5000), 0);
        CHECK_LOCK_RC(lock, redlock_lock_release(lock), 0);
        redlock_lock_free(lock);
    }
    redlock_client_free(fc);
}

int main(void)
{
    load_nodes();
    redlock_options o;
    redlock_options_init(&o);
    o.flags |= REDLOCK_OPT_FENCING;
    o.node_timeout_ms = 1000;
    char err[256];
    if (redlock_client_open(&client, (const char *const *)t_urls, t_nurls, &o, err, sizeof err) != 0) {
        fprintf(stderr, "client: %s\n", err);
        return 1;
    }
    run_test("threads_over_all_slots", test_threads_over_all_slots);
    run_test("report_names_a_shard", test_report_names_a_shard);
    run_test("auto_extend", test_auto_extend);
    run_test("migration_extends_through_ask", test_migration_extends_through_ask);
    run_test("functions_on_every_master", test_functions_on_every_master);
    redlock_client_free(client);
    return finish_tests();
}
