//===- SwiftCost.cpp - CostOpInterface of the tensor ops ------------------===//
//
// FLOPs count multiply and add separately (a matmul of m x k by k x n is
// 2mkn). Element-wise ops count a few FLOPs per element; the time model treats
// them as memory-bound anyway. Saved tensors are what the math needs for the
// gradient; backend-specific extras (fp32 upcasts, workspaces) are added by
// the cost model, not here.
//
//===----------------------------------------------------------------------===//

#include "PerSample.h"

#include "swift/Dialect/SwiftOps.h"

using namespace mlir;
using namespace mlir::swift;

static unsigned bits(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementTypeBitWidth();
}

static SavedTensor save(StringRef what, Value v) {
  return {what, v, perSample(v), bits(v)};
}

static int64_t seqLen(Value v) {
  return cast<RankedTensorType>(v.getType()).getDimSize(1);
}

// Embedding: a gather forward, a scatter-add of the output gradient backward.
int64_t EmbeddingOp::getForwardFlopsPerSample() { return 0; }
int64_t EmbeddingOp::getBackwardFlopsPerSample(bool weightGrad) {
  return weightGrad ? perSample(getResult()) : 0;
}
void EmbeddingOp::getSavedTensors(SmallVectorImpl<SavedTensor> &saved) {
  saved.push_back(save("ids", getIds()));
}

// RMSNorm: square, mean, rsqrt, scale, weight: ~4 FLOPs per element.
int64_t RMSNormOp::getForwardFlopsPerSample() {
  return 4 * perSample(getInput());
}
int64_t RMSNormOp::getBackwardFlopsPerSample(bool) {
  return 8 * perSample(getInput());
}
void RMSNormOp::getSavedTensors(SmallVectorImpl<SavedTensor> &saved) {
  saved.push_back(save("input", getInput()));
  // One fp32 reciprocal RMS per normalized group.
  int64_t groups = perSample(getInput()) / getWeight().getType().getDimSize(0);
  saved.push_back({"rstd", Value(), groups, 32});
}

int64_t LinearOp::getForwardFlopsPerSample() {
  return 2 * seqLen(getInput()) * getInFeatures() * getOutFeatures();
}
int64_t LinearOp::getBackwardFlopsPerSample(bool weightGrad) {
  // dX = dY W always; dW = dY^T X only for trainable weights.
  return (weightGrad ? 2 : 1) * getForwardFlopsPerSample();
}
void LinearOp::getSavedTensors(SmallVectorImpl<SavedTensor> &saved) {
  saved.push_back(save("input", getInput()));
}

// RoPE: x * cos + rotate(x) * sin, 3 FLOPs per element; cos/sin tables are
// shared buffers, not per-op saved tensors.
int64_t RopeOp::getForwardFlopsPerSample() { return 3 * perSample(getInput()); }
int64_t RopeOp::getBackwardFlopsPerSample(bool) {
  return getForwardFlopsPerSample();
}
void RopeOp::getSavedTensors(SmallVectorImpl<SavedTensor> &) {}

int64_t AttentionOp::getForwardFlopsPerSample() {
  // QK^T and PV: 2 matmuls of 2*S*S*head_dim per head; causal masking halves
  // the work a flash kernel does.
  int64_t s = seqLen(getQuery());
  int64_t flops = 4 * s * s * int64_t(getHeadDim() * getNumHeads());
  return getCausal() ? flops / 2 : flops;
}
int64_t AttentionOp::getBackwardFlopsPerSample(bool) {
  // Flash backward recomputes QK^T and runs 4 more matmuls (dV, dP, dQ, dK):
  // 5 matmuls against the forward's 2.
  return getForwardFlopsPerSample() * 5 / 2;
}
void AttentionOp::getSavedTensors(SmallVectorImpl<SavedTensor> &saved) {
  saved.push_back(save("query", getQuery()));
  saved.push_back(save("key", getKey()));
  saved.push_back(save("value", getValue()));
  saved.push_back(save("output", getResult()));
  // fp32 log-sum-exp of each query row and head.
  saved.push_back({"logsumexp", Value(), seqLen(getQuery()) * int64_t(getNumHeads()), 32});
}

// silu(g) * u: sigmoid, two multiplies: ~5 FLOPs per element.
int64_t SiluMulOp::getForwardFlopsPerSample() {
  return 5 * perSample(getGate());
}
int64_t SiluMulOp::getBackwardFlopsPerSample(bool) {
  return 8 * perSample(getGate());
}
void SiluMulOp::getSavedTensors(SmallVectorImpl<SavedTensor> &saved) {
  saved.push_back(save("gate", getGate()));
  saved.push_back(save("up", getUp()));
}

int64_t AddOp::getForwardFlopsPerSample() { return perSample(getLhs()); }
int64_t AddOp::getBackwardFlopsPerSample(bool) { return 0; }
void AddOp::getSavedTensors(SmallVectorImpl<SavedTensor> &) {}

// log-softmax over the vocabulary (max, exp, sum, log, subtract) and a
// gather: ~5 FLOPs per logit.
int64_t CrossEntropyOp::getForwardFlopsPerSample() {
  return 5 * perSample(getLogits());
}
int64_t CrossEntropyOp::getBackwardFlopsPerSample(bool) {
  return 2 * perSample(getLogits());
}
void CrossEntropyOp::getSavedTensors(SmallVectorImpl<SavedTensor> &saved) {
  // The backward needs softmax(logits): implementations keep the logits (or
  // the log-probabilities) at the logits' width.
  saved.push_back(save("logits", getLogits()));
  saved.push_back(save("labels", getLabels()));
}
