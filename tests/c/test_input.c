/* SPDX-License-Identifier: BSD-3-Clause */
/* test_input.c: every bad input gets a specific code and message, and
 * nothing crashes or leaks. Needs no running node: nothing here connects. */
#include "testutil.h"

static int open1(const char *url, char *err, size_t n)
{
    redlock_client *c = (redlock_client *)0x1;
    const char *urls[] = { url };
    int rc = redlock_client_open(&c, urls, 1, NULL, err, n);
    if (rc == 0)
        redlock_client_free(c);
    else if (c != NULL)
        return 999;  /* *out must be NULL on failure */
    return rc;
}

static void expect_url(const char *url, int want, const char *needle)
{
    char err[512] = "";
    int rc = open1(url, err, sizeof err);
    t_checks++;
    if (rc != want || (needle && !strstr(err, needle))) {
        t_failures++;
        fprintf(stderr, "FAIL url '%.60s': got %s '%s', want %s containing '%s'\n", url,
                redlock_error_name(rc), err, redlock_error_name(want), needle ? needle : "");
    }
}

static void test_urls(void)
{
    expect_url("redis://127.0.0.1:6379", 0, NULL);
    expect_url("redis://localhost", 0, NULL);
    expect_url("redis://[::1]:6380/2", 0, NULL);
    expect_url("redis://user:p%40ss@host:1/0", 0, NULL);
    expect_url("redis://:pw@host", 0, NULL);
    expect_url("unix:///tmp/x.sock", 0, NULL);
    expect_url("unix:///tmp/x.sock?db=3", 0, NULL);
    expect_url("unix://:pw@/tmp/x.sock", 0, NULL);
    expect_url("REDIS://HOST:1", 0, NULL);

    expect_url("", REDLOCK_EINVAL, "empty");
    expect_url("http://host", REDLOCK_EINVAL, "scheme");
    expect_url("host:6379", REDLOCK_EINVAL, "scheme");
    expect_url("rediss://host", 0, NULL);
    expect_url("rediss://user:pw@[::1]:6380/1", 0, NULL);
    expect_url("rediss://host:abc", REDLOCK_EINVAL, "port is not a number");
    expect_url("redis://", REDLOCK_EINVAL, "empty host");
    expect_url("redis://:6379", REDLOCK_EINVAL, "empty host");
    expect_url("redis://host:abc", REDLOCK_EINVAL, "port is not a number");
    expect_url("redis://host:", REDLOCK_EINVAL, "port");
    expect_url("redis://host:0", REDLOCK_EINVAL, "port out of range");
    expect_url("redis://host:70000", REDLOCK_EINVAL, "port out of range");
    expect_url("redis://host:99999999999", REDLOCK_EINVAL, "port");
    expect_url("redis://[::1", REDLOCK_EINVAL, "IPv6");
    expect_url("redis://[::1]x", REDLOCK_EINVAL, "after ]");
    expect_url("redis://host/abc", REDLOCK_EINVAL, "database");
    expect_url("redis://host/1?x=1", REDLOCK_EINVAL, "query");
    expect_url("redis://ho st", REDLOCK_EINVAL, "whitespace");
    expect_url("redis://ho$t", REDLOCK_EINVAL, "host");
    expect_url("redis://user@host", REDLOCK_EINVAL, "password");
    expect_url("redis://user:@host", REDLOCK_EINVAL, "empty password");
    expect_url("redis://u:%zz@host", REDLOCK_EINVAL, "percent");
    expect_url("redis://u:%00@host", REDLOCK_EINVAL, "percent");
    expect_url("unix://", REDLOCK_EINVAL, "path");
    expect_url("unix:///", REDLOCK_EINVAL, "empty");
    expect_url("unix:///tmp/x.sock?x=1", REDLOCK_EINVAL, "db=N");

    char huge[6000];
    memset(huge, 'a', sizeof huge);
    memcpy(huge, "redis://", 8);
    huge[sizeof huge - 1] = '\0';
    expect_url(huge, REDLOCK_EINVAL, "too long");
    char longpath[300] = "unix:///";
    memset(longpath + 8, 'p', 250);
    longpath[258] = '\0';
    expect_url(longpath, REDLOCK_EINVAL, "too long");

    /* a password in a malformed URL is not echoed back */
    char err[512];
    CHECK_RC(open1("redis://u:hunter2@host:bad", err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "hunter2") == NULL && strstr(err, "***") != NULL);

    /* a Redis or Valkey Cluster as one node (issue #29) */
    expect_url("redis-cluster://127.0.0.1:7000", 0, NULL);
    expect_url("redis-cluster://u:pw@h1:7000?seed=h2:7001&seed=[::1]:7002", 0, NULL);
    expect_url("rediss-cluster://h1:7000?seed=h2:7001", 0, NULL);
    expect_url("REDIS-CLUSTER://h1", 0, NULL);
    expect_url("redis-cluster://h1:7000/0", 0, NULL);
    expect_url("redis-cluster://h1:7000/3", REDLOCK_EINVAL, "only database 0");
    expect_url("redis-cluster://", REDLOCK_EINVAL, "empty host");
    expect_url("redis-cluster://h1:7000?", REDLOCK_EINVAL, "empty query");
    expect_url("redis-cluster://h1:7000?seed=", REDLOCK_EINVAL, "empty seed");
    expect_url("redis-cluster://h1:7000?seed=h2:7001&", REDLOCK_EINVAL, "trailing");
    expect_url("redis-cluster://h1:7000?db=1", REDLOCK_EINVAL, "seed=host:port");
    expect_url("redis-cluster://h1:7000?seed=h2:x", REDLOCK_EINVAL, "bad seed: port is not a number");
    expect_url("redis-cluster://h1:7000?seed=h2:0", REDLOCK_EINVAL, "port out of range");
    expect_url("redis-cluster://h1:7000?seed=u:p@h2:1", REDLOCK_EINVAL, "host:port only");
    expect_url("redis-cluster://h1:7000?seed=h2:1/2", REDLOCK_EINVAL, "host:port only");
    expect_url("redis-cluster://h1:7000#x", REDLOCK_EINVAL, "fragment");
    expect_url("redis-cluster://h$:7000", REDLOCK_EINVAL, "host");
    expect_url("redis-clusters://h1:7000", REDLOCK_EINVAL, "scheme");
    {
        char many[2048] = "redis-cluster://h:1?";
        for (int k = 0; k < 70; k++)
            strcat(many, k ? "&seed=h:2" : "seed=h:2");
        expect_url(many, REDLOCK_EINVAL, "too many seeds");
    }
    /* the same seed twice is the same server */
    {
        const char *two[] = { "redis-cluster://127.0.0.1:7000", "redis://127.0.0.1:7000" };
        redlock_client *c2 = NULL;
        CHECK_RC(redlock_client_open(&c2, two, 2, NULL, err, sizeof err), REDLOCK_EINVAL);
        CHECK(strstr(err, "same server") != NULL);
    }
    /* a password in a cluster URL stays hidden, the seeds are shown */
    CHECK_RC(open1("redis-cluster://u:hunter2@h1:7000?seed=h2:x", err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "hunter2") == NULL && strstr(err, "***") != NULL);
}

static void test_client_args(void)
{
    redlock_client *c = NULL;
    char err[512];
    const char *one[] = { "redis://127.0.0.1:1" };
    CHECK_RC(redlock_client_open(NULL, one, 1, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_client_open(&c, NULL, 1, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_client_open(&c, one, 0, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "no nodes") != NULL);
    CHECK_RC(redlock_client_new(&c, one, 65, NULL), REDLOCK_EINVAL);
    const char *withnull[] = { "redis://127.0.0.1:1", NULL };
    CHECK_RC(redlock_client_open(&c, withnull, 2, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "node 1") != NULL && strstr(err, "NULL") != NULL);
    CHECK(c == NULL);
    /* errbuf may be NULL or tiny */
    CHECK_RC(redlock_client_open(&c, withnull, 2, NULL, NULL, 0), REDLOCK_EINVAL);
    CHECK_RC(redlock_client_open(&c, withnull, 2, NULL, err, 4), REDLOCK_EINVAL);
    CHECK(strlen(err) == 3);

    /* duplicates, after resolving names */
    const char *dup1[] = { "redis://127.0.0.1:7000", "redis://127.0.0.1:7000" };
    const char *dup2[] = { "redis://127.0.0.1:7000", "redis://localhost:7000/3" };
    const char *dup3[] = { "unix:///tmp/a.sock", "unix:///tmp/../tmp/a.sock" };
    const char *dup4[] = { "redis://[::1]:7000", "redis://[0:0:0:0:0:0:0:1]:7000" };
    const char *nodup[] = { "redis://127.0.0.1:7000", "redis://127.0.0.1:7001", "unix:///tmp/a.sock" };
    CHECK_RC(redlock_client_open(&c, dup1, 2, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "same server") != NULL);
    CHECK_RC(redlock_client_open(&c, dup2, 2, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_client_open(&c, dup4, 2, NULL, err, sizeof err), REDLOCK_EINVAL);
    FILE *f = fopen("/tmp/a.sock", "a");  /* realpath needs the file */
    if (f)
        fclose(f);
    CHECK_RC(redlock_client_open(&c, dup3, 2, NULL, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_client_open(&c, nodup, 3, NULL, err, sizeof err), 0);
    CHECK(redlock_client_node_count(c) == 3);
    redlock_client_free(c);
    redlock_client_free(NULL);

    /* options */
    redlock_options o;
    redlock_options_init(&o);
    redlock_options init = REDLOCK_OPTIONS_INIT;
    /* field by field: padding bytes of an initialised local are unspecified */
    CHECK(o.version == init.version && o.retry_count == init.retry_count && o.retry_delay_ms == init.retry_delay_ms &&
          o.retry_jitter_ms == init.retry_jitter_ms && o.wait_ms == init.wait_ms &&
          o.drift_factor == init.drift_factor && o.drift_min_ms == init.drift_min_ms &&
          o.node_timeout_ms == init.node_timeout_ms && o.connect_timeout_ms == init.connect_timeout_ms &&
          o.key_prefix == init.key_prefix && o.max_extensions == init.max_extensions &&
          o.max_hold_ms == init.max_hold_ms && o.flags == init.flags && o.tls_ca_file == init.tls_ca_file &&
          o.tls_ca_dir == init.tls_ca_dir && o.tls_cert_file == init.tls_cert_file &&
          o.tls_key_file == init.tls_key_file && o.tls_server_name == init.tls_server_name &&
          o.tls_insecure_skip_verify == init.tls_insecure_skip_verify);
    CHECK(o.version == REDLOCK_OPTIONS_VERSION && o.retry_count == 3 && o.retry_jitter_ms == 200);
    o.version = 0;
    CHECK_RC(redlock_client_open(&c, one, 1, &o, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "redlock_options_init") != NULL);
    redlock_options_init(&o);
    o.drift_factor = 0.9;
    CHECK_RC(redlock_client_open(&c, one, 1, &o, err, sizeof err), REDLOCK_EINVAL);
    o.drift_factor = 0.0 / 0.0;
    CHECK_RC(redlock_client_open(&c, one, 1, &o, err, sizeof err), REDLOCK_EINVAL);
    redlock_options_init(&o);
    o.node_timeout_ms = 0;
    CHECK_RC(redlock_client_open(&c, one, 1, &o, err, sizeof err), REDLOCK_EINVAL);
    redlock_options_init(&o);
    o.flags = 0x80;
    CHECK_RC(redlock_client_open(&c, one, 1, &o, err, sizeof err), REDLOCK_EINVAL);
    redlock_options_init(&o);
    char prefix[2000];
    memset(prefix, 'p', sizeof prefix - 1);
    prefix[sizeof prefix - 1] = '\0';
    o.key_prefix = prefix;
    CHECK_RC(redlock_client_open(&c, one, 1, &o, err, sizeof err), REDLOCK_EINVAL);
}

static void test_lock_args(void)
{
    const char *one[] = { "redis://127.0.0.1:1" };
    redlock_client *c = NULL;
    CHECK_RC(redlock_client_new(&c, one, 1, NULL), 0);
    redlock_lock *l = (redlock_lock *)0x1;
    CHECK_RC(redlock_lock_new(NULL, c, "x"), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new(&l, NULL, "x"), REDLOCK_EINVAL);
    CHECK(l == NULL);
    CHECK_RC(redlock_lock_new(&l, c, NULL), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new(&l, c, ""), REDLOCK_EINVAL);
    char big[REDLOCK_MAX_RESOURCE_LEN + 2];
    memset(big, 'r', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_RC(redlock_lock_new(&l, c, big), REDLOCK_EINVAL);
    big[REDLOCK_MAX_RESOURCE_LEN] = '\0';
    CHECK_RC(redlock_lock_new(&l, c, big), 0);
    redlock_lock_free(l);
    CHECK_RC(redlock_acquire(&l, NULL, "x", 1000), REDLOCK_EINVAL);
    CHECK_RC(redlock_acquire(NULL, c, "x", 1000), REDLOCK_EINVAL);
    CHECK_RC(redlock_try_acquire(&l, c, "", 1000), REDLOCK_EINVAL);

    CHECK_RC(redlock_lock_new(&l, c, "x"), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 0, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(l), "ttl_ms") != NULL);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, REDLOCK_MAX_TTL_MS + 1, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, UINT32_MAX, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 2, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(l), "drift") != NULL);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 1000, -3), REDLOCK_EINVAL);   /* -2 is REDLOCK_WAIT_FOREVER */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 1000, INT64_MAX), REDLOCK_EINVAL);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 1000), REDLOCK_ESTATE);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 0), REDLOCK_EINVAL);
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ESTATE);
    CHECK(redlock_lock_validity_ms(l) <= 0);
    CHECK(!redlock_lock_is_held(l));
    redlock_lock_cancel(l);  /* no acquire running: harmless */
    redlock_lock_free(l);

    CHECK_RC(redlock_lock_acquire(NULL, 1000, 0), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_extend(NULL, 1000), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_release(NULL), REDLOCK_EINVAL);
    CHECK(redlock_lock_validity_ms(NULL) <= 0);
    CHECK(redlock_lock_is_held(NULL) == 0);
    CHECK(redlock_lock_errmsg(NULL) != NULL);
    CHECK(redlock_lock_resource(NULL) != NULL);
    redlock_lock_cancel(NULL);
    redlock_lock_free(NULL);
    redlock_client_free(c);
}

static void test_strings(void)
{
    for (int code = 0; code >= REDLOCK_EFENCED; code--) {   /* the last code */
        CHECK(redlock_strerror(code) && strcmp(redlock_strerror(code), "unknown error") != 0);
        CHECK(strncmp(redlock_error_name(code), "REDLOCK_", 8) == 0);
        for (int other = code - 1; other >= REDLOCK_EFENCED; other--)
            CHECK(strcmp(redlock_strerror(code), redlock_strerror(other)) != 0);
    }
    CHECK(strcmp(redlock_strerror(-9999), "unknown error") == 0);
    CHECK(strcmp(redlock_error_name(REDLOCK_ENOQUORUM), "REDLOCK_ENOQUORUM") == 0);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", REDLOCK_VERSION_MAJOR, REDLOCK_VERSION_MINOR, REDLOCK_VERSION_PATCH);
    CHECK(strcmp(redlock_version(), v) == 0);
}

/* The store's fence (c/src/fence.c): the key's name, snprintf's contract,
 * what is refused; the script itself runs on real servers in
 * tests/python/test_fence.py. */
static void test_fence_key(void)
{
    char k[64];
    CHECK(redlock_fence_key(k, sizeof k, "orders") == 14 && strcmp(k, "{orders}:fence") == 0);
    CHECK(redlock_fence_key(k, sizeof k, "{orders}:17") == 17 && strcmp(k, "{orders}:17:fence") == 0);
    CHECK(redlock_fence_key(NULL, 0, "orders") == 14);                    /* the length it needs */
    CHECK(redlock_fence_key(k, 5, "orders") == 14 && strcmp(k, "{ord") == 0);   /* cut, NUL-ended */
    CHECK(redlock_fence_key(k, sizeof k, "") == REDLOCK_EINVAL);
    CHECK(redlock_fence_key(k, sizeof k, NULL) == REDLOCK_EINVAL);
    CHECK(redlock_fence_key(NULL, 8, "orders") == REDLOCK_EINVAL);
    CHECK(redlock_fence_key(k, sizeof k, "a}b") == REDLOCK_EINVAL);          /* no tag: a '}' */
    char big[REDLOCK_MAX_RESOURCE_LEN + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(redlock_fence_key(k, sizeof k, big) == REDLOCK_EINVAL);
    big[REDLOCK_MAX_RESOURCE_LEN] = '\0';
    CHECK(redlock_fence_key(NULL, 0, big) == REDLOCK_MAX_RESOURCE_LEN + 8);
    const char *sha = redlock_fence_script_sha1();
    CHECK(strlen(sha) == 40 && strspn(sha, "0123456789abcdef") == 40);
    CHECK(strstr(redlock_fence_script(), "FENCED ") != NULL);
    CHECK(strcmp(redlock_error_name(REDLOCK_EFENCED), "REDLOCK_EFENCED") == 0);
}

/* The script's refusal as a binding reads it (redlock_fence_refusal):
 * both tokens as 64-bit integers, and nothing else taken for one. */
static int refusal(const char *msg, uint64_t *t, uint64_t *f)
{
    return redlock_fence_refusal(msg, msg ? strlen(msg) : 0, t, f);
}

static void test_fence_refusal(void)
{
    uint64_t t = 1234, f = 5678;
    CHECK(refusal("FENCED 5 7 token 5 is older than 7, the highest this resource has seen", &t, &f) == 1);
    CHECK(t == 5 && f == 7);
    CHECK(refusal("FENCED 9 10", &t, &f) == 1 && t == 9 && f == 10);      /* no words after */
    /* above 2^53, where a double would round, and the largest token */
    CHECK(refusal("FENCED 9007199254740993 18446744073709551615 x", &t, &f) == 1);
    CHECK(t == 9007199254740993ull && f == UINT64_MAX);
    CHECK(refusal("FENCED 3 4", NULL, NULL) == 1);
    /* not a refusal: *t and *f untouched */
    t = f = 42;
    const char *no[] = {
        NULL, "", "FENCED", "FENCED ", "FENCED 5", "FENCED 5 ", "FENCED  5 7", "FENCED 5  7",
        "fenced 5 7", "ERR FENCED 5 7", "NOSCRIPT No matching script", "FENCED 0 7", "FENCED 5 0",
        "FENCED 05 7", "FENCED -5 7", "FENCED +5 7", "FENCED 5 7x", "FENCED 5x 7", "FENCED 5,7",
        "FENCED 5 18446744073709551616", "FENCED 99999999999999999999 7", "FENCED 5\t7",
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        if (refusal(no[i], &t, &f) != 0)
            fprintf(stderr, "taken for a refusal: '%s'\n", no[i] ? no[i] : "(null)");
        CHECK(refusal(no[i], &t, &f) == 0);
    }
    CHECK(t == 42 && f == 42);
    /* len bounds it: no NUL needed, and none read past */
    const char cut[] = { 'F', 'E', 'N', 'C', 'E', 'D', ' ', '1', '2', ' ', '3', '4', '5' };
    CHECK(redlock_fence_refusal(cut, sizeof cut, &t, &f) == 1 && t == 12 && f == 345);
    CHECK(redlock_fence_refusal(cut, 12, &t, &f) == 1 && t == 12 && f == 34);
    CHECK(redlock_fence_refusal(cut, 10, &t, &f) == 0);
    CHECK(redlock_fence_refusal("FENCED 5 7\0 x", 13, &t, &f) == 0);   /* a NUL inside len */
}

int main(void)
{
    run_test("fence_key", test_fence_key);
    run_test("fence_refusal", test_fence_refusal);
    run_test("urls", test_urls);
    run_test("client_args", test_client_args);
    run_test("lock_args", test_lock_args);
    run_test("strings", test_strings);
    return finish_tests();
}
