/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.c: TLS for the direct hiredis connections of 'redlock status' and
 * 'redlock doctor', with the rules the library applies to its own (see
 * docs/security.md): the chain verified against --tls-ca-file/--tls-ca-dir
 * or the system's CAs, the certificate's name or IP checked against
 * --tls-server-name or the URL's host, TLS 1.2 or newer.
 *
 * hiredis's redisCreateSSLContext checks no name, so the SSL_CTX is ours and
 * each connection gets its own SSL object, named with SSL_set1_host or
 * X509_VERIFY_PARAM_set1_ip_asc, handed to redisInitiateSSL. The context is
 * blocking with socket timeouts set, so the handshake inside
 * redisInitiateSSL is bounded like every other read. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "cli.h"

/* hiredis_ssl.h declares this; some compatibility builds of it (hiredict's
 * hiredis shims) only define the name. An identical redeclaration is valid C. */
int redisInitiateSSL(redisContext *c, struct ssl_st *ssl);

void cli_tls_free(cli_tls *t)
{
    free(t->ca_file);
    free(t->ca_dir);
    free(t->cert_file);
    free(t->key_file);
    free(t->server_name);
    memset(t, 0, sizeof *t);
}

void cli_tls_ctx_free(struct ssl_ctx_st *ctx)
{
    SSL_CTX_free(ctx);
}


int cli_tls_prepare(cli_common *c, const redlock_options *opts, const char *cmd)
{
    int any = 0;
    for (size_t i = 0; i < c->n_urls && !any; i++) {
        rl_endpoint ep;
        char err[256];
        if (rl_endpoint_parse(&ep, c->urls[i], err, sizeof err) == 0)
            any = ep.tls;
        rl_endpoint_clear(&ep);
    }
    if (!any)
        return 0;

    /* The library's own rules and messages (the files were checked for
     * readability by cli_common_resolve; what fails here is their content). */
    char err[512];
    int rc = rl_tls_ctx_new(&c->tls_ctx, opts->tls_ca_file, opts->tls_ca_dir, opts->tls_cert_file,
                            opts->tls_key_file, opts->tls_insecure_skip_verify, err, sizeof err);
    if (rc) {
        cli_err(cmd, "%s", err);
        return rc == REDLOCK_ENOMEM ? CLI_EXIT_SOFTWARE : CLI_EXIT_USAGE;
    }
    return 0;
}

/* Why the handshake in redisInitiateSSL failed. It keeps only OpenSSL's
 * reason; the error queue, the verify result and errno still say more. */
static int describe_failure(SSL *ssl, redisContext *ctx, int saved_errno, const char *expected, char *err,
                            size_t errsize)
{
    unsigned long code = 0;
    const char *why = rl_tls_reason(&code);
    long vr = SSL_get_verify_result(ssl);
    int fail = CLI_FAIL_TLS;
    if (why && ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED && vr != X509_V_OK) {
        int name = vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH;
        snprintf(err, errsize, "TLS handshake: certificate verify failed: %s%s%.253s%s",
                 X509_verify_cert_error_string(vr), name ? " (expected " : "", name ? expected : "",
                 name ? ")" : "");
        fail = name ? CLI_FAIL_TLS_NAME : vr == X509_V_ERR_CERT_HAS_EXPIRED ? CLI_FAIL_TLS_EXPIRED : CLI_FAIL_TLS;
    } else if (why) {
        int plain = ERR_GET_REASON(code) == SSL_R_WRONG_VERSION_NUMBER ||
                    ERR_GET_REASON(code) == SSL_R_PACKET_LENGTH_TOO_LONG;
        snprintf(err, errsize, "TLS handshake: %s%s", why, plain ? " (the port does not speak TLS?)" : "");
        fail = plain ? CLI_FAIL_NOT_TLS : CLI_FAIL_TLS;
    } else if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK) {
        snprintf(err, errsize, "TLS handshake: timed out (does the port speak TLS?)");
        fail = CLI_FAIL_NOT_TLS;
    } else if (saved_errno) {
        snprintf(err, errsize, "TLS handshake: %s", strerror(saved_errno));
    } else if (ctx->err && ctx->errstr[0]) {
        snprintf(err, errsize, "TLS handshake: %s", ctx->errstr);
    } else {
        snprintf(err, errsize, "TLS handshake: connection closed by the server");
    }
    ERR_clear_error();
    return fail;
}

int cli_tls_start(const cli_common *c, redisContext *ctx, const char *host, char *err, size_t errsize, int *fail)
{
    *fail = CLI_FAIL_TLS;
    if (!c->tls_ctx) {
        snprintf(err, errsize, "TLS: no TLS context (internal error)");
        return -1;
    }
    const char *name = c->tls.server_name ? c->tls.server_name : host;
    SSL *ssl = rl_tls_ssl_new(c->tls_ctx, name, c->tls.insecure, err, errsize);
    if (!ssl)
        return -1;
    errno = 0;
    if (redisInitiateSSL(ctx, ssl) != REDIS_OK) {
        int saved = errno;
        *fail = describe_failure(ssl, ctx, saved, name, err, errsize);
        SSL_free(ssl);  /* on failure the SSL object stays ours */
        return -1;
    }
    ERR_clear_error();
    /* In TLS 1.3 a server that wants a client certificate and got none says
     * so after the handshake, at the first read: one round trip finds out
     * here, so that the failure is reported as what it is. Any reply will
     * do, even an error (NOAUTH, NOPERM). */
    char why[256];
    redisReply *r = NULL;
    int kind = redisAppendCommand(ctx, "PING") == REDIS_OK ? cli_read_reply(ctx, &r, why, sizeof why)
                                                            : cli_io_error(ctx, why, sizeof why);
    if (kind == 0) {
        rl_reply_free(r);
        return 0;
    }
    if (kind == CLI_FAIL_CONNECT && !strcmp(why, "timed out")) {
        snprintf(err, errsize, "timed out after the TLS handshake");
        *fail = CLI_FAIL_CONNECT;
    } else if (kind != CLI_FAIL_CONNECT) {
        snprintf(err, errsize, "%s", why);  /* a TLS reason, or a protocol error */
        *fail = kind;
    } else {
        snprintf(err, errsize, "TLS: connection lost right after the handshake: %s%s", why,
                 c->tls.cert_file ? ""
                                  : " (a server that requires a client certificate does this: --tls-cert, "
                                    "--tls-key)");
        *fail = c->tls.cert_file ? CLI_FAIL_TLS : CLI_FAIL_TLS_CLIENT_CERT;
    }
    return -1;
}

int cli_io_error(const redisContext *ctx, char *err, size_t errsize)
{
    unsigned long code;
    const char *why = rl_tls_reason(&code);
    if (why) {
        /* hiredis keeps only errno's text of a failed SSL_read/SSL_write;
         * OpenSSL's queue has the reason, such as the server's alert. */
        int alert_cert = ERR_GET_REASON(code) == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED;
        snprintf(err, errsize, "TLS: %s%s", why,
                 alert_cert ? " (the server requires a client certificate: --tls-cert, --tls-key)" : "");
        ERR_clear_error();
        return alert_cert ? CLI_FAIL_TLS_CLIENT_CERT : CLI_FAIL_TLS;
    }
    if (strstr(ctx->errstr, "temporarily unavailable") || strstr(ctx->errstr, "timed out"))
        /* hiredis reports a read timeout as EAGAIN's text. */
        snprintf(err, errsize, "timed out");
    else
        snprintf(err, errsize, "%s", ctx->errstr[0] ? ctx->errstr : "connection lost");
    return CLI_FAIL_CONNECT;
}
