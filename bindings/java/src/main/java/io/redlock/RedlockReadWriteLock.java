// SPDX-License-Identifier: BSD-3-Clause

// RedlockReadWriteLock.java: the read-write lock on one resource
// (docs/algorithm.md, "Read-write locks") as a
// java.util.concurrent.locks.ReadWriteLock. Each side is a
// java.util.concurrent.locks.Lock over the C library's read or write handles.
package io.redlock;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReadWriteLock;

/**
 * A distributed read-write lock: {@link #readLock()} is held by any number
 * of threads at once (in any process), {@link #writeLock()} by one, excluding
 * readers, other writers and {@link Lock}s of the same resource. Writers are
 * preferred: once a waiting writer has been refused, new readers wait for
 * it, so a stream of readers cannot starve it.
 *
 * <p>Each thread that locks a side holds its own acquisition, kept alive by
 * auto-extension ({@link Lock#autoExtend()}: at most one hour of holding)
 * until it calls {@code unlock()}, which releases it and throws
 * {@link LockLostException} if it was no longer ours on a majority. The
 * sides are not reentrant: a thread that locks a side it holds gets a
 * {@link LockStateException}, and {@code unlock()} by a thread that does not
 * hold the side throws {@link IllegalMonitorStateException}, as
 * {@code ReentrantReadWriteLock} does. There is no upgrade from read to
 * write (two readers upgrading would wait for each other for ever); a
 * write lock is downgraded with {@link #downgrade()}.
 */
public final class RedlockReadWriteLock implements ReadWriteLock {

  private final Redlock client;
  private final String resource;
  private final long ttlMs;
  private final Side read = new Side(false);
  private final Side write = new Side(true);

  /**
   * The read-write lock on resource through client; each acquisition is
   * made for ttlMs and auto-extended. No I/O; an invalid resource (empty,
   * too long) throws InvalidArgumentException now.
   */
  public RedlockReadWriteLock(Redlock client, String resource, long ttlMs) {
    if (client == null || resource == null)
      throw new NullPointerException(client == null ? "client" : "resource");
    this.client = client;
    this.resource = resource;
    this.ttlMs = ttlMs;
    read.newHandle().close(); // the name's checks, with their message
  }

  /** The shared side. */
  @Override
  public java.util.concurrent.locks.Lock readLock() {
    return read;
  }

  /** The exclusive side. */
  @Override
  public java.util.concurrent.locks.Lock writeLock() {
    return write;
  }

  /** The resource's name. */
  public String resource() {
    return resource;
  }

  /**
   * The calling thread's write lock becomes a read lock, with no writer in
   * between: from then on the thread holds {@link #readLock()} and unlocks
   * that. Throws IllegalMonitorStateException if the thread does not hold
   * the write lock, LockStateException if it also holds the read lock, and
   * LockLostException and others (after which it holds neither).
   */
  public void downgrade() {
    Lock l = write.held.get();
    if (l == null)
      throw new IllegalMonitorStateException("this thread does not hold the write lock of '" + resource + "'");
    if (read.held.get() != null)
      throw state("this thread holds the read lock of '" + resource + "' already");
    write.held.remove();
    try {
      l.downgrade();
    } catch (RuntimeException e) {
      l.close();
      throw e;
    }
    read.held.set(l);
  }

  /** The calling thread's acquisition of a side, or null: its validity, token, node results. */
  public Lock heldBy(boolean writeSide) {
    return (writeSide ? write : read).held.get();
  }

  @Override
  public String toString() {
    return "RedlockReadWriteLock[" + resource + "]";
  }

  private static LockStateException state(String detail) {
    return new LockStateException("REDLOCK_ESTATE", "the call does not fit the lock's state", detail);
  }

  private final class Side implements java.util.concurrent.locks.Lock {
    final boolean isWrite;
    final ThreadLocal<Lock> held = new ThreadLocal<>();

    Side(boolean isWrite) {
      this.isWrite = isWrite;
    }

    Lock newHandle() {
      java.util.List<String> urls = client.nodeUrls();
      Lock l;
      synchronized (client) {
        l = isWrite ? client.newWriteLockNative(resource) : client.newReadLockNative(resource);
      }
      l.nodeUrls = urls;
      l.client = client;
      return l;
    }

    /** One acquire call of C's: held afterwards, or an exception. */
    private void acquire(long waitMs) {
      try {
        acquire(waitMs, false);
      } catch (InterruptedException e) {
        throw new AssertionError(e); // not interruptible
      }
    }

    /** The same; interruptible: one C wait that an interrupt cancels (Lock.acquireInterruptibly). */
    private void acquire(long waitMs, boolean interruptible) throws InterruptedException {
      if (held.get() != null)
        throw state("this thread holds the " + (isWrite ? "write" : "read") + " lock of '" + resource
            + "' already (not reentrant)");
      Lock l = newHandle();
      try {
        if (interruptible)
          l.acquireInterruptibly(ttlMs, waitMs);
        else
          l.acquire(ttlMs, waitMs);
        l.autoExtend();
      } catch (InterruptedException | RuntimeException | Error e) {
        l.close();
        throw e;
      }
      held.set(l);
    }

    @Override
    public void lock() {
      acquire(Redlock.WAIT_FOREVER);
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
      acquire(Redlock.WAIT_FOREVER, true);
    }

    @Override
    public boolean tryLock() {
      try {
        acquire(Redlock.WAIT_NONE);
        return true;
      } catch (LockNotAcquiredException | LockTimeoutException | NoQuorumException e) {
        return false;
      }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
      long ms = unit.toMillis(Math.max(time, 0));
      try {
        acquire(ms <= 0 ? Redlock.WAIT_NONE : ms, true);
        return true;
      } catch (LockNotAcquiredException | LockTimeoutException | NoQuorumException e) {
        return false;
      }
    }

    @Override
    public void unlock() {
      Lock l = held.get();
      if (l == null)
        throw new IllegalMonitorStateException("this thread does not hold the " + (isWrite ? "write" : "read")
            + " lock of '" + resource + "'");
      held.remove();
      l.close(); // releases: LockLostException if it was no longer ours on a majority
    }

    @Override
    public Condition newCondition() {
      throw new UnsupportedOperationException("a distributed lock has no conditions");
    }

    @Override
    public String toString() {
      return "RedlockReadWriteLock[" + resource + "]." + (isWrite ? "writeLock" : "readLock");
    }
  }
}
