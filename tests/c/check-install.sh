#!/bin/sh
# Installs the build into a temporary prefix, then builds and runs a consumer
# through find_package(redlock CONFIG) and another through pkg-config.
set -eu
build=$1 src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/c/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH=$(dirname "$(find "$tmp/prefix" -name 'libredlock.so' | head -n1)") "$tmp/consumer/consumer"
pc=$(dirname "$(find "$tmp/prefix" -name redlock.pc)")
libdir=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir redlock)
# shellcheck disable=SC2046
cc -o "$tmp/pc-consumer" "$src/tests/c/consumer/main.c" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs redlock)
LD_LIBRARY_PATH=$libdir "$tmp/pc-consumer"
# static linking through pkg-config --static pulls hiredis and libcrypto
cc -o "$tmp/pc-static" "$src/tests/c/consumer/main.c" \
   $(PKG_CONFIG_PATH=$pc pkg-config --cflags redlock) "$libdir/libredlock.a" \
   $(PKG_CONFIG_PATH=$pc pkg-config --static --libs-only-l redlock | sed 's/-lredlock//')
"$tmp/pc-static"
echo "ok: CMake package, pkg-config and static consumers build and run"
