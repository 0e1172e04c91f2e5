/* SPDX-License-Identifier: BSD-3-Clause */
/* run_child.c: COMMAND's side of 'redlock run': the descriptors and the
 * environment it inherits (no node sockets, no node passwords), how it is
 * started in its own process group, and how it is supervised until it ends
 * (signals forwarded, Ctrl-Z relayed, SIGKILL after a loss). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "run.h"

/* ---- descriptors: the command gets what we were given, not our sockets ---- */

void run_fds_snapshot(fdset *s)
{
    s->fds = NULL;
    s->n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long fd;
        if (cli_parse_long(e->d_name, 0, 1 << 30, &fd) || fd == dirfd(d))
            continue;
        int *grown = realloc(s->fds, (s->n + 1) * sizeof *grown);
        if (!grown)
            break;
        s->fds = grown;
        s->fds[s->n++] = (int)fd;
    }
    closedir(d);
}

/* Marks close-on-exec every descriptor opened since the snapshot: the
 * library's node sockets must not leak into the command (see
 * docs/threading.md, fork), while descriptors the user handed to redlock
 * (e.g. 3>file) still reach it. */
void run_fds_cloexec_new(const fdset *before)
{
    fdset now;
    run_fds_snapshot(&now);
    for (size_t i = 0; i < now.n; i++) {
        int known = 0;
        for (size_t j = 0; j < before->n && !known; j++)
            known = before->fds[j] == now.fds[i];
        if (!known && now.fds[i] > 2) {
            int fl = fcntl(now.fds[i], F_GETFD);
            if (fl >= 0)
                fcntl(now.fds[i], F_SETFD, fl | FD_CLOEXEC);
        }
    }
    free(now.fds);
}

/* ---- starting and ending COMMAND ---- */

/* In the child, between fork and exec. The process had one thread when it
 * forked (auto-extension starts later), so execvp's allocations are safe. */
static void run_child_exec(const run_opts *o, int err_fd, pid_t parent, int tty_fd, const sigset_t *oldmask)
{
    setpgid(0, 0);
    if (tty_fd >= 0)
        tcsetpgrp(tty_fd, getpid());  /* SIGTTOU is blocked here */
    /* If redlock dies (even by SIGKILL), nobody extends the lock any more:
     * the command must stop too. */
    prctl(PR_SET_PDEATHSIG, o->lost_signal);
    if (getppid() != parent)
        _exit(CLI_EXIT_LOST);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(run_forwarded[i], &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);  /* ignored by redlock, not by the command */
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    execvp(o->argv[0], o->argv);
    int e = errno;
    ssize_t w = write(err_fd, &e, sizeof e);
    (void)w;
    _exit(e == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

void run_take_terminal(int tty_fd, pid_t pgid)
{
    if (tty_fd < 0)
        return;
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(tty_fd, pgid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* 1 if an environment entry ("NAME=value") carries a node's secret: its
 * value is a node's password (raw or decoded), or holds a node URL's
 * userinfo ("user:password@"), as a copy of the node list would. */
static int carries_secret(const run_opts *o, const char *entry)
{
    const char *value = strchr(entry, '=');
    if (!value)
        return 0;
    value++;
    for (size_t i = 0; i < o->common.n_urls; i++) {
        const char *url = o->common.urls[i];
        const char *sep = strstr(url, "://");
        const char *at = sep ? strrchr(sep + 3, '@') : NULL;
        if (!at)
            continue;
        const char *userinfo = sep + 3;
        size_t ulen = (size_t)(at + 1 - userinfo); /* with the '@' */
        if (ulen > 1 && memmem(value, strlen(value), userinfo, ulen))
            return 1;
        const char *colon = memchr(userinfo, ':', ulen - 1);
        if (colon && (size_t)(at - colon - 1) == strlen(value) && !memcmp(colon + 1, value, strlen(value)) &&
            *value)
            return 1;
        rl_endpoint ep;
        char err[64];
        int same = 0;
        if (rl_endpoint_parse(&ep, url, err, sizeof err) == 0 && ep.password && *value)
            same = !strcmp(ep.password, value);
        rl_endpoint_clear(&ep);
        if (same)
            return 1;
    }
    return 0;
}

/* COMMAND gets only what it needs from redlock: REDLOCK_RESOURCE,
 * REDLOCK_VALIDITY_MS and, with --fencing, REDLOCK_FENCING_TOKEN. What
 * configured redlock (REDLOCK_NODES, REDLOCK_CONFIG) and any variable that
 * carries a node's password are taken out of the environment it inherits:
 * the command is not trusted with the nodes (docs/cli.md). Done in redlock
 * itself, which has read them already, before the fork. */
static int run_scrub_environment(const run_opts *o)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **names = calloc(n + 1, sizeof *names);
    if (!names)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        const char *eq = strchr(e, '=');
        if (!eq)
            continue;
        if (!strncmp(e, "REDLOCK_NODES=", 14) || !strncmp(e, "REDLOCK_CONFIG=", 15) || carries_secret(o, e))
            if (!(names[k++] = strndup(e, (size_t)(eq - e))))
                k--;
    }
    for (size_t i = 0; i < k; i++) {
        unsetenv(names[i]);
        free(names[i]);
    }
    free(names);
    return 0;
}

/* ---- running COMMAND ---- */

#define CMD (o->cmd)  /* "run", or "elect" for the parts it shares */

/* COMMAND's environment: REDLOCK_RESOURCE, REDLOCK_VALIDITY_MS and, with
 * --fencing, REDLOCK_FENCING_TOKEN; nothing that reaches a node. */
static int child_environment(const run_opts *o, redlock_lock *lock)
{
    char validity[32], token[32];
    snprintf(validity, sizeof validity, "%lld", (long long)redlock_lock_validity_ms(lock));
    snprintf(token, sizeof token, "%llu", (unsigned long long)redlock_lock_fencing_token(lock));
    if (run_scrub_environment(o) || setenv("REDLOCK_RESOURCE", o->resource, 1) ||
        setenv("REDLOCK_VALIDITY_MS", validity, 1) ||
        (o->fencing ? setenv("REDLOCK_FENCING_TOKEN", token, 1) : unsetenv("REDLOCK_FENCING_TOKEN"))) {
        cli_err(CMD, "out of memory");
        return -1;
    }
    return 0;
}

/* Interactive use: when redlock is a job of its own (a process group
 * leader, as a job-control shell makes it) in the terminal's foreground,
 * the command's process group gets the terminal, so that it can read it and
 * Ctrl-C reaches it once; redlock takes it back afterwards. Run from a
 * script, redlock shares the script's group and keeps the terminal, so that
 * Ctrl-C still reaches the script. The terminal to hand over, or -1. */
static int foreground_terminal(void)
{
    int tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty_fd >= 0 && (tcgetpgrp(tty_fd) != getpgrp() || getpgrp() != getpid())) {
        close(tty_fd);
        tty_fd = -1;
    }
    return tty_fd;
}

typedef struct child {
    pid_t pid;
    int tty_fd;                /* the terminal handed to COMMAND's group, or -1 */
    sigset_t waitset;          /* taken with sigwaitinfo() while COMMAND runs */
    sigset_t oldmask;          /* restored once COMMAND has been reaped */
} child;

/* Whether exec succeeded: the pipe closes on exec, or carries its errno.
 * 0, or 126/127 once a child that could not exec has been reaped. */
static int exec_result(const run_opts *o, child *ch, int fd)
{
    int exec_errno = 0;
    ssize_t got;
    do
        got = read(fd, &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got != (ssize_t)sizeof exec_errno)
        return 0;
    int st;
    while (waitpid(ch->pid, &st, 0) < 0 && errno == EINTR)
        ;
    run_phase = RUN_PHASE_DONE;
    sigprocmask(SIG_SETMASK, &ch->oldmask, NULL);
    run_take_terminal(ch->tty_fd, getpgrp());
    cli_err(CMD, "cannot run '%s': %s", o->argv[0], strerror(exec_errno));
    return exec_errno == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
}

/* Forks and execs COMMAND in its own process group: 0, or the exit code of
 * a failure, already reported. */
static int start_child(const run_opts *o, const fdset *inherited, child *ch)
{
    run_fds_cloexec_new(inherited);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC)) {
        cli_err(CMD, "pipe: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    /* While the command runs, this thread takes the forwarded signals and
     * SIGCHLD with sigwaitinfo() rather than in a handler: they stay blocked
     * from before the fork, so none is lost or sent to a group that does not
     * exist yet, and waiting needs no async-signal tricks. */
    sigemptyset(&ch->waitset);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&ch->waitset, run_forwarded[i]);
    sigaddset(&ch->waitset, SIGCHLD);
    sigaddset(&ch->waitset, RUN_WAKE_SIGNAL);
    sigset_t block = ch->waitset;
    sigaddset(&block, SIGTTOU);
    sigprocmask(SIG_BLOCK, &block, &ch->oldmask);

    pid_t parent = getpid();
    ch->pid = fork();
    if (ch->pid == 0)
        run_child_exec(o, pipefd[1], parent, ch->tty_fd, &ch->oldmask);
    close(pipefd[1]);
    if (ch->pid < 0) {
        cli_err(CMD, "fork: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &ch->oldmask, NULL);
        close(pipefd[0]);
        return CLI_EXIT_SOFTWARE;
    }
    setpgid(ch->pid, ch->pid);  /* also here, so it is set whoever runs first */
    if (ch->tty_fd >= 0)
        tcsetpgrp(ch->tty_fd, ch->pid);
    run_phase = RUN_PHASE_CHILD;
    return exec_result(o, ch, pipefd[0]);
}

/* COMMAND was stopped; waitid(WNOWAIT) saw it, this takes the stop. On
 * Ctrl-Z redlock stops too, so that the shell sees the job stopped; the
 * lock is not extended meanwhile (see docs/cli.md). */
static void relay_stop(const run_opts *o, pid_t pid, int tty_fd)
{
    siginfo_t consume;
    memset(&consume, 0, sizeof consume);
    waitid(P_PID, (id_t)pid, &consume, WSTOPPED);
    if (tty_fd < 0) {
        /* Not a job-control stop of ours to relay; say why it hangs. */
        if (consume.si_status == SIGTTIN || consume.si_status == SIGTTOU)
            cli_err(CMD, "the command was stopped by %s: it used the terminal from outside the "
                         "foreground (see docs/cli.md, Signals and process groups)",
                    consume.si_status == SIGTTIN ? "SIGTTIN" : "SIGTTOU");
        return;
    }
    run_take_terminal(tty_fd, getpgrp());
    raise(SIGTSTP);
    if (tcgetpgrp(tty_fd) == getpgrp())
        run_take_terminal(tty_fd, pid);
    kill(-pid, SIGCONT);
}

/* No change of COMMAND yet: waits for a signal and forwards it to the
 * group, or sends SIGKILL when --kill-after has passed since a loss. A
 * SIGCHLD sent after the check stays pending, so it is not missed. */
static void wait_for_signal(const run_opts *o, pid_t pid, const sigset_t *waitset, int *hard_killed)
{
    siginfo_t info;
    int64_t kill_at = *hard_killed ? -1 : run_watch_kill_at(o);
    int sig;
    if (kill_at >= 0) {
        int64_t left = kill_at - cli_now_ms();
        if (left <= 0) {
            char d[32];
            cli_err(CMD, "command still running %s after %s; sending SIGKILL to process group %d",
                    cli_fmt_duration(o->kill_after_ms, d, sizeof d), cli_signal_name(o->lost_signal), (int)pid);
            kill(-pid, SIGKILL);
            *hard_killed = 1;
            return;
        }
        struct timespec ts = { .tv_sec = left / 1000, .tv_nsec = (long)(left % 1000) * 1000000 };
        sig = sigtimedwait(waitset, &info, &ts);
    } else {
        sig = sigwaitinfo(waitset, &info);
    }
    if (sig > 0 && sig != SIGCHLD && sig != RUN_WAKE_SIGNAL) {
        run_signal = sig;
        kill(-pid, sig);
    }
}

void supervise_child(const run_opts *o, pid_t pid, int tty_fd, const sigset_t *waitset)
{
    /* Waits without reaping (WNOWAIT): until COMMAND is reaped its pid
     * cannot be reused, so forwarding and on_lost's kill() can never hit
     * another process. */
    int hard_killed = 0;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WSTOPPED | WNOWAIT | WNOHANG) < 0) {
            if (errno == EINTR)
                continue;
            cli_err(CMD, "waitid: %s", strerror(errno));
            return;
        }
        if (si.si_pid != pid)
            wait_for_signal(o, pid, waitset, &hard_killed);
        else if (si.si_code == CLD_STOPPED)
            relay_stop(o, pid, tty_fd);
        else
            return;
    }
}

int run_command(const run_opts *o, redlock_lock *lock, const fdset *inherited, int *passthrough, int *killed_by)
{
    *passthrough = 0;
    *killed_by = 0;
    if (child_environment(o, lock))
        return CLI_EXIT_SOFTWARE;
    child ch;
    memset(&ch, 0, sizeof ch);
    ch.tty_fd = foreground_terminal();
    int rc = start_child(o, inherited, &ch);
    if (rc) {
        if (ch.tty_fd >= 0)
            close(ch.tty_fd);
        return rc;
    }
    run_vlog(o, "running '%s' (pid %d) under '%s'", o->argv[0], (int)ch.pid, o->resource);
    int have_auto = run_watch_start(lock, ch.pid);
    supervise_child(o, ch.pid, ch.tty_fd, &ch.waitset);

    run_phase = RUN_PHASE_DONE;
    run_watch_stop(lock, have_auto);
    int status = 0;
    while (waitpid(ch.pid, &status, 0) < 0 && errno == EINTR)
        ;
    sigprocmask(SIG_SETMASK, &ch.oldmask, NULL);
    run_take_terminal(ch.tty_fd, getpgrp());
    if (ch.tty_fd >= 0)
        close(ch.tty_fd);
    return run_command_exit(o, status, passthrough, killed_by);
}
