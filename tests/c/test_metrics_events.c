/* SPDX-License-Identifier: BSD-3-Clause */
/* test_metrics_events.c: what the metrics of docs/observability.md read from
 * the on_event hook, on real nodes: one REDLOCK_EVENT_ACQUIRE_DONE per acquire
 * call (its code, attempts and whole duration), held_us at the end of a hold
 * (once per hold), and node_rtts_us on the events of a round. */
#include "testutil.h"

#include <pthread.h>

#define MAX_EV 256
static struct { int type, code; uint32_t attempt; int64_t elapsed_us, held_us; int has_rtts, rtts_ok;
                char res[64]; } evs[MAX_EV];
static int n_ev;
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_event(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    pthread_mutex_lock(&ev_mu);
    if (n_ev < MAX_EV) {
        evs[n_ev].type = ev->type;
        evs[n_ev].code = ev->code;
        evs[n_ev].attempt = ev->attempt;
        evs[n_ev].elapsed_us = ev->elapsed_us;
        evs[n_ev].held_us = ev->held_us;
        evs[n_ev].has_rtts = ev->node_rtts_us != NULL;
        evs[n_ev].rtts_ok = 0;
        if (ev->node_rtts_us)
            for (size_t i = 0; i < ev->n_nodes; i++) {
                CHECK(ev->node_rtts_us[i] >= -1 && ev->node_rtts_us[i] < 10000000);
                evs[n_ev].rtts_ok += ev->node_rtts_us[i] >= 0;
            }
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

/* The index of the n-th event (from 0) of a type, or -1. */
static int nth(int type, int n)
{
    for (int i = 0; i < n_ev; i++)
        if (evs[i].type == type && n-- == 0)
            return i;
    return -1;
}

static redlock_client *client(uint32_t retries)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.retry_count = retries;
    o.retry_delay_ms = 1;
    o.retry_jitter_ms = 1;
    o.on_event = on_event;
    return make_client(t_nurls, &o);
}

static void test_acquire_done_and_held(void)
{
    redlock_client *c = client(2), *other = client(0);
    const char *name = uniq("done");
    redlock_lock *l, *h;
    CHECK_RC(redlock_lock_new(&l, c, name), 0);
    reset_events();
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    int k = nth(REDLOCK_EVENT_ACQUIRE_DONE, 0);
    CHECK(k >= 0 && nth(REDLOCK_EVENT_ACQUIRE_DONE, 1) < 0);
    if (k >= 0) {
        CHECK(evs[k].code == 0 && evs[k].attempt == 1 && evs[k].elapsed_us > 0 && !evs[k].has_rtts);
        CHECK(strcmp(evs[k].res, name) == 0);
        CHECK(k == n_ev - 1);  /* after the attempt it ends */
    }
    k = nth(REDLOCK_EVENT_ACQUIRED, 0);
    CHECK(k >= 0 && evs[k].has_rtts && evs[k].rtts_ok >= (int)(t_nurls / 2 + 1) && evs[k].held_us == 0);
    usleep(20000);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    k = nth(REDLOCK_EVENT_RELEASED, 0);
    CHECK(k >= 0 && evs[k].held_us >= 20000 && evs[k].has_rtts);

    /* Refused three times (retry_count 2): one ACQUIRE_DONE, after the third attempt. */
    CHECK_RC(redlock_lock_new(&h, other, name), 0);
    CHECK_LOCK_RC(h, redlock_lock_acquire(h, 10000, REDLOCK_WAIT_NONE), 0);
    reset_events();
    CHECK(redlock_lock_acquire(l, 10000, REDLOCK_WAIT_DEFAULT) == REDLOCK_ENOTACQUIRED);
    k = nth(REDLOCK_EVENT_ACQUIRE_DONE, 0);
    CHECK(k == n_ev - 1 && nth(REDLOCK_EVENT_ACQUIRE_FAILED, 2) >= 0);
    if (k >= 0)
        CHECK(evs[k].code == REDLOCK_ENOTACQUIRED && evs[k].attempt == 3);
    /* A wait that runs out: REDLOCK_ETIMEDOUT, its duration the whole wait. */
    reset_events();
    CHECK(redlock_lock_acquire(l, 10000, 50) == REDLOCK_ETIMEDOUT);
    k = nth(REDLOCK_EVENT_ACQUIRE_DONE, 0);
    CHECK(k >= 0 && evs[k].code == REDLOCK_ETIMEDOUT && evs[k].attempt >= 1 && evs[k].elapsed_us >= 50000);
    /* Refused arguments: one ACQUIRE_DONE, no attempt. */
    reset_events();
    CHECK(redlock_lock_acquire(l, 0, REDLOCK_WAIT_NONE) == REDLOCK_EINVAL);
    k = nth(REDLOCK_EVENT_ACQUIRE_DONE, 0);
    CHECK(k >= 0 && evs[k].code == REDLOCK_EINVAL && evs[k].attempt == 0);
    CHECK_LOCK_RC(h, redlock_lock_release(h), 0);

    /* A hold lost: its keys deleted behind its back (once its SETs have all
     * landed), the release reports LOST with the held time. A name of its
     * own: a release decided at quorum may still be deleting name's key on
     * a node. */
    const char *lost_name = uniq("lost");
    redlock_lock *lost;
    CHECK_RC(redlock_lock_new(&lost, c, lost_name), 0);
    CHECK_LOCK_RC(lost, redlock_lock_acquire(lost, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(t_nurls, lost_name));
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(ctl(NULL, 0, "cmd %zu DEL %s", i, lost_name) == 0);
    reset_events();
    CHECK_LOCK_RC(lost, redlock_lock_release(lost), REDLOCK_ELOST);
    k = nth(REDLOCK_EVENT_LOST, 0);
    CHECK(k >= 0 && evs[k].code == REDLOCK_ELOST && evs[k].held_us > 0 && evs[k].has_rtts);
    redlock_lock_free(lost);
    redlock_lock_free(l);
    redlock_lock_free(h);
    redlock_client_free(c);
    redlock_client_free(other);
}

int main(void)
{
    load_nodes();
    run_test("acquire_done_and_held", test_acquire_done_and_held);
    return finish_tests();
}
