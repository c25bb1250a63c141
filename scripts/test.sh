#!/usr/bin/env bash
# Builds everything and runs the whole test suite: lit (dialect, passes,
# importer, tools) then ctest (unit and multi-rank runtime tests). Exits
# non-zero if either fails; ctest's summary is the last thing printed.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
bash scripts/build.sh || exit 1

status=0
echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test" || status=1
echo "== ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" || status=1
exit $status
