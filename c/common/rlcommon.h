/* SPDX-License-Identifier: BSD-3-Clause */
/* rlcommon.h: the private library that libredlock and the redlock command
 * share: node URLs, the TLS rules, a reply reader that a hostile node cannot
 * turn against its client, and message formatting. Not installed, not part
 * of the ABI; nothing here includes the library's internal.h. */
#ifndef REDLOCK_COMMON_H
#define REDLOCK_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redlock.h"

struct ssl_ctx_st;
struct ssl_st;

/* ---- fmt.c ---- */
void rl_fmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rl_append(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- url.c ---- */
typedef struct rl_endpoint {
    char *host;        /* NULL for unix sockets */
    int port;
    char *path;        /* unix socket path, or NULL */
    char *user;        /* NULL if none */
    char *password;    /* NULL if none; never printed */
    int db;
    int tls;           /* rediss:// */
    char *display;     /* URL with the password masked, for messages */
    /* redis-cluster:// and rediss-cluster://: the node is a Redis or Valkey
     * Cluster named by its seeds (host/port above is the first; the URL's
     * seed= parameters follow in seed_hosts/seed_ports). */
    int cluster;
    size_t nseeds;     /* the extra seeds */
    char **seed_hosts;
    int *seed_ports;
} rl_endpoint;

/* Parses url into ep. On failure returns REDLOCK_EINVAL or REDLOCK_ENOTSUP
 * and writes a reason into err. */
int rl_endpoint_parse(rl_endpoint *ep, const char *url, char *err, size_t errsize);
void rl_endpoint_clear(rl_endpoint *ep);
/* url for a message, with any userinfo (which may hold a password) hidden;
 * works on URLs that don't parse, however malformed: only the scheme and a
 * part with the shape of host[:port][/db] (or a unix path) are shown, the
 * rest is "***", and a string with no scheme is not shown at all. */
void rl_mask_url(char *out, size_t size, const char *url);
/* 1 if a and b are the same server after resolving names. */
int rl_endpoint_same_server(const rl_endpoint *a, const rl_endpoint *b);

/* ---- tls.c ---- */
/* An SSL_CTX with the library's TLS rules (TLS 1.2+, the CA file/dir or the
 * system's CAs, an optional client certificate, peer verification unless
 * insecure): 0, or REDLOCK_ETLS with the reason in err. */
int rl_tls_ctx_new(struct ssl_ctx_st **out, const char *ca_file, const char *ca_dir, const char *cert_file,
                   const char *key_file, int insecure, char *err, size_t errsize);
/* The reason of the most recent OpenSSL error, or NULL if none is queued. */
const char *rl_tls_reason(unsigned long *code);
/* An SSL object for one connection to `name` (host name, or IP literal):
 * SNI, and unless insecure the certificate's name or IP is checked. NULL
 * with the reason in msg. */
struct ssl_st *rl_tls_ssl_new(struct ssl_ctx_st *ctx, const char *name, int insecure, char *msg, size_t msgsize);
/* What went wrong in a failed SSL call (sslerr from SSL_get_error), into
 * msg; `expected` is the name checked, for a mismatch. Clears the queue. */
void rl_tls_describe(struct ssl_st *ssl, int sslerr, const char *what, const char *expected, char *msg,
                     size_t msgsize);

/* ---- reply.c ----
 * hiredis builds and frees replies recursively with no depth limit, so a
 * node answering "*1\r\n" a few hundred thousand times overflows the stack;
 * and it buffers a bulk string of any announced length. Redlock needs only
 * flat replies: a status, an error, an integer, a bulk string or nil, or an
 * array of those. A hardened reader builds exactly those, iteratively, and
 * refuses the rest as a protocol error. */
typedef struct rl_reply_guard {
    size_t max_string;     /* longest status, error or bulk string */
    size_t max_elements;   /* longest array */
    size_t max_buffered;   /* unparsed bytes the reader may hold */
    const char *why;       /* set when something was refused */
} rl_reply_guard;

/* Limits for the lock commands (an array as long as the auto-extend
 * thread's batch of RL_BATCH_MAX keys, internal.h), and for the tool's
 * INFO-sized replies. */
#define RL_REPLY_GUARD_LOCK { 4096, 256, 64 * 1024, NULL }
#define RL_REPLY_GUARD_INSPECT { 1024 * 1024, 4096, 4 * 1024 * 1024, NULL }

/* Makes ctx's reader build replies through the guard (which must outlive
 * ctx). Call before the first reply is read. Replies it makes are freed
 * with rl_reply_free (freeReplyObject also works on them). */
void rl_reply_harden(redisContext *ctx, rl_reply_guard *g);
void rl_reply_free(void *reply);
/* After a read: 0, or -1 if the reader holds more unparsed bytes than the
 * guard allows (g->why then says so). */
int rl_reply_check_buffer(const redisContext *ctx, rl_reply_guard *g);
/* The reason for the context's last error: the guard's refusal if it made
 * one, else hiredis's errstr. */
const char *rl_reply_error(const redisContext *ctx, const rl_reply_guard *g);
/* A blocking read of the next reply on a hardened blocking context (for the
 * command-line tool): REDIS_OK with *out set, or REDIS_ERR with the reason in
 * rl_reply_error. */
int rl_reply_read(redisContext *ctx, rl_reply_guard *g, redisReply **out);

#endif
