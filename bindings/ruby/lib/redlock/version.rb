# SPDX-License-Identifier: BSD-3-Clause
module Redlock
  # The gem's version, the C library's (c/include/redlock.h).
  VERSION = "0.1.0"
end
