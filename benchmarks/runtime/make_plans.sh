#!/usr/bin/env bash
# Writes benchmarks/runtime/plans/*.json: the side-by-side configurations
# planned by swift-plan on the build machine (the GPU machine has no MLIR),
# each with swift-plan's predicted peak, step time and tokens/s, which
# side_by_side.sh then prints next to what swift-run measures.
#   bash benchmarks/runtime/make_plans.sh [build-dir [NAME-SUBSTRING...]]
# With substrings, only the configurations whose name holds one of them are
# (re)planned. A job swift-plan refuses (e.g. a precision this swift-plan does
# not know yet) is reported and skipped, its plan left as it was; the exit
# status is then 1, after every other job was planned.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))
JOBS=benchmarks/runtime/plans/jobs
python3 benchmarks/runtime/side_by_side.py jobs "$JOBS" > /dev/null || exit 1
failed=()
for job in "$JOBS"/*.yaml; do
  name=$(basename "$job" .yaml)
  if [[ $# -gt 0 ]]; then
    hit=
    for sub in "$@"; do [[ $name == *"$sub"* ]] && hit=1; done
    [[ -n $hit ]] || continue
  fi
  tmp=$(mktemp)
  if ! "$BUILD/bin/swift-plan" "$job" --emit plan -o "$tmp"; then
    echo "$name: swift-plan refused the job: plan not written" >&2
    failed+=("$name"); rm -f "$tmp"; continue
  fi
  chmod 644 "$tmp" && mv "$tmp" "benchmarks/runtime/plans/$name.json"
  python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['predicted']; print(f'{sys.argv[2]:34} predicted peak {p[\"peak_memory_bytes\"]/2**30:6.2f} GiB, {p[\"tokens_per_second\"]:9,.0f} tokens/s')" "benchmarks/runtime/plans/$name.json" "$name"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "not planned: ${failed[*]}" >&2
  exit 1
fi
