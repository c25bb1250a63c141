//===- Comm.h - collectives for the engine: NCCL, Gloo, or one rank -------===//
//
// Every rank issues the same collectives in the same order (the plan's
// schedule is identical on all ranks); backends rely on that for matching.
//
// Asynchrony and buffer lifetime. A collective returns a Pending. Until
// Pending::wait() has run, the collective may still read its inputs and
// write its outputs, so the Pending *owns* references to them: a buffer
// handed to a collective is never freed or reused before wait() (no
// record_stream). On CUDA, issue() makes the communication stream wait for
// an event recorded on the current (compute) stream, so the inputs written
// by earlier compute are ready and memory allocated on the compute stream
// may be used; wait() makes the compute stream wait for the collective's
// completion event: host never blocks. On CPU (Gloo), wait() blocks the
// host on the c10d Work; the collective runs on Gloo's threads meanwhile.
//
// Thread-safety: one Comm per rank, used from the main thread and from the
// autograd engine's thread during backward, never concurrently.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <functional>
#include <memory>
#include <string>

namespace swift::rt {

class Pending {
public:
  Pending() = default;
  explicit Pending(std::function<void()> finish) : finish_(std::move(finish)) {}
  Pending(Pending &&) = default;
  Pending &operator=(Pending &&) = default;
  /// Makes the results visible to subsequent compute and releases the
  /// buffers the collective held. Idempotent.
  void wait() {
    if (finish_) {
      auto f = std::move(finish_);
      finish_ = nullptr;
      f();
    }
  }
  bool done() const { return !finish_; }

private:
  std::function<void()> finish_;
};

class Comm {
public:
  virtual ~Comm() = default;
  int rank() const { return rank_; }
  int worldSize() const { return world_; }

  /// t := sum over ranks of t (in place).
  virtual Pending allReduceSum(at::Tensor t) = 0;
  /// full: (world * n) on every rank. accum (n) += rank's slice of the sum
  /// over ranks of `full`. `full` may be overwritten.
  virtual Pending reduceScatterAdd(at::Tensor full, at::Tensor accum) = 0;
  /// shard: (n); full: (world * n) := concatenation of every rank's shard.
  /// `full` is written through a raw alias (no autograd version bump), so it
  /// may be the storage of tensors saved for backward.
  virtual Pending allGather(at::Tensor shard, at::Tensor full) = 0;
  /// Blocking sum of a few doubles (loss, timings) on the host.
  virtual void allReduceHost(std::vector<double> &values) = 0;
  virtual void barrier() = 0;

protected:
  int rank_ = 0, world_ = 1;
};

struct CommOptions {
  std::string backend; // "gloo" | "nccl" | "local"
  int rank = 0, world = 1, localRank = 0;
  c10::intrusive_ptr<c10d::Store> store; // rendezvous (unused by "local")
  double timeoutSeconds = 60;            // a collective waiting longer fails
};

/// Creates opt.backend: "local" (one rank, no communication), "gloo", or
/// "nccl" (only when built with CUDA). Unknown or unavailable: UserError.
std::unique_ptr<Comm> makeComm(const CommOptions &opt);

/// The ranks as HSDP's 2-D mesh (plan strategy.dp_shard; plan::ShardGroups):
/// `shard` connects the ranks that shard each unit's state among them,
/// `replica` the ranks that hold the same shard in the other groups. Without
/// HSDP the shard group is the world and there is no replica communicator.
/// Replicate major: world rank r is shard rank r % S of group r / S and
/// replica rank r / S of group r % S (S = dp_shard); with S <= GPUs per node
/// a shard group is a node.
class MeshComms {
public:
  /// One shard group of every rank: `world` for both.
  explicit MeshComms(Comm &world) : world_(world), shard_(&world) {}
  /// HSDP: `world.worldSize() / shardRanks` groups of `shardRanks` ranks,
  /// each communicator from makeComm() with `opt`'s backend on its own
  /// prefix of `opt.store` ("shard/<g>", "replica/<g>"). `opt` is the
  /// world's. shardRanks == world size: as MeshComms(world).
  MeshComms(Comm &world, const CommOptions &opt, int shardRanks);
  Comm &world() const { return world_; }
  Comm &shard() const { return *shard_; }
  /// Null without HSDP (one replica).
  Comm *replica() const { return replica_.get(); }

private:
  Comm &world_;
  Comm *shard_;
  std::unique_ptr<Comm> ownShard_, replica_;
};

/// A tensor aliasing t's memory with its own version counter: writes through
/// it are invisible to autograd's saved-tensor checks.
at::Tensor rawAlias(const at::Tensor &t);

#ifdef SWIFT_WITH_CUDA
std::unique_ptr<Comm> makeNcclComm(const CommOptions &opt);
#endif

} // namespace swift::rt
