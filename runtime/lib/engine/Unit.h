//===- Unit.h - one unit of the Engine: storage, gradients, optimizer -----===//
//
// Private to the engine room. What the Engine keeps per unit (Plan.h's
// units; Engine.h describes the buffers): its parameter storage
// (Storage.h), its gradient buffers, its optimizer state (Optimizer.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Optimizer.h"
#include "Storage.h"

#include <memory>
#include <vector>

namespace swift::rt::engine {

struct Unit {
  int id = 0;
  UnitLayout layout;
  // Its parameters (LoRA: the adapters) and LoRA's frozen base.
  std::unique_ptr<TrainableParams> params;
  std::unique_ptr<FrozenBase> base;
  OptimizerState opt;
  at::Tensor grad;      // (padded) ZeRO 0/1
  at::Tensor gradShard; // (shardLen) ZeRO 1-3
  at::Tensor microGrad; // (padded) ZeRO 2/3, transient
  // `grad` still holds last step's values: the step's first gradient is
  // copied into it, not added.
  bool gradFresh = false;
  // Per leaf of this unit's computation (makeLeaves order: its owners'
  // leaves): the op that computes the leaf's gradient writes it into the
  // owner's buffer (a GradSink) instead of returning it through autograd.
  std::vector<bool> sunk;
  int64_t padded() const { return params->padded(); }
};

} // namespace swift::rt::engine
