// The gocron v2 Locker (package gocronlock), a module of its own so that the
// redlock module gains no gocron dependency; see docs/go.md.
module github.com/redlock-project/redlock/bindings/go/gocronlock

go 1.22

require (
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/redlock-project/redlock v0.0.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
)

// Built and tested against the redlock module of this source tree.
replace github.com/redlock-project/redlock => ../../..
