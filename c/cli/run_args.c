/* SPDX-License-Identifier: BSD-3-Clause */
/* run_args.c: 'redlock run's help and arguments, which follow flock(1):
 * options before and after RESOURCE, COMMAND after it (or -c 'CMD'), and
 * flock's own options, accepted or refused with a reason (docs/cli.md,
 * "flock(1) compatibility"). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define CMD (o->cmd)  /* "run", or "elect" for the parts it shares */

static void help(void)
{
    fputs("usage: redlock run [options] RESOURCE [--] COMMAND [ARG...]\n"
          "       redlock run [options] RESOURCE -c 'SHELL COMMAND'\n"
          "       redlock run [options] RESOURCE --also NAME [--also NAME...] [--] COMMAND [ARG...]\n"
          "\n"
          "Acquires the Redlock on RESOURCE, runs COMMAND while holding it (extending it in the\n"
          "background every TTL/3), then releases it. Exits with COMMAND's status.\n"
          "\n"
          "options:\n"
          "      --nodes URL,URL,...     nodes (else $REDLOCK_NODES, else the config file)\n"
          "      --config FILE           config file (else $REDLOCK_CONFIG)\n"
          "      --ttl DURATION          lock TTL, extended while COMMAND runs (default 30s)\n"
          "  -c, --command 'CMD'         run CMD with /bin/sh -c instead of COMMAND (as flock -c)\n"
          "  -w, --wait, --timeout DURATION\n"
          "                              wait at most this long for the lock (default: forever),\n"
          "                              trying again after the retry delay and jitter\n"
          "      --wake                  while waiting, listen for releases: a release of the lock\n"
          "                              wakes the wait at once (costs the nodes more under contention)\n"
          "      --no-wake               while waiting, only poll (the default); wins over --wake\n"
          "      --fair                  fair mode: the lock goes to the waiter that has waited\n"
          "                              longest (implies --wake); give it to every contender of RESOURCE\n"
          "  -s, --shared                a shared (read) lock: other -s holders may hold it too\n"
          "  -x, -e, --exclusive         an exclusive (write) lock, the default; waiting exclusive\n"
          "                              holders go before new shared ones\n"
          "  -n, --nonblock              one attempt; fail at once if the lock is held\n"
          "      --limit N               a semaphore: hold one of N permits of RESOURCE, so that up\n"
          "                              to N commands run at once (as consul lock -n); every user\n"
          "                              of RESOURCE must give the same N (1..1000). Also -n N, -nN,\n"
          "                              -n=N (a number after -n); --nonblock N locks a name N\n"
          "      --also NAME             also lock NAME, together with RESOURCE, all or none (repeat\n"
          "                              for more, up to 64 names in all): one multi-resource lock,\n"
          "                              taken in one step, so commands that list the same names in\n"
          "                              any order never deadlock; not with -s, --limit, --fair\n"
          "  -E, --conflict-exit-code N  exit code when the lock cannot be had (default 75)\n"
          "      --lost-exit-code N      exit code when the lock is at risk or lost while COMMAND runs\n"
          "                              (default 76)\n"
          "      --lost-signal SIG       signal sent to COMMAND's process group when the lock is at\n"
          "                              risk (no extension has succeeded within the margin before\n"
          "                              its validity ends) or lost, or when redlock itself dies\n"
          "                              (default TERM)\n"
          "  -k, --kill-after DURATION   then SIGKILL if still running after this, or sooner: before\n"
          "                              the validity ends (default 10s; 0 = never)\n"
          "      --key-prefix PREFIX     prepended to RESOURCE to form the key\n"
          "      --fencing               mint a fencing token; COMMAND gets it in REDLOCK_FENCING_TOKEN\n"
          "      --node-timeout DURATION per-node reply deadline (default 50ms)\n"
          CLI_TLS_HELP
          "  -v, --verbose               log acquire, failed attempts, extensions and release on stderr\n"
          "  -o, --close                 accepted for flock(1) compatibility; changes nothing\n"
          "  -h, --help                  this help\n"
          "\n"
          "DURATION: 250ms, 30s, 5m, 1h; a bare number is seconds.\n"
          "COMMAND sees REDLOCK_RESOURCE, REDLOCK_VALIDITY_MS (validity at start) and, with --fencing,\n"
          "REDLOCK_FENCING_TOKEN in its environment; REDLOCK_NODES, REDLOCK_CONFIG and any variable\n"
          "holding a node's password are taken out of it.\n"
          "exit codes: COMMAND's status (128+N if killed by signal N); 2 usage error; 75 lock not\n"
          "acquired (-E); 76 lock at risk or lost while COMMAND ran; 69 nodes unavailable (also\n"
          "while waiting, when no quorum of nodes can be reached for about 1s); 70 internal error;\n"
          "126 COMMAND not executable; 127 COMMAND not found. Interrupted by SIGINT/TERM/HUP/QUIT\n"
          "while waiting, or when COMMAND dies of the forwarded signal, redlock releases the lock\n"
          "and then dies of the same signal (a shell shows 128+N).\n",
          stdout);
}

static const struct option longopts[] = {
    CLI_NODE_LONGOPTS,
    { "node-timeout", required_argument, NULL, OPT_NODE_TIMEOUT },
    { "ttl", required_argument, NULL, OPT_TTL },
    { "wait", required_argument, NULL, 'w' },
    { "timeout", required_argument, NULL, 'w' },   /* flock's name for -w */
    { "nonblock", no_argument, NULL, 'n' },
    { "nb", no_argument, NULL, 'n' },              /* flock's other name */
    { "command", required_argument, NULL, 'c' },
    { "close", no_argument, NULL, 'o' },
    { "exclusive", no_argument, NULL, 'x' },
    { "shared", no_argument, NULL, 's' },
    { "unlock", no_argument, NULL, 'u' },
    { "no-fork", no_argument, NULL, 'F' },
    { "conflict-exit-code", required_argument, NULL, 'E' },
    { "lost-exit-code", required_argument, NULL, OPT_LOST_EXIT },
    { "lost-signal", required_argument, NULL, OPT_LOST_SIGNAL },
    { "kill-after", required_argument, NULL, 'k' },
    { "verbose", no_argument, NULL, 'v' },
    { "fencing", no_argument, NULL, OPT_FENCING },
    { "no-wake", no_argument, NULL, OPT_NO_WAKE },
    { "wake", no_argument, NULL, OPT_WAKE },
    { "fair", no_argument, NULL, OPT_FAIR },
    { "limit", required_argument, NULL, OPT_SEM_LIMIT },
    { "also", required_argument, NULL, OPT_ALSO },
    CLI_TLS_LONGOPTS,
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* flock's options: accepted when they change nothing here, refused with
 * the reason when they cannot be honoured. 1 if c was one of them. */
static int flock_option(const run_opts *o, int c, int *rc)
{
    switch (c) {
    case 'o':
        /* flock: don't let COMMAND inherit the lock's descriptor.
         * COMMAND never gets the node sockets anyway. */
        return 1;
    case 'u':
        *rc = cli_usage(CMD, "--unlock: a lock is released when COMMAND ends, or expires after its TTL");
        return 1;
    case 'F':
        *rc = cli_usage(CMD, "--no-fork: redlock must outlive COMMAND to keep the lock extended");
        return 1;
    }
    return 0;
}

static int one_option(run_opts *o, int c, const char *arg, const char *bad);

/* The semaphore's limit, from --limit N, -nN or -n=N: 0, or a usage error. */
static int sem_limit(run_opts *o, const char *what, const char *arg)
{
    if (cli_parse_long(arg, 1, REDLOCK_MAX_SEM_LIMIT, &o->sem_limit))
        return cli_usage(CMD, "%s: '%s' is not a number of permits in 1..%u", what, arg,
                         (unsigned)REDLOCK_MAX_SEM_LIMIT);
    return 0;
}

/* -n with something attached: -nN or -n=N is the semaphore's limit; else
 * -n is --nonblock followed by more flags (flock's -nx), taken one by one. */
static int n_attached(run_opts *o, const char *arg, const char *bad)
{
    if (arg[0] == '=')
        return sem_limit(o, "-n", arg + 1);
    if (arg[0] >= '0' && arg[0] <= '9')
        return sem_limit(o, "-n", arg);
    o->nonblock = 1;
    for (const char *p = arg; *p; p++) {
        if (!strchr("nvsoxeuFh", *p))
            return cli_usage(CMD, "'%s': give -%c apart from -n", bad, *p);
        int rc = one_option(o, *p, NULL, bad);
        if (rc)
            return rc;
    }
    return 0;
}

/* One option: 0, or the exit code of a usage error. */
static int one_option(run_opts *o, int c, const char *arg, const char *bad)
{
    int rc = 0;
    if (flock_option(o, c, &rc))
        return rc;
    switch (c) {
    case 'h':
        help();
        exit(0);
    case 'w':
        free(o->common.cli_wait);
        o->common.cli_wait = strdup(arg);
        return 0;
    case 'n':
        if (arg)
            return n_attached(o, arg, bad);
        o->nonblock = 1;
        return 0;
    case OPT_SEM_LIMIT:
        return sem_limit(o, "--limit", arg);
    case OPT_ALSO:
        if (o->n_also + 1 >= REDLOCK_MAX_MULTI)
            return cli_usage(CMD, "--also '%.100s': at most %d resources in one lock, RESOURCE included", arg,
                             REDLOCK_MAX_MULTI);
        o->also[o->n_also++] = arg;
        return 0;
    case 'E':
        if (cli_parse_long(arg, 0, 255, &o->conflict_code))
            return cli_usage(CMD, "--conflict-exit-code: '%s' is not a number in 0..255", arg);
        return 0;
    case OPT_LOST_EXIT:
        if (cli_parse_long(arg, 0, 255, &o->lost_code))
            return cli_usage(CMD, "--lost-exit-code: '%s' is not a number in 0..255", arg);
        return 0;
    case 's':   /* flock's shared lock: the read side of the read-write lock */
        o->shared = 1;
        return 0;
    case 'x':
    case 'e':
        o->shared = 0;
        return 0;
    case OPT_LOST_SIGNAL:
        o->lost_signal = cli_parse_signal(arg);
        if (o->lost_signal <= 0)
            return cli_usage(CMD, "--lost-signal: unknown signal '%s'", arg);
        return 0;
    case 'k':
        if (cli_parse_duration(arg, &o->kill_after_ms, 0))
            return cli_usage(CMD, "--kill-after: '%s' is not a duration (e.g. 10s)", arg);
        return 0;
    case 'v':
        o->verbose = 1;
        return 0;
    case 'c':
        o->shell_command = arg;
        return 0;
    case OPT_FENCING:
        o->fencing = 1;
        return 0;
    case OPT_NO_WAKE:
        o->no_wake = 1;
        return 0;
    case OPT_WAKE:
        o->wake = 1;
        return 0;
    case OPT_FAIR:
        o->fair = 1;
        return 0;
    case ':':
        return cli_usage(CMD, "option '%s' needs a value", bad);
    case '?':
        if (optopt)
            return cli_usage(CMD, "unknown option '-%c'", optopt);
        return cli_usage(CMD, "unknown option '%s'", bad);
    default:
        if (cli_common_option(&o->common, CMD, c, arg) != 1)
            return cli_usage(CMD, "unknown option '%s'", bad);
        return 0;
    }
}

/* flock's -n, a word of its own (or ending one, as in -xn), followed by a
 * word of digits: consul's 'lock -n 3', a semaphore of 3 permits, as issue
 * 24 spells it ('redlock run -n N'). flock's reading, one attempt at a lock
 * named "3", is written --nonblock 3 (or -n -- 3). Only 'run' has a
 * semaphore; --nonblock and --nb are flock's alone. 1 if the number was
 * taken as the limit (the caller skips it), 0 if not, or the exit code of
 * a usage error (a number out of range). */
static int n_then_number(run_opts *o, const char *word, const char *next, int *taken)
{
    *taken = 0;
    if (strcmp(o->cmd, RUN_CMD) || !strncmp(word, "--", 2) || !next || !*next ||
        next[strspn(next, "0123456789")])
        return 0;
    *taken = 1;
    return sem_limit(o, "-n", next);
}

/* What follows the options after RESOURCE: COMMAND, or nothing with -c. */
static int command_words(run_opts *o, int argc, char **argv, int first)
{
    if (o->shell_command) {
        /* flock FILE -c COMMAND: one shell command line, nothing after */
        if (first < argc)
            return cli_usage(CMD, "-c gives the command: '%s' is extra", argv[first]);
        o->sh_argv[0] = "/bin/sh";
        o->sh_argv[1] = "-c";
        o->sh_argv[2] = (char *)o->shell_command;
        o->sh_argv[3] = NULL;
        o->argv = o->sh_argv;
        return 0;
    }
    if (first >= argc)
        return cli_usage(CMD, "missing COMMAND to run under the lock");
    o->argv = argv + first;
    return 0;
}

void run_opts_init(run_opts *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    cli_common_init(&o->common);
    o->conflict_code = CLI_EXIT_CONFLICT;
    o->lost_code = CLI_EXIT_LOST;
    o->lost_signal = SIGTERM;
    o->kill_after_ms = 10000;   /* --kill-after's default */
}

int run_parse_args(run_opts *o, int argc, char **argv)
{
    /* Options may come before and after RESOURCE; the first word after
     * RESOURCE that is not an option (or whatever follows "--") starts
     * COMMAND, so COMMAND's own options are never ours. Two passes of
     * getopt in POSIX mode ('+') do that. */
    int pass_argc = argc;
    char **pass_argv = argv;
    for (int pass = 0; pass < 2; pass++) {
        optind = 0;
        opterr = 0;
        int c, rc;
        while ((c = getopt_long(pass_argc, pass_argv, "+:w:n::E:sk:vhc:oxeuF", longopts, NULL)) != -1) {
            int nonblock = o->nonblock, taken = 0;
            if ((rc = one_option(o, c, optarg, pass_argv[optind - 1])) != 0)
                return rc;
            if (c == 'n' && !optarg) {
                if ((rc = n_then_number(o, pass_argv[optind - 1], optind < pass_argc ? pass_argv[optind] : NULL,
                                        &taken)) != 0)
                    return rc;
                if (taken) {
                    o->nonblock = nonblock;   /* this -n was the limit's, not --nonblock */
                    optind++;
                }
            }
        }
        if (pass == 1)
            return command_words(o, pass_argc, pass_argv, optind);
        if (optind >= pass_argc)
            return cli_usage(CMD, o->shell_command ? "missing RESOURCE" : "missing RESOURCE and COMMAND");
        o->resource = pass_argv[optind];
        /* Second pass over what follows RESOURCE, RESOURCE standing in for
         * argv[0]. */
        pass_argv += optind;
        pass_argc -= optind;
    }
    return 0;
}
