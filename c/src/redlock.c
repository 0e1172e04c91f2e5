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

enum { LOCK_IDLE = 0, LOCK_HELD, LOCK_LOST };

struct redlock_lock {
    redlock_client *client;   /* counted reference */
    char *resource;
    char *key;
    size_t key_len;
    char value[RL_VALUE_HEX + 1];
    int state;
    int64_t valid_until_us;
    int64_t acquired_us;
    uint32_t n_ext;
    int errcode;
    char errmsg[RL_MSG_MAX];
    atomic_int cancel;
    atomic_int wake_fd;       /* eventfd, made on the first wait */
    rl_conn **pinned;         /* see rl_round.pinned */
};

/* The size of each version of redlock_options: a caller's struct is read
 * and written only that far. Version 1 ended with flags. */
static size_t options_size(unsigned int version)
{
    switch (version) {
    case 1: return offsetof(redlock_options, tls_ca_file);
    case 2: return sizeof(redlock_options);
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
    if (o->flags & ~(uint32_t)REDLOCK_OPT_FUNCTIONS) {
        rl_fmt(err, errsize, "flags has unknown bits 0x%x (the only flag is REDLOCK_OPT_FUNCTIONS)",
               o->flags & ~(uint32_t)REDLOCK_OPT_FUNCTIONS);
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
    if (c->nodes) {
        for (size_t i = 0; i < c->n; i++)
            rl_node_destroy(&c->nodes[i]);
        free(c->nodes);
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
    if (!c || !(c->nodes = calloc(n_nodes, sizeof *c->nodes))) {
        free(c);
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
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
        rl_node_init(&c->nodes[i]);
        c->n = i + 1;
        rc = rl_endpoint_parse(&c->nodes[i].ep, node_urls[i], why, sizeof why);
        if (rc) {
            rl_mask_url(shown, sizeof shown, node_urls[i]);
            rl_fmt(errbuf, errbuf_size, "node %zu '%s': %s", i, shown, why);
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
        int64_t deadline = rl_now_us() + (int64_t)client->opts.node_timeout_ms * 1000;
        for (size_t i = 0; i < client->n; i++)
            rl_node_settle(&client->nodes[i], deadline);
    }
    if (atomic_fetch_sub(&client->refs, 1) == 1)
        client_destroy(client);
}

size_t redlock_client_node_count(const redlock_client *client)
{
    return client ? client->n : 0;
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
    redlock_lock *l = calloc(1, sizeof *l);
    if (!l)
        return REDLOCK_ENOMEM;
    l->resource = strdup(resource);
    l->key_len = client->prefix_len + rlen;
    l->key = malloc(l->key_len + 1);
    l->pinned = calloc(client->n, sizeof *l->pinned);
    if (!l->resource || !l->key || !l->pinned) {
        free(l->resource);
        free(l->key);
        free(l->pinned);
        free(l);
        return REDLOCK_ENOMEM;
    }
    memcpy(l->key, client->prefix, client->prefix_len);
    memcpy(l->key + client->prefix_len, resource, rlen + 1);
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
    int fd = atomic_load(&lock->wake_fd);
    if (fd >= 0)
        close(fd);
    rl_unpin(lock->client, lock->pinned);
    free(lock->pinned);
    redlock_client_free(lock->client);
    free(lock->resource);
    free(lock->key);
    free(lock);
}

static int64_t drift_us(const redlock_client *c, uint32_t ttl_ms)
{
    return (int64_t)((double)ttl_ms * c->opts.drift_factor * 1000.0) + (int64_t)c->opts.drift_min_ms * 1000;
}

static int check_ttl(redlock_lock *lock, uint32_t ttl_ms)
{
    if (ttl_ms == 0)
        return set_err(lock, REDLOCK_EINVAL, "ttl_ms must be greater than 0");
    if (ttl_ms > REDLOCK_MAX_TTL_MS)
        return set_err(lock, REDLOCK_EINVAL, "ttl_ms %u is over the limit of %u (one day); use extend for longer holds",
                       ttl_ms, REDLOCK_MAX_TTL_MS);
    int64_t d = drift_us(lock->client, ttl_ms);
    if (d >= (int64_t)ttl_ms * 1000)
        return set_err(lock, REDLOCK_EINVAL, "ttl_ms %u is too small: the clock-drift allowance (%lld ms) leaves no validity",
                       ttl_ms, (long long)(d / 1000));
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

static void describe_nodes(redlock_lock *lock, const rl_round *r)
{
    describe_round(lock->errmsg, sizeof lock->errmsg, lock->client, r);
}

static void init_round(rl_round *r, redlock_lock *lock, rl_cmd cmd, uint32_t ttl_ms)
{
    r->cmd = cmd;
    r->key = lock->key;
    r->key_len = lock->key_len;
    r->value = lock->value;
    r->ttl_ms = ttl_ms;
    r->start_us = rl_now_us();
    r->cap_us = 0;
    r->quorum = lock->client->quorum;
    r->no_wait = 0;
    r->n = lock->client->n;
    r->pinned = lock->pinned;
    memset(r->skip, 0, r->n);
}

/* One acquisition attempt. On failure every node that may hold our value
 * gets a release before returning. */
static int attempt(redlock_lock *lock, uint32_t ttl_ms)
{
    redlock_client *c = lock->client;
    rl_round r;

    if (rl_random_hex(lock->value, RL_VALUE_BYTES) != 0)
        return set_err(lock, REDLOCK_EIO, "getrandom failed: %s", strerror(errno));
    init_round(&r, lock, RL_CMD_SET, ttl_ms);
    r.cap_us = r.start_us + (int64_t)ttl_ms * 1000;
    rl_round_run(c, &r);
    int64_t now = rl_now_us();

    rl_tally t = rl_tally_of(r.out, r.n);
    int64_t valid_until = r.start_us + (int64_t)ttl_ms * 1000 - drift_us(c, ttl_ms);
    int code = rl_decide_acquire(r.out, r.n, c->quorum, valid_until, now);
    if (code == 0) {
        lock->state = LOCK_HELD;
        lock->valid_until_us = valid_until;
        lock->acquired_us = r.start_us;
        lock->n_ext = 0;
        return set_ok(lock);
    }

    int hard = t.auth + t.server + t.io + t.tls;
    if (code == REDLOCK_EEXPIRED)
        set_err(lock, code, "acquired on %d of %zu nodes, but %lld ms of the %u ms TTL had passed (drift allowance %lld ms)",
                t.yes, r.n, (long long)((now - r.start_us) / 1000), ttl_ms, (long long)(drift_us(c, ttl_ms) / 1000));
    else if (code == REDLOCK_ENOTACQUIRED)
        set_err(lock, code, "not acquired: %d of %zu nodes granted, %d needed", t.yes, r.n, c->quorum);
    else
        set_err(lock, code, "%s: %d of %zu nodes granted, %d needed, %d could not answer",
                code == REDLOCK_ENOQUORUM ? "no quorum" : redlock_strerror(code), t.yes, r.n, c->quorum, hard);
    describe_nodes(lock, &r);

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
    lock->state = LOCK_IDLE;
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

int redlock_lock_acquire(redlock_lock *lock, uint32_t ttl_ms, int64_t wait_ms)
{
    if (!lock)
        return REDLOCK_EINVAL;
    int rc = check_ttl(lock, ttl_ms);
    if (rc)
        return rc;
    if (wait_ms < REDLOCK_WAIT_DEFAULT || wait_ms > (int64_t)REDLOCK_MAX_WAIT_MS)
        return set_err(lock, REDLOCK_EINVAL, "wait_ms %lld is out of range", (long long)wait_ms);
    if (lock->state == LOCK_HELD && lock->valid_until_us > rl_now_us())
        return set_err(lock, REDLOCK_ESTATE, "lock '%s' is already held by this handle", lock->resource);

    const redlock_options *o = &lock->client->opts;
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
        rc = attempt(lock, ttl_ms);
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
        int64_t delay = ((int64_t)o->retry_delay_ms + rl_random_below(o->retry_jitter_ms + 1)) * 1000;
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

int redlock_extend(redlock_lock *lock, uint32_t ttl_ms)
{
    if (!lock)
        return REDLOCK_EINVAL;
    int rc = check_ttl(lock, ttl_ms);
    if (rc)
        return rc;
    if (lock->state == LOCK_LOST)
        return set_err(lock, REDLOCK_ELOST, "lock '%s' was already lost", lock->resource);
    if (lock->state != LOCK_HELD)
        return set_err(lock, REDLOCK_ESTATE, "lock '%s' is not held", lock->resource);

    redlock_client *c = lock->client;
    int64_t now = rl_now_us();
    if (lock->valid_until_us <= now)
        return set_err(lock, REDLOCK_EEXPIRED,
                       "lock '%s' expired %lld ms ago; an expired lock is never extended", lock->resource,
                       (long long)((now - lock->valid_until_us) / 1000));
    if (c->opts.max_extensions && lock->n_ext >= c->opts.max_extensions)
        return set_err(lock, REDLOCK_ELIMIT, "lock '%s' was extended %u times, the limit (max_extensions)",
                       lock->resource, lock->n_ext);
    if (c->opts.max_hold_ms &&
        now + (int64_t)ttl_ms * 1000 - lock->acquired_us > (int64_t)c->opts.max_hold_ms * 1000)
        return set_err(lock, REDLOCK_ELIMIT, "extending '%s' by %u ms would hold it past max_hold_ms (%u)",
                       lock->resource, ttl_ms, c->opts.max_hold_ms);

    rl_round r;
    init_round(&r, lock, RL_CMD_EXTEND, ttl_ms);
    /* Replies after the current validity are useless: the lock may have
     * changed hands in between. */
    r.cap_us = lock->valid_until_us;
    rl_round_run(c, &r);
    now = rl_now_us();
    rl_tally t = rl_tally_of(r.out, r.n);
    int unknown = (int)r.n - t.yes - t.no;
    /* Within validity means when the quorum confirmed, not when the last
     * straggler was read. */
    int code = rl_decide_extend(r.out, r.n, c->quorum, r.decided_us, lock->valid_until_us);
    if (code == 0) {
        lock->valid_until_us = r.start_us + (int64_t)ttl_ms * 1000 - drift_us(c, ttl_ms);
        lock->n_ext++;
        return set_ok(lock);
    }
    if (code == REDLOCK_ELOST) {
        lock->state = LOCK_LOST;
        set_err(lock, code, "lock '%s' lost: still ours on %d of %zu nodes, %d needed", lock->resource,
                t.yes, r.n, c->quorum);
    } else if (code == REDLOCK_EEXPIRED) {
        set_err(lock, code, "extension of '%s' confirmed only after its validity ran out", lock->resource);
    } else {
        set_err(lock, code, "could not extend '%s': %d of %zu nodes confirmed, %d needed, %d could not answer",
                lock->resource, t.yes, r.n, c->quorum, unknown);
    }
    describe_nodes(lock, &r);
    return lock->errcode;
}

int redlock_release(redlock_lock *lock)
{
    if (!lock)
        return REDLOCK_EINVAL;
    if (lock->state == LOCK_IDLE)
        return set_err(lock, REDLOCK_ESTATE, "lock '%s' is not held", lock->resource);

    redlock_client *c = lock->client;
    rl_round r;
    init_round(&r, lock, RL_CMD_RELEASE, 0);
    rl_round_run(c, &r);
    lock->state = LOCK_IDLE;
    lock->valid_until_us = 0;
    rl_tally t = rl_tally_of(r.out, r.n);
    int unknown = (int)r.n - t.yes - t.no;
    int code = rl_decide_release(r.out, r.n, c->quorum);
    if (code == 0)
        return set_ok(lock);
    if (code == REDLOCK_ELOST) {
        set_err(lock, code,
                "lock '%s' was no longer ours on a majority when released (%d of %zu nodes, %d needed): "
                "it expired or was taken over, so the critical section may have overlapped another owner",
                lock->resource, t.yes, r.n, c->quorum);
    } else {
        set_err(lock, code, "release of '%s' not confirmed: %d of %zu nodes confirmed, %d needed, %d could not answer",
                lock->resource, t.yes, r.n, c->quorum, unknown);
    }
    describe_nodes(lock, &r);
    return lock->errcode;
}

int64_t redlock_lock_validity_ms(const redlock_lock *lock)
{
    if (!lock || lock->state != LOCK_HELD)
        return 0;
    int64_t left = lock->valid_until_us - rl_now_us();
    /* Round toward minus infinity so that 0 never hides an expired lock. */
    return left >= 0 ? left / 1000 : -((-left + 999) / 1000);
}

int redlock_lock_is_held(const redlock_lock *lock)
{
    return lock && lock->state == LOCK_HELD && lock->valid_until_us > rl_now_us();
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
