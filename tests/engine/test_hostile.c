/* SPDX-License-Identifier: BSD-3-Clause */
/* test_hostile.c: nodes that answer with what no Redis sends, to check that
 * no node can crash or exhaust its client (docs/security.md). Fake servers
 * here stand in for a compromised node: a real one cannot be made to send
 * these replies. Real nodes (from the harness) make up the rest.
 *   nested:  "*1\r\n" 300,000 times, then ":1\r\n" (hiredis alone recursed
 *            until the stack overflowed)
 *   bulk:    a bulk string announced as 1 GB, then data without end
 *   bigarray: an array announced with 100 million elements */
#include "../c/testutil.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>

typedef struct fake {
    int fd, port;
    const char *mode;
    atomic_int stop;
    pthread_t th;
} fake;

static void answer(int c, const char *mode)
{
    char buf[4096];
    if (recv(c, buf, sizeof buf, 0) <= 0)
        return;
    if (strcmp(mode, "nested") == 0) {
        static char payload[300000 * 4 + 4];
        for (int k = 0; k < 300000; k++)
            memcpy(payload + 4 * k, "*1\r\n", 4);
        memcpy(payload + 300000 * 4, ":1\r\n", 4);
        size_t off = 0;
        while (off < sizeof payload) {
            ssize_t n = send(c, payload + off, sizeof payload - off, MSG_NOSIGNAL);
            if (n <= 0)
                return;
            off += (size_t)n;
        }
    } else if (strcmp(mode, "bulk") == 0) {
        send(c, "$1000000000\r\n", 13, MSG_NOSIGNAL);
        memset(buf, 'x', sizeof buf);
        for (int k = 0; k < 1000; k++)   /* 4 MB, then stop: the client must have given up */
            if (send(c, buf, sizeof buf, MSG_NOSIGNAL) <= 0)
                return;
    } else {
        send(c, "*100000000\r\n:1\r\n", 16, MSG_NOSIGNAL);
    }
}

static void *serve(void *arg)
{
    fake *f = arg;
    while (!atomic_load(&f->stop)) {
        struct pollfd p = { f->fd, POLLIN, 0 };
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(f->fd, NULL, NULL);
        if (c < 0)
            continue;
        answer(c, f->mode);
        msleep(50);
        close(c);
    }
    return NULL;
}

static void fake_start(fake *f, const char *mode)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    bind(f->fd, (struct sockaddr *)&a, sizeof a);
    listen(f->fd, 16);
    getsockname(f->fd, (struct sockaddr *)&a, &len);
    f->port = ntohs(a.sin_port);
    f->mode = mode;
    atomic_init(&f->stop, 0);
    pthread_create(&f->th, NULL, serve, f);
}

static void fake_stop(fake *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->th, NULL);
    close(f->fd);
}

static redlock_client *client_of(const char **urls, size_t n)
{
    redlock_client *c = NULL;
    char err[512];
    redlock_options o;
    redlock_options_init(&o);
    o.node_timeout_ms = 2000;
    int rc = redlock_client_open(&c, urls, n, &o, err, sizeof err);
    if (rc) {
        fprintf(stderr, "client_open: %s\n", err);
        exit(1);
    }
    return c;
}

static void hostile(const char *mode)
{
    fake f[3];
    char url[3][64];
    const char *urls[5] = { t_urls[0], t_urls[1] };
    for (int k = 0; k < 3; k++) {
        fake_start(&f[k], mode);
        snprintf(url[k], sizeof url[k], "redis://127.0.0.1:%d", f[k].port);
        urls[2 + k] = url[k];
    }
    /* One bad node of 3: the lock works, the bad node is reported. */
    redlock_client *c = client_of(urls, 3);
    redlock_lock *l;
    char msg[256];
    CHECK_RC(redlock_lock_new(&l, c, uniq("hostile")), 0);
    CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
    int out = redlock_lock_node_result(l, 2, NULL, NULL, msg, sizeof msg);
    printf("%s, 1 bad node of 3: acquired; bad node: outcome %d, '%s'\n", mode, out, msg);
    CHECK(out == REDLOCK_NODE_ERROR || out == REDLOCK_NODE_NOT_WAITED);
    CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
    redlock_lock_free(l);
    redlock_client_free(c);
    /* Three bad nodes of 5: never acquired, and each says why. */
    c = client_of(urls, 5);
    CHECK_RC(redlock_lock_new(&l, c, uniq("hostile")), 0);
    int rc = redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE);
    printf("%s, 3 bad nodes of 5: %s: %.300s\n", mode, redlock_error_name(rc), redlock_lock_errmsg(l));
    CHECK(rc != 0);
    CHECK(!redlock_lock_is_held(l));
    CHECK(strstr(redlock_lock_errmsg(l), "protocol") != NULL);
    redlock_lock_free(l);
    redlock_client_free(c);
    for (int k = 0; k < 3; k++)
        fake_stop(&f[k]);
}

int main(void)
{
    load_nodes();
    if (t_nurls < 2) {
        fprintf(stderr, "needs 2 real nodes\n");
        return 2;
    }
    t_current = "nested";
    hostile("nested");
    t_current = "bulk";
    hostile("bulk");
    t_current = "bigarray";
    hostile("bigarray");
    CHECK_RC((int)keys_on(2), 0);
    return finish_tests();
}
