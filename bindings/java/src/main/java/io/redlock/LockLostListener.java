// SPDX-License-Identifier: BSD-3-Clause

// LockLostListener.java: told when an auto-extended lock is at risk or lost
// (redlock_lost_fn, armed by redlock_lock_auto_extend); given to
// Lock.autoExtend.
package io.redlock;

/**
 * Told, at most once per {@link Lock#autoExtend(long, LockLostListener)}, that
 * the lock was lost: {@code cause} is a {@link LockLostException} (no longer
 * ours on a majority), a {@link LockExpiredException} (its validity ran out
 * before an extension succeeded) or an {@link ExtensionLimitException} (the
 * hold bound was reached and the validity then ran out).
 *
 * <p>Before that, {@link #onAtRisk} is told that the lock is at risk: no
 * extension has succeeded and its validity ends within the margin,
 * max(TTL / 10, 2 &times; the node timeout). The lock is still held then, so
 * that the work it guards can stop in time; by {@link #lockLost} another
 * owner may already hold it.
 *
 * <p>Runs on the binding's "redlock-lost-listener" thread, one listener at a
 * time, shortly after the loss, so it may call any method of the lock
 * (including {@code close()}) and may block briefly; a long task should be
 * handed to an executor of your own. It can run after the lock was closed.
 * An exception it throws goes to that thread's uncaught-exception handler.
 */
@FunctionalInterface
public interface LockLostListener {
  void lockLost(Lock lock, RedlockException cause);

  /**
   * The lock is at risk (the C library's REDLOCK_EATRISK notice): not
   * extended, and its validity ends within the margin; it is still held, and
   * auto-extension keeps trying. A loss ({@link #lockLost}) may follow, or a
   * successful extension, after which a later episode is told again. Stop
   * the work the lock guards now. {@code message} says why and how much
   * validity is left. Runs as {@link #lockLost} does, before it. The default
   * does nothing, so listeners written for losses only are unchanged.
   */
  default void onAtRisk(Lock lock, String message) {}
}
