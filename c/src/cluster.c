/* SPDX-License-Identifier: BSD-3-Clause */
/* cluster.c: what a client with a cluster node (redis-cluster://, a Redis
 * or Valkey Cluster as one Redlock node; docs/cluster.md) must refuse or do
 * differently above the engine: names whose keys cannot share one slot,
 * batches of many locks' keys, which span slots, and the function library,
 * which every shard master needs. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "engine/engine.h"

#define RL_SLOT_TAG_FMT "redlock:epoch:%u"

int rl_client_has_cluster(const redlock_client *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->nodes[i].ep.cluster)
            return 1;
    return 0;
}

int rl_cluster_key_problem(const redlock_client *c, const char *resource, int semaphore, char *err, size_t size)
{
    if (!rl_client_has_cluster(c))
        return 0;
    size_t rlen = strlen(resource), klen = c->prefix_len + rlen, st, tl;
    char *key = malloc(klen + 1);
    if (!key) {
        rl_fmt(err, size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    memcpy(key, c->prefix, c->prefix_len);
    memcpy(key + c->prefix_len, resource, rlen);
    int tagged = rl_key_tag(key, klen, &st, &tl), ok = rl_key_taggable(key, klen);
    free(key);
    if (!ok) {
        rl_fmt(err, size, "the key of '%s' holds a '}' but no hash tag ({...} with something inside): on a cluster "
               "node its auxiliary keys could not share its slot; name it with a tag, e.g. '{%s}'", resource, resource);
        return REDLOCK_EINVAL;
    }
    /* A semaphore's scripts name its slot keys from its key, K:s<i> and
     * K:limit: they share K's slot only when K has a tag. */
    if (semaphore && !tagged) {
        rl_fmt(err, size, "a semaphore on a cluster node needs a hash tag in its key (its slot keys are K:s<i>): "
               "name it '{%s}'", resource);
        return REDLOCK_EINVAL;
    }
    return 0;
}

int rl_cluster_multi_problem(const redlock_client *c, const char *const *resources, size_t n, char *err, size_t size)
{
    if (!rl_client_has_cluster(c))
        return 0;
    /* One script per node takes every key of the set, with its queue and
     * counter keys beside it (multilock.c names them K + suffix): on a
     * cluster node all of them must hash to one slot, so every name
     * carries a hash tag, and the tags agree on the slot. */
    unsigned first = 0;
    for (size_t k = 0; k < n; k++) {
        size_t rlen = strlen(resources[k]), klen = c->prefix_len + rlen, st, tl;
        char *key = malloc(klen + 1);
        if (!key) {
            rl_fmt(err, size, "out of memory");
            return REDLOCK_ENOMEM;
        }
        memcpy(key, c->prefix, c->prefix_len);
        memcpy(key + c->prefix_len, resources[k], rlen);
        int tagged = rl_key_tag(key, klen, &st, &tl);
        unsigned slot = rl_keyslot(key, klen);
        free(key);
        if (!tagged) {
            rl_fmt(err, size, "resource '%.200s' has no hash tag: on a cluster node every name of a multi-resource "
                   "lock needs one, the same for all (e.g. '{orders}:17' and '{orders}:42'), so that its keys "
                   "share one slot", resources[k]);
            return REDLOCK_EINVAL;
        }
        if (k == 0)
            first = slot;
        else if (slot != first) {
            rl_fmt(err, size, "resources '%.200s' and '%.200s' hash to slots %u and %u: on a cluster node the names "
                   "of a multi-resource lock must share one slot (one hash tag)", resources[0], resources[k], first,
                   slot);
            return REDLOCK_EINVAL;
        }
    }
    return 0;
}

/* For each slot, the first T whose "redlock:epoch:T" hashes there: about
 * 170,000 tries cover all 16384 (a coupon collector's), once a process;
 * the CRC of the fixed part is taken once, each try adds T's digits. */
static uint32_t slot_tag[RL_CLUSTER_SLOTS];
static unsigned char slot_tag_set[RL_CLUSTER_SLOTS];
static pthread_once_t slot_tags_once = PTHREAD_ONCE_INIT;

static void slot_tags_init(void)
{
    char head[32], digits[16];
    int hlen = snprintf(head, sizeof head, RL_SLOT_TAG_FMT, 0u) - 1;   /* without the "0" */
    uint16_t base = rl_crc16(0, head, (size_t)hlen);
    unsigned left = RL_CLUSTER_SLOTS;
    for (uint32_t t = 0; left && t < 20000000u; t++) {
        size_t n = 0;
        for (uint32_t v = t; n == 0 || v; v /= 10)
            digits[sizeof digits - ++n] = (char)('0' + v % 10);
        unsigned s = rl_crc16(base, digits + sizeof digits - n, n) & (RL_CLUSTER_SLOTS - 1);
        if (!slot_tag_set[s]) {
            slot_tag_set[s] = 1;
            slot_tag[s] = t;
            left--;
        }
    }
}

int rl_cluster_slot_tag(unsigned slot, char *out, size_t size)
{
    pthread_once(&slot_tags_once, slot_tags_init);
    if (slot >= RL_CLUSTER_SLOTS || !slot_tag_set[slot])
        return -1;
    int len = snprintf(out, size, RL_SLOT_TAG_FMT, slot_tag[slot]);
    return len > 0 && (size_t)len < size ? len : -1;
}

/* A key whose slot is `slot`: "{tag}". */
static int tag_for_slot(unsigned slot, char *out, size_t size)
{
    char tag[32];
    int len = rl_cluster_slot_tag(slot, tag, sizeof tag);
    if (len < 0)
        return -1;
    len = snprintf(out, size, "{%s}", tag);
    return len > 0 && (size_t)len < size ? len : -1;
}

void rl_cluster_load_functions(redlock_client *c, rl_round *r)
{
    for (size_t i = 0; i < c->n; i++) {
        if (!c->nodes[i].ep.cluster || r->out[i] != RL_YES)
            continue;
        /* The round reached one member (the owner of the empty key's slot,
         * which also sent the slot map along): now every shard master. */
        unsigned slots[128];
        rl_io_enter(c);
        size_t ns = rl_route_shard_slots(c, i, slots, sizeof slots / sizeof slots[0]);
        rl_io_leave(c);
        if (ns == 0) {
            r->out[i] = RL_ERR_SERVER;
            rl_fmt(r->msg[i], sizeof r->msg[i], "loaded on one member, but the cluster's shards are not known "
                   "(CLUSTER NODES): load it on every master");
            continue;
        }
        for (size_t k = 0; k < ns; k++) {
            char key[48];
            int len = tag_for_slot(slots[k], key, sizeof key);
            if (len < 0)
                continue;
            rl_round q;
            memset(&q, 0, offsetof(rl_round, out));
            q.cmd = RL_CMD_LOAD_FUNCTIONS;
            q.key = key;         /* routes the command to the shard of this slot */
            q.key_len = (size_t)len;
            q.value = "";
            q.start_us = rl_now_us();
            q.n = c->n;
            for (size_t j = 0; j < c->n; j++)
                q.skip[j] = j != i;
            q.quorum = 1;
            rl_round_run(c, &q);
            if (q.out[i] != RL_YES) {
                r->out[i] = q.out[i];
                rl_fmt(r->msg[i], sizeof r->msg[i], "%s", q.msg[i]);
                break;
            }
        }
    }
}
