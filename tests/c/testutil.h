/* SPDX-License-Identifier: BSD-3-Clause */
/* testutil.h: a minimal test framework for the C tests, plus control of
 * the nodes started by tests/harness/nodes.py (exec mode) through its ctl CLI. */
#ifndef REDLOCK_TESTUTIL_H
#define REDLOCK_TESTUTIL_H

#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#define REDLOCK_EXPERIMENTAL   /* the tests cover both tiers */
#include "redlock.h"

static int t_failures, t_checks;
static const char *t_current = "";

#define CHECK(cond) do { t_checks++; if (!(cond)) { t_failures++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, t_current, #cond); } } while (0)
#define CHECK_RC(expr, want) do { int rc_ = (expr); t_checks++; if (rc_ != (want)) { t_failures++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s = %s (%d), want %s\n", __FILE__, __LINE__, t_current, #expr, \
            redlock_error_name(rc_), rc_, #want); } } while (0)
#define CHECK_LOCK_RC(lock, expr, want) do { int rc_ = (expr); t_checks++; if (rc_ != (want)) { t_failures++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s = %s, want %s; detail: %s\n", __FILE__, __LINE__, t_current, #expr, \
            redlock_error_name(rc_), #want, redlock_lock_errmsg(lock)); } } while (0)

typedef void (*test_fn)(void);
/* REDLOCK_TEST_ONLY=name runs that case of a file alone (to repeat it). */
static __attribute__((unused)) void run_test(const char *name, test_fn fn)
{
    const char *only = getenv("REDLOCK_TEST_ONLY");
    if (only && *only && strcmp(only, name) != 0)
        return;
    int before = t_failures;
    t_current = name;
    fprintf(stderr, "RUN  %s\n", name);
    fn();
    fprintf(stderr, "%s %s\n", t_failures == before ? "ok  " : "FAILED", name);
}
static __attribute__((unused)) int finish_tests(void)
{
    printf("%d checks: %d passed, %d failed\n", t_checks, t_checks - t_failures, t_failures);
    return t_failures ? 1 : 0;
}

/* Node URLs from the harness, split from REDLOCK_TEST_NODES. */
static char *t_urls[64];
static size_t t_nurls;
static __attribute__((unused)) void load_nodes(void)
{
    const char *env = getenv("REDLOCK_TEST_NODES");
    if (!env || !*env) {
        fprintf(stderr, "REDLOCK_TEST_NODES is not set: run under tests/harness/nodes.py exec\n");
        exit(2);
    }
    char *copy = strdup(env), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && t_nurls < 64; tok = strtok_r(NULL, ",", &save))
        t_urls[t_nurls++] = strdup(tok);
    free(copy);
}

/* Runs "nodes.py ctl ARGS", returns its exit status; output into out if given. */
static __attribute__((unused)) int ctl(char *out, size_t outsize, const char *fmt, ...)
{
    char args[512], cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    const char *py = getenv("REDLOCK_HARNESS_PY");
    if (!py) {
        fprintf(stderr, "REDLOCK_HARNESS_PY is not set\n");
        exit(2);
    }
    snprintf(cmd, sizeof cmd, "python3 '%s' ctl %s", py, args);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t used = 0;
    char buf[256];
    while (fgets(buf, sizeof buf, f)) {
        if (out && used + strlen(buf) < outsize) {
            memcpy(out + used, buf, strlen(buf) + 1);
            used += strlen(buf);
        }
    }
    if (out && outsize)
        out[used < outsize ? used : outsize - 1] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Integer reply of a command on node i, e.g. node_int(0, "EXISTS k"). */
static __attribute__((unused)) long long node_int(int i, const char *command)
{
    char out[256];
    if (ctl(out, sizeof out, "cmd %d %s", i, command) != 0)
        return -1;
    return atoll(out);
}

static __attribute__((unused)) void msleep(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

static __attribute__((unused)) double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Evaluates cond every 20 ms until it holds, for at most bound_ms; 1 if it
 * came true. For what happens after a call returns (a round decided at
 * quorum leaves commands to the nodes it did not wait for in flight, and a
 * failed attempt's clean-up waits for nothing): the bound only keeps a hung
 * test finite. Keep it well under the TTL of any key the condition waits to
 * see gone, so that expiry cannot pass for the event. */
#define EVENTUALLY(cond, bound_ms, what) __extension__({                               \
        double end_ = now_ms() + (bound_ms);                                          \
        int ok_ = 1;                                                                  \
        while (!(cond)) {                                                             \
            if (now_ms() > end_) {                                                    \
                fprintf(stderr, "[%s] gave up waiting %d ms for %s\n", t_current,      \
                        (int)(bound_ms), what);                                       \
                ok_ = 0;                                                              \
                break;                                                                \
            }                                                                         \
            msleep(20);                                                               \
        }                                                                             \
        ok_;                                                                          \
    })

/* Waits until key exists on each of the first n nodes; 1 if it does. A
 * round decided at quorum may leave its SET to a node it did not wait for on
 * the way: a test that then deletes or overwrites the key behind the lock's
 * back must come after that SET, not race it. */
static __attribute__((unused)) int key_on_every_node(size_t n, const char *key)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "EXISTS %s", key);
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= EVENTUALLY(node_int((int)i, cmd) == 1, 5000, "the key on every node");
    return ok;
}

/* The first node that said OK in the lock's last round, or -1: what that
 * node holds is determined, unlike a node the round was decided without. */
static __attribute__((unused)) int granted_node(const redlock_lock *l)
{
    int o;
    for (size_t i = 0; (o = redlock_lock_node_result(l, i, NULL, NULL, NULL, 0)) >= 0; i++)
        if (o == REDLOCK_NODE_OK)
            return (int)i;
    return -1;
}

/* Set by a test program that restarts nodes without persistence to test
 * something else (reconnects, reports): its clients leave the quarantine
 * off (REDLOCK_OPT_NO_QUARANTINE), or a restarted node would stay out of
 * the vote. test_quarantine.c tests the quarantine itself. */
static int t_no_quarantine;

static __attribute__((unused)) redlock_client *make_client(size_t n, const redlock_options *opts)
{
    redlock_client *c = NULL;
    char err[512];
    redlock_options roomy;
    if (!opts) {
        /* Tests that don't exercise timeouts must not fail on a loaded
         * machine or under sanitizers: give the nodes a generous deadline. */
        redlock_options_init(&roomy);
        roomy.node_timeout_ms = 2000;
    } else {
        roomy = *opts;
    }
    if (t_no_quarantine)
        roomy.flags |= REDLOCK_OPT_NO_QUARANTINE;
    opts = &roomy;
    int rc = redlock_client_open(&c, (const char *const *)t_urls, n, opts, err, sizeof err);
    if (rc) {
        fprintf(stderr, "client_open: %s: %s\n", redlock_error_name(rc), err);
        exit(1);
    }
    return c;
}

/* A client on every node whose scripts go through FCALL (REDLOCK_OPT_FUNCTIONS),
 * with the "redlock" library loaded; exits if it cannot be loaded (the
 * harness's nodes are Redis 7 / Valkey 7 or later, so that is a failure). */
static __attribute__((unused)) redlock_client *make_functions_client(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    o.flags = REDLOCK_OPT_FUNCTIONS;
    redlock_client *c = make_client(t_nurls, &o);
    char err[1024];
    int rc = redlock_client_load_functions(c, err, sizeof err);
    if (rc) {
        fprintf(stderr, "load_functions: %s: %s\n", redlock_error_name(rc), err);
        exit(1);
    }
    return c;
}

/* A unique resource name per call, so tests never see each other's keys. */
static __attribute__((unused)) const char *uniq(const char *base)
{
    static char buf[8][128];
    static int k;
    static unsigned seq;
    char *b = buf[k++ % 8];
    snprintf(b, 128, "%s-%d-%u", base, (int)getpid(), seq++);
    return b;
}

/* Keys the library keeps on node i for as long as the node has its data:
 * the quarantine's marker and quarantine key (c/src/epoch.c). */
static __attribute__((unused)) long long epoch_keys_on(int i)
{
    return node_int(i, "EVAL \"return #redis.call('keys', '*{redlock:epoch}*')\" 0");
}

/* Total number of keys over the first n nodes, the marker keys aside. */
static __attribute__((unused)) long long keys_on(size_t n)
{
    long long total = 0;
    for (size_t i = 0; i < n; i++)
        total += node_int((int)i, "DBSIZE") - epoch_keys_on((int)i);
    return total;
}
#endif
