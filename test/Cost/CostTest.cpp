//===- CostTest.cpp - cost model invariants and DeepSpeed's closed forms --===//

#include "PriceJob.h"

#include "swift/Cost/Search.h"

using namespace swift::job;
using namespace swift::job::testing;
namespace cost = swift::cost;

namespace {

using Priced = PricedJob;

Priced price(std::vector<std::string> sets) {
  static mlir::MLIRContext context;
  return priceJob(context, sets);
}

std::vector<std::string> deepspeed(int zero, const char *offload) {
  return {"model=llama3.1-8b", "backend=deepspeed", "cluster.gpus_per_node=8",
          "training.global_batch_size=8", "training.micro_batch_size=1",
          "strategy.zero=" + std::to_string(zero),
          std::string("strategy.offload=") + offload,
          "strategy.checkpointing=full"};
}

// DeepSpeed's own model-state estimators (estimate_zero2_model_states_mem_needs
// in deepspeed/runtime/zero/stage_1_and_2.py, estimate_zero3_model_states_mem_needs
// in stage3.py; its docs' "Memory Requirements"), per GPU in bytes: ZeRO-2
// 2P + 18P/N, with optimizer offload 2P; ZeRO-3 4L + 18P/N, 4L + 2P/N with
// optimizer offload, 4L with parameters offloaded too (P: parameters, N:
// GPUs, L: the largest layer's parameters). docs/cost-model.md, "Model
// states per backend and strategy".
TEST(DeepSpeed, ModelStatesEqualClosedForms) {
  Priced z2 = price(deepspeed(2, "none"));
  double P = z2.profile.parameters, N = 8;
  ASSERT_EQ(P, 8030261248.0);
  double L = std::max<double>({double(z2.profile.layerParameters),
                               double(z2.profile.embeddingParameters),
                               double(z2.profile.headParameters)});
  // Llama-8B's largest unit is its head: the untied lm_head and final norm.
  EXPECT_EQ(L, 128256.0 * 4096 + 4096);
  auto near = [](double a, double b) { return std::abs(a - b) <= 1; };
  EXPECT_TRUE(near(z2.estimate.memory.modelStateBytes, 2 * P + 18 * P / N));
  EXPECT_TRUE(near(price(deepspeed(2, "optimizer")).estimate.memory.modelStateBytes, 2 * P));
  EXPECT_TRUE(near(price(deepspeed(3, "none")).estimate.memory.modelStateBytes,
                   4 * L + 18 * P / N));
  EXPECT_TRUE(near(price(deepspeed(3, "optimizer")).estimate.memory.modelStateBytes,
                   4 * L + 2 * P / N));
  EXPECT_TRUE(near(price(deepspeed(3, "optimizer+params")).estimate.memory.modelStateBytes,
                   4 * L));
}

// Sharding more never costs model-state memory (FSDP2's ZeRO-2 and ZeRO-3
// hold the same shards; they differ in gathered parameters).
TEST(Cost, ShardingLowersModelStates) {
  for (const char *backend : {"hf", "deepspeed", "swift-run"}) {
    int64_t previous = INT64_MAX;
    for (int zero : {0, 2, 3}) {
      auto p = price({"model=llama3.1-8b", std::string("backend=") + backend,
                      "cluster.gpus_per_node=8", "training.global_batch_size=8",
                      "training.micro_batch_size=1",
                      "strategy.zero=" + std::to_string(zero), "strategy.offload=none",
                      "strategy.checkpointing=full"});
      EXPECT_LE(p.estimate.memory.modelStateBytes, previous) << backend << " zero " << zero;
      if (zero == 2) {
        EXPECT_LT(p.estimate.memory.modelStateBytes, previous) << backend;
      }
      previous = p.estimate.memory.modelStateBytes;
    }
  }
}

// Checkpointing trades compute for memory; both show in the estimate.
TEST(Cost, CheckpointingTradesTimeForMemory) {
  std::vector<std::string> base = {"model=llama3.2-1b", "backend=hf",
                                   "training.global_batch_size=32",
                                   "training.micro_batch_size=4", "strategy.zero=0",
                                   "strategy.offload=none"};
  auto none = base, full = base;
  none.push_back("strategy.checkpointing=none");
  full.push_back("strategy.checkpointing=full");
  auto a = price(none), b = price(full);
  EXPECT_LT(b.estimate.memory.peakBytes, a.estimate.memory.peakBytes);
  EXPECT_GT(b.estimate.time.computeSeconds, a.estimate.time.computeSeconds);
  EXPECT_GT(b.estimate.time.recomputeSeconds, 0);
  EXPECT_EQ(a.estimate.time.recomputeSeconds, 0);
}

// The breakdown explains the whole peak.
TEST(Cost, BreakdownSumsToPeak) {
  auto p = price({"model=qwen2.5-7b", "backend=hf", "cluster.gpus_per_node=8",
                  "training.global_batch_size=16", "training.micro_batch_size=2",
                  "strategy.zero=3", "strategy.offload=none",
                  "strategy.checkpointing=full"});
  int64_t sum = 0;
  for (const auto &part : p.estimate.memory.breakdown)
    sum += part.second;
  EXPECT_NEAR(double(sum), double(p.estimate.memory.peakBytes), 16.0);
  EXPECT_FALSE(p.estimate.memory.peak.phase.empty());
}

// The timeline walks the step in order, every decoder layer forward and
// backward, and its largest point is the peak, where the peak is said to be:
// for each backend, with and without checkpointing, LoRA/QLoRA and FP8.
TEST(Cost, TimelineWalksTheStepAndPeaksAtThePeak) {
  const std::vector<std::vector<std::string>> jobs = {
      {"model=qwen2.5-7b", "backend=hf", "cluster.gpus_per_node=8",
       "training.global_batch_size=16", "training.micro_batch_size=2",
       "strategy.zero=3", "strategy.offload=none", "strategy.checkpointing=full"},
      deepspeed(2, "optimizer"),
      {"model=llama3.1-8b", "backend=swift-run", "cluster.gpus_per_node=8",
       "training.global_batch_size=32", "training.micro_batch_size=4",
       "strategy.zero=1", "strategy.offload=none", "strategy.checkpointing=none"},
      {"model=llama3.1-8b", "backend=swift-run", "cluster.gpus_per_node=1",
       "training.global_batch_size=8", "training.micro_batch_size=1",
       "training.method=qlora", "strategy.zero=0", "strategy.offload=none",
       "strategy.checkpointing=full"},
      {"model=llama3.1-8b", "backend=swift-run", "cluster.gpu=h100",
       "cluster.gpus_per_node=8", "training.global_batch_size=32",
       "training.micro_batch_size=2", "training.precision=fp8-mixed",
       "strategy.zero=3", "strategy.offload=none", "strategy.checkpointing=selective"}};
  for (const auto &sets : jobs) {
    const Priced p = price(sets);
    const cost::MemoryEstimate &m = p.estimate.memory;
    ASSERT_FALSE(m.timeline.empty()) << sets[1];
    const int64_t L = 32 - (sets[0] == "model=qwen2.5-7b" ? 4 : 0); // 28 in Qwen2.5-7B
    int forward = 0, backward = 0;
    const cost::MemoryPoint *top = &m.timeline[0];
    for (const cost::MemoryPoint &q : m.timeline) {
      forward += q.at.phase == "forward" && q.at.op == "decoder layer";
      backward += q.at.phase == "backward" && q.at.op == "decoder layer";
      if (q.bytes > top->bytes)
        top = &q;
    }
    EXPECT_EQ(forward, L) << sets[1];
    EXPECT_EQ(backward, L) << sets[1];
    EXPECT_EQ(top->bytes, m.peakBytes) << sets[1];
    EXPECT_EQ(top->at.str(), m.peak.str()) << sets[1];
    EXPECT_EQ(m.timeline.front().at.str(), "forward, layer 0, decoder layer");
    EXPECT_EQ(m.timeline.back().at.phase, "optimizer");
  }
}

// A multi-node ZeRO-3 job pays for its collectives over the slower link.
TEST(Cost, InterNodeCommunicationCosts) {
  std::vector<std::string> base = {"model=llama3.1-8b", "backend=swift-run",
                                   "cluster.gpus_per_node=8", "training.global_batch_size=64",
                                   "training.micro_batch_size=1", "strategy.zero=3",
                                   "strategy.offload=none", "strategy.checkpointing=full"};
  auto one = base, two = base;
  two.push_back("cluster.nodes=2");
  two.push_back("cluster.interconnect.inter_node=ib-100g");
  auto a = price(one), b = price(two);
  EXPECT_GT(b.estimate.time.communicationSeconds / b.strategy.gradientAccumulation,
            a.estimate.time.communicationSeconds / a.strategy.gradientAccumulation);
  EXPECT_GT(a.estimate.time.mfu, 0);
  EXPECT_LT(a.estimate.time.mfu, 1);
}

// The report's "exposed communication X (of Y)": X never exceeds Y, also
// where fixed per-collective costs dominate (a small model on many GPUs).
TEST(Cost, ExposedCommunicationIsPartOfTheTotal) {
  for (int zero : {0, 1, 2, 3})
    for (const char *model : {"qwen2.5-0.5b", "llama3.1-8b"}) {
      auto p = price({std::string("model=") + model, "backend=swift-run",
                      "cluster.gpus_per_node=8", "cluster.nodes=8",
                      "training.sequence_length=256",
                      "training.global_batch_size=64",
                      "training.micro_batch_size=1",
                      "strategy.zero=" + std::to_string(zero),
                      "strategy.offload=none", "strategy.checkpointing=none"});
      EXPECT_LE(p.estimate.time.exposedCommunicationSeconds,
                p.estimate.time.communicationSeconds)
          << model << " zero " << zero;
      EXPECT_GT(p.estimate.time.exposedCommunicationSeconds, 0);
    }
}

} // namespace

//===----------------------------------------------------------------------===//
// LoRA and QLoRA (issue 14)
//===----------------------------------------------------------------------===//

namespace {

/// A named part of the breakdown at the peak (0 when absent).
double part(const Priced &p, const std::string &name) {
  for (const auto &[n, bytes] : p.estimate.memory.breakdown)
    if (n == name)
      return double(bytes);
  return 0;
}

bool near(double a, double b) { return std::abs(a - b) <= 16; }

/// Llama-3.1-8B with adapters of rank 16 on all seven linears, one
/// micro-batch per GPU, the strategy fixed.
std::vector<std::string> adapters(const std::string &backend, const std::string &method,
                                  int zero, int gpus,
                                  const std::string &offload = "none") {
  return {"model=llama3.1-8b", "backend=" + backend, "training.method=" + method,
          "cluster.gpus_per_node=" + std::to_string(gpus),
          "training.global_batch_size=" + std::to_string(gpus),
          "training.micro_batch_size=1", "strategy.zero=" + std::to_string(zero),
          "strategy.offload=" + offload, "strategy.checkpointing=full"};
}

// Llama-3.1-8B's decoder linears (q, k, v, o, gate, up, down) over its 32
// layers, and its adapters: rank x (in + out) on each.
constexpr double kLinears8B =
    32.0 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336);
constexpr double kAdapters8B =
    32.0 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336));
// bitsandbytes' NF4: 4 bits, an 8-bit absmax per 64, an fp32 scale per 256
// absmax.
constexpr double kNf4 = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);
// Host memory of one rank's process besides its buffers (docs/cost-model.md).
constexpr double kRankHostBytes = double(1 << 30);

// DeepSpeed trains only the adapters of a LoRA job: its gradients and
// optimizer partitions are the adapters' (the 70B LoRA ZeRO-3 on 8
// GPUs priced 131.42 GiB of optimizer states, those of full fine-tuning).
// The frozen bf16 base is whole at ZeRO-0-2 and partitioned at ZeRO-3.
TEST(DeepSpeed, LoraStatesAreTheAdapters) {
  Priced z3 = price({"model=llama3.1-70b", "backend=deepspeed", "training.method=lora",
                     "cluster.gpus_per_node=8", "training.global_batch_size=8",
                     "training.micro_batch_size=1", "strategy.zero=3",
                     "strategy.offload=none", "strategy.checkpointing=full"});
  double A = z3.profile.adapterParameters, P = z3.profile.parameters;
  EXPECT_EQ(A, 80.0 * 16 * (2 * (8192 + 8192) + 2 * (8192 + 1024) + 3 * (8192 + 28672)));
  EXPECT_TRUE(near(part(z3, "optimizer_states"), 16 * A / 8)) << part(z3, "optimizer_states");
  EXPECT_LT(part(z3, "optimizer_states"), 0.01 * 16 * P / 8);

  Priced z0 = price(adapters("deepspeed", "lora", 0, 8));
  Priced z2 = price(adapters("deepspeed", "lora", 2, 8));
  double P8 = z0.profile.parameters, N = 8;
  ASSERT_EQ(z0.profile.adapterParameters, kAdapters8B);
  EXPECT_TRUE(near(z0.estimate.memory.modelStateBytes, 2 * P8 + 20 * kAdapters8B));
  EXPECT_TRUE(near(z2.estimate.memory.modelStateBytes,
                   2 * P8 + 2 * kAdapters8B + 18 * kAdapters8B / N));
}

// HF + peft under FSDP2 shards the frozen base with the adapters (PEFT's
// own 70B LoRA + FSDP recipe): ZeRO-3 is priced, with a base shard of 1/N.
TEST(Cost, HfShardsTheFrozenBase) {
  Priced z0 = price(adapters("hf", "lora", 0, 8));
  Priced z3 = price(adapters("hf", "lora", 3, 8));
  double P = z3.profile.parameters, A = kAdapters8B, N = 8;
  // bf16 base + fp32 adapters, their gradients and AdamW states.
  EXPECT_TRUE(near(z0.estimate.memory.modelStateBytes, 2 * P + 16 * A));
  EXPECT_TRUE(near(z3.estimate.memory.modelStateBytes, (2 * P + 16 * A) / N));
  EXPECT_GT(part(z3, "gathered_parameters"), 0);
  EXPECT_LT(z3.estimate.memory.peakBytes, z0.estimate.memory.peakBytes);
}

// QLoRA quantizes the decoder linears only: embedding, lm_head and norms
// stay bf16, as bitsandbytes keeps them (8B: ~5.47 GiB with the fp32
// adapters, not the 4.01 GiB of NF4 over every parameter).
TEST(Cost, QloraKeepsEmbeddingAndHeadUnquantized) {
  Priced q = price(adapters("hf", "qlora", 0, 1));
  double P = q.profile.parameters;
  double base = kNf4 * kLinears8B + 2 * (P - kLinears8B);
  EXPECT_TRUE(near(part(q, "parameters"), base + 4 * kAdapters8B)) << part(q, "parameters");
  EXPECT_NEAR(part(q, "parameters") / double(1 << 30), 5.47, 0.01);
  // The embedding and the untied lm_head alone: 2 x 128256 x 4096 bf16.
  EXPECT_GT(base - kNf4 * kLinears8B, 2 * 2 * 128256.0 * 4096);
}

// swift-run: the adapters train under the per-stage rules of full
// parameters (bf16 copy, fp32 master in it plus 2 B of low bits, fp32
// moments, fp32 accumulators: plan::masterInComputeCopy); the
// frozen base has neither gradients nor optimizer states, and is sharded at
// ZeRO-3 only, in NF4 for QLoRA.
TEST(Cost, SwiftRunLoraStates) {
  double A = kAdapters8B, N = 8, unitAdapters = A / 32;
  Priced z0 = price(adapters("swift-run", "lora", 0, 1));
  double P = z0.profile.parameters;
  EXPECT_TRUE(near(z0.estimate.memory.modelStateBytes, 2 * P + 2 * A + 10 * A + 4 * A));
  Priced z1 = price(adapters("swift-run", "lora", 1, 8));
  EXPECT_TRUE(near(z1.estimate.memory.modelStateBytes,
                   2 * P + 2 * A + 10 * A / N + 4 * A + 4 * A / N));
  Priced z3 = price(adapters("swift-run", "lora", 3, 8));
  EXPECT_TRUE(near(z3.estimate.memory.modelStateBytes,
                   (2 * P + 2 * A) / N + 10 * A / N + 4 * A / N + 4 * unitAdapters));
  Priced q3 = price(adapters("swift-run", "qlora", 3, 8));
  double nf4Base = kNf4 * kLinears8B + 2 * (P - kLinears8B);
  EXPECT_TRUE(near(q3.estimate.memory.modelStateBytes,
                   (nf4Base + 2 * A) / N + 10 * A / N + 4 * A / N + 4 * unitAdapters));
  // Offloading parameters moves the base shard to the host.
  Priced o3 = price(adapters("swift-run", "qlora", 3, 8, "optimizer+params"));
  EXPECT_EQ(part(o3, "parameters"), 0);
  EXPECT_TRUE(near(double(o3.estimate.memory.hostBytes),
                   8 * (kRankHostBytes + 18 * A / N + 2 * A / N + nf4Base / N)));
}

// swift-run at ZeRO-0 frees its gradients after each optimizer step and
// allocates them again unit by unit (Engine::gradTarget): the peak, at the
// start of the last layer's backward, holds the head's and that layer's
// gradients, not the model's; with gradient accumulation they are whole
// through the later micro-batches.
TEST(Cost, SwiftRunGradientsLiveFromTheirUnitsBackward) {
  auto job = [](int accumulation) {
    return price({"model=llama3.1-8b", "backend=swift-run", "cluster.gpu=h200",
                  "cluster.gpus_per_node=1", "training.precision=bf16",
                  "training.sequence_length=4096", "training.micro_batch_size=1",
                  "training.global_batch_size=" + std::to_string(accumulation),
                  "strategy.zero=0", "strategy.offload=none",
                  "strategy.checkpointing=none"});
  };
  Priced one = job(1), two = job(2);
  const swift::cost::ModelProfile &m = one.profile;
  double P = m.parameters, layer = m.layerParameters;
  double head = double(m.vocabSize) * m.hiddenSize + m.hiddenSize;
  EXPECT_EQ(one.estimate.memory.peak.phase, "backward");
  EXPECT_EQ(one.estimate.memory.peak.layer, m.numLayers - 1);
  EXPECT_EQ(part(one, "gradient_accumulators"), 0);
  EXPECT_TRUE(near(part(one, "gradients"), 2 * (head + layer)))
      << part(one, "gradients");
  EXPECT_TRUE(near(part(two, "gradient_accumulators"), 2 * P));
  // The model states are the same; only their lifetimes differ.
  EXPECT_EQ(one.estimate.memory.modelStateBytes,
            two.estimate.memory.modelStateBytes);
  // Accumulating, the peak (in the loss, where the later micro-batches'
  // forward holds every gradient) is higher by the gradients of the units
  // not yet reached at the single step's peak, and by less than all.
  double higher = double(two.estimate.memory.peakBytes - one.estimate.memory.peakBytes);
  EXPECT_GE(higher, 2 * (P - head - layer) - 0.01 * P);
  EXPECT_LT(higher, 2 * P);
}

// swift-run's update in backward (plan::updatesInBackward): without
// clipping, on one rank, each unit's gradient is freed once AdamW updated
// it during the backward, so a fully checkpointed step (whose peak is where
// the gradients pile up) holds a layer or two of them, not the model's.
// Clipping needs every gradient before the first update; several ranks
// reduce them first; accumulated micro-batches hold them all anyway.
TEST(Cost, SwiftRunUpdateInBackwardFreesGradients) {
  auto job = [](bool clip, int gpus, int accumulation) {
    std::vector<std::string> keys = {
        "model=llama3.1-8b", "backend=swift-run", "cluster.gpu=h200",
        "cluster.gpus_per_node=" + std::to_string(gpus),
        "training.precision=bf16", "training.sequence_length=4096",
        "training.micro_batch_size=1",
        "training.global_batch_size=" + std::to_string(gpus * accumulation),
        "strategy.zero=0", "strategy.offload=none",
        "strategy.checkpointing=full"};
    if (clip)
      keys.push_back("training.max_grad_norm=1.0");
    return price(keys);
  };
  Priced during = job(false, 1, 1), after = job(true, 1, 1);
  const swift::cost::ModelProfile &m = during.profile;
  const double P = m.parameters, layer = m.layerParameters,
               table = double(m.vocabSize) * m.hiddenSize;
  // After the backward: every bf16 gradient, at the optimizer step.
  EXPECT_TRUE(near(part(after, "gradients"), 2 * P)) << part(after, "gradients");
  // During: at most the head's (lm_head and norm) and two layers'.
  EXPECT_LE(part(during, "gradients"), 2 * (table + m.hiddenSize + 2 * layer));
  const double saved = double(after.estimate.memory.peakBytes -
                              during.estimate.memory.peakBytes);
  // The peak moves to the recompute of the last layer; at 8B (bf16, 2 B
  // per gradient) over three quarters of the gradients' bytes are saved
  // (measured on the H200: 60.08 -> 47.51 GiB, 12.57 of 14.96 GiB).
  EXPECT_GT(saved, 0.75 * 2 * P) << saved / P;
  for (auto [gpus, accumulation] : {std::pair{2, 1}, std::pair{1, 2}}) {
    SCOPED_TRACE(std::to_string(gpus) + " GPUs, accumulation " +
                 std::to_string(accumulation));
    EXPECT_EQ(job(false, gpus, accumulation).estimate.memory.peakBytes,
              job(true, gpus, accumulation).estimate.memory.peakBytes);
  }
}

// swift-run at ZeRO-3 keeps plan::kReductionsInFlight reduce-scatters in
// flight, each holding its unit's full fp32 micro-batch gradient (measured
// at world 2, 1B, micro-batch 4 x 4: peak 23.16 GiB; the plan without them
// said 20.54). The tied table's gradient lives from the head's backward to
// the embedding's; with accumulation the last reductions (the embedding's
// among them) are still in flight through the next micro-batch.
TEST(Cost, SwiftRunZero3HoldsReductionsInFlight) {
  auto job = [](int accumulation) {
    return price({"model=llama3.2-1b", "backend=swift-run", "cluster.gpu=h200",
                  "cluster.gpus_per_node=2", "training.precision=bf16-mixed",
                  "training.sequence_length=2048", "training.micro_batch_size=4",
                  "training.global_batch_size=" + std::to_string(8 * accumulation),
                  "strategy.zero=3", "strategy.offload=none",
                  "strategy.checkpointing=none"});
  };
  Priced one = job(1), four = job(4);
  const swift::cost::ModelProfile &m = one.profile;
  const double table = 4.0 * m.embeddingParameters, layer = 4.0 * m.layerParameters;
  EXPECT_GE(part(one, "gradients"), table + layer) << part(one, "gradients");
  EXPECT_LE(part(one, "gradients"),
            table + (1 + swift::plan::kReductionsInFlight) * layer + 1e6);
  // The same micro-batch, states and shards; accumulating adds the carried
  // reductions: at least the embedding's gradient.
  EXPECT_EQ(part(one, "gradient_accumulators"), part(four, "gradient_accumulators"));
  EXPECT_GE(double(four.estimate.memory.peakBytes - one.estimate.memory.peakBytes),
            table);
}

// What swift-run's Engine pins on the host under offload, per element of
// its optimizer partition: fp32 master + moments (12 B), the downloaded
// fp32 gradient (4 B), the bf16 values it uploads (2 B); the parameter
// shard only when parameters are offloaded too; and each rank's process.
TEST(Cost, SwiftRunHostMemoryIsWhatTheEngineAllocates) {
  auto host = [](int zero, const char *offload) {
    Priced p = price({"model=llama3.1-8b", "backend=swift-run",
                      "cluster.gpus_per_node=8", "training.global_batch_size=8",
                      "training.micro_batch_size=1",
                      "strategy.zero=" + std::to_string(zero),
                      std::string("strategy.offload=") + offload,
                      "strategy.checkpointing=full"});
    return std::make_pair(double(p.estimate.memory.hostBytes),
                          double(p.profile.parameters));
  };
  auto [h1, P] = host(1, "optimizer");
  EXPECT_TRUE(near(h1, 8 * (kRankHostBytes + 18 * P / 8))) << h1 / P;
  auto [h3, P3] = host(3, "optimizer");
  EXPECT_TRUE(near(h3, 8 * (kRankHostBytes + 18 * P3 / 8))) << h3 / P3;
  auto [h3p, P3p] = host(3, "optimizer+params");
  EXPECT_TRUE(near(h3p, 8 * (kRankHostBytes + 20 * P3p / 8))) << h3p / P3p;
}

// swift-run LoRA keeps what full fine-tuning keeps (the adapters read the
// base linears' inputs) plus each adapter's rank-wide intermediate, and a
// dropped copy of its input when dropout is on.
TEST(Cost, SwiftRunLoraActivations) {
  auto layer = [](std::vector<std::string> sets) {
    sets.insert(sets.end(), {"strategy.checkpointing=none"});
    return double(price(sets).estimate.memory.layerActivationBytes);
  };
  std::vector<std::string> base = adapters("swift-run", "full", 0, 1);
  base.pop_back(); // checkpointing
  double T = 2048; // tokens of the micro-batch
  double full = layer(base);
  base[2] = "training.method=lora";
  double lora = layer(base);
  EXPECT_EQ(lora - full, T * 2 * 16 * 7);
  base.push_back("training.lora.dropout=0.1");
  double sumIn = 4 * 4096 + 2 * 4096 + 14336; // q, k, v, o, gate, up, down
  EXPECT_EQ(layer(base) - full, T * 2 * 16 * 7 + T * 2 * sumIn);
}

// A frozen base has no weight-gradient GEMMs: the decoder linears'
// backward is the input gradient alone, about half of full fine-tuning's,
// so a LoRA step computes ~2/3 of a full one (forward 1 + backward 1 vs 1 +
// 2), plus the adapters and attention, whose backward is unchanged. QLoRA adds dequantizing each layer per pass and a
// bf16 copy of one layer's linears to the memory.
TEST(Cost, SwiftRunLoraTime) {
  std::vector<std::string> sets = adapters("swift-run", "full", 0, 1);
  sets.back() = "strategy.checkpointing=none";
  sets.push_back("cluster.gpu=h200");
  Priced full = price(sets);
  sets[2] = "training.method=lora";
  Priced lora = price(sets);
  double ratio = lora.estimate.time.computeSeconds / full.estimate.time.computeSeconds;
  EXPECT_GT(ratio, 0.64);
  EXPECT_LT(ratio, 0.80);
  sets[2] = "training.method=qlora";
  sets.back() = "strategy.checkpointing=full";
  Priced qlora = price(sets);
  sets[2] = "training.method=lora";
  Priced loraCkpt = price(sets);
  EXPECT_GT(qlora.estimate.time.computeSeconds, loraCkpt.estimate.time.computeSeconds);
  EXPECT_EQ(qlora.estimate.memory.peak.phase, "backward");
  // The layer's base buffer in bf16: its linears and two norms.
  EXPECT_TRUE(near(part(qlora, "dequantized_weights"), 2 * (kLinears8B / 32 + 2 * 4096)));
  EXPECT_EQ(part(loraCkpt, "dequantized_weights"), 0);
}

// fp8-mixed / fp8-bf16 on swift-run: the decoder linears' GEMMs at the FP8
// rate plus the bytes of their casts; model states as the storage twin
// (bf16-mixed / bf16) stores them; activations as the twin's but for the
// inputs of q/k/v, gate/up and down, kept as e4m3 codes (1 B, not 2; o's
// input is attention's output, kept anyway); plus the FP8 copies of one
// GEMM's operands while it runs. MFU stays against the bf16 peak: the same
// model FLOPs.
TEST(Cost, Fp8GemmsRunFasterAndStoreAsTheirTwin) {
  const std::pair<const char *, const char *> twins[] = {{"fp8-mixed", "bf16-mixed"},
                                                         {"fp8-bf16", "bf16"}};
  bool copiesAtPeak = false;
  for (auto [fp8, twin] : twins)
    for (const char *checkpointing : {"none", "full"})
      for (int zero : {0, 3}) {
        std::vector<std::string> sets = {
            "model=llama3.1-8b", "cluster.gpu=h200", "cluster.gpus_per_node=8",
            "training.global_batch_size=16", "training.micro_batch_size=2",
            "strategy.zero=" + std::to_string(zero), "strategy.offload=none",
            std::string("strategy.checkpointing=") + checkpointing,
            std::string("training.precision=") + twin};
        std::string what = std::string(fp8) + ", checkpointing " +
                           checkpointing + ", zero " + std::to_string(zero);
        Priced b = price(sets);
        sets.back() = std::string("training.precision=") + fp8;
        Priced a = price(sets);
        const cost::TimeEstimate &ta = a.estimate.time, &tb = b.estimate.time;
        EXPECT_LT(ta.stepSeconds, 0.95 * tb.stepSeconds) << what;
        EXPECT_GT(ta.stepSeconds, 0.5 * tb.stepSeconds) << what;
        EXPECT_LT(ta.computeSeconds, tb.computeSeconds) << what;
        if (std::string(checkpointing) == "full")
          EXPECT_LT(ta.recomputeSeconds, tb.recomputeSeconds) << what;
        EXPECT_NEAR(ta.mfu / tb.mfu, tb.stepSeconds / ta.stepSeconds, 1e-9) << what;
        // What is stored and sent is the twin's.
        EXPECT_EQ(ta.optimizerSeconds, tb.optimizerSeconds) << what;
        EXPECT_EQ(ta.communicationSeconds, tb.communicationSeconds) << what;
        const cost::MemoryEstimate &ma = a.estimate.memory, &mb = b.estimate.memory;
        EXPECT_EQ(ma.modelStateBytes, mb.modelStateBytes) << what;
        EXPECT_EQ(ma.hostBytes, mb.hostBytes) << what;
        // The largest GEMM, stacked gate/up (N 2 x 14336, K 4096) at T =
        // 2 x 2048 tokens: W and W^T, x and x^T, dy and dy^T in one byte.
        double T = 2 * 2048, N = 2 * 14336, K = 4096, I = 14336;
        double copies = 2 * N * K + 2 * T * K + 2 * T * N;
        // One byte less per element of the inputs of q/k/v (K), gate/up (K)
        // and down (I), per layer; under full checkpointing the one layer
        // being recomputed holds them.
        double codes = T * (K + K + I);
        EXPECT_EQ(mb.layerActivationBytes - ma.layerActivationBytes, codes) << what;
        const double layers = std::string(checkpointing) == "full" ? 1 : 32;
        for (auto [fa, fb] : {std::pair{ma.peakBytes, mb.peakBytes},
                              {ma.backwardPeakBytes, mb.backwardPeakBytes},
                              {ma.forwardPeakBytes, mb.forwardPeakBytes}}) {
          EXPECT_GE(fa, fb - layers * codes) << what;
          EXPECT_LE(fa, fb + copies) << what;
        }
        // A peak inside a decoder layer holds the copies.
        if (ma.peak.op == "decoder layer") {
          EXPECT_TRUE(near(part(a, "fp8_copies"), copies)) << what;
          copiesAtPeak = true;
        }
        EXPECT_EQ(part(b, "fp8_copies"), 0) << what;
      }
  EXPECT_TRUE(copiesAtPeak);
}

// Where FP8 cannot run (the job reader refuses it: an Ampere GPU, another
// backend, adapters) the cost model prices the storage twin rather than
// divide by a zero FP8 peak.
TEST(Cost, Fp8IsPricedOnlyWhereItRuns) {
  Diagnostic diag;
  EXPECT_FALSE(loadJob(writeTemp(kBaseJob),
                       {"training.precision=fp8-mixed", "cluster.gpu=a100-80g"},
                       diag));
  EXPECT_EQ(diag.field, "training.precision");
  std::vector<std::string> sets = {"cluster.gpu=a100-80g", "strategy.zero=0",
                                   "strategy.offload=none",
                                   "strategy.checkpointing=none",
                                   "training.micro_batch_size=1"};
  Priced a100 = price(sets);
  for (cost::Precision p : {cost::Precision::Fp8Mixed, cost::Precision::Fp8Bf16}) {
    cost::TrainingSetup setup = a100.setup;
    setup.precision = p;
    cost::TrainingSetup twin = a100.setup;
    twin.precision = swift::plan::storagePrecision(p);
    cost::Estimate e = cost::estimate(a100.profile, setup, a100.hw, a100.strategy);
    cost::Estimate t = cost::estimate(a100.profile, twin, a100.hw, a100.strategy);
    EXPECT_TRUE(std::isfinite(e.time.stepSeconds));
    EXPECT_EQ(e.time.stepSeconds, t.time.stepSeconds);
    EXPECT_EQ(e.memory.peakBytes, t.memory.peakBytes);
  }
}

} // namespace

// A stack that runs some ZeRO stages only narrows the search to them
// (FixedDecisions::allowedZero; ms-swift's QLoRA: 0-2). The 70B QLoRA on
// two A10s fits under DeepSpeed at ZeRO-3 only: allowed 0-2, nothing fits,
// and the closest is the best outcome over the stages searched one by one
// (the one needing least, ties to the lower stage). A fixed stage outside
// the allowed ones is an error naming strategy.zero.
TEST(Search, AllowedZeroStagesNarrowTheChoice) {
  auto p = price({"model=llama3.1-70b", "backend=deepspeed",
                  "training.method=qlora", "cluster.gpu=a10",
                  "cluster.gpus_per_node=2", "cluster.host.memory_gib=128",
                  "training.micro_batch_size=1", "strategy.zero=3",
                  "strategy.offload=optimizer+params",
                  "strategy.checkpointing=full"});
  cost::FixedDecisions open;
  cost::SearchResult any = cost::search(p.profile, p.setup, p.hw, open);
  ASSERT_TRUE(any.best);
  EXPECT_EQ(any.best->strategy.zero, 3);

  cost::FixedDecisions narrowed;
  narrowed.allowedZero = {0, 1, 2};
  cost::SearchResult r = cost::search(p.profile, p.setup, p.hw, narrowed);
  EXPECT_EQ(r.error, "");
  EXPECT_FALSE(r.best);
  ASSERT_TRUE(r.closest);
  EXPECT_LE(r.closest->strategy.zero, 2);
  int64_t least = INT64_MAX;
  int leastZero = -1;
  for (int zero : {0, 1, 2}) {
    cost::FixedDecisions one;
    one.zero = zero;
    cost::SearchResult s = cost::search(p.profile, p.setup, p.hw, one);
    ASSERT_TRUE(s.closest) << "zero " << zero;
    if (s.closest->estimate.memory.peakBytes < least) {
      least = s.closest->estimate.memory.peakBytes;
      leastZero = zero;
    }
  }
  EXPECT_EQ(r.closest->strategy.zero, leastZero);
  EXPECT_EQ(r.closest->estimate.memory.peakBytes, least);

  cost::FixedDecisions fixed3 = narrowed;
  fixed3.zero = 3;
  cost::SearchResult refused = cost::search(p.profile, p.setup, p.hw, fixed3);
  EXPECT_FALSE(refused.best || refused.closest);
  EXPECT_EQ(refused.error,
            "strategy.zero: 3 is not among the stages allowed here (0-2)");
}

namespace {
/// Llama-3.1-8B QLoRA r32 at S tokens, one H100 (80 GB), fully
/// checkpointed, with `extra` keys.
std::vector<std::string> longContext(int64_t S, std::vector<std::string> extra) {
  std::vector<std::string> sets = {
      "model=llama3.1-8b", "training.method=qlora", "training.lora.rank=32",
      "cluster.gpu=h100", "cluster.gpus_per_node=1",
      "cluster.host.memory_gib=256", "training.global_batch_size=1",
      "training.sequence_length=" + std::to_string(S),
      "training.micro_batch_size=1", "strategy.zero=0", "strategy.offload=none",
      "strategy.checkpointing=full"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return sets;
}
} // namespace

// Each offloaded layer's input leaves the GPU for pinned host memory; one
// crosses at a time on the GPU. Host memory grows by what the GPU sheds.
TEST(Cost, ActivationOffloadMovesLayerInputsToTheHost) {
  const int64_t S = 131072;
  auto keep = price(longContext(S, {}));
  auto some = price(longContext(S, {"strategy.offload_activations=8"}));
  auto all = price(longContext(S, {"strategy.offload_activations=all"}));
  const double input = double(S) * 4096 * 2; // one layer's bf16 input
  EXPECT_EQ(some.strategy.offloadedLayers(32), 8);
  EXPECT_EQ(all.strategy.offloadedLayers(32), 32);
  // The GPU's peak: 8 (32) inputs fewer, one back in flight. Kept, the
  // recomputed layer's input is the kept one; all offloaded, it is a copy
  // brought back beside the next one prefetched.
  EXPECT_NEAR(double(keep.estimate.memory.peakBytes - some.estimate.memory.peakBytes),
              7 * input, 0.01 * input);
  EXPECT_NEAR(double(keep.estimate.memory.peakBytes - all.estimate.memory.peakBytes),
              30 * input, 0.01 * input);
  EXPECT_NEAR(double(all.estimate.memory.hostBytes - keep.estimate.memory.hostBytes),
              32 * input, 0.01 * input);
  EXPECT_EQ(all.estimate.memory.offloadedActivationBytes, int64_t(32 * input));
  bool named = false;
  for (const auto &[part, bytes] : all.estimate.memory.breakdown)
    named |= part == "offload_buffers" && bytes == int64_t(input);
  EXPECT_TRUE(named) << "the input crossing is a part of the peak";
  // On an H100's PCIe 5 the copies hide under these layers' compute.
  EXPECT_GT(all.estimate.time.activationCopySeconds, 0);
  EXPECT_EQ(all.estimate.time.activationOffloadSeconds, 0);
  EXPECT_EQ(keep.estimate.time.activationCopySeconds, 0);
}

// A layer's backward has two moments on swift-run. Tiled at 400K, the MLP's
// is small and the peak sits in the attention core's: SDPA's backward
// buffers at the 45,184 B/token measured on the H100 for Llama-3.1-8B's
// heads (benchmarks/runtime/attention_memory.py), o_proj's input gradient
// and the residual stream's two gradients beside them. Untiled at 131K the
// SwiGLU backward's three [T, ffn] win.
TEST(Cost, LongSequencesPeakInTheAttentionCoresBackward) {
  const double S = 409600, C = 4096, q = 32 * 128;
  auto tiled = price(longContext(409600, {"strategy.offload_activations=24",
                                          "strategy.mlp_tile_tokens=8192"}));
  EXPECT_EQ(tiled.estimate.memory.peak.phase, "backward");
  const double attention = part(tiled, "attention_backward");
  EXPECT_NEAR(attention / S - 2 * q - 2 * 2 * C, 45184, 1);
  EXPECT_EQ(part(tiled, "backward_temporaries"), 0) << "the MLP's moment is not the peak";

  auto untiled = price(longContext(131072, {}));
  EXPECT_EQ(part(untiled, "attention_backward"), 0);
  // d(SwiGLU), d(gate), d(up) and the two residual gradients.
  EXPECT_NEAR(part(untiled, "backward_temporaries") / 131072, 3 * 2 * 14336 + 2 * 2 * C, 1);

  // Dropping the tiles moves the peak back into the MLP, by more than the
  // three [T, ffn] the tiles no longer drop from the recompute.
  auto sameUntiled = price(longContext(409600, {"strategy.offload_activations=24",
                                                "strategy.mlp_tile_tokens=0"}));
  EXPECT_GT(part(sameUntiled, "backward_temporaries"), 0);
  EXPECT_GT(sameUntiled.estimate.memory.peakBytes,
            tiled.estimate.memory.peakBytes + 3 * 2 * 14336 * S);
}

// A copy slower than its layer's compute shows: what it takes beyond the
// layer's forward (out) and backward (in), every offloaded layer.
TEST(Cost, SlowHostLinkExposesTheCopies) {
  auto fast = price(longContext(4096, {"strategy.offload_activations=all"}));
  auto slow = price(longContext(4096, {"strategy.offload_activations=all",
                                       "cluster.gpu.host_link_gbps=0.05"}));
  EXPECT_GT(slow.estimate.time.activationOffloadSeconds, 0);
  EXPECT_LE(slow.estimate.time.activationOffloadSeconds,
            slow.estimate.time.activationCopySeconds);
  EXPECT_GT(slow.estimate.time.stepSeconds, fast.estimate.time.stepSeconds);
  // Only the copies' exposure differs between the two.
  EXPECT_NEAR(slow.estimate.time.stepSeconds - fast.estimate.time.stepSeconds,
              slow.estimate.time.activationOffloadSeconds -
                  fast.estimate.time.activationOffloadSeconds,
              1e-6 * slow.estimate.time.stepSeconds);
}

// Tiles: the MLP keeps only its input, and its backward's temporaries span
// one tile; a fully checkpointed layer's recompute skips its MLP, so tiles
// cost it no time; an uncheckpointed one recomputes gate/up.
TEST(Cost, MlpTilesDropTheMlpsInternals) {
  const int64_t S = 131072;
  auto whole = price(longContext(S, {}));
  auto tiled = price(longContext(S, {"strategy.mlp_tile_tokens=8192"}));
  // gate/up (2 I) and the SwiGLU output (I), bf16, of the recomputed layer
  const double dropped = double(S) * 3 * 14336 * 2;
  EXPECT_GT(double(whole.estimate.memory.peakBytes - tiled.estimate.memory.peakBytes),
            dropped);
  EXPECT_NEAR(tiled.estimate.time.computeSeconds, whole.estimate.time.computeSeconds,
              1e-9 * whole.estimate.time.computeSeconds);
  std::vector<std::string> none = {
      "model=llama3.2-1b", "training.global_batch_size=8",
      "training.micro_batch_size=1", "cluster.gpus_per_node=8",
      "strategy.zero=0", "strategy.offload=none", "strategy.checkpointing=none"};
  auto a = price(none);
  none.push_back("strategy.mlp_tile_tokens=512");
  auto b = price(none);
  EXPECT_LT(b.estimate.memory.peakBytes, a.estimate.memory.peakBytes);
  EXPECT_GT(b.estimate.time.recomputeSeconds, a.estimate.time.recomputeSeconds);
  EXPECT_GT(b.estimate.memory.layerActivationBytes, 0);
  EXPECT_LT(b.estimate.memory.layerActivationBytes, a.estimate.memory.layerActivationBytes);
}

// The search adds offload, then tiles, to a fully checkpointed strategy that
// does not fit, offloading the fewest layers that make it fit; a job that
// fixes them keeps them; it never offloads to fix the host's memory.
TEST(Search, LongContextOffloadsTheFewestLayersThatFit) {
  for (int64_t S : {196608, 409600}) {
    SCOPED_TRACE(S);
    auto p = price(longContext(S, {}));
    cost::FixedDecisions fixed;
    fixed.zero = 0;
    fixed.offload = cost::Offload::None;
    fixed.checkpointing = cost::Checkpointing::Full;
    cost::SearchResult r = cost::search(p.profile, p.setup, p.hw, fixed);
    ASSERT_TRUE(r.best) << "nothing fits at " << S;
    const cost::Strategy &s = r.best->strategy;
    ASSERT_GT(s.offloadActivations, 0) << cost::describe(s);
    EXPECT_EQ(s.mlpTileTokens > 0, S > 200000) << cost::describe(s);
    // One layer fewer on the host does not fit the GPU.
    cost::Strategy fewer = s;
    fewer.offloadActivations -= 1;
    if (fewer.offloadActivations > 0) {
      cost::Estimate e = cost::estimate(p.profile, p.setup, p.hw, fewer);
      EXPECT_GT(e.memory.peakBytes, r.usableBytes);
    }
    EXPECT_LE(r.best->estimate.memory.peakBytes, r.usableBytes);
    // Fixed to none: nothing fits.
    cost::FixedDecisions pinned = fixed;
    pinned.offloadActivations = 0;
    pinned.mlpTileTokens = 0;
    cost::SearchResult none = cost::search(p.profile, p.setup, p.hw, pinned);
    EXPECT_FALSE(none.best);
  }
  // A strategy short of host memory, not GPU memory, gets no offload.
  auto p = price(longContext(8192, {"cluster.host.memory_gib=8"}));
  cost::FixedDecisions fixed;
  fixed.checkpointing = cost::Checkpointing::Full;
  cost::SearchResult r = cost::search(p.profile, p.setup, p.hw, fixed);
  for (const cost::Candidate &c : r.alternatives)
    EXPECT_EQ(c.strategy.offloadActivations, 0) << cost::describe(c.strategy);
}
