/* SPDX-License-Identifier: BSD-3-Clause */
/* status.c: 'redlock status': who holds a resource's key on each node
 * (what status_probe.c reads of each), decided over the nodes and printed
 * as a table or JSON; no lock is taken. */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "redlock.h"
#include "status.h"

#define CMD "status"
#define DEFAULT_TIMEOUT_MS 1000

static void help(void)
{
    fputs("usage: redlock status [options] RESOURCE\n"
          "\n"
          "Shows, for each node, whether RESOURCE's key is set, its value (the holder's random\n"
          "token), and its TTL left; for a read-write lock, its live readers and whether a writer\n"
          "waits; and the waiters it can see: those queued for wake-up (--wake, --fair) and an\n"
          "exclusive waiter's mark. Waiters that poll (the default) register nowhere and are not\n"
          "visible. Reads only; takes no lock.\n"
          "\n"
          "options:\n"
          "      --nodes URL,URL,...     nodes (else $REDLOCK_NODES, else the config file)\n"
          "      --config FILE           config file (else $REDLOCK_CONFIG)\n"
          "      --key-prefix PREFIX     prepended to RESOURCE to form the key\n"
          "      --timeout DURATION      connect and reply deadline per node (default 1s)\n"
          "      --json                  print JSON instead of a table\n"
          CLI_TLS_HELP
          "  -h, --help                  this help\n"
          "\n"
          "A semaphore (redlock run -nN) is shown by its permits: the limit kept on each node,\n"
          "the permits held there and the waiters registered there, and the permits held on a\n"
          "quorum.\n"
          "\n"
          "exit codes: 0 held (one value on a quorum of nodes; readers: the key in a reader's form\n"
          "on a quorum, whichever reader holds it on each; a semaphore: a permit held on a quorum);\n"
          "1 not held; 69 fewer than a quorum of nodes answered; 2 usage error.\n",
          stdout);
}

/* A semaphore's permits, from what each node said: the limit found (the
 * largest), the slots held on a quorum, the most waiters on one node.
 * limit 0: no node keeps one. */
typedef struct sem_verdict {
    long limit, held, waiters;
} sem_verdict;

static void decide_semaphore(const node_state *ns, size_t n, size_t quorum, sem_verdict *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        if (ns[i].sem_limit > s->limit)
            s->limit = ns[i].sem_limit;
        if (ns[i].waiters > s->waiters)
            s->waiters = (long)ns[i].waiters;
    }
    for (long k = 0; k < s->limit; k++) {
        size_t on = 0;
        for (size_t i = 0; i < n; i++)
            on += ns[i].slot && k < ns[i].sem_limit && ns[i].slot[k];
        s->held += on >= quorum;
    }
}

static void print_value(FILE *f, const char *v, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
}

/* The key holds the readers' marker, or a lone reader's (RW_MARK ':' its
 * value). */
static int is_readers(const node_state *s)
{
    size_t m = strlen(RW_MARK);
    return s->state == ST_HELD && s->value && s->value_len >= m && !memcmp(s->value, RW_MARK, m) &&
           (s->value_len == m || (s->value_len > m + 1 && s->value[m] == ':'));
}

/* What the nodes say together. */
typedef struct verdict {
    size_t n, quorum, answered, free_count;
    size_t best, best_count;   /* the value on the most nodes: ns[best], or best == n if none;
                                * readers: the first node in a reader's form, and how many are */
    int read;                  /* held by readers */
    long long readers;         /* readers: how many hold on a quorum */
    const char *state;         /* held, free, not_held, unknown */
    int rc;                    /* 0 held, 1 not held, 69 unknown */
} verdict;

static int id_cmp(const void *a, const void *b)
{
    const struct rd_id *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Readers that hold on a quorum: the values found live on at least quorum
 * nodes, whatever the form on each (a reader that holds K alone on some
 * nodes shares it on others where another reader came too). Each node
 * names a reader once, so a value's count is its number of nodes. */
static long long quorum_readers(const node_state *ns, size_t n, size_t quorum)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        total += ns[i].state == ST_ERROR ? 0 : ns[i].n_ids;
    if (!total)
        return 0;
    struct rd_id *all = malloc(total * sizeof *all);
    if (!all)
        return -1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; ns[i].state != ST_ERROR && j < ns[i].n_ids; j++)
            all[k++] = ns[i].ids[j];
    qsort(all, total, sizeof *all, id_cmp);
    long long held = 0;
    for (size_t a = 0, b; a < total; a = b) {
        for (b = a + 1; b < total && !id_cmp(&all[a], &all[b]); b++) {}
        held += b - a >= quorum;
    }
    free(all);
    return held;
}

static void decide(const node_state *ns, size_t n, verdict *v)
{
    memset(v, 0, sizeof *v);
    v->n = n;
    v->quorum = n / 2 + 1;
    size_t reading = 0, first_reading = n;
    for (size_t i = 0; i < n; i++) {
        v->answered += ns[i].state != ST_ERROR;
        v->free_count += ns[i].state == ST_FREE;
        if (is_readers(&ns[i]) && reading++ == 0)
            first_reading = i;
    }
    /* Readers hold where K is in a reader's form on a quorum, whichever
     * form: a lone reader's value on some nodes and the shared marker on
     * others is the usual picture of readers on different majorities. */
    if (reading >= v->quorum) {
        v->read = 1;
        v->best = first_reading;
        v->best_count = reading;
        v->readers = quorum_readers(ns, n, v->quorum);
        v->state = "held";
        v->rc = 0;
        return;
    }
    /* Else the holder is the value found on the most nodes, a reader's
     * form not being a holder's value. */
    v->best = n;
    for (size_t i = 0; i < n; i++) {
        if (ns[i].state != ST_HELD || !ns[i].value || is_readers(&ns[i]))
            continue;
        size_t count = 0;
        for (size_t j = 0; j < n; j++)
            if (ns[j].state == ST_HELD && ns[j].value && ns[j].value_len == ns[i].value_len &&
                !memcmp(ns[j].value, ns[i].value, ns[i].value_len))
                count++;
        if (count > v->best_count) {
            v->best_count = count;
            v->best = i;
        }
    }
    if (reading > v->best_count) {   /* the most nodes are readers', short of a quorum */
        v->best = first_reading;
        v->best_count = reading;
    }
    v->readers = quorum_readers(ns, n, v->quorum);
    if (v->best_count >= v->quorum) {
        v->state = "held";
        v->rc = 0;
    } else if (v->answered < v->quorum) {
        v->state = "unknown";
        v->rc = CLI_EXIT_UNAVAIL;
    } else {
        v->state = v->free_count == v->answered ? "free" : "not_held";
        v->rc = 1;
    }
}

/* A writer's intent on a quorum of nodes. */
static int writer_waiting(const node_state *ns, const verdict *v)
{
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++)
        k += ns[i].state != ST_ERROR && ns[i].intent_ms > 0;
    return k >= v->quorum;
}

/* Readers are part of the picture: the key in a reader's form, or a
 * reader's lease still running, on some node. Otherwise the lock has one
 * holder at most, and a writer holds the key as a mutex holder does (the
 * same SET of its value): the nodes cannot tell them apart, and neither
 * can status, so it calls such a lock a mutex. */
static int readers_seen(const node_state *ns, const verdict *v)
{
    for (size_t i = 0; i < v->n; i++)
        if (ns[i].state != ST_ERROR && (is_readers(&ns[i]) || ns[i].readers > 0))
            return 1;
    return 0;
}

/* The waiters status can see. Those that wait with wake-up (--wake,
 * --fair, REDLOCK_OPT_WAKE) are registered in K:wq: the most found on one
 * node. An exclusive waiter that polls leaves its intent (K:wi), which
 * holds its value: one more, unless the intent is a registration, already
 * counted. Waiters that poll otherwise (the default for a mutex, a reader,
 * a semaphore's permit) write nothing on the nodes: never seen. */
typedef struct waiters_seen {
    long long queued;          /* registered in K:wq */
    int intent;                /* plus one exclusive waiter that polls */
    long long seen;
} waiters_seen;

static void count_waiters(const node_state *ns, const verdict *v, waiters_seen *w)
{
    size_t marks = 0;
    memset(w, 0, sizeof *w);
    for (size_t i = 0; i < v->n; i++) {
        if (ns[i].state == ST_ERROR)
            continue;
        if (ns[i].waiters > w->queued)
            w->queued = ns[i].waiters;
        marks += ns[i].intent_ms > 0 && !ns[i].intent_queued;
    }
    w->intent = marks >= v->quorum;
    w->seen = w->queued + w->intent;
}

/* The line about waiters: what is seen, and that the waiters that poll
 * are not. */
static void print_waiters(const waiters_seen *w, int rw)
{
    if (w->seen == 0) {
        printf("waiters: none registered; waiters that poll (the default) register nowhere and are not visible\n");
        return;
    }
    printf("%lld waiter%s seen (", w->seen, w->seen == 1 ? "" : "s");
    if (w->queued)
        printf("%lld queued for wake-up%s", w->queued, w->intent ? ", " : "");
    /* Exclusive waiters that poll share one intent: one seen, however many. */
    if (w->intent)
        printf("%s", rw ? "a writer that polls, by its intent" : "an exclusive waiter that polls, by its mark");
    printf("); %swaiters that poll (the default) register nowhere and are not visible\n", w->intent ? "other " : "");
}

static void print_json(const char *resource, const char *key, size_t key_len, const node_state *ns,
                       const verdict *v, const sem_verdict *sv, int exit_rc)
{
    waiters_seen w;
    count_waiters(ns, v, &w);
    printf("{\"resource\":");
    cli_json_string(stdout, resource);
    printf(",\"key\":");
    cli_json_bytes(stdout, key, key_len);
    printf(",\"quorum\":%zu,\"answered\":%zu,\"state\":\"%s\",\"holder\":", v->quorum, v->answered, v->state);
    if (v->best < v->n && is_readers(&ns[v->best]))
        cli_json_string(stdout, RW_MARK);   /* whichever form each node has */
    else if (v->best < v->n)
        cli_json_bytes(stdout, ns[v->best].value, ns[v->best].value_len);
    else
        printf("null");
    printf(",\"holder_nodes\":%zu,\"mode\":", v->best_count);
    if (sv->limit && exit_rc == 0)
        printf("\"semaphore\"");
    else if (sv->limit || v->rc != 0)
        printf("null");
    else
        printf("\"%s\"", v->read ? "read" : "mutex");
    printf(",\"readers\":%lld,\"writer_waiting\":%s", v->readers, writer_waiting(ns, v) ? "true" : "false");
    printf(",\"waiters_seen\":%lld,\"waiters_queued\":%lld,\"waiter_visibility\":\"partial\"", w.seen,
           w.queued);
    printf(",\"nodes\":[");
    for (size_t i = 0; i < v->n; i++) {
        static const char *names[] = { "free", "held", "error" };
        printf("%s{\"index\":%zu,\"url\":", i ? "," : "", i);
        cli_json_string(stdout, ns[i].url);
        printf(",\"state\":\"%s\",\"value\":", names[ns[i].state]);
        if (ns[i].state == ST_HELD && ns[i].value)
            cli_json_bytes(stdout, ns[i].value, ns[i].value_len);
        else
            printf("null");
        if (ns[i].state == ST_HELD)
            printf(",\"ttl_ms\":%lld", ns[i].ttl_ms);
        else
            printf(",\"ttl_ms\":null");
        if (ns[i].state != ST_ERROR && ns[i].readers >= 0)
            printf(",\"readers\":%lld", ns[i].readers);
        else
            printf(",\"readers\":null");
        printf(",\"writer_waiting\":%s", ns[i].state != ST_ERROR && ns[i].intent_ms > 0 ? "true" : "false");
        if (ns[i].state != ST_ERROR && ns[i].waiters >= 0)
            printf(",\"waiters\":%lld", ns[i].waiters);
        else
            printf(",\"waiters\":null");
        printf(",\"error\":");
        cli_json_string(stdout, ns[i].state == ST_ERROR ? ns[i].error : NULL);
        if (sv->limit)
            printf(",\"semaphore_limit\":%ld,\"permits_held\":%ld", ns[i].sem_limit, ns[i].held);
        printf(",\"marker\":%s,\"quarantined_ms\":", ns[i].marker < 0 ? "null" : ns[i].marker ? "true" : "false");
        if (ns[i].marker < 0)
            printf("null");
        else
            printf("%lld", ns[i].quarantine_ms);
        printf(",\"quarantine_reason\":");
        cli_json_string(stdout, ns[i].quarantine_ms ? ns[i].quarantine_why : NULL);
        printf("}");
    }
    printf("]");
    if (sv->limit)
        printf(",\"semaphore\":{\"limit\":%ld,\"permits_held\":%ld,\"waiters\":%ld}", sv->limit, sv->held,
               sv->waiters);
    printf("}\n");
}

/* One row of the table. */
static void print_row(const node_state *ns, size_t i, int w, const verdict *v)
{
    char d[32];
    const node_state *s = &ns[i];
    const char *st = s->state == ST_HELD ? "held" : s->state == ST_FREE ? "free" : "error";
    const char *ttl = s->state != ST_HELD ? "-" : s->ttl_ms == -1 ? "no expiry" : cli_fmt_duration(s->ttl_ms, d, sizeof d);
    printf("%3zu  %-*s  %-5s  %-9s  ", i, w, s->url, st, ttl);
    if (s->state == ST_HELD && s->value) {
        print_value(stdout, s->value, s->value_len);
        const node_state *b = v->best < v->n ? &ns[v->best] : NULL;
        if (is_readers(s) && s->readers >= 0)
            printf("  (%lld reader%s)", s->readers, s->readers == 1 ? "" : "s");
        if (b && is_readers(b) ? !is_readers(s)
                               : b && (s->value_len != b->value_len || memcmp(s->value, b->value, b->value_len)))
            printf("  (another value)");
    } else if (s->state == ST_ERROR) {
        printf("%s", s->error);
    } else {
        printf("-");
    }
    if (s->state != ST_ERROR && s->quarantine_ms > 0)
        printf("  (quarantined: %s; out of the vote for %s more)", s->quarantine_why[0] ? s->quarantine_why : "?",
               cli_fmt_duration(s->quarantine_ms, d, sizeof d));
    printf("\n");
}

static void print_text(const char *resource, const char *key, size_t key_len, const node_state *ns,
                       const verdict *v)
{
    size_t n = v->n;
    int w = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(ns[i].url) > w)
            w = (int)strlen(ns[i].url);
    printf("resource '%s' (key '", resource);
    print_value(stdout, key, key_len);
    printf("') on %zu nodes, quorum %zu\n", n, v->quorum);
    printf("  #  %-*s  %-5s  %-9s  %s\n", w, "NODE", "STATE", "TTL", "VALUE");
    for (size_t i = 0; i < n; i++)
        print_row(ns, i, w, v);
    if (v->rc == 0 && v->read) {
        printf("held by readers: %lld on a quorum; the key is in a reader's form on %zu of %zu nodes (quorum %zu)\n",
               v->readers, v->best_count, n, v->quorum);
    } else if (v->rc == 0) {
        printf("held: value ");
        print_value(stdout, ns[v->best].value, ns[v->best].value_len);
        printf(" is on %zu of %zu nodes (quorum %zu)\n", v->best_count, n, v->quorum);
    } else if (v->rc == 1 && v->free_count == v->answered) {
        printf("free: no node that answered has the key (%zu of %zu answered)\n", v->answered, n);
    } else if (v->rc == 1) {
        printf("not held: no value is on a quorum (most: %zu of %zu nodes, quorum %zu)\n", v->best_count, n,
               v->quorum);
    } else {
        printf("unknown: only %zu of %zu nodes answered, quorum %zu\n", v->answered, n, v->quorum);
    }
    int rw = readers_seen(ns, v);
    if (rw && writer_waiting(ns, v))
        printf("a writer waits: new readers are refused until it gets the lock\n");
    waiters_seen seen;
    count_waiters(ns, v, &seen);
    if (v->rc == 0 || seen.seen)
        print_waiters(&seen, rw);
    for (size_t i = 0; i < n; i++)
        if (ns[i].state == ST_HELD && ns[i].ttl_ms == -1) {
            printf("warning: the key has no expiry on some nodes: it was not set by Redlock, or was "
                   "changed since; it will never be released by expiry\n");
            break;
        }
}

/* A semaphore, instead of the key's table: per node, the limit kept there,
 * the permits held and the waiters registered there; then the permits held
 * on a quorum. */
static void print_semaphore(const char *resource, const node_state *ns, const verdict *v, const sem_verdict *sv)
{
    size_t n = v->n;
    int w = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(ns[i].url) > w)
            w = (int)strlen(ns[i].url);
    printf("semaphore '%s', limit %ld, on %zu nodes, quorum %zu\n", resource, sv->limit, n, v->quorum);
    printf("  #  %-*s  %-7s  %-7s  %s\n", w, "NODE", "LIMIT", "PERMITS", "WAITERS");
    for (size_t i = 0; i < n; i++) {
        if (ns[i].state == ST_ERROR)
            printf("%3zu  %-*s  error: %s\n", i, w, ns[i].url, ns[i].error);
        else if (ns[i].sem_limit)
            printf("%3zu  %-*s  %-7ld  %-7ld  %lld\n", i, w, ns[i].url, ns[i].sem_limit, ns[i].held,
                   ns[i].waiters < 0 ? 0 : ns[i].waiters);
        else
            printf("%3zu  %-*s  %-7s  %-7d  %lld\n", i, w, ns[i].url, "-", 0, ns[i].waiters < 0 ? 0 : ns[i].waiters);
    }
    if (v->answered < v->quorum) {
        printf("unknown: only %zu of %zu nodes answered, quorum %zu\n", v->answered, n, v->quorum);
        return;
    }
    printf("%s: %ld of %ld permits held on a quorum\n", sv->held ? "held" : "free", sv->held, sv->limit);
    waiters_seen seen;
    count_waiters(ns, v, &seen);
    if (sv->held || seen.seen)
        print_waiters(&seen, 0);
}

/* Options and RESOURCE: 0, the exit code of a usage error (reported), or
 * CLI_HELP_SHOWN. */
static int parse_args(cli_common *common, int argc, char **argv, cli_inspect_opts *io, const char **resource)
{
    static const struct option longopts[] = {
        CLI_NODE_LONGOPTS,
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "json", no_argument, NULL, OPT_JSON },
        CLI_TLS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int rc = cli_inspect_options(common, CMD, argc, argv, longopts, help, io);
    if (rc)
        return rc;
    if (optind >= argc)
        return cli_usage(CMD, "missing RESOURCE");
    if (argc - optind > 1)
        return cli_usage(CMD, "one RESOURCE only ('%s' is extra)", argv[optind + 1]);
    rc = cli_common_resolve(common, CMD, 1);
    if (rc)
        return rc;
    *resource = argv[optind];
    if (!**resource || strlen(*resource) > REDLOCK_MAX_RESOURCE_LEN)
        return cli_usage(CMD, "RESOURCE must be 1 to %d bytes", REDLOCK_MAX_RESOURCE_LEN);
    return 0;
}

int cli_status(int argc, char **argv)
{
    cli_common common;
    cli_common_init(&common);
    cli_inspect_opts io = { 0, DEFAULT_TIMEOUT_MS, NULL, NULL };
    const char *resource = NULL;
    int rc = parse_args(&common, argc, argv, &io, &resource);
    /* Every URL must parse before anything is contacted. */
    if (!rc)
        rc = cli_nodes_check(&common, CMD, 0);
    redlock_options lib;
    cli_lib_options(&common, &lib);
    if (!rc)
        rc = cli_tls_prepare(&common, &lib, CMD);
    if (rc) {
        cli_common_free(&common);
        return rc == CLI_HELP_SHOWN ? 0 : rc;
    }
    signal(SIGPIPE, SIG_IGN);  /* a node that closes its end must not kill us mid-write */

    size_t prefix_len = lib.key_prefix ? strlen(lib.key_prefix) : 0, rlen = strlen(resource);
    char *key = malloc(prefix_len + rlen + 1);
    node_state *ns = calloc(common.n_urls, sizeof *ns);
    if (!key || !ns) {
        cli_err(CMD, "out of memory");
        free(key);
        free(ns);
        cli_common_free(&common);
        return CLI_EXIT_SOFTWARE;
    }
    if (prefix_len)
        memcpy(key, lib.key_prefix, prefix_len);
    memcpy(key + prefix_len, resource, rlen + 1);

    size_t n = common.n_urls;
    int per_slot = 0;
    for (size_t i = 0; i < n; i++) {
        rl_endpoint ep;
        char err[512];
        if (cli_endpoint_parse(common.urls[i], &ep, err, sizeof err) == 0)
            per_slot |= ep.cluster;
        rl_endpoint_clear(&ep);
    }
    for (size_t i = 0; i < n; i++)
        status_probe(&common, common.urls[i], key, prefix_len + rlen, prefix_len, per_slot, io.timeout_ms, &ns[i]);
    verdict v;
    decide(ns, n, &v);
    sem_verdict sv;
    decide_semaphore(ns, n, v.quorum, &sv);
    int exit_rc = v.rc;
    if (sv.limit && v.answered >= v.quorum) {   /* a semaphore: held means a permit held */
        exit_rc = sv.held > 0 ? 0 : 1;
        v.state = sv.held > 0 ? "held" : "free";
    }
    if (io.json)
        print_json(resource, key, prefix_len + rlen, ns, &v, &sv, exit_rc);
    else if (sv.limit)
        print_semaphore(resource, ns, &v, &sv);
    else
        print_text(resource, key, prefix_len + rlen, ns, &v);
    for (size_t i = 0; i < n; i++) {
        free(ns[i].value);
        free(ns[i].slot);
        for (size_t j = 0; j < ns[i].n_ids; j++)
            free(ns[i].ids[j].p);
        free(ns[i].ids);
    }
    free(ns);
    free(key);
    cli_common_free(&common);
    return exit_rc;
}
