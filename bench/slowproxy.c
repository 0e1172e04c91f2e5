/* SPDX-License-Identifier: BSD-3-Clause */
/* slowproxy.c: a node that answers late. A loopback TCP proxy on one thread
 * that forwards every request at once and holds every reply chunk for a fixed
 * delay, in order, before passing it on. In C and in-process so that it costs
 * the 2-CPU benchmark machine next to nothing and adds no jitter of its own
 * (an interpreter's event loop would add both). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "bench.h"

#define PROXY_MAX_CONNS 256

typedef struct chunk {
    struct chunk *next;
    int64_t due_ns;
    size_t len, off;
    char data[];
} chunk;

typedef struct pconn {
    int cfd, ufd;            /* client side, upstream side; -1 when unused */
    chunk *head, *tail;      /* replies waiting for their time */
} pconn;

struct bench_proxy {
    int lfd;
    int wake[2];
    int64_t delay_ns;
    struct sockaddr_in up;
    char url[64];
    pthread_t th;
    pconn c[PROXY_MAX_CONNS];
};

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void conn_close(pconn *c)
{
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->ufd >= 0)
        close(c->ufd);
    while (c->head) {
        chunk *n = c->head->next;
        free(c->head);
        c->head = n;
    }
    c->tail = NULL;
    c->cfd = c->ufd = -1;
}

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void accept_one(bench_proxy *p)
{
    int cfd = accept(p->lfd, NULL, NULL);
    if (cfd < 0)
        return;
    int slot = -1;
    for (int i = 0; i < PROXY_MAX_CONNS && slot < 0; i++)
        if (p->c[i].cfd < 0)
            slot = i;
    int ufd = slot < 0 ? -1 : socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ufd < 0 || connect(ufd, (struct sockaddr *)&p->up, sizeof p->up) != 0) {
        /* Like a dead node behind a load balancer: the client sees a close. */
        if (ufd >= 0)
            close(ufd);
        close(cfd);
        return;
    }
    nodelay(cfd);
    nodelay(ufd);
    p->c[slot].cfd = cfd;
    p->c[slot].ufd = ufd;
}

static void *proxy_main(void *arg)
{
    bench_proxy *p = arg;
    struct pollfd pfd[2 + 2 * PROXY_MAX_CONNS];
    int who[2 + 2 * PROXY_MAX_CONNS];
    char buf[65536];
    for (;;) {
        nfds_t n = 0;
        int64_t now = bench_now_ns(), next_due = -1;
        pfd[n].fd = p->wake[0], pfd[n].events = POLLIN, who[n++] = -1;
        pfd[n].fd = p->lfd, pfd[n].events = POLLIN, who[n++] = -2;
        for (int i = 0; i < PROXY_MAX_CONNS; i++) {
            pconn *c = &p->c[i];
            if (c->cfd < 0)
                continue;
            pfd[n].fd = c->cfd, pfd[n].events = POLLIN, who[n++] = 2 * i;
            pfd[n].fd = c->ufd, pfd[n].events = POLLIN, who[n++] = 2 * i + 1;
            if (c->head && (next_due < 0 || c->head->due_ns < next_due))
                next_due = c->head->due_ns;
        }
        struct timespec ts, *tsp = NULL;
        if (next_due >= 0) {
            int64_t w = next_due > now ? next_due - now : 0;
            ts.tv_sec = (time_t)(w / 1000000000);
            ts.tv_nsec = (long)(w % 1000000000);
            tsp = &ts;
        }
        int rc = ppoll(pfd, n, tsp, NULL);
        if (rc < 0 && errno != EINTR)
            return NULL;
        for (nfds_t k = 0; rc > 0 && k < n; k++) {
            if (!pfd[k].revents)
                continue;
            if (who[k] == -1)
                return NULL;            /* stop */
            if (who[k] == -2) {
                accept_one(p);
                continue;
            }
            pconn *c = &p->c[who[k] / 2];
            if (c->cfd < 0)
                continue;               /* closed earlier in this pass */
            int from_up = who[k] % 2;
            ssize_t r = recv(from_up ? c->ufd : c->cfd, buf, sizeof buf, 0);
            if (r < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (r <= 0) {
                conn_close(c);
                continue;
            }
            if (!from_up) {
                if (write_all(c->ufd, buf, (size_t)r) != 0)
                    conn_close(c);
                continue;
            }
            chunk *ch = malloc(sizeof *ch + (size_t)r);
            if (!ch) {
                conn_close(c);
                continue;
            }
            ch->next = NULL;
            ch->due_ns = bench_now_ns() + p->delay_ns;
            ch->len = (size_t)r;
            ch->off = 0;
            memcpy(ch->data, buf, (size_t)r);
            if (c->tail)
                c->tail->next = ch;
            else
                c->head = ch;
            c->tail = ch;
        }
        now = bench_now_ns();
        for (int i = 0; i < PROXY_MAX_CONNS; i++) {
            pconn *c = &p->c[i];
            while (c->cfd >= 0 && c->head && c->head->due_ns <= now) {
                chunk *ch = c->head;
                if (write_all(c->cfd, ch->data, ch->len) != 0) {
                    conn_close(c);
                    break;
                }
                c->head = ch->next;
                if (!c->head)
                    c->tail = NULL;
                free(ch);
            }
        }
    }
}

int bench_proxy_start(bench_proxy **out, const char *upstream, int delay_ms, char *err, size_t errsize)
{
    char host[64];
    int port = 0;
    *out = NULL;
    bench_proxy *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    p->lfd = p->wake[0] = p->wake[1] = -1;
    for (int i = 0; i < PROXY_MAX_CONNS; i++)
        p->c[i].cfd = p->c[i].ufd = -1;
    p->delay_ns = (int64_t)delay_ms * 1000000;
    p->up.sin_family = AF_INET;
    if (sscanf(upstream, "redis://%63[^:/]:%d", host, &port) != 2 ||
        inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &p->up.sin_addr) != 1 ||
        (ntohl(p->up.sin_addr.s_addr) >> 24) != 127) {
        snprintf(err, errsize, "proxy: upstream '%s' is not redis://127.x.x.x:port", upstream);
        free(p);
        return -1;
    }
    p->up.sin_port = htons((uint16_t)port);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
    socklen_t alen = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(p->lfd, 64) != 0 ||
        getsockname(p->lfd, (struct sockaddr *)&a, &alen) != 0 || pipe(p->wake) != 0) {
        snprintf(err, errsize, "proxy: listen: %s", strerror(errno));
        bench_proxy_stop(p);
        return -1;
    }
    snprintf(p->url, sizeof p->url, "redis://127.0.0.1:%d", ntohs(a.sin_port));
    if (pthread_create(&p->th, NULL, proxy_main, p) != 0) {
        snprintf(err, errsize, "proxy: cannot start its thread");
        close(p->wake[1]);
        p->wake[1] = -1;
        bench_proxy_stop(p);
        return -1;
    }
    *out = p;
    return 0;
}

const char *bench_proxy_url(const bench_proxy *p)
{
    return p->url;
}

void bench_proxy_stop(bench_proxy *p)
{
    if (!p)
        return;
    if (p->wake[1] >= 0) {
        char x = 0;
        ssize_t w = write(p->wake[1], &x, 1);
        (void)w;
        pthread_join(p->th, NULL);
    }
    for (int i = 0; i < PROXY_MAX_CONNS; i++)
        if (p->c[i].cfd >= 0)
            conn_close(&p->c[i]);
    if (p->lfd >= 0)
        close(p->lfd);
    if (p->wake[0] >= 0)
        close(p->wake[0]);
    if (p->wake[1] >= 0)
        close(p->wake[1]);
    free(p);
}
