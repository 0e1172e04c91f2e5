/* SPDX-License-Identifier: BSD-3-Clause */
/* test_slow.c: one node behind a proxy that delays each reply (run by
 * engine_driver.py). Every round must be decided by the others: the slow
 * node is "not waited" in the report, and acquire, extend and release each
 * return well before the injected delay (p50, printed). The driver then
 * checks that no released key is left on any node, the slow one included. */
#include "../c/testutil.h"

#include <pthread.h>
#include <stdint.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double p50(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int cycles = argc > 1 ? atoi(argv[1]) : 200;
    int slow = argc > 2 ? atoi(argv[2]) : 0;
    double delay_ms = argc > 3 ? atof(argv[3]) : 20.0;
    load_nodes();
    size_t n = t_nurls;
    t_current = "slow_node";
    redlock_client *c = make_client(n, NULL);
    double *acq = calloc((size_t)cycles, sizeof *acq), *ext = calloc((size_t)cycles, sizeof *ext),
           *rel = calloc((size_t)cycles, sizeof *rel);
    int slow_not_waited[3] = { 0, 0, 0 };
    for (int k = 0; k < cycles; k++) {
        redlock_lock *l;
        CHECK_RC(redlock_lock_new(&l, c, uniq("slow")), 0);
        double t0 = now_ms();
        CHECK_LOCK_RC(l, redlock_lock_acquire(l, 10000, REDLOCK_WAIT_NONE), 0);
        double t1 = now_ms();
        slow_not_waited[0] += redlock_lock_node_result(l, (size_t)slow, NULL, NULL, NULL, 0) == REDLOCK_NODE_NOT_WAITED;
        CHECK_LOCK_RC(l, redlock_lock_extend(l, 10000), 0);
        double t2 = now_ms();
        slow_not_waited[1] += redlock_lock_node_result(l, (size_t)slow, NULL, NULL, NULL, 0) == REDLOCK_NODE_NOT_WAITED;
        CHECK_LOCK_RC(l, redlock_lock_release(l), 0);
        double t3 = now_ms();
        slow_not_waited[2] += redlock_lock_node_result(l, (size_t)slow, NULL, NULL, NULL, 0) == REDLOCK_NODE_NOT_WAITED;
        acq[k] = t1 - t0, ext[k] = t2 - t1, rel[k] = t3 - t2;
        redlock_lock_free(l);
    }
    double pa = p50(acq, cycles), pe = p50(ext, cycles), pr = p50(rel, cycles);
    printf("one node %.0f ms slower, %d cycles: p50 acquire %.2f ms, extend %.2f ms, release %.2f ms; "
           "slow node not waited for in %d/%d/%d rounds\n",
           delay_ms, cycles, pa, pe, pr, slow_not_waited[0], slow_not_waited[1], slow_not_waited[2]);
    /* Decided without the slow node: it can only have answered in time when
     * a reply owed from before happened to arrive at once, never in most. */
    for (int o = 0; o < 3; o++)
        CHECK(slow_not_waited[o] > cycles / 2);
    /* Causal, not a speed goal: a round that waited for the slow node would
     * take at least the delay. */
    CHECK(pa < delay_ms / 2 && pe < delay_ms / 2 && pr < delay_ms / 2);
    redlock_client_free(c);
    free(acq);
    free(ext);
    free(rel);
    return finish_tests();
}
