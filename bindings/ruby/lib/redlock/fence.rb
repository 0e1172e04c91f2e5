# SPDX-License-Identifier: BSD-3-Clause
# Fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting your store"): the C
# library's one script, its fence key and its reading of a refusal, run on the caller's own
# client through a block, so that nothing of the rule is written again in Ruby. Load it with
# require "redlock/fence".
require "redlock"

module Redlock
  # The store refused a fenced write (REDLOCK_EFENCED): #token, the write's, is older than
  # #fence, the highest token a write to the resource has carried: a later holder has written.
  # Nothing was written.
  class FencedError < Error
    attr_reader :token, :fence, :reply

    def initialize(resource, token, fence, reply)
      super("'#{resource}': token #{token} is older than #{fence}, the highest this resource has seen: " \
            "a later holder has written", code: Native::REDLOCK_EFENCED, resource: resource)
      @token = token
      @fence = fence
      @reply = reply
    end
  end

  # Writes to one resource on a Redis or Valkey store (not necessarily a lock node) that are
  # applied only while the token is at least the highest token a write to the resource has
  # carried, and that raise that fence to it, atomically on the store. An older token raises
  # FencedError naming both, and writes nothing.
  #
  # The store is the caller's own client: the block gets one command's words (EVALSHA or EVAL,
  # then its arguments) and returns the reply, raising the client's error for an error reply:
  #
  #   redis = Redis.new
  #   orders = Redlock::Fence.for_lock(lock_info) { |*command| redis.call(*command) }
  #   orders.advance
  #   orders.set("orders:total", (redis.get("orders:total").to_i + 1).to_s)
  #
  # A store error other than the refusal is what the client raised. On a cluster store, name
  # the data keys with the resource's hash tag ("{orders}:17" for the resource "{orders}").
  class Fence
    W = Native::Redlock
    SCRIPT = W.fenceScript
    SHA1 = W.fenceScriptSha1
    # How long a fence outlives the last fenced write to its resource by default, in ms.
    RETENTION_MS = Native::REDLOCK_FENCE_RETENTION_MS
    MAX_TOKEN = 2**64 - 1
    private_constant :W

    attr_reader :resource, :token, :key

    # The store key holding resource's fence: "{resource}:fence", or "resource:fence" when the
    # name has a hash tag (the C library's redlock_fence_key).
    def self.key(resource)
      raise InvalidArgumentError, "resource must be a String, not #{resource.class}" unless resource.is_a?(String)
      raise InvalidArgumentError, "resource must not contain a NUL" if resource.include?("\0")

      W.fenceKey(resource)
    rescue Native::Failure => e
      raise Redlock.error_from(e, resource: resource)
    end

    # The fence of the lock that lock_info (what Client#lock returned, of a client made with
    # fencing: true) describes: its resource and its acquisition's token.
    def self.for_lock(lock_info, retention_ms: RETENTION_MS, &store)
      token = lock_info.is_a?(Hash) && lock_info[:fencing_token]
      unless token.is_a?(Integer) && token.positive?
        raise StateError.new("no fencing token: the lock is not held, or its client was made without fencing: true",
                             code: Native::REDLOCK_ESTATE, resource: lock_info.is_a?(Hash) ? lock_info[:resource] : nil)
      end
      new(lock_info[:resource], token, retention_ms: retention_ms, &store)
    end

    # The fence of resource with token (1 to 2**64 - 1), writing through the block.
    def initialize(resource, token, retention_ms: RETENTION_MS, &store)
      raise ArgumentError, "a block that runs one command on the store: { |*command| redis.call(*command) }" unless store
      unless token.is_a?(Integer) && token.between?(1, MAX_TOKEN)
        raise InvalidArgumentError, "token must be an Integer from 1 to 2**64 - 1, got #{token.inspect}"
      end
      unless retention_ms.is_a?(Integer) && retention_ms >= 1
        raise InvalidArgumentError, "retention_ms must be an Integer >= 1, got #{retention_ms.inspect}"
      end

      @key = Fence.key(resource)
      @resource = resource
      @token = token
      @store = store
      @head = [token.to_s, retention_ms.to_s]
    end

    def inspect
      "#<Redlock::Fence #{resource.inspect} token=#{token} key=#{key.inspect}>"
    end

    # Raises the fence to this token without writing data; returns the fence it had (0: none).
    # A new holder calls it first, before it reads what it will write.
    def advance
      Integer(run("advance", nil))
    end

    # SET key value [PX px_ms], fenced; true.
    def set(key, value, px: nil)
      args = [value]
      if px
        raise InvalidArgumentError, "px must be an Integer >= 1 (ms), got #{px.inspect}" unless px.is_a?(Integer) && px >= 1

        args << px
      end
      run("set", key, *args) == "OK"
    end

    # DEL key, fenced; the number of keys removed.
    def delete(key)
      Integer(run("del", key))
    end

    # HSET key field value ..., fenced; the number of fields added.
    def hset(key, fields)
      raise InvalidArgumentError, "hset needs at least one field" if fields.nil? || fields.empty?

      Integer(run("hset", key, *fields.flatten(1)))
    end

    # RPUSH key value ..., fenced; the list's length after it.
    def rpush(key, *values)
      raise InvalidArgumentError, "rpush needs at least one value" if values.empty?

      Integer(run("rpush", key, *values))
    end

    # INCRBY key amount, fenced; the value after it.
    def incr(key, amount = 1)
      raise InvalidArgumentError, "amount must be an Integer, got #{amount.inspect}" unless amount.is_a?(Integer)

      Integer(run("incrby", key, amount))
    end

    private

    def run(op, data_key, *operands)
      keys = data_key.nil? ? [@key] : [@key, data_key.to_s]
      tail = [keys.size.to_s, *keys, *@head, op, *operands.map(&:to_s)]
      begin
        @store.call("EVALSHA", SHA1, *tail)
      rescue StandardError => e
        raise unless e.message.start_with?("NOSCRIPT")

        @store.call("EVAL", SCRIPT, *tail)
      end
    rescue StandardError => e
      raise if e.is_a?(Redlock::Error)

      msg = e.message.to_s
      raise unless msg.start_with?("FENCED ") && !msg.include?("\0")

      token = W.fenceRefusal(msg, 0)
      raise if token.zero?

      raise FencedError.new(@resource, token % 2**64, W.fenceRefusal(msg, 1) % 2**64, msg), cause: nil
    end
  end
end
