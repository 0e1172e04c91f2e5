# SPDX-License-Identifier: BSD-3-Clause
# Entry points: 'make demo' (the main job on 5 local nodes) and 'make test'
# (the whole suite). Both install what is missing first (Debian 12, as root).
BUILD      ?= build
JOBS       ?= 2
# ctest runs one test at a time: fault and TLS tests on 2 cores under
# sanitizers are sensitive to load, and the suite stays well under 15 min.
TEST_JOBS  ?= 1
PYTHON     ?= python3
VENV       := $(BUILD)/venv
HARNESS    := tests/harness/nodes.py
SAN_ENV    := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
              UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
              TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$(CURDIR)/tests/c/tsan.supp

.PHONY: all deps build demo test test-c test-asan test-tsan test-python test-go test-cli test-safety test-fuzz \
        test-bench test-docs test-jar test-deb test-wheel test-go-module bench stress fuzz-long jar wheel clean \
        test-java-integ test-cluster test-ruby test-node

all: build

deps:
	@if [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null; then tools/install-deps; \
	 else echo "not root: skipping tools/install-deps (see README for what to install)"; fi

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DREDLOCK_JAVA=ON

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# Quiet: the build's output goes to a log, shown only if the build fails.
# REDLOCK_PORTS=LOW-HIGH (environment or make argument) picks the nodes' ports; a bad range
# fails here, before the build.
demo:
	@$(PYTHON) $(HARNESS) ports >/dev/null
	@mkdir -p $(BUILD)
	@echo "== building (log: $(BUILD)/demo-build.log)"
	@$(MAKE) --no-print-directory build >$(BUILD)/demo-build.log 2>&1 || \
	 { cat $(BUILD)/demo-build.log; echo "demo: the build failed (log above, in $(BUILD)/demo-build.log)"; exit 1; }
	@printf '\n== part 1 of 2: the redlock command-line tool (tools/demo-cli)\n'
	@tools/demo-cli $(BUILD)/c/cli/redlock
	@printf '\n== part 2 of 2: the C library: processes add to one counter under one lock (c/examples/counter_demo.c)\n'
	@$(PYTHON) $(HARNESS) exec --count 5 --kind mixed -- $(BUILD)/redlock_demo

# Local nodes to try things on (README.md, "Try it"): 5 nodes, Redis and Valkey, left running
# until 'make nodes-stop', their state in $(PLAYGROUND). stdout is only 'export REDLOCK_NODES=...'
# (everything else goes to stderr), so eval "$(make -s nodes)" sets it; a second 'make nodes'
# starts nothing and prints the line again. NODES_OPTS='--cluster' adds 3 Redis/Valkey Clusters
# ($REDLOCK_CLUSTER_NODES); REDLOCK_PORTS=LOW-HIGH picks the ports (tests/harness/README.md).
PLAYGROUND ?= $(BUILD)/playground
NODES_OPTS ?=
.PHONY: nodes nodes-stop
nodes:
	@$(MAKE) --no-print-directory deps >&2
	@$(PYTHON) $(HARNESS) up --state-dir $(PLAYGROUND) $(NODES_OPTS)
nodes-stop:
	@$(PYTHON) $(HARNESS) down --state-dir $(PLAYGROUND)

test: build test-docs test-c test-asan test-tsan test-python test-go test-cli test-safety test-fuzz test-bench \
      test-jar test-deb test-wheel test-go-module flake-hunt-short test-java-integ test-ruby test-node
	@echo "all test suites passed"

test-c: build
	cd $(BUILD) && ctest -j$(TEST_JOBS) --output-on-failure

test-asan: deps
	cmake -S . -B $(BUILD)-asan -DREDLOCK_SANITIZE=address,undefined -DREDLOCK_BUILD_BENCH=OFF
	cmake --build $(BUILD)-asan -j$(JOBS)
	cd $(BUILD)-asan && REDLOCK_GARBAGE_RESOURCES=2000 $(SAN_ENV) ctest -j$(TEST_JOBS) --output-on-failure

test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -DREDLOCK_SANITIZE=thread -DREDLOCK_BUILD_BENCH=OFF
	cmake --build $(BUILD)-tsan -j$(JOBS)
	cd $(BUILD)-tsan && REDLOCK_STRESS_CYCLES=1000 REDLOCK_WAKE_WAITS=500 REDLOCK_GARBAGE_RESOURCES=1000 $(SAN_ENV) ctest -j$(TEST_JOBS) --output-on-failure \
	  -R 'threads|core_5|faults|autoextend|async|report|fencing|engine_|election|rwlock|semaphore|many_|multilock|cluster_|quarantine'


$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

test-python: deps $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q '.[otel]'
	$(VENV)/bin/python -m pip install -q -r tests/python/requirements.txt
	$(VENV)/bin/python -m pytest -q tests/python

# Redis/Valkey Clusters as Redlock nodes, the long forms (docs/cluster.md): the failover test and
# the cluster fault matrix on three clusters of three shards, with every failover row; about 60 s.
# make test runs the short forms: tests/python/test_cluster.py without the failover (test-python),
# and the fault matrix's short rows (tests/safety/test_cluster_faults.py, in test-safety).
test-cluster: build $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q '.[otel]'
	$(VENV)/bin/python -m pip install -q -r tests/python/requirements.txt
	REDLOCK_CLUSTER_LONG=1 $(VENV)/bin/python -m pytest -q tests/python/test_cluster.py
	REDLOCK_CLUSTER_LONG=1 REDLOCK_SAFETY_CLIENT=$(BUILD)/tests/safety/safety_client \
	  $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/safety/test_cluster_faults.py

test-cli: build $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q pytest pytest-timeout
	REDLOCK_CLI=$(BUILD)/c/cli/redlock $(VENV)/bin/python -m pytest -q tests/cli

# The fault matrix, its cluster rows' short form and a short soak (docs/safety.md); about 2.5 minutes.
test-safety: build $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q pytest pytest-timeout
	REDLOCK_SAFETY_CLIENT=$(BUILD)/tests/safety/safety_client $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/safety

# The targeted rows' long form (docs/safety.md, "Nodes that forget"): 60 s per row; a node's keys
# wiped or its wall clock stepped under the holder, with the quarantine (0 violations) and without
# it (violations, by design).
.PHONY: test-safety-targeted
test-safety-targeted: build $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q pytest pytest-timeout
	REDLOCK_SAFETY_TARGETED_SECONDS=60 REDLOCK_SAFETY_CLIENT=$(BUILD)/tests/safety/safety_client \
	  $(VENV)/bin/python -m pytest -q -s -p no:cacheprovider tests/safety/test_targeted.py

GO_INTEG_MODULES := bindings/go/gocronlock bindings/go/otelredlock bindings/go/fence
test-go: build
	@if ! command -v go >/dev/null; then echo "SKIPPED Go tests: no go toolchain on this machine"; exit 1; fi
	@# Go's build cache does not see edits to the C sources the bundled_*.c include: a digest
	@# of c/ in CGO_CFLAGS makes a change of them rebuild the package (tools/gen-go-bundle).
	cd bindings/go && export CGO_CFLAGS="-g -O2 $$(../../tools/gen-go-bundle --digest)" && \
	  go vet ./... && go test -race -count=1 ./...
	@# The integrations, Go modules of their own (docs/go.md, docs/observability.md); the fence
	@# module's tests start their own nodes and PostgreSQL (tests/harness/pgserver.py exec).
	for m in $(GO_INTEG_MODULES); do (cd $$m && go vet ./... && go test -race -count=1 ./...) || exit 1; done

test-fuzz: deps
	tests/fuzz/run 20

# Man pages, docs/cli.md and docs/c-api.md against the built tool and redlock.h.
test-docs: build
	tools/docs-check --build $(BUILD)

# One compilation of the C core (docs/design.md): CMake, the Python extension and the Go binding
# compile the sources of c/sources.txt with the flags of c/cflags.txt; each is built here with
# -Werror, and the Go binding's bundled files must be what tools/gen-go-bundle writes. About a
# minute (docs/testing.md).
.PHONY: test-build-flags
test: test-build-flags
test-build-flags: deps $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q 'setuptools>=61' 'cffi>=1.15'
	tools/build-flags-check --build $(BUILD)/build-flags --python $(VENV)/bin/python --jobs $(JOBS)

# The spin models of models/ (docs/testing.md "Models", docs/models.md): the mutex with its
# fencing token passes, the "assumption removed" variants shown so far fail as they must (the
# others are reported OPEN), and the Lua scripts the models stand for are as reviewed. make test
# runs the short form (about 70 s).
.PHONY: model-check test-models
model-check: deps
	models/check
test: test-models
test-models: deps
	models/check --short

# The Maven jar with its native library inside; runs the java_* ctest cases on
# it, then the jar alone with the system's hiredis hidden (needs root, else SKIPPED).
jar: deps
	cd bindings/java && mvn -q -B package
test-jar: jar
	tools/java-jar-test

# The Java modules on the jar, each tested on real nodes: the ShedLock provider
# (ShedLock's own contract tests), the OpenTelemetry metrics, the Spring Boot
# sample with two instances (docs/java-integrations.md).
test-java-integ: jar
	tools/java-integ-test

# The SWIG Ruby binding (bindings/ruby, docs/ruby.md): the extension built in its own build
# directory (the C library and the extension only), its minitest suite on 5 harness nodes,
# then the gem (self-contained extension) installed offline and run with the system's hiredis
# hidden (tools/ruby-gem-test).
RUBY_BUILD := $(BUILD)/ruby
test-ruby: deps
	cmake -S . -B $(RUBY_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDLOCK_RUBY=ON \
	  -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF
	cmake --build $(RUBY_BUILD) -j$(JOBS) --target redlockruby ruby-gem
	cd $(RUBY_BUILD) && ctest -L ruby --output-on-failure
	tools/ruby-gem-test $(RUBY_BUILD)/bindings/swig/ruby/libredlock-*.gem

# The self-contained Python wheel (hiredis and OpenSSL inside, manylinux tag),
# then installed in a fresh venv with the system's hiredis hidden.
wheel: deps
	tools/wheel-build --build-dir $(BUILD)/wheel --python $(PYTHON)
test-wheel: wheel
	tools/wheel-test --build-dir $(BUILD)/wheel --python $(PYTHON)

# The Go module as 'go get' sees it: zipped, served from a file:// proxy, built
# with default settings in a fresh module outside the tree, run against nodes.
test-go-module: deps
	tools/go-module-test

# The Node.js binding (docs/node.md): the addon built by CMake in $(BUILD)-node, with hiredis
# and OpenSSL linked in (what the npm package ships), then its node --test suite on 5 nodes,
# then the packed tarball installed offline and run with the system's hiredis and OpenSSL hidden
# (tools/node-pack-test; needs root for that, else SKIPPED). node-redlock, ioredis, node-postgres and
# TypeScript, for the interop, fence and type tests only, are installed from the npm registry into
# $(BUILD)-node/interop (never committed). The suite runs under a throwaway PostgreSQL too
# (tests/harness/pgserver.py exec), for the fenced SQL writes. Under a minute once built on 2 cores,
# most of it tsc.
NODE_INTEROP := $(BUILD)-node/interop
NODE_INTEROP_PKGS := redlock@5.0.0-beta.2 ioredis@5 typescript@5 @types/node@20 pg@8
test-node: deps
	@node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || \
	 { echo "test-node: the tests need Node.js >= 20 (node --test --test-concurrency); this is $$(node --version)"; exit 1; }
	cmake -S . -B $(BUILD)-node -DREDLOCK_NODE=ON -DREDLOCK_NODE_STATIC_DEPS=ON \
	  -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF
	cmake --build $(BUILD)-node -j$(JOBS) --target redlock_node
	@mkdir -p $(NODE_INTEROP)
	@[ -f $(NODE_INTEROP)/package.json ] || echo '{"private": true}' > $(NODE_INTEROP)/package.json
	cd $(NODE_INTEROP) && npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error $(NODE_INTEROP_PKGS)
	cd bindings/node && REDLOCK_NODE_INTEROP_DIR=$(abspath $(NODE_INTEROP)) $(PYTHON) ../../tests/harness/pgserver.py \
	  exec -- $(PYTHON) ../../$(HARNESS) exec --count 5 --kind mixed -- npm test
	PYTHON=$(PYTHON) tools/node-pack-test

# The Debian packages: built, linted, installed, their consumers run, purged.
test-deb: deps
	tools/deb-test

# The long forms of the short runs in 'make test' (docs/safety.md, docs/design.md).
stress: build
	cd $(BUILD) && REDLOCK_STRESS_CYCLES=20000 REDLOCK_WAKE_WAITS=10000 REDLOCK_GARBAGE_RESOURCES=100000 \
	  ctest --output-on-failure -R 'engine_stress|engine_wake'
fuzz-long: deps
	tests/fuzz/run 600

# Flake hunting (docs/testing.md). The long form repeats every test: ctest
# until-fail FLAKE_CTEST times, each pytest suite FLAKE_PYTEST times, go test
# -count=FLAKE_GO; FLAKE_LOAD=stress runs stress-ng beside it, =double two ctests.
# The short form, in 'make test', repeats the tests the last commits touched and
# a slice that rotates by date, for about FLAKE_BUDGET seconds.
FLAKE_CTEST  ?= 20
FLAKE_PYTEST ?= 5
FLAKE_GO     ?= 10
FLAKE_LOAD   ?= none
FLAKE_BUDGET ?= 100
.PHONY: flake-hunt flake-hunt-short
flake-hunt: build
	tools/flake-hunt --build $(BUILD) --ctest $(FLAKE_CTEST) --pytest $(FLAKE_PYTEST) --go $(FLAKE_GO) \
	  --load $(FLAKE_LOAD)
flake-hunt-short: build
	tools/flake-hunt --short --build $(BUILD) --budget $(FLAKE_BUDGET)

# The benchmark's smoke run keeps it from rotting; it asserts no timing.
test-bench: build
	bench/run --smoke --build-dir $(BUILD)

bench: build
	bench/run --build-dir $(BUILD)

# The contention benchmark: waiters woken on release, off / on / fair (bench/README.md).
.PHONY: bench-contend
bench-contend: build
	bench/run-contend --build-dir $(BUILD)

# The fault matrix's many-locks row in its long form: 20,000 locks on the watchdog.
.PHONY: safety-many
safety-many: build $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q pytest pytest-timeout
	REDLOCK_SAFETY_MANY=20000 REDLOCK_SAFETY_CLIENT=$(BUILD)/tests/safety/safety_client \
	  $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/safety/test_faults.py -k many_locks

# Many locks held by one client (issue 28): 20,000 at 3 s and 50,000 at 10 s,
# 60 s each, each also with a node stopped, then the watchdog's saturation
# against the nodes' pipelined SET; about 8 minutes (bench/run-many).
# Its short form is the bench_many_smoke ctest case.
.PHONY: bench-many
bench-many: build
	bench/run-many --build-dir $(BUILD)

# A multi-resource lock's cycle against the mutex's (bench/multi.c, docs/performance.md).
.PHONY: bench-multi
bench-multi: build
	bench/run-multi --build-dir $(BUILD)

# Leader election: hand-over after resign, observer latency, a killed leader (bench/README.md).
.PHONY: bench-elect
bench-elect: build
	bench/run-elect --build-dir $(BUILD)

# Lock throughput and CPU (nodes', client's, the machine's) with each of 3 nodes a single server,
# then a cluster of 2 shards, then 3, on Redis and on Valkey (bench/cluster_scale.py,
# docs/performance.md); about 2 minutes. Its smoke form runs in make test-python
# (tests/python/test_cluster.py).
.PHONY: bench-cluster
bench-cluster: build $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q '.[otel]'
	$(VENV)/bin/python bench/cluster_scale.py --seconds 4

# The read-write lock against the mutex: cycles, node work, 16 readers + 1 writer (bench/README.md).
.PHONY: bench-rwlock
bench-rwlock: build
	bench/run-rwlock --build-dir $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-node bindings/node/build bindings/node/csrc $(BUILD)-csharp

# Observability (docs/observability.md): the Prometheus rules and scrape
# configuration checked by promtool (Debian's prometheus package), and the
# screenshot of Prometheus's graph page for a real run (not in 'make test':
# it needs chromium and takes about two minutes).
.PHONY: test-observability metrics-screenshot
test: test-observability
test-observability: deps
	promtool check config docs/prometheus/prometheus.yml
	promtool test rules docs/prometheus/redlock-rules.test.yml
metrics-screenshot: deps $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -q '.[otel]' -r tools/metrics-screenshot.requirements.txt
	tools/metrics-screenshot --python $(VENV)/bin/python --out docs/img/prometheus-redlock.png

# The C# binding (bindings/csharp, docs/csharp.md): SWIG's P/Invoke layer and the
# RedLock.net-shaped classes compiled with Mono's mcs in $(BUILD)-csharp, then the
# test program on 5 fresh nodes per group (ctest label csharp; about 15 s), and
# the .nupkg unzipped alone with the system's hiredis hidden (tools/csharp-nupkg-test).
.PHONY: test-csharp
test: test-csharp
test-csharp: deps
	cmake -S . -B $(BUILD)-csharp -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREDLOCK_CSHARP=ON \
	      -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF
	cmake --build $(BUILD)-csharp -j$(JOBS)
	cd $(BUILD)-csharp && ctest -j$(TEST_JOBS) -L csharp --output-on-failure
	tools/csharp-nupkg-test $(BUILD)-csharp/bindings/swig/csharp/Redlock.Native.*.nupkg \
	  $(BUILD)-csharp/bindings/swig/csharp/RedlockTests.exe
