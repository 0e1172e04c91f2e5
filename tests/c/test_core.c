/* SPDX-License-Identifier: BSD-3-Clause */
/* test_core.c: acquire, contention, extend, release and script-cache
 * recovery against the real nodes the harness started (any count). */
#include "testutil.h"

#include <fcntl.h>

static size_t N;

static void test_acquire_release(void)
{
    redlock_client *c = make_client(N, NULL);
    const char *res = uniq("basic");
    redlock_lock *l = NULL;
    CHECK_RC(redlock_acquire(&l, c, res, 10000), 0);
    CHECK(l != NULL);
    CHECK(redlock_lock_is_held(l));
    CHECK(redlock_lock_validity_ms(l) > 0 && redlock_lock_validity_ms(l) <= 10000);
    CHECK(strcmp(redlock_lock_resource(l), res) == 0);
    /* the key is on every node, holding one value (decided at quorum: the
     * SET to a node not waited for may still be on its way) */
    char key[160], v0[128] = "", v[128];
    snprintf(key, sizeof key, "GET %s", res);
    for (size_t i = 0; i < N; i++) {
        CHECK(EVENTUALLY(ctl(v, sizeof v, "cmd %zu %s", i, key) == 0 && strlen(v) >= 32, 5000, "the key"));
        if (i == 0)
            strcpy(v0, v);
        CHECK(strcmp(v, v0) == 0 && strlen(v0) >= 32);
    }
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(!redlock_lock_is_held(l));
    CHECK(redlock_lock_validity_ms(l) <= 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ESTATE);  /* not held any more */
    redlock_lock_free(l);
    /* freeing the last reference reads the replies still owed: the release
     * has run on every node, also those it was decided without */
    redlock_client_free(c);
    CHECK_RC(keys_on(N), 0);  /* nothing left behind */
}

static void test_values_are_fresh(void)
{
    redlock_client *c = make_client(N, NULL);
    const char *res = uniq("fresh");
    redlock_lock *l;
    char a[128], b[128];
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    /* read where the round was granted: a node it did not wait for may not
     * have the new value yet, or still the previous one */
    CHECK_RC(redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), 0);
    ctl(a, sizeof a, "cmd %d GET %s", granted_node(l), res);
    CHECK_RC(redlock_lock_release(l), 0);
    CHECK_RC(redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), 0);
    ctl(b, sizeof b, "cmd %d GET %s", granted_node(l), res);
    CHECK(strlen(a) >= 32 && strcmp(a, b) != 0);  /* a new random value per acquisition */
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_contention(void)
{
    redlock_client *c1 = make_client(N, NULL), *c2 = make_client(N, NULL);
    const char *res = uniq("contend");
    redlock_lock *a = NULL, *b = NULL;
    CHECK_RC(redlock_try_acquire(&a, c1, res, 10000), 0);
    CHECK_RC(redlock_try_acquire(&b, c2, res, 10000), REDLOCK_ENOTACQUIRED);
    CHECK(b == NULL);
    /* the two-step form carries the detail */
    redlock_lock *h;
    CHECK_RC(redlock_lock_new(&h, c2, res), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, 300), REDLOCK_ETIMEDOUT);
    CHECK(strstr(redlock_lock_errmsg(h), "held by another owner") != NULL);
    CHECK(redlock_lock_errcode(h) == REDLOCK_ETIMEDOUT);
    CHECK_RC(redlock_lock_release(a), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(strcmp(redlock_lock_errmsg(h), "") == 0);
    /* re-acquiring a held handle is an error, not a deadlock */
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, REDLOCK_WAIT_NONE), REDLOCK_ESTATE);
    CHECK_RC(redlock_lock_release(h), 0);
    redlock_lock_free(a);
    redlock_lock_free(h);
    redlock_client_free(c1);
    redlock_client_free(c2);   /* reads the replies still owed: every release has run */
    /* the failed attempts left nothing behind */
    CHECK_RC(keys_on(N), 0);
}

/* Per-lock policy: the client's options until set, checked like them, and
 * used by the next acquisition instead of the client's. */
static void test_lock_options(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.retry_count = 7;
    o.retry_jitter_ms = 10;
    redlock_client *c1 = make_client(N, NULL), *c2 = make_client(N, &o);
    const char *res = uniq("lockopts");
    redlock_lock *a = NULL, *h;
    CHECK_RC(redlock_try_acquire(&a, c1, res, 10000), 0);
    CHECK_RC(redlock_lock_new(&h, c2, res), 0);
    redlock_lock_options lo;
    memset(&lo, 0, sizeof lo);
    CHECK_RC(redlock_lock_get_options(h, &lo), REDLOCK_EINVAL);   /* version unset */
    lo.version = REDLOCK_LOCK_OPTIONS_VERSION;
    CHECK_RC(redlock_lock_get_options(h, &lo), 0);
    CHECK(lo.retry_count == 7 && lo.retry_jitter_ms == 10 && lo.drift_min_ms == 2);
    /* The default wait makes retry_count + 1 attempts: 8 with the client's. */
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, REDLOCK_WAIT_DEFAULT), REDLOCK_ENOTACQUIRED);
    CHECK(strstr(redlock_lock_errmsg(h), "after 8 attempts") != NULL);
    lo.retry_count = 1;
    lo.drift_factor = 0.7;
    CHECK_LOCK_RC(h, redlock_lock_set_options(h, &lo), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(h), "drift_factor") != NULL);
    lo.drift_factor = 0.01;
    CHECK_LOCK_RC(h, redlock_lock_set_options(h, &lo), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, REDLOCK_WAIT_DEFAULT), REDLOCK_ENOTACQUIRED);
    CHECK(strstr(redlock_lock_errmsg(h), "after 2 attempts") != NULL);
    /* A drift allowance that leaves no validity is refused at acquire. */
    lo.drift_min_ms = 60000;
    CHECK_LOCK_RC(h, redlock_lock_set_options(h, &lo), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_set_options(NULL, &lo), REDLOCK_EINVAL);
    CHECK_LOCK_RC(h, redlock_lock_set_options(h, NULL), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_release(a), 0);
    redlock_lock_free(a);
    redlock_lock_free(h);
    redlock_client_free(c1);
    redlock_client_free(c2);   /* reads the replies still owed: every release has run */
    CHECK_RC(keys_on(N), 0);
}

static void test_waiter_gets_lock_after_release(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.retry_delay_ms = 20;
    o.retry_jitter_ms = 20;
    o.retry_count = 200;
    redlock_client *c = make_client(N, &o);
    const char *res = uniq("handover");
    redlock_lock *a, *b;
    CHECK_RC(redlock_try_acquire(&a, c, res, 400), 0);
    /* a is never released: b must get the lock once a's keys expire */
    CHECK_RC(redlock_acquire(&b, c, res, 5000), 0);
    CHECK(redlock_lock_validity_ms(a) <= 0);
    CHECK_RC(redlock_lock_release(a), REDLOCK_ELOST);
    CHECK_RC(redlock_lock_release(b), 0);
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_client_free(c);
}

static void test_extend(void)
{
    redlock_client *c = make_client(N, NULL);
    const char *res = uniq("extend");
    redlock_lock *l;
    char cmd[160];
    CHECK_RC(redlock_try_acquire(&l, c, res, 1000), 0);
    CHECK(redlock_lock_extensions(l) == 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 20000), 0);
    CHECK(redlock_lock_extensions(l) == 1);
    CHECK(redlock_lock_extensions(NULL) == 0);
    CHECK(redlock_lock_validity_ms(l) > 1000);
    snprintf(cmd, sizeof cmd, "PTTL %s", res);
    CHECK(node_int(granted_node(l), cmd) > 10000);   /* a node that confirmed the extension */
    CHECK_RC(redlock_lock_release(l), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 1000), REDLOCK_ESTATE);
    redlock_lock_free(l);

    /* after expiry: fails, and does not re-create the keys */
    CHECK_RC(redlock_try_acquire(&l, c, res, 150), 0);
    CHECK(redlock_lock_extensions(l) == 0);   /* counted per acquisition */
    msleep(400);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 20000), REDLOCK_EEXPIRED);
    CHECK(redlock_lock_extensions(l) == 0);   /* a failed extension is not one */
    snprintf(cmd, sizeof cmd, "EXISTS %s", res);
    for (size_t i = 0; i < N; i++)
        CHECK(node_int((int)i, cmd) == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ELOST);
    redlock_lock_free(l);

    /* keys deleted behind our back (another owner took over): extend says lost */
    CHECK_RC(redlock_try_acquire(&l, c, res, 10000), 0);
    CHECK(key_on_every_node(N, res));   /* our SETs first, then the other owner's DELs */
    for (size_t i = 0; i < N; i++) {
        char del[160];
        snprintf(del, sizeof del, "cmd %zu DEL %s", i, res);
        ctl(NULL, 0, "%s", del);
    }
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), REDLOCK_ELOST);
    CHECK(!redlock_lock_is_held(l));
    for (size_t i = 0; i < N; i++)
        CHECK(node_int((int)i, cmd) == 0);
    CHECK_RC(redlock_lock_release(l), REDLOCK_ELOST);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_extension_bounds(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.max_extensions = 2;
    redlock_client *c = make_client(N, &o);
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq("bound"), 5000), 0);
    CHECK_RC(redlock_lock_extend(l, 5000), 0);
    CHECK_RC(redlock_lock_extend(l, 5000), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 5000), REDLOCK_ELIMIT);
    CHECK(redlock_lock_is_held(l));  /* the lock itself is untouched */
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);

    redlock_options_init(&o);
    o.max_hold_ms = 3000;
    c = make_client(N, &o);
    CHECK_RC(redlock_try_acquire(&l, c, uniq("hold"), 1000), 0);
    CHECK_RC(redlock_lock_extend(l, 2000), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 5000), REDLOCK_ELIMIT);
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_release_expired_is_lost(void)
{
    redlock_client *c = make_client(N, NULL);
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq("expired"), 100), 0);
    msleep(300);
    CHECK(redlock_lock_validity_ms(l) < 0);
    CHECK(!redlock_lock_is_held(l));
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ELOST);
    CHECK(strstr(redlock_lock_errmsg(l), "no longer ours") != NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_script_flush(void)
{
    redlock_client *c = make_client(N, NULL);
    const char *res = uniq("flush");
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, res, 10000), 0);
    CHECK_RC(redlock_lock_extend(l, 10000), 0);  /* scripts now cached */
    for (size_t i = 0; i < N; i++)
        CHECK(ctl(NULL, 0, "cmd %zu SCRIPT FLUSH", i) == 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    for (size_t i = 0; i < N; i++)
        CHECK(ctl(NULL, 0, "cmd %zu SCRIPT FLUSH", i) == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);   /* reads the replies still owed: the release has run everywhere */
    CHECK_RC(keys_on(N), 0);
}

static void test_key_prefix(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.key_prefix = "redlock:";
    redlock_client *c = make_client(N, &o);
    const char *res = uniq("pfx");
    redlock_lock *l;
    char cmd[200];
    CHECK_RC(redlock_try_acquire(&l, c, res, 5000), 0);
    snprintf(cmd, sizeof cmd, "EXISTS redlock:%s", res);
    CHECK(node_int(granted_node(l), cmd) == 1);
    /* a holder outside the library on the same key blocks us */
    CHECK_RC(redlock_lock_release(l), 0);
    for (size_t i = 0; i < N; i++) {
        snprintf(cmd, sizeof cmd, "cmd %zu SET redlock:%s other-owner PX 5000", i, res);
        ctl(NULL, 0, "%s", cmd);
    }
    redlock_lock *m = NULL;
    CHECK_RC(redlock_try_acquire(&m, c, res, 5000), REDLOCK_ENOTACQUIRED);
    snprintf(cmd, sizeof cmd, "GET redlock:%s", res);
    char v[64];
    ctl(v, sizeof v, "cmd 0 %s", cmd);
    CHECK(strncmp(v, "other-owner", 11) == 0);  /* and we did not delete theirs */
    for (size_t i = 0; i < N; i++) {
        snprintf(cmd, sizeof cmd, "cmd %zu DEL redlock:%s", i, res);
        ctl(NULL, 0, "%s", cmd);
    }
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* A client freed while its locks live on: the locks keep working. */
static void test_client_freed_first(void)
{
    redlock_client *c = make_client(N, NULL);
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq("order"), 5000), 0);
    redlock_client_free(c);
    CHECK_RC(redlock_lock_extend(l, 5000), 0);
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
}

/* Node sockets are close-on-exec, and a forked child that goes on using
 * an inherited client gets connections of its own. */
static void test_fork_and_exec(void)
{
    redlock_client *c = make_client(N, NULL);
    redlock_lock *l;
    char fa[128], fb[128], child[128];
    snprintf(fa, sizeof fa, "%s", uniq("fork-a"));
    snprintf(child, sizeof child, "%s", uniq("fork-child"));
    CHECK_RC(redlock_try_acquire(&l, c, fa, 10000), 0);  /* pooled connections now */
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);

    int sockets = 0, cloexec = 0;
    for (int fd = 3; fd < 1024; fd++) {
        char link[64], target[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, "socket:", 7) != 0)
            continue;
        sockets++;
        cloexec += (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
    }
    CHECK(sockets >= (int)N);
    CHECK(cloexec == sockets);

    pid_t pid = fork();
    if (pid == 0) {
        /* the child's own acquire/release on the inherited client */
        redlock_lock *m;
        int ok = redlock_try_acquire(&m, c, child, 10000) == 0 && redlock_lock_release(m) == 0;
        /* Freeing the child's last reference reads what its connections still
         * owe: the release, decided at quorum, reaches every node before
         * _exit, which would otherwise drop it with the child's sockets. */
        redlock_lock_free(m);
        redlock_client_free(c);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* and the parent's pooled connections are intact */
    snprintf(fb, sizeof fb, "%s", uniq("fork-b"));
    CHECK_RC(redlock_try_acquire(&l, c, fb, 10000), 0);
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);   /* reads the replies still owed: every release has run */
    /* This test's keys only: an earlier test's lock that outlived its client
     * (client_freed_first) may still be on a node until its TTL, since the
     * last reference dropped by lock_free does no I/O. */
    const char *const mine[] = { fa, fb, child };
    for (size_t i = 0; i < N; i++)
        for (size_t k = 0; k < 3; k++) {
            char q[300];
            snprintf(q, sizeof q, "EXISTS %s", mine[k]);
            CHECK(node_int((int)i, q) == 0);
        }
}

int main(void)
{
    load_nodes();
    N = t_nurls;
    fprintf(stderr, "nodes: %zu\n", N);
    run_test("acquire_release", test_acquire_release);
    run_test("values_are_fresh", test_values_are_fresh);
    run_test("contention", test_contention);
    run_test("lock_options", test_lock_options);
    run_test("waiter_gets_lock_after_expiry", test_waiter_gets_lock_after_release);
    run_test("extend", test_extend);
    run_test("extension_bounds", test_extension_bounds);
    run_test("release_expired_is_lost", test_release_expired_is_lost);
    run_test("script_flush", test_script_flush);
    run_test("key_prefix", test_key_prefix);
    run_test("client_freed_first", test_client_freed_first);
    run_test("fork_and_exec", test_fork_and_exec);
    return finish_tests();
}
