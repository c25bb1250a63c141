//===- SafeTensors.cpp - streaming safetensors reader and writer ----------===//

#include "swift/Runtime/io/SafeTensors.h"

#include "swift/Data/Files.h"
#include "swift/Plan/Json.h"
#include "swift/Runtime/core/Check.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

namespace swift::rt::safetensors {
namespace fs = std::filesystem;

namespace {

// Reads and conversions go through a buffer of this many bytes at most.
constexpr int64_t kChunkBytes = 16 << 20;
// A header larger than this is not a safetensors file (the format's own
// reader refuses 100 MB).
constexpr int64_t kMaxHeaderBytes = 100 << 20;
// An index of a few thousand tensors is a few hundred KiB.
constexpr uint64_t kMaxIndexBytes = 64 << 20;

struct DTypeInfo {
  DType dtype;
  const char *name;
  int64_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "F32", 4},  {DType::F16, "F16", 2},   {DType::BF16, "BF16", 2},
    {DType::F64, "F64", 8},  {DType::I64, "I64", 8},   {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},  {DType::I8, "I8", 1},     {DType::U8, "U8", 1},
    {DType::Bool, "BOOL", 1}};

std::string errnoText() { return std::strerror(errno); }

float fromBF16(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float fromF16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) { // inf / nan
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | uint32_t(exponent + 112) << 23 | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else { // subnormal: normalize
    exponent = 113;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | uint32_t(exponent) << 23 | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void preadAll(int fd, const std::string &path, void *dst, int64_t bytes,
              int64_t offset) {
  auto *p = static_cast<char *>(dst);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, size_t(bytes), off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    SWIFT_CHECK(n > 0, path, ": read failed at byte ", offset, ": ",
                n == 0 ? std::string("unexpected end of file") : errnoText());
    p += n;
    bytes -= n;
    offset += n;
  }
}

void writeAll(int fd, const std::string &path, const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    SWIFT_CHECK(n > 0, path, ": write failed: ", errnoText());
    p += n;
    bytes -= size_t(n);
  }
}

/// A file written to `path + ".tmp"`, fsynced, then renamed to `path`; a
/// failure before commit() leaves no file at `path`.
class AtomicFile {
public:
  explicit AtomicFile(std::string path)
      : path_(std::move(path)), tmp_(path_ + ".tmp") {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    SWIFT_CHECK(fd_ >= 0, tmp_, ": cannot create: ", errnoText());
  }
  ~AtomicFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  void append(const void *data, size_t bytes) {
    writeAll(fd_, tmp_, data, bytes);
  }
  void commit() {
    SWIFT_CHECK(::fsync(fd_) == 0, tmp_, ": fsync failed: ", errnoText());
    SWIFT_CHECK(::close(fd_) == 0, tmp_, ": close failed: ", errnoText());
    fd_ = -1;
    SWIFT_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, path_,
                ": cannot rename from ", tmp_, ": ", errnoText());
    // The rename itself is durable once the directory is synced.
    std::string dir = fs::path(path_).parent_path().string();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

private:
  std::string path_, tmp_;
  int fd_ = -1;
};

} // namespace

const char *toString(DType d) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == d)
      return i.name;
  return "?";
}

int64_t elementSize(DType d) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == d)
      return i.size;
  return 0;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t TensorSpec::bytes() const {
  int64_t n = elementSize(dtype);
  for (int64_t d : shape)
    n *= d;
  return n;
}

Header parseHeader(const std::string &json, int64_t fileSize,
                   const std::string &path) {
  const int64_t dataStart = 8 + int64_t(json.size());
  SWIFT_ASSERT(fileSize >= dataStart, "a header past the end of ", path);
  const int64_t dataBytes = fileSize - dataStart;
  const nlohmann::json j = plan::parseJson(json, path);
  plan::JsonField{j, "", path}.object();
  Header h;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string &name = it.key();
    if (name == "__metadata__") {
      plan::JsonField m{it.value(), "__metadata__", path};
      m.object();
      for (auto e = m.j.begin(); e != m.j.end(); ++e)
        if (e.value().is_string())
          h.metadata[e.key()] = e.value().get<std::string>();
      continue;
    }
    const std::string where = "tensor \"" + plan::briefText(name) + "\"";
    plan::JsonField v{it.value(), where, path};
    v.object();
    TensorInfo t;
    t.name = name;
    {
      plan::JsonField dtype = v.at("dtype");
      const std::string d = dtype.string();
      bool known = false;
      for (const DTypeInfo &i : kDTypes)
        if (d == i.name) {
          t.dtype = i.dtype;
          known = true;
        }
      if (!known)
        dtype.fail("unsupported dtype " + dtype.brief(24) +
                   " (F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
    }
    // The element and byte counts, checked without overflow: a wrapped
    // product would pass for a small tensor ("needs 0" bytes).
    plan::JsonField shape = v.at("shape");
    shape.array();
    int64_t numel = 1;
    bool overflow = false;
    for (size_t k = 0; k < shape.size(); ++k) {
      t.shape.push_back(
          shape.index(k).integer(0, std::numeric_limits<int64_t>::max()));
      overflow |= __builtin_mul_overflow(numel, t.shape.back(), &numel);
    }
    int64_t bytes = 0;
    overflow |= __builtin_mul_overflow(numel, elementSize(t.dtype), &bytes);
    if (overflow)
      shape.fail(shape.brief() + " of " + toString(t.dtype) +
                 " is more than 2^63 bytes (its element count overflows)");
    plan::JsonField off = v.at("data_offsets");
    off.array();
    if (off.size() != 2)
      off.fail("expected [begin, end], got " + off.brief());
    const int64_t begin =
        off.index(0).integer(0, std::numeric_limits<int64_t>::max());
    const int64_t end =
        off.index(1).integer(0, std::numeric_limits<int64_t>::max());
    SWIFT_CHECK(begin <= end && end <= dataBytes, path, ": ", where, ": data [",
                begin, ", ", end, ") lies outside the file's ", dataBytes,
                " data bytes (truncated file?)");
    SWIFT_CHECK(end - begin == bytes, path, ": ", where, ": data_offsets span ",
                end - begin, " bytes, but ", toString(t.dtype), " ",
                shape.brief(), " needs ", bytes);
    t.dataBegin = dataStart + begin;
    t.dataEnd = dataStart + end;
    ranges.push_back({t.dataBegin, t.dataEnd});
    h.tensors.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    SWIFT_CHECK(ranges[i].first >= ranges[i - 1].second, path,
                ": two tensors share bytes [", ranges[i].first, ", ",
                ranges[i - 1].second, ")");
  return h;
}

std::map<std::string, std::string> parseIndex(const std::string &text,
                                              const std::string &path) {
  const nlohmann::json j = plan::parseJson(text, path);
  plan::JsonField map = plan::JsonField{j, "", path}.object().at("weight_map");
  map.object();
  std::map<std::string, std::string> out;
  for (auto it = map.j.begin(); it != map.j.end(); ++it) {
    plan::JsonField e{it.value(),
                      "weight_map[\"" + plan::briefText(it.key()) + "\"]", path};
    std::string shard = e.string();
    // A file beside the index: not a path elsewhere, not a name a C string
    // would cut short, no control character (a message names the file).
    if (shard.empty() || shard == "." || shard == ".." ||
        shard.find('/') != std::string::npos ||
        std::any_of(shard.begin(), shard.end(), [](char c) {
          return uint8_t(c) < 0x20 || uint8_t(c) == 0x7f;
        }))
      e.fail(e.brief() + " is not a file name in the index's directory");
    out.emplace(it.key(), std::move(shard));
  }
  return out;
}

File::File(const std::string &path) : path_(path) {
  fd_ = data::openRegularFile(path, "a safetensors file");
  try {
    struct stat st;
    SWIFT_CHECK(::fstat(fd_, &st) == 0, path, ": cannot stat: ", errnoText());
    const int64_t fileSize = st.st_size;
    SWIFT_CHECK(fileSize >= 8, path, ": not a safetensors file (", fileSize,
                " bytes, shorter than the 8-byte header length)");
    uint8_t lengthBytes[8];
    preadAll(fd_, path, lengthBytes, 8, 0);
    uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i)
      headerLen = headerLen << 8 | lengthBytes[i];
    SWIFT_CHECK(headerLen <= uint64_t(kMaxHeaderBytes) &&
                    int64_t(headerLen) <= fileSize - 8,
                path, ": truncated or not a safetensors file (header of ",
                headerLen, " bytes in a file of ", fileSize, ")");
    std::string header(headerLen, '\0');
    preadAll(fd_, path, header.data(), int64_t(headerLen), 8);
    Header h = parseHeader(header, fileSize, path);
    tensors_ = std::move(h.tensors);
    metadata_ = std::move(h.metadata);
    for (size_t i = 0; i < tensors_.size(); ++i)
      byName_[tensors_[i].name] = i;
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

File::~File() {
  if (fd_ >= 0)
    ::close(fd_);
}

const TensorInfo *File::find(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

void File::readBytes(const TensorInfo &t, int64_t offset, int64_t bytes,
                     void *dst) const {
  SWIFT_ASSERT(offset >= 0 && bytes >= 0 &&
                   t.dataBegin + offset + bytes <= t.dataEnd,
               "read outside ", t.name);
  preadAll(fd_, path_, dst, bytes, t.dataBegin + offset);
}

void File::readF32(const TensorInfo &t, int64_t first, int64_t count,
                   float *dst) const {
  SWIFT_CHECK(t.dtype == DType::F32 || t.dtype == DType::F16 ||
                  t.dtype == DType::BF16,
              path_, ": tensor \"", t.name, "\": dtype ", toString(t.dtype),
              " is not a floating-point weight (F32, F16 or BF16)");
  SWIFT_ASSERT(first >= 0 && count >= 0 && first + count <= t.numel(),
               "element range outside ", t.name);
  const int64_t size = elementSize(t.dtype);
  if (t.dtype == DType::F32) {
    readBytes(t, first * 4, count * 4, dst);
    return;
  }
  std::vector<uint16_t> buffer(size_t(std::min(count, kChunkBytes / size)));
  for (int64_t done = 0; done < count;) {
    int64_t n = std::min<int64_t>(count - done, int64_t(buffer.size()));
    readBytes(t, (first + done) * size, n * size, buffer.data());
    for (int64_t i = 0; i < n; ++i)
      dst[done + i] = t.dtype == DType::BF16 ? fromBF16(buffer[size_t(i)])
                                             : fromF16(buffer[size_t(i)]);
    done += n;
  }
}

ModelWeights::ModelWeights(const std::string &dir, const std::string &stem)
    : dir_(dir) {
  const fs::path single = fs::path(dir) / (stem + ".safetensors");
  const fs::path index = fs::path(dir) / (stem + ".safetensors.index.json");
  // Present: anything under the name, even a broken link (File and the
  // JSON reader then say what is wrong with it).
  auto present = [](const fs::path &p) {
    std::error_code ec;
    return fs::symlink_status(p, ec).type() != fs::file_type::not_found;
  };
  auto add = [&](const fs::path &file) {
    files_.push_back(std::make_unique<File>(file.string()));
    return files_.back().get();
  };
  if (present(index)) {
    // transformers loads the single file when both are there; swift-run
    // would load the shards: one of them is stale, and only the user knows
    // which.
    SWIFT_CHECK(!present(single), dir, ": holds both ", stem,
                ".safetensors and ", stem,
                ".safetensors.index.json, so one is stale (transformers "
                "loads the single file, swift-run would load the index's "
                "shards): delete ", stem, ".safetensors, or the index and the "
                "shards it names");
    const std::string text = plan::readRegularFile(
        index.string(), "a safetensors index (JSON)", kMaxIndexBytes);
    std::map<std::string, const File *> opened;
    for (const auto &[name, shard] : parseIndex(text, index.string())) {
      const File *&f = opened[shard];
      if (!f)
        f = add(fs::path(dir) / shard);
      const TensorInfo *t = f->find(name);
      SWIFT_CHECK(t, index.string(), ": weight_map names \"",
                  plan::briefText(name), "\" in ", shard,
                  ", which has no such tensor");
      byName_[name] = {t, f};
    }
    return;
  }
  SWIFT_CHECK(present(single), dir, ": no ", stem, ".safetensors or ", stem,
              ".safetensors.index.json");
  const File *f = add(single);
  for (const TensorInfo &t : f->tensors())
    byName_[t.name] = {&t, f};
}

std::vector<std::string> ModelWeights::names() const {
  std::vector<std::string> out;
  for (const auto &[name, where] : byName_)
    out.push_back(name);
  return out;
}

std::pair<const TensorInfo *, const File *>
ModelWeights::find(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end()
             ? std::pair<const TensorInfo *, const File *>{nullptr, nullptr}
             : it->second;
}

uint16_t toBF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x))
    return uint16_t((bits >> 16) | 0x40); // quiet
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

uint16_t toF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffff;
  if (abs > 0x7f800000) // nan
    return uint16_t(sign | 0x7e00);
  if (abs >= 0x477ff000) // rounds to >= 65520: inf
    return uint16_t(sign | 0x7c00);
  if (abs < 0x38800000) { // below the smallest normal: subnormal or zero
    // The value in units of 2^-24, rounded to nearest even.
    float a;
    std::memcpy(&a, &abs, 4);
    float scaled = a * 16777216.0f; // exact: a power of two
    return uint16_t(sign | uint16_t(std::nearbyint(scaled)));
  }
  uint32_t mantissa = abs & 0x7fffff;
  uint32_t exponent = (abs >> 23) - 112;
  uint32_t h = exponent << 10 | mantissa >> 13;
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // may carry into the exponent, which is the right result
  return uint16_t(sign | h);
}

void writeFileAtomically(const std::string &path, const std::string &text) {
  AtomicFile f(path);
  f.append(text.data(), text.size());
  f.commit();
}

void write(const std::string &dir, const std::vector<TensorSpec> &tensors,
           const TensorProducer &produce, int64_t maxShardBytes,
           const std::map<std::string, std::string> &metadata,
           const std::string &stem) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  SWIFT_CHECK(!ec, dir, ": cannot create the directory: ", ec.message());
  // Shards: tensors in order, a new shard when the next would overflow.
  std::vector<std::vector<size_t>> shards(1);
  int64_t shardBytes = 0, total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t b = tensors[i].bytes();
    if (!shards.back().empty() && shardBytes + b > maxShardBytes) {
      shards.emplace_back();
      shardBytes = 0;
    }
    shards.back().push_back(i);
    shardBytes += b;
    total += b;
  }
  const size_t n = shards.size();
  auto shardName = [&](size_t s) {
    if (n == 1)
      return stem + ".safetensors";
    char name[64];
    std::snprintf(name, sizeof(name), "-%05zu-of-%05zu.safetensors", s + 1, n);
    return stem + name;
  };
  nlohmann::json weightMap = nlohmann::json::object();
  for (size_t s = 0; s < n; ++s) {
    // nlohmann's object keeps keys sorted; safetensors readers accept any
    // order, and the data follows the list's order.
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.empty())
      header["__metadata__"] = metadata;
    int64_t offset = 0;
    for (size_t i : shards[s]) {
      const TensorSpec &t = tensors[i];
      header[t.name] = {{"dtype", toString(t.dtype)},
                        {"shape", t.shape},
                        {"data_offsets", {offset, offset + t.bytes()}}};
      offset += t.bytes();
      weightMap[t.name] = shardName(s);
    }
    std::string text = header.dump();
    // Pad the header with spaces to 8 bytes, as the reference writer does.
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string path = (fs::path(dir) / shardName(s)).string();
    AtomicFile f(path);
    uint8_t length[8];
    for (int k = 0; k < 8; ++k)
      length[k] = uint8_t(uint64_t(text.size()) >> (8 * k));
    f.append(length, 8);
    f.append(text.data(), text.size());
    for (size_t i : shards[s]) {
      int64_t written = 0;
      produce(i, [&](const void *data, size_t bytes) {
        f.append(data, bytes);
        written += int64_t(bytes);
      });
      SWIFT_ASSERT(written == tensors[i].bytes(), "tensor ", tensors[i].name,
                   ": produced ", written, " bytes, expected ",
                   tensors[i].bytes());
    }
    f.commit();
  }
  const fs::path index = fs::path(dir) / (stem + ".safetensors.index.json");
  if (n > 1) {
    nlohmann::json j = {{"metadata", {{"total_size", total}}},
                        {"weight_map", weightMap}};
    writeFileAtomically(index.string(), j.dump(2) + "\n");
  } else {
    fs::remove(index, ec); // a stale index would name the wrong files
  }
  // An earlier export's weights that this one did not overwrite: a single
  // file beside new shards (transformers loads it before any index), or
  // shards of another count. Removed once the new files are complete.
  std::set<std::string> written;
  for (size_t s = 0; s < n; ++s)
    written.insert(shardName(s));
  // shardName's pattern for any count (stems are plain words).
  const std::regex shard(stem + R"(-\d{5}-of-\d{5}\.safetensors)");
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (written.count(name) || !e.is_regular_file())
      continue;
    if (name == stem + ".safetensors" || std::regex_match(name, shard))
      fs::remove(e.path(), ec);
  }
}

} // namespace swift::rt::safetensors
