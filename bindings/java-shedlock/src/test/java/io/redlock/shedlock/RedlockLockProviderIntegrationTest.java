// SPDX-License-Identifier: BSD-3-Clause

// RedlockLockProviderIntegrationTest.java: ShedLock's own contract tests for
// an extensible LockProvider (shedlock-test-support: lock, unlock, timeout,
// lockAtLeastFor, extend, and its FuzzTester of 8 threads counting under the
// lock), run against the real nodes of tests/harness/nodes.py.
package io.redlock.shedlock;

import io.redlock.testsupport.Nodes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.redlock.Redlock;
import java.time.Duration;
import java.util.Optional;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class RedlockLockProviderIntegrationTest extends AbstractExtensibleLockProviderIntegrationTest {
  private static Redlock client;
  private static RedlockLockProvider provider;

  @BeforeAll
  static void connect() {
    client = new Redlock(Nodes.urls());
    provider = new RedlockLockProvider(client);
    System.out.println("redlock-shedlock contract tests on " + Nodes.urls().length + " nodes: "
        + String.join(",", Nodes.urls()));
  }

  @AfterAll
  static void close() {
    client.close();
  }

  // The contract tests reuse lock names across tests, and some leave a
  // lock held (lockAtLeastFor): every test starts from empty nodes.
  @AfterEach
  void flush() {
    Nodes.flushAll();
  }

  @Override
  protected ExtensibleLockProvider getLockProvider() {
    return provider;
  }

  private static int quorum() {
    return Nodes.urls().length / 2 + 1;
  }

  @Override
  protected void assertLocked(String lockName) {
    assertThat(Nodes.existsOn(provider.resourceOf(lockName)))
        .describedAs("nodes holding %s", lockName).isGreaterThanOrEqualTo(quorum());
  }

  @Override
  protected void assertUnlocked(String lockName) {
    assertThat(Nodes.existsOn(provider.resourceOf(lockName)))
        .describedAs("nodes holding %s", lockName).isZero();
  }

  /**
   * ShedLock's version takes a lock for lockAtMostFor = 2 ms and expects it to be granted. A
   * Redlock's validity is its TTL less the clock-drift allowance (2 ms + 1% with the defaults),
   * so 2 ms leaves none: the provider refuses it with a LockException rather than return a lock
   * that no node guarantees. This is the same check at the shortest TTL that leaves validity: a
   * lock whose TTL ran out cannot be extended, and its key is gone.
   */
  @Override
  @Test
  public void shouldNotBeAbleToExtendExpiredLock() {
    assertThatThrownBy(() -> provider.lock(lockConfig(LOCK_NAME1, Duration.ofMillis(2), Duration.ZERO)))
        .isInstanceOf(LockException.class).hasMessageContaining("REDLOCK_EINVAL");
    Optional<SimpleLock> lock = provider.lock(lockConfig(LOCK_NAME1, Duration.ofMillis(30), Duration.ZERO));
    assertThat(lock).isNotEmpty();
    sleepFor(Duration.ofMillis(60));
    Optional<SimpleLock> newLock = lock.get().extend(Duration.ofSeconds(10), Duration.ZERO);
    assertThat(newLock).isEmpty();
    assertUnlocked(LOCK_NAME1);
  }

  // Beyond the contract: unlock before lockAtLeastFor shortens the key to
  // the remainder instead of deleting it.
  @Test
  void unlockKeepsTheKeyForTheRestOfLockAtLeastFor() {
    Optional<SimpleLock> lock =
        provider.lock(lockConfig("atleast", Duration.ofSeconds(30), Duration.ofMillis(1500)));
    assertThat(lock).isNotEmpty();
    lock.get().unlock();
    assertLocked("atleast");
    for (String url : Nodes.urls()) {
      long pttl = (Long) Nodes.cmd(url, "PTTL", provider.resourceOf("atleast"));
      assertThat(pttl).describedAs("PTTL on %s after unlock", url).isBetween(1L, 1500L);
    }
    assertThat(provider.lock(lockConfig("atleast"))).isEmpty();
    sleepFor(Duration.ofMillis(1600));
    assertUnlocked("atleast");
    Optional<SimpleLock> again = provider.lock(lockConfig("atleast"));
    assertThat(again).isNotEmpty();
    again.get().unlock();
    assertUnlocked("atleast");
  }

  @Test
  void lockAtMostForIsTheKeysTtl() {
    Optional<SimpleLock> lock = provider.lock(lockConfig("ttl", Duration.ofSeconds(7), Duration.ZERO));
    assertThat(lock).isNotEmpty();
    for (String url : Nodes.urls()) {
      long pttl = (Long) Nodes.cmd(url, "PTTL", provider.resourceOf("ttl"));
      assertThat(pttl).describedAs("PTTL on %s", url).isBetween(6000L, 7000L);
    }
    lock.get().unlock();
  }

  // With one node of three down a majority still decides; with two down the
  // provider throws, naming the failure, instead of returning a lock.
  @Test
  void failingNodes() throws Exception {
    try (Redlock own = new Redlock(Nodes.urls())) {
      RedlockLockProvider p = new RedlockLockProvider(own);
      Nodes.ctl("kill", "2");
      try {
        Optional<SimpleLock> lock = p.lock(lockConfig("down"));
        assertThat(lock).isNotEmpty();
        lock.get().unlock();
        Nodes.ctl("kill", "1");
        assertThatThrownBy(() -> p.lock(lockConfig("down"))).isInstanceOf(LockException.class)
            .hasMessageContaining("REDLOCK_ENOQUORUM");
      } finally {
        Nodes.ctl("restart", "1");
        Nodes.ctl("restart", "2");
        // The shared client's connections to those nodes broke too: the
        // tests after this one get a fresh client, not its reconnect backoff.
        client.close();
        connect();
      }
    }
  }

  @Test
  void badDurationsAreRefused() {
    assertThatThrownBy(() -> provider.lock(lockConfig("bad", Duration.ofDays(2), Duration.ZERO)))
        .isInstanceOf(LockException.class).hasMessageContaining("REDLOCK_EINVAL");
    assertUnlocked("bad");
  }
}
