/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wake_garbage.c: the waiters' queue leaves nothing behind (issue 22;
 * docs/algorithm.md, "Waking waiters", "What is left on the nodes"):
 * - REDLOCK_GARBAGE_RESOURCES distinct resources (10,000 here, 100,000 in
 *   'make stress'), each held by one client while a waiter of another
 *   client registers, then released, which wakes the waiter: no key left;
 * - a waiter killed with SIGKILL while registered: its registration and the
 *   queue's keys expire within one lease of its last renewal, and at once
 *   when a release finds that nobody listens for it any more;
 * - a waiter whose leave a stopped node missed: the same bound;
 * - a stale registration of a live client (its leave lost): cleared by
 *   that client on the first message it gets for it.
 * Runs under tests/harness/nodes.py exec --count 5; node i is t_urls[i]. */
#include "../c/testutil.h"
#include "nodeutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

/* The lease of a registration with the default options (policy.c:
 * 3 x RL_POLICY_WAKE_POLL_MAX_MS): the queue's keys never live longer. */
#define LEASE_MS 15000

static redlock_client *client_with(redlock_event_fn fn, void *ud)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;   /* a loaded machine, or sanitizers: no spurious timeouts */
    o.flags = REDLOCK_OPT_WAKE;  /* the queue is wake-up's, which is opt-in */
    o.on_event = fn;
    o.on_event_userdata = ud;
    return make_client(5, &o);
}

static long long queue_keys_on(size_t i, const char *key)
{
    return node_q(i, "EXISTS %s:wq %s:wl", key, key);
}

/* ---- 1. many resources, each contended once ---- */

enum { PAIRS = 8 };

typedef struct pair {
    pthread_t holder, waiter;
    size_t first, count;            /* its slice of the resources */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t go;                      /* resources the holder has taken, for the waiter */
    _Atomic(const redlock_lock *) waiting; /* the waiter's handle while it waits */
    atomic_int registered;          /* its registering attempt was refused: it is queued */
    size_t contended, failures;
} pair;

static pair pairs[PAIRS];
static redlock_client *holders, *waiters;
static char run_id[32];

static void resource_name(size_t k, char *out, size_t size)
{
    snprintf(out, size, "garbage-%s-%zu", run_id, k);
}

/* The waiters' client: a refused attempt after the first (the first is a
 * plain SET) is the one that registered. */
static void on_waiter_event(const redlock_event *ev, void *ud)
{
    (void)ud;
    if (ev->type != REDLOCK_EVENT_ACQUIRE_FAILED || ev->code != REDLOCK_ENOTACQUIRED || ev->attempt < 2)
        return;
    for (int p = 0; p < PAIRS; p++)
        if (atomic_load(&pairs[p].waiting) == ev->lock)
            atomic_store(&pairs[p].registered, 1);
}

static void *holder_main(void *arg)
{
    pair *p = arg;
    char name[96];
    for (size_t k = 0; k < p->count; k++) {
        resource_name(p->first + k, name, sizeof name);
        redlock_lock *l;
        if (redlock_lock_new(&l, holders, name) || redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE)) {
            p->failures++;
            fprintf(stderr, "holder: %s: %s\n", name, redlock_lock_errmsg(l));
            redlock_lock_free(l);
            continue;
        }
        atomic_store(&p->registered, 0);
        pthread_mutex_lock(&p->mu);
        p->go = k + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        /* The waiter is queued once its registering attempt was refused;
         * the bound only keeps a hung test finite. */
        double end = now_ms() + 30000;
        while (!atomic_load(&p->registered) && now_ms() < end)
            usleep(100);
        if (atomic_load(&p->registered))
            p->contended++;
        if (redlock_lock_release(l) != 0) {
            p->failures++;
            fprintf(stderr, "holder release: %s: %s\n", name, redlock_lock_errmsg(l));
        }
        redlock_lock_free(l);
        /* The next resource only once the waiter is done with this one. */
        pthread_mutex_lock(&p->mu);
        while (p->go != 0)
            pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static void *waiter_main(void *arg)
{
    pair *p = arg;
    char name[96];
    for (size_t k = 0; k < p->count; k++) {
        pthread_mutex_lock(&p->mu);
        while (p->go != k + 1)
            pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
        resource_name(p->first + k, name, sizeof name);
        redlock_lock *l;
        if (redlock_lock_new(&l, waiters, name) == 0) {
            atomic_store(&p->waiting, l);
            int rc = redlock_lock_acquire(l, 10000, 30000);
            atomic_store(&p->waiting, NULL);
            if (rc != 0 || redlock_lock_release(l) != 0) {
                p->failures++;
                fprintf(stderr, "waiter: %s: %s\n", name, redlock_lock_errmsg(l));
            }
            redlock_lock_free(l);
        } else {
            p->failures++;
        }
        pthread_mutex_lock(&p->mu);
        p->go = 0;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static void test_many_resources(void)
{
    const char *env = getenv("REDLOCK_GARBAGE_RESOURCES");
    size_t total = env ? (size_t)strtoull(env, NULL, 10) : 10000;
    if (total < PAIRS)
        total = PAIRS;
    snprintf(run_id, sizeof run_id, "%d", (int)getpid());
    long long before = keys_on(5);
    holders = client_with(NULL, NULL);
    waiters = client_with(on_waiter_event, NULL);
    double t0 = now_ms();
    for (int i = 0; i < PAIRS; i++) {
        pair *p = &pairs[i];
        memset(p, 0, sizeof *p);
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv, NULL);
        p->first = total / PAIRS * (size_t)i;
        p->count = i == PAIRS - 1 ? total - p->first : total / PAIRS;
        pthread_create(&p->holder, NULL, holder_main, p);
        pthread_create(&p->waiter, NULL, waiter_main, p);
    }
    size_t contended = 0, failures = 0;
    for (int i = 0; i < PAIRS; i++) {
        pthread_join(pairs[i].holder, NULL);
        pthread_join(pairs[i].waiter, NULL);
        contended += pairs[i].contended;
        failures += pairs[i].failures;
        pthread_mutex_destroy(&pairs[i].mu);
        pthread_cond_destroy(&pairs[i].cv);
    }
    fprintf(stderr, "  %zu resources in %.1f s, %zu contended (the waiter queued before the release), %zu failures\n",
            total, (now_ms() - t0) / 1000, contended, failures);
    CHECK(failures == 0);
    CHECK(contended == total);
    redlock_client_free(holders);
    redlock_client_free(waiters);
    /* Every registration left with its acquisition; what the rounds did
     * not wait for (a leave, a release) reaches the nodes a moment later,
     * long before any lock key (10 s) could expire. */
    CHECK(EVENTUALLY(keys_on(5) == before, 5000, "no key left by the waits"));
    fprintf(stderr, "  keys before %lld, after %lld\n", before, keys_on(5));
}

/* ---- 2. a waiter killed with SIGKILL ---- */

/* A child process with a client of its own that waits for res. */
static pid_t spawn_waiter(const char *res)
{
    pid_t pid = fork();
    if (pid == 0) {
        redlock_client *c = client_with(NULL, NULL);
        redlock_lock *l;
        if (redlock_lock_new(&l, c, res) == 0)
            redlock_lock_acquire(l, 10000, 120000);
        _exit(0);
    }
    return pid;
}

static int registered_everywhere(const char *key)
{
    for (size_t i = 0; i < 5; i++)
        if (node_q(i, "ZCARD %s:wq", key) != 1)
            return 0;
    return 1;
}

static void test_killed_waiter(void)
{
    redlock_client *a = client_with(NULL, NULL);
    char key[128];
    snprintf(key, sizeof key, "%s", uniq("killed"));
    const char *res = key;
    redlock_lock *held;
    CHECK_RC(redlock_lock_new(&held, a, res), 0);
    CHECK_LOCK_RC(held, redlock_lock_acquire(held, 30000, REDLOCK_WAIT_NONE), 0);
    pid_t pid = spawn_waiter(res);
    CHECK(EVENTUALLY(registered_everywhere(key), 30000, "the child registered on every node"));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    /* The bound, read off the nodes: the queue's keys expire within one
     * lease of the last registration. */
    for (size_t i = 0; i < 5; i++) {
        long long q = node_q(i, "PTTL %s:wq", key), l = node_q(i, "PTTL %s:wl", key);
        fprintf(stderr, "  node %zu: K:wq expires in %lld ms, K:wl in %lld ms\n", i, q, l);
        CHECK(q > 0 && q <= LEASE_MS);
        CHECK(l > 0 && l <= LEASE_MS);
    }
    /* A release wakes the first registration; PUBLISH reaches nobody, so
     * the registration is dropped at once, and the empty queue with it. */
    CHECK_LOCK_RC(held, redlock_lock_release(held), 0);
    for (size_t i = 0; i < 5; i++)
        CHECK(EVENTUALLY(queue_keys_on(i, key) == 0 && node_q(i, "EXISTS %s", key) == 0, 5000,
                         "the dead waiter's registration dropped by the release"));

    /* No release at all: the holder's key expires, and the dead waiter's
     * registration with the queue's keys one lease after it registered. */
    redlock_lock_free(held);
    const char *res2 = uniq("killed-norelease");
    CHECK_RC(redlock_lock_new(&held, a, res2), 0);
    CHECK_LOCK_RC(held, redlock_lock_acquire(held, 2000, REDLOCK_WAIT_NONE), 0);
    pid = spawn_waiter(res2);
    CHECK(EVENTUALLY(registered_everywhere(res2), 30000, "the second child registered on every node"));
    double t_killed = now_ms();
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    redlock_lock_free(held);   /* never released: the key expires */
    /* Gone by the node's own expiry: waiting longer than the lease (plus
     * room for a loaded machine) is the assertion. */
    for (size_t i = 0; i < 5; i++)
        CHECK(EVENTUALLY(queue_keys_on(i, res2) == 0 && node_q(i, "EXISTS %s", res2) == 0, LEASE_MS + 10000,
                         "the queue's keys expired within the lease"));
    fprintf(stderr, "  queue of a killed waiter gone %.1f s after the kill (lease %d ms)\n",
            (now_ms() - t_killed) / 1000, LEASE_MS);
    redlock_client_free(a);
}

/* ---- 3. a leave missed by a stopped node ---- */

static void test_leave_missed_by_stopped_node(void)
{
    redlock_client *a = client_with(NULL, NULL), *b = client_with(NULL, NULL);
    const char *res = uniq("missed");
    redlock_lock *held, *w;
    CHECK_RC(redlock_lock_new(&held, a, res), 0);
    CHECK_RC(redlock_lock_new(&w, b, res), 0);
    CHECK_LOCK_RC(held, redlock_lock_acquire(held, 30000, REDLOCK_WAIT_NONE), 0);
    pid_t pid = spawn_waiter(res);   /* keeps the queue alive while node 4 is stopped */
    CHECK(EVENTUALLY(registered_everywhere(res), 30000, "the child registered on every node"));
    CHECK(harness("PAUSE 4") == 0);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    /* Released while node 4 is stopped: the live nodes drop the dead
     * registration; node 4 misses the release (and with it the drop). */
    CHECK_LOCK_RC(held, redlock_lock_release(held), 0);
    CHECK(harness("RESUME 4") == 0);
    /* Node 4 runs the release it owed when it wakes, but however it ends,
     * its queue is gone within one lease of the last registration. */
    long long q = node_q(4, "PTTL %s:wq", res);
    fprintf(stderr, "  node 4 after the stop: K:wq expires in %lld ms\n", q);
    CHECK(q <= LEASE_MS);
    CHECK(EVENTUALLY(queue_keys_on(4, res) == 0, LEASE_MS + 10000, "node 4's queue gone within the lease"));
    for (size_t i = 0; i < 5; i++)
        CHECK(queue_keys_on(i, res) == 0);
    redlock_lock_free(held);
    redlock_lock_free(w);
    redlock_client_free(a);
    redlock_client_free(b);
}

/* ---- 4. a stale registration of a live client ---- */

/* The wait of w in a thread, for waits that must overlap the test's steps. */
typedef struct bg_wait {
    pthread_t t;
    redlock_lock *lock;
    int rc;
} bg_wait;

static void *bg_main(void *arg)
{
    bg_wait *b = arg;
    b->rc = redlock_lock_acquire(b->lock, 10000, 30000);
    return NULL;
}

static void test_stale_head_cleared_by_its_client(void)
{
    redlock_client *a = client_with(NULL, NULL), *b = client_with(NULL, NULL), *c = client_with(NULL, NULL);
    const char *r1 = uniq("stale-r1"), *r2 = uniq("stale-r2"), *r = uniq("stale-r");
    char r1k[128], r2k[128], rk[128];
    snprintf(r1k, sizeof r1k, "%s", r1);
    snprintf(r2k, sizeof r2k, "%s", r2);
    snprintf(rk, sizeof rk, "%s", r);
    /* B waits for r1 once, to learn the name its client registers under. */
    redlock_lock *h1, *h2, *h, *b1, *b2, *c1;
    CHECK_RC(redlock_lock_new(&h1, a, r1k), 0);
    CHECK_LOCK_RC(h1, redlock_lock_acquire(h1, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&b1, b, r1k), 0);
    bg_wait w1 = { .lock = b1 };
    pthread_create(&w1.t, NULL, bg_main, &w1);
    CHECK(EVENTUALLY(registered_everywhere(r1k), 30000, "B registered for r1"));
    char member[128] = "";
    redisContext *n0 = node_conn(0);
    redisReply *rep = n0 ? redisCommand(n0, "ZRANGE %s:wq 0 0", r1k) : NULL;
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 1)
        snprintf(member, sizeof member, "%s", rep->element[0]->str);
    freeReplyObject(rep);
    CHECK(member[0] != '\0');
    CHECK_LOCK_RC(h1, redlock_lock_release(h1), 0);
    pthread_join(w1.t, NULL);
    CHECK_RC(w1.rc, 0);
    CHECK_LOCK_RC(b1, redlock_lock_release(b1), 0);

    /* Node 0 keeps that registration at the head of r's queue, as a node
     * that missed its leave would: it lapses only in an hour. */
    CHECK(node_q(0, "ZADD %s:wq 1 %s", rk, member) == 1);
    CHECK(node_q(0, "ZADD %s:wl 99999999999999 %s", rk, member) == 1);
    /* B waits for something else meanwhile, so its listener is read. */
    CHECK_RC(redlock_lock_new(&h2, a, r2k), 0);
    CHECK_LOCK_RC(h2, redlock_lock_acquire(h2, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&b2, b, r2k), 0);
    bg_wait w2 = { .lock = b2 };
    pthread_create(&w2.t, NULL, bg_main, &w2);
    CHECK(EVENTUALLY(registered_everywhere(r2k), 30000, "B registered for r2"));
    /* C waits for r behind the stale head on node 0; A's release wakes
     * the stale head there, and B sends its leave. */
    CHECK_RC(redlock_lock_new(&h, a, rk), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&c1, c, rk), 0);
    bg_wait w3 = { .lock = c1 };
    pthread_create(&w3.t, NULL, bg_main, &w3);
    CHECK(EVENTUALLY(node_q(1, "ZCARD %s:wq", rk) == 1, 30000, "C registered for r"));
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    pthread_join(w3.t, NULL);
    CHECK_RC(w3.rc, 0);
    CHECK(EVENTUALLY(node_q(0, "ZSCORE %s:wq %s", rk, member) == 0, 10000, "the stale head cleared by B's client"));
    CHECK_LOCK_RC(c1, redlock_lock_release(c1), 0);
    CHECK(EVENTUALLY(queue_keys_on(0, rk) == 0, 10000, "no queue left for r on node 0"));
    CHECK_LOCK_RC(h2, redlock_lock_release(h2), 0);
    pthread_join(w2.t, NULL);
    CHECK_RC(w2.rc, 0);
    CHECK_LOCK_RC(b2, redlock_lock_release(b2), 0);
    redisFree(n0);
    redlock_lock_free(h1);
    redlock_lock_free(h2);
    redlock_lock_free(h);
    redlock_lock_free(b1);
    redlock_lock_free(b2);
    redlock_lock_free(c1);
    redlock_client_free(a);
    redlock_client_free(b);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    if (t_nurls != 5 || strncmp(t_urls[0], "redis://", 8) != 0) {
        fprintf(stderr, "test_wake_garbage needs 5 TCP nodes (nodes.py exec --count 5)\n");
        return 2;
    }
    run_test("many_resources", test_many_resources);
    run_test("killed_waiter", test_killed_waiter);
    run_test("leave_missed_by_stopped_node", test_leave_missed_by_stopped_node);
    run_test("stale_head_cleared_by_its_client", test_stale_head_cleared_by_its_client);
    return finish_tests();
}
