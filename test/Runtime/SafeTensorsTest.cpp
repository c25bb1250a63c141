//===- SafeTensorsTest.cpp - the safetensors reader and writer ------------===//
//
// Round trips through write() and File, HF's shard naming and index, the
// fp32 -> bf16/fp16 rounding against LibTorch's, slices, and the refusals a
// damaged file must get (exit 2 in swift-run: UserError naming the file).
//
//===----------------------------------------------------------------------===//
#include "Fifo.h"

#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/io/SafeTensors.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace st = swift::rt::safetensors;
namespace fs = std::filesystem;

namespace {

std::string freshDir() { // unique even when a pid is reused (RunPlan.h)
  std::string d = (fs::temp_directory_path() / "swift-st-XXXXXX").string();
  if (!mkdtemp(d.data()))
    throw std::runtime_error("mkdtemp " + d + ": " + std::strerror(errno));
  return d;
}

/// Writes fp32 tensors as `dtype` (converted with the writer's rounding).
void writeTensors(const std::string &dir,
                  const std::vector<std::pair<st::TensorSpec, std::vector<float>>> &ts,
                  int64_t maxShardBytes = int64_t(1) << 40) {
  std::vector<st::TensorSpec> specs;
  for (auto &[spec, values] : ts)
    specs.push_back(spec);
  st::write(
      dir, specs,
      [&](size_t i, const st::ByteSink &sink) {
        const auto &[spec, values] = ts[i];
        for (float v : values) {
          if (spec.dtype == st::DType::F32) {
            sink(&v, 4);
          } else {
            uint16_t h = spec.dtype == st::DType::BF16 ? st::toBF16(v) : st::toF16(v);
            sink(&h, 2);
          }
        }
      },
      maxShardBytes);
}

std::vector<float> iota(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = scale * float(i) - 3.25f;
  return v;
}

/// t0 and t1, 100 fp32 each, in two shards with their index.
void writeTwoShards(const std::string &dir) {
  std::vector<std::pair<st::TensorSpec, std::vector<float>>> ts;
  for (int i = 0; i < 2; ++i)
    ts.push_back({{"t" + std::to_string(i), st::DType::F32, {100}},
                  iota(100, 1.0f)});
  writeTensors(dir, ts, 500);
}

/// A safetensors file of `header` (its text as given) and `dataBytes`
/// zero bytes of data.
void writeRaw(const std::string &path, const std::string &header,
              size_t dataBytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t n = header.size();
  out.write(reinterpret_cast<const char *>(&n), 8);
  out << header << std::string(dataBytes, '\0');
}

std::string expectUserError(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const swift::rt::UserError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError";
  return "";
}

TEST(SafeTensors, RoundTripsEveryFloatDtypeAndSlices) {
  std::string dir = freshDir();
  writeTensors(dir, {{{"a", st::DType::F32, {3, 4}}, iota(12, 0.5f)},
                     {{"b", st::DType::BF16, {5}}, iota(5, 1.0f)},
                     {{"c", st::DType::F16, {2, 3}}, iota(6, 0.25f)}});
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors.index.json"));
  st::ModelWeights w(dir);
  EXPECT_EQ(w.names(), (std::vector<std::string>{"a", "b", "c"}));
  for (const char *name : {"a", "b", "c"}) {
    auto [t, f] = w.find(name);
    ASSERT_TRUE(t);
    std::vector<float> all(size_t(t->numel()));
    f->readF32(*t, 0, t->numel(), all.data());
    // These values are exact in every dtype.
    float scale = name[0] == 'a' ? 0.5f : name[0] == 'b' ? 1.0f : 0.25f;
    EXPECT_EQ(all, iota(t->numel(), scale)) << name;
    // A slice reads exactly its elements.
    std::vector<float> part(2);
    f->readF32(*t, 2, 2, part.data());
    EXPECT_EQ(part[0], all[2]);
    EXPECT_EQ(part[1], all[3]);
  }
  EXPECT_EQ(w.find("a").first->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(w.find("missing").first, nullptr);
}

TEST(SafeTensors, RoundingEqualsLibTorch) {
  // Random values over many binades, with the specials and fp16's
  // subnormal range.
  at::Tensor x = at::randn({200000}, at::kFloat) *
                 at::pow(2.0, at::randint(-30, 20, {200000}).to(at::kFloat));
  std::vector<float> v(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
  for (float s : {0.0f, -0.0f, 1e-8f, 6.1e-5f, 65504.0f, 65519.0f, 65520.0f,
                  1e30f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), 3.0e-39f})
    v.push_back(s);
  at::Tensor t = at::from_blob(v.data(), {int64_t(v.size())}, at::kFloat);
  at::Tensor bf = t.to(at::kBFloat16).contiguous();
  at::Tensor hf = t.to(at::kHalf).contiguous();
  const auto *bfBits = reinterpret_cast<const uint16_t *>(bf.data_ptr());
  const auto *hfBits = reinterpret_cast<const uint16_t *>(hf.data_ptr());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(st::toBF16(v[i]), bfBits[i]) << v[i];
    ASSERT_EQ(st::toF16(v[i]), hfBits[i]) << v[i];
  }
  // And reading back widens exactly as LibTorch does.
  std::string dir = freshDir();
  writeTensors(dir, {{{"b", st::DType::BF16, {int64_t(v.size())}}, v},
                     {{"h", st::DType::F16, {int64_t(v.size())}}, v}});
  st::ModelWeights w(dir);
  for (auto [name, ref] : {std::pair<const char *, at::Tensor>{"b", bf},
                           {"h", hf}}) {
    auto [tb, f] = w.find(name);
    std::vector<float> back(v.size());
    f->readF32(*tb, 0, tb->numel(), back.data());
    at::Tensor widened = ref.to(at::kFloat);
    ASSERT_EQ(0, std::memcmp(back.data(), widened.data_ptr<float>(),
                             back.size() * 4))
        << name;
  }
}

TEST(SafeTensors, ShardsAsHFWithAnIndex) {
  std::string dir = freshDir();
  // 4 tensors of 400 bytes, shards of at most 1000 bytes: 2 + 2.
  std::vector<std::pair<st::TensorSpec, std::vector<float>>> ts;
  for (int i = 0; i < 4; ++i)
    ts.push_back({{"t" + std::to_string(i), st::DType::F32, {100}},
                  iota(100, float(i + 1))});
  writeTensors(dir, ts, 1000);
  EXPECT_TRUE(fs::exists(dir + "/model-00001-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/model-00002-of-00002.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  nlohmann::json index =
      nlohmann::json::parse(std::ifstream(dir + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], 1600);
  EXPECT_EQ(index["weight_map"]["t0"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["t3"], "model-00002-of-00002.safetensors");
  st::ModelWeights w(dir);
  auto [t, f] = w.find("t3");
  std::vector<float> got(100);
  f->readF32(*t, 0, 100, got.data());
  EXPECT_EQ(got, iota(100, 4.0f));
  // No temporary file is left behind.
  for (const auto &e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().extension().string().find("tmp"), std::string::npos)
        << e.path();
}

TEST(SafeTensors, RefusesDamagedFiles) {
  std::string dir = freshDir();
  writeTensors(dir, {{{"a", st::DType::F32, {64}}, iota(64, 1.0f)}});
  const std::string file = dir + "/model.safetensors";
  // Truncated: the data ends before the header says.
  fs::resize_file(file, fs::file_size(file) - 4);
  std::string why = expectUserError([&] { st::File f(file); });
  EXPECT_NE(why.find(file), std::string::npos) << why;
  EXPECT_NE(why.find("\"a\""), std::string::npos) << why;
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  // Shorter than its own header length.
  fs::resize_file(file, 20);
  why = expectUserError([&] { st::File f(file); });
  EXPECT_NE(why.find("truncated or not a safetensors file"), std::string::npos)
      << why;
  // Not JSON.
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    uint64_t n = 4;
    out.write(reinterpret_cast<const char *>(&n), 8);
    out << "nope";
  }
  why = expectUserError([&] { st::File f(file); });
  EXPECT_NE(why.find(file + ": not valid JSON"), std::string::npos) << why;
  // An integer tensor is not a weight.
  std::string dir2 = freshDir();
  st::write(
      dir2, {{"ids", st::DType::I64, {2}}},
      [](size_t, const st::ByteSink &sink) {
        int64_t v[2] = {1, 2};
        sink(v, 16);
      },
      1 << 20);
  st::File ints(dir2 + "/model.safetensors");
  float out[2];
  why = expectUserError([&] { ints.readF32(*ints.find("ids"), 0, 2, out); });
  EXPECT_NE(why.find("dtype I64"), std::string::npos) << why;
  // A directory without weights.
  why = expectUserError([&] { st::ModelWeights w(freshDir()); });
  EXPECT_NE(why.find("no model.safetensors"), std::string::npos) << why;
}

TEST(SafeTensors, ATensorNamedTwiceIsRefused) {
  // JSON readers keep the last copy of a key: the file's data for "a"
  // would silently be the second entry's.
  const std::string file = freshDir() + "/model.safetensors";
  writeRaw(file,
           R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
           R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
           12);
  std::string why = expectUserError([&] { st::File f(file); });
  EXPECT_NE(why.find(file + ": "), std::string::npos) << why;
  EXPECT_NE(why.find("\"a\" is given twice"), std::string::npos) << why;
  // The same in an index's weight_map.
  std::string dir = freshDir();
  writeTwoShards(dir);
  const std::string index = dir + "/model.safetensors.index.json";
  std::ofstream(index) << R"({"weight_map": {)"
                       << R"("t0": "model-00001-of-00002.safetensors", )"
                       << R"("t1": "model-00002-of-00002.safetensors", )"
                       << R"("t0": "model-00002-of-00002.safetensors"}})";
  why = expectUserError([&] { st::ModelWeights w(dir); });
  EXPECT_NE(why.find(index + ": "), std::string::npos) << why;
  EXPECT_NE(why.find("\"t0\" is given twice"), std::string::npos) << why;
}

TEST(SafeTensors, AnElementCountThatOverflowsNamesTheTensorAndShape) {
  // 2^32 x 2^32 elements: a product in 64 bits wraps to 0, which used to
  // pass as "needs 0" bytes.
  const std::string file = freshDir() + "/model.safetensors";
  writeRaw(file,
           R"({"big": {"dtype": "BF16", "shape": [4294967296, 4294967296], )"
           R"("data_offsets": [0, 0]}})",
           0);
  std::string why = expectUserError([&] { st::File f(file); });
  EXPECT_NE(why.find(file + ": tensor \"big\""), std::string::npos) << why;
  EXPECT_NE(why.find("[4294967296,4294967296] of BF16 is more than 2^63 bytes"),
            std::string::npos)
      << why;
  // A byte count past 64 bits with an element count within them.
  writeRaw(file,
           R"({"big": {"dtype": "F64", "shape": [2305843009213693952], )"
           R"("data_offsets": [0, 0]}})",
           0);
  why = expectUserError([&] { st::File f(file); });
  EXPECT_NE(why.find("more than 2^63 bytes"), std::string::npos) << why;
}

TEST(SafeTensors, OnlyRegularFilesAreOpened) {
  // A FIFO blocks its reader until a writer comes (swift-run waited for
  // the watchdog, which then blamed a peer at world 1): refused at once.
  const std::string dir = freshDir();
  const std::string file = dir + "/model.safetensors";
  swift::rt::testing::FifoGuard fifo(file);
  const auto start = std::chrono::steady_clock::now();
  std::string why = expectUserError([&] { st::ModelWeights w(dir); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          start)
                .count(),
            2.0);
  EXPECT_NE(why.find(file + ": is a FIFO, not a regular file; expected a "
                            "safetensors file"),
            std::string::npos)
      << why;
  // A directory in its place.
  const std::string dir2 = freshDir();
  fs::create_directory(dir2 + "/model.safetensors");
  why = expectUserError([&] { st::ModelWeights w(dir2); });
  EXPECT_NE(why.find("model.safetensors: is a directory"), std::string::npos)
      << why;
}

TEST(SafeTensors, ADirectoryWithASingleFileAndAnIndexIsRefused) {
  // transformers loads model.safetensors when both are there, swift-run
  // the index's shards: which one is stale is the user's to say.
  std::string dir = freshDir(), other = freshDir();
  std::vector<std::pair<st::TensorSpec, std::vector<float>>> ts;
  for (int i = 0; i < 4; ++i)
    ts.push_back({{"t" + std::to_string(i), st::DType::F32, {100}},
                  iota(100, float(i + 1))});
  writeTensors(dir, ts, 1000); // two shards and an index
  writeTensors(other, ts);     // one file
  fs::copy_file(other + "/model.safetensors", dir + "/model.safetensors");
  std::string why = expectUserError([&] { st::ModelWeights w(dir); });
  EXPECT_NE(why.find(dir + ": holds both model.safetensors and "
                           "model.safetensors.index.json"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("delete model.safetensors, or the index and the shards "
                     "it names"),
            std::string::npos)
      << why;
  // Either one alone loads.
  fs::remove(dir + "/model.safetensors");
  EXPECT_EQ(st::ModelWeights(dir).names().size(), 4u);
}

TEST(SafeTensors, AnIndexNamesFilesInItsDirectoryOnly) {
  std::string dir = freshDir();
  writeTwoShards(dir);
  const std::string index = dir + "/model.safetensors.index.json";
  // A NUL would cut the name short, to another file; "" and ".." are the
  // directory and its parent.
  for (const std::string &shard :
       {std::string(R"(model-00001-of-00002.safetensors\u0000.bak)"),
        std::string(R"(model-00001-of-00002\n.safetensors)"),
        std::string(""), std::string(".."), std::string("../x.safetensors")}) {
    std::ofstream(index, std::ios::trunc)
        << R"({"weight_map": {"t0": ")" << shard
        << R"(", "t1": "model-00002-of-00002.safetensors"}})";
    std::string why = expectUserError([&] { st::ModelWeights w(dir); });
    EXPECT_NE(why.find(index + ": weight_map[\"t0\"]: "), std::string::npos)
        << shard << ": " << why;
    EXPECT_NE(why.find("is not a file name in the index's directory"),
              std::string::npos)
        << shard << ": " << why;
  }
}

} // namespace
