//===- Parallel.h - one rank of a device mesh: profile, stages, memory -*- C++ -*-===//
//
// The mesh engines (backends torchtitan and megatron) split the model over
// tensor (tp), context (cp) and pipeline (pp) parallel ranks (Layout.h).
// The cost model prices one rank: its share of every op (rankProfile), the
// decoder layers of its pipeline stage (stageLayers), the micro-batches its
// schedule keeps in flight, and the model states the backend keeps for the
// stage's parameters. docs/cost-model.md, "Meshes (torchtitan, Megatron)",
// gives each formula with its source.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_COST_PARALLEL_H
#define SWIFT_COST_PARALLEL_H

#include "swift/Cost/Cost.h"

#include <cstdint>
#include <vector>

namespace swift::cost {

/// Whether `backend` is a mesh engine (tensor, pipeline, context parallel).
bool meshBackend(Backend backend);

/// One rank's share of the model under `layout` (numLayers unchanged: the
/// stage's layers are stageLayers'). Column linears (q, k, v, gate, up,
/// lm_head) split their output features, weights and FLOPs by tp; row
/// linears (o, down) their input features. Attention keeps heads / tp and
/// max(1, kv / tp) KV heads; with cp the rank's S / cp queries attend to all
/// S keys (keyLength), 1 / cp of the causal work (balanced chunks). Norms,
/// adds and RoPE: elements / (tp * cp) with sequence parallelism, / cp
/// without. sequenceLength becomes S / cp.
ModelProfile rankProfile(const ModelProfile &m, const Layout &layout,
                         bool sequenceParallel = true);

/// Decoder layers of each of the pp * v model chunks, in model order (chunk
/// c runs on pipeline rank c % pp). torchtitan (v0.2.2,
/// generate_llm_fqn_per_model_part): L + 2 "effective layers" (the
/// embedding and the head one each) split as evenly as they go, the first
/// (L+2) % (pp*v) chunks one more, the first and last chunk one decoder
/// layer fewer. Megatron: uniform when L % (pp*v) == 0; else, with
/// --account-for-embedding-in-pipeline-split and
/// --account-for-loss-in-pipeline-split, uniform over L + 2 when
/// (L+2) % (pp*v) == 0, the first and last chunk one fewer. Empty when the
/// backend cannot split L layers so (Megatron otherwise; either with more
/// chunks than L + 2).
std::vector<int64_t> stageLayers(int64_t layers, int64_t pp,
                                 int64_t virtualStages, Backend backend);

/// Decoder layers pipeline rank `rank` holds (its v chunks).
int64_t rankLayers(const std::vector<int64_t> &chunks, int64_t pp, int64_t rank);

/// What pipeline rank `rank` keeps in flight at its peak, under the layout's
/// schedule with `microBatches` micro-batches per step, in model chunks of
/// the rank (1F1B: min(m, pp - rank) micro-batches of the whole stage;
/// interleaved, Megatron-LM megatron/core/pipeline_parallel/schedules.py,
/// get_pp_rank_microbatches, interleaved: min(m*v, 2*(pp-rank-1) +
/// (v-1)*pp + 1) chunk forwards, the warm-up plus the steady state's one).
int64_t chunksInFlight(const Layout &layout, int64_t rank, int64_t microBatches);

/// Ranks the model states are sharded over: torchtitan's FSDP mesh
/// dp_shard * cp; Megatron's distributed optimizer over data-parallel x
/// context-parallel ranks of one replica; dp_shard elsewhere.
int64_t shardRanks(const Layout &layout, Backend backend, int64_t world);

/// Model states per rank of a stage with `parameters` (trained, this
/// rank's share), bytes: what is held through the step (parameters,
/// gradients, optimizer states) and what only exists in parts of it.
struct MeshStates {
  double parameters = 0, gradients = 0, optimizer = 0;
  double gathered = 0;             // unsharded bf16 parameters (FSDP) alive in backward
  double reduceBuffers = 0;        // reduce-scatter buffers in backward
  double optimizerTemporaries = 0; // the optimizer step's
  double total() const { return parameters + gradients + optimizer; }
};

/// torchtitan (FSDP2, bf16 parameters, fp32 reduce; zero 2 or 3, or DDP at
/// zero 0) and Megatron (bf16 parameters, fp32 gradients: DDP 18 P, the
/// distributed optimizer (6 + 12/d) P at zero 1, Megatron-FSDP like ZeRO-3
/// at zero 3). `unit`: the largest unit FSDP gathers, in parameters;
/// `pp`: the pipeline degree (torchtitan keeps a stage gathered and its
/// gradients unsharded through the step when pp > 1).
MeshStates meshStates(Backend backend, int zero, double parameters, double unit,
                      double shardRanks, int64_t pp);

/// The per-rank memory of one step on a mesh backend: pipeline stage 0 and
/// the last stage priced, the larger reported (its breakdown names
/// pipeline_buffers, tp_gathered and cp_buffers where they are not zero).
MemoryEstimate meshMemory(const ModelProfile &m, const TrainingSetup &setup,
                          const Hardware &hw, const Strategy &s);

/// The parts of a mesh backend's step, seconds (meshTime's). Per
/// micro-batch on the slowest stage: its compute (forward, backward,
/// recompute) and the exposed tensor- and context-parallel collectives
/// inside it; per step: the pipeline's fill and drain, its exposed p2p, the
/// data-parallel synchronization not hidden under the last backward, the
/// optimizer.
struct MeshTimeParts {
  double compute = 0, recompute = 0; // per micro-batch, slowest stage
  double tensorParallel = 0;         // per micro-batch, exposed
  double contextParallel = 0;        // per micro-batch, exposed
  double microBatch = 0;             // C = compute + tp + cp, slowest stage
  double bubble = 0;                 // (pp - 1) / v * C
  double pipelineP2p = 0;            // exposed
  double dataParallel = 0;           // exposed
  double communication = 0;          // all collectives, hidden or not
  double optimizer = 0;
  double step = 0;
};

MeshTimeParts meshTimeParts(const ModelProfile &m, const TrainingSetup &setup,
                            const Hardware &hw, const Strategy &s);

/// The time of one step on a mesh backend, from meshTimeParts.
TimeEstimate meshTime(const ModelProfile &m, const TrainingSetup &setup,
                      const Hardware &hw, const Strategy &s);

/// Why the mesh backend cannot run the strategy's layout; empty when it
/// can.
std::string meshUnsupportedReason(const ModelProfile &m,
                                  const TrainingSetup &setup,
                                  const Hardware &hw, const Strategy &s);

} // namespace swift::cost

#endif // SWIFT_COST_PARALLEL_H
