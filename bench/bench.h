/* SPDX-License-Identifier: BSD-3-Clause */
/* bench.h: declarations shared by the benchmark's sources: the helpers of
 * common.c (the clock, a node connection, the header's facts, percentiles)
 * and the raw-hiredis "protocol floor" that c_cycle.c compares the library
 * against. */
#ifndef REDLOCK_BENCH_H
#define REDLOCK_BENCH_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_NODES 64

/* ---- shared helpers (common.c) ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t bench_now_ns(void);
/* Sleeps until bench_now_ns() reaches t. */
void bench_sleep_until_ns(int64_t t);

struct redisContext;
/* A blocking hiredis connection (2 s connect timeout) to redis://host:port,
 * redis://[v6]:port or unix:///path (a ?query is ignored); NULL on failure. */
struct redisContext *bench_connect(const char *url);
/* "model name" of the first CPU in /proc/cpuinfo, or "unknown CPU". */
void bench_cpu_model(char *out, size_t size);
/* The 1-minute load average from /proc/loadavg, or "?". */
void bench_loadavg(char *out, size_t size);
/* "valkey 8.0.1" or "redis 7.0.15" from INFO server on c, or "?". */
void bench_server_version(struct redisContext *c, char *out, size_t size);
/* The node URLs the harness passes in $REDLOCK_TEST_NODES (comma-separated),
 * at most max of them, into urls: their count, or -1 after telling prog's
 * user to run it through runner. *list owns the strings (free it). */
int bench_nodes_from_env(const char *prog, const char *runner, const char **urls, int max, char **list);
/* The 1-based nearest rank of percentile p (0..1) among n sorted values,
 * ceil(p * n) clamped to 1..n; 0 when n is 0. */
/* What a node has run and spent so far: the calls of every command in INFO
 * commandstats (those run inside scripts included), less the benchmark's own
 * (INFO, CLIENT *, MONITOR, ECHO: the library sends none of these), and
 * used_cpu_sys + used_cpu_user from INFO cpu. 0, or -1 if the node did not
 * answer. Benchmarks subtract two of these. */
typedef struct bench_node_stat {
    long long cmds;
    double cpu_s;
} bench_node_stat;
int bench_node_stats(struct redisContext *c, bench_node_stat *out);

size_t bench_rank(size_t n, double p);

/* The floor: one persistent non-blocking hiredis context per node. */
typedef struct bench_floor bench_floor;

/* Connects to every URL (redis://host:port or unix:///path, as the harness
 * hands them out) and loads the release script. 0 or -1 with err filled. */
int bench_floor_open(bench_floor **out, const char *const *urls, size_t n, char *err, size_t errsize);
void bench_floor_close(bench_floor *f);

/* One acquire+release cycle with nothing on top of the protocol: SET key
 * value NX PX ttl_ms to all nodes, wait for ALL replies; then EVALSHA of the
 * compare-and-delete script to all nodes, wait for ALL replies. *mid_ns gets
 * the time between the two halves. 0, or -1 with err filled (an I/O error,
 * a timeout, or a reply other than OK / 1). */
int bench_floor_cycle(bench_floor *f, const char *key, size_t key_len, const char *value,
                      uint32_t ttl_ms, int64_t *mid_ns, char *err, size_t errsize);

/* The quorum floor: the same two rounds, but each returns as soon as a
 * majority (n/2+1) has answered, which is all Redlock needs. A slower node's
 * replies are read when they arrive during a later round, before that
 * node's reply to the later command can count (and are checked to be OK / 1).
 * Redlock's real limit: no library that waits for a majority can be faster. */
int bench_floor_quorum_cycle(bench_floor *f, const char *key, size_t key_len, const char *value,
                             uint32_t ttl_ms, int64_t *mid_ns, char *err, size_t errsize);

/* A loopback TCP proxy on its own thread that forwards requests at once and
 * holds every reply chunk for delay_ms (order kept) before passing it on: a
 * node that answers delay_ms late. Listens on 127.0.0.1, port chosen by the
 * kernel. */
typedef struct bench_proxy bench_proxy;

/* upstream: redis://host:port (loopback only). 0, or -1 with err filled. */
int bench_proxy_start(bench_proxy **out, const char *upstream, int delay_ms, char *err, size_t errsize);
/* "redis://127.0.0.1:PORT" of the proxy. */
const char *bench_proxy_url(const bench_proxy *p);
void bench_proxy_stop(bench_proxy *p);

#endif
