/* SPDX-License-Identifier: BSD-3-Clause */
/* test_unreachable.c: a wait for a lock that no quorum of nodes can grant
 * because they cannot be reached (ports nobody listens on, a name that does
 * not resolve) fails with REDLOCK_EUNREACHABLE naming the nodes; a busy lock
 * and a slow node still wait (redlock_options.unreachable_ms). */
#include "testutil.h"   /* first: it defines _GNU_SOURCE */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/socket.h>

/* The waits below would end with REDLOCK_ETIMEDOUT after this long: a
 * guard against hanging, never reached when the bound works. */
#define GUARD_MS 60000

/* A loopback port nothing listens on: bound once, then closed. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("free_port");
        exit(2);
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* Three loopback URLs on which nobody listens. */
static void closed_ports(char urls[3][64], const char *u[3])
{
    for (int i = 0; i < 3; i++) {
        snprintf(urls[i], 64, "redis://127.0.0.1:%d", free_port());
        u[i] = urls[i];
    }
}

static redlock_client *client_of(const char *const *urls, size_t n, const redlock_options *o)
{
    redlock_client *c = NULL;
    char err[512] = "";
    int rc = redlock_client_open(&c, urls, n, o, err, sizeof err);
    if (rc) {
        fprintf(stderr, "client_open: %s: %s\n", redlock_error_name(rc), err);
        return NULL;
    }
    return c;
}

static atomic_int n_failed, n_node_errors, n_down;

static void count_events(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type == REDLOCK_EVENT_ACQUIRE_FAILED)
        atomic_fetch_add(&n_failed, 1);
    if (ev->type == REDLOCK_EVENT_NODE_ERROR) {
        atomic_fetch_add(&n_node_errors, 1);
        if (ev->node_outcome == REDLOCK_NODE_DOWN)
            atomic_fetch_add(&n_down, 1);
    }
}

static void test_three_closed_ports(void)
{
    char urls[3][64];
    const char *u[3];
    closed_ports(urls, u);
    redlock_options o;
    redlock_options_init(&o);
    o.on_event = count_events;
    atomic_store(&n_failed, 0);
    atomic_store(&n_node_errors, 0);
    atomic_store(&n_down, 0);
    redlock_client *c = client_of(u, 3, &o);
    CHECK(c != NULL);
    if (!c)
        return;
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("closed")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, GUARD_MS), REDLOCK_EUNREACHABLE);
    const char *m = redlock_lock_errmsg(l);
    fprintf(stderr, "  %s\n", m);
    CHECK(redlock_lock_errcode(l) == REDLOCK_EUNREACHABLE);
    CHECK(strstr(m, "no quorum of nodes reachable") != NULL);
    CHECK(strstr(m, "3 of 3 nodes unreachable") != NULL);
    for (int i = 0; i < 3; i++)
        CHECK(strstr(m, urls[i] + strlen("redis://")) != NULL);   /* each node named */
    CHECK(strstr(m, "onnection refused") != NULL);                /* and what it said */
    CHECK(!redlock_lock_is_held(l));
    /* The wait told the event hook while it went on: failed attempts, and
     * the nodes, first refusing, then skipped while in backoff. */
    CHECK(atomic_load(&n_failed) >= 2);
    CHECK(atomic_load(&n_node_errors) >= 6);
    CHECK(atomic_load(&n_down) >= 1);
    /* The per-node report says the same. */
    for (size_t i = 0; i < 3; i++) {
        int code = 0;
        int out = redlock_lock_node_result(l, i, &code, NULL, NULL, 0);
        CHECK(out == REDLOCK_NODE_DOWN || out == REDLOCK_NODE_ERROR);
        CHECK(code == REDLOCK_EIO);
    }
    /* The default acquire (3 retries) is bounded by its count; the client's
     * bound holds for it too, so either answer is prompt and says why. */
    int rc = redlock_lock_acquire(l, 5000, REDLOCK_WAIT_DEFAULT);
    CHECK(rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EUNREACHABLE);
    CHECK(strstr(redlock_lock_errmsg(l), urls[0] + strlen("redis://")) != NULL);
    /* A single attempt is not a wait: "no quorum", with the same detail. */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(strstr(redlock_lock_errmsg(l), "unreachable") != NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
    CHECK(strcmp(redlock_error_name(REDLOCK_EUNREACHABLE), "REDLOCK_EUNREACHABLE") == 0);
    CHECK(strstr(redlock_strerror(REDLOCK_EUNREACHABLE), "reached") != NULL);
}

static void test_name_not_resolving(void)
{
    /* Two of three nodes have a name that does not resolve: one reachable
     * node is not a quorum. */
    const char *u[] = { "redis://no-such-host.invalid:6379", "redis://also-no-such-host.invalid:6379", t_urls[0] };
    redlock_client *c = client_of(u, 3, NULL);
    CHECK(c != NULL);   /* names are resolved when connecting, not here */
    if (!c)
        return;
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("noname")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, GUARD_MS), REDLOCK_EUNREACHABLE);
    const char *m = redlock_lock_errmsg(l);
    fprintf(stderr, "  %s\n", m);
    CHECK(strstr(m, "2 of 3 nodes unreachable") != NULL);
    CHECK(strstr(m, "no-such-host.invalid") != NULL);
    CHECK(strstr(m, "also-no-such-host.invalid") != NULL);
    CHECK(strstr(m, t_urls[0] + strlen("redis://")) == NULL);   /* the reachable node is not named */
    CHECK(keys_on(1) == 0);   /* the grant on the reachable node was released */
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_minority_unreachable_acquires(void)
{
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", free_port());
    const char *u[] = { url, t_urls[0], t_urls[1] };
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.unreachable_ms = 1;   /* the tightest bound: a quorum is reachable, so it never applies */
    redlock_client *c = client_of(u, 3, &o);
    CHECK(c != NULL);
    if (!c)
        return;
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("minority")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, GUARD_MS), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_busy_lock_still_waits(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.unreachable_ms = 1;   /* every node answers: the bound never applies */
    redlock_client *c = client_of((const char *const *)t_urls, 3, &o);
    CHECK(c != NULL);
    if (!c)
        return;
    const char *name = uniq("busy");
    redlock_lock *holder, *waiter;
    CHECK_RC(redlock_lock_new(&holder, c, name), 0);
    CHECK_RC(redlock_lock_new(&waiter, c, name), 0);
    CHECK_LOCK_RC(holder, redlock_lock_acquire(holder, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(waiter, redlock_lock_acquire(waiter, 5000, 1500), REDLOCK_ETIMEDOUT);
    CHECK(strstr(redlock_lock_errmsg(waiter), "gave up after") != NULL);
    CHECK_LOCK_RC(holder, redlock_lock_release(holder), 0);
    redlock_lock_free(holder);
    redlock_lock_free(waiter);
    redlock_client_free(c);
}

static void test_slow_nodes_are_not_unreachable(void)
{
    /* A majority connected but paused: timeouts, not unreachability; the
     * wait goes on to its own deadline. */
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 100;
    o.unreachable_ms = 1;
    redlock_client *c = client_of((const char *const *)t_urls, 3, &o);
    CHECK(c != NULL);
    if (!c)
        return;
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("paused")), 0);
    int rc = -1;
    for (int k = 0; k < 20 && rc != 0; k++)   /* connect first, on a loaded machine too */
        rc = redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE);
    CHECK_LOCK_RC(l, rc, 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    for (int i = 1; i < 3; i++)
        CHECK(ctl(NULL, 0, "pause %d", i) == 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, 1500), REDLOCK_ETIMEDOUT);
    CHECK(strstr(redlock_lock_errmsg(l), "no reply within") != NULL);
    for (int i = 1; i < 3; i++)
        CHECK(ctl(NULL, 0, "resume %d", i) == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_never_keeps_waiting(void)
{
    char urls[3][64];
    const char *u[3];
    closed_ports(urls, u);
    redlock_options o;
    redlock_options_init(&o);
    o.unreachable_ms = REDLOCK_UNREACHABLE_NEVER;
    redlock_client *c = client_of(u, 3, &o);
    CHECK(c != NULL);
    if (!c)
        return;
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("never")), 0);
    /* Longer than the default bound (1 s): only the wait's own deadline ends it. */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, 2500), REDLOCK_ETIMEDOUT);
    CHECK(strstr(redlock_lock_errmsg(l), "onnection refused") != NULL ||
          strstr(redlock_lock_errmsg(l), "unreachable") != NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_option_checks(void)
{
    const char *u[] = { "redis://127.0.0.1:6379" };
    redlock_options o;
    redlock_options_init(&o);
    CHECK(o.version == 5 && REDLOCK_OPTIONS_VERSION == 5);
    CHECK(o.unreachable_ms == 0);
    redlock_options s = REDLOCK_OPTIONS_INIT;
    CHECK(s.unreachable_ms == 0);
    redlock_client *c = NULL;
    char err[256] = "";
    o.unreachable_ms = (uint32_t)REDLOCK_MAX_WAIT_MS + 1;
    CHECK_RC(redlock_client_open(&c, u, 1, &o, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "unreachable_ms") != NULL);
    o.unreachable_ms = REDLOCK_MAX_WAIT_MS;
    CHECK_RC(redlock_client_open(&c, u, 1, &o, err, sizeof err), 0);
    redlock_client_free(c);
    /* A version 3 struct (built against the older header) gets the default. */
    redlock_options v3;
    memset(&v3, 0xff, sizeof v3);
    CHECK_RC(redlock_options_init_version(&v3, 3), 0);
    CHECK(v3.unreachable_ms == UINT32_MAX);   /* not written: the field is beyond version 3 */
    CHECK_RC(redlock_client_open(&c, u, 1, &v3, err, sizeof err), 0);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    if (t_nurls != 3) {
        fprintf(stderr, "test_unreachable needs 3 nodes\n");
        return 2;
    }
    run_test("option_checks", test_option_checks);
    run_test("three_closed_ports", test_three_closed_ports);
    run_test("name_not_resolving", test_name_not_resolving);
    run_test("minority_unreachable_acquires", test_minority_unreachable_acquires);
    run_test("busy_lock_still_waits", test_busy_lock_still_waits);
    run_test("slow_nodes_are_not_unreachable", test_slow_nodes_are_not_unreachable);
    run_test("never_keeps_waiting", test_never_keeps_waiting);
    return finish_tests();
}
