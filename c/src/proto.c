/* SPDX-License-Identifier: BSD-3-Clause */
/* proto.c: the wire format, as one table of the commands the library sends:
 * how each is formatted, how its reply is read, and what a reply that comes
 * after its round returned means. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "engine.h"

enum { ARG_NONE, ARG_TTL, ARG_TOKEN };

typedef void (*parse_fn)(const rl_round *r, const redisReply *rep, rl_parsed *p);

static void parse_set(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_script(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_fenced(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_any(const rl_round *r, const redisReply *rep, rl_parsed *p);

static const struct cmd_spec {
    const char *name;        /* for messages */
    const char *function;    /* FCALL form, or NULL for a plain command */
    const char *body;        /* script body (EVAL) */
    const char *sha;         /* its SHA1 (EVALSHA) */
    int nkeys;               /* KEYS: the key, then the fencing counter */
    int arg;                 /* ARGV after the value */
    parse_fn parse;
    /* A late reply is read and dropped, except that a late NOSCRIPT to one
     * of these means it never ran: it is re-sent as EVAL, so a release
     * still deletes the key after SCRIPT FLUSH. A late acquisition or token
     * commit is never re-sent: its round has been decided without it. */
    int resend_late;
} specs[] = {
    [RL_CMD_SET] = { "SET", NULL, NULL, NULL, 1, ARG_TTL, parse_set, 0 },
    [RL_CMD_EXTEND] = { "extend", "redlock_extend", rl_script_extend, rl_sha_extend, 1, ARG_TTL, parse_script, 1 },
    [RL_CMD_RELEASE] = { "release", "redlock_release", rl_script_release, rl_sha_release, 1, ARG_NONE,
                         parse_script, 1 },
    [RL_CMD_LOAD_FUNCTIONS] = { "FUNCTION LOAD", NULL, NULL, NULL, 0, ARG_NONE, parse_any, 0 },
    [RL_CMD_SET_FENCED] = { "fenced acquire", "redlock_acquire_fenced", rl_script_acquire_fenced,
                            rl_sha_acquire_fenced, 2, ARG_TTL, parse_fenced, 0 },
    [RL_CMD_FENCE_COMMIT] = { "token commit", "redlock_fence_commit", rl_script_fence_commit, rl_sha_fence_commit,
                              2, ARG_TOKEN, parse_script, 0 },
};

int rl_proto_is_script(rl_cmd cmd)
{
    return specs[cmd].body != NULL;
}

int rl_proto_resend_late(rl_cmd cmd)
{
    return specs[cmd].resend_late;
}

long long rl_proto_format(char **out, const rl_round *r, int via)
{
    const struct cmd_spec *s = &specs[r->cmd];
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", r->ttl_ms);
    if (r->cmd == RL_CMD_SET)
        return redisFormatCommand(out, "SET %b %s NX PX %s", r->key, r->key_len, r->value, ttl);
    if (r->cmd == RL_CMD_LOAD_FUNCTIONS)
        return redisFormatCommand(out, "FUNCTION LOAD REPLACE %s", rl_function_library);
    const char *argv[8];
    size_t len[8];
    int n = 0;
    argv[n] = via == RL_VIA_FCALL ? "FCALL" : via == RL_VIA_EVAL ? "EVAL" : "EVALSHA", len[n] = strlen(argv[n]), n++;
    argv[n] = via == RL_VIA_FCALL ? s->function : via == RL_VIA_EVAL ? s->body : s->sha, len[n] = strlen(argv[n]), n++;
    argv[n] = s->nkeys == 2 ? "2" : "1", len[n++] = 1;
    argv[n] = r->key, len[n++] = r->key_len;
    if (s->nkeys == 2)
        argv[n] = r->fkey, len[n++] = r->fkey_len;
    argv[n] = r->value, len[n] = strlen(r->value), n++;
    if (s->arg == ARG_TTL)
        argv[n] = ttl, len[n] = strlen(ttl), n++;
    else if (s->arg == ARG_TOKEN)
        argv[n] = r->token, len[n] = strlen(r->token), n++;
    return redisFormatCommandArgv(out, n, argv, len);
}

int rl_proto_is_auth_error(const char *e)
{
    return strncmp(e, "NOAUTH", 6) == 0 || strncmp(e, "WRONGPASS", 9) == 0 || strstr(e, "password") != NULL;
}

static void say(rl_parsed *p, rl_outcome out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(rl_parsed *p, rl_outcome out, const char *fmt, ...)
{
    va_list ap;
    p->out = out;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
}

static void unexpected(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    say(p, RL_ERR_SERVER, "unexpected reply type %d to %s", rep->type, specs[r->cmd].name);
}

static void parse_set(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    if (rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0)
        p->out = RL_YES;
    else if (rep->type == REDIS_REPLY_NIL)
        say(p, RL_NO, "held by another owner");
    else
        unexpected(r, rep, p);
}

static void parse_script(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1)
        p->out = RL_YES;
    else if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 0)
        say(p, RL_NO, "key gone or held by another owner");
    else
        unexpected(r, rep, p);
}

static void parse_fenced(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    if (rep->type == REDIS_REPLY_NIL) {
        say(p, RL_NO, "held by another owner");
        return;
    }
    if (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_STATUS) {
        unexpected(r, rep, p);
        return;
    }
    /* The key was set; the counter must be a plain decimal number. */
    char *end = NULL;
    errno = 0;
    unsigned long long v = rep->len > 0 && rep->len <= 20 && rep->str[0] >= '0' && rep->str[0] <= '9'
                               ? strtoull(rep->str, &end, 10) : 0;
    if (!end || *end || errno) {
        say(p, RL_ERR_SERVER, "fencing counter '%.*s' is not a number", (int)(r->fkey_len > 100 ? 100 : r->fkey_len),
            r->fkey);
        return;
    }
    p->counter = v;
    p->out = RL_YES;
}

static void parse_any(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    (void)r; (void)rep;
    p->out = RL_YES;
}

void rl_proto_parse(const rl_round *r, int via, const redisReply *rep, rl_parsed *p)
{
    p->out = RL_PENDING;
    p->counter = 0;
    p->msg[0] = '\0';
    if (rep->type != REDIS_REPLY_ERROR) {
        specs[r->cmd].parse(r, rep, p);
        return;
    }
    if (via == RL_VIA_EVALSHA && rl_proto_is_script(r->cmd) && strncmp(rep->str, "NOSCRIPT", 8) == 0)
        return;   /* the script cache was flushed: the caller sends the body */
    if (via == RL_VIA_FCALL && strstr(rep->str, "Function not found"))
        say(p, RL_ERR_SERVER, "%.80s (load it with redlock_client_load_functions)", rep->str);
    else
        say(p, rl_proto_is_auth_error(rep->str) ? RL_ERR_AUTH : RL_ERR_SERVER, "%.150s", rep->str);
}
