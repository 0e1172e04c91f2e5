# SPDX-License-Identifier: BSD-3-Clause
require "redlock/native"

module Redlock
  # Every error of this library. #code is the C library's REDLOCK_E* code (an
  # Integer, nil for an error found in Ruby before any C call), #code_name its
  # name ("REDLOCK_EAUTH"), #nodes the per-node report of the round that failed
  # (an Array of Hashes, empty when there was no round).
  class Error < StandardError
    attr_reader :code, :code_name, :nodes, :resource

    def initialize(message = nil, code: nil, nodes: [], resource: nil)
      super(message)
      @code = code
      @code_name = code && Redlock.error_name(code)
      @nodes = nodes
      @resource = resource
    end
  end

  # redlock-rb's: lock! could not take the lock (another owner holds it).
  class LockError < Error
    def initialize(resource = nil, message = nil, **kw)
      super(message || "failed to acquire lock on '#{resource}'", resource: resource, **kw)
    end
  end

  # Not acquired for a reason other than another owner: the nodes refused or
  # could not be reached. lock raises these (never returns false for them).
  class LockAcquisitionError < LockError
    # redlock-rb's: what went wrong, one entry per node that failed (here the
    # per-node report's entries that carry an error code).
    def errors
      nodes.select { |n| n[:code] }
    end
  end
  class AuthError < LockAcquisitionError; end          # REDLOCK_EAUTH: a node wants a password
  class PermissionError < LockAcquisitionError; end    # REDLOCK_EPERM: an ACL or a renamed command
  class TLSError < LockAcquisitionError; end           # REDLOCK_ETLS
  class UnreachableError < LockAcquisitionError; end   # REDLOCK_EUNREACHABLE
  class NoQuorumError < LockAcquisitionError; end      # REDLOCK_ENOQUORUM
  class ConnectionError < LockAcquisitionError; end    # REDLOCK_EIO
  class ServerError < LockAcquisitionError; end        # REDLOCK_ESERVER (READONLY, OOM...)
  class CanceledError < LockAcquisitionError; end      # REDLOCK_ECANCELED: the wait was interrupted

  class InvalidArgumentError < Error; end # REDLOCK_EINVAL, or refused in Ruby before the C call
  class NotSupportedError < Error; end    # REDLOCK_ENOTSUP, or a client used across fork
  class LostError < Error; end            # REDLOCK_ELOST: not ours on a majority any more
  class ExpiredError < Error; end         # REDLOCK_EEXPIRED
  class LimitError < Error; end           # REDLOCK_ELIMIT: max_hold reached
  class StateError < Error; end           # REDLOCK_ESTATE
  class TimeoutError < Error; end         # REDLOCK_ETIMEDOUT outside an acquire
  class NoMemoryError < Error; end        # REDLOCK_ENOMEM

  N = Native
  ERROR_CLASSES = {
    N::REDLOCK_EINVAL => InvalidArgumentError, N::REDLOCK_ENOMEM => NoMemoryError,
    N::REDLOCK_ENOTACQUIRED => LockError, N::REDLOCK_ENOQUORUM => NoQuorumError,
    N::REDLOCK_EEXPIRED => ExpiredError, N::REDLOCK_ELOST => LostError,
    N::REDLOCK_ETIMEDOUT => TimeoutError, N::REDLOCK_EIO => ConnectionError,
    N::REDLOCK_ESERVER => ServerError, N::REDLOCK_EAUTH => AuthError, N::REDLOCK_ETLS => TLSError,
    N::REDLOCK_ENOTSUP => NotSupportedError, N::REDLOCK_ECANCELED => CanceledError,
    N::REDLOCK_ELIMIT => LimitError, N::REDLOCK_ESTATE => StateError,
    N::REDLOCK_EUNREACHABLE => UnreachableError, N::REDLOCK_EPERM => PermissionError
  }.freeze
  private_constant :N

  ERROR_NAMES = Native.constants.grep(/\AREDLOCK_E[A-Z]+\z/)
                      .to_h { |c| [Native.const_get(c), c.to_s] }.freeze
  NODE_OUTCOMES = Native.constants.grep(/\AREDLOCK_NODE_[A-Z_]+\z/)
                        .to_h { |c| [Native.const_get(c), c.to_s.sub("REDLOCK_NODE_", "").downcase.to_sym] }.freeze

  def self.error_name(code)
    ERROR_NAMES.fetch(code, "REDLOCK_E#{code}")
  end

  # The Ruby exception for a C failure (Native::Failure).
  def self.error_from(failure, nodes: [], resource: nil)
    klass = ERROR_CLASSES.fetch(failure.code, Error)
    if klass <= LockError
      klass.new(resource, failure.message, code: failure.code, nodes: nodes)
    else
      klass.new(failure.message, code: failure.code, nodes: nodes, resource: resource)
    end
  end
end
