/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wake_idle.c: a release decided at quorum reaches every node, and
 * wakes a waiter in another client, while the releasing client makes no
 * further call (issue 37). Node 4 is paused (SIGSTOP, through the harness)
 * across the release, so the release is decided without it, and its script
 * cache was flushed, so what the release sent it comes back NOSCRIPT and
 * must be sent again as EVAL: only the releasing client's engine can do
 * that, on its own, while the releasing thread sleeps. The waiter (another
 * client, on its own thread) takes the lock when woken and gives it back at
 * once; then the key must be gone from every node, node 4 included, within
 * the bound of the release returning. Twice: a client whose helper thread
 * has never run (it never waited), and one whose helper already runs. Runs
 * under tests/harness/nodes.py exec --count 5. REDLOCK_WAKE_IDLE_BOUND_MS
 * sets the bound (50 ms; 4x under sanitizers). */
#include "../c/testutil.h"
#include "nodeutil.h"

#include <pthread.h>
#include <stdatomic.h>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SLOW_BUILD 4
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SLOW_BUILD 4
#endif
#endif
#ifndef SLOW_BUILD
#define SLOW_BUILD 1
#endif

#define SLOW 4   /* the node paused across the release */

static double bound_ms;

typedef struct waiter {
    redlock_client *client;
    const char *res;
    _Atomic int rc_acquire, rc_release;
    _Atomic double acquired_ms, released_ms;
} waiter;

static void *wait_then_release(void *arg)
{
    waiter *w = arg;
    redlock_lock *l;
    if (redlock_lock_new(&l, w->client, w->res) != 0) {
        atomic_store(&w->rc_acquire, -1);
        return NULL;
    }
    int rc = redlock_lock_acquire(l, 30000, 10000);
    atomic_store(&w->acquired_ms, now_ms());
    atomic_store(&w->rc_acquire, rc);
    if (rc == 0) {
        atomic_store(&w->rc_release, redlock_lock_release(l));
        atomic_store(&w->released_ms, now_ms());
    }
    redlock_lock_free(l);
    return NULL;
}

static redlock_client *wake_client(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.flags = REDLOCK_OPT_WAKE;
    /* Long: a round decided at quorum never waits for the paused node, and
     * late replies left for a timer would be read only after a second. */
    o.node_timeout_ms = 1000;
    return make_client(5, &o);
}

static int key_gone_everywhere(const char *key)
{
    for (size_t i = 0; i < 5; i++)
        if (node_q(i, "EXISTS %s", key) != 0)
            return 0;
    return 1;
}

/* helper_running: the releasing client has waited before (its helper thread
 * and listeners run); else it never waited and never needed its helper. */
static void release_while_idle(int helper_running)
{
    redlock_client *rc = wake_client(), *wc = wake_client();
    const char *res = uniq("idle"), *warm = uniq("idle-warm");
    redlock_lock *r;
    CHECK_RC(redlock_lock_new(&r, rc, warm), 0);
    /* One cycle first, so that the release goes to every node as EVALSHA
     * (the script was sent on the connection before). */
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    if (helper_running) {
        /* A wait that gives up starts the helper and the listeners. */
        redlock_lock *h;
        CHECK_RC(redlock_lock_new(&h, wc, warm), 0);
        CHECK_LOCK_RC(h, redlock_lock_acquire(h, 30000, REDLOCK_WAIT_NONE), 0);
        CHECK_RC(redlock_lock_acquire(r, 30000, 100), REDLOCK_ETIMEDOUT);
        CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
        redlock_lock_free(h);
    }
    redlock_lock_free(r);
    CHECK_RC(redlock_lock_new(&r, rc, res), 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(5, res));

    waiter w = { .client = wc, .res = res, .rc_acquire = 1000 };
    pthread_t th;
    CHECK(pthread_create(&th, NULL, wait_then_release, &w) == 0);
    /* Registered on every node: each node's release wakes it. */
    for (size_t i = 0; i < 5; i++) {
        double end = now_ms() + 10000;
        while (node_q(i, "ZCARD %s:wq", res) != 1 && now_ms() < end)
            msleep(5);
        CHECK(node_q(i, "ZCARD %s:wq", res) == 1);
    }
    msleep(20);   /* its listeners subscribed before it registered; its wait has begun */

    CHECK(node_q(SLOW, "SCRIPT FLUSH") == 1);
    CHECK(harness("PAUSE %d", SLOW) == 0);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    double released = now_ms();
    CHECK(redlock_lock_node_result(r, SLOW, NULL, NULL, NULL, 0) == REDLOCK_NODE_NOT_WAITED);
    /* From here on, nothing calls the releasing client: this thread only
     * resumes the node and looks at the nodes directly. */
    msleep(5);
    CHECK(harness("RESUME %d", SLOW) == 0);
    double gone = -1;
    while (now_ms() - released < 10 * bound_ms + 2000) {
        if (atomic_load(&w.released_ms) > 0 && key_gone_everywhere(res)) {
            gone = now_ms() - released;
            break;
        }
        msleep(1);
    }
    pthread_join(th, NULL);
    double acq = atomic_load(&w.acquired_ms) - released;
    CHECK_RC(atomic_load(&w.rc_acquire), 0);
    CHECK_RC(atomic_load(&w.rc_release), 0);
    fprintf(stderr, "[%s] waiter acquired %.1f ms after the release returned; key gone from every node after %.1f ms"
            " (bound %.0f ms)\n", t_current, acq, gone, bound_ms);
    CHECK(acq < bound_ms);
    CHECK(gone >= 0 && gone < bound_ms);
    if (gone < 0)
        for (size_t i = 0; i < 5; i++)
            fprintf(stderr, "[%s] node %zu: EXISTS %lld\n", t_current, i, node_q(i, "EXISTS %s", res));
    redlock_lock_free(r);
    redlock_client_free(rc);
    redlock_client_free(wc);
}

static void fresh_client(void)
{
    release_while_idle(0);
}

static void client_with_helper(void)
{
    release_while_idle(1);
}

int main(void)
{
    load_nodes();
    if (t_nurls < 5) {
        fprintf(stderr, "needs 5 nodes\n");
        return 2;
    }
    const char *b = getenv("REDLOCK_WAKE_IDLE_BOUND_MS");
    bound_ms = b && atof(b) > 0 ? atof(b) : 50.0 * SLOW_BUILD;
    run_test("release_idle_fresh_client", fresh_client);
    run_test("release_idle_helper_running", client_with_helper);
    return finish_tests();
}
