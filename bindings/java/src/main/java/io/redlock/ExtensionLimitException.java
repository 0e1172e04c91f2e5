// SPDX-License-Identifier: BSD-3-Clause

// ExtensionLimitException.java: The extension bound was reached (Options maxExtensions or maxHoldMs) (REDLOCK_ELIMIT).
package io.redlock;

/** The extension bound was reached (Options maxExtensions or maxHoldMs) (REDLOCK_ELIMIT). */
public class ExtensionLimitException extends RedlockException {
  private static final long serialVersionUID = 1L;

  ExtensionLimitException(String errorName, String description, String detail) {
    super(RedlockException.ELIMIT, errorName, description, detail);
  }
}
