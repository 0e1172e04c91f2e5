/* SPDX-License-Identifier: BSD-3-Clause */
/* cycle.c: the C core's uncontended cycle for bench/run-langs: per cycle, a new
 * handle on a fresh key, acquire (one attempt), release, free; the same C work
 * the bindings' cycles do. usage: cycle CYCLES WARMUP PREFIX (nodes from
 * REDLOCK_TEST_NODES); prints "RESULT p50_us p99_us n failures". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redlock.h"

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 4 || !getenv("REDLOCK_TEST_NODES")) {
        fprintf(stderr, "usage: REDLOCK_TEST_NODES=... cycle CYCLES WARMUP PREFIX\n");
        return 2;
    }
    int cycles = atoi(argv[1]), warmup = atoi(argv[2]);
    char *nodes = strdup(getenv("REDLOCK_TEST_NODES"));
    const char *urls[16];
    size_t n = 0;
    for (char *save = NULL, *u = strtok_r(nodes, ",", &save); u && n < 16; u = strtok_r(NULL, ",", &save))
        urls[n++] = u;
    redlock_client *client = NULL;
    char err[256];
    if (redlock_client_open(&client, urls, n, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "cycle: %s\n", err);
        return 1;
    }
    long long *s = calloc((size_t)cycles, sizeof *s);
    int failures = 0;
    for (int i = -warmup; i < cycles; i++) {
        char key[128];
        snprintf(key, sizeof key, "%s-%d", argv[3], i + warmup);
        long long t0 = now_ns();
        redlock_lock *lock = NULL;
        int rc = redlock_lock_new(&lock, client, key);
        if (rc == 0) {
            rc = redlock_lock_acquire(lock, 10000, REDLOCK_WAIT_NONE);
            if (rc == 0)
                rc = redlock_lock_release(lock);
        }
        redlock_lock_free(lock);
        long long t = now_ns() - t0;
        if (i >= 0) {
            s[i] = t;
            failures += rc != 0;
        }
    }
    qsort(s, (size_t)cycles, sizeof *s, cmp);
    printf("RESULT %.1f %.1f %d %d\n", s[cycles / 2] / 1000.0, s[cycles * 99 / 100] / 1000.0, cycles, failures);
    redlock_client_free(client);
    free(s);
    free(nodes);
    return 0;
}
