/* SPDX-License-Identifier: BSD-3-Clause */
/* clockrate.c: LD_PRELOAD shim for the doctor's clock-rate test. It makes a server's clocks run
 * $CLOCKRATE times as fast as the real ones from the moment it starts, so its keys expire early. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double rate = 1.0;
static struct timespec base_rt, base_mono;
static int ready;

/* The raw syscall, so that no symbol lookup or allocation happens in here: jemalloc reads the
 * clock while it initialises, before any constructor. */
static int raw(clockid_t id, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, id, ts);
}

__attribute__((constructor)) static void init(void)
{
    const char *r = getenv("CLOCKRATE");
    if (r)
        rate = strtod(r, NULL);
    raw(CLOCK_REALTIME, &base_rt);
    raw(CLOCK_MONOTONIC, &base_mono);
    ready = 1;
}

static void scale(const struct timespec *base, struct timespec *ts)
{
    double d = (double)(ts->tv_sec - base->tv_sec) + (double)(ts->tv_nsec - base->tv_nsec) / 1e9;
    d *= rate;
    long long ns = (long long)base->tv_nsec + (long long)((d - (double)(long long)d) * 1e9);
    ts->tv_sec = base->tv_sec + (time_t)(long long)d + (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = raw(id, ts);
    if (rc == 0 && ready) {
        if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)
            scale(&base_rt, ts);
        else if (id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE || id == CLOCK_MONOTONIC_RAW ||
                 id == CLOCK_BOOTTIME)
            scale(&base_mono, ts);
    }
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
