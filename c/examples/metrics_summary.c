/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics_summary.c: the on_event metrics hook. Four threads compete for
 * one resource for a few seconds, each holding it with auto-extension; the
 * hook counts what happened and the program prints a summary: acquisitions,
 * failures by reason, retries, quorum margin, latency, extensions, losses,
 * and errors per node.
 *
 *   cc metrics_summary.c $(pkg-config --cflags --libs redlock) -lpthread
 *   REDLOCK_NODES=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 ./a.out
 * (REDLOCK_TEST_NODES, set by the test harness, is read too.) */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redlock.h>

#define MAX_NODES 16

static struct {
    atomic_long acquired, failed, retries, extended, lost, released;
    atomic_long failed_by[16];          /* by -code */
    atomic_long margin_sum;             /* nodes_ok - quorum, summed over acquisitions */
    atomic_long latency_us_sum, latency_us_max;
    atomic_long node_errors[MAX_NODES];
} m;

static void on_event(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    switch (ev->type) {
    case REDLOCK_EVENT_ACQUIRED:
        atomic_fetch_add(&m.acquired, 1);
        atomic_fetch_add(&m.margin_sum, ev->nodes_ok - ev->quorum);
        atomic_fetch_add(&m.latency_us_sum, ev->elapsed_us);
        long prev = atomic_load(&m.latency_us_max);
        while (ev->elapsed_us > prev && !atomic_compare_exchange_weak(&m.latency_us_max, &prev, ev->elapsed_us)) {
        }
        break;
    case REDLOCK_EVENT_ACQUIRE_FAILED:
        atomic_fetch_add(&m.failed, 1);
        if (-ev->code > 0 && -ev->code < 16)
            atomic_fetch_add(&m.failed_by[-ev->code], 1);
        if (ev->attempt > 1)
            atomic_fetch_add(&m.retries, 1);
        break;
    case REDLOCK_EVENT_EXTENDED: atomic_fetch_add(&m.extended, 1); break;
    case REDLOCK_EVENT_LOST: atomic_fetch_add(&m.lost, 1); break;
    case REDLOCK_EVENT_RELEASED: atomic_fetch_add(&m.released, 1); break;
    case REDLOCK_EVENT_NODE_ERROR:
        if (ev->node < MAX_NODES)
            atomic_fetch_add(&m.node_errors[ev->node], 1);
        break;
    default: break;
    }
}

static redlock_client *client;
static atomic_int stop;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
    (void)arg;
    redlock_lock *lock;
    if (redlock_lock_new(&lock, client, "metrics-demo") != 0)
        return NULL;
    while (!atomic_load(&stop)) {
        if (redlock_lock_acquire(lock, 300, 1000) != 0)
            continue;
        redlock_lock_auto_extend(lock, 0, 0, NULL, NULL, NULL);
        sleep_ms(150 + rand() % 250);   /* outlives the 300 ms TTL now and then: extended */
        redlock_lock_release(lock);
    }
    redlock_lock_free(lock);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *env = getenv("REDLOCK_NODES");
    if (!env)
        env = getenv("REDLOCK_TEST_NODES");
    if (!env) {
        fprintf(stderr, "set REDLOCK_NODES to comma-separated node URLs\n");
        return 2;
    }
    char *copy = strdup(env), *urls[MAX_NODES], *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(copy, ",", &save); t && n < MAX_NODES; t = strtok_r(NULL, ",", &save))
        urls[n++] = t;
    int seconds = argc > 1 ? atoi(argv[1]) : 3;

    redlock_options o;
    redlock_options_init(&o);
    o.retry_jitter_ms = 50;
    o.on_event = on_event;
    char err[512];
    int rc = redlock_client_open(&client, (const char *const *)urls, n, &o, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s: %s\n", redlock_error_name(rc), err);
        return 1;
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    sleep_ms(seconds * 1000L);
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);

    long acq = atomic_load(&m.acquired);
    printf("acquired %ld, released %ld, extended %ld, lost %ld\n", acq, atomic_load(&m.released),
           atomic_load(&m.extended), atomic_load(&m.lost));
    printf("failed attempts %ld (of which retries %ld):", atomic_load(&m.failed), atomic_load(&m.retries));
    for (int c = 1; c < 16; c++)
        if (atomic_load(&m.failed_by[c]))
            printf(" %s %ld", redlock_error_name(-c), atomic_load(&m.failed_by[c]));
    printf("\n");
    if (acq)
        printf("acquire latency mean %.2f ms, max %.2f ms; quorum margin mean %.2f nodes\n",
               atomic_load(&m.latency_us_sum) / 1000.0 / acq, atomic_load(&m.latency_us_max) / 1000.0,
               (double)atomic_load(&m.margin_sum) / acq);
    for (size_t i = 0; i < n; i++)
        printf("node %zu %s: %ld errors\n", i, redlock_client_node_url(client, i), atomic_load(&m.node_errors[i]));
    redlock_client_free(client);
    free(copy);
    return acq > 0 ? 0 : 1;
}
