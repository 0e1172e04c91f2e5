// SPDX-License-Identifier: BSD-3-Clause

// NativeHandle.java: the C pointer behind each class that SWIG generates
// (RedlockNative, LockNative, OptionsNative, LockOptionsNative), freed at most
// once: by close()/free(), or by a Cleaner if the program forgets (memory
// only, never network I/O, like redlock_lock_free itself). No finalize().
package io.redlock;

import java.util.function.LongConsumer;

abstract class NativeHandle {
  // 0 once closed: the generated methods pass it to C, which throws
  // LockStateException for a closed handle.
  transient volatile long swigCPtr;
  final transient NativeSupport.Handle swigHandle;

  NativeHandle(long cPtr, boolean cMemoryOwn, LongConsumer deleter) {
    swigCPtr = cPtr;
    swigHandle = cMemoryOwn ? NativeSupport.own(this, cPtr, deleter) : null;
  }

  static long getCPtr(NativeHandle obj) {
    return (obj == null) ? 0 : obj.swigCPtr;
  }

  // Options given to C after free() must not silently mean "the defaults"
  // or "none" (a NULL pointer).
  static long getCPtrChecked(NativeHandle obj, String what) {
    if (obj == null)
      return 0;
    long p = obj.swigCPtr;
    if (p == 0)
      throw new LockStateException("REDLOCK_ESTATE", "the handle is closed", "these " + what + " were freed");
    return p;
  }

  /** Frees the C object now (at most once) and leaves a closed handle behind. */
  final void swigFree() {
    swigCPtr = 0;
    if (swigHandle != null)
      swigHandle.free();
  }

  /** The C side already freed the object (Lock.close): only forgets it. */
  final void swigForget() {
    swigCPtr = 0;
    if (swigHandle != null)
      swigHandle.forget();
  }
}
