//===- Enums.h - every enum of jobs, plans and the IR, spelled once -*- C++ -*-===//
//
// Each enum is declared here once, with one table of its spellings. Job
// YAML, plan.json, swift-plan's report and JSON, and the runtime spell a value
// as its table says ("bf16-mixed", "optimizer+params"); the IR's keyword is
// the same spelling with '-' and '+' written '_' (#swift.precision<bf16_mixed>,
// #swift.offload<optimizer_params>), because MLIR keywords cannot hold them;
// a spelling that cannot start a keyword at all ("1f1b") names its keyword
// in its table (one_f_one_b).
// The dialect's attributes (SwiftEnums.td) wrap these types, so ODS lists no
// case of its own.
//
// Plain C++17: the runtime, the job reader and the cost model include it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swift::plan {

/// Numeric precision of training.
enum class Precision : uint8_t {
  Bf16Mixed, // bf16 compute, fp32 master weights and optimizer states
  Bf16,      // parameters, gradients and optimizer states all bf16
  Fp32,
  // The decoder linears' GEMMs in FP8 (e4m3 weights and inputs, e5m2
  // output gradients, per-tensor scales from the current amax); everything
  // else, and what is stored, as in bf16-mixed (Fp8Mixed) or bf16 (Fp8Bf16).
  Fp8Mixed,
  Fp8Bf16,
};

/// Whether the decoder linears run FP8 GEMMs.
constexpr bool fp8Gemms(Precision p) {
  return p == Precision::Fp8Mixed || p == Precision::Fp8Bf16;
}

/// The precision that stores as `p` does with bf16 GEMMs (fp8-mixed ->
/// bf16-mixed, fp8-bf16 -> bf16): what `p` is in everything but its GEMMs.
constexpr Precision storagePrecision(Precision p) {
  return p == Precision::Fp8Mixed  ? Precision::Bf16Mixed
         : p == Precision::Fp8Bf16 ? Precision::Bf16
                                   : p;
}

/// The precision that stores as `p` does with FP8 GEMMs (bf16-mixed ->
/// fp8-mixed, bf16 -> fp8-bf16), if any: storagePrecision's inverse.
constexpr std::optional<Precision> fp8Twin(Precision p) {
  if (p == Precision::Bf16Mixed)
    return Precision::Fp8Mixed;
  if (p == Precision::Bf16)
    return Precision::Fp8Bf16;
  return std::nullopt;
}

enum class Optimizer : uint8_t { AdamW };

/// How the learning rate decays after warmup (training.lr_schedule.decay).
enum class LrDecay : uint8_t { Constant, Linear, Cosine };

/// How rotary-embedding frequencies are rescaled for long context (HF
/// config.json rope_scaling / rope_parameters "rope_type").
enum class RopeType : uint8_t {
  Default, // inv_freq[i] = theta^(-2i/D)
  Linear,  // inv_freq / factor (position interpolation)
  Llama3,  // Llama 3.1+: low frequencies / factor, a smooth band between
};

/// Which weights are trained.
enum class Method : uint8_t {
  Full,
  Lora,  // low-rank adapters over a frozen bf16 base
  QLora, // low-rank adapters over a frozen 4-bit NF4 base
};

/// What a JSONL sample longer than training.sequence_length becomes
/// (training.truncation; swift-run --data, docs/runtime.md "Data").
enum class Truncation : uint8_t {
  Drop,  // left out of training (counted in the start-of-run data line)
  Right, // cut to its first sequence_length tokens
  Left,  // cut to its last sequence_length tokens
  Error, // the run refuses the file, naming the line
};

/// Which tokens of a text sample (the rendered conversation) are trained on
/// (training.loss_on): the assistant's replies only, or every token. Data
/// given as input_ids carries its own labels and ignores it.
enum class LossOn : uint8_t { Assistant, All };

/// The implementation that trains.
enum class Backend : uint8_t {
  SwiftRun,
  HF,        // HF transformers + PyTorch (single process/DDP, FSDP2)
  DeepSpeed,
  // The mesh engines (tensor, pipeline and context parallelism): priced by
  // the cost model (cost/lib/Parallel.cpp), not yet emitted.
  Torchtitan, // pytorch/torchtitan: FSDP2 + DTensor TP/CP + torch.distributed.pipelining
  Megatron,   // NVIDIA Megatron-LM / Megatron-Core
};

/// The order in which a pipeline's stages run the micro-batches' forward
/// and backward passes (strategy.pp_schedule).
enum class PipelineSchedule : uint8_t {
  // One forward, one backward: after the warm-up each stage alternates, so
  // stage s keeps at most pp - s micro-batches' activations (Narayanan et
  // al. 2021, PipeDream-Flush).
  OneFOneB,
  // 1F1B over virtual_stages model chunks per rank (rank r holds chunks
  // r, r + pp, ...): the bubble shrinks by virtual_stages for that many
  // more point-to-point transfers (Narayanan et al. 2021, section 2.2).
  Interleaved,
};

/// How context-parallel ranks, each holding a slice of the sequence, see
/// every key and value their queries attend to.
enum class ContextParallel : uint8_t {
  Ring,      // K/V blocks passed around the ring, overlapping attention
  AllGather, // K/V all-gathered before attention
  AllToAll,  // heads exchanged for sequence (Ulysses)
};

/// What lives in host memory.
enum class Offload : uint8_t { None, Optimizer, OptimizerAndParams };

/// swift-run's bf16-mixed keeps each fp32 master weight on the device as the
/// bf16 compute copy forward reads plus the 16 low bits that complete it
/// (the weight's fp32 bits, rounded to the nearest bf16 with ties away from
/// zero, and the signed remainder): exact fp32 masters for 2 bytes a
/// parameter beyond the compute copy instead of 4, and no separate publish
/// copy. With the optimizer offloaded the host keeps a whole fp32 master.
constexpr bool masterInComputeCopy(Precision p, Offload offload) {
  return storagePrecision(p) == Precision::Bf16Mixed && offload == Offload::None;
}

/// Activation checkpointing of decoder layers.
enum class Checkpointing : uint8_t {
  None,
  // Recompute the cheap, memory-hungry parts (attention internals,
  // activations of element-wise ops); keep matmul outputs.
  Selective,
  // Keep only each layer's input; recompute the layer in backward.
  Full,
};

/// Selective checkpointing of a residual linear (o_proj over the attention
/// core's output, down_proj over the SwiGLU product): whether that input is
/// recomputed in backward rather than kept. Only a bf16 GEMM of the base
/// model drops it (swift-run's recomputedResidualLinear); an FP8 GEMM keeps
/// its input's codes for the weight gradient and a LoRA-adapted linear
/// reads its input for the adapter. The runtime (Model.cpp decoderForward)
/// and the cost model (Memory.cpp selectivelyRecomputedBytes) both ask this.
constexpr bool selectiveDropsResidualInput(bool fp8Gemm, bool loraAdapted) {
  return !fp8Gemm && !loraAdapted;
}

/// swift-run updates a unit as soon as its gradient is final (the last
/// micro-batch's backward has passed every unit that reads it) instead of
/// after the whole backward: when one rank holds the whole gradient
/// (nothing to reduce first), the optimizer runs on the device and no
/// clipping needs the global norm before any update. The unit's gradient
/// buffer is freed there: with one micro-batch per step the backward holds
/// only the gradients whose update is still to run. The runtime (Engine)
/// and the cost model (Memory.cpp memorySwiftRun) both ask this.
constexpr bool updatesInBackward(int zero, int64_t worldSize, Offload offload,
                                 bool clipsGradients) {
  return zero == 0 && worldSize == 1 && offload == Offload::None &&
         !clipsGradients;
}

/// swift-run's gradient reductions (ZeRO 0-3) in flight behind the backward,
/// one per unit: queuing another waits for the oldest beyond this many. At
/// ZeRO-2/3 each holds its unit's full micro-batch gradient until it
/// completes, and with gradient accumulation the last ones stay in flight
/// into the next micro-batch's forward. The runtime (Engine) and the cost
/// model (Memory.cpp memorySwiftRun) both use it.
constexpr int kReductionsInFlight = 4;

/// The part of the model a schedule unit holds.
enum class UnitKind : uint8_t {
  Embedding,
  Decoder,
  Head, // final norm, lm_head (unless tied) and the loss
};

/// How a bucket's gradients are reduced.
enum class Collective : uint8_t { AllReduce, ReduceScatter };

/// Where the optimizer step runs.
enum class OptimizerDevice : uint8_t { Accelerator, Cpu };

/// One value and its spelling.
template <typename E> struct EnumSpelling {
  E value;
  const char *name;
  /// The IR keyword where the spelling cannot be one (it starts with a
  /// digit); null: the spelling with '-' and '+' written '_'.
  const char *irName = nullptr;
};

/// EnumTraits<E>::kWhat names the enum in messages; kSpellings lists every
/// value in declaration order.
template <typename E> struct EnumTraits;

#define SWIFT_PLAN_ENUM(E, what, ...)                                          \
  template <> struct EnumTraits<E> {                                           \
    static constexpr const char *kWhat = what;                                 \
    static constexpr EnumSpelling<E> kSpellings[] = {__VA_ARGS__};             \
  };
SWIFT_PLAN_ENUM(Precision, "precision", {Precision::Bf16Mixed, "bf16-mixed"},
                {Precision::Bf16, "bf16"}, {Precision::Fp32, "fp32"},
                {Precision::Fp8Mixed, "fp8-mixed"},
                {Precision::Fp8Bf16, "fp8-bf16"})
SWIFT_PLAN_ENUM(Optimizer, "optimizer", {Optimizer::AdamW, "adamw"})
SWIFT_PLAN_ENUM(LrDecay, "lr decay", {LrDecay::Constant, "constant"},
                {LrDecay::Linear, "linear"}, {LrDecay::Cosine, "cosine"})
SWIFT_PLAN_ENUM(RopeType, "rope type", {RopeType::Default, "default"},
                {RopeType::Linear, "linear"}, {RopeType::Llama3, "llama3"})
SWIFT_PLAN_ENUM(Method, "method", {Method::Full, "full"},
                {Method::Lora, "lora"}, {Method::QLora, "qlora"})
SWIFT_PLAN_ENUM(Truncation, "truncation", {Truncation::Drop, "drop"},
                {Truncation::Right, "right"}, {Truncation::Left, "left"},
                {Truncation::Error, "error"})
SWIFT_PLAN_ENUM(LossOn, "loss_on", {LossOn::Assistant, "assistant"},
                {LossOn::All, "all"})
SWIFT_PLAN_ENUM(Backend, "backend", {Backend::SwiftRun, "swift-run"},
                {Backend::HF, "hf"}, {Backend::DeepSpeed, "deepspeed"},
                {Backend::Torchtitan, "torchtitan"},
                {Backend::Megatron, "megatron"})
SWIFT_PLAN_ENUM(PipelineSchedule, "pipeline schedule",
                {PipelineSchedule::OneFOneB, "1f1b", "one_f_one_b"},
                {PipelineSchedule::Interleaved, "interleaved"})
SWIFT_PLAN_ENUM(ContextParallel, "context parallelism",
                {ContextParallel::Ring, "ring"},
                {ContextParallel::AllGather, "all-gather"},
                {ContextParallel::AllToAll, "all-to-all"})
SWIFT_PLAN_ENUM(Offload, "offload", {Offload::None, "none"},
                {Offload::Optimizer, "optimizer"},
                {Offload::OptimizerAndParams, "optimizer+params"})
SWIFT_PLAN_ENUM(Checkpointing, "checkpointing", {Checkpointing::None, "none"},
                {Checkpointing::Selective, "selective"},
                {Checkpointing::Full, "full"})
SWIFT_PLAN_ENUM(UnitKind, "unit kind", {UnitKind::Embedding, "embedding"},
                {UnitKind::Decoder, "decoder"}, {UnitKind::Head, "head"})
SWIFT_PLAN_ENUM(Collective, "collective",
                {Collective::AllReduce, "all_reduce"},
                {Collective::ReduceScatter, "reduce_scatter"})
SWIFT_PLAN_ENUM(OptimizerDevice, "optimizer device",
                {OptimizerDevice::Accelerator, "accelerator"},
                {OptimizerDevice::Cpu, "cpu"})
#undef SWIFT_PLAN_ENUM

/// The spelling of `value` ("optimizer+params").
template <typename E> constexpr const char *toString(E value) {
  for (const EnumSpelling<E> &s : EnumTraits<E>::kSpellings)
    if (s.value == value)
      return s.name;
  return "?";
}

/// The value spelled `name`, if any.
template <typename E> std::optional<E> parseEnum(std::string_view name) {
  for (const EnumSpelling<E> &s : EnumTraits<E>::kSpellings)
    if (name == s.name)
      return s.value;
  return std::nullopt;
}

/// Every spelling, in declaration order (for messages and typo hints).
template <typename E> std::vector<std::string> enumSpellings() {
  std::vector<std::string> out;
  for (const EnumSpelling<E> &s : EnumTraits<E>::kSpellings)
    out.push_back(s.name);
  return out;
}

/// "a | b | c": the choices, for error messages.
template <typename E> std::string enumChoices() {
  std::string out;
  for (const EnumSpelling<E> &s : EnumTraits<E>::kSpellings)
    out += (out.empty() ? "" : " | ") + std::string(s.name);
  return out;
}

/// The IR keyword of a spelling: '-' and '+' become '_'.
inline std::string irKeywordOf(std::string_view spelling) {
  std::string out(spelling);
  for (char &c : out)
    if (c == '-' || c == '+')
      c = '_';
  return out;
}
/// The IR keyword of a table entry: its own, else its spelling's.
template <typename E> std::string irKeywordOf(const EnumSpelling<E> &s) {
  return s.irName ? std::string(s.irName) : irKeywordOf(s.name);
}
template <typename E> std::string irKeyword(E value) {
  for (const EnumSpelling<E> &s : EnumTraits<E>::kSpellings)
    if (s.value == value)
      return irKeywordOf(s);
  return "?";
}

/// The value whose IR keyword is `keyword`, if any.
template <typename E> std::optional<E> parseIrKeyword(std::string_view keyword) {
  for (const EnumSpelling<E> &s : EnumTraits<E>::kSpellings)
    if (keyword == irKeywordOf(s))
      return s.value;
  return std::nullopt;
}

/// Number of values (they are 0..count-1).
template <typename E> constexpr std::size_t enumCount() {
  return std::size(EnumTraits<E>::kSpellings);
}

} // namespace swift::plan
