/* SPDX-License-Identifier: BSD-3-Clause */
/* test_report.c: the per-node report of a lock's last round and the
 * on_event metrics hook, on real nodes: every outcome a node can have
 * (OK, refused, error, down, timeout), node URLs with passwords masked, and
 * the events of acquire, retry, extend, release and loss. */
#include "testutil.h"

#include <pthread.h>

#define MAX_EV 256
static struct { int type, code, automatic, nodes_ok, quorum, node, node_outcome; uint32_t attempt;
                int64_t validity_ms; uint64_t token; char msg[200]; char res[64]; } evs[MAX_EV];
static int n_ev;
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_event(const redlock_event *ev, void *userdata)
{
    CHECK(userdata == (void *)&evs);
    CHECK(ev->message != NULL && ev->resource != NULL && ev->lock != NULL);
    /* read-only calls on the lock are allowed from the hook (the round's
     * thread holds the lock's mutex, which is recursive) */
    char m[32];
    CHECK(redlock_lock_node_result(ev->lock, 0, NULL, NULL, m, sizeof m) >= 0);
    (void)redlock_lock_is_held(ev->lock);
    pthread_mutex_lock(&ev_mu);
    if (n_ev < MAX_EV) {
        evs[n_ev].type = ev->type;
        evs[n_ev].code = ev->code;
        evs[n_ev].automatic = ev->automatic;
        evs[n_ev].nodes_ok = ev->nodes_ok;
        evs[n_ev].quorum = ev->quorum;
        evs[n_ev].node = (int)ev->node;
        evs[n_ev].node_outcome = ev->node_outcome;
        evs[n_ev].attempt = ev->attempt;
        evs[n_ev].validity_ms = ev->validity_ms;
        evs[n_ev].token = ev->fencing_token;
        snprintf(evs[n_ev].msg, sizeof evs[n_ev].msg, "%s", ev->message);
        snprintf(evs[n_ev].res, sizeof evs[n_ev].res, "%s", ev->resource);
        n_ev++;
    }
    pthread_mutex_unlock(&ev_mu);
}

static void reset_events(void)
{
    pthread_mutex_lock(&ev_mu);
    n_ev = 0;
    pthread_mutex_unlock(&ev_mu);
}

static int count(int type)
{
    int k = 0;
    pthread_mutex_lock(&ev_mu);
    for (int i = 0; i < n_ev; i++)
        k += evs[i].type == type;
    pthread_mutex_unlock(&ev_mu);
    return k;
}

static int find(int type)
{
    for (int i = 0; i < n_ev; i++)
        if (evs[i].type == type)
            return i;
    return -1;
}

static redlock_client *client(uint32_t flags, uint32_t retries)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = flags;
    o.retry_count = retries;
    o.retry_jitter_ms = 10;
    o.on_event = on_event;
    o.on_event_userdata = &evs;
    return make_client(t_nurls, &o);
}

static void test_all_ok(void)
{
    redlock_client *c = client(REDLOCK_OPT_FENCING, 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("ok")), 0);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(redlock_lock_node_result(l, i, NULL, NULL, NULL, 0) == REDLOCK_NODE_NONE);  /* no round yet */
    reset_events();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    /* Every node answered OK, except one the round had learnt to be slow
     * and did not wait for (a loaded machine). */
    int ok = 0;
    for (size_t i = 0; i < t_nurls; i++) {
        int code = -99;
        int64_t rtt = -1;
        char m[64] = "x";
        int o = redlock_lock_node_result(l, i, &code, &rtt, m, sizeof m);
        CHECK(o == REDLOCK_NODE_OK || o == REDLOCK_NODE_NOT_WAITED);
        if (o == REDLOCK_NODE_OK) {
            ok++;
            CHECK(code == 0 && rtt > 0 && m[0] == '\0');
        }
    }
    CHECK(ok >= (int)(t_nurls / 2 + 1));
    CHECK(redlock_lock_node_result(l, t_nurls, NULL, NULL, NULL, 0) == REDLOCK_EINVAL);
    CHECK(redlock_lock_node_result(NULL, 0, NULL, NULL, NULL, 0) == REDLOCK_EINVAL);
    int k = find(REDLOCK_EVENT_ACQUIRED);
    CHECK(k >= 0 && count(REDLOCK_EVENT_ACQUIRED) == 1);
    if (k >= 0) {
        CHECK(evs[k].attempt == 1 && evs[k].code == 0 && evs[k].automatic == 0);
        CHECK(evs[k].nodes_ok >= evs[k].quorum && evs[k].quorum == (int)(t_nurls / 2 + 1));
        /* what was left then, not less than what is left now: no guess at how long the round took */
        CHECK(evs[k].validity_ms >= redlock_lock_validity_ms(l) && evs[k].validity_ms < 10000);
        CHECK(evs[k].token == redlock_lock_fencing_token(l) && evs[k].token >= 1);
        CHECK(strcmp(evs[k].res, redlock_lock_resource(l)) == 0);
    }
    CHECK(count(REDLOCK_EVENT_NODE_ERROR) == 0);
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    CHECK(count(REDLOCK_EVENT_EXTENDED) == 1);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(count(REDLOCK_EVENT_RELEASED) == 1);
    /* The release round, decided once a quorum confirmed: every node was
     * sent the release, and the ones not waited for are all it leaves open. */
    ok = 0;
    for (size_t i = 0; i < t_nurls; i++) {
        int o = redlock_lock_node_result(l, i, NULL, NULL, NULL, 0);
        CHECK(o == REDLOCK_NODE_OK || o == REDLOCK_NODE_NOT_WAITED);
        ok += o == REDLOCK_NODE_OK;
    }
    CHECK(ok >= (int)(t_nurls / 2 + 1));
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_refused_and_retries(void)
{
    redlock_client *c = client(0, 2);
    const char *res = uniq("refused");
    redlock_lock *holder, *l;
    CHECK_RC(redlock_acquire(&holder, c, res, 10000), 0);
    CHECK_RC(redlock_lock_new(&l, c, res), 0);
    reset_events();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_DEFAULT), REDLOCK_ENOTACQUIRED);
    CHECK(count(REDLOCK_EVENT_ACQUIRE_FAILED) == 3);  /* one per attempt */
    int last = -1;
    for (int i = 0; i < n_ev; i++)
        if (evs[i].type == REDLOCK_EVENT_ACQUIRE_FAILED) {
            CHECK(evs[i].code == REDLOCK_ENOTACQUIRED && evs[i].attempt == (uint32_t)(last + 2));
            last = (int)evs[i].attempt - 1;
        }
    int refused = 0;
    for (size_t i = 0; i < t_nurls; i++) {
        char m[128];
        int o = redlock_lock_node_result(l, i, NULL, NULL, m, sizeof m);
        if (o == REDLOCK_NODE_REFUSED) {
            refused++;
            CHECK(strstr(m, "another owner") != NULL);
        }
    }
    CHECK(refused > (int)(t_nurls - (t_nurls / 2 + 1)));
    /* the holder loses its key behind its back: release reports the loss
     * (once the holder's SETs have all landed, so that the DELs come after) */
    CHECK(key_on_every_node(t_nurls, res));
    char del[200];
    for (size_t i = 0; i < t_nurls; i++) {
        snprintf(del, sizeof del, "cmd %zu DEL %s", i, res);
        CHECK(ctl(NULL, 0, "%s", del) == 0);
    }
    reset_events();
    CHECK_LOCK_RC(holder, redlock_lock_release(holder), REDLOCK_ELOST);
    int k = find(REDLOCK_EVENT_LOST);
    CHECK(k >= 0 && evs[k].code == REDLOCK_ELOST && evs[k].nodes_ok == 0);
    /* The release is decided once a quorum has said "not ours": the other
     * nodes may not have been waited for, but none can have confirmed. */
    refused = 0;
    for (size_t i = 0; i < t_nurls; i++) {
        int o = redlock_lock_node_result(holder, i, NULL, NULL, NULL, 0);
        CHECK(o == REDLOCK_NODE_REFUSED || o == REDLOCK_NODE_NOT_WAITED);
        refused += o == REDLOCK_NODE_REFUSED;
    }
    CHECK(refused >= (int)(t_nurls / 2 + 1));
    redlock_lock_free(holder);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_node_down(void)
{
    redlock_client *c = client(0, 0);
    size_t dead = t_nurls - 1;
    CHECK(ctl(NULL, 0, "kill %zu", dead) == 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("down")), 0);
    reset_events();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    /* decided at quorum, so the dead node is an error or not waited for */
    int code = 0;
    char m[160];
    int o = redlock_lock_node_result(l, dead, &code, NULL, m, sizeof m);
    CHECK(o == REDLOCK_NODE_ERROR || o == REDLOCK_NODE_NOT_WAITED);
    if (o == REDLOCK_NODE_ERROR) {
        CHECK(code == REDLOCK_EIO && strstr(m, "refused") != NULL);
        int k = find(REDLOCK_EVENT_NODE_ERROR);
        CHECK(k >= 0 && evs[k].node == (int)dead && evs[k].code == REDLOCK_EIO &&
              evs[k].node_outcome == REDLOCK_NODE_ERROR);
    }
    /* the release waits for every answering node: now the dead one has failed,
     * or is in reconnect backoff */
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    o = redlock_lock_node_result(l, dead, &code, NULL, m, sizeof m);
    CHECK(o == REDLOCK_NODE_ERROR || o == REDLOCK_NODE_DOWN);
    CHECK(code == REDLOCK_EIO && m[0] != '\0');
    CHECK(count(REDLOCK_EVENT_NODE_ERROR) >= 1);
    for (size_t i = 0; i < dead; i++) {
        int o2 = redlock_lock_node_result(l, i, NULL, NULL, NULL, 0);
        CHECK(o2 == REDLOCK_NODE_OK || o2 == REDLOCK_NODE_NOT_WAITED);
    }
    CHECK(ctl(NULL, 0, "restart %zu", dead) == 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_timeout(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 100;
    o.retry_count = 0;
    o.on_event = on_event;
    o.on_event_userdata = &evs;
    redlock_client *c = make_client(t_nurls, &o);
    CHECK(ctl(NULL, 0, "pause 0") == 0);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("slow")), 0);
    /* extend waits for the paused node up to its deadline (it was not suspect before) */
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    reset_events();
    CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
    int code = 0;
    int64_t rtt = 0;
    int out = redlock_lock_node_result(l, 0, &code, &rtt, NULL, 0);
    CHECK(out == REDLOCK_NODE_TIMEOUT || out == REDLOCK_NODE_NOT_WAITED);
    if (out == REDLOCK_NODE_TIMEOUT)
        CHECK(code == REDLOCK_ETIMEDOUT && rtt >= 100000);
    CHECK(ctl(NULL, 0, "resume 0") == 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
}

static void test_urls_masked(void)
{
    const char *urls[2] = { "redis://:s3cret@127.0.0.1:1", "redis://user:pw2@127.0.0.1:2/3" };
    redlock_client *c = NULL;
    CHECK_RC(redlock_client_new(&c, urls, 2, NULL), 0);
    CHECK(strstr(redlock_client_node_url(c, 0), "s3cret") == NULL &&
          strstr(redlock_client_node_url(c, 0), "127.0.0.1:1") != NULL);
    CHECK(strstr(redlock_client_node_url(c, 1), "pw2") == NULL &&
          strstr(redlock_client_node_url(c, 1), "127.0.0.1:2") != NULL);
    CHECK(strcmp(redlock_client_node_url(c, 2), "") == 0);
    CHECK(strcmp(redlock_client_node_url(NULL, 0), "") == 0);
    redlock_client_free(c);
}

static int freed;
static void *freed_arg;
static void free_userdata(void *userdata)
{
    freed++;
    freed_arg = userdata;
}

/* on_event_userdata_free runs once, when no event can follow: after the
 * client's last lock is freed, not at redlock_client_free. */
static void test_userdata_free(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.on_event = on_event;
    o.on_event_userdata = &evs;
    o.on_event_userdata_free = free_userdata;
    freed = 0;
    redlock_client *c = make_client(t_nurls, &o);
    redlock_lock *l;
    CHECK_RC(redlock_lock_new(&l, c, uniq("free")), 0);
    redlock_client_free(c);
    CHECK(freed == 0);
    reset_events();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK(count(REDLOCK_EVENT_RELEASED) == 1);   /* events still come */
    CHECK(freed == 0);
    redlock_lock_free(l);
    CHECK(freed == 1 && freed_arg == (void *)&evs);
    /* a failed creation leaves the userdata to the caller */
    const char *bad[1] = { "redis://" };
    redlock_client *c2 = NULL;
    CHECK_RC(redlock_client_new(&c2, bad, 1, &o), REDLOCK_EINVAL);
    CHECK(freed == 1);
}

int main(void)
{
    load_nodes();
    /* Quarantine off: a node it kills and restarts (timeout) comes back without its data
     * and would stay out of the vote (test_quarantine.c tests that). */
    t_no_quarantine = 1;
    run_test("all_ok", test_all_ok);
    run_test("refused_and_retries", test_refused_and_retries);
    run_test("node_down", test_node_down);
    run_test("timeout", test_timeout);
    run_test("urls_masked", test_urls_masked);
    run_test("userdata_free", test_userdata_free);
    return finish_tests();
}
