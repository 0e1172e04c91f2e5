/* SPDX-License-Identifier: BSD-3-Clause */
/* test_multilock.c: the multi-resource lock (redlock_lock_new_multi,
 * docs/algorithm.md "Multi-resource locks") on real nodes: all or nothing
 * on each node, callers that list the set in any order exclude each other
 * (and a mutex on one of its resources), extend, release, an honest ELOST,
 * one fencing token above every resource's counter, a minority node
 * paused, wake-up by the release of any key, FCALL, bad input, and the
 * deadlock case: two clients that take {a, b} and {b, a} in a loop both
 * keep making progress. */
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>

static redlock_lock *multi(redlock_client *c, const char *const *names, size_t n)
{
    redlock_lock *l = NULL;
    char err[512];
    int rc = redlock_lock_open_multi(&l, c, names, n, err, sizeof err);
    CHECK_RC(rc, 0);
    if (rc) {
        fprintf(stderr, "  open_multi: %s\n", err);
        exit(1);
    }
    return l;
}

static int exists_on(int i, const char *key)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "EXISTS %s", key);
    return node_int(i, cmd) == 1;
}

static void set_on(int i, const char *key, const char *value, int px)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "cmd %d SET %s %s PX %d", i, key, value, px);
    CHECK(ctl(NULL, 0, "%s", cmd) == 0);
}

static void del_on(int i, const char *key)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "DEL %s", key);
    node_int(i, cmd);
}

#define OTHER "w0000000000000000000000000000000000000000"

/* One key held elsewhere on a node: that node sets none of the set; with
 * it held on a majority, nothing is acquired and nothing is left behind. */
static void test_all_or_nothing(void)
{
    if (t_nurls != 3) {
        printf("all_or_nothing: needs exactly 3 nodes, has %zu: not run\n", t_nurls);
        CHECK(t_nurls == 3);
        return;
    }
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-aon-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-aon-b"));
    const char *names[2] = { a, b };
    redlock_client *c = make_client(3, NULL);
    redlock_lock *l = multi(c, names, 2);
    /* b held by another owner on node 0: nodes 1 and 2 grant, node 0 sets nothing */
    set_on(0, b, OTHER, 20000);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(1, b));
    for (int i = 1; i < 3; i++)
        CHECK(EVENTUALLY(exists_on(i, a) && exists_on(i, b), 3000, "the set on nodes 1 and 2"));
    CHECK(!exists_on(0, a));   /* node 0 refused the whole set: a is not there */
    CHECK(redlock_lock_node_result(l, 0, NULL, NULL, NULL, 0) == REDLOCK_NODE_REFUSED ||
          redlock_lock_node_result(l, 0, NULL, NULL, NULL, 0) == REDLOCK_NODE_NOT_WAITED);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    for (int i = 1; i < 3; i++)
        CHECK(EVENTUALLY(!exists_on(i, a) && !exists_on(i, b), 3000, "the set released"));
    /* b held elsewhere on nodes 0 and 1: refused, and no a anywhere after */
    set_on(1, b, OTHER, 20000);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK(!redlock_lock_is_held(l));
    for (int i = 0; i < 3; i++)
        CHECK(EVENTUALLY(!exists_on(i, a), 3000, "no part of the refused set"));
    CHECK(exists_on(0, b) && exists_on(1, b));   /* the other owner's keys untouched */
    for (int i = 0; i < 3; i++)
        del_on(i, b);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* {a, b} and {b, a} are the same set: they exclude each other, and a mutex
 * on b excludes both. */
static void test_any_order_excludes(void)
{
    char a[64], b[64], cc[64];
    snprintf(a, sizeof a, "%s", uniq("mx-ord-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-ord-b"));
    snprintf(cc, sizeof cc, "%s", uniq("mx-ord-c"));
    const char *ab[2] = { a, b }, *ba[2] = { b, a }, *bc[2] = { cc, b };
    redlock_client *c1 = make_client(t_nurls, NULL), *c2 = make_client(t_nurls, NULL);
    redlock_lock *x = multi(c1, ab, 2), *y = multi(c2, ba, 2), *z = multi(c2, bc, 2), *m = NULL;
    CHECK_RC(redlock_lock_new(&m, c2, b), 0);
    CHECK(strcmp(redlock_lock_resource(x), redlock_lock_resource(y)) == 0);   /* canonical order */
    size_t n = 0;
    CHECK_RC(redlock_lock_multi_count(y, &n), 0);
    CHECK(n == 2);
    CHECK_RC(redlock_lock_multi_count(m, &n), REDLOCK_EINVAL);
    CHECK_LOCK_RC(x, redlock_lock_acquire(x, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(y, redlock_lock_acquire(y, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(z, redlock_lock_acquire(z, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);   /* shares b */
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(x, redlock_lock_release(x), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), 0);   /* the mutex on b */
    CHECK_LOCK_RC(y, redlock_lock_acquire(y, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(m, redlock_lock_release(m), 0);
    CHECK_LOCK_RC(y, redlock_lock_acquire(y, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(x, redlock_lock_acquire(x, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(y, redlock_lock_release(y), 0);
    redlock_lock_free(x);
    redlock_lock_free(y);
    redlock_lock_free(z);
    redlock_lock_free(m);
    redlock_client_free(c1);
    redlock_client_free(c2);
}

/* extend moves every key's TTL; one key gone on every node makes the set
 * lost (ELOST), and the other keys are not extended either. */
static void test_extend_release_lost(void)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-ext-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-ext-b"));
    const char *names[2] = { a, b };
    redlock_client *c = make_client(t_nurls, NULL);
    redlock_lock *l = multi(c, names, 2);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 3000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 60000), 0);
    char cmd[300];
    int g = granted_node(l);
    CHECK(g >= 0);
    snprintf(cmd, sizeof cmd, "PTTL %s", a);
    CHECK(node_int(g, cmd) > 30000);
    snprintf(cmd, sizeof cmd, "PTTL %s", b);
    CHECK(node_int(g, cmd) > 30000);
    CHECK(redlock_lock_validity_ms(l) > 30000);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(!exists_on((int)i, a) && !exists_on((int)i, b), 3000, "released"));
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ESTATE);
    /* b deleted behind the lock's back: the extension refuses the set */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(t_nurls, a));
    CHECK(key_on_every_node(t_nurls, b));
    for (size_t i = 0; i < t_nurls; i++)
        del_on((int)i, b);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 60000), REDLOCK_ELOST);
    CHECK(!redlock_lock_is_held(l));
    snprintf(cmd, sizeof cmd, "PTTL %s", a);
    for (size_t i = 0; i < t_nurls; i++) {
        long long t = node_int((int)i, cmd);
        CHECK(t <= 20000);   /* not extended */
        del_on((int)i, a);
    }
    redlock_lock_free(l);
    /* and a release of a set that is not ours on a majority is ELOST */
    l = multi(c, names, 2);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 20000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(t_nurls, a));
    CHECK(key_on_every_node(t_nurls, b));
    for (size_t i = 0; i < t_nurls; i++)
        del_on((int)i, a);
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ELOST);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(!exists_on((int)i, b), 3000, "b released with the set"));
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* One token for the set, above every counter of its resources, and each
 * counter raised to it: a mutex on either resource gets a larger one next. */
static void test_fencing(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_FENCING;
    redlock_client *c = make_client(t_nurls, &o);
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-fence-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-fence-b"));
    const char *names[2] = { a, b };
    redlock_lock *mb = NULL, *ma = NULL;
    CHECK_RC(redlock_lock_new(&mb, c, b), 0);
    CHECK_RC(redlock_lock_new(&ma, c, a), 0);
    uint64_t last = 0;
    for (int k = 0; k < 3; k++) {   /* b's counter runs ahead of a's */
        CHECK_LOCK_RC(mb, redlock_lock_acquire(mb, 10000, REDLOCK_WAIT_NONE), 0);
        CHECK(redlock_lock_fencing_token(mb) > last);
        last = redlock_lock_fencing_token(mb);
        CHECK_LOCK_RC(mb, redlock_lock_release(mb), 0);
    }
    redlock_lock *l = multi(c, names, 2);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    uint64_t tok = redlock_lock_fencing_token(l);
    CHECK(tok > last);
    int g = granted_node(l);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "GET %s:fencing", a);
    CHECK(g >= 0 && node_int(g, cmd) == (long long)tok);
    snprintf(cmd, sizeof cmd, "GET %s:fencing", b);
    CHECK(g >= 0 && node_int(g, cmd) == (long long)tok);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(redlock_lock_fencing_token(l) == 0);
    CHECK_LOCK_RC(ma, redlock_lock_acquire(ma, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_fencing_token(ma) > tok);
    CHECK_LOCK_RC(ma, redlock_lock_release(ma), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_fencing_token(l) > tok + 1);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_lock_free(ma);
    redlock_lock_free(mb);
    redlock_client_free(c);
}

/* A minority paused: acquire, extend, release go on at quorum, and the
 * paused node is reported. */
static void test_minority_paused(void)
{
    size_t minority = (t_nurls - 1) / 2;
    if (minority == 0) {
        printf("minority_paused: needs 3 or more nodes, has %zu: not run\n", t_nurls);
        CHECK(minority > 0);
        return;
    }
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 300;
    redlock_client *c = make_client(t_nurls, &o);
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-pause-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-pause-b"));
    const char *names[2] = { a, b };
    redlock_lock *l = multi(c, names, 2), *other = multi(c, names, 2);
    for (size_t k = 0; k < minority; k++)
        CHECK(ctl(NULL, 0, "pause %zu", t_nurls - 1 - k) == 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, 5000), 0);
    CHECK_LOCK_RC(other, redlock_lock_acquire(other, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    CHECK(redlock_lock_node_result(l, t_nurls - 1, NULL, NULL, NULL, 0) != REDLOCK_NODE_OK);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK_LOCK_RC(other, redlock_lock_acquire(other, 10000, 5000), 0);
    CHECK_LOCK_RC(other, redlock_lock_release(other), 0);
    for (size_t k = 0; k < minority; k++)
        CHECK(ctl(NULL, 0, "resume %zu", t_nurls - 1 - k) == 0);
    redlock_lock_free(l);
    redlock_lock_free(other);
    redlock_client_free(c);
}

static atomic_int woken_events;
static void count_woken(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_WOKEN)
        atomic_fetch_add(&woken_events, 1);
}

struct waiter_arg {
    redlock_lock *l;
    int rc;
};

static void *wait_for_set(void *p)
{
    struct waiter_arg *a = p;
    a->rc = redlock_lock_acquire(a->l, 30000, 60000);
    return NULL;
}

/* A waiter for {a, b} refused because b is held (by a mutex) is woken by
 * b's release, not by polling: the retry delay is longer than the wait. */
static void test_release_of_any_key_wakes(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_WAKE;   /* opt-in */
    o.on_event = count_woken;
    o.retry_delay_ms = 15000;
    o.retry_jitter_ms = 0;
    redlock_client *c = make_client(t_nurls, &o);
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-wake-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-wake-b"));
    const char *names[2] = { a, b };
    redlock_lock *holder = NULL, *w = multi(c, names, 2);
    CHECK_RC(redlock_lock_new(&holder, c, b), 0);
    CHECK_LOCK_RC(holder, redlock_lock_acquire(holder, 30000, REDLOCK_WAIT_NONE), 0);
    atomic_store(&woken_events, 0);
    struct waiter_arg arg = { w, -1 };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_set, &arg);
    /* registered in b's queue (the key that refused it), not in a's */
    char zc[300];
    snprintf(zc, sizeof zc, "ZCARD %s:wq", b);
    for (size_t i = 0; i < t_nurls; i++) {
        CHECK(EVENTUALLY(redlock_client_listener_state(c, i, NULL, 0) == REDLOCK_LISTENER_READY, 20000,
                         "the waiter's listener"));
        CHECK(EVENTUALLY(node_int((int)i, zc) >= 1, 20000, "the waiter registered"));
    }
    snprintf(zc, sizeof zc, "EXISTS %s:wq", a);
    CHECK(node_int(0, zc) == 0);
    CHECK(!redlock_lock_is_held(w));
    double t_rel = now_ms();
    CHECK_LOCK_RC(holder, redlock_lock_release(holder), 0);
    pthread_join(t, NULL);
    double after = now_ms() - t_rel;
    CHECK_LOCK_RC(w, arg.rc, 0);
    CHECK(atomic_load(&woken_events) >= 1);
    CHECK(after < 15000);   /* not the 15 s retry delay: woken */
    /* its registration left the queue when it won */
    snprintf(zc, sizeof zc, "ZCARD %s:wq", b);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(node_int((int)i, zc) == 0, 3000, "the queue empty"));
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    redlock_lock_free(w);
    redlock_lock_free(holder);
    redlock_client_free(c);
}

/* The deadlock case: two clients take {a, b} and {b, a}, each in a loop,
 * waiting for the set each time. Taking the keys one by one in those orders
 * can deadlock (each holds one and waits for the other); the set never
 * does: every wait ends with the set held (a stall would end in
 * ETIMEDOUT), and both make progress. */
enum { DEADLOCK_ROUNDS = 40 };
struct looper {
    const char *names[2];
    int got, failed;
    atomic_int *other_got;
};

static void *loop_set(void *p)
{
    struct looper *lp = p;
    redlock_client *c = make_client(t_nurls, NULL);
    redlock_lock *l = NULL;
    char err[512];
    /* not multi(): CHECK's counters are the main thread's */
    if (redlock_lock_open_multi(&l, c, lp->names, 2, err, sizeof err) != 0) {
        fprintf(stderr, "  open_multi: %s\n", err);
        lp->failed++;
        redlock_client_free(c);
        return NULL;
    }
    for (int k = 0; k < DEADLOCK_ROUNDS; k++) {
        int rc = redlock_lock_acquire(l, 10000, 30000);
        if (rc != 0) {
            fprintf(stderr, "  [%s,%s] round %d: %s: %s\n", lp->names[0], lp->names[1], k, redlock_error_name(rc),
                    redlock_lock_errmsg(l));
            lp->failed++;
            continue;
        }
        lp->got++;
        atomic_fetch_add(lp->other_got, 1);
        if (redlock_lock_release(l) != 0)
            lp->failed++;
    }
    redlock_lock_free(l);
    redlock_client_free(c);
    return NULL;
}

static void test_no_deadlock_any_order(void)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-dl-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-dl-b"));
    atomic_int total = 0;
    struct looper x = { { a, b }, 0, 0, &total }, y = { { b, a }, 0, 0, &total };
    pthread_t tx, ty;
    pthread_create(&tx, NULL, loop_set, &x);
    pthread_create(&ty, NULL, loop_set, &y);
    pthread_join(tx, NULL);
    pthread_join(ty, NULL);
    printf("no_deadlock: {a,b} held %d times, {b,a} %d times, %d failures\n", x.got, y.got, x.failed + y.failed);
    CHECK(x.failed == 0 && y.failed == 0);
    CHECK(x.got == DEADLOCK_ROUNDS && y.got == DEADLOCK_ROUNDS);
    CHECK(atomic_load(&total) == 2 * DEADLOCK_ROUNDS);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(!exists_on((int)i, a) && !exists_on((int)i, b), 3000, "nothing left"));
}

/* The same in two processes, as the issue asks: each forks, loops on its
 * order and reports by its exit status. */
static void test_no_deadlock_processes(void)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-dlp-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-dlp-b"));
    pid_t pid[2];
    for (int k = 0; k < 2; k++) {
        pid[k] = fork();
        if (pid[k] == 0) {
            atomic_int total = 0;
            struct looper lp = { { k ? b : a, k ? a : b }, 0, 0, &total };
            loop_set(&lp);
            _exit(lp.failed == 0 && lp.got == DEADLOCK_ROUNDS ? 0 : 1);
        }
        CHECK(pid[k] > 0);
    }
    for (int k = 0; k < 2; k++) {
        int st = -1;
        CHECK(waitpid(pid[k], &st, 0) == pid[k]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}

static void test_functions(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_FUNCTIONS | REDLOCK_OPT_FENCING;
    redlock_client *c = make_client(t_nurls, &o);
    char err[1024];
    CHECK_RC(redlock_client_load_functions(c, err, sizeof err), 0);
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-fcall-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-fcall-b"));
    const char *ab[2] = { a, b }, *ba[2] = { b, a };
    redlock_lock *x = multi(c, ab, 2), *y = multi(c, ba, 2);
    CHECK_LOCK_RC(x, redlock_lock_acquire(x, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_fencing_token(x) > 0);
    CHECK_LOCK_RC(y, redlock_lock_acquire(y, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(x, redlock_lock_extend(x, 10000), 0);
    CHECK_LOCK_RC(x, redlock_lock_release(x), 0);
    CHECK_LOCK_RC(y, redlock_lock_acquire(y, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(y, redlock_lock_release(y), 0);
    redlock_lock_free(x);
    redlock_lock_free(y);
    redlock_client_free(c);
}

/* The auto-extension keeps the set past its TTL. */
static void test_autoextend(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    char a[64], b[64];
    snprintf(a, sizeof a, "%s", uniq("mx-ae-a"));
    snprintf(b, sizeof b, "%s", uniq("mx-ae-b"));
    const char *names[2] = { a, b };
    redlock_lock *l = multi(c, names, 2), *other = multi(c, names, 2);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 600, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_auto_extend(l, 0, 0, NULL, NULL, NULL), 0);
    msleep(1500);   /* more than two TTLs */
    CHECK(redlock_lock_is_held(l));
    CHECK_LOCK_RC(other, redlock_lock_acquire(other, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK_LOCK_RC(other, redlock_lock_acquire(other, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(other, redlock_lock_release(other), 0);
    redlock_lock_free(l);
    redlock_lock_free(other);
    redlock_client_free(c);
}

/* Many sets on the watchdog with a mutex among them: their rounds go out
 * RL_SINGLES_AT_ONCE (32) at a time after the mutexes' batch, each decided
 * on its own. One set whose second key is deleted on every node is lost;
 * the other 69 sets and the mutex stay held through several intervals. */
#define SETS 70
static atomic_int sets_lost, sets_ext, lost_name_ready;
static char lost_name[256];   /* the first loss's; read once lost_name_ready is set */
static void on_set_lost(redlock_lock *lock, int code, const char *msg, void *userdata)
{
    (void)code; (void)msg; (void)userdata;
    if (atomic_fetch_add(&sets_lost, 1) == 0) {
        snprintf(lost_name, sizeof lost_name, "%s", redlock_lock_resource(lock));
        atomic_store(&lost_name_ready, 1);
    }
}
static void count_set_ext(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_EXTENDED && ev->automatic)
        atomic_fetch_add(&sets_ext, 1);
}

static void test_autoextend_many_sets(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.on_event = count_set_ext;
    redlock_client *c = make_client(t_nurls, &o);
    static redlock_lock *l[SETS];
    static char names[SETS][2][64];
    const char *base = uniq("mx-many");
    for (int k = 0; k < SETS; k++) {
        snprintf(names[k][0], sizeof names[k][0], "%s:%d:a", base, k);
        snprintf(names[k][1], sizeof names[k][1], "%s:%d:b", base, k);
        const char *two[2] = { names[k][0], names[k][1] };
        l[k] = multi(c, two, 2);
        CHECK_LOCK_RC(l[k], redlock_lock_acquire(l[k], 900, REDLOCK_WAIT_NONE), 0);
        CHECK_LOCK_RC(l[k], redlock_lock_auto_extend(l[k], 0, 0, on_set_lost, NULL, NULL), 0);
    }
    redlock_lock *mutex;
    CHECK_RC(redlock_lock_new(&mutex, c, uniq("mx-many-mutex")), 0);
    CHECK_LOCK_RC(mutex, redlock_lock_acquire(mutex, 900, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(mutex, redlock_lock_auto_extend(mutex, 0, 0, NULL, NULL, NULL), 0);
    /* A set's round decided at quorum may leave a SET on its way: delete
     * the key behind the lock's back only once it is on every node. */
    CHECK(key_on_every_node(t_nurls, names[40][1]));
    for (size_t i = 0; i < t_nurls; i++)
        del_on((int)i, names[40][1]);
    CHECK(EVENTUALLY(atomic_load(&lost_name_ready) == 1, 5000, "the set with a deleted key found lost"));
    char want[200];
    snprintf(want, sizeof want, "%s,%s", names[40][0], names[40][1]);
    CHECK(strcmp(lost_name, want) == 0);
    /* The others go on: several extensions each (TTL/3 = 300 ms). */
    int before = atomic_load(&sets_ext);
    CHECK(EVENTUALLY(atomic_load(&sets_ext) - before >= 3 * SETS, 8000, "the other sets extended"));
    int held = 0;
    for (int k = 0; k < SETS; k++)
        held += redlock_lock_is_held(l[k]);
    CHECK(held == SETS - 1);
    CHECK(!redlock_lock_is_held(l[40]));
    CHECK(redlock_lock_is_held(mutex));
    CHECK(atomic_load(&sets_lost) == 1);
    for (int k = 0; k < SETS; k++) {
        if (k != 40)
            CHECK_LOCK_RC(l[k], redlock_lock_release(l[k]), 0);
        redlock_lock_free(l[k]);
    }
    CHECK_LOCK_RC(mutex, redlock_lock_release(mutex), 0);
    redlock_lock_free(mutex);
    redlock_client_free(c);
}

static void test_bad_input(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    redlock_lock *l = (redlock_lock *)1;
    char err[512];
    const char *two[2] = { "x", "x" }, *empty[2] = { "x", "" }, *nul[2] = { "x", NULL };
    CHECK_RC(redlock_lock_open_multi(NULL, c, two, 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_open_multi(&l, NULL, two, 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK(l == NULL);
    CHECK_RC(redlock_lock_open_multi(&l, c, NULL, 2, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_open_multi(&l, c, two, 0, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "empty") != NULL);
    CHECK_RC(redlock_lock_open_multi(&l, c, two, 2, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "twice") != NULL);
    CHECK_RC(redlock_lock_open_multi(&l, c, empty, 2, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "resource 2 of 2") != NULL);
    CHECK_RC(redlock_lock_open_multi(&l, c, nul, 2, err, sizeof err), REDLOCK_EINVAL);
    CHECK(l == NULL);
    /* over the limit */
    static char names[REDLOCK_MAX_MULTI + 1][16];
    const char *many[REDLOCK_MAX_MULTI + 1];
    for (int k = 0; k <= REDLOCK_MAX_MULTI; k++) {
        snprintf(names[k], sizeof names[k], "mx-many-%d", k);
        many[k] = names[k];
    }
    CHECK_RC(redlock_lock_open_multi(&l, c, many, REDLOCK_MAX_MULTI + 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "limit") != NULL);
    CHECK_RC(redlock_lock_new_multi(&l, c, many, REDLOCK_MAX_MULTI + 1), REDLOCK_EINVAL);
    /* the limit itself works, and a one-resource set is a set */
    CHECK_RC(redlock_lock_open_multi(&l, c, many, REDLOCK_MAX_MULTI, err, sizeof err), 0);
    CHECK(err[0] == '\0');
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    CHECK_RC(redlock_lock_new_multi(&l, c, two, 1), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    CHECK_RC(redlock_lock_multi_count(NULL, NULL), REDLOCK_EINVAL);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    run_test("all_or_nothing", test_all_or_nothing);
    run_test("any_order_excludes", test_any_order_excludes);
    run_test("extend_release_lost", test_extend_release_lost);
    run_test("fencing", test_fencing);
    run_test("release_of_any_key_wakes", test_release_of_any_key_wakes);
    run_test("no_deadlock_any_order", test_no_deadlock_any_order);
    run_test("no_deadlock_processes", test_no_deadlock_processes);
    run_test("functions", test_functions);
    run_test("autoextend", test_autoextend);
    run_test("autoextend_many_sets", test_autoextend_many_sets);
    run_test("bad_input", test_bad_input);
    run_test("minority_paused", test_minority_paused);
    return finish_tests();
}
