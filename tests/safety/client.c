/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c: one lock client of the safety checker (tests/safety). It loops:
 * acquire, lock-guarded read-modify-write of a counter file, release, and logs
 * every step with CLOCK_MONOTONIC times so that check.py can verify mutual
 * exclusion across processes. With --fencing it logs each acquisition's
 * fencing token; with --storage the counter write goes through a fake storage
 * that refuses stale tokens; with --auto-extend the library's watchdog keeps
 * the lock alive and a loss is logged; with --background N the client also
 * holds N other locks on the watchdog for its whole run (many locks per
 * client), logging any of them lost (BGLOST) and how many it still held at
 * the end (BGEND), and with --sample S the acquisition of every S-th of
 * them (BGWIN), so that clients run with --take (contenders for those held
 * locks, which must always be refused) can be checked. Log format: see
 * check.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define REDLOCK_EXPERIMENTAL   /* redlock_lock_acquire_many */
#include "redlock.h"

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps the whole duration even across signals (SIGSTOP/SIGCONT of this
 * process must not shorten a critical section), unless a stop was requested. */
static void sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_requested)
        ;
}

static int log_fd = -1;
static long client_id = -1;
static _Atomic long long cur_seq;     /* the acquisition the callbacks report about */

/* One write(2) per line on an O_APPEND file: a line is never torn, and is on
 * disk (in the page cache) even if this process is SIGKILLed right after. */
static void logline(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(log_fd, buf, (size_t)n);
    (void)w;
}

/* The counter is a decimal number in the first 32 bytes of a plain file,
 * protected by nothing but the lock. */
static long long read_counter(int fd)
{
    char b[33] = {0};
    ssize_t r = pread(fd, b, 32, 0);
    if (r <= 0)
        return 0;
    return atoll(b);
}

static int write_counter(int fd, long long v)
{
    char b[33];
    snprintf(b, sizeof b, "%-31lld\n", v);
    return pwrite(fd, b, 32, 0) == 32 ? 0 : -1;
}

/* The fake fencing storage: what a database row `UPDATE ... SET value = $v,
 * fence = $t WHERE fence < $t` does, on two files. The storage file holds the
 * highest token accepted and the number of writes accepted; the check of the
 * token and the write (of the counter, and of the storage file) are one atomic
 * step under flock(2) on the storage file, which is the storage's own
 * atomicity, not the lock's. t_at is read while the flock is held, so the
 * t_at of all accepted and refused writes are in the storage's own order.
 * A leader's writes (same_ok) take fence <= $t instead: it writes many times
 * per term; a value < 0 stores the counter plus one, read under the flock. */
typedef struct {
    int accepted;
    unsigned long long before;   /* the highest token stored before this write */
    int64_t t_at;
} store_result;

static int storage_write(int sfd, int cfd, uint64_t token, int same_ok, long long value, store_result *res)
{
    while (flock(sfd, LOCK_EX) != 0)
        if (errno != EINTR)
            return -1;
    char b[64] = {0};
    unsigned long long highest = 0, count = 0;
    if (pread(sfd, b, sizeof b - 1, 0) > 0)
        sscanf(b, "%llu %llu", &highest, &count);
    res->t_at = now_ns();
    res->before = highest;
    res->accepted = same_ok ? token >= highest : token > highest;
    int rc = 0;
    if (res->accepted) {
        char o[64];
        snprintf(o, sizeof o, "%-20" PRIu64 " %-20llu\n", token, count + 1);
        if (value < 0)
            value = read_counter(cfd) + 1;
        if (write_counter(cfd, value) != 0 || pwrite(sfd, o, 42, 0) != 42)
            rc = -1;
    }
    flock(sfd, LOCK_UN);
    return rc;
}

/* Error messages go on the end of a log line: keep them on one line. */
static const char *oneline(const char *s, char *out, size_t size)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < size; i++)
        out[i] = (s[i] == '\n' || s[i] == '\r') ? ' ' : s[i];
    out[i] = 0;
    return out;
}

/* --auto-extend: extensions are logged from the metrics hook, which runs on the
 * thread that extended (the client's background thread), as the validity the
 * library then reports, measured the same way as after acquire. */
static redlock_lock *main_lock;   /* the checked lock; background locks are not logged */
static redlock_lock *rw_read, *rw_write;   /* --mode rw: the checked locks */
static const redlock_lock *elect_lock;     /* --mode elect: the election's lock */
static int checked_lock(const redlock_lock *l)
{
    return l && (l == main_lock || l == rw_read || l == rw_write || l == elect_lock);
}
static atomic_long bg_lost;

static void on_event(const redlock_event *ev, void *userdata)
{
    (void)userdata;
    if (ev->type != REDLOCK_EVENT_EXTENDED || !checked_lock(ev->lock))
        return;
    int64_t t = now_ns();
    int64_t left = redlock_lock_validity_ms(ev->lock);
    logline("EXT %ld %lld %lld %lld %d", client_id, atomic_load(&cur_seq), (long long)t,
            (long long)(t + left * 1000000), ev->automatic);
}

static void on_lost(redlock_lock *lock, int code, const char *message, void *userdata)
{
    (void)userdata;
    char msg[1024];
    logline("LOST %ld %lld %lld %d %s %d %s", client_id, atomic_load(&cur_seq), (long long)now_ns(), code,
            redlock_error_name(code), redlock_lock_is_held(lock), oneline(message, msg, sizeof msg));
}

static void on_bg_lost(redlock_lock *lock, int code, const char *message, void *userdata)
{
    (void)userdata;
    char msg[1024];
    atomic_fetch_add(&bg_lost, 1);
    logline("BGLOST %ld %lld %lld %d %s %s %s", client_id, atomic_load(&cur_seq), (long long)now_ns(), code,
            redlock_error_name(code), redlock_lock_resource(lock), oneline(message, msg, sizeof msg));
}

/* ---- --mode elect: leader election (docs/algorithm.md, "Leader election") ----
 * A campaigner loops: campaign, act as leader for --hold ms, writing with its
 * term as the fencing token every --step ms while it leads, then resign. An
 * observer (--role observer) logs every state redlock_election_observe
 * returns. Log lines: see check_elect.py. */
typedef struct elect_params {
    long id, ttl, hold, margin, gap, step;
    long long wait;
    int observer;
    int64_t end;
} elect_params;

static int run_observer(redlock_election *e, const elect_params *p)
{
    redlock_leader cur = { .version = REDLOCK_LEADER_VERSION };
    char msg[1024];
    while (!stop_requested && now_ns() < p->end) {
        int64_t t_call = now_ns();
        int rc = redlock_election_observe(e, &cur, 300);
        int64_t t_ret = now_ns();
        if (rc == 0)
            logline("SEEN %ld %lld %lld %d %" PRIu64 " %" PRIu64 " %s", p->id, (long long)t_call, (long long)t_ret,
                    cur.present, cur.term, cur.revision, cur.present ? cur.value : "-");
        else if (rc != REDLOCK_ETIMEDOUT)
            logline("OFAIL %ld %lld %d %s %s", p->id, (long long)t_ret, rc, redlock_error_name(rc),
                    oneline(redlock_election_errmsg(e), msg, sizeof msg));
    }
    return 0;
}

static int run_campaigner(redlock_election *e, const elect_params *p, int sfd, int cfd)
{
    char value[32], msg[1024];
    snprintf(value, sizeof value, "c%ld", p->id);
    unsigned seed = (unsigned)now_ns() ^ ((unsigned)getpid() << 16);
    long long seq = 0, led = 0;
    redlock_election_on_lost(e, on_lost, NULL);
    const redlock_lock *lock = redlock_election_lock(e);
    while (!stop_requested && now_ns() < p->end) {
        seq++;
        atomic_store(&cur_seq, seq);
        int64_t t_call = now_ns();
        int rc = redlock_election_campaign(e, value, (uint32_t)p->ttl, p->wait);
        int64_t t_ret = now_ns();
        if (rc != 0) {
            logline("EFAIL %ld %lld %lld %lld %d %s %s", p->id, seq, (long long)t_call, (long long)t_ret, rc,
                    redlock_error_name(rc), oneline(redlock_election_errmsg(e), msg, sizeof msg));
            continue;
        }
        led++;
        int64_t validity = redlock_lock_validity_ms(lock);
        uint64_t term = redlock_election_term(e);
        logline("LEAD %ld %lld %lld %lld %lld %" PRIu64, p->id, seq, (long long)t_call, (long long)t_ret,
                (long long)(t_ret + validity * 1000000), term);
        int64_t until = t_ret + (int64_t)p->hold * 1000000;
        while (!stop_requested && now_ns() < until) {
            int64_t t_check = now_ns();
            if (!redlock_election_is_leader(e) || redlock_lock_validity_ms(lock) <= p->margin)
                break;
            store_result res;
            int64_t t_begin = now_ns();
            if (storage_write(sfd, cfd, term, 1, -1, &res) != 0) {
                perror("storage");
                return 1;
            }
            logline("EWRITE %ld %lld %lld %lld %lld %" PRIu64 " %s %llu", p->id, seq, (long long)t_check,
                    (long long)res.t_at, (long long)now_ns(), term, res.accepted ? "ACCEPT" : "REJECT", res.before);
            (void)t_begin;
            sleep_ms(p->step);
        }
        int64_t t_res = now_ns();
        rc = redlock_election_resign(e);
        logline("RESIGN %ld %lld %lld %lld %d %s", p->id, seq, (long long)t_res, (long long)now_ns(), rc,
                rc ? redlock_error_name(rc) : "OK");
        if (p->gap > 0)
            sleep_ms(rand_r(&seed) % (p->gap + 1));
    }
    logline("LED %ld %lld", p->id, led);
    return 0;
}

static int run_elect(redlock_client *client, const char *resource, const elect_params *p, int sfd, int cfd)
{
    redlock_election *e;
    int rc = redlock_election_new(&e, client, resource);
    if (rc != 0) {
        fprintf(stderr, "client %ld: election_new: %s\n", p->id, redlock_strerror(rc));
        return 1;
    }
    elect_lock = redlock_election_lock(e);   /* its extensions are logged (on_event) */
    rc = p->observer ? run_observer(e, p) : run_campaigner(e, p, sfd, cfd);
    redlock_election_free(e);
    return rc;
}

/* ---- --mode rw: the read-write lock (docs/algorithm.md, "Read-write
 * locks"). Each iteration takes the write side one time in --write-every
 * (then the usual read-modify-write; 1: always, 0: never) and else the
 * read side (then it only reads the counter). An "RW id seq R|W" line
 * follows each ACQ: check.py lets readers overlap readers only. */
static int rw_mode;
static long rw_write_every = 3;

static int rw_open(redlock_client *client, const char *resource)
{
    int rc = redlock_lock_new_read(&rw_read, client, resource);
    if (rc == 0)
        rc = redlock_lock_new_write(&rw_write, client, resource);
    if (rc != 0)
        fprintf(stderr, "client %ld: read-write lock: %s\n", client_id, redlock_strerror(rc));
    return rc;
}

static redlock_lock *rw_pick(unsigned *seed)
{
    return rw_write_every > 0 && rand_r(seed) % rw_write_every == 0 ? rw_write : rw_read;
}

static void rw_close(void)
{
    redlock_lock_free(rw_read);
    redlock_lock_free(rw_write);
}

/* --mode sem --limit L: the client holds a permit of a counting semaphore
 * of limit L instead of the mutex. Up to L clients are inside at once, so
 * the counter is not written (check.py counts the holders instead). */
static long sem_limit;

static int sem_lock_new(redlock_lock **lock, redlock_client *client, const char *resource)
{
    char err[512];
    int rc = redlock_lock_open_semaphore(lock, client, resource, (uint32_t)sem_limit, 1, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "client %ld: semaphore: %s\n", client_id, err);
    return rc;
}

/* --mode multi: the client holds a multi-resource lock on {R, R:pair}
 * (redlock_lock_new_multi), listed in that order by even ids and the other
 * way by odd ones, and guards the counter with it as with the mutex: every
 * client contends for R, so check.py's mutex checks apply, across the
 * orders and against mutex clients on R. */
static int multi_lock_new(redlock_lock **lock, redlock_client *client, const char *resource)
{
    char pair[600], err[512];
    snprintf(pair, sizeof pair, "%s:pair", resource);
    const char *names[2] = { resource, pair };
    if (client_id % 2) {
        names[0] = pair;
        names[1] = resource;
    }
    int rc = redlock_lock_open_multi(lock, client, names, 2, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "client %ld: multi lock: %s\n", client_id, err);
    return rc;
}

/* --take: a contender for held locks. Tries the background locks K = 0,
 * S, 2S... < N of client `holder` in turn, one attempt each, until the
 * duration ends, logging each try:
 *   TAKE id seq t_call t_ret rc holder K valid_until
 * (valid_until 0 unless rc is 0). A lock it gets is released at once. */
static int run_take(redlock_client *client, const char *resource, long holder, long total, long every, long ttl,
                    long gap, double duration)
{
    long m = (total + every - 1) / every;
    redlock_lock **l = calloc((size_t)m, sizeof *l);
    if (!l)
        return 1;
    for (long j = 0; j < m; j++) {
        char name[512];
        snprintf(name, sizeof name, "%s:bg:%ld:%ld", resource, holder, j * every);
        if (redlock_lock_new(&l[j], client, name) != 0)
            return 1;
    }
    unsigned seed = (unsigned)now_ns() ^ ((unsigned)getpid() << 16);
    int64_t end = duration > 0 ? now_ns() + (int64_t)(duration * 1e9) : INT64_MAX;
    long long seq = 0;
    for (long j = 0; !stop_requested && now_ns() < end; j = (j + 1) % m) {
        seq++;
        int64_t t_call = now_ns();
        int rc = redlock_lock_acquire(l[j], (uint32_t)ttl, REDLOCK_WAIT_NONE);
        int64_t t_ret = now_ns();
        int64_t vu = rc == 0 ? t_ret + redlock_lock_validity_ms(l[j]) * 1000000 : 0;
        logline("TAKE %ld %lld %lld %lld %d %ld %ld %lld", client_id, seq, (long long)t_call, (long long)t_ret,
                rc, holder, j * every, (long long)vu);
        if (rc == 0)
            redlock_lock_release(l[j]);
        if (gap > 0)
            sleep_ms(rand_r(&seed) % (gap + 1));
    }
    for (long j = 0; j < m; j++)
        redlock_lock_free(l[j]);
    free(l);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: safety_client --id N --log FILE --counter FILE [options] [NODE_URL...]\n"
            "  nodes: the URLs, or $REDLOCK_TEST_NODES (comma-separated)\n"
            "  --resource R        lock name (safety:r)\n"
            "  --ttl MS            lock TTL (1000)\n"
            "  --hold MS           critical section length, between read and write (20)\n"
            "  --margin MS         write only if validity > MS after the hold (ttl/10)\n"
            "  --gap MS            max random pause between iterations (10)\n"
            "  --wait MS           acquire wait_ms: -1 default retries, 0 one attempt (-1)\n"
            "  --attempt-gap MS    max random pause after a failed acquire (0)\n"
            "  --duration S        stop after S seconds (10); 0 = until --iterations/SIGTERM\n"
            "  --iterations N      stop after N successful acquisitions (0 = no limit)\n"
            "  --fencing           REDLOCK_OPT_FENCING: log each acquisition's fencing token\n"
            "  --storage FILE      write the counter through the fake fencing storage FILE\n"
            "                      (needs --fencing): refused unless the token is the highest\n"
            "  --pre-write MS      sleep between the validity check and the write (0)\n"
            "  --auto-extend       redlock_lock_auto_extend after each acquisition; log\n"
            "                      extensions (on_event) and a loss (the lost callback)\n"
            "  --wake, --no-wake, --fair\n"
            "  --no-quarantine     REDLOCK_OPT_NO_QUARANTINE: restarted, wiped or clock-stepped\n"
            "                      nodes vote at once (plain Redlock)\n"
            "                      REDLOCK_OPT_WAKE (woken by releases) / REDLOCK_OPT_NO_WAKE\n"
            "                      (poll only, the default) / REDLOCK_OPT_FAIR\n"
            "  --background N      also hold N other locks (R:bg:ID:K, the same TTL) on\n"
            "                      auto-extend for the whole run; log losses (BGLOST) and\n"
            "                      how many are still held at the end (BGEND)\n"
            "  --sample S          with --background: log the acquisition of every S-th\n"
            "                      background lock (BGWIN), for the --take contenders\n"
            "  --take H:N:S        a contender, no counter: try (one attempt each, in turn)\n"
            "                      the background locks K = 0, S, 2S... < N of client H,\n"
            "                      held by H all along: logs each try (TAKE); a success is\n"
            "                      released at once (and is a violation while H holds K)\n"
            "  --mode rw           the read-write lock: readers only read the counter\n"
            "  --write-every N     rw: one iteration in N takes the write side (3; 1 all, 0 none)\n"
            "  --mode sem --limit L  a permit of a counting semaphore of limit L, not the\n"
            "                      mutex: no counter write (check.py counts holders)\n"
            "  --mode multi        a multi-resource lock on {R, R:pair} (odd ids list it the\n"
            "                      other way round), checked as the mutex\n"
            "  --node-timeout MS, --connect-timeout MS, --retry-count N,\n"
            "  --retry-delay MS, --retry-jitter MS   client options (library defaults)\n"
            "  --mode elect        leader election: campaign, write with the term to --storage\n"
            "                      every --step MS for --hold MS, resign; --role observer logs\n"
            "                      what redlock_election_observe returns (check_elect.py)\n");
}

int main(int argc, char **argv)
{
    const char *resource = "safety:r", *log_path = NULL, *counter_path = NULL;
    long id = -1, ttl = 1000, hold = 20, margin = -1, gap = 10, attempt_gap = 0;
    long long wait = REDLOCK_WAIT_DEFAULT, iterations = 0;
    double duration = 10;
    redlock_options o;
    redlock_options_init(&o);

    const char *storage_path = NULL;
    long pre_write = 0;
    int fencing = 0, auto_extend = 0, wake = 0, no_wake = 0, fair = 0, no_quarantine = 0;
    long background = 0, sample = 0;
    const char *take = NULL;
    const char *mode = "mutex";
    enum { O_NODE_TIMEOUT = 256, O_CONNECT_TIMEOUT, O_RETRY_COUNT, O_RETRY_DELAY, O_RETRY_JITTER,
           O_ATTEMPT_GAP, O_FENCING, O_STORAGE, O_PRE_WRITE, O_AUTO_EXTEND, O_WAKE, O_NO_WAKE, O_FAIR, O_BACKGROUND, O_NO_QUARANTINE,
           O_MODE = 400, O_WRITE_EVERY, O_SEM_LIMIT, O_ROLE, O_STEP, O_SAMPLE, O_TAKE };
    const char *role = "campaigner";
    long step = 20;
    static const struct option lopts[] = {
        {"id", required_argument, 0, 'i'},
        {"log", required_argument, 0, 'l'},
        {"counter", required_argument, 0, 'c'},
        {"resource", required_argument, 0, 'r'},
        {"ttl", required_argument, 0, 't'},
        {"hold", required_argument, 0, 'h'},
        {"margin", required_argument, 0, 'm'},
        {"gap", required_argument, 0, 'g'},
        {"wait", required_argument, 0, 'w'},
        {"duration", required_argument, 0, 'd'},
        {"iterations", required_argument, 0, 'n'},
        {"attempt-gap", required_argument, 0, O_ATTEMPT_GAP},
        {"node-timeout", required_argument, 0, O_NODE_TIMEOUT},
        {"connect-timeout", required_argument, 0, O_CONNECT_TIMEOUT},
        {"retry-count", required_argument, 0, O_RETRY_COUNT},
        {"retry-delay", required_argument, 0, O_RETRY_DELAY},
        {"retry-jitter", required_argument, 0, O_RETRY_JITTER},
        {"fencing", no_argument, 0, O_FENCING},
        {"storage", required_argument, 0, O_STORAGE},
        {"pre-write", required_argument, 0, O_PRE_WRITE},
        {"auto-extend", no_argument, 0, O_AUTO_EXTEND},
        {"wake", no_argument, 0, O_WAKE},
        {"no-wake", no_argument, 0, O_NO_WAKE},
        {"fair", no_argument, 0, O_FAIR},
        {"no-quarantine", no_argument, 0, O_NO_QUARANTINE},
        {"background", required_argument, 0, O_BACKGROUND},
        {"sample", required_argument, 0, O_SAMPLE},
        {"take", required_argument, 0, O_TAKE},
        {"mode", required_argument, 0, O_MODE},
        {"write-every", required_argument, 0, O_WRITE_EVERY},
        {"role", required_argument, 0, O_ROLE},
        {"step", required_argument, 0, O_STEP},
        {"limit", required_argument, 0, O_SEM_LIMIT},
        {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (ch) {
        case 'i': id = atol(optarg); break;
        case 'l': log_path = optarg; break;
        case 'c': counter_path = optarg; break;
        case 'r': resource = optarg; break;
        case 't': ttl = atol(optarg); break;
        case 'h': hold = atol(optarg); break;
        case 'm': margin = atol(optarg); break;
        case 'g': gap = atol(optarg); break;
        case 'w': wait = atoll(optarg); break;
        case 'd': duration = atof(optarg); break;
        case 'n': iterations = atoll(optarg); break;
        case O_ATTEMPT_GAP: attempt_gap = atol(optarg); break;
        case O_NODE_TIMEOUT: o.node_timeout_ms = (uint32_t)atol(optarg); break;
        case O_CONNECT_TIMEOUT: o.connect_timeout_ms = (uint32_t)atol(optarg); break;
        case O_RETRY_COUNT: o.retry_count = (uint32_t)atol(optarg); break;
        case O_RETRY_DELAY: o.retry_delay_ms = (uint32_t)atol(optarg); break;
        case O_RETRY_JITTER: o.retry_jitter_ms = (uint32_t)atol(optarg); break;
        case O_FENCING: fencing = 1; break;
        case O_STORAGE: storage_path = optarg; break;
        case O_PRE_WRITE: pre_write = atol(optarg); break;
        case O_AUTO_EXTEND: auto_extend = 1; break;
        case O_WAKE: wake = 1; break;
        case O_NO_WAKE: no_wake = 1; break;
        case O_FAIR: fair = 1; break;
        case O_NO_QUARANTINE: no_quarantine = 1; break;
        case O_BACKGROUND: background = atol(optarg); break;
        case O_SAMPLE: sample = atol(optarg); break;
        case O_TAKE: take = optarg; break;
        case O_MODE:
            if (strcmp(optarg, "mutex") != 0 && strcmp(optarg, "rw") != 0 && strcmp(optarg, "sem") != 0 &&
                strcmp(optarg, "elect") != 0 && strcmp(optarg, "multi") != 0) {
                usage();
                return 2;
            }
            mode = optarg;
            rw_mode = strcmp(mode, "rw") == 0;
            break;
        case O_WRITE_EVERY: rw_write_every = atol(optarg); break;
        case O_ROLE: role = optarg; break;
        case O_STEP: step = atol(optarg); break;
        case O_SEM_LIMIT: sem_limit = atol(optarg); break;
        default: usage(); return 2;
        }
    }
    int sem = strcmp(mode, "sem") == 0;
    if (sem && sem_limit <= 0) {
        usage();
        return 2;
    }
    if (id < 0 || !log_path || !counter_path || ttl <= 0 || (storage_path && !fencing && strcmp(mode, "elect") != 0)) {
        usage();
        return 2;
    }
    client_id = id;
    if (fencing)
        o.flags |= REDLOCK_OPT_FENCING;
    if (wake)
        o.flags |= REDLOCK_OPT_WAKE;
    if (no_wake)
        o.flags |= REDLOCK_OPT_NO_WAKE;
    if (fair)
        o.flags |= REDLOCK_OPT_FAIR;
    if (no_quarantine)
        o.flags |= REDLOCK_OPT_NO_QUARANTINE;
    if (auto_extend || background || strcmp(mode, "elect") == 0)
        o.on_event = on_event;
    if (margin < 0)
        margin = ttl / 10;

    /* Node URLs: arguments, else the harness's environment variable. */
    const char *urls[REDLOCK_MAX_NODES];
    size_t n = 0;
    char *envcopy = NULL;
    for (int i = optind; i < argc && n < REDLOCK_MAX_NODES; i++)
        urls[n++] = argv[i];
    if (n == 0 && getenv("REDLOCK_TEST_NODES")) {
        envcopy = strdup(getenv("REDLOCK_TEST_NODES"));
        for (char *save = NULL, *u = strtok_r(envcopy, ",", &save); u && n < REDLOCK_MAX_NODES;
             u = strtok_r(NULL, ",", &save))
            urls[n++] = u;
    }
    if (n == 0) {
        usage();
        return 2;
    }

    log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int cfd = open(counter_path, O_RDWR | O_CLOEXEC);
    int sfd = storage_path ? open(storage_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (log_fd < 0 || cfd < 0 || (storage_path && sfd < 0)) {
        perror(log_fd < 0 ? log_path : cfd < 0 ? counter_path : storage_path);
        return 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* SIGPIPE stays at its default: a write to a connection the node (or the
     * proxy) reset must not kill us, and the library promises it won't
     * (docs/threading.md). The reset and truncate rows test that. */

    redlock_client *client;
    char err[1024];
    int rc = redlock_client_open(&client, urls, n, &o, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "client %ld: %s\n", id, err);
        return 1;
    }
    if (take) {
        long holder = -1, total = 0, every = 0;
        if (sscanf(take, "%ld:%ld:%ld", &holder, &total, &every) != 3 || holder < 0 || total <= 0 || every <= 0) {
            usage();
            return 2;
        }
        logline("START %ld %lld pid=%ld mode=take holder=%ld of=%ld every=%ld ttl=%ld nodes=%zu", id,
                (long long)now_ns(), (long)getpid(), holder, total, every, ttl, n);
        rc = run_take(client, resource, holder, total, every, ttl, gap, duration);
        logline("END %ld %lld", id, (long long)now_ns());
        redlock_client_free(client);
        close(cfd);
        close(log_fd);
        free(envcopy);
        return rc;
    }
    if (strcmp(mode, "elect") == 0) {
        /* Election mode: its own loop (run_elect); extensions logged by on_event. */
        elect_params ep = { id, ttl, hold, margin, gap, step, wait, strcmp(role, "observer") == 0,
                            duration > 0 ? now_ns() + (int64_t)(duration * 1e9) : INT64_MAX };
        if (!ep.observer && sfd < 0) {
            fprintf(stderr, "client %ld: --mode elect needs --storage\n", id);
            return 2;
        }
        logline("START %ld %lld pid=%ld mode=elect role=%s ttl=%ld drift_ms=%.3f hold=%ld margin=%ld wait=%lld "
                "nodes=%zu node_timeout=%u connect_timeout=%u", id, (long long)now_ns(), (long)getpid(), role, ttl,
                (double)ttl * o.drift_factor + o.drift_min_ms, hold, margin, wait, n, o.node_timeout_ms,
                o.connect_timeout_ms);
        rc = run_elect(client, resource, &ep, sfd, cfd);
        logline("END %ld %lld", id, (long long)now_ns());
        redlock_client_free(client);
        close(cfd);
        if (sfd >= 0)
            close(sfd);
        close(log_fd);
        free(envcopy);
        return rc;
    }
    redlock_lock *lock;
    rc = sem ? sem_lock_new(&lock, client, resource)
         : strcmp(mode, "multi") == 0 ? multi_lock_new(&lock, client, resource)
         : redlock_lock_new(&lock, client, resource);
    if (rc != 0) {
        fprintf(stderr, "client %ld: lock_new: %s\n", id, redlock_strerror(rc));
        return 1;
    }
    main_lock = lock;
    redlock_lock **bg = background > 0 ? calloc((size_t)background, sizeof *bg) : NULL;
    for (long k = 0; k < background; k++) {
        char name[512];
        snprintf(name, sizeof name, "%s:bg:%ld:%ld", resource, id, k);
        if ((rc = redlock_lock_new(&bg[k], client, name)) != 0) {
            fprintf(stderr, "client %ld: background lock %ld: %s\n", id, k, redlock_error_name(rc));
            return 1;
        }
    }
    /* Taken together (redlock_lock_acquire_many), again for those that a
     * loaded machine's node timeouts failed, then kept on auto-extend. */
    int *bg_rc = background > 0 ? calloc((size_t)background, sizeof *bg_rc) : NULL;
    for (int tries = 0; background > 0; tries++) {
        long pending = 0;
        redlock_lock **todo = calloc((size_t)background, sizeof *todo);
        for (long k = 0; k < background; k++)
            if (!redlock_lock_is_held(bg[k]))
                todo[pending++] = bg[k];
        if (pending && (rc = redlock_lock_acquire_many(client, todo, (size_t)pending, (uint32_t)ttl, bg_rc, NULL, 0)) != 0) {
            fprintf(stderr, "client %ld: acquire_many: %s\n", id, redlock_error_name(rc));
            return 1;
        }
        int64_t t_acq = now_ns();
        for (long k = 0; k < pending; k++) {
            if (bg_rc[k] == 0 && (rc = redlock_lock_auto_extend(todo[k], 0, 0, on_bg_lost, NULL, NULL)) != 0) {
                fprintf(stderr, "client %ld: auto_extend: %s\n", id, redlock_error_name(rc));
                return 1;
            }
            /* The sampled ones: held from when the call returned. */
            const char *nm = redlock_lock_resource(todo[k]), *tail = strrchr(nm, ':');
            long idx = tail ? atol(tail + 1) : -1;
            if (bg_rc[k] == 0 && sample > 0 && idx % sample == 0)
                logline("BGWIN %ld %ld %lld %lld", id, idx, (long long)t_acq,
                        (long long)(t_acq + redlock_lock_validity_ms(todo[k]) * 1000000));
        }
        free(todo);
        if (!pending)
            break;
        if (tries == 50) {
            fprintf(stderr, "client %ld: %ld background locks not acquired after 50 tries: %s\n", id, pending,
                    redlock_error_name(bg_rc[0]));
            return 1;
        }
    }
    free(bg_rc);
    if (background)
        logline("BGHELD %ld 0 %lld %ld", id, (long long)now_ns(), background);
    if (rw_mode) {
        redlock_lock_free(lock);
        if (rw_open(client, resource) != 0)
            return 1;
        lock = rw_read;
        main_lock = NULL;   /* freed: rw_read and rw_write are checked instead */
        logline("MODE %ld rw write_every=%ld", id, rw_write_every);
    }

    /* The drift the library subtracts, so the checker can verify that the
     * reported validity never exceeds ttl - drift from before the call. */
    double drift_ms = (double)ttl * o.drift_factor + o.drift_min_ms;
    logline("START %ld %lld pid=%ld ttl=%ld drift_ms=%.3f hold=%ld margin=%ld wait=%lld nodes=%zu "
            "fencing=%d storage=%d auto_extend=%d pre_write=%ld mode=%s limit=%ld",
            id, (long long)now_ns(), (long)getpid(), ttl, drift_ms, hold, margin, wait, n, fencing,
            storage_path != NULL, auto_extend, pre_write, mode, sem ? sem_limit : 1);

    unsigned seed = (unsigned)now_ns() ^ ((unsigned)getpid() << 16);
    int64_t end = duration > 0 ? now_ns() + (int64_t)(duration * 1e9) : INT64_MAX;
    long long seq = 0, acquired = 0;
    char msg[1024];
    while (!stop_requested && now_ns() < end && (iterations == 0 || acquired < iterations)) {
        seq++;
        atomic_store(&cur_seq, seq);
        if (rw_mode)
            lock = rw_pick(&seed);
        int64_t t_call = now_ns();
        rc = redlock_lock_acquire(lock, (uint32_t)ttl, wait);
        int64_t t_ret = now_ns();
        if (rc != 0) {
            logline("FAIL %ld %lld %lld %lld %d %s %s", id, seq, (long long)t_call,
                    (long long)t_ret, rc, redlock_error_name(rc),
                    oneline(redlock_lock_errmsg(lock), msg, sizeof msg));
            /* Random, like the library's retry jitter: a fixed pause keeps clients in step
             * and can split the votes forever when a node is unreachable. */
            if (attempt_gap > 0)
                sleep_ms(rand_r(&seed) % (attempt_gap + 1));
            continue;
        }
        acquired++;
        /* The safe window starts when acquire returned and ends at what the
         * library says is left of the validity, measured at the same moment. */
        int64_t validity = redlock_lock_validity_ms(lock);
        uint64_t token = redlock_lock_fencing_token(lock);
        int64_t valid_until = t_ret + validity * 1000000;
        logline("ACQ %ld %lld %lld %lld %lld %" PRIu64, id, seq, (long long)t_call, (long long)t_ret,
                (long long)valid_until, token);
        if (rw_mode)
            logline("RW %ld %lld %c", id, seq, lock == rw_read ? 'R' : 'W');
        if (auto_extend) {
            rc = redlock_lock_auto_extend(lock, 0, 0, on_lost, NULL, NULL);
            if (rc != 0)    /* ESTATE: the validity ran out already; the loop goes on */
                logline("AEFAIL %ld %lld %lld %d %s", id, seq, (long long)now_ns(), rc, redlock_error_name(rc));
        }

        long long v = read_counter(cfd);
        logline("CS %ld %lld %lld %lld", id, seq, (long long)now_ns(), v);
        sleep_ms(hold);
        int64_t t_check = now_ns();
        int64_t left = redlock_lock_validity_ms(lock);
        if (rw_mode && lock == rw_read) {
            /* a reader only reads */
        } else if (sem) {
            /* up to L holders at once: no counter to write */
        } else if (left > margin) {
            if (pre_write > 0) {
                logline("PRE %ld %lld %lld %lld", id, seq, (long long)t_check, (long long)left);
                sleep_ms(pre_write);
            }
            if (sfd >= 0) {
                /* Through the storage: the counter is written only if it accepts the token. */
                store_result res;
                int64_t t_begin = now_ns();
                if (storage_write(sfd, cfd, token, 0, v + 1, &res) != 0) {
                    perror("storage");
                    return 1;
                }
                int64_t t_done = now_ns();
                logline("FENCE %ld %lld %lld %lld %lld %" PRIu64 " %s %llu", id, seq, (long long)t_begin,
                        (long long)res.t_at, (long long)t_done, token, res.accepted ? "ACCEPT" : "REJECT",
                        res.before);
                if (res.accepted)
                    logline("WRITE %ld %lld %lld %lld %lld %lld", id, seq, (long long)t_check,
                            (long long)t_done, v, v + 1);
            } else {
                if (write_counter(cfd, v + 1) != 0) {
                    perror("pwrite");
                    return 1;
                }
                logline("WRITE %ld %lld %lld %lld %lld %lld", id, seq, (long long)t_check,
                        (long long)now_ns(), v, v + 1);
            }
        } else {
            logline("SKIP %ld %lld %lld %lld", id, seq, (long long)t_check, (long long)left);
        }

        int64_t t_rel = now_ns();
        rc = redlock_lock_release(lock);
        int64_t t_rel_ret = now_ns();
        logline("REL %ld %lld %lld %lld %d %s %s", id, seq, (long long)t_rel, (long long)t_rel_ret,
                rc, rc ? redlock_error_name(rc) : "OK",
                rc ? oneline(redlock_lock_errmsg(lock), msg, sizeof msg) : "");
        if (gap > 0)
            sleep_ms(rand_r(&seed) % (gap + 1));
    }
    if (background) {
        long held = 0;
        for (long k = 0; k < background; k++)
            held += redlock_lock_is_held(bg[k]);
        logline("BGEND %ld %lld %lld %ld %ld %ld", id, seq, (long long)now_ns(), background, held,
                atomic_load(&bg_lost));
        for (long k = 0; k < background; k++) {
            redlock_lock_release(bg[k]);
            redlock_lock_free(bg[k]);
        }
        free(bg);
    }
    logline("END %ld %lld acquired=%lld", id, (long long)now_ns(), acquired);
    if (rw_mode)
        rw_close();
    else
        redlock_lock_free(lock);
    redlock_client_free(client);
    close(cfd);
    if (sfd >= 0)
        close(sfd);
    close(log_fd);
    free(envcopy);
    return 0;
}
