/* SPDX-License-Identifier: BSD-3-Clause */
/* fmt.c: bounded formatting into caller buffers, for messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rlcommon.h"

void rl_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    if (!buf || size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

void rl_append(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}
