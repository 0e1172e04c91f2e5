// The Go module: the binding (package redlock, import path
// github.com/redlock-project/redlock/bindings/go) with the C sources it
// compiles in (c/), so that `go get` needs no other download; see docs/go.md.
// go-redsync and go-redis are test-only dependencies (interop tests, benchmarks).
module github.com/redlock-project/redlock

go 1.22

require (
	github.com/go-redsync/redsync/v4 v4.13.0
	github.com/redis/go-redis/v9 v9.5.1
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
)
