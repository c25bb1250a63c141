//===- Presets.cpp - the preset tables ------------------------------------===//

#include "swift/Job/Presets.h"

#include <algorithm>

namespace swift::job {

// Vendors quote "x GB/s" bidirectional for NVLink and PCIe; the tables hold
// one direction, which is what a ring collective's step moves.
const std::vector<GpuPreset> &gpuPresets() {
  static const std::vector<GpuPreset> table = {
      {"a10", 24, 125.0, 0, 600, 32, 0, "pcie4", "ib-100g",
       "NVIDIA A10 datasheet: 24 GB GDDR6, BF16 125 TF (250 sparse), no FP8 "
       "(Ampere), 600 GB/s, PCIe Gen4 64 GB/s"},
      {"a40", 48, 149.7, 0, 696, 32, 56.25, "pcie4", "ib-100g",
       "NVIDIA A40 datasheet: 48 GB GDDR6, BF16 149.7 TF (299.4 sparse), "
       "no FP8 (Ampere), 696 GB/s, PCIe Gen4 64 GB/s, NVLink bridge "
       "112.5 GB/s (pairs)"},
      {"l40s", 48, 362.05, 733, 864, 32, 0, "pcie4", "ib-100g",
       "NVIDIA L40S datasheet: 48 GB GDDR6, BF16 362.05 TF (733 sparse), "
       "FP8 733 TF (1466 sparse), 864 GB/s, PCIe Gen4 64 GB/s"},
      {"rtx4090", 24, 165.2, 330.3, 1008, 32, 0, "pcie4", "ib-100g",
       "NVIDIA Ada GPU architecture whitepaper (RTX 4090): 24 GB GDDR6X, "
       "BF16 w/ FP32 accumulate 165.2 TF dense, FP8 w/ FP32 accumulate "
       "330.3 TF dense, 1008 GB/s, PCIe Gen4"},
      {"a100-40g", 40, 312.0, 0, 1555, 32, 300, "nvlink3", "ib-200g",
       "NVIDIA A100 datasheet (SXM 40GB): BF16 312 TF (624 sparse), no FP8 "
       "(Ampere), 1555 GB/s, NVLink 600 GB/s, PCIe Gen4 64 GB/s"},
      {"a100-80g", 80, 312.0, 0, 2039, 32, 300, "nvlink3", "ib-200g",
       "NVIDIA A100 datasheet (SXM 80GB): BF16 312 TF (624 sparse), no FP8 "
       "(Ampere), 2039 GB/s, NVLink 600 GB/s, PCIe Gen4 64 GB/s"},
      {"h100", 80, 989.4, 1978.9, 3350, 64, 450, "nvlink4", "ib-400g",
       "NVIDIA H100 datasheet (SXM): BF16 1979 TF sparse = 989.4 dense, "
       "FP8 3958 TF sparse = 1978.9 dense, "
       "80 GB HBM3 3.35 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s"},
      {"h100-96g-500w", 96, 989.4, 1978.9, 3350, 64, 450, "nvlink4", "ib-400g",
       "torchtitan's benchmark H100s (benchmarks/llama3_h100_202412_"
       "torchtitan.md: H100 SXM, 96 GB HBM2e, 500 W power limit, Grand "
       "Teton, 400 Gb/s RDMA per GPU); peaks are the H100 SXM datasheet's "
       "(BF16 989.4, FP8 1978.9 dense): the power limit is not modelled; "
       "HBM bandwidth unpublished, the SXM part's 3.35 TB/s"},
      {"h200", 141, 989.4, 1978.9, 4800, 64, 450, "nvlink4", "ib-400g",
       "NVIDIA H200 datasheet (SXM): BF16 1979 TF sparse = 989.4 dense, "
       "FP8 3958 TF sparse = 1978.9 dense, "
       "141 GB HBM3e 4.8 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s"},
  };
  return table;
}

// Latencies are NCCL's per-step overhead as nccl-tests reports for small
// messages (a few microseconds on NVLink, more across PCIe switches and
// nodes); the cost model calibrates them from measurements when it has them.
const std::vector<LinkPreset> &linkPresets() {
  static const std::vector<LinkPreset> table = {
      {"pcie4", 32, 10, "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s"},
      {"pcie5", 64, 10, "PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b = 63 GB/s"},
      {"nvlink3", 300, 5, "NVLink 3 (A100): 12 links x 25 GB/s per direction"},
      {"nvlink4", 450, 5, "NVLink 4 (H100/H200): 18 links x 25 GB/s per direction"},
      {"ib-100g", 12.5, 15, "InfiniBand EDR 100 Gb/s, one NIC per GPU"},
      {"ib-200g", 25, 15, "InfiniBand HDR 200 Gb/s, one NIC per GPU"},
      {"ib-400g", 50, 15, "InfiniBand NDR 400 Gb/s, one NIC per GPU"},
  };
  return table;
}

// Meta's config.json rope_scaling: Llama 3.1 (factor 8) and 3.2 (factor 32).
constexpr plan::RopeScaling kLlama31Rope{plan::RopeType::Llama3, 8.0, 1.0, 4.0,
                                         8192};
constexpr plan::RopeScaling kLlama32Rope{plan::RopeType::Llama3, 32.0, 1.0, 4.0,
                                         8192};

const std::vector<ModelPreset> &modelPresets() {
  // Fields as in each model's config.json on the Hugging Face Hub.
  static const std::vector<ModelPreset> table = {
      {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 0, 151936, true, 1e-6,
       1e6, "Qwen/Qwen2.5-0.5B config.json"},
      {"qwen2.5-1.5b", "qwen2", 1536, 8960, 28, 12, 2, 0, 151936, true, 1e-6,
       1e6, "Qwen/Qwen2.5-1.5B config.json"},
      {"qwen2.5-3b", "qwen2", 2048, 11008, 36, 16, 2, 0, 151936, true, 1e-6,
       1e6, "Qwen/Qwen2.5-3B config.json"},
      {"qwen2.5-7b", "qwen2", 3584, 18944, 28, 28, 4, 0, 152064, false, 1e-6,
       1e6, "Qwen/Qwen2.5-7B config.json"},
      {"qwen2.5-14b", "qwen2", 5120, 13824, 48, 40, 8, 0, 152064, false, 1e-5,
       1e6, "Qwen/Qwen2.5-14B config.json"},
      {"qwen2.5-32b", "qwen2", 5120, 27648, 64, 40, 8, 0, 152064, false, 1e-5,
       1e6, "Qwen/Qwen2.5-32B config.json"},
      {"qwen2.5-72b", "qwen2", 8192, 29568, 80, 64, 8, 0, 152064, false, 1e-5,
       1e6, "Qwen/Qwen2.5-72B config.json"},
      {"llama3.2-1b", "llama", 2048, 8192, 16, 32, 8, 64, 128256, true, 1e-5,
       5e5, "meta-llama/Llama-3.2-1B config.json", kLlama32Rope},
      {"llama3.2-3b", "llama", 3072, 8192, 28, 24, 8, 128, 128256, true, 1e-5,
       5e5, "meta-llama/Llama-3.2-3B config.json", kLlama32Rope},
      {"llama3.1-8b", "llama", 4096, 14336, 32, 32, 8, 0, 128256, false, 1e-5,
       5e5, "meta-llama/Llama-3.1-8B config.json", kLlama31Rope},
      {"llama3.1-70b", "llama", 8192, 28672, 80, 64, 8, 0, 128256, false, 1e-5,
       5e5, "meta-llama/Llama-3.1-70B config.json", kLlama31Rope},
      {"llama3.1-405b", "llama", 16384, 53248, 126, 128, 8, 0, 128256, false,
       1e-5, 5e5, "meta-llama/Llama-3.1-405B config.json", kLlama31Rope},
      {"mistral-7b", "mistral", 4096, 14336, 32, 32, 8, 0, 32000, false, 1e-5,
       1e4, "mistralai/Mistral-7B-v0.1 config.json"},
      {"qwen3-8b", "qwen3", 4096, 12288, 36, 32, 8, 128, 151936, false, 1e-6,
       1e6, "Qwen/Qwen3-8B config.json"},
  };
  return table;
}

template <typename T>
static const T *findByName(const std::vector<T> &table,
                           const std::string &name) {
  auto it = std::find_if(table.begin(), table.end(),
                         [&](const T &p) { return name == p.name; });
  return it == table.end() ? nullptr : &*it;
}

const GpuPreset *findGpuPreset(const std::string &name) {
  return findByName(gpuPresets(), name);
}
const LinkPreset *findLinkPreset(const std::string &name) {
  return findByName(linkPresets(), name);
}
const ModelPreset *findModelPreset(const std::string &name) {
  return findByName(modelPresets(), name);
}

std::string hubId(const ModelPreset &preset) {
  std::string source = preset.source;
  return source.substr(0, source.find(' '));
}

} // namespace swift::job
