//===- Autograd.h - custom autograd nodes without torch::autograd::Function =//
//
// The engine needs code of its own to run at exact points of the backward
// pass (gather a unit's parameters, recompute, reduce its gradients). It gets
// them by making each unit one node of the outer autograd graph; the unit's
// own ops form an inner graph the node differentiates itself.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <vector>

namespace torch::autograd {
struct Node;
}

namespace swift::rt {

using TensorFn =
    std::function<std::vector<at::Tensor>(const std::vector<at::Tensor> &)>;
/// Backward of a custom node: gets one gradient per output (undefined when
/// that output got none), returns one per input (undefined when none).
using BackwardFn =
    std::function<std::vector<at::Tensor>(std::vector<at::Tensor> &&)>;

/// Makes `outputs` (computed without autograd history) the outputs of a new
/// node whose backward is `backward` and whose inputs are `inputs`. The node
/// owns `backward` and what it captures until backward has run.
void attachBackward(const std::vector<at::Tensor> &inputs,
                    std::vector<at::Tensor> &outputs, BackwardFn backward,
                    const char *name);

/// Whether a node over `inputs` would get a backward: grad mode is on and
/// an input requires grad (undefined inputs never do).
bool needsBackward(const std::vector<at::Tensor> &inputs);

/// Activation checkpointing of one region: runs fn(inputs) without saving
/// its internals; in backward runs it again with autograd and
/// differentiates it. `fn` must be deterministic and free of side effects.
/// A recompute's inputs as its backward keeps them: detached, with whether
/// each required grad; leaves() makes fresh leaves of them for the
/// recomputed graph.
struct SavedInputs {
  SavedInputs() = default;
  explicit SavedInputs(const std::vector<at::Tensor> &inputs);
  std::vector<at::Tensor> leaves() const;
  size_t size() const { return tensors.size(); }
  std::vector<at::Tensor> tensors;
  std::vector<bool> needsGrad;
};

std::vector<at::Tensor> recompute(const TensorFn &fn,
                                  const std::vector<at::Tensor> &inputs);

/// Inner-graph differentiation used by both: gradients of `outputs` (with
/// `grads`, undefined entries skipped) w.r.t. `inputs` (entries that do not
/// require grad get an undefined result).
std::vector<at::Tensor> differentiate(const std::vector<at::Tensor> &outputs,
                                      const std::vector<at::Tensor> &grads,
                                      const std::vector<at::Tensor> &inputs);

} // namespace swift::rt
