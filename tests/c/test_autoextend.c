/* SPDX-License-Identifier: BSD-3-Clause */
/* test_autoextend.c: redlock_lock_auto_extend on real nodes: a short-TTL lock
 * stays held for many TTLs; loss (key deleted behind the lock's back,
 * majority down) and the hold bound are reported through the callback and
 * is_held; the at-risk notice before a loss (redlock_lock_auto_extend); a
 * thousand locks on one thread; the owner's calls meanwhile; a callback that
 * releases; clean shutdown. */
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct lost_box {
    atomic_int fired;
    atomic_int code;
    atomic_int held_in_cb;
    char msg[512];
    int release_in_cb;
    int release_rc;
} lost_box;

static void on_lost(redlock_lock *lock, int code, const char *message, void *userdata)
{
    lost_box *b = userdata;
    snprintf(b->msg, sizeof b->msg, "%s", message);
    atomic_store(&b->held_in_cb, redlock_lock_is_held(lock));
    if (b->release_in_cb)
        b->release_rc = redlock_lock_release(lock);
    atomic_store(&b->code, code);
    atomic_fetch_add(&b->fired, 1);
}

static atomic_int n_auto_ext, n_at_risk;
static void count_events(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_EXTENDED && ev->automatic)
        atomic_fetch_add(&n_auto_ext, 1);
    if (ev->type == REDLOCK_EVENT_AT_RISK && ev->code == REDLOCK_EATRISK && ev->validity_ms > 0)
        atomic_fetch_add(&n_at_risk, 1);
}

/* Every notice on_lost gets: its code, when, and the validity then left. */
typedef struct notices {
    atomic_int n;
    int code[4];
    int64_t at_ms[4];
    int64_t validity_ms[4];
    int held[4];
    char msg[4][512];
} notices;

static void on_notice(redlock_lock *lock, int code, const char *message, void *userdata)
{
    notices *b = userdata;
    int k = atomic_load(&b->n);
    if (k < 4) {
        b->code[k] = code;
        b->at_ms[k] = now_ms();
        b->validity_ms[k] = redlock_lock_validity_ms(lock);
        b->held[k] = redlock_lock_is_held(lock);
        snprintf(b->msg[k], sizeof b->msg[k], "%s", message);
    }
    atomic_fetch_add(&b->n, 1);
}

static redlock_client *client(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 300;   /* well under the TTLs used here */
    o.on_event = count_events;
    return make_client(t_nurls, &o);
}

/* Waits up to ms for the callback. */
static int wait_fired(lost_box *b, int ms)
{
    for (int i = 0; i < ms / 10 && !atomic_load(&b->fired); i++)
        msleep(10);
    return atomic_load(&b->fired);
}

static void test_keeps_alive(void)
{
    redlock_client *c = client();
    redlock_lock *l;
    lost_box b = { 0 };
    CHECK_RC(redlock_lock_new(&l, c, uniq("alive")), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_lost, &b, NULL), REDLOCK_ESTATE);  /* not held */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 1000, REDLOCK_WAIT_NONE), 0);
    int before = atomic_load(&n_auto_ext);
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_lost, &b, NULL), 0);
    /* 3.6 TTLs: without extensions it would have expired three times over.
     * Extensions come every 333 ms, so a late one still has 600 ms to spare
     * on a loaded machine or under TSan. */
    for (int i = 0; i < 12; i++) {
        msleep(300);
        CHECK(redlock_lock_is_held(l));
    }
    CHECK(atomic_load(&n_auto_ext) - before >= 4);
    CHECK(redlock_lock_extensions(l) >= 4);   /* the automatic ones, counted on the handle */
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);   /* stops auto-extension too */
    int after = atomic_load(&n_auto_ext);
    msleep(700);
    CHECK(atomic_load(&n_auto_ext) == after);
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_RC(redlock_lock_auto_extend_stop(l), REDLOCK_ESTATE);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void delete_everywhere(const char *key)
{
    CHECK(key_on_every_node(t_nurls, key));   /* the lock's SETs first, then the DELs */
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(ctl(NULL, 0, "cmd %zu DEL %s", i, key) == 0);
}

static void test_lost_key_deleted(void)
{
    redlock_client *c = client();
    redlock_lock *l;
    lost_box b = { 0 };
    const char *res = uniq("lost");
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 900, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_lost, &b, NULL), 0);
    delete_everywhere(res);
    CHECK(wait_fired(&b, 5000) == 1);
    CHECK(atomic_load(&b.code) == REDLOCK_ELOST);
    CHECK(atomic_load(&b.held_in_cb) == 0);
    CHECK(strstr(b.msg, "lost") != NULL);
    CHECK(!redlock_lock_is_held(l));
    CHECK(redlock_lock_validity_ms(l) <= 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 900), REDLOCK_ELOST);
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ELOST);
    /* the handle can be acquired again, and auto-extended again */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 900, REDLOCK_WAIT_NONE), 0);
    lost_box b2 = { 0 };
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_lost, &b2, NULL), 0);
    msleep(1200);
    CHECK(redlock_lock_is_held(l) && atomic_load(&b2.fired) == 0);
    redlock_lock_free(l);   /* held and auto-extended: free stops it and does no I/O */
    redlock_client_free(c);
}

/* The callback may release the lock it is told about. */
static void test_release_in_callback(void)
{
    redlock_client *c = client();
    redlock_lock *l;
    lost_box b = { 0 };
    b.release_in_cb = 1;
    const char *res = uniq("cbrel");
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 900, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_lost, &b, NULL), 0);
    delete_everywhere(res);
    CHECK(wait_fired(&b, 5000) == 1);
    CHECK(b.release_rc == REDLOCK_ELOST);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_bound(void)
{
    redlock_client *c = client();
    redlock_lock *l;
    lost_box b = { 0 };
    CHECK_RC(redlock_lock_new(&l, c, uniq("bound")), 0);
    double t0 = now_ms();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 1000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 2500, 0, on_lost, &b, NULL), 0);
    msleep(1300);
    CHECK(redlock_lock_is_held(l));             /* past the TTL: extended */
    /* the validity never reaches past the bound (acquire started after t0) */
    int past = 0;
    for (int i = 0; i < 800 && !atomic_load(&b.fired); i++) {
        double t = now_ms();
        int64_t v = redlock_lock_validity_ms(l);
        past |= v > 0 && t + (double)v > t0 + 2500 + 1;
        msleep(10);
    }
    CHECK(!past);
    CHECK(atomic_load(&b.fired) == 1);
    CHECK(atomic_load(&b.code) == REDLOCK_ELIMIT);
    /* told only once the validity ran out, and never held past the bound */
    CHECK(!redlock_lock_is_held(l));
    CHECK(now_ms() - t0 >= 2500 - 1000);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_majority_down(void)
{
    redlock_client *c = client();
    redlock_lock *l;
    lost_box b = { 0 };
    CHECK_RC(redlock_lock_new(&l, c, uniq("down")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 1500, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_lost, &b, NULL), 0);
    size_t quorum = t_nurls / 2 + 1;
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "kill %zu", i) == 0);
    CHECK(wait_fired(&b, 8000) == 1);
    CHECK(atomic_load(&b.code) == REDLOCK_EEXPIRED);
    CHECK(strstr(b.msg, "ran out") != NULL);
    CHECK(!redlock_lock_is_held(l));
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "restart %zu", i) == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* redlock_lock_auto_extend: with a majority paused, extensions fail; the
 * holder hears REDLOCK_EATRISK while the lock is still held, a margin
 * before its validity ends, and the loss after it. */
static void test_at_risk(void)
{
    redlock_client *c = client();   /* node_timeout_ms 300: default margin 600 ms of 3 s */
    redlock_lock *l;
    notices b;
    memset(&b, 0, sizeof b);
    atomic_store(&n_at_risk, 0);
    CHECK_RC(redlock_lock_new(&l, c, uniq("risk")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 3000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 0, REDLOCK_AT_RISK_DEFAULT, on_notice, &b, NULL), 0);
    size_t quorum = t_nurls / 2 + 1;
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "pause %zu", i) == 0);
    /* Paused before the first extension (due at 1 s): none succeeds. */
    for (int i = 0; i < 800 && atomic_load(&b.n) < 2; i++)
        msleep(10);
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "resume %zu", i) == 0);
    CHECK(atomic_load(&b.n) == 2);
    CHECK(b.code[0] == REDLOCK_EATRISK);
    CHECK(b.held[0] == 1);                       /* not lost yet */
    CHECK(b.validity_ms[0] > 300);               /* about the 600 ms margin left */
    CHECK(b.validity_ms[0] <= 700);
    CHECK(strstr(b.msg[0], "validity ends in") != NULL);
    CHECK(b.code[1] == REDLOCK_EEXPIRED);        /* then the loss, at the end */
    CHECK(b.held[1] == 0);
    CHECK(b.at_ms[1] - b.at_ms[0] >= 300);
    CHECK(atomic_load(&n_at_risk) == 1);
    CHECK(strcmp(redlock_error_name(REDLOCK_EATRISK), "REDLOCK_EATRISK") == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* A margin asked for but never reached: a healthy lock hears nothing; and
 * an at_risk_ms of 0 (no margin) only ever hears the loss. */
static void test_at_risk_quiet(void)
{
    redlock_client *c = client();
    redlock_lock *l;
    notices b;
    memset(&b, 0, sizeof b);
    atomic_store(&n_at_risk, 0);
    CHECK_RC(redlock_lock_new(&l, c, uniq("quiet")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 1500, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 0, 500, on_notice, &b, NULL), 0);
    msleep(3500);
    CHECK(atomic_load(&b.n) == 0);
    CHECK(redlock_lock_is_held(l));
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_notice, &b, NULL), 0);
    size_t quorum = t_nurls / 2 + 1;
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "pause %zu", i) == 0);
    for (int i = 0; i < 400 && atomic_load(&b.n) < 1; i++)
        msleep(10);
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "resume %zu", i) == 0);
    msleep(200);
    CHECK(atomic_load(&b.n) == 1);
    CHECK(b.code[0] == REDLOCK_EEXPIRED);
    CHECK(atomic_load(&n_at_risk) == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

#define MANY 1000
static void test_many_locks(void)
{
    redlock_client *c = client();
    static redlock_lock *locks[MANY];
    lost_box b = { 0 };
    int before = atomic_load(&n_auto_ext);
    for (int i = 0; i < MANY; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", uniq("many"), i);
        CHECK_RC(redlock_lock_new(&locks[i], c, name), 0);
        CHECK_LOCK_RC(locks[i], redlock_lock_acquire(locks[i], 6000, 2000), 0);
        CHECK_RC(redlock_lock_auto_extend(locks[i], 0, 0, on_lost, &b, NULL), 0);
    }
    /* Every lock gets extended (at TTL/3 = 2 s) by the one thread. */
    for (int w = 0; w < 100 && atomic_load(&n_auto_ext) - before < MANY; w++)
        msleep(100);
    CHECK(atomic_load(&n_auto_ext) - before >= MANY);
    int held = 0;
    for (int i = 0; i < MANY; i++)
        held += redlock_lock_is_held(locks[i]);
    CHECK(held == MANY);
    CHECK(atomic_load(&b.fired) == 0);
    for (int i = 0; i < MANY; i++) {
        CHECK_RC(redlock_lock_release(locks[i]), 0);
        redlock_lock_free(locks[i]);
    }
    redlock_client_free(c);
}

/* The owner extends and reads while the thread extends too. */
typedef struct { redlock_lock *l; lost_box *box; atomic_int stop; int fails; } owner_arg;
static void *owner_thread(void *p)
{
    owner_arg *a = p;
    while (!atomic_load(&a->stop)) {
        if (redlock_lock_extend(a->l, 600) != 0 || !redlock_lock_is_held(a->l))
            a->fails++;
        /* re-arming while the thread may be extending must not deadlock */
        if (redlock_lock_auto_extend(a->l, 0, 0, on_lost, a->box, NULL) != 0)
            a->fails++;
        int code;
        int64_t rtt;
        char m[64];
        (void)redlock_lock_node_result(a->l, 0, &code, &rtt, m, sizeof m);
        msleep(5);
    }
    return NULL;
}

static void test_owner_concurrent(void)
{
    redlock_client *c = client();
    redlock_lock *l;
    lost_box b = { 0 };
    CHECK_RC(redlock_lock_new(&l, c, uniq("owner")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 600, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(l, 0, 0, on_lost, &b, NULL), 0);
    owner_arg a = { .l = l, .box = &b };
    pthread_t t;
    pthread_create(&t, NULL, owner_thread, &a);
    /* meanwhile, another thread only polls, as any thread may */
    for (int i = 0; i < 30; i++) {
        CHECK(redlock_lock_is_held(l) && redlock_lock_validity_ms(l) > 0);
        msleep(50);
    }
    atomic_store(&a.stop, 1);
    pthread_join(t, NULL);
    CHECK(a.fails == 0);
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    /* Quarantine off: it kills and restarts nodes without persistence to test losses
     * (test_quarantine.c tests what a restarted node does to the vote). */
    t_no_quarantine = 1;
    run_test("keeps_alive", test_keeps_alive);
    run_test("lost_key_deleted", test_lost_key_deleted);
    run_test("release_in_callback", test_release_in_callback);
    run_test("bound", test_bound);
    run_test("owner_concurrent", test_owner_concurrent);
    run_test("many_locks", test_many_locks);
    run_test("majority_down", test_majority_down);
    run_test("at_risk", test_at_risk);
    run_test("at_risk_quiet", test_at_risk_quiet);
    return finish_tests();
}
