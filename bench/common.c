/* SPDX-License-Identifier: BSD-3-Clause */
/* common.c: helpers the benchmarks share (bench.h): the clock, a blocking
 * connection to a node, the machine and server facts of the output header,
 * and the nearest-rank percentile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "bench.h"

int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_until_ns(int64_t t)
{
    struct timespec ts = { (time_t)(t / 1000000000), (long)(t % 1000000000) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

redisContext *bench_connect(const char *url)
{
    char host[256];
    int port;
    struct timeval tv = { 2, 0 };
    redisContext *c = NULL;
    if (strncmp(url, "unix://", 7) == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s", url + 7);
        path[strcspn(path, "?")] = '\0';
        c = redisConnectUnixWithTimeout(path, tv);
    } else if (sscanf(url, "redis://%255[^:/]:%d", host, &port) == 2 ||
               sscanf(url, "redis://[%255[^]]]:%d", host, &port) == 2) {
        c = redisConnectWithTimeout(host, port, tv);
    }
    if (c && c->err) {
        redisFree(c);
        c = NULL;
    }
    return c;
}

void bench_cpu_model(char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(out, size, "unknown CPU");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c += 1 + (c[1] == ' ');
                c[strcspn(c, "\n")] = '\0';
                snprintf(out, size, "%s", c);
            }
            break;
        }
    }
    if (f)
        fclose(f);
}

void bench_loadavg(char *out, size_t size)
{
    FILE *f = fopen("/proc/loadavg", "r");
    snprintf(out, size, "?");
    if (f) {
        if (fgets(out, (int)size, f))
            out[strcspn(out, " ")] = '\0';
        fclose(f);
    }
}

void bench_server_version(redisContext *c, char *out, size_t size)
{
    snprintf(out, size, "?");
    if (!c)
        return;
    redisReply *r = redisCommand(c, "INFO server");
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_VERB)) {
        const char *v = strstr(r->str, "valkey_version:");
        const char *name = "valkey";
        if (v)
            v += 15;
        else if ((v = strstr(r->str, "redis_version:")) != NULL) {
            v += 14;
            name = "redis";
        }
        if (v)
            snprintf(out, size, "%s %.*s", name, (int)strcspn(v, "\r\n"), v);
    }
    freeReplyObject(r);
}

int bench_nodes_from_env(const char *prog, const char *runner, const char **urls, int max, char **list)
{
    const char *env = getenv("REDLOCK_TEST_NODES");
    *list = NULL;
    if (!env || !*env) {
        fprintf(stderr, "%s: $REDLOCK_TEST_NODES is not set; run it through %s\n", prog, runner);
        return -1;
    }
    char *save = NULL;
    int n = 0;
    if (!(*list = strdup(env)))
        return -1;
    for (char *t = strtok_r(*list, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        urls[n++] = t;
    return n;
}

size_t bench_rank(size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t k = (size_t)(p * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return k;
}

/* What a node has run and spent so far (bench.h). */
int bench_node_stats(redisContext *c, bench_node_stat *out)
{
    out->cmds = 0;
    out->cpu_s = 0;
    redisReply *r = redisCommand(c, "INFO commandstats");
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_VERB)) {
        freeReplyObject(r);
        return -1;
    }
    for (const char *l = strstr(r->str, "cmdstat_"); l; l = strstr(l + 1, "\ncmdstat_")) {
        if (*l == '\n')
            l++;
        const char *name = l + 8, *colon = strchr(name, ':');
        const char *calls = colon ? strstr(colon, "calls=") : NULL;
        if (!calls)
            break;
        size_t len = (size_t)(colon - name);
        if ((len == 4 && strncmp(name, "info", 4) == 0) || (len >= 6 && strncmp(name, "client", 6) == 0) ||
            (len == 7 && strncmp(name, "monitor", 7) == 0) || (len == 4 && strncmp(name, "echo", 4) == 0))
            continue;
        out->cmds += atoll(calls + 6);
    }
    freeReplyObject(r);
    r = redisCommand(c, "INFO cpu");
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_VERB)) {
        freeReplyObject(r);
        return -1;
    }
    const char *sys = strstr(r->str, "used_cpu_sys:"), *user = strstr(r->str, "used_cpu_user:");
    if (sys)
        out->cpu_s += atof(sys + 13);
    if (user)
        out->cpu_s += atof(user + 14);
    freeReplyObject(r);
    return sys && user ? 0 : -1;
}
