/* SPDX-License-Identifier: BSD-3-Clause */
/* config.c: the tool's settings, shared by its subcommands: from the
 * command line, the environment and the config file, in that order, with
 * the node list split without ever showing a password. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- settings ---- */

void cli_common_init(cli_common *c)
{
    memset(c, 0, sizeof *c);
    c->ttl_ms = -1;
    c->wait_ms = -2;
    c->node_timeout_ms = -1;
}

static void free_urls(cli_common *c)
{
    for (size_t i = 0; i < c->n_urls; i++) {
        /* URLs may hold passwords: don't leave them in freed memory. */
        explicit_bzero(c->urls[i], strlen(c->urls[i]));
        free(c->urls[i]);
    }
    free(c->urls);
    c->urls = NULL;
    c->n_urls = 0;
}

static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void cli_common_free(cli_common *c)
{
    free_urls(c);
    free(c->key_prefix);
    free_secret(c->cli_nodes);
    free(c->cli_ttl);
    free(c->cli_wait);
    free(c->cli_prefix);
    free(c->cli_node_timeout);
    cli_tls_free(&c->tls);
    cli_tls_free(&c->tls_cli);
    cli_tls_ctx_free(c->tls_ctx);
    memset(c, 0, sizeof *c);
}

static char *append_list(char *list, const char *more)
{
    if (!list)
        return strdup(more);
    size_t a = strlen(list), b = strlen(more);
    char *n = malloc(a + b + 2);
    if (!n)
        return NULL;
    memcpy(n, list, a);
    n[a] = ',';
    memcpy(n + a + 1, more, b + 1);
    free_secret(list);
    return n;
}

int cli_common_add_nodes(cli_common *c, const char *arg)
{
    char *n = append_list(c->cli_nodes, arg);
    if (!n)
        return -1;
    c->cli_nodes = n;
    return 0;
}

static int set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = strdup(v);
    return *dst ? 0 : -1;
}

int cli_common_option(cli_common *c, const char *cmd, int opt, const char *arg)
{
    int rc = 0;
    switch (opt) {
    case OPT_NODES:
        rc = cli_common_add_nodes(c, arg);
        break;
    case OPT_CONFIG:
        c->config_path = arg;
        break;
    case OPT_KEY_PREFIX:
        rc = set_str(&c->cli_prefix, arg);
        break;
    case OPT_NODE_TIMEOUT:
        rc = set_str(&c->cli_node_timeout, arg);
        break;
    case OPT_TTL:
        rc = set_str(&c->cli_ttl, arg);
        break;
    case OPT_TLS_CA_FILE:
        rc = set_str(&c->tls_cli.ca_file, arg);
        break;
    case OPT_TLS_CA_DIR:
        rc = set_str(&c->tls_cli.ca_dir, arg);
        break;
    case OPT_TLS_CERT:
        rc = set_str(&c->tls_cli.cert_file, arg);
        break;
    case OPT_TLS_KEY:
        rc = set_str(&c->tls_cli.key_file, arg);
        break;
    case OPT_TLS_SERVER_NAME:
        rc = set_str(&c->tls_cli.server_name, arg);
        break;
    case OPT_TLS_INSECURE:
        c->tls_cli.insecure = 1;
        break;
    default:
        return 0;
    }
    if (rc) {
        cli_err(cmd, "out of memory");
        exit(CLI_EXIT_SOFTWARE);
    }
    return 1;
}

int cli_inspect_options(cli_common *c, const char *cmd, int argc, char **argv, const struct option *longopts,
                        void (*help)(void), cli_inspect_opts *io)
{
    optind = 0;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *bad = argv[optind - 1];
        int rc = io->extra ? io->extra(opt, optarg, io->userdata) : -1;
        if (rc >= 0) {
            if (rc)
                return rc;
        } else if (opt == 'h') {
            help();
            return CLI_HELP_SHOWN;
        } else if (opt == OPT_JSON) {
            io->json = 1;
        } else if (opt == OPT_TIMEOUT) {
            if (cli_parse_duration(optarg, &io->timeout_ms, 0) || io->timeout_ms <= 0)
                return cli_usage(cmd, "--timeout: '%s' is not a positive duration (e.g. 500ms)", optarg);
        } else if (opt == ':') {
            return cli_usage(cmd, "option '%s' needs a value", bad);
        } else if (opt == '?' || cli_common_option(c, cmd, opt, optarg) != 1) {
            return optopt && opt == '?' ? cli_usage(cmd, "unknown option '-%c'", optopt)
                                        : cli_usage(cmd, "unknown option '%s'", bad);
        }
    }
    return 0;
}

/* 1 if s (of length n) starts with a URL scheme: letters (and '-', as in
 * redis-cluster), then "://". */
static int has_scheme(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (isalpha((unsigned char)s[i]) || (i > 0 && s[i] == '-')))
        i++;
    return i > 0 && n - i >= 3 && !memcmp(s + i, "://", 3);
}

/* Splits a comma-separated URL list into c->urls. A password may hold a
 * comma that was not percent-encoded: an item that does not start with a
 * scheme continues the item before it (a comma inside a password), so the
 * password is neither split in two nor half-printed in an error. What still
 * does not parse is shown masked by rl_mask_url, which hides what has no
 * scheme. */
static int split_nodes(cli_common *c, const char *cmd, const char *list, const char *source)
{
    free_urls(c);
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && isspace((unsigned char)*p))
            p++, len--;
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (len == 0)
            return cli_usage(cmd, "empty node URL in %s", source);
        if (c->n_urls && !has_scheme(p, len)) {
            char *prev = c->urls[c->n_urls - 1];
            size_t pl = strlen(prev);
            char *joined = malloc(pl + 1 + len + 1);
            if (!joined)
                return cli_usage(cmd, "out of memory");
            memcpy(joined, prev, pl);
            joined[pl] = ',';
            memcpy(joined + pl + 1, p, len);
            joined[pl + 1 + len] = '\0';
            explicit_bzero(prev, pl);
            free(prev);
            c->urls[c->n_urls - 1] = joined;
        } else {
            char **grown = realloc(c->urls, (c->n_urls + 1) * sizeof *grown);
            if (!grown)
                return cli_usage(cmd, "out of memory");
            c->urls = grown;
            c->urls[c->n_urls] = strndup(p, len);
            if (!c->urls[c->n_urls])
                return cli_usage(cmd, "out of memory");
            c->n_urls++;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

typedef struct conf_value {
    char *value;
    int line;
} conf_value;

typedef struct conf_file {
    conf_value nodes, ttl, wait, key_prefix, node_timeout;
    conf_value tls_ca_file, tls_ca_dir, tls_cert, tls_key, tls_server_name, tls_insecure;
} conf_file;

static void conf_free(conf_file *f)
{
    free_secret(f->nodes.value);
    free(f->ttl.value);
    free(f->wait.value);
    free(f->key_prefix.value);
    free(f->node_timeout.value);
    free(f->tls_ca_file.value);
    free(f->tls_ca_dir.value);
    free(f->tls_cert.value);
    free(f->tls_key.value);
    free(f->tls_server_name.value);
    free(f->tls_insecure.value);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The format is documented in docs/cli.md: "key = value" lines, '#' starts
 * a comment line, a value may be "double-quoted" to keep spaces. */
static int conf_load(const char *cmd, const char *path, conf_file *f)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return cli_usage(cmd, "cannot read config file '%s': %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (getline(&line, &cap, fp) >= 0) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = cli_usage(cmd, "%s:%d: expected 'key = value'", path, lineno);
            break;
        }
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        size_t vl = strlen(val);
        if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
            val[vl - 1] = '\0';
            val++;
        }
        conf_value *slot = NULL;
        if (!strcmp(key, "nodes"))
            slot = &f->nodes;
        else if (!strcmp(key, "ttl"))
            slot = &f->ttl;
        else if (!strcmp(key, "wait"))
            slot = &f->wait;
        else if (!strcmp(key, "key_prefix"))
            slot = &f->key_prefix;
        else if (!strcmp(key, "node_timeout"))
            slot = &f->node_timeout;
        else if (!strcmp(key, "tls_ca_file"))
            slot = &f->tls_ca_file;
        else if (!strcmp(key, "tls_ca_dir"))
            slot = &f->tls_ca_dir;
        else if (!strcmp(key, "tls_cert"))
            slot = &f->tls_cert;
        else if (!strcmp(key, "tls_key"))
            slot = &f->tls_key;
        else if (!strcmp(key, "tls_server_name"))
            slot = &f->tls_server_name;
        else if (!strcmp(key, "tls_insecure"))
            slot = &f->tls_insecure;
        if (!slot) {
            rc = cli_usage(cmd,
                           "%s:%d: unknown key '%s' (known: nodes, ttl, wait, key_prefix, node_timeout, "
                           "tls_ca_file, tls_ca_dir, tls_cert, tls_key, tls_server_name, tls_insecure)",
                           path, lineno, key);
            break;
        }
        /* Several "nodes =" lines add up; any other key: the last one wins. */
        char *v = slot == &f->nodes && slot->value ? append_list(slot->value, val) : strdup(val);
        if (!v) {
            rc = cli_usage(cmd, "out of memory");
            break;
        }
        if (slot != &f->nodes || !slot->value)
            free(slot->value);
        slot->value = v;
        slot->line = lineno;
    }
    if (line) {
        explicit_bzero(line, cap);
        free(line);
    }
    fclose(fp);
    return rc;
}

static int parse_dur_setting(const char *cmd, const char *cli_val, const char *cli_name, const conf_value *cv,
                             const char *conf_key, const char *path, int allow_forever, int64_t *out)
{
    if (cli_val) {
        if (cli_parse_duration(cli_val, out, allow_forever))
            return cli_usage(cmd, "%s: '%s' is not a duration (e.g. 250ms, 30s, 5m, 1h)", cli_name, cli_val);
    } else if (cv->value) {
        if (cli_parse_duration(cv->value, out, allow_forever))
            return cli_usage(cmd, "%s:%d: %s: '%s' is not a duration (e.g. 250ms, 30s, 5m, 1h)", path, cv->line,
                             conf_key, cv->value);
    }
    return 0;
}

/* Where a setting came from, for messages: the option, or FILE:LINE: key. */
static const char *origin(char *buf, size_t size, int from_cli, const char *opt, const char *path,
                          const conf_value *cv, const char *key)
{
    if (from_cli)
        snprintf(buf, size, "%s", opt);
    else
        snprintf(buf, size, "%.300s:%d: %s", path, cv->line, key);
    return buf;
}

/* Merges a TLS file (or, with dir, directory) setting and checks that it can
 * be read, so that every subcommand fails the same way, before any network
 * traffic; what is in the file is checked when it is loaded. */
static int tls_path_setting(const char *cmd, char **out, const char *cli_val, const char *opt, const conf_value *cv,
                            const char *key, const char *path, int dir)
{
    const char *v = cli_val ? cli_val : cv->value;
    if (!v)
        return 0;
    char where[400];
    origin(where, sizeof where, cli_val != NULL, opt, path, cv, key);
    struct stat st;
    int bad = stat(v, &st) != 0 ? errno : dir && !S_ISDIR(st.st_mode) ? ENOTDIR : !dir && S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (!bad && dir && access(v, R_OK | X_OK) != 0)
        bad = errno;
    if (!bad && !dir) {
        FILE *f = fopen(v, "re");
        if (!f)
            bad = errno;
        else
            fclose(f);
    }
    if (bad)
        return cli_usage(cmd, "%s '%s': %s", where, v, strerror(bad));
    if (!(*out = strdup(v)))
        return cli_usage(cmd, "out of memory");
    return 0;
}

static int resolve_tls(cli_common *c, const char *cmd, const conf_file *f, const char *path)
{
    const cli_tls *o = &c->tls_cli;
    cli_tls *t = &c->tls;
    char where[400];
    int rc;
    if ((rc = tls_path_setting(cmd, &t->ca_file, o->ca_file, "--tls-ca-file", &f->tls_ca_file, "tls_ca_file", path,
                               0)) ||
        (rc = tls_path_setting(cmd, &t->ca_dir, o->ca_dir, "--tls-ca-dir", &f->tls_ca_dir, "tls_ca_dir", path, 1)) ||
        (rc = tls_path_setting(cmd, &t->cert_file, o->cert_file, "--tls-cert", &f->tls_cert, "tls_cert", path, 0)) ||
        (rc = tls_path_setting(cmd, &t->key_file, o->key_file, "--tls-key", &f->tls_key, "tls_key", path, 0)))
        return rc;
    if (!t->cert_file != !t->key_file)
        return cli_usage(cmd, "--tls-cert and --tls-key (tls_cert, tls_key) go together: give both or neither");
    const char *name = o->server_name ? o->server_name : f->tls_server_name.value;
    if (name) {
        origin(where, sizeof where, o->server_name != NULL, "--tls-server-name", path, &f->tls_server_name,
               "tls_server_name");
        if (!*name || strlen(name) > 253)
            return cli_usage(cmd, "%s must be 1 to 253 bytes", where);
        if (!(t->server_name = strdup(name)))
            return cli_usage(cmd, "out of memory");
    }
    t->insecure = o->insecure;
    if (!o->insecure && f->tls_insecure.value) {
        const char *v = f->tls_insecure.value;
        if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcmp(v, "1"))
            t->insecure = 1;
        else if (strcasecmp(v, "no") && strcasecmp(v, "false") && strcasecmp(v, "off") && strcmp(v, "0"))
            return cli_usage(cmd, "%s:%d: tls_insecure: '%s' is not yes or no", path, f->tls_insecure.line, v);
    }
    if (!(t->ca_file || t->ca_dir || t->cert_file || t->server_name || t->insecure))
        return 0;
    /* As the library does: TLS settings next to a plain TCP URL are most
     * likely a typo in its scheme; refuse rather than send it in clear. */
    for (size_t i = 0; i < c->n_urls; i++) {
        rl_endpoint ep;
        char err[256];
        if (rl_endpoint_parse(&ep, c->urls[i], err, sizeof err) == 0 && !ep.tls && !ep.path) {
            rc = cli_usage(cmd, "node %zu (%s) is plain TCP but TLS options are set: use rediss://", i,
                           ep.display);
            rl_endpoint_clear(&ep);
            return rc;
        }
        rl_endpoint_clear(&ep);
    }
    return 0;
}

int cli_common_resolve(cli_common *c, const char *cmd, int need_nodes)
{
    conf_file f;
    memset(&f, 0, sizeof f);
    const char *path = c->config_path;
    if (!path) {
        const char *env = getenv("REDLOCK_CONFIG");
        if (env && *env)
            path = env;
    }
    int rc = 0;
    if (path && (rc = conf_load(cmd, path, &f)) != 0)
        goto out;

    const char *env_nodes = getenv("REDLOCK_NODES");
    if (c->cli_nodes)
        rc = split_nodes(c, cmd, c->cli_nodes, "--nodes");
    else if (env_nodes && *env_nodes)
        rc = split_nodes(c, cmd, env_nodes, "$REDLOCK_NODES");
    else if (f.nodes.value) {
        char src[300];
        snprintf(src, sizeof src, "%.250s:%d", path, f.nodes.line);
        rc = split_nodes(c, cmd, f.nodes.value, src);
    }
    if (rc)
        goto out;
    if (need_nodes && c->n_urls == 0) {
        rc = cli_usage(cmd, "no nodes: give --nodes URL,URL,..., set REDLOCK_NODES, or 'nodes = ...' in a "
                            "config file (--config or $REDLOCK_CONFIG)");
        goto out;
    }

    if ((rc = parse_dur_setting(cmd, c->cli_ttl, "--ttl", &f.ttl, "ttl", path, 0, &c->ttl_ms)) ||
        (rc = parse_dur_setting(cmd, c->cli_wait, "--wait", &f.wait, "wait", path, 1, &c->wait_ms)) ||
        (rc = parse_dur_setting(cmd, c->cli_node_timeout, "--node-timeout", &f.node_timeout, "node_timeout", path, 0,
                                &c->node_timeout_ms)))
        goto out;
    if (c->wait_ms > (int64_t)REDLOCK_MAX_WAIT_MS) {
        /* the library's longest finite wait; longer is "forever" */
        rc = cli_usage(cmd, "--wait must be at most 7d, or forever");
        goto out;
    }
    const char *prefix = c->cli_prefix ? c->cli_prefix : f.key_prefix.value;
    if (prefix && *prefix && !(c->key_prefix = strdup(prefix))) {
        rc = cli_usage(cmd, "out of memory");
        goto out;
    }
    rc = resolve_tls(c, cmd, &f, path);
out:
    conf_free(&f);
    return rc;
}
