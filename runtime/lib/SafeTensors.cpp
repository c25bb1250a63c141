//===- SafeTensors.cpp - streaming safetensors reader and writer ----------===//

#include "swift/Runtime/SafeTensors.h"

#include "swift/Runtime/Check.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
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

File::File(const std::string &path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SWIFT_CHECK(fd_ >= 0, path, ": cannot open: ", errnoText());
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
  nlohmann::json j = nlohmann::json::parse(header, nullptr, false);
  SWIFT_CHECK(j.is_object(), path, ": the header is not a JSON object");
  const int64_t dataStart = 8 + int64_t(headerLen);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string &name = it.key();
    const nlohmann::json &v = it.value();
    if (name == "__metadata__") {
      SWIFT_CHECK(v.is_object(), path, ": __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m)
        if (m.value().is_string())
          metadata_[m.key()] = m.value().get<std::string>();
      continue;
    }
    auto where = [&] { return path + ": tensor \"" + name + "\": "; };
    SWIFT_CHECK(v.is_object() && v.contains("dtype") && v.contains("shape") &&
                    v.contains("data_offsets"),
                where(), "needs dtype, shape and data_offsets");
    TensorInfo t;
    t.name = name;
    const nlohmann::json &dtype = v["dtype"];
    SWIFT_CHECK(dtype.is_string(), where(), "dtype is not a string");
    bool known = false;
    for (const DTypeInfo &i : kDTypes)
      if (dtype.get<std::string>() == i.name) {
        t.dtype = i.dtype;
        known = true;
      }
    SWIFT_CHECK(known, where(), "unsupported dtype ", dtype.dump());
    const nlohmann::json &shape = v["shape"];
    SWIFT_CHECK(shape.is_array(), where(), "shape is not an array");
    int64_t numel = 1;
    for (const nlohmann::json &d : shape) {
      SWIFT_CHECK(d.is_number_unsigned() &&
                      d.get<uint64_t>() < (uint64_t(1) << 40),
                  where(), "bad dimension ", d.dump());
      t.shape.push_back(d.get<int64_t>());
      numel *= t.shape.back();
      SWIFT_CHECK(numel < (int64_t(1) << 50), where(), "too many elements");
    }
    const nlohmann::json &off = v["data_offsets"];
    SWIFT_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
                    off[1].is_number_unsigned(),
                where(), "data_offsets must be [begin, end]");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    SWIFT_CHECK(begin <= end && end <= uint64_t(fileSize - dataStart), where(),
                "data [", begin, ", ", end, ") lies outside the file's ",
                fileSize - dataStart, " data bytes (truncated file?)");
    SWIFT_CHECK(int64_t(end - begin) == numel * elementSize(t.dtype), where(),
                "data_offsets span ", end - begin, " bytes, but ",
                toString(t.dtype), " ", shape.dump(), " needs ",
                numel * elementSize(t.dtype));
    t.dataBegin = dataStart + int64_t(begin);
    t.dataEnd = dataStart + int64_t(end);
    ranges.push_back({t.dataBegin, t.dataEnd});
    byName_[name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    SWIFT_CHECK(ranges[i].first >= ranges[i - 1].second, path,
                ": two tensors share bytes [", ranges[i].first, ", ",
                ranges[i - 1].second, ")");
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
  auto add = [&](const fs::path &file) {
    files_.push_back(std::make_unique<File>(file.string()));
    return files_.back().get();
  };
  if (fs::exists(index)) {
    std::ifstream in(index);
    SWIFT_CHECK(in.good(), index.string(), ": cannot open");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    SWIFT_CHECK(j.is_object() && j.contains("weight_map") &&
                    j["weight_map"].is_object(),
                index.string(), ": needs a \"weight_map\" object");
    std::map<std::string, const File *> opened;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      SWIFT_CHECK(it.value().is_string(), index.string(), ": weight_map.",
                  it.key(), " is not a file name");
      std::string shard = it.value().get<std::string>();
      SWIFT_CHECK(shard.find('/') == std::string::npos, index.string(),
                  ": weight_map.", it.key(), ": \"", shard,
                  "\" is not a file in the directory");
      const File *&f = opened[shard];
      if (!f)
        f = add(fs::path(dir) / shard);
      const TensorInfo *t = f->find(it.key());
      SWIFT_CHECK(t, index.string(), ": weight_map names \"", it.key(),
                  "\" in ", shard, ", which has no such tensor");
      byName_[it.key()] = {t, f};
    }
    return;
  }
  SWIFT_CHECK(fs::exists(single), dir, ": no ", stem, ".safetensors or ",
              stem, ".safetensors.index.json");
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
