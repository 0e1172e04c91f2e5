// OpenTelemetry metrics from the metrics hook (package otelredlock), a module
// of its own so that the redlock module gains no OpenTelemetry dependency;
// see docs/observability.md.
module github.com/redlock-project/redlock/bindings/go/otelredlock

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.5.1
	github.com/redlock-project/redlock v0.0.0
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/sdk v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// Built and tested against the redlock module of this source tree.
replace github.com/redlock-project/redlock => ../../..
