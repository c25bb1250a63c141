#!/usr/bin/env bash
# Configures (once) and builds the compiler, the runtime and the tests into
# build/ (override with BUILD_DIR). Extra arguments go to the first cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir "$@"
fi
ninja -C "$BUILD_DIR"
