/* SPDX-License-Identifier: BSD-3-Clause */
/* many.c: many locks held by one client (issue 28). Measures, in one run on
 * the same nodes: the nodes' pipelined capacity for the compare-and-extend
 * script; the client's sequential acquisition rate; then N locks kept by
 * redlock_lock_auto_extend for S seconds (optionally with one node stopped
 * by SIGSTOP for most of that time): locks lost, extensions per second as a
 * ratio to that capacity, client CPU per extension, RSS per held lock, and
 * REDLOCK_EVENT_WATCH_BEHIND events. bench/run-many starts the nodes.
 * Exits 1 if a lock was lost or anything failed; timings are only printed. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <malloc.h>

#include <hiredis/hiredis.h>

#include "bench.h"
#define REDLOCK_EXPERIMENTAL   /* redlock_lock_acquire_many */
#include "redlock.h"

static atomic_long n_ext, n_ext_failed, n_lost, n_behind, n_node_err, n_behind_late_max_us;
static char behind_msg[512], failed_msg[1024];

static void on_event(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    switch (ev->type) {
    case REDLOCK_EVENT_EXTENDED: atomic_fetch_add(&n_ext, 1); break;
    case REDLOCK_EVENT_EXTEND_FAILED:
        if (atomic_fetch_add(&n_ext_failed, 1) == 0)
            snprintf(failed_msg, sizeof failed_msg, "%s", ev->message);
        break;
    case REDLOCK_EVENT_NODE_ERROR: atomic_fetch_add(&n_node_err, 1); break;
    case REDLOCK_EVENT_WATCH_BEHIND:
        if (atomic_fetch_add(&n_behind, 1) == 0)
            snprintf(behind_msg, sizeof behind_msg, "%s", ev->message);
        for (long m = atomic_load(&n_behind_late_max_us); ev->elapsed_us > m &&
             !atomic_compare_exchange_weak(&n_behind_late_max_us, &m, (long)ev->elapsed_us);) {
        }
        break;
    default: break;
    }
}

static void on_lost(redlock_lock *lock, int code, const char *msg, void *userdata)
{
    (void)lock; (void)userdata;
    if (atomic_fetch_add(&n_lost, 1) < 3)
        fprintf(stderr, "many: lost (%d): %s\n", code, msg);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* VmRSS or VmHWM of this process in KB. */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && line[len] == ':')
            kb = strtol(line + len + 1, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

/* Bytes malloc has handed out and not had back, in every arena (the
 * threads' too): malloc_info's memory from the system, less its free
 * chunks, plus the mmapped ones. RSS also counts what the allocator keeps
 * after a free; this does not. -1 if unknown. */
static long long heap_in_use(void)
{
    char *xml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&xml, &len);
    if (!f)
        return -1;
    malloc_info(0, f);
    fclose(f);
    /* The totals follow the last </heap>. */
    const char *t = xml ? strstr(xml, "</heap>") : NULL;
    for (const char *u; t && (u = strstr(t + 1, "</heap>"));)
        t = u;
    long long fast = -1, rest = -1, mmap = -1, sys = -1;
    if (t) {
        const char *p;
        if ((p = strstr(t, "<total type=\"fast\" count=")) && (p = strstr(p, "size=\"")))
            fast = strtoll(p + 6, NULL, 10);
        if ((p = strstr(t, "<total type=\"rest\" count=")) && (p = strstr(p, "size=\"")))
            rest = strtoll(p + 6, NULL, 10);
        if ((p = strstr(t, "<total type=\"mmap\" count=")) && (p = strstr(p, "size=\"")))
            mmap = strtoll(p + 6, NULL, 10);
        if ((p = strstr(t, "<system type=\"current\" size=\"")))
            sys = strtoll(p + 29, NULL, 10);
    }
    free(xml);
    return fast < 0 || rest < 0 || mmap < 0 || sys < 0 ? -1 : sys - fast - rest + mmap;
}

/* ---- the nodes' capacity: pipelined single-key extend scripts ---- */

static const char extend_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

typedef struct cap_job {
    const char *url;
    double seconds;
    int set;          /* 1: SET k v PX, 0: the extend script */
    long done;
    int failed;
} cap_job;

/* One node: keys set, then windows of pipelined commands for `seconds`:
 * EVALSHA of the single-key extend script, or plain SET ... PX. */
static void *cap_main(void *arg)
{
    cap_job *j = arg;
    redisContext *c = bench_connect(j->url);
    if (!c) {
        j->failed = 1;
        return NULL;
    }
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", extend_lua);
    char sha[64] = "";
    if (r && r->type == REDIS_REPLY_STRING)
        snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);
    enum { KEYS = 1000, WINDOW = 256 };
    for (int k = 0; k < KEYS; k++)
        redisAppendCommand(c, "SET bench:many:cap:%d v PX 60000", k);
    for (int k = 0; k < KEYS; k++) {
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            j->failed = 1;
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    int64_t end = bench_now_ns() + (int64_t)(j->seconds * 1e9);
    long done = 0;
    int key = 0;
    while (bench_now_ns() < end && !j->failed) {
        for (int k = 0; k < WINDOW; k++, key = (key + 1) % KEYS) {
            if (j->set)
                redisAppendCommand(c, "SET bench:many:cap:%d v PX 60000", key);
            else
                redisAppendCommand(c, "EVALSHA %s 1 bench:many:cap:%d v 60000", sha, key);
        }
        for (int k = 0; k < WINDOW; k++) {
            int ok = redisGetReply(c, (void **)&r) == REDIS_OK &&
                     (j->set ? r->type == REDIS_REPLY_STATUS : r->type == REDIS_REPLY_INTEGER && r->integer == 1);
            if (!ok)
                j->failed = 1;
            freeReplyObject(r);
        }
        done += WINDOW;
    }
    j->done = done;
    redisFree(c);
    return NULL;
}

/* Extensions per second that every node takes at once: the slowest node's
 * rate, and their sum (each node's share of the machine when all run; every
 * extension costs each node one, so the mean per node is the client's
 * ceiling). */
static double node_capacity(const char **urls, int n, double seconds, int set, double *sum_out)
{
    pthread_t t[BENCH_MAX_NODES];
    cap_job j[BENCH_MAX_NODES];
    for (int i = 0; i < n; i++) {
        j[i] = (cap_job){ urls[i], seconds, set, 0, 0 };
        pthread_create(&t[i], NULL, cap_main, &j[i]);
    }
    double min = -1, sum = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        double rate = j[i].failed ? 0 : (double)j[i].done / seconds;
        sum += rate;
        if (min < 0 || rate < min)
            min = rate;
    }
    *sum_out = sum;
    return min;
}

/* ---- the harness: a node's pid ---- */

static pid_t node_pid(int i)
{
    /* The harness's control socket speaks RESP (tests/harness/README.md). */
    const char *sock = getenv("REDLOCK_HARNESS");
    if (!sock)
        return -1;
    struct timeval tv = { 10, 0 };
    redisContext *c = redisConnectUnixWithTimeout(sock, tv);
    long pid = -1;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "PID %d", i);
        if (r && r->type == REDIS_REPLY_INTEGER)
            pid = (long)r->integer;
        else
            fprintf(stderr, "redlock_many: PID %d: %s\n", i, r && r->str ? r->str : c->errstr);
        freeReplyObject(r);
    }
    else
        fprintf(stderr, "redlock_many: harness control socket %s: %s\n", sock, c ? c->errstr : "out of memory");
    if (c)
        redisFree(c);
    return (pid_t)pid;
}

/* ---- saturation: the most extensions per second the watchdog sustains ---- */

/* One step: nlocks locks at ttl_ms, acquired in batches spread evenly over
 * one extension interval (so that their extensions are due evenly, as
 * those of locks acquired one by one over time), kept by the watchdog for
 * `seconds`; the extensions of the last seconds - TTL are counted. The
 * locks are then freed without a release (their keys expire within the
 * TTL; the next step uses other names). 0, or -1 if acquiring failed. */
typedef struct step_result {
    double offered, done;      /* extensions per second needed, and made */
    long behind, lost;
    double late_ms;            /* the latest a WATCH_BEHIND event said */
    double cpu_us;             /* client CPU per extension */
} step_result;

static int saturation_step(redlock_client *c, long nlocks, long ttl_ms, double seconds, int step, step_result *out)
{
    redlock_lock **locks = calloc((size_t)nlocks, sizeof *locks);
    int *res = calloc((size_t)nlocks, sizeof *res);
    char err[256];
    if (!locks || !res)
        return -1;
    for (long k = 0; k < nlocks; k++) {
        char name[80];
        snprintf(name, sizeof name, "bench:many:sat:%ld:%d:%ld", (long)getpid(), step, k);
        if (redlock_lock_open(&locks[k], c, name, err, sizeof err) != 0) {
            fprintf(stderr, "redlock_many: %s\n", err);
            return -1;
        }
    }
    enum { PART = 500 };
    long parts = (nlocks + PART - 1) / PART;
    int64_t interval_ns = ttl_ms * 1000000 / 3, a0 = bench_now_ns();
    long failed = 0;
    for (long p = 0; p < parts; p++) {
        bench_sleep_until_ns(a0 + interval_ns * p / parts);
        long first = p * PART, m = nlocks - first < PART ? nlocks - first : PART;
        redlock_lock_acquire_many(c, locks + first, (size_t)m, (uint32_t)ttl_ms, res + first, NULL, 0);
        for (long k = first; k < first + m; k++) {
            if (res[k] != 0 || redlock_lock_auto_extend(locks[k], 0, 0, on_lost, NULL, NULL) != 0)
                failed++;
        }
    }
    if (failed)
        fprintf(stderr, "redlock_many: step %d: %ld of %ld locks not acquired (not counted)\n", step, failed, nlocks);
    /* The first TTL settles (the acquisitions' own interval); then count. */
    bench_sleep_until_ns(a0 + ttl_ms * 1000000);
    atomic_store(&n_behind, 0);
    atomic_store(&n_behind_late_max_us, 0);
    long lost0 = atomic_load(&n_lost), ext0 = atomic_load(&n_ext);
    double cpu0 = cpu_s();
    int64_t m0 = bench_now_ns();
    bench_sleep_until_ns(m0 + (int64_t)(seconds * 1e9));
    double span = (double)(bench_now_ns() - m0) / 1e9;
    long ext = atomic_load(&n_ext) - ext0;
    out->done = (double)ext / span;
    out->offered = (double)(nlocks - failed) * 3000.0 / (double)ttl_ms;
    out->behind = atomic_load(&n_behind);
    out->late_ms = (double)atomic_load(&n_behind_late_max_us) / 1000.0;
    out->lost = atomic_load(&n_lost) - lost0;
    out->cpu_us = ext ? (cpu_s() - cpu0) * 1e6 / (double)ext : 0;
    for (long k = 0; k < nlocks; k++)
        redlock_lock_free(locks[k]);   /* no release: they expire */
    free(locks);
    free(res);
    return 0;
}

/* Steps of more and more locks at one TTL until the watchdog falls behind
 * (it tells WATCH_BEHIND: an extension started a sixth of the TTL late) or
 * a lock is lost, after the nodes' pipelined capacity, SET and the extend
 * script, measured the same way as in the other runs. A lock whose
 * extension starts late is due again an interval after it started, so
 * below that point the rate made is a little under the rate needed: the
 * share made tells how late extensions start on average. */
static int saturate(const char **urls, int n, long ttl_ms, long first, long stepn, long max_locks, double seconds,
                    double cap_s)
{
    double set_min = 0, set_sum = 0, ext_min = 0, ext_sum = 0;
    if (cap_s > 0) {
        set_min = node_capacity(urls, n, cap_s, 1, &set_sum);
        ext_min = node_capacity(urls, n, cap_s, 0, &ext_sum);
        printf("nodes' pipelined capacity, all %d nodes at once: SET ... PX %.0f/s per node (slowest %.0f/s), "
               "extend script %.0f/s per node (slowest %.0f/s)\n", n, set_sum / n, set_min, ext_sum / n, ext_min);
    }
    redlock_options ro;
    redlock_options_init(&ro);
    ro.on_event = on_event;
    ro.flags |= REDLOCK_OPT_NO_WAKE;
    redlock_client *c;
    char err[512];
    if (redlock_client_open(&c, urls, (size_t)n, &ro, err, sizeof err) != 0) {
        fprintf(stderr, "redlock_many: %s\n", err);
        return 1;
    }
    printf("%-8s %-10s %-10s %-7s %-8s %-6s %s\n", "locks", "needed/s", "made/s", "made %", "behind", "lost",
           "client CPU per extension");
    double best = 0, flat_out = 0;
    long best_locks = 0, told_first = -1;
    int step = 0, behind_step = 0;
    for (long nl = first; nl <= max_locks; nl += stepn, step++) {
        step_result r;
        if (saturation_step(c, nl, ttl_ms, seconds, step, &r) != 0)
            return 1;
        int kept = r.behind == 0 && r.lost == 0;
        printf("%-8ld %-10.0f %-10.0f %-7.1f %-8ld %-6ld %.1f us\n", nl, r.offered, r.done,
               r.offered > 0 ? 100.0 * r.done / r.offered : 0.0, r.behind, r.lost, r.cpu_us);
        if (r.behind)
            printf("         behind: up to %.0f ms late\n", r.late_ms);
        if (kept && r.done > best) {
            best = r.done;
            best_locks = nl;
        }
        if (!kept) {
            flat_out = r.done;
            behind_step = 1;
            if (r.lost && told_first < 0)
                told_first = r.behind > 0;
            break;
        }
    }
    if (cap_s > 0) {
        /* Again after the steps: the machine's load may have changed. */
        double s2_min, s2_sum, e2_min, e2_sum;
        s2_min = node_capacity(urls, n, cap_s, 1, &s2_sum);
        e2_min = node_capacity(urls, n, cap_s, 0, &e2_sum);
        printf("nodes' pipelined capacity again, after the steps: SET ... PX %.0f/s per node (slowest %.0f/s), "
               "extend script %.0f/s per node (slowest %.0f/s); the ratios below are to the mean of both\n",
               s2_sum / n, s2_min, e2_sum / n, e2_min);
        set_sum = (set_sum + s2_sum) / 2;
        ext_sum = (ext_sum + e2_sum) / 2;
    }
    printf("watchdog: sustained %.0f extensions/s (%ld locks at %ld ms)", best, best_locks, ttl_ms);
    if (behind_step)
        printf("; past that it fell behind, making %.0f/s", flat_out);
    else
        printf("; it kept up at every step (raise --max-locks)");
    printf("\n");
    if (set_sum > 0 && best > 0)
        printf("ratio to the nodes' pipelined capacity per node: %.3f of SET, %.3f of the extend script\n",
               best / (set_sum / n), best / (ext_sum / n));
    if (told_first >= 0)
        printf("locks lost at the last step: WATCH_BEHIND told %s\n", told_first ? "before" : "NOT before");
    redlock_client_free(c);
    return told_first == 0 ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: redlock_many [--locks N] [--ttl-ms T] [--seconds S] [--pause] [--capacity-s C]\n"
            "  --locks N       locks held at once (default 2000)\n"
            "  --ttl-ms T      their TTL (default 3000); auto-extended every T/3\n"
            "  --seconds S     how long they are held (default 5)\n"
            "  --pause         node 0 stopped (SIGSTOP) from 10%% to 90%% of the hold\n"
            "  --capacity-s C  seconds to measure the nodes' pipelined capacity (default 2; 0: skip)\n"
            "       redlock_many --saturate [--ttl-ms T] [--first N] [--step N] [--max-locks N] [--seconds S]\n"
            "  --saturate      steps of more and more locks at TTL T (default 3000), each held S seconds\n"
            "                  (default 4) after its first TTL, until the watchdog falls behind: the most\n"
            "                  extensions per second it sustains, against the nodes' pipelined SET\n"
            "  --first, --step, --max-locks  the steps (default 30000, 15000, 600000)\n"
            "run it through bench/run-many, which starts the nodes\n");
}

int main(int argc, char **argv)
{
    long nlocks = 2000, ttl_ms = -1, first = 30000, stepn = 15000, max_locks = 600000;
    double seconds = -1, cap_s = 2;
    int pause = 0, sat = 0;
    static const struct option opts[] = {
        { "locks", required_argument, NULL, 'n' }, { "ttl-ms", required_argument, NULL, 't' },
        { "seconds", required_argument, NULL, 's' }, { "pause", no_argument, NULL, 'p' },
        { "capacity-s", required_argument, NULL, 'c' }, { "help", no_argument, NULL, 'h' },
        { "saturate", no_argument, NULL, 'S' }, { "first", required_argument, NULL, 'f' },
        { "step", required_argument, NULL, 'i' }, { "max-locks", required_argument, NULL, 'm' },
        { NULL, 0, NULL, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'n': nlocks = strtol(optarg, NULL, 10); break;
        case 't': ttl_ms = strtol(optarg, NULL, 10); break;
        case 's': seconds = strtod(optarg, NULL); break;
        case 'p': pause = 1; break;
        case 'c': cap_s = strtod(optarg, NULL); break;
        case 'S': sat = 1; break;
        case 'f': first = strtol(optarg, NULL, 10); break;
        case 'i': stepn = strtol(optarg, NULL, 10); break;
        case 'm': max_locks = strtol(optarg, NULL, 10); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (ttl_ms < 0)
        ttl_ms = 3000;
    if (seconds < 0)
        seconds = sat ? 4 : 5;
    if (nlocks <= 0 || ttl_ms <= 0 || seconds <= 0 || first <= 0 || stepn <= 0 || max_locks < first) {
        usage(stderr);
        return 2;
    }
    const char *urls[BENCH_MAX_NODES];
    char *list;
    int n = bench_nodes_from_env("redlock_many", "bench/run-many", urls, BENCH_MAX_NODES, &list);
    if (n < 0)
        return 2;
    char cpu[256], load[32], ver[64];
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);
    redisContext *vc = bench_connect(urls[0]);
    bench_server_version(vc, ver, sizeof ver);
    if (vc)
        redisFree(vc);
    if (sat) {
        printf("# redlock_many --saturate: TTL %ld ms, %ld locks and %ld more each step, each step measured %.0f s; "
               "%d nodes (%s); %ld CPUs (%s), load %s; %s build\n", ttl_ms, first, stepn, seconds, n, ver,
               sysconf(_SC_NPROCESSORS_ONLN), cpu, load, BENCH_BUILD_TYPE);
        int rc = saturate(urls, n, ttl_ms, first, stepn, max_locks, seconds, cap_s);
        free(list);
        return rc;
    }
    printf("# redlock_many: %ld locks, TTL %ld ms, held %.0f s%s; %d nodes (%s); %ld CPUs (%s), load %s; %s build\n",
           nlocks, ttl_ms, seconds, pause ? ", node 0 stopped for most of it" : "", n, ver,
           sysconf(_SC_NPROCESSORS_ONLN), cpu, load, BENCH_BUILD_TYPE);

    double cap_min = 0, cap_sum = 0;
    if (cap_s > 0) {
        cap_min = node_capacity(urls, n, cap_s, 0, &cap_sum);
        printf("nodes' pipelined capacity (extend script, all %d nodes at once): slowest %.0f/s, total %.0f/s\n", n,
               cap_min, cap_sum);
    }

    long rss0 = status_kb("VmRSS");
    redlock_options ro;
    redlock_options_init(&ro);
    ro.on_event = on_event;
    ro.flags |= REDLOCK_OPT_NO_WAKE;
    redlock_client *c;
    char err[512];
    if (redlock_client_open(&c, urls, (size_t)n, &ro, err, sizeof err) != 0) {
        fprintf(stderr, "redlock_many: %s\n", err);
        return 1;
    }
    /* The client itself, idle: connected, its auto-extend thread started
     * and through one batch, one lock's worth of code run. What the held
     * locks add is counted from here; what the client costs without a lock
     * (the libraries' pages it touches, its threads, its connections) is
     * the difference to before it. */
    {
        redlock_lock *w;
        if (redlock_lock_open(&w, c, "bench:many:warm", err, sizeof err) != 0 ||
            redlock_lock_acquire(w, 300, REDLOCK_WAIT_DEFAULT) != 0 ||
            redlock_lock_auto_extend(w, 0, 0, NULL, NULL, NULL) != 0) {
            fprintf(stderr, "redlock_many: the warm-up lock: %s\n", w ? redlock_lock_errmsg(w) : err);
            return 1;
        }
        bench_sleep_until_ns(bench_now_ns() + 250000000);   /* extended at 100 and 200 ms */
        redlock_lock_release(w);
        redlock_lock_free(w);
    }
    long rss_client = status_kb("VmRSS");
    long long heap_client = heap_in_use();
    /* Sequential acquisitions against redlock_lock_acquire_many, on the
     * same fresh locks in turn, each followed by releasing them all. */
    {
        long m = nlocks < 5000 ? nlocks : 5000;
        redlock_lock **cmp = calloc((size_t)m, sizeof *cmp);
        int *res = calloc((size_t)m, sizeof *res);
        double rate[2] = { 0, 0 };
        for (long k = 0; k < m; k++) {
            char name[64];
            snprintf(name, sizeof name, "bench:many:cmp:%ld:%ld", (long)getpid(), k);
            if (redlock_lock_open(&cmp[k], c, name, err, sizeof err) != 0) {
                fprintf(stderr, "redlock_many: %s\n", err);
                return 1;
            }
        }
        for (int round = 0; round < 2; round++) {
            for (int how = 0; how < 2; how++) {
                long ok = 0;
                int64_t a0 = bench_now_ns();
                if (how == 0) {
                    for (long k = 0; k < m; k++)
                        ok += redlock_lock_acquire(cmp[k], (uint32_t)ttl_ms, REDLOCK_WAIT_NONE) == 0;
                } else {
                    for (long k = 0; k < m; k += 1000) {
                        size_t part = (size_t)(m - k < 1000 ? m - k : 1000);
                        redlock_lock_acquire_many(c, cmp + k, part, (uint32_t)ttl_ms, res + k, NULL, 0);
                        for (size_t j = 0; j < part; j++)
                            ok += res[k + (long)j] == 0;
                    }
                }
                double s_ = (double)(bench_now_ns() - a0) / 1e9;
                if (round == 1)   /* the first round warms the connections up */
                    rate[how] = (double)ok / s_;
                if (ok != m)
                    fprintf(stderr, "redlock_many: %ld of %ld %s acquisitions failed\n", m - ok, m,
                            how ? "batched" : "sequential");
                for (long k = 0; k < m; k++)
                    if (redlock_lock_is_held(cmp[k]))
                        redlock_lock_release(cmp[k]);
            }
        }
        printf("acquisitions of %ld locks: sequential %.0f/s, redlock_lock_acquire_many (1,000 at a time) "
               "%.0f/s: %.1fx\n", m, rate[0], rate[1], rate[0] > 0 ? rate[1] / rate[0] : 0.0);
        for (long k = 0; k < m; k++)
            redlock_lock_free(cmp[k]);
        free(cmp);
        free(res);
    }

    redlock_lock **locks = calloc((size_t)nlocks, sizeof *locks);
    int failed = 0;
    int64_t t0 = bench_now_ns();
    /* With the client's retries (a loaded machine times a node out now
     * and then), but without wake-up: a handle that registers as a waiter
     * keeps an eventfd, and 50,000 of them pass a usual fd limit. */
    for (long k = 0; k < nlocks && !failed; k++) {
        char name[64];
        snprintf(name, sizeof name, "bench:many:%ld:%ld", (long)getpid(), k);
        if (redlock_lock_open(&locks[k], c, name, err, sizeof err) != 0 ||
            redlock_lock_acquire(locks[k], (uint32_t)ttl_ms, REDLOCK_WAIT_DEFAULT) != 0 ||
            redlock_lock_auto_extend(locks[k], 0, 0, on_lost, NULL, NULL) != 0) {
            fprintf(stderr, "redlock_many: lock %ld: %s\n", k, locks[k] ? redlock_lock_errmsg(locks[k]) : err);
            failed = 1;
        }
    }
    double acq_s = (double)(bench_now_ns() - t0) / 1e9;
    printf("sequential acquire + auto_extend: %ld locks in %.2f s: %.0f/s\n", nlocks, acq_s, (double)nlocks / acq_s);
    if (failed)
        return 1;

    pid_t paused = -1;
    long ext0 = atomic_load(&n_ext);
    double cpu0 = cpu_s();
    int64_t h0 = bench_now_ns(), hold_ns = (int64_t)(seconds * 1e9);
    if (pause) {
        bench_sleep_until_ns(h0 + hold_ns / 10);
        paused = node_pid(0);
        if (paused <= 0 || kill(paused, SIGSTOP) != 0) {
            fprintf(stderr, "redlock_many: cannot stop node 0 (pid %ld)\n", (long)paused);
            return 1;
        }
        bench_sleep_until_ns(h0 + hold_ns * 9 / 10);
        kill(paused, SIGCONT);
    }
    bench_sleep_until_ns(h0 + hold_ns / 2);
    long rss_held = status_kb("VmRSS");
    long long heap_held = heap_in_use();
    bench_sleep_until_ns(h0 + hold_ns);
    double used = cpu_s() - cpu0;
    long ext = atomic_load(&n_ext) - ext0;
    long held = 0;
    for (long k = 0; k < nlocks; k++)
        held += redlock_lock_is_held(locks[k]);
    long lost = atomic_load(&n_lost);
    double rate = (double)ext / seconds;
    printf("held %.0f s: %ld of %ld still held, %ld lost; %ld extensions (%.0f/s, needed %.0f/s), "
           "%ld failed tries, %ld node errors, %ld behind events\n",
           seconds, held, nlocks, lost, ext, rate, (double)nlocks * 3000.0 / (double)ttl_ms,
           atomic_load(&n_ext_failed), atomic_load(&n_node_err), atomic_load(&n_behind));
    if (failed_msg[0])
        printf("  first failed try: %s\n", failed_msg);
    if (behind_msg[0])
        printf("  first behind event: %s\n", behind_msg);
    printf("client CPU during the hold: %.2f s, %.1f us per extension\n", used, ext ? used * 1e6 / (double)ext : 0.0);
    if (cap_sum > 0)
        printf("extensions/s as a ratio to the nodes' pipelined capacity (per node, the mean of %d): %.3f\n", n,
               rate / (cap_sum / n));
    printf("RSS: %ld KB before the client, %ld KB with it idle, %ld KB with the locks held, peak %ld KB: "
           "%.0f bytes per held lock (%.0f counting the idle client's %ld KB)\n", rss0, rss_client, rss_held,
           status_kb("VmHWM"), (double)(rss_held - rss_client) * 1024.0 / (double)nlocks,
           (double)(rss_held - rss0) * 1024.0 / (double)nlocks, rss_client - rss0);
    printf("heap in use (malloc_info, every arena): %lld KB with the client idle, %lld KB with the locks held: "
           "%.0f bytes per held lock\n", heap_client / 1024, heap_held / 1024,
           (double)(heap_held - heap_client) / (double)nlocks);

    int64_t r0 = bench_now_ns();
    long release_failed = 0;
    for (long k = 0; k < nlocks; k++) {
        if (redlock_lock_is_held(locks[k]) && redlock_lock_release(locks[k]) != 0)
            release_failed++;
        redlock_lock_free(locks[k]);
    }
    printf("released in %.2f s (%ld failed)\n", (double)(bench_now_ns() - r0) / 1e9, release_failed);
    redlock_client_free(c);
    free(locks);
    free(list);
    if (lost || held != nlocks) {
        printf("FAIL: %ld locks lost\n", nlocks - held);
        return 1;
    }
    return 0;
}
