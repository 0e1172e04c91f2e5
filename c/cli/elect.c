/* SPDX-License-Identifier: BSD-3-Clause */
/* elect.c: 'redlock elect': campaign in a leader election and run a command
 * while leader, stopping it when leadership is lost (run's child handling,
 * run.h); and 'redlock elect -l', which prints the leader and every change,
 * as etcdctl elect -l does. */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define CMD "elect"
#define MIN_TTL_MS 100
#define LISTEN_PIECE_MS 1000

static void help(void)
{
    fputs("usage: redlock elect [options] NAME VALUE [--] COMMAND [ARG...]\n"
          "       redlock elect -l [options] NAME\n"
          "\n"
          "Campaigns in the leader election NAME; once leader, writes VALUE as the leader's value\n"
          "and runs COMMAND while leading (the leadership is extended in the background). When\n"
          "leadership is at risk or lost, COMMAND is stopped as 'redlock run' stops it, before\n"
          "the leadership's validity ends; when COMMAND ends, redlock resigns, which hands\n"
          "leadership over at once. With -l, prints the leader and then every change, one line\n"
          "each, until interrupted.\n"
          "\n"
          "options:\n"
          "      --nodes URL,URL,...     nodes (else $REDLOCK_NODES, else the config file)\n"
          "      --config FILE           config file (else $REDLOCK_CONFIG)\n"
          "      --ttl DURATION          leadership TTL, extended while COMMAND runs (default 30s)\n"
          "  -w, --wait DURATION         campaign at most this long (default: forever)\n"
          "  -n, --nonblock              one attempt; fail at once if another process leads\n"
          "      --lost-exit-code N      exit code when leadership is lost while COMMAND runs (default 76)\n"
          "      --lost-signal SIG       signal sent to COMMAND's process group when leadership is\n"
          "                              at risk (not extended, its validity ending) or lost (default TERM)\n"
          "  -k, --kill-after DURATION   then SIGKILL if still running after this, or sooner: before\n"
          "                              the validity ends (default 10s; 0 = never)\n"
          "      --key-prefix PREFIX     prepended to NAME to form the keys\n"
          "      --node-timeout DURATION per-node reply deadline (default 50ms)\n"
          "  -l, --listen                print the leader and every change (no VALUE, no COMMAND)\n"
          "      --json                  with -l: one JSON object per line\n"
          CLI_TLS_HELP
          "  -v, --verbose               log the campaign, extensions and the resign on stderr\n"
          "  -h, --help                  this help\n"
          "\n"
          "COMMAND sees REDLOCK_TERM (the leadership's term, a fencing token that grows from leader\n"
          "to leader: pass it with every write), REDLOCK_FENCING_TOKEN (the same), REDLOCK_RESOURCE\n"
          "and REDLOCK_VALIDITY_MS in its environment.\n"
          "exit codes: COMMAND's status (128+N if killed by signal N); 2 usage error; 75 not leader\n"
          "within --wait; 76 leadership lost while COMMAND ran; 69 nodes unavailable; 70 internal\n"
          "error; 126 COMMAND not executable; 127 COMMAND not found.\n",
          stdout);
}

/* ---- elect -l: the leader, then every change ---- */

static void print_state(const redlock_leader *w, int json)
{
    if (json) {
        printf("{\"leader\":%s,\"term\":%llu,\"revision\":%llu,\"value\":", w->present ? "true" : "false",
               (unsigned long long)w->term, (unsigned long long)w->revision);
        if (w->present)
            cli_json_bytes(stdout, w->value, w->value_len);
        else
            fputs("null", stdout);
        fputs("}\n", stdout);
    } else if (w->present) {
        printf("leader term=%llu revision=%llu value=%s\n", (unsigned long long)w->term,
               (unsigned long long)w->revision, w->value);
    } else {
        printf("none term=%llu\n", (unsigned long long)w->term);
    }
    fflush(stdout);
}

static volatile sig_atomic_t listen_stop;
static redlock_election *listen_e;
static void on_listen_signal(int sig)
{
    listen_stop = sig;
    redlock_election_cancel(listen_e);   /* async-signal-safe */
}

static int listen_extra(int opt, const char *arg, void *userdata)
{
    (void)arg;
    (void)userdata;
    return opt == 'l' ? 0 : -1;
}

static int elect_listen(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_NODE_LONGOPTS,
        { "listen", no_argument, NULL, 'l' },
        { "json", no_argument, NULL, OPT_JSON },
        CLI_TLS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    /* The inspecting commands' parser knows long options only: -l is --listen. */
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-l"))
            argv[i] = (char *)"--listen";
    cli_common common;
    cli_common_init(&common);
    cli_inspect_opts io = { 0, 1000, listen_extra, NULL };
    int rc = cli_inspect_options(&common, CMD, argc, argv, longopts, help, &io);
    if (rc == CLI_HELP_SHOWN) {
        cli_common_free(&common);
        return 0;
    }
    if (!rc && optind >= argc)
        rc = cli_usage(CMD, "missing NAME");
    if (!rc && argc - optind > 1)
        rc = cli_usage(CMD, "-l takes one NAME ('%s' is extra)", argv[optind + 1]);
    if (!rc)
        rc = cli_common_resolve(&common, CMD, 1);
    if (!rc)
        rc = cli_nodes_check(&common, CMD, 1);
    const char *name = rc ? NULL : argv[optind];
    redlock_client *client = NULL;
    if (!rc) {
        redlock_options opts;
        cli_lib_options(&common, &opts);
        char err[1024];
        int orc = redlock_client_open(&client, (const char *const *)common.urls, common.n_urls, &opts, err,
                                      sizeof err);
        if (orc)
            rc = orc == REDLOCK_ENOMEM ? (cli_err(CMD, "out of memory"), CLI_EXIT_SOFTWARE) : cli_usage(CMD, "%s", err);
    }
    if (!rc && redlock_election_new(&listen_e, client, name) != 0)
        rc = cli_usage(CMD, "NAME '%.100s' is not a valid election name", name);
    if (!rc) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_listen_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        redlock_leader cur = { .version = REDLOCK_LEADER_VERSION };
        int lrc = redlock_election_leader(listen_e, &cur);
        if (lrc) {
            cli_err(CMD, "%s", redlock_election_errmsg(listen_e));
            rc = CLI_EXIT_UNAVAIL;
        } else {
            print_state(&cur, io.json);
        }
        while (!rc && !listen_stop) {
            lrc = redlock_election_observe(listen_e, &cur, LISTEN_PIECE_MS);
            if (lrc == 0)
                print_state(&cur, io.json);
            else if (lrc != REDLOCK_ETIMEDOUT && lrc != REDLOCK_ECANCELED)
                cli_err(CMD, "%s (retrying)", redlock_election_errmsg(listen_e));
        }
    }
    redlock_election_free(listen_e);
    redlock_client_free(client);
    cli_common_free(&common);
    if (listen_stop) {
        signal((int)listen_stop, SIG_DFL);
        raise((int)listen_stop);
    }
    return rc;
}

/* ---- elect NAME VALUE COMMAND: run's machinery around a campaign ---- */

static int is_listen(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-l") || !strcmp(argv[i], "--listen"))
            return 1;
    return 0;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}

/* run's arguments, for an election: NAME is its RESOURCE, and VALUE the
 * first word of what it takes for COMMAND. 0, or the exit code of a usage
 * error (told). */
static int parse_elect(run_opts *o, int argc, char **argv, const char **value, int64_t *ttl)
{
    int rc = run_parse_args(o, argc, argv);
    if (!rc && o->shell_command)
        rc = cli_usage(CMD, "-c is not supported: give COMMAND after VALUE");
    if (!rc && o->sem_limit)
        rc = cli_usage(CMD, "--limit (-nN) is for 'redlock run' (a semaphore): an election has one leader");
    if (!rc && o->shared)
        rc = cli_usage(CMD, "-s, --shared is for 'redlock run' (a read lock): an election has one leader");
    if (!rc) {
        *value = o->argv[0];
        o->argv++;
        if (o->argv[0] && !strcmp(o->argv[0], "--"))
            o->argv++;
        if (!o->argv[0])
            rc = cli_usage(CMD, "missing COMMAND to run while leader");
        else if (strlen(*value) > REDLOCK_ELECTION_MAX_VALUE)
            rc = cli_usage(CMD, "VALUE is %zu bytes, over the limit of %d", strlen(*value), REDLOCK_ELECTION_MAX_VALUE);
    }
    if (!rc)
        rc = cli_common_resolve(&o->common, CMD, 1);
    *ttl = o->common.ttl_ms >= 0 ? o->common.ttl_ms : CLI_DEFAULT_TTL_MS;
    if (!rc && (*ttl < MIN_TTL_MS || *ttl > (int64_t)REDLOCK_MAX_TTL_MS))
        rc = cli_usage(CMD, "--ttl must be between 100ms and 1d");
    if (!rc)
        rc = cli_nodes_check(&o->common, CMD, 1);
    return rc;
}

/* Leader of e: COMMAND runs with REDLOCK_TERM set, then the leader
 * resigns. The exit code, as run's; *reraise the signal to die of. */
static int lead(run_opts *o, redlock_election *e, redlock_lock *lock, fdset *inherited, int *reraise)
{
    char term[24];
    snprintf(term, sizeof term, "%llu", (unsigned long long)redlock_election_term(e));
    run_vlog(o, "leader of '%s', term %s", o->resource, term);
    if (setenv("REDLOCK_TERM", term, 1) != 0) {
        cli_err(CMD, "out of memory");
        redlock_election_resign(e);
        return CLI_EXIT_SOFTWARE;
    }
    int passthrough, killed_by;
    int crc = run_command(o, lock, inherited, &passthrough, &killed_by);
    int released = redlock_election_resign(e);
    if (released == REDLOCK_ESTATE)
        released = REDLOCK_ELOST;   /* lost before the resign */
    if (passthrough && killed_by && killed_by == run_signal)
        *reraise = killed_by;
    if (passthrough && released == REDLOCK_ELOST)
        *reraise = 0;
    return run_after_release(o, lock, released, crc, passthrough);
}

int cli_elect(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        help();
        return 0;
    }
    if (is_listen(argc, argv))
        return elect_listen(argc, argv);
    run_opts o;
    run_opts_init(&o, CMD);
    const char *value = NULL;
    int64_t ttl;
    int rc = parse_elect(&o, argc, argv, &value, &ttl);
    if (rc) {
        cli_common_free(&o.common);
        return rc;
    }
    int64_t wait = o.common.wait_ms == -2 ? CLI_WAIT_FOREVER : o.common.wait_ms;
    if (o.nonblock)
        wait = 0;
    o.fencing = 1;   /* REDLOCK_FENCING_TOKEN: the term */

    run_signals_init();
    fdset inherited;
    run_fds_snapshot(&inherited);
    redlock_client *client = NULL;
    redlock_election *e = NULL;
    int reraise = 0;
    redlock_options opts;
    cli_lib_options(&o.common, &opts);
    run_watch_init(&o, &opts);
    char err[1024];
    rc = redlock_client_open(&client, (const char *const *)o.common.urls, o.common.n_urls, &opts, err, sizeof err);
    if (rc)
        rc = rc == REDLOCK_ENOMEM ? (cli_err(CMD, "out of memory"), CLI_EXIT_SOFTWARE) : cli_usage(CMD, "%s", err);
    if (!rc && redlock_election_new(&e, client, o.resource) != 0)
        rc = cli_usage(CMD, "NAME '%.100s' is not a valid election name", o.resource);
    if (!rc) {
        /* The election's own lock: run's signal handlers cancel its
         * acquisition, and run's watch takes over its auto-extension. */
        redlock_lock *lock = (redlock_lock *)redlock_election_lock(e);
        run_signals_catch(lock);
        run_vlog(&o, "campaigning in '%s' with value '%s' on %zu nodes", o.resource, value, o.common.n_urls);
        int crc = redlock_election_campaign(e, value, (uint32_t)ttl, run_lib_wait(wait));
        if (crc == 0 && run_signal) {
            redlock_election_resign(e);
            crc = REDLOCK_ECANCELED;
        }
        rc = crc ? run_acquire_failed(&o, lock, crc, wait, &reraise) : lead(&o, e, lock, &inherited, &reraise);
    }
    run_signals_forget();
    redlock_election_free(e);
    redlock_client_free(client);
    free(inherited.fds);
    cli_common_free(&o.common);
    run_die_of(reraise);
    return rc;
}
