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
