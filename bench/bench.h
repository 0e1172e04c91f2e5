/* bench.h: declarations shared by the benchmark's sources: the clock and the
 * raw-hiredis "protocol floor" that c_cycle.c compares the library against. */
#ifndef REDLOCK_BENCH_H
#define REDLOCK_BENCH_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_NODES 64

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t bench_now_ns(void);

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

#endif
