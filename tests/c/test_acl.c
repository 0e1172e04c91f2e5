/* SPDX-License-Identifier: BSD-3-Clause */
/* test_acl.c: least privilege on real nodes. The minimal ACL rule sets of
 * docs/security.md work and trigger no ACL denial; the FUNCTION library lets
 * a user without EVAL lock; lock values differ across fork(). */
#include "testutil.h"

#include <signal.h>

/* "redis://127.0.0.1:P" -> "redis://USERINFO@127.0.0.1:P" */
static const char *with_auth(size_t i, const char *userinfo)
{
    static char buf[8][256];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 256, "redis://%s@%s", userinfo, t_urls[i] + strlen("redis://"));
    return b;
}

static redlock_client *client_as(const char *userinfo, const char *prefix, uint32_t flags)
{
    const char *urls[3];
    for (size_t i = 0; i < 3; i++)
        urls[i] = userinfo ? with_auth(i, userinfo) : t_urls[i];
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.retry_count = 0;
    o.key_prefix = prefix;
    o.flags = flags;
    redlock_client *c = NULL;
    char err[512];
    int rc = redlock_client_open(&c, urls, 3, &o, err, sizeof err);
    if (rc)
        fprintf(stderr, "client_open: %s\n", err);
    CHECK_RC(rc, 0);
    return c;
}

static void all_nodes(const char *command)
{
    for (size_t i = 0; i < 3; i++)
        CHECK(ctl(NULL, 0, "cmd %zu %s", i, command) == 0);
}

/* 1 if no node logged an ACL denial since the last ACL LOG RESET. */
static int acl_log_empty(void)
{
    int empty = 1;
    for (size_t i = 0; i < 3; i++) {
        char out[2048] = "x";
        if (ctl(out, sizeof out, "cmd %zu ACL LOG", i) != 0 || out[0] != '\0') {
            fprintf(stderr, "node %zu ACL LOG: %.300s\n", i, out);
            empty = 0;
        }
    }
    return empty;
}

/* acquire, extend, release, acquire again (pooled connections), release */
static void lock_cycle(redlock_client *c, const char *base)
{
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq(base)), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
}

/* EVAL mode: SET, EVALSHA, EVAL, the scripts' GET/DEL/PEXPIRE, on the lock keys only.
 * No SCRIPT: the library never sends SCRIPT LOAD, so nothing is denied. */
static void test_eval_mode_minimal(void)
{
    all_nodes("ACL SETUSER evaluser reset on '>Eval-pw-1' '~lock:*' +set +get +del +pexpire +eval +evalsha +ping");
    all_nodes("ACL LOG RESET");
    redlock_client *c = client_as("evaluser:Eval-pw-1", "lock:", 0);
    lock_cycle(c, "eval");
    /* script cache flushed under a held lock: EVALSHA, NOSCRIPT, EVAL */
    redlock_client *fc = client_as("evaluser:Eval-pw-1", "lock:", 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, fc, uniq("eval-flush")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    all_nodes("SCRIPT FLUSH");
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    all_nodes("SCRIPT FLUSH");
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    /* The release was decided at quorum: on a node it did not wait for, its
     * EVALSHA meets NOSCRIPT late, and is sent again as EVAL only when the
     * client next reads that connection. Freeing the client reads what its
     * connections still owe, so every release has run before the check. */
    redlock_client_free(fc);
    CHECK(keys_on(3) == 0);
    CHECK(acl_log_empty());

    /* outside the key pattern: a clean NOPERM, a refusal (REDLOCK_EPERM) */
    redlock_client *other = client_as("evaluser:Eval-pw-1", "other:", 0);
    CHECK_RC(redlock_lock_new(&l, other, uniq("eval-key")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), REDLOCK_EPERM);
    CHECK(strstr(redlock_lock_errmsg(l), "NOPERM") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "Eval-pw-1") == NULL);
    CHECK(!redlock_lock_is_held(l));
    redlock_lock_free(l);
    redlock_client_free(other);
    redlock_client_free(c);
}

static void test_function_mode(void)
{
    char err[1024];
    /* loading needs FUNCTION LOAD: a lock user cannot, and the error says so per node */
    all_nodes("ACL SETUSER fnuser reset on '>Fn-pw-2' '~lock:*' +fcall +set +get +del +pexpire +ping");
    redlock_client *c = client_as("fnuser:Fn-pw-2", "lock:", REDLOCK_OPT_FUNCTIONS);
    CHECK_RC(redlock_client_load_functions(c, err, sizeof err), REDLOCK_EPERM);
    CHECK(strstr(err, "0 of 3") != NULL && strstr(err, "NOPERM") != NULL && strstr(err, "Fn-pw-2") == NULL);
    CHECK(strstr(err, "fnuser:***@") != NULL);

    /* the administrator (the nodes' default user here) loads it, twice: REPLACE */
    redlock_client *admin = client_as(NULL, NULL, 0);
    CHECK_RC(redlock_client_load_functions(admin, err, sizeof err), 0);
    CHECK_RC(redlock_client_load_functions(admin, err, sizeof err), 0);
    char out[16384];   /* the library lists every function, the semaphore's and read-write lock's too */
    CHECK(ctl(out, sizeof out, "cmd 1 FUNCTION LIST LIBRARYNAME redlock") == 0 && strstr(out, "redlock_release"));
    CHECK(strstr(out, "redlock_elect") && strstr(out, "redlock_rw_acquire") && strstr(out, "redlock_sem_acquire"));

    /* FCALL, no EVAL permission: works, and nothing is denied */
    all_nodes("ACL LOG RESET");
    lock_cycle(c, "fcall");
    redlock_client *rival = client_as("fnuser:Fn-pw-2", "lock:", REDLOCK_OPT_FUNCTIONS);
    redlock_lock *l, *m;
    const char *res = uniq("fcall-contended");
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_RC(redlock_lock_new(&m, rival, res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(m, redlock_lock_extend(m, 10000), REDLOCK_ESTATE);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(m, redlock_lock_release(m), 0);
    redlock_lock_free(l);
    redlock_lock_free(m);
    redlock_client_free(rival);
    /* c's rounds were decided at quorum: their last commands may still be on their way */
    CHECK(EVENTUALLY(keys_on(3) == 0, 5000, "no key left"));
    CHECK(acl_log_empty());

    /* the same user in EVAL mode: SET would work, but the scripts that
     * release and extend are refused with NOPERM. The client finds out on
     * connecting, before its SET can take a lock it could not release. */
    redlock_client *evalc = client_as("fnuser:Fn-pw-2", "lock:", 0);
    CHECK_RC(redlock_lock_new(&l, evalc, uniq("fn-user-eval")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), REDLOCK_EPERM);
    CHECK(strstr(redlock_lock_errmsg(l), "NOPERM") != NULL && strstr(redlock_lock_errmsg(l), "evalsha") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "Fn-pw-2") == NULL);
    CHECK(!redlock_lock_is_held(l));
    CHECK(keys_on(3) == 0);
    /* a wait ends at once too: refused on every node, not held elsewhere */
    double t0 = now_ms();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, 5000), REDLOCK_EPERM);
    CHECK(now_ms() - t0 < 1000);
    redlock_lock_free(l);
    redlock_client_free(evalc);
    all_nodes("FLUSHALL");

    /* FCALL alone is not enough: the function's own GET/DEL/PEXPIRE are checked too */
    all_nodes("ACL SETUSER fcallonly reset on '>Fn-pw-3' '~lock:*' +fcall +set +ping");
    redlock_client *bare = client_as("fcallonly:Fn-pw-3", "lock:", REDLOCK_OPT_FUNCTIONS);
    CHECK_RC(redlock_lock_new(&l, bare, uniq("fcall-only")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), REDLOCK_EPERM);
    CHECK(strstr(redlock_lock_errmsg(l), "script") != NULL);
    CHECK(!redlock_lock_is_held(l));
    CHECK(keys_on(3) == 0);   /* found out before its SET: nothing it could not release */
    redlock_lock_free(l);
    redlock_client_free(bare);
    all_nodes("FLUSHALL");

    /* the library missing (a node lost it): a hint, not a false release */
    all_nodes("FUNCTION FLUSH");
    CHECK_RC(redlock_lock_new(&l, c, uniq("fn-missing")), 0);
    /* the quarantine's check behind the SET is a function too: found out on acquiring */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), REDLOCK_ESERVER);
    CHECK(strstr(redlock_lock_errmsg(l), "redlock_client_load_functions") != NULL);
    CHECK(!redlock_lock_is_held(l));
    redlock_lock_free(l);
    /* without the quarantine, found out on releasing */
    redlock_client *noq = client_as("fnuser:Fn-pw-2", "lock:", REDLOCK_OPT_FUNCTIONS | REDLOCK_OPT_NO_QUARANTINE);
    CHECK_RC(redlock_lock_new(&l, noq, uniq("fn-missing")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ESERVER);
    CHECK(strstr(redlock_lock_errmsg(l), "redlock_client_load_functions") != NULL);
    redlock_lock_free(l);
    redlock_client_free(noq);
    all_nodes("FLUSHALL");
    CHECK_RC(redlock_client_load_functions(admin, err, sizeof err), 0);
    lock_cycle(c, "fcall-reloaded");
    redlock_client_free(admin);
    redlock_client_free(c);
}

/* The value of a held lock, read from node i ("" if none). */
static void value_on(int i, const char *key, char *out, size_t size)
{
    if (ctl(out, size, "cmd %d GET %s", i, key) != 0)
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

/* Lock values come from the kernel at every acquisition: processes forked
 * from one parent never share them (a user-space generator seeded once would). */
static void test_values_across_fork(void)
{
    enum { KIDS = 3 };
    redlock_client *c = client_as(NULL, "fork:", 0);
    redlock_lock *l;
    char parent_res[64];
    snprintf(parent_res, sizeof parent_res, "%s", uniq("parent"));
    CHECK_RC(redlock_lock_new(&l, c, parent_res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);

    char kid_res[KIDS][64];
    pid_t pids[KIDS];
    for (int k = 0; k < KIDS; k++) {
        snprintf(kid_res[k], sizeof kid_res[k], "%s", uniq("child"));
        fflush(NULL);
        pids[k] = fork();
        if (pids[k] == 0) {
            /* The child makes its own client (an inherited one shares the
             * parent's sockets, docs/threading.md) and leaves its lock held. */
            redlock_client *mine = client_as(NULL, "fork:", 0);
            redlock_lock *kl;
            int rc = redlock_lock_new(&kl, mine, kid_res[k]);
            if (rc == 0)
                rc = redlock_lock_acquire(kl, 30000, REDLOCK_WAIT_NONE);
            _exit(rc == 0 ? 0 : 1);
        }
    }
    for (int k = 0; k < KIDS; k++) {
        int st = 0;
        CHECK(waitpid(pids[k], &st, 0) == pids[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    char vals[KIDS + 1][128], key[256];
    snprintf(key, sizeof key, "fork:%s", parent_res);
    value_on(0, key, vals[0], sizeof vals[0]);
    for (int k = 0; k < KIDS; k++) {
        snprintf(key, sizeof key, "fork:%s", kid_res[k]);
        value_on(0, key, vals[k + 1], sizeof vals[k + 1]);
        char again[128];
        value_on(2, key, again, sizeof again);
        CHECK(strcmp(again, vals[k + 1]) == 0);  /* one value per acquisition, on every node */
    }
    for (int a = 0; a <= KIDS; a++) {
        /* the mark 'w' (the holder's release wakes waiters), then 20 random bytes in hex */
        CHECK(strlen(vals[a]) == 41 && vals[a][0] == 'w' && strspn(vals[a] + 1, "0123456789abcdef") == 40);
        for (int b = a + 1; b <= KIDS; b++)
            CHECK(strcmp(vals[a], vals[b]) != 0);
    }
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
    all_nodes("FLUSHALL");
}

/* rediss:// to a plain-text port: the handshake never completes, and the
 * credentials, queued behind it, never leave in clear text (a plain AUTH
 * with an unknown user would be in the ACL LOG). */
static void test_tls_to_plain_port_sends_nothing(void)
{
    all_nodes("ACL LOG RESET");
    const char *urls[3];
    char buf[3][256];
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf[i], sizeof buf[i], "rediss://leaktest:Plain-S3cret@%s", t_urls[i] + strlen("redis://"));
        urls[i] = buf[i];
    }
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 200;
    o.connect_timeout_ms = 100;
    o.tls_insecure_skip_verify = 1;  /* even so */
    redlock_client *c = NULL;
    CHECK_RC(redlock_client_open(&c, urls, 3, &o, NULL, 0), 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("tls-to-plain")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(strstr(redlock_lock_errmsg(l), "TLS handshake not finished") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "Plain-S3cret") == NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
    CHECK(acl_log_empty());
    CHECK(keys_on(3) == 0);
}

int main(void)
{
    /* SIGPIPE is left at its default: the library must not raise it. */
    load_nodes();
    if (t_nurls != 3 || strncmp(t_urls[0], "redis://", 8) != 0) {
        fprintf(stderr, "test_acl needs 3 TCP nodes (nodes.py exec --count 3)\n");
        return 2;
    }
    run_test("values_across_fork", test_values_across_fork);
    run_test("eval_mode_minimal", test_eval_mode_minimal);
    run_test("function_mode", test_function_mode);
    run_test("tls_to_plain_port_sends_nothing", test_tls_to_plain_port_sends_nothing);
    return finish_tests();
}
