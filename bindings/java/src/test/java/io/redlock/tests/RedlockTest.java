// RedlockTest.java: tests of the Java binding against real nodes started by
// tests/harness/nodes.py; "java RedlockTest GROUP" runs one group (see main).
package io.redlock.tests;

import io.redlock.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

public final class RedlockTest {
  private static int passed;
  private static int failed;

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: RedlockTest basic|contention|resources|lost|quorum|arguments|options|threads|tls|no_nodes");
      System.exit(2);
    }
    switch (args[0]) {
      case "basic": basic(); break;
      case "contention": contention(); break;
      case "resources": resources(); break;
      case "lost": lost(); break;
      case "quorum": quorum(); break;
      case "arguments": arguments(); break;
      case "options": options(); break;
      case "threads": threads(); break;
      case "tls": tls(); break;
      case "no_nodes": noNodes(); break;
      default:
        System.err.println("unknown group " + args[0]);
        System.exit(2);
    }
    System.out.println(passed + " passed, " + failed + " failed");
    System.exit(failed == 0 && passed > 0 ? 0 : 1);
  }

  // ---------------------------------------------------------------- checks

  private static void check(boolean ok, String what) {
    if (ok) {
      passed++;
    } else {
      failed++;
      System.out.println("FAIL: " + what);
      new Throwable("at").printStackTrace(System.out);
    }
  }

  private static void checkEq(Object expected, Object actual, String what) {
    check(expected == null ? actual == null : expected.equals(actual),
        what + ": expected <" + expected + "> got <" + actual + ">");
  }

  interface Body {
    void run() throws Exception;
  }

  /** Runs body, which must throw exactly type; returns the exception (or null). */
  private static <T extends Throwable> T expect(Class<T> type, String what, Body body) {
    try {
      body.run();
    } catch (Throwable t) {
      if (type.isInstance(t)) {
        passed++;
        return type.cast(t);
      }
      failed++;
      System.out.println("FAIL: " + what + ": expected " + type.getSimpleName() + ", got " + t);
      t.printStackTrace(System.out);
      return null;
    }
    failed++;
    System.out.println("FAIL: " + what + ": expected " + type.getSimpleName() + ", nothing thrown");
    return null;
  }

  private static String[] nodes() {
    String env = System.getenv("REDLOCK_TEST_NODES");
    if (env == null || env.isEmpty())
      throw new IllegalStateException("REDLOCK_TEST_NODES is not set: run under tests/harness/nodes.py exec");
    return env.split(",");
  }

  // ------------------------------------------------ harness control socket
  // The harness speaks RESP on a unix socket ($REDLOCK_HARNESS): KILL i,
  // RESTART i, CMD i ARGS... (tests/harness/README.md).

  private static Object harness(String... words) throws IOException {
    byte[][] parts = new byte[words.length][];
    for (int i = 0; i < words.length; i++)
      parts[i] = words[i].getBytes(StandardCharsets.UTF_8);
    return harness(parts);
  }

  private static Object harness(byte[]... words) throws IOException {
    String path = System.getenv("REDLOCK_HARNESS");
    if (path == null)
      throw new IllegalStateException("REDLOCK_HARNESS is not set");
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(path));
      ByteArrayOutputStream req = new ByteArrayOutputStream();
      req.write(("*" + words.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
      for (byte[] w : words) {
        req.write(("$" + w.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        req.write(w);
        req.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      ByteBuffer out = ByteBuffer.wrap(req.toByteArray());
      while (out.hasRemaining())
        ch.write(out);
      return readReply(Channels.newInputStream(ch));
    }
  }

  private static Object readReply(InputStream in) throws IOException {
    String line = readLine(in);
    switch (line.charAt(0)) {
      case '+': return line.substring(1);
      case '-': throw new IOException("harness error: " + line.substring(1));
      case ':': return Long.parseLong(line.substring(1));
      case '$': {
        int n = Integer.parseInt(line.substring(1));
        if (n < 0)
          return null;
        byte[] b = in.readNBytes(n + 2);
        return new String(b, 0, n, StandardCharsets.UTF_8);
      }
      case '*': {
        int n = Integer.parseInt(line.substring(1));
        List<Object> items = new ArrayList<>();
        for (int i = 0; i < n; i++)
          items.add(readReply(in));
        return items;
      }
      default: throw new IOException("bad reply " + line);
    }
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != -1 && c != '\n')
      if (c != '\r')
        b.write(c);
    if (c == -1 && b.size() == 0)
      throw new IOException("harness closed the connection");
    return b.toString(StandardCharsets.UTF_8);
  }

  /** GET key on node i (null if absent or the node is down). */
  private static Object get(int node, String key) throws IOException {
    try {
      return harness("CMD", Integer.toString(node), "GET", key);
    } catch (IOException e) {
      if (e.getMessage().contains("CONNFAIL"))
        return null;
      throw e;
    }
  }

  /**
   * On how many nodes the key exists, waiting up to a second for it to be
   * expected: the C library returns once a majority has answered, and the
   * remaining nodes' commands are already sent but may not have run yet.
   */
  private static int holders(String key, int expected) throws IOException, InterruptedException {
    long end = System.nanoTime() + 1_000_000_000L;
    int n;
    do {
      n = 0;
      for (int i = 0; i < nodes().length; i++)
        if (get(i, key) != null)
          n++;
      if (n == expected)
        break;
      Thread.sleep(10);
    } while (System.nanoTime() < end);
    return n;
  }

  // ------------------------------------------------------------------ groups

  static void basic() throws Exception {
    check(Redlock.version().matches("\\d+\\.\\d+\\.\\d+"), "version is MAJOR.MINOR.PATCH: " + Redlock.version());
    try (Redlock client = new Redlock(nodes())) {
      checkEq(5L, client.nodeCount(), "nodeCount");
      Lock lock = client.acquire("basic", 10_000);
      check(lock.isHeld(), "held after acquire");
      long v = lock.validityMs();
      check(v > 9_000 && v <= 10_000, "validity within ttl: " + v);
      checkEq("basic", lock.resource(), "resource");
      checkEq(5, holders("basic", 5), "key on every node");
      String value = (String) get(0, "basic");
      check(value != null && !value.isEmpty(), "random value stored");

      lock.extend(30_000);
      v = lock.validityMs();
      check(v > 29_000 && v <= 30_000, "validity after extend: " + v);

      lock.release();
      check(!lock.isHeld(), "not held after release");
      check(lock.validityMs() <= 0, "no validity after release");
      checkEq(0, holders("basic", 0), "key gone after release");
      expect(LockStateException.class, "release of a lock not held", lock::release);
      expect(LockStateException.class, "extend of a lock not held", () -> lock.extend(1_000));

      // The handle is reusable, with a fresh random value.
      lock.acquire(10_000);
      check(lock.isHeld(), "held after re-acquire");
      check(!value.equals(get(0, "basic")), "fresh value on re-acquire");
      expect(LockStateException.class, "acquire of a lock already held", () -> lock.acquire(10_000));
      lock.close();
      checkEq(0, holders("basic", 0), "close released the key");
      lock.close(); // idempotent
      passed++;
      expect(LockStateException.class, "use after close", lock::isHeld);
      expect(LockStateException.class, "acquire after close", () -> lock.acquire(1_000));
      lock.cancel(); // documented no-op after close
      passed++;

      // A lock never acquired closes without I/O or error.
      Lock idle = client.newLock("idle");
      check(!idle.isHeld(), "new lock not held");
      idle.close();
      passed++;

      // UTF-8, not JNI's modified UTF-8: the key on Redis is the real UTF-8
      // bytes (an emoji would differ), as from the other bindings.
      String name = "ключ-\uD83D\uDD12";
      try (Lock u = client.tryAcquire(name, 10_000)) {
        checkEq(name, u.resource(), "unicode resource round trip");
        checkEq(5, holders(name, 5), "unicode key stored as UTF-8 on every node");
      }
      checkEq(0, holders(name, 0), "unicode key released");
    }
    // Locks keep the C client alive: closing the client first is safe.
    Redlock client = new Redlock(nodes());
    Lock held = client.acquire("outlives", 10_000);
    client.close();
    client.close(); // idempotent
    expect(LockStateException.class, "client use after close", () -> client.acquire("x", 1_000));
    check(held.isHeld(), "lock still held after its client closed");
    held.extend(10_000);
    held.close();
    checkEq(0, holders("outlives", 0), "lock released after its client closed");
  }

  static void contention() throws Exception {
    try (Redlock a = new Redlock(nodes()); Redlock b = new Redlock(nodes())) {
      Lock la = a.acquire("contended", 10_000);
      LockNotAcquiredException e = expect(LockNotAcquiredException.class, "second client tryAcquire",
          () -> b.tryAcquire("contended", 10_000));
      if (e != null) {
        checkEq(RedlockException.ENOTACQUIRED, e.getCode(), "code");
        checkEq("REDLOCK_ENOTACQUIRED", e.getErrorName(), "error name");
        check(!e.getMessage().isEmpty() && e.getMessage().equals(e.getDetail()), "message is the C detail: " + e.getMessage());
      }
      long t0 = System.nanoTime();
      expect(LockTimeoutException.class, "bounded wait runs out", () -> b.acquire("contended", 10_000, 300));
      long waited = (System.nanoTime() - t0) / 1_000_000;
      check(waited >= 250 && waited < 3_000, "waited about 300 ms: " + waited);

      // A waiter gets the lock once the holder releases.
      AtomicReference<Object> got = new AtomicReference<>();
      Thread waiter = new Thread(() -> {
        try {
          got.set(b.acquire("contended", 10_000, 10_000));
        } catch (RuntimeException ex) {
          got.set(ex);
        }
      });
      waiter.start();
      Thread.sleep(300);
      la.close();
      waiter.join(15_000);
      check(got.get() instanceof Lock, "waiter acquired after release: " + got.get());
      if (got.get() instanceof Lock) {
        Lock lb = (Lock) got.get();
        check(lb.isHeld(), "waiter holds it");
        expect(LockNotAcquiredException.class, "first client now blocked", () -> a.tryAcquire("contended", 1_000));
        lb.close();
      }

      // cancel() from another thread ends a long wait promptly.
      Lock holder = a.acquire("cancel-me", 10_000);
      Lock waiting = b.newLock("cancel-me");
      CountDownLatch started = new CountDownLatch(1);
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      Thread t = new Thread(() -> {
        started.countDown();
        try {
          waiting.acquire(10_000, 20_000);
        } catch (Throwable ex) {
          outcome.set(ex);
        }
      });
      t.start();
      started.await();
      Thread.sleep(200);
      long c0 = System.nanoTime();
      waiting.cancel(); // once: the cancel is sticky, so it cannot be lost
      t.join(30_000);
      long took = (System.nanoTime() - c0) / 1_000_000;
      check(outcome.get() instanceof CancelledException, "cancelled wait throws CancelledException: " + outcome.get());
      // Half the 20 s wait: proves the wait was cut short, far from noise.
      check(took < 10_000, "cancel ended the wait: " + took + " ms");
      try {
        waiting.tryAcquire(10_000);
        check(false, "a cancelled lock stays cancelled until resetCancel()");
      } catch (CancelledException expected) {
        // sticky
      }
      waiting.resetCancel();
      holder.close();
      waiting.tryAcquire(10_000);
      check(waiting.isHeld(), "acquirable again after resetCancel()");
      waiting.close();
    }
  }

  static void resources() throws Exception {
    try (Redlock client = new Redlock(nodes())) {
      // Normal exit releases.
      try (Lock lock = client.acquire("twr", 10_000)) {
        checkEq(5, holders("twr", 5), "held inside the block");
      }
      checkEq(0, holders("twr", 0), "released after the block");

      // An exception in the body still releases, and stays the primary exception.
      IllegalStateException boom = expect(IllegalStateException.class, "body exception propagates", () -> {
        try (Redlock other = new Redlock(nodes()); Lock lock = other.acquire("twr", 10_000)) {
          throw new IllegalStateException("boom");
        }
      });
      if (boom != null)
        checkEq(0, boom.getSuppressed().length, "nothing suppressed when close succeeds");
      checkEq(0, holders("twr", 0), "released after an exception in the body");
      try (Lock again = client.tryAcquire("twr", 10_000)) {
        check(again.isHeld(), "free again right away");
      }

      // A failed acquire inside try-with-resources leaves nothing to close.
      try (Lock blocker = client.acquire("twr-busy", 10_000)) {
        expect(LockNotAcquiredException.class, "failed acquire in try-with-resources", () -> {
          try (Redlock other = new Redlock(nodes()); Lock l = other.tryAcquire("twr-busy", 10_000)) {
            check(false, "body must not run");
          }
        });
        checkEq(5, holders("twr-busy", 5), "holder's key untouched by the failed attempt");
      }

      // Handles that are never closed are freed by the Cleaner (memory only).
      for (int i = 0; i < 2_000; i++)
        client.newLock("garbage-" + i);
      for (int i = 0; i < 5; i++) {
        System.gc();
        Thread.sleep(20);
      }
      passed++;
    }
  }

  static void lost() throws Exception {
    try (Redlock client = new Redlock(nodes()); Redlock other = new Redlock(nodes())) {
      // Expired: close() reports the loss.
      Lock lock = client.acquire("short", 200);
      check(lock.isHeld(), "held at first");
      Thread.sleep(450);
      check(!lock.isHeld(), "not held once the ttl passed");
      check(lock.validityMs() <= 0, "validity <= 0 once expired: " + lock.validityMs());
      expect(LockExpiredException.class, "extend after expiry", () -> lock.extend(10_000));
      LockLostException lost = expect(LockLostException.class, "close of an expired lock", lock::close);
      if (lost != null)
        checkEq(RedlockException.ELOST, lost.getCode(), "code");
      expect(LockStateException.class, "handle is closed even though close threw", lock::isHeld);

      // Taken over by another client: the first owner learns it on release,
      // and its release must not delete the new owner's key.
      Lock first = client.acquire("taken", 200);
      Thread.sleep(450);
      Lock second = other.tryAcquire("taken", 10_000);
      expect(LockLostException.class, "release after a takeover", first::release);
      check(second.isHeld(), "new owner unaffected");
      checkEq(5, holders("taken", 5), "new owner's key still on every node");
      first.close(); // already released: nothing more to report
      passed++;
      second.close();

      // In try-with-resources the body's exception wins; the loss is suppressed.
      IllegalStateException body = expect(IllegalStateException.class, "body exception with a lost lock", () -> {
        try (Lock l = client.acquire("short-twr", 200)) {
          Thread.sleep(450);
          throw new IllegalStateException("body failed");
        }
      });
      if (body != null) {
        checkEq(1, body.getSuppressed().length, "one suppressed exception");
        check(body.getSuppressed().length == 1 && body.getSuppressed()[0] instanceof LockLostException,
            "the suppressed exception is LockLostException");
      }
      // And with no body exception, close() throws it.
      expect(LockLostException.class, "lost lock throws from try-with-resources", () -> {
        try (Lock l = client.acquire("short-twr", 200)) {
          Thread.sleep(450);
        }
      });
    }
  }

  static void quorum() throws Exception {
    String[] urls = nodes();
    Options opts = new Options();
    opts.setRetryCount(0);
    try (Redlock client = new Redlock(urls, opts)) {
      try (Lock warm = client.acquire("warm", 5_000)) {
        check(warm.isHeld(), "all five nodes up");
      }
      // Minority down (2 of 5): still works.
      harness("KILL", "0");
      harness("KILL", "1");
      try (Lock lock = client.acquire("minority", 10_000)) {
        check(lock.isHeld(), "acquired with 2 of 5 nodes down");
        lock.extend(10_000);
        check(lock.isHeld(), "extended with 2 of 5 nodes down");
        checkEq(3, holders("minority", 3), "key on the three live nodes");
      }
      checkEq(0, holders("minority", 0), "released on the live nodes");

      // Majority down (3 of 5): no lock.
      harness("KILL", "2");
      NoQuorumException nq = expect(NoQuorumException.class, "acquire with 3 of 5 nodes down",
          () -> client.acquire("majority", 10_000));
      if (nq != null)
        check(!nq.getDetail().isEmpty(), "detail says which nodes failed: " + nq.getDetail());
      checkEq(0, holders("majority", 0), "a failed acquire leaves no key behind");

      // A lock held when the majority dies cannot be released as ours.
      harness("RESTART", "2");
      Lock held = client.acquire("dying", 10_000, 5_000);
      check(held.isHeld(), "acquired again once 3 nodes are up");
      harness("KILL", "2");
      harness("KILL", "3");
      RedlockException e = expect(RedlockException.class, "release with the majority down", held::close);
      if (e != null)
        check(e instanceof NoQuorumException || e instanceof LockLostException,
            "release reports no quorum or a loss: " + e);

      // Nodes come back: the client reconnects.
      for (int i = 0; i < 4; i++)
        harness("RESTART", Integer.toString(i));
      try (Lock back = client.acquire("back", 10_000, 10_000)) {
        check(back.isHeld(), "acquired after the nodes restarted");
      }
    } finally {
      opts.free();
    }
  }

  static void arguments() throws Exception {
    String[] urls = nodes();
    // Client construction.
    expect(InvalidArgumentException.class, "null node array", () -> new Redlock(null));
    expect(InvalidArgumentException.class, "empty node array", () -> new Redlock(new String[0]));
    expect(InvalidArgumentException.class, "null node URL",
        () -> new Redlock(new String[] {urls[0], null, urls[2]}));
    InvalidArgumentException bad = expect(InvalidArgumentException.class, "port is not a number",
        () -> new Redlock(new String[] {"redis://127.0.0.1:abc"}));
    if (bad != null)
      check(bad.getMessage().contains("node 0"), "errbuf detail names the node: " + bad.getMessage());
    expect(InvalidArgumentException.class, "not a URL", () -> new Redlock(new String[] {"nonsense"}));
    expect(InvalidArgumentException.class, "duplicate node",
        () -> new Redlock(new String[] {urls[0], urls[1], urls[0]}));
    expect(InvalidArgumentException.class, "NUL inside a URL",
        () -> new Redlock(new String[] {urls[0] + "\0x"}));
    expect(InvalidArgumentException.class, "TLS options with a plain redis:// URL", () -> {
      Options tlsOpts = new Options();
      tlsOpts.setTlsServerName("localhost");
      new Redlock(urls, tlsOpts);
    });

    try (Redlock client = new Redlock(urls)) {
      expect(InvalidArgumentException.class, "null resource", () -> client.acquire(null, 1_000));
      expect(InvalidArgumentException.class, "empty resource", () -> client.acquire("", 1_000));
      expect(InvalidArgumentException.class, "NUL inside a resource", () -> client.acquire("a\0b", 1_000));
      expect(InvalidArgumentException.class, "resource over 4096 bytes",
          () -> client.acquire("x".repeat(4097), 1_000));
      try (Lock ok = client.tryAcquire("y".repeat(4096), 1_000)) {
        check(ok.isHeld(), "resource of exactly 4096 bytes");
      }
      expect(InvalidArgumentException.class, "ttl 0", () -> client.acquire("args", 0));
      expect(InvalidArgumentException.class, "negative ttl", () -> client.acquire("args", -1));
      expect(InvalidArgumentException.class, "ttl over one day", () -> client.acquire("args", 86_400_001L));
      expect(InvalidArgumentException.class, "ttl over 2^32", () -> client.acquire("args", 1L << 32));
      expect(InvalidArgumentException.class, "wait below WAIT_DEFAULT", () -> client.acquire("args", 1_000, -2));
      checkEq(0, holders("args", 0), "no key from rejected calls");
      try (Lock lock = client.acquire("args", 10_000)) {
        expect(InvalidArgumentException.class, "extend with ttl 0", () -> lock.extend(0));
        check(lock.isHeld(), "still held after a rejected extend");
      }
    }
  }

  static void options() throws Exception {
    Options defaults = new Options();
    checkEq(3L, defaults.getRetryCount(), "default retryCount");
    checkEq(200L, defaults.getRetryJitterMs(), "default retryJitterMs");
    checkEq(50L, defaults.getNodeTimeoutMs(), "default nodeTimeoutMs");
    checkEq(null, defaults.getKeyPrefix(), "default keyPrefix");
    defaults.free();
    defaults.free(); // idempotent
    passed++;
    expect(LockStateException.class, "options used after free", () -> defaults.setRetryCount(1));
    expect(LockStateException.class, "freed options given to a client", () -> new Redlock(nodes(), defaults));
    expect(InvalidArgumentException.class, "negative option", () -> new Options().setRetryCount(-1));

    Options opts = new Options();
    opts.setKeyPrefix("app:");
    opts.setRetryCount(1);
    opts.setRetryDelayMs(50);
    opts.setRetryJitterMs(0);
    opts.setNodeTimeoutMs(100);
    opts.setMaxExtensions(1);
    checkEq("app:", opts.getKeyPrefix(), "keyPrefix round trip");
    checkEq(100L, opts.getNodeTimeoutMs(), "nodeTimeoutMs round trip");
    Redlock client = new Redlock(nodes(), opts);
    opts.setKeyPrefix("changed:"); // the client copied the options
    try (Lock lock = client.acquire("res", 10_000)) {
      checkEq(5, holders("app:res", 5), "key carries the prefix");
      checkEq(0, holders("res", 0), "no unprefixed key");
      checkEq(0, holders("changed:res", 0), "later option changes do not affect the client");
      lock.extend(10_000);
      expect(ExtensionLimitException.class, "maxExtensions 1", () -> lock.extend(10_000));
    }
    checkEq(0, holders("app:res", 0), "prefixed key released");

    // retryCount 1 with a fixed 50 ms delay: two attempts, then ENOTACQUIRED.
    try (Redlock plain = new Redlock(nodes()); Lock blocker = plain.acquire("app:busy", 10_000)) {
      long t0 = System.nanoTime();
      expect(LockNotAcquiredException.class, "retries run out", () -> client.acquire("busy", 10_000));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      check(ms >= 40 && ms < 2_000, "one 50 ms retry delay: " + ms + " ms");
    }
    client.close();
    opts.setKeyPrefix(null);
    checkEq(null, opts.getKeyPrefix(), "keyPrefix cleared");
    opts.free();
  }

  // Nodes on TLS ports (nodes.py exec --tls-dir), certificates in $REDLOCK_TEST_CERTS.
  static void tls() throws Exception {
    String certs = System.getenv("REDLOCK_TEST_CERTS");
    check(certs != null && nodes()[0].startsWith("rediss://"), "run under make-test-certs.sh and exec --tls-dir");
    Options opts = new Options();
    opts.setTlsCaFile(certs + "/ca.crt");
    opts.setNodeTimeoutMs(2_000);
    checkEq(certs + "/ca.crt", opts.getTlsCaFile(), "tlsCaFile round trip");
    check(!opts.getTlsInsecureSkipVerify() && !opts.getUseFunctions(), "verification and EVAL by default");
    try (Redlock client = new Redlock(nodes(), opts)) {
      try (Lock lock = client.acquire("tls", 10_000)) {
        check(lock.isHeld(), "acquired over verified TLS");
        lock.extend(10_000);
      }
      client.loadFunctions(); // the harness's nodes let the default user load functions
    }
    opts.setUseFunctions(true);
    try (Redlock client = new Redlock(nodes(), opts); Lock lock = client.acquire("tls-fcall", 10_000)) {
      lock.extend(10_000);
    }

    Options wrongCa = new Options();
    wrongCa.setTlsCaFile(certs + "/other-ca.crt");
    wrongCa.setRetryCount(0);
    wrongCa.setNodeTimeoutMs(2_000);
    try (Redlock client = new Redlock(nodes(), wrongCa)) {
      TLSException e = expect(TLSException.class, "a CA that did not sign the servers' certificates",
          () -> client.tryAcquire("tls-wrong-ca", 10_000));
      if (e != null)
        check(e.getMessage().contains("certificate verify failed"), "the reason: " + e.getMessage());
    }
    expect(TLSException.class, "a CA file that does not exist", () -> {
      Options missing = new Options();
      missing.setTlsCaFile(certs + "/no-such-ca.crt");
      new Redlock(nodes(), missing);
    });
    opts.free();
    wrongCa.free();
  }

  static void threads() throws Exception {
    try (Redlock client = new Redlock(nodes())) {
      // Mutual exclusion across threads sharing one client: an unprotected
      // read-sleep-write would lose increments without the lock.
      final int nThreads = 4, rounds = 8;
      // get/set (not incrementAndGet): visibility without atomicity.
      AtomicInteger counter = new AtomicInteger();
      List<Thread> ts = new ArrayList<>();
      List<Throwable> errors = new ArrayList<>();
      for (int t = 0; t < nThreads; t++) {
        Thread th = new Thread(() -> {
          try {
            for (int r = 0; r < rounds; r++) {
              try (Lock lock = client.acquire("counter", 10_000, 20_000)) {
                int v = counter.get();
                Thread.sleep(2);
                counter.set(v + 1);
              }
            }
          } catch (Throwable e) {
            synchronized (errors) {
              errors.add(e);
            }
          }
        });
        ts.add(th);
        th.start();
      }
      for (Thread th : ts)
        th.join(60_000);
      check(errors.isEmpty(), "no errors in worker threads: " + errors);
      checkEq(nThreads * rounds, counter.get(), "every increment under the lock");
    }

    // close() racing with other threads' calls: exceptions, never a crash.
    for (int i = 0; i < 20; i++) {
      Redlock client = new Redlock(nodes());
      Lock lock = client.acquire("race-" + i, 10_000);
      Thread a = new Thread(() -> {
        try {
          lock.close();
        } catch (RedlockException ignored) {
          // fine
        }
      });
      Thread b = new Thread(() -> {
        try {
          lock.cancel();
          lock.isHeld();
        } catch (LockStateException ignored) {
          // closed first
        }
      });
      Thread c = new Thread(() -> {
        try {
          client.newLock("x").close();
        } catch (LockStateException ignored) {
          // client closed first
        }
      });
      a.start();
      b.start();
      c.start();
      client.close();
      a.join();
      b.join();
      c.join();
    }
    passed++;
  }

  static void noNodes() {
    // Ports 1..3 on loopback refuse connections: nothing can answer.
    String[] dead = {"redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"};
    try (Redlock client = new Redlock(dead)) {
      NoQuorumException e = expect(NoQuorumException.class, "no node answers",
          () -> client.tryAcquire("nobody", 1_000));
      if (e != null)
        check(e.getDetail().contains("127.0.0.1"), "detail names the nodes: " + e.getDetail());
    }
    check(Arrays.asList(RedlockException.class.getInterfaces()).isEmpty()
        && RuntimeException.class.isAssignableFrom(RedlockException.class), "RedlockException is unchecked");
  }
}
