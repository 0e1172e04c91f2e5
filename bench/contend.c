/* SPDX-License-Identifier: BSD-3-Clause */
/* contend.c: redlock_contend, W worker processes contending for one resource
 * with wake-up off (polling), on, and in fair mode: the hand-over latency, the
 * acquire latency and timeouts, what the nodes run and spend per acquisition
 * (commands and CPU), and the spread of acquisitions over the workers;
 * optionally while a minority of the nodes is repeatedly stopped or paused.
 * Run it through bench/run-contend (see bench/README.md). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bench.h"
#include "redlock.h"

#ifndef BENCH_BUILD_TYPE
#define BENCH_BUILD_TYPE "unknown"
#endif

#define MAX_NODES 16
#define MAX_WORKERS 1000
#define MAX_LIST 16

enum { M_OFF, M_WAKE, M_FAIR, NMODES };
/* --fault: what happens to a minority of the nodes while a block runs. */
enum { F_NONE, F_SIGSTOP, F_PAUSE, F_KILL, F_MIXED };
static const char *const fault_name[] = { "none", "sigstop", "pause", "kill", "mixed" };
static const char *const mode_name[NMODES] = { "off", "wake", "fair" };
static const uint32_t mode_flags[NMODES] = { 0, REDLOCK_OPT_WAKE, REDLOCK_OPT_FAIR };

static struct {
    double seconds;        /* per mode and worker count, over all rounds */
    int rounds;            /* blocks per mode and worker count; modes take turns */
    long hold_ms;
    long think_us;
    int yield;             /* 1: after a release, ask again only once another worker took the lock */
    uint32_t ttl_ms;
    long wait_ms;
    long node_timeout_ms;  /* 0: the library's default */
    long retry_delay_ms;   /* -1: the library's default */
    long retry_jitter_ms;  /* -1: the library's default */
    int n_nodes;
    int monitor;           /* count top-level commands with MONITOR */
    int warmup;            /* connect and ready the listeners before the clock starts */
    const char *csv;
    int workers[MAX_LIST], n_workers;
    int modes[NMODES], n_modes;
    int fault;             /* F_* */
    int fault_nodes;       /* nodes down at once (0: a minority, (n-1)/2) */
    long fault_down_min_ms, fault_down_max_ms, fault_up_min_ms, fault_up_max_ms;
    unsigned long long seed;
} cfg = { 15.0, 3, 1, 0, 1, 10000, 60000, 0, -1, -1, 5, 1, 1, NULL, { 2, 16, 100 }, 3, { M_OFF, M_WAKE, M_FAIR }, 3,
          F_NONE, 0, 100, 3000, 100, 1000, 0 };

/* ---- memory shared with the workers of one block ---- */

typedef struct interval {
    int64_t call_ns;        /* right before redlock_lock_acquire */
    int64_t acq_ns;         /* right after it returned (0, or REDLOCK_ETIMEDOUT) */
    int64_t rel_ns;         /* right before redlock_lock_release; 0: the acquire timed out */
} interval;

typedef struct wstat {
    uint32_t n;             /* intervals recorded */
    uint32_t overflow;      /* acquisitions not recorded: the buffer was full */
    uint32_t errors;
    uint32_t timeouts;      /* acquires that ran out their wait (REDLOCK_ETIMEDOUT) */
    atomic_uint tries;      /* ACQUIRED + ACQUIRE_FAILED events: attempts */
    atomic_uint woken;      /* WOKEN events */
    uint32_t unready;       /* warm-up: nodes whose listener was not READY in time */
    int first_code;
    char first_err[240];
} wstat;

typedef struct shared {
    int64_t start_ns, deadline_ns;
    _Atomic uint32_t seq;   /* bumped on every acquisition; futex for --yield */
    uint32_t cap;           /* intervals per worker */
    /* wstat[W], then interval[W][cap] */
} shared;

static wstat *wstat_of(shared *s, int i)
{
    return (wstat *)(s + 1) + i;
}

static interval *ivals_of(shared *s, int W, int i)
{
    return (interval *)((wstat *)(s + 1) + W) + (size_t)i * s->cap;
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* ---- one worker process ---- */

typedef struct worker {
    shared *sh;
    int idx;
    redlock_lock *lock;
    atomic_int stop;
} worker;

static void on_event(const redlock_event *e, void *ud)
{
    wstat *w = ud;
    if (e->type == REDLOCK_EVENT_ACQUIRED || e->type == REDLOCK_EVENT_ACQUIRE_FAILED)
        atomic_fetch_add(&w->tries, 1);
    else if (e->type == REDLOCK_EVENT_WOKEN)
        atomic_fetch_add(&w->woken, 1);
}

/* Stops the loop at the deadline: a waiting acquire returns REDLOCK_ECANCELED
 * (or 0, if the round in flight got the lock). */
static void *watcher(void *arg)
{
    worker *w = arg;
    bench_sleep_until_ns(w->sh->deadline_ns);
    atomic_store(&w->stop, 1);
    redlock_lock_cancel(w->lock);
    futex(&w->sh->seq, FUTEX_WAKE, INT_MAX, NULL);
    return NULL;
}

static void worker_error(wstat *ws, int idx, int code, const char *what, const char *msg)
{
    if (ws->errors++ == 0) {
        ws->first_code = code;
        snprintf(ws->first_err, sizeof ws->first_err, "%s: %s: %s", what, redlock_error_name(code), msg);
    }
    if (ws->errors > 3)
        return; /* under faults the loop goes on: the first few tell the story */
    fprintf(stderr, "redlock_contend: worker %d: %s: %s: %s\n", idx, what, redlock_error_name(code), msg);
}

static int read_byte(int fd)
{
    char b;
    ssize_t r;
    while ((r = read(fd, &b, 1)) < 0 && errno == EINTR)
        ;
    return (int)r;
}

static void write_byte(int fd, char b)
{
    while (write(fd, &b, 1) < 0 && errno == EINTR)
        ;
}

/* Connects, and with wake-up opens the listeners, before the clock starts: a
 * short wait on a resource the parent holds (warm_<resource>), then until
 * every listener is READY. */
static void warm_up(redlock_client *client, wstat *ws, uint32_t flags, const char *resource)
{
    char name[80];
    redlock_lock *warm = NULL;
    snprintf(name, sizeof name, "warm_%s", resource);
    if (redlock_lock_new(&warm, client, name) != 0)
        return;
    (void)redlock_lock_acquire(warm, cfg.ttl_ms, 100); /* REDLOCK_ETIMEDOUT: the parent holds it */
    redlock_lock_free(warm);
    if (!(flags & (REDLOCK_OPT_WAKE | REDLOCK_OPT_FAIR)))
        return;
    int64_t limit = bench_now_ns() + 3000000000LL;
    for (;;) {
        uint32_t unready = 0;
        for (int i = 0; i < cfg.n_nodes; i++)
            if (redlock_client_listener_state(client, (size_t)i, NULL, 0) != REDLOCK_LISTENER_READY)
                unready++;
        if (unready == 0 || bench_now_ns() > limit) {
            ws->unready = unready;
            return;
        }
        bench_sleep_until_ns(bench_now_ns() + 1000000);
    }
}

static void worker_main(shared *sh, int W, int idx, const char *const *urls, uint32_t flags, const char *prefix,
                        const char *resource, int ready_fd, int go_fd, int done_fd, int exit_fd)
{
    wstat *ws = wstat_of(sh, idx);
    interval *iv = ivals_of(sh, W, idx);
    redlock_options o;
    redlock_options_init(&o);
    o.flags = flags;
    o.key_prefix = prefix;
    o.on_event = on_event;
    o.on_event_userdata = ws;
    if (cfg.node_timeout_ms > 0)
        o.node_timeout_ms = (uint32_t)cfg.node_timeout_ms;
    if (cfg.retry_delay_ms >= 0)
        o.retry_delay_ms = (uint32_t)cfg.retry_delay_ms;
    if (cfg.retry_jitter_ms >= 0)
        o.retry_jitter_ms = (uint32_t)cfg.retry_jitter_ms;
    redlock_client *client = NULL;
    worker w = { .sh = sh, .idx = idx, .lock = NULL };
    char err[256] = "";
    int rc = redlock_client_open(&client, urls, (size_t)cfg.n_nodes, &o, err, sizeof err);
    if (rc == 0 && (rc = redlock_lock_new(&w.lock, client, resource)) != 0)
        snprintf(err, sizeof err, "redlock_lock_new failed");
    if (rc)
        worker_error(ws, idx, rc, "setup", err);
    if (rc == 0 && cfg.warmup)
        warm_up(client, ws, flags, resource);
    write_byte(ready_fd, 'r');
    read_byte(go_fd); /* EOF: everyone is ready and the block has started */

    pthread_t th;
    int have_th = 0;
    if (rc == 0)
        have_th = pthread_create(&th, NULL, watcher, &w) == 0;
    /* One worker has nobody to hand the lock to. */
    int yield = cfg.yield && W > 1;
    while (rc == 0 && have_th && !atomic_load(&w.stop)) {
        int64_t t_call = bench_now_ns();
        int a = redlock_lock_acquire(w.lock, cfg.ttl_ms, cfg.wait_ms);
        int64_t t_acq = bench_now_ns();
        if (a == REDLOCK_ECANCELED)
            break;
        if (a == REDLOCK_ETIMEDOUT) {
            /* Ran out its wait: counted, and the loop goes on, as a service would. */
            ws->timeouts++;
            if (ws->n < sh->cap)
                iv[ws->n++] = (interval){ t_call, t_acq, 0 };
            continue;
        }
        if (a != 0) {
            worker_error(ws, idx, a, "acquire", redlock_lock_errmsg(w.lock));
            if (cfg.fault != F_NONE && !atomic_load(&w.stop)) {
                bench_sleep_until_ns(bench_now_ns() + 10000000); /* counted; under faults the loop goes on */
                continue;
            }
            break;
        }
        uint32_t seq = atomic_fetch_add(&sh->seq, 1) + 1;
        if (yield)
            futex(&sh->seq, FUTEX_WAKE, INT_MAX, NULL);
        if (cfg.hold_ms > 0)
            bench_sleep_until_ns(t_acq + cfg.hold_ms * 1000000);
        int64_t t_rel = bench_now_ns();
        int r = redlock_lock_release(w.lock);
        if (r != 0)
            worker_error(ws, idx, r, "release", redlock_lock_errmsg(w.lock));
        if (ws->n < sh->cap)
            iv[ws->n++] = (interval){ t_call, t_acq, t_rel };
        else
            ws->overflow++;
        if (cfg.think_us > 0)
            bench_sleep_until_ns(bench_now_ns() + cfg.think_us * 1000);
        /* Pass the baton: wait until another worker has taken the lock, so
         * that every acquisition is a hand-over to a worker that waited. */
        while (yield && atomic_load(&sh->seq) == seq && !atomic_load(&w.stop)) {
            struct timespec ts = { 0, 20000000 };
            futex(&sh->seq, FUTEX_WAIT, seq, &ts);
        }
    }
    if (have_th)
        pthread_join(th, NULL);
    write_byte(done_fd, 'd');
    read_byte(exit_fd); /* EOF: the parent has read the nodes' counters */
    redlock_lock_free(w.lock);
    redlock_client_free(client);
    _exit(ws->errors ? 1 : 0);
}

/* ---- the parent's view of the nodes ---- */

typedef struct node_view {
    redisContext *ctl;      /* commands: CLIENT LIST, markers */
    redisContext *mon;      /* MONITOR, or NULL */
    int counting;           /* between this block's start and end markers */
    int seen_end;
    long long top, lua;     /* MONITOR lines: top-level commands and commands run by scripts */
} node_view;

static node_view nv[MAX_NODES];
static redlock_client *parent_client; /* holds the warm-up resource */
static char marker[96];

/* Commands by name in the current block (top-level, then in scripts), for
 * the breakdown under each row. */
#define MAX_NAMES 48
typedef struct tally {
    char name[MAX_NAMES][24];
    long long n[MAX_NAMES][2];
    int count;
} tally;
static tally blk_tally;

static void tally_add(tally *t, const char *name, size_t len, int lua, long long k)
{
    char up[24];
    if (len >= sizeof up)
        len = sizeof up - 1;
    for (size_t i = 0; i < len; i++)
        up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
    up[len] = '\0';
    int i = 0;
    while (i < t->count && strcmp(t->name[i], up) != 0)
        i++;
    if (i == t->count) {
        if (t->count == MAX_NAMES)
            return;
        snprintf(t->name[t->count++], sizeof t->name[0], "%s", up);
    }
    t->n[i][lua] += k;
}

/* Reads what MONITOR has for node i and counts it between the markers. */
static int monitor_read(int i)
{
    node_view *v = &nv[i];
    if (redisBufferRead(v->mon) != REDIS_OK) {
        fprintf(stderr, "redlock_contend: MONITOR connection to node %d failed: %s\n", i, v->mon->errstr);
        redisFree(v->mon);
        v->mon = NULL;
        return -1;
    }
    void *rp;
    while (redisGetReplyFromReader(v->mon, &rp) == REDIS_OK && rp) {
        redisReply *r = rp;
        if (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) {
            const char *m = strstr(r->str, marker);
            const char *src = strchr(r->str, '[');
            if (m && m[strlen(marker)] == 's') {
                v->counting = 1;
            } else if (m && m[strlen(marker)] == 'e') {
                v->counting = 0;
                v->seen_end = 1;
            } else if (v->counting && src) {
                src = strchr(src, ' '); /* "[0 lua]" or "[0 127.0.0.1:port]" */
                int lua = src && strncmp(src + 1, "lua]", 4) == 0;
                if (lua)
                    v->lua++;
                else
                    v->top++;
                const char *name = src ? strstr(src, "] \"") : NULL;
                if (name) {
                    name += 3;
                    tally_add(&blk_tally, name, strcspn(name, "\""), lua, 1);
                }
            }
        }
        freeReplyObject(r);
    }
    return 0;
}

static int send_marker(char which)
{
    for (int i = 0; i < cfg.n_nodes; i++) {
        if (!nv[i].mon)
            continue;
        char m[128];
        snprintf(m, sizeof m, "%s%c", marker, which);
        redisReply *r = redisCommand(nv[i].ctl, "ECHO %s", m);
        if (!r)
            return -1;
        freeReplyObject(r);
    }
    return 0;
}

/* Drains the MONITOR streams until each has shown the end marker. */
static int monitor_drain_to_end(void)
{
    int64_t limit = bench_now_ns() + 10 * 1000000000LL;
    for (;;) {
        struct pollfd p[MAX_NODES];
        int idx[MAX_NODES], n = 0;
        for (int i = 0; i < cfg.n_nodes; i++)
            if (nv[i].mon && !nv[i].seen_end) {
                p[n] = (struct pollfd){ .fd = nv[i].mon->fd, .events = POLLIN };
                idx[n++] = i;
            }
        if (n == 0)
            return 0;
        if (bench_now_ns() > limit)
            return -1;
        if (poll(p, (nfds_t)n, 200) > 0)
            for (int k = 0; k < n; k++)
                if (p[k].revents)
                    monitor_read(idx[k]);
    }
}

/* tot-cmds of the clients of one node at the start of the clock. */
#define MAX_BASE 4096
typedef struct cl_base {
    long long id[MAX_BASE], cmds[MAX_BASE];
    int n;
} cl_base;
static cl_base cl_start[MAX_NODES];

/* Highest client id on node i (ids only grow: clients of a block have
 * higher ones). With sum set, the sum of tot-cmds over clients above
 * min_id, less what each had in *sub (if given), or -1 when the server has
 * no tot-cmds field; with save set, records the clients above min_id. */
static long long client_list(int i, long long min_id, long long *sum, cl_base *save, const cl_base *sub)
{
    if (save)
        save->n = 0;
    redisReply *r = redisCommand(nv[i].ctl, "CLIENT LIST");
    long long max_id = -1;
    if (sum)
        *sum = 0;
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_VERB)) {
        for (const char *line = r->str; line && *line;) {
            long long id = -1, cmds = -1;
            const char *eol = strchr(line, '\n');
            const char *f = strstr(line, "tot-cmds=");
            sscanf(line, "id=%lld", &id);
            if (f && (!eol || f < eol))
                cmds = atoll(f + 9);
            if (id > max_id)
                max_id = id;
            if (save && id > min_id && cmds >= 0 && save->n < MAX_BASE) {
                save->id[save->n] = id;
                save->cmds[save->n++] = cmds;
            }
            if (sub && cmds >= 0)
                for (int k = 0; k < sub->n; k++)
                    if (sub->id[k] == id) {
                        cmds -= sub->cmds[k];
                        break;
                    }
            if (sum && id > min_id && *sum >= 0)
                *sum = cmds >= 0 ? *sum + cmds : -1;
            line = eol ? eol + 1 : NULL;
        }
    } else if (sum) {
        *sum = -1;
    }
    freeReplyObject(r);
    return max_id;
}

typedef bench_node_stat node_stat;

/* The sum over nodes of what they ran and spent since *from. */
static int nodes_delta(const node_stat *from, node_stat *sum)
{
    sum->cmds = 0;
    sum->cpu_s = 0;
    int ok = 0;
    for (int i = 0; i < cfg.n_nodes; i++) {
        node_stat now;
        if (bench_node_stats(nv[i].ctl, &now) != 0) {
            ok = -1;
            continue;
        }
        sum->cmds += now.cmds - from[i].cmds;
        sum->cpu_s += now.cpu_s - from[i].cpu_s;
    }
    return ok;
}

static int nodes_snapshot(node_stat *into)
{
    int ok = 0;
    for (int i = 0; i < cfg.n_nodes; i++)
        if (bench_node_stats(nv[i].ctl, &into[i]) != 0)
            ok = -1;
    return ok;
}

/* ---- the fault thread: a minority of the nodes stopped or paused ---- */

static pid_t node_pid[MAX_NODES];            /* from INFO server process_id */
static volatile sig_atomic_t node_stopped[MAX_NODES];
static redisContext *fault_ctx[MAX_NODES];   /* the fault thread's own: CLIENT PAUSE, counts */
static redisContext *harness_ctl;            /* nodes.py's control socket: KILL i, START i */
static const char *const *node_urls;
static int nodes_persistent;                 /* appendonly yes on every node */

typedef struct fault_run {
    int64_t start_ns, deadline_ns;
    uint64_t rng;
    node_stat *base;           /* the block's starting counts; a restarted node's start again */
    node_stat carry[MAX_NODES]; /* what killed incarnations had counted */
    long long stops, pauses, kills; /* node faults begun in this block */
    double down_s;             /* node-seconds down */
    int failed;
} fault_run;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static long rng_range(uint64_t *s, long lo, long hi)
{
    return hi <= lo ? lo : lo + (long)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* SIGCONT to every node this process stopped; safe in a signal handler. */
static void resume_all(void)
{
    for (int i = 0; i < MAX_NODES; i++)
        if (node_stopped[i] && node_pid[i] > 0) {
            kill(node_pid[i], SIGCONT);
            node_stopped[i] = 0;
        }
}

static void on_fatal_signal(int sig)
{
    resume_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int harness_call(const char *op, int i)
{
    redisReply *r = redisCommand(harness_ctl, "%s %d", op, i);
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "redlock_contend: harness %s %d: %s\n", op, i,
                r ? r->str : harness_ctl->err ? harness_ctl->errstr : "no reply");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static pid_t read_pid(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO server");
    const char *p = r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_VERB)
                        ? strstr(r->str, "process_id:") : NULL;
    pid_t pid = p ? (pid_t)atol(p + 11) : 0;
    freeReplyObject(r);
    return pid;
}

/* SIGKILL node i through the harness, after banking what it has counted. */
static int kill_node(fault_run *f, int i)
{
    node_stat now;
    if (bench_node_stats(fault_ctx[i], &now) == 0) {
        f->carry[i].cmds += now.cmds - f->base[i].cmds;
        f->carry[i].cpu_s += now.cpu_s - f->base[i].cpu_s;
    }
    f->base[i] = now; /* not counted twice if the kill fails */
    return harness_call("KILL", i);
}

/* Starts node i again and takes its new counts as the base. */
static int restart_node(fault_run *f, int i)
{
    if (harness_call("START", i) != 0)
        return -1;
    redisFree(fault_ctx[i]);
    fault_ctx[i] = NULL;
    for (int t = 0; t < 50 && !(fault_ctx[i] = bench_connect(node_urls[i])); t++)
        bench_sleep_until_ns(bench_now_ns() + 100000000);
    if (!fault_ctx[i])
        return -1;
    node_pid[i] = read_pid(fault_ctx[i]);
    if (bench_node_stats(fault_ctx[i], &f->base[i]) != 0)
        memset(&f->base[i], 0, sizeof f->base[i]);
    return 0;
}

/* Until the deadline: pick fault_nodes nodes at random, stop them (SIGSTOP),
 * pause them (CLIENT PAUSE ms ALL) or kill them (SIGKILL through the
 * harness) for a random down time, resume or restart them, let them run for
 * a random up time, and again. A pause is never longer than what is left of
 * the block, so every node runs again at the deadline. A node without
 * appendonly is restarted no sooner than a TTL (and 100 ms) after its kill,
 * the delayed restart Redlock needs to stay safe. */
static void *fault_thread(void *arg)
{
    fault_run *f = arg;
    int k = cfg.fault_nodes > 0 ? cfg.fault_nodes : (cfg.n_nodes - 1) / 2;
    bench_sleep_until_ns(f->start_ns);
    while (bench_now_ns() < f->deadline_ns) {
        int pick[MAX_NODES], kind[MAX_NODES], all[MAX_NODES];
        for (int i = 0; i < cfg.n_nodes; i++)
            all[i] = i;
        for (int j = 0; j < k; j++) { /* partial Fisher-Yates: k distinct nodes */
            int r = j + (int)rng_range(&f->rng, 0, cfg.n_nodes - 1 - j);
            int t = all[j];
            all[j] = all[r];
            all[r] = t;
            pick[j] = all[j];
        }
        int64_t t0 = bench_now_ns();
        int64_t until = t0 + rng_range(&f->rng, cfg.fault_down_min_ms, cfg.fault_down_max_ms) * 1000000LL;
        if (until > f->deadline_ns)
            until = f->deadline_ns;
        long ms = (long)((until - t0) / 1000000);
        if (ms < 1)
            break;
        for (int j = 0; j < k; j++) {
            int i = pick[j];
            kind[j] = cfg.fault == F_MIXED ? F_SIGSTOP + (int)(rng_next(&f->rng) % (harness_ctl ? 3 : 2))
                                           : cfg.fault;
            if (kind[j] == F_KILL) {
                if (kill_node(f, i) != 0) {
                    kind[j] = F_NONE;
                    f->failed++;
                    continue;
                }
                f->kills++;
            } else if (kind[j] == F_SIGSTOP) {
                node_stopped[i] = 1;
                if (kill(node_pid[i], SIGSTOP) != 0) {
                    node_stopped[i] = 0;
                    f->failed++;
                    continue;
                }
                f->stops++;
            } else {
                redisReply *r = redisCommand(fault_ctx[i], "CLIENT PAUSE %ld ALL", ms);
                if (!r || r->type == REDIS_REPLY_ERROR)
                    f->failed++;
                else
                    f->pauses++;
                freeReplyObject(r);
            }
            f->down_s += (double)ms / 1000.0;
        }
        bench_sleep_until_ns(until);
        for (int j = 0; j < k; j++)
            if (kind[j] == F_SIGSTOP && node_stopped[pick[j]]) {
                kill(node_pid[pick[j]], SIGCONT);
                node_stopped[pick[j]] = 0;
            }
        for (int j = 0; j < k; j++)
            if (kind[j] == F_KILL) {
                if (!nodes_persistent)
                    bench_sleep_until_ns(t0 + ((int64_t)cfg.ttl_ms + 100) * 1000000LL);
                if (restart_node(f, pick[j]) != 0)
                    f->failed++;
            }
        /* A pause ends on its own at until: CLIENT UNPAUSE would itself wait for it. */
        int64_t up = bench_now_ns() + rng_range(&f->rng, cfg.fault_up_min_ms, cfg.fault_up_max_ms) * 1000000LL;
        bench_sleep_until_ns(up < f->deadline_ns ? up : f->deadline_ns);
    }
    resume_all();
    return NULL;
}

/* Reads each node's pid and opens the fault thread's connections. */
static int fault_setup(const char *const *urls)
{
    node_urls = urls;
    nodes_persistent = 1;
    for (int i = 0; i < cfg.n_nodes; i++) {
        node_pid[i] = read_pid(nv[i].ctl);
        redisReply *r = redisCommand(nv[i].ctl, "CONFIG GET appendonly");
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 || r->element[1]->type != REDIS_REPLY_STRING ||
            strcmp(r->element[1]->str, "yes") != 0)
            nodes_persistent = 0;
        freeReplyObject(r);
        if (node_pid[i] <= 0 || kill(node_pid[i], 0) != 0) {
            fprintf(stderr, "redlock_contend: --fault: node %d's process (pid %ld from INFO server) is not one "
                            "this user can signal; the nodes must run on this host\n", i, (long)node_pid[i]);
            return -1;
        }
        if (!(fault_ctx[i] = bench_connect(urls[i]))) {
            fprintf(stderr, "redlock_contend: --fault: cannot connect to node %d\n", i);
            return -1;
        }
    }
    const char *path = getenv("REDLOCK_HARNESS");
    if (path && (cfg.fault == F_KILL || cfg.fault == F_MIXED)) {
        harness_ctl = redisConnectUnix(path);
        if (harness_ctl && !harness_ctl->err) {
            redisReply *r = redisCommand(harness_ctl, "PING");
            if (!r || r->type == REDIS_REPLY_ERROR) {
                redisFree(harness_ctl);
                harness_ctl = NULL;
            }
            freeReplyObject(r);
        } else {
            redisFree(harness_ctl);
            harness_ctl = NULL;
        }
    }
    if (cfg.fault == F_KILL && !harness_ctl) {
        fprintf(stderr, "redlock_contend: --fault kill restarts the nodes through the harness: run it through "
                        "bench/run-contend ($REDLOCK_HARNESS)\n");
        return -1;
    }
    atexit(resume_all);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS };
    for (size_t j = 0; j < sizeof sigs / sizeof *sigs; j++)
        sigaction(sigs[j], &sa, NULL);
    return 0;
}

/* ---- results ---- */

typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec;

static void dvec_push(dvec *d, double x)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 1024;
        d->v = realloc(d->v, d->cap * sizeof *d->v);
        if (!d->v) {
            perror("realloc");
            exit(2);
        }
    }
    d->v[d->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted vector; NAN when empty. */
static double pct(const dvec *d, double p)
{
    if (d->n == 0)
        return NAN;
    return d->v[bench_rank(d->n, p) - 1];
}

typedef struct result {
    int mode, workers, blocks;
    double seconds;
    long long acq, again, tries, woken;
    dvec ho;                /* ms, every acquisition after the first of its block */
    dvec lat;               /* ms, every acquire call that returned the lock or ran out its wait */
    long long timeouts;     /* acquire calls that ran out their wait */
    long long ncmds;        /* node commands (INFO commandstats), scripts' included, summed over nodes */
    double ncpu_s;          /* node CPU (INFO cpu sys + user), summed over nodes */
    double ncount_s;        /* how long the node counts ran (a little longer than the block) */
    int nstat_ok;
    long long stops, pauses, kills, fault_failed;
    double down_s;
    long long top, lua, totcmds;
    tally names;            /* MONITOR lines by command name */
    int monitor_ok, totcmds_ok;
    long long min_w, max_w; /* acquisitions per worker, over every block */
    long long errors, overlaps, overflow, crashed, unready;
} result;

typedef struct rec {
    int64_t acq, rel;
    int w;
} rec;

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    return x->acq < y->acq ? -1 : x->acq > y->acq;
}

static int run_block(result *res, const char *const *urls, int W, int mode, const char *prefix, int block_no)
{
    double block_s = cfg.seconds / cfg.rounds;
    int64_t block_ns = (int64_t)(block_s * 1e9);
    /* An acquire+release takes at least two round trips; 20000/s is far above that. */
    uint32_t cap = (uint32_t)(block_s * 20000) + 256;
    size_t size = sizeof(shared) + (size_t)W * sizeof(wstat) + (size_t)W * cap * sizeof(interval);
    shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sh == MAP_FAILED) {
        perror("redlock_contend: mmap");
        return -1;
    }
    memset(sh, 0, sizeof *sh + (size_t)W * sizeof(wstat));
    sh->cap = cap;
    char resource[64];
    snprintf(resource, sizeof resource, "block%d", block_no);
    snprintf(marker, sizeof marker, "redlock-contend-%ld-%d-", (long)getpid(), block_no);
    memset(&blk_tally, 0, sizeof blk_tally);

    long long base_id[MAX_NODES];
    node_stat ns0[MAX_NODES];
    int ns_ok = 1;
    for (int i = 0; i < cfg.n_nodes; i++) {
        base_id[i] = client_list(i, 0, NULL, NULL, NULL);
        nv[i].counting = nv[i].seen_end = 0;
        nv[i].top = nv[i].lua = 0;
    }
    int64_t ns_t0 = bench_now_ns();
    if (!cfg.warmup && (send_marker('s') != 0 || nodes_snapshot(ns0) != 0)) {
        fprintf(stderr, "redlock_contend: a node stopped answering\n");
        munmap(sh, size);
        return -1;
    }
    /* The workers' warm-up waits on this, held by the parent. */
    redlock_lock *warm = NULL;
    if (cfg.warmup) {
        char name[80];
        snprintf(name, sizeof name, "warm_%s", resource);
        int rc = redlock_lock_new(&warm, parent_client, name);
        if (rc == 0)
            rc = redlock_lock_acquire(warm, 120000, REDLOCK_WAIT_NONE);
        if (rc != 0) {
            fprintf(stderr, "redlock_contend: warm-up lock: %s: %s\n", redlock_error_name(rc),
                    warm ? redlock_lock_errmsg(warm) : "");
            redlock_lock_free(warm);
            munmap(sh, size);
            return -1;
        }
    }

    int ready[2], go[2], done[2], ex[2];
    if (pipe(ready) || pipe(go) || pipe(done) || pipe(ex)) {
        perror("redlock_contend: pipe");
        exit(2);
    }
    pid_t *pids = calloc((size_t)W, sizeof *pids);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < W; i++) {
        pid_t p = fork();
        if (p < 0) {
            perror("redlock_contend: fork");
            exit(2);
        }
        if (p == 0) {
            close(ready[0]);
            close(go[1]);
            close(done[0]);
            close(ex[1]);
            worker_main(sh, W, i, urls, mode_flags[mode], prefix, resource, ready[1], go[0], done[1], ex[0]);
        }
        pids[i] = p;
    }
    close(ready[1]);
    close(go[0]);
    close(done[1]);
    close(ex[0]);
    for (int i = 0; i < W; i++)
        if (read_byte(ready[0]) != 1)
            break;
    if (cfg.warmup) {
        /* Count from here: what each worker's connections have run so far
         * (connecting, the warm-up, SUBSCRIBE) stays out. */
        for (int i = 0; i < cfg.n_nodes; i++)
            client_list(i, base_id[i], NULL, &cl_start[i], NULL);
        ns_t0 = bench_now_ns();
        if (send_marker('s') != 0 || nodes_snapshot(ns0) != 0) {
            fprintf(stderr, "redlock_contend: a node stopped answering\n");
            exit(1);
        }
    }
    sh->start_ns = bench_now_ns() + 5000000;
    sh->deadline_ns = sh->start_ns + block_ns;
    fault_run fr = { .start_ns = sh->start_ns, .deadline_ns = sh->deadline_ns, .base = ns0,
                     .rng = cfg.seed ^ ((uint64_t)(block_no + 1) * 0x2545f4914f6cdd1dull) };
    pthread_t fth;
    int have_fth = cfg.fault != F_NONE && pthread_create(&fth, NULL, fault_thread, &fr) == 0;
    if (cfg.fault != F_NONE && !have_fth) {
        fprintf(stderr, "redlock_contend: cannot start the fault thread\n");
        exit(1);
    }
    bench_sleep_until_ns(sh->start_ns);
    close(go[1]);

    /* Read MONITOR while the workers run, until every one is done (or has
     * died without saying so). */
    int done_n = 0, gone = 0, *reaped = calloc((size_t)W, sizeof *reaped), *rstat = calloc((size_t)W, sizeof *rstat);
    int64_t give_up = sh->deadline_ns + (cfg.wait_ms + 120000) * 1000000LL;
    while (done_n + gone < W) {
        if (bench_now_ns() > sh->deadline_ns) {
            for (int i = 0; i < W; i++)
                if (!reaped[i] && waitpid(pids[i], &rstat[i], WNOHANG) == pids[i]) {
                    reaped[i] = 1;
                    gone++;
                }
            if (bench_now_ns() > give_up) {
                fprintf(stderr, "redlock_contend: workers stuck %ld s after the deadline; killing them\n",
                        (long)((bench_now_ns() - sh->deadline_ns) / 1000000000));
                for (int i = 0; i < W; i++)
                    if (!reaped[i])
                        kill(pids[i], SIGKILL);
                break;
            }
        }
        struct pollfd p[MAX_NODES + 1];
        int idx[MAX_NODES], n = 0;
        for (int i = 0; i < cfg.n_nodes; i++)
            if (nv[i].mon) {
                p[n] = (struct pollfd){ .fd = nv[i].mon->fd, .events = POLLIN };
                idx[n++] = i;
            }
        p[n] = (struct pollfd){ .fd = done[0], .events = POLLIN };
        if (poll(p, (nfds_t)n + 1, 1000) < 0 && errno != EINTR)
            break;
        for (int k = 0; k < n; k++)
            if (p[k].revents)
                monitor_read(idx[k]);
        if (p[n].revents) {
            if (read_byte(done[0]) == 1)
                done_n++;
            else
                break; /* EOF: every worker has gone */
        }
        if (done_n + gone >= W)
            break;
    }
    /* Every node runs again (the fault thread stops at the deadline) before
     * the counts are read. */
    if (have_fth)
        pthread_join(fth, NULL);
    if (fr.kills) /* the parent's connections to a restarted node are gone */
        for (int i = 0; i < cfg.n_nodes; i++) {
            redisReply *r = redisCommand(nv[i].ctl, "PING");
            if (!r) {
                redisFree(nv[i].ctl);
                if (!(nv[i].ctl = bench_connect(node_urls[i]))) {
                    fprintf(stderr, "redlock_contend: cannot reconnect to node %d after its restart\n", i);
                    exit(1);
                }
            }
            freeReplyObject(r);
        }
    /* The last release returns at quorum; let the slower nodes' commands land. */
    int64_t settle = bench_now_ns() + 100000000;
    while (bench_now_ns() < settle) {
        struct pollfd p[MAX_NODES];
        int idx[MAX_NODES], n = 0;
        for (int i = 0; i < cfg.n_nodes; i++)
            if (nv[i].mon) {
                p[n] = (struct pollfd){ .fd = nv[i].mon->fd, .events = POLLIN };
                idx[n++] = i;
            }
        if (poll(p, (nfds_t)n, 20) > 0)
            for (int k = 0; k < n; k++)
                if (p[k].revents)
                    monitor_read(idx[k]);
    }
    int mon_ok = cfg.monitor;
    if (cfg.monitor) {
        if (send_marker('e') != 0 || monitor_drain_to_end() != 0)
            mon_ok = 0;
        for (int i = 0; i < cfg.n_nodes; i++)
            if (!nv[i].mon)
                mon_ok = 0;
    }
    node_stat nsd;
    if (nodes_delta(ns0, &nsd) != 0)
        ns_ok = 0;
    for (int i = 0; i < cfg.n_nodes; i++) {
        nsd.cmds += fr.carry[i].cmds;
        nsd.cpu_s += fr.carry[i].cpu_s;
    }
    double ns_wall_s = (double)(bench_now_ns() - ns_t0) / 1e9;
    long long tot = 0;
    int tot_ok = 1;
    for (int i = 0; i < cfg.n_nodes; i++) {
        long long s;
        client_list(i, base_id[i], &s, NULL, cfg.warmup ? &cl_start[i] : NULL);
        if (s < 0)
            tot_ok = 0;
        else
            tot += s;
    }
    close(ex[1]);
    if (warm) {
        (void)redlock_lock_release(warm);
        redlock_lock_free(warm);
    }
    int crashed = 0;
    for (int i = 0; i < W; i++) {
        int st = rstat[i];
        if (!reaped[i])
            while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && wstat_of(sh, i)->errors == 0)) {
            crashed++;
            fprintf(stderr, "redlock_contend: worker %d (%s, %d workers) ended with status %d\n", i, mode_name[mode],
                    W, st);
        }
    }
    close(ready[0]);
    close(done[0]);
    free(pids);
    free(reaped);
    free(rstat);

    /* Merge the intervals of all workers by acquire time. */
    size_t total = 0;
    for (int i = 0; i < W; i++)
        total += wstat_of(sh, i)->n;
    rec *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < W; i++) {
        wstat *ws = wstat_of(sh, i);
        interval *iv = ivals_of(sh, W, i);
        long long timed_out = 0;
        for (uint32_t j = 0; j < ws->n; j++) {
            dvec_push(&res->lat, (double)(iv[j].acq_ns - iv[j].call_ns) / 1e6);
            if (iv[j].rel_ns == 0)
                timed_out++;
            else
                all[k++] = (rec){ iv[j].acq_ns, iv[j].rel_ns, i };
        }
        long long n = (long long)ws->n - timed_out + ws->overflow;
        res->timeouts += ws->timeouts;
        if (res->blocks == 0 && i == 0)
            res->min_w = res->max_w = n;
        if (n < res->min_w)
            res->min_w = n;
        if (n > res->max_w)
            res->max_w = n;
        res->acq += n;
        res->tries += atomic_load(&ws->tries);
        res->woken += atomic_load(&ws->woken);
        res->errors += ws->errors;
        res->overflow += ws->overflow;
        res->unready += ws->unready ? 1 : 0;
    }
    total = k;
    qsort(all, total, sizeof *all, cmp_rec);
    int64_t last_rel = 0;
    for (size_t j = 0; j < total; j++) {
        if (j > 0) {
            /* Recorded intervals lie inside the real holds, so any overlap is real. */
            if (all[j].acq < last_rel) {
                if (res->overlaps++ < 10)
                    fprintf(stderr,
                            "redlock_contend: OVERLAP (%s, %d workers): worker %d acquired %.3f ms before "
                            "the previous holder (worker %d) released\n",
                            mode_name[mode], W, all[j].w, (double)(last_rel - all[j].acq) / 1e6, all[j - 1].w);
            }
            dvec_push(&res->ho, (double)(all[j].acq - all[j - 1].rel) / 1e6);
            if (all[j].w == all[j - 1].w)
                res->again++;
        }
        if (all[j].rel > last_rel)
            last_rel = all[j].rel;
    }
    free(all);
    res->seconds += block_s;
    res->blocks++;
    for (int i = 0; i < cfg.n_nodes; i++) {
        res->top += nv[i].top;
        res->lua += nv[i].lua;
    }
    for (int i = 0; i < blk_tally.count; i++)
        for (int l = 0; l < 2; l++)
            if (blk_tally.n[i][l])
                tally_add(&res->names, blk_tally.name[i], strlen(blk_tally.name[i]), l, blk_tally.n[i][l]);
    res->monitor_ok = res->blocks == 1 ? mon_ok : res->monitor_ok && mon_ok;
    if (fr.kills)
        tot_ok = 0; /* a restarted node's clients have new ids and counts */
    res->totcmds += tot;
    res->ncmds += nsd.cmds;
    res->ncpu_s += nsd.cpu_s;
    res->ncount_s += ns_wall_s;
    res->nstat_ok = res->blocks == 1 ? ns_ok : res->nstat_ok && ns_ok;
    res->stops += fr.stops;
    res->kills += fr.kills;
    res->pauses += fr.pauses;
    res->down_s += fr.down_s;
    res->fault_failed += fr.failed;
    res->totcmds_ok = res->blocks == 1 ? tot_ok : res->totcmds_ok && tot_ok;
    res->crashed += crashed;
    munmap(sh, size);
    return 0;
}

/* ---- output ---- */

static int tot_cmds_field;   /* 1 when every node's CLIENT LIST has tot-cmds */
static int idle_ok;          /* the idle figures were measured */
static double idle_cpu_us_s, idle_cmds_s;

static void print_header(void)
{
    char cpu[256], load[64], ver[64], seen[MAX_NODES][64];
    int cnt[MAX_NODES] = { 0 }, kinds = 0;
    struct utsname u;
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);
    uname(&u);
    printf("redlock contention benchmark: workers (processes) contending for one resource\n");
    printf("machine: %ld CPUs, %s, %s %s %s, 1-min load %s at the start\n", sysconf(_SC_NPROCESSORS_ONLN), cpu,
           u.sysname, u.release, u.machine, load);
    for (int i = 0; i < cfg.n_nodes; i++) {
        bench_server_version(nv[i].ctl, ver, sizeof ver);
        int k = 0;
        while (k < kinds && strcmp(seen[k], ver) != 0)
            k++;
        if (k == kinds)
            snprintf(seen[kinds++], sizeof seen[0], "%s", ver);
        cnt[k]++;
    }
    printf("nodes:   ");
    for (int k = 0; k < kinds; k++)
        printf("%s%s x%d", k ? ", " : "", seen[k], cnt[k]);
    printf("; library %s (%s build)\n", redlock_version(), BENCH_BUILD_TYPE);
    printf("loop:    acquire (wait up to %ld ms, TTL %u ms), hold %ld ms, release, think %ld us%s\n", cfg.wait_ms,
           cfg.ttl_ms, cfg.hold_ms, cfg.think_us,
           cfg.yield ? ", then wait until another worker has taken the lock (every acquisition is a hand-over)"
                     : ", then ask again at once (the releaser competes with the waiters)");
    printf("blocks:  %d per mode and worker count, %.2f s each, modes taking turns; default client options%s\n",
           cfg.rounds, cfg.seconds / cfg.rounds,
           cfg.node_timeout_ms > 0 || cfg.retry_delay_ms >= 0 || cfg.retry_jitter_ms >= 0 ? " but those below" : "");
    if (cfg.retry_delay_ms >= 0 || cfg.retry_jitter_ms >= 0) {
        redlock_options d;
        redlock_options_init(&d);
        printf("         (retry_delay_ms %ld, retry_jitter_ms %ld)\n",
               cfg.retry_delay_ms >= 0 ? cfg.retry_delay_ms : (long)d.retry_delay_ms,
               cfg.retry_jitter_ms >= 0 ? cfg.retry_jitter_ms : (long)d.retry_jitter_ms);
    }
    printf("%s", cfg.warmup ? "warm-up: the clock and the counts start once every worker has connected and (wake,\n"
                              "         fair) its listeners are READY, after a 100 ms wait on a resource held by\n"
                              "         the parent\n"
                            : "warm-up: none (--no-warmup): the clock starts as the workers connect and subscribe\n");
    if (cfg.node_timeout_ms > 0)
        printf("         (node_timeout_ms %ld)\n", cfg.node_timeout_ms);
    printf("modes:   off = the default options (polling), wake = REDLOCK_OPT_WAKE, fair = REDLOCK_OPT_FAIR\n");
    printf("columns: ho = hand-over, the previous holder's release to the next acquire returning (ms);\n"
           "         again = acquisitions by the worker that held the lock just before; tries, woken = acquire\n"
           "         attempts and wake-ups (the library's events) per acquisition; min, max = acquisitions per\n"
           "         worker in any one block, max/min their ratio;\n");
    if (cfg.monitor)
        printf("         cmd = top-level commands the nodes ran (MONITOR lines not from scripts), summed over all\n"
               "         nodes, per acquisition: what the clients sent%s;\n",
               cfg.warmup ? " once the clock started" : ", connection setup and the listeners'\n"
                                                         "         SUBSCRIBE included");
    else
        printf("         cmd: not counted (--no-monitor);\n");
    if (tot_cmds_field)
        printf("         exec = every command the nodes ran for the workers' connections, those run inside\n"
               "         scripts included (CLIENT LIST tot-cmds), per acquisition\n");
    else if (cfg.monitor)
        printf("         exec = every command the nodes ran, those inside scripts included (MONITOR; this\n"
               "         server has no tot-cmds field), per acquisition\n");
    else
        printf("         exec: not counted on this server kind (no tot-cmds in CLIENT LIST)\n");
    printf("         acq p99 = the 99th percentile of the acquire calls that returned the lock or ran out\n"
           "         their wait (ms); tmo = those that ran out their wait (REDLOCK_ETIMEDOUT);\n"
           "         ncmd, ncpu = what the nodes ran and spent per acquisition, summed over all nodes: the\n"
           "         calls in INFO commandstats (commands inside scripts included; INFO, CLIENT, MONITOR\n"
           "         and ECHO left out, the benchmark's own) and used_cpu_sys + used_cpu_user of INFO cpu\n"
           "         (us), from the start of the clock until every worker has finished%s\n",
           cfg.monitor ? ";\n         ncpu includes what MONITOR costs the nodes: use --no-monitor for node CPU" : "");
    if (idle_ok)
        printf("idle:    the nodes, idle, spend %.0f us CPU and run %.1f commands per second (summed over nodes)\n",
               idle_cpu_us_s, idle_cmds_s);
    if (cfg.fault != F_NONE)
        printf("fault:   %s: while each block runs, %d of the %d nodes at a time are %s for %ld-%ld ms, then all\n"
               "         run %ld-%ld ms, until the deadline (seed %llu)\n",
               fault_name[cfg.fault], cfg.fault_nodes > 0 ? cfg.fault_nodes : (cfg.n_nodes - 1) / 2, cfg.n_nodes,
               cfg.fault == F_SIGSTOP ? "stopped (SIGSTOP, then SIGCONT)"
               : cfg.fault == F_PAUSE ? "paused (CLIENT PAUSE ms ALL)"
               : cfg.fault == F_KILL  ? "killed (SIGKILL, then started again)"
               : harness_ctl          ? "stopped, paused or killed (each at random)"
                                      : "stopped or paused (each at random; no harness to restart killed nodes)",
               cfg.fault_down_min_ms, cfg.fault_down_max_ms, cfg.fault_up_min_ms, cfg.fault_up_max_ms, cfg.seed);
    printf("\n%-5s %7s %8s %7s %8s %8s %8s %6s %6s %6s %7s %7s %6s %6s %7s %8s %5s %7s %7s\n", "mode", "workers", "acq",
           "acq/s", "ho p50", "ho p99", "ho mean", "again", "tries", "woken", "cmd", "exec", "min", "max", "max/min",
           "acq p99", "tmo", "ncmd", "ncpu");
    fflush(stdout);
}

static double ncmd_per_acq(const result *r)
{
    return r->nstat_ok && r->acq ? (double)r->ncmds / (double)r->acq : NAN;
}

static double ncpu_per_acq(const result *r)
{
    return r->nstat_ok && r->acq ? r->ncpu_s * 1e6 / (double)r->acq : NAN;
}

/* ncpu less what the idle nodes would have spent meanwhile. */
static double ncpu_net_per_acq(const result *r)
{
    return idle_ok && r->nstat_ok && r->acq ? (r->ncpu_s - idle_cpu_us_s / 1e6 * r->ncount_s) * 1e6 / (double)r->acq
                                            : NAN;
}

static double cmd_per_acq(const result *r)
{
    return r->monitor_ok && r->acq ? (double)r->top / (double)r->acq : NAN;
}

static double exec_per_acq(const result *r)
{
    if (!r->acq)
        return NAN;
    if (tot_cmds_field)
        return r->totcmds_ok ? (double)r->totcmds / (double)r->acq : NAN;
    return r->monitor_ok ? (double)(r->top + r->lua) / (double)r->acq : NAN;
}

static void fmt(char *out, size_t size, const char *f, double v)
{
    if (isnan(v))
        snprintf(out, size, "-");
    else if (isinf(v))
        snprintf(out, size, "inf");
    else
        snprintf(out, size, f, v);
}

static void print_row(result *r, FILE *csv)
{
    qsort(r->ho.v, r->ho.n, sizeof *r->ho.v, cmp_double);
    double acq = (double)r->acq;
    double p50 = pct(&r->ho, 0.50), p99 = pct(&r->ho, 0.99), mean = NAN;
    if (r->ho.n) {
        mean = 0;
        for (size_t i = 0; i < r->ho.n; i++)
            mean += r->ho.v[i];
        mean /= (double)r->ho.n;
    }
    double again = r->ho.n ? 100.0 * (double)r->again / (double)r->ho.n : NAN;
    double tries = acq > 0 ? (double)r->tries / acq : NAN, woken = acq > 0 ? (double)r->woken / acq : NAN;
    double ratio = r->min_w > 0 ? (double)r->max_w / (double)r->min_w : INFINITY;
    qsort(r->lat.v, r->lat.n, sizeof *r->lat.v, cmp_double);
    double lat99 = pct(&r->lat, 0.99);
    char s[12][32];
    fmt(s[9], 32, "%.2f", lat99);
    fmt(s[10], 32, "%.1f", ncmd_per_acq(r));
    fmt(s[11], 32, "%.0f", ncpu_per_acq(r));
    fmt(s[8], 32, "%.2f", mean);
    fmt(s[0], 32, "%.2f", p50);
    fmt(s[1], 32, "%.2f", p99);
    fmt(s[2], 32, "%.1f%%", again);
    fmt(s[3], 32, "%.2f", tries);
    fmt(s[4], 32, "%.2f", woken);
    fmt(s[5], 32, "%.1f", cmd_per_acq(r));
    fmt(s[6], 32, "%.1f", exec_per_acq(r));
    fmt(s[7], 32, "%.2f", ratio);
    printf("%-5s %7d %8lld %7.0f %8s %8s %8s %6s %6s %6s %7s %7s %6lld %6lld %7s %8s %5lld %7s %7s\n",
           mode_name[r->mode], r->workers, r->acq, acq / r->seconds, s[0], s[1], s[8], s[2], s[3], s[4], s[5], s[6],
           r->min_w, r->max_w, s[7], s[9], r->timeouts, s[10], s[11]);
    if (r->monitor_ok && r->acq && r->names.count) {
        for (int l = 0; l < 2; l++) {
            int any = 0;
            for (int i = 0; i < r->names.count; i++) {
                double per = (double)r->names.n[i][l] / acq;
                if (per < 0.05)
                    continue;
                printf("%s%s %.2f", any ? ", " : l ? "      in scripts, per acq: " : "      top-level, per acq: ",
                       r->names.name[i], per);
                any = 1;
            }
            if (any)
                printf("\n");
        }
    }
    if (r->errors || r->overlaps || r->crashed || r->overflow)
        printf("      ^ %lld errors, %lld overlaps, %lld workers died, %lld acquisitions not recorded (buffer full)\n",
               r->errors, r->overlaps, r->crashed, r->overflow);
    if (r->unready)
        printf("      ^ %lld workers started with a listener not READY after 3 s of warm-up\n", r->unready);
    if (cfg.fault != F_NONE)
        printf("      faults: %lld stops, %lld pauses, %lld kills, %.1f node-seconds down%s\n", r->stops, r->pauses,
               r->kills, r->down_s,
               r->fault_failed ? " (SOME FAULTS COULD NOT BE INJECTED)" : "");
    fflush(stdout);
    if (csv)
        fprintf(csv, "%s,%d,%d,%.3f,%ld,%ld,%d,%lld,%.1f,%.4f,%.4f,%.2f,%.3f,%.3f,%.4f,%.4f,%lld,%lld,%.3f,%lld,%lld,%.4f,"
                     "%.4f,%lld,%.2f,%.1f,%s,%u,%ld,%lld,%lld,%.2f,%.1f,%lld\n",
                mode_name[r->mode], r->workers, r->blocks, r->seconds, cfg.hold_ms, cfg.think_us, cfg.yield, r->acq,
                acq / r->seconds, p50, p99, isnan(again) ? -1 : again, tries, woken,
                isnan(cmd_per_acq(r)) ? -1 : cmd_per_acq(r), isnan(exec_per_acq(r)) ? -1 : exec_per_acq(r),
                r->min_w, r->max_w, isinf(ratio) ? -1 : ratio, r->errors + r->crashed, r->overlaps, mean,
                isnan(lat99) ? -1 : lat99, r->timeouts, isnan(ncmd_per_acq(r)) ? -1 : ncmd_per_acq(r),
                isnan(ncpu_per_acq(r)) ? -1 : ncpu_per_acq(r), fault_name[cfg.fault], cfg.ttl_ms, cfg.wait_ms,
                r->stops, r->pauses, r->down_s, isnan(ncpu_net_per_acq(r)) ? -1 : ncpu_net_per_acq(r), r->kills);
}

static void print_ratios(result *rs, int W)
{
    const result *off = NULL;
    for (int m = 0; m < cfg.n_modes; m++)
        if (rs[m].mode == M_OFF)
            off = &rs[m];
    if (!off)
        return;
    for (int m = 0; m < cfg.n_modes; m++) {
        const result *r = &rs[m];
        if (r == off)
            continue;
        char a[32], b[32], c[32], t[32], l[32], nc[32], cpu[32], net[32];
        fmt(a, sizeof a, "%.3fx", pct(&r->ho, 0.5) / pct(&off->ho, 0.5));
        fmt(b, sizeof b, "%.3fx", pct(&r->ho, 0.99) / pct(&off->ho, 0.99));
        fmt(c, sizeof c, "%.2fx", cmd_per_acq(r) / cmd_per_acq(off));
        fmt(t, sizeof t, "%.2fx", off->acq ? ((double)r->acq / r->seconds) / ((double)off->acq / off->seconds) : NAN);
        fmt(l, sizeof l, "%.2fx", pct(&r->lat, 0.99) / pct(&off->lat, 0.99));
        fmt(nc, sizeof nc, "%.2fx", ncmd_per_acq(r) / ncmd_per_acq(off));
        fmt(cpu, sizeof cpu, "%.2fx", ncpu_per_acq(r) / ncpu_per_acq(off));
        fmt(net, sizeof net, "%.2fx", ncpu_net_per_acq(r) / ncpu_net_per_acq(off));
        printf("      %s/off at %d workers: acq/s %s, acq p99 %s, timeouts %lld vs %lld, hand-over p50 %s, p99 %s,\n"
               "                    cmd/acq %s, node commands/acq %s, node CPU/acq %s (%s less the idle nodes' CPU)\n",
               mode_name[r->mode], W, t, l, r->timeouts, off->timeouts, a, b, c, nc, cpu, net);
    }
}

/* ---- main ---- */

static int parse_list(const char *s, int *out, int max, int lo, int hi)
{
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        long v = strtol(t, &end, 10);
        if (*end || v < lo || v > hi || n == max) {
            free(copy);
            return -1;
        }
        out[n++] = (int)v;
    }
    free(copy);
    return n;
}

static int parse_modes(const char *s)
{
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int m = 0;
        while (m < NMODES && strcmp(t, mode_name[m]) != 0)
            m++;
        if (m == NMODES || n == NMODES) {
            free(copy);
            return -1;
        }
        cfg.modes[n++] = m;
    }
    free(copy);
    return n;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: redlock_contend [options]   (node URLs from $REDLOCK_TEST_NODES; see bench/README.md)\n"
            "  --workers LIST        worker processes per row (2,16,100; 2 = one waiter; 1 = no contention)\n"
            "  --modes LIST          off, wake, fair (all three)\n"
            "  --seconds S           per mode and worker count, over all blocks (15)\n"
            "  --rounds R            blocks per mode and worker count; the modes take turns (3)\n"
            "  --hold-ms MS          time each acquisition holds the lock (1)\n"
            "  --think-us US         pause after each release (0)\n"
            "  --think-ms MS         the same in milliseconds (--think-ms 20 = --think-us 20000)\n"
            "  --no-yield            ask again right after a release instead of waiting until\n"
            "                        another worker has taken the lock\n"
            "  --nodes N             use the first N node URLs (5)\n"
            "  --ttl-ms MS           lock TTL (10000)\n"
            "  --wait-ms MS          wait_ms of each acquire (60000)\n"
            "  --node-timeout-ms MS  client node_timeout_ms (library default)\n"
            "  --retry-delay-ms MS   client retry_delay_ms (library default)\n"
            "  --retry-jitter-ms MS  client retry_jitter_ms (library default)\n"
            "  --fault KIND          none, sigstop, pause, kill or mixed: while each block runs, a\n"
            "                        minority of the nodes is repeatedly stopped (SIGSTOP), paused\n"
            "                        (CLIENT PAUSE), or killed and restarted (needs the harness); mixed:\n"
            "                        each fault one of these at random (implies --no-monitor with kill)\n"
            "  --fault-nodes K       nodes down at once (a minority: (nodes-1)/2)\n"
            "  --fault-down-ms A-B   each fault lasts uniform(A, B) ms (100-3000)\n"
            "  --fault-up-ms A-B     then every node runs uniform(A, B) ms (100-1000)\n"
            "  --seed N              seed of the fault schedule (from the clock)\n"
            "  --no-monitor          do not count top-level commands with MONITOR\n"
            "  --no-warmup           start the clock before the workers connect and subscribe\n"
            "  --csv FILE            also write the rows as CSV\n"
            "  --smoke               --seconds 1 --rounds 1 --workers 2,16 unless given\n");
}

int main(int argc, char **argv)
{
    enum { O_WORKERS = 256, O_MODES, O_SECONDS, O_ROUNDS, O_HOLD, O_THINK, O_NOYIELD, O_YIELD, O_NODES, O_TTL, O_WAIT,
           O_NT, O_NOMON, O_CSV, O_SMOKE, O_NOWARM, O_THINKMS, O_RDELAY, O_RJITTER, O_FAULT, O_FNODES, O_FDOWN, O_FUP,
           O_SEED };
    static const struct option opts[] = {
        { "workers", 1, NULL, O_WORKERS }, { "modes", 1, NULL, O_MODES },        { "mode", 1, NULL, O_MODES },
        { "seconds", 1, NULL, O_SECONDS }, { "rounds", 1, NULL, O_ROUNDS },      { "hold-ms", 1, NULL, O_HOLD },
        { "think-us", 1, NULL, O_THINK },  { "no-yield", 0, NULL, O_NOYIELD },   { "yield", 0, NULL, O_YIELD },
        { "nodes", 1, NULL, O_NODES },     { "ttl-ms", 1, NULL, O_TTL },         { "wait-ms", 1, NULL, O_WAIT },
        { "node-timeout-ms", 1, NULL, O_NT }, { "no-monitor", 0, NULL, O_NOMON }, { "csv", 1, NULL, O_CSV },
        { "smoke", 0, NULL, O_SMOKE },     { "no-warmup", 0, NULL, O_NOWARM },   { "think-ms", 1, NULL, O_THINKMS },
        { "retry-delay-ms", 1, NULL, O_RDELAY }, { "retry-jitter-ms", 1, NULL, O_RJITTER },
        { "fault", 1, NULL, O_FAULT },     { "fault-nodes", 1, NULL, O_FNODES }, { "fault-down-ms", 1, NULL, O_FDOWN },
        { "fault-up-ms", 1, NULL, O_FUP }, { "seed", 1, NULL, O_SEED },          { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int smoke = 0, set_workers = 0, set_seconds = 0, set_rounds = 0, set_seed = 0, c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case O_WORKERS:
            if ((cfg.n_workers = parse_list(optarg, cfg.workers, MAX_LIST, 1, MAX_WORKERS)) <= 0)
                goto bad;
            set_workers = 1;
            break;
        case O_MODES:
            if ((cfg.n_modes = parse_modes(optarg)) <= 0)
                goto bad;
            break;
        case O_SECONDS:
            cfg.seconds = strtod(optarg, &end);
            if (*end || !(cfg.seconds > 0))
                goto bad;
            set_seconds = 1;
            break;
        case O_ROUNDS:
            cfg.rounds = (int)strtol(optarg, &end, 10);
            if (*end || cfg.rounds < 1)
                goto bad;
            set_rounds = 1;
            break;
        case O_HOLD:
            cfg.hold_ms = strtol(optarg, &end, 10);
            if (*end || cfg.hold_ms < 0 || cfg.hold_ms > 60000)
                goto bad;
            break;
        case O_THINK:
            cfg.think_us = strtol(optarg, &end, 10);
            if (*end || cfg.think_us < 0)
                goto bad;
            break;
        case O_THINKMS:
            cfg.think_us = strtol(optarg, &end, 10) * 1000;
            if (*end || cfg.think_us < 0)
                goto bad;
            break;
        case O_RDELAY:
        case O_RJITTER: {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 600000)
                goto bad;
            *(c == O_RDELAY ? &cfg.retry_delay_ms : &cfg.retry_jitter_ms) = v;
            break;
        }
        case O_FAULT: {
            int f = 0;
            while (f <= F_MIXED && strcmp(optarg, fault_name[f]) != 0)
                f++;
            if (f > F_MIXED)
                goto bad;
            cfg.fault = f;
            if (f == F_KILL || f == F_MIXED)
                cfg.monitor = 0; /* a killed node's MONITOR stream would end */
            break;
        }
        case O_FNODES:
            cfg.fault_nodes = (int)strtol(optarg, &end, 10);
            if (*end || cfg.fault_nodes < 1 || cfg.fault_nodes > MAX_NODES)
                goto bad;
            break;
        case O_FDOWN:
        case O_FUP: {
            long a, b;
            char tail;
            if (sscanf(optarg, "%ld-%ld%c", &a, &b, &tail) != 2 || a < 1 || b < a || b > 600000)
                goto bad;
            if (c == O_FDOWN) {
                cfg.fault_down_min_ms = a;
                cfg.fault_down_max_ms = b;
            } else {
                cfg.fault_up_min_ms = a;
                cfg.fault_up_max_ms = b;
            }
            break;
        }
        case O_SEED:
            cfg.seed = strtoull(optarg, &end, 10);
            if (*end)
                goto bad;
            set_seed = 1;
            break;
        case O_NOYIELD: cfg.yield = 0; break;
        case O_YIELD: cfg.yield = 1; break;
        case O_NODES:
            cfg.n_nodes = (int)strtol(optarg, &end, 10);
            if (*end || cfg.n_nodes < 1 || cfg.n_nodes > MAX_NODES)
                goto bad;
            break;
        case O_TTL: {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > (long)REDLOCK_MAX_TTL_MS)
                goto bad;
            cfg.ttl_ms = (uint32_t)v;
            break;
        }
        case O_WAIT:
            cfg.wait_ms = strtol(optarg, &end, 10);
            if (*end || cfg.wait_ms < 1 || cfg.wait_ms > REDLOCK_MAX_WAIT_MS)
                goto bad;
            break;
        case O_NT:
            cfg.node_timeout_ms = strtol(optarg, &end, 10);
            if (*end || cfg.node_timeout_ms < 1)
                goto bad;
            break;
        case O_NOMON: cfg.monitor = 0; break;
        case O_NOWARM: cfg.warmup = 0; break;
        case O_CSV: cfg.csv = optarg; break;
        case O_SMOKE: smoke = 1; break;
        case 'h': usage(stdout); return 0;
        default: goto bad;
        }
    }
    if (optind != argc)
        goto bad;
    if (smoke) {
        if (!set_seconds)
            cfg.seconds = 1.0;
        if (!set_rounds)
            cfg.rounds = 1;
        if (!set_workers) {
            cfg.workers[0] = 2;
            cfg.workers[1] = 16;
            cfg.n_workers = 2;
        }
    }

    if (cfg.fault_nodes >= cfg.n_nodes) {
        fprintf(stderr, "redlock_contend: --fault-nodes %d of %d nodes would leave none running\n", cfg.fault_nodes,
                cfg.n_nodes);
        return 2;
    }
    if (!set_seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        cfg.seed = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 20) ^ (unsigned)getpid();
    }

    char *list;
    const char *urls[MAX_NODES];
    int n_urls = bench_nodes_from_env("redlock_contend", "bench/run-contend", urls, MAX_NODES, &list);
    if (n_urls < 0)
        return 2;
    if (n_urls < cfg.n_nodes) {
        fprintf(stderr, "redlock_contend: %d nodes needed, $REDLOCK_TEST_NODES has %d\n", cfg.n_nodes, n_urls);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    tot_cmds_field = 1;
    for (int i = 0; i < cfg.n_nodes; i++) {
        if (!(nv[i].ctl = bench_connect(urls[i]))) {
            fprintf(stderr, "redlock_contend: cannot connect to node %d (%s)\n", i, urls[i]);
            return 2;
        }
        redisReply *r = redisCommand(nv[i].ctl, "CLIENT INFO");
        if (!r || r->type == REDIS_REPLY_ERROR || !strstr(r->str, "tot-cmds="))
            tot_cmds_field = 0;
        freeReplyObject(r);
        if (cfg.monitor) {
            redisReply *m = NULL;
            if ((nv[i].mon = bench_connect(urls[i])) != NULL)
                m = redisCommand(nv[i].mon, "MONITOR");
            if (!m || m->type != REDIS_REPLY_STATUS) {
                fprintf(stderr, "redlock_contend: node %d refused MONITOR (%s); use --no-monitor\n", i,
                        m && m->type == REDIS_REPLY_ERROR ? m->str : "no reply");
                return 2;
            }
            freeReplyObject(m);
        }
    }
    if (cfg.fault != F_NONE && fault_setup((const char *const *)urls) != 0)
        return 2;
    if (harness_ctl && !nodes_persistent)
        printf("note: the nodes do not persist (appendonly no): a killed node is restarted no sooner than a TTL\n"
               "      after its kill\n");
    {
        /* What the idle nodes spend, to set the per-acquisition figures against. */
        node_stat s0[MAX_NODES], d;
        int64_t t_idle = bench_now_ns();
        if (nodes_snapshot(s0) == 0) {
            bench_sleep_until_ns(t_idle + 500000000);
            if (nodes_delta(s0, &d) == 0) {
                double sec = (double)(bench_now_ns() - t_idle) / 1e9;
                idle_ok = 1;
                idle_cpu_us_s = d.cpu_s * 1e6 / sec;
                idle_cmds_s = (double)d.cmds / sec;
            }
        }
    }
    FILE *csv = NULL;
    if (cfg.csv) {
        if (!(csv = fopen(cfg.csv, "w"))) {
            fprintf(stderr, "redlock_contend: cannot write %s: %s\n", cfg.csv, strerror(errno));
            return 2;
        }
        fprintf(csv, "mode,workers,blocks,seconds,hold_ms,think_us,yield,acquisitions,acq_per_s,handover_p50_ms,"
                     "handover_p99_ms,again_pct,tries_per_acq,woken_per_acq,cmds_per_acq,exec_per_acq,"
                     "min_per_worker,max_per_worker,max_over_min,errors,overlaps,handover_mean_ms,acquire_p99_ms,"
                     "timeouts,node_cmds_per_acq,node_cpu_us_per_acq,fault,ttl_ms,wait_ms,fault_stops,fault_pauses,"
                     "fault_node_seconds,node_cpu_net_us_per_acq,fault_kills\n");
    }

    char prefix[96];
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    snprintf(prefix, sizeof prefix, "redlock-contend:%ld:%lld:", (long)getpid(), (long long)rt.tv_sec);
    if (cfg.warmup) {
        redlock_options o;
        redlock_options_init(&o);
        o.key_prefix = prefix;
        char err[256];
        if (redlock_client_open(&parent_client, urls, (size_t)cfg.n_nodes, &o, err, sizeof err) != 0) {
            fprintf(stderr, "redlock_contend: %s\n", err);
            return 2;
        }
    }
    print_header();

    int64_t t0 = bench_now_ns();
    long long bad_total = 0, fault_errors = 0;
    int block_no = 0;
    for (int wi = 0; wi < cfg.n_workers; wi++) {
        int W = cfg.workers[wi];
        result rs[NMODES];
        memset(rs, 0, sizeof rs);
        for (int m = 0; m < cfg.n_modes; m++) {
            rs[m].mode = cfg.modes[m];
            rs[m].workers = W;
        }
        for (int r = 0; r < cfg.rounds; r++)
            for (int k = 0; k < cfg.n_modes; k++) {
                int m = (k + r) % cfg.n_modes;
                if (run_block(&rs[m], urls, W, rs[m].mode, prefix, block_no++) != 0)
                    return 1;
            }
        for (int m = 0; m < cfg.n_modes; m++) {
            print_row(&rs[m], csv);
            /* Under --fault an acquire or release may fail (no quorum while
             * the nodes come and go): shown, but only an overlap or a dead
             * worker fails the run. */
            if (cfg.fault != F_NONE)
                fault_errors += rs[m].errors;
            else
                bad_total += rs[m].errors;
            bad_total += rs[m].overlaps + rs[m].crashed;
        }
        print_ratios(rs, W);
        for (int m = 0; m < cfg.n_modes; m++) {
            free(rs[m].ho.v);
            free(rs[m].lat.v);
        }
    }
    char load[64];
    bench_loadavg(load, sizeof load);
    printf("\ntotal %.1f s; 1-min load %s at the end; %s\n", (double)(bench_now_ns() - t0) / 1e9, load,
           bad_total ? "ERRORS OR OVERLAPS (see above and stderr)"
           : fault_errors ? "no overlaps; some acquires or releases failed under the faults (see above)"
                          : "no errors, no overlaps");
    if (csv)
        fclose(csv);
    for (int i = 0; i < cfg.n_nodes; i++) {
        redisFree(nv[i].ctl);
        if (nv[i].mon)
            redisFree(nv[i].mon);
    }
    redlock_client_free(parent_client);
    free(list);
    return bad_total ? 1 : 0;
bad:
    usage(stderr);
    return 2;
}
