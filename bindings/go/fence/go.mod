// Fenced writes to Redis/Valkey keys (go-redis) and SQL rows (database/sql),
// package fence, a module of its own so that the redlock module gains no
// new dependency; see docs/go.md, "Fenced writes".
module github.com/redlock-project/redlock/bindings/go/fence

go 1.23.0

require (
	github.com/jackc/pgx/v5 v5.7.6
	github.com/redis/go-redis/v9 v9.5.1
	github.com/redlock-project/redlock v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.2 // indirect
	golang.org/x/crypto v0.37.0 // indirect
	golang.org/x/sync v0.13.0 // indirect
	golang.org/x/text v0.24.0 // indirect
)

// Built and tested against the redlock module of this source tree.
replace github.com/redlock-project/redlock => ../../..
