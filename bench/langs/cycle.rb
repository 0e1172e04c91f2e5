# SPDX-License-Identifier: BSD-3-Clause
# cycle.rb: the Ruby binding's uncontended cycle for bench/run-langs, as redlock-rb users write
# it: client.lock(key, ttl) { |locked| } on a fresh key (one attempt; the block's end unlocks).
# usage: ruby cycle.rb CYCLES WARMUP PREFIX (nodes from REDLOCK_TEST_NODES);
# prints "RESULT p50_us p99_us n failures".
require "redlock"

cycles = Integer(ARGV[0])
warmup = Integer(ARGV[1])
prefix = ARGV[2]
client = Redlock::Client.new(ENV.fetch("REDLOCK_TEST_NODES").split(","))
s = []
failures = 0
(-warmup...cycles).each do |i|
  ok = false
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
  client.lock("#{prefix}-#{i + warmup}", 10_000) { |locked| ok = locked ? true : false }
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - t0
  next if i.negative?

  s << t
  failures += 1 unless ok
end
s.sort!
printf("RESULT %.1f %.1f %d %d\n", s[cycles / 2] / 1000.0, s[cycles * 99 / 100] / 1000.0, cycles, failures)
