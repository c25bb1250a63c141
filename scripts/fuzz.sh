#!/usr/bin/env bash
# Fuzzes the readers that take user input with libFuzzer, AddressSanitizer
# (leaks included) and UBSan: the job reader (YAML with --set overrides), the
# HF config.json reader, the plan reader and validator, and swift-run's
# torch-free readers: safetensors headers and index files, peft adapter
# configs, JSONL data lines, checkpoint manifests, HF tokenizer.json files,
# the text the real tokenizers encode, chat templates (Jinja: parser
# and renderer) and dataset lines in users' formats (test/Fuzz).
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]     (default 60 s each, all)
#   RUNS=10000000 bash scripts/fuzz.sh 0 FuzzPlan   (a campaign: N executions)
#   (FUZZ_MAX_LEN caps an input's bytes, default 65536, FuzzJsonl's,
#   FuzzTokenizer's, FuzzChatTemplate's and FuzzSampleEncoder's 16384; FUZZ_RSS_LIMIT_MB the
#   process's RSS, default 2048; FUZZ_CHUNK the executions per process; FUZZ_TIMEOUT the seconds one
#   input may take, default 2: a campaign on a loaded machine wants more)
#   bash scripts/fuzz.sh --build-only   (FUZZ_NO_BUILD=1 then skips the build:
#                                        ctest's fuzz.* tests do both)
#
# Builds build-fuzz with clang-22 (apt: clang-22 libclang-rt-22-dev), seeds
# each target's corpus (build-fuzz/corpus/TARGET, kept between runs) from
# the repository's examples, tests and benchmark plans, replays the
# reproducers of past findings (test/Fuzz/regressions/TARGET), then fuzzes.
# Fails on any crash, leak, sanitizer report, input that takes over 2 s or
# a refusal without a message; the input is saved as
# build-fuzz/artifacts/TARGET-*. Keep it as a regression reproducer once
# fixed.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_ONLY=0
[ "${1:-}" = --build-only ] && BUILD_ONLY=1 && shift
SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(FuzzJob FuzzHFConfig FuzzPlan FuzzSafeTensorsHeader
                               FuzzSafeTensorsIndex FuzzAdapterConfig FuzzJsonl
                               FuzzManifest FuzzTokenizer FuzzChatTemplate
                               FuzzSampleEncoder)
BUILD=build-fuzz

if [ -z "${FUZZ_NO_BUILD:-}" ]; then
mkdir -p "$BUILD"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang-22 \
    -DCMAKE_CXX_COMPILER=clang++-22 -DSWIFT_BUILD_COMPILER=OFF \
    -DSWIFT_BUILD_RUNTIME=OFF -DSWIFT_BUILD_TESTS=OFF \
    -DSWIFT_BUILD_FUZZERS=ON > "$BUILD/cmake.log" 2>&1 ||
    { cat "$BUILD/cmake.log"; exit 1; }
fi
ninja -C "$BUILD" > "$BUILD/ninja.log" 2>&1 || { tail -40 "$BUILD/ninja.log"; exit 1; }
fi
((BUILD_ONLY)) && exit 0

seeds() { # the repository's own inputs of each kind
  case $1 in
  FuzzJob) git ls-files '*.yaml' ;;
  FuzzHFConfig) git ls-files '*config.json' ;;
  FuzzPlan) git ls-files '*.json' | grep -E 'plans?/|plan' | grep -v config.json ;;
  FuzzSafeTensorsHeader) git ls-files '*.safetensors' ;;
  FuzzSafeTensorsIndex) git ls-files '*.safetensors.index.json' ;;
  FuzzAdapterConfig) git ls-files '*adapter_config.json' ;;
  FuzzJsonl) git ls-files '*.jsonl' | grep -v calibration/ ;; # SFT lines
  FuzzManifest) git ls-files 'test/Fuzz/seeds/FuzzManifest/*' ;;
  FuzzTokenizer) git ls-files 'test/Fuzz/seeds/FuzzTokenizer/*' ;; # mode byte + input
  FuzzChatTemplate) # the real templates (scripts/fetch_tokenizers.sh), ours
    ls .cache/tokenizers/*/tokenizer_config.json 2>/dev/null
    git ls-files 'test/Fuzz/seeds/FuzzChatTemplate/*' 'test/data/chat/*.jinja' ;;
  FuzzSampleEncoder) git ls-files 'test/Fuzz/seeds/FuzzSampleEncoder/*' ;; # dataset lines
  esac
}

maxLen() { # TARGET: the bytes of an input (FUZZ_MAX_LEN, else the target's)
  case $1 in
  FuzzJsonl) echo "${FUZZ_MAX_LEN:-16384}" ;; # a few lines, not a file
  FuzzTokenizer) echo "${FUZZ_MAX_LEN:-16384}" ;; # a small tokenizer.json, a text
  FuzzChatTemplate) echo "${FUZZ_MAX_LEN:-16384}" ;; # real ones are 1-5 KB
  FuzzSampleEncoder) echo "${FUZZ_MAX_LEN:-16384}" ;; # a few dataset lines
  *) echo "${FUZZ_MAX_LEN:-65536}" ;;
  esac
}

seedBytes() { # TARGET FILE: the input a repository file makes
  case $1 in
  FuzzSafeTensorsHeader) # its input: the data's size (8 bytes), the header
    python3 -c 'import struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
sys.stdout.buffer.write(struct.pack("<Q", len(b) - 8 - n) + b[8:8 + n])' "$2" ;;
  FuzzChatTemplate) # a tokenizer_config.json's chat_template (string or list)
    case $2 in
    *.json) python3 -c 'import json, sys
t = json.load(open(sys.argv[1])).get("chat_template") or ""
if isinstance(t, list):
    t = "".join(e.get("template", "") for e in t)
sys.stdout.write(t)' "$2" ;;
    *) cat "$2" ;;
    esac ;;
  *) cat "$2" ;;
  esac
}

# Each input goes through a scratch file (the readers take paths): in memory
# when /dev/shm is there, which makes them 1.7x faster than on disk.
if [ -z "${TMPDIR:-}" ]; then
  TMPDIR=/tmp
  [ -d /dev/shm ] && [ -w /dev/shm ] && TMPDIR=/dev/shm
fi
export TMPDIR
# yaml-cpp's own leak on an error path (test/Fuzz/lsan.supp says which).
export LSAN_OPTIONS=suppressions=$PWD/test/Fuzz/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in "${TARGETS[@]}"; do
  corpus=$BUILD/corpus/$t
  mkdir -p "$corpus" "$BUILD/artifacts"
  seeds "$t" | while read -r f; do
    seedBytes "$t" "$f" > "$corpus/seed-$(echo "$f" | tr '/' '_')"
  done
  # Any one input may allocate at most 2 GiB; the process's RSS may grow
  # past that over a campaign (yaml-cpp's suppressed 2 KiB leak per
  # invalid-UTF-8 input, the corpus, ASan's quarantine): FUZZ_RSS_LIMIT_MB.
  opts=(-timeout="${FUZZ_TIMEOUT:-2}" -malloc_limit_mb=2048 -rss_limit_mb="${FUZZ_RSS_LIMIT_MB:-2048}"
        -max_len="$(maxLen "$t")" -print_final_stats=1
        -artifact_prefix="$BUILD/artifacts/$t-" -dict=test/Fuzz/$t.dict)
  [ -f "test/Fuzz/$t.dict" ] || unset 'opts[-1]'
  regressions=test/Fuzz/regressions/$t
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    echo "== $t: $(ls "$regressions" | wc -l) regression inputs"
    "$BUILD/bin/swift-$t" "${opts[@]}" "$regressions"/* > "$BUILD/$t-regressions.log" 2>&1 ||
      { tail -30 "$BUILD/$t-regressions.log"; echo "FAIL $t: a regression input fails"; status=1; continue; }
  fi
  echo "== $t: fuzzing $([ -n "${RUNS:-}" ] && echo "$RUNS runs" || echo "$SECONDS_EACH s")"
  if [ -z "${RUNS:-}" ]; then
    "$BUILD/bin/swift-$t" "${opts[@]}" -max_total_time="$SECONDS_EACH" \
      "$corpus" > "$BUILD/$t.log" 2>&1
    rc=$?
    grep -E '^stat::|^#[0-9]+ +DONE' "$BUILD/$t.log" | tr '\n' ' '
    echo
  else
    # A campaign runs in fresh processes of FUZZ_CHUNK executions (default
    # 1M): every input that leaks (yaml-cpp's suppressed leak) makes
    # libFuzzer scan the heap, which that leak grows, so one long process
    # slows from ~2,300 to ~600 exec/s (FuzzJob, measured).
    done_runs=0 chunk=0 rc=0
    while [ "$done_runs" -lt "$RUNS" ] && [ $rc -eq 0 ]; do
      n=$((RUNS - done_runs))
      [ "$n" -gt "${FUZZ_CHUNK:-1000000}" ] && n=${FUZZ_CHUNK:-1000000}
      "$BUILD/bin/swift-$t" "${opts[@]}" -runs="$n" "$corpus" \
        > "$BUILD/$t.log" 2>&1
      rc=$?
      got=$(grep -E '^stat::number_of_executed_units' "$BUILD/$t.log" | awk '{print $2}')
      [ "${got:-0}" -gt 0 ] || { [ $rc -ne 0 ] || rc=1; break; }
      done_runs=$((done_runs + got))
      chunk=$((chunk + 1))
      echo "   chunk $chunk: ${got:-0} executions, $done_runs of $RUNS," \
        "$(grep -oE 'cov: [0-9]+' "$BUILD/$t.log" | tail -1)"
    done
  fi
  if [ $rc -ne 0 ]; then
    tail -40 "$BUILD/$t.log"
    echo "FAIL $t (exit $rc): reproducer in $BUILD/artifacts/"
    status=1
  else
    echo "ok $t"
  fi
done
exit $status
