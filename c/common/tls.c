/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.c: the TLS rules shared by the library and the command-line tool: an
 * SSL_CTX that verifies peers, one SSL object per connection with SNI and
 * name or IP checks, and readable reasons for OpenSSL's failures. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "rlcommon.h"


/* An encrypted private key would make OpenSSL prompt on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
    (void)buf; (void)size; (void)rwflag; (void)userdata;
    return 0;
}

const char *rl_tls_reason(unsigned long *code)
{
    unsigned long e = ERR_peek_last_error();
    if (code)
        *code = e;
    if (!e)
        return NULL;
    const char *why = ERR_reason_error_string(e);
    return why ? why : "unknown OpenSSL error";
}

/* OpenSSL says "system lib" for a missing file: check files first, for a useful message. */
static int unreadable(char *err, size_t errsize, const char *what, const char *path)
{
    struct stat st;
    int bad = stat(path, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (!bad) {
        FILE *f = fopen(path, "r");
        if (!f)
            bad = errno;
        else
            fclose(f);
    }
    if (bad)
        rl_fmt(err, errsize, "%s '%.200s': %s", what, path, strerror(bad));
    return bad != 0;
}

static int tls_setup_error(char *err, size_t errsize, const char *what, const char *path)
{
    const char *why = rl_tls_reason(NULL);
    rl_fmt(err, errsize, "%s '%.200s': %s", what, path, why ? why : "cannot be loaded");
    ERR_clear_error();
    return REDLOCK_ETLS;
}

int rl_tls_ctx_new(struct ssl_ctx_st **out, const char *ca_file, const char *ca_dir, const char *cert_file,
                   const char *key_file, int insecure, char *err, size_t errsize)
{
    *out = NULL;
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        rl_fmt(err, errsize, "TLS: cannot create an SSL_CTX: %s", rl_tls_reason(NULL) ? rl_tls_reason(NULL) : "?");
        ERR_clear_error();
        return REDLOCK_ETLS;
    }
    int rc = REDLOCK_ETLS;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* A server that closes without close_notify (killed, restarted) then
     * reads as a plain EOF, handled like one on a plain connection. RESP
     * replies carry their own lengths, so truncation cannot go unnoticed. */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
    if (ca_file || ca_dir) {
        struct stat st;
        /* OpenSSL reads the directory lazily: check it now, not at the first handshake. */
        if (ca_dir && (stat(ca_dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
            rl_fmt(err, errsize, "tls_ca_dir '%.200s': %s", ca_dir,
                   stat(ca_dir, &st) != 0 ? strerror(errno) : "not a directory");
            goto fail;
        }
        if (ca_file && unreadable(err, errsize, "tls_ca_file", ca_file))
            goto fail;
        if (SSL_CTX_load_verify_locations(ctx, ca_file, ca_dir) != 1) {
            rc = tls_setup_error(err, errsize, ca_file ? "tls_ca_file" : "tls_ca_dir", ca_file ? ca_file : ca_dir);
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        rc = tls_setup_error(err, errsize, "the system's CA store", "default");
        goto fail;
    }
    if (cert_file) {
        if (unreadable(err, errsize, "tls_cert_file", cert_file) || unreadable(err, errsize, "tls_key_file", key_file))
            goto fail;
        if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
            rc = tls_setup_error(err, errsize, "tls_cert_file", cert_file);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
            rc = tls_setup_error(err, errsize, "tls_key_file (unencrypted PEM)", key_file);
            goto fail;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            rc = tls_setup_error(err, errsize, "tls_key_file does not match tls_cert_file", key_file);
            goto fail;
        }
    }
    SSL_CTX_set_verify(ctx, insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    ERR_clear_error();
    *out = ctx;
    return 0;
fail:
    SSL_CTX_free(ctx);
    return rc;
}

/* What went wrong in a failed SSL call, into msg. */
void rl_tls_describe(SSL *ssl, int sslerr, const char *what, const char *expected, char *msg, size_t msgsize)
{
    unsigned long code = 0;
    const char *why = rl_tls_reason(&code);
    int saved = errno;
    if (sslerr == SSL_ERROR_SSL && why) {
        long vr = SSL_get_verify_result(ssl);
        if (ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED && vr != X509_V_OK) {
            int name = vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH;
            rl_fmt(msg, msgsize, "%s: certificate verify failed: %s%s%.60s%s", what,
                   X509_verify_cert_error_string(vr), name ? " (expected " : "", name && expected ? expected : "",
                   name ? ")" : "");
        } else {
            int plain = ERR_GET_REASON(code) == SSL_R_WRONG_VERSION_NUMBER ||
                        ERR_GET_REASON(code) == SSL_R_PACKET_LENGTH_TOO_LONG;
            rl_fmt(msg, msgsize, "%s: %s%s", what, why, plain ? " (the port does not speak TLS?)" : "");
        }
    } else if (sslerr == SSL_ERROR_SYSCALL && saved) {
        rl_fmt(msg, msgsize, "%s: %s", what, strerror(saved));
    } else {
        rl_fmt(msg, msgsize, "%s: connection closed by the server", what);
    }
    ERR_clear_error();
}

static int is_ip_literal(const char *name)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

struct ssl_st *rl_tls_ssl_new(struct ssl_ctx_st *ctx, const char *name, int insecure, char *msg, size_t msgsize)
{
    char addr[INET6_ADDRSTRLEN + 1];
    /* An IPv6 literal may carry a zone ("fe80::1%eth0"); certificates don't. */
    size_t n = strcspn(name, "%");
    int ip = 0;
    if (n < sizeof addr) {
        memcpy(addr, name, n);
        addr[n] = '\0';
        ip = is_ip_literal(addr);
    }
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    int ok = ssl != NULL;
    /* SNI carries host names only (RFC 6066). */
    if (ok && !ip)
        ok = SSL_set_tlsext_host_name(ssl, name) == 1;
    if (ok && !insecure) {
        if (ip) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), addr) == 1;
        } else {
            SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = SSL_set1_host(ssl, name) == 1;
        }
    }
    if (!ok) {
        const char *why = rl_tls_reason(NULL);
        rl_fmt(msg, msgsize, "TLS setup for '%.60s': %s", name, why ? why : "out of memory");
        ERR_clear_error();
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}
