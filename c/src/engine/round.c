/* SPDX-License-Identifier: BSD-3-Clause */
/* round.c: one round: the same command to every node at once, returned as
 * soon as its outcome is decided at quorum (decide.c says which nodes it
 * still needs). The nodes it did not wait for keep their command: the
 * connection writes it whole and reads its reply later (conn.c), so a
 * release still reaches every node it can. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "engine.h"

/* Before a round is linked: nothing heard from any node yet. */
static void prepare(redlock_client *cl, rl_round *r)
{
    r->via_fcall = (cl->opts.flags & REDLOCK_OPT_FUNCTIONS) != 0;
    memset(r->fmt, 0, sizeof r->fmt);
    for (size_t i = 0; i < r->n; i++) {
        r->out[i] = RL_PENDING;
        r->msg[i][0] = '\0';
        r->rtt_us[i] = 0;
        r->sent[i] = 0;
        r->counter[i] = 0;
        r->hint_ms[i] = -1;
        r->marked[i] = 0;
        r->unreachable[i] = 0;
        r->resent[i] = 0;
        r->deadline[i] = INT64_MAX;
    }
    r->following = r->cv_ready = 0;
    r->decided_us = 0;
}

/* Linked and handed to every node's connection (mu held): 1 if the leader
 * must be woken. */
static int submit(redlock_client *cl, rl_round *r)
{
    rl_io *io = cl->io;
    r->next = io->active;
    io->active = r;
    int64_t now = rl_now_us();
    int wake = 0;
    for (size_t i = 0; i < r->n; i++)
        wake |= rl_conn_submit(cl, i, r, now);
    return wake;
}

/* Decided: the nodes not waited for keep their command as an orphan, and
 * the round leaves the list (mu held). */
static void unlink_round(redlock_client *cl, rl_round *r)
{
    rl_io *io = cl->io;
    if (!r->decided_us)
        r->decided_us = rl_now_us();
    for (size_t i = 0; i < r->n; i++)
        rl_conn_orphan(cl, i, r);
    for (rl_round **p = &io->active; *p; p = &(*p)->next) {
        if (*p == r) {
            *p = r->next;
            break;
        }
    }
}

static void cleanup(rl_round *r)
{
    if (r->cv_ready)
        pthread_cond_destroy(&r->cv);
    for (size_t k = 0; k < sizeof r->fmt / sizeof r->fmt[0]; k++)
        redisFreeCommand(r->fmt[k]);
}

void rl_round_run(redlock_client *cl, rl_round *r)
{
    rl_scripts_init();
    rl_sigpipe pipe;
    rl_sigpipe_block(cl, &pipe);
    prepare(cl, r);
    rl_io_enter(cl);
    if (submit(cl, r))
        rl_io_wake_leader(cl);
    if (!r->no_wait)
        rl_io_wait(cl, r);
    unlink_round(cl, r);
    rl_io_done(cl);
    rl_io_leave(cl);
    cleanup(r);
    rl_sigpipe_restore(&pipe);
}

void rl_round_run_many(redlock_client *cl, rl_round *rounds, size_t n)
{
    rl_scripts_init();
    rl_sigpipe pipe;
    rl_sigpipe_block(cl, &pipe);
    for (size_t k = 0; k < n; k++)
        prepare(cl, &rounds[k]);
    rl_io_enter(cl);
    int wake = 0;
    for (size_t k = 0; k < n; k++)
        wake |= submit(cl, &rounds[k]);
    if (wake)
        rl_io_wake_leader(cl);
    /* Whoever drives reads every connection: while this thread waits for
     * the first round, the others' replies are read too. A round is taken
     * off the list as soon as it is decided, so that its stragglers become
     * orphans and nothing waits for them. */
    for (size_t k = 0; k < n; k++) {
        if (!rounds[k].no_wait)
            rl_io_wait(cl, &rounds[k]);
        unlink_round(cl, &rounds[k]);
    }
    rl_io_done(cl);
    rl_io_leave(cl);
    for (size_t k = 0; k < n; k++)
        cleanup(&rounds[k]);
    rl_sigpipe_restore(&pipe);
}

void rl_round_run_pairs(redlock_client *cl, rl_round *const *rs, rl_round *const *checks, size_t n)
{
    rl_scripts_init();
    rl_sigpipe pipe;
    rl_sigpipe_block(cl, &pipe);
    for (size_t k = 0; k < n; k++) {
        prepare(cl, rs[k]);
        if (checks && checks[k])
            prepare(cl, checks[k]);
    }
    rl_io_enter(cl);
    /* Every command but the last stays in its connection's buffer: the
     * last submit writes each node's whole batch at once. A node the last
     * round skips still has its bytes pending: the leader writes them once
     * woken (POLLOUT). */
    int wake = n > 1;
    cl->io->hold_flush = 1;
    for (size_t k = 0; k < n; k++) {
        rl_round *chk = checks ? checks[k] : NULL;
        if (k + 1 == n && !chk)
            cl->io->hold_flush = 0;
        wake |= submit(cl, rs[k]);
        if (k + 1 == n)
            cl->io->hold_flush = 0;
        if (chk)
            wake |= submit(cl, chk);
    }
    if (wake)
        rl_io_wake_leader(cl);
    for (size_t k = 0; k < n; k++) {
        if (!rs[k]->no_wait)
            rl_io_wait(cl, rs[k]);
        unlink_round(cl, rs[k]);
        if (checks && checks[k]) {
            rl_io_wait(cl, checks[k]);
            unlink_round(cl, checks[k]);
        }
    }
    rl_io_done(cl);
    rl_io_leave(cl);
    for (size_t k = 0; k < n; k++) {
        cleanup(rs[k]);
        if (checks && checks[k])
            cleanup(checks[k]);
    }
    rl_sigpipe_restore(&pipe);
}

void rl_round_run_checked(redlock_client *cl, rl_round *r, rl_round *check)
{
    rl_round_run_pairs(cl, &r, &check, 1);
}
