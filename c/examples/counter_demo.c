/* SPDX-License-Identifier: BSD-3-Clause */
/* counter_demo.c: the main job's demo. Several processes increment one
 * counter, kept in a plain file with no other protection, under one Redlock;
 * half-way two of the five nodes are killed. No increment may be lost.
 * Run it under the harness: tests/harness/nodes.py exec --count 5 -- redlock_demo */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redlock.h"

#define WORKERS 4
#define ROUNDS 50

static long read_counter(int fd)
{
    long v = 0;
    if (pread(fd, &v, sizeof v, 0) != (ssize_t)sizeof v)
        return 0;
    return v;
}

static int worker(int id, const char *const *urls, size_t n, const char *path)
{
    redlock_options o;
    redlock_options_init(&o);
    o.retry_delay_ms = 5;
    o.retry_jitter_ms = 20;
    redlock_client *c;
    char err[512];
    if (redlock_client_open(&c, urls, n, &o, err, sizeof err) != 0) {
        fprintf(stderr, "worker %d: %s\n", id, err);
        return 1;
    }
    redlock_lock *l;
    redlock_lock_new(&l, c, "demo:counter");
    int fd = open(path, O_RDWR);
    for (int i = 0; i < ROUNDS; i++) {
        int rc = redlock_lock_acquire(l, 5000, 30000);
        if (rc != 0) {
            fprintf(stderr, "worker %d: %s\n", id, redlock_lock_errmsg(l));
            return 1;
        }
        /* An unprotected read-modify-write: only the lock keeps it whole. */
        long v = read_counter(fd);
        usleep(1000);
        v++;
        if (pwrite(fd, &v, sizeof v, 0) != (ssize_t)sizeof v)
            return 1;
        rc = redlock_lock_release(l);
        if (rc != 0)
            fprintf(stderr, "worker %d: release: %s\n", id, redlock_lock_errmsg(l));
    }
    close(fd);
    redlock_lock_free(l);
    redlock_client_free(c);
    return 0;
}

int main(void)
{
    const char *env = getenv("REDLOCK_TEST_NODES");
    const char *py = getenv("REDLOCK_HARNESS_PY");
    if (!env || !py) {
        fprintf(stderr, "run me under: python3 tests/harness/nodes.py exec --count 5 -- %s\n", "redlock_demo");
        return 2;
    }
    char *copy = strdup(env), *save = NULL;
    const char *urls[16];
    size_t n = 0;
    for (char *t = strtok_r(copy, ",", &save); t && n < 16; t = strtok_r(NULL, ",", &save))
        urls[n++] = t;

    char path[] = "/tmp/redlock-demo-XXXXXX";
    int fd = mkstemp(path);
    long zero = 0;
    if (fd < 0 || pwrite(fd, &zero, sizeof zero, 0) != (ssize_t)sizeof zero)
        return 1;

    printf("libredlock %s: %d processes x %d increments of one counter, under one lock on %zu nodes\n",
           redlock_version(), WORKERS, ROUNDS, n);
    for (size_t i = 0; i < n; i++)
        printf("  node %zu: %s\n", i + 1, urls[i]);
    fflush(stdout);
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            _exit(worker(w, urls, n, path));
    }
    int killed = 0;
    long target = (long)WORKERS * ROUNDS;
    for (;;) {
        long v = read_counter(fd);
        if (!killed && v >= target / 2 && n >= 5) {
            printf("counter at %ld: killing nodes 4 and 5 (a majority of 3 remains)\n", v);
            fflush(stdout);
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "python3 '%s' ctl kill 3 >/dev/null && python3 '%s' ctl kill 4 >/dev/null", py, py);
            if (system(cmd) != 0)
                fprintf(stderr, "could not kill nodes\n");
            killed = 1;
        }
        int done = 0;
        for (int w = 0; w < WORKERS; w++)
            if (pids[w] && waitpid(pids[w], NULL, WNOHANG) == pids[w]) {
                pids[w] = 0;
            }
        for (int w = 0; w < WORKERS; w++)
            done += pids[w] == 0;
        if (done == WORKERS)
            break;
        usleep(20000);
    }
    long final = read_counter(fd);
    close(fd);
    unlink(path);
    free(copy);
    printf("final count %ld of %ld: %s\n", final, target,
           final == target ? "no increment lost" : "INCREMENTS LOST");
    return final == target ? 0 : 1;
}
