# SPDX-License-Identifier: BSD-3-Clause
# The GVL is released while C waits; interrupts end the wait; lost-lock notices.
require_relative "test_helper"

class ThreadsTest < RedlockTestCase
  def setup
    @holder = Redlock::Client.new(nodes)
    # Keeps trying for up to 200 * 20 ms: about 4 s.
    @waiter = Redlock::Client.new(nodes, retry_count: 200, retry_delay: 20, retry_jitter: 0)
  end

  def test_other_threads_run_while_lock_bang_waits
    held = @holder.lock(res, 10_000)
    counter = 0
    stop = false
    counting = Thread.new { counter += 1 until stop }
    waiting = Thread.new { @waiter.lock!(res, 5_000) { :got } }
    sleep 0.3
    c0 = counter
    sleep 0.5
    c1 = counter
    assert waiting.alive?, "lock! is still waiting on the held lock"
    assert_operator c1 - c0, :>, 1_000, "the counter advanced while lock! waited (#{c0} -> #{c1})"
    @holder.unlock(held)
    assert_equal :got, waiting.value, "the waiter gets the lock once it is free"
  ensure
    stop = true
    counting&.join
  end

  def test_thread_raise_ends_the_wait
    held = @holder.lock(res, 10_000)
    start = monotonic
    waiting = Thread.new do
      @waiter.lock!(res, 5_000) { :got }
    rescue StandardError => e
      e
    end
    sleep 0.3
    assert waiting.alive?
    t0 = monotonic
    waiting.raise(RuntimeError, "stop waiting")
    result = waiting.value
    assert_operator monotonic - t0, :<, 0.5, "the interrupt cancelled the C wait"
    # Holding the GVL, the waiter would run its 4 s of retries before anything else ran.
    assert_operator monotonic - start, :<, 1.5, "the wait ended early"
    assert_kind_of Exception, result
    refute_kind_of Redlock::LockError, result, "ended by the interrupt, not by the retries running out" unless
      result.is_a?(Redlock::CanceledError)
    assert(result.message == "stop waiting" || result.is_a?(Redlock::CanceledError), result.inspect)
    assert @holder.valid_lock?(held), "the holder keeps its lock"
    @holder.unlock(held)
    assert @waiter.lock(res, 1_000), "the client waits again after an interrupt"
  end

  def test_thread_kill_ends_the_wait
    held = @holder.lock(res, 10_000)
    start = monotonic
    waiting = Thread.new { @waiter.lock(res, 5_000) }
    sleep 0.3
    t0 = monotonic
    waiting.kill
    assert waiting.join(1), "killed thread ended"
    assert_operator monotonic - t0, :<, 0.5
    assert_operator monotonic - start, :<, 1.5, "the wait ended early, not after its 4 s of retries"
    @holder.unlock(held)
  end

  # Ctrl-C: SIGINT to a process whose main thread waits in lock! ends the wait with Interrupt.
  def test_sigint_ends_the_wait
    held = @holder.lock(res, 10_000)
    child = <<~RUBY
      require "redlock"
      w = Redlock::Client.new(ENV["REDLOCK_TEST_NODES"].split(","), retry_count: 200, retry_delay: 20, retry_jitter: 0)
      $stdout.sync = true
      puts "waiting"
      begin
        w.lock!(#{res.dump}, 5_000) { puts "acquired" }
      rescue Interrupt
        puts "interrupted"
      end
    RUBY
    includes = $LOAD_PATH.grep(%r{bindings/ruby/lib|swig/ruby/ruby}).flat_map { |d| ["-I", d] }
    IO.popen([RbConfig.ruby, *includes, "-e", child], "r") do |io|
      assert_equal "waiting\n", io.gets
      sleep 0.3
      t0 = monotonic
      Process.kill("INT", io.pid)
      assert io.wait_readable(1.5), "the child answered within 1.5 s"
      assert_equal "interrupted\n", io.gets
      assert_operator monotonic - t0, :<, 1.0
    end
    assert @holder.valid_lock?(held)
    @holder.unlock(held)
  end

  # Ruby's own interrupts (Thread#wakeup, finalizers, timers) raise nothing: the wait goes on.
  def test_wakeup_does_not_end_the_wait
    held = @holder.lock(res, 10_000)
    waiting = Thread.new { @waiter.lock!(res, 5_000) { :got } }
    10.times do
      sleep 0.05
      waiting.wakeup
    end
    assert waiting.alive?, "still waiting after 10 wakeups"
    @holder.unlock(held)
    assert_equal :got, waiting.value
  end

  def test_lost_notification
    lost = Queue.new
    info = @holder.lock(res, 1_000, auto_extend: true, on_lost: ->(i, e) { lost << [i, e, Thread.current] })
    sleep 1.2 # beyond the TTL: auto-extension keeps it
    assert @holder.valid_lock?(info), "auto-extended past its TTL"
    refute @holder.lost?(info)
    nodes.each_index { |i| Harness.ctl("CMD", i, "DEL", res) } # another party took it away
    assert eventually(3) { !lost.empty? }, "on_lost called within 3 s"
    got, err, thread = lost.pop
    assert_equal info, got
    assert_kind_of Redlock::Error, err
    assert_includes %w[REDLOCK_ELOST REDLOCK_EEXPIRED], err.code_name, err.message
    refute_equal Thread.main, thread, "called on the binding's Ruby thread"
    assert @holder.lost?(info)
    refute @holder.valid_lock?(info)
    assert_equal false, @holder.unlock(info), "nothing of ours to release"
  end

  def test_auto_extend_in_a_block
    done = @holder.lock(res, 600, auto_extend: true) do |l|
      sleep 1.0
      assert @holder.valid_lock?(l)
      assert @waiter.locked?(res)
    end
    assert done
    refute @holder.locked?(res), "released after the block, extension stopped"
  end
end

# Threads sharing one client: locks unlocked, left to expire (and then forgotten by the client),
# checked and extended concurrently; nothing crashes, and a lock the client says it holds is
# never granted to another client.
class SharedClientTest < RedlockTestCase
  def test_threads_share_a_client
    c = Redlock::Client.new(nodes, retry_count: 0)
    other = Redlock::Client.new(nodes, retry_count: 0)
    errors = Queue.new
    checked = Queue.new
    threads = Array.new(6) do |t|
      Thread.new do
        infos = []
        40.times do |i|
          info = c.lock(res("#{t}-#{i % 5}"), i.even? ? 30 : 5_000)
          infos << info if info
          infos.sample(2).each do |x|
            next unless c.valid_lock?(x) && c.get_remaining_ttl_for_lock(x).to_i > 1_000

            granted = other.lock(x[:resource], 1_000)
            errors << RuntimeError.new("#{x[:resource]} granted twice") if granted
            checked << 1
          end
          c.unlock(infos.shift) if infos.size > 3 && i % 3 == 0
          last = infos.last
          c.lock(last[:resource], 5_000, extend: last, extend_only_if_locked: true) if last && i % 4 == 0
        end
        infos.each { |x| c.unlock(x) }
      rescue StandardError => e
        errors << e
      end
    end
    threads.each { |th| assert th.join(60), "a thread hung" }
    assert errors.empty?, -> { e = errors.pop; "#{e.class}: #{e.message}\n#{e.backtrace&.first(5)&.join("\n")}" }
    assert_operator checked.size, :>, 20, "the exclusion was checked"
  end
end
