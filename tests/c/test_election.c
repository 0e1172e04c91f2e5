/* SPDX-License-Identifier: BSD-3-Clause */
/* test_election.c: leader election (redlock_election_*) on real nodes:
 * campaign, proclaim only by the leader, resign and hand-over, leader()
 * read from a majority (none, some, never a minority's), observe seeing
 * every change in order, terms strictly increasing, a killed leader's
 * successor after its TTL, loss reported, and bad input. */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static redlock_client *client(void)
{
    return make_client(t_nurls, NULL);
}

static redlock_leader read_leader(redlock_election *e)
{
    redlock_leader w = { .version = REDLOCK_LEADER_VERSION };
    int rc = redlock_election_leader(e, &w);
    CHECK_RC(rc, 0);
    if (rc)
        fprintf(stderr, "  leader: %s\n", redlock_election_errmsg(e));
    return w;
}

static void test_campaign_proclaim_resign(void)
{
    redlock_client *a = client(), *b = client();
    const char *name = uniq("elect");
    redlock_election *ea, *eb, *obs;
    CHECK_RC(redlock_election_new(&ea, a, name), 0);
    CHECK_RC(redlock_election_new(&eb, b, name), 0);
    CHECK_RC(redlock_election_new(&obs, b, name), 0);

    redlock_leader w = read_leader(obs);
    CHECK(!w.present && w.term == 0 && w.value[0] == '\0');

    CHECK_RC(redlock_election_campaign(ea, "alpha", 10000, REDLOCK_WAIT_NONE), 0);
    uint64_t t1 = redlock_election_term(ea);
    CHECK(t1 >= 1);
    CHECK(redlock_election_is_leader(ea));
    CHECK_RC(redlock_election_campaign(ea, "again", 10000, REDLOCK_WAIT_NONE), REDLOCK_ESTATE);
    w = read_leader(obs);
    CHECK(w.present && w.term == t1 && w.revision == 1 && strcmp(w.value, "alpha") == 0 && w.value_len == 5);

    /* A second campaigner is refused while alpha leads, and cannot proclaim. */
    CHECK_RC(redlock_election_campaign(eb, "beta", 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK(!redlock_election_is_leader(eb) && redlock_election_term(eb) == 0);
    CHECK_RC(redlock_election_proclaim(eb, "beta"), REDLOCK_ESTATE);
    CHECK_RC(redlock_election_resign(eb), REDLOCK_ESTATE);
    w = read_leader(obs);
    CHECK(w.present && strcmp(w.value, "alpha") == 0);

    CHECK_RC(redlock_election_proclaim(ea, "alpha-2"), 0);
    w = read_leader(obs);
    CHECK(w.present && w.term == t1 && w.revision == 2 && strcmp(w.value, "alpha-2") == 0);
    CHECK(redlock_election_term(ea) == t1);

    CHECK_RC(redlock_election_resign(ea), 0);
    CHECK(!redlock_election_is_leader(ea) && redlock_election_term(ea) == 0);
    CHECK_RC(redlock_election_proclaim(ea, "late"), REDLOCK_ESTATE);
    CHECK_RC(redlock_election_resign(ea), REDLOCK_ESTATE);
    w = read_leader(obs);
    CHECK(!w.present && w.term == t1 && w.value[0] == '\0');

    CHECK_RC(redlock_election_campaign(eb, "beta", 10000, REDLOCK_WAIT_NONE), 0);
    uint64_t t2 = redlock_election_term(eb);
    CHECK(t2 > t1);
    w = read_leader(obs);
    CHECK(w.present && w.term == t2 && w.revision == 1 && strcmp(w.value, "beta") == 0);
    /* The record's old owner cannot touch it: alpha's late proclaim is refused. */
    CHECK_RC(redlock_election_proclaim(ea, "stale"), REDLOCK_ESTATE);
    CHECK_RC(redlock_election_resign(eb), 0);

    redlock_election_free(ea);
    redlock_election_free(eb);
    redlock_election_free(obs);
    redlock_client_free(a);
    redlock_client_free(b);
}

/* ---- hand-over: campaigners blocked in campaign get it when the leader resigns ---- */

typedef struct campaigner {
    redlock_client *c;
    const char *name;
    char value[32];
    int rc;
    uint64_t term;
    _Atomic int done;
    redlock_election *e;
} campaigner;

static void *campaign_thread(void *arg)
{
    campaigner *k = arg;
    k->rc = redlock_election_campaign(k->e, k->value, 10000, REDLOCK_WAIT_FOREVER);
    k->term = redlock_election_term(k->e);
    atomic_store(&k->done, 1);
    return NULL;
}

static void test_hand_over(void)
{
    enum { N = 4 };
    const char *name = uniq("handover");
    redlock_client *c = client();
    redlock_election *first;
    CHECK_RC(redlock_election_new(&first, c, name), 0);
    CHECK_RC(redlock_election_campaign(first, "first", 10000, REDLOCK_WAIT_NONE), 0);
    uint64_t last = redlock_election_term(first);

    campaigner k[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&k[i], 0, sizeof k[i]);
        k[i].c = client();
        snprintf(k[i].value, sizeof k[i].value, "c%d", i);
        CHECK_RC(redlock_election_new(&k[i].e, k[i].c, name), 0);
        pthread_create(&th[i], NULL, campaign_thread, &k[i]);
    }
    msleep(100);
    for (int i = 0; i < N; i++)
        CHECK(!atomic_load(&k[i].done));   /* nobody leads beside first */
    CHECK_RC(redlock_election_resign(first), 0);

    /* Each new leader resigns in turn; every campaign returns once, with a
     * term above every earlier one. */
    int led[N] = { 0 };
    for (int round = 0; round < N; round++) {
        int who = -1;
        EVENTUALLY(({
            for (int i = 0; i < N && who < 0; i++)
                if (atomic_load(&k[i].done) && !led[i])
                    who = i;
            who >= 0;
        }), 20000, "the next leader");
        if (who < 0)
            break;
        led[who] = 1;
        CHECK_RC(k[who].rc, 0);
        CHECK(k[who].term > last);
        last = k[who].term;
        int leaders = 0;
        for (int i = 0; i < N; i++)
            leaders += redlock_election_is_leader(k[i].e);
        CHECK(leaders == 1);
        redlock_leader w = read_leader(first);
        CHECK(w.present && w.term == k[who].term && strcmp(w.value, k[who].value) == 0);
        CHECK_RC(redlock_election_resign(k[who].e), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CHECK(led[i]);
        redlock_election_free(k[i].e);
        redlock_client_free(k[i].c);
    }
    redlock_election_free(first);
    redlock_client_free(c);
}

/* ---- observe: every change, in order ---- */

#define MAX_SEEN 64
typedef struct observer {
    redlock_election *e;
    redlock_leader seen[MAX_SEEN];
    _Atomic int n;
    int rc;
} observer;

static void *observe_thread(void *arg)
{
    observer *o = arg;
    redlock_leader cur = { .version = REDLOCK_LEADER_VERSION };
    for (;;) {
        int rc = redlock_election_observe(o->e, &cur, REDLOCK_WAIT_FOREVER);
        if (rc) {
            o->rc = rc;
            return NULL;
        }
        int n = atomic_load(&o->n);
        if (n == MAX_SEEN)
            return NULL;
        o->seen[n] = cur;
        atomic_store(&o->n, n + 1);
    }
}

/* Whether the observer's last state is (present, term, revision). */
static int saw(observer *o, int present, uint64_t term, uint64_t revision)
{
    int n = atomic_load(&o->n);
    if (!n)
        return 0;
    const redlock_leader *s = &o->seen[n - 1];
    return s->present == present && s->term == term && (!present || s->revision == revision);
}

static void test_observe(void)
{
    const char *name = uniq("observe");
    redlock_client *c = client(), *oc = client();
    redlock_election *a, *b;
    CHECK_RC(redlock_election_new(&a, c, name), 0);
    CHECK_RC(redlock_election_new(&b, c, name), 0);
    observer o;
    memset(&o, 0, sizeof o);
    CHECK_RC(redlock_election_new(&o.e, oc, name), 0);
    pthread_t th;
    pthread_create(&th, NULL, observe_thread, &o);

    CHECK_RC(redlock_election_campaign(a, "a1", 10000, REDLOCK_WAIT_NONE), 0);
    uint64_t ta = redlock_election_term(a);
    CHECK(EVENTUALLY(saw(&o, 1, ta, 1), 10000, "the first leader"));
    const char *vals[] = { "a2", "a3", "a4" };
    for (int i = 0; i < 3; i++) {
        CHECK_RC(redlock_election_proclaim(a, vals[i]), 0);
        CHECK(EVENTUALLY(saw(&o, 1, ta, (uint64_t)i + 2), 10000, "a proclaim"));
    }
    CHECK_RC(redlock_election_resign(a), 0);
    CHECK(EVENTUALLY(saw(&o, 0, ta, 0), 10000, "none after resign"));
    CHECK_RC(redlock_election_campaign(b, "b1", 10000, REDLOCK_WAIT_NONE), 0);
    uint64_t tb = redlock_election_term(b);
    CHECK(EVENTUALLY(saw(&o, 1, tb, 1), 10000, "the second leader"));
    /* The next leader straight after a resign: the observer may coalesce
     * the "none" in between, never reorder. */
    CHECK_RC(redlock_election_resign(b), 0);
    CHECK_RC(redlock_election_campaign(a, "a-again", 10000, REDLOCK_WAIT_NONE), 0);
    uint64_t ta2 = redlock_election_term(a);
    CHECK(ta2 > tb && tb > ta);
    CHECK(EVENTUALLY(saw(&o, 1, ta2, 1), 10000, "the third leader"));

    redlock_election_cancel(o.e);
    pthread_join(th, NULL);
    CHECK_RC(o.rc, REDLOCK_ECANCELED);

    /* The sequence: a1 a2 a3 a4 none b1 [none] a-again, terms never back. */
    int n = atomic_load(&o.n);
    const char *want[] = { "a1", "a2", "a3", "a4", "", "b1" };
    CHECK(n == 7 || n == 8);
    for (int i = 0; i < 6 && i < n; i++) {
        CHECK(strcmp(o.seen[i].value, want[i]) == 0);
        CHECK(o.seen[i].present == (i != 4));
    }
    CHECK(n >= 7 && strcmp(o.seen[n - 1].value, "a-again") == 0);
    for (int i = 1; i < n; i++) {
        const redlock_leader *p = &o.seen[i - 1], *s = &o.seen[i];
        CHECK(s->term >= p->term);
        if (s->term == p->term && s->present && p->present)
            CHECK(s->revision > p->revision);
        if (s->term == p->term)
            CHECK(!(s->present && !p->present));   /* none after T comes after T's revisions */
    }
    CHECK_RC(redlock_election_resign(a), 0);

    /* Observe from the current state with no change: a timeout. */
    redlock_election_cancel_reset(o.e);
    redlock_leader cur = read_leader(o.e);
    CHECK_RC(redlock_election_observe(o.e, &cur, 200), REDLOCK_ETIMEDOUT);
    CHECK_RC(redlock_election_observe(o.e, &cur, REDLOCK_WAIT_NONE), REDLOCK_ETIMEDOUT);
    /* An observer is woken by the changes (its client's default options):
     * it listened on every node, rather than polling, which can miss a
     * "none" shorter than its poll. */
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(redlock_client_listener_state(oc, i, NULL, 0) != REDLOCK_LISTENER_OFF);

    redlock_election_free(a);
    redlock_election_free(b);
    redlock_election_free(o.e);
    redlock_client_free(c);
    redlock_client_free(oc);

    /* Unless the client said REDLOCK_OPT_NO_WAKE: then it polls. */
    redlock_options po;
    redlock_options_init(&po);
    po.flags = REDLOCK_OPT_NO_WAKE;
    redlock_client *pc = make_client(t_nurls, &po);
    redlock_election *pe;
    CHECK_RC(redlock_election_new(&pe, pc, name), 0);
    cur = read_leader(pe);
    CHECK_RC(redlock_election_observe(pe, &cur, 200), REDLOCK_ETIMEDOUT);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(redlock_client_listener_state(pc, i, NULL, 0) == REDLOCK_LISTENER_OFF);
    redlock_election_free(pe);
    redlock_client_free(pc);
}

/* ---- a leader that dies: the next campaign wins after the TTL, with a higher term ---- */

static void test_leader_killed(void)
{
    const char *name = uniq("killed");
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        redlock_client *c = client();
        redlock_election *e;
        int rc = redlock_election_new(&e, c, name);
        if (rc == 0)
            rc = redlock_election_campaign(e, "doomed", 1000, REDLOCK_WAIT_NONE);
        char ok = rc == 0 ? 'y' : 'n';
        ssize_t w = write(pipefd[1], &ok, 1);
        (void)w;
        for (;;)
            pause();   /* leading, auto-extended, until killed */
    }
    close(pipefd[1]);
    char ok = 0;
    CHECK(read(pipefd[0], &ok, 1) == 1 && ok == 'y');
    close(pipefd[0]);

    redlock_client *c = client();
    redlock_election *e;
    CHECK_RC(redlock_election_new(&e, c, name), 0);
    redlock_leader w = read_leader(e);
    CHECK(w.present && strcmp(w.value, "doomed") == 0);
    uint64_t dead_term = w.term;
    /* Alive, it keeps the lead past its TTL: auto-extended. */
    CHECK_RC(redlock_election_campaign(e, "heir", 10000, 1500), REDLOCK_ETIMEDOUT);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CHECK_RC(redlock_election_campaign(e, "heir", 10000, 10000), 0);
    CHECK(redlock_election_term(e) > dead_term);
    w = read_leader(e);
    CHECK(w.present && strcmp(w.value, "heir") == 0 && w.term > dead_term);
    CHECK_RC(redlock_election_resign(e), 0);
    redlock_election_free(e);
    redlock_client_free(c);
}

/* ---- loss: reported through the lost callback; a minority is never the leader ---- */

static _Atomic int lost_code;
static void *_Atomic lost_ud;
/* On the auto-extend thread: records only; the main thread checks. */
static void on_lost(redlock_lock *lock, int code, const char *msg, void *ud)
{
    (void)lock; (void)msg;
    atomic_store(&lost_ud, ud);
    atomic_store(&lost_code, code);
}

static void test_loss_and_minority(void)
{
    const char *name = uniq("loss");
    redlock_client *c = client();
    redlock_election *e, *obs;
    CHECK_RC(redlock_election_new(&e, c, name), 0);
    CHECK_RC(redlock_election_new(&obs, c, name), 0);
    CHECK_RC(redlock_election_on_lost(e, on_lost, &lost_code), 0);
    CHECK_RC(redlock_election_campaign(e, "v", 900, REDLOCK_WAIT_NONE), 0);
    uint64_t term = redlock_election_term(e);
    CHECK(key_on_every_node(t_nurls, name));
    /* The lock gone from a majority (one node short of a quorum keeps it):
     * the record there is not reported. */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "DEL %s", name);
    size_t quorum = t_nurls / 2 + 1;
    for (size_t i = 0; i < quorum; i++)
        CHECK(node_int((int)i, cmd) == 1);
    redlock_leader w = read_leader(obs);
    CHECK(!w.present && w.term == term);
    CHECK(EVENTUALLY(atomic_load(&lost_code) != 0, 5000, "the lost callback"));
    CHECK(atomic_load(&lost_ud) == &lost_code);
    CHECK(atomic_load(&lost_code) == REDLOCK_ELOST || atomic_load(&lost_code) == REDLOCK_EEXPIRED);
    CHECK(!redlock_election_is_leader(e));
    CHECK(redlock_election_term(e) == 0);
    CHECK_RC(redlock_election_proclaim(e, "after"), REDLOCK_ESTATE);
    CHECK(redlock_election_resign(e) != 0);
    redlock_election_free(e);
    redlock_election_free(obs);
    redlock_client_free(c);
}

/* ---- bad input ---- */

static void test_bad_input(void)
{
    redlock_client *c = client();
    redlock_election *e = NULL;
    CHECK_RC(redlock_election_new(NULL, c, "x"), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_new(&e, NULL, "x"), REDLOCK_EINVAL);
    CHECK(e == NULL);
    CHECK_RC(redlock_election_new(&e, c, NULL), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_new(&e, c, ""), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_new(&e, c, "x:fencing"), REDLOCK_EINVAL);
    char *huge = malloc(REDLOCK_MAX_RESOURCE_LEN + 2);
    memset(huge, 'n', REDLOCK_MAX_RESOURCE_LEN + 1);
    huge[REDLOCK_MAX_RESOURCE_LEN + 1] = '\0';
    CHECK_RC(redlock_election_new(&e, c, huge), REDLOCK_EINVAL);
    CHECK(e == NULL);
    free(huge);

    CHECK_RC(redlock_election_new(&e, c, uniq("bad")), 0);
    char big[REDLOCK_ELECTION_MAX_VALUE + 2];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_RC(redlock_election_campaign(e, big, 10000, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK(strstr(redlock_election_errmsg(e), "over the limit") != NULL);
    CHECK_RC(redlock_election_campaign(e, NULL, 10000, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_campaign(e, "v", 0, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_campaign(e, "v", 10000, -7), REDLOCK_EINVAL);
    CHECK(!redlock_election_is_leader(e));
    CHECK_RC(redlock_election_campaign(NULL, "v", 10000, 0), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_proclaim(NULL, "v"), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_resign(NULL), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_leader(NULL, NULL), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_leader(e, NULL), REDLOCK_EINVAL);
    redlock_leader w = { .version = 0 };
    CHECK_RC(redlock_election_leader(e, &w), REDLOCK_EINVAL);
    w.version = REDLOCK_LEADER_VERSION;
    CHECK_RC(redlock_election_observe(e, &w, -5), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_observe(e, NULL, 0), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_on_lost(NULL, NULL, NULL), REDLOCK_EINVAL);

    /* A value of exactly the limit is a leader's value. */
    big[REDLOCK_ELECTION_MAX_VALUE] = '\0';
    CHECK_RC(redlock_election_campaign(e, big, 10000, REDLOCK_WAIT_NONE), 0);
    w = read_leader(e);
    CHECK(w.present && w.value_len == REDLOCK_ELECTION_MAX_VALUE && memcmp(w.value, big, w.value_len) == 0);
    CHECK_RC(redlock_election_proclaim(e, big), 0);
    big[REDLOCK_ELECTION_MAX_VALUE] = 'v';
    CHECK_RC(redlock_election_proclaim(e, big), REDLOCK_EINVAL);
    CHECK_RC(redlock_election_resign(e), 0);

    /* Cancel: sticky until reset, for campaign and observe. */
    redlock_election_cancel(e);
    CHECK_RC(redlock_election_campaign(e, "v", 10000, REDLOCK_WAIT_FOREVER), REDLOCK_ECANCELED);
    CHECK_RC(redlock_election_observe(e, &w, REDLOCK_WAIT_FOREVER), REDLOCK_ECANCELED);
    redlock_election_cancel_reset(e);
    CHECK_RC(redlock_election_campaign(e, "v", 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_election_resign(e), 0);

    /* A corrupt record is an error, never a leader. */
    const char *name = uniq("corrupt");
    redlock_election *x;
    CHECK_RC(redlock_election_new(&x, c, name), 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "HSET %s:leader t notanumber", name);
    for (size_t i = 0; i < t_nurls; i++)
        node_int((int)i, cmd);
    w.version = REDLOCK_LEADER_VERSION;
    int rc = redlock_election_leader(x, &w);
    CHECK(rc == REDLOCK_ESERVER || rc == REDLOCK_ENOQUORUM);
    CHECK(strstr(redlock_election_errmsg(x), "not a number") != NULL);
    redlock_election_free(x);

    redlock_election_free(e);
    redlock_election_free(NULL);
    redlock_election_cancel(NULL);
    CHECK(!redlock_election_is_leader(NULL) && redlock_election_term(NULL) == 0);
    CHECK(redlock_election_lock(NULL) == NULL);
    redlock_client_free(c);
}

/* ---- through FCALL: the function library carries the election's script ---- */

static void test_functions(void)
{
    redlock_client *c = make_functions_client();
    redlock_election *e, *obs;
    const char *name = uniq("fcall");
    CHECK_RC(redlock_election_new(&e, c, name), 0);
    CHECK_RC(redlock_election_new(&obs, c, name), 0);
    CHECK_RC(redlock_election_campaign(e, "f1", 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_RC(redlock_election_proclaim(e, "f2"), 0);
    redlock_leader w = read_leader(obs);
    CHECK(w.present && w.revision == 2 && strcmp(w.value, "f2") == 0 && w.term == redlock_election_term(e));
    CHECK_RC(redlock_election_resign(e), 0);
    redlock_election_free(e);
    redlock_election_free(obs);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    run_test("campaign_proclaim_resign", test_campaign_proclaim_resign);
    run_test("hand_over", test_hand_over);
    run_test("observe", test_observe);
    run_test("leader_killed", test_leader_killed);
    run_test("loss_and_minority", test_loss_and_minority);
    run_test("bad_input", test_bad_input);
    run_test("functions", test_functions);
    return finish_tests();
}
