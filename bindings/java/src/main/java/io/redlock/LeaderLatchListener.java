// SPDX-License-Identifier: BSD-3-Clause

// LeaderLatchListener.java: told when this process becomes leader and when it stops
// being leader, in the spirit of Curator's LeaderLatchListener.
package io.redlock;

/**
 * Told by {@link Election#start(String, long, LeaderLatchListener)}'s thread, one call at a time:
 * {@link #isLeader(long)} when this process leads (with the term, a fencing token to pass with
 * every write), {@link #notLeader()} as soon as it no longer does (lost, or stopped). Stop acting
 * as leader before notLeader returns.
 */
public interface LeaderLatchListener {
  void isLeader(long term);

  void notLeader();
}
