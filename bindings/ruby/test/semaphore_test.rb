# SPDX-License-Identifier: BSD-3-Clause
# limit: takes permits of a counting semaphore through the same lock/unlock/extend calls.
require_relative "test_helper"

class SemaphoreTest < RedlockTestCase
  def setup
    @clients = Array.new(3) { Redlock::Client.new(nodes, retry_count: 0) }
  end

  def test_permits
    a, b, c = @clients
    s1 = a.lock(res, 10_000, limit: 2)
    s2 = b.lock(res, 10_000, limit: 2)
    assert s1 && s2, "two permits of a limit-2 semaphore"
    assert_equal false, c.lock(res, 10_000, limit: 2), "a third permit is refused"
    err = assert_raises(Redlock::LockError) { c.lock!(res, 10_000, limit: 2) { flunk } }
    assert_equal "REDLOCK_ENOTACQUIRED", err.code_name
    ext = a.lock(res, 20_000, extend: s1)
    assert_operator ext[:validity], :>, 19_000, "a permit extends"
    assert a.unlock(s1)
    s3 = c.lock(res, 10_000, limit: 2)
    assert s3, "a released permit is taken"
    assert c.valid_lock?(s3)
    b.unlock(s2)
    c.unlock(s3)
  end

  def test_bad_limits
    a, b = @clients
    held = a.lock(res, 10_000, limit: 2)
    err = assert_raises(Redlock::InvalidArgumentError) { b.lock(res, 10_000, limit: 3) }
    assert_match(/limit/, err.message)
    assert_raises(Redlock::InvalidArgumentError) { b.lock(res("z"), 10_000, limit: 0) }
    assert_raises(Redlock::InvalidArgumentError) { b.lock(res("z"), 10_000, limit: 2, permits: 3) }
    assert_raises(Redlock::InvalidArgumentError) { b.lock(res("z"), 10_000, permits: 1) }
    assert_raises(Redlock::InvalidArgumentError) { b.lock(res("z"), 10_000, limit: -1) }
    a.unlock(held)
  end
end
