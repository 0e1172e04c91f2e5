// SPDX-License-Identifier: BSD-3-Clause

// RedlockTest.java: tests of the Java binding against real nodes started by
// tests/harness/nodes.py; "java RedlockTest GROUP" runs one group (see main).
package io.redlock.tests;

import io.redlock.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.lang.ref.WeakReference;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

public final class RedlockTest {
  private static int passed;
  private static int failed;

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: RedlockTest basic|contention|resources|lost|quorum|arguments|options|lockoptions|threads|"
          + "fencing|autoextend|noderesults|events|wake|tls|no_nodes|unreachable|semaphore|multilock|acquiremany|async");
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
      case "lockoptions": lockOptions(); break;
      case "threads": threads(); break;
      case "fencing": fencing(); break;
      case "autoextend": autoExtend(); break;
      case "noderesults": nodeResults(); break;
      case "events": events(); break;
      case "wake": wake(); break;
      case "tls": tls(); break;
      case "no_nodes": noNodes(); break;
      case "unreachable": unreachable(); break;
      case "election": election(); break;
      case "rwlock": rwLock(); break;
      case "semaphore": semaphore(); break;
      case "multilock": multiLock(); break;
      case "acquiremany": acquireMany(); break;
      case "async": acquireAsync(); break;
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
   * On how many nodes the key exists, waiting up to 5 s for it to be
   * expected: the C library returns once a majority has answered, and the
   * remaining nodes' commands are already sent but may not have run yet (a
   * second is a thin margin on a loaded machine). The bound stays at half
   * the 10 s TTL the callers use, so that expiry cannot pass for a release.
   */
  /** What each node holds at key, with its PTTL and the rest of the lock's keys, for messages. */
  private static String describeKey(String key) throws IOException {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < nodes().length; i++) {
      Object v = get(i, key);
      if (v == null)
        continue;
      b.append("node ").append(i).append(": ").append(v)
          .append(" pttl ").append(harness("CMD", Integer.toString(i), "PTTL", key))
          .append(" keys ").append(harness("CMD", Integer.toString(i), "KEYS", key + "*"))
          .append(" readers ").append(harness("CMD", Integer.toString(i), "ZRANGE", key + ":rd", "0", "-1", "WITHSCORES"))
          .append(" at ").append(harness("CMD", Integer.toString(i), "TIME")).append("; ");
    }
    return b.toString();
  }

  private static int holders(String key, int expected) throws IOException, InterruptedException {
    long end = System.nanoTime() + 5_000_000_000L;
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

      checkEq(0L, lock.extensions(), "no extension yet");
      lock.extend(30_000);
      v = lock.validityMs();
      check(v > 29_000 && v <= 30_000, "validity after extend: " + v);
      checkEq(1L, lock.extensions(), "one extension");

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
    // Nodes restart below without persistence, to test reconnects: with the quarantine on they
    // would stay out of the vote for the longest TTL (tests/c/test_quarantine.c is about that).
    check(opts.getQuarantine(), "the quarantine is on by default");
    opts.setQuarantine(false);
    check(!opts.getQuarantine(), "setQuarantine(false) switches it off");
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
      expect(InvalidArgumentException.class, "wait below WAIT_FOREVER", () -> client.acquire("args", 1_000, -3));
      Options fencing = new Options();
      fencing.setFencing(true);
      try (Redlock fenced = new Redlock(urls, fencing)) {
        InvalidArgumentException why = expect(InvalidArgumentException.class, "resource ending in :fencing",
            () -> fenced.acquire("orders:fencing", 1_000));
        check(why != null && why.getMessage().contains(":fencing"), "the refusal says why: " + why);
      }
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

  /** connected_clients of node i. */
  private static long connectedClients(int node) throws IOException {
    String info = (String) harness("CMD", Integer.toString(node), "INFO", "clients");
    for (String line : info.split("\r?\n"))
      if (line.startsWith("connected_clients:"))
        return Long.parseLong(line.substring("connected_clients:".length()).trim());
    throw new IOException("no connected_clients in INFO clients");
  }

  private static long elapsedMs(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  // Per-lock acquisition policy (redlock_lock_get_options/_set_options):
  // retries, delay, jitter, wait and drift for one handle, on its client's
  // connections.
  static void lockOptions() throws Exception {
    LockOptions defaults = new LockOptions();
    checkEq(3L, defaults.getRetryCount(), "default retryCount");
    checkEq(0L, defaults.getRetryDelayMs(), "default retryDelayMs");
    checkEq(200L, defaults.getRetryJitterMs(), "default retryJitterMs");
    checkEq(0L, defaults.getWaitMs(), "default waitMs");
    checkEq(0.01, defaults.getDriftFactor(), "default driftFactor");
    checkEq(2L, defaults.getDriftMinMs(), "default driftMinMs");
    check(defaults.toString().contains("retryCount=3"), "toString: " + defaults);
    defaults.free();
    defaults.free(); // idempotent
    passed++;
    expect(LockStateException.class, "lock options used after free", () -> defaults.setRetryCount(1));
    expect(InvalidArgumentException.class, "negative retryCount", () -> new LockOptions().setRetryCount(-1));
    expect(InvalidArgumentException.class, "waitMs over 2^32-1", () -> new LockOptions().setWaitMs(1L << 32));

    Options copts = new Options();
    copts.setRetryCount(7);
    copts.setRetryDelayMs(11);
    copts.setRetryJitterMs(0);
    copts.setDriftFactor(0.02);
    copts.setDriftMinMs(5);
    try (Redlock holder = new Redlock(nodes());
         Redlock client = new Redlock(nodes(), copts)) {
      copts.free();

      // A new lock's policy is its client's.
      try (Lock lock = client.newLock("lo-defaults")) {
        LockOptions o = lock.getOptions();
        checkEq(7L, o.getRetryCount(), "lock inherits retryCount");
        checkEq(11L, o.getRetryDelayMs(), "lock inherits retryDelayMs");
        checkEq(0L, o.getRetryJitterMs(), "lock inherits retryJitterMs");
        checkEq(0.02, o.getDriftFactor(), "lock inherits driftFactor");
        checkEq(5L, o.getDriftMinMs(), "lock inherits driftMinMs");
        o.setRetryCount(1);
        checkEq(7L, lock.getOptions().getRetryCount(), "getOptions returns a copy");
      }

      try (Lock blocker = holder.acquire("lo-busy", 20_000)) {
        // The client's 7 retries x 11 ms: 8 attempts.
        Lock viaClient = client.newLock("lo-busy");
        RedlockException e = expect(LockNotAcquiredException.class, "client policy runs out",
            () -> viaClient.acquire(10_000));
        check(e != null && e.getDetail().contains("after 8 attempts"), "8 attempts: " + (e == null ? "" : e.getDetail()));
        viaClient.close();

        // One lock with 1 retry after 400 ms, another with none: each its own.
        LockOptions one = new LockOptions();
        one.setRetryCount(1);
        one.setRetryDelayMs(400);
        one.setRetryJitterMs(0);
        Lock slow = client.newLock("lo-busy", one);
        one.setRetryCount(50); // copied: no effect on the lock
        Lock other = client.newLock("lo-other");
        LockOptions none = other.getOptions(); // read, change, set: the usual way
        other.close();
        none.setRetryCount(0);
        Lock fast = client.newLock("lo-busy", none);
        checkEq(1L, slow.getOptions().getRetryCount(), "newLock(resource, options) set the policy");
        long t0 = System.nanoTime();
        e = expect(LockNotAcquiredException.class, "per-lock retryCount 1", () -> slow.acquire(10_000));
        long ms = elapsedMs(t0);
        check(e != null && e.getDetail().contains("after 2 attempts"), "2 attempts: " + (e == null ? "" : e.getDetail()));
        check(ms >= 390 && ms < 5_000, "one 400 ms retry delay: " + ms + " ms");
        t0 = System.nanoTime();
        e = expect(LockNotAcquiredException.class, "per-lock retryCount 0", () -> fast.acquire(10_000, Redlock.WAIT_DEFAULT));
        ms = elapsedMs(t0);
        check(e != null && !e.getDetail().contains("attempts"), "1 attempt: " + (e == null ? "" : e.getDetail()));
        check(ms < 390, "no retry delay: " + ms + " ms");
        // An explicit wait still overrides the count, with the lock's delay.
        LockOptions paced = fast.getOptions();
        paced.setRetryDelayMs(40);
        paced.setRetryJitterMs(0);
        fast.setOptions(paced);
        t0 = System.nanoTime();
        expect(LockTimeoutException.class, "explicit wait with the lock's delay", () -> fast.acquire(10_000, 200));
        ms = elapsedMs(t0);
        check(ms >= 190 && ms < 3_000, "200 ms wait: " + ms + " ms");

        // The lock's own waitMs bounds acquire(ttl).
        LockOptions waiting = new LockOptions();
        waiting.setRetryCount(1_000_000);
        waiting.setRetryDelayMs(20);
        waiting.setRetryJitterMs(0);
        waiting.setWaitMs(250);
        Lock bounded = client.newLock("lo-busy", waiting);
        t0 = System.nanoTime();
        expect(LockTimeoutException.class, "per-lock waitMs", () -> bounded.acquire(10_000));
        ms = elapsedMs(t0);
        check(ms >= 240 && ms < 3_000, "250 ms lock wait: " + ms + " ms");

        // Others on the same client keep the client's policy.
        try (Lock plain = client.newLock("lo-x")) {
          checkEq(7L, plain.getOptions().getRetryCount(), "other locks keep the client's policy");
        }

        // A waiting lock gets it once the holder lets go.
        waiting.setWaitMs(10_000);
        bounded.setOptions(waiting);
        Thread releaser = new Thread(() -> {
          try {
            Thread.sleep(200);
            blocker.release();
          } catch (Exception ex) {
            throw new RuntimeException(ex);
          }
        });
        releaser.start();
        bounded.acquire(10_000);
        releaser.join();
        check(bounded.isHeld(), "per-lock wait acquired after the release");
        bounded.close();
        slow.close();
        fast.close();
        one.free();
        none.free();
        paced.free();
        waiting.free();
      }

      // Drift: validity = ttl - elapsed - (ttl * factor + min).
      LockOptions drift = new LockOptions();
      drift.setDriftFactor(0.2);
      drift.setDriftMinMs(100);
      try (Lock lock = client.newLock("lo-drift", drift)) {
        lock.acquire(1_000);
        long v = lock.validityMs();
        check(v > 0 && v <= 700, "validity with drift 0.2 + 100 ms: " + v);
      }
      try (Lock lock = client.acquire("lo-drift", 1_000)) {
        long v = lock.validityMs();
        check(v > 900, "validity with the client's drift: " + v);
      }

      // Invalid policies are refused with the reason; the old one stays.
      try (Lock lock = client.newLock("lo-bad")) {
        LockOptions bad = lock.getOptions();
        bad.setDriftFactor(0.6);
        InvalidArgumentException ie = expect(InvalidArgumentException.class, "driftFactor 0.6",
            () -> lock.setOptions(bad));
        check(ie != null && ie.getDetail().contains("drift_factor"), "reason names drift_factor: "
            + (ie == null ? "" : ie.getDetail()));
        expect(InvalidArgumentException.class, "driftFactor 0.6 via newLock",
            () -> client.newLock("lo-bad", bad));
        bad.setDriftFactor(0.01);
        bad.setDriftMinMs(60_001);
        expect(InvalidArgumentException.class, "driftMinMs over 60000", () -> lock.setOptions(bad));
        checkEq(0.02, lock.getOptions().getDriftFactor(), "a refused policy leaves the old one");
        expect(InvalidArgumentException.class, "null options", () -> lock.setOptions(null));
        bad.free();
        expect(LockStateException.class, "freed options", () -> lock.setOptions(bad));
        // A drift allowance that leaves no validity is refused at acquire.
        LockOptions huge = new LockOptions();
        huge.setDriftMinMs(60_000);
        lock.setOptions(huge);
        expect(InvalidArgumentException.class, "no validity left", () -> lock.tryAcquire(10_000));
        huge.free();
      }
      Lock closed = client.newLock("lo-closed");
      closed.close();
      expect(LockStateException.class, "getOptions after close", closed::getOptions);

      // Many locks, each with its own policy, and still only the client's
      // connections: no hidden client per lock.
      try (Lock warm = client.acquire("lo-warm", 10_000)) {
        // every node connected once
      }
      long[] before = new long[nodes().length];
      for (int n = 0; n < before.length; n++)
        before[n] = connectedClients(n);
      List<Lock> locks = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        LockOptions o = new LockOptions();
        o.setRetryCount(i);
        o.setDriftMinMs(i);
        Lock l = client.newLock("lo-many-" + i, o);
        l.acquire(10_000);
        locks.add(l);
        o.free();
        // Lets the minority's replies arrive: a connection that still owes
        // one is not reused, and the pool would open another for the next.
        Thread.sleep(20);
      }
      // A client per lock would add 20 connections on every node. The pool
      // itself may add a few on a node that lags (its replies are not waited
      // for, and a connection that owes one is not reused), never on all.
      long fewest = Long.MAX_VALUE;
      for (int n = 0; n < before.length; n++)
        fewest = Math.min(fewest, connectedClients(n) - before[n]);
      check(fewest < 10, "20 per-lock policies on the client's connections: +" + fewest + " on the least-used node");
      for (int i = 0; i < locks.size(); i++) {
        checkEq((long) i, locks.get(i).getOptions().getRetryCount(), "lock " + i + " kept its policy");
        locks.get(i).close();
      }
    }
  }

  // ------------------------------------------------------- issue 6 helpers

  /** Waits up to 20 s (a bound that only separates "happened" from "never"). */
  private static boolean waitFor(BooleanSupplier cond) throws InterruptedException {
    long end = System.nanoTime() + 20_000_000_000L;
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > end)
        return false;
      Thread.sleep(10);
    }
    return true;
  }

  /** Deletes key on every live node, behind its owner's back. */
  private static void deleteEverywhere(String key) throws IOException {
    for (int i = 0; i < nodes().length; i++) {
      try {
        harness("CMD", Integer.toString(i), "DEL", key);
      } catch (IOException e) {
        if (!e.getMessage().contains("CONNFAIL"))
          throw e;
      }
    }
  }

  /** An auto-extended lock (with a listener) that nothing refers to once this returns. */
  private static WeakReference<Lock> acquireAndDrop(Redlock client, String resource) {
    Lock lock = client.acquire(resource, 600);
    lock.autoExtend(0, newLostListener());
    return new WeakReference<>(lock);
  }

  /** A listener object of its own (a lambda capturing nothing is one shared instance). */
  private static LockLostListener newLostListener() {
    Object state = new Object();
    return (l, c) -> state.hashCode();
  }

  /** Runs the GC until ref is cleared (or a generous bound passes). */
  private static boolean collected(WeakReference<?> ref) throws InterruptedException {
    for (int i = 0; i < 200 && ref.get() != null; i++) {
      System.gc();
      Thread.sleep(25);
    }
    return ref.get() == null;
  }

  // ------------------------------------------------------ issue 6 groups

  static void fencing() throws Exception {
    Options f = new Options();
    check(!f.getFencing(), "fencing off by default");
    f.setFencing(true);
    check(f.getFencing(), "fencing round trip");
    try (Redlock a = new Redlock(nodes(), f); Redlock b = new Redlock(nodes(), f); Redlock plain = new Redlock(nodes())) {
      // Successive holders, alternating clients: strictly increasing tokens.
      long prev = 0;
      for (int i = 0; i < 4; i++) {
        try (Lock l = (i % 2 == 0 ? a : b).acquire("fenced", 10_000)) {
          long t = l.fencingToken();
          check(t >= 1 && t > prev, "token " + t + " after " + prev);
          checkEq(t, l.fencingToken(), "token stable while held");
          prev = t;
        }
      }
      // One handle: 0 before, a new larger token per acquisition, 0 after release.
      Lock l = a.newLock("fenced");
      checkEq(0L, l.fencingToken(), "no token before acquire");
      l.acquire(10_000);
      long t1 = l.fencingToken();
      check(t1 > prev, "re-acquired handle gets a larger token: " + t1 + " after " + prev);
      l.release();
      checkEq(0L, l.fencingToken(), "no token after release");
      l.acquire(10_000);
      check(l.fencingToken() > t1, "next acquisition of the handle: larger token");
      l.close();
      // A lease that ran out and was taken over: the new holder's token is larger.
      Lock old = a.acquire("fenced-expiry", 300);
      long oldToken = old.fencingToken();
      Thread.sleep(600);
      checkEq(0L, old.fencingToken(), "no token once expired");
      try (Lock next = b.acquire("fenced-expiry", 10_000)) {
        check(next.fencingToken() > oldToken, "taker's token " + next.fencingToken() + " > " + oldToken);
      }
      expect(LockLostException.class, "expired holder's close", old::close);
      // Without the option: always 0.
      try (Lock p = plain.acquire("unfenced", 10_000)) {
        checkEq(0L, p.fencingToken(), "no token without fencing");
      }
      expect(LockStateException.class, "fencingToken after close", l::fencingToken);
    } finally {
      f.free();
    }
  }

  static void autoExtend() throws Exception {
    // Nodes are killed and restarted below without persistence: with the quarantine on they
    // would stay out of the vote for the longest TTL (tests/c/test_quarantine.c is about that).
    Options noQuarantine = new Options();
    noQuarantine.setQuarantine(false);
    try {
      autoExtend(noQuarantine);
    } finally {
      noQuarantine.free();
    }
  }

  static void autoExtend(Options noQuarantine) throws Exception {
    try (Redlock client = new Redlock(nodes(), noQuarantine)) {
      // Kept alive over several TTLs, then left to expire once stopped.
      Lock lock = client.acquire("ae", 600);
      lock.autoExtend();
      Thread.sleep(2_000); // more than three TTLs
      check(lock.isHeld(), "auto-extended lock still held after 2 s of a 600 ms TTL");
      check(lock.validityMs() > 0, "validity left: " + lock.validityMs());
      checkEq(5, holders("ae", 5), "key still on every node");
      check(lock.stopAutoExtend(), "stopAutoExtend is true when it was on");
      check(!lock.stopAutoExtend(), "and false the second time");
      check(waitFor(() -> !lock.isHeld()), "expires once auto-extension stopped");
      checkEq(0, holders("ae", 0), "and the key expires on the nodes"); // a few ms after the validity
      expect(LockLostException.class, "close of the expired lock", lock::close);

      // Arguments and state.
      try (Lock idle = client.newLock("ae-idle")) {
        expect(LockStateException.class, "autoExtend of a lock not held", idle::autoExtend);
        check(!idle.stopAutoExtend(), "stop of a lock never auto-extended");
        idle.acquire(10_000);
        expect(InvalidArgumentException.class, "negative maxHoldMs", () -> idle.autoExtend(-1, null));
        expect(InvalidArgumentException.class, "maxHoldMs over 2^32", () -> idle.autoExtend(1L << 32, null));
      }

      // Loss: the key deleted on every node behind the owner's back.
      Lock victim = client.acquire("ae-lost", 600);
      CompletableFuture<Object[]> told = new CompletableFuture<>();
      victim.autoExtend(0, (l, cause) -> told.complete(new Object[] {l, cause, Thread.currentThread()}));
      deleteEverywhere("ae-lost");
      Object[] got = told.get(20, TimeUnit.SECONDS);
      check(got[0] == victim, "the listener gets the lock");
      check(got[1] instanceof LockLostException, "cause is LockLostException: " + got[1]);
      checkEq(RedlockException.ELOST, ((RedlockException) got[1]).getCode(), "code ELOST");
      check(!((RedlockException) got[1]).getDetail().isEmpty(), "the loss has a detail: " + ((RedlockException) got[1]).getDetail());
      checkEq("redlock-lost-listener", ((Thread) got[2]).getName(), "listener thread");
      check(!victim.isHeld(), "not held after the loss");
      check(!victim.stopAutoExtend(), "auto-extension ended with the loss");
      expect(LockLostException.class, "close after the loss", victim::close);

      // The listener may close the lock itself.
      Lock selfClosing = client.acquire("ae-close", 600);
      CompletableFuture<Throwable> closedBy = new CompletableFuture<>();
      selfClosing.autoExtend(0, (l, cause) -> {
        try {
          l.close();
          closedBy.complete(null);
        } catch (Throwable t) {
          closedBy.complete(t);
        }
      });
      deleteEverywhere("ae-close");
      Throwable fromClose = closedBy.get(20, TimeUnit.SECONDS);
      check(fromClose instanceof LockLostException, "close() from the listener reports the loss: " + fromClose);
      expect(LockStateException.class, "the listener's close() freed the handle", selfClosing::isHeld);

      // The hold bound: extended up to maxHoldMs, then left to run out.
      Lock bounded = client.acquire("ae-limit", 600);
      CompletableFuture<RedlockException> limit = new CompletableFuture<>();
      bounded.autoExtend(1_000, (l, cause) -> limit.complete(cause));
      RedlockException lim = limit.get(20, TimeUnit.SECONDS);
      check(lim instanceof ExtensionLimitException, "bound reached: ExtensionLimitException: " + lim);
      checkEq(RedlockException.ELIMIT, lim.getCode(), "code ELIMIT");
      check(!bounded.isHeld(), "not held after the bound");
      try {
        bounded.close(); // the keys outlive the validity by the drift allowance: released or lost
      } catch (LockLostException e) {
        // expired on the nodes too
      }
      expect(LockStateException.class, "closed after the bound", bounded::isHeld);

      // A majority down: extensions fail until the validity runs out.
      Lock stranded = client.acquire("ae-expired", 600);
      CompletableFuture<RedlockException> expired = new CompletableFuture<>();
      stranded.autoExtend(0, (l, cause) -> expired.complete(cause));
      for (int i = 0; i < 3; i++)
        harness("KILL", Integer.toString(i));
      RedlockException exp = expired.get(20, TimeUnit.SECONDS);
      check(exp instanceof LockExpiredException, "majority down: LockExpiredException: " + exp);
      checkEq(RedlockException.EEXPIRED, exp.getCode(), "code EEXPIRED");
      for (int i = 0; i < 3; i++)
        harness("RESTART", Integer.toString(i));
      // The live minority may still hold the key (failed extensions renewed it
      // there), and a restarted node may still be in reconnect backoff.
      RedlockException afterExpiry = expect(RedlockException.class, "close after the expiry", stranded::close);
      check(afterExpiry instanceof LockLostException || afterExpiry instanceof NoQuorumException,
          "lost or unconfirmed: " + afterExpiry);
    }

    // At risk (issue 38): with a majority paused no extension succeeds, and
    // onAtRisk is told while the lock is still held, a margin before its
    // validity ends (max(3 s / 10, 2 x 50 ms) = 300 ms); the loss comes after
    // it, to lockLost. (The listeners above, lambdas, keep the default
    // onAtRisk, which does nothing: "A majority down" still heard the loss.)
    try (Redlock client = new Redlock(nodes(), noQuarantine)) {
      Lock risky = client.acquire("ae-risk", 3_000);
      CompletableFuture<Object[]> atRisk = new CompletableFuture<>();
      CompletableFuture<Object[]> lostAfter = new CompletableFuture<>();
      AtomicInteger notices = new AtomicInteger();
      risky.autoExtend(0, new LockLostListener() {
        @Override
        public void lockLost(Lock l, RedlockException cause) {
          lostAfter.complete(new Object[] {cause, System.nanoTime(), l.isHeld()});
        }

        @Override
        public void onAtRisk(Lock l, String message) {
          notices.incrementAndGet();
          atRisk.complete(new Object[] {l, message, l.isHeld(), l.validityMs(), System.nanoTime(),
              Thread.currentThread(), lostAfter.isDone()});
        }
      });
      try {
        for (int i = 0; i < 3; i++) // long before the first extension, due at 1 s
          harness("PAUSE", Integer.toString(i));
        Object[] r = atRisk.get(20, TimeUnit.SECONDS);
        check(r[0] == risky, "onAtRisk gets the lock");
        check(((String) r[1]).contains("validity ends in"), "the notice says why: " + r[1]);
        check((Boolean) r[2], "still held at the notice");
        long left = (Long) r[3];
        check(left > 50 && left <= 350, "validity left at the notice, about the margin: " + left + " ms");
        checkEq("redlock-lost-listener", ((Thread) r[5]).getName(), "onAtRisk's thread");
        check(!(Boolean) r[6], "the notice came before the loss");
        Object[] loss = lostAfter.get(20, TimeUnit.SECONDS);
        check(loss[0] instanceof LockExpiredException, "then the loss: LockExpiredException: " + loss[0]);
        check(!(Boolean) loss[2], "not held at the loss");
        long gapMs = ((Long) loss[1] - (Long) r[4]) / 1_000_000;
        check(gapMs >= 150, "the loss " + gapMs + " ms after the notice: the notice came a margin before");
        checkEq(1, notices.get(), "one notice for the one episode");
      } finally {
        for (int i = 0; i < 3; i++)
          harness("RESUME", Integer.toString(i));
      }
      try {
        risky.close(); // the live minority may still hold the key: lost, or unconfirmed
      } catch (LockLostException | NoQuorumException e) {
        // expected after the expiry
      }
    }

    // Replacing the listener, release, and close all let go of it (the JNI
    // global reference): a listener that is no longer used can be collected.
    try (Redlock client = new Redlock(nodes(), noQuarantine)) {
      Lock lock = client.acquire("ae-refs", 10_000);
      LockLostListener first = newLostListener();
      WeakReference<LockLostListener> firstRef = new WeakReference<>(first);
      lock.autoExtend(0, first);
      first = null;
      LockLostListener second = newLostListener();
      WeakReference<LockLostListener> secondRef = new WeakReference<>(second);
      lock.autoExtend(0, second); // replaces the first
      second = null;
      check(collected(firstRef), "a replaced listener is let go");
      check(secondRef.get() != null && lock.isHeld(), "the current listener is kept");
      lock.release();
      check(collected(secondRef), "release lets the listener go");
      lock.acquire(10_000);
      LockLostListener third = newLostListener();
      WeakReference<LockLostListener> thirdRef = new WeakReference<>(third);
      lock.autoExtend(0, third);
      third = null;
      lock.close();
      check(collected(thirdRef), "close lets the listener go");
    }

    // An auto-extended lock that the program drops is freed by the Cleaner,
    // which stops its extension: the key then expires on the nodes.
    try (Redlock client = new Redlock(nodes(), noQuarantine)) {
      WeakReference<Lock> dropped = acquireAndDrop(client, "ae-dropped");
      check(collected(dropped), "a dropped auto-extended lock is collected");
      long end = System.nanoTime() + 20_000_000_000L;
      while (holders("ae-dropped", 0) != 0 && System.nanoTime() < end)
        System.gc();
      checkEq(0, holders("ae-dropped", 0), "its key expires once the Cleaner freed it");
    }

    // Many auto-extended locks closed from several threads while being
    // extended: no crash, no deadlock. (A slow machine may make a release
    // fail as a lock's outcome; that is not what this checks.)
    Options patient = new Options();
    patient.setNodeTimeoutMs(2_000);
    try (Redlock client = new Redlock(nodes(), patient)) {
      List<Thread> ts = new ArrayList<>();
      List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
      for (int t = 0; t < 4; t++) {
        final int id = t;
        Thread th = new Thread(() -> {
          try {
            for (int i = 0; i < 10; i++) {
              Lock l = client.acquire("ae-race-" + id, 300);
              l.autoExtend(0, (lk, c) -> {});
              Thread.sleep(i * 13 % 120);
              try {
                l.close();
              } catch (LockLostException | NoQuorumException e) {
                // timing, not a binding failure
              }
            }
          } catch (Throwable e) {
            errors.add(e);
          }
        });
        ts.add(th);
        th.start();
      }
      for (Thread th : ts)
        th.join(60_000);
      check(ts.stream().noneMatch(Thread::isAlive), "every thread finished");
      check(errors.isEmpty(), "auto-extended locks closed while extended: " + errors);
    } finally {
      patient.free();
    }
  }

  static void nodeResults() throws Exception {
    String[] urls = nodes();
    Options opts = new Options();
    opts.setRetryCount(0);
    opts.setNodeTimeoutMs(2_000); // no timeouts from a busy machine in the report
    try (Redlock client = new Redlock(urls, opts); Redlock other = new Redlock(urls, opts)) {
      checkEq(Arrays.asList(urls), client.nodeUrls(), "nodeUrls are the URLs given");
      Lock lock = client.newLock("nr");
      List<NodeResult> rs = lock.nodeResults();
      checkEq(5, rs.size(), "one result per node");
      check(rs.stream().allMatch(r -> r.outcome() == NodeResult.Outcome.NONE), "NONE before any round: " + rs);

      lock.acquire(10_000);
      rs = lock.nodeResults();
      for (int i = 0; i < 5; i++) {
        NodeResult r = rs.get(i);
        checkEq(i, r.index(), "index");
        checkEq(urls[i], r.url(), "url of node " + i);
        check(r.outcome() == NodeResult.Outcome.OK || r.outcome() == NodeResult.Outcome.NOT_WAITED,
            "acquire: node " + i + " OK (or not waited for): " + r);
        if (r.outcome() == NodeResult.Outcome.OK)
          check(r.code() == 0 && r.rttMicros() > 0 && r.message().isEmpty(), "an OK node: " + r);
      }
      check(rs.stream().filter(r -> r.outcome() == NodeResult.Outcome.OK).count() >= 3, "a majority OK: " + rs);
      expect(UnsupportedOperationException.class, "the list is read-only", () -> lock.nodeResults().clear());

      // Contention: the other client's failed attempt is refused by a majority.
      try (Lock o = other.newLock("nr")) {
        expect(LockNotAcquiredException.class, "contention", () -> o.tryAcquire(10_000));
        List<NodeResult> ors = o.nodeResults();
        check(ors.stream().filter(r -> r.outcome() == NodeResult.Outcome.REFUSED).count() >= 3, "a majority REFUSED: " + ors);
        check(ors.stream().noneMatch(r -> r.outcome() == NodeResult.Outcome.ERROR), "no errors: " + ors);
      }
      lock.release();
      check(lock.nodeResults().stream().filter(r -> r.outcome() == NodeResult.Outcome.OK).count() >= 3,
          "release confirmed by a majority: " + lock.nodeResults());

      // One node killed: its failure shows in the report, the others are OK.
      // The first round after the kill may be decided before the broken
      // connection is noticed (NOT_WAITED); the following ones see it.
      harness("KILL", "1");
      try (Lock k = client.acquire("nr-kill", 10_000)) {
        NodeResult dead = null;
        for (int round = 0; round < 10; round++) {
          if (round > 0) {
            Thread.sleep(20);
            k.extend(10_000);
          }
          List<NodeResult> krs = k.nodeResults();
          dead = krs.get(1);
          check(dead.outcome() != NodeResult.Outcome.OK, "a killed node is never OK: " + dead);
          check(krs.stream().filter(r -> r.outcome() == NodeResult.Outcome.OK).count() >= 3, "the live nodes OK: " + krs);
          if (dead.outcome() == NodeResult.Outcome.ERROR || dead.outcome() == NodeResult.Outcome.DOWN)
            break;
        }
        check(dead.outcome() == NodeResult.Outcome.ERROR || dead.outcome() == NodeResult.Outcome.DOWN,
            "killed node reported ERROR or DOWN: " + dead);
        checkEq(RedlockException.EIO, dead.code(), "killed node's code EIO (" + dead + ")");
        checkEq(urls[1], dead.url(), "killed node's url");
        if (dead.outcome() == NodeResult.Outcome.ERROR)
          check(!dead.message().isEmpty(), "an error has a message: " + dead);
      }
      harness("RESTART", "1");
      lock.close();
      expect(LockStateException.class, "nodeResults after close", lock::nodeResults);
    } finally {
      opts.free();
    }
    // A URL with a password is reported masked.
    String[] withPassword = nodes().clone();
    withPassword[0] = withPassword[0].replace("redis://", "redis://:secret@");
    try (Redlock c = new Redlock(withPassword)) {
      check(!c.nodeUrls().get(0).contains("secret"), "password masked: " + c.nodeUrls().get(0));
    }
  }

  static void events() throws Exception {
    String[] urls = nodes();
    List<Object[]> seen = Collections.synchronizedList(new ArrayList<>()); // {event, thread}
    Options opts = new Options();
    opts.setNodeTimeoutMs(2_000); // a busy machine must not add NODE_ERROR events
    opts.setFencing(true);
    opts.setRetryCount(1);
    opts.setRetryDelayMs(10);
    opts.setRetryJitterMs(0);
    opts.setEventListener(ev -> seen.add(new Object[] {ev, Thread.currentThread()}));
    check(opts.getEventListener() != null, "getEventListener");
    Thread me = Thread.currentThread();
    try (Redlock client = new Redlock(urls, opts); Redlock plain = new Redlock(urls)) {
      opts.setEventListener(null); // the client copied the options, listener included

      Lock l = client.acquire("ev", 10_000);
      l.extend(10_000);
      l.release();
      List<RedlockEvent> evs = new ArrayList<>();
      for (Object[] s : seen) {
        check(s[1] == me, "called on the caller's thread: " + s[0]);
        if (((RedlockEvent) s[0]).type() == RedlockEvent.Type.ACQUIRE_DONE) {
          checkEq(0, ((RedlockEvent) s[0]).code(), "the acquire call's outcome");
          continue;
        }
        evs.add((RedlockEvent) s[0]);
      }
      checkEq(3, evs.size(), "acquired, extended, released: " + evs);
      if (evs.size() == 3) {
        RedlockEvent a = evs.get(0);
        checkEq(RedlockEvent.Type.ACQUIRED, a.type(), "first event");
        checkEq("ev", a.resource(), "resource");
        checkEq(0, a.code(), "code");
        checkEq(1, a.attempt(), "first attempt");
        check(!a.isAutomatic(), "not automatic");
        check(a.nodesOk() >= 3 && a.quorum() == 3 && a.nodeCount() == 5, "counts: " + a);
        check(a.validityMs() > 0 && a.validityMs() <= 10_000, "validity: " + a.validityMs());
        check(a.fencingToken() >= 1, "token with fencing: " + a.fencingToken());
        check(a.elapsedMicros() > 0, "elapsed: " + a.elapsedMicros());
        check(a.node() == -1 && a.nodeUrl() == null && a.nodeOutcome() == null, "no node fields: " + a);
        checkEq(RedlockEvent.Type.EXTENDED, evs.get(1).type(), "second event");
        check(!evs.get(1).isAutomatic() && evs.get(1).validityMs() > 0, "extension by the owner: " + evs.get(1));
        checkEq(RedlockEvent.Type.RELEASED, evs.get(2).type(), "third event");
        checkEq(0, evs.get(2).code(), "released code");
      }

      // Failed attempts: two (retryCount 1), each with its code.
      seen.clear();
      try (Lock blocker = plain.acquire("ev-busy", 10_000)) {
        expect(LockNotAcquiredException.class, "contention", () -> client.acquire("ev-busy", 10_000));
      }
      List<RedlockEvent> failedAttempts = new ArrayList<>();
      for (Object[] s : seen)
        if (((RedlockEvent) s[0]).type() == RedlockEvent.Type.ACQUIRE_FAILED)
          failedAttempts.add((RedlockEvent) s[0]);
      checkEq(2, failedAttempts.size(), "two failed attempts: " + seen.size() + " events");
      if (failedAttempts.size() == 2) {
        checkEq(1, failedAttempts.get(0).attempt(), "attempt 1");
        checkEq(2, failedAttempts.get(1).attempt(), "attempt 2");
        checkEq(RedlockException.ENOTACQUIRED, failedAttempts.get(1).code(), "failure code");
        check(!failedAttempts.get(1).message().isEmpty(), "failure detail: " + failedAttempts.get(1));
      }

      // A node down: NODE_ERROR with its index, URL and outcome. The first
      // round after the kill may be decided before the broken connection is
      // noticed; the following ones see it.
      seen.clear();
      harness("KILL", "4");
      Lock k = client.acquire("ev-node", 600);
      List<RedlockEvent> nodeErrors = new ArrayList<>();
      for (int round = 0; round < 10 && nodeErrors.isEmpty(); round++) {
        if (round > 0) {
          Thread.sleep(20);
          k.extend(600);
        }
        for (Object[] s : seen)
          if (((RedlockEvent) s[0]).type() == RedlockEvent.Type.NODE_ERROR)
            nodeErrors.add((RedlockEvent) s[0]);
      }
      check(!nodeErrors.isEmpty(), "a NODE_ERROR event: " + seen.size() + " events");
      for (RedlockEvent e : nodeErrors) {
        checkEq(4, e.node(), "the killed node's index");
        checkEq(urls[4], e.nodeUrl(), "the killed node's URL");
        check(e.nodeOutcome() == NodeResult.Outcome.ERROR || e.nodeOutcome() == NodeResult.Outcome.DOWN,
            "outcome ERROR or DOWN: " + e);
        checkEq(RedlockException.EIO, e.code(), "code EIO");
      }

      // Auto-extension: EXTENDED (automatic) on the library's thread, then
      // LOST once the key is deleted on every node.
      seen.clear();
      k.autoExtend();
      check(waitFor(() -> {
        synchronized (seen) {
          return seen.stream().anyMatch(s -> ((RedlockEvent) s[0]).type() == RedlockEvent.Type.EXTENDED);
        }
      }), "an automatic extension event");
      deleteEverywhere("ev-node");
      check(waitFor(() -> {
        synchronized (seen) {
          return seen.stream().anyMatch(s -> ((RedlockEvent) s[0]).type() == RedlockEvent.Type.LOST);
        }
      }), "a LOST event");
      synchronized (seen) {
        for (Object[] s : seen) {
          RedlockEvent e = (RedlockEvent) s[0];
          Thread t = (Thread) s[1];
          check(e.isAutomatic(), "by the auto-extend thread: " + e);
          check(t != me && t.isDaemon() && t.getName().equals("redlock-native"),
              "on the library's daemon thread: " + t);
          if (e.type() == RedlockEvent.Type.LOST)
            checkEq(RedlockException.ELOST, e.code(), "LOST code");
        }
      }
      harness("RESTART", "4");
      expect(LockLostException.class, "close after the loss", k::close);

      // A client made without a listener has none.
      seen.clear();
      try (Lock quiet = plain.acquire("ev-plain", 10_000)) {
        checkEq(0, seen.size(), "no events from a client without a listener");
      }
    }

    // A listener that throws: the exception goes to the thread's handler and
    // the lock works on.
    List<Throwable> uncaught = Collections.synchronizedList(new ArrayList<>());
    Thread.UncaughtExceptionHandler saved = me.getUncaughtExceptionHandler();
    me.setUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    Options throwing = new Options();
    throwing.setEventListener(ev -> {
      throw new IllegalStateException("listener bug");
    });
    try (Redlock client = new Redlock(urls, throwing); Lock l = client.acquire("ev-throw", 10_000)) {
      check(l.isHeld(), "acquired despite the listener's exception");
      check(!uncaught.isEmpty() && uncaught.get(0) instanceof IllegalStateException, "handler got it: " + uncaught);
    } finally {
      me.setUncaughtExceptionHandler(saved);
      throwing.free();
    }

    // The listener is let go (its JNI global reference deleted) once the
    // options, the client and the client's last lock are gone, and not before.
    AtomicInteger released = new AtomicInteger();
    RedlockEventListener listener = ev -> { // capturing: a lambda of its own
      if (ev.type() == RedlockEvent.Type.RELEASED)
        released.incrementAndGet();
    };
    WeakReference<RedlockEventListener> ref = new WeakReference<>(listener);
    Options o = new Options();
    o.setEventListener(listener);
    listener = null;
    Redlock client = new Redlock(urls, o);
    o.free();
    Lock survivor = client.acquire("ev-refs", 10_000);
    client.close();
    check(!collected(ref), "kept while a lock of the client lives");
    survivor.close();
    checkEq(1, released.get(), "a lock outliving its client still reports events");
    check(collected(ref), "let go after the last lock is closed");

    // The same when that last lock is dropped: the Cleaner's thread frees it,
    // and with it the client and the listener.
    RedlockEventListener dropped = ev -> released.hashCode();
    WeakReference<RedlockEventListener> droppedRef = new WeakReference<>(dropped);
    Options o2 = new Options();
    o2.setEventListener(dropped);
    dropped = null;
    Redlock client2 = new Redlock(urls, o2);
    o2.free();
    WeakReference<Lock> lockRef = acquireAndDrop(client2, "ev-cleaner");
    client2.close();
    check(collected(lockRef), "the dropped lock is collected");
    check(collected(droppedRef), "let go after the Cleaner freed the last lock");
    opts.free();

    // The end of each acquire call (ACQUIRE_DONE, from the C library), on the
    // caller's thread: the call's code (not its last attempt's), its attempts
    // and duration; a release's hold time (held_us); each round's node round
    // trips (node_rtts_us), in the order of the client's nodes.
    List<Object[]> done = Collections.synchronizedList(new ArrayList<>()); // {event, thread}
    Options o3 = new Options();
    o3.setNodeTimeoutMs(2_000);
    o3.setRetryCount(2);
    o3.setRetryDelayMs(10);
    o3.setRetryJitterMs(0);
    o3.setEventListener(ev -> done.add(new Object[] {ev, Thread.currentThread()}));
    try (Redlock c3 = new Redlock(urls, o3); Redlock other = new Redlock(urls)) {
      o3.free();
      try (Lock held = other.acquire("ev-done", 10_000)) {
        try (Lock no = c3.tryAcquire("ev-done", 10_000)) {
          check(false, "refused while held");
        } catch (LockNotAcquiredException expected) {
          // told below
        }
        try (Lock no = c3.acquire("ev-done", 10_000)) {
          check(false, "refused three times while held");
        } catch (LockNotAcquiredException expected) {
          // told below
        }
        try (Lock no = c3.acquire("ev-done", 10_000, 50)) {
          check(false, "timed out while held");
        } catch (LockTimeoutException expected) {
          // told below
        }
      }
      try (Lock mine = c3.acquire("ev-done", 10_000)) {
        check(mine.isHeld(), "acquired once free");
      }
      expect(InvalidArgumentException.class, "a zero TTL", () -> c3.acquire("ev-done", 0));
    }
    List<RedlockEvent> calls = new ArrayList<>();
    List<RedlockEvent> releases = new ArrayList<>();
    int rounds = 0;
    for (Object[] d : done) {
      RedlockEvent ev = (RedlockEvent) d[0];
      check(d[1] == me, "on the caller's thread: " + ev);
      checkEq("ev-done", ev.resource(), "resource");
      if (ev.type() == RedlockEvent.Type.ACQUIRE_DONE) {
        calls.add(ev);
        check(ev.nodeRttsMicros() == null && ev.nodeUrls() == null && ev.heldMicros() == 0,
            "no round fields on ACQUIRE_DONE: " + ev);
        check(ev.elapsedMicros() > 0 || ev.attempt() == 0, "a call's duration: " + ev);
      }
      if (ev.type() == RedlockEvent.Type.RELEASED)
        releases.add(ev);
      else
        checkEq(0L, ev.heldMicros(), "held only on a release or loss: " + ev);
      long[] rtts = ev.nodeRttsMicros();
      if (ev.type() == RedlockEvent.Type.ACQUIRED || ev.type() == RedlockEvent.Type.ACQUIRE_FAILED
          || ev.type() == RedlockEvent.Type.RELEASED) {
        rounds++;
        check(rtts != null && rtts.length == urls.length, "one round trip per node: " + ev);
        check(urls.length == (ev.nodeUrls() == null ? -1 : ev.nodeUrls().size()), "the nodes' URLs: " + ev);
        int answered = 0;
        for (long r : rtts == null ? new long[0] : rtts) {
          check(r >= -1, "a round trip or -1: " + r);
          if (r >= 0)
            answered++;
        }
        // Every node is up and answers what the round waited for: a majority at least.
        check(answered >= 3, "replies of a majority in " + ev + ": " + answered);
        if (rtts != null) {
          rtts[0] = -42;
          check(ev.nodeRttsMicros()[0] != -42, "nodeRttsMicros is a copy");
        }
      }
    }
    check(rounds >= 1 + 3 + 2 + 1, "round events: " + rounds);
    checkEq(5, calls.size(), "one ACQUIRE_DONE per call: " + calls);
    if (calls.size() == 5) {
      checkEq(RedlockException.ENOTACQUIRED, calls.get(0).code(), "a refusal's code");
      checkEq(1, calls.get(0).attempt(), "a try: one attempt");
      checkEq(RedlockException.ENOTACQUIRED, calls.get(1).code(), "refused after its retries");
      checkEq(3, calls.get(1).attempt(), "retryCount 2: three attempts");
      checkEq(RedlockException.ETIMEDOUT, calls.get(2).code(), "a wait that ran out: the call's code");
      check(calls.get(2).attempt() >= 1, "the wait's attempts: " + calls.get(2));
      check(calls.get(2).elapsedMicros() >= 50_000, "the wait is in the call's duration: " + calls.get(2));
      checkEq(0, calls.get(3).code(), "an acquisition's code");
      checkEq(1, calls.get(3).attempt(), "acquired at once");
      checkEq(RedlockException.EINVAL, calls.get(4).code(), "bad arguments: the call's code");
      checkEq(0, calls.get(4).attempt(), "bad arguments: no attempt");
    }
    checkEq(1, releases.size(), "one release: " + releases);
    if (releases.size() == 1)
      check(releases.get(0).heldMicros() > 0, "a release's hold time: " + releases.get(0));
  }

  // Nodes on TLS ports (nodes.py exec --tls-dir), certificates in $REDLOCK_TEST_CERTS.
  // ------------------------------------------------------ wake-up, fair mode

  private static boolean allReady(Redlock client) {
    for (ListenerState s : client.listenerStates())
      if (s != ListenerState.READY)
        return false;
    return true;
  }

  private static List<RedlockEvent> ofType(List<RedlockEvent> evs, RedlockEvent.Type type) {
    List<RedlockEvent> out = new ArrayList<>();
    synchronized (evs) {
      for (RedlockEvent e : evs)
        if (e.type() == type)
          out.add(e);
    }
    return out;
  }

  static void wake() throws Exception {
    String[] urls = nodes();
    // Options and LockOptions: wake-up and fair mode off by default (waiters poll); a lock's own
    // over its client's.
    Options plain = new Options();
    check(!plain.getWake() && !plain.getFair(), "Options defaults: wake off, fair off");
    plain.setWake(true);
    plain.setFair(true);
    check(plain.getWake() && plain.getFair(), "Options setters");
    checkEq(0x18L, plain.getFlags() & 0x1cL, "REDLOCK_OPT_WAKE | REDLOCK_OPT_FAIR in flags, no REDLOCK_OPT_NO_WAKE");
    plain.setWake(false);
    check(plain.getWake(), "fair mode implies wake-up (C's redlock_flags_wake)");
    plain.setFair(false);
    check(!plain.getWake(), "neither bit: waiters poll");
    plain.setWake(true);
    plain.setFair(true);
    LockOptions lo = new LockOptions();
    check(!lo.getWake() && !lo.getFair(), "LockOptions defaults");
    check(lo.toString().contains("wake=false, fair=false"), "toString: " + lo);
    lo.free();
    try (Redlock client = new Redlock(urls, plain); Lock lock = client.newLock("wake-opts")) {
      LockOptions o = lock.getOptions();
      check(o.getWake() && o.getFair(), "a lock inherits the client's wake and fair: " + o);
      o.setWake(false);
      o.setFair(false);
      lock.setOptions(o);
      LockOptions back = lock.getOptions();
      check(!back.getWake() && !back.getFair(), "per-lock wake and fair: " + back);
      checkEq(o.getRetryCount(), back.getRetryCount(), "the rest of the policy unchanged");
      o.free();
      back.free();
    }
    plain.free();

    List<RedlockEvent> evs = Collections.synchronizedList(new ArrayList<>());
    Options slow = new Options();
    slow.setNodeTimeoutMs(2_000);
    slow.setRetryCount(1_000);
    slow.setRetryDelayMs(20_000); // only a wake-up gets the lock soon; a broken one shows as no WOKEN
    slow.setRetryJitterMs(0);
    slow.setWake(true);
    slow.setEventListener(evs::add);
    Redlock closed = new Redlock(urls);
    closed.close();
    expect(LockStateException.class, "listenerState of a closed client", () -> closed.listenerState(0));
    try (Redlock holderClient = new Redlock(urls); Redlock client = new Redlock(urls, slow)) {
      checkEq(Collections.nCopies(urls.length, ListenerState.OFF), client.listenerStates(), "no listener before a wait");
      checkEq("", client.listenerMessage(0), "no message");
      expect(InvalidArgumentException.class, "node index out of range", () -> client.listenerState(urls.length));
      expect(InvalidArgumentException.class, "negative node index", () -> client.listenerState(-1));

      Lock holder = holderClient.acquire("wake-1", 30_000);
      Lock waiter = client.newLock("wake-1");
      CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> waiter.acquire(10_000, 60_000));
      check(waitFor(() -> allReady(client) && !ofType(evs, RedlockEvent.Type.ACQUIRE_FAILED).isEmpty()),
          "the waiter's listeners READY: " + client.listenerStates());
      long released = System.nanoTime();
      holder.release();
      waited.get(60, TimeUnit.SECONDS);
      long tookMs = (System.nanoTime() - released) / 1_000_000;
      check(waiter.isHeld(), "the woken waiter holds the lock");
      waiter.close();
      holder.close();
      // Woken by the release (a WOKEN event), or by its listener's READY, whose retry can
      // land just after the release on a loaded machine: either way long before the 20 s
      // retry delay, which is what a broken wake-up would wait.
      List<RedlockEvent> woken = ofType(evs, RedlockEvent.Type.WOKEN);
      check(tookMs < 10_000, "the waiter got the lock " + tookMs + " ms after the release: " + evs);
      if (!woken.isEmpty()) {
        RedlockEvent w = woken.get(0);
        checkEq("wake-1", w.resource(), "WOKEN resource");
        check(w.node() >= 0 && w.nodeUrl().equals(client.nodeUrls().get(w.node())), "WOKEN node: " + w);
      }
      int ready = 0;
      for (RedlockEvent e : ofType(evs, RedlockEvent.Type.LISTENER)) {
        check(e.resource().equals("wake-1") && e.nodeUrl() != null && e.listenerState() != null, "LISTENER event: " + e);
        if (e.listenerState() == ListenerState.READY)
          ready++;
      }
      checkEq(urls.length, ready, "a READY event per node");

      // Per lock, wake-up off: the waiter polls (a short delay here) and opens nothing more.
      evs.clear();
      LockOptions poll = new LockOptions();
      poll.setWake(false);
      poll.setRetryCount(1_000);
      poll.setRetryDelayMs(10);
      poll.setRetryJitterMs(0);
      Lock holder2 = holderClient.acquire("wake-2", 30_000);
      Lock poller = client.newLock("wake-2", poll);
      poll.free();
      CompletableFuture<Void> polled = CompletableFuture.runAsync(() -> poller.acquire(10_000, 60_000));
      check(waitFor(() -> ofType(evs, RedlockEvent.Type.ACQUIRE_FAILED).size() >= 2), "the poller's retries");
      holder2.release();
      polled.get(60, TimeUnit.SECONDS);
      check(poller.isHeld(), "the polling waiter holds the lock");
      poller.close();
      holder2.close();
      check(ofType(evs, RedlockEvent.Type.WOKEN).isEmpty(), "no WOKEN with wake-up off: " + evs);
    }
    slow.free();
  }

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

  // ------------------------------------------------------------ unreachable

  // A wait that must end by itself runs under this guard; reaching it fails
  // the test. It is a hang check, not a timing assertion.
  private static final long GUARD_SECONDS = 60;

  /** Loopback ports nothing listens on: each bound once (port 0), noted, closed. */
  private static int[] closedPorts(int n) throws IOException {
    // All n bound at once, then all closed: a port closed before the next
    // bind may be handed out again, and two equal URLs are refused.
    int[] ports = new int[n];
    ServerSocket[] open = new ServerSocket[n];
    try {
      for (int i = 0; i < n; i++) {
        open[i] = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        ports[i] = open[i].getLocalPort();
      }
    } finally {
      for (ServerSocket s : open)
        if (s != null)
          s.close();
    }
    return ports;
  }

  /** Runs body on a daemon thread; returns what it threw (null if nothing), or fails if it still runs after the guard. */
  private static Throwable guarded(String what, Body body) throws InterruptedException {
    FutureTask<Void> task = new FutureTask<>(() -> {
      body.run();
      return null;
    });
    Thread th = new Thread(task, "unreachable-" + what);
    th.setDaemon(true);
    th.start();
    try {
      task.get(GUARD_SECONDS, TimeUnit.SECONDS);
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (java.util.concurrent.TimeoutException e) {
      check(false, what + ": still waiting after " + GUARD_SECONDS + " s");
      return null;
    }
  }

  /** t must be a NodesUnreachableException whose message names every node in names. */
  private static void checkUnreachable(Throwable t, String what, String... names) {
    if (!(t instanceof NodesUnreachableException)) {
      check(false, what + ": expected NodesUnreachableException, got " + t);
      if (t != null)
        t.printStackTrace(System.out);
      return;
    }
    NodesUnreachableException e = (NodesUnreachableException) t;
    check(e instanceof NoQuorumException, what + ": is a NoQuorumException");
    checkEq(RedlockException.EUNREACHABLE, e.getCode(), what + ": code");
    checkEq(-16, e.getCode(), what + ": REDLOCK_EUNREACHABLE is -16");
    checkEq("REDLOCK_EUNREACHABLE", e.getErrorName(), what + ": error name");
    for (String n : names)
      check(e.getMessage().contains(n), what + ": the message names " + n + ": " + e.getMessage());
  }

  static void unreachable() throws Exception {
    // Options: 0 (the library's default bound) until set; the two named values.
    Options defaults = new Options();
    checkEq(Options.UNREACHABLE_DEFAULT, defaults.getUnreachableMs(), "unreachableMs starts at the default");
    defaults.setUnreachableMs(Options.UNREACHABLE_NEVER);
    checkEq(4294967295L, defaults.getUnreachableMs(), "UNREACHABLE_NEVER is UINT32_MAX");
    defaults.setUnreachableMs(604_800_001L); // past REDLOCK_MAX_WAIT_MS and not NEVER
    expect(InvalidArgumentException.class, "unreachableMs past seven days",
        () -> new Redlock(new String[]{"redis://127.0.0.1:6379"}, defaults).close());
    expect(InvalidArgumentException.class, "unreachableMs past 2^32-1",
        () -> defaults.setUnreachableMs(1L << 32));
    defaults.free();

    // Three closed loopback ports: a wait without a bound of its own ends,
    // naming every node and what it said.
    int[] ports = closedPorts(3);
    String[] dead = new String[3];
    String[] names = new String[3];
    for (int i = 0; i < 3; i++) {
      names[i] = "127.0.0.1:" + ports[i];
      dead[i] = "redis://" + names[i];
    }
    try (Redlock client = new Redlock(dead)) {
      Throwable t = guarded("closed ports, Redlock.acquire",
          () -> client.acquire("unreachable", 5_000, Redlock.WAIT_FOREVER).close());
      checkUnreachable(t, "closed ports", names);
      if (t != null)
        check(t.getMessage().contains("Connection refused"), "the message says what the nodes said: " + t.getMessage());
      try (Lock lock = client.newLock("unreachable")) {
        checkUnreachable(guarded("closed ports, Lock.acquire", () -> lock.acquire(5_000, Redlock.WAIT_FOREVER)),
            "closed ports, Lock.acquire", names);
        check(!lock.isHeld(), "not held after NodesUnreachableException");
      }
      // One attempt is not a wait: no quorum, at once.
      NoQuorumException q = expect(NoQuorumException.class, "tryAcquire on closed ports",
          () -> client.tryAcquire("unreachable", 5_000));
      check(q != null && !(q instanceof NodesUnreachableException), "tryAcquire: a plain NoQuorumException: " + q);
    }

    // An explicit bound.
    Options bounded = new Options();
    bounded.setUnreachableMs(300);
    try (Redlock client = new Redlock(dead, bounded)) {
      checkUnreachable(guarded("unreachableMs 300",
          () -> client.acquire("unreachable", 5_000, Redlock.WAIT_FOREVER).close()), "unreachableMs 300", names);
    }
    bounded.free();

    // UNREACHABLE_NEVER: only the wait's own bound ends it.
    Options never = new Options();
    never.setUnreachableMs(Options.UNREACHABLE_NEVER);
    try (Redlock client = new Redlock(dead, never)) {
      Throwable t = guarded("UNREACHABLE_NEVER", () -> client.acquire("unreachable", 5_000, 2_000).close());
      check(t instanceof LockTimeoutException, "UNREACHABLE_NEVER: the wait ends in LockTimeoutException: " + t);
    }
    never.free();

    // Host names that do not resolve.
    String[] unresolvable = {"redis://no-such-host.invalid:6379", "redis://also-no-such-host.invalid:6379",
        "redis://third-no-such-host.invalid:6379"};
    try (Redlock client = new Redlock(unresolvable)) { // names are resolved when connecting
      checkUnreachable(guarded("unresolvable names",
          () -> client.acquire("unreachable", 5_000, Redlock.WAIT_FOREVER).close()), "unresolvable names",
          "no-such-host.invalid:6379", "also-no-such-host.invalid:6379", "third-no-such-host.invalid:6379");
    }

    // A busy lock on the real nodes still waits, and times out as before, even
    // with the tightest bound: every node answers, so it never applies.
    Options tight = new Options();
    tight.setUnreachableMs(1);
    try (Redlock holder = new Redlock(nodes());
         Redlock waiter = new Redlock(nodes(), tight);
         Lock held = holder.acquire("unreachable-busy", 30_000)) {
      Throwable t = guarded("busy lock", () -> waiter.acquire("unreachable-busy", 5_000, 1_000).close());
      check(t instanceof LockTimeoutException, "busy lock: LockTimeoutException: " + t);
      check(!(t instanceof NodesUnreachableException), "busy lock: not NodesUnreachableException");
      check(held.isHeld(), "the holder still holds it");
    }
    tight.free();
  }

  // ---------------------------------------------------------------- election

  /** Leader election: campaign, proclaim, resign, leader, observe, and the latch listener. */
  static void election() throws Exception {
    String name = "java-election-" + ProcessHandle.current().pid();
    try (Redlock a = new Redlock(nodes()); Redlock b = new Redlock(nodes());
         Election ea = a.newElection(name); Election eb = b.newElection(name)) {
      Leader none = eb.leader();
      check(!none.isPresent() && none.value() == null, "no leader at first: " + none);
      ea.campaign("alpha", 10_000, Redlock.WAIT_NONE);
      long t1 = ea.term();
      check(t1 >= 1 && ea.isLeader(), "alpha leads with term " + t1);
      checkEq(new Leader(true, t1, 1, "alpha"), eb.leader(), "leader read by another client");
      expect(LockNotAcquiredException.class, "second campaigner, one attempt",
          () -> eb.campaign("beta", 10_000, Redlock.WAIT_NONE));
      expect(LockStateException.class, "proclaim by a non-leader", () -> eb.proclaim("beta"));
      ea.proclaim("alpha-2");
      checkEq(new Leader(true, t1, 2, "alpha-2"), eb.leader(), "after proclaim");
      // observe: the next state after the current one
      Leader seen = eb.leader();
      checkEq(null, eb.observe(seen, 100), "no change: null after the wait");
      ea.resign();
      Leader after = eb.observe(seen, 5_000);
      check(after != null && !after.isPresent() && after.term() == t1, "observed the resign: " + after);
      // the latch: isLeader then notLeader
      java.util.concurrent.BlockingQueue<String> told = new java.util.concurrent.LinkedBlockingQueue<>();
      eb.start("beta", 10_000, new LeaderLatchListener() {
        public void isLeader(long term) { told.add("leader " + term); }
        public void notLeader() { told.add("not leader"); }
      });
      String first = told.poll(10, java.util.concurrent.TimeUnit.SECONDS);
      check(first != null && first.startsWith("leader ") && Long.parseLong(first.substring(7)) > t1,
          "latch told isLeader with a higher term: " + first);
      checkEq("beta", ea.leader().value(), "the latch's value");
      eb.stop();
      checkEq("not leader", told.poll(10, java.util.concurrent.TimeUnit.SECONDS), "latch told notLeader on stop");
      check(!ea.leader().isPresent(), "stop resigned");
      expect(InvalidArgumentException.class, "empty name", () -> a.newElection(""));
      electionObserveEnds(a, b, name + "-observe");
    }
  }

  /**
   * observe's timeout (null within waitMs and a margin, no change), and close() from another
   * thread ending a WAIT_FOREVER observe and a waiting campaign at once, the handle then freed.
   */
  static void electionObserveEnds(Redlock a, Redlock b, String name) throws Exception {
    final long margin = 500; // ms a loaded machine may add
    try (Election lead = a.newElection(name)) {
      Election watch = b.newElection(name);
      Leader seen = watch.leader();
      long t0 = System.nanoTime();
      Leader none = watch.observe(seen, 400);
      long ms = (System.nanoTime() - t0) / 1_000_000;
      check(none == null && ms >= 390 && ms < 400 + margin, "observe(400 ms), no change: null after " + ms + " ms");
      // a loop over observe ends with the timeout
      int changes = 0;
      t0 = System.nanoTime();
      for (Leader next; (next = watch.observe(seen, 300)) != null; seen = next)
        changes++;
      ms = (System.nanoTime() - t0) / 1_000_000;
      check(changes == 0 && ms < 300 + margin, "the loop ended after " + ms + " ms, " + changes + " changes");

      // close() from another thread ends an observe that waits for ever
      FutureTask<Leader> observing = new FutureTask<>(() -> watch.observe(watch.leader(), Redlock.WAIT_FOREVER));
      Thread th = new Thread(observing, "election-observer");
      th.start();
      Thread.sleep(300); // in C's wait by now
      check(!observing.isDone(), "observe waits while nothing changes");
      t0 = System.nanoTime();
      watch.close();
      th.join(5_000);
      ms = (System.nanoTime() - t0) / 1_000_000;
      check(!th.isAlive() && ms < 250, "close() ended the observe after " + ms + " ms");
      Throwable why = null;
      try {
        observing.get();
      } catch (java.util.concurrent.ExecutionException e) {
        why = e.getCause();
      }
      check(why instanceof LockStateException, "the observe ended by close: LockStateException: " + why);
      expect(LockStateException.class, "observe after close", () -> watch.observe(null, 100));
      check(!watch.isLeader() && watch.term() == 0, "isLeader and term after close");
      watch.close(); // idempotent

      // close() from another thread ends a campaign that waits for ever
      lead.campaign("held", 10_000, Redlock.WAIT_NONE);
      Election rival = b.newElection(name);
      FutureTask<Void> campaigning = new FutureTask<>(() -> {
        rival.campaign("rival", 10_000, Redlock.WAIT_FOREVER);
        return null;
      });
      Thread tc = new Thread(campaigning, "election-rival");
      tc.start();
      Thread.sleep(300);
      t0 = System.nanoTime();
      rival.close();
      tc.join(5_000);
      ms = (System.nanoTime() - t0) / 1_000_000;
      check(!tc.isAlive() && ms < 250, "close() ended the campaign after " + ms + " ms");
      why = null;
      try {
        campaigning.get();
      } catch (java.util.concurrent.ExecutionException e) {
        why = e.getCause();
      }
      check(why instanceof CancelledException, "the campaign ended by close: CancelledException: " + why);
      checkEq("held", lead.leader().value(), "the leader is unharmed");
    }
  }

  // ------------------------------------------------------ issue 24: read-write lock

  static void rwLock() throws Exception {
    try (Redlock a = new Redlock(nodes()); Redlock b = new Redlock(nodes())) {
      java.util.concurrent.locks.ReadWriteLock rw = new RedlockReadWriteLock(a, "rw", 10_000);
      java.util.concurrent.locks.ReadWriteLock rw2 = new RedlockReadWriteLock(b, "rw", 10_000);
      // readers share, in other threads and other clients
      rw.readLock().lock();
      FutureTask<Boolean> other = new FutureTask<>(() -> {
        boolean got = rw.readLock().tryLock();
        if (got)
          rw.readLock().unlock();
        return got;
      });
      new Thread(other).start();
      check(other.get(), "a second reader in another thread shares the lock");
      check(rw2.readLock().tryLock(), "a reader of another client shares the lock");
      check(!rw2.writeLock().tryLock(), "a writer is refused while readers hold");
      check(!b.newLock("rw").isHeld(), "sanity");
      expect(LockNotAcquiredException.class, "a mutex of the name is refused too",
          () -> b.tryAcquire("rw", 1_000));
      expect(LockStateException.class, "not reentrant", () -> rw.readLock().lock());
      rw.readLock().unlock();
      rw2.readLock().unlock();
      expect(IllegalMonitorStateException.class, "unlock without lock", () -> rw.readLock().unlock());
      // a writer excludes readers and writers
      check(rw2.writeLock().tryLock(5, TimeUnit.SECONDS), "a writer once the readers left");
      check(!rw.readLock().tryLock(), "a reader is refused while a writer holds");
      check(!rw.writeLock().tryLock(200, TimeUnit.MILLISECONDS), "a second writer times out");
      // downgrade: the writer becomes a reader; readers join, writers still wait
      ((RedlockReadWriteLock) rw2).downgrade();
      check(((RedlockReadWriteLock) rw2).heldBy(false) != null, "the downgraded lock is the thread's read lock");
      check(rw.readLock().tryLock(), "a reader joins after the downgrade");
      check(!rw.writeLock().tryLock(), "a writer is still refused");
      rw.readLock().unlock();
      rw2.readLock().unlock();
      // an interrupted waiter gives up
      rw.readLock().lock();
      AtomicReference<Throwable> seen = new AtomicReference<>();
      Thread waiter = new Thread(() -> {
        try {
          rw2.writeLock().lockInterruptibly();
          rw2.writeLock().unlock();
        } catch (Throwable t) {
          seen.set(t);
        }
      });
      waiter.start();
      Thread.sleep(300);
      long interrupted = System.nanoTime();
      waiter.interrupt();
      waiter.join(5_000);
      check(seen.get() instanceof InterruptedException, "lockInterruptibly ends on interrupt: " + seen.get());
      // one C wait, cancelled by the interrupt: it ends after at most the round in flight
      check(System.nanoTime() - interrupted < 2_000_000_000L, "the interrupt ends the wait at once");
      // a timed wait, one C wait too, gets the lock when it is released
      AtomicReference<Object> timed = new AtomicReference<>();
      Thread patientWriter = new Thread(() -> {
        try {
          timed.set(rw2.writeLock().tryLock(20, java.util.concurrent.TimeUnit.SECONDS));
          rw2.writeLock().unlock();
        } catch (Throwable t) {
          timed.set(t);
        }
      });
      patientWriter.start();
      Thread.sleep(300);
      check(timed.get() == null, "tryLock(20 s) waits while the read lock is held");
      rw.readLock().unlock();
      patientWriter.join(10_000);
      checkEq(Boolean.TRUE, timed.get(), "tryLock(20 s) gets the write lock once the reader leaves");
      // A wait beyond C's longest finite one (lowered here to 200 ms) is one C wait without an
      // end, cancelled at the deadline: false after the time asked, not after C's limit.
      java.lang.reflect.Field limit = Lock.class.getDeclaredField("cWaitLimitMs");
      limit.setAccessible(true);
      long saved = limit.getLong(null);
      limit.setLong(null, 200);
      try {
        rw.readLock().lock();
        long t0 = System.nanoTime();
        boolean got = rw2.writeLock().tryLock(800, java.util.concurrent.TimeUnit.MILLISECONDS);
        long took = (System.nanoTime() - t0) / 1_000_000;
        check(!got, "tryLock(800 ms) beyond the lowered limit gives up");
        check(took >= 800 && took < 800 + 1_500, "it gives up at its own deadline: " + took + " ms");
        rw.readLock().unlock();
        check(rw2.writeLock().tryLock(800, java.util.concurrent.TimeUnit.MILLISECONDS),
            "the next tryLock, the cancel reset, gets the free lock");
        rw2.writeLock().unlock();
      } finally {
        limit.setLong(null, saved);
      }
      expect(UnsupportedOperationException.class, "no conditions", () -> rw.writeLock().newCondition());
      expect(InvalidArgumentException.class, "an empty name", () -> new RedlockReadWriteLock(a, "", 1_000));
      expect(NullPointerException.class, "a null client", () -> new RedlockReadWriteLock(null, "x", 1_000));
      expect(InvalidArgumentException.class, "a mutex is not downgraded", () -> {
        try (Lock m = a.acquire("rw-mutex", 5_000)) {
          m.downgrade();
        }
      });
      int left = holders("rw", 0);
      checkEq(0, left, "nothing left behind" + (left == 0 ? "" : ": " + describeKey("rw")));
    }
  }

  // ------------------------------------------------------------ semaphore
  // io.redlock.Semaphore: java.util.concurrent.Semaphore's permit methods over
  // C semaphore handles; the limit kept on the nodes.

  static void semaphore() throws Exception {
    try (Redlock a = new Redlock(nodes()); Redlock b = new Redlock(nodes());
         io.redlock.Semaphore s1 = new io.redlock.Semaphore(a, "sem", 2, 10_000);
         io.redlock.Semaphore s2 = new io.redlock.Semaphore(b, "sem", 2, 10_000)) {
      check(s1.tryAcquire(), "first permit");
      check(s2.tryAcquire(), "second permit");
      check(!s1.tryAcquire(), "no third permit of two");
      long t0 = System.nanoTime();
      check(!s1.tryAcquire(300, TimeUnit.MILLISECONDS), "a bounded wait on a full semaphore runs out");
      check((System.nanoTime() - t0) / 1_000_000 >= 250, "it waited");
      checkEq(1, s1.heldPermits(), "held through s1");
      check(s1.permits().get(0).isHeld() && s1.permits().get(0).validityMs() > 0, "a permit is a held Lock");

      // A waiter gets a permit once another client releases one.
      AtomicReference<Object> got = new AtomicReference<>();
      Thread waiter = new Thread(() -> {
        try {
          s1.acquire();
          got.set(Boolean.TRUE);
        } catch (Throwable e) {
          got.set(e);
        }
      });
      waiter.start();
      Thread.sleep(500);
      check(got.get() == null, "the waiter waits");
      s2.release();
      waiter.join(20_000);
      checkEq(Boolean.TRUE, got.get(), "the waiter got the released permit");
      checkEq(2, s1.heldPermits(), "two held through s1");
      s1.release(2);
      expect(IllegalStateException.class, "release of more than acquired", s1::release);

      // acquireUninterruptibly: an interrupt while it waits neither ends the wait nor is
      // lost; the permit comes with the release, and the thread's interrupt status is set.
      // The waiter is known to wait once its client reports a refused attempt.
      check(s1.tryAcquire(), "first permit again");
      check(s2.tryAcquire(), "second permit again");
      AtomicInteger refused = new AtomicInteger();
      Options ow = new Options();
      ow.setEventListener(ev -> {
        if (ev.type() == RedlockEvent.Type.ACQUIRE_FAILED)
          refused.incrementAndGet();
      });
      try (Redlock cw = new Redlock(nodes(), ow);
           io.redlock.Semaphore sw = new io.redlock.Semaphore(cw, "sem", 2, 10_000)) {
        AtomicReference<Object> unint = new AtomicReference<>();
        Thread patient = new Thread(() -> {
          try {
            sw.acquireUninterruptibly();
            unint.set(Thread.currentThread().isInterrupted() ? "interrupted and holding" : "holding");
          } catch (Throwable e) {
            unint.set(e);
          }
        });
        patient.start();
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (refused.get() == 0 && System.nanoTime() < deadline)
          Thread.sleep(20);
        check(refused.get() > 0, "the uninterruptible acquire was refused, and waits");
        patient.interrupt();
        check(unint.get() == null, "an interrupt does not end the wait");
        s2.release();
        patient.join(20_000);
        checkEq("interrupted and holding", unint.get(), "the permit, with the interrupt status kept");
        checkEq(1, sw.heldPermits(), "held through the waiter's semaphore");

        // acquire(), by contrast, ends its wait when interrupted, holding nothing.
        refused.set(0);
        AtomicReference<Object> intr = new AtomicReference<>();
        Thread impatient = new Thread(() -> {
          try {
            sw.acquire();
            intr.set("holding");
          } catch (Throwable e) {
            intr.set(e);
          }
        });
        impatient.start();
        deadline = System.nanoTime() + 20_000_000_000L;
        while (refused.get() == 0 && System.nanoTime() < deadline)
          Thread.sleep(20);
        check(refused.get() > 0, "acquire() was refused, and waits");
        impatient.interrupt();
        impatient.join(20_000);
        check(intr.get() instanceof InterruptedException, "acquire() ends with InterruptedException: " + intr.get());
        checkEq(1, sw.heldPermits(), "the interrupted acquire holds nothing");
        sw.release();
      }
      s1.release();
      try (io.redlock.Semaphore four = new io.redlock.Semaphore(a, "sem4", 4, 10_000)) {
        four.acquireUninterruptibly(3);
        checkEq(3, four.heldPermits(), "3 of 4 at once");
        check(!four.tryAcquire(2), "not 2 more");
        expect(InvalidArgumentException.class, "5 permits of 4", () -> four.acquireUninterruptibly(5));
        four.release(3);
      }

      // Several at once, all or none.
      try (io.redlock.Semaphore five = new io.redlock.Semaphore(a, "sem5", 5, 10_000)) {
        check(five.tryAcquire(3), "3 of 5");
        check(!five.tryAcquire(3), "not 3 more");
        check(five.tryAcquire(2, 1, TimeUnit.SECONDS), "the 2 left");
        expect(IllegalStateException.class, "1 of an acquisition of 2", five::release);
        five.release(5);
      }

      // Another limit on the same name while a permit is held.
      check(s1.tryAcquire(), "a permit of the limit-2 semaphore");
      try (io.redlock.Semaphore three = new io.redlock.Semaphore(b, "sem", 3, 10_000)) {
        InvalidArgumentException e = expect(InvalidArgumentException.class, "another limit",
            three::tryAcquire);
        check(e != null && e.getMessage().contains("limit of 2") && e.getMessage().contains("not 3"),
            "the message names both limits: " + (e == null ? "" : e.getMessage()));
      }
      s1.release();

      expect(InvalidArgumentException.class, "limit 0", () -> new io.redlock.Semaphore(a, "x", 0, 10_000));
      expect(InvalidArgumentException.class, "limit 1001", () -> new io.redlock.Semaphore(a, "x", 1001, 10_000));
      expect(InvalidArgumentException.class, "3 permits of 2", () -> s1.tryAcquire(3));
      expect(InvalidArgumentException.class, "empty name", () -> new io.redlock.Semaphore(a, "", 2, 10_000));
    }
  }

  // ------------------------------------------------------------ multilock
  // Redlock.newMultiLock: several names held together, all or none, as a Lock
  // over a C multi-resource handle.

  static void multiLock() throws Exception {
    Options f = new Options();
    f.setFencing(true);
    try (Redlock a = new Redlock(nodes(), f); Redlock b = new Redlock(nodes(), f)) {
      long last = 0;
      for (int i = 0; i < 3; i++) {  // mb's counter runs ahead
        try (Lock l = b.acquire("mb", 10_000)) {
          last = l.fencingToken();
        }
      }
      Lock x = a.newMultiLock("ma", "mb");
      Lock y = b.newMultiLock("mb", "ma");
      checkEq("ma,mb", x.resource(), "canonical name");
      checkEq(x.resource(), y.resource(), "the same set in the other order");
      x.tryAcquire(10_000);
      check(x.isHeld(), "the set held");
      long tok = x.fencingToken();
      check(tok > last, "the set's token " + tok + " above mb's " + last);
      expect(LockNotAcquiredException.class, "the set in the other order", () -> y.tryAcquire(10_000));
      Lock single = b.newLock("ma");
      expect(LockNotAcquiredException.class, "a lock on one of the names", () -> single.tryAcquire(10_000));
      x.extend(20_000);
      check(x.validityMs() > 10_000, "extended");
      x.release();
      y.tryAcquire(10_000);
      check(y.isHeld(), "the other order after the release");
      y.release();
      try (Lock m = a.acquire("ma", 10_000)) {
        check(m.fencingToken() > tok, "ma's next token is above the set's");
      }

      // Opposite orders in a loop, each waiting: both keep getting their set.
      AtomicInteger gotX = new AtomicInteger(), gotY = new AtomicInteger();
      AtomicReference<Throwable> err = new AtomicReference<>();
      Thread tx = new Thread(() -> loopMulti(x, gotX, err)), ty = new Thread(() -> loopMulti(y, gotY, err));
      tx.start();
      ty.start();
      tx.join(120_000);
      ty.join(120_000);
      check(err.get() == null, "no failed wait: " + err.get());
      checkEq(20, gotX.get(), "{ma, mb} held every round");
      checkEq(20, gotY.get(), "{mb, ma} held every round");
      x.close();
      y.close();
      single.close();

      expect(InvalidArgumentException.class, "no names", () -> a.newMultiLock());
      expect(InvalidArgumentException.class, "a name twice", () -> a.newMultiLock("q", "q"));
      expect(InvalidArgumentException.class, "an empty name", () -> a.newMultiLock("q", ""));
      expect(InvalidArgumentException.class, "a NUL", () -> a.newMultiLock("q", "a\0b"));
      String[] many = new String[65];
      for (int i = 0; i < many.length; i++)
        many[i] = "many" + i;
      InvalidArgumentException e = expect(InvalidArgumentException.class, "65 names", () -> a.newMultiLock(many));
      check(e != null && e.getMessage().contains("limit"), "the message says the limit: " + (e == null ? "" : e.getMessage()));
    }
    multiLockAutoExtend();
    multiLockNodeResults();
    multiLockWake();
  }

  // A set on the watchdog: kept over several TTLs, excluding the same set
  // and a lock on one of its names; a loss (one name's key deleted on every
  // node) is told to the listener as for a single resource.
  private static void multiLockAutoExtend() throws Exception {
    try (Redlock a = new Redlock(nodes()); Redlock b = new Redlock(nodes())) {
      Lock x = a.newMultiLock("mae-a", "mae-b");
      x.tryAcquire(600);
      CompletableFuture<RedlockException> lost = new CompletableFuture<>();
      x.autoExtend(0, (l, cause) -> lost.complete(cause));
      Thread.sleep(2_000); // more than three TTLs
      check(x.isHeld(), "the auto-extended set still held after 2 s of a 600 ms TTL");
      check(!lost.isDone(), "no loss told: " + lost.getNow(null));
      checkEq(5, holders("mae-a", 5), "the set's first key on every node");
      checkEq(5, holders("mae-b", 5), "the set's second key on every node");
      try (Lock y = b.newMultiLock("mae-b", "mae-a"); Lock one = b.newLock("mae-b")) {
        expect(LockNotAcquiredException.class, "the set, the other way round, while kept", () -> y.tryAcquire(10_000));
        expect(LockNotAcquiredException.class, "one of its names, while kept", () -> one.tryAcquire(10_000));
      }
      deleteEverywhere("mae-b");
      RedlockException cause = lost.get(20, TimeUnit.SECONDS);
      check(cause instanceof LockLostException, "one name's key gone: LockLostException: " + cause);
      check(cause != null && cause.getDetail().contains("mae-a,mae-b"), "the detail names the set: "
          + (cause == null ? "" : cause.getDetail()));
      check(!x.isHeld(), "not held after the loss");
      check(!x.stopAutoExtend(), "auto-extension ended with the loss");
      expect(LockLostException.class, "close after the loss", x::close);
    }
  }

  // Lock.nodeResults of a set: per node, as for one resource; a node where
  // one of its names is held by someone else refuses the whole set there.
  private static void multiLockNodeResults() throws Exception {
    Options o = new Options();
    o.setRetryCount(0);
    o.setNodeTimeoutMs(2_000); // no timeouts from a busy machine in the report
    try (Redlock a = new Redlock(nodes(), o)) {
      harness("CMD", "0", "SET", "mnr-b", "someone-else", "PX", "30000");
      try (Lock x = a.newMultiLock("mnr-a", "mnr-b")) {
        List<NodeResult> rs = x.nodeResults();
        checkEq(5, rs.size(), "one result per node");
        check(rs.stream().allMatch(r -> r.outcome() == NodeResult.Outcome.NONE), "NONE before any round: " + rs);
        // A round ends once a quorum has answered: node 0's refusal shows only
        // when its reply came before that (else NOT_WAITED), so the set is
        // taken again until it did.
        for (int attempt = 1; ; attempt++) {
          x.tryAcquire(10_000);
          rs = x.nodeResults();
          if (rs.get(0).outcome() != NodeResult.Outcome.NOT_WAITED || attempt == 50)
            break;
          x.release();
        }
        checkEq(NodeResult.Outcome.REFUSED, rs.get(0).outcome(), "node 0, where mnr-b is held, refuses the set: " + rs);
        checkEq(null, get(0, "mnr-a"), "and sets none of its keys");
        for (int i = 1; i < 5; i++)
          check(rs.get(i).outcome() == NodeResult.Outcome.OK || rs.get(i).outcome() == NodeResult.Outcome.NOT_WAITED,
              "node " + i + " OK (or not waited for): " + rs.get(i));
        check(rs.stream().filter(r -> r.outcome() == NodeResult.Outcome.OK).count() >= 3, "a majority OK: " + rs);
        x.release();
        rs = x.nodeResults();
        check(rs.stream().filter(r -> r.outcome() == NodeResult.Outcome.OK).count() >= 3,
            "the release confirmed by a majority: " + rs);
        checkEq("someone-else", get(0, "mnr-b"), "the release left the other owner's key alone");
      }
      harness("CMD", "0", "DEL", "mnr-b");
    }
  }

  // A set's waiter is woken by the release of the set that held it, with
  // wake-up asked for (it is opt-in).
  private static void multiLockWake() throws Exception {
    List<RedlockEvent> evs = Collections.synchronizedList(new ArrayList<>());
    Options slow = new Options();
    slow.setWake(true); // the test depends on wake-up
    slow.setNodeTimeoutMs(2_000);
    slow.setRetryCount(1_000);
    slow.setRetryDelayMs(20_000); // only a wake-up gets the set soon; a broken one shows as no WOKEN
    slow.setRetryJitterMs(0);
    slow.setEventListener(evs::add);
    try (Redlock holderClient = new Redlock(nodes()); Redlock client = new Redlock(nodes(), slow)) {
      Lock holder = holderClient.newMultiLock("mw-a", "mw-b");
      holder.tryAcquire(30_000);
      Lock waiter = client.newMultiLock("mw-b", "mw-a");
      CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> waiter.acquire(10_000, 60_000));
      check(waitFor(() -> allReady(client) && !ofType(evs, RedlockEvent.Type.ACQUIRE_FAILED).isEmpty()),
          "the waiter refused once, its listeners READY: " + client.listenerStates());
      long released = System.nanoTime();
      holder.release();
      waited.get(60, TimeUnit.SECONDS);
      long tookMs = (System.nanoTime() - released) / 1_000_000;
      check(waiter.isHeld(), "the woken waiter holds the set");
      // As in wake(): woken by the release or by a listener's READY, not by the 20 s retry.
      List<RedlockEvent> woken = ofType(evs, RedlockEvent.Type.WOKEN);
      check(tookMs < 10_000, "the waiter got the set " + tookMs + " ms after the release: " + evs);
      if (!woken.isEmpty())
        checkEq("mw-a,mw-b", woken.get(0).resource(), "WOKEN names the set");
      waiter.close();
      holder.close();
    }
    slow.free();
  }

  // ---------------------------------------------------------- acquiremany
  // Redlock.tryAcquireMany: one attempt at each of many locks at once
  // (redlock_lock_acquire_many), each decided on its own.

  static void acquireMany() throws Exception {
    try (Redlock a = new Redlock(nodes()); Redlock b = new Redlock(nodes())) {
      int n = 30;
      List<Lock> mine = new ArrayList<>();
      List<Lock> theirs = new ArrayList<>();
      for (int k = 0; k < n; k++) {
        mine.add(a.newLock("am:" + k));
        if (k % 3 == 0)
          theirs.add(b.acquire("am:" + k, 20_000)); // every third is held by another client
      }
      List<RedlockException> res = a.tryAcquireMany(mine, 20_000);
      checkEq(n, res.size(), "one result per lock");
      for (int k = 0; k < n; k++) {
        Lock l = mine.get(k);
        if (k % 3 == 0) {
          check(res.get(k) instanceof LockNotAcquiredException, "lock " + k + " held elsewhere: " + res.get(k));
          check(!l.isHeld(), "lock " + k + " not held");
          check(res.get(k) != null && res.get(k).getDetail().contains("not acquired"),
              "the detail says why: " + (res.get(k) == null ? "" : res.get(k).getDetail()));
        } else {
          checkEq(null, res.get(k), "lock " + k + " acquired");
          check(l.isHeld() && l.validityMs() > 10_000, "lock " + k + " held: " + l.validityMs());
        }
      }
      // The lost attempts cleaned up only where their own value was.
      for (Lock t : theirs) {
        t.extend(20_000);
        check(t.isHeld(), "the other client still holds " + t.resource());
      }
      for (Lock t : theirs)
        t.close();
      // Held ones are refused a second time; the others get their chance.
      res = a.tryAcquireMany(mine, 20_000);
      for (int k = 0; k < n; k++) {
        if (k % 3 == 0)
          checkEq(null, res.get(k), "lock " + k + " acquired once free");
        else
          check(res.get(k) instanceof LockStateException, "lock " + k + " already held by this handle: " + res.get(k));
      }
      for (Lock l : mine)
        l.release();

      // Other kinds in the list (a set, a semaphore's permit): one attempt each, as tryAcquire.
      Lock set = a.newMultiLock("am-set-a", "am-set-b");
      Lock plainLock = a.newLock("am-plain");
      res = a.tryAcquireMany(List.of(set, plainLock), 10_000);
      checkEq(Arrays.asList(null, null), res, "a set and a mutex together");
      check(set.isHeld() && plainLock.isHeld(), "both held");
      set.close();
      plainLock.close();

      // Bad input: InvalidArgumentException before any network I/O.
      Lock x = a.newLock("am-x"), y = a.newLock("am-y");
      Lock other = b.newLock("am-other");
      expect(InvalidArgumentException.class, "a null list", () -> a.tryAcquireMany(null, 10_000));
      expect(InvalidArgumentException.class, "a null lock", () -> a.tryAcquireMany(Arrays.asList(x, null), 10_000));
      InvalidArgumentException e = expect(InvalidArgumentException.class, "another client's lock",
          () -> a.tryAcquireMany(List.of(x, other), 10_000));
      check(e != null && e.getDetail().contains("another client"), "says which: " + (e == null ? "" : e.getDetail()));
      e = expect(InvalidArgumentException.class, "a lock twice", () -> a.tryAcquireMany(List.of(x, y, x), 10_000));
      check(e != null && e.getDetail().contains("twice"), "says which: " + (e == null ? "" : e.getDetail()));
      e = expect(InvalidArgumentException.class, "over the limit (C's check)",
          () -> a.tryAcquireMany(Collections.nCopies(Redlock.ACQUIRE_MANY_MAX + 1, x), 10_000));
      check(e != null && e.getDetail().contains("over the limit"), "says why: " + (e == null ? "" : e.getDetail()));
      expect(InvalidArgumentException.class, "ttl over 32 bits", () -> a.tryAcquireMany(List.of(x), 1L << 32));
      check(!x.isHeld() && !y.isHeld(), "nothing acquired by a refused call");
      checkEq(0, holders("am-x", 0), "and nothing on the nodes");
      checkEq(Collections.emptyList(), a.tryAcquireMany(List.of(), 10_000), "an empty list: an empty result");
      // 0, or a day and more: the C library's own TTL check, as that lock's error.
      res = a.tryAcquireMany(List.of(x), 86_400_001L);
      check(res.get(0) instanceof InvalidArgumentException, "a TTL over a day, per lock: " + res.get(0));
      res = a.tryAcquireMany(List.of(x), 0);
      check(res.get(0) instanceof InvalidArgumentException, "a TTL of 0, per lock: " + res.get(0));
      // A closed lock: its own LockStateException; the others are attempted.
      y.close();
      res = a.tryAcquireMany(List.of(x, y), 10_000);
      checkEq(null, res.get(0), "the open lock acquired");
      check(res.get(1) instanceof LockStateException, "the closed one: " + res.get(1));
      x.close();
      other.close();

      // Two threads with the same locks in opposite orders, many times:
      // both finish (each takes the locks' monitors in one order).
      List<Lock> ab = new ArrayList<>();
      for (int k = 0; k < 50; k++)
        ab.add(a.newLock("am-order:" + k));
      List<Lock> ba = new ArrayList<>(ab);
      Collections.reverse(ba);
      AtomicReference<Throwable> err = new AtomicReference<>();
      AtomicInteger rounds = new AtomicInteger();
      Runnable loop1 = () -> manyLoop(a, ab, err, rounds), loop2 = () -> manyLoop(a, ba, err, rounds);
      Thread t1 = new Thread(loop1), t2 = new Thread(loop2);
      t1.start();
      t2.start();
      t1.join(120_000);
      t2.join(120_000);
      check(!t1.isAlive() && !t2.isAlive(), "both threads finished");
      check(err.get() == null, "no unexpected exception: " + err.get());
      checkEq(40, rounds.get(), "every round of both threads ran");
      for (Lock l : ab)
        l.close();
    }
  }

  private static void manyLoop(Redlock c, List<Lock> locks, AtomicReference<Throwable> err, AtomicInteger rounds) {
    try {
      for (int i = 0; i < 20; i++) {
        List<RedlockException> res = c.tryAcquireMany(locks, 10_000);
        for (int k = 0; k < locks.size(); k++) {
          RedlockException e = res.get(k);
          // The other thread may hold this handle's lock right now: the same handle, so ESTATE.
          if (e == null)
            locks.get(k).release();
          else if (!(e instanceof LockStateException))
            throw e;
        }
        rounds.incrementAndGet();
      }
    } catch (Throwable e) {
      err.compareAndSet(null, e);
    }
  }

  private static void loopMulti(Lock l, AtomicInteger got, AtomicReference<Throwable> err) {
    try {
      for (int i = 0; i < 20; i++) {
        l.acquire(10_000, 30_000);
        got.incrementAndGet();
        l.release();
      }
    } catch (Throwable e) {
      err.compareAndSet(null, e);
    }
  }

  // ------------------------------------------------------- acquireAsync

  /**
   * Lock.acquireAsync (redlock_lock_acquire_async): 200 futures pending on
   * held locks, completed on a fixed pool of 2 threads, all complete after
   * the release with no thread per waiter; failures complete exceptionally
   * with what acquire() throws; cancelling a future cancels the wait.
   */
  static void acquireAsync() throws Exception {
    String[] urls = nodes();
    int n = 200;
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
    try (Redlock holder = new Redlock(urls); Redlock client = new Redlock(urls)) {
      List<Lock> held = new ArrayList<>(), waiters = new ArrayList<>();
      List<CompletableFuture<Lock>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Lock h = holder.newLock("async-" + i);
        h.acquire(30000, Redlock.WAIT_NONE);
        held.add(h);
        waiters.add(client.newLock("async-" + i));
      }
      int threadsBefore = Thread.activeCount();
      for (Lock w : waiters)
        futures.add(w.acquireAsync(10000, 20000, pool));
      Thread.sleep(300);
      check(futures.stream().noneMatch(CompletableFuture::isDone), "no future completes while the locks are held");
      check(Thread.activeCount() - threadsBefore <= 3,
          "no thread per waiter: " + (Thread.activeCount() - threadsBefore) + " more threads for " + n + " waits");
      expect(LockStateException.class, "acquire() while an acquireAsync is under way",
          () -> waiters.get(0).acquire(1000, Redlock.WAIT_NONE));
      expect(LockStateException.class, "a second acquireAsync meanwhile",
          () -> waiters.get(0).acquireAsync(1000, Redlock.WAIT_NONE));
      expect(LockStateException.class, "releaseAsync while an acquireAsync is under way",
          () -> waiters.get(0).releaseAsync(pool));
      expect(LockStateException.class, "extendAsync meanwhile",
          () -> waiters.get(0).extendAsync(1000, pool));
      for (Lock h : held)
        h.release();
      int got = 0;
      for (int i = 0; i < n; i++) {
        Lock l = futures.get(i).get(20, TimeUnit.SECONDS);
        got += l == waiters.get(i) && l.isHeld() ? 1 : 0;
      }
      checkEq(n, got, "every future completed with its lock, held");
      // extendAsync and releaseAsync: one round each on the C thread, no thread per call either.
      List<CompletableFuture<Lock>> rounds = new ArrayList<>();
      for (Lock w : waiters)
        rounds.add(w.extendAsync(60000, pool));
      for (CompletableFuture<Lock> f : rounds)
        f.get(20, TimeUnit.SECONDS);
      check(waiters.stream().allMatch(w -> w.validityMs() > 30000), "every lock extended to a minute");
      rounds.clear();
      for (Lock w : waiters)
        rounds.add(w.releaseAsync(pool));
      for (CompletableFuture<Lock> f : rounds)
        f.get(20, TimeUnit.SECONDS);
      check(waiters.stream().noneMatch(Lock::isHeld), "every lock released");
      check(Thread.activeCount() - threadsBefore <= 3, "no thread per release either");
      held.get(0).acquire(1000, Redlock.WAIT_NONE); // free on the nodes: the holder takes it again
      held.get(0).release();
      ExecutionException notHeld = expect(ExecutionException.class, "releaseAsync of a lock not held",
          () -> waiters.get(0).releaseAsync(pool).get(10, TimeUnit.SECONDS));
      check(notHeld != null && notHeld.getCause() instanceof LockStateException, "LockStateException: " + notHeld);
      for (Lock w : waiters)
        w.close();
      for (Lock h : held)
        h.close();

      // A dependent stage runs on the given executor, never on the C thread.
      try (Lock h = holder.newLock("async-stage"); Lock l = client.newLock("async-stage")) {
        h.acquire(30000, Redlock.WAIT_NONE);
        CompletableFuture<String> where = l.acquireAsync(5000, 20000, pool)
            .thenApply(x -> Thread.currentThread().getName()); // attached while the wait is on
        Thread.sleep(100);
        h.release();
        String name = where.get(10, TimeUnit.SECONDS);
        check(name.startsWith("pool-"), "the stage ran on the pool: " + name);
      }

      // Failures complete the future exceptionally, with acquire()'s exception.
      try (Lock h = holder.newLock("async-busy"); Lock l = client.newLock("async-busy")) {
        h.acquire(30000, Redlock.WAIT_NONE);
        ExecutionException e = expect(ExecutionException.class, "a busy lock, one attempt",
            () -> l.acquireAsync(5000, Redlock.WAIT_NONE).get(10, TimeUnit.SECONDS));
        check(e != null && e.getCause() instanceof LockNotAcquiredException, "LockNotAcquiredException: " + e);
        e = expect(ExecutionException.class, "a busy lock, a 300 ms wait",
            () -> l.acquireAsync(5000, 300).get(10, TimeUnit.SECONDS));
        check(e != null && e.getCause() instanceof LockTimeoutException, "LockTimeoutException: " + e);
        e = expect(ExecutionException.class, "a TTL of 0",
            () -> l.acquireAsync(0, Redlock.WAIT_NONE).get(10, TimeUnit.SECONDS));
        check(e != null && e.getCause() instanceof InvalidArgumentException, "InvalidArgumentException: " + e);

        // Cancelling the future cancels the wait: the lock is usable again at once.
        CompletableFuture<Lock> f = l.acquireAsync(5000, Redlock.WAIT_FOREVER);
        Thread.sleep(200);
        long t0 = System.nanoTime();
        check(f.cancel(true), "cancel() of a pending acquire");
        check(f.isCancelled(), "the future is cancelled");
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        boolean free = false;
        while (!free && System.nanoTime() < until) {
          try {
            l.acquireAsync(5000, Redlock.WAIT_NONE).get(10, TimeUnit.SECONDS);
            free = true; // (not expected: h holds it)
          } catch (ExecutionException ex) {
            free = ex.getCause() instanceof LockNotAcquiredException; // the C wait ended, the cancel was reset
          } catch (Exception ex) {
            Thread.sleep(10); // still under way
          }
        }
        check(free, "after cancel(), a new acquireAsync runs (refused by the holder, not cancelled)");
        check(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "the cancelled wait ended promptly");
        h.release();
        check(l.acquireAsync(5000, 2000).get(10, TimeUnit.SECONDS).isHeld(), "acquired once released");
      }

      // close() with an acquire pending: the future completes (CancelledException).
      try (Lock h = holder.newLock("async-close")) {
        h.acquire(30000, Redlock.WAIT_NONE);
        Lock l = client.newLock("async-close");
        CompletableFuture<Lock> f = l.acquireAsync(5000, Redlock.WAIT_FOREVER);
        Thread.sleep(100);
        l.close();
        ExecutionException e = expect(ExecutionException.class, "close() while pending",
            () -> f.get(10, TimeUnit.SECONDS));
        check(e != null && e.getCause() instanceof CancelledException, "CancelledException: " + e);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
