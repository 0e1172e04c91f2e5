/* SPDX-License-Identifier: BSD-3-Clause */
/* doctor_checks.c: what doctor checks, as two tables run in order by
 * doctor.c: the checks of one node, and the checks of the whole set. Each
 * check records findings (doctor_add) with a one-line fix; the table in
 * docs/cli.md lists them by name.
 *
 * The command checks write one short-lived probe key per node and run on it
 * the library's own extension and release scripts (lib_private.h), so that
 * an ACL that would break the library's commands breaks these too. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth_fix.h"
#include "doctor.h"
#include "lib_private.h"
#include "keys.h"

/* ---- helpers ---- */

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

/* A probe key's random part: the library's own random hex. */
static void probe_hex(char out[33])
{
    if (rl_random_hex(out, 16) != 0)  /* getrandom failed: unique enough for a probe key */
        snprintf(out, 33, "%08x%016llx", (unsigned)getpid(), (unsigned long long)cli_now_us());
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

/* ---- one node: what it is ---- */

/* Replication and cluster mode, from a valid INFO. */
static void check_role(doctor *d, dnode *n, const char *info)
{
    char buf[64];
    info_field(info, "role", n->role, sizeof n->role);
    if (info_field(info, "connected_slaves", buf, sizeof buf))
        n->replicas = atoi(buf);
    if (info_field(info, "cluster_enabled", buf, sizeof buf))
        n->cluster = atoi(buf);
    n->aof = -1;
    if (info_field(info, "aof_enabled", buf, sizeof buf))
        n->aof = atoi(buf);
    n->have_policy = info_field(info, "maxmemory_policy", n->policy, sizeof n->policy);
    if (!strcmp(n->role, "slave")) {
        char host[256] = "?", port[16] = "?", link[16] = "";
        info_field(info, "master_host", host, sizeof host);
        info_field(info, "master_port", port, sizeof port);
        info_field(info, "master_link_status", link, sizeof link);
        snprintf(n->master, sizeof n->master, "%s:%s", host, port);
        doctor_add(d, n->index, SEV_SEVERE, "replica",
                   "list only independent primaries: run REPLICAOF NO ONE on it, or replace it with its own server",
                   "node is a replica of %s (link %s): it refuses lock writes (READONLY) or, promoted after a "
                   "failover, lacks recent locks",
                   n->master, *link ? link : "unknown");
    } else if (n->replicas > 0) {
        doctor_add(d, n->index, SEV_WARN, "has-replicas",
                   "do not fail over lock nodes: a restarted or lost primary must stay out for longer than the TTL",
                   "node has %d replica(s): replication is asynchronous, so a failover to one can lose lock keys",
                   n->replicas);
    }
    if (n->cluster && !n->ep.cluster)
        doctor_add(d, n->index, SEV_SEVERE, "cluster-mode",
                   "give the whole cluster as one node, redis-cluster://host:port (docs/cluster.md), or use a "
                   "standalone server",
                   "node runs in cluster mode but is given as one server: lock keys of other slots are "
                   "redirected (MOVED) and fail, and its cluster's other masters are not independent of it");
}

static int check_info(doctor *d, dnode *n)
{
    char err[256], buf[64];
    redisReply *r = cli_command(n->ctx, err, sizeof err, "INFO");
    if (!r && n->ctx->err)
        return CHECK_NEXT;  /* reported by doctor_flag_broken */
    if (r && r->type == REDIS_REPLY_ERROR && cli_is_noauth(r->str)) {
        /* Connected, but the node refuses this client until it authenticates: every later
         * check would fail for that reason alone and list fixes that do not apply. */
        doctor_add(d, n->index, SEV_SEVERE, "auth", CLI_FIX_NOAUTH,
                   "the node refuses a client without a password (%s); its other checks were skipped", r->str);
        n->refused = 1;
        d->reachable--;
        rl_reply_free(r);
        return CHECK_STOP;
    }
    if (!r || r->type == REDIS_REPLY_ERROR) {
        doctor_add(d, n->index, SEV_WARN, "info-denied",
                   "grant the doctor's user +info (and +config|get), or run doctor as an administrator",
                   "INFO failed (%s): replication, memory and persistence were not checked", r ? r->str : err);
        rl_reply_free(r);
        return CHECK_NEXT;
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
        doctor_add(d, n->index, SEV_SEVERE, "info-invalid",
                   "check that the URL reaches a Redis or Valkey server itself, not a proxy or another service",
                   "INFO is %s: replication, memory and persistence cannot be checked, and the node is not "
                   "a Redis or Valkey server as it claims",
                   r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_VERB ? "not a text reply"
                   : !*info                                                     ? "empty"
                                                                                : "unparsable (no version or run_id)");
        n->run_id[0] = n->version[0] = n->server[0] = '\0';
        rl_reply_free(r);
        return CHECK_NEXT;
    }
    n->have_info = 1;
    check_role(d, n, info);
    rl_reply_free(r);
    return CHECK_NEXT;
}

static int check_eviction(doctor *d, dnode *n)
{
    if (!n->have_info)
        return CHECK_NEXT;
    if (!n->have_policy)
        config_get(n, "maxmemory-policy", n->policy, sizeof n->policy, &n->have_policy);
    if (!n->have_policy)
        doctor_add(d, n->index, SEV_WARN, "policy-unknown", "grant +config|get, or check maxmemory-policy by hand",
                   "could not read maxmemory-policy");
    else if (strcmp(n->policy, "noeviction") != 0)
        doctor_add(d, n->index, SEV_SEVERE, "eviction",
                   "CONFIG SET maxmemory-policy noeviction, and set it in the server's config file",
                   "maxmemory-policy is %s: under memory pressure lock keys can be evicted, and another "
                   "client can take a lock that is still held",
                   n->policy);
    return CHECK_NEXT;
}

static int check_persistence(doctor *d, dnode *n)
{
    if (!n->have_info)
        return CHECK_NEXT;
    int have;
    config_get(n, "save", n->save, sizeof n->save, &n->have_save);
    config_get(n, "appendfsync", n->fsync, sizeof n->fsync, &have);
    if (!have)
        n->fsync[0] = '\0';
    char fix[384];
    snprintf(fix, sizeof fix,
             "delay restarts of this node by more than the longest lock TTL (%s), or set appendonly yes "
             "with appendfsync always",
             d->ttl_text);
    if (n->aof == 0 && n->have_save && n->save[0] == '\0')
        doctor_add(d, n->index, SEV_WARN, "no-persistence", fix,
                   "persistence is off (appendonly no, no save points): a restarted node has forgotten the locks "
                   "it held, so a second client can get a majority");
    else if (n->aof == 0 && n->have_save)
        doctor_add(d, n->index, SEV_WARN, "rdb-only", fix,
                   "only RDB snapshots (save \"%s\"), no AOF: after a crash the locks taken since the last "
                   "snapshot are gone",
                   n->save);
    else if (n->aof == 0)
        doctor_add(d, n->index, SEV_WARN, "no-aof", fix,
                   "appendonly is off (save points unknown: CONFIG GET denied): after a crash recent locks are gone");
    else if (n->aof == 1 && n->fsync[0] && strcmp(n->fsync, "always") != 0)
        doctor_add(d, n->index, SEV_INFO, "aof-fsync", fix,
                   "AOF with appendfsync %s: a power loss can drop the most recent locks", n->fsync);
    return CHECK_NEXT;
}

/* ---- one node: the commands a lock client sends ---- */

static int check_ping(doctor *d, dnode *n)
{
    char err[256];
    redisReply *r = cli_command(n->ctx, err, sizeof err, "PING");
    if (!r) {
        doctor_add(d, n->index, SEV_SEVERE, "ping", "check the node's health and network", "PING failed: %s", err);
        return CHECK_STOP;
    }
    if (r->type == REDIS_REPLY_ERROR)
        doctor_add(d, n->index, SEV_SEVERE, is_acl_error(r) ? "acl-ping" : "ping",
                   "grant the lock user +ping (ACL SETUSER <user> +ping)", "PING refused: %s", r->str);
    rl_reply_free(r);
    return CHECK_NEXT;
}

static int check_eval(doctor *d, dnode *n)
{
    char err[256];
    redisReply *r = cli_command(n->ctx, err, sizeof err, "EVAL %s 0", "return 1");
    if (r && r->type == REDIS_REPLY_ERROR) {
        if (is_acl_error(r))
            doctor_add(d, n->index, SEV_SEVERE, "acl-eval", "ACL SETUSER <user> +eval +evalsha +script|load",
                       "EVAL is denied by the ACL (%s): locks could be taken but never released or extended", r->str);
        else
            doctor_add(d, n->index, SEV_SEVERE, "scripts",
                       "enable Lua scripting (EVAL/EVALSHA must not be renamed or disabled)",
                       "Lua scripts are unavailable (EVAL \"return 1\": %s): release and extension need them", r->str);
    } else if (!r) {
        doctor_add(d, n->index, SEV_SEVERE, "scripts", "check the node's health", "EVAL failed: %s", err);
    }
    rl_reply_free(r);
    return CHECK_NEXT;
}

static void acl_fix(const doctor *d, char *fix, size_t size)
{
    snprintf(fix, size, "ACL SETUSER <user> on +ping +set +get +del +pexpire +eval +evalsha ~%s*",
             d->prefix ? d->prefix : "");
}

/* The probe key, set as a lock is: the checks after this one use it. */
static int check_set(doctor *d, dnode *n)
{
    char err[256], fix[400];
    probe_hex(n->probe_hex);
    probe_hex(n->probe_val);
    char tag[16];
    doctor_cluster_tag(n, tag, sizeof tag);   /* a cluster member: a slot of its own */
    snprintf(n->probe_key, sizeof n->probe_key, "%sredlock-doctor:%s%s", d->prefix ? d->prefix : "", tag,
             n->probe_hex);
    acl_fix(d, fix, sizeof fix);
    redisReply *r = cli_command(n->ctx, err, sizeof err, "SET %s %s NX PX %d", n->probe_key, n->probe_val, 60000);
    int set_ok = r && r->type == REDIS_REPLY_STATUS;
    if (!r)
        doctor_add(d, n->index, SEV_SEVERE, "set", "check the node's health", "SET NX PX failed: %s", err);
    else if (is_acl_error(r))
        doctor_add(d, n->index, SEV_SEVERE, "acl-set", fix, "SET NX PX on lock keys is denied: %s", r->str);
    else if (r->type == REDIS_REPLY_ERROR)
        doctor_add(d, n->index, SEV_SEVERE, "set", "the node must accept writes (not a replica, not out of memory)",
                   "SET NX PX on a lock key failed: %s", r->str);
    rl_reply_free(r);
    return set_ok ? CHECK_NEXT : CHECK_STOP;
}

/* Commands that must fail. A node that says OK to them says OK to anything:
 * to every lock's SET NX too, so a majority of such nodes lets any number of
 * clients hold the same lock (docs/security.md, Trust model). The key was
 * just set, so SET NX must answer nil; and no server knows the command
 * below. */
static int check_fake_ok(doctor *d, dnode *n)
{
    char err[256];
    const char *fix = "remove this node: check that the URL reaches a Redis or Valkey server itself, not a proxy or fake";
    redisReply *r = cli_command(n->ctx, err, sizeof err, "SET %s %s NX PX %d", n->probe_key, "another-value", 60000);
    if (r && r->type != REDIS_REPLY_NIL && !is_acl_error(r))
        doctor_add(d, n->index, SEV_SEVERE, "fake-ok", fix,
                   "SET NX on a key that exists answered %s instead of nil: the node grants locks that are held, so "
                   "two clients can hold one lock",
                   r->type == REDIS_REPLY_STATUS ? "+OK" : "something else");
    rl_reply_free(r);
    r = cli_command(n->ctx, err, sizeof err, "REDLOCK-DOCTOR-NO-SUCH-COMMAND %s", n->probe_hex);
    if (r && r->type != REDIS_REPLY_ERROR)
        doctor_add(d, n->index, SEV_SEVERE, "fake-ok", fix,
                   "an unknown command answered %s instead of an error: the node does not check what it is told",
                   r->type == REDIS_REPLY_STATUS ? "+OK" : "a value");
    rl_reply_free(r);
    return CHECK_NEXT;
}

/* EVALSHA, and the library's extension and release scripts on the probe
 * key (the release deletes it). */
static int check_scripts(doctor *d, dnode *n)
{
    char err[256], fix[400];
    acl_fix(d, fix, sizeof fix);
    /* EVALSHA of an unknown script: NOSCRIPT if allowed, NOPERM if not; the
     * ACL is checked before the script cache. */
    redisReply *r = cli_command(n->ctx, err, sizeof err, "EVALSHA %s 1 %s %s",
                                "ffffffffffffffffffffffffffffffffffffffff", n->probe_key, n->probe_val);
    if (is_acl_error(r))
        doctor_add(d, n->index, SEV_SEVERE, "acl-evalsha", fix,
                   "EVALSHA is denied by the ACL (%s): every release and extension would fail", r->str);
    rl_reply_free(r);

    r = cli_command(n->ctx, err, sizeof err, "EVAL %s 1 %s %s %d", rl_script_extend, n->probe_key, n->probe_val,
                    60000);
    if (is_acl_error(r))
        doctor_add(d, n->index, SEV_SEVERE, "acl-extend", fix, "the extension script is denied: %s", r->str);
    else if (r && r->type == REDIS_REPLY_ERROR && !strstr(r->str, "unknown command"))
        doctor_add(d, n->index, SEV_SEVERE, "scripts", "enable Lua scripting", "the extension script failed: %s",
                   r->str);
    rl_reply_free(r);

    /* As the library releases: no waiter registration, and '0': wake nobody. */
    r = cli_command(n->ctx, err, sizeof err, "EVAL %s 3 %s %s:wq %s:wl %s 0 %b", rl_script_release, n->probe_key,
                    n->probe_key, n->probe_key, n->probe_val, "", (size_t)0);
    int released = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (is_acl_error(r))
        doctor_add(d, n->index, SEV_SEVERE, "acl-release", fix, "the release script is denied: %s", r->str);
    rl_reply_free(r);
    if (!released) {
        r = cli_command(n->ctx, err, sizeof err, "DEL %s", n->probe_key);
        rl_reply_free(r);  /* if DEL is denied too, the key expires in 60 s */
    }
    return CHECK_NEXT;
}

/* The quarantine (c/src/epoch.c, docs/algorithm.md "Quarantine"): a node out
 * of the vote says so, with why and for how long; its marker is noted for
 * the set check below. The node-wide marker only: a cluster member's are
 * per slot (c/src/epoch.c), read by status for a key, not here. */
static int check_quarantine(doctor *d, dnode *n)
{
    char err[256], mkey[1100];
    n->marker = -1;
    if (n->cluster)
        return CHECK_NEXT;
    snprintf(mkey, sizeof mkey, "%s" RL_KEY_EPOCH, d->prefix ? d->prefix : "");
    redisReply *m = cli_command(n->ctx, err, sizeof err, "EXISTS %s", mkey);
    redisReply *q = m ? cli_command(n->ctx, err, sizeof err, "GET %s" RL_KEY_QUARANTINE, mkey) : NULL;
    redisReply *t = q ? cli_command(n->ctx, err, sizeof err, "PTTL %s" RL_KEY_QUARANTINE, mkey) : NULL;
    if (m && m->type == REDIS_REPLY_INTEGER)
        n->marker = m->integer == 1;
    if (t && t->type == REDIS_REPLY_INTEGER && t->integer > 0 && q->type == REDIS_REPLY_STRING) {
        const char *why = memchr(q->str, ' ', q->len);   /* "<until> <why>" */
        why = why ? why + 1 : q->str;
        char left[32];
        doctor_add(d, n->index, SEV_WARN, "quarantined",
                   "wait: it votes again by itself; or find out why it lost its data (persistence, restarts) or "
                   "why its clock jumped (NTP steps)",
                   "out of the vote for %s more: %.*s", cli_fmt_duration(t->integer, left, sizeof left),
                   (int)(q->len - (size_t)(why - q->str)), why);
    }
    rl_reply_free(m);
    rl_reply_free(q);
    rl_reply_free(t);
    return CHECK_NEXT;
}

const node_check doctor_node_checks[] = {
    { "info", check_info, 0 },               /* needs only a connection */
    { "eviction", check_eviction, 0 },
    { "persistence", check_persistence, 0 },
    { "cluster", doctor_check_cluster, 0 },  /* doctor_cluster.c */
    { "ping", check_ping, 1 },               /* stops the node's checks if it fails */
    { "scripts", check_eval, 0 },
    { "set", check_set, 0 },                 /* the probe key; stops the node's checks if not set */
    { "fake-ok", check_fake_ok, 0 },
    { "acl", check_scripts, 1 },
    { "quarantine", check_quarantine, 1 },
};
const size_t doctor_n_node_checks = sizeof doctor_node_checks / sizeof doctor_node_checks[0];

/* ---- the clock probe ---- */

static void clock_start(dnode *n, const char *prefix, int64_t probe_ms)
{
    char err[256], hex[33], tag[16];
    probe_hex(hex);
    doctor_cluster_tag(n, tag, sizeof tag);
    snprintf(n->clock_key, sizeof n->clock_key, "%.60sredlock-doctor-clock:%s%s", prefix ? prefix : "", tag, hex);
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
static void clock_skipped(doctor *d, const dnode *n)
{
    doctor_add(d, n->index, SEV_SEVERE, "clock-skipped",
               "check that the node keeps TTLs (SET PX, PTTL) and that the lock user may run PTTL",
               "clock probe skipped: %s; the node's expiry clock is unchecked", n->clock_skip);
}

/* How far the node's clock ran from ours, beyond what the readings can
 * tell apart. */
static void clock_rate(doctor *d, const dnode *n, long long pttl1, int64_t t0, int64_t t1)
{
    double local_ms = (double)((t0 + t1) / 2 - n->mid0_us) / 1000;
    double remote_ms = (double)(n->pttl0 - pttl1);
    /* PTTL has 1 ms steps at each end, and each reading may be anywhere
     * within its round trip. */
    double slack_ms = 2 + (double)(n->rtt0_us + (t1 - t0)) / 2000;
    double dev = (remote_ms - local_ms) / local_ms * 100;
    double margin = fabs(remote_ms - local_ms) - slack_ms;
    double excess = margin > 0 ? margin / local_ms * 100 : 0;
    const char *fix = "check time sync on the node's host (chrony/ntpd slewing or steps, VM clock source); "
                      "expiry follows the server's clock";
    int sev = excess > 5 ? SEV_SEVERE : excess > 1 ? SEV_WARN : SEV_INFO;
    doctor_add(d, n->index, sev, "clock-rate", sev == SEV_INFO ? "none needed" : fix,
               "clock rate: the node's expiry clock ran %+.2f%% vs this host over %.0f ms (+/- %.2f%%)%s", dev,
               local_ms, slack_ms / local_ms * 100,
               sev == SEV_SEVERE ? ": TTLs there end far from when clients expect"
               : sev == SEV_WARN ? ": more than the 1% drift allowance" : "");
}

static void clock_finish(doctor *d, dnode *n)
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
    else
        clock_rate(d, n, r->integer, t0, t1);
    rl_reply_free(r);
    r = cli_command(n->ctx, err, sizeof err, "DEL %s", n->clock_key);
    rl_reply_free(r);
}

/* ---- the whole set ---- */

/* The same server under two names (127.0.0.1 and localhost, a DNS alias, a
 * second listener...) would count twice toward the quorum. */
static void check_duplicates(doctor *d)
{
    for (size_t i = 0; i < d->n_nodes; i++)
        for (size_t j = 0; j < i; j++)
            if (d->nodes[i].run_id[0] && !strcmp(d->nodes[i].run_id, d->nodes[j].run_id)) {
                doctor_add(d, (int)i, SEV_SEVERE, "duplicate",
                           "list each server once: every node must be a separate server",
                           "same server as node %zu (run_id %.12s...): it would count twice toward the quorum",
                           j, d->nodes[i].run_id);
                break;
            }
}

/* Each node's expiry clock against this host's, over --clock-probe. */
static void check_clocks(doctor *d)
{
    if (d->probe_ms <= 0) {
        if (d->reachable)
            doctor_add(d, DOCTOR_SET, SEV_WARN, "clock-skipped",
                       "run doctor without --clock-probe 0 (the default probe takes 1s)",
                       "clock probe skipped (--clock-probe 0): no node's expiry clock was compared with this host's");
        return;
    }
    /* The nodes, then the other shard masters of cluster nodes: one probe
     * each, all over the same sleep. A shard's expiry clock is its own. */
    size_t all = d->n_nodes + d->n_shards;
    for (size_t i = 0; i < all; i++) {
        dnode *n = i < d->n_nodes ? &d->nodes[i] : d->shards[i - d->n_nodes];
        if (n->ctx && !n->ctx->err && !n->refused)
            clock_start(n, d->prefix, d->probe_ms);
    }
    struct timespec ts = { .tv_sec = d->probe_ms / 1000, .tv_nsec = (long)(d->probe_ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    for (size_t i = 0; i < all; i++) {
        dnode *n = i < d->n_nodes ? &d->nodes[i] : d->shards[i - d->n_nodes];
        size_t before = d->n;
        if (i < d->n_nodes ? doctor_flag_broken(d, n) : n->ctx != NULL)
            clock_finish(d, n);
        if (n->ctx && n->clock_skip[0])
            clock_skipped(d, n);
        if (n->shard[0]) {
            doctor_name_shard(d, before, n->shard);
        } else if (i < d->n_nodes && n->ep.cluster && n->cluster && n->ep.host) {
            /* a cluster node's seed: a shard too */
            char shown[300];
            snprintf(shown, sizeof shown, strchr(n->ep.host, ':') ? "[%s]:%d" : "%s:%d", n->ep.host, n->ep.port);
            doctor_name_shard(d, before, shown);
        }
    }
}

static void check_tls_insecure(doctor *d)
{
    if (d->tls_nodes && d->tls_insecure)
        doctor_add(d, DOCTOR_SET, SEV_WARN, "tls-insecure",
                   "give the CA that signed the servers' certificates with --tls-ca-file (or tls_ca_file) instead",
                   "--tls-insecure: the servers' certificates were not verified; anyone on the network path could "
                   "pose as a node, and a lock client with the same settings would accept it");
}

/* Nodes without the quarantine's marker beside nodes that have it: new
 * nodes, or nodes that lost their keys; the next acquisition puts them out
 * of the vote (docs/algorithm.md, "Quarantine"). */
static void check_markers(doctor *d)
{
    size_t with = 0;
    for (size_t i = 0; i < d->n_nodes; i++)
        with += d->nodes[i].marker == 1;
    for (size_t i = 0; with && i < d->n_nodes; i++)
        if (d->nodes[i].marker == 0)
            doctor_add(d, (int)i, SEV_INFO, "no-marker",
                       "nothing to do if it is new; else find out why it lost its data (persistence, restarts)",
                       "no quarantine marker while %zu other node%s have one: a new node, or one that lost its "
                       "keys; the next acquisition keeps it out of the vote for the longest TTL the others record",
                       with, with == 1 ? "" : "s");
}

static void check_node_count(doctor *d)
{
    size_t n = d->n_nodes;
    if (n < 3)
        doctor_add(d, DOCTOR_SET, SEV_WARN, "few-nodes", "use 5 (or at least 3) independent nodes",
                   "%zu node%s: the lock cannot survive the failure of any node", n, n == 1 ? "" : "s");
    else if (n % 2 == 0)
        doctor_add(d, DOCTOR_SET, SEV_INFO, "even-nodes", "use an odd number of nodes",
                   "%zu nodes tolerate as many failures (%zu) as %zu would", n, n - d->quorum, n - 1);
}

static void check_quorum(doctor *d)
{
    if (d->reachable < d->quorum)
        doctor_add(d, DOCTOR_SET, SEV_SEVERE, "no-quorum", "bring the unreachable nodes back",
                   "only %zu of %zu nodes answered and accepted this client; a lock needs %zu", d->reachable,
                   d->n_nodes, d->quorum);
}

const set_check doctor_set_checks[] = {
    { "duplicate", check_duplicates },
    { "clock", check_clocks },
    { "tls-insecure", check_tls_insecure },
    { "node-count", check_node_count },
    { "markers", check_markers },
    { "no-quorum", check_quorum },
    { "same-cluster", doctor_check_same_cluster },
};
const size_t doctor_n_set_checks = sizeof doctor_set_checks / sizeof doctor_set_checks[0];
