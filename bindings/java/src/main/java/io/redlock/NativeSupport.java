// SPDX-License-Identifier: BSD-3-Clause

// NativeSupport.java: loads the JNI library (the jar's own copy, else an
// installed one), owns the C handles behind the SWIG proxies (freed by
// close() or, if forgotten, by a Cleaner), and converts strings to UTF-8.
package io.redlock;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Cleaner;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.function.LongConsumer;

final class NativeSupport {
  private NativeSupport() {}

  /** System property naming the JNI library file; it then is the only one tried. */
  static final String LIBRARY_PROPERTY = "io.redlock.library";
  /** System property naming where the jar's library is extracted (default java.io.tmpdir). */
  static final String TMPDIR_PROPERTY = "io.redlock.tmpdir";

  /**
   * Loads libredlockjni: the file named by io.redlock.library; else the
   * self-contained copy the jar carries for this platform
   * (/native/&lt;os&gt;-&lt;arch&gt;/), extracted to a private temporary directory;
   * else, or if that fails, java.library.path (an installed libredlockjni).
   */
  static void loadLibrary() {
    String path = System.getProperty(LIBRARY_PROPERTY);
    if (path != null && !path.isEmpty()) {
      System.load(path);
      return;
    }
    Throwable bundled = null;
    String resource = "/native/" + platform() + "/" + System.mapLibraryName("redlockjni");
    URL url = NativeSupport.class.getResource(resource);
    if (url != null) {
      try {
        loadExtracted(url);
        return;
      } catch (IOException | UnsatisfiedLinkError e) {
        bundled = e; // e.g. a noexec temporary directory: try the installed library
      }
    }
    try {
      System.loadLibrary("redlockjni");
    } catch (UnsatisfiedLinkError e) {
      if (bundled != null) {
        e.addSuppressed(bundled);
        throw e;
      }
      // A jar without the native library (the CMake build's
      // redlock-java-nonbundled-<version>.jar): say what to do instead.
      UnsatisfiedLinkError told = new UnsatisfiedLinkError(e.getMessage()
          + ": this jar has no " + resource + " (it is not the self-contained jar);"
          + " use bindings/java/target/redlock-<version>.jar (mvn package in bindings/java)"
          + " or build/bindings/swig/redlock-java-<version>.jar (CMake with -DREDLOCK_JAVA_BUNDLE=ON),"
          + " or give this one the JNI library: -Djava.library.path=<directory of libredlockjni.so>"
          + " or -D" + LIBRARY_PROPERTY + "=<file>");
      told.initCause(e);
      throw told;
    }
  }

  /** The jar's directory name for this JVM's platform: linux-x86_64, linux-aarch64, ... */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux"))
      os = "linux";
    else if (os.startsWith("mac") || os.startsWith("darwin"))
      os = "darwin";
    else if (os.startsWith("windows"))
      os = "windows";
    else
      os = os.replaceAll("[^a-z0-9]+", "");
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    switch (arch) {
      case "amd64": case "x86_64": case "x64": arch = "x86_64"; break;
      case "aarch64": case "arm64": arch = "aarch64"; break;
      default: arch = arch.replaceAll("[^a-z0-9_]+", "");
    }
    return os + "-" + arch;
  }

  // Each JVM gets its own directory (owner-only on POSIX), so no other user
  // can swap the file between the copy and the load. Once loaded, the file is
  // no longer needed on Linux and is deleted at once; where the system keeps
  // it open (Windows), at exit.
  private static void loadExtracted(URL url) throws IOException {
    String dir = System.getProperty(TMPDIR_PROPERTY, System.getProperty("java.io.tmpdir"));
    Path tmp = Files.createTempDirectory(Paths.get(dir), "redlock-jni-");
    Path lib = tmp.resolve(System.mapLibraryName("redlockjni"));
    try {
      try (InputStream in = url.openStream()) {
        Files.copy(in, lib);
      }
      System.load(lib.toAbsolutePath().toString());
    } finally {
      try {
        Files.deleteIfExists(lib);
        Files.deleteIfExists(tmp);
      } catch (IOException e) {
        lib.toFile().deleteOnExit();
        tmp.toFile().deleteOnExit();
      }
    }
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
