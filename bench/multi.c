/* SPDX-License-Identifier: BSD-3-Clause */
/* multi.c: the price of a multi-resource lock (redlock_lock_new_multi).
 * One client, uncontended, acquire (one attempt) + release cycles of a
 * mutex and of sets of 1, 2, 8 and 32 names, interleaved in rounds so that
 * the machine's load falls on all of them alike; prints each kind's cycles
 * per second and its ratio to the mutex measured in the same run.
 * bench/run-multi starts the nodes. Exits 1 if a cycle failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "redlock.h"

enum { KINDS = 5, ROUNDS = 5 };
static const int set_size[KINDS] = { 0, 1, 2, 8, 32 };   /* 0: the mutex */

int main(int argc, char **argv)
{
    int cycles = argc > 1 ? atoi(argv[1]) : 2000;
    const char *urls[BENCH_MAX_NODES];
    char *list = NULL;
    int n = bench_nodes_from_env("redlock_multi_bench", "bench/run-multi", urls, BENCH_MAX_NODES, &list);
    if (n < 0 || cycles <= 0)
        return 2;
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 250;
    redlock_client *c;
    char err[512];
    if (redlock_client_open(&c, urls, (size_t)n, &o, err, sizeof err) != 0) {
        fprintf(stderr, "client: %s\n", err);
        return 1;
    }
    redlock_lock *locks[KINDS];
    static char names[32][32];
    const char *np[32];
    for (int k = 0; k < 32; k++) {
        snprintf(names[k], sizeof names[k], "bench:multi:%d", k);
        np[k] = names[k];
    }
    for (int k = 0; k < KINDS; k++) {
        int rc = set_size[k] ? redlock_lock_new_multi(&locks[k], c, np, (size_t)set_size[k])
                             : redlock_lock_new(&locks[k], c, "bench:multi:mutex");
        if (rc) {
            fprintf(stderr, "lock %d: %s\n", k, redlock_strerror(rc));
            return 1;
        }
    }
    char cpu[128], load[32];
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);
    printf("# redlock_multi_bench: %d nodes, %d cycles per kind per round, %d rounds; %s, load %s\n", n, cycles,
           ROUNDS, cpu, load);
    double total_ns[KINDS] = { 0 };
    int failed = 0;
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < KINDS; k++) {
            int64_t t0 = bench_now_ns();
            for (int i = 0; i < cycles; i++) {
                if (redlock_lock_acquire(locks[k], 10000, REDLOCK_WAIT_NONE) != 0 || redlock_lock_release(locks[k]) != 0) {
                    if (failed++ < 3)
                        fprintf(stderr, "kind %d: %s\n", set_size[k], redlock_lock_errmsg(locks[k]));
                }
            }
            total_ns[k] += (double)(bench_now_ns() - t0);
        }
    for (int k = 0; k < KINDS; k++) {
        double per_s = (double)cycles * ROUNDS / (total_ns[k] / 1e9);
        double mutex_per_s = (double)cycles * ROUNDS / (total_ns[0] / 1e9);
        if (set_size[k])
            printf("set of %2d names: %8.0f cycles/s, %.2fx the mutex's\n", set_size[k], per_s, per_s / mutex_per_s);
        else
            printf("mutex:            %8.0f cycles/s\n", per_s);
    }
    printf("failed cycles: %d\n", failed);
    for (int k = 0; k < KINDS; k++)
        redlock_lock_free(locks[k]);
    redlock_client_free(c);
    free(list);
    return failed ? 1 : 0;
}
