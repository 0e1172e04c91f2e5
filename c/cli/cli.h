/* cli.h: declarations shared by the sources of the redlock command-line tool
 * (option and config handling, durations, node URLs, hiredis inspection). */
#ifndef REDLOCK_CLI_H
#define REDLOCK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis.h>

#include "internal.h"  /* the library's URL parser: the CLI links it statically */

/* Exit codes of the tool; documented in docs/cli.md. */
#define CLI_EXIT_USAGE     2    /* bad option, argument, URL or config file */
#define CLI_EXIT_SOFTWARE  70   /* internal failure: out of memory, fork, threads */
#define CLI_EXIT_UNAVAIL   69   /* nodes unreachable, auth or server errors (run, status) */
#define CLI_EXIT_CONFLICT  75   /* run: lock held elsewhere or --wait elapsed (-E changes it) */
#define CLI_EXIT_LOST      76   /* run: lock lost while the command ran (--lost-exit-code) */
#define CLI_EXIT_NOEXEC    126  /* run: command found but not executable */
#define CLI_EXIT_NOTFOUND  127  /* run: command not found */

#define CLI_WAIT_FOREVER   (-1)

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
    /* what the command line said, before merging */
    char *cli_nodes, *cli_ttl, *cli_wait, *cli_prefix, *cli_node_timeout;
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

/* The URL with any password replaced by "***". */

/* A node URL parsed for a direct hiredis connection (status, doctor). The
 * grammar is the library's: redis://[user[:password]@]host[:port][/db],
 * unix://[[user]:password@]/path[?db=N]. */
/* Node URLs are parsed by the library's own parser (c/src/url.c): one
 * grammar, one masking of passwords. status and doctor connect with
 * blocking hiredis contexts, without TLS. */
int cli_endpoint_parse(const char *url, rl_endpoint *ep, char *err, size_t errsize);
/* Connects, authenticates and selects the db, each step bounded by
 * timeout_ms. NULL with a reason in err on failure. */
redisContext *cli_connect(const rl_endpoint *ep, int64_t timeout_ms, char *err, size_t errsize);
/* A command's reply, or NULL with the reason (I/O error) in err. */
redisReply *cli_command(redisContext *ctx, char *err, size_t errsize, const char *fmt, ...);

/* JSON helpers: writes s as a JSON string literal. */
void cli_json_string(FILE *f, const char *s);
void cli_json_bytes(FILE *f, const char *s, size_t len);

/* Subcommands. argv[0] is the subcommand's name. */
int cli_run(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_doctor(int argc, char **argv);

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
    OPT_MAX_TTL
};

/* Handles an option every subcommand accepts: 1 if it was one, 0 if not,
 * -1 if its value was bad (already reported as a usage error). */
int cli_common_option(cli_common *c, const char *cmd, int opt, const char *arg);

#endif /* REDLOCK_CLI_H */
