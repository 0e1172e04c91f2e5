/* SPDX-License-Identifier: BSD-3-Clause */
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
        if (redlock_lock_release(l) != 0)
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
        if (redlock_try_acquire(&l, shared, name, 10000) != 0) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        if (redlock_lock_release(l) != 0)
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

/* Lock keys on the nodes, not counting the waiters' queue keys and the markers. */
static long long lock_keys_left(void)
{
    long long left = 0;
    for (size_t i = 0; i < t_nurls; i++)
        left += node_int((int)i, "DBSIZE") - node_int((int)i, "EVAL \"return #redis.call('keys', '*:w[qlr]')\" 0") -
                epoch_keys_on((int)i);
    return left;
}

static void test_distinct(void)
{
    atomic_store(&failures, 0);
    run_threads(distinct);
    CHECK(atomic_load(&failures) == 0);
    /* Lock keys only: the waiters' queue (<key>:wq, :wl) is a hint that
     * lapses on its own (docs/algorithm.md), and a registration made on a
     * node whose reply was not waited for can stay until it lapses. */
    /* The last releases were decided at quorum: wait for the ones to the
     * nodes they did not wait for (well within the keys' 10 s TTL). */
    long long left = -1;
    CHECK(EVENTUALLY((left = lock_keys_left()) == 0, 5000, "every release to land"));
    if (left) {
        for (size_t i = 0; i < t_nurls; i++) {
            char out[4096];
            ctl(out, sizeof out, "cmd %zu KEYS '*'", i);
            fprintf(stderr, "node %zu keys: %s\n", i, out);
        }
    }
}

static redlock_lock *waiter;
static atomic_int waiter_rc;

static void *wait_for_lock(void *arg)
{
    (void)arg;
    atomic_store(&waiter_rc, redlock_lock_acquire(waiter, 10000, 60000));
    return NULL;
}

static void test_cancel(void)
{
    const char *res = uniq("cancel");
    redlock_lock *holder;
    CHECK_RC(redlock_try_acquire(&holder, shared, res, 30000), 0);
    CHECK_RC(redlock_lock_new(&waiter, shared, res), 0);

    /* a cancel from another thread ends a long wait */
    pthread_t th;
    pthread_create(&th, NULL, wait_for_lock, NULL);
    msleep(150);
    double t0 = now_ms();
    redlock_lock_cancel(waiter);
    pthread_join(th, NULL);
    CHECK(atomic_load(&waiter_rc) == REDLOCK_ECANCELED);
    CHECK(now_ms() - t0 < 30000);  /* not the 60 s wait */
    CHECK(strstr(redlock_lock_errmsg(waiter), "cancel") != NULL);
    CHECK(!redlock_lock_is_held(waiter));

    /* sticky: a cancel issued before the acquire starts is not lost */
    CHECK_LOCK_RC(waiter, redlock_lock_acquire(waiter, 10000, 60000), REDLOCK_ECANCELED);
    redlock_lock_cancel_reset(waiter);
    CHECK_LOCK_RC(waiter, redlock_lock_acquire(waiter, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_RC(redlock_lock_release(holder), 0);
    CHECK_LOCK_RC(waiter, redlock_lock_acquire(waiter, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_release(waiter), 0);
    redlock_lock_free(waiter);
    redlock_lock_free(holder);
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
    run_test("cancel", test_cancel);
    redlock_client_free(shared);
    return finish_tests();
}
