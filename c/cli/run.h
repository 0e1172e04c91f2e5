/* SPDX-License-Identifier: BSD-3-Clause */
/* run.h: what 'redlock run' (run.c) shares with the side that starts and
 * ends COMMAND (run_child.c). */
#ifndef REDLOCK_CLI_RUN_H
#define REDLOCK_CLI_RUN_H

#include <signal.h>
#include <sys/types.h>

#include "cli.h"

typedef struct run_opts {
    cli_common common;
    const char *resource;
    char **argv;               /* COMMAND and its arguments */
    const char *shell_command; /* -c: run with /bin/sh -c, as flock -c does */
    char *sh_argv[4];
    int nonblock;
    int verbose;
    int fencing;
    int no_wake;               /* --no-wake: REDLOCK_OPT_NO_WAKE, waiting only polls */
    int fair;                  /* --fair: REDLOCK_OPT_FAIR, waiters served in arrival order */
    long conflict_code, lost_code;
    int lost_signal;
    int64_t kill_after_ms;
} run_opts;

/* The signals redlock forwards to COMMAND (and waits for itself). */
#define N_FORWARDED 6
extern const int run_forwarded[N_FORWARDED];

/* ---- run_child.c ---- */
typedef struct fdset {
    int *fds;
    size_t n;
} fdset;
/* The descriptors open now. */
void run_fds_snapshot(fdset *s);
/* Marks close-on-exec every descriptor opened since `before`. */
void run_fds_cloexec_new(const fdset *before);
/* In the forked child: its own process group and terminal, the parent-death
 * signal, default signal handling, then exec; errno to err_fd on failure. */
void run_child_exec(const run_opts *o, int err_fd, pid_t parent, int tty_fd, const sigset_t *oldmask);
/* The tool's exit code for a wait status, and a phrase for it. */
int run_status_code(int status);
void run_describe_status(int status, char *buf, size_t size);
/* Gives the terminal to process group pgid (no-op without a terminal). */
void run_take_terminal(int tty_fd, pid_t pgid);
/* Takes REDLOCK_NODES, REDLOCK_CONFIG and any variable carrying a node's
 * password out of the environment COMMAND inherits. */
int run_scrub_environment(const run_opts *o);

#endif
