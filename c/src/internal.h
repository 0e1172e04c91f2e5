/* SPDX-License-Identifier: BSD-3-Clause */
/* internal.h: types and helpers shared by the library's sources; nothing here
 * is part of the ABI. */
#ifndef REDLOCK_INTERNAL_H
#define REDLOCK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#define REDLOCK_EXPERIMENTAL   /* the library defines both tiers */
#include "redlock.h"
#include "rlcommon.h"
#include "keys.h"

#define RL_VALUE_BYTES 20              /* random bytes per acquisition */
#define RL_VALUE_HEX (RL_VALUE_BYTES * 2)
/* A value is this mark and the random bytes in hex. The mark tells a waiter
 * that the holder's release wakes the queue (scripts.c); peers' values lack it. */
#define RL_VALUE_MARK 'w'
#define RL_VALUE_LEN (1 + RL_VALUE_HEX)
#define RL_MEMBER_MAX 48               /* a waiter's registration: wake id ':' number */
#define RL_MSG_MAX 2048                /* detail message size */
#define RL_NODE_MSG_MAX 160            /* per-node part of a detail message */

/* ---- util.c ---- */
int64_t rl_now_us(void);                          /* CLOCK_MONOTONIC */
pid_t rl_pid(void);                                /* rl_pid(), without a system call (util.c) */
int rl_random_bytes(void *buf, size_t len);       /* getrandom(2); 0 or -1 */
int rl_random_hex(char *out, size_t nbytes);      /* out gets 2*nbytes hex + NUL */
uint32_t rl_random_below(uint32_t bound);         /* uniform in [0, bound) */
void rl_sha1_hex(const char *s, char out[41]);
/* Buffers a thread keeps from one call to the next (the auto-extend
 * thread's batch arrays): a batch every few hundred ms allocates nothing,
 * and leaves no freed holes among the memory of the locks. Each slot keeps
 * at most RL_SCRATCH_KEEP bytes; a larger request gets memory of its own,
 * freed by rl_scratch_put. With s NULL they are malloc and free. */
#define RL_SCRATCH_SLOTS 16
#define RL_SCRATCH_KEEP (512 * 1024)
typedef struct rl_scratch {
    void *p[RL_SCRATCH_SLOTS];
    size_t cap[RL_SCRATCH_SLOTS];
} rl_scratch;
/* bytes (at least 1) from slot, zeroed if zero is set; NULL if out of memory. */
void *rl_scratch_get(rl_scratch *s, unsigned slot, size_t bytes, int zero);
void rl_scratch_put(rl_scratch *s, unsigned slot, void *p);
void rl_scratch_free(rl_scratch *s);
/* ---- the engine (engine.h has its private types) ---- */
struct rl_conn;
struct rl_io;
struct rl_listener;

typedef struct rl_node {
    rl_endpoint ep;
    /* the fields below are guarded by the client's I/O mutex */
    struct rl_conn *conn;       /* the node's one connection, shared by every lock */
    int64_t retry_after_us;     /* reconnect backoff */
    uint32_t backoff_ms;
    char down_why[RL_NODE_MSG_MAX]; /* the failure that started the backoff */
    int down_unreachable;       /* it was a failed connect (not a TLS handshake) */
    int suspect;                /* timed out lately and silent since: not waited for long */
    struct rl_listener *listen; /* wake-up listener (engine/listen.c), made on the first wait */
    size_t of;                  /* a cluster's shard connection (engine/route.c): the node it serves */
    char *alias;                /* a shard connection's other name: the ip when CLUSTER NODES
                                 * named the shard by its announced hostname (route.c) */
} rl_node;

/* What one node said in a round. */
typedef enum rl_outcome {
    RL_PENDING = 0,
    RL_YES,          /* SET said OK / script returned 1 */
    RL_NO,           /* key held by someone else / script returned 0 */
    RL_ERR_SERVER,   /* error reply */
    RL_ERR_AUTH,     /* AUTH failed / NOAUTH / WRONGPASS */
    RL_ERR_IO,       /* connect failed, reset, EOF, protocol error */
    RL_ERR_TIMEOUT,  /* no reply before the node's deadline */
    RL_ERR_DOWN,     /* skipped: node in reconnect backoff */
    RL_ERR_TLS,      /* TLS handshake or certificate failure */
    RL_ERR_PERM,     /* a command refused: NOPERM, unknown (disabled or renamed) command */
    RL_UNSENT,       /* the round was decided before this node was needed */
    RL_ERR_QUARANTINE /* out of the vote: it may have lost its keys, or its clock
                       * jumped (epoch.c); its grant does not count */
} rl_outcome;

/* ---- cluster.c: a client with a Redis/Valkey Cluster as a node ---- */
/* 1 if any of c's nodes is a cluster (redis-cluster://). */
int rl_client_has_cluster(const redlock_client *c);
/* The slots of a Redis Cluster, and a hash tag's text for each: "redlock:epoch:T",
 * which hashes to slot (the quarantine's per-slot marker, epoch.c; a key routed to
 * a shard, cluster.c). The tag's length, or -1. */
#define RL_CLUSTER_SLOTS 16384
int rl_cluster_slot_tag(unsigned slot, char *out, size_t size);
/* 0, or REDLOCK_EINVAL with why in err: on a client with a cluster node,
 * the names of a multi-resource lock must carry hash tags of one slot. */
int rl_cluster_multi_problem(const redlock_client *c, const char *const *resources, size_t n, char *err, size_t size);
/* 0, or REDLOCK_EINVAL with the reason when the resource's keys could not
 * share one slot on c's cluster nodes (semaphore: its slot keys too). */
int rl_cluster_key_problem(const redlock_client *c, const char *resource, int semaphore, char *err, size_t size);

/* ---- client.c ---- */
/* Drops a reference without I/O (destroying the client with the last one). */
void rl_client_unref(redlock_client *client);
/* Validates a caller's options (read up to their version); reason in err. */
int rl_check_options(const redlock_options *o, char *err, size_t errsize);

/* ---- decide.c: the decisions, pure functions of the outcomes ---- */
typedef struct rl_tally { int yes, no, auth, perm, server, io, tls, unsent; } rl_tally;
rl_tally rl_tally_of(const rl_outcome *out, size_t n);
/* The code for "too many nodes failed to answer": the commonest cause. */
int rl_failure_code(const rl_tally *t);
/* REDLOCK_EAUTH or REDLOCK_EPERM when the nodes that refuse the client
 * (authentication, a refused command) alone rule a quorum out, else 0. */
int rl_refusal_code(const rl_tally *t, size_t n, int quorum);
/* 0 when held: a quorum said OK and the validity end is still ahead. */
int rl_decide_acquire(const rl_outcome *out, size_t n, int quorum, int64_t valid_until_us, int64_t now_us);
/* 0 when a quorum confirmed before the old validity ended. */
int rl_decide_extend(const rl_outcome *out, size_t n, int quorum, int64_t decided_us, int64_t valid_until_us);
/* 0 when still ours on a quorum; REDLOCK_ELOST when certainly not. */
int rl_decide_release(const rl_outcome *out, size_t n, int quorum);

typedef enum rl_cmd {
    RL_CMD_SET, RL_CMD_EXTEND, RL_CMD_RELEASE, RL_CMD_LOAD_FUNCTIONS,
    RL_CMD_ACQUIRE,       /* SET NX PX by script: the waiters' queue, fair mode, the
                           * fencing counter (scripts.c) */
    RL_CMD_FENCE_COMMIT,  /* raise the counter to the token if the key is still ours */
    RL_CMD_LEAVE,         /* a waiter that gives up leaves the queue */
    RL_CMD_ELECT,         /* an election's record (election.c, scripts.c): write, clear or read */
    /* the read-write lock (rwlock.c, docs/algorithm.md "Read-write locks"):
     * each takes the keys of KEYS_RW (proto.c) */
    RL_CMD_RW_ACQUIRE,    /* a read, or a waiting write, acquisition */
    RL_CMD_RW_EXTEND,     /* a reader's lease extended */
    RL_CMD_RW_RELEASE,    /* a reader leaves; the last one frees the key */
    RL_CMD_RW_DOWNGRADE,  /* the writer becomes a reader in one step */
    RL_CMD_RW_GIVE_UP,    /* a writer that stops waiting takes its intent back */
    /* The counting semaphore (semaphore.c): the same operations on a
     * permit's slots, keyed by the semaphore's name K. */
    RL_CMD_SEM_ACQUIRE, RL_CMD_SEM_EXTEND, RL_CMD_SEM_RELEASE, RL_CMD_SEM_FENCE_COMMIT,
    RL_CMD_EXTEND_MANY,   /* many locks' extensions in one script (extend_many.c) */
    RL_CMD_SET_MANY,      /* many locks' SET NX PX in one script (acquire_many.c) */
    RL_CMD_RELEASE_MANY,  /* many locks' compare-and-delete, waking nobody (acquire_many.c) */
    /* The multi-resource lock (multilock.c): the mutex's operations on
     * every key of the set at once, in one script per node. */
    RL_CMD_MULTI_ACQUIRE, RL_CMD_MULTI_EXTEND, RL_CMD_MULTI_RELEASE, RL_CMD_MULTI_FENCE_COMMIT,
    RL_CMD_MULTI_LEAVE,
    RL_CMD_EPOCH          /* the node's marker, quarantine and clock (epoch.c, scripts.c) */
} rl_cmd;

#define RL_SEM_FREE_MAX 16            /* free slots a refusing node names */
#define RL_FENCE_SUFFIX RL_KEY_FENCING   /* the counter's key: the lock's key + this (keys.h) */
#define RL_FENCE_SUFFIX_LEN (sizeof RL_KEY_FENCING - 1)

/* ---- election.c: what one node says about an election (RL_CMD_ELECT) ---- */
#define RL_ELECT_ARGS 7            /* op, owner, term, revision, value, observer, lease */
typedef struct rl_elect_node {
    int present;                   /* the record's owner holds the election's lock here */
    uint64_t term, revision;       /* the record's (0 when there is none) */
    int64_t pttl_ms;               /* the lock's PTTL here (-2: no lock) */
    char value[REDLOCK_ELECTION_MAX_VALUE + 1];
} rl_elect_node;

/* ---- epoch.c: what one node says of its marker, quarantine and clock
 * (RL_CMD_EPOCH) ---- */
typedef struct rl_epoch_node {
    int heard;                     /* a whole reply came */
    int marker;                    /* 1: the marker is there (after the call) */
    uint32_t max_ttl_ms;           /* the longest TTL the marker records (0: not said) */
    int64_t q_ms;                  /* quarantine left: 0 none, -1 there but its length unknown */
    int64_t pttl;                  /* the marker's PTTL (its bands: RL_EPOCH_BASE_MS), -2 none,
                                    * -1 no TTL, -3 unknown (an ACL without PTTL) */
    int young;                     /* made within RL_EPOCH_YOUNG_MS (by its PTTL) */
    int pttl_ok;                   /* -1 not said (the plain PTTL), 0/1 whether the ACL allows PTTL */
    int64_t reply_us;              /* rl_now_us() when the reply was read */
    /* In (epoch.c): the marker's PTTL at this client's previous check (0:
     * none) and when that check was sent, on CLOCK_BOOTTIME (rl_now_us() +
     * slept_us), and the drift allowed. Out: how far its clock jumped
     * forward (0: not), or, over a span longer than the lock's TTL, how
     * far its clock ran ahead by more than a lock allows, which that long
     * a span cannot tell from drift (0: not). */
    int64_t prev_pttl, prev_lo_us, slept_us, drift_min_us;
    double drift_factor;
    int64_t jump_ms, doubt_ms;
    char why[96];                  /* the quarantine's reason, as written by whoever set it */
} rl_epoch_node;

#define RL_SKIP_QUARANTINE 2

typedef struct rl_round rl_round;
typedef struct rl_msgs rl_msgs;   /* report.c: a round's messages, shared */
struct rl_round {
    rl_cmd cmd;
    const char *key;
    size_t key_len;
    const char *value;
    uint32_t ttl_ms;
    const char *fkey;        /* fencing counter key (ACQUIRE, FENCE_COMMIT) */
    size_t fkey_len;
    const char *token;       /* FENCE_COMMIT: the token, in decimal */
    const char *member;      /* ACQUIRE, RELEASE, LEAVE: the waiter's registration, or "" */
    const char *mode;        /* ACQUIRE: "j" join the queue, "f" fair, "c" fencing counter */
    uint64_t ticket;         /* ACQUIRE: the waiter's place in the queue */
    uint32_t lease_ms;       /* ACQUIRE: a registration lapses unless renewed within it */
    int wake;                /* RELEASE, LEAVE: 1 wakes the first waiter, 0 nobody */
    /* RW_*: the read-write lock's keys next to the lock's (rwlock.c) and
     * how long a waiting writer's intent holds new readers back */
    const char *rw_keys[2];
    size_t rw_keys_len[2];
    uint32_t intent_ms;
    int64_t start_us;        /* taken before anything is sent */
    int64_t cap_us;          /* no node waits beyond this (absolute), 0 = none */
    int64_t decided_us;      /* out: when the outcome was known */
    int quorum;              /* nodes needed; the round returns once decided */
    int no_wait;             /* send and return without waiting for replies */
    int via_fcall;           /* release/extend by FCALL (set by rl_round_run) */
    struct rl_batch *batch;  /* EXTEND_MANY: its locks and what each node said; else NULL */
    size_t n;
    unsigned char skip[REDLOCK_MAX_NODES]; /* don't contact these nodes (1: RL_UNSENT,
                                            * RL_SKIP_QUARANTINE: RL_ERR_QUARANTINE) */
    rl_outcome out[REDLOCK_MAX_NODES];
    unsigned char sent[REDLOCK_MAX_NODES];   /* RL_UNSENT: 1 if sent but not waited for */
    uint64_t counter[REDLOCK_MAX_NODES];     /* ACQUIRE with "c", RL_YES: the node's counter */
    int64_t hint_ms[REDLOCK_MAX_NODES];      /* ACQUIRE, RL_NO: how long to wait at most (-1: unknown) */
    unsigned char marked[REDLOCK_MAX_NODES]; /* ACQUIRE, RL_NO: the holder's release wakes waiters */
    unsigned char unreachable[REDLOCK_MAX_NODES]; /* failed for want of a connection: refused,
                                             * name not resolved, connect timed out, or in
                                             * backoff after one of these (conn.c) */
    int64_t rtt_us[REDLOCK_MAX_NODES];
    char msg[REDLOCK_MAX_NODES][RL_NODE_MSG_MAX];
    /* The semaphore's part (semaphore.c), for the RL_CMD_SEM_* commands. */
    const char *sem_slots;   /* the permit's slots, "3" or "3,4" */
    uint32_t sem_limit;      /* L, as the caller gave it */
    uint32_t sem_other[REDLOCK_MAX_NODES];  /* SEM_ACQUIRE: the node keeps another limit (0: no) */
    uint32_t sem_nfree[REDLOCK_MAX_NODES];  /* SEM_ACQUIRE, RL_NO: free slots on the node */
    unsigned char sem_listed[REDLOCK_MAX_NODES]; /* how many of them sem_free names */
    uint16_t sem_free[REDLOCK_MAX_NODES][RL_SEM_FREE_MAX]; /* the first free slots, in the
                                                * order the client proposed */
    /* the engine's part (c/src/engine), under the client's I/O mutex */
    char *fmt[3];            /* the command, formatted once per way of sending */
    size_t fmt_len[3];
    int64_t deadline[REDLOCK_MAX_NODES];
    uint64_t seq[REDLOCK_MAX_NODES];         /* its request's number on node i's connection */
    unsigned char via[REDLOCK_MAX_NODES];
    unsigned char resent[REDLOCK_MAX_NODES]; /* re-sent as EVAL after NOSCRIPT */
    rl_round *next;          /* the client's list of rounds under way */
    pthread_cond_t cv;       /* a follower waits here (made when first needed) */
    int cv_ready, following;
    /* RL_CMD_ELECT (election.c): the record's and the observers' keys,
     * the script's arguments after the key's, and per node what a read
     * found (the caller's array of n, or NULL) */
    const char *ekeys[2];
    size_t ekey_len[2];
    const char *eargv[RL_ELECT_ARGS];
    struct rl_elect_node *elect;
    /* RL_CMD_MULTI_* (multilock.c): the set's keys, or NULL */
    const struct rl_multi *multi;
    /* RL_CMD_EPOCH (epoch.c): per node what the check found (an array of
     * n), and the acquisition it checks, which it goes behind on every
     * connection (rl_round_run_checked) */
    struct rl_epoch_node *epoch;
    rl_round *partner;
    /* an acquisition (rl_cmd_acquires): its check round, whose replies
     * decide which grants count (epoch.c), or NULL (rl_init_round) */
    const rl_round *check;
    /* a cluster node (engine/route.c): the connection that carries node
     * i's request (i itself, or a shard's), and the redirects followed */
    uint16_t shard[REDLOCK_MAX_NODES];
    unsigned char hops[REDLOCK_MAX_NODES];
};

/* cluster.c: after a LOAD_FUNCTIONS round r, on each cluster node that
 * loaded the library on the member it reached, load it on every shard
 * master too; r->out and r->msg say the first failure. */
void rl_cluster_load_functions(redlock_client *c, rl_round *r);

/* ---- extend_many.c: many locks' extensions in one round ---- */
/* An EXTEND_MANY round's locks: one script per node over all their keys,
 * whose reply says for each key whether the node extended it. */
typedef struct rl_batch {
    size_t m;                /* locks */
    const char **keys;
    size_t *key_lens;
    const char **values;
    uint32_t *ttl_ms;
    unsigned char *res;      /* res[node * m + k]: 1 if that node extended lock k
                              * (meaningful where out[node] is RL_YES) */
    int64_t wait_until_us;   /* a node is waited for until then at least (absolute) */
} rl_batch;
/* Lock k's outcome on each node of an EXTEND_MANY round, into out. */
void rl_batch_outcomes(const rl_round *r, size_t k, rl_outcome *out);
/* Extends locks[0..n) by ttls[k], pipelined as a few rounds of
 * RL_BATCH_MAX locks, each decided per lock at quorum as rl_extend_locked
 * decides one (msgs[k]: the message of a batched lock only when it is
 * lost, REDLOCK_ELOST or REDLOCK_EEXPIRED; a failed try's detail is in its
 * report). Locks whose extension is not the mutex's (a set of resources,
 * a reader's lease, a semaphore's permit) have a round each, of their own
 * command, run RL_SINGLES_AT_ONCE at a time after the batch. Each lock's mutex is taken only to check it and to record
 * its outcome, never across the rounds (a thread holding hundreds of
 * mutexes at once is beyond what TSan can follow, and needs no owner's
 * call to wait that long): the caller keeps the owner's own extension out
 * meanwhile (ae.busy, which redlock_lock_extend waits for). rcs[k] gets what
 * rl_extend_locked would return, msgs[k] NULL or its message (the
 * caller frees it). Locks whose extension is not the mutex's (a reader's,
 * a semaphore's) get rl_extend_locked itself, one at a time, after the
 * batch. */
#define RL_BATCH_MAX 256
#define RL_SINGLES_AT_ONCE 32
/* Its arrays come from slots 0 to 8 of scratch (NULL: allocated per call). */
void rl_extend_many(redlock_client *c, redlock_lock **locks, const uint32_t *ttls, size_t n, int automatic,
                    int *rcs, char **msgs, rl_scratch *scratch);
/* extend.c: takes lock->mu once the auto-extend thread is not extending
 * the lock in a batch (waiting with the mutex let go): for a call that
 * changes what an extension of the lock would send (redlock_lock_extend's own,
 * a downgrade). */
void rl_lock_unbatched(redlock_lock *lock);
/* extend.c: the checks before an extension (0, or the code with the reason in m). */
int rl_extend_check(redlock_lock *lock, uint32_t ttl_ms, int64_t now, char *m, size_t msize);
/* round.c: runs rounds[0..n) at once, every one pipelined on the same
 * connections, returning once each is decided. */
void rl_round_run_many(redlock_client *client, rl_round *rounds, size_t n);
/* Runs r with check (an RL_CMD_EPOCH round whose partner is r) behind it:
 * both go in one write per node, and check waits, once r is decided, for
 * the replies of the nodes that granted r. */
void rl_round_run_checked(redlock_client *client, rl_round *r, rl_round *check);
/* The same for n rounds of different locks at once, each with its check
 * behind it (checks NULL, or checks[k] NULL: none): every command goes in
 * one write per node; returns once each round and check is decided. */
void rl_round_run_pairs(redlock_client *client, rl_round *const *rs, rl_round *const *checks, size_t n);
/* report.c: rl_record_round and rl_emit with lock-specific outcomes (out,
 * for r's nodes; r may be NULL for an event of no round). */
void rl_record_round_out(redlock_lock *lock, const rl_round *r, const rl_outcome *out, int automatic);
/* The same for one of many locks that record round r: *shared (NULL at
 * first) keeps the round's messages for the next, which share them; the
 * caller drops it with rl_msgs_unref once they are all recorded. */
void rl_record_round_shared(redlock_lock *lock, const rl_round *r, const rl_outcome *out, int automatic,
                            rl_msgs **shared);
void rl_emit_out(redlock_lock *lock, int type, int code, const char *msg, const rl_round *r, const rl_outcome *out,
                 int automatic, uint32_t attempt, int64_t elapsed_us);

/* ---- watch.c: the auto-extend thread, one per client, started on first use ---- */
/* A lock's auto-extension, owned by watch.c: everything but `used` is
 * guarded by the client's watch.mu. */
typedef struct rl_autoextend {
    _Atomic int used;         /* ever given to the thread: until then, acquire,
                               * release and free skip the client's watch mutex */
    /* flags: bytes, as the rest is kept for every held lock */
    unsigned char on;         /* in the thread's list */
    unsigned char limited;    /* bound reached: no more extensions */
    unsigned char busy;       /* in the thread's batch under way, or its callback:
                               * add and remove wait until it is 0 */
    unsigned char last;       /* the batch's extension is cut short by the hold bound */
    unsigned char fire, done; /* the batch's verdict: tell the owner, leave the list */
    unsigned char running;    /* the thread is calling fn with userdata right now */
    unsigned char tried;      /* an extension failed since the last success: its
                               * detail is the lock's report (a message per failed
                               * try and lock would be kilobytes a batch) */
    unsigned char risk_told;  /* the at-risk notice of this failed episode was given */
    unsigned char risk_fire;  /* the batch's verdict: tell the owner it is at risk */
    int fire_code;
    uint32_t risk_ms;         /* at-risk margin (redlock_lock_auto_extend), 0: none */
    char *risk_msg;           /* the at-risk notice, from before() to its callback (thread only) */
    uint32_t batch_ttl;       /* the batch's extension, in ms */
    struct redlock_lock *next, *prev;
    int64_t due_us;
    int64_t until_us;         /* hold bound (absolute) */
    int64_t next_due;
    char *msg;                /* the last failed extension, or the loss to tell
                               * (thread only; allocated on first failure) */
    redlock_lost_fn fn;
    void *userdata;
    void (*userdata_free)(void *userdata); /* once no call of fn with userdata can follow */
    void (*free_after)(void *userdata); /* fn itself ended its hook: free this */
    void *free_after_userdata;            /* once fn has returned */
} rl_autoextend;

typedef struct rl_watch {
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* the thread: a lock was added, or stop */
    pthread_cond_t idle;        /* waiters: the thread finished with `current` */
    pthread_t thread;
    int started, stop;
    pid_t pid;                  /* the process that started the thread */
    struct redlock_lock *head;  /* locks being extended (lock->ae.next) */
    /* the batch under way (thread only) */
    struct redlock_lock **batch;
    size_t batch_cap;
    int64_t behind_told_us;     /* when REDLOCK_EVENT_WATCH_BEHIND was last emitted */
    int64_t sleep_until_us;     /* the thread sleeps until then (INT64_MAX: until woken);
                                 * a lock added later than that needs no wake-up */
    rl_scratch scratch;         /* the batches' arrays (thread only) */
} rl_watch;

struct redlock_client {
    atomic_int refs;
    int created;        /* creation succeeded */
    size_t n;
    int quorum;
    rl_node *nodes;
    struct rl_io *io;        /* the connections' multiplexer (mux.c) */
    redlock_options opts;    /* key_prefix points to prefix below; the tls_* strings
                              * are NULL (read once, into tls_ctx) except tls_server_name */
    char *prefix;
    size_t prefix_len;
    struct ssl_ctx_st *tls_ctx;  /* shared by the TLS connections; NULL if no node uses TLS */
    char *tls_server_name;   /* owned copy, or NULL */
    char **urls;             /* node URLs as given, password masked */
    rl_watch watch;
    struct rl_async *async;  /* asynchronous acquires (acquire_async.c) */
    _Atomic int64_t trouble_us; /* when a round of this client last saw a node fail
                              * (error, timeout, down); 0 never (report.c) */
    struct rl_route *route;  /* cluster nodes' shard connections and slot maps
                              * (engine/route.c), made when first needed; I/O mutex */
    struct rl_epochs *epochs; /* each node's quarantine and clock as last seen (epoch.c) */
};

enum { LOCK_IDLE = 0, LOCK_HELD, LOCK_LOST };

/* A lock's view of one node in its last round: 16 bytes, kept for every
 * node of every lock (docs/performance.md, memory per held lock). */
typedef struct rl_report {
    unsigned char outcome;   /* redlock_node_outcome */
    unsigned char unreachable; /* the round's unreachable[i] */
    int16_t code;            /* a redlock_error */
    int32_t rtt_us;          /* at most a node timeout (600 s), so it fits */
    const char *msg;         /* "" or a common message (static), or the node's
                              * own, in the lock's report_msgs */
} rl_report;

/* report.c: a round's per-node messages that are not common ones, packed
 * in node order, shared by every lock whose last round it was (a batch's
 * hundreds of locks record one round: its messages are kept once). */
struct rl_msgs {
    atomic_uint refs;
    char text[];
};
void rl_msgs_unref(rl_msgs *m);

struct redlock_lock {
    redlock_client *client;   /* counted reference */
    char *resource;
    char *key;                /* prefix + resource, then RL_FENCE_SUFFIX: the
                               * counter's key is key with fkey_len bytes */
    size_t key_len, fkey_len;
    char value[RL_VALUE_LEN + 1];
    char member[RL_MEMBER_MAX]; /* its registration as a waiter in the last acquire, or "" */
    int contended;            /* its last waiting acquire was refused: the next one
                               * registers from its first attempt (acquire.c) */
    int64_t released_us;      /* when its last release returned (acquire.c: a holder
                               * that comes straight back asks with a plain SET) */
    pthread_mutex_t mu;       /* recursive; the owner's calls and the auto-extend
                               * thread's extensions take it */
    _Atomic int state;
    int lost_code;            /* why state became LOCK_LOST */
    _Atomic int64_t valid_until_us;
    _Atomic uint64_t token;   /* fencing token while held, else 0 */
    int64_t acquired_us;
    uint32_t ttl_ms;          /* of the current acquisition */
    uint32_t attempts;        /* the current acquire call's attempts so far (events only) */
    redlock_lock_options pol; /* retries and drift: the client's unless set */
    _Atomic uint32_t n_ext;   /* extensions of the current acquisition (redlock_lock_extensions) */
    int errcode;
    char *errmsg;             /* the last failure's detail: NULL ("") until the first
                               * failure (rl_errbuf), then kept with the handle */
    atomic_int cancel;
    atomic_int wake_fd;       /* eventfd, made on the first wait */
    struct rl_acq *async_acq; /* its asynchronous acquire under way (the async mutex) */
    atomic_int async_used;    /* an asynchronous acquire was ever started */
    rl_report *report;        /* per node: the last round (in the handle's allocation) */
    rl_msgs *report_msgs;     /* the last round's messages that are not common
                               * ones (report.c); NULL when it had none */
    char *lost_msg;           /* why, allocated when lost (NULL: none) */
    rl_autoextend ae;         /* auto-extension (watch.c) */
    int fencing;              /* mints tokens whatever the client's flags (an election's lock) */
    /* What the handle locks, and how: a mutex (lock.c), a side of a
     * read-write lock (rwlock.c), a semaphore's permit (semaphore.c) or
     * several resources at once (multilock.c). The attempt, extension and
     * release paths ask it, and name no kind. */
    const struct rl_kind *kind;
    int rw_waiting;           /* a write lock: the acquire under way waits
                               * (its refusals leave an intent) */
    char *rw_keys;            /* the read-write lock's two keys, NUL-separated */
    size_t rw_keys_len[2];
    /* The counting semaphore (semaphore.c): the limit L, the permits one
     * acquisition takes, and the slots it asks for or holds ("3,4"). */
    uint32_t sem_limit, sem_permits;
    char *sem_slots;
    int64_t held_told_us;     /* acquired_us of the hold whose end was last reported */
    struct rl_multi *multi;   /* a multi lock: the set's keys (multilock.c) */
};

/* A kind of lock: what its attempts, extensions and releases do beyond
 * the mutex's. Each kind's file defines its table; a NULL hook does what
 * the mutex does. */
typedef struct rl_kind {
    const char *name;
    /* The command a round of this kind sends for the mutex's cmd (rl_init_round). */
    rl_cmd (*cmd)(rl_cmd cmd);
    /* An attempt's round, shaped as the mutex's first (attempt.c): its own mode and command. */
    void (*acquire_round)(struct redlock_lock *lock, rl_round *r, char *mode);
    /* Runs an attempt's round: 0 (r decides), or a code after which nothing was acquired. */
    int (*run_acquire)(struct redlock_lock *lock, rl_round *r);
    /* A won acquisition's fencing token, read from the round rather than committed. */
    uint64_t (*round_token)(const rl_round *r);
    /* acquire.c: the wait before the next attempt, capped; a waiting acquire that gave up. */
    int64_t (*cap_delay)(const struct redlock_lock *lock, int64_t delay_us);
    void (*give_up)(struct redlock_lock *lock, const char *member);
    /* A waiter woken, or a holder coming straight back, may ask with a plain SET NX PX. */
    unsigned plain_retry : 1;
    /* Its attempts go into acquire_many's batches, its extensions into
     * extend_many's (mutex commands on its own key). */
    unsigned batch_acquire : 1, batch_extend : 1;
} rl_kind;
extern const rl_kind rl_kind_mutex, rl_kind_read, rl_kind_write, rl_kind_sem, rl_kind_multi;

/* 1 when an acquisition of lock mints a fencing token. */
static inline int rl_lock_fencing(const struct redlock_lock *lock)
{
    return (lock->client->opts.flags & REDLOCK_OPT_FENCING) || lock->fencing;
}

/* report.c: the handle's error detail (printf-style); extend.c: the TTL
 * check, a round for the lock */
int rl_lock_err(redlock_lock *lock, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int rl_lock_ok(redlock_lock *lock);
/* The handle's detail buffer (RL_MSG_MAX bytes), made on first need, and
 * its message ("" if none). Held locks that never failed carry none. */
char *rl_errbuf(redlock_lock *lock);
const char *rl_errmsg(const redlock_lock *lock);
int rl_ttl_problem(const redlock_lock *lock, uint32_t ttl_ms, char *msg, size_t size);
void rl_init_round(rl_round *r, redlock_lock *lock, rl_cmd cmd, uint32_t ttl_ms);

/* report.c: "; node (url): what" for every node into buf; the round as the
 * lock's last (mutex held), with on_event told about each failed node; one
 * event to on_event. */
void rl_describe_round(char *buf, size_t size, const redlock_client *c, const rl_round *r);
/* Appends the lock's last round as its report keeps it (mutex held): how
 * many nodes confirmed, and each node's outcome and message. */
void rl_describe_report(char *buf, size_t size, const redlock_lock *lock);
void rl_record_round(redlock_lock *lock, const rl_round *r, int automatic);
void rl_emit(redlock_lock *lock, int type, int code, const char *msg, const rl_round *r, int automatic,
             uint32_t attempt, int64_t elapsed_us);
/* report.c: REDLOCK_EVENT_ACQUIRE_DONE for an acquire call that began at start_us. */
void rl_emit_acquire_done(redlock_lock *lock, int rc, int64_t start_us);
/* REDLOCK_EVENT_WOKEN: a release on `node` woke the acquire; attempt comes next. */
void rl_emit_woken(redlock_lock *lock, uint32_t attempt, size_t node);

/* extend.c, for lock.c and watch.c: one extension by the owner or by the
 * auto-extend thread, with the lock's mutex held; the outcome's message
 * goes to msg. */
int rl_extend_locked(redlock_lock *lock, uint32_t ttl_ms, int automatic, char *msg, size_t msgsize);
/* rl_extend_locked in two halves around its round, for rounds of many
 * locks run together (extend_many.c), each half with the lock's mutex
 * held: the checks and the round (0, with *valid_until the validity the
 * round must beat, or the code with the reason in msg), then its decision
 * and what follows (0, or the code with the reason in msg). */
int rl_extend_begin(redlock_lock *lock, uint32_t ttl_ms, rl_round *r, int64_t *valid_until, char *msg,
                    size_t msgsize);
int rl_extend_end(redlock_lock *lock, const rl_round *r, uint32_t ttl_ms, int64_t valid_until, int automatic,
                  char *msg, size_t msgsize);
/* Marks the lock lost (mutex held) and emits REDLOCK_EVENT_LOST. */
void rl_mark_lost(redlock_lock *lock, int code, const char *msg, int automatic);
int64_t rl_drift_us(const redlock_lock *lock, uint32_t ttl_ms);

void rl_watch_init(rl_watch *w);
void rl_watch_destroy(rl_watch *w);
int rl_watch_add(redlock_lock *lock, uint32_t max_hold_ms, redlock_lost_fn fn, void *userdata,
                 void (*userdata_free)(void *));
/* Takes the lock off the thread's list, waiting for work under way on it
 * (unless called from the thread itself). 1 if it was on. */
int rl_watch_remove(redlock_lock *lock);


/* Creates c->tls_ctx from c->opts when a node uses TLS (REDLOCK_ETLS with a
 * reason if a file cannot be loaded), and frees it. */
int rl_tls_client_init(redlock_client *c, const redlock_options *opts, char *err, size_t errsize);
void rl_tls_client_free(redlock_client *c);

/* The client's connections and their multiplexer (mux.c): set up, torn
 * down, and, before the last user closes them, read what they still owe
 * until deadline_us (a release written but not answered yet). */
int rl_io_init(redlock_client *cl);
void rl_io_destroy(redlock_client *cl);
void rl_io_settle(redlock_client *cl, int64_t deadline_us);
/* Runs one round over every node of client; fills r->out/msg/rtt. */
void rl_round_run(redlock_client *client, rl_round *r);
/* Which nodes a round still waits for (decide.c): sets wait[i] for each, and
 * returns how many; 0 once more replies cannot change what the caller will
 * conclude. */
int rl_round_wait_set(const rl_outcome *out, size_t n, int quorum, int acquire, unsigned char *wait);
/* 1 once more replies cannot change what r's caller will conclude (decide.c):
 * it sent without waiting, or rl_round_wait_set waits for nobody and, for a
 * semaphore's acquisition, the replies so far name enough slots free on a
 * majority for the next round, or those still to come could not. */
int rl_round_decided(const rl_round *r);
/* 1 if cmd takes a lock (SET NX, or one of the acquisition scripts). */
int rl_cmd_acquires(rl_cmd cmd);

/* ---- epoch.c: nodes that may have lost their keys, or whose clock
 * jumped, do not vote (docs/algorithm.md, "Quarantine") ---- */
/* Runs the acquisition round r with each node's check behind it on the same
 * connection; a grant from a node out of the vote becomes
 * RL_ERR_QUARANTINE, and a node found without its marker, or with its
 * clock moved, is put out (its quarantine key) for the longest TTL the
 * nodes record. Without the check (REDLOCK_OPT_NO_QUARANTINE, a cluster
 * node), the round alone. */
void rl_epoch_run(redlock_client *c, rl_round *r);
/* The same for the rounds of up to RL_EACH_MAX different acquisitions at
 * once (the acquire thread's first attempts): each with its own check
 * behind it, all in one write per node. */
#define RL_EACH_MAX 64
void rl_epoch_run_each(redlock_client *c, rl_round *const *rs, size_t n);
/* The same for acquire_many's batches (rounds[0..nr), one set of nodes):
 * the check goes behind them on each connection once they are decided, to
 * the nodes that answered, and their grants count for what it says. */
void rl_epoch_run_many(redlock_client *c, rl_round *rounds, size_t nr);
/* The marker's PTTL says the node's state in bands (scripts.c,
 * rl_script_epoch). A marker is made with PX RL_EPOCH_BORN_MS (285 years):
 * up to RL_EPOCH_YOUNG_MS below that it is young; a node put out of the
 * vote for Q ms gets PX RL_EPOCH_BASE_MS + Q, and any PTTL above the base
 * is a quarantine of what exceeds it; the rest is a marker in the vote. Its
 * fall between two checks is the node's clock: its expiry is a fixed point
 * on the node's wall clock, so a jump forward shows as a fall faster than
 * this client's clock, and a step back as a rise (not acted on: it only
 * lengthens keys' lives). So one plain PTTL checks all three. A step back
 * of X ms reads as a quarantine only on a marker less than X ms past the
 * end of its last one, for the rest of X (liveness only); the born value
 * is 31 years below the base so that a new marker never does.
 * A deployment's markers younger than RL_EPOCH_YOUNG_MS may still be being
 * made by another client (clients that start together): beside them, a
 * node without one does not vote, and is not put out either, until they
 * are older (then it lost its keys). */
#define RL_EPOCH_BASE_MS 10000000000000LL
#define RL_EPOCH_BORN_MS 9000000000000LL
#define RL_EPOCH_YOUNG_MS 1000
/* the same, for the check's Lua (scripts.c) */
#define RL_EPOCH_BASE_MS_STR "10000000000000"
#define RL_EPOCH_BORN_MS_STR "9000000000000"
#define RL_EPOCH_YOUNG_MS_STR "1000"
_Static_assert(RL_EPOCH_YOUNG_MS == 1000 && RL_EPOCH_BASE_MS == 10000000000000LL &&
               RL_EPOCH_BORN_MS == 9000000000000LL, "the _STR forms must say the same");
/* Whether a marker read with PTTL cur after one read with PTTL prev (both
 * > 0) was made again in between rather than the same one aged: its PTTL
 * rose (a quarantine, or a new marker), or a marker that had been above
 * the born value (put out of the vote, or past one) reads in the born band
 * now. Such a marker was wiped and made anew by another client between our
 * two readings (a FLUSHALL or a restart of every node, a new deployment);
 * only a clock jump of 31 years could take the same marker there, so its
 * fall is no clock reading. */
static inline int rl_epoch_remade(int64_t prev, int64_t cur)
{
    return cur > prev || (prev > RL_EPOCH_BORN_MS && cur <= RL_EPOCH_BORN_MS);
}
/* What a check's replies (heard ones) say (decide.c): 1 if some node has
 * its marker, with *young when every marker heard is young. */
int rl_epoch_markers(const rl_epoch_node *ep, size_t n, int *young);
/* The client's view of its nodes' quarantines and clocks: made with the
 * client (REDLOCK_ENOMEM), freed with it. */
int rl_epochs_new(redlock_client *c);
void rl_epochs_free(redlock_client *c);

/* ---- wake.c: waiting acquires, woken by releases (docs/algorithm.md) ---- */
typedef struct rl_waiter {
    uint64_t id;                /* its registration: the client's wake id ':' id */
    struct redlock_lock *lock;  /* its wake_fd is written when a message names it */
    atomic_int woken;           /* set by a message; the waiter clears it before each attempt */
    atomic_int node;            /* the node whose message woke it */
    int listening;              /* on the client's list, to be woken */
    struct rl_waiter *next;     /* the client's waiters (I/O mutex) */
    /* (I/O mutex) the release named by the message that woke it last, and
     * one it has acted on and lost: every node tells of a release, and
     * messages about a release already lost to another owner wake nobody */
    char tag[RL_VALUE_LEN + 8], spent[RL_VALUE_LEN + 8];
} rl_waiter;
/* Gives w the name it registers under on the nodes (into member). */
void rl_wake_name(redlock_client *cl, rl_waiter *w, struct redlock_lock *lock, char *member, size_t size);
/* Puts w on the client's list to be woken, starting the listeners (once it
 * has to wait: an acquire that succeeds at once opens none); and takes it off. */
void rl_wake_listen(redlock_client *cl, rl_waiter *w);
void rl_wake_leave(redlock_client *cl, rl_waiter *w);
/* The attempt that followed a wake-up lost to another owner: further
 * messages about the same release do not wake w again. */
void rl_wake_spend(redlock_client *cl, rl_waiter *w);
/* Listeners subscribed, out of the client's nodes. */
int rl_wake_ready(redlock_client *cl);
/* 1 when the queue can be trusted: every node calm now (rl_conn_calm) and
 * no round of the client saw a node fail for RL_POLICY_WAKE_CALM_MS.
 * Otherwise waiters poll, releases wake nobody, and fair mode orders
 * nobody (docs/algorithm.md, "Waking waiters"). */
int rl_wake_calm(redlock_client *cl);
/* Tells on_event about listener state changes, as seen by a waiting lock
 * (call with no mutex held). */
void rl_wake_report(redlock_client *cl, const struct redlock_lock *lock);

/* ---- policy.c: every timing rule of retries, backoff, deadlines and extension ---- */
int64_t rl_policy_retry_delay_us(const redlock_lock_options *pol);
uint32_t rl_policy_backoff_next_ms(uint32_t prev_ms);
/* How long a round waits for a node: a fresh connection also gets the
 * connect timeout; a node that timed out lately gets a fraction. */
int64_t rl_policy_node_wait_us(const redlock_options *o, int fresh, int suspect);
/* A connection whose oldest owed reply is this old has stopped answering. */
int64_t rl_policy_stall_us(const redlock_options *o);
/* When the auto-extend thread extends a lock of ttl_ms: every third. */
int64_t rl_policy_extend_interval_us(uint32_t ttl_ms);
/* The at-risk margin of an arming (redlock_lock_auto_extend): at_risk_ms,
 * or for REDLOCK_AT_RISK_DEFAULT max(TTL/10, 2 node timeouts); at most half
 * the TTL. */
uint32_t rl_policy_at_risk_ms(uint32_t at_risk_ms, uint32_t ttl_ms, uint32_t node_timeout_ms);
/* A waiter that will be woken by the holder's release sleeps at most until
 * the holder's key expires (hint_ms), and never longer than
 * RL_POLICY_WAKE_POLL_MAX_MS; its registration lapses after
 * rl_policy_wake_lease_ms unless renewed. */
#define RL_POLICY_WAKE_POLL_MAX_MS 5000
/* For this long after a round saw a node fail, waiters do not trust the
 * queue: they poll (a wake-up still cuts the sleep short) and fair mode
 * orders nobody, since nodes that missed a registration or a leave may
 * name different heads. */
#define RL_POLICY_WAKE_CALM_MS 3000
int rl_policy_wake_calm(int64_t trouble_us, int64_t now_us);
int64_t rl_policy_wake_wait_us(const redlock_lock_options *pol, int64_t hint_ms);
uint32_t rl_policy_wake_lease_ms(const redlock_lock_options *pol);
/* After a failed automatic extension, try again no sooner than this. */
#define RL_POLICY_EXTEND_RETRY_MIN_US 5000
/* Once a lock is due, the auto-extend thread takes with it every lock
 * due within an eighth of its interval (TTL/3), at most this window, into
 * one batch; a lock is extended at most that much early, and is due again
 * an interval after it was due (watch.c), so the batches do not merge.
 * Fewer, larger batches: each costs the thread a look at every lock it
 * keeps. */
#define RL_POLICY_WATCH_WINDOW_US 250000
/* A batch goes out this many locks at a time (16 rounds of RL_BATCH_MAX). */
#define RL_POLICY_WATCH_CHUNK 4096
/* The thread is behind when a lock's extension starts later than this
 * after it was due: told through REDLOCK_EVENT_WATCH_BEHIND, at most once
 * per RL_POLICY_WATCH_TELL_US, while the validity left is still ample. */
int64_t rl_policy_watch_behind_us(uint32_t ttl_ms);
#define RL_POLICY_WATCH_TELL_US 1000000

/* ---- rwlock.c: the read-write lock's hooks into the mutex's code ---- */
/* How long a waiting writer's intent keeps new readers out after its last
 * attempt (docs/algorithm.md); a waiting writer asks again within a third. */
#define RL_RW_INTENT_MS 1000

/* ---- semaphore.c: the counting semaphore (docs/algorithm.md, "Counting semaphore") ---- */
/* The command a semaphore's round sends for cmd (the mutex's); LEAVE is
 * the same: a semaphore's queue is K's, as a mutex's. */
static inline rl_cmd rl_sem_cmd(rl_cmd cmd)
{
    switch (cmd) {
    case RL_CMD_SET:
    case RL_CMD_ACQUIRE: return RL_CMD_SEM_ACQUIRE;
    case RL_CMD_EXTEND: return RL_CMD_SEM_EXTEND;
    case RL_CMD_RELEASE: return RL_CMD_SEM_RELEASE;
    case RL_CMD_FENCE_COMMIT: return RL_CMD_SEM_FENCE_COMMIT;
    default: return cmd;
    }
}
/* The name of the semaphore's key for `what` ("limit", or a slot's number)
 * next to K: the one place that names them (the scripts use the same). */
#define RL_SEM_SEP RL_KEY_SEM_SEP            /* keys.h */
#define RL_SEM_SLOT_PREFIX RL_KEY_SEM_SLOT
extern char rl_sha_sem_acquire[41], rl_sha_sem_extend[41], rl_sha_sem_release[41], rl_sha_sem_fence_commit[41];
extern const char rl_script_sem_acquire[], rl_script_sem_extend[], rl_script_sem_release[],
    rl_script_sem_fence_commit[];

extern char rl_sha_release[41];
extern char rl_sha_extend[41];
extern const char rl_script_release[];
extern const char rl_script_extend[];
extern char rl_sha_acquire[41];
extern char rl_sha_leave[41];
extern char rl_sha_fence_commit[41];
extern const char rl_script_acquire[];
extern const char rl_script_leave[];
extern const char rl_script_fence_commit[];
extern char rl_sha_extend_many[41];
extern const char rl_script_extend_many[];
extern char rl_sha_set_many[41];
extern const char rl_script_set_many[];
extern char rl_sha_release_many[41];
extern const char rl_script_release_many[];
extern char rl_sha_elect[41];
extern const char rl_script_elect[];
extern char rl_sha_epoch[41];
extern const char rl_script_epoch[];
extern char rl_sha_rw_acquire[41];
extern char rl_sha_rw_extend[41];
extern char rl_sha_rw_release[41];
extern char rl_sha_rw_downgrade[41];
extern char rl_sha_rw_give_up[41];
extern const char rl_script_rw_give_up[];
extern const char rl_script_rw_acquire[];
extern const char rl_script_rw_extend[];
extern const char rl_script_rw_release[];
extern const char rl_script_rw_downgrade[];
/* A read attempt with mode "R" only: RL_CMD_RW_ACQUIRE's short form
 * (engine/proto.c), with three keys and two arguments. */
extern char rl_sha_rw_read[41];
extern const char rl_script_rw_read[];
/* ---- multilock.c: the multi-resource lock (docs/algorithm.md,
 * "Multi-resource locks") ---- */
/* A multi lock's keys in canonical order (the names sorted bytewise), each
 * with its queue's two keys and its fencing counter beside it: KEYS of
 * every RL_CMD_MULTI_* script are these 4 * n keys, in this order. The
 * lock's own key (lock->key) is the first name's. */
typedef struct rl_multi {
    size_t n;                 /* resources */
    const char **keys;        /* 4 * n: K, K:wq, K:wl, K:fencing per resource */
    size_t *lens;             /* keys, lens and the keys' bytes are in the one
                               * allocation of the struct: free() frees it all */
} rl_multi;
static inline rl_cmd rl_multi_cmd(rl_cmd cmd)
{
    switch (cmd) {
    case RL_CMD_SET:
    case RL_CMD_ACQUIRE: return RL_CMD_MULTI_ACQUIRE;
    case RL_CMD_EXTEND: return RL_CMD_MULTI_EXTEND;
    case RL_CMD_RELEASE: return RL_CMD_MULTI_RELEASE;
    case RL_CMD_FENCE_COMMIT: return RL_CMD_MULTI_FENCE_COMMIT;
    case RL_CMD_LEAVE: return RL_CMD_MULTI_LEAVE;
    default: return cmd;
    }
}
/* lock.c: 0, or REDLOCK_EINVAL with why resource cannot be locked through
 * client in errbuf (the checks of redlock_lock_open). */
int rl_resource_problem(const redlock_client *client, const char *resource, char *errbuf, size_t size);
extern char rl_sha_multi_acquire[41], rl_sha_multi_extend[41], rl_sha_multi_release[41],
    rl_sha_multi_fence_commit[41], rl_sha_multi_leave[41];
extern const char rl_script_multi_acquire[], rl_script_multi_extend[], rl_script_multi_release[],
    rl_script_multi_fence_commit[], rl_script_multi_leave[];

#define RL_FUNCTION_LIBRARY_MAX 65536   /* every script above: about 33 KB now */
extern char rl_function_library[RL_FUNCTION_LIBRARY_MAX];    /* built by rl_scripts_init */
void rl_scripts_init(void);

/* ---- attempt.c: one acquisition attempt ---- */
/* What a refused attempt says about waiting (scripts.c): the nodes that
 * refused, how many of them said the holder's release wakes the queue, and
 * the time until the lock can be free on a majority at the latest. */
typedef struct wait_hint {
    int yes, no, marked, trouble;
    int64_t hint_ms;
} wait_hint;

/* One acquisition attempt, in two halves, so that the acquire thread can
 * run the rounds of several locks' attempts at once (acquire_async.c,
 * through rl_epoch_run_each): begin makes a fresh value and the round r
 * (mode: its room), 0 or the code. A waiter passes its registration
 * (member, ticket; "" for none) and whether a grant drops it (drop: an
 * earlier attempt registered it). Once r ran, end decides the number-th
 * attempt: on failure every node that may hold our value gets a release
 * before it returns; h says how to wait. */
int rl_attempt_begin(redlock_lock *lock, rl_round *r, uint32_t ttl_ms, const char *member, uint64_t ticket,
                     int calm, int renew, int drop, char mode[8]);
int rl_attempt_end(redlock_lock *lock, rl_round *r, uint32_t ttl_ms, uint32_t number, const char *member,
                   wait_hint *h);
/* A waiter is done: its registration leaves the queue, without waiting for
 * replies; on every node (all), or where out says it was not granted. */
void rl_leave_queue(redlock_lock *lock, const char *member, const rl_outcome *out, int all);


/* ---- acquire.c: one acquisition, attempt by attempt ---- */
/* What a call of acquire knows across its attempts. */
typedef struct rl_waiting {
    int64_t start, deadline;     /* deadline 0: none */
    uint64_t max_attempts;       /* UINT64_MAX: bounded by time (or nothing) */
    int listen, join;            /* listens for releases; registers in the queue */
    int plain_first, woke;
    int registered, last_plain;  /* an attempt registered it; the last one was plain */
    int woken_plain;             /* the last attempt was a registered waiter's plain one, after a wake-up */
    rl_waiter w;
    char member[RL_MEMBER_MAX];  /* its registration, "" when it does not join */
    uint64_t ticket;
    int64_t renewed_us, renew_every_us, reached_us;
} rl_waiting;

/* One call of acquire: redlock_lock_acquire keeps it on its stack and naps
 * between attempts; redlock_lock_acquire_async keeps it in the client's
 * queue (acquire_async.c), whose thread runs its attempts and naps for it.
 * Each step runs under the lock's mutex. */
typedef struct rl_acq {
    redlock_lock *lock;
    uint32_t ttl_ms;
    int begun;                 /* the checks passed: rl_acq_end undoes the wait */
    int rc;                    /* the last attempt's result, then the call's */
    uint64_t n;                /* attempts so far */
    int64_t begun_us, nap_until_us;
    rl_waiting s;
    /* acquire_async.c's: the queue's thread calls step (1: nap until
     * nap_until_us; 0: over, rc set) and then report (the done callback,
     * which may free the lock). An election's observe uses them too. */
    int (*step)(struct rl_acq *a);
    void (*report)(struct rl_acq *a);
    redlock_acquired_fn done;
    void *userdata;
    int poked;                 /* the lock's eventfd was written during the nap */
    int watch;                 /* its eventfd: 0 not watched yet (no nap so far), 1 watched,
                                * -1 none (fd or watch limit): flags read every 10 ms */
    int64_t blind_at_us;       /* watch -1: when the flags are read next */
    int calm, plain;           /* the attempt under way: its form (acquire.c) */
    int gone;                  /* its lock was freed from the acquire thread (async mutex) */
    struct rl_acq *next;
} rl_acq;
/* The checks; 1 to go on with rl_acq_attempt, 0 when done (a->rc). */
int rl_acq_begin(rl_acq *a, redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms);
/* The next attempt: 1 to nap until a->nap_until_us, then rl_acq_woke; 0 when done. */
int rl_acq_attempt(rl_acq *a);
/* rl_acq_attempt in halves, for the acquire thread's batch: begin makes
 * the attempt's round r (0, or the code, with no round to run), which
 * the caller runs through rl_epoch_run_each; end decides it (r NULL or rc
 * set: the attempt failed with rc) and returns as rl_acq_attempt. */
int rl_acq_attempt_begin(rl_acq *a, rl_round *r, char mode[8]);
int rl_acq_attempt_end(rl_acq *a, rl_round *r, int rc);
/* 1 if a's attempts are rounds that rl_epoch_run_each can run beside
 * other locks' (not a kind with its own run_acquire). */
int rl_acq_batches(const rl_acq *a);
/* lock.c: a release in halves, for the same batch: begin makes its round
 * (0, or REDLOCK_ESTATE when not held), end decides it once it ran and
 * returns as redlock_lock_release. The lock's mutex is held for each. */
int rl_release_begin(redlock_lock *lock, rl_round *r);
int rl_release_end(redlock_lock *lock, const rl_round *r);
/* The nap's state now: -1 still on, 0 over, 1 woken by a release, REDLOCK_ECANCELED. */
int rl_acq_nap_state(rl_acq *a);
/* The lock's eventfd fd is readable during the nap: read it (and tell listener changes). */
void rl_acq_drain(rl_acq *a, int fd);
/* The nap ended with why (rl_acq_nap_state, not -1): 1 to attempt again, 0 when done. */
int rl_acq_woke(rl_acq *a, int why);
/* The end of the call: its registration undone, the ACQUIRE_DONE event; the result. */
int rl_acq_end(rl_acq *a);
/* The lock's eventfd (cancels and wake-ups write it), made on first need; -1 if none can be. */
int rl_lock_wake_fd(redlock_lock *lock);
/* acquire_async.c: queues a (step and report set) on lock's client's
 * thread, started if need be; lock's eventfd is watched from a's first nap. 0, or a
 * code with why (a is not queued). */
int rl_async_start(redlock_lock *lock, rl_acq *a, const char **why);

/* ---- async.c: the client's queue of asynchronous acquires (its thread: acquire_async.c) ---- */
typedef struct rl_async {
    pthread_mutex_t mu;
    pthread_cond_t idle;         /* a done callback returned */
    int started, stop;
    int orphan;                  /* the client went away from a done callback:
                                  * the thread frees this and exits */
    _Atomic pid_t pid;           /* the process that started the thread (0: none yet) */
    pthread_t thread;
    int epfd, kick_fd;           /* the thread's epoll set; written when an
                                  * acquire is queued or the thread must stop */
    rl_acq *head;                /* the acquires under way, waiting for their turn */
    redlock_lock *calling;       /* whose done callback runs */
} rl_async;
rl_async *rl_async_new(void);
void rl_async_free(rl_async *A);
/* 1 in a forked child of the process whose thread this was: A->mu is never taken there. */
int rl_async_forked(rl_async *A);
/* Wakes the thread (A->mu held): an acquire was queued, or it must stop. */
void rl_async_kick(rl_async *A);
/* With the client: no lock is left, so no acquire is queued. */
void rl_async_destroy(rl_async *A);
/* 1 while an asynchronous acquire of lock is under way (its callback not
 * yet called): another call that needs the handle meanwhile gets
 * REDLOCK_ESTATE, and leaves the handle's message to the acquire. */
int rl_async_pending(redlock_lock *lock);
/* Before the handle is freed: cancels its asynchronous acquire and waits
 * until its callback has returned (unless called on the acquire thread:
 * then the acquire is dropped without its callback). */
void rl_async_forget(redlock_lock *lock);

/* redlock_lock_cancel's effect (acquire.c, async.c): the sticky flag, then
 * the lock's eventfd, which wakes whoever waits for it. Async-signal-safe. */
static inline void rl_lock_cancel_now(redlock_lock *lock)
{
    atomic_store(&lock->cancel, 1);
    int fd = atomic_load(&lock->wake_fd);
    if (fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(fd, &one, sizeof one);
        (void)w;
    }
}

#endif
