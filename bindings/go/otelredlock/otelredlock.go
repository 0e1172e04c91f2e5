// SPDX-License-Identifier: BSD-3-Clause

// Package otelredlock records OpenTelemetry metrics from redlock's metrics
// hook:
//
//	m, err := otelredlock.New(nil) // the global MeterProvider
//	client, err := redlock.NewClient(urls, redlock.WithEventHandler(m.Handle))
//
// The instruments, the same in Python and Java, are listed with their
// meaning in docs/observability.md. It is a Go module of its own, so that the
// redlock module gains no OpenTelemetry dependency.
package otelredlock

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// MeterName is the name of the meter the instruments are made on.
const MeterName = "redlock"

var (
	durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	rttBuckets      = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
	attemptBuckets  = []float64{1, 2, 3, 5, 10, 20, 50, 100, 1000}
)

// Metrics holds the instruments; its Handle method is a WithEventHandler
// handler. One Metrics may serve several clients.
type Metrics struct {
	acquireDuration metric.Float64Histogram
	acquireAttempts metric.Int64Histogram
	heldDuration    metric.Float64Histogram
	lost            metric.Int64Counter
	extensions      metric.Int64Counter
	nodeErrors      metric.Int64Counter
	nodeRTT         metric.Float64Histogram
	woken           metric.Int64Counter
	listenerChanges metric.Int64Counter
	next            func(redlock.Event)
}

// Option configures New.
type Option func(*Metrics)

// WithNext calls fn after recording each event, so that an application's
// own handler can run beside the metrics.
func WithNext(fn func(redlock.Event)) Option { return func(m *Metrics) { m.next = fn } }

// New makes the instruments on provider's meter "redlock" (nil: the global
// provider, otel.GetMeterProvider()).
func New(provider metric.MeterProvider, opts ...Option) (*Metrics, error) {
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	meter := provider.Meter(MeterName, metric.WithInstrumentationVersion(redlock.Version()))
	m := &Metrics{}
	var errs []error
	fh := func(name, unit, desc string, b []float64) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(b...))
		errs = append(errs, err)
		return h
	}
	ctr := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	m.acquireDuration = fh("redlock.acquire.duration", "s", "Duration of acquire calls, waits included, by outcome", durationBuckets)
	var err error
	m.acquireAttempts, err = meter.Int64Histogram("redlock.acquire.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made by one acquire call"), metric.WithExplicitBucketBoundaries(attemptBuckets...))
	errs = append(errs, err)
	m.heldDuration = fh("redlock.lock.held.duration", "s", "How long locks were held, until released or lost", durationBuckets)
	m.lost = ctr("redlock.lock.lost", "{lock}", "Locks lost while held, by reason")
	m.extensions = ctr("redlock.lock.extensions", "{extension}", "Extensions, by outcome")
	m.nodeErrors = ctr("redlock.node.errors", "{error}", "Failures of one node in a round, by node and error")
	m.nodeRTT = fh("redlock.node.rtt", "s", "Round-trip time of each node's reply in a round", rttBuckets)
	m.woken = ctr("redlock.wake.woken", "{waiter}", "Waiting acquires woken by a release")
	m.listenerChanges = ctr("redlock.listener.state_changes", "{change}", "State changes of the wake-up listeners")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// AcquireOutcome is the redlock.outcome attribute of an acquire call that
// ended with err: acquired, refused, timeout, canceled or error.
func AcquireOutcome(err error) string {
	switch {
	case err == nil:
		return "acquired"
	case errors.Is(err, redlock.ErrNotAcquired):
		return "refused"
	case errors.Is(err, redlock.ErrTimeout):
		return "timeout"
	case errors.Is(err, redlock.ErrCanceled):
		return "canceled"
	}
	return "error"
}

// Handle records one event; pass it to redlock.WithEventHandler. It runs on
// the goroutine or thread that reported the event and does not block.
func (m *Metrics) Handle(e redlock.Event) {
	ctx := context.Background()
	switch e.Type {
	case redlock.EventAcquireDone:
		m.acquireDuration.Record(ctx, e.Elapsed.Seconds(),
			metric.WithAttributes(attribute.String("redlock.outcome", AcquireOutcome(e.Err))))
		if e.Attempt > 0 {
			m.acquireAttempts.Record(ctx, int64(e.Attempt))
		}
	case redlock.EventExtended:
		m.extensions.Add(ctx, 1, metric.WithAttributes(attribute.String("redlock.outcome", "extended")))
	case redlock.EventExtendFailed:
		m.extensions.Add(ctx, 1, metric.WithAttributes(attribute.String("redlock.outcome", "failed")))
	case redlock.EventLost:
		m.lost.Add(ctx, 1, metric.WithAttributes(attribute.String("redlock.reason", e.ErrorName())))
	case redlock.EventNodeError:
		m.nodeErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("redlock.node", e.NodeURL),
			attribute.String("error.type", e.ErrorName())))
	case redlock.EventWoken:
		m.woken.Add(ctx, 1)
	case redlock.EventListener:
		m.listenerChanges.Add(ctx, 1, metric.WithAttributes(attribute.String("redlock.node", e.NodeURL),
			attribute.String("redlock.listener.state", strings.ToLower(e.ListenerState.String()))))
	}
	if e.Held > 0 {
		m.heldDuration.Record(ctx, e.Held.Seconds())
	}
	for _, n := range e.NodeRTTs {
		if n.RTT >= 0 {
			m.nodeRTT.Record(ctx, n.RTT.Seconds(), metric.WithAttributes(attribute.String("redlock.node", n.URL)))
		}
	}
	if m.next != nil {
		m.next(e)
	}
}
