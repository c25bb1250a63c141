#!/usr/bin/env bash
# JSONL data on CUDA (device machine), after h200.sh built build-gpu: the
# fused kernels against their op chains, then packed (masked attention,
# per-sample positions), padded and synthetic runs of a tiny model in fp32
# and bf16-mixed. Packed and padded losses should agree with the CPU runs of
# test/Runtime/DataTest.cpp's model.
# Usage (repo root, on the device): benchmarks/runtime/data_check/run.sh
set -u
D=benchmarks/runtime/data_check
ninja -C build-gpu swift-kernel-check >/dev/null && build-gpu/bin/swift-kernel-check 2>&1 | tail -12
R=build-gpu/bin/swift-run
for prec in fp32 bf16-mixed; do
  echo "== $prec packed"; $R $D/packed-$prec.json --steps 3 --data $D/p.jsonl --device cuda | grep step
  echo "== $prec padded"; $R $D/padded-$prec.json --steps 3 --data $D/p.jsonl --device cuda | grep step
  echo "== $prec synthetic"; $R $D/packed-$prec.json --steps 3 --device cuda | grep step
done
