/* SPDX-License-Identifier: BSD-3-Clause */
/* run_signals.c: the signal state of 'redlock run'. While the lock is being
 * acquired, INT/TERM/HUP/QUIT cancel the acquisition (redlock_lock_cancel is
 * async-signal-safe); while COMMAND runs, the signals are blocked and taken
 * with sigwaitinfo() by supervise_child (run_child.c); at the end redlock
 * dies of the signal that stopped it, once the lock is released. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "run.h"

const int run_forwarded[N_FORWARDED] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

volatile sig_atomic_t run_phase = RUN_PHASE_ACQUIRE;
volatile sig_atomic_t run_signal;
static redlock_lock *volatile caught_lock;

/* Runs only while the lock is being acquired: later the signals are blocked
 * and taken with sigwaitinfo() (see supervise_child). */
static void on_signal(int sig)
{
    /* USR1/USR2 mean nothing to us before the command exists. */
    if (run_phase == RUN_PHASE_ACQUIRE && sig != SIGUSR1 && sig != SIGUSR2) {
        run_signal = sig;
        redlock_lock_cancel(caught_lock);  /* async-signal-safe and sticky */
    }
}

static void on_wake(int sig)
{
    (void)sig;  /* RUN_WAKE_SIGNAL is taken by sigwaitinfo; this only keeps a stray one harmless */
}

static void on_sigchld(int sig)
{
    (void)sig;  /* a handler, so that SIGCHLD is never discarded as ignored */
}

void run_signals_init(void)
{
    /* SIGCHLD must not be ignored (the command could not be waited for),
     * SIGPIPE must be (see docs/threading.md). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = on_wake;
    sigaction(RUN_WAKE_SIGNAL, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void run_signals_catch(redlock_lock *lock)
{
    caught_lock = lock;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(run_forwarded[i], &sa, NULL);
}

void run_signals_forget(void)
{
    run_phase = RUN_PHASE_DONE;
    caught_lock = NULL;
}

void run_die_of(int sig)
{
    if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT)
        return;
    /* We were interrupted and the command died of it too: die of the same
     * signal, now that the lock is released, so that a calling shell script
     * stops as well instead of carrying on (a shell only does when its child
     * was killed by the signal, not on exit 130). */
    fflush(NULL);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}
