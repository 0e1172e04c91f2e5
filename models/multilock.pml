/* SPDX-License-Identifier: BSD-3-Clause */
/* multilock.pml: the multi-resource lock (docs/algorithm.md "Multi-resource
 * locks"; multilock.c, multilock_scripts.c), checked exhaustively by spin at
 * a small scope (docs/testing.md "Models").
 *
 * N = 3 nodes each keep the keys of M = 2 resources, a and b. Client 0 asks
 * for the set {a, b}, client 1 names the same set as {b, a}, and with C = 3
 * client 2 is a mutex on b alone (the mutex's SET NX is the set script on
 * a set of one). Each makes up to A attempts, each with a fresh value
 * (attempt.c). An attempt runs rl_script_multi_acquire on every node: where
 * every key of the set is free it sets them all to the value, else it sets
 * none; the round is decided at a quorum of N/2 + 1 as rl_decide_acquire
 * decides, and a failed round is cleaned up (rl_script_multi_release:
 * delete each key that still holds the value) on every node that did not
 * refuse, before the client waits. The keys go to the script in canonical
 * order (multilock.c sorts the names), so both callers send the same script:
 * on a node, the grant is one atomic all-or-none step whatever the
 * caller's order. A holder releases its set.
 *
 * The wait between attempts is a blocking guard: a refused client sleeps
 * until its set is free on a quorum of nodes (a wake-up or a poll that comes
 * when an attempt could succeed), then tries again. Requests may wait in
 * their connection's FIFO queue (at most DELAYS of them) and a client gives
 * up waiting for replies at any moment, as in mutex.pml.
 *
 * Properties: mutual exclusion per resource (assertion: no two clients hold
 * a resource at once), and no deadlock: every state where nothing can move
 * has every client finished (spin's invalid end states; a client blocked in
 * its wait is not at a valid end).
 *
 * Left out: time, expiry and validity (holders are taken to be live and
 * auto-extended, so a key held stays held until released: a wait can only
 * end by a release; the validity and drift of each key are the mutex
 * model's), lost messages and replies, the wait queue's registrations and
 * wake-up messages (the guard stands for them and the poll), fencing, and
 * progress (a livelock of retries is not looked for).
 *
 * Assumption removed, an expected counterexample (models/check):
 *   -DONE_BY_ONE  each client takes its resources one at a time, in the
 *                 order it names them, each a Redlock round of its own,
 *                 waiting for the next while it holds the ones before (the
 *                 lock-by-lock way the set script replaces): client 0 holds
 *                 a and waits for b, client 1 holds b and waits for a, an
 *                 invalid end state. With -DSORTED as well (one by one, but
 *                 in the canonical order) there is again no deadlock. */

#define N 3
#define M 2
#ifndef C
#define C 2
#endif
#ifndef A
#define A 2
#endif
#ifndef QCAP
#define QCAP 3
#endif
#ifndef DELAYS
#define DELAYS 0
#endif
#define Q (N / 2 + 1)

mtype = { MACQ, MREL };

/* key[i * M + r]: the value resource r's key holds on node i, or 0. */
byte key[N * M];
byte delays;

/* One connection per (client, node): op, value, set (bit r: resource r),
 * the client's operation number. */
chan q[C * N] = [QCAP] of { mtype, byte, byte, byte };
byte opn[C];
byte rep[C * N];

/* held[c]: the resources client c holds (bit r). */
byte held[C];

inline excl_check(c) {
    for (dd : 0 .. C - 1) {
        assert(dd == c || (held[dd] & held[c]) == 0)
    }
    dd = 0
}

/* Every key of set s free on node i */
#define FREEON(i, s) ((((s) & 1) == 0 || key[(i) * M] == 0) && (((s) & 2) == 0 || key[(i) * M + 1] == 0))
#define FREEQ(s) (FREEON(0, s) + FREEON(1, s) + FREEON(2, s) >= Q)

inline exec(k, op, v, s, id) {
    x_i = (k) % N;
    x_c = (k) / N;
    if
    :: op == MACQ ->
       /* rl_script_multi_acquire: all of the set's keys, or none */
       if
       :: FREEON(x_i, s) ->
          for (x_r : 0 .. M - 1) { if :: ((s) >> x_r) & 1 -> key[x_i * M + x_r] = v :: else fi }
          x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == MREL ->
       /* rl_script_multi_release: each key that still holds the value */
       x_yes = 2;
       for (x_r : 0 .. M - 1) {
           if :: (((s) >> x_r) & 1) && key[x_i * M + x_r] == v -> key[x_i * M + x_r] = 0; x_yes = 1 :: else fi
       }
    fi;
    if
    :: id == opn[x_c] -> rep[k] = x_yes
    :: else
    fi;
    x_i = 0; x_c = 0; x_yes = 0; x_r = 0
}

#define CAN(k) nempty(q[k])

inline deliver(k) {
    q[k] ? x_op, x_v, x_s, x_id;
    exec(k, x_op, x_v, x_s, x_id);
    x_op = 0; x_v = 0; x_s = 0; x_id = 0
}

active proctype Net() {
    mtype x_op;
    byte x_v, x_s, x_id, x_i, x_c, x_yes, x_r;
end:
    do
    :: atomic { CAN(0) -> deliver(0) }
    :: atomic { CAN(1) -> deliver(1) }
    :: atomic { CAN(2) -> deliver(2) }
    :: atomic { CAN(3) -> deliver(3) }
    :: atomic { CAN(4) -> deliver(4) }
    :: atomic { CAN(5) -> deliver(5) }
#if C > 2
    :: atomic { CAN(6) -> deliver(6) }
    :: atomic { CAN(7) -> deliver(7) }
    :: atomic { CAN(8) -> deliver(8) }
#endif
    od
}

/* Every node not in mask gets op: at once, or queued behind an older
 * request, or delayed (at most DELAYS). */
inline send(c, op, v, s, mask) {
    opn[c]++;
    for (i : 0 .. N - 1) {
        rep[c * N + i] = 0
    }
    for (i : 0 .. N - 1) {
        if
        :: ((mask >> i) & 1) == 0 ->
           if
           :: len(q[c * N + i]) == 0 -> exec(c * N + i, op, v, s, opn[c])
           :: len(q[c * N + i]) > 0 -> q[c * N + i] ! op, v, s, opn[c]
           :: len(q[c * N + i]) == 0 && delays < DELAYS -> delays++; q[c * N + i] ! op, v, s, opn[c]
           fi
        :: else
        fi
    }
    i = 0
}

#define YES(c) ((rep[(c) * N] == 1) + (rep[(c) * N + 1] == 1) + (rep[(c) * N + 2] == 1))

inline await(c) {
    do
    :: YES(c) >= Q -> break
    :: break
    od
}

inline tally(c) {
    yes = 0;
    refused = 0;
    for (i : 0 .. N - 1) {
        if
        :: rep[c * N + i] == 1 -> yes++
        :: rep[c * N + i] == 2 -> refused = refused | (1 << i)
        :: else
        fi
    }
    i = 0
}

/* One lock (a set s, all at once) taken with up to A attempts: got is 1 if
 * held. Between attempts the client sleeps until s is free on a quorum. */
inline take(c, set) {
    got = 0;
    s = set;
    for (a : 0 .. A - 1) {
        v = c * 2 * A + n * A + a + 1;
        atomic { send(c, MACQ, v, s, 0) };
        await(c);
        atomic {
            tally(c);
            if
            :: yes >= Q -> held[c] = held[c] | s; excl_check(c); got = 1; hv[n] = v
            :: else -> send(c, MREL, v, s, refused)
            fi
        };
        if
        :: got -> break
        :: else -> if :: a < A - 1 -> FREEQ(s) :: else fi   /* the wait */
        fi
    }
    a = 0
}

proctype Client(byte c) {
    byte i, dd, yes, refused, a, v, got, n, s1, s2, s;
    byte hv[2];     /* the value that holds s1 (or the set), and s2 */
    byte x_i, x_c, x_yes, x_r;
    /* the set and the caller's order: 0 {a, b}, 1 {b, a}, 2 the mutex on b */
    if
    :: c == 0 -> s1 = 1; s2 = 2
    :: c == 1 -> s1 = 2; s2 = 1
    :: c == 2 -> s1 = 2; s2 = 0
    fi;
#ifdef ONE_BY_ONE
#ifdef SORTED
    if :: s2 != 0 && s1 > s2 -> s1 = s1 ^ s2; s2 = s1 ^ s2; s1 = s1 ^ s2 :: else fi;
#endif
    /* one resource at a time, in order, holding the ones before */
    n = 0; take(c, s1);
    if
    :: got && s2 != 0 -> n = 1; take(c, s2)
    :: else
    fi;
#else
    /* the whole set in one script per node (keys in canonical order) */
    n = 0; take(c, s1 | s2);
#endif
    /* a holder of all it asked for uses it, then releases; one that gave up
     * releases what it holds */
#ifdef ONE_BY_ONE
    if :: hv[1] != 0 -> atomic { held[c] = held[c] & ~s2; send(c, MREL, hv[1], s2, 0) } :: else fi;
    if :: hv[0] != 0 -> atomic { held[c] = 0; send(c, MREL, hv[0], s1, 0) } :: else fi
#else
    if :: hv[0] != 0 -> atomic { held[c] = 0; s = s1 | s2; send(c, MREL, hv[0], s, 0) } :: else fi
#endif
}

init {
    byte k;
    atomic {
        for (k : 0 .. C - 1) { run Client(k) }
        k = 0
    }
}
