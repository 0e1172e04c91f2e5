/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c: entry point of the redlock command-line tool (a distributed
 * flock(1)): dispatches to the run, status, doctor and completion subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "redlock.h"

static void usage(FILE *f)
{
    fputs("usage: redlock <command> [options] ...\n"
          "\n"
          "A distributed flock(1): a Redlock lock over several independent Redis/Valkey nodes.\n"
          "\n"
          "commands:\n"
          "  run RESOURCE [--] COMMAND [ARG...]   run COMMAND while holding the lock on RESOURCE\n"
          "  status RESOURCE                      show who holds RESOURCE on each node\n"
          "  elect NAME VALUE [--] COMMAND [ARG...]  run COMMAND while leader of the election NAME\n"
          "  elect -l NAME                        print NAME's leader and every change\n"
          "  doctor                               check that the nodes are safe for Redlock\n"
          "  fence RESOURCE OP [KEY [ARG...]]     write to a store through RESOURCE's fence\n"
          "  gc                                   remove the fencing counters of unused resources\n"
          "  completion bash|zsh                  print a shell completion script\n"
          "\n"
          "nodes come from --nodes URL,URL,..., else $REDLOCK_NODES, else 'nodes = ...' in the\n"
          "config file named by --config FILE or $REDLOCK_CONFIG. rediss:// nodes use TLS: see\n"
          "the --tls-* options in 'redlock COMMAND --help'.\n"
          "\n"
          "  -h, --help      this help ('redlock COMMAND --help' for a command's options)\n"
          "  -V, --version   print the version of the tool and of libredlock\n"
          "\n"
          "See docs/cli.md for exit codes, durations and the config file.\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("redlock %s (libredlock %s)\n", REDLOCK_CLI_VERSION, redlock_version());
        return 0;
    }
    if (!strcmp(cmd, "run"))
        return cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "elect"))
        return cli_elect(argc - 1, argv + 1);
    if (!strcmp(cmd, "status"))
        return cli_status(argc - 1, argv + 1);
    if (!strcmp(cmd, "doctor"))
        return cli_doctor(argc - 1, argv + 1);
    if (!strcmp(cmd, "fence"))
        return cli_fence(argc - 1, argv + 1);
    if (!strcmp(cmd, "gc"))
        return cli_gc(argc - 1, argv + 1);
    if (!strcmp(cmd, "completion"))
        return cli_completion(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return cli_usage(NULL, "unknown option '%s'", cmd);
    return cli_usage(NULL, "unknown command '%s' (commands: run, status, elect, doctor, fence, gc, completion)", cmd);
}
