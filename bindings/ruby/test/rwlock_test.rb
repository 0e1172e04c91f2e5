# SPDX-License-Identifier: BSD-3-Clause
# mode: :read / :write take a side of the read-write lock through the same lock/unlock calls.
require_relative "test_helper"

class RWLockTest < RedlockTestCase
  def setup
    @clients = Array.new(3) { Redlock::Client.new(nodes, retry_count: 0) }
  end

  def test_readers_share_writers_exclude
    a, b, c = @clients
    r1 = a.lock(res, 10_000, mode: :read)
    r2 = b.lock(res, 10_000, mode: :read)
    assert r1 && r2, "two readers at once"
    assert_equal false, c.lock(res, 10_000, mode: :write), "a writer waits for the readers"
    err = assert_raises(Redlock::LockError) { c.lock!(res, 10_000, mode: :write) { flunk } }
    assert_equal "REDLOCK_ENOTACQUIRED", err.code_name
    assert a.unlock(r1)
    assert_equal false, c.lock(res, 10_000, mode: :write), "one reader still holds it"
    assert b.unlock(r2)
    w = c.lock(res, 10_000, mode: :write)
    assert w, "the writer gets it once the readers are gone"
    assert c.valid_lock?(w)
    assert_equal false, a.lock(res, 10_000, mode: :read), "no reader while a writer holds it"
    assert_equal false, b.lock(res, 10_000), "the writer excludes the mutex of the same name"
    ext = c.lock(res, 20_000, extend: w)
    assert_operator ext[:validity], :>, 19_000, "a write lock extends"
    assert c.unlock(w)
    assert_equal true, a.lock(res, 5_000, mode: :read) { |l| assert l, "a reader after the writer" }
  end

  def test_bad_modes
    a, = @clients
    err = assert_raises(Redlock::InvalidArgumentError) { a.lock(res, 10_000, mode: :shared) }
    assert_match(/mode/, err.message)
    assert_raises(Redlock::InvalidArgumentError) { a.lock(res, 10_000, mode: "read") }
    assert_raises(Redlock::InvalidArgumentError) { a.lock(res, 10_000, mode: :read, limit: 2) }
  end
end
