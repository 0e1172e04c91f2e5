// SPDX-License-Identifier: BSD-3-Clause

// RedlockIOException.java: An I/O error talking to the nodes (REDLOCK_EIO).
package io.redlock;

/** An I/O error talking to the nodes (REDLOCK_EIO). */
public class RedlockIOException extends RedlockException {
  private static final long serialVersionUID = 1L;

  RedlockIOException(String errorName, String description, String detail) {
    super(RedlockException.EIO, errorName, description, detail);
  }
}
