/* SPDX-License-Identifier: BSD-3-Clause */
/* test_async.c: redlock_lock_acquire_async (and the release's and the
 * extension's asynchronous forms) on real nodes: the callback's
 * result is what redlock_lock_acquire returns (acquired, a failed check, a
 * timeout, a cancel); many waiters cost no thread each and all get their
 * locks once released, woken or polling; the handle is the acquire's
 * meanwhile; free while pending waits for the callback; a callback may
 * free the lock and with it the client. */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct box {
    atomic_int fired;
    atomic_int rc;
    atomic_int held;          /* redlock_lock_is_held in the callback */
    pthread_t thread;         /* the callback's */
    char msg[512];
    int free_lock;            /* the callback frees the lock */
} box;

static void on_done(redlock_lock *lock, int rc, void *userdata)
{
    box *b = userdata;
    b->thread = pthread_self();
    snprintf(b->msg, sizeof b->msg, "%s", rc ? redlock_lock_errmsg(lock) : "");
    atomic_store(&b->held, redlock_lock_is_held(lock));
    atomic_store(&b->rc, rc);
    if (b->free_lock)
        redlock_lock_free(lock);
    atomic_fetch_add(&b->fired, 1);   /* last: the test may free b's lock then */
}

/* Waits up to bound_ms for the callback: 1 if it came (once). */
static int wait_box(box *b, int bound_ms)
{
    for (int i = 0; i < bound_ms && !atomic_load(&b->fired); i++)
        msleep(1);
    return atomic_load(&b->fired);
}

/* Entries of a /proc directory (of /proc/self/fd, opendir's own among them). */
static int entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int threads_now(void)
{
    return entries("/proc/self/task");
}

static redlock_client *client_flags(uint32_t flags)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = flags;
    return make_client(t_nurls, &o);
}

static void test_uncontended(void)
{
    redlock_client *c = client_flags(0);
    redlock_lock *l;
    box b = { 0 };
    CHECK_RC(redlock_lock_new(&l, c, uniq("free")), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, REDLOCK_WAIT_NONE, on_done, &b), 0);
    CHECK(wait_box(&b, 5000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK(atomic_load(&b.held) == 1);
    CHECK(!pthread_equal(b.thread, pthread_self()));   /* on the client's acquire thread */
    CHECK(redlock_lock_is_held(l));
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    /* Again on the same handle, after its callback. */
    box b2 = { 0 };
    CHECK_RC(redlock_lock_acquire_async(l, 5000, 1000, on_done, &b2), 0);
    CHECK(wait_box(&b2, 5000) == 1);
    CHECK(atomic_load(&b2.rc) == 0);
    CHECK(pthread_equal(b.thread, b2.thread));         /* one thread per client */
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* What fails at once, and what fails through the callback. */
static void test_checks(void)
{
    redlock_client *c = client_flags(0);
    redlock_lock *l, *h;
    box b = { 0 };
    CHECK_RC(redlock_lock_acquire_async(NULL, 1000, 0, on_done, &b), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new(&l, c, uniq("checks")), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 1000, 0, NULL, &b), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(l), "callback") != NULL);
    /* A TTL of 0 and a wait out of range: the callback says so. */
    CHECK_RC(redlock_lock_acquire_async(l, 0, 0, on_done, &b), 0);
    CHECK(wait_box(&b, 5000) == 1);
    CHECK(atomic_load(&b.rc) == REDLOCK_EINVAL);
    box b1 = { 0 };
    CHECK_RC(redlock_lock_acquire_async(l, 1000, -7, on_done, &b1), 0);
    CHECK(wait_box(&b1, 5000) == 1);
    CHECK(atomic_load(&b1.rc) == REDLOCK_EINVAL);
    CHECK(strstr(b1.msg, "wait_ms") != NULL);
    /* While one is under way, the handle is the acquire's. */
    CHECK_RC(redlock_lock_new(&h, c, redlock_lock_resource(l)), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, REDLOCK_WAIT_NONE), 0);
    box b2 = { 0 }, b3 = { 0 };
    CHECK_RC(redlock_lock_acquire_async(l, 1000, REDLOCK_WAIT_FOREVER, on_done, &b2), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 1000, 0, on_done, &b3), REDLOCK_ESTATE);
    CHECK_RC(redlock_lock_acquire(l, 1000, 0), REDLOCK_ESTATE);
    redlock_lock_cancel(l);
    CHECK(wait_box(&b2, 5000) == 1);
    CHECK(atomic_load(&b2.rc) == REDLOCK_ECANCELED);
    CHECK(atomic_load(&b3.fired) == 0);
    /* A cancel is sticky, as for redlock_lock_acquire. */
    box b4 = { 0 };
    CHECK_RC(redlock_lock_acquire_async(l, 1000, 0, on_done, &b4), 0);
    CHECK(wait_box(&b4, 5000) == 1);
    CHECK(atomic_load(&b4.rc) == REDLOCK_ECANCELED);
    redlock_lock_cancel_reset(l);
    /* Refused by the holder, once: what redlock_lock_acquire says. */
    box b5 = { 0 };
    CHECK_RC(redlock_lock_acquire_async(l, 1000, REDLOCK_WAIT_NONE, on_done, &b5), 0);
    CHECK(wait_box(&b5, 5000) == 1);
    CHECK(atomic_load(&b5.rc) == REDLOCK_ENOTACQUIRED);
    /* A wait bounded by time ends with REDLOCK_ETIMEDOUT. */
    box b6 = { 0 };
    double t0 = now_ms();
    CHECK_RC(redlock_lock_acquire_async(l, 1000, 300, on_done, &b6), 0);
    CHECK(wait_box(&b6, 5000) == 1);
    CHECK(atomic_load(&b6.rc) == REDLOCK_ETIMEDOUT);
    CHECK(now_ms() - t0 >= 300);
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    redlock_lock_free(h);
    redlock_lock_free(l);
    redlock_client_free(c);
}

enum { WAITERS = 48 };

/* WAITERS locks held by one client; another waits for all of them with
 * asynchronous acquires: one thread between them, however many wait, and
 * each gets its lock after the release. */
static void many_waiters(uint32_t flags)
{
    redlock_client *holder = client_flags(0), *c = client_flags(flags);
    redlock_lock *held[WAITERS], *w[WAITERS];
    static box b[WAITERS];
    memset(b, 0, sizeof b);
    for (int i = 0; i < WAITERS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", uniq("many"), i);
        CHECK_RC(redlock_lock_new(&held[i], holder, name), 0);
        CHECK_LOCK_RC(held[i], redlock_lock_acquire(held[i], 20000, REDLOCK_WAIT_NONE), 0);
        CHECK_RC(redlock_lock_new(&w[i], c, name), 0);
    }
    int before = threads_now();
    for (int i = 0; i < WAITERS; i++)
        CHECK_RC(redlock_lock_acquire_async(w[i], 10000, 15000, on_done, &b[i]), 0);
    msleep(300);
    int during = threads_now();
    /* The acquire thread, and the engine's helper and listener work: a
     * few threads, never one per waiter. */
    CHECK(during - before <= 3);
    int early = 0;
    for (int i = 0; i < WAITERS; i++)
        early += atomic_load(&b[i].fired);
    CHECK(early == 0);                   /* all still waiting */
    for (int i = 0; i < WAITERS; i++)
        CHECK_LOCK_RC(held[i], redlock_lock_release(held[i]), 0);
    int got = 0;
    for (int i = 0; i < WAITERS; i++) {
        CHECK(wait_box(&b[i], 12000) == 1);
        got += atomic_load(&b[i].rc) == 0 && redlock_lock_is_held(w[i]);
    }
    CHECK(got == WAITERS);
    for (int i = 0; i < WAITERS; i++) {
        if (redlock_lock_is_held(w[i]))
            CHECK_LOCK_RC(w[i], redlock_lock_release(w[i]), 0);
        redlock_lock_free(w[i]);
        redlock_lock_free(held[i]);
    }
    redlock_client_free(c);
    redlock_client_free(holder);
}

static void test_many_polling(void)
{
    many_waiters(0);
}

static atomic_int n_woken;
static void count_woken(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_WOKEN)
        atomic_fetch_add(&n_woken, 1);
}

/* With wake-up, a release wakes the asynchronous waiter through its
 * eventfd, as it wakes a blocked one. */
static void test_many_woken(void)
{
    many_waiters(REDLOCK_OPT_WAKE);
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_WAKE;
    o.on_event = count_woken;
    redlock_client *c = make_client(t_nurls, &o), *holder = client_flags(0);
    redlock_lock *h, *l;
    box b = { 0 };
    atomic_store(&n_woken, 0);
    CHECK_RC(redlock_lock_new(&h, holder, uniq("woken")), 0);
    CHECK_RC(redlock_lock_new(&l, c, redlock_lock_resource(h)), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, 15000, on_done, &b), 0);
    /* Registered and listening (the listeners subscribe on the first wait). */
    CHECK(EVENTUALLY(redlock_client_listener_state(c, 0, NULL, 0) == REDLOCK_LISTENER_READY, 5000, "listener ready"));
    msleep(300);
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    CHECK(wait_box(&b, 10000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK(atomic_load(&n_woken) >= 1);  /* by the release, not by the 20 s TTL */
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_lock_free(h);
    redlock_client_free(c);
    redlock_client_free(holder);
}

/* redlock_lock_free of a lock whose acquire waits: the acquire is
 * cancelled, its callback has run when free returns, no key is left. */
static void test_free_pending(void)
{
    redlock_client *c = client_flags(REDLOCK_OPT_WAKE);
    redlock_lock *h, *l;
    box b = { 0 };
    long long base = keys_on(t_nurls);
    CHECK_RC(redlock_lock_new(&h, c, uniq("freed")), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&l, c, redlock_lock_resource(h)), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, REDLOCK_WAIT_FOREVER, on_done, &b), 0);
    msleep(200);
    CHECK(atomic_load(&b.fired) == 0);
    double t0 = now_ms();
    redlock_lock_free(l);
    CHECK(atomic_load(&b.fired) == 1);
    CHECK(atomic_load(&b.rc) == REDLOCK_ECANCELED);
    CHECK(now_ms() - t0 < 5000);
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    redlock_lock_free(h);
    redlock_client_free(c);
    CHECK(EVENTUALLY(keys_on(t_nurls) == base, 5000, "no key left"));
}

/* The callback frees the lock, whose reference was the client's last:
 * the client goes away on its own acquire thread. */
static void test_free_in_callback(void)
{
    redlock_client *c = client_flags(0);
    redlock_lock *l;
    box b = { 0 };
    b.free_lock = 1;
    CHECK_RC(redlock_lock_new(&l, c, uniq("self")), 0);
    redlock_client_free(c);              /* the lock's reference remains */
    CHECK_RC(redlock_lock_acquire_async(l, 5000, REDLOCK_WAIT_NONE, on_done, &b), 0);
    CHECK(wait_box(&b, 5000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    msleep(100);                         /* the thread exits; ASan/TSan see the rest */
    /* The lock was freed while held: its key expires (5 s). */
}

/* A callback that starts the next acquire of its own lock. */
typedef struct chain {
    atomic_int left, done, failed;
} chain;

static void on_chain(redlock_lock *lock, int rc, void *userdata)
{
    chain *ch = userdata;
    if (rc != 0 || redlock_lock_release(lock) != 0) {
        atomic_fetch_add(&ch->failed, 1);
        atomic_store(&ch->done, 1);
        return;
    }
    if (atomic_fetch_sub(&ch->left, 1) == 1 || redlock_lock_acquire_async(lock, 5000, 1000, on_chain, ch) != 0)
        atomic_store(&ch->done, 1);
}

static void test_chain(void)
{
    redlock_client *c = client_flags(0);
    redlock_lock *l;
    chain ch;
    atomic_init(&ch.left, 50);
    atomic_init(&ch.done, 0);
    atomic_init(&ch.failed, 0);
    CHECK_RC(redlock_lock_new(&l, c, uniq("chain")), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, 1000, on_chain, &ch), 0);
    CHECK(EVENTUALLY(atomic_load(&ch.done), 20000, "chain done"));
    CHECK(atomic_load(&ch.failed) == 0);
    CHECK(atomic_load(&ch.left) == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}


/* A done callback frees another lock whose acquire waits: that acquire is
 * dropped, without its callback, and the thread goes on. */
typedef struct freer {
    redlock_lock *victim;
    atomic_int fired;
} freer;

static void on_done_free_other(redlock_lock *lock, int rc, void *userdata)
{
    freer *f = userdata;
    (void)rc;
    redlock_lock_free(f->victim);
    redlock_lock_free(lock);
    atomic_store(&f->fired, 1);
}

static void test_free_other_in_callback(void)
{
    redlock_client *c = client_flags(REDLOCK_OPT_WAKE);
    redlock_lock *h, *victim, *l;
    box vb = { 0 };
    freer f;
    atomic_init(&f.fired, 0);
    CHECK_RC(redlock_lock_new(&h, c, uniq("victim")), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&victim, c, redlock_lock_resource(h)), 0);
    CHECK_RC(redlock_lock_acquire_async(victim, 5000, REDLOCK_WAIT_FOREVER, on_done, &vb), 0);
    msleep(200);                           /* waiting, registered, listening */
    f.victim = victim;
    CHECK_RC(redlock_lock_new(&l, c, uniq("freer")), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, REDLOCK_WAIT_NONE, on_done_free_other, &f), 0);
    CHECK(EVENTUALLY(atomic_load(&f.fired), 5000, "the freeing callback"));
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    msleep(300);                           /* a release's wake-up finds nobody */
    CHECK(atomic_load(&vb.fired) == 0);
    /* The thread still serves the client. */
    redlock_lock *again;
    box b = { 0 };
    CHECK_RC(redlock_lock_new(&again, c, redlock_lock_resource(h)), 0);
    CHECK_RC(redlock_lock_acquire_async(again, 5000, 2000, on_done, &b), 0);
    CHECK(wait_box(&b, 5000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK_LOCK_RC(again, redlock_lock_release(again), 0);
    redlock_lock_free(again);
    redlock_lock_free(h);
    redlock_client_free(c);
}

/* Every kind that redlock_lock_acquire takes: a read lock, a write lock,
 * a semaphore's permits and a multi-lock wait asynchronously for what
 * blocks them, and get it once released. */
static void wait_for_kind(redlock_client *c, redlock_lock *blocker, redlock_lock *waiter, const char *what)
{
    box b = { 0 };
    CHECK_LOCK_RC(blocker, redlock_lock_acquire(blocker, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_acquire_async(waiter, 5000, 15000, on_done, &b), 0);
    msleep(200);
    if (atomic_load(&b.fired))
        fprintf(stderr, "[%s] granted while blocked: %s\n", what, b.msg);
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_LOCK_RC(blocker, redlock_lock_release(blocker), 0);
    CHECK(wait_box(&b, 10000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK(redlock_lock_is_held(waiter));
    CHECK_LOCK_RC(waiter, redlock_lock_release(waiter), 0);
    redlock_lock_free(blocker);
    redlock_lock_free(waiter);
    (void)c;
}

static void test_kinds(void)
{
    redlock_client *c = client_flags(0);
    redlock_lock *a, *b;
    const char *rw = uniq("rw");
    CHECK_RC(redlock_lock_new_write(&a, c, rw), 0);      /* a writer blocks a reader */
    CHECK_RC(redlock_lock_new_read(&b, c, rw), 0);
    wait_for_kind(c, a, b, "read");
    rw = uniq("rw");
    CHECK_RC(redlock_lock_new_read(&a, c, rw), 0);       /* a reader blocks a writer */
    CHECK_RC(redlock_lock_new_write(&b, c, rw), 0);
    wait_for_kind(c, a, b, "write");
    const char *sem = uniq("sem");
    CHECK_RC(redlock_lock_new_semaphore(&a, c, sem, 2, 2), 0);   /* both permits held */
    CHECK_RC(redlock_lock_new_semaphore(&b, c, sem, 2, 1), 0);
    wait_for_kind(c, a, b, "semaphore");
    char one[128], two[128];
    snprintf(one, sizeof one, "%s", uniq("multi"));
    snprintf(two, sizeof two, "%s", uniq("multi"));
    const char *both[] = { one, two }, *rev[] = { two, one };
    CHECK_RC(redlock_lock_new_multi(&a, c, both, 2), 0);
    CHECK_RC(redlock_lock_new_multi(&b, c, rev, 2), 0);
    wait_for_kind(c, a, b, "multi");
    redlock_client_free(c);
}

/* A majority paused while an asynchronous acquire waits: it ends through
 * its callback when its wait does, not later, and the thread keeps
 * serving the client's other acquires. */
static void test_majority_paused(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 200;
    redlock_client *c = make_client(t_nurls, &o);
    redlock_lock *h, *l;
    box b = { 0 };
    CHECK_RC(redlock_lock_new(&h, c, uniq("paused")), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&l, c, redlock_lock_resource(h)), 0);
    double t0 = now_ms();
    CHECK_RC(redlock_lock_acquire_async(l, 5000, 1500, on_done, &b), 0);
    msleep(100);
    size_t quorum = t_nurls / 2 + 1;
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "pause %zu", i) == 0);
    CHECK(wait_box(&b, 10000) == 1);
    double took = now_ms() - t0;
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "resume %zu", i) == 0);
    int rc = atomic_load(&b.rc);
    if (rc != REDLOCK_ETIMEDOUT && rc != REDLOCK_ENOQUORUM && rc != REDLOCK_EUNREACHABLE)
        fprintf(stderr, "[majority_paused] %s: %s\n", redlock_error_name(rc), b.msg);
    CHECK(rc == REDLOCK_ETIMEDOUT || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EUNREACHABLE);
    CHECK(took >= 1500 && took < 1500 + 2000);   /* the wait, and at most a round past it */
    CHECK(!redlock_lock_is_held(l));
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    /* Served again once the nodes answer. */
    box b2 = { 0 };
    CHECK_RC(redlock_lock_acquire_async(l, 5000, 5000, on_done, &b2), 0);
    CHECK(wait_box(&b2, 10000) == 1);
    CHECK(atomic_load(&b2.rc) == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_lock_free(h);
    redlock_client_free(c);
}

/* The client freed, then its locks with their acquires pending: each
 * callback runs (ECANCELED) before its free returns, nothing leaks. */
static void test_client_freed_pending(void)
{
    redlock_client *c = client_flags(REDLOCK_OPT_WAKE);
    redlock_lock *h, *w[4];
    static box b[4];
    memset(b, 0, sizeof b);
    CHECK_RC(redlock_lock_new(&h, c, uniq("gone")), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, REDLOCK_WAIT_NONE), 0);
    for (int i = 0; i < 4; i++) {
        CHECK_RC(redlock_lock_new(&w[i], c, redlock_lock_resource(h)), 0);
        CHECK_RC(redlock_lock_acquire_async(w[i], 5000, REDLOCK_WAIT_FOREVER, on_done, &b[i]), 0);
    }
    msleep(200);
    redlock_client_free(c);                /* the locks keep it */
    for (int i = 0; i < 4; i++) {
        redlock_lock_free(w[i]);
        CHECK(atomic_load(&b[i].fired) == 1);
        CHECK(atomic_load(&b[i].rc) == REDLOCK_ECANCELED);
    }
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    redlock_lock_free(h);
}

/* redlock_election_campaign_async: a second candidate waits without a
 * thread, and leads, with the next term, once the leader resigns; a
 * campaign's cancel ends it. */
typedef struct cbox {
    atomic_int fired, rc, leading;
} cbox;

static void on_campaigned(redlock_election *e, int rc, void *userdata)
{
    cbox *b = userdata;
    atomic_store(&b->leading, redlock_election_is_leader(e));
    atomic_store(&b->rc, rc);
    atomic_fetch_add(&b->fired, 1);
}

static void test_campaign(void)
{
    redlock_client *c = client_flags(0);
    redlock_election *e1, *e2;
    const char *name = uniq("elect");
    CHECK_RC(redlock_election_new(&e1, c, name), 0);
    CHECK_RC(redlock_election_new(&e2, c, name), 0);
    CHECK_RC(redlock_election_campaign(e1, "one", 5000, REDLOCK_WAIT_NONE), 0);
    uint64_t t1 = redlock_election_term(e1);
    cbox b;
    memset(&b, 0, sizeof b);
    CHECK_RC(redlock_election_campaign_async(e2, "two", 5000, REDLOCK_WAIT_FOREVER, on_campaigned, &b), 0);
    CHECK_RC(redlock_election_campaign_async(e2, "two", 5000, REDLOCK_WAIT_FOREVER, on_campaigned, &b),
             REDLOCK_ESTATE);
    CHECK_RC(redlock_election_campaign_async(e2, "two", 5000, 0, NULL, &b), REDLOCK_EINVAL);
    msleep(300);
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_RC(redlock_election_resign(e1), 0);
    CHECK(EVENTUALLY(atomic_load(&b.fired) == 1, 10000, "the second candidate leads"));
    CHECK(atomic_load(&b.rc) == 0);
    CHECK(atomic_load(&b.leading) == 1);
    CHECK(redlock_election_term(e2) > t1);
    redlock_leader ld;
    memset(&ld, 0, sizeof ld);
    ld.version = REDLOCK_LEADER_VERSION;
    CHECK_RC(redlock_election_leader(e1, &ld), 0);
    CHECK(ld.present && strcmp(ld.value, "two") == 0 && ld.term == redlock_election_term(e2));
    /* Cancelled while waiting for e2. */
    cbox k;
    memset(&k, 0, sizeof k);
    CHECK_RC(redlock_election_campaign_async(e1, "one", 5000, REDLOCK_WAIT_FOREVER, on_campaigned, &k), 0);
    msleep(200);
    redlock_election_cancel(e1);
    CHECK(EVENTUALLY(atomic_load(&k.fired) == 1, 5000, "the cancelled campaign ends"));
    CHECK(atomic_load(&k.rc) == REDLOCK_ECANCELED);
    CHECK(strstr(redlock_election_errmsg(e1), "cancel") != NULL);
    redlock_election_cancel_reset(e1);
    /* Freed while campaigning: done has run when free returns. */
    cbox f;
    memset(&f, 0, sizeof f);
    CHECK_RC(redlock_election_campaign_async(e1, "one", 5000, REDLOCK_WAIT_FOREVER, on_campaigned, &f), 0);
    msleep(100);
    redlock_election_free(e1);
    CHECK(atomic_load(&f.fired) == 1 && atomic_load(&f.rc) == REDLOCK_ECANCELED);
    /* Proclaimed without blocking: the value is copied (the caller's buffer
     * is overwritten at once), the record says it under the same term with
     * the next revision. */
    cbox p, p2;
    memset(&p, 0, sizeof p);
    memset(&p2, 0, sizeof p2);
    char value[32] = "three";
    CHECK_RC(redlock_election_proclaim_async(NULL, value, on_campaigned, &p), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_proclaim_async(e2, value, NULL, &p), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_proclaim_async(e2, NULL, on_campaigned, &p), REDLOCK_EINVAL);
    char big[REDLOCK_ELECTION_MAX_VALUE + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_RC(redlock_election_proclaim_async(e2, big, on_campaigned, &p), REDLOCK_EINVAL);
    CHECK(strstr(redlock_election_errmsg(e2), "over the limit") != NULL);
    CHECK_RC(redlock_election_proclaim_async(e2, value, on_campaigned, &p), 0);
    strcpy(value, "overwritten");
    CHECK(EVENTUALLY(atomic_load(&p.fired) == 1, 5000, "the proclaim's done"));
    CHECK(atomic_load(&p.rc) == 0 && atomic_load(&p.leading) == 1);
    memset(&ld, 0, sizeof ld);
    ld.version = REDLOCK_LEADER_VERSION;
    CHECK_RC(redlock_election_leader(e2, &ld), 0);
    CHECK(ld.present && strcmp(ld.value, "three") == 0 && ld.term == redlock_election_term(e2) && ld.revision == 2);
    /* Resigned without blocking: done says so, on the acquire thread, and
     * the record no longer names a leader. */
    cbox r, r2;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    CHECK_RC(redlock_election_resign_async(NULL, on_campaigned, &r), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_resign_async(e2, NULL, &r), REDLOCK_EINVAL);
    CHECK(strstr(redlock_election_errmsg(e2), "done callback") != NULL);
    CHECK_RC(redlock_election_resign_async(e2, on_campaigned, &r), 0);
    CHECK(EVENTUALLY(atomic_load(&r.fired) == 1, 5000, "the resign's done"));
    CHECK(atomic_load(&r.rc) == 0 && atomic_load(&r.leading) == 0);
    CHECK(!redlock_election_is_leader(e2));
    memset(&ld, 0, sizeof ld);
    ld.version = REDLOCK_LEADER_VERSION;
    CHECK(EVENTUALLY(redlock_election_leader(e2, &ld) == 0 && !ld.present, 5000, "no leader on record"));
    /* Not leading: what redlock_election_resign says. */
    CHECK_RC(redlock_election_resign_async(e2, on_campaigned, &r2), 0);
    CHECK(EVENTUALLY(atomic_load(&r2.fired) == 1, 5000, "the second resign's done"));
    CHECK(atomic_load(&r2.rc) == REDLOCK_ESTATE);
    /* Nor a proclaim: what redlock_election_proclaim says, nothing written. */
    CHECK_RC(redlock_election_proclaim_async(e2, "late", on_campaigned, &p2), 0);
    CHECK(EVENTUALLY(atomic_load(&p2.fired) == 1, 5000, "the late proclaim's done"));
    CHECK(atomic_load(&p2.rc) == REDLOCK_ESTATE);
    CHECK(strstr(redlock_election_errmsg(e2), "not the leader") != NULL);
    redlock_election_free(e2);
    redlock_client_free(c);
}

/* fork() while an asynchronous acquire waits: the child frees the handle
 * at once (the parent's acquire is the parent's), and its own
 * asynchronous acquires need a new client; the parent's acquire goes on. */
static void test_fork(void)
{
    /* Attempts every few ms: the acquire thread takes its mutex all the
     * time, so some forks land while it holds it. */
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.retry_delay_ms = 2;
    o.retry_jitter_ms = 1;
    redlock_client *c = make_client(t_nurls, &o);
    redlock_lock *h, *l, *other;
    box b = { 0 };
    CHECK_RC(redlock_lock_new(&h, c, uniq("fork")), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&l, c, redlock_lock_resource(h)), 0);
    CHECK_RC(redlock_lock_new(&other, c, uniq("fork-other")), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, REDLOCK_WAIT_FOREVER, on_done, &b), 0);
    for (int k = 0; k < 10; k++) {
        msleep(7 + k);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            box cb = { 0 };
            int rc = redlock_lock_acquire_async(other, 5000, 0, on_done, &cb);
            redlock_lock_free(l);          /* must not wait for the parent's thread */
            _exit(rc == REDLOCK_ENOTSUP ? 0 : 3);
        }
        CHECK(pid > 0);
        int status = -1;
        for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++)
            msleep(10);
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "[fork] the child hung (fork %d)\n", k);
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK(atomic_load(&b.fired) == 0);     /* the parent's still waits */
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    CHECK(wait_box(&b, 10000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(other);
    redlock_lock_free(l);
    redlock_lock_free(h);
    redlock_client_free(c);
}

/* A minority killed mid-wait: the asynchronous acquire still gets the
 * lock from the others once released. A cancel that lands while a round
 * waits for a paused node ends the acquire after that round. */
static void test_minority_faults(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 300;
    redlock_client *c = make_client(t_nurls, &o), *holder = make_client(t_nurls, &o);
    redlock_lock *h, *l;
    box b = { 0 };
    CHECK_RC(redlock_lock_new(&h, holder, uniq("minority")), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&l, c, redlock_lock_resource(h)), 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, 15000, on_done, &b), 0);
    msleep(150);
    size_t last = t_nurls - 1;              /* a minority: one node of three */
    CHECK(ctl(NULL, 0, "kill %zu", last) == 0);
    msleep(200);
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    CHECK(wait_box(&b, 10000) == 1);
    if (atomic_load(&b.rc) != 0)
        fprintf(stderr, "[minority_faults] %s: %s\n", redlock_error_name(atomic_load(&b.rc)), b.msg);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(ctl(NULL, 0, "restart %zu", last) == 0);

    /* Cancelled during a round: node 0 paused, so each attempt waits out
     * the node timeout before the others decide it. */
    box k = { 0 };
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 20000, 2000), 0);
    CHECK(ctl(NULL, 0, "pause 0") == 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, REDLOCK_WAIT_FOREVER, on_done, &k), 0);
    msleep(50);
    double t0 = now_ms();
    redlock_lock_cancel(l);
    CHECK(wait_box(&k, 10000) == 1);
    double took = now_ms() - t0;
    CHECK(ctl(NULL, 0, "resume 0") == 0);
    CHECK(atomic_load(&k.rc) == REDLOCK_ECANCELED);
    CHECK(took < 300 + 1500);               /* the round in flight at most, not the wait */
    CHECK(!redlock_lock_is_held(l));
    redlock_lock_cancel_reset(l);
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);
    redlock_lock_free(l);
    redlock_lock_free(h);
    redlock_client_free(c);
    redlock_client_free(holder);
}

/* redlock_election_observe_async: an observer waits without a thread and
 * hears the next leader; its wait times out, is cancelled, and keeps a
 * blocking observe of the same handle out meanwhile. */
static void on_observed(redlock_election *e, int rc, void *userdata)
{
    cbox *b = userdata;
    (void)e;
    atomic_store(&b->rc, rc);
    atomic_fetch_add(&b->fired, 1);
}

static void test_observe(void)
{
    redlock_client *c = client_flags(REDLOCK_OPT_WAKE);
    redlock_election *leader, *watcher;
    const char *name = uniq("observe");
    CHECK_RC(redlock_election_new(&leader, c, name), 0);
    CHECK_RC(redlock_election_new(&watcher, c, name), 0);
    redlock_leader last;
    memset(&last, 0, sizeof last);
    last.version = REDLOCK_LEADER_VERSION;
    CHECK_RC(redlock_election_leader(watcher, &last), 0);
    CHECK(!last.present);
    cbox b;
    memset(&b, 0, sizeof b);
    CHECK_RC(redlock_election_observe_async(watcher, &last, 10000, on_observed, &b), 0);
    CHECK_RC(redlock_election_observe_async(watcher, &last, 10000, on_observed, &b), REDLOCK_ESTATE);
    redlock_leader tmp = last;
    CHECK_RC(redlock_election_observe(watcher, &tmp, 0), REDLOCK_ESTATE);
    msleep(200);
    CHECK(atomic_load(&b.fired) == 0);
    CHECK_RC(redlock_election_campaign(leader, "the-one", 5000, REDLOCK_WAIT_NONE), 0);
    CHECK(EVENTUALLY(atomic_load(&b.fired) == 1, 5000, "the observer hears the new leader"));
    CHECK(atomic_load(&b.rc) == 0);
    CHECK(last.present && last.term == redlock_election_term(leader) && strcmp(last.value, "the-one") == 0);
    /* No change within 300 ms: REDLOCK_ETIMEDOUT, last unchanged. */
    cbox t;
    memset(&t, 0, sizeof t);
    uint64_t term = last.term;
    CHECK_RC(redlock_election_observe_async(watcher, &last, 300, on_observed, &t), 0);
    CHECK(EVENTUALLY(atomic_load(&t.fired) == 1, 5000, "the observe times out"));
    CHECK(atomic_load(&t.rc) == REDLOCK_ETIMEDOUT);
    CHECK(last.term == term && last.present);
    /* Cancelled. */
    cbox k;
    memset(&k, 0, sizeof k);
    CHECK_RC(redlock_election_observe_async(watcher, &last, REDLOCK_WAIT_FOREVER, on_observed, &k), 0);
    msleep(100);
    redlock_election_cancel(watcher);
    CHECK(EVENTUALLY(atomic_load(&k.fired) == 1, 5000, "the cancelled observe ends"));
    CHECK(atomic_load(&k.rc) == REDLOCK_ECANCELED);
    redlock_election_cancel_reset(watcher);
    /* Freed while observing: done has run when free returns. */
    cbox f;
    memset(&f, 0, sizeof f);
    CHECK_RC(redlock_election_observe_async(watcher, &last, REDLOCK_WAIT_FOREVER, on_observed, &f), 0);
    msleep(100);
    redlock_election_free(watcher);
    CHECK(atomic_load(&f.fired) == 1 && atomic_load(&f.rc) == REDLOCK_ECANCELED);
    CHECK_RC(redlock_election_resign(leader), 0);
    redlock_election_free(leader);
    redlock_client_free(c);
}

/* redlock_lock_release_async and redlock_lock_extend_async: the blocking
 * call's result, on the acquire thread, for every kind of handle; one
 * asynchronous call per handle at a time; done may free the lock. */
static void release_async_frees(redlock_client *c, redlock_client *other, redlock_lock *l, redlock_lock *rival,
                                const char *kind)
{
    box b = { 0 };
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(rival, redlock_lock_acquire(rival, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_RC(redlock_lock_release_async(l, on_done, &b), 0);
    CHECK(wait_box(&b, 5000) == 1);
    if (atomic_load(&b.rc) != 0)
        fprintf(stderr, "%s: release_async gave %s: %s\n", kind, redlock_error_name(atomic_load(&b.rc)), b.msg);
    CHECK(atomic_load(&b.rc) == 0 && !atomic_load(&b.held));
    CHECK(!pthread_equal(b.thread, pthread_self()));
    /* Released on the nodes, not only in the handle: the rival gets it now. */
    CHECK_LOCK_RC(rival, redlock_lock_acquire(rival, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(rival, redlock_lock_release(rival), 0);
    redlock_lock_free(l);
    redlock_lock_free(rival);
    (void)c;
    (void)other;
}

/* redlock_lock_downgrade_async: a held write lock becomes a read lock
 * without blocking the caller; a second reader then gets in, a writer
 * does not; on a lock that is not a write lock, done says EINVAL. */
static void test_downgrade_async(void)
{
    redlock_client *c = client_flags(0), *other = client_flags(0);
    const char *res = uniq("downgrade");
    redlock_lock *w, *r, *w2;
    CHECK_RC(redlock_lock_new_write(&w, c, res), 0);
    CHECK_RC(redlock_lock_new_read(&r, other, res), 0);
    CHECK_RC(redlock_lock_new_write(&w2, other, res), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_RC(redlock_lock_downgrade_async(w, NULL, NULL), REDLOCK_EINVAL);
    box b = { 0 };
    CHECK_RC(redlock_lock_downgrade_async(w, on_done, &b), 0);
    CHECK(wait_box(&b, 5000) == 1);
    if (atomic_load(&b.rc) != 0)
        fprintf(stderr, "[%s] %s: %s\n", t_current, redlock_error_name(atomic_load(&b.rc)), b.msg);
    CHECK(atomic_load(&b.rc) == 0 && atomic_load(&b.held));
    CHECK(!pthread_equal(b.thread, pthread_self()));
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(w2, redlock_lock_acquire(w2, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    box b2 = { 0 };
    CHECK_RC(redlock_lock_downgrade_async(r, on_done, &b2), 0);   /* a read lock: refused in done */
    CHECK(wait_box(&b2, 5000) == 1 && atomic_load(&b2.rc) == REDLOCK_EINVAL);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    /* A release returns at its quorum: a node's own release may still be on
     * its way, and another client's writer may find the key there first. */
    CHECK_LOCK_RC(w2, redlock_lock_acquire(w2, 10000, 2000), 0);
    CHECK_LOCK_RC(w2, redlock_lock_release(w2), 0);
    redlock_lock_free(w);
    redlock_lock_free(r);
    redlock_lock_free(w2);
    redlock_client_free(c);
    redlock_client_free(other);
}

static void test_release_extend_async(void)
{
    redlock_client *c = client_flags(0), *other = client_flags(0);
    redlock_lock *l, *rival;
    const char *res = uniq("relext");
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_RC(redlock_lock_new(&rival, other, res), 0);
    CHECK_RC(redlock_lock_release_async(NULL, on_done, NULL), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_extend_async(l, 1000, NULL, NULL), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(l), "done callback") != NULL);

    /* Not held: the callback says what redlock_lock_release would. */
    box b0 = { 0 };
    CHECK_RC(redlock_lock_release_async(l, on_done, &b0), 0);
    CHECK(wait_box(&b0, 5000) == 1 && atomic_load(&b0.rc) == REDLOCK_ESTATE);

    /* An extension: the validity is the new TTL's. */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 2000, REDLOCK_WAIT_NONE), 0);
    box b1 = { 0 };
    CHECK_RC(redlock_lock_extend_async(l, 30000, on_done, &b1), 0);
    CHECK(wait_box(&b1, 5000) == 1 && atomic_load(&b1.rc) == 0 && atomic_load(&b1.held));
    CHECK(redlock_lock_validity_ms(l) > 20000);
    CHECK(!pthread_equal(b1.thread, pthread_self()));

    /* One asynchronous call on a handle at a time: while the rival waits
     * asynchronously, its release and extension are refused. */
    box bw = { 0 }, bx = { 0 };
    CHECK_RC(redlock_lock_acquire_async(rival, 10000, 3000, on_done, &bw), 0);
    CHECK_RC(redlock_lock_release_async(rival, on_done, &bx), REDLOCK_ESTATE);
    CHECK_RC(redlock_lock_extend_async(rival, 1000, on_done, &bx), REDLOCK_ESTATE);

    /* The release, from the done callback's thread, wakes nobody it should
     * not and frees the lock for the waiting rival. */
    box b2 = { 0 };
    CHECK_RC(redlock_lock_release_async(l, on_done, &b2), 0);
    CHECK(wait_box(&b2, 5000) == 1 && atomic_load(&b2.rc) == 0);
    CHECK(wait_box(&bw, 5000) == 1 && atomic_load(&bw.rc) == 0);   /* the rival got it */
    CHECK(atomic_load(&bx.fired) == 0);                             /* refused calls never call back */
    CHECK_LOCK_RC(rival, redlock_lock_release(rival), 0);

    /* done may free the lock. */
    box b3 = { .free_lock = 1 };
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_release_async(l, on_done, &b3), 0);
    CHECK(wait_box(&b3, 5000) == 1 && atomic_load(&b3.rc) == 0);
    CHECK_LOCK_RC(rival, redlock_lock_acquire(rival, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(rival, redlock_lock_release(rival), 0);
    redlock_lock_free(rival);

    /* Every kind of handle: a read lock, a semaphore's permit, a multi-resource set. */
    const char *rw = uniq("relext-rw");
    CHECK_RC(redlock_lock_new_read(&l, c, rw), 0);
    CHECK_RC(redlock_lock_new_write(&rival, other, rw), 0);
    release_async_frees(c, other, l, rival, "read");
    const char *sem = uniq("relext-sem");
    CHECK_RC(redlock_lock_new_semaphore(&l, c, sem, 1, 1), 0);
    CHECK_RC(redlock_lock_new_semaphore(&rival, other, sem, 1, 1), 0);
    release_async_frees(c, other, l, rival, "semaphore");
    char one[128], two[128];
    snprintf(one, sizeof one, "%s", uniq("relext-multi"));
    snprintf(two, sizeof two, "%s", uniq("relext-multi"));
    const char *both[] = { one, two }, *just_two[] = { two };
    CHECK_RC(redlock_lock_new_multi(&l, c, both, 2), 0);
    CHECK_RC(redlock_lock_new_multi(&rival, other, just_two, 1), 0);
    release_async_frees(c, other, l, rival, "multi");
    redlock_client_free(c);
    redlock_client_free(other);
}

/* Release and extension in flight while nodes stop answering. A paused
 * minority costs at most its node timeout, and still gets the release,
 * which runs when it wakes. With a majority paused both calls end within
 * their bound and say so; after the release the handle is idle, and the
 * nodes drop the key once they wake. */
static void test_release_extend_paused(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 300;
    redlock_client *c = make_client(t_nurls, &o);
    redlock_lock *l;
    const char *res = uniq("relpaused");
    char exists[200];
    snprintf(exists, sizeof exists, "EXISTS %s", res);
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK(EVENTUALLY(node_int(0, exists) == 1, 5000, "the key on node 0"));

    CHECK(ctl(NULL, 0, "pause 0") == 0);
    box b1 = { 0 }, b2 = { 0 };
    double t0 = now_ms();
    CHECK_RC(redlock_lock_extend_async(l, 30000, on_done, &b1), 0);
    CHECK(wait_box(&b1, 10000) == 1);
    CHECK(atomic_load(&b1.rc) == 0 && atomic_load(&b1.held));
    CHECK(now_ms() - t0 < 300 + 1500);
    t0 = now_ms();
    CHECK_RC(redlock_lock_release_async(l, on_done, &b2), 0);
    CHECK(wait_box(&b2, 10000) == 1);
    CHECK(atomic_load(&b2.rc) == 0 && !atomic_load(&b2.held));
    CHECK(now_ms() - t0 < 300 + 1500);
    CHECK(ctl(NULL, 0, "resume 0") == 0);
    CHECK(EVENTUALLY(node_int(0, exists) == 0, 5000, "the release queued for the paused node"));

    /* A majority paused. */
    size_t quorum = t_nurls / 2 + 1;
    /* Held, with the key on the nodes about to be paused. */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    for (size_t i = 0; i < quorum; i++)
        CHECK(EVENTUALLY(node_int((int)i, exists) == 1, 5000, "the key on the nodes to pause"));
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "pause %zu", i) == 0);
    box b3 = { 0 }, b4 = { 0 };
    t0 = now_ms();
    CHECK_RC(redlock_lock_extend_async(l, 30000, on_done, &b3), 0);
    CHECK(wait_box(&b3, 10000) == 1);
    CHECK(atomic_load(&b3.rc) != 0);
    CHECK(strstr(b3.msg, "no reply") != NULL);
    if (!strstr(b3.msg, "no reply"))
        fprintf(stderr, "[%s] extend: %s\n", t_current, b3.msg);
    CHECK(now_ms() - t0 < 300 + 1500);
    t0 = now_ms();
    CHECK_RC(redlock_lock_release_async(l, on_done, &b4), 0);
    CHECK(wait_box(&b4, 10000) == 1);
    CHECK(atomic_load(&b4.rc) != 0 && atomic_load(&b4.rc) != REDLOCK_ESTATE);
    CHECK(!redlock_lock_is_held(l));
    CHECK(now_ms() - t0 < 300 + 1500);
    for (size_t i = 0; i < quorum; i++)
        CHECK(ctl(NULL, 0, "resume %zu", i) == 0);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(node_int((int)i, exists) == 0, 5000, "the release, once the nodes woke"));
    redlock_lock_free(l);
    redlock_client_free(c);
}

static int fds_now(void)
{
    return entries("/proc/self/fd") - 1;   /* opendir's own */
}

/* A call that never naps costs no file descriptor: the lock's eventfd is
 * made and watched at its first nap. With none to be had (the fd limit),
 * a napping acquire still starts, and its cancel is seen within the 10 ms
 * the acquire thread then looks at its flags. */
static void test_no_eventfd(void)
{
    redlock_client *c = client_flags(0);
    redlock_lock *h, *l;
    box b = { 0 }, b2 = { 0 }, b3 = { 0 };
    CHECK_RC(redlock_lock_new(&h, c, uniq("nofd")), 0);
    CHECK_RC(redlock_lock_new(&l, c, redlock_lock_resource(h)), 0);
    /* Connections made and the acquire thread started. */
    CHECK_RC(redlock_lock_acquire_async(h, 20000, REDLOCK_WAIT_NONE, on_done, &b), 0);
    CHECK(wait_box(&b, 10000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK_RC(redlock_lock_release_async(h, on_done, &b2), 0);
    CHECK(wait_box(&b2, 10000) == 1);
    /* A new handle's acquire and release, each asynchronous. */
    redlock_lock *k;
    CHECK_RC(redlock_lock_new(&k, c, uniq("nofd2")), 0);
    int before = fds_now();
    memset(&b, 0, sizeof b);
    memset(&b2, 0, sizeof b2);
    CHECK_RC(redlock_lock_acquire_async(k, 20000, REDLOCK_WAIT_NONE, on_done, &b), 0);
    CHECK(wait_box(&b, 10000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    CHECK_RC(redlock_lock_release_async(k, on_done, &b2), 0);
    CHECK(wait_box(&b2, 10000) == 1);
    CHECK(atomic_load(&b2.rc) == 0);
    CHECK(fds_now() == before);   /* k is alive: no eventfd was made for it */
    redlock_lock_free(k);
    memset(&b, 0, sizeof b);
    memset(&b2, 0, sizeof b2);
    CHECK_RC(redlock_lock_acquire_async(h, 20000, REDLOCK_WAIT_NONE, on_done, &b), 0);
    CHECK(wait_box(&b, 10000) == 1);
    CHECK(atomic_load(&b.rc) == 0);
    /* Now no descriptor can be made at all. */
    struct rlimit old, low;
    CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
    low = old;
    low.rlim_cur = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            low.rlim_cur = (rlim_t)fd + 1;
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
    CHECK_RC(redlock_lock_acquire_async(l, 5000, REDLOCK_WAIT_FOREVER, on_done, &b3), 0);
    msleep(300);
    CHECK(atomic_load(&b3.fired) == 0);   /* napping, h holds it */
    double t0 = now_ms();
    redlock_lock_cancel(l);
    CHECK(wait_box(&b3, 2000) == 1);
    CHECK(atomic_load(&b3.rc) == REDLOCK_ECANCELED);
    CHECK(now_ms() - t0 < 500);           /* not the nap's end (up to 5 s) */
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
    CHECK_RC(redlock_lock_release_async(h, on_done, &b2), 0);
    CHECK(wait_box(&b2, 10000) == 1);
    CHECK(atomic_load(&b2.rc) == 0);
    redlock_lock_free(l);
    redlock_lock_free(h);
    redlock_client_free(c);
}


/* ---- Calls due together take their step together ---- */

typedef struct gate {
    atomic_int entered, open;
} gate;

/* A done callback that holds the acquire thread until the test opens it:
 * what is started meanwhile is all due at once when it returns. */
static void on_gate(redlock_lock *lock, int rc, void *userdata)
{
    gate *g = userdata;
    (void)lock;
    (void)rc;
    atomic_store(&g->entered, 1);
    for (int i = 0; i < 20000 && !atomic_load(&g->open); i++)
        msleep(1);
}

/* Read events node i has processed (INFO stats): one per batch of
 * commands a client wrote at once, give or take the reader's own. */
static long long reads_on(int i)
{
    static char out[16384];
    CHECK(ctl(out, sizeof out, "cmd %d INFO stats", i) == 0);
    const char *at = strstr(out, "total_reads_processed:");
    return at ? atoll(at + strlen("total_reads_processed:")) : -1;
}

/* Each node's reads now (up to 8 nodes). */
static void reads_now(long long *at)
{
    for (size_t i = 0; i < t_nurls && i < 8; i++)
        at[i] = reads_on((int)i);
}

/* The nodes' reads since `before` for `calls` calls made at once: a few,
 * where one call at a time would cost one read or more each. */
static void check_reads(const long long *before, int calls, const char *what)
{
    for (size_t i = 0; i < t_nurls && i < 8; i++) {
        long long d = reads_on((int)i) - before[i];
        fprintf(stderr, "[%s] node %zu: %lld reads for %d %s\n", t_current, i, d, calls, what);
        CHECK(d >= 1 && d < calls / 2);
    }
}

/* Holds the acquire thread in a gate lock's callback until ready. */
static redlock_lock *hold_thread(redlock_client *c, gate *g)
{
    redlock_lock *gl;
    atomic_init(&g->entered, 0);
    atomic_init(&g->open, 0);
    CHECK_RC(redlock_lock_new(&gl, c, uniq("gate")), 0);
    CHECK_RC(redlock_lock_acquire_async(gl, 5000, REDLOCK_WAIT_NONE, on_gate, g), 0);
    CHECK(EVENTUALLY(atomic_load(&g->entered), 5000, "the gate's callback"));
    return gl;
}

#define BATCHED 24

/* Acquires of many locks and their releases, started while the thread is
 * busy, go out in one write per node (the nodes count their reads); a
 * refused one among them waits and gets its lock later, a release of a
 * lock not held fails alone, and a callback that frees another lock of the
 * same batch drops that one. */
static void test_batched(void)
{
    redlock_client *c = client_flags(0), *other = client_flags(0);
    redlock_lock *l[BATCHED], *held, *rival, *idle, *victim, *fr;
    box b[BATCHED], rb[BATCHED], rivalb = { 0 }, idleb = { 0 }, victimb = { 0 };
    freer f;
    gate g;
    atomic_init(&f.fired, 0);
    memset(b, 0, sizeof b);
    memset(rb, 0, sizeof rb);
    CHECK_RC(redlock_lock_new(&held, other, uniq("batch-held")), 0);
    CHECK_LOCK_RC(held, redlock_lock_acquire(held, 60000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_new(&rival, c, redlock_lock_resource(held)), 0);
    /* The refused waiter asks again only after the reads are counted. */
    redlock_lock_options ro;
    ro.version = REDLOCK_LOCK_OPTIONS_VERSION;
    CHECK_RC(redlock_lock_get_options(rival, &ro), 0);
    ro.retry_delay_ms = 4000;
    ro.retry_jitter_ms = 0;
    CHECK_LOCK_RC(rival, redlock_lock_set_options(rival, &ro), 0);
    CHECK_RC(redlock_lock_new(&idle, c, uniq("batch-idle")), 0);
    CHECK_RC(redlock_lock_new(&victim, c, uniq("batch-victim")), 0);
    CHECK_RC(redlock_lock_new(&fr, c, uniq("batch-freer")), 0);
    for (int k = 0; k < BATCHED; k++)
        CHECK_RC(redlock_lock_new(&l[k], c, uniq("batch")), 0);
    f.victim = victim;

    redlock_lock *gl = hold_thread(c, &g);
    CHECK_RC(redlock_lock_acquire_async(victim, 5000, REDLOCK_WAIT_NONE, on_done, &victimb), 0);
    for (int k = 0; k < BATCHED; k++)
        CHECK_RC(redlock_lock_acquire_async(l[k], 10000, REDLOCK_WAIT_NONE, on_done, &b[k]), 0);
    CHECK_RC(redlock_lock_acquire_async(rival, 5000, 30000, on_done, &rivalb), 0);
    CHECK_RC(redlock_lock_release_async(idle, on_done, &idleb), 0);
    CHECK_RC(redlock_lock_acquire_async(fr, 5000, REDLOCK_WAIT_NONE, on_done_free_other, &f), 0);
    long long before[8];
    reads_now(before);
    atomic_store(&g.open, 1);
    for (int k = 0; k < BATCHED; k++) {
        CHECK(wait_box(&b[k], 10000) == 1);
        CHECK_RC(atomic_load(&b[k].rc), 0);
        CHECK(atomic_load(&b[k].held) == 1);
    }
    CHECK(wait_box(&idleb, 10000) == 1);
    CHECK_RC(atomic_load(&idleb.rc), REDLOCK_ESTATE);
    CHECK(EVENTUALLY(atomic_load(&f.fired), 5000, "the freeing callback"));
    CHECK(atomic_load(&rivalb.fired) == 0);   /* refused, and waiting */
    check_reads(before, BATCHED + 3, "acquires");

    /* The releases, the same way. */
    redlock_lock *gl2 = hold_thread(c, &g);
    for (int k = 0; k < BATCHED; k++)
        CHECK_RC(redlock_lock_release_async(l[k], on_done, &rb[k]), 0);
    reads_now(before);
    atomic_store(&g.open, 1);
    for (int k = 0; k < BATCHED; k++) {
        CHECK(wait_box(&rb[k], 10000) == 1);
        CHECK_RC(atomic_load(&rb[k].rc), 0);
        CHECK(!redlock_lock_is_held(l[k]));
    }
    check_reads(before, BATCHED, "releases");
    for (int k = 0; k < BATCHED; k++) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "EXISTS %s", redlock_lock_resource(l[k]));
        for (size_t i = 0; i < t_nurls; i++)
            CHECK(EVENTUALLY(node_int((int)i, cmd) == 0, 5000, "the released key gone"));
    }

    /* The refused one gets its lock once the holder lets go. */
    CHECK_LOCK_RC(held, redlock_lock_release(held), 0);
    CHECK(wait_box(&rivalb, 15000) == 1);
    CHECK_RC(atomic_load(&rivalb.rc), 0);
    CHECK_LOCK_RC(rival, redlock_lock_release(rival), 0);

    for (int k = 0; k < BATCHED; k++)
        redlock_lock_free(l[k]);
    redlock_lock_release(gl);
    redlock_lock_release(gl2);
    redlock_lock_free(gl);
    redlock_lock_free(gl2);
    redlock_lock_free(rival);
    redlock_lock_free(idle);
    redlock_lock_free(held);
    redlock_client_free(c);
    redlock_client_free(other);
}


/* Waiters whose naps end while the thread is busy make their next
 * attempts together: 16 locks released at once, and their 16 waiters,
 * all due when the thread is free again, cost each node a few reads. */
static void test_batched_retries(void)
{
    enum { W = 16 };
    redlock_client *c = client_flags(0), *other = client_flags(0);
    redlock_lock *h[W], *w[W];
    box b[W];
    gate g;
    memset(b, 0, sizeof b);
    for (int k = 0; k < W; k++) {
        CHECK_RC(redlock_lock_new(&h[k], other, uniq("retry")), 0);
        CHECK_LOCK_RC(h[k], redlock_lock_acquire(h[k], 30000, REDLOCK_WAIT_NONE), 0);
        CHECK_RC(redlock_lock_new(&w[k], c, redlock_lock_resource(h[k])), 0);
        redlock_lock_options o;
        o.version = REDLOCK_LOCK_OPTIONS_VERSION;
        CHECK_RC(redlock_lock_get_options(w[k], &o), 0);
        o.retry_delay_ms = 50;
        o.retry_jitter_ms = 10;
        CHECK_LOCK_RC(w[k], redlock_lock_set_options(w[k], &o), 0);
        CHECK_RC(redlock_lock_acquire_async(w[k], 5000, 20000, on_done, &b[k]), 0);
    }
    msleep(100);   /* refused once, napping */
    redlock_lock *gl = hold_thread(c, &g);
    for (int k = 0; k < W; k++)
        CHECK_LOCK_RC(h[k], redlock_lock_release(h[k]), 0);
    msleep(200);   /* every nap is over */
    long long before[8];
    reads_now(before);
    atomic_store(&g.open, 1);
    for (int k = 0; k < W; k++) {
        CHECK(wait_box(&b[k], 10000) == 1);
        CHECK_RC(atomic_load(&b[k].rc), 0);
    }
    check_reads(before, W, "attempts");
    for (int k = 0; k < W; k++) {
        CHECK_LOCK_RC(w[k], redlock_lock_release(w[k]), 0);
        redlock_lock_free(w[k]);
        redlock_lock_free(h[k]);
    }
    redlock_lock_release(gl);
    redlock_lock_free(gl);
    redlock_client_free(c);
    redlock_client_free(other);
}

int main(void)
{
    load_nodes();
    run_test("uncontended", test_uncontended);
    run_test("checks", test_checks);
    run_test("many_polling", test_many_polling);
    run_test("many_woken", test_many_woken);
    run_test("free_pending", test_free_pending);
    run_test("free_in_callback", test_free_in_callback);
    run_test("chain", test_chain);
    run_test("free_other_in_callback", test_free_other_in_callback);
    run_test("kinds", test_kinds);
    run_test("client_freed_pending", test_client_freed_pending);
    run_test("majority_paused", test_majority_paused);
    run_test("release_extend_paused", test_release_extend_paused);   /* before a node restarts */
    run_test("campaign", test_campaign);
    run_test("fork", test_fork);
    run_test("observe", test_observe);
    run_test("release_extend_async", test_release_extend_async);
    run_test("downgrade_async", test_downgrade_async);
    run_test("no_eventfd", test_no_eventfd);
    run_test("batched", test_batched);
    run_test("batched_retries", test_batched_retries);
    /* Last: it restarts a node without persistence, which is then out of
     * the vote (the quarantine) for the longest TTL its markers record, and
     * a test after it would have two voting nodes of three. */
    run_test("minority_faults", test_minority_faults);
    return finish_tests();
}
