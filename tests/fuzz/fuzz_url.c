/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_url.c: libFuzzer target for node-URL parsing. A URL either fails with
 * a reason, or parses into an endpoint whose display form never shows the
 * password. No name resolution happens here, so nothing leaves the machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *url = malloc(size + 1), err[256];
    if (!url)
        return 0;
    memcpy(url, data, size);
    url[size] = '\0';
    rl_endpoint ep;
    int rc = rl_endpoint_parse(&ep, url, err, sizeof err);
    if (rc == 0) {
        if (!ep.display || (!ep.host && !ep.path))
            abort();
        if (ep.host && ep.port <= 0)
            abort();
        if (ep.password) {
            if (!strstr(ep.display, ":***@"))
                abort();
            /* The display is made of the scheme, user, host or path, port,
             * db, the cluster seeds and ":***@". A password that cannot
             * straddle those pieces (no separators, no digits-only) and is
             * not inside one of them must not appear in it. */
            const char *pw = ep.password;
            static const char *const fixed[] = {"redis-cluster://", "rediss-cluster://", "rediss://", "unix://",
                                                "?seed=&seed=", "?db="};
            int plain = strlen(pw) >= 3 && strpbrk(pw, ":@/[]*?=&") == NULL && strspn(pw, "0123456789") != strlen(pw);
            int inside = (ep.user && strstr(ep.user, pw)) || (ep.host && strstr(ep.host, pw)) ||
                         (ep.path && strstr(ep.path, pw));
            for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
                inside |= strstr(fixed[i], pw) != NULL;
            for (size_t i = 0; i < ep.nseeds; i++)
                inside |= strstr(ep.seed_hosts[i], pw) != NULL;
            if (plain && !inside && strstr(ep.display, pw))
                abort();
        }
        rl_endpoint_clear(&ep);
    } else {
        if (rc != REDLOCK_EINVAL && rc != REDLOCK_ENOTSUP && rc != REDLOCK_ENOMEM)
            abort();
        if (err[0] == '\0')
            abort();  /* every failure says why */
    }
    char masked[300];
    rl_mask_url(masked, sizeof masked, url);
    free(url);
    return 0;
}
