/* SPDX-License-Identifier: BSD-3-Clause */
/* test_secrets.c: a password planted in node URLs, valid and malformed, never
 * shows in what the library says: redlock_client_open's errbuf,
 * redlock_lock_errmsg, redlock_client_node_url. Runs under the harness (the
 * valid URLs point at its nodes, with a user and password they refuse). */
#include "testutil.h"

/* The secret, and pieces of it that a half-masked message would show. */
#define SECRET "Pl4nted-S3cret"
static const char *const pieces[] = { SECRET, "Pl4nted", "S3cret", "4nted-S3" };

static void check_clean(const char *what, const char *text)
{
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        t_checks++;
        if (text && strstr(text, pieces[i])) {
            t_failures++;
            fprintf(stderr, "FAIL [%s] %s shows '%s': %s\n", t_current, what, pieces[i], text);
        }
    }
}

/* URLs that do not parse, each with the secret somewhere a careless mask
 * would print: with no '@' after it, split at a comma, with no scheme, in
 * a bad port, path or query. */
static const char *const malformed[] = {
    "redis://:" SECRET,
    "redis://user:" SECRET,
    "rediss://:" SECRET,
    "unix://:" SECRET,
    "redis://:" SECRET "@",
    ":" SECRET "@127.0.0.1:6379",
    SECRET "@127.0.0.1",
    SECRET,
    "http://:" SECRET "@127.0.0.1",
    "redis://:" SECRET "@127.0.0.1:notaport",
    "redis://:" SECRET "@127.0.0.1:6379/notadb",
    "redis://:" SECRET "@127.0.0.1:6379?password=x",
    "redis://:Pl4nted%ZZS3cret@127.0.0.1",
    "redis://:" SECRET "@[::1",
    "redis://:Pl4nted S3cret@127.0.0.1",
    "redis://127.0.0.1:6379/" SECRET,
    "redis://127.0.0.1:" SECRET,
    "unix://:" SECRET "@relative/path",
    "unix://:" SECRET "@/tmp/sock?pw=" SECRET,
    /* what a list split at an unescaped comma in a password leaves */
    "redis://:Pl4nted",
    "S3cret@127.0.0.1:6379",
    "redis://app:Pl4nted",
};

static void test_malformed_urls(void)
{
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        /* alone, and behind a valid node, so the index in the message moves */
        const char *alone[] = { malformed[i] };
        const char *after[] = { t_urls[0], malformed[i] };
        char err[1024];
        redlock_client *c = NULL;
        memset(err, 0, sizeof err);
        int rc = redlock_client_open(&c, alone, 1, NULL, err, sizeof err);
        t_checks++;
        if (rc == 0) {
            /* Some shapes parse (a host named like a word): then the node URL
             * is what must be clean. */
            check_clean("redlock_client_node_url", redlock_client_node_url(c, 0));
            redlock_client_free(c);
        } else {
            CHECK(err[0] != '\0');
            check_clean("redlock_client_open errbuf", err);
        }
        c = NULL;
        memset(err, 0, sizeof err);
        rc = redlock_client_open(&c, after, 2, NULL, err, sizeof err);
        if (rc == 0) {
            check_clean("redlock_client_node_url", redlock_client_node_url(c, 1));
            redlock_client_free(c);
        } else {
            check_clean("redlock_client_open errbuf", err);
        }
    }
}

/* Builds "scheme://userinfo@host:port" from a harness URL. */
static void with_userinfo(char *out, size_t size, const char *url, const char *userinfo)
{
    const char *rest = strstr(url, "://");
    snprintf(out, size, "%.*s://%s@%s", (int)(rest - url), url, userinfo, rest + 3);
}

static void test_valid_urls_with_a_wrong_password(void)
{
    /* The nodes have no such user: AUTH fails, and the failure detail names
     * every node. The last node is one where nothing listens. */
    char urls[4][512];
    const char *list[4];
    size_t n = t_nurls < 3 ? t_nurls : 3;
    for (size_t i = 0; i < n; i++) {
        with_userinfo(urls[i], sizeof urls[i], t_urls[i], i % 2 ? "nobody:" SECRET : ":" SECRET);
        list[i] = urls[i];
    }
    snprintf(urls[n], sizeof urls[n], "redis://nobody:%s@127.0.0.1:1", SECRET);
    list[n] = urls[n];

    char err[1024] = "";
    redlock_client *c = NULL;
    CHECK_RC(redlock_client_open(&c, list, n + 1, NULL, err, sizeof err), 0);
    if (!c)
        return;
    for (size_t i = 0; i <= n; i++) {
        const char *shown = redlock_client_node_url(c, i);
        CHECK(shown && shown[0]);
        check_clean("redlock_client_node_url", shown);
    }
    redlock_lock *lock = NULL;
    CHECK_RC(redlock_lock_new(&lock, c, "secrets-test"), 0);
    if (lock) {
        int rc = redlock_lock_acquire(lock, 5000, REDLOCK_WAIT_NONE);
        CHECK(rc != 0);
        const char *msg = redlock_lock_errmsg(lock);
        CHECK(msg && msg[0]);
        check_clean("redlock_lock_errmsg (acquire)", msg);
        for (size_t i = 0; i <= n; i++) {
            char buf[512] = "";
            redlock_lock_node_result(lock, i, NULL, NULL, buf, sizeof buf);
            check_clean("redlock_lock_node_result", buf);
        }
        rc = redlock_lock_release(lock);
        check_clean("redlock_lock_errmsg (release)", redlock_lock_errmsg(lock));
        redlock_lock_free(lock);
    }
    redlock_client_free(c);

    /* The same server twice: the message shows both URLs. */
    const char *dup[] = { urls[0], urls[0] };
    c = NULL;
    memset(err, 0, sizeof err);
    CHECK(redlock_client_open(&c, dup, 2, NULL, err, sizeof err) != 0);
    check_clean("redlock_client_open errbuf (duplicate)", err);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    run_test("malformed_urls", test_malformed_urls);
    run_test("valid_urls_with_a_wrong_password", test_valid_urls_with_a_wrong_password);
    return finish_tests();
}
