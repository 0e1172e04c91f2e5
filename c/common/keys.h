/* SPDX-License-Identifier: BSD-3-Clause */
/* keys.h: the names of the keys the library keeps beside a lock's key K
 * (the client's prefix + the resource), in one place. The core names them
 * from here, the Lua scripts get them from the core (KEYS) or from these
 * macros, and `redlock status` reads them from here, so that the tool can
 * never look for a key the library does not write. Not part of the ABI:
 * docs/algorithm.md and docs/cluster.md describe the layout for operators. */
#ifndef REDLOCK_KEYS_H
#define REDLOCK_KEYS_H

#define RL_KEY_FENCING   ":fencing" /* K:fencing, the fencing token counter (no TTL) */
#define RL_KEY_QUEUE     ":wq"      /* K:wq, the waiters' queue of wake-up and fair mode (sorted set) */
#define RL_KEY_LISTENERS ":wl"      /* K:wl, the queued waiters' clients and channels (hash) */
#define RL_KEY_READERS   ":rd"      /* K:rd, the readers' leases of a read-write lock (sorted set) */
#define RL_KEY_INTENT    ":wi"      /* K:wi, a waiting writer's intent: new readers wait for it */
#define RL_KEY_LEADER    ":leader"  /* K:leader, an election's record: term, revision, value */
#define RL_KEY_OBSERVERS ":obs"     /* K:obs, an election's observers (channels to tell) */
#define RL_KEY_SEM_SEP   ":"        /* a semaphore's keys: K:limit and one K:s<i> per slot */
#define RL_KEY_SEM_LIMIT "limit"
#define RL_KEY_SEM_SLOT  "s"
/* Beside every lock, one pair per node and prefix P (c/src/epoch.c, the
 * quarantine): P{redlock:epoch}, the marker that goes with the node's data
 * (no TTL), and P{redlock:epoch}:q, the node's quarantine (PX: how long it
 * stays out of the vote; value: when that ends, in the node's ms, and why). */
#define RL_KEY_EPOCH      "{redlock:epoch}"
#define RL_KEY_QUARANTINE ":q"
/* On a store protected by fencing (c/src/fence.c), not on the lock nodes: a
 * resource R's fence, {R}:fence (R:fence when R has a hash tag), holding the
 * highest token a write to R carried. */
#define RL_KEY_STORE_FENCE ":fence"
/* The value K holds while readers hold a read-write lock: RL_RW_MARK alone
 * (shared by several readers, whose leases are in K:rd), or RL_RW_MARK ':'
 * the value of a lone reader. */
#define RL_RW_MARK       "readers"

#endif
