/* SPDX-License-Identifier: BSD-3-Clause */
/* test_conns.c: one client, 1, 8 and 64 threads cycling locks: the nodes
 * see one connection from it each, whatever the thread count (connections
 * are multiplexed, docs/design.md); then 16 threads waiting for one
 * resource with wake-up on: one more each (the listener), however many wait and
 * however often. Counted on the nodes with CLIENT LIST. */
#include "../c/testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <hiredis/hiredis.h>

static redlock_client *client;
static atomic_int failures, serial;

static void *worker(void *arg)
{
    (void)arg;
    char name[64];
    for (int k = 0; k < 50; k++) {
        redlock_lock *l;
        snprintf(name, sizeof name, "conns-%d-%d", (int)getpid(), atomic_fetch_add(&serial, 1));
        if (redlock_acquire(&l, client, name, 10000) != 0) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (redlock_lock_release(l) != 0)
            atomic_fetch_add(&failures, 1);
        redlock_lock_free(l);
    }
    return NULL;
}

/* Connections node i has, not counting the one asking. */
static int connections(size_t i)
{
    const char *url = t_urls[i];
    const char *hostport = strstr(url, "://");
    char host[128];
    int port = 0;
    if (!hostport || sscanf(hostport + 3, "%127[^:]:%d", host, &port) != 2)
        return -1;
    redisContext *c = redisConnect(host, port);
    if (!c || c->err)
        return -1;
    redisReply *r = redisCommand(c, "CLIENT LIST");
    int n = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        n = 0;
        for (const char *p = r->str; (p = strchr(p, '\n')); p++)
            n++;
        n -= 1;
    }
    freeReplyObject(r);
    redisFree(c);
    return n;
}

static const char *contended;

/* Waits for the one resource, holds it briefly, releases: 20 times. */
static void *waiter(void *arg)
{
    (void)arg;
    for (int k = 0; k < 20; k++) {
        redlock_lock *l;
        if (redlock_lock_new(&l, client, contended) != 0) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (redlock_lock_acquire(l, 10000, 30000) != 0 || redlock_lock_release(l) != 0)
            atomic_fetch_add(&failures, 1);
        redlock_lock_free(l);
    }
    return NULL;
}

int main(void)
{
    load_nodes();
    t_current = "connections";
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_WAKE;   /* the waiters below listen: wake-up is opt-in */
    client = make_client(t_nurls, &o);
    static const int counts[] = { 1, 8, 64 };
    for (size_t k = 0; k < 3; k++) {
        pthread_t th[64];
        for (int t = 0; t < counts[k]; t++)
            pthread_create(&th[t], NULL, worker, NULL);
        for (int t = 0; t < counts[k]; t++)
            pthread_join(th[t], NULL);
        printf("%2d threads:", counts[k]);
        for (size_t i = 0; i < t_nurls; i++) {
            int n = connections(i);
            printf(" node %zu: %d connection%s;", i, n, n == 1 ? "" : "s");
            CHECK(n == 1);
        }
        printf("\n");
    }
    CHECK(atomic_load(&failures) == 0);

    contended = uniq("conns-contended");
    pthread_t th[16];
    for (int t = 0; t < 16; t++)
        pthread_create(&th[t], NULL, waiter, NULL);
    for (int t = 0; t < 16; t++)
        pthread_join(th[t], NULL);
    printf("16 waiters:");
    for (size_t i = 0; i < t_nurls; i++) {
        int n = connections(i);
        char msg[128];
        int st = redlock_client_listener_state(client, i, msg, sizeof msg);
        printf(" node %zu: %d connections, listener %d%s%s;", i, n, st, msg[0] ? " " : "", msg);
        CHECK(n == 2);
        CHECK(st == REDLOCK_LISTENER_READY);
    }
    printf("\n");
    CHECK(atomic_load(&failures) == 0);
    redlock_client_free(client);
    return finish_tests();
}
