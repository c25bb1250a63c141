#!/usr/bin/env bash
# The whole CPU test suite (lit + ctest, as scripts/test.sh) built with
# AddressSanitizer (leaks included) and UBSan, into build-asan:
#   bash scripts/sanitize.sh
# Every report fails the test that caused it (UBSan aborts on its first).
# Third-party libraries are not instrumented; test/sanitize.supp names the
# few of their own leaks LeakSanitizer would otherwise blame on us. Slow:
# about 3x the time of scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-asan}
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
bash scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_C_FLAGS="$FLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" || exit 1
# allow_user_poisoning=0: LLVM's headers poison and unpoison their allocators'
# memory when compiled with ASan, but the LLVM/MLIR libraries they pair with
# are Debian's uninstrumented builds, so the two disagree (use-after-poison
# inside mlir::Dialect::addType).
export ASAN_OPTIONS=detect_odr_violation=0:abort_on_error=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}
export LSAN_OPTIONS=suppressions=$PWD/test/sanitize.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
echo "== lit (ASan + UBSan)"
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test" || status=1
echo "== ctest (ASan + UBSan)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" -E '^fuzz\.' || status=1
exit $status
