# SPDX-License-Identifier: BSD-3-Clause
# The libredlock gem: redlock-rb's API over libredlock (docs/ruby.md). Built by
# `cmake --build <build> --target ruby-gem` (-DREDLOCK_RUBY=ON), which puts the
# self-contained extension lib/redlock/native.so beside this file's copy and
# runs `gem build` there: a platform gem for this machine's platform and Ruby
# version, installable offline with no compiler and no hiredis.
native = File.join(__dir__, "lib", "redlock", "native.so")
unless File.exist?(native)
  raise "libredlock.gemspec: no lib/redlock/native.so here; build the gem with " \
        "`cmake --build <build> --target ruby-gem` (-DREDLOCK_RUBY=ON), see docs/ruby.md"
end

Gem::Specification.new do |s|
  s.name        = "libredlock"
  s.version     = ENV.fetch("REDLOCK_GEM_VERSION", "0.1.0")
  s.summary     = "Redlock over N Redis/Valkey nodes, redlock-rb's API on the libredlock C library"
  s.description = "A drop-in for redlock-rb's Redlock::Client (lock, lock!, unlock, extend, locked?, " \
                  "valid_lock?) backed by libredlock: nodes asked in parallel, fencing tokens, " \
                  "auto-extension with a lost-lock callback, waits that release the GVL."
  s.license     = "BSD-3-Clause"
  s.authors     = ["The redlock authors"]
  s.files       = Dir.chdir(__dir__) { Dir["lib/**/*.rb"] + ["lib/redlock/native.so", "LICENSE"] }
  s.require_paths = ["lib"]
  s.platform    = Gem::Platform.local
  # The extension is built against this Ruby's C API.
  abi = ENV.fetch("REDLOCK_GEM_RUBY_ABI", RUBY_VERSION[/\A\d+\.\d+/])
  s.required_ruby_version = "~> #{abi}.0"
end
