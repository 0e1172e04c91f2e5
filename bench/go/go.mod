// Peer-benchmark driver for Go: our binding against go-redsync (go-redis v9 pools); see bench/run.
module github.com/redlock-project/redlock/bench/go

go 1.22

require (
	github.com/go-redsync/redsync/v4 v4.13.0
	github.com/redis/go-redis/v9 v9.5.1
	github.com/redlock-project/redlock v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
)

// The binding lives in the repository's root module (package bindings/go).
replace github.com/redlock-project/redlock => ../..
