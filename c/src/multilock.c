/* SPDX-License-Identifier: BSD-3-Clause */
/* multilock.c: the multi-resource lock (docs/algorithm.md, "Multi-resource
 * locks"): several resources held together under one value, all or none.
 * It is a lock handle of another kind: acquire, extend, release,
 * auto-extend, fencing, wake-up and the per-node report are the mutex's
 * code, with the commands swapped for the scripts of multilock_scripts.c
 * (rl_kind_multi's cmd, rl_multi_cmd), each of which acts on every key of
 * the set on one node at once. The keys go to every script in canonical
 * order, the names sorted bytewise, whatever order the caller gave. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const aux_suffix[3] = { RL_KEY_QUEUE, RL_KEY_LISTENERS, RL_FENCE_SUFFIX };

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The set's keys, for names already sorted, in one allocation (freed by
 * lock.c with free()): NULL when out of memory. */
static rl_multi *multi_keys(const redlock_client *c, const char *const *names, size_t n)
{
    size_t bytes = 0;
    for (size_t k = 0; k < n; k++)
        bytes += 4 * (c->prefix_len + strlen(names[k]) + 1) + 3 + 3 + RL_FENCE_SUFFIX_LEN;
    size_t head = sizeof(rl_multi) + 4 * n * (sizeof(const char *) + sizeof(size_t));
    rl_multi *m = malloc(head + bytes);
    if (!m)
        return NULL;
    m->n = n;
    m->keys = (const char **)(void *)(m + 1);
    m->lens = (size_t *)(void *)(m->keys + 4 * n);
    char *p = (char *)(m->lens + 4 * n);
    for (size_t k = 0; k < n; k++) {
        size_t rlen = strlen(names[k]), klen = c->prefix_len + rlen;
        for (size_t j = 0; j < 4; j++) {
            const char *suffix = j ? aux_suffix[j - 1] : "";
            size_t slen = strlen(suffix);
            memcpy(p, c->prefix, c->prefix_len);
            memcpy(p + c->prefix_len, names[k], rlen);
            memcpy(p + klen, suffix, slen + 1);
            m->keys[4 * k + j] = p;
            m->lens[4 * k + j] = klen + slen;
            p += klen + slen + 1;
        }
    }
    return m;
}

int redlock_lock_open_multi(redlock_lock **out, redlock_client *client, const char *const *resources, size_t n,
                            char *errbuf, size_t errbuf_size)
{
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!out) {
        rl_fmt(errbuf, errbuf_size, "out is NULL");
        return REDLOCK_EINVAL;
    }
    *out = NULL;
    if (!client || (!resources && n)) {
        rl_fmt(errbuf, errbuf_size, "%s is NULL", client ? "resources" : "client");
        return REDLOCK_EINVAL;
    }
    if (n == 0) {
        rl_fmt(errbuf, errbuf_size, "the list of resources is empty: a multi-resource lock needs at least one");
        return REDLOCK_EINVAL;
    }
    if (n > REDLOCK_MAX_MULTI) {
        rl_fmt(errbuf, errbuf_size, "%zu resources in one lock, over the limit of %d (REDLOCK_MAX_MULTI)", n,
               REDLOCK_MAX_MULTI);
        return REDLOCK_EINVAL;
    }
    for (size_t k = 0; k < n; k++) {
        char why[RL_MSG_MAX];
        int rc = rl_resource_problem(client, resources[k], why, sizeof why);
        if (rc) {
            rl_fmt(errbuf, errbuf_size, "resource %zu of %zu: %s", k + 1, n, why);
            return rc;
        }
    }
    int crc = rl_cluster_multi_problem(client, resources, n, errbuf, errbuf_size);
    if (crc)
        return crc;
    const char **sorted = malloc(n * sizeof *sorted);
    if (!sorted) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    memcpy(sorted, resources, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_name);
    size_t shown = 0;
    for (size_t k = 1; k < n; k++)
        if (strcmp(sorted[k - 1], sorted[k]) == 0) {
            rl_fmt(errbuf, errbuf_size, "resource '%.200s' is listed twice: each resource of a multi-resource lock "
                   "must be given once", sorted[k]);
            free(sorted);
            return REDLOCK_EINVAL;
        }
    for (size_t k = 0; k < n; k++)
        shown += strlen(sorted[k]) + 1;
    redlock_lock *l;
    int rc = redlock_lock_open(&l, client, sorted[0], errbuf, errbuf_size);
    if (rc) {
        free(sorted);
        return rc;
    }
    /* Its name in messages, events and redlock_lock_resource: the names in
     * canonical order, joined by commas. */
    char *name = malloc(shown);
    l->multi = multi_keys(client, sorted, n);
    if (!name || !l->multi) {
        free(name);
        free(sorted);
        redlock_lock_free(l);
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    char *p = name;
    for (size_t k = 0; k < n; k++) {
        size_t len = strlen(sorted[k]);
        memcpy(p, sorted[k], len);
        p[len] = k + 1 < n ? ',' : '\0';
        p += len + 1;
    }
    free(sorted);
    l->resource = name;   /* the first name's, in the handle's allocation, stays unused */
    l->kind = &rl_kind_multi;
    *out = l;
    return 0;
}

int redlock_lock_new_multi(redlock_lock **out, redlock_client *client, const char *const *resources, size_t n)
{
    return redlock_lock_open_multi(out, client, resources, n, NULL, 0);
}

int redlock_lock_multi_count(const redlock_lock *lock, size_t *n_out)
{
    if (!lock || lock->kind != &rl_kind_multi)
        return REDLOCK_EINVAL;
    if (n_out)
        *n_out = lock->multi->n;
    return 0;
}

/* A multi-resource lock: every round acts on every key of its set (rl_multi_cmd). */
const rl_kind rl_kind_multi = {
    .name = "multi",
    .cmd = rl_multi_cmd,
};
