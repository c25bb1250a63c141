//===- Manifest.cpp - a checkpoint's manifest.json, torch-free ------------===//

#include "swift/Runtime/io/Manifest.h"

#include "swift/Plan/Json.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

namespace swift::rt {
namespace fs = std::filesystem;
using nlohmann::json;
using plan::briefText;
using plan::JsonField;
using plan::UserError;

namespace {

/// A manifest is a few KB (the model's config); far more is not one.
constexpr uint64_t kMaxManifestBytes = 16 << 20;
/// The bytes at each end of a data file that its fingerprint hashes.
constexpr uint64_t kFingerprintBytes = 1 << 20;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

/// A path field: a non-empty string without NUL (a system call would cut
/// it there and open another file).
std::string pathField(const JsonField &f) {
  std::string s = f.string();
  if (s.empty())
    f.fail("an empty path");
  if (s.find('\0') != std::string::npos)
    f.fail("a path with a NUL character");
  return s;
}

DataRecord parseData(const JsonField &d) {
  d.object();
  DataRecord r;
  const std::string source = d.at("source").string();
  if (source == "synthetic") {
    d.onlyKeys({"source", "seed", "sequence_length"});
    r.synthetic = true;
    r.seed = uint64_t(d.at("seed").integer(0, kInt64Max));
  } else if (source == "file") {
    d.onlyKeys({"source", "path", "absolute_path", "format", "bytes",
                "fingerprint", "packing", "sequence_length", "windows",
                "eval_split"});
    r.synthetic = false;
    r.path = pathField(d.at("path"));
    r.absolutePath = pathField(d.at("absolute_path"));
    if (!fs::path(r.absolutePath).is_absolute())
      d.at("absolute_path").fail("\"" + briefText(r.absolutePath, 60) +
                                 "\" is not an absolute path");
    r.format = d.at("format").string();
    r.bytes = d.at("bytes").integer(0, kInt64Max);
    r.fingerprint = d.at("fingerprint").string();
    if (r.fingerprint.size() != 16 ||
        r.fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos)
      d.at("fingerprint").fail("\"" + briefText(r.fingerprint, 40) +
                               "\" is not 16 lowercase hex digits");
    r.packing = d.at("packing").boolean();
    if (d.has("windows"))
      r.windows = d.at("windows").integer(1, kMaxSamples);
    if (d.has("eval_split")) {
      r.evalSplit = d.at("eval_split").number(0, 1);
      if (!(r.evalSplit > 0 && r.evalSplit < 1))
        d.at("eval_split").fail("must be in (0, 1) (left out: none)");
    }
  } else {
    d.at("source").fail("\"" + briefText(source, 40) +
                        "\": expected \"file\" or \"synthetic\"");
  }
  r.sequenceLength =
      d.at("sequence_length").integer(2, plan::limits::kSequenceLength);
  return r;
}

json dataToJson(const DataRecord &r) {
  if (r.synthetic)
    return {{"source", "synthetic"},
            {"seed", r.seed},
            {"sequence_length", r.sequenceLength}};
  json j = {{"source", "file"},
            {"path", r.path},
            {"absolute_path", r.absolutePath},
            {"format", r.format},
            {"bytes", r.bytes},
            {"fingerprint", r.fingerprint},
            {"packing", r.packing},
            {"sequence_length", r.sequenceLength}};
  if (r.windows > 0)
    j["windows"] = r.windows;
  if (r.evalSplit > 0)
    j["eval_split"] = r.evalSplit;
  return j;
}

} // namespace

std::string DataRecord::describe() const {
  if (synthetic)
    return "synthetic tokens (seed " + std::to_string(seed) + ")";
  return briefText(absolutePath, 200) + " (" + std::to_string(bytes) +
         " bytes, fingerprint " + fingerprint + ")";
}

Manifest parseManifest(const std::string &text, const std::string &file) {
  const json j = plan::parseJson(text, file);
  const JsonField root{j, "", file};
  root.object();
  Manifest m;
  // The format first: any other JSON document is "not a manifest".
  const JsonField format = root.at("format");
  if (format.string() != kCheckpointFormat)
    format.fail(format.brief(40) + ": not a swift checkpoint manifest "
                "(expected \"" + std::string(kCheckpointFormat) + "\")");
  const JsonField version = root.at("version");
  m.version = version.integer(1, kInt64Max);
  if (m.version > kManifestVersion)
    version.fail(std::to_string(m.version) +
                 ": written by a newer swift-run (this one reads versions 1 to " +
                 std::to_string(kManifestVersion) + ")");
  if (m.version == 1)
    root.onlyKeys({"format", "version", "step", "samples_consumed",
                   "precision", "model", "written_by", "base_weights"});
  else if (m.version == 2)
    root.onlyKeys({"format", "version", "step", "samples_consumed",
                   "global_batch_size", "precision", "model", "written_by",
                   "base_weights", "data"});
  else
    root.onlyKeys({"format", "version", "step", "samples_consumed",
                   "global_batch_size", "precision", "model", "written_by",
                   "base_weights", "data", "epoch"});
  m.step = root.at("step").integer(0, kMaxSteps);
  m.samplesConsumed = root.at("samples_consumed").integer(0, kMaxSamples);
  if (m.version >= 2)
    m.globalBatchSize =
        root.at("global_batch_size").integer(1, int64_t(1) << 40);
  m.precision = plan::toString(root.at("precision").choice<plan::Precision>());
  m.model = root.at("model").object().j;
  const JsonField written = root.at("written_by");
  written.onlyKeys({"world_size", "zero"});
  m.writtenWorldSize = written.at("world_size").integer(1, 1 << 20);
  m.writtenZero = written.at("zero").integer(0, 3);
  if (root.has("base_weights")) {
    // "" is a LoRA run on the seed's random base.
    const JsonField base = root.at("base_weights");
    m.baseWeights = base.string().empty() ? std::string() : pathField(base);
  }
  if (m.version >= 2)
    m.data = parseData(root.at("data"));
  if (m.version >= 3 && root.has("epoch"))
    m.epoch = root.at("epoch").number(0, double(kMaxSamples));
  return m;
}

Manifest readManifest(const std::string &path) {
  return parseManifest(
      plan::readRegularFile(path, "a checkpoint manifest (JSON)",
                            kMaxManifestBytes),
      path);
}

std::string manifestToJson(const Manifest &m) {
  json j = {{"format", kCheckpointFormat},
            {"version", m.version},
            {"step", m.step},
            {"samples_consumed", m.samplesConsumed},
            {"precision", m.precision},
            {"model", m.model},
            {"written_by",
             {{"world_size", m.writtenWorldSize}, {"zero", m.writtenZero}}}};
  if (m.globalBatchSize)
    j["global_batch_size"] = *m.globalBatchSize;
  if (m.baseWeights)
    j["base_weights"] = *m.baseWeights;
  if (m.data)
    j["data"] = dataToJson(*m.data);
  if (m.epoch)
    j["epoch"] = *m.epoch;
  return j.dump(1) + "\n";
}

json manifestModel(const Plan &plan) {
  json j = json::parse(plan::modelToJson(plan.model));
  const plan::TrainingConfig &t = plan.training;
  if (t.method != plan::Method::Full)
    j["trains"] = {{"method", plan::toString(t.method)},
                   {"lora_rank", t.lora.rank},
                   {"lora_targets", t.lora.targets}};
  else
    j["trains"] = "full";
  return j;
}

void checkSameModel(const Manifest &manifest, const Plan &plan,
                    const std::string &file) {
  const json mine = manifestModel(plan);
  json theirs = manifest.model;
  if (!theirs.contains("trains")) // written before LoRA: a full run's
    theirs["trains"] = "full";
  auto brief = [](const json &v) {
    return briefText(v.dump(-1, ' ', false, json::error_handler_t::replace), 80);
  };
  for (auto it = mine.begin(); it != mine.end(); ++it)
    if (!theirs.contains(it.key()) || theirs[it.key()] != it.value())
      throw UserError(file + ": a checkpoint of another model: " + it.key() +
                      " is " +
                      (theirs.contains(it.key()) ? brief(theirs[it.key()])
                                                 : std::string("absent")) +
                      ", the plan's model has " + brief(it.value()));
}

std::string dataFingerprint(const std::string &path, int64_t &bytes) {
  if (std::string why = plan::notRegularFile(path, "a data file"); !why.empty())
    throw UserError(path + ": " + why);
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec)
    throw UserError(path + ": cannot read the file: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  // FNV-1a, 64 bits.
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](const char *p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= uint8_t(p[i]);
      h *= 0x100000001b3ull;
    }
  };
  for (int i = 0; i < 8; ++i) {
    const char byte = char((uint64_t(size) >> (8 * i)) & 0xff);
    mix(&byte, 1);
  }
  std::string chunk;
  for (uintmax_t start : {uintmax_t(0),
                          size > kFingerprintBytes ? size - kFingerprintBytes
                                                   : uintmax_t(0)}) {
    chunk.resize(size_t(std::min<uintmax_t>(size, kFingerprintBytes)));
    in.seekg(std::streamoff(start));
    in.read(chunk.data(), std::streamsize(chunk.size()));
    if (!in || size_t(in.gcount()) != chunk.size())
      throw UserError(path + ": cannot read the file (it shrank, or an I/O "
                      "error)");
    mix(chunk.data(), chunk.size());
  }
  bytes = int64_t(size);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
  return hex;
}

DataRecord describeData(const std::string &path, const Plan &plan) {
  DataRecord r;
  r.sequenceLength = plan.training.sequenceLength;
  if (path.empty()) {
    r.synthetic = true;
    r.seed = plan.training.seed;
    return r;
  }
  r.synthetic = false;
  r.path = path;
  std::error_code ec;
  r.absolutePath = fs::absolute(path, ec).lexically_normal().string();
  if (ec)
    throw UserError(path + ": " + ec.message());
  r.format = fs::path(path).extension().string();
  r.fingerprint = dataFingerprint(path, r.bytes);
  r.packing = plan.training.packing;
  return r;
}

DataRecord chooseResumeData(const Manifest &manifest, const std::string &file,
                            const std::string &given, const Plan &plan,
                            bool ignoreMismatch,
                            std::vector<std::string> &notes) {
  const std::string used = given.empty() ? "synthetic tokens" : given;
  if (!manifest.data) {
    notes.push_back("swift-run: warning: " + file +
                    " does not record the data its run trained on (a version 1"
                    " manifest): the run continues on " + used +
                    " at sample " + std::to_string(manifest.samplesConsumed));
    return describeData(given, plan);
  }
  const DataRecord &rec = *manifest.data;
  // A mismatch: refused, or with --ignore-data-mismatch a warning.
  auto mismatch = [&](const std::string &why) {
    if (!ignoreMismatch)
      throw UserError(file + ": data: " + why +
                      "; resume with the data the checkpoint trained on, or "
                      "pass --ignore-data-mismatch to continue on other data");
    notes.push_back("swift-run: warning: --ignore-data-mismatch: " + why +
                    "; the run continues on " + used + " at sample " +
                    std::to_string(manifest.samplesConsumed));
    return describeData(given, plan);
  };
  auto windows = [&](const DataRecord &now) -> std::string {
    if (rec.sequenceLength != now.sequenceLength)
      return "the checkpoint's run cut its data into windows of "
             "sequence_length " + std::to_string(rec.sequenceLength) +
             ", the plan's is " + std::to_string(now.sequenceLength);
    if (!rec.synthetic && rec.packing != now.packing)
      return std::string("the checkpoint's run had training.packing ") +
             (rec.packing ? "true" : "false") + ", the plan has " +
             (now.packing ? "true" : "false") +
             " (its windows are other samples)";
    return "";
  };
  if (rec.synthetic) {
    if (!given.empty())
      return mismatch("the checkpoint trained on " + rec.describe() +
                      ", not on --data " + given);
    if (rec.seed != plan.training.seed)
      return mismatch("the checkpoint trained on " + rec.describe() +
                      ", the plan's training.seed is " +
                      std::to_string(plan.training.seed));
    const DataRecord now = describeData("", plan);
    if (std::string why = windows(now); !why.empty())
      return mismatch(why);
    return now;
  }
  // The data is given again, never assumed: a file the checkpoint names
  // may have been rewritten or replaced since.
  if (given.empty())
    throw UserError(file + ": data: the checkpoint trained on --data " +
                    briefText(rec.path, 200) + " (" + rec.describe() +
                    "); resume with --data " + briefText(rec.path, 200) +
                    " (a moved copy is recognized), or other data with "
                    "--ignore-data-mismatch");
  const DataRecord now = describeData(given, plan);
  if (now.bytes != rec.bytes || now.fingerprint != rec.fingerprint ||
      now.format != rec.format)
    return mismatch(
        "--data " + given + " is " + now.describe() +
        ", not the data the checkpoint trained on: " + rec.describe());
  if (std::string why = windows(now); !why.empty())
    return mismatch(why);
  std::error_code ec;
  if (!fs::equivalent(given, rec.absolutePath, ec))
    notes.push_back("swift-run: --data " + given +
                    " is the checkpoint's data, moved: it trained on " +
                    rec.describe());
  return now;
}

} // namespace swift::rt
