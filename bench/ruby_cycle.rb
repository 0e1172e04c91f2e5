# SPDX-License-Identifier: BSD-3-Clause
# Benchmark of the Ruby binding: latency of one `client.lock(key, ttl) { }` cycle on distinct keys
# over the harness's nodes, against the C core called through the same extension (Lock#acquire and
# Lock#release of Redlock::Native on handles made beforehand), interleaved in blocks.
#
#   python3 tests/harness/nodes.py exec --count 5 --kind mixed -- \
#     ruby -Ibindings/ruby/lib -I<build>/bindings/swig/ruby/ruby bench/ruby_cycle.rb [CYCLES] [ROUNDS]
#
# Prints p50/p99 per cycle and the ratio; it measures, it never asserts a timing.
require "redlock"
require "securerandom"

cycles = Integer(ARGV[0] || 3000)
rounds = Integer(ARGV[1] || 6)
urls = ENV.fetch("REDLOCK_TEST_NODES").split(",")
now = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) }
run_id = SecureRandom.hex(4)

native = Redlock::Native::Redlock.new(urls, nil)
client = Redlock::Client.new(urls)
samples = { c: [], ruby: [] }
failures = Hash.new(0)
per_block = cycles / rounds

rounds.times do |r|
  order = r.even? ? %i[c ruby] : %i[ruby c]
  order.each do |kind|
    keys = Array.new(per_block) { |i| "rb-cycle-#{run_id}-#{kind}-#{r}-#{i}" }
    if kind == :c
      handles = keys.map { |k| native.newLock(k) }
      handles.each do |h|
        t0 = now.()
        begin
          h.acquire(10_000, Redlock::Native::REDLOCK_WAIT_NONE)
          h.release
        rescue Redlock::Native::Failure => e
          failures[:c] += 1
          warn "C-core cycle failed: #{e.message}"
        end
        samples[:c] << now.() - t0
      end
    else
      keys.each do |k|
        t0 = now.()
        begin
          client.lock(k, 10_000) { |locked| failures[:ruby] += 1 unless locked }
        rescue Redlock::Error => e
          failures[:ruby] += 1
          warn "Ruby cycle failed: #{e.message}"
        end
        samples[:ruby] << now.() - t0
      end
    end
  end
end

pct = lambda do |s, q|
  sorted = s.sort
  sorted[[sorted.size - 1, (q * sorted.size).to_i].min] / 1000.0
end
samples.each do |kind, s|
  printf("%-5s n=%d p50=%.0f us p99=%.0f us failures=%d\n", kind, s.size, pct.(s, 0.5), pct.(s, 0.99), failures[kind])
end
printf("ruby/c p50: %.2fx\n", pct.(samples[:ruby], 0.5) / pct.(samples[:c], 0.5))
