/* SPDX-License-Identifier: BSD-3-Clause */
/* doctor.h: the parts of 'redlock doctor'.
 *
 *   doctor.c         the subcommand: arguments, connections, the tables of
 *                    checks run in order
 *   doctor_checks.c  the checks: one node's (INFO, eviction, persistence,
 *                    commands, ACLs, scripts) and the set's (duplicates,
 *                    clock rate, node count, quorum)
 *   doctor_report.c  findings, and the text and JSON reports */
#ifndef REDLOCK_CLI_DOCTOR_H
#define REDLOCK_CLI_DOCTOR_H

#include "cli.h"

#define DOCTOR_CMD "doctor"

enum { SEV_INFO, SEV_WARN, SEV_SEVERE };

/* The node of a finding about the whole set rather than one node. */
#define DOCTOR_SET (-1)

typedef struct finding {
    int node;                  /* 0-based; DOCTOR_SET = about the whole set */
    int severity;
    const char *check;
    char message[512];
    char fix[384];
} finding;

typedef struct dnode {
    int index;                 /* 0-based, as in every message and in the library */
    rl_endpoint ep;
    redisContext *ctx;
    rl_reply_guard guard;      /* ctx's hardened reader; outlives ctx */
    int broken;                /* the connection failed during the checks: reported once */
    int refused;               /* connected, but the node refuses this client (NOAUTH): the
                                * one finding is 'auth'; the checks that need it are skipped */
    char error[512];           /* connect failure */
    int fail;                  /* its kind: CLI_FAIL_* */
    char run_id[64], version[48], server[16], role[16], master[300];
    char policy[48], save[256], fsync[16];
    int have_info, have_policy, have_save, aof, replicas, cluster;
    /* the probe key of the command checks */
    char probe_key[1200], probe_val[33], probe_hex[33];
    /* the quarantine's marker (c/src/epoch.c): 1 there, 0 not, -1 unknown */
    int marker;
    /* clock probe */
    int probing;
    char clock_skip[300];      /* why the probe could not be made; "" if it was */
    char clock_key[128];
    long long pttl0;
    int64_t mid0_us, rtt0_us;
    /* a cluster member (doctor_cluster.c): the ids in its CLUSTER NODES,
     * space-separated (or NULL), and the first slot it serves (-1: none) */
    char *cluster_ids;
    long own_slot;
    /* a shard master of a redis-cluster:// node other than its seed, kept
     * open for the clock probe (doctor_cluster.c): "host:port", or "" */
    char shard[300];
} dnode;

typedef struct doctor {
    finding *f;
    size_t n, cap;
    int counts[3];
    /* the run's settings */
    dnode *nodes;
    size_t n_nodes, quorum, reachable, tls_nodes;
    const char *prefix;        /* key prefix, or NULL */
    int tls_insecure;
    int64_t probe_ms;          /* clock probe; 0 = skipped */
    char ttl_text[32];         /* the longest TTL, for advice */
    const cli_common *common;  /* for connections to a cluster's shards */
    int64_t timeout_ms;
    dnode **shards;            /* redis-cluster:// nodes' other shard masters (doctor_cluster.c;
                                * each allocated alone: its connection's reader points at its guard) */
    size_t n_shards;
} doctor;

/* ---- doctor_report.c ---- */
void doctor_add(doctor *d, int node, int severity, const char *check, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Flags a node whose connection failed during the checks (a reply the
 * hardened reader refused, a timeout, a reset): one severe finding, the
 * first time. Returns 1 if the node can still be checked, 0 if not. */
int doctor_flag_broken(doctor *d, dnode *n);
/* A node that could not be connected to: the finding for its kind of failure. */
void doctor_connect_failed(doctor *d, dnode *n, const char *server_name);
void doctor_print_text(const doctor *d);
void doctor_print_json(const doctor *d);

/* ---- doctor_checks.c ---- */
/* What a check of one node tells the next: go on, or stop checking the node. */
enum { CHECK_NEXT = 0, CHECK_STOP = -1 };
typedef struct node_check {
    const char *name;
    int (*run)(doctor *d, dnode *n);
    int needs_usable;          /* only on a connection that has not failed (doctor_flag_broken) */
} node_check;
typedef struct set_check {
    const char *name;
    void (*run)(doctor *d);
} set_check;
extern const node_check doctor_node_checks[];
extern const size_t doctor_n_node_checks;
extern const set_check doctor_set_checks[];
extern const size_t doctor_n_set_checks;

/* ---- doctor_cluster.c ---- */
/* The node check of cluster members: shards, replicas, failover settings. */
int doctor_check_cluster(doctor *d, dnode *n);
/* The set check: nodes that are members of one cluster. */
void doctor_check_same_cluster(doctor *d);
/* A hash tag ("{123}") whose slot the member n serves, or "" (not a cluster
 * member): keys of doctor's probes stay on the node it talks to. */
void doctor_cluster_tag(const dnode *n, char *out, size_t size);
/* Findings from index `from` on are about shard `shown`: their messages
 * begin "shard <shown>: ". */
void doctor_name_shard(doctor *d, size_t from, const char *shown);
/* Closes and frees d->shards. */
void doctor_free_shards(doctor *d);

#endif
