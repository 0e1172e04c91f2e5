// SPDX-License-Identifier: BSD-3-Clause

// FencedException.java: a fenced write refused by the store (REDLOCK_EFENCED), naming both tokens.
package io.redlock;

/**
 * The store refused a {@link Fence} write: its token is older than the resource's fence, the
 * highest token a write to it has carried, so a later holder has written (REDLOCK_EFENCED).
 * Nothing was written. Both tokens are unsigned 64-bit values in a {@code long}, as
 * {@link Lock#fencingToken()}: read them with {@link Long#toUnsignedString(long)} or
 * {@link Long#compareUnsigned(long, long)}.
 */
public class FencedException extends RedlockException {
  private static final long serialVersionUID = 1L;

  private final String resource;
  private final long token;
  private final long fence;

  FencedException(String resource, long token, long fence, String reply) {
    super(RedlockException.EFENCED, "REDLOCK_EFENCED",
        "the store refused a write: its token is older than the fence",
        "'" + resource + "': token " + Long.toUnsignedString(token) + " is older than "
            + Long.toUnsignedString(fence) + ", the highest this resource has seen: a later holder has written"
            + " (" + reply + ")");
    this.resource = resource;
    this.token = token;
    this.fence = fence;
  }

  /** The resource whose fence refused the write. */
  public String getResource() {
    return resource;
  }

  /** The refused write's token (unsigned). */
  public long getToken() {
    return token;
  }

  /** The resource's fence when the write was refused (unsigned), above {@link #getToken()}. */
  public long getFence() {
    return fence;
  }
}
