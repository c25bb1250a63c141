#!/usr/bin/env bash
# Builds swift-run and swift-kernel-check for the GPU machine into build-gpu
# (runtime only, against python3's LibTorch, sm_90; incremental when
# build-gpu is there); the benchmark scripts call it first, so they never
# run a binary older than the tree. Logs go to LOGDIR/cmake.log and build.log;
# on failure the errors are printed and the exit status is 1.
#   bash benchmarks/build_gpu.sh LOGDIR
set -uo pipefail
LOGDIR=${1:?LOGDIR}
cd "$(dirname "$0")/.."
mkdir -p "$LOGDIR"
start=$(date +%s)
# The GPU machine has ICU's libraries but not its headers (and no network):
# without ICU, swift-run reads token ids only. .cache/icu-static.tar.xz
# (carry it; made by benchmarks/pack_icu.sh on a machine with libicu-dev)
# holds ICU's headers and static libraries, linked into swift-run.
ICU=()
if [ ! -e /usr/include/unicode/uversion.h ] && [ -f .cache/icu-static.tar.xz ]; then
  mkdir -p build-gpu/icu && tar -C build-gpu/icu -xJf .cache/icu-static.tar.xz &&
    ICU=(-DICU_ROOT="$PWD/build-gpu/icu")
fi
cmake -G Ninja -S . -B build-gpu -DSWIFT_BUILD_COMPILER=OFF -DSWIFT_BUILD_TESTS=OFF "${ICU[@]}" \
  -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
  -DCMAKE_CUDA_ARCHITECTURES=90 > "$LOGDIR/cmake.log" 2>&1 &&
  ninja -C build-gpu swift-run swift-kernel-check > "$LOGDIR/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$LOGDIR/build.log" | head -60; tail -20 "$LOGDIR/cmake.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
