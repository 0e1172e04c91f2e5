// SPDX-License-Identifier: BSD-3-Clause

// ServerException.java: A node replied with an error such as READONLY or OOM (REDLOCK_ESERVER).
package io.redlock;

/** A node replied with an error such as READONLY or OOM (REDLOCK_ESERVER); a refused command is {@link PermissionDeniedException}. */
public class ServerException extends RedlockException {
  private static final long serialVersionUID = 1L;

  ServerException(String errorName, String description, String detail) {
    super(RedlockException.ESERVER, errorName, description, detail);
  }
}
