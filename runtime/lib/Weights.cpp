//===- Weights.cpp - HF model directories in and out ----------------------===//

#include "swift/Runtime/Weights.h"

#include "swift/Runtime/Check.h"
#include "swift/Runtime/Engine.h"

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

/// config.json of a model the plan describes (when there is no input
/// config to preserve).
nlohmann::ordered_json configJson(const ModelConfig &m,
                                  const ExportOptions &options) {
  const st::DType dtype = options.dtype;
  const char *type = m.qkNorm ? "qwen3" : m.qkvBias ? "qwen2" : "llama";
  const char *arch = m.qkNorm    ? "Qwen3ForCausalLM"
                     : m.qkvBias ? "Qwen2ForCausalLM"
                                 : "LlamaForCausalLM";
  // The plan's model fields are config.json's, but for the three flags
  // the architecture (model_type) implies.
  nlohmann::ordered_json j = {{"architectures", {arch}}, {"model_type", type}};
  j.update(nlohmann::ordered_json::parse(plan::modelToJson(m)));
  for (const char *flag : {"attention_qkv_bias", "attention_o_bias", "qk_norm"})
    j.erase(flag);
  j["hidden_act"] = "silu";
  j["torch_dtype"] = dtype == st::DType::F32   ? "float32"
                     : dtype == st::DType::F16 ? "float16"
                                               : "bfloat16";
  if (!m.qkvBias && !m.qkNorm)
    j["attention_bias"] = m.oBias;
  int64_t positions = options.maxPositionEmbeddings;
  if (m.ropeScaling.type == plan::RopeType::Llama3)
    positions = std::max(positions,
                         int64_t(double(m.ropeScaling.originalMaxPositionEmbeddings) *
                                 m.ropeScaling.factor));
  j["max_position_embeddings"] = positions;
  return j;
}

} // namespace

std::string hfName(const ParamDesc &p) {
  return p.name.rfind("lm_head.", 0) == 0 ? p.name : "model." + p.name;
}

HFWeights::HFWeights(const std::string &dir, const ModelConfig &m)
    : weights_(dir) {
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
    auto [t, file] = weights.find(nameOf(d));
    SWIFT_CHECK(t, weights.dir(), ": tensor \"", nameOf(d), "\" is missing");
    for (int64_t at = lo; at < hi;) {
      int64_t n = host ? hi - at : std::min(hi - at, kStagingElements);
      at::Tensor out = dst.narrow(0, at - begin, n);
      if (host) {
        file->readF32(*t, at - d.offset, n, out.data_ptr<float>());
      } else {
        file->readF32(*t, at - d.offset, n, staging.data_ptr<float>());
        out.copy_(staging.narrow(0, 0, n));
      }
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

void exportHF(Engine &engine, const ModelConfig &m, const std::string &dir,
              const ExportOptions &options) {
  const int numUnits = int(m.numLayers) + 2;
  if (engine.rank() != 0) {
    // The other ranks take part in each unit's gather, in the same order.
    for (int u = 0; u < numUnits; ++u)
      (void)engine.stateUnit(u);
    return;
  }
  std::vector<st::TensorSpec> specs;
  std::vector<std::pair<int, const ParamDesc *>> where;
  std::vector<UnitLayout> layouts;
  for (int u = 0; u < numUnits; ++u)
    layouts.push_back(unitLayout(m, u));
  for (int u = 0; u < numUnits; ++u)
    for (const ParamDesc &d : layouts[size_t(u)].params) {
      specs.push_back({hfName(d), options.dtype, d.shape});
      where.push_back({u, &d});
    }
  const at::ScalarType target = options.dtype == st::DType::F32 ? at::kFloat
                                : options.dtype == st::DType::F16
                                    ? at::kHalf
                                    : at::kBFloat16;
  int current = -1;
  at::Tensor unit; // the current unit's values, flat, on the engine's device
  st::write(
      dir, specs,
      [&](size_t i, const st::ByteSink &sink) {
        auto [u, d] = where[i];
        if (u != current) {
          unit = engine.stateUnit(u);
          current = u;
        }
        sinkTensor(unit.narrow(0, d->offset, d->numel()).to(target), sink);
      },
      options.maxShardBytes, {{"format", "pt"}});
  const fs::path config = fs::path(dir) / "config.json";
  if (!options.configText.empty()) {
    st::writeFileAtomically(config.string(), options.configText);
  } else {
    st::writeFileAtomically(config.string(),
                            configJson(m, options).dump(2) + "\n");
  }
}

} // namespace swift::rt
