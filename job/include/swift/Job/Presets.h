//===- Presets.h - GPU, interconnect and model presets ----------*- C++ -*-===//
//
// The one table of each kind of preset. Job files name presets; everything
// else (the importer, reports, tests) reads the numbers from here.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_JOB_PRESETS_H
#define SWIFT_JOB_PRESETS_H

#include "swift/Plan/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace swift::job {

/// One GPU model. Bandwidths in GB/s (1e9 B/s) per direction.
struct GpuPreset {
  const char *name;
  double memoryGiB;      // device memory, as sold (HBM/GDDR capacity)
  double bf16Tflops;     // dense bf16 tensor-core peak (no sparsity)
  double fp8Tflops;      // dense FP8 tensor-core peak, fp32 accumulation,
                         // no sparsity (0: no FP8 tensor cores)
  double hbmGBps;        // device memory bandwidth
  double hostLinkGBps;   // PCIe to the host, one direction
  double nvlinkGBps;     // NVLink per GPU, one direction (0: none)
  const char *intraNode; // default link between GPUs of one node
  const char *interNode; // default link between nodes
  const char *source;
};

/// One interconnect. Bandwidth per GPU, one direction; latency of one
/// collective step.
struct LinkPreset {
  const char *name;
  double bandwidthGBps;
  double latencyUs;
  const char *source;
};

/// A decoder-only model in HF config.json terms.
struct ModelPreset {
  const char *name;
  const char *modelType; // llama | qwen2 | mistral | qwen3
  int64_t hiddenSize;
  int64_t intermediateSize;
  int64_t numHiddenLayers;
  int64_t numAttentionHeads;
  int64_t numKeyValueHeads;
  int64_t headDim; // 0: hidden_size / num_attention_heads
  int64_t vocabSize;
  bool tieWordEmbeddings;
  double rmsNormEps;
  double ropeTheta;
  const char *source;
  plan::RopeScaling ropeScaling = {}; // config.json rope_scaling
};

/// The HF Hub id of a model preset: its `source` up to the first space
/// ("meta-llama/Llama-3.1-8B config.json" -> "meta-llama/Llama-3.1-8B").
std::string hubId(const ModelPreset &preset);

const std::vector<GpuPreset> &gpuPresets();
const std::vector<LinkPreset> &linkPresets();
const std::vector<ModelPreset> &modelPresets();

const GpuPreset *findGpuPreset(const std::string &name);
const LinkPreset *findLinkPreset(const std::string &name);
const ModelPreset *findModelPreset(const std::string &name);

} // namespace swift::job

#endif // SWIFT_JOB_PRESETS_H
