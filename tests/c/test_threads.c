/* test_threads.c: many threads share one client. Mutual exclusion holds on
 * a contended resource (an unguarded read-modify-write loses no update),
 * and uncontended locks on distinct keys all succeed. Run under TSan too. */
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define THREADS 8
#define CONTENDED_ROUNDS 25
#define DISTINCT_ROUNDS 200

static redlock_client *shared;
static const char *contended;
static atomic_int holders, max_holders, failures;
static atomic_long counter;  /* atomic only so that TSan sees no race;
                                the update below is deliberately not atomic */

static void *contend(void *arg)
{
    (void)arg;
    redlock_lock *l;
    if (redlock_lock_new(&l, shared, contended) != 0) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    for (int i = 0; i < CONTENDED_ROUNDS; i++) {
        int rc = redlock_lock_acquire(l, 10000, 60000);
        if (rc != 0) {
            fprintf(stderr, "acquire: %s: %s\n", redlock_error_name(rc), redlock_lock_errmsg(l));
            atomic_fetch_add(&failures, 1);
            continue;
        }
        int h = atomic_fetch_add(&holders, 1) + 1;
        if (h > atomic_load(&max_holders))
            atomic_store(&max_holders, h);
        long v = atomic_load(&counter);
        usleep(200);
        atomic_store(&counter, v + 1);
        atomic_fetch_sub(&holders, 1);
        if (redlock_release(l) != 0)
            atomic_fetch_add(&failures, 1);
    }
    redlock_lock_free(l);
    return NULL;
}

static void *distinct(void *arg)
{
    char name[64];
    for (int i = 0; i < DISTINCT_ROUNDS; i++) {
        redlock_lock *l;
        snprintf(name, sizeof name, "distinct-%ld-%d", (long)(intptr_t)arg, i);
        if (redlock_try_acquire(shared, name, 10000, &l) != 0) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (redlock_release(l) != 0)
            atomic_fetch_add(&failures, 1);
        redlock_lock_free(l);
    }
    return NULL;
}

static void run_threads(void *(*fn)(void *))
{
    pthread_t th[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, fn, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
}

static void test_contended(void)
{
    contended = uniq("contended");
    run_threads(contend);
    CHECK(atomic_load(&failures) == 0);
    CHECK(atomic_load(&max_holders) == 1);
    CHECK(atomic_load(&counter) == THREADS * CONTENDED_ROUNDS);
}

static void test_distinct(void)
{
    atomic_store(&failures, 0);
    run_threads(distinct);
    CHECK(atomic_load(&failures) == 0);
    long long left = keys_on(t_nurls);
    CHECK(left == 0);
    if (left) {
        for (size_t i = 0; i < t_nurls; i++) {
            char out[4096];
            ctl(out, sizeof out, "cmd %zu KEYS '*'", i);
            fprintf(stderr, "node %zu keys: %s\n", i, out);
        }
    }
}

int main(void)
{
    load_nodes();
    redlock_options o;
    redlock_options_init(&o);
    o.retry_jitter_ms = 5;   /* contenders retry quickly */
    o.node_timeout_ms = 2000; /* sanitizer builds are slow */
    shared = make_client(t_nurls, &o);
    run_test("contended", test_contended);
    run_test("distinct", test_distinct);
    redlock_client_free(shared);
    return finish_tests();
}
