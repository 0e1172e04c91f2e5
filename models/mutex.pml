/* SPDX-License-Identifier: BSD-3-Clause */
/* mutex.pml: the Redlock mutex with its fencing token, as the library runs it
 * (docs/algorithm.md "Acquire", "Extend", "Release"; docs/fencing.md), checked
 * exhaustively by spin at a small scope (docs/testing.md "Models").
 *
 * N = 3 nodes, each one lock key (the value that holds it and when it
 * expires) and a fencing counter. C clients each do R rounds of: acquire
 * (SET NX PX on every node, which reads the counter where it sets the key:
 * rl_script_acquire in mode 'c'), the decision of decide.c's
 * rl_decide_acquire, the token committed (attempt.c's commit_token:
 * T = 1 + the largest counter of the granting nodes, rl_script_fence_commit
 * on every node that did not refuse, rl_decide_extend on the answers), one
 * write to a resource that keeps the highest token it accepted, an extend
 * (rl_script_extend, rl_decide_extend) and a release (rl_script_release,
 * compare-and-delete). A failed attempt sends its clean-up release to every
 * node that did not refuse.
 *
 * Time is one global tick, now. Every node expires a key on its own clock,
 * which may run fast: a key set or extended at tick t with a TTL of TTL ticks
 * is gone at t + TTL - fast[i], each node's rate chosen at the start in
 * 0 or DRIFT (every combination is explored). A client
 * measures on the global tick and takes DRIFT off its validity, as
 * rl_drift_us does. Faults are model actions: a request or a reply may be
 * lost, and a request may wait in its connection's queue (FIFO, as the one
 * connection per node is) while time passes; a node may pause, running no
 * request for a while; a client may pause anywhere, in particular between
 * checking its validity and its write reaching the resource. A client gives
 * up waiting for replies at any moment (its deadline), which covers every
 * node timeout.
 *
 * Node faults are model actions too, each bounded by its count (0 unless
 * a run sets it): a restart with its data (-DKEEPS: AOF; keys, counter and
 * marker kept, the node unavailable a while: a pause, its connections
 * closed and their queued requests lost), a restart without its data
 * (-DRESTARTS: keys, fencing counter and epoch marker gone, the same
 * pause and closed connections), and a clock step forward (-DSTEPS: the
 * node's clock jumps STEP ticks, so every key's remaining TTL, and the
 * marker's PTTL, shrink by STEP).
 *
 * The quarantine (epoch.c, proto.c's parse_epoch, decide.c), in every run
 * with RESTARTS or STEPS unless -DNO_QUARANTINE: each node has a marker
 * (mk: its generation, 0 none; every node marked before the start), and
 * the check behind each SETNX on the same connection (one atomic step with
 * it here) reads it. A missing marker: the node lost its keys, and is put
 * out of the vote (the marker made anew in the quarantine band). A marker
 * in the band: out for what is left of it. A marker whose PTTL fell, since
 * this client's last reading of the same marker, by more than the client's
 * own time plus the drift allowance of that span: the clock jumped, and
 * the node is put out. A node out is out for QLEN = TTL + DRIFT ticks
 * (epoch_length: the longest TTL and its drift allowance) of its own clock
 * (so a later step shortens it, as it shortens the real marker's PTTL); a
 * grant from a node out, or one just found out, is not counted toward the
 * quorum (reply 3: neither a grant nor a refusal that would keep the
 * clean-up release away) and its counter is not read for the token; the
 * node still gets the commit and the clean-up release. A client does not
 * ask a node it knows to be out until that quarantine ends by its clock.
 * Abstracted: the marker's bands are a generation number and an end tick
 * (a marking that raises the PTTL is a new generation, from which no
 * reading is taken, as rl_epoch_remade says); PTTL's 2 ms rounding and
 * drift_min_ms are not modelled (the allowance over a span of s ticks is
 * s * DRIFT / TTL ticks, drift_factor = DRIFT / TTL, the validity's own
 * term; a node fast by DRIFT loses that much more of its marker's PTTL,
 * an exact rate); the quarantine is written in the same step as the
 * check that finds it (the library's marking comes a round later: its
 * quarantine starts later and so ends later, and its node votes for nobody
 * in between either); a new deployment (no marker on a majority heard) and
 * young markers are not modelled: every node is marked at the start and a
 * run loses at most one node's data; the quarantine's length is not read
 * from the markers (every client takes TTL ticks). The clients' readings
 * before the start were SPAN0 ticks before tick 0 (default 0). Over a span
 * longer than TTL, a marker that fell by more than a lock allows (DRIFT)
 * but within the span's allowance is the client's doubt (epoch.c's
 * doubt): that client alone does not count the node for QLEN ticks, and
 * nothing is written on the node.
 *
 * Properties (assertions): at most one client holds the lock inside its
 * validity at once; the tokens of the writes the resource accepts strictly
 * increase.
 *
 * Assumptions removed, each an expected counterexample (models/check):
 *   -DNO_QUORUM        the decision on 1 node instead of N/2 + 1
 *   -DUNBOUNDED_DRIFT  the validity without the drift term, node clocks still fast by up to DRIFT
 *   -DNO_FENCE_CHECK   the resource accepts every write, whatever its token
 *   -DNO_QUARANTINE    no marker check (with -DRESTARTS: "persistence or a delayed
 *                      restart"; with -DSTEPS: "no clock jump")
 *   -DNO_DOUBT         with -DSPAN0=6 -DSTEPS=1: readings two TTLs old allow
 *                      a fall of 2 ticks, a step of 2 is taken for drift, and
 *                      two hold (the library's rule before the doubt: a
 *                      finding, docs/models.md, mutex-step-unseen) */

#define N 3
#ifndef C
#define C 2
#endif
#ifndef R
#define R 2
#endif
#define TTL 3
#define DRIFT 1
#ifndef TMAX
#define TMAX (R * 3 + 1)
#endif
#ifndef QCAP
#define QCAP 2
#endif
#ifndef PAUSES
#define PAUSES 1
#endif
#ifndef LOSSES
#define LOSSES 1
#endif
#ifndef DELAYS
#define DELAYS 2
#endif
#ifndef KEEPS
#define KEEPS 0
#endif
#ifndef RESTARTS
#define RESTARTS 0
#endif
#ifndef STEPS
#define STEPS 0
#endif
#ifndef STEP
#define STEP 2
#endif
#ifndef SPAN0
#define SPAN0 0
#endif
#define QLEN (TTL + DRIFT)
#if (KEEPS + RESTARTS + STEPS) > 0
#define NODE_FAULTS
#endif
#if (RESTARTS + STEPS) > 0 && !defined(NO_QUARANTINE)
#define QUARANTINE
#endif

#ifdef NO_QUORUM
#define Q 1
#else
#define Q (N / 2 + 1)
#endif
#ifdef UNBOUNDED_DRIFT
#define DRIFT_TERM 0
#else
#define DRIFT_TERM DRIFT
#endif

mtype = { SETNX, COMMIT, EXTEND, RELEASE };

/* The nodes. A key is held iff val[i] != 0; the time process deletes it at
 * its expiry (exp[i] <= now), which is what lazy and active expiry both
 * amount to. */
byte val[N];
byte exp[N];
byte fence[N];
byte fast[N];   /* how much earlier than TTL ticks node i expires a key: 0..DRIFT */
byte paused;    /* node paused + 1, or 0 */
byte pauses;
byte losses;    /* messages lost so far, at most LOSSES */
byte delays;    /* requests delayed so far, at most DELAYS */

byte now;
byte running = C;

#ifdef NODE_FAULTS
byte nclk[N];    /* how far node i's clock has been stepped forward */
byte keeps, restarts, steps;
#endif
#ifdef QUARANTINE
byte mk[N];      /* node i's marker: its generation, 0 none */
byte mgen = 1;   /* the last generation made */
byte qend[N];    /* out of the vote until its clock (now + nclk) reads this */
/* Client c's view of node i (k = c*N + i): the marker's generation at its
 * last reading (0: no reading to compare with), the node's clock then
 * (nclk: the PTTL it read), when (client time now + SPAN0), and until when
 * it takes the node to be out (its tick). */
byte pgen[C * N];
byte pclk[C * N];
byte tprev[C * N];
byte qu[C * N];
#endif

/* One connection per (client, node): requests in FIFO order. A request:
 * op, the attempt's value, the client's operation number, an argument (the
 * token for COMMIT). */
chan q[C * N] = [QCAP] of { mtype, byte, byte, byte };
/* Replies to the operation a client waits for (opn): 0 none yet, 1 yes,
 * 2 no; cnt the counter read by a granting SETNX. A reply to an older
 * operation is read and dropped, as the library does. */
byte opn[C];
byte rep[C * N];
byte cmax[C];    /* the largest counter the granting nodes read */

/* The clients' view: whether each holds, and until when it believes so. */
bool held[C];
byte vuntil[C];
/* The resource: the highest token it accepted. */
byte wlast;

inline mutex_check(c) {
    for (dd : 0 .. C - 1) {
        assert(dd == c || !(held[dd] && vuntil[dd] > now))
    }
    dd = 0
}

#ifdef QUARANTINE
#define SPAN(k) (now + SPAN0 - tprev[k])
#define ALLOW(k) (SPAN(k) * DRIFT / TTL)
/* parse_epoch's jump: the marker fell by the client's span + (nclk -
 * pclk) + its node's fast rate over the span, more than span + ALLOW */
#define LEAD(k) (nclk[x_i] - pclk[k] + (fast[x_i] != 0 -> ALLOW(k) : 0))
#define JUMPED(k) (LEAD(k) > ALLOW(k))
/* parse_epoch's doubt: over a span longer than TTL, a lead of more than a
 * lock allows (DRIFT ticks over TTL) may be drift or a step; the client
 * alone does not count the node for QLEN of its ticks (epoch.c, doubt) */
#ifdef NO_DOUBT
#define DOUBT(k) 0
#else
#define DOUBT(k) (SPAN(k) > TTL && LEAD(k) > DRIFT)
#endif
/* The marking (rl_script_epoch 'q' or 'j'): out for QLEN more ticks of
 * the node's clock, a marker made if none, the PTTL raised if shorter
 * (a new generation: no reading from it). */
inline put_out(k) {
    if
    :: mk[x_i] == 0 || qend[x_i] < now + nclk[x_i] + QLEN ->
       mgen++; mk[x_i] = mgen; qend[x_i] = now + nclk[x_i] + QLEN; pgen[k] = 0
    :: else
    fi
}
/* The check behind client c's SETNX on node i (k): whether the grant
 * counts (x_out 0) or not (x_out 1), the node put out if it lost its
 * marker or its clock jumped, and the client's reading and view. */
inline epoch_check(k) {
    if
    :: mk[x_i] == 0 -> put_out(k); x_out = 1
    :: else ->
       if
       :: pgen[k] == mk[x_i] && JUMPED(k) -> put_out(k); x_out = 1
       :: else ->
          x_out = (qend[x_i] > now + nclk[x_i]);
          if
          :: pgen[k] == mk[x_i] && DOUBT(k) ->
             x_out = 1; if :: qu[k] < now + QLEN -> qu[k] = now + QLEN :: else fi
          :: else
          fi;
          pgen[k] = mk[x_i]; pclk[k] = nclk[x_i]; tprev[k] = now + SPAN0
       fi
    fi;
    if :: qend[x_i] > now + nclk[x_i] && qu[k] < qend[x_i] - nclk[x_i] -> qu[k] = qend[x_i] - nclk[x_i] :: else fi
}
#endif

/* Node i runs client c's request (k = c*N + i) atomically, as a Lua script
 * runs, and answers, unless the reply is lost. */
inline exec(k, op, v, id, arg) {
    x_i = (k) % N;
    x_c = (k) / N;
    if
    :: op == SETNX ->
       if
       :: val[x_i] == 0 -> val[x_i] = v; exp[x_i] = now + TTL - fast[x_i]; x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == COMMIT ->
       if
       :: val[x_i] == v -> if :: fence[x_i] < arg -> fence[x_i] = arg :: else fi; x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == EXTEND ->
       if
       :: val[x_i] == v -> exp[x_i] = now + TTL - fast[x_i]; x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == RELEASE ->
       if
       :: val[x_i] == v -> val[x_i] = 0; exp[x_i] = 0; x_yes = 1
       :: else -> x_yes = 2
       fi
    fi;
    if
    :: id == opn[x_c] ->
#ifdef QUARANTINE
       if
       :: op == SETNX -> epoch_check(k); if :: x_out && x_yes == 1 -> x_yes = 3 :: else fi; x_out = 0
       :: else
       fi;
#endif
       rep[k] = x_yes;
       if :: x_yes == 1 && op == SETNX && fence[x_i] > cmax[x_c] -> cmax[x_c] = fence[x_i] :: else fi
    :: id == opn[x_c] && losses < LOSSES -> losses++    /* the reply is lost */
    :: else         /* late: the client has moved on and drops it */
    fi;
    x_i = 0; x_c = 0; x_yes = 0
}

#define CAN(k) (nempty(q[k]) && paused != ((k) % N) + 1)
#define NOW(k) (len(q[k]) == 0 && paused != ((k) % N) + 1)

/* A request that waited in its queue reaches its node, or is lost there. */
inline deliver(k) {
    q[k] ? x_op, x_v, x_id, x_arg;
    if
    :: exec(k, x_op, x_v, x_id, x_arg)
    :: losses < LOSSES -> losses++
    fi;
    x_op = 0; x_v = 0; x_id = 0; x_arg = 0
}

#ifdef QUARANTINE
#define XOUT , x_out
#else
#define XOUT
#endif

active proctype Net() {
    mtype x_op;
    byte x_v, x_id, x_arg, x_i, x_c, x_yes XOUT;
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

/* Time passes while any client runs; keys expire on their nodes. */
active proctype Time() {
    byte i;
end:
    do
    :: atomic {
           now < TMAX && running > 0 ->
           now++;
           for (i : 0 .. N - 1) {
               if :: val[i] != 0 && exp[i] <= now -> val[i] = 0; exp[i] = 0 :: else fi
           }
           i = 0
       }
    od
}

/* A node pauses (runs nothing of its queues) and later resumes. */
active proctype Pause() {
end:
    do
    :: atomic { paused == 0 && pauses < PAUSES && running > 0 -> select (paused : 1 .. N); pauses++ }
    :: atomic { paused != 0 -> paused = 0 }
    od
}

#ifdef NODE_FAULTS
/* Node i restarts: its connections close (the requests waiting in them are
 * lost); with -DRPAUSE it is unavailable a while (a pause, unless one
 * runs; without, a restart is instant, and the node's pause action, with
 * PAUSES, is the time it is down). */
inline down(i) {
    for (k : 0 .. C - 1) {
        do
        :: q[k * N + i] ? _, _, _, _
        :: empty(q[k * N + i]) -> break
        od
    }
    k = 0;
#ifdef RPAUSE
    if :: paused == 0 -> paused = i + 1 :: else fi
#endif
}

/* A node restarts with its data (KEEPS) or without (RESTARTS), or its
 * clock steps forward by STEP ticks (STEPS): its keys expire STEP ticks
 * earlier, at once if their time is past. The first fault is node 0's,
 * the next node 1's: the nodes are alike (every choice of fast clocks,
 * delays and losses is explored for each), so which one is no matter. */
active proctype Fault() {
    byte i, k;
end:
    do
    :: atomic { keeps < KEEPS && running > 0 -> i = restarts + keeps + steps; keeps++; down(i); i = 0 }
    :: atomic { restarts < RESTARTS && running > 0 -> i = restarts + keeps + steps; restarts++;
                val[i] = 0; exp[i] = 0; fence[i] = 0;
#ifdef QUARANTINE
                mk[i] = 0; qend[i] = 0;
#endif
                down(i); i = 0 }
    :: atomic { steps < STEPS && running > 0 -> i = restarts + keeps + steps; steps++;
                nclk[i] = nclk[i] + STEP;
                if
                :: val[i] != 0 && exp[i] <= now + STEP -> val[i] = 0; exp[i] = 0
                :: val[i] != 0 && exp[i] > now + STEP -> exp[i] = exp[i] - STEP
                :: else
                fi;
                i = 0 }
    od
}
#endif

/* Every node not in mask gets op (bit i set: skip node i). A request runs
 * on its node at once, or waits in its connection's queue (behind an older
 * one, on a paused node, or delayed: at most DELAYS of those), or is lost
 * (at most LOSSES losses in all). */
inline send(c, op, v, arg, mask) {
    opn[c]++;
    cmax[c] = 0;
    for (i : 0 .. N - 1) {
        rep[c * N + i] = 0
    }
    for (i : 0 .. N - 1) {
        if
        :: ((mask >> i) & 1) == 0 ->
           if
           :: NOW(c * N + i) -> exec(c * N + i, op, v, opn[c], arg)
           :: !NOW(c * N + i) -> q[c * N + i] ! op, v, opn[c], arg
           :: NOW(c * N + i) && delays < DELAYS -> delays++; q[c * N + i] ! op, v, opn[c], arg
           :: losses < LOSSES -> losses++
           fi
        :: else
        fi
    }
    i = 0
}

#define YES(c) ((rep[(c) * N] == 1) + (rep[(c) * N + 1] == 1) + (rep[(c) * N + 2] == 1))

/* Wait for a quorum of yes, or give up at any moment (the node deadlines). */
inline await(c) {
    do
    :: YES(c) >= Q -> break
    :: break
    od
}

inline tally(c) {
    yes = 0; no = 0;
    for (i : 0 .. N - 1) {
        if
        :: rep[c * N + i] == 1 -> yes++
        :: rep[c * N + i] == 2 -> no++; refused = refused | (1 << i)
        :: rep[c * N + i] == 3 -> no++    /* granted, out of the vote */
        :: else
        fi
    }
    i = 0
}

proctype Client(byte c) {
    byte r, i, dd, yes, no, refused, t0, vu, tok, v;
    byte x_i, x_c, x_yes XOUT;
    for (r : 0 .. R - 1) {
        v = c * R + r + 1;
        /* acquire: SET NX PX (and read the counter) on every node */
#ifdef QUARANTINE
        /* the nodes this client knows to be out are not asked */
        atomic { t0 = now; send(c, SETNX, v, 0, (qu[c * N] > now) | ((qu[c * N + 1] > now) << 1) | ((qu[c * N + 2] > now) << 2)) };
#else
        atomic { t0 = now; send(c, SETNX, v, 0, 0) };
#endif
        await(c);
        atomic {
            refused = 0;
            tally(c);
            vu = t0 + TTL - DRIFT_TERM;
            /* rl_decide_acquire: a quorum of OK and validity left */
            if
            :: yes >= Q && vu > now -> tok = cmax[c] + 1;
                                       send(c, COMMIT, v, tok, refused)
            :: else -> send(c, RELEASE, v, 0, refused); goto next
            fi
        };
        /* the token committed: rl_decide_extend within the validity */
        await(c);
        atomic {
            refused = 0;
            tally(c);
            if
            :: yes >= Q && now < vu -> held[c] = 1; vuntil[c] = vu; mutex_check(c)
            :: else -> send(c, RELEASE, v, 0, 0); goto next
            fi
        };
        /* the write: the validity checked, then the write reaches the
         * resource, perhaps after a pause (any number of ticks) */
        if
        :: now < vuntil[c] ->
           atomic {
               if
#ifndef NO_FENCE_CHECK
               :: tok < wlast -> skip    /* refused: a later holder wrote */
#endif
               :: else -> assert(tok > wlast); wlast = tok
               fi
           }
        :: else
        fi;
        /* extend, while the validity lasts */
        atomic {
            if
            :: now < vuntil[c] -> t0 = now; send(c, EXTEND, v, 0, 0)
            :: else -> goto release
            fi
        };
        await(c);
        atomic {
            refused = 0;
            tally(c);
            if
            :: yes >= Q && now < vuntil[c] -> vuntil[c] = t0 + TTL - DRIFT_TERM; mutex_check(c)
            :: N - no < Q -> held[c] = 0   /* lost: too many said not ours */
            :: else
            fi
        };
release:
        atomic { held[c] = 0; vuntil[c] = 0; send(c, RELEASE, v, 0, 0) };
next:
        atomic { yes = 0; no = 0; refused = 0; t0 = 0; vu = 0; tok = 0; v = 0 }
    }
    running--
}

init {
    byte k;
    atomic {
        for (k : 0 .. N - 1) { if :: fast[k] = 0 :: fast[k] = DRIFT fi }
#ifdef QUARANTINE
        for (k : 0 .. N - 1) { mk[k] = 1 }
        for (k : 0 .. C * N - 1) { pgen[k] = 1 }
#endif
        for (k : 0 .. C - 1) { run Client(k) }
        k = 0
    }
}
