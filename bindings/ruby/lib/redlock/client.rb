# SPDX-License-Identifier: BSD-3-Clause
require "securerandom"
require "socket"
require "uri"
require "redlock/native"
require "redlock/errors"

module Redlock
  # redlock-rb's Redlock::Client over libredlock. Each method makes its C calls
  # through Redlock::Native; retries, quorum, validity and drift are decided
  # in C. See docs/ruby.md for what maps onto what.
  class Client
    DEFAULT_REDIS_HOST    = ENV["DEFAULT_REDIS_HOST"] || "localhost"
    DEFAULT_REDIS_PORT    = ENV["DEFAULT_REDIS_PORT"] || "6379"
    DEFAULT_REDIS_URLS    = ["redis://#{DEFAULT_REDIS_HOST}:#{DEFAULT_REDIS_PORT}"].freeze
    # redlock-rb's defaults: 3 retries 200 ms apart plus up to 50 ms of jitter,
    # 0.1 s per node.
    DEFAULT_RETRY_COUNT   = 3
    DEFAULT_RETRY_DELAY   = 200 # ms
    DEFAULT_RETRY_JITTER  = 50  # ms
    DEFAULT_REDIS_TIMEOUT = 0.1 # s

    W = Native
    private_constant :W

    # One held lock of this client, found again from its lock-info hash.
    # Every call on handle is made under mutex, after checking closed (a
    # closed handle is freed memory).
    Held = Struct.new(:handle, :resource, :value, :mutex, :watch, :watcher, :closed)
    private_constant :Held

    # servers: redis:// or rediss:// URLs, or client objects that answer #id
    # with one (redis-rb's Redis#id). Options as redlock-rb's (:retry_count,
    # :retry_delay, :retry_jitter, :redis_timeout), plus this library's
    # :fencing (mint a fencing token per acquisition, in the hash as
    # :fencing_token) and :key_prefix.
    def initialize(servers = DEFAULT_REDIS_URLS, options = {})
      @urls = Array(servers).map { |s| server_url(s) }
      @fencing = options.fetch(:fencing, false) ? true : false
      o = W::Options.new
      o.retryCount = non_negative(options.fetch(:retry_count, DEFAULT_RETRY_COUNT), :retry_count)
      o.retryDelayMs = retry_delay(options.fetch(:retry_delay, DEFAULT_RETRY_DELAY))
      o.retryJitterMs = non_negative(options.fetch(:retry_jitter, DEFAULT_RETRY_JITTER), :retry_jitter)
      o.nodeTimeoutMs = redis_timeout(options.fetch(:redis_timeout, DEFAULT_REDIS_TIMEOUT))
      o.setFencing(@fencing)
      @key_prefix = options[:key_prefix] && string_arg(options[:key_prefix], :key_prefix)
      o.setKeyPrefix(@key_prefix) if @key_prefix
      @native = native { W::Redlock.new(@urls, o) }
      @pid = Process.pid
      @held = {}
      @held_mutex = Mutex.new
    end

    # The Ruby side of the C options, as given (for tests and docs).
    attr_reader :urls

    # Acquires resource for ttl ms. Returns the lock-info hash
    # {validity:, resource:, value:} (plus :fencing_token with fencing: true),
    # or false when another owner holds it after the retries. Failures that
    # are not contention (a node that refuses the password, unreachable nodes,
    # bad arguments) raise a Redlock::Error subclass, never false.
    #
    # Options: extend: lock_info (extend that lock to ttl; with
    # extend_only_if_locked: true, false if it is no longer held, else it is
    # taken again), auto_extend: true or a max hold in ms (keep extending it
    # until unlock), on_lost: a callable given (lock_info, error) on a Ruby
    # thread when an auto-extended lock is lost, limit: (and permits:, 1 by
    # default) to take permits of a counting semaphore of limit permits
    # instead of a mutex, mode: :read or :write for a side of the read-write
    # lock of that name (readers share it; a writer excludes readers, other
    # writers and the mutex of the same name; docs/ruby.md).
    #
    # With a block: yields the hash or false, unlocks after the block, and
    # returns whether the lock was taken.
    def lock(resource, ttl, options = {})
      check_fork!
      resource = resource_arg(resource)
      ttl = ttl_arg(ttl)
      check_lock_options(options)
      info = if options[:extend]
               extend_lock(resource, ttl, options[:extend], options)
             else
               acquire(resource, ttl, options, raise_on_contention: false)
             end
      return info unless block_given?

      begin
        yield info
        !!info
      ensure
        unlock(info) if info
      end
    end

    # Acquires (raising Redlock::LockError, with the per-node report in
    # #nodes, when not acquired), yields the lock info, unlocks after the
    # block, and returns the block's value. As redlock-rb, it needs a block.
    def lock!(resource, ttl, options = {})
      raise InvalidArgumentError, "No block passed" unless block_given?

      check_fork!
      resource = resource_arg(resource)
      ttl = ttl_arg(ttl)
      check_lock_options(options)
      info = if options[:extend]
               extend_lock(resource, ttl, options[:extend], options) or raise LockError.new(resource)
             else
               acquire(resource, ttl, options, raise_on_contention: true)
             end
      begin
        yield info
      ensure
        unlock(info)
      end
    end

    # A campaigner or observer of the leader election called name
    # (Redlock::Election; no network I/O until a call).
    def election(name)
      check_fork!
      name = resource_arg(name)
      Election.new(native(name) { @native.newElection(name) }, name)
    end

    # Releases the lock of lock_info on every node. true when a majority
    # confirmed it was still ours; false when it was not (expired, lost,
    # already unlocked) or a majority could not confirm (nodes down or slow:
    # the lock then runs out by its TTL). A node that refuses the client
    # (auth, ACL, TLS) raises. The handle is freed either way.
    def unlock(lock_info)
      check_fork!
      held = take_held(lock_info)
      return false unless held

      stop_watcher(held)
      close_held(held)
    end

    # Whether lock_info's lock is still held by this client: acquired, not
    # unlocked, its validity not run out and no extension found it lost. A
    # local check: it asks no node (see docs/ruby.md).
    def valid_lock?(lock_info)
      held = find_held(lock_info)
      return false unless held

      held.mutex.synchronize { !held.closed && held.handle.isHeld }
    end

    # Whether some owner holds resource: its key has a TTL on a majority of
    # the nodes (redlock-rb's check, a PTTL per node, plain redis:// nodes).
    def locked?(resource)
      check_fork!
      resource = resource_arg(resource)
      remaining_ttl(resource) ? true : false
    end

    # The shortest remaining TTL in ms of resource's key across a majority of
    # nodes, or nil if it is not set on a majority (redlock-rb's
    # get_remaining_ttl_for_resource).
    def get_remaining_ttl_for_resource(resource)
      check_fork!
      remaining_ttl(resource_arg(resource))
    end

    # As redlock-rb: the remaining TTL of the lock of lock_info if it is
    # still ours, else nil. Here from the C library's validity (no I/O).
    def get_remaining_ttl_for_lock(lock_info)
      held = find_held(lock_info)
      return nil unless held

      ms = held.mutex.synchronize { !held.closed && held.handle.isHeld ? held.handle.validityMs : 0 }
      ms.positive? ? ms : nil
    end

    # True once an auto-extended lock was lost (see on_lost).
    def lost?(lock_info)
      held = find_held(lock_info)
      return false unless held&.watch

      held.watch.code != 0
    end

    private

    # ---- acquire, extend ----------------------------------------------------

    # wait: REDLOCK_WAIT_DEFAULT for the retries, REDLOCK_WAIT_NONE for one attempt.
    def acquire(resource, ttl, options, raise_on_contention:, wait: W::REDLOCK_WAIT_DEFAULT)
      handle = native(resource) { new_handle(resource, options) }
      begin
        per_call_retries(handle, options)
        handle.acquire(ttl, wait)
      rescue Native::Failure => e
        nodes = node_report(handle)
        handle.close
        # Not acquired, nothing refused: other owners (or, as redlock-rb's
        # validity < 0, a round too slow for the TTL; or no quorum with fewer
        # than a majority of nodes failing, where redlock-rb returns false
        # too). Everything else raises.
        contention = [W::REDLOCK_ENOTACQUIRED, W::REDLOCK_ETIMEDOUT, W::REDLOCK_EEXPIRED].include?(e.code) ||
                     (e.code == W::REDLOCK_ENOQUORUM && failed_nodes(nodes) < @urls.size / 2 + 1)
        return false if contention && !raise_on_contention

        err = Redlock.error_from(e, nodes: nodes, resource: resource)
        err = LockError.new(resource, e.message, code: e.code, nodes: nodes) if contention
        raise err
      rescue Exception
        # An interrupt (Thread#raise) as the acquire returned: release what it may hold.
        begin
          handle.close
        rescue Native::Failure
          nil
        end
        raise
      end
      register(handle, resource, options)
    end

    # redlock-rb's per-call retry_count:, retry_delay:, retry_jitter: become
    # this lock's own C options.
    def per_call_retries(handle, options)
      return unless options.key?(:retry_count) || options.key?(:retry_delay) || options.key?(:retry_jitter)

      lo = handle.getOptions
      lo.retryCount = non_negative(options[:retry_count], :retry_count) if options.key?(:retry_count)
      lo.retryDelayMs = retry_delay(options[:retry_delay]) if options.key?(:retry_delay)
      lo.retryJitterMs = non_negative(options[:retry_jitter], :retry_jitter) if options.key?(:retry_jitter)
      handle.setOptions(lo)
    end

    # A mutex, a side of a read-write lock (mode:), or with limit: a permit of
    # a counting semaphore (permits: of limit: at once; docs/ruby.md).
    def new_handle(resource, options)
      case options[:mode]
      when :read then return @native.newReadLock(resource)
      when :write then return @native.newWriteLock(resource)
      end
      return @native.newLock(resource) unless options.key?(:limit) || options.key?(:permits)

      limit = non_negative(options.fetch(:limit) { raise InvalidArgumentError, "permits: needs limit:" }, :limit)
      @native.newSemaphore(resource, limit, non_negative(options.fetch(:permits, 1), :permits))
    end

    def extend_lock(resource, ttl, lock_info, options)
      raise InvalidArgumentError, "extend: takes a lock-info hash" unless lock_info.is_a?(Hash)
      unless lock_info[:resource] == resource
        raise InvalidArgumentError, "extend: the lock info is for '#{lock_info[:resource]}', not '#{resource}'"
      end

      held = find_held(lock_info)
      if held
        extended = held.mutex.synchronize do
          next false if held.closed

          held.handle.extend(ttl)
          info_for(held)
        rescue Native::Failure => e
          next false if [W::REDLOCK_ELOST, W::REDLOCK_EEXPIRED, W::REDLOCK_ESTATE,
                         W::REDLOCK_ENOTACQUIRED].include?(e.code)
          # C bounds an extension's round by the validity left: nodes that did not
          # answer before the lock ran out say it expired, not that they failed.
          next false if [W::REDLOCK_ENOQUORUM, W::REDLOCK_ETIMEDOUT].include?(e.code) && !held.handle.isHeld

          raise Redlock.error_from(e, nodes: node_report(held.handle), resource: resource)
        end
        return extended if extended

        # The lock is no longer ours: free its handle (what the release says does not matter).
        if (stale = take_held(lock_info))
          stop_watcher(stale)
          begin
            close_held(stale)
          rescue Error
            nil
          end
        end
      end
      return false if options[:extend_only_if_locked]

      # As redlock-rb: an extend: makes one attempt, which takes the lock anew if it is free.
      acquire(resource, ttl, options, raise_on_contention: false, wait: W::REDLOCK_WAIT_NONE)
    end

    def register(handle, resource, options)
      held = Held.new(handle, resource, SecureRandom.uuid, Mutex.new, nil, nil, false)
      info = info_for(held)
      begin
        start_auto_extend(held, info, options) if options[:auto_extend]
      rescue Exception # rubocop:disable Lint/RescueException
        handle.close rescue nil # rubocop:disable Style/RescueModifier
        raise
      end
      stale = @held_mutex.synchronize do
        @held[held.value] = held
        prune
      end
      stale.each { |h| h.mutex.synchronize { h.handle.close unless h.closed; h.closed = true } rescue nil }
      info
    end

    def info_for(held)
      info = { validity: held.handle.validityMs, resource: held.resource, value: held.value }
      info[:fencing_token] = held.handle.fencingToken if @fencing
      info
    end

    # Auto-extension, with a Ruby thread that waits (without the GVL) for the
    # C library's lost notice and calls on_lost.
    def start_auto_extend(held, info, options)
      max_hold = options[:auto_extend] == true ? 0 : non_negative(options[:auto_extend], :auto_extend)
      on_lost = options[:on_lost]
      held.watch = W::LostWatch.new
      native(held.resource) { held.handle.autoExtendWatch(max_hold, held.watch) } # not yet shared
      watch = held.watch
      held.watcher = Thread.new do
        Thread.current.name = "redlock-lost"
        Thread.current.report_on_exception = true
        loop do
          code = watch.wait(1000)
          if code != 0
            on_lost&.call(info, Redlock.error_from(LostNotice.new(code, "#{Redlock.error_name(code)}: #{watch.message}"),
                                                   resource: held.resource))
            break
          end
          break if watch.ended
        end
      end
    end

    LostNotice = Struct.new(:code, :message)
    private_constant :LostNotice

    # What an unlock round that went wrong means: not a refusal, so false.
    UNCONFIRMED = [W::REDLOCK_ELOST, W::REDLOCK_EEXPIRED, W::REDLOCK_ESTATE, W::REDLOCK_ENOQUORUM,
                   W::REDLOCK_ETIMEDOUT, W::REDLOCK_EIO, W::REDLOCK_EUNREACHABLE].freeze
    private_constant :UNCONFIRMED

    # Releases and frees held's handle, once: true, false (UNCONFIRMED), or raises a refusal.
    def close_held(held)
      held.mutex.synchronize do
        next false if held.closed

        held.closed = true
        held.handle.close # frees the handle even when it raises
        true
      rescue Native::Failure => e
        next false if UNCONFIRMED.include?(e.code)

        raise Redlock.error_from(e, resource: held.resource)
      end
    end

    def stop_watcher(held)
      return unless held.watcher

      held.mutex.synchronize { held.handle.stopAutoExtend unless held.closed } # ends the watch: the thread returns
      held.watcher.join(5) unless held.watcher == Thread.current
    end

    # ---- the registry of held locks ----------------------------------------

    def find_held(lock_info)
      return nil unless lock_info.is_a?(Hash)

      @held_mutex.synchronize { @held[lock_info[:value]] }.then do |h|
        h if h && h.resource == lock_info[:resource]
      end
    end

    def take_held(lock_info)
      return nil unless lock_info.is_a?(Hash)

      @held_mutex.synchronize do
        h = @held[lock_info[:value]]
        @held.delete(lock_info[:value]) if h && h.resource == lock_info[:resource]
      end
    end

    # Forgets locks whose validity ran out without an unlock, and returns them
    # for the caller to free outside @held_mutex (nothing is sent). Locks under
    # auto-extension stay until unlock, so lost? can tell of their loss.
    # Under @held_mutex; is_held is safe while another thread uses the handle.
    def prune
      stale = @held.values.reject { |h| h.watch || h.closed || h.handle.isHeld }
      stale.each { |h| @held.delete(h.value) }
      stale
    end

    # ---- the per-node report -------------------------------------------------

    def failed_nodes(nodes)
      nodes.count { |n| %i[error timeout down].include?(n[:outcome]) }
    end

    def node_report(handle)
      (0...@urls.size).map do |i|
        { node: i, url: @native.nodeUrl(i), outcome: NODE_OUTCOMES.fetch(handle.nodeOutcome(i), :unknown),
          code: handle.nodeCode(i).then { |c| c.zero? ? nil : Redlock.error_name(c) },
          message: handle.nodeMessage(i), rtt_us: handle.nodeRttUs(i) }
      end
    end

    # ---- locked?: PTTL on each node ------------------------------------------

    def remaining_ttl(resource)
      key = (@key_prefix || "") + resource
      ttls = @urls.map { |u| pttl(u, key) }.compact.select(&:positive?)
      quorum = @urls.size / 2 + 1
      ttls.size >= quorum ? ttls.min : nil
    end

    # PTTL of key on the node at url, or nil when it cannot be read. Plain
    # redis:// only: a raw RESP exchange, bounded by the client's timeout.
    def pttl(url, key)
      u = URI(url)
      raise NotSupportedError, "locked? reads plain redis:// nodes only, not #{u.scheme}://" unless u.scheme == "redis"

      Socket.tcp(u.host, u.port || 6379, connect_timeout: 1) do |s|
        cmds = []
        cmds << ["AUTH", *[u.user, u.password].compact.map { |x| URI.decode_www_form_component(x) }] if u.password
        db = u.path.to_s.delete("/")
        cmds << ["SELECT", db] unless db.empty?
        cmds << ["PTTL", key]
        s.write(cmds.map { |c| "*#{c.size}\r\n" + c.map { |a| "$#{a.bytesize}\r\n#{a}\r\n" }.join }.join)
        replies = cmds.map { resp_line(s) }
        replies.last.start_with?(":") ? Integer(replies.last[1..]) : nil
      end
    rescue SystemCallError, IOError, SocketError, ArgumentError
      nil
    end

    def resp_line(sock)
      raise IOError, "node timeout" unless sock.wait_readable(1)

      sock.gets("\r\n")&.chomp("\r\n") or raise IOError, "closed"
    end

    # ---- arguments -------------------------------------------------------------

    def native(resource = nil)
      yield
    rescue Native::Failure => e
      raise Redlock.error_from(e, resource: resource)
    end

    def check_fork!
      return if Process.pid == @pid

      raise NotSupportedError, "this Redlock::Client was made in process #{@pid}: make a new one after fork"
    end

    def server_url(server)
      return server if server.is_a?(String)
      return server_url(server[:url]) if server.is_a?(Hash) && server[:url] # redis-client's config hash
      return server.id if server.respond_to?(:id) && server.id.is_a?(String) && server.id.include?("://")

      raise InvalidArgumentError, "a server is a redis:// URL or a client whose #id is one, not #{server.class}"
    end

    def resource_arg(resource)
      resource = resource.to_s if resource.is_a?(Symbol)
      string_arg(resource, :resource)
    end

    def string_arg(value, what)
      raise InvalidArgumentError, "#{what} must be a String, not #{value.class}" unless value.is_a?(String)
      raise InvalidArgumentError, "#{what} contains a NUL byte" if value.include?("\0")

      value
    end

    # ttl in ms, as redlock-rb; C refuses 0 and more than a day with its reason.
    def ttl_arg(ttl)
      raise InvalidArgumentError, "ttl must be a number of ms, not #{ttl.class}" unless ttl.is_a?(Numeric)
      raise InvalidArgumentError, "ttl must be a positive number of ms, not #{ttl}" unless ttl.positive?
      raise InvalidArgumentError, "ttl #{ttl} ms is more than a day (#{W::REDLOCK_MAX_TTL_MS} ms)" if ttl > W::REDLOCK_MAX_TTL_MS

      ttl.ceil
    end

    # What can be refused before anything is taken.
    def check_lock_options(options)
      raise InvalidArgumentError, "options must be a Hash, not #{options.class}" unless options.is_a?(Hash)

      if options.key?(:mode)
        unless %i[read write].include?(options[:mode])
          raise InvalidArgumentError, "mode: must be :read or :write, not #{options[:mode].inspect}"
        end
        if options.key?(:limit) || options.key?(:permits)
          raise InvalidArgumentError, "mode: and limit: do not combine (a read-write lock or a semaphore)"
        end
      end
      on_lost = options[:on_lost]
      return if on_lost.nil?
      raise InvalidArgumentError, "on_lost: must respond to #call" unless on_lost.respond_to?(:call)
      raise InvalidArgumentError, "on_lost: needs auto_extend: (only an auto-extended lock is watched)" unless
        options[:auto_extend]
    end

    def non_negative(value, what)
      unless value.is_a?(Integer) && value >= 0 && value <= 0xFFFF_FFFF
        raise InvalidArgumentError, "#{what} must be a non-negative Integer, not #{value.inspect}"
      end

      value
    end

    def retry_delay(value)
      if value.respond_to?(:call)
        raise NotSupportedError, "retry_delay as a Proc is not supported: the C library waits between attempts " \
                                 "(give a number of ms)"
      end
      non_negative(value, :retry_delay)
    end

    # redlock-rb's redis_timeout, in seconds, is the per-node deadline of a round.
    def redis_timeout(seconds)
      unless seconds.is_a?(Numeric) && seconds.positive? && seconds * 1000 <= W::REDLOCK_MAX_NODE_TIMEOUT_MS
        raise InvalidArgumentError, "redis_timeout must be seconds in (0, #{W::REDLOCK_MAX_NODE_TIMEOUT_MS / 1000}], " \
                                    "not #{seconds.inspect}"
      end

      (seconds * 1000).ceil
    end
  end
end
