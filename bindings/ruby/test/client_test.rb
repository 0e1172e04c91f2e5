# SPDX-License-Identifier: BSD-3-Clause
# redlock-rb's API on real nodes: lock, unlock, extend, contention, lock!, blocks.
require_relative "test_helper"

class ClientTest < RedlockTestCase
  def setup
    @a = Redlock::Client.new(nodes)
    @b = Redlock::Client.new(nodes, retry_count: 1, retry_delay: 20, retry_jitter: 0)
  end

  def test_lock_unlock
    info = @a.lock(res, 10_000)
    assert_kind_of Hash, info
    assert_equal res, info[:resource]
    assert_kind_of String, info[:value]
    assert_operator info[:validity], :>, 9_000
    assert_operator info[:validity], :<=, 10_000
    assert @a.locked?(res), "locked? while held"
    assert @b.locked?(res), "locked? from another client"
    assert @a.valid_lock?(info)
    refute @b.valid_lock?(info), "another client does not hold it"
    assert_operator @a.get_remaining_ttl_for_resource(res), :>, 9_000
    assert_equal true, @a.unlock(info)
    refute @a.locked?(res), "not locked after unlock"
    refute @a.valid_lock?(info)
    assert_equal false, @a.unlock(info), "a second unlock has nothing to release"
    assert_nil @a.get_remaining_ttl_for_resource(res)
  end

  def test_contention_returns_false
    info = @a.lock(res, 10_000)
    assert info
    t0 = monotonic
    assert_equal false, @b.lock(res, 10_000)
    # retry_count 1, retry_delay 20, jitter 0: two attempts, 20 ms apart.
    assert_operator monotonic - t0, :<, 2.0
    yielded = :none
    assert_equal false, @b.lock(res, 10_000) { |l| yielded = l }
    assert_equal false, yielded, "the block is given false"
    assert @a.valid_lock?(info), "the holder is unaffected"
    @a.unlock(info)
    assert @b.lock(res, 1_000), "free again after unlock"
  end

  def test_retries_wait_as_configured
    holder = @a.lock(res, 10_000)
    c = Redlock::Client.new(nodes, retry_count: 3, retry_delay: 100, retry_jitter: 0)
    t0 = monotonic
    assert_equal false, c.lock(res, 10_000)
    elapsed = monotonic - t0
    assert_operator elapsed, :>=, 0.29, "3 retries 100 ms apart: #{elapsed}"
    assert_operator elapsed, :<, 2.0
    @a.unlock(holder)
  end

  def test_per_call_retries
    holder = @a.lock(res, 10_000)
    t0 = monotonic
    assert_equal false, @a.lock(res, 10_000, retry_count: 0), "one attempt"
    assert_operator monotonic - t0, :<, 0.15, "no 200 ms retry delay with retry_count: 0"
    c = Redlock::Client.new(nodes, retry_count: 0)
    t0 = monotonic
    assert_equal false, c.lock(res, 10_000, retry_count: 3, retry_delay: 100, retry_jitter: 0)
    assert_operator monotonic - t0, :>=, 0.29, "the call's 3 retries 100 ms apart"
    assert_raises(Redlock::InvalidArgumentError) { c.lock(res, 10_000, retry_count: -2) }
    @a.unlock(holder)
  end

  def test_lock_bang_needs_a_block
    assert_raises(Redlock::InvalidArgumentError) { @a.lock!(res, 1_000) }
    refute @a.locked?(res), "nothing taken"
  end

  def test_lock_bang_raises_with_node_report
    info = @a.lock(res, 10_000)
    err = assert_raises(Redlock::LockError) { @b.lock!(res, 10_000) { flunk "must not run" } }
    assert_equal "REDLOCK_ENOTACQUIRED", err.code_name
    assert_equal res, err.resource
    assert_equal 5, err.nodes.size
    refused = err.nodes.count { |n| n[:outcome] == :refused }
    assert_operator refused, :>=, 3, "a majority refused: #{err.nodes.inspect}"
    assert_equal nodes, err.nodes.map { |n| n[:url] }
    assert_match(/not acquired/, err.message)
    refute_kind_of Redlock::LockAcquisitionError, err, "contention is not a refusal"
    @a.unlock(info)
    assert_equal :ran, @b.lock!(res, 10_000) { :ran }, "lock! returns the block's value"
    refute @a.locked?(res), "lock! unlocked after its block"
  end

  def test_block_unlocks_even_on_exception
    seen = nil
    assert_equal true, @a.lock(res, 10_000) { |l| seen = l; assert @b.locked?(res) }
    assert_kind_of Hash, seen
    refute @a.locked?(res)
    assert_raises(RuntimeError) { @a.lock(res, 10_000) { raise "boom" } }
    refute @a.locked?(res), "unlocked after the block raised"
    assert_raises(RuntimeError) { @a.lock!(res, 10_000) { raise "boom" } }
    refute @a.locked?(res)
  end

  def test_extend
    info = @a.lock(res, 2_000)
    ext = @a.lock(res, 20_000, extend: info)
    assert ext
    assert_equal info[:value], ext[:value], "the same lock"
    assert_operator ext[:validity], :>, 19_000
    assert_operator @a.get_remaining_ttl_for_resource(res), :>, 19_000
    assert_equal false, @b.lock(res, 20_000, extend: info), "another client cannot extend it"
    assert_raises(Redlock::InvalidArgumentError) { @a.lock("other", 1_000, extend: info) }
    assert @a.unlock(ext)
  end

  def test_extend_only_if_locked
    info = @a.lock(res, 300)
    sleep 0.45
    refute @a.valid_lock?(info), "expired"
    assert_equal false, @a.lock(res, 5_000, extend: info, extend_only_if_locked: true)
    again = @a.lock(res, 5_000, extend: info)
    assert again, "without extend_only_if_locked an expired lock is taken again"
    assert @a.valid_lock?(again)
    @a.unlock(again)
  end

  def test_fencing_tokens_increase
    f = Redlock::Client.new(nodes, fencing: true)
    t1 = f.lock(res, 5_000)
    assert_operator t1[:fencing_token], :>=, 1
    f.unlock(t1)
    t2 = f.lock(res, 5_000)
    assert_operator t2[:fencing_token], :>, t1[:fencing_token]
    f.unlock(t2)
    refute @a.lock(res, 1_000).key?(:fencing_token), "no token without fencing: true"
  end

  def test_key_prefix_and_client_objects
    server = Struct.new(:id)
    servers = nodes.each_with_index.map { |u, i| i.even? ? server.new(u) : { url: u } }
    p = Redlock::Client.new(servers, key_prefix: "rbp:")
    info = p.lock(res, 5_000)
    assert info
    assert @a.locked?("rbp:#{res}"), "the key carries the prefix"
    refute @a.locked?(res)
    assert p.locked?(res)
    p.unlock(info)
  end

  def test_fork_needs_a_new_client
    name = res # res names the test's process: the child's differs
    info = @a.lock(name, 5_000)
    pid = fork do
      code = begin
        @a.unlock(info)
        1
      rescue Redlock::NotSupportedError
        begin
          Redlock::Client.new(nodes).lock(name, 1_000) == false ? 0 : 2
        rescue StandardError
          3
        end
      end
      exit!(code)
    end
    Process.wait(pid)
    assert_equal 0, $?.exitstatus, "child: inherited client refused, new client sees the parent's lock"
    assert @a.valid_lock?(info), "the parent still holds it"
    assert @a.unlock(info)
  end
end
