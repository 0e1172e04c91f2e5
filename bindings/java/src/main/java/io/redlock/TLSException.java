// SPDX-License-Identifier: BSD-3-Clause

// TLSException.java: A TLS failure (REDLOCK_ETLS).
package io.redlock;

/** A TLS failure (REDLOCK_ETLS). */
public class TLSException extends RedlockException {
  private static final long serialVersionUID = 1L;

  TLSException(String errorName, String description, String detail) {
    super(RedlockException.ETLS, errorName, description, detail);
  }
}
