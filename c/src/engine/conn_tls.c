/* SPDX-License-Identifier: BSD-3-Clause */
/* conn_tls.c: a connection's TLS handshake, driven by the engine rather than
 * by hiredis, the client's TLS context, and writes that never raise
 * SIGPIPE. The rules themselves (verification, names) are c/common/tls.c's. */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <hiredis/sds.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "engine.h"

/* hiredis_ssl.h declares this; some compatibility builds of it (hiredict's
 * hiredis shims) only define the name. An identical redeclaration is valid C. */
int redisInitiateSSL(redisContext *c, struct ssl_st *ssl);

/* ---- TLS (see c/common/tls.c for the rules) ----
 * hiredis's redisInitiateSSL starts the handshake; on a non-blocking context
 * it returns as soon as the handshake waits for the server, and hiredis
 * would finish it inside SSL_read/SSL_write, which cannot say whether the
 * socket must become readable or writable. So the handshake is driven here
 * (SSL_do_handshake, polling for what it wants), and the connection is
 * handed to hiredis's reads and writes only once it is complete. */

int rl_tls_client_init(redlock_client *c, const redlock_options *o, char *err, size_t errsize)
{
    int any = 0;
    for (size_t i = 0; i < c->n; i++)
        any |= c->nodes[i].ep.tls;
    if (o->tls_server_name) {
        c->tls_server_name = strdup(o->tls_server_name);
        if (!c->tls_server_name) {
            rl_fmt(err, errsize, "out of memory");
            return REDLOCK_ENOMEM;
        }
    }
    if (!any)
        return 0;
    return rl_tls_ctx_new(&c->tls_ctx, o->tls_ca_file, o->tls_ca_dir, o->tls_cert_file, o->tls_key_file,
                          (int)o->tls_insecure_skip_verify, err, errsize);
}

void rl_tls_client_free(redlock_client *c)
{
    SSL_CTX_free(c->tls_ctx);
    c->tls_ctx = NULL;
    free(c->tls_server_name);
    c->tls_server_name = NULL;
}

static const char *tls_name(const redlock_client *cl, size_t i)
{
    return cl->tls_server_name ? cl->tls_server_name : rl_nodeat(cl, i)->ep.host;
}

/* Continues the handshake: 0 done, 1 waiting (c->tls_want says for what),
 * -1 failed (reason in msg). */
int rl_conn_tls_step(const redlock_client *cl, size_t i, rl_conn *c, char *msg, size_t msgsize)
{
    ERR_clear_error();
    int rv = SSL_do_handshake(c->ssl);
    if (rv == 1)
        return 0;
    int e = SSL_get_error(c->ssl, rv);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->tls_want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 1;
    }
    rl_tls_describe(c->ssl, e, "TLS handshake", tls_name(cl, i), msg, msgsize);
    return -1;
}

/* Starts TLS on a connected socket: 0 (handshake under way or done) or -1. */
int rl_conn_tls_begin(const redlock_client *cl, size_t i, rl_conn *c, char *msg, size_t msgsize)
{
    const char *name = tls_name(cl, i);
    SSL *ssl = rl_tls_ssl_new(cl->tls_ctx, name, (int)cl->opts.tls_insecure_skip_verify, msg, msgsize);
    if (!ssl)
        return -1;
    if (redisInitiateSSL(c->ctx, ssl) != REDIS_OK) {
        /* Its first SSL_connect may already have met the server's answer. */
        if (rl_tls_reason(NULL))
            rl_tls_describe(ssl, SSL_ERROR_SSL, "TLS handshake", name, msg, msgsize);
        else
            rl_fmt(msg, msgsize, "TLS: %s", c->ctx->errstr[0] ? c->ctx->errstr : "cannot start the handshake");
        ERR_clear_error();
        SSL_free(ssl);  /* on failure the SSL object stays ours */
        return -1;
    }
    c->ssl = ssl;
    return 0;
}

/* hiredis writes with send(fd, ..., 0): a node that closed its end makes
 * that raise SIGPIPE, which kills a program that does not ignore it. Plain
 * connections (TCP and unix) write through this instead; TLS ones through
 * OpenSSL, with SIGPIPE blocked for the round (see round.c). */
static ssize_t nosignal_write(redisContext *c)
{
    ssize_t n = send(c->fd, c->obuf, sdslen(c->obuf), MSG_NOSIGNAL);
    if (n >= 0)
        return n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
    c->err = REDIS_ERR_IO;
    snprintf(c->errstr, sizeof c->errstr, "%s", strerror(errno));
    return -1;
}

static pthread_mutex_t plain_funcs_mu = PTHREAD_MUTEX_INITIALIZER;
static redisContextFuncs plain_funcs;
static int plain_funcs_ready;

void rl_conn_nosignal(redisContext *ctx)
{
    pthread_mutex_lock(&plain_funcs_mu);
    if (!plain_funcs_ready) {
        plain_funcs = *ctx->funcs;
        plain_funcs.write = nosignal_write;
        plain_funcs_ready = 1;
    }
    pthread_mutex_unlock(&plain_funcs_mu);
    ctx->funcs = &plain_funcs;
}

/* OpenSSL writes with write(2): a TLS node that closed its end would raise
 * SIGPIPE. Plain connections use MSG_NOSIGNAL instead; around I/O on a TLS
 * client, SIGPIPE is blocked and one that the I/O raised is taken back. */
void rl_sigpipe_block(const redlock_client *cl, rl_sigpipe *g)
{
    g->masked = 0;
    if (!cl->tls_ctx)
        return;
    sigset_t pend;
    sigemptyset(&g->pipe_set);
    sigaddset(&g->pipe_set, SIGPIPE);
    sigpending(&pend);
    g->was_pending = sigismember(&pend, SIGPIPE);
    g->masked = pthread_sigmask(SIG_BLOCK, &g->pipe_set, &g->old_mask) == 0;
}

void rl_sigpipe_restore(rl_sigpipe *g)
{
    if (!g->masked)
        return;
    sigset_t pend;
    if (!g->was_pending && sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE)) {
        struct timespec zero = { 0, 0 };
        sigtimedwait(&g->pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}
