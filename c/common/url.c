/* SPDX-License-Identifier: BSD-3-Clause */
/* url.c: parses node URLs (redis://, rediss://, unix://, redis-cluster://) and decides whether two
 * endpoints are the same server, which would corrupt the quorum count. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>

#include "rlcommon.h"

#define URL_MAX 4096

static char *dup_range(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes [s, s+n) into a new string. NULL with *bad set on a bad
 * escape or an escaped NUL; NULL with *bad clear when out of memory. */
static char *decode(const char *s, size_t n, int *bad)
{
    char *out = malloc(n + 1), *o = out;
    *bad = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            *o++ = s[i];
            continue;
        }
        int hi = i + 1 < n ? hexval((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            *bad = 1;
            free(out);
            return NULL;
        }
        *o++ = (char)(hi * 16 + lo);
        i += 2;
    }
    *o = '\0';
    return out;
}

static int parse_uint(const char *s, size_t n, long max, long *out)
{
    long v = 0;
    if (n == 0 || n > 10)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max)
        return -2;
    *out = v;
    return 0;
}

void rl_endpoint_clear(rl_endpoint *ep)
{
    if (!ep)
        return;
    free(ep->host);
    free(ep->path);
    free(ep->user);
    if (ep->password) {
        /* Don't leave the secret in freed heap memory. */
        volatile char *p = ep->password;
        while (*p)
            *p++ = 0;
        free(ep->password);
    }
    free(ep->display);
    for (size_t i = 0; i < ep->nseeds; i++)
        free(ep->seed_hosts[i]);
    free(ep->seed_hosts);
    free(ep->seed_ports);
    memset(ep, 0, sizeof *ep);
}

static int fail(rl_endpoint *ep, int code, char *err, size_t errsize, const char *why)
{
    rl_endpoint_clear(ep);
    rl_fmt(err, errsize, "%s", why);
    return code;
}

/* userinfo is "user:password", ":password" or "password-less user". */
static int parse_userinfo(rl_endpoint *ep, const char *s, size_t n, char *err, size_t errsize)
{
    const char *colon = memchr(s, ':', n);
    int bad = 0;
    if (!colon)
        return fail(ep, REDLOCK_EINVAL, err, errsize,
                    "user name without a password (use user:password@ or :password@)");
    if (colon > s) {
        ep->user = decode(s, (size_t)(colon - s), &bad);
        if (!ep->user)
            return fail(ep, bad ? REDLOCK_EINVAL : REDLOCK_ENOMEM, err, errsize,
                        bad ? "bad percent-escape in user name" : "out of memory");
    }
    size_t plen = n - (size_t)(colon + 1 - s);
    if (plen == 0)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "empty password");
    ep->password = decode(colon + 1, plen, &bad);
    if (!ep->password)
        return fail(ep, bad ? REDLOCK_EINVAL : REDLOCK_ENOMEM, err, errsize,
                    bad ? "bad percent-escape in password" : "out of memory");
    return 0;
}

static int make_display(rl_endpoint *ep, const char *scheme)
{
    char buf[URL_MAX + 64];
    char auth[300] = "";
    if (ep->password)
        rl_fmt(auth, sizeof auth, "%.200s:***@", ep->user ? ep->user : "");
    if (ep->path)
        rl_fmt(buf, sizeof buf, "unix://%s%s", auth, ep->path);
    else if (strchr(ep->host, ':'))
        rl_fmt(buf, sizeof buf, "%s://%s[%s]:%d", scheme, auth, ep->host, ep->port);
    else
        rl_fmt(buf, sizeof buf, "%s://%s%s:%d", scheme, auth, ep->host, ep->port);
    if (ep->db)
        rl_append(buf, sizeof buf, ep->path ? "?db=%d" : "/%d", ep->db);
    for (size_t i = 0; i < ep->nseeds; i++)
        rl_append(buf, sizeof buf, strchr(ep->seed_hosts[i], ':') ? "%sseed=[%s]:%d" : "%sseed=%s:%d",
                  i ? "&" : "?", ep->seed_hosts[i], ep->seed_ports[i]);
    ep->display = strdup(buf);
    return ep->display ? 0 : -1;
}

static int parse_unix(rl_endpoint *ep, const char *rest, char *err, size_t errsize)
{
    /* unix://[user:password@]/path[?db=N] */
    const char *slash = strchr(rest, '/');
    if (!slash)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "unix URL needs an absolute socket path (unix:///path)");
    if (slash > rest) {
        const char *at = slash - 1;
        if (*at != '@')
            return fail(ep, REDLOCK_EINVAL, err, errsize, "unix URL: expected unix:///path or unix://:password@/path");
        int rc = parse_userinfo(ep, rest, (size_t)(at - rest), err, errsize);
        if (rc)
            return rc;
    }
    const char *q = strchr(slash, '?');
    size_t plen = q ? (size_t)(q - slash) : strlen(slash);
    if (plen <= 1)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "empty unix socket path");
    if (plen >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return fail(ep, REDLOCK_EINVAL, err, errsize, "unix socket path too long");
    ep->path = dup_range(slash, plen);
    if (!ep->path)
        return fail(ep, REDLOCK_ENOMEM, err, errsize, "out of memory");
    if (q) {
        long db;
        if (strncmp(q, "?db=", 4) != 0)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "unix URL: the only query parameter is db=N");
        int rc = parse_uint(q + 4, strlen(q + 4), 65535, &db);
        if (rc)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "database number is not a number in 0..65535");
        ep->db = (int)db;
    }
    return 0;
}

static int parse_tcp(rl_endpoint *ep, const char *rest, char *err, size_t errsize)
{
    /* [user[:password]@]host[:port][/db] ; the db never holds '@', so the
     * last '@' ends the userinfo even when the password contains '/'. */
    const char *at = strrchr(rest, '@');
    const char *h = rest;
    if (at) {
        int rc = parse_userinfo(ep, rest, (size_t)(at - rest), err, errsize);
        if (rc)
            return rc;
        h = at + 1;
    }
    const char *hend, *p;
    if (*h == '[') {
        hend = strchr(h, ']');
        if (!hend)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "unterminated [IPv6] address");
        ep->host = dup_range(h + 1, (size_t)(hend - h - 1));
        p = hend + 1;
        if (*p && *p != ':' && *p != '/')
            return fail(ep, REDLOCK_EINVAL, err, errsize, "unexpected text after ]");
    } else {
        hend = h + strcspn(h, ":/?#");
        ep->host = dup_range(h, (size_t)(hend - h));
        p = hend;
    }
    if (!ep->host)
        return fail(ep, REDLOCK_ENOMEM, err, errsize, "out of memory");
    if (ep->host[0] == '\0')
        return fail(ep, REDLOCK_EINVAL, err, errsize, "empty host name");
    for (const char *c = ep->host; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr(".-_:%", *c))
            return fail(ep, REDLOCK_EINVAL, err, errsize, "invalid character in host name");
    ep->port = 6379;
    if (*p == ':') {
        const char *ps = p + 1;
        size_t pn = strcspn(ps, "/?#");
        long port;
        int rc = parse_uint(ps, pn, 65535, &port);
        if (rc == -1)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "port is not a number");
        if (rc == -2 || port == 0)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "port out of range 1..65535");
        ep->port = (int)port;
        p = ps + pn;
    }
    if (*p == '/') {
        p++;
        size_t dn = strcspn(p, "?#");
        long db = 0;
        if (dn > 0 && parse_uint(p, dn, 65535, &db) != 0)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "database number is not a number in 0..65535");
        ep->db = (int)db;
        p += dn;
    }
    if (*p)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "unexpected query or fragment in URL");
    return 0;
}

/* redis-cluster://[user:password@]host[:port][?seed=host:port&seed=...]:
 * a cluster as one node, named by seeds that are all members of it. Only
 * database 0 exists in a cluster. */
#define RL_CLUSTER_SEEDS_MAX 64
static int parse_cluster(rl_endpoint *ep, const char *rest, char *err, size_t errsize)
{
    const char *q = strchr(rest, '?');
    size_t mlen = q ? (size_t)(q - rest) : strlen(rest);
    if (memchr(rest, '#', mlen))
        return fail(ep, REDLOCK_EINVAL, err, errsize, "unexpected fragment in cluster URL");
    char *main_part = dup_range(rest, mlen);
    if (!main_part)
        return fail(ep, REDLOCK_ENOMEM, err, errsize, "out of memory");
    int rc = parse_tcp(ep, main_part, err, errsize);
    free(main_part);
    if (rc)
        return rc;
    ep->cluster = 1;
    if (ep->db != 0)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "a cluster has only database 0: no /db in a cluster URL");
    if (!q)
        return 0;
    const char *p = q + 1;
    if (!*p)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "empty query in cluster URL (expected seed=host:port)");
    while (*p) {
        size_t n = strcspn(p, "&");
        if (n < 5 || strncmp(p, "seed=", 5) != 0)
            return fail(ep, REDLOCK_EINVAL, err, errsize,
                        "cluster URL: the only query parameter is seed=host:port");
        if (n == 5)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "cluster URL: empty seed=");
        if (ep->nseeds >= RL_CLUSTER_SEEDS_MAX)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "cluster URL: too many seeds (at most 64)");
        const char *s = p + 5;
        size_t sn = n - 5;
        if (memchr(s, '@', sn) || memchr(s, '/', sn) || memchr(s, '?', sn) || memchr(s, '#', sn))
            return fail(ep, REDLOCK_EINVAL, err, errsize,
                        "cluster URL: a seed is host:port only (credentials go before the first host)");
        char *one = dup_range(s, sn);
        if (!one)
            return fail(ep, REDLOCK_ENOMEM, err, errsize, "out of memory");
        rl_endpoint seed;
        memset(&seed, 0, sizeof seed);
        char why[200];
        rc = parse_tcp(&seed, one, why, sizeof why);
        free(one);
        if (rc) {
            char msg[300];
            rl_fmt(msg, sizeof msg, "cluster URL: bad seed: %s", why);
            return fail(ep, rc, err, errsize, msg);
        }
        char **hosts = realloc(ep->seed_hosts, (ep->nseeds + 1) * sizeof *hosts);
        if (hosts)
            ep->seed_hosts = hosts;
        int *ports = hosts ? realloc(ep->seed_ports, (ep->nseeds + 1) * sizeof *ports) : NULL;
        if (ports)
            ep->seed_ports = ports;
        if (!hosts || !ports) {
            rl_endpoint_clear(&seed);
            return fail(ep, REDLOCK_ENOMEM, err, errsize, "out of memory");
        }
        ep->seed_hosts[ep->nseeds] = seed.host;
        ep->seed_ports[ep->nseeds++] = seed.port;
        seed.host = NULL;
        rl_endpoint_clear(&seed);
        p += n;
        if (*p == '&') {
            p++;
            if (!*p)
                return fail(ep, REDLOCK_EINVAL, err, errsize, "cluster URL: trailing '&'");
        }
    }
    return 0;
}

int rl_endpoint_parse(rl_endpoint *ep, const char *url, char *err, size_t errsize)
{
    memset(ep, 0, sizeof *ep);
    if (!url)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "URL is NULL");
    size_t len = strlen(url);
    if (len == 0)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "URL is empty");
    if (len > URL_MAX)
        return fail(ep, REDLOCK_EINVAL, err, errsize, "URL is too long");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)url[i] <= ' ' || url[i] == 127)
            return fail(ep, REDLOCK_EINVAL, err, errsize, "URL contains whitespace or control characters");

    int rc;
    const char *scheme;
    if (strncasecmp(url, "redis://", 8) == 0) {
        scheme = "redis";
        rc = parse_tcp(ep, url + 8, err, errsize);
    } else if (strncasecmp(url, "unix://", 7) == 0) {
        scheme = "unix";
        rc = parse_unix(ep, url + 7, err, errsize);
    } else if (strncasecmp(url, "rediss://", 9) == 0) {
        scheme = "rediss";
        ep->tls = 1;
        rc = parse_tcp(ep, url + 9, err, errsize);
    } else if (strncasecmp(url, "redis-cluster://", 16) == 0) {
        scheme = "redis-cluster";
        rc = parse_cluster(ep, url + 16, err, errsize);
    } else if (strncasecmp(url, "rediss-cluster://", 17) == 0) {
        scheme = "rediss-cluster";
        ep->tls = 1;
        rc = parse_cluster(ep, url + 17, err, errsize);
    } else {
        return fail(ep, REDLOCK_EINVAL, err, errsize,
                    "unknown scheme: expected redis://host[:port][/db], rediss://host[:port][/db], unix:///path, "
                    "redis-cluster://host:port[?seed=host:port&...] or rediss-cluster://");
    }
    if (rc)
        return rc;
    if (make_display(ep, scheme) != 0)
        return fail(ep, REDLOCK_ENOMEM, err, errsize, "out of memory");
    return 0;
}

static int same_addr(const struct addrinfo *a, const struct addrinfo *b)
{
    for (; a; a = a->ai_next)
        for (const struct addrinfo *y = b; y; y = y->ai_next) {
            if (a->ai_family != y->ai_family)
                continue;
            if (a->ai_family == AF_INET) {
                const struct sockaddr_in *p = (const void *)a->ai_addr, *q = (const void *)y->ai_addr;
                if (p->sin_port == q->sin_port && p->sin_addr.s_addr == q->sin_addr.s_addr)
                    return 1;
            } else if (a->ai_family == AF_INET6) {
                const struct sockaddr_in6 *p = (const void *)a->ai_addr, *q = (const void *)y->ai_addr;
                if (p->sin6_port == q->sin6_port &&
                    memcmp(&p->sin6_addr, &q->sin6_addr, sizeof p->sin6_addr) == 0)
                    return 1;
            }
        }
    return 0;
}

int rl_endpoint_same_server(const rl_endpoint *a, const rl_endpoint *b)
{
    if (a->path || b->path) {
        if (!a->path || !b->path)
            return 0;
        char ra[PATH_MAX], rb[PATH_MAX];
        const char *pa = realpath(a->path, ra) ? ra : a->path;
        const char *pb = realpath(b->path, rb) ? rb : b->path;
        return strcmp(pa, pb) == 0;
    }
    if (a->port != b->port)
        return 0;
    if (strcasecmp(a->host, b->host) == 0)
        return 1;
    struct addrinfo hints = { 0 }, *ra = NULL, *rb = NULL;
    char port[16];
    hints.ai_socktype = SOCK_STREAM;
    rl_fmt(port, sizeof port, "%d", a->port);
    int same = 0;
    if (getaddrinfo(a->host, port, &hints, &ra) == 0 && getaddrinfo(b->host, port, &hints, &rb) == 0)
        same = same_addr(ra, rb);
    if (ra)
        freeaddrinfo(ra);
    if (rb)
        freeaddrinfo(rb);
    return same;
}

/* 1 if [s, s+n) is what a URL shows after its userinfo and can be printed
 * as is: host[:port][/db] ([IPv6] allowed) or, for unix, /path[?db=N]. A
 * password cut off from its URL (no '@' after it: "redis://:hunter2", or a
 * list split at a comma inside it) never has this shape: an empty host, or
 * a character that no host, port or path shown here has. */
static int printable_tail(const char *s, size_t n, int unix_path)
{
    size_t i = 0;
    if (n == 0 || n > 200)
        return 0;
    if (unix_path) {
        if (s[0] != '/')
            return 0;
        while (i < n && (isalnum((unsigned char)s[i]) || strchr("/._-+~", s[i])))
            i++;
        if (i < n && n - i > 4 && !strncmp(s + i, "?db=", 4)) {
            for (i += 4; i < n && isdigit((unsigned char)s[i]); i++)
                ;
        }
        return i == n;
    }
    if (s[0] == '[') {
        for (i = 1; i < n && (isalnum((unsigned char)s[i]) || strchr(":.%", s[i])); i++)
            ;
        if (i == 1 || i >= n || s[i] != ']')
            return 0;
        i++;
    } else {
        while (i < n && (isalnum((unsigned char)s[i]) || strchr(".-_", s[i])))
            i++;
        if (i == 0)
            return 0;
    }
    if (i < n && s[i] == ':') {
        size_t d = ++i;
        while (i < n && isdigit((unsigned char)s[i]))
            i++;
        if (i == d)
            return 0;
    }
    if (i < n && s[i] == '/')
        for (i++; i < n && isdigit((unsigned char)s[i]); i++)
            ;
    /* a cluster URL's seeds: ?seed=host:port&seed=... */
    while (i < n && (s[i] == '?' || s[i] == '&') && n - i > 6 && !strncmp(s + i + 1, "seed=", 5)) {
        size_t d = i += 6;
        while (i < n && (isalnum((unsigned char)s[i]) || strchr(".-_:[]%", s[i])))
            i++;
        if (i == d)
            return 0;
    }
    return i == n;
}

void rl_mask_url(char *out, size_t size, const char *url)
{
    if (!out || size == 0)
        return;
    if (!url) {
        rl_fmt(out, size, "(null)");
        return;
    }
    /* Shows the scheme, and the host part only when it has a host's shape;
     * everything that may be userinfo, and anything malformed, is "***".
     * Nothing of a string without a scheme is shown: it may be a password
     * alone. */
    const char *sep = strstr(url, "://");
    size_t slen = sep ? (size_t)(sep - url) : 0;
    int scheme_ok = sep && slen > 0 && slen <= 16;
    for (size_t i = 0; scheme_ok && i < slen; i++)
        scheme_ok = isalpha((unsigned char)url[i]) != 0 || (url[i] == '-' && i > 0);
    if (!scheme_ok) {
        rl_fmt(out, size, "*** (not a URL; hidden, it may hold a password)");
        return;
    }
    const char *rest = sep + 3;
    const char *at = strrchr(rest, '@');
    const char *tail = at ? at + 1 : rest;
    int unix_path = slen == 4 && !strncasecmp(url, "unix", 4);
    if (printable_tail(tail, strlen(tail), unix_path))
        rl_fmt(out, size, "%.*s://%s%s", (int)slen, url, at ? "***@" : "", tail);
    else
        rl_fmt(out, size, "%.*s://%s***", (int)slen, url, at ? "***@" : "");
}
