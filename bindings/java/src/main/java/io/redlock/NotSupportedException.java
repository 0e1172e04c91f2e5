// SPDX-License-Identifier: BSD-3-Clause

// NotSupportedException.java: Not supported, for example a rediss:// URL (REDLOCK_ENOTSUP).
package io.redlock;

/** Not supported, for example a rediss:// URL (REDLOCK_ENOTSUP). */
public class NotSupportedException extends RedlockException {
  private static final long serialVersionUID = 1L;

  NotSupportedException(String errorName, String description, String detail) {
    super(RedlockException.ENOTSUP, errorName, description, detail);
  }
}
