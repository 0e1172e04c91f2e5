/* SPDX-License-Identifier: BSD-3-Clause */
/* test_quarantine.c: a node that lost its keys does not vote (c/src/epoch.c,
 * docs/algorithm.md "Quarantine"), on 3 real nodes without persistence:
 * the markers of a new deployment, a restart and a FLUSHALL found out, the
 * classic double grant without the quarantine and none with it, the
 * quarantine's length (the longest TTL the nodes record, plus its drift
 * allowance: not shorter, not much longer), and what a failed acquisition
 * says. Clock steps: tests/safety/test_quarantine.py (they need the
 * clock-step shim under the servers). */
#include "testutil.h"

#include <pthread.h>

#define MARKER "{redlock:epoch}"
#define QKEY "{redlock:epoch}:q"

static void all_nodes(const char *command)
{
    for (size_t i = 0; i < 3; i++)
        CHECK(ctl(NULL, 0, "cmd %zu %s", i, command) == 0);
}

static redlock_client *client_with(uint32_t flags)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.retry_count = 0;
    o.flags = flags;
    return make_client(3, &o);
}

static long long exists_on(int i, const char *key)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "EXISTS %s", key);
    return node_int(i, cmd);
}

/* Markers older than the "young deployment" grace (RL_EPOCH_YOUNG_MS). */
static void settle_markers(redlock_client *c)
{
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq("settle"), 1000), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    for (int i = 0; i < 3; i++)
        CHECK(EVENTUALLY(exists_on(i, MARKER) == 1, 5000, "the marker on every node"));
    msleep(1200);
}

static void restart(int i)
{
    CHECK(ctl(NULL, 0, "restart %d", i) == 0);
}

/* A lock of c taken and given back under a new name, ttl_ms long. */
static void cycle(redlock_client *c, const char *base, uint32_t ttl_ms)
{
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq(base), ttl_ms), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
}

/* Node 2 FLUSHALL'd, and found out by c: a round waits for the checks of
 * the nodes that granted it, so the first round that hears node 2 puts it
 * out. */
static void flush_and_find_out(redlock_client *c, uint32_t ttl_ms)
{
    CHECK(ctl(NULL, 0, "cmd 2 FLUSHALL") == 0);
    for (int k = 0; k < 50 && exists_on(2, QKEY) == 0; k++)
        cycle(c, "flushed", ttl_ms);
    CHECK(EVENTUALLY(exists_on(2, QKEY) == 1, 5000, "node 2 quarantined"));
}

static void test_new_deployment(void)
{
    /* every node new (restarted, FLUSHALL'd): no marker anywhere, a majority heard */
    all_nodes("FLUSHALL");
    redlock_client *c = client_with(0);
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq("fresh"), 5000), 0);
    for (size_t i = 0; i < 3; i++)
        CHECK(redlock_lock_node_result(l, i, NULL, NULL, NULL, 0) != REDLOCK_NODE_QUARANTINED);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    for (int i = 0; i < 3; i++) {
        CHECK(EVENTUALLY(exists_on(i, MARKER) == 1, 5000, "the marker on every node"));
        CHECK(exists_on(i, QKEY) == 0);
    }
    CHECK(EVENTUALLY(keys_on(3) == 0, 5000, "no lock key left"));
    redlock_client_free(c);
}

/* A holds X on {0, 1} (node 2 down); node 0 restarts without persistence and
 * node 2 comes back. Without the quarantine a second client gets X on {0, 2}
 * while A still holds it; with it, nodes 0 and 2 stay out and the attempt
 * says why. */
static void test_restart_double_grant(void)
{
    redlock_client *a = client_with(0), *b = client_with(0), *plain = client_with(REDLOCK_OPT_NO_QUARANTINE);
    settle_markers(a);
    const char *res = uniq("double");
    CHECK(ctl(NULL, 0, "kill 2") == 0);
    redlock_lock *la, *lb, *lp;
    CHECK_RC(redlock_try_acquire(&la, a, res, 20000), 0);
    restart(0);
    restart(2);
    /* with the quarantine: refused, naming it */
    CHECK_RC(redlock_lock_new(&lb, b, res), 0);
    CHECK_LOCK_RC(lb, redlock_lock_acquire(lb, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    const char *msg = redlock_lock_errmsg(lb);
    CHECK(strstr(msg, "quarantined") != NULL && strstr(msg, "lost its keys") != NULL);
    CHECK(strstr(msg, "out of the vote for") != NULL);
    int quarantined = 0;
    char nm[300];
    for (size_t i = 0; i < 3; i++) {
        int code = 0;
        if (redlock_lock_node_result(lb, i, &code, NULL, nm, sizeof nm) == REDLOCK_NODE_QUARANTINED) {
            quarantined++;
            CHECK(code == REDLOCK_ENOQUORUM && strstr(nm, "lost its keys") != NULL);
        }
    }
    CHECK(quarantined >= 1);
    CHECK(!redlock_lock_is_held(lb));
    /* the quarantine is on the nodes: every client sees it, and it lasts
     * the longest TTL they record (20 s here) and its drift allowance */
    for (int i = 0; i < 3; i += 2) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "PTTL %s", QKEY);
        long long pttl = node_int(i, cmd);
        CHECK(pttl > 15000 && pttl <= 20000 + 200 + 2 + 1);
    }
    CHECK(exists_on(1, QKEY) == 0);
    /* a client that connects now sees it too, before it votes */
    redlock_client *late = client_with(0);
    redlock_lock *ll;
    CHECK_RC(redlock_lock_new(&ll, late, res), 0);
    CHECK_LOCK_RC(ll, redlock_lock_acquire(ll, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(strstr(redlock_lock_errmsg(ll), "quarantined") != NULL);
    redlock_lock_free(ll);
    redlock_client_free(late);
    /* without it: the classic failure, two holders at once */
    CHECK_RC(redlock_lock_new(&lp, plain, res), 0);
    CHECK_LOCK_RC(lp, redlock_lock_acquire(lp, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_is_held(la) && redlock_lock_is_held(lp));
    CHECK_LOCK_RC(lp, redlock_lock_release(lp), 0);
    CHECK_LOCK_RC(la, redlock_lock_release(la), REDLOCK_ELOST);
    redlock_lock_free(la);
    redlock_lock_free(lb);
    redlock_lock_free(lp);
    redlock_client_free(a);
    redlock_client_free(b);
    redlock_client_free(plain);
    all_nodes("FLUSHALL");
}

/* A minority out costs nothing: the others still make a quorum. */
static void test_minority_costs_nothing(void)
{
    redlock_client *c = client_with(0);
    settle_markers(c);
    restart(1);
    for (int k = 0; k < 20; k++) {
        redlock_lock *l;
        CHECK_RC(redlock_try_acquire(&l, c, uniq("minority"), 2000), 0);
        int q = redlock_lock_node_result(l, 1, NULL, NULL, NULL, 0);
        CHECK(q == REDLOCK_NODE_QUARANTINED || q == REDLOCK_NODE_NOT_WAITED || q == REDLOCK_NODE_NONE);
        CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
        redlock_lock_free(l);
    }
    CHECK(exists_on(1, QKEY) == 1);
    redlock_client_free(c);
    all_nodes("FLUSHALL");
}

/* FLUSHALL of a node (no restart, the connection stays): found out too. */
static void test_flushall(void)
{
    redlock_client *c = client_with(0);
    settle_markers(c);
    flush_and_find_out(c, 10000);
    char out[300];
    CHECK(ctl(out, sizeof out, "cmd 2 GET %s", QKEY) == 0 && strstr(out, "lost its keys") != NULL);
    redlock_client_free(c);
    all_nodes("FLUSHALL");
}

/* The bound: a quarantined node votes again once its time has passed, not
 * before. Nodes 0 and 1 restart (a majority: nothing can be acquired while
 * they are out); the longest TTL recorded is 1500 ms. */
static void test_bound(void)
{
    redlock_client *c = client_with(0);
    settle_markers(c);
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq("bound-ttl"), 1500), 0);   /* recorded on every node */
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    restart(0);
    restart(1);
    const char *res = uniq("bound");
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    double t0 = now_ms();
    int rc = redlock_lock_acquire(l, 500, REDLOCK_WAIT_NONE);
    CHECK(rc == REDLOCK_ENOQUORUM);
    /* quarantine: 1500 + 1500 * 0.01 + 2 + 1 = 1518 ms from its start (within [t0, now]) */
    double first_ok = -1;
    while (now_ms() - t0 < 5000) {
        double t = now_ms();
        rc = redlock_lock_acquire(l, 500, REDLOCK_WAIT_NONE);
        if (rc == 0) {
            first_ok = t;
            CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
            break;
        }
        CHECK(rc == REDLOCK_ENOQUORUM && strstr(redlock_lock_errmsg(l), "quarantined") != NULL);
        msleep(20);
    }
    CHECK(first_ok > 0);
    fprintf(stderr, "bound: first acquisition %.0f ms after the first refusal (quarantine 1518 ms)\n",
            first_ok - t0);
    CHECK(first_ok - t0 >= 1518 - 50);    /* not before (the start was after t0) */
    CHECK(first_ok - t0 <= 1518 + 1500);  /* and not much after */
    redlock_lock_free(l);
    redlock_client_free(c);
    all_nodes("FLUSHALL");
}

/* quarantine_ttl_ms states a TTL longer than the markers record (a peer
 * library's clients, say): the quarantine lasts for it. The markers record
 * 1000 ms; the option says 2500: out for 2500 + 25 + 2 + 1 = 2528 ms. */
static void test_quarantine_ttl_option(void)
{
    const char *u[] = { "redis://127.0.0.1:6379" };
    redlock_options o;
    redlock_options_init(&o);
    CHECK(o.quarantine_ttl_ms == 0);
    redlock_client *bad = NULL;
    char err[256] = "";
    o.quarantine_ttl_ms = REDLOCK_MAX_TTL_MS + 1;
    CHECK_RC(redlock_client_open(&bad, u, 1, &o, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "quarantine_ttl_ms") != NULL);
    redlock_options v4;   /* built against the version 4 header: the default */
    memset(&v4, 0xff, sizeof v4);
    CHECK_RC(redlock_options_init_version(&v4, 4), 0);
    CHECK(v4.quarantine_ttl_ms == UINT32_MAX);   /* not written: beyond version 4 */
    CHECK_RC(redlock_client_open(&bad, u, 1, &v4, err, sizeof err), 0);
    redlock_client_free(bad);

    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.retry_count = 0;
    o.quarantine_ttl_ms = 2500;
    redlock_client *c = make_client(3, &o);
    settle_markers(c);   /* records 1000 ms */
    restart(0);
    restart(1);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("qttl")), 0);
    double t0 = now_ms();
    CHECK(redlock_lock_acquire(l, 500, REDLOCK_WAIT_NONE) == REDLOCK_ENOQUORUM);
    double first_ok = -1;
    while (now_ms() - t0 < 6000) {
        double t = now_ms();
        if (redlock_lock_acquire(l, 500, REDLOCK_WAIT_NONE) == 0) {
            first_ok = t;
            CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
            break;
        }
        msleep(20);
    }
    fprintf(stderr, "quarantine_ttl: first acquisition %.0f ms after the first refusal (quarantine 2528 ms)\n",
            first_ok - t0);
    CHECK(first_ok - t0 >= 2528 - 50);
    CHECK(first_ok - t0 <= 2528 + 1500);
    redlock_lock_free(l);
    redlock_client_free(c);
    all_nodes("FLUSHALL");
}

/* redlock_lock_acquire_many checks too: 10 locks held by one client, nodes
 * 0 and 1 wiped (node 2 keeps its marker and the keys); a second client
 * gets none of them, and each lock's result names the nodes out. Without
 * the quarantine it would get all ten: two holders at once. */
static void test_many(void)
{
    enum { M = 10 };
    redlock_client *a = client_with(0), *b = client_with(0), *off = client_with(REDLOCK_OPT_NO_QUARANTINE);
    settle_markers(a);
    redlock_lock *la[M], *lb[M], *lo[M];
    int rs[M];
    const char *base = uniq("many");
    for (int k = 0; k < M; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s-%d", base, k);
        CHECK_RC(redlock_lock_new(&la[k], a, name), 0);
        CHECK_RC(redlock_lock_new(&lb[k], b, name), 0);
        CHECK_RC(redlock_lock_new(&lo[k], off, name), 0);
    }
    CHECK_RC(redlock_lock_acquire_many(a, la, M, 10000, rs, NULL, 0), 0);
    for (int k = 0; k < M; k++)
        CHECK(rs[k] == 0);
    /* b has checked every node before the wipe (its first acquisition) */
    CHECK_RC(redlock_lock_acquire_many(b, lb, M, 10000, rs, NULL, 0), 0);
    for (int k = 0; k < M; k++)
        CHECK(rs[k] == REDLOCK_ENOTACQUIRED);
    CHECK(ctl(NULL, 0, "cmd 0 FLUSHALL") == 0);
    CHECK(ctl(NULL, 0, "cmd 1 FLUSHALL") == 0);
    CHECK_RC(redlock_lock_acquire_many(b, lb, M, 10000, rs, NULL, 0), 0);
    for (int k = 0; k < M; k++) {
        CHECK(rs[k] != 0);
        CHECK(redlock_lock_node_result(lb[k], 0, NULL, NULL, NULL, 0) == REDLOCK_NODE_QUARANTINED);
        CHECK(redlock_lock_node_result(lb[k], 1, NULL, NULL, NULL, 0) == REDLOCK_NODE_QUARANTINED);
    }
    CHECK(strstr(redlock_lock_errmsg(lb[0]), "lost its keys") != NULL);
    CHECK(exists_on(0, QKEY) == 1 && exists_on(1, QKEY) == 1 && exists_on(2, QKEY) == 0);
    /* the same wipe, unchecked: the keys a holds are granted again */
    CHECK(ctl(NULL, 0, "cmd 0 FLUSHALL") == 0);
    CHECK(ctl(NULL, 0, "cmd 1 FLUSHALL") == 0);
    CHECK_RC(redlock_lock_acquire_many(off, lo, M, 10000, rs, NULL, 0), 0);
    int doubled = 0;
    for (int k = 0; k < M; k++)
        doubled += rs[k] == 0;
    fprintf(stderr, "many: without the quarantine %d of %d locks granted while held\n", doubled, M);
    CHECK(doubled == M);
    for (int k = 0; k < M; k++) {
        redlock_lock_free(la[k]);
        redlock_lock_free(lb[k]);
        redlock_lock_free(lo[k]);
    }
    redlock_client_free(a);
    redlock_client_free(b);
    redlock_client_free(off);
    all_nodes("FLUSHALL");
}

/* How many times node i ran cmd (INFO commandstats; the scripts' own calls
 * count too), 0 if never. */
static long long calls_on(int i, const char *cmd)
{
    static char out[32768];
    char want[64];
    CHECK(ctl(out, sizeof out, "cmd %d INFO commandstats", i) == 0);
    snprintf(want, sizeof want, "cmdstat_%s:calls=", cmd);
    const char *at = strstr(out, want);
    return at ? atoll(at + strlen(want)) : 0;
}

static long long scripts_on(int i)
{
    return calls_on(i, "evalsha") + calls_on(i, "eval") + calls_on(i, "fcall");
}

/* The check costs one plain PTTL of the marker once the node records the
 * client's TTL: each cycle is SET, PTTL and the release's script. A longer
 * TTL goes through the check's script once, which records it. */
static void test_plain_check(void)
{
    redlock_client *c = client_with(0);
    settle_markers(c);   /* records 1000 ms */
    msleep(300);         /* the settling release's last node */
    all_nodes("CONFIG RESETSTAT");
    for (int k = 0; k < 10; k++) {
        redlock_lock *l;
        CHECK_RC(redlock_try_acquire(&l, c, uniq("plain"), 800), 0);
        CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
        redlock_lock_free(l);
    }
    for (int i = 0; i < 3; i++) {
        /* every script a release (its DEL): no check went as the script */
        CHECK(EVENTUALLY(calls_on(i, "del") == 10, 2000, "the releases"));
        CHECK(scripts_on(i) == 10);
        CHECK(calls_on(i, "pttl") == 10);
        CHECK(calls_on(i, "set") == 10);
    }
    all_nodes("CONFIG RESETSTAT");
    redlock_lock *l;
    CHECK_RC(redlock_try_acquire(&l, c, uniq("plain-longer"), 4000), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    char out[300];
    for (int i = 0; i < 3; i++) {
        CHECK(EVENTUALLY(calls_on(i, "del") == 1, 2000, "the release"));
        CHECK(scripts_on(i) == 2);   /* and the check's script */
        CHECK(ctl(out, sizeof out, "cmd %d GET %s", i, MARKER) == 0 && atoll(out) == 4000);
        /* made more than RL_EPOCH_YOUNG_MS ago with PX RL_EPOCH_BORN_MS (internal.h) */
        CHECK(ctl(out, sizeof out, "cmd %d PTTL %s", i, MARKER) == 0 && atoll(out) > 8990000000000LL &&
              atoll(out) <= 9000000000000LL - 1000);
    }
    redlock_client_free(c);
    all_nodes("FLUSHALL");
}

/* A client that read node 2's marker in the quarantine band (above the
 * base), then every node wiped and marked anew by another client (a new
 * deployment): the new marker's PTTL, some 10^12 ms below what it read, is
 * a marker made again, not a clock that jumped 31 years forward. Before
 * this was told apart, c put node 2 out again with "clock jumped
 * 1000000025450 ms forward", and every client that had seen a quarantine
 * did so after each FLUSHALL of a test suite. */
static void test_remade_marker_no_jump(void)
{
    redlock_client *c = client_with(0);
    settle_markers(c);
    flush_and_find_out(c, 1000);
    /* c's next checks read node 2's marker at the base plus the quarantine */
    for (int k = 0; k < 3; k++)
        cycle(c, "seen", 1000);
    all_nodes("FLUSHALL");
    redlock_client *d = client_with(0);   /* finds no marker anywhere: marks a new deployment */
    cycle(d, "new", 1000);
    for (int i = 0; i < 3; i++)
        CHECK(EVENTUALLY(exists_on(i, MARKER) == 1, 5000, "the new markers"));
    for (int k = 0; k < 3; k++)
        cycle(c, "after", 1000);
    char out[300] = "";
    for (int i = 0; i < 3; i++) {
        CHECK(ctl(out, sizeof out, "cmd %d GET %s", i, QKEY) == 0);
        if (strstr(out, "jumped"))
            fprintf(stderr, "node %d: %s\n", i, out);
        CHECK(strstr(out, "jumped") == NULL);
        CHECK(exists_on(i, QKEY) == 0);
    }
    redlock_client_free(d);
    redlock_client_free(c);
    all_nodes("FLUSHALL");
}

/* The release on a thread of its own: its outcome is checked after the join
 * (the checks' counters are the main thread's). */
struct release_later {
    redlock_lock *lock;
    int after_ms;
    double at_ms;
    int rc;
};

static void *release_later(void *arg)
{
    struct release_later *r = arg;
    msleep(r->after_ms);
    r->at_ms = now_ms();
    r->rc = redlock_lock_release(r->lock);
    return NULL;
}

/* Node 2 out of the vote. Client a, whose grant from node 2 told it so,
 * holds X; client b waits for X with wake-up and has seen only refusals,
 * node 2's among them (the case of the Node.js election test that waited
 * 3 s for a hand-over). a's release wakes b at once: a node out of the vote
 * is no failing node, and a client that counted it as one woke nobody for
 * the whole quarantine while the other clients' waiters slept on to their
 * fallback (the holder's expiry, at most 5 s). */
static void test_quarantine_still_wakes(void)
{
    /* b does not check the nodes: on 3 nodes a client that does learns of
     * node 2 from its first round, while on 5 a round decided without
     * node 2's reply leaves it as unaware as b is here */
    redlock_client *a = client_with(REDLOCK_OPT_WAKE),
                   *b = client_with(REDLOCK_OPT_WAKE | REDLOCK_OPT_NO_QUARANTINE);
    settle_markers(a);
    cycle(a, "long-ttl", 10000);   /* recorded: a quarantine of ~10 s */
    flush_and_find_out(a, 1000);
    const char *x = uniq("wake-x");
    redlock_lock *held, *waiter;
    CHECK_RC(redlock_try_acquire(&held, a, x, 10000), 0);
    CHECK(redlock_lock_node_result(held, 2, NULL, NULL, NULL, 0) == REDLOCK_NODE_QUARANTINED);
    /* b's wait: refused everywhere, registered, asleep for a wake-up by the
     * time a releases (1.5 s: its listeners are up) */
    struct release_later rel = { held, 1500, 0, -1 };
    pthread_t t;
    CHECK(pthread_create(&t, NULL, release_later, &rel) == 0);
    CHECK_RC(redlock_lock_new(&waiter, b, x), 0);
    CHECK_LOCK_RC(waiter, redlock_lock_acquire(waiter, 10000, 8000), 0);
    double got = now_ms();
    pthread_join(t, NULL);
    CHECK_RC(rel.rc, 0);
    fprintf(stderr, "quarantine_still_wakes: acquired %.0f ms after the release\n", got - rel.at_ms);
    CHECK(got - rel.at_ms < 1000);
    CHECK_LOCK_RC(waiter, redlock_lock_release(waiter), 0);
    redlock_lock_free(waiter);
    redlock_lock_free(held);
    redlock_client_free(b);
    redlock_client_free(a);
    all_nodes("FLUSHALL");
}

int main(void)
{
    load_nodes();
    if (t_nurls != 3) {
        fprintf(stderr, "test_quarantine needs 3 nodes\n");
        return 2;
    }
    run_test("new_deployment", test_new_deployment);
    run_test("restart_double_grant", test_restart_double_grant);
    run_test("minority_costs_nothing", test_minority_costs_nothing);
    run_test("flushall", test_flushall);
    run_test("bound", test_bound);
    run_test("plain_check", test_plain_check);
    run_test("many", test_many);
    run_test("quarantine_ttl_option", test_quarantine_ttl_option);
    run_test("remade_marker_no_jump", test_remade_marker_no_jump);
    run_test("quarantine_still_wakes", test_quarantine_still_wakes);
    return finish_tests();
}
