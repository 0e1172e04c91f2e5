/* SPDX-License-Identifier: BSD-3-Clause */
/* test_errors.c: server-decided failures on real nodes (NOPERM, READONLY,
 * OOM, wrong password, unreachable nodes): a specific code, a message naming
 * the cause, no secret in it, and never a false "acquired". */
#include "testutil.h"

/* "redis://127.0.0.1:P" -> "redis://USERINFO@127.0.0.1:P" */
static char *with_auth(const char *url, const char *userinfo)
{
    static char buf[3][256];
    static int k;
    char *b = buf[k++ % 3];
    snprintf(b, 256, "redis://%s@%s", userinfo, url + strlen("redis://"));
    return b;
}

static redlock_client *client_for(const char *const *urls, size_t n)
{
    redlock_client *c = NULL;
    char err[512];
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;  /* a loaded machine is not what this tests */
    int rc = redlock_client_open(&c, urls, n, &o, err, sizeof err);
    if (rc)
        fprintf(stderr, "client_open: %s\n", err);
    return c;
}

static void all_nodes(const char *fmt, const char *arg)
{
    for (size_t i = 0; i < 3; i++) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, fmt, arg);
        CHECK(ctl(NULL, 0, "cmd %zu %s", i, cmd) == 0);
    }
}

static void test_noperm_and_auth(void)
{
    all_nodes("ACL SETUSER locker on '>s3cret-pw' '~*' +@all -set", "");
    const char *urls[3];
    for (int i = 0; i < 3; i++)
        urls[i] = with_auth(t_urls[i], "locker:s3cret-pw");
    redlock_client *c = client_for(urls, 3);
    CHECK(c != NULL);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("noperm")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_EPERM);
    CHECK(strstr(redlock_lock_errmsg(l), "NOPERM") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "'set'") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "s3cret-pw") == NULL);
    CHECK(!redlock_lock_is_held(l));
    redlock_lock_free(l);
    redlock_client_free(c);

    /* the same user with SET allowed on one node only: still no quorum of 3 */
    CHECK(ctl(NULL, 0, "cmd 0 ACL SETUSER locker +set") == 0);
    c = client_for(urls, 3);
    CHECK_RC(redlock_lock_new(&l, c, uniq("noperm2")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), REDLOCK_EPERM);
    /* node 0's key was released, by a clean-up that waits for no reply:
     * wait for its effect, well within the TTL */
    CHECK(EVENTUALLY(keys_on(3) == 0, 15000, "the clean-up on node 0"));
    redlock_lock_free(l);
    /* allowed on two of three: acquired */
    CHECK(ctl(NULL, 0, "cmd 1 ACL SETUSER locker +set") == 0);
    CHECK_RC(redlock_lock_new(&l, c, uniq("noperm3")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);

    /* wrong password: EAUTH, and the password is not in the message */
    for (int i = 0; i < 3; i++)
        urls[i] = with_auth(t_urls[i], "locker:wrong-pw-123");
    c = client_for(urls, 3);
    CHECK_RC(redlock_lock_new(&l, c, uniq("wrongpw")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_EAUTH);
    CHECK(strstr(redlock_lock_errmsg(l), "wrong-pw-123") == NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "***") != NULL);  /* URLs shown masked */
    redlock_lock_free(l);
    redlock_client_free(c);

    /* password-only form against requirepass */
    all_nodes("CONFIG SET requirepass %s", "only-pw");
    for (int i = 0; i < 3; i++)
        urls[i] = with_auth(t_urls[i], ":only-pw");
    c = client_for(urls, 3);
    CHECK_RC(redlock_lock_new(&l, c, uniq("pwonly")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
    /* no password while one is required: NOAUTH is an auth failure */
    c = client_for((const char *const *)t_urls, 3);
    CHECK_RC(redlock_lock_new(&l, c, uniq("noauth")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_EAUTH);
    CHECK(strstr(redlock_lock_errmsg(l), "NOAUTH") != NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* A password sent to a server that has none fails AUTH, but the SET that
 * follows in the pipeline still runs: the failed attempt must clean it up. */
static void test_auth_failure_leaves_no_key(void)
{
    const char *urls[3];
    for (int i = 0; i < 3; i++)
        urls[i] = with_auth(t_urls[i], ":no-such-password");
    redlock_client *c = client_for(urls, 3);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("authleak")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 60000, REDLOCK_WAIT_NONE), REDLOCK_EAUTH);
    /* the cleanup is not waited for: wait for its effect, well within the 60 s TTL */
    CHECK(EVENTUALLY(keys_on(3) == 0, 20000, "the clean-up of the pipelined SETs"));
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_readonly_and_oom(void)
{
    redlock_client *c = client_for((const char *const *)t_urls, 3);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("ro")), 0);
    /* a replica of a master that doesn't exist refuses writes */
    all_nodes("REPLICAOF 127.0.0.1 %s", "1");
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_ESERVER);
    CHECK(strstr(redlock_lock_errmsg(l), "READONLY") != NULL);
    all_nodes("REPLICAOF NO ONE%s", "");
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), 0);
    /* out of memory under noeviction: SET refused; release still works */
    all_nodes("CONFIG SET maxmemory %s", "1");
    redlock_lock *m;
    CHECK_RC(redlock_lock_new(&m, c, uniq("oom")), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 5000, REDLOCK_WAIT_NONE), REDLOCK_ESERVER);
    CHECK(strstr(redlock_lock_errmsg(m), "OOM") != NULL);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    all_nodes("CONFIG SET maxmemory %s", "0");
    redlock_lock_free(l);
    redlock_lock_free(m);
    redlock_client_free(c);
}

static void test_unreachable(void)
{
    /* nothing listens on port 1, and the socket path doesn't exist */
    const char *urls[] = { "redis://127.0.0.1:1", "unix:///nonexistent/redlock-test.sock", t_urls[0] };
    redlock_client *c = client_for(urls, 3);
    CHECK(c != NULL);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("unreach")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(strstr(redlock_lock_errmsg(l), "127.0.0.1:1") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "nonexistent") != NULL);
    /* right after a failed connect the node is in backoff, and says so */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(strstr(redlock_lock_errmsg(l), "reconnect") != NULL || strstr(redlock_lock_errmsg(l), "refused") != NULL);
    /* the real node's grant is cleaned up without waiting for the reply:
     * wait for the effect, well within the TTL */
    CHECK(EVENTUALLY(keys_on(1) == 0, 15000, "the clean-up on the real node"));
    redlock_lock_free(l);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    if (t_nurls != 3) {
        fprintf(stderr, "test_errors needs 3 nodes\n");
        return 2;
    }
    run_test("auth_failure_leaves_no_key", test_auth_failure_leaves_no_key);
    run_test("readonly_and_oom", test_readonly_and_oom);
    run_test("unreachable", test_unreachable);
    run_test("noperm_and_auth", test_noperm_and_auth);  /* last: leaves requirepass set */
    return finish_tests();
}
