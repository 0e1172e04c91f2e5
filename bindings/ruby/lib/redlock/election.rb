# SPDX-License-Identifier: BSD-3-Clause
# Leader election over the C library's redlock_election (docs/ruby.md, "Leader
# election"), in the shape of the Python and Java bindings' Election. Every
# decision is C's; campaign and observe wait without the GVL, and an interrupt
# (Thread#raise, #kill, Ctrl-C) ends their wait.
module Redlock
  # The leader as a majority of the nodes report it, or none: present, its term
  # (with none, the last term a majority recorded; 0: never any), revision (1
  # when elected, + 1 per proclaim) and value (nil with none).
  Leader = Struct.new(:present, :term, :revision, :value) do
    def present? = present

    # The native line "present term revision value" (redlock.i).
    def self.from_line(line)
      p, t, r, v = line.split(" ", 4)
      new(p == "1", Integer(t), Integer(r), p == "1" ? v.to_s : nil)
    end

    def to_line = "#{present ? 1 : 0} #{term} #{revision} #{value}"
  end

  # One campaigner or observer of the election called name
  # (Redlock::Client#election). campaign, proclaim and resign are for one
  # thread at a time; leader, observe, leader? and term may be called from
  # another. An observer usually has an Election of its own (no network I/O to
  # make one).
  class Election
    attr_reader :name

    def initialize(native, name) # :nodoc:
      @native = native
      @name = name
    end

    # Waits until this process leads (wait: nil, for ever; 0, one attempt; or
    # ms), then writes value with the new term on a majority and keeps the
    # leadership (ttl ms) extended in the background until resign or loss.
    # Returns the term, a fencing token that grows from one leader to the next.
    # Not leading when the wait ran out: Redlock::TimeoutError (LockError for
    # one attempt). With a block: yields the term, resigns after it and
    # returns the block's value.
    def campaign(value, ttl, wait: nil)
      value = value_arg(value)
      unless ttl.is_a?(Integer) && ttl.positive? && ttl <= Native::REDLOCK_MAX_TTL_MS
        raise InvalidArgumentError, "ttl must be a positive Integer of ms up to a day, not #{ttl.inspect}"
      end

      wait_ms = wait.nil? ? Native::REDLOCK_WAIT_FOREVER : wait_arg(wait)
      call { @native.campaign(value, ttl, wait_ms) }
      term = self.term
      return term unless block_given?

      begin
        yield term
      ensure
        resign
      end
    end

    # The leader changes its value (same term, next revision).
    def proclaim(value)
      value = value_arg(value)
      call { @native.proclaim(value) }
    end

    # Gives leadership up at once: the next campaigner is woken. Not leading: nothing.
    def resign
      call { @native.resign }
      nil
    end

    # True while this process leads and its validity has not run out.
    def leader? = @native.isLeader

    # The term of this process's leadership, 0 when not leading.
    def term = @native.term

    # The Leader as a majority of the nodes report it: a hint (fence with the term).
    def leader
      Leader.from_line(call { @native.leaderLine })
    end

    # Waits up to wait ms for the first state after last (a Leader; nil for
    # the current state): the new Leader, or nil when the wait ran out. Never
    # a term lower than last's.
    def observe(last, wait)
      raise InvalidArgumentError, "last must be a Redlock::Leader or nil" unless last.nil? || last.is_a?(Leader)

      line = call { @native.observeLine(last ? last.to_line : "", wait_arg(wait)) }
      line && Leader.from_line(line)
    end

    private

    def value_arg(value)
      raise InvalidArgumentError, "value must be a String, not #{value.class}" unless value.is_a?(String)
      raise InvalidArgumentError, "value contains a NUL byte" if value.include?("\0")

      value
    end

    def wait_arg(wait)
      unless wait.is_a?(Integer) && wait >= 0 && wait <= Native::REDLOCK_MAX_WAIT_MS
        raise InvalidArgumentError, "wait must be a non-negative Integer of ms up to 7 days, not #{wait.inspect}"
      end

      wait
    end

    def call
      yield
    rescue Native::Failure => e
      raise Redlock.error_from(e, resource: @name)
    end
  end
end
