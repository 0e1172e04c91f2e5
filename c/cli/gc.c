/* SPDX-License-Identifier: BSD-3-Clause */
/* gc.c: 'redlock gc': removes the fencing counters (K:fencing, no TTL by
 * design: docs/fencing.md, "The counters' lifetime") of resources unused
 * for longer than a bound, on each node (gc_script says how it knows). The
 * bound must exceed the store fences' retention, so that no fence that
 * remembers a token of the old counter is still there when the counter
 * starts again at 1. */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keys.h"
#include "redlock.h"

#define CMD "gc"
#define DEFAULT_TIMEOUT_MS 2000
#define DEFAULT_UNUSED_MS (30LL * 86400 * 1000)
#define SCAN_COUNT "500"
#define RL_KEY_FENCING_LEN_STR "8"   /* strlen(RL_KEY_FENCING) */

enum { OPT_UNUSED_FOR = 1000, OPT_DRY_RUN, OPT_FORCE };

/* One SCAN step and its counters, atomically on a standalone node (the
 * keys are found, not declared: not for a cluster). ARGV: the cursor, the
 * MATCH pattern, the COUNT, the bound in ms, "1" for a dry run. A counter
 * K:fencing is in use while K exists (a lock, a reader, a leader) or one
 * of a semaphore's slots K:s<i> does (K:limit says how many), and each
 * acquisition with fencing changes its value. Unused, it gets a record
 * K:fencing:gc, "<value> <node ms>", when first seen so; it goes once a
 * later run finds the same value recorded at least the bound ago. (Not
 * OBJECT IDLETIME: Valkey 8.0 reports days for a key a script just made.)
 * Replies {next cursor, kept, removed keys...}, a flat array, as the
 * tool's hardened reader wants. */
static const char gc_script[] =
    "if redis.replicate_commands then redis.replicate_commands() end "
    "local r = redis.call('scan', ARGV[1], 'match', ARGV[2], 'count', ARGV[3]) "
    "local t = redis.call('time') local now = t[1] * 1000 + math.floor(t[2] / 1000) "
    "local bound, dry, out, kept = tonumber(ARGV[4]), ARGV[5] == '1', {r[1], 0}, 0 "
    "for _, c in ipairs(r[2]) do "
    "local k, g = string.sub(c, 1, #c - " RL_KEY_FENCING_LEN_STR "), c .. ':gc' "
    "local used = redis.call('exists', k) == 1 or redis.call('type', c).ok ~= 'string' "
    "local lim = tonumber(redis.call('get', k .. ':limit') or '0') or 0 "
    "for i = 0, lim - 1 do if not used and redis.call('exists', k .. ':s' .. i) == 1 then used = true end end "
    "local v, rec = redis.call('get', c), redis.call('get', g) "
    "local rv, rt = nil, nil if rec then rv, rt = string.match(rec, '^(%S+) (%d+)$') end "
    "if not used and rv == v and now - tonumber(rt) >= bound then "
    "if not dry then redis.call('del', c, g) end out[#out + 1] = c "
    "else kept = kept + 1 "
    "if used then if not dry and rec then redis.call('del', g) end "
    "elseif rv ~= v and not dry then redis.call('set', g, v .. ' ' .. now, 'px', bound * 2 + 86400000) end end end "
    "out[2] = kept return out";

static void help(void)
{
    fputs("usage: redlock gc [options]\n"
          "\n"
          "Removes, on each node, the fencing counters (KEY:fencing) of resources not used for\n"
          "longer than --unused-for. A run notes each counter whose resource is not held there\n"
          "(KEY:fencing:gc: its value, and when); a later run removes it if its value has not\n"
          "changed since a note at least the bound old (no acquisition took a token), and the\n"
          "resource is still not held. Run it regularly (daily, from cron). A resource used\n"
          "again after that starts its tokens at 1, so the bound must exceed the retention of\n"
          "the fences that stores keep of its tokens (7d by default).\n"
          "\n"
          "options:\n"
          "      --nodes URL,URL,...     nodes (else $REDLOCK_NODES, else the config file)\n"
          "      --config FILE           config file (else $REDLOCK_CONFIG)\n"
          "      --key-prefix PREFIX     only the counters under this prefix\n"
          "      --unused-for DURATION   the bound (default 30d; at least 8d without --force)\n"
          "      --dry-run               count and list, write nothing (notes neither)\n"
          "      --force                 accept a bound under 8d (tests; tokens may then repeat)\n"
          "      --timeout DURATION      connect and reply deadline per node (default 2s)\n"
          CLI_TLS_HELP
          "  -h, --help                  this help\n"
          "\n"
          "Each removed counter's key is printed; a summary per node goes to stderr.\n"
          "\n"
          "exit codes: 0 every node done; 69 a node could not be reached or answered an\n"
          "error (the others are still done); 2 usage error.\n",
          stdout);
}

typedef struct gc_args {
    int64_t unused_ms;
    int dry_run, force;
} gc_args;

static int extra(int opt, const char *arg, void *userdata)
{
    gc_args *a = userdata;
    switch (opt) {
    case OPT_UNUSED_FOR:
        if (cli_parse_duration(arg, &a->unused_ms, 0) || a->unused_ms < 1000)
            return cli_usage(CMD, "--unused-for: '%s' is not a duration of at least 1s (e.g. 30d)", arg);
        return 0;
    case OPT_DRY_RUN:
        a->dry_run = 1;
        return 0;
    case OPT_FORCE:
        a->force = 1;
        return 0;
    default:
        return -1;
    }
}

/* One node: SCAN its counters under the prefix, the script on each. 0, or
 * -1 with the reason printed. */
static int gc_node(const cli_common *common, const char *url, const char *prefix, const gc_args *a,
                   int64_t timeout_ms, long *removed, long *kept)
{
    rl_endpoint ep;
    char err[512];
    memset(&ep, 0, sizeof ep);
    if (cli_endpoint_parse(url, &ep, err, sizeof err)) {
        cli_err(CMD, "%s", err);
        rl_endpoint_clear(&ep);
        return -1;
    }
    if (ep.cluster) {
        cli_err(CMD, "%s: a cluster node is not collected (scan each shard's master as a node of its own)",
                ep.display);
        rl_endpoint_clear(&ep);
        return -1;
    }
    rl_reply_guard guard = RL_REPLY_GUARD_INSPECT;
    int fail = 0, rc = 0;
    redisContext *ctx = cli_connect(common, &ep, timeout_ms, &guard, err, sizeof err, &fail);
    if (!ctx) {
        cli_err(CMD, "%s: %s", ep.display, err);
        rl_endpoint_clear(&ep);
        return -1;
    }
    char pattern[REDLOCK_MAX_PREFIX_LEN * 2 + 16], cursor[32] = "0", bound_ms[24];
    size_t k = 0;
    for (const char *p = prefix; *p && k + 3 < sizeof pattern; p++) {   /* the prefix, glob-escaped */
        if (strchr("*?[]\\", *p))
            pattern[k++] = '\\';
        pattern[k++] = *p;
    }
    snprintf(pattern + k, sizeof pattern - k, "*" RL_KEY_FENCING);
    snprintf(bound_ms, sizeof bound_ms, "%lld", (long long)a->unused_ms);
    do {
        redisReply *r = cli_command(ctx, err, sizeof err, "EVAL %s 0 %s %s " SCAN_COUNT " %s %s", gc_script, cursor,
                                    pattern, bound_ms, a->dry_run ? "1" : "0");
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_INTEGER) {
            cli_err(CMD, "%s: %s", ep.display, r && r->type == REDIS_REPLY_ERROR ? r->str : err);
            rl_reply_free(r);
            rc = -1;
            break;
        }
        snprintf(cursor, sizeof cursor, "%.*s", (int)r->element[0]->len, r->element[0]->str);
        *kept += r->element[1]->integer;
        for (size_t i = 2; i < r->elements; i++) {
            const redisReply *key = r->element[i];
            if (key->type == REDIS_REPLY_STRING) {
                printf("%.*s\n", (int)key->len, key->str);
                (*removed)++;
            }
        }
        rl_reply_free(r);
    } while (strcmp(cursor, "0") != 0);
    redisFree(ctx);
    rl_endpoint_clear(&ep);
    return rc;
}

_Static_assert(sizeof RL_KEY_FENCING - 1 == 8, "RL_KEY_FENCING_LEN_STR");

int cli_gc(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_NODE_LONGOPTS,
        { "unused-for", required_argument, NULL, OPT_UNUSED_FOR },
        { "dry-run", no_argument, NULL, OPT_DRY_RUN },
        { "force", no_argument, NULL, OPT_FORCE },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        CLI_TLS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    cli_common common;
    cli_common_init(&common);
    gc_args a = { DEFAULT_UNUSED_MS, 0, 0 };
    cli_inspect_opts io = { 0, DEFAULT_TIMEOUT_MS, extra, &a };
    int rc = cli_inspect_options(&common, CMD, argc, argv, longopts, help, &io);
    if (!rc && optind < argc)
        rc = cli_usage(CMD, "no operands ('%s' is extra)", argv[optind]);
    if (!rc && a.unused_ms < 8LL * 86400 * 1000 && !a.force)
        rc = cli_usage(CMD, "--unused-for under 8d lets a resource's tokens start again while a store's fence "
                            "(kept 7d) still remembers its old ones: give --force to do it anyway");
    if (!rc)
        rc = cli_common_resolve(&common, CMD, 1);
    if (!rc)
        rc = cli_nodes_check(&common, CMD, 0);
    redlock_options lib;
    cli_lib_options(&common, &lib);
    if (!rc)
        rc = cli_tls_prepare(&common, &lib, CMD);
    if (rc) {
        cli_common_free(&common);
        return rc == CLI_HELP_SHOWN ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);
    int failed = 0;
    for (size_t i = 0; i < common.n_urls; i++) {
        long removed = 0, kept = 0;
        int r = gc_node(&common, common.urls[i], lib.key_prefix ? lib.key_prefix : "", &a, io.timeout_ms,
                        &removed, &kept);
        failed |= r != 0;
        fprintf(stderr, "redlock gc: node %zu: %ld counter%s %s, %ld kept%s\n", i, removed, removed == 1 ? "" : "s",
                a.dry_run ? "would go" : "removed", kept, r ? " (stopped on an error)" : "");
    }
    cli_common_free(&common);
    return failed ? CLI_EXIT_UNAVAIL : 0;
}
