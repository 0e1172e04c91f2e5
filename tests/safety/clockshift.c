/* SPDX-License-Identifier: BSD-3-Clause */
/* clockshift.c: an LD_PRELOAD library that moves a process's wall clock.
 *
 *   LD_PRELOAD=libclockshift.so REDLOCK_CLOCKSHIFT_FILE=F redis-server ...
 *
 * The file F holds one integer, an offset in milliseconds (may be negative;
 * a missing or empty file is 0). clock_gettime() for CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE, gettimeofday() and time() return the real wall
 * clock plus that offset; every other clock (CLOCK_MONOTONIC above all) is
 * left alone. Writing a larger number into F (write a temporary file, then
 * rename it over F) steps the clock forward, as an NTP step or an operator
 * would: Redis and Valkey expire keys on the wall clock, so a step of +S ms
 * expires every key with less than S ms to live.
 *
 * The file is read again at most every REREAD_NS, timed on CLOCK_MONOTONIC
 * through the real clock_gettime, so the shim never calls itself (libfaketime
 * is known to recurse into clock_gettime inside redis-server). Between reads
 * every thread uses the last offset read: one atomic load. One thread at a
 * time re-reads (a try-lock flag); the others do not wait for it. The real
 * functions are found with dlsym(RTLD_NEXT) in a constructor; a call that
 * comes before it (another library's constructor) goes to the system call.
 *
 * Used by tests/safety (test_targeted.py: wall-clock steps on Redlock nodes)
 * through tests/harness/nodes.py (Cluster(clockshift=...)). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ENV_FILE "REDLOCK_CLOCKSHIFT_FILE"
#define REREAD_NS 2000000LL   /* 2 ms */

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static const char *shift_file;
static char shift_file_buf[4096];
static _Atomic int64_t offset_ns;        /* the offset last read */
static _Atomic int64_t next_read_ns = 0; /* CLOCK_MONOTONIC time of the next read */
static atomic_flag reading = ATOMIC_FLAG_INIT;

__attribute__((constructor)) static void clockshift_init(void)
{
    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    /* Copied: redis-server's setproctitle() writes its title over the original environment. */
    const char *f = getenv(ENV_FILE);
    size_t n = f ? strlen(f) : 0;
    if (n > 0 && n < sizeof shift_file_buf) {
        memcpy(shift_file_buf, f, n + 1);
        shift_file = shift_file_buf;
    }
}

static int sys_clock_gettime(clockid_t id, struct timespec *ts)
{
    clock_gettime_fn f = real_clock_gettime;
    if (f)
        return f(id, ts);
    return (int)syscall(SYS_clock_gettime, id, ts);
}

/* The offset as of at most REREAD_NS ago. */
static int64_t current_offset(void)
{
    if (!shift_file)
        return 0;
    struct timespec m;
    if (sys_clock_gettime(CLOCK_MONOTONIC, &m) != 0)
        return atomic_load_explicit(&offset_ns, memory_order_relaxed);
    int64_t now = (int64_t)m.tv_sec * 1000000000LL + m.tv_nsec;
    if (now >= atomic_load_explicit(&next_read_ns, memory_order_relaxed) &&
        !atomic_flag_test_and_set_explicit(&reading, memory_order_acquire)) {
        int saved = errno;    /* the caller's errno is not ours to change */
        char buf[64];
        ssize_t n = -1;
        int fd = open(shift_file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            n = read(fd, buf, sizeof buf - 1);
            close(fd);
        }
        int64_t ms = 0;
        if (n > 0) {
            buf[n] = 0;
            ms = strtoll(buf, NULL, 10);
        }
        atomic_store_explicit(&offset_ns, ms * 1000000LL, memory_order_relaxed);
        atomic_store_explicit(&next_read_ns, now + REREAD_NS, memory_order_relaxed);
        atomic_flag_clear_explicit(&reading, memory_order_release);
        errno = saved;
    }
    return atomic_load_explicit(&offset_ns, memory_order_relaxed);
}

static void add_ns(struct timespec *ts, int64_t off)
{
    if (!off)
        return;
    int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + off;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000L;
        ts->tv_sec -= 1;
    }
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = sys_clock_gettime(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        add_ns(ts, current_offset());
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    struct timespec ts;
    if (sys_clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    add_ns(&ts, current_offset());
    struct timeval *out = tv;
    __asm__("" : "+r"(out));   /* declared nonnull, yet callers pass NULL: keep the check */
    if (out) {
        out->tv_sec = ts.tv_sec;
        out->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
    }
    if (tz) {   /* obsolete: always zero, as glibc gives it */
        struct timezone *z = tz;
        z->tz_minuteswest = 0;
        z->tz_dsttime = 0;
    }
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    if (sys_clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    add_ns(&ts, current_offset());
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}
