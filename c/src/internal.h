/* internal.h: types and helpers shared by the library's sources; nothing here
 * is part of the ABI. */
#ifndef REDLOCK_INTERNAL_H
#define REDLOCK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "redlock.h"

#define RL_VALUE_BYTES 20              /* random bytes per acquisition */
#define RL_VALUE_HEX (RL_VALUE_BYTES * 2)
#define RL_MSG_MAX 2048                /* detail message size */
#define RL_NODE_MSG_MAX 160            /* per-node part of a detail message */
#define RL_POOL_IDLE_MAX 32            /* idle connections kept per node */
#define RL_BACKOFF_MIN_MS 25
#define RL_BACKOFF_MAX_MS 1000

/* ---- util.c ---- */
int64_t rl_now_us(void);                          /* CLOCK_MONOTONIC */
int rl_random_bytes(void *buf, size_t len);       /* getrandom(2); 0 or -1 */
int rl_random_hex(char *out, size_t nbytes);      /* out gets 2*nbytes hex + NUL */
uint32_t rl_random_below(uint32_t bound);         /* uniform in [0, bound) */
void rl_sha1_hex(const char *s, char out[41]);
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
} rl_endpoint;

/* Parses url into ep. On failure returns REDLOCK_EINVAL or REDLOCK_ENOTSUP
 * and writes a reason into err. */
int rl_endpoint_parse(rl_endpoint *ep, const char *url, char *err, size_t errsize);
void rl_endpoint_clear(rl_endpoint *ep);
/* url for a message, with any userinfo (which may hold a password) hidden;
 * works on URLs that don't parse. */
void rl_mask_url(char *out, size_t size, const char *url);
/* 1 if a and b are the same server after resolving names. */
int rl_endpoint_same_server(const rl_endpoint *a, const rl_endpoint *b);

/* ---- engine.c: connections and one multiplexed round over all nodes ---- */
typedef struct rl_conn rl_conn;

typedef struct rl_node {
    rl_endpoint ep;
    pthread_mutex_t mu;                 /* guards the fields below */
    rl_conn *idle[RL_POOL_IDLE_MAX];
    int n_idle;
    _Atomic int64_t retry_after_us;     /* reconnect backoff; no mutex needed */
    _Atomic uint32_t backoff_ms;
    _Atomic int suspect;                /* timed out lately: not waited for
                                         * once a round is decided */
} rl_node;

/* What one node said in a round. */
typedef enum rl_outcome {
    RL_PENDING = 0,
    RL_YES,          /* SET said OK / script returned 1 */
    RL_NO,           /* key held by someone else / script returned 0 */
    RL_ERR_SERVER,   /* error reply */
    RL_ERR_AUTH,     /* AUTH failed / NOAUTH / WRONGPASS */
    RL_ERR_IO,       /* connect failed, reset, EOF, protocol error */
    RL_ERR_TIMEOUT,  /* no reply before the node's deadline */
    RL_ERR_DOWN,     /* skipped: node in reconnect backoff */
    RL_ERR_TLS,      /* TLS handshake or certificate failure */
    RL_UNSENT        /* the round was decided before this node was needed */
} rl_outcome;

/* ---- redlock.c ---- */
/* Validates a caller's options (read up to their version); reason in err. */
int rl_check_options(const redlock_options *o, char *err, size_t errsize);

/* ---- decide.c: the decisions, pure functions of the outcomes ---- */
typedef struct rl_tally { int yes, no, auth, server, io, tls, unsent; } rl_tally;
rl_tally rl_tally_of(const rl_outcome *out, size_t n);
/* The code for "too many nodes failed to answer": the commonest cause. */
int rl_failure_code(const rl_tally *t);
/* 0 when held: a quorum said OK and the validity end is still ahead. */
int rl_decide_acquire(const rl_outcome *out, size_t n, int quorum, int64_t valid_until_us, int64_t now_us);
/* 0 when a quorum confirmed before the old validity ended. */
int rl_decide_extend(const rl_outcome *out, size_t n, int quorum, int64_t decided_us, int64_t valid_until_us);
/* 0 when still ours on a quorum; REDLOCK_ELOST when certainly not. */
int rl_decide_release(const rl_outcome *out, size_t n, int quorum);

typedef enum rl_cmd { RL_CMD_SET, RL_CMD_EXTEND, RL_CMD_RELEASE, RL_CMD_LOAD_FUNCTIONS } rl_cmd;

typedef struct rl_round {
    rl_cmd cmd;
    const char *key;
    size_t key_len;
    const char *value;
    uint32_t ttl_ms;
    int64_t start_us;        /* taken before anything is sent */
    int64_t cap_us;          /* no node waits beyond this (absolute), 0 = none */
    int64_t decided_us;      /* out: when the outcome was known (stragglers may follow) */
    char *fmt[3];            /* the command, formatted once per round, per way of sending */
    size_t fmt_len[3];
    int quorum;              /* stop as soon as the result can't change */
    int no_wait;             /* send and return without waiting for replies */
    int via_fcall;           /* release/extend by FCALL (set by rl_round_run) */
    size_t n;
    unsigned char skip[REDLOCK_MAX_NODES]; /* don't contact these nodes */
    rl_conn **pinned;        /* per node, or NULL: connections that still owe
                              * this lock a reply; used first, refilled at the end */
    rl_outcome out[REDLOCK_MAX_NODES];
    int64_t rtt_us[REDLOCK_MAX_NODES];
    char msg[REDLOCK_MAX_NODES][RL_NODE_MSG_MAX];
} rl_round;

struct redlock_client {
    atomic_int refs;
    size_t n;
    int quorum;
    rl_node *nodes;
    redlock_options opts;    /* key_prefix points to prefix below; the tls_* strings
                              * are NULL (read once, into tls_ctx) except tls_server_name */
    char *prefix;
    size_t prefix_len;
    struct ssl_ctx_st *tls_ctx;  /* shared by the TLS connections; NULL if no node uses TLS */
    char *tls_server_name;   /* owned copy, or NULL */
};

/* Creates c->tls_ctx from c->opts when a node uses TLS (REDLOCK_ETLS with a
 * reason if a file cannot be loaded), and frees it. */
int rl_tls_client_init(redlock_client *c, const redlock_options *opts, char *err, size_t errsize);
void rl_tls_client_free(redlock_client *c);

void rl_node_init(rl_node *node);
void rl_node_destroy(rl_node *node);
/* Reads replies the node's pooled connections still owe, until deadline_us. */
void rl_node_settle(rl_node *node, int64_t deadline_us);
/* Runs one round over every node of client; fills r->out/msg/rtt. */
void rl_round_run(redlock_client *client, rl_round *r);
/* Gives pinned connections back to their nodes' pools; no network I/O. */
void rl_unpin(redlock_client *client, rl_conn **pinned);

extern char rl_sha_release[41];
extern char rl_sha_extend[41];
extern const char rl_script_release[];
extern const char rl_script_extend[];
extern const char rl_function_library[];
void rl_scripts_init(void);

#endif
