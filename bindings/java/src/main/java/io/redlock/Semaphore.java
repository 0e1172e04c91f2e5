// SPDX-License-Identifier: BSD-3-Clause

// Semaphore.java: a counting semaphore across the nodes, with the permit methods of
// java.util.concurrent.Semaphore, over C semaphore handles (redlock_lock_open_semaphore).
package io.redlock;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A counting semaphore of {@code limit} permits on a name, shared by every
 * client and process that uses the name with the same limit: at most
 * {@code limit} permits are held at once (docs/algorithm.md, "Counting
 * semaphore"). Another limit on the same name throws
 * {@link InvalidArgumentException}, naming both.
 *
 * <p>The permit methods are those of {@link java.util.concurrent.Semaphore}:
 * {@link #acquire()}, {@link #acquireUninterruptibly()}, {@link #tryAcquire()},
 * {@link #tryAcquire(long, TimeUnit)}, {@link #release()} and their forms for
 * several permits at once (all or none).
 * Each acquisition is a lease of {@code ttlMs}: it is a {@link Lock}
 * ({@link #permits()}), so it can be extended or auto-extended, and its
 * fencing token read. {@link #release()} gives back the acquisition made last
 * through this object; it throws {@link LockLostException} if its lease was
 * no longer held on a majority. Unlike java.util.concurrent.Semaphore, more
 * cannot be released than was acquired through this object
 * (IllegalStateException), and there is no availablePermits(): the count is
 * spread over the nodes and changes with every lease, so any number read
 * would be stale or unsound. Thread-safe.
 */
public final class Semaphore implements AutoCloseable {
  private final Redlock client;
  private final String name;
  private final int limit;
  private final long ttlMs;
  private final Map<Integer, Deque<Lock>> idle = new HashMap<>();
  private final Deque<Lock> held = new ArrayDeque<>();
  private final Map<Lock, Integer> sizes = new HashMap<>();

  /**
   * A semaphore of {@code limit} permits (1 to 1000) on {@code name}, each
   * acquisition a lease of {@code ttlMs}. No network I/O; a bad name or
   * limit throws InvalidArgumentException.
   */
  public Semaphore(Redlock client, String name, int limit, long ttlMs) {
    if (client == null || name == null)
      throw new NullPointerException(client == null ? "client" : "name");
    this.client = client;
    this.name = name;
    this.limit = limit;
    this.ttlMs = ttlMs;
    giveBack(newPermit(1), 1); // the name and limit are checked here
  }

  /** The semaphore's name. */
  public String name() {
    return name;
  }

  /** The number of permits of the semaphore. */
  public int limit() {
    return limit;
  }

  private Lock newPermit(int permits) {
    return client.adopt(() -> client.newSemaphoreNative(name, limit, permits));
  }

  private Lock take(int permits) {
    synchronized (this) {
      Deque<Lock> d = idle.get(permits);
      if (d != null && !d.isEmpty())
        return d.pop();
    }
    return newPermit(permits);
  }

  private synchronized void giveBack(Lock lock, int permits) {
    idle.computeIfAbsent(permits, k -> new ArrayDeque<>()).push(lock);
  }

  private synchronized void hold(Lock lock, int permits) {
    held.push(lock);
    sizes.put(lock, permits);
  }

  /**
   * Takes {@code permits} at once (C's waitMs); false if they were not free in
   * time. Interruptible, the wait is one C wait that an interrupt cancels
   * (Lock.acquireInterruptibly), as RedlockReadWriteLock's is.
   */
  private boolean take(int permits, long waitMs, boolean interruptible) throws InterruptedException {
    if (interruptible && Thread.interrupted())
      throw new InterruptedException();
    Lock lock = take(permits);
    boolean ok = false;
    try {
      if (interruptible && waitMs != Redlock.WAIT_NONE)
        lock.acquireInterruptibly(ttlMs, waitMs);
      else
        lock.acquire(ttlMs, waitMs);
      ok = true;
    } catch (LockNotAcquiredException | LockTimeoutException e) {
      return false;
    } finally {
      if (ok)
        hold(lock, permits);
      else
        giveBack(lock, permits);
    }
    return true;
  }

  /**
   * Takes a permit, waiting until one is free. An interrupt ends the wait
   * with InterruptedException after at most the round in flight, and no
   * permit is then held.
   */
  public void acquire() throws InterruptedException {
    acquire(1);
  }

  /** Takes {@code permits} at once (all or none), waiting until they are free. */
  public void acquire(int permits) throws InterruptedException {
    take(permits, Redlock.WAIT_FOREVER, true);
  }

  /**
   * Takes a permit, waiting until one is free, whatever interrupts the
   * thread meanwhile: as {@link java.util.concurrent.Semaphore#acquireUninterruptibly()},
   * it does not throw InterruptedException, and the thread's interrupt
   * status is left as it is (set, if it was interrupted).
   */
  public void acquireUninterruptibly() {
    acquireUninterruptibly(1);
  }

  /** Takes {@code permits} at once (all or none), waiting until they are free, as {@link #acquireUninterruptibly()}. */
  public void acquireUninterruptibly(int permits) {
    try {
      take(permits, Redlock.WAIT_FOREVER, false);
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    }
  }

  /** Takes a permit if one is free now: one attempt. */
  public boolean tryAcquire() {
    return tryAcquire(1);
  }

  /** Takes {@code permits} at once if they are free now: one attempt. */
  public boolean tryAcquire(int permits) {
    try {
      return take(permits, Redlock.WAIT_NONE, false);
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    }
  }

  /** Takes a permit, waiting up to the timeout; false if none was free in time. */
  public boolean tryAcquire(long timeout, TimeUnit unit) throws InterruptedException {
    return tryAcquire(1, timeout, unit);
  }

  /** Takes {@code permits} at once, waiting up to the timeout. */
  public boolean tryAcquire(int permits, long timeout, TimeUnit unit) throws InterruptedException {
    long ms = unit.toMillis(timeout);
    return take(permits, ms <= 0 ? Redlock.WAIT_NONE : ms, true);
  }

  /** Gives back the acquisition made last through this object (one permit). */
  public void release() {
    release(1);
  }

  /**
   * Gives back {@code permits}, the acquisitions made last through this
   * object. Throws IllegalStateException if more than are held, or if the
   * last acquisition took more than {@code permits} at once; LockLostException
   * if a lease was no longer held on a majority (the limit may have been
   * exceeded meanwhile).
   */
  public void release(int permits) {
    RuntimeException first = null;
    while (permits > 0) {
      Lock lock;
      int n;
      synchronized (this) {
        lock = held.peek();
        if (lock == null)
          throw new IllegalStateException("semaphore '" + name + "': released more permits than were acquired");
        n = sizes.get(lock);
        if (n > permits)
          throw new IllegalStateException("semaphore '" + name + "': the last acquisition took " + n
              + " permits at once; release(" + n + ")");
        held.pop();
        sizes.remove(lock);
      }
      permits -= n;
      try {
        lock.release();
      } catch (RuntimeException e) {
        if (first == null)
          first = e;
      } finally {
        giveBack(lock, n);
      }
    }
    if (first != null)
      throw first;
  }

  /** The permits held through this object, as held {@link Lock}s, newest first. */
  public synchronized List<Lock> permits() {
    return new ArrayList<>(held);
  }

  /** How many permits are held through this object (validity not looked at). */
  public synchronized int heldPermits() {
    int t = 0;
    for (int n : sizes.values())
      t += n;
    return t;
  }

  /** Releases what is held through this object and frees the handles. */
  @Override
  public void close() {
    RuntimeException first = null;
    List<Lock> all = new ArrayList<>();
    synchronized (this) {
      all.addAll(held);
      held.clear();
      sizes.clear();
      for (Deque<Lock> d : idle.values())
        all.addAll(d);
      idle.clear();
    }
    for (Lock l : all) {
      try {
        l.close();
      } catch (RuntimeException e) {
        if (first == null)
          first = e;
      }
    }
    if (first != null)
      throw first;
  }

  @Override
  public String toString() {
    return "Semaphore(" + name + ", limit " + limit + ", held " + heldPermits() + ")";
  }
}
