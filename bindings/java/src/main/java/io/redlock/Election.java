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
 * thread of its own and tells a {@link LeaderLatchListener}.
 */
public final class Election extends ElectionNative implements AutoCloseable {
  private Thread latch;
  private volatile boolean latchStop;

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

  /** Ends a campaign or observe in another thread (CancelledException), until resetCancel. */
  public void cancel() {
    cancelNative();
  }

  public void resetCancel() {
    resetCancelNative();
  }

  /** True while this process leads and its validity has not run out. */
  public boolean isLeader() {
    return isLeaderNative();
  }

  /** The term of this process's leadership, 0 when not leading. */
  public long term() {
    return termNative();
  }

  /** The leader as a majority of the nodes report it (a hint: fence with the term). */
  public Leader leader() {
    return Leader.fromLine(leaderLineNative());
  }

  /**
   * Waits up to waitMs for the first state after last (terms, then revisions; "none" after a
   * term after its revisions): the new state, or null if the wait ran out. Start from
   * {@link #leader()}. Never returns a term lower than last's.
   */
  public Leader observe(Leader last, long waitMs) {
    String line = observeLineNative(last == null ? "" : last.toLine(), waitMs);
    return line == null ? null : Leader.fromLine(line);
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
    resetCancelNative();
  }

  /** Resigns if leading, and frees the handle. Idempotent. */
  @Override
  public void close() {
    try {
      stop();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (this) {
      if (swigCPtr != 0) {
        resignNative();
        swigFree();
      }
    }
  }
}
