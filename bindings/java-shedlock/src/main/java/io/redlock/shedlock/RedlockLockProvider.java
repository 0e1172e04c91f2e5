// SPDX-License-Identifier: BSD-3-Clause

// RedlockLockProvider.java: ShedLock's LockProvider over a redlock client, so
// that a @SchedulerLock job runs on one host at a time with its lock held on
// a majority of N independent Redis/Valkey nodes.
package io.redlock.shedlock;

import io.redlock.InvalidArgumentException;
import io.redlock.Lock;
import io.redlock.LockExpiredException;
import io.redlock.LockNotAcquiredException;
import io.redlock.Redlock;
import io.redlock.RedlockException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;

/**
 * A ShedLock {@link ExtensibleLockProvider} whose locks are Redlocks.
 *
 * <pre>{@code
 * @Bean
 * LockProvider lockProvider(Redlock client) {
 *     return new RedlockLockProvider(client);
 * }
 * }</pre>
 *
 * <ul>
 *   <li>{@code lock} makes one attempt (ShedLock skips a run that is locked elsewhere, it does not
 *       wait): the key {@code keyPrefix + name} is set on the nodes with a TTL of {@code
 *       lockAtMostFor}, and the lock is returned only when a majority granted it with validity
 *       left. Held elsewhere, or granted too late to be valid: empty. Any other failure (too few
 *       nodes answered, an error reply, a bad TTL) throws {@link LockException} with the client's
 *       detail, so that the run is skipped and the reason logged: a lock that is not held is never
 *       returned.
 *   <li>{@code unlock} before {@code lockAtLeastFor} has passed extends the key to the remainder
 *       instead of deleting it, so that it outlives the job by that much; after it, releases.
 *   <li>{@code extend} extends the key to the new {@code lockAtMostFor} from now, on a majority
 *       and within the lock's validity (an expired key is never re-created); empty when that
 *       fails.
 * </ul>
 *
 * The client's options apply (retries do not: every attempt is single; drift allowance, node
 * timeouts, key prefix, fencing do). A {@code lockAtMostFor} at most the client's clock-drift
 * allowance (2 ms with the defaults) leaves no validity and is refused; more than one day
 * (REDLOCK_MAX_TTL_MS) too. Thread-safe; the client stays the caller's to close.
 */
public final class RedlockLockProvider implements ExtensibleLockProvider {
  /** The default prefix of the lock names' keys. */
  public static final String DEFAULT_KEY_PREFIX = "shedlock:";

  private final Redlock client;
  private final String keyPrefix;

  /** A provider whose keys are {@code "shedlock:" + name} (after the client's own key prefix). */
  public RedlockLockProvider(Redlock client) {
    this(client, DEFAULT_KEY_PREFIX);
  }

  /** A provider whose keys are {@code keyPrefix + name} (after the client's own key prefix). */
  public RedlockLockProvider(Redlock client, String keyPrefix) {
    this.client = Objects.requireNonNull(client, "client");
    this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
  }

  /** The resource (key, less the client's prefix) of the lock named name. */
  public String resourceOf(String name) {
    return keyPrefix + name;
  }

  @Override
  public Optional<SimpleLock> lock(LockConfiguration config) {
    long ttlMs = ttlMs(config.getLockAtMostFor(), "lockAtMostFor");
    Lock lock = client.newLock(resourceOf(config.getName()));
    try {
      lock.tryAcquire(ttlMs);
    } catch (LockNotAcquiredException | LockExpiredException e) {
      lock.close(); // not held: frees the handle, no I/O
      return Optional.empty();
    } catch (RedlockException e) {
      lock.close();
      throw new LockException("redlock: cannot lock '" + config.getName() + "': " + describe(e), e);
    } catch (RuntimeException | Error e) {
      lock.close();
      throw e;
    }
    return Optional.of(new RedlockSimpleLock(lock, config));
  }

  static long ttlMs(Duration d, String what) {
    long ms;
    try {
      ms = d.toMillis();
      Duration rest = d.minusMillis(ms);
      if (!rest.isZero() && !rest.isNegative())
        ms = Math.addExact(ms, 1); // round up: never shorter than asked
    } catch (ArithmeticException e) {
      throw new LockException("redlock: " + what + " " + d + " is too long", e);
    }
    if (ms <= 0)
      throw new LockException("redlock: " + what + " must be positive, not " + d);
    return ms;
  }

  static String describe(RedlockException e) {
    return e.getErrorName() + ": " + e.getMessage();
  }

  /** Below this remainder of lockAtLeastFor, unlock waits it out and releases. */
  static final long MIN_REMAINDER_MS = 20;

  static final class RedlockSimpleLock extends net.javacrumbs.shedlock.core.AbstractSimpleLock {
    private final Lock lock;

    RedlockSimpleLock(Lock lock, LockConfiguration config) {
      super(config);
      this.lock = lock;
    }

    @Override
    protected void doUnlock() {
      long remainingMs = Duration.between(net.javacrumbs.shedlock.core.ClockProvider.now(),
          lockConfiguration.getLockAtLeastUntil()).toMillis();
      if (remainingMs >= MIN_REMAINDER_MS) {
        // lockAtLeastFor: the key must outlive the job. Shorten its TTL to
        // the remainder; the handle is then dropped without a release
        // (a Lock left to its Cleaner frees memory only, no I/O).
        try {
          lock.extend(remainingMs);
          return;
        } catch (LockExpiredException | io.redlock.LockLostException e) {
          lock.close(); // gone already: nothing to keep
          return;
        } catch (RedlockException e) {
          // Not shortened on a majority: the key keeps its lockAtMostFor
          // TTL, longer than lockAtLeastFor. Deleting it would break
          // "at least"; leave it.
          throw new LockException("redlock: could not shorten '" + lockConfiguration.getName()
              + "' to its lockAtLeastFor remainder; it is held until lockAtMostFor: " + describe(e), e);
        }
      }
      if (remainingMs > 0) {
        // Too short a remainder to extend to (the drift allowance would
        // leave no validity): wait it out, then release.
        try {
          Thread.sleep(remainingMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return; // the key expires at lockAtMostFor instead
        }
      }
      try {
        lock.close(); // releases on every node, frees the handle
      } catch (io.redlock.LockLostException e) {
        throw new LockException("redlock: '" + lockConfiguration.getName()
            + "' was no longer held on a majority at its release: another host may have run the job meanwhile ("
            + describe(e) + ")", e);
      } catch (RedlockException e) {
        throw new LockException("redlock: release of '" + lockConfiguration.getName() + "' failed: " + describe(e), e);
      }
    }

    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration newConfig) {
      long ttlMs = ttlMs(newConfig.getLockAtMostFor(), "lockAtMostFor");
      try {
        lock.extend(ttlMs);
      } catch (InvalidArgumentException e) {
        throw new LockException("redlock: cannot extend '" + newConfig.getName() + "': " + describe(e), e);
      } catch (RedlockException e) {
        return Optional.empty(); // lost, expired, no quorum, an extension limit: not extended
      }
      return Optional.of(new RedlockSimpleLock(lock, newConfig));
    }
  }
}
