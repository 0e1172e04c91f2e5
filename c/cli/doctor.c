/* SPDX-License-Identifier: BSD-3-Clause */
/* doctor.c: 'redlock doctor': inspects each node over hiredis and reports what
 * would make Redlock unsafe there (eviction, persistence, replicas, the same
 * server twice, clock rate, scripts, ACLs), each with a one-line fix. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "redlock.h"

#define CMD "doctor"
#define DEFAULT_TIMEOUT_MS 1000
#define DEFAULT_PROBE_MS 1000
#define DEFAULT_TTL_MS 30000

/* Scripts with the same commands as the library's release and extension
 * scripts, so that an ACL that would break those breaks these too. */
static const char release_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
static const char extend_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

static void help(void)
{
    fputs("usage: redlock doctor [options]\n"
          "\n"
          "Connects to each node and reports what would make Redlock unsafe or unusable there,\n"
          "each finding with a severity (info, warn, severe) and a one-line fix. It writes only\n"
          "its own short-lived probe keys (KEY_PREFIX + \"redlock-doctor:*\"), and deletes them.\n"
          "\n"
          "options:\n"
          "      --nodes URL,URL,...     nodes (else $REDLOCK_NODES, else the config file)\n"
          "      --config FILE           config file (else $REDLOCK_CONFIG)\n"
          "      --key-prefix PREFIX     prefix of the lock keys (the ACL checks use it)\n"
          "      --ttl DURATION          the longest lock TTL you use, for advice (default 30s)\n"
          "      --timeout DURATION      connect and reply deadline per node (default 1s)\n"
          "      --clock-probe DURATION  how long to compare each node's expiry clock with ours\n"
          "                              (default 1s; 0 skips the check)\n"
          "      --json                  print JSON instead of text\n"
          CLI_TLS_HELP
          "  -h, --help                  this help\n"
          "\n"
          "checks: reachable, PING/SET NX PX/EVAL/EVALSHA allowed by ACLs, scripting available,\n"
          "maxmemory-policy noeviction, persistence, replicas and replica-of, cluster mode, the\n"
          "same server listed twice (same run_id), clock rate vs this host, node count.\n"
          "exit codes: 0 no severe finding; 1 at least one severe finding; 2 usage error.\n",
          stdout);
}

enum { SEV_INFO, SEV_WARN, SEV_SEVERE };
static const char *sev_name[] = { "info", "warn", "severe" };

typedef struct finding {
    int node;                  /* 1-based; 0 = about the whole set */
    int severity;
    const char *check;
    char message[512];
    char fix[384];
} finding;

typedef struct dnode {
    rl_endpoint ep;
    redisContext *ctx;
    rl_reply_guard guard;      /* ctx's hardened reader; outlives ctx */
    int broken;                /* the connection failed during the checks: reported once */
    char error[512];           /* connect failure */
    char run_id[64], version[48], server[16], role[16], master[300];
    char policy[48], save[256], fsync[16];
    int have_info, have_save, aof, replicas, cluster;
    /* clock probe */
    int probing;
    char clock_skip[300];      /* why the probe could not be made; "" if it was */
    char clock_key[128];
    long long pttl0;
    int64_t mid0_us, rtt0_us;
} dnode;

typedef struct doctor {
    finding *f;
    size_t n, cap;
    int counts[3];
} doctor;

static void add(doctor *d, int node, int severity, const char *check, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void add(doctor *d, int node, int severity, const char *check, const char *fix, const char *fmt, ...)
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

/* Copies the value of "field:" from an INFO reply into out. */
static int info_field(const char *info, const char *field, char *out, size_t size)
{
    size_t fl = strlen(field);
    for (const char *p = info; p && *p;) {
        if (!strncmp(p, field, fl) && p[fl] == ':') {
            const char *v = p + fl + 1;
            size_t n = strcspn(v, "\r\n");
            snprintf(out, size, "%.*s", (int)n, v);
            return 1;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

static int is_acl_error(const redisReply *r)
{
    /* A command denied inside a script is reported as "ERR The user executing
     * the script can't run this command or subcommand". */
    return r && r->type == REDIS_REPLY_ERROR &&
           (strstr(r->str, "NOPERM") || strstr(r->str, "no permission") || strstr(r->str, "No permission") ||
            strstr(r->str, "can't run this command"));
}

/* A node whose connection failed during the checks (a reply the hardened
 * reader refused, a timeout, a reset) is reported once, as severe, and not
 * checked further: the checks after it would only repeat the failure. */
static int usable(doctor *d, int idx, dnode *n)
{
    if (!n->ctx)
        return 0;
    if (!n->ctx->err)
        return 1;
    if (!n->broken) {
        n->broken = 1;
        char why[300];
        if (n->guard.why)
            snprintf(why, sizeof why, "the node sent a reply no Redis server sends (%s)", n->guard.why);
        else
            cli_io_error(n->ctx, why, sizeof why);
        add(d, idx, SEV_SEVERE, n->guard.why ? "protocol" : "connection",
            n->guard.why ? "check that the URL reaches a Redis or Valkey server, and what listens on its port"
                         : "check the node's health and network, or raise --timeout",
            "%s; the node was not checked further", why);
    }
    return 0;
}

static void random_hex(char *out, size_t nbytes)
{
    unsigned char b[32];
    if (nbytes > sizeof b)
        nbytes = sizeof b;
    if (getrandom(b, nbytes, 0) != (ssize_t)nbytes) {
        /* Unique enough for a probe key. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        for (size_t i = 0; i < nbytes; i++)
            b[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^ (getpid() >> (i % 2 * 8)) ^ i);
    }
    for (size_t i = 0; i < nbytes; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void config_get(dnode *n, const char *name, char *out, size_t size, int *have)
{
    char err[256];
    redisReply *r = cli_command(n->ctx, err, sizeof err, "CONFIG GET %s", name);
    *have = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
        snprintf(out, size, "%s", r->element[1]->str);
        *have = 1;
    } else if (r && r->type == REDIS_REPLY_MAP && r->elements == 2) {
        snprintf(out, size, "%s", r->element[1]->str);
        *have = 1;
    }
    rl_reply_free(r);
}

static void check_info(doctor *d, int idx, dnode *n, const char *ttl_text)
{
    char err[256], buf[64];
    redisReply *r = cli_command(n->ctx, err, sizeof err, "INFO");
    if (!r && n->ctx->err)
        return;  /* reported by usable() */
    if (!r || r->type == REDIS_REPLY_ERROR) {
        add(d, idx, SEV_WARN, "info-denied",
            "grant the doctor's user +info (and +config|get), or run doctor as an administrator",
            "INFO failed (%s): replication, memory and persistence were not checked",
            r ? r->str : err);
        rl_reply_free(r);
        return;
    }
    const char *info = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_VERB ? r->str : "";
    info_field(info, "run_id", n->run_id, sizeof n->run_id);
    if (info_field(info, "valkey_version", n->version, sizeof n->version))
        snprintf(n->server, sizeof n->server, "valkey");
    else if (info_field(info, "redis_version", n->version, sizeof n->version))
        snprintf(n->server, sizeof n->server, "%.15s", info_field(info, "server_name", buf, sizeof buf) ? buf : "redis");
    /* Every Redis and Valkey INFO has its version and run_id. Without them
     * the node is not what it claims (a proxy, a fake, a broken server),
     * and nothing else it says about itself can be trusted: severe. */
    if (!*info || !n->version[0] || strlen(n->run_id) != 40) {
        add(d, idx, SEV_SEVERE, "info-invalid",
            "check that the URL reaches a Redis or Valkey server itself, not a proxy or another service",
            "INFO is %s: replication, memory and persistence cannot be checked, and the node is not "
            "a Redis or Valkey server as it claims",
            r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_VERB ? "not a text reply"
            : !*info                                                     ? "empty"
                                                                         : "unparsable (no version or run_id)");
        n->run_id[0] = n->version[0] = n->server[0] = '\0';
        rl_reply_free(r);
        return;
    }
    n->have_info = 1;
    info_field(info, "role", n->role, sizeof n->role);
    if (info_field(info, "connected_slaves", buf, sizeof buf))
        n->replicas = atoi(buf);
    if (info_field(info, "cluster_enabled", buf, sizeof buf))
        n->cluster = atoi(buf);
    n->aof = -1;
    if (info_field(info, "aof_enabled", buf, sizeof buf))
        n->aof = atoi(buf);
    int have_policy = info_field(info, "maxmemory_policy", n->policy, sizeof n->policy);
    if (!strcmp(n->role, "slave")) {
        char host[256] = "?", port[16] = "?", link[16] = "";
        info_field(info, "master_host", host, sizeof host);
        info_field(info, "master_port", port, sizeof port);
        info_field(info, "master_link_status", link, sizeof link);
        snprintf(n->master, sizeof n->master, "%s:%s", host, port);
        add(d, idx, SEV_SEVERE, "replica",
            "list only independent primaries: run REPLICAOF NO ONE on it, or replace it with its own server",
            "node is a replica of %s (link %s): it refuses lock writes (READONLY) or, promoted after a "
            "failover, lacks recent locks",
            n->master, *link ? link : "unknown");
    } else if (n->replicas > 0) {
        add(d, idx, SEV_WARN, "has-replicas",
            "do not fail over lock nodes: a restarted or lost primary must stay out for longer than the TTL",
            "node has %d replica(s): replication is asynchronous, so a failover to one can lose lock keys",
            n->replicas);
    }
    if (n->cluster)
        add(d, idx, SEV_SEVERE, "cluster-mode", "use standalone servers (cluster-enabled no) as Redlock nodes",
            "node runs in cluster mode: lock keys of other slots are redirected (MOVED) and fail");
    rl_reply_free(r);

    int have;
    if (!have_policy)
        config_get(n, "maxmemory-policy", n->policy, sizeof n->policy, &have_policy);
    if (!have_policy)
        add(d, idx, SEV_WARN, "policy-unknown", "grant +config|get, or check maxmemory-policy by hand",
            "could not read maxmemory-policy");
    else if (strcmp(n->policy, "noeviction") != 0)
        add(d, idx, SEV_SEVERE, "eviction",
            "CONFIG SET maxmemory-policy noeviction, and set it in the server's config file",
            "maxmemory-policy is %s: under memory pressure lock keys can be evicted, and another "
            "client can take a lock that is still held",
            n->policy);

    config_get(n, "save", n->save, sizeof n->save, &n->have_save);
    config_get(n, "appendfsync", n->fsync, sizeof n->fsync, &have);
    if (!have)
        n->fsync[0] = '\0';
    char fix[384];
    snprintf(fix, sizeof fix,
             "delay restarts of this node by more than the longest lock TTL (%s), or set appendonly yes "
             "with appendfsync always",
             ttl_text);
    if (n->aof == 0 && n->have_save && n->save[0] == '\0')
        add(d, idx, SEV_WARN, "no-persistence", fix,
            "persistence is off (appendonly no, no save points): a restarted node has forgotten the locks it "
            "held, so a second client can get a majority");
    else if (n->aof == 0 && n->have_save)
        add(d, idx, SEV_WARN, "rdb-only", fix,
            "only RDB snapshots (save \"%s\"), no AOF: after a crash the locks taken since the last snapshot "
            "are gone",
            n->save);
    else if (n->aof == 0)
        add(d, idx, SEV_WARN, "no-aof", fix,
            "appendonly is off (save points unknown: CONFIG GET denied): after a crash recent locks are gone");
    else if (n->aof == 1 && n->fsync[0] && strcmp(n->fsync, "always") != 0)
        add(d, idx, SEV_INFO, "aof-fsync", fix,
            "AOF with appendfsync %s: a power loss can drop the most recent locks", n->fsync);
}

static void check_commands(doctor *d, int idx, dnode *n, const char *prefix)
{
    char err[256];
    redisReply *r = cli_command(n->ctx, err, sizeof err, "PING");
    if (!r) {
        add(d, idx, SEV_SEVERE, "ping", "check the node's health and network", "PING failed: %s", err);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR)
        add(d, idx, SEV_SEVERE, is_acl_error(r) ? "acl-ping" : "ping",
            "grant the lock user +ping (ACL SETUSER <user> +ping)", "PING refused: %s", r->str);
    rl_reply_free(r);

    r = cli_command(n->ctx, err, sizeof err, "EVAL %s 0", "return 1");
    if (r && r->type == REDIS_REPLY_ERROR) {
        if (is_acl_error(r))
            add(d, idx, SEV_SEVERE, "acl-eval", "ACL SETUSER <user> +eval +evalsha +script|load",
                "EVAL is denied by the ACL (%s): locks could be taken but never released or extended", r->str);
        else
            add(d, idx, SEV_SEVERE, "scripts", "enable Lua scripting (EVAL/EVALSHA must not be renamed or disabled)",
                "Lua scripts are unavailable (EVAL \"return 1\": %s): release and extension need them", r->str);
    } else if (!r) {
        add(d, idx, SEV_SEVERE, "scripts", "check the node's health", "EVAL failed: %s", err);
    }
    rl_reply_free(r);

    char hex[33], key[1200], val[33];
    random_hex(hex, 16);
    random_hex(val, 16);
    snprintf(key, sizeof key, "%sredlock-doctor:%s", prefix ? prefix : "", hex);
    char acl_fix[400];
    snprintf(acl_fix, sizeof acl_fix,
             "ACL SETUSER <user> on +ping +set +get +del +pexpire +eval +evalsha ~%s*", prefix ? prefix : "");

    r = cli_command(n->ctx, err, sizeof err, "SET %s %s NX PX %d", key, val, 60000);
    int set_ok = r && r->type == REDIS_REPLY_STATUS;
    if (!r)
        add(d, idx, SEV_SEVERE, "set", "check the node's health", "SET NX PX failed: %s", err);
    else if (is_acl_error(r))
        add(d, idx, SEV_SEVERE, "acl-set", acl_fix, "SET NX PX on lock keys is denied: %s", r->str);
    else if (r->type == REDIS_REPLY_ERROR)
        add(d, idx, SEV_SEVERE, "set", "the node must accept writes (not a replica, not out of memory)",
            "SET NX PX on a lock key failed: %s", r->str);
    rl_reply_free(r);
    if (!set_ok)
        return;

    /* Commands that must fail. A node that says OK to them says OK to
     * anything: to every lock's SET NX too, so a majority of such nodes
     * lets any number of clients hold the same lock (docs/security.md,
     * Trust model). The key was just set, so SET NX must answer nil; and no
     * server knows the command below. */
    r = cli_command(n->ctx, err, sizeof err, "SET %s %s NX PX %d", key, "another-value", 60000);
    if (r && r->type != REDIS_REPLY_NIL && !is_acl_error(r))
        add(d, idx, SEV_SEVERE, "fake-ok",
            "remove this node: check that the URL reaches a Redis or Valkey server itself, not a proxy or fake",
            "SET NX on a key that exists answered %s instead of nil: the node grants locks that are held, so "
            "two clients can hold one lock",
            r->type == REDIS_REPLY_STATUS ? "+OK" : "something else");
    rl_reply_free(r);
    r = cli_command(n->ctx, err, sizeof err, "REDLOCK-DOCTOR-NO-SUCH-COMMAND %s", hex);
    if (r && r->type != REDIS_REPLY_ERROR)
        add(d, idx, SEV_SEVERE, "fake-ok",
            "remove this node: check that the URL reaches a Redis or Valkey server itself, not a proxy or fake",
            "an unknown command answered %s instead of an error: the node does not check what it is told",
            r->type == REDIS_REPLY_STATUS ? "+OK" : "a value");
    rl_reply_free(r);
    if (!usable(d, idx, n))
        return;

    /* EVALSHA of an unknown script: NOSCRIPT if allowed, NOPERM if not; the
     * ACL is checked before the script cache. */
    r = cli_command(n->ctx, err, sizeof err, "EVALSHA %s 1 %s %s", "ffffffffffffffffffffffffffffffffffffffff", key,
                    val);
    if (is_acl_error(r))
        add(d, idx, SEV_SEVERE, "acl-evalsha", acl_fix,
            "EVALSHA is denied by the ACL (%s): every release and extension would fail", r->str);
    rl_reply_free(r);

    r = cli_command(n->ctx, err, sizeof err, "EVAL %s 1 %s %s %d", extend_script, key, val, 60000);
    if (is_acl_error(r))
        add(d, idx, SEV_SEVERE, "acl-extend", acl_fix, "the extension script is denied: %s", r->str);
    else if (r && r->type == REDIS_REPLY_ERROR && !strstr(r->str, "unknown command"))
        add(d, idx, SEV_SEVERE, "scripts", "enable Lua scripting", "the extension script failed: %s", r->str);
    rl_reply_free(r);

    r = cli_command(n->ctx, err, sizeof err, "EVAL %s 1 %s %s", release_script, key, val);
    int released = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (is_acl_error(r))
        add(d, idx, SEV_SEVERE, "acl-release", acl_fix, "the release script is denied: %s", r->str);
    rl_reply_free(r);
    if (!released) {
        r = cli_command(n->ctx, err, sizeof err, "DEL %s", key);
        rl_reply_free(r);  /* if DEL is denied too, the key expires in 60 s */
    }
}

static void clock_start(dnode *n, const char *prefix, int64_t probe_ms)
{
    char err[256], hex[33];
    random_hex(hex, 16);
    snprintf(n->clock_key, sizeof n->clock_key, "%.60sredlock-doctor-clock:%s", prefix ? prefix : "", hex);
    redisReply *r = cli_command(n->ctx, err, sizeof err, "SET %s 1 PX %lld", n->clock_key,
                                (long long)(probe_ms + 60000));
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        snprintf(n->clock_skip, sizeof n->clock_skip, "SET PX %s", !r ? err : r->type == REDIS_REPLY_ERROR
                                                                             ? r->str : "gave no status reply");
    rl_reply_free(r);
    if (!ok)
        return;
    int64_t t0 = cli_now_us();
    r = cli_command(n->ctx, err, sizeof err, "PTTL %s", n->clock_key);
    int64_t t1 = cli_now_us();
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 0 && r->integer <= probe_ms + 60000) {
        n->probing = 1;
        n->pttl0 = r->integer;
        n->mid0_us = (t0 + t1) / 2;
        n->rtt0_us = t1 - t0;
    } else {
        snprintf(n->clock_skip, sizeof n->clock_skip, "PTTL of the key just set %s",
                 !r                              ? err
                 : r->type == REDIS_REPLY_ERROR   ? r->str
                 : r->type == REDIS_REPLY_INTEGER ? "was out of range"
                                                  : "was not an integer");
    }
    rl_reply_free(r);
}

/* A clock probe that could not be made leaves the node's expiry clock
 * unchecked: a node that cannot keep a TTL, or lies about it, is the node
 * where locks end unexpectedly. Severe, and said so. */
static void clock_skipped(doctor *d, int idx, const dnode *n)
{
    add(d, idx, SEV_SEVERE, "clock-skipped",
        "check that the node keeps TTLs (SET PX, PTTL) and that the lock user may run PTTL",
        "clock probe skipped: %s; the node's expiry clock is unchecked", n->clock_skip);
}

static void clock_finish(doctor *d, int idx, dnode *n)
{
    if (!n->probing)
        return;
    char err[256];
    int64_t t0 = cli_now_us();
    redisReply *r = cli_command(n->ctx, err, sizeof err, "PTTL %s", n->clock_key);
    int64_t t1 = cli_now_us();
    if (!(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 0 && r->integer <= n->pttl0))
        snprintf(n->clock_skip, sizeof n->clock_skip, "the second PTTL %s",
                 !r                              ? err
                 : r->type == REDIS_REPLY_ERROR   ? r->str
                 : r->type == REDIS_REPLY_INTEGER ? "was out of range (the key expired or grew)"
                                                  : "was not an integer");
    else {
        double local_ms = (double)((t0 + t1) / 2 - n->mid0_us) / 1000;
        double remote_ms = (double)(n->pttl0 - r->integer);
        /* PTTL has 1 ms steps at each end, and each reading may be anywhere
         * within its round trip. */
        double slack_ms = 2 + (double)(n->rtt0_us + (t1 - t0)) / 2000;
        double dev = (remote_ms - local_ms) / local_ms * 100;
        double margin = fabs(remote_ms - local_ms) - slack_ms;
        double excess = margin > 0 ? margin / local_ms * 100 : 0;
        const char *fix = "check time sync on the node's host (chrony/ntpd slewing or steps, VM clock source); "
                          "expiry follows the server's clock";
        int sev = excess > 5 ? SEV_SEVERE : excess > 1 ? SEV_WARN : SEV_INFO;
        add(d, idx, sev, "clock-rate", sev == SEV_INFO ? "none needed" : fix,
            "clock rate: the node's expiry clock ran %+.2f%% vs this host over %.0f ms (+/- %.2f%%)%s", dev, local_ms,
            slack_ms / local_ms * 100,
            sev == SEV_SEVERE ? ": TTLs there end far from when clients expect"
            : sev == SEV_WARN ? ": more than the 1% drift allowance" : "");
    }
    rl_reply_free(r);
    r = cli_command(n->ctx, err, sizeof err, "DEL %s", n->clock_key);
    rl_reply_free(r);
}

static void print_text(const doctor *d, const dnode *nodes, size_t n, size_t quorum, int64_t probe_ms)
{
    char p[32];
    printf("redlock doctor: %zu node%s, quorum %zu, clock probe %s\n", n, n == 1 ? "" : "s", quorum,
           probe_ms ? cli_fmt_duration(probe_ms, p, sizeof p) : "off");
    for (size_t i = 0; i <= n; i++) {
        int idx = i < n ? (int)i + 1 : 0;
        int any = 0;
        for (size_t k = 0; k < d->n; k++)
            any |= d->f[k].node == idx;
        if (idx == 0 && !any)
            break;
        printf("\n");
        if (idx) {
            const dnode *nd = &nodes[i];
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
    printf("\nsummary: %d severe, %d warn, %d info\n", d->counts[SEV_SEVERE], d->counts[SEV_WARN],
           d->counts[SEV_INFO]);
}

static void print_json(const doctor *d, const dnode *nodes, size_t n, size_t quorum)
{
    printf("{\"quorum\":%zu,\"nodes\":[", quorum);
    for (size_t i = 0; i < n; i++) {
        const dnode *nd = &nodes[i];
        printf("%s{\"index\":%zu,\"url\":", i ? "," : "", i + 1);
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
        if (f->node)
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

int cli_doctor(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "nodes", required_argument, NULL, OPT_NODES },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "key-prefix", required_argument, NULL, OPT_KEY_PREFIX },
        { "ttl", required_argument, NULL, OPT_TTL },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "clock-probe", required_argument, NULL, OPT_CLOCK_PROBE },
        { "json", no_argument, NULL, OPT_JSON },
        CLI_TLS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    cli_common common;
    cli_common_init(&common);
    int json = 0, rc = 0;
    int64_t timeout_ms = DEFAULT_TIMEOUT_MS, probe_ms = DEFAULT_PROBE_MS;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *bad = argv[optind - 1];
        if (c == 'h') {
            help();
            cli_common_free(&common);
            return 0;
        } else if (c == OPT_JSON) {
            json = 1;
        } else if (c == OPT_TIMEOUT) {
            if (cli_parse_duration(optarg, &timeout_ms, 0) || timeout_ms <= 0)
                rc = cli_usage(CMD, "--timeout: '%s' is not a positive duration (e.g. 500ms)", optarg);
        } else if (c == OPT_CLOCK_PROBE) {
            if (cli_parse_duration(optarg, &probe_ms, 0) || probe_ms > 60000 || (probe_ms && probe_ms < 100))
                rc = cli_usage(CMD, "--clock-probe: '%s' must be 0 (skip) or a duration from 100ms to 1m", optarg);
        } else if (c == ':') {
            rc = cli_usage(CMD, "option '%s' needs a value", bad);
        } else if (c == '?' || cli_common_option(&common, CMD, c, optarg) != 1) {
            rc = optopt && c == '?' ? cli_usage(CMD, "unknown option '-%c'", optopt)
                                    : cli_usage(CMD, "unknown option '%s'", bad);
        }
        if (rc)
            break;
    }
    if (!rc && optind < argc)
        rc = cli_usage(CMD, "unexpected argument '%s'", argv[optind]);
    if (!rc)
        rc = cli_common_resolve(&common, CMD, 1);
    size_t n = common.n_urls;
    dnode *nodes = rc ? NULL : calloc(n, sizeof *nodes);
    if (!rc && !nodes) {
        cli_err(CMD, "out of memory");
        rc = CLI_EXIT_SOFTWARE;
    }
    if (!rc)
        rc = cli_nodes_check(&common, CMD, 0);
    for (size_t i = 0; !rc && i < n; i++) {
        char err[512];
        cli_endpoint_parse(common.urls[i], &nodes[i].ep, err, sizeof err);  /* checked above */
    }
    redlock_options lib;
    cli_lib_options(&common, &lib);
    if (!rc)
        rc = cli_tls_prepare(&common, &lib, CMD);
    if (rc) {
        if (nodes)
            for (size_t i = 0; i < n; i++)
                rl_endpoint_clear(&nodes[i].ep);
        free(nodes);
        cli_common_free(&common);
        return rc;
    }

    doctor d;
    memset(&d, 0, sizeof d);
    char ttl_text[32];
    cli_fmt_duration(common.ttl_ms > 0 ? common.ttl_ms : DEFAULT_TTL_MS, ttl_text, sizeof ttl_text);
    size_t quorum = n / 2 + 1, reachable = 0, tls_nodes = 0;
    signal(SIGPIPE, SIG_IGN);  /* a node that closes its end must not kill us mid-write */

    for (size_t i = 0; i < n; i++) {
        dnode *nd = &nodes[i];
        tls_nodes += nd->ep.tls != 0;
        nd->guard = (rl_reply_guard)RL_REPLY_GUARD_INSPECT;
        nd->ctx = cli_connect(&common, &nd->ep, timeout_ms, &nd->guard, nd->error, sizeof nd->error);
        if (!nd->ctx) {
            int auth = strstr(nd->error, "authentication") != NULL;
            int tls = !strncmp(nd->error, "TLS", 3);
            const char *name = lib.tls_server_name ? lib.tls_server_name : nd->ep.host;
            char fix[384];
            if (strstr(nd->error, "mismatch"))
                snprintf(fix, sizeof fix,
                         "the server's certificate must name %.200s in its subjectAltName: use the name it "
                         "carries in the URL, or --tls-server-name",
                         name);
            else if (strstr(nd->error, "client certificate"))
                snprintf(fix, sizeof fix, "give a client certificate that the server's tls-ca-cert-file trusts, "
                                          "with --tls-cert and --tls-key");
            else if (strstr(nd->error, "expired"))
                snprintf(fix, sizeof fix, "renew the server's certificate");
            else if (strstr(nd->error, "does not speak TLS") || strstr(nd->error, "does the port speak TLS"))
                snprintf(fix, sizeof fix, "use redis:// for a plain-text port, or the server's tls-port");
            else
                snprintf(fix, sizeof fix, "give the CA that signed the server's certificate with --tls-ca-file or "
                                          "--tls-ca-dir, and check the certificate's dates");
            add(&d, (int)i + 1, SEV_SEVERE, auth ? "auth" : tls ? "tls" : "unreachable",
                auth  ? "check the user name and password in the URL (percent-encode special characters)"
                : tls ? fix
                      : "check the URL, that the server runs, and that this host may reach it",
                "%s", nd->error);
            continue;
        }
        reachable++;
        check_info(&d, (int)i + 1, nd, ttl_text);
        if (usable(&d, (int)i + 1, nd))
            check_commands(&d, (int)i + 1, nd, lib.key_prefix);
        usable(&d, (int)i + 1, nd);
    }
    /* The same server under two names (127.0.0.1 and localhost, a DNS
     * alias, a second listener...) would count twice toward the quorum. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (nodes[i].run_id[0] && !strcmp(nodes[i].run_id, nodes[j].run_id)) {
                add(&d, (int)i + 1, SEV_SEVERE, "duplicate",
                    "list each server once: every node must be a separate server",
                    "same server as node %zu (run_id %.12s...): it would count twice toward the quorum", j + 1,
                    nodes[i].run_id);
                break;
            }

    if (probe_ms > 0) {
        for (size_t i = 0; i < n; i++)
            if (usable(&d, (int)i + 1, &nodes[i]))
                clock_start(&nodes[i], lib.key_prefix, probe_ms);
        struct timespec ts = { .tv_sec = probe_ms / 1000, .tv_nsec = (long)(probe_ms % 1000) * 1000000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        for (size_t i = 0; i < n; i++) {
            if (usable(&d, (int)i + 1, &nodes[i]))
                clock_finish(&d, (int)i + 1, &nodes[i]);
            if (nodes[i].ctx && nodes[i].clock_skip[0])
                clock_skipped(&d, (int)i + 1, &nodes[i]);
        }
    } else if (reachable) {
        add(&d, 0, SEV_WARN, "clock-skipped", "run doctor without --clock-probe 0 (the default probe takes 1s)",
            "clock probe skipped (--clock-probe 0): no node's expiry clock was compared with this host's");
    }

    if (tls_nodes && lib.tls_insecure_skip_verify)
        add(&d, 0, SEV_WARN, "tls-insecure",
            "give the CA that signed the servers' certificates with --tls-ca-file (or tls_ca_file) instead",
            "--tls-insecure: the servers' certificates were not verified; anyone on the network path could pose "
            "as a node, and a lock client with the same settings would accept it");
    if (n < 3)
        add(&d, 0, SEV_WARN, "few-nodes", "use 5 (or at least 3) independent nodes",
            "%zu node%s: the lock cannot survive the failure of any node", n, n == 1 ? "" : "s");
    else if (n % 2 == 0)
        add(&d, 0, SEV_INFO, "even-nodes", "use an odd number of nodes",
            "%zu nodes tolerate as many failures (%zu) as %zu would", n, n - quorum, n - 1);
    if (reachable < quorum)
        add(&d, 0, SEV_SEVERE, "no-quorum", "bring the unreachable nodes back",
            "only %zu of %zu nodes answered; a lock needs %zu", reachable, n, quorum);

    if (json)
        print_json(&d, nodes, n, quorum);
    else
        print_text(&d, nodes, n, quorum, probe_ms);

    rc = d.counts[SEV_SEVERE] ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].ctx)
            redisFree(nodes[i].ctx);
        rl_endpoint_clear(&nodes[i].ep);
    }
    free(nodes);
    free(d.f);
    cli_common_free(&common);
    return rc;
}
