// SPDX-License-Identifier: BSD-3-Clause

// Fence.java: fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting your store"):
// the C library's one script, run on the caller's own client through two lambdas, so that the
// token comparison (64-bit integers), the fence key's name, its lifetime and the reading of a
// refusal are the library's, and this binding depends on no Redis client. Fenced writes to SQL
// rows over JDBC too (docs/fencing.md, "SQL rows"): the C library's statements, run on the caller's
// own Connection.
package io.redlock;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * Writes to one resource on a Redis or Valkey store (not necessarily a lock node) that are
 * applied only while this token is at least the highest token a write to the resource has
 * carried, and that raise that fence to it, atomically on the store. An older token throws
 * {@link FencedException} naming both, and writes nothing: a later holder has written.
 *
 * <p>The store is the caller's own client, given as two calls with the shape of Jedis's
 * {@code evalsha(String, List, List)} and {@code eval(String, List, List)}:
 *
 * <pre>{@code
 * Fence orders = Fence.forLock(lock, jedis::evalsha, jedis::eval);
 * orders.advance();                       // the previous holder's late writes fail from now on
 * long total = Long.parseLong(Objects.requireNonNullElse(jedis.get("orders:total"), "0"));
 * orders.set("orders:total", Long.toString(total + 1));   // FencedException if a later holder wrote
 * }</pre>
 *
 * Any other client fits the same two lambdas (Lettuce: {@code (sha, keys, args) ->
 * commands.evalsha(sha, ScriptOutputType.VALUE, keys.toArray(new String[0]),
 * args.toArray(new String[0]))}). A store error is whatever the client throws, unwrapped,
 * except the script's refusal. On a cluster store, name the data keys with the resource's hash
 * tag ({@code {orders}:17} for the resource {@code {orders}}) or the store refuses the script
 * (CROSSSLOT). Immutable; as thread-safe as the client behind the lambdas.
 */
public final class Fence {
  /** Runs a script on the store: {@code EVALSHA} or {@code EVAL} of script with keys and args. */
  @FunctionalInterface
  public interface ScriptCall {
    /** The store's reply: a Long for an integer, a String or byte[] for a bulk or status reply. */
    Object call(String script, List<String> keys, List<String> args);
  }

  /** How long a fence outlives the last fenced write to its resource by default: seven days. */
  public static final long DEFAULT_RETENTION_MS = Redlock.constant("REDLOCK_FENCE_RETENTION_MS");

  private static final String SCRIPT = RedlockNative.fenceScriptNative();
  private static final String SHA1 = RedlockNative.fenceScriptSha1Native();

  private final ScriptCall evalsha;
  private final ScriptCall eval;
  private final String resource;
  private final String key;
  private final long token;
  private final String tokenText;
  private final String retentionText;

  /**
   * The fence of resource with token (unsigned, 1 to 2^64 - 1, as {@link Lock#fencingToken()}
   * gives it, or handed over to a worker), writing through evalsha and eval, with the default
   * retention.
   */
  public Fence(ScriptCall evalsha, ScriptCall eval, String resource, long token) {
    this(evalsha, eval, resource, token, DEFAULT_RETENTION_MS);
  }

  /**
   * As {@link #Fence(ScriptCall, ScriptCall, String, long)}, the fence outliving the resource's
   * last fenced write by retentionMs (at least 1): a holder stalled longer than that after it is
   * not fenced, and a resource no longer written to leaves no key behind.
   */
  public Fence(ScriptCall evalsha, ScriptCall eval, String resource, long token, long retentionMs) {
    if (evalsha == null || eval == null)
      throw new NullPointerException("evalsha and eval: the store client's calls");
    if (resource == null)
      throw new NullPointerException("resource");
    if (token == 0)
      throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument",
          "token must be from 1 to 2^64-1, got 0 (a lock made without fencing, or not held?)");
    if (retentionMs < 1)
      throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument",
          "retention must be at least 1 ms, got " + retentionMs);
    this.key = RedlockNative.fenceKeyNative(resource);
    this.evalsha = evalsha;
    this.eval = eval;
    this.resource = resource;
    this.token = token;
    this.tokenText = Long.toUnsignedString(token);
    this.retentionText = Long.toString(retentionMs);
  }

  /**
   * The fence of lock's resource with the token of its current acquisition (the client made
   * with {@link Options#setFencing(boolean)}). Make a new one after each acquisition.
   *
   * @throws LockStateException when the lock has no token: not held, or fencing is off
   */
  public static Fence forLock(Lock lock, ScriptCall evalsha, ScriptCall eval) {
    long t = lock.fencingToken();
    if (t == 0)
      throw new LockStateException("REDLOCK_ESTATE", "operation does not fit the lock's state",
          "'" + lock.resource() + "': no fencing token: the lock is not held, or its client was made without fencing");
    return new Fence(evalsha, eval, lock.resource(), t);
  }

  /**
   * The store key holding resource's fence: {@code {resource}:fence}, or {@code resource:fence}
   * when the name has a hash tag (the C library's redlock_fence_key).
   */
  public static String key(String resource) {
    return RedlockNative.fenceKeyNative(resource);
  }

  /** The Lua source of the C library's fence script (redlock_fence_script). */
  public static String script() {
    return SCRIPT;
  }

  /** The SHA1 of {@link #script()} in hex, for EVALSHA. */
  public static String scriptSha1() {
    return SHA1;
  }

  /** The resource this fence protects. */
  public String resource() {
    return resource;
  }

  /** The store key of the fence, {@link #key(String)} of the resource. */
  public String key() {
    return key;
  }

  /** The token this fence writes with (unsigned). */
  public long token() {
    return token;
  }

  @Override
  public String toString() {
    return "Fence(" + resource + ", token=" + tokenText + ", key=" + key + ")";
  }

  /**
   * Raises the fence to this token without writing data, and returns the fence it had (0: none;
   * unsigned). A new holder calls it first, before it reads what it will write: from then on the
   * previous holder's late writes are refused.
   */
  public long advance() {
    return Long.parseUnsignedLong(text(run("advance", null)));
  }

  /** SET key value, fenced; true, the store's OK. */
  public boolean set(String key, String value) {
    return "OK".equals(text(run("set", key, value)));
  }

  /** SET key value PX pxMs (at least 1), fenced; true, the store's OK. */
  public boolean set(String key, String value, long pxMs) {
    if (pxMs < 1)
      throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument", "px must be at least 1 ms, got " + pxMs);
    return "OK".equals(text(run("set", key, value, Long.toString(pxMs))));
  }

  /** DEL key, fenced; the number of keys removed. */
  public long delete(String key) {
    return integer(run("del", key));
  }

  /** HSET key field value ..., fenced (at least one field); the number of fields added. */
  public long hset(String key, Map<String, String> fields) {
    if (fields == null || fields.isEmpty())
      throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument", "hset needs at least one field");
    List<String> args = new ArrayList<>(2 * fields.size());
    for (Map.Entry<String, String> e : fields.entrySet()) {
      args.add(e.getKey());
      args.add(e.getValue());
    }
    return integer(run("hset", key, args.toArray(new String[0])));
  }

  /** RPUSH key value ..., fenced (at least one value); the list's length after it. */
  public long rpush(String key, String... values) {
    if (values == null || values.length == 0)
      throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument", "rpush needs at least one value");
    return integer(run("rpush", key, values));
  }

  /** INCRBY key 1, fenced; the value after it. */
  public long incr(String key) {
    return incr(key, 1);
  }

  /** INCRBY key amount, fenced; the value after it. */
  public long incr(String key, long amount) {
    return integer(run("incrby", key, Long.toString(amount)));
  }

  private Object run(String op, String dataKey, String... operands) {
    List<String> keys = dataKey == null ? List.of(key) : Arrays.asList(key, dataKey);
    if (dataKey == null && !"advance".equals(op))
      throw new NullPointerException("key");
    List<String> args = new ArrayList<>(3 + operands.length);
    args.add(tokenText);
    args.add(retentionText);
    args.add(op);
    for (String o : operands) {
      if (o == null)
        throw new NullPointerException("a null value for " + op);
      args.add(o);
    }
    try {
      try {
        return evalsha.call(SHA1, keys, args);
      } catch (RuntimeException e) {
        if (!startsWith(e, "NOSCRIPT"))
          throw e;
        return eval.call(SCRIPT, keys, args);
      }
    } catch (RuntimeException e) {
      String msg = message(e);
      long t = msg == null ? 0 : RedlockNative.fenceRefusalNative(msg, 0);
      if (t == 0)
        throw e;
      throw new FencedException(resource, t, RedlockNative.fenceRefusalNative(msg, 1), msg);
    }
  }

  private static final int SQL_UPSERT = (int) Redlock.constant("REDLOCK_FENCE_SQL_UPSERT");
  private static final int SQL_UPDATE = (int) Redlock.constant("REDLOCK_FENCE_SQL_UPDATE");
  private static final int SQL_READ = (int) Redlock.constant("REDLOCK_FENCE_SQL_READ");
  private static final int SQL_QMARK = (int) Redlock.constant("REDLOCK_SQL_QMARK");

  /**
   * Inserts the row {@code key} + {@code values} with the fence column set to token, or updates
   * it to {@code values} if it exists and its fence is at most token (or NULL), in one statement
   * that the C library builds (redlock_fence_sql):
   *
   * <pre>{@code
   * INSERT INTO t (k, v, fence) VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v,
   * fence = EXCLUDED.fence WHERE t.fence IS NULL OR t.fence <= EXCLUDED.fence
   * }</pre>
   *
   * A row whose fence is above token is left as it is and {@link FencedException} names both.
   * The key's columns must be the table's primary key or a unique index; the statement is
   * PostgreSQL's and SQLite's (3.24 or later). Names are quoted as identifiers ({@code
   * "schema.table"} is two); values are bound with {@code setObject}, in the maps' iteration
   * order. The fence column is a BIGINT: a token above 2^63 - 1 (negative in a long) or 0 throws
   * {@link InvalidArgumentException}, as an empty name or a column named twice among key,
   * values and the fence column do. The caller commits.
   */
  public static void sqlUpsert(Connection conn, String table, Map<String, ?> key, Map<String, ?> values,
      long token) throws SQLException {
    sqlUpsert(conn, table, key, values, token, "fence");
  }

  /** {@link #sqlUpsert(Connection, String, Map, Map, long)} with the fence in fenceColumn. */
  public static void sqlUpsert(Connection conn, String table, Map<String, ?> key, Map<String, ?> values,
      long token, String fenceColumn) throws SQLException {
    sqlWrite(SQL_UPSERT, conn, table, key, values, token, fenceColumn);
  }

  /**
   * Updates the existing row {@code key} to {@code values} and the fence column to token if its
   * fence is at most token (or NULL: the first fenced write):
   *
   * <pre>{@code
   * UPDATE t SET v = ?, fence = ? WHERE k = ? AND (fence IS NULL OR fence <= ?)
   * }</pre>
   *
   * {@link FencedException} if a later holder's token is there; {@link NoSuchElementException}
   * if there is no such row (a fenced update does not make one; {@code sqlUpsert} does). Empty
   * values only raise the fence, as a new holder does before it reads the row, so that the
   * previous holder's late write fails from then on. Otherwise as
   * {@link #sqlUpsert(Connection, String, Map, Map, long)}.
   */
  public static void sqlUpdate(Connection conn, String table, Map<String, ?> key, Map<String, ?> values,
      long token) throws SQLException {
    sqlUpdate(conn, table, key, values, token, "fence");
  }

  /** {@link #sqlUpdate(Connection, String, Map, Map, long)} with the fence in fenceColumn. */
  public static void sqlUpdate(Connection conn, String table, Map<String, ?> key, Map<String, ?> values,
      long token, String fenceColumn) throws SQLException {
    sqlWrite(SQL_UPDATE, conn, table, key, values, token, fenceColumn);
  }

  private static void sqlWrite(int statement, Connection conn, String table, Map<String, ?> key,
      Map<String, ?> values, long token, String fenceColumn) throws SQLException {
    if (conn == null || key == null)
      throw new NullPointerException(conn == null ? "conn" : "key");
    if (values == null)
      values = Collections.emptyMap();
    String[] kcols = key.keySet().toArray(new String[0]);
    String[] vcols = values.keySet().toArray(new String[0]);
    noNul(table, fenceColumn, kcols, vcols);
    String sql = RedlockNative.fenceSqlNative(statement, SQL_QMARK, table, kcols, vcols, fenceColumn, token);
    // The order redlock_fence_sql documents: upsert K, V, T; update V, T, K, T ('?' twice).
    List<Object> args = new ArrayList<>();
    if (statement == SQL_UPSERT) {
      args.addAll(key.values());
      args.addAll(values.values());
      args.add(token);
    } else {
      args.addAll(values.values());
      args.add(token);
      args.addAll(key.values());
      args.add(token);
    }
    try (PreparedStatement ps = conn.prepareStatement(sql)) {
      bind(ps, args);
      if (ps.executeUpdate() > 0)
        return;
    }
    // No row changed: the fence that refused the write, or no such row.
    String display = table + " " + key;
    String read = RedlockNative.fenceSqlNative(SQL_READ, SQL_QMARK, table, kcols, vcols, fenceColumn, token);
    try (PreparedStatement ps = conn.prepareStatement(read)) {
      bind(ps, new ArrayList<Object>(key.values()));
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next())
          throw new NoSuchElementException(display + ": no such row to update (sqlUpsert makes one)");
        long seen = rs.getLong(1);   // NULL reads 0: the row changed since; the refusal stands
        throw new FencedException(display, token, seen, "FENCED " + token + " " + seen);
      }
    }
  }

  private static void bind(PreparedStatement ps, List<Object> args) throws SQLException {
    for (int i = 0; i < args.size(); i++)
      ps.setObject(i + 1, args.get(i));
  }

  /** A name reaches C as a C string, which ends at a NUL: refused here, not cut short there. */
  private static void noNul(String table, String fenceColumn, String[] kcols, String[] vcols) {
    List<String> names = new ArrayList<>(Arrays.asList(kcols));
    names.addAll(Arrays.asList(vcols));
    names.add(table);
    names.add(fenceColumn);
    for (String n : names)
      if (n != null && n.indexOf('\0') >= 0)
        throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument",
            "a name has a NUL: '" + n.replace("\0", "\\0") + "'");
  }

  /** The message of e or of a cause that carries the store's reply (a client may wrap it). */
  private static String message(Throwable e) {
    for (int depth = 0; e != null && depth < 8; e = e.getCause(), depth++) {
      String m = e.getMessage();
      if (m != null && m.startsWith("FENCED ") && m.indexOf('\0') < 0)
        return m;
    }
    return null;
  }

  private static boolean startsWith(Throwable e, String prefix) {
    for (int depth = 0; e != null && depth < 8; e = e.getCause(), depth++) {
      String m = e.getMessage();
      if (m != null && m.startsWith(prefix))
        return true;
    }
    return false;
  }

  private static String text(Object reply) {
    if (reply instanceof byte[])
      return new String((byte[]) reply, StandardCharsets.UTF_8);
    if (reply == null)
      throw new IllegalStateException("the store replied nil");
    return reply.toString();
  }

  private static long integer(Object reply) {
    if (reply instanceof Number)
      return ((Number) reply).longValue();
    return Long.parseLong(text(reply));
  }
}
