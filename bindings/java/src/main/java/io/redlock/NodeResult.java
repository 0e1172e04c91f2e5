// SPDX-License-Identifier: BSD-3-Clause

// NodeResult.java: what one node did in a lock's last round
// (redlock_lock_node_result), as returned by Lock.nodeResults().
package io.redlock;

import java.util.Objects;

/**
 * What one node did in a lock's last round: the last attempt of an acquire
 * (or its token round, with fencing), an extension by the owner or by
 * auto-extend, or a release. Immutable.
 */
public final class NodeResult {
  /** The node's part in the round (redlock_node_outcome). */
  public enum Outcome {
    /** Not contacted: no round yet, or skipped. */
    NONE,
    /** Granted or confirmed. */
    OK,
    /** Held by another owner, or no longer ours. */
    REFUSED,
    /** Error reply, I/O, authentication or TLS failure: see {@link #code()} and {@link #message()}. */
    ERROR,
    /** No reply before the node's deadline. */
    TIMEOUT,
    /** Skipped: in reconnect backoff after failing to connect. */
    DOWN,
    /** Sent, but the round was decided without its reply. */
    NOT_WAITED,
    /** Out of the vote: it may have lost its keys, or its clock jumped (Options.setQuarantine). */
    QUARANTINED,
    /** An outcome newer than this jar. */
    UNKNOWN;

    static Outcome fromNative(int outcome) {
      switch (outcome) {
        case NodeOutcomeCodes.NODE_NONE: return NONE;
        case NodeOutcomeCodes.NODE_OK: return OK;
        case NodeOutcomeCodes.NODE_REFUSED: return REFUSED;
        case NodeOutcomeCodes.NODE_ERROR: return ERROR;
        case NodeOutcomeCodes.NODE_TIMEOUT: return TIMEOUT;
        case NodeOutcomeCodes.NODE_DOWN: return DOWN;
        case NodeOutcomeCodes.NODE_NOT_WAITED: return NOT_WAITED;
        case NodeOutcomeCodes.NODE_QUARANTINED: return QUARANTINED;
        default: return UNKNOWN;
      }
    }
  }

  private final int index;
  private final String url;
  private final Outcome outcome;
  private final int code;
  private final long rttMicros;
  private final String message;

  NodeResult(int index, String url, Outcome outcome, int code, long rttMicros, String message) {
    this.index = index;
    this.url = url;
    this.outcome = outcome;
    this.code = code;
    this.rttMicros = rttMicros;
    this.message = message;
  }

  /** The node's position in the client's node list. */
  public int index() {
    return index;
  }

  /** The node's URL as given to the client, with any password masked. */
  public String url() {
    return url;
  }

  public Outcome outcome() {
    return outcome;
  }

  /**
   * The REDLOCK_E* code of a failure ({@link RedlockException#ESERVER}, {@code EIO},
   * {@code EAUTH}, {@code ETLS}, {@code ETIMEDOUT}), else 0.
   */
  public int code() {
    return code;
  }

  /** Microseconds from the round's start to the node's answer or failure; 0 when it had none. */
  public long rttMicros() {
    return rttMicros;
  }

  /** The node's detail, e.g. the server's error reply; "" when none. */
  public String message() {
    return message;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof NodeResult))
      return false;
    NodeResult r = (NodeResult) o;
    return index == r.index && url.equals(r.url) && outcome == r.outcome && code == r.code
        && rttMicros == r.rttMicros && message.equals(r.message);
  }

  @Override
  public int hashCode() {
    return Objects.hash(index, url, outcome, code, rttMicros, message);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder().append(url).append(": ").append(outcome);
    if (outcome != Outcome.NONE && outcome != Outcome.NOT_WAITED && outcome != Outcome.DOWN)
      b.append(" in ").append(rttMicros).append(" us");
    if (code != 0)
      b.append(" (code ").append(code).append(')');
    if (!message.isEmpty())
      b.append(": ").append(message);
    return b.toString();
  }
}
