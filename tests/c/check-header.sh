#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Compiles each public header alone, as C99 and as C++, with warnings as errors.
set -eu
inc=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for h in "$inc"/*.h; do
  name=$(basename "$h")
  printf '#include "%s"\nint main(void) { return 0; }\n' "$name" > "$tmp/t.c"
  cc -std=c99 -Wall -Wextra -pedantic -Werror -I"$inc" -c "$tmp/t.c" -o "$tmp/t.o"
  printf '#include "%s"\nint main() { return 0; }\n' "$name" > "$tmp/t.cpp"
  if command -v c++ >/dev/null 2>&1; then
    c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I"$inc" -c "$tmp/t.cpp" -o "$tmp/t.o"
  else
    echo "SKIP C++: no c++ compiler"; exit 77
  fi
  echo "ok: $name as C99 and C++11"
done
