/* SPDX-License-Identifier: BSD-3-Clause */
/* wake.pml: the waiter queue of wake-up and fair mode (docs/algorithm.md
 * "Waking waiters"), checked by spin for progress at a small scope
 * (docs/testing.md "Models", docs/models.md).
 *
 * N = 3 nodes, each with the lock's key K (the value that holds it, 0 free)
 * and the queue K:wq, here a set of registrations ordered by ticket (bit c
 * is client c's registration; a lower c has the earlier ticket). Clients:
 *   0  a waiter whose client died before the run: its registration is at
 *      the head of every node's queue and nobody listens for it (PUBLISH to
 *      it returns 0); with -DLAPSE it lapses at some point (K:wl), after
 *      which a new registration's purge (rl_purge) drops it;
 *   1, 2  waiters (W of them: -DW=1 or 2), each asking once for the lock,
 *      holding it, releasing it;
 *   3  the holder, which holds at the start, releases, and comes straight
 *      back R - 1 times (a plain SET NX PX; in fair mode the acquire script
 *      with its own registration), giving up at its first refusal.
 * The scripts' effects on one node are atomic steps: rl_script_acquire in
 * modes 'j' (register when refused), 'd' (drop our registration when
 * granted; not sent in fair mode, acquire.c's keeps_place), 'f' (fair: a
 * free key only for the head whose client listens,
 * the others wake the head again), rl_script_release (compare-and-delete,
 * drop our own registration, PUBLISH to the first registration and drop
 * it while PUBLISH returns 0, rl_wake), rl_script_leave, and the plain
 * SET NX PX. A client's round sends one request per node, each its own
 * step, so other clients' steps fall in between; the decision is
 * rl_decide_acquire's quorum (2 of 3). A failed round's clean-up release
 * wakes nobody; a won round leaves the queue where it was refused
 * (rl_leave_queue) unless it won with a plain SET; its release takes the
 * registration out where it is left (ARGV[3]): everywhere after a plain
 * win, where it was granted after a fair one.
 *
 * A PUBLISH puts a message in the listener connection of the registration's
 * client on that node; the listener delivers it later, or loses it (at most
 * MLOSS lost). A delivered message wakes its waiter if it waits (not if it
 * names the release whose lock the waiter found taken again: rl_wake_spend);
 * one for a registration that no longer waits makes the client send the
 * leave for it (engine/listen.c's deliver). A woken waiter asks with a plain
 * SET NX PX (in fair mode with the script).
 *
 * Time: there are no ticks. The holder may overstay (-DEXPIRY: its validity
 * ends before its release), after which its key may expire on each node at
 * any moment; a running holder's keys never expire. A waiter's sleep after a
 * refusal ends when it is woken, or at its timeout: the holder's expiry
 * capped at 5 s, or retry_delay after a split vote or a fair refusal of a
 * free key; each is a step always enabled, so under weak fairness it comes.
 *
 * Properties: at most one holder inside its validity (assertion); under
 * weak fairness, both waiters are eventually served (ltl live), and in fair
 * mode (-DFAIR) the head is served first: waiter 2 and the holder's
 * comeback never before waiter 1 (whose registration the holder's first
 * release waits for, so that it is the head everywhere).
 *
 * Assumptions removed, each an expected acceptance cycle (models/check):
 *   -DNO_POLL_FALLBACK  a refused waiter sleeps until woken, with no timeout
 *                       (the split vote's retry delay stays)
 *   -DNO_DROP_GONE      rl_wake does not drop a registration whose PUBLISH
 *                       reached nobody (and fair mode's check does not
 *                       drop a head nobody listens for)
 * and, an expected failure of the fair order (the claim's second part):
 *   -DFAIR_DROP         in fair mode too a grant drops the waiter's
 *                       registration ('d'), even in a round that is then
 *                       lost: with -DEXPIRY the holder coming back takes
 *                       that node before the waiter's next attempt
 *                       registers it again, and with the same on a second
 *                       node the lock before the head
 * and, not an expected failure: -DNO_STALE_LEAVE (a message for a
 * registration that no longer waits is ignored, not answered with the
 * leave) passes at these scopes, since a stale head needs a lost release or
 * leave request, which the model does not lose. */

#define N 3
#define Q (N / 2 + 1)
#define NONE 9
#define GONE 0
#define HOLDER 3
#define NCL 4
#ifndef R
#define R 2
#endif
#ifndef MLOSS
#define MLOSS 1
#endif
#ifndef W
#define W 2
#endif
#if W > 1
#define WAITERS 6
#define SERVED (served[1] && served[2])
#else
#define WAITERS 2
#define SERVED served[1]
#endif

#define BIT(c) (1 << (c))
#define OWNER(v) ((v) / 16)
#define ALIVE(c) ((c) != GONE)
/* No holder inside its validity: when a timeout may as well come (below). */
#define NOBODY (!valid[1] && !valid[2] && !valid[3])

byte key[N];           /* K: the value that holds it, 0 free */
byte q[N];             /* K:wq: bit c set while client c is registered */
byte msg[NCL * N];     /* a PUBLISH not yet delivered to client c from node i: its tag, 0 none */
bool valid[NCL];       /* holds the lock inside its validity */
bool att[NCL];         /* a round in flight: its keys do not expire yet */
bool waits[NCL];       /* on the client's list of waiters (wake.c) */
bool woken[NCL];
byte spent[NCL];       /* the release whose lock the waiter found taken again */
byte wtag[NCL];        /* the tag of the message that woke it */
bool served[NCL];
bool lapsed;           /* the dead client's registration has lapsed */
bool hback;            /* the holder came back and won */
byte mloss;

hidden byte xm, xh, xi;

inline headof(m, h) {
    if
    :: ((m) & 1) != 0 -> h = 0
    :: ((m) & 1) == 0 && ((m) & 2) != 0 -> h = 1
    :: ((m) & 3) == 0 && ((m) & 4) != 0 -> h = 2
    :: ((m) & 7) == 0 && ((m) & 8) != 0 -> h = 3
    :: (m) == 0 -> h = NONE
    fi
}

inline drop(i, c) {
    q[i] = q[i] & ~BIT(c)
}

/* rl_wake: PUBLISH to the first registration but sk (our own); drop it and try the
 * next while PUBLISH returns 0 (nobody listens). */
inline wakeq(i, sk, tag) {
    do
    :: xm = q[i];
       if :: sk != NONE -> xm = xm & ~BIT(sk) :: else fi;
       headof(xm, xh);
       if
       :: xh == NONE -> break
       :: xh != NONE && ALIVE(xh) -> msg[xh * N + i] = tag; break
       :: xh != NONE && !ALIVE(xh) ->
#ifdef NO_DROP_GONE
          break
#else
          drop(i, xh)
#endif
       fi
    od;
    xm = 0; xh = 0
}

/* rl_purge, run when a registration is added (and by fair mode's check). */
inline purge(i) {
    if :: lapsed -> drop(i, GONE) :: else fi
}

/* rl_script_release on node i: value v, registration m (NONE for ''), wake. */
inline release(i, v, m, wake) {
    if
    :: key[i] == v ->
       key[i] = 0;
       if
       :: q[i] != 0 ->
          if :: m != NONE -> drop(i, m) :: else fi;
          if :: wake -> wakeq(i, m, v) :: else fi
       :: else
       fi
    :: key[i] != v && m != NONE && q[i] != 0 -> drop(i, m)
    :: else
    fi
}

/* rl_script_leave on node i, wake on: the next waiter is told when the lock
 * is free. Its tag: the registration that left. */
inline leave(i, m) {
    drop(i, m);
    if :: key[i] == 0 && q[i] != 0 -> wakeq(i, m, 100 + m) :: else fi
}

/* rl_script_acquire on node i for client c: value v, modes 'j' (always:
 * every client here that runs the script waits with a registration), 'd'
 * when reg, 'f' when FAIR. Granted: bit i of got. A free key kept for the
 * head (fair): kept = 1. */
inline script(i, c, v, reg) {
    xh = NONE;
    if
    :: key[i] == 0 ->
#ifdef FAIR
       if
       :: q[i] != 0 ->
          purge(i);
          do
          :: headof(q[i], xh);
             if
             :: xh == NONE || xh == c -> xh = NONE; break
             :: else ->
                if
                :: ALIVE(xh) -> break    /* blocked: xh is the head */
                :: else ->
#ifdef NO_DROP_GONE
                   break
#else
                   drop(i, xh)
#endif
                fi
             fi
          od
       :: else
       fi;
#endif
       if
       :: xh == NONE ->
          key[i] = v; got = got | BIT(i);
#if !defined(FAIR) || defined(FAIR_DROP)
          if :: reg -> drop(i, c) :: else fi
#endif
       :: else
       fi
    :: else
    fi;
    if
    :: (got & BIT(i)) == 0 ->
       if
       :: (q[i] & BIT(c)) == 0 -> q[i] = q[i] | BIT(c); purge(i)
       :: else
       fi;
       if :: xh != NONE -> kept = 1; wakeq(i, c, v) :: else fi
    :: else
    fi;
    xh = NONE
}

inline setnx(i, v) {
    if :: key[i] == 0 -> key[i] = v; got = got | BIT(i) :: else fi
}

inline count(got, yes) {
    yes = ((got & 1) != 0) + ((got & 2) != 0) + ((got & 4) != 0)
}

inline mutex_check(c) {
    for (xi : 0 .. NCL - 1) {
        assert(xi == c || !valid[xi])
    }
    xi = 0
}

proctype Waiter(byte c) {
    byte v, got, yes, mem;
    bool plain, reg, woke, kept;
    v = c * 16 + 1;
    waits[c] = 1;
    do
    :: atomic {
           got = 0; kept = 0; att[c] = 1; woken[c] = 0;
           if :: plain -> setnx(0, v) :: else -> script(0, c, v, reg) fi
       };
       atomic { if :: plain -> setnx(1, v) :: else -> script(1, c, v, reg) fi };
       atomic {
           if :: plain -> setnx(2, v) :: else -> script(2, c, v, reg) fi;
           count(got, yes);
           reg = reg || !plain;
           if
           :: yes >= Q -> mutex_check(c); valid[c] = 1; served[c] = 1; waits[c] = 0; att[c] = 0; break
           :: else
           fi
       };
       /* lost: the clean-up release where it was granted, waking nobody */
       atomic {
           for (xi : 0 .. N - 1) {
               if :: (got & BIT(xi)) != 0 -> release(xi, v, NONE, 0) :: else fi
           }
           xi = 0;
           if :: woke && yes == 0 -> spent[c] = wtag[c] :: else fi;
           att[c] = 0
       };
       /* the sleep: until woken, or the timeout */
       if
       :: woken[c] -> woke = 1
#ifdef NO_POLL_FALLBACK
       :: (yes > 0 || kept) && NOBODY -> woke = 0    /* retry_delay after a split vote or a kept key */
#else
       :: NOBODY -> woke = 0
#endif
       fi;
#ifdef FAIR
       plain = 0
#else
       plain = woke
#endif
    od;
    /* won: leave the queue where refused, unless won by a plain SET */
    atomic {
        if
        :: !plain ->
           for (xi : 0 .. N - 1) {
               if :: (got & BIT(xi)) == 0 -> leave(xi, c) :: else fi
           }
           xi = 0;
#if !defined(FAIR) || defined(FAIR_DROP)
           reg = 0
#else
           skip   /* kept where granted: the release takes it out */
#endif
        :: else
        fi
    };
    /* the release: the registration dropped where it is left */
    atomic { valid[c] = 0; mem = (reg -> c : NONE); release(0, v, mem, 1) };
    atomic { release(1, v, mem, 1) };
    atomic { release(2, v, mem, 1) }
}

proctype Holder() {
    byte v, r, got, yes, mem = NONE;
    bool kept;
    v = HOLDER * 16 + 1;
#ifdef FAIR
    /* the queue's order is set before the first release */
    (q[0] & WAITERS) == WAITERS && (q[1] & WAITERS) == WAITERS && (q[2] & WAITERS) == WAITERS;
#endif
    do
    :: /* it may overstay: its validity ends, its keys may expire */
#ifdef EXPIRY
       if :: valid[HOLDER] = 0 :: skip fi;
#endif
       atomic { valid[HOLDER] = 0; release(0, v, mem, 1) };
       atomic { release(1, v, mem, 1) };
       atomic { release(2, v, mem, 1) };
       r++;
       if :: r >= R -> break :: else fi;
       /* comes straight back */
       v++;
       atomic {
           got = 0; kept = 0; att[HOLDER] = 1;
#ifdef FAIR
           script(0, HOLDER, v, 0)
#else
           setnx(0, v)
#endif
       };
#ifdef FAIR
       atomic { script(1, HOLDER, v, 0) };
       atomic { script(2, HOLDER, v, 0);
#else
       atomic { setnx(1, v) };
       atomic { setnx(2, v);
#endif
           count(got, yes);
           if
           :: yes >= Q -> mutex_check(HOLDER); valid[HOLDER] = 1; hback = 1; att[HOLDER] = 0
           :: else
           fi
       };
       if
       :: yes >= Q ->
#ifdef FAIR
          atomic {
              for (xi : 0 .. N - 1) {
                  if :: (got & BIT(xi)) == 0 -> leave(xi, HOLDER) :: else fi
              }
              xi = 0
          }
#else
          skip
#endif
       :: else ->
          atomic {
              for (xi : 0 .. N - 1) {
                  if :: (got & BIT(xi)) != 0 -> release(xi, v, NONE, 0) :: else fi
              }
              xi = 0; att[HOLDER] = 0
          };
#ifdef FAIR
          /* gives up: the leave, everywhere */
          atomic {
              for (xi : 0 .. N - 1) { leave(xi, HOLDER) }
              xi = 0
          };
#endif
          break
       fi
    od
}

/* The listeners: a message reaches its client, or is lost. */
inline deliver(c, i) {
    xm = msg[c * N + i]; msg[c * N + i] = 0;
    if
    :: mloss < MLOSS -> mloss++
    :: waits[c] -> if :: xm != spent[c] -> woken[c] = 1; wtag[c] = xm :: else fi
    :: !waits[c] ->
#ifndef NO_STALE_LEAVE
       leave(i, c)
#else
       skip
#endif
    fi;
    xm = 0
}

active proctype Listen() {
end:
    do
    :: atomic { msg[1 * N + 0] != 0 -> deliver(1, 0) }
    :: atomic { msg[1 * N + 1] != 0 -> deliver(1, 1) }
    :: atomic { msg[1 * N + 2] != 0 -> deliver(1, 2) }
    :: atomic { msg[2 * N + 0] != 0 -> deliver(2, 0) }
    :: atomic { msg[2 * N + 1] != 0 -> deliver(2, 1) }
    :: atomic { msg[2 * N + 2] != 0 -> deliver(2, 2) }
    :: atomic { msg[3 * N + 0] != 0 -> deliver(3, 0) }
    :: atomic { msg[3 * N + 1] != 0 -> deliver(3, 1) }
    :: atomic { msg[3 * N + 2] != 0 -> deliver(3, 2) }
    od
}

#ifdef LAPSE
/* The dead client's registration lapses, once. */
active proctype Lapse() {
    !lapsed -> lapsed = 1
}
#endif

#ifdef EXPIRY
#define EXPIRES(i) (key[i] != 0 && !valid[OWNER(key[i])] && !att[OWNER(key[i])])
/* A key whose holder's validity is over expires on its node. */
active proctype Expire() {
end:
    do
    :: atomic { EXPIRES(0) -> key[0] = 0 }
    :: atomic { EXPIRES(1) -> key[1] = 0 }
    :: atomic { EXPIRES(2) -> key[2] = 0 }
    od
}
#endif

init {
    atomic {
        for (xi : 0 .. N - 1) { key[xi] = HOLDER * 16 + 1; q[xi] = BIT(GONE) }
        xi = 0;
        valid[HOLDER] = 1;
        run Holder();
        run Waiter(1);
#if W > 1
        run Waiter(2)
#endif
    }
}

#ifdef FAIR
ltl live { <> SERVED && [] (served[2] -> served[1]) && [] (hback -> served[1]) }
#else
ltl live { <> SERVED }
#endif
