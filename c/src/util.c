/* SPDX-License-Identifier: BSD-3-Clause */
/* util.c: clocks, kernel randomness, script digests, error strings and the
 * small formatting helpers the rest of the library uses. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "internal.h"

int64_t rl_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* getpid() is a system call each time (glibc caches nothing), and the
 * library asks on every call whether it runs in a forked child. The answer
 * is kept here and renewed in the child of every fork() (pthread_atfork's
 * child handler runs there before fork returns, with one thread). */
static atomic_int pid_now;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void pid_renew(void)
{
    atomic_store(&pid_now, (int)getpid());
}

static void pid_init(void)
{
    pid_renew();
    pthread_atfork(NULL, NULL, pid_renew);
}

pid_t rl_pid(void)
{
    pthread_once(&pid_once, pid_init);
    return (pid_t)atomic_load_explicit(&pid_now, memory_order_relaxed);
}

int rl_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int rl_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];
    if (nbytes > sizeof raw || rl_random_bytes(raw, nbytes) != 0)
        return -1;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}

uint32_t rl_random_below(uint32_t bound)
{
    if (bound <= 1)
        return 0;
    /* Rejection sampling keeps the jitter uniform. */
    uint32_t limit = UINT32_MAX - UINT32_MAX % bound;
    for (;;) {
        uint32_t v;
        if (rl_random_bytes(&v, sizeof v) != 0)
            return bound / 2;
        if (v < limit)
            return v % bound;
    }
}

void rl_sha1_hex(const char *s, char out[41])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(s, strlen(s), md, &len, EVP_sha1(), NULL);
    for (unsigned int i = 0; i < len && i < 20; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[40] = '\0';
}

static const struct {
    int code;
    const char *name;
    const char *text;
} errors[] = {
    { REDLOCK_OK, "REDLOCK_OK", "success" },
    { REDLOCK_EINVAL, "REDLOCK_EINVAL", "invalid argument" },
    { REDLOCK_ENOMEM, "REDLOCK_ENOMEM", "out of memory" },
    { REDLOCK_ENOTACQUIRED, "REDLOCK_ENOTACQUIRED", "lock not acquired: held by another owner" },
    { REDLOCK_ENOQUORUM, "REDLOCK_ENOQUORUM", "no quorum: too few nodes answered" },
    { REDLOCK_EEXPIRED, "REDLOCK_EEXPIRED", "lock validity expired" },
    { REDLOCK_ELOST, "REDLOCK_ELOST", "lock lost: no longer ours on a majority of nodes" },
    { REDLOCK_ETIMEDOUT, "REDLOCK_ETIMEDOUT", "timed out waiting for the lock" },
    { REDLOCK_EIO, "REDLOCK_EIO", "I/O error talking to the nodes" },
    { REDLOCK_ESERVER, "REDLOCK_ESERVER", "server error reply" },
    { REDLOCK_EAUTH, "REDLOCK_EAUTH", "authentication failed" },
    { REDLOCK_ETLS, "REDLOCK_ETLS", "TLS error" },
    { REDLOCK_ENOTSUP, "REDLOCK_ENOTSUP", "not supported" },
    { REDLOCK_ECANCELED, "REDLOCK_ECANCELED", "cancelled" },
    { REDLOCK_ELIMIT, "REDLOCK_ELIMIT", "extension limit reached" },
    { REDLOCK_ESTATE, "REDLOCK_ESTATE", "operation does not fit the lock's state" },
    { REDLOCK_EUNREACHABLE, "REDLOCK_EUNREACHABLE", "no quorum of nodes could be reached" },
    { REDLOCK_EPERM, "REDLOCK_EPERM", "a node refused a command the lock needs" },
    { REDLOCK_EATRISK, "REDLOCK_EATRISK", "the lock is at risk: not extended, and its validity ends soon" },
    { REDLOCK_EFENCED, "REDLOCK_EFENCED", "the store refused a write: its token is older than the fence" },
};

const char *redlock_strerror(int code)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code)
            return errors[i].text;
    return "unknown error";
}

const char *redlock_error_name(int code)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code)
            return errors[i].name;
    return "REDLOCK_UNKNOWN";
}

/* Failures that another attempt may not meet: the lock is held, too few
 * nodes answered in time, the validity ran out during the round, or a node
 * failed. Everything else (bad arguments, auth, a refused command, TLS, a
 * cancel, a wait that gave up, nodes unreachable for too long) a retry
 * cannot fix. */
int redlock_error_is_retryable(int code)
{
    return code == REDLOCK_ENOTACQUIRED || code == REDLOCK_ENOQUORUM || code == REDLOCK_EEXPIRED ||
           code == REDLOCK_EIO || code == REDLOCK_ESERVER;
}

#define STR2(x) #x
#define STR(x) STR2(x)
const char *redlock_version(void)
{
    return STR(REDLOCK_VERSION_MAJOR) "." STR(REDLOCK_VERSION_MINOR) "." STR(REDLOCK_VERSION_PATCH);
}

void *rl_scratch_get(rl_scratch *s, unsigned slot, size_t bytes, int zero)
{
    if (!bytes)
        bytes = 1;
    void *p = NULL;
    if (!s || slot >= RL_SCRATCH_SLOTS || bytes > RL_SCRATCH_KEEP) {
        p = zero ? calloc(1, bytes) : malloc(bytes);
        return p;
    }
    if (s->cap[slot] < bytes) {
        /* Grown to the largest asked so far (a chunk of the auto-extend
         * thread's at most, RL_POLICY_WATCH_CHUNK locks). */
        size_t cap = bytes;
        free(s->p[slot]);
        s->p[slot] = malloc(cap);
        s->cap[slot] = s->p[slot] ? cap : 0;
        if (!s->p[slot])
            return NULL;
    }
    if (zero)
        memset(s->p[slot], 0, bytes);
    return s->p[slot];
}

void rl_scratch_put(rl_scratch *s, unsigned slot, void *p)
{
    if (!s || slot >= RL_SCRATCH_SLOTS || p != s->p[slot])
        free(p);
}

void rl_scratch_free(rl_scratch *s)
{
    for (unsigned k = 0; k < RL_SCRATCH_SLOTS; k++) {
        free(s->p[k]);
        s->p[k] = NULL;
        s->cap[k] = 0;
    }
}
