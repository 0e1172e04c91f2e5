// SPDX-License-Identifier: BSD-3-Clause

// RedlockMetrics.java: the metrics of redlock clients as OpenTelemetry
// instruments, fed by the binding's event listener (the C library's metrics
// hook, redlock_options.on_event).
package io.redlock.otel;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.LongHistogram;
import io.opentelemetry.api.metrics.Meter;
import io.redlock.NodeResult;
import io.redlock.Options;
import io.redlock.RedlockEvent;
import io.redlock.RedlockEventListener;
import io.redlock.RedlockException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Records what a redlock client does as OpenTelemetry metrics. Set it as the event listener of the
 * client's {@link Options} before creating the client:
 *
 * <pre>{@code
 * Options options = new Options();
 * options.setEventListener(new RedlockMetrics(openTelemetry));
 * try (Redlock client = new Redlock(nodes, options)) { ... }
 * }</pre>
 *
 * <p>Instruments (meter {@value #SCOPE}), the same names, units and attributes as the Python and
 * Go bindings record:
 *
 * <table>
 *   <caption>Instruments</caption>
 *   <tr><th>name</th><th>kind</th><th>unit</th><th>attributes</th><th>one sample or count per</th></tr>
 *   <tr><td>redlock.acquire.duration</td><td>histogram</td><td>s</td><td>redlock.outcome: acquired,
 *       refused, timeout, error, canceled</td><td>acquire call (all its attempts)</td></tr>
 *   <tr><td>redlock.acquire.attempts</td><td>histogram</td><td>{attempt}</td><td></td>
 *       <td>acquire call that made an attempt</td></tr>
 *   <tr><td>redlock.lock.held.duration</td><td>histogram</td><td>s</td><td></td><td>acquisition, at
 *       its release or loss</td></tr>
 *   <tr><td>redlock.lock.lost</td><td>counter</td><td>{lock}</td><td>redlock.reason: the error
 *       name, e.g. REDLOCK_ELOST</td><td>loss found by an extension, auto-extend or a release</td></tr>
 *   <tr><td>redlock.lock.extensions</td><td>counter</td><td>{extension}</td><td>redlock.outcome:
 *       extended, failed</td><td>extension (owner's or auto-extend's); one that finds the lock lost
 *       counts in redlock.lock.lost only</td></tr>
 *   <tr><td>redlock.node.errors</td><td>counter</td><td>{error}</td><td>redlock.node (URL, password
 *       masked), error.type (e.g. REDLOCK_ETIMEDOUT)</td><td>node failing in a round</td></tr>
 *   <tr><td>redlock.node.rtt</td><td>histogram</td><td>s</td><td>redlock.node</td><td>node reply
 *       in a round (acquire, extend, release)</td></tr>
 *   <tr><td>redlock.wake.woken</td><td>counter</td><td>{waiter}</td><td></td><td>waiting acquire
 *       woken by a release</td></tr>
 *   <tr><td>redlock.listener.state_changes</td><td>counter</td><td>{change}</td><td>redlock.node,
 *       redlock.listener.state: off, connecting, ready, down, refused</td><td>change seen by a
 *       waiting acquire</td></tr>
 * </table>
 *
 * <p>Thread-safe and stateless: every value comes from the events themselves (the C library's
 * ACQUIRE_DONE for acquire calls, {@link RedlockEvent#heldMicros()} for holds, {@link
 * RedlockEvent#nodeRttsMicros()} for round trips), so one instance may serve several clients. A
 * lock left to expire without a release or a loss found is not measured as held. Another listener
 * may be chained ({@link #RedlockMetrics(Meter, RedlockEventListener)}); it is called after the
 * recording.
 */
public final class RedlockMetrics implements RedlockEventListener {
  /** The instrumentation scope (meter name), as in the Python and Go bindings. */
  public static final String SCOPE = "redlock";

  public static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("redlock.outcome");
  public static final AttributeKey<String> REASON = AttributeKey.stringKey("redlock.reason");
  public static final AttributeKey<String> NODE = AttributeKey.stringKey("redlock.node");
  public static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
  public static final AttributeKey<String> LISTENER_STATE = AttributeKey.stringKey("redlock.listener.state");

  // Bucket advice, the same as the other bindings': lock rounds on a LAN take
  // well under a millisecond to a few; waits and holds run to minutes.
  private static final List<Double> DURATION_BUCKETS = List.of(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0);
  private static final List<Double> RTT_BUCKETS = List.of(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025, 0.05, 0.1, 0.25, 0.5, 1.0);
  private static final List<Long> ATTEMPT_BUCKETS = List.of(1L, 2L, 3L, 5L, 10L, 20L, 50L, 100L, 1000L);

  private static final Attributes ACQUIRED = Attributes.of(OUTCOME, "acquired");
  private static final Attributes REFUSED = Attributes.of(OUTCOME, "refused");
  private static final Attributes TIMEOUT = Attributes.of(OUTCOME, "timeout");
  private static final Attributes ERROR = Attributes.of(OUTCOME, "error");
  private static final Attributes CANCELED = Attributes.of(OUTCOME, "canceled");
  private static final Attributes EXTENDED = Attributes.of(OUTCOME, "extended");
  private static final Attributes EXTEND_FAILED = Attributes.of(OUTCOME, "failed");

  private static final Map<Integer, String> ERROR_NAMES = errorNames();

  private final DoubleHistogram acquireDuration;
  private final LongHistogram acquireAttempts;
  private final DoubleHistogram heldDuration;
  private final LongCounter lost;
  private final LongCounter extensions;
  private final LongCounter nodeErrors;
  private final DoubleHistogram nodeRtt;
  private final LongCounter woken;
  private final LongCounter listenerChanges;
  private final RedlockEventListener next;

  /** Metrics on the meter {@value #SCOPE} of openTelemetry, its version the loaded library's. */
  public RedlockMetrics(OpenTelemetry openTelemetry) {
    this(openTelemetry.meterBuilder(SCOPE).setInstrumentationVersion(io.redlock.Redlock.version()).build(), null);
  }

  /** Metrics on meter. */
  public RedlockMetrics(Meter meter) {
    this(meter, null);
  }

  /** Metrics on meter; each event is then passed on to next (may be null). */
  public RedlockMetrics(Meter meter, RedlockEventListener next) {
    Objects.requireNonNull(meter, "meter");
    this.next = next;
    acquireDuration = meter.histogramBuilder("redlock.acquire.duration").setUnit("s")
        .setDescription("Duration of acquire calls, waits included, by outcome")
        .setExplicitBucketBoundariesAdvice(DURATION_BUCKETS).build();
    acquireAttempts = meter.histogramBuilder("redlock.acquire.attempts").ofLongs().setUnit("{attempt}")
        .setDescription("Attempts made by one acquire call")
        .setExplicitBucketBoundariesAdvice(ATTEMPT_BUCKETS).build();
    heldDuration = meter.histogramBuilder("redlock.lock.held.duration").setUnit("s")
        .setDescription("How long locks were held, until released or lost")
        .setExplicitBucketBoundariesAdvice(DURATION_BUCKETS).build();
    lost = meter.counterBuilder("redlock.lock.lost").setUnit("{lock}")
        .setDescription("Locks lost while held, by reason").build();
    extensions = meter.counterBuilder("redlock.lock.extensions").setUnit("{extension}")
        .setDescription("Extensions, by outcome").build();
    nodeErrors = meter.counterBuilder("redlock.node.errors").setUnit("{error}")
        .setDescription("Failures of one node in a round, by node and error").build();
    nodeRtt = meter.histogramBuilder("redlock.node.rtt").setUnit("s")
        .setDescription("Round-trip time of each node's reply in a round")
        .setExplicitBucketBoundariesAdvice(RTT_BUCKETS).build();
    woken = meter.counterBuilder("redlock.wake.woken").setUnit("{waiter}")
        .setDescription("Waiting acquires woken by a release").build();
    listenerChanges = meter.counterBuilder("redlock.listener.state_changes").setUnit("{change}")
        .setDescription("State changes of the wake-up listeners").build();
  }

  /** Sets a new RedlockMetrics on openTelemetry as options' event listener; returns options. */
  public static Options instrument(Options options, OpenTelemetry openTelemetry) {
    options.setEventListener(new RedlockMetrics(openTelemetry));
    return options;
  }

  /** "REDLOCK_ELOST" for RedlockException.ELOST, and so on; "REDLOCK_E&lt;code&gt;" if unknown. */
  public static String errorName(int code) {
    String n = ERROR_NAMES.get(code);
    return n != null ? n : "REDLOCK_E" + code;
  }

  // The codes are RedlockException's inherited constants (generated from redlock.h).
  private static Map<Integer, String> errorNames() {
    Map<Integer, String> m = new HashMap<>();
    for (Field f : RedlockException.class.getFields()) {
      int mod = f.getModifiers();
      if (Modifier.isStatic(mod) && f.getType() == int.class && f.getName().startsWith("E")) {
        try {
          m.putIfAbsent(f.getInt(null), "REDLOCK_" + f.getName());
        } catch (IllegalAccessException e) {
          // not a constant we can read
        }
      }
    }
    return Map.copyOf(m);
  }

  private static Attributes outcomeOf(int code) {
    if (code == 0)
      return ACQUIRED;
    if (code == RedlockException.ENOTACQUIRED)
      return REFUSED;
    if (code == RedlockException.ETIMEDOUT)
      return TIMEOUT;
    if (code == RedlockException.ECANCELED)
      return CANCELED;
    return ERROR;
  }

  private static String nodeErrorType(RedlockEvent e) {
    if (e.code() != 0)
      return errorName(e.code());
    NodeResult.Outcome o = e.nodeOutcome();
    if (o == NodeResult.Outcome.TIMEOUT)
      return errorName(RedlockException.ETIMEDOUT);
    if (o == NodeResult.Outcome.DOWN)
      return errorName(RedlockException.EIO);
    return o == null ? "unknown" : o.name().toLowerCase(Locale.ROOT);
  }

  @Override
  public void onEvent(RedlockEvent e) {
    switch (e.type()) {
      case ACQUIRE_DONE:
        acquireDuration.record(e.elapsedMicros() / 1e6, outcomeOf(e.code()));
        if (e.attempt() > 0) // none for a call refused before its first attempt (a bad TTL, a cancel)
          acquireAttempts.record(e.attempt());
        break;
      case EXTENDED:
        extensions.add(1, EXTENDED);
        break;
      case EXTEND_FAILED:
        extensions.add(1, EXTEND_FAILED);
        break;
      case LOST:
        lost.add(1, Attributes.of(REASON, errorName(e.code())));
        break;
      case NODE_ERROR:
        nodeErrors.add(1, Attributes.of(NODE, String.valueOf(e.nodeUrl()), ERROR_TYPE, nodeErrorType(e)));
        break;
      case WOKEN:
        woken.add(1);
        break;
      case LISTENER:
        listenerChanges.add(1, Attributes.of(NODE, String.valueOf(e.nodeUrl()), LISTENER_STATE,
            String.valueOf(e.listenerState()).toLowerCase(Locale.ROOT)));
        break;
      default:
        break;
    }
    if (e.heldMicros() > 0) // 0 on a second report of the same hold
      heldDuration.record(e.heldMicros() / 1e6);
    long[] rtts = e.nodeRttsMicros();
    if (rtts != null) {
      List<String> urls = e.nodeUrls();
      for (int i = 0; i < rtts.length; i++)
        if (rtts[i] >= 0) // -1: no reply from that node in the round
          nodeRtt.record(rtts[i] / 1e6, Attributes.of(NODE, urls != null && i < urls.size() ? urls.get(i) : ""));
    }
    if (next != null)
      next.onEvent(e);
  }
}
