// SPDX-License-Identifier: BSD-3-Clause

// Election.java: leader election (redlock_election): campaign, proclaim, resign,
// leader, observe, and a latch thread with a listener in the spirit of Curator's
// LeaderLatch. The calls into C are in ElectionNative, which SWIG generates.
package io.redlock;

/**
 * One campaigner or observer of a leader election ({@link Redlock#newElection(String)}).
 * {@link #campaign(String, long, long)} waits until this process leads; its term
 * ({@link #term()}) is a fencing token that grows from one leader to the next.
 * {@link #leader()} and {@link #observe(Leader, long)} read the leader from a majority of the
 * nodes. Campaign, proclaim and resign are for one thread at a time; leader, observe,
 * isLeader, term and cancel may be called from another. {@link #start} runs the campaign on a
 * thread of its own and tells a {@link LeaderLatchListener}. {@link #close()}, from any thread,
 * ends a campaign or observe under way at once and frees the handle once they have left it.
 */
public final class Election extends ElectionNative implements AutoCloseable {
  private Thread latch;
  private volatile boolean latchStop;
  // close() waits for the calls under way on other threads (observe, leader...) to leave C
  // before it frees the handle, and refuses new ones: guarded by gate.
  private final Object gate = new Object();
  private int inside;
  private boolean closing;
  // C allows one observe at a time per handle: observers of one Election take turns.
  private final Object observeTurn = new Object();

  Election(long cPtr, boolean cMemoryOwn) {
    super(cPtr, cMemoryOwn);
  }

  /**
   * Waits up to waitMs (Redlock.WAIT_FOREVER, Redlock.WAIT_NONE, or 1 ms to seven days) until
   * this process leads, then writes value with the new term; the leadership (ttlMs) is extended
   * in the background until resign, close or loss. Throws LockTimeoutException,
   * LockNotAcquiredException (one attempt), CancelledException...
   */
  public synchronized void campaign(String value, long ttlMs, long waitMs) {
    if (closingNow()) // close() cancelled the waits; one starting now must not wait
      throw new LockStateException("REDLOCK_ESTATE", "the handle is closed", "the election was closed");
    campaignNative(value, ttlMs, waitMs);
  }

  /** The leader changes its value (same term, next revision). */
  public synchronized void proclaim(String value) {
    proclaimNative(value);
  }

  /** Gives leadership up at once: the next campaigner is woken. Not leading: nothing. */
  public synchronized void resign() {
    resignNative();
  }

  /**
   * Ends a campaign or observe in another thread (CancelledException), until resetCancel. To
   * stop observing for good, close the Election that observes (one of its own, see
   * {@link #observe(Leader, long)}).
   */
  public void cancel() {
    if (enter()) {
      try {
        cancelNative();
      } finally {
        leave();
      }
    }
  }

  public void resetCancel() {
    if (enter()) {
      try {
        resetCancelNative();
      } finally {
        leave();
      }
    }
  }

  /** True while this process leads and its validity has not run out. */
  public boolean isLeader() {
    if (!enter())
      return false;
    try {
      return isLeaderNative();
    } finally {
      leave();
    }
  }

  /** The term of this process's leadership, 0 when not leading. */
  public long term() {
    if (!enter())
      return 0;
    try {
      return termNative();
    } finally {
      leave();
    }
  }

  /** The leader as a majority of the nodes report it (a hint: fence with the term). */
  public Leader leader() {
    enterOrThrow();
    try {
      return Leader.fromLine(leaderLineNative());
    } finally {
      leave();
    }
  }

  /**
   * Waits up to waitMs (Redlock.WAIT_FOREVER, Redlock.WAIT_NONE for one read, or 1 ms to
   * seven days) for the first state after last (terms, then revisions; "none" after a term
   * after its revisions): the new state, or null if the wait ran out, as
   * {@code BlockingQueue.poll} returns null. Start from {@link #leader()}. Never returns a term
   * lower than last's.
   *
   * <p>{@link #close()} from another thread ends the wait at once, with LockStateException (as
   * a WatchService's close ends its take); {@link #cancel()} with CancelledException. An
   * observer usually has an Election of its own ({@code client.newElection(name)}, no network
   * I/O), closed to stop it:
   *
   * <pre>{@code
   * try (Election watch = client.newElection("scheduler")) {
   *   Leader seen = watch.leader();
   *   for (Leader next; (next = watch.observe(seen, 30_000)) != null; seen = next)
   *     System.out.println("now " + next);   // the loop ends after 30 s without a change
   * }
   * }</pre>
   * Observers of one Election take turns (C observes one at a time per handle).
   */
  public Leader observe(Leader last, long waitMs) {
    String from = last == null ? "" : last.toLine();
    enterOrThrow();
    try {
      synchronized (observeTurn) {
        if (closingNow())
          throw closedWhileWaiting();
        String line = observeLineNative(from, waitMs);
        return line == null ? null : Leader.fromLine(line);
      }
    } catch (CancelledException e) {
      if (closingNow())
        throw closedWhileWaiting();
      throw e;
    } finally {
      leave();
    }
  }

  private boolean closingNow() {
    synchronized (gate) {
      return closing;
    }
  }

  private static LockStateException closedWhileWaiting() {
    return new LockStateException("REDLOCK_ESTATE", "the election was closed", "close() ended the observe");
  }

  /** A call into C from any thread: false once closing (the handle is, or is about to be, freed). */
  private boolean enter() {
    synchronized (gate) {
      if (closing || swigCPtr == 0)
        return false;
      inside++;
      return true;
    }
  }

  private void enterOrThrow() {
    if (!enter())
      throw new LockStateException("REDLOCK_ESTATE", "the handle is closed", "the election was closed");
  }

  private void leave() {
    synchronized (gate) {
      if (--inside == 0)
        gate.notifyAll();
    }
  }

  /**
   * Campaigns on a thread of its own, as Curator's LeaderLatch does: listener.isLeader(term)
   * once this process leads, listener.notLeader() when it stops leading (the leadership lost,
   * or {@link #stop()}), then it campaigns again. Loss is seen within a few milliseconds of the
   * library's verdict (the thread looks every 5 ms).
   */
  public synchronized void start(String value, long ttlMs, LeaderLatchListener listener) {
    if (latch != null)
      throw new LockStateException("REDLOCK_ESTATE", "already started", "start() was called before");
    latchStop = false;
    latch = new Thread(() -> {
      while (!latchStop) {
        try {
          campaignNative(value, ttlMs, 1000);
        } catch (LockTimeoutException | LockNotAcquiredException | NoQuorumException e) {
          continue;
        } catch (CancelledException e) {
          break;
        }
        listener.isLeader(termNative());
        while (!latchStop && isLeaderNative()) {
          try {
            Thread.sleep(5);
          } catch (InterruptedException e) {
            latchStop = true;
          }
        }
        listener.notLeader();
        if (latchStop)
          resignNative();
      }
    }, "redlock-election-latch");
    latch.setDaemon(true);
    latch.start();
  }

  /** Stops the latch thread: resigns if leading (notLeader is told), and waits for the thread. */
  public void stop() throws InterruptedException {
    Thread t;
    synchronized (this) {
      t = latch;
      latch = null;
    }
    if (t == null)
      return;
    latchStop = true;
    cancelNative();
    t.join();
    if (!closingNow()) // close() keeps its cancel until the waits under way have left
      resetCancelNative();
  }

  /**
   * Resigns if leading, and frees the handle. Any thread: a campaign or observe under way in
   * another thread ends at once (CancelledException, LockStateException) and the handle is
   * freed once it has left; calls after close throw LockStateException. Idempotent.
   */
  @Override
  public void close() {
    synchronized (gate) {
      if (closing)
        return;
      closing = true;   // first: a campaign or observe starting from now on refuses to wait
      if (swigCPtr != 0)
        cancelNative(); // ends the waits under way, whose threads then let go of the handle
    }
    try {
      stop();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (gate) {
      boolean interrupted = false;
      while (inside > 0) {
        try {
          gate.wait();
        } catch (InterruptedException e) {
          interrupted = true;   // the handle must not be freed under a call: wait on
        }
      }
      if (interrupted)
        Thread.currentThread().interrupt();
    }
    synchronized (this) {   // a campaign, proclaim or resign has returned
      if (swigCPtr != 0) {
        resetCancelNative();   // a release is no wait, but the handle is ours again
        resignNative();
        swigFree();
      }
    }
  }
}
