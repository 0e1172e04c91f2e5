// SPDX-License-Identifier: BSD-3-Clause

// PermissionDeniedException.java: a node refused a command the lock needs (REDLOCK_EPERM).
package io.redlock;

/**
 * A node refused a command the lock needs (REDLOCK_EPERM): its ACL user lacks
 * it (NOPERM), or the command is disabled or renamed there. The client finds
 * out on connecting, before it takes a lock it could not release or extend.
 * The message names the node and the command. Waiting does not help, so a
 * wait ends at once when the refusing nodes alone rule a quorum out.
 */
public class PermissionDeniedException extends RedlockException {
  private static final long serialVersionUID = 1L;

  PermissionDeniedException(String errorName, String description, String detail) {
    super(RedlockException.EPERM, errorName, description, detail);
  }
}
