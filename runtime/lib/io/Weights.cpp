//===- Weights.cpp - HF model directories in and out ----------------------===//

#include "swift/Runtime/io/Weights.h"

#include "swift/Plan/HFConfig.h"
#include "swift/Plan/Json.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/io/AdapterConfig.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace swift::rt {
namespace fs = std::filesystem;
namespace st = safetensors;

namespace {

// Host staging for weights bound to or from a device: elements per chunk.
constexpr int64_t kStagingElements = 4 << 20; // 16 MiB of fp32

std::string shapeText(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

/// The dtype's name in config.json (torch's).
const char *hfDtypeName(st::DType dtype) {
  return dtype == st::DType::F32   ? "float32"
         : dtype == st::DType::F16 ? "float16"
                                   : "bfloat16";
}

/// The input's config.json with its dtype made the export's: transformers
/// loads `dtype="auto"` as config.json says (an fp32 label on bf16 weights
/// doubles the loaded model). Verbatim when it already says so; both of
/// the key's spellings (`torch_dtype`, transformers 5's `dtype`) where
/// present, `torch_dtype` where neither is. A quantization_config is
/// dropped: the exported weights are dense, and transformers would load
/// them as quantized ones.
std::string withDtype(const std::string &text, st::DType dtype) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception &) {
    return text; // read and checked at the run's start; kept as it was
  }
  if (!j.is_object())
    return text;
  const std::string name = hfDtypeName(dtype);
  bool present = false, same = !j.contains("quantization_config");
  j.erase("quantization_config");
  for (const char *key : {"torch_dtype", "dtype"})
    if (j.contains(key)) {
      present = true;
      same = same && j[key] == name;
      j[key] = name;
    }
  if (present && same)
    return text;
  if (!present)
    j["torch_dtype"] = name;
  return j.dump(2) + "\n";
}

/// config.json of a model the plan describes (when there is no input
/// config to preserve).
nlohmann::ordered_json configJson(const ModelConfig &m,
                                  const ExportOptions &options) {
  const st::DType dtype = options.dtype;
  // Qwen2's layout is q/k/v biases without an o bias; Llama's and Qwen3's
  // attention_bias puts them on q, k, v and o.
  const bool qwen2 = !m.qkNorm && m.qkvBias && !m.oBias;
  const char *type = m.qkNorm ? "qwen3" : qwen2 ? "qwen2" : "llama";
  const char *arch = m.qkNorm ? "Qwen3ForCausalLM"
                     : qwen2  ? "Qwen2ForCausalLM"
                              : "LlamaForCausalLM";
  // The plan's model fields are config.json's, but for the three flags
  // the architecture (model_type) implies.
  nlohmann::ordered_json j = {{"architectures", {arch}}, {"model_type", type}};
  j.update(nlohmann::ordered_json::parse(plan::modelToJson(m)));
  for (const char *flag : {"attention_qkv_bias", "attention_o_bias", "qk_norm"})
    j.erase(flag);
  j["hidden_act"] = "silu";
  j["torch_dtype"] = hfDtypeName(dtype);
  if (!qwen2)
    j["attention_bias"] = m.qkvBias || m.oBias;
  int64_t positions = options.maxPositionEmbeddings;
  if (m.ropeScaling.type == plan::RopeType::Llama3)
    positions = std::max(positions,
                         int64_t(double(m.ropeScaling.originalMaxPositionEmbeddings) *
                                 m.ropeScaling.factor));
  j["max_position_embeddings"] = positions;
  return j;
}

} // namespace

at::ScalarType toScalarType(st::DType dtype) {
  return dtype == st::DType::F32   ? at::kFloat
         : dtype == st::DType::F16 ? at::kHalf
                                   : at::kBFloat16;
}

std::string hfName(const ParamDesc &p) {
  return p.name.rfind("lm_head.", 0) == 0 ? p.name : "model." + p.name;
}

HFWeights::HFWeights(const std::string &dir, const ModelConfig &m)
    : weights_(dir) {
  // The directory's config.json, where it has one, must describe the plan's
  // model in what the tensors' shapes do not show (rope_theta, rms_norm_eps,
  // rope scaling, tied embeddings, biases and norms, head layout): the run
  // would train the plan's model and export it with this config.json, a
  // model that computes something else. Read by the HF config reader that
  // swift-plan uses (swift/Plan/HFConfig.h).
  if (const fs::path config = fs::path(dir) / "config.json"; fs::exists(config)) {
    const std::vector<plan::HFDifference> differences =
        plan::hfDifferences(plan::readHFConfigFile(config.string()), m);
    if (!differences.empty()) {
      const plan::HFDifference &d = differences.front();
      const size_t more = differences.size() - 1;
      SWIFT_CHECK(false, config.string(), ": ", d.field, " is ", d.there,
                  ", the plan's ", d.planField, " is ", d.plan,
                  more ? " (and " + std::to_string(more) + " more difference" +
                             (more > 1 ? "s" : "") + ")"
                       : std::string(),
                  "; the run would train the plan's model and export it with "
                  "this config.json: plan the job with model: ", dir,
                  " (swift-plan reads its config.json)");
    }
  }
  std::set<std::string> expected;
  for (int u = 0; u < m.numLayers + 2; ++u)
    for (const ParamDesc &d : unitLayout(m, u).params) {
      const std::string name = hfName(d);
      expected.insert(name);
      auto [t, file] = weights_.find(name);
      SWIFT_CHECK(t, dir, ": tensor \"", name,
                  "\" is missing (the plan's model has it)");
      SWIFT_CHECK(t->shape == d.shape, file->path(), ": tensor \"", name,
                  "\" has shape ", shapeText(t->shape), ", but the model needs ",
                  shapeText(d.shape), " (is this the plan's model?)");
      SWIFT_CHECK(t->dtype == st::DType::F32 || t->dtype == st::DType::F16 ||
                      t->dtype == st::DType::BF16,
                  file->path(), ": tensor \"", name, "\" has dtype ",
                  st::toString(t->dtype),
                  "; weights load from F32, F16 or BF16");
    }
  for (const std::string &name : weights_.names()) {
    if (expected.count(name))
      continue;
    // HF saves a tied model without lm_head.weight, but some checkpoints
    // carry it anyway; transformers ties it to the table on load.
    if (m.tieWordEmbeddings && name == "lm_head.weight")
      continue;
    SWIFT_CHECK(false, dir, ": tensor \"", name,
                "\" is not a parameter of the plan's model (wrong model, or "
                "an architecture swift-run does not implement)");
  }
}

void HFWeights::read(StateKind kind, const UnitLayout &layout, int64_t begin,
                     int64_t count, at::Tensor dst) const {
  SWIFT_ASSERT(kind == StateKind::Master, "HF weights hold no optimizer state");
  readUnitRange(weights_, hfName, layout, begin, count, dst);
}

namespace {

/// Refuses the first value of `values` (elements [first, first + n) of
/// tensor `t` of `file`) that a training state cannot hold: NaN or
/// infinite, or negative in an AdamW second moment (`moment2`). A tight
/// loop over the bits (it vectorizes), then a second one to name the first.
void checkValues(const float *values, int64_t n, int64_t first,
                 const st::TensorInfo &t, const st::File &file, bool moment2) {
  auto bad = [moment2](uint32_t bits) {
    return (bits & 0x7f800000u) == 0x7f800000u || // NaN or infinite
           (moment2 && bits > 0x80000000u);        // below -0
  };
  const auto *bits = reinterpret_cast<const uint32_t *>(values);
  bool any = false;
  for (int64_t i = 0; i < n; ++i)
    any |= bad(bits[i]);
  if (!any)
    return;
  int64_t i = 0;
  while (!bad(bits[i]))
    ++i;
  // The element's index in the tensor's shape, as Python prints it.
  std::vector<int64_t> index(t.shape.size());
  for (int64_t rest = first + i, d = int64_t(t.shape.size()) - 1; d >= 0; --d) {
    index[size_t(d)] = rest % t.shape[size_t(d)];
    rest /= t.shape[size_t(d)];
  }
  std::ostringstream value;
  value << values[i];
  SWIFT_CHECK(false, file.path(), ": tensor \"", plan::briefText(t.name),
              "\": element ", shapeText(index), " (of ", shapeText(t.shape),
              ") is ", value.str(),
              (bits[i] & 0x7f800000u) == 0x7f800000u
                  ? "; weights and optimizer states must be finite (a damaged "
                    "file, or saved from a diverged run?)"
                  : "; an AdamW second moment is never negative (a damaged "
                    "checkpoint?)");
}

/// The name of a checkpoint's AdamW second moments (Checkpoint.cpp's
/// stateName): "NAME:exp_avg_sq".
bool isSecondMoment(const std::string &name) {
  static const std::string suffix = ":exp_avg_sq";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

void readUnitRange(const st::ModelWeights &weights,
                   const std::function<std::string(const ParamDesc &)> &nameOf,
                   const UnitLayout &layout, int64_t begin, int64_t count,
                   at::Tensor dst) {
  SWIFT_ASSERT(dst.numel() == count && dst.scalar_type() == at::kFloat &&
                   dst.is_contiguous(),
               "weights read into a bad destination");
  dst.zero_();
  const bool host = dst.is_cpu();
  at::Tensor staging;
  if (!host)
    staging = at::empty({std::min(count, kStagingElements)}, at::kFloat);
  for (const ParamDesc &d : layout.params) {
    int64_t lo = std::max(begin, d.offset);
    int64_t hi = std::min(begin + count, d.offset + d.numel());
    if (lo >= hi)
      continue;
    const std::string name = nameOf(d);
    auto [t, file] = weights.find(name);
    SWIFT_CHECK(t, weights.dir(), ": tensor \"", name, "\" is missing");
    const bool moment2 = isSecondMoment(name);
    for (int64_t at = lo; at < hi;) {
      const int64_t n = std::min(hi - at, kStagingElements);
      at::Tensor out = dst.narrow(0, at - begin, n);
      float *values = host ? out.data_ptr<float>() : staging.data_ptr<float>();
      file->readF32(*t, at - d.offset, n, values);
      // Each value is checked as it is read: NaN weights would otherwise
      // surface as "the loss is nan" at step 1, naming no tensor.
      checkValues(values, n, at - d.offset, *t, *file, moment2);
      if (!host)
        out.copy_(staging.narrow(0, 0, n));
      at += n;
    }
  }
}

void sinkTensor(const at::Tensor &flat, const st::ByteSink &sink) {
  for (int64_t at = 0; at < flat.numel(); at += kStagingElements) {
    int64_t n = std::min(kStagingElements, flat.numel() - at);
    at::Tensor chunk = flat.narrow(0, at, n).to(at::kCPU).contiguous();
    sink(chunk.data_ptr(), size_t(n * chunk.element_size()));
  }
}

st::DType parseExportDtype(const std::string &name) {
  if (name == "bf16" || name == "bfloat16")
    return st::DType::BF16;
  if (name == "fp16" || name == "float16")
    return st::DType::F16;
  if (name == "fp32" || name == "float32")
    return st::DType::F32;
  SWIFT_CHECK(false, "command line: --export-dtype \"", name,
              "\": expected bf16, fp16 or fp32");
  return st::DType::BF16;
}

namespace {

/// Writes the parameters of `layouts` (one per unit), named by `nameOf`,
/// as safetensors in `dir`: unit u's flat values come from unitValues(u),
/// called once per unit in order, on rank 0 only (the callers make the
/// other ranks take part in the same collectives).
void writeUnits(const std::string &dir, const std::vector<UnitLayout> &layouts,
                const std::function<std::string(const ParamDesc &)> &nameOf,
                const std::function<at::Tensor(int)> &unitValues,
                st::DType dtype, int64_t maxShardBytes,
                const std::string &stem) {
  std::vector<st::TensorSpec> specs;
  std::vector<std::pair<int, const ParamDesc *>> where;
  for (size_t u = 0; u < layouts.size(); ++u)
    for (const ParamDesc &d : layouts[u].params) {
      specs.push_back({nameOf(d), dtype, d.shape});
      where.push_back({int(u), &d});
    }
  const at::ScalarType target = toScalarType(dtype);
  int current = -1;
  at::Tensor unit; // the current unit's values, flat, on the engine's device
  st::write(
      dir, specs,
      [&](size_t i, const st::ByteSink &sink) {
        auto [u, d] = where[i];
        if (u != current) {
          unit = unitValues(u);
          current = u;
        }
        sinkTensor(unit.narrow(0, d->offset, d->numel()).to(target), sink);
      },
      maxShardBytes, {{"format", "pt"}}, stem);
}

} // namespace

void exportHF(ModelState &state, const Plan &plan, const std::string &dir,
              const ExportOptions &options) {
  const ModelConfig &m = plan.model;
  const bool lora = plan.training.method != Method::Full;
  const int numUnits = int(m.numLayers) + 2;
  // LoRA merges into the original weights when given (rank 0 reads them;
  // checked whole against the plan's model first).
  std::unique_ptr<HFWeights> original;
  if (lora && !options.mergeBase.empty() && state.rank() == 0)
    original = std::make_unique<HFWeights>(options.mergeBase, m);
  // Unit u's weights, flat (collective).
  auto unitWeights = [&](int u) {
    if (!lora)
      return state.stateUnit(u);
    const UnitLayout base = unitLayout(m, u);
    // The trained base is collective at ZeRO-3: every rank gathers it, or
    // none does.
    at::Tensor merged;
    if (options.mergeBase.empty())
      merged = state.baseUnit(u).to(at::kFloat, /*copy=*/true);
    at::Tensor adapters = state.stateUnit(u);
    if (state.rank() != 0)
      return adapters;
    if (original) {
      merged = at::empty({base.numel}, adapters.options().dtype(at::kFloat));
      original->read(StateKind::Master, base, 0, base.numel, merged);
    }
    const UnitLayout layout = adapterLayout(m, plan.training.lora, u);
    auto find = [&](const std::string &name) -> const ParamDesc & {
      for (const ParamDesc &d : base.params)
        if (d.name == name)
          return d;
      SWIFT_ASSERT(false, "no base parameter ", name);
      return base.params[0];
    };
    const std::string aTag = ".lora_A.weight";
    for (const ParamDesc &a : layout.params) {
      if (a.name.size() < aTag.size() ||
          a.name.compare(a.name.size() - aTag.size(), aTag.size(), aTag) != 0)
        continue;
      const std::string stem = a.name.substr(0, a.name.size() - aTag.size());
      const ParamDesc *b = nullptr;
      for (const ParamDesc &d : layout.params)
        if (d.name == stem + ".lora_B.weight")
          b = &d;
      SWIFT_ASSERT(b, "no lora_B for ", a.name);
      const ParamDesc &w = find(stem + ".weight");
      at::Tensor A = adapters.narrow(0, a.offset, a.numel()).view(a.shape).to(at::kFloat);
      at::Tensor B = adapters.narrow(0, b->offset, b->numel()).view(b->shape).to(at::kFloat);
      merged.narrow(0, w.offset, w.numel())
          .view(w.shape)
          .add_(at::mm(B, A), plan.training.lora.scale());
    }
    return merged;
  };
  if (state.rank() != 0) {
    // The other ranks take part in each unit's gathers, in the same order.
    for (int u = 0; u < numUnits; ++u)
      (void)unitWeights(u);
    return;
  }
  std::vector<UnitLayout> layouts;
  for (int u = 0; u < numUnits; ++u)
    layouts.push_back(unitLayout(m, u));
  writeUnits(dir, layouts, hfName, unitWeights, options.dtype,
             options.maxShardBytes, "model");
  const fs::path config = fs::path(dir) / "config.json";
  if (!options.configText.empty()) {
    st::writeFileAtomically(config.string(),
                            withDtype(options.configText, options.dtype));
  } else {
    st::writeFileAtomically(config.string(),
                            configJson(m, options).dump(2) + "\n");
  }
}

std::string peftName(const ParamDesc &p) {
  return "base_model.model." + hfName(p);
}

void exportAdapter(ModelState &state, const Plan &plan, const std::string &dir,
                   const ExportOptions &options, const std::string &baseModel) {
  const ModelConfig &m = plan.model;
  const int numUnits = int(m.numLayers) + 2;
  if (state.rank() != 0) {
    for (int u = 0; u < numUnits; ++u)
      (void)state.stateUnit(u);
    return;
  }
  std::vector<UnitLayout> layouts;
  for (int u = 0; u < numUnits; ++u)
    layouts.push_back(adapterLayout(m, plan.training.lora, u));
  // One file, as peft writes it (adapters are small).
  writeUnits(
      dir, layouts, peftName, [&](int u) { return state.stateUnit(u); },
      options.dtype, int64_t(1) << 62, "adapter_model");
  const LoraConfig &l = plan.training.lora;
  nlohmann::ordered_json config = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", baseModel.empty() ? nullptr : nlohmann::ordered_json(baseModel)},
      {"r", l.rank},
      {"lora_alpha", l.alpha},
      {"lora_dropout", l.dropout},
      {"target_modules", l.targets},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"modules_to_save", nullptr},
      {"use_rslora", false},
      {"use_dora", false},
      {"layers_to_transform", nullptr},
      {"rank_pattern", nlohmann::ordered_json::object()},
      {"alpha_pattern", nlohmann::ordered_json::object()}};
  st::writeFileAtomically((fs::path(dir) / "adapter_config.json").string(),
                          config.dump(2) + "\n");
}

PeftAdapter::PeftAdapter(const std::string &dir, const Plan &plan) {
  const fs::path configPath = fs::path(dir) / "adapter_config.json";
  std::error_code ec;
  SWIFT_CHECK(fs::symlink_status(configPath, ec).type() !=
                  fs::file_type::not_found,
              dir, ": not a peft adapter (no adapter_config.json)");
  const LoraConfig &l = plan.training.lora;
  checkAdapterConfig(plan::readJsonFile(configPath.string(),
                                        "a peft adapter config (JSON)",
                                        16 << 20),
                     configPath.string(), l, plan.model.numLayers);
  const fs::path file = fs::path(dir) / "adapter_model.safetensors";
  SWIFT_CHECK(fs::symlink_status(file, ec).type() != fs::file_type::not_found,
              dir, ": no adapter_model.safetensors");
  weights_ = std::make_unique<st::ModelWeights>(dir, "adapter_model");
  std::set<std::string> expected;
  for (int u = 0; u < plan.model.numLayers + 2; ++u)
    for (const ParamDesc &d : adapterLayout(plan.model, l, u).params) {
      expected.insert(peftName(d));
      auto [t, f] = weights_->find(peftName(d));
      SWIFT_CHECK(t, file.string(), ": tensor \"", peftName(d),
                  "\" is missing (the plan adapts ", d.name, ")");
      SWIFT_CHECK(t->shape == d.shape, f->path(), ": tensor \"", peftName(d),
                  "\" has shape ", shapeText(t->shape), ", the plan's adapter ",
                  shapeText(d.shape));
    }
  for (const std::string &name : weights_->names())
    SWIFT_CHECK(expected.count(name), file.string(), ": tensor \"",
                plan::briefText(name),
                "\" is not an adapter the plan trains (its lora.targets: ",
                [&] {
                  std::string t;
                  for (const std::string &x : l.targets)
                    t += (t.empty() ? "" : ", ") + x;
                  return t;
                }(),
                ")");
}

void PeftAdapter::read(StateKind kind, const UnitLayout &layout, int64_t begin,
                       int64_t count, at::Tensor dst) const {
  SWIFT_ASSERT(kind == StateKind::Master, "an adapter holds no optimizer state");
  readUnitRange(*weights_, peftName, layout, begin, count, dst);
}

} // namespace swift::rt
