/* SPDX-License-Identifier: BSD-3-Clause */
/* run.c: 'redlock run': holds a Redlock while a command runs, kept alive by
 * the library's auto-extension, and stops the command if the lock is lost.
 * This file is the subcommand's outline; run.h lists its other parts. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define CMD RUN_CMD
#define MIN_TTL_MS 100
/* The library caps one acquire's wait; longer waits are done in pieces. */

/* Arguments, then the merged settings: 0, or the exit code of a usage
 * error, already reported. */
static int settings(run_opts *o, int argc, char **argv, int64_t *ttl, int64_t *wait)
{
    int rc = run_parse_args(o, argc, argv);
    if (!rc)
        rc = cli_common_resolve(&o->common, CMD, 1);
    if (rc)
        return rc;
    *ttl = o->common.ttl_ms >= 0 ? o->common.ttl_ms : CLI_DEFAULT_TTL_MS;
    if (*ttl < MIN_TTL_MS || *ttl > (int64_t)REDLOCK_MAX_TTL_MS)
        return cli_usage(CMD, "--ttl must be between 100ms and 1d");
    rc = cli_nodes_check(&o->common, CMD, 1);
    if (rc)
        return rc;
    *wait = o->common.wait_ms == -2 ? CLI_WAIT_FOREVER : o->common.wait_ms;
    if (o->nonblock)
        *wait = 0;
    return 0;
}

/* The client and the lock handle: 0, or an exit code (reported). */
static int open_lock(run_opts *o, redlock_client **client, redlock_lock **lock)
{
    redlock_options opts;
    cli_lib_options(&o->common, &opts);
    if (o->fencing)
        opts.flags |= REDLOCK_OPT_FENCING;
    if (o->wake)
        opts.flags |= REDLOCK_OPT_WAKE;
    if (o->no_wake)
        opts.flags |= REDLOCK_OPT_NO_WAKE;
    if (o->fair)
        opts.flags |= REDLOCK_OPT_FAIR;
    run_watch_init(o, &opts);
    char err[1024];
    int rc = redlock_client_open(client, (const char *const *)o->common.urls, o->common.n_urls, &opts, err,
                                 sizeof err);
    /* What the library refuses here is a setting or the resource name: a
     * usage error, with the suffix every usage error has. */
    if (rc == REDLOCK_ENOMEM) {
        cli_err(CMD, "out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    if (rc)
        return cli_usage(CMD, "%s", err);
    /* -nN: one permit of a semaphore of N. -s: a reader of RESOURCE's
     * read-write lock; else a writer, which excludes readers, writers and
     * mutex holders alike, unless --fair orders exclusive holders as a
     * mutex's waiters. */
    if (o->sem_limit && o->shared)
        return cli_usage(CMD, "-s/--shared and --limit/-nN: a semaphore's permits have no shared side");
    if (o->n_also && (o->shared || o->sem_limit))
        return cli_usage(CMD, "--also and %s: several resources are held together exclusively",
                         o->shared ? "-s/--shared" : "--limit/-nN");
    if (o->n_also && o->fair)
        return cli_usage(CMD, "--also and --fair: the waiters for several resources are woken, not ordered");
    char why[512] = "";
    if (o->n_also) {
        /* RESOURCE and every --also NAME, all or none, in one step. */
        const char *names[REDLOCK_MAX_MULTI];
        names[0] = o->resource;
        for (int k = 0; k < o->n_also; k++)
            names[k + 1] = o->also[k];
        rc = redlock_lock_open_multi(lock, *client, names, (size_t)o->n_also + 1, why, sizeof why);
        if (rc == 0)
            o->resource = redlock_lock_resource(*lock);   /* "a,b": the names in canonical order */
    } else if (o->sem_limit)
        rc = redlock_lock_open_semaphore(lock, *client, o->resource, (uint32_t)o->sem_limit, 1, why, sizeof why);
    else if (o->shared)
        rc = redlock_lock_new_read(lock, *client, o->resource);
    else if (o->fair)
        rc = redlock_lock_new(lock, *client, o->resource);
    else
        rc = redlock_lock_new_write(lock, *client, o->resource);
    if (rc && why[0] && rc != REDLOCK_ENOMEM)
        return cli_usage(CMD, "resource '%.100s': %s", o->resource, why);
    if (rc == REDLOCK_ENOMEM) {
        cli_err(CMD, "out of memory");
        return CLI_EXIT_SOFTWARE;
    }
    if (rc)
        return cli_usage(CMD, "resource '%.100s': %s", o->resource, redlock_strerror(rc));
    return 0;
}

/* -v: what the acquisition will do. The retry policy is the library's own
 * (its defaults for every lock), not the tool's: shown so that a slow
 * acquisition can be explained. */
static void log_acquiring(const run_opts *o, redlock_lock *lock, int64_t ttl, int64_t wait)
{
    char d1[32], d2[32];
    redlock_lock_options policy;
    memset(&policy, 0, sizeof policy);
    policy.version = REDLOCK_LOCK_OPTIONS_VERSION;
    if (redlock_lock_get_options(lock, &policy) != 0)
        policy.retry_delay_ms = policy.retry_jitter_ms = 0;
    run_vlog(o,
             "acquiring '%s' (ttl %s, wait %s) on %zu nodes; retry delay %u ms + up to %u ms of jitter (the "
             "library's)%s%s",
             o->resource, cli_fmt_duration(ttl, d1, sizeof d1),
             wait == CLI_WAIT_FOREVER ? "forever" : cli_fmt_duration(wait, d2, sizeof d2), o->common.n_urls,
             (unsigned)policy.retry_delay_ms, (unsigned)policy.retry_jitter_ms,
             redlock_flags_wake(policy.flags) ? ", cut short by a release" : ", polling",
             policy.flags & REDLOCK_OPT_FAIR ? "; fair mode" : "");
}

/* Acquires the lock, waiting up to `wait` (CLI_WAIT_FOREVER: until held or
 * a signal cancels it). 0 once held; else -1 with the exit code in *exit_code. */
static int acquire(const run_opts *o, redlock_lock *lock, int64_t ttl, int64_t wait, int *exit_code, int *reraise)
{
    run_signals_catch(lock);
    log_acquiring(o, lock, ttl, wait);
    int64_t started_ms = cli_now_ms();
    int rc = redlock_lock_acquire(lock, (uint32_t)ttl, run_lib_wait(wait));
    if (rc == 0 && run_signal) {
        /* A signal arrived during the attempt that succeeded. */
        redlock_lock_release(lock);
        rc = REDLOCK_ECANCELED;
    }
    if (rc) {
        *exit_code = run_acquire_failed(o, lock, rc, wait, reraise);
        return -1;
    }
    char d[32];
    run_vlog(o, "acquired '%s' (validity %lld ms); getting the lock took %s", o->resource,
             (long long)redlock_lock_validity_ms(lock), cli_fmt_duration(cli_now_ms() - started_ms, d, sizeof d));
    return 0;
}

/* Runs COMMAND under the lock, then releases it: the exit code. */
static int hold(const run_opts *o, redlock_lock *lock, const fdset *inherited, int *reraise)
{
    int passthrough, killed_by;
    int rc = run_command(o, lock, inherited, &passthrough, &killed_by);
    int released = redlock_lock_release(lock);
    if (passthrough && killed_by && killed_by == run_signal)
        *reraise = killed_by;
    if (passthrough && released == REDLOCK_ELOST)
        *reraise = 0;  /* exits with the lost code instead */
    return run_after_release(o, lock, released, rc, passthrough);
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    run_opts_init(&o, RUN_CMD);
    int64_t ttl = 0, wait = 0;
    int rc = settings(&o, argc, argv, &ttl, &wait);
    if (rc) {
        cli_common_free(&o.common);
        return rc;
    }

    /* Our own signal state first, and the descriptors COMMAND may inherit
     * (opened before the library's sockets). */
    run_signals_init();
    fdset inherited;
    run_fds_snapshot(&inherited);
    redlock_client *client = NULL;
    redlock_lock *lock = NULL;
    int reraise = 0;
    rc = open_lock(&o, &client, &lock);
    if (!rc && acquire(&o, lock, ttl, wait, &rc, &reraise) == 0)
        rc = hold(&o, lock, &inherited, &reraise);

    run_signals_forget();  /* the handlers do nothing from now on: the handle goes away */
    redlock_lock_free(lock);
    redlock_client_free(client);
    free(inherited.fds);
    cli_common_free(&o.common);
    run_die_of(reraise);
    return rc;
}
