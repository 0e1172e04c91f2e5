/* SPDX-License-Identifier: BSD-3-Clause */
/* cli.h: declarations shared by the sources of the redlock command-line tool
 * (option and config handling, durations, node URLs, hiredis inspection). */
#ifndef REDLOCK_CLI_H
#define REDLOCK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

#include "rlcommon.h"  /* URL parsing, TLS rules, hardened replies: c/common */

/* Exit codes of the tool; documented in docs/cli.md. */
#define CLI_EXIT_USAGE     2    /* bad option, argument, URL or config file */
#define CLI_EXIT_SOFTWARE  70   /* internal failure: out of memory, fork, threads */
#define CLI_EXIT_UNAVAIL   69   /* nodes unreachable, auth or server errors (run, status) */
#define CLI_EXIT_CONFLICT  75   /* run: lock held elsewhere or --wait elapsed (-E changes it) */
#define CLI_EXIT_LOST      76   /* run: lock lost while the command ran (--lost-exit-code) */
#define CLI_EXIT_FENCED    77   /* fence: the store refused the write, a later holder's token is there */
#define CLI_EXIT_NOEXEC    126  /* run: command found but not executable */
#define CLI_EXIT_NOTFOUND  127  /* run: command not found */

#define CLI_WAIT_FOREVER   (-1)
/* --ttl when none is given (run, elect, doctor's checks): the lease a crashed redlock
 * leaves behind. docs/defaults.md says it; tools/docs-check compares. */
#define CLI_DEFAULT_TTL_MS 30000

/* TLS settings for rediss:// nodes: the library's tls_* options
 * (docs/security.md). Strings owned; NULL = unset. */
typedef struct cli_tls {
    char *ca_file, *ca_dir, *cert_file, *key_file, *server_name;
    int insecure;             /* accept any server certificate */
} cli_tls;

/* Settings every subcommand shares, after merging the command line, the
 * environment and the config file (in that order of precedence). */
typedef struct cli_common {
    char **urls;              /* node URLs (owned) */
    size_t n_urls;
    char *key_prefix;         /* NULL = none */
    int64_t ttl_ms;           /* -1 = not given */
    int64_t wait_ms;          /* -2 = not given, CLI_WAIT_FOREVER, or >= 0 */
    int64_t node_timeout_ms;  /* -1 = not given */
    const char *config_path;  /* --config, else $REDLOCK_CONFIG; borrowed */
    cli_tls tls;              /* merged TLS settings */
    struct ssl_ctx_st *tls_ctx; /* status and doctor: built by cli_tls_prepare */
    /* what the command line said, before merging */
    char *cli_nodes, *cli_ttl, *cli_wait, *cli_prefix, *cli_node_timeout;
    cli_tls tls_cli;          /* the --tls-* options */
} cli_common;

void cli_common_init(cli_common *c);
void cli_common_free(cli_common *c);
/* Merges command line, $REDLOCK_NODES, $REDLOCK_CONFIG / --config. Prints a
 * one-line error and returns CLI_EXIT_USAGE on a problem, 0 otherwise. */
int cli_common_resolve(cli_common *c, const char *cmd, int need_nodes);
/* Appends a command-line --nodes value (may repeat). */
int cli_common_add_nodes(cli_common *c, const char *arg);

/* Errors: "redlock[ cmd]: message" on stderr. */
void cli_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: prints it with a hint to --help and returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "250ms", "30s", "1.5m", "1h", "2d"; a bare number is seconds. With
 * allow_forever, "forever"/"inf"/"infinity" give CLI_WAIT_FOREVER.
 * Returns 0, or -1 when s is not a duration. */
int cli_parse_duration(const char *s, int64_t *out_ms, int allow_forever);
/* Human form of a duration in ms: "250ms", "28.1s", "5m3s", "2h0m". */
const char *cli_fmt_duration(int64_t ms, char *buf, size_t size);
/* "TERM", "SIGTERM", "15" -> 15; -1 if unknown. */
int cli_parse_signal(const char *s);
const char *cli_signal_name(int sig);
/* Decimal integer in [min, max]; 0 or -1. */
int cli_parse_long(const char *s, long min, long max, long *out);

int64_t cli_now_ms(void);     /* CLOCK_MONOTONIC */
int64_t cli_now_us(void);
/* Wall clock "HH:MM:SS.mmm" for log lines. */
const char *cli_timestamp(char *buf, size_t size);

/* Node URLs are parsed by the library's own parser (c/common/url.c): one
 * grammar (redis://, rediss://, unix://), one masking of passwords. status
 * and doctor connect with blocking hiredis contexts. */
int cli_endpoint_parse(const char *url, rl_endpoint *ep, char *err, size_t errsize);

/* nodes.c. A node URL for a message: only its userinfo (which may hold a
 * password) is hidden, and whatever does not have the shape of a URL or of
 * host[:port][/db]; "10.0.0.1:6379" is shown as it is. */
void cli_show_url(char *out, size_t size, const char *url);
/* Parses every node URL before anything is contacted; with distinct, also
 * refuses two URLs that reach the same address. A usage error naming the
 * node (numbered from 0, as the library does) and CLI_EXIT_USAGE, or 0. */
int cli_nodes_check(const cli_common *c, const char *cmd, int distinct);
/* The library's options for the tool's settings: key prefix, node timeout
 * and TLS (strings borrowed from c). The one place that maps them, for
 * run's client and for status's and doctor's own connections. */
void cli_lib_options(const cli_common *c, redlock_options *opts);
/* Connects (over TLS for rediss://, verified as the library verifies),
 * authenticates and selects the db, each step bounded by timeout_ms. NULL
 * with a reason in err on failure. The context's reader is hardened with
 * guard (RL_REPLY_GUARD_INSPECT; it must outlive the context): replies are
 * flat, bounded, and freed with rl_reply_free. */
redisContext *cli_connect(const cli_common *c, const rl_endpoint *ep, int64_t timeout_ms, rl_reply_guard *guard,
                          char *err, size_t errsize, int *fail);

/* What kind of failure a connection or a read met (cli_connect's *fail,
 * cli_read_reply's result), so that callers tell them apart by code, not by
 * the words of a message. */
enum {
    CLI_FAIL_CONNECT = 1,      /* refused, unresolvable, timed out, reset: the node cannot be reached */
    CLI_FAIL_PROTOCOL,         /* a reply no Redis server sends, refused by the hardened reader */
    CLI_FAIL_AUTH,             /* the node refused AUTH */
    CLI_FAIL_TLS,              /* TLS: chain not verified, or another handshake failure */
    CLI_FAIL_TLS_NAME,         /* TLS: the certificate's name or IP is not the one expected */
    CLI_FAIL_TLS_EXPIRED,      /* TLS: the server's certificate has expired */
    CLI_FAIL_TLS_CLIENT_CERT,  /* TLS: the server requires a client certificate */
    CLI_FAIL_NOT_TLS           /* TLS: the port does not seem to speak TLS */
};

/* tls.c. For status and doctor, after cli_common_resolve: builds c->tls_ctx
 * from the TLS settings of opts (cli_lib_options) when a node is rediss://. Prints the error and returns
 * CLI_EXIT_USAGE when a file cannot be loaded, 0 otherwise. */
int cli_tls_prepare(cli_common *c, const redlock_options *opts, const char *cmd);
/* Starts TLS on a connected blocking context: the handshake, the chain
 * checked by c->tls_ctx and the certificate's name or IP against
 * --tls-server-name or host. 0, or -1 with the reason in err. */
int cli_tls_start(const cli_common *c, redisContext *ctx, const char *host, char *err, size_t errsize, int *fail);
void cli_tls_free(cli_tls *t);
/* Why a command failed on ctx (redisCommand returned NULL): a TLS reason
 * (an alert from the server), "timed out", or hiredis's text; returns its
 * kind (CLI_FAIL_TLS, CLI_FAIL_TLS_CLIENT_CERT or CLI_FAIL_CONNECT). */
int cli_io_error(const redisContext *ctx, char *err, size_t errsize);
void cli_tls_ctx_free(struct ssl_ctx_st *ctx);
/* A command's reply, or NULL with the reason (I/O error, or a reply the
 * hardened reader refused) in err. Free it with rl_reply_free. */
redisReply *cli_command(redisContext *ctx, char *err, size_t errsize, const char *fmt, ...);
/* The next reply of a pipeline on a context from cli_connect: 0, or the
 * kind of failure (CLI_FAIL_*, > 0) with the reason in err. */
int cli_read_reply(redisContext *ctx, redisReply **out, char *err, size_t errsize);

/* JSON helpers: writes s as a JSON string literal. */
void cli_json_string(FILE *f, const char *s);
void cli_json_bytes(FILE *f, const char *s, size_t len);

/* Subcommands. argv[0] is the subcommand's name. */
int cli_run(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_completion(int argc, char **argv);
int cli_elect(int argc, char **argv);   /* elect.c */
int cli_fence(int argc, char **argv);   /* fence.c */
int cli_gc(int argc, char **argv);      /* gc.c */

/* Common long options shared by subcommands (values above 255). */
enum {
    OPT_NODES = 256,
    OPT_CONFIG,
    OPT_KEY_PREFIX,
    OPT_NODE_TIMEOUT,
    OPT_TTL,
    OPT_JSON,
    OPT_TIMEOUT,
    OPT_LOST_SIGNAL,
    OPT_KILL_AFTER,
    OPT_LOST_EXIT,
    OPT_FENCING,
    OPT_CLOCK_PROBE,
    OPT_MAX_TTL,
    OPT_TLS_CA_FILE,
    OPT_TLS_CA_DIR,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_TLS_SERVER_NAME,
    OPT_TLS_INSECURE,
    OPT_FLOCK_SHARED,
    OPT_NO_WAKE,
    OPT_WAKE,
    OPT_FAIR,
    OPT_SEM_LIMIT,    /* run --limit N: a permit of a semaphore */
    OPT_ALSO          /* run --also NAME: more resources, held with RESOURCE all or none */
};

/* The node options every subcommand accepts, for its getopt_long table. */
#define CLI_NODE_LONGOPTS                                                    \
    { "nodes", required_argument, NULL, OPT_NODES },                         \
    { "config", required_argument, NULL, OPT_CONFIG },                       \
    { "key-prefix", required_argument, NULL, OPT_KEY_PREFIX }

/* The TLS options every subcommand accepts, for its getopt_long table. */
#define CLI_TLS_LONGOPTS                                                     \
    { "tls-ca-file", required_argument, NULL, OPT_TLS_CA_FILE },             \
    { "tls-ca-dir", required_argument, NULL, OPT_TLS_CA_DIR },               \
    { "tls-cert", required_argument, NULL, OPT_TLS_CERT },                   \
    { "tls-key", required_argument, NULL, OPT_TLS_KEY },                     \
    { "tls-server-name", required_argument, NULL, OPT_TLS_SERVER_NAME },     \
    { "tls-insecure", no_argument, NULL, OPT_TLS_INSECURE }

/* Their lines in each subcommand's --help. */
#define CLI_TLS_HELP                                                                            \
    "      --tls-ca-file FILE      CAs (PEM) that rediss:// servers' certificates must chain to\n" \
    "                              (default: the system's CAs)\n"                                  \
    "      --tls-ca-dir DIR        directory of hashed CA certificates (openssl rehash)\n"         \
    "      --tls-cert FILE         client certificate (PEM) for mutual TLS; with --tls-key\n"      \
    "      --tls-key FILE          its private key (PEM, not encrypted)\n"                         \
    "      --tls-server-name NAME  name or IP the certificates must carry (default: URL host)\n"  \
    "      --tls-insecure          accept ANY server certificate (tests only)\n"

/* Handles an option every subcommand accepts: 1 if it was one, 0 if not,
 * -1 if its value was bad (already reported as a usage error). */
int cli_common_option(cli_common *c, const char *cmd, int opt, const char *arg);

/* The options of status and doctor, which only inspect the nodes: --help,
 * --json, --timeout and those of cli_common_option; extra, if set, is asked
 * first and returns -1 for an option that is not its own, else 0 or the
 * exit code of a usage error. cli_inspect_options returns 0 with optind at
 * the first operand, CLI_HELP_SHOWN after --help, or the exit code of a
 * usage error (reported). */
#define CLI_HELP_SHOWN (-1)
struct option;
typedef struct cli_inspect_opts {
    int json;
    int64_t timeout_ms;        /* in: the default */
    int (*extra)(int opt, const char *arg, void *userdata);
    void *userdata;
} cli_inspect_opts;
int cli_inspect_options(cli_common *c, const char *cmd, int argc, char **argv, const struct option *longopts,
                        void (*help)(void), cli_inspect_opts *io);

#endif /* REDLOCK_CLI_H */
