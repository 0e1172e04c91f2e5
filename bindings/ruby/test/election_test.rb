# SPDX-License-Identifier: BSD-3-Clause
# Leader election: campaign, proclaim, resign, leader, observe; waits that let other threads run.
require_relative "test_helper"

class ElectionTest < RedlockTestCase
  def setup
    @client = Redlock::Client.new(nodes)
  end

  def test_campaign_proclaim_resign
    a = @client.election(res)
    b = @client.election(res)
    t1 = a.campaign("a", 10_000)
    assert_operator t1, :>, 0
    assert a.leader?
    assert_equal t1, a.term
    l = b.leader
    assert l.present?
    assert_equal ["a", t1, 1], [l.value, l.term, l.revision]
    assert_raises(Redlock::LockError) { b.campaign("b", 10_000, wait: 0) }
    a.proclaim("a2")
    assert_equal ["a2", 2], [b.leader.value, b.leader.revision]
    waiting = Thread.new { b.campaign("b", 10_000, wait: 10_000) }
    sleep 0.3
    assert waiting.alive?, "b waits while a leads"
    a.resign
    refute a.leader?
    assert_operator waiting.value, :>, t1, "b leads with a higher term"
    assert b.leader?
    b.resign
    refute b.leader.present?, "no leader once b resigned"
  end

  def test_block_form_resigns
    a = @client.election(res)
    got = a.campaign("a", 10_000) { |term| [term, a.leader?] }
    assert_operator got[0], :>, 0
    assert got[1], "leading inside the block"
    refute a.leader?, "resigned after the block"
    refute @client.election(res).leader.present?
  end

  def test_observe_while_another_thread_counts
    a = @client.election(res)
    watch = @client.election(res)
    seen = watch.leader
    refute seen.present?
    assert_nil watch.observe(seen, 200), "no change in 200 ms"
    counter = 0
    stop = false
    counting = Thread.new { counter += 1 until stop }
    observing = Thread.new { watch.observe(seen, 10_000) }
    sleep 0.2
    c0 = counter
    sleep 0.3
    c1 = counter
    assert observing.alive?, "observe is still waiting"
    assert_operator c1 - c0, :>, 1_000, "the counter advanced while observe waited (#{c0} -> #{c1})"
    term = a.campaign("x", 10_000)
    got = observing.value
    assert got.present?
    assert_equal ["x", term], [got.value, got.term]
  ensure
    stop = true
    counting&.join
    a&.resign
  end

  def test_interrupt_ends_a_campaign
    a = @client.election(res)
    b = @client.election(res)
    a.campaign("a", 10_000)
    waiting = Thread.new do
      b.campaign("b", 10_000, wait: 20_000)
    rescue StandardError => e
      e
    end
    sleep 0.3
    t0 = monotonic
    waiting.raise(RuntimeError, "stop campaigning")
    result = waiting.value
    assert_operator monotonic - t0, :<, 1.0, "the interrupt cancelled the C wait"
    assert_kind_of Exception, result
    refute b.leader?
    a.resign
    assert_operator b.campaign("b", 10_000, wait: 5_000), :>, 0, "b campaigns again after the interrupt"
    b.resign
  end

  def test_bad_arguments
    e = @client.election(res)
    assert_raises(Redlock::InvalidArgumentError) { @client.election("") }
    assert_raises(Redlock::InvalidArgumentError) { e.campaign(nil, 10_000) }
    assert_raises(Redlock::InvalidArgumentError) { e.campaign("v", 0) }
    assert_raises(Redlock::InvalidArgumentError) { e.campaign("v", 10_000, wait: -1) }
    assert_raises(Redlock::InvalidArgumentError) { e.observe("not a leader", 10) }
  end
end
