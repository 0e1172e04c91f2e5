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

/* What follows the key in KEYS, and the value in ARGV. */
enum { KEYS_ONE, KEYS_FENCE, KEYS_QUEUE, KEYS_QUEUE_FENCE, KEYS_RW, KEYS_MULTI };
enum { ARG_NONE, ARG_TTL, ARG_TOKEN, ARG_RELEASE, ARG_ACQUIRE, ARG_LEAVE, ARG_RW_ACQUIRE,
       ARG_SEM_ACQUIRE, ARG_SEM_EXTEND, ARG_SEM_RELEASE, ARG_SEM_TOKEN, ARG_EPOCH };

typedef void (*parse_fn)(const rl_round *r, const redisReply *rep, rl_parsed *p);

static void parse_set(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_script(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_acquire(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_any(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_many(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_elect(const rl_round *r, const redisReply *rep, rl_parsed *p);
static long long format_elect(char **out, const rl_round *r, int via, int tagged);
static int tag_keys(const rl_round *r, const char **argv, size_t *len, int from, int to, char **buf);
static void parse_sem_acquire(const rl_round *r, const redisReply *rep, rl_parsed *p);
static void parse_epoch(const rl_round *r, const redisReply *rep, rl_parsed *p);

static const struct cmd_spec {
    const char *name;        /* for messages */
    const char *function;    /* FCALL form, or NULL for a plain command */
    const char *body;        /* script body (EVAL) */
    const char *sha;         /* its SHA1 (EVALSHA) */
    int keys;                /* KEYS_*: the key, the queue's keys, the fencing counter */
    int arg;                 /* ARGV after the value */
    parse_fn parse;
    /* A late reply is read and dropped, except that a late NOSCRIPT to one
     * of these means it never ran: it is re-sent as EVAL, so a release
     * still deletes the key after SCRIPT FLUSH. A late acquisition or token
     * commit is never re-sent: its round has been decided without it. */
    int resend_late;
} specs[] = {
    [RL_CMD_SET] = { "SET", NULL, NULL, NULL, KEYS_ONE, ARG_TTL, parse_set, 0 },
    [RL_CMD_EXTEND] = { "extend", "redlock_extend", rl_script_extend, rl_sha_extend, KEYS_ONE, ARG_TTL,
                        parse_script, 1 },
    [RL_CMD_RELEASE] = { "release", "redlock_release", rl_script_release, rl_sha_release, KEYS_QUEUE, ARG_RELEASE,
                         parse_script, 1 },
    [RL_CMD_LOAD_FUNCTIONS] = { "FUNCTION LOAD", NULL, NULL, NULL, KEYS_ONE, ARG_NONE, parse_any, 0 },
    [RL_CMD_ACQUIRE] = { "acquire", "redlock_acquire", rl_script_acquire, rl_sha_acquire, KEYS_QUEUE_FENCE,
                         ARG_ACQUIRE, parse_acquire, 0 },
    [RL_CMD_FENCE_COMMIT] = { "token commit", "redlock_fence_commit", rl_script_fence_commit, rl_sha_fence_commit,
                              KEYS_FENCE, ARG_TOKEN, parse_script, 0 },
    [RL_CMD_LEAVE] = { "leave", "redlock_leave", rl_script_leave, rl_sha_leave, KEYS_QUEUE, ARG_LEAVE, parse_script,
                       1 },
    /* Late, an extension is useless: its locks were decided without it. */
    [RL_CMD_EXTEND_MANY] = { "extend_many", "redlock_extend_many", rl_script_extend_many, rl_sha_extend_many,
                             KEYS_ONE, ARG_TTL, parse_many, 0 },
    [RL_CMD_SET_MANY] = { "set_many", "redlock_set_many", rl_script_set_many, rl_sha_set_many, KEYS_ONE, ARG_TTL,
                          parse_many, 0 },
    [RL_CMD_RELEASE_MANY] = { "release_many", "redlock_release_many", rl_script_release_many,
                              rl_sha_release_many, KEYS_ONE, ARG_TTL, parse_many, 0 },
    [RL_CMD_ELECT] = { "election", "redlock_elect", rl_script_elect, rl_sha_elect, KEYS_ONE, ARG_NONE, parse_elect,
                       0 },
    /* the read-write lock (rwlock.c): KEYS_RW is KEYS_QUEUE_FENCE and the
     * round's two rw_keys */
    [RL_CMD_RW_ACQUIRE] = { "acquire", "redlock_rw_acquire", rl_script_rw_acquire, rl_sha_rw_acquire, KEYS_RW,
                            ARG_RW_ACQUIRE, parse_acquire, 0 },
    [RL_CMD_RW_EXTEND] = { "extend", "redlock_rw_extend", rl_script_rw_extend, rl_sha_rw_extend, KEYS_RW, ARG_TTL,
                           parse_script, 1 },
    [RL_CMD_RW_RELEASE] = { "release", "redlock_rw_release", rl_script_rw_release, rl_sha_rw_release, KEYS_RW,
                            ARG_RELEASE, parse_script, 1 },
    [RL_CMD_RW_DOWNGRADE] = { "downgrade", "redlock_rw_downgrade", rl_script_rw_downgrade, rl_sha_rw_downgrade,
                              KEYS_RW, ARG_TTL, parse_script, 0 },
    [RL_CMD_RW_GIVE_UP] = { "intent withdrawal", "redlock_rw_give_up", rl_script_rw_give_up, rl_sha_rw_give_up,
                            KEYS_RW, ARG_RELEASE, parse_script, 1 },
    /* The counting semaphore (semaphore.c): keyed by its name, the slots in ARGV. */
    [RL_CMD_SEM_ACQUIRE] = { "semaphore acquire", "redlock_sem_acquire", rl_script_sem_acquire, rl_sha_sem_acquire,
                             KEYS_QUEUE_FENCE, ARG_SEM_ACQUIRE, parse_sem_acquire, 0 },
    [RL_CMD_SEM_EXTEND] = { "semaphore extend", "redlock_sem_extend", rl_script_sem_extend, rl_sha_sem_extend,
                            KEYS_ONE, ARG_SEM_EXTEND, parse_script, 1 },
    [RL_CMD_SEM_RELEASE] = { "semaphore release", "redlock_sem_release", rl_script_sem_release, rl_sha_sem_release,
                             KEYS_QUEUE, ARG_SEM_RELEASE, parse_script, 1 },
    [RL_CMD_SEM_FENCE_COMMIT] = { "semaphore token commit", "redlock_sem_fence_commit", rl_script_sem_fence_commit,
                                  rl_sha_sem_fence_commit, KEYS_FENCE, ARG_SEM_TOKEN, parse_script, 0 },
    /* The multi-resource lock (multilock.c): KEYS_MULTI is the set's keys
     * (rl_multi), ARGV as the mutex's command of the same name. */
    [RL_CMD_MULTI_ACQUIRE] = { "multi acquire", "redlock_multi_acquire", rl_script_multi_acquire,
                               rl_sha_multi_acquire, KEYS_MULTI, ARG_ACQUIRE, parse_acquire, 0 },
    [RL_CMD_MULTI_EXTEND] = { "multi extend", "redlock_multi_extend", rl_script_multi_extend, rl_sha_multi_extend,
                              KEYS_MULTI, ARG_TTL, parse_script, 1 },
    [RL_CMD_MULTI_RELEASE] = { "multi release", "redlock_multi_release", rl_script_multi_release,
                               rl_sha_multi_release, KEYS_MULTI, ARG_RELEASE, parse_script, 1 },
    [RL_CMD_MULTI_FENCE_COMMIT] = { "multi token commit", "redlock_multi_fence_commit", rl_script_multi_fence_commit,
                                    rl_sha_multi_fence_commit, KEYS_MULTI, ARG_TOKEN, parse_script, 0 },
    [RL_CMD_MULTI_LEAVE] = { "multi leave", "redlock_multi_leave", rl_script_multi_leave, rl_sha_multi_leave,
                             KEYS_MULTI, ARG_LEAVE, parse_script, 1 },
    /* The node's marker and quarantine (epoch.c): KEYS_FENCE is the marker
     * and the quarantine key; the value is the mode. Late, it is dropped:
     * its round was decided without it. */
    [RL_CMD_EPOCH] = { "quarantine check", "redlock_epoch", rl_script_epoch, rl_sha_epoch, KEYS_FENCE, ARG_EPOCH,
                       parse_epoch, 0 },
};

static const char *const queue_suffix[2] = { RL_KEY_QUEUE, RL_KEY_LISTENERS };
_Static_assert(sizeof RL_KEY_QUEUE == 4 && sizeof RL_KEY_LISTENERS == 4, "tag_keys and format copy 3-byte suffixes");

int rl_proto_is_script(rl_cmd cmd)
{
    return specs[cmd].body != NULL;
}

int rl_proto_resend_late(rl_cmd cmd)
{
    return specs[cmd].resend_late;
}

/* EXTEND_MANY: the script, its keys, then each lock's value and ttl. */
static long long format_many(char **out, const rl_round *r, int via)
{
    const struct cmd_spec *s = &specs[r->cmd];
    const rl_batch *b = r->batch;
    size_t argc = 3 + 3 * b->m;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *len = malloc(argc * sizeof *len);
    char *ttls = malloc(b->m * 11 + 1), nkeys[24];
    long long rc = -1;
    if (argv && len && ttls) {
        snprintf(nkeys, sizeof nkeys, "%zu", b->m);
        argv[0] = via == RL_VIA_FCALL ? "FCALL" : via == RL_VIA_EVAL ? "EVAL" : "EVALSHA";
        argv[1] = via == RL_VIA_FCALL ? s->function : via == RL_VIA_EVAL ? s->body : s->sha;
        argv[2] = nkeys;
        for (size_t k = 0; k < 3; k++)
            len[k] = strlen(argv[k]);
        for (size_t k = 0; k < b->m; k++) {
            argv[3 + k] = b->keys[k];
            len[3 + k] = b->key_lens[k];
            char *t = ttls + k * 11;
            size_t a = 3 + b->m + 2 * k;
            argv[a] = b->values[k];
            len[a] = strlen(b->values[k]);
            argv[a + 1] = t;
            len[a + 1] = (size_t)snprintf(t, 11, "%u", b->ttl_ms[k]);
        }
        rc = redisFormatCommandArgv(out, (int)argc, argv, len);
    }
    free(argv);
    free(len);
    free(ttls);
    return rc;
}

/* KEYS_MULTI: the script, the set's 4 * n keys, then ARGV as the mutex's
 * command of the same kind takes it after its key(s). */
static long long format_multi(char **out, const rl_round *r, int via)
{
    const struct cmd_spec *s = &specs[r->cmd];
    const rl_multi *m = r->multi;
    size_t nk = 4 * m->n, argc = 3 + nk + 6;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *len = malloc(argc * sizeof *len);
    char nkeys[24], ttl[16], ticket[24], lease[16], wake[16];
    long long rc = -1;
    if (argv && len) {
        snprintf(nkeys, sizeof nkeys, "%zu", nk);
        snprintf(ttl, sizeof ttl, "%u", r->ttl_ms);
        snprintf(ticket, sizeof ticket, "%llu", (unsigned long long)r->ticket);
        snprintf(lease, sizeof lease, "%u", r->lease_ms);
        snprintf(wake, sizeof wake, "%d", r->wake);
        size_t n = 0;
#define ARG(str) (argv[n] = (str), len[n] = strlen(argv[n]), n++)
        ARG(via == RL_VIA_FCALL ? "FCALL" : via == RL_VIA_EVAL ? "EVAL" : "EVALSHA");
        ARG(via == RL_VIA_FCALL ? s->function : via == RL_VIA_EVAL ? s->body : s->sha);
        ARG(nkeys);
        for (size_t k = 0; k < nk; k++)
            argv[n] = m->keys[k], len[n++] = m->lens[k];
        switch (s->arg) {
        case ARG_TTL: ARG(r->value); ARG(ttl); break;
        case ARG_TOKEN: ARG(r->value); ARG(r->token); break;
        case ARG_RELEASE: ARG(r->value); ARG(wake); ARG(r->member); break;
        case ARG_ACQUIRE: ARG(r->value); ARG(ttl); ARG(r->member); ARG(ticket); ARG(lease); ARG(r->mode); break;
        case ARG_LEAVE: ARG(r->member); ARG(wake); break;
        default: break;
        }
#undef ARG
        rc = redisFormatCommandArgv(out, (int)n, argv, len);
    }
    free(argv);
    free(len);
    return rc;
}

long long rl_proto_format(char **out, const rl_round *r, int via)
{
    return rl_proto_format_node(out, r, via, 0);
}

long long rl_proto_format_node(char **out, const rl_round *r, int via, int tagged)
{
    const struct cmd_spec *s = &specs[r->cmd];
    if (r->batch)
        return format_many(out, r, via);
    if (s->keys == KEYS_MULTI)
        return format_multi(out, r, via);
    char ttl[16], ticket[24], lease[16], wake[16], intent[16], limit[16];
    snprintf(ttl, sizeof ttl, "%u", r->ttl_ms);
    if (r->cmd == RL_CMD_SET)
        return redisFormatCommand(out, "SET %b %s NX PX %s", r->key, r->key_len, r->value, ttl);
    if (r->cmd == RL_CMD_LOAD_FUNCTIONS)
        return redisFormatCommand(out, "FUNCTION LOAD REPLACE %s", rl_function_library);
    if (r->cmd == RL_CMD_ELECT)
        return format_elect(out, r, via, tagged);
    if (r->cmd == RL_CMD_EPOCH && r->mode[0] == 'p')   /* the plain check (epoch.c) */
        return redisFormatCommand(out, "PTTL %b", r->key, r->key_len);
    /* A read attempt with nothing but the read to do goes as the short
     * script (scripts.c, rl_script_rw_read): K, K:rd, K:wi, value, ttl. */
    if (r->cmd == RL_CMD_RW_ACQUIRE && r->mode && strcmp(r->mode, "R") == 0 && (!r->member || !r->member[0])) {
        const char *argv[8] = {
            via == RL_VIA_FCALL ? "FCALL" : via == RL_VIA_EVAL ? "EVAL" : "EVALSHA",
            via == RL_VIA_FCALL ? "redlock_rw_read" : via == RL_VIA_EVAL ? rl_script_rw_read : rl_sha_rw_read,
            "3", r->key, r->rw_keys[0], r->rw_keys[1], r->value, ttl,
        };
        size_t len[8];
        for (int k = 0; k < 8; k++)
            len[k] = strlen(argv[k]);
        len[3] = r->key_len, len[4] = r->rw_keys_len[0], len[5] = r->rw_keys_len[1];
        char *tagbuf = NULL;   /* on a cluster node K:rd and K:wi share K's slot */
        if (tagged && tag_keys(r, argv, len, 4, 6, &tagbuf) != 0)
            return -1;
        long long rc = redisFormatCommandArgv(out, 8, argv, len);
        free(tagbuf);
        return rc;
    }
    snprintf(ticket, sizeof ticket, "%llu", (unsigned long long)r->ticket);
    snprintf(lease, sizeof lease, "%u", r->lease_ms);
    snprintf(wake, sizeof wake, "%d", r->wake);
    snprintf(intent, sizeof intent, "%u", r->intent_ms);
    snprintf(limit, sizeof limit, "%u", r->sem_limit);
    /* The queue's keys: the lock's key and a suffix each, side by side; on
     * the stack for the usual key, since every release has them. */
    char local[2 * 256], *qkeys = local;
    int queue = s->keys == KEYS_QUEUE || s->keys == KEYS_QUEUE_FENCE || s->keys == KEYS_RW;
    if (queue && 2 * (r->key_len + 4) > sizeof local && !(qkeys = malloc(2 * (r->key_len + 4))))
        return -1;
    const char *argv[16];
    size_t len[16];
    int n = 0;
#define ARG(str) (argv[n] = (str), len[n] = strlen(argv[n]), n++)
    ARG(via == RL_VIA_FCALL ? "FCALL" : via == RL_VIA_EVAL ? "EVAL" : "EVALSHA");
    ARG(via == RL_VIA_FCALL ? s->function : via == RL_VIA_EVAL ? s->body : s->sha);
    ARG(s->keys == KEYS_ONE ? "1" : s->keys == KEYS_FENCE ? "2" : s->keys == KEYS_QUEUE ? "3"
        : s->keys == KEYS_RW ? "6" : "4");
    argv[n] = r->key, len[n++] = r->key_len;
    for (int k = 0; queue && k < 2; k++) {
        char *qk = qkeys + k * (r->key_len + 4);
        memcpy(qk, r->key, r->key_len);
        memcpy(qk + r->key_len, queue_suffix[k], 4);
        argv[n] = qk, len[n++] = r->key_len + 3;
    }
    if (s->keys == KEYS_FENCE || s->keys == KEYS_QUEUE_FENCE || s->keys == KEYS_RW)
        argv[n] = r->fkey, len[n++] = r->fkey_len;
    for (int k = 0; s->keys == KEYS_RW && k < 2; k++)
        argv[n] = r->rw_keys[k], len[n++] = r->rw_keys_len[k];
    /* On a cluster node the auxiliary keys share K's slot (slotmap.c). */
    char *tagbuf = NULL;
    if (tagged && tag_keys(r, argv, len, 4, n, &tagbuf) != 0) {
        if (qkeys != local)
            free(qkeys);
        return -1;
    }
    if (s->arg != ARG_LEAVE)
        ARG(r->value);
    switch (s->arg) {
    case ARG_TTL: ARG(ttl); break;
    case ARG_TOKEN: ARG(r->token); break;
    case ARG_RELEASE: ARG(wake); ARG(r->member); break;
    case ARG_ACQUIRE: ARG(ttl); ARG(r->member); ARG(ticket); ARG(lease); ARG(r->mode); break;
    case ARG_LEAVE: ARG(r->member); ARG(wake); break;
    case ARG_RW_ACQUIRE: ARG(ttl); ARG(r->member); ARG(ticket); ARG(lease); ARG(r->mode); ARG(intent); break;
    case ARG_SEM_ACQUIRE: ARG(ttl); ARG(r->member); ARG(ticket); ARG(lease); ARG(r->mode); ARG(limit);
        ARG(r->sem_slots); break;
    case ARG_SEM_EXTEND: ARG(ttl); ARG(r->sem_slots); ARG(limit); break;
    case ARG_SEM_RELEASE: ARG(wake); ARG(r->member); ARG(r->sem_slots); break;
    case ARG_SEM_TOKEN: ARG(r->token); ARG(r->sem_slots); break;
    case ARG_EPOCH: ARG(ttl); ARG(r->token); ARG(r->member); break;   /* quarantine ms, reason */
    default: break;
    }
#undef ARG
    long long rc = redisFormatCommandArgv(out, n, argv, len);
    if (qkeys != local)
        free(qkeys);
    free(tagbuf);
    return rc;
}

/* e copied into buf of size, cut at a word with "..." when it does not fit
 * beside room bytes (a fix said after it). */
static void cut_words(char *buf, size_t size, const char *e, size_t room)
{
    size_t max = size > room + 16 ? size - room - 1 : size / 2, len = strlen(e);
    if (len <= max) {
        memcpy(buf, e, len + 1);
        return;
    }
    size_t end = max > 3 ? max - 3 : 0;
    while (end > max / 2 && e[end] != ' ')
        end--;
    while (end > 0 && (e[end - 1] == ' ' || e[end - 1] == ',' || e[end - 1] == ':'))
        end--;
    memcpy(buf, e, end);
    memcpy(buf + end, "...", 4);
}

rl_outcome rl_proto_error(const char *e, char *msg, size_t size)
{
    const char *fix = NULL;
    rl_outcome out = RL_ERR_SERVER;
    if (strncmp(e, "NOAUTH", 6) == 0) {
        out = RL_ERR_AUTH;
        fix = "this node needs a password: add it to the URL as redis://:PASSWORD@host";
    } else if (strncmp(e, "WRONGPASS", 9) == 0) {
        out = RL_ERR_AUTH;
        fix = "the user or password in the URL is refused";
    } else if (strstr(e, "password") != NULL) {
        out = RL_ERR_AUTH;
        fix = strstr(e, "without any password") ? "this node has no password: leave it out of the URL" : NULL;
    } else if (strncmp(e, "NOPERM", 6) == 0) {
        out = RL_ERR_PERM;
        fix = "grant it to the node's user (docs/security.md)";
    } else if (strncmp(e, "ERR unknown command", 19) == 0) {
        out = RL_ERR_PERM;
        fix = "the command is disabled or renamed on this node";
    } else if (strstr(e, "can't run this command") || strstr(e, "ACL failure in script") ||
               strstr(e, "Unknown Redis command called from script") || strstr(e, "Unknown command called from script")) {
        out = RL_ERR_PERM;   /* a command the script runs: denied, disabled or renamed */
        fix = "the lock's scripts need GET, SET, DEL, PEXPIRE (docs/security.md)";
    }
    size_t room = fix ? strlen(fix) + 2 : 0;
    cut_words(msg, size, e, room);
    size_t len = strlen(msg);
    if (fix && len && msg[len - 1] == '.' && (len < 3 || strcmp(msg + len - 3, "...") != 0))
        msg[len - 1] = '\0';
    if (fix)
        rl_append(msg, size, ": %s", fix);
    return out;
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

/* A plain decimal counter, as a fencing counter must be: 0 or -1. */
static int decimal(const redisReply *e, uint64_t *v)
{
    if (e->type != REDIS_REPLY_STRING && e->type != REDIS_REPLY_STATUS)
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long x = e->len > 0 && e->len <= 20 && e->str[0] >= '0' && e->str[0] <= '9'
                               ? strtoull(e->str, &end, 10) : 0;
    if (!end || *end || errno)
        return -1;
    *v = x;
    return 0;
}

/* {1} or {1, counter} granted; {0, ms to wait at most, marked[, kept]} refused. */
static void parse_acquire(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    /* The short read attempt (rl_script_rw_read, mode "R") says 1 when granted. */
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 && r->cmd == RL_CMD_RW_ACQUIRE &&
        strcmp(r->mode, "R") == 0 && (!r->member || !r->member[0])) {
        p->out = RL_YES;
        return;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 || rep->element[0]->type != REDIS_REPLY_INTEGER) {
        unexpected(r, rep, p);
        return;
    }
    if (rep->element[0]->integer == 0) {
        int full = rep->elements >= 3 && rep->element[1]->type == REDIS_REPLY_INTEGER &&
                   rep->element[2]->type == REDIS_REPLY_INTEGER;
        p->hint_ms = full ? rep->element[1]->integer : -1;
        p->marked = full && rep->element[2]->integer == 1;
        say(p, RL_NO, rep->elements >= 4 ? "free, but kept for a waiter that came first" : "held by another owner");
        return;
    }
    if (strchr(r->mode, 'c') && (rep->elements < 2 || decimal(rep->element[1], &p->counter) != 0)) {
        say(p, RL_ERR_SERVER, "fencing counter '%.*s' is not a number", (int)(r->fkey_len > 100 ? 100 : r->fkey_len),
            r->fkey);
        return;
    }
    p->out = RL_YES;
}

/* The semaphore's acquisition (semaphore.c): {1} or {1, counter} granted;
 * {0, ms, marked, free slots, "5,6"} refused; {-1, limit} another limit. */
static void parse_sem_acquire(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 || rep->element[0]->type != REDIS_REPLY_INTEGER) {
        unexpected(r, rep, p);
        return;
    }
    long long first = rep->element[0]->integer;
    if (first == -1) {
        uint64_t v = 0;
        int num = rep->elements >= 2 && decimal(rep->element[1], &v) == 0 && v > 0 && v < UINT32_MAX;
        p->sem_other = num ? (uint32_t)v : UINT32_MAX;
        if (num)
            say(p, RL_ERR_SERVER, "the semaphore's limit here is %u, not %u", p->sem_other, r->sem_limit);
        else
            say(p, RL_ERR_SERVER, "the semaphore's limit key here holds no limit (not %u)", r->sem_limit);
        return;
    }
    if (first == 0) {
        int full = rep->elements >= 5 && rep->element[1]->type == REDIS_REPLY_INTEGER &&
                   rep->element[2]->type == REDIS_REPLY_INTEGER && rep->element[3]->type == REDIS_REPLY_INTEGER &&
                   rep->element[4]->type == REDIS_REPLY_STRING;
        if (!full) {
            unexpected(r, rep, p);
            return;
        }
        p->hint_ms = rep->element[1]->integer;
        p->marked = rep->element[2]->integer == 1;
        long long nfree = rep->element[3]->integer;
        p->sem_nfree = nfree < 0 ? 0 : nfree > UINT32_MAX ? UINT32_MAX : (uint32_t)nfree;
        const char *s = rep->element[4]->str;
        while (*s && p->sem_listed < RL_SEM_FREE_MAX) {
            char *end;
            errno = 0;
            unsigned long v = strtoul(s, &end, 10);
            if (end == s || errno || v >= r->sem_limit)
                break;
            p->sem_free[p->sem_listed++] = (uint16_t)v;
            s = *end == ',' ? end + 1 : end;
        }
        if (p->sem_nfree)
            say(p, RL_NO, "the permit asked for is taken; %u of %u free here", p->sem_nfree, r->sem_limit);
        else
            say(p, RL_NO, "no permit free: all %u held", r->sem_limit);
        return;
    }
    if (first != 1) {
        unexpected(r, rep, p);
        return;
    }
    if (strchr(r->mode, 'c') && (rep->elements < 2 || decimal(rep->element[1], &p->counter) != 0)) {
        say(p, RL_ERR_SERVER, "fencing counter '%.*s' is not a number", (int)(r->fkey_len > 100 ? 100 : r->fkey_len),
            r->fkey);
        return;
    }
    p->out = RL_YES;
}

static void parse_any(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    (void)r; (void)rep;
    p->out = RL_YES;
}

/* One 0 or 1 per key of the batch, in order. */
static void parse_many(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != r->batch->m) {
        say(p, RL_ERR_SERVER, "unexpected reply to %s: type %d, %zu elements for %zu keys", specs[r->cmd].name, rep->type,
            rep->type == REDIS_REPLY_ARRAY ? rep->elements : (size_t)0, r->batch->m);
        return;
    }
    for (size_t k = 0; k < rep->elements; k++) {
        const redisReply *e = rep->element[k];
        if (e->type != REDIS_REPLY_INTEGER || (e->integer != 0 && e->integer != 1)) {
            say(p, RL_ERR_SERVER, "unexpected element %zu of the reply to %s", k, specs[r->cmd].name);
            return;
        }
    }
    p->out = RL_YES;
}

void rl_proto_many_results(rl_round *r, size_t i, const redisReply *rep)
{
    rl_batch *b = r->batch;
    for (size_t k = 0; k < b->m; k++)
        b->res[i * b->m + k] = rep->element[k]->integer == 1;
}

void rl_proto_parse(const rl_round *r, int via, const redisReply *rep, rl_parsed *p)
{
    size_t node = p->node;
    memset(p, 0, sizeof *p);
    p->node = node;
    p->out = RL_PENDING;
    p->counter = 0;
    p->hint_ms = -1;
    p->marked = 0;
    p->sem_other = p->sem_nfree = 0;
    p->sem_listed = 0;
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
        p->out = rl_proto_error(rep->str, p->msg, sizeof p->msg);
}

/* ---- elections (election.c): KEYS K, K:leader, K:obs; ARGV as scripts.c says ---- */

/* The names of a lock's auxiliary keys on a cluster node (docs/cluster.md):
 * argv[from..to) each K + suffix; when K has no hash tag of its own, each
 * becomes "{K}" + suffix, which hashes K whole, as K does, and so shares
 * its slot. With a tag, K + suffix already does. A key K that holds a '}'
 * but no tag is refused earlier (rl_cluster_key_check): -1 then, as for
 * out of memory. The new names go into *buf, the caller's to free. */
static int tag_keys(const rl_round *r, const char **argv, size_t *len, int from, int to, char **buf)
{
    size_t st, tl, need = 0;
    *buf = NULL;
    if (from >= to || rl_key_tag(r->key, r->key_len, &st, &tl))
        return 0;
    if (memchr(r->key, '}', r->key_len))
        return -1;
    for (int k = from; k < to; k++)
        need += len[k] + 2;
    char *w = *buf = malloc(need);
    if (!w)
        return -1;
    for (int k = from; k < to; k++) {
        if (len[k] < r->key_len || memcmp(argv[k], r->key, r->key_len) != 0)
            continue;
        w[0] = '{';
        memcpy(w + 1, r->key, r->key_len);
        w[1 + r->key_len] = '}';
        memcpy(w + 2 + r->key_len, argv[k] + r->key_len, len[k] - r->key_len);
        argv[k] = w;
        len[k] += 2;
        w += len[k];
    }
    return 0;
}

static long long format_elect(char **out, const rl_round *r, int via, int tagged)
{
    const char *argv[4 + 3 + RL_ELECT_ARGS];
    size_t len[4 + 3 + RL_ELECT_ARGS];
    int n = 0;
    argv[n] = via == RL_VIA_FCALL ? "FCALL" : via == RL_VIA_EVAL ? "EVAL" : "EVALSHA";
    argv[n] = argv[n], len[n] = strlen(argv[n]), n++;
    argv[n] = via == RL_VIA_FCALL ? "redlock_elect" : via == RL_VIA_EVAL ? rl_script_elect : rl_sha_elect;
    len[n] = strlen(argv[n]), n++;
    argv[n] = "3", len[n++] = 1;
    argv[n] = r->key, len[n++] = r->key_len;
    for (int k = 0; k < 2; k++)
        argv[n] = r->ekeys[k], len[n++] = r->ekey_len[k];
    char *tagbuf = NULL;
    if (tagged && tag_keys(r, argv, len, 4, n, &tagbuf) != 0)
        return -1;
    for (int k = 0; k < RL_ELECT_ARGS; k++)
        argv[n] = r->eargv[k] ? r->eargv[k] : "", len[n] = strlen(argv[n]), n++;
    long long rc = redisFormatCommandArgv(out, n, argv, len);
    free(tagbuf);
    return rc;
}

/* A number the script sent as a decimal string; 0 if it is not one. */
static int elect_number(const redisReply *e, uint64_t *v)
{
    *v = 0;
    if (e->type == REDIS_REPLY_INTEGER) {
        if (e->integer < 0)
            return -1;
        *v = (uint64_t)e->integer;
        return 0;
    }
    return decimal(e, v);
}

/* A write or clear: 1 or 0, as the lock's scripts. A read: {present, term,
 * revision, value, pttl}, kept in the round's array for the node. */
static void parse_elect(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    if (rep->type == REDIS_REPLY_INTEGER) {
        parse_script(r, rep, p);
        return;
    }
    rl_elect_node *e = r->elect ? &r->elect[p->node] : NULL;
    if (!e || rep->type != REDIS_REPLY_ARRAY || rep->elements != 5 || rep->element[0]->type != REDIS_REPLY_INTEGER ||
        rep->element[3]->type != REDIS_REPLY_STRING || rep->element[4]->type != REDIS_REPLY_INTEGER) {
        unexpected(r, rep, p);
        return;
    }
    if (elect_number(rep->element[1], &e->term) != 0 || elect_number(rep->element[2], &e->revision) != 0) {
        say(p, RL_ERR_SERVER, "the election record's term or revision is not a number");
        return;
    }
    if (rep->element[3]->len > REDLOCK_ELECTION_MAX_VALUE) {
        say(p, RL_ERR_SERVER, "the election record's value is %zu bytes, over the limit of %d", rep->element[3]->len,
            REDLOCK_ELECTION_MAX_VALUE);
        return;
    }
    e->present = rep->element[0]->integer == 1;
    memcpy(e->value, rep->element[3]->str, rep->element[3]->len);
    e->value[rep->element[3]->len] = '\0';
    e->pttl_ms = rep->element[4]->integer;
    p->out = RL_YES;
}

/* RL_CMD_EPOCH: the plain check's PTTL of the marker, or the script's
 * {marker, longest TTL, PTTL, reason, PTTL allowed}, into r->epoch[node];
 * the outcome is RL_YES for any whole reply (epoch.c reads what it says). */
static void parse_epoch(const rl_round *r, const redisReply *rep, rl_parsed *p)
{
    rl_epoch_node *e = r->epoch ? &r->epoch[p->node] : NULL;
    if (!e) {
        say(p, RL_ERR_SERVER, "unexpected reply (not a Redis or Valkey server?)");
        return;
    }
    e->max_ttl_ms = 0;   /* not said: epoch.c reads it again when it needs it */
    e->pttl_ok = -1;
    e->why[0] = '\0';
    if (rep->type == REDIS_REPLY_INTEGER) {
        e->pttl = rep->integer;
    } else if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 5 || rep->element[3]->type != REDIS_REPLY_STRING) {
        say(p, RL_ERR_SERVER, "unexpected reply (not a Redis or Valkey server?)");
        return;
    } else {
        for (size_t k = 0; k < 5; k++) {
            if (k != 3 && rep->element[k]->type != REDIS_REPLY_INTEGER) {
                say(p, RL_ERR_SERVER, "unexpected reply (not a Redis or Valkey server?)");
                return;
            }
        }
        long long ttl = rep->element[1]->integer;
        e->max_ttl_ms = ttl < 0 ? 0 : ttl > (long long)REDLOCK_MAX_TTL_MS ? REDLOCK_MAX_TTL_MS : (uint32_t)ttl;
        e->pttl = rep->element[0]->integer ? rep->element[2]->integer : -2;
        const redisReply *w = rep->element[3];
        rl_fmt(e->why, sizeof e->why, "%.*s", (int)(w->len < 90 ? w->len : 90), w->str);
        e->pttl_ok = rep->element[4]->integer != 0;
    }
    /* the marker's bands (internal.h, RL_EPOCH_BASE_MS) */
    e->marker = e->pttl != -2;
    e->young = e->pttl > RL_EPOCH_BORN_MS - RL_EPOCH_YOUNG_MS && e->pttl <= RL_EPOCH_BORN_MS;
    e->q_ms = e->pttl > RL_EPOCH_BASE_MS ? e->pttl - RL_EPOCH_BASE_MS
              : e->pttl == -3 && e->why[0] ? -1 : 0;   /* -3: no PTTL, Q's reason there for an unknown time */
    if (e->q_ms > 2 * (int64_t)REDLOCK_MAX_TTL_MS)
        e->q_ms = 2 * (int64_t)REDLOCK_MAX_TTL_MS;   /* longer than any quarantine this library sets */
    e->reply_us = rl_now_us();
    e->jump_ms = 0;
    e->doubt_ms = 0;
    if (e->prev_pttl > 0 && e->pttl > 0 && !rl_epoch_remade(e->prev_pttl, e->pttl)) {
        /* Between the two readings at most span passed: a PTTL that fell
         * further, beyond the drift allowed and PTTL's rounding to the ms,
         * means a clock that jumped forward. (A marker set again in
         * between, rl_epoch_remade, gives no reading.) */
        int64_t fell = e->prev_pttl - e->pttl;
        int64_t span = e->reply_us + e->slept_us - e->prev_lo_us,
                moved = (fell > INT64_MAX / 2000 ? INT64_MAX / 2000 : fell) * 1000;
        int64_t allow = (int64_t)((double)span * e->drift_factor) + e->drift_min_us + 2000;
        /* What a lock of this TTL allows a node's clock (its validity's
         * drift term, and the rounding): over a span longer than the TTL,
         * a lead between that and the span's allowance may be drift or a
         * step that expired a holder's key early (models/mutex.pml,
         * mutex-step-unseen). */
        int64_t ttl_us = (int64_t)r->ttl_ms * 1000,
                lock_allow = (int64_t)((double)ttl_us * e->drift_factor) + e->drift_min_us + 2000;
        if (moved > span + allow)
            e->jump_ms = (moved - span) / 1000;
        else if (span > ttl_us && moved > span + lock_allow)
            e->doubt_ms = (moved - span) / 1000;
    }
    e->heard = 1;
    p->out = RL_YES;
}
