//===- SwiftDialect.cpp - dialect registration and attributes -------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Plan/Plan.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

using namespace mlir;
using namespace mlir::swift;

#include "swift/Dialect/SwiftOpsDialect.cpp.inc"
#include "swift/Dialect/SwiftEnums.cpp.inc"
#include "swift/Dialect/SwiftInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "swift/Dialect/SwiftAttrs.cpp.inc"

void SwiftDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "swift/Dialect/SwiftOps.cpp.inc"
      >();
  registerAttributes();
}

void SwiftDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "swift/Dialect/SwiftAttrs.cpp.inc"
      >();
}

std::string mlir::swift::formatReal(const APFloat &value) {
  // Shortest form that reads back to the same double, made a valid MLIR
  // float literal (which needs a '.').
  char buffer[64];
  double x = value.convertToDouble();
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), x);
  std::string text(buffer, ec == std::errc() ? end : buffer);
  if (text.find_first_of(".ni") == std::string::npos) {
    size_t exponent = text.find('e');
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Attribute verifiers
//===----------------------------------------------------------------------===//

LogicalResult GpuAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              StringRef name, int64_t memoryBytes,
                              APFloat bf16Tflops, APFloat fp8Tflops,
                              APFloat hbmGbps, APFloat hostLinkGbps,
                              APFloat nvlinkGbps) {
  if (memoryBytes <= 0)
    return emitError() << "gpu '" << name << "': memory_bytes must be positive";
  auto positive = [](const APFloat &x) { return x.convertToDouble() > 0; };
  if (!positive(bf16Tflops) || !positive(hbmGbps) || !positive(hostLinkGbps))
    return emitError() << "gpu '" << name
                       << "': bf16_tflops, hbm_gbps and host_link_gbps must "
                          "be positive";
  // Not `< 0`: NaN is refused too.
  if (!(fp8Tflops.convertToDouble() >= 0))
    return emitError() << "gpu '" << name
                       << "': fp8_tflops must be >= 0 (0: no FP8 tensor cores)";
  if (nvlinkGbps.convertToDouble() < 0)
    return emitError() << "gpu '" << name
                       << "': nvlink_gbps must be >= 0 (0: no NVLink)";
  return success();
}

LogicalResult LinkAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               StringRef name, APFloat bandwidthGbps,
                               APFloat latencyUs) {
  if (!(bandwidthGbps.convertToDouble() > 0))
    return emitError() << "link '" << name
                       << "': bandwidth_gbps must be positive";
  if (latencyUs.convertToDouble() < 0)
    return emitError() << "link '" << name << "': latency_us must be >= 0";
  return success();
}

LogicalResult OptimizerSettingsAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, APFloat lr, APFloat beta1,
    APFloat beta2, APFloat eps, APFloat weightDecay, int64_t warmupSteps,
    LrDecay decay, APFloat minLrRatio, int64_t seed,
    std::optional<APFloat> maxGradNorm) {
  auto in = [](const APFloat &x, double lo, bool loOpen, double hi,
               bool hiOpen) {
    double v = x.convertToDouble();
    return (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi);
  };
  if (!in(lr, 0, true, 10, false))
    return emitError() << "adamw: lr must be in (0, 10]";
  if (!in(beta1, 0, false, 1, true) || !in(beta2, 0, false, 1, true))
    return emitError() << "adamw: beta1 and beta2 must be in [0, 1)";
  if (!in(eps, 0, true, 1, false))
    return emitError() << "adamw: eps must be in (0, 1]";
  if (!in(weightDecay, 0, false, 10, false))
    return emitError() << "adamw: weight_decay must be in [0, 10]";
  if (warmupSteps < 0)
    return emitError() << "adamw: warmup_steps must be >= 0";
  if (!in(minLrRatio, 0, false, 1, false))
    return emitError() << "adamw: min_lr_ratio must be in [0, 1]";
  if (decay == LrDecay::Constant && minLrRatio.convertToDouble() != 0)
    return emitError() << "adamw: min_lr_ratio needs decay linear or cosine";
  if (maxGradNorm && !(maxGradNorm->convertToDouble() >= 0))
    return emitError() << "adamw: max_grad_norm must be >= 0 (0: no clipping)";
  if (seed < 0)
    return emitError() << "adamw: seed must be >= 0";
  return success();
}

LogicalResult RopeScalingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, RopeType type,
    APFloat factor, APFloat lowFreqFactor, APFloat highFreqFactor,
    int64_t originalMaxPositionEmbeddings) {
  if (type == RopeType::Default)
    return emitError() << "rope_scaling: type default is written as no "
                          "scaling attribute";
  if (!(factor.convertToDouble() >= 1))
    return emitError() << "rope_scaling: factor must be >= 1";
  if (!(lowFreqFactor.convertToDouble() > 0) ||
      !(highFreqFactor.convertToDouble() > lowFreqFactor.convertToDouble()))
    return emitError() << "rope_scaling: need 0 < low_freq_factor < "
                          "high_freq_factor";
  if (originalMaxPositionEmbeddings <= 0)
    return emitError()
           << "rope_scaling: original_max_position_embeddings must be positive";
  return success();
}

LogicalResult LoraAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t rank, APFloat alpha, APFloat dropout,
                               ArrayAttr targets) {
  if (rank <= 0)
    return emitError() << "lora rank must be positive, got " << rank;
  if (!(alpha.convertToDouble() > 0))
    return emitError() << "lora alpha must be positive";
  double p = dropout.convertToDouble();
  if (!(p >= 0 && p < 1))
    return emitError() << "lora dropout must be in [0, 1), got " << p;
  if (targets.empty())
    return emitError() << "lora needs at least one target";
  const std::vector<std::string> &known = ::swift::plan::loraTargetNames();
  for (Attribute a : targets) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return emitError() << "lora targets must be strings";
    if (name.getValue() != "all-linear" &&
        llvm::find(known, name.getValue().str()) == known.end())
      return emitError() << "lora target '" << name.getValue()
                         << "' is not all-linear or a decoder linear (q_proj, "
                            "k_proj, v_proj, o_proj, gate_proj, up_proj, "
                            "down_proj)";
  }
  return success();
}

bool LoraAttr::targets(StringRef weightName) const {
  // "model.layers.0.self_attn.q_proj.weight" -> "q_proj".
  StringRef module = weightName;
  module.consume_back(".weight");
  if (StringRef last = module.rsplit('.').second; !last.empty())
    module = last;
  for (auto target : getTargets().getAsRange<StringAttr>()) {
    if (target.getValue() == "all-linear" && module != "lm_head")
      return true;
    if (target.getValue() == module)
      return true;
  }
  return false;
}

namespace {
/// The rules a pipeline's keys follow, wherever they are written (a
/// strategy's may be open; a mesh's are all set): a schedule needs pp > 1,
/// more than one chunk per rank needs the interleaved schedule and that
/// needs at least two. `prefix` starts each message ("mesh: ").
LogicalResult verifyPipeline(function_ref<InFlightDiagnostic()> emitError,
                             StringRef prefix, std::optional<int64_t> pp,
                             std::optional<PipelineSchedule> schedule,
                             std::optional<int64_t> virtualStages) {
  if (pp == 1 && schedule)
    return emitError() << prefix << "pp_schedule " << irKeyword(*schedule)
                       << " needs a pipeline (pp > 1), but pp is 1";
  if (pp == 1 && virtualStages > 1)
    return emitError() << prefix << "virtual_stages " << *virtualStages
                       << " needs a pipeline (pp > 1), but pp is 1";
  if (schedule == PipelineSchedule::OneFOneB && virtualStages > 1)
    return emitError() << prefix << "virtual_stages " << *virtualStages
                       << " needs pp_schedule interleaved, not one_f_one_b";
  if (schedule == PipelineSchedule::Interleaved && virtualStages == 1)
    return emitError() << prefix
                       << "pp_schedule interleaved needs virtual_stages >= "
                          "2 (model chunks per pipeline rank), not 1";
  return success();
}
} // namespace

LogicalResult
StrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     std::optional<ZeroStage> zero,
                     std::optional<Offload> offload,
                     std::optional<Checkpointing> checkpointing,
                     std::optional<int64_t> checkpointLayers,
                     std::optional<int64_t> bucketBytes,
                     std::optional<int64_t> prefetchDepth,
                     std::optional<int64_t> offloadActivations,
                     std::optional<int64_t> mlpTileTokens,
                     std::optional<int64_t> tp, std::optional<int64_t> pp,
                     std::optional<int64_t> cp, std::optional<int64_t> dpShard,
                     std::optional<PipelineSchedule> ppSchedule,
                     std::optional<int64_t> virtualStages) {
  for (auto [name, degree] :
       {std::pair<StringRef, std::optional<int64_t>>{"tp", tp},
        {"pp", pp},
        {"cp", cp},
        {"dp_shard", dpShard},
        {"virtual_stages", virtualStages}})
    if (degree && *degree < 1)
      return emitError() << name << " must be >= 1, not " << *degree;
  if (failed(verifyPipeline(emitError, "", pp, ppSchedule,
                            virtualStages)))
    return failure();
  if (bucketBytes && *bucketBytes <= 0)
    return emitError() << "bucket_bytes must be positive";
  if (prefetchDepth && *prefetchDepth < 1)
    return emitError() << "prefetch_depth must be >= 1";
  if (mlpTileTokens && *mlpTileTokens < 0)
    return emitError() << "mlp_tile_tokens must be >= 0";
  if (offloadActivations && *offloadActivations < -1)
    return emitError() << "offload_activations must be >= 0, or -1 for all "
                          "layers";
  if (offloadActivations && *offloadActivations != 0 && checkpointing &&
      *checkpointing != Checkpointing::Full)
    return emitError() << "offload_activations needs checkpointing full";
  if (!checkpointLayers)
    return success();
  if (*checkpointLayers < 0)
    return emitError() << "checkpoint_layers must be >= 0";
  if (checkpointing == Checkpointing::None)
    return emitError() << "checkpoint_layers needs checkpointing selective "
                          "or full, not none";
  return success();
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t dpReplicate, int64_t dpShard, int64_t cp,
                               int64_t pp, int64_t tp,
                               PipelineSchedule ppSchedule,
                               int64_t virtualStages, bool sequenceParallel,
                               ContextParallel cpKind,
                               DenseI64ArrayAttr stageLayers) {
  for (auto [name, degree] : {std::pair<StringRef, int64_t>{"dp_replicate", dpReplicate},
                              {"dp_shard", dpShard},
                              {"cp", cp},
                              {"pp", pp},
                              {"tp", tp},
                              {"virtual_stages", virtualStages}})
    if (degree < 1)
      return emitError() << "mesh: " << name << " must be >= 1, not " << degree;
  // The schedule is the default one_f_one_b without a pipeline: only an
  // interleaved one is a statement about it.
  if (failed(verifyPipeline(
          emitError, "mesh: ", pp,
          ppSchedule == PipelineSchedule::Interleaved || pp > 1
              ? std::optional<PipelineSchedule>(ppSchedule)
              : std::nullopt,
          virtualStages)))
    return failure();
  if (sequenceParallel && tp == 1)
    return emitError() << "mesh: sequence_parallel needs tp > 1";
  if (cpKind != ContextParallel::Ring && cp == 1)
    return emitError() << "mesh: cp_kind " << irKeyword(cpKind)
                       << " needs cp > 1";
  if (!stageLayers)
    return success();
  // pp x virtual_stages chunks; both are at least 1 here and a real one
  // far below 2^31, so a count that large is no match anyway.
  if (pp > (int64_t(1) << 31) || virtualStages > (int64_t(1) << 31) ||
      int64_t(stageLayers.size()) != pp * virtualStages)
    return emitError() << "mesh: stage_layers has " << stageLayers.size()
                       << " entries, not pp x virtual_stages = " << pp
                       << " x " << virtualStages;
  for (int64_t layers : stageLayers.asArrayRef())
    if (layers < 0)
      return emitError() << "mesh: stage_layers must be >= 0, not " << layers;
  return success();
}

int64_t MeshAttr::getSize() const {
  // Saturates: a hand-written mesh of absurd degrees is larger than any
  // cluster, not a wrapped-around match.
  uint64_t size = 1;
  for (int64_t degree :
       {getDpReplicate(), getDpShard(), getCp(), getPp(), getTp()})
    size = llvm::SaturatingMultiply(size, uint64_t(degree));
  return int64_t(std::min<uint64_t>(size, INT64_MAX));
}

namespace {
/// Reports the first of `values` that is negative (a byte count) or not a
/// finite number >= 0 (seconds, rates).
LogicalResult verifyCounts(function_ref<InFlightDiagnostic()> emitError,
                           StringRef attr,
                           ArrayRef<std::pair<StringRef, int64_t>> counts,
                           ArrayRef<std::pair<StringRef, APFloat>> reals) {
  for (auto [name, value] : counts)
    if (value < 0)
      return emitError() << attr << ": " << name << " must be >= 0, not "
                         << value;
  for (auto [name, value] : reals) {
    double x = value.convertToDouble();
    if (!std::isfinite(x) || x < 0)
      return emitError() << attr << ": " << name
                         << " must be a finite number >= 0, not "
                         << formatReal(value);
  }
  return success();
}
} // namespace

LogicalResult
CandidateAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t zero, Offload offload,
                      Checkpointing checkpointing, int64_t checkpointLayers,
                      int64_t microBatchSize, int64_t gradientAccumulation,
                      bool fits, int64_t peakBytes, APFloat stepSeconds,
                      APFloat tokensPerSecond, StringRef verdict,
                      DictionaryAttr breakdown, int64_t offloadActivations,
                      int64_t mlpTileTokens, MeshAttr mesh) {
  if (offloadActivations < -1 || mlpTileTokens < 0)
    return emitError() << "candidate: offload_activations must be >= -1 and "
                          "mlp_tile_tokens >= 0";
  if (offloadActivations != 0 && checkpointing != Checkpointing::Full)
    return emitError() << "candidate: offload_activations needs "
                          "checkpointing full";
  if (breakdown)
    for (NamedAttribute part : breakdown) {
      auto bytes = dyn_cast<IntegerAttr>(part.getValue());
      if (!bytes || bytes.getInt() < 0)
        return emitError() << "candidate: breakdown." << part.getName().getValue()
                           << " must be a byte count >= 0";
    }
  if (zero < 0 || zero > 3)
    return emitError() << "candidate: zero must be 0..3, not " << zero;
  if (checkpointLayers < -1)
    return emitError() << "candidate: checkpoint_layers must be >= 0, or -1 "
                          "for all layers";
  if (microBatchSize < 1 || gradientAccumulation < 1)
    return emitError() << "candidate: micro_batch_size and "
                          "gradient_accumulation must be >= 1";
  return verifyCounts(emitError, "candidate", {{"peak_bytes", peakBytes}},
                      {{"step_seconds", stepSeconds},
                       {"tokens_per_second", tokensPerSecond}});
}

LogicalResult
DecisionAttr::verify(function_ref<InFlightDiagnostic()> emitError, bool fits,
                     int64_t usableBytes, APFloat memoryMargin,
                     int64_t evaluated, int64_t considered,
                     CandidateAttr chosen, CandidateAttr closest,
                     std::optional<int64_t> shortfallBytes,
                     ArrayAttr alternatives) {
  if (fits && !chosen)
    return emitError() << "decision: fits needs the chosen strategy";
  if (!fits && chosen)
    return emitError() << "decision: a chosen strategy but fits = false";
  if (closest && !shortfallBytes)
    return emitError() << "decision: closest needs shortfall_bytes";
  double margin = memoryMargin.convertToDouble();
  if (!(margin >= 0 && margin < 1))
    return emitError() << "decision: memory_margin must be in [0, 1)";
  for (Attribute a : alternatives)
    if (!isa<CandidateAttr>(a))
      return emitError() << "decision: alternatives must be #swift.candidate, "
                            "not "
                         << a;
  return verifyCounts(emitError, "decision",
                      {{"usable_bytes", usableBytes},
                       {"evaluated", evaluated},
                       {"considered", considered}},
                      {});
}

SmallVector<CandidateAttr> DecisionAttr::getAlternativeCandidates() const {
  return llvm::to_vector(llvm::map_range(
      getAlternatives(), [](Attribute a) { return cast<CandidateAttr>(a); }));
}

LogicalResult MemoryPointAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                     StringRef phase, int64_t layer, StringRef op,
                                     int64_t bytes) {
  if (phase != "forward" && phase != "backward" && phase != "optimizer")
    return emitError() << "memory_point: phase must be forward, backward or "
                          "optimizer, not \"" << phase << "\"";
  if (layer < -1)
    return emitError() << "memory_point: layer must be >= -1";
  if (bytes < 0)
    return emitError() << "memory_point: bytes must be >= 0";
  return success();
}

LogicalResult EstimateAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t peakBytes,
    int64_t capacityBytes, StringRef peakPhase, int64_t peakLayer,
    StringRef peakOp, DictionaryAttr breakdown, int64_t forwardPeakBytes,
    int64_t backwardPeakBytes, int64_t optimizerPeakBytes,
    int64_t layerActivationBytes, int64_t checkpointedLayerBytes,
    int64_t headActivationBytes, int64_t hostBytes, APFloat stepSeconds,
    APFloat computeSeconds, APFloat recomputeSeconds,
    APFloat communicationSeconds, APFloat exposedCommunicationSeconds,
    APFloat offloadSeconds, APFloat optimizerSeconds, APFloat tokensPerSecond,
    APFloat mfu, ArrayAttr timeline, int64_t offloadedActivationBytes,
    std::optional<APFloat> activationCopySeconds,
    std::optional<APFloat> activationOffloadSeconds,
    std::optional<APFloat> pipelineBubbleSeconds) {
  if (pipelineBubbleSeconds &&
      !(pipelineBubbleSeconds->convertToDouble() >= 0 &&
        pipelineBubbleSeconds->convertToDouble() <= stepSeconds.convertToDouble()))
    return emitError() << "estimate: pipeline_bubble_seconds is part of "
                          "step_seconds: within 0..step_seconds";
  if (offloadedActivationBytes < 0 || offloadedActivationBytes > hostBytes)
    return emitError() << "estimate: offloaded_activation_bytes must be "
                          "within 0..host_bytes";
  if (activationOffloadSeconds &&
      activationOffloadSeconds->convertToDouble() >
          offloadSeconds.convertToDouble())
    return emitError() << "estimate: activation_offload_seconds is part of "
                          "offload_seconds and cannot exceed it";
  int64_t highest = -1;
  for (Attribute a : timeline ? timeline.getValue() : ArrayRef<Attribute>()) {
    auto point = dyn_cast<MemoryPointAttr>(a);
    if (!point)
      return emitError() << "estimate: timeline holds " << a
                         << ", not a #swift.memory_point";
    highest = std::max(highest, point.getBytes());
  }
  if (timeline && !timeline.empty() && highest != peakBytes)
    return emitError() << "estimate: the timeline's largest point (" << highest
                       << " bytes) is not the peak (" << peakBytes << ")";
  for (NamedAttribute part : breakdown)
    if (!isa<IntegerAttr>(part.getValue()))
      return emitError() << "estimate: breakdown." << part.getName().getValue()
                         << " must be an integer byte count";
  if (peakLayer < -1)
    return emitError() << "estimate: peak_layer must be >= -1";
  return verifyCounts(
      emitError, "estimate",
      {{"peak_bytes", peakBytes},
       {"capacity_bytes", capacityBytes},
       {"forward_peak_bytes", forwardPeakBytes},
       {"backward_peak_bytes", backwardPeakBytes},
       {"optimizer_peak_bytes", optimizerPeakBytes},
       {"layer_activation_bytes", layerActivationBytes},
       {"checkpointed_layer_bytes", checkpointedLayerBytes},
       {"head_activation_bytes", headActivationBytes},
       {"host_bytes", hostBytes}},
      {{"step_seconds", stepSeconds},
       {"compute_seconds", computeSeconds},
       {"recompute_seconds", recomputeSeconds},
       {"communication_seconds", communicationSeconds},
       {"exposed_communication_seconds", exposedCommunicationSeconds},
       {"offload_seconds", offloadSeconds},
       {"optimizer_seconds", optimizerSeconds},
       {"tokens_per_second", tokensPerSecond},
       {"mfu", mfu}});
}

LogicalResult
MeasuredRatesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          APFloat matmulTflops, APFloat attentionTflops,
                          APFloat elementwiseGbps, APFloat hostLinkGbps,
                          APFloat intraNodeBusGbps, APFloat interNodeBusGbps,
                          APFloat collectiveLatencyUs,
                          APFloat cpuAdamNsPerParam) {
  return verifyCounts(emitError, "measured", {},
                      {{"matmul_tflops", matmulTflops},
                       {"attention_tflops", attentionTflops},
                       {"elementwise_gbps", elementwiseGbps},
                       {"host_link_gbps", hostLinkGbps},
                       {"intra_node_bus_gbps", intraNodeBusGbps},
                       {"inter_node_bus_gbps", interNodeBusGbps},
                       {"collective_latency_us", collectiveLatencyUs},
                       {"cpu_adam_ns_per_param", cpuAdamNsPerParam}});
}

MeasuredRatesAttr MeasuredRatesAttr::get(MLIRContext *context,
                                         const ::swift::job::MeasuredRates &r) {
  if (!r.any())
    return nullptr;
  auto real = [](double x) { return APFloat(x); };
  return get(context, real(r.matmulTflops), real(r.attentionTflops),
             real(r.elementwiseGBps), real(r.hostLinkGBps),
             real(r.intraNodeBusGBps), real(r.interNodeBusGBps),
             real(r.collectiveLatencyUs), real(r.cpuAdamNsPerParam));
}

::swift::job::MeasuredRates MeasuredRatesAttr::getRates() const {
  ::swift::job::MeasuredRates r;
  r.matmulTflops = getMatmulTflops().convertToDouble();
  r.attentionTflops = getAttentionTflops().convertToDouble();
  r.elementwiseGBps = getElementwiseGbps().convertToDouble();
  r.hostLinkGBps = getHostLinkGbps().convertToDouble();
  r.intraNodeBusGBps = getIntraNodeBusGbps().convertToDouble();
  r.interNodeBusGBps = getInterNodeBusGbps().convertToDouble();
  r.collectiveLatencyUs = getCollectiveLatencyUs().convertToDouble();
  r.cpuAdamNsPerParam = getCpuAdamNsPerParam().convertToDouble();
  return r;
}

LogicalResult CountsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t parameters,
                                 int64_t trainableParameters,
                                 int64_t tokensPerStep) {
  if (failed(verifyCounts(emitError, "counts",
                          {{"parameters", parameters},
                           {"trainable_parameters", trainableParameters},
                           {"tokens_per_step", tokensPerStep}},
                          {})))
    return failure();
  if (trainableParameters > parameters)
    return emitError() << "counts: trainable_parameters (" << trainableParameters
                       << ") exceed parameters (" << parameters << ")";
  return success();
}

LogicalResult OpCostAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t forwardFlops, int64_t backwardFlops,
                                 int64_t recomputeFlops, int64_t savedBytes) {
  return verifyCounts(emitError, "op_cost",
                      {{"forward_flops", forwardFlops},
                       {"backward_flops", backwardFlops},
                       {"recompute_flops", recomputeFlops},
                       {"saved_bytes", savedBytes}},
                      {});
}

LogicalResult SwiftDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() != kOpCostAttrName)
    return op->emitError("unknown attribute '")
           << attr.getName().getValue()
           << "' of the swift dialect (its only discardable attribute is '"
           << kOpCostAttrName << "')";
  if (!isa<OpCostAttr>(attr.getValue()))
    return op->emitError("'") << kOpCostAttrName
                              << "' must be a #swift.op_cost, not "
                              << attr.getValue();
  if (!isa<CostOpInterface>(op))
    return op->emitError("'")
           << kOpCostAttrName << "' belongs on an op with CostOpInterface";
  return success();
}
