/* SPDX-License-Identifier: BSD-3-Clause */
/* rwlock.c: redlock_rwbench, the read-write lock's numbers (bench/README.md,
 * docs/performance.md "Read-write lock"), each against the mutex measured in
 * the same run:
 *
 * 1. cycles: a reused handle's acquire (one attempt) + release, for the
 *    mutex, the read side and the write side, taking turns block by block
 *    on the same nodes; p50 and mean, and each side's ratio to the mutex.
 * 2. throughput: 16 reader threads and 1 writer thread on one resource (each
 *    thread its own handle on one shared client, waiting acquires, a 1 ms
 *    hold), against 17 mutex threads in the same way: acquisitions per
 *    second, and the writer's longest wait.
 * 3. node work: the commands and the CPU time (used_cpu_sys + used_cpu_user
 *    of INFO) the nodes spent per cycle of section 1, for each kind; and
 *    the CPU time this process (the client) spent per cycle.
 *
 * Run through bench/run-rwlock, which starts the nodes. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bench.h"
#include "redlock.h"

enum { K_MUTEX, K_READ, K_WRITE, NK };
static const char *const kname[NK] = { "mutex", "read", "write" };

static int new_handle(redlock_lock **out, redlock_client *c, const char *res, int kind)
{
    return kind == K_READ ? redlock_lock_new_read(out, c, res)
           : kind == K_WRITE ? redlock_lock_new_write(out, c, res) : redlock_lock_new(out, c, res);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- node work: commands and CPU from INFO, summed over the nodes ---- */

typedef struct node_work {
    double cpu_s;
    long long calls;
    double client_cpu_s;   /* this process's CPU (every thread: the client's engine too) */
} node_work;

static double process_cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
           ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

static void read_work(redisContext **ctx, size_t n, node_work *w)
{
    memset(w, 0, sizeof *w);
    for (size_t i = 0; i < n; i++) {
        bench_node_stat st;
        if (bench_node_stats(ctx[i], &st) != 0)
            continue;
        w->cpu_s += st.cpu_s;
        w->calls += st.cmds;
    }
}

/* ---- 1. cycles ---- */

static int cycles(redlock_client *c, size_t iterations, size_t block, int64_t *out[NK], redisContext **ctx, size_t n,
                  node_work per[NK])
{
    char res[NK][64];
    redlock_lock *h[NK];
    for (int k = 0; k < NK; k++) {
        snprintf(res[k], sizeof res[k], "rwbench:%s:%d", kname[k], (int)getpid());
        if (new_handle(&h[k], c, res[k], k) != 0) {
            fprintf(stderr, "redlock_rwbench: cannot make a %s handle\n", kname[k]);
            return -1;
        }
    }
    /* warm-up: connections made, scripts loaded */
    for (int w = 0; w < 50; w++)
        for (int k = 0; k < NK; k++)
            if (redlock_lock_acquire(h[k], 10000, REDLOCK_WAIT_NONE) == 0)
                redlock_lock_release(h[k]);
    int rc = 0;
    size_t done[NK] = { 0 };
    node_work before, after;
    memset(per, 0, sizeof(node_work) * NK);
    while (done[K_MUTEX] < iterations && rc == 0) {
        for (int k = 0; k < NK && rc == 0; k++) {
            read_work(ctx, n, &before);
            double cpu0 = process_cpu_s();
            size_t b0 = done[k];
            for (size_t j = 0; j < block && done[k] < iterations; j++) {
                int64_t t0 = bench_now_ns();
                int a = redlock_lock_acquire(h[k], 10000, REDLOCK_WAIT_NONE);
                int r = a == 0 ? redlock_lock_release(h[k]) : a;
                int64_t t1 = bench_now_ns();
                if (a != 0 || r != 0) {
                    fprintf(stderr, "redlock_rwbench: %s cycle failed: %s (%s)\n", kname[k], redlock_error_name(r),
                            redlock_lock_errmsg(h[k]));
                    rc = -1;
                    break;
                }
                out[k][done[k]++] = t1 - t0;
            }
            per[k].client_cpu_s += process_cpu_s() - cpu0;
            read_work(ctx, n, &after);
            per[k].cpu_s += after.cpu_s - before.cpu_s;
            /* INFO itself is one call per node per sample: not the cycle's */
            per[k].calls += after.calls - before.calls - (long long)n;
            (void)b0;
        }
    }
    for (int k = 0; k < NK; k++)
        redlock_lock_free(h[k]);
    return rc;
}

/* ---- 2. throughput ---- */

typedef struct worker {
    pthread_t t;
    redlock_client *c;
    const char *res;
    int kind;
    _Atomic int *stop;
    long long count;
    int64_t longest_wait_ns;
    int err;
} worker;

static void *work(void *p)
{
    worker *w = p;
    redlock_lock *h;
    if (new_handle(&h, w->c, w->res, w->kind) != 0) {
        w->err = 1;
        return NULL;
    }
    while (!atomic_load(w->stop)) {
        int64_t t0 = bench_now_ns();
        int rc = redlock_lock_acquire(h, 10000, 1000);
        int64_t waited = bench_now_ns() - t0;
        if (rc == REDLOCK_ETIMEDOUT || rc == REDLOCK_ENOTACQUIRED)
            continue;
        if (rc != 0) {
            fprintf(stderr, "redlock_rwbench: %s worker: %s\n", kname[w->kind], redlock_lock_errmsg(h));
            w->err = 1;
            break;
        }
        if (waited > w->longest_wait_ns)
            w->longest_wait_ns = waited;
        struct timespec hold = { 0, 1000000 };
        nanosleep(&hold, NULL);
        if (redlock_lock_release(h) != 0) {
            fprintf(stderr, "redlock_rwbench: %s release: %s\n", kname[w->kind], redlock_lock_errmsg(h));
            w->err = 1;
            break;
        }
        w->count++;
    }
    redlock_lock_free(h);
    return NULL;
}

/* Runs the workers for seconds; their counts and waits are left in w. */
static int run_workers(worker *w, int nw, double seconds)
{
    _Atomic int stop = 0;
    for (int i = 0; i < nw; i++) {
        w[i].stop = &stop;
        if (pthread_create(&w[i].t, NULL, work, &w[i]) != 0)
            return -1;
    }
    struct timespec d = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&d, NULL);
    atomic_store(&stop, 1);
    int err = 0;
    for (int i = 0; i < nw; i++) {
        pthread_join(w[i].t, NULL);
        err |= w[i].err;
    }
    return err ? -1 : 0;
}

int main(int argc, char **argv)
{
    size_t iterations = 2000, block = 50, nodes = 5;
    int readers = 16, delay_ms = 0;
    double seconds = 3.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke")) {
            iterations = 200;
            seconds = 0.5;
        } else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
            iterations = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--readers") && i + 1 < argc) {
            readers = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc) {
            delay_ms = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
            nodes = (size_t)atol(argv[++i]);
        } else {
            fprintf(stderr, "usage: redlock_rwbench [--smoke] [--iterations K] [--seconds S] [--readers N] "
                            "[--nodes N] [--delay-ms D]\n");
            return 2;
        }
    }
    if (iterations == 0 || readers < 1 || readers > 256 || seconds <= 0) {
        fprintf(stderr, "redlock_rwbench: bad --iterations, --readers or --seconds\n");
        return 2;
    }
    const char *urls[BENCH_MAX_NODES];
    char *list = NULL;
    int got = bench_nodes_from_env("redlock_rwbench", "bench/run-rwlock", urls, BENCH_MAX_NODES, &list);
    if (got < 0)
        return 2;
    if ((size_t)got < nodes)
        nodes = (size_t)got;
    redisContext *ctx[BENCH_MAX_NODES] = { 0 };
    for (size_t i = 0; i < nodes; i++)
        if (!(ctx[i] = bench_connect(urls[i]))) {
            fprintf(stderr, "redlock_rwbench: cannot connect to %s\n", urls[i]);
            return 1;
        }
    char cpu[128], load[32], server[64];
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);
    bench_server_version(ctx[0], server, sizeof server);
    printf("redlock_rwbench: %zu nodes (%s), %s, %ld CPUs, load %s, build %s\n", nodes, server, cpu,
           sysconf(_SC_NPROCESSORS_ONLN), load, BENCH_BUILD_TYPE);

    /* --delay-ms: every node behind a proxy that holds each reply that long
     * (slowproxy.c), a network's round trip instead of loopback's. */
    char err[512];
    bench_proxy *proxy[BENCH_MAX_NODES];
    const char *curls[BENCH_MAX_NODES];
    for (size_t i = 0; i < nodes; i++) {
        curls[i] = urls[i];
        if (delay_ms > 0) {
            if (bench_proxy_start(&proxy[i], urls[i], delay_ms, err, sizeof err) != 0) {
                fprintf(stderr, "redlock_rwbench: proxy: %s\n", err);
                return 1;
            }
            curls[i] = bench_proxy_url(proxy[i]);
        }
    }
    if (delay_ms > 0)
        printf("every reply delayed %d ms by a proxy\n", delay_ms);
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 500 + 2 * (uint32_t)delay_ms;
    redlock_client *c;
    if (redlock_client_open(&c, curls, nodes, &o, err, sizeof err) != 0) {
        fprintf(stderr, "redlock_rwbench: %s\n", err);
        return 1;
    }

    /* 1 and 3 */
    int64_t *t[NK];
    for (int k = 0; k < NK; k++)
        t[k] = calloc(iterations, sizeof *t[k]);
    node_work per[NK];
    int rc = cycles(c, iterations, block, t, ctx, nodes, per);
    if (rc == 0) {
        double p50[NK], mean[NK];
        for (int k = 0; k < NK; k++) {
            double sum = 0;
            for (size_t i = 0; i < iterations; i++)
                sum += (double)t[k][i];
            qsort(t[k], iterations, sizeof *t[k], cmp_i64);
            p50[k] = (double)t[k][bench_rank(iterations, 0.5) - 1] / 1e3;
            mean[k] = sum / (double)iterations / 1e3;
        }
        printf("\ncycle (acquire, one attempt, + release; reused handle), %zu cycles each, blocks of %zu in turn\n",
               iterations, block);
        printf("%-6s %10s %10s %9s %9s %14s %16s %18s\n", "kind", "p50 us", "mean us", "p50/mutex", "mean/mutex",
               "node cmds/cyc", "node CPU us/cyc", "client CPU us/cyc");
        for (int k = 0; k < NK; k++)
            printf("%-6s %10.1f %10.1f %8.2fx %8.2fx %14.2f %16.1f %18.1f\n", kname[k], p50[k], mean[k],
                   p50[k] / p50[K_MUTEX], mean[k] / mean[K_MUTEX], (double)per[k].calls / (double)iterations,
                   per[k].cpu_s * 1e6 / (double)iterations, per[k].client_cpu_s * 1e6 / (double)iterations);
        printf("(node commands count EVALSHA and the commands its script runs, over all %zu nodes)\n", nodes);
    }
    for (int k = 0; k < NK; k++)
        free(t[k]);

    /* 2 */
    if (rc == 0) {
        char res_rw[64], res_m[64];
        snprintf(res_rw, sizeof res_rw, "rwbench:tp-rw:%d", (int)getpid());
        snprintf(res_m, sizeof res_m, "rwbench:tp-mutex:%d", (int)getpid());
        int nw = readers + 1;
        worker *w = calloc((size_t)nw, sizeof *w), *m = calloc((size_t)nw, sizeof *m);
        for (int i = 0; i < nw; i++) {
            w[i] = (worker){ .c = c, .res = res_rw, .kind = i < readers ? K_READ : K_WRITE };
            m[i] = (worker){ .c = c, .res = res_m, .kind = K_MUTEX };
        }
        rc = run_workers(w, nw, seconds);
        if (rc == 0)
            rc = run_workers(m, nw, seconds);
        if (rc == 0) {
            long long reads = 0, writes = w[readers].count, mutexes = 0;
            int64_t mutex_wait = 0;
            for (int i = 0; i < readers; i++)
                reads += w[i].count;
            for (int i = 0; i < nw; i++) {
                mutexes += m[i].count;
                if (m[i].longest_wait_ns > mutex_wait)
                    mutex_wait = m[i].longest_wait_ns;
            }
            printf("\nthroughput, %.1f s each, 1 ms holds, waiting acquires, one client:\n", seconds);
            printf("  %d readers + 1 writer: %.0f reads/s, %.0f writes/s (%.0f/s in all); the writer's longest "
                   "wait %.0f ms\n", readers, reads / seconds, writes / seconds, (reads + writes) / seconds,
                   (double)w[readers].longest_wait_ns / 1e6);
            printf("  %d mutex holders:      %.0f acquisitions/s; longest wait %.0f ms\n", nw, mutexes / seconds,
                   (double)mutex_wait / 1e6);
            printf("  read-write / mutex: %.2fx\n", mutexes ? (double)(reads + writes) / (double)mutexes : 0.0);
            if (writes == 0) {
                fprintf(stderr, "redlock_rwbench: the writer never got the lock among %d readers\n", readers);
                rc = -1;
            }
        }
        free(w);
        free(m);
    }
    redlock_client_free(c);
    for (size_t i = 0; i < nodes; i++) {
        redisFree(ctx[i]);
        if (delay_ms > 0)
            bench_proxy_stop(proxy[i]);
    }
    free(list);
    return rc == 0 ? 0 : 1;
}
