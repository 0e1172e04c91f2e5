#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs the build into a temporary prefix, then builds and RUNS consumers as
# downstream projects write them: through find_package(redlock CONFIG), through
# pkg-config (found at run time by LD_LIBRARY_PATH, or by an rpath), and
# statically. With the node harness at hand, the consumers take a lock on 3
# local nodes; otherwise they only load the library. Also checks that the man
# pages are installed when the build made them.
set -eu
build=$1 src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
consumer=$src/tests/c/consumer
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

# Runs a consumer on local nodes when redis-server and python3 are there.
run() {
  if command -v python3 >/dev/null && command -v redis-server >/dev/null; then
    python3 "$src/tests/harness/nodes.py" exec --count 3 --kind redis -- "$@"
  else
    echo "check-install: no redis-server/python3: running without nodes"
    "$@"
  fi
}

cmake -S "$consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
so=$(find "$tmp/prefix" -name 'libredlock.so' | head -n1)
# CMake gives its build tree an rpath; an installed copy would not have one.
LD_LIBRARY_PATH=$(dirname "$so") run "$tmp/consumer/consumer"

pc=$(dirname "$(find "$tmp/prefix" -name redlock.pc)")
libdir=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir redlock)
# shellcheck disable=SC2046
cc -o "$tmp/pc-consumer" "$consumer/main.c" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs redlock)
# Outside the loader's directories the program needs help to find the library
# (docs/c-api.md, "Installing under a prefix"): LD_LIBRARY_PATH ...
LD_LIBRARY_PATH=$libdir run "$tmp/pc-consumer"
# ... or an rpath, which needs nothing at run time, and must win over any
# libredlock installed system-wide.
# shellcheck disable=SC2046
cc -o "$tmp/pc-rpath" "$consumer/main.c" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs redlock) -Wl,-rpath,"$libdir"
if ! ldd "$tmp/pc-rpath" | grep -q "libredlock.so.* => $libdir/"; then
  echo "check-install: the rpath consumer does not load the prefix's libredlock:" >&2
  ldd "$tmp/pc-rpath" | grep libredlock >&2; exit 1
fi
run "$tmp/pc-rpath"

# static linking through pkg-config --static pulls hiredis and libcrypto
# shellcheck disable=SC2046
cc -o "$tmp/pc-static" "$consumer/main.c" \
   $(PKG_CONFIG_PATH=$pc pkg-config --cflags redlock) "$libdir/libredlock.a" \
   $(PKG_CONFIG_PATH=$pc pkg-config --static --libs-only-l redlock | sed 's/-lredlock//')
run "$tmp/pc-static"

# The man pages, when the build generated them (cmake/install-extras.cmake).
if [ -f "$build/man/stamp" ]; then
  man=$tmp/prefix/share/man
  missing=
  for f in man1/redlock.1 man3/libredlock.3; do
    [ -f "$man/$f" ] || missing="$missing $f"
  done
  for fn in $(python3 "$src/tools/man-gen" --list | cut -f1); do
    [ -f "$man/man3/$fn.3" ] || missing="$missing man3/$fn.3"
  done
  if [ -n "$missing" ]; then
    echo "check-install: man pages not installed:$missing" >&2; exit 1
  fi
  echo "ok: man pages installed"
fi
echo "ok: CMake package, pkg-config (LD_LIBRARY_PATH and rpath) and static consumers build and run"
