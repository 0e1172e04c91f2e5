// SPDX-License-Identifier: BSD-3-Clause

// LockLostListener.java: told when an auto-extended lock is lost
// (redlock_lost_fn); given to Lock.autoExtend.
package io.redlock;

/**
 * Told, at most once per {@link Lock#autoExtend(long, LockLostListener)}, that
 * the lock was lost: {@code cause} is a {@link LockLostException} (no longer
 * ours on a majority), a {@link LockExpiredException} (its validity ran out
 * before an extension succeeded) or an {@link ExtensionLimitException} (the
 * hold bound was reached and the validity then ran out).
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
}
