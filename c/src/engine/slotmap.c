/* SPDX-License-Identifier: BSD-3-Clause */
/* slotmap.c: how Redis Cluster places a key: its hash tag and its slot
 * (CRC16/XMODEM of the key, or of the tag, modulo 16384), as the servers
 * compute it (cluster.c's keyHashSlot in Redis and Valkey). A lock's
 * auxiliary keys must share the lock key's slot on a cluster node, or its
 * scripts fail with CROSSSLOT (docs/cluster.md). */
#include <string.h>

#include "engine.h"

int rl_key_tag(const char *key, size_t len, size_t *start, size_t *tlen)
{
    const char *open = memchr(key, '{', len);
    if (!open)
        return 0;
    size_t s = (size_t)(open - key) + 1;
    const char *close = memchr(key + s, '}', len - s);
    if (!close || close == key + s)
        return 0;   /* no '}' after the '{', or "{}": the whole key is hashed */
    *start = s;
    *tlen = (size_t)(close - (key + s));
    return 1;
}

int rl_key_taggable(const char *key, size_t len)
{
    size_t s, t;
    /* "{K}suffix" hashes K whole, as K itself does, unless K holds a '}'. */
    return rl_key_tag(key, len, &s, &t) || memchr(key, '}', len) == NULL;
}

uint16_t rl_crc16(uint16_t crc, const char *key, size_t n)
{
    const unsigned char *p = (const unsigned char *)key;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned rl_keyslot(const char *key, size_t len)
{
    size_t s, t;
    if (rl_key_tag(key, len, &s, &t))
        return rl_crc16(0, key + s, t) & 16383u;
    return rl_crc16(0, key, len) & 16383u;
}
