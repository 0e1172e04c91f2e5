/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules.c: the rules the bindings read from C instead of copying them:
 * redlock_error_is_retryable, redlock_flags_wake, REDLOCK_WAIT_FOREVER, redlock_lock_options_init,
 * redlock_lock_open's reasons, and redlock_lock_auto_extend's userdata_free,
 * on real nodes. */
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>

static void test_retryable(void)
{
    static const int yes[] = { REDLOCK_ENOTACQUIRED, REDLOCK_ENOQUORUM, REDLOCK_EEXPIRED, REDLOCK_EIO,
                               REDLOCK_ESERVER };
    static const int no[] = { REDLOCK_OK, REDLOCK_EINVAL, REDLOCK_ENOMEM, REDLOCK_ELOST, REDLOCK_ETIMEDOUT,
                              REDLOCK_EAUTH, REDLOCK_ETLS, REDLOCK_ENOTSUP, REDLOCK_ECANCELED, REDLOCK_ELIMIT,
                              REDLOCK_ESTATE, REDLOCK_EUNREACHABLE, -1000, 5 };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        CHECK(redlock_error_is_retryable(yes[i]) == 1);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECK(redlock_error_is_retryable(no[i]) == 0);

    /* What a contended attempt on real nodes returns is one a wait retries. */
    redlock_client *c = make_client(t_nurls, NULL);
    const char *name = uniq("retryable");
    redlock_lock *a = NULL, *b = NULL;
    CHECK_RC(redlock_lock_new(&a, c, name), 0);
    CHECK_RC(redlock_lock_new(&b, c, name), 0);
    CHECK_LOCK_RC(a, redlock_lock_acquire(a, 30000, REDLOCK_WAIT_NONE), 0);
    int rc = redlock_lock_acquire(b, 30000, REDLOCK_WAIT_NONE);
    CHECK(rc == REDLOCK_ENOTACQUIRED);
    CHECK(redlock_error_is_retryable(rc));
    CHECK_LOCK_RC(a, redlock_lock_release(a), 0);
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_client_free(c);
}

typedef struct waiter {
    redlock_lock *lock;
    int64_t wait_ms;
    atomic_int started;
    int rc;
} waiter;

static void *wait_thread(void *arg)
{
    waiter *w = arg;
    atomic_store(&w->started, 1);
    w->rc = redlock_lock_acquire(w->lock, 30000, w->wait_ms);
    return NULL;
}

static void test_wait_forever(void)
{
    CHECK(REDLOCK_WAIT_FOREVER != REDLOCK_WAIT_DEFAULT && REDLOCK_WAIT_FOREVER != REDLOCK_WAIT_NONE &&
          REDLOCK_WAIT_FOREVER < 0);
    redlock_client *c = make_client(t_nurls, NULL);
    const char *name = uniq("forever");
    redlock_lock *a = NULL, *b = NULL;
    CHECK_RC(redlock_lock_new(&a, c, name), 0);
    CHECK_RC(redlock_lock_new(&b, c, name), 0);

    /* Out of range on either side; seven days is the longest finite wait. */
    CHECK_LOCK_RC(b, redlock_lock_acquire(b, 30000, -3), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(b), "wait_ms") != NULL);
    CHECK_LOCK_RC(b, redlock_lock_acquire(b, 30000, (int64_t)REDLOCK_MAX_WAIT_MS + 1), REDLOCK_EINVAL);

    /* A wait with no deadline ends when the holder releases. */
    CHECK_LOCK_RC(a, redlock_lock_acquire(a, 30000, REDLOCK_WAIT_NONE), 0);
    waiter w = { .lock = b, .wait_ms = REDLOCK_WAIT_FOREVER };
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &w);
    EVENTUALLY(atomic_load(&w.started), 5000, "the waiter to start");
    CHECK_LOCK_RC(a, redlock_lock_release(a), 0);
    pthread_join(t, NULL);
    CHECK(w.rc == 0);
    CHECK(redlock_lock_is_held(b));

    /* And with a cancel: the rc tells which ended it. */
    redlock_lock_cancel_reset(a);
    waiter w2 = { .lock = a, .wait_ms = REDLOCK_WAIT_FOREVER };
    pthread_create(&t, NULL, wait_thread, &w2);
    EVENTUALLY(atomic_load(&w2.started), 5000, "the second waiter to start");
    redlock_lock_cancel(a);
    pthread_join(t, NULL);
    CHECK(w2.rc == REDLOCK_ECANCELED);
    CHECK(!redlock_lock_is_held(a));
    CHECK_LOCK_RC(b, redlock_lock_release(b), 0);
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_client_free(c);
}

static void test_lock_options_init(void)
{
    redlock_options d;
    redlock_options_init(&d);
    redlock_lock_options lo;
    memset(&lo, 0xff, sizeof lo);
    redlock_lock_options_init(&lo);
    CHECK(lo.version == REDLOCK_LOCK_OPTIONS_VERSION);
    CHECK(lo.retry_count == d.retry_count && lo.retry_delay_ms == d.retry_delay_ms);
    CHECK(lo.retry_jitter_ms == d.retry_jitter_ms && lo.wait_ms == d.wait_ms);
    CHECK(lo.drift_factor == d.drift_factor && lo.drift_min_ms == d.drift_min_ms);
    CHECK(lo.flags == 0);

    /* The exported function (for cgo and SWIG) gives the same. */
    redlock_lock_options lf;
    memset(&lf, 0xff, sizeof lf);
    (redlock_lock_options_init)(&lf);
    CHECK(memcmp(&lf, &lo, offsetof(redlock_lock_options, flags) + sizeof lo.flags) == 0);

    /* Version 1 has no flags: they are left alone. */
    redlock_lock_options v1;
    memset(&v1, 0xab, sizeof v1);
    CHECK_RC(redlock_lock_options_init_version(&v1, 1), 0);
    CHECK(v1.version == 1 && v1.retry_count == d.retry_count && v1.drift_min_ms == d.drift_min_ms);
    CHECK(v1.flags == 0xabababab);
    CHECK_RC(redlock_lock_options_init_version(&v1, 0), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_options_init_version(&v1, 3), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_options_init_version(NULL, 2), REDLOCK_EINVAL);
    redlock_lock_options_init(NULL);   /* ignored */

    /* The defaults, not the client's: a lock of a client with other options
     * goes back to them, and they pass set_options' checks. */
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.retry_count = 9;
    o.retry_delay_ms = 77;
    o.flags = REDLOCK_OPT_FAIR;
    redlock_client *c = make_client(t_nurls, &o);
    redlock_lock *l = NULL;
    CHECK_RC(redlock_lock_new(&l, c, uniq("lockopts")), 0);
    redlock_lock_options got = { .version = REDLOCK_LOCK_OPTIONS_VERSION };
    CHECK_RC(redlock_lock_get_options(l, &got), 0);
    CHECK(got.retry_count == 9 && got.retry_delay_ms == 77 && got.flags == REDLOCK_OPT_FAIR);
    CHECK_LOCK_RC(l, redlock_lock_set_options(l, &lo), 0);
    CHECK_RC(redlock_lock_get_options(l, &got), 0);
    CHECK(got.retry_count == d.retry_count && got.retry_delay_ms == d.retry_delay_ms && got.flags == 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_DEFAULT), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* redlock_flags_wake for every combination of the three wait bits (others
 * ignored), and the engine following it: a waiter whose lock's flags say
 * wake-up starts the client's listener; one that polls leaves it off. */
static void test_flags_wake(void)
{
    for (uint32_t f = 0; f < 32; f++) {
        int want = (f & (REDLOCK_OPT_WAKE | REDLOCK_OPT_FAIR)) && !(f & REDLOCK_OPT_NO_WAKE);
        CHECK(redlock_flags_wake(f) == want);
        CHECK(redlock_flags_wake(f | REDLOCK_OPT_FENCING | REDLOCK_OPT_FUNCTIONS | 0x80000000u) == want);
    }
    static const uint32_t cases[] = { 0, REDLOCK_OPT_WAKE, REDLOCK_OPT_FAIR, REDLOCK_OPT_WAKE | REDLOCK_OPT_NO_WAKE,
                                      REDLOCK_OPT_FAIR | REDLOCK_OPT_NO_WAKE, REDLOCK_OPT_WAKE | REDLOCK_OPT_FAIR };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        redlock_client *c = make_client(t_nurls, NULL);   /* a fresh client: no listener yet */
        const char *name = uniq("flagswake");
        redlock_lock *h = NULL, *w = NULL;
        CHECK_RC(redlock_lock_new(&h, c, name), 0);
        CHECK_RC(redlock_lock_new(&w, c, name), 0);
        redlock_lock_options lo = { .version = REDLOCK_LOCK_OPTIONS_VERSION };
        CHECK_RC(redlock_lock_get_options(w, &lo), 0);
        lo.flags = cases[k];
        lo.retry_delay_ms = 100;
        lo.retry_jitter_ms = 0;
        CHECK_LOCK_RC(w, redlock_lock_set_options(w, &lo), 0);
        CHECK_LOCK_RC(h, redlock_lock_acquire(h, 30000, REDLOCK_WAIT_NONE), 0);
        int rc = redlock_lock_acquire(w, 30000, 600);
        CHECK(rc != 0 && !redlock_lock_is_held(w));
        int on = 0;
        for (size_t i = 0; i < t_nurls; i++)
            on += redlock_client_listener_state(c, i, NULL, 0) != REDLOCK_LISTENER_OFF;
        if (redlock_flags_wake(cases[k]))
            CHECK(on == (int)t_nurls);
        else
            CHECK(on == 0);
        CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
        redlock_lock_free(h);
        redlock_lock_free(w);
        redlock_client_free(c);
    }
}

/* redlock_flags_set_wake: what it sets, redlock_flags_wake then says, for
 * every combination of the wait bits; other bits are kept. */
static void test_flags_set_wake(void)
{
    const uint32_t other = REDLOCK_OPT_FENCING | REDLOCK_OPT_FUNCTIONS | 0x80000000u;
    for (uint32_t f = 0; f < 32; f++) {
        for (int on = 0; on <= 1; on++) {
            uint32_t g = redlock_flags_set_wake(f | other, on);
            /* on: woken; off: as fair mode says, which implies wake-up */
            CHECK(redlock_flags_wake(g) == (on || (f & REDLOCK_OPT_FAIR) != 0));
            CHECK((g & other) == other);
            CHECK((g & REDLOCK_OPT_FAIR) == (f & REDLOCK_OPT_FAIR));   /* fair mode is its own bit */
            CHECK(!(g & REDLOCK_OPT_NO_WAKE));
            CHECK(!!(g & REDLOCK_OPT_WAKE) == on);
        }
    }
}

/* The constructors of the other kinds say why they refuse, as redlock_lock_open does. */
static void test_open_with_reason(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.flags = REDLOCK_OPT_FENCING;
    redlock_client *fenced = make_client(t_nurls, &o);
    redlock_lock *l = (redlock_lock *)&l;
    redlock_election *e = (redlock_election *)&e;
    char err[256];
    strcpy(err, "x");
    CHECK_RC(redlock_lock_open_read(&l, fenced, "", err, sizeof err), REDLOCK_EINVAL);
    CHECK(l == NULL && strstr(err, "empty") != NULL);
    CHECK_RC(redlock_lock_open_write(&l, fenced, "orders:fencing", err, sizeof err), REDLOCK_EINVAL);
    CHECK(l == NULL && strstr(err, "orders:fencing") != NULL);
    CHECK_RC(redlock_lock_open_write(&l, fenced, uniq("rw-open"), err, sizeof err), 0);
    CHECK(l != NULL && err[0] == '\0');
    redlock_lock_free(l);
    CHECK_RC(redlock_lock_open_read(&l, NULL, "x", err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "client is NULL") != NULL);
    /* an election refuses ":fencing" whatever the client's flags: its term is a token */
    redlock_client *plain = make_client(t_nurls, NULL);
    CHECK_RC(redlock_election_open(&e, plain, "jobs:fencing", err, sizeof err), REDLOCK_EINVAL);
    CHECK(e == NULL && strstr(err, "jobs:fencing") != NULL);
    CHECK_RC(redlock_election_open(&e, plain, "", err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "empty") != NULL);
    CHECK_RC(redlock_election_open(&e, plain, uniq("elect-open"), err, sizeof err), 0);
    CHECK(e != NULL && err[0] == '\0');
    redlock_election_free(e);
    CHECK_RC(redlock_election_open(&e, plain, uniq("elect-open"), NULL, 0), 0);   /* no buffer: fine */
    redlock_election_free(e);
    redlock_client_free(plain);
    redlock_client_free(fenced);
}

static void test_lock_open(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_FENCING;
    redlock_client *fenced = make_client(t_nurls, &o);
    redlock_client *plain = make_client(t_nurls, NULL);
    redlock_lock *l = (redlock_lock *)&l;
    char err[256];

    strcpy(err, "x");
    CHECK_RC(redlock_lock_open(&l, fenced, "orders:fencing", err, sizeof err), REDLOCK_EINVAL);
    CHECK(l == NULL);
    CHECK(strstr(err, ":fencing") != NULL && strstr(err, "orders:fencing") != NULL);
    /* Without fencing the same name is an ordinary resource. */
    CHECK_RC(redlock_lock_open(&l, plain, uniq("orders:fencing"), err, sizeof err), 0);
    CHECK(l != NULL && err[0] == '\0');
    redlock_lock_free(l);

    CHECK_RC(redlock_lock_open(&l, plain, "", err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "empty") != NULL);
    char *big = malloc(REDLOCK_MAX_RESOURCE_LEN + 2);
    memset(big, 'r', REDLOCK_MAX_RESOURCE_LEN + 1);
    big[REDLOCK_MAX_RESOURCE_LEN + 1] = '\0';
    CHECK_RC(redlock_lock_open(&l, plain, big, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "4096") != NULL);
    big[REDLOCK_MAX_RESOURCE_LEN] = '\0';   /* exactly the limit is fine */
    CHECK_RC(redlock_lock_open(&l, plain, big, err, sizeof err), 0);
    redlock_lock_free(l);
    free(big);
    CHECK_RC(redlock_lock_open(&l, NULL, "x", err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "client") != NULL);
    CHECK_RC(redlock_lock_open(&l, plain, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "resource") != NULL);
    CHECK_RC(redlock_lock_open(NULL, plain, "x", err, sizeof err), REDLOCK_EINVAL);
    /* A one-byte buffer, and none at all. */
    CHECK_RC(redlock_lock_open(&l, plain, "", err, 1), REDLOCK_EINVAL);
    CHECK(err[0] == '\0');
    CHECK_RC(redlock_lock_open(&l, fenced, "a:fencing", NULL, 0), REDLOCK_EINVAL);
    /* redlock_lock_new keeps refusing the same names. */
    CHECK_RC(redlock_lock_new(&l, fenced, "a:fencing"), REDLOCK_EINVAL);

    /* What it opens is an ordinary handle. */
    CHECK_RC(redlock_lock_open(&l, fenced, uniq("opened"), err, sizeof err), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_fencing_token(l) >= 1);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(fenced);
    redlock_client_free(plain);
}

/* ---- redlock_lock_auto_extend: userdata_free ---- */

typedef struct hook {
    atomic_int freed;       /* times userdata_free ran for it */
    atomic_int lost;        /* times on_lost ran for it */
    atomic_int in_cb;       /* on_lost is running */
    atomic_int freed_in_cb; /* userdata_free ran while on_lost was running */
    int release_in_cb;
    int release_rc;
} hook;

static void hook_lost(redlock_lock *lock, int code, const char *message, void *userdata)
{
    (void)code;
    (void)message;
    hook *h = userdata;
    atomic_store(&h->in_cb, 1);
    if (h->release_in_cb)
        h->release_rc = redlock_lock_release(lock);
    atomic_fetch_add(&h->lost, 1);
    atomic_store(&h->in_cb, 0);
}

static void hook_free(void *userdata)
{
    hook *h = userdata;
    if (atomic_load(&h->in_cb))
        atomic_fetch_add(&h->freed_in_cb, 1);
    atomic_fetch_add(&h->freed, 1);
}

static redlock_lock *held(redlock_client *c, const char *base, uint32_t ttl_ms)
{
    redlock_lock *l = NULL;
    CHECK_RC(redlock_lock_new(&l, c, uniq(base)), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, ttl_ms, REDLOCK_WAIT_NONE), 0);
    return l;
}

static void test_auto_extend_free(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    hook h1 = { 0 }, h2 = { 0 }, h3 = { 0 }, h4 = { 0 }, h5 = { 0 };

    /* Replaced: the old userdata is freed, the new one kept. */
    redlock_lock *l = held(c, "ae2-replace", 30000);
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h1, hook_free), 0);
    CHECK(atomic_load(&h1.freed) == 0);
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h2, hook_free), 0);
    CHECK(atomic_load(&h1.freed) == 1 && atomic_load(&h2.freed) == 0);
    /* Replaced by the call without a hook: freed too. */
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h3, NULL), 0);
    CHECK(atomic_load(&h2.freed) == 1);
    /* Stopped. */
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h3, hook_free), 0);
    CHECK_RC(redlock_lock_auto_extend_stop(l), 0);
    CHECK(atomic_load(&h3.freed) == 1);
    CHECK_RC(redlock_lock_auto_extend_stop(l), REDLOCK_ESTATE);
    CHECK(atomic_load(&h3.freed) == 1);
    /* Released. */
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h4, hook_free), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(atomic_load(&h4.freed) == 1);
    /* Refused on a lock not held: not kept, not freed. */
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h5, hook_free), REDLOCK_ESTATE);
    CHECK(atomic_load(&h5.freed) == 0);
    /* A new acquire ends the last acquisition's hook. */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h5, hook_free), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK(atomic_load(&h5.freed) == 1);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    CHECK(atomic_load(&h1.freed) == 1 && atomic_load(&h2.freed) == 1 && atomic_load(&h3.freed) == 1 &&
          atomic_load(&h4.freed) == 1 && atomic_load(&h5.freed) == 1);

    /* Freed with the lock, held or not. */
    hook h6 = { 0 };
    l = held(c, "ae2-free", 30000);
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h6, hook_free), 0);
    redlock_lock_free(l);
    CHECK(atomic_load(&h6.freed) == 1 && atomic_load(&h6.lost) == 0);

    /* A NULL userdata_free is allowed. */
    l = held(c, "ae2-null", 30000);
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h6, NULL), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    CHECK(atomic_load(&h6.freed) == 1);
    redlock_client_free(c);
}

/* A loss calls on_lost and keeps the hook; the callback that releases the
 * lock ends its own hook, freed only after it returned. */
static void test_auto_extend_free_on_loss(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    for (int release_in_cb = 0; release_in_cb <= 1; release_in_cb++) {
        hook h = { .release_in_cb = release_in_cb };
        /* 3 s: time enough, on a loaded machine, to see the key on every
         * node and arm the hook before the first extension is due */
        redlock_lock *l = held(c, "ae2-loss", 3000);
        char key[256];
        snprintf(key, sizeof key, "%s", redlock_lock_resource(l));
        CHECK(key_on_every_node(t_nurls, key));
        CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, hook_lost, &h, hook_free), 0);
        for (size_t i = 0; i < t_nurls; i++)
            CHECK(ctl(NULL, 0, "cmd %zu DEL %s", i, key) == 0);
        CHECK(EVENTUALLY(atomic_load(&h.lost) == 1, 10000, "on_lost"));
        if (release_in_cb) {
            CHECK(EVENTUALLY(atomic_load(&h.freed) == 1, 5000, "the free after on_lost"));
            CHECK(atomic_load(&h.freed_in_cb) == 0);
            CHECK(h.release_rc == REDLOCK_ELOST);
        } else {
            CHECK(atomic_load(&h.freed) == 0);   /* the owner may still release */
            CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ELOST);
            CHECK(atomic_load(&h.freed) == 1);
        }
        redlock_lock_free(l);
        CHECK(atomic_load(&h.freed) == 1 && atomic_load(&h.lost) == 1);
    }
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    run_test("retryable", test_retryable);
    run_test("wait_forever", test_wait_forever);
    run_test("lock_options_init", test_lock_options_init);
    run_test("flags_wake", test_flags_wake);
    run_test("flags_set_wake", test_flags_set_wake);
    run_test("open_with_reason", test_open_with_reason);
    run_test("lock_open", test_lock_open);
    run_test("auto_extend_free", test_auto_extend_free);
    run_test("auto_extend_free_on_loss", test_auto_extend_free_on_loss);
    return finish_tests();
}
