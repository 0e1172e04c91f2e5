/* SPDX-License-Identifier: BSD-3-Clause */
/* acquire.c: acquisition: the retries around one attempt (attempt.c), the
 * waits between them (a retry delay, cut short by a wake-up), and when a
 * wait ends. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* The unreachable bound (redlock_options.unreachable_ms) in microseconds,
 * or -1 for none. */
static int64_t unreachable_bound_us(const redlock_options *o)
{
    if (o->unreachable_ms == REDLOCK_UNREACHABLE_NEVER)
        return -1;
    if (o->unreachable_ms)
        return (int64_t)o->unreachable_ms * 1000;
    uint32_t base = o->connect_timeout_ms > o->node_timeout_ms ? o->connect_timeout_ms : o->node_timeout_ms;
    return (int64_t)base * REDLOCK_UNREACHABLE_CONNECTS * 1000;
}

/* How many of the client's nodes the last attempt could not reach (conn.c
 * marks those it could not connect to). */
static size_t unreachable_nodes(const redlock_lock *lock)
{
    size_t down = 0;
    for (size_t i = 0; i < lock->client->n; i++)
        down += lock->report[i].unreachable;
    return down;
}

/* The wait ends with REDLOCK_EUNREACHABLE, naming each unreachable node. */
static int fail_unreachable(redlock_lock *lock, int64_t for_us, uint64_t attempts, size_t down)
{
    redlock_client *c = lock->client;
    char msg[RL_MSG_MAX];
    rl_fmt(msg, sizeof msg, "no quorum of nodes reachable for %lld ms (%llu attempt%s): %zu of %zu nodes unreachable, "
           "%d reachable needed",
           (long long)(for_us / 1000), (unsigned long long)attempts, attempts == 1 ? "" : "s", down, c->n, c->quorum);
    for (size_t i = 0; i < c->n; i++)
        if (lock->report[i].unreachable)
            rl_append(msg, sizeof msg, "; %s: %s", c->nodes[i].ep.display, lock->report[i].msg);
    return rl_lock_err(lock, REDLOCK_EUNREACHABLE, "%s", msg);
}

/* After a failed attempt of a wait: 1 when no attempt has reached a quorum
 * of nodes since *reached_us for longer than the bound, with the error
 * naming each unreachable node; else 0, and *reached_us moves on if this
 * attempt reached a quorum. A busy lock, a node that answers with an error
 * and a slow node never count: only a wait that can never end by itself
 * stops. */
static int unreachable_too_long(redlock_lock *lock, int64_t *reached_us, uint64_t attempts)
{
    redlock_client *c = lock->client;
    size_t down = unreachable_nodes(lock);
    int64_t now = rl_now_us(), bound = unreachable_bound_us(&c->opts);
    if ((int)(c->n - down) >= c->quorum) {
        *reached_us = now;
        return 0;
    }
    if (bound < 0 || now - *reached_us < bound)
        return 0;
    fail_unreachable(lock, now - *reached_us, attempts, down);
    return 1;
}

/* The lock's eventfd, made on first need: cancel and wake-up messages write
 * it. -1 if none can be made (fd limit). */
int rl_lock_wake_fd(redlock_lock *lock)
{
    int fd = atomic_load(&lock->wake_fd);
    if (fd < 0) {
        int nfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        int expected = -1;
        if (nfd >= 0 && !atomic_compare_exchange_strong(&lock->wake_fd, &expected, nfd)) {
            close(nfd);
            nfd = expected;
        }
        fd = nfd;
    }
    return fd;
}

/* Where a nap that ends at end stands: REDLOCK_ECANCELED, 1 (woken by a
 * release, if w is given), 0 (over) or -1 (still on). */
static int nap_state(redlock_lock *lock, const rl_waiter *w, int64_t end)
{
    if (atomic_load(&lock->cancel))
        return REDLOCK_ECANCELED;
    if (w && atomic_load(&w->woken))
        return 1;
    return end - rl_now_us() <= 0 ? 0 : -1;
}

/* The lock's eventfd was written: read it, and a listening waiter tells
 * the listener state changes that came (they write it too). */
static void drain_wake_fd(redlock_lock *lock, int fd, int listening)
{
    uint64_t v;
    ssize_t rd = read(fd, &v, sizeof v);
    (void)rd;
    if (listening)
        rl_wake_report(lock->client, lock);
}

/* Sleeps delay_us unless cancelled or, if w is given, woken by a release:
 * 0 (slept), 1 (woken) or REDLOCK_ECANCELED. */
static int nap(redlock_lock *lock, int64_t delay_us, rl_waiter *w, int listening)
{
    int fd = rl_lock_wake_fd(lock);
    int64_t end = rl_now_us() + delay_us;
    for (;;) {
        int why = nap_state(lock, w, end);
        if (why >= 0 || why == REDLOCK_ECANCELED)
            return why;
        int64_t left = end - rl_now_us();
        struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
        /* Without an eventfd (fd limit), poll the flags every 10 ms. */
        int ms = left > 0 ? (int)((left + 999) / 1000) : 0;
        int n = fd >= 0 ? poll(&p, 1, ms) : poll(NULL, 0, ms < 10 ? ms : 10);
        if (n > 0)
            drain_wake_fd(lock, fd, listening);
    }
}

static uint64_t ticket_now(void)
{
    /* Wall-clock microseconds: the same order on every node, whichever
     * node heard of a waiter first. Skewed clocks only skew fairness. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* How long to sleep after a failed attempt: until the holder's key expires
 * when its release will wake us (the holder is one of ours, and enough
 * listeners are subscribed), the wait is bounded by time, not by a number
 * of attempts, and no node of the client has failed lately (not even one
 * this attempt did not wait for); else the retry policy, which a wake-up
 * still cuts short. A hint that may not hold (a node that did not answer
 * can be where the release goes unseen) never makes a waiter sleep longer
 * than polling would. */
static int64_t retry_delay(redlock_lock *lock, int code, const wait_hint *h, int listening, int counted, int calm)
{
    redlock_client *c = lock->client;
    /* Not after a split vote (some nodes granted us, e.g. our SET reached
     * a node before the release that woke us): the jitter separates the
     * contenders, as without wake-up. */
    /* A hint of 0: the lock is free, kept for the head of the queue in
     * fair mode; ask again as polling would, unless woken before. */
    if (listening && !counted && code == REDLOCK_ENOTACQUIRED && h->yes == 0 && h->trouble == 0 &&
        h->marked * 2 > h->no && h->hint_ms != 0 && calm && rl_wake_ready(c) >= c->quorum)
        return rl_policy_wake_wait_us(&lock->pol, h->hint_ms);
    int64_t us = rl_policy_retry_delay_us(&lock->pol);
    /* A listening waiter that polls because the nodes are not calm asks
     * again by the time they may be, to register again (a node that
     * restarted lost the queue): a long retry delay is no reason to miss
     * the wake-ups that follow. */
    if (listening && !calm && us > (int64_t)RL_POLICY_WAKE_CALM_MS * 1000)
        us = (int64_t)RL_POLICY_WAKE_CALM_MS * 1000 + rl_random_below(50) * 1000;
    /* A wait bounded by time that listens, but whose wake-up is not assured
     * yet (its listeners not subscribed on a quorum: a release's message
     * may come before they are, and is lost), sleeps no longer than a
     * polling waiter would: until the holder's key is due to expire,
     * capped at RL_POLICY_WAKE_POLL_MAX_MS. A retry delay longer than that
     * (Go's WithRetryDelayFunc paces with one) must not turn a lost
     * wake-up into a sleep of that length. */
    if (listening && !counted) {
        int64_t cap = rl_policy_wake_wait_us(&lock->pol, h->hint_ms > 0 ? h->hint_ms : -1);
        if (us > cap)
            us = cap;
    }
    return us;
}

/* The checks before any I/O: 0, or the code with the lock's message set. */
static int check_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms)
{
    char why[RL_MSG_MAX];
    int rc = rl_ttl_problem(lock, ttl_ms, why, sizeof why);
    if (rc)
        return rl_lock_err(lock, rc, "%s", why);
    if ((wait_ms < REDLOCK_WAIT_DEFAULT && wait_ms != REDLOCK_WAIT_FOREVER) || wait_ms > (int64_t)REDLOCK_MAX_WAIT_MS)
        return rl_lock_err(lock, REDLOCK_EINVAL, "wait_ms %lld is out of range", (long long)wait_ms);
    if (redlock_lock_is_held(lock))
        return rl_lock_err(lock, REDLOCK_ESTATE, "lock '%s' is already held by this handle", lock->resource);
    if (atomic_load(&lock->cancel))
        return rl_lock_err(lock, REDLOCK_ECANCELED, "acquisition of '%s' is cancelled (redlock_lock_cancel_reset clears it)",
                       lock->resource);
    return 0;
}

/* A mutex's holder that asks again within this time of its own release
 * most likely finds the lock still free (its release's wake-up has yet to
 * bring the next waiter in): it asks with a plain SET NX PX, a command a
 * node grants or refuses for a tenth of the acquire script's CPU, even if
 * it had to wait last time; refused, it registers at once. */
enum { RL_CAME_BACK_US = 1000 };

static int came_straight_back(const redlock_lock *lock, int64_t now)
{
    return lock->kind->plain_retry && lock->released_us && now - lock->released_us < RL_CAME_BACK_US;
}

/* In fair mode a grant does not take the waiter's registration out of a
 * node's queue: the round may yet be lost (the other nodes still hold the
 * key), and until its next attempt that node would have no registration
 * to keep the free key for the head, so a holder coming back could take
 * it, and after the same on a second node, the lock (models/wake.pml).
 * The waiter's release takes the registration out instead (scripts.c,
 * ARGV[3]), as after a plain win. Fair order is the mutex's (rwlock.c). */
static int keeps_place(const redlock_lock *lock)
{
    return (lock->pol.flags & REDLOCK_OPT_FAIR) && lock->kind == &rl_kind_mutex;
}

/* The bounds of the wait, and the waiter's registration. */
static void begin_waiting(redlock_lock *lock, int64_t wait_ms, rl_waiting *s)
{
    const redlock_lock_options *o = &lock->pol;
    memset(s, 0, sizeof *s);
    s->start = s->reached_us = rl_now_us();
    if (wait_ms == REDLOCK_WAIT_NONE) {
        s->max_attempts = 1;
    } else if (wait_ms > 0) {
        s->max_attempts = UINT64_MAX;
        s->deadline = s->start + wait_ms * 1000;
    } else if (wait_ms == REDLOCK_WAIT_FOREVER) {
        s->max_attempts = UINT64_MAX;   /* and a deadline of 0: none */
    } else {
        s->max_attempts = (uint64_t)o->retry_count + 1;
        if (o->wait_ms)
            s->deadline = s->start + (int64_t)o->wait_ms * 1000;
    }
    /* A waiter registers in the resource's queue (for wake-up and fair
     * mode) and listens for releases when wake-up is asked for (fair mode
     * asks for it) and not refused; by default it polls. */
    int listen = redlock_flags_wake(o->flags);
    s->join = s->max_attempts > 1 && (listen || (o->flags & REDLOCK_OPT_FAIR));
    s->listen = s->join && listen;
    s->ticket = ticket_now();
    if (s->join) {
        rl_lock_wake_fd(lock);
        rl_wake_name(lock->client, &s->w, lock, s->member, sizeof s->member);
    }
    lock->member[0] = '\0';
    /* The first attempt is a plain SET NX PX, as Redlock needs and nothing
     * more, unless this handle had to wait last time (and did not come
     * straight back after its own release), or fair mode or fencing need
     * the script: queue work starts once someone has actually been
     * refused. */
    s->plain_first = s->join && (!lock->contended || came_straight_back(lock, s->start)) &&
                     !(o->flags & REDLOCK_OPT_FAIR) && !rl_lock_fencing(lock);
    /* A registration's lease is renewed a few times per lease, not on
     * every attempt: the first registering attempt renews (the script
     * also does when it has to add us again, e.g. after a restart). */
    s->renew_every_us = (int64_t)rl_policy_wake_lease_ms(o) * 1000 / 3;
}

/* Attempt n's form: plain or registering, as the nodes' calm allows (the
 * waiting state set for it); *member is what it registers ("" for none),
 * *renew and *drop as rl_attempt takes them. */
static void choose_attempt(redlock_lock *lock, uint64_t n, rl_waiting *s, int *calm, int *plain, int *renew,
                           int *drop)
{
    int fair = (lock->pol.flags & REDLOCK_OPT_FAIR) != 0;
    int renew_due = !s->renewed_us || rl_now_us() - s->renewed_us >= s->renew_every_us;
    s->woken_plain = 0;
    /* While the nodes are not calm (one failed lately) the queue is not
     * trusted: plain attempts, polling, no fair order. */
    /* A plain first attempt needs no calm (plain_first excludes fair
     * mode): it is looked at only if that attempt fails (-1: not yet), so
     * an uncontended acquire takes no I/O mutex for it. */
    if (s->plain_first && n == 1) {
        *calm = -1;
        *plain = 1;
    } else {
        *calm = (s->join || fair) && rl_wake_calm(lock->client);
        *plain = !*calm;
        /* A waiter woken by a release is in the queue already: it asks
         * with a plain SET NX PX, the cheapest command a node can refuse,
         * unless its registration's lease is due for renewal or fair mode
         * or fencing need the script. If it wins, its release leaves the
         * queue (scripts.c); if it loses, the winner's release wakes it.
         * A mutex only: the other kinds' attempts are scripts anyway, and
         * their releases do not take a registration out of the queue. */
        if (*calm && s->woke && s->registered && s->listen && !fair && !renew_due &&
            !rl_lock_fencing(lock) && lock->kind->plain_retry)
            *plain = s->woken_plain = 1;
    }
    int registered = s->registered;
    s->registered |= !*plain && s->join;
    s->last_plain = *plain;
    *renew = !*plain && renew_due;
    if (*renew)
        s->renewed_us = rl_now_us();
    if (s->listen)
        atomic_store(&s->w.woken, 0);
    *drop = registered && !keeps_place(lock);
}

/* What attempt n's result rc (h: what its refusals said) tells the wait. */
static void after_attempt(redlock_lock *lock, uint64_t n, rl_waiting *s, wait_hint *h, int rc)
{
    if (s->woke && rc == REDLOCK_ENOTACQUIRED && h->yes == 0)
        rl_wake_spend(lock->client, &s->w);   /* taken again: the same release's other messages wake nobody */
    /* A plain refusal says nothing of the holder. It may be one that came
     * in just now, whose release will wake us; but a refusal can also come
     * from a node the release that woke us has not reached yet, and a
     * holder that came straight back may lose its round and clean up
     * without waking anyone, leaving the lock free while this release is
     * spent (models/wake.pml, wake-only-spent). So ask again soon, with
     * the script, which tells the holder's real TTL and whether its
     * release wakes us: a few ms, not the TTL. */
    if (s->woken_plain && rc == REDLOCK_ENOTACQUIRED && h->yes == 0 && h->trouble == 0) {
        h->marked = h->no;
        h->hint_ms = 1;
    }
    if (s->join && rc == REDLOCK_ENOTACQUIRED)
        lock->contended = 1;
    else if (s->join && rc == 0 && n == 1)
        lock->contended = 0;
}

/* The wait ends with code, the last attempt's detail kept in the message. */
static int give_up(redlock_lock *lock, int code, const char *what, uint64_t n)
{
    char last[RL_MSG_MAX];
    rl_fmt(last, sizeof last, "%s", rl_errmsg(lock));
    return rl_lock_err(lock, code, "%s %llu attempt%s; last attempt: %.1900s", what, (unsigned long long)n,
                       n == 1 ? "" : "s", last);
}

/* After a failed attempt n: 1 to try again once *delay_us has passed (a
 * wake-up or a cancel cuts it short: rl_acq_woke), or 0 with *rc the
 * call's result. */
static int plan_retry(redlock_lock *lock, uint64_t n, rl_waiting *s, const wait_hint *h, int calm, int plain, int *rc,
                      int64_t *delay_us)
{
    if (!redlock_error_is_retryable(*rc))
        return 0;
    if (s->max_attempts > 1 && unreachable_too_long(lock, &s->reached_us, n)) {
        *rc = REDLOCK_EUNREACHABLE;
        return 0;
    }
    if (n >= s->max_attempts) {
        /* Out of attempts with no quorum of nodes reachable: naming them
         * says more than "no quorum", and the same as a wait bounded by
         * time says once unreachable_ms has passed. */
        size_t down = unreachable_nodes(lock);
        if (n > 1 && (int)(lock->client->n - down) < lock->client->quorum)
            *rc = fail_unreachable(lock, rl_now_us() - s->start, n, down);
        else if (n > 1)
            rl_append(rl_errbuf(lock), RL_MSG_MAX, " (after %llu attempts)", (unsigned long long)n);
        return 0;
    }
    int64_t now = rl_now_us();
    if (s->deadline && now >= s->deadline) {
        char what[64];
        rl_fmt(what, sizeof what, "gave up after %lld ms and", (long long)((now - s->start) / 1000));
        *rc = give_up(lock, REDLOCK_ETIMEDOUT, what, n);
        return 0;
    }
    if (s->listen)
        rl_wake_listen(lock->client, &s->w);
    if (calm < 0)
        calm = rl_wake_calm(lock->client);
    /* A plain first attempt that was refused registers at once, when the
     * wait is bounded by time; a wait bounded by a number of attempts
     * keeps its retry delay between them. */
    int counted = s->max_attempts != UINT64_MAX;
    int64_t delay = plain && !s->woken_plain && calm && !counted && *rc == REDLOCK_ENOTACQUIRED
                    ? 0 : retry_delay(lock, *rc, h, s->listen, counted, calm);
    if (lock->kind->cap_delay)
        delay = lock->kind->cap_delay(lock, delay);   /* a writer: back before its intent lapses */
    if (s->deadline && now + delay > s->deadline)
        delay = s->deadline - now;
    *delay_us = delay;
    return 1;
}

int rl_acq_begin(rl_acq *a, redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms)
{
    a->lock = lock;
    a->ttl_ms = ttl_ms;
    a->n = 0;
    a->begun_us = rl_now_us();
    lock->attempts = 0;
    a->rc = check_acquire(lock, ttl_ms, wait_ms);
    a->begun = a->rc == 0;   /* else rl_acq_end has nothing to undo */
    if (!a->begun)
        return 0;
    begin_waiting(lock, wait_ms, &a->s);
    lock->rw_waiting = a->s.max_attempts > 1;
    return 1;
}

int rl_acq_attempt_begin(rl_acq *a, rl_round *r, char mode[8])
{
    redlock_lock *lock = a->lock;
    int renew, drop;
    a->n++;
    choose_attempt(lock, a->n, &a->s, &a->calm, &a->plain, &renew, &drop);
    return rl_attempt_begin(lock, r, a->ttl_ms, a->plain ? "" : a->s.member, a->s.ticket, a->calm > 0, renew, drop,
                            mode);
}

int rl_acq_attempt_end(rl_acq *a, rl_round *r, int rc)
{
    redlock_lock *lock = a->lock;
    wait_hint h = { 0, 0, 0, 0, -1 };
    int64_t delay = 0;
    if (r && !rc) {
        uint64_t n = a->n;
        rc = rl_attempt_end(lock, r, a->ttl_ms, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n,
                            a->plain ? "" : a->s.member, &h);
    }
    after_attempt(lock, a->n, &a->s, &h, rc);
    a->rc = rc;
    if (a->rc == 0 || !plan_retry(lock, a->n, &a->s, &h, a->calm, a->plain, &a->rc, &delay))
        return 0;
    a->nap_until_us = rl_now_us() + delay;
    return 1;
}

int rl_acq_attempt(rl_acq *a)
{
    redlock_lock *lock = a->lock;
    rl_round r;
    char mode[8];
    int rc = rl_acq_attempt_begin(a, &r, mode);
    if (rc == 0 && lock->kind->run_acquire) {
        rc = lock->kind->run_acquire(lock, &r);   /* a semaphore may ask again for free slots */
        if (rc)
            atomic_store(&lock->state, LOCK_IDLE);
    } else if (rc == 0) {
        rl_epoch_run(lock->client, &r);   /* a node out of the vote does not count (epoch.c) */
    }
    return rl_acq_attempt_end(a, &r, rc);
}

int rl_acq_batches(const rl_acq *a)
{
    return !a->lock->kind->run_acquire;
}

int rl_acq_nap_state(rl_acq *a)
{
    return nap_state(a->lock, a->s.listen ? &a->s.w : NULL, a->nap_until_us);
}

void rl_acq_drain(rl_acq *a, int fd)
{
    drain_wake_fd(a->lock, fd, a->s.listen);
}

/* A wake-up cuts any sleep short: the releases and leaves that wake
 * anyone find the lock free, and clean-ups wake nobody, so waiters do not
 * wake each other in a loop during an outage. */
int rl_acq_woke(rl_acq *a, int why)
{
    redlock_lock *lock = a->lock;
    rl_waiting *s = &a->s;
    if (why == REDLOCK_ECANCELED) {
        a->rc = give_up(lock, REDLOCK_ECANCELED, "wait cancelled after", a->n);
        return 0;
    }
    s->woke = why == 1;
    if (why == 1)
        rl_emit_woken(lock, a->n + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(a->n + 1), (size_t)atomic_load(&s->w.node));
    if (s->listen)
        rl_wake_report(lock->client, lock);
    return 1;
}

int rl_acq_end(rl_acq *a)
{
    redlock_lock *lock = a->lock;
    rl_waiting *s = &a->s;
    int rc = a->rc;
    if (!a->begun) {
        rl_emit_acquire_done(lock, rc, a->begun_us);
        return rc;
    }
    if (s->join) {
        rl_wake_leave(lock->client, &s->w);
        /* Registered, then given up: the registration leaves everywhere.
         * Registered, then acquired by a plain attempt (after a wake-up,
         * or while the nodes were not calm), or in fair mode: the release
         * takes it out of the queue, in the same script, at no extra
         * round trip. */
        if (s->registered && rc != 0)
            rl_leave_queue(lock, s->member, NULL, 1);
        else if (s->registered && (s->last_plain || keeps_place(lock)))
            memcpy(lock->member, s->member, sizeof s->member);
    }
    if (s->listen)
        rl_wake_report(lock->client, lock);
    /* A writer that stops waiting holds readers up no longer. */
    if (rc != 0 && lock->kind->give_up)
        lock->kind->give_up(lock, s->join ? s->member : "");
    rl_emit_acquire_done(lock, rc, a->begun_us);
    return rc;
}

int redlock_lock_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms)
{
    if (!lock)
        return REDLOCK_EINVAL;
    if (rl_async_pending(lock))
        return REDLOCK_ESTATE;      /* the handle's message is the acquire's */
    /* A new acquisition: the auto-extension of the last one (lost or
     * expired) is over. Not under the mutex: the thread may be working on
     * this lock and need it. */
    if (!redlock_lock_is_held(lock))
        rl_watch_remove(lock);
    pthread_mutex_lock(&lock->mu);
    rl_acq a;
    if (rl_acq_begin(&a, lock, ttl_ms, wait_ms)) {
        while (rl_acq_attempt(&a)) {
            int why = nap(lock, a.nap_until_us - rl_now_us(), a.s.listen ? &a.s.w : NULL, a.s.listen);
            if (!rl_acq_woke(&a, why))
                break;
        }
    }
    int rc = rl_acq_end(&a);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

void redlock_lock_cancel(redlock_lock *lock)
{
    if (lock)
        rl_lock_cancel_now(lock);
}

static int acquire_new(redlock_client *client, const char *resource, uint32_t ttl_ms,
                       int64_t wait_ms, redlock_lock **out)
{
    redlock_lock *lock;
    if (!out)
        return REDLOCK_EINVAL;
    *out = NULL;
    int rc = redlock_lock_new(&lock, client, resource);
    if (rc)
        return rc;
    rc = redlock_lock_acquire(lock, ttl_ms, wait_ms);
    if (rc) {
        redlock_lock_free(lock);
        return rc;
    }
    *out = lock;
    return 0;
}

void redlock_lock_cancel_reset(redlock_lock *lock)
{
    if (!lock)
        return;
    atomic_store(&lock->cancel, 0);
    int fd = atomic_load(&lock->wake_fd);
    if (fd >= 0) {
        uint64_t v;
        ssize_t rd = read(fd, &v, sizeof v);  /* drain a pending wake-up */
        (void)rd;
    }
}

int redlock_acquire(redlock_lock **out, redlock_client *client, const char *resource, uint32_t ttl_ms)
{
    return acquire_new(client, resource, ttl_ms, REDLOCK_WAIT_DEFAULT, out);
}

int redlock_try_acquire(redlock_lock **out, redlock_client *client, const char *resource, uint32_t ttl_ms)
{
    return acquire_new(client, resource, ttl_ms, REDLOCK_WAIT_NONE, out);
}

/* An extension, by the owner or by the auto-extend thread (automatic), with
 * the lock's mutex held; the reason of a failure goes to m. */
