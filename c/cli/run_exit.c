/* SPDX-License-Identifier: BSD-3-Clause */
/* run_exit.c: the exit codes of 'redlock run' (docs/cli.md, "Exit codes")
 * and the messages that explain them: a lock that could not be had, one
 * lost while COMMAND ran or found lost at its release, and COMMAND's own
 * status. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "run.h"

#define CMD (o->cmd)  /* "run", or "elect" for the parts it shares */

int run_acquire_failed(const run_opts *o, redlock_lock *lock, int rc, int64_t wait_ms, int *reraise)
{
    char d[32];
    switch (rc) {
    case REDLOCK_ECANCELED:
        cli_err(CMD, "interrupted by %s while waiting for '%s'", cli_signal_name(run_signal), o->resource);
        *reraise = run_signal;
        return 128 + run_signal;
    case REDLOCK_ENOTACQUIRED:
        if (o->sem_limit)
            cli_err(CMD, "all %ld permits of '%s' are held: %s", o->sem_limit, o->resource, redlock_lock_errmsg(lock));
        else if (strcmp(o->cmd, RUN_CMD) != 0)
            cli_err(CMD, "'%s' has a leader already: %s", o->resource, redlock_lock_errmsg(lock));
        else
            cli_err(CMD, "'%s' is locked by another owner: %s", o->resource, redlock_lock_errmsg(lock));
        return (int)o->conflict_code;
    case REDLOCK_ETIMEDOUT:
        cli_err(CMD, "gave up waiting for '%s' after %s: %s", o->resource, cli_fmt_duration(wait_ms, d, sizeof d),
                redlock_lock_errmsg(lock));
        return (int)o->conflict_code;
    case REDLOCK_EUNREACHABLE:
        /* Refused, unresolvable or not connecting: waiting longer would not
         * help (a busy lock, or nodes that answer with errors, still wait). */
        cli_err(CMD, "cannot acquire '%s': no quorum of nodes can be reached: %s", o->resource,
                redlock_lock_errmsg(lock));
        return CLI_EXIT_UNAVAIL;
    case REDLOCK_EINVAL:
        cli_err(CMD, "%s", redlock_lock_errmsg(lock));
        return CLI_EXIT_USAGE;
    case REDLOCK_ENOMEM:
        cli_err(CMD, "out of memory");
        return CLI_EXIT_SOFTWARE;
    default:
        cli_err(CMD, "cannot acquire '%s': %s: %s", o->resource, redlock_error_name(rc), redlock_lock_errmsg(lock));
        return CLI_EXIT_UNAVAIL;
    }
}

int run_after_release(const run_opts *o, redlock_lock *lock, int released, int rc, int passthrough)
{
    if (!passthrough) {
        /* rc is already redlock's own code (lost, or COMMAND not run). */
        if (released == 0)
            run_vlog(o, "released '%s'", o->resource);
        return rc;
    }
    if (released == REDLOCK_ELOST) {
        /* COMMAND's work may have overlapped another owner's. */
        cli_err(CMD, "the lock on '%s' was not held for the whole run: %s; exiting with %ld", o->resource,
                redlock_lock_errmsg(lock), o->lost_code);
        return (int)o->lost_code;
    }
    if (released != 0)
        cli_err(CMD, "release of '%s' not confirmed (it expires by itself): %s: %s", o->resource,
                redlock_error_name(released), redlock_lock_errmsg(lock));
    else
        run_vlog(o, "released '%s'", o->resource);
    return rc;
}

int run_command_exit(const run_opts *o, int status, int *passthrough, int *killed_by)
{
    char how[96], why[2200];
    run_describe_status(status, how, sizeof how);
    run_vlog(o, "command %s", how);
    if (run_watch_lost(why, sizeof why)) {
        /* Stopped at the at-risk notice, with no loss told after it: the
         * lock was still held when the lost signal went. */
        int at_risk = !strncmp(why, "REDLOCK_EATRISK:", 16);
        cli_err(CMD, "the command %s after the lock was %s (%s); exiting with %ld", how,
                at_risk ? "at risk of expiring" : "lost", why, o->lost_code);
        return (int)o->lost_code;
    }
    *passthrough = 1;
    if (WIFSIGNALED(status))
        *killed_by = WTERMSIG(status);
    return run_status_code(status);
}

int run_status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return CLI_EXIT_SOFTWARE;
}

void run_describe_status(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "was killed by %s (exit %d)", cli_signal_name(WTERMSIG(status)),
                 128 + WTERMSIG(status));
    else
        snprintf(buf, size, "ended with wait status %d", status);
}
