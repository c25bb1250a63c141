//===- Checkpoint.h - resumable training state, any world size -*- C++ -*-===//
//
// A checkpoint is the run's whole state after a step: every parameter's
// optimizer master and AdamW moments, and manifest.json (Manifest.h): the
// step (the lr schedule's position), the samples consumed (the data's
// position), the model it belongs to and the data it trained on. The state
// is stored per tensor, unsharded, in HF's safetensors layout
// (model.safetensors or shards + index: the byte range of each tensor), so
// it does not depend on the world size or ZeRO stage that wrote it: any
// plan of the same model resumes from it, each rank reading only its own
// ranges.
//
// SAVE_DIR/step-00000006/ is written as SAVE_DIR/.partial-step-00000006
// (every file fsynced), renamed whole, and only then is SAVE_DIR/latest
// rewritten (atomically) to name it: a run killed mid-save leaves the
// previous checkpoint loadable and `latest` pointing at it.
//
// A save directory belongs to one run (and the runs that resume from it):
// checkSaveDir refuses one that holds another run's checkpoints, and --keep
// orders checkpoints by their manifests' steps, never deleting the newest.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/io/Manifest.h"
#include "swift/Runtime/io/ModelState.h"
#include "swift/Runtime/io/SafeTensors.h"

#include <string>

namespace swift::rt {

/// The tokenizer files of an HF model directory (tokenizer.json,
/// tokenizer_config.json, special_tokens_map.json, generation_config.json,
/// tokenizer.model, vocab.json, merges.txt, added_tokens.json,
/// chat_template.jinja): name -> bytes, in that order. Exports and
/// checkpoints carry them, so that an export (after a resume too) is a
/// complete model directory.
using TokenizerFiles = std::vector<std::pair<std::string, std::string>>;
/// Those of them `dir` holds ("" : none), read whole when the run starts
/// (--keep may delete a resumed checkpoint before the export). A name that
/// is there but not a regular file (a directory, a FIFO; a symlink is
/// followed) is a UserError naming it.
TokenizerFiles readTokenizerFiles(const std::string &dir);
/// Writes them into `dir`, each atomically (as the export's other files).
void writeTokenizerFiles(const std::string &dir, const TokenizerFiles &files);

/// What saveCheckpoint writes where.
struct SaveRequest {
  std::string saveDir;
  int64_t step = 0;            // saved after this many steps
  int64_t samplesConsumed = 0; // the data's position after them
  std::optional<double> epoch; // JSONL data: samplesConsumed / its windows
  int keep = 0;                // keep the newest K checkpoints (0: all)
  /// --overwrite-save-dir's first save (checkSaveDir returned true): the
  /// save dir's other checkpoints are removed.
  bool replaceOthers = false;
  /// The text of the run's input HF config.json (or ""), kept as
  /// config.json so that an export after resuming preserves it.
  std::string hfConfig;
  /// LoRA: the frozen base's HF directory ("": the seed's random base),
  /// recorded so that a resume finds the same base.
  std::string baseWeights;
  DataRecord data; // what the run trains on
  /// Copied into the checkpoint (may be null: none).
  const TokenizerFiles *tokenizer = nullptr;
};

/// Saves `state` (an Engine's) as SAVE_DIR/step-<step>, points
/// SAVE_DIR/latest at it, removes `.partial-*` leftovers of killed saves and keeps the
/// newest `keep` checkpoints by their manifests' steps, this one always (a
/// directory whose manifest cannot be read is left, with a warning once).
/// Collective: every rank calls it; rank 0 writes. Returns the step
/// directory.
std::string saveCheckpoint(ModelState &state, const Plan &plan,
                           const SaveRequest &request);

/// Rank 0, before the first step: a save directory that holds checkpoints
/// (step-N directories, `latest`, `.partial-*` leftovers) belongs to the
/// run that wrote them and to runs resuming from one of them
/// (`resumedDir`, the resumed step directory, is in `saveDir`). Any other
/// run is refused (UserError) unless `overwrite` (--overwrite-save-dir):
/// then returns true, and its first save replaces them.
bool checkSaveDir(const std::string &saveDir, const std::string &resumedDir,
                  bool overwrite);

/// The checkpoint at `path`: a step directory, or a save directory (its
/// `latest`). Its manifest is read strictly (Manifest.h) and checked
/// against the plan's model before anything else is read.
class Checkpoint : public StateSource {
public:
  Checkpoint(const std::string &path, const Plan &plan);

  const std::string &dir() const { return dir_; }
  const Manifest &manifest() const { return manifest_; }
  const std::string &manifestPath() const { return manifestPath_; }
  /// The HF config.json the checkpoint keeps ("" when it has none).
  std::string hfConfig() const;
  /// LoRA: the frozen base's HF directory the run trained on ("": the
  /// seed's random base, or a full run's checkpoint).
  std::string baseWeights() const {
    return manifest_.baseWeights.value_or("");
  }
  int64_t step() const override { return manifest_.step; }
  void read(StateKind kind, const UnitLayout &layout, int64_t begin,
            int64_t count, at::Tensor dst) const override;

private:
  std::string dir_;
  std::string manifestPath_;
  Manifest manifest_;
  std::unique_ptr<safetensors::ModelWeights> state_;
};

} // namespace swift::rt
