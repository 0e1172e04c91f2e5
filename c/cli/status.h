/* SPDX-License-Identifier: BSD-3-Clause */
/* status.h: what 'redlock status' reads of one node (status_probe.c) and
 * decides and prints over all of them (status.c). */
#ifndef REDLOCK_CLI_STATUS_H
#define REDLOCK_CLI_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "keys.h"

typedef struct node_state {
    char url[512];             /* masked */
    enum { ST_FREE, ST_HELD, ST_ERROR } state;
    char *value;
    size_t value_len;
    long long ttl_ms;          /* PTTL: -1 no expiry */
    char error[512];
    /* the read-write lock's keys (c/src/scripts.c) and the waiters' queue */
    long long readers;         /* leases in K:rd still running by the node's clock, plus a
                                * lone reader */
    struct rd_id { char *p; size_t len; } *ids;   /* those readers' values */
    size_t n_ids;
    long long intent_ms;       /* PTTL of K:wi, a waiting writer's intent: < 0 none */
    int intent_queued;         /* that intent is a registration (id ':' n), queued in K:wq too */
    long long waiters;         /* ZCARD of K:wq: the waiters registered for wake-up; those
                                * that poll (the default) register nowhere */
    /* A semaphore (semaphore.c): its limit here (0: none), the slots held
     * here (slot[i]), and how many (its waiters are K:wq's, above). */
    long sem_limit;
    unsigned char *slot;
    long held;
    /* The quarantine (c/src/epoch.c): the marker there (1), not (0), unknown
     * (-1: a cluster node, where it does not apply, or an error); the time
     * the node stays out of the vote (0: in it) and why. */
    int marker;
    long long quarantine_ms;
    char quarantine_why[128];
} node_state;

/* What the read-write lock keeps next to the key K (c/src/scripts.c): K
 * holds RW_MARK ':' the reader's value while one reader holds it, RW_MARK
 * while several do, with K:rd their leases; K:wi a waiting writer's intent;
 * K:wq is every lock's waiters' queue. A writer holds K as a mutex holder
 * does (its value), so the nodes cannot tell the two apart. On a cluster
 * node (redis-cluster://) the keys beside K are "{K}:rd"..., so that they
 * share K's slot, unless K has a hash tag of its own (engine/proto.c). */
#define RW_MARK RL_RW_MARK   /* c/common/keys.h, where the library names its keys */

/* Reads what node `url` keeps of key (GET, PTTL; the read-write lock's,
 * the semaphore's and the waiters' keys) into *ns, within timeout_ms per
 * connection. A cluster node is read on the shard that owns key's slot,
 * found by following MOVED and ASK as the library does (engine/route.c).
 * per_slot: the set has a cluster node, so the quarantine's marker is the
 * key's slot's (c/src/epoch.c). */
void status_probe(const cli_common *common, const char *url, const char *key, size_t key_len, size_t prefix_len,
                  int per_slot, int64_t timeout_ms, node_state *ns);

#endif
