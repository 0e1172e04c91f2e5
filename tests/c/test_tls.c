/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tls.c: rediss:// against real Redis and Valkey TLS ports (certificates from
 * make-test-certs.sh): verified connections work; a wrong CA, a wrong name, an
 * expired certificate, a missing client certificate and plain text all fail
 * with a clear message and never acquire; the options struct is read by its version. */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

static const char *certs;

static const char *cert(const char *name)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 512, "%s/%s", certs, name);
    return b;
}

static redlock_options tls_opts(const char *ca)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;  /* handshakes under sanitizers on a loaded machine */
    o.retry_count = 0;
    o.tls_ca_file = ca ? cert(ca) : NULL;
    return o;
}

/* The harness's URLs with the scheme or host swapped: "rediss://127.0.0.1:P" -> PREFIX + ":P" */
static const char *url_as(size_t i, const char *prefix)
{
    static char buf[16][256];
    static int k;
    char *b = buf[k++ % 16];
    const char *port = strrchr(t_urls[i], ':');
    snprintf(b, 256, "%s%s", prefix, port);
    return b;
}

static redlock_client *open_with(const char *const *urls, size_t n, const redlock_options *o)
{
    redlock_client *c = NULL;
    char err[512];
    int rc = redlock_client_open(&c, urls, n, o, err, sizeof err);
    if (rc)
        fprintf(stderr, "client_open: %s: %s\n", redlock_error_name(rc), err);
    CHECK_RC(rc, 0);
    return c;
}

static void expect_ok(redlock_client *c)
{
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("tls-ok")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    /* again, over the pooled connections */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
}

/* A failed acquisition: code `want`, a message with `needle`, nothing held, no key left. */
static void expect_fail(redlock_client *c, int want, const char *needle)
{
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("tls-bad")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_DEFAULT), want);
    if (needle && !strstr(redlock_lock_errmsg(l), needle)) {
        t_failures++;
        fprintf(stderr, "FAIL [%s]: '%s' not in: %s\n", t_current, needle, redlock_lock_errmsg(l));
    }
    t_checks++;
    CHECK(!redlock_lock_is_held(l));
    CHECK(redlock_lock_validity_ms(l) <= 0);
    redlock_lock_free(l);
    /* a failed attempt's clean-up waits for no reply: wait for its effect
     * (well within the 10 s TTL, so that expiry cannot pass for it) */
    long long left = -1;
    CHECK(EVENTUALLY((left = keys_on(3)) == 0, 5000, "the clean-up of the failed attempt"));
    for (size_t i = 0; left && i < 3; i++) {
        char out[1024], ttl[64];
        ctl(out, sizeof out, "cmd %zu KEYS '*'", i);
        out[strcspn(out, "\n")] = 0;
        if (out[0]) {
            ctl(ttl, sizeof ttl, "cmd %zu PTTL %s", i, out);
            fprintf(stderr, "node %zu still holds: %s pttl %s", i, out, ttl);
        }
    }
}

static void all_nodes(const char *command)
{
    for (size_t i = 0; i < 3; i++)
        CHECK(ctl(NULL, 0, "cmd %zu %s", i, command) == 0);
}

static void test_verified(void)
{
    redlock_options o = tls_opts("ca.crt");
    redlock_client *c = open_with((const char *const *)t_urls, 3, &o);
    expect_ok(c);
    redlock_client_free(c);

    /* host names are checked too, and a CA directory works like a CA file */
    const char *byname[3] = { url_as(0, "rediss://localhost"), url_as(1, "rediss://localhost"),
                              url_as(2, "rediss://localhost") };
    o.tls_ca_file = NULL;
    o.tls_ca_dir = cert("cadir");
    c = open_with(byname, 3, &o);
    expect_ok(c);
    redlock_client_free(c);

    /* tls_server_name: the name expected instead of the URL's host */
    o = tls_opts("ca.crt");
    o.tls_server_name = "localhost";
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_ok(c);
    redlock_client_free(c);
}

static void test_refused_certificates(void)
{
    redlock_options o = tls_opts("other-ca.crt");
    redlock_client *c = open_with((const char *const *)t_urls, 3, &o);
    /* (the servers send their CA along: "self-signed certificate in certificate chain") */
    expect_fail(c, REDLOCK_ETLS, "certificate verify failed");
    redlock_client_free(c);

    /* no CA given: the system's store, which does not know the test CA */
    o = tls_opts(NULL);
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_fail(c, REDLOCK_ETLS, "certificate verify failed");
    redlock_client_free(c);

    o = tls_opts("ca.crt");
    o.tls_server_name = "redis.example.invalid";
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_fail(c, REDLOCK_ETLS, "certificate verify failed: hostname mismatch (expected redis.example.invalid)");
    redlock_client_free(c);

    o.tls_server_name = "127.0.0.2";
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_fail(c, REDLOCK_ETLS, "IP address mismatch");
    redlock_client_free(c);

    /* the explicit opt-out accepts the unknown CA */
    o = tls_opts("other-ca.crt");
    o.tls_insecure_skip_verify = 1;
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_ok(c);
    redlock_client_free(c);

    /* an expired server certificate (servers reload it at run time) */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "CONFIG SET tls-cert-file %s tls-key-file %s", cert("expired.crt"),
             cert("expired.key"));
    all_nodes(cmd);
    o = tls_opts("ca.crt");
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_fail(c, REDLOCK_ETLS, "certificate verify failed: certificate has expired");
    redlock_client_free(c);
    snprintf(cmd, sizeof cmd, "CONFIG SET tls-cert-file %s tls-key-file %s", cert("server.crt"),
             cert("server.key"));
    all_nodes(cmd);
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_ok(c);
    redlock_client_free(c);
}

static void test_mutual_tls(void)
{
    all_nodes("CONFIG SET tls-auth-clients yes");
    redlock_options o = tls_opts("ca.crt");
    redlock_client *c = open_with((const char *const *)t_urls, 3, &o);
    expect_fail(c, REDLOCK_ETLS, "certificate required");
    redlock_client_free(c);

    o.tls_cert_file = cert("client.crt");
    o.tls_key_file = cert("client.key");
    c = open_with((const char *const *)t_urls, 3, &o);
    expect_ok(c);
    redlock_client_free(c);
    all_nodes("CONFIG SET tls-auth-clients no");
}

static void test_plain_text_to_tls_port(void)
{
    const char *plain[3] = { url_as(0, "redis://127.0.0.1"), url_as(1, "redis://127.0.0.1"),
                             url_as(2, "redis://127.0.0.1") };
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.retry_count = 0;
    redlock_client *c = open_with(plain, 3, &o);
    /* The server just resets the connection: an I/O failure, with a hint. */
    expect_fail(c, REDLOCK_ENOQUORUM, "a TLS port needs rediss://");
    redlock_client_free(c);
}

static void test_secrets_stay_hidden(void)
{
    all_nodes("ACL SETUSER tlsuser on '>Tls-S3cret-pw' '~*' +@all");
    const char *urls[3] = { url_as(0, "rediss://tlsuser:Tls-S3cret-pw@127.0.0.1"),
                            url_as(1, "rediss://tlsuser:Tls-S3cret-pw@127.0.0.1"),
                            url_as(2, "rediss://tlsuser:Tls-S3cret-pw@127.0.0.1") };
    redlock_options o = tls_opts("ca.crt");
    redlock_client *c = open_with(urls, 3, &o);
    expect_ok(c);  /* AUTH over TLS */
    redlock_client_free(c);

    o = tls_opts("other-ca.crt");
    c = open_with(urls, 3, &o);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("tls-secret")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_ETLS);
    CHECK(strstr(redlock_lock_errmsg(l), "Tls-S3cret-pw") == NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "tlsuser:***@") != NULL);
    redlock_lock_free(l);
    redlock_client_free(c);

    /* wrong password over TLS: EAUTH, masked */
    const char *wrong[3] = { url_as(0, "rediss://tlsuser:Wr0ng-tls-pw@127.0.0.1"),
                             url_as(1, "rediss://tlsuser:Wr0ng-tls-pw@127.0.0.1"),
                             url_as(2, "rediss://tlsuser:Wr0ng-tls-pw@127.0.0.1") };
    o = tls_opts("ca.crt");
    c = open_with(wrong, 3, &o);
    CHECK_RC(redlock_lock_new(&l, c, uniq("tls-wrongpw")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_EAUTH);
    CHECK(strstr(redlock_lock_errmsg(l), "Wr0ng-tls-pw") == NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
    /* The harness's default user has no password, so the SET pipelined behind
     * the failed AUTH ran as that user (docs/algorithm.md, known gaps). */
    all_nodes("FLUSHALL");

    /* client creation errors name files, never the URL's password */
    char err[512];
    o = tls_opts("no-such-ca.crt");
    c = NULL;
    CHECK_RC(redlock_client_open(&c, urls, 3, &o, err, sizeof err), REDLOCK_ETLS);
    CHECK(c == NULL && strstr(err, "no-such-ca.crt") != NULL && strstr(err, "Tls-S3cret-pw") == NULL);
}

static void test_open_errors(void)
{
    char err[512];
    redlock_client *c = NULL;
    redlock_options o = tls_opts("ca.crt");
    o.tls_cert_file = cert("client.crt");
    CHECK_RC(redlock_client_open(&c, (const char *const *)t_urls, 3, &o, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "tls_key_file") != NULL);
    o.tls_key_file = cert("server.key");  /* not the certificate's key */
    CHECK_RC(redlock_client_open(&c, (const char *const *)t_urls, 3, &o, err, sizeof err), REDLOCK_ETLS);
    CHECK(strstr(err, "tls_key_file") != NULL && strstr(err, "mismatch") != NULL);
    o = tls_opts("ca.crt");
    o.tls_ca_file = NULL;
    o.tls_ca_dir = cert("no-such-dir");
    CHECK_RC(redlock_client_open(&c, (const char *const *)t_urls, 3, &o, err, sizeof err), REDLOCK_ETLS);
    CHECK(strstr(err, "tls_ca_dir") != NULL);
    o = tls_opts("ca.crt");
    o.tls_insecure_skip_verify = 2;
    CHECK_RC(redlock_client_open(&c, (const char *const *)t_urls, 3, &o, err, sizeof err), REDLOCK_EINVAL);

    /* TLS options next to a plain redis:// node: refused, so nothing goes out in clear text */
    const char *mixed[3] = { t_urls[0], t_urls[1], url_as(2, "redis://127.0.0.1") };
    o = tls_opts("ca.crt");
    CHECK_RC(redlock_client_open(&c, mixed, 3, &o, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "node 2") != NULL && strstr(err, "rediss://") != NULL);
    CHECK(c == NULL);
}

/* While the handshake waits for a server (here a paused one), the poll loop sleeps:
 * it must not spin on a socket that is merely writable. */
static void test_handshake_does_not_spin(void)
{
    redlock_options o = tls_opts("ca.crt");
    o.node_timeout_ms = 300;
    o.connect_timeout_ms = 300;
    redlock_client *c = open_with((const char *const *)t_urls, 1, &o);
    CHECK(ctl(NULL, 0, "pause 0") == 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("tls-paused")), 0);
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    double t0 = now_ms();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    double wall = now_ms() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double cpu = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    CHECK(strstr(redlock_lock_errmsg(l), "TLS handshake not finished") != NULL);
    CHECK(wall >= 500);
    if (cpu > wall / 4) {
        t_failures++;
        fprintf(stderr, "FAIL [%s]: %.0f ms of CPU in %.0f ms waiting for a handshake\n", t_current, cpu, wall);
    }
    t_checks++;
    CHECK(ctl(NULL, 0, "resume 0") == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* One TLS client shared by threads: pooled TLS connections move between
 * threads (one at a time) and the SSL_CTX is shared. Run under TSan too. */
static redlock_client *shared;
static int thread_failures;

static void *locker(void *arg)
{
    char res[64];
    snprintf(res, sizeof res, "tls-thread-%d-%d", (int)getpid(), (int)(intptr_t)arg);
    for (int k = 0; k < 15; k++) {
        redlock_lock *l;
        if (redlock_lock_new(&l, shared, res) != 0) {
            __atomic_add_fetch(&thread_failures, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE) != 0 || redlock_lock_extend(l, 10000) != 0 ||
            redlock_lock_release(l) != 0) {
            fprintf(stderr, "thread %d: %s\n", (int)(intptr_t)arg, redlock_lock_errmsg(l));
            __atomic_add_fetch(&thread_failures, 1, __ATOMIC_SEQ_CST);
        }
        redlock_lock_free(l);
    }
    return NULL;
}

static void test_threads(void)
{
    redlock_options o = tls_opts("ca.crt");
    shared = open_with((const char *const *)t_urls, 3, &o);
    pthread_t th[4];
    for (int k = 0; k < 4; k++)
        CHECK(pthread_create(&th[k], NULL, locker, (void *)(intptr_t)k) == 0);
    for (int k = 0; k < 4; k++)
        pthread_join(th[k], NULL);
    CHECK(thread_failures == 0);
    /* Freeing the client reads the replies its connections still owe, so
     * every release written has run before the check. */
    redlock_client_free(shared);
    long long left = keys_on(3);
    CHECK(left == 0);
    for (int i = 0; left && i < 3; i++) {
        char out[512];
        ctl(out, sizeof out, "cmd %d KEYS '*'", i);
        fprintf(stderr, "  node %d keys: %s", i, out);
    }
}

/* A caller built against the version 1 header has a smaller struct: only its
 * fields are read and written. */
static void test_options_versions(void)
{
    redlock_options o;
    unsigned char *bytes = (unsigned char *)&o;
    size_t v1 = offsetof(redlock_options, tls_ca_file);
    memset(&o, 0xA5, sizeof o);
    CHECK_RC(redlock_options_init_version(&o, 1), 0);
    CHECK(o.version == 1 && o.retry_count == 3 && o.flags == 0);
    int untouched = 1;
    for (size_t k = v1; k < sizeof o; k++)
        untouched &= bytes[k] == 0xA5;
    CHECK(untouched);
    /* the exported function behind the macro is the version 1 one */
    memset(&o, 0xA5, sizeof o);
    (redlock_options_init)(&o);
    CHECK(o.version == 1 && bytes[sizeof o - 1] == 0xA5);
    /* a version 1 struct followed by garbage: read as version 1, TLS defaults */
    redlock_client *c = NULL;
    char err[256];
    CHECK_RC(redlock_client_open(&c, (const char *const *)t_urls, 3, &o, err, sizeof err), 0);
    redlock_client_free(c);
    CHECK_RC(redlock_options_init_version(&o, 0), REDLOCK_EINVAL);
    CHECK_RC(redlock_options_init_version(&o, REDLOCK_OPTIONS_VERSION + 1), REDLOCK_EINVAL);
    CHECK_RC(redlock_options_init_version(NULL, 1), REDLOCK_EINVAL);
    redlock_options_init(&o);
    redlock_options init = REDLOCK_OPTIONS_INIT;
    CHECK(o.version == 5 && o.tls_ca_file == NULL && o.tls_insecure_skip_verify == 0 && o.on_event == NULL &&
          o.unreachable_ms == 0 && o.quarantine_ttl_ms == 0);
    CHECK(init.version == 5 && init.unreachable_ms == 0 && init.quarantine_ttl_ms == 0 && init.tls_ca_file == NULL && init.tls_server_name == NULL &&
          init.tls_insecure_skip_verify == 0 && init.flags == 0 && init.retry_count == 3 &&
          init.on_event == NULL && init.on_event_userdata == NULL);
    /* a version 2 struct: its fields are read, on_event past its end is not */
    memset(&o, 0xA5, sizeof o);
    CHECK_RC(redlock_options_init_version(&o, 2), 0);
    CHECK(o.version == 2 && o.tls_insecure_skip_verify == 0 && bytes[sizeof o - 1] == 0xA5);
    CHECK_RC(redlock_client_open(&c, (const char *const *)t_urls, 3, &o, err, sizeof err), 0);
    redlock_client_free(c);
}

int main(void)
{
    /* SIGPIPE is left at its default: the library must not raise it (docs/threading.md). */
    load_nodes();
    certs = getenv("REDLOCK_TEST_CERTS");
    if (t_nurls != 3 || !certs || strncmp(t_urls[0], "rediss://", 9) != 0) {
        fprintf(stderr, "test_tls needs 3 TLS nodes and REDLOCK_TEST_CERTS: run it under "
                        "make-test-certs.sh -- nodes.py exec --tls-dir {}\n");
        return 2;
    }
    const char *loop = getenv("REDLOCK_TLS_THREADS_LOOP");
    if (loop) {
        /* The threads case alone, many times: it once left a released key
         * behind in about one run of a dozen (docs/design.md). */
        int n = atoi(loop);
        for (int k = 0; k < n; k++) {
            thread_failures = 0;
            run_test("threads", test_threads);
        }
        return finish_tests();
    }
    run_test("options_versions", test_options_versions);
    run_test("verified", test_verified);
    run_test("refused_certificates", test_refused_certificates);
    run_test("mutual_tls", test_mutual_tls);
    run_test("plain_text_to_tls_port", test_plain_text_to_tls_port);
    run_test("open_errors", test_open_errors);
    run_test("secrets_stay_hidden", test_secrets_stay_hidden);
    run_test("threads", test_threads);
    run_test("handshake_does_not_spin", test_handshake_does_not_spin);
    return finish_tests();
}
