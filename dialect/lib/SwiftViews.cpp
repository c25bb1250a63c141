//===- SwiftViews.cpp - the job, model and cluster as other layers read them ===//
//
// The cost model's compact view of the IR (ModelOp::profile(),
// JobOp::trainingSetup(), ClusterOp::hardware(), JobOp::fixedStrategy(),
// JobOp::unpricedLayout())
// and plan.json's model section (ModelOp::planModel()).
//
//===----------------------------------------------------------------------===//

#include "PerSample.h"

#include "swift/Dialect/SwiftOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <string>
#include <tuple>

using namespace mlir;
using namespace mlir::swift;
namespace cost = ::swift::cost;

namespace {

/// "self_attn.q_proj.weight" -> "self_attn.q_proj".
std::string moduleName(Value weight) {
  auto param = weight ? weight.getDefiningOp<ParamOp>() : ParamOp();
  if (!param)
    return "";
  StringRef name = param.getName();
  name.consume_back(".weight");
  return name.str();
}

/// Parameters an op owns: its weight/bias params, unless another op already
/// claimed them (a tied lm_head reuses the embedding table).
int64_t claim(Value v, llvm::DenseSet<Value> &claimed) {
  auto param = v ? v.getDefiningOp<ParamOp>() : ParamOp();
  if (!param || !claimed.insert(v).second)
    return 0;
  return param.getNumElements();
}

std::optional<cost::OpKind> kindOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<cost::OpKind>>(op)
      .Case([](EmbeddingOp) { return cost::OpKind::Embedding; })
      .Case([](RMSNormOp) { return cost::OpKind::RMSNorm; })
      .Case([](LinearOp) { return cost::OpKind::Linear; })
      .Case([](RopeOp) { return cost::OpKind::Rope; })
      .Case([](AttentionOp) { return cost::OpKind::Attention; })
      .Case([](SiluMulOp) { return cost::OpKind::SiluMul; })
      .Case([](AddOp) { return cost::OpKind::Add; })
      .Case([](CrossEntropyOp) { return cost::OpKind::CrossEntropy; })
      .Default([](Operation *) { return std::nullopt; });
}

class ProfileBuilder {
public:
  ProfileBuilder(JobOp job) : lora(job.getMethod() != Method::Full ? job.getLoraAttr()
                                                                    : LoraAttr()) {}

  cost::OpProfile profile(Operation *op) {
    auto costOp = cast<CostOpInterface>(op);
    cost::OpProfile p;
    p.forwardFlops = costOp.getForwardFlopsPerSample();
    p.backwardFlops = costOp.getBackwardFlopsPerSample(true);
    p.backwardFlopsFrozen = costOp.getBackwardFlopsPerSample(false);
    p.inputElements = perSample(op->getOperand(0));
    p.inputValue = id(op->getOperand(0));
    p.outputValue = id(op->getResult(0));
    if (Operation *producer = op->getOperand(0).getDefiningOp())
      p.inputProducer = kindOf(producer);
    if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType());
        t && t.getRank() > 0)
      p.outputElements = perSample(op->getResult(0));
    SmallVector<SavedTensor> saved;
    costOp.getSavedTensors(saved);
    for (const SavedTensor &s : saved)
      p.saved.push_back({s.value ? id(s.value) : -1, s.elementsPerSample,
                         static_cast<int>(s.bitWidth), s.what.str()});

    llvm::TypeSwitch<Operation *>(op)
        .Case([&](EmbeddingOp e) {
          p.kind = cost::OpKind::Embedding;
          p.name = moduleName(e.getTable());
          p.weightElements = claim(e.getTable(), claimed);
          p.inputElements = perSample(e.getIds());
        })
        .Case([&](RMSNormOp n) {
          p.kind = cost::OpKind::RMSNorm;
          p.name = moduleName(n.getWeight());
          p.weightElements = claim(n.getWeight(), claimed);
        })
        .Case([&](LinearOp l) {
          p.kind = cost::OpKind::Linear;
          p.name = moduleName(l.getWeight());
          p.weightElements = claim(l.getWeight(), claimed);
          p.biasElements = claim(l.getBias(), claimed);
          p.inFeatures = l.getInFeatures();
          p.outFeatures = l.getOutFeatures();
          p.adapter = lora && lora.targets(l.getWeightName()) &&
                      l->getParentOfType<RepeatOp>();
          if (p.name == "model.embed_tokens")
            p.name = "lm_head"; // the tied head
        })
        .Case([&](RopeOp r) {
          p.kind = cost::OpKind::Rope;
          p.name = "rope";
          p.heads = r.getNumHeads();
          p.headDim = r.getHeadDim();
        })
        .Case([&](AttentionOp a) {
          p.kind = cost::OpKind::Attention;
          p.name = "self_attn";
          p.heads = a.getNumHeads();
          p.kvHeads = a.getNumKvHeads();
          p.headDim = a.getHeadDim();
        })
        .Case([&](SiluMulOp) {
          p.kind = cost::OpKind::SiluMul;
          p.name = "mlp.act";
        })
        .Case([&](AddOp) {
          p.kind = cost::OpKind::Add;
          p.name = "residual";
        })
        .Case([&](CrossEntropyOp) {
          p.kind = cost::OpKind::CrossEntropy;
          p.name = "loss";
        });
    return p;
  }

private:
  int id(Value v) {
    auto [it, inserted] = ids.try_emplace(v, static_cast<int>(ids.size()));
    return it->second;
  }

  LoraAttr lora;
  llvm::DenseMap<Value, int> ids;
  llvm::DenseSet<Value> claimed;
};

int64_t params(const std::vector<cost::OpProfile> &ops) {
  int64_t n = 0;
  for (const auto &op : ops)
    n += op.weightElements + op.biasElements;
  return n;
}

} // namespace

ModelOp JobOp::lookupModel() {
  return dyn_cast_or_null<ModelOp>(SymbolTable::lookupSymbolIn(
      (*this)->getParentOfType<ModuleOp>(), getModelAttr()));
}

ClusterOp JobOp::lookupCluster() {
  return dyn_cast_or_null<ClusterOp>(SymbolTable::lookupSymbolIn(
      (*this)->getParentOfType<ModuleOp>(), getClusterAttr()));
}

ScheduleOp JobOp::lookupSchedule() {
  ScheduleOp found;
  for (auto schedule :
       (*this)->getParentOfType<ModuleOp>().getOps<ScheduleOp>())
    if (schedule.getJob() == getSymName())
      found = schedule;
  return found;
}

cost::ModelProfile ModelOp::profile(JobOp job) {
  cost::ModelProfile profile;
  profile.name = getSymName().str();
  Block &body = getBody().front();
  profile.sequenceLength =
      cast<RankedTensorType>(body.getArgument(0).getType()).getDimSize(1);
  ProfileBuilder builder(job);
  std::vector<cost::OpProfile> *section = &profile.embed;
  for (Operation &op : body) {
    if (auto repeat = dyn_cast<RepeatOp>(op)) {
      profile.numLayers = repeat.getCount();
      auto act = cast<RankedTensorType>(repeat.getResult().getType());
      profile.hiddenSize = act.getDimSize(2);
      profile.computeBits = act.getElementTypeBitWidth();
      for (Operation &inner : repeat.getBody().front())
        if (isa<CostOpInterface>(inner))
          profile.layer.push_back(builder.profile(&inner));
      section = &profile.head;
      continue;
    }
    if (isa<CostOpInterface>(op))
      section->push_back(builder.profile(&op));
  }
  for (const auto &op : profile.head)
    if (op.kind == cost::OpKind::Linear)
      profile.vocabSize = op.outFeatures;
  profile.layerParameters = params(profile.layer);
  profile.embeddingParameters = params(profile.embed);
  profile.headParameters = params(profile.head);
  profile.parameters = profile.embeddingParameters + profile.headParameters +
                       profile.layerParameters * profile.numLayers;
  for (const auto &op : profile.layer)
    if (op.adapter)
      profile.adapterParameters += job.getLoraAttr().getRank() *
                                   (op.inFeatures + op.outFeatures) *
                                   profile.numLayers;
  return profile;
}

::swift::plan::ModelConfig ModelOp::planModel(bool *mlpBias) {
  // The parameter a linear's weight or bias comes from ("" when computed).
  auto paramName = [](Value v) {
    auto param = v ? v.getDefiningOp<ParamOp>() : ParamOp();
    return param ? param.getName() : StringRef();
  };
  ::swift::plan::ModelConfig m;
  bool lmHead = false, mlp = false;
  walk([&](Operation *op) {
    if (auto repeat = dyn_cast<RepeatOp>(op)) {
      m.numLayers += repeat.getCount();
    } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      auto table = cast<RankedTensorType>(embedding.getTable().getType());
      m.vocabSize = table.getDimSize(0);
      m.hiddenSize = table.getDimSize(1);
    } else if (auto attention = dyn_cast<AttentionOp>(op)) {
      m.numHeads = attention.getNumHeads();
      m.numKvHeads = attention.getNumKvHeads();
      m.headDim = attention.getHeadDim();
    } else if (auto rope = dyn_cast<RopeOp>(op)) {
      m.ropeTheta = rope.getTheta().convertToDouble();
      if (RopeScalingAttr rs = rope.getScalingAttr())
        m.ropeScaling = {rs.getRopeType(), rs.getFactor().convertToDouble(),
                         rs.getLowFreqFactor().convertToDouble(),
                         rs.getHighFreqFactor().convertToDouble(),
                         rs.getOriginalMaxPositionEmbeddings()};
    } else if (auto norm = dyn_cast<RMSNormOp>(op)) {
      m.rmsNormEps = norm.getEpsilon().convertToDouble();
      m.qkNorm |= paramName(norm.getWeight()).contains("q_norm");
    } else if (auto linear = dyn_cast<LinearOp>(op)) {
      StringRef weight = paramName(linear.getWeight());
      bool bias = static_cast<bool>(linear.getBias());
      if (weight.starts_with("mlp.gate_proj"))
        m.intermediateSize = linear.getOutFeatures();
      if (weight.starts_with("self_attn.q_proj"))
        m.qkvBias = bias;
      if (weight.starts_with("self_attn.o_proj"))
        m.oBias = bias;
      if (weight.starts_with("mlp."))
        mlp |= bias;
      lmHead |= weight.starts_with("lm_head");
    }
  });
  m.tieWordEmbeddings = !lmHead;
  if (mlpBias)
    *mlpBias = mlp;
  return m;
}

cost::TrainingSetup JobOp::trainingSetup() {
  cost::TrainingSetup s;
  s.backend = getBackend();
  s.precision = getPrecision();
  s.method = getMethod();
  if (auto lora = getLoraAttr()) {
    s.loraRank = lora.getRank();
    s.loraDropout = lora.getDropout().convertToDouble();
  }
  s.globalBatchSize = getGlobalBatchSize();
  if (OptimizerSettingsAttr o = getOptimizerSettingsAttr())
    if (std::optional<llvm::APFloat> norm = o.getMaxGradNorm())
      s.clipsGradients = norm->convertToDouble() > 0; // 0: no clipping
  return s;
}

cost::Hardware ClusterOp::hardware() {
  cost::Hardware hw;
  GpuAttr gpu = getGpu();
  hw.gpu = gpu.getName().str();
  hw.memoryBytes = gpu.getMemoryBytes();
  hw.bf16Tflops = gpu.getBf16Tflops().convertToDouble();
  hw.fp8Tflops = gpu.getFp8Tflops().convertToDouble();
  hw.hbmGBps = gpu.getHbmGbps().convertToDouble();
  hw.hostLinkGBps = gpu.getHostLinkGbps().convertToDouble();
  hw.gpusPerNode = getGpusPerNode();
  hw.nodes = getNodes();
  auto link = [](LinkAttr l) {
    return cost::Link{l.getName().str(), l.getBandwidthGbps().convertToDouble(),
                      l.getLatencyUs().convertToDouble()};
  };
  hw.intraNode = link(getIntraNode());
  hw.interNode = link(getInterNode());
  hw.hostMemoryBytes = getHostMemory();
  if (MeasuredRatesAttr m = getMeasuredAttr())
    hw.measured = m.getRates();
  return hw;
}

std::string JobOp::unpricedLayout() {
  StrategyAttr attr = getStrategy();
  // The mesh engines run (and the cost model prices) every layout key;
  // dp_shard (HSDP's shard groups) is priced on every backend, which runs
  // it or says why not (cost::unsupportedReason).
  if (getBackend() == ::swift::plan::Backend::Torchtitan ||
      getBackend() == ::swift::plan::Backend::Megatron)
    return "";
  // (key, what it is, its value, its trivial value or "" for none).
  auto refuse = [&](const std::string &key, const std::string &what,
                    const std::string &value, const std::string &trivial) {
    return "strategy." + key + ": backend " +
           ::swift::plan::toString(getBackend()) + " runs no " + what + " (" +
           key + " " + value + "); use backend torchtitan or megatron, or " +
           "leave it auto" + (trivial.empty() ? "" : " or set " + trivial);
  };
  for (auto [key, what, degree] :
       {std::tuple<const char *, const char *, std::optional<int64_t>>{
            "tp", "tensor parallelism", attr.getTp()},
        {"pp", "pipeline parallelism", attr.getPp()},
        {"cp", "context parallelism", attr.getCp()}})
    if (degree > 1)
      return refuse(key, what, std::to_string(*degree), "1");
  if (std::optional<PipelineSchedule> schedule = attr.getPpSchedule())
    return refuse("pp_schedule", "pipeline schedules",
                  ::swift::plan::toString(*schedule), "");
  if (attr.getVirtualStages() > 1)
    return refuse("virtual_stages", "interleaved pipeline stages",
                  std::to_string(*attr.getVirtualStages()), "1");
  return "";
}

FailureOr<cost::Strategy> JobOp::completeStrategy(StringRef whenOpen) {
  if (std::string why = unpricedLayout(); !why.empty())
    return emitOpError(why);
  std::string missing;
  std::optional<cost::Strategy> s = fixedStrategy(missing);
  if (!s)
    return emitOpError("strategy is not complete (open: ")
           << missing << "); " << whenOpen;
  return *s;
}

std::optional<cost::Strategy> JobOp::fixedStrategy(std::string &missing) {
  StrategyAttr attr = getStrategy();
  missing.clear();
  if (!unpricedLayout().empty())
    return std::nullopt;
  std::vector<std::string> open;
  if (!attr.getZero())
    open.push_back("strategy.zero");
  if (!attr.getOffload())
    open.push_back("strategy.offload");
  if (!attr.getCheckpointing())
    open.push_back("strategy.checkpointing");
  if (!getMicroBatchSize())
    open.push_back("training.micro_batch_size");
  if (!getGradientAccumulation())
    open.push_back("training.gradient_accumulation");
  for (const std::string &key : open)
    missing += (missing.empty() ? "" : ", ") + key;
  if (!open.empty())
    return std::nullopt;
  cost::Strategy s;
  s.zero = static_cast<int>(*attr.getZero());
  s.offload = *attr.getOffload();
  s.checkpointing = *attr.getCheckpointing();
  s.checkpointLayers = attr.getCheckpointLayers().value_or(-1);
  if (attr.getBucketBytes())
    s.bucketBytes = *attr.getBucketBytes();
  if (attr.getPrefetchDepth())
    s.prefetchDepth = static_cast<int>(*attr.getPrefetchDepth());
  s.offloadActivations = attr.getOffloadActivations().value_or(0);
  s.mlpTileTokens = attr.getMlpTileTokens().value_or(0);
  s.microBatchSize = *getMicroBatchSize();
  s.gradientAccumulation = *getGradientAccumulation();
  // The mesh (absent keys: the trivial layout; unpricedLayout() refused
  // non-trivial ones on backends that do not run them).
  s.layout.tp = attr.getTp().value_or(1);
  s.layout.pp = attr.getPp().value_or(1);
  s.layout.cp = attr.getCp().value_or(1);
  s.layout.schedule = attr.getPpSchedule().value_or(PipelineSchedule::OneFOneB);
  s.layout.virtualStages = attr.getVirtualStages().value_or(1);
  // Shard groups of dp_shard ranks; absent, or every data-parallel rank:
  // one group (0).
  if (std::optional<int64_t> shard = attr.getDpShard()) {
    ClusterOp cluster = lookupCluster();
    if (!cluster ||
        *shard != s.layout.dataParallel(cluster.hardware().worldSize()))
      s.layout.dpShard = *shard;
  }
  return s;
}
