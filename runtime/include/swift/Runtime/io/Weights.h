//===- Weights.h - HF model directories in and out ------------*- C++ -*-===//
//
// Pretrained weights in: an HF model directory's safetensors, matched by
// name to the model's layout (Model.h) and checked completely before any
// step (every tensor present with its shape and a float dtype, none extra),
// then read by each rank for exactly the range of each unit it keeps.
// Trained weights out: the same directory layout (config.json,
// model.safetensors or 5 GB shards + index), one unit at a time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/io/ModelState.h"
#include "swift/Runtime/io/SafeTensors.h"
#include "swift/Runtime/model/Model.h"

#include <ATen/ATen.h>

#include <functional>
#include <string>

namespace swift::rt {

/// The HF checkpoint name of a parameter of the layout:
/// "layers.0.mlp.up_proj.weight" -> "model.layers.0.mlp.up_proj.weight";
/// "lm_head.weight" stays.
std::string hfName(const ParamDesc &p);

/// Elements [begin, begin + count) of `layout`'s flat buffer, each
/// parameter read from the tensor `nameOf(param)` of `weights`, as fp32 into
/// `dst` (any device); elements past layout.numel (shard padding) are zero.
/// Reads only those bytes of the files, in bounded chunks. Each value is
/// checked as it is read: NaN, infinite, or negative in a checkpoint's
/// AdamW second moment ("NAME:exp_avg_sq") is a UserError naming the file,
/// the tensor and the element.
void readUnitRange(const safetensors::ModelWeights &weights,
                   const std::function<std::string(const ParamDesc &)> &nameOf,
                   const UnitLayout &layout, int64_t begin, int64_t count,
                   at::Tensor dst);

/// Sends a flat tensor's bytes (any device, as stored) to `sink` through
/// host chunks of at most 16 MiB of fp32.
void sinkTensor(const at::Tensor &flat, const safetensors::ByteSink &sink);

/// An HF model directory's weights for one model: the masters of a fresh
/// run.
class HFWeights : public StateSource {
public:
  /// Opens `dir` and checks that its config.json, where it has one, says
  /// the model's values (plan::hfDifferences(): rope_theta, rms_norm_eps,
  /// rope scaling, tied embeddings, biases, norms, sizes) and that it holds
  /// exactly the model's parameters (a tied model's file may also hold
  /// lm_head.weight, which is ignored as HF does); throws UserError naming
  /// the file and the field or tensor otherwise.
  HFWeights(const std::string &dir, const ModelConfig &m);

  const std::string &dir() const { return weights_.dir(); }

  void read(StateKind kind, const UnitLayout &layout, int64_t begin,
            int64_t count, at::Tensor dst) const override;

private:
  safetensors::ModelWeights weights_;
};

struct ExportOptions {
  safetensors::DType dtype = safetensors::DType::BF16;
  int64_t maxShardBytes = int64_t(5) << 30; // HF's max_shard_size "5GB"
  /// The text of config.json to write verbatim (the input model's); empty:
  /// written from the plan's model.
  std::string configText;
  /// max_position_embeddings of a written config.json (HF refuses a llama3
  /// rope_scaling whose original context is not below it).
  int64_t maxPositionEmbeddings = 4096;
  /// LoRA merges: the HF model directory whose weights the adapters are
  /// merged into (swift-run --merge-base: the original weights, as stored).
  /// Empty: the base the run trained on, as it held it: in the compute
  /// dtype (bf16-mixed rounds an fp32 base to bf16), and for QLoRA the
  /// NF4-dequantized base.
  std::string mergeBase;
};

/// Writes `state`'s current weights (an Engine's: the optimizer's fp32
/// masters, or the bf16 parameters of pure bf16) as an HF model directory; for LoRA the
/// base (options.mergeBase) with the adapters merged in (W + alpha/r B A,
/// in fp32 then rounded), as peft's merge_and_unload. The config.json
/// written has no quantization_config: the weights are dense. Collective:
/// every rank calls it; rank 0 writes.
void exportHF(ModelState &state, const Plan &plan, const std::string &dir,
              const ExportOptions &options);

/// peft's name of an adapter parameter: "base_model.model." + hfName.
std::string peftName(const ParamDesc &p);

/// Writes a LoRA run's adapters as a peft adapter directory
/// (adapter_config.json + adapter_model.safetensors) that
/// PeftModel.from_pretrained(base, dir) loads; `baseModel` is recorded as
/// base_model_name_or_path. Collective; rank 0 writes.
void exportAdapter(ModelState &state, const Plan &plan, const std::string &dir,
                   const ExportOptions &options, const std::string &baseModel);

/// A peft LoRA adapter directory as the adapters' initial values: its
/// adapter_config.json must describe the plan's lora (checkAdapterConfig:
/// every field that changes the math) and its tensors the adapter layout.
class PeftAdapter : public StateSource {
public:
  PeftAdapter(const std::string &dir, const Plan &plan);
  void read(StateKind kind, const UnitLayout &layout, int64_t begin,
            int64_t count, at::Tensor dst) const override;

private:
  std::unique_ptr<safetensors::ModelWeights> weights_;
};

/// Parses --export-dtype ("bf16", "fp16", "fp32").
safetensors::DType parseExportDtype(const std::string &name);

} // namespace swift::rt
