/* SPDX-License-Identifier: BSD-3-Clause */
/* run_watch.c: what the library tells 'redlock run': its events, for -v
 * and to report extension trouble once, and the loss of the lock while
 * COMMAND runs.
 *
 * The library's auto-extend thread keeps the lock alive every TTL/3 and
 * calls on_lost when it is at risk (not extended, its validity ending
 * within the library's default margin, max(TTL/10, 2 x node timeout)) and
 * when it is gone. The first of them sends the lost signal to COMMAND's
 * group at once and wakes the main thread with RUN_WAKE_SIGNAL, which sends
 * SIGKILL after --kill-after, or sooner: at the latest halfway through the
 * validity left at the notice, so that COMMAND is dead before the lock's
 * validity ends (on_lost must be quick: the library's thread serves other
 * locks too). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define CMD (o->cmd)  /* "run", or "elect" for the parts it shares */

typedef struct watch {
    pthread_mutex_t mu;
    int child_done;            /* set by main before reaping: no kill() after this */
    int lost;                  /* set by on_lost: at risk, or lost */
    int64_t lost_at_ms;
    int64_t valid_end_ms;      /* the validity's end as last known (monotonic ms) */
    int64_t kill_at_ms;        /* SIGKILL due (with --kill-after), set with lost */
    int kill_early;            /* kill_at_ms comes from the validity, not --kill-after */
    int killed;                /* SIGKILL sent (by run_watch_kill_at) */
    char why[2200];
    pid_t pgid;
    pthread_t main_thread;
    const run_opts *o;
    int ext_failures;          /* auto-extension failures in a row (its thread only) */
} watch;

static watch g_watch = { .mu = PTHREAD_MUTEX_INITIALIZER };

void run_vlog(const run_opts *o, const char *fmt, ...)
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

/* At risk (REDLOCK_EATRISK) or lost: the first notice stops COMMAND. A
 * later loss after an at-risk notice only updates why. */
static void on_lost(redlock_lock *lock, int code, const char *message, void *userdata)
{
    watch *w = userdata;
    const run_opts *o = w->o;
    int at_risk = code == REDLOCK_EATRISK;
    int64_t left = at_risk ? redlock_lock_validity_ms(lock) : 0;
    pthread_mutex_lock(&w->mu);
    if (!w->lost) {
        w->lost = 1;
        w->lost_at_ms = cli_now_ms();
        if (at_risk)
            w->valid_end_ms = w->lost_at_ms + (left > 0 ? left : 0);
        snprintf(w->why, sizeof w->why, "%s: %s", redlock_error_name(code),
                 message && *message ? message : redlock_strerror(code));
        /* SIGKILL after --kill-after, but at the latest halfway through
         * the validity left (right away if none is), so that COMMAND is
         * dead before the lock can be another owner's. */
        int64_t rest = w->valid_end_ms - w->lost_at_ms;
        int64_t early = w->lost_at_ms + (rest > 0 ? rest / 2 : 0);
        w->kill_at_ms = w->lost_at_ms + o->kill_after_ms;
        w->kill_early = early < w->kill_at_ms;
        if (w->kill_early)
            w->kill_at_ms = early;
        if (!w->child_done) {
            char d[32];
            cli_fmt_duration(w->kill_at_ms - w->lost_at_ms, d, sizeof d);
            cli_err(CMD, "lock '%s' %s while the command ran (%s); sending %s to its process group %d%s%s%s",
                    o->resource, at_risk ? "at risk" : "lost", w->why, cli_signal_name(o->lost_signal),
                    (int)w->pgid, o->kill_after_ms > 0 ? ", SIGKILL in " : "", o->kill_after_ms > 0 ? d : "",
                    o->kill_after_ms > 0 && w->kill_early ? ", before the lock's validity ends" : "");
            kill(-w->pgid, o->lost_signal);
        }
        pthread_kill(w->main_thread, RUN_WAKE_SIGNAL);
    } else if (!at_risk && !strncmp(w->why, "REDLOCK_EATRISK", 15)) {
        snprintf(w->why, sizeof w->why, "%s: %s", redlock_error_name(code),
                 message && *message ? message : redlock_strerror(code));
    }
    pthread_mutex_unlock(&w->mu);
}

/* --verbose lines about waking up: a release woke the wait, or a node's
 * listener changed state. Nodes are numbered from 0, as everywhere. */
static void log_wake(const run_opts *o, const redlock_event *ev)
{
    if (ev->type == REDLOCK_EVENT_WOKEN) {
        run_vlog(o, "woken by a release of '%s' (node %zu)", o->resource, ev->node);
        return;
    }
    static const char *const names[] = { "off", "connecting", "ready", "down", "refused" };
    int st = ev->listener_state;
    run_vlog(o, "wake-up listener on node %zu: %s%s%s", ev->node,
             st >= 0 && st < (int)(sizeof names / sizeof names[0]) ? names[st] : "unknown",
             *ev->message ? ": " : "", ev->message);
}

/* The metrics hook, for --verbose and for reporting extension trouble once
 * (the library retries on its own while the validity lasts). */
static void on_event(const redlock_event *ev, void *userdata)
{
    watch *w = userdata;
    const run_opts *o = w->o;
    if (!o)
        return;
    if (ev->type == REDLOCK_EVENT_WOKEN || ev->type == REDLOCK_EVENT_LISTENER) {
        log_wake(o, ev);
        return;
    }
    if (ev->type == REDLOCK_EVENT_ACQUIRE_FAILED && ev->code != REDLOCK_ENOTACQUIRED &&
        ev->code != REDLOCK_ECANCELED) {
        /* Not a busy lock: nodes down or failing. The wait goes on until
         * --wait runs out, or ends once no quorum has been reachable for
         * the library's bound (REDLOCK_EUNREACHABLE). */
        run_vlog(o, "attempt %u to acquire '%s' failed with nodes down or failing (%d of %zu granted, %d needed): %s: %s",
                 (unsigned)ev->attempt, o->resource, ev->nodes_ok, ev->n_nodes, ev->quorum,
                 redlock_error_name(ev->code), ev->message);
        return;
    }
    if (!ev->automatic)
        return;
    if (ev->type == REDLOCK_EVENT_EXTENDED) {
        pthread_mutex_lock(&w->mu);
        w->valid_end_ms = cli_now_ms() + ev->validity_ms;
        pthread_mutex_unlock(&w->mu);
        if (w->ext_failures)
            cli_err(CMD, "extended '%s' again after %d failed attempt%s", o->resource, w->ext_failures,
                    w->ext_failures == 1 ? "" : "s");
        w->ext_failures = 0;
        run_vlog(o, "extended '%s' (validity %lld ms)", o->resource, (long long)ev->validity_ms);
    } else if (ev->type == REDLOCK_EVENT_EXTEND_FAILED) {
        if (w->ext_failures++ == 0)
            cli_err(CMD, "could not extend '%s' (will retry while its validity lasts): %s: %s", o->resource,
                    redlock_error_name(ev->code), ev->message);
    }
}

void run_watch_init(const run_opts *o, redlock_options *opts)
{
    opts->on_event = on_event;
    opts->on_event_userdata = &g_watch;
    g_watch.o = o;  /* for on_event's --verbose lines while waiting; before any thread of the client */
}

int run_watch_start(redlock_lock *lock, pid_t pgid)
{
    pthread_mutex_lock(&g_watch.mu);
    g_watch.pgid = pgid;
    g_watch.main_thread = pthread_self();
    /* g_watch.o was set before the client existed: on_event may read it on another thread now */
    g_watch.lost = 0;
    g_watch.killed = 0;
    g_watch.child_done = 0;
    g_watch.valid_end_ms = cli_now_ms() + redlock_lock_validity_ms(lock);
    pthread_mutex_unlock(&g_watch.mu);
    /* No bound of our own on the hold: the command runs as long as it
     * needs, up to the most auto-extension allows (about 49 days). The
     * at-risk notice comes at the library's default margin. */
    int arc = redlock_lock_auto_extend(lock, UINT32_MAX, REDLOCK_AT_RISK_DEFAULT, on_lost, &g_watch, NULL);
    if (arc == 0)
        return 1;
    /* Without extensions the lock would expire under the command. */
    char why[300];
    snprintf(why, sizeof why, "%s: %s", redlock_error_name(arc), redlock_lock_errmsg(lock));
    on_lost(lock, arc, why, &g_watch);
    return 0;
}

int64_t run_watch_kill_at(const run_opts *o)
{
    int64_t kill_at = -1;
    pthread_mutex_lock(&g_watch.mu);
    if (g_watch.lost && o->kill_after_ms > 0) {
        kill_at = g_watch.kill_at_ms;
        if (g_watch.kill_early && !g_watch.killed && kill_at <= cli_now_ms() && !g_watch.child_done) {
            /* Sooner than --kill-after: say so here, and send it, since the
             * caller's message would name --kill-after. */
            cli_err(CMD, "command still running %lld ms after %s, and the lock's validity ends in "
                         "about %lld ms; sending SIGKILL to process group %d",
                    (long long)(cli_now_ms() - g_watch.lost_at_ms), cli_signal_name(o->lost_signal),
                    (long long)(g_watch.valid_end_ms - cli_now_ms()), (int)g_watch.pgid);
            kill(-g_watch.pgid, SIGKILL);
            g_watch.killed = 1;
        }
        if (g_watch.killed)
            kill_at = -1;   /* sent: the caller waits for COMMAND to die */
    }
    pthread_mutex_unlock(&g_watch.mu);
    return kill_at;
}

void run_watch_stop(redlock_lock *lock, int have_auto)
{
    pthread_mutex_lock(&g_watch.mu);
    g_watch.child_done = 1;
    pthread_mutex_unlock(&g_watch.mu);
    /* Waits for an on_lost under way; after it, nothing extends the lock
     * and nothing can signal the command's pid, which is reaped next. */
    if (have_auto)
        redlock_lock_auto_extend_stop(lock);
    /* A wake-up sent by on_lost as the command ended may still be pending:
     * take it now, before the mask is restored. */
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, RUN_WAKE_SIGNAL);
    struct timespec zero = { 0, 0 };
    while (sigtimedwait(&wake, NULL, &zero) > 0)
        ;
}

int run_watch_lost(char *why, size_t size)
{
    pthread_mutex_lock(&g_watch.mu);
    int lost = g_watch.lost;
    snprintf(why, size, "%s", g_watch.why);
    pthread_mutex_unlock(&g_watch.mu);
    return lost;
}
