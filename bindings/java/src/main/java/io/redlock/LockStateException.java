// SPDX-License-Identifier: BSD-3-Clause

// LockStateException.java: The call does not fit the handle's state: releasing a lock not held, or using a closed handle (REDLOCK_ESTATE).
package io.redlock;

/** The call does not fit the handle's state: releasing a lock not held, or using a closed handle (REDLOCK_ESTATE). */
public class LockStateException extends RedlockException {
  private static final long serialVersionUID = 1L;

  LockStateException(String errorName, String description, String detail) {
    super(RedlockException.ESTATE, errorName, description, detail);
  }
}
