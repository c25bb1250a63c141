//===- Checkpoint.h - resumable training state, any world size -*- C++ -*-===//
//
// A checkpoint is the run's whole state after a step: every parameter's
// optimizer master and AdamW moments, the step (which fixes the data
// position: step x global_batch_size samples, and the lr schedule) and the
// model it belongs to. It is stored per tensor, unsharded, in HF's
// safetensors layout (model.safetensors or shards + index: the byte range
// of each tensor) next to manifest.json, so it does not depend on the world
// size or ZeRO stage that wrote it: any plan of the same model resumes from
// it, each rank reading only its own ranges.
//
// SAVE_DIR/step-00000006/ is written as SAVE_DIR/.partial-step-00000006
// (every file fsynced), renamed whole, and only then is SAVE_DIR/latest
// rewritten (atomically) to name it: a run killed mid-save leaves the
// previous checkpoint loadable and `latest` pointing at it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/Engine.h"
#include "swift/Runtime/SafeTensors.h"

#include <string>

namespace swift::rt {

/// Saves `engine`'s state after `step` steps as SAVE_DIR/step-<step>,
/// points SAVE_DIR/latest at it and keeps the newest `keep` checkpoints
/// (0: all). Collective: every rank calls it; rank 0 writes. `hfConfig`
/// (the text of the run's input HF config.json, or "") is kept in the
/// checkpoint as config.json, so that an export after resuming preserves it. Returns the
/// step directory.
/// `baseWeights`: a LoRA run's frozen base (its HF directory, "" for the
/// seed's random base), recorded so that a resume finds the same base.
std::string saveCheckpoint(Engine &engine, const Plan &plan,
                           const std::string &saveDir, int64_t step, int keep,
                           const std::string &hfConfig = "",
                           const std::string &baseWeights = "");

/// The checkpoint at `path`: a step directory, or a save directory (its
/// `latest`). Checked against the plan's model before anything is read.
class Checkpoint : public StateSource {
public:
  Checkpoint(const std::string &path, const Plan &plan);

  const std::string &dir() const { return dir_; }
  /// The HF config.json the checkpoint keeps ("" when it has none).
  std::string hfConfig() const;
  /// LoRA: the frozen base's HF directory the run trained on ("": the
  /// seed's random base, or a full run's checkpoint).
  const std::string &baseWeights() const { return baseWeights_; }
  int64_t step() const override { return step_; }
  void read(StateKind kind, const UnitLayout &layout, int64_t begin,
            int64_t count, at::Tensor dst) const override;

private:
  std::string dir_;
  int64_t step_ = 0;
  std::string baseWeights_;
  std::unique_ptr<safetensors::ModelWeights> state_;
};

} // namespace swift::rt
