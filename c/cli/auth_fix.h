/* SPDX-License-Identifier: BSD-3-Clause */
/* auth_fix.h: what status and doctor say of a node that refuses the client:
 * NOAUTH (connected, no password in the URL, and the node wants one), or
 * an AUTH that the node refused (cli_connect's "authentication failed: ...",
 * CLI_FAIL_AUTH). One wording for both commands. */
#ifndef REDLOCK_CLI_AUTH_FIX_H
#define REDLOCK_CLI_AUTH_FIX_H

#include <string.h>

#define CLI_FIX_NOAUTH                                                                              \
    "this node needs a password: add it to the URL as redis://:PASSWORD@host (or "                 \
    "redis://USER:PASSWORD@host for an ACL user)"
#define CLI_FIX_AUTH_REFUSED                                                                        \
    "the password (or user) in the URL is refused: check them (percent-encode special characters)"
#define CLI_FIX_AUTH_UNSET                                                                          \
    "this node has no password: remove it from the URL, or set one on the node (requirepass)"

/* The reply of a node that wants the client to authenticate first. */
static inline int cli_is_noauth(const char *reply)
{
    return reply && strncmp(reply, "NOAUTH", 6) == 0;
}

/* The fix for an AUTH the node refused, by what it said: a password sent to
 * a node that has none (Redis 6+, and older servers' wording), or else a
 * password or user it does not accept (WRONGPASS). */
static inline const char *cli_auth_fix(const char *why)
{
    if (why && (strstr(why, "without any password configured") || strstr(why, "no password is set")))
        return CLI_FIX_AUTH_UNSET;
    return CLI_FIX_AUTH_REFUSED;
}

#endif
