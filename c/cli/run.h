/* SPDX-License-Identifier: BSD-3-Clause */
/* run.h: the parts of 'redlock run' and what they share.
 *
 *   run.c         the subcommand: settings, the client, acquire, hold, release
 *   run_args.c    its help and its flock(1)-style arguments
 *   run_signals.c the signal state and handlers while waiting, dying of a signal
 *   run_watch.c   what the library tells it: events for -v, extension
 *                 trouble, the loss of the lock
 *   run_child.c   COMMAND: environment, descriptors, start, supervision
 *   run_exit.c    exit codes: of a failed acquire, of the release, of COMMAND */
#ifndef REDLOCK_CLI_RUN_H
#define REDLOCK_CLI_RUN_H

#include <signal.h>
#include <sys/types.h>

#include "cli.h"

#define RUN_CMD "run"

typedef struct run_opts {
    const char *cmd;           /* the subcommand messages name: RUN_CMD, or "elect" */
    cli_common common;
    const char *resource;
    char **argv;               /* COMMAND and its arguments */
    const char *shell_command; /* -c: run with /bin/sh -c, as flock -c does */
    char *sh_argv[4];
    int nonblock;
    int verbose;
    int fencing;
    int wake;                  /* --wake: REDLOCK_OPT_WAKE, a release wakes the wait */
    int no_wake;               /* --no-wake: REDLOCK_OPT_NO_WAKE, waiting only polls (the default) */
    int fair;                  /* --fair: REDLOCK_OPT_FAIR, waiters served in arrival order */
    long conflict_code, lost_code;
    int lost_signal;
    int64_t kill_after_ms;
    int shared;                /* -s, --shared: the read side of RESOURCE's read-write lock */
    long sem_limit;            /* -nN, --limit N: a permit of a semaphore of N (0: the mutex) */
    /* --also NAME (repeated): RESOURCE and these held together, all or none
     * (a multi-resource lock, redlock_lock_new_multi) */
    const char *also[REDLOCK_MAX_MULTI];
    int n_also;
} run_opts;

/* ---- run_args.c ---- */
/* o zeroed, with the defaults of run and elect; messages name cmd. */
void run_opts_init(run_opts *o, const char *cmd);
/* Parses run's arguments into o (--help prints it and exits 0): 0, or the
 * exit code of a usage error, already reported. */
int run_parse_args(run_opts *o, int argc, char **argv);

/* ---- run_signals.c ---- */
/* The signals redlock forwards to COMMAND (and waits for itself). */
#define N_FORWARDED 6
extern const int run_forwarded[N_FORWARDED];
/* Sent to the main thread by on_lost, to wake its sigwaitinfo(). */
#define RUN_WAKE_SIGNAL (SIGRTMIN)

enum { RUN_PHASE_ACQUIRE, RUN_PHASE_CHILD, RUN_PHASE_DONE };
extern volatile sig_atomic_t run_phase;
extern volatile sig_atomic_t run_signal;   /* last INT/TERM/HUP/QUIT/USR* received */
/* SIGCHLD and RUN_WAKE_SIGNAL handled (never discarded), SIGPIPE ignored. */
void run_signals_init(void);
/* From now on, INT/TERM/HUP/QUIT cancel the acquisition of lock. */
void run_signals_catch(redlock_lock *lock);
/* The handlers do nothing from now on: the lock goes away. */
void run_signals_forget(void);
/* For INT/TERM/HUP/QUIT: dies of sig (the lock already released), so that
 * a calling shell script stops too. Returns for any other value. */
void run_die_of(int sig);

/* ---- run_watch.c ---- */
void run_vlog(const run_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the client's on_event hook (-v, extension trouble) in opts. */
void run_watch_init(const run_opts *o, redlock_options *opts);
/* Hands the lock to the library's auto-extension while COMMAND (process
 * group pgid) runs; its at-risk notice, or a loss, sends the lost signal to
 * the group. Returns 1 if the auto-extension runs, 0 if it could not start
 * (then the lock counts as lost at once). */
int run_watch_start(redlock_lock *lock, pid_t pgid);
/* When SIGKILL is due after the lost signal, or -1: --kill-after after it,
 * or sooner, halfway through the validity then left. A SIGKILL due sooner
 * than --kill-after is sent here, once due (then -1). */
int64_t run_watch_kill_at(const run_opts *o);
/* COMMAND has ended: no signal may reach its pid from now on; stops the
 * auto-extension (waiting for a loss being handled). */
void run_watch_stop(redlock_lock *lock, int have_auto);
/* 1 if the lock was lost while COMMAND ran, with why. */
int run_watch_lost(char *why, size_t size);

/* ---- run_child.c ---- */
typedef struct fdset {
    int *fds;
    size_t n;
} fdset;
/* The descriptors open now. */
void run_fds_snapshot(fdset *s);
/* Marks close-on-exec every descriptor opened since `before`. */
void run_fds_cloexec_new(const fdset *before);
/* Runs COMMAND with the lock held; returns the tool's exit code.
 * *passthrough is set when that code is COMMAND's own status, which the
 * release may still override; *killed_by to the signal that killed it. */
int run_command(const run_opts *o, redlock_lock *lock, const fdset *inherited, int *passthrough, int *killed_by);
/* Waits for COMMAND (pid, its own process group) to end, without reaping
 * it: forwards the signals of waitset to its group, relays Ctrl-Z stops,
 * and sends SIGKILL --kill-after a loss. */
void supervise_child(const run_opts *o, pid_t pid, int tty_fd, const sigset_t *waitset);
/* Gives the terminal to process group pgid (no-op without a terminal). */
void run_take_terminal(int tty_fd, pid_t pgid);

/* ---- run_exit.c ---- */
/* Reports an acquisition that failed with rc and returns the exit code;
 * *reraise is set when a signal interrupted it. */
int run_acquire_failed(const run_opts *o, redlock_lock *lock, int rc, int64_t wait_ms, int *reraise);
/* The library's wait_ms for a CLI wait (CLI_WAIT_FOREVER or 0 to 7d): the
 * library waits forever itself, and run's signal handlers cancel it. */
static inline int64_t run_lib_wait(int64_t wait)
{
    return wait == CLI_WAIT_FOREVER ? REDLOCK_WAIT_FOREVER : wait;
}
/* The exit code after the release (which gave `released`) of a lock held
 * while COMMAND ran, whose run gave rc. */
int run_after_release(const run_opts *o, redlock_lock *lock, int released, int rc, int passthrough);
/* The exit code once COMMAND has ended with wait status `status`: the lost
 * code if the lock was lost meanwhile, else COMMAND's own (then
 * *passthrough = 1, and *killed_by the signal that killed it, if any). */
int run_command_exit(const run_opts *o, int status, int *passthrough, int *killed_by);
/* The tool's exit code for COMMAND's wait status, and a phrase for it. */
int run_status_code(int status);
void run_describe_status(int status, char *buf, size_t size);

#endif
