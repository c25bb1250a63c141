//===- Checkpoint.cpp - resumable training state, any world size ----------===//

#include "swift/Runtime/io/Checkpoint.h"

#include "swift/Plan/Files.h"
#include "swift/Plan/Json.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/io/Weights.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>

namespace swift::rt {
namespace fs = std::filesystem;
namespace st = safetensors;

namespace {

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

/// A checkpoint's directory name: "step-" and digits.
bool isStepName(const std::string &name) {
  return name.size() > 5 && name.rfind("step-", 0) == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

/// Whether anything (a dangling or looping symlink too) is at `path`.
bool present(const fs::path &path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

/// The step directory a save directory's `latest` names.
fs::path followLatest(const fs::path &dir) {
  const std::string latest = (dir / "latest").string();
  std::string name = plan::readRegularFile(
      latest, "a save directory's latest (the name of its newest checkpoint)",
      4096);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.pop_back();
  SWIFT_CHECK(!name.empty() && name.find('/') == std::string::npos &&
                  name.find('\0') == std::string::npos && name != "." &&
                  name != "..",
              latest, ": does not name a step directory");
  std::error_code ec;
  const fs::file_status st = fs::status(dir / name, ec);
  SWIFT_CHECK(!ec || ec == std::errc::no_such_file_or_directory, latest,
              ": names ", plan::briefText(name, 40), ": ", ec.message());
  SWIFT_CHECK(fs::is_directory(st), latest, ": names ",
              plan::briefText(name, 40), ", which is not a directory there");
  return dir / name;
}

/// After a save of `written` in `saveDir` (rank 0): removes `.partial-*`
/// leftovers of killed saves, with `replaceOthers` every other step-N
/// directory, and with `keep` all but the newest `keep` - 1 others by
/// their manifests' steps. A directory whose manifest cannot be read is
/// not this run's to delete: it stays, and a warning says so once.
void rotate(const fs::path &saveDir, const std::string &written, int keep,
            bool replaceOthers) {
  std::error_code ec;
  std::vector<fs::path> remove;
  std::vector<std::pair<int64_t, std::string>> others; // (step, name)
  for (fs::directory_iterator it(saveDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code typeEc;
    if (name == written || !it->is_directory(typeEc))
      continue;
    if (name.rfind(".partial-step-", 0) == 0 ||
        (replaceOthers && isStepName(name))) {
      remove.push_back(it->path());
    } else if (keep > 0 && name.rfind("step-", 0) == 0) {
      try {
        others.push_back(
            {readManifest((it->path() / "manifest.json").string()).step, name});
      } catch (const UserError &e) {
        static std::set<std::string> warned;
        if (warned.insert(it->path().string()).second)
          std::cerr << "swift-run: warning: --keep leaves " << it->path().string()
                    << " alone (" << e.what()
                    << "): a directory whose manifest cannot be read is not "
                       "this run's to delete"
                    << std::endl;
      }
    }
  }
  if (ec)
    std::cerr << "swift-run: warning: --keep: cannot list " << saveDir.string()
              << ": " << ec.message() << std::endl;
  // The newest first; `written` is the newest write and is kept apart.
  std::sort(others.begin(), others.end(), std::greater<>());
  for (size_t i = size_t(std::max(keep - 1, 0)); i < others.size(); ++i)
    remove.push_back(saveDir / others[i].second);
  for (const fs::path &p : remove)
    if (const std::string why = plan::removeTree(p.string()); !why.empty())
      std::cerr << "swift-run: warning: --keep: cannot remove " << why
                << std::endl;
}

} // namespace

std::string saveCheckpoint(ModelState &state, const Plan &plan,
                           const SaveRequest &request) {
  const std::string &saveDir = request.saveDir;
  const int64_t step = request.step;
  const ModelConfig &m = plan.model;
  const int numUnits = int(m.numLayers) + 2;
  if (state.rank() != 0) {
    for (int u = 0; u < numUnits; ++u)
      for (StateKind kind : kKinds)
        (void)state.stateUnit(u, kind);
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
      values = state.stateUnit(it.unit, it.kind);
      current = it.unit;
      currentKind = it.kind;
    }
    return values;
  };
  st::DType dtypes[3];
  for (StateKind kind : kKinds)
    dtypes[int(kind)] = state.stateDtype(kind) == at::kBFloat16
                            ? st::DType::BF16
                            : st::DType::F32;
  for (const Item &it : items)
    specs.push_back({stateName(*it.param, it.kind), dtypes[int(it.kind)],
                     it.param->shape});

  const fs::path finalDir = fs::path(saveDir) / stepDirName(step);
  const fs::path partial = fs::path(saveDir) / (".partial-" + stepDirName(step));
  std::error_code ec;
  (void)plan::removeTree(partial.string());
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
      int64_t(5) << 30, {{"format", kCheckpointFormat}});
  Manifest manifest;
  manifest.step = step;
  manifest.samplesConsumed = request.samplesConsumed;
  manifest.globalBatchSize = plan.training.globalBatchSize;
  manifest.precision = toString(plan.training.precision);
  manifest.model = manifestModel(plan);
  manifest.writtenWorldSize = plan.world.size;
  manifest.writtenZero = plan.strategy.zero;
  if (plan.training.method != Method::Full) {
    manifest.baseWeights = std::string();
    if (!request.baseWeights.empty())
      manifest.baseWeights =
          fs::absolute(request.baseWeights, ec).lexically_normal().string();
  }
  manifest.data = request.data;
  manifest.epoch = request.epoch;
  if (!request.hfConfig.empty())
    st::writeFileAtomically((partial / "config.json").string(),
                            request.hfConfig);
  if (request.tokenizer)
    writeTokenizerFiles(partial.string(), *request.tokenizer);
  st::writeFileAtomically((partial / "manifest.json").string(),
                          manifestToJson(manifest));
  const std::string stale = plan::removeTree(finalDir.string());
  SWIFT_CHECK(stale.empty(), finalDir.string(),
              ": cannot replace the checkpoint there: ", stale);
  fs::rename(partial, finalDir, ec);
  SWIFT_CHECK(!ec, finalDir.string(), ": cannot rename from ", partial.string(),
              ": ", ec.message());
  st::writeFileAtomically((fs::path(saveDir) / "latest").string(),
                          stepDirName(step) + "\n");
  rotate(saveDir, stepDirName(step), request.keep, request.replaceOthers);
  return finalDir.string();
}

TokenizerFiles readTokenizerFiles(const std::string &dir) {
  static const char *const kNames[] = {"tokenizer.json",
                                       "tokenizer_config.json",
                                       "special_tokens_map.json",
                                       "generation_config.json",
                                       "tokenizer.model",
                                       "vocab.json",
                                       "merges.txt",
                                       "added_tokens.json",
                                       "chat_template.jinja"};
  TokenizerFiles files;
  if (dir.empty())
    return files;
  for (const char *name : kNames) {
    const std::string path = (fs::path(dir) / name).string();
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(path, ec)))
      continue;
    // A tokenizer.json is tens of MB; a file past 1 GiB is not one.
    files.emplace_back(
        name, plan::readRegularFile(path,
                                    "a tokenizer file (copied into the "
                                    "export and the checkpoints)",
                                    uint64_t(1) << 30));
  }
  return files;
}

void writeTokenizerFiles(const std::string &dir, const TokenizerFiles &files) {
  for (const auto &[name, bytes] : files)
    st::writeFileAtomically((fs::path(dir) / name).string(), bytes);
}

bool checkSaveDir(const std::string &saveDir, const std::string &resumedDir,
                  bool overwrite) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(saveDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code typeEc;
    if (name == "latest" || name.rfind(".partial-step-", 0) == 0 ||
        (name.rfind("step-", 0) == 0 && it->is_directory(typeEc)))
      found.push_back(name);
  }
  SWIFT_CHECK(!ec || ec == std::errc::no_such_file_or_directory,
              "command line: --save-dir ", saveDir, ": ", ec.message());
  if (found.empty())
    return false;
  if (!resumedDir.empty()) {
    const fs::path parent = fs::canonical(resumedDir, ec).parent_path();
    if (!ec && fs::equivalent(parent, saveDir, ec))
      return false; // the run it continues
  }
  std::sort(found.begin(), found.end());
  std::string names;
  for (size_t i = 0; i < found.size() && i < 3; ++i)
    names += (i ? ", " : "") + plan::briefText(found[i], 40);
  if (found.size() > 3)
    names += ", ...";
  if (overwrite) {
    std::cout << "swift-run: --overwrite-save-dir: " << saveDir << " holds "
              << "another run's checkpoints (" << names
              << "): this run's first checkpoint replaces them" << std::endl;
    return true;
  }
  throw UserError("command line: --save-dir " + saveDir +
                  " holds another run's checkpoints (" + names +
                  ") and this run does not resume from them: --resume " +
                  saveDir + " continues that run, --overwrite-save-dir "
                  "replaces them; or save to another directory");
}

std::string Checkpoint::hfConfig() const {
  const fs::path config = fs::path(dir_) / "config.json";
  return present(config) ? config.string() : "";
}

Checkpoint::Checkpoint(const std::string &path, const Plan &plan) {
  const fs::path given = path;
  std::error_code ec;
  const fs::file_status status = fs::status(given, ec);
  SWIFT_CHECK(!ec || ec == std::errc::no_such_file_or_directory,
              "command line: --resume ", path, ": ", ec.message());
  SWIFT_CHECK(fs::exists(status), "command line: --resume ", path,
              ": no such file or directory");
  SWIFT_CHECK(fs::is_directory(status), "command line: --resume ", path,
              ": not a directory; expected a checkpoint (a step directory, "
              "or a save directory with latest)");
  const bool stepDir = present(given / "manifest.json");
  SWIFT_CHECK(stepDir || present(given / "latest"), path,
              ": not a checkpoint (no manifest.json and no latest)");
  const fs::path dir = stepDir ? given : followLatest(given);
  dir_ = dir.string();
  manifestPath_ = (dir / "manifest.json").string();
  manifest_ = readManifest(manifestPath_);
  checkSameModel(manifest_, plan, manifestPath_);
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
