/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_options.c: libFuzzer target for option validation: arbitrary bytes
 * as a redlock_options struct (strings replaced by fuzzed text). Accepted
 * options must be within the documented ranges. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    redlock_options o;
    redlock_options_init(&o);
    size_t k = size < sizeof o ? size : sizeof o;
    memcpy(&o, data, k);
    /* pointers can't be fuzzed as bytes: point them at fuzzed text instead */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    o.key_prefix = (size & 1) ? text : NULL;
    o.tls_ca_file = o.tls_ca_dir = o.tls_cert_file = o.tls_key_file = NULL;
    o.tls_server_name = (size & 2) ? text : NULL;
    char err[256] = "";
    int rc = rl_check_options(&o, err, sizeof err);
    if (rc == 0) {
        if (o.node_timeout_ms == 0 || !(o.drift_factor >= 0.0 && o.drift_factor < 0.5) || isnan(o.drift_factor))
            abort();
        if (o.key_prefix && strlen(o.key_prefix) > REDLOCK_MAX_PREFIX_LEN)
            abort();
    } else if (rc != REDLOCK_EINVAL || err[0] == '\0') {
        abort();
    }
    free(text);
    return 0;
}
