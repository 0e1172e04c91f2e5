/* SPDX-License-Identifier: BSD-3-Clause */
/* doctor_report.c: doctor's findings (each with a severity, a check name, a
 * message and a one-line fix) and the reports made of them, as text or as
 * one JSON object (docs/cli.md, "redlock doctor"). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_fix.h"
#include "doctor.h"

static const char *const sev_name[] = { "info", "warn", "severe" };

void doctor_add(doctor *d, int node, int severity, const char *check, const char *fix, const char *fmt, ...)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        finding *g = realloc(d->f, cap * sizeof *g);
        if (!g)
            return;
        d->f = g;
        d->cap = cap;
    }
    finding *f = &d->f[d->n++];
    f->node = node;
    f->severity = severity;
    f->check = check;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    snprintf(f->fix, sizeof f->fix, "%s", fix);
    d->counts[severity]++;
}

int doctor_flag_broken(doctor *d, dnode *n)
{
    if (!n->ctx)
        return 0;
    if (!n->ctx->err)
        return 1;
    /* The checks after a failure would only repeat it: one finding. */
    if (!n->broken) {
        n->broken = 1;
        char why[300];
        if (n->guard.why)
            snprintf(why, sizeof why, "the node sent a reply no Redis server sends (%s)", n->guard.why);
        else
            cli_io_error(n->ctx, why, sizeof why);
        doctor_add(d, n->index, SEV_SEVERE, n->guard.why ? "protocol" : "connection",
                   n->guard.why ? "check that the URL reaches a Redis or Valkey server, and what listens on its port"
                                : "check the node's health and network, or raise --timeout",
                   "%s; the node was not checked further", why);
    }
    return 0;
}

/* A failed connection's finding, by the kind of failure (cli_connect). */
static const struct {
    int fail;
    const char *check;
    const char *fix;           /* NULL: made below, by the failure's detail */
} connect_failures[] = {
    { CLI_FAIL_CONNECT, "unreachable", "check the URL, that the server runs, and that this host may reach it" },
    { CLI_FAIL_PROTOCOL, "unreachable", "check the URL, that the server runs, and that this host may reach it" },
    { CLI_FAIL_AUTH, "auth", NULL },   /* by what the node said: cli_auth_fix */
    { CLI_FAIL_TLS_NAME, "tls", NULL },
    { CLI_FAIL_TLS_CLIENT_CERT, "tls",
      "give a client certificate that the server's tls-ca-cert-file trusts, with --tls-cert and --tls-key" },
    { CLI_FAIL_TLS_EXPIRED, "tls", "renew the server's certificate" },
    { CLI_FAIL_NOT_TLS, "tls", "use redis:// for a plain-text port, or the server's tls-port" },
    { CLI_FAIL_TLS, "tls",
      "give the CA that signed the server's certificate with --tls-ca-file or --tls-ca-dir, and check the "
      "certificate's dates" },
};

void doctor_connect_failed(doctor *d, dnode *n, const char *server_name)
{
    size_t k = 0;  /* an unknown kind counts as unreachable */
    for (size_t i = 0; i < sizeof connect_failures / sizeof connect_failures[0]; i++)
        if (connect_failures[i].fail == n->fail)
            k = i;
    char fix[384];
    if (connect_failures[k].fix)
        snprintf(fix, sizeof fix, "%s", connect_failures[k].fix);
    else if (connect_failures[k].fail == CLI_FAIL_AUTH)
        snprintf(fix, sizeof fix, "%s", cli_auth_fix(n->error));
    else
        snprintf(fix, sizeof fix,
                 "the server's certificate must name %.200s in its subjectAltName: use the name it carries in "
                 "the URL, or --tls-server-name",
                 server_name ? server_name : n->ep.host);
    doctor_add(d, n->index, SEV_SEVERE, connect_failures[k].check, fix, "%s", n->error);
}

/* One node's heading and findings (idx DOCTOR_SET: those about the whole set). */
static void print_node(const doctor *d, int idx)
{
    int any = 0;
    for (size_t k = 0; k < d->n; k++)
        any |= d->f[k].node == idx;
    if (idx == DOCTOR_SET && !any)
        return;
    printf("\n");
    if (idx != DOCTOR_SET) {
        const dnode *nd = &d->nodes[idx];
        printf("node %d  %s", idx, nd->ep.display);
        if (nd->ctx && nd->have_info)
            printf("  (%s %s, %s, run_id %.12s)", nd->server[0] ? nd->server : "server", nd->version,
                   nd->role[0] ? nd->role : "role unknown", nd->run_id);
        printf("\n");
    } else {
        printf("all nodes\n");
    }
    if (!any)
        printf("  ok\n");
    for (size_t k = 0; k < d->n; k++) {
        const finding *f = &d->f[k];
        if (f->node != idx)
            continue;
        const char *tag = f->severity == SEV_SEVERE ? "SEVERE" : f->severity == SEV_WARN ? "WARN" : "info";
        printf("  %-6s  %s [%s]\n", tag, f->message, f->check);
        if (strcmp(f->fix, "none needed") != 0)
            printf("          fix: %s\n", f->fix);
    }
}

void doctor_print_text(const doctor *d)
{
    char p[32];
    size_t n = d->n_nodes;
    printf("redlock doctor: %zu node%s, quorum %zu, clock probe %s\n", n, n == 1 ? "" : "s", d->quorum,
           d->probe_ms ? cli_fmt_duration(d->probe_ms, p, sizeof p) : "off");
    for (size_t i = 0; i < n; i++)
        print_node(d, (int)i);
    print_node(d, DOCTOR_SET);
    printf("\nsummary: %d severe, %d warn, %d info\n", d->counts[SEV_SEVERE], d->counts[SEV_WARN],
           d->counts[SEV_INFO]);
}

void doctor_print_json(const doctor *d)
{
    printf("{\"quorum\":%zu,\"nodes\":[", d->quorum);
    for (size_t i = 0; i < d->n_nodes; i++) {
        const dnode *nd = &d->nodes[i];
        printf("%s{\"index\":%zu,\"url\":", i ? "," : "", i);
        cli_json_string(stdout, nd->ep.display);
        printf(",\"reachable\":%s,\"server\":", nd->ctx ? "true" : "false");
        cli_json_string(stdout, nd->server[0] ? nd->server : NULL);
        printf(",\"version\":");
        cli_json_string(stdout, nd->version[0] ? nd->version : NULL);
        printf(",\"role\":");
        cli_json_string(stdout, nd->role[0] ? nd->role : NULL);
        printf(",\"run_id\":");
        cli_json_string(stdout, nd->run_id[0] ? nd->run_id : NULL);
        printf("}");
    }
    printf("],\"findings\":[");
    for (size_t k = 0; k < d->n; k++) {
        const finding *f = &d->f[k];
        printf("%s{\"node\":", k ? "," : "");
        if (f->node != DOCTOR_SET)
            printf("%d", f->node);
        else
            printf("null");
        printf(",\"severity\":\"%s\",\"check\":\"%s\",\"message\":", sev_name[f->severity], f->check);
        cli_json_string(stdout, f->message);
        printf(",\"fix\":");
        cli_json_string(stdout, f->fix);
        printf("}");
    }
    printf("],\"severe\":%d,\"warn\":%d,\"info\":%d}\n", d->counts[SEV_SEVERE], d->counts[SEV_WARN],
           d->counts[SEV_INFO]);
}
