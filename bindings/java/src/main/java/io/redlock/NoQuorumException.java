// SPDX-License-Identifier: BSD-3-Clause

// NoQuorumException.java: Too few nodes answered to decide (REDLOCK_ENOQUORUM).
package io.redlock;

/** Too few nodes answered to decide (REDLOCK_ENOQUORUM). */
public class NoQuorumException extends RedlockException {
  private static final long serialVersionUID = 1L;

  NoQuorumException(String errorName, String description, String detail) {
    super(RedlockException.ENOQUORUM, errorName, description, detail);
  }

  // For NodesUnreachableException: no quorum, for a reason with its own code.
  NoQuorumException(int code, String errorName, String description, String detail) {
    super(code, errorName, description, detail);
  }
}
