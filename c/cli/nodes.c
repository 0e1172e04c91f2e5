/* SPDX-License-Identifier: BSD-3-Clause */
/* nodes.c: the nodes and settings as the library sees them, for every
 * subcommand: node URLs checked before anything is contacted (numbered from
 * 0, as the library, status and doctor number them), shown with only their
 * userinfo hidden, and the tool's settings mapped to redlock_options. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* 1 if url starts with a scheme as rl_mask_url reads one: 1 to 16 letters
 * (and '-' after the first, as in redis-cluster), then "://". */
static int has_scheme(const char *url)
{
    const char *sep = strstr(url, "://");
    size_t n = sep ? (size_t)(sep - url) : 0;
    for (size_t i = 0; i < n; i++)
        if (!isalpha((unsigned char)url[i]) && !(i > 0 && url[i] == '-'))
            return 0;
    return n > 0 && n <= 16;
}

void cli_show_url(char *out, size_t size, const char *url)
{
    if (!url || has_scheme(url)) {
        rl_mask_url(out, size, url);
        return;
    }
    /* No scheme, such as "10.0.0.1:6379": shown as rl_mask_url shows what
     * follows a scheme, so that only a userinfo part (up to an '@') is
     * hidden, and nothing without the shape of host[:port][/db]. */
    char with[600], masked[620];
    snprintf(with, sizeof with, "redis://%s", url);
    rl_mask_url(masked, sizeof masked, with);
    const char *shown = masked + strlen("redis://");
    size_t n = strlen(shown);
    if (n >= 3 && !strcmp(shown + n - 3, "***"))
        snprintf(out, size, "***");
    else
        snprintf(out, size, "%s", shown);
}

int cli_nodes_check(const cli_common *c, const char *cmd, int distinct)
{
    size_t n = c->n_urls;
    rl_endpoint *eps = calloc(n ? n : 1, sizeof *eps);
    if (!eps) {
        cli_err(cmd, "out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char err[512], shown[512];
        if (rl_endpoint_parse(&eps[i], c->urls[i], err, sizeof err) == 0)
            continue;
        cli_show_url(shown, sizeof shown, c->urls[i]);
        rc = cli_usage(cmd, "node %zu '%s': %s", i, shown, err);
    }
    /* The library refuses these too; nodes are numbered from 0, as there. */
    for (size_t i = 0; distinct && !rc && i < n; i++)
        for (size_t j = 0; j < i && !rc; j++)
            if (rl_endpoint_same_server(&eps[j], &eps[i]))
                rc = cli_usage(cmd, "node %zu (%s) and node %zu (%s) are the same server; it would be counted "
                                    "twice in the quorum",
                               j, eps[j].display, i, eps[i].display);
    for (size_t i = 0; i < n; i++)
        rl_endpoint_clear(&eps[i]);
    free(eps);
    return rc;
}

void cli_lib_options(const cli_common *c, redlock_options *opts)
{
    redlock_options_init(opts);
    opts->key_prefix = c->key_prefix;
    /* 0 is accepted on the command line; the library's least is 1 ms. */
    if (c->node_timeout_ms >= 0)
        opts->node_timeout_ms = (uint32_t)(c->node_timeout_ms ? c->node_timeout_ms : 1);
    opts->tls_ca_file = c->tls.ca_file;
    opts->tls_ca_dir = c->tls.ca_dir;
    opts->tls_cert_file = c->tls.cert_file;
    opts->tls_key_file = c->tls.key_file;
    opts->tls_server_name = c->tls.server_name;
    opts->tls_insecure_skip_verify = c->tls.insecure ? 1 : 0;
}
