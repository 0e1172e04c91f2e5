/* SPDX-License-Identifier: BSD-3-Clause */
/* lib_private.h: the few internals of libredlock that the tool uses, so that
 * doctor and status probe the nodes with what the library really runs (its
 * scripts, its cluster routing) instead of copies that drift. The one place
 * where they are declared. The tool links the static library (redlock_static, see
 * CMakeLists.txt here), in which these symbols are visible; they are not
 * part of the ABI, and the shared library does not export them. They are
 * declared here rather than by including c/src/internal.h, so that the tool
 * depends on exactly these. */
#ifndef REDLOCK_CLI_LIB_PRIVATE_H
#define REDLOCK_CLI_LIB_PRIVATE_H

#include <stddef.h>

#include <hiredis/hiredis.h>  /* redisReply (a macro on some hiredis builds: no forward declaration) */

/* c/src/scripts.c. The release script: KEYS K, K:wq, K:wl; ARGV value,
 * wake ('0': wake nobody), the caller's waiter registration ('' if none).
 * The extension script: KEYS K; ARGV value, TTL in ms. */
extern const char rl_script_release[];
extern const char rl_script_extend[];

/* c/src/util.c: 2 * nbytes hex digits of getrandom(2) and a NUL into out;
 * 0, or -1 if nbytes > 64 or getrandom failed. */
int rl_random_hex(char *out, size_t nbytes);

/* c/src/engine/route.c: the library's own routing of a redis-cluster://
 * node, so that status follows a redirect exactly as a lock client does.
 * A connection index j of a client is its node (below the node count) or
 * one of that node's shard connections; the rl_node that rl_nodeat returns
 * begins with the connection's rl_endpoint (c/src/internal.h).
 * rl_route_seed: the connection index of node i's seed k (0: the first, i
 * itself), or SIZE_MAX past the last. rl_route_redirect: 1 if rep, read on
 * connection j, is a MOVED or ASK redirect, with the connection to follow
 * it on in *to (made if new) and *ask set for ASK. */
/* c/src/engine/slotmap.c and c/src/cluster.c: a key's cluster slot, and the
 * tag of the quarantine's marker of a slot (c/src/epoch.c): on a set of nodes
 * with a cluster node the marker is <prefix>{TAG}, one per slot, on every
 * node. rl_cluster_slot_tag: the tag's length, or -1. */
unsigned rl_keyslot(const char *key, size_t len);
int rl_cluster_slot_tag(unsigned slot, char *out, size_t size);

struct redlock_client;
struct rl_node;
struct rl_node *rl_nodeat(const struct redlock_client *cl, size_t j);
size_t rl_route_seed(struct redlock_client *cl, size_t i, size_t k);
int rl_route_redirect(struct redlock_client *cl, size_t j, const redisReply *rep, size_t *to, int *ask);

/* c/src/engine/slotmap.c: where Redis Cluster puts a key. rl_key_tag: 1 if
 * key has a hash tag ({...} with something inside), its offset and length.
 * rl_keyslot: the key's cluster slot, 0..16383. */
int rl_key_tag(const char *key, size_t len, size_t *start, size_t *tlen);
unsigned rl_keyslot(const char *key, size_t len);

#endif
