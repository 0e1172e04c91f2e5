/* SPDX-License-Identifier: BSD-3-Clause */
/* c_cycle.c: times the library's acquire+release cycle on 1, 3, 5, 7 and 9
 * local nodes against the raw-hiredis protocol and quorum floors (floor.c),
 * plus one node 20 ms slower, thread scaling, one paused node and the
 * connections a client holds. Run it through bench/run-c (see README.md). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bench.h"
#include "redlock.h"

#ifndef BENCH_BUILD_TYPE
#define BENCH_BUILD_TYPE "unknown"
#endif

#define TTL_MS 10000u
#define KEYS 256            /* distinct keys per variant, used round-robin */
#define PAUSED_NODE 4       /* the node paused in the "one paused" case */
#define MT_NODES 5
#define SLOW_MS 20          /* the "one slow node" answers this much later */
#define MAX_THREADS 64

/* quorum-floor: the floor stopping at a majority (Redlock's real limit).
 * fenced: the handle cycle on a client with REDLOCK_OPT_FENCING (one more round trip).
 * handle+extend: the handle cycle with a redlock_lock_extend between acquire and release.
 * no-quarantine: the handle cycle on a client with REDLOCK_OPT_NO_QUARANTINE: what the
 * quarantine's check (one more PTTL per node, in the acquire's write) costs. */
enum { V_FLOOR, V_QFLOOR, V_TRY, V_HANDLE, V_FENCED, V_EXT, V_NOQ, NV };
static const char *const vname[NV] = { "floor", "quorum-floor", "try+release", "handle", "fenced",
                                       "handle+extend", "no-quarantine" };

static struct {
    long iterations;        /* timed cycles per variant and node count */
    long warmup;            /* untimed cycles per variant first */
    int block;              /* cycles per block; variants alternate by block */
    double mt_seconds;      /* measuring time per thread count */
    const char *csv;
    unsigned node_mask;     /* bit n set: run the cycle table on n nodes */
    int only;               /* -1, or the one variant to run (profiling) */
    long node_timeout_ms;   /* 0 = the library's default */
    int sections;           /* SEC_* bits; 0 = decided after parsing */
    unsigned slow_mask;     /* bit n set: run the one-slow section on n nodes */
    int mt_delay_ms;        /* > 0: the threads section reaches every node through a delaying proxy */
} cfg = { 4000, -1, 50, -1.0, NULL, (1u << 1) | (1u << 3) | (1u << 5) | (1u << 7) | (1u << 9), -1, 0, 0,
          (1u << 3) | (1u << 5) | (1u << 7), 0 };

enum { SEC_CYCLE = 1, SEC_THREADS = 2, SEC_PAUSED = 4, SEC_SLOW = 8, SEC_CONNS = 16 };
static const char *const sec_names[] = { "cycle", "threads", "paused", "slow", "conns" };

static FILE *csv;
static int failures;       /* cycles that failed where none should */

/* ---- samples and statistics ---- */

typedef struct samples {
    int64_t *cycle;         /* ns, whole acquire+release */
    int64_t *acq;           /* ns, the acquire half */
    int64_t *ext;           /* ns, the extend (handle+extend only, else 0) */
    int64_t *rel;           /* ns, the release */
    size_t n, cap;
    double *blk;            /* p50 of each timed block in turn, us (for block ratios) */
    size_t nblk, capblk;
    int64_t wall_ns;        /* time spent in timed blocks */
    int64_t cpu_ns;         /* this thread's CPU time (user+sys) in them */
    long errors;
    long warm_errors;       /* of errors, how many in untimed warm-up cycles (threads) */
    char first_err[512];
} samples;

static void samples_push(samples *s, int64_t cycle, int64_t acq, int64_t ext, int64_t rel)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->cycle = realloc(s->cycle, s->cap * sizeof *s->cycle);
        s->acq = realloc(s->acq, s->cap * sizeof *s->acq);
        s->ext = realloc(s->ext, s->cap * sizeof *s->ext);
        s->rel = realloc(s->rel, s->cap * sizeof *s->rel);
        if (!s->cycle || !s->acq || !s->ext || !s->rel) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
    }
    s->cycle[s->n] = cycle;
    s->acq[s->n] = acq;
    s->ext[s->n] = ext;
    s->rel[s->n++] = rel;
}

static void samples_error(samples *s, const char *what, int rc, const char *detail)
{
    if (s->errors++ == 0)
        snprintf(s->first_err, sizeof s->first_err, "%s: %s%s%s", what, redlock_error_name(rc),
                 detail && *detail ? ": " : "", detail ? detail : "");
}

static void samples_free(samples *s)
{
    free(s->cycle);
    free(s->acq);
    free(s->ext);
    free(s->rel);
    free(s->blk);
    memset(s, 0, sizeof *s);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Records the p50 of the cycles pushed since index from: one block. */
static void samples_end_block(samples *s, size_t from)
{
    size_t k = s->n - from;
    if (k == 0)
        return;
    int64_t *tmp = malloc(k * sizeof *tmp);
    if (s->nblk == s->capblk) {
        s->capblk = s->capblk ? s->capblk * 2 : 256;
        s->blk = realloc(s->blk, s->capblk * sizeof *s->blk);
    }
    if (!tmp || !s->blk) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memcpy(tmp, s->cycle + from, k * sizeof *tmp);
    qsort(tmp, k, sizeof *tmp, cmp_i64);
    s->blk[s->nblk++] = (double)tmp[(k - 1) / 2] / 1000.0;
    free(tmp);
}

/* The median over blocks of (block p50 of x) / (block p50 of ref), pairing
 * the k-th block of each: they ran in the same round, seconds apart, so the
 * machine's load drifts cancel out. 0 when there are no pairs. */
static double block_ratio(const samples *x, const samples *ref)
{
    size_t n = x->nblk < ref->nblk ? x->nblk : ref->nblk, m = 0;
    if (n == 0)
        return 0.0;
    double *r = malloc(n * sizeof *r);
    if (!r)
        return 0.0;
    for (size_t i = 0; i < n; i++)
        if (ref->blk[i] > 0)
            r[m++] = x->blk[i] / ref->blk[i];
    qsort(r, m, sizeof *r, cmp_dbl);
    double med = m == 0 ? 0.0 : m % 2 ? r[m / 2] : (r[m / 2 - 1] + r[m / 2]) / 2;
    free(r);
    return med;
}

typedef struct stats {
    double p50, p99, mean, max, acq_p50, acq_p99, ext_p50, ext_p99, rel_p50, rel_p99, per_s, cpu_us;
    size_t n;
    long errors;
} stats;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Nearest-rank percentile of a sorted array, in microseconds. */
static double pct_us(const int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    return (double)v[bench_rank(n, p) - 1] / 1000.0;
}

static stats summarize(samples *s)
{
    stats st = { 0 };
    st.n = s->n;
    st.errors = s->errors;
    if (s->n == 0)
        return st;
    qsort(s->cycle, s->n, sizeof *s->cycle, cmp_i64);
    qsort(s->acq, s->n, sizeof *s->acq, cmp_i64);
    qsort(s->ext, s->n, sizeof *s->ext, cmp_i64);
    qsort(s->rel, s->n, sizeof *s->rel, cmp_i64);
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += (double)s->cycle[i];
    st.p50 = pct_us(s->cycle, s->n, 0.50);
    st.p99 = pct_us(s->cycle, s->n, 0.99);
    st.max = (double)s->cycle[s->n - 1] / 1000.0;
    st.mean = sum / (double)s->n / 1000.0;
    st.acq_p50 = pct_us(s->acq, s->n, 0.50);
    st.acq_p99 = pct_us(s->acq, s->n, 0.99);
    st.ext_p50 = pct_us(s->ext, s->n, 0.50);
    st.ext_p99 = pct_us(s->ext, s->n, 0.99);
    st.rel_p50 = pct_us(s->rel, s->n, 0.50);
    st.rel_p99 = pct_us(s->rel, s->n, 0.99);
    st.per_s = s->wall_ns > 0 ? (double)s->n * 1e9 / (double)s->wall_ns : 0.0;
    st.cpu_us = (double)s->cpu_ns / (double)s->n / 1000.0;
    return st;
}

/* r50/r99: against the reference of the section (the floor; healthy); q50/q99:
 * against the quorum floor; conns: connections per node (conns section). */
static void csv_row_full(const char *section, size_t nodes, const char *variant, int threads, const stats *st,
                         double r50, double r99, double q50, double q99, int conns)
{
    if (!csv)
        return;
    fprintf(csv, "%s,%zu,%s,%d,%zu,%ld,%.2f,%.2f,%.2f,%.2f,%.2f,%.0f,%.2f,", section, nodes, variant, threads,
            st->n, st->errors, st->p50, st->p99, st->mean, st->max, st->acq_p50, st->per_s, st->cpu_us);
    if (r50 > 0)
        fprintf(csv, "%.3f,%.3f,", r50, r99);
    else
        fprintf(csv, ",,");
    fprintf(csv, "%.2f,%.2f,%.2f,%.2f,%.2f,", st->acq_p99, st->rel_p50, st->rel_p99, st->ext_p50, st->ext_p99);
    if (q50 > 0)
        fprintf(csv, "%.3f,%.3f,", q50, q99);
    else
        fprintf(csv, ",,");
    if (conns >= 0)
        fprintf(csv, "%d\n", conns);
    else
        fprintf(csv, "\n");
}

static void csv_row(const char *section, size_t nodes, const char *variant, int threads, const stats *st,
                    double r50, double r99)
{
    csv_row_full(section, nodes, variant, threads, st, r50, r99, 0, 0, -1);
}

/* ---- one set of nodes: our client, lock handles, the floor ---- */

static int open_client(redlock_client **out, const char *const *urls, size_t n, uint32_t flags)
{
    char err[512], prefix[32];
    redlock_options o;
    redlock_options_init(&o);
    o.flags = flags;
    /* A key prefix per node count: the quarantine's markers are per prefix
     * (docs/algorithm.md, "Quarantine"), so each set of nodes is a
     * deployment of its own, not a larger set that took in unmarked nodes. */
    snprintf(prefix, sizeof prefix, "bench%zu:", n);
    o.key_prefix = prefix;
    if (cfg.node_timeout_ms > 0)
        o.node_timeout_ms = (uint32_t)cfg.node_timeout_ms;
    int rc = redlock_client_open(out, urls, n, &o, err, sizeof err);
    if (rc)
        fprintf(stderr, "redlock_client_open(%zu nodes): %s: %s\n", n, redlock_error_name(rc), err);
    return rc;
}

typedef struct bench_set {
    size_t n;
    redlock_client *client;
    redlock_client *fclient;     /* with fencing */
    redlock_client *qclient;     /* with the quarantine off */
    bench_floor *floor;
    bench_floor *qfloor;         /* the quorum floor, on its own connections */
    int floor_broken;
    char *keys[NV][KEYS];
    size_t key_len[NV][KEYS];
    redlock_lock *handles[KEYS];
    redlock_lock *fhandles[KEYS];
    redlock_lock *ehandles[KEYS];
    redlock_lock *qhandles[KEYS];
    size_t next[NV];
    uint64_t rng;
} bench_set;

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* A 40-hex-digit value, the size of the library's random values. */
static void floor_value(uint64_t *s, char out[41])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 40; i += 16) {
        uint64_t x = xorshift(s);
        for (int j = 0; j < 16 && i + j < 40; j++, x >>= 4)
            out[i + j] = hx[x & 15];
    }
    out[40] = '\0';
}

/* with_floor: 0 none, 1 both floors, 2 the quorum floor only (the protocol
 * floor would wait for a slow node every round). */
static int set_open(bench_set *b, const char *const *urls, size_t n, const char *tag, int with_floor)
{
    char err[512];
    memset(b, 0, sizeof *b);
    b->n = n;
    b->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)bench_now_ns();
    int rc = open_client(&b->client, urls, n, 0);
    if (rc || open_client(&b->fclient, urls, n, REDLOCK_OPT_FENCING) != 0 ||
        open_client(&b->qclient, urls, n, REDLOCK_OPT_NO_QUARANTINE) != 0)
        return -1;
    /* Distinct key spaces per variant: the floor's own connections can never
     * race a release of ours still in flight on the same key. */
    for (int v = 0; v < NV; v++) {
        for (int i = 0; i < KEYS; i++) {
            char k[96];
            int len = snprintf(k, sizeof k, "bench:%s:%zu:%s:%d", tag, n, vname[v], i);
            b->keys[v][i] = strdup(k);
            b->key_len[v][i] = (size_t)len;
            if (!b->keys[v][i])
                return -1;
        }
    }
    for (int i = 0; i < KEYS; i++) {
        rc = redlock_lock_new(&b->handles[i], b->client, b->keys[V_HANDLE][i]);
        if (!rc)
            rc = redlock_lock_new(&b->fhandles[i], b->fclient, b->keys[V_FENCED][i]);
        if (!rc)
            rc = redlock_lock_new(&b->ehandles[i], b->client, b->keys[V_EXT][i]);
        if (!rc)
            rc = redlock_lock_new(&b->qhandles[i], b->qclient, b->keys[V_NOQ][i]);
        if (rc) {
            fprintf(stderr, "redlock_lock_new: %s\n", redlock_error_name(rc));
            return -1;
        }
    }
    if (with_floor == 1 && bench_floor_open(&b->floor, urls, n, err, sizeof err) != 0) {
        fprintf(stderr, "floor on %zu nodes: %s\n", n, err);
        return -1;
    }
    if (with_floor && bench_floor_open(&b->qfloor, urls, n, err, sizeof err) != 0) {
        fprintf(stderr, "quorum floor on %zu nodes: %s\n", n, err);
        return -1;
    }
    return 0;
}

static void set_close(bench_set *b)
{
    for (int i = 0; i < KEYS; i++) {
        redlock_lock_free(b->handles[i]);
        redlock_lock_free(b->fhandles[i]);
        redlock_lock_free(b->ehandles[i]);
        redlock_lock_free(b->qhandles[i]);
    }
    redlock_client_free(b->client);
    redlock_client_free(b->fclient);
    redlock_client_free(b->qclient);
    bench_floor_close(b->floor);
    bench_floor_close(b->qfloor);
    for (int v = 0; v < NV; v++)
        for (int i = 0; i < KEYS; i++)
            free(b->keys[v][i]);
    memset(b, 0, sizeof *b);
}

/* Runs count cycles of variant v; records them in s when s is not NULL. */
static void run_block(bench_set *b, int v, long count, samples *s)
{
    samples scratch = { 0 };
    samples *into = s ? s : &scratch;
    size_t from = into->n;
    int64_t w0 = bench_now_ns(), c0 = thread_cpu_ns();
    for (long k = 0; k < count; k++) {
        size_t idx = b->next[v]++ % KEYS;
        const char *key = b->keys[v][idx];
        int64_t t0, t1, t2, te = 0;
        int rc = 0;
        if (v == V_FLOOR || v == V_QFLOOR) {
            char value[41], err[256];
            if (b->floor_broken)
                return;
            floor_value(&b->rng, value);
            t0 = bench_now_ns();
            if ((v == V_FLOOR ? bench_floor_cycle(b->floor, key, b->key_len[v][idx], value, TTL_MS, &t1, err,
                                                  sizeof err)
                              : bench_floor_quorum_cycle(b->qfloor, key, b->key_len[v][idx], value, TTL_MS, &t1,
                                                         err, sizeof err)) != 0) {
                /* Replies may now be misaligned on the floor's connections. */
                b->floor_broken = 1;
                into->errors++;
                snprintf(into->first_err, sizeof into->first_err, "%s: %s", vname[v], err);
                continue;
            }
            t2 = bench_now_ns();
        } else if (v == V_TRY) {
            redlock_lock *l = NULL;
            t0 = bench_now_ns();
            rc = redlock_try_acquire(&l, b->client, key, TTL_MS);
            t1 = bench_now_ns();
            if (rc) {
                samples_error(into, "redlock_try_acquire", rc, NULL);
                continue;
            }
            rc = redlock_lock_release(l);
            if (rc)
                samples_error(into, "redlock_lock_release", rc, redlock_lock_errmsg(l));
            redlock_lock_free(l);
            t2 = bench_now_ns();
        } else {
            redlock_lock *h = v == V_FENCED ? b->fhandles[idx] : v == V_EXT ? b->ehandles[idx]
                              : v == V_NOQ ? b->qhandles[idx] : b->handles[idx];
            t0 = bench_now_ns();
            rc = redlock_lock_acquire(h, TTL_MS, REDLOCK_WAIT_NONE);
            t1 = bench_now_ns();
            if (rc) {
                samples_error(into, "redlock_lock_acquire", rc, redlock_lock_errmsg(h));
                continue;
            }
            if (v == V_EXT) {
                rc = redlock_lock_extend(h, TTL_MS);
                te = bench_now_ns() - t1;
                if (rc) {
                    samples_error(into, "redlock_lock_extend", rc, redlock_lock_errmsg(h));
                    /* Still release, so the key is free for its next turn. */
                    redlock_lock_release(h);
                    continue;
                }
            }
            rc = redlock_lock_release(h);
            t2 = bench_now_ns();
            if (rc)
                samples_error(into, "redlock_lock_release", rc, redlock_lock_errmsg(h));
        }
        if (rc == 0)
            samples_push(into, t2 - t0, t1 - t0, te, t2 - t1 - te);
    }
    into->wall_ns += bench_now_ns() - w0;
    into->cpu_ns += thread_cpu_ns() - c0;
    samples_end_block(into, from);
    if (!s) {
        if (scratch.errors)
            fprintf(stderr, "warm-up %s on %zu nodes: %ld errors, first: %s\n", vname[v], b->n, scratch.errors,
                    scratch.first_err);
        samples_free(&scratch);
    }
}

/* Timed blocks of every variant in vs[], alternating, first one rotating
 * each round so that no variant always follows the same one. */
static void run_interleaved(bench_set *b, const int *vs, int nv, samples *out)
{
    long warm = cfg.warmup;
    for (long done = 0; done < warm; done += cfg.block)
        for (int j = 0; j < nv; j++)
            run_block(b, vs[j], warm - done < cfg.block ? warm - done : cfg.block, NULL);
    long round = 0;
    for (long done = 0; done < cfg.iterations; done += cfg.block, round++) {
        long cnt = cfg.iterations - done < cfg.block ? cfg.iterations - done : cfg.block;
        for (int j = 0; j < nv; j++) {
            int v = vs[(j + round) % nv];
            run_block(b, v, cnt, &out[v]);
        }
    }
}

static void print_err(const char *ctx, size_t n, const char *variant, const samples *s)
{
    char warm[64] = "";
    if (s->warm_errors)
        snprintf(warm, sizeof warm, " (%ld in warm-up)", s->warm_errors);
    if (s->errors)
        fprintf(stderr, "%s, %zu nodes, %s: %ld failed cycles%s; first: %s\n", ctx, n, variant, s->errors, warm,
                s->first_err);
}

/* ---- section 1: cycle latency per node count ---- */

static double ratio_5[NV], qratio_5[NV];

static void section_cycle(const char *const *urls, size_t n_urls)
{
    static const int all[] = { V_FLOOR, V_QFLOOR, V_TRY, V_HANDLE, V_FENCED, V_NOQ };
    int nv = cfg.only >= 0 ? 1 : (int)(sizeof all / sizeof all[0]);
    const int *vs = cfg.only >= 0 ? &cfg.only : all;

    printf("\nAcquire+release cycle, one thread, uncontended (%ld cycles per row; latency in microseconds;\n"
           "p50 ratios: median over rounds of the ratio of block p50s; p99 ratios: of the pooled p99s)\n",
           cfg.iterations);
    printf("%5s  %-12s %9s %9s %9s %10s %9s %9s %9s %9s %9s\n", "nodes", "variant", "p50", "p99", "acq p50",
           "cycles/s", "cpu/cycle", "p50/floor", "p99/floor", "p50/qflr", "p99/qflr");
    for (size_t n = 1; n < 32; n++) {
        if (!(cfg.node_mask & (1u << n)))
            continue;
        if (n > n_urls) {
            printf("%5zu  (skipped: only %zu node URLs given)\n", n, n_urls);
            continue;
        }
        bench_set b;
        if (set_open(&b, urls, n, "c", 1) != 0) {
            failures++;
            set_close(&b);
            continue;
        }
        samples s[NV] = { { 0 } };
        run_interleaved(&b, vs, nv, s);
        stats st[NV];
        for (int v = 0; v < NV; v++) {
            st[v] = summarize(&s[v]);
            print_err("cycle", n, vname[v], &s[v]);
            failures += s[v].errors > 0;
        }
        for (int j = 0; j < nv; j++) {
            int v = vs[j];
            double r50 = 0, r99 = 0, q50 = 0, q99 = 0;
            if (v != V_FLOOR && st[V_FLOOR].n && st[v].n) {
                r50 = block_ratio(&s[v], &s[V_FLOOR]);
                r99 = st[v].p99 / st[V_FLOOR].p99;
            }
            if (v != V_FLOOR && v != V_QFLOOR && st[V_QFLOOR].n && st[v].n) {
                q50 = block_ratio(&s[v], &s[V_QFLOOR]);
                q99 = st[v].p99 / st[V_QFLOOR].p99;
            }
            if (n == 5) {
                ratio_5[v] = r50;
                qratio_5[v] = q50;
            }
            printf("%5zu  %-12s %9.1f %9.1f %9.1f %10.0f %9.1f", n, vname[v], st[v].p50, st[v].p99, st[v].acq_p50,
                   st[v].per_s, st[v].cpu_us);
            if (r50 > 0)
                printf(" %8.2fx %8.2fx", r50, r99);
            else if (q50 > 0)
                printf(" %9s %9s", "", "");
            if (q50 > 0)
                printf(" %8.2fx %8.2fx", q50, q99);
            printf("\n");
            csv_row_full("cycle", n, vname[v], 1, &st[v], r50, r99, q50, q99, -1);
        }
        fflush(stdout);
        for (int v = 0; v < NV; v++)
            samples_free(&s[v]);
        set_close(&b);
    }
    if (ratio_5[V_TRY] > 0)
        printf("At 5 nodes our p50 is %.2fx the protocol floor's (try+release) and %.2fx (reused handle); "
               "aim: <= 1.0x\n",
               ratio_5[V_TRY], ratio_5[V_HANDLE]);
    if (qratio_5[V_TRY] > 0)
        printf("At 5 nodes our p50 is %.2fx the quorum floor's (try+release) and %.2fx (reused handle); "
               "aim: <= 1.15x\n",
               qratio_5[V_TRY], qratio_5[V_HANDLE]);
    if (ratio_5[V_HANDLE] > 0 && ratio_5[V_FENCED] > 0)
        printf("At 5 nodes a fenced cycle (two acquire rounds) is %.2fx the plain handle cycle\n",
               ratio_5[V_FENCED] / ratio_5[V_HANDLE]);
    if (ratio_5[V_HANDLE] > 0 && ratio_5[V_NOQ] > 0)
        printf("At 5 nodes the quarantine's check costs %+.1f%% of a handle cycle (handle %.2fx the cycle "
               "without it); aim: <= 5%%\n",
               (ratio_5[V_HANDLE] / ratio_5[V_NOQ] - 1) * 100, ratio_5[V_HANDLE] / ratio_5[V_NOQ]);
}

/* ---- section 1b: one node slower than the others ---- */

/* Per node count, two sets of connections take turns block by block: all
 * nodes direct ("healthy"), and the last node behind an in-process proxy
 * that answers SLOW_MS late ("one slow"). Each set has its own quorum floor,
 * which reads the slow node's late replies as they come, as the library
 * must. */
static void section_slow(const char *const *urls, size_t n_urls)
{
    static const int vs[] = { V_QFLOOR, V_TRY, V_HANDLE };
    enum { NVS = 3 };
    printf("\nOne node %d ms slower (behind a delaying proxy) vs all healthy, one thread (%ld cycles per row)\n",
           SLOW_MS, cfg.iterations);
    printf("%5s  %-8s %-12s %9s %9s %9s %9s %9s %9s %11s %11s\n", "nodes", "state", "variant", "p50", "p99",
           "acq p50", "rel p50", "p50/qflr", "p99/qflr", "p50/healthy", "p99/healthy");
    for (size_t n = 1; n < 32; n++) {
        if (!(cfg.slow_mask & (1u << n)))
            continue;
        if (n > n_urls || n < 2) {
            printf("%5zu  (skipped: needs 2..%zu nodes)\n", n, n_urls);
            continue;
        }
        char err[256];
        bench_proxy *px = NULL;
        if (bench_proxy_start(&px, urls[n - 1], SLOW_MS, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            failures++;
            return;
        }
        const char *surls[BENCH_MAX_NODES];
        for (size_t i = 0; i < n; i++)
            surls[i] = urls[i];
        surls[n - 1] = bench_proxy_url(px);
        bench_set set[2];
        memset(set, 0, sizeof set);
        int ok = set_open(&set[0], urls, n, "sh", 2) == 0;
        ok = ok && set_open(&set[1], surls, n, "ss", 2) == 0;
        if (!ok) {
            failures++;
            set_close(&set[0]);
            set_close(&set[1]);
            bench_proxy_stop(px);
            continue;
        }
        samples s[2][NV] = { { { 0 } } };
        for (long done = 0; done < cfg.warmup; done += cfg.block)
            for (int k = 0; k < 2 * NVS; k++)
                run_block(&set[k / NVS], vs[k % NVS], cfg.warmup - done < cfg.block ? cfg.warmup - done : cfg.block,
                          NULL);
        long round = 0;
        for (long done = 0; done < cfg.iterations; done += cfg.block, round++) {
            long cnt = cfg.iterations - done < cfg.block ? cfg.iterations - done : cfg.block;
            for (int j = 0; j < 2 * NVS; j++) {
                int k = (int)((j + round) % (2 * NVS));
                run_block(&set[k / NVS], vs[k % NVS], cnt, &s[k / NVS][vs[k % NVS]]);
            }
        }
        stats st[2][NV];
        for (int state = 0; state < 2; state++)
            for (int j = 0; j < NVS; j++) {
                int v = vs[j];
                st[state][v] = summarize(&s[state][v]);
                print_err(state ? "one slow" : "slow-section healthy", n, vname[v], &s[state][v]);
                failures += s[state][v].errors > 0;
            }
        for (int state = 0; state < 2; state++)
            for (int j = 0; j < NVS; j++) {
                int v = vs[j];
                const stats *x = &st[state][v], *q = &st[state][V_QFLOOR], *h = &st[0][v];
                double q50 = v != V_QFLOOR && q->p50 > 0 ? block_ratio(&s[state][v], &s[state][V_QFLOOR]) : 0;
                double q99 = v != V_QFLOOR && q->p99 > 0 ? x->p99 / q->p99 : 0;
                double h50 = state && h->p50 > 0 ? block_ratio(&s[1][v], &s[0][v]) : 0;
                double h99 = state && h->p99 > 0 ? x->p99 / h->p99 : 0;
                printf("%5zu  %-8s %-12s %9.1f %9.1f %9.1f %9.1f", n, state ? "one slow" : "healthy", vname[v],
                       x->p50, x->p99, x->acq_p50, x->rel_p50);
                if (q50 > 0)
                    printf(" %8.2fx %8.2fx", q50, q99);
                else
                    printf(" %9s %9s", "", "");
                if (h50 > 0)
                    printf(" %10.2fx %10.2fx", h50, h99);
                printf("\n");
                csv_row_full(state ? "one_slow" : "slow_healthy", n, vname[v], 1, x, h50, h99, q50, q99, -1);
            }
        fflush(stdout);
        for (int state = 0; state < 2; state++) {
            for (int v = 0; v < NV; v++)
                samples_free(&s[state][v]);
            set_close(&set[state]);
        }
        bench_proxy_stop(px);
    }
}

/* ---- section 2: threads sharing one client ---- */

/* Busy and total jiffies of all CPUs from /proc/stat, to show how close to
 * saturation the machine ran (servers included). */
static void cpu_jiffies(unsigned long long *busy, unsigned long long *total)
{
    unsigned long long v[8] = { 0 };
    FILE *f = fopen("/proc/stat", "r");
    *busy = *total = 0;
    if (!f)
        return;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
               &v[6], &v[7]) == 8) {
        for (int i = 0; i < 8; i++)
            *total += v[i];
        *busy = *total - v[3] - v[4]; /* minus idle and iowait */
    }
    fclose(f);
}

static int64_t process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct mt_arg {
    redlock_client *client;
    int id;
    pthread_barrier_t *barrier;
    atomic_int *stop;
    long warm;
    samples s;
} mt_arg;

static void *mt_thread(void *p)
{
    mt_arg *a = p;
    char keys[KEYS][64];
    for (int i = 0; i < KEYS; i++)
        snprintf(keys[i], sizeof keys[i], "bench:mt:t%d:%d", a->id, i);
    for (long k = 0;; k++) {
        if (k == a->warm)
            pthread_barrier_wait(a->barrier);
        if (k >= a->warm && atomic_load_explicit(a->stop, memory_order_relaxed))
            break;
        redlock_lock *l = NULL;
        int64_t t0 = bench_now_ns();
        int rc = redlock_try_acquire(&l, a->client, keys[k % KEYS], TTL_MS);
        int64_t t1 = bench_now_ns();
        if (rc) {
            a->s.warm_errors += k < a->warm;
            samples_error(&a->s, "redlock_try_acquire", rc, NULL);
            continue;
        }
        rc = redlock_lock_release(l);
        if (rc) {
            a->s.warm_errors += k < a->warm;
            samples_error(&a->s, "redlock_lock_release", rc, redlock_lock_errmsg(l));
        }
        redlock_lock_free(l);
        if (rc == 0 && k >= a->warm) {
            int64_t t2 = bench_now_ns();
            samples_push(&a->s, t2 - t0, t1 - t0, 0, t2 - t1);
        }
    }
    return NULL;
}

/* nt threads on one client, each running try+release on its own keys for
 * `seconds` after a warm-up; tick(ctx) is called about every 50 ms while
 * they run (NULL: none). Returns every timed cycle in *all, with wall time
 * and the process's CPU time; *busy_pct gets the share of all CPUs busy. */
static void run_threads(redlock_client *client, int nt, double seconds, void (*tick)(void *), void *ctx,
                        samples *all, double *busy_pct)
{
    pthread_t th[MAX_THREADS];
    static mt_arg args[MAX_THREADS];
    pthread_barrier_t bar;
    atomic_int stop;
    atomic_init(&stop, 0);
    pthread_barrier_init(&bar, NULL, (unsigned)nt + 1);
    for (int i = 0; i < nt; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].client = client;
        args[i].id = i;
        args[i].barrier = &bar;
        args[i].stop = &stop;
        args[i].warm = cfg.warmup > 50 ? cfg.warmup / 4 : 50;
        pthread_create(&th[i], NULL, mt_thread, &args[i]);
    }
    pthread_barrier_wait(&bar);
    unsigned long long busy0, total0, busy1, total1;
    cpu_jiffies(&busy0, &total0);
    int64_t t0 = bench_now_ns(), c0 = process_cpu_ns();
    int64_t end = t0 + (int64_t)(seconds * 1e9);
    for (;;) {
        int64_t now = bench_now_ns();
        if (now >= end)
            break;
        int64_t w = end - now < 50000000 ? end - now : 50000000;
        struct timespec ts = { (time_t)(w / 1000000000), (long)(w % 1000000000) };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        if (tick && bench_now_ns() < end)
            tick(ctx);
    }
    atomic_store(&stop, 1);
    cpu_jiffies(&busy1, &total1);
    memset(all, 0, sizeof *all);
    for (int i = 0; i < nt; i++) {
        pthread_join(th[i], NULL);
        for (size_t k = 0; k < args[i].s.n; k++)
            samples_push(all, args[i].s.cycle[k], args[i].s.acq[k], 0, args[i].s.rel[k]);
        all->errors += args[i].s.errors;
        all->warm_errors += args[i].s.warm_errors;
        if (args[i].s.errors && !all->first_err[0])
            memcpy(all->first_err, args[i].s.first_err, sizeof all->first_err);
        samples_free(&args[i].s);
    }
    all->wall_ns = bench_now_ns() - t0;
    all->cpu_ns = process_cpu_ns() - c0;
    pthread_barrier_destroy(&bar);
    *busy_pct = total1 > total0 ? 100.0 * (double)(busy1 - busy0) / (double)(total1 - total0) : 0.0;
}

static void section_threads(const char *const *urls, size_t n_urls)
{
    static const int tcounts[] = { 1, 2, 4, 8 };
    enum { NT = sizeof tcounts / sizeof tcounts[0] };
    /* Rounds of every thread count in turn (first one rotating), each
     * mt_seconds / rounds long: the 8/1 ratio is taken per round, and its
     * median reported, so load that comes and goes hits all counts alike. */
    int rounds = cfg.mt_seconds >= 1.0 ? 5 : 1;
    if (n_urls < MT_NODES) {
        printf("\nThread scaling: skipped (needs %d nodes)\n", MT_NODES);
        return;
    }
    /* --mt-delay-ms: every node answers that much later, so the cycle waits
     * on the network rather than on the CPUs; then the scaling shows what the
     * client itself allows on a machine too small to scale by CPU. */
    bench_proxy *px[MT_NODES] = { NULL };
    const char *murls[MT_NODES];
    for (int i = 0; i < MT_NODES; i++) {
        char err[256];
        murls[i] = urls[i];
        if (cfg.mt_delay_ms > 0) {
            if (bench_proxy_start(&px[i], urls[i], cfg.mt_delay_ms, err, sizeof err) != 0) {
                fprintf(stderr, "%s\n", err);
                failures++;
                goto out;
            }
            murls[i] = bench_proxy_url(px[i]);
        }
    }
    redlock_client *client;
    if (open_client(&client, murls, MT_NODES, 0) != 0) {
        failures++;
        goto out;
    }
    printf("\nThreads sharing one client, %d nodes%s, try+release on distinct keys per thread, %.1f s each\n"
           "in %d round(s); 'vs 1 thread' is the median of the per-round throughput ratios\n",
           MT_NODES, cfg.mt_delay_ms > 0 ? " each behind a delaying proxy" : "", cfg.mt_seconds, rounds);
    if (cfg.mt_delay_ms > 0)
        printf("(every reply %d ms late: the cycle waits on the network, not on the CPUs)\n", cfg.mt_delay_ms);
    printf("%7s %10s %9s %9s %12s %10s %9s\n", "threads", "cycles/s", "p50", "p99", "vs 1 thread", "cpu/cycle",
           "CPUs busy");
    samples acc[NT];
    double busy_sum[NT] = { 0 }, per_round[NT][16];
    memset(acc, 0, sizeof acc);
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < NT; j++) {
            int t = (j + r) % NT;
            samples all;
            double busy;
            run_threads(client, tcounts[t], cfg.mt_seconds / rounds, NULL, NULL, &all, &busy);
            per_round[t][r] = all.wall_ns > 0 ? (double)all.n * 1e9 / (double)all.wall_ns : 0.0;
            busy_sum[t] += busy;
            for (size_t k = 0; k < all.n; k++)
                samples_push(&acc[t], all.cycle[k], all.acq[k], 0, all.rel[k]);
            acc[t].wall_ns += all.wall_ns;
            acc[t].cpu_ns += all.cpu_ns;
            if (all.errors && !acc[t].errors)
                memcpy(acc[t].first_err, all.first_err, sizeof all.first_err);
            acc[t].errors += all.errors;
            acc[t].warm_errors += all.warm_errors;
            samples_free(&all);
        }
    }
    double ratio8 = 0;
    for (int t = 0; t < NT; t++) {
        double r[16];
        for (int k = 0; k < rounds; k++)
            r[k] = per_round[0][k] > 0 ? per_round[t][k] / per_round[0][k] : 0.0;
        qsort(r, (size_t)rounds, sizeof r[0], cmp_dbl);
        double med = rounds % 2 ? r[rounds / 2] : (r[rounds / 2 - 1] + r[rounds / 2]) / 2;
        if (tcounts[t] == 8)
            ratio8 = med;
        stats st = summarize(&acc[t]);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "threads, %d threads", tcounts[t]);
        print_err(ctx, MT_NODES, "try+release", &acc[t]);
        failures += acc[t].errors > 0;
        printf("%7d %10.0f %9.1f %9.1f %11.2fx %10.1f %8.0f%%\n", tcounts[t], st.per_s, st.p50, st.p99, med,
               st.cpu_us, busy_sum[t] / rounds);
        csv_row(cfg.mt_delay_ms > 0 ? "threads_delayed" : "threads", MT_NODES, "try+release", tcounts[t], &st, med,
                0);
        samples_free(&acc[t]);
    }
    fflush(stdout);
    redlock_client_free(client);
    printf("8-thread / 1-thread throughput on one shared client at %d nodes%s: %.2fx (%ld CPUs on this machine)"
           "; aim: >= 2x\n",
           MT_NODES, cfg.mt_delay_ms > 0 ? ", delayed replies" : "", ratio8, sysconf(_SC_NPROCESSORS_ONLN));
out:
    for (int i = 0; i < MT_NODES; i++)
        bench_proxy_stop(px[i]);
}

/* ---- section 2b: connections held by one client ---- */

typedef struct conn_probe {
    size_t n;
    redisContext *c[MT_NODES];
    long long self_id[MT_NODES];
    int base[MT_NODES];        /* other connections before the client opened */
    int max[MT_NODES];         /* the most seen above base while threads ran */
    int samples;
} conn_probe;

/* Connections on node i other than the probe's own, from CLIENT LIST; with
 * dump set, also prints their lines (address, age, idle, last command) to
 * stderr, to tell a reconnect from a second connection. */
static int count_clients(conn_probe *p, size_t i, int dump)
{
    redisReply *r = redisCommand(p->c[i], "CLIENT LIST");
    int cnt = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        char self[40];
        snprintf(self, sizeof self, "id=%lld ", p->self_id[i]);
        cnt = 0;
        for (const char *line = r->str; line && *line;) {
            if (strncmp(line, self, strlen(self)) != 0 && *line != '\n') {
                cnt++;
                if (dump)
                    fprintf(stderr, "  node %zu: %.*s\n", i, (int)strcspn(line, "\n"), line);
            }
            line = strchr(line, '\n');
            if (line)
                line++;
        }
    }
    freeReplyObject(r);
    return cnt;
}

static void conn_tick(void *ctx)
{
    conn_probe *p = ctx;
    for (size_t i = 0; i < p->n; i++) {
        int c = count_clients(p, i, 0) - p->base[i];
        if (c > 1 && c > p->max[i]) {
            fprintf(stderr, "connections: %d on node %zu (not counting %d from before); CLIENT LIST:\n", c, i,
                    p->base[i]);
            count_clients(p, i, 1);
        }
        if (c > p->max[i])
            p->max[i] = c;
    }
    p->samples++;
}

static void section_conns(const char *const *urls, size_t n_urls)
{
    static const int tcounts[] = { 1, 8, 64 };
    if (n_urls < MT_NODES) {
        printf("\nConnections per node: skipped (needs %d nodes)\n", MT_NODES);
        return;
    }
    conn_probe p;
    memset(&p, 0, sizeof p);
    p.n = MT_NODES;
    for (size_t i = 0; i < p.n; i++) {
        p.c[i] = bench_connect(urls[i]);
        redisReply *r = p.c[i] ? redisCommand(p.c[i], "CLIENT ID") : NULL;
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            fprintf(stderr, "connections: cannot inspect node %zu\n", i);
            freeReplyObject(r);
            failures++;
            goto out;
        }
        p.self_id[i] = r->integer;
        freeReplyObject(r);
        p.base[i] = count_clients(&p, i, 0);
    }
    printf("\nConnections per node held by ONE client (CLIENT LIST on each of %d nodes, the inspecting\n"
           "connection and any present before the client opened left out; most seen while running)\n",
           MT_NODES);
    printf("%7s %10s %9s %9s   %s\n", "threads", "cycles/s", "p50", "p99", "connections on node 0..4");
    for (size_t t = 0; t < sizeof tcounts / sizeof tcounts[0]; t++) {
        int nt = tcounts[t];
        /* A fresh client per thread count: a pool that grew for 64 threads
         * must not be counted again for 1. */
        redlock_client *client;
        if (open_client(&client, urls, MT_NODES, 0) != 0) {
            failures++;
            break;
        }
        for (size_t i = 0; i < p.n; i++)
            p.max[i] = 0;
        p.samples = 0;
        samples all;
        double busy;
        run_threads(client, nt, cfg.mt_seconds, conn_tick, &p, &all, &busy);
        conn_tick(&p);  /* once more after the threads stopped, before the client is freed */
        stats st = summarize(&all);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "connections, %d threads", nt);
        print_err(ctx, MT_NODES, "try+release", &all);
        failures += all.errors > 0;
        int most = 0;
        printf("%7d %10.0f %9.1f %9.1f  ", nt, st.per_s, st.p50, st.p99);
        for (size_t i = 0; i < p.n; i++) {
            printf(" %d", p.max[i]);
            if (p.max[i] > most)
                most = p.max[i];
        }
        printf("   (%d looks)\n", p.samples);
        csv_row_full("conns", MT_NODES, "try+release", nt, &st, 0, 0, 0, 0, most);
        fflush(stdout);
        samples_free(&all);
        redlock_client_free(client);
    }
out:
    for (size_t i = 0; i < p.n; i++)
        redisFree(p.c[i]);
}

/* ---- section 3: one node paused ---- */

/* The harness's control socket speaks RESP, so hiredis drives it directly:
 * cheaper than starting `nodes.py ctl` for each pause and resume. */
static redisContext *ctl;

static int ctl_call(const char *op, int node)
{
    redisReply *r = redisCommand(ctl, "%s %d", op, node);
    int ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        fprintf(stderr, "harness %s %d: %s\n", op, node, r ? r->str : ctl->errstr);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static void section_paused(const char *const *urls, size_t n_urls)
{
    /* handle+extend times all three operations; handle is the plain cycle
     * (the peer table's c-core row); try+release the shorthand. */
    static const int ours[] = { V_TRY, V_HANDLE, V_EXT };
    enum { NO = 3 };
    const char *path = getenv("REDLOCK_HARNESS");
    if (n_urls < 5 || !path) {
        printf("\nOne node paused: skipped (needs 5 nodes and $REDLOCK_HARNESS, i.e. nodes.py exec)\n");
        return;
    }
    ctl = redisConnectUnix(path);
    if (!ctl || ctl->err) {
        fprintf(stderr, "harness control socket %s: %s\n", path, ctl ? ctl->errstr : "out of memory");
        failures++;
        redisFree(ctl);
        ctl = NULL;
        return;
    }
    bench_set b;
    if (set_open(&b, urls, 5, "p", 0) != 0) {
        failures++;
        set_close(&b);
        redisFree(ctl);
        return;
    }
    /* Blocks alternate between healthy and paused so both see the same
     * machine noise; the floor waits for every node, so it cannot run here. */
    samples s[2][NV] = { { { 0 } } };
    for (int st = 0; st < 2; st++) {
        if (st == 1 && ctl_call("PAUSE", PAUSED_NODE) != 0)
            goto out;
        for (int j = 0; j < NO; j++)
            run_block(&b, ours[j], cfg.warmup, NULL);
        if (st == 1 && ctl_call("RESUME", PAUSED_NODE) != 0)
            goto out;
    }
    /* Phases of a quarter of the run: every pause may cost the library one
     * node timeout before it stops waiting for that node, and much shorter
     * phases would make that one-off cost look like the steady state. */
    long phase = cfg.iterations / 4 > cfg.block ? cfg.iterations / 4 : cfg.block;
    long round = 0;
    for (long done = 0; done < cfg.iterations; done += phase) {
        long pcnt = cfg.iterations - done < phase ? cfg.iterations - done : phase;
        for (int k = 0; k < 2; k++) {
            int paused = (int)((k + done / phase) % 2);
            if (paused && ctl_call("PAUSE", PAUSED_NODE) != 0)
                goto out;
            for (long pd = 0; pd < pcnt; pd += cfg.block, round++) {
                long cnt = pcnt - pd < cfg.block ? pcnt - pd : cfg.block;
                for (int j = 0; j < NO; j++) {
                    int v = ours[(j + round) % NO];
                    run_block(&b, v, cnt, &s[paused][v]);
                }
            }
            if (paused && ctl_call("RESUME", PAUSED_NODE) != 0)
                goto out;
        }
    }
    printf("\n5 nodes, node %d paused (SIGSTOP) vs healthy, alternating every %ld cycles (%ld per row)\n",
           PAUSED_NODE, phase, cfg.iterations);
    printf("%-8s %-14s %9s %9s %10s %12s %12s\n", "state", "variant", "p50", "p99", "cycles/s", "p50/healthy",
           "p99/healthy");
    stats h[NO], p[NO];
    for (int j = 0; j < NO; j++) {
        int v = ours[j];
        h[j] = summarize(&s[0][v]);
        p[j] = summarize(&s[1][v]);
        print_err("healthy", 5, vname[v], &s[0][v]);
        print_err("one paused", 5, vname[v], &s[1][v]);
        failures += (s[0][v].errors > 0) + (s[1][v].errors > 0);
        printf("%-8s %-14s %9.1f %9.1f %10.0f\n", "healthy", vname[v], h[j].p50, h[j].p99, h[j].per_s);
        double r50 = block_ratio(&s[1][v], &s[0][v]);
        printf("%-8s %-14s %9.1f %9.1f %10.0f %11.2fx %11.2fx\n", "paused", vname[v], p[j].p50, p[j].p99,
               p[j].per_s, r50, h[j].p99 > 0 ? p[j].p99 / h[j].p99 : 0.0);
        csv_row("healthy", 5, vname[v], 1, &h[j], 0, 0);
        csv_row("one_paused", 5, vname[v], 1, &p[j], r50, h[j].p99 > 0 ? p[j].p99 / h[j].p99 : 0);
    }
    /* Each operation on its own: a round that waited for the paused node
     * would show in its p99 even when the cycle as a whole hides it. */
    printf("by operation (healthy p50 / p99 -> paused p50 / p99, p99 ratio; aim: p99 <= 1.5x healthy)\n");
    for (int j = 0; j < NO; j++) {
        struct { const char *op; double hp50, hp99, pp50, pp99; } ops[3] = {
            { "acquire", h[j].acq_p50, h[j].acq_p99, p[j].acq_p50, p[j].acq_p99 },
            { "extend", h[j].ext_p50, h[j].ext_p99, p[j].ext_p50, p[j].ext_p99 },
            { "release", h[j].rel_p50, h[j].rel_p99, p[j].rel_p50, p[j].rel_p99 },
        };
        for (int k = 0; k < 3; k++) {
            if (k == 1 && ours[j] != V_EXT)
                continue;
            printf("  %-14s %-8s %8.1f / %8.1f -> %8.1f / %8.1f   %6.2fx\n", vname[ours[j]], ops[k].op, ops[k].hp50,
                   ops[k].hp99, ops[k].pp50, ops[k].pp99, ops[k].hp99 > 0 ? ops[k].pp99 / ops[k].hp99 : 0.0);
        }
    }
out:
    for (int st = 0; st < 2; st++)
        for (int v = 0; v < NV; v++)
            samples_free(&s[st][v]);
    set_close(&b);
    redisFree(ctl);
    ctl = NULL;
}

/* ---- header ---- */

/* "redis 7.0.15" or "valkey 8.0.1" from INFO server; blocking, header only. */
static void server_version(const char *url, char *out, size_t size)
{
    redisContext *c = bench_connect(url);
    bench_server_version(c, out, size);
    redisFree(c);
}

static void print_header(const char *const *urls, size_t n)
{
    char cpu[256], load[64] = "?", ver[64], nt_note[64] = "";
    if (cfg.node_timeout_ms > 0)
        snprintf(nt_note, sizeof nt_note, " but node_timeout_ms %ld", cfg.node_timeout_ms);
    struct utsname u;
    bench_cpu_model(cpu, sizeof cpu);
    uname(&u);
    bench_loadavg(load, sizeof load);
    printf("redlock C core benchmark: acquire+release vs the raw hiredis protocol floor\n");
    printf("machine: %ld CPUs, %s, %s %s %s, 1-min load %s\n", sysconf(_SC_NPROCESSORS_ONLN), cpu, u.sysname,
           u.release, u.machine, load);
    printf("nodes:  ");
    /* Count each distinct version: "redis 7.0.15 x5, valkey 8.0.1 x4". */
    char seen[8][64];
    int cnt[8] = { 0 }, kinds = 0;
    for (size_t i = 0; i < n; i++) {
        server_version(urls[i], ver, sizeof ver);
        int k = 0;
        while (k < kinds && strcmp(seen[k], ver) != 0)
            k++;
        if (k == kinds && kinds < 8)
            snprintf(seen[kinds++], sizeof seen[0], "%s", ver);
        if (k < kinds)
            cnt[k]++;
    }
    for (int k = 0; k < kinds; k++)
        printf("%s %s x%d", k ? "," : "", seen[k], cnt[k]);
    printf(" (%s)\n", n && strncmp(urls[0], "unix://", 7) == 0 ? "unix sockets" : "TCP loopback");
    printf("library: libredlock %s (%s build), hiredis API %d.%d.%d\n", redlock_version(), BENCH_BUILD_TYPE,
           HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    printf("method: per variant and node count %ld warm-up cycles, then %ld timed cycles in blocks of %d,\n"
           "        variants alternating block by block; ttl %u ms; %d distinct keys per variant;\n"
           "        client options: defaults%s\n",
           cfg.warmup, cfg.iterations, cfg.block, TTL_MS, KEYS, nt_note);
    printf("floor:  one non-blocking hiredis context per node; SET NX PX to all, wait for ALL replies, then\n"
           "        EVALSHA compare-and-delete to all, wait for ALL\n"
           "qfloor: the same, but each round returns once a majority replied; late replies are read\n"
           "        (and checked) before a connection's next reply counts: Redlock's real limit\n");
    fflush(stdout);
    if (csv) {
        fprintf(csv, "# redlock C core benchmark; %ld CPUs, %s, %s %s, 1-min load %s; libredlock %s (%s)\n",
                sysconf(_SC_NPROCESSORS_ONLN), cpu, u.sysname, u.release, load, redlock_version(), BENCH_BUILD_TYPE);
        fprintf(csv, "section,nodes,variant,threads,cycles,errors,p50_us,p99_us,mean_us,max_us,acquire_p50_us,"
                     "cycles_per_s,client_cpu_us_per_cycle,p50_vs_ref,p99_vs_ref,acquire_p99_us,release_p50_us,"
                     "release_p99_us,extend_p50_us,extend_p99_us,p50_vs_quorum_floor,p99_vs_quorum_floor,"
                     "conns_per_node\n");
    }
}

/* ---- main ---- */

static void usage(FILE *to)
{
    fprintf(to,
            "usage: redlock_bench [--smoke | --iterations K] [--csv FILE] [--nodes LIST] [--only V] [--block B]\n"
            "                     [--sections L] [--warmup W] [--mt-seconds S] [--node-timeout-ms T]\n"
            "  Node URLs come from $REDLOCK_TEST_NODES (comma-separated; 9 wanted); the paused-node case\n"
            "  needs $REDLOCK_HARNESS. Run it through bench/run-c, which starts the nodes.\n"
            "  --smoke        = --iterations 200 (a few seconds, for CI)\n"
            "  --iterations K timed cycles per variant and node count (4000)\n"
            "  --block B      cycles per block; variants alternate by block (50)\n"
            "  --warmup W     untimed cycles per variant first (iterations/10, 20..1000)\n"
            "  --mt-seconds S measuring time per thread count (2.0; 0.25 when K < 2000)\n"
            "  --serve-proxy URL  only run a proxy to URL answering 20 ms late; print its URL, serve\n"
            "                 until stdin closes (for bench/drivers/one_slow.py)\n"
            "  --mt-delay-ms D  threads section only: reach every node through a proxy that answers D ms\n"
            "                 late, so that scaling is not limited by a small machine's CPUs\n"
            "  --csv FILE     also write the results as CSV\n"
            "  --node-timeout-ms T  client node_timeout_ms (library default 50); CI smoke runs on a\n"
            "                 loaded machine use a large one so that timings never fail the run\n"
            "  --nodes LIST   node counts for the cycle table (1,3,5,7,9)\n"
            "  --slow-nodes LIST  node counts for the one-slow-node section (3,5,7)\n"
            "  --only V       run only variant V (floor, quorum-floor, try+release, handle or fenced) in\n"
            "                 the cycle table and skip the other sections: for profiling\n"
            "  --sections L   which sections to run: cycle,slow,threads,conns,paused (all)\n");
}

/* --serve-proxy: the delaying proxy on its own, for the peer drivers
 * (bench/drivers/one_slow.py): prints its URL, serves until stdin closes. */
static int run_proxy(const char *upstream)
{
    char err[256], buf[256];
    bench_proxy *px;
    if (bench_proxy_start(&px, upstream, SLOW_MS, err, sizeof err) != 0) {
        fprintf(stderr, "redlock_bench: %s\n", err);
        return 2;
    }
    printf("%s\n", bench_proxy_url(px));
    fflush(stdout);
    while (fgets(buf, sizeof buf, stdin))
        ;
    bench_proxy_stop(px);
    return 0;
}

int main(int argc, char **argv)
{
    const char *serve_proxy = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--smoke") == 0) {
            cfg.iterations = 200;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (val && strcmp(a, "--iterations") == 0) {
            cfg.iterations = atol(val), i++;
        } else if (val && strcmp(a, "--block") == 0) {
            cfg.block = atoi(val), i++;
        } else if (val && strcmp(a, "--warmup") == 0) {
            cfg.warmup = atol(val), i++;
        } else if (val && strcmp(a, "--mt-seconds") == 0) {
            cfg.mt_seconds = atof(val), i++;
        } else if (val && strcmp(a, "--serve-proxy") == 0) {
            serve_proxy = val, i++;
        } else if (val && strcmp(a, "--mt-delay-ms") == 0) {
            cfg.mt_delay_ms = atoi(val), i++;
        } else if (val && strcmp(a, "--node-timeout-ms") == 0) {
            cfg.node_timeout_ms = atol(val), i++;
        } else if (val && strcmp(a, "--csv") == 0) {
            cfg.csv = val, i++;
        } else if (val && (strcmp(a, "--nodes") == 0 || strcmp(a, "--slow-nodes") == 0)) {
            char *end;
            unsigned *mask = strcmp(a, "--nodes") == 0 ? &cfg.node_mask : &cfg.slow_mask;
            *mask = 0;
            for (const char *p = val; *p; p = *end ? end + 1 : end) {
                long n = strtol(p, &end, 10);
                if (end == p || n < 1 || n > 31 || (*end && *end != ',')) {
                    fprintf(stderr, "redlock_bench: %s wants a list like 1,3,5\n", a);
                    return 2;
                }
                *mask |= 1u << n;
            }
            i++;
        } else if (val && strcmp(a, "--sections") == 0) {
            char *copy = strdup(val), *save2 = NULL;
            for (char *t = strtok_r(copy, ",", &save2); t; t = strtok_r(NULL, ",", &save2)) {
                int k = 0, nsec = (int)(sizeof sec_names / sizeof sec_names[0]);
                while (k < nsec && strcmp(t, sec_names[k]) != 0)
                    k++;
                if (k == nsec) {
                    fprintf(stderr, "redlock_bench: --sections wants a list of cycle, slow, threads, conns, paused\n");
                    return 2;
                }
                cfg.sections |= 1 << k;
            }
            free(copy);
            i++;
        } else if (val && strcmp(a, "--only") == 0) {
            for (int v = 0; v < NV; v++)
                if (strcmp(val, vname[v]) == 0 || (v == V_TRY && strcmp(val, "try") == 0))
                    cfg.only = v;
            if (cfg.only < 0 || cfg.only == V_EXT) {
                fprintf(stderr, "redlock_bench: --only wants floor, quorum-floor, try+release, handle or fenced\n");
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "redlock_bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (serve_proxy)
        return run_proxy(serve_proxy);
    if (cfg.iterations < 1 || cfg.block < 1) {
        fprintf(stderr, "redlock_bench: --iterations and --block must be positive\n");
        return 2;
    }
    if (cfg.warmup < 0)
        cfg.warmup = cfg.iterations / 10 < 20 ? 20 : cfg.iterations / 10 > 1000 ? 1000 : cfg.iterations / 10;
    if (cfg.sections == 0)
        cfg.sections = cfg.only >= 0 ? SEC_CYCLE : SEC_CYCLE | SEC_SLOW | SEC_THREADS | SEC_CONNS | SEC_PAUSED;
    if (cfg.mt_seconds <= 0)
        cfg.mt_seconds = cfg.iterations >= 2000 ? 2.0 : 0.25;

    char *list;
    const char *urls[BENCH_MAX_NODES];
    int got = bench_nodes_from_env("redlock_bench", "bench/run-c", urls, BENCH_MAX_NODES, &list);
    if (got < 0)
        return 2;
    size_t n_urls = (size_t)got;
    if (cfg.csv && !(csv = fopen(cfg.csv, "w"))) {
        fprintf(stderr, "redlock_bench: cannot write %s: %s\n", cfg.csv, strerror(errno));
        return 2;
    }

    int64_t t0 = bench_now_ns();
    print_header(urls, n_urls);
    if (cfg.sections & SEC_CYCLE)
        section_cycle(urls, n_urls);
    if (cfg.sections & SEC_SLOW)
        section_slow(urls, n_urls);
    if (cfg.sections & SEC_THREADS)
        section_threads(urls, n_urls);
    if (cfg.sections & SEC_CONNS)
        section_conns(urls, n_urls);
    if (cfg.sections & SEC_PAUSED)
        section_paused(urls, n_urls);
    printf("\ntotal %.1f s; %s\n", (double)(bench_now_ns() - t0) / 1e9,
           failures ? "SOME CYCLES FAILED (see stderr)" : "no failed cycles");
    if (csv)
        fclose(csv);
    free(list);
    return failures ? 1 : 0;
}
