# SPDX-License-Identifier: BSD-3-Clause
require "minitest"
require "socket"
require "redlock"

# The harness's nodes and its control socket (tests/harness/README.md).
module Harness
  module_function

  def nodes
    urls = ENV["REDLOCK_TEST_NODES"].to_s.split(",")
    raise "REDLOCK_TEST_NODES is not set: run the tests under tests/harness/nodes.py exec" if urls.size < 5

    urls
  end

  # One control command (RESP over the unix socket); returns the reply, raises on an error reply.
  def ctl(*args)
    path = ENV["REDLOCK_HARNESS"] or raise "REDLOCK_HARNESS is not set: run under tests/harness/nodes.py exec"
    UNIXSocket.open(path) do |s|
      s.write("*#{args.size}\r\n" + args.map { |a| a = a.to_s; "$#{a.bytesize}\r\n#{a}\r\n" }.join)
      read_reply(s)
    end
  end

  # One command straight to node i, with AUTH password first if given.
  def node_cmd(i, *args, password: nil)
    host, port = nodes[i].match(%r{\Aredis://([^:/]+):(\d+)}).captures
    Socket.tcp(host, Integer(port), connect_timeout: 2) do |s|
      if password
        s.write(resp("AUTH", password))
        read_reply(s)
      end
      s.write(resp(*args))
      read_reply(s)
    end
  end

  def resp(*args)
    "*#{args.size}\r\n" + args.map { |a| a = a.to_s; "$#{a.bytesize}\r\n#{a}\r\n" }.join
  end

  def read_reply(s)
    raise "no reply in 10 s" unless s.wait_readable(10)

    line = s.gets("\r\n").chomp("\r\n")
    case line[0]
    when "+" then line[1..]
    when "-" then raise "error reply: #{line[1..]}"
    when ":" then Integer(line[1..])
    when "$"
      n = Integer(line[1..])
      n.negative? ? nil : s.read(n + 2)[0, n]
    when "*" then Array.new(Integer(line[1..])) { read_reply(s) }
    else raise "bad reply #{line.inspect}"
    end
  end
end

class RedlockTestCase < Minitest::Test
  def nodes
    Harness.nodes
  end

  # A resource name unique to the test.
  def res(suffix = "")
    "rb-#{name}-#{suffix}-#{Process.pid}"
  end

  def monotonic
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Waits up to seconds for the block to be true.
  def eventually(seconds)
    deadline = monotonic + seconds
    until (v = yield)
      return v if monotonic > deadline

      sleep 0.02
    end
    v
  end
end
