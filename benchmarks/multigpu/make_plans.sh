#!/usr/bin/env bash
# Writes benchmarks/multigpu/plans/*.json: every (case, world, ZeRO stage) of
# cases.py planned by swift-plan on the build machine, with its predicted
# peak and step time, which run.sh then compares with what swift-run measures.
#   bash benchmarks/multigpu/make_plans.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
JOBS=benchmarks/multigpu/plans/jobs
rm -rf "$JOBS" && python3 benchmarks/multigpu/cases.py jobs "$JOBS" > /dev/null
for job in "$JOBS"/*.yaml; do
  name=$(basename "$job" .yaml)
  "$BUILD/bin/swift-plan" "$job" --emit plan -o "benchmarks/multigpu/plans/$name.json"
done
ls benchmarks/multigpu/plans/*.json | wc -l
