// SPDX-License-Identifier: BSD-3-Clause

// FenceTest.java: io.redlock.Fence against a real Redis/Valkey node as the store, started by
// tests/harness/nodes.py: the first write, equal and older tokens, tokens above 2^53 and at
// 2^64 - 1, every operation, NOSCRIPT, a fence key gone, Fence.forLock with a real lock, and the
// docs/fencing.md example. The store's client is a tiny RESP client of this test's own, with the
// shape of Jedis's evalsha/eval, so that the binding is shown to need no Redis client.
package io.redlock.tests;

import io.redlock.*;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Proxy;
import java.net.Socket;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;

public final class FenceTest {
  private static int passed;
  private static int failed;

  public static void main(String[] args) throws Exception {
    if (args.length != 1 || !args[0].equals("fence")) {
      System.err.println("usage: FenceTest fence");
      System.exit(2);
    }
    String[] nodes = nodes();
    try (Store store = new Store(nodes[0])) {
      keyNames();
      tokens(store);
      operations(store);
      noScriptAndLostFence(store);
      withLock(store, nodes);
      docsExample(store, nodes);
    }
    sqlStatements();
    System.out.println(passed + " passed, " + failed + " failed");
    System.exit(failed == 0 && passed > 0 ? 0 : 1);
  }

  // ---------------------------------------------------------------- the store: a tiny RESP client

  /** An error reply, as a client such as Jedis throws it: the message is the reply's text. */
  static final class StoreError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    StoreError(String reply) {
      super(reply);
    }
  }

  static final class Store implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    Store(String url) throws IOException {
      URI u = URI.create(url);
      socket = new Socket(u.getHost(), u.getPort());
      socket.setSoTimeout(10000);
      in = new BufferedInputStream(socket.getInputStream());
      out = socket.getOutputStream();
    }

    synchronized Object call(List<String> words) {
      try {
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.write(("*" + words.size() + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (String w : words) {
          byte[] b = w.getBytes(StandardCharsets.UTF_8);
          req.write(("$" + b.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
          req.write(b);
          req.write("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        out.write(req.toByteArray());
        out.flush();
        return reply();
      } catch (IOException e) {
        throw new RuntimeException(e);
      }
    }

    Object cmd(String... words) {
      return call(Arrays.asList(words));
    }

    /** GET key, as Jedis's get(String). */
    String get(String key) {
      return (String) cmd("GET", key);
    }

    /** evalsha(sha, keys, args) and eval(script, keys, args), as Jedis has them. */
    Object evalsha(String sha, List<String> keys, List<String> args) {
      return script("EVALSHA", sha, keys, args);
    }

    Object eval(String script, List<String> keys, List<String> args) {
      return script("EVAL", script, keys, args);
    }

    private Object script(String verb, String body, List<String> keys, List<String> args) {
      List<String> w = new ArrayList<>();
      w.add(verb);
      w.add(body);
      w.add(Integer.toString(keys.size()));
      w.addAll(keys);
      w.addAll(args);
      return call(w);
    }

    private Object reply() throws IOException {
      String line = line();
      switch (line.charAt(0)) {
        case '+': return line.substring(1);
        case '-': throw new StoreError(line.substring(1));
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
          List<Object> l = new ArrayList<>();
          for (int i = 0; i < n; i++)
            l.add(reply());
          return l;
        }
        default: throw new IOException("unexpected reply " + line);
      }
    }

    private String line() throws IOException {
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      int c;
      while ((c = in.read()) != '\n') {
        if (c < 0)
          throw new IOException("the store closed the connection");
        if (c != '\r')
          b.write(c);
      }
      return b.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  // ---------------------------------------------------------------- SQL rows over JDBC

  /**
   * What a Connection was asked: each statement's text and bound values, in order. No JDBC
   * driver is a dependency of the binding or its tests, so the database is this stand-in, which
   * answers executeUpdate with the next of {@code updated} and the fence read with {@code fence}
   * (null: no row). The statements' own behaviour on PostgreSQL and SQLite is tested through the
   * Python and Go bindings, which run the same C-built text.
   */
  static final class FakeDb {
    final List<String> sql = new ArrayList<>();
    final List<List<Object>> params = new ArrayList<>();
    final List<Integer> updated = new ArrayList<>();
    Long fence;

    Connection connection() {
      return (Connection) Proxy.newProxyInstance(FenceTest.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, m, a) -> {
            if (!m.getName().equals("prepareStatement"))
              throw new UnsupportedOperationException(m.getName());
            sql.add((String) a[0]);
            List<Object> bound = new ArrayList<>();
            params.add(bound);
            return statement(bound);
          });
    }

    private PreparedStatement statement(List<Object> bound) {
      return (PreparedStatement) Proxy.newProxyInstance(FenceTest.class.getClassLoader(),
          new Class<?>[] {PreparedStatement.class}, (proxy, m, a) -> {
            switch (m.getName()) {
              case "setObject":
                checkEq(bound.size() + 1, a[0], "parameters bound in order");
                bound.add(a[1]);
                return null;
              case "executeUpdate":
                return updated.remove(0);
              case "executeQuery":
                return result();
              case "close":
                return null;
              default:
                throw new UnsupportedOperationException(m.getName());
            }
          });
    }

    private ResultSet result() {
      boolean[] read = {false};
      return (ResultSet) Proxy.newProxyInstance(FenceTest.class.getClassLoader(), new Class<?>[] {ResultSet.class},
          (proxy, m, a) -> {
            switch (m.getName()) {
              case "next":
                boolean row = fence != null && !read[0];
                read[0] = true;
                return row;
              case "getLong":
                return fence;
              case "close":
                return null;
              default:
                throw new UnsupportedOperationException(m.getName());
            }
          });
    }
  }

  /** Fence.sqlUpsert and sqlUpdate: the C library's statements with '?', values in its order. */
  private static void sqlStatements() throws Exception {
    Map<String, Object> key = new LinkedHashMap<>();
    key.put("id", 7L);
    Map<String, Object> values = new LinkedHashMap<>();
    values.put("balance", 120);
    values.put("note", "a");

    FakeDb db = new FakeDb();
    db.updated.add(1);
    Fence.sqlUpsert(db.connection(), "accounts", key, values, 5);
    checkEq(List.of("INSERT INTO \"accounts\" (\"id\", \"balance\", \"note\", \"fence\") VALUES (?, ?, ?, ?) "
        + "ON CONFLICT (\"id\") DO UPDATE SET \"balance\" = EXCLUDED.\"balance\", \"note\" = EXCLUDED.\"note\", "
        + "\"fence\" = EXCLUDED.\"fence\" WHERE \"accounts\".\"fence\" IS NULL OR "
        + "\"accounts\".\"fence\" <= EXCLUDED.\"fence\""), db.sql, "upsert: one statement, C's text");
    checkEq(List.of(List.of(7L, 120, "a", 5L)), db.params, "upsert: key, values, token");

    // A refused update: the fence read tells a refusal, naming both tokens.
    db = new FakeDb();
    db.updated.add(0);
    db.fence = 9L;
    FakeDb refusing = db;
    FencedException f = expect(FencedException.class, "older token",
        () -> Fence.sqlUpdate(refusing.connection(), "my schema.we\"ird", key, Map.of("the \"qty\"", 3), 5, "tok"));
    if (f != null) {
      checkEq(5L, f.getToken(), "refused token");
      checkEq(9L, f.getFence(), "the row's fence");
    }
    checkEq(List.of("UPDATE \"my schema\".\"we\"\"ird\" SET \"the \"\"qty\"\"\" = ?, \"tok\" = ? WHERE \"id\" = ? "
        + "AND (\"tok\" IS NULL OR \"tok\" <= ?)", "SELECT \"tok\" FROM \"my schema\".\"we\"\"ird\" WHERE \"id\" = ?"),
        db.sql, "update, then the fence read: C's text, names quoted");
    checkEq(List.of(List.of(3, 5L, 7L, 5L), List.of(7L)), db.params, "update: values, token, key, token; read: key");

    // No such row; an update with no values only raises the fence.
    db = new FakeDb();
    db.updated.add(0);
    FakeDb missing = db;
    expect(NoSuchElementException.class, "update of a missing row",
        () -> Fence.sqlUpdate(missing.connection(), "accounts", key, null, 5));
    checkEq("UPDATE \"accounts\" SET \"fence\" = ? WHERE \"id\" = ? AND (\"fence\" IS NULL OR \"fence\" <= ?)",
        db.sql.get(0), "no values: only the fence");

    // What C refuses, before any statement reaches the connection.
    FakeDb none = new FakeDb();
    Connection c = none.connection();
    InvalidArgumentException e = expect(InvalidArgumentException.class, "token 2^63",
        () -> Fence.sqlUpsert(c, "accounts", key, values, Long.MIN_VALUE));
    check(e != null && e.getMessage().contains("does not fit a BIGINT"), "C's reason for 2^63: " + e);
    expect(InvalidArgumentException.class, "token 0", () -> Fence.sqlUpsert(c, "accounts", key, values, 0));
    e = expect(InvalidArgumentException.class, "key column among the values",
        () -> Fence.sqlUpsert(c, "accounts", key, Map.of("id", 1), 3));
    check(e != null && e.getMessage().contains("\"id\" is named twice"), "C's reason for a clash: " + e);
    expect(InvalidArgumentException.class, "the fence among the values",
        () -> Fence.sqlUpdate(c, "accounts", key, Map.of("fence", 1), 3));
    expect(InvalidArgumentException.class, "empty table", () -> Fence.sqlUpdate(c, "", key, values, 3));
    expect(InvalidArgumentException.class, "no key", () -> Fence.sqlUpdate(c, "accounts", Map.of(), values, 3));
    expect(InvalidArgumentException.class, "a NUL in a name",
        () -> Fence.sqlUpdate(c, "accounts", key, Map.of("a\0b", 1), 3));
    checkEq(List.of(), none.sql, "nothing prepared for a refused call");
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
    check(Objects.equals(expected, actual), what + ": expected <" + expected + "> got <" + actual + ">");
  }

  interface Body {
    void run() throws Exception;
  }

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

  private static int serial;

  private static String uniq(String what) {
    return "java-fence-" + what + "-" + ProcessHandle.current().pid() + "-" + (serial++);
  }

  private static Fence fence(Store s, String resource, long token) {
    return new Fence(s::evalsha, s::eval, resource, token);
  }

  /** The refusal of token by fence, both read as unsigned. */
  private static void refused(FencedException e, long token, long fence, String what) {
    if (e == null)
      return;
    checkEq(Long.toUnsignedString(token), Long.toUnsignedString(e.getToken()), what + ": token");
    checkEq(Long.toUnsignedString(fence), Long.toUnsignedString(e.getFence()), what + ": fence");
    checkEq(RedlockException.EFENCED, e.getCode(), what + ": code");
    check(e.getMessage().contains("token " + Long.toUnsignedString(token) + " is older than "
        + Long.toUnsignedString(fence)), what + ": the message names both: " + e.getMessage());
  }

  // ---------------------------------------------------------------- the tests

  private static void keyNames() {
    checkEq("{orders}:fence", Fence.key("orders"), "key of a plain name");
    checkEq("{orders}:17:fence", Fence.key("{orders}:17"), "key of a tagged name");
    expect(InvalidArgumentException.class, "a '}' without a tag", () -> Fence.key("a}b"));
    expect(InvalidArgumentException.class, "an empty resource", () -> Fence.key(""));
    checkEq(40, Fence.scriptSha1().length(), "the script's SHA1");
    check(Fence.script().contains("FENCED "), "the script is the C library's");
    checkEq(7L * 86400 * 1000, Fence.DEFAULT_RETENTION_MS, "the default retention");
  }

  private static void tokens(Store s) {
    String r = uniq("tokens"), v = r + ":v";
    checkEq(0L, fence(s, r, 5).advance(), "advance on no fence: 0");
    check(fence(s, r, 5).set(v, "five"), "the first write");
    check(fence(s, r, 5).set(v, "five again"), "an equal token writes");
    refused(expect(FencedException.class, "an older token", () -> fence(s, r, 4).set(v, "late")), 4, 5, "older");
    checkEq("five again", s.cmd("GET", v), "nothing written by the refused token");
    checkEq("5", s.cmd("GET", Fence.key(r)), "the fence holds the token in decimal");
    long pttl = (Long) s.cmd("PTTL", Fence.key(r));
    check(pttl > Fence.DEFAULT_RETENTION_MS - 60000 && pttl <= Fence.DEFAULT_RETENTION_MS, "the fence's lifetime: " + pttl);
    check(fence(s, r, 10).set(v, "ten"), "10 is above 9 and 5 (not compared as strings)");
    refused(expect(FencedException.class, "9 below 10", () -> fence(s, r, 9).set(v, "nine")), 9, 10, "9 < 10");

    // Above 2^53, where a double would call the two equal.
    String big = uniq("big");
    long p53 = 1L << 53;
    checkEq(0L, fence(s, big, p53 + 1).advance(), "advance to 2^53 + 1");
    refused(expect(FencedException.class, "2^53 below 2^53 + 1", () -> fence(s, big, p53).set(big + ":v", "x")),
        p53, p53 + 1, "2^53");
    // Unsigned: 2^64 - 1 is -1 in a long, 2^63 is Long.MIN_VALUE; both above 2^53 + 1.
    checkEq(p53 + 1, fence(s, big, Long.MIN_VALUE).advance(), "2^63 above 2^53 + 1, returns the old fence");
    checkEq(Long.MIN_VALUE, fence(s, big, -1L).advance(), "2^64 - 1 above 2^63");
    checkEq("18446744073709551615", s.cmd("GET", Fence.key(big)), "the fence at 2^64 - 1");
    refused(expect(FencedException.class, "2^63 below 2^64 - 1", () -> fence(s, big, Long.MIN_VALUE).set(big + ":v", "x")),
        Long.MIN_VALUE, -1L, "2^63");
    expect(InvalidArgumentException.class, "token 0", () -> fence(s, big, 0));
    expect(InvalidArgumentException.class, "retention 0", () -> new Fence(s::evalsha, s::eval, big, 1, 0));
    Fence shortLived = new Fence(s::evalsha, s::eval, uniq("short"), 3, 60000);
    shortLived.advance();
    long left = (Long) s.cmd("PTTL", shortLived.key());
    check(left > 0 && left <= 60000, "a retention given: " + left);
  }

  private static void operations(Store s) {
    String r = uniq("ops");
    Fence f = fence(s, r, 7);
    check(f.set(r + ":e", "x", 30000), "set with px");
    long pttl = (Long) s.cmd("PTTL", r + ":e");
    check(pttl > 0 && pttl <= 30000, "px applied: " + pttl);
    checkEq(1L, f.delete(r + ":e"), "delete: 1 key");
    checkEq(0L, f.delete(r + ":e"), "delete again: 0");
    Map<String, String> fields = new LinkedHashMap<>();
    fields.put("a", "1");
    fields.put("b", "2");
    checkEq(2L, f.hset(r + ":h", fields), "hset: 2 fields added");
    checkEq("2", s.cmd("HGET", r + ":h", "b"), "hset wrote");
    checkEq(2L, f.rpush(r + ":l", "x", "y"), "rpush: the length");
    checkEq(3L, f.rpush(r + ":l", "z"), "rpush again");
    checkEq(1L, f.incr(r + ":n"), "incr");
    checkEq(-4L, f.incr(r + ":n", -5), "incr by -5");
    Fence late = fence(s, r, 6);
    refused(expect(FencedException.class, "hset refused", () -> late.hset(r + ":h", Map.of("a", "9"))), 6, 7, "hset");
    refused(expect(FencedException.class, "rpush refused", () -> late.rpush(r + ":l", "late")), 6, 7, "rpush");
    refused(expect(FencedException.class, "incr refused", () -> late.incr(r + ":n")), 6, 7, "incr");
    refused(expect(FencedException.class, "delete refused", () -> late.delete(r + ":l")), 6, 7, "delete");
    refused(expect(FencedException.class, "advance refused", late::advance), 6, 7, "advance");
    checkEq("1", s.cmd("HGET", r + ":h", "a"), "hset not applied");
    checkEq(3L, s.cmd("LLEN", r + ":l"), "rpush not applied");
    checkEq("-4", s.cmd("GET", r + ":n"), "incr not applied");
    expect(InvalidArgumentException.class, "hset of nothing", () -> f.hset(r + ":h", Map.of()));
    expect(InvalidArgumentException.class, "rpush of nothing", () -> f.rpush(r + ":l"));
    expect(InvalidArgumentException.class, "px 0", () -> f.set(r + ":v", "x", 0));
    // Another error is the client's own, not a refusal.
    StoreError e = expect(StoreError.class, "the data key is the fence key", () -> f.set(f.key(), "x"));
    check(e == null || e.getMessage().contains("the data key is the fence key"), "the script's other error, as thrown");
    expect(StoreError.class, "incr of a list: the WRONGTYPE as thrown, no refusal", () -> f.incr(r + ":l"));
  }

  private static void noScriptAndLostFence(Store s) {
    String r = uniq("noscript");
    s.cmd("SCRIPT", "FLUSH");
    check(fence(s, r, 3).set(r + ":v", "three"), "a write after SCRIPT FLUSH (EVAL on NOSCRIPT)");
    s.cmd("SCRIPT", "FLUSH");
    refused(expect(FencedException.class, "the refusal after NOSCRIPT", () -> fence(s, r, 2).set(r + ":v", "two")),
        2, 3, "after NOSCRIPT");
    // A fence key gone (evicted, flushed) lets the next write through and is made again from it.
    s.cmd("DEL", Fence.key(r));
    check(fence(s, r, 2).set(r + ":v", "two"), "the fence gone: the next write goes through");
    checkEq("2", s.cmd("GET", Fence.key(r)), "and makes the fence again");
    refused(expect(FencedException.class, "refused again from the new fence", () -> fence(s, r, 1).set(r + ":v", "one")),
        1, 2, "new fence");
  }

  private static void withLock(Store s, String[] nodes) throws Exception {
    Options o = new Options();
    o.setFencing(true);
    String r = uniq("lock");
    try (Redlock client = new Redlock(nodes, o)) {
      long first;
      try (Lock lock = client.acquire(r, 10000)) {
        Fence f = Fence.forLock(lock, s::evalsha, s::eval);
        first = f.token();
        checkEq(lock.fencingToken(), first, "forLock takes the lock's token");
        checkEq(r, f.resource(), "forLock takes the lock's resource");
        f.advance();
        check(f.set(r + ":v", "first"), "the holder writes");
      }
      try (Lock lock = client.acquire(r, 10000)) {
        Fence f = Fence.forLock(lock, s::evalsha, s::eval);
        check(Long.compareUnsigned(f.token(), first) > 0, "the next holder's token is higher");
        f.advance();
        refused(expect(FencedException.class, "the first holder, late",
            () -> fence(s, r, first).set(r + ":v", "late")), first, f.token(), "late holder");
        check(f.set(r + ":v", "second"), "the new holder writes");
        checkEq("second", s.cmd("GET", r + ":v"), "the late write lost nothing");
      }
      try (Lock idle = client.newLock(r)) {
        expect(LockStateException.class, "forLock of a lock not held", () -> Fence.forLock(idle, s::evalsha, s::eval));
      }
    }
  }

  /**
   * The Java example of docs/fencing.md, "Protecting your store", which must be this block word
   * for word (checked below): the store named jedis, as this test's client has Jedis's calls.
   */
  private static void docsExample(Store jedis, String[] nodes) throws Exception {
    checkEq(null, jedis.get("orders:total"), "a fresh store");
    for (int round = 1; round <= 2; round++) {
      // --8<-- docs/fencing.md java
      Options options = new Options();
      options.setFencing(true);
      try (Redlock client = new Redlock(nodes, options);
           Lock lock = client.acquire("orders", 30000)) {
        Fence orders = Fence.forLock(lock, jedis::evalsha, jedis::eval);   // the lock's token and resource
        orders.advance();                  // a late write of the previous holder fails from now on
        String total = jedis.get("orders:total");
        orders.set("orders:total", Long.toString(total == null ? 1 : Long.parseLong(total) + 1));
      }                                    // set: FencedException if a later holder has written
      // -->8--
      checkEq(Integer.toString(round), jedis.get("orders:total"), "the docs example wrote, round " + round);
    }
    String src = System.getProperty("redlock.source");
    if (src == null) {
      check(false, "-Dredlock.source (the source tree) not given: cannot compare with docs/fencing.md");
      return;
    }
    checkEq(block(Files.readString(Path.of(src, "bindings/java/src/test/java/io/redlock/tests/FenceTest.java")),
            "// --8<-- docs/fencing.md java", "// -->8--"),
        block(Files.readString(Path.of(src, "docs/fencing.md")), "```java", "```"),
        "docs/fencing.md's Java example is the one run here");
  }

  /** The lines between the first line that is start and the next that is end, dedented. */
  private static String block(String text, String start, String end) {
    List<String> lines = Arrays.asList(text.split("\n", -1));
    int from = -1;
    for (int i = 0; i < lines.size(); i++)
      if (lines.get(i).strip().equals(start)) {
        from = i + 1;
        break;
      }
    if (from < 0)
      return "(no " + start + ")";
    List<String> body = new ArrayList<>();
    for (int i = from; i < lines.size() && !lines.get(i).strip().equals(end); i++)
      body.add(lines.get(i));
    int indent = Integer.MAX_VALUE;
    for (String l : body)
      if (!l.isBlank())
        indent = Math.min(indent, l.length() - l.stripLeading().length());
    StringBuilder b = new StringBuilder();
    for (String l : body)
      b.append(l.isBlank() ? "" : l.substring(indent)).append('\n');
    return b.toString();
  }
}
