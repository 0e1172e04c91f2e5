// SPDX-License-Identifier: BSD-3-Clause

// RedlockMetricsTest.java: a scripted scenario on the real nodes of
// tests/harness/nodes.py (10 acquisitions, 2 refusals, 1 loss, 1 node paused
// with CLIENT PAUSE, 2 extensions, 1 waiter woken by a release), then every
// instrument read back through the OpenTelemetry SDK's in-memory reader.
package io.redlock.otel;

import io.redlock.testsupport.Nodes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import io.redlock.Lock;
import io.redlock.LockLostException;
import io.redlock.LockNotAcquiredException;
import io.redlock.LockOptions;
import io.redlock.Options;
import io.redlock.Redlock;
import io.redlock.RedlockEvent;
import io.redlock.RedlockEventListener;
import io.redlock.RedlockException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RedlockMetricsTest {
  static final long TTL = 10_000;
  int pausedCode;

  /** Counts the events of one client, and lets the test wait for a waiter's first failed attempt. */
  static final class Watch implements RedlockEventListener {
    final List<RedlockEvent> events = java.util.Collections.synchronizedList(new ArrayList<>());
    final CountDownLatch registered = new CountDownLatch(1);
    volatile String waitingOn = null;
    volatile int waiterAttempts;

    @Override
    public void onEvent(RedlockEvent e) {
      events.add(e);
      count(e);
      if (e.type() == RedlockEvent.Type.ACQUIRE_FAILED && e.resource().equals(waitingOn) && e.attempt() >= 2)
        registered.countDown();
      if (e.type() == RedlockEvent.Type.ACQUIRED && e.resource().equals(waitingOn))
        waiterAttempts = e.attempt();
    }

    // What the C library reported, which the instruments must match: the
    // replies that arrived in each round (node_rtts_us), per node; the acquire
    // calls (ACQUIRE_DONE); the holds (held_us).
    final Map<String, Long> answered = new java.util.concurrent.ConcurrentHashMap<>();
    final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger holds = new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger acquiredRounds = new java.util.concurrent.atomic.AtomicInteger();

    void count(RedlockEvent e) {
      if (e.type() == RedlockEvent.Type.ACQUIRE_DONE)
        calls.incrementAndGet();
      if (e.heldMicros() > 0)
        holds.incrementAndGet();
      long[] rtts = e.nodeRttsMicros();
      if (rtts != null) {
        assertThat(rtts).as("one round trip per node: " + e).hasSize(e.nodeCount());
        assertThat(e.nodeUrls()).as("the nodes of the round trips: " + e).hasSize(e.nodeCount());
        if (e.type() == RedlockEvent.Type.ACQUIRED)
          acquiredRounds.incrementAndGet();
        for (int i = 0; i < rtts.length; i++)
          if (rtts[i] >= 0)
            answered.merge(e.nodeUrls().get(i), 1L, Long::sum);
      }
    }
  }

  @Test
  void scriptedScenarioReadBack() throws Exception {
    String[] urls = Nodes.urls();
    assertThat(urls).hasSize(3);
    InMemoryMetricReader reader = InMemoryMetricReader.create();
    SdkMeterProvider provider = SdkMeterProvider.builder().registerMetricReader(reader).build();
    Watch watch = new Watch();
    // Generous node timeouts: a loaded machine must not add node errors. The
    // paused node still times out (its pause is longer).
    Options options = new Options();
    options.setNodeTimeoutMs(500);
    options.setEventListener(new RedlockMetrics(provider.get(RedlockMetrics.SCOPE), watch));
    Options plain = new Options();
    plain.setNodeTimeoutMs(500);

    try (Redlock a = new Redlock(urls, options); Redlock b = new Redlock(urls, plain)) {
      // Acquisitions 1-8, each released; the first is extended twice.
      for (int i = 0; i < 8; i++) {
        try (Lock l = a.tryAcquire("metrics:plain:" + i, TTL)) {
          if (i == 0) {
            l.extend(TTL);
            l.extend(TTL);
          }
        }
      }

      // 2 refusals: b holds "busy"; a's single attempts are refused.
      Lock held = b.acquire("metrics:busy", TTL);
      for (int i = 0; i < 2; i++)
        assertThatThrownBy(() -> a.tryAcquire("metrics:busy", TTL)).isInstanceOf(LockNotAcquiredException.class);

      // Acquisition 9: a waits for "busy" with wake-up asked for (its retries
      // 30 s apart, so only a wake-up ends the wait soon), and b's release wakes it. The release comes
      // once the waiter has registered (its second attempt failed) and its
      // client listens on every node.
      LockOptions slow = new LockOptions();
      slow.setRetryDelayMs(30_000);
      slow.setRetryJitterMs(0);
      slow.setWake(true); // wake-up is opt-in; this acquisition is the one it ends
      Lock waiter = a.newLock("metrics:busy", slow);
      watch.waitingOn = "metrics:busy";
      CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> waiter.acquire(TTL, 60_000));
      assertThat(watch.registered.await(30, TimeUnit.SECONDS)).as("the waiter's second attempt").isTrue();
      for (String url : urls)
        while (((List<?>) Nodes.cmd(url, "PUBSUB", "CHANNELS", "redlock:wake:*")).isEmpty())
          Thread.sleep(10);
      held.release();
      held.close();
      waited.get(30, TimeUnit.SECONDS);
      assertThat(waiter.isHeld()).isTrue();
      waiter.close();

      // The paused node: node 2 paused (CLIENT PAUSE, 3 s) while node 0 holds
      // the key for another owner, so that a's attempt needs node 2's answer,
      // which does not come in time: a node error, and no acquisition. A PING
      // to node 2 returns once the pause is over.
      Nodes.cmd(urls[0], "SET", "metrics:paused", "another-owner", "PX", "10000");
      Nodes.cmd(urls[2], "CLIENT", "PAUSE", "3000", "ALL");
      Throwable pausedFailure = null;
      try {
        a.tryAcquire("metrics:paused", TTL).close();
      } catch (RedlockException e) {
        pausedFailure = e;
      }
      Nodes.cmd(urls[2], "PING");
      assertThat(pausedFailure).as("acquire with node 0 taken and node 2 paused").isNotNull();
      System.out.println("with node 2 paused: " + pausedFailure);
      pausedCode = ((RedlockException) pausedFailure).getCode();

      // Acquisition 10, lost: its key is deleted on every node behind its back,
      // and the release finds it gone.
      Lock doomed = a.tryAcquire("metrics:lost", TTL);
      for (String url : urls)
        Nodes.cmd(url, "DEL", "metrics:lost");
      assertThatThrownBy(doomed::release).isInstanceOf(LockLostException.class);
      doomed.close();
    }

    Collection<MetricData> metrics = reader.collectAllMetrics();
    Map<String, MetricData> byName = new HashMap<>();
    for (MetricData m : metrics)
      byName.put(m.getName(), m);
    System.out.println("instruments: " + byName.keySet());
    for (RedlockEvent e : watch.events)
      if (e.type() == RedlockEvent.Type.NODE_ERROR || e.type() == RedlockEvent.Type.LISTENER
          || e.type() == RedlockEvent.Type.WOKEN || e.type() == RedlockEvent.Type.LOST)
        System.out.println("event: " + e);

    // Every acquire call is one sample of redlock.acquire.duration: the 10
    // acquisitions under "acquired"; each refusal (a call of one attempt that
    // another owner refused) under "refused"; the call with node 2 paused
    // (1 node granted, 1 refused, 1 silent: no majority either way) under
    // "error" (REDLOCK_ENOQUORUM).
    assertThat(pausedCode).isEqualTo(RedlockException.ENOQUORUM);
    assertThat(histogramCount(byName, "redlock.acquire.duration", Attributes.of(RedlockMetrics.OUTCOME, "acquired")))
        .isEqualTo(10);
    assertThat(histogramCount(byName, "redlock.acquire.duration", Attributes.of(RedlockMetrics.OUTCOME, "refused")))
        .isEqualTo(2);
    assertThat(histogramCount(byName, "redlock.acquire.duration", Attributes.of(RedlockMetrics.OUTCOME, "error")))
        .isEqualTo(1);
    assertThat(points(byName, "redlock.acquire.duration")).hasSize(3); // no timeout, no canceled
    assertUnit(byName, "redlock.acquire.duration", "s");

    // One sample per call too: 13 calls. The waiter made several attempts (a
    // plain one, one that registered it, then the one after its wake-up, as
    // its events say); every other call 1.
    assertThat(watch.waiterAttempts).isGreaterThanOrEqualTo(2);
    assertThat(histogramCount(byName, "redlock.acquire.attempts", Attributes.empty())).isEqualTo(13);
    assertThat(histogramSum(byName, "redlock.acquire.attempts", Attributes.empty()))
        .isEqualTo(12.0 + watch.waiterAttempts);
    assertUnit(byName, "redlock.acquire.attempts", "{attempt}");

    // Each acquisition ended: 9 releases and the loss.
    assertThat(histogramCount(byName, "redlock.lock.held.duration", Attributes.empty())).isEqualTo(10);
    assertUnit(byName, "redlock.lock.held.duration", "s");

    assertThat(counter(byName, "redlock.lock.lost", Attributes.of(RedlockMetrics.REASON, "REDLOCK_ELOST")))
        .isEqualTo(1);
    assertThat(points(byName, "redlock.lock.lost")).hasSize(1);
    assertUnit(byName, "redlock.lock.lost", "{lock}");

    assertThat(counter(byName, "redlock.lock.extensions", Attributes.of(RedlockMetrics.OUTCOME, "extended")))
        .isEqualTo(2);
    assertThat(points(byName, "redlock.lock.extensions")).hasSize(1);
    assertUnit(byName, "redlock.lock.extensions", "{extension}");

    // The paused node, once: it did not answer the acquire round in time.
    assertThat(counter(byName, "redlock.node.errors",
        Attributes.of(RedlockMetrics.NODE, urls[2], RedlockMetrics.ERROR_TYPE, "REDLOCK_ETIMEDOUT"))).isEqualTo(1);
    assertThat(points(byName, "redlock.node.errors")).hasSize(1);
    assertUnit(byName, "redlock.node.errors", "{error}");

    // One sample per reply that arrived in a round (acquire, extend,
    // release), per node: a round decided by a majority does not wait for the
    // last node, so which nodes those are varies; the events' node_rtts_us
    // say. The 10 acquiring rounds had at least 2 of the 3 nodes answer.
    assertThat(watch.calls.get()).isEqualTo(13);
    assertThat(watch.acquiredRounds.get()).isEqualTo(10);
    assertThat(watch.holds.get()).isEqualTo(10);
    long answers = 0;
    for (String url : urls) {
      long n = watch.answered.getOrDefault(url, 0L);
      answers += n;
      if (n > 0)
        assertThat(histogramCount(byName, "redlock.node.rtt", Attributes.of(RedlockMetrics.NODE, url)))
            .as("round trips of " + url).isEqualTo(n);
    }
    assertThat(answers).isGreaterThanOrEqualTo(2 * 13);
    assertThat(points(byName, "redlock.node.rtt")).hasSize((int) watch.answered.size());
    assertUnit(byName, "redlock.node.rtt", "s");

    // The waiter was woken by b's release: once, or again if its attempt after
    // the first message (from the node that released first) still met the key
    // on nodes not yet released. The counter holds what the hook told.
    long wokenEvents = 0;
    Map<Attributes, Long> changes = new HashMap<>();
    for (RedlockEvent e : watch.events) {
      if (e.type() == RedlockEvent.Type.WOKEN)
        wokenEvents++;
      if (e.type() == RedlockEvent.Type.LISTENER)
        changes.merge(Attributes.of(RedlockMetrics.NODE, e.nodeUrl(), RedlockMetrics.LISTENER_STATE,
            e.listenerState().name().toLowerCase(java.util.Locale.ROOT)), 1L, Long::sum);
    }
    assertThat(wokenEvents).isGreaterThanOrEqualTo(1);
    assertThat(counter(byName, "redlock.wake.woken", Attributes.empty())).isEqualTo(wokenEvents);
    assertUnit(byName, "redlock.wake.woken", "{waiter}");

    // The waiter's client started its wake-up listeners: each node's became
    // ready (after connecting), as the hook told.
    for (String url : urls)
      assertThat(changes.get(Attributes.of(RedlockMetrics.NODE, url, RedlockMetrics.LISTENER_STATE, "ready")))
          .as("listener of " + url + " ready").isNotNull().isGreaterThanOrEqualTo(1L);
    for (Map.Entry<Attributes, Long> c : changes.entrySet())
      assertThat(counter(byName, "redlock.listener.state_changes", c.getKey())).as(c.getKey().toString())
          .isEqualTo(c.getValue());
    assertThat(points(byName, "redlock.listener.state_changes")).hasSize(changes.size());
    assertUnit(byName, "redlock.listener.state_changes", "{change}");
    provider.close();
  }

  private static MetricData metric(Map<String, MetricData> byName, String name) {
    assertThat(byName).as("instruments").containsKey(name);
    return byName.get(name);
  }

  private static void assertUnit(Map<String, MetricData> byName, String name, String unit) {
    assertThat(metric(byName, name).getUnit()).as("unit of " + name).isEqualTo(unit);
  }

  private static List<Attributes> points(Map<String, MetricData> byName, String name) {
    MetricData m = metric(byName, name);
    List<Attributes> out = new ArrayList<>();
    switch (m.getType()) {
      case HISTOGRAM:
        m.getHistogramData().getPoints().forEach(p -> out.add(p.getAttributes()));
        break;
      case LONG_SUM:
        m.getLongSumData().getPoints().forEach(p -> out.add(p.getAttributes()));
        break;
      default:
        throw new AssertionError(name + " is a " + m.getType());
    }
    return out;
  }

  private static HistogramPointData histogram(Map<String, MetricData> byName, String name, Attributes attrs) {
    for (HistogramPointData p : metric(byName, name).getHistogramData().getPoints())
      if (p.getAttributes().equals(attrs))
        return p;
    throw new AssertionError(name + " has no point " + attrs + ": " + points(byName, name));
  }

  private static long histogramCount(Map<String, MetricData> byName, String name, Attributes attrs) {
    return histogram(byName, name, attrs).getCount();
  }

  private static double histogramSum(Map<String, MetricData> byName, String name, Attributes attrs) {
    return histogram(byName, name, attrs).getSum();
  }

  private static long counter(Map<String, MetricData> byName, String name, Attributes attrs) {
    for (LongPointData p : metric(byName, name).getLongSumData().getPoints())
      if (p.getAttributes().equals(attrs))
        return p.getValue();
    throw new AssertionError(name + " has no point " + attrs + ": " + points(byName, name));
  }
}
