// SPDX-License-Identifier: BSD-3-Clause

// LockTimeoutException.java: The wait for the lock ran out (REDLOCK_ETIMEDOUT).
package io.redlock;

/** The wait for the lock ran out (REDLOCK_ETIMEDOUT). */
public class LockTimeoutException extends RedlockException {
  private static final long serialVersionUID = 1L;

  LockTimeoutException(String errorName, String description, String detail) {
    super(RedlockException.ETIMEDOUT, errorName, description, detail);
  }
}
