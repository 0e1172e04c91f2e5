/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock.h: the public C ABI of libredlock, a Redlock distributed lock over
 * N independent Redis-compatible nodes; see docs/c-api.md for the
 * conventions and docs/threading.md for threads.
 *
 * Two tiers, as zstd has. Everything declared by default is stable: within a
 * major version (the SONAME) functions keep their signatures, enum values
 * and error codes are only appended, and redlock_options only grows through
 * REDLOCK_OPTIONS_VERSION. The experimental part at the end is declared only
 * when REDLOCK_EXPERIMENTAL is defined before this header is included: its
 * calls are exported too, but their shapes may change in a minor release
 * (the change is then named in CHANGELOG.md), so a program that uses them
 * should be built against the version it runs with. */
#ifndef REDLOCK_H
#define REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REDLOCK_VERSION_MAJOR 0
#define REDLOCK_VERSION_MINOR 1
#define REDLOCK_VERSION_PATCH 0

#if defined(_WIN32)
#  define REDLOCK_EXTERN __declspec(dllimport)
#elif defined(REDLOCK_BUILDING) && defined(__GNUC__)
#  define REDLOCK_EXTERN __attribute__((visibility("default")))
#else
#  define REDLOCK_EXTERN
#endif

/* Error codes. 0 is success; failures are negative. Values are stable and
 * new ones are only ever appended. */
typedef enum redlock_error_code {
    REDLOCK_OK           = 0,
    REDLOCK_EINVAL       = -1,  /* invalid argument: NULL, bad URL, bad TTL... */
    REDLOCK_ENOMEM       = -2,  /* out of memory */
    REDLOCK_ENOTACQUIRED = -3,  /* another owner holds the lock */
    REDLOCK_ENOQUORUM    = -4,  /* too few nodes answered to decide */
    REDLOCK_EEXPIRED     = -5,  /* the validity ran out */
    REDLOCK_ELOST        = -6,  /* the lock is no longer ours on a majority */
    REDLOCK_ETIMEDOUT    = -7,  /* the wait deadline passed */
    REDLOCK_EIO          = -8,  /* I/O error talking to nodes */
    REDLOCK_ESERVER      = -9,  /* server error reply (READONLY, OOM...) */
    REDLOCK_EAUTH        = -10, /* authentication failed */
    REDLOCK_ETLS         = -11, /* TLS failure */
    REDLOCK_ENOTSUP      = -12, /* not supported */
    REDLOCK_ECANCELED    = -13, /* cancelled by redlock_lock_cancel() or a signal */
    REDLOCK_ELIMIT       = -14, /* extension bound reached (max_extensions, max_hold_ms) */
    REDLOCK_ESTATE       = -15, /* the call does not fit the lock's state (e.g. release of a lock not held) */
    REDLOCK_EUNREACHABLE = -16, /* no quorum of nodes could be reached (refused, unresolvable name,
                                 * connect timeout) for redlock_options.unreachable_ms */
    REDLOCK_EPERM        = -17, /* a node refused a command the lock needs: an ACL without it
                                 * (NOPERM), or the command disabled or renamed */
    REDLOCK_EATRISK      = -18, /* not a failure and never returned: the code of the at-risk
                                 * notice (redlock_lock_auto_extend): auto-extension has not
                                 * extended the lock and its validity ends within the
                                 * at-risk margin. The lock is still held */
    REDLOCK_EFENCED      = -19  /* a store refused a write whose token is older than its
                                 * fence: a later holder has written (redlock_fence_script;
                                 * raised by the bindings' fenced writes, not by the library) */
} redlock_error_code;

/* Limits enforced on input; exceeding one gives REDLOCK_EINVAL. */
#define REDLOCK_MAX_NODES         64
#define REDLOCK_MAX_RESOURCE_LEN  4096
#define REDLOCK_MAX_PREFIX_LEN    1024
#define REDLOCK_MAX_TTL_MS        86400000u   /* one day */
#define REDLOCK_MAX_WAIT_MS       604800000u  /* seven days: wait_ms arguments and options */
#define REDLOCK_MAX_NODE_TIMEOUT_MS    600000u /* redlock_options.node_timeout_ms: 1 up to this */
#define REDLOCK_MAX_CONNECT_TIMEOUT_MS 600000u /* redlock_options.connect_timeout_ms: up to this */
#define REDLOCK_MAX_DRIFT_MIN_MS       60000u  /* redlock_options.drift_min_ms: up to this */
#define REDLOCK_MAX_DRIFT_FACTOR       0.5     /* redlock_options.drift_factor: in [0, this) */

typedef struct redlock_client redlock_client; /* N nodes + settings; thread-safe */
typedef struct redlock_lock   redlock_lock;   /* one lock on one resource; one thread at a time
                                               * (besides the client's auto-extend thread) */

/* ---- Events: the metrics hook (redlock_options.on_event) ---- */
typedef enum redlock_event_type {
    REDLOCK_EVENT_ACQUIRED       = 1, /* an acquire attempt got the lock */
    REDLOCK_EVENT_ACQUIRE_FAILED = 2, /* an attempt failed (code); a retry may follow */
    REDLOCK_EVENT_EXTENDED       = 3, /* by redlock_lock_extend or by auto-extend (auto = 1) */
    REDLOCK_EVENT_EXTEND_FAILED  = 4, /* not extended, not (yet) known lost, e.g. no quorum */
    REDLOCK_EVENT_LOST           = 5, /* no longer held: not ours on a majority, or its
                                       * validity ran out without an extension */
    REDLOCK_EVENT_RELEASED       = 6, /* released while still ours on a majority */
    REDLOCK_EVENT_RELEASE_FAILED = 7, /* release not confirmed by a majority (code) */
    REDLOCK_EVENT_NODE_ERROR     = 8, /* one node failed in a round: node, node_outcome, message */
    REDLOCK_EVENT_WOKEN          = 9, /* a waiting acquire was woken by a release (node: from where) */
    REDLOCK_EVENT_LISTENER       = 10,/* a node's wake-up listener changed state: node,
                                       * listener_state, message; told to (lock, resource)
                                       * a waiting acquire that saw it */
    REDLOCK_EVENT_ACQUIRE_DONE   = 11,/* an acquire call ended, after its last attempt: code
                                       * (0 = acquired), attempt (the attempts made, 0 if
                                       * none), elapsed_us (the whole call, waits included) */
    REDLOCK_EVENT_WATCH_BEHIND   = 12,/* the client's auto-extend thread starts extensions
                                       * late: more locks than the nodes can extend in time.
                                       * lock: the latest; elapsed_us: how late; message: how
                                       * many were due. At most once a second, while the
                                       * validity left is still about half the TTL */
    REDLOCK_EVENT_AT_RISK        = 13 /* an auto-extended lock armed for at-risk notices
                                       * (redlock_lock_auto_extend) has not been extended
                                       * and its validity ends within the margin: code
                                       * REDLOCK_EATRISK, validity_ms the validity left,
                                       * message the last failed try. Once per episode: a
                                       * successful extension ends it */
} redlock_event_type;

/* The state of the connection on which a client listens for releases, one
 * per node (redlock_client_listener_state, REDLOCK_EVENT_LISTENER). */
typedef enum redlock_listener_state {
    REDLOCK_LISTENER_OFF        = 0, /* not started: no waiting acquire yet, or wake-up off */
    REDLOCK_LISTENER_CONNECTING = 1, /* connecting, authenticating or subscribing */
    REDLOCK_LISTENER_READY      = 2, /* subscribed: a release on this node wakes our waiters */
    REDLOCK_LISTENER_DOWN       = 3, /* failed; reconnecting with backoff; waiters poll meanwhile */
    REDLOCK_LISTENER_REFUSED    = 4  /* the node refused SUBSCRIBE (an ACL without the
                                      * channel &redlock:wake:*); waiters poll */
} redlock_listener_state;

/* What one node did in a lock's last round (redlock_lock_node_result, events). */
typedef enum redlock_node_outcome {
    REDLOCK_NODE_NONE       = 0, /* not contacted: no round yet, or skipped */
    REDLOCK_NODE_OK         = 1, /* granted / confirmed */
    REDLOCK_NODE_REFUSED    = 2, /* held by another owner, or no longer ours */
    REDLOCK_NODE_ERROR      = 3, /* error reply, I/O, auth or TLS failure: see the code and message */
    REDLOCK_NODE_TIMEOUT    = 4, /* no reply before the node's deadline */
    REDLOCK_NODE_DOWN       = 5, /* skipped: in reconnect backoff after failing to connect */
    REDLOCK_NODE_NOT_WAITED = 6, /* sent, but the round was decided without its reply */
    REDLOCK_NODE_QUARANTINED = 7 /* out of the vote: it may have lost its keys, or its clock
                                  * jumped; the message says why and for how long */
} redlock_node_outcome;

/* Passed to on_event; library-owned, valid during the call only. Fields are
 * only ever appended. */
typedef struct redlock_event {
    int type;                  /* redlock_event_type */
    int code;                  /* 0, or the REDLOCK_E* code of the failure or loss */
    const redlock_lock *lock;  /* the lock concerned: read-only calls only */
    const char *resource;
    const char *message;       /* detail; "" when none; never NULL */
    uint32_t attempt;          /* ACQUIRED/ACQUIRE_FAILED: 1 for a call's first attempt, then 2... */
    int automatic;             /* 1 when the auto-extend thread did it */
    int nodes_ok;              /* nodes that said OK in the round */
    int quorum;                /* nodes needed */
    size_t n_nodes;
    int64_t elapsed_us;        /* the round's duration (for ACQUIRED, the whole attempt) */
    int64_t validity_ms;       /* ACQUIRED/EXTENDED/AT_RISK: the validity then left */
    uint64_t fencing_token;    /* ACQUIRED with REDLOCK_OPT_FENCING: the token, else 0 */
    size_t node;               /* NODE_ERROR: the node's index in the client's URL list */
    int node_outcome;          /* NODE_ERROR: redlock_node_outcome */
    int64_t node_rtt_us;       /* NODE_ERROR: time from the round's start to the failure */
    int listener_state;        /* LISTENER: the new redlock_listener_state */
    int64_t held_us;           /* RELEASED, RELEASE_FAILED, LOST: how long the lock was held,
                                * from the acquiring round's start; 0 on a second report
                                * of the same hold (a lost lock then released) */
    const int64_t *node_rtts_us; /* the events of a round (ACQUIRED, ACQUIRE_FAILED, EXTENDED,
                                * EXTEND_FAILED, RELEASED, RELEASE_FAILED, LOST by a release):
                                * n_nodes round-trip times, -1 for a node whose reply did
                                * not arrive (not sent, down, timed out, I/O failure, not
                                * waited for); NULL for other events */
} redlock_event;

/* Called synchronously on the thread that ran the round: the caller's, or the
 * client's auto-extend thread. It must be thread-safe and quick, and must
 * not call functions that change the lock (acquire, extend, release, free). */
typedef void (*redlock_event_fn)(const redlock_event *event, void *userdata);

/* Client options. Initialise with redlock_options_init() (or
 * REDLOCK_OPTIONS_INIT), then change fields. The version field comes first
 * and fields are only ever appended: the library reads a caller's struct by
 * its version, so a program built against an older header keeps working.
 * Version 1 ends with flags; version 2 adds TLS; version 3 adds on_event;
 * version 4 adds unreachable_ms; version 5 quarantine_ttl_ms. */
#define REDLOCK_OPTIONS_VERSION 5

/* Bits of redlock_options.flags */
#define REDLOCK_OPT_FUNCTIONS 0x1u   /* release and extend with FCALL on the "redlock"
                                      * function library (redlock_client_load_functions)
                                      * instead of EVALSHA/EVAL: lock users need no EVAL */
#define REDLOCK_OPT_FENCING   0x2u   /* every acquisition mints a fencing token
                                      * (redlock_lock_fencing_token, docs/fencing.md): one
                                      * more round trip per acquisition; nothing without it */
#define REDLOCK_OPT_NO_WAKE   0x4u   /* waiting acquires only poll (retry_delay_ms + jitter),
                                      * even with REDLOCK_OPT_WAKE or REDLOCK_OPT_FAIR, and an
                                      * election's candidates and observers too; without any of the three
                                      * a mutex's waiters poll as well */
#define REDLOCK_OPT_FAIR      0x8u   /* fair mode: a free lock goes to the waiter that has
                                      * waited longest, not to whoever asks first. Every
                                      * contender of a resource should use it. Implies
                                      * REDLOCK_OPT_WAKE */
#define REDLOCK_OPT_WAKE      0x10u  /* wake-up: a waiting acquire registers in the lock's
                                      * queue on the nodes and is woken by the holder's
                                      * release, instead of sleeping retry_delay_ms + jitter
                                      * (docs/algorithm.md, "Waking waiters"). Opt-in: it
                                      * hands a lock over in about a millisecond and starves
                                      * no waiter, but under contention costs the nodes more
                                      * CPU per acquisition than polling (docs/performance.md).
                                      * Releases wake other clients' waiters whatever this
                                      * client's flags; elections wake their candidates
                                      * and observers unless REDLOCK_OPT_NO_WAKE */
#define REDLOCK_OPT_NO_QUARANTINE 0x20u /* switch off the quarantine (docs/algorithm.md,
                                      * "Quarantine"): by default a node that may have lost
                                      * its keys (no marker: a restart without persistence, a
                                      * wipe) or whose clock jumped forward does not vote for
                                      * the longest TTL the nodes record. Each acquisition
                                      * checks it behind its own command, in the same write.
                                      * Off, such a node votes at once, as in plain Redlock */

typedef struct redlock_options {
    unsigned int version;        /* REDLOCK_OPTIONS_VERSION */
    uint32_t retry_count;        /* redlock_acquire: retries after the first attempt (3) */
    uint32_t retry_delay_ms;     /* fixed part of the delay between attempts (0) */
    uint32_t retry_jitter_ms;    /* random part, uniform in [0, jitter] (200) */
    uint32_t wait_ms;            /* redlock_acquire: give up after this long, 0 = no deadline (0) */
    double   drift_factor;       /* drift allowance = ttl * factor + drift_min_ms (0.01) */
    uint32_t drift_min_ms;       /* (2) */
    uint32_t node_timeout_ms;    /* per-node reply deadline for one round (50) */
    uint32_t connect_timeout_ms; /* extra time allowed when a connection must be made (200) */
    const char *key_prefix;      /* prepended to every resource; copied; NULL = "" */
    uint32_t max_extensions;     /* extensions per acquisition, 0 = unbounded (0) */
    uint32_t max_hold_ms;        /* total hold time reachable by extending, 0 = unbounded (0) */
    uint32_t flags;              /* REDLOCK_OPT_* bits (0) */
    /* Version 2: TLS for rediss:// nodes. Strings are copied; NULL = unset. Server
     * certificates are always verified (chain and name) unless
     * tls_insecure_skip_verify is set. Setting any of these with a redis:// TCP
     * node is refused, so a typo cannot silently send the lock in plain text. */
    const char *tls_ca_file;     /* PEM file of CAs to trust; with tls_ca_dir NULL too, the system's CAs */
    const char *tls_ca_dir;      /* directory of hashed CA certificates (openssl rehash) */
    const char *tls_cert_file;   /* client certificate chain (PEM) for mutual TLS; needs tls_key_file */
    const char *tls_key_file;    /* its private key (PEM, not encrypted) */
    const char *tls_server_name; /* name or IP every server's certificate must carry, also sent as
                                  * SNI; NULL = each node URL's own host */
    uint32_t tls_insecure_skip_verify; /* 1 = accept ANY server certificate: no protection against a
                                        * man in the middle. For tests only (0) */
    /* Version 3 */
    redlock_event_fn on_event;   /* the metrics hook: every acquire attempt, extension, loss,
                                  * release and node failure of this client's locks (NULL) */
    void *on_event_userdata;     /* passed to on_event (NULL) */
    void (*on_event_userdata_free)(void *userdata); /* called once with on_event_userdata when
                                  * the client is destroyed: after redlock_client_free and the
                                  * free of its last lock, when no event can follow. Not called
                                  * when client creation fails (NULL) */
    /* Version 4 */
    uint32_t unreachable_ms;     /* a waiting acquire fails with REDLOCK_EUNREACHABLE once no
                                  * attempt has reached a quorum of nodes for this long: each
                                  * unreachable node refused the connection, has a name that
                                  * does not resolve, did not finish connecting in time, or is
                                  * in reconnect backoff after one of these. A node that answers
                                  * (even with an error) or is connected but slow is reachable:
                                  * a busy lock or a slow node still waits. At most
                                  * REDLOCK_MAX_WAIT_MS, or REDLOCK_UNREACHABLE_NEVER to keep
                                  * waiting. 0 = the default: REDLOCK_UNREACHABLE_CONNECTS times
                                  * the larger of connect_timeout_ms and node_timeout_ms, 1000 ms
                                  * with the defaults (0) */
    /* Version 5 */
    uint32_t quarantine_ttl_ms;  /* the longest TTL any client takes on these nodes, peers'
                                  * libraries included: a node that lost its keys or whose clock
                                  * jumped stays out of the vote for the longer of this and the
                                  * longest TTL its markers record, plus its drift allowance
                                  * (docs/algorithm.md, "Quarantine"). At most
                                  * REDLOCK_MAX_TTL_MS. 0 = what the markers record (0) */
} redlock_options;

/* Values of redlock_options.unreachable_ms */
#define REDLOCK_UNREACHABLE_NEVER    UINT32_MAX  /* wait on while no quorum can be reached */
#define REDLOCK_UNREACHABLE_CONNECTS 5           /* 0: this many connect timeouts */

/* The defaults of redlock_options (the other fields default to 0 or NULL). */
#define REDLOCK_DEFAULT_RETRY_COUNT        3u
#define REDLOCK_DEFAULT_RETRY_JITTER_MS    200u
#define REDLOCK_DEFAULT_DRIFT_FACTOR       0.01
#define REDLOCK_DEFAULT_DRIFT_MIN_MS       2u
#define REDLOCK_DEFAULT_NODE_TIMEOUT_MS    50u
#define REDLOCK_DEFAULT_CONNECT_TIMEOUT_MS 200u

/* An initializer of the defaults: redlock_options o = REDLOCK_OPTIONS_INIT; */
#ifdef __cplusplus   /* positional: C++ before 20 has no designated initializers */
#define REDLOCK_OPTIONS_INIT { REDLOCK_OPTIONS_VERSION, REDLOCK_DEFAULT_RETRY_COUNT, 0, \
                               REDLOCK_DEFAULT_RETRY_JITTER_MS, 0, REDLOCK_DEFAULT_DRIFT_FACTOR, \
                               REDLOCK_DEFAULT_DRIFT_MIN_MS, REDLOCK_DEFAULT_NODE_TIMEOUT_MS, \
                               REDLOCK_DEFAULT_CONNECT_TIMEOUT_MS, NULL, 0, 0, 0, NULL, NULL, NULL, \
                               NULL, NULL, 0, NULL, NULL, NULL, 0, 0 }
#else
#define REDLOCK_OPTIONS_INIT { .version = REDLOCK_OPTIONS_VERSION,                         \
                               .retry_count = REDLOCK_DEFAULT_RETRY_COUNT,                 \
                               .retry_jitter_ms = REDLOCK_DEFAULT_RETRY_JITTER_MS,         \
                               .drift_factor = REDLOCK_DEFAULT_DRIFT_FACTOR,               \
                               .drift_min_ms = REDLOCK_DEFAULT_DRIFT_MIN_MS,               \
                               .node_timeout_ms = REDLOCK_DEFAULT_NODE_TIMEOUT_MS,         \
                               .connect_timeout_ms = REDLOCK_DEFAULT_CONNECT_TIMEOUT_MS }
#endif

/* Fills *opts with the defaults of options version `version` (1 up to
 * REDLOCK_OPTIONS_VERSION), writing only the fields that version has.
 * 0, or REDLOCK_EINVAL for NULL or an unknown version. */
REDLOCK_EXTERN int redlock_options_init_version(redlock_options *opts, unsigned int version);
/* Fills *opts with the defaults, the same as REDLOCK_OPTIONS_INIT; NULL is
 * ignored. A macro, so that the call records the struct size this header
 * declares; the exported function of the same name (for programs built
 * against version 1) fills a version 1 struct. */
REDLOCK_EXTERN void redlock_options_init(redlock_options *opts);
#define redlock_options_init(opts) ((void)redlock_options_init_version((opts), REDLOCK_OPTIONS_VERSION))

/* Creates a client over n_nodes node URLs:
 *   redis://[[user]:password@]host[:port][/db]   host may be [IPv6]
 *   rediss://[[user]:password@]host[:port][/db]  TLS (see the tls_* options)
 *   unix:///path/to/redis.sock[?db=N]            (password: unix://:pw@/path)
 * The same server given twice (after resolving names) gives REDLOCK_EINVAL.
 * TLS files that cannot be loaded give REDLOCK_ETLS. No connection is made
 * here; nodes are connected on first use and reconnected with backoff. opts
 * may be NULL. errbuf, if not NULL, receives a NUL-terminated description of
 * a failure. */
REDLOCK_EXTERN int redlock_client_new(redlock_client **out, const char *const *node_urls,
                                      size_t n_nodes, const redlock_options *opts);
REDLOCK_EXTERN int redlock_client_open(redlock_client **out, const char *const *node_urls,
                                       size_t n_nodes, const redlock_options *opts,
                                       char *errbuf, size_t errbuf_size);
/* Drops the caller's reference. Locks still alive keep the client's memory
 * until they are freed; connections close with the last reference. When
 * this call drops the last one, it first reads the replies its connections
 * still owe (a release just sent) while they keep coming, so that no
 * command is aborted by the close: at most 4 * node_timeout_ms +
 * connect_timeout_ms, and a node silent for node_timeout_ms is not waited
 * for. (When a lock handle drops the last reference instead, nothing is
 * waited for: redlock_lock_free never does network I/O.) Accepts NULL. */
REDLOCK_EXTERN void redlock_client_free(redlock_client *client);
REDLOCK_EXTERN size_t redlock_client_node_count(const redlock_client *client);
/* The URL of node i as given, with any password masked; "" if out of range.
 * Borrowed, valid until the client is freed. */
REDLOCK_EXTERN const char *redlock_client_node_url(const redlock_client *client, size_t i);
/* The state of node i's wake-up listener (a redlock_listener_state), or
 * REDLOCK_EINVAL for a NULL client or i out of range; msgbuf, if not NULL,
 * gets why it is down or refused ("" otherwise). Each client has at most one
 * listening connection per node, opened by its first waiting acquire and
 * kept until the client is freed. Thread-safe. */
REDLOCK_EXTERN int redlock_client_listener_state(const redlock_client *client, size_t i, char *msgbuf,
                                                 size_t msgbuf_size);

/* Loads (FUNCTION LOAD REPLACE) the "redlock" function library that
 * REDLOCK_OPT_FUNCTIONS calls, on every node (Redis 7+ or Valkey 7.2+). An
 * administrator runs it once per node, and again after a node lost its data,
 * through a client whose URLs carry a user allowed FUNCTION LOAD; lock users
 * then need FCALL, not EVAL. 0 if every node loaded it, else the commonest
 * failure (REDLOCK_EAUTH, REDLOCK_ESERVER, REDLOCK_ETLS, REDLOCK_ENOQUORUM)
 * with each node's answer in errbuf. */
REDLOCK_EXTERN int redlock_client_load_functions(redlock_client *client, char *errbuf, size_t errbuf_size);

/* Shorthands: a new lock on resource, acquired for ttl_ms. On success *out
 * is the held lock (caller frees it); on failure *out is NULL. redlock_acquire
 * retries per the client's options; redlock_try_acquire makes one attempt.
 * They are redlock_lock_new() + redlock_lock_acquire(); use those when the
 * failure's detail (redlock_lock_errmsg) is wanted. */
REDLOCK_EXTERN int redlock_acquire(redlock_lock **out, redlock_client *client, const char *resource,
                                   uint32_t ttl_ms);
REDLOCK_EXTERN int redlock_try_acquire(redlock_lock **out, redlock_client *client, const char *resource,
                                       uint32_t ttl_ms);

/* A lock handle for resource, not yet held. No network I/O. The handle can
 * be acquired, released and acquired again; each acquisition uses a fresh
 * random value. REDLOCK_EINVAL for a NULL argument, an empty resource or one
 * over REDLOCK_MAX_RESOURCE_LEN bytes, or, on a client with
 * REDLOCK_OPT_FENCING, a resource ending in ":fencing" (its counter's key). */
REDLOCK_EXTERN int redlock_lock_new(redlock_lock **out, redlock_client *client,
                                    const char *resource);
/* redlock_lock_new, and errbuf, if not NULL, receives a NUL-terminated
 * description of a failure ("" on success), as redlock_client_open does. */
REDLOCK_EXTERN int redlock_lock_open(redlock_lock **out, redlock_client *client, const char *resource,
                                     char *errbuf, size_t errbuf_size);

/* A lock's own acquisition policy: what the client's options of the same
 * names give every lock, set for one handle. Bindings use it for per-lock
 * settings (Go's per-Mutex options, Python's per-lock arguments) without a
 * client of their own, so connections stay the client's however many locks
 * differ. Set version to REDLOCK_LOCK_OPTIONS_VERSION; fields are only
 * appended. */
#define REDLOCK_LOCK_OPTIONS_VERSION 2
typedef struct redlock_lock_options {
    unsigned int version;        /* REDLOCK_LOCK_OPTIONS_VERSION */
    uint32_t retry_count;        /* REDLOCK_WAIT_DEFAULT: retries after the first attempt */
    uint32_t retry_delay_ms;     /* fixed part of the delay between attempts */
    uint32_t retry_jitter_ms;    /* random part, uniform in [0, jitter] */
    uint32_t wait_ms;            /* REDLOCK_WAIT_DEFAULT: give up after this long, 0 = no deadline */
    double   drift_factor;       /* drift allowance = ttl * factor + drift_min_ms, in [0, 0.5) */
    uint32_t drift_min_ms;       /* at most 60000 */
    /* Version 2 */
    uint32_t flags;              /* REDLOCK_OPT_WAKE, REDLOCK_OPT_NO_WAKE and REDLOCK_OPT_FAIR for this lock; the
                                  * client's flags give the default; other bits are refused */
} redlock_lock_options;

/* Fills *opts with the library's defaults for lock options version
 * `version` (1 up to REDLOCK_LOCK_OPTIONS_VERSION), writing only the fields
 * that version has: those of REDLOCK_OPTIONS_INIT of the same names, and
 * flags 0. A lock made by redlock_lock_new starts from its client's options
 * instead; these are what a client with default options gives. 0, or
 * REDLOCK_EINVAL for NULL or an unknown version. */
REDLOCK_EXTERN int redlock_lock_options_init_version(redlock_lock_options *opts, unsigned int version);
/* The same for the version this header declares; NULL is ignored. As with
 * redlock_options_init, a macro records the header's struct size; the
 * exported function of the same name fills a version 2 struct. */
REDLOCK_EXTERN void redlock_lock_options_init(redlock_lock_options *opts);
#define redlock_lock_options_init(opts) \
    ((void)redlock_lock_options_init_version((opts), REDLOCK_LOCK_OPTIONS_VERSION))

/* Reads the lock's policy into *out (out->version set by the caller): the
 * client's options until redlock_lock_set_options changed them. 0, or
 * REDLOCK_EINVAL for NULL or an unknown version. */
REDLOCK_EXTERN int redlock_lock_get_options(const redlock_lock *lock, redlock_lock_options *out);
/* Sets the lock's policy for its next acquisitions and extensions; checked
 * as the client's options are (REDLOCK_EINVAL with the reason in
 * redlock_lock_errmsg). Not while an acquire on the handle is under way. */
REDLOCK_EXTERN int redlock_lock_set_options(redlock_lock *lock, const redlock_lock_options *opts);
/* 1 if a waiting acquire with these flags (a client's redlock_options.flags
 * or a lock's redlock_lock_options.flags) is woken by the holder's release,
 * 0 if it polls: REDLOCK_OPT_WAKE or REDLOCK_OPT_FAIR, and not
 * REDLOCK_OPT_NO_WAKE. Other bits are ignored. The rule redlock_lock_acquire,
 * an election's candidates and its observers follow (an election adds
 * REDLOCK_OPT_WAKE to the client's flags). */
REDLOCK_EXTERN int redlock_flags_wake(uint32_t flags);
/* flags with wake-up asked for or not: on sets REDLOCK_OPT_WAKE, off clears
 * it, and both clear REDLOCK_OPT_NO_WAKE, so that redlock_flags_wake then
 * says on, or, for off, what REDLOCK_OPT_FAIR says (fair mode implies
 * wake-up). Other bits are kept. */
REDLOCK_EXTERN uint32_t redlock_flags_set_wake(uint32_t flags, int on);

/* Special values for redlock_lock_acquire's wait_ms */
#define REDLOCK_WAIT_DEFAULT (-1)  /* the client's retry_count / wait_ms */
#define REDLOCK_WAIT_NONE    0     /* exactly one attempt */
#define REDLOCK_WAIT_FOREVER (-2)  /* keep trying until acquired, a failure a retry cannot
                                    * fix, or redlock_lock_cancel: no deadline */

/* Acquires the lock for ttl_ms. wait_ms: REDLOCK_WAIT_DEFAULT, REDLOCK_WAIT_NONE,
 * REDLOCK_WAIT_FOREVER, or 1 to REDLOCK_MAX_WAIT_MS to keep retrying (with the
 * lock's delay and jitter) until wait_ms have passed, then REDLOCK_ETIMEDOUT.
 * Any other value gives REDLOCK_EINVAL. */
REDLOCK_EXTERN int redlock_lock_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms);
/* Asynchronous acquisition: what redlock_lock_acquire(lock, ttl_ms, wait_ms)
 * does, without blocking the caller or any thread of its own. The client's
 * one acquire thread, started by the first call, runs every attempt of
 * every asynchronous acquire of the client and waits between them on
 * timers and wake-ups. When the acquire ends, done(lock, rc, userdata) is
 * called once, on that thread, with what redlock_lock_acquire would have
 * returned (0 = held; the detail in redlock_lock_errmsg). Keep done short
 * and hand the result to your own loop: the next acquires wait for it. It
 * may call anything on the lock, including redlock_lock_free.
 * Returns 0 when the acquire is under way, or at once, without calling
 * done: REDLOCK_EINVAL (NULL lock or done), REDLOCK_ESTATE (an acquire on
 * the handle is under way), REDLOCK_ENOTSUP (a client inherited across
 * fork), REDLOCK_ENOMEM. The checks of redlock_lock_acquire (TTL, wait_ms,
 * already held, cancelled) end the acquire through done, as any failure.
 * redlock_lock_cancel ends it with REDLOCK_ECANCELED after at most the
 * round in flight; redlock_lock_free cancels it and waits for done to
 * return (called on the acquire thread itself, from another lock's done or
 * the on_event hook, it drops the acquire without calling its done).
 * Until done is called, the handle is the acquire's: call only
 * redlock_lock_cancel, redlock_lock_is_held, redlock_lock_validity_ms and
 * redlock_lock_fencing_token (redlock_lock_acquire and
 * redlock_lock_acquire_async give REDLOCK_ESTATE, and leave the handle's
 * message to the acquire). */
typedef void (*redlock_acquired_fn)(redlock_lock *lock, int rc, void *userdata);
REDLOCK_EXTERN int redlock_lock_acquire_async(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms,
                                              redlock_acquired_fn done, void *userdata);
/* A release and an extension that do not block the caller: what
 * redlock_lock_release and redlock_lock_extend do (one round each, on every
 * kind of handle), run on the client's acquire thread in turn with the
 * acquires' steps, with done(lock, rc, userdata) called there once it is
 * over, rc what the blocking call would have returned (redlock_acquired_fn
 * is the completion of every asynchronous call on a lock). The rules of
 * redlock_lock_acquire_async apply: one asynchronous call on a handle at a
 * time (another gives REDLOCK_ESTATE), done may free the lock or start the
 * next call, and redlock_lock_free waits for done. 0 once queued, or
 * REDLOCK_EINVAL (NULL lock or done), REDLOCK_ESTATE, REDLOCK_ENOMEM,
 * REDLOCK_ENOTSUP (in a forked child), and then done is not called. Not
 * cancelled by redlock_lock_cancel: one round is bounded by the client's
 * node_timeout_ms (and connect_timeout_ms for a new connection). */
REDLOCK_EXTERN int redlock_lock_release_async(redlock_lock *lock, redlock_acquired_fn done, void *userdata);
REDLOCK_EXTERN int redlock_lock_extend_async(redlock_lock *lock, uint32_t ttl_ms, redlock_acquired_fn done,
                                             void *userdata);

/* Extends a held lock to ttl_ms from now, on a majority and within its
 * validity; never re-creates an expired key. */
REDLOCK_EXTERN int redlock_lock_extend(redlock_lock *lock, uint32_t ttl_ms);

/* Releases on every node. 0 means the lock was still ours on a majority;
 * REDLOCK_ELOST means it was not (another owner may have overlapped). */
REDLOCK_EXTERN int redlock_lock_release(redlock_lock *lock);

/* Cancels acquisition on this lock: an acquire running in another thread
 * stops retrying and returns REDLOCK_ECANCELED once the round in flight is
 * over (or 0, if that round acquired the lock), and every later acquire
 * returns REDLOCK_ECANCELED at once until redlock_lock_cancel_reset(). Because the state is
 * sticky, a cancel issued just before an acquire starts is never lost.
 * Thread-safe and async-signal-safe. */
REDLOCK_EXTERN void redlock_lock_cancel(redlock_lock *lock);
/* Clears a cancel. Call it before an acquire while nothing can cancel the
 * lock concurrently, e.g. before arming a watcher that may cancel it. */
REDLOCK_EXTERN void redlock_lock_cancel_reset(redlock_lock *lock);

/* Frees memory only, never network I/O: a held lock is left to expire.
 * Accepts NULL. */
REDLOCK_EXTERN void redlock_lock_free(redlock_lock *lock);

/* ---- Fencing tokens (REDLOCK_OPT_FENCING; docs/fencing.md) ----
 * The token of the current acquisition, >= 1, or 0 when the lock is not held
 * or the client does not mint tokens. Under the assumptions in
 * docs/fencing.md, the tokens of successive holders of a resource strictly
 * increase: a storage service that remembers the highest token it has seen
 * can refuse the writes of a holder whose lease ran out. */
REDLOCK_EXTERN uint64_t redlock_lock_fencing_token(const redlock_lock *lock);

/* ---- Fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting
 * your store") ----
 * The library does not talk to the store: a binding runs this script on the
 * caller's own client to it (EVALSHA with redlock_fence_script_sha1, EVAL of
 * redlock_fence_script on NOSCRIPT). KEYS[1] the resource's fence key
 * (redlock_fence_key), KEYS[2] the data key (none for "advance"); ARGV[1]
 * the token in decimal, ARGV[2] the fence's retention in ms
 * (REDLOCK_FENCE_RETENTION_MS unless the caller knows better), ARGV[3] the
 * operation: "set" VALUE [PX-ms], "del", "hset" FIELD VALUE [...], "rpush"
 * VALUE [...], "incrby" N, or "advance" (raise the fence only; replies the
 * fence it had, "0" for none). The write is applied only if the token is at
 * least the fence's, compared as 64-bit integers, and the fence is raised
 * to it, atomically; the reply is the command's. An older token gets the
 * error reply "FENCED <token> <fence> ..." and nothing is written. The
 * fence key lives for the longer of its time left and the retention, from
 * each write. Static strings, any thread. */
#define REDLOCK_FENCE_RETENTION_MS 604800000u   /* seven days */
REDLOCK_EXTERN const char *redlock_fence_script(void);
REDLOCK_EXTERN const char *redlock_fence_script_sha1(void);
/* The fence key of resource (what the caller protects: a lock's resource, a
 * table row's id): "{resource}:fence", or "resource:fence" when resource
 * has a hash tag, so that on a cluster store it shares the slot of data
 * keys named with the same tag ("{orders}:17"). Writes it and a NUL into
 * out as snprintf does and returns the length it needs (without the NUL);
 * REDLOCK_EINVAL for a NULL or empty resource, one longer than
 * REDLOCK_MAX_RESOURCE_LEN, one with a '}' but no hash tag, or out NULL
 * with size > 0. No network I/O. */
REDLOCK_EXTERN int redlock_fence_key(char *out, size_t size, const char *resource);
/* Whether the store's error reply msg (len bytes, NUL not needed) is the
 * script's refusal, "FENCED <token> <fence>" then the end or a space and
 * its words: 1, with the two tokens (1 to 2^64 - 1) in *token and *fence
 * (either may be NULL), for the binding to raise as REDLOCK_EFENCED; else
 * 0, and *token and *fence are left alone. msg NULL is 0. No network I/O. */
REDLOCK_EXTERN int redlock_fence_refusal(const char *msg, size_t len, uint64_t *token, uint64_t *fence);

/* ---- Fenced writes to SQL rows (docs/fencing.md, "SQL rows") ----
 * The statements a binding runs on the caller's own database connection,
 * built here once: names quoted, the fence comparison, the placeholders.
 * Values never pass through the library: the statement has a placeholder
 * for each, and the caller passes them as parameters in this order
 * (K the key columns' values, V the value columns', T the token):
 *   REDLOCK_FENCE_SQL_UPSERT  K..., V..., T
 *     INSERT INTO t (k.., v.., fence) VALUES (..) ON CONFLICT (k..) DO UPDATE
 *     SET v = EXCLUDED.v, .., fence = EXCLUDED.fence
 *     WHERE t.fence IS NULL OR t.fence <= EXCLUDED.fence
 *   REDLOCK_FENCE_SQL_UPDATE  V..., T, K..., and T again unless DOLLAR
 *     UPDATE t SET v = .., fence = T WHERE k = .. AND (fence IS NULL OR fence <= T)
 *   REDLOCK_FENCE_SQL_READ    K...
 *     SELECT fence FROM t WHERE k = ..  (after a write that changed no row:
 *     a row is a refusal, with the fence that refused it; none, no such row)
 * A row is written only while its fence is NULL or at most the token. */
typedef enum redlock_fence_sql_statement {
    REDLOCK_FENCE_SQL_UPSERT = 1,
    REDLOCK_FENCE_SQL_UPDATE = 2,
    REDLOCK_FENCE_SQL_READ   = 3
} redlock_fence_sql_statement;
typedef enum redlock_sql_placeholder {
    REDLOCK_SQL_DOLLAR = 1, /* $1, $2, ...: PostgreSQL's own (Go's pgx and lib/pq) */
    REDLOCK_SQL_FORMAT = 2, /* %s: DB-API "format" drivers (psycopg); a '%' in a name is written %% */
    REDLOCK_SQL_QMARK  = 3  /* ?: sqlite3, JDBC, ODBC */
} redlock_sql_placeholder;
#define REDLOCK_FENCE_SQL_MAX_NAME    1024  /* bytes of one name, table or column */
#define REDLOCK_FENCE_SQL_MAX_COLUMNS 1600  /* key and value columns together */
/* Writes the statement and a NUL into out as snprintf does and returns its
 * length (without the NUL): call with size 0 to learn it. Each name is
 * quoted as an identifier: a '"' in it doubled, and a '.' separating parts
 * ("schema.table" is "schema"."table"). fence_column NULL is "fence". The
 * token is not in the statement; it is checked: 1 to 2^63 - 1, what a
 * BIGINT column holds. REDLOCK_EINVAL, with the reason in errbuf (if not
 * NULL; "" on success), for: an unknown statement or placeholder style, a
 * token of 0 or above 2^63 - 1, a NULL or empty name, one longer than
 * REDLOCK_FENCE_SQL_MAX_NAME, one with an empty part ("a..b", ".a"), no
 * key column, no value column for an upsert (an update with none only
 * raises the fence), more than REDLOCK_FENCE_SQL_MAX_COLUMNS columns, a
 * name given twice among the key, value and fence columns, or out NULL
 * with size > 0. A name is a C string: a binding refuses one with a NUL
 * before the call. Static, any thread, no I/O. */
REDLOCK_EXTERN int redlock_fence_sql(char *out, size_t size, int statement, int placeholder, const char *table,
                                     const char *const *key_columns, size_t n_key,
                                     const char *const *value_columns, size_t n_values,
                                     const char *fence_column, uint64_t token, char *errbuf, size_t errbuf_size);

/* ---- Auto-extension ---- */
/* Told that an auto-extended lock was lost: code is REDLOCK_ELOST (not ours
 * on a majority), REDLOCK_EEXPIRED (its validity ran out before an
 * extension succeeded; message says what failed) or REDLOCK_ELIMIT (the hold
 * bound was reached and the validity then ran out). Armed with an at-risk
 * margin (redlock_lock_auto_extend's at_risk_ms), it is also called with
 * REDLOCK_EATRISK, before the validity ends: not lost yet, but not extended
 * either (message: why, and the validity left); a loss may follow, or a
 * successful extension (after which a new at-risk notice may come). Armed
 * without one, it is called for losses only. Runs on the client's
 * auto-extend thread; it may read the lock and call redlock_lock_release, but
 * must not free it, and should be quick: other locks wait meanwhile. */
typedef void (*redlock_lost_fn)(redlock_lock *lock, int code, const char *message, void *userdata);

/* Default bound of redlock_lock_auto_extend: one hour of holding. */
#define REDLOCK_AUTO_EXTEND_MAX_HOLD_MS 3600000u

/* Keeps a held lock alive: the client's one background thread extends it to
 * its acquisition TTL every TTL/3 (sooner again after a failed try), until
 * it is released or freed, redlock_lock_auto_extend_stop, a loss, or the
 * bound: max_hold_ms of holding in all (0 = REDLOCK_AUTO_EXTEND_MAX_HOLD_MS;
 * the client's max_hold_ms and max_extensions apply too). Returns
 * REDLOCK_ESTATE when the lock is not held. Calls on the lock from its owner
 * stay allowed meanwhile: they wait for an extension under way. Calling it
 * again replaces the callback, after waiting for a running one.
 *
 * on_lost (may be NULL; a loss is also seen by redlock_lock_is_held
 * returning 0) is told of the loss, and, when at_risk_ms is not 0, that the
 * lock is at risk: once at_risk_ms before its validity ends no extension
 * has succeeded (the nodes fail, or the hold bound stops the extensions),
 * on_lost is called with REDLOCK_EATRISK and the lock stays under
 * auto-extension; the loss, if it comes, is told after it as usual. So the
 * holder can stop its work while the lock is still its own. Each failed
 * episode is told once: a successful extension ends it.
 * REDLOCK_EVENT_AT_RISK goes to on_event at the same time. at_risk_ms: 0 for
 * no at-risk notices, REDLOCK_AT_RISK_DEFAULT for
 * max(TTL / 10, 2 * node_timeout_ms), or a margin in ms; at most half the
 * acquisition's TTL (a larger one is taken as that). The notice comes at
 * the margin, give or take the thread's rounds for other locks.
 *
 * userdata_free (may be NULL) is called once with userdata when no call of
 * on_lost with it can follow: when another redlock_lock_auto_extend call on
 * the lock replaces it, when auto-extension ends by
 * redlock_lock_auto_extend_stop, redlock_lock_release or a new acquire, or
 * when the lock is freed; after a running on_lost returns. A loss alone does
 * not call it (the lock may still be released). Not called when this
 * returns an error. On the thread that made the call that ended it, or on
 * the auto-extend thread when on_lost itself ended it. */
#define REDLOCK_AT_RISK_DEFAULT UINT32_MAX
REDLOCK_EXTERN int redlock_lock_auto_extend(redlock_lock *lock, uint32_t max_hold_ms, uint32_t at_risk_ms,
                                            redlock_lost_fn on_lost, void *userdata,
                                            void (*userdata_free)(void *userdata));
/* Stops auto-extension (waiting for one under way, or its on_lost); the lock
 * stays held until its validity runs out. 0, or REDLOCK_ESTATE if it was not
 * on. */
REDLOCK_EXTERN int redlock_lock_auto_extend_stop(redlock_lock *lock);

/* ---- The last round's per-node report ----
 * What node i did in the lock's last round (the last attempt of an acquire,
 * its token round with fencing, an extension by anyone, or a release):
 * returns a redlock_node_outcome, or REDLOCK_EINVAL for a NULL lock or i out
 * of range. Optional outputs: *code_out the REDLOCK_E* code of an error
 * (REDLOCK_ESERVER, REDLOCK_EIO, REDLOCK_EAUTH, REDLOCK_ETLS, REDLOCK_ETIMEDOUT),
 * else 0; *rtt_us_out the time from the round's start to the node's answer
 * (or failure), else 0; msgbuf the node's detail ("" when none), truncated to
 * msgbuf_size. Thread-safe against the auto-extend thread. */
REDLOCK_EXTERN int redlock_lock_node_result(const redlock_lock *lock, size_t i, int *code_out,
                                            int64_t *rtt_us_out, char *msgbuf, size_t msgbuf_size);

/* Remaining validity on CLOCK_MONOTONIC; <= 0 means expired or not held.
 * This, redlock_lock_is_held and redlock_lock_fencing_token may be called
 * from any thread, even while another call on the lock is under way. */
REDLOCK_EXTERN int64_t redlock_lock_validity_ms(const redlock_lock *lock);
/* 1 if the lock is held by this handle and its validity has not run out. */
REDLOCK_EXTERN int redlock_lock_is_held(const redlock_lock *lock);
/* How many times the current (or last) acquisition was extended: 0 after
 * each acquire, one more for each extension that succeeded, by
 * redlock_lock_extend or by auto-extension (a write lock's downgrade counts
 * as one). The count max_extensions bounds. Any thread, as
 * redlock_lock_validity_ms; 0 for NULL. */
REDLOCK_EXTERN uint32_t redlock_lock_extensions(const redlock_lock *lock);
/* Borrowed strings, valid until the lock is freed. */
REDLOCK_EXTERN const char *redlock_lock_resource(const redlock_lock *lock);
/* The detail of the last failed call on this lock (which nodes said what),
 * or "" when the last call succeeded. Valid until the next call on the lock. */
REDLOCK_EXTERN const char *redlock_lock_errmsg(const redlock_lock *lock);
/* The error code of the last call on this lock (0 when it succeeded). */
REDLOCK_EXTERN int redlock_lock_errcode(const redlock_lock *lock);

/* ---- Counting semaphores (docs/algorithm.md, "Counting semaphore") ----
 * A semaphore is a lock handle of another kind: each handle takes `permits`
 * of the semaphore's `limit` permits at once (all or none), and
 * redlock_lock_acquire, redlock_lock_extend, redlock_lock_release, auto-extension,
 * validity, fencing tokens (one counter per semaphore), the per-node report,
 * cancel and wake-up apply to it unchanged. At most `limit` permits are held
 * at once whenever Redlock's assumptions hold. Every user of a semaphore
 * must pass the same limit: the nodes keep it while any permit is held, and
 * an acquire with another one fails with REDLOCK_EINVAL, naming both. */
#define REDLOCK_MAX_SEM_LIMIT 1000u
/* A semaphore handle on resource, not yet held. No network I/O.
 * REDLOCK_EINVAL for what redlock_lock_new refuses, a limit of 0 or over
 * REDLOCK_MAX_SEM_LIMIT, or permits of 0 or over the limit. */
REDLOCK_EXTERN int redlock_lock_new_semaphore(redlock_lock **out, redlock_client *client, const char *resource,
                                              uint32_t limit, uint32_t permits);
/* redlock_lock_new_semaphore, and errbuf, if not NULL, receives a
 * description of a failure ("" on success). */
REDLOCK_EXTERN int redlock_lock_open_semaphore(redlock_lock **out, redlock_client *client, const char *resource,
                                               uint32_t limit, uint32_t permits, char *errbuf,
                                               size_t errbuf_size);
/* A semaphore handle's limit and permits (either pointer may be NULL); 0,
 * or REDLOCK_EINVAL for NULL or a handle that is not a semaphore. */
REDLOCK_EXTERN int redlock_lock_semaphore_limit(const redlock_lock *lock, uint32_t *limit_out,
                                                uint32_t *permits_out);

/* A static description of an error code; never NULL. */
REDLOCK_EXTERN const char *redlock_strerror(int code);
/* Short name of an error code, e.g. "REDLOCK_ENOQUORUM"; never NULL. */
REDLOCK_EXTERN const char *redlock_error_name(int code);
/* 1 if a later attempt may succeed where one failed with code, so that a
 * waiting acquire tries again: REDLOCK_ENOTACQUIRED, REDLOCK_ENOQUORUM,
 * REDLOCK_EEXPIRED, REDLOCK_EIO and REDLOCK_ESERVER. 0 for every other code,
 * among them REDLOCK_EUNREACHABLE and REDLOCK_ETIMEDOUT (a wait already gave
 * up) and REDLOCK_ECANCELED. The rule redlock_lock_acquire follows. */
REDLOCK_EXTERN int redlock_error_is_retryable(int code);
/* "MAJOR.MINOR.PATCH" of the library actually linked. */
REDLOCK_EXTERN const char *redlock_version(void);

/* ---- Leader election (docs/c-api.md "Leader election"; the safety argument
 * in docs/algorithm.md "Leader election") ----
 * An election is a lock on the resource `name` that always mints fencing
 * tokens, whatever the client's flags: the token of a leadership is its
 * term, so terms strictly increase from one leader to the next. Its leader
 * keeps the lock auto-extended and a record (term, revision, value) on a
 * majority, which anyone can read or observe. Its keys are the lock's key K
 * and K:leader, K:obs (observers), K:fencing, K:wq and K:wl. */
#define REDLOCK_ELECTION_MAX_VALUE 1024  /* bytes of a leader's value, without the NUL */

typedef struct redlock_election redlock_election; /* one campaigner or observer of one
                                                   * election; one thread at a time, but
                                                   * see redlock_election_observe */

/* What a read of the election found. Set version to REDLOCK_LEADER_VERSION;
 * fields are only ever appended. */
#define REDLOCK_LEADER_VERSION 1
typedef struct redlock_leader {
    unsigned int version;      /* REDLOCK_LEADER_VERSION */
    int present;               /* 1: a leader holds the election on a majority; 0: none */
    uint64_t term;             /* the leader's term (its fencing token); with present 0, the
                                * last term a majority recorded (0: never any) */
    uint64_t revision;         /* 1 when elected, + 1 per redlock_election_proclaim; 0 with none */
    size_t value_len;
    char value[REDLOCK_ELECTION_MAX_VALUE + 1]; /* the leader's value, NUL-terminated; "" with none */
} redlock_leader;

/* A handle on the election `name` (a resource name, with its rules:
 * REDLOCK_EINVAL for NULL, "", over REDLOCK_MAX_RESOURCE_LEN, or ending in
 * ":fencing"). No network I/O. */
REDLOCK_EXTERN int redlock_election_new(redlock_election **out, redlock_client *client, const char *name);
/* redlock_election_new, and errbuf, if not NULL, receives a NUL-terminated
 * reason for a failure ("" on success), as redlock_lock_open does. */
REDLOCK_EXTERN int redlock_election_open(redlock_election **out, redlock_client *client, const char *name,
                                         char *errbuf, size_t errbuf_size);
/* Frees memory only, never network I/O: a leadership is left to expire
 * (resign first to hand over at once). Accepts NULL. */
REDLOCK_EXTERN void redlock_election_free(redlock_election *e);
/* Called when leadership is lost, as redlock_lock_auto_extend's on_lost (its
 * lock is redlock_election_lock(e)). Set before a campaign; NULL for none. */
REDLOCK_EXTERN int redlock_election_on_lost(redlock_election *e, redlock_lost_fn on_lost, void *userdata);
/* Campaigns: waits (wait_ms as redlock_lock_acquire's) until this handle
 * leads, then writes value with the new term on a majority and keeps the
 * leadership auto-extended to ttl_ms until resign, free or loss. 0 when
 * leading; REDLOCK_EINVAL for a NULL or too long value, REDLOCK_ESTATE when
 * already leading, REDLOCK_ECANCELED after redlock_election_cancel, or the
 * acquisition's failure. */
REDLOCK_EXTERN int redlock_election_campaign(redlock_election *e, const char *value, uint32_t ttl_ms,
                                             int64_t wait_ms);
/* redlock_election_campaign without blocking, as redlock_lock_acquire_async
 * is to redlock_lock_acquire: the wait, the record's write and the start of
 * auto-extension run on the client's acquire thread, and done(e, rc,
 * userdata) is called there once with what the campaign would have returned
 * (the detail in redlock_election_errmsg). Returns 0 when under way, or at
 * once, without calling done: REDLOCK_EINVAL (NULL e or done, a NULL or too
 * long value), REDLOCK_ESTATE (already leading, or a campaign under way),
 * REDLOCK_ENOTSUP, REDLOCK_ENOMEM. redlock_election_cancel ends it with
 * REDLOCK_ECANCELED; redlock_election_free cancels it and waits for done
 * (which must then not call functions on e). Until done, call only
 * redlock_election_cancel, redlock_election_is_leader and
 * redlock_election_term on e. */
typedef void (*redlock_campaigned_fn)(redlock_election *e, int rc, void *userdata);
REDLOCK_EXTERN int redlock_election_campaign_async(redlock_election *e, const char *value, uint32_t ttl_ms,
                                                   int64_t wait_ms, redlock_campaigned_fn done, void *userdata);
/* The leader changes its value on a majority, same term, revision + 1.
 * REDLOCK_ESTATE when not leading, REDLOCK_ELOST when the nodes say the
 * election is no longer ours, or a failure code (the value may then be on a
 * minority: proclaim again). */
REDLOCK_EXTERN int redlock_election_proclaim(redlock_election *e, const char *value);
/* redlock_election_proclaim without blocking, as redlock_election_resign_async
 * is to redlock_election_resign: value is copied, the round runs on the
 * client's acquire thread, and done(e, rc, userdata) is called there once
 * with what the proclaim would have returned. 0 once queued, or at once,
 * without calling done: REDLOCK_EINVAL (NULL e or done, a NULL or too long
 * value), REDLOCK_ESTATE (a campaign, resign or proclaim of e under way),
 * REDLOCK_ENOTSUP, REDLOCK_ENOMEM. One round, not cancelled;
 * redlock_election_free waits for done. */
REDLOCK_EXTERN int redlock_election_proclaim_async(redlock_election *e, const char *value,
                                                   redlock_campaigned_fn done, void *userdata);
/* Gives leadership up: releases the lock, which wakes the next campaigner,
 * and clears the record. 0, REDLOCK_ESTATE when not leading, or
 * redlock_lock_release's code (REDLOCK_ELOST: it had already been lost). */
REDLOCK_EXTERN int redlock_election_resign(redlock_election *e);
/* redlock_election_resign without blocking: run on the client's acquire
 * thread, which then calls done(e, rc, userdata) once with what the resign
 * would have returned. 0 once queued, or at once, without calling done:
 * REDLOCK_EINVAL (NULL e or done), REDLOCK_ESTATE (a campaign, resign or
 * proclaim of e under way), REDLOCK_ENOTSUP, REDLOCK_ENOMEM. One round, not
 * cancelled; redlock_election_free waits for done. */
REDLOCK_EXTERN int redlock_election_resign_async(redlock_election *e, redlock_campaigned_fn done, void *userdata);
/* Reads the leader from the nodes: reported only if a majority agree on
 * its term (a minority answer is never reported), else present = 0. A hint
 * once returned: act on it only with the term as a fencing token. */
REDLOCK_EXTERN int redlock_election_leader(redlock_election *e, redlock_leader *out);
/* Waits for the first state later than *last (term, then revision; "none"
 * after term T comes after every revision of T and every earlier term),
 * writes it to *last and returns 0. Start from redlock_election_leader's
 * answer, or from a zeroed struct (with version set): then the first
 * leader, or "none" with the last term of an election that had one. Woken by the
 * nodes' messages (the wake-up listener) within about a round trip; polls
 * while listeners are down, and re-reads after a listener reconnects.
 * wait_ms: REDLOCK_WAIT_NONE (one read), REDLOCK_WAIT_FOREVER, or 1 to
 * REDLOCK_MAX_WAIT_MS, then REDLOCK_ETIMEDOUT. Changes that are replaced
 * before a read can see them are coalesced: the latest is returned, never
 * an earlier one. May run on one other thread while the handle campaigns. */
REDLOCK_EXTERN int redlock_election_observe(redlock_election *e, redlock_leader *last, int64_t wait_ms);
/* redlock_election_observe without blocking: the reads and the waits
 * between them run on the client's acquire thread (as
 * redlock_lock_acquire_async's do), which then calls done(e, rc, userdata)
 * once with what redlock_election_observe would have returned; *last is
 * written before, on a change. Returns 0 when under way, or at once,
 * without calling done: REDLOCK_EINVAL (NULL e or done, last, wait_ms),
 * REDLOCK_ESTATE (an observe of the handle under way), REDLOCK_ENOTSUP,
 * REDLOCK_ENOMEM. redlock_election_cancel ends it with REDLOCK_ECANCELED;
 * redlock_election_free cancels it and waits for done (which must then not
 * call functions on e). Until done, leave *last alone. */
typedef void (*redlock_observed_fn)(redlock_election *e, int rc, void *userdata);
REDLOCK_EXTERN int redlock_election_observe_async(redlock_election *e, redlock_leader *last, int64_t wait_ms,
                                                  redlock_observed_fn done, void *userdata);
/* Cancels campaign and observe, as redlock_lock_cancel does (sticky, any
 * thread, async-signal-safe); reset clears it. */
REDLOCK_EXTERN void redlock_election_cancel(redlock_election *e);
REDLOCK_EXTERN void redlock_election_cancel_reset(redlock_election *e);
/* 1 while this handle leads and its validity has not run out. Any thread. */
REDLOCK_EXTERN int redlock_election_is_leader(const redlock_election *e);
/* The term of the current leadership (its fencing token), 0 when not leading. Any thread. */
REDLOCK_EXTERN uint64_t redlock_election_term(const redlock_election *e);
/* The election's lock, borrowed: its validity, node report and loss; only
 * the read-only redlock_lock_* calls. */
REDLOCK_EXTERN const redlock_lock *redlock_election_lock(const redlock_election *e);
/* The detail of the last failed call on the handle, "" after a success. */
REDLOCK_EXTERN const char *redlock_election_errmsg(const redlock_election *e);

/* ---- Read-write locks (docs/c-api.md, "Read-write locks") ----
 * A handle for one side of the read-write lock on resource: many readers
 * hold it together, a writer alone. The writer's key is the mutex's, so a
 * write lock and a redlock_lock_new lock on the same resource exclude each
 * other. Everything that takes a lock applies: acquire, extend, release
 * (REDLOCK_ELOST when not ours on a majority), auto-extend, validity,
 * fencing (a reader's token is the counter as it was: see docs/fencing.md),
 * node results, cancel, wake-up. Writers are preferred: once a waiting
 * writer is refused because of readers, new readers wait for it. The
 * arguments and errors are redlock_lock_new's. No network I/O. */
REDLOCK_EXTERN int redlock_lock_new_read(redlock_lock **out, redlock_client *client, const char *resource);
REDLOCK_EXTERN int redlock_lock_new_write(redlock_lock **out, redlock_client *client, const char *resource);
/* The same, and errbuf, if not NULL, receives a NUL-terminated reason for a
 * failure ("" on success), as redlock_lock_open does. */
REDLOCK_EXTERN int redlock_lock_open_read(redlock_lock **out, redlock_client *client, const char *resource,
                                          char *errbuf, size_t errbuf_size);
REDLOCK_EXTERN int redlock_lock_open_write(redlock_lock **out, redlock_client *client, const char *resource,
                                           char *errbuf, size_t errbuf_size);
/* A held write lock becomes a read lock in one round, with no writer in
 * between, for the TTL of its acquisition. 0, or: REDLOCK_EINVAL for NULL
 * or a handle that is not a write lock (a read lock is never upgraded: two
 * readers upgrading would wait for each other for ever); REDLOCK_ESTATE
 * when not held; REDLOCK_ELOST, REDLOCK_EEXPIRED or a failure code, after
 * which the handle is not held and its keys are released. */
REDLOCK_EXTERN int redlock_lock_downgrade(redlock_lock *lock);
/* redlock_lock_downgrade without blocking, as redlock_lock_release_async is
 * to redlock_lock_release (its rules, its codes). */
REDLOCK_EXTERN int redlock_lock_downgrade_async(redlock_lock *lock, redlock_acquired_fn done, void *userdata);

/* ---- Multi-resource locks (docs/algorithm.md, "Multi-resource locks") ----
 * A handle that holds n resources together, all or none, under one value:
 * each node sets every key of the set or none, in one script that takes
 * the keys in canonical order (the names sorted bytewise), so callers that
 * list the same resources in any order exclude each other and never
 * deadlock. Each key is the mutex's key of its resource, so a multi lock
 * and a redlock_lock_new lock on one of its resources exclude each other.
 * Everything that takes a lock applies: acquire (granted when a quorum set
 * every key), extend, release (REDLOCK_ELOST when not every key is ours on
 * a majority), auto-extend, validity, fencing (one token for the set,
 * above every counter of its resources, and committed to each of them:
 * docs/fencing.md), node results, cancel, wake-up (a release of any of the
 * keys wakes the waiter). Fair mode (REDLOCK_OPT_FAIR) does not apply to a
 * set. redlock_lock_resource gives the names in canonical order, joined by
 * commas. On a Redis Cluster node all the keys must hash to one slot (a
 * hash tag), else the node refuses each command. No network I/O. */
#define REDLOCK_MAX_MULTI 64
/* REDLOCK_EINVAL for NULL, n of 0 or over REDLOCK_MAX_MULTI, a resource
 * listed twice, or any name redlock_lock_new refuses. */
REDLOCK_EXTERN int redlock_lock_new_multi(redlock_lock **out, redlock_client *client, const char *const *resources,
                                          size_t n);
/* redlock_lock_new_multi, and errbuf, if not NULL, receives a
 * NUL-terminated reason for a failure ("" on success). */
REDLOCK_EXTERN int redlock_lock_open_multi(redlock_lock **out, redlock_client *client, const char *const *resources,
                                           size_t n, char *errbuf, size_t errbuf_size);
/* How many resources a multi-resource handle holds (n_out may be NULL); 0,
 * or REDLOCK_EINVAL for NULL or a handle of another kind. */
REDLOCK_EXTERN int redlock_lock_multi_count(const redlock_lock *lock, size_t *n_out);

/* ---- Experimental: declared with REDLOCK_EXPERIMENTAL only ----
 * Calls whose shape may still change in a minor release (see the top of
 * this file). Each moves to the stable part once its shape has settled. */
#ifdef REDLOCK_EXPERIMENTAL

/* One attempt at each of locks[0..n) (handles of client), all pipelined:
 * what n calls of redlock_lock_acquire(locks[k], ttl_ms, REDLOCK_WAIT_NONE)
 * would do, in about one round trip instead of n. results[k] gets what that
 * call would return (the detail in each handle). Returns 0 (n of 0 does
 * nothing), or, before any lock is touched and with results untouched,
 * REDLOCK_EINVAL (client, locks or results NULL, n over
 * REDLOCK_ACQUIRE_MANY_MAX, a NULL handle, a handle of another client, a
 * handle given twice) or REDLOCK_ENOMEM, with the reason in errbuf (if not
 * NULL; "" on success). Locks of a client with REDLOCK_OPT_FENCING, in fair
 * mode, or of another kind than the mutex (a read-write lock's side, a
 * semaphore's permit) get their attempts one after another. */
#define REDLOCK_ACQUIRE_MANY_MAX 65536
REDLOCK_EXTERN int redlock_lock_acquire_many(redlock_client *client, redlock_lock *const *locks, size_t n,
                                             uint32_t ttl_ms, int *results, char *errbuf, size_t errbuf_size);

#endif /* REDLOCK_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif

#endif /* REDLOCK_H */
