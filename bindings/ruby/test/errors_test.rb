# SPDX-License-Identifier: BSD-3-Clause
# Bad input and refusing nodes: a specific error, in bounded time, never false.
require_relative "test_helper"

class ErrorsTest < RedlockTestCase
  def setup
    @c = Redlock::Client.new(nodes)
  end

  def assert_invalid(pattern = nil, &block)
    err = assert_raises(Redlock::InvalidArgumentError, &block)
    assert_match(pattern, err.message) if pattern
    err
  end

  def test_bad_resources
    err = assert_invalid(/resource/) { @c.lock("", 1_000) }
    assert_equal "REDLOCK_EINVAL", err.code_name, "the C library's refusal"
    err = assert_invalid { @c.lock("x" * 5_000, 1_000) }
    assert_equal "REDLOCK_EINVAL", err.code_name
    assert_invalid(/NUL/) { @c.lock("a\0b", 1_000) }
    assert_invalid(/String/) { @c.lock(nil, 1_000) }
    assert_invalid { @c.lock!("", 1_000) { flunk } }
    assert_invalid { @c.locked?(42) }
  end

  def test_bad_ttls
    assert_invalid(/positive/) { @c.lock(res, -1) }
    assert_invalid(/positive/) { @c.lock(res, 0) }
    assert_invalid(/day/) { @c.lock(res, 10**12) }
    assert_invalid(/number/) { @c.lock(res, "1000") }
    refute @c.locked?(res), "nothing was taken"
  end

  def test_bad_options
    assert_invalid(/retry_count/) { Redlock::Client.new(nodes, retry_count: -1) }
    assert_invalid(/redis_timeout/) { Redlock::Client.new(nodes, redis_timeout: 0) }
    assert_raises(Redlock::NotSupportedError) { Redlock::Client.new(nodes, retry_delay: ->(n) { n * 10 }) }
  end

  def test_bad_lock_options
    assert_invalid(/on_lost/) { @c.lock(res, 1_000, on_lost: -> {}) }
    assert_invalid(/call/) { @c.lock(res, 1_000, auto_extend: true, on_lost: 42) }
    assert_invalid(/auto_extend/) { @c.lock(res, 1_000, auto_extend: -5) }
    assert_invalid(/Hash/) { @c.lock(res, 1_000, 7) }
    refute @c.locked?(res), "nothing was taken"
  end

  def test_bad_urls
    err = assert_invalid(/port/) { Redlock::Client.new(["redis://127.0.0.1:abc"]) }
    assert_equal "REDLOCK_EINVAL", err.code_name
    assert_invalid { Redlock::Client.new(["http://127.0.0.1:6379"]) }
    assert_invalid { Redlock::Client.new([]) }
    assert_invalid { Redlock::Client.new([nodes[0], nodes[0]]) }
    assert_invalid(/server/) { Redlock::Client.new([42]) }
  end

  def test_unreachable_nodes_raise
    dead = (1..3).map do
      s = TCPServer.new("127.0.0.1", 0) # a port that was just free: nothing listens after close
      port = s.addr[1]
      s.close
      "redis://127.0.0.1:#{port}"
    end
    c = Redlock::Client.new(dead.uniq, retry_count: 2, retry_delay: 10)
    t0 = monotonic
    err = assert_raises(Redlock::LockAcquisitionError) { c.lock(res, 1_000) }
    assert_operator monotonic - t0, :<, 10, "bounded"
    assert_kind_of Redlock::UnreachableError, err
    assert_equal "REDLOCK_EUNREACHABLE", err.code_name, err.message
    assert(err.nodes.all? { |n| n[:code] == "REDLOCK_EIO" && n[:message] =~ /refused/ }, err.nodes.inspect)
    assert_raises(Redlock::LockAcquisitionError) { c.lock!(res, 1_000) { flunk } }
  end

  # Nodes that stop answering while locks are held: an extension cut short by the expiry and an
  # unlock a majority cannot confirm are false, not errors, and bounded in time.
  def test_paused_nodes_make_false_not_errors
    c = Redlock::Client.new(nodes)
    short = c.lock(res("short"), 300)
    long = c.lock(res("long"), 10_000)
    assert short && long
    begin
      3.times { |i| Harness.ctl("PAUSE", i) }
      sleep 0.2
      t0 = monotonic
      assert_equal false, c.lock(res("short"), 5_000, extend: short, extend_only_if_locked: true)
      assert_equal false, c.unlock(long), "a majority could not confirm the release"
      assert_operator monotonic - t0, :<, 1.5
      refute c.valid_lock?(long), "forgotten after unlock"
    ensure
      3.times { |i| Harness.ctl("RESUME", i) }
    end
  end

  # No quorum: an exception when a majority of nodes failed, false (as redlock-rb) when fewer did.
  def test_no_quorum_false_or_error_as_redlock_rb
    c = Redlock::Client.new(nodes, retry_count: 0)
    holder = Redlock::Client.new(nodes).lock(res("held"), 10_000)
    Harness.ctl("CMD", 4, "DEL", res("held")) # free on node 4 only: 2 refuse, 1 grants, 2 paused
    begin
      [2, 3].each { |i| Harness.ctl("PAUSE", i) }
      assert_equal false, c.lock(res("held"), 10_000), "2 of 5 nodes failing: not acquired, not an error"
      Harness.ctl("PAUSE", 1)
      err = assert_raises(Redlock::NoQuorumError) { c.lock(res("free"), 10_000) }
      assert_equal "REDLOCK_ENOQUORUM", err.code_name
      assert_equal 3, err.nodes.count { |n| n[:outcome] == :timeout }, err.nodes.inspect
    ensure
      [1, 2, 3].each { |i| Harness.ctl("RESUME", i) }
    end
    assert holder
  end

  # Nodes that want a password the client does not give: REDLOCK_EAUTH at once, never false.
  def test_auth_refusal_is_not_contention
    pw = "rb-refusal-pw"
    3.times { |i| Harness.ctl("CMD", i, "CONFIG", "SET", "requirepass", pw) }
    begin
      c = Redlock::Client.new(nodes, retry_count: 50, retry_delay: 100)
      t0 = monotonic
      err = assert_raises(Redlock::AuthError) { c.lock(res, 5_000) }
      assert_operator monotonic - t0, :<, 2.0, "a refusal is not retried for the whole wait"
      assert_equal "REDLOCK_EAUTH", err.code_name
      auth_nodes = err.nodes.select { |n| n[:code] == "REDLOCK_EAUTH" }
      assert_operator auth_nodes.size, :>=, 1, err.nodes.inspect
      assert_equal auth_nodes, err.errors & auth_nodes, "redlock-rb's #errors lists the failing nodes"
      assert_match(/auth|NOAUTH|password/i, err.message)
      err = assert_raises(Redlock::AuthError) { c.lock!(res, 5_000) { flunk } }
      assert_kind_of Redlock::LockError, err, "lock! callers rescuing LockError see it too"
    ensure
      3.times { |i| Harness.node_cmd(i, "CONFIG", "SET", "requirepass", "", password: pw) }
    end
    assert Redlock::Client.new(nodes).lock(res, 1_000), "the nodes take locks again"
  end
end
