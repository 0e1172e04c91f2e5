# SPDX-License-Identifier: BSD-3-Clause
# Redlock::Fence (redlock/fence) against a real node as the store: the first write, equal and
# older tokens, tokens above 2**53 and at 2**64 - 1, every operation, NOSCRIPT, a fence key gone,
# Fence.for_lock with a real lock, and docs/fencing.md's Ruby example, checked to be the block
# run here. The store's client is a small RESP client of this test's own, so the binding is
# shown to need none.
require_relative "test_helper"
require "redlock/fence"

class FenceTest < RedlockTestCase
  # An error reply, raised as redis-rb raises one: the message is the reply's text.
  class StoreError < StandardError; end

  # One connection to a node; #call(*words) as redis-rb's Redis#call.
  class Store
    def initialize(url)
      host, port = url.match(%r{\Aredis://([^:/]+):(\d+)}).captures
      @sock = Socket.tcp(host, Integer(port), connect_timeout: 2)
    end

    def call(*words)
      @sock.write(Harness.resp(*words))
      reply
    end

    def get(key)
      call("GET", key)
    end

    def close
      @sock.close
    end

    private

    def reply
      raise "no reply in 10 s" unless @sock.wait_readable(10)

      line = @sock.gets("\r\n").chomp("\r\n")
      case line[0]
      when "+" then line[1..]
      when "-" then raise StoreError, line[1..]
      when ":" then Integer(line[1..])
      when "$"
        n = Integer(line[1..])
        n.negative? ? nil : @sock.read(n + 2)[0, n].force_encoding(Encoding::UTF_8)
      when "*" then Array.new(Integer(line[1..])) { reply }
      else raise "bad reply #{line.inspect}"
      end
    end
  end

  def setup
    @redis = Store.new(nodes[0])
  end

  def teardown
    @redis.close
  end

  def fence(resource, token, **kw)
    redis = @redis
    Redlock::Fence.new(resource, token, **kw) { |*command| redis.call(*command) }
  end

  def assert_refused(token, fence, &block)
    err = assert_raises(Redlock::FencedError, &block)
    assert_equal [token, fence], [err.token, err.fence], "the refusal names both tokens"
    assert_equal "REDLOCK_EFENCED", err.code_name
    assert_includes err.message, "token #{token} is older than #{fence}"
    err
  end

  def test_key_names_and_the_script
    assert_equal "{orders}:fence", Redlock::Fence.key("orders")
    assert_equal "{orders}:17:fence", Redlock::Fence.key("{orders}:17")
    assert_raises(Redlock::InvalidArgumentError) { Redlock::Fence.key("a}b") }
    assert_raises(Redlock::InvalidArgumentError) { Redlock::Fence.key("") }
    assert_raises(Redlock::InvalidArgumentError) { Redlock::Fence.key("a\0b") }
    assert_match(/\A\h{40}\z/, Redlock::Fence::SHA1)
    assert_includes Redlock::Fence::SCRIPT, "FENCED "
    assert_equal 7 * 86_400 * 1000, Redlock::Fence::RETENTION_MS
  end

  def test_first_equal_and_older_tokens
    r = res
    assert_equal 0, fence(r, 5).advance, "no fence yet"
    assert fence(r, 5).set("#{r}:v", "five"), "the first write"
    assert fence(r, 5).set("#{r}:v", "five again"), "an equal token writes"
    assert_refused(4, 5) { fence(r, 4).set("#{r}:v", "late") }
    assert_equal "five again", @redis.get("#{r}:v")
    assert_equal "5", @redis.get("{#{r}}:fence")
    pttl = @redis.call("PTTL", "{#{r}}:fence")
    assert_operator pttl, :>, Redlock::Fence::RETENTION_MS - 60_000
    assert fence(r, 10).set("#{r}:v", "ten"), "10 above 5: integers, not strings"
    assert_refused(9, 10) { fence(r, 9).set("#{r}:v", "nine") }
    assert_raises(Redlock::InvalidArgumentError) { fence(r, 0) }
    assert_raises(Redlock::InvalidArgumentError) { fence(r, 2**64) }
    assert_raises(Redlock::InvalidArgumentError) { fence(r, 1, retention_ms: 0) }
    f = fence(res("short"), 3, retention_ms: 60_000)
    f.advance
    assert_includes 1..60_000, @redis.call("PTTL", f.key)
  end

  def test_tokens_above_2_53_and_at_2_64
    r = res
    assert_equal 0, fence(r, 2**53 + 1).advance
    assert_refused(2**53, 2**53 + 1) { fence(r, 2**53).set("#{r}:v", "x") }
    assert_equal 2**53 + 1, fence(r, 2**63).advance
    assert_equal 2**63, fence(r, 2**64 - 1).advance
    assert_equal (2**64 - 1).to_s, @redis.get("{#{r}}:fence")
    assert_refused(2**63, 2**64 - 1) { fence(r, 2**63).set("#{r}:v", "x") }
  end

  def test_operations
    r = res
    f = fence(r, 7)
    assert f.set("#{r}:e", "x", px: 30_000)
    assert_includes 1..30_000, @redis.call("PTTL", "#{r}:e")
    assert_equal 1, f.delete("#{r}:e")
    assert_equal 0, f.delete("#{r}:e")
    assert_equal 2, f.hset("#{r}:h", { "a" => "1", "b" => "2" })
    assert_equal "2", @redis.call("HGET", "#{r}:h", "b")
    assert_equal 2, f.rpush("#{r}:l", "x", "y")
    assert_equal 1, f.incr("#{r}:n")
    assert_equal(-4, f.incr("#{r}:n", -5))
    late = fence(r, 6)
    assert_refused(6, 7) { late.hset("#{r}:h", { "a" => "9" }) }
    assert_refused(6, 7) { late.rpush("#{r}:l", "late") }
    assert_refused(6, 7) { late.incr("#{r}:n") }
    assert_refused(6, 7) { late.delete("#{r}:l") }
    assert_refused(6, 7) { late.advance }
    assert_equal "1", @redis.call("HGET", "#{r}:h", "a")
    assert_equal 2, @redis.call("LLEN", "#{r}:l")
    assert_equal "-4", @redis.get("#{r}:n")
    assert_raises(Redlock::InvalidArgumentError) { f.hset("#{r}:h", {}) }
    assert_raises(Redlock::InvalidArgumentError) { f.rpush("#{r}:l") }
    assert_raises(Redlock::InvalidArgumentError) { f.set("#{r}:v", "x", px: 0) }
    # Any other error is the client's own.
    err = assert_raises(StoreError) { f.set(f.key, "x") }
    assert_includes err.message, "the data key is the fence key"
    assert_raises(StoreError) { f.incr("#{r}:l") } # WRONGTYPE, no refusal
  end

  def test_noscript_and_a_fence_gone
    r = res
    @redis.call("SCRIPT", "FLUSH")
    assert fence(r, 3).set("#{r}:v", "three"), "EVAL after NOSCRIPT"
    @redis.call("SCRIPT", "FLUSH")
    assert_refused(2, 3) { fence(r, 2).set("#{r}:v", "two") }
    @redis.call("DEL", "{#{r}}:fence")
    assert fence(r, 2).set("#{r}:v", "two"), "the fence gone: the next write goes through"
    assert_equal "2", @redis.get("{#{r}}:fence"), "and makes the fence again"
    assert_refused(1, 2) { fence(r, 1).set("#{r}:v", "one") }
  end

  def test_for_lock
    r = res
    redis = @redis
    client = Redlock::Client.new(nodes, fencing: true)
    first = client.lock!(r, 10_000) do |lock|
      f = Redlock::Fence.for_lock(lock) { |*command| redis.call(*command) }
      assert_equal [r, lock[:fencing_token]], [f.resource, f.token]
      f.advance
      assert f.set("#{r}:v", "first")
      f.token
    end
    client.lock!(r, 10_000) do |lock|
      f = Redlock::Fence.for_lock(lock) { |*command| redis.call(*command) }
      assert_operator f.token, :>, first
      f.advance
      assert_refused(first, f.token) { fence(r, first).set("#{r}:v", "late") }
      assert f.set("#{r}:v", "second")
    end
    assert_equal "second", @redis.get("#{r}:v")
    plain = Redlock::Client.new(nodes)
    plain.lock!(res("plain"), 10_000) do |lock|
      assert_raises(Redlock::StateError) { Redlock::Fence.for_lock(lock) { |*c| redis.call(*c) } }
    end
  end

  # The Ruby example of docs/fencing.md, "Protecting your store", word for word (checked below).
  def test_docs_example
    redis = @redis
    assert_nil redis.get("orders:total")
    2.times do |round|
      # --8<-- docs/fencing.md ruby
      client = Redlock::Client.new(nodes, fencing: true)
      client.lock!("orders", 30_000) do |lock|
        orders = Redlock::Fence.for_lock(lock) { |*command| redis.call(*command) }
        orders.advance                   # a late write of the previous holder fails from now on
        total = redis.get("orders:total").to_i
        orders.set("orders:total", (total + 1).to_s)   # FencedError if a later holder has written
      end
      # -->8--
      assert_equal (round + 1).to_s, redis.get("orders:total")
    end
    top = File.expand_path("../../..", __dir__)
    assert_equal block(File.read(File.join(top, "docs", "fencing.md")), "```ruby", "```"),
                 block(File.read(__FILE__), "# --8<-- docs/fencing.md ruby", "# -->8--"),
                 "docs/fencing.md's Ruby example is the block run here"
  end

  private

  # The lines between the first that is start and the next that is stop, dedented.
  def block(text, start, stop)
    lines = text.lines.map(&:chomp)
    from = lines.index { |l| l.strip == start } or return "(no #{start})"
    body = lines[(from + 1)..].take_while { |l| l.strip != stop }
    indent = body.reject { |l| l.strip.empty? }.map { |l| l[/\A */].size }.min || 0
    body.map { |l| l.strip.empty? ? "" : l[indent..] }.join("\n") + "\n"
  end
end
