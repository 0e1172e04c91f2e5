// SPDX-License-Identifier: BSD-3-Clause

// RedlockEventListener.java: the metrics hook (redlock_options.on_event) as a
// Java functional interface; set with Options.setEventListener.
package io.redlock;

/**
 * Told about every acquire attempt, extension, loss, release and node failure
 * of a client's locks. Called synchronously on the thread that ran the round:
 * the caller's thread inside a {@link Lock} method, or the client's
 * auto-extend thread. It must therefore be thread-safe and quick, and must not
 * call methods of a {@link Lock}: on the auto-extend thread, the owner's
 * thread may hold the lock's monitor while it waits for the extension that
 * is calling the listener, so such a call can deadlock. An exception it throws goes to the thread's uncaught-exception
 * handler and does not affect the lock.
 */
@FunctionalInterface
public interface RedlockEventListener {
  void onEvent(RedlockEvent event);
}
