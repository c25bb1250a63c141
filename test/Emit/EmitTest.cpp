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

#include "../Job/TestUtil.h"

#include "swift/Passes/Pipelines.h"
#include "swift/Emit/Emit.h"
#include "swift/Plan/Plan.h"
#include "swift/Plan/Schedule.h"

#include "swift/Dialect/SwiftOps.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

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
rt::Plan planFromJob(const JobSpec &job, const rt::StrategyConfig &strategy) {
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
  // The capacity the job planned for, as plan.json carries it.
  p.world.gpuMemoryBytes = int64_t(job.cluster.gpu.memoryGiB * double(int64_t(1) << 30));
  p.training.sequenceLength = job.training.sequenceLength;
  p.training.globalBatchSize = job.training.globalBatchSize;
  p.training.microBatchSize = *job.training.microBatchSize;
  p.training.gradientAccumulation =
      job.training.globalBatchSize / (p.training.microBatchSize * p.world.size);
  p.strategy = strategy;
  p.schedule =
      rt::buildSchedule(p.model, p.strategy, rt::unitParameterCounts(p.model))
          .schedule;
  return p;
}

// The passes translate buildSchedule()'s result into ops and emitPlan()
// translates the ops back (ScheduleOp::translate()): what plan.json gets is
// buildSchedule()'s schedule for the job as the plan layer sees it, entry
// for entry, and the plan layer's validation accepts it. So the
// translations lose nothing, the IR's parameter counts size the buckets as
// plan.json's model does, and the model the emitter reads from the IR
// (ModelOp::planModel()) is the job's.
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
    std::string text;
    llvm::raw_string_ostream os(text);
    ASSERT_TRUE(mlir::succeeded(swift::emit::emitPlan(*m.module, os)));
    rt::Plan emitted = rt::parsePlanText(text, "emitted");
    EXPECT_FALSE(emitted.scheduleDerived);
    // The same plan with what the job file alone gives: its model, world,
    // batch and buildSchedule()'s schedule for the strategy the IR chose.
    rt::Plan built = planFromJob(m.job, emitted.strategy);
    rt::Plan expected = emitted;
    expected.model = built.model;
    expected.world = built.world;
    expected.training.sequenceLength = built.training.sequenceLength;
    expected.training.globalBatchSize = built.training.globalBatchSize;
    expected.training.microBatchSize = built.training.microBatchSize;
    expected.training.gradientAccumulation =
        built.training.gradientAccumulation;
    expected.schedule = built.schedule;
    // The whole plan must agree; print the schedules when it does not.
    json mine = json::parse(rt::planToJson(emitted));
    json theirs = json::parse(rt::planToJson(expected));
    EXPECT_EQ(mine, theirs) << "emitted: " << mine["schedule"].dump()
                            << "\nbuilt:   " << theirs["schedule"].dump();
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

json readTestData(const std::string &relative) {
  std::ifstream in(std::string(SWIFT_TEST_DATA_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  return json::parse(in);
}

/// DeepSpeed's config models (ds_config_schema.json names the version) and
/// the keys the HF Trainer fills when they are "auto".
const json &deepSpeedSchema() {
  static const json schema = readTestData("deepspeed/ds_config_schema.json");
  return schema;
}

/// The Trainer's flags of a module, by name.
std::map<std::string, std::string> flagsOf(mlir::ModuleOp module) {
  mlir::FailureOr<std::vector<swift::emit::Flag>> flags =
      swift::emit::trainerFlags(module);
  EXPECT_TRUE(mlir::succeeded(flags));
  std::map<std::string, std::string> byName;
  for (const swift::emit::Flag &f : *flags) {
    EXPECT_FALSE(byName.count(f.name)) << "--" << f.name << " twice";
    byName[f.name] = f.value;
  }
  return byName;
}

/// What HF's HfTrainerDeepSpeedConfig makes of `config` under the Trainer
/// flags: every "auto" replaced by the argument it comes from. An "auto"
/// the Trainer does not fill (not in the schema's hf_auto) is a problem.
json fillAuto(json config, const std::map<std::string, std::string> &flags,
              int64_t world, std::vector<std::string> &problems) {
  auto arg = [&](const std::string &name) {
    auto it = flags.find(name);
    if (it == flags.end()) {
      problems.push_back("no --" + name + " for an \"auto\" it fills");
      return std::string("0");
    }
    return it->second;
  };
  auto number = [&](const std::string &name) { return std::stod(arg(name)); };
  auto integer = [&](const std::string &name) { return std::stoll(arg(name)); };
  const std::map<std::string, std::function<json()>> from = {
      {"train_micro_batch_size_per_gpu",
       [&] { return json(integer("per_device_train_batch_size")); }},
      {"gradient_accumulation_steps",
       [&] { return json(integer("gradient_accumulation_steps")); }},
      {"train_batch_size",
       [&] {
         return json(world * integer("per_device_train_batch_size") *
                     integer("gradient_accumulation_steps"));
       }},
      {"gradient_clipping", [&] { return json(number("max_grad_norm")); }},
      {"optimizer.params.lr", [&] { return json(number("learning_rate")); }},
      {"optimizer.params.betas",
       [&] { return json::array({number("adam_beta1"), number("adam_beta2")}); }},
      {"optimizer.params.eps", [&] { return json(number("adam_epsilon")); }},
      {"optimizer.params.weight_decay",
       [&] { return json(number("weight_decay")); }},
      {"bf16.enabled", [&] { return json(arg("bf16") == "true"); }},
      {"fp16.enabled", [&] { return json(arg("fp16") == "true"); }},
  };
  std::function<void(json &, const std::string &)> walk = [&](json &v,
                                                             const std::string &path) {
    if (v.is_object()) {
      for (auto &[key, child] : v.items())
        walk(child, path.empty() ? key : path + "." + key);
      return;
    }
    if (v != "auto")
      return;
    if (!deepSpeedSchema()["hf_auto"].contains(path))
      problems.push_back(path + ": \"auto\", which the HF Trainer does not fill");
    auto it = from.find(path);
    if (it == from.end())
      problems.push_back(path + ": \"auto\" with no Trainer flag behind it");
    else
      v = it->second();
  };
  walk(config, "");
  return config;
}

/// Every key, type, value and nesting of `value` against DeepSpeed's
/// schema entry; unknown or deprecated keys are problems.
void checkSchema(const json &value, const json &entry, const std::string &path,
                 std::vector<std::string> &problems) {
  auto is = [&](const std::string &type) {
    return type == "int"      ? value.is_number_integer()
           : type == "number" ? value.is_number()
           : type == "bool"   ? value.is_boolean()
           : type == "string" ? value.is_string()
           : type == "object" ? value.is_object()
           : type == "array"  ? value.is_array()
           : type == "null"   ? value.is_null()
                              : false;
  };
  bool typed = false;
  for (const json &type : entry["type"])
    typed = typed || is(type.get<std::string>());
  if (!typed) {
    problems.push_back(path + ": " + value.dump() + " is not " +
                       entry["type"].dump());
    return;
  }
  if (entry.contains("enum")) {
    bool listed = false;
    for (const json &e : entry["enum"])
      listed = listed || e == value;
    if (!listed)
      problems.push_back(path + ": " + value.dump() + " not in " +
                         entry["enum"].dump());
  }
  if (value.is_number() && entry.contains("min") && value < entry["min"])
    problems.push_back(path + ": below " + entry["min"].dump());
  if (value.is_number() && entry.contains("max") && value > entry["max"])
    problems.push_back(path + ": above " + entry["max"].dump());
  if (entry.value("deprecated", false))
    problems.push_back(path + ": deprecated in DeepSpeed");
  if (!value.is_object() || !entry.contains("keys") || entry["keys"].empty())
    return;
  for (const auto &[key, child] : value.items()) {
    const std::string where = path.empty() ? key : path + "." + key;
    if (!entry["keys"].contains(key)) {
      problems.push_back(where + ": not a key DeepSpeed " +
                         deepSpeedSchema()["deepspeed_version"].get<std::string>() +
                         " knows");
      continue;
    }
    checkSchema(child, entry["keys"][key], where, problems);
  }
}

/// The config as the Trainer hands it to DeepSpeed, checked: no "auto" left
/// that the Trainer would not fill, every key and type DeepSpeed's, and
/// train_batch_size = micro x accumulation x world = the job's batch.
json checkedDeepSpeed(std::vector<std::string> sets) {
  Materialized m = materialize(std::move(sets));
  std::string text;
  llvm::raw_string_ostream os(text);
  EXPECT_TRUE(mlir::succeeded(swift::emit::emitDeepSpeedConfig(*m.module, os)));
  std::vector<std::string> problems;
  const int64_t world = m.job.cluster.numGpus();
  json filled = fillAuto(json::parse(text), flagsOf(*m.module), world, problems);
  checkSchema(filled, deepSpeedSchema()["schema"], "", problems);
  EXPECT_EQ(problems, std::vector<std::string>{}) << filled.dump(2);
  EXPECT_EQ(filled["train_batch_size"],
            filled["train_micro_batch_size_per_gpu"].get<int64_t>() *
                filled["gradient_accumulation_steps"].get<int64_t>() * world);
  EXPECT_EQ(filled["train_batch_size"], m.job.training.globalBatchSize);
  return filled;
}

// ZeRO-3 with parameter offload: both offload blocks on pinned CPU memory,
// stage-3 prefetch of one decoder layer, batch sizes DeepSpeed accepts.
TEST(Emit, DeepSpeedZero3Offload) {
  json c = checkedDeepSpeed({"strategy.zero=3",
                             "strategy.offload=optimizer+params",
                             "strategy.checkpointing=full"});
  const json &z = c["zero_optimization"];
  EXPECT_EQ(z["stage"], 3);
  EXPECT_EQ(z["offload_optimizer"],
            json({{"device", "cpu"}, {"pin_memory", true}}));
  EXPECT_EQ(z["offload_param"],
            json({{"device", "cpu"}, {"pin_memory", true}}));
  // 25 MiB buckets of bf16 gradients (DeepSpeed's buckets hold the
  // parameters' dtype), in elements.
  EXPECT_EQ(z["reduce_bucket_size"], (25 << 20) / 2);
  // llama3.2-1b decoder layer: 2C + C*2048 + 2*512*C + 2048*C + 3*8192*C.
  const int64_t C = 2048,
                layer = 2 * C + 2 * C * C + 2 * 512 * C + 3 * 8192 * C;
  EXPECT_EQ(z["stage3_prefetch_bucket_size"], layer);
  // The plan holds the layer computing and the one prefetched, and reuses
  // a layer's parameters only within its recompute and backward.
  EXPECT_EQ(z["stage3_max_live_parameters"], 2 * layer);
  EXPECT_EQ(z["stage3_max_reuse_distance"], 2 * layer);
  EXPECT_EQ(z["stage3_param_persistence_threshold"], 0);
  EXPECT_EQ(z["stage3_gather_16bit_weights_on_model_save"], true);
  EXPECT_EQ(z["overlap_comm"], true);
  EXPECT_EQ(z["contiguous_gradients"], true);
  EXPECT_FALSE(z.contains("allgather_bucket_size"));
  // 8 sequences = micro 1 x accumulation 1 x 8 GPUs.
  EXPECT_EQ(c["train_micro_batch_size_per_gpu"], 1);
  EXPECT_EQ(c["gradient_accumulation_steps"], 1);
  EXPECT_EQ(c["bf16"]["enabled"], true);
  EXPECT_EQ(c["fp16"]["enabled"], false);
  // Offloading needs DeepSpeed's own (CPU) Adam: an optimizer section.
  EXPECT_EQ(c["optimizer"]["type"], "AdamW");
}

// Shard groups on DeepSpeed are ZeRO++ hpZ: at ZeRO-3, strategy.dp_shard
// becomes zero_hpz_partition_size (a key of the recorded schema, the
// config checked against it); one group of every GPU writes no such key.
// (Before shard groups were priced, dp_shard 8 was refused.)
TEST(Emit, DeepSpeedHpzIsSchemaValid) {
  std::vector<std::string> twoNodes = {
      "backend=deepspeed", "cluster.nodes=2", "training.global_batch_size=16",
      "strategy.zero=3", "strategy.offload=none", "strategy.checkpointing=full"};
  std::vector<std::string> oneGroup = twoNodes; // auto may pick groups
  oneGroup.push_back("strategy.dp_shard=16");
  json plain = checkedDeepSpeed(oneGroup);
  EXPECT_FALSE(plain["zero_optimization"].contains("zero_hpz_partition_size"));
  twoNodes.push_back("strategy.dp_shard=8");
  json hpz = checkedDeepSpeed(twoNodes);
  EXPECT_EQ(hpz["zero_optimization"]["zero_hpz_partition_size"], 8);
  EXPECT_EQ(hpz["zero_optimization"]["stage"], 3);
}

// Every value the Trainer fills is "auto" in the file itself (an explicit
// value must equal the Trainer's argument, or trainer_config_process
// raises), and there is no scheduler: the Trainer builds its own from
// --lr_scheduler_type, the schedule swift-run follows.
TEST(Emit, DeepSpeedLeavesTheTrainersValuesAuto) {
  json c = deepSpeed({"strategy.zero=2", "strategy.offload=none",
                      "strategy.checkpointing=none"});
  for (const char *key : {"train_batch_size", "train_micro_batch_size_per_gpu",
                          "gradient_accumulation_steps", "gradient_clipping"})
    EXPECT_EQ(c[key], "auto") << key;
  EXPECT_EQ(c["bf16"]["enabled"], "auto");
  EXPECT_EQ(c["optimizer"]["params"],
            json({{"lr", "auto"}, {"betas", "auto"}, {"eps", "auto"},
                  {"weight_decay", "auto"}}));
  EXPECT_FALSE(c.contains("scheduler"));
}

// The same update as swift-run under HF Trainer + DeepSpeed: with weight
// decay, the config names no optimizer (the Trainer's own AdamW, with HF's
// parameter groups, runs), unless offloading needs DeepSpeed's CPU AdamW,
// which decays every parameter: the launch text then says so. LoRA's
// adapters all decay either way, and without decay both agree.
TEST(Emit, DeepSpeedKeepsHFsWeightDecayGroups) {
  const std::string decay = "training.optimizer.weight_decay=0.1";
  EXPECT_FALSE(deepSpeed({decay, "strategy.zero=2", "strategy.offload=none"})
                   .contains("optimizer"));
  EXPECT_TRUE(deepSpeed({"strategy.zero=2", "strategy.offload=none"})
                  .contains("optimizer"));
  EXPECT_TRUE(deepSpeed({decay, "strategy.zero=2", "strategy.offload=none",
                         "training.method=lora"})
                  .contains("optimizer"));
  EXPECT_TRUE(deepSpeed({decay, "strategy.zero=2", "strategy.offload=optimizer"})
                  .contains("optimizer"));
  const std::string note = "weight decay: offloading runs DeepSpeed's CPU AdamW";
  auto launched = [&](std::vector<std::string> sets) {
    sets.push_back("backend=deepspeed");
    return launch(sets);
  };
  EXPECT_NE(launched({decay, "strategy.zero=2", "strategy.offload=optimizer"})
                .find(note),
            std::string::npos);
  EXPECT_EQ(launched({decay, "strategy.zero=2", "strategy.offload=none"})
                .find(note),
            std::string::npos);
  EXPECT_EQ(launched({"strategy.zero=2", "strategy.offload=optimizer"}).find(note),
            std::string::npos);
}

// ZeRO-1 gathers updated parameters (allgather bucket), offloads nothing,
// has no stage-3 keys; accumulation fills the global batch.
TEST(Emit, DeepSpeedZero1) {
  json c = checkedDeepSpeed({"strategy.zero=1", "strategy.offload=none",
                             "strategy.checkpointing=none",
                             "strategy.bucket_mib=25",
                             "training.global_batch_size=32"});
  const json &z = c["zero_optimization"];
  EXPECT_EQ(z["stage"], 1);
  EXPECT_EQ(z["allgather_bucket_size"], (25 << 20) / 2);
  EXPECT_EQ(z["reduce_scatter"], true);
  EXPECT_FALSE(z.contains("offload_optimizer"));
  EXPECT_FALSE(z.contains("offload_param"));
  EXPECT_FALSE(z.contains("stage3_prefetch_bucket_size"));
  EXPECT_FALSE(z.contains("stage3_gather_16bit_weights_on_model_save"));
  EXPECT_EQ(c["gradient_accumulation_steps"], 4);
  EXPECT_EQ(c["train_batch_size"], 32);
}

// Optimizer offload at ZeRO-2 offloads the optimizer only; fp32 training
// enables neither half precision and buckets fp32 gradients.
TEST(Emit, DeepSpeedZero2OptimizerOffloadFp32) {
  json c = checkedDeepSpeed({"strategy.zero=2", "strategy.offload=optimizer",
                             "strategy.checkpointing=none",
                             "strategy.bucket_mib=25",
                             "training.precision=fp32"});
  EXPECT_EQ(c["zero_optimization"]["offload_optimizer"]["device"], "cpu");
  EXPECT_FALSE(c["zero_optimization"].contains("offload_param"));
  EXPECT_EQ(c["zero_optimization"]["reduce_bucket_size"], (25 << 20) / 4);
  EXPECT_EQ(c["bf16"]["enabled"], false);
  EXPECT_EQ(c["fp16"]["enabled"], false);
}

// The Trainer's flags carry the job: its clipping (none is 0, not HF's
// 1.0), checkpointing, AdamW settings and HF's name for its schedule.
TEST(Emit, TrainerFlagsCarryTheJob) {
  Materialized plain = materialize({"strategy.zero=3", "strategy.offload=none",
                                    "strategy.checkpointing=full"});
  std::map<std::string, std::string> f = flagsOf(*plain.module);
  EXPECT_EQ(f["max_grad_norm"], "0");
  EXPECT_EQ(f["gradient_checkpointing"], "true");
  EXPECT_EQ(f["lr_scheduler_type"], "constant");
  EXPECT_EQ(f["learning_rate"], "0.0001");
  EXPECT_EQ(f["adam_beta2"], "0.95");
  Materialized set = materialize(
      {"strategy.zero=3", "strategy.offload=none", "strategy.checkpointing=none",
       "training.max_grad_norm=0.5", "training.lr_schedule.decay=cosine",
       "training.lr_schedule.warmup_steps=10",
       "training.lr_schedule.min_lr_ratio=0.1"});
  f = flagsOf(*set.module);
  EXPECT_EQ(f["max_grad_norm"], "0.5");
  EXPECT_EQ(f["gradient_checkpointing"], "false");
  EXPECT_EQ(f["lr_scheduler_type"], "cosine_with_min_lr");
  EXPECT_EQ(f["lr_scheduler_kwargs"], "{\"min_lr_rate\": 0.1}");
  EXPECT_EQ(f["warmup_steps"], "10");
  // Each flag is a TrainingArguments field, each scheduler one HF has.
  json hf = readTestData("hf/training_arguments.json");
  for (const auto &[name, value] : f)
    EXPECT_TRUE(hf["fields"].contains(name)) << "--" << name;
  bool known = false;
  for (const json &t : hf["lr_scheduler_type"])
    known = known || t == f["lr_scheduler_type"];
  EXPECT_TRUE(known) << f["lr_scheduler_type"];
}

// HF has no linear decay to a floor without the run's length: refused,
// never approximated.
TEST(Emit, TrainerRefusesALinearDecayToAFloor) {
  Materialized m = materialize(
      {"strategy.zero=3", "strategy.offload=none", "strategy.checkpointing=none",
       "training.lr_schedule.decay=linear",
       "training.lr_schedule.min_lr_ratio=0.1"});
  std::string error;
  mlir::ScopedDiagnosticHandler handler(&context(), [&](mlir::Diagnostic &d) {
    error = d.str();
    return mlir::success();
  });
  EXPECT_TRUE(mlir::failed(swift::emit::trainerFlags(*m.module)));
  EXPECT_NE(error.find("linear decay to min_lr_ratio 0.1 has no HF schedule"),
            std::string::npos)
      << error;
}

/// `swift sft`'s flags and values as emitMsSwift wrote them.
std::map<std::string, std::string> msSwift(std::vector<std::string> sets,
                                           std::string *text = nullptr) {
  Materialized m = materialize(std::move(sets));
  std::string out;
  llvm::raw_string_ostream os(out);
  EXPECT_TRUE(mlir::succeeded(swift::emit::emitMsSwift(*m.module, os)));
  if (text)
    *text = out;
  std::map<std::string, std::string> flags;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    size_t dash = line.find("--");
    if (line.rfind("#", 0) == 0 || dash == std::string::npos)
      continue;
    std::string rest = line.substr(dash + 2);
    if (!rest.empty() && rest.back() == '\\')
      rest.pop_back();
    while (!rest.empty() && rest.back() == ' ')
      rest.pop_back();
    size_t space = rest.find(' ');
    flags[rest.substr(0, space)] =
        space == std::string::npos ? "" : rest.substr(space + 1);
  }
  return flags;
}

// ms-swift's command line runs the strategy: every flag one `swift sft`
// documents, with a value of its type (test/data/ms-swift names the
// version), ZeRO and checkpointing as planned, QLoRA as bitsandbytes NF4.
TEST(Emit, MsSwiftCommandLine) {
  std::string text;
  std::map<std::string, std::string> f = msSwift(
      {"strategy.zero=2", "strategy.offload=optimizer",
       "strategy.checkpointing=full", "training.method=qlora",
       "training.lora.rank=8", "training.lora.targets=[q_proj, v_proj]"},
      &text);
  const json sft = readTestData("ms-swift/sft_arguments.json");
  for (const auto &[name, value] : f) {
    ASSERT_TRUE(sft["flags"].contains("--" + name)) << "--" << name << "\n" << text;
    const json &spec = sft["flags"]["--" + name];
    EXPECT_TRUE(spec.value("accepted", true)) << "--" << name << " is gone";
    const std::string type = spec["type"];
    if (type == "bool")
      EXPECT_TRUE(value == "true" || value == "false") << name << " " << value;
    if (type == "int")
      EXPECT_EQ(std::to_string(std::stoll(value)), value) << name;
    if (type == "float")
      EXPECT_NO_THROW((void)std::stod(value)) << name;
    if (type == "enum" && name != "lr_scheduler_type") {
      bool listed = false;
      for (const json &v : spec["values"])
        listed = listed || v.dump() == value || v == value;
      EXPECT_TRUE(listed) << "--" << name << " " << value;
    }
  }
  // A preset changed by --set is no longer the hub's model: a placeholder
  // (swift-plan/emit-ms-swift.test checks the hub id of a plain preset).
  EXPECT_EQ(f["model"], "MODEL");
  EXPECT_FALSE(f.count("use_hf"));
  EXPECT_EQ(f["tuner_type"], "lora");
  EXPECT_EQ(f["lora_rank"], "8");
  EXPECT_EQ(f["target_modules"], "q_proj v_proj");
  EXPECT_EQ(f["quant_method"], "bnb");
  EXPECT_EQ(f["quant_bits"], "4");
  EXPECT_EQ(f["bnb_4bit_quant_type"], "nf4");
  EXPECT_EQ(f["deepspeed"], "ds_config.json");
  EXPECT_EQ(f["gradient_checkpointing"], "true");
  EXPECT_EQ(f["per_device_train_batch_size"], "1");
  EXPECT_EQ(f["max_length"], "2048");
  EXPECT_NE(text.find("NPROC_PER_NODE=8 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 "
                      "swift sft"),
            std::string::npos)
      << text;
  // ZeRO-0 still runs DeepSpeed (what was priced: fp32 master weights; not
  // ms-swift's plain DDP); full fine-tuning; ms-swift's default
  // checkpointing (on) turned off; packed windows as planned.
  f = msSwift({"strategy.zero=0", "strategy.offload=none",
               "strategy.checkpointing=none"}, &text);
  EXPECT_EQ(f["deepspeed"], "ds_config.json");
  EXPECT_NE(text.find("--set strategy.zero=0 --set strategy.offload=none "
                      "--set strategy.checkpointing=none --set "
                      "training.micro_batch_size=1 --set strategy.bucket_mib="),
            std::string::npos)
      << text;
  EXPECT_EQ(f["packing"], "true");
  EXPECT_EQ(f["attn_impl"], "flash_attn");
  EXPECT_EQ(f["tuner_type"], "full");
  EXPECT_FALSE(f.count("lora_rank"));
  EXPECT_EQ(f["gradient_checkpointing"], "false");
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

// The DeepSpeed backend launches the Trainer script with its config and
// the flags the config leaves "auto".
TEST(Emit, LaunchDeepSpeed) {
  std::string text =
      launch({"backend=deepspeed", "strategy.zero=3", "strategy.offload=none",
              "strategy.checkpointing=full"});
  EXPECT_NE(text.find("torchrun --standalone --nnodes=1 --nproc-per-node=8 "
                      "train.py \\\n    --deepspeed ds_config.json \\\n"
                      "    --per_device_train_batch_size 1 \\\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("--gradient_checkpointing true"), std::string::npos)
      << text;
}

// The hf backend's Trainer shards with FSDP as the strategy says; no
// DeepSpeed config.
TEST(Emit, LaunchHfShardsWithFsdp) {
  std::string text =
      launch({"backend=hf", "strategy.zero=3",
              "strategy.offload=optimizer+params", "strategy.checkpointing=full"});
  EXPECT_NE(text.find("--fsdp 'full_shard offload auto_wrap' \\\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("--deepspeed"), std::string::npos) << text;
  text = launch({"backend=hf", "strategy.zero=0", "strategy.offload=none",
                 "strategy.checkpointing=none"});
  EXPECT_EQ(text.find("--fsdp"), std::string::npos) << text;
  EXPECT_NE(text.find("--gradient_checkpointing false"), std::string::npos)
      << text;
}

//===----------------------------------------------------------------------===//
// torchtitan and Megatron-LM: the layout comes from #swift.strategy. The
// planner prices data-parallel layouts only (JobOp::unpricedLayout()), so
// the tests write a layout into a planned module's strategy, as a hand-made
// or later-planned module carries it, and the verifier checks it spans the
// cluster.
//===----------------------------------------------------------------------===//

/// Llama-3.1-8B (torchtitan's 8B flavor) on kBaseJob's cluster with `sets`,
/// planned and materialized.
Materialized materialize8B(std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"model=llama3.1-8b", "training.micro_batch_size=1",
                             "training.global_batch_size=64"});
  Diagnostic diag;
  auto job = loadJob(writeTemp(kBaseJob), sets, diag);
  EXPECT_TRUE(job) << diag.str();
  mlir::swift::PlannedJob planned =
      mlir::swift::planJob(*job, context(), mlir::swift::PlanningOptions());
  EXPECT_EQ(planned.error, "");
  return Materialized{*job, std::move(planned.module)};
}

struct LayoutKeys {
  int64_t tp = 1, pp = 1, cp = 1;
  std::optional<int64_t> dpShard;
  std::optional<rt::PipelineSchedule> schedule;
  std::optional<int64_t> virtualStages;
};

LayoutKeys mesh(int64_t tp, int64_t pp, int64_t cp) {
  LayoutKeys k;
  k.tp = tp;
  k.pp = pp;
  k.cp = cp;
  return k;
}
LayoutKeys shardGroups(int64_t dpShard) {
  LayoutKeys k;
  k.dpShard = dpShard;
  return k;
}
LayoutKeys interleaved(int64_t pp, int64_t virtualStages, int64_t tp = 1) {
  LayoutKeys k = mesh(tp, pp, 1);
  k.schedule = rt::PipelineSchedule::Interleaved;
  k.virtualStages = virtualStages;
  return k;
}

/// `m`'s job with `keys` in its #swift.strategy and the accumulation that
/// keeps the global batch over the data-parallel ranks left.
void setLayout(Materialized &m, const LayoutKeys &keys) {
  auto job = *m.module->getOps<mlir::swift::JobOp>().begin();
  mlir::swift::StrategyAttr a = job.getStrategy();
  auto opt = [](int64_t degree) {
    return degree > 1 ? std::optional<int64_t>(degree) : std::nullopt;
  };
  job.setStrategyAttr(mlir::swift::StrategyAttr::get(
      a.getContext(), a.getZero(), a.getOffload(), a.getCheckpointing(),
      a.getCheckpointLayers(), a.getBucketBytes(), a.getPrefetchDepth(),
      a.getOffloadActivations(), a.getMlpTileTokens(), opt(keys.tp),
      opt(keys.pp), opt(keys.cp), keys.dpShard, keys.schedule,
      keys.virtualStages));
  const int64_t dp = m.job.cluster.numGpus() / (keys.tp * keys.pp * keys.cp);
  const int64_t mb = *job.getMicroBatchSize();
  job.setGradientAccumulationAttr(mlir::Builder(&context()).getI64IntegerAttr(
      job.getGlobalBatchSize() / (mb * dp)));
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*m.module)));
}

/// What an emitter wrote, or its error.
struct Emitted {
  bool ok = false;
  std::string text, error;
};

template <typename F> Emitted emitWith(mlir::ModuleOp module, F emitter) {
  Emitted e;
  mlir::ScopedDiagnosticHandler handler(&context(), [&](mlir::Diagnostic &d) {
    e.error += d.str();
    return mlir::success();
  });
  llvm::raw_string_ostream os(e.text);
  e.ok = mlir::succeeded(emitter(module, os));
  EXPECT_TRUE(e.ok || e.text.empty()) << "wrote before failing:\n" << e.text;
  return e;
}

Emitted torchtitan(mlir::ModuleOp module) {
  return emitWith(module, [](mlir::ModuleOp mod, llvm::raw_ostream &os) {
    return swift::emit::emitTorchtitan(mod, os);
  });
}

Emitted megatron(mlir::ModuleOp module) {
  return emitWith(module, [](mlir::ModuleOp mod, llvm::raw_ostream &os) {
    return swift::emit::emitMegatron(mod, os);
  });
}

/// The TOML subset emitTorchtitan writes: [section] headers, `key = value`
/// (a basic string, integer, float, boolean or array of strings), '#'
/// comments. Values as json; anything else is a problem.
using Toml = std::map<std::string, std::map<std::string, json>>;
Toml parseToml(const std::string &text, std::vector<std::string> &problems) {
  Toml toml;
  std::string section;
  std::istringstream lines(text);
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    return s;
  };
  // A string's end, with escapes; npos if unterminated.
  auto stringEnd = [](const std::string &s, size_t open) {
    for (size_t i = open + 1; i < s.size(); ++i) {
      if (s[i] == '\\')
        ++i;
      else if (s[i] == '"')
        return i;
    }
    return std::string::npos;
  };
  auto value = [&](const std::string &v, json &out) {
    if (v.empty())
      return false;
    if (v.front() == '"') {
      size_t end = stringEnd(v, 0);
      if (end != v.size() - 1)
        return false;
      out = json::parse(v); // a TOML basic string as written here is JSON
      return true;
    }
    if (v == "true" || v == "false") {
      out = v == "true";
      return true;
    }
    if (v.front() == '[') {
      if (v.back() != ']')
        return false;
      out = json::parse(v); // an array of basic strings
      for (const json &item : out)
        if (!item.is_string())
          return false;
      return true;
    }
    char *end = nullptr;
    long long i = std::strtoll(v.c_str(), &end, 10);
    if (*end == '\0') {
      out = int64_t(i);
      return true;
    }
    double d = std::strtod(v.c_str(), &end);
    if (*end != '\0' || v.find_first_of(".eE") == std::string::npos)
      return false;
    out = d;
    return true;
  };
  for (std::string line; std::getline(lines, line);) {
    // Strip a comment outside strings.
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') {
        i = stringEnd(line, i);
        if (i == std::string::npos)
          break;
      } else if (line[i] == '#') {
        line.resize(i);
        break;
      }
    }
    line = trim(line);
    if (line.empty())
      continue;
    if (line.front() == '[') {
      section = line.substr(1, line.size() - 2);
      if (line.back() != ']' || toml.count(section))
        problems.push_back("bad or repeated section: " + line);
      toml[section];
      continue;
    }
    size_t eq = line.find(" = ");
    if (eq == std::string::npos || section.empty()) {
      problems.push_back("not a key = value line: " + line);
      continue;
    }
    std::string key = line.substr(0, eq);
    json v;
    if (!value(trim(line.substr(eq + 3)), v))
      problems.push_back(section + "." + key + ": bad value " + line);
    if (toml[section].count(key))
      problems.push_back(section + "." + key + " twice");
    toml[section][key] = v;
  }
  return toml;
}

const json &torchtitanRecord() {
  static const json record = readTestData("torchtitan/job_config.json");
  return record;
}

/// Every section and key of `toml` is torchtitan v0.2.2's, each value of
/// its recorded type and among its choices, each converter registered.
std::vector<std::string> checkTorchtitanKeys(const Toml &toml) {
  std::vector<std::string> problems;
  const json &sections = torchtitanRecord()["sections"];
  for (const auto &[section, keys] : toml) {
    if (!sections.contains(section)) {
      problems.push_back("[" + section + "]: no such section");
      continue;
    }
    for (const auto &[key, v] : keys) {
      const std::string where = section + "." + key;
      if (!sections[section].contains(key)) {
        problems.push_back(where + ": not a key of torchtitan " +
                           torchtitanRecord()["torchtitan_version"].get<std::string>());
        continue;
      }
      const json &spec = sections[section][key];
      const std::string type = spec["type"];
      auto typeHas = [&](const std::string &t) {
        return type.find(t) != std::string::npos;
      };
      bool typed = (v.is_boolean() && typeHas("bool")) ||
                   (v.is_number_integer() && (typeHas("int") || typeHas("float"))) ||
                   (v.is_number_float() && typeHas("float")) ||
                   (v.is_string() && (typeHas("str") || typeHas("Literal"))) ||
                   (v.is_array() && typeHas("list[str]"));
      if (!typed)
        problems.push_back(where + ": " + v.dump() + " is not " + type);
      if (spec.contains("choices")) {
        bool listed = false;
        for (const json &c : spec["choices"])
          listed = listed || c == v;
        if (!listed)
          problems.push_back(where + ": " + v.dump() + " not in " +
                             spec["choices"].dump());
      }
    }
  }
  if (toml.count("model") && toml.at("model").count("converters"))
    for (const json &c : toml.at("model").at("converters")) {
      bool registered = false;
      for (const json &r : torchtitanRecord()["converters"])
        registered = registered || r == c;
      if (!registered)
        problems.push_back("model.converters: " + c.dump() + " is not registered");
    }
  return problems;
}

/// The TOML of `m`, checked against the recorded keys.
Toml checkedToml(Materialized &m) {
  Emitted e = torchtitan(*m.module);
  EXPECT_TRUE(e.ok) << e.error;
  std::vector<std::string> problems;
  Toml toml = parseToml(e.text, problems);
  std::vector<std::string> keys = checkTorchtitanKeys(toml);
  problems.insert(problems.end(), keys.begin(), keys.end());
  EXPECT_EQ(problems, std::vector<std::string>{}) << e.text;
  EXPECT_EQ(e.text.rfind("# torchtitan v0.2.2 (73a0e69", 0), 0u) << e.text;
  return toml;
}

// Every section, key and value --emit torchtitan writes exists in torchtitan
// v0.2.2's job_config.py (test/data/torchtitan records it), over the
// branches of the emitter: FSDP2 ZeRO-3/2, DDP, HSDP, CPU offload, FP8,
// selective checkpointing, clipping and lr decays, tensor, pipeline (both
// schedules, layers per stage) and context parallelism.
TEST(Emit, TorchtitanKeysExistAtPinnedVersion) {
  struct Case {
    std::vector<std::string> sets;
    LayoutKeys layout;
  };
  const std::string zero3 = "strategy.zero=3", none = "strategy.offload=none";
  const std::vector<Case> cases = {
      {{zero3, none, "strategy.checkpointing=full"}, {}},
      {{"strategy.zero=2", none, "strategy.checkpointing=selective",
        "training.max_grad_norm=1", "training.lr_schedule.decay=cosine",
        "training.lr_schedule.warmup_steps=10",
        "training.lr_schedule.min_lr_ratio=0.1",
        "training.optimizer.weight_decay=0.1"},
       {}},
      {{"strategy.zero=0", none, "strategy.checkpointing=full",
        "training.lr_schedule.decay=linear"},
       {}},
      {{zero3, "strategy.offload=optimizer+params",
        "strategy.checkpointing=full", "training.precision=bf16"},
       {}},
      {{zero3, none, "strategy.checkpointing=full",
        "training.precision=fp8-mixed", "cluster.nodes=2",
        "training.global_batch_size=128"},
       shardGroups(8)},
      {{zero3, none, "strategy.checkpointing=full"}, mesh(2, 2, 2)},
      {{"strategy.zero=2", none, "strategy.checkpointing=none"},
       interleaved(2, 3, 2)},
      {{zero3, none, "strategy.checkpointing=full"},
       interleaved(4, 2)},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(llvm::join(c.sets, " "));
    Materialized m = materialize8B(c.sets);
    setLayout(m, c.layout);
    Toml toml = checkedToml(m);
    // The flavor named has the model's sizes, as torchtitan derives them.
    const json &flavor =
        torchtitanRecord()["llama3_flavors"][toml["model"]["flavor"].get<std::string>()];
    const json &defaults = torchtitanRecord()["llama3_defaults"]["TransformerModelArgs"];
    EXPECT_EQ(flavor["dim"], m.job.model.hiddenSize);
    EXPECT_EQ(flavor["n_layers"], m.job.model.numHiddenLayers);
    EXPECT_EQ(flavor["n_heads"], m.job.model.numAttentionHeads);
    EXPECT_EQ(flavor["n_kv_heads"], m.job.model.numKeyValueHeads);
    EXPECT_EQ(defaults["vocab_size"], m.job.model.vocabSize);
    // FeedForward: 4 x dim, two thirds, x ffn_dim_multiplier, rounded up
    // to multiple_of.
    int64_t hidden = int64_t(2 * (4 * flavor["dim"].get<int64_t>()) / 3);
    hidden = int64_t(flavor["ffn_dim_multiplier"].get<double>() * double(hidden));
    const int64_t multiple = flavor["multiple_of"];
    EXPECT_EQ((hidden + multiple - 1) / multiple * multiple,
              m.job.model.intermediateSize);
  }
}

// The layout and decisions land in torchtitan's keys: degrees whose product
// is the world, ZeRO as FSDP2 resharding (or DDP), the batch split as
// train.py splits it, pipeline schedules and micro-batches, no clipping as
// a bound no norm reaches.
TEST(Emit, TorchtitanCarriesTheLayout) {
  Materialized m = materialize8B({"strategy.zero=3", "strategy.offload=none",
                                  "strategy.checkpointing=full"});
  Toml t = checkedToml(m);
  EXPECT_EQ(t["model"]["name"], "llama3");
  EXPECT_EQ(t["model"]["flavor"], "8B");
  EXPECT_EQ(t["model"]["hf_assets_path"], "./assets/hf/Llama-3.1-8B");
  EXPECT_EQ(t["parallelism"]["data_parallel_replicate_degree"], 1);
  EXPECT_EQ(t["parallelism"]["data_parallel_shard_degree"], 8);
  EXPECT_EQ(t["parallelism"]["fsdp_reshard_after_forward"], "always");
  EXPECT_EQ(t["parallelism"]["tensor_parallel_degree"], 1);
  EXPECT_FALSE(t["parallelism"].count("pipeline_parallel_schedule"));
  // 64 sequences = 1 per micro-batch x 8 accumulation x 8 ranks.
  EXPECT_EQ(t["training"]["local_batch_size"], 1);
  EXPECT_EQ(t["training"]["global_batch_size"], 64);
  EXPECT_EQ(t["training"]["seq_len"], 2048);
  EXPECT_EQ(t["training"]["max_norm"], 1e30);
  EXPECT_EQ(t["training"]["mixed_precision_param"], "bfloat16");
  EXPECT_FALSE(t["training"].count("dtype"));
  EXPECT_EQ(t["activation_checkpoint"]["mode"], "full");
  EXPECT_EQ(t["lr_scheduler"]["decay_ratio"], 0.0); // constant
  EXPECT_EQ(t["optimizer"]["lr"], 1e-4);
  EXPECT_EQ(t["checkpoint"]["initial_load_in_hf"], true);
  EXPECT_FALSE(t.count("quantize.linear.float8"));

  // ZeRO-2 never reshards; ZeRO-0 is DDP over every rank.
  m = materialize8B({"strategy.zero=2", "strategy.offload=none",
                     "strategy.checkpointing=selective",
                     "training.max_grad_norm=0.5"});
  t = checkedToml(m);
  EXPECT_EQ(t["parallelism"]["fsdp_reshard_after_forward"], "never");
  EXPECT_EQ(t["activation_checkpoint"]["selective_ac_option"], "op");
  EXPECT_EQ(t["training"]["max_norm"], 0.5);
  m = materialize8B({"strategy.zero=0", "strategy.offload=none",
                     "strategy.checkpointing=full"});
  t = checkedToml(m);
  EXPECT_EQ(t["parallelism"]["data_parallel_replicate_degree"], 8);
  EXPECT_EQ(t["parallelism"]["data_parallel_shard_degree"], 1);
  EXPECT_FALSE(t["parallelism"].count("fsdp_reshard_after_forward"));

  // Where torchtitan trains differently from the plan, a comment says so.
  m = materialize8B({"strategy.zero=3", "strategy.offload=none",
                     "training.lr_schedule.warmup_steps=5",
                     "training.packing=false",
                     "training.optimizer.weight_decay=0.1"});
  std::string text = torchtitan(*m.module).text;
  for (const char *note : {"# warmup: torchtitan's starts at lr / warmup_steps",
                           "# packing: torchtitan packs documents",
                           "# weight decay: torchtitan's AdamW decays every "
                           "parameter"})
    EXPECT_NE(text.find(note), std::string::npos) << note << "\n" << text;

  // HSDP on two nodes: shard groups of 8, 2 replicas; FP8 as torchao's
  // float8 with FSDP float8 all-gathers.
  m = materialize8B({"strategy.zero=3", "strategy.offload=none",
                     "strategy.checkpointing=full", "cluster.nodes=2",
                     "training.global_batch_size=128",
                     "training.precision=fp8-mixed"});
  setLayout(m, shardGroups(8));
  t = checkedToml(m);
  EXPECT_EQ(t["parallelism"]["data_parallel_replicate_degree"], 2);
  EXPECT_EQ(t["parallelism"]["data_parallel_shard_degree"], 8);
  EXPECT_EQ(t["model"]["converters"], json::array({"quantize.linear.float8"}));
  EXPECT_EQ(t["quantize.linear.float8"]["recipe_name"], "tensorwise");
  EXPECT_EQ(t["quantize.linear.float8"]["enable_fsdp_float8_all_gather"], true);

  // tp 2 x cp 2 x pp 2 on 8 GPUs: no data parallelism left; the pipeline
  // takes the rank's 64 sequences as 64 micro-batches of 1.
  m = materialize8B({"strategy.zero=3", "strategy.offload=none",
                     "strategy.checkpointing=full"});
  setLayout(m, mesh(2, 2, 2));
  t = checkedToml(m);
  EXPECT_EQ(t["parallelism"]["tensor_parallel_degree"], 2);
  EXPECT_EQ(t["parallelism"]["enable_async_tensor_parallel"], true);
  EXPECT_EQ(t["parallelism"]["context_parallel_degree"], 2);
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_degree"], 2);
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_schedule"], "1F1B");
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_microbatch_size"], 1);
  EXPECT_EQ(t["parallelism"]["data_parallel_shard_degree"], 1);
  EXPECT_EQ(t["parallelism"]["data_parallel_replicate_degree"], 1);
  EXPECT_EQ(t["training"]["local_batch_size"], 64);
  EXPECT_FALSE(t["parallelism"].count("pipeline_parallel_layers_per_stage"));

  // Interleaved with 3 stages per rank: ceil((32 + 2) / 6) = 6 stages.
  m = materialize8B({"strategy.zero=2", "strategy.offload=none",
                     "strategy.checkpointing=none"});
  setLayout(m, interleaved(2, 3));
  t = checkedToml(m);
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_schedule"], "Interleaved1F1B");
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_layers_per_stage"], 6);
  EXPECT_EQ(t["parallelism"]["data_parallel_shard_degree"], 4);
  EXPECT_EQ(t["activation_checkpoint"]["mode"], "none");
}

// What torchtitan v0.2.2 cannot run is refused with one line, nothing
// written.
TEST(Emit, TorchtitanRefuses) {
  const std::string none = "strategy.offload=none";
  struct Case {
    std::vector<std::string> sets;
    LayoutKeys layout;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"training.method=lora", "strategy.zero=3", none}, {},
       "torchtitan v0.2.2 trains every weight: it has no LoRA"},
      {{"strategy.zero=1", none}, {}, "torchtitan v0.2.2 has no ZeRO-1"},
      {{"strategy.zero=2", "strategy.offload=optimizer"}, {},
       "offloads parameters with the optimizer states"},
      {{"strategy.zero=3", none, "strategy.checkpointing=full",
        "strategy.checkpoint_layers=4"},
       {}, "not the first 4"},
      {{"strategy.zero=0", none}, mesh(2, 1, 1), "runs DDP only as the sole"},
      {{"strategy.zero=3", none, "model.num_hidden_layers=30"}, {},
       "no llama3 flavor with this model's sizes (8B, 70B, 405B only): "
       "hidden 4096, 30 layers"},
      {{"strategy.zero=2", none}, interleaved(4, 4),
       "cannot split 32 layers (+ embedding and output) into 16 stages"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(llvm::join(c.sets, " "));
    Materialized m = materialize8B(c.sets);
    setLayout(m, c.layout);
    Emitted e = torchtitan(*m.module);
    EXPECT_FALSE(e.ok);
    EXPECT_NE(e.error.find(c.error), std::string::npos) << e.error;
  }
  // A model that is no Llama 3.1 at all.
  Materialized m = materialize({"strategy.zero=3", none});
  Emitted e = torchtitan(*m.module);
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.error.find("tied embeddings"), std::string::npos) << e.error;
}

/// The flags of the command line after `pretrain_gpt.py`, in order, each
/// with its (shell-unquoted) values.
std::vector<std::pair<std::string, std::vector<std::string>>>
megatronArgs(const std::string &text) {
  std::vector<std::pair<std::string, std::vector<std::string>>> args;
  size_t start = text.rfind("pretrain_gpt.py");
  EXPECT_NE(start, std::string::npos) << text;
  if (start == std::string::npos)
    return args;
  std::istringstream lines(text.substr(start + 15));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\\')
      line.pop_back();
    std::vector<std::string> words;
    std::string word;
    bool quoted = false, any = false;
    for (size_t i = 0; i <= line.size(); ++i) {
      char ch = i < line.size() ? line[i] : ' ';
      if (quoted) {
        if (ch == '\'')
          quoted = false;
        else
          word += ch;
      } else if (ch == '\'') {
        quoted = any = true;
      } else if (ch == ' ') {
        if (any || !word.empty())
          words.push_back(word);
        word.clear();
        any = false;
      } else {
        word += ch;
      }
    }
    for (const std::string &w : words) {
      if (w.rfind("--", 0) == 0)
        args.push_back({w, {}});
      else if (!args.empty())
        args.back().second.push_back(w);
      else
        ADD_FAILURE() << "a value before any flag: " << w;
    }
  }
  return args;
}

const json &megatronRecord() {
  static const json record = readTestData("megatron/arguments.json");
  return record;
}

/// Every flag is Megatron's, once, store_true ones bare and the others with
/// values of their type among their choices (the placeholders the comments
/// explain stand for values); the one-of rules validate_args() asserts.
std::map<std::string, std::vector<std::string>> checkedMegatron(Materialized &m) {
  Emitted e = megatron(*m.module);
  EXPECT_TRUE(e.ok) << e.error;
  EXPECT_EQ(e.text.rfind("# Megatron-LM core_v0.15.3 (309ffca6", 0), 0u) << e.text;
  std::map<std::string, std::vector<std::string>> byName;
  const std::set<std::string> placeholders = {"STEPS", "DATA", "CHECKPOINT",
                                              "SAVE_DIR", "MODEL"};
  const json &flags = megatronRecord()["flags"];
  for (const auto &[name, values] : megatronArgs(e.text)) {
    EXPECT_FALSE(byName.count(name)) << name << " twice";
    byName[name] = values;
    if (!flags.contains(name)) {
      ADD_FAILURE() << name << " is not a flag of Megatron-LM "
                    << megatronRecord()["megatron_version"].get<std::string>();
      continue;
    }
    const json &spec = flags[name];
    const std::string action = spec["action"];
    if (action == "store_true" || action == "store_false") {
      EXPECT_TRUE(values.empty()) << name << " takes no value";
      continue;
    }
    const std::string nargs = spec.contains("nargs") && spec["nargs"].is_string()
                                  ? spec["nargs"].get<std::string>()
                                  : "";
    if (nargs == "*" || nargs == "+") {
      EXPECT_FALSE(values.empty() && nargs == "+") << name;
    } else {
      EXPECT_EQ(values.size(), 1u) << name;
    }
    for (const std::string &v : values) {
      if (placeholders.count(v))
        continue;
      const std::string type = spec.value("type", "str");
      if (type == "int") {
        EXPECT_EQ(std::to_string(std::stoll(v)), v) << name << " " << v;
      }
      if (type == "float") {
        EXPECT_NO_THROW((void)std::stod(v)) << name << " " << v;
      }
      if (spec.contains("choices") && spec["choices"].is_array()) {
        bool listed = false;
        for (const json &c : spec["choices"])
          listed = listed || c == v;
        EXPECT_TRUE(listed) << name << " " << v << " not in " << spec["choices"];
      }
    }
  }
  int virtualFlags = byName.count("--num-virtual-stages-per-pipeline-rank") +
                     byName.count("--num-layers-per-virtual-pipeline-stage") +
                     byName.count("--pipeline-model-parallel-layout");
  EXPECT_LE(virtualFlags, 1);
  if (byName.count("--overlap-param-gather")) {
    EXPECT_TRUE(byName.count("--overlap-grad-reduce") &&
                (byName.count("--use-distributed-optimizer") ||
                 byName.count("--use-megatron-fsdp")));
  }
  if (byName.count("--tp-comm-overlap")) {
    EXPECT_TRUE(byName.count("--sequence-parallel"));
  }
  if (byName.count("--use-megatron-fsdp")) {
    EXPECT_EQ(byName["--ckpt-format"], std::vector<std::string>{"fsdp_dtensor"});
  }
  return byName;
}

using Args = std::vector<std::string>;

// Every flag --emit megatron writes exists in Megatron-LM core_v0.15.3's
// arguments.py (test/data/megatron records it), with a value of its type,
// over the emitter's branches: DDP, distributed optimizer, Megatron-FSDP
// (ZeRO-2/3) with HSDP, recompute (full, first k, selective), FP8, lr
// decays, tensor/sequence, pipeline (virtual stages, uneven split) and
// context parallelism.
TEST(Emit, MegatronFlagsExistAtPinnedVersion) {
  struct Case {
    std::vector<std::string> sets;
    LayoutKeys layout;
  };
  const std::string none = "strategy.offload=none";
  const std::vector<Case> cases = {
      {{"strategy.zero=0", none, "strategy.checkpointing=none"}, {}},
      {{"strategy.zero=1", none, "strategy.checkpointing=full",
        "strategy.checkpoint_layers=4", "training.max_grad_norm=1",
        "training.lr_schedule.decay=cosine", "training.lr_schedule.min_lr_ratio=0.1"},
       {}},
      {{"strategy.zero=2", none, "strategy.checkpointing=selective",
        "training.lr_schedule.decay=linear"},
       {}},
      {{"strategy.zero=3", none, "strategy.checkpointing=full",
        "training.precision=fp8-mixed", "cluster.nodes=2",
        "training.global_batch_size=128"},
       shardGroups(8)},
      {{"strategy.zero=1", none, "strategy.checkpointing=full"},
       mesh(2, 2, 2)},
      {{"strategy.zero=1", none, "strategy.checkpointing=full"},
       interleaved(2, 4)},
      {{"strategy.zero=1", none, "strategy.checkpointing=none",
        "model.num_hidden_layers=30"},
       mesh(1, 4, 1)},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(llvm::join(c.sets, " "));
    Materialized m = materialize8B(c.sets);
    setLayout(m, c.layout);
    checkedMegatron(m);
  }
}

// The model, layout and decisions land in Megatron's flags.
TEST(Emit, MegatronCarriesTheLayout) {
  const std::string none = "strategy.offload=none";
  Materialized m = materialize8B({"strategy.zero=1", none,
                                  "strategy.checkpointing=full"});
  auto f = checkedMegatron(m);
  EXPECT_EQ(f["--num-layers"], Args{"32"});
  EXPECT_EQ(f["--hidden-size"], Args{"4096"});
  EXPECT_EQ(f["--ffn-hidden-size"], Args{"14336"});
  EXPECT_EQ(f["--num-query-groups"], Args{"8"});
  EXPECT_TRUE(f.count("--group-query-attention"));
  EXPECT_EQ(f["--kv-channels"], Args{"128"});
  EXPECT_EQ(f["--rotary-base"], Args{"500000"});
  EXPECT_TRUE(f.count("--use-rope-scaling"));
  EXPECT_EQ(f["--rope-scaling-factor"], Args{"8"});
  EXPECT_EQ(f["--norm-epsilon"], Args{"1e-05"});
  EXPECT_TRUE(f.count("--untie-embeddings-and-output-weights"));
  EXPECT_EQ(f["--tokenizer-model"], Args{"meta-llama/Llama-3.1-8B"});
  EXPECT_EQ(f["--hidden-dropout"], Args{"0"});
  EXPECT_TRUE(f.count("--use-distributed-optimizer"));
  EXPECT_FALSE(f.count("--use-megatron-fsdp"));
  EXPECT_EQ(f["--micro-batch-size"], Args{"1"});
  EXPECT_EQ(f["--global-batch-size"], Args{"64"});
  EXPECT_EQ(f["--recompute-granularity"], Args{"full"});
  EXPECT_EQ(f["--recompute-method"], Args{"uniform"});
  EXPECT_EQ(f["--recompute-num-layers"], Args{"1"});
  EXPECT_TRUE(f.count("--bf16"));
  EXPECT_EQ(f["--clip-grad"], Args{"0"}); // the job does not clip
  EXPECT_EQ(f["--lr-decay-style"], Args{"constant"});
  EXPECT_EQ(f["--tensor-model-parallel-size"], Args{"1"});
  EXPECT_FALSE(f.count("--sequence-parallel"));

  // First 4 layers on one stage: block recompute; cosine to a floor.
  m = materialize8B({"strategy.zero=0", none, "strategy.checkpointing=full",
                     "strategy.checkpoint_layers=4",
                     "training.lr_schedule.decay=cosine",
                     "training.lr_schedule.min_lr_ratio=0.1"});
  f = checkedMegatron(m);
  EXPECT_EQ(f["--recompute-method"], Args{"block"});
  EXPECT_EQ(f["--recompute-num-layers"], Args{"4"});
  EXPECT_FALSE(f.count("--use-distributed-optimizer"));
  EXPECT_FALSE(f.count("--overlap-param-gather"));
  EXPECT_EQ(f["--min-lr"], Args{"1e-05"});

  // ZeRO-3 as Megatron-FSDP, HSDP as 2 optimizer instances, FP8.
  m = materialize8B({"strategy.zero=3", none, "strategy.checkpointing=full",
                     "cluster.nodes=2", "training.global_batch_size=128",
                     "training.precision=fp8-mixed"});
  setLayout(m, shardGroups(8));
  Emitted text = megatron(*m.module);
  f = checkedMegatron(m);
  EXPECT_EQ(f["--data-parallel-sharding-strategy"], Args{"optim_grads_params"});
  EXPECT_EQ(f["--num-distributed-optimizer-instances"], Args{"2"});
  EXPECT_EQ(f["--fp8-format"], Args{"hybrid"});
  EXPECT_EQ(f["--fp8-recipe"], Args{"tensorwise"});
  EXPECT_NE(text.text.find("torchrun --nproc_per_node 8 --nnodes 2 --node_rank "
                           "$NODE_RANK --master_addr $MASTER_ADDR --master_port "
                           "29500 pretrain_gpt.py"),
            std::string::npos)
      << text.text;
  EXPECT_EQ(text.text.find("CUDA_DEVICE_MAX_CONNECTIONS"), std::string::npos);

  // tp 2 x cp 2 x pp 2: sequence parallelism with overlap, ring CP, one
  // connection per device.
  m = materialize8B({"strategy.zero=1", none, "strategy.checkpointing=selective"});
  setLayout(m, mesh(2, 2, 2));
  text = megatron(*m.module);
  f = checkedMegatron(m);
  EXPECT_EQ(f["--tensor-model-parallel-size"], Args{"2"});
  EXPECT_TRUE(f.count("--sequence-parallel"));
  EXPECT_TRUE(f.count("--tp-comm-overlap"));
  EXPECT_EQ(f["--pipeline-model-parallel-size"], Args{"2"});
  EXPECT_EQ(f["--context-parallel-size"], Args{"2"});
  EXPECT_EQ(f["--cp-comm-type"], Args{"p2p"});
  EXPECT_EQ(f["--recompute-granularity"], Args{"selective"});
  EXPECT_NE(text.text.find("CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun "),
            std::string::npos)
      << text.text;

  // Interleaved: virtual stages; 30 layers over 4 stages: the embedding and
  // loss counted as layers (32 / 4).
  m = materialize8B({"strategy.zero=1", none, "strategy.checkpointing=none"});
  setLayout(m, interleaved(2, 4));
  f = checkedMegatron(m);
  EXPECT_EQ(f["--num-virtual-stages-per-pipeline-rank"], Args{"4"});
  EXPECT_FALSE(f.count("--account-for-embedding-in-pipeline-split"));
  m = materialize8B({"strategy.zero=1", none, "strategy.checkpointing=none",
                     "model.num_hidden_layers=30"});
  setLayout(m, mesh(1, 4, 1));
  f = checkedMegatron(m);
  EXPECT_TRUE(f.count("--account-for-embedding-in-pipeline-split"));
  EXPECT_TRUE(f.count("--account-for-loss-in-pipeline-split"));
}

// What Megatron-LM cannot run as planned is refused with one line.
TEST(Emit, MegatronRefuses) {
  const std::string none = "strategy.offload=none";
  struct Case {
    std::vector<std::string> sets;
    LayoutKeys layout;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"training.method=qlora", "strategy.zero=2", none}, {},
       "it has no LoRA or QLoRA"},
      {{"strategy.zero=1", "strategy.offload=optimizer"}, {},
       "--optimizer-cpu-offload"},
      {{"strategy.zero=1", none, "training.precision=bf16"}, {},
       "keeps fp32 main weights under --bf16"},
      {{"strategy.zero=1", none, "model.num_hidden_layers=29"}, mesh(1, 4, 1),
       "splits 29 layers evenly over 4 pipeline chunks"},
      {{"strategy.zero=1", none, "strategy.checkpointing=full",
        "strategy.checkpoint_layers=4"},
       mesh(1, 2, 1), "first k layers of every pipeline stage"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(llvm::join(c.sets, " "));
    Materialized m = materialize8B(c.sets);
    setLayout(m, c.layout);
    Emitted e = megatron(*m.module);
    EXPECT_FALSE(e.ok);
    EXPECT_NE(e.error.find(c.error), std::string::npos) << e.error;
  }
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
