/* SPDX-License-Identifier: BSD-3-Clause */
/* mux.c: the client's multiplexer. Every lock of a client shares one
 * connection per node; the thread of some round under way drives all of
 * them (the leader: one poll() over every socket, replies handed to the
 * rounds they answer), the others wait for their round to be decided (the
 * followers). A leader whose round is decided passes the lead on and
 * returns. What is left unfinished when no round is under way (a connect,
 * a TLS handshake, a write the socket did not take whole, replies still
 * owed) is finished by a helper thread, started on first need, so that
 * what a call handed to the nodes is done without another call.
 * docs/design.md has the reasons. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#define HELPER_SLICE_US 50000   /* the helper's longest poll before it looks around */
/* Replies still owed when a round returns are read by the helper only once
 * no round has returned for this long: a busy client's next round reads
 * them on its way, with no hand-off between threads, and the helper looks
 * at most this often while rounds come and go. */
#define HELPER_GRACE_US 5000

static pthread_mutex_t fork_mu = PTHREAD_MUTEX_INITIALIZER;


static void cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);  /* the clock of rl_now_us */
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

static void cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until_us)
{
    if (until_us == INT64_MAX) {
        pthread_cond_wait(cv, mu);
        return;
    }
    struct timespec ts = { (time_t)(until_us / 1000000), (long)(until_us % 1000000) * 1000 };
    pthread_cond_timedwait(cv, mu, &ts);
}

int rl_io_init(redlock_client *cl)
{
    rl_io *io = calloc(1, sizeof *io);
    if (!io)
        return REDLOCK_ENOMEM;
    io->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (io->wake_fd < 0) {
        free(io);
        return REDLOCK_EIO;
    }
    if (rl_listen_new_id(io->wake_id) != 0) {
        close(io->wake_fd);
        free(io);
        return REDLOCK_EIO;
    }
    pthread_mutex_init(&io->mu, NULL);
    cond_init(&io->helper_cv);
    io->pid = rl_pid();
    cl->io = io;
    return 0;
}

/* In a forked child the parent's other threads are gone: a leader, the
 * helper and rounds under way among them. Start over with no connections
 * (those are the parent's). */
static void after_fork(redlock_client *cl)
{
    rl_io *io = cl->io;
    pthread_mutex_lock(&fork_mu);
    if (io->pid != rl_pid()) {
        pthread_mutex_init(&io->mu, NULL);
        cond_init(&io->helper_cv);
        io->leader = io->polling = io->followers = 0;
        io->helper_started = io->helper_stop = io->helper_busy = io->helper_idle = 0;
        /* The parent's helper ran on this mapping; no thread does here. It
         * stays mapped while the client lives, so that no new thread's stack
         * lands at its address (its id: ThreadSanitizer, again). Past a few
         * generations of forks it is left mapped for good (address space,
         * not memory: the pages are the parent's, shared until written). */
        if (io->helper_stack && io->nstale < RL_STALE_STACKS) {
            io->stale_stack[io->nstale] = io->helper_stack;
            io->stale_stack_len[io->nstale++] = io->helper_stack_len;
        }
        io->helper_stack = NULL;
        io->helper_stack_len = 0;
        io->active = NULL;
        /* The waiters were the parent's threads; this process is another
         * client to the nodes, with a channel of its own. */
        io->waiters = NULL;
        io->nwaiters = 0;
        if (rl_listen_new_id(io->wake_id) != 0)
            io->wake_id[0] = 'f';   /* still differs from the parent's in most cases; only wake-ups suffer */
        for (size_t i = 0; i < cl->n; i++) {
            rl_conn_free(cl, i);   /* drops the parent's sockets without I/O */
            rl_listen_free(cl, i);
        }
        for (size_t j = cl->n; j < rl_nconns(cl); j++)
            rl_conn_free(cl, j);   /* a cluster's shard connections (route.c) */
        /* A wake-up meant for the parent's leader must not be taken here. */
        int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (fd >= 0) {
            close(io->wake_fd);
            io->wake_fd = fd;
        }
        io->pid = rl_pid();
    }
    pthread_mutex_unlock(&fork_mu);
}

void rl_io_enter(redlock_client *cl)
{
    if (cl->io->pid != rl_pid())
        after_fork(cl);
    pthread_mutex_lock(&cl->io->mu);
}

void rl_io_leave(redlock_client *cl)
{
    pthread_mutex_unlock(&cl->io->mu);
}

/* Deadlines of every round under way that have passed. */
static void expire(redlock_client *cl, int64_t now)
{
    for (rl_round *r = cl->io->active; r; r = r->next)
        for (size_t i = 0; i < r->n; i++)
            if (r->out[i] == RL_PENDING && r->deadline[i] <= now)
                rl_conn_expire(cl, i, r, now);
}

static int64_t next_deadline(redlock_client *cl)
{
    int64_t next = INT64_MAX;
    for (rl_round *r = cl->io->active; r; r = r->next)
        for (size_t i = 0; i < r->n; i++)
            if (r->out[i] == RL_PENDING && r->deadline[i] < next)
                next = r->deadline[i];
    return next;
}

#define POLL_MAX (2 * REDLOCK_MAX_NODES + 128 + 1)   /* + route.c's shard connections */
typedef struct pollset {
    struct pollfd pfd[POLL_MAX];
    size_t map[POLL_MAX];
    uint32_t gen[POLL_MAX];
    unsigned char listen[POLL_MAX];   /* a wake-up listener, not a lock connection */
    nfds_t n;
} pollset;

/* The wake eventfd first (the leader's; -1, which poll() skips, for anyone
 * else), then every connection that has something to wait for, then the
 * listeners while anyone waits. */
static void pollset_build(redlock_client *cl, pollset *ps, int leader)
{
    ps->n = 0;
    ps->pfd[ps->n].fd = leader ? cl->io->wake_fd : -1;
    ps->pfd[ps->n].events = POLLIN;
    ps->pfd[ps->n].revents = 0;
    ps->n++;
    for (size_t i = 0; i < rl_nconns(cl); i++) {
        short ev = rl_conn_poll_events(cl, i);
        if (!ev)
            continue;
        ps->pfd[ps->n].fd = rl_nodeat(cl, i)->conn->ctx->fd;
        ps->pfd[ps->n].events = ev;
        ps->map[ps->n] = i;
        ps->gen[ps->n] = rl_nodeat(cl, i)->conn->gen;
        ps->listen[ps->n] = 0;
        ps->n++;
    }
    for (size_t i = 0; i < cl->n; i++) {
        short ev = rl_listen_poll_events(cl, i);
        if (!ev)
            continue;
        ps->pfd[ps->n].fd = rl_listen_fd(cl, i, &ps->gen[ps->n]);
        ps->pfd[ps->n].events = ev;
        ps->map[ps->n] = i;
        ps->listen[ps->n] = 1;
        ps->n++;
    }
}

/* What poll() found; mu held. */
static void pollset_handle(redlock_client *cl, pollset *ps, int64_t now)
{
    for (nfds_t k = 0; k < ps->n; k++) {
        if (!ps->pfd[k].revents)
            continue;
        if (k == 0) {
            uint64_t v;
            ssize_t rd = read(cl->io->wake_fd, &v, sizeof v);
            (void)rd;
            continue;
        }
        size_t i = ps->map[k];
        if (ps->listen[k]) {
            uint32_t gen;
            if (rl_listen_fd(cl, i, &gen) >= 0 && gen == ps->gen[k] &&
                rl_listen_events(cl, i, ps->pfd[k].revents, now))
                rl_io_wake_leader(cl);
            continue;
        }
        rl_conn *c = rl_nodeat(cl, i)->conn;
        /* Another thread may have read it, or closed and reopened it, meanwhile:
         * a stale event then finds nothing to read. */
        if (c && c->state != RL_CONN_CLOSED && c->gen == ps->gen[k])
            rl_conn_events(cl, i, ps->pfd[k].revents, now);
    }
}

/* One poll() over every connection, then what it found: the leader's work,
 * with mu held on entry and exit (released while in poll). */
static void drive(redlock_client *cl, int64_t max_wait_us)
{
    rl_io *io = cl->io;
    pollset ps;
    int64_t now = rl_now_us(), until = next_deadline(cl);
    int64_t due = rl_listen_maintain(cl, now);
    if (due < until)
        until = due;
    pollset_build(cl, &ps, 1);
    if (max_wait_us >= 0 && now + max_wait_us < until)
        until = now + max_wait_us;
    int64_t wait_us = until == INT64_MAX ? -1 : until - now;
    int timeout = wait_us < 0 ? (until == INT64_MAX ? -1 : 0) : (int)((wait_us + 999) / 1000);
    io->polling = 1;
    pthread_mutex_unlock(&io->mu);
    int n = poll(ps.pfd, ps.n, timeout);
    int saved = errno;
    pthread_mutex_lock(&io->mu);
    io->polling = 0;
    if (n < 0 && saved != EINTR) {
        /* Only EINVAL/ENOMEM: nothing sensible to wait on; let deadlines run. */
        struct timespec ts = { 0, 1000000 };
        pthread_mutex_unlock(&io->mu);
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&io->mu);
    }
    now = rl_now_us();
    if (n > 0)
        pollset_handle(cl, &ps, now);
    expire(cl, now);
    for (size_t i = 0; i < rl_nconns(cl); i++)
        rl_conn_check_stall(cl, i, now);
}

/* A follower whose deadline came: read whatever has arrived, without
 * waiting and without taking the lead (mu held throughout). A leader that
 * the scheduler has not run for a while must not make the replies sitting
 * in its sockets count as timeouts. */
static void drive_now(redlock_client *cl)
{
    pollset ps;
    pollset_build(cl, &ps, 0);
    if (poll(ps.pfd, ps.n, 0) > 0)
        pollset_handle(cl, &ps, rl_now_us());
}

static int needs_driving(const redlock_client *cl)
{
    for (size_t i = 0; i < rl_nconns(cl); i++)
        if (rl_conn_needs_driving(cl, i))
            return 1;
    return 0;
}

/* Late replies that a leave or a release waits on: read them soon. */
static int late_cmds(const redlock_client *cl)
{
    for (size_t i = 0; i < rl_nconns(cl); i++)
        if (rl_conn_late_cmds(cl, i))
            return 1;
    return 0;
}

static int owes_anything(const redlock_client *cl)
{
    for (size_t i = 0; i < rl_nconns(cl); i++)
        if (rl_conn_owed(cl, i))
            return 1;
    return 0;
}

/* The leader is done: a follower takes over, or the helper if something
 * must still be driven. */
static void pass_lead(redlock_client *cl)
{
    rl_io *io = cl->io;
    io->leader = 0;
    for (rl_round *r = io->active; r; r = r->next) {
        if (r->following) {
            pthread_cond_signal(&r->cv);
            return;
        }
    }
    /* A connect, a handshake or a write needs a driver now, and so do the
     * listeners while someone waits for a release, and late replies that
     * a leave or a release waits on. Other replies still owed must be read
     * too, even if the caller makes no further call: a late NOSCRIPT to a
     * release decided without its node is answered by sending the release
     * again (as EVAL), and that is all that deletes the key there. The
     * helper reads them once the client has been quiet for a moment
     * (HELPER_GRACE_US); it is told only when it sleeps with nothing to do,
     * so a busy client pays no wake-up per round. */
    if (needs_driving(cl) || io->nwaiters || late_cmds(cl))
        rl_io_kick(cl);
    else if ((!io->helper_started || io->helper_idle) && owes_anything(cl))
        rl_io_kick(cl);
}

static void *helper_main(void *arg)
{
    redlock_client *cl = arg;
    rl_io *io = cl->io;
    pthread_mutex_lock(&io->mu);
    while (!io->helper_stop) {
        int urgent = needs_driving(cl) || io->nwaiters || late_cmds(cl);
        int owed = !urgent && owes_anything(cl);
        int64_t until = INT64_MAX;
        if ((io->leader || io->followers) && owed) {
            /* A round under way reads them, and the next may too: look
             * again later rather than be told when each round returns. */
            until = rl_now_us() + HELPER_GRACE_US;
        } else if (!io->leader && !io->followers && (urgent || owed)) {
            int64_t quiet_at = io->last_round_us + HELPER_GRACE_US;
            if (urgent || rl_now_us() >= quiet_at) {
                /* Finish writes and connects, and read what is owed (a
                 * NOSCRIPT to re-send, a connection to close once it
                 * stalls): poll() sleeps until a reply comes, and gives the
                 * lead up at once to a round that arrives (it writes the
                 * wake eventfd), so a caller rarely waits for it. */
                io->leader = io->helper_busy = 1;
                drive(cl, HELPER_SLICE_US);
                io->helper_busy = 0;
                pass_lead(cl);
                continue;
            }
            until = quiet_at;   /* a round just returned: the next one may read them */
        }
        if (io->helper_stop)
            break;
        /* Nothing owed, or urgent work a round under way drives (pass_lead
         * tells us if it is left undone): sleep until told. */
        io->helper_idle = until == INT64_MAX;
        cond_wait_until(&io->helper_cv, &io->mu, until);
        io->helper_idle = 0;
    }
    pthread_mutex_unlock(&io->mu);
    return NULL;
}

/* The helper runs on a stack of its own, not one from glibc's cache. In a
 * forked child, glibc hands a new thread the stack, and so the id, of a
 * parent thread that does not exist there; a helper alive in the parent
 * at fork() made the child's helper such a thread, which ThreadSanitizer
 * (still counting the parent's as alive) aborts on. Its own mapping gives
 * it an id no thread has had. The default size, reserved, not committed. */
static pthread_attr_t *helper_stack(rl_io *io, pthread_attr_t *attr)
{
    size_t size = 0, page = (size_t)sysconf(_SC_PAGESIZE);
    pthread_attr_t dflt;
    if (pthread_getattr_default_np(&dflt) == 0) {
        pthread_attr_getstacksize(&dflt, &size);
        pthread_attr_destroy(&dflt);
    }
    if (size < ((size_t)1 << 20))
        size = (size_t)1 << 20;
    size = (size + page - 1) / page * page;
    void *stk = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE,
                     -1, 0);
    if (stk == MAP_FAILED)
        return NULL;   /* glibc's, then */
    if (mprotect(stk, page, PROT_NONE) != 0 || pthread_attr_init(attr) != 0) {   /* a guard page below */
        munmap(stk, size + page);
        return NULL;
    }
    if (pthread_attr_setstack(attr, (char *)stk + page, size) != 0) {
        pthread_attr_destroy(attr);
        munmap(stk, size + page);
        return NULL;
    }
    io->helper_stack = stk;
    io->helper_stack_len = size + page;
    return attr;
}

/* The stack of a forked parent's helper, when the client is freed. */
static void stale_stack_free(rl_io *io)
{
    while (io->nstale > 0) {
        io->nstale--;
        munmap(io->stale_stack[io->nstale], io->stale_stack_len[io->nstale]);
    }
}

/* Once no thread runs on it: after the join. */
static void helper_stack_free(rl_io *io)
{
    if (io->helper_stack)
        munmap(io->helper_stack, io->helper_stack_len);
    io->helper_stack = NULL;
    io->helper_stack_len = 0;
}

void rl_io_wake_leader(redlock_client *cl)
{
    if (cl->io->polling) {
        uint64_t one = 1;
        ssize_t w = write(cl->io->wake_fd, &one, sizeof one);
        (void)w;
    }
}

void rl_io_kick(redlock_client *cl)
{
    rl_io *io = cl->io;
    if (io->polling) {
        uint64_t one = 1;
        ssize_t w = write(io->wake_fd, &one, sizeof one);
        (void)w;
        return;
    }
    if (io->leader)
        return;   /* it looks at every connection before it polls again */
    if (!io->helper_started) {
        /* Signals are for the application's threads, never this one: blocked
         * before it exists, so none can land on it while it starts. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_t attr, *ap = helper_stack(io, &attr);
        int rc = pthread_create(&io->thread, ap, helper_main, cl);
        if (ap)
            pthread_attr_destroy(ap);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            helper_stack_free(io);
            return;   /* rounds still drive everything; only idle time is lost */
        }
        io->helper_started = 1;
    }
    pthread_cond_signal(&io->helper_cv);
}

void rl_io_wait(redlock_client *cl, rl_round *r)
{
    rl_io *io = cl->io;
    while (!rl_round_decided(r) || rl_round_gated(cl, r)) {
        if (!io->leader) {
            io->leader = 1;
            drive(cl, -1);
            io->leader = 0;
            continue;
        }
        /* Someone else drives: wait to be told the round is decided, or to
         * take over the lead. The helper yields at once. */
        if (io->helper_busy && io->polling) {
            uint64_t one = 1;
            ssize_t w = write(io->wake_fd, &one, sizeof one);
            (void)w;
        }
        if (!r->cv_ready) {
            /* Made only for a round that waits for another thread: a round
             * on its own thread never needs it. */
            cond_init(&r->cv);
            r->cv_ready = 1;
        }
        r->following = 1;
        io->followers++;
        int64_t next = INT64_MAX;
        for (size_t i = 0; i < r->n; i++)
            if (r->out[i] == RL_PENDING && r->deadline[i] < next)
                next = r->deadline[i];
        cond_wait_until(&r->cv, &io->mu, next);
        io->followers--;
        r->following = 0;
        if ((!rl_round_decided(r) || rl_round_gated(cl, r)) && rl_now_us() >= next)
            drive_now(cl);
        int64_t now = rl_now_us();
        for (size_t i = 0; i < r->n; i++)
            if (r->out[i] == RL_PENDING && r->deadline[i] <= now)
                rl_conn_expire(cl, i, r, now);
    }
    r->decided_us = rl_now_us();
}

void rl_io_done(redlock_client *cl)
{
    cl->io->last_round_us = rl_now_us();
    if (!cl->io->leader)
        pass_lead(cl);
}

static void stop_helper(redlock_client *cl)
{
    rl_io *io = cl->io;
    pthread_mutex_lock(&io->mu);
    int started = io->helper_started;
    io->helper_stop = 1;
    pthread_cond_signal(&io->helper_cv);
    if (io->helper_busy && io->polling) {
        uint64_t one = 1;   /* out of its poll() now, not at the end of its slice */
        ssize_t w = write(io->wake_fd, &one, sizeof one);
        (void)w;
    }
    pthread_mutex_unlock(&io->mu);
    if (started && io->pid == rl_pid()) {
        pthread_join(io->thread, NULL);
        helper_stack_free(io);
    }
    io->helper_started = 0;
}

static uint64_t owed_total(const redlock_client *cl)
{
    uint64_t n = 0;
    for (size_t i = 0; i < rl_nconns(cl); i++)
        n += rl_conn_owed(cl, i);
    return n;
}

void rl_io_settle(redlock_client *cl, int64_t deadline_us)
{
    if (!cl->io)
        return;
    if (cl->io->pid != rl_pid())
        after_fork(cl);
    stop_helper(cl);
    rl_io *io = cl->io;
    rl_sigpipe pipe;
    rl_sigpipe_block(cl, &pipe);
    pthread_mutex_lock(&io->mu);
    /* The last user: drive alone until nothing is owed, up to deadline_us,
     * a node gone quiet (paused) included. Closing a socket before the
     * node has read what it owes is not enough: when it wakes, it reads
     * one buffer (16 KB in Redis), runs it and replies; the reply meets
     * the closed socket, the RST comes back, and the node drops the rest
     * unread. A backlog built while it was paused holds SETs and the
     * releases behind them; one cut between the two leaves our key until
     * its TTL. */
    while (!io->leader && (needs_driving(cl) || owed_total(cl))) {
        int64_t now = rl_now_us();
        if (now >= deadline_us)
            break;
        io->leader = 1;
        drive(cl, deadline_us - now);
        io->leader = 0;
    }
    pthread_mutex_unlock(&io->mu);
    rl_sigpipe_restore(&pipe);
}

void rl_io_destroy(redlock_client *cl)
{
    rl_io *io = cl->io;
    if (!io)
        return;
    if (io->pid != rl_pid())
        after_fork(cl);
    stop_helper(cl);
    for (size_t i = 0; i < cl->n; i++) {
        rl_conn_free(cl, i);
        rl_listen_free(cl, i);
    }
    for (size_t j = cl->n; j < rl_nconns(cl); j++)
        rl_conn_free(cl, j);
    rl_route_free(cl);
    stale_stack_free(io);
    close(io->wake_fd);
    pthread_cond_destroy(&io->helper_cv);
    pthread_mutex_destroy(&io->mu);
    free(io);
    cl->io = NULL;
}
