//===- EmitTest.cpp - schedule materialization and the emitters -----------===//
//
// Builds jobs through the importer, runs buildMaterializePipeline(), and
// checks what the emitters write: plan.json's schedule is plan/'s
// buildSchedule() for the job (the passes translate it into ops and the
// emitter back, losing nothing) and passes the plan layer's validation,
// ds_config.json carries the strategy in DeepSpeed's field names, the
// launch text matches the cluster.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "swift/Passes/Pipelines.h"
#include "swift/Emit/Emit.h"
#include "swift/Passes/Profile.h"
#include "swift/Plan/Plan.h"
#include "swift/Plan/Schedule.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

#include <nlohmann/json.hpp>

using namespace swift::job;
using namespace swift::job::testing;
namespace rt = swift::plan;
using json = nlohmann::json;

namespace {

mlir::MLIRContext &context() {
  static mlir::MLIRContext ctx;
  return ctx;
}

struct Materialized {
  JobSpec job;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// kBaseJob (llama3.2-1b, 8 x h100) with 3 layers, micro-batch 1 and `sets`.
Materialized materialize(std::vector<std::string> sets) {
  sets.insert(sets.begin(),
              {"model.num_hidden_layers=3", "training.micro_batch_size=1"});
  Diagnostic diag;
  auto job = loadJob(writeTemp(kBaseJob), sets, diag);
  EXPECT_TRUE(job) << diag.str();
  mlir::swift::PlannedJob planned =
      mlir::swift::planJob(*job, context(), mlir::swift::PlanningOptions());
  EXPECT_EQ(planned.error, "");
  return Materialized{*job, std::move(planned.module)};
}

json toJson(const llvm::json::Value &v) {
  std::string text;
  llvm::raw_string_ostream(text) << v;
  return json::parse(text);
}

json deepSpeed(std::vector<std::string> sets) {
  Materialized m = materialize(std::move(sets));
  std::string text;
  llvm::raw_string_ostream os(text);
  EXPECT_TRUE(mlir::succeeded(swift::emit::emitDeepSpeedConfig(*m.module, os)));
  return json::parse(text);
}

std::string launch(std::vector<std::string> sets) {
  Materialized m = materialize(std::move(sets));
  std::string text;
  llvm::raw_string_ostream os(text);
  EXPECT_TRUE(mlir::succeeded(swift::emit::emitLaunch(*m.module, os)));
  return text;
}

/// The plan of the same job built from the job file alone (not the IR), with
/// the schedule swift-run completes a plan without one with.
rt::Plan planFromJob(const JobSpec &job, const json &strategy) {
  rt::Plan p;
  const ModelSpec &s = job.model;
  rt::ModelConfig &m = p.model;
  m.hiddenSize = s.hiddenSize;
  m.intermediateSize = s.intermediateSize;
  m.numLayers = s.numHiddenLayers;
  m.numHeads = s.numAttentionHeads;
  m.numKvHeads = s.numKeyValueHeads;
  m.headDim = s.headDim;
  m.vocabSize = s.vocabSize;
  m.tieWordEmbeddings = s.tieWordEmbeddings;
  m.rmsNormEps = s.rmsNormEps;
  m.ropeTheta = s.ropeTheta;
  m.ropeScaling = s.ropeScaling;
  m.qkvBias = s.qkvBias;
  m.oBias = s.oBias;
  m.qkNorm = s.qkNorm;
  p.world.size = job.cluster.numGpus();
  p.world.gpusPerNode = job.cluster.gpusPerNode;
  p.training.sequenceLength = job.training.sequenceLength;
  p.training.globalBatchSize = job.training.globalBatchSize;
  p.training.microBatchSize = *job.training.microBatchSize;
  p.training.gradientAccumulation =
      job.training.globalBatchSize / (p.training.microBatchSize * p.world.size);
  rt::StrategyConfig &st = p.strategy;
  st.zero = strategy["zero"];
  st.offload =
      *rt::parseEnum<rt::Offload>(strategy["offload"].get<std::string>());
  st.checkpointing = *rt::parseEnum<rt::Checkpointing>(
      strategy["checkpointing"].get<std::string>());
  st.checkpointLayers = strategy.value("checkpoint_layers", int64_t(-1));
  st.bucketBytes = strategy["bucket_bytes"];
  st.prefetchDepth = strategy["prefetch_depth"];
  p.schedule =
      rt::buildSchedule(p.model, p.strategy, rt::unitParameterCounts(p.model))
          .schedule;
  return p;
}

// The passes translate buildSchedule()'s result into ops and the emitter
// translates the ops back: what plan.json gets is buildSchedule()'s schedule
// for the job as the plan layer sees it, entry for entry, and the plan
// layer's validation accepts it. So the translations lose nothing, the IR's
// parameter counts size the buckets as plan.json's model does, and the
// model the passes read from the IR (modelConfig) is the job's.
TEST(Emit, ScheduleIsBuildScheduleOfTheJob) {
  const std::vector<std::vector<std::string>> cases = {
      {"strategy.zero=0", "strategy.offload=none",
       "strategy.checkpointing=none"},
      {"strategy.zero=1", "strategy.offload=optimizer",
       "strategy.checkpointing=full", "strategy.checkpoint_layers=1"},
      {"strategy.zero=2", "strategy.offload=none",
       "strategy.checkpointing=selective"},
      {"strategy.zero=3", "strategy.offload=optimizer+params",
       "strategy.checkpointing=full", "strategy.checkpoint_layers=2"},
      // Untied embeddings: the head owns its lm_head, no unit 0 gathers.
      {"model=llama3.1-8b", "model.num_hidden_layers=2", "strategy.zero=3",
       "strategy.offload=none", "strategy.checkpointing=none"},
      // Qwen2: q/k/v biases in every layer's parameter count.
      {"model=qwen2.5-0.5b", "strategy.zero=3", "strategy.offload=optimizer",
       "strategy.checkpointing=full"},
      // Qwen3: q/k norms.
      {"model=qwen3-8b", "model.num_hidden_layers=2", "strategy.zero=3",
       "strategy.offload=none", "strategy.checkpointing=none"},
  };
  for (const auto &sets : cases) {
    SCOPED_TRACE(llvm::join(sets, " "));
    Materialized m = materialize(sets);
    auto strategy = swift::emit::strategyJson(*m.module);
    auto schedule = swift::emit::scheduleJson(*m.module);
    ASSERT_TRUE(mlir::succeeded(strategy) && mlir::succeeded(schedule));
    rt::Plan built = planFromJob(m.job, toJson(std::move(*strategy)));
    json plan = json::parse(rt::planToJson(built));
    plan["schedule"] = toJson(std::move(*schedule));
    rt::Plan emitted = rt::parsePlanText(plan.dump(), "materialized");
    EXPECT_FALSE(emitted.scheduleDerived);
    // The whole plan must agree; print the schedules when it does not.
    json mine = json::parse(rt::planToJson(emitted));
    json theirs = json::parse(rt::planToJson(built));
    EXPECT_EQ(mine, theirs) << "emitted: " << mine["schedule"].dump()
                            << "\nbuilt:   " << theirs["schedule"].dump();
    // The model as the passes read it from the IR.
    auto models = llvm::to_vector(m.module->getOps<mlir::swift::ModelOp>());
    ASSERT_EQ(models.size(), 1u);
    rt::Plan fromIr = built;
    fromIr.model = mlir::swift::modelConfig(models.front());
    EXPECT_EQ(rt::planToJson(fromIr), rt::planToJson(built));
  }
}

// A LoRA/QLoRA job's plan.json carries the method and the adapters'
// settings from the IR, targets resolved to decoder linear names in
// plan::loraTargetNames()'s order (all-linear: all seven), and the runtime's
// parser accepts it with the schedule buildSchedule() would derive.
TEST(Emit, PlanCarriesLora) {
  struct Case {
    std::vector<std::string> sets;
    rt::Method method;
    std::vector<std::string> targets;
  };
  const std::vector<Case> cases = {
      {{"training.method=lora", "training.lora={rank: 4, alpha: 8, dropout: 0.1}",
        "strategy.zero=3", "strategy.offload=optimizer+params",
        "strategy.checkpointing=full"},
       rt::Method::Lora,
       rt::loraTargetNames()},
      {{"training.method=qlora", "training.lora.targets=[down_proj, q_proj]",
        "strategy.zero=2", "strategy.offload=none", "strategy.checkpointing=none"},
       rt::Method::QLora,
       {"q_proj", "down_proj"}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(llvm::join(c.sets, " "));
    Materialized m = materialize(c.sets);
    std::string text;
    llvm::raw_string_ostream os(text);
    ASSERT_TRUE(mlir::succeeded(swift::emit::emitPlan(*m.module, os)));
    rt::Plan plan = rt::parsePlanText(text, "emitted");
    EXPECT_FALSE(plan.scheduleDerived);
    EXPECT_EQ(plan.training.method, c.method);
    EXPECT_EQ(plan.training.lora.rank, m.job.training.lora.rank);
    EXPECT_EQ(plan.training.lora.alpha, m.job.training.lora.alpha);
    EXPECT_EQ(plan.training.lora.dropout, m.job.training.lora.dropout);
    EXPECT_EQ(plan.training.lora.targets, c.targets);
    rt::Plan derived = plan;
    derived.schedule =
        rt::buildSchedule(plan.model, plan.strategy, rt::unitParameterCounts(plan.model))
            .schedule;
    EXPECT_EQ(rt::planToJson(plan), rt::planToJson(derived));
  }
}

// ZeRO-3 with parameter offload: both offload blocks on pinned CPU memory,
// stage-3 prefetch of one decoder layer, batch sizes DeepSpeed accepts.
TEST(Emit, DeepSpeedZero3Offload) {
  json c = deepSpeed({"strategy.zero=3", "strategy.offload=optimizer+params",
                      "strategy.checkpointing=full"});
  const json &z = c["zero_optimization"];
  EXPECT_EQ(z["stage"], 3);
  EXPECT_EQ(z["offload_optimizer"],
            json({{"device", "cpu"}, {"pin_memory", true}}));
  EXPECT_EQ(z["offload_param"],
            json({{"device", "cpu"}, {"pin_memory", true}}));
  EXPECT_EQ(z["reduce_bucket_size"], (25 << 20) / 4);
  // llama3.2-1b decoder layer: 2C + C*2048 + 2*512*C + 2048*C + 3*8192*C.
  const int64_t C = 2048,
                layer = 2 * C + 2 * C * C + 2 * 512 * C + 3 * 8192 * C;
  EXPECT_EQ(z["stage3_prefetch_bucket_size"], layer);
  EXPECT_EQ(z["stage3_param_persistence_threshold"], 0);
  EXPECT_EQ(z["overlap_comm"], true);
  EXPECT_EQ(z["contiguous_gradients"], true);
  EXPECT_FALSE(z.contains("allgather_bucket_size"));
  // 8 sequences = micro 1 x accumulation 1 x 8 GPUs.
  EXPECT_EQ(c["train_batch_size"], 8);
  EXPECT_EQ(c["train_micro_batch_size_per_gpu"], 1);
  EXPECT_EQ(c["gradient_accumulation_steps"], 1);
  EXPECT_EQ(c["bf16"]["enabled"], true);
  EXPECT_EQ(c["fp16"]["enabled"], false);
  EXPECT_EQ(c["gradient_clipping"], 1.0);
}

// ZeRO-1 gathers updated parameters (allgather bucket), offloads nothing,
// has no stage-3 keys; accumulation fills the global batch.
TEST(Emit, DeepSpeedZero1) {
  json c = deepSpeed({"strategy.zero=1", "strategy.offload=none",
                      "strategy.checkpointing=none", "strategy.bucket_mib=25",
                      "training.global_batch_size=32"});
  const json &z = c["zero_optimization"];
  EXPECT_EQ(z["stage"], 1);
  EXPECT_EQ(z["allgather_bucket_size"], (25 << 20) / 4);
  EXPECT_EQ(z["reduce_scatter"], true);
  EXPECT_FALSE(z.contains("offload_optimizer"));
  EXPECT_FALSE(z.contains("offload_param"));
  EXPECT_FALSE(z.contains("stage3_prefetch_bucket_size"));
  EXPECT_EQ(c["gradient_accumulation_steps"], 4);
  EXPECT_EQ(c["train_batch_size"], 32);
}

// Optimizer offload at ZeRO-2 offloads the optimizer only; fp32 training
// enables neither half precision.
TEST(Emit, DeepSpeedZero2OptimizerOffloadFp32) {
  json c =
      deepSpeed({"strategy.zero=2", "strategy.offload=optimizer",
                 "strategy.checkpointing=none", "training.precision=fp32"});
  EXPECT_EQ(c["zero_optimization"]["offload_optimizer"]["device"], "cpu");
  EXPECT_FALSE(c["zero_optimization"].contains("offload_param"));
  EXPECT_EQ(c["bf16"]["enabled"], false);
  EXPECT_EQ(c["fp16"]["enabled"], false);
}

// One node: swift-run spawns its ranks itself.
TEST(Emit, LaunchOneNode) {
  std::string text = launch({"strategy.zero=2", "strategy.offload=none",
                             "strategy.checkpointing=none"});
  EXPECT_NE(text.find("swift-run plan.json --nproc-per-node 8\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("torchrun --standalone --nnodes=1 --nproc-per-node=8 "
                      "--no-python swift-run plan.json"),
            std::string::npos)
      << text;
}

// Two nodes: torchrun with c10d rendezvous, and the environment form.
TEST(Emit, LaunchTwoNodes) {
  std::string text = launch({"cluster.nodes=2", "training.global_batch_size=16",
                             "strategy.zero=3", "strategy.offload=none",
                             "strategy.checkpointing=none"});
  EXPECT_NE(text.find("torchrun --nnodes=2 --nproc-per-node=8 "
                      "--rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:29500 "
                      "--rdzv-id=swift --no-python swift-run plan.json\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("RANK=$((NODE_RANK * 8 + LOCAL_RANK)) WORLD_SIZE=16 "
                      "LOCAL_RANK=$LOCAL_RANK LOCAL_WORLD_SIZE=8"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("MASTER_PORT=29500 swift-run plan.json"),
            std::string::npos)
      << text;
}

// The DeepSpeed backend launches the training script with its config.
TEST(Emit, LaunchDeepSpeed) {
  std::string text =
      launch({"backend=deepspeed", "strategy.zero=3", "strategy.offload=none",
              "strategy.checkpointing=full"});
  EXPECT_NE(text.find("torchrun --standalone --nnodes=1 --nproc-per-node=8 "
                      "train.py --deepspeed ds_config.json\n"),
            std::string::npos)
      << text;
}

// A module without a materialized schedule is refused, not guessed at.
TEST(Emit, NeedsMaterializedSchedule) {
  Diagnostic diag;
  auto job = loadJob(writeTemp(kBaseJob),
                     {"training.micro_batch_size=1", "strategy.zero=1",
                      "strategy.offload=none", "strategy.checkpointing=none"},
                     diag);
  ASSERT_TRUE(job) << diag.str();
  // Planned through the estimate: every decision made, no schedule yet.
  mlir::swift::PlanningOptions options;
  options.last = mlir::swift::Phase::Estimate;
  mlir::swift::PlannedJob planned = mlir::swift::planJob(*job, context(), options);
  ASSERT_EQ(planned.error, "");
  mlir::ModuleOp module = *planned.module;
  std::string error;
  mlir::ScopedDiagnosticHandler handler(&context(), [&](mlir::Diagnostic &d) {
    error = d.str();
    return mlir::success();
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  EXPECT_TRUE(mlir::failed(swift::emit::emitDeepSpeedConfig(module, os)));
  EXPECT_EQ(text, "");
  EXPECT_NE(error.find("has no materialized swift.schedule"), std::string::npos)
      << error;
}

} // namespace
