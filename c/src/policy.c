/* SPDX-License-Identifier: BSD-3-Clause */
/* policy.c: every timing rule in one place: the delay between acquire
 * attempts, reconnect backoff, how long a round waits for a node, when a
 * silent connection is given up, and when auto-extension extends. */
#include "internal.h"

#define BACKOFF_MIN_MS 25
#define BACKOFF_MAX_MS 1000

int64_t rl_policy_retry_delay_us(const redlock_lock_options *pol)
{
    return ((int64_t)pol->retry_delay_ms + rl_random_below(pol->retry_jitter_ms + 1)) * 1000;
}

uint32_t rl_policy_backoff_next_ms(uint32_t prev_ms)
{
    if (!prev_ms)
        return BACKOFF_MIN_MS;
    return prev_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : prev_ms * 2;
}

int64_t rl_policy_node_wait_us(const redlock_options *o, int fresh, int suspect)
{
    int64_t us = (int64_t)o->node_timeout_ms * 1000;
    if (suspect) {
        /* It timed out lately and has not answered since: giving up early is
         * always safe, and waiting the full timeout for a node that is most
         * likely stopped makes contenders split their votes for longer. A
         * node that is back answers within its round trip; a fifth of the
         * timeout leaves room for that. */
        us /= 5;
        return us < 1000 ? 1000 : us;
    }
    if (fresh)
        us += (int64_t)o->connect_timeout_ms * 1000;
    return us;
}

int64_t rl_policy_stall_us(const redlock_options *o)
{
    return (4 * (int64_t)o->node_timeout_ms + o->connect_timeout_ms) * 1000;
}

int64_t rl_policy_extend_interval_us(uint32_t ttl_ms)
{
    return (int64_t)ttl_ms * 1000 / 3;
}

uint32_t rl_policy_at_risk_ms(uint32_t at_risk_ms, uint32_t ttl_ms, uint32_t node_timeout_ms)
{
    uint32_t ms = at_risk_ms;
    if (ms == REDLOCK_AT_RISK_DEFAULT) {
        ms = ttl_ms / 10;
        if (node_timeout_ms <= UINT32_MAX / 2 && 2 * node_timeout_ms > ms)
            ms = 2 * node_timeout_ms;
    }
    return ms > ttl_ms / 2 ? ttl_ms / 2 : ms;
}

int64_t rl_policy_watch_behind_us(uint32_t ttl_ms)
{
    /* Due at a third of the TTL, behind at half: a sixth of the TTL, and
     * about half the validity, is still left. */
    return rl_policy_extend_interval_us(ttl_ms) / 2;
}

int64_t rl_policy_wake_wait_us(const redlock_lock_options *pol, int64_t hint_ms)
{
    /* Just past the holder's expiry, spread a little so that the waiters of
     * a crashed holder do not all come at once. */
    uint32_t spread = pol->retry_jitter_ms < 50 ? pol->retry_jitter_ms : 50;
    int64_t ms = hint_ms < 0 ? RL_POLICY_WAKE_POLL_MAX_MS : hint_ms + 1 + rl_random_below(spread + 1);
    if (ms > RL_POLICY_WAKE_POLL_MAX_MS)
        ms = RL_POLICY_WAKE_POLL_MAX_MS - rl_random_below(spread + 1);
    return ms * 1000;
}

uint32_t rl_policy_wake_lease_ms(const redlock_lock_options *pol)
{
    /* Renewed by every attempt, and a waiter attempts at least every
     * RL_POLICY_WAKE_POLL_MAX_MS, or every retry delay: three of those. */
    uint32_t poll = RL_POLICY_WAKE_POLL_MAX_MS;
    uint64_t slow = (uint64_t)pol->retry_delay_ms + pol->retry_jitter_ms;
    if (slow > poll)
        poll = slow > 3600000 ? 3600000 : (uint32_t)slow;
    return 3 * poll;
}

int redlock_flags_wake(uint32_t flags)
{
    return (flags & (REDLOCK_OPT_WAKE | REDLOCK_OPT_FAIR)) && !(flags & REDLOCK_OPT_NO_WAKE);
}

uint32_t redlock_flags_set_wake(uint32_t flags, int on)
{
    return (flags & ~(REDLOCK_OPT_WAKE | REDLOCK_OPT_NO_WAKE)) | (on ? REDLOCK_OPT_WAKE : 0);
}

int rl_policy_wake_calm(int64_t trouble_us, int64_t now_us)
{
    return !trouble_us || now_us - trouble_us >= (int64_t)RL_POLICY_WAKE_CALM_MS * 1000;
}
