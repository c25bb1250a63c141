//===- SwiftOps.cpp - verifiers and structure of swift ops ----------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Plan/Plan.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <algorithm>
#include <string>

using namespace mlir;
using namespace mlir::swift;

#define GET_OP_CLASSES
#include "swift/Dialect/SwiftOps.cpp.inc"

static int64_t lastDim(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape().back();
}

/// Activations share the (dynamic) batch and the sequence dimension.
static LogicalResult verifySameTokens(Operation *op, Value a, Value b) {
  auto ta = cast<RankedTensorType>(a.getType());
  auto tb = cast<RankedTensorType>(b.getType());
  if (ta.getDimSize(0) != tb.getDimSize(0) ||
      ta.getDimSize(1) != tb.getDimSize(1))
    return op->emitOpError("batch and sequence dimensions differ: ")
           << ta << " vs " << tb;
  return success();
}

//===----------------------------------------------------------------------===//
// JobOp
//===----------------------------------------------------------------------===//

LogicalResult JobOp::verify() {
  bool adapters = getMethod() != Method::Full;
  if (adapters && !getLora())
    return emitOpError("method ")
           << irKeyword(getMethod()) << " needs a 'lora' attribute";
  if (!adapters && getLora())
    return emitOpError("'lora' is set but method is full");
  // The job reader's bounds (a hand-written or edited job op meets them
  // too): tokens per step and the sizes derived from it stay in int64.
  namespace limits = ::swift::plan::limits;
  if (getSequenceLength() > limits::kSequenceLength)
    return emitOpError("sequence_length (")
           << getSequenceLength() << ") exceeds " << limits::kSequenceLength;
  if (getGlobalBatchSize() > limits::kBatch)
    return emitOpError("global_batch_size (")
           << getGlobalBatchSize() << ") exceeds " << limits::kBatch;
  if (getMicroBatchSize() && *getMicroBatchSize() > getGlobalBatchSize())
    return emitOpError("micro_batch_size (")
           << *getMicroBatchSize() << ") exceeds global_batch_size ("
           << getGlobalBatchSize() << ")";
  return success();
}

LogicalResult JobOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto model = symbolTable.lookupNearestSymbolFrom<ModelOp>(*this, getModelAttr());
  if (!model)
    return emitOpError("'") << getModel() << "' is not a swift.model";
  // The model's (input_ids, labels) are (batch, sequence) tensors: a static
  // sequence dimension is the job's (what the passes price).
  Region &body = model.getBody();
  auto ids = body.empty() || body.front().getNumArguments() == 0
                 ? RankedTensorType()
                 : dyn_cast<RankedTensorType>(
                       body.front().getArgument(0).getType());
  if (ids && ids.getRank() == 2 && !ids.isDynamicDim(1) &&
      ids.getDimSize(1) != getSequenceLength())
    return emitOpError("sequence_length (")
           << getSequenceLength()
           << ") is not the sequence dimension of the input_ids of '"
           << getModel() << "' (" << ids.getDimSize(1) << ")";
  auto cluster =
      symbolTable.lookupNearestSymbolFrom<ClusterOp>(*this, getClusterAttr());
  if (!cluster)
    return emitOpError("'") << getCluster() << "' is not a swift.cluster";
  // The layout's degrees divide the GPUs in turn (no product can overflow):
  // tp x pp x cp GPUs per data-parallel rank, dp_shard ranks per group.
  const int64_t gpus = cluster.getNumGpus();
  StrategyAttr strategy = getStrategy();
  int64_t dataParallel = gpus;
  std::string perRank;
  for (auto [name, degree] :
       {std::pair<StringRef, std::optional<int64_t>>{"tp", strategy.getTp()},
        {"pp", strategy.getPp()},
        {"cp", strategy.getCp()}}) {
    if (!degree)
      continue;
    perRank += (perRank.empty() ? "" : " x ") + (name + " " + Twine(*degree)).str();
    if (dataParallel % *degree != 0)
      return emitOpError("strategy ")
             << perRank << " does not divide the cluster's " << gpus << " GPUs";
    dataParallel /= *degree;
  }
  if (std::optional<int64_t> shard = strategy.getDpShard();
      shard && dataParallel % *shard != 0)
    return emitOpError("strategy dp_shard ")
           << *shard << " does not divide the " << dataParallel
           << " data-parallel ranks (" << gpus << " GPUs"
           << (perRank.empty() ? "" : " / " + perRank) << ")";
  if (getGradientAccumulation() && !getMicroBatchSize())
    return emitOpError("gradient_accumulation needs micro_batch_size");
  // Each data-parallel rank takes its own micro-batches.
  if (getGradientAccumulation() &&
      *getMicroBatchSize() * *getGradientAccumulation() * dataParallel !=
          getGlobalBatchSize())
    return emitOpError("micro_batch_size (")
           << *getMicroBatchSize() << ") x gradient_accumulation ("
           << *getGradientAccumulation() << ") x " << dataParallel
           << (dataParallel == gpus ? " GPUs"
                                    : " data-parallel ranks (" +
                                          std::to_string(gpus) + " GPUs / " +
                                          perRank + ")")
           << " != global_batch_size (" << getGlobalBatchSize() << ")";
  // Every candidate's layout spans the cluster and splits the model's
  // layers over its pipeline chunks.
  if (DecisionAttr decision = getDecisionAttr()) {
    SmallVector<CandidateAttr> candidates = decision.getAlternativeCandidates();
    candidates.push_back(decision.getChosen());
    candidates.push_back(decision.getClosest());
    int64_t layers = 0;
    model.walk([&](RepeatOp repeat) { layers += repeat.getCount(); });
    for (CandidateAttr candidate : candidates) {
      MeshAttr mesh = candidate ? candidate.getMesh() : MeshAttr();
      if (!mesh)
        continue;
      if (mesh.getSize() != gpus)
        return emitOpError("a candidate's mesh spans ")
               << mesh.getSize() << " GPUs (dp_replicate x dp_shard x cp x "
                                    "pp x tp), not the cluster's "
               << gpus;
      if (DenseI64ArrayAttr stages = mesh.getStageLayers()) {
        int64_t sum = 0;
        for (int64_t n : stages.asArrayRef())
          sum += std::min<int64_t>(n, layers + 1); // no overflow
        if (sum != layers)
          return emitOpError("a candidate's mesh puts ")
                 << sum << " decoder layers in its stage_layers, not the "
                 << "model's " << layers;
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

LogicalResult ModelOp::verifyRegions() {
  Block &body = getBody().front();
  auto isTokens = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.getRank() == 2 &&
           tensor.getElementType().isInteger();
  };
  if (body.getNumArguments() != 2 || !isTokens(body.getArgument(0).getType()) ||
      !isTokens(body.getArgument(1).getType()))
    return emitOpError("body must take (input_ids, labels) as 2-D integer "
                       "tensors");
  if (!isa<LossOp>(body.getTerminator()))
    return emitOpError("body must end with swift.loss");
  return success();
}

LossOp ModelOp::getLossOp() {
  return cast<LossOp>(getBody().front().getTerminator());
}

/// How many times an op runs per forward pass: the product of the counts of
/// the repeats around it.
static int64_t repeatMultiplier(Operation *op) {
  int64_t times = 1;
  for (auto repeat = op->getParentOfType<RepeatOp>(); repeat;
       repeat = repeat->getParentOfType<RepeatOp>())
    times *= repeat.getCount();
  return times;
}

int64_t ModelOp::getNumParameters() {
  int64_t total = 0;
  walk([&](ParamOp param) {
    total += param.getNumElements() * repeatMultiplier(param);
  });
  return total;
}

int64_t ModelOp::getNumTrainableParameters(Method method, LoraAttr lora) {
  if (method == Method::Full)
    return getNumParameters();
  int64_t total = 0;
  walk([&](LinearOp linear) {
    if (lora && lora.targets(linear.getWeightName()))
      total += lora.getRank() *
               (linear.getInFeatures() + linear.getOutFeatures()) *
               repeatMultiplier(linear);
  });
  return total;
}

//===----------------------------------------------------------------------===//
// RepeatOp
//===----------------------------------------------------------------------===//

LogicalResult RepeatOp::verifyRegions() {
  Block &body = getBody().front();
  Type carried = getInit().getType();
  if (body.getNumArguments() != 1 || body.getArgument(0).getType() != carried)
    return emitOpError("body must take one argument of the carried type ")
           << carried;
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with swift.yield");
  if (yield.getValue().getType() != carried ||
      getResult().getType() != carried)
    return emitOpError("each layer must map ")
           << carried << " to itself, got " << yield.getValue().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor op verifiers
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  auto table = getTable().getType();
  auto result = getResult().getType();
  if (result.getDimSize(2) != table.getDimSize(1) ||
      result.getElementType() != table.getElementType())
    return emitOpError("result ") << result << " does not match table " << table;
  if (getIds().getType().getDimSize(1) != result.getDimSize(1))
    return emitOpError("sequence length of ids and result differ");
  return success();
}

LogicalResult RMSNormOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError("result type must equal input type");
  int64_t width = lastDim(getInput());
  int64_t group = getWeight().getType().getDimSize(0);
  if (group <= 0 || width % group != 0)
    return emitOpError("weight of ")
           << group << " elements neither matches nor divides the width "
           << width;
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError("epsilon must be positive");
  return success();
}

LogicalResult LinearOp::verify() {
  auto weight = getWeight().getType();
  if (lastDim(getInput()) != weight.getDimSize(1))
    return emitOpError("input width ")
           << lastDim(getInput()) << " does not match weight " << weight
           << " ([out, in])";
  if (lastDim(getResult()) != weight.getDimSize(0))
    return emitOpError("result width ")
           << lastDim(getResult()) << " does not match weight " << weight;
  if (getBias() && getBias().getType().getDimSize(0) != weight.getDimSize(0))
    return emitOpError("bias ") << getBias().getType()
                                << " does not match out features "
                                << weight.getDimSize(0);
  return verifySameTokens(*this, getInput(), getResult());
}

StringRef LinearOp::getWeightName() {
  if (auto param = getWeight().getDefiningOp<ParamOp>())
    return param.getName();
  return "";
}

LogicalResult RopeOp::verify() {
  if (getHeadDim() % 2 != 0)
    return emitOpError("head_dim must be even, got ") << getHeadDim();
  if (lastDim(getInput()) != int64_t(getNumHeads() * getHeadDim()))
    return emitOpError("width ") << lastDim(getInput()) << " is not num_heads ("
                                 << getNumHeads() << ") x head_dim ("
                                 << getHeadDim() << ")";
  return success();
}

LogicalResult AttentionOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(), dim = getHeadDim();
  if (heads % kvHeads != 0)
    return emitOpError("num_kv_heads (")
           << kvHeads << ") must divide num_heads (" << heads << ")";
  if (lastDim(getQuery()) != heads * dim)
    return emitOpError("query width ")
           << lastDim(getQuery()) << " is not num_heads (" << heads
           << ") x head_dim (" << dim << ")";
  if (lastDim(getKey()) != kvHeads * dim || lastDim(getValue()) != kvHeads * dim)
    return emitOpError("key/value width must be num_kv_heads (")
           << kvHeads << ") x head_dim (" << dim << ") = " << kvHeads * dim;
  if (getResult().getType() != getQuery().getType())
    return emitOpError("result type must equal query type");
  if (failed(verifySameTokens(*this, getQuery(), getKey())) ||
      failed(verifySameTokens(*this, getQuery(), getValue())))
    return failure();
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  auto logits = getLogits().getType();
  auto labels = getLabels().getType();
  if (logits.getDimSize(0) != labels.getDimSize(0) ||
      logits.getDimSize(1) != labels.getDimSize(1))
    return emitOpError("labels ") << labels << " do not match logits "
                                  << logits;
  return success();
}
