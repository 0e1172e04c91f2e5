// SPDX-License-Identifier: BSD-3-Clause

// Lock.java: one lock on one resource (redlock_lock). The calls into C are in
// LockNative, which SWIG generates from bindings/swig.
package io.redlock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One lock on one resource. Use it from one thread at a time (its methods
 * are synchronized), except {@link #cancel()}, which any thread may call.
 * {@link #close()} releases the lock if it is held and frees the handle.
 * The client's auto-extend thread may extend it meanwhile
 * ({@link #autoExtend(long, LockLostListener)}).
 */
public final class Lock extends LockNative implements AutoCloseable {
  // cancel() must not run while the handle is being freed; it cannot take
  // the lock's monitor because acquire() holds that while it waits.
  private final Object cancelGuard = new Object();

  // The client's node URLs, for nodeResults(); set by Redlock.newLock.
  List<String> nodeUrls = List.of();
  // The client that made it (Redlock.tryAcquireMany takes its own locks only).
  Redlock client;
  // The order in which Redlock.tryAcquireMany takes the monitors of several
  // locks, the same in every call, so that two calls never wait for each other.
  private static final java.util.concurrent.atomic.AtomicLong SERIALS = new java.util.concurrent.atomic.AtomicLong();
  final long serial = SERIALS.incrementAndGet();

  Lock(long cPtr, boolean cMemoryOwn) {
    super(cPtr, cMemoryOwn);
  }

  // The C handle, or 0 once closed (read under this lock's monitor).
  long handle() {
    return swigCPtr;
  }

  /** Acquires for ttlMs, retrying per the client's options. */
  public void acquire(long ttlMs) {
    acquire(ttlMs, Redlock.WAIT_DEFAULT);
  }

  /** Acquires for ttlMs with one attempt. */
  public void tryAcquire(long ttlMs) {
    acquire(ttlMs, Redlock.WAIT_NONE);
  }

  /**
   * Acquires for ttlMs, waiting up to waitMs (Redlock.WAIT_DEFAULT, Redlock.WAIT_NONE,
   * Redlock.WAIT_FOREVER, or 1 ms to seven days).
   */
  public synchronized void acquire(long ttlMs, long waitMs) {
    checkNoAsync();
    acquireNative(ttlMs, waitMs);
  }

  // An acquireAsync is under way (set before it starts, cleared by its C callback).
  volatile boolean asyncPending;

  private void checkNoAsync() {
    if (asyncPending)
      throw new LockStateException("REDLOCK_ESTATE", "the call does not fit the lock's state",
          "an asynchronous call on '" + resourceNative() + "' is under way: wait for its future (or cancel an acquire)");
  }

  /** {@link #acquireAsync(long, long, Executor)} with the client's retries (Redlock.WAIT_DEFAULT). */
  public CompletableFuture<Lock> acquireAsync(long ttlMs) {
    return acquireAsync(ttlMs, Redlock.WAIT_DEFAULT);
  }

  /** {@link #acquireAsync(long, long, Executor)}, completed on {@link ForkJoinPool#commonPool()}. */
  public CompletableFuture<Lock> acquireAsync(long ttlMs, long waitMs) {
    return acquireAsync(ttlMs, waitMs, ForkJoinPool.commonPool());
  }

  /**
   * Acquires as {@link #acquire(long, long)} does, without a thread waiting:
   * the client's one acquire thread in C runs every waiter's attempts
   * (redlock_lock_acquire_async). The future completes with this lock once
   * held, or exceptionally with what acquire() would throw; it completes on
   * executor, so dependent stages never run on the C thread. Cancelling the
   * future cancels the wait (a lock granted in that race is released). Until
   * it completes, acquire() and acquireAsync() on this lock throw
   * {@link LockStateException}. Errors found at once (a closed lock, out of
   * memory) are thrown here.
   */
  public CompletableFuture<Lock> acquireAsync(long ttlMs, long waitMs, Executor executor) {
    Objects.requireNonNull(executor, "executor");
    NativeCallbacks.AcquireDispatch d = new NativeCallbacks.AcquireDispatch(this, executor);
    startAsync(() -> acquireAsyncNative(ttlMs, waitMs, d));
    return d.future;
  }

  /**
   * {@link #acquire(long, long)} that a Java interrupt ends, for the
   * interruptible forms of java.util.concurrent's shapes (RedlockReadWriteLock,
   * Semaphore): the wait is the asynchronous one, a single C wait, and this
   * thread waits for its future. Interrupted, it cancels the C wait, waits
   * for its end (at most the round in flight; a lock granted in that race is
   * given back) and throws InterruptedException. An acquire that completed
   * as the interrupt came stands, and the interrupt flag is set again. A
   * waitMs beyond C's longest finite wait (Redlock.MAX_WAIT_MS) is C's
   * WAIT_FOREVER, cancelled at the deadline by the future's timed get:
   * LockTimeoutException then, as C would say.
   */
  // C's longest finite wait (a test lowers it to see the deadline's cancel).
  static long cWaitLimitMs = Redlock.MAX_WAIT_MS;

  void acquireInterruptibly(long ttlMs, long waitMs) throws InterruptedException {
    if (Thread.interrupted())
      throw new InterruptedException();
    boolean beyondC = waitMs > cWaitLimitMs;
    NativeCallbacks.AcquireDispatch d = new NativeCallbacks.AcquireDispatch(this, ForkJoinPool.commonPool());
    startAsync(() -> acquireAsyncNative(ttlMs, beyondC ? Redlock.WAIT_FOREVER : waitMs, d));
    try {
      if (beyondC)
        d.future.get(waitMs, TimeUnit.MILLISECONDS);
      else
        d.future.get();
      return;
    } catch (InterruptedException e) {
      if (d.future.cancel(false)) {
        d.awaitSettled();
        throw e;
      }
      Thread.currentThread().interrupt(); // done meanwhile: its outcome below
    } catch (TimeoutException e) {
      if (d.future.cancel(false)) {
        d.awaitSettled();
        RedlockException c = d.failure; // "wait cancelled after N attempts; last attempt: ..."
        throw new LockTimeoutException("REDLOCK_ETIMEDOUT", "timed out waiting for the lock",
            "not acquired within " + waitMs + " ms" + (c != null ? ": " + c.getDetail() : ""));
      }
    } catch (ExecutionException e) {
      throw unwrap(e.getCause());
    }
    try {
      d.future.join();
    } catch (CompletionException e) {
      throw unwrap(e.getCause());
    }
  }

  private static RuntimeException unwrap(Throwable cause) {
    if (cause instanceof RuntimeException)
      return (RuntimeException) cause;
    if (cause instanceof Error)
      throw (Error) cause;
    return new IllegalStateException(cause);
  }

  // Starts an asynchronous call (start calls its native method): the lock is
  // the call's until its C callback clears asyncPending.
  private synchronized void startAsync(Runnable start) {
    checkNoAsync();
    asyncPending = true;
    try {
      start.run();
    } catch (RuntimeException e) {
      asyncPending = false;
      throw e;
    }
  }

  /** {@link #releaseAsync(Executor)}, completed on {@link ForkJoinPool#commonPool()}. */
  public CompletableFuture<Lock> releaseAsync() {
    return releaseAsync(ForkJoinPool.commonPool());
  }

  /**
   * Releases as {@link #release()} does, without a thread waiting: the round
   * runs on the client's acquire thread in C (redlock_lock_release_async).
   * The future completes on executor with this lock, or exceptionally with
   * what release() would throw (LockLostException: it was no longer ours on
   * a majority). Cancelling the future does not stop the release (one round,
   * bounded by the node timeout). Until it completes, the lock's other calls
   * throw {@link LockStateException}; errors found at once (a closed lock)
   * are thrown here.
   */
  public CompletableFuture<Lock> releaseAsync(Executor executor) {
    Objects.requireNonNull(executor, "executor");
    NativeCallbacks.RoundDispatch d = new NativeCallbacks.RoundDispatch(this, executor);
    startAsync(() -> releaseAsyncNative(d));
    return d.future;
  }

  /** {@link #extendAsync(long, Executor)}, completed on {@link ForkJoinPool#commonPool()}. */
  public CompletableFuture<Lock> extendAsync(long ttlMs) {
    return extendAsync(ttlMs, ForkJoinPool.commonPool());
  }

  /**
   * Extends as {@link #extend(long)} does, without a thread waiting
   * (redlock_lock_extend_async), completed as {@link #releaseAsync(Executor)} is.
   */
  public CompletableFuture<Lock> extendAsync(long ttlMs, Executor executor) {
    Objects.requireNonNull(executor, "executor");
    NativeCallbacks.RoundDispatch d = new NativeCallbacks.RoundDispatch(this, executor);
    startAsync(() -> extendAsyncNative(ttlMs, d));
    return d.future;
  }

  /** Extends the held lock to ttlMs from now, on a majority and within its validity. */
  public synchronized void extend(long ttlMs) {
    checkNoAsync();
    extendNative(ttlMs);
  }

  /** Releases on every node; throws LockLostException if it was no longer ours on a majority. */
  public synchronized void release() {
    checkNoAsync();
    releaseNative();
  }

  /**
   * Turns a held write lock of a {@link RedlockReadWriteLock} into a read
   * lock, with no writer in between; the handle is a read lock from then on.
   * Throws InvalidArgumentException for a mutex or a read lock (a read lock
   * is never upgraded), LockStateException when not held, LockLostException
   * and others after which it is not held.
   */
  public synchronized void downgrade() {
    checkNoAsync();
    downgradeNative();
  }

  /**
   * Makes an acquire() waiting in another thread throw
   * {@link CancelledException} promptly, and every later acquire() too,
   * until {@link #resetCancel()}: a cancel issued just before the wait
   * starts is therefore never lost. Safe to call from any thread, and after
   * close() (then it does nothing).
   */
  public void cancel() {
    synchronized (cancelGuard) {
      if (swigCPtr != 0)
        cancelNative();
    }
  }

  /** Clears a {@link #cancel()}, so that this lock can be acquired again. */
  public void resetCancel() {
    synchronized (cancelGuard) {
      if (swigCPtr != 0)
        resetCancelNative();
    }
  }

  /** Remaining validity in ms (monotonic clock); {@code <= 0} means expired or not held. */
  public synchronized long validityMs() {
    return validityMsNative();
  }

  /** Whether this handle holds the lock and its validity has not run out. */
  public synchronized boolean isHeld() {
    return isHeldNative();
  }

  /**
   * How many times the current (or last) acquisition was extended, by {@link #extend} or by the
   * auto-extension: 0 after each acquire.
   */
  public synchronized long extensions() {
    return extensionsNative();
  }

  /** The resource name this lock is for. */
  public synchronized String resource() {
    return resourceNative();
  }

  /**
   * The fencing token of the current acquisition ({@code >= 1}) when the client's
   * Options have setFencing(true); 0 when not held or without fencing. Successive
   * holders' tokens strictly increase (docs/fencing.md).
   */
  public synchronized long fencingToken() {
    return fencingTokenNative();
  }

  /**
   * This lock's acquisition policy (a copy): its client's options until
   * {@link #setOptions(LockOptions)} changed them.
   */
  public synchronized LockOptions getOptions() {
    return getOptionsNative();
  }

  /**
   * Sets this lock's acquisition policy for its next acquisitions (retries,
   * delay, jitter, the wait of acquire(ttlMs) and acquire(ttlMs, WAIT_DEFAULT))
   * and the drift allowance of its validity; the options are copied. Checked
   * as the client's options are: InvalidArgumentException, with the reason,
   * leaves the policy unchanged. Waits for an acquire under way on this handle.
   */
  public synchronized void setOptions(LockOptions opts) {
    setOptionsNative(opts);
  }

  /** {@link #autoExtend(long, LockLostListener)} for up to an hour, with no listener. */
  public void autoExtend() {
    autoExtend(0, null);
  }

  /** {@link #autoExtend(long, LockLostListener)} for up to an hour. */
  public void autoExtend(LockLostListener listener) {
    autoExtend(0, listener);
  }

  /**
   * Keeps the held lock alive: the client's background thread extends it to
   * its acquisition TTL every TTL/3 until {@link #release()}, {@link #close()},
   * {@link #stopAutoExtend()}, a loss, or maxHoldMs of holding in all (0 = one
   * hour; the Options' maxHoldMs and maxExtensions apply too). A loss makes
   * {@link #isHeld()} false and is told to listener (may be null) on another
   * thread; before it, while the lock is still held, the listener's
   * {@link LockLostListener#onAtRisk onAtRisk} is told that no extension has
   * succeeded and the validity ends within max(TTL / 10, 2 &times; the node
   * timeout); see {@link LockLostListener}. Calling it again replaces the
   * listener. Throws {@link LockStateException} when the lock is not held.
   */
  public synchronized void autoExtend(long maxHoldMs, LockLostListener listener) {
    autoExtendNative(maxHoldMs, listener == null ? null : new NativeCallbacks.LostDispatch(this, listener));
  }

  /**
   * Stops auto-extension, waiting for an extension under way; the lock stays
   * held until its validity runs out. False if it was not on (never started,
   * or ended by a loss or a release).
   */
  public synchronized boolean stopAutoExtend() {
    return stopAutoExtendNative();
  }

  /**
   * What each node did in this lock's last round (the last attempt of an
   * acquire, an extension by anyone, or a release), in the client's node order.
   */
  public synchronized List<NodeResult> nodeResults() {
    List<String> urls = nodeUrls;
    List<NodeResult> out = new ArrayList<>(urls.size());
    for (int i = 0; i < urls.size(); i++)
      out.add((NodeResult) nodeResultNative(i, urls.get(i)));
    return Collections.unmodifiableList(out);
  }

  /**
   * Releases the lock if this handle holds it (throwing
   * {@link LockLostException} if it was no longer ours on a majority), then
   * frees the handle. Idempotent. In try-with-resources an exception from
   * the body wins and this one is added to it as suppressed.
   */
  @Override
  public synchronized void close() {
    synchronized (cancelGuard) {
      if (swigCPtr == 0)
        return;
      try {
        closeNative(); // releases if held, frees the C handle even on failure
      } finally {
        swigForget(); // closeNative already freed it
      }
    }
  }
}
