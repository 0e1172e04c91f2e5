# SPDX-License-Identifier: BSD-3-Clause
# libredlock for Ruby: redlock-rb's API (Redlock::Client) over the C library
# libredlock, through the SWIG extension redlock/native. See docs/ruby.md.
require "redlock/version"
require "redlock/errors"
require "redlock/client"
require "redlock/election"
