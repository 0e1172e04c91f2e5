#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Fails if the shared library exports any dynamic symbol not named redlock_*.
set -eu
lib=$1
all=$(nm -D --defined-only "$lib" | awk '{print $3}')
bad=$(printf '%s\n' "$all" | grep -v '^redlock_' | grep -v '^$' || true)
count=$(printf '%s\n' "$all" | grep -c '^redlock_' || true)
if [ -n "$bad" ]; then
  echo "exported symbols outside redlock_*:"; echo "$bad"; exit 1
fi
[ "$count" -gt 10 ] || { echo "only $count redlock_* symbols exported"; exit 1; }
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
case "$soname" in libredlock.so.[0-9]*) ;; *) echo "bad SONAME '$soname'"; exit 1 ;; esac
echo "ok: $count redlock_* symbols, SONAME $soname"
