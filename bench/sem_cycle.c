/* SPDX-License-Identifier: BSD-3-Clause */
/* sem_cycle.c: redlock_sem_bench, the counting semaphore's acquire+release
 * cycle against the mutex's, in the same run on the same nodes: a permit of
 * a semaphore of limit L = 1, 3 and 10 with permits free, and L = 10 with 9
 * of them held by other handles (a permit found on the second round, or
 * the first when the random start lands on the free one). Variants take
 * turns in blocks, so that a change of the machine's load hits all of
 * them alike; each is reported as its median and p90 cycle time, its ratio
 * to the mutex's median, and the node commands (INFO commandstats, those
 * inside scripts included) and node CPU (INFO cpu) per acquisition, summed
 * over the nodes. Run it through bench/run-sem (which starts the nodes). */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "redlock.h"

#define MAX_NODES BENCH_MAX_NODES

typedef bench_node_stat node_stat;

typedef struct variant {
    const char *name;
    uint32_t limit;        /* 0: the mutex */
    uint32_t others;       /* permits held by other handles during the cycles */
    redlock_lock *lock;
    redlock_lock *held[16];
    int64_t *ns;           /* cycle times */
    size_t n;
    long long cmds;
    double cpu_s;
} variant;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_us(variant *v, double p)
{
    if (!v->n)
        return 0;
    qsort(v->ns, v->n, sizeof *v->ns, cmp_i64);
    return v->ns[bench_rank(v->n, p) - 1] / 1e3;
}

int main(int argc, char **argv)
{
    int iterations = 3000, block = 100, smoke = 0;
    uint32_t node_timeout = 200;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            smoke = 1;
        else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--node-timeout-ms") && i + 1 < argc)
            node_timeout = (uint32_t)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: redlock_sem_bench [--smoke] [--iterations K] [--node-timeout-ms MS]\n");
            return 2;
        }
    }
    if (smoke)
        iterations = 200, block = 50;
    const char *urls[MAX_NODES];
    char *list = NULL;
    int n_nodes = bench_nodes_from_env("redlock_sem_bench", "bench/run-sem", urls, MAX_NODES, &list);
    if (n_nodes < 0)
        return 2;

    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = node_timeout;
    redlock_client *c;
    char err[1024];
    if (redlock_client_open(&c, urls, (size_t)n_nodes, &o, err, sizeof err)) {
        fprintf(stderr, "redlock_sem_bench: %s\n", err);
        return 1;
    }
    redisContext *ctl[MAX_NODES];
    for (int i = 0; i < n_nodes; i++)
        if (!(ctl[i] = bench_connect(urls[i]))) {
            fprintf(stderr, "redlock_sem_bench: cannot connect to %s\n", urls[i]);
            return 1;
        }

    variant vs[] = {
        { "mutex", 0, 0, NULL, { 0 }, NULL, 0, 0, 0 },
        { "semaphore L=1", 1, 0, NULL, { 0 }, NULL, 0, 0, 0 },
        { "semaphore L=3", 3, 0, NULL, { 0 }, NULL, 0, 0, 0 },
        { "semaphore L=10", 10, 0, NULL, { 0 }, NULL, 0, 0, 0 },
        { "semaphore L=10, 9 held", 10, 9, NULL, { 0 }, NULL, 0, 0, 0 },
    };
    size_t nv = sizeof vs / sizeof vs[0];
    char res[64];
    for (size_t k = 0; k < nv; k++) {
        variant *v = &vs[k];
        snprintf(res, sizeof res, "bench-sem:%ld:%zu", (long)getpid(), k);
        int rc = v->limit ? redlock_lock_new_semaphore(&v->lock, c, res, v->limit, 1) : redlock_lock_new(&v->lock, c, res);
        for (uint32_t h = 0; !rc && h < v->others; h++) {
            rc = redlock_lock_new_semaphore(&v->held[h], c, res, v->limit, 1);
            if (!rc)
                rc = redlock_lock_acquire(v->held[h], 600000, REDLOCK_WAIT_NONE);
        }
        v->ns = malloc(sizeof *v->ns * (size_t)iterations);
        if (rc || !v->ns) {
            fprintf(stderr, "redlock_sem_bench: setting up %s: %s\n", v->name, redlock_strerror(rc));
            return 1;
        }
    }
    /* Warm-up: connections, script caches. */
    for (size_t k = 0; k < nv; k++)
        for (int w = 0; w < 20; w++)
            if (redlock_lock_acquire(vs[k].lock, 10000, REDLOCK_WAIT_NONE) == 0)
                redlock_lock_release(vs[k].lock);

    int failed = 0;
    for (int done = 0; done < iterations; done += block) {
        for (size_t k = 0; k < nv; k++) {
            variant *v = &vs[k];
            node_stat before[MAX_NODES], after;
            for (int i = 0; i < n_nodes; i++)
                bench_node_stats(ctl[i], &before[i]);
            for (int j = 0; j < block && done + j < iterations; j++) {
                int64_t t0 = bench_now_ns();
                int rc = redlock_lock_acquire(v->lock, 10000, REDLOCK_WAIT_NONE);
                if (rc == 0)
                    rc = redlock_lock_release(v->lock);
                int64_t t1 = bench_now_ns();
                if (rc) {
                    fprintf(stderr, "redlock_sem_bench: %s: %s: %s\n", v->name, redlock_error_name(rc),
                            redlock_lock_errmsg(v->lock));
                    failed++;
                    continue;
                }
                v->ns[v->n++] = t1 - t0;
            }
            for (int i = 0; i < n_nodes; i++)
                if (bench_node_stats(ctl[i], &after) == 0) {
                    v->cmds += after.cmds - before[i].cmds;
                    v->cpu_s += after.cpu_s - before[i].cpu_s;
                }
        }
    }

    char cpu[256], load[64], ver[64];
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);
    bench_server_version(ctl[0], ver, sizeof ver);
    printf("machine: %ld CPUs, %s, 1-min load %s; %d nodes (%s first), node timeout %u ms\n",
           sysconf(_SC_NPROCESSORS_ONLN), cpu, load, n_nodes, ver, node_timeout);
    printf("cycle = acquire (one attempt) + release by one handle, %d cycles per variant in blocks of %d, "
           "variants taking turns\n", iterations, block);
    printf("%-24s %10s %10s %8s %10s %12s\n", "variant", "median us", "p90 us", "ratio", "ncmd/acq", "ncpu us/acq");
    double base = median_us(&vs[0], 0.5);
    for (size_t k = 0; k < nv; k++) {
        variant *v = &vs[k];
        double med = median_us(v, 0.5), p90 = median_us(v, 0.9);
        printf("%-24s %10.1f %10.1f %8.2f %10.1f %12.1f\n", v->name, med, p90, base > 0 ? med / base : 0,
               v->n ? (double)v->cmds / (double)v->n : 0, v->n ? v->cpu_s * 1e6 / (double)v->n : 0);
    }
    printf("ratio = median / the mutex's median; ncmd, ncpu = what the nodes ran and spent per acquisition "
           "(and its release), summed over all nodes: INFO commandstats calls (commands inside scripts "
           "included) and used_cpu_sys + used_cpu_user\n");
    for (size_t k = 0; k < nv; k++) {
        for (uint32_t h = 0; h < vs[k].others; h++) {
            redlock_lock_release(vs[k].held[h]);
            redlock_lock_free(vs[k].held[h]);
        }
        redlock_lock_free(vs[k].lock);
        free(vs[k].ns);
    }
    for (int i = 0; i < n_nodes; i++)
        redisFree(ctl[i]);
    redlock_client_free(c);
    free(list);
    if (failed)
        fprintf(stderr, "redlock_sem_bench: %d cycles failed\n", failed);
    return failed ? 1 : 0;
}
