// SPDX-License-Identifier: BSD-3-Clause

// NodesUnreachableException.java: a waiting acquire found no quorum of nodes
// reachable for Options.setUnreachableMs (REDLOCK_EUNREACHABLE).
package io.redlock;

/**
 * A waiting acquire gave up because no quorum of nodes could be reached
 * (connections refused, host names that do not resolve, connects timing out)
 * for {@link Options#setUnreachableMs(long)} (REDLOCK_EUNREACHABLE): typically
 * a wrong port or host name, or nodes that are down. The message names each
 * node and what it said. A lock held by someone else never causes it: that
 * wait goes on and ends in {@link LockTimeoutException}.
 *
 * <p>A {@link NoQuorumException}, so code that handles "too few nodes" handles
 * this too, as Python's NodesUnreachable is a QuorumError; {@link #getCode()}
 * is {@link #EUNREACHABLE}.
 */
public class NodesUnreachableException extends NoQuorumException {
  private static final long serialVersionUID = 1L;

  NodesUnreachableException(String errorName, String description, String detail) {
    super(RedlockException.EUNREACHABLE, errorName, description, detail);
  }
}
