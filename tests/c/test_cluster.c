/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cluster.c: Redis/Valkey Clusters as Redlock nodes (docs/cluster.md),
 * run under tests/harness/rcluster.py exec: independent clusters of several
 * shards, one redis-cluster:// URL each. Locks on keys over every slot range
 * (so that each node routes to every shard and follows its first MOVEDs),
 * from several threads of one client, with fencing and auto-extension;
 * each node's report names the shard that answered. Built for the sanitizer
 * runs: the routing (engine/route.c) under ASan, UBSan and TSan. */
#include "testutil.h"

#include <pthread.h>

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
            redlock_extend(lock, 5000) != 0 || redlock_release(lock) != 0)
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
        CHECK_LOCK_RC(lock, redlock_release(lock), 0);
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
        CHECK_RC(redlock_lock_auto_extend(locks[k], 0, NULL, NULL), 0);
    }
    struct timespec ts = { 0, 700 * 1000000L };
    nanosleep(&ts, NULL);   /* past two TTLs: only extensions keep them */
    for (int k = 0; k < 8; k++) {
        CHECK(redlock_lock_is_held(locks[k]));
        CHECK_RC(redlock_release(locks[k]), 0);
        redlock_lock_free(locks[k]);
    }
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
    redlock_client_free(client);
    return finish_tests();
}
