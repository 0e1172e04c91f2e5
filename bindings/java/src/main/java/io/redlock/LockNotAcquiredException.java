// SPDX-License-Identifier: BSD-3-Clause

// LockNotAcquiredException.java: Another owner holds the lock (REDLOCK_ENOTACQUIRED).
package io.redlock;

/** Another owner holds the lock (REDLOCK_ENOTACQUIRED). */
public class LockNotAcquiredException extends RedlockException {
  private static final long serialVersionUID = 1L;

  LockNotAcquiredException(String errorName, String description, String detail) {
    super(RedlockException.ENOTACQUIRED, errorName, description, detail);
  }
}
