/* SPDX-License-Identifier: BSD-3-Clause */
/* acquire_async.c: asynchronous acquisition, release, extension and a
 * write lock's downgrade. One
 * thread per client, started by the first asynchronous call, keeps the
 * calls under way in a queue (its state: async.c) and runs their steps
 * (acquire.c's rl_acq_*), each under its lock's mutex: an attempt when one
 * is due, a nap's end when its time comes or its lock's eventfd (a
 * wake-up, a listener change, a cancel) is written, watched from its first
 * nap on. Waiting costs a queue
 * entry, not a thread. The thread calls each acquire's done callback, and
 * stops with the client. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Whether acquire a attempts now (its lock's mutex held): 1 yes, 0 it
 * naps on (a listener change, or not due yet), -1 it is over (a failed
 * check, a cancel, the wait's end: rl_acq_end done). */
static int acquire_due(rl_acq *a)
{
    int go = a->begun;              /* a failed check only ends */
    if (go && a->n > 0) {           /* napping since its last attempt */
        int why = rl_acq_nap_state(a);
        if (why == -1)
            return 0;
        go = rl_acq_woke(a, why);
    }
    if (!go)
        rl_acq_end(a);
    return go ? 1 : -1;
}

/* One step of acquire a (thread only): 1 if it naps on, 0 when it is over. */
static int acquire_step(rl_acq *a)
{
    redlock_lock *lock = a->lock;
    pthread_mutex_lock(&lock->mu);
    int due = acquire_due(a), on = due == 0;
    if (due == 1) {
        on = rl_acq_attempt(a);
        if (!on)
            rl_acq_end(a);
    }
    pthread_mutex_unlock(&lock->mu);
    return on;
}

/* Acquire a is over: off its lock's eventfd, its callback called. 1 if
 * the thread must exit (the client went away in the callback). */
static int finish(rl_async *A, rl_acq *a)
{
    redlock_lock *lock = a->lock;
    if (a->watch > 0)
        epoll_ctl(A->epfd, EPOLL_CTL_DEL, atomic_load(&lock->wake_fd), NULL);
    pthread_mutex_lock(&A->mu);
    lock->async_acq = NULL;          /* the callback may start another */
    A->calling = lock;
    pthread_mutex_unlock(&A->mu);
    a->report(a);                    /* it may free the lock: not used after */
    free(a);
    pthread_mutex_lock(&A->mu);
    A->calling = NULL;
    pthread_cond_broadcast(&A->idle);
    int orphan = A->orphan;
    pthread_mutex_unlock(&A->mu);
    if (orphan)
        rl_async_free(A);
    return orphan;
}

/* A call that naps for the first time: its lock's eventfd (made now if
 * need be) is watched from here on, so that a cancel or a wake-up ends the
 * nap. Calls that never nap (a release, an extension, an acquire granted at
 * its first attempt) cost no eventfd and no epoll_ctl. Without one (the fd
 * limit, epoll's watch limit) the call's flags are looked at every
 * BLIND_US instead, as a blocking nap does without its eventfd. */
#define BLIND_US 10000

static void watch(rl_async *A, rl_acq *a)
{
    int fd = rl_lock_wake_fd(a->lock);
    struct epoll_event e = { .events = EPOLLIN, .data.ptr = a };
    a->watch = fd >= 0 && epoll_ctl(A->epfd, EPOLL_CTL_ADD, fd, &e) == 0 ? 1 : -1;
    /* A cancel that came before the eventfd was made set only its flag. */
    if (atomic_load(&a->lock->cancel))
        a->poked = 1;
}

/* A call that naps on goes back on the queue. */
static void requeue(rl_async *A, rl_acq *a)
{
    if (!a->watch)
        watch(A, a);
    if (a->watch < 0)
        a->blind_at_us = rl_now_us() + BLIND_US;
    pthread_mutex_lock(&A->mu);
    a->next = A->head;
    A->head = a;
    pthread_mutex_unlock(&A->mu);
}

static int release_step(rl_acq *a);

/* The calls whose next step is one round that can share its writes with
 * others': a release, and an acquire's attempt (rl_acq_batches). */
static int joins_batch(rl_acq *a)
{
    return !a->gone && (a->step == release_step || (a->step == acquire_step && rl_acq_batches(a)));
}


/* Up to BATCH_MAX such calls among the ready ones take their step
 * together (an acquire that napped, if its nap is over: acquire_due):
 * their rounds go in one write per node (rl_epoch_run_each),
 * where one at a time would cost each its own write and wait. Each call's
 * halves run under its lock's mutex, as its step would, but not the
 * rounds, so that the thread never holds two locks' mutexes (a hook may
 * take another's). The calls left are put back in *ready. 1 if the thread
 * must exit (finish). */
#define BATCH_MAX 32

static int step_together(rl_async *A, rl_acq **ready, int64_t *next, int64_t now)
{
    rl_acq *pick[BATCH_MAX];
    size_t m = 0;
    for (rl_acq **p = ready; *p && m < BATCH_MAX;) {
        rl_acq *a = *p;
        if (joins_batch(a)) {
            *p = a->next;
            a->next = NULL;
            pick[m++] = a;
        } else {
            p = &a->next;
        }
    }
    redlock_client *client = m ? pick[0]->lock->client : NULL;   /* alive while a call is queued */
    rl_round *rounds = m > 1 ? malloc(m * sizeof *rounds) : NULL;
    if (!rounds) {
        /* one call alone gains nothing: back to the ready ones, in turn */
        for (size_t k = m; k-- > 0;) {
            pick[k]->next = *ready;
            *ready = pick[k];
        }
        return 0;
    }
    /* An acquire that napped: whether it attempts now. One that naps on
     * goes back; one that is over calls back now, before any round is
     * made, so that a callback that frees another picked lock finds it
     * still queued (gone: dropped below). */
    size_t kept = 0;
    for (size_t k = 0; k < m; k++) {
        rl_acq *a = pick[k];
        a->poked = 0;
        if (a->gone) {
            free(a);
            continue;
        }
        if (a->step == release_step) {
            pick[kept++] = a;
            continue;
        }
        pthread_mutex_lock(&a->lock->mu);
        int due = acquire_due(a);
        pthread_mutex_unlock(&a->lock->mu);
        if (due == 1) {
            pick[kept++] = a;
        } else if (due == 0) {
            requeue(A, a);
            *next = now;
        } else if (finish(A, a)) {
            /* the client went away in the callback: every other lock
             * went before it, so the other calls are all gone */
            for (size_t j = 0; j < m; j++)
                if (j < kept || j > k)
                    free(pick[j]);
            free(rounds);
            return 1;
        }
    }
    m = kept;
    rl_round *rs[BATCH_MAX];
    char modes[BATCH_MAX][8];
    int rcs[BATCH_MAX];
    size_t nr = 0;
    for (size_t k = 0; k < m; k++) {
        rl_acq *a = pick[k];
        redlock_lock *lock = a->lock;
        if (a->gone) {   /* freed by a callback just above */
            rcs[k] = REDLOCK_ECANCELED;
            continue;
        }
        if (a->step == release_step)
            rl_watch_remove(lock);   /* as redlock_lock_release: not under the mutex */
        pthread_mutex_lock(&lock->mu);
        rcs[k] = a->step == release_step ? rl_release_begin(lock, &rounds[k])
                                         : rl_acq_attempt_begin(a, &rounds[k], modes[k]);
        pthread_mutex_unlock(&lock->mu);
        if (!rcs[k])
            rs[nr++] = &rounds[k];
    }
    if (nr)
        rl_epoch_run_each(client, rs, nr);   /* acquisitions: a node out of the vote does not count */
    int exit = 0;
    for (size_t k = 0; k < m; k++) {
        rl_acq *a = pick[k];
        if (exit || a->gone) {
            /* exit: the client went away in an earlier callback; gone: a
             * hook freed the lock from this thread (rl_async_forget) */
            free(a);
            continue;
        }
        redlock_lock *lock = a->lock;
        int again = 0;
        pthread_mutex_lock(&lock->mu);
        if (a->step == release_step) {
            a->rc = rcs[k] ? rcs[k] : rl_release_end(lock, &rounds[k]);
        } else {
            again = rl_acq_attempt_end(a, rcs[k] ? NULL : &rounds[k], rcs[k]);
            if (!again)
                rl_acq_end(a);
        }
        pthread_mutex_unlock(&lock->mu);
        if (again) {
            requeue(A, a);
            *next = now;            /* look again before sleeping */
        } else {
            exit = finish(A, a);
        }
    }
    free(rounds);
    return exit;
}

/* Until stopped: the queue's due and woken calls take a step each, in
 * turn (those that can, together: step_together); then the thread sleeps
 * until the next one is due or an eventfd is written. */
static void *async_main(void *arg)
{
    rl_async *A = arg;
    enum { EVENTS = 64 };
    struct epoll_event ev[EVENTS];
    for (;;) {
        pthread_mutex_lock(&A->mu);
        if (A->stop) {
            pthread_mutex_unlock(&A->mu);
            return NULL;
        }
        int64_t now = rl_now_us(), next = INT64_MAX;
        rl_acq *ready = NULL, **tail = &ready;
        for (rl_acq **p = &A->head; *p;) {
            rl_acq *a = *p;
            int64_t due = a->nap_until_us;
            if (a->watch < 0 && a->blind_at_us < due)
                due = a->blind_at_us;
            if (a->gone || a->poked || due <= now) {
                *p = a->next;
                a->next = NULL;
                *tail = a;
                tail = &a->next;
            } else {
                if (due < next)
                    next = due;
                p = &a->next;
            }
        }
        pthread_mutex_unlock(&A->mu);
        if (ready && ready->next && step_together(A, &ready, &next, now))
            return NULL;
        while (ready) {
            rl_acq *a = ready;
            ready = a->next;
            a->poked = 0;
            if (a->gone) {
                free(a);            /* its lock was freed from this thread */
            } else if (a->step(a)) {
                requeue(A, a);
                next = now;         /* look again before sleeping */
            } else if (finish(A, a)) {
                return NULL;
            }
        }
        int ms = -1;
        now = rl_now_us();
        if (next != INT64_MAX)
            ms = next <= now ? 0 : (int)((next - now + 999) / 1000);
        int n = epoll_wait(A->epfd, ev, EVENTS, ms);
        for (int i = 0; i < n; i++) {
            rl_acq *a = ev[i].data.ptr;
            if (a && a->gone)
                continue;           /* its lock was freed by a hook just now */
            if (!a) {
                uint64_t v;
                ssize_t rd = read(A->kick_fd, &v, sizeof v);
                (void)rd;
                continue;
            }
            /* Only this thread takes acquires off the queue: a is queued. */
            rl_acq_drain(a, atomic_load(&a->lock->wake_fd));
            a->poked = 1;
        }
    }
}

/* The thread, started on first need (A->mu held): 0 or a code. */
static int start_thread(rl_async *A)
{
    if (A->started)
        return 0;
    A->epfd = epoll_create1(EPOLL_CLOEXEC);
    A->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };
    if (A->epfd < 0 || A->kick_fd < 0 || epoll_ctl(A->epfd, EPOLL_CTL_ADD, A->kick_fd, &e) != 0)
        goto fail;
    /* Signals are for the application's threads, never this one. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&A->thread, NULL, async_main, A);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        goto fail;
    A->started = 1;
    atomic_store(&A->pid, rl_pid());
    return 0;
fail:
    if (A->epfd >= 0)
        close(A->epfd);
    if (A->kick_fd >= 0)
        close(A->kick_fd);
    A->epfd = A->kick_fd = -1;
    return REDLOCK_ENOMEM;
}

int rl_async_start(redlock_lock *lock, rl_acq *a, const char **why)
{
    rl_async *A = lock->client->async;
    if (rl_async_forked(A)) {
        *why = "the client's acquire thread runs in the parent process: make a new client after fork";
        return REDLOCK_ENOTSUP;
    }
    pthread_mutex_lock(&A->mu);
    int rc = start_thread(A);
    *why = "cannot start the client's acquire thread";
    a->lock = lock;
    a->nap_until_us = 0;            /* its first step is due at once; its eventfd
                                     * is watched once it naps (watch) */
    if (rc == 0) {
        lock->async_acq = a;
        atomic_store_explicit(&lock->async_used, 1, memory_order_release);
        a->next = A->head;
        A->head = a;
        rl_async_kick(A);
    }
    pthread_mutex_unlock(&A->mu);
    return rc;
}

static void acquire_report(rl_acq *a)
{
    a->done(a->lock, a->rc, a->userdata);
}

/* ---- Releases, extensions, downgrades: one round each, a single step ---- */

static int release_step(rl_acq *a)
{
    a->rc = redlock_lock_release(a->lock);
    return 0;
}

static int extend_step(rl_acq *a)
{
    a->rc = redlock_lock_extend(a->lock, a->ttl_ms);
    return 0;
}

static int downgrade_step(rl_acq *a)
{
    a->rc = redlock_lock_downgrade(a->lock);
    return 0;
}

/* Queues an asynchronous call on lock (call names it in messages): an
 * acquire (acquire_step), or a release, an extension or a downgrade (one
 * step each). */
static int start_call(redlock_lock *lock, int (*step)(rl_acq *), uint32_t ttl_ms, int64_t wait_ms,
                      redlock_acquired_fn done, void *userdata, const char *call)
{
    if (!lock)
        return REDLOCK_EINVAL;
    if (!done) {
        pthread_mutex_lock(&lock->mu);
        int rc = rl_lock_err(lock, REDLOCK_EINVAL, "%s needs a done callback", call);
        pthread_mutex_unlock(&lock->mu);
        return rc;
    }
    if (rl_async_pending(lock))
        return REDLOCK_ESTATE;      /* the handle's message is the call's under way */
    rl_acq *a = calloc(1, sizeof *a);
    if (!a)
        return REDLOCK_ENOMEM;
    a->step = step;
    a->report = acquire_report;
    a->done = done;
    a->userdata = userdata;
    a->ttl_ms = ttl_ms;
    int acquire = step == acquire_step;
    /* As redlock_lock_acquire: the auto-extension of the last acquisition is over. */
    if (acquire && !redlock_lock_is_held(lock))
        rl_watch_remove(lock);
    pthread_mutex_lock(&lock->mu);
    /* An acquire's checks and its wait's bounds now, on the caller's
     * clock; the first attempt on the thread. A failed check ends through
     * done too, as every failure does. */
    if (acquire)
        rl_acq_begin(a, lock, ttl_ms, wait_ms);
    const char *why;
    int rc = rl_async_start(lock, a, &why);
    if (rc) {
        rl_lock_err(lock, rc, "%s", why);
        free(a);
    }
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

int redlock_lock_acquire_async(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms, redlock_acquired_fn done,
                               void *userdata)
{
    return start_call(lock, acquire_step, ttl_ms, wait_ms, done, userdata, "redlock_lock_acquire_async");
}

int redlock_lock_release_async(redlock_lock *lock, redlock_acquired_fn done, void *userdata)
{
    return start_call(lock, release_step, 0, 0, done, userdata, "redlock_lock_release_async");
}

int redlock_lock_extend_async(redlock_lock *lock, uint32_t ttl_ms, redlock_acquired_fn done, void *userdata)
{
    return start_call(lock, extend_step, ttl_ms, 0, done, userdata, "redlock_lock_extend_async");
}

int redlock_lock_downgrade_async(redlock_lock *lock, redlock_acquired_fn done, void *userdata)
{
    return start_call(lock, downgrade_step, 0, 0, done, userdata, "redlock_lock_downgrade_async");
}
