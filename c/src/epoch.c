/* SPDX-License-Identifier: BSD-3-Clause */
/* epoch.c: the quarantine (docs/algorithm.md, "Quarantine"). Redlock's two
 * classic failures are a node that forgets the keys it held (a restart
 * without persistence, a wipe) and a node whose clock jumps forward (its
 * keys expire at once). Either can hand a second client a lock that the
 * first still holds. Each node keeps a marker key that goes with its
 * data: a node found without it has lost its data since the marker was
 * written. The marker's PTTL, centuries long, is also a clock (its expiry
 * is a fixed point on the node's wall clock), and a node whose PTTL fell
 * further between two checks than this client's clock (CLOCK_BOOTTIME)
 * moved, with its drift allowance, has jumped. Such a node is put out of
 * the vote on the node itself, so that every client sees it, for the
 * longest TTL the markers record plus its drift allowance: its marker's PTTL
 * is raised by that much (internal.h, RL_EPOCH_BASE_MS, says the bands),
 * and a key beside it says why. By then every lock it granted before the
 * loss has expired or holds a majority without it.
 *
 * The check is behind the acquisition's own command on each connection,
 * in the same write, and a grant counts only once the check that followed
 * it on that node found the node whole. It is a plain PTTL of the marker
 * once this client knows that the node records its TTL and that the ACL
 * allows PTTL; otherwise the script (scripts.c, rl_script_epoch), which
 * records the TTL and says both. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "engine/engine.h"

typedef struct epoch_state {
    int64_t until_us;          /* out of the vote until then (rl_now_us); 0: in */
    char why[96];
    int64_t pttl;              /* the marker's PTTL at its last check, 0: none yet */
    int64_t lo_us;             /* when that check was sent (CLOCK_BOOTTIME: suspend counts) */
    uint32_t recorded_ms;      /* the node's marker records a TTL at least this long */
    int pttl_ok;               /* the node's ACL allows PTTL: the plain check */
    int doubted;               /* until_us and why are this client's doubt (doubt) */
} epoch_state;

struct rl_epochs {
    pthread_mutex_t mu;
    char *mkey, *qkey;         /* the prefix's RL_KEY_EPOCH and RL_KEY_QUARANTINE (keys.h) */
    size_t mkey_len, qkey_len;
    /* A client with a cluster node keeps a marker per slot on every node
     * (epoch_keys_for), and a state per node and slot: slots[i][slot]
     * (calloc'd, so only the pages of slots in use are ever touched). */
    epoch_state **slots;
    epoch_state node[];
};

/* The marker and reason keys one check reads, and whose state they are:
 * the node-wide ones (slot -1), or the lock key's slot's on a client with
 * a cluster node. */
typedef struct epoch_keys {
    const char *m, *q;
    size_t m_len, q_len;
    int slot;
    char mbuf[REDLOCK_MAX_PREFIX_LEN + 48], qbuf[REDLOCK_MAX_PREFIX_LEN + 50];
} epoch_keys;

/* Node i's state for the keys of K; E->mu held. */
static epoch_state *st_of(struct rl_epochs *E, size_t i, const epoch_keys *K)
{
    return K->slot < 0 ? &E->node[i] : &E->slots[i][K->slot];
}

static int64_t boottime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int rl_epochs_new(redlock_client *c)
{
    struct rl_epochs *E = calloc(1, sizeof *E + c->n * sizeof(epoch_state));
    size_t len = c->prefix_len + sizeof RL_KEY_EPOCH - 1;
    if (E) {
        E->mkey = malloc(len + 1);
        E->qkey = malloc(len + 3);
    }
    if (!E || !E->mkey || !E->qkey) {
        if (E) {
            free(E->mkey);
            free(E->qkey);
        }
        free(E);
        return REDLOCK_ENOMEM;
    }
    snprintf(E->mkey, len + 1, "%s" RL_KEY_EPOCH, c->prefix);
    snprintf(E->qkey, len + 3, "%s" RL_KEY_QUARANTINE, E->mkey);
    E->mkey_len = len;
    E->qkey_len = len + 2;
    if (rl_client_has_cluster(c)) {
        E->slots = calloc(c->n, sizeof *E->slots);
        for (size_t i = 0; E->slots && i < c->n; i++) {
            if (!(E->slots[i] = calloc(RL_CLUSTER_SLOTS, sizeof(epoch_state)))) {
                for (size_t k = 0; k < i; k++)
                    free(E->slots[k]);
                free(E->slots);
                E->slots = NULL;
            }
        }
        if (!E->slots) {
            free(E->mkey);
            free(E->qkey);
            free(E);
            return REDLOCK_ENOMEM;
        }
    }
    pthread_mutex_init(&E->mu, NULL);
    c->epochs = E;
    return 0;
}

void rl_epochs_free(redlock_client *c)
{
    struct rl_epochs *E = c->epochs;
    if (!E)
        return;
    pthread_mutex_destroy(&E->mu);
    for (size_t i = 0; E->slots && i < c->n; i++)
        free(E->slots[i]);
    free(E->slots);
    free(E->mkey);
    free(E->qkey);
    free(E);
    c->epochs = NULL;
}

/* An RL_CMD_EPOCH round over r's nodes in mode (scripts.c, rl_script_epoch):
 * the check behind r, a full read, or a marking ('f', 'q', 'j'); what each
 * node says goes to ep. */
static void epoch_round(rl_round *e, redlock_client *c, const rl_round *r, const epoch_keys *K, const char *mode,
                        const char *qms, const char *why, rl_epoch_node *ep)
{
    e->cmd = RL_CMD_EPOCH;
    e->key = K->m;
    e->key_len = K->m_len;
    e->fkey = K->q;
    e->fkey_len = K->q_len;
    e->value = mode;
    e->token = qms;
    e->member = why;
    e->mode = "s";   /* the script; "p" the plain PTTL */
    e->ttl_ms = r->ttl_ms;
    e->start_us = rl_now_us();
    e->cap_us = 0;
    e->quorum = c->quorum;
    e->no_wait = 0;
    e->n = r->n;
    e->batch = NULL;
    e->multi = NULL;
    e->elect = NULL;
    e->epoch = ep;
    e->partner = NULL;
    memset(ep, 0, r->n * sizeof *ep);
}

/* The quarantine's length for a TTL: the TTL and its drift allowance. */
static int64_t epoch_length(const redlock_client *c, uint32_t ttl_ms)
{
    return (int64_t)ttl_ms + (int64_t)((double)ttl_ms * c->opts.drift_factor) + c->opts.drift_min_ms + 1;
}

/* The quarantine's length: the longest TTL the nodes record (this one's
 * included), read in full from every node that answers (the plain checks
 * do not say it), or the option quarantine_ttl_ms if longer, and its drift
 * allowance. */
static int64_t quarantine_ms(redlock_client *c, const rl_round *r, const epoch_keys *K, rl_epoch_node *ep)
{
    rl_round *m = malloc(sizeof *m);
    uint32_t longest = r->ttl_ms > c->opts.quarantine_ttl_ms ? r->ttl_ms : c->opts.quarantine_ttl_ms;
    if (m) {
        epoch_round(m, c, r, K, "c", "0", "", ep);
        int targets = 0;
        for (size_t i = 0; i < r->n; i++) {
            m->skip[i] = r->skip[i] == 1;
            targets += !m->skip[i];
        }
        m->quorum = targets;   /* every one that answers */
        rl_round_run(c, m);
        for (size_t i = 0; i < r->n; i++)
            if (ep[i].heard && ep[i].max_ttl_ms > longest)
                longest = ep[i].max_ttl_ms;
        free(m);
    }
    return epoch_length(c, longest);
}

/* Runs mode on the nodes marked in which[]: a marking, or "c" a full read. */
static void mark(redlock_client *c, const rl_round *r, const epoch_keys *K, const unsigned char *which,
                 const char *mode, int64_t q_ms, const char *why, rl_epoch_node *ep)
{
    rl_round *m = malloc(sizeof *m);
    memset(ep, 0, r->n * sizeof *ep);   /* nothing heard, if m cannot be made */
    if (!m)
        return;
    char qms[24];
    snprintf(qms, sizeof qms, "%lld", (long long)q_ms);
    epoch_round(m, c, r, K, mode, qms, why, ep);
    int targets = 0;
    for (size_t i = 0; i < r->n; i++) {
        m->skip[i] = !which[i];
        targets += which[i] != 0;
    }
    m->quorum = targets;   /* every one of them */
    rl_round_run(c, m);
    free(m);
}

/* The state node i's check (or marking) reply says; E->mu held. */
static void note(epoch_state *st, const rl_epoch_node *ep, int64_t q_ms, int64_t now)
{
    /* This client's doubt lasts its time whatever the node says, unless
     * the node's own quarantine ends later. */
    int64_t until = ep->q_ms == 0 ? 0 : now + (ep->q_ms > 0 ? ep->q_ms : q_ms) * 1000;
    if (st->doubted && st->until_us > now && st->until_us >= until)
        return;
    st->doubted = 0;
    st->until_us = until;
    if (until)
        rl_fmt(st->why, sizeof st->why, "%s", ep->why[0] ? ep->why : "quarantined");
}

/* Node i's clock ran ahead of this client's by more than a lock of the
 * round's TTL allows, over a span since this client's last reading longer
 * than that TTL: a step that expired a holder's key early, or drift that
 * the span's allowance covers; two readings cannot tell them apart
 * (models/mutex.pml, mutex-step-unseen). This client does not count the
 * node until a step before this reading would no longer matter: for as
 * long as a quarantine, the longest TTL known and its drift allowance.
 * It is this client's doubt, not written on the node: a client that read
 * the node within a TTL judges for itself. E->mu held. */
static void doubt(redlock_client *c, epoch_state *st, const rl_epoch_node *ep, uint32_t ttl_ms, int64_t now)
{
    uint32_t longest = ttl_ms;
    if (st->recorded_ms > longest)
        longest = st->recorded_ms;
    if (c->opts.quarantine_ttl_ms > longest)
        longest = c->opts.quarantine_ttl_ms;
    int64_t until = now + epoch_length(c, longest) * 1000;
    if (until <= st->until_us)
        return;   /* out longer already */
    st->until_us = until;
    st->doubted = 1;
    int64_t unread_s = (now - ep->prev_lo_us + ep->slept_us) / 1000000;
    rl_fmt(st->why, sizeof st->why, "its clock ran %lld ms ahead in %lld s unread: a step, or drift "
           "(this client's doubt)", (long long)ep->doubt_ms, (long long)unread_s);
}

/* What each node's grant in r counts for, now that its check is read and
 * the nodes found out have been marked: a node out of the vote, or whose
 * check failed, is not counted, and its part in r says why. */
static void count_votes(redlock_client *c, rl_round *r, const epoch_keys *K, const rl_round *chk,
                        rl_epoch_node *ep, int64_t q_ms, const unsigned char *lost, const unsigned char *jumped,
                        const unsigned char *undecided)
{
    struct rl_epochs *E = c->epochs;
    int64_t now = rl_now_us();
    pthread_mutex_lock(&E->mu);
    for (size_t i = 0; i < r->n; i++) {
        epoch_state *st = st_of(E, i, K);
        if (ep[i].heard && (lost[i] || jumped[i])) {
            if (lost[i] && !ep[i].q_ms) {
                ep[i].q_ms = -1;
                rl_fmt(ep[i].why, sizeof ep[i].why, "lost its keys (no marker)");
            }
            note(st, &ep[i], q_ms, now);
        }
        int out = st->until_us > now;
        if (r->out[i] == RL_YES && undecided[i]) {
            r->out[i] = RL_ERR_QUARANTINE;
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "no marker here: a new node still being marked, or one that "
                   "lost its keys; not counted until that is known");
        } else if (r->out[i] == RL_YES && !ep[i].heard && chk->out[i] != RL_PENDING && chk->out[i] != RL_UNSENT &&
                   chk->out[i] != RL_YES) {
            /* The check failed on its own: the node's answer is that
             * failure (a refusal stays a refusal, never contention). */
            r->out[i] = chk->out[i];
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "the quarantine check: %s", chk->msg[i]);
            if (chk->out[i] == RL_ERR_PERM)
                rl_append(r->msg[i], RL_NODE_MSG_MAX, " (it reads and writes %s; or set REDLOCK_OPT_NO_QUARANTINE)",
                          K->m);
        } else if (r->out[i] == RL_YES && !ep[i].heard) {
            r->out[i] = RL_ERR_QUARANTINE;
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "granted, but the check behind it got no answer");
        } else if (r->out[i] == RL_ERR_QUARANTINE && !out) {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "its quarantine has just ended: asked again from the next attempt");
        } else if ((r->out[i] == RL_YES && out) || r->out[i] == RL_ERR_QUARANTINE) {
            r->out[i] = RL_ERR_QUARANTINE;
            int64_t left = st->until_us > now ? (st->until_us - now + 999) / 1000 : 0;
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%s; out of the vote for %.1f s more", st->why[0] ? st->why : "quarantined",
                   (double)left / 1000.0);
        }
    }
    pthread_mutex_unlock(&E->mu);
}

/* Before the rounds[0..nr) (one set of nodes): the check's round, chk,
 * over ep; each round skips the nodes this client knows to be out (their
 * grants would not count: not asked). *slept: CLOCK_BOOTTIME's lead. */
static void prepare(redlock_client *c, rl_round *rounds, size_t nr, const epoch_keys *K, rl_round *chk,
                    rl_epoch_node *ep, int64_t *slept)
{
    struct rl_epochs *E = c->epochs;
    const rl_round *r = &rounds[0];
    epoch_round(chk, c, r, K, "c", "0", "", ep);
    chk->start_us = r->start_us;
    int plain = 1;
    /* The clock check compares on CLOCK_BOOTTIME: a suspended client sees
     * the nodes' clocks move by the time it slept, which is no jump. */
    int64_t now = rl_now_us();
    *slept = boottime_us() - now;
    pthread_mutex_lock(&E->mu);
    for (size_t i = 0; i < r->n; i++) {
        const epoch_state *st = st_of(E, i, K);
        for (size_t q = 0; q < nr; q++)
            if (!rounds[q].skip[i] && st->until_us > now)
                rounds[q].skip[i] = RL_SKIP_QUARANTINE;
        if (r->skip[i] != 1 && (!st->pttl_ok || st->recorded_ms < r->ttl_ms))
            plain = 0;   /* the script, to record this TTL or learn the ACL */
        ep[i].prev_pttl = st->pttl;
        ep[i].prev_lo_us = st->lo_us;
        ep[i].slept_us = *slept;
        ep[i].drift_factor = c->opts.drift_factor;
        ep[i].drift_min_us = (int64_t)c->opts.drift_min_ms * 1000;
    }
    pthread_mutex_unlock(&E->mu);
    if (plain)
        chk->mode = "p";
    for (size_t i = 0; i < r->n; i++)
        chk->skip[i] = r->skip[i] == 1;
}

/* After the check: the nodes it found without their marker, or with their
 * clock moved, are marked and put out, a new deployment is marked, and
 * each round's grants count for what the check says (count_votes). */
static void conclude(redlock_client *c, rl_round *rounds, size_t nr, const epoch_keys *K, const rl_round *chk,
                     rl_epoch_node *ep, int64_t slept)
{
    struct rl_epochs *E = c->epochs;
    rl_round *r = &rounds[0];
    int plain = chk->mode[0] == 'p';
    int64_t now;
    /* A quarantine that the plain check saw says how long, not why: the
     * script reads the reason (once: the node is not asked again until it
     * ends). */
    rl_epoch_node ep2[REDLOCK_MAX_NODES];
    unsigned char unsaid[REDLOCK_MAX_NODES] = { 0 };
    int nunsaid = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (ep[i].heard && ep[i].q_ms && !ep[i].why[0]) {
            unsaid[i] = 1;
            nunsaid++;
        }
    }
    if (nunsaid)
        mark(c, r, K, unsaid, "c", 0, "", ep2);
    for (size_t i = 0; nunsaid && i < r->n; i++)
        if (unsaid[i] && ep2[i].heard)
            rl_fmt(ep[i].why, sizeof ep[i].why, "%s", ep2[i].why);

    int markerless = 0, young, marker = rl_epoch_markers(ep, r->n, &young);
    for (size_t i = 0; i < r->n; i++)
        markerless += ep[i].heard && !ep[i].marker;
    /* No marker on any node heard, and a majority heard: a new deployment
     * (docs/algorithm.md says why this is taken to be one); every node is
     * marked, heard or not (a node that has a marker keeps it). Beside
     * markers all made within RL_EPOCH_YOUNG_MS, another client may still
     * be marking a new deployment: a node without one neither votes nor is
     * put out until they are older. */
    int fresh = !marker && markerless >= c->quorum;
    unsigned char lost[REDLOCK_MAX_NODES] = { 0 }, jumped[REDLOCK_MAX_NODES] = { 0 }, born[REDLOCK_MAX_NODES] = { 0 };
    unsigned char undecided[REDLOCK_MAX_NODES] = { 0 };
    int nlost = 0, njumped = 0, nborn = 0;
    now = rl_now_us();
    pthread_mutex_lock(&E->mu);
    for (size_t i = 0; i < r->n; i++) {
        epoch_state *st = st_of(E, i, K);
        if (!ep[i].heard) {
            if (plain && chk->out[i] == RL_ERR_PERM)
                st->pttl_ok = 0;   /* the ACL changed: the script from now on */
            continue;
        }
        if (ep[i].jump_ms > 0) {
            jumped[i] = 1;
            njumped++;
        }
        if (!ep[i].marker || (st->pttl > 0 && ep[i].pttl > 0 && rl_epoch_remade(st->pttl, ep[i].pttl)))
            st->recorded_ms = 0;   /* a new marker: what the old one recorded went with it */
        if (ep[i].max_ttl_ms > st->recorded_ms)
            st->recorded_ms = ep[i].max_ttl_ms;
        if (ep[i].pttl_ok >= 0)
            st->pttl_ok = ep[i].pttl_ok;
        st->pttl = ep[i].pttl > 0 ? ep[i].pttl : 0;
        st->lo_us = chk->start_us + slept;
        if (!ep[i].marker && fresh) {
            born[i] = 1;
            nborn++;
        } else if (!ep[i].marker && marker && !young) {
            lost[i] = 1;
            nlost++;
        } else if (!ep[i].marker) {
            /* too few nodes heard to tell a new deployment from a loss, or
             * markers that another client may still be making: no vote,
             * and nothing written, until that is known */
            undecided[i] = 1;
        }
        note(st, &ep[i], epoch_length(c, r->ttl_ms), now);
        if (ep[i].doubt_ms > 0 && !ep[i].q_ms && ep[i].marker)
            doubt(c, st, &ep[i], r->ttl_ms, now);
    }
    pthread_mutex_unlock(&E->mu);

    int64_t q_ms = (nlost || njumped) ? quarantine_ms(c, r, K, ep2) : 0;
    for (size_t i = 0; fresh && i < r->n; i++) {
        if (!ep[i].heard && r->skip[i] != 1) {
            born[i] = 1;
            nborn++;
        }
    }
    if (nborn) {
        mark(c, r, K, born, "f", 0, "", ep2);
        pthread_mutex_lock(&E->mu);
        for (size_t i = 0; i < r->n; i++) {
            if (born[i] && ep2[i].heard) {   /* the new marker records this TTL */
                st_of(E, i, K)->recorded_ms = ep2[i].max_ttl_ms;
                if (ep2[i].pttl_ok >= 0)
                    st_of(E, i, K)->pttl_ok = ep2[i].pttl_ok;
            }
        }
        pthread_mutex_unlock(&E->mu);
    }
    if (nlost) {
        char why[96];
        rl_fmt(why, sizeof why, "lost its keys (no marker: restarted without persistence, or wiped)");
        mark(c, r, K, lost, "q", q_ms, why, ep2);
        for (size_t i = 0; i < r->n; i++)
            if (lost[i] && ep2[i].heard)
                ep[i] = ep2[i];
    }
    for (size_t i = 0; njumped && i < r->n; i++) {
        if (!jumped[i] || lost[i])
            continue;
        unsigned char one[REDLOCK_MAX_NODES] = { 0 };
        char why[96];
        one[i] = 1;
        rl_fmt(why, sizeof why, "clock jumped %lld ms forward", (long long)ep[i].jump_ms);
        mark(c, r, K, one, "j", q_ms, why, ep2);
        if (ep2[i].heard)
            ep[i] = ep2[i];
        else
            rl_fmt(ep[i].why, sizeof ep[i].why, "%s", why);
        ep[i].q_ms = ep[i].q_ms ? ep[i].q_ms : -1;
    }

    for (size_t q = 0; q < nr; q++)
        count_votes(c, &rounds[q], K, chk, ep, q_ms, lost, jumped, undecided);
}

/* Whether c checks its nodes: not with the quarantine off. */
static int checking(const redlock_client *c)
{
    return c->epochs && !(c->opts.flags & REDLOCK_OPT_NO_QUARANTINE);
}

/* The keys r's check reads, into K. A cluster node's vote for a lock is
 * the answer of the shard that owns the lock key's slot, and a shard can
 * lose its data while the others keep theirs: on a client with a cluster
 * node the marker is per slot, <prefix>{redlock:epoch:T} with T chosen so
 * that it hashes to the lock key's slot (rl_cluster_slot_tag). It then
 * travels behind the grant on the same connection, moves with the slot
 * when the slot is resharded, and every node of such a client (a
 * standalone one too) keeps the same per-slot keys, so that "no marker
 * on any node" means the same there. 0: no key of this prefix lands in
 * that slot (a prefix with a lone brace, docs/algorithm.md): no check. */
static int epoch_keys_for(const redlock_client *c, const rl_round *r, epoch_keys *K)
{
    const struct rl_epochs *E = c->epochs;
    if (!E->slots) {
        K->m = E->mkey;
        K->m_len = E->mkey_len;
        K->q = E->qkey;
        K->q_len = E->qkey_len;
        K->slot = -1;
        return 1;
    }
    unsigned slot = rl_keyslot(r->key, r->key_len);
    char tag[32];
    if (rl_cluster_slot_tag(slot, tag, sizeof tag) < 0)
        return 0;
    int len = snprintf(K->mbuf, sizeof K->mbuf, "%s{%s}", c->prefix, tag);
    if (len <= 0 || (size_t)len >= sizeof K->mbuf || rl_keyslot(K->mbuf, (size_t)len) != slot)
        return 0;
    K->m = K->mbuf;
    K->m_len = (size_t)len;
    K->q_len = (size_t)len + sizeof RL_KEY_QUARANTINE - 1;
    snprintf(K->qbuf, sizeof K->qbuf, "%s" RL_KEY_QUARANTINE, K->mbuf);
    K->q = K->qbuf;
    K->slot = (int)slot;
    return 1;
}

/* One acquisition's check (rl_epoch_run_each): its keys, its round and
 * what it found. */
typedef struct epoch_pair {
    epoch_keys K;
    rl_round chk;
    rl_epoch_node ep[REDLOCK_MAX_NODES];
    int64_t slept;
    int checked;
} epoch_pair;

/* Without the check no grant could count: nothing is sent, and the round
 * fails whole, every field its reader looks at set. */
static void fail_unchecked(rl_round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        r->out[i] = RL_ERR_IO;
        r->sent[i] = r->marked[i] = r->unreachable[i] = 0;
        r->rtt_us[i] = 0;
        r->counter[i] = 0;
        r->hint_ms[i] = -1;
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "out of memory for the quarantine's check");
    }
    r->decided_us = rl_now_us();
}

void rl_epoch_run_each(redlock_client *c, rl_round *const *rs, size_t n)
{
    if (n > RL_EACH_MAX) {
        for (size_t k = 0; k < n; k += RL_EACH_MAX)
            rl_epoch_run_each(c, rs + k, n - k < RL_EACH_MAX ? n - k : RL_EACH_MAX);
        return;
    }
    if (!checking(c)) {
        rl_round_run_pairs(c, rs, NULL, n);
        return;
    }
    rl_round *chks[RL_EACH_MAX] = { 0 };
    epoch_pair *P = malloc(n * sizeof *P);   /* each field is set before it is read */
    if (!P) {
        /* The acquisitions fail whole; a release in the batch needs no
         * check and still goes. */
        rl_round *rest[RL_EACH_MAX];
        size_t nrest = 0;
        for (size_t k = 0; k < n; k++) {
            if (rl_cmd_acquires(rs[k]->cmd))
                fail_unchecked(rs[k]);
            else
                rest[nrest++] = rs[k];
        }
        if (nrest)
            rl_round_run_pairs(c, rest, NULL, nrest);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        epoch_pair *p = &P[k];
        chks[k] = NULL;
        /* A release goes unchecked, as does a round whose key shares its
         * slot with no marker (epoch_keys_for). */
        p->checked = rl_cmd_acquires(rs[k]->cmd) && epoch_keys_for(c, rs[k], &p->K);
        if (!p->checked)
            continue;
        prepare(c, rs[k], 1, &p->K, &p->chk, p->ep, &p->slept);
        p->chk.partner = rs[k];
        rs[k]->check = &p->chk;
        chks[k] = &p->chk;
    }
    rl_round_run_pairs(c, rs, chks, n);
    for (size_t k = 0; k < n; k++) {
        if (!P[k].checked)
            continue;
        rs[k]->check = NULL;
        conclude(c, rs[k], 1, &P[k].K, &P[k].chk, P[k].ep, P[k].slept);
    }
    free(P);
}

void rl_epoch_run(redlock_client *c, rl_round *r)
{
    rl_epoch_run_each(c, &r, 1);
}

/* A node without a marker and none heard with one: a new deployment only
 * if no node has one (conclude), so the nodes the batch did not wait for
 * are read too (mark's full read, every one waited for; rl_round_decided
 * does the same for one round). What they say joins chk's and ep's. */
static void ask_the_others(redlock_client *c, const rl_round *r, const epoch_keys *K, rl_round *chk,
                           rl_epoch_node *ep)
{
    rl_epoch_node ep2[REDLOCK_MAX_NODES];
    unsigned char unheard[REDLOCK_MAX_NODES] = { 0 };
    for (size_t i = 0; i < r->n; i++)
        unheard[i] = !ep[i].heard && r->skip[i] != 1;
    mark(c, r, K, unheard, "c", 0, "", ep2);
    for (size_t i = 0; i < r->n; i++) {
        if (unheard[i] && ep2[i].heard) {
            ep[i] = ep2[i];
            chk->out[i] = RL_YES;
        }
    }
}

void rl_epoch_run_many(redlock_client *c, rl_round *rounds, size_t nr)
{
    if (!checking(c) || !nr) {
        rl_round_run_many(c, rounds, nr);
        return;
    }
    epoch_keys K;
    if (c->epochs->slots) {
        /* The rounds' keys span slots, each with its marker: one check
         * each (acquire_many.c batches nothing on such a client). */
        for (size_t q = 0; q < nr; q++)
            rl_epoch_run(c, &rounds[q]);
        return;
    }
    epoch_keys_for(c, &rounds[0], &K);
    rl_round *chk = malloc(sizeof *chk);
    if (!chk) {
        /* without the check no grant counts */
        rl_round_run_many(c, rounds, nr);
        for (size_t q = 0; q < nr; q++) {
            for (size_t i = 0; i < rounds[q].n; i++) {
                if (rounds[q].out[i] == RL_YES) {
                    rounds[q].out[i] = RL_ERR_QUARANTINE;
                    rl_fmt(rounds[q].msg[i], RL_NODE_MSG_MAX, "out of memory for the quarantine's check");
                }
            }
        }
        return;
    }
    int64_t slept;
    rl_epoch_node ep[REDLOCK_MAX_NODES];
    prepare(c, rounds, nr, &K, chk, ep, &slept);
    rl_round_run_many(c, rounds, nr);
    /* The check goes behind the batches on each connection, so it reads
     * each node after its grants there; it asks the nodes that answered
     * (the others' grants do not count), and waits for all of them. */
    int targets = 0;
    for (size_t i = 0; i < rounds[0].n; i++) {
        int yes = 0;
        for (size_t q = 0; q < nr; q++)
            yes |= rounds[q].out[i] == RL_YES;
        chk->skip[i] = !yes;
        targets += yes;
    }
    chk->quorum = targets;
    chk->start_us = rl_now_us();
    if (targets)
        rl_round_run(c, chk);
    int young, markerless = 0;
    for (size_t i = 0; i < rounds[0].n; i++)
        markerless |= ep[i].heard && !ep[i].marker;
    if (markerless && !rl_epoch_markers(ep, rounds[0].n, &young))
        ask_the_others(c, &rounds[0], &K, chk, ep);
    conclude(c, rounds, nr, &K, chk, ep, slept);
    free(chk);
}
