// SPDX-License-Identifier: BSD-3-Clause

// LockExpiredException.java: The lock's validity ran out (REDLOCK_EEXPIRED).
package io.redlock;

/** The lock's validity ran out (REDLOCK_EEXPIRED). */
public class LockExpiredException extends RedlockException {
  private static final long serialVersionUID = 1L;

  LockExpiredException(String errorName, String description, String detail) {
    super(RedlockException.EEXPIRED, errorName, description, detail);
  }
}
