/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c: clients: options (versioned, checked), node URLs, the
 * connections' lifetime, and loading the function library. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The size of each version of redlock_options: a caller's struct is read
 * and written only that far. Version 1 ended with flags. */
static size_t options_size(unsigned int version)
{
    switch (version) {
    case 1: return offsetof(redlock_options, tls_ca_file);
    case 2: return offsetof(redlock_options, on_event);
    case 3: return offsetof(redlock_options, unreachable_ms);
    case 4: return offsetof(redlock_options, quarantine_ttl_ms);
    case 5: return sizeof(redlock_options);
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
    if (!(o->drift_factor >= 0.0 && o->drift_factor < REDLOCK_MAX_DRIFT_FACTOR)) {
        rl_fmt(err, errsize, "drift_factor must be in [0, %g) (REDLOCK_MAX_DRIFT_FACTOR)", REDLOCK_MAX_DRIFT_FACTOR);
        return REDLOCK_EINVAL;
    }
    if (o->node_timeout_ms == 0 || o->node_timeout_ms > REDLOCK_MAX_NODE_TIMEOUT_MS) {
        rl_fmt(err, errsize, "node_timeout_ms must be in 1..%u (REDLOCK_MAX_NODE_TIMEOUT_MS)", REDLOCK_MAX_NODE_TIMEOUT_MS);
        return REDLOCK_EINVAL;
    }
    if (o->connect_timeout_ms > REDLOCK_MAX_CONNECT_TIMEOUT_MS) {
        rl_fmt(err, errsize, "connect_timeout_ms must be at most %u (REDLOCK_MAX_CONNECT_TIMEOUT_MS)",
               REDLOCK_MAX_CONNECT_TIMEOUT_MS);
        return REDLOCK_EINVAL;
    }
    if (o->retry_delay_ms > REDLOCK_MAX_TTL_MS || o->retry_jitter_ms > REDLOCK_MAX_TTL_MS ||
        o->wait_ms > (uint32_t)REDLOCK_MAX_WAIT_MS) {
        rl_fmt(err, errsize, "retry_delay_ms, retry_jitter_ms or wait_ms is absurdly large");
        return REDLOCK_EINVAL;
    }
    if (o->unreachable_ms > (uint32_t)REDLOCK_MAX_WAIT_MS && o->unreachable_ms != REDLOCK_UNREACHABLE_NEVER) {
        rl_fmt(err, errsize, "unreachable_ms must be at most %u (REDLOCK_MAX_WAIT_MS), or REDLOCK_UNREACHABLE_NEVER",
               REDLOCK_MAX_WAIT_MS);
        return REDLOCK_EINVAL;
    }
    if (o->quarantine_ttl_ms > REDLOCK_MAX_TTL_MS) {
        rl_fmt(err, errsize, "quarantine_ttl_ms must be at most %u (REDLOCK_MAX_TTL_MS)", REDLOCK_MAX_TTL_MS);
        return REDLOCK_EINVAL;
    }
    if (o->drift_min_ms > REDLOCK_MAX_DRIFT_MIN_MS) {
        rl_fmt(err, errsize, "drift_min_ms must be at most %u (REDLOCK_MAX_DRIFT_MIN_MS)", REDLOCK_MAX_DRIFT_MIN_MS);
        return REDLOCK_EINVAL;
    }
    if (o->key_prefix && strlen(o->key_prefix) > REDLOCK_MAX_PREFIX_LEN) {
        rl_fmt(err, errsize, "key_prefix longer than %d bytes", REDLOCK_MAX_PREFIX_LEN);
        return REDLOCK_EINVAL;
    }
    const uint32_t known =
        REDLOCK_OPT_FUNCTIONS | REDLOCK_OPT_FENCING | REDLOCK_OPT_NO_WAKE | REDLOCK_OPT_FAIR | REDLOCK_OPT_WAKE |
        REDLOCK_OPT_NO_QUARANTINE;
    if (o->flags & ~known) {
        rl_fmt(err, errsize, "flags has unknown bits 0x%x (the flags are REDLOCK_OPT_FUNCTIONS, REDLOCK_OPT_FENCING, "
               "REDLOCK_OPT_WAKE, REDLOCK_OPT_NO_WAKE, REDLOCK_OPT_FAIR and REDLOCK_OPT_NO_QUARANTINE)",
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
    rl_async_destroy(c->async);
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
    rl_epochs_free(c);
    free(c->prefix);
    free(c);
}

/* Parses the node URLs into c->nodes (c->n counts those to clear on
 * failure), refusing duplicates and TLS options beside plain TCP nodes. */
static int parse_nodes(redlock_client *c, const char *const *node_urls, size_t n_nodes, const redlock_options *opts,
                       char *errbuf, size_t errbuf_size)
{
    int rc;
    for (size_t i = 0; i < n_nodes; i++) {
        char why[256], shown[300];
        if (!node_urls[i]) {
            rl_fmt(errbuf, errbuf_size, "node %zu: URL is NULL", i);
            return REDLOCK_EINVAL;
        }
        c->n = i + 1;
        rc = rl_endpoint_parse(&c->nodes[i].ep, node_urls[i], why, sizeof why);
        rl_mask_url(shown, sizeof shown, node_urls[i]);
        if (rc) {
            rl_fmt(errbuf, errbuf_size, "node %zu '%s': %s", i, shown, why);
            return rc;
        }
        if (!(c->urls[i] = strdup(shown))) {
            rl_fmt(errbuf, errbuf_size, "out of memory");
            return REDLOCK_ENOMEM;
        }
        for (size_t j = 0; j < i; j++) {
            if (rl_endpoint_same_server(&c->nodes[j].ep, &c->nodes[i].ep)) {
                rl_fmt(errbuf, errbuf_size,
                       "node %zu (%s) and node %zu (%s) are the same server; it would be counted twice in the quorum",
                       j, c->nodes[j].ep.display, i, c->nodes[i].ep.display);
                return REDLOCK_EINVAL;
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
                return REDLOCK_EINVAL;
            }
        }
    }
    return 0;
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
    if (!(c->async = rl_async_new())) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        rc = REDLOCK_ENOMEM;
        goto fail;
    }
    if ((rc = rl_io_init(c)) != 0) {
        rl_fmt(errbuf, errbuf_size, "cannot set up the client's I/O: %s", redlock_strerror(rc));
        goto fail;
    }
    c->opts = *opts;
    c->opts.version = REDLOCK_OPTIONS_VERSION;
    /* Caller's memory is not kept: the TLS files are read below, the name copied. */
    c->opts.tls_ca_file = c->opts.tls_ca_dir = c->opts.tls_cert_file = c->opts.tls_key_file = NULL;
    c->opts.tls_server_name = NULL;
    if ((rc = parse_nodes(c, node_urls, n_nodes, opts, errbuf, errbuf_size)) != 0)
        goto fail;
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
    if ((rc = rl_epochs_new(c)) != 0) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        goto fail;
    }
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

void rl_client_unref(redlock_client *client)
{
    if (atomic_fetch_sub(&client->refs, 1) == 1)
        client_destroy(client);
}

void redlock_client_free(redlock_client *client)
{
    if (!client)
        return;
    if (atomic_load(&client->refs) == 1) {
        /* The last reference, so no other user: before closing, read what
         * the connections still owe (a release written but not yet
         * answered), a paused node's included, up to the stall limit
         * (rl_io_settle says why). A lock that outlives its client drops
         * the last reference in lock_free, which does no I/O:
         * rl_client_unref. */
        rl_io_settle(client, rl_now_us() + rl_policy_stall_us(&client->opts));
    }
    rl_client_unref(client);
}

size_t redlock_client_node_count(const redlock_client *client)
{
    return client ? client->n : 0;
}

const char *redlock_client_node_url(const redlock_client *client, size_t i)
{
    return client && i < client->n ? client->urls[i] : "";
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
    rl_cluster_load_functions(client, &r);   /* a cluster node: every shard master */
    rl_tally t = rl_tally_of(r.out, r.n);
    if (t.yes == (int)r.n)
        return 0;
    int code = rl_failure_code(&t);
    rl_fmt(errbuf, errbuf_size, "the redlock function library was loaded on %d of %zu nodes", t.yes, r.n);
    if (errbuf && errbuf_size)
        rl_describe_round(errbuf, errbuf_size, client, &r);
    return code;
}
