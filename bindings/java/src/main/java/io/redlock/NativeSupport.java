// NativeSupport.java: loads the JNI library and owns the C handles behind the
// SWIG proxies (freed by close() or, if forgotten, by a Cleaner), plus UTF-8.
package io.redlock;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.function.LongConsumer;

final class NativeSupport {
  private NativeSupport() {}

  /** System property naming the JNI library file; otherwise java.library.path is searched. */
  static final String LIBRARY_PROPERTY = "io.redlock.library";

  static void loadLibrary() {
    String path = System.getProperty(LIBRARY_PROPERTY);
    if (path != null && !path.isEmpty())
      System.load(path);
    else
      System.loadLibrary("redlockjni");
  }

  // One daemon thread for the whole library. Its actions only free memory
  // (redlock_lock_free never does network I/O), so a lock whose handle is
  // collected while held is simply left to expire on the servers.
  private static final Cleaner CLEANER = Cleaner.create();

  /** Owns one C pointer; frees it at most once, explicitly or when the proxy is collected. */
  static final class Handle {
    private final Free free;
    private final Cleaner.Cleanable cleanable;

    private Handle(Object proxy, long ptr, LongConsumer deleter) {
      free = new Free(ptr, deleter);
      cleanable = CLEANER.register(proxy, free);
    }

    /** Frees the C object now (no-op the second time). */
    void free() {
      cleanable.clean();
    }

    /** The C side already freed the object: only drop the registration. */
    void forget() {
      free.forget();
      cleanable.clean();
    }
  }

  // Must not refer to the proxy, or the proxy would never become unreachable.
  private static final class Free implements Runnable {
    private long ptr;
    private final LongConsumer deleter;

    Free(long ptr, LongConsumer deleter) {
      this.ptr = ptr;
      this.deleter = deleter;
    }

    synchronized void forget() {
      ptr = 0;
    }

    @Override
    public synchronized void run() {
      long p = ptr;
      ptr = 0;
      if (p != 0)
        deleter.accept(p);
    }
  }

  static Handle own(Object proxy, long ptr, LongConsumer deleter) {
    return ptr == 0 ? null : new Handle(proxy, ptr, deleter);
  }

  // Strings cross JNI as real UTF-8 bytes so a resource gives the same Redis
  // key as from the C, Python and Go bindings.
  static byte[] utf8(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  static byte[][] utf8All(String[] a) {
    if (a == null)
      return null;
    byte[][] out = new byte[a.length][];
    for (int i = 0; i < a.length; i++)
      out[i] = utf8(a[i]); // null stays null: the C library rejects it
    return out;
  }

  static String string(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }
}
