/* SPDX-License-Identifier: BSD-3-Clause */
/* doctor_cluster.c: doctor's checks of Redis/Valkey Clusters
 * (docs/cluster.md). A node given as redis-cluster:// is one Redlock node:
 * each of its shard masters is checked as a node is (INFO, eviction,
 * persistence, replicas), with its findings named by shard, and its
 * replicas and failover settings are reported. Nodes that are members of
 * the same cluster (their CLUSTER NODES share a member) are not
 * independent: SEVERE, however they were given. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "lib_private.h"

typedef struct member {
    char id[48], host[256], flags[128], master[48], link[16];
    int port;
    long lo;                   /* its first slot, -1 none */
    long nslots;               /* how many slots it serves */
    int replicas;              /* a master's */
    char replica_list[512];    /* a master's: "host:port (connected), ..." */
} member;

/* CLUSTER NODES into up to max members: how many. */
static size_t parse_nodes(const char *s, member *m, size_t max)
{
    size_t n = 0;
    while (s && *s && n < max) {
        const char *eol = strchr(s, '\n');
        size_t len = eol ? (size_t)(eol - s) : strlen(s);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)len, s);
        s = eol ? eol + 1 : NULL;
        char *save = NULL, *f[9];
        size_t nf = 0;
        for (char *t = strtok_r(line, " \r", &save); t && nf < 9; t = strtok_r(NULL, " \r", &save))
            f[nf++] = t;
        if (nf < 8)
            continue;
        member *x = &m[n];
        memset(x, 0, sizeof *x);
        snprintf(x->id, sizeof x->id, "%s", f[0]);
        snprintf(x->flags, sizeof x->flags, "%s", f[2]);
        snprintf(x->master, sizeof x->master, "%s", f[3]);
        snprintf(x->link, sizeof x->link, "%s", f[7]);
        /* ip:port@cport[,hostname[,aux=value...]]: the hostname when announced
         * (what the lock client connects to, engine/route.c), else the ip */
        char *at = strchr(f[1], '@');
        char *hostname = at ? strchr(at, ',') : NULL;
        if (hostname) {
            hostname++;
            hostname[strcspn(hostname, ",")] = '\0';
        }
        if (at)
            *at = '\0';
        char *colon = strrchr(f[1], ':');
        if (colon) {
            *colon = '\0';
            x->port = atoi(colon + 1);
        }
        snprintf(x->host, sizeof x->host, "%s", hostname && *hostname ? hostname : f[1]);
        x->lo = -1;
        /* the slots: "0-5460", "5461", and "[...]" for a migration under way */
        for (char *r = nf == 9 ? f[8] : NULL; r; r = strtok_r(NULL, " \r", &save)) {
            if (r[0] == '[')
                continue;
            char *e = NULL;
            long lo = strtol(r, &e, 10), hi = *e == '-' ? strtol(e + 1, NULL, 10) : lo;
            if (x->lo < 0)
                x->lo = lo;
            if (hi >= lo)
                x->nslots += hi - lo + 1;
        }
        n++;
    }
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < n; j++)
            if ((strstr(m[j].flags, "slave") || strstr(m[j].flags, "replica")) && !strcmp(m[j].master, m[k].id)) {
                size_t len = strlen(m[k].replica_list);
                snprintf(m[k].replica_list + len, sizeof m[k].replica_list - len, "%s%s:%d (%s%s)",
                         m[k].replicas ? ", " : "", m[j].host, m[j].port, m[j].link,
                         strstr(m[j].flags, "fail") ? ", failing" : "");
                m[k].replicas++;
            }
    return n;
}

void doctor_name_shard(doctor *d, size_t from, const char *shown)
{
    for (size_t k = from; k < d->n; k++) {
        char msg[sizeof d->f[k].message + 320];
        snprintf(msg, sizeof msg, "shard %s: %s", shown, d->f[k].message);
        memcpy(d->f[k].message, msg, sizeof d->f[k].message - 1);
        d->f[k].message[sizeof d->f[k].message - 1] = '\0';
    }
}

void doctor_free_shards(doctor *d)
{
    for (size_t k = 0; k < d->n_shards; k++) {
        if (d->shards[k]->ctx)
            redisFree(d->shards[k]->ctx);
        rl_endpoint_clear(&d->shards[k]->ep);
        free(d->shards[k]);
    }
    free(d->shards);
    d->shards = NULL;
    d->n_shards = 0;
}

void doctor_cluster_tag(const dnode *n, char *out, size_t size)
{
    out[0] = '\0';
    if (!n->cluster || n->own_slot < 0)
        return;
    /* a hash tag whose slot this member serves: the probe keys stay here */
    for (unsigned k = 0; k < 1000000; k++) {
        char tag[16];
        int len = snprintf(tag, sizeof tag, "%u", k);
        if ((long)rl_keyslot(tag, (size_t)len) == n->own_slot) {
            snprintf(out, size, "{%s}", tag);
            return;
        }
    }
}

/* One shard master of a redis-cluster:// node, checked as a node is; its
 * connection is kept in d->shards for the clock probe (check_clocks). */
static void check_shard(doctor *d, dnode *n, const member *m)
{
    dnode **grown = realloc(d->shards, (d->n_shards + 1) * sizeof *grown);
    dnode *tp = grown ? calloc(1, sizeof *tp) : NULL;   /* alone: its reader points at its guard */
    if (grown)
        d->shards = grown;
    if (!tp) {
        doctor_add(d, n->index, SEV_WARN, "cluster-shard", "run doctor again", "out of memory");
        return;
    }
    d->shards[d->n_shards++] = tp;   /* closed by doctor_free_shards */
    tp->index = n->index;
    tp->own_slot = m->lo;   /* the clock probe's key goes to a slot it serves */
    tp->cluster = 1;
    tp->ep.host = strdup(m->host[0] ? m->host : n->ep.host);
    tp->ep.port = m->port;
    tp->ep.tls = n->ep.tls;
    tp->ep.cluster = 1;
    tp->ep.user = n->ep.user ? strdup(n->ep.user) : NULL;
    tp->ep.password = n->ep.password ? strdup(n->ep.password) : NULL;
    char shown[300];
    snprintf(shown, sizeof shown, strchr(tp->ep.host ? tp->ep.host : "", ':') ? "[%s]:%d" : "%s:%d",
             tp->ep.host ? tp->ep.host : "?", m->port);
    tp->ep.display = strdup(shown);
    size_t before = d->n;
    if (!tp->ep.host || !tp->ep.display) {
        doctor_add(d, n->index, SEV_WARN, "cluster-shard", "run doctor again", "out of memory");
    } else {
        tp->guard = (rl_reply_guard)RL_REPLY_GUARD_INSPECT;
        tp->ctx = cli_connect(d->common, &tp->ep, d->timeout_ms, &tp->guard, tp->error, sizeof tp->error, &tp->fail);
        if (!tp->ctx) {
            doctor_add(d, n->index, SEV_SEVERE, "cluster-shard", "bring the shard's master back, or fail it over",
                       "cannot connect: %s: the node fails for the slots this shard serves", tp->error);
        } else {
            /* info, eviction, persistence: the first checks of the table */
            for (size_t k = 0; k < 3 && k < doctor_n_node_checks; k++)
                doctor_node_checks[k].run(d, tp);
        }
    }
    doctor_name_shard(d, before, shown);
    snprintf(tp->shard, sizeof tp->shard, "%s", shown);
}

/* What each shard of a redis-cluster:// node is: its slots and replicas. */
static void report_shards(doctor *d, const dnode *n, const member *m, size_t nm)
{
    for (size_t k = 0; k < nm; k++) {
        if (!strstr(m[k].flags, "master") || m[k].lo < 0)
            continue;
        char shown[300];
        snprintf(shown, sizeof shown, strchr(m[k].host, ':') ? "[%s]:%d" : "%s:%d",
                 m[k].host[0] ? m[k].host : n->ep.host, m[k].port);
        size_t before = d->n;
        doctor_add(d, n->index, SEV_INFO, "cluster-shard", "none needed: for the record",
                   "%ld slot(s) from %ld, %d replica(s)%s%s%s", m[k].nslots, m[k].lo, m[k].replicas,
                   m[k].replicas ? ": " : " (no failover: the node fails for these slots while its master is down)",
                   m[k].replica_list, strstr(m[k].flags, "fail") ? "; the master is failing" : "");
        doctor_name_shard(d, before, shown);
    }
}

int doctor_check_cluster(doctor *d, dnode *n)
{
    char err[256];
    n->own_slot = -1;
    if (!n->have_info)
        return CHECK_NEXT;
    if (!n->cluster) {
        if (n->ep.cluster)
            doctor_add(d, n->index, SEV_INFO, "cluster-off", "give it as redis:// (or enable cluster mode)",
                       "given as a cluster, but cluster mode is off: it is used as one standalone server");
        return CHECK_NEXT;
    }
    redisReply *r = cli_command(n->ctx, err, sizeof err, "CLUSTER NODES");
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_VERB)) {
        doctor_add(d, n->index, SEV_WARN, "cluster-nodes", "grant the doctor's user +cluster|nodes",
                   "CLUSTER NODES failed (%s): the cluster's shards were not checked", r ? r->str : err);
        rl_reply_free(r);
        return CHECK_NEXT;
    }
    member *m = calloc(1024, sizeof *m);
    size_t nm = m ? parse_nodes(r->str, m, 1024) : 0;
    rl_reply_free(r);
    size_t ids = 0;
    for (size_t k = 0; k < nm; k++)
        ids += strlen(m[k].id) + 1;
    free(n->cluster_ids);
    n->cluster_ids = calloc(1, ids + 1);
    int masters = 0, replicas = 0;
    for (size_t k = 0; k < nm; k++) {
        if (n->cluster_ids) {
            strcat(n->cluster_ids, m[k].id);
            strcat(n->cluster_ids, " ");
        }
        if (strstr(m[k].flags, "myself"))
            n->own_slot = m[k].lo;
        if (strstr(m[k].flags, "master") && m[k].lo >= 0) {
            masters++;
            replicas += m[k].replicas;
        }
    }
    if (n->ep.cluster) {
        char timeout[32] = "?", validity[32] = "?", coverage[32] = "?";
        redisReply *c = cli_command(n->ctx, err, sizeof err, "CONFIG GET cluster-node-timeout");
        if (c && c->type == REDIS_REPLY_ARRAY && c->elements == 2 && c->element[1]->type == REDIS_REPLY_STRING)
            snprintf(timeout, sizeof timeout, "%s", c->element[1]->str);
        rl_reply_free(c);
        c = cli_command(n->ctx, err, sizeof err, "CONFIG GET cluster-replica-validity-factor");
        if (c && c->type == REDIS_REPLY_ARRAY && c->elements == 2 && c->element[1]->type == REDIS_REPLY_STRING)
            snprintf(validity, sizeof validity, "%s", c->element[1]->str);
        rl_reply_free(c);
        c = cli_command(n->ctx, err, sizeof err, "CONFIG GET cluster-require-full-coverage");
        if (c && c->type == REDIS_REPLY_ARRAY && c->elements == 2 && c->element[1]->type == REDIS_REPLY_STRING)
            snprintf(coverage, sizeof coverage, "%s", c->element[1]->str);
        rl_reply_free(c);
        doctor_add(d, n->index, SEV_INFO, "cluster", "none needed: for the record",
                   "a cluster of %d shard(s) with %d replica(s) in all; failover: cluster-node-timeout %s ms, "
                   "cluster-replica-validity-factor %s, cluster-require-full-coverage %s",
                   masters, replicas, timeout, validity, coverage);
        if (replicas > 0)
            doctor_add(d, n->index, SEV_WARN, "cluster-failover",
                       "keep a majority of independent clusters; after a failover, keep its node out for longer "
                       "than the TTL if you can (docs/algorithm.md, \"A cluster as a node\")",
                       "replication is asynchronous: a failover may promote a replica that missed the last lock "
                       "writes, as if this node restarted without persistence");
        if (masters == 0)
            doctor_add(d, n->index, SEV_SEVERE, "cluster-no-slots", "assign the slots (redis-cli --cluster fix)",
                       "no master serves any slot: every lock on this node fails");
        if (m)
            report_shards(d, n, m, nm);
        for (size_t k = 0; m && k < nm; k++)
            if (strstr(m[k].flags, "master") && !strstr(m[k].flags, "myself") && m[k].lo >= 0 &&
                !strstr(m[k].flags, "fail"))
                check_shard(d, n, &m[k]);
    }
    free(m);
    return CHECK_NEXT;
}

/* Two nodes that are members of one cluster: a failover or a partition
 * inside it takes both at once. */
void doctor_check_same_cluster(doctor *d)
{
    for (size_t i = 0; i < d->n_nodes; i++) {
        const char *a = d->nodes[i].cluster_ids;
        for (size_t j = 0; a && j < i; j++) {
            const char *b = d->nodes[j].cluster_ids;
            int shared = 0;
            for (const char *p = a; b && *p && !shared;) {
                size_t len = strcspn(p, " ");
                char id[64];
                snprintf(id, sizeof id, " %.*s ", (int)(len < 60 ? len : 60), p);
                /* b is "id id ... ": look for " id " in " " + b */
                size_t bl = strlen(b);
                char *pb = malloc(bl + 2);
                if (pb) {
                    pb[0] = ' ';
                    memcpy(pb + 1, b, bl + 1);
                    shared = len > 0 && strstr(pb, id) != NULL;
                    free(pb);
                }
                p += len;
                while (*p == ' ')
                    p++;
            }
            if (shared) {
                doctor_add(d, (int)i, SEV_SEVERE, "same-cluster",
                           "give each cluster once, as one redis-cluster:// node; use independent clusters as nodes",
                           "member of the same cluster as node %zu: the two are not independent (a failover or a "
                           "partition inside the cluster takes both)",
                           j);
                break;
            }
        }
    }
}
