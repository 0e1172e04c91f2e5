// SPDX-License-Identifier: BSD-3-Clause

// RedlockEvent.java: one event of the metrics hook (redlock_event), delivered
// to the RedlockEventListener of a client's Options.
package io.redlock;

import java.util.List;

/**
 * What happened to one of a client's locks: an acquire attempt, an
 * extension, a loss, a release, one node failing in a round, a waiting
 * acquire woken by a release; or to the client's wake-up listener on one
 * node. Immutable; fields that do not apply to the {@link #type()} are 0 (or
 * -1, null).
 */
public final class RedlockEvent {
  /** The kind of event (redlock_event_type). */
  public enum Type {
    /** An acquire attempt got the lock. */
    ACQUIRED,
    /** An acquire attempt failed ({@link #code()}); a retry may follow. */
    ACQUIRE_FAILED,
    /** Extended, by {@link Lock#extend} or by auto-extend ({@link #isAutomatic()}). */
    EXTENDED,
    /** Not extended, and not (yet) known to be lost, e.g. no quorum. */
    EXTEND_FAILED,
    /** No longer held: not ours on a majority, or its validity ran out without an extension. */
    LOST,
    /** Released while still ours on a majority. */
    RELEASED,
    /** A release not confirmed by a majority ({@link #code()}). */
    RELEASE_FAILED,
    /** One node failed in a round: {@link #node()}, {@link #nodeOutcome()}, {@link #message()}. */
    NODE_ERROR,
    /** A waiting acquire was woken by a release; {@link #node()} is the node whose message woke it. */
    WOKEN,
    /**
     * A node's wake-up listener changed state: {@link #node()}, {@link #listenerState()}, and
     * {@link #message()} (why it is down or refused). The listener is the client's; the change is
     * told to a waiting acquire that saw it, whose {@link #resource()} this is.
     */
    LISTENER,
    /**
     * An acquire call ended, after its last attempt: {@link #code()} (0 when acquired), {@link
     * #attempt()} (the attempts made), {@link #elapsedMicros()} (the whole call, waits included).
     */
    ACQUIRE_DONE,
    /**
     * The client's auto-extension starts extensions late: more locks than the nodes keep up
     * with. {@link #resource()} is the latest lock's, {@link #message()} says how late and how
     * many were due. Told at most once a second, while about half the validity is still left.
     */
    WATCH_BEHIND,
    /**
     * An auto-extended lock has not been extended and its validity ends within the at-risk
     * margin: {@link #code()} is EATRISK, {@link #message()} the last failed try. The lock is
     * still held; a loss or a successful extension follows.
     */
    AT_RISK,
    /** An event type newer than this jar. */
    UNKNOWN;

    static Type fromNative(int type) {
      switch (type) {
        case EventTypeCodes.EVENT_ACQUIRED: return ACQUIRED;
        case EventTypeCodes.EVENT_ACQUIRE_FAILED: return ACQUIRE_FAILED;
        case EventTypeCodes.EVENT_EXTENDED: return EXTENDED;
        case EventTypeCodes.EVENT_EXTEND_FAILED: return EXTEND_FAILED;
        case EventTypeCodes.EVENT_LOST: return LOST;
        case EventTypeCodes.EVENT_RELEASED: return RELEASED;
        case EventTypeCodes.EVENT_RELEASE_FAILED: return RELEASE_FAILED;
        case EventTypeCodes.EVENT_NODE_ERROR: return NODE_ERROR;
        case EventTypeCodes.EVENT_WOKEN: return WOKEN;
        case EventTypeCodes.EVENT_LISTENER: return LISTENER;
        case EventTypeCodes.EVENT_ACQUIRE_DONE: return ACQUIRE_DONE;
        case EventTypeCodes.EVENT_WATCH_BEHIND: return WATCH_BEHIND;
        case EventTypeCodes.EVENT_AT_RISK: return AT_RISK;
        default: return UNKNOWN;
      }
    }
  }

  private final Type type;
  private final int code;
  private final String resource;
  private final String message;
  private final int attempt;
  private final boolean automatic;
  private final int nodesOk;
  private final int quorum;
  private final int nodeCount;
  private final long elapsedMicros;
  private final long validityMs;
  private final long fencingToken;
  private final int node;
  private final String nodeUrl;
  private final NodeResult.Outcome nodeOutcome;
  private final long nodeRttMicros;
  private final ListenerState listenerState;
  private final long heldMicros;
  private final long[] nodeRttsMicros;
  private final List<String> nodeUrls;

  RedlockEvent(Type type, int code, String resource, String message, int attempt, boolean automatic,
      int nodesOk, int quorum, int nodeCount, long elapsedMicros, long validityMs, long fencingToken,
      int node, String nodeUrl, NodeResult.Outcome nodeOutcome, long nodeRttMicros,
      ListenerState listenerState, long heldMicros, long[] nodeRttsMicros, List<String> nodeUrls) {
    this.type = type;
    this.code = code;
    this.resource = resource;
    this.message = message;
    this.attempt = attempt;
    this.automatic = automatic;
    this.nodesOk = nodesOk;
    this.quorum = quorum;
    this.nodeCount = nodeCount;
    this.elapsedMicros = elapsedMicros;
    this.validityMs = validityMs;
    this.fencingToken = fencingToken;
    this.node = node;
    this.nodeUrl = nodeUrl;
    this.nodeOutcome = nodeOutcome;
    this.nodeRttMicros = nodeRttMicros;
    this.listenerState = listenerState;
    this.heldMicros = heldMicros;
    this.nodeRttsMicros = nodeRttsMicros;
    this.nodeUrls = nodeUrls;
  }

  public Type type() {
    return type;
  }

  /** 0, or the REDLOCK_E* code of the failure or loss (constants on {@link RedlockException}). */
  public int code() {
    return code;
  }

  /** The resource of the lock concerned. */
  public String resource() {
    return resource;
  }

  /** The detail (which nodes said what); "" when none. */
  public String message() {
    return message;
  }

  /**
   * ACQUIRED, ACQUIRE_FAILED: 1 for a call's first attempt, then 2, 3...; ACQUIRE_DONE: the attempts
   * the call made (0 if none, e.g. bad arguments); else 0.
   */
  public int attempt() {
    return attempt;
  }

  /** Whether the client's auto-extend thread did it. */
  public boolean isAutomatic() {
    return automatic;
  }

  /** How many nodes said OK in the round. */
  public int nodesOk() {
    return nodesOk;
  }

  /** How many nodes a majority needs. */
  public int quorum() {
    return quorum;
  }

  /** How many nodes the client has. */
  public int nodeCount() {
    return nodeCount;
  }

  /**
   * The round's duration (for ACQUIRED, the whole attempt; for ACQUIRE_DONE, the whole call, waits
   * included), in microseconds.
   */
  public long elapsedMicros() {
    return elapsedMicros;
  }

  /** ACQUIRED, EXTENDED: the validity then left, in ms; else 0. */
  public long validityMs() {
    return validityMs;
  }

  /** ACQUIRED with {@link Options#setFencing(boolean)}: the fencing token; else 0. */
  public long fencingToken() {
    return fencingToken;
  }

  /** NODE_ERROR, WOKEN, LISTENER: the node's index in the client's node list; else -1. */
  public int node() {
    return node;
  }

  /** NODE_ERROR, WOKEN, LISTENER: the node's URL (password masked); else null. */
  public String nodeUrl() {
    return nodeUrl;
  }

  /** NODE_ERROR: what the node did; else null. */
  public NodeResult.Outcome nodeOutcome() {
    return nodeOutcome;
  }

  /** NODE_ERROR: microseconds from the round's start to the node's failure; else 0. */
  public long nodeRttMicros() {
    return nodeRttMicros;
  }

  /** LISTENER: the node's new listener state; else null. */
  public ListenerState listenerState() {
    return listenerState;
  }

  /**
   * RELEASED, RELEASE_FAILED, LOST: how long the lock was held, from its acquiring round's start, in
   * microseconds; 0 on a second report of the same hold (a lost lock then released), and for other
   * events.
   */
  public long heldMicros() {
    return heldMicros;
  }

  /**
   * The events of a round (ACQUIRED, ACQUIRE_FAILED, EXTENDED, EXTEND_FAILED, RELEASED,
   * RELEASE_FAILED, LOST by a release): each node's round-trip time in microseconds, in the order
   * of {@link #nodeUrls()}, -1 for a node whose reply did not arrive (not sent, down, timed out,
   * I/O failure, not waited for); null for other events. A copy.
   */
  public long[] nodeRttsMicros() {
    return nodeRttsMicros == null ? null : nodeRttsMicros.clone();
  }

  /**
   * With {@link #nodeRttsMicros()}: the client's node URLs (passwords masked), in the same order;
   * null for other events.
   */
  public List<String> nodeUrls() {
    return nodeUrls;
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("RedlockEvent[").append(type).append(' ').append(resource);
    if (code != 0)
      b.append(" code=").append(code);
    if (automatic)
      b.append(" automatic");
    if (attempt != 0)
      b.append(" attempt=").append(attempt);
    if (type == Type.NODE_ERROR)
      b.append(" node=").append(node).append(' ').append(nodeUrl).append(' ').append(nodeOutcome);
    else if (type == Type.LISTENER)
      b.append(" node=").append(node).append(' ').append(nodeUrl).append(' ').append(listenerState);
    else if (type == Type.WOKEN)
      b.append(" node=").append(node).append(' ').append(nodeUrl);
    else
      b.append(" ok=").append(nodesOk).append('/').append(nodeCount);
    if (fencingToken != 0)
      b.append(" token=").append(fencingToken);
    if (!message.isEmpty())
      b.append(": ").append(message);
    return b.append(']').toString();
  }
}
