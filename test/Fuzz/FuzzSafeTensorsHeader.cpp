//===- FuzzSafeTensorsHeader.cpp - libFuzzer target: safetensors headers --===//
//
// Input: 8 bytes (little-endian) giving the size of the data after the
// header, then the header's JSON, as a .safetensors file holds it
// (scripts/fuzz.sh seeds it from the repository's files). parseHeader must
// return tensors that lie in the file, span their shape's bytes and share
// none, or throw UserError of one short line; anything else is a finding.
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Runtime/io/SafeTensors.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace st = swift::rt::safetensors;
  if (size < 8)
    return 0;
  uint64_t dataBytes = 0;
  std::memcpy(&dataBytes, data, 8);
  dataBytes %= uint64_t(1) << 62; // a file size, as fstat gives one
  const std::string json(reinterpret_cast<const char *>(data) + 8, size - 8);
  const int64_t fileSize = int64_t(8 + json.size() + dataBytes);
  st::Header h;
  try {
    h = st::parseHeader(json, fileSize, "model.safetensors");
  } catch (const swift::plan::UserError &e) {
    swift::fuzz::checkRefusal(e.what());
    return 0;
  }
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const st::TensorInfo &t : h.tensors) {
    int64_t bytes = st::elementSize(t.dtype);
    for (int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes))
        __builtin_trap(); // an accepted shape's size fits 64 bits
    if (t.dataBegin < int64_t(8 + json.size()) || t.dataEnd > fileSize ||
        t.dataEnd - t.dataBegin != bytes)
      __builtin_trap();
    ranges.push_back({t.dataBegin, t.dataEnd});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      __builtin_trap(); // accepted tensors share no byte
  return 0;
}
