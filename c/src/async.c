/* SPDX-License-Identifier: BSD-3-Clause */
/* async.c: the client's queue of asynchronous acquires, as the rest of the
 * library sees it: made and stopped with the client, asked whether a
 * lock's acquire is under way, and told when a lock is freed.
 * acquire_async.c runs the queue's thread; this file calls nothing that
 * acquires, so that lock.c and client.c may call it. */
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "internal.h"

rl_async *rl_async_new(void)
{
    rl_async *A = calloc(1, sizeof *A);
    if (!A)
        return NULL;
    pthread_mutex_init(&A->mu, NULL);
    pthread_cond_init(&A->idle, NULL);
    A->epfd = A->kick_fd = -1;
    return A;
}

void rl_async_free(rl_async *A)
{
    if (A->epfd >= 0)
        close(A->epfd);
    if (A->kick_fd >= 0)
        close(A->kick_fd);
    pthread_cond_destroy(&A->idle);
    pthread_mutex_destroy(&A->mu);
    free(A);
}

void rl_async_kick(rl_async *A)
{
    uint64_t one = 1;
    ssize_t w = write(A->kick_fd, &one, sizeof one);
    (void)w;
}

/* 1 in a forked child of the process that started the thread: the thread
 * is gone, and may have held A->mu at the fork, so the child never takes
 * it. The child's copy of the queue is the parent's; none of it runs here. */
static int forked(rl_async *A)
{
    pid_t pid = atomic_load(&A->pid);
    return pid != 0 && pid != rl_pid();
}

void rl_async_destroy(rl_async *A)
{
    if (!A)
        return;
    if (forked(A)) {
        close(A->epfd);              /* the child's copies; the mutex is left as it is */
        close(A->kick_fd);
        free(A);
        return;
    }
    pthread_mutex_lock(&A->mu);
    int started = A->started;
    A->stop = 1;
    /* No lock is left (each holds a reference): no acquire is queued. */
    if (started && pthread_equal(pthread_self(), A->thread)) {
        /* From a done callback that freed the client's last lock: the
         * thread frees A when the callback returns. */
        A->orphan = 1;
        pthread_detach(A->thread);
        pthread_mutex_unlock(&A->mu);
        return;
    }
    if (started)
        rl_async_kick(A);
    pthread_mutex_unlock(&A->mu);
    if (started)
        pthread_join(A->thread, NULL);
    rl_async_free(A);
}

int rl_async_forked(rl_async *A)
{
    return forked(A);
}

int rl_async_pending(redlock_lock *lock)
{
    if (!atomic_load_explicit(&lock->async_used, memory_order_acquire))
        return 0;
    rl_async *A = lock->client->async;
    if (forked(A))
        return 0;                    /* the parent's acquire runs on in the parent only */
    pthread_mutex_lock(&A->mu);
    int pending = lock->async_acq != NULL;
    pthread_mutex_unlock(&A->mu);
    return pending;
}

void rl_async_forget(redlock_lock *lock)
{
    if (!atomic_load_explicit(&lock->async_used, memory_order_acquire))
        return;
    rl_async *A = lock->client->async;
    if (forked(A)) {
        lock->async_acq = NULL;      /* no thread here steps it or calls back */
        return;
    }
    pthread_mutex_lock(&A->mu);
    int on_thread = A->started && pthread_equal(pthread_self(), A->thread);
    rl_acq *a = lock->async_acq;
    if (a && on_thread) {
        /* From a callback on the acquire thread (another lock's done, or
         * the on_event hook): the thread is not stepping this acquire, so
         * it is dropped without its callback. */
        if (a->watch > 0)
            epoll_ctl(A->epfd, EPOLL_CTL_DEL, atomic_load(&lock->wake_fd), NULL);
        if (a->begun && a->s.join)
            rl_wake_leave(lock->client, &a->s.w);   /* off the listeners' list; its
                                                     * registration's lease runs out */
        a->gone = 1;
        lock->async_acq = NULL;
    } else if (a) {
        rl_lock_cancel_now(lock);    /* its eventfd wakes the thread */
    }
    if (!on_thread)
        while (lock->async_acq || A->calling == lock)
            pthread_cond_wait(&A->idle, &A->mu);
    pthread_mutex_unlock(&A->mu);
}

