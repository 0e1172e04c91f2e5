// SPDX-License-Identifier: BSD-3-Clause

// ListenerState.java: the state of a client's wake-up listener on one node
// (redlock_listener_state), from Redlock.listenerState and RedlockEvent.
package io.redlock;

/**
 * The state of the connection on which a client hears releases on one node,
 * so that a waiting acquire is woken at once instead of at its next retry
 * ({@link Options#setWake(boolean)}).
 */
public enum ListenerState {
  /** Not started: no waiting acquire yet, or wake-up off. */
  OFF,
  /** Connecting, authenticating or subscribing. */
  CONNECTING,
  /** Subscribed: a release on this node wakes the client's waiters. */
  READY,
  /** Failed; reconnecting with backoff. Waiters poll meanwhile. */
  DOWN,
  /** The node refused SUBSCRIBE (an ACL without the channel {@code &redlock:wake:*}); waiters poll. */
  REFUSED,
  /** A state newer than this jar. */
  UNKNOWN;

  static ListenerState fromNative(int state) {
    switch (state) {
      case ListenerStateCodes.LISTENER_OFF: return OFF;
      case ListenerStateCodes.LISTENER_CONNECTING: return CONNECTING;
      case ListenerStateCodes.LISTENER_READY: return READY;
      case ListenerStateCodes.LISTENER_DOWN: return DOWN;
      case ListenerStateCodes.LISTENER_REFUSED: return REFUSED;
      default: return UNKNOWN;
    }
  }
}
