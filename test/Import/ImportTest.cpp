//===- ImportTest.cpp - every preset and enum value imports and verifies --===//

#include "../Job/TestUtil.h"

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Import.h"
#include "swift/Job/Presets.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

using namespace swift::job;
using namespace swift::job::testing;

namespace {

mlir::OwningOpRef<mlir::ModuleOp> import(mlir::MLIRContext &context,
                                         std::vector<std::string> sets) {
  Diagnostic diag;
  auto job = loadJob(writeTemp(kBaseJob), sets, diag);
  EXPECT_TRUE(job) << diag.str();
  auto module = mlir::swift::importJob(*job, context);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*module)));
  return module;
}

int64_t parameters(mlir::ModuleOp module) {
  int64_t n = -1;
  module.walk([&](mlir::swift::ModelOp m) { n = m.getNumParameters(); });
  return n;
}

// Released parameter counts (the models' safetensors totals).
TEST(Import, ParameterCountsMatchReleasedModels) {
  mlir::MLIRContext context;
  const std::pair<const char *, int64_t> known[] = {
      {"llama3.1-8b", 8030261248},   {"llama3.2-1b", 1235814400},
      {"llama3.2-3b", 3212749824},   {"qwen2.5-0.5b", 494032768},
      {"qwen2.5-7b", 7615616512},    {"qwen3-8b", 8190735360},
      {"mistral-7b", 7241732096},    {"llama3.1-70b", 70553706496},
      {"qwen2.5-72b", 72706203648}, {"llama3.1-405b", 405853388800}};
  for (auto [name, count] : known)
    EXPECT_EQ(parameters(*import(context, {std::string("model=") + name})), count)
        << name;
}

TEST(Import, EveryPresetVerifies) {
  mlir::MLIRContext context;
  for (const ModelPreset &m : modelPresets())
    EXPECT_GT(parameters(*import(context, {std::string("model=") + m.name})), 0)
        << m.name;
}

/// The job's value of each enum key after the module is printed and parsed
/// back: the IR text carries every spelling of every enum.
template <typename E>
void expectRoundTrip(mlir::MLIRContext &context, const std::string &key,
                     E (*read)(mlir::swift::JobOp)) {
  for (const auto &s : swift::plan::EnumTraits<E>::kSpellings) {
    auto module = import(context, {key + "=" + s.name});
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    auto parsed = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    ASSERT_TRUE(parsed) << key << "=" << s.name << ":\n" << text;
    mlir::swift::JobOp job = *parsed->getOps<mlir::swift::JobOp>().begin();
    EXPECT_EQ(read(job), s.value) << key << "=" << s.name;
  }
}

TEST(Import, EveryJobValueRoundTripsThroughTheIR) {
  mlir::MLIRContext context;
  using mlir::swift::JobOp;
  expectRoundTrip<swift::plan::Precision>(
      context, "training.precision", [](JobOp j) { return j.getPrecision(); });
  expectRoundTrip<swift::plan::Method>(
      context, "training.method", [](JobOp j) { return j.getMethod(); });
  expectRoundTrip<swift::plan::Backend>(
      context, "backend", [](JobOp j) { return j.getBackend(); });
  expectRoundTrip<swift::plan::Offload>(context, "strategy.offload", [](JobOp j) {
    return *j.getStrategy().getOffload();
  });
  expectRoundTrip<swift::plan::Checkpointing>(
      context, "strategy.checkpointing",
      [](JobOp j) { return *j.getStrategy().getCheckpointing(); });
  // 1f1b is the keyword one_f_one_b (a keyword cannot start with a digit).
  expectRoundTrip<swift::plan::PipelineSchedule>(
      context, "strategy.pp_schedule",
      [](JobOp j) { return *j.getStrategy().getPpSchedule(); });
  // Absent from the IR when default (drop, assistant).
  expectRoundTrip<swift::plan::Truncation>(
      context, "training.truncation", [](JobOp j) {
        return j.getTruncation().value_or(swift::plan::Truncation::Drop);
      });
  expectRoundTrip<swift::plan::LossOn>(
      context, "training.loss_on", [](JobOp j) {
        return j.getLossOn().value_or(swift::plan::LossOn::Assistant);
      });
}

TEST(Import, StrategyAndTrainingReachTheJob) {
  mlir::MLIRContext context;
  auto module = import(context, {"strategy.zero=2", "strategy.checkpointing=full",
                                 "strategy.checkpoint_layers=4",
                                 "training.method=lora"});
  mlir::swift::JobOp job;
  module->walk([&](mlir::swift::JobOp op) { job = op; });
  ASSERT_TRUE(job);
  auto strategy = job.getStrategy();
  EXPECT_EQ(strategy.getZero(), mlir::swift::ZeroStage::zero2);
  EXPECT_EQ(strategy.getCheckpointing(), mlir::swift::Checkpointing::Full);
  EXPECT_EQ(strategy.getCheckpointLayers(), 4);
  EXPECT_FALSE(strategy.getOffload());
  ASSERT_TRUE(job.getLora());
  EXPECT_EQ(job.getLora()->getRank(), 16);
  EXPECT_EQ(job.getLora()->getDropout().convertToDouble(), 0.0);
}

// The layout keys reach #swift.strategy as the job gives them, trivial
// values included; auto ones stay absent, and the IR text is then what it
// was before the keys existed.
TEST(Import, LayoutKeysReachTheStrategy) {
  mlir::MLIRContext context;
  auto strategyOf = [&](std::vector<std::string> sets) {
    auto module = import(context, std::move(sets));
    mlir::swift::StrategyAttr strategy;
    module->walk([&](mlir::swift::JobOp op) { strategy = op.getStrategy(); });
    return strategy;
  };
  auto set = strategyOf({"cluster.nodes=2", "strategy.tp=2", "strategy.pp=2",
                         "strategy.cp=2", "strategy.dp_shard=1",
                         "strategy.pp_schedule=interleaved",
                         "strategy.virtual_stages=2"});
  EXPECT_EQ(set.getTp(), 2);
  EXPECT_EQ(set.getPp(), 2);
  EXPECT_EQ(set.getCp(), 2);
  EXPECT_EQ(set.getDpShard(), 1);
  EXPECT_EQ(set.getPpSchedule(), swift::plan::PipelineSchedule::Interleaved);
  EXPECT_EQ(set.getVirtualStages(), 2);
  auto trivial = strategyOf({"strategy.tp=1", "strategy.dp_shard=8"});
  EXPECT_EQ(trivial.getTp(), 1);
  EXPECT_EQ(trivial.getDpShard(), 8);
  auto open = strategyOf({"strategy.tp=auto", "strategy.pp=auto",
                          "strategy.pp_schedule=auto"});
  EXPECT_EQ(open, strategyOf({}));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << mlir::Attribute(open);
  EXPECT_EQ(text, "#swift.strategy<>");
}

// training.lora reaches #swift.lora whole: rank, alpha, dropout, targets.
TEST(Import, LoraSettingsReachTheJob) {
  mlir::MLIRContext context;
  auto module = import(context, {"training.method=qlora",
                                 "training.lora={rank: 8, alpha: 16, dropout: "
                                 "0.1, targets: [q_proj, down_proj]}"});
  mlir::swift::JobOp job;
  module->walk([&](mlir::swift::JobOp op) { job = op; });
  ASSERT_TRUE(job);
  mlir::swift::LoraAttr lora = job.getLoraAttr();
  ASSERT_TRUE(lora);
  EXPECT_EQ(lora.getRank(), 8);
  EXPECT_EQ(lora.getAlpha().convertToDouble(), 16.0);
  EXPECT_EQ(lora.getDropout().convertToDouble(), 0.1);
  EXPECT_TRUE(lora.targets("model.layers.0.mlp.down_proj.weight"));
  EXPECT_FALSE(lora.targets("model.layers.0.mlp.up_proj.weight"));
}

} // namespace
