/* SPDX-License-Identifier: BSD-3-Clause */
/* fence.c: 'redlock fence': one write to a Redis/Valkey store through a
 * resource's fence (docs/fencing.md, "Protecting your store"), so that a
 * shell script run by 'redlock run --fencing' writes what a later holder
 * cannot be overwritten by. The library's one script (redlock_fence_script)
 * and key name (redlock_fence_key), run here over the tool's own connection
 * (cli_connect: TLS, AUTH, db as for status). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "redlock.h"

#define CMD "fence"
#define DEFAULT_TIMEOUT_MS 2000

enum { OPT_STORE = 1000, OPT_TOKEN, OPT_PX, OPT_RETENTION };

static void help(void)
{
    fputs("usage: redlock fence [options] RESOURCE OP [KEY [ARG...]]\n"
          "\n"
          "Writes to a Redis/Valkey store through RESOURCE's fence: the write is applied only\n"
          "while the token is at least the highest token a write to RESOURCE has carried, and\n"
          "raises the fence to it, atomically on the store (docs/fencing.md). Run it from the\n"
          "COMMAND of 'redlock run --fencing', which gives COMMAND its token.\n"
          "\n"
          "OP is one of:\n"
          "  set KEY VALUE                 SET (with --px, its expiry)\n"
          "  del KEY                       DEL\n"
          "  hset KEY FIELD VALUE [...]    HSET\n"
          "  rpush KEY VALUE [...]         RPUSH\n"
          "  incrby KEY N                  INCRBY\n"
          "  advance                       raise the fence only, before reading what to write\n"
          "The store's reply is printed.\n"
          "\n"
          "options:\n"
          "      --store URL             the store (redis://, rediss://, unix://; else $REDLOCK_STORE)\n"
          "      --token N               the fencing token (else $REDLOCK_FENCING_TOKEN)\n"
          "      --px DURATION           with set: the key's expiry\n"
          "      --retention DURATION    how long the fence outlives this write (default 7d)\n"
          "      --timeout DURATION      connect and reply deadline (default 2s)\n"
          "      --config FILE           config file, for its TLS settings (else $REDLOCK_CONFIG)\n"
          CLI_TLS_HELP
          "  -h, --help                  this help\n"
          "\n"
          "exit codes: 0 written; 77 refused: a later holder's token is on the fence, nothing\n"
          "written; 69 the store could not be reached, refused the login, or answered an error;\n"
          "2 usage error.\n",
          stdout);
}

typedef struct fence_args {
    const char *store, *token;
    int64_t px_ms, retention_ms;
    const char *cmd;
} fence_args;

static int extra(int opt, const char *arg, void *userdata)
{
    fence_args *a = userdata;
    switch (opt) {
    case OPT_STORE:
        a->store = arg;
        return 0;
    case OPT_TOKEN:
        a->token = arg;
        return 0;
    case OPT_PX:
        if (cli_parse_duration(arg, &a->px_ms, 0) || a->px_ms <= 0)
            return cli_usage(CMD, "--px: '%s' is not a positive duration (e.g. 30s)", arg);
        return 0;
    case OPT_RETENTION:
        if (cli_parse_duration(arg, &a->retention_ms, 0) || a->retention_ms <= 0)
            return cli_usage(CMD, "--retention: '%s' is not a positive duration (e.g. 7d)", arg);
        return 0;
    default:
        return -1;
    }
}

/* The token as the script wants it: decimal, 1 to 2^64 - 1. */
static int parse_token(const char *s, char *out, size_t size)
{
    if (!s || !*s)
        return cli_usage(CMD, "no token: give --token N or set REDLOCK_FENCING_TOKEN (redlock run --fencing "
                              "sets it for COMMAND)");
    errno = 0;
    char *end;
    uintmax_t v = strtoumax(s, &end, 10);
    if (*s < '1' || *s > '9' || *end || errno || v > UINT64_MAX)
        return cli_usage(CMD, "token '%.40s' is not an integer from 1 to 2^64-1", s);
    snprintf(out, size, "%" PRIu64, (uint64_t)v);
    return 0;
}

/* How many operands each operation takes after RESOURCE OP: its minimum,
 * and whether more may follow in pairs (hset) or singly (rpush). */
static int check_operands(const char *op, int n)
{
    static const struct { const char *name, *takes; int min, max, pairs; } ops[] = {
        { "set", "KEY VALUE", 2, 2, 0 },
        { "del", "KEY", 1, 1, 0 },
        { "hset", "KEY FIELD VALUE [FIELD VALUE...]", 3, 1 << 20, 1 },
        { "rpush", "KEY VALUE [VALUE...]", 2, 1 << 20, 0 },
        { "incrby", "KEY N", 2, 2, 0 },
        { "advance", "no operands", 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(op, ops[i].name))
            continue;
        if (n < ops[i].min || n > ops[i].max || (ops[i].pairs && (n - 1) % 2))
            return cli_usage(CMD, "'%s' takes %s", op, ops[i].takes);
        return 0;
    }
    return cli_usage(CMD, "unknown operation '%s' (set, del, hset, rpush, incrby, advance)", op);
}

static void print_reply(const redisReply *r)
{
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        printf("%lld\n", r->integer);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
        printf("%.*s\n", (int)r->len, r->str);
        break;
    default:
        break;
    }
}

int cli_fence(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "store", required_argument, NULL, OPT_STORE },
        { "token", required_argument, NULL, OPT_TOKEN },
        { "px", required_argument, NULL, OPT_PX },
        { "retention", required_argument, NULL, OPT_RETENTION },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "config", required_argument, NULL, OPT_CONFIG },
        CLI_TLS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    cli_common common;
    cli_common_init(&common);
    fence_args a = { NULL, NULL, 0, REDLOCK_FENCE_RETENTION_MS, NULL };
    cli_inspect_opts io = { 0, DEFAULT_TIMEOUT_MS, extra, &a };
    int rc = cli_inspect_options(&common, CMD, argc, argv, longopts, help, &io);
    char token[24], fkey[REDLOCK_MAX_RESOURCE_LEN + 16];
    const char *resource = optind < argc ? argv[optind] : NULL, *op = optind + 1 < argc ? argv[optind + 1] : NULL;
    if (!rc && !a.store)
        a.store = getenv("REDLOCK_STORE");
    if (!rc && (!a.store || !*a.store))
        rc = cli_usage(CMD, "no store: give --store URL or set REDLOCK_STORE");
    if (!rc && (!resource || !op))
        rc = cli_usage(CMD, "missing %s", resource ? "OP" : "RESOURCE and OP");
    if (!rc && redlock_fence_key(fkey, sizeof fkey, resource) < 0)
        rc = cli_usage(CMD, "RESOURCE must be 1 to %d bytes, with no '}' unless in a hash tag {...}",
                       REDLOCK_MAX_RESOURCE_LEN);
    if (!rc)
        rc = check_operands(op, argc - optind - 2);
    if (!rc && a.px_ms && strcmp(op, "set"))
        rc = cli_usage(CMD, "--px goes with set only");
    if (!rc)
        rc = parse_token(a.token ? a.token : getenv("REDLOCK_FENCING_TOKEN"), token, sizeof token);
    if (!rc && cli_common_add_nodes(&common, a.store))
        rc = CLI_EXIT_SOFTWARE;
    if (!rc)
        rc = cli_common_resolve(&common, CMD, 1);
    if (!rc && common.n_urls != 1)
        rc = cli_usage(CMD, "--store takes one URL");
    redlock_options lib;
    cli_lib_options(&common, &lib);
    if (!rc)
        rc = cli_tls_prepare(&common, &lib, CMD);
    rl_endpoint ep;
    memset(&ep, 0, sizeof ep);
    char err[512];
    if (!rc && cli_endpoint_parse(common.urls[0], &ep, err, sizeof err))
        rc = cli_usage(CMD, "--store: %s", err);
    if (!rc && ep.cluster)
        rc = cli_usage(CMD, "--store: a cluster URL is not supported here; give the master that owns the key");
    if (rc) {
        rl_endpoint_clear(&ep);
        cli_common_free(&common);
        return rc == CLI_HELP_SHOWN ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);

    /* argv for EVALSHA/EVAL: the SHA (or script), numkeys, keys, token,
     * retention, op, the operands, and --px's ms for set. */
    int nops = argc - optind - 2, nkeys = strcmp(op, "advance") ? 2 : 1;
    size_t n = 0, max = (size_t)nops + 8;
    const char **av = calloc(max, sizeof *av);
    size_t *al = calloc(max, sizeof *al);
    char retention[24], px[24], nk[4];
    snprintf(retention, sizeof retention, "%lld", (long long)a.retention_ms);
    snprintf(px, sizeof px, "%lld", (long long)a.px_ms);
    snprintf(nk, sizeof nk, "%d", nkeys);
    int exit_code = CLI_EXIT_UNAVAIL;
    rl_reply_guard guard = RL_REPLY_GUARD_INSPECT;
    int fail = 0;
    redisContext *ctx = av && al ? cli_connect(&common, &ep, io.timeout_ms, &guard, err, sizeof err, &fail) : NULL;
    if (!av || !al) {
        cli_err(CMD, "out of memory");
        exit_code = CLI_EXIT_SOFTWARE;
    } else if (!ctx) {
        cli_err(CMD, "the store %s: %s", ep.display ? ep.display : "?", err);
    } else {
        av[n++] = "EVALSHA";
        av[n++] = redlock_fence_script_sha1();
        av[n++] = nk;
        av[n++] = fkey;
        if (nkeys == 2)
            av[n++] = argv[optind + 2];
        av[n++] = token;
        av[n++] = retention;
        av[n++] = op;
        for (int k = nkeys == 2 ? 1 : 0; k < nops; k++)
            av[n++] = argv[optind + 2 + k];
        if (a.px_ms)
            av[n++] = px;
        for (size_t k = 0; k < n; k++)
            al[k] = strlen(av[k]);
        uint64_t t, f;
        redisReply *r = redisCommandArgv(ctx, (int)n, av, al);
        if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
            rl_reply_free(r);
            av[0] = "EVAL";
            av[1] = redlock_fence_script();
            al[0] = 4;
            al[1] = strlen(av[1]);
            r = redisCommandArgv(ctx, (int)n, av, al);
        }
        if (!r) {
            cli_io_error(ctx, err, sizeof err);
            cli_err(CMD, "the store %s: %s", ep.display ? ep.display : "?", err);
        } else if (r->type == REDIS_REPLY_ERROR && redlock_fence_refusal(r->str, r->len, &t, &f)) {
            cli_err(CMD, "refused (%s): token %" PRIu64 " is older than %" PRIu64 ", the fence of '%s': "
                    "a later holder has written", redlock_error_name(REDLOCK_EFENCED), t, f, resource);
            exit_code = CLI_EXIT_FENCED;
        } else if (r->type == REDIS_REPLY_ERROR) {
            cli_err(CMD, "the store %s answered: %.400s", ep.display ? ep.display : "?", r->str);
        } else {
            print_reply(r);
            exit_code = 0;
        }
        rl_reply_free(r);
        redisFree(ctx);
    }
    free(av);
    free(al);
    rl_endpoint_clear(&ep);
    cli_common_free(&common);
    return exit_code;
}
