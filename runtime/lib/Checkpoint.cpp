//===- Checkpoint.cpp - resumable training state, any world size ----------===//

#include "swift/Runtime/Checkpoint.h"

#include "swift/Runtime/Check.h"
#include "swift/Runtime/Weights.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace swift::rt {
namespace fs = std::filesystem;
namespace st = safetensors;

namespace {

constexpr const char *kFormat = "swift.checkpoint";
constexpr int kVersion = 1;
constexpr StateKind kKinds[] = {StateKind::Master, StateKind::ExpAvg,
                                StateKind::ExpAvgSq};

/// The tensor holding `kind` of parameter `p`: its HF name for the master,
/// with ":exp_avg" / ":exp_avg_sq" for the moments.
std::string stateName(const ParamDesc &p, StateKind kind) {
  return hfName(p) + (kind == StateKind::ExpAvg     ? ":exp_avg"
                      : kind == StateKind::ExpAvgSq ? ":exp_avg_sq"
                                                    : "");
}

std::string stepDirName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld", (long long)step);
  return name;
}

/// The plan's "model" section, and what it trains (LoRA: the method and
/// the adapters' shape): what a checkpoint must match.
nlohmann::json modelJson(const Plan &plan) {
  nlohmann::json j = nlohmann::json::parse(plan::modelToJson(plan.model));
  const TrainingConfig &t = plan.training;
  if (t.method != Method::Full)
    j["trains"] = {{"method", toString(t.method)},
                   {"lora_rank", t.lora.rank},
                   {"lora_targets", t.lora.targets}};
  else
    j["trains"] = "full";
  return j;
}

} // namespace

std::string saveCheckpoint(Engine &engine, const Plan &plan,
                           const std::string &saveDir, int64_t step, int keep,
                           const std::string &hfConfig,
                           const std::string &baseWeights) {
  const ModelConfig &m = plan.model;
  const int numUnits = int(m.numLayers) + 2;
  if (engine.rank() != 0) {
    for (int u = 0; u < numUnits; ++u)
      for (StateKind kind : kKinds)
        (void)engine.stateUnit(u, kind);
    return (fs::path(saveDir) / stepDirName(step)).string();
  }
  std::vector<UnitLayout> layouts;
  for (int u = 0; u < numUnits; ++u)
    layouts.push_back(trainableLayout(plan, u));
  // Unit-major, then kind: one gather per (unit, kind), in the order the
  // other ranks take part in them.
  struct Item {
    int unit;
    StateKind kind;
    const ParamDesc *param;
  };
  std::vector<Item> items;
  for (int u = 0; u < numUnits; ++u)
    for (StateKind kind : kKinds)
      for (const ParamDesc &d : layouts[size_t(u)].params)
        items.push_back({u, kind, &d});
  // Each state is stored in the dtype the engine keeps it in.
  std::vector<st::TensorSpec> specs;
  int current = -1;
  StateKind currentKind = StateKind::Master;
  at::Tensor values;
  auto fetch = [&](const Item &it) -> const at::Tensor & {
    if (it.unit != current || it.kind != currentKind) {
      values = engine.stateUnit(it.unit, it.kind);
      current = it.unit;
      currentKind = it.kind;
    }
    return values;
  };
  st::DType dtypes[3];
  for (StateKind kind : kKinds)
    dtypes[int(kind)] = engine.stateDtype(kind) == at::kBFloat16
                            ? st::DType::BF16
                            : st::DType::F32;
  for (const Item &it : items)
    specs.push_back({stateName(*it.param, it.kind), dtypes[int(it.kind)],
                     it.param->shape});

  const fs::path finalDir = fs::path(saveDir) / stepDirName(step);
  const fs::path partial = fs::path(saveDir) / (".partial-" + stepDirName(step));
  std::error_code ec;
  fs::remove_all(partial, ec);
  st::write(
      partial.string(), specs,
      [&](size_t i, const st::ByteSink &sink) {
        // Tests kill the writer halfway through the save of a given step.
        if (const char *kill = std::getenv("SWIFT_FAULT_KILL_SAVE");
            kill && i == items.size() / 2 && std::to_string(step) == kill)
          std::raise(SIGKILL);
        const Item &it = items[i];
        sinkTensor(fetch(it).narrow(0, it.param->offset, it.param->numel()),
                   sink);
      },
      int64_t(5) << 30, {{"format", kFormat}});
  nlohmann::json manifest = {
      {"format", kFormat},
      {"version", kVersion},
      {"step", step},
      {"samples_consumed", step * plan.training.globalBatchSize},
      {"precision", toString(plan.training.precision)},
      {"model", modelJson(plan)},
      {"written_by", {{"world_size", plan.world.size},
                      {"zero", plan.strategy.zero}}}};
  if (plan.training.method != Method::Full)
    manifest["base_weights"] =
        baseWeights.empty() ? std::string()
                            : fs::absolute(baseWeights).lexically_normal().string();
  if (!hfConfig.empty())
    st::writeFileAtomically((partial / "config.json").string(), hfConfig);
  st::writeFileAtomically((partial / "manifest.json").string(),
                          manifest.dump(1) + "\n");
  fs::remove_all(finalDir, ec);
  fs::rename(partial, finalDir, ec);
  SWIFT_CHECK(!ec, finalDir.string(), ": cannot rename from ", partial.string(),
              ": ", ec.message());
  st::writeFileAtomically((fs::path(saveDir) / "latest").string(),
                          stepDirName(step) + "\n");
  if (keep > 0) {
    std::vector<std::string> steps;
    for (const auto &e : fs::directory_iterator(saveDir))
      if (e.is_directory() && e.path().filename().string().rfind("step-", 0) == 0)
        steps.push_back(e.path().filename().string());
    std::sort(steps.begin(), steps.end());
    for (size_t i = 0; i + size_t(keep) < steps.size(); ++i)
      fs::remove_all(fs::path(saveDir) / steps[i], ec);
  }
  return finalDir.string();
}

std::string Checkpoint::hfConfig() const {
  const fs::path config = fs::path(dir_) / "config.json";
  return fs::exists(config) ? config.string() : "";
}

Checkpoint::Checkpoint(const std::string &path, const Plan &plan) {
  fs::path dir = path;
  if (!fs::exists(dir / "manifest.json") && fs::exists(dir / "latest")) {
    std::ifstream in(dir / "latest");
    std::string name;
    in >> name;
    SWIFT_CHECK(!name.empty() && name.find('/') == std::string::npos,
                (dir / "latest").string(), ": does not name a step directory");
    SWIFT_CHECK(fs::is_directory(dir / name), (dir / "latest").string(),
                ": names ", name, ", which is not a directory there");
    dir /= name;
  }
  dir_ = dir.string();
  const fs::path manifestPath = dir / "manifest.json";
  std::ifstream in(manifestPath);
  SWIFT_CHECK(in.good(), path, ": not a checkpoint (no manifest.json",
              fs::exists(fs::path(path) / "latest") ? "" : " and no latest", ")");
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, false);
  SWIFT_CHECK(manifest.is_object() && manifest.value("format", "") == kFormat,
              manifestPath.string(), ": not a swift checkpoint manifest");
  SWIFT_CHECK(manifest.value("version", 0) == kVersion, manifestPath.string(),
              ": version ", manifest.value("version", 0), " (this swift-run reads ",
              kVersion, ")");
  SWIFT_CHECK(manifest.contains("step"), manifestPath.string(),
              ": step: missing");
  SWIFT_CHECK(manifest["step"].is_number_unsigned(), manifestPath.string(),
              ": step is ", manifest["step"].dump(),
              ", not a count of steps (an integer >= 0)");
  step_ = manifest["step"].get<int64_t>();
  if (manifest.contains("base_weights") && manifest["base_weights"].is_string())
    baseWeights_ = manifest["base_weights"].get<std::string>();
  const nlohmann::json mine = modelJson(plan);
  nlohmann::json theirs = manifest.value("model", nlohmann::json::object());
  if (!theirs.contains("trains")) // written before LoRA: a full run's
    theirs["trains"] = "full";
  for (auto it = mine.begin(); it != mine.end(); ++it)
    SWIFT_CHECK(theirs.contains(it.key()) && theirs[it.key()] == it.value(),
                manifestPath.string(), ": a checkpoint of another model: ",
                it.key(), " is ",
                theirs.contains(it.key()) ? theirs[it.key()].dump() : "absent",
                ", the plan's model has ", it.value().dump());
  state_ = std::make_unique<st::ModelWeights>(dir_);
  // Every tensor of every kind, with its shape, before any step.
  for (int u = 0; u < plan.model.numLayers + 2; ++u)
    for (const ParamDesc &d : trainableLayout(plan, u).params)
      for (StateKind kind : kKinds) {
        auto [t, file] = state_->find(stateName(d, kind));
        SWIFT_CHECK(t, dir_, ": tensor \"", stateName(d, kind), "\" is missing");
        SWIFT_CHECK(t->shape == d.shape, file->path(), ": tensor \"",
                    stateName(d, kind), "\" has the wrong shape");
      }
}

void Checkpoint::read(StateKind kind, const UnitLayout &layout, int64_t begin,
                      int64_t count, at::Tensor dst) const {
  readUnitRange(
      *state_, [&](const ParamDesc &p) { return stateName(p, kind); }, layout,
      begin, count, dst);
}

} // namespace swift::rt
