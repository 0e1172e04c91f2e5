// SPDX-License-Identifier: BSD-3-Clause

// Redlock.java: a client over N nodes (redlock_client), the entry point of the
// Java binding. The calls into C are in RedlockNative, which SWIG generates
// from bindings/swig.
package io.redlock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A Redlock client over N independent Redis/Valkey nodes. Thread-safe.
 *
 * <pre>{@code
 * try (Redlock client = new Redlock(new String[]{"redis://a:6379", "redis://b:6379", "redis://c:6379"});
 *      Lock lock = client.acquire("invoices", 30_000)) {
 *     ...
 * }
 * }</pre>
 *
 * Locks keep the underlying C client alive, so a {@link Lock} stays usable
 * after its client is closed. Every failure is a {@link RedlockException}.
 */
public final class Redlock extends RedlockNative implements AutoCloseable {
  /** wait argument: the client's retry policy (Options retryCount / waitMs); REDLOCK_WAIT_DEFAULT. */
  public static final long WAIT_DEFAULT = constant("REDLOCK_WAIT_DEFAULT");
  /** wait argument: exactly one attempt; REDLOCK_WAIT_NONE. */
  public static final long WAIT_NONE = constant("REDLOCK_WAIT_NONE");
  /**
   * wait argument: retry with no deadline, until acquired, a failure a retry cannot fix, or
   * {@link Lock#cancel()}; REDLOCK_WAIT_FOREVER. A finite wait is at most seven days.
   */
  public static final long WAIT_FOREVER = constant("REDLOCK_WAIT_FOREVER");
  /** The longest finite wait, seven days: REDLOCK_MAX_WAIT_MS. */
  public static final long MAX_WAIT_MS = constant("REDLOCK_MAX_WAIT_MS");

  /** A macro of redlock.h, read from the native library rather than retyped here. */
  static long constant(String name) {
    long v = constantNative(name);
    if (v == Long.MIN_VALUE)
      throw new ExceptionInInitializerError("redlock.h has no constant " + name + " known to the native library");
    return v;
  }

  // Calls that touch the C client are serialised with close().
  private List<String> nodeUrls;

  /** A client with the default options. */
  public Redlock(String[] nodes) {
    this(nodes, null);
  }

  /**
   * A client over the given node URLs (redis://[user[:password]@]host[:port][/db]
   * or unix:///path[?db=N]) with options (null = the defaults). No connection is
   * made yet. A malformed or duplicate URL throws InvalidArgumentException; a
   * TLS file that cannot be loaded, TLSException.
   */
  public Redlock(String[] nodes, Options options) {
    super(nodes, options);
  }

  /** The version of the C library actually loaded, "MAJOR.MINOR.PATCH". */
  public static String version() {
    return versionNative();
  }

  /** Acquires resource for ttlMs, retrying per the client's options. */
  public Lock acquire(String resource, long ttlMs) {
    return acquire(resource, ttlMs, WAIT_DEFAULT);
  }

  /** Acquires resource for ttlMs with one attempt. */
  public Lock tryAcquire(String resource, long ttlMs) {
    return acquire(resource, ttlMs, WAIT_NONE);
  }

  /**
   * Acquires resource for ttlMs, retrying for up to waitMs (or WAIT_DEFAULT,
   * WAIT_NONE); a wait that runs out throws {@link LockTimeoutException}.
   */
  public Lock acquire(String resource, long ttlMs, long waitMs) {
    // The lock handle is made under this client's monitor and the wait runs
    // outside it, so close() never waits for a slow acquire.
    Lock lock = newLock(resource);
    try {
      lock.acquire(ttlMs, waitMs);
      return lock;
    } catch (RuntimeException | Error e) {
      lock.swigFree(); // not held, so nothing to release
      throw e;
    }
  }

  /** The most locks {@link #tryAcquireMany(List, long)} takes in one call: the C library's REDLOCK_ACQUIRE_MANY_MAX. */
  public static final int ACQUIRE_MANY_MAX = acquireManyMaxNative();

  /**
   * One attempt at each of locks (this client's, of any kind), as
   * {@link Lock#tryAcquire(long)} makes it, all pipelined in about one round
   * trip instead of one each (redlock_lock_acquire_many): for a dispatcher
   * that takes a lock per message. Element k of the result is null when
   * locks.get(k) is held now, or the exception its tryAcquire(ttlMs) would
   * have thrown (not thrown: the other locks' outcomes stand). A null list
   * or element, a lock of another client or given twice, more than
   * {@link #ACQUIRE_MANY_MAX} locks, or a ttlMs that is not a 32-bit
   * unsigned value throw InvalidArgumentException before any network I/O; a
   * closed lock's element is a LockStateException. Each lock's monitor is
   * held during the call, as its own tryAcquire holds it.
   */
  public List<RedlockException> tryAcquireMany(List<Lock> locks, long ttlMs) {
    if (locks == null)
      throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument", "the list of locks is null");
    Lock[] all = locks.toArray(new Lock[0]);
    for (int k = 0; k < all.length; k++)
      if (all[k] == null)
        throw new InvalidArgumentException("REDLOCK_EINVAL", "invalid argument", "lock " + k + " is null");
    Object[] res = acquireManyNative(all, ttlMs, this); // the C library checks the list
    RedlockException[] out = new RedlockException[all.length];
    for (int k = 0; k < all.length; k++)
      out[k] = (RedlockException) res[k];
    return java.util.Arrays.asList(out);
  }

  /** Frees the client. Idempotent. Locks made from it remain usable. */
  @Override
  public synchronized void close() {
    swigFree();
  }

  /**
   * Loads (FUNCTION LOAD REPLACE) the "redlock" function library on every node, for
   * clients whose Options have setUseFunctions(true). An administrator runs it once
   * per node, with URLs whose user may run FUNCTION LOAD. Throws the commonest
   * failure, with every node's answer, if any node did not load it.
   */
  public synchronized void loadFunctions() {
    loadFunctionsNative();
  }

  /** How many nodes this client uses. */
  public synchronized long nodeCount() {
    return nodeCountNative();
  }

  /**
   * The node URLs as given to the constructor, with any password masked, in
   * the order that {@link Lock#nodeResults()} and {@link RedlockEvent#node()} use.
   */
  public synchronized List<String> nodeUrls() {
    long n = nodeCountNative(); // throws once closed
    if (nodeUrls == null) {
      List<String> urls = new ArrayList<>((int) n);
      for (long i = 0; i < n; i++)
        urls.add(nodeUrlNative(i));
      nodeUrls = Collections.unmodifiableList(urls);
    }
    return nodeUrls;
  }

  /**
   * The state of this client's wake-up listener on node i (an index into
   * {@link #nodeUrls()}): the connection on which it hears releases, opened
   * by its first waiting acquire (see {@link Options#setWake(boolean)}).
   * Throws InvalidArgumentException for i out of range.
   */
  public synchronized ListenerState listenerState(int i) {
    return ListenerState.fromNative(listenerStateNative(i));
  }

  /** Why node i's wake-up listener is DOWN or REFUSED; "" otherwise. */
  public synchronized String listenerMessage(int i) {
    listenerStateNative(i); // the range and closed checks
    return listenerMessageNative(i);
  }

  /** {@link #listenerState(int)} of every node, in the order of {@link #nodeUrls()}. */
  public synchronized List<ListenerState> listenerStates() {
    int n = (int) nodeCountNative();
    List<ListenerState> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++)
      out.add(listenerState(i));
    return Collections.unmodifiableList(out);
  }

  /**
   * A campaigner or observer of the leader election {@code name}: see {@link Election}.
   * No network I/O; a bad name throws InvalidArgumentException.
   */
  public Election newElection(String name) {
    synchronized (this) {
      return newElectionNative(name);
    }
  }

  /** A handle for resource, not yet acquired (for acquire/cancel from Lock). */
  public Lock newLock(String resource) {
    return adopt(() -> newLockNative(resource));
  }

  /** A native handle made under this client's monitor, tied to this client and its nodes. */
  Lock adopt(java.util.function.Supplier<Lock> make) {
    List<String> urls = nodeUrls();
    Lock lock;
    synchronized (this) {
      lock = make.get();
    }
    lock.nodeUrls = urls;
    lock.client = this;
    return lock;
  }

  /**
   * A handle for resource, not yet acquired, with its own acquisition policy
   * (retries, wait, drift: {@link Lock#setOptions(LockOptions)}) instead of
   * this client's. It uses this client's connections, however many locks
   * have a policy of their own. Invalid options throw InvalidArgumentException.
   */
  public Lock newLock(String resource, LockOptions options) {
    Lock lock = newLock(resource);
    try {
      lock.setOptions(options);
      return lock;
    } catch (RuntimeException | Error e) {
      lock.swigFree();
      throw e;
    }
  }

  /**
   * A handle that holds every one of resources together, all or none, not
   * yet acquired (Redisson's MultiLock, Curator's InterProcessMultiLock):
   * each node sets all the keys in one script, in one canonical order, so
   * handles that list the same names in any order exclude each other and
   * never deadlock, and a lock on any one of the names excludes them. Its
   * methods are Lock's; {@link Lock#fencingToken()} is one token for the
   * set, above every name's own counter; {@link Lock#resource()} is the
   * names in canonical order joined by commas. An empty list, a name given
   * twice, more than 64 names or a bad name throws InvalidArgumentException.
   */
  public Lock newMultiLock(String... resources) {
    if (resources == null)
      throw new NullPointerException("resources");
    return adopt(() -> newMultiLockNative(resources));
  }

  /** {@link #newMultiLock(String...)} with its own acquisition policy, as {@link #newLock(String, LockOptions)}. */
  public Lock newMultiLock(List<String> resources, LockOptions options) {
    Lock lock = newMultiLock(resources.toArray(new String[0]));
    try {
      lock.setOptions(options);
      return lock;
    } catch (RuntimeException | Error e) {
      lock.swigFree();
      throw e;
    }
  }
}
