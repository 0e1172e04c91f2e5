/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_node.c: the Node-API glue of the Node.js binding, in plain C.
 *
 * Every wait runs on the C library's own threads: acquires, releases and
 * extensions through the *_async calls (the client's acquire thread), lost
 * locks through redlock_lock_auto_extend (its auto-extend thread). Their
 * callbacks copy what they need (code, message, the per-node report) into an
 * item and hand it to the JS thread through the client's one thread-safe
 * function, which calls lib/native.js's dispatcher. Nothing here blocks the
 * JS thread on the network, and no libuv pool thread is used.
 *
 * Lifetimes. A client_state is shared by the JS client handle, every JS lock
 * handle and the C client (through its on_event_userdata): an atomic count,
 * freed at 0. The thread-safe function is released by on_event_userdata_free,
 * which C calls once the client is destroyed (redlock_client_free and the
 * free of its last lock): no callback can follow it, so no C thread can use
 * a released thread-safe function. redlock_client_free may wait for replies
 * the connections still owe, so quit() runs it on a short detached thread.
 */
#define _POSIX_C_SOURCE 200809L
#define NAPI_VERSION 8
#include <node_api.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redlock.h"

#define MSG_MAX 1024
#define NODE_MSG_MAX 256

typedef struct client_state {
    atomic_int refs;
    redlock_client *client;   /* NULL once closed by JS */
    napi_threadsafe_function tsfn;
    atomic_int tsfn_gone;     /* released, or finalized by Node at teardown */
    atomic_int events_on;     /* the metrics hook's events go to JS: a listener is there */
    int refed;                /* JS thread only */
} client_state;

typedef struct lock_box {
    redlock_lock *lock;
    client_state *st;
} lock_box;

/* An election handle: a campaigner, or one observer's own (C allows one
 * observe per handle at a time). last is the observer's state, written by
 * C's acquire thread before its done; lost_id names the JS side of a loss. */
typedef struct election_box {
    redlock_election *e;
    client_state *st;
    double lost_id;
    redlock_leader last;
} election_box;

typedef struct node_res {
    int outcome, code;
    int64_t rtt_us;
    char msg[NODE_MSG_MAX];
} node_res;

enum { ITEM_DONE = 1, ITEM_LOST = 2, ITEM_EVENT = 3 };

/* A copy of a redlock_event (the metrics hook), for JS. */
typedef struct event_copy {
    int type, code, automatic, nodes_ok, quorum, node_outcome, listener_state;
    uint32_t attempt;
    size_t n_nodes, node;
    int64_t elapsed_us, validity_ms, node_rtt_us, held_us;
    uint64_t fencing_token;
    char *resource;
    int64_t *rtts;            /* n_nodes of them, or NULL */
} event_copy;

typedef struct item {
    int kind;
    double id;
    int rc;
    int64_t validity_ms;
    uint64_t token;
    char *msg;
    size_t n;
    node_res *res;
    int has_leader;           /* an observe's done: the state read */
    int present;
    uint64_t revision;
    char *value;
    event_copy *ev;           /* ITEM_EVENT */
} item_t;

typedef struct op_ctx {
    client_state *st;
    double id;
    election_box *eb;         /* an observe's: where its state is */
} op_ctx;

static void st_unref(client_state *st) {
    if (atomic_fetch_sub(&st->refs, 1) == 1)
        free(st);
}

/* ---- errors and small helpers ---- */

static napi_value throw_type(napi_env env, const char *msg) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return NULL;
}

static napi_value make_int(napi_env env, int64_t v) {
    napi_value r;
    napi_create_int64(env, v, &r);
    return r;
}

static napi_value make_str(napi_env env, const char *s) {
    napi_value r;
    napi_create_string_utf8(env, s ? s : "", NAPI_AUTO_LENGTH, &r);
    return r;
}

static napi_value make_undef(napi_env env) {
    napi_value r;
    napi_get_undefined(env, &r);
    return r;
}

/* [rc, value] */
static napi_value pair(napi_env env, int rc, napi_value v) {
    napi_value a;
    napi_create_array_with_length(env, 2, &a);
    napi_set_element(env, a, 0, make_int(env, rc));
    napi_set_element(env, a, 1, v ? v : make_undef(env));
    return a;
}

/* A JS string argument as a malloc'd UTF-8 string; embedded NULs refused. */
static char *get_str(napi_env env, napi_value v, const char *what) {
    size_t len = 0;
    char msg[128];
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
        snprintf(msg, sizeof msg, "%s must be a string", what);
        throw_type(env, msg);
        return NULL;
    }
    char *s = malloc(len + 1);
    if (!s) {
        napi_throw_error(env, "REDLOCK_ENOMEM", "out of memory");
        return NULL;
    }
    napi_get_value_string_utf8(env, v, s, len + 1, &len);
    s[len] = '\0';
    if (strlen(s) != len) {
        free(s);
        snprintf(msg, sizeof msg, "%s must not contain a NUL character", what);
        napi_throw_error(env, "REDLOCK_EINVAL", msg);
        return NULL;
    }
    return s;
}

static int get_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
    size_t argc = want;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) {
        throw_type(env, "too few arguments");
        return -1;
    }
    return 0;
}

static client_state *get_client(napi_env env, napi_value v) {
    client_state *st = NULL;
    if (napi_get_value_external(env, v, (void **)&st) != napi_ok || !st) {
        throw_type(env, "not a client handle");
        return NULL;
    }
    return st;
}

static lock_box *get_lock(napi_env env, napi_value v) {
    lock_box *b = NULL;
    if (napi_get_value_external(env, v, (void **)&b) != napi_ok || !b || !b->lock) {
        throw_type(env, "not a lock handle");
        return NULL;
    }
    return b;
}

/* Integer option: undefined/null leaves *out alone. */
static int opt_u32(napi_env env, napi_value obj, const char *name, uint32_t *out) {
    bool has = false;
    napi_value v;
    napi_valuetype t;
    if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has)
        return 0;
    napi_get_named_property(env, obj, name, &v);
    napi_typeof(env, v, &t);
    if (t == napi_undefined || t == napi_null)
        return 0;
    double d;
    if (t != napi_number || napi_get_value_double(env, v, &d) != napi_ok || d != d || d < 0 ||
        d > 4294967295.0 || d != (double)(uint32_t)d) {
        char msg[160];
        snprintf(msg, sizeof msg, "option %s must be an integer from 0 to 4294967295", name);
        napi_throw_range_error(env, "REDLOCK_EINVAL", msg);
        return -1;
    }
    *out = (uint32_t)d;
    return 0;
}

static int opt_double(napi_env env, napi_value obj, const char *name, double *out) {
    bool has = false;
    napi_value v;
    napi_valuetype t;
    if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has)
        return 0;
    napi_get_named_property(env, obj, name, &v);
    napi_typeof(env, v, &t);
    if (t == napi_undefined || t == napi_null)
        return 0;
    if (t != napi_number || napi_get_value_double(env, v, out) != napi_ok || *out != *out) {
        char msg[160];
        snprintf(msg, sizeof msg, "option %s must be a number", name);
        napi_throw_range_error(env, "REDLOCK_EINVAL", msg);
        return -1;
    }
    return 0;
}

/* String option: a malloc'd copy in *out (NULL when unset). */
static int opt_str(napi_env env, napi_value obj, const char *name, char **out) {
    bool has = false;
    napi_value v;
    napi_valuetype t;
    *out = NULL;
    if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has)
        return 0;
    napi_get_named_property(env, obj, name, &v);
    napi_typeof(env, v, &t);
    if (t == napi_undefined || t == napi_null)
        return 0;
    *out = get_str(env, v, name);
    return *out ? 0 : -1;
}

/* ---- the thread-safe function: C threads to the JS thread ---- */

static void item_free(item_t *it) {
    if (!it)
        return;
    free(it->msg);
    free(it->res);
    free(it->value);
    if (it->ev) {
        free(it->ev->resource);
        free(it->ev->rtts);
        free(it->ev);
    }
    free(it);
}

static void call_js(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)context;
    item_t *it = data;
    if (env && js_cb && it) {
        napi_value argv[8], global, report;
        napi_create_array_with_length(env, it->n, &report);
        for (size_t i = 0; i < it->n; i++) {
            napi_value row;
            napi_create_array_with_length(env, 4, &row);
            napi_set_element(env, row, 0, make_int(env, it->res[i].outcome));
            napi_set_element(env, row, 1, make_int(env, it->res[i].code));
            napi_set_element(env, row, 2, make_int(env, it->res[i].rtt_us));
            napi_set_element(env, row, 3, make_str(env, it->res[i].msg));
            napi_set_element(env, report, (uint32_t)i, row);
        }
        argv[0] = make_int(env, it->kind);
        napi_create_double(env, it->id, &argv[1]);
        argv[2] = make_int(env, it->rc);
        argv[3] = make_str(env, it->msg);
        argv[4] = make_int(env, it->validity_ms);
        argv[5] = report;
        napi_create_bigint_uint64(env, it->token, &argv[6]);
        if (it->ev) {
            /* [type, code, resource, attempt, automatic, nodesOk, quorum, nNodes, elapsedUs,
             *  validityMs, node, nodeOutcome, nodeRttUs, listenerState, heldUs, rtts|null];
             * the fencing token is the token, the message the message */
            const event_copy *e = it->ev;
            napi_value rtts;
            napi_create_array_with_length(env, 16, &argv[7]);
            int64_t nums[] = { e->type, e->code, 0, e->attempt, e->automatic, e->nodes_ok, e->quorum,
                               (int64_t)e->n_nodes, e->elapsed_us, e->validity_ms, (int64_t)e->node,
                               e->node_outcome, e->node_rtt_us, e->listener_state, e->held_us };
            for (uint32_t k = 0; k < 15; k++)
                napi_set_element(env, argv[7], k, k == 2 ? make_str(env, e->resource) : make_int(env, nums[k]));
            if (e->rtts) {
                napi_create_array_with_length(env, e->n_nodes, &rtts);
                for (size_t k = 0; k < e->n_nodes; k++)
                    napi_set_element(env, rtts, (uint32_t)k, make_int(env, e->rtts[k]));
            } else {
                napi_get_null(env, &rtts);
            }
            napi_set_element(env, argv[7], 15, rtts);
        } else if (it->has_leader) {
            /* [present, revision, value]; the term is the token */
            napi_value rev;
            napi_create_array_with_length(env, 3, &argv[7]);
            napi_get_boolean(env, it->present, &rev);
            napi_set_element(env, argv[7], 0, rev);
            napi_create_double(env, (double)it->revision, &rev);
            napi_set_element(env, argv[7], 1, rev);
            napi_set_element(env, argv[7], 2, make_str(env, it->value));
        } else {
            argv[7] = make_undef(env);
        }
        napi_get_global(env, &global);
        napi_call_function(env, global, js_cb, 8, argv, NULL);
    }
    item_free(it);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    client_state *st = data;
    atomic_store(&st->tsfn_gone, 1);
    st_unref(st); /* the thread-safe function's own reference */
}

static void post(client_state *st, item_t *it) {
    if (atomic_load(&st->tsfn_gone) ||
        napi_call_threadsafe_function(st->tsfn, it, napi_tsfn_nonblocking) != napi_ok)
        item_free(it);
}

/* The per-node report of the lock's last round, copied (C threads). */
static void fill_report(item_t *it, const redlock_lock *lock) {
    size_t n = 0;
    while (n < REDLOCK_MAX_NODES && redlock_lock_node_result(lock, n, NULL, NULL, NULL, 0) >= 0)
        n++;
    it->res = n ? calloc(n, sizeof *it->res) : NULL;
    if (!it->res)
        return;
    it->n = n;
    for (size_t i = 0; i < n; i++) {
        node_res *r = &it->res[i];
        r->outcome = redlock_lock_node_result(lock, i, &r->code, &r->rtt_us, r->msg, sizeof r->msg);
    }
}

static item_t *item_new(int kind, double id, int rc, const char *msg) {
    item_t *it = calloc(1, sizeof *it);
    if (!it)
        return NULL;
    it->kind = kind;
    it->id = id;
    it->rc = rc;
    it->msg = strdup(msg ? msg : "");
    return it;
}

/* done of every asynchronous call on a lock (acquire thread). */
static void on_done(redlock_lock *lock, int rc, void *userdata) {
    op_ctx *ctx = userdata;
    item_t *it = item_new(ITEM_DONE, ctx->id, rc, rc ? redlock_lock_errmsg(lock) : "");
    if (it) {
        it->validity_ms = redlock_lock_validity_ms(lock);
        it->token = redlock_lock_fencing_token(lock);
        fill_report(it, lock);
        post(ctx->st, it);
    }
    free(ctx);
}

/* on_lost of auto-extension (auto-extend thread). */
static void on_lost(redlock_lock *lock, int code, const char *message, void *userdata) {
    op_ctx *ctx = userdata;
    item_t *it = item_new(ITEM_LOST, ctx->id, code, message);
    if (it) {
        it->validity_ms = redlock_lock_validity_ms(lock);
        fill_report(it, lock);
        post(ctx->st, it);
    }
}

static void free_ctx(void *p) { free(p); }

/* The client's metrics hook: while JS listens (clientEvents), each event is
 * copied and posted to the JS thread, never waited for. It is set in any
 * case for its userdata_free, which says when the C client is gone (no
 * callback can follow). */
static void on_event(const redlock_event *ev, void *userdata) {
    client_state *st = userdata;
    if (!atomic_load(&st->events_on) || atomic_load(&st->tsfn_gone))
        return;
    item_t *it = item_new(ITEM_EVENT, 0, ev->code, ev->message);
    event_copy *e = it ? calloc(1, sizeof *e) : NULL;
    if (!e) {
        item_free(it);
        return;
    }
    it->ev = e;
    e->type = ev->type;
    e->code = ev->code;
    e->automatic = ev->automatic;
    e->nodes_ok = ev->nodes_ok;
    e->quorum = ev->quorum;
    e->node_outcome = ev->node_outcome;
    e->listener_state = ev->listener_state;
    e->attempt = ev->attempt;
    e->n_nodes = ev->n_nodes;
    e->node = ev->node;
    e->elapsed_us = ev->elapsed_us;
    e->validity_ms = ev->validity_ms;
    e->node_rtt_us = ev->node_rtt_us;
    e->held_us = ev->held_us;
    it->token = ev->fencing_token;
    e->resource = strdup(ev->resource ? ev->resource : "");
    if (ev->node_rtts_us && ev->n_nodes && (e->rtts = malloc(ev->n_nodes * sizeof *e->rtts)))
        memcpy(e->rtts, ev->node_rtts_us, ev->n_nodes * sizeof *e->rtts);
    post(st, it);
}

static void on_client_destroyed(void *userdata) {
    client_state *st = userdata;
    if (!atomic_exchange(&st->tsfn_gone, 1))
        napi_release_threadsafe_function(st->tsfn, napi_tsfn_release);
    st_unref(st); /* the C client's reference */
}

static void *free_client_thread(void *p) {
    redlock_client_free(p);
    return NULL;
}

/* redlock_client_free may wait (bounded) for owed replies: not on the JS thread. */
static void free_client_detached(redlock_client *c) {
    pthread_t t;
    pthread_attr_t a;
    if (!c)
        return;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, free_client_thread, c) != 0)
        redlock_client_free(c); /* no thread to be had: bounded anyway */
    pthread_attr_destroy(&a);
}

static void client_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    client_state *st = data;
    redlock_client *c = st->client;
    st->client = NULL;
    free_client_detached(c); /* the safety net when quit() was never called */
    st_unref(st);
}

/* clientOpen(urls[], opts, dispatch) -> [rc, client | message] */
static napi_value client_open(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    if (get_args(env, info, 3, argv))
        return NULL;
    uint32_t n = 0;
    bool is_arr = false;
    napi_is_array(env, argv[0], &is_arr);
    if (!is_arr)
        return throw_type(env, "urls must be an array");
    napi_get_array_length(env, argv[0], &n);
    if (n > REDLOCK_MAX_NODES)
        return pair(env, REDLOCK_EINVAL, make_str(env, "too many nodes: at most 64"));
    char **urls = calloc(n ? n : 1, sizeof *urls);
    char *strs[7] = {0};
    napi_value result = NULL;
    if (!urls)
        return pair(env, REDLOCK_ENOMEM, make_str(env, "out of memory"));
    for (uint32_t i = 0; i < n; i++) {
        napi_value u;
        napi_get_element(env, argv[0], i, &u);
        if (!(urls[i] = get_str(env, u, "a node URL")))
            goto out;
    }
    redlock_options o;
    redlock_options_init(&o);
    uint32_t insecure = 0;
    if (opt_double(env, argv[1], "driftFactor", &o.drift_factor) ||
        opt_u32(env, argv[1], "driftMinMs", &o.drift_min_ms) ||
        opt_u32(env, argv[1], "nodeTimeoutMs", &o.node_timeout_ms) ||
        opt_u32(env, argv[1], "connectTimeoutMs", &o.connect_timeout_ms) ||
        opt_u32(env, argv[1], "unreachableMs", &o.unreachable_ms) ||
        opt_u32(env, argv[1], "maxExtensions", &o.max_extensions) ||
        opt_u32(env, argv[1], "maxHoldMs", &o.max_hold_ms) ||
        opt_u32(env, argv[1], "flags", &o.flags) ||
        opt_u32(env, argv[1], "tlsInsecureSkipVerify", &insecure) ||
        opt_str(env, argv[1], "keyPrefix", &strs[0]) ||
        opt_str(env, argv[1], "tlsCaFile", &strs[1]) ||
        opt_str(env, argv[1], "tlsCaDir", &strs[2]) ||
        opt_str(env, argv[1], "tlsCertFile", &strs[3]) ||
        opt_str(env, argv[1], "tlsKeyFile", &strs[4]) ||
        opt_str(env, argv[1], "tlsServerName", &strs[5]))
        goto out;
    o.tls_insecure_skip_verify = insecure;
    o.key_prefix = strs[0];
    o.tls_ca_file = strs[1];
    o.tls_ca_dir = strs[2];
    o.tls_cert_file = strs[3];
    o.tls_key_file = strs[4];
    o.tls_server_name = strs[5];

    client_state *st = calloc(1, sizeof *st);
    if (!st) {
        result = pair(env, REDLOCK_ENOMEM, make_str(env, "out of memory"));
        goto out;
    }
    napi_value name;
    napi_create_string_utf8(env, "redlock", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, argv[2], NULL, name, 0, 1, st, tsfn_finalize, NULL, call_js,
                                        &st->tsfn) != napi_ok) {
        free(st);
        result = pair(env, REDLOCK_ENOMEM, make_str(env, "cannot create a thread-safe function"));
        goto out;
    }
    /* refs: the JS handle, the thread-safe function, the C client (once made) */
    atomic_init(&st->refs, 2);
    napi_unref_threadsafe_function(env, st->tsfn);
    o.on_event = on_event;
    o.on_event_userdata = st;
    o.on_event_userdata_free = on_client_destroyed;
    char err[MSG_MAX] = "";
    int rc = redlock_client_open(&st->client, (const char *const *)urls, n, &o, err, sizeof err);
    if (rc != 0) {
        /* no C client: its userdata_free is not called */
        atomic_store(&st->tsfn_gone, 1);
        napi_release_threadsafe_function(st->tsfn, napi_tsfn_abort);
        st_unref(st); /* the JS handle's, never made */
        result = pair(env, rc, make_str(env, err));
        goto out;
    }
    atomic_fetch_add(&st->refs, 1);
    napi_value ext;
    napi_create_external(env, st, client_finalize, NULL, &ext);
    result = pair(env, 0, ext);
out:
    for (uint32_t i = 0; i < n; i++)
        free(urls[i]);
    free(urls);
    for (int i = 0; i < 7; i++)
        free(strs[i]);
    return result;
}

/* clientClose(client): no waits on the JS thread; later calls are refused. */
static napi_value client_close(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (get_args(env, info, 1, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    if (st->client) {
        if (st->refed) {
            napi_unref_threadsafe_function(env, st->tsfn);
            st->refed = 0;
        }
        redlock_client *c = st->client;
        st->client = NULL;
        free_client_detached(c);
    }
    return make_undef(env);
}

/* clientRef(client, on): keeps the event loop alive while something waits. */
static napi_value client_ref(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    bool on = false;
    if (get_args(env, info, 2, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    napi_get_value_bool(env, argv[1], &on);
    if (st->client && !atomic_load(&st->tsfn_gone) && (int)on != st->refed) {
        if (on)
            napi_ref_threadsafe_function(env, st->tsfn);
        else
            napi_unref_threadsafe_function(env, st->tsfn);
        st->refed = on;
    }
    return make_undef(env);
}

/* clientEvents(client, on): the metrics hook's events to JS, or not. */
static napi_value client_events(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    bool on = false;
    if (get_args(env, info, 2, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    napi_get_value_bool(env, argv[1], &on);
    atomic_store(&st->events_on, on ? 1 : 0);
    return make_undef(env);
}

static napi_value client_node_urls(napi_env env, napi_callback_info info) {
    napi_value argv[1], a;
    if (get_args(env, info, 1, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    size_t n = st->client ? redlock_client_node_count(st->client) : 0;
    napi_create_array_with_length(env, n, &a);
    for (size_t i = 0; i < n; i++)
        napi_set_element(env, a, (uint32_t)i, make_str(env, redlock_client_node_url(st->client, i)));
    return a;
}

/* ---- locks ---- */

static void lock_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    lock_box *b = data;
    redlock_lock_free(b->lock); /* memory only; a held lock expires by its TTL */
    st_unref(b->st);
    free(b);
}

/* A new C lock handle as a JS external: [0, handle], or [REDLOCK_ENOMEM, message]. */
static napi_value lock_handle(napi_env env, client_state *st, redlock_lock *lock) {
    lock_box *b = calloc(1, sizeof *b);
    if (!b) {
        redlock_lock_free(lock);
        return pair(env, REDLOCK_ENOMEM, make_str(env, "out of memory"));
    }
    b->lock = lock;
    b->st = st;
    atomic_fetch_add(&st->refs, 1);
    napi_value ext;
    napi_create_external(env, b, lock_finalize, NULL, &ext);
    return pair(env, 0, ext);
}

/* lockOpen(client, resources[]) -> [rc, lock | message] */
static napi_value lock_open(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    if (get_args(env, info, 2, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    if (!st->client)
        return pair(env, REDLOCK_ESTATE, make_str(env, "the client is closed (quit() was called)"));
    uint32_t n = 0;
    napi_get_array_length(env, argv[1], &n);
    if (n == 0)
        return pair(env, REDLOCK_EINVAL, make_str(env, "no resource given"));
    if (n > REDLOCK_MAX_MULTI)
        return pair(env, REDLOCK_EINVAL, make_str(env, "too many resources: at most 64 in one lock"));
    char *res[REDLOCK_MAX_MULTI] = {0};
    napi_value result = NULL;
    for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        napi_get_element(env, argv[1], i, &v);
        if (!(res[i] = get_str(env, v, "a resource")))
            goto out;
    }
    char err[MSG_MAX] = "";
    redlock_lock *lock = NULL;
    int rc = n == 1 ? redlock_lock_open(&lock, st->client, res[0], err, sizeof err)
                    : redlock_lock_open_multi(&lock, st->client, (const char *const *)res, n, err, sizeof err);
    if (rc != 0) {
        result = pair(env, rc, make_str(env, err));
        goto out;
    }
    result = lock_handle(env, st, lock);
out:
    for (uint32_t i = 0; i < n; i++)
        free(res[i]);
    return result;
}

/* lockOpenSemaphore(client, resource, limit, permits) -> [rc, lock | message]:
 * a handle taking `permits` of the semaphore's `limit` at once. */
static napi_value lock_open_semaphore(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    uint32_t limit = 0, permits = 0;
    if (get_args(env, info, 4, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    if (napi_get_value_uint32(env, argv[2], &limit) != napi_ok ||
        napi_get_value_uint32(env, argv[3], &permits) != napi_ok)
        return throw_type(env, "limit and permits must be numbers");
    if (!st->client)
        return pair(env, REDLOCK_ESTATE, make_str(env, "the client is closed (quit() was called)"));
    char *res = get_str(env, argv[1], "a semaphore name");
    if (!res)
        return NULL;
    char err[MSG_MAX] = "";
    redlock_lock *lock = NULL;
    int rc = redlock_lock_open_semaphore(&lock, st->client, res, limit, permits, err, sizeof err);
    free(res);
    return rc ? pair(env, rc, make_str(env, err)) : lock_handle(env, st, lock);
}

/* lockOpenRw(client, resource, write) -> [rc, lock | message]: one side of
 * the read-write lock on resource. */
static napi_value lock_open_rw(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    bool write = false;
    if (get_args(env, info, 3, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    napi_get_value_bool(env, argv[2], &write);
    if (!st->client)
        return pair(env, REDLOCK_ESTATE, make_str(env, "the client is closed (quit() was called)"));
    char *res = get_str(env, argv[1], "a resource");
    if (!res)
        return NULL;
    char err[MSG_MAX] = "";
    redlock_lock *lock = NULL;
    int rc = write ? redlock_lock_open_write(&lock, st->client, res, err, sizeof err)
                   : redlock_lock_open_read(&lock, st->client, res, err, sizeof err);
    free(res);
    return rc ? pair(env, rc, make_str(env, err)) : lock_handle(env, st, lock);
}

/* lockSetOptions(lock, {retryCount, retryDelayMs, retryJitterMs, waitMs, driftFactor, wake, fair})
 * -> [rc, msg]. wake and fair (0 or 1) change only those bits of the lock's
 * flags, by C's rule (redlock_flags_set_wake: fair mode implies wake-up). */
static napi_value lock_set_options(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    if (get_args(env, info, 2, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    redlock_lock_options o;
    uint32_t wake = UINT32_MAX, fair = UINT32_MAX;   /* not given */
    redlock_lock_options_init(&o);
    if (redlock_lock_get_options(b->lock, &o) != 0)
        return pair(env, REDLOCK_EINVAL, make_str(env, "cannot read the lock's options"));
    if (opt_u32(env, argv[1], "retryCount", &o.retry_count) ||
        opt_u32(env, argv[1], "retryDelayMs", &o.retry_delay_ms) ||
        opt_u32(env, argv[1], "retryJitterMs", &o.retry_jitter_ms) ||
        opt_u32(env, argv[1], "waitMs", &o.wait_ms) ||
        opt_double(env, argv[1], "driftFactor", &o.drift_factor) ||
        opt_u32(env, argv[1], "wake", &wake) || opt_u32(env, argv[1], "fair", &fair))
        return NULL;
    if (fair != UINT32_MAX)
        o.flags = fair ? (o.flags | REDLOCK_OPT_FAIR) : (o.flags & ~REDLOCK_OPT_FAIR);
    if (wake != UINT32_MAX)
        o.flags = redlock_flags_set_wake(o.flags, wake != 0);
    int rc = redlock_lock_set_options(b->lock, &o);
    return pair(env, rc, make_str(env, rc ? redlock_lock_errmsg(b->lock) : ""));
}

static int get_i64(napi_env env, napi_value v, int64_t *out) {
    return napi_get_value_int64(env, v, out) == napi_ok ? 0 : -1;
}

/* The context of one asynchronous call of a lock (eb NULL) or an election. */
static op_ctx *op_new(client_state *st, election_box *eb, napi_env env, napi_value id) {
    op_ctx *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    c->st = st;
    c->eb = eb;
    napi_get_value_double(env, id, &c->id);
    return c;
}

static napi_value oom(napi_env env) {
    return pair(env, REDLOCK_ENOMEM, make_str(env, "out of memory"));
}

static napi_value bad_duration(napi_env env) {
    return pair(env, REDLOCK_EINVAL, make_str(env, "the duration must be 1 to 86400000 ms"));
}

/* The result of starting an asynchronous call on a `what` whose message is
 * m: 0 (done will come) or the code with the message (done will not come). */
static napi_value begun(napi_env env, op_ctx *c, int rc, const char *m, const char *what) {
    if (rc == 0)
        return pair(env, 0, NULL);
    free(c);
    char buf[64];
    if (rc == REDLOCK_ESTATE && (!m || !*m)) {
        snprintf(buf, sizeof buf, "another call on this %s is under way", what);
        m = buf;
    }
    if (rc == REDLOCK_ENOTSUP && (!m || !*m))
        m = "the client was inherited across fork(): make a new Redlock in this process";
    return pair(env, rc, make_str(env, m));
}

static napi_value started(napi_env env, lock_box *b, op_ctx *c, int rc) {
    return begun(env, c, rc, rc ? redlock_lock_errmsg(b->lock) : NULL, "lock");
}

/* lockAcquire(lock, id, ttl, wait) -> [rc, msg] */
static napi_value lock_acquire(napi_env env, napi_callback_info info) {
    napi_value argv[4];
    int64_t ttl, wait;
    if (get_args(env, info, 4, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    if (get_i64(env, argv[2], &ttl) || get_i64(env, argv[3], &wait))
        return throw_type(env, "ttl and wait must be numbers");
    if (ttl < 1 || ttl > REDLOCK_MAX_TTL_MS)
        return bad_duration(env);
    op_ctx *c = op_new(b->st, NULL, env, argv[1]);
    if (!c)
        return oom(env);
    return started(env, b, c, redlock_lock_acquire_async(b->lock, (uint32_t)ttl, wait, on_done, c));
}

static napi_value lock_release(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    if (get_args(env, info, 2, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    op_ctx *c = op_new(b->st, NULL, env, argv[1]);
    if (!c)
        return oom(env);
    return started(env, b, c, redlock_lock_release_async(b->lock, on_done, c));
}

static napi_value lock_extend(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    int64_t ttl;
    if (get_args(env, info, 3, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    if (get_i64(env, argv[2], &ttl))
        return throw_type(env, "ttl must be a number");
    if (ttl < 1 || ttl > REDLOCK_MAX_TTL_MS)
        return bad_duration(env);
    op_ctx *c = op_new(b->st, NULL, env, argv[1]);
    if (!c)
        return oom(env);
    return started(env, b, c, redlock_lock_extend_async(b->lock, (uint32_t)ttl, on_done, c));
}

/* lockDowngrade(lock, id) -> [rc, msg]: a held write lock becomes a read lock. */
static napi_value lock_downgrade(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    if (get_args(env, info, 2, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    op_ctx *c = op_new(b->st, NULL, env, argv[1]);
    if (!c)
        return oom(env);
    return started(env, b, c, redlock_lock_downgrade_async(b->lock, on_done, c));
}

static napi_value lock_cancel(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    bool reset = false;
    if (get_args(env, info, 2, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    napi_get_value_bool(env, argv[1], &reset);
    if (reset)
        redlock_lock_cancel_reset(b->lock);
    else
        redlock_lock_cancel(b->lock);
    return make_undef(env);
}

/* lockAutoExtend(lock, id, atRiskMs) -> [rc, msg]; lockAutoExtend(lock) stops it. */
static napi_value lock_auto_extend(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    size_t argc = 3;
    int64_t at_risk = 0;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 1)
        return throw_type(env, "too few arguments");
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    if (argc == 1) {
        int rc = redlock_lock_auto_extend_stop(b->lock);
        return pair(env, rc, NULL);
    }
    if (argc < 3 || get_i64(env, argv[2], &at_risk) || at_risk < 0 || at_risk > REDLOCK_MAX_TTL_MS)
        return throw_type(env, "atRiskMs must be a number of ms");
    op_ctx *c = op_new(b->st, NULL, env, argv[1]);
    if (!c)
        return oom(env);
    int rc = redlock_lock_auto_extend(b->lock, 0, (uint32_t)at_risk, on_lost, c, free_ctx);
    if (rc != 0) {
        free(c);
        return pair(env, rc, make_str(env, redlock_lock_errmsg(b->lock)));
    }
    return pair(env, 0, NULL);
}

static napi_value lock_validity(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (get_args(env, info, 1, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    return b ? make_int(env, redlock_lock_validity_ms(b->lock)) : NULL;
}

static napi_value lock_is_held(napi_env env, napi_callback_info info) {
    napi_value argv[1], r;
    if (get_args(env, info, 1, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    if (!b)
        return NULL;
    napi_get_boolean(env, redlock_lock_is_held(b->lock) == 1, &r);
    return r;
}

static napi_value lock_resource(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (get_args(env, info, 1, argv))
        return NULL;
    lock_box *b = get_lock(env, argv[0]);
    return b ? make_str(env, redlock_lock_resource(b->lock)) : NULL;
}

/* ---- elections ---- */

static election_box *get_election(napi_env env, napi_value v) {
    election_box *b = NULL;
    if (napi_get_value_external(env, v, (void **)&b) != napi_ok || !b || !b->e) {
        throw_type(env, "not an election handle");
        return NULL;
    }
    return b;
}

static void election_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    election_box *b = data;
    /* memory only: a leadership is left to expire, and no loss is told after it */
    redlock_election_free(b->e);
    st_unref(b->st);
    free(b);
}

/* A leadership lost (the auto-extend thread). It concerns the election's
 * leadership at the time: a new campaign's acquire ends the auto-extension
 * of the last one, after a running on_lost, so a loss is always posted
 * before the done of the campaign after it. */
static void on_election_lost(redlock_lock *lock, int code, const char *message, void *userdata) {
    election_box *b = userdata;
    item_t *it = item_new(ITEM_LOST, b->lost_id, code, message);
    if (it) {
        it->validity_ms = redlock_lock_validity_ms(lock);
        fill_report(it, lock);
        post(b->st, it);
    }
}

/* done of a campaign, a resign or a proclaim (acquire thread): the term as the token. */
static void on_elected(redlock_election *e, int rc, void *userdata) {
    op_ctx *ctx = userdata;
    item_t *it = item_new(ITEM_DONE, ctx->id, rc, rc ? redlock_election_errmsg(e) : "");
    if (it) {
        const redlock_lock *l = redlock_election_lock(e);
        it->validity_ms = redlock_lock_validity_ms(l);
        it->token = redlock_election_term(e);
        fill_report(it, l);
        post(ctx->st, it);
    }
    free(ctx);
}

/* done of an observe (acquire thread): the state in the box, written before. */
static void on_observed(redlock_election *e, int rc, void *userdata) {
    op_ctx *ctx = userdata;
    item_t *it = item_new(ITEM_DONE, ctx->id, rc, rc ? redlock_election_errmsg(e) : "");
    if (it) {
        const redlock_leader *l = &ctx->eb->last;
        it->has_leader = 1;
        it->present = l->present;
        it->token = l->term;
        it->revision = l->revision;
        it->value = strdup(l->present ? l->value : "");
        post(ctx->st, it);
    }
    free(ctx);
}

/* electionOpen(client, name, lostId) -> [rc, election | message] */
static napi_value election_open(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    if (get_args(env, info, 3, argv))
        return NULL;
    client_state *st = get_client(env, argv[0]);
    if (!st)
        return NULL;
    if (!st->client)
        return pair(env, REDLOCK_ESTATE, make_str(env, "the client is closed (quit() was called)"));
    char *name = get_str(env, argv[1], "an election name");
    if (!name)
        return NULL;
    char err[MSG_MAX] = "";
    redlock_election *e = NULL;
    int rc = redlock_election_open(&e, st->client, name, err, sizeof err);
    free(name);
    if (rc)
        return pair(env, rc, make_str(env, err));
    election_box *b = calloc(1, sizeof *b);
    if (!b) {
        redlock_election_free(e);
        return oom(env);
    }
    b->e = e;
    b->st = st;
    b->last.version = REDLOCK_LEADER_VERSION;
    napi_get_value_double(env, argv[2], &b->lost_id);
    redlock_election_on_lost(e, on_election_lost, b);
    atomic_fetch_add(&st->refs, 1);
    napi_value ext;
    napi_create_external(env, b, election_finalize, NULL, &ext);
    return pair(env, 0, ext);
}

static napi_value e_started(napi_env env, election_box *b, op_ctx *c, int rc) {
    return begun(env, c, rc, rc ? redlock_election_errmsg(b->e) : NULL, "election");
}

/* electionCampaign(e, id, value, ttl, wait) and electionProclaim(e, id,
 * value) -> [rc, msg]. C copies the value. */
static napi_value election_with_value(napi_env env, napi_callback_info info, int campaign) {
    napi_value argv[5];
    int64_t ttl = 0, wait = 0;
    if (get_args(env, info, campaign ? 5 : 3, argv))
        return NULL;
    election_box *b = get_election(env, argv[0]);
    if (!b)
        return NULL;
    if (campaign && (get_i64(env, argv[3], &ttl) || get_i64(env, argv[4], &wait)))
        return throw_type(env, "ttl and wait must be numbers");
    if (campaign && (ttl < 1 || ttl > REDLOCK_MAX_TTL_MS))
        return bad_duration(env);
    char *value = get_str(env, argv[2], "the value");
    if (!value)
        return NULL;
    op_ctx *c = op_new(b->st, b, env, argv[1]);
    if (!c) {
        free(value);
        return oom(env);
    }
    int rc = campaign ? redlock_election_campaign_async(b->e, value, (uint32_t)ttl, wait, on_elected, c)
                      : redlock_election_proclaim_async(b->e, value, on_elected, c);
    free(value);
    return e_started(env, b, c, rc);
}

static napi_value election_campaign(napi_env env, napi_callback_info info) {
    return election_with_value(env, info, 1);
}

static napi_value election_proclaim(napi_env env, napi_callback_info info) {
    return election_with_value(env, info, 0);
}

/* electionResign(e, id) -> [rc, msg] */
static napi_value election_resign(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    if (get_args(env, info, 2, argv))
        return NULL;
    election_box *b = get_election(env, argv[0]);
    if (!b)
        return NULL;
    op_ctx *c = op_new(b->st, b, env, argv[1]);
    if (!c)
        return oom(env);
    return e_started(env, b, c, redlock_election_resign_async(b->e, on_elected, c));
}

/* electionObserve(e, id, wait) -> [rc, msg]: the first state later than the
 * handle's last (zeroed when opened), into it. */
static napi_value election_observe(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    int64_t wait;
    if (get_args(env, info, 3, argv))
        return NULL;
    election_box *b = get_election(env, argv[0]);
    if (!b)
        return NULL;
    if (get_i64(env, argv[2], &wait))
        return throw_type(env, "wait must be a number");
    op_ctx *c = op_new(b->st, b, env, argv[1]);
    if (!c)
        return oom(env);
    return e_started(env, b, c, redlock_election_observe_async(b->e, &b->last, wait, on_observed, c));
}

static napi_value election_cancel(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    bool reset = false;
    if (get_args(env, info, 2, argv))
        return NULL;
    election_box *b = get_election(env, argv[0]);
    if (!b)
        return NULL;
    napi_get_value_bool(env, argv[1], &reset);
    if (reset)
        redlock_election_cancel_reset(b->e);
    else
        redlock_election_cancel(b->e);
    return make_undef(env);
}

/* electionState(e) -> [isLeader, term, validityMs] */
static napi_value election_state(napi_env env, napi_callback_info info) {
    napi_value argv[1], a, v;
    if (get_args(env, info, 1, argv))
        return NULL;
    election_box *b = get_election(env, argv[0]);
    if (!b)
        return NULL;
    napi_create_array_with_length(env, 3, &a);
    napi_get_boolean(env, redlock_election_is_leader(b->e) == 1, &v);
    napi_set_element(env, a, 0, v);
    napi_create_bigint_uint64(env, redlock_election_term(b->e), &v);
    napi_set_element(env, a, 1, v);
    napi_set_element(env, a, 2, make_int(env, redlock_lock_validity_ms(redlock_election_lock(b->e))));
    return a;
}

static napi_value str_error(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    int32_t code = 0;
    if (get_args(env, info, 1, argv))
        return NULL;
    napi_get_value_int32(env, argv[0], &code);
    napi_value a;
    napi_create_array_with_length(env, 2, &a);
    napi_set_element(env, a, 0, make_str(env, redlock_error_name(code)));
    napi_set_element(env, a, 1, make_str(env, redlock_strerror(code)));
    return a;
}

/* The store's side of fencing (c/src/fence.c): [script, sha1, the resource's
 * fence key, the default retention in ms]; a RangeError for a resource that
 * cannot name one. */
static napi_value fence_info(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (get_args(env, info, 1, argv))
        return NULL;
    char res[REDLOCK_MAX_RESOURCE_LEN + 2], key[REDLOCK_MAX_RESOURCE_LEN + 16];
    size_t len = 0;
    if (napi_get_value_string_utf8(env, argv[0], res, sizeof res, &len) != napi_ok)
        return throw_type(env, "resource must be a string");
    if (len != strlen(res) || redlock_fence_key(key, sizeof key, res) < 0) {
        napi_throw_range_error(env, "REDLOCK_EINVAL", "the resource cannot name a fence: empty, longer than "
                               "REDLOCK_MAX_RESOURCE_LEN bytes, a NUL, or a '}' without a hash tag");
        return NULL;
    }
    napi_value a;
    napi_create_array_with_length(env, 4, &a);
    napi_set_element(env, a, 0, make_str(env, redlock_fence_script()));
    napi_set_element(env, a, 1, make_str(env, redlock_fence_script_sha1()));
    napi_set_element(env, a, 2, make_str(env, key));
    napi_set_element(env, a, 3, make_int(env, REDLOCK_FENCE_RETENTION_MS));
    return a;
}

/* fenceRefusal(message) -> [token, fence] (BigInts) when the store's error
 * message is the fence script's refusal, else null: the C library's parser
 * (redlock_fence_refusal), so every binding reads it alike. */
static napi_value fence_refusal(napi_env env, napi_callback_info info) {
    napi_value argv[1], a, v;
    size_t len = 0;
    uint64_t token = 0, fence = 0;
    if (get_args(env, info, 1, argv))
        return NULL;
    if (napi_get_value_string_utf8(env, argv[0], NULL, 0, &len) != napi_ok)
        return throw_type(env, "the message must be a string");
    char buf[256], *msg = len < sizeof buf ? buf : malloc(len + 1);
    if (!msg)
        return throw_type(env, "out of memory");
    napi_get_value_string_utf8(env, argv[0], msg, len + 1, &len);
    int is = redlock_fence_refusal(msg, len, &token, &fence);
    if (msg != buf)
        free(msg);
    if (is != 1) {
        napi_get_null(env, &a);
        return a;
    }
    napi_create_array_with_length(env, 2, &a);
    napi_create_bigint_uint64(env, token, &v);
    napi_set_element(env, a, 0, v);
    napi_create_bigint_uint64(env, fence, &v);
    napi_set_element(env, a, 1, v);
    return a;
}

/* A JS array of column names as n malloc'd C strings in *out (free with
 * free_names); a NUL in one refused here, the rest by redlock_fence_sql. */
static void free_names(char **names, uint32_t n) {
    for (uint32_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

static int get_names(napi_env env, napi_value v, const char *what, char ***out, uint32_t *n) {
    bool is = false;
    char msg[128];
    *out = NULL;
    *n = 0;
    if (napi_is_array(env, v, &is) != napi_ok || !is) {
        snprintf(msg, sizeof msg, "%s columns must be an array of strings", what);
        throw_type(env, msg);
        return -1;
    }
    uint32_t len = 0;
    napi_get_array_length(env, v, &len);
    if (len > REDLOCK_FENCE_SQL_MAX_COLUMNS) {
        snprintf(msg, sizeof msg, "%u %s columns: more than REDLOCK_FENCE_SQL_MAX_COLUMNS (%d)", len, what,
                 REDLOCK_FENCE_SQL_MAX_COLUMNS);
        napi_throw_range_error(env, "REDLOCK_EINVAL", msg);
        return -1;
    }
    char **names = calloc(len ? len : 1, sizeof *names);
    if (!names) {
        napi_throw_error(env, "REDLOCK_ENOMEM", "out of memory");
        return -1;
    }
    snprintf(msg, sizeof msg, "%s column", what);
    for (uint32_t i = 0; i < len; i++) {
        napi_value e;
        napi_get_element(env, v, i, &e);
        if (!(names[i] = get_str(env, e, msg))) {
            free_names(names, i);
            return -1;
        }
    }
    *out = names;
    *n = len;
    return 0;
}

/* fenceSql(statement, placeholder, table, keyColumns, valueColumns,
 * fenceColumn, token) -> the statement redlock_fence_sql builds (c/src/
 * fence_sql.c): statement and placeholder are the C enums' values,
 * fenceColumn null or undefined for "fence", token a BigInt. A RangeError
 * with code REDLOCK_EINVAL and C's reason for what C refuses. */
static napi_value fence_sql(napi_env env, napi_callback_info info) {
    napi_value argv[7], r = NULL;
    int32_t statement = 0, placeholder = 0;
    napi_valuetype t;
    char *table = NULL, *fence = NULL, **keys = NULL, **vals = NULL, *sql = NULL, err[256] = "";
    uint32_t nk = 0, nv = 0;
    if (get_args(env, info, 7, argv))
        return NULL;
    if (napi_get_value_int32(env, argv[0], &statement) != napi_ok)
        return throw_type(env, "statement must be a number");
    if (napi_get_value_int32(env, argv[1], &placeholder) != napi_ok)
        return throw_type(env, "placeholder must be a number");
    uint64_t token = 0;
    bool lossless = false;
    if (napi_get_value_bigint_uint64(env, argv[6], &token, &lossless) != napi_ok)
        return throw_type(env, "token must be a bigint");
    if (!lossless) {
        napi_throw_range_error(env, "REDLOCK_EINVAL", "token must be from 1 to 2^63-1 (a BIGINT fence column)");
        return NULL;
    }
    if (!(table = get_str(env, argv[2], "table")))
        return NULL;
    napi_typeof(env, argv[5], &t);
    if (t != napi_undefined && t != napi_null && !(fence = get_str(env, argv[5], "fence column")))
        goto out;
    if (get_names(env, argv[3], "key", &keys, &nk) || get_names(env, argv[4], "value", &vals, &nv))
        goto out;
    int n = redlock_fence_sql(NULL, 0, statement, placeholder, table, (const char *const *)keys, nk,
                              (const char *const *)vals, nv, fence, token, err, sizeof err);
    if (n >= 0 && !(sql = malloc((size_t)n + 1))) {
        napi_throw_error(env, "REDLOCK_ENOMEM", "out of memory");
        goto out;
    }
    if (n >= 0)
        n = redlock_fence_sql(sql, (size_t)n + 1, statement, placeholder, table, (const char *const *)keys, nk,
                              (const char *const *)vals, nv, fence, token, err, sizeof err);
    if (n < 0)
        napi_throw_range_error(env, redlock_error_name(n), err[0] ? err : redlock_strerror(n));
    else
        napi_create_string_utf8(env, sql, (size_t)n, &r);
    free(sql);
out:
    free(table);
    free(fence);
    free_names(keys, nk);
    free_names(vals, nv);
    return r;
}

static napi_value version(napi_env env, napi_callback_info info) {
    (void)info;
    return make_str(env, redlock_version());
}

#define FN(name, fn) { name, NULL, fn, NULL, NULL, NULL, napi_enumerable, NULL }

static napi_value init(napi_env env, napi_value exports) {
    napi_property_descriptor d[] = {
        FN("clientOpen", client_open),     FN("clientClose", client_close),
        FN("clientRef", client_ref),       FN("clientNodeUrls", client_node_urls),
        FN("lockOpen", lock_open),         FN("lockSetOptions", lock_set_options),
        FN("lockAcquire", lock_acquire),   FN("lockRelease", lock_release),
        FN("lockExtend", lock_extend),     FN("lockCancel", lock_cancel),
        FN("lockAutoExtend", lock_auto_extend), FN("lockValidity", lock_validity),
        FN("lockIsHeld", lock_is_held),    FN("lockResource", lock_resource),
        FN("strerror", str_error),         FN("version", version),
        FN("fenceInfo", fence_info),       FN("fenceRefusal", fence_refusal),
        FN("fenceSql", fence_sql),
        FN("clientEvents", client_events),
        FN("lockOpenSemaphore", lock_open_semaphore), FN("lockOpenRw", lock_open_rw),
        FN("lockDowngrade", lock_downgrade),
        FN("electionOpen", election_open), FN("electionCampaign", election_campaign),
        FN("electionResign", election_resign), FN("electionProclaim", election_proclaim), FN("electionObserve", election_observe),
        FN("electionCancel", election_cancel), FN("electionState", election_state),
    };
    napi_define_properties(env, exports, sizeof d / sizeof d[0], d);
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
