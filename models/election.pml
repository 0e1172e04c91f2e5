/* SPDX-License-Identifier: BSD-3-Clause */
/* election.pml: leader election as the library runs it (c/src/election.c,
 * docs/algorithm.md "Leader election"), checked exhaustively by spin at a
 * small scope (docs/testing.md "Models", docs/models.md). The structure is
 * mutex.pml's: the same nodes, clocks, connections, faults and decisions.
 *
 * N = 3 nodes, each with the election's lock key K (the value that holds it
 * and when it expires), its fencing counter, and the record K:leader (owner,
 * term, revision; the record's value is named by its term and revision).
 * C = 2 campaigners each make R attempts. An attempt is a campaign: a
 * waiting acquire of K with fencing forced on (rl_script_acquire in mode
 * 'c': SET NX PX, the counter read where the key is set), rl_decide_acquire,
 * the token committed (T = 1 + the largest counter of the granting nodes,
 * rl_script_fence_commit on every node that did not refuse, rl_decide_extend)
 * and the record written with term T, revision 1 (rl_script_elect 'w': only
 * where K holds our value and the record is not newer; rl_decide_extend
 * within the validity: campaign_won). A failed step releases the lock, and
 * the next attempt is the waiting acquire's retry. A leader writes once to a
 * resource fenced by its term (the resource keeps the highest term it
 * accepted), proclaims once (is_held checked, then rl_script_elect 'w' with
 * revision 2) and resigns (rl_script_release, then rl_script_elect 'c' on
 * every node, not waited for). One observer makes O reads (rl_script_elect's
 * read on every node: present = the record's owner holds K there, the term,
 * the revision), waits for every node or gives up at any moment (the node
 * deadlines), decides with election.c's agree() when a quorum answered and
 * reports a state only when later() says it comes after the last one.
 *
 * Time is one global tick, now; node clocks run fast by 0 or DRIFT (each
 * combination explored); a client takes DRIFT off its validity, as
 * rl_drift_us does. Faults, as in mutex.pml: a request or a reply may be
 * lost (LOSSES), a request may wait in its connection's FIFO queue while
 * time passes (DELAYS), a node may pause (PAUSES), and a client may pause
 * between checking its validity and its write or proclaim reaching the
 * resource or the nodes. The observer's requests always go through its
 * queues, so each node answers it at any moment.
 *
 * Properties (assertions):
 *  (a) at most one campaigner holds the election's lock inside its validity;
 *  (b) terms strictly increase from one leader to the next, and the resource
 *      never accepts a write with a term below one it accepted;
 *  (c) a record write never replaces, on a node, a record of a later term or
 *      a later revision of the same term (a deposed leader's write is refused);
 *  (d) the observer's reports never go backwards in the order of states:
 *      (term, revision), "none after term T" after every revision of T.
 *
 * Assumptions removed, each an expected counterexample (models/check):
 *   -DUNBOUNDED_DRIFT  the validity without the drift term: (a)
 *   -DNO_FENCE_CHECK   the resource accepts every write, whatever its term: (b)
 *   -DNO_TERM_CHECK    rl_script_elect's 'w' without its "not older" check: (c)
 *   -DNO_TERM_FLOOR    observe's read without "never a term backwards": (d) */

#define N 3
#define C 2
#ifndef R
#define R 1
#endif
#ifndef O
#define O 2
#endif
#define TTL 3
#define DRIFT 1
#ifndef TMAX
#define TMAX (R * 4 + 1)
#endif
#define QCAP 2
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef DELAYS
#define DELAYS 0
#endif

#define Q (N / 2 + 1)
#ifdef UNBOUNDED_DRIFT
#define DRIFT_TERM 0
#else
#define DRIFT_TERM DRIFT
#endif

mtype = { SETNX, COMMIT, WRITE, RELEASE, CLEAR };

/* The nodes: K (val, exp), the counter, the record (owner, term, revision). */
byte val[N];
byte exp[N];
byte fence[N];
byte ro[N];
byte rt[N];
byte rn[N];
byte fast[N];
byte paused;
byte pauses;
byte losses;
byte delays;

byte now;
byte running = C;

/* One connection per (client, node). A request: op, value, operation number, argument (the token for COMMIT,
 * term * 4 + revision for WRITE). */
chan q[C * N] = [QCAP] of { mtype, byte, byte, byte };
byte opn[C];
byte rep[C * N];
byte cmax[C];

/* The observer's current read: each node answered, present, term, revision. */
bool ores[N];
bool opr[N];
byte otm[N];
byte orv[N];

bool held[C];
byte vuntil[C];
byte lastterm;   /* the term of the latest leader */
byte wlast;      /* the resource: the highest term it accepted */

inline mutex_check(c) {
    for (dd : 0 .. C - 1) {
        assert(dd == c || !(held[dd] && vuntil[dd] > now))
    }
    dd = 0
}

/* older(ARGV term, revision) than the record: the script's refusal */
#ifdef NO_TERM_CHECK
#define OLDER(i, t, n) 0
#else
#define OLDER(i, t, n) (rt[i] != 0 && ((t) < rt[i] || ((t) == rt[i] && (n) < rn[i])))
#endif

/* Node i runs request k's op atomically, as a Lua script runs, and answers,
 * unless the reply is lost. */
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
       :: val[x_i] == v -> if :: fence[x_i] < (arg) -> fence[x_i] = (arg) :: else fi; x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == WRITE ->
       if
       :: val[x_i] == v && !OLDER(x_i, (arg) / 4, (arg) % 4) ->
          /* (c): never over a later term's record, nor a later revision */
          assert((arg) / 4 > rt[x_i] || ((arg) / 4 == rt[x_i] && (arg) % 4 >= rn[x_i]));
          ro[x_i] = v; rt[x_i] = (arg) / 4; rn[x_i] = (arg) % 4; x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == RELEASE ->
       if
       :: val[x_i] == v -> val[x_i] = 0; exp[x_i] = 0; x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == CLEAR ->
       if
       :: ro[x_i] == v -> ro[x_i] = 0; x_yes = 1
       :: else -> x_yes = 2
       fi
    fi;
    if
    :: id == opn[x_c] ->
       rep[x_c * N + x_i] = x_yes;
       if :: x_yes == 1 && op == SETNX && fence[x_i] > cmax[x_c] -> cmax[x_c] = fence[x_i] :: else fi
    :: id == opn[x_c] && losses < LOSSES -> losses++
    :: else
    fi;
    x_i = 0; x_c = 0; x_yes = 0
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
    byte x_v, x_id, x_arg, x_i, x_c, x_yes;
end:
    do
    :: atomic { CAN(0) -> deliver(0) }
    :: atomic { CAN(1) -> deliver(1) }
    :: atomic { CAN(2) -> deliver(2) }
    :: atomic { CAN(3) -> deliver(3) }
    :: atomic { CAN(4) -> deliver(4) }
    :: atomic { CAN(5) -> deliver(5) }
    od
}

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

active proctype Pause() {
end:
    do
    :: atomic { paused == 0 && pauses < PAUSES && running > 0 -> select (paused : 1 .. N); pauses++ }
    :: atomic { paused != 0 -> paused = 0 }
    od
}

/* Every node not in mask gets op (bit i set: skip node i), at once, queued
 * (behind an older request, on a paused node, or delayed) or lost. */
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

inline await(c) {
    do
    :: YES(c) >= Q -> break
    :: break
    od
}

inline tally(c) {
    yes = 0; no = 0; refused = 0;
    for (i : 0 .. N - 1) {
        if
        :: rep[c * N + i] == 1 -> yes++
        :: rep[c * N + i] == 2 -> no++; refused = refused | (1 << i)
        :: else
        fi
    }
    i = 0
}

proctype Client(byte c) {
    byte r, i, dd, yes, no, refused, t0, vu, tok, v;
    byte x_i, x_c, x_yes;
    for (r : 0 .. R - 1) {
        v = c * R + r + 1;
        /* campaign: the waiting acquire's attempt, SET NX PX and the counter read */
        atomic { t0 = now; send(c, SETNX, v, 0, 0) };
        await(c);
        atomic {
            tally(c);
            vu = t0 + TTL - DRIFT_TERM;
            if
            :: yes >= Q && vu > now -> tok = cmax[c] + 1; send(c, COMMIT, v, tok, refused)
            :: else -> send(c, RELEASE, v, 0, refused); goto next
            fi
        };
        await(c);
        /* the token committed; campaign_won: the record, term tok, revision 1 */
        atomic {
            tally(c);
            if
            :: yes >= Q && now < vu -> held[c] = 1; vuntil[c] = vu; mutex_check(c);
                                       send(c, WRITE, v, tok * 4 + 1, 0)
            :: else -> send(c, RELEASE, v, 0, 0); goto next
            fi
        };
        await(c);
        atomic {
            tally(c);
            if
            :: yes >= Q && now < vuntil[c] ->
               /* leader of term tok: (b) terms strictly increase */
               assert(tok > lastterm); lastterm = tok; mutex_check(c)
            :: else -> held[c] = 0; vuntil[c] = 0; send(c, RELEASE, v, 0, 0); goto next
            fi
        };
        /* the write fenced by the term, perhaps after a pause */
        if
        :: now < vuntil[c] ->
           atomic {
               if
#ifndef NO_FENCE_CHECK
               :: tok < wlast -> skip    /* refused: a later leader wrote */
#endif
               :: else -> assert(tok > wlast); wlast = tok
               fi
           }
        :: else
        fi;
        /* proclaim: is_held checked, then (perhaps after a pause) revision 2 */
        if
        :: now < vuntil[c] -> skip
        :: else -> goto resign
        fi;
        atomic { send(c, WRITE, v, tok * 4 + 2, 0) };
        await(c);
        atomic {
            tally(c);
            if
            :: yes >= Q && now < vuntil[c] -> mutex_check(c)
            :: else
            fi
        };
resign:
        atomic { held[c] = 0; vuntil[c] = 0; send(c, RELEASE, v, 0, 0) };
        atomic { send(c, CLEAR, v, 0, 0) };
next:
        atomic { yes = 0; no = 0; refused = 0; t0 = 0; vu = 0; tok = 0; v = 0 }
    }
    running--
}

/* agree()'s counts over the nodes that answered the read */
#define PR(j, t) (ores[j] && opr[j] && otm[j] == (t))
#define NPR(t) (PR(0, t) + PR(1, t) + PR(2, t))
#define PRN(j, t, n) (PR(j, t) && orv[j] >= (n))
#define NPRN(t, n) (PRN(0, t, n) + PRN(1, t, n) + PRN(2, t, n))
#define GE(j, t) (ores[j] && otm[j] >= (t))
#define NGE(t) (GE(0, t) + GE(1, t) + GE(2, t))
#define ANSWERED (ores[0] + ores[1] + ores[2])
/* the order of reported states: (term, revision), none of T after every revision of T */
#define RANK(p, t, n) ((t) * 4 + ((p) -> (n) : 3))

active proctype Observer() {
    byte k, i, j, best;
    bool npres, lpres, chg;
    byte nterm, nrev, lterm, lrev;
    for (k : 0 .. O - 1) {
        /* one read: each node answers (the record as it is now) or not
         * before the deadline; then agree() when a quorum answered */
        atomic {
            for (i : 0 .. N - 1) {
                if
                :: ores[i] = 1; opr[i] = (val[i] != 0 && ro[i] == val[i]); otm[i] = rt[i]; orv[i] = rn[i]
                :: skip
                fi
            }
            i = 0;
            if
            :: ANSWERED >= Q ->
               /* agree(): the leader of a term a quorum holds, with the highest
                * revision a quorum has; else none, with the highest term a
                * quorum has recorded */
               npres = 0; nterm = 0; nrev = 0;
               for (i : 0 .. N - 1) {
                   if
                   :: !npres && ores[i] && opr[i] && NPR(otm[i]) >= Q ->
                      best = 0;
                      for (j : 0 .. N - 1) {
                          if
                          :: PR(j, otm[i]) && orv[j] > best && NPRN(otm[i], orv[j]) >= Q -> best = orv[j]
                          :: else
                          fi
                      }
                      npres = 1; nterm = otm[i]; nrev = best
                   :: else
                   fi
               }
               if
               :: !npres ->
                  for (i : 0 .. N - 1) {
                      if
                      :: ores[i] && otm[i] > nterm && NGE(otm[i]) >= Q -> nterm = otm[i]
                      :: else
                      fi
                  }
               :: else
               fi;
               /* later(now, last) */
               if
               :: npres -> chg = (nterm > lterm || (nterm == lterm && lpres && nrev > lrev))
               :: else -> chg = (lpres || nterm > lterm)
               fi;
               if
               :: chg ->
#ifndef NO_TERM_FLOOR
                  if :: !npres && nterm < lterm -> nterm = lterm :: else fi;   /* never a term backwards */
#endif
                  /* (d) */
                  assert(RANK(npres, nterm, nrev) > RANK(lpres, lterm, lrev));
                  lpres = npres; lterm = nterm; lrev = nrev
               :: else
               fi
            :: else
            fi;
            for (i : 0 .. N - 1) { ores[i] = 0; opr[i] = 0; otm[i] = 0; orv[i] = 0 }
            i = 0; j = 0; best = 0; npres = 0; nterm = 0; nrev = 0; chg = 0
        }
    }
}

init {
    byte k;
    atomic {
        for (k : 0 .. N - 1) { if :: fast[k] = 0 :: fast[k] = DRIFT fi }
        for (k : 0 .. C - 1) { run Client(k) }
        k = 0
    }
}
