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

  /**
   * Called once at the end of every acquire call on a {@link Lock} of a client created with this
   * listener ({@link Lock#acquire}, {@link Lock#tryAcquire}, {@link Redlock#acquire}...), after
   * the events of its attempts, on the caller's thread: the call's result ({@code code} 0, or the
   * REDLOCK_E* code it threw, e.g. {@link RedlockException#ETIMEDOUT} for a wait that ran out) and
   * its duration. The C hook has attempts only; this is where a call's outcome, duration and
   * number of attempts (the attempt events on this thread since the previous call) can be
   * measured. It runs inside the call, which holds the lock's monitor on this thread: the lock's
   * read-only methods ({@link Lock#resource()}, {@link Lock#isHeld()}, {@link Lock#nodeResults()})
   * may be called; nothing else of the lock. An exception it throws goes to the thread's
   * uncaught-exception handler. The default does nothing.
   */
  default void onAcquireDone(Lock lock, int code, long durationNanos) {}
}
