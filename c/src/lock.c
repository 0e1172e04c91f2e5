/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.c: lock handles: made, freed, released, and the per-lock policy
 * (acquiring is acquire.c's, extending extend.c's, auto-extension
 * watch.c's). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The mutex: every hook is the default. A woken waiter or a holder coming
 * straight back asks with a plain SET NX PX, and its attempts and
 * extensions go into the batches of acquire_many.c and extend_many.c. */
const rl_kind rl_kind_mutex = {
    .name = "mutex",
    .plain_retry = 1,
    .batch_acquire = 1,
    .batch_extend = 1,
};

#define LOCK_FLAGS (REDLOCK_OPT_WAKE | REDLOCK_OPT_NO_WAKE | REDLOCK_OPT_FAIR)   /* the flags a lock may set */

/* ---- lock handles ---- */

/* The lock's policy from the client's options of the same names. */
static void policy_of(redlock_lock_options *pol, const redlock_options *o)
{
    pol->version = REDLOCK_LOCK_OPTIONS_VERSION;
    pol->retry_count = o->retry_count;
    pol->retry_delay_ms = o->retry_delay_ms;
    pol->retry_jitter_ms = o->retry_jitter_ms;
    pol->wait_ms = o->wait_ms;
    pol->drift_factor = o->drift_factor;
    pol->drift_min_ms = o->drift_min_ms;
    pol->flags = o->flags & LOCK_FLAGS;
}

int redlock_lock_new(redlock_lock **out, redlock_client *client, const char *resource)
{
    return redlock_lock_open(out, client, resource, NULL, 0);
}

/* 0, or REDLOCK_EINVAL with why resource cannot be locked through client in errbuf. */
static int resource_problem(const redlock_client *client, const char *resource, char *errbuf, size_t size)
{
    if (!client || !resource) {
        rl_fmt(errbuf, size, "%s is NULL", client ? "resource" : "client");
        return REDLOCK_EINVAL;
    }
    size_t rlen = strlen(resource);
    if (rlen == 0) {
        rl_fmt(errbuf, size, "the resource name is empty");
        return REDLOCK_EINVAL;
    }
    if (rlen > REDLOCK_MAX_RESOURCE_LEN) {
        rl_fmt(errbuf, size, "the resource name is %zu bytes, over the limit of %d", rlen, REDLOCK_MAX_RESOURCE_LEN);
        return REDLOCK_EINVAL;
    }
    /* With fencing, "<key>:fencing" is the counter: a lock on it would never
     * be granted. */
    if ((client->opts.flags & REDLOCK_OPT_FENCING) && rlen >= RL_FENCE_SUFFIX_LEN &&
        memcmp(resource + rlen - RL_FENCE_SUFFIX_LEN, RL_FENCE_SUFFIX, RL_FENCE_SUFFIX_LEN) == 0) {
        rl_fmt(errbuf, size, "the resource name '%s' ends in '%s': with fencing on, that is the key of another "
               "resource's token counter", resource, RL_FENCE_SUFFIX);
        return REDLOCK_EINVAL;
    }
    return rl_cluster_key_problem(client, resource, 0, errbuf, size);
}

int rl_resource_problem(const redlock_client *client, const char *resource, char *errbuf, size_t size)
{
    return resource_problem(client, resource, errbuf, size);
}

int redlock_lock_open(redlock_lock **out, redlock_client *client, const char *resource, char *errbuf,
                      size_t errbuf_size)
{
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!out) {
        rl_fmt(errbuf, errbuf_size, "out is NULL");
        return REDLOCK_EINVAL;
    }
    *out = NULL;
    int rc = resource_problem(client, resource, errbuf, errbuf_size);
    if (rc)
        return rc;
    size_t rlen = strlen(resource);
    /* One allocation: the handle, its per-node report, its name and its
     * key (docs/performance.md, memory per held lock). */
    size_t key_len = client->prefix_len + rlen, fkey_len = key_len + RL_FENCE_SUFFIX_LEN;
    redlock_lock *l = calloc(1, sizeof *l + client->n * sizeof *l->report + rlen + 1 + fkey_len + 1);
    if (!l) {
        rl_fmt(errbuf, errbuf_size, "out of memory");
        return REDLOCK_ENOMEM;
    }
    l->report = (rl_report *)(l + 1);
    l->resource = (char *)(l->report + client->n);
    memcpy(l->resource, resource, rlen + 1);
    l->key = l->resource + rlen + 1;
    l->key_len = key_len;
    l->fkey_len = fkey_len;
    for (size_t i = 0; i < client->n; i++)
        l->report[i].msg = "";
    memcpy(l->key, client->prefix, client->prefix_len);
    memcpy(l->key + client->prefix_len, resource, rlen);
    memcpy(l->key + l->key_len, RL_FENCE_SUFFIX, RL_FENCE_SUFFIX_LEN + 1);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&l->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    policy_of(&l->pol, &client->opts);
    atomic_init(&l->state, LOCK_IDLE);
    atomic_init(&l->valid_until_us, 0);
    atomic_init(&l->token, 0);
    atomic_init(&l->ae.used, 0);
    atomic_init(&l->cancel, 0);
    atomic_init(&l->wake_fd, -1);
    atomic_fetch_add(&client->refs, 1);
    l->client = client;
    l->kind = &rl_kind_mutex;   /* the other kinds' constructors set theirs */
    *out = l;
    return 0;
}

void redlock_lock_free(redlock_lock *lock)
{
    if (!lock)
        return;
    rl_async_forget(lock);
    rl_watch_remove(lock);
    int fd = atomic_load(&lock->wake_fd);
    if (fd >= 0)
        close(fd);
    rl_msgs_unref(lock->report_msgs);
    free(lock->errmsg);
    free(lock->lost_msg);
    free(lock->ae.msg);
    pthread_mutex_destroy(&lock->mu);
    if (lock->resource != (char *)(lock->report + lock->client->n))
        free(lock->resource);   /* a multi lock's names (multilock.c) */
    rl_client_unref(lock->client);   /* no I/O, even for the last reference */
    free(lock->rw_keys);
    free(lock->sem_slots);
    free(lock->multi);
    free(lock);
}

int rl_release_begin(redlock_lock *lock, rl_round *r)
{
    if (atomic_load(&lock->state) == LOCK_IDLE)
        return rl_lock_err(lock, REDLOCK_ESTATE, "lock '%s' is not held", lock->resource);
    rl_init_round(r, lock, RL_CMD_RELEASE, 0);
    /* A release wakes the next waiter only while the nodes are calm: with
     * a node failing, a woken waiter races the holder's next attempt on
     * the few nodes left and both lose (docs/algorithm.md). */
    r->wake = rl_wake_calm(lock->client);
    return 0;
}

static int release_locked(redlock_lock *lock)
{
    rl_round r;
    int rc = rl_release_begin(lock, &r);
    if (rc)
        return rc;
    rl_round_run(lock->client, &r);
    return rl_release_end(lock, &r);
}

int rl_release_end(redlock_lock *lock, const rl_round *r)
{
    redlock_client *c = lock->client;
    rl_record_round(lock, r, 0);
    lock->released_us = rl_now_us();
    atomic_store(&lock->state, LOCK_IDLE);
    atomic_store(&lock->valid_until_us, 0);
    atomic_store(&lock->token, 0);
    rl_tally t = rl_tally_of(r->out, r->n);
    int unknown = (int)r->n - t.yes - t.no;
    int code = rl_decide_release(r->out, r->n, c->quorum);
    int64_t took = r->decided_us - r->start_us;
    if (code == 0) {
        rl_lock_ok(lock);
        rl_emit(lock, REDLOCK_EVENT_RELEASED, 0, NULL, r, 0, 0, took);
        return 0;
    }
    if (code == REDLOCK_ELOST) {
        rl_lock_err(lock, code,
                "lock '%s' was no longer ours on a majority when released (%d of %zu nodes, %d needed): "
                "it expired or was taken over, so the critical section may have overlapped another owner",
                lock->resource, t.yes, r->n, c->quorum);
    } else {
        rl_lock_err(lock, code, "release of '%s' not confirmed: %d of %zu nodes confirmed, %d needed, %d could not answer",
                lock->resource, t.yes, r->n, c->quorum, unknown);
    }
    rl_describe_round(rl_errbuf(lock), RL_MSG_MAX, c, r);
    rl_emit(lock, code == REDLOCK_ELOST ? REDLOCK_EVENT_LOST : REDLOCK_EVENT_RELEASE_FAILED, code, rl_errmsg(lock), r, 0, 0,
         took);
    return lock->errcode;
}

int redlock_lock_release(redlock_lock *lock)
{
    if (!lock)
        return REDLOCK_EINVAL;
    rl_watch_remove(lock);
    pthread_mutex_lock(&lock->mu);
    int rc = release_locked(lock);
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

static size_t lock_options_size(unsigned int version)
{
    switch (version) {
    case 1: return offsetof(redlock_lock_options, flags);
    case 2: return sizeof(redlock_lock_options);
    default: return 0;
    }
}


int redlock_lock_options_init_version(redlock_lock_options *opts, unsigned int version)
{
    size_t size = lock_options_size(version);
    if (!opts || !size)
        return REDLOCK_EINVAL;
    redlock_options defaults;
    redlock_lock_options pol;
    memset(&pol, 0, sizeof pol);   /* its padding too: the copy below must not hand out stack bytes */
    redlock_options_init_version(&defaults, REDLOCK_OPTIONS_VERSION);
    policy_of(&pol, &defaults);
    memcpy(opts, &pol, size);
    opts->version = version;
    return 0;
}

/* Programs call the macro of the same name; this is for those that cannot
 * call a macro (cgo, SWIG). */
void (redlock_lock_options_init)(redlock_lock_options *opts)
{
    redlock_lock_options_init_version(opts, 2);
}

int redlock_lock_get_options(const redlock_lock *lock, redlock_lock_options *out)
{
    size_t size = out ? lock_options_size(out->version) : 0;
    if (!lock || !size)
        return REDLOCK_EINVAL;
    redlock_lock *l = (redlock_lock *)lock;  /* the mutex only */
    unsigned int version = out->version;
    pthread_mutex_lock(&l->mu);
    memcpy(out, &l->pol, size);
    pthread_mutex_unlock(&l->mu);
    out->version = version;
    return 0;
}

int redlock_lock_set_options(redlock_lock *lock, const redlock_lock_options *opts)
{
    if (!lock)
        return REDLOCK_EINVAL;
    pthread_mutex_lock(&lock->mu);
    int rc = 0;
    size_t size = opts ? lock_options_size(opts->version) : 0;
    if (!size) {
        rc = rl_lock_err(lock, REDLOCK_EINVAL, "lock options are NULL or of an unknown version (set version to "
                                           "REDLOCK_LOCK_OPTIONS_VERSION)");
    } else if (opts->version >= 2 && (opts->flags & ~LOCK_FLAGS)) {
        rc = rl_lock_err(lock, REDLOCK_EINVAL, "lock option flags 0x%x: only REDLOCK_OPT_WAKE, "
                         "REDLOCK_OPT_NO_WAKE and REDLOCK_OPT_FAIR belong to a lock", (unsigned)(opts->flags & ~LOCK_FLAGS));
    } else {
        /* The same rules as the client's options of the same names. */
        redlock_options check = lock->client->opts;
        check.retry_count = opts->retry_count;
        check.retry_delay_ms = opts->retry_delay_ms;
        check.retry_jitter_ms = opts->retry_jitter_ms;
        check.wait_ms = opts->wait_ms;
        check.drift_factor = opts->drift_factor;
        check.drift_min_ms = opts->drift_min_ms;
        char why[RL_MSG_MAX];
        rc = rl_check_options(&check, why, sizeof why);
        if (rc)
            rl_lock_err(lock, rc, "%s", why);
        else {
            /* A version 1 struct leaves the flags as they were. */
            memcpy(&lock->pol, opts, size);
            lock->pol.version = REDLOCK_LOCK_OPTIONS_VERSION;
            rl_lock_ok(lock);
        }
    }
    pthread_mutex_unlock(&lock->mu);
    return rc;
}

const char *redlock_lock_resource(const redlock_lock *lock)
{
    return lock ? lock->resource : "";
}

const char *redlock_lock_errmsg(const redlock_lock *lock)
{
    return lock ? rl_errmsg(lock) : "lock is NULL";
}

int redlock_lock_errcode(const redlock_lock *lock)
{
    return lock ? lock->errcode : REDLOCK_EINVAL;
}
