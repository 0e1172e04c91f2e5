// SPDX-License-Identifier: BSD-3-Clause

// LockLostException.java: The lock was no longer ours on a majority of nodes: expired or taken over (REDLOCK_ELOST).
package io.redlock;

/** The lock was no longer ours on a majority of nodes: expired or taken over (REDLOCK_ELOST). */
public class LockLostException extends RedlockException {
  private static final long serialVersionUID = 1L;

  LockLostException(String errorName, String description, String detail) {
    super(RedlockException.ELOST, errorName, description, detail);
  }
}
