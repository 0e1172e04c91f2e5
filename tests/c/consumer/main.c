/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c: the smallest program that uses an installed libredlock, as a
 * downstream project writes it. It checks that the library it runs with is
 * the one its header describes and, given nodes (arguments, or a
 * comma-separated $REDLOCK_TEST_NODES), takes, extends and releases a lock. */
#define _POSIX_C_SOURCE 200809L  /* strdup, strtok_r */
#include <redlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_URLS 16

static int fail(const char *what, int rc, const redlock_lock *lock)
{
    fprintf(stderr, "consumer: %s: %s %s\n", what, redlock_error_name(rc), lock ? redlock_lock_errmsg(lock) : "");
    return 1;
}

int main(int argc, char **argv)
{
    char header[32];
    snprintf(header, sizeof header, "%d.%d.%d", REDLOCK_VERSION_MAJOR, REDLOCK_VERSION_MINOR, REDLOCK_VERSION_PATCH);
    printf("libredlock %s (header %s)\n", redlock_version(), header);
    if (strcmp(redlock_version(), header) != 0) {
        fprintf(stderr, "consumer: runs with libredlock %s, built against %s\n", redlock_version(), header);
        return 1;
    }
    if (strcmp(redlock_strerror(REDLOCK_ENOQUORUM), redlock_strerror(REDLOCK_OK)) == 0)
        return 1;

    const char *urls[MAX_URLS];
    size_t n = 0;
    char *env = NULL;
    for (int i = 1; i < argc && n < MAX_URLS; i++)
        urls[n++] = argv[i];
    if (n == 0 && getenv("REDLOCK_TEST_NODES") && *getenv("REDLOCK_TEST_NODES")) {
        env = strdup(getenv("REDLOCK_TEST_NODES"));
        for (char *save = NULL, *u = strtok_r(env, ",", &save); u && n < MAX_URLS; u = strtok_r(NULL, ",", &save))
            urls[n++] = u;
    }
    if (n == 0) {
        printf("no nodes given: the library loads and answers\n");
        return 0;
    }

    redlock_options opts;
    redlock_options_init(&opts);
    opts.key_prefix = "consumer:";
    opts.flags |= REDLOCK_OPT_FENCING;
    char err[256];
    redlock_client *client = NULL;
    int rc = redlock_client_open(&client, urls, n, &opts, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "consumer: redlock_client_open: %s: %s\n", redlock_error_name(rc), err);
        free(env);
        return 1;
    }
    redlock_lock *lock = NULL;
    int status = 1;
    if ((rc = redlock_lock_new(&lock, client, "installed")) != 0)
        fail("redlock_lock_new", rc, NULL);
    else if ((rc = redlock_lock_acquire(lock, 5000, 2000)) != 0)
        fail("redlock_lock_acquire", rc, lock);
    else if (!redlock_lock_is_held(lock) || redlock_lock_fencing_token(lock) == 0)
        fprintf(stderr, "consumer: acquired, but not held or no fencing token\n");
    else if ((rc = redlock_lock_extend(lock, 5000)) != 0)
        fail("redlock_lock_extend", rc, lock);
    else if ((rc = redlock_lock_release(lock)) != 0)
        fail("redlock_lock_release", rc, lock);
    else {
        printf("took, extended and released a lock on %zu node(s)\n", n);
        status = 0;
    }
    redlock_lock_free(lock);
    redlock_client_free(client);
    free(env);
    return status;
}
