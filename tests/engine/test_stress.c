/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stress.c: many threads on one client, each cycling acquire, extend
 * and release on resources of its own, while engine_driver.py slows, kills
 * or pauses a node. It checks the calls' contract as it goes (an acquire
 * that succeeds holds the lock; a release of a held lock either confirms or
 * says why); the driver then checks that no key is left on any node.
 *   test_stress THREADS CYCLES PREFIX */
#include "../c/testutil.h"

#include <pthread.h>
#include <stdatomic.h>

static redlock_client *client;
static int cycles_per_thread;
static const char *prefix;
static atomic_int acquired, failed_acquire, released, failed_release, extended, bad;

/* Node failures seen through the metrics hook: counted, the first few shown. */
static atomic_int node_errors;
static void on_event(const redlock_event *ev, void *ud)
{
    (void)ud;
    if (ev->type != REDLOCK_EVENT_NODE_ERROR)
        return;
    if (atomic_fetch_add(&node_errors, 1) < 5)
        fprintf(stderr, "node %zu: %s\n", ev->node, ev->message);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    char name[128];
    for (int k = 0; k < cycles_per_thread; k++) {
        redlock_lock *l;
        snprintf(name, sizeof name, "%s-%ld-%d", prefix, id, k);
        if (redlock_lock_new(&l, client, name) != 0) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        int rc = redlock_lock_acquire(l, 30000, 2000);
        if (rc == 0) {
            atomic_fetch_add(&acquired, 1);
            if (!redlock_lock_is_held(l))
                atomic_fetch_add(&bad, 1);
            if (redlock_lock_extend(l, 30000) == 0)
                atomic_fetch_add(&extended, 1);
            rc = redlock_lock_release(l);
            if (rc == 0)
                atomic_fetch_add(&released, 1);
            else
                atomic_fetch_add(&failed_release, 1);
            if (redlock_lock_is_held(l))
                atomic_fetch_add(&bad, 1);
        } else {
            atomic_fetch_add(&failed_acquire, 1);
            if (redlock_lock_is_held(l) || rc == REDLOCK_EINVAL || rc == REDLOCK_ESTATE)
                atomic_fetch_add(&bad, 1);
        }
        redlock_lock_free(l);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test_stress THREADS CYCLES PREFIX\n");
        return 2;
    }
    int threads = atoi(argv[1]), cycles = atoi(argv[2]);
    prefix = argv[3];
    load_nodes();
    t_current = "stress";
    redlock_options o;
    redlock_options_init(&o);
    o.retry_jitter_ms = 20;
    o.node_timeout_ms = 100;
    o.tls_ca_file = getenv("REDLOCK_TEST_CA");
    o.on_event = on_event;   /* the driver's test CA, for rediss:// nodes */
    client = make_client(t_nurls, &o);
    cycles_per_thread = (cycles + threads - 1) / threads;
    pthread_t th[256];
    if (threads > 256)
        threads = 256;
    for (long t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    /* Closing the client reads what connections still owe. */
    redlock_client_free(client);
    printf("stress %s: %d threads, %d cycles: acquired %d (failed %d), extended %d, released %d (failed %d), "
           "node errors %d, contract violations %d\n",
           prefix, threads, cycles_per_thread * threads, atomic_load(&acquired), atomic_load(&failed_acquire),
           atomic_load(&extended), atomic_load(&released), atomic_load(&failed_release), atomic_load(&node_errors),
           atomic_load(&bad));
    CHECK(atomic_load(&bad) == 0);
    CHECK(atomic_load(&acquired) > 0);
    return finish_tests();
}
