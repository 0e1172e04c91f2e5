/* SPDX-License-Identifier: BSD-3-Clause */
/* floor.c: the benchmark's floors, written directly on hiredis with nothing
 * on top: the protocol floor (wait for every node) and the quorum floor (stop
 * at a majority, the least a Redlock acquire+release can cost). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "bench.h"

/* Same script text as the library's, so the servers do the same work. */
static const char release_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/* Long enough never to fire on healthy local nodes; it only keeps a broken
 * run from hanging. */
#define FLOOR_TIMEOUT_MS 2000

struct bench_floor {
    size_t n;
    redisContext *ctx[BENCH_MAX_NODES];
    struct pollfd pfd[BENCH_MAX_NODES];
    size_t map[BENCH_MAX_NODES];
    redisReply *rep[BENCH_MAX_NODES];
    /* Replies still owed by each connection from earlier rounds that
     * returned at quorum without them; they come before any newer reply. */
    long owed[BENCH_MAX_NODES];
    long late_errors;           /* late replies that were not the expected OK / 1 */
    char sha[41];
};

static void free_replies(bench_floor *f)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->rep[i])
            freeReplyObject(f->rep[i]);
        f->rep[i] = NULL;
    }
}

/* A late reply from a round that returned at quorum: a SET must have said OK
 * and a release 1 (the same connection ran the SET first); count anything else. */
static void late_reply(bench_floor *f, redisReply *r)
{
    if (!((r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) ||
          (r->type == REDIS_REPLY_INTEGER && r->integer == 1)))
        f->late_errors++;
    freeReplyObject(r);
}

/* Writes what was appended on every context, then waits in one poll loop
 * until `need` nodes have answered this round's command. A connection's late
 * replies (owed by earlier rounds) are read and checked first: only the reply
 * after them counts. Replies land in f->rep[]; a node that has not answered
 * when the round returns owes its reply to the next round. need == f->n is
 * the protocol floor, a majority the quorum floor. */
static int round_wait(bench_floor *f, size_t need, char *err, size_t errsize)
{
    size_t got = 0;
    int wpending[BENCH_MAX_NODES];
    int64_t deadline = bench_now_ns() + (int64_t)FLOOR_TIMEOUT_MS * 1000000;

    for (size_t i = 0; i < f->n; i++) {
        int done = 0;
        /* One write() almost always does it; if the socket buffer is full
         * (a node far behind), the poll loop finishes the write. */
        if (redisBufferWrite(f->ctx[i], &done) == REDIS_ERR) {
            snprintf(err, errsize, "node %zu: write: %s", i, f->ctx[i]->errstr);
            return -1;
        }
        wpending[i] = !done;
    }
    while (got < need) {
        nfds_t nfds = 0;
        for (size_t i = 0; i < f->n; i++) {
            if (f->rep[i] && !wpending[i])
                continue;
            f->pfd[nfds].fd = f->ctx[i]->fd;
            f->pfd[nfds].events = (short)((f->rep[i] ? 0 : POLLIN) | (wpending[i] ? POLLOUT : 0));
            f->pfd[nfds].revents = 0;
            f->map[nfds++] = i;
        }
        int64_t wait_ns = deadline - bench_now_ns();
        if (wait_ns <= 0) {
            snprintf(err, errsize, "%zu of %zu node(s) did not answer within %d ms", need - got, need,
                     FLOOR_TIMEOUT_MS);
            return -1;
        }
        int rc = poll(f->pfd, nfds, (int)((wait_ns + 999999) / 1000000));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0) {
            snprintf(err, errsize, "poll: %s", strerror(errno));
            return -1;
        }
        for (nfds_t k = 0; k < nfds; k++) {
            if (!f->pfd[k].revents)
                continue;
            size_t i = f->map[k];
            if (wpending[i] && (f->pfd[k].revents & (POLLOUT | POLLERR | POLLHUP))) {
                int done = 0;
                if (redisBufferWrite(f->ctx[i], &done) == REDIS_ERR) {
                    snprintf(err, errsize, "node %zu: write: %s", i, f->ctx[i]->errstr);
                    return -1;
                }
                wpending[i] = !done;
            }
            if (f->rep[i] || !(f->pfd[k].revents & (POLLIN | POLLERR | POLLHUP)))
                continue;
            if (redisBufferRead(f->ctx[i]) == REDIS_ERR) {
                snprintf(err, errsize, "node %zu: read: %s", i, f->ctx[i]->errstr);
                return -1;
            }
            /* One read may carry late replies and this round's. */
            while (!f->rep[i]) {
                void *r = NULL;
                if (redisGetReply(f->ctx[i], &r) == REDIS_ERR) {
                    snprintf(err, errsize, "node %zu: read: %s", i, f->ctx[i]->errstr);
                    return -1;
                }
                if (!r)
                    break;
                if (f->owed[i] > 0) {
                    f->owed[i]--;
                    late_reply(f, r);
                } else {
                    f->rep[i] = r;
                    got++;
                }
            }
        }
    }
    for (size_t i = 0; i < f->n; i++)
        if (!f->rep[i])
            f->owed[i]++;
    return 0;
}

static int round_all(bench_floor *f, char *err, size_t errsize)
{
    return round_wait(f, f->n, err, errsize);
}

static int wait_connected(redisContext *c, char *err, size_t errsize, size_t i)
{
    struct pollfd p = { .fd = c->fd, .events = POLLOUT, .revents = 0 };
    int rc;
    do
        rc = poll(&p, 1, FLOOR_TIMEOUT_MS);
    while (rc < 0 && errno == EINTR);
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (rc <= 0 || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr) {
        snprintf(err, errsize, "node %zu: connect: %s", i,
                 rc == 0 ? "timed out" : strerror(soerr ? soerr : errno));
        return -1;
    }
    return 0;
}

int bench_floor_open(bench_floor **out, const char *const *urls, size_t n, char *err, size_t errsize)
{
    bench_floor *f = calloc(1, sizeof *f);
    *out = NULL;
    if (!f || n == 0 || n > BENCH_MAX_NODES) {
        snprintf(err, errsize, "bad node count %zu or out of memory", n);
        free(f);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        redisOptions o;
        char host[256];
        int port = 0;
        memset(&o, 0, sizeof o);
        if (strncmp(urls[i], "unix://", 7) == 0) {
            REDIS_OPTIONS_SET_UNIX(&o, urls[i] + 7);
        } else if (sscanf(urls[i], "redis://%255[^:/]:%d", host, &port) == 2 ||
                   sscanf(urls[i], "redis://[%255[^]]]:%d", host, &port) == 2) {
            REDIS_OPTIONS_SET_TCP(&o, host, port);
        } else {
            snprintf(err, errsize, "node %zu: cannot parse '%s' (want redis://host:port or unix:///path)", i, urls[i]);
            goto fail;
        }
        o.options |= REDIS_OPT_NONBLOCK;
        redisContext *c = redisConnectWithOptions(&o);
        if (!c || c->err) {
            snprintf(err, errsize, "node %zu: connect: %s", i, c ? c->errstr : "out of memory");
            redisFree(c);
            goto fail;
        }
        f->ctx[f->n++] = c;
        if (wait_connected(c, err, errsize, i) != 0)
            goto fail;
        if (strncmp(urls[i], "unix://", 7) != 0) {
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
    }
    for (size_t i = 0; i < n; i++)
        redisAppendCommand(f->ctx[i], "SCRIPT LOAD %s", release_script);
    if (round_all(f, err, errsize) != 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        if (f->rep[i]->type != REDIS_REPLY_STRING || f->rep[i]->len != 40) {
            snprintf(err, errsize, "node %zu: SCRIPT LOAD gave an unexpected reply", i);
            goto fail;
        }
        memcpy(f->sha, f->rep[i]->str, 40);
    }
    free_replies(f);
    *out = f;
    return 0;
fail:
    bench_floor_close(f);
    return -1;
}

void bench_floor_close(bench_floor *f)
{
    if (!f)
        return;
    free_replies(f);
    for (size_t i = 0; i < f->n; i++)
        redisFree(f->ctx[i]);
    free(f);
}

/* One cycle, waiting for `need` replies per round. Only the replies that
 * counted are checked here; late ones are checked as they arrive. */
static int floor_cycle(bench_floor *f, size_t need, const char *key, size_t key_len, const char *value,
                       uint32_t ttl_ms, int64_t *mid_ns, char *err, size_t errsize)
{
    /* The format strings are the library's, so both sides pay hiredis's
     * command formatting alike. */
    for (size_t i = 0; i < f->n; i++)
        redisAppendCommand(f->ctx[i], "SET %b %s NX PX %u", key, key_len, value, ttl_ms);
    int rc = round_wait(f, need, err, errsize);
    *mid_ns = bench_now_ns();
    for (size_t i = 0; rc == 0 && i < f->n; i++) {
        redisReply *r = f->rep[i];
        if (r && (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0)) {
            snprintf(err, errsize, "node %zu: SET did not answer OK (type %d%s%.100s)", i, r->type,
                     r->type == REDIS_REPLY_ERROR ? ": " : "", r->type == REDIS_REPLY_ERROR ? r->str : "");
            rc = -1;
        }
    }
    free_replies(f);
    if (rc != 0)
        return rc;

    for (size_t i = 0; i < f->n; i++)
        redisAppendCommand(f->ctx[i], "EVALSHA %s 1 %b %s", f->sha, key, key_len, value);
    rc = round_wait(f, need, err, errsize);
    for (size_t i = 0; rc == 0 && i < f->n; i++) {
        redisReply *r = f->rep[i];
        if (r && (r->type != REDIS_REPLY_INTEGER || r->integer != 1)) {
            snprintf(err, errsize, "node %zu: release script did not return 1 (type %d)", i, r->type);
            rc = -1;
        }
    }
    free_replies(f);
    if (rc == 0 && f->late_errors) {
        snprintf(err, errsize, "%ld late replies were not OK / 1", f->late_errors);
        rc = -1;
    }
    return rc;
}

int bench_floor_cycle(bench_floor *f, const char *key, size_t key_len, const char *value,
                      uint32_t ttl_ms, int64_t *mid_ns, char *err, size_t errsize)
{
    return floor_cycle(f, f->n, key, key_len, value, ttl_ms, mid_ns, err, errsize);
}

int bench_floor_quorum_cycle(bench_floor *f, const char *key, size_t key_len, const char *value,
                             uint32_t ttl_ms, int64_t *mid_ns, char *err, size_t errsize)
{
    return floor_cycle(f, f->n / 2 + 1, key, key_len, value, ttl_ms, mid_ns, err, errsize);
}
