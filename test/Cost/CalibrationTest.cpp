//===- CalibrationTest.cpp - predicted vs measured on the H200 ------------===//
//
// Every row of test/data/calibration/*.jsonl (stock PyTorch 2.11 + HF
// transformers 5.17 on an H200, measured by
// benchmarks/calibration/hf_baseline.py) becomes a job with backend hf; the
// cost model's peak must be within 10% of `peak_alloc_steady` on every row
// and 5% in the median, and the step time within 15% on world-1 rows.
//
//===----------------------------------------------------------------------===//

#include "PriceJob.h"

#include "swift/Job/Presets.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

using namespace swift::job;
using namespace swift::job::testing;

namespace {

/// The preset of a row's model: hf_baseline.py calls llama3.1-8b llama3-8b.
std::string presetName(const std::string &model) {
  return model == "llama3-8b" ? "llama3.1-8b" : model;
}

// hf_baseline.py builds each model of benchmarks/models.py (the presets of
// the same names) as HF's LlamaForCausalLM, whose attention_bias puts biases
// on q, k, v and o where Qwen2 has them on q, k and v.
std::vector<std::string> modelSettings(const std::string &model) {
  std::string name = presetName(model);
  const ModelPreset *preset = findModelPreset(name);
  EXPECT_TRUE(preset) << name << " is not a model preset";
  if (preset && std::string(preset->modelType) == "qwen2")
    return {"model=" + name, "model.model_type=llama", "model.attention_bias=true"};
  return {"model=" + name};
}

struct Row {
  nlohmann::json j;
  std::string label() const {
    std::ostringstream os;
    os << j["model"].get<std::string>() << " " << j["mode"].get<std::string>()
       << " B" << j["B"] << " S" << j["S"] << (j["ckpt"].get<bool>() ? " ckpt" : "")
       << " world " << j["world"];
    if (j.contains("reshard"))
      os << (j["reshard"].get<bool>() ? " reshard" : " no-reshard");
    if (j.value("offload", false))
      os << " offload";
    return os.str();
  }
};

std::vector<Row> loadRows() {
  std::vector<Row> rows;
  for (const char *file :
       {"h200_hf_public.jsonl", "h200_hf_extra.jsonl", "h200_hf_probe.jsonl"}) {
    std::ifstream in(std::string(SWIFT_CALIBRATION_DIR) + "/" + file);
    EXPECT_TRUE(in.good()) << file;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j.contains("error") || !j.contains("peak_alloc_steady"))
        continue;
      rows.push_back({j});
    }
  }
  return rows;
}

/// The job a row measured, in job-file terms (calibration/README.md).
std::vector<std::string> jobSettings(const nlohmann::json &r) {
  std::string mode = r["mode"];
  int64_t B = r["B"], world = r["world"];
  std::vector<std::string> sets = modelSettings(r["model"]);
  sets.insert(sets.end(), {
      "backend=hf",
      "cluster.gpu=h200",
      "cluster.gpus_per_node=" + std::to_string(world),
      "training.sequence_length=" + std::to_string(r["S"].get<int64_t>()),
      "training.global_batch_size=" + std::to_string(B * world),
      "training.micro_batch_size=" + std::to_string(B),
      std::string("strategy.checkpointing=") + (r["ckpt"].get<bool>() ? "full" : "none"),
      "strategy.offload=none",
      "strategy.zero=0",
      "training.precision=bf16-mixed",
  });
  if (mode == "bf16")
    sets.push_back("training.precision=bf16");
  if (mode == "lora")
    sets.insert(sets.end(), {"training.method=lora", "training.lora.rank=16"});
  if (mode == "fsdp") {
    sets.push_back(std::string("strategy.zero=") +
                   (r.value("reshard", true) ? "3" : "2"));
    if (r.value("offload", false))
      sets.push_back("strategy.offload=optimizer+params");
  }
  return sets;
}

struct Prediction {
  swift::cost::Estimate estimate;
  std::string where;
};

Prediction predict(mlir::MLIRContext &context, const nlohmann::json &r) {
  PricedJob p = priceJob(context, jobSettings(r));
  return {p.estimate, p.estimate.memory.peak.str()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

TEST(Calibration, PeakMemoryWithinBoundsOnEveryRow) {
  mlir::MLIRContext context;
  std::vector<Row> rows = loadRows();
  ASSERT_GE(rows.size(), 12u);
  std::vector<double> errors;
  for (const Row &row : rows) {
    Prediction p = predict(context, row.j);
    double measured = row.j["peak_alloc_steady"].get<double>();
    double error = (p.estimate.memory.peakBytes - measured) / measured;
    errors.push_back(std::abs(error));
    EXPECT_LE(std::abs(error), 0.10)
        << row.label() << ": predicted " << p.estimate.memory.peakBytes / double(1 << 30)
        << " GiB at " << p.where << ", measured " << measured / double(1 << 30) << " GiB";
    std::printf("  %-48s measured %7.2f GiB predicted %7.2f GiB %+6.2f%%  (%s)\n",
                row.label().c_str(), measured / double(1 << 30),
                p.estimate.memory.peakBytes / double(1 << 30), 100 * error, p.where.c_str());
  }
  double med = median(errors);
  std::printf("  peak memory: %zu rows, median |error| %.2f%%, max %.2f%%\n",
              errors.size(), 100 * med, 100 * *std::max_element(errors.begin(), errors.end()));
  EXPECT_LE(med, 0.05);
}

TEST(Calibration, StepTimeWithinBoundsOnWorldOneRows) {
  mlir::MLIRContext context;
  std::vector<double> errors;
  for (const Row &row : loadRows()) {
    if (row.j["world"] != 1)
      continue;
    Prediction p = predict(context, row.j);
    double measured = row.j["step_s_median"].get<double>();
    double error = (p.estimate.time.stepSeconds - measured) / measured;
    errors.push_back(std::abs(error));
    EXPECT_LE(std::abs(error), 0.15) << row.label() << ": predicted "
                                     << p.estimate.time.stepSeconds << " s, measured "
                                     << measured << " s";
    std::printf("  %-48s measured %6.3f s predicted %6.3f s %+6.1f%%\n",
                row.label().c_str(), measured, p.estimate.time.stepSeconds, 100 * error);
  }
  ASSERT_FALSE(errors.empty());
  std::printf("  step time: %zu rows, median |error| %.1f%%\n", errors.size(),
              100 * median(errors));
}

} // namespace

namespace {

// swift-run itself on the H200 (benchmarks/runtime/side_by_side.sh, one
// micro-batch per step, ZeRO-0 on one GPU): the swift-run backend must
// predict its peak within 5% and its step time within 10% (issue 6).
TEST(Calibration, SwiftRunRowsWithinBounds) {
  mlir::MLIRContext context;
  std::ifstream in(std::string(SWIFT_CALIBRATION_DIR) + "/h200_swiftrun.jsonl");
  ASSERT_TRUE(in.good());
  int rows = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    auto r = nlohmann::json::parse(line);
    std::string model = presetName(r["model"]);
    int64_t B = r["micro_batch"], S = r["seq"];
    PricedJob p = priceJob(
        context, {"model=" + model, "backend=swift-run", "cluster.gpu=h200",
                  "cluster.gpus_per_node=1",
                  "training.sequence_length=" + std::to_string(S),
                  "training.global_batch_size=" + std::to_string(B),
                  "training.micro_batch_size=" + std::to_string(B),
                  "training.precision=" + r["precision"].get<std::string>(),
                  "strategy.checkpointing=" + r["checkpointing"].get<std::string>(),
                  "strategy.zero=0", "strategy.offload=none"});
    double peak = r["swift_peak_bytes"], tokens = r["swift_tokens_per_s"];
    double memoryError = (p.estimate.memory.peakBytes - peak) / peak;
    double speedError = (p.estimate.time.tokensPerSecond - tokens) / tokens;
    std::printf("  swift-run %-34s peak %+5.1f%%  tokens/s %+5.1f%%\n",
                r["config"].get<std::string>().c_str(), 100 * memoryError,
                100 * speedError);
    EXPECT_LE(std::abs(memoryError), 0.05) << r["config"];
    EXPECT_LE(std::abs(speedError), 0.10) << r["config"];
  }
  EXPECT_EQ(rows, 6);
}

// swift-run at long sequences on an H100 80 GB (issue 31; rows of
// test/data/calibration/h100_long_context.jsonl, made by
// benchmarks/runtime/long_context.sh): Llama-3.1-8B QLoRA/LoRA r32 and full
// bf16, 32K to 400K tokens, activation offload and MLP tiles as planned,
// and Llama-3.2-1B full fine-tuning with full checkpointing at 4K to 256K.
// The peak within 3% on every row, and the step time within 10% on the
// rows of 3 steps (one-step rows include the warm-up: printed only). Two
// rows ("fitted") set the one unexplained [T, hidden] of the MLP's backward
// moment (Memory.cpp); the others check it, except the "open" ones: known
// misses, bounded at 5% and counted.
TEST(Calibration, SwiftRunLongContextPeaksWithinBounds) {
  mlir::MLIRContext context;
  std::ifstream in(std::string(SWIFT_CALIBRATION_DIR) + "/h100_long_context.jsonl");
  ASSERT_TRUE(in.good());
  int rows = 0, checks = 0, opens = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    auto r = nlohmann::json::parse(line);
    std::vector<std::string> sets = {
        "model=" + r.value("model", std::string("llama3.1-8b")),
        "backend=swift-run", "cluster.gpu=h100",
        "cluster.gpus_per_node=1", "cluster.host.memory_gib=256",
        "training.global_batch_size=1", "training.micro_batch_size=1",
        "training.lora.rank=32", "training.lora.alpha=64",
        "training.lora.targets=all-linear"};
    for (const auto &[key, value] : r["sets"].items())
      sets.push_back(key + "=" + (value.is_string() ? value.get<std::string>()
                                                    : value.dump()));
    PricedJob p = priceJob(context, sets);
    const double peak = r["peak_bytes"];
    const double error = (p.estimate.memory.peakBytes - peak) / peak;
    const double step = r["step_seconds"];
    const double stepError = (p.estimate.time.stepSeconds - step) / step;
    const int steps = r["steps"];
    std::printf("  swift-run %-20s peak %+5.1f%%%s  step %+5.1f%%%s\n",
                r["config"].get<std::string>().c_str(), 100 * error,
                r["fitted"].get<bool>() ? " (fitted)" : "", 100 * stepError,
                steps < 3 ? " (one step: warm-up included)" : "");
    // An open row is a known miss, bounded at 5% until it is explained.
    const bool open = r.contains("open");
    if (open)
      std::printf("    open: %s\n", r["open"].get<std::string>().c_str());
    EXPECT_LE(std::abs(error), open ? 0.05 : 0.03) << r["config"];
    if (steps >= 3)
      EXPECT_LE(std::abs(stepError), 0.10) << r["config"];
    checks += !r["fitted"].get<bool>() && !open;
    opens += open;
  }
  EXPECT_EQ(rows, 20);
  EXPECT_EQ(checks, 16);
  EXPECT_EQ(opens, 2);
}

// One causal attention op of S tokens, as AttentionOp counts its FLOPs.
swift::cost::OpProfile attentionOp(int64_t S, int64_t H, int64_t kv, int64_t D) {
  swift::cost::OpProfile op;
  op.kind = swift::cost::OpKind::Attention;
  op.heads = H;
  op.headDim = D;
  op.kvHeads = kv;
  op.forwardFlops = 4 * S * S * H * D / 2;
  op.backwardFlops = op.forwardFlops * 5 / 2;
  return op;
}

// swift-run's attention model (Time.cpp) against cuDNN's kernels in traces
// of six configurations on the H200: D 64 and 128, S 1024 to 16384, one
// with full checkpointing (two forwards; not in the fit). Each within 10%;
// the flat FLOP rate it replaced was off by -33% to +52% on them.
TEST(Calibration, SwiftRunAttentionWithinBoundsOnTraces) {
  std::ifstream in(std::string(SWIFT_CALIBRATION_DIR) + "/h200_attention.jsonl");
  ASSERT_TRUE(in.good());
  const GpuPreset *h200 = findGpuPreset("h200");
  ASSERT_TRUE(h200);
  swift::cost::Hardware hw;
  hw.bf16Tflops = h200->bf16Tflops;
  hw.hbmGBps = h200->hbmGBps;
  int rows = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    auto r = nlohmann::json::parse(line);
    const int64_t B = r["B"], S = r["S"], H = r["heads"], D = r["head_dim"];
    const swift::cost::OpProfile op = attentionOp(S, H, r["kv_heads"], D);
    const double perLayer =
        B * (r["forward_passes"].get<int>() *
                 swift::cost::swiftRunAttentionSeconds(op, S, hw, true) +
             swift::cost::swiftRunAttentionSeconds(op, S, hw, false));
    const double measured = r["attention_ms"].get<double>() * 1e-3 /
                            r["layers"].get<double>();
    const double error = (perLayer - measured) / measured;
    std::printf("  attention %-28s %.3f ms per layer, model %.3f (%+.1f%%)\n",
                r["config"].get<std::string>().c_str(), measured * 1e3,
                perLayer * 1e3, 100 * error);
    EXPECT_LE(std::abs(error), 0.10) << r["config"];
  }
  EXPECT_EQ(rows, 6);
}

// The same model, fitted on the H200's in-training traces above (S <=
// 16384), against cuDNN's causal forward and backward timed alone on an
// H100 at 4K to 256K (benchmarks/runtime/attention_lengths.py, 2026-12-05):
// every row held out (another GPU, lengths up to 16x longer). From 32K up
// the sum is within 10%; shorter, the kernels timed alone run 10-18%
// faster than the model (launch-bound at 4K), which the in-training rows
// (the traces above, and the 1B step times at 4K-256K in
// SwiftRunLongContextPeaksWithinBounds, within 8%) do not show; the
// forward/backward split, the FLOPs', is printed (the forward's share is
// 24-28% of the time against the model's 29%).
TEST(Calibration, SwiftRunAttentionHeldOutAcrossLengthsOnH100) {
  std::ifstream in(std::string(SWIFT_CALIBRATION_DIR) +
                   "/h100_attention_lengths.jsonl");
  ASSERT_TRUE(in.good());
  const GpuPreset *h100 = findGpuPreset("h100");
  ASSERT_TRUE(h100);
  swift::cost::Hardware hw;
  hw.bf16Tflops = h100->bf16Tflops;
  hw.hbmGBps = h100->hbmGBps;
  int rows = 0, checked = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    auto r = nlohmann::json::parse(line);
    const int64_t S = r["S"], H = r["heads"], D = r["head_dim"];
    const swift::cost::OpProfile op = attentionOp(S, H, r["kv_heads"], D);
    const double f = swift::cost::swiftRunAttentionSeconds(op, S, hw, true);
    const double b = swift::cost::swiftRunAttentionSeconds(op, S, hw, false);
    const double mf = r["forward_ms"].get<double>() * 1e-3,
                 mb = r["backward_ms"].get<double>() * 1e-3;
    const double ef = (f - mf) / mf, eb = (b - mb) / mb,
                 e = (f + b - mf - mb) / (mf + mb);
    std::printf("  attention %-12s S %6lld: forward %9.3f ms, model %9.3f (%+.1f%%);"
                " backward %9.3f ms, model %9.3f (%+.1f%%); sum %+.1f%%\n",
                r["model"].get<std::string>().c_str(), (long long)S, mf * 1e3,
                f * 1e3, 100 * ef, mb * 1e3, b * 1e3, 100 * eb, 100 * e);
    if (S < 32768)
      continue;
    ++checked;
    EXPECT_LE(std::abs(e), 0.10) << r["model"] << " S " << S;
  }
  EXPECT_EQ(rows, 14);
  EXPECT_EQ(checked, 8);
}

} // namespace
