/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_decide.c: libFuzzer target for the quorum decisions, fed arbitrary
 * per-node outcomes and timings. The invariants are the algorithm's safety
 * rules: never "acquired" with fewer than N/2+1 OKs or with no validity
 * left; never "lost" while a majority might still hold the key; never an
 * extension confirmed after the validity ended. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int64_t take64(const unsigned char **p, size_t *left)
{
    int64_t v = 0;
    size_t k = *left < 8 ? *left : 8;
    memcpy(&v, *p, k);
    *p += k;
    *left -= k;
    return v;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = (size_t)(data[0] % REDLOCK_MAX_NODES) + 1;
    int quorum = (int)(n / 2 + 1);
    const unsigned char *p = data + 1;
    size_t left = size - 1;
    rl_outcome out[REDLOCK_MAX_NODES];
    int yes = 0, no = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = left ? (left--, *p++) : 0;
        out[i] = (rl_outcome)(b % (RL_UNSENT + 1));
        yes += out[i] == RL_YES;
        no += out[i] == RL_NO;
    }
    int64_t valid_until = take64(&p, &left), now = take64(&p, &left);

    int rc = rl_decide_acquire(out, n, quorum, valid_until, now);
    if (rc == 0 && (yes < quorum || valid_until <= now))
        abort();
    if (rc != 0 && yes >= quorum && valid_until > now)
        abort();  /* a real quorum within validity must be taken */
    if (rc > 0 || (rc != 0 && !strcmp(redlock_error_name(rc), "REDLOCK_UNKNOWN")))
        abort();

    rc = rl_decide_extend(out, n, quorum, now, valid_until);
    if (rc == 0 && (yes < quorum || now >= valid_until))
        abort();
    if (rc == REDLOCK_ELOST && (int)n - no >= quorum)
        abort();  /* "lost" only when a majority certainly said "not ours" */

    rc = rl_decide_release(out, n, quorum);
    if (rc == 0 && yes < quorum)
        abort();
    if (rc == REDLOCK_ELOST && (int)n - no >= quorum)
        abort();
    return 0;
}
