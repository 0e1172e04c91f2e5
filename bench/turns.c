/* SPDX-License-Identifier: BSD-3-Clause */
/* turns.c: redlock_turns, two processes taking turns on one lock (issue 37):
 * each with its own client (REDLOCK_OPT_WAKE by default) holds the lock
 * --hold-ms, releases it and then makes no call for --think-ms. The figure
 * is the hand-over: from the holder's release to the waiter's acquire
 * returning, counted only when the waiter was already waiting when the
 * release began and the releaser made no call until the waiter had the
 * lock. So it is the time a release takes to wake a waiter in another
 * process with nothing driving the releaser's client but its own engine.
 *
 * Two loops:
 *   turns (default)  a schedule makes every turn a hand-over: the holder
 *                    takes the lock, the other process asks for it half a
 *                    hold later and waits; the holder releases and stays
 *                    silent for the think time; roles swap each turn.
 *   --free           each process loops on its own (acquire, hold, release,
 *                    think), the second starting half a hold after the
 *                    first. With a think time longer than the hold they
 *                    rarely wait for each other: most acquisitions find the
 *                    lock free, and "release to next acquisition" is then
 *                    the idle time, not a hand-over (printed as "gap").
 * --slow-ms D puts node 0 behind a proxy that holds its replies D ms
 * (slowproxy.c): releases are decided without it.
 * Run it through bench/run-turns (bench/README.md). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "redlock.h"

#ifndef BENCH_BUILD_TYPE
#define BENCH_BUILD_TYPE "unknown"
#endif

#define MAX_TURNS 100000
/* The first acquisitions are left out: each process's first wait opens
 * its listeners (a connect and a SUBSCRIBE per node). */
#define WARMUP 4

static struct {
    int turns;
    long hold_ms, think_ms, ttl_ms, wait_ms, slow_ms, node_timeout_ms;
    int n_nodes;
    int free_loop;
    uint32_t flags;
    const char *mode;
} cfg = { 100, 20, 300, 10000, 10000, 0, 0, 5, 0, REDLOCK_OPT_WAKE, "wake" };

typedef struct rec {
    int64_t call, acq, rel;   /* before acquire, after it returned, before release (ns) */
    int rc;
} rec;

#define MAX_EVENTS 4096

/* What the library told a process (on_event), for the slow hand-overs. */
typedef struct ev {
    int64_t t;
    int type, node, outcome, code;
} ev;

typedef struct shared {
    int64_t start_ns;
    _Atomic uint32_t held;    /* turns whose holder has the lock (futex) */
    int64_t held_acq[MAX_TURNS];
    uint32_t n[2];
    int errors[2];
    int release_errors[2];
    char err[2][200];
    rec r[2][MAX_TURNS];
    _Atomic uint32_t nev[2];
    ev ev[2][MAX_EVENTS];
} shared;

static shared *g_sh;
static int g_p;

static void on_event(const redlock_event *e, void *ud)
{
    (void)ud;
    if (e->type != REDLOCK_EVENT_NODE_ERROR && e->type != REDLOCK_EVENT_WOKEN && e->type != REDLOCK_EVENT_LISTENER &&
        e->type != REDLOCK_EVENT_ACQUIRE_FAILED && e->type != REDLOCK_EVENT_RELEASE_FAILED)
        return;
    uint32_t k = atomic_fetch_add(&g_sh->nev[g_p], 1);
    if (k < MAX_EVENTS)
        g_sh->ev[g_p][k] = (ev){ bench_now_ns(), e->type, (int)e->node, e->node_outcome, e->code };
}

static const char *ev_name(int t)
{
    switch (t) {
    case REDLOCK_EVENT_NODE_ERROR: return "node error";
    case REDLOCK_EVENT_WOKEN: return "woken";
    case REDLOCK_EVENT_LISTENER: return "listener";
    case REDLOCK_EVENT_ACQUIRE_FAILED: return "attempt failed";
    case REDLOCK_EVENT_RELEASE_FAILED: return "release failed";
    default: return "?";
    }
}

/* The events of both processes from 3.5 s before a slow hand-over's release
 * (the time a node failure keeps wake-ups off) to the acquisition. */
static void explain(const shared *sh, int64_t rel, int64_t acq)
{
    for (int p = 0; p < 2; p++) {
        uint32_t n = atomic_load(&((shared *)sh)->nev[p]);
        for (uint32_t k = 0; k < n && k < MAX_EVENTS; k++) {
            const ev *e = &sh->ev[p][k];
            if (e->t < rel - 3500000000LL || e->t > acq)
                continue;
            printf("    process %d at %+9.1f ms: %s", p, (double)(e->t - rel) / 1e6, ev_name(e->type));
            if (e->type == REDLOCK_EVENT_NODE_ERROR)
                printf(" node %d outcome %d", e->node, e->outcome);
            else if (e->type == REDLOCK_EVENT_WOKEN)
                printf(" by node %d", e->node);
            else if (e->code)
                printf(" %s", redlock_error_name(e->code));
            printf("\n");
        }
    }
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

static void fail(shared *sh, int p, const char *what, int rc, redlock_lock *l)
{
    if (sh->errors[p]++ == 0)
        snprintf(sh->err[p], sizeof sh->err[p], "%s: %s: %s", what, redlock_error_name(rc),
                 l ? redlock_lock_errmsg(l) : "");
}

/* One acquisition: acquire at once, hold, release. */
static int cycle(shared *sh, int p, redlock_lock *l, int turn)
{
    rec *r = &sh->r[p][sh->n[p]];
    r->call = bench_now_ns();
    int rc = redlock_lock_acquire(l, (uint32_t)cfg.ttl_ms, (uint32_t)cfg.wait_ms);
    r->acq = bench_now_ns();
    r->rc = rc;
    if (rc != 0) {
        fail(sh, p, "acquire", rc, l);
        return -1;
    }
    if (turn >= 0) {
        sh->held_acq[turn] = r->acq;
        atomic_store(&sh->held, (uint32_t)turn + 1);
        futex(&sh->held, FUTEX_WAKE, INT_MAX, NULL);
    }
    bench_sleep_until_ns(r->acq + cfg.hold_ms * 1000000);
    r->rel = bench_now_ns();
    rc = redlock_lock_release(l);
    sh->n[p]++;
    if (rc != 0)   /* not confirmed by a quorum (a loaded machine): counted, the loop goes on */
        sh->release_errors[p]++;
    return 0;
}

static void worker(shared *sh, int p, const char *const *urls)
{
    redlock_options o;
    redlock_options_init(&o);
    o.flags = cfg.flags;
    g_sh = sh;
    g_p = p;
    o.on_event = on_event;
    if (cfg.node_timeout_ms > 0)
        o.node_timeout_ms = (uint32_t)cfg.node_timeout_ms;
    redlock_client *c = NULL;
    redlock_lock *l = NULL;
    char err[256] = "";
    int rc = redlock_client_open(&c, urls, (size_t)cfg.n_nodes, &o, err, sizeof err);
    if (rc == 0)
        rc = redlock_lock_new(&l, c, "turns");
    if (rc != 0) {
        snprintf(sh->err[p], sizeof sh->err[p], "open: %s: %s", redlock_error_name(rc), err);
        sh->errors[p]++;
        _exit(1);
    }
    const int64_t ms = 1000000, hold = cfg.hold_ms * ms, think = cfg.think_ms * ms;
    int64_t quiet_until = 0;   /* no call before: the think time after our last release */
    if (cfg.free_loop) {
        bench_sleep_until_ns(sh->start_ns + p * hold / 2);
        while (sh->n[p] < (uint32_t)cfg.turns / 2 && cycle(sh, p, l, -1) == 0)
            bench_sleep_until_ns(bench_now_ns() + think);
    } else {
        /* Turn k: process k % 2 takes the lock at start + k * (hold + think),
         * the other asks half a hold later, once it has thought its think
         * time since its own last release. */
        for (int k = 0; k < cfg.turns && !sh->errors[0] && !sh->errors[1]; k++) {
            if (k % 2 == p) {
                bench_sleep_until_ns(sh->start_ns + k * (hold + think));
                if (cycle(sh, p, l, k) != 0)
                    break;
                quiet_until = bench_now_ns() + think;
                continue;
            }
            while (atomic_load(&sh->held) < (uint32_t)k + 1 && !sh->errors[1 - p]) {
                struct timespec ts = { 0, 50000000 };
                futex(&sh->held, FUTEX_WAIT, atomic_load(&sh->held), &ts);
            }
            if (sh->errors[1 - p])
                break;
            int64_t at = sh->held_acq[k] + hold / 2;
            bench_sleep_until_ns(at > quiet_until ? at : quiet_until);
            if (cycle(sh, p, l, -1) != 0)
                break;
            quiet_until = bench_now_ns() + think;
        }
    }
    redlock_lock_free(l);
    redlock_client_free(c);
    _exit(sh->errors[p] ? 1 : 0);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct acq {
    int64_t call, acq, rel;
    int p, k;   /* process, index in its records */
} acq;

static int cmp_acq(const void *a, const void *b)
{
    return cmp_i64(&((const acq *)a)->acq, &((const acq *)b)->acq);
}

static double pct(const int64_t *v, size_t n, double p)
{
    return n ? (double)v[bench_rank(n, p) - 1] / 1e6 : 0;
}

static const char *optarg_ms(long ms)
{
    static char b[32];
    snprintf(b, sizeof b, "%ld ms", ms);
    return b;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: redlock_turns [--turns N] [--hold-ms MS] [--think-ms MS] [--slow-ms D] [--free]\n"
               "                     [--mode wake|fair|off] [--nodes N] [--ttl-ms MS] [--wait-ms MS]\n"
               "                     [--node-timeout-ms MS]\n"
               "Two processes take turns on one lock; the hand-over is from the holder's release to the\n"
               "waiter's acquisition, while the releaser makes no call (see the top of bench/turns.c).\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "turns", 1, NULL, 't' }, { "hold-ms", 1, NULL, 'h' }, { "think-ms", 1, NULL, 'k' },
        { "slow-ms", 1, NULL, 's' }, { "free", 0, NULL, 'f' }, { "mode", 1, NULL, 'm' },
        { "nodes", 1, NULL, 'n' }, { "ttl-ms", 1, NULL, 'T' }, { "wait-ms", 1, NULL, 'w' },
        { "node-timeout-ms", 1, NULL, 'N' }, { "help", 0, NULL, 'H' }, { NULL, 0, NULL, 0 }
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 't': cfg.turns = atoi(optarg); break;
        case 'h': cfg.hold_ms = atol(optarg); break;
        case 'k': cfg.think_ms = atol(optarg); break;
        case 's': cfg.slow_ms = atol(optarg); break;
        case 'f': cfg.free_loop = 1; break;
        case 'n': cfg.n_nodes = atoi(optarg); break;
        case 'T': cfg.ttl_ms = atol(optarg); break;
        case 'w': cfg.wait_ms = atol(optarg); break;
        case 'N': cfg.node_timeout_ms = atol(optarg); break;
        case 'm':
            cfg.mode = optarg;
            cfg.flags = !strcmp(optarg, "wake") ? REDLOCK_OPT_WAKE : !strcmp(optarg, "fair") ? REDLOCK_OPT_FAIR
                        : !strcmp(optarg, "off") ? 0 : UINT32_MAX;
            if (cfg.flags == UINT32_MAX) {
                usage(stderr);
                return 2;
            }
            break;
        case 'H': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (cfg.turns < 2 || cfg.turns > MAX_TURNS || cfg.hold_ms < 2 || cfg.think_ms < 0) {
        usage(stderr);
        return 2;
    }
    const char *urls[BENCH_MAX_NODES];
    char *list = NULL;
    int n_urls = bench_nodes_from_env("redlock_turns", "bench/run-turns", urls, BENCH_MAX_NODES, &list);
    if (n_urls < 0)
        return 2;
    if (n_urls < cfg.n_nodes) {
        fprintf(stderr, "redlock_turns: %d nodes given, %d needed\n", n_urls, cfg.n_nodes);
        return 2;
    }
    bench_proxy *proxy = NULL;
    if (cfg.slow_ms > 0) {
        char err[200];
        if (bench_proxy_start(&proxy, urls[0], (int)cfg.slow_ms, err, sizeof err) != 0) {
            fprintf(stderr, "redlock_turns: proxy: %s\n", err);
            return 2;
        }
        urls[0] = bench_proxy_url(proxy);
    }
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    char cpu[128], load0[32], load1[32];
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load0, sizeof load0);
    printf("redlock_turns: two processes take turns on one lock (%s build), %s, 1-min load %s\n",
           BENCH_BUILD_TYPE, cpu, load0);
    printf("loop: %s; hold %ld ms, then no call for %ld ms; %d nodes; mode %s; %d turns; node timeout %s\n",
           cfg.free_loop ? "free-running (acquire, hold, release, think), the second process half a hold later"
                         : "scheduled turns (the other process asks half a hold into each hold)",
           cfg.hold_ms, cfg.think_ms, cfg.n_nodes, cfg.mode, cfg.turns,
           cfg.node_timeout_ms > 0 ? optarg_ms(cfg.node_timeout_ms) : "the default");
    if (proxy)
        printf("node 0 behind a proxy that holds its replies %ld ms\n", cfg.slow_ms);
    fflush(stdout);
    sh->start_ns = bench_now_ns() + 300000000;   /* the clients connect meanwhile */
    pid_t pid[2];
    for (int p = 0; p < 2; p++) {
        pid[p] = fork();
        if (pid[p] == 0)
            worker(sh, p, urls);
        if (pid[p] < 0) {
            perror("fork");
            return 2;
        }
    }
    int bad = 0;
    for (int p = 0; p < 2; p++) {
        int st;
        while (waitpid(pid[p], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            bad = 1;
            fprintf(stderr, "redlock_turns: process %d: %s\n", p, sh->err[p][0] ? sh->err[p] : "died");
        }
    }
    bench_proxy_stop(proxy);

    /* Every acquisition by time; each one's predecessor is the last release. */
    size_t total = sh->n[0] + sh->n[1], nw = 0, ng = 0, busy = 0, overlaps = 0;
    acq *all = calloc(total ? total : 1, sizeof *all);
    int64_t *ho = calloc(total ? total : 1, sizeof *ho), *gap = calloc(total ? total : 1, sizeof *gap);
    size_t k = 0;
    for (int p = 0; p < 2; p++)
        for (uint32_t j = 0; j < sh->n[p]; j++)
            all[k++] = (acq){ sh->r[p][j].call, sh->r[p][j].acq, sh->r[p][j].rel, p, (int)j };
    qsort(all, total, sizeof *all, cmp_acq);
    for (size_t j = 1; j < total; j++) {
        const acq *prev = &all[j - 1], *cur = &all[j];
        if (cur->acq < prev->rel)
            overlaps++;
        if (j < WARMUP)
            continue;
        gap[ng++] = cur->acq - prev->rel;
        if (cur->p == prev->p || cur->call >= prev->rel)
            continue;   /* not a hand-over to a process that waited */
        /* The releaser's next call: it must come after the waiter had the lock. */
        int64_t next = (uint32_t)prev->k + 1 < sh->n[prev->p] ? sh->r[prev->p][prev->k + 1].call : INT64_MAX;
        if (next < cur->acq) {
            busy++;
            continue;
        }
        ho[nw++] = cur->acq - prev->rel;
        if (cur->acq - prev->rel > 20 * 1000000) {
            printf("slow hand-over: %.1f ms, from process %d to %d, %.1f s into the run\n",
                   (double)(cur->acq - prev->rel) / 1e6, prev->p, cur->p, (double)(prev->rel - sh->start_ns) / 1e9);
            explain(sh, prev->rel, cur->acq);
        }
    }
    qsort(ho, nw, sizeof *ho, cmp_i64);
    qsort(gap, ng, sizeof *gap, cmp_i64);
    size_t over20 = 0;
    for (size_t j = 0; j < nw; j++)
        over20 += ho[j] > 20 * 1000000;
    bench_loadavg(load1, sizeof load1);
    printf("\n%-34s %6s %8s %8s %8s %8s %6s\n", "", "n", "p50 ms", "p90 ms", "p99 ms", "max ms", ">20ms");
    printf("%-34s %6zu %8.2f %8.2f %8.2f %8.2f %6zu\n", "hand-over, releaser silent", nw, pct(ho, nw, 0.5),
           pct(ho, nw, 0.9), pct(ho, nw, 0.99), nw ? (double)ho[nw - 1] / 1e6 : 0, over20);
    printf("%-34s %6zu %8.2f %8.2f %8.2f %8.2f\n", "gap, release to next acquisition", ng, pct(gap, ng, 0.5),
           pct(gap, ng, 0.9), pct(gap, ng, 0.99), ng ? (double)gap[ng - 1] / 1e6 : 0);
    printf("acquisitions %zu (the first %d, which open the listeners, not counted); hand-overs to a waiting "
           "process %zu (releaser called again first: %zu); "
           "releases not confirmed %d; overlaps %zu; 1-min load %s at the end\n", total, WARMUP, nw + busy, busy,
           sh->release_errors[0] + sh->release_errors[1], overlaps, load1);
    free(all);
    free(ho);
    free(gap);
    free(list);
    if (overlaps)
        fprintf(stderr, "redlock_turns: %zu acquisitions overlapped the previous hold\n", overlaps);
    return bad || overlaps ? 1 : 0;
}
