// SPDX-License-Identifier: BSD-3-Clause

// AuthException.java: Authentication to a node failed (REDLOCK_EAUTH).
package io.redlock;

/** Authentication to a node failed (REDLOCK_EAUTH). */
public class AuthException extends RedlockException {
  private static final long serialVersionUID = 1L;

  AuthException(String errorName, String description, String detail) {
    super(RedlockException.EAUTH, errorName, description, detail);
  }
}
