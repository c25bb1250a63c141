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

/// One tile of tiledRecompute: `rows` are the row inputs' rows of tile
/// number `tile` (0, 1, ...), `shared` the shared inputs whole; returns the
/// tile's output rows. `value` false: only the graph is differentiated (the
/// backward's recompute), so the output's values may be left uninitialized.
/// Must be deterministic for a given tile (a random draw seeded by `tile`).
using TileFn = std::function<at::Tensor(const std::vector<at::Tensor> &rows,
                                        const std::vector<at::Tensor> &shared,
                                        int64_t tile, bool value)>;

/// recompute() of a row-wise region in tiles of `tile` rows: the row inputs
/// (each (R, ...), the same R; undefined ones allowed) are cut into tiles,
/// the output (R, outCols) is the tiles' outputs one under the other. The
/// forward runs each tile without autograd and keeps none of its internals;
/// the backward runs tile after tile (0 first) with autograd and
/// differentiates it, so fn's intermediates exist for one tile at a time,
/// forward and backward. Kept for backward: the inputs (detached). The row
/// inputs' gradients are written tile by tile into (R, ...) tensors; the
/// shared inputs' are summed over the tiles (in fp32 at least, then cast to
/// the input's dtype). fn writing a gradient elsewhere (a GradSink) must
/// add into it from tile 1 on. `value` false: the forward computes nothing
/// (output uninitialized), only the node (full checkpointing's recompute).
/// `residual` >= 0: the row input of that index is added unchanged to fn's
/// output (a residual stream): its gradient is the output's, passed on
/// without a copy, and the recompute does not differentiate it.
at::Tensor tiledRecompute(const TileFn &fn,
                          const std::vector<at::Tensor> &rowInputs,
                          const std::vector<at::Tensor> &shared, int64_t tile,
                          int64_t outCols, bool value = true,
                          int64_t residual = -1);

/// Inner-graph differentiation used by both: gradients of `outputs` (with
/// `grads`, undefined entries skipped) w.r.t. `inputs` (entries that do not
/// require grad get an undefined result).
std::vector<at::Tensor> differentiate(const std::vector<at::Tensor> &outputs,
                                      const std::vector<at::Tensor> &grads,
                                      const std::vector<at::Tensor> &inputs);

} // namespace swift::rt
