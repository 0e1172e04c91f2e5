/* SPDX-License-Identifier: BSD-3-Clause */
/* test_semaphore.c: the counting semaphore (redlock_lock_new_semaphore,
 * docs/algorithm.md "Counting semaphore") on real nodes: at most L holders,
 * the next one refused or waiting until a release wakes it, the limit kept
 * on the nodes (another limit is EINVAL naming both), several permits at
 * once, extend and auto-extend, an honest ELOST, fencing, FCALL, bad input,
 * and the 3-node, L = 2 interleaving that defeats a per-node count. */
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>

static redlock_lock *sem(redlock_client *c, const char *res, uint32_t limit, uint32_t permits)
{
    redlock_lock *l = NULL;
    char err[256];
    int rc = redlock_lock_open_semaphore(&l, c, res, limit, permits, err, sizeof err);
    CHECK_RC(rc, 0);
    if (rc) {
        fprintf(stderr, "  open_semaphore: %s\n", err);
        exit(1);
    }
    return l;
}

/* Slot keys of res that hold a value on node i. */
static int slots_held(int i, const char *res, uint32_t limit)
{
    int n = 0;
    char cmd[300];
    for (uint32_t s = 0; s < limit; s++) {
        snprintf(cmd, sizeof cmd, "EXISTS %s:s%u", res, s);
        n += node_int(i, cmd) == 1;
    }
    return n;
}

/* The tests laid out node by node need exactly 3: anything else fails,
 * saying why. */
static int three_nodes(const char *test)
{
    if (t_nurls == 3)
        return 1;
    printf("%s: needs exactly 3 nodes, has %zu: not run\n", test, t_nurls);
    CHECK(t_nurls == 3);
    return 0;
}

static void test_limit_holders(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    const char *res = uniq("sem-limit");
    enum { L = 3 };
    redlock_lock *h[L + 1];
    for (int k = 0; k <= L; k++)
        h[k] = sem(c, res, L, 1);
    for (int k = 0; k < L; k++)
        CHECK_LOCK_RC(h[k], redlock_lock_acquire(h[k], 10000, REDLOCK_WAIT_NONE), 0);
    /* every permit is taken: a try is refused, a short wait times out */
    CHECK_LOCK_RC(h[L], redlock_lock_acquire(h[L], 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK(strstr(redlock_lock_errmsg(h[L]), "no permit free") != NULL);
    CHECK_LOCK_RC(h[L], redlock_lock_acquire(h[L], 10000, 300), REDLOCK_ETIMEDOUT);
    CHECK(!redlock_lock_is_held(h[L]));
    int held = 0;
    for (int k = 0; k <= L; k++)
        held += redlock_lock_is_held(h[k]);
    CHECK(held == L);
    /* L keys on every node, one per holder: one slot each */
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, L) == L, 3000, "L slots held"));
    /* a release frees one permit, which the next acquire gets at once */
    CHECK_LOCK_RC(h[1], redlock_lock_release(h[1]), 0);
    CHECK_LOCK_RC(h[L], redlock_lock_acquire(h[L], 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(h[1], redlock_lock_acquire(h[1], 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    for (int k = 0; k <= L; k++) {
        if (redlock_lock_is_held(h[k]))
            CHECK_LOCK_RC(h[k], redlock_lock_release(h[k]), 0);
        redlock_lock_free(h[k]);
    }
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, L) == 0, 3000, "no slot left"));
    redlock_client_free(c);
}

/* Many acquisitions in a row on a free semaphore: each is one attempt, and
 * the slots asked for spread (a random start). */
static void test_free_permits_spread(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    const char *res = uniq("sem-spread");
    redlock_lock *h[10];
    for (int k = 0; k < 10; k++) {
        h[k] = sem(c, res, 10, 1);
        CHECK_LOCK_RC(h[k], redlock_lock_acquire(h[k], 10000, REDLOCK_WAIT_DEFAULT), 0);
    }
    redlock_lock *extra = sem(c, res, 10, 1);
    CHECK_LOCK_RC(extra, redlock_lock_acquire(extra, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    for (int k = 0; k < 10; k++) {
        CHECK_LOCK_RC(h[k], redlock_lock_release(h[k]), 0);
        redlock_lock_free(h[k]);
    }
    redlock_lock_free(extra);
    redlock_client_free(c);
}

static atomic_int woken_events;
static void count_woken(const redlock_event *e, void *ud)
{
    (void)ud;
    if (e->type == REDLOCK_EVENT_WOKEN)
        atomic_fetch_add(&woken_events, 1);
}

struct waiter_arg {
    redlock_lock *l;
    int rc;
    double took_ms;
};

static void *wait_for_permit(void *p)
{
    struct waiter_arg *a = p;
    double t0 = now_ms();
    a->rc = redlock_lock_acquire(a->l, 30000, 20000);
    a->took_ms = now_ms() - t0;
    return NULL;
}

static void test_release_wakes_waiter(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_WAKE;   /* opt-in */
    o.on_event = count_woken;
    /* Polling alone would wait retry_delay_ms between attempts: a long delay
     * leaves the wake-up as the only way to get the permit soon. */
    o.retry_delay_ms = 15000;
    o.retry_jitter_ms = 0;
    redlock_client *c = make_client(t_nurls, &o);
    const char *res = uniq("sem-wake");
    redlock_lock *a = sem(c, res, 2, 1), *b = sem(c, res, 2, 1), *w = sem(c, res, 2, 1);
    CHECK_LOCK_RC(a, redlock_lock_acquire(a, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(b, redlock_lock_acquire(b, 30000, REDLOCK_WAIT_NONE), 0);
    atomic_store(&woken_events, 0);
    struct waiter_arg arg = { w, -1, 0 };
    pthread_t t;
    pthread_create(&t, NULL, wait_for_permit, &arg);
    /* The waiter listens and is registered on every node before the release:
     * a release that comes first finds nobody to wake. */
    char zc[300];
    snprintf(zc, sizeof zc, "ZCARD %s:wq", res);
    for (size_t i = 0; i < t_nurls; i++) {
        CHECK(EVENTUALLY(redlock_client_listener_state(c, i, NULL, 0) == REDLOCK_LISTENER_READY, 20000,
                         "the waiter's listener"));
        CHECK(EVENTUALLY(node_int((int)i, zc) >= 1, 20000, "the waiter registered"));
    }
    CHECK(!redlock_lock_is_held(w));
    double t_rel = now_ms();
    CHECK_LOCK_RC(b, redlock_lock_release(b), 0);
    pthread_join(t, NULL);
    double after_release = now_ms() - t_rel;
    CHECK_LOCK_RC(w, arg.rc, 0);
    /* woken, not polling: the retry delay is 15 s and the holders' keys live 30 s */
    CHECK(atomic_load(&woken_events) >= 1);
    CHECK(after_release < 15000);
    CHECK(redlock_lock_is_held(a) && redlock_lock_is_held(w));
    CHECK_LOCK_RC(a, redlock_lock_release(a), 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_lock_free(w);
    redlock_client_free(c);
}

static void test_limit_mismatch(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    const char *res = uniq("sem-mismatch");
    redlock_lock *three = sem(c, res, 3, 1), *two = sem(c, res, 2, 1);
    CHECK_LOCK_RC(three, redlock_lock_acquire(three, 10000, REDLOCK_WAIT_NONE), 0);
    /* another limit while a permit is held: EINVAL naming both, even when waiting */
    CHECK_LOCK_RC(two, redlock_lock_acquire(two, 10000, 2000), REDLOCK_EINVAL);
    const char *m = redlock_lock_errmsg(two);
    CHECK(strstr(m, "limit of 3") != NULL && strstr(m, "not 2") != NULL);
    CHECK(!redlock_lock_is_held(two));
    /* the refused caller left nothing behind: still one slot held */
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, 3) == 1, 3000, "one slot"));
    /* once no permit is held, the next user's limit replaces it */
    CHECK_LOCK_RC(three, redlock_lock_release(three), 0);
    CHECK_LOCK_RC(two, redlock_lock_acquire(two, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(three, redlock_lock_acquire(three, 10000, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(three), "limit of 2") != NULL &&
          strstr(redlock_lock_errmsg(three), "not 3") != NULL);
    char cmd[300], out[64];
    snprintf(cmd, sizeof cmd, "cmd 0 GET %s:limit", res);
    CHECK(ctl(out, sizeof out, "%s", cmd) == 0 && atoi(out) == 2);
    CHECK_LOCK_RC(two, redlock_lock_release(two), 0);
    redlock_lock_free(three);
    redlock_lock_free(two);
    redlock_client_free(c);
}

static void test_several_permits(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    const char *res = uniq("sem-many");
    redlock_lock *x = sem(c, res, 5, 3), *y = sem(c, res, 5, 3), *z = sem(c, res, 5, 2), *u = sem(c, res, 5, 1);
    uint32_t lim = 0, per = 0;
    CHECK_RC(redlock_lock_semaphore_limit(x, &lim, &per), 0);
    CHECK(lim == 5 && per == 3);
    /* TTLs of 60 s: the checks between acquire and release may take a while on
     * a loaded machine (under ASan they took over 10 s once), and must not
     * see a permit expire */
    CHECK_LOCK_RC(x, redlock_lock_acquire(x, 60000, REDLOCK_WAIT_NONE), 0);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, 5) == 3, 3000, "three slots for one handle"));
    /* 2 left: 3 at once is refused (all or none, nothing left behind), 2 fit */
    CHECK_LOCK_RC(y, redlock_lock_acquire(y, 60000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(z, redlock_lock_acquire(z, 60000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(u, redlock_lock_acquire(u, 60000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, 5) == 5, 3000, "five slots"));
    /* extend and release act on every slot of a handle */
    CHECK_LOCK_RC(x, redlock_lock_extend(x, 20000), 0);
    CHECK(redlock_lock_validity_ms(x) > 10000 && redlock_lock_validity_ms(x) <= 20000);   /* the new TTL */
    CHECK_LOCK_RC(x, redlock_lock_release(x), 0);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, 5) == 2, 3000, "two slots"));
    CHECK_LOCK_RC(y, redlock_lock_acquire(y, 60000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(y, redlock_lock_release(y), 0);
    CHECK_LOCK_RC(z, redlock_lock_release(z), 0);
    redlock_lock_free(x);
    redlock_lock_free(y);
    redlock_lock_free(z);
    redlock_lock_free(u);
    redlock_client_free(c);
}

static void test_extend_autoextend(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    const char *res = uniq("sem-extend");
    redlock_lock *a = sem(c, res, 2, 1), *b = sem(c, res, 2, 1), *d = sem(c, res, 2, 1);
    CHECK_LOCK_RC(a, redlock_lock_acquire(a, 1000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(a, redlock_lock_extend(a, 8000), 0);
    CHECK(redlock_lock_validity_ms(a) > 5000);
    CHECK_LOCK_RC(b, redlock_lock_acquire(b, 600, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_lock_auto_extend(b, 0, 0, NULL, NULL, NULL), 0);
    msleep(1500);   /* more than twice b's TTL */
    CHECK(redlock_lock_is_held(a) && redlock_lock_is_held(b));
    /* both permits still taken on the nodes: a third is refused */
    CHECK_LOCK_RC(d, redlock_lock_acquire(d, 1000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_RC(redlock_lock_auto_extend_stop(b), 0);
    CHECK_LOCK_RC(b, redlock_lock_release(b), 0);
    CHECK_LOCK_RC(a, redlock_lock_release(a), 0);
    /* an expired permit is never extended */
    CHECK_LOCK_RC(d, redlock_lock_acquire(d, 300, REDLOCK_WAIT_NONE), 0);
    msleep(400);
    CHECK(redlock_lock_extend(d, 1000) != 0);
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_lock_free(d);
    redlock_client_free(c);
}

static void test_lost_honest(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    const char *res = uniq("sem-lost");
    redlock_lock *a = sem(c, res, 3, 1);
    CHECK_LOCK_RC(a, redlock_lock_acquire(a, 10000, REDLOCK_WAIT_NONE), 0);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, 3) == 1, 3000, "the slot on every node"));
    /* the permit's slot vanishes behind its back on every node */
    char cmd[300];
    for (size_t i = 0; i < t_nurls; i++)
        for (int s = 0; s < 3; s++) {
            snprintf(cmd, sizeof cmd, "DEL %s:s%d", res, s);
            node_int((int)i, cmd);
        }
    CHECK_LOCK_RC(a, redlock_lock_extend(a, 10000), REDLOCK_ELOST);
    CHECK_LOCK_RC(a, redlock_lock_release(a), REDLOCK_ELOST);
    CHECK(strstr(redlock_lock_errmsg(a), "no longer ours") != NULL);
    /* a slot taken over by someone else is lost too, not released */
    CHECK_LOCK_RC(a, redlock_lock_acquire(a, 10000, REDLOCK_WAIT_NONE), 0);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(EVENTUALLY(slots_held((int)i, res, 3) == 1, 3000, "the slot on every node"));
    for (size_t i = 0; i < t_nurls; i++)
        for (int s = 0; s < 3; s++) {
            snprintf(cmd, sizeof cmd, "SET %s:s%d someone-else XX PX 10000", res, s);
            node_int((int)i, cmd);
        }
    CHECK_LOCK_RC(a, redlock_lock_release(a), REDLOCK_ELOST);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(slots_held((int)i, res, 3) == 1);   /* the other owner's key stays */
    redlock_lock_free(a);
    redlock_client_free(c);
}

static void test_fencing(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_FENCING;
    redlock_client *c = make_client(t_nurls, &o);
    const char *res = uniq("sem-fence");
    redlock_lock *a = sem(c, res, 2, 1), *b = sem(c, res, 2, 1);
    uint64_t last = 0;
    for (int k = 0; k < 4; k++) {
        CHECK_LOCK_RC(a, redlock_lock_acquire(a, 10000, REDLOCK_WAIT_NONE), 0);
        CHECK_LOCK_RC(b, redlock_lock_acquire(b, 10000, REDLOCK_WAIT_NONE), 0);
        uint64_t ta = redlock_lock_fencing_token(a), tb = redlock_lock_fencing_token(b);
        CHECK(ta > last && tb > ta);   /* one counter per semaphore */
        last = tb;
        CHECK_LOCK_RC(a, redlock_lock_release(a), 0);
        CHECK_LOCK_RC(b, redlock_lock_release(b), 0);
    }
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_client_free(c);
}

static void test_functions(void)
{
    redlock_client *c = make_functions_client();
    const char *res = uniq("sem-fcall");
    redlock_lock *a = sem(c, res, 1, 1), *b = sem(c, res, 1, 1);
    CHECK_LOCK_RC(a, redlock_lock_acquire(a, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(b, redlock_lock_acquire(b, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(a, redlock_lock_extend(a, 10000), 0);
    CHECK_LOCK_RC(a, redlock_lock_release(a), 0);
    CHECK_LOCK_RC(b, redlock_lock_acquire(b, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(b, redlock_lock_release(b), 0);
    redlock_lock_free(a);
    redlock_lock_free(b);
    redlock_client_free(c);
}

static void test_bad_input(void)
{
    redlock_client *c = make_client(t_nurls, NULL);
    redlock_lock *l = (redlock_lock *)1;
    char err[256];
    CHECK_RC(redlock_lock_open_semaphore(&l, c, "x", 0, 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK(l == NULL && strstr(err, "limit is 0") != NULL);
    CHECK_RC(redlock_lock_open_semaphore(&l, c, "x", REDLOCK_MAX_SEM_LIMIT + 1, 1, err, sizeof err),
             REDLOCK_EINVAL);
    CHECK(strstr(err, "must be 1 to") != NULL);
    CHECK_RC(redlock_lock_open_semaphore(&l, c, "x", UINT32_MAX, 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_open_semaphore(&l, c, "x", 3, 0, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "0 permits") != NULL);
    CHECK_RC(redlock_lock_open_semaphore(&l, c, "x", 3, 4, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "4 permits") != NULL && strstr(err, "3") != NULL);
    CHECK_RC(redlock_lock_open_semaphore(&l, c, "", 3, 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK(strstr(err, "empty") != NULL);
    CHECK_RC(redlock_lock_open_semaphore(&l, NULL, "x", 3, 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_open_semaphore(NULL, c, "x", 3, 1, err, sizeof err), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new_semaphore(&l, c, NULL, 3, 1), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_semaphore_limit(NULL, NULL, NULL), REDLOCK_EINVAL);
    redlock_lock *m;
    CHECK_RC(redlock_lock_new(&m, c, "plain"), 0);
    CHECK_RC(redlock_lock_semaphore_limit(m, NULL, NULL), REDLOCK_EINVAL);   /* a mutex */
    redlock_lock_free(m);
    /* the largest limit works, and a permit of it is found */
    CHECK_RC(redlock_lock_new_semaphore(&l, c, uniq("sem-big"), REDLOCK_MAX_SEM_LIMIT, 2), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    CHECK_LOCK_RC(l, redlock_lock_release(l), REDLOCK_ESTATE);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 0, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    redlock_lock_free(l);
    redlock_client_free(c);
}

/* The interleaving of issue 24: limit 2 on 3 nodes, A and B on node 0, B
 * and C on node 1, A and C on node 2. A per-node counter taken on a
 * majority admits all three; slots cannot be laid out that way. */
static void test_interleaving_3_nodes_limit_2(void)
{
    if (!three_nodes("interleaving_3_nodes_limit_2"))
        return;
    const char *res = uniq("sem-interleave");
    const int L = 2;
    /* The per-node count: each client joins a node's count while it is
     * under L, and holds if it did so on a majority. */
    int count[3] = { 0, 0, 0 }, holders_counted = 0;
    const int visits[3][2] = { { 0, 2 }, { 0, 1 }, { 1, 2 } };   /* A, B, C */
    for (int who = 0; who < 3; who++) {
        int got = 0;
        for (int k = 0; k < 2; k++)
            if (count[visits[who][k]] < L) {
                count[visits[who][k]]++;
                got++;
            }
        holders_counted += got >= 2;
    }
    CHECK(holders_counted == 3);   /* the trap: three holders of a limit-2 semaphore */

    /* Ours, on the real nodes: A holds slot 0 on nodes 0 and 2, B slot 1 on
     * nodes 0 and 1, as the same visits leave them (written directly). */
    char cmd[300];
    const char *val[2] = { "w00000000000000000000000000000000000000aa", "w00000000000000000000000000000000000000bb" };
    const int slot_of[2] = { 0, 1 };
    for (int who = 0; who < 2; who++)
        for (int k = 0; k < 2; k++) {
            snprintf(cmd, sizeof cmd, "cmd %d SET %s:s%d %s PX 20000", visits[who][k], res, slot_of[who], val[who]);
            CHECK(ctl(NULL, 0, "%s", cmd) == 0);
        }
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "cmd %d SET %s:limit 2 PX 20000", i, res);
        CHECK(ctl(NULL, 0, "%s", cmd) == 0);
    }
    /* The same per-node count on these keys: nodes 1 and 2 hold one each,
     * under L, so C would count as a holder there, a majority. */
    int under = 0;
    for (int i = 0; i < 3; i++)
        under += slots_held(i, res, 2) < L;
    CHECK(under == 2);
    /* C, through the library: node 1 has slot 0 free, node 2 slot 1, node 0
     * none: no slot is free on a majority, so C is refused however it
     * asks, and retries change nothing while A and B hold. */
    redlock_client *c = make_client(3, NULL);
    redlock_lock *cl = sem(c, res, 2, 1);
    for (int k = 0; k < 5; k++)
        CHECK_LOCK_RC(cl, redlock_lock_acquire(cl, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK(!redlock_lock_is_held(cl));
    /* nothing of C's was left on the nodes: still only A's and B's keys */
    for (int i = 0; i < 3; i++)
        CHECK(EVENTUALLY(slots_held(i, res, 2) == (i == 0 ? 2 : 1), 3000, "only A's and B's slots"));
    /* Every layout of three holders on two slots puts two of them on the
     * same slot on the node they share: at most 2, whatever slots they pick. */
    int layouts_with_3 = 0;
    for (int sa = 0; sa < 2; sa++)
        for (int sb = 0; sb < 2; sb++)
            for (int sc = 0; sc < 2; sc++)
                layouts_with_3 += sa != sb && sb != sc && sa != sc;
    CHECK(layouts_with_3 == 0);
    /* Once A's slot expires (deleted here), C gets slot 0 on a majority. */
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "DEL %s:s0", res);
        node_int(i, cmd);
    }
    CHECK_LOCK_RC(cl, redlock_lock_acquire(cl, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(cl, redlock_lock_release(cl), 0);
    redlock_lock_free(cl);
    redlock_client_free(c);
}

/* Lays out res on 3 nodes, limit 3, held by a foreign value: node 0 has s0
 * free, node 1 s0 and s1, node 2 s1. */
static void lay_out_3(const char *res)
{
    const char *held[3] = { "s1 s2", "s2", "s0 s2" };
    char cmd[300];
    for (int i = 0; i < 3; i++) {
        char list[16];
        snprintf(list, sizeof list, "%s", held[i]);
        for (char *save = NULL, *k = strtok_r(list, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
            snprintf(cmd, sizeof cmd, "cmd %d SET %s:%s w0000000000000000000000000000000000000000 PX 60000", i, res, k);
            CHECK(ctl(NULL, 0, "%s", cmd) == 0);
        }
        snprintf(cmd, sizeof cmd, "cmd %d SET %s:limit 3 PX 60000", i, res);
        CHECK(ctl(NULL, 0, "%s", cmd) == 0);
    }
}

/* Several permits are granted all at once by each node: two slots each free
 * on a majority, but not together on one, are refused, and nothing of the
 * refused handle is left behind. */
static void test_permits_free_together(void)
{
    if (!three_nodes("permits_free_together"))
        return;
    const char *res = uniq("sem-together");
    lay_out_3(res);
    redlock_client *c = make_client(3, NULL);
    redlock_lock *two = sem(c, res, 3, 2), *one = sem(c, res, 3, 1);
    for (int k = 0; k < 5; k++)
        CHECK_LOCK_RC(two, redlock_lock_acquire(two, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    for (int i = 0; i < 3; i++)
        CHECK(EVENTUALLY(slots_held(i, res, 3) == (i == 1 ? 1 : 2), 3000, "only the keys laid out"));
    /* one permit is there to take, s0 on {0, 1} or s1 on {1, 2}, and a
     * single attempt takes it: a round refused by nodes 0 and 2, whose
     * lists name no common slot, waits for node 1's */
    for (int k = 0; k < 5; k++) {
        CHECK_LOCK_RC(one, redlock_lock_acquire(one, 10000, REDLOCK_WAIT_NONE), 0);
        CHECK_LOCK_RC(one, redlock_lock_release(one), 0);
    }
    redlock_lock_free(two);
    redlock_lock_free(one);
    redlock_client_free(c);
}

/* The node that knows where the free permit is answers last: node 1 (the
 * only one with both s0 and s1 free) is paused while the others refuse a
 * proposal of s2 and name s0 and s1 apart. The attempt waits for node 1,
 * within its node timeout, rather than giving up on two lists that share
 * no slot: each of ten tries with WAIT_NONE gets the permit (a proposal of
 * s2, the case this is about, comes a third of the time). */
static void test_slow_node_names_the_free_slot(void)
{
    if (!three_nodes("slow_node_names_the_free_slot"))
        return;
    const char *res = uniq("sem-slow-list");
    lay_out_3(res);
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 5000;   /* node 1's 300 ms pause is well inside it */
    redlock_client *c = make_client(3, &o);
    redlock_lock *one = sem(c, res, 3, 1);
    CHECK_LOCK_RC(one, redlock_lock_acquire(one, 10000, REDLOCK_WAIT_NONE), 0);   /* connections up */
    CHECK_LOCK_RC(one, redlock_lock_release(one), 0);
    for (int k = 0; k < 10; k++) {
        CHECK(ctl(NULL, 0, "cmd 1 CLIENT PAUSE 300 ALL") == 0);
        CHECK_LOCK_RC(one, redlock_lock_acquire(one, 10000, REDLOCK_WAIT_NONE), 0);
        if (redlock_lock_is_held(one))
            CHECK_LOCK_RC(one, redlock_lock_release(one), 0);
    }
    redlock_lock_free(one);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    run_test("interleaving_3_nodes_limit_2", test_interleaving_3_nodes_limit_2);
    run_test("limit_holders", test_limit_holders);
    run_test("free_permits_spread", test_free_permits_spread);
    run_test("release_wakes_waiter", test_release_wakes_waiter);
    run_test("limit_mismatch", test_limit_mismatch);
    run_test("several_permits", test_several_permits);
    run_test("permits_free_together", test_permits_free_together);
    run_test("slow_node_names_the_free_slot", test_slow_node_names_the_free_slot);
    run_test("extend_autoextend", test_extend_autoextend);
    run_test("lost_honest", test_lost_honest);
    run_test("fencing", test_fencing);
    run_test("functions", test_functions);
    run_test("bad_input", test_bad_input);
    return finish_tests();
}
