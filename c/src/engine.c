/* engine.c: per-node connection pools and one multiplexed round: a command
 * is sent to every node at once over non-blocking hiredis contexts, and one
 * poll() loop reads the replies until the outcome is decided. TLS
 * connections do their handshake inside that loop too. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <hiredis/sds.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "internal.h"


/* hiredis_ssl.h declares this; some compatibility builds of it (hiredict's
 * hiredis shims) only define the name. An identical redeclaration is valid C. */
int redisInitiateSSL(redisContext *c, struct ssl_st *ssl);

/* Every reply a connection still owes, in order. Replies owed to a round
 * that was decided without them are dropped by the connection's next user;
 * a dropped NOSCRIPT for a release or extension is re-sent as EVAL, so a
 * straggler still gets the command after SCRIPT FLUSH. */
typedef enum { EXP_DROP, EXP_DROP_SCRIPT, EXP_AUTH, EXP_SELECT, EXP_MAIN } exp_kind;

typedef struct rl_expect {
    unsigned char kind;     /* exp_kind */
    unsigned char cmd;      /* rl_cmd, for EXP_DROP_SCRIPT */
    uint32_t ttl_ms;
    char *key;              /* owned copy, EXP_DROP_SCRIPT only */
    size_t key_len;
    char value[RL_VALUE_HEX + 1];
} rl_expect;

#define RL_PIPE_MAX 32

struct rl_conn {
    redisContext *ctx;
    int connecting;         /* non-blocking connect not yet confirmed */
    int handshaking;        /* TLS handshake under way (driven here, not by hiredis) */
    short tls_want;         /* POLLIN or POLLOUT: what the handshake waits for */
    SSL *ssl;               /* owned by ctx once handed over; NULL for plain connections */
    int head, len;          /* FIFO of owed replies */
    pid_t pid;              /* process that opened it: a forked child must not share it */
    int stalled;            /* a command on it timed out, and no reply came since */
    rl_expect q[RL_PIPE_MAX];
};

typedef struct slot {
    rl_conn *c;
    int reused;      /* came from the pool */
    int retried;     /* a stale pooled connection was replaced once */
    int wpending;    /* output not fully written */
    int got_reply;
    int eval_sent;   /* our script command went as EVAL: NOSCRIPT cannot follow */
    int broken;      /* never return to the pool */
    int suspect;     /* the node timed out lately */
    int kept;        /* timed out with the command written: the connection
                      * is kept for what may still come (see rl_round_run) */
    int was_stalled; /* the connection came stalled into this round */
    int64_t deadline;
} slot;

static rl_expect *q_push(rl_conn *c, exp_kind kind)
{
    if (c->len >= RL_PIPE_MAX)
        return NULL;
    rl_expect *e = &c->q[(c->head + c->len++) % RL_PIPE_MAX];
    memset(e, 0, sizeof *e);
    e->kind = (unsigned char)kind;
    return e;
}

static rl_expect *q_front(rl_conn *c)
{
    return c->len ? &c->q[c->head] : NULL;
}

static void q_pop(rl_conn *c)
{
    rl_expect *e = &c->q[c->head];
    free(e->key);
    e->key = NULL;
    c->head = (c->head + 1) % RL_PIPE_MAX;
    c->len--;
}

/* 1 if the connection still owes a reply to the round using it now. */
static int q_has_mine(const rl_conn *c)
{
    for (int k = 0; k < c->len; k++) {
        unsigned char kind = c->q[(c->head + k) % RL_PIPE_MAX].kind;
        if (kind == EXP_AUTH || kind == EXP_SELECT || kind == EXP_MAIN)
            return 1;
    }
    return 0;
}

const char rl_script_release[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const char rl_script_extend[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
/* Fencing (docs/fencing.md). KEYS[2] is the counter. Acquire: SET NX PX and,
 * if it was set, the counter in the same step (0 when the key is missing).
 * Commit: raise the counter to ARGV[2] if the lock is still ours. Counters
 * are compared as decimal strings, since Lua numbers are doubles. */
const char rl_script_acquire_fenced[] =
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "return redis.call('get', KEYS[2]) or '0' end return false";
const char rl_script_fence_commit[] =
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end "
    "local c = redis.call('get', KEYS[2]) "
    "if not c or #c < #ARGV[2] or (#c == #ARGV[2] and c < ARGV[2]) then redis.call('set', KEYS[2], ARGV[2]) end "
    "return 1";
char rl_sha_release[41];
char rl_sha_extend[41];
char rl_sha_acquire_fenced[41];
char rl_sha_fence_commit[41];

/* The same two scripts as a Redis 7 function library, for REDLOCK_OPT_FUNCTIONS:
 * loaded once by an administrator, so lock users need FCALL but not EVAL. */
const char rl_function_library[] =
    "#!lua name=redlock\n"
    "redis.register_function('redlock_release', function(keys, args)\n"
    "  if redis.call('get', keys[1]) == args[1] then return redis.call('del', keys[1]) end\n"
    "  return 0\n"
    "end)\n"
    "redis.register_function('redlock_extend', function(keys, args)\n"
    "  if redis.call('get', keys[1]) == args[1] then return redis.call('pexpire', keys[1], args[2]) end\n"
    "  return 0\n"
    "end)\n"
    "redis.register_function('redlock_acquire_fenced', function(keys, args)\n"
    "  if redis.call('set', keys[1], args[1], 'NX', 'PX', args[2]) then\n"
    "    return redis.call('get', keys[2]) or '0'\n"
    "  end\n"
    "  return false\n"
    "end)\n"
    "redis.register_function('redlock_fence_commit', function(keys, args)\n"
    "  if redis.call('get', keys[1]) ~= args[1] then return 0 end\n"
    "  local c = redis.call('get', keys[2])\n"
    "  if not c or #c < #args[2] or (#c == #args[2] and c < args[2]) then redis.call('set', keys[2], args[2]) end\n"
    "  return 1\n"
    "end)\n";

static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;
static void scripts_init_once(void)
{
    rl_sha1_hex(rl_script_release, rl_sha_release);
    rl_sha1_hex(rl_script_extend, rl_sha_extend);
    rl_sha1_hex(rl_script_acquire_fenced, rl_sha_acquire_fenced);
    rl_sha1_hex(rl_script_fence_commit, rl_sha_fence_commit);
}
void rl_scripts_init(void)
{
    pthread_once(&scripts_once, scripts_init_once);
}

static void conn_free(rl_conn *c)
{
    if (!c)
        return;
    while (c->len)
        q_pop(c);
    if (c->ctx && c->ctx->fd >= 0 && !c->connecting && c->pid == getpid()) {
        /* Closing a socket with unread data sends RST instead of FIN, and a
         * server that gets RST may drop commands it has not run yet, such as
         * the release just written. Drop what has arrived first: whatever
         * arrives later answers a command the server has already run. */
        char sink[4096];
        while (recv(c->ctx->fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
    }
    redisFree(c->ctx);
    free(c);
}

void rl_node_init(rl_node *node)
{
    pthread_mutex_init(&node->mu, NULL);
    node->n_idle = 0;
    atomic_init(&node->retry_after_us, 0);
    atomic_init(&node->backoff_ms, 0);
    atomic_init(&node->suspect, 0);
}

/* Reads the replies a pooled connection still owes, until deadline_us.
 * Commands already written are then known to have run before the close;
 * closing with replies unread could abort them (see conn_free). */
static int drop_owed(rl_conn *c, redisReply *rep);

static void conn_settle(rl_conn *c, int64_t deadline_us)
{
    while (c->len > 0 && !c->connecting && !c->handshaking && c->pid == getpid()) {
        void *rep = NULL;
        int done = 0;
        /* A release re-sent after NOSCRIPT may still wait to be written. */
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK || redisGetReply(c->ctx, &rep) != REDIS_OK)
            return;
        if (rep) {
            int rc = drop_owed(c, rep);
            freeReplyObject(rep);
            if (rc < 0)
                return;
            continue;
        }
        int64_t left = deadline_us - rl_now_us();
        if (left <= 0)
            return;
        struct pollfd p = { .fd = c->ctx->fd, .events = POLLIN, .revents = 0 };
        if (poll(&p, 1, (int)((left + 999) / 1000)) <= 0 || redisBufferRead(c->ctx) != REDIS_OK)
            return;
    }
}

void rl_node_settle(rl_node *node, int64_t deadline_us)
{
    for (int i = 0; i < node->n_idle; i++)
        conn_settle(node->idle[i], deadline_us);
}

void rl_node_destroy(rl_node *node)
{
    for (int i = 0; i < node->n_idle; i++)
        conn_free(node->idle[i]);
    node->n_idle = 0;
    pthread_mutex_destroy(&node->mu);
    rl_endpoint_clear(&node->ep);
}

static rl_conn *checkout(rl_node *node)
{
    rl_conn *c = NULL;
    pthread_mutex_lock(&node->mu);
    if (node->n_idle > 0)
        c = node->idle[--node->n_idle];
    pthread_mutex_unlock(&node->mu);
    return c;
}

static void checkin(rl_node *node, rl_conn *c)
{
    pthread_mutex_lock(&node->mu);
    if (node->n_idle < RL_POOL_IDLE_MAX) {
        node->idle[node->n_idle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&node->mu);
    conn_free(c);
}

/* One stale pooled connection usually means the server restarted and all
 * of them are stale: drop them together. */
static void flush_idle(rl_node *node)
{
    rl_conn *old[RL_POOL_IDLE_MAX];
    int n;
    pthread_mutex_lock(&node->mu);
    n = node->n_idle;
    memcpy(old, node->idle, sizeof(rl_conn *) * (size_t)n);
    node->n_idle = 0;
    pthread_mutex_unlock(&node->mu);
    for (int i = 0; i < n; i++)
        conn_free(old[i]);
}

static void node_backoff(rl_node *node, int64_t now)
{
    uint32_t b = atomic_load(&node->backoff_ms);
    b = b ? (b * 2 > RL_BACKOFF_MAX_MS ? RL_BACKOFF_MAX_MS : b * 2) : RL_BACKOFF_MIN_MS;
    atomic_store(&node->backoff_ms, b);
    atomic_store(&node->retry_after_us, now + (int64_t)b * 1000);
}

static void node_healthy(rl_node *node)
{
    if (atomic_load_explicit(&node->suspect, memory_order_relaxed))
        atomic_store(&node->suspect, 0);
    if (atomic_load_explicit(&node->backoff_ms, memory_order_relaxed) != 0) {
        atomic_store(&node->backoff_ms, 0);
        atomic_store(&node->retry_after_us, 0);
    }
}

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
/* Continues the handshake: 0 done, 1 waiting (c->tls_want says for what),
 * -1 failed (reason in msg). */
static int tls_step(const redlock_client *cl, const rl_node *node, rl_conn *c, char *msg, size_t msgsize)
{
    ERR_clear_error();
    int rv = SSL_do_handshake(c->ssl);
    if (rv == 1) {
        c->handshaking = 0;
        return 0;
    }
    int e = SSL_get_error(c->ssl, rv);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->tls_want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 1;
    }
    rl_tls_describe(c->ssl, e, "TLS handshake", cl->tls_server_name ? cl->tls_server_name : node->ep.host,
                 msg, msgsize);
    return -1;
}
/* Starts TLS on a connected socket: 0 (handshake under way or done) or -1. */
static int tls_begin(const redlock_client *cl, const rl_node *node, rl_conn *c, char *msg, size_t msgsize)
{
    const char *name = cl->tls_server_name ? cl->tls_server_name : node->ep.host;
    SSL *ssl = rl_tls_ssl_new(cl->tls_ctx, name, (int)cl->opts.tls_insecure_skip_verify, msg, msgsize);
    if (!ssl)
        return -1;
    if (redisInitiateSSL(c->ctx, ssl) != REDIS_OK) {
        /* Its first SSL_connect may already have met the server's answer.
         * hiredis keeps only the error's reason; OpenSSL still has it all. */
        if (rl_tls_reason(NULL))
            rl_tls_describe(ssl, SSL_ERROR_SSL, "TLS handshake", name, msg, msgsize);
        else
            rl_fmt(msg, msgsize, "TLS: %s", c->ctx->errstr[0] ? c->ctx->errstr : "cannot start the handshake");
        ERR_clear_error();
        SSL_free(ssl);  /* on failure the SSL object stays ours */
        return -1;
    }
    c->ssl = ssl;
    c->handshaking = 1;
    return tls_step(cl, node, c, msg, msgsize) < 0 ? -1 : 0;
}

/* hiredis writes with send(fd, ..., 0): a node that closed its end makes
 * that raise SIGPIPE, which kills a program that does not ignore it. Plain
 * connections (TCP and unix) write through this instead; TLS ones through
 * OpenSSL, with SIGPIPE blocked for the round (see rl_round_run). */
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

/* Every plain context gets hiredis's one table of functions: copy it once,
 * with our write in it. */
static void use_nosignal_write(redisContext *ctx)
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

static int conn_open(rl_node *node, rl_conn **out, char *msg, size_t msgsize)
{
    redisOptions o;
    memset(&o, 0, sizeof o);
    if (node->ep.path)
        REDIS_OPTIONS_SET_UNIX(&o, node->ep.path);
    else
        REDIS_OPTIONS_SET_TCP(&o, node->ep.host, node->ep.port);
    o.options |= REDIS_OPT_NONBLOCK;

    rl_conn *c = calloc(1, sizeof *c);
    if (!c) {
        rl_fmt(msg, msgsize, "out of memory");
        return REDLOCK_ENOMEM;
    }
    c->ctx = redisConnectWithOptions(&o);
    if (!c->ctx) {
        free(c);
        rl_fmt(msg, msgsize, "out of memory");
        return REDLOCK_ENOMEM;
    }
    if (c->ctx->err) {
        rl_fmt(msg, msgsize, "connect: %s", c->ctx->errstr);
        conn_free(c);
        return REDLOCK_EIO;
    }
    if (!node->ep.path) {
        int one = 1;
        /* Each round is one small write per node; Nagle would hold it back. */
        setsockopt(c->ctx->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    /* hiredis doesn't set close-on-exec: a program this process runs must
     * not inherit the node connections. */
    fcntl(c->ctx->fd, F_SETFD, fcntl(c->ctx->fd, F_GETFD) | FD_CLOEXEC);
    use_nosignal_write(c->ctx);
    c->pid = getpid();
    c->connecting = 1;
    *out = c;
    return 0;
}

/* How release and extend reach the scripts. */
enum { VIA_EVALSHA, VIA_EVAL, VIA_FCALL };

/* The script commands, each in its three forms: a function of the
 * "redlock" library (FCALL), the script body (EVAL) or its SHA1 (EVALSHA). */
static int script_of(rl_cmd cmd, const char **function, const char **body, const char **sha)
{
    switch (cmd) {
    case RL_CMD_EXTEND:
        *function = "redlock_extend", *body = rl_script_extend, *sha = rl_sha_extend;
        return 1;
    case RL_CMD_RELEASE:
        *function = "redlock_release", *body = rl_script_release, *sha = rl_sha_release;
        return 1;
    case RL_CMD_SET_FENCED:
        *function = "redlock_acquire_fenced", *body = rl_script_acquire_fenced, *sha = rl_sha_acquire_fenced;
        return 2;
    case RL_CMD_FENCE_COMMIT:
        *function = "redlock_fence_commit", *body = rl_script_fence_commit, *sha = rl_sha_fence_commit;
        return 2;
    default:
        return 0;
    }
}

/* Formats one command in RESP; returns its length, or -1. Free *out with
 * redisFreeCommand. Scripts get KEYS = key (and fkey when they take two),
 * ARGV = value, then the TTL (extend, fenced acquire) or the token (commit). */
static long long format_cmd(char **out, rl_cmd cmd, int via, const char *key, size_t key_len,
                            const char *value, uint32_t ttl_ms, const char *fkey, size_t fkey_len,
                            const char *token)
{
    if (cmd == RL_CMD_SET)
        return redisFormatCommand(out, "SET %b %s NX PX %u", key, key_len, value, ttl_ms);
    if (cmd == RL_CMD_LOAD_FUNCTIONS)
        return redisFormatCommand(out, "FUNCTION LOAD REPLACE %s", rl_function_library);
    const char *function, *body, *sha, *argv[8];
    size_t len[8];
    char ttl[16];
    int nkeys = script_of(cmd, &function, &body, &sha), n = 0;
    if (!nkeys)
        return -1;
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    argv[n++] = via == VIA_FCALL ? "FCALL" : via == VIA_EVAL ? "EVAL" : "EVALSHA";
    argv[n++] = via == VIA_FCALL ? function : via == VIA_EVAL ? body : sha;
    argv[n++] = nkeys == 2 ? "2" : "1";
    len[n] = key_len, argv[n++] = key;
    if (nkeys == 2)
        len[n] = fkey_len, argv[n++] = fkey;
    argv[n++] = value;
    if (cmd == RL_CMD_EXTEND || cmd == RL_CMD_SET_FENCED)
        argv[n++] = ttl;
    else if (cmd == RL_CMD_FENCE_COMMIT)
        argv[n++] = token;
    for (int k = 0; k < n; k++)
        if (k < 3 || k > 2 + nkeys)
            len[k] = strlen(argv[k]);
    return redisFormatCommandArgv(out, n, argv, len);
}

static int append_cmd(redisContext *ctx, rl_cmd cmd, int via, const char *key, size_t key_len,
                      const char *value, uint32_t ttl_ms)
{
    char *buf = NULL;
    long long len = format_cmd(&buf, cmd, via, key, key_len, value, ttl_ms, NULL, 0, NULL);
    int rc = len < 0 ? REDIS_ERR : redisAppendFormattedCommand(ctx, buf, (size_t)len);
    redisFreeCommand(buf);
    return rc == REDIS_OK ? 0 : -1;
}

/* Consumes one reply owed to an earlier round (the front of the queue is
 * EXP_DROP or EXP_DROP_SCRIPT). A NOSCRIPT for a release or extension means
 * it never ran here: it is queued again with the script body, and that
 * reply is dropped too. 1 when something was queued to write, 0, or -1 if
 * the connection can no longer be used. */
static int drop_owed(rl_conn *c, redisReply *rep)
{
    rl_expect *e = q_front(c);
    if (!e || (e->kind != EXP_DROP && e->kind != EXP_DROP_SCRIPT))
        return -1;
    if (e->kind == EXP_DROP_SCRIPT && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
        rl_expect saved = *e;
        e->key = NULL;
        q_pop(c);
        int rc = append_cmd(c->ctx, saved.cmd, VIA_EVAL, saved.key, saved.key_len, saved.value, saved.ttl_ms) != 0 ||
                         !q_push(c, EXP_DROP)
                     ? -1
                     : 1;
        free(saved.key);
        return rc;
    }
    q_pop(c);
    return 0;
}

/* Reads, without waiting, the replies a connection owes to earlier rounds
 * (it must owe nothing to a round in progress). A node that answers late
 * then never piles its replies up: a connection closed with replies still
 * arriving would answer them with RST, and the node could drop commands it
 * had not read yet, such as a release. -1 if the connection broke. */
static int conn_absorb(rl_conn *c)
{
    if (!c->len || c->connecting || c->handshaking || c->pid != getpid())
        return 0;
    if (c->ssl)
        ERR_clear_error();
    if (redisBufferRead(c->ctx) != REDIS_OK)
        return -1;
    int queued = 0;
    for (;;) {
        void *rep = NULL;
        if (redisGetReply(c->ctx, &rep) != REDIS_OK)
            return -1;
        if (!rep)
            break;
        int rc = drop_owed(c, rep);
        freeReplyObject(rep);
        if (rc < 0)
            return -1;
        queued |= rc;
        c->stalled = 0;
    }
    int done = 0;
    if (queued && redisBufferWrite(c->ctx, &done) != REDIS_OK)
        return -1;
    return 0;
}

/* 1 for the commands that run a script by EVALSHA/EVAL (and may meet NOSCRIPT). */
static int is_script_cmd(const rl_round *r)
{
    return r->cmd != RL_CMD_SET && r->cmd != RL_CMD_LOAD_FUNCTIONS && !r->via_fcall;
}

/* 1 for the script commands still worth running when their round is over:
 * a late release or extension; never a late acquisition or token commit. */
static int resend_late(const rl_round *r)
{
    return (r->cmd == RL_CMD_EXTEND || r->cmd == RL_CMD_RELEASE) && !r->via_fcall;
}

static int is_acquire(const rl_round *r)
{
    return r->cmd == RL_CMD_SET || r->cmd == RL_CMD_SET_FENCED;
}

static int append_main(rl_round *r, slot *s, int use_eval)
{
    int via = r->via_fcall ? VIA_FCALL : use_eval ? VIA_EVAL : VIA_EVALSHA;
    /* Every node gets the same bytes: format once per round, not per node
     * (formatting was most of the library's own CPU time). */
    if (!r->fmt[via]) {
        long long len = format_cmd(&r->fmt[via], r->cmd, via, r->key, r->key_len, r->value, r->ttl_ms,
                                   r->fkey, r->fkey_len, r->token);
        if (len < 0)
            return -1;
        r->fmt_len[via] = (size_t)len;
    }
    if (!q_push(s->c, EXP_MAIN) ||
        redisAppendFormattedCommand(s->c->ctx, r->fmt[via], r->fmt_len[via]) != REDIS_OK)
        return -1;
    if (via == VIA_EVAL && is_script_cmd(r))
        s->eval_sent = 1;
    s->wpending = 1;
    return 0;
}

static int queue_cmds(const rl_node *node, rl_round *r, slot *s, int fresh)
{
    redisContext *ctx = s->c->ctx;
    if (fresh) {
        if (node->ep.password) {
            int rc = node->ep.user
                ? redisAppendCommand(ctx, "AUTH %s %s", node->ep.user, node->ep.password)
                : redisAppendCommand(ctx, "AUTH %s", node->ep.password);
            if (rc != REDIS_OK || !q_push(s->c, EXP_AUTH))
                return -1;
        }
        if (node->ep.db) {
            if (redisAppendCommand(ctx, "SELECT %d", node->ep.db) != REDIS_OK || !q_push(s->c, EXP_SELECT))
                return -1;
        }
    }
    /* No SCRIPT LOAD: a lock user needs no SCRIPT permission, and no denied
     * command lands in the server's ACL LOG. Instead, a script command goes
     * as EVAL (which caches the script) where a NOSCRIPT could not be
     * answered in this round: on a new connection, whose server may never
     * have seen the script, and in a send-and-forget round. Elsewhere
     * EVALSHA, with EVAL again after a NOSCRIPT. */
    /* ... and where the round won't wait for the answer: nodes that timed
     * out lately get EVAL too, so a detached command can never be stranded
     * by NOSCRIPT. */
    return append_main(r, s, fresh || r->no_wait || s->suspect);
}

static void finish(rl_round *r, size_t i, slot *s, rl_outcome out, int64_t now)
{
    r->out[i] = out;
    r->rtt_us[i] = now - r->start_us;
    if (out != RL_YES && out != RL_NO && out != RL_ERR_SERVER)
        s->broken = 1;
}

static int flush_out(slot *s)
{
    int done = 0;
    if (s->c->connecting || s->c->handshaking || !s->wpending)
        return 0;
    if (s->c->ssl)
        ERR_clear_error();  /* what is queued after a failure is this write's */
    if (redisBufferWrite(s->c->ctx, &done) == REDIS_ERR)
        return -1;
    s->wpending = !done;
    return 0;
}

/* Starts (or restarts) a node's part of the round on a fresh connection. */
static void start_fresh(redlock_client *cl, rl_round *r, size_t i, slot *s, int64_t now)
{
    rl_node *node = &cl->nodes[i];
    int rc = conn_open(node, &s->c, r->msg[i], RL_NODE_MSG_MAX);
    if (rc) {
        if (rc == REDLOCK_EIO)
            node_backoff(node, now);
        finish(r, i, s, RL_ERR_IO, now);
        return;
    }
    s->reused = 0;
    s->got_reply = s->eval_sent = 0;
    int64_t d = now + ((int64_t)cl->opts.node_timeout_ms + cl->opts.connect_timeout_ms) * 1000;
    s->deadline = (r->cap_us && d > r->cap_us) ? r->cap_us : d;
    if (queue_cmds(node, r, s, 1) != 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "out of memory");
        finish(r, i, s, RL_ERR_IO, now);
    }
}

static void start_slot(redlock_client *cl, rl_round *r, size_t i, slot *s, int64_t now)
{
    rl_node *node = &cl->nodes[i];
    if (r->skip[i]) {
        r->out[i] = RL_UNSENT;
        return;
    }
    int64_t after = atomic_load(&node->retry_after_us);
    if (after > now) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "unreachable, next reconnect in %lld ms",
               (long long)((after - now + 999) / 1000));
        r->out[i] = RL_ERR_DOWN;
        return;
    }
    int pinned = 0;
    if (r->pinned && r->pinned[i]) {
        /* This lock's earlier command may still be in flight here: follow
         * it on the same connection so the node sees them in order. */
        s->c = r->pinned[i];
        r->pinned[i] = NULL;
        pinned = 1;
    } else {
        s->c = checkout(node);
    }
    if (s->c && s->c->pid != getpid()) {
        /* Inherited across fork(): the parent still uses this socket, and a
         * reply meant for it could be read here. Drop our copy only. */
        conn_free(s->c);
        s->c = NULL;
    } else if (s->c && conn_absorb(s->c) != 0) {
        /* Broke while idle (server restarted, closed it): a new one. */
        conn_free(s->c);
        s->c = NULL;
    } else if (s->c && (pinned ? s->c->len > RL_PIPE_MAX - 4 : s->c->len > RL_PIPE_MAX / 2)) {
        /* Owes many replies (a node that stopped answering): start over.
         * A pinned connection is kept much longer, because a new one could
         * overtake this lock's commands still queued on it (at worst a key
         * then lives out its TTL); half the queue is left for them. */
        conn_free(s->c);
        s->c = NULL;
    }
    if (!s->c) {
        start_fresh(cl, r, i, s, now);
        return;
    }
    s->reused = 1;
    s->was_stalled = s->c->stalled;
    int64_t d = r->start_us + (int64_t)cl->opts.node_timeout_ms * 1000;
    s->deadline = (r->cap_us && d > r->cap_us) ? r->cap_us : d;
    if (queue_cmds(node, r, s, 0) != 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "out of memory");
        finish(r, i, s, RL_ERR_IO, now);
        return;
    }
    if (flush_out(s) != 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "write: %s", s->c->ctx->errstr);
        finish(r, i, s, RL_ERR_IO, now);
    }
}

/* An I/O failure. A pooled connection that fails before any reply was
 * read was most likely stale (the server restarted); replace it once. The
 * command may have reached the old server, which is harmless: SET NX then
 * answers "held", and the scripts compare before acting. */
static void io_fail(redlock_client *cl, rl_round *r, size_t i, slot *s, const char *what, int64_t now)
{
    if (s->reused && !s->got_reply && !s->retried && now < s->deadline) {
        conn_free(s->c);
        s->c = NULL;
        flush_idle(&cl->nodes[i]);
        s->retried = 1;
        start_fresh(cl, r, i, s, now);
        return;
    }
    if (s->c->ssl && !rl_tls_reason(NULL) && !s->got_reply) {
        /* A server that rejects the client after the handshake (no client
         * certificate, TLS 1.3) sends an alert and resets the connection;
         * the alert may still wait to be read. */
        char sink[256];
        SSL_read(s->c->ssl, sink, sizeof sink);
    }
    if (s->c->ssl && rl_tls_reason(NULL)) {
        /* hiredis reports a failed SSL_read/SSL_write without the reason,
         * e.g. the alert of a server that refused our client certificate. */
        rl_tls_describe(s->c->ssl, SSL_ERROR_SSL, what, NULL, r->msg[i], RL_NODE_MSG_MAX);
        finish(r, i, s, RL_ERR_TLS, now);
        return;
    }
    rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%s: %s", what,
           s->c->ctx->errstr[0] ? s->c->ctx->errstr : "connection error");
    if (!s->reused && !s->got_reply && !s->c->ssl && !cl->nodes[i].ep.path)
        rl_append(r->msg[i], RL_NODE_MSG_MAX, " (closed before any reply; a TLS port needs rediss://)");
    finish(r, i, s, RL_ERR_IO, now);
}

static int is_auth_error(const char *e)
{
    return strncmp(e, "NOAUTH", 6) == 0 || strncmp(e, "WRONGPASS", 9) == 0 ||
           strstr(e, "password") != NULL;
}

static void on_reply(rl_round *r, size_t i, slot *s, redisReply *rep, int64_t now)
{
    rl_conn *c = s->c;
    rl_expect *e = q_front(c);
    s->got_reply = 1;
    if (!e) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "reply that no command asked for");
        finish(r, i, s, RL_ERR_IO, now);
        return;
    }
    int is_err = rep->type == REDIS_REPLY_ERROR;
    int noscript = is_err && strncmp(rep->str, "NOSCRIPT", 8) == 0;
    switch (e->kind) {
    case EXP_DROP:
    case EXP_DROP_SCRIPT: {
        int rc = drop_owed(c, rep);
        if (rc < 0)
            s->broken = 1;
        else if (rc > 0)
            s->wpending = 1;
        return;
    }
    case EXP_AUTH:
    case EXP_SELECT: {
        int was_auth = e->kind == EXP_AUTH;
        q_pop(c);
        if (is_err) {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%s: %.120s", was_auth ? "AUTH" : "SELECT", rep->str);
            finish(r, i, s, was_auth || is_auth_error(rep->str) ? RL_ERR_AUTH : RL_ERR_SERVER, now);
            s->broken = 1;
        }
        return;
    }
    default:
        break;
    }

    q_pop(c); /* EXP_MAIN */
    if (is_err) {
        if (noscript && is_script_cmd(r) && !s->eval_sent) {
            /* Script cache flushed or server restarted: send the body once. */
            if (append_main(r, s, 1) != 0 || flush_out(s) != 0) {
                rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "EVAL after NOSCRIPT failed");
                finish(r, i, s, RL_ERR_IO, now);
            }
            return;
        }
        if (r->via_fcall && strstr(rep->str, "Function not found"))
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%.80s (load it with redlock_client_load_functions)", rep->str);
        else
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "%.150s", rep->str);
        finish(r, i, s, is_auth_error(rep->str) ? RL_ERR_AUTH : RL_ERR_SERVER, now);
        return;
    }
    if (r->cmd == RL_CMD_LOAD_FUNCTIONS) {
        finish(r, i, s, RL_YES, now);
        return;
    }
    if (r->cmd == RL_CMD_SET_FENCED) {
        if (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS) {
            /* The key was set; the counter must be a plain decimal number. */
            char *end = NULL;
            errno = 0;
            unsigned long long v = rep->len > 0 && rep->len <= 20 && rep->str[0] >= '0' && rep->str[0] <= '9'
                                       ? strtoull(rep->str, &end, 10) : 0;
            if (!end || *end || errno) {
                rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "fencing counter '%.*s' is not a number", (int)r->fkey_len, r->fkey);
                finish(r, i, s, RL_ERR_SERVER, now);
            } else {
                r->counter[i] = v;
                finish(r, i, s, RL_YES, now);
            }
        } else if (rep->type == REDIS_REPLY_NIL) {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "held by another owner");
            finish(r, i, s, RL_NO, now);
        } else {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "unexpected reply type %d to the fenced acquire", rep->type);
            finish(r, i, s, RL_ERR_SERVER, now);
        }
        return;
    }
    if (r->cmd == RL_CMD_SET) {
        if (rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0) {
            finish(r, i, s, RL_YES, now);
        } else if (rep->type == REDIS_REPLY_NIL) {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "held by another owner");
            finish(r, i, s, RL_NO, now);
        } else {
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "unexpected reply type %d to SET", rep->type);
            finish(r, i, s, RL_ERR_SERVER, now);
        }
        return;
    }
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1) {
        finish(r, i, s, RL_YES, now);
    } else if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0) {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "key gone or held by another owner");
        finish(r, i, s, RL_NO, now);
    } else {
        rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "unexpected reply type %d to script", rep->type);
        finish(r, i, s, RL_ERR_SERVER, now);
    }
}

/* The round no longer waits for this connection's replies: turn what it
 * owes us into entries the next user drops (or re-sends after NOSCRIPT).
 * 0 if the connection can go back to the pool. */
static int hand_over(rl_round *r, slot *s)
{
    rl_conn *c = s->c;
    for (int k = 0; k < c->len; k++) {
        rl_expect *e = &c->q[(c->head + k) % RL_PIPE_MAX];
        if (e->kind == EXP_MAIN && resend_late(r) && !s->eval_sent) {
            e->key = malloc(r->key_len ? r->key_len : 1);
            if (!e->key)
                return -1;
            memcpy(e->key, r->key, r->key_len);
            e->key_len = r->key_len;
            e->cmd = (unsigned char)r->cmd;
            e->ttl_ms = r->ttl_ms;
            memcpy(e->value, r->value, strlen(r->value) + 1);
            e->kind = EXP_DROP_SCRIPT;
        } else if (e->kind == EXP_MAIN || e->kind == EXP_AUTH || e->kind == EXP_SELECT) {
            e->kind = EXP_DROP;
        }
    }
    return 0;
}

static void handle_events(redlock_client *cl, rl_round *r, size_t i, slot *s, short revents, int64_t now)
{
    redisContext *ctx = s->c->ctx;
    if (s->c->connecting) {
        if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(ctx->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err) {
            node_backoff(&cl->nodes[i], now);
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, "connect: %s", strerror(err));
            finish(r, i, s, RL_ERR_IO, now);
            return;
        }
        s->c->connecting = 0;
        if (cl->nodes[i].ep.tls) {
            if (tls_begin(cl, &cl->nodes[i], s->c, r->msg[i], RL_NODE_MSG_MAX) != 0) {
                finish(r, i, s, RL_ERR_TLS, now);
                return;
            }
            if (s->c->handshaking)
                return;
            revents = 0;
        }
        revents |= POLLOUT;
    } else if (s->c->handshaking) {
        int st = tls_step(cl, &cl->nodes[i], s->c, r->msg[i], RL_NODE_MSG_MAX);
        if (st < 0) {
            finish(r, i, s, RL_ERR_TLS, now);
            return;
        }
        if (st > 0)
            return;
        revents = POLLOUT;  /* handshake done: send what is queued */
    }
    if (s->wpending && (revents & (POLLOUT | POLLERR | POLLHUP))) {
        if (flush_out(s) != 0) {
            io_fail(cl, r, i, s, "write", now);
            return;
        }
    }
    if (!(revents & (POLLIN | POLLERR | POLLHUP)))
        return;
    for (;;) {
        if (s->c->ssl)
            ERR_clear_error();
        if (redisBufferRead(ctx) == REDIS_ERR) {
            io_fail(cl, r, i, s, "read", now);
            return;
        }
        while (r->out[i] == RL_PENDING) {
            void *rep = NULL;
            if (redisGetReply(ctx, &rep) == REDIS_ERR) {
                io_fail(cl, r, i, s, "protocol", now);
                return;
            }
            if (!rep)
                break;
            s->c->stalled = 0;
            on_reply(r, i, s, rep, now);
            freeReplyObject(rep);
        }
        /* Decrypted bytes that OpenSSL holds are invisible to poll(). */
        if (!s->c->ssl || r->out[i] != RL_PENDING || SSL_pending(s->c->ssl) <= 0)
            break;
    }
}

/* 1 once more replies cannot change what the caller will conclude. */
static int decided(const rl_round *r)
{
    int yes = 0, no = 0, pending = 0, n = (int)r->n;
    for (size_t i = 0; i < r->n; i++) {
        if (r->out[i] == RL_PENDING)
            pending++;
        else if (r->out[i] == RL_YES)
            yes++;
        else if (r->out[i] == RL_NO)
            no++;
    }
    if (r->no_wait)
        return 0;
    if (yes >= r->quorum || pending == 0)
        return 1;
    if (yes + pending < r->quorum) {
        /* The round has failed. Wait for the rest until the reason is
         * certain too: refusals alone rule a quorum out ("held by another
         * owner", "lost"), or, for an acquisition, failures alone do ("no
         * quorum"). Otherwise the caller could not tell the two apart. */
        int failed = n - yes - no - pending;
        if (no > n - r->quorum || (is_acquire(r) && failed > n - r->quorum))
            return 1;
    }
    return 0;
}

void rl_round_run(redlock_client *cl, rl_round *r)
{
    slot S[REDLOCK_MAX_NODES];
    struct pollfd pfd[REDLOCK_MAX_NODES];
    size_t map[REDLOCK_MAX_NODES];
    int64_t now = rl_now_us();

    rl_scripts_init();
    /* OpenSSL writes with write(2): a TLS node that closed its end would
     * raise SIGPIPE. Keep it blocked for the round and take back one that
     * this round raised (plain connections use MSG_NOSIGNAL instead). */
    sigset_t pipe_set, old_mask;
    int masked = 0, pipe_was_pending = 0;
    if (cl->tls_ctx) {
        sigset_t pend;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        sigpending(&pend);
        pipe_was_pending = sigismember(&pend, SIGPIPE);
        masked = pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask) == 0;
    }
    r->via_fcall = (cl->opts.flags & REDLOCK_OPT_FUNCTIONS) != 0;
    memset(r->fmt, 0, sizeof r->fmt);
    memset(S, 0, sizeof(slot) * r->n);
    for (size_t i = 0; i < r->n; i++) {
        r->out[i] = RL_PENDING;
        r->msg[i][0] = '\0';
        r->rtt_us[i] = 0;
        r->sent[i] = 0;
        r->counter[i] = 0;
    }
    /* Nodes this round won't wait for once decided: those that timed out lately. */
    for (size_t i = 0; i < r->n; i++) {
        S[i].suspect = atomic_load_explicit(&cl->nodes[i].suspect, memory_order_relaxed);
        start_slot(cl, r, i, &S[i], now);
    }

    /* Once a release or extension is decided, the nodes that have been
     * answering are still waited for (up to their deadline), so that they
     * complete too, NOSCRIPT fallback included. Nodes that timed out lately
     * ("suspect") are not: a paused node costs one timeout, then holds
     * nobody up; what it owes is settled later on the same connection. */
    int64_t grace_until = 0;
    r->decided_us = 0;
    for (;;) {
        if (!grace_until && decided(r)) {
            r->decided_us = now;
            if (is_acquire(r))
                break;
            grace_until = now;
        }
        nfds_t nfds = 0;
        int64_t next = INT64_MAX;
        for (size_t i = 0; i < r->n; i++) {
            slot *s = &S[i];
            if (r->out[i] != RL_PENDING)
                continue;
            /* Detached: no longer waiting for replies, only finishing the
             * write so that the command reaches the node. */
            int detached = r->no_wait || (grace_until && now >= grace_until && s->suspect);
            if (detached && !s->c->connecting && !s->wpending)
                continue;
            if (detached && s->suspect && (s->c->connecting || s->c->handshaking)) {
                /* A node that stopped answering may also stop accepting
                 * (its listen backlog full): don't wait on the connect. */
                s->broken = 1;
                continue;
            }
            pfd[nfds].fd = s->c->ctx->fd;
            pfd[nfds].events = detached ? POLLOUT : POLLIN;
            if (s->c->connecting || s->wpending)
                pfd[nfds].events |= POLLOUT;
            if (s->c->handshaking)
                pfd[nfds].events = s->c->tls_want;
            pfd[nfds].revents = 0;
            map[nfds++] = i;
            int64_t d = s->deadline;
            if (!detached && grace_until && s->suspect && grace_until < d)
                d = grace_until;
            if (d < next)
                next = d;
        }
        if (nfds == 0)
            break;
        int64_t wait_us = next - now;
        int timeout = wait_us <= 0 ? 0 : (int)((wait_us + 999) / 1000);
        int n = poll(pfd, nfds, timeout);
        now = rl_now_us();
        if (n < 0) {
            if (errno == EINTR)
                continue;
            for (nfds_t k = 0; k < nfds; k++) {
                rl_fmt(r->msg[map[k]], RL_NODE_MSG_MAX, "poll: %s", strerror(errno));
                finish(r, map[k], &S[map[k]], RL_ERR_IO, now);
            }
            break;
        }
        for (nfds_t k = 0; k < nfds && n > 0; k++) {
            if (pfd[k].revents) {
                size_t i = map[k];
                /* The fd may change if io_fail reconnects; revents belong to the old one. */
                if (S[i].c && S[i].c->ctx->fd == pfd[k].fd && r->out[i] == RL_PENDING)
                    handle_events(cl, r, i, &S[i], pfd[k].revents, now);
            }
        }
        for (size_t i = 0; i < r->n; i++) {
            slot *s = &S[i];
            if (r->out[i] != RL_PENDING || s->deadline > now || s->broken)
                continue;
            int detached = r->no_wait || (grace_until && s->suspect);
            if (detached && !s->c->connecting && !s->wpending)
                continue;  /* sent: handed over at the end */
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, s->c->handshaking ? "TLS handshake not finished within %lld ms"
                                                                 : "no reply within %lld ms",
                   (long long)((now - r->start_us) / 1000));
            /* A command still behind the handshake was never sent: nothing to
             * clean up there, unlike after a timeout that may hide a reply. */
            if (s->c->connecting)
                node_backoff(&cl->nodes[i], now);  /* not even accepting connections */
            finish(r, i, s, s->c->handshaking ? RL_ERR_IO : RL_ERR_TIMEOUT, now);
            atomic_store(&cl->nodes[i].suspect, 1);
            if (!s->c->connecting && !s->c->handshaking && !s->wpending) {
                /* The command went out and may still run (a slow or paused
                 * node). Keep the connection rather than close it: what
                 * follows for this lock (the clean-up release after a
                 * failed attempt) then goes behind it on the same
                 * connection, so it is written at once and runs after it. */
                s->broken = 0;
                s->kept = 1;
                s->c->stalled = 1;
            }
        }
    }

    for (size_t i = 0; i < r->n; i++) {
        slot *s = &S[i];
        rl_node *node = &cl->nodes[i];
        /* Only an answer to this round's command proves the node is back: a
         * reply owed from before a pause may still sit in the buffer. */
        if (r->out[i] == RL_YES || r->out[i] == RL_NO || r->out[i] == RL_ERR_SERVER) {
            node_healthy(node);
        }
        if (!s->c)
            continue;
        if (s->was_stalled && s->c->stalled && !s->wpending && !s->c->connecting) {
            /* It timed out before and has not answered since: it was used
             * once more, so that this lock's next command (the clean-up
             * release) went behind the one that timed out, in order. Now
             * close it (FIN: the node still runs what it was sent): a
             * connection that a partition cut stays dead even once the
             * network heals, and the next round must get a new one. */
            conn_free(s->c);
            s->c = NULL;
            if (r->out[i] == RL_PENDING) {
                r->out[i] = RL_UNSENT;
                r->sent[i] = 1;
                rl_fmt(r->msg[i], RL_NODE_MSG_MAX, r->no_wait ? "sent" : "not waited for (decided without it)");
            }
            continue;
        }
        if (r->out[i] == RL_PENDING) {
            /* Decided without this node. Its replies may still come: if the
             * connection is clean apart from that, pool it and let the next
             * user deal with them; otherwise close it. */
            if (!s->c->connecting && !s->wpending && !s->broken && hand_over(r, s) == 0) {
                if (r->pinned)
                    r->pinned[i] = s->c;
                else
                    checkin(node, s->c);
            } else {
                conn_free(s->c);
            }
            r->out[i] = RL_UNSENT;
            r->sent[i] = 1;
            rl_fmt(r->msg[i], RL_NODE_MSG_MAX, r->no_wait ? "sent" : "not waited for (decided without it)");
        } else if (s->kept && r->pinned && hand_over(r, s) == 0) {
            r->pinned[i] = s->c;   /* for this lock's next command only: see above */
        } else if (!s->broken && !s->wpending && !q_has_mine(s->c)) {
            checkin(node, s->c);
        } else {
            conn_free(s->c);
        }
        s->c = NULL;
    }
    if (!r->decided_us)
        r->decided_us = now;
    for (size_t k = 0; k < sizeof r->fmt / sizeof r->fmt[0]; k++)
        redisFreeCommand(r->fmt[k]);
    if (masked) {
        sigset_t pend;
        if (!pipe_was_pending && sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE)) {
            struct timespec zero = { 0, 0 };
            sigtimedwait(&pipe_set, NULL, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    }
}

void rl_unpin(redlock_client *cl, rl_conn **pinned)
{
    for (size_t i = 0; pinned && i < cl->n; i++) {
        if (pinned[i])
            checkin(&cl->nodes[i], pinned[i]);
        pinned[i] = NULL;
    }
}
