/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.pml: the counting semaphore (docs/algorithm.md "Counting
 * semaphore"; semaphore.c, semaphore_scripts.c), checked exhaustively by
 * spin at a small scope (docs/testing.md "Models").
 *
 * L permits are L slots; N = 3 nodes each keep every slot as a key (the
 * value that holds it and when it expires). C = 3 clients each make one
 * attempt of up to SROUNDS rounds: the first proposes a slot chosen freely
 * (the library draws it at random); every node runs rl_script_sem_acquire's
 * rule atomically: grant (set the slot to the round's value with the TTL) if
 * the slot is free there, else refuse and name the slots free there. The
 * round is decided as rl_decide_acquire decides (a quorum of grants, and
 * validity left: TTL - elapsed - DRIFT from the round's start). A round
 * lost is cleaned up (a release by value wherever it did not refuse), and
 * the next round asks, under a new value, for a slot semaphore.c's choose
 * would pick: among the slots that a quorum of nodes named free (a granting
 * node counts for the slot it granted), one with the most such nodes (ties
 * either way, where the library draws at random). A holder releases
 * (rl_script_sem_release: delete the slot where it still holds the value).
 * Time, fast node clocks, lost and delayed requests, lost replies and a
 * paused node are as in mutex.pml. The start states are taken up to the
 * renaming of nodes, clients and (L = 2) slots (init).
 *
 * Scope (models/check, docs/testing.md "Models"): C = 3, L = 2 without
 * faults; C = 2, L = 1 (one slot: the rules' mutex) with 2 delayed
 * requests, 1 lost request or reply, or 1 node pause. C = 3, L = 2 with a
 * fault did not finish within 4 minutes (over 30 million states).
 *
 * Property (assertion): at most L clients hold a permit inside their
 * validity at once.
 *
 * The assumption removed, an expected counterexample (models/check):
 *   -DCOUNTER  each node counts its holders (an INCR up to L, a sorted set
 *              of holders in redis-semaphore's RedlockSemaphore) instead of
 *              keeping slots: three clients hold a semaphore of L = 2
 *              (C = 3 and 2 delayed requests; the short form without time
 *              and with one round, -DTMAX=0 -DSROUNDS=1). */

#define N 3
#ifndef C
#define C 3
#endif
#ifndef L
#define L 2
#endif
#ifndef SROUNDS
#define SROUNDS 2
#endif
#define TTL 3
#define DRIFT 1
#ifndef TMAX
#define TMAX 4
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef DELAYS
#define DELAYS 1
#endif
#ifndef QCAP
#define QCAP 2
#endif
#define Q (N / 2 + 1)

mtype = { ACQ, RELEASE };

/* The nodes: slot s of node i is key sval[i*L + s], gone at sexp[]. With
 * COUNTER, node i instead keeps its holders (by client) with their values. */
byte sval[N * L];
byte sexp[N * L];
#ifdef COUNTER
byte mval[N * C];
byte mexp[N * C];
#endif
byte fast[N];
byte paused;
byte pauses;
byte losses;
byte delays;
byte now;
byte running = C;

/* Request: op, value, operation number, slot. */
chan q[C * N] = [QCAP] of { mtype, byte, byte, byte };
byte opn[C];
byte rep[C * N];     /* 0 none yet, 1 granted, 2 refused */
byte fmask[C * N];   /* a refusal's free slots, one bit each */

bool held[C];
byte vuntil[C];

inline sem_check() {
    x_n = 0;
    for (x_d : 0 .. C - 1) {
        if :: held[x_d] && vuntil[x_d] > now -> x_n++ :: else fi
    }
    assert(x_n <= L);
    x_n = 0; x_d = 0
}

inline exec(k, op, v, id, slot) {
    x_i = (k) % N;
    x_c = (k) / N;
    x_m = 0;
    if
    :: op == ACQ ->
#ifdef COUNTER
       x_n = 0;
       for (x_d : 0 .. C - 1) { if :: mval[x_i * C + x_d] != 0 -> x_n++ :: else fi }
       if
       :: x_n < L -> mval[x_i * C + x_c] = v; mexp[x_i * C + x_c] = now + TTL - fast[x_i]; x_yes = 1
       :: else -> x_yes = 2
       fi;
       x_n = 0; x_d = 0
#else
       if
       :: sval[x_i * L + slot] == 0 -> sval[x_i * L + slot] = v; sexp[x_i * L + slot] = now + TTL - fast[x_i]; x_yes = 1
       :: else -> x_yes = 2;
          for (x_d : 0 .. L - 1) { if :: sval[x_i * L + x_d] == 0 -> x_m = x_m | (1 << x_d) :: else fi }
          x_d = 0
       fi
#endif
    :: op == RELEASE ->
#ifdef COUNTER
       if
       :: mval[x_i * C + x_c] == v -> mval[x_i * C + x_c] = 0; mexp[x_i * C + x_c] = 0; x_yes = 1
       :: else -> x_yes = 2
       fi
#else
       if
       :: sval[x_i * L + slot] == v -> sval[x_i * L + slot] = 0; sexp[x_i * L + slot] = 0; x_yes = 1
       :: else -> x_yes = 2
       fi
#endif
    fi;
    printf("MSC: node %d: %e from client %d (value %d): %d\n", x_i, op, x_c, v, x_yes);
    /* A reply counts if it answers the client's current round; no client
     * reads a release's reply, so none is recorded (nor lost). */
    if
    :: op == ACQ && id == opn[x_c] -> rep[k] = x_yes; fmask[k] = x_m
    :: op == ACQ && id == opn[x_c] && losses < LOSSES -> losses++    /* the reply is lost */
    :: else
    fi;
    x_i = 0; x_c = 0; x_yes = 0; x_m = 0
}

#define CAN(k) (nempty(q[k]) && paused != ((k) % N) + 1)
#define NOW(k) (len(q[k]) == 0 && paused != ((k) % N) + 1)

inline deliver(k) {
    q[k] ? x_op, x_v, x_id, x_arg;
    if
    :: exec(k, x_op, x_v, x_id, x_arg)
    :: losses < LOSSES -> losses++
    fi;
    x_op = 0; x_v = 0; x_id = 0; x_arg = 0
}

active proctype Net() {
    mtype x_op;
    byte x_v, x_id, x_arg, x_i, x_c, x_yes, x_m, x_n, x_d;
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

active proctype Time() {
    byte i;
end:
    do
    :: atomic {
           now < TMAX && running > 0 ->
           now++;
           for (i : 0 .. N * L - 1) {
               if :: sval[i] != 0 && sexp[i] <= now -> sval[i] = 0; sexp[i] = 0 :: else fi
           }
#ifdef COUNTER
           for (i : 0 .. N * C - 1) {
               if :: mval[i] != 0 && mexp[i] <= now -> mval[i] = 0; mexp[i] = 0 :: else fi
           }
#endif
           i = 0
       }
    od
}

active proctype Pause() {
end:
    do
    :: atomic { paused == 0 && pauses < PAUSES && running > 0 -> select (paused : 1 .. N); pauses++ }
    :: atomic { paused != 0 -> paused = 0 }
    od
}

inline send(c, op, v, slot, mask) {
    opn[c]++;
    for (i : 0 .. N - 1) { rep[c * N + i] = 0; fmask[c * N + i] = 0 }
    for (i : 0 .. N - 1) {
        if
        :: ((mask >> i) & 1) == 0 ->
           if
           :: NOW(c * N + i) -> exec(c * N + i, op, v, opn[c], slot)
           :: !NOW(c * N + i) -> q[c * N + i] ! op, v, opn[c], slot
           :: NOW(c * N + i) && delays < DELAYS -> delays++; q[c * N + i] ! op, v, opn[c], slot;
              printf("MSC: client %d's %e to node %d delayed\n", c, op, i)
           :: losses < LOSSES -> losses++
           fi
        :: else
        fi
    }
    i = 0
}

#define YES(c) ((rep[(c) * N] == 1) + (rep[(c) * N + 1] == 1) + (rep[(c) * N + 2] == 1))

/* Node i said slot s free in this round: it granted s, or named it. */
#define FREE(c, i, s) ((rep[(c) * N + (i)] == 1 && slot == (s)) || (rep[(c) * N + (i)] == 2 && ((fmask[(c) * N + (i)] >> (s)) & 1)))
#define CNT(c, s) (FREE(c, 0, s) + FREE(c, 1, s) + FREE(c, 2, s))

proctype Client(byte c; byte slot) {    /* slot: the proposal */
    byte r, i, yes, refused, t0, v, pick, best;
    byte x_i, x_c, x_yes, x_m, x_n, x_d;
    for (r : 0 .. SROUNDS - 1) {
        v = c * SROUNDS + r + 1;
        atomic { t0 = now; send(c, ACQ, v, slot, 0) };
        do
        :: YES(c) >= Q -> break
        :: break    /* the deadlines */
        od;
        atomic {
            yes = YES(c);
            refused = (rep[c * N] == 2) | ((rep[c * N + 1] == 2) << 1) | ((rep[c * N + 2] == 2) << 2);
            if
            :: yes >= Q && t0 + TTL - DRIFT > now ->
               held[c] = 1; vuntil[c] = t0 + TTL - DRIFT;
               printf("MSC: client %d holds at tick %d until %d\n", c, now, vuntil[c]);
               sem_check();
               for (i : 0 .. N - 1) { rep[c * N + i] = 0; fmask[c * N + i] = 0 }
               i = 0; yes = 0; refused = 0; t0 = 0;
               goto hold
            :: else
            fi;
            /* choose: a slot free on a quorum, one with the most such nodes */
            best = 0;
            for (i : 0 .. L - 1) { if :: CNT(c, i) > best -> best = CNT(c, i) :: else fi }
            i = 0;
            pick = slot;
            if
            :: best >= Q ->
               if
               :: CNT(c, 0) == best -> pick = 0
               :: CNT(c, 1) == best -> pick = 1
#if L > 2
               :: CNT(c, 2) == best -> pick = 2
#endif
               fi
            :: else
            fi;
            send(c, RELEASE, v, slot, refused);     /* the clean-up of the round lost */
            /* what the next round no longer needs is forgotten (fewer states) */
            for (i : 0 .. N - 1) { rep[c * N + i] = 0; fmask[c * N + i] = 0 }
            i = 0; yes = 0; refused = 0; t0 = 0;
            if
            :: best < Q -> best = 0; pick = 0; goto done
            :: else -> slot = pick; best = 0; pick = 0
            fi
        }
    }
    goto done;
hold:
    /* the permit is used for a while (time passes), then released */
    atomic { held[c] = 0; vuntil[c] = 0; send(c, RELEASE, v, slot, 0) };
done:
    atomic { running--; r = 0; v = 0; slot = 0 }
}

/* The model is symmetric in its nodes (each client asks all of them at
 * once; delays, losses and pauses may strike any), in its clients (they
 * differ only in their values) and, at L = 2, in its slots (a proposal is
 * free, choose breaks ties either way). So the start states are taken up to
 * renaming (fewer states, the same behaviours up to renaming): the first k
 * nodes run fast, any k; at L = 2 every client but the last proposes slot
 * 0 and the last either slot (all proposals alike, or one apart). */
init {
    byte k, x_k;
    atomic {
        select (k : 0 .. N);
        for (x_k : 0 .. N - 1) { if :: x_k < k -> fast[x_k] = DRIFT :: else -> fast[x_k] = 0 fi }
#if L == 2
        for (x_k : 0 .. C - 2) { run Client(x_k, 0) }
        if :: run Client(C - 1, 0) :: run Client(C - 1, 1) fi;
#else
        for (x_k : 0 .. C - 1) { select (k : 0 .. L - 1); run Client(x_k, k) }
#endif
        k = 0; x_k = 0
    }
}
