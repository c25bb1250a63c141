#!/usr/bin/env bash
# Writes benchmarks/runtime/plans/*.json: the side-by-side configurations
# planned by swift-plan on the build machine (the GPU machine has no MLIR),
# each with swift-plan's predicted peak, step time and tokens/s, which
# side_by_side.sh then prints next to what swift-run measures.
#   bash benchmarks/runtime/make_plans.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
JOBS=benchmarks/runtime/plans/jobs
python3 benchmarks/runtime/side_by_side.py jobs "$JOBS" > /dev/null
for job in "$JOBS"/*.yaml; do
  name=$(basename "$job" .yaml)
  "$BUILD/bin/swift-plan" "$job" --emit plan -o "benchmarks/runtime/plans/$name.json"
  python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['predicted']; print(f'{sys.argv[2]:34} predicted peak {p[\"peak_memory_bytes\"]/2**30:6.2f} GiB, {p[\"tokens_per_second\"]:9,.0f} tokens/s')" "benchmarks/runtime/plans/$name.json" "$name"
done
