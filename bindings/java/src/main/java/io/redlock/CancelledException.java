// SPDX-License-Identifier: BSD-3-Clause

// CancelledException.java: The wait was cancelled by Lock.cancel() (REDLOCK_ECANCELED).
package io.redlock;

/** The wait was cancelled by Lock.cancel() (REDLOCK_ECANCELED). */
public class CancelledException extends RedlockException {
  private static final long serialVersionUID = 1L;

  CancelledException(String errorName, String description, String detail) {
    super(RedlockException.ECANCELED, errorName, description, detail);
  }
}
