/* SPDX-License-Identifier: BSD-3-Clause */
/* rwlock.pml: the writer-preferring read-write lock (docs/algorithm.md
 * "Read-write locks"; rwlock.c and the rw scripts of scripts.c), checked
 * exhaustively by spin at a small scope (docs/testing.md "Models").
 *
 * N = 3 nodes, each with the lock's three keys as the scripts keep them:
 *   K     free, a writer's value, a lone reader ("readers:" and its value,
 *         K's TTL its lease) or the shared marker ("readers");
 *   K:rd  the sharing readers' leases, each scored by the end of its lease
 *         on the node's clock, and the set's own TTL;
 *   K:wi  a waiting writer's intent, with its TTL.
 * NW writers each make up to WR attempts, every one a waiting writer's
 * (rw_acquire_round adds 'i' when the acquire may retry): rl_script_rw_acquire
 * in mode "Wi" sets K where it is free and clears the intent, and leaves its
 * intent where refused. A writer that holds releases (rl_script_release,
 * compare-and-delete); one that gave up takes its intent back
 * (rl_script_rw_give_up, sent without waiting). NR readers each make one
 * attempt: rl_script_rw_read / rl_script_rw_acquire in mode "R" (granted where
 * K is free or a reader's and no intent is there; rl_take writes the lone
 * form, or the shared one, turning a lone reader's K into the shared form with
 * that reader's lease end read from K's TTL), then EXT extensions
 * (rl_script_rw_extend, rl_cover raising K's TTL) and a release
 * (rl_script_rw_release: the last running lease frees K). Every round is
 * decided as decide.c decides (rl_decide_acquire, rl_decide_extend) at a
 * quorum of N/2 + 1, and a failed acquisition sends its clean-up release to
 * every node that did not refuse, as the mutex's does.
 *
 * Time, fast node clocks (a node measures TTL ticks in TTL - fast[i]; its
 * TIME-based lease scores the same way), the drift term, lost and delayed
 * requests and lost replies, and a paused node are as in mutex.pml.
 *
 * Property (assertion): among the clients inside their validity, a writer is
 * alone: no second writer, and no reader.
 *
 * Left out: registrations, the wait queue and its wake-ups (the intent is
 * kept unregistered: each attempt's value, overwritten by any writer), the
 * downgrade, fencing tokens (the mutex model's; a reader commits none), the
 * writer's extension (the mutex's own script, on the writer's value), and more
 * than one attempt per reader.
 *
 * Assumptions removed, each an expected counterexample (models/check):
 *   -DNO_WRITER_CHECK  the reader's grant does not look at K: rl_script_rw_read's
 *                      "if g[2] and (not v or rl_rdr(v))" / rl_script_rw_acquire's
 *                      "if not v or rl_rdr(v)" without the check of K, so a
 *                      reader finding a writer's K takes it as a lone reader's
 *   -DNO_ZCOUNT        rl_script_rw_release frees K without its
 *                      "if redis.call('zcount', rd, '(' .. now, '+inf') > 0"
 *                      check of the other readers' running leases
 *   -DNO_COVER         rl_script_rw_extend raises a shared reader's lease in
 *                      K:rd without rl_cover raising K's TTL with it */

#define N 3
#ifndef NW
#define NW 1
#endif
#ifndef NR
#define NR 2
#endif
#define C (NW + NR)
#ifndef WR
#define WR 2
#endif
#ifndef EXT
#define EXT 1
#endif
#define TTL 3
#define DRIFT 1
#define ITTL 2          /* the intent's TTL (RL_RW_INTENT_MS), shorter than TTL */
#ifndef TMAX
#define TMAX 5
#endif
#ifndef QCAP
#define QCAP 2
#endif
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
#define DRIFT_TERM DRIFT

/* A client's values: c * WR + attempt + 1, unique per attempt; the client
 * of value v is (v - 1) / WR. Clients 0 .. NW-1 are the writers. */
#define OWNER(v) (((v) - 1) / WR)
#define WRITER(c) ((c) < NW)

mtype = { ACQR, ACQW, REXT, RREL, WREL, GIVEUP };

/* K's forms */
#define FREE 0
#define WKEY 1
#define LONE 2
#define SHARED 3

byte kk[N];       /* K's form */
byte kv[N];       /* the writer's or lone reader's value */
byte kexp[N];     /* when K expires (0: never, while free) */
byte rdv[N * C];  /* K:rd: reader c's entry on node i at i * C + c: its value, or 0 */
byte rde[N * C];  /* its score: the end of its lease (as a tick) */
byte rdexp[N];    /* K:rd's TTL: when the set goes (0: no TTL) */
byte wi[N];       /* K:wi: the intent's value, or 0 */
byte wiexp[N];
byte fast[N];
byte paused;
byte pauses;
byte losses;
byte delays;

byte now;
byte running = C;

chan q[C * N] = [QCAP] of { mtype, byte, byte };
byte opn[C];
byte rep[C * N];

bool held[C];
byte vuntil[C];

/* A writer inside its validity is alone; readers may share. */
inline rw_check(c) {
    for (dd : 0 .. C - 1) {
        assert(dd == c || !(held[dd] && vuntil[dd] > now && (WRITER(c) || WRITER(dd))))
    }
    dd = 0
}

/* K:rd has a member; a member's lease still runs (ZCOUNT '(' now '+inf'). */
#define RUN1(i, c) (rdv[(i) * C + (c)] != 0 && rde[(i) * C + (c)] > now)
#if C == 2
#define RDANY(i) (rdv[(i) * C] != 0 || rdv[(i) * C + 1] != 0)
#define RDRUN(i) (RUN1(i, 0) || RUN1(i, 1))
#elif C == 3
#define RDANY(i) (rdv[(i) * C] != 0 || rdv[(i) * C + 1] != 0 || rdv[(i) * C + 2] != 0)
#define RDRUN(i) (RUN1(i, 0) || RUN1(i, 1) || RUN1(i, 2))
#else
#error "rwlock.pml: NW + NR is 2 or 3"
#endif

/* rl_cover(ttl): K (and K:rd with it) lasts at least until e. PEXPIRE of a
 * key that is not there does nothing. */
inline cover(i, e) {
    if
    :: kexp[i] < e -> kexp[i] = e; if :: RDANY(i) -> rdexp[i] = e :: else fi
    :: else
    fi
}

/* ZADD to K:rd: a set that was not there is made without a TTL. */
inline zadd(i, c, v, e) {
    if :: !RDANY(i) -> rdexp[i] = 0 :: else fi;
    rdv[(i) * C + (c)] = v; rde[(i) * C + (c)] = e
}

/* ZREM: the set goes with its last member. */
inline zrem(i, c) {
    rdv[(i) * C + (c)] = 0; rde[(i) * C + (c)] = 0;
    if :: !RDANY(i) -> rdexp[i] = 0 :: else fi
}

/* rl_take: a granted reader's lease, K being free or a reader's (or, in
 * -DNO_WRITER_CHECK, a writer's: the script's last branch then reads it as
 * another reader's lone form). */
inline take(i, c, v) {
    x_e = now + TTL - fast[i];
    if
    :: kk[i] == FREE -> kk[i] = LONE; kv[i] = v; kexp[i] = x_e
    :: kk[i] == LONE && kv[i] == v -> kexp[i] = x_e
    :: kk[i] == SHARED -> zadd(i, c, v, x_e); cover(i, x_e)
    :: else ->
       /* another's lone form: its lease ends when K's TTL does */
       if
       :: kk[i] == LONE -> zadd(i, OWNER(kv[i]), kv[i], kexp[i])
       :: else          /* a writer's value: not a reader's lease */
       fi;
       zadd(i, c, v, x_e);
       if :: x_e > kexp[i] -> kexp[i] = x_e :: else fi;
       kk[i] = SHARED; kv[i] = 0; rdexp[i] = kexp[i]
    fi
}

/* Node i runs client c's request (k = c*N + i) atomically, as a Lua script
 * runs, and answers (1 yes, 2 no), unless the reply is lost. */
inline exec(k, op, v, id) {
    x_i = (k) % N;
    x_c = (k) / N;
    if
    :: op == ACQR ->
       /* rl_script_rw_read: MGET K K:wi; granted where K is free or a
        * reader's and no intent is there */
       if
#ifdef NO_WRITER_CHECK
       :: wi[x_i] == 0 -> take(x_i, x_c, v); x_yes = 1
#else
       :: kk[x_i] != WKEY && wi[x_i] == 0 -> take(x_i, x_c, v); x_yes = 1
#endif
       :: else -> x_yes = 2
       fi
    :: op == ACQW ->
       /* rl_script_rw_acquire, mode "Wi": K set where free and the intent
        * cleared; refused, the (unregistered) intent is this attempt's */
       if
       :: kk[x_i] == FREE -> kk[x_i] = WKEY; kv[x_i] = v; kexp[x_i] = now + TTL - fast[x_i];
                             wi[x_i] = 0; wiexp[x_i] = 0; x_yes = 1
       :: else -> wi[x_i] = v; wiexp[x_i] = now + ITTL - fast[x_i]; x_yes = 2
       fi
    :: op == REXT ->
       /* rl_script_rw_extend */
       x_e = now + TTL - fast[x_i];
       if
       :: kk[x_i] == LONE && kv[x_i] == v -> kexp[x_i] = x_e; x_yes = 1
       :: kk[x_i] == SHARED && rdv[x_i * C + x_c] == v && rde[x_i * C + x_c] > now ->
          rde[x_i * C + x_c] = x_e;
#ifndef NO_COVER
          cover(x_i, x_e);
#endif
          x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == RREL ->
       /* rl_script_rw_release, no registration */
       if
       :: kk[x_i] == LONE && kv[x_i] == v -> kk[x_i] = FREE; kv[x_i] = 0; kexp[x_i] = 0; x_yes = 1
       :: else ->
       if
       :: rdv[x_i * C + x_c] != v -> x_yes = 2                      /* no score */
       :: rdv[x_i * C + x_c] == v && rde[x_i * C + x_c] <= now -> zrem(x_i, x_c); x_yes = 2
       :: rdv[x_i * C + x_c] == v && rde[x_i * C + x_c] > now ->
          zrem(x_i, x_c);
          if
#ifndef NO_ZCOUNT
          :: RDRUN(x_i) -> skip          /* another lease runs: K stays */
          :: !RDRUN(x_i) && kk[x_i] == SHARED -> kk[x_i] = FREE; kexp[x_i] = 0
          :: !RDRUN(x_i) && kk[x_i] != SHARED
#else
          :: kk[x_i] == SHARED -> kk[x_i] = FREE; kexp[x_i] = 0
          :: else
#endif
          fi;
          x_yes = 1
       fi
       fi
    :: op == WREL ->
       /* rl_script_release: compare-and-delete */
       if
       :: kk[x_i] == WKEY && kv[x_i] == v -> kk[x_i] = FREE; kv[x_i] = 0; kexp[x_i] = 0; x_yes = 1
       :: else -> x_yes = 2
       fi
    :: op == GIVEUP ->
       /* rl_script_rw_give_up: the intent goes if it is still this one */
       if :: wi[x_i] == v -> wi[x_i] = 0; wiexp[x_i] = 0 :: else fi;
       x_yes = 1
    fi;
    if
    :: id == opn[x_c] -> rep[k] = x_yes
    :: id == opn[x_c] && losses < LOSSES -> losses++    /* the reply is lost */
    :: else         /* late: the client has moved on and drops it */
    fi;
    x_i = 0; x_c = 0; x_yes = 0; x_e = 0
}

#define CAN(k) (nempty(q[k]) && paused != ((k) % N) + 1)
#define NOW(k) (len(q[k]) == 0 && paused != ((k) % N) + 1)

inline deliver(k) {
    q[k] ? x_op, x_v, x_id;
    if
    :: exec(k, x_op, x_v, x_id)
    :: losses < LOSSES -> losses++
    fi;
    x_op = 0; x_v = 0; x_id = 0
}

active proctype Net() {
    mtype x_op;
    byte x_v, x_id, x_i, x_c, x_yes, x_e;
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

/* Time passes while any client runs; keys expire on their nodes (K:rd's
 * members do not: an ended lease is ignored by its score). */
active proctype Time() {
    byte i, j;
end:
    do
    :: atomic {
           now < TMAX && running > 0 ->
           now++;
           for (i : 0 .. N - 1) {
               if :: kk[i] != FREE && kexp[i] <= now -> kk[i] = FREE; kv[i] = 0; kexp[i] = 0 :: else fi;
               if
               :: rdexp[i] != 0 && rdexp[i] <= now ->
                  for (j : 0 .. C - 1) { rdv[i * C + j] = 0; rde[i * C + j] = 0 }
                  rdexp[i] = 0
               :: else
               fi;
               if :: wi[i] != 0 && wiexp[i] <= now -> wi[i] = 0; wiexp[i] = 0 :: else fi
           }
           i = 0; j = 0
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

inline send(c, op, v, mask) {
    opn[c]++;
    for (i : 0 .. N - 1) {
        rep[c * N + i] = 0
    }
    for (i : 0 .. N - 1) {
        if
        :: ((mask >> i) & 1) == 0 ->
           if
           :: NOW(c * N + i) -> exec(c * N + i, op, v, opn[c])
           :: !NOW(c * N + i) -> q[c * N + i] ! op, v, opn[c]
           :: NOW(c * N + i) && delays < DELAYS -> delays++; q[c * N + i] ! op, v, opn[c]
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
    yes = 0; no = 0;
    for (i : 0 .. N - 1) {
        if
        :: rep[c * N + i] == 1 -> yes++
        :: rep[c * N + i] == 2 -> no++; refused = refused | (1 << i)
        :: else
        fi
    }
    i = 0
}

proctype Writer(byte c) {
    byte r, i, dd, yes, no, refused, t0, vu, v;
    byte x_i, x_c, x_yes, x_e;
    for (r : 0 .. WR - 1) {
        v = c * WR + r + 1;
        atomic { t0 = now; send(c, ACQW, v, 0) };
        await(c);
        atomic {
            refused = 0;
            tally(c);
            vu = t0 + TTL - DRIFT_TERM;
            if
            :: yes >= Q && vu > now -> held[c] = 1; vuntil[c] = vu; rw_check(c)
            :: else -> send(c, WREL, v, refused);
                       /* the last attempt failed: the intent taken back */
                       if :: r == WR - 1 -> send(c, GIVEUP, v, 0) :: else fi;
                       goto next
            fi
        };
        /* holds while its validity lasts (its extension is the mutex's), then releases */
        atomic { held[c] = 0; vuntil[c] = 0; send(c, WREL, v, 0) };
        break;
next:
        atomic { yes = 0; no = 0; refused = 0; t0 = 0; vu = 0; v = 0 }
    }
    running--
}

proctype Reader(byte c) {
    byte e, i, dd, yes, no, refused, t0, vu, v;
    byte x_i, x_c, x_yes, x_e;
    v = c * WR + 1;
    atomic { t0 = now; send(c, ACQR, v, 0) };
    await(c);
    atomic {
        refused = 0;
        tally(c);
        vu = t0 + TTL - DRIFT_TERM;
        if
        :: yes >= Q && vu > now -> held[c] = 1; vuntil[c] = vu; rw_check(c)
        :: else -> send(c, RREL, v, refused); goto done
        fi
    };
    do
    :: e == EXT -> break
    :: e < EXT ->
        e++;
        atomic {
            if
            :: now < vuntil[c] -> t0 = now; send(c, REXT, v, 0)
            :: else -> goto release
            fi
        };
        await(c);
        atomic {
            refused = 0;
            tally(c);
            if
            :: yes >= Q && now < vuntil[c] -> vuntil[c] = t0 + TTL - DRIFT_TERM; rw_check(c)
            :: N - no < Q -> held[c] = 0   /* lost */
            :: else
            fi
        }
    od;
release:
    atomic { held[c] = 0; vuntil[c] = 0; send(c, RREL, v, 0) };
done:
    running--
}

init {
    byte k;
    atomic {
        for (k : 0 .. N - 1) { if :: fast[k] = 0 :: fast[k] = DRIFT fi }
        for (k : 0 .. NW - 1) { run Writer(k) }
        for (k : NW .. C - 1) { run Reader(k) }
        k = 0
    }
}
