/* SPDX-License-Identifier: BSD-3-Clause */
/* run_child.c: COMMAND's side of 'redlock run': the descriptors and the
 * environment it inherits (no node sockets, no node passwords), how it is
 * started in its own process group, and how its end is read. */
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

#include "cli.h"
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
void run_child_exec(const run_opts *o, int err_fd, pid_t parent, int tty_fd, const sigset_t *oldmask)
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
int run_scrub_environment(const run_opts *o)
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
