//===- ModelState.h - what io reads the state from and writes it through -===//
//
// The file formats (Weights.h, Checkpoint.h) read a run's initial state and
// write its trained one without knowing who holds it: a StateSource is
// what they read from (pretrained weights, a checkpoint, a peft adapter),
// a ModelState what they write (the Engine implements it). So io never
// includes the engine above it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/model/Model.h"

#include <ATen/ATen.h>

#include <cstdint>

namespace swift::rt {

/// The optimizer's state of a parameter, as saved and restored.
enum class StateKind { Master, ExpAvg, ExpAvgSq };

/// Where a run's initial state comes from: pretrained weights (masters
/// only, fresh optimizer) or a checkpoint (everything, at a step).
class StateSource {
public:
  virtual ~StateSource() = default;
  /// Elements [begin, begin + count) of `layout`'s flat buffer of `kind`
  /// as fp32 into `dst` (any device); elements past layout.numel are zero.
  virtual void read(StateKind kind, const UnitLayout &layout, int64_t begin,
                    int64_t count, at::Tensor dst) const = 0;
  /// Optimizer steps already taken; 0: the moments start at zero and are
  /// not read.
  virtual int64_t step() const { return 0; }
};

/// A run's current state, unit by unit (Plan.h's units), as the exports
/// and the checkpoint writer read it. Its reads are collective where the
/// state is sharded: every rank calls them for the same units in the same
/// order.
class ModelState {
public:
  virtual ~ModelState() = default;
  /// This process's rank (rank 0 writes the files).
  virtual int rank() const = 0;
  /// Unit u's optimizer state of `kind` (Master: the fp32 masters, or the
  /// bf16 parameters in pure bf16), flat (padded), in the dtype it is kept.
  virtual at::Tensor stateUnit(int u, StateKind kind = StateKind::Master) = 0;
  /// LoRA: unit u's frozen base, flat (padded), compute dtype.
  virtual at::Tensor baseUnit(int u) = 0;
  /// The dtype stateUnit() returns for `kind` (the same for every unit).
  virtual at::ScalarType stateDtype(StateKind kind) const = 0;
};

} // namespace swift::rt
