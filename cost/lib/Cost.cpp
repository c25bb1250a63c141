//===- Cost.cpp - entry points of the cost model --------------------------===//

#include "Detail.h"
#include "swift/Cost/Parallel.h"

#include <set>

namespace swift::cost {

namespace detail {

int64_t stackedOutFeatures(const std::vector<OpProfile> &ops, const OpProfile &op) {
  if (op.inputValue < 0)
    return op.outFeatures;
  int64_t n = 0;
  for (const OpProfile &o : ops)
    if (o.kind == OpKind::Linear && o.inputValue == op.inputValue)
      n += o.outFeatures;
  return n;
}

std::vector<Gemm> decoderGemms(const ModelProfile &m) {
  std::vector<Gemm> gemms;
  std::set<int> inputs; // values a stacked GEMM already reads
  for (const OpProfile &op : m.layer)
    if (op.kind == OpKind::Linear &&
        (op.inputValue < 0 || inputs.insert(op.inputValue).second))
      gemms.push_back({double(stackedOutFeatures(m.layer, op)),
                       double(op.inFeatures),
                       op.inputProducer == OpKind::Attention});
  return gemms;
}

bool fp8Linears(const TrainingSetup &setup, const Hardware &hw) {
  return plan::fp8Gemms(setup.precision) &&
         setup.backend == Backend::SwiftRun && setup.method == Method::Full &&
         hw.fp8Tflops > 0;
}

} // namespace detail

std::string PeakLocation::str() const {
  std::string s = phase;
  if (layer >= 0)
    s += ", layer " + std::to_string(layer);
  if (!op.empty())
    s += ", " + op;
  return s;
}

std::string unsupportedReason(const ModelProfile &model,
                              const TrainingSetup &setup, const Hardware &hw,
                              const Strategy &s) {
  if (s.microBatchSize < 1 || s.gradientAccumulation < 1)
    return "micro-batch and gradient accumulation must be positive";
  const Layout &l = s.layout;
  const bool mesh = meshBackend(setup.backend);
  if (!mesh && (l.tp > 1 || l.cp > 1 || l.pp > 1))
    return std::string(toString(setup.backend)) +
           " runs data parallelism only; tensor, pipeline and context "
           "parallelism need backend torchtitan or megatron";
  // The mesh backends' own limits first (Parallel.cpp): their reason for
  // refusing, say, offload is theirs, not the generic rules'.
  if (mesh)
    if (std::string why = meshUnsupportedReason(model, setup, hw, s);
        !why.empty())
      return why;
  // In doubles: a fixed micro-batch x accumulation x world can pass 2^63.
  // Each data-parallel rank (every GPU without a mesh) takes its
  // micro-batches.
  if (double(s.microBatchSize) * double(s.gradientAccumulation) *
          double(l.dataParallel(hw.worldSize())) !=
      double(setup.globalBatchSize))
    return mesh ? "micro_batch_size x gradient_accumulation x data-parallel "
                  "ranks must equal global_batch_size"
                : "micro_batch_size x gradient_accumulation x GPUs must equal "
                  "global_batch_size";
  if (s.offload == Offload::OptimizerAndParams && s.zero != 3)
    return "offloading parameters needs ZeRO-3 (parameters are sharded "
           "only there)";
  if (s.offload != Offload::None && s.zero == 0)
    return "offloading the optimizer needs ZeRO-1 or higher";
  if (setup.backend != Backend::SwiftRun &&
      (s.offloadActivations != 0 || s.mlpTileTokens != 0))
    return "activation offload and MLP tiles need swift-run";
  if (s.offloadActivations != 0 && s.checkpointing != Checkpointing::Full)
    return "offloading activations moves fully checkpointed layers' inputs; "
           "it needs checkpointing full";
  // HSDP: shard groups of dp_shard ranks, replicas of each other.
  const Layout &layout = s.layout;
  const int64_t world = hw.worldSize();
  if (layout.dpShard < 0 ||
      (layout.dpShard > 0 && layout.dataParallel(world) % layout.dpShard != 0))
    return "dp_shard must divide the data-parallel ranks";
  if (layout.replicas(world) > 1) {
    const std::string groups = "shard groups of " +
                               std::to_string(layout.shardGroup(world)) +
                               " of the " +
                               std::to_string(layout.dataParallel(world)) +
                               " data-parallel ranks";
    // (Backends added later price or refuse shard groups themselves.)
    if (setup.backend == Backend::HF)
      return "HF's Trainer shards over every rank (its --fsdp flags set no "
             "shard-group size): " +
             groups + " (HSDP) need swift-run, or deepspeed at zero 3 (ZeRO++ hpZ)";
    if (setup.backend == Backend::DeepSpeed && s.zero != 3)
      return "DeepSpeed's form of " + groups +
             " is ZeRO++ hpZ (zero_hpz_partition_size), a secondary partition "
             "of the weights under ZeRO-3: use zero 3";
    if (setup.backend == Backend::DeepSpeed && layout.shardGroup(world) == 1)
      return "DeepSpeed's zero_hpz_partition_size 1 turns hpZ off: shard "
             "groups of 1 rank need swift-run";
    if (setup.backend == Backend::SwiftRun && s.zero == 0)
      return groups + " (HSDP) shard the model states within each group: "
                      "they need zero >= 1 (zero 0 keeps every unit whole on "
                      "every rank)";
  }
  switch (setup.backend) {
  case Backend::HF:
    if (s.zero == 1)
      return "HF (FSDP2) has no ZeRO-1: it shards gradients with the "
             "optimizer states; use zero 0, 2 or 3";
    if (s.offload == Offload::Optimizer)
      return "FSDP2 offloads parameters together with the optimizer; use "
             "offload optimizer+params";
    if (s.checkpointing == Checkpointing::Selective)
      return "HF gradient checkpointing recomputes whole layers; use full";
    if (s.checkpointing != Checkpointing::None && s.checkpointLayers >= 0 &&
        s.checkpointLayers != model.numLayers)
      return "HF gradient checkpointing covers every layer; checkpoint_layers "
             "needs swift-run";
    break;
  case Backend::DeepSpeed:
    if (s.checkpointing == Checkpointing::Selective)
      return "HF models under DeepSpeed recompute whole layers; use full";
    // The Trainer's gradient_checkpointing flag wraps every layer; neither
    // it nor ds_config's activation_checkpointing names a subset.
    if (s.checkpointing != Checkpointing::None && s.checkpointLayers >= 0 &&
        s.checkpointLayers != model.numLayers)
      return "HF models under DeepSpeed checkpoint every layer "
             "(gradient_checkpointing); checkpoint_layers needs swift-run";
    // Its memory model holds one layer gathered ahead (ds_config's
    // stage3_prefetch_bucket_size is written from it).
    if (s.zero == 3 && s.prefetchDepth != 1)
      return "DeepSpeed is priced with one layer prefetched; prefetch_depth "
             "needs swift-run";
    break;
  case Backend::SwiftRun:
    break;
  case Backend::Torchtitan:
  case Backend::Megatron:
    break; // meshUnsupportedReason, above
  }
  return "";
}

Estimate estimate(const ModelProfile &model, const TrainingSetup &setup,
                  const Hardware &hw, const Strategy &strategy,
                  const EstimateOptions &options) {
  Estimate e;
  e.memory = detail::memoryFor(model, setup, hw, strategy, options.timeline);
  e.time = detail::timeFor(model, setup, hw, strategy);
  return e;
}

double swiftRunAttentionSeconds(const OpProfile &attention, int64_t seq,
                                const Hardware &hw, bool forward) {
  return detail::fusedAttentionSeconds(attention, seq, hw, forward);
}

double modelFlopsPerStep(const ModelProfile &m, int64_t globalBatchSize,
                         Method method) {
  // 6 x (parameters - embedding table) per token, lm_head included (a tied
  // head is the table, counted through the head's linear), plus attention:
  // forward + backward = 3x the forward's QK^T and PV. A frozen linear's
  // backward is its input gradient only: 2x its forward.
  double linear = 0, attention = 0;
  auto add = [&](const std::vector<OpProfile> &ops, double times) {
    for (const OpProfile &op : ops) {
      if (op.kind == OpKind::Linear)
        linear += times * op.forwardFlops;
      if (op.kind == OpKind::Attention)
        attention += times * op.forwardFlops;
    }
  };
  add(m.layer, m.numLayers);
  add(m.head, 1);
  double linearTimes = method == Method::Full ? 3 : 2;
  return (linearTimes * linear + 3 * attention) * globalBatchSize;
}

} // namespace swift::cost
