/* redlock.c: the public API: clients, lock handles, and the Redlock
 * decisions (quorum, validity, retries) on top of engine.c's rounds. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

/* The size of each version of redlock_options: a caller's struct is read
 * and written only that far. Version 1 ended with flags. */
static size_t options_size(unsigned int version)
{
    switch (version) {
    case 1: return offsetof(redlock_options, tls_ca_file);
    case 2: return offsetof(redlock_options, on_event);
    case 3: return sizeof(redlock_options);
    default: return 0;
    }
}

int redlock_options_init_version(redlock_options *opts, unsigned int version)
{
    static const redlock_options defaults = REDLOCK_OPTIONS_INIT;
    size_t size = options_size(version);
    if (!opts || !size)
        return REDLOCK_EINVAL;
    memcpy(opts, &defaults, size);
    opts->version = version;
    return 0;
}

/* Programs built against the version 1 header call this (the header now
 * makes the name a macro): their struct has only the version 1 fields. */
void (redlock_options_init)(redlock_options *opts)
{
    redlock_options_init_version(opts, 1);
}

static int any_tls_option(const redlock_options *o)
{
    return o->tls_ca_file || o->tls_ca_dir || o->tls_cert_file || o->tls_key_file || o->tls_server_name ||
           o->tls_insecure_skip_verify;
}

int rl_check_options(const redlock_options *o, char *err, size_t errsize)
{
    if (!(o->drift_factor >= 0.0 && o->drift_factor < 0.5)) {
        rl_fmt(err, errsize, "drift_factor must be in [0, 0.5)");
        return REDLOCK_EINVAL;
    }
    if (o->node_timeout_ms == 0 || o->node_timeout_ms > 600000) {
        rl_fmt(err, errsize, "node_timeout_ms must be in 1..600000");
        return REDLOCK_EINVAL;
    }
    if (o->connect_timeout_ms > 600000) {
        rl_fmt(err, errsize, "connect_timeout_ms must be at most 600000");
        return REDLOCK_EINVAL;
    }
    if (o->retry_delay_ms > REDLOCK_MAX_TTL_MS || o->retry_jitter_ms > REDLOCK_MAX_TTL_MS ||
        o->wait_ms > (uint32_t)REDLOCK_MAX_WAIT_MS) {
        rl_fmt(err, errsize, "retry_delay_ms, retry_jitter_ms or wait_ms is absurdly large");
        return REDLOCK_EINVAL;
    }
    if (o->drift_min_ms > 60000) {
        rl_fmt(err, errsize, "drift_min_ms must be at most 60000");
        return REDLOCK_EINVAL;
    }
    if (o->key_prefix && strlen(o->key_prefix) > REDLOCK_MAX_PREFIX_LEN) {
        rl_fmt(err, errsize, "key_prefix longer than %d bytes", REDLOCK_MAX_PREFIX_LEN);
        return REDLOCK_EINVAL;
    }
    const uint32_t known = REDLOCK_OPT_FUNCTIONS | REDLOCK_OPT_FENCING;
    if (o->flags & ~known) {
        rl_fmt(err, errsize, "flags has unknown bits 0x%x (the flags are REDLOCK_OPT_FUNCTIONS and REDLOCK_OPT_FENCING)",
               o->flags & ~known);
        return REDLOCK_EINVAL;
    }
    if (o->tls_insecure_skip_verify > 1) {
        rl_fmt(err, errsize, "tls_insecure_skip_verify must be 0 or 1");
        return REDLOCK_EINVAL;
    }
    if (!o->tls_cert_file != !o->tls_key_file) {
        rl_fmt(err, errsize, "tls_cert_file and tls_key_file go together: give both or neither");
        return REDLOCK_EINVAL;
    }
    if (o->tls_server_name && (!*o->tls_server_name || strlen(o->tls_server_name) > 253)) {
        rl_fmt(err, errsize, "tls_server_name must be 1 to 253 bytes");
        return REDLOCK_EINVAL;
    }
    return 0;
}

static void client_destroy(redlock_client *c)
{
    if (!c)
        return;
    rl_watch_destroy(&c->watch);
    if (c->opts.on_event_userdata_free && c->created)
        c->opts.on_event_userdata_free(c->opts.on_event_userdata);
    if (c->io)
        rl_io_destroy(c);
    if (c->nodes) {
        for (size_t i = 0; i < c->n; i++)
            rl_endpoint_clear(&c->nodes[i].ep);
        free(c->nodes);
    }
    if (c->urls) {
        for (size_t i = 0; i < c->n; i++)
            free(c->urls[i]);
        free(c->urls);
    }
    rl_tls_client_free(c);
    free(c->prefix);
    free(c);
}

int redlock_client_open(redlock_client **out, const char *const *node_urls, size_t n_nodes,
                        const redlock_options *opts, char *errbuf, size_t errbuf_size)
{
    redlock_options full;
    redlock_client *c;
    int rc;

    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!out) {
        rl_fmt(errbuf, errbuf_size, "out is NULL");
        return REDLOCK_EINVAL;
    }
    *out = NULL;
    if (!node_urls || n_nodes == 0) {
        rl_fmt(errbuf, errbuf_size, "no nodes given");
        return REDLOCK_EINVAL;
    }
    if (n_nodes > REDLOCK_MAX_NODES) {
        rl_fmt(errbuf, errbuf_size, "%zu nodes given, at most %d supported", n_nodes, REDLOCK_MAX_NODES);
        return REDLOCK_EINVAL;
    }
    redlock_options_init_version(&full, REDLOCK_OPTIONS_VERSION);
    if (opts) {
        /* Read the caller's struct only as far as its version goes; the
         * fields it does not have keep their defaults. */
        size_t size = options_size(opts->version);
        if (!size) {
            rl_fmt(errbuf, errbuf_size, "options version %u unknown: initialise with redlock_options_init()",
                   opts->version);
            return REDLOCK_EINVAL;
        }
        memcpy(&full, opts, size);
    }
    opts = &full;
    if ((rc = rl_check_options(opts, errbuf, errbuf_size)) != 0)
        return rc;

    c = calloc(1, sizeof *c);
    if (!c || !(c->nodes = calloc(n_nodes, sizeof *c->nodes)) || !(c->urls = calloc(n_nodes, sizeof *c->urls))) {
        if (c)
            free(c->nodes);
        free(c);
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    rl_watch_init(&c->watch);
    if ((rc = rl_io_init(c)) != 0) {
        rl_fmt(errbuf, errbuf_size, "cannot set up the client's I/O: %s", redlock_strerror(rc));
        goto fail;
    }
    c->opts = *opts;
    c->opts.version = REDLOCK_OPTIONS_VERSION;
    /* Caller's memory is not kept: the TLS files are read below, the name copied. */
    c->opts.tls_ca_file = c->opts.tls_ca_dir = c->opts.tls_cert_file = c->opts.tls_key_file = NULL;
    c->opts.tls_server_name = NULL;
    for (size_t i = 0; i < n_nodes; i++) {
        char why[256], shown[300];
        if (!node_urls[i]) {
            rl_fmt(errbuf, errbuf_size, "node %zu: URL is NULL", i);
            rc = REDLOCK_EINVAL;
            goto fail;
        }
        c->n = i + 1;
        rc = rl_endpoint_parse(&c->nodes[i].ep, node_urls[i], why, sizeof why);
        rl_mask_url(shown, sizeof shown, node_urls[i]);
        if (rc) {
            rl_fmt(errbuf, errbuf_size, "node %zu '%s': %s", i, shown, why);
            goto fail;
        }
        if (!(c->urls[i] = strdup(shown))) {
            rl_fmt(errbuf, errbuf_size, "out of memory");
            rc = REDLOCK_ENOMEM;
            goto fail;
        }
        for (size_t j = 0; j < i; j++) {
            if (rl_endpoint_same_server(&c->nodes[j].ep, &c->nodes[i].ep)) {
                rl_fmt(errbuf, errbuf_size,
                       "node %zu (%s) and node %zu (%s) are the same server; it would be counted twice in the quorum",
                       j, c->nodes[j].ep.display, i, c->nodes[i].ep.display);
                rc = REDLOCK_EINVAL;
                goto fail;
            }
        }
    }
    if (any_tls_option(opts)) {
        /* TLS settings next to a plain TCP URL are most likely a typo in the
         * scheme: refuse rather than send credentials and locks in the clear. */
        for (size_t i = 0; i < c->n; i++) {
            if (!c->nodes[i].ep.tls && !c->nodes[i].ep.path) {
                rl_fmt(errbuf, errbuf_size, "node %zu (%s) is plain TCP but tls_* options are set: use rediss://",
                       i, c->nodes[i].ep.display);
                rc = REDLOCK_EINVAL;
                goto fail;
            }
        }
    }
    if ((rc = rl_tls_client_init(c, opts, errbuf, errbuf_size)) != 0)
        goto fail;
    c->prefix = strdup(opts->key_prefix ? opts->key_prefix : "");
    if (!c->prefix) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        rc = REDLOCK_ENOMEM;
        goto fail;
    }
    c->prefix_len = strlen(c->prefix);
    c->opts.key_prefix = c->prefix;
    c->quorum = (int)(n_nodes / 2 + 1);
    atomic_init(&c->refs, 1);
    c->created = 1;   /* from here on, destroying the client frees the hook's userdata */
    rl_scripts_init();
    *out = c;
    return 0;
fail:
    client_destroy(c);
    return rc;
}

int redlock_client_new(redlock_client **out, const char *const *node_urls, size_t n_nodes,
                       const redlock_options *opts)
{
    return redlock_client_open(out, node_urls, n_nodes, opts, NULL, 0);
}

void redlock_client_free(redlock_client *client)
{
    if (!client)
        return;
    if (atomic_load(&client->refs) == 1) {
        /* The last reference, so no other user: before closing, read what
         * pooled connections still owe (a release written but not yet
         * answered), at most one node timeout in all. A lock that outlives
         * its client frees it without this: lock_free does no I/O. */
        rl_io_settle(client, rl_now_us() + (int64_t)client->opts.node_timeout_ms * 1000);
    }
    if (atomic_fetch_sub(&client->refs, 1) == 1)
        client_destroy(client);
}

size_t redlock_client_node_count(const redlock_client *client)
{
    return client ? client->n : 0;
}

const char *redlock_client_node_url(const redlock_client *client, size_t i)
{
    return client && i < client->n ? client->urls[i] : "";
}

/* ---- lock handles ---- */

static int set_err(redlock_lock *lock, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_err(redlock_lock *lock, int code, const char *fmt, ...)
{
    va_list ap;
    lock->errcode = code;
    va_start(ap, fmt);
    vsnprintf(lock->errmsg, sizeof lock->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

static int set_ok(redlock_lock *lock)
{
    lock->errcode = 0;
    lock->errmsg[0] = '\0';
    return 0;
}

int redlock_lock_new(redlock_lock **out, redlock_client *client, const char *resource)
{
    if (!out)
        return REDLOCK_EINVAL;
    *out = NULL;
    if (!client || !resource)
        return REDLOCK_EINVAL;
    size_t rlen = strlen(resource);
    if (rlen == 0 || rlen > REDLOCK_MAX_RESOURCE_LEN)
        return REDLOCK_EINVAL;
    /* With fencing, "<key>:fencing" is the counter: a lock on it would never
     * be granted. */
    if ((client->opts.flags & REDLOCK_OPT_FENCING) && rlen >= RL_FENCE_SUFFIX_LEN &&
        memcmp(resource + rlen - RL_FENCE_SUFFIX_LEN, RL_FENCE_SUFFIX, RL_FENCE_SUFFIX_LEN) == 0)
        return REDLOCK_EINVAL;
    redlock_lock *l = calloc(1, sizeof *l);
    if (!l)
        return REDLOCK_ENOMEM;
    l->resource = strdup(resource);
    l->key_len = client->prefix_len + rlen;
    l->fkey_len = l->key_len + RL_FENCE_SUFFIX_LEN;
    l->key = malloc(l->fkey_len + 1);
    l->report = calloc(client->n, sizeof *l->report);
    if (!l->resource || !l->key || !l->report) {
        free(l->resource);
        free(l->key);
        free(l->report);
        free(l);
        return REDLOCK_ENOMEM;
    }
    memcpy(l->key, client->prefix, client->prefix_len);
    memcpy(l->key + client->prefix_len, resource, rlen);
    memcpy(l->key + l->key_len, RL_FENCE_SUFFIX, RL_FENCE_SUFFIX_LEN + 1);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&l->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    l->pol.version = REDLOCK_LOCK_OPTIONS_VERSION;
    l->pol.retry_count = client->opts.retry_count;
    l->pol.retry_delay_ms = client->opts.retry_delay_ms;
    l->pol.retry_jitter_ms = client->opts.retry_jitter_ms;
    l->pol.wait_ms = client->opts.wait_ms;
    l->pol.drift_factor = client->opts.drift_factor;
    l->pol.drift_min_ms = client->opts.drift_min_ms;
    atomic_init(&l->state, LOCK_IDLE);
    atomic_init(&l->valid_until_us, 0);
    atomic_init(&l->token, 0);
    atomic_init(&l->ae_used, 0);
    atomic_init(&l->cancel, 0);
    atomic_init(&l->wake_fd, -1);
    atomic_fetch_add(&client->refs, 1);
    l->client = client;
    *out = l;
    return 0;
}

void redlock_lock_free(redlock_lock *lock)
{
    if (!lock)
        return;
    rl_watch_remove(lock);
    int fd = atomic_load(&lock->wake_fd);
    if (fd >= 0)
        close(fd);
    free(lock->report);
    pthread_mutex_destroy(&lock->mu);
    redlock_client_free(lock->client);
    free(lock->resource);
    free(lock->key);
    free(lock);
}

int64_t rl_drift_us(const redlock_lock *lock, uint32_t ttl_ms)
{
    return (int64_t)((double)ttl_ms * lock->pol.drift_factor * 1000.0) + (int64_t)lock->pol.drift_min_ms * 1000;
}

/* "" or the reason ttl_ms cannot be used, in msg; 0 or REDLOCK_EINVAL. */
static int ttl_problem(const redlock_lock *lock, uint32_t ttl_ms, char *msg, size_t size)
{
    if (ttl_ms == 0) {
        rl_fmt(msg, size, "ttl_ms must be greater than 0");
        return REDLOCK_EINVAL;
    }
    if (ttl_ms > REDLOCK_MAX_TTL_MS) {
        rl_fmt(msg, size, "ttl_ms %u is over the limit of %u (one day); use extend for longer holds", ttl_ms,
               REDLOCK_MAX_TTL_MS);
        return REDLOCK_EINVAL;
    }
    int64_t d = rl_drift_us(lock, ttl_ms);
    if (d >= (int64_t)ttl_ms * 1000) {
        rl_fmt(msg, size, "ttl_ms %u is too small: the clock-drift allowance (%lld ms) leaves no validity", ttl_ms,
               (long long)(d / 1000));
        return REDLOCK_EINVAL;
    }
    return 0;
}

static const char *outcome_word(rl_outcome o)
{
    switch (o) {
    case RL_YES: return "OK";
    case RL_NO: return "refused";
    case RL_ERR_SERVER: return "server error";
    case RL_ERR_AUTH: return "auth error";
    case RL_ERR_IO: return "I/O error";
    case RL_ERR_TIMEOUT: return "timeout";
    case RL_ERR_DOWN: return "down";
    case RL_ERR_TLS: return "TLS error";
    case RL_UNSENT: return "skipped";
    default: return "pending";
    }
}

/* Appends "; node i (url): what" for every node to buf. */
static void describe_round(char *buf, size_t size, const redlock_client *c, const rl_round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->out[i] == RL_YES)
            rl_append(buf, size, "; %s: OK in %.1f ms", c->nodes[i].ep.display, (double)r->rtt_us[i] / 1000.0);
        else
            rl_append(buf, size, "; %s: %s%s%s", c->nodes[i].ep.display, outcome_word(r->out[i]),
                      r->msg[i][0] ? ": " : "", r->msg[i]);
    }
}

/* A node's part of a round as the public report has it. */
static int node_outcome(const rl_round *r, size_t i, int *code)
{
    *code = 0;
    switch (r->out[i]) {
    case RL_YES: return REDLOCK_NODE_OK;
    case RL_NO: return REDLOCK_NODE_REFUSED;
    case RL_ERR_SERVER: *code = REDLOCK_ESERVER; return REDLOCK_NODE_ERROR;
    case RL_ERR_AUTH: *code = REDLOCK_EAUTH; return REDLOCK_NODE_ERROR;
    case RL_ERR_IO: *code = REDLOCK_EIO; return REDLOCK_NODE_ERROR;
    case RL_ERR_TLS: *code = REDLOCK_ETLS; return REDLOCK_NODE_ERROR;
    case RL_ERR_TIMEOUT: *code = REDLOCK_ETIMEDOUT; return REDLOCK_NODE_TIMEOUT;
    case RL_ERR_DOWN: *code = REDLOCK_EIO; return REDLOCK_NODE_DOWN;
    case RL_UNSENT: return r->sent[i] ? REDLOCK_NODE_NOT_WAITED : REDLOCK_NODE_NONE;
    default: return REDLOCK_NODE_NONE;
    }
}

/* The fields every event has. */
static void event_init(redlock_event *ev, const redlock_lock *lock, int type, int code, const char *msg,
                       int automatic, int64_t elapsed_us)
{
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    ev->code = code;
    ev->lock = lock;
    ev->resource = lock->resource;
    ev->message = msg ? msg : "";
    ev->automatic = automatic;
    ev->quorum = lock->client->quorum;
    ev->n_nodes = lock->client->n;
    ev->elapsed_us = elapsed_us;
}

/* Keeps the round as the lock's last (mutex held), and tells on_event about
 * each node that failed in it. */
static void record_round(redlock_lock *lock, const rl_round *r, int automatic)
{
    redlock_client *c = lock->client;
    for (size_t i = 0; i < r->n; i++) {
        rl_report *rep = &lock->report[i];
        rep->outcome = (unsigned char)node_outcome(r, i, &rep->code);
        rep->rtt_us = r->out[i] == RL_UNSENT || r->out[i] == RL_ERR_DOWN ? 0 : r->rtt_us[i];
        memcpy(rep->msg, r->msg[i], sizeof rep->msg);
    }
    if (!c->opts.on_event)
        return;
    for (size_t i = 0; i < r->n; i++) {
        const rl_report *rep = &lock->report[i];
        if (rep->code == 0)
            continue;
        redlock_event ev;
        event_init(&ev, lock, REDLOCK_EVENT_NODE_ERROR, rep->code, rep->msg, automatic, r->decided_us - r->start_us);
        ev.node = i;
        ev.node_outcome = rep->outcome;
        ev.node_rtt_us = rep->rtt_us;
        c->opts.on_event(&ev, c->opts.on_event_userdata);
    }
}

static void emit(redlock_lock *lock, int type, int code, const char *msg, const rl_round *r, int automatic,
                 uint32_t attempt, int64_t elapsed_us)
{
    redlock_client *c = lock->client;
    if (!c->opts.on_event)
        return;
    redlock_event ev;
    event_init(&ev, lock, type, code, msg, automatic, elapsed_us);
    ev.attempt = attempt;
    ev.nodes_ok = r ? rl_tally_of(r->out, r->n).yes : 0;
    if (type == REDLOCK_EVENT_ACQUIRED || type == REDLOCK_EVENT_EXTENDED)
        ev.validity_ms = (atomic_load(&lock->valid_until_us) - rl_now_us()) / 1000;
    if (type == REDLOCK_EVENT_ACQUIRED)
        ev.fencing_token = atomic_load(&lock->token);
    c->opts.on_event(&ev, c->opts.on_event_userdata);
}

static void init_round(rl_round *r, redlock_lock *lock, rl_cmd cmd, uint32_t ttl_ms)
{
    r->cmd = cmd;
    r->key = lock->key;
    r->key_len = lock->key_len;
    r->fkey = lock->key;
    r->fkey_len = lock->fkey_len;
    r->token = NULL;
    r->value = lock->value;
    r->ttl_ms = ttl_ms;
    r->start_us = rl_now_us();
    r->cap_us = 0;
    r->quorum = lock->client->quorum;
    r->no_wait = 0;
    r->n = lock->client->n;
    memset(r->skip, 0, r->n);
}

void rl_mark_lost(redlock_lock *lock, int code, const char *msg, int automatic)
{
    lock->lost_code = code;
    rl_fmt(lock->lost_msg, sizeof lock->lost_msg, "%s", msg);
    atomic_store(&lock->state, LOCK_LOST);
    atomic_store(&lock->token, 0);
    emit(lock, REDLOCK_EVENT_LOST, code, msg, NULL, automatic, 0, 0);
}

/* With fencing, after a granted SET round: the token is one more than the
 * highest counter the granting nodes hold, and it counts only once a
 * majority has it (docs/fencing.md). 0, or a failure code with the reason in
 * the lock's message. */
static int commit_token(redlock_lock *lock, const rl_round *set, int64_t valid_until, uint64_t *token)
{
    redlock_client *c = lock->client;
    uint64_t max = 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->out[i] == RL_YES && set->counter[i] > max)
            max = set->counter[i];
    if (max == UINT64_MAX)
        return set_err(lock, REDLOCK_ESERVER, "the fencing counter of '%s' is at its maximum", lock->resource);
    *token = max + 1;
    char digits[24];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)*token);

    rl_round r;
    init_round(&r, lock, RL_CMD_FENCE_COMMIT, 0);
    r.token = digits;
    r.cap_us = valid_until;
    for (size_t i = 0; i < set->n; i++)
        r.skip[i] = set->out[i] == RL_NO || set->out[i] == RL_ERR_DOWN;
    rl_round_run(c, &r);
    record_round(lock, &r, 0);
    int code = rl_decide_extend(r.out, r.n, c->quorum, r.decided_us, valid_until);
    if (code == 0)
        return 0;
    rl_tally t = rl_tally_of(r.out, r.n);
    if (code == REDLOCK_ELOST)
        code = REDLOCK_ENOQUORUM;  /* the key vanished from nodes in between: no acquisition */
    if (code == REDLOCK_EEXPIRED)
        set_err(lock, code, "token %s of '%s' recorded on a majority only after the validity ran out",
                digits, lock->resource);
    else
        set_err(lock, code, "acquired, but token %s was recorded on %d of %zu nodes, %d needed", digits, t.yes, r.n,
                c->quorum);
    describe_round(lock->errmsg, sizeof lock->errmsg, c, &r);
    return code;
}

/* One acquisition attempt. On failure every node that may hold our value
 * gets a release before returning. */
static int attempt(redlock_lock *lock, uint32_t ttl_ms, uint32_t number)
{
    redlock_client *c = lock->client;
    int fencing = (c->opts.flags & REDLOCK_OPT_FENCING) != 0;
    rl_round r;

    if (rl_random_hex(lock->value, RL_VALUE_BYTES) != 0)
        return set_err(lock, REDLOCK_EIO, "getrandom failed: %s", strerror(errno));
    init_round(&r, lock, fencing ? RL_CMD_SET_FENCED : RL_CMD_SET, ttl_ms);
    r.cap_us = r.start_us + (int64_t)ttl_ms * 1000;
    rl_round_run(c, &r);
    record_round(lock, &r, 0);
    int64_t now = rl_now_us();

    rl_tally t = rl_tally_of(r.out, r.n);
    int64_t valid_until = r.start_us + (int64_t)ttl_ms * 1000 - rl_drift_us(lock, ttl_ms);
    int code = rl_decide_acquire(r.out, r.n, c->quorum, valid_until, now);
    uint64_t token = 0;
    if (code == 0 && fencing)
        code = commit_token(lock, &r, valid_until, &token);
    if (code == 0) {
        atomic_store(&lock->token, token);
        atomic_store(&lock->valid_until_us, valid_until);
        atomic_store(&lock->state, LOCK_HELD);
        lock->acquired_us = r.start_us;
        lock->ttl_ms = ttl_ms;
        lock->n_ext = 0;
        set_ok(lock);
        emit(lock, REDLOCK_EVENT_ACQUIRED, 0, NULL, &r, 0, number, rl_now_us() - r.start_us);
        return 0;
    }

    if (lock->errcode != code || !lock->errmsg[0]) {
        int hard = t.auth + t.server + t.io + t.tls;
        if (code == REDLOCK_EEXPIRED)
            set_err(lock, code, "acquired on %d of %zu nodes, but %lld ms of the %u ms TTL had passed (drift allowance %lld ms)",
                    t.yes, r.n, (long long)((now - r.start_us) / 1000), ttl_ms,
                    (long long)(rl_drift_us(lock, ttl_ms) / 1000));
        else if (code == REDLOCK_ENOTACQUIRED)
            set_err(lock, code, "not acquired: %d of %zu nodes granted, %d needed", t.yes, r.n, c->quorum);
        else
            set_err(lock, code, "%s: %d of %zu nodes granted, %d needed, %d could not answer",
                    code == REDLOCK_ENOQUORUM ? "no quorum" : redlock_strerror(code), t.yes, r.n, c->quorum, hard);
        describe_round(lock->errmsg, sizeof lock->errmsg, c, &r);
    }

    /* Release wherever our SET may have landed: every node but those that
     * refused it (another owner's key is there) and those skipped while
     * down. An error is no proof: a pipelined SET runs after a failed AUTH
     * on a server without a password, or before a connection breaks. */
    rl_round rel;
    init_round(&rel, lock, RL_CMD_RELEASE, 0);
    rel.no_wait = 1;
    int any = 0;
    for (size_t i = 0; i < r.n; i++) {
        rl_outcome o = r.out[i];
        rel.skip[i] = o == RL_NO || o == RL_ERR_DOWN;
        any |= !rel.skip[i];
    }
    if (any)
        rl_round_run(c, &rel);
    atomic_store(&lock->state, LOCK_IDLE);
    emit(lock, REDLOCK_EVENT_ACQUIRE_FAILED, code, lock->errmsg, &r, 0, number, rl_now_us() - r.start_us);
    return code;
}

static int retryable(int code)
{
    return code == REDLOCK_ENOTACQUIRED || code == REDLOCK_ENOQUORUM || code == REDLOCK_EEXPIRED ||
           code == REDLOCK_EIO || code == REDLOCK_ESERVER;
}

/* Sleeps delay_us unless cancelled: 0 or REDLOCK_ECANCELED. */
static int nap(redlock_lock *lock, int64_t delay_us)
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
    int64_t end = rl_now_us() + delay_us;
    for (;;) {
        if (atomic_load(&lock->cancel))
            return REDLOCK_ECANCELED;
        int64_t left = end - rl_now_us();
        if (left <= 0)
            return 0;
        struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
        /* Without an eventfd (fd limit), poll the flag every 10 ms. */
        int ms = (int)((left + 999) / 1000);
        int n = fd >= 0 ? poll(&p, 1, ms) : poll(NULL, 0, ms < 10 ? ms : 10);
        if (n > 0) {
            uint64_t v;
            ssize_t rd = read(fd, &v, sizeof v);
            (void)rd;
        }
    }
}

static int acquire_locked(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms)
{
    int rc = ttl_problem(lock, ttl_ms, lock->errmsg, sizeof lock->errmsg);
    if (rc)
        return lock->errcode = rc;
    if (wait_ms < REDLOCK_WAIT_DEFAULT || wait_ms > (int64_t)REDLOCK_MAX_WAIT_MS)
        return set_err(lock, REDLOCK_EINVAL, "wait_ms %lld is out of range", (long long)wait_ms);
    if (redlock_lock_is_held(lock))
        return set_err(lock, REDLOCK_ESTATE, "lock '%s' is already held by this handle", lock->resource);

    const redlock_lock_options *o = &lock->pol;
    if (atomic_load(&lock->cancel))
        return set_err(lock, REDLOCK_ECANCELED, "acquisition of '%s' is cancelled (redlock_lock_cancel_reset clears it)",
                       lock->resource);
    int64_t start = rl_now_us(), deadline = 0;
    uint64_t max_attempts;
    if (wait_ms == REDLOCK_WAIT_NONE) {
        max_attempts = 1;
    } else if (wait_ms > 0) {
        max_attempts = UINT64_MAX;
        deadline = start + wait_ms * 1000;
    } else {
        max_attempts = (uint64_t)o->retry_count + 1;
        if (o->wait_ms)
            deadline = start + (int64_t)o->wait_ms * 1000;
    }

    for (uint64_t n = 1;; n++) {
        rc = attempt(lock, ttl_ms, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n);
        if (rc == 0 || !retryable(rc))
            return rc;
        if (n >= max_attempts) {
            if (n > 1)
                rl_append(lock->errmsg, sizeof lock->errmsg, " (after %llu attempts)", (unsigned long long)n);
            return rc;
        }
        int64_t now = rl_now_us();
        if (deadline && now >= deadline) {
            char last[RL_MSG_MAX];
            memcpy(last, lock->errmsg, sizeof last);
            return set_err(lock, REDLOCK_ETIMEDOUT, "gave up after %lld ms and %llu attempts; last attempt: %.1900s",
                           (long long)((now - start) / 1000), (unsigned long long)n, last);
        }
        int64_t delay = rl_policy_retry_delay_us(o);
        if (deadline && now + delay > deadline)
            delay = deadline - now;
        if (nap(lock, delay) != 0) {
            char last[RL_MSG_MAX];
            memcpy(last, lock->errmsg, sizeof last);
            return set_err(lock, REDLOCK_ECANCELED, "wait cancelled after %llu attempt%s; last attempt: %.1900s",
                           (unsigned long long)n, n == 1 ? "" : "s", last);
        }
    }
}

int redlock_lock_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms)
{
    if (!lock)
        return REDLOCK_EINVAL;
    /* A new acquisition: the auto-extension of the last one (lost or
     * expired) is over. Not under the mutex: the thread may be working on
     * this lock and need it. */
    if (!redlock_lock_is_held(lock))
        rl_watch_remove(lock);
    pthread_mutex_lock(&lock->mu);
    int rc = acquire_locked(lock, ttl_ms, wait_ms);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

void redlock_lock_cancel(redlock_lock *lock)
{
    if (!lock)
        return;
    atomic_store(&lock->cancel, 1);
    int fd = atomic_load(&lock->wake_fd);
    if (fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(fd, &one, sizeof one);
        (void)w;
    }
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

int redlock_acquire(redlock_client *client, const char *resource, uint32_t ttl_ms, redlock_lock **out)
{
    return acquire_new(client, resource, ttl_ms, REDLOCK_WAIT_DEFAULT, out);
}

int redlock_try_acquire(redlock_client *client, const char *resource, uint32_t ttl_ms, redlock_lock **out)
{
    return acquire_new(client, resource, ttl_ms, REDLOCK_WAIT_NONE, out);
}

/* An extension, by the owner or by the auto-extend thread (automatic), with
 * the lock's mutex held; the reason of a failure goes to m. */
int rl_extend_locked(redlock_lock *lock, uint32_t ttl_ms, int automatic, char *m, size_t msize)
{
    m[0] = '\0';
    int rc = ttl_problem(lock, ttl_ms, m, msize);
    if (rc)
        return rc;
    int state = atomic_load(&lock->state);
    if (state == LOCK_LOST) {
        rl_fmt(m, msize, "lock '%s' was already lost: %s", lock->resource, lock->lost_msg);
        return lock->lost_code == REDLOCK_ELOST ? REDLOCK_ELOST : REDLOCK_EEXPIRED;
    }
    if (state != LOCK_HELD) {
        rl_fmt(m, msize, "lock '%s' is not held", lock->resource);
        return REDLOCK_ESTATE;
    }

    redlock_client *c = lock->client;
    int64_t now = rl_now_us();
    int64_t valid_until = atomic_load(&lock->valid_until_us);
    if (valid_until <= now) {
        rl_fmt(m, msize, "lock '%s' expired %lld ms ago; an expired lock is never extended", lock->resource,
               (long long)((now - valid_until) / 1000));
        return REDLOCK_EEXPIRED;
    }
    if (c->opts.max_extensions && lock->n_ext >= c->opts.max_extensions) {
        rl_fmt(m, msize, "lock '%s' was extended %u times, the limit (max_extensions)", lock->resource, lock->n_ext);
        return REDLOCK_ELIMIT;
    }
    if (c->opts.max_hold_ms &&
        now + (int64_t)ttl_ms * 1000 - lock->acquired_us > (int64_t)c->opts.max_hold_ms * 1000) {
        rl_fmt(m, msize, "extending '%s' by %u ms would hold it past max_hold_ms (%u)", lock->resource, ttl_ms,
               c->opts.max_hold_ms);
        return REDLOCK_ELIMIT;
    }

    rl_round r;
    init_round(&r, lock, RL_CMD_EXTEND, ttl_ms);
    /* Replies after the current validity are useless: the lock may have
     * changed hands in between. */
    r.cap_us = valid_until;
    rl_round_run(c, &r);
    record_round(lock, &r, automatic);
    rl_tally t = rl_tally_of(r.out, r.n);
    int unknown = (int)r.n - t.yes - t.no;
    /* Within validity means when the quorum confirmed, not when the last
     * straggler was read. */
    int code = rl_decide_extend(r.out, r.n, c->quorum, r.decided_us, valid_until);
    if (code == 0) {
        atomic_store(&lock->valid_until_us, r.start_us + (int64_t)ttl_ms * 1000 - rl_drift_us(lock, ttl_ms));
        lock->n_ext++;
        emit(lock, REDLOCK_EVENT_EXTENDED, 0, NULL, &r, automatic, 0, r.decided_us - r.start_us);
        return 0;
    }
    if (code == REDLOCK_ELOST)
        rl_fmt(m, msize, "lock '%s' lost: still ours on %d of %zu nodes, %d needed", lock->resource, t.yes, r.n,
               c->quorum);
    else if (code == REDLOCK_EEXPIRED)
        rl_fmt(m, msize, "extension of '%s' confirmed only after its validity ran out", lock->resource);
    else
        rl_fmt(m, msize, "could not extend '%s': %d of %zu nodes confirmed, %d needed, %d could not answer",
               lock->resource, t.yes, r.n, c->quorum, unknown);
    describe_round(m, msize, c, &r);
    if (code == REDLOCK_ELOST)
        rl_mark_lost(lock, code, m, automatic);
    else
        emit(lock, REDLOCK_EVENT_EXTEND_FAILED, code, m, &r, automatic, 0, r.decided_us - r.start_us);
    return code;
}

int redlock_extend(redlock_lock *lock, uint32_t ttl_ms)
{
    if (!lock)
        return REDLOCK_EINVAL;
    pthread_mutex_lock(&lock->mu);
    int rc = rl_extend_locked(lock, ttl_ms, 0, lock->errmsg, sizeof lock->errmsg);
    lock->errcode = rc;
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

static int release_locked(redlock_lock *lock)
{
    if (atomic_load(&lock->state) == LOCK_IDLE)
        return set_err(lock, REDLOCK_ESTATE, "lock '%s' is not held", lock->resource);

    redlock_client *c = lock->client;
    rl_round r;
    init_round(&r, lock, RL_CMD_RELEASE, 0);
    rl_round_run(c, &r);
    record_round(lock, &r, 0);
    atomic_store(&lock->state, LOCK_IDLE);
    atomic_store(&lock->valid_until_us, 0);
    atomic_store(&lock->token, 0);
    rl_tally t = rl_tally_of(r.out, r.n);
    int unknown = (int)r.n - t.yes - t.no;
    int code = rl_decide_release(r.out, r.n, c->quorum);
    int64_t took = r.decided_us - r.start_us;
    if (code == 0) {
        set_ok(lock);
        emit(lock, REDLOCK_EVENT_RELEASED, 0, NULL, &r, 0, 0, took);
        return 0;
    }
    if (code == REDLOCK_ELOST) {
        set_err(lock, code,
                "lock '%s' was no longer ours on a majority when released (%d of %zu nodes, %d needed): "
                "it expired or was taken over, so the critical section may have overlapped another owner",
                lock->resource, t.yes, r.n, c->quorum);
    } else {
        set_err(lock, code, "release of '%s' not confirmed: %d of %zu nodes confirmed, %d needed, %d could not answer",
                lock->resource, t.yes, r.n, c->quorum, unknown);
    }
    describe_round(lock->errmsg, sizeof lock->errmsg, c, &r);
    emit(lock, code == REDLOCK_ELOST ? REDLOCK_EVENT_LOST : REDLOCK_EVENT_RELEASE_FAILED, code, lock->errmsg, &r, 0, 0,
         took);
    return lock->errcode;
}

int redlock_release(redlock_lock *lock)
{
    if (!lock)
        return REDLOCK_EINVAL;
    rl_watch_remove(lock);
    pthread_mutex_lock(&lock->mu);
    int rc = release_locked(lock);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

int64_t redlock_lock_validity_ms(const redlock_lock *lock)
{
    if (!lock || atomic_load(&lock->state) != LOCK_HELD)
        return 0;
    int64_t left = atomic_load(&lock->valid_until_us) - rl_now_us();
    /* Round toward minus infinity so that 0 never hides an expired lock. */
    return left >= 0 ? left / 1000 : -((-left + 999) / 1000);
}

int redlock_lock_is_held(const redlock_lock *lock)
{
    return lock && atomic_load(&lock->state) == LOCK_HELD && atomic_load(&lock->valid_until_us) > rl_now_us();
}

uint64_t redlock_lock_fencing_token(const redlock_lock *lock)
{
    return redlock_lock_is_held(lock) ? atomic_load(&lock->token) : 0;
}

int redlock_lock_get_options(const redlock_lock *lock, redlock_lock_options *out)
{
    if (!lock || !out || out->version != REDLOCK_LOCK_OPTIONS_VERSION)
        return REDLOCK_EINVAL;
    redlock_lock *l = (redlock_lock *)lock;  /* the mutex only */
    pthread_mutex_lock(&l->mu);
    *out = l->pol;
    pthread_mutex_unlock(&l->mu);
    return 0;
}

int redlock_lock_set_options(redlock_lock *lock, const redlock_lock_options *opts)
{
    if (!lock)
        return REDLOCK_EINVAL;
    pthread_mutex_lock(&lock->mu);
    int rc = 0;
    if (!opts || opts->version != REDLOCK_LOCK_OPTIONS_VERSION) {
        rc = set_err(lock, REDLOCK_EINVAL, "lock options are NULL or of an unknown version (set version to "
                                           "REDLOCK_LOCK_OPTIONS_VERSION)");
    } else {
        /* The same rules as the client's options of the same names. */
        redlock_options check = lock->client->opts;
        check.retry_count = opts->retry_count;
        check.retry_delay_ms = opts->retry_delay_ms;
        check.retry_jitter_ms = opts->retry_jitter_ms;
        check.wait_ms = opts->wait_ms;
        check.drift_factor = opts->drift_factor;
        check.drift_min_ms = opts->drift_min_ms;
        rc = rl_check_options(&check, lock->errmsg, sizeof lock->errmsg);
        if (rc)
            lock->errcode = rc;
        else {
            lock->pol = *opts;
            set_ok(lock);
        }
    }
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

int redlock_lock_auto_extend(redlock_lock *lock, uint32_t max_hold_ms, redlock_lost_fn on_lost, void *userdata)
{
    if (!lock)
        return REDLOCK_EINVAL;
    /* Not under the lock's mutex: rl_watch_add may wait for the thread to
     * finish with this lock, which needs the mutex. The fields it reads are
     * the owner's, and the owner is the caller. */
    int held = redlock_lock_is_held(lock);
    int rc = held ? rl_watch_add(lock, max_hold_ms, on_lost, userdata) : REDLOCK_ESTATE;
    /* The message under the mutex: a loss callback may already be releasing. */
    pthread_mutex_lock(&lock->mu);
    if (!held)
        set_err(lock, rc, "lock '%s' is not held: nothing to extend", lock->resource);
    else if (rc)
        set_err(lock, rc, "%s", rc == REDLOCK_ENOTSUP
                ? "the client's auto-extend thread runs in the parent process: make a new client after fork"
                : "cannot start the auto-extend thread");
    else
        set_ok(lock);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

int redlock_lock_auto_extend_stop(redlock_lock *lock)
{
    if (!lock)
        return REDLOCK_EINVAL;
    return rl_watch_remove(lock) ? 0 : REDLOCK_ESTATE;
}

int redlock_lock_node_result(const redlock_lock *lock, size_t i, int *code_out, int64_t *rtt_us_out, char *msgbuf,
                             size_t msgbuf_size)
{
    if (!lock || i >= lock->client->n)
        return REDLOCK_EINVAL;
    redlock_lock *l = (redlock_lock *)lock;  /* the mutex only */
    pthread_mutex_lock(&l->mu);
    const rl_report *rep = &l->report[i];
    int outcome = rep->outcome;
    if (code_out)
        *code_out = rep->code;
    if (rtt_us_out)
        *rtt_us_out = rep->rtt_us;
    if (msgbuf && msgbuf_size)
        rl_fmt(msgbuf, msgbuf_size, "%s", rep->msg);
    pthread_mutex_unlock(&l->mu);
    return outcome;
}

const char *redlock_lock_resource(const redlock_lock *lock)
{
    return lock ? lock->resource : "";
}

const char *redlock_lock_errmsg(const redlock_lock *lock)
{
    return lock ? lock->errmsg : "lock is NULL";
}

int redlock_lock_errcode(const redlock_lock *lock)
{
    return lock ? lock->errcode : REDLOCK_EINVAL;
}

int redlock_client_load_functions(redlock_client *client, char *errbuf, size_t errbuf_size)
{
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!client) {
        rl_fmt(errbuf, errbuf_size, "client is NULL");
        return REDLOCK_EINVAL;
    }
    rl_round r;
    memset(&r, 0, offsetof(rl_round, out));
    r.cmd = RL_CMD_LOAD_FUNCTIONS;
    r.key = "";
    r.value = "";
    r.start_us = rl_now_us();
    r.n = client->n;
    r.quorum = (int)client->n;  /* every node, not a majority */
    rl_round_run(client, &r);
    rl_tally t = rl_tally_of(r.out, r.n);
    if (t.yes == (int)r.n)
        return 0;
    int code = rl_failure_code(&t);
    rl_fmt(errbuf, errbuf_size, "the redlock function library was loaded on %d of %zu nodes", t.yes, r.n);
    if (errbuf && errbuf_size)
        describe_round(errbuf, errbuf_size, client, &r);
    return code;
}
