/* SPDX-License-Identifier: BSD-3-Clause */
/* route.c: a Redis or Valkey Cluster as one Redlock node (docs/cluster.md).
 * The node's own connection goes to its first seed; besides it, the client
 * keeps one connection per shard master it needs, as extra rl_nodes past
 * the client's n ("physical" connections, each serving one node: of).
 * Connection indexes below n are the nodes themselves, so a standalone
 * client is untouched. Per cluster node, a slot map says which connection
 * owns each of the 16384 slots: learned from CLUSTER NODES (a flat bulk
 * string, which the hardened reader takes, where CLUSTER SHARDS and SLOTS
 * answer nested arrays), corrected by MOVED, refreshed when a redirect
 * says it changed and every RL_MAP_REFRESH_US. A slot with no known owner
 * goes to the seed, which answers MOVED (or CLUSTERDOWN: the node fails).
 * A member that announces a hostname (cluster-announce-hostname, as
 * managed TLS clusters do) is connected to by that name, which its
 * certificate names; its ip is kept as an alias, so that a MOVED naming
 * the ip (cluster-preferred-endpoint-type ip) finds the same connection.
 * Only data here: conn.c does the I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "engine.h"

#define RL_SLOTS 16384
#define RL_SHARDS_MAX 128              /* shard connections per client, all clusters together */
#define RL_MAP_REFRESH_US (10 * 1000000LL)
#define RL_MAP_RETRY_US (100 * 1000LL) /* a stale map is asked for again no sooner */

typedef struct rl_map {
    uint16_t owner[RL_SLOTS];  /* connection index + 1; 0: unknown (the seed) */
    int64_t asked_us;          /* CLUSTER NODES last sent */
    int64_t learned_us;        /* last map read */
    int stale;                 /* a MOVED said it changed */
} rl_map;

struct rl_route {
    rl_node phys[RL_SHARDS_MAX];
    size_t nphys;
    rl_map *map[REDLOCK_MAX_NODES];
};

rl_node *rl_nodeat(const redlock_client *cl, size_t j)
{
    return j < cl->n ? &cl->nodes[j] : &cl->route->phys[j - cl->n];
}

size_t rl_nconns(const redlock_client *cl)
{
    return cl->n + (cl->route ? cl->route->nphys : 0);
}

size_t rl_logical(const redlock_client *cl, size_t j)
{
    return j < cl->n ? j : cl->route->phys[j - cl->n].of;
}

static rl_map *map_of(redlock_client *cl, size_t i)
{
    if (!cl->route && !(cl->route = calloc(1, sizeof *cl->route)))
        return NULL;
    if (!cl->route->map[i])
        cl->route->map[i] = calloc(1, sizeof(rl_map));
    return cl->route->map[i];
}

static int same_name(const char *name, const char *host, size_t hlen)
{
    return name && strlen(name) == hlen && !memcmp(name, host, hlen);
}

/* "host:port" ("[host]:port" for an IPv6 address), allocated, for reports. */
static char *display_of(const char *host, size_t hlen, int port)
{
    char shown[300];
    rl_fmt(shown, sizeof shown, memchr(host, ':', hlen) ? "[%.*s]:%d" : "%.*s:%d", (int)hlen, host, port);
    return strdup(shown);
}

/* The connection of node i to host:port (or ip:port, the same member's
 * address when host is its announced hostname; NULL if none): i itself
 * for its seed, else a shard connection (made here, not opened). SIZE_MAX
 * when out of room. */
static size_t conn_for_named(redlock_client *cl, size_t i, const char *host, size_t hlen, const char *ip,
                             size_t iplen, int port)
{
    rl_node *seed = &cl->nodes[i];
    if (seed->ep.port == port && (same_name(seed->ep.host, host, hlen) || (ip && same_name(seed->ep.host, ip, iplen))))
        return i;
    if (!cl->route && !(cl->route = calloc(1, sizeof *cl->route)))
        return SIZE_MAX;
    struct rl_route *rt = cl->route;
    for (size_t k = 0; k < rt->nphys; k++) {
        rl_node *p = &rt->phys[k];
        if (p->of != i || p->ep.port != port)
            continue;
        if (same_name(p->ep.host, host, hlen) || same_name(p->alias, host, hlen))
            return cl->n + k;
        if (ip && (same_name(p->ep.host, ip, iplen) || same_name(p->alias, ip, iplen))) {
            if (same_name(p->ep.host, ip, iplen) && !p->conn) {
                /* known by its ip so far, never connected: use the hostname */
                char *h = strndup(host, hlen), *a = strndup(ip, iplen), *display = display_of(host, hlen, port);
                if (h && a && display) {
                    free(p->ep.host);
                    free(p->alias);
                    free(p->ep.display);
                    p->ep.host = h;
                    p->alias = a;
                    p->ep.display = display;
                    return cl->n + k;
                }
                free(h);
                free(a);
                free(display);
            }
            return cl->n + k;
        }
    }
    if (rt->nphys == RL_SHARDS_MAX)
        return SIZE_MAX;
    rl_node *p = &rt->phys[rt->nphys];
    memset(p, 0, sizeof *p);
    p->ep.host = strndup(host, hlen);
    p->ep.port = port;
    p->ep.tls = seed->ep.tls;
    p->ep.cluster = 1;
    p->ep.user = seed->ep.user ? strdup(seed->ep.user) : NULL;
    p->ep.password = seed->ep.password ? strdup(seed->ep.password) : NULL;
    p->ep.display = display_of(host, hlen, port);
    p->of = i;
    if (ip)
        p->alias = strndup(ip, iplen);
    if (!p->ep.host || !p->ep.display || (seed->ep.user && !p->ep.user) || (seed->ep.password && !p->ep.password) ||
        (ip && !p->alias)) {
        rl_endpoint_clear(&p->ep);
        free(p->alias);
        p->alias = NULL;
        return SIZE_MAX;
    }
    return cl->n + rt->nphys++;
}

static size_t conn_for(redlock_client *cl, size_t i, const char *host, size_t hlen, int port)
{
    return conn_for_named(cl, i, host, hlen, NULL, 0, port);
}

size_t rl_route_seed(redlock_client *cl, size_t i, size_t k)
{
    const rl_endpoint *ep = &cl->nodes[i].ep;
    if (k == 0)
        return i;
    if (k > ep->nseeds)
        return SIZE_MAX;
    return conn_for(cl, i, ep->seed_hosts[k - 1], strlen(ep->seed_hosts[k - 1]), ep->seed_ports[k - 1]);
}

/* A usable connection index for node i's extra seeds when its first seed
 * is down (reconnect backoff) and the slot's owner is not known. */
static size_t other_seed(redlock_client *cl, size_t i, int64_t now)
{
    const rl_endpoint *ep = &cl->nodes[i].ep;
    for (size_t k = 0; k < ep->nseeds; k++) {
        size_t j = conn_for(cl, i, ep->seed_hosts[k], strlen(ep->seed_hosts[k]), ep->seed_ports[k]);
        if (j != SIZE_MAX && rl_nodeat(cl, j)->retry_after_us <= now)
            return j;
    }
    return i;
}

/* Another member of node i's cluster than j that is not in reconnect
 * backoff, or j if none. */
static size_t live_member(redlock_client *cl, size_t i, size_t j, int64_t now)
{
    if (i != j && cl->nodes[i].retry_after_us <= now)
        return i;
    size_t k = other_seed(cl, i, now);
    if (k != i && k != j)
        return k;
    for (size_t p = 0; cl->route && p < cl->route->nphys; p++)
        if (cl->route->phys[p].of == i && cl->n + p != j && cl->route->phys[p].retry_after_us <= now)
            return cl->n + p;
    return j;
}

size_t rl_route_pick(redlock_client *cl, size_t i, const char *key, size_t len, int64_t now)
{
    rl_map *m = map_of(cl, i);
    if (!m)
        return i;
    uint16_t o = m->owner[rl_keyslot(key, len)];
    size_t j = o && (size_t)(o - 1) < rl_nconns(cl) ? (size_t)(o - 1) : i;
    if (rl_nodeat(cl, j)->retry_after_us > now) {
        /* The owner cannot be reached: a failover may have moved its slots.
         * Another member answers MOVED to the new master (or to the dead
         * one, until the failover: the node fails for those slots), and
         * the map is asked for again. */
        m->stale = 1;
        j = live_member(cl, i, j, now);
    }
    return j;
}

int rl_route_refresh_due(redlock_client *cl, size_t i, int64_t now)
{
    rl_map *m = map_of(cl, i);
    if (!m)
        return 0;
    int due = m->stale || !m->learned_us ? now - m->asked_us >= RL_MAP_RETRY_US
                                         : now - m->asked_us >= RL_MAP_REFRESH_US;
    if (due)
        m->asked_us = now;
    return due;
}

/* "host:port" (IPv6: the last ':' splits) into host and port; 0 or -1. */
static int host_port(const char *s, size_t n, const char **host, size_t *hlen, int *port)
{
    const char *colon = NULL;
    for (size_t k = 0; k < n; k++)
        if (s[k] == ':')
            colon = s + k;
    if (!colon)
        return -1;
    long p = 0;
    const char *d = colon + 1;
    if (d == s + n)
        return -1;
    for (; d < s + n; d++) {
        if (*d < '0' || *d > '9' || (p = p * 10 + (*d - '0')) > 65535)
            return -1;
    }
    if (p == 0)
        return -1;
    *host = s;
    *hlen = (size_t)(colon - s);
    *port = (int)p;
    return 0;
}

int rl_route_redirect(redlock_client *cl, size_t j, const redisReply *rep, size_t *to, int *ask)
{
    if (rep->type != REDIS_REPLY_ERROR)
        return 0;
    int moved = strncmp(rep->str, "MOVED ", 6) == 0;
    *ask = strncmp(rep->str, "ASK ", 4) == 0;
    if (!moved && !*ask)
        return 0;
    size_t i = rl_logical(cl, j);
    char *end = NULL;
    const char *s = rep->str + (moved ? 6 : 4);
    unsigned long slot = strtoul(s, &end, 10);
    if (end == s || *end != ' ' || slot >= RL_SLOTS)
        return 0;
    const char *addr = end + 1, *host;
    size_t alen = strcspn(addr, " \r\n"), hlen;
    int port;
    if (host_port(addr, alen, &host, &hlen, &port) != 0)
        return 0;
    if (hlen == 0) {
        /* "MOVED 42 :7001": the same host as the connection that said it */
        host = rl_nodeat(cl, j)->ep.host;
        hlen = strlen(host);
    }
    size_t k = conn_for(cl, i, host, hlen, port);
    if (k == SIZE_MAX)
        return 0;
    if (moved) {
        rl_map *m = map_of(cl, i);
        if (m) {
            m->owner[slot] = (uint16_t)(k + 1);
            m->stale = 1;
        }
    }
    *to = k;
    return 1;
}

void rl_route_map_reply(redlock_client *cl, size_t j, const redisReply *rep, int64_t now)
{
    size_t i = rl_logical(cl, j);
    rl_map *m = map_of(cl, i);
    if (!m || (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_VERB))
        return;   /* an error (cluster support disabled, ACL): keep what is known */
    uint16_t *owner = calloc(RL_SLOTS, sizeof *owner);
    if (!owner)
        return;
    /* <id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>... */
    const char *p = rep->str, *end = rep->str + rep->len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *f[9 + 1];
        size_t fl[9 + 1], nf = 0;
        const char *q = p;
        while (q < eol && nf < 8) {
            while (q < eol && (*q == ' ' || *q == '\r'))
                q++;
            const char *w = q;
            while (q < eol && *q != ' ' && *q != '\r')
                q++;
            if (q > w) {
                f[nf] = w;
                fl[nf++] = (size_t)(q - w);
            }
        }
        if (nf == 8) {
            int master = 0, failed = 0;
            for (const char *x = f[2]; x < f[2] + fl[2];) {
                size_t n = strcspn(x, ",");
                if (n > (size_t)(f[2] + fl[2] - x))
                    n = (size_t)(f[2] + fl[2] - x);
                if (n == 6 && !memcmp(x, "master", 6))
                    master = 1;
                if ((n == 4 && !memcmp(x, "fail", 4)) || (n == 6 && !memcmp(x, "noaddr", 6)) ||
                    (n == 9 && !memcmp(x, "handshake", 9)))
                    failed = 1;
                x += n + 1;
            }
            /* ip:port@cport[,hostname[,aux=value...]] (Redis 7+, Valkey): the
             * hostname when one is announced, "" when not */
            const char *at = memchr(f[1], '@', fl[1]);
            size_t alen = at ? (size_t)(at - f[1]) : fl[1];
            const char *name = NULL;
            size_t nlen = 0;
            if (at) {
                const char *comma = memchr(at, ',', (size_t)(f[1] + fl[1] - at));
                if (comma) {
                    name = comma + 1;
                    const char *stop = memchr(name, ',', (size_t)(f[1] + fl[1] - name));
                    nlen = (size_t)((stop ? stop : f[1] + fl[1]) - name);
                }
            }
            const char *host;
            size_t hlen;
            int port;
            size_t k = SIZE_MAX;
            if (master && !failed && host_port(f[1], alen, &host, &hlen, &port) == 0) {
                if (hlen == 0) {
                    host = rl_nodeat(cl, j)->ep.host;   /* "myself" before it knows its own address */
                    hlen = strlen(host);
                }
                k = nlen > 0 && nlen < 256 && !memchr(name, ':', nlen)
                        ? conn_for_named(cl, i, name, nlen, host, hlen, port)
                        : conn_for(cl, i, host, hlen, port);
            }
            /* the slot ranges: "0-5460", "5461", and "[...]" for a migration under way */
            while (k != SIZE_MAX && q < eol) {
                while (q < eol && (*q == ' ' || *q == '\r'))
                    q++;
                const char *w = q;
                while (q < eol && *q != ' ' && *q != '\r')
                    q++;
                if (w == q || *w == '[')
                    continue;
                char *e1 = NULL;
                unsigned long lo = strtoul(w, &e1, 10), hi = lo;
                if (e1 < q && *e1 == '-')
                    hi = strtoul(e1 + 1, NULL, 10);
                for (unsigned long s = lo; s <= hi && s < RL_SLOTS; s++)
                    owner[s] = (uint16_t)(k + 1);
            }
        }
        p = eol + 1;
    }
    memcpy(m->owner, owner, sizeof m->owner);
    free(owner);
    m->stale = 0;
    m->learned_us = now;
}

size_t rl_route_shard_slots(redlock_client *cl, size_t i, unsigned *slots, size_t max)
{
    rl_map *m = cl->route ? cl->route->map[i] : NULL;
    if (!m || !m->learned_us)
        return 0;
    size_t n = 0;
    uint16_t seen[RL_SHARDS_MAX + 1];
    size_t nseen = 0;
    for (unsigned s = 0; s < RL_SLOTS && n < max; s++) {
        uint16_t o = m->owner[s];
        if (!o)
            continue;
        size_t k = 0;
        while (k < nseen && seen[k] != o)
            k++;
        if (k < nseen)
            continue;
        if (nseen < sizeof seen / sizeof seen[0])
            seen[nseen++] = o;
        slots[n++] = s;
    }
    return n;
}

void rl_route_shard_name(redlock_client *cl, size_t j, char *out, size_t size)
{
    const rl_node *n = rl_nodeat(cl, j);
    rl_fmt(out, size, strchr(n->ep.host, ':') ? "[%s]:%d" : "%s:%d", n->ep.host, n->ep.port);
}

void rl_route_free(redlock_client *cl)
{
    struct rl_route *rt = cl->route;
    if (!rt)
        return;
    for (size_t k = 0; k < rt->nphys; k++) {
        rl_endpoint_clear(&rt->phys[k].ep);
        free(rt->phys[k].alias);
    }
    for (size_t i = 0; i < REDLOCK_MAX_NODES; i++)
        free(rt->map[i]);
    free(rt);
    cl->route = NULL;
}
