/* SPDX-License-Identifier: BSD-3-Clause */
/* test_many.c: many locks per client on real nodes (issue 28): one attempt
 * at many locks at once (redlock_lock_acquire_many) decides each lock on its
 * own and cleans up after the ones it lost; bad arguments are refused; and
 * the batched watchdog keeps locks alive, decides a lock that is gone from
 * a majority as lost while its batch mates stay held, and says when it is
 * behind. */
#include <stdatomic.h>

#include "testutil.h"

#define N 300

static void free_all(redlock_lock **l, size_t n)
{
    for (size_t k = 0; k < n; k++)
        redlock_lock_free(l[k]);
}

static void test_acquire_many(void)
{
    redlock_client *a = make_client(t_nurls, NULL), *b = make_client(t_nurls, NULL);
    static redlock_lock *mine[N], *theirs[N / 3];
    static int res[N];
    const char *base = uniq("am");
    for (int k = 0; k < N; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s:%d", base, k);
        CHECK_RC(redlock_lock_new(&mine[k], a, name), 0);
        if (k % 3 == 0)
            CHECK_RC(redlock_lock_new(&theirs[k / 3], b, name), 0);
    }
    /* Every third resource is held by another client first. */
    for (int k = 0; k < N / 3; k++)
        CHECK_LOCK_RC(theirs[k], redlock_lock_acquire(theirs[k], 20000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_acquire_many(a, mine, N, 20000, res, NULL, 0), 0);
    int held = 0, refused = 0;
    for (int k = 0; k < N; k++) {
        if (k % 3 == 0) {
            CHECK(res[k] == REDLOCK_ENOTACQUIRED);
            CHECK(!redlock_lock_is_held(mine[k]));
            CHECK(strstr(redlock_lock_errmsg(mine[k]), "not acquired") != NULL);
            refused += res[k] == REDLOCK_ENOTACQUIRED;
        } else {
            CHECK(res[k] == 0);
            CHECK(redlock_lock_is_held(mine[k]));
            CHECK(redlock_lock_validity_ms(mine[k]) > 10000);
            held += res[k] == 0;
        }
    }
    CHECK(held == N - N / 3 && refused == N / 3);
    /* The other owner still holds its locks: the lost attempts cleaned up
     * only where their own value was. */
    for (int k = 0; k < N / 3; k++)
        CHECK_LOCK_RC(theirs[k], redlock_lock_extend(theirs[k], 20000), 0);
    /* Held ones are refused a second time, the others get their chance. */
    for (int k = 0; k < N / 3; k++)
        CHECK_LOCK_RC(theirs[k], redlock_lock_release(theirs[k]), 0);
    CHECK_RC(redlock_lock_acquire_many(a, mine, N, 20000, res, NULL, 0), 0);
    for (int k = 0; k < N; k++)
        CHECK(res[k] == (k % 3 == 0 ? 0 : REDLOCK_ESTATE));
    for (int k = 0; k < N; k++)
        CHECK_LOCK_RC(mine[k], redlock_lock_release(mine[k]), 0);
    CHECK(keys_on(t_nurls) == 0 || EVENTUALLY(keys_on(t_nurls) == 0, 5000, "no key left"));
    free_all(mine, N);
    free_all(theirs, N / 3);
    redlock_client_free(a);
    redlock_client_free(b);
}

static void test_acquire_many_input(void)
{
    redlock_client *a = make_client(t_nurls, NULL), *b = make_client(t_nurls, NULL);
    redlock_lock *l[3];
    int res[3] = { 7, 7, 7 };
    CHECK_RC(redlock_lock_new(&l[0], a, uniq("in0")), 0);
    CHECK_RC(redlock_lock_new(&l[1], a, uniq("in1")), 0);
    CHECK_RC(redlock_lock_new(&l[2], b, uniq("in2")), 0);
    char err[256];
#define REFUSED(call, words) \
    do { \
        CHECK_RC(call, REDLOCK_EINVAL); \
        if (!strstr(err, words)) \
            fprintf(stderr, "the reason '%s' should say '%s'\n", err, words); \
        CHECK(strstr(err, words) != NULL); \
    } while (0)
    REFUSED(redlock_lock_acquire_many(NULL, l, 1, 1000, res, err, sizeof err), "client is NULL");
    REFUSED(redlock_lock_acquire_many(a, NULL, 1, 1000, res, err, sizeof err), "locks is NULL");
    REFUSED(redlock_lock_acquire_many(a, l, 1, 1000, NULL, err, sizeof err), "results is NULL");
    REFUSED(redlock_lock_acquire_many(a, l, (size_t)REDLOCK_ACQUIRE_MANY_MAX + 1, 1000, res, err, sizeof err),
            "over the limit of 65536");
    REFUSED(redlock_lock_acquire_many(a, l, 3, 1000, res, err, sizeof err), "belongs to another client");
    CHECK(strstr(err, "in2") != NULL);   /* names the lock */
    REFUSED(redlock_lock_acquire_many(b, l, 2, 1000, res, err, sizeof err), "belongs to another client");
    redlock_lock *twice[3] = { l[1], l[0], l[1] };
    REFUSED(redlock_lock_acquire_many(a, twice, 3, 1000, res, err, sizeof err), "is given twice");
    CHECK(strstr(err, "in1") != NULL);
    redlock_lock *with_null[2] = { l[0], NULL };
    REFUSED(redlock_lock_acquire_many(a, with_null, 2, 1000, res, err, sizeof err), "lock 1 of 2 is NULL");
    CHECK_RC(redlock_lock_acquire_many(a, l, 1, 1000, NULL, NULL, 0), REDLOCK_EINVAL);   /* no errbuf: fine */
#undef REFUSED
    /* Nothing to do is no error (locks and results may then be NULL). */
    CHECK_RC(redlock_lock_acquire_many(a, NULL, 0, 1000, NULL, err, sizeof err), 0);
    CHECK(err[0] == '\0');
    CHECK(res[0] == 7 && res[1] == 7 && res[2] == 7);   /* untouched */
    /* A bad TTL is each lock's own error, as redlock_lock_acquire gives it. */
    CHECK_RC(redlock_lock_acquire_many(a, l, 2, 0, res, err, sizeof err), 0);
    CHECK(err[0] == '\0');
    CHECK(res[0] == REDLOCK_EINVAL && res[1] == REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(l[0]), "ttl_ms") != NULL);
    CHECK(keys_on(t_nurls) == 0);
    free_all(l, 3);
    redlock_client_free(a);
    redlock_client_free(b);
}

static atomic_int n_behind, n_auto_ext;
static void count_events(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_WATCH_BEHIND)
        atomic_fetch_add(&n_behind, 1);
    if (ev->type == REDLOCK_EVENT_EXTENDED && ev->automatic)
        atomic_fetch_add(&n_auto_ext, 1);
}

static atomic_int n_lost, lost_ready;
static char lost_resource[256];   /* the first loss's; read once lost_ready is set */
static void on_lost(redlock_lock *lock, int code, const char *msg, void *userdata)
{
    (void)code; (void)msg; (void)userdata;
    if (atomic_fetch_add(&n_lost, 1) == 0) {
        snprintf(lost_resource, sizeof lost_resource, "%s", redlock_lock_resource(lock));
        atomic_store(&lost_ready, 1);
    }
}

/* A batch decides each lock on its own: one lock whose key is deleted on
 * every node is lost, its batch mates are extended and stay held. */
static void test_batch_per_lock(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.on_event = count_events;
    redlock_client *c = make_client(t_nurls, &o);
    static redlock_lock *l[N];
    const char *base = uniq("batch");
    int res[N];
    for (int k = 0; k < N; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s:%d", base, k);
        CHECK_RC(redlock_lock_new(&l[k], c, name), 0);
    }
    CHECK_RC(redlock_lock_acquire_many(c, l, N, 1500, res, NULL, 0), 0);
    for (int k = 0; k < N; k++) {
        CHECK(res[k] == 0);
        CHECK_RC(redlock_lock_auto_extend(l[k], 0, 0, on_lost, NULL, NULL), 0);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "DEL %s:%d", base, 17);
    for (size_t i = 0; i < t_nurls; i++)
        node_int((int)i, cmd);
    int before = atomic_load(&n_auto_ext);
    CHECK(EVENTUALLY(atomic_load(&lost_ready) == 1, 5000, "the deleted lock found lost"));
    char want[128];
    snprintf(want, sizeof want, "%s:%d", base, 17);
    CHECK(strcmp(lost_resource, want) == 0);
    /* Its batch mates go on: several extensions each (TTL/3 = 500 ms). */
    CHECK(EVENTUALLY(atomic_load(&n_auto_ext) - before >= 3 * (N - 1), 8000, "the others extended"));
    int held = 0;
    for (int k = 0; k < N; k++)
        held += redlock_lock_is_held(l[k]);
    CHECK(held == N - 1);
    CHECK(atomic_load(&n_lost) == 1);
    CHECK(atomic_load(&n_behind) == 0);
    for (int k = 0; k < N; k++)
        if (k != 17)
            CHECK_LOCK_RC(l[k], redlock_lock_release(l[k]), 0);
    free_all(l, N);
    redlock_client_free(c);
}

/* The thread falls behind (here the hook is slow: 3 ms per event, 300
 * locks due every 300 ms): it says so, before any lock is lost. */
static atomic_int slow_hook, behind_before_loss;
static void slow_events(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_WATCH_BEHIND) {
        if (atomic_load(&n_lost) == 0)
            atomic_store(&behind_before_loss, 1);
        atomic_fetch_add(&n_behind, 1);
    }
    if (ev->type == REDLOCK_EVENT_EXTENDED && ev->automatic && atomic_load(&slow_hook))
        msleep(3);
}

static void test_behind(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.on_event = slow_events;
    redlock_client *c = make_client(t_nurls, &o);
    static redlock_lock *l[N];
    const char *base = uniq("behind");
    int res[N];
    for (int k = 0; k < N; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s:%d", base, k);
        CHECK_RC(redlock_lock_new(&l[k], c, name), 0);
    }
    atomic_store(&n_behind, 0);
    atomic_store(&n_lost, 0);
    atomic_store(&slow_hook, 1);
    /* Two groups, due 100 ms apart: the first one's batch (150 x 3 ms)
     * outlasts the gap, so the second starts late. */
    for (int g = 0; g < 2; g++) {
        CHECK_RC(redlock_lock_acquire_many(c, l + g * (N / 2), N / 2, 900, res, NULL, 0), 0);
        for (int k = g * (N / 2); k < (g + 1) * (N / 2); k++)
            CHECK_RC(redlock_lock_auto_extend(l[k], 0, 0, on_lost, NULL, NULL), 0);
        msleep(100);
    }
    CHECK(EVENTUALLY(atomic_load(&n_behind) >= 1, 10000, "a WATCH_BEHIND event"));
    CHECK(atomic_load(&behind_before_loss) == 1);
    atomic_store(&slow_hook, 0);
    free_all(l, N);
    redlock_client_free(c);
}

/* Handles of other kinds (a semaphore's) mixed with mutexes: acquire_many
 * gives them their own attempts, the watchdog their own extensions (their
 * keys are not the mutex's), and each lock's call ends in one ACQUIRE_DONE
 * of one attempt. */
#define KM 20
static atomic_int n_done, n_done_bad;
static void count_done(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_ACQUIRE_DONE) {
        atomic_fetch_add(&n_done, 1);
        if (ev->attempt != 1)
            atomic_fetch_add(&n_done_bad, 1);
    }
}

static void test_kinds(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.on_event = count_done;
    redlock_client *c = make_client(t_nurls, &o);
    redlock_lock *l[KM + 2];
    int res[KM + 2];
    const char *base = uniq("kinds"), *semname = uniq("kinds-sem");
    for (int k = 0; k < KM; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s:%d", base, k);
        CHECK_RC(redlock_lock_new(&l[k], c, name), 0);
    }
    /* Two handles on a semaphore of one permit: the first gets it. */
    CHECK_RC(redlock_lock_new_semaphore(&l[KM], c, semname, 1, 1), 0);
    CHECK_RC(redlock_lock_new_semaphore(&l[KM + 1], c, semname, 1, 1), 0);
    atomic_store(&n_done, 0);
    atomic_store(&n_done_bad, 0);
    CHECK_RC(redlock_lock_acquire_many(c, l, KM + 2, 600, res, NULL, 0), 0);
    for (int k = 0; k < KM; k++)
        CHECK(res[k] == 0);
    CHECK(res[KM] == 0 && redlock_lock_is_held(l[KM]));
    CHECK(res[KM + 1] == REDLOCK_ENOTACQUIRED && !redlock_lock_is_held(l[KM + 1]));
    CHECK(atomic_load(&n_done) == KM + 2 && atomic_load(&n_done_bad) == 0);
    /* On the watchdog together, for more than twice the TTL. */
    for (int k = 0; k <= KM; k++)
        CHECK_RC(redlock_lock_auto_extend(l[k], 0, 0, NULL, NULL, NULL), 0);
    msleep(1500);
    int held = 0;
    for (int k = 0; k <= KM; k++)
        held += redlock_lock_is_held(l[k]);
    CHECK(held == KM + 1);
    /* The permit is still taken on the nodes: the other handle is refused. */
    CHECK_LOCK_RC(l[KM + 1], redlock_lock_acquire(l[KM + 1], 600, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    for (int k = 0; k <= KM; k++) {
        CHECK_RC(redlock_lock_auto_extend_stop(l[k]), 0);
        CHECK_LOCK_RC(l[k], redlock_lock_release(l[k]), 0);
    }
    CHECK(keys_on(t_nurls) == 0 || EVENTUALLY(keys_on(t_nurls) == 0, 5000, "no key left"));
    free_all(l, KM + 2);
    redlock_client_free(c);
}

/* A read-write lock's sides on the watchdog with mutexes: the writer is
 * batched (its key is the mutex's), the reader's lease extended on its own;
 * a downgrade while the thread keeps the writer waits for its batch, and
 * the reader it becomes is kept alive as a reader. */
static void test_rw_sides(void)
{
    redlock_client *c = make_client(t_nurls, NULL), *other = make_client(t_nurls, NULL);
    redlock_lock *l[KM + 2];
    int res[KM + 2];
    const char *base = uniq("rwm"), *wres = uniq("rwm-w"), *rres = uniq("rwm-r");
    for (int k = 0; k < KM; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s:%d", base, k);
        CHECK_RC(redlock_lock_new(&l[k], c, name), 0);
    }
    CHECK_RC(redlock_lock_new_write(&l[KM], c, wres), 0);
    CHECK_RC(redlock_lock_new_read(&l[KM + 1], c, rres), 0);
    redlock_lock *ow, *orr, *ow2;
    CHECK_RC(redlock_lock_new_write(&ow, other, rres), 0);
    CHECK_RC(redlock_lock_new_read(&orr, other, wres), 0);
    CHECK_RC(redlock_lock_new_write(&ow2, other, wres), 0);
    CHECK_RC(redlock_lock_acquire_many(c, l, KM + 2, 600, res, NULL, 0), 0);
    for (int k = 0; k < KM + 2; k++) {
        CHECK(res[k] == 0);
        CHECK_RC(redlock_lock_auto_extend(l[k], 0, 0, NULL, NULL, NULL), 0);
    }
    msleep(1500);   /* more than twice the TTL */
    int held = 0;
    for (int k = 0; k < KM + 2; k++)
        held += redlock_lock_is_held(l[k]);
    CHECK(held == KM + 2);
    /* Both kept on the nodes: a writer is refused beside the reader, a reader beside the writer. */
    CHECK_LOCK_RC(ow, redlock_lock_acquire(ow, 600, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(orr, redlock_lock_acquire(orr, 600, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    /* The writer becomes a reader while on the watchdog. */
    CHECK_LOCK_RC(l[KM], redlock_lock_downgrade(l[KM]), 0);
    msleep(1500);
    CHECK(redlock_lock_is_held(l[KM]));
    CHECK_LOCK_RC(orr, redlock_lock_acquire(orr, 600, REDLOCK_WAIT_NONE), 0);   /* readers share */
    CHECK_LOCK_RC(orr, redlock_lock_release(orr), 0);
    CHECK_LOCK_RC(ow2, redlock_lock_acquire(ow2, 600, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    /* Again, at moments spread over the extension interval (TTL/3), the
     * mutexes' batches going on meanwhile: each one kept as a reader. */
    CHECK_RC(redlock_lock_auto_extend_stop(l[KM]), 0);
    CHECK_LOCK_RC(l[KM], redlock_lock_release(l[KM]), 0);
    for (int k = 0; k < 5; k++) {
        redlock_lock *w;   /* a downgraded handle stays a reader: a new one each time */
        CHECK_RC(redlock_lock_new_write(&w, c, wres), 0);
        CHECK_LOCK_RC(w, redlock_lock_acquire(w, 600, REDLOCK_WAIT_NONE), 0);
        CHECK_RC(redlock_lock_auto_extend(w, 0, 0, NULL, NULL, NULL), 0);
        msleep(200 + 37 * k);
        CHECK_LOCK_RC(w, redlock_lock_downgrade(w), 0);
        msleep(700);
        CHECK(redlock_lock_is_held(w));
        CHECK_LOCK_RC(ow2, redlock_lock_acquire(ow2, 600, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
        CHECK_RC(redlock_lock_auto_extend_stop(w), 0);
        CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
        redlock_lock_free(w);
    }
    for (int k = 0; k < KM + 2; k++) {
        if (k == KM)
            continue;
        CHECK_RC(redlock_lock_auto_extend_stop(l[k]), 0);
        CHECK_LOCK_RC(l[k], redlock_lock_release(l[k]), 0);
    }
    free_all(l, KM + 2);
    redlock_lock_free(ow);
    redlock_lock_free(orr);
    redlock_lock_free(ow2);
    redlock_client_free(c);
    redlock_client_free(other);
}

int main(void)
{
    load_nodes();
    run_test("acquire_many", test_acquire_many);
    run_test("acquire_many_input", test_acquire_many_input);
    run_test("batch_per_lock", test_batch_per_lock);
    run_test("behind", test_behind);
    run_test("kinds", test_kinds);
    run_test("rw_sides", test_rw_sides);
    return finish_tests();
}
