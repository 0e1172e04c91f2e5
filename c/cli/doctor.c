/* SPDX-License-Identifier: BSD-3-Clause */
/* doctor.c: 'redlock doctor': inspects each node over hiredis and reports what
 * would make Redlock unsafe there (eviction, persistence, replicas, the same
 * server twice, clock rate, scripts, ACLs), each with a one-line fix. This
 * file connects and runs the tables of checks (doctor_checks.c); the report
 * is doctor_report.c's. */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

#define CMD DOCTOR_CMD
#define DEFAULT_TIMEOUT_MS 1000
#define DEFAULT_PROBE_MS 1000

static void help(void)
{
    fputs("usage: redlock doctor [options]\n"
          "\n"
          "Connects to each node and reports what would make Redlock unsafe or unusable there,\n"
          "each finding with a severity (info, warn, severe) and a one-line fix. It writes only\n"
          "its own short-lived probe keys (KEY_PREFIX + \"redlock-doctor:*\"), and deletes them.\n"
          "\n"
          "options:\n"
          "      --nodes URL,URL,...     nodes (else $REDLOCK_NODES, else the config file)\n"
          "      --config FILE           config file (else $REDLOCK_CONFIG)\n"
          "      --key-prefix PREFIX     prefix of the lock keys (the ACL checks use it)\n"
          "      --ttl DURATION          the longest lock TTL you use, for advice (default 30s)\n"
          "      --timeout DURATION      connect and reply deadline per node (default 1s)\n"
          "      --clock-probe DURATION  how long to compare each node's expiry clock with ours\n"
          "                              (default 1s; 0 skips the check)\n"
          "      --json                  print JSON instead of text\n"
          CLI_TLS_HELP
          "  -h, --help                  this help\n"
          "\n"
          "checks: reachable, PING/SET NX PX/EVAL/EVALSHA allowed by ACLs, scripting available,\n"
          "maxmemory-policy noeviction, persistence, replicas and replica-of, cluster mode, the\n"
          "same server listed twice (same run_id), clock rate vs this host, node count.\n"
          "exit codes: 0 no severe finding; 1 at least one severe finding; 2 usage error.\n",
          stdout);
}

/* --clock-probe: -1 if opt is another option. */
static int probe_option(int opt, const char *arg, void *userdata)
{
    int64_t *probe_ms = userdata;
    if (opt != OPT_CLOCK_PROBE)
        return -1;
    if (cli_parse_duration(arg, probe_ms, 0) || *probe_ms > 60000 || (*probe_ms && *probe_ms < 100))
        return cli_usage(CMD, "--clock-probe: '%s' must be 0 (skip) or a duration from 100ms to 1m", arg);
    return 0;
}

/* Options: 0, the exit code of a usage error (reported), or CLI_HELP_SHOWN. */
static int parse_args(cli_common *common, cli_inspect_opts *io, int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_NODE_LONGOPTS,
        { "ttl", required_argument, NULL, OPT_TTL },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "clock-probe", required_argument, NULL, OPT_CLOCK_PROBE },
        { "json", no_argument, NULL, OPT_JSON },
        CLI_TLS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int rc = cli_inspect_options(common, CMD, argc, argv, longopts, help, io);
    if (rc)
        return rc;
    if (optind < argc)
        return cli_usage(CMD, "unexpected argument '%s'", argv[optind]);
    rc = cli_common_resolve(common, CMD, 1);
    if (!rc)
        rc = cli_nodes_check(common, CMD, 0);
    return rc;
}

/* The nodes, parsed (cli_nodes_check has accepted every URL): 0, or an
 * exit code. */
static int setup(doctor *d, cli_common *common, const redlock_options *lib, int64_t probe_ms)
{
    memset(d, 0, sizeof *d);
    d->n_nodes = common->n_urls;
    d->nodes = calloc(d->n_nodes, sizeof *d->nodes);
    if (!d->nodes) {
        cli_err(CMD, "out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    for (size_t i = 0; i < d->n_nodes; i++) {
        char err[512];
        d->nodes[i].index = (int)i;
        rl_endpoint_parse(&d->nodes[i].ep, common->urls[i], err, sizeof err);
        d->tls_nodes += d->nodes[i].ep.tls != 0;
    }
    d->quorum = d->n_nodes / 2 + 1;
    d->prefix = lib->key_prefix;
    d->tls_insecure = lib->tls_insecure_skip_verify;
    d->probe_ms = probe_ms;
    cli_fmt_duration(common->ttl_ms > 0 ? common->ttl_ms : CLI_DEFAULT_TTL_MS, d->ttl_text, sizeof d->ttl_text);
    return cli_tls_prepare(common, lib, CMD);
}

/* One node: connected, then its checks in the table's order until one
 * stops them or the connection fails. */
static void check_node(doctor *d, dnode *n, const cli_common *common, const redlock_options *lib,
                       int64_t timeout_ms)
{
    n->guard = (rl_reply_guard)RL_REPLY_GUARD_INSPECT;
    n->ctx = cli_connect(common, &n->ep, timeout_ms, &n->guard, n->error, sizeof n->error, &n->fail);
    if (!n->ctx) {
        doctor_connect_failed(d, n, lib->tls_server_name);
        return;
    }
    d->reachable++;
    for (size_t k = 0; k < doctor_n_node_checks; k++) {
        const node_check *c = &doctor_node_checks[k];
        if (c->needs_usable && !doctor_flag_broken(d, n))
            break;
        if (c->run(d, n) == CHECK_STOP)
            break;
    }
    doctor_flag_broken(d, n);
}

static void cleanup(doctor *d, cli_common *common)
{
    for (size_t i = 0; d->nodes && i < d->n_nodes; i++) {
        if (d->nodes[i].ctx)
            redisFree(d->nodes[i].ctx);
        rl_endpoint_clear(&d->nodes[i].ep);
        free(d->nodes[i].cluster_ids);
    }
    free(d->nodes);
    doctor_free_shards(d);
    free(d->f);
    cli_common_free(common);
}

int cli_doctor(int argc, char **argv)
{
    cli_common common;
    cli_common_init(&common);
    int64_t probe_ms = DEFAULT_PROBE_MS;
    cli_inspect_opts io = { 0, DEFAULT_TIMEOUT_MS, probe_option, &probe_ms };
    doctor d;
    memset(&d, 0, sizeof d);
    redlock_options lib;
    int rc = parse_args(&common, &io, argc, argv);
    cli_lib_options(&common, &lib);
    if (!rc)
        rc = setup(&d, &common, &lib, probe_ms);
    if (rc) {
        cleanup(&d, &common);
        return rc == CLI_HELP_SHOWN ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);  /* a node that closes its end must not kill us mid-write */
    d.common = &common;
    d.timeout_ms = io.timeout_ms;
    for (size_t i = 0; i < d.n_nodes; i++)
        check_node(&d, &d.nodes[i], &common, &lib, io.timeout_ms);
    for (size_t k = 0; k < doctor_n_set_checks; k++)
        doctor_set_checks[k].run(&d);
    if (io.json)
        doctor_print_json(&d);
    else
        doctor_print_text(&d);
    rc = d.counts[SEV_SEVERE] ? 1 : 0;
    cleanup(&d, &common);
    return rc;
}
