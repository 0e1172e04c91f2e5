/* SPDX-License-Identifier: BSD-3-Clause */
/* util.c: helpers of the redlock tool: messages, durations, signals, time,
 * node connections and replies, JSON. Settings are config.c's. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
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

/* ---- messages ---- */

static void vmsg(const char *cmd, const char *fmt, va_list ap)
{
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    /* One line per error, whatever a server or the library said. */
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (cmd)
        fprintf(stderr, "redlock %s: %s\n", cmd, buf);
    else
        fprintf(stderr, "redlock: %s\n", buf);
}

void cli_err(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(cmd, fmt, ap);
    va_end(ap);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (cmd)
        cli_err(cmd, "%s (see 'redlock %s --help')", buf, cmd);
    else
        cli_err(NULL, "%s (see 'redlock --help')", buf);
    return CLI_EXIT_USAGE;
}

/* ---- numbers, durations, signals, clocks ---- */

int cli_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_duration(const char *s, int64_t *out_ms, int allow_forever)
{
    if (!s)
        return -1;
    while (isspace((unsigned char)*s))
        s++;
    if (allow_forever && (!strcasecmp(s, "forever") || !strcasecmp(s, "inf") || !strcasecmp(s, "infinity"))) {
        *out_ms = CLI_WAIT_FOREVER;
        return 0;
    }
    if (!isdigit((unsigned char)*s) && *s != '.')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    double mult;
    if (!*end || !strcmp(end, "s"))
        mult = 1000;
    else if (!strcmp(end, "ms"))
        mult = 1;
    else if (!strcmp(end, "m"))
        mult = 60000;
    else if (!strcmp(end, "h"))
        mult = 3600000;
    else if (!strcmp(end, "d"))
        mult = 86400000;
    else
        return -1;
    double ms = v * mult;
    if (ms > 365.0 * 86400000)  /* a year: anything longer is a typo */
        return -1;
    *out_ms = (int64_t)llround(ms);
    return 0;
}

const char *cli_fmt_duration(int64_t ms, char *buf, size_t size)
{
    if (ms < 0)
        snprintf(buf, size, "-%s", cli_fmt_duration(-ms, (char[32]){0}, 32));
    else if (ms < 1000)
        snprintf(buf, size, "%lldms", (long long)ms);
    else if (ms < 60000 && ms % 1000 == 0)
        snprintf(buf, size, "%llds", (long long)(ms / 1000));
    else if (ms < 60000)
        snprintf(buf, size, "%.1fs", (double)ms / 1000);
    else if (ms < 3600000)
        snprintf(buf, size, "%lldm%llds", (long long)(ms / 60000), (long long)(ms % 60000 / 1000));
    else
        snprintf(buf, size, "%lldh%lldm", (long long)(ms / 3600000), (long long)(ms % 3600000 / 60000));
    return buf;
}

static const struct { const char *name; int sig; } signames[] = {
    { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL },
    { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
    { "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "ABRT", SIGABRT }, { "PIPE", SIGPIPE },
};

int cli_parse_signal(const char *s)
{
    long n;
    if (!s || !*s)
        return -1;
    if (cli_parse_long(s, 1, 64, &n) == 0)
        return (int)n;
    if (!strncasecmp(s, "SIG", 3))
        s += 3;
    for (size_t i = 0; i < sizeof signames / sizeof signames[0]; i++)
        if (!strcasecmp(s, signames[i].name))
            return signames[i].sig;
    return -1;
}

const char *cli_signal_name(int sig)
{
    static const char *full[] = { [SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT",
                                  [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1", [SIGUSR2] = "SIGUSR2",
                                  [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM", [SIGCONT] = "SIGCONT",
                                  [SIGSTOP] = "SIGSTOP", [SIGABRT] = "SIGABRT", [SIGPIPE] = "SIGPIPE",
                                  [SIGSEGV] = "SIGSEGV", [SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE",
                                  [SIGILL] = "SIGILL", [SIGTSTP] = "SIGTSTP" };
    if (sig > 0 && (size_t)sig < sizeof full / sizeof full[0] && full[sig])
        return full[sig];
    return "signal";
}

int64_t cli_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t cli_now_ms(void)
{
    return cli_now_us() / 1000;
}

const char *cli_timestamp(char *buf, size_t size)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    snprintf(buf, size, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
    return buf;
}

int cli_endpoint_parse(const char *url, rl_endpoint *ep, char *err, size_t errsize)
{
    return rl_endpoint_parse(ep, url, err, errsize);
}

static void reply_error_text(redisReply *r, char *err, size_t errsize)
{
    snprintf(err, errsize, "%.*s", (int)r->len, r->str);
}

redisContext *cli_connect(const cli_common *c, const rl_endpoint *ep, int64_t timeout_ms, rl_reply_guard *guard,
                          char *err, size_t errsize, int *fail)
{
    *fail = CLI_FAIL_CONNECT;
    struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
    redisContext *ctx = ep->path ? redisConnectUnixWithTimeout(ep->path, tv)
                                 : redisConnectWithTimeout(ep->host, ep->port, tv);
    if (!ctx) {
        snprintf(err, errsize, "out of memory");
        return NULL;
    }
    if (ctx->err) {
        snprintf(err, errsize, "cannot connect: %s", ctx->errstr);
        redisFree(ctx);
        return NULL;
    }
    redisSetTimeout(ctx, tv);
    /* Before the first reply: hiredis's own reader builds nested replies
     * recursively, and a node answering "*1\r\n" a few hundred thousand
     * times would overflow our stack. */
    rl_reply_harden(ctx, guard);
    redisReply *r = NULL;
    /* Nothing is sent before the certificate has been verified. */
    if (ep->tls && cli_tls_start(c, ctx, ep->host, err, errsize, fail) != 0)
        goto fail;
    if (ep->password) {
        char why[256];
        r = ep->user ? cli_command(ctx, why, sizeof why, "AUTH %s %s", ep->user, ep->password)
                     : cli_command(ctx, why, sizeof why, "AUTH %s", ep->password);
        if (!r) {
            snprintf(err, errsize, "AUTH: %s", why);
            goto fail;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            reply_error_text(r, why, sizeof why);
            snprintf(err, errsize, "authentication failed: %s", why);
            *fail = CLI_FAIL_AUTH;
            goto fail;
        }
        rl_reply_free(r);
        r = NULL;
    }
    if (ep->db) {
        char why[256];
        r = cli_command(ctx, why, sizeof why, "SELECT %d", ep->db);
        if (!r) {
            snprintf(err, errsize, "SELECT: %s", why);
            goto fail;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            reply_error_text(r, why, sizeof why);
            snprintf(err, errsize, "SELECT %d: %s", ep->db, why);
            goto fail;
        }
        rl_reply_free(r);
        r = NULL;
    }
    return ctx;
fail:
    rl_reply_free(r);
    redisFree(ctx);
    return NULL;
}

int cli_read_reply(redisContext *ctx, redisReply **out, char *err, size_t errsize)
{
    rl_reply_guard *g = ctx->reader ? ctx->reader->privdata : NULL;
    if (!g) {
        /* Every context of the tool is hardened by cli_connect. */
        snprintf(err, errsize, "internal error: reply reader not hardened");
        *out = NULL;
        return CLI_FAIL_PROTOCOL;
    }
    if (rl_reply_read(ctx, g, out) == REDIS_OK)
        return 0;
    *out = NULL;
    if (!g->why)
        return cli_io_error(ctx, err, errsize);
    snprintf(err, errsize, "protocol error: the node sent a reply no Redis server sends (%s)", g->why);
    return CLI_FAIL_PROTOCOL;
}

redisReply *cli_command(redisContext *ctx, char *err, size_t errsize, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = redisvAppendCommand(ctx, fmt, ap);
    va_end(ap);
    redisReply *r = NULL;
    if (rc != REDIS_OK)
        cli_io_error(ctx, err, errsize);
    else
        cli_read_reply(ctx, &r, err, errsize);
    return r;
}

/* ---- JSON ---- */

void cli_json_bytes(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch < 0x20 || ch >= 0x7f)
            /* Non-ASCII bytes as U+00XX: always valid JSON, if lossy for UTF-8. */
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void cli_json_string(FILE *f, const char *s)
{
    if (!s)
        fputs("null", f);
    else
        cli_json_bytes(f, s, strlen(s));
}
