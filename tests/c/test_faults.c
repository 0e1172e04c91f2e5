/* SPDX-License-Identifier: BSD-3-Clause */
/* test_faults.c: node kills, pauses and restarts on a 5-node cluster:
 * quorum with a minority down, prompt "no quorum" with a majority down,
 * deciding without a paused node, and reconnecting to a restarted one. */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>

static void test_minority_down(void)
{
    redlock_client *c = make_client(5, NULL);
    CHECK(ctl(NULL, 0, "kill 3") == 0);
    CHECK(ctl(NULL, 0, "kill 4") == 0);
    redlock_lock *l;
    const char *res = uniq("minority");
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    /* another client is still excluded by the surviving majority */
    redlock_lock *other = NULL;
    CHECK_RC(redlock_try_acquire(&other, c, res, 10000), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(keys_on(3) == 0);
    redlock_lock_free(l);
    CHECK(ctl(NULL, 0, "restart 3") == 0);
    CHECK(ctl(NULL, 0, "restart 4") == 0);
    redlock_client_free(c);
}

static void test_majority_down(void)
{
    redlock_client *c = make_client(5, NULL);
    for (int i = 2; i < 5; i++)
        CHECK(ctl(NULL, 0, "kill %d", i) == 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("majority")), 0);
    /* The TTL is long: a failure must come from the per-node timeouts, not
     * from waiting the TTL out. The bound is half the TTL, far from noise. */
    double t0 = now_ms();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 60000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(now_ms() - t0 < 30000);
    CHECK(strstr(redlock_lock_errmsg(l), "no quorum") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "onnection refused") != NULL);
    CHECK(!redlock_lock_is_held(l));
    /* the partial acquisition was released: the clean-up waits for no reply,
     * so wait for its effect (the keys would last the 60 s TTL otherwise) */
    CHECK(EVENTUALLY(keys_on(2) == 0, 20000, "the clean-up release on nodes 0 and 1"));
    /* with retries (the default 4 attempts), the answer names the nodes
     * that could not be reached, and comes as promptly */
    t0 = now_ms();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 60000, REDLOCK_WAIT_DEFAULT), REDLOCK_EUNREACHABLE);
    CHECK(now_ms() - t0 < 30000);
    CHECK(strstr(redlock_lock_errmsg(l), "3 of 5 nodes unreachable") != NULL);
    CHECK(strstr(redlock_lock_errmsg(l), "onnection refused") != NULL);
    for (int i = 2; i < 5; i++)
        CHECK(ctl(NULL, 0, "restart %d", i) == 0);
    /* recovery: reconnect backoff is at most a second */
    int rc = -1;
    for (int k = 0; k < 40 && rc != 0; k++) {
        rc = redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE);
        if (rc)
            msleep(100);
    }
    CHECK_LOCK_RC(l, rc, 0);
    CHECK_RC(redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_paused_node(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 5000;  /* waiting for the paused node would show */
    redlock_client *c = make_client(5, &o);
    redlock_lock *warm;
    CHECK_RC(redlock_try_acquire(&warm, c, uniq("warm"), 5000), 0);  /* pooled connections */
    CHECK_RC(redlock_lock_release(warm), 0);
    redlock_lock_free(warm);

    CHECK(ctl(NULL, 0, "pause 4") == 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("paused")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    /* validity = ttl - elapsed - drift (302 ms): had acquire waited for the
     * paused node's 5 s timeout, elapsed would exceed 2.5 s */
    CHECK(redlock_lock_validity_ms(l) > 30000 - 302 - 2500);
    /* extend and release wait for nodes that have been answering, up to
     * their timeout: the paused node costs one timeout here... */
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 30000), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    /* ...and from then on it is suspect, and nothing waits for it */
    CHECK_RC(redlock_lock_new(&l, c, uniq("paused2")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_validity_ms(l) > 30000 - 302 - 2500);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 30000), 0);
    CHECK(redlock_lock_validity_ms(l) > 30000 - 302 - 2500);
    double t0 = now_ms();
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(now_ms() - t0 < 2500);
    redlock_lock_free(l);
    CHECK(ctl(NULL, 0, "resume 4") == 0);
    redlock_client_free(c);

    /* a majority paused: "no quorum" after the per-node timeout */
    redlock_options_init(&o);
    o.node_timeout_ms = 100;
    c = make_client(5, &o);
    for (int i = 2; i < 5; i++)
        CHECK(ctl(NULL, 0, "pause %d", i) == 0);
    CHECK_RC(redlock_lock_new(&l, c, uniq("paused3")), 0);
    t0 = now_ms();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 60000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(now_ms() - t0 < 30000);
    CHECK(strstr(redlock_lock_errmsg(l), "no reply within") != NULL);
    for (int i = 2; i < 5; i++)
        CHECK(ctl(NULL, 0, "resume %d", i) == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_restart_reconnects(void)
{
    redlock_client *c = make_client(5, NULL);
    const char *res = uniq("restart");
    char exists[160];
    snprintf(exists, sizeof exists, "EXISTS %s", res);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    CHECK_RC(redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE), 0);
    /* decided at quorum: node 0's SET may still be on its way */
    CHECK(EVENTUALLY(node_int(0, exists) == 1, 10000, "the key on node 0"));
    CHECK_RC(redlock_lock_release(l), 0);
    /* node 0 restarts: every pooled connection to it is now dead */
    CHECK(ctl(NULL, 0, "kill 0") == 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_release(l), 0);
    CHECK(ctl(NULL, 0, "restart 0") == 0);
    int seen = 0;
    for (int k = 0; k < 50 && !seen; k++) {
        CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
        seen = node_int(0, exists) == 1;
        CHECK_RC(redlock_lock_release(l), 0);
        if (!seen)
            msleep(100);
    }
    CHECK(seen);  /* the same client talks to the restarted node again */
    /* restart while connections are pooled and healthy: no call fails,
     * and node 1 takes part again without waiting out a backoff */
    CHECK(ctl(NULL, 0, "restart 1") == 0);
    seen = 0;
    for (int k = 0; k < 5 && !seen; k++) {
        CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
        seen = node_int(1, exists) == 1;
        CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    }
    CHECK(seen);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* A node that stops after answering a request sent later than the oldest
 * one it owes (pipelined: the client sent R2, then read R1's reply) has
 * still stopped: its connection is dropped once it has said nothing for
 * the stall limit, as any silent one, and a new one opened for the next
 * rounds. Before, the late reply read as a sign of life for ever: the
 * connection stayed, owed more and more, and rounds found it full ("owes
 * 2048 replies: not answering") while the client's output buffer grew. */
static void test_stopped_after_answering(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 10;      /* a stall limit of 4 * 10 + 10 = 50 ms */
    o.connect_timeout_ms = 10;
    o.flags |= REDLOCK_OPT_NO_WAKE;
    o.retry_count = 0;
    redlock_client *c = make_client(5, &o);
    redlock_lock *warm;
    CHECK_RC(redlock_try_acquire(&warm, c, uniq("warm"), 5000), 0);  /* pooled connections */
    CHECK_RC(redlock_lock_release(warm), 0);
    redlock_lock_free(warm);

    /* R1: node 0 is stopped, so the round is decided without it and its
     * request stays owed; node 0 then runs it and answers into a socket
     * nobody reads yet. */
    const char *res1 = uniq("answered");
    char exists[200];
    snprintf(exists, sizeof exists, "EXISTS %s", res1);
    CHECK(ctl(NULL, 0, "pause 0") == 0);
    redlock_lock *r1;
    CHECK_RC(redlock_lock_new(&r1, c, res1), 0);
    int rc1 = redlock_lock_acquire(r1, 30000, REDLOCK_WAIT_NONE);
    CHECK(ctl(NULL, 0, "resume 0") == 0);
    CHECK(EVENTUALLY(node_int(0, exists) == 1, 10000, "node 0 ran the owed request"));
    CHECK(ctl(NULL, 0, "pause 0") == 0);
    /* R2 and the rounds after it: node 0 stopped for good. R2 is sent,
     * then R1's reply read, so the last reply is younger than the oldest
     * request owed. 1,500 cycles are 3,000 requests to node 0. */
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("stopped")), 0);
    int full = 0, ok = 0;
    char first_full[256] = "";
    for (int k = 0; k < 1500; k++) {
        if (redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE) != 0)
            continue;   /* a loaded machine: a healthy node late past 10 ms */
        ok++;
        char msg[256] = "";
        redlock_lock_node_result(l, 0, NULL, NULL, msg, sizeof msg);
        if (strstr(msg, "not answering") && !full++)
            snprintf(first_full, sizeof first_full, "%s", msg);
        redlock_lock_release(l);
    }
    CHECK(ok > 0);
    CHECK(full == 0);
    if (full)
        fprintf(stderr, "[%s] node 0, %d times: %s\n", t_current, full, first_full);
    CHECK(ctl(NULL, 0, "resume 0") == 0);
    if (rc1 == 0)
        redlock_lock_release(r1);
    redlock_lock_free(r1);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* An extension is not queued on a stopped node that does not even take
 * what is already queued: its socket is full (here 3,000 attempts with
 * 4,000-byte names, about 12 MB, more than loopback's buffers hold) and it
 * timed out since (an attempt that needed its vote). The round counts it
 * as failed without sending; the other nodes extend the lock. */
static void test_no_extension_queued_on_stopped_node(void)
{
    enum { M = 3000 };
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;   /* a stall limit of 8.2 s: the connection stays meanwhile */
    o.flags |= REDLOCK_OPT_NO_WAKE;
    o.retry_count = 0;
    redlock_client *c = make_client(5, &o);
    redlock_lock *warm;
    CHECK_RC(redlock_try_acquire(&warm, c, uniq("warm"), 5000), 0);  /* pooled connections */
    CHECK_RC(redlock_lock_release(warm), 0);
    redlock_lock_free(warm);

    static redlock_lock *l[M];
    static int res[M];
    static char name[REDLOCK_MAX_RESOURCE_LEN + 1];
    const char *base = uniq("fullsocket");
    for (int k = 0; k < M; k++) {
        snprintf(name, sizeof name, "%s:%d:", base, k);
        size_t len = strlen(name);
        memset(name + len, 'x', 4000 - len);
        name[4000] = '\0';
        CHECK_RC(redlock_lock_new(&l[k], c, name), 0);
    }
    /* Held on nodes 1 and 2 by someone else: an attempt needs node 0's vote. */
    const char *contested = uniq("contested");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "cmd %%d SET %s someone-else PX 60000", contested);
    for (int i = 1; i <= 2; i++)
        CHECK(ctl(NULL, 0, cmd, i) == 0);

    CHECK(ctl(NULL, 0, "pause 0") == 0);
    CHECK_RC(redlock_lock_acquire_many(c, l, M, 60000, res, NULL, 0), 0);
    int held = 0;
    for (int k = 0; k < M; k++)
        held += res[k] == 0;
    CHECK(held == M);
    redlock_lock *x;
    CHECK_RC(redlock_lock_new(&x, c, contested), 0);
    CHECK_LOCK_RC(x, redlock_lock_acquire(x, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOQUORUM);
    CHECK(redlock_lock_node_result(x, 0, NULL, NULL, NULL, 0) == REDLOCK_NODE_TIMEOUT);
    /* Now node 0 timed out and its socket is full: the extension skips it. */
    CHECK_LOCK_RC(l[0], redlock_lock_extend(l[0], 60000), 0);
    char msg[256] = "";
    int code = 0;
    CHECK(redlock_lock_node_result(l[0], 0, &code, NULL, msg, sizeof msg) == REDLOCK_NODE_ERROR);
    CHECK(code == REDLOCK_EIO);
    CHECK(strstr(msg, "not reading") != NULL);
    if (!strstr(msg, "not reading"))
        fprintf(stderr, "[%s] node 0 said: %s\n", t_current, msg);
    for (int i = 1; i < 5; i++)
        CHECK(redlock_lock_node_result(l[0], (size_t)i, NULL, NULL, NULL, 0) == REDLOCK_NODE_OK ||
              redlock_lock_node_result(l[0], (size_t)i, NULL, NULL, NULL, 0) == REDLOCK_NODE_NOT_WAITED);
    CHECK(ctl(NULL, 0, "resume 0") == 0);
    redlock_lock_free(x);
    for (int k = 0; k < M; k++)
        redlock_lock_free(l[k]);   /* no release: their keys expire, none is needed again */
    redlock_client_free(c);
}

/* The client closed while a node is paused with a backlog of SETs and the
 * releases behind them. When the node wakes it reads one buffer, runs it
 * and replies; had the client closed the connection already, the reset
 * its replies bring back makes the node drop the rest unread, releases
 * included, and our keys stay for their TTL. redlock_client_free waits
 * for what is owed up to the stall limit, paused node included. Node 4 is
 * stopped and continued here, by pid, for timing the harness's ctl (a
 * Python process) cannot give. */
static pid_t resume_pid;
static double resume_at_ms;

static void *resume_later(void *arg)
{
    (void)arg;
    double left = resume_at_ms - now_ms();
    if (left > 0)
        msleep((int)left);
    kill(resume_pid, SIGCONT);
    return NULL;
}

static void test_closed_while_paused(void)
{
    redlock_options o;
    redlock_options_init(&o);
    /* Stall limit 4 x 100 + 2000 = 2.4 s; a close that gave up after one
     * node timeout of silence would close at 0.1 s. */
    o.node_timeout_ms = 100;
    o.connect_timeout_ms = 2000;
    redlock_client *c = make_client(5, &o);
    redlock_lock *warm;
    CHECK_RC(redlock_try_acquire(&warm, c, uniq("warm"), 5000), 0);   /* pooled connections */
    CHECK_RC(redlock_lock_release(warm), 0);
    redlock_lock_free(warm);
    char out[64] = "";
    CHECK(ctl(out, sizeof out, "pid 4") == 0);
    resume_pid = (pid_t)atol(out);
    CHECK(resume_pid > 1);
    if (resume_pid <= 1) {
        redlock_client_free(c);
        return;
    }
    char base[64];
    snprintf(base, sizeof base, "closedpaused-%d", (int)getpid());
    CHECK(kill(resume_pid, SIGSTOP) == 0);
    double t0 = now_ms();
    int cycles = 0, bad = 0;
    /* 400 ms of cycles queue up on node 4 (the first release waits one
     * node timeout for it; after that nothing does). */
    while (now_ms() - t0 < 400 && cycles < 5000) {
        char name[128];
        snprintf(name, sizeof name, "%s-%d", base, cycles++);
        redlock_lock *l;
        if (redlock_lock_new(&l, c, name) != 0) {
            bad++;
            break;
        }
        bad += redlock_lock_acquire(l, 30000, REDLOCK_WAIT_NONE) != 0;
        bad += redlock_lock_is_held(l) && redlock_lock_release(l) != 0;
        redlock_lock_free(l);
    }
    CHECK(bad == 0);
    resume_at_ms = t0 + 900;   /* well after one node timeout, well before the stall limit */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, resume_later, NULL) == 0);
    double closing = now_ms();
    redlock_client_free(c);
    double took = now_ms() - closing;
    pthread_join(th, NULL);
    fprintf(stderr, "[%s] %d cycles queued on the paused node; closing took %.0f ms\n", t_current, cycles, took);
    /* It waited for the node (resumed at 0.9 s), not past the stall limit. */
    CHECK(took >= resume_at_ms - closing - 50);
    CHECK(took < 2400 + 1000);
    char count[200];
    snprintf(count, sizeof count, "EVAL \"return #redis.call('keys', '*%s-*')\" 0", base);
    CHECK(EVENTUALLY(node_int(4, count) == 0, 5000, "the releases queued behind the SETs on node 4"));
    long long left = node_int(4, count);
    if (left)
        fprintf(stderr, "[%s] %lld of %d keys left on node 4\n", t_current, left, cycles);
}

int main(void)
{
    load_nodes();
    /* Quarantine off: it restarts nodes without persistence to test reconnects; a restarted
     * node would otherwise stay out of the vote (test_quarantine.c). */
    t_no_quarantine = 1;
    if (t_nurls != 5) {
        fprintf(stderr, "test_faults needs 5 nodes\n");
        return 2;
    }
    run_test("minority_down", test_minority_down);
    run_test("majority_down", test_majority_down);
    run_test("paused_node", test_paused_node);
    run_test("closed_while_paused", test_closed_while_paused);
    run_test("restart_reconnects", test_restart_reconnects);
    run_test("stopped_after_answering", test_stopped_after_answering);
    run_test("no_extension_queued_on_stopped_node", test_no_extension_queued_on_stopped_node);
    return finish_tests();
}
