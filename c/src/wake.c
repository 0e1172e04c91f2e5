/* SPDX-License-Identifier: BSD-3-Clause */
/* wake.c: waiting acquires (docs/algorithm.md, "Waking waiters"). An
 * acquire that has to wait registers on the nodes under a name of the
 * client's (rl_wake_name), and joins the client's list of waiters while it
 * sleeps (rl_wake_listen), so that a release's message, read by the
 * engine's listener (engine/listen.c), wakes it. This file also says when
 * the queue can be trusted (rl_wake_calm) and tells on_event about the
 * listeners' states. The list is guarded by the client's I/O mutex. */
#include <stdatomic.h>
#include <string.h>

#include "engine/engine.h"

void rl_wake_name(redlock_client *cl, rl_waiter *w, redlock_lock *lock, char *member, size_t size)
{
    rl_io *io = cl->io;
    memset(w, 0, sizeof *w);
    w->lock = lock;
    atomic_init(&w->woken, 0);
    atomic_init(&w->node, 0);
    rl_io_enter(cl);
    w->id = ++io->waiter_seq;
    rl_fmt(member, size, "%s:%llu", io->wake_id, (unsigned long long)w->id);
    rl_io_leave(cl);
}

void rl_wake_listen(redlock_client *cl, rl_waiter *w)
{
    rl_io *io = cl->io;
    if (w->listening)
        return;
    rl_io_enter(cl);
    w->listening = 1;
    w->next = io->waiters;
    io->waiters = w;
    if (io->nwaiters++ == 0) {
        rl_listen_maintain(cl, rl_now_us());
        rl_io_kick(cl);   /* someone must read the listeners while we sleep */
    }
    rl_io_leave(cl);
}

void rl_wake_leave(redlock_client *cl, rl_waiter *w)
{
    rl_io *io = cl->io;
    if (!w->listening)
        return;
    rl_io_enter(cl);
    for (rl_waiter **p = &io->waiters; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            io->nwaiters--;
            break;
        }
    }
    rl_io_leave(cl);
}

void rl_wake_spend(redlock_client *cl, rl_waiter *w)
{
    rl_io_enter(cl);
    memcpy(w->spent, w->tag, sizeof w->spent);
    rl_io_leave(cl);
}

int rl_wake_ready(redlock_client *cl)
{
    int n = 0;
    rl_io_enter(cl);
    for (size_t i = 0; i < cl->n; i++)
        n += rl_listen_state(cl, i, NULL, 0) == REDLOCK_LISTENER_READY;
    rl_io_leave(cl);
    return n;
}

int rl_wake_calm(redlock_client *cl)
{
    int64_t now = rl_now_us();
    int calm = 1;
    rl_io_enter(cl);
    for (size_t i = 0; i < cl->n && calm; i++)
        calm = rl_conn_calm(cl, i, now);
    rl_io_leave(cl);
    if (!calm)
        atomic_store(&cl->trouble_us, now);
    return calm && rl_policy_wake_calm(atomic_load(&cl->trouble_us), now);
}

void rl_wake_report(redlock_client *cl, const redlock_lock *lock)
{
    if (!cl->opts.on_event)
        return;
    enum { BATCH = 16 };
    rl_listen_change told[BATCH];
    size_t node[BATCH];
    for (;;) {
        size_t n = 0;
        rl_io_enter(cl);
        for (size_t i = 0; i < cl->n && n < BATCH; i++) {
            size_t k = rl_listen_untold(cl, i, &told[n], BATCH - n);
            for (; k; k--)
                node[n++] = i;
        }
        rl_io_leave(cl);
        /* Outside the mutex: the hook may ask for listener states. */
        for (size_t k = 0; k < n; k++) {
            redlock_event ev;
            memset(&ev, 0, sizeof ev);
            ev.type = REDLOCK_EVENT_LISTENER;
            ev.lock = lock;
            ev.resource = lock->resource;
            ev.message = told[k].msg;
            ev.quorum = cl->quorum;
            ev.n_nodes = cl->n;
            ev.node = node[k];
            ev.listener_state = told[k].state;
            cl->opts.on_event(&ev, cl->opts.on_event_userdata);
        }
        if (n < BATCH)
            return;
    }
}

int redlock_client_listener_state(const redlock_client *client, size_t i, char *msgbuf, size_t msgbuf_size)
{
    if (!client || !client->io || i >= client->n)
        return REDLOCK_EINVAL;
    redlock_client *cl = (redlock_client *)client;  /* the I/O mutex only */
    rl_io_enter(cl);
    int state = rl_listen_state(cl, i, msgbuf, msgbuf_size);
    rl_io_leave(cl);
    return state;
}
