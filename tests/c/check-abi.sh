#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Compares the built library's ABI with the stored baseline (abidiff, from
# Debian's abigail-tools); fails on an incompatible change. Additions pass.
# Refresh the baseline after an intended change with: tools/abi-baseline
set -u
lib=$1 base=$3
if ! command -v abidiff >/dev/null 2>&1; then
  echo "abidiff not installed (abigail-tools): cannot check the ABI"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
abidw --no-show-locs --no-comp-dir-path --no-elf-needed --type-id-style hash --no-corpus-path "$lib" > "$tmp/current.abi" || exit 1
abidiff --suppressions "$(dirname "$base")/suppressions.txt" "$base" "$tmp/current.abi" > "$tmp/diff"
rc=$?
cat "$tmp/diff"
# abidiff exit bits: 1 error, 2 usage, 4 change, 8 incompatible change.
# Bit 4 alone covers both additions (compatible) and changed types behind
# public functions (not): only additions may pass.
if [ $((rc & 11)) -ne 0 ]; then
  echo "ABI check failed (abidiff exit $rc)"; exit 1
fi
if [ $((rc & 4)) -ne 0 ] && grep -qE '[1-9][0-9]* (Removed|Changed)' "$tmp/diff"; then
  echo "ABI check failed: a public function or type changed; bump the SONAME if intended"; exit 1
fi
echo "ok: ABI compatible with $(basename "$base")"
