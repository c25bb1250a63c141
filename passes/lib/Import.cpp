//===- Import.cpp - job description to swift IR ---------------------------===//
//
// Builds the model exactly as HF transformers lays out a Llama-family
// decoder (LlamaDecoderLayer, Qwen2/Qwen3/Mistral variants), one op per
// tensor operation that matters for memory and time, and parameters named as
// in the checkpoint.
//
//===----------------------------------------------------------------------===//

#include "swift/Passes/Import.h"

#include "swift/Dialect/SwiftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <cctype>

using namespace mlir;
using namespace mlir::swift;

namespace mlir::swift {
using ::swift::job::ClusterSpec;
using ::swift::job::JobSpec;
using ::swift::job::LinkSpec;
using ::swift::job::ModelSpec;
using ::swift::job::TrainingSpec;


std::string symbolName(const std::string &name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "m_" + out;
  return out;
}

namespace {

/// Emits the ops of one model into a builder positioned in a block.
class ModelBuilder {
public:
  ModelBuilder(OpBuilder &b, Location loc, const ModelSpec &m, Type element,
               int64_t seq)
      : b(b), loc(loc), m(m), element(element), seq(seq) {}

  RankedTensorType activation(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, seq, width}, element);
  }

  Value param(StringRef name, ArrayRef<int64_t> shape) {
    return ParamOp::create(b, loc, RankedTensorType::get(shape, element),
                           b.getStringAttr(name));
  }

  Value rmsnorm(Value x, StringRef weightName, int64_t width) {
    Value w = param(weightName, {width});
    return RMSNormOp::create(b, loc, x.getType(), x, w,
                             b.getF64FloatAttr(m.rmsNormEps));
  }

  /// `prefix.weight` [out, in] and, with `bias`, `prefix.bias` [out].
  Value linear(Value x, StringRef prefix, int64_t in, int64_t out, bool bias) {
    Value w = param((prefix + ".weight").str(), {out, in});
    Value bv = bias ? param((prefix + ".bias").str(), {out}) : Value();
    return LinearOp::create(b, loc, activation(out), x, w, bv);
  }

  /// One LlamaDecoderLayer: pre-norm attention and SwiGLU MLP, each with a
  /// residual connection.
  Value decoderLayer(Value h) {
    int64_t hidden = m.hiddenSize, hd = m.headDim;
    int64_t qWidth = m.numAttentionHeads * hd, kvWidth = m.numKeyValueHeads * hd;
    Value x = rmsnorm(h, "input_layernorm.weight", hidden);
    Value q = linear(x, "self_attn.q_proj", hidden, qWidth, m.qkvBias);
    Value k = linear(x, "self_attn.k_proj", hidden, kvWidth, m.qkvBias);
    Value v = linear(x, "self_attn.v_proj", hidden, kvWidth, m.qkvBias);
    if (m.qkNorm) {
      q = rmsnorm(q, "self_attn.q_norm.weight", hd);
      k = rmsnorm(k, "self_attn.k_norm.weight", hd);
    }
    RopeScalingAttr scaling;
    if (const ::swift::plan::RopeScaling &rs = m.ropeScaling;
        rs.type != RopeType::Default)
      scaling = RopeScalingAttr::get(
          b.getContext(), rs.type, APFloat(rs.factor),
          APFloat(rs.lowFreqFactor), APFloat(rs.highFreqFactor),
          rs.originalMaxPositionEmbeddings);
    auto rope = [&](Value t, int64_t heads) {
      return RopeOp::create(b, loc, t.getType(), t, b.getI64IntegerAttr(heads),
                            b.getI64IntegerAttr(hd),
                            b.getF64FloatAttr(m.ropeTheta), scaling);
    };
    q = rope(q, m.numAttentionHeads);
    k = rope(k, m.numKeyValueHeads);
    Value attn = AttentionOp::create(
        b, loc, q.getType(), q, k, v, b.getI64IntegerAttr(m.numAttentionHeads),
        b.getI64IntegerAttr(m.numKeyValueHeads), b.getI64IntegerAttr(hd),
        b.getUnitAttr());
    Value o = linear(attn, "self_attn.o_proj", qWidth, hidden, m.oBias);
    Value h1 = AddOp::create(b, loc, h, o);
    Value y = rmsnorm(h1, "post_attention_layernorm.weight", hidden);
    Value gate = linear(y, "mlp.gate_proj", hidden, m.intermediateSize, m.mlpBias);
    Value up = linear(y, "mlp.up_proj", hidden, m.intermediateSize, m.mlpBias);
    Value act = SiluMulOp::create(b, loc, gate, up);
    Value down = linear(act, "mlp.down_proj", m.intermediateSize, hidden, m.mlpBias);
    return AddOp::create(b, loc, h1, down);
  }

private:
  OpBuilder &b;
  Location loc;
  const ModelSpec &m;
  Type element;
  int64_t seq;
};

/// The job's optimizer, lr schedule, clipping and seed as one attribute.
OptimizerSettingsAttr optimizerSettings(MLIRContext *context,
                                        const TrainingSpec &t) {
  const ::swift::plan::OptimizerConfig &o = t.optimizerConfig;
  auto real = [](double v) { return llvm::APFloat(v); };
  return OptimizerSettingsAttr::get(
      context, real(o.lr), real(o.beta1), real(o.beta2), real(o.eps),
      real(o.weightDecay), t.lrSchedule.warmupSteps, t.lrSchedule.decay,
      real(t.lrSchedule.minLrRatio), static_cast<int64_t>(t.seed),
      t.maxGradNorm ? std::optional<llvm::APFloat>(real(*t.maxGradNorm))
                    : std::nullopt);
}

} // namespace

OwningOpRef<ModuleOp> importJob(const JobSpec &job, MLIRContext &context) {
  context.loadDialect<SwiftDialect>();
  Location loc = FileLineColLoc::get(&context, job.path, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b(&context);
  b.setInsertionPointToEnd(module->getBody());

  // The cluster.
  const ClusterSpec &c = job.cluster;
  auto gpu = GpuAttr::get(
      &context, c.gpu.name, static_cast<int64_t>(c.gpu.memoryGiB * (1ll << 30)),
      llvm::APFloat(c.gpu.bf16Tflops), llvm::APFloat(c.gpu.fp8Tflops),
      llvm::APFloat(c.gpu.hbmGBps), llvm::APFloat(c.gpu.hostLinkGBps),
      llvm::APFloat(c.gpu.nvlinkGBps));
  auto link = [&](const LinkSpec &l) {
    return LinkAttr::get(&context, l.name, llvm::APFloat(l.bandwidthGBps),
                         llvm::APFloat(l.latencyUs));
  };
  auto measured = MeasuredRatesAttr::get(&context, c.measured);
  ClusterOp::create(b, loc, b.getStringAttr("cluster"), b.getI64IntegerAttr(c.nodes),
                    b.getI64IntegerAttr(c.gpusPerNode), gpu, link(c.intraNode),
                    link(c.interNode),
                    b.getI64IntegerAttr(static_cast<int64_t>(c.hostMemoryGiB * (1ll << 30))),
                    measured);

  // The model.
  const ModelSpec &m = job.model;
  const TrainingSpec &t = job.training;
  Type element = t.precision == Precision::Fp32 ? Type(b.getF32Type()) : b.getBF16Type();
  std::string modelName = symbolName(m.name);
  auto model = ModelOp::create(
      b, loc, modelName, m.modelType,
      m.weights.empty() ? StringAttr() : b.getStringAttr(m.weights),
      m.source.empty() ? StringAttr() : b.getStringAttr(m.source));
  Block *body = new Block();
  model.getBody().push_back(body);
  auto tokens = RankedTensorType::get({ShapedType::kDynamic, t.sequenceLength},
                                      b.getI64Type());
  Value ids = body->addArgument(tokens, loc);
  Value labels = body->addArgument(tokens, loc);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    ModelBuilder mb(b, loc, m, element, t.sequenceLength);
    Value table = mb.param("model.embed_tokens.weight", {m.vocabSize, m.hiddenSize});
    Value h = EmbeddingOp::create(b, loc, mb.activation(m.hiddenSize), ids, table);

    auto repeat = RepeatOp::create(b, loc, h.getType(), m.numHiddenLayers,
                                   /*first_layer=*/0, h);
    Block *layer = new Block();
    repeat.getBody().push_back(layer);
    Value layerIn = layer->addArgument(h.getType(), loc);
    {
      OpBuilder::InsertionGuard layerGuard(b);
      b.setInsertionPointToEnd(layer);
      YieldOp::create(b, loc, mb.decoderLayer(layerIn));
    }

    Value final = mb.rmsnorm(repeat.getResult(), "model.norm.weight", m.hiddenSize);
    Value logits;
    if (m.tieWordEmbeddings)
      logits = LinearOp::create(b, loc, mb.activation(m.vocabSize), final, table,
                                Value());
    else
      logits = mb.linear(final, "lm_head", m.hiddenSize, m.vocabSize, false);
    Value loss = CrossEntropyOp::create(
        b, loc, RankedTensorType::get({}, b.getF32Type()), logits, labels);
    LossOp::create(b, loc, loss);
  }

  // The job.
  std::optional<ZeroStage> zero;
  if (job.strategy.zero)
    zero = static_cast<ZeroStage>(*job.strategy.zero);
  auto strategy = StrategyAttr::get(&context, zero, job.strategy.offload,
                                    job.strategy.checkpointing,
                                    job.strategy.checkpointLayers,
                                    job.strategy.bucketBytes,
                                    job.strategy.prefetchDepth,
                                    job.strategy.offloadActivations,
                                    job.strategy.mlpTileTokens,
                                    job.strategy.tp, job.strategy.pp,
                                    job.strategy.cp, job.strategy.dpShard,
                                    job.strategy.ppSchedule,
                                    job.strategy.virtualStages);
  Method method = t.method;
  LoraAttr lora;
  if (method != Method::Full) {
    SmallVector<Attribute> targets;
    for (const std::string &target : t.lora.targets)
      targets.push_back(b.getStringAttr(target));
    lora = LoraAttr::get(&context, t.lora.rank, llvm::APFloat(t.lora.alpha),
                         llvm::APFloat(t.lora.dropout), b.getArrayAttr(targets));
  }
  JobOp::create(
      b, loc, b.getStringAttr("job"),
      FlatSymbolRefAttr::get(&context, modelName),
      FlatSymbolRefAttr::get(&context, "cluster"),
      b.getI64IntegerAttr(t.sequenceLength),
      b.getI64IntegerAttr(t.globalBatchSize),
      t.microBatchSize ? b.getI64IntegerAttr(*t.microBatchSize) : IntegerAttr(),
      PrecisionAttr::get(&context, t.precision),
      OptimizerAttr::get(&context, t.optimizer),
      MethodAttr::get(&context, method), lora,
      BackendAttr::get(&context, job.backend), strategy,
      /*gradient_accumulation=*/IntegerAttr(), /*decision=*/DecisionAttr(),
      /*estimate=*/EstimateAttr(), /*packing=*/b.getBoolAttr(t.packing),
      t.optimizerSettingsGiven ? optimizerSettings(&context, t)
                               : OptimizerSettingsAttr(),
      // Absent when default, as packing is printed only when false.
      t.truncation != Truncation::Drop
          ? TruncationAttr::get(&context, t.truncation)
          : TruncationAttr(),
      t.lossOn != LossOn::Assistant ? LossOnAttr::get(&context, t.lossOn)
                                    : LossOnAttr(),
      /*counts=*/CountsAttr());
  return module;
}

} // namespace mlir::swift
