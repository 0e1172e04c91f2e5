/* SPDX-License-Identifier: BSD-3-Clause */
/* watch.c: auto-extension. One thread per client, started by the first
 * redlock_lock_auto_extend, keeps a list of locks and extends each one when
 * it is due (every TTL/3): all the locks due in the same window go out
 * together (extend_many.c), each under its lock's mutex, and are decided
 * one by one. It tells the owner about a loss through the lock's
 * redlock_lost_fn (and, armed by redlock_lock_auto_extend, that the lock is
 * at risk, before the loss), tells on_event when it falls behind, and stops
 * with the client. */
#include <errno.h>
#include <stdlib.h>
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
    w->head = NULL;
    w->batch = NULL;
    w->batch_cap = 0;
    w->behind_told_us = 0;
    w->sleep_until_us = 0;
    memset(&w->scratch, 0, sizeof w->scratch);
}

void rl_watch_destroy(rl_watch *w)
{
    pthread_mutex_lock(&w->mu);
    int started = w->started;
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    /* In a forked child the thread does not exist: nothing to join. */
    if (started && w->pid == rl_pid()) {
        /* No lock is left (each holds a reference), so the thread is idle. */
        if (pthread_equal(pthread_self(), w->thread))
            pthread_detach(w->thread);  /* freed from its own callback: documented as not allowed */
        else
            pthread_join(w->thread, NULL);
    }
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->idle);
    pthread_mutex_destroy(&w->mu);
    free(w->batch);
    w->batch = NULL;
    rl_scratch_free(&w->scratch);
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

/* Replaces the lock's message (thread only) with owned, which may be NULL. */
static void set_msg(redlock_lock *l, char *owned)
{
    free(l->ae.msg);
    l->ae.msg = owned;
}

static const char *msg_of(const redlock_lock *l)
{
    return l->ae.msg ? l->ae.msg : "";
}

/* The at-risk margin of l's arming, in us (0: no notices). */
static int64_t risk_margin_us(const redlock_lock *l)
{
    return (int64_t)l->ae.risk_ms * 1000;
}

/* next capped at the time l becomes at risk, while its notice is still to
 * give: the thread must look at the lock then. */
static int64_t risk_cap(const redlock_lock *l, int64_t next, int64_t valid_until)
{
    if (!l->ae.risk_ms || l->ae.risk_told)
        return next;
    int64_t at = valid_until - risk_margin_us(l);
    return at < next ? at : next;
}

/* The lock is held, its validity not over: 1 if it is at risk now, with
 * its notice prepared (ae.risk_fire, ae.risk_msg, the event emitted). */
static int tell_risk(redlock_lock *l, int64_t now, int64_t valid_until)
{
    if (!l->ae.risk_ms || l->ae.risk_told || now < valid_until - risk_margin_us(l))
        return 0;
    l->ae.risk_told = l->ae.risk_fire = 1;
    char msg[RL_MSG_MAX];
    long long left = (long long)((valid_until - now) / 1000);
    if (l->ae.limited) {
        rl_fmt(msg, sizeof msg, "lock '%s' reached its hold bound: its validity ends in %lld ms", l->resource,
               left);
    } else {
        rl_fmt(msg, sizeof msg, "lock '%s' was not extended and its validity ends in %lld ms%s%s", l->resource,
               left, msg_of(l)[0] || l->ae.tried ? "; last try: " : "", msg_of(l));
        if (!msg_of(l)[0] && l->ae.tried)
            rl_describe_report(msg, sizeof msg, l);
    }
    free(l->ae.risk_msg);
    l->ae.risk_msg = strdup(msg);
    rl_emit_out(l, REDLOCK_EVENT_AT_RISK, REDLOCK_EATRISK, msg, NULL, NULL, 1, 0, 0);
    return 1;
}

/* A due lock, its mutex held, before the batch: 1 if it goes into the
 * batch (ae.batch_ttl, ae.last set); 0 if the thread is done with it for
 * now: ae.done (it leaves the list), ae.fire (tell the owner: lost, with
 * lost_code and lost_msg), or ae.next_due. */
static int before(redlock_lock *l, int64_t now)
{
    l->ae.fire = l->ae.done = l->ae.risk_fire = 0;
    int state = atomic_load(&l->state);
    int64_t valid_until = atomic_load(&l->valid_until_us);
    char msg[RL_MSG_MAX];
    if (state == LOCK_IDLE) {
        l->ae.done = 1;                            /* released meanwhile */
    } else if (state == LOCK_LOST) {
        l->ae.fire = l->ae.done = 1;               /* the owner's own extend found it lost */
    } else if (valid_until <= now) {
        l->ae.fire = l->ae.done = 1;
        int code;
        if (l->ae.limited) {
            code = REDLOCK_ELIMIT;
            rl_fmt(msg, sizeof msg, "lock '%s' reached its hold bound and its validity ran out", l->resource);
        } else {
            code = REDLOCK_EEXPIRED;
            rl_fmt(msg, sizeof msg, "the validity of lock '%s' ran out before an extension succeeded%s%s",
                   l->resource, msg_of(l)[0] || l->ae.tried ? "; last try: " : "", msg_of(l));
            if (!msg_of(l)[0] && l->ae.tried)
                rl_describe_report(msg, sizeof msg, l);
        }
        rl_mark_lost(l, code, msg, 1);
    } else if (tell_risk(l, now, valid_until)) {
        /* Told first, then (not limited) tried again at once. */
        l->ae.next_due = l->ae.limited ? valid_until : now;
        return 0;
    } else if (l->ae.limited) {
        l->ae.next_due = risk_cap(l, valid_until, valid_until);  /* only the end is left to see */
    } else {
        uint32_t ttl = l->ttl_ms;
        int64_t left_ms = (l->ae.until_us - now) / 1000;
        l->ae.last = 0;
        if (left_ms < (int64_t)ttl) {
            /* The bound cuts this extension short; a too short one is no use. */
            if (left_ms <= 0 || rl_drift_us(l, (uint32_t)left_ms) >= left_ms * 1000 ||
                now + left_ms * 1000 - rl_drift_us(l, (uint32_t)left_ms) <= valid_until) {
                l->ae.limited = 1;
                if (tell_risk(l, now, valid_until))
                    l->ae.next_due = valid_until;
                else
                    l->ae.next_due = risk_cap(l, valid_until, valid_until);
                return 0;
            }
            ttl = (uint32_t)left_ms;
            l->ae.last = 1;
        }
        l->ae.batch_ttl = ttl;
        return 1;
    }
    if (l->ae.fire) {
        l->ae.fire_code = l->lost_code;
        set_msg(l, strdup(l->lost_msg ? l->lost_msg : ""));   /* for the callback */
    }
    return 0;
}

/* After the batch, mutex held: what the extension's outcome rc means, with
 * msg (owned, NULL on success) its detail; start is when the batch began. */
static void after(redlock_lock *l, int rc, char *msg, int64_t start)
{
    int64_t now = rl_now_us();
    int64_t valid_until = atomic_load(&l->valid_until_us);
    set_msg(l, msg);
    l->ae.tried = rc != 0;
    if (rc == 0) {
        /* Due again an interval after it was due, or after the batch began
         * if it was late: not after the batch ended. A lock taken a little
         * early keeps its place in time, so the locks acquired at
         * different times do not gather into one batch of all of them,
         * made and sent at once every interval, that grows with the locks
         * (the validity runs from the round's start, later than either). */
        int64_t from = l->ae.due_us > start ? l->ae.due_us : start;
        l->ae.limited = l->ae.last;
        l->ae.risk_told = 0;                       /* a new episode may be told */
        l->ae.next_due = risk_cap(l, l->ae.last ? valid_until : from + rl_policy_extend_interval_us(l->ttl_ms),
                                  valid_until);
    } else if (rc == REDLOCK_ELOST || rc == REDLOCK_EEXPIRED) {
        if (rc == REDLOCK_EEXPIRED) {
            /* Told as before() tells an expiry found between batches: a
             * lock taken into a batch a little early may have run out by
             * the time its extension is checked or confirmed. */
            char m[RL_MSG_MAX];
            rl_fmt(m, sizeof m, "the validity of lock '%s' ran out before an extension succeeded; last try: %s",
                   l->resource, msg_of(l));
            rl_mark_lost(l, rc, m, 1);             /* ELOST was marked by the extension */
            set_msg(l, strdup(m));                 /* the owner hears what the event said */
        }
        l->ae.fire = l->ae.done = 1;
        l->ae.fire_code = rc;
    } else if (rc == REDLOCK_ELIMIT) {
        l->ae.limited = 1;                         /* the client's max_hold_ms / max_extensions */
        l->ae.next_due = risk_cap(l, valid_until, valid_until);
    } else {
        /* No quorum, I/O, server errors: try again soon, while validity is left. */
        int64_t left = valid_until - now;
        int64_t retry = (int64_t)l->ttl_ms * 1000 / 10;
        if (retry > left / 2)
            retry = left / 2;
        if (retry < RL_POLICY_EXTEND_RETRY_MIN_US)
            retry = RL_POLICY_EXTEND_RETRY_MIN_US;
        l->ae.next_due = risk_cap(l, now + retry < valid_until ? now + retry : valid_until, valid_until);
    }
}

/* The batch: every lock's mutex is tried, never waited for (an owner in
 * the middle of its own call is taken in the next batch, soon), and held
 * only for a moment; those that need an extension get it in one go. busy
 * keeps the owner's own extension out meanwhile (redlock_lock_extend), and its
 * acquire, release and free wait in rl_watch_remove. */
enum { S_EXT = 9, S_TTLS, S_RCS, S_MSGS };   /* after rl_extend_many's slots */

static void run_chunk(redlock_client *c, redlock_lock **batch, size_t n)
{
    size_t m = 0;
    int64_t now = rl_now_us();
    rl_scratch *sc = &c->watch.scratch;
    redlock_lock **ext = rl_scratch_get(sc, S_EXT, n * sizeof *ext, 0);
    uint32_t *ttls = rl_scratch_get(sc, S_TTLS, n * sizeof *ttls, 0);
    int *rcs = rl_scratch_get(sc, S_RCS, n * sizeof *rcs, 0);
    char **msgs = rl_scratch_get(sc, S_MSGS, n * sizeof *msgs, 0);
    int mem = ext && ttls && rcs && msgs;
    for (size_t k = 0; k < n; k++) {
        redlock_lock *l = batch[k];
        if (pthread_mutex_trylock(&l->mu) != 0) {
            /* Its owner is in a call on the handle: the next batch, soon. */
            l->ae.fire = l->ae.done = l->ae.risk_fire = 0;
            l->ae.next_due = risk_cap(l, now + RL_POLICY_EXTEND_RETRY_MIN_US, atomic_load(&l->valid_until_us));
            continue;
        }
        if (before(l, now)) {
            if (mem) {
                ext[m] = l;
                ttls[m] = l->ae.batch_ttl;
                m++;
            } else {
                after(l, REDLOCK_ENOMEM, NULL, now);
            }
        }
        pthread_mutex_unlock(&l->mu);
    }
    if (m)
        rl_extend_many(c, ext, ttls, m, 1, rcs, msgs, sc);
    for (size_t k = 0; k < m; k++) {
        pthread_mutex_lock(&ext[k]->mu);
        after(ext[k], rcs[k], msgs[k], now);
        pthread_mutex_unlock(&ext[k]->mu);
    }
    rl_scratch_put(sc, S_EXT, ext);
    rl_scratch_put(sc, S_TTLS, ttls);
    rl_scratch_put(sc, S_RCS, rcs);
    rl_scratch_put(sc, S_MSGS, msgs);
}

/* A batch larger than RL_POLICY_WATCH_CHUNK (the thread fell behind, or
 * many locks came due together) goes out a chunk at a time: what one
 * batch holds in memory at once (its commands, its rounds) stays bounded
 * whatever the number of locks. */
static void run_batch(redlock_client *c, redlock_lock **batch, size_t n)
{
    for (size_t k = 0; k < n; k += RL_POLICY_WATCH_CHUNK)
        run_chunk(c, batch + k, n - k < RL_POLICY_WATCH_CHUNK ? n - k : RL_POLICY_WATCH_CHUNK);
}

/* Tells on_event that the thread is behind (w->mu held; the event is
 * emitted without it). */
static void tell_behind(redlock_lock *l, int64_t late_us, size_t n)
{
    char msg[256];
    rl_fmt(msg, sizeof msg,
           "auto-extension is behind: %zu locks due, the oldest %lld ms late (due every %lld ms); "
           "the nodes do not keep up with this client's extensions",
           n, (long long)(late_us / 1000), (long long)(rl_policy_extend_interval_us(l->ttl_ms) / 1000));
    rl_emit_out(l, REDLOCK_EVENT_WATCH_BEHIND, 0, msg, NULL, NULL, 1, 0, late_us);
}

/* The locks due now, and those due within a window after them, into
 * w->batch, each marked busy: how many (0 when none is due yet: only early
 * ones do not make a batch). *next: the earliest due time; *latest: the
 * lock furthest behind beyond the told threshold, *late by how much. Under
 * w->mu. A batch goes out once a lock is due, and takes with it the locks
 * due within an eighth of their interval after it (at most
 * RL_POLICY_WATCH_WINDOW_US). Else, once a batch ends, the locks whose
 * window has just opened would go out a few at a time, each batch a look
 * at every lock. */
static size_t collect_due(rl_watch *w, int64_t now, int64_t *next, int64_t *late, redlock_lock **latest)
{
    size_t n = 0;
    *next = INT64_MAX;
    *late = 0;
    *latest = NULL;
    for (redlock_lock *l = w->head; l; l = l->ae.next) {
        if (l->ae.due_us < *next)
            *next = l->ae.due_us;
        int64_t early = rl_policy_extend_interval_us(l->ttl_ms) / 8;
        if (early > RL_POLICY_WATCH_WINDOW_US)
            early = RL_POLICY_WATCH_WINDOW_US;
        if (l->ae.due_us - early > now)
            continue;
        if (n == w->batch_cap) {
            size_t cap = w->batch_cap ? 2 * w->batch_cap : 64;
            redlock_lock **b = realloc(w->batch, cap * sizeof *b);
            if (!b)
                break;   /* the rest in the next batch */
            w->batch = b;
            w->batch_cap = cap;
        }
        w->batch[n++] = l;
        l->ae.busy = 1;
        int64_t behind = now - l->ae.due_us - rl_policy_watch_behind_us(l->ttl_ms);
        if (behind > 0 && now - l->ae.due_us > *late) {
            *late = now - l->ae.due_us;
            *latest = l;
        }
    }
    if (n && *next > now) {
        /* None is due yet (next is the earliest). busy was set and is
         * cleared under w->mu, which nobody waiting for it had meanwhile. */
        for (size_t k = 0; k < n; k++)
            w->batch[k]->ae.busy = 0;
        n = 0;
    }
    return n;
}

/* After a batch (w->mu held, dropped around each callback): each lock's
 * next due time, or off the list once done; the lost callbacks run, each
 * lock busy until its own has returned. */
static void settle_batch(rl_watch *w, redlock_lock **batch, size_t n)
{
    size_t nfire = 0;
    for (size_t k = 0; k < n; k++) {
        redlock_lock *l = batch[k];
        if (l->ae.on) {
            if (l->ae.done)
                unlink_lock(w, l);
            else
                l->ae.due_us = l->ae.next_due;
        }
        if ((l->ae.fire || l->ae.risk_fire) && l->ae.fn) {
            batch[nfire++] = l;
        } else {
            free(l->ae.risk_msg);
            l->ae.risk_msg = NULL;
            l->ae.risk_fire = 0;
            l->ae.busy = 0;
        }
    }
    pthread_cond_broadcast(&w->idle);
    for (size_t k = 0; k < nfire; k++) {
        redlock_lock *l = batch[k];
        redlock_lost_fn fn = l->ae.fn;
        void *userdata = l->ae.userdata;
        /* busy stays set: the lock cannot be freed under the callback,
         * and ae.msg (the loss, thread only) stays as it is. */
        l->ae.running = 1;
        pthread_mutex_unlock(&w->mu);
        if (l->ae.fire)
            fn(l, l->ae.fire_code, msg_of(l), userdata);
        else
            fn(l, REDLOCK_EATRISK, l->ae.risk_msg ? l->ae.risk_msg : "", userdata);
        free(l->ae.risk_msg);
        l->ae.risk_msg = NULL;
        l->ae.risk_fire = 0;
        pthread_mutex_lock(&w->mu);
        l->ae.running = 0;
        hook_free f = { l->ae.free_after, l->ae.free_after_userdata };
        l->ae.free_after = NULL;
        if (f.fn) {
            pthread_mutex_unlock(&w->mu);
            run_free(f);
            pthread_mutex_lock(&w->mu);
        }
        l->ae.busy = 0;
        pthread_cond_broadcast(&w->idle);
    }
}

static void *watch_main(void *arg)
{
    redlock_client *c = arg;
    rl_watch *w = &c->watch;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        int64_t now = rl_now_us(), next, late;
        redlock_lock *latest;
        size_t n = collect_due(w, now, &next, &late, &latest);
        if (!n) {
            w->sleep_until_us = next;
            if (next == INT64_MAX) {
                pthread_cond_wait(&w->wake, &w->mu);
            } else {
                struct timespec ts = { (time_t)(next / 1000000), (long)(next % 1000000) * 1000 };
                pthread_cond_timedwait(&w->wake, &w->mu, &ts);
            }
            w->sleep_until_us = 0;
            continue;
        }
        int tell = latest && c->opts.on_event && (!w->behind_told_us || now - w->behind_told_us >= RL_POLICY_WATCH_TELL_US);
        if (tell)
            w->behind_told_us = now;
        /* The batch array is the thread's: only collect_due reallocs it. */
        redlock_lock **batch = w->batch;
        pthread_mutex_unlock(&w->mu);
        if (tell)
            tell_behind(latest, late, n);   /* latest is busy: it stays */
        run_batch(c, batch, n);
        pthread_mutex_lock(&w->mu);
        settle_batch(w, batch, n);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int watch_add(redlock_lock *l, uint32_t max_hold_ms, uint32_t at_risk_ms, redlock_lost_fn fn,
                     void *userdata, void (*userdata_free)(void *))
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
        w->pid = rl_pid();
    } else if (w->pid != rl_pid()) {
        pthread_mutex_unlock(&w->mu);
        errno = ECHILD;
        return REDLOCK_ENOTSUP;   /* a client inherited across fork: make a new one */
    }
    /* A callback for this lock may be running: the caller may free its old
     * userdata once this returns. */
    while (l->ae.busy && !pthread_equal(pthread_self(), w->thread))
        pthread_cond_wait(&w->idle, &w->mu);
    atomic_store_explicit(&l->ae.used, 1, memory_order_release);
    hook_free old = detach_hook(l);
    l->ae.fn = fn;
    l->ae.userdata = userdata;
    l->ae.userdata_free = userdata_free;
    l->ae.until_us = l->acquired_us + (int64_t)(max_hold_ms ? max_hold_ms : REDLOCK_AUTO_EXTEND_MAX_HOLD_MS) * 1000;
    l->ae.limited = 0;
    set_msg(l, NULL);
    l->ae.tried = 0;
    l->ae.risk_ms = rl_policy_at_risk_ms(at_risk_ms, l->ttl_ms, l->client->opts.node_timeout_ms);
    l->ae.risk_told = 0;
    l->ae.due_us = rl_now_us() + rl_policy_extend_interval_us(l->ttl_ms);
    if (!l->ae.on) {
        l->ae.prev = NULL;
        l->ae.next = w->head;
        if (w->head)
            w->head->ae.prev = l;
        w->head = l;
        l->ae.on = 1;
    }
    /* Each wake-up costs the thread a look at every lock: none for a lock
     * due after the thread wakes anyway (a busy thread looks again before
     * it sleeps). */
    if (l->ae.due_us < w->sleep_until_us)
        pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    run_free(old);
    return 0;
}

int rl_watch_add(redlock_lock *l, uint32_t max_hold_ms, redlock_lost_fn fn, void *userdata,
                 void (*userdata_free)(void *))
{
    return watch_add(l, max_hold_ms, 0, fn, userdata, userdata_free);
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
    if (w->started && w->pid == rl_pid() && !pthread_equal(pthread_self(), w->thread)) {
        while (l->ae.busy)
            pthread_cond_wait(&w->idle, &w->mu);
    }
    hook_free f = detach_hook(l);
    pthread_mutex_unlock(&w->mu);
    run_free(f);
    return was;
}

/* ---- the public calls ---- */

int redlock_lock_auto_extend(redlock_lock *lock, uint32_t max_hold_ms, uint32_t at_risk_ms,
                             redlock_lost_fn on_lost, void *userdata, void (*userdata_free)(void *userdata))
{
    if (!lock)
        return REDLOCK_EINVAL;
    /* Not under the lock's mutex: rl_watch_add may wait for the thread to
     * finish with this lock, which needs the mutex. The fields it reads are
     * the owner's, and the owner is the caller. */
    int held = redlock_lock_is_held(lock);
    int rc = held ? watch_add(lock, max_hold_ms, at_risk_ms, on_lost, userdata, userdata_free) : REDLOCK_ESTATE;
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
