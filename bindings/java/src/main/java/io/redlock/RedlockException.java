// SPDX-License-Identifier: BSD-3-Clause

// RedlockException.java: the base of every error the Java binding raises; one
// subclass per REDLOCK_E* code, carrying the code and the C library's detail.
package io.redlock;

import java.nio.charset.StandardCharsets;

/**
 * A failed redlock call. Unchecked: most lock failures (no quorum, contention,
 * a lost lock) cannot be handled where they occur, and a checked exception on
 * {@link Lock#close()} would burden every try-with-resources block. Catch a
 * subclass such as {@link LockNotAcquiredException} for the cases you handle.
 */
public class RedlockException extends ErrorCodes {
  private static final long serialVersionUID = 1L;

  // The C library's error codes (redlock_error_code in redlock.h), EINVAL to
  // the last one appended, are inherited: ErrorCodes is generated from the
  // header (bindings/swig/java/redlock_java.i), so RedlockException.ELOST and
  // any newer code are compile-time constants without a copy here.

  private final int code;
  private final String errorName;
  private final String detail;

  RedlockException(int code, String errorName, String description, String detail) {
    super(detail.isEmpty() ? description : detail);
    this.code = code;
    this.errorName = errorName;
    this.detail = detail;
  }

  /** The negative REDLOCK_E* code, e.g. {@link #ENOQUORUM}. */
  public int getCode() {
    return code;
  }

  /** The C name of the code, e.g. "REDLOCK_ENOQUORUM". */
  public String getErrorName() {
    return errorName;
  }

  /**
   * The C library's detail (which nodes said what), or "" when it gave none;
   * the message is this detail, or the code's generic text when there is none.
   */
  public String getDetail() {
    return detail;
  }

  // Called from the JNI wrapper (rl_java_throw in bindings/swig/java/redlock_jni.c);
  // the strings arrive as UTF-8 bytes. A code without a subclass here (ENOMEM,
  // or one newer than this class) is a plain RedlockException with the C
  // library's name and text for it.
  static RedlockException fromNative(int code, byte[] name, byte[] description, byte[] detail) {
    String n = new String(name, StandardCharsets.UTF_8);
    String t = new String(description, StandardCharsets.UTF_8);
    String d = new String(detail, StandardCharsets.UTF_8);
    switch (code) {
      case EINVAL: return new InvalidArgumentException(n, t, d);
      case ENOTACQUIRED: return new LockNotAcquiredException(n, t, d);
      case ENOQUORUM: return new NoQuorumException(n, t, d);
      case EEXPIRED: return new LockExpiredException(n, t, d);
      case ELOST: return new LockLostException(n, t, d);
      case ETIMEDOUT: return new LockTimeoutException(n, t, d);
      case EIO: return new RedlockIOException(n, t, d);
      case ESERVER: return new ServerException(n, t, d);
      case EAUTH: return new AuthException(n, t, d);
      case ETLS: return new TLSException(n, t, d);
      case ENOTSUP: return new NotSupportedException(n, t, d);
      case ECANCELED: return new CancelledException(n, t, d);
      case ELIMIT: return new ExtensionLimitException(n, t, d);
      case ESTATE: return new LockStateException(n, t, d);
      case EUNREACHABLE: return new NodesUnreachableException(n, t, d);
      case EPERM: return new PermissionDeniedException(n, t, d);
      default: return new RedlockException(code, n, t, d);
    }
  }
}
