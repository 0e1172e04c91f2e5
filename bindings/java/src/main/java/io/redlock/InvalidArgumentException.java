// SPDX-License-Identifier: BSD-3-Clause

// InvalidArgumentException.java: A bad argument: null or empty resource, TTL out of range, malformed or duplicate node URL (REDLOCK_EINVAL).
package io.redlock;

/** A bad argument: null or empty resource, TTL out of range, malformed or duplicate node URL (REDLOCK_EINVAL). */
public class InvalidArgumentException extends RedlockException {
  private static final long serialVersionUID = 1L;

  InvalidArgumentException(String errorName, String description, String detail) {
    super(RedlockException.EINVAL, errorName, description, detail);
  }
}
