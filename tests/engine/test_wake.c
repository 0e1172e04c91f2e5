/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wake.c: waking waiting acquires on real nodes (docs/algorithm.md,
 * "Waking waiters"). The evidence of a wake-up is the WOKEN event, never a
 * timing: a waiter that only a wake-up can serve in time has a retry delay
 * far beyond its wait. Wake-up is opt-in (REDLOCK_OPT_WAKE): the clients
 * here ask for it. Cases: a plain wake-up, and polling (the default, and
 * REDLOCK_OPT_NO_WAKE); a node restarted under a waiter (3-node client),
 * and the queue lost on the only node of a 1-node client; a paused node; a winner leaving the queue on a
 * node whose reply it did not wait for; no connection, descriptor or
 * queue entry left behind by many waits that give up; fair mode's arrival
 * order; a woken waiter refused everywhere by a holder that came straight
 * back, whose wake-up is spent; an ACL user without the queue's commands or the wake channel, and
 * one without SUBSCRIBE, whose waits the polling fallback still bounds.
 * Runs under tests/harness/nodes.py exec --count 5; node i is t_urls[i].
 * REDLOCK_WAKE_WAITS sets the number of waits in the leak case (2000). */
#include "../c/testutil.h"
#include "nodeutil.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <hiredis/hiredis.h>

/* The queue's keys of a lock key on node i: how many of K:wq and K:wl exist (and
 * K:wr, the reservation that earlier versions wrote and this one never does). */
static long long queue_keys(size_t i, const char *key)
{
    return node_q(i, "EXISTS %s:wq %s:wl %s:wr", key, key, key);
}

/* Connections on node i besides the one asking, and how many of them are
 * subscribed (a wake-up listener). */
static int connections(size_t i, int *subscribed)
{
    redisContext *c = node_conn(i);
    if (!c)
        return -1;
    redisReply *r = redisCommand(c, "CLIENT LIST");
    int n = -1;
    *subscribed = 0;
    if (r && r->type == REDIS_REPLY_STRING) {
        n = 0;
        for (const char *line = r->str; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
            const char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            if (!len)
                continue;
            n++;
            char buf[1024];
            snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), line);
            if (strstr(buf, " sub=") && !strstr(buf, " sub=0 "))
                (*subscribed)++;
        }
        n -= 1;
    }
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Polls cond every 5 ms for at most bound_ms: a bound for a hung test, not
 * a timing assertion. 1 if it came true. Also for what a round decided at
 * quorum leaves to the nodes it did not wait for: a release or a leave
 * reaches them a moment after the call returns. */
#define WAIT_UNTIL(cond, bound_ms, what) ({                                      \
        double end_ = now_ms() + (bound_ms);                                      \
        int ok_ = 1;                                                              \
        while (!(cond)) {                                                         \
            if (now_ms() > end_) {                                                \
                fprintf(stderr, "[%s] gave up waiting for %s\n", t_current, what); \
                ok_ = 0;                                                          \
                break;                                                            \
            }                                                                     \
            msleep(5);                                                            \
        }                                                                         \
        ok_;                                                                      \
    })

/* ---- events ---- */

#define MARK 100            /* a marker the test puts in the log */
#define LOG_MAX 8192

typedef struct logged {
    int type;
    size_t node;
    int state;
    uint32_t attempt;
} logged;

typedef struct rec {
    pthread_mutex_t mu;
    atomic_int count[16];
    atomic_int split;          /* failed attempts that some node granted */
    uint32_t last_acquired_attempt;
    int n;
    logged log[LOG_MAX];
} rec;

static rec *rec_new(void)
{
    rec *r = calloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void rec_free(rec *r)
{
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void rec_add(rec *r, int type, size_t node, int state, uint32_t attempt)
{
    pthread_mutex_lock(&r->mu);
    if (r->n < LOG_MAX)
        r->log[r->n++] = (logged){ type, node, state, attempt };
    if (type == REDLOCK_EVENT_ACQUIRED)
        r->last_acquired_attempt = attempt;
    pthread_mutex_unlock(&r->mu);
}

static void on_event(const redlock_event *e, void *ud)
{
    rec *r = ud;
    if (e->type > 0 && e->type < 16)
        atomic_fetch_add(&r->count[e->type], 1);
    if (e->type == REDLOCK_EVENT_ACQUIRE_FAILED && e->nodes_ok > 0)
        atomic_fetch_add(&r->split, 1);
    rec_add(r, e->type, e->node, e->listener_state, e->attempt);
}

static int count(rec *r, int type)
{
    return atomic_load(&r->count[type]);
}

static void mark(rec *r)
{
    rec_add(r, MARK, 0, 0, 0);
}

/* Events of `type` after the last marker. */
static int after_mark(rec *r, int type)
{
    pthread_mutex_lock(&r->mu);
    int m = -1, n = 0;
    for (int k = 0; k < r->n; k++)
        if (r->log[k].type == MARK)
            m = k;
    for (int k = m + 1; k < r->n; k++)
        n += r->log[k].type == type;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* 1 if, after the last marker, a WOKEN event came before the first event
 * of type: ACQUIRED (the acquisition followed a wake-up), ACQUIRE_FAILED
 * (the first attempt after the marker was a woken one). */
static int woken_before(rec *r, int type)
{
    pthread_mutex_lock(&r->mu);
    int m = -1, woken = 0, ok = 0;
    for (int k = 0; k < r->n; k++)
        if (r->log[k].type == MARK)
            m = k;
    for (int k = m + 1; k < r->n; k++) {
        if (r->log[k].type == REDLOCK_EVENT_WOKEN)
            woken = 1;
        if (r->log[k].type == type) {
            ok = woken;
            break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

/* 1 if, after the first marker, node's LISTENER events show `first`, then
 * later `then`. */
static int listener_went(rec *r, size_t node, int first, int then)
{
    pthread_mutex_lock(&r->mu);
    int k = 0, seen_first = 0, ok = 0;
    while (k < r->n && r->log[k].type != MARK)
        k++;
    for (; k < r->n; k++) {
        if (r->log[k].type != REDLOCK_EVENT_LISTENER || r->log[k].node != node)
            continue;
        if (r->log[k].state == first)
            seen_first = 1;
        else if (seen_first && r->log[k].state == then)
            ok = 1;
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static void print_listener_events(rec *r, const char *who)
{
    pthread_mutex_lock(&r->mu);
    fprintf(stderr, "  %s's events:", who);
    for (int k = 0; k < r->n; k++) {
        const logged *l = &r->log[k];
        if (l->type == MARK)
            fprintf(stderr, " |mark|");
        else if (l->type == REDLOCK_EVENT_LISTENER)
            fprintf(stderr, " LISTENER(node %zu: %d)", l->node, l->state);
        else if (l->type == REDLOCK_EVENT_WOKEN)
            fprintf(stderr, " WOKEN(node %zu)", l->node);
        else if (l->type == REDLOCK_EVENT_ACQUIRED)
            fprintf(stderr, " ACQUIRED(#%u)", l->attempt);
        else if (l->type == REDLOCK_EVENT_ACQUIRE_FAILED)
            fprintf(stderr, " FAILED(#%u)", l->attempt);
    }
    fprintf(stderr, "\n");
    pthread_mutex_unlock(&r->mu);
}

/* ---- clients ---- */

#define PREFIX "wake:"

static void roomy(redlock_options *o)
{
    redlock_options_init(o);
    /* Generous for a loaded machine and sanitizers. */
    o->node_timeout_ms = 500;
    o->connect_timeout_ms = 500;
    o->key_prefix = PREFIX;
    o->flags = REDLOCK_OPT_WAKE;   /* wake-up is opt-in; this file tests it */
}

/* A client over nodes first .. first+n-1, with the given URLs (NULL: the harness's). */
static redlock_client *client_over(size_t first, size_t n, const redlock_options *o, const char *const *urls)
{
    const char *u[8];
    for (size_t k = 0; k < n; k++)
        u[k] = urls ? urls[k] : t_urls[first + k];
    redlock_client *c = NULL;
    char err[512];
    /* Quarantine off: this file restarts nodes without persistence to test
     * the queue's loss, and a restarted node would stay out of the vote
     * (and out of the queue) for the rest of the file (test_quarantine.c). */
    redlock_options noq = *o;
    noq.flags |= REDLOCK_OPT_NO_QUARANTINE;
    int rc = redlock_client_open(&c, u, n, &noq, err, sizeof err);
    if (rc) {
        fprintf(stderr, "client_open: %s: %s\n", redlock_error_name(rc), err);
        exit(1);
    }
    return c;
}

/* client_rec's flags: the library's defaults (polling), not wake-up. */
#define DEFAULT_FLAGS 0xffffffffu

/* A client with REDLOCK_OPT_WAKE and flags (DEFAULT_FLAGS: flags 0). */
static redlock_client *client_rec(size_t first, size_t n, rec *r, uint32_t retry_delay, uint32_t jitter,
                                  uint32_t flags)
{
    redlock_options o;
    roomy(&o);
    o.retry_delay_ms = retry_delay;
    o.retry_jitter_ms = jitter;
    o.flags = flags == DEFAULT_FLAGS ? 0 : REDLOCK_OPT_WAKE | flags;
    o.on_event = r ? on_event : NULL;
    o.on_event_userdata = r;
    return client_over(first, n, &o, NULL);
}

static int listeners_in(redlock_client *c, int state)
{
    int n = 0;
    for (size_t i = 0; i < redlock_client_node_count(c); i++)
        n += redlock_client_listener_state(c, i, NULL, 0) == state;
    return n;
}

static void print_listeners(redlock_client *c, const char *who)
{
    fprintf(stderr, "  %s's listeners:", who);
    for (size_t i = 0; i < redlock_client_node_count(c); i++) {
        char msg[200];
        int st = redlock_client_listener_state(c, i, msg, sizeof msg);
        fprintf(stderr, " node %zu: %d%s%s;", i, st, msg[0] ? " " : "", msg);
    }
    fprintf(stderr, "\n");
}

/* A waiting acquire on a thread of its own. */
typedef struct waiter {
    redlock_client *c;
    const char *res;
    uint32_t ttl;
    int64_t wait;
    uint32_t lock_flags;   /* set on the lock through redlock_lock_set_options if nonzero */
    int release;           /* release at once after acquiring */
    atomic_int *order;     /* fair mode: where this waiter came */
    int id, place;
    int rc, release_rc;
    double acquired_ms;    /* now_ms() when the acquire returned */
    redlock_lock *lock;
    char err[1024];
    pthread_t th;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    w->rc = redlock_lock_new(&w->lock, w->c, w->res);
    if (w->rc == 0 && w->lock_flags) {
        redlock_lock_options lo = { .version = REDLOCK_LOCK_OPTIONS_VERSION };
        w->rc = redlock_lock_get_options(w->lock, &lo);
        lo.flags |= w->lock_flags;
        if (w->rc == 0)
            w->rc = redlock_lock_set_options(w->lock, &lo);
    }
    if (w->rc == 0)
        w->rc = redlock_lock_acquire(w->lock, w->ttl, w->wait);
    w->acquired_ms = now_ms();
    snprintf(w->err, sizeof w->err, "%s", w->lock ? redlock_lock_errmsg(w->lock) : "");
    if (w->rc == 0 && w->order)
        w->place = atomic_fetch_add(w->order, 1);
    if (w->rc == 0 && w->release)
        w->release_rc = redlock_lock_release(w->lock);
    return NULL;
}

static void start(waiter *w)
{
    pthread_create(&w->th, NULL, waiter_main, w);
}

static void finish(waiter *w)
{
    pthread_join(w->th, NULL);
    if (w->rc)
        fprintf(stderr, "  waiter %d: %s: %s\n", w->id, redlock_error_name(w->rc), w->err);
}

static void holder(redlock_client *c, const char *res, uint32_t ttl, redlock_lock **out)
{
    CHECK_RC(redlock_lock_new(out, c, res), 0);
    CHECK_LOCK_RC(*out, redlock_lock_acquire(*out, ttl, REDLOCK_WAIT_NONE), 0);
}

static char keybuf[8][512];
static int keyk;
static const char *key_of(const char *res)
{
    char *b = keybuf[keyk++ % 8];
    snprintf(b, 512, PREFIX "%s", res);
    return b;
}

/* B's wait is under way: its listeners READY on all 5 nodes and its
 * registration in the resource's queue on every node, so that a release
 * from now on has someone to wake. */
static void await_registered(redlock_client *b, const char *res)
{
    CHECK(WAIT_UNTIL(listeners_in(b, REDLOCK_LISTENER_READY) == 5, 30000, "B's 5 listeners READY"));
    for (size_t i = 0; i < 5; i++)
        CHECK(WAIT_UNTIL(node_q(i, "ZCARD %s:wq", key_of(res)) == 1, 30000, "B registered"));
}

/* ---- 1. wake-up, and wake-up turned off ---- */

static void test_wakeup_basic(void)
{
    rec *rb = rec_new();
    redlock_client *a = client_rec(0, 5, NULL, 0, 200, 0);
    /* Only a wake-up can serve B within its wait: its next retry is up to
     * 60 s away, its wait 20 s. */
    redlock_client *b = client_rec(0, 5, rb, 0, 60000, 0);
    const char *res = uniq("basic");
    redlock_lock *la;
    holder(a, res, 30000, &la);

    waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 20000, .id = 1 };
    start(&w);
    await_registered(b, res);
    CHECK(count(rb, REDLOCK_EVENT_ACQUIRE_FAILED) >= 1);
    CHECK(!redlock_lock_is_held(w.lock));
    mark(rb);
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
    finish(&w);
    CHECK_RC(w.rc, 0);
    CHECK(after_mark(rb, REDLOCK_EVENT_WOKEN) >= 1);
    CHECK(woken_before(rb, REDLOCK_EVENT_ACQUIRED));
    /* Attempt 1 is a plain SET, attempt 2 registers (at once), and a
     * wake-up brings attempt 3. Each node tells of the release as it runs
     * there, and B acts on each message: one that comes before the release
     * has reached a majority brings an attempt that is still refused. At
     * most quorum - 1 = 2 such messages can come before a majority has
     * released, so B acquires at attempt 3 to 5 (seen: 5, with 3 WOKEN). */
    CHECK(rb->last_acquired_attempt >= 3 && rb->last_acquired_attempt <= 5);
    CHECK(count(rb, REDLOCK_EVENT_ACQUIRED) == 1);
    fprintf(stderr, "  B: %d WOKEN, acquired at attempt %u\n", count(rb, REDLOCK_EVENT_WOKEN),
            rb->last_acquired_attempt);
    CHECK(redlock_lock_is_held(w.lock));
    CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
    /* The woken waiter left the queue with its acquisition. */
    for (size_t i = 0; i < 5; i++) {
        CHECK(WAIT_UNTIL(queue_keys(i, key_of(res)) == 0, 5000, "the queue to go"));
        CHECK(WAIT_UNTIL(node_q(i, "EXISTS %s", key_of(res)) == 0, 5000, "the key to go"));
    }
    redlock_lock_free(w.lock);
    redlock_lock_free(la);
    redlock_client_free(a);
    redlock_client_free(b);
    rec_free(rb);
}

/* A holder that releases long after its acquisition still wakes the waiter.
 * Its acquiring round decided at quorum, so the slower nodes' replies sat
 * unread in its sockets ever since: owed for longer than the node timeout,
 * they once made the holder's nodes look stopped, and its release woke
 * nobody (the waiter then slept until the holder's key would expire). The
 * holder's node timeout is short, its hold many of them; three rounds, as a
 * quorum-decided round does not always leave a reply behind. */
static void test_wakeup_after_long_hold(void)
{
    for (int k = 0; k < 3; k++) {
        rec *rb = rec_new();
        redlock_options o;
        roomy(&o);
        o.node_timeout_ms = 100;
        redlock_client *a = client_over(0, 5, &o, NULL);
        redlock_client *b = client_rec(0, 5, rb, 0, 60000, 0);
        const char *res = uniq("long-hold");
        redlock_lock *la;
        holder(a, res, 30000, &la);
        waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 20000, .id = 1 };
        start(&w);
        await_registered(b, res);
        usleep(600 * 1000);   /* the hold: six of the holder's node timeouts */
        mark(rb);
        CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
        finish(&w);
        CHECK_RC(w.rc, 0);
        CHECK(after_mark(rb, REDLOCK_EVENT_WOKEN) >= 1);
        if (w.rc == 0)
            CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
        redlock_lock_free(w.lock);
        redlock_lock_free(la);
        redlock_client_free(a);
        redlock_client_free(b);
        rec_free(rb);
    }
}

/* The default options (flags 0), REDLOCK_OPT_NO_WAKE on a client that also
 * says REDLOCK_OPT_WAKE, then on one lock only: polls, no registration, no
 * listener, no WOKEN; still acquires. */
static void test_no_wake(void)
{
    for (int mode = 0; mode < 3; mode++) {
        int per_lock = mode == 2;
        rec *rb = rec_new();
        redlock_client *a = client_rec(0, 5, NULL, 0, 200, 0);
        redlock_client *b = client_rec(0, 5, rb, 0, 200,
                                       mode == 0 ? DEFAULT_FLAGS : mode == 1 ? REDLOCK_OPT_NO_WAKE : 0);
        const char *res = uniq(mode == 0 ? "nowake-default" : per_lock ? "nowake-lock" : "nowake-client");
        redlock_lock *la;
        holder(a, res, 30000, &la);
        waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 20000, .id = 1,
                     .lock_flags = per_lock ? REDLOCK_OPT_NO_WAKE : 0 };
        start(&w);
        CHECK(WAIT_UNTIL(count(rb, REDLOCK_EVENT_ACQUIRE_FAILED) >= 3, 30000, "B's retries"));
        CHECK(listeners_in(b, REDLOCK_LISTENER_OFF) == 5);
        for (size_t i = 0; i < 5; i++)
            CHECK(queue_keys(i, key_of(res)) == 0);   /* no registration */
        CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
        finish(&w);
        CHECK_RC(w.rc, 0);
        CHECK(count(rb, REDLOCK_EVENT_WOKEN) == 0);
        CHECK(count(rb, REDLOCK_EVENT_LISTENER) == 0);
        CHECK(listeners_in(b, REDLOCK_LISTENER_OFF) == 5);
        for (size_t i = 0; i < 5; i++) {
            int sub = 0;
            CHECK(connections(i, &sub) >= 0 && sub == 0);   /* nobody subscribed */
        }
        if (w.rc == 0)
            CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
        redlock_lock_free(w.lock);
        redlock_lock_free(la);
        redlock_client_free(a);
        redlock_client_free(b);
        rec_free(rb);
    }
}

/* ---- 2. wake-up across a node restart ---- */

static int resubscribed(size_t node)
{
    return node_q(node, "PUBSUB CHANNELS redlock:wake:*") >= 1;
}

/* 3-node client: node 1 restarts (losing its keys and queue) under a
 * waiter; the listener goes down and comes back; the holder's release
 * still wakes the waiter. */
static void test_restart_one_of_three(void)
{
    rec *rb = rec_new();
    redlock_client *a = client_rec(0, 3, NULL, 0, 200, 0);
    redlock_client *b = client_rec(0, 3, rb, 0, 60000, 0);
    const char *res = uniq("restart3");
    redlock_lock *la;
    holder(a, res, 60000, &la);
    waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 60000, .id = 1 };
    start(&w);
    CHECK(WAIT_UNTIL(listeners_in(b, REDLOCK_LISTENER_READY) == 3, 30000, "B's 3 listeners READY"));
    mark(rb);
    CHECK(harness("RESTART 1") == 0);
    /* No persistence: the node lost A's key (TTL 60 s). B, woken by the
     * restart, may have set its own there since (TTL 10 s; a grant that does
     * not count beside nodes 0 and 2, and is released again). */
    long long pt = node_q(1, "PTTL %s", key_of(res));
    CHECK(pt == -2 || (pt > 0 && pt <= 10000));
    CHECK(WAIT_UNTIL(redlock_client_listener_state(b, 1, NULL, 0) == REDLOCK_LISTENER_READY && resubscribed(1),
                     30000, "B's listener on node 1 subscribed again"));
    /* The waiter tells the way down and back up. */
    int went = WAIT_UNTIL(listener_went(rb, 1, REDLOCK_LISTENER_DOWN, REDLOCK_LISTENER_READY), 15000,
                          "LISTENER events DOWN then READY for node 1");
    CHECK(went);
    /* The resubscription woke B for one more try: wait for it to be over. */
    /* (It may be over already: the listener's changes wake B as they happen.) */
    CHECK(WAIT_UNTIL(after_mark(rb, REDLOCK_EVENT_ACQUIRE_FAILED) >= 1, 15000, "B's next attempt"));
    CHECK(!redlock_lock_is_held(w.lock));
    mark(rb);
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);   /* still ours on nodes 0 and 2 */
    finish(&w);
    CHECK_RC(w.rc, 0);
    CHECK(after_mark(rb, REDLOCK_EVENT_WOKEN) >= 1);
    CHECK(woken_before(rb, REDLOCK_EVENT_ACQUIRED));
    if (!went || t_failures)
        print_listener_events(rb, "B");
    if (w.rc == 0)
        CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
    redlock_lock_free(w.lock);
    redlock_lock_free(la);
    redlock_client_free(a);
    redlock_client_free(b);
    rec_free(rb);
}

/* 1-node client on node 4: the node restarts from a snapshot taken while
 * the holder held and nobody waited, so the lock is still held but the
 * queue is gone. The waiter registers again after its listener
 * resubscribes, and the holder's release wakes it. */
static void test_restart_only_node_queue_lost(void)
{
    rec *rb = rec_new();
    redlock_client *a = client_rec(4, 1, NULL, 0, 200, 0);
    redlock_client *b = client_rec(4, 1, rb, 0, 60000, 0);
    const char *res = uniq("restart1");
    const char *key = key_of(res);
    redlock_lock *la;
    holder(a, res, 60000, &la);
    CHECK(node_q(4, "EXISTS %s:wq", key) == 0);
    CHECK(node_q(4, "SAVE") == 1);   /* the holder's key, no queue */
    waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 60000, .id = 1 };
    start(&w);
    CHECK(WAIT_UNTIL(redlock_client_listener_state(b, 0, NULL, 0) == REDLOCK_LISTENER_READY, 30000,
                     "B's listener READY"));
    CHECK(node_q(4, "ZCARD %s:wq", key) == 1);
    mark(rb);
    CHECK(harness("RESTART 4") == 0);
    CHECK(node_q(4, "PTTL %s", key) > 0);   /* loaded from the snapshot: still held */
    CHECK(WAIT_UNTIL(redlock_client_listener_state(b, 0, NULL, 0) == REDLOCK_LISTENER_READY && resubscribed(4),
                     30000, "B's listener subscribed again"));
    /* Re-registered on the node that lost the queue. */
    CHECK(WAIT_UNTIL(node_q(4, "ZCARD %s:wq", key) == 1, 30000, "B registered again"));
    int went = WAIT_UNTIL(listener_went(rb, 0, REDLOCK_LISTENER_DOWN, REDLOCK_LISTENER_READY), 15000,
                          "LISTENER events DOWN then READY");
    CHECK(went);
    /* (It may be over already: the listener's changes wake B as they happen.) */
    CHECK(WAIT_UNTIL(after_mark(rb, REDLOCK_EVENT_ACQUIRE_FAILED) >= 1, 15000, "B's next attempt"));
    CHECK(!redlock_lock_is_held(w.lock));
    mark(rb);
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
    finish(&w);
    CHECK_RC(w.rc, 0);
    CHECK(after_mark(rb, REDLOCK_EVENT_WOKEN) >= 1);
    CHECK(woken_before(rb, REDLOCK_EVENT_ACQUIRED));
    if (!went || t_failures)
        print_listener_events(rb, "B");
    if (w.rc == 0)
        CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
    CHECK(queue_keys(4, key) == 0);
    redlock_lock_free(w.lock);
    redlock_lock_free(la);
    redlock_client_free(a);
    redlock_client_free(b);
    rec_free(rb);
}

/* ---- 3. a paused node ---- */

static void test_paused_node(void)
{
    rec *rb = rec_new();
    redlock_client *a = client_rec(0, 5, NULL, 0, 200, 0);
    redlock_client *b = client_rec(0, 5, rb, 0, 200, 0);
    const char *res = uniq("paused");
    CHECK(harness("PAUSE 4") == 0);
    redlock_lock *la;
    CHECK_RC(redlock_lock_new(&la, a, res), 0);
    CHECK_LOCK_RC(la, redlock_lock_acquire(la, 30000, 10000), 0);
    waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 30000, .id = 1 };
    start(&w);
    CHECK(WAIT_UNTIL(count(rb, REDLOCK_EVENT_ACQUIRE_FAILED) >= 1 && listeners_in(b, REDLOCK_LISTENER_READY) >= 3,
                     30000, "B waiting, a majority of its listeners READY"));
    CHECK(redlock_client_listener_state(b, 4, NULL, 0) != REDLOCK_LISTENER_READY);
    CHECK(!redlock_lock_is_held(w.lock));
    mark(rb);
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
    finish(&w);
    CHECK_RC(w.rc, 0);
    if (w.rc == 0) {
        int ok = 0, o4 = -1;
        fprintf(stderr, "  B's acquisition:");
        for (size_t i = 0; i < 5; i++) {
            char msg[200];
            int o = redlock_lock_node_result(w.lock, i, NULL, NULL, msg, sizeof msg);
            ok += o == REDLOCK_NODE_OK;
            if (i == 4)
                o4 = o;
            fprintf(stderr, " node %zu: %d%s%s;", i, o, msg[0] ? " " : "", msg);
        }
        fprintf(stderr, " %d WOKEN\n", after_mark(rb, REDLOCK_EVENT_WOKEN));
        CHECK(ok >= 3);
        CHECK(o4 != REDLOCK_NODE_OK);
    }
    CHECK(harness("RESUME 4") == 0);
    if (w.rc == 0)
        CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
    for (size_t i = 0; i < 4; i++)
        CHECK(WAIT_UNTIL(node_q(i, "EXISTS %s", key_of(res)) == 0, 5000, "the key to go"));
    redlock_lock_free(w.lock);
    redlock_lock_free(la);
    redlock_client_free(a);
    redlock_client_free(b);
    rec_free(rb);
}

/* A waiter that acquires leaves the queue on every node, also on one whose
 * reply the winning round did not wait for. Node 4 holds a peer's value
 * (so it refuses the waiter) and is paused while the waiter wins on nodes
 * 0-3; once it resumes, the waiter's registration there must go: one left
 * behind belongs to a client that still listens, so every release on that
 * node would wake this finished waiter and keep the free lock for it,
 * instead of waking a real one, until the registration lapses. */
static void test_winner_leaves_unawaited_node(void)
{
    rec *rb = rec_new();
    redlock_client *a = client_rec(0, 5, NULL, 0, 200, 0);
    redlock_client *b = client_rec(0, 5, rb, 0, 200, 0);
    const char *res = uniq("unawaited");
    const char *key = key_of(res);
    redlock_lock *la;
    holder(a, res, 30000, &la);
    CHECK(node_q(4, "SET %s peer-value PX 60000", key) == 1);   /* A still holds nodes 0-3 */
    waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 30000, .id = 1 };
    start(&w);
    CHECK(WAIT_UNTIL(listeners_in(b, REDLOCK_LISTENER_READY) == 5, 30000, "B's 5 listeners READY"));
    for (size_t i = 0; i < 5; i++)
        CHECK(node_q(i, "ZCARD %s:wq", key) == 1);
    CHECK(harness("PAUSE 4") == 0);
    mark(rb);
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
    finish(&w);
    CHECK(harness("RESUME 4") == 0);
    CHECK_RC(w.rc, 0);
    CHECK(redlock_lock_node_result(w.lock, 4, NULL, NULL, NULL, 0) != REDLOCK_NODE_OK);
    if (w.rc == 0)
        CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
    for (size_t i = 0; i < 4; i++)
        CHECK(WAIT_UNTIL(queue_keys(i, key) == 0, 5000, "the queue to go"));
    /* Bounded, not timed: a registration left behind stays for its lease (15 s). */
    int gone = WAIT_UNTIL(node_q(4, "ZCARD %s:wq", key) == 0 && node_q(4, "ZCARD %s:wl", key) == 0, 5000,
                          "B's registration to leave node 4");
    CHECK(gone);
    if (!gone)
        fprintf(stderr, "  node 4 still queues %lld registration(s) of a waiter that has returned\n",
                node_q(4, "ZCARD %s:wq", key));
    node_q(4, "DEL %s %s:wq %s:wl %s:wr", key, key, key, key);
    redlock_lock_free(w.lock);
    redlock_lock_free(la);
    redlock_client_free(a);
    redlock_client_free(b);
    rec_free(rb);
}

/* ---- 5. many waits that give up leave nothing behind ---- */

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3;   /* ".", "..", the directory's own */
}

static void test_many_waits_no_leak(void)
{
    const char *env = getenv("REDLOCK_WAKE_WAITS");
    int waits = env && atoi(env) > 0 ? atoi(env) : 2000;
    rec *rb = rec_new();
    redlock_client *a = client_rec(0, 5, NULL, 0, 200, 0);
    redlock_client *b = client_rec(0, 5, rb, 0, 200, 0);
    const char *res = uniq("leak");
    const char *key = key_of(res);
    redlock_lock *la;
    holder(a, res, 600000, &la);
    int wrong = 0, fds_base = -1;
    double t0 = now_ms();
    for (int k = 0; k < waits; k++) {
        redlock_lock *l;
        if (redlock_lock_new(&l, b, res) != 0) {
            wrong++;
            continue;
        }
        /* Registers with its first (refused) attempt, gives up, leaves. */
        int rc = redlock_lock_acquire(l, 10000, 2);
        if (rc != REDLOCK_ETIMEDOUT && wrong++ < 5)
            fprintf(stderr, "  wait %d: %s: %s\n", k, redlock_error_name(rc), redlock_lock_errmsg(l));
        redlock_lock_free(l);
        if (k == waits / 10)
            fds_base = open_fds();
    }
    fprintf(stderr, "  %d waits in %.1f s\n", waits, (now_ms() - t0) / 1000);
    CHECK(wrong == 0);
    CHECK(count(rb, REDLOCK_EVENT_ACQUIRED) == 0);
    CHECK(count(rb, REDLOCK_EVENT_ACQUIRE_FAILED) >= waits);
    int fds = open_fds();
    fprintf(stderr, "  descriptors: %d after %d waits, %d after all\n", fds_base, waits / 10, fds);
    /* A listener not yet open at the first count may have opened since. */
    CHECK(fds >= 0 && fds <= fds_base + 5);

    /* A round on B's connections after the last leave: the nodes have run it. */
    redlock_lock *probe;
    CHECK_RC(redlock_lock_new(&probe, b, uniq("leak-probe")), 0);
    CHECK_LOCK_RC(probe, redlock_lock_acquire(probe, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(probe, redlock_lock_release(probe), 0);
    redlock_lock_free(probe);
    for (size_t i = 0; i < 5; i++) {
        long long q = node_q(i, "ZCARD %s:wq", key), l = node_q(i, "ZCARD %s:wl", key);
        if (q || l)
            fprintf(stderr, "  node %zu: %lld queued, %lld leases left\n", i, q, l);
        CHECK(q == 0 && l == 0);
    }
    /* A's client: its lock connection; B's: one lock connection and one
     * listener. Closed connections of earlier cases may take a moment to go. */
    for (size_t i = 0; i < 5; i++) {
        int sub = 0, n = -1;
        WAIT_UNTIL((n = connections(i, &sub)) <= 3, 10000, "3 connections or fewer");
        fprintf(stderr, "  node %zu: %d connections, %d subscribed\n", i, n, sub);
        CHECK(n >= 2 && n <= 3);
        CHECK(sub == 1);
    }
    /* Nobody is left to wake: the release leaves no queue behind. */
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
    for (size_t i = 0; i < 5; i++)
        CHECK(WAIT_UNTIL(queue_keys(i, key) == 0, 5000, "the queue to go"));
    redlock_lock_free(la);
    redlock_client_free(a);
    redlock_client_free(b);
    rec_free(rb);
}

/* ---- 6. fair mode: arrival order ---- */

static void test_fair_order(void)
{
    enum { W = 4 };
    redlock_client *a = client_rec(0, 5, NULL, 0, 200, REDLOCK_OPT_FAIR);
    redlock_client *cs[W];
    rec *rs[W];
    waiter w[W];
    atomic_int order;
    atomic_init(&order, 0);
    const char *res = uniq("fair");
    const char *key = key_of(res);
    redlock_lock *la;
    holder(a, res, 30000, &la);
    for (int k = 0; k < W; k++) {
        rs[k] = rec_new();
        cs[k] = client_rec(0, 5, rs[k], 0, 200, REDLOCK_OPT_FAIR);
        w[k] = (waiter){ .c = cs[k], .res = res, .ttl = 10000, .wait = 60000, .id = k, .release = 1,
                         .order = &order, .place = -1 };
        start(&w[k]);
        /* The next one comes after this one is in the queue on every node. */
        char what[64];
        snprintf(what, sizeof what, "%d waiters registered", k + 1);
        CHECK(WAIT_UNTIL(node_q(0, "ZCARD %s:wq", key) == k + 1 && node_q(4, "ZCARD %s:wq", key) == k + 1, 30000,
                         what));
    }
    /* Every waiter listens before the lock comes free. */
    for (int k = 0; k < W; k++)
        CHECK(WAIT_UNTIL(listeners_in(cs[k], REDLOCK_LISTENER_READY) == 5, 30000, "listeners READY"));
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
    for (int k = 0; k < W; k++) {
        finish(&w[k]);
        CHECK_RC(w[k].rc, 0);
        CHECK_RC(w[k].release_rc, 0);
    }
    fprintf(stderr, "  places by arrival:");
    for (int k = 0; k < W; k++) {
        fprintf(stderr, " %d", w[k].place);
        CHECK(w[k].place == k);
    }
    fprintf(stderr, "\n");
    for (size_t i = 0; i < 5; i++)
        CHECK(WAIT_UNTIL(queue_keys(i, key) == 0, 5000, "the queue to go"));
    for (int k = 0; k < W; k++) {
        redlock_lock_free(w[k].lock);
        redlock_client_free(cs[k]);
        rec_free(rs[k]);
    }
    redlock_lock_free(la);
    redlock_client_free(a);
}

/* The first registration in the queue of key on node i, into out ("" if none). */
static void queue_head(size_t i, const char *key, char *out, size_t size)
{
    out[0] = '\0';
    redisContext *c = node_conn(i);
    redisReply *r = c ? redisCommand(c, "ZRANGE %s:wq 0 0", key) : NULL;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->type == REDIS_REPLY_STRING)
        snprintf(out, size, "%s", r->element[0]->str);
    freeReplyObject(r);
    redisFree(c);
}

/* A registration's ticket (its score in K:wq) on node i: -1 if it is not there. */
static double queue_ticket(size_t i, const char *key, const char *member)
{
    double t = -1;
    redisContext *c = node_conn(i);
    redisReply *r = c ? redisCommand(c, "ZSCORE %s:wq %s", key, member) : NULL;
    if (r && r->type == REDIS_REPLY_STRING)
        t = atof(r->str);
    freeReplyObject(r);
    redisFree(c);
    return t;
}

/* Fair mode, a split round (3-node client): the holder H's key is gone
 * from node 0 only (as when it overstays and the key expires there first),
 * so the head W is granted there and refused on nodes 1 and 2. W keeps its
 * place on node 0: a grant in fair mode does not take the registration out
 * of the queue (its release does). Once it did, and until W's next attempt
 * was refused there, node 0 had nothing to keep the free key for the head:
 * a contender took it, and the same on a second node gave it the lock
 * before the head (models/wake.pml, -DFAIR -DEXPIRY). W's attempt is
 * brought by a wake-up message the test publishes, and told by its event;
 * W's retry delay is far beyond the test. With late, node 0 is paused
 * through that attempt, which is lost to nodes 1 and 2 without node 0's
 * reply: the connection releases W's late grant there itself, and that
 * release must leave W's registration too; W's next attempt (within its
 * poll, 5 s) is the split one. */
static void fair_split(int late)
{
    rec *rw = rec_new();
    redlock_client *h = client_rec(0, 3, NULL, 0, 200, REDLOCK_OPT_FAIR);
    redlock_client *wc = client_rec(0, 3, rw, 0, 60000, REDLOCK_OPT_FAIR);
    const char *res = uniq(late ? "fair-split-late" : "fair-split"), *key = key_of(res);
    redlock_lock *lh;
    holder(h, res, 30000, &lh);
    atomic_int order;   /* where W and H are served */
    atomic_init(&order, 0);
    waiter w = { .c = wc, .res = res, .ttl = 10000, .wait = 60000, .id = 1, .release = 1, .order = &order,
                 .place = -1 };
    start(&w);
    CHECK(WAIT_UNTIL(listeners_in(wc, REDLOCK_LISTENER_READY) == 3, 30000, "W's 3 listeners READY"));
    for (size_t i = 0; i < 3; i++)
        CHECK(WAIT_UNTIL(node_q(i, "ZCARD %s:wq", key) == 1, 30000, "W registered"));
    char member[128];
    queue_head(0, key, member, sizeof member);
    CHECK(member[0] != '\0');
    double ticket = queue_ticket(0, key, member);
    CHECK(ticket > 0);
    CHECK(atomic_load(&rw->split) == 0);

    /* H's key goes from node 0; W is brought to try, and is granted on node 0 only. */
    CHECK(node_q(0, "DEL %s", key) == 1);
    char chan[160], msg[700];
    snprintf(chan, sizeof chan, "redlock:wake:%.*s", (int)strcspn(member, ":"), member);
    snprintf(msg, sizeof msg, "%s split\n%s", member, key);
    int failed = count(rw, REDLOCK_EVENT_ACQUIRE_FAILED);
    if (late)
        CHECK(harness("PAUSE 0") == 0);
    CHECK(node_q(late ? 1 : 0, "PUBLISH %s %s", chan, msg) == 1);   /* W's listener */
    if (late) {
        CHECK(WAIT_UNTIL(count(rw, REDLOCK_EVENT_ACQUIRE_FAILED) > failed, 30000, "W's attempt"));
        CHECK(harness("RESUME 0") == 0);
    }
    CHECK(WAIT_UNTIL(atomic_load(&rw->split) >= 1, 30000, "W's split round"));
    CHECK(WAIT_UNTIL(node_q(0, "EXISTS %s", key) == 0, 5000, "W's clean-up on node 0"));
    CHECK(!redlock_lock_is_held(w.lock));
    /* W is still the head on every node, node 0 included, with its ticket. */
    for (size_t i = 0; i < 3; i++) {
        char head[128];
        queue_head(i, key, head, sizeof head);
        if (strcmp(head, member) != 0)
            fprintf(stderr, "  node %zu: head '%s', W is '%s'\n", i, head, member);
        CHECK(strcmp(head, member) == 0);
        CHECK(queue_ticket(i, key, member) == ticket);
    }
    /* Node 0 keeps its free key for W: a fair contender over node 0 alone
     * (its round is that node's decision) is refused. */
    redlock_client *c0 = client_rec(0, 1, NULL, 0, 200, REDLOCK_OPT_FAIR);
    redlock_lock *lc;
    CHECK_RC(redlock_lock_new(&lc, c0, res), 0);
    int rc0 = redlock_lock_acquire(lc, 10000, REDLOCK_WAIT_NONE);
    CHECK_LOCK_RC(lc, rc0, REDLOCK_ENOTACQUIRED);
    if (rc0 == 0)
        redlock_lock_release(lc);
    redlock_lock_free(lc);
    redlock_client_free(c0);

    /* H releases and comes straight back: the head is served first. */
    CHECK_LOCK_RC(lh, redlock_lock_release(lh), 0);
    CHECK_LOCK_RC(lh, redlock_lock_acquire(lh, 10000, 30000), 0);
    int h_place = atomic_fetch_add(&order, 1);
    finish(&w);
    CHECK_RC(w.rc, 0);
    CHECK_RC(w.release_rc, 0);
    fprintf(stderr, "  W served %d, H %d\n", w.place, h_place);
    CHECK(w.place == 0 && h_place == 1);
    CHECK_LOCK_RC(lh, redlock_lock_release(lh), 0);
    /* W's release took its registration out; H's, H's. */
    for (size_t i = 0; i < 3; i++) {
        CHECK(WAIT_UNTIL(queue_keys(i, key) == 0, 5000, "the queue to go"));
        CHECK(WAIT_UNTIL(node_q(i, "EXISTS %s", key) == 0, 5000, "the key to go"));
    }
    redlock_lock_free(w.lock);
    redlock_lock_free(lh);
    redlock_client_free(h);
    redlock_client_free(wc);
    rec_free(rw);
}

static void test_fair_split_round(void)
{
    fair_split(0);
}

static void test_fair_split_round_late(void)
{
    fair_split(1);
}

/* ---- 6b. a woken waiter refused everywhere: a release spent ---- */

/* How many SET commands node i has run (INFO commandstats), -1 if unknown. */
static long long set_calls(size_t i)
{
    redisContext *c = node_conn(i);
    redisReply *r = c ? redisCommand(c, "INFO commandstats") : NULL;
    long long n = -1;
    const char *p = r && r->type == REDIS_REPLY_VERB ? r->str : r && r->type == REDIS_REPLY_STRING ? r->str : NULL;
    if (p && (p = strstr(p, "cmdstat_set:calls=")))
        n = atoll(p + strlen("cmdstat_set:calls="));
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* A woken waiter whose plain SET is refused everywhere (3-node client),
 * and nobody left to wake it (models/wake.pml, wake-only-spent). W waits,
 * registered on every node; its retry delay is far beyond the test, so
 * only a wake-up, or a sleep bounded by a holder's expiry, brings its next
 * attempt. On each node, in one MULTI, the test runs H's release (as the
 * release script does it: compare-and-delete, then the wake-up message to
 * the head of the queue, tagged with the released value) and a holder
 * that comes straight back for 300 ms and never releases. W is woken, its
 * plain SET NX PX is refused on all three nodes, and that release is spent:
 * no message comes when the comeback expires. W once took the plain
 * refusal for a holder with a TTL like its own and slept that TTL (4 s
 * here, with the lock free after 300 ms); it now asks again within a few
 * ms with the script, which tells the comeback's real TTL, and has the
 * lock just after it expires. */
static void test_woken_refused_everywhere(void)
{
    enum { W_TTL = 4000, COMEBACK_MS = 300, BOUND_MS = 1500 };
    rec *rw = rec_new();
    redlock_client *h = client_rec(0, 3, NULL, 0, 200, 0);
    redlock_client *wc = client_rec(0, 3, rw, 0, 60000, 0);
    const char *res = uniq("woken-refused"), *key = key_of(res);
    redlock_lock *lh;
    holder(h, res, 30000, &lh);
    waiter w = { .c = wc, .res = res, .ttl = W_TTL, .wait = 8000, .id = 1 };
    start(&w);
    CHECK(WAIT_UNTIL(listeners_in(wc, REDLOCK_LISTENER_READY) == 3, 30000, "W's 3 listeners READY"));
    for (size_t i = 0; i < 3; i++)
        CHECK(WAIT_UNTIL(node_q(i, "ZCARD %s:wq", key) == 1, 30000, "W registered"));
    /* Attempt 1 (plain) and 2 (the script, which registered) are over: W sleeps. */
    CHECK(WAIT_UNTIL(count(rw, REDLOCK_EVENT_ACQUIRE_FAILED) >= 2, 30000, "W's registering attempt"));
    char member[128], value[3][128];
    queue_head(0, key, member, sizeof member);
    CHECK(member[0] != '\0');
    redisContext *nc[3];
    int conns = 1;
    for (size_t i = 0; i < 3; i++) {
        nc[i] = node_conn(i);
        conns &= nc[i] != NULL;
    }
    CHECK(conns);
    for (size_t i = 0; i < 3 && conns; i++) {
        redisReply *r = redisCommand(nc[i], "GET %s", key);
        snprintf(value[i], sizeof value[i], "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
        freeReplyObject(r);
        CHECK(value[i][0] != '\0' && strcmp(value[i], value[0]) == 0);   /* H holds on every node */
    }
    long long sets0[3];
    for (size_t i = 0; i < 3; i++)
        sets0[i] = set_calls(i);
    char chan[160], msg[700];
    snprintf(chan, sizeof chan, "redlock:wake:%.*s", (int)strcspn(member, ":"), member);
    snprintf(msg, sizeof msg, "%s %s\n%s", member, value[0], key);
    /* The comeback's value, as the library writes one ('w' and 40 hex digits). */
    const char *comeback = "w0123456789abcdef0123456789abcdef01234567";

    mark(rw);
    int failed = count(rw, REDLOCK_EVENT_ACQUIRE_FAILED);
    double t0 = now_ms();
    for (size_t i = 0; i < 3 && conns; i++) {
        redisAppendCommand(nc[i], "MULTI");
        redisAppendCommand(nc[i], "EVAL %s 1 %s %s",
                           "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
                           key, value[0]);
        redisAppendCommand(nc[i], "PUBLISH %s %s", chan, msg);
        redisAppendCommand(nc[i], "SET %s %s PX %d", key, comeback, (int)COMEBACK_MS);
        redisAppendCommand(nc[i], "EXEC");
    }
    for (size_t i = 0; i < 3 && conns; i++) {   /* sent to the three nodes before any reply is read */
        int done = 0;
        while (!done && redisBufferWrite(nc[i], &done) == REDIS_OK) {}
    }
    for (size_t i = 0; i < 3 && conns; i++) {
        redisReply *r = NULL;
        for (int k = 0; k < 5; k++) {
            freeReplyObject(r);
            r = NULL;
            if (redisGetReply(nc[i], (void **)&r) != REDIS_OK)
                break;
        }
        /* H's key deleted, the message received by W's listener, the comeback's SET done. */
        int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_INTEGER &&
                 r->element[0]->integer == 1 && r->element[1]->type == REDIS_REPLY_INTEGER &&
                 r->element[1]->integer == 1 && r->element[2]->type == REDIS_REPLY_STATUS;
        if (!ok)
            fprintf(stderr, "  node %zu: the release and comeback's EXEC did not do all three\n", i);
        CHECK(ok);
        freeReplyObject(r);
    }
    for (size_t i = 0; i < 3; i++)
        redisFree(nc[i]);
    /* W's next attempt is a woken one, refused on every node: a plain SET.
     * On each node a SET besides the comeback's came while the comeback
     * still held there (the acquire script sets nothing when it refuses,
     * and W's grant can come only once the comeback has expired). A round
     * refused by two nodes is decided: the third one's SET may come a
     * moment later. */
    CHECK(WAIT_UNTIL(count(rw, REDLOCK_EVENT_ACQUIRE_FAILED) > failed, 5000, "W's woken attempt"));
    CHECK(woken_before(rw, REDLOCK_EVENT_ACQUIRE_FAILED));
    for (size_t i = 0; i < 3; i++) {
        long long sets = -1;
        CHECK(sets0[i] >= 0);
        CHECK(WAIT_UNTIL((sets = set_calls(i)) - sets0[i] >= 2, 5000, "W's plain SET on every node"));
        char held[128];
        redisContext *c = node_conn(i);
        redisReply *r = c ? redisCommand(c, "GET %s", key) : NULL;
        snprintf(held, sizeof held, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
        freeReplyObject(r);
        redisFree(c);
        if (strcmp(held, comeback) != 0)
            fprintf(stderr, "  node %zu: %lld SETs since the release, key '%s'\n", i, sets - sets0[i], held);
        CHECK(strcmp(held, comeback) == 0);
    }
    finish(&w);
    CHECK_RC(w.rc, 0);
    CHECK(atomic_load(&rw->split) == 0);   /* no node granted W before the comeback expired */
    double took = w.acquired_ms - t0;
    fprintf(stderr, "  W: %d WOKEN, acquired at attempt %u, %.0f ms after the release (comeback %d ms, W's TTL %d ms)\n",
            after_mark(rw, REDLOCK_EVENT_WOKEN), rw->last_acquired_attempt, took, (int)COMEBACK_MS, (int)W_TTL);
    CHECK(took >= COMEBACK_MS - 50);   /* not before the comeback expired */
    CHECK(took < BOUND_MS);
    CHECK(woken_before(rw, REDLOCK_EVENT_ACQUIRED));
    if (t_failures)
        print_listener_events(rw, "W");
    if (w.rc == 0)
        CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
    for (size_t i = 0; i < 3; i++) {
        CHECK(WAIT_UNTIL(queue_keys(i, key) == 0, 5000, "the queue to go"));
        CHECK(WAIT_UNTIL(node_q(i, "EXISTS %s", key) == 0, 5000, "the key to go"));
    }
    redlock_lock_free(w.lock);
    redlock_lock_free(lh);   /* H never releases: its key went with the emulated release */
    redlock_client_free(h);
    redlock_client_free(wc);
    rec_free(rw);
}

/* ---- 7. an ACL user with the old minimal rule set ---- */

#define ACL_USER "wakeacl"
#define ACL_PW "Wake-acl-pw-7"

static atomic_int inside, overlaps, acl_acquired, acl_failed;
static redlock_client *acl_clients[3];
static const char *acl_res;

static void *acl_worker(void *arg)
{
    long id = (long)arg;
    for (int k = 0; k < 5; k++) {
        redlock_lock *l;
        if (redlock_lock_new(&l, acl_clients[id], acl_res) != 0) {
            atomic_fetch_add(&acl_failed, 1);
            continue;
        }
        int rc = redlock_lock_acquire(l, 10000, 30000);
        if (rc != 0) {
            fprintf(stderr, "  acl worker %ld: %s: %s\n", id, redlock_error_name(rc), redlock_lock_errmsg(l));
            atomic_fetch_add(&acl_failed, 1);
        } else {
            if (atomic_fetch_add(&inside, 1) != 0)
                atomic_fetch_add(&overlaps, 1);
            atomic_fetch_add(&acl_acquired, 1);
            msleep(2);
            atomic_fetch_sub(&inside, 1);
            if (redlock_lock_release(l) != 0)
                atomic_fetch_add(&acl_failed, 1);
        }
        redlock_lock_free(l);
    }
    return NULL;
}

static void test_acl_minimal_user(void)
{
    for (size_t i = 0; i < 3; i++)
        CHECK(node_q(i, "ACL SETUSER " ACL_USER " reset on >" ACL_PW
                        " ~" PREFIX "* +set +get +del +pexpire +eval +evalsha +ping") == 1);
    const char *urls[3];
    char buf[3][256];
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf[i], sizeof buf[i], "redis://" ACL_USER ":" ACL_PW "@%s", t_urls[i] + strlen("redis://"));
        urls[i] = buf[i];
    }
    rec *rb = rec_new();
    redlock_options o;
    roomy(&o);
    redlock_client *a = client_over(0, 3, &o, urls);
    o.on_event = on_event;
    o.on_event_userdata = rb;
    redlock_client *b = client_over(0, 3, &o, urls);
    const char *res = uniq("acl");
    redlock_lock *la;
    holder(a, res, 30000, &la);
    waiter w = { .c = b, .res = res, .ttl = 10000, .wait = 30000, .id = 1 };
    start(&w);
    CHECK(WAIT_UNTIL(count(rb, REDLOCK_EVENT_ACQUIRE_FAILED) >= 3, 30000, "B's retries"));
    CHECK(!redlock_lock_is_held(w.lock));   /* no false acquisition */
    CHECK(WAIT_UNTIL(listeners_in(b, REDLOCK_LISTENER_REFUSED) + listeners_in(b, REDLOCK_LISTENER_DOWN) == 3, 30000,
                     "B's listeners REFUSED or DOWN"));
    print_listeners(b, "B");
    mark(rb);
    CHECK_LOCK_RC(la, redlock_lock_release(la), 0);
    finish(&w);
    CHECK_RC(w.rc, 0);
    CHECK(count(rb, REDLOCK_EVENT_WOKEN) == 0);
    CHECK(listeners_in(b, REDLOCK_LISTENER_REFUSED) + listeners_in(b, REDLOCK_LISTENER_DOWN) == 3);
    CHECK(listeners_in(b, REDLOCK_LISTENER_READY) == 0);
    if (w.rc == 0)
        CHECK_LOCK_RC(w.lock, redlock_lock_release(w.lock), 0);
    redlock_lock_free(w.lock);
    redlock_lock_free(la);

    /* Three clients of that user contending, each waiting: never two holders. */
    acl_res = uniq("acl-contended");
    acl_clients[0] = a;
    acl_clients[1] = b;
    acl_clients[2] = client_over(0, 3, &o, urls);
    pthread_t th[3];
    for (long t = 0; t < 3; t++)
        pthread_create(&th[t], NULL, acl_worker, (void *)t);
    for (int t = 0; t < 3; t++)
        pthread_join(th[t], NULL);
    CHECK(atomic_load(&overlaps) == 0);
    CHECK(atomic_load(&acl_failed) == 0);
    CHECK(atomic_load(&acl_acquired) == 15);
    for (size_t i = 0; i < 3; i++) {
        CHECK(WAIT_UNTIL(node_q(i, "EXISTS %s", key_of(res)) == 0, 5000, "the key to go"));
        CHECK(WAIT_UNTIL(node_q(i, "EXISTS %s", key_of(acl_res)) == 0, 5000, "the key to go"));
    }
    for (int k = 0; k < 3; k++)
        redlock_client_free(acl_clients[k]);
    rec_free(rb);
    for (size_t i = 0; i < 3; i++)
        node_q(i, "ACL DELUSER " ACL_USER);
}

/* ---- 8. listeners that cannot subscribe: the fallback still bounds the sleep ---- */

/* A user allowed everything but SUBSCRIBE: the waiter's listeners are
 * refused, so no release can wake it, and its retry delay is a minute.
 * The holder never releases; its key expires after 1.5 s. The waiter,
 * whose wait is bounded by time, sleeps no longer than a polling waiter:
 * until the holder's key is due to expire (capped at 5 s), not its retry
 * delay (which the 20 s wait would cut short at 20 s). */
static void test_unready_listeners_bounded(void)
{
    for (size_t i = 0; i < 3; i++)
        CHECK(node_q(i, "ACL SETUSER nosub reset on >" ACL_PW " ~* &* +@all -subscribe -psubscribe -ssubscribe") == 1);
    const char *urls[3];
    char buf[3][256];
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf[i], sizeof buf[i], "redis://nosub:" ACL_PW "@%s", t_urls[i] + strlen("redis://"));
        urls[i] = buf[i];
    }
    redlock_options o;
    roomy(&o);
    redlock_client *a = client_over(0, 3, &o, NULL);
    o.retry_delay_ms = 60000;
    o.retry_jitter_ms = 0;
    redlock_client *b = client_over(0, 3, &o, urls);
    const char *res = uniq("nosub");
    redlock_lock *la, *lb;
    holder(a, res, 1500, &la);
    CHECK_RC(redlock_lock_new(&lb, b, res), 0);
    double t0 = now_ms();
    CHECK_LOCK_RC(lb, redlock_lock_acquire(lb, 10000, 20000), 0);
    double took = now_ms() - t0;
    fprintf(stderr, "  acquired %.0f ms after the holder's 1.5 s lock was taken\n", took);
    CHECK(took < 10000);
    CHECK(listeners_in(b, REDLOCK_LISTENER_READY) == 0);
    if (redlock_lock_is_held(lb))
        CHECK_LOCK_RC(lb, redlock_lock_release(lb), 0);
    redlock_lock_free(lb);
    redlock_lock_free(la);
    redlock_client_free(b);
    redlock_client_free(a);
    for (size_t i = 0; i < 3; i++)
        node_q(i, "ACL DELUSER nosub");
}

int main(void)
{
    load_nodes();
    if (t_nurls != 5 || strncmp(t_urls[0], "redis://", 8) != 0) {
        fprintf(stderr, "test_wake needs 5 TCP nodes (nodes.py exec --count 5)\n");
        return 2;
    }
    run_test("wakeup_basic", test_wakeup_basic);
    run_test("wakeup_after_long_hold", test_wakeup_after_long_hold);
    run_test("no_wake", test_no_wake);
    run_test("restart_one_of_three", test_restart_one_of_three);
    run_test("restart_only_node_queue_lost", test_restart_only_node_queue_lost);
    run_test("paused_node", test_paused_node);
    run_test("winner_leaves_unawaited_node", test_winner_leaves_unawaited_node);
    run_test("many_waits_no_leak", test_many_waits_no_leak);
    run_test("fair_order", test_fair_order);
    run_test("fair_split_round", test_fair_split_round);
    run_test("fair_split_round_late", test_fair_split_round_late);
    run_test("woken_refused_everywhere", test_woken_refused_everywhere);
    run_test("acl_minimal_user", test_acl_minimal_user);
    run_test("unready_listeners_bounded", test_unready_listeners_bounded);
    return finish_tests();
}
