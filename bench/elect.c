/* SPDX-License-Identifier: BSD-3-Clause */
/* elect.c: redlock_elect_bench, leader election's timings on local nodes:
 *   handover  resign -> the next leader's campaign returning, with 1 and 16
 *             campaigners waiting (processes), against the same hand-over of
 *             a plain lock (release -> a waiting acquire returning) in the
 *             same run;
 *   observe   a proclaim's start -> an observer (another process) returning
 *             the new value, against one leader() read in the same run;
 *   kill      the leader SIGKILLed -> a new leader, against the TTL.
 * Run it through bench/run-elect, which starts the nodes. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "redlock.h"

#define MAX_SAMPLES 4096
#define MAX_PROCS 32

typedef struct shared {
    _Atomic int64_t released_ns;   /* when the leader started its resign / release */
    _Atomic long wins;             /* leaderships so far */
    _Atomic int stop;
    _Atomic long n;                /* samples */
    int64_t sample[MAX_SAMPLES];
    _Atomic int64_t proclaim_ns[MAX_SAMPLES];  /* by revision */
    _Atomic long ready;
} shared;

static const char **urls;
static int n_urls;
static shared *sh;

static redlock_client *client(void)
{
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 250;
    redlock_client *c;
    if (redlock_client_new(&c, urls, (size_t)n_urls, &o) != 0) {
        fprintf(stderr, "client_new failed\n");
        exit(1);
    }
    return c;
}

static void add(int64_t ns)
{
    long i = atomic_fetch_add(&sh->n, 1);
    if (i < MAX_SAMPLES)
        sh->sample[i] = ns;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* p50 and p99 of the samples, in ms; the count. */
static long stats(double *p50, double *p99)
{
    long n = atomic_load(&sh->n);
    if (n > MAX_SAMPLES)
        n = MAX_SAMPLES;
    qsort(sh->sample, (size_t)n, sizeof sh->sample[0], cmp64);
    *p50 = n ? sh->sample[bench_rank((size_t)n, 0.5) - 1] / 1e6 : 0;
    *p99 = n ? sh->sample[bench_rank((size_t)n, 0.99) - 1] / 1e6 : 0;
    return n;
}

static void reset(void)
{
    memset(sh, 0, sizeof *sh);
}

/* One worker of the hand-over: lead (election or plain lock), record how
 * long after the previous leader's resign it won, resign, and wait for
 * someone else to win before campaigning again. */
static void handover_worker(const char *name, int election, long rounds)
{
    redlock_client *c = client();
    redlock_election *e = NULL;
    redlock_lock *l = NULL;
    if (election)
        redlock_election_new(&e, c, name);
    else
        redlock_lock_new(&l, c, name);
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->stop)) {
        int rc = election ? redlock_election_campaign(e, "w", 10000, 2000) : redlock_lock_acquire(l, 10000, 2000);
        if (rc == REDLOCK_ETIMEDOUT)
            continue;
        if (rc) {
            fprintf(stderr, "campaign: %s\n", redlock_error_name(rc));
            break;
        }
        int64_t won = bench_now_ns(), rel = atomic_load(&sh->released_ns);
        long w = atomic_fetch_add(&sh->wins, 1) + 1;
        if (rel)
            add(won - rel);
        if (w >= rounds)
            atomic_store(&sh->stop, 1);
        atomic_store(&sh->released_ns, bench_now_ns());
        if (election)
            redlock_election_resign(e);
        else
            redlock_lock_release(l);
        while (atomic_load(&sh->wins) == w && !atomic_load(&sh->stop))
            usleep(50);
    }
    redlock_election_free(e);
    redlock_lock_free(l);
    redlock_client_free(c);
    _exit(0);
}

static void run_handover(int waiting, int election, long rounds, double *p50, double *p99, long *n)
{
    char name[64];
    snprintf(name, sizeof name, "bench-elect-%d-%d-%d", (int)getpid(), waiting, election);
    reset();
    pid_t pid[MAX_PROCS];
    int k = waiting + 1;
    for (int i = 0; i < k; i++)
        if ((pid[i] = fork()) == 0)
            handover_worker(name, election, rounds);
    for (int i = 0; i < k; i++)
        waitpid(pid[i], NULL, 0);
    *n = stats(p50, p99);
}

/* The observer: a proclaim's start (by revision) -> observe returning it. */
static void run_observe(long rounds, double *obs50, double *obs99, double *read50, double *read99)
{
    char name[64];
    snprintf(name, sizeof name, "bench-observe-%d", (int)getpid());
    reset();
    pid_t obs = fork();
    if (obs == 0) {
        redlock_client *c = client();
        redlock_election *e;
        redlock_election_new(&e, c, name);
        redlock_leader cur = { .version = REDLOCK_LEADER_VERSION };
        atomic_store(&sh->ready, 1);
        while (!atomic_load(&sh->stop)) {
            if (redlock_election_observe(e, &cur, 500) != 0 || !cur.present)
                continue;
            int64_t t = atomic_load(&sh->proclaim_ns[cur.revision % MAX_SAMPLES]);
            if (t)
                add(bench_now_ns() - t);
        }
        redlock_election_free(e);
        redlock_client_free(c);
        _exit(0);
    }
    redlock_client *c = client();
    redlock_election *e;
    redlock_election_new(&e, c, name);
    redlock_election_campaign(e, "v", 10000, 2000);
    while (!atomic_load(&sh->ready))
        usleep(1000);
    usleep(200000);   /* the observer's listeners subscribed */
    char v[32];
    for (long r = 2; r < rounds + 2 && r < MAX_SAMPLES; r++) {
        snprintf(v, sizeof v, "v%ld", r);
        atomic_store(&sh->proclaim_ns[r], bench_now_ns());
        redlock_election_proclaim(e, v);
        usleep(5000);
    }
    atomic_store(&sh->stop, 1);
    waitpid(obs, NULL, 0);
    stats(obs50, obs99);
    /* The baseline: one leader() read from a majority. */
    reset();
    redlock_leader w = { .version = REDLOCK_LEADER_VERSION };
    for (long r = 0; r < rounds; r++) {
        int64_t t = bench_now_ns();
        redlock_election_leader(e, &w);
        add(bench_now_ns() - t);
    }
    stats(read50, read99);
    redlock_election_resign(e);
    redlock_election_free(e);
    redlock_client_free(c);
}

/* The leader SIGKILLed -> a waiting campaigner leads. */
static void run_kill(int times, uint32_t ttl_ms, double *p50, double *p99)
{
    reset();
    for (int k = 0; k < times; k++) {
        char name[64];
        snprintf(name, sizeof name, "bench-kill-%d-%d", (int)getpid(), k);
        atomic_store(&sh->ready, 0);
        pid_t leader = fork();
        if (leader == 0) {
            redlock_client *c = client();
            redlock_election *e;
            redlock_election_new(&e, c, name);
            if (redlock_election_campaign(e, "doomed", ttl_ms, 2000) == 0)
                atomic_store(&sh->ready, 1);
            for (;;)
                pause();
        }
        while (!atomic_load(&sh->ready))
            usleep(1000);
        pid_t heir = fork();
        if (heir == 0) {
            redlock_client *c = client();
            redlock_election *e;
            redlock_election_new(&e, c, name);
            atomic_store(&sh->ready, 2);
            if (redlock_election_campaign(e, "heir", ttl_ms, 30000) == 0) {
                int64_t rel = atomic_load(&sh->released_ns);
                add(bench_now_ns() - rel);
                redlock_election_resign(e);
            }
            redlock_election_free(e);
            redlock_client_free(c);
            _exit(0);
        }
        while (atomic_load(&sh->ready) != 2)
            usleep(1000);
        usleep((useconds_t)(ttl_ms * 1000 / 2));   /* the heir waits; the leader has extended */
        atomic_store(&sh->released_ns, bench_now_ns());
        kill(leader, SIGKILL);
        waitpid(leader, NULL, 0);
        waitpid(heir, NULL, 0);
    }
    stats(p50, p99);
}

int main(int argc, char **argv)
{
    int smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    char *list;
    const char *u[BENCH_MAX_NODES];
    n_urls = bench_nodes_from_env("redlock_elect_bench", "bench/run-elect", u, BENCH_MAX_NODES, &list);
    if (n_urls < 0)
        return 2;
    urls = u;
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    char cpu[128], load[32];
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);
    long rounds = smoke ? 40 : 400;
    printf("redlock_elect_bench: %d nodes, %ld rounds, %s, %ld CPUs, load %s\n", n_urls, rounds, cpu,
           sysconf(_SC_NPROCESSORS_ONLN), load);
    int fails = 0;
    const int waiting[] = { 1, 16 };
    for (int k = 0; k < 2; k++) {
        double e50, e99, m50, m99;
        long en, mn;
        run_handover(waiting[k], 0, rounds, &m50, &m99, &mn);
        run_handover(waiting[k], 1, rounds, &e50, &e99, &en);
        printf("handover  %2d waiting: election p50 %.3f ms p99 %.3f ms (%ld); plain lock p50 %.3f ms p99 %.3f ms "
               "(%ld); ratio p50 %.2f\n", waiting[k], e50, e99, en, m50, m99, mn, m50 > 0 ? e50 / m50 : 0);
        fails += en < rounds / 2;
    }
    double o50, o99, r50, r99;
    run_observe(rounds, &o50, &o99, &r50, &r99);
    printf("observe   proclaim start -> observer: p50 %.3f ms p99 %.3f ms; one leader() read: p50 %.3f ms "
           "p99 %.3f ms; ratio p50 %.2f\n", o50, o99, r50, r99, r50 > 0 ? o50 / r50 : 0);
    uint32_t ttl = smoke ? 300 : 1000;
    double k50, k99;
    run_kill(smoke ? 2 : 5, ttl, &k50, &k99);
    printf("kill      SIGKILL of the leader -> new leader: p50 %.0f ms p99 %.0f ms (TTL %u ms; ratio to TTL %.2f)\n",
           k50, k99, ttl, k50 / ttl);
    fails += atomic_load(&sh->n) == 0;
    free(list);
    return fails ? 1 : 0;
}
