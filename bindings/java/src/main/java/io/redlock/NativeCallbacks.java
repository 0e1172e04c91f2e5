// SPDX-License-Identifier: BSD-3-Clause

// NativeCallbacks.java: the Java side of the C-to-Java callbacks written in
// bindings/swig/java/redlock_jni.c: lost-lock listeners, the event hook, and the
// factory of NodeResult. Its static methods are called from C only.
package io.redlock;

import java.lang.ref.WeakReference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

final class NativeCallbacks {
  private NativeCallbacks() {}

  // ------------------------------------------------------- lost listeners

  /**
   * What the C side holds (as a JNI global reference) for one
   * Lock.autoExtend(..., listener). The lock is weakly held: a Lock that the
   * program dropped can still be collected (its Cleaner then stops the
   * auto-extension). The listener is dropped once it has been told, so that
   * a lambda capturing the lock does not keep it alive either.
   */
  static final class LostDispatch {
    private final WeakReference<Lock> lock;
    private volatile LockLostListener listener;

    LostDispatch(Lock lock, LockLostListener listener) {
      this.lock = new WeakReference<>(lock);
      this.listener = listener;
    }
  }

  // The C callback runs on the client's auto-extend thread, which must not
  // wait for Java code: a listener calling a synchronized Lock method while
  // the owner's thread holds it in release() (which waits for that thread)
  // would deadlock, and the C callback may not free the lock, which close()
  // does. So the listener runs here instead, one at a time; the thread goes
  // away after a minute without work.
  private static final class LostExecutor {
    static final ThreadPoolExecutor INSTANCE;

    static {
      INSTANCE = new ThreadPoolExecutor(1, 1, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
        Thread t = new Thread(r, "redlock-lost-listener");
        t.setDaemon(true);
        return t;
      });
      INSTANCE.allowCoreThreadTimeOut(true);
    }
  }

  // Called from C (rl_java_on_lost) on the auto-extend thread: a loss, or
  // the at-risk notice before it, which may come again after an extension
  // ended the episode, and keeps the listener for the loss.
  static void lost(Object dispatch, int code, byte[] name, byte[] text, byte[] detail) {
    LostDispatch d = (LostDispatch) dispatch;
    if (code == RedlockException.EATRISK) {
      LockLostListener listener = d.listener;
      Lock lock = d.lock.get();
      if (listener == null || lock == null)
        return;
      String message = NativeSupport.string(detail);
      LostExecutor.INSTANCE.execute(() -> listener.onAtRisk(lock, message));
      return;
    }
    LockLostListener listener = d.listener;
    d.listener = null; // at most once
    Lock lock = d.lock.get();
    if (listener == null || lock == null)
      return;
    RedlockException cause = RedlockException.fromNative(code, name, text, detail);
    LostExecutor.INSTANCE.execute(() -> listener.lockLost(lock, cause));
  }

  // -------------------------------------------------- asynchronous acquire

  /** The future of Lock.acquireAsync: cancelling it cancels the wait in C. */
  static final class AcquireFuture extends CompletableFuture<Lock> {
    private final Lock lock;
    volatile boolean cancelRequested;

    AcquireFuture(Lock lock) {
      this.lock = lock;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (cancelled) {
        cancelRequested = true;
        lock.cancel(); // the C wait ends after the round in flight
      }
      return cancelled;
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
      return new CompletableFuture<>(); // dependent stages are plain futures
    }
  }

  /**
   * What the C side holds (as a JNI global reference) for one
   * Lock.acquireAsync: the future, and the executor that completes it, so
   * that no dependent stage runs on the client's acquire thread (it serves
   * every other waiter of the client).
   */
  static final class AcquireDispatch {
    final Lock lock;
    final AcquireFuture future;
    final Executor executor;

    // Counted down once the C call is over and settled (a lock granted to a
    // cancelled future given back): the lock is then free for the next call.
    final CountDownLatch settled = new CountDownLatch(1);
    // C's failure, kept even when the future was cancelled first (its words on the attempts).
    volatile RedlockException failure;

    AcquireDispatch(Lock lock, Executor executor) {
      this.lock = lock;
      this.future = new AcquireFuture(lock);
      this.executor = executor;
    }

    void settle(RedlockException cause) {
      try {
        if (future.cancelRequested)
          lock.resetCancel(); // the future's own cancel, whatever C ended with: the next acquire starts clean
        if (cause == null) {
          if (!future.complete(lock)) {
            // Cancelled as the lock was granted: nobody will use it, give it back.
            try {
              lock.release();
            } catch (RedlockException ignored) {
              // it expires by itself
            }
          }
          return;
        }
        failure = cause;
        future.completeExceptionally(cause);
      } finally {
        settled.countDown();
      }
    }

    /** Waits for {@link #settled}, interrupts or not (the caller is already ending with one). */
    void awaitSettled() {
      for (;;) {
        try {
          settled.await();
          return;
        } catch (InterruptedException again) {
          // the C call ends after at most the round in flight: wait on
        }
      }
    }
  }

  // Called from C (rl_java_on_acquired) on the client's acquire thread, once
  // per acquireAsync; name, text and detail are null when code is 0 (or when
  // C had no memory for them).
  static void acquired(Object dispatch, int code, byte[] name, byte[] text, byte[] detail) {
    RedlockException cause = null;
    if (code != 0) {
      byte[] none = new byte[0];
      cause = RedlockException.fromNative(code, name != null ? name : none, text != null ? text : none,
          detail != null ? detail : none);
    }
    RedlockException c = cause;
    Runnable settle;
    Executor executor;
    if (dispatch instanceof RoundDispatch) {
      RoundDispatch r = (RoundDispatch) dispatch;
      r.lock.asyncPending = false;
      executor = r.executor;
      settle = () -> r.settle(c);
    } else {
      AcquireDispatch d = (AcquireDispatch) dispatch;
      d.lock.asyncPending = false;
      executor = d.executor;
      settle = () -> d.settle(c);
    }
    try {
      executor.execute(settle);
    } catch (Throwable e) {
      // A rejecting or broken executor: complete on a thread of its own rather
      // than never (not here: a release on this thread could wait for itself).
      Thread t = new Thread(settle, "redlock-acquired");
      t.setDaemon(true);
      t.start();
    }
  }

  /**
   * What the C side holds for one Lock.releaseAsync or Lock.extendAsync (one
   * round each): the future, completed with the lock or with what release()
   * or extend() would throw, on the executor. Cancelling the future does not
   * stop the round, which is bounded by the node timeout.
   */
  static final class RoundDispatch {
    final Lock lock;
    final CompletableFuture<Lock> future = new CompletableFuture<>();
    final Executor executor;

    RoundDispatch(Lock lock, Executor executor) {
      this.lock = lock;
      this.executor = executor;
    }

    void settle(RedlockException cause) {
      if (cause == null)
        future.complete(lock);
      else
        future.completeExceptionally(cause);
    }
  }

  // ---------------------------------------------------------------- events

  /** One client's hook: the listener from its Options and its node URLs. */
  static final class EventSink {
    final RedlockEventListener listener;
    final List<String> nodeUrls;

    EventSink(RedlockEventListener listener, List<String> nodeUrls) {
      this.listener = listener;
      this.nodeUrls = nodeUrls;
    }
  }

  // Called from C when a client is created from Options with a listener.
  static Object eventSink(Object listener, byte[][] urls) {
    return new EventSink((RedlockEventListener) listener, strings(urls));
  }

  // Called from C (rl_java_on_event) on the thread that ran the round.
  static void event(Object sink, int type, int code, byte[] resource, byte[] message, int attempt,
      boolean automatic, int nodesOk, int quorum, int nodeCount, long elapsedUs, long validityMs,
      long fencingToken, int node, int nodeOutcome, long nodeRttUs, int listenerState, long heldUs,
      long[] nodeRttsUs) {
    try {
      EventSink s = (EventSink) sink;
      RedlockEvent.Type t = RedlockEvent.Type.fromNative(type);
      boolean nodeError = t == RedlockEvent.Type.NODE_ERROR;
      boolean nodeEvent = nodeError || t == RedlockEvent.Type.WOKEN || t == RedlockEvent.Type.LISTENER;
      RedlockEvent ev = new RedlockEvent(t, code, NativeSupport.string(resource), NativeSupport.string(message),
          attempt, automatic, nodesOk, quorum, nodeCount, elapsedUs, validityMs, fencingToken,
          nodeEvent ? node : -1,
          nodeEvent && node >= 0 && node < s.nodeUrls.size() ? s.nodeUrls.get(node) : null,
          nodeError ? NodeResult.Outcome.fromNative(nodeOutcome) : null,
          nodeError ? nodeRttUs : 0,
          t == RedlockEvent.Type.LISTENER ? ListenerState.fromNative(listenerState) : null,
          heldUs, nodeRttsUs, nodeRttsUs != null ? s.nodeUrls : null);
      s.listener.onEvent(ev);
    } catch (Throwable e) {
      // Never into C: the lock's round goes on whatever the listener did.
      Thread t = Thread.currentThread();
      try {
        t.getUncaughtExceptionHandler().uncaughtException(t, e);
      } catch (Throwable ignored) {
        // nothing left to tell
      }
    }
  }

  // ----------------------------------------------------------- node report

  // Called from C (Lock.nodeResults via rl_java_node_result).
  static Object nodeResult(int index, Object url, int outcome, int code, long rttUs, byte[] message) {
    return new NodeResult(index, (String) url, NodeResult.Outcome.fromNative(outcome), code, rttUs,
        NativeSupport.string(message));
  }

  static List<String> strings(byte[][] a) {
    List<String> out = new ArrayList<>(a.length);
    for (byte[] b : a)
      out.add(new String(b, StandardCharsets.UTF_8));
    return Collections.unmodifiableList(out);
  }
}
