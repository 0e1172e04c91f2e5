/* SPDX-License-Identifier: BSD-3-Clause */
/* watch.c: auto-extension. One thread per client, started by the first
 * redlock_lock_auto_extend, keeps a list of locks and extends each one when
 * it is due (every TTL/3), one at a time, each under its lock's mutex. It
 * tells the owner about a loss through the lock's redlock_lost_fn, and
 * stops with the client. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

void rl_watch_init(rl_watch *w)
{
    pthread_condattr_t ca;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);  /* the clock of rl_now_us */
    pthread_cond_init(&w->wake, &ca);
    pthread_cond_init(&w->idle, &ca);
    pthread_condattr_destroy(&ca);
    w->started = w->stop = 0;
    w->head = w->current = NULL;
}

void rl_watch_destroy(rl_watch *w)
{
    pthread_mutex_lock(&w->mu);
    int started = w->started;
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    /* In a forked child the thread does not exist: nothing to join. */
    if (started && w->pid == getpid()) {
        /* No lock is left (each holds a reference), so the thread is idle. */
        if (pthread_equal(pthread_self(), w->thread))
            pthread_detach(w->thread);  /* freed from its own callback: documented as not allowed */
        else
            pthread_join(w->thread, NULL);
    }
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->idle);
    pthread_mutex_destroy(&w->mu);
}

static void unlink_lock(rl_watch *w, redlock_lock *l)
{
    if (l->ae.prev)
        l->ae.prev->ae.next = l->ae.next;
    else
        w->head = l->ae.next;
    if (l->ae.next)
        l->ae.next->ae.prev = l->ae.prev;
    l->ae.next = l->ae.prev = NULL;
    l->ae.on = 0;
}

/* A userdata_free call to make once the watch mutex is let go. */
typedef struct hook_free {
    void (*fn)(void *userdata);
    void *userdata;
} hook_free;

/* Under w->mu, with no call of the hook's on_lost to come except one
 * running on this thread: detaches the lock's hook and returns the free to
 * call after unlocking. A hook whose on_lost is running (it ended its own
 * hook) is freed by the thread once on_lost returns. */
static hook_free detach_hook(redlock_lock *l)
{
    hook_free f = { l->ae.userdata_free, l->ae.userdata };
    l->ae.fn = NULL;
    l->ae.userdata = NULL;
    l->ae.userdata_free = NULL;
    if (l->ae.running) {
        l->ae.running = 0;
        l->ae.free_after = f.fn;
        l->ae.free_after_userdata = f.userdata;
        f.fn = NULL;
    }
    return f;
}

static void run_free(hook_free f)
{
    if (f.fn)
        f.fn(f.userdata);
}

/* One due lock, its mutex taken here: extends it, or finds it lost. Returns
 * 1 when the lock leaves the list; *fire then says whether to tell the owner
 * (code and msg). *next_due is when to come back otherwise. */
static int step(redlock_lock *l, int64_t *next_due, int *fire, int *code, char *msg, size_t msgsize)
{
    int done = 0;
    *fire = 0;
    pthread_mutex_lock(&l->mu);
    int state = atomic_load(&l->state);
    int64_t now = rl_now_us();
    int64_t valid_until = atomic_load(&l->valid_until_us);
    if (state == LOCK_IDLE) {
        done = 1;                                  /* released meanwhile */
    } else if (state == LOCK_LOST) {
        *fire = done = 1;                          /* the owner's own extend found it lost */
        *code = l->lost_code;
        rl_fmt(msg, msgsize, "%s", l->lost_msg);
    } else if (valid_until <= now) {
        *fire = done = 1;
        if (l->ae.limited) {
            *code = REDLOCK_ELIMIT;
            rl_fmt(msg, msgsize, "lock '%s' reached its hold bound and its validity ran out", l->resource);
        } else {
            *code = REDLOCK_EEXPIRED;
            rl_fmt(msg, msgsize, "the validity of lock '%s' ran out before an extension succeeded%s%s", l->resource,
                   l->ae.msg[0] ? "; last try: " : "", l->ae.msg);
        }
        rl_mark_lost(l, *code, msg, 1);
    } else if (l->ae.limited) {
        *next_due = valid_until;                   /* only the end is left to see */
    } else {
        uint32_t ttl = l->ttl_ms;
        int64_t left_ms = (l->ae.until_us - now) / 1000;
        int last = 0;
        if (left_ms < (int64_t)ttl) {
            /* The bound cuts this extension short; a too short one is no use. */
            if (left_ms <= 0 || rl_drift_us(l, (uint32_t)left_ms) >= left_ms * 1000 ||
                now + left_ms * 1000 - rl_drift_us(l, (uint32_t)left_ms) <= valid_until) {
                l->ae.limited = 1;
                *next_due = valid_until;
                pthread_mutex_unlock(&l->mu);
                return 0;
            }
            ttl = (uint32_t)left_ms;
            last = 1;
        }
        int rc = rl_extend_locked(l, ttl, 1, l->ae.msg, sizeof l->ae.msg);
        now = rl_now_us();
        if (rc == 0) {
            l->ae.msg[0] = '\0';
            l->ae.limited = last;
            *next_due = last ? atomic_load(&l->valid_until_us) : now + rl_policy_extend_interval_us(l->ttl_ms);
        } else if (rc == REDLOCK_ELOST || rc == REDLOCK_EEXPIRED) {
            if (rc == REDLOCK_EEXPIRED)
                rl_mark_lost(l, rc, l->ae.msg, 1);     /* ELOST was marked by the extension */
            *fire = done = 1;
            *code = rc;
            rl_fmt(msg, msgsize, "%s", l->ae.msg);
        } else if (rc == REDLOCK_ELIMIT) {
            l->ae.limited = 1;                     /* the client's max_hold_ms / max_extensions */
            *next_due = valid_until;
        } else {
            /* No quorum, I/O, server errors: try again soon, while validity is left. */
            int64_t left = valid_until - now;
            int64_t retry = (int64_t)l->ttl_ms * 1000 / 10;
            if (retry > left / 2)
                retry = left / 2;
            if (retry < RL_POLICY_EXTEND_RETRY_MIN_US)
                retry = RL_POLICY_EXTEND_RETRY_MIN_US;
            *next_due = now + retry < valid_until ? now + retry : valid_until;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return done;
}

static void *watch_main(void *arg)
{
    redlock_client *c = arg;
    rl_watch *w = &c->watch;
    char msg[RL_MSG_MAX];
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        redlock_lock *due = NULL;
        for (redlock_lock *l = w->head; l; l = l->ae.next)
            if (!due || l->ae.due_us < due->ae.due_us)
                due = l;
        if (!due) {
            pthread_cond_wait(&w->wake, &w->mu);
            continue;
        }
        int64_t now = rl_now_us();
        if (due->ae.due_us > now) {
            struct timespec ts = { (time_t)(due->ae.due_us / 1000000), (long)(due->ae.due_us % 1000000) * 1000 };
            pthread_cond_timedwait(&w->wake, &w->mu, &ts);
            continue;
        }
        w->current = due;
        pthread_mutex_unlock(&w->mu);
        int64_t next_due = 0;
        int fire = 0, code = 0;
        int done = step(due, &next_due, &fire, &code, msg, sizeof msg);
        pthread_mutex_lock(&w->mu);
        redlock_lost_fn fn = due->ae.fn;
        void *userdata = due->ae.userdata;
        if (due->ae.on) {
            if (done)
                unlink_lock(w, due);
            else
                due->ae.due_us = next_due;
        }
        if (fire && fn) {
            /* current stays set: the lock cannot be freed under the callback. */
            due->ae.running = 1;
            pthread_mutex_unlock(&w->mu);
            fn(due, code, msg, userdata);
            pthread_mutex_lock(&w->mu);
            due->ae.running = 0;
            hook_free f = { due->ae.free_after, due->ae.free_after_userdata };
            due->ae.free_after = NULL;
            if (f.fn) {
                pthread_mutex_unlock(&w->mu);
                run_free(f);
                pthread_mutex_lock(&w->mu);
            }
        }
        w->current = NULL;
        pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int rl_watch_add(redlock_lock *l, uint32_t max_hold_ms, redlock_lost_fn fn, void *userdata,
                 void (*userdata_free)(void *))
{
    rl_watch *w = &l->client->watch;
    pthread_mutex_lock(&w->mu);
    if (!w->started) {
        /* Signals are for the application's threads, never this one. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&w->thread, NULL, watch_main, l->client);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            pthread_mutex_unlock(&w->mu);
            errno = rc;
            return REDLOCK_ENOMEM;
        }
        w->started = 1;
        w->pid = getpid();
    } else if (w->pid != getpid()) {
        pthread_mutex_unlock(&w->mu);
        errno = ECHILD;
        return REDLOCK_ENOTSUP;   /* a client inherited across fork: make a new one */
    }
    /* A callback for this lock may be running: the caller may free its old
     * userdata once this returns. */
    while (w->current == l && !pthread_equal(pthread_self(), w->thread))
        pthread_cond_wait(&w->idle, &w->mu);
    atomic_store_explicit(&l->ae.used, 1, memory_order_release);
    hook_free old = detach_hook(l);
    l->ae.fn = fn;
    l->ae.userdata = userdata;
    l->ae.userdata_free = userdata_free;
    l->ae.until_us = l->acquired_us + (int64_t)(max_hold_ms ? max_hold_ms : REDLOCK_AUTO_EXTEND_MAX_HOLD_MS) * 1000;
    l->ae.limited = 0;
    l->ae.msg[0] = '\0';
    l->ae.due_us = rl_now_us() + rl_policy_extend_interval_us(l->ttl_ms);
    if (!l->ae.on) {
        l->ae.prev = NULL;
        l->ae.next = w->head;
        if (w->head)
            w->head->ae.prev = l;
        w->head = l;
        l->ae.on = 1;
    }
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    run_free(old);
    return 0;
}

int rl_watch_remove(redlock_lock *l)
{
    /* The owner's acquire, release and free all come here: a lock never
     * auto-extended must not take the client-wide mutex on every cycle. */
    if (!atomic_load_explicit(&l->ae.used, memory_order_acquire))
        return 0;
    rl_watch *w = &l->client->watch;
    pthread_mutex_lock(&w->mu);
    int was = l->ae.on;
    if (was)
        unlink_lock(w, l);
    if (w->started && w->pid == getpid() && !pthread_equal(pthread_self(), w->thread)) {
        while (w->current == l)
            pthread_cond_wait(&w->idle, &w->mu);
    }
    hook_free f = detach_hook(l);
    pthread_mutex_unlock(&w->mu);
    run_free(f);
    return was;
}

/* ---- the public calls ---- */

int redlock_lock_auto_extend(redlock_lock *lock, uint32_t max_hold_ms, redlock_lost_fn on_lost, void *userdata)
{
    return redlock_lock_auto_extend2(lock, max_hold_ms, on_lost, userdata, NULL);
}

int redlock_lock_auto_extend2(redlock_lock *lock, uint32_t max_hold_ms, redlock_lost_fn on_lost, void *userdata,
                              void (*userdata_free)(void *userdata))
{
    if (!lock)
        return REDLOCK_EINVAL;
    /* Not under the lock's mutex: rl_watch_add may wait for the thread to
     * finish with this lock, which needs the mutex. The fields it reads are
     * the owner's, and the owner is the caller. */
    int held = redlock_lock_is_held(lock);
    int rc = held ? rl_watch_add(lock, max_hold_ms, on_lost, userdata, userdata_free) : REDLOCK_ESTATE;
    /* The message under the mutex: a loss callback may already be releasing. */
    pthread_mutex_lock(&lock->mu);
    if (!held)
        rl_lock_err(lock, rc, "lock '%s' is not held: nothing to extend", lock->resource);
    else if (rc)
        rl_lock_err(lock, rc, "%s", rc == REDLOCK_ENOTSUP
                ? "the client's auto-extend thread runs in the parent process: make a new client after fork"
                : "cannot start the auto-extend thread");
    else
        rl_lock_ok(lock);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

int redlock_lock_auto_extend_stop(redlock_lock *lock)
{
    if (!lock)
        return REDLOCK_EINVAL;
    return rl_watch_remove(lock) ? 0 : REDLOCK_ESTATE;
}
