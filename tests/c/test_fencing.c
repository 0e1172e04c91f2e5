/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fencing.c: fencing tokens (REDLOCK_OPT_FENCING, docs/fencing.md) on
 * real nodes: strictly increasing across acquisitions and clients, across a
 * node restart, 0 when not held or not enabled, through FCALL, and a broken
 * counter is an error, never a false "acquired". */
#include "testutil.h"

static redlock_client *fencing_client(uint32_t extra_flags)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_FENCING | extra_flags;
    return make_client(t_nurls, &o);
}

static uint64_t acquire_token(redlock_client *c, const char *res, redlock_lock **out)
{
    redlock_lock *l = NULL;
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, 5000), 0);
    uint64_t t = redlock_lock_fencing_token(l);
    *out = l;
    return t;
}

static void test_increasing(void)
{
    redlock_client *a = fencing_client(0), *b = fencing_client(0);
    const char *res = uniq("fence");
    uint64_t last = 0;
    for (int i = 0; i < 20; i++) {
        redlock_lock *l;
        uint64_t t = acquire_token(i % 2 ? a : b, res, &l);
        CHECK(t > last);
        if (t <= last)
            fprintf(stderr, "  token %llu after %llu\n", (unsigned long long)t, (unsigned long long)last);
        last = t;
        CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
        CHECK(redlock_lock_fencing_token(l) == 0);  /* not held any more */
        redlock_lock_free(l);
    }
    CHECK(last >= 20);
    redlock_client_free(a);
    redlock_client_free(b);
}

static void test_disabled_and_names(void)
{
    redlock_client *plain = make_client(t_nurls, NULL);
    redlock_lock *l;
    const char *res = uniq("plain");
    CHECK_RC(redlock_acquire(&l, plain, res, 10000), 0);
    CHECK(redlock_lock_fencing_token(l) == 0);
    char ex[160];
    snprintf(ex, sizeof ex, "EXISTS %s:fencing", res);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(node_int((int)i, ex) == 0);  /* no counter without fencing */
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(plain);

    redlock_client *c = fencing_client(0);
    CHECK(redlock_lock_fencing_token(NULL) == 0);
    /* the counter's own key name is refused as a resource */
    CHECK_RC(redlock_lock_new(&l, c, "jobs:fencing"), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new(&l, c, "jobs:fencing2"), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* A node restarted empty (no persistence) loses its counter; the others
 * still hold the highest token, and every majority includes one of them. */
static void test_minority_restart(void)
{
    redlock_client *c = fencing_client(0);
    const char *res = uniq("restart");
    redlock_lock *l;
    uint64_t before = acquire_token(c, res, &l);
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    CHECK(ctl(NULL, 0, "kill 0") == 0);
    CHECK(ctl(NULL, 0, "restart 0") == 0);
    for (int i = 0; i < 5; i++) {
        uint64_t t = acquire_token(c, res, &l);
        CHECK(t > before);
        before = t;
        CHECK_RC(redlock_lock_release(l), 0);
        redlock_lock_free(l);
    }
    redlock_client_free(c);
}

/* A counter that is not a number: the node is an error, the attempt fails
 * and cleans up its key, nothing is "acquired". */
static void test_broken_counter(void)
{
    redlock_client *c = fencing_client(0);
    const char *res = uniq("broken");
    char cmd[256];
    for (size_t i = 0; i < t_nurls; i++) {
        snprintf(cmd, sizeof cmd, "cmd %zu SET %s:fencing notanumber", i, res);
        CHECK(ctl(NULL, 0, "%s", cmd) == 0);
    }
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), REDLOCK_ESERVER);
    CHECK(strstr(redlock_lock_errmsg(l), "not a number") != NULL);
    CHECK(!redlock_lock_is_held(l) && redlock_lock_fencing_token(l) == 0);
    char ex[128];
    snprintf(ex, sizeof ex, "EXISTS %s", res);
    /* the clean-up release ran: it waits for no reply, so wait for its
     * effect, well within the key's 10 s TTL */
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(node_int((int)i, ex) == 0, 5000, "the clean-up release"));
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* With REDLOCK_OPT_FUNCTIONS the two fencing steps go through FCALL. */
static void test_functions(void)
{
    redlock_client *c = fencing_client(REDLOCK_OPT_FUNCTIONS);
    char err[1024];
    int rc = redlock_client_load_functions(c, err, sizeof err);
    CHECK_RC(rc, 0);
    if (rc)
        fprintf(stderr, "  load_functions: %s\n", err);
    const char *res = uniq("fcall");
    redlock_lock *l;
    uint64_t t1 = acquire_token(c, res, &l);
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    uint64_t t2 = acquire_token(c, res, &l);
    CHECK(t1 >= 1 && t2 > t1);
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    run_test("increasing", test_increasing);
    run_test("disabled_and_names", test_disabled_and_names);
    run_test("broken_counter", test_broken_counter);
    run_test("functions", test_functions);
    run_test("minority_restart", test_minority_restart);
    return finish_tests();
}
