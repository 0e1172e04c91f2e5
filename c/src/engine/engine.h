/* SPDX-License-Identifier: BSD-3-Clause */
/* engine.h: the I/O engine's private types, shared by its files (and by
 * wake.c, which keeps the waiters the listener wakes); docs/design.md draws
 * them. From the top down, each file calling only those below it:
 *   round.c     one round: submit a command to every node, return as soon
 *               as the outcome is decided (decide.c says which nodes it
 *               still needs), leave the rest to the connection
 *   mux.c       the client's multiplexer: whoever has a round under way
 *               drives every connection (leader/follower); a helper thread
 *               finishes writes and connects nobody else is driving
 *   listen.c    per node, the wake-up listener: a subscribed connection
 *               whose messages wake the client's waiters
 *   conn.c      one connection per node: writing, reading, redirects
 *   conn_state.c  its states and their one transition, a node's backoff,
 *               and its health (calm, stalled, closed while idle)
 *   fifo.c      the requests a connection owes replies to, and the orphans
 *               whose round returned without their reply
 *   conn_socket.c  opening a node's socket (connection and listener alike)
 *   conn_tls.c  the TLS handshake, the client's SSL_CTX, SIGPIPE
 *   route.c     a cluster node (docs/cluster.md): its connections to shard
 *               masters and its slot map, data only (conn.c does the I/O)
 *   proto.c     the wire format: one table of commands (format, parse, what
 *               a late reply means)
 *   slotmap.c   where Redis Cluster puts a key: its hash tag and its slot
 * Every field below is guarded by the client's rl_io.mu unless it says
 * otherwise. */
#ifndef REDLOCK_ENGINE_H
#define REDLOCK_ENGINE_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

struct ssl_st;
typedef struct rl_conn rl_conn;

/* ---- proto.c ---- */
enum { RL_VIA_EVALSHA, RL_VIA_EVAL, RL_VIA_FCALL, RL_VIA_N };

/* What one reply says, for the round that waits for it. */
typedef struct rl_parsed {
    rl_outcome out;
    uint64_t counter;              /* ACQUIRE with "c" granted: the node's counter */
    int64_t hint_ms;               /* ACQUIRE refused: wait at most this long (-1: unknown) */
    int marked;                    /* ACQUIRE refused: the holder's release wakes waiters */
    char msg[RL_NODE_MSG_MAX];
    size_t node;                   /* the node that replied (set by the caller) */
    uint32_t sem_other, sem_nfree; /* SEM_ACQUIRE: another limit; free slots (semaphore.c) */
    unsigned char sem_listed;
    uint16_t sem_free[RL_SEM_FREE_MAX];
} rl_parsed;

/* Formats cmd for r in the given way; length, or -1. Free with redisFreeCommand. */
long long rl_proto_format(char **out, const rl_round *r, int via);
/* The same for a node; tagged (a cluster node): the auxiliary keys named to
 * share the lock key's slot (docs/cluster.md). */
long long rl_proto_format_node(char **out, const rl_round *r, int via, int tagged);
/* 1 if cmd runs a script (may meet NOSCRIPT when sent by EVALSHA). */
int rl_proto_is_script(rl_cmd cmd);
/* 1 if a late NOSCRIPT to cmd must be answered by re-sending it as EVAL. */
int rl_proto_resend_late(rl_cmd cmd);
/* Reads a reply to r's command into p. NOSCRIPT gives RL_PENDING: re-send as EVAL. */
void rl_proto_parse(const rl_round *r, int via, const redisReply *rep, rl_parsed *p);
/* An EXTEND_MANY reply that rl_proto_parse found whole (RL_YES): what node
 * i said of each key, into r->batch. */
void rl_proto_many_results(rl_round *r, size_t i, const redisReply *rep);
/* What an error reply means for its node: RL_ERR_AUTH (no password, a wrong
 * one), RL_ERR_PERM (NOPERM, a disabled or renamed command) or
 * RL_ERR_SERVER; msg gets the reply, cut at a word if it must be, and the
 * fix where one is known. */
rl_outcome rl_proto_error(const char *err, char *msg, size_t size);

/* ---- conn.c ---- */
typedef enum rl_conn_state {
    RL_CONN_CLOSED = 0,   /* no socket; the next submit opens one (unless in backoff) */
    RL_CONN_CONNECTING,   /* non-blocking connect under way; commands wait in the buffer */
    RL_CONN_HANDSHAKE,    /* TLS handshake under way (driven here, not by hiredis) */
    RL_CONN_READY         /* commands are written and replies matched, in order */
} rl_conn_state;

enum { RL_REQ_AUTH = 1, RL_REQ_SELECT, RL_REQ_CMD, RL_REQ_MAP /* CLUSTER NODES (route.c) */,
       RL_REQ_PROBE /* may this client release here? (conn.c) */ };

/* One command a connection has been handed and owes a reply to. */
typedef struct rl_req {
    rl_round *round;       /* the round waiting for it, or NULL once that round returned */
    unsigned char kind;    /* RL_REQ_* */
    unsigned char cmd;     /* rl_cmd */
    unsigned char via;     /* RL_VIA_* */
    int64_t sent_us;       /* handed to the connection */
    char *resend;          /* sent if the late reply meets resend_if: an orphaned EVALSHA
                            * release/extend's EVAL form (NOSCRIPT); an orphaned acquire's
                            * leave (refused, though the acquisition won elsewhere) or
                            * release (granted, though the acquisition lost) */
    size_t resend_len;
    unsigned char resend_cmd, resend_via, resend_if;
    char *redirect;        /* a cluster node's command (route.c): what a MOVED or ASK to it re-sends
                            * elsewhere once its round no longer waits */
    size_t redirect_len;
    unsigned char hops;    /* redirects it has followed */
    unsigned char asked;   /* sent after ASKING (an ASK redirect): what is re-sent in its place on
                            * the same connection (EVAL after NOSCRIPT, a late release or leave)
                            * needs ASKING again, or the importing shard answers MOVED */
} rl_req;

/* ASKING before a command re-sent in place of one that was sent after
 * ASKING (rl_req.asked); its reply is read as a late one and dropped. */
void rl_fifo_asking(rl_conn *c, int64_t now);

enum { RL_IF_NOSCRIPT = 0, RL_IF_REFUSED, RL_IF_GRANTED };

#define RL_PIPE_MAX 4096   /* requests a connection may owe; beyond, the node is not answering */

struct rl_conn {
    rl_conn_state state;
    redisContext *ctx;
    struct ssl_st *ssl;        /* owned by ctx once handed over; NULL for plain connections */
    short tls_want;            /* HANDSHAKE: POLLIN or POLLOUT */
    pid_t pid;                 /* the process that opened it */
    int64_t opened_us;
    int64_t last_reply_us;     /* when the node last answered on it, 0 = never */
    unsigned scripts_sent;     /* bit per rl_cmd: its script went by EVAL on this connection */
    rl_reply_guard guard;      /* hardened reader (c/common/reply.c) */
    rl_req *q;                 /* ring of owed replies: q[(head + k) % cap] */
    uint32_t head, len, cap;
    uint64_t seq0;             /* sequence number of q[head] */
    int wpending;              /* output not fully written (and may be written now) */
    int gated;                 /* the probe's answer awaited: what follows it is held back */
    size_t gate_bytes;         /* while gated, the bytes before the gate still to write */
    uint32_t gen;              /* counts opens: poll results name the socket they are for */
    uint32_t late_cmds;        /* owed replies with a leave or release waiting on them */
    unsigned char tagged;      /* a cluster node's: auxiliary keys share the key's slot (slotmap.c) */
};

/* ---- conn_state.c ---- */
/* Node i of round r is done: its outcome, round-trip time and message (NULL:
 * none); wakes a follower whose round that decides. */
void rl_conn_finish(rl_round *r, size_t i, rl_outcome out, const char *msg, int64_t now);
/* node failed (why: told to the rounds that skip it meanwhile; unreachable:
 * a connect that failed): its reconnect backoff grows. */
void rl_conn_backoff(rl_node *node, int64_t now, const char *why, int unreachable);
/* 1 if an idle connection was closed by the node (restart, idle timeout):
 * one recv without waiting. */
int rl_conn_closed_while_idle(rl_conn *c);
/* Moves c to state `to`; RL_CONN_CLOSED fails every request it carried
 * (their rounds get `fail` and why) and closes the socket. The one place
 * where a connection changes state. */
void rl_conn_transition(redlock_client *cl, size_t node, rl_conn_state to, rl_outcome fail, const char *why);
/* ---- conn.c ---- */
/* Hands r's command to node i's connection (opening one if needed); sets
 * r->seq[i], or finishes the node at once when it cannot be sent. 1 if the
 * leader must look at the connection again (a new socket, or a write the
 * socket did not take whole): the caller wakes it (rl_io_wake_leader). */
int rl_conn_submit(redlock_client *cl, size_t i, rl_round *r, int64_t now);
/* Sends the leave script for a registration of this client that no longer
 * waits (its message came to the listener) down node i's connection, when
 * that connection is ready; its reply is read and dropped. A hint: nothing
 * is sent when the connection is not ready or owes many replies. 1 as
 * rl_conn_submit. */
int rl_conn_send_leave(redlock_client *cl, size_t i, const char *key, size_t key_len, const char *member,
                       int64_t now);
/* The round's deadline for node i passed with no reply: a timeout, and the
 * node is suspect until it answers again. */
void rl_conn_expire(redlock_client *cl, size_t i, rl_round *r, int64_t now);
/* Handles poll() events on node i's connection. */
void rl_conn_events(redlock_client *cl, size_t i, short revents, int64_t now);
/* What to poll for on node i (0: nothing). */
short rl_conn_poll_events(const redlock_client *cl, size_t i);
/* 1 if the connection has a connect, a handshake or a write that nobody
 * would finish unless driven. */
int rl_conn_needs_driving(const redlock_client *cl, size_t i);
/* Closes connections that stopped answering (RL_STALL) or time out connecting. */
void rl_conn_check_stall(redlock_client *cl, size_t i, int64_t now);
/* 1 if node i looks healthy: not suspect, not in reconnect backoff, and
 * its oldest owed reply (if any) younger than the node timeout. A node that is stopped or paused
 * stops being calm within a node timeout, even when every round decides
 * at quorum without waiting for it. */
int rl_conn_calm(const redlock_client *cl, size_t i, int64_t now);
/* Requests owed on node i's connection. */
uint32_t rl_conn_owed(const redlock_client *cl, size_t i);
/* Owed replies on which a leave or a release waits (these need reading soon). */
uint32_t rl_conn_late_cmds(const redlock_client *cl, size_t i);
/* 1 if a node r waits for still has r's command held behind its
 * connection's gate (conn.c's probe): r is not done with it, decided or
 * not, until the command is written, so that what a call hands to a node
 * is on its way when the call returns, as on any other connection. */
int rl_round_gated(const redlock_client *cl, const rl_round *r);
void rl_conn_free(redlock_client *cl, size_t i);

/* ---- conn_socket.c ---- */
/* Opens c's non-blocking socket to node i (CLOSED -> CONNECTING, nothing
 * queued): 0, or -1 with the reason in msg. Shared with the listener. */
int rl_conn_socket(redlock_client *cl, size_t i, rl_conn *c, int64_t now, char *msg, size_t msgsize);
/* Appends the node's AUTH (it has a password) to ctx's output: REDIS_OK or REDIS_ERR. */
int rl_conn_append_auth(const rl_node *node, redisContext *ctx);

/* ---- fifo.c: the requests a connection owes replies to ---- */
/* The k-th request from the head. */
rl_req *rl_fifo_at(rl_conn *c, uint32_t k);
/* A zeroed request at the tail: NULL past RL_PIPE_MAX or out of memory. */
rl_req *rl_fifo_push(rl_conn *c);
/* Drops the head (its reply was read, or the connection closed). */
void rl_fifo_pop(rl_conn *c);
/* The request with sequence number seq, or NULL if it is no longer owed. */
rl_req *rl_fifo_find(rl_conn *c, uint64_t seq);
/* Queues a command: its bytes into the context's buffer, its request (kind
 * RL_REQ_CMD) into the FIFO. NULL when the FIFO is full or out of memory. */
rl_req *rl_fifo_enqueue(rl_conn *c, const char *buf, size_t len, int64_t now);
/* The reply to the head, an orphan: pops it, and queues the command it
 * carries if the reply calls for it (the caller flushes). */
void rl_fifo_late_reply(rl_conn *c, const redisReply *rep, int64_t now);
/* The round stops waiting for node i: its request becomes an orphan whose
 * reply is read and dropped (or acted on: NOSCRIPT) by whoever drives next. */
void rl_conn_orphan(redlock_client *cl, size_t i, rl_round *r);

/* ---- conn_tls.c ---- */
/* Starts TLS on c, a connected socket to node i (its lock connection or
 * its listener): 0 (handshake under way or done) or -1 with the reason in msg. */
int rl_conn_tls_begin(const redlock_client *cl, size_t i, rl_conn *c, char *msg, size_t msgsize);
/* Continues the handshake: 0 done, 1 waiting (tls_want says for what), -1 failed. */
int rl_conn_tls_step(const redlock_client *cl, size_t i, rl_conn *c, char *msg, size_t msgsize);
/* Makes a plain context write with MSG_NOSIGNAL. */
void rl_conn_nosignal(redisContext *ctx);
/* Blocks SIGPIPE around I/O on a TLS client (OpenSSL writes with write(2)),
 * and takes back one that the I/O raised. */
typedef struct rl_sigpipe {
    sigset_t pipe_set, old_mask;
    int masked, was_pending;
} rl_sigpipe;
void rl_sigpipe_block(const redlock_client *cl, rl_sigpipe *g);
void rl_sigpipe_restore(rl_sigpipe *g);

/* ---- listen.c ---- */
/* A change of a listener's state. */
typedef struct rl_listen_change {
    int state;                 /* redlock_listener_state */
    char msg[RL_NODE_MSG_MAX];
} rl_listen_change;

/* A node's listening connection: subscribed to the client's wake channel
 * while anyone waits (the rl_conn's FIFO is not used). */
typedef struct rl_listener {
    rl_conn conn;
    int state;                 /* redlock_listener_state */
    char msg[RL_NODE_MSG_MAX]; /* why DOWN or REFUSED */
    rl_listen_change untold[8]; /* not yet told by REDLOCK_EVENT_LISTENER, oldest first */
    int nuntold;
    int64_t retry_us;          /* CLOSED: reopen no sooner than this */
    uint32_t backoff_ms;
    int auth_owed, subscribed;
    int ever;                  /* subscribed before: a new subscription wakes every waiter */
    /* a cluster node's: which of its seeds it listens on (0: the first), and
     * that seed's connection index (route.c); PUBLISH reaches every member */
    size_t member, via;
} rl_listener;

/* Opens the listeners that are due while anyone waits, and gives up those
 * that do not subscribe in time; returns when to look again (INT64_MAX). */
int64_t rl_listen_maintain(redlock_client *cl, int64_t now);
short rl_listen_poll_events(const redlock_client *cl, size_t i);
/* The listener's socket (and its generation, for stale poll results). */
int rl_listen_fd(const redlock_client *cl, size_t i, uint32_t *gen);
/* Handles poll() events on node i's listener, waking the waiters that
 * messages name. 1 if a lock connection was left with a write for the
 * leader (a leave for a stale registration): the caller wakes it. */
int rl_listen_events(redlock_client *cl, size_t i, short revents, int64_t now);
void rl_listen_free(redlock_client *cl, size_t i);
#define RL_WAKE_ID_LEN 16
/* A new wake id: the client's channel is redlock:wake:<id>. */
int rl_listen_new_id(char out[RL_WAKE_ID_LEN + 1]);
/* Node i's listener state (OFF before the first wait), and why into msg. */
int rl_listen_state(const redlock_client *cl, size_t i, char *msg, size_t msgsize);
/* Takes up to max of node i's changes not told yet, oldest first; how many. */
size_t rl_listen_untold(redlock_client *cl, size_t i, rl_listen_change *out, size_t max);

/* ---- mux.c ---- */
typedef struct rl_io {
    pthread_mutex_t mu;
    int leader;                /* a thread is driving (in or around poll) */
    int polling;               /* the leader is inside poll(): wake it through wake_fd */
    int wake_fd;               /* eventfd */
    rl_round *active;          /* rounds under way (r->next), the leader's included */
    int followers;             /* rounds waiting for someone else to drive */
    int hold_flush;            /* submits leave their command in the buffer: the next
                                * round's goes in the same write (rl_round_run_checked) */
    /* the helper thread: finishes what no round is driving, and reads the
     * replies still owed once the client is quiet */
    pthread_t thread;
    pthread_cond_t helper_cv;
    int helper_started, helper_stop, helper_busy;
    int helper_idle;           /* asleep with nothing to do: pass_lead must wake it for replies owed */
    int64_t last_round_us;     /* when a round last returned (rl_io_done) */
    void *helper_stack;        /* its stack's mapping (mux.c), guard page included */
    size_t helper_stack_len;
#define RL_STALE_STACKS 4
    void *stale_stack[RL_STALE_STACKS];  /* in a forked child: the parents' helpers', unmapped by
                                          * rl_io_destroy */
    size_t stale_stack_len[RL_STALE_STACKS];
    int nstale;
    pid_t pid;                 /* the process these connections belong to */
    /* waiting acquires (wake.c keeps the list; listen.c wakes them) */
    char wake_id[RL_WAKE_ID_LEN + 1];  /* the client's channel: redlock:wake:<wake_id> */
    rl_waiter *waiters;
    uint64_t waiter_seq;
    int nwaiters;              /* while > 0, the listeners are driven */
} rl_io;

/* Takes the client's I/O mutex (starting over first in a forked child). */
void rl_io_enter(redlock_client *cl);
void rl_io_leave(redlock_client *cl);
/* Runs r (already submitted and linked) until decided; mu held. */
void rl_io_wait(redlock_client *cl, rl_round *r);
/* A round returned: pass the lead on if it was ours; mu held. */
void rl_io_done(redlock_client *cl);

/* After a submit that needs the leader's attention (a new socket, a write
 * left over): wake it if it is in poll(). The submitting round drives
 * otherwise. mu held. */
void rl_io_wake_leader(redlock_client *cl);
/* Work that nobody may drive (a connect, a handshake, a write, replies
 * owed): the leader if there is one, else the helper (started on first
 * need). mu held. */
void rl_io_kick(redlock_client *cl);

/* ---- route.c: a cluster node's shard connections and slot map ----
 * Connection indexes j: below cl->n the nodes themselves, above them the
 * shard connections of cluster nodes (each serving one node). */
rl_node *rl_nodeat(const redlock_client *cl, size_t j);
/* How many connection indexes there are (nodes and shard connections). */
size_t rl_nconns(const redlock_client *cl);
/* The node that connection j serves. */
size_t rl_logical(const redlock_client *cl, size_t j);
/* The connection that owns key's slot for cluster node i (i itself when
 * not known, or another seed while the first is down). */
size_t rl_route_pick(redlock_client *cl, size_t i, const char *key, size_t len, int64_t now);
/* 1 if node i's slot map should be asked for now (CLUSTER NODES); marks it asked. */
int rl_route_refresh_due(redlock_client *cl, size_t i, int64_t now);
/* 1 if rep, read on connection j, is a MOVED or ASK redirect: the
 * connection to follow it on into *to (made if new), *ask for ASK; a
 * MOVED updates the slot map and marks it stale. */
int rl_route_redirect(redlock_client *cl, size_t j, const redisReply *rep, size_t *to, int *ask);
/* A CLUSTER NODES reply read on connection j: the slot map of its node. */
void rl_route_map_reply(redlock_client *cl, size_t j, const redisReply *rep, int64_t now);
/* The connection index of cluster node i's seed k (0: the first, i
 * itself; k: the URL's k-th seed=), or SIZE_MAX past the last. */
size_t rl_route_seed(redlock_client *cl, size_t i, size_t k);
/* One slot of each shard master in cluster node i's slot map, into slots
 * (at most max): how many; 0 while the map is not known. Under the I/O
 * mutex (rl_io_enter). */
size_t rl_route_shard_slots(redlock_client *cl, size_t i, unsigned *slots, size_t max);
/* host:port of connection j, for reports. */
void rl_route_shard_name(redlock_client *cl, size_t j, char *out, size_t size);
/* Frees the shard connections' endpoints and the maps (their rl_conns first: rl_conn_free). */
void rl_route_free(redlock_client *cl);

/* ---- slotmap.c: where Redis Cluster puts a key ---- */
/* 1 if key has a hash tag ({...} with something inside), its offset and length. */
int rl_key_tag(const char *key, size_t len, size_t *start, size_t *tlen);
/* 1 if key's auxiliary keys can share its slot on a cluster node: it has a
 * tag (K + suffix), or holds no '}' ("{K}" + suffix hashes K whole). */
int rl_key_taggable(const char *key, size_t len);
/* The cluster slot of key, 0..16383. */
unsigned rl_keyslot(const char *key, size_t len);
/* CRC16/XMODEM of key[0..n), continuing from crc (0 to start). */
uint16_t rl_crc16(uint16_t crc, const char *key, size_t n);

#endif
