/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rwlock.c: the read-write lock (docs/algorithm.md, "Read-write
 * locks") on real nodes: readers share, a writer excludes readers, writers
 * and mutex holders, writers are preferred, a dead writer's intent lapses,
 * downgrade, no upgrade, an honest ELOST, extension and auto-extension of
 * a reader, fencing, FCALL, bad input, and the lone reader's form of the
 * key turning into the shared one. */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static redlock_client *rw_client(uint32_t flags)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = flags;
    return make_client(t_nurls, &o);
}

static redlock_lock *side(redlock_client *c, const char *res, int write)
{
    redlock_lock *l = NULL;
    CHECK_RC(write ? redlock_lock_new_write(&l, c, res) : redlock_lock_new_read(&l, c, res), 0);
    return l;
}

/* How many nodes have key (the resource and a suffix). */
static int nodes_with(const char *res, const char *suffix)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "EXISTS %s%s", res, suffix);
    int n = 0;
    for (size_t i = 0; i < t_nurls; i++)
        n += node_int((int)i, cmd) == 1;
    return n;
}

static void test_readers_share(void)
{
    redlock_client *a = rw_client(0), *b = rw_client(0);
    const char *res = uniq("share");
    redlock_lock *r[6];
    for (int i = 0; i < 6; i++) {
        r[i] = side(i % 2 ? a : b, res, 0);
        CHECK_LOCK_RC(r[i], redlock_lock_acquire(r[i], 10000, REDLOCK_WAIT_NONE), 0);
        CHECK(redlock_lock_is_held(r[i]));
    }
    redlock_lock *w = side(a, res, 1), *m = NULL;
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_RC(redlock_lock_new(&m, b, res), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    for (int i = 0; i < 6; i++) {
        CHECK_LOCK_RC(r[i], redlock_lock_release(r[i]), 0);
        /* readers are left until the last one: the key stays */
        if (i < 5)
            CHECK(nodes_with(res, "") * 2 > (int)t_nurls);
        redlock_lock_free(r[i]);
    }
    CHECK(EVENTUALLY(nodes_with(res, "") == 0 && nodes_with(res, ":rd") == 0, 3000, "the readers' keys gone"));
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(m, redlock_lock_release(m), 0);
    redlock_lock_free(w);
    redlock_lock_free(m);
    redlock_client_free(a);
    redlock_client_free(b);
}

static void test_writer_excludes(void)
{
    redlock_client *c = rw_client(0);
    const char *res = uniq("excl");
    redlock_lock *w = side(c, res, 1), *w2 = side(c, res, 1), *r = side(c, res, 0), *m = NULL;
    CHECK_RC(redlock_lock_new(&m, c, res), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(w2, redlock_lock_acquire(w2, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK(!redlock_lock_is_held(r) && !redlock_lock_is_held(w2));
    /* a mutex holder excludes both sides too */
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(m, redlock_lock_release(m), 0);
    /* a waiting reader gets in once the writer leaves */
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 10000, 5000), 0);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    redlock_lock_free(w);
    redlock_lock_free(w2);
    redlock_lock_free(r);
    redlock_lock_free(m);
    redlock_client_free(c);
}

typedef struct waiter_arg {
    redlock_lock *lock;
    int64_t wait_ms;
    int rc;
} waiter_arg;

static void *wait_acquire(void *p)
{
    waiter_arg *a = p;
    a->rc = redlock_lock_acquire(a->lock, 10000, a->wait_ms);
    return NULL;
}

/* A reader holds; a writer waits (its intent is left on the nodes); a new
 * reader is refused although only readers hold; the reader's release lets
 * the writer in, before the new reader. */
static void test_writer_preference(void)
{
    redlock_client *c = rw_client(0), *d = rw_client(0);
    const char *res = uniq("pref");
    redlock_lock *r1 = side(c, res, 0), *r2 = side(d, res, 0), *w = side(d, res, 1);
    CHECK_LOCK_RC(r1, redlock_lock_acquire(r1, 20000, REDLOCK_WAIT_NONE), 0);
    waiter_arg wa = { w, 15000, 1 };
    pthread_t t;
    pthread_create(&t, NULL, wait_acquire, &wa);
    CHECK(EVENTUALLY(nodes_with(res, ":wi") * 2 > (int)t_nurls, 5000, "the writer's intent"));
    CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    /* a waiting reader behind the writer */
    waiter_arg ra = { r2, 15000, 1 };
    pthread_t t2;
    pthread_create(&t2, NULL, wait_acquire, &ra);
    msleep(300);
    CHECK(!redlock_lock_is_held(r2));
    CHECK_LOCK_RC(r1, redlock_lock_release(r1), 0);
    pthread_join(t, NULL);
    CHECK_RC(wa.rc, 0);
    CHECK(redlock_lock_is_held(w));
    CHECK(!redlock_lock_is_held(r2));   /* the writer holds: the reader still waits */
    /* the writer's intent went with its grant (on a node the grant was
     * decided without, once it gets there) */
    CHECK(EVENTUALLY(nodes_with(res, ":wi") == 0, 900, "the intent gone"));
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    pthread_join(t2, NULL);
    CHECK_RC(ra.rc, 0);
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), 0);
    redlock_lock_free(r1);
    redlock_lock_free(r2);
    redlock_lock_free(w);
    redlock_client_free(c);
    redlock_client_free(d);
}

/* A writer that gives up takes its intent back: readers get in at once (the
 * withdrawal goes ahead of the next attempt on each connection of the
 * client). A writer that dies while waiting leaves its intent, which lapses
 * within RL_RW_INTENT_MS (1 s): readers get in again while another reader
 * still holds. */
static void test_dead_intent(void)
{
    redlock_client *c = rw_client(0);
    const char *res = uniq("intent");
    redlock_lock *r1 = side(c, res, 0), *r2 = side(c, res, 0), *w = side(c, res, 1);
    CHECK_LOCK_RC(r1, redlock_lock_acquire(r1, 30000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, 500), REDLOCK_ETIMEDOUT);
    CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), 0);

    pid_t pid = fork();
    if (pid == 0) {
        /* the writer that dies: its own client, waiting until killed */
        redlock_client *cc = make_client(t_nurls, NULL);
        redlock_lock *ww = NULL;
        redlock_lock_new_write(&ww, cc, res);
        redlock_lock_acquire(ww, 10000, 60000);
        _exit(3);
    }
    CHECK(pid > 0);
    CHECK(EVENTUALLY(nodes_with(res, ":wi") * 2 > (int)t_nurls, 5000, "the writer's intent"));
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st));
    char cmd[300];
    snprintf(cmd, sizeof cmd, "PTTL %s:wi", res);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(node_int((int)i, cmd) <= 1000);    /* the bound: never more than the intent's PX */
    int rc = redlock_lock_acquire(r2, 10000, REDLOCK_WAIT_NONE);
    if (rc == 0) {
        /* A slow run (sanitizers, a loaded machine) can reach this line
         * after the intent lapsed: then it must be gone from a majority. */
        CHECK(nodes_with(res, ":wi") * 2 <= (int)t_nurls);
    } else {
        CHECK_LOCK_RC(r2, rc, REDLOCK_ENOTACQUIRED);
        CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 10000, 5000), 0);
    }
    CHECK(redlock_lock_is_held(r1));
    CHECK(nodes_with(res, ":wi") == 0);
    CHECK_LOCK_RC(r1, redlock_lock_release(r1), 0);
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), 0);
    redlock_lock_free(r1);
    redlock_lock_free(r2);
    redlock_lock_free(w);
    redlock_client_free(c);
}

static void test_downgrade(void)
{
    redlock_client *c = rw_client(0);
    const char *res = uniq("down");
    redlock_lock *w = side(c, res, 1), *r = side(c, res, 0), *w2 = side(c, res, 1);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(w, redlock_lock_downgrade(w), 0);
    CHECK(redlock_lock_is_held(w));
    CHECK(redlock_lock_validity_ms(w) > 5000);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 10000, REDLOCK_WAIT_NONE), 0);     /* readers share now */
    CHECK_LOCK_RC(w2, redlock_lock_acquire(w2, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    /* once a reader, never a writer again: a second downgrade is an upgrade's refusal */
    CHECK_LOCK_RC(w, redlock_lock_downgrade(w), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(w), "never upgraded") != NULL);
    CHECK_LOCK_RC(w, redlock_lock_extend(w, 8000), 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    CHECK_LOCK_RC(w2, redlock_lock_acquire(w2, 10000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    CHECK_LOCK_RC(w2, redlock_lock_acquire(w2, 10000, 5000), 0);
    /* a downgrade of a lost writer is refused, and the lock is not held */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "DEL %s", res);
    CHECK(key_on_every_node(t_nurls, res));
    for (size_t i = 0; i < t_nurls; i++)
        node_int((int)i, cmd);
    CHECK_LOCK_RC(w2, redlock_lock_downgrade(w2), REDLOCK_ELOST);
    CHECK(!redlock_lock_is_held(w2));
    CHECK(EVENTUALLY(nodes_with(res, "") == 0 && nodes_with(res, ":rd") == 0, 3000, "nothing left behind"));
    redlock_lock_free(w);
    redlock_lock_free(r);
    redlock_lock_free(w2);
    redlock_client_free(c);
}

static void test_refused_input(void)
{
    redlock_client *c = rw_client(0);
    redlock_lock *l = (redlock_lock *)1;
    CHECK_RC(redlock_lock_new_read(NULL, c, "x"), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new_write(NULL, c, "x"), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new_read(&l, NULL, "x"), REDLOCK_EINVAL);
    CHECK(l == NULL);
    CHECK_RC(redlock_lock_new_write(&l, c, NULL), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_new_read(&l, c, ""), REDLOCK_EINVAL);
    char huge[REDLOCK_MAX_RESOURCE_LEN + 2];
    memset(huge, 'a', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    CHECK_RC(redlock_lock_new_write(&l, c, huge), REDLOCK_EINVAL);
    CHECK_RC(redlock_lock_downgrade(NULL), REDLOCK_EINVAL);

    const char *res = uniq("input");
    redlock_lock *r = side(c, res, 0), *w = side(c, res, 1), *m = NULL;
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 0, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, REDLOCK_MAX_TTL_MS + 1, REDLOCK_WAIT_NONE), REDLOCK_EINVAL);
    CHECK_LOCK_RC(w, redlock_lock_downgrade(w), REDLOCK_ESTATE);      /* not held */
    CHECK_LOCK_RC(r, redlock_lock_release(r), REDLOCK_ESTATE);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 5000, REDLOCK_WAIT_NONE), REDLOCK_ESTATE);   /* held already */
    CHECK_LOCK_RC(r, redlock_lock_downgrade(r), REDLOCK_EINVAL);    /* no upgrade, no read downgrade */
    CHECK(strstr(redlock_lock_errmsg(r), "read lock") != NULL);
    CHECK(redlock_lock_is_held(r));    /* the refusal left it alone */
    CHECK_RC(redlock_lock_new(&m, c, uniq("mutex")), 0);
    CHECK_LOCK_RC(m, redlock_lock_acquire(m, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(m, redlock_lock_downgrade(m), REDLOCK_EINVAL);
    CHECK(strstr(redlock_lock_errmsg(m), "not a write lock") != NULL);
    CHECK_LOCK_RC(m, redlock_lock_release(m), 0);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    redlock_lock_free(r);
    redlock_lock_free(w);
    redlock_lock_free(m);
    redlock_client_free(c);
}

/* Release says ELOST when the lock was not ours on a majority: a reader
 * whose lease ran out, a reader whose keys were wiped, a wiped writer. */
static void test_release_lost(void)
{
    redlock_client *c = rw_client(0);
    const char *res = uniq("lost");
    redlock_lock *r = side(c, res, 0), *r2 = side(c, res, 0), *w = side(c, res, 1);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 300, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 10000, REDLOCK_WAIT_NONE), 0);
    msleep(600);   /* r's lease ran out, r2's runs: the key stays, r is not a reader any more */
    CHECK(!redlock_lock_is_held(r));
    CHECK_LOCK_RC(r, redlock_lock_release(r), REDLOCK_ELOST);
    CHECK_LOCK_RC(r2, redlock_lock_extend(r2, 10000), 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "DEL %s %s:rd", res, res);
    CHECK(key_on_every_node(t_nurls, res));
    for (size_t i = 0; i < t_nurls; i++)
        node_int((int)i, cmd);
    CHECK_LOCK_RC(r2, redlock_lock_extend(r2, 10000), REDLOCK_ELOST);
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), REDLOCK_ELOST);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(t_nurls, res));
    for (size_t i = 0; i < t_nurls; i++)
        node_int((int)i, cmd);
    CHECK_LOCK_RC(w, redlock_lock_release(w), REDLOCK_ELOST);
    redlock_lock_free(r);
    redlock_lock_free(r2);
    redlock_lock_free(w);
    redlock_client_free(c);
}

static void test_extend_reader(void)
{
    redlock_client *c = rw_client(0);
    const char *res = uniq("ext");
    redlock_lock *r = side(c, res, 0), *r2 = side(c, res, 0), *w = side(c, res, 1);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 1000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r, redlock_lock_extend(r, 8000), 0);
    CHECK(redlock_lock_validity_ms(r) > 1000);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "PTTL %s", res);
    int longer = 0;
    for (size_t i = 0; i < t_nurls; i++)
        longer += node_int((int)i, cmd) > 1000;   /* the key lasts as long as its longest reader */
    CHECK(longer * 2 > (int)t_nurls);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);

    /* auto-extension past several TTLs, with a writer kept out meanwhile */
    CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 600, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r2, redlock_lock_auto_extend(r2, 0, 0, NULL, NULL, NULL), 0);
    for (int k = 0; k < 4; k++) {
        msleep(400);
        CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    }
    CHECK(redlock_lock_is_held(r2));
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, 3000), 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    redlock_lock_free(r);
    redlock_lock_free(r2);
    redlock_lock_free(w);
    redlock_client_free(c);
}

/* Writers get increasing tokens; a reader gets the counter as it was: the
 * token of the last writer that committed before it. */
static void test_fencing(void)
{
    redlock_client *c = rw_client(REDLOCK_OPT_FENCING);
    const char *res = uniq("fence");
    redlock_lock *w = side(c, res, 1), *r = side(c, res, 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_fencing_token(r) == 0);   /* no writer yet */
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, REDLOCK_WAIT_NONE), 0);
    uint64_t t1 = redlock_lock_fencing_token(w);
    CHECK(t1 > 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_fencing_token(r) == t1);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK(redlock_lock_fencing_token(w) > t1);
    CHECK_LOCK_RC(w, redlock_lock_downgrade(w), 0);
    CHECK(redlock_lock_fencing_token(w) > t1);   /* the writer's token stays with the reader it became */
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    redlock_lock_free(w);
    redlock_lock_free(r);
    redlock_client_free(c);
}

/* With REDLOCK_OPT_FUNCTIONS the read-write scripts run as the "redlock"
 * library's functions. */
static void test_functions(void)
{
    redlock_client *c = rw_client(REDLOCK_OPT_FUNCTIONS);
    char err[256];
    CHECK_RC(redlock_client_load_functions(c, err, sizeof err), 0);
    const char *res = uniq("fcall");
    redlock_lock *r = side(c, res, 0), *r2 = side(c, res, 0), *w = side(c, res, 1);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(r, redlock_lock_extend(r, 5000), 0);
    CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), 0);
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, 3000), 0);
    CHECK_LOCK_RC(w, redlock_lock_downgrade(w), 0);
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    redlock_lock_free(r);
    redlock_lock_free(r2);
    redlock_lock_free(w);
    redlock_client_free(c);
}

/* The reply of a command on node i as text ("" if none). */
static void node_text(int i, const char *command, char *out, size_t size)
{
    if (ctl(out, size, "cmd %d %s", i, command) != 0)
        out[0] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
}

/* How many nodes hold key res in a reader's form: the lone reader's
 * ("readers:" and its value) when lone, the shared marker otherwise. */
static int nodes_in_form(const char *res, int lone)
{
    char cmd[300], out[256];
    snprintf(cmd, sizeof cmd, "GET %s", res);
    int n = 0;
    for (size_t i = 0; i < t_nurls; i++) {
        node_text((int)i, cmd, out, sizeof out);
        n += lone ? strncmp(out, "readers:", 8) == 0 && strlen(out) > 8 : strcmp(out, "readers") == 0;
    }
    return n;
}

/* A lone reader holds the key itself, as a mutex holder does, with no
 * sorted set; a second reader turns it into the shared form, in which the
 * first reader's lease still runs as long as it did; each form's release
 * and extension are honest. */
static void test_lone_and_shared(void)
{
    redlock_client *c = rw_client(0);
    const char *res = uniq("lone");
    redlock_lock *r1 = side(c, res, 0), *r2 = side(c, res, 0), *r3 = side(c, res, 0), *w = side(c, res, 1);
    char cmd[300];
    CHECK_LOCK_RC(r1, redlock_lock_acquire(r1, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(t_nurls, res));
    CHECK(nodes_in_form(res, 1) == (int)t_nurls);
    CHECK(nodes_with(res, ":rd") == 0);
    CHECK_LOCK_RC(r1, redlock_lock_extend(r1, 10000), 0);   /* the lone form's lease is the key's TTL */
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);

    /* a short second reader: the shared form, the key still covering r1 */
    CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 400, REDLOCK_WAIT_NONE), 0);
    CHECK(EVENTUALLY(nodes_in_form(res, 0) == (int)t_nurls, 3000, "the shared form on every node"));
    snprintf(cmd, sizeof cmd, "ZCARD %s:rd", res);
    int both = 0;
    for (size_t i = 0; i < t_nurls; i++)
        both += node_int((int)i, cmd) == 2;
    CHECK(both == (int)t_nurls);
    snprintf(cmd, sizeof cmd, "PTTL %s", res);
    int covers = 0;
    for (size_t i = 0; i < t_nurls; i++)
        covers += node_int((int)i, cmd) > 5000;
    CHECK(covers == (int)t_nurls);
    msleep(700);   /* r2's lease ran out; r1's runs, and keeps the writer out */
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 5000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), REDLOCK_ELOST);
    CHECK_LOCK_RC(r1, redlock_lock_extend(r1, 10000), 0);
    CHECK_LOCK_RC(r1, redlock_lock_release(r1), 0);
    CHECK(EVENTUALLY(nodes_with(res, "") == 0, 3000, "the key gone with the last reader"));

    /* a lone reader whose lease ran out: ELOST, and the key is free */
    CHECK_LOCK_RC(r3, redlock_lock_acquire(r3, 300, REDLOCK_WAIT_NONE), 0);
    msleep(600);
    CHECK_LOCK_RC(r3, redlock_lock_release(r3), REDLOCK_ELOST);

    /* a downgrade leaves a lone reader, which a second reader joins */
    CHECK_LOCK_RC(w, redlock_lock_acquire(w, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(w, redlock_lock_downgrade(w), 0);
    CHECK(EVENTUALLY(nodes_in_form(res, 1) == (int)t_nurls, 3000, "the downgraded writer a lone reader"));
    CHECK_LOCK_RC(r3, redlock_lock_acquire(r3, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(EVENTUALLY(nodes_in_form(res, 0) == (int)t_nurls, 3000, "two readers sharing"));
    CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
    CHECK(nodes_with(res, "") * 2 > (int)t_nurls);   /* r3 still reads */
    CHECK_LOCK_RC(r3, redlock_lock_release(r3), 0);
    CHECK(EVENTUALLY(nodes_with(res, "") == 0, 3000, "the key gone"));
    redlock_lock_free(r1);
    redlock_lock_free(r2);
    redlock_lock_free(r3);
    redlock_lock_free(w);
    redlock_client_free(c);
}

/* A read on a key of another type (here a sorted set, as another lock's
 * waiters' queue K:wq is) fails, and leaves the key as it was: MGET, which
 * the read scripts use, says nil of such a key, as of a free one. */
static void test_wrong_type(void)
{
    redlock_client *c = rw_client(0);
    const char *res = uniq("wrongtype");
    char cmd[300], out[64];
    snprintf(cmd, sizeof cmd, "ZADD %s 1 m", res);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(node_int((int)i, cmd) == 1);
    redlock_lock *r = side(c, res, 0), *r2 = side(c, res, 0);
    CHECK(redlock_lock_acquire(r, 5000, REDLOCK_WAIT_NONE) != 0);
    CHECK(!redlock_lock_is_held(r));
    redlock_client *cf = rw_client(REDLOCK_OPT_FENCING);   /* the full script: mode "Rc" */
    redlock_lock *rf = side(cf, res, 0);
    CHECK(redlock_lock_acquire(rf, 5000, REDLOCK_WAIT_NONE) != 0);
    snprintf(cmd, sizeof cmd, "TYPE %s", res);
    for (size_t i = 0; i < t_nurls; i++) {
        node_text((int)i, cmd, out, sizeof out);
        CHECK(strcmp(out, "zset") == 0);
    }
    snprintf(cmd, sizeof cmd, "DEL %s", res);
    for (size_t i = 0; i < t_nurls; i++)
        node_int((int)i, cmd);
    CHECK_LOCK_RC(r2, redlock_lock_acquire(r2, 5000, REDLOCK_WAIT_NONE), 0);
    CHECK_LOCK_RC(r2, redlock_lock_release(r2), 0);
    redlock_lock_free(r);
    redlock_lock_free(r2);
    redlock_lock_free(rf);
    redlock_client_free(c);
    redlock_client_free(cf);
}

/* ---- the lost callback of each kind of holder ---- */

typedef struct lost_box {
    atomic_int fired;
    atomic_int code;
    redlock_lock *_Atomic lock;   /* the lock the callback was told about */
} lost_box;

static void on_lost(redlock_lock *lock, int code, const char *message, void *userdata)
{
    (void)message;
    lost_box *b = userdata;
    atomic_store(&b->lock, lock);
    atomic_store(&b->code, code);
    atomic_fetch_add(&b->fired, 1);
}

/* Deletes res's key and the readers' leases on every node, once the key is
 * on each (the holder's SET to a node it did not wait for comes first). */
static void wipe(const char *res)
{
    CHECK(key_on_every_node(t_nurls, res));
    char cmd[300];
    snprintf(cmd, sizeof cmd, "DEL %s %s:rd", res, res);
    for (size_t i = 0; i < t_nurls; i++)
        CHECK(node_int((int)i, cmd) >= 1);
}

/* The lost callback fires with the holder's own lock, code ELOST, for a
 * lone reader, two sharing readers, a writer and a downgraded writer
 * whose keys vanish from every node; a holder whose keys stay is not told.
 * Auto-extension runs every TTL/3, so the loss is found within a TTL. */
static void test_lost_callback(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 300;   /* well under the TTL */
    redlock_client *c = make_client(t_nurls, &o);
    const char *lone_res = uniq("lost-lone"), *shared_res = uniq("lost-shared"), *w_res = uniq("lost-write"),
               *d_res = uniq("lost-down");
    redlock_lock *lone = side(c, lone_res, 0), *s1 = side(c, shared_res, 0), *s2 = side(c, shared_res, 0),
                 *w = side(c, w_res, 1), *d = side(c, d_res, 1);
    redlock_lock *all[5] = { lone, s1, s2, w, d };
    lost_box box[5];
    memset(box, 0, sizeof box);
    for (int k = 0; k < 5; k++) {
        CHECK_LOCK_RC(all[k], redlock_lock_acquire(all[k], 1500, REDLOCK_WAIT_NONE), 0);
        CHECK_RC(redlock_lock_auto_extend(all[k], 0, 0, on_lost, &box[k], NULL), 0);
    }
    CHECK_LOCK_RC(d, redlock_lock_downgrade(d), 0);   /* auto-extended on, as a reader now */
    CHECK(EVENTUALLY(nodes_in_form(d_res, 1) == (int)t_nurls, 3000, "the downgraded writer a lone reader"));
    CHECK(EVENTUALLY(nodes_in_form(shared_res, 0) == (int)t_nurls, 3000, "two readers sharing"));

    /* each resource in turn: only its holders are told, each of its own lock */
    const char *order[4] = { lone_res, shared_res, w_res, d_res };
    const int first[4] = { 0, 1, 3, 4 }, count[4] = { 1, 2, 1, 1 };
    for (int r = 0; r < 4; r++) {
        wipe(order[r]);
        for (int k = first[r]; k < first[r] + count[r]; k++) {
            CHECK(EVENTUALLY(atomic_load(&box[k].fired) > 0, 5000, "the lost callback"));
            CHECK(atomic_load(&box[k].fired) == 1);
            CHECK(atomic_load(&box[k].lock) == all[k]);
            CHECK_RC(atomic_load(&box[k].code), REDLOCK_ELOST);
            CHECK(!redlock_lock_is_held(all[k]));
            CHECK_LOCK_RC(all[k], redlock_lock_release(all[k]), REDLOCK_ELOST);
        }
        for (int k = first[r] + count[r]; k < 5; k++) {
            CHECK(atomic_load(&box[k].fired) == 0);
            CHECK(redlock_lock_is_held(all[k]));
        }
    }
    for (int k = 0; k < 5; k++)
        redlock_lock_free(all[k]);
    redlock_client_free(c);
}

/* ---- wake-up ---- */

static redlock_lock *_Atomic woken_watch;   /* the lock whose wake-ups are counted */
static atomic_int woken_events;
static void count_woken(const redlock_event *e, void *ud)
{
    (void)ud;
    if (e->type == REDLOCK_EVENT_WOKEN && e->lock == atomic_load(&woken_watch))
        atomic_fetch_add(&woken_events, 1);
}

/* A reader's release wakes the writer that waits for it (with
 * REDLOCK_OPT_WAKE; waiters poll by default): REDLOCK_EVENT_WOKEN for the
 * writer's lock, which then holds. The retry delay is long, but a waiting
 * writer comes back every third of its intent's life (333 ms) to keep
 * readers out, and such an attempt can come between the release and its
 * wake-up message and take the lock first: then that round saw no
 * wake-up, and another round follows; three rounds without one fail. */
static void test_release_wakes_writer(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_WAKE;
    o.on_event = count_woken;
    o.retry_delay_ms = 15000;
    o.retry_jitter_ms = 0;
    redlock_client *c = make_client(t_nurls, &o);
    int woken = 0;
    for (int round = 0; round < 3 && !woken; round++) {
        const char *res = uniq("wake-writer");
        redlock_lock *r = side(c, res, 0), *w = side(c, res, 1);
        CHECK_LOCK_RC(r, redlock_lock_acquire(r, 30000, REDLOCK_WAIT_NONE), 0);
        atomic_store(&woken_watch, w);
        atomic_store(&woken_events, 0);
        waiter_arg wa = { w, 20000, 1 };
        pthread_t t;
        pthread_create(&t, NULL, wait_acquire, &wa);
        /* listening and queued on every node before the release, which
         * would otherwise find nobody to wake */
        char zc[300];
        snprintf(zc, sizeof zc, "ZCARD %s:wq", res);
        for (size_t i = 0; i < t_nurls; i++) {
            CHECK(EVENTUALLY(redlock_client_listener_state(c, i, NULL, 0) == REDLOCK_LISTENER_READY, 20000,
                             "the writer's listener"));
            CHECK(EVENTUALLY(node_int((int)i, zc) >= 1, 20000, "the writer queued"));
        }
        CHECK(EVENTUALLY(nodes_with(res, ":wi") * 2 > (int)t_nurls, 5000, "the writer's intent"));
        CHECK(!redlock_lock_is_held(w));
        CHECK_LOCK_RC(r, redlock_lock_release(r), 0);
        pthread_join(t, NULL);
        CHECK_LOCK_RC(w, wa.rc, 0);
        CHECK(redlock_lock_is_held(w));
        woken = atomic_load(&woken_events) > 0;
        if (!woken)
            fprintf(stderr, "[%s] round %d: the writer got in by its own attempt before the wake-up\n", t_current,
                    round + 1);
        CHECK_LOCK_RC(w, redlock_lock_release(w), 0);
        redlock_lock_free(r);
        redlock_lock_free(w);
    }
    CHECK(woken);
    atomic_store(&woken_watch, NULL);
    redlock_client_free(c);
}

/* ---- a read attempt granted after its round was lost (the engine's late
 * replies) ---- */

/* Another owner holds nodes 0 and 1; node 2, free, is paused. A read
 * attempt is refused by 0 and 1 and so lost, decided without node 2, whose
 * request waits in its socket. Resumed, node 2 grants it, with a bare 1
 * (the read script's grant): the client reads that late reply and releases
 * the lease it left there, well before its 60 s TTL. Had the late grant
 * gone unrecognised, node 2 would hold a reader nobody uses until then. */
static void test_late_read_grant_released(void)
{
    if (t_nurls != 3) {
        fprintf(stderr, "[%s] needs 3 nodes: skipped\n", t_current);
        return;
    }
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 60000;   /* nothing waits for node 2 on a deadline */
    redlock_client *c = make_client(t_nurls, &o);
    /* the read scripts loaded on every node, the connections made */
    const char *warm_res = uniq("late-warm");
    redlock_lock *warm = side(c, warm_res, 0);
    CHECK_LOCK_RC(warm, redlock_lock_acquire(warm, 10000, REDLOCK_WAIT_NONE), 0);
    CHECK(key_on_every_node(t_nurls, warm_res));
    CHECK_LOCK_RC(warm, redlock_lock_release(warm), 0);
    CHECK(EVENTUALLY(nodes_with(warm_res, "") == 0, 5000, "the warm-up released everywhere"));

    const char *res = uniq("late-read");
    char cmd[300], out[256];
    snprintf(cmd, sizeof cmd, "SET %s someone-else PX 60000", res);
    for (int i = 0; i < 2; i++)
        CHECK(ctl(NULL, 0, "cmd %d %s", i, cmd) == 0);
    CHECK(ctl(NULL, 0, "pause 2") == 0);
    redlock_lock *r = side(c, res, 0);
    CHECK_LOCK_RC(r, redlock_lock_acquire(r, 60000, REDLOCK_WAIT_NONE), REDLOCK_ENOTACQUIRED);
    CHECK(!redlock_lock_is_held(r));
    int outcome = redlock_lock_node_result(r, 2, NULL, NULL, NULL, 0);
    CHECK(outcome == REDLOCK_NODE_NOT_WAITED || outcome == REDLOCK_NODE_NONE);
    CHECK(redlock_lock_node_result(r, 0, NULL, NULL, NULL, 0) == REDLOCK_NODE_REFUSED);
    CHECK(redlock_lock_node_result(r, 1, NULL, NULL, NULL, 0) == REDLOCK_NODE_REFUSED);
    CHECK(ctl(NULL, 0, "resume 2") == 0);
    /* node 2 runs the read now: its grant lands, then the release */
    snprintf(cmd, sizeof cmd, "EXISTS %s", res);
    CHECK(EVENTUALLY(node_int(2, cmd) == 0, 20000, "the late grant released on node 2"));
    snprintf(cmd, sizeof cmd, "GET %s", res);
    for (int i = 0; i < 2; i++) {
        node_text(i, cmd, out, sizeof out);
        CHECK(strcmp(out, "someone-else") == 0);   /* the other owner's keys untouched */
    }
    CHECK(nodes_with(res, ":rd") == 0);
    redlock_lock_free(r);
    redlock_lock_free(warm);
    redlock_client_free(c);
}

int main(void)
{
    load_nodes();
    run_test("readers_share", test_readers_share);
    run_test("writer_excludes", test_writer_excludes);
    run_test("writer_preference", test_writer_preference);
    run_test("dead_intent", test_dead_intent);
    run_test("downgrade", test_downgrade);
    run_test("refused_input", test_refused_input);
    run_test("release_lost", test_release_lost);
    run_test("extend_reader", test_extend_reader);
    run_test("fencing", test_fencing);
    run_test("functions", test_functions);
    run_test("lone_and_shared", test_lone_and_shared);
    run_test("wrong_type", test_wrong_type);
    run_test("lost_callback", test_lost_callback);
    run_test("release_wakes_writer", test_release_wakes_writer);
    run_test("late_read_grant_released", test_late_read_grant_released);
    return finish_tests();
}
