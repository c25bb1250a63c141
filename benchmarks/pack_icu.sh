#!/usr/bin/env bash
# Packs this machine's ICU headers and static libraries (Debian's libicu-dev)
# into .cache/icu-static.tar.xz, for a machine that has no ICU headers and no
# network (the GPU machine): benchmarks/build_gpu.sh unpacks it and links
# swift-run against it. Usage (repo root): bash benchmarks/pack_icu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
lib=$(dirname "$(find /usr/lib /usr/local/lib -name libicuuc.a 2>/dev/null | head -1)")
[ -f "$lib/libicuuc.a" ] && [ -f /usr/include/unicode/uversion.h ] ||
  { echo "pack_icu.sh: needs libicu-dev (headers and static libraries)" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include" "$tmp/lib" .cache
cp -r /usr/include/unicode "$tmp/include/"
cp "$lib"/libicu{uc,i18n,data}.a "$tmp/lib/"
tar -C "$tmp" -cJf .cache/icu-static.tar.xz include lib
ls -l .cache/icu-static.tar.xz
