//===- RunPlan.h - swift-run launched as a user would, for tests -*- C++ -*-===//
//
// The harness of the end-to-end tests: a tiny plan, running the real
// swift-run binary on it (ranks are real processes over Gloo) and reading
// back its metrics, output and parameters. Tolerances: EndToEndTest.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace swift::rt::testing {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr double kLossTol = 1e-4;
constexpr double kParamTol = 2e-6;

/// Tiny Llama with every optional feature on: GQA, qkv and o biases,
/// q/k norm, tied embeddings. Global batch 8 = micro 2 * world * accumulation.
inline json tinyPlan(int zero, int world) {
  return {{"schema", "swift.plan"},
          {"version", 1},
          {"model",
           {{"hidden_size", 64},
            {"intermediate_size", 128},
            {"num_hidden_layers", 2},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"head_dim", 16},
            {"vocab_size", 256},
            {"tie_word_embeddings", true},
            {"rms_norm_eps", 1e-5},
            {"rope_theta", 10000.0},
            {"attention_qkv_bias", true},
            {"attention_o_bias", true},
            {"qk_norm", true}}},
          {"training",
           {{"sequence_length", 32},
            {"global_batch_size", 8},
            {"micro_batch_size", 2},
            {"gradient_accumulation", 8 / (2 * world)},
            {"precision", "fp32"},
            {"optimizer",
             {{"lr", 1e-3},
              {"betas", {0.9, 0.95}},
              {"eps", 1e-8},
              {"weight_decay", 0.1}}},
            {"seed", 1234}}},
          {"world", {{"size", world}, {"gpus_per_node", world}}},
          {"strategy",
           {{"zero", zero},
            {"offload", "none"},
            {"checkpointing", "none"},
            {"bucket_bytes", 40000},
            {"prefetch_depth", 1}}}};
}

/// `p` training adapters (`method` lora or qlora) of rank 4, alpha 8, on
/// every decoder linear, with lora_dropout `dropout`.
inline json withLora(json p, const std::string &method = "lora",
                     double dropout = 0.0) {
  p["training"]["method"] = method;
  p["training"]["lora"] = {{"rank", 4},
                           {"alpha", 8.0},
                           {"dropout", dropout},
                           {"targets",
                            {"q_proj", "k_proj", "v_proj", "o_proj",
                             "gate_proj", "up_proj", "down_proj"}}};
  return p;
}

struct Result {
  int exitCode = -1;
  std::string output;
  std::vector<json> metrics;
  double seconds = 0;
  std::string dir;
  std::vector<double> losses() const {
    std::vector<double> l;
    for (const json &m : metrics) // a step's (not an evaluation's)
      if (m.contains("loss"))
        l.push_back(m.at("loss").get<double>());
    return l;
  }
};

/// A new, empty directory. mkdtemp, not pid + counter: with pid_max 32768
/// a later test process reuses an earlier one's pid and found its files
/// (a copy_file onto an existing file failed Weights tests under load).
inline std::string freshDir() {
  std::string d = (fs::temp_directory_path() / "swift-rt-XXXXXX").string();
  if (!mkdtemp(d.data()))
    throw std::runtime_error("mkdtemp " + d + ": " + std::strerror(errno));
  return d;
}

inline std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A token-id sample of a JSONL data file.
struct Sample {
  std::vector<int> ids, labels; // labels empty: none in the file
};

/// `samples` as JSONL token-id lines ({"input_ids", "labels"}) at `path`
/// (default: a fresh directory's data.jsonl); the path.
inline std::string writeJsonl(const std::vector<Sample> &samples,
                              std::string path = "") {
  if (path.empty())
    path = freshDir() + "/data.jsonl";
  std::ofstream out(path);
  for (const Sample &s : samples) {
    json j = {{"input_ids", s.ids}};
    if (!s.labels.empty())
      j["labels"] = s.labels;
    out << j.dump() << "\n";
  }
  return path;
}

/// Runs `env swift-run <dir>/plan.json <args>` and collects everything.
inline Result runPlan(const json &plan, const std::string &args,
               const std::string &env = "") {
  Result r;
  r.dir = freshDir();
  std::ofstream(r.dir + "/plan.json") << plan.dump(1);
  // JSONL data goes through one token cache for the whole test run (an
  // `env` may name another).
  static const std::string cache =
      (fs::temp_directory_path() / "swift-test-token-cache").string();
  std::string cmd = "cd " + r.dir + " && SWIFT_CACHE_DIR=" + cache + " " +
                    env + " timeout 200 " +
                    SWIFT_RUN_PATH + " plan.json --metrics metrics.jsonl " +
                    args + " > out.txt 2>&1";
  auto t0 = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.output = slurp(r.dir + "/out.txt");
  std::ifstream m(r.dir + "/metrics.jsonl");
  for (std::string line; std::getline(m, line);)
    r.metrics.push_back(json::parse(line));
  return r;
}

inline std::vector<float> readParams(const std::string &path) {
  std::string bytes = slurp(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

inline double maxAbsDiff(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

inline void expectSameLosses(const Result &ref, const Result &got, double tol,
                      const std::string &what) {
  ASSERT_EQ(ref.exitCode, 0) << ref.output;
  ASSERT_EQ(got.exitCode, 0) << got.output;
  auto a = ref.losses(), b = got.losses();
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], tol) << what << ", step " << i + 1;
}

/// Per step: the count of collectives `op` rank 0 issued (its metrics).
inline std::vector<int64_t> collectives(const Result &r, const char *op) {
  std::vector<int64_t> n;
  for (const json &m : r.metrics)
    if (m.contains("loss"))
      n.push_back(m.at("collectives").at(op).get<int64_t>());
  return n;
}

/// Parameters after `steps` steps.
inline std::vector<float> paramsAfter(const json &plan, int steps) {
  Result r =
      runPlan(plan, "--steps " + std::to_string(steps) +
                        " --save-params params.bin" + " --nproc-per-node " +
                        std::to_string(plan["world"]["size"].get<int>()));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  return readParams(r.dir + "/params.bin");
}

inline int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

} // namespace swift::rt::testing
