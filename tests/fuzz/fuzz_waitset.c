/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_waitset.c: libFuzzer target for rl_round_wait_set, the function that
 * says which nodes a round still waits for. Its rules: a round never stops
 * waiting while a quorum is still possible and not yet reached; it never
 * waits for a node that has answered; once it stops, the decisions it feeds
 * (decide.c) see a settled outcome. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t n = (size_t)(data[0] % REDLOCK_MAX_NODES) + 1;
    int acquire = data[1] & 1;
    /* Usually a majority; sometimes every node (FUNCTION LOAD). */
    int quorum = (data[1] & 2) ? (int)n : (int)(n / 2 + 1);
    const unsigned char *p = data + 2;
    size_t left = size - 2;
    rl_outcome out[REDLOCK_MAX_NODES];
    unsigned char wait[REDLOCK_MAX_NODES];
    int yes = 0, no = 0, pending = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = left ? (left--, *p++) : 0;
        out[i] = (rl_outcome)(b % (RL_UNSENT + 1));
        yes += out[i] == RL_YES;
        no += out[i] == RL_NO;
        pending += out[i] == RL_PENDING;
    }
    memset(wait, 0xAA, sizeof wait);
    int w = rl_round_wait_set(out, n, quorum, acquire, wait);
    int counted = 0;
    for (size_t i = 0; i < n; i++) {
        if (wait[i] > 1)
            abort();                      /* every flag written, 0 or 1 */
        if (wait[i] && out[i] != RL_PENDING)
            abort();                      /* never waits for a node that answered */
        counted += wait[i];
    }
    if (w != counted || w < 0 || w > pending)
        abort();
    if (w == 0 && pending > 0 && yes < quorum && yes + pending >= quorum)
        abort();                          /* stopped while a quorum was still possible */
    if (w > 0 && yes >= quorum)
        abort();                          /* kept waiting after the quorum was reached */
    if (w == 0 && yes < quorum) {
        /* Stopped short of a quorum: the outcome must be a failure whatever
         * the unheard nodes would have said. */
        rl_outcome all_yes[REDLOCK_MAX_NODES];
        for (size_t i = 0; i < n; i++)
            all_yes[i] = out[i] == RL_PENDING ? RL_YES : out[i];
        if (yes + pending >= quorum)
            abort();
        if (rl_decide_acquire(all_yes, n, quorum, 1, 0) == 0 || rl_decide_release(all_yes, n, quorum) == 0)
            abort();
    }
    return 0;
}
