/* SPDX-License-Identifier: BSD-3-Clause */
/* run.c: 'redlock run': holds a Redlock while a command runs, kept alive by
 * the library's auto-extension, and stops the command if the lock is lost. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "redlock.h"
#include "run.h"

#define CMD "run"
#define DEFAULT_TTL_MS 30000
#define DEFAULT_KILL_AFTER_MS 10000
#define MIN_TTL_MS 100
/* The library caps one acquire's wait; longer waits are done in pieces. */
#define WAIT_PIECE_MS ((int64_t)REDLOCK_MAX_WAIT_MS)

static void help(void)
{
    fputs("usage: redlock run [options] RESOURCE [--] COMMAND [ARG...]\n"
          "       redlock run [options] RESOURCE -c 'SHELL COMMAND'\n"
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
          "                              wait at most this long for the lock (default: forever);\n"
          "                              a release of the lock wakes the wait at once\n"
          "      --no-wake               while waiting, only poll (retry delay and jitter); do not\n"
          "                              listen for releases\n"
          "      --fair                  fair mode: the lock goes to the waiter that has waited\n"
          "                              longest; give it to every contender of RESOURCE\n"
          "  -n, --nonblock              one attempt; fail at once if the lock is held\n"
          "  -E, --conflict-exit-code N  exit code when the lock cannot be had (default 75)\n"
          "      --lost-exit-code N      exit code when the lock is lost while COMMAND runs (default 76)\n"
          "  -s, --lost-signal SIG       signal sent to COMMAND's process group when the lock is\n"
          "                              lost, or when redlock itself dies (default TERM)\n"
          "  -k, --kill-after DURATION   then SIGKILL if still running after this (default 10s; 0 = never)\n"
          "      --key-prefix PREFIX     prepended to RESOURCE to form the key\n"
          "      --fencing               mint a fencing token; COMMAND gets it in REDLOCK_FENCING_TOKEN\n"
          "      --node-timeout DURATION per-node reply deadline (default 50ms)\n"
          CLI_TLS_HELP
          "  -v, --verbose               log acquire, extensions and release on stderr\n"
          "  -o, --close, -x, --exclusive  accepted for flock(1) compatibility; change nothing\n"
          "  -h, --help                  this help\n"
          "\n"
          "DURATION: 250ms, 30s, 5m, 1h; a bare number is seconds.\n"
          "COMMAND sees REDLOCK_RESOURCE, REDLOCK_VALIDITY_MS (validity at start) and, with --fencing,\n"
          "REDLOCK_FENCING_TOKEN in its environment; REDLOCK_NODES, REDLOCK_CONFIG and any variable\n"
          "holding a node's password are taken out of it.\n"
          "exit codes: COMMAND's status (128+N if killed by signal N); 2 usage error; 75 lock not\n"
          "acquired (-E); 76 lock lost while COMMAND ran; 69 nodes unavailable; 70 internal error;\n"
          "126 COMMAND not executable; 127 COMMAND not found. Interrupted by SIGINT/TERM/HUP/QUIT\n"
          "while waiting, or when COMMAND dies of the forwarded signal, redlock releases the lock\n"
          "and then dies of the same signal (a shell shows 128+N).\n",
          stdout);
}

/* ---- state shared with the signal handler ---- */

enum { PHASE_ACQUIRE, PHASE_CHILD, PHASE_DONE };
static redlock_lock *g_lock;
static volatile sig_atomic_t g_phase = PHASE_ACQUIRE;
static volatile sig_atomic_t g_signal;       /* last INT/TERM/HUP/QUIT/USR* received */

const int run_forwarded[N_FORWARDED] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/* Runs only while the lock is being acquired: later the signals are blocked
 * and taken with sigwaitinfo() (see run_command). */
static void on_signal(int sig)
{
    /* USR1/USR2 mean nothing to us before the command exists. */
    if (g_phase == PHASE_ACQUIRE && sig != SIGUSR1 && sig != SIGUSR2) {
        g_signal = sig;
        redlock_lock_cancel(g_lock);  /* async-signal-safe and sticky */
    }
}

static void on_wake(int sig)
{
    (void)sig;  /* WAKE_SIGNAL is taken by sigwaitinfo; this only keeps a stray one harmless */
}

static void on_sigchld(int sig)
{
    (void)sig;  /* a handler, so that SIGCHLD is never discarded as ignored */
}

static void vlog(const run_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vlog(const run_opts *o, const char *fmt, ...)
{
    if (!o->verbose)
        return;
    char ts[32], buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "redlock %s [%s pid %d]: %s\n", CMD, cli_timestamp(ts, sizeof ts), (int)getpid(), buf);
}

/* ---- losing the lock: the library's auto-extension tells us ---- */

/* The library's auto-extend thread keeps the lock alive every TTL/3 and
 * calls on_lost when it is gone. What the old private extender did on a loss
 * is done here: the lost signal to COMMAND's group at once, and SIGKILL
 * after --kill-after from the main thread, woken by WAKE_SIGNAL (on_lost
 * must be quick: the library's thread serves other locks too). */
#define WAKE_SIGNAL (SIGRTMIN)

typedef struct watch {
    pthread_mutex_t mu;
    int child_done;            /* set by main before reaping: no kill() after this */
    int lost;                  /* set by on_lost */
    int64_t lost_at_ms;
    char why[2200];
    pid_t pgid;
    pthread_t main_thread;
    const run_opts *o;
    int ext_failures;          /* auto-extension failures in a row (its thread only) */
} watch;

static watch g_watch = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void on_lost(redlock_lock *lock, int code, const char *message, void *userdata)
{
    (void)lock;
    watch *w = userdata;
    const run_opts *o = w->o;
    pthread_mutex_lock(&w->mu);
    if (!w->lost) {
        w->lost = 1;
        w->lost_at_ms = cli_now_ms();
        snprintf(w->why, sizeof w->why, "%s: %s", redlock_error_name(code),
                 message && *message ? message : redlock_strerror(code));
        if (!w->child_done) {
            cli_err(CMD, "lock '%s' lost while the command ran (%s); sending %s to its process group %d",
                    o->resource, w->why, cli_signal_name(o->lost_signal), (int)w->pgid);
            kill(-w->pgid, o->lost_signal);
        }
        pthread_kill(w->main_thread, WAKE_SIGNAL);
    }
    pthread_mutex_unlock(&w->mu);
}

/* The metrics hook, for --verbose and for reporting extension trouble once
 * (the library retries on its own while the validity lasts). */
static void on_event(const redlock_event *ev, void *userdata)
{
    watch *w = userdata;
    const run_opts *o = w->o;
    if (!o)
        return;
    if (ev->type == REDLOCK_EVENT_WOKEN) {
        vlog(o, "woken by a release of '%s' (node %zu)", o->resource, ev->node + 1);
        return;
    }
    if (ev->type == REDLOCK_EVENT_LISTENER) {
        static const char *const names[] = { "off", "connecting", "ready", "down", "refused" };
        int st = ev->listener_state;
        vlog(o, "wake-up listener on node %zu: %s%s%s", ev->node + 1,
             st >= 0 && st < (int)(sizeof names / sizeof names[0]) ? names[st] : "unknown",
             *ev->message ? ": " : "", ev->message);
        return;
    }
    if (!ev->automatic)
        return;
    if (ev->type == REDLOCK_EVENT_EXTENDED) {
        if (w->ext_failures)
            cli_err(CMD, "extended '%s' again after %d failed attempt%s", o->resource, w->ext_failures,
                    w->ext_failures == 1 ? "" : "s");
        w->ext_failures = 0;
        vlog(o, "extended '%s' (validity %lld ms)", o->resource, (long long)ev->validity_ms);
    } else if (ev->type == REDLOCK_EVENT_EXTEND_FAILED) {
        if (w->ext_failures++ == 0)
            cli_err(CMD, "could not extend '%s' (will retry while its validity lasts): %s: %s", o->resource,
                    redlock_error_name(ev->code), ev->message);
    }
}

/* ---- arguments ---- */

static int parse_args(run_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "nodes", required_argument, NULL, OPT_NODES },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "key-prefix", required_argument, NULL, OPT_KEY_PREFIX },
        { "node-timeout", required_argument, NULL, OPT_NODE_TIMEOUT },
        { "ttl", required_argument, NULL, OPT_TTL },
        { "wait", required_argument, NULL, 'w' },
        { "timeout", required_argument, NULL, 'w' },   /* flock's name for -w */
        { "nonblock", no_argument, NULL, 'n' },
        { "nb", no_argument, NULL, 'n' },              /* flock's other name */
        { "command", required_argument, NULL, 'c' },
        { "close", no_argument, NULL, 'o' },
        { "exclusive", no_argument, NULL, 'x' },
        { "shared", no_argument, NULL, OPT_FLOCK_SHARED },
        { "unlock", no_argument, NULL, 'u' },
        { "no-fork", no_argument, NULL, 'F' },
        { "conflict-exit-code", required_argument, NULL, 'E' },
        { "lost-exit-code", required_argument, NULL, OPT_LOST_EXIT },
        { "lost-signal", required_argument, NULL, 's' },
        { "kill-after", required_argument, NULL, 'k' },
        { "verbose", no_argument, NULL, 'v' },
        { "fencing", no_argument, NULL, OPT_FENCING },
        { "no-wake", no_argument, NULL, OPT_NO_WAKE },
        { "fair", no_argument, NULL, OPT_FAIR },
        CLI_TLS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    /* Options may come before and after RESOURCE; the first word after
     * RESOURCE that is not an option (or whatever follows "--") starts
     * COMMAND, so COMMAND's own options are never ours. Two passes of
     * getopt in POSIX mode ('+') do that. */
    int pass_argc = argc;
    char **pass_argv = argv;
    for (int pass = 0; pass < 2; pass++) {
        optind = 0;
        opterr = 0;
        int c;
        while ((c = getopt_long(pass_argc, pass_argv, "+:w:nE:s:k:vhc:oxeuF", longopts, NULL)) != -1) {
            const char *bad = pass_argv[optind - 1];
            switch (c) {
            case 'h':
                help();
                exit(0);
            case 'w':
                free(o->common.cli_wait);
                o->common.cli_wait = strdup(optarg);
                break;
            case 'n':
                o->nonblock = 1;
                break;
            case 'E':
                if (cli_parse_long(optarg, 0, 255, &o->conflict_code))
                    return cli_usage(CMD, "--conflict-exit-code: '%s' is not a number in 0..255", optarg);
                break;
            case OPT_LOST_EXIT:
                if (cli_parse_long(optarg, 0, 255, &o->lost_code))
                    return cli_usage(CMD, "--lost-exit-code: '%s' is not a number in 0..255", optarg);
                break;
            case 's':
                o->lost_signal = cli_parse_signal(optarg);
                if (o->lost_signal <= 0)
                    return cli_usage(CMD, "--lost-signal: unknown signal '%s'", optarg);
                break;
            case 'k':
                if (cli_parse_duration(optarg, &o->kill_after_ms, 0))
                    return cli_usage(CMD, "--kill-after: '%s' is not a duration (e.g. 10s)", optarg);
                break;
            case 'v':
                o->verbose = 1;
                break;
            case 'c':
                o->shell_command = optarg;
                break;
            case 'o':
                /* flock: don't let COMMAND inherit the lock's descriptor.
                 * COMMAND never gets the node sockets anyway. */
                break;
            case 'x':
            case 'e':
                break;  /* flock's exclusive lock: the only kind there is */
            case OPT_FLOCK_SHARED:
                return cli_usage(CMD, "--shared: Redlock locks are exclusive only");
            case 'u':
                return cli_usage(CMD, "--unlock: a lock is released when COMMAND ends, or expires after its TTL");
            case 'F':
                return cli_usage(CMD, "--no-fork: redlock must outlive COMMAND to keep the lock extended");
            case OPT_FENCING:
                o->fencing = 1;
                break;
            case OPT_NO_WAKE:
                o->no_wake = 1;
                break;
            case OPT_FAIR:
                o->fair = 1;
                break;
            case ':':
                return cli_usage(CMD, "option '%s' needs a value", bad);
            case '?':
                if (optopt)
                    return cli_usage(CMD, "unknown option '-%c'", optopt);
                return cli_usage(CMD, "unknown option '%s'", bad);
            default:
                if (cli_common_option(&o->common, CMD, c, optarg) != 1)
                    return cli_usage(CMD, "unknown option '%s'", bad);
            }
        }
        if (pass == 0) {
            if (optind >= pass_argc)
                return cli_usage(CMD, o->shell_command ? "missing RESOURCE" : "missing RESOURCE and COMMAND");
            o->resource = pass_argv[optind];
            /* Second pass over what follows RESOURCE, RESOURCE standing in
             * for argv[0]. */
            pass_argv += optind;
            pass_argc -= optind;
        } else if (o->shell_command) {
            /* flock FILE -c COMMAND: one shell command line, nothing after */
            if (optind < pass_argc)
                return cli_usage(CMD, "-c gives the command: '%s' is extra", pass_argv[optind]);
            o->sh_argv[0] = "/bin/sh";
            o->sh_argv[1] = "-c";
            o->sh_argv[2] = (char *)o->shell_command;
            o->sh_argv[3] = NULL;
            o->argv = o->sh_argv;
        } else {
            if (optind >= pass_argc)
                return cli_usage(CMD, "missing COMMAND to run under the lock");
            o->argv = pass_argv + optind;
        }
    }
    return 0;
}

/* ---- the command ---- */

/* Runs the command with the lock held; returns the tool's exit code.
 * *passthrough is set when that code is the command's own status, which the
 * release may still override; *killed_by to the signal that killed it. */
static int run_command(run_opts *o, const fdset *inherited, int *passthrough, int *killed_by)
{
    *passthrough = 0;
    *killed_by = 0;
    char validity[32];
    snprintf(validity, sizeof validity, "%lld", (long long)redlock_lock_validity_ms(g_lock));
    char token[32];
    snprintf(token, sizeof token, "%llu", (unsigned long long)redlock_lock_fencing_token(g_lock));
    if (run_scrub_environment(o) || setenv("REDLOCK_RESOURCE", o->resource, 1) ||
        setenv("REDLOCK_VALIDITY_MS", validity, 1) ||
        (o->fencing ? setenv("REDLOCK_FENCING_TOKEN", token, 1) : unsetenv("REDLOCK_FENCING_TOKEN"))) {
        cli_err(CMD, "out of memory");
        return CLI_EXIT_SOFTWARE;
    }

    /* Interactive use: when redlock is a job of its own (a process group
     * leader, as a job-control shell makes it) in the terminal's
     * foreground, the command's process group gets the terminal, so that it
     * can read it and Ctrl-C reaches it once; redlock takes it back
     * afterwards. Run from a script, redlock shares the script's group and
     * keeps the terminal, so that Ctrl-C still reaches the script. */
    int tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty_fd >= 0 && (tcgetpgrp(tty_fd) != getpgrp() || getpgrp() != getpid())) {
        close(tty_fd);
        tty_fd = -1;
    }

    run_fds_cloexec_new(inherited);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC)) {
        cli_err(CMD, "pipe: %s", strerror(errno));
        if (tty_fd >= 0)
            close(tty_fd);
        return CLI_EXIT_SOFTWARE;
    }

    /* While the command runs, this thread takes the forwarded signals and
     * SIGCHLD with sigwaitinfo() rather than in a handler: they stay blocked
     * from before the fork, so none is lost or sent to a group that does not
     * exist yet, and waiting needs no async-signal tricks. */
    sigset_t block, waitset, oldmask;
    sigemptyset(&waitset);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&waitset, run_forwarded[i]);
    sigaddset(&waitset, SIGCHLD);
    sigaddset(&waitset, WAKE_SIGNAL);
    block = waitset;
    sigaddset(&block, SIGTTOU);
    sigprocmask(SIG_BLOCK, &block, &oldmask);

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        run_child_exec(o, pipefd[1], parent, tty_fd, &oldmask);
    close(pipefd[1]);
    if (pid < 0) {
        cli_err(CMD, "fork: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        close(pipefd[0]);
        if (tty_fd >= 0)
            close(tty_fd);
        return CLI_EXIT_SOFTWARE;
    }
    setpgid(pid, pid);  /* also here, so it is set whoever runs first */
    if (tty_fd >= 0)
        tcsetpgrp(tty_fd, pid);
    g_phase = PHASE_CHILD;

    int exec_errno = 0;
    ssize_t got;
    do
        got = read(pipefd[0], &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    if (got == (ssize_t)sizeof exec_errno) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        g_phase = PHASE_DONE;
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        run_take_terminal(tty_fd, getpgrp());
        if (tty_fd >= 0)
            close(tty_fd);
        cli_err(CMD, "cannot run '%s': %s", o->argv[0], strerror(exec_errno));
        return exec_errno == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
    }
    vlog(o, "running '%s' (pid %d) under '%s'", o->argv[0], (int)pid, o->resource);

    pthread_mutex_lock(&g_watch.mu);
    g_watch.pgid = pid;
    g_watch.main_thread = pthread_self();
    /* g_watch.o was set before the client existed: on_event may read it on another thread now */
    g_watch.lost = 0;
    g_watch.child_done = 0;
    pthread_mutex_unlock(&g_watch.mu);
    /* No bound of our own on the hold: the command runs as long as it
     * needs, up to the most auto-extension allows (about 49 days). */
    int arc = redlock_lock_auto_extend(g_lock, UINT32_MAX, on_lost, &g_watch);
    int have_auto = arc == 0;
    if (!have_auto) {
        /* Without extensions the lock would expire under the command. */
        char why[300];
        snprintf(why, sizeof why, "%s: %s", redlock_error_name(arc), redlock_lock_errmsg(g_lock));
        on_lost(g_lock, arc, why, &g_watch);
    }
    int hard_killed = 0;

    /* Wait for the command without reaping it (WNOWAIT): until it is reaped
     * its pid cannot be reused, so forwarding and on_lost's kill() can
     * never hit another process. */
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WSTOPPED | WNOWAIT | WNOHANG) < 0) {
            if (errno == EINTR)
                continue;
            cli_err(CMD, "waitid: %s", strerror(errno));
            break;
        }
        if (si.si_pid != pid) {
            /* No change yet: wait for a signal. A SIGCHLD sent after the
             * check above stays pending, so it is not missed. */
            siginfo_t info;
            int64_t kill_at = -1;
            pthread_mutex_lock(&g_watch.mu);
            if (g_watch.lost && !hard_killed && o->kill_after_ms > 0)
                kill_at = g_watch.lost_at_ms + o->kill_after_ms;
            pthread_mutex_unlock(&g_watch.mu);
            int sig;
            if (kill_at >= 0) {
                int64_t left = kill_at - cli_now_ms();
                if (left <= 0) {
                    char d[32];
                    cli_err(CMD, "command still running %s after %s; sending SIGKILL to process group %d",
                            cli_fmt_duration(o->kill_after_ms, d, sizeof d), cli_signal_name(o->lost_signal),
                            (int)pid);
                    kill(-pid, SIGKILL);
                    hard_killed = 1;
                    continue;
                }
                struct timespec ts = { .tv_sec = left / 1000, .tv_nsec = (long)(left % 1000) * 1000000 };
                sig = sigtimedwait(&waitset, &info, &ts);
            } else {
                sig = sigwaitinfo(&waitset, &info);
            }
            if (sig == WAKE_SIGNAL)
                continue;
            if (sig > 0 && sig != SIGCHLD) {
                g_signal = sig;
                kill(-pid, sig);
            }
            continue;
        }
        if (si.si_code != CLD_STOPPED)
            break;
        siginfo_t consume;
        memset(&consume, 0, sizeof consume);
        waitid(P_PID, (id_t)pid, &consume, WSTOPPED);
        if (tty_fd < 0) {
            /* Not a job-control stop of ours to relay; say why it hangs. */
            if (consume.si_status == SIGTTIN || consume.si_status == SIGTTOU)
                cli_err(CMD, "the command was stopped by %s: it used the terminal from outside the "
                             "foreground (see docs/cli.md, Signals and process groups)",
                        consume.si_status == SIGTTIN ? "SIGTTIN" : "SIGTTOU");
            continue;
        }
        /* Ctrl-Z: stop ourselves too, so that the shell sees the job
         * stopped; the lock is not extended meanwhile (see docs/cli.md). */
        run_take_terminal(tty_fd, getpgrp());
        raise(SIGTSTP);
        if (tcgetpgrp(tty_fd) == getpgrp())
            run_take_terminal(tty_fd, pid);
        kill(-pid, SIGCONT);
    }

    g_phase = PHASE_DONE;
    pthread_mutex_lock(&g_watch.mu);
    g_watch.child_done = 1;
    pthread_mutex_unlock(&g_watch.mu);
    /* Waits for an on_lost under way; after it, nothing extends the lock
     * and nothing can signal the command's pid, which is reaped next. */
    if (have_auto)
        redlock_lock_auto_extend_stop(g_lock);
    /* A wake-up sent by on_lost as the command ended may still be pending:
     * take it now, before the mask is restored. */
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, WAKE_SIGNAL);
    struct timespec zero = { 0, 0 };
    while (sigtimedwait(&wake, NULL, &zero) > 0)
        ;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    run_take_terminal(tty_fd, getpgrp());
    if (tty_fd >= 0)
        close(tty_fd);

    char how[96];
    run_describe_status(status, how, sizeof how);
    vlog(o, "command %s", how);
    pthread_mutex_lock(&g_watch.mu);
    int lost = g_watch.lost;
    pthread_mutex_unlock(&g_watch.mu);
    if (lost) {
        cli_err(CMD, "the command %s after the lock was lost (%s); exiting with %ld", how, g_watch.why,
                o->lost_code);
        return (int)o->lost_code;
    }
    *passthrough = 1;
    if (WIFSIGNALED(status))
        *killed_by = WTERMSIG(status);
    return run_status_code(status);
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    memset(&o, 0, sizeof o);
    cli_common_init(&o.common);
    o.conflict_code = CLI_EXIT_CONFLICT;
    o.lost_code = CLI_EXIT_LOST;
    o.lost_signal = SIGTERM;
    o.kill_after_ms = DEFAULT_KILL_AFTER_MS;

    int reraise = 0;
    int rc = parse_args(&o, argc, argv);
    if (!rc)
        rc = cli_common_resolve(&o.common, CMD, 1);
    if (rc) {
        cli_common_free(&o.common);
        return rc;
    }
    int64_t ttl = o.common.ttl_ms >= 0 ? o.common.ttl_ms : DEFAULT_TTL_MS;
    if (ttl < MIN_TTL_MS || ttl > (int64_t)REDLOCK_MAX_TTL_MS) {
        cli_common_free(&o.common);
        return cli_usage(CMD, "--ttl must be between 100ms and 1d");
    }
    rc = cli_nodes_check(&o.common, CMD, 1);
    if (rc) {
        cli_common_free(&o.common);
        return rc;
    }
    int64_t wait = o.common.wait_ms == -2 ? CLI_WAIT_FOREVER : o.common.wait_ms;
    if (o.nonblock)
        wait = 0;

    /* Our own state first: SIGCHLD must not be ignored (the command could
     * not be waited for), SIGPIPE must be (see docs/threading.md). */
    struct sigaction chld;
    memset(&chld, 0, sizeof chld);
    chld.sa_handler = on_sigchld;
    sigemptyset(&chld.sa_mask);
    chld.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &chld, NULL);
    chld.sa_handler = on_wake;
    sigaction(WAKE_SIGNAL, &chld, NULL);
    signal(SIGPIPE, SIG_IGN);
    fdset inherited;
    run_fds_snapshot(&inherited);

    redlock_options opts;
    cli_lib_options(&o.common, &opts);
    if (o.fencing)
        opts.flags |= REDLOCK_OPT_FENCING;
    if (o.no_wake)
        opts.flags |= REDLOCK_OPT_NO_WAKE;
    if (o.fair)
        opts.flags |= REDLOCK_OPT_FAIR;
    opts.on_event = on_event;
    opts.on_event_userdata = &g_watch;
    g_watch.o = &o;  /* for on_event's --verbose lines while waiting; before any thread of the client */
    redlock_client *client = NULL;
    char err[1024];
    rc = redlock_client_open(&client, (const char *const *)o.common.urls, o.common.n_urls, &opts, err, sizeof err);
    if (rc) {
        cli_err(CMD, "%s", err);
        rc = rc == REDLOCK_ENOMEM ? CLI_EXIT_SOFTWARE : CLI_EXIT_USAGE;
        goto out;
    }
    rc = redlock_lock_new(&g_lock, client, o.resource);
    if (rc) {
        cli_err(CMD, "resource '%.100s': %s", o.resource, redlock_strerror(rc));
        rc = rc == REDLOCK_ENOMEM ? CLI_EXIT_SOFTWARE : CLI_EXIT_USAGE;
        goto out;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(run_forwarded[i], &sa, NULL);

    char d1[32], d2[32];
    /* The retry policy is the library's own (its defaults for every lock),
     * not the tool's: shown so that a slow acquisition can be explained. */
    redlock_lock_options policy;
    memset(&policy, 0, sizeof policy);
    policy.version = REDLOCK_LOCK_OPTIONS_VERSION;
    if (redlock_lock_get_options(g_lock, &policy) != 0)
        policy.retry_delay_ms = policy.retry_jitter_ms = 0;
    vlog(&o, "acquiring '%s' (ttl %s, wait %s) on %zu nodes; retry delay %u ms + up to %u ms of jitter (the library's)%s%s",
         o.resource, cli_fmt_duration(ttl, d1, sizeof d1),
         wait == CLI_WAIT_FOREVER ? "forever" : cli_fmt_duration(wait, d2, sizeof d2), o.common.n_urls,
         (unsigned)policy.retry_delay_ms, (unsigned)policy.retry_jitter_ms,
         o.no_wake ? ", no wake-up" : ", cut short by a release", o.fair ? "; fair mode" : "");
    int64_t left = wait, started_ms = cli_now_ms();
    for (;;) {
        int64_t piece = wait == CLI_WAIT_FOREVER || left > WAIT_PIECE_MS ? WAIT_PIECE_MS : left;
        rc = redlock_lock_acquire(g_lock, (uint32_t)ttl, piece);
        if (rc == REDLOCK_ETIMEDOUT && (wait == CLI_WAIT_FOREVER || left > piece)) {
            if (wait != CLI_WAIT_FOREVER)
                left -= piece;
            continue;
        }
        break;
    }
    if (rc == 0 && g_signal) {
        /* A signal arrived during the attempt that succeeded. */
        redlock_release(g_lock);
        rc = REDLOCK_ECANCELED;
    }
    if (rc) {
        switch (rc) {
        case REDLOCK_ECANCELED:
            cli_err(CMD, "interrupted by %s while waiting for '%s'", cli_signal_name(g_signal), o.resource);
            rc = 128 + g_signal;
            reraise = g_signal;
            break;
        case REDLOCK_ENOTACQUIRED:
            cli_err(CMD, "'%s' is locked by another owner: %s", o.resource, redlock_lock_errmsg(g_lock));
            rc = (int)o.conflict_code;
            break;
        case REDLOCK_ETIMEDOUT:
            cli_err(CMD, "gave up waiting for '%s' after %s: %s", o.resource, cli_fmt_duration(wait, d1, sizeof d1),
                    redlock_lock_errmsg(g_lock));
            rc = (int)o.conflict_code;
            break;
        case REDLOCK_EINVAL:
            cli_err(CMD, "%s", redlock_lock_errmsg(g_lock));
            rc = CLI_EXIT_USAGE;
            break;
        case REDLOCK_ENOMEM:
            cli_err(CMD, "out of memory");
            rc = CLI_EXIT_SOFTWARE;
            break;
        default:
            cli_err(CMD, "cannot acquire '%s': %s: %s", o.resource, redlock_error_name(rc),
                    redlock_lock_errmsg(g_lock));
            rc = CLI_EXIT_UNAVAIL;
        }
        goto out;
    }
    vlog(&o, "acquired '%s' (validity %lld ms); getting the lock took %s", o.resource,
         (long long)redlock_lock_validity_ms(g_lock), cli_fmt_duration(cli_now_ms() - started_ms, d1, sizeof d1));

    int passthrough, killed_by;
    rc = run_command(&o, &inherited, &passthrough, &killed_by);
    int released = redlock_release(g_lock);
    if (passthrough && killed_by && killed_by == g_signal)
        reraise = killed_by;
    if (passthrough) {
        if (released == REDLOCK_ELOST) {
            cli_err(CMD, "the lock on '%s' was not held for the whole run: %s; exiting with %ld", o.resource,
                    redlock_lock_errmsg(g_lock), o.lost_code);
            rc = (int)o.lost_code;
            reraise = 0;
        } else if (released != 0) {
            cli_err(CMD, "release of '%s' not confirmed (it expires by itself): %s: %s", o.resource,
                    redlock_error_name(released), redlock_lock_errmsg(g_lock));
        } else {
            vlog(&o, "released '%s'", o.resource);
        }
    } else if (released == 0) {
        vlog(&o, "released '%s'", o.resource);
    }
out:
    /* The handler does nothing from now on: the handle goes away. */
    g_phase = PHASE_DONE;
    redlock_lock_free(g_lock);
    g_lock = NULL;
    redlock_client_free(client);
    free(inherited.fds);
    cli_common_free(&o.common);
    if (reraise == SIGINT || reraise == SIGTERM || reraise == SIGHUP || reraise == SIGQUIT) {
        /* We were interrupted and the command died of it too: die of the
         * same signal, now that the lock is released, so that a calling
         * shell script stops as well instead of carrying on (a shell only
         * does when its child was killed by the signal, not on exit 130). */
        fflush(NULL);
        signal(reraise, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, reraise);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(reraise);
    }
    return rc;
}
