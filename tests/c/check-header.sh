#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Compiles each public header alone, as C99 and as C++ (11 and 20), with and
# without its experimental part, with warnings as errors; each use initializes
# a redlock_options with REDLOCK_OPTIONS_INIT (designated in C, positional in
# C++) and checks that it carries the defaults.
set -eu
inc=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
use='redlock_options o = REDLOCK_OPTIONS_INIT;
  return o.version == REDLOCK_OPTIONS_VERSION && o.retry_count == REDLOCK_DEFAULT_RETRY_COUNT &&
         o.retry_delay_ms == 0 && o.node_timeout_ms == REDLOCK_DEFAULT_NODE_TIMEOUT_MS &&
         o.connect_timeout_ms == REDLOCK_DEFAULT_CONNECT_TIMEOUT_MS && o.key_prefix == NULL &&
         o.drift_factor == REDLOCK_DEFAULT_DRIFT_FACTOR && o.quarantine_ttl_ms == 0 ? 0 : 1;'
cxx=$(command -v c++ || true)
for h in "$inc"/*.h; do
  name=$(basename "$h")
  for exp in "" "-DREDLOCK_EXPERIMENTAL"; do
    printf '#include "%s"\nint main(void) {\n  %s\n}\n' "$name" "$use" > "$tmp/t.c"
    cc -std=c99 -Wall -Wextra -pedantic -Werror $exp -I"$inc" "$tmp/t.c" -o "$tmp/t"
    "$tmp/t" || { echo "FAIL: $name as C99 $exp: REDLOCK_OPTIONS_INIT is not the defaults"; exit 1; }
    if [ -z "$cxx" ]; then
      echo "SKIP C++: no c++ compiler"; exit 77
    fi
    cp "$tmp/t.c" "$tmp/t.cpp"
    for std in c++11 c++20; do
      c++ -std=$std -Wall -Wextra -pedantic -Werror $exp -I"$inc" "$tmp/t.cpp" -o "$tmp/t"
      "$tmp/t" || { echo "FAIL: $name as $std $exp: REDLOCK_OPTIONS_INIT is not the defaults"; exit 1; }
    done
    echo "ok: $name as C99, C++11 and C++20${exp:+ with $exp}"
  done
done
