//===- Storage.h - a unit's parameters: trainable, LoRA base, NF4 base ----===//
//
// Private to the engine room. The parameter storage of one unit (Plan.h's
// units), in three kinds, each owning its buffers and how it is gathered,
// released and (the trainable one) published:
//   TrainableParams  the parameters the optimizer updates: `full` (padded,
//                    compute dtype, device), at ZeRO-3 allocated by a
//                    gather and freed by a release, and `shard`, this
//                    rank's part (on the host with offload
//                    optimizer+params).
//   DenseBase        LoRA's frozen base in the compute dtype: resident at
//                    ZeRO 0-2, sharded and gathered like the parameters at
//                    ZeRO-3; never reduced or updated.
//   Nf4Base          QLoRA's decoder base as bytes (NF4 parts and the
//                    values kept as they are), resident or sharded the
//                    same way; dequantized into its dense buffer only
//                    around the unit's computations (materialize).
// Every gather goes through Collectives, which counts them (Engine.h
// StepResult::collectives).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/engine/Engine.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace swift::rt::engine {

/// The Engine's collectives, counted by kind. Over the shard group (the
/// world without HSDP, MeshComms): the units' state is sharded there, so
/// gathers, reduce-scatters, ZeRO-0's all-reduces (whose group is the
/// world) and the norm's sum over shards run on it; the replica group only
/// sums the reduced gradient shards across the groups.
class Collectives {
public:
  explicit Collectives(const MeshComms &mesh) : mesh_(mesh) {}
  Pending allReduceSum(at::Tensor t);
  Pending reduceScatterAdd(at::Tensor full, at::Tensor accum);
  Pending allGather(at::Tensor shard, at::Tensor full);
  /// HSDP: t := the sum over the replica group (in place). Nothing once
  /// abandon()ed.
  Pending allReduceReplicas(at::Tensor t);
  /// After a failure (the Engine's destructor, settling what is in flight):
  /// the collectives still to be issued from a Pending's wait are not, so
  /// that no rank waits for peers that never join.
  void abandon() { abandoned_ = true; }
  /// Whether there are replica groups to sum across (HSDP).
  bool hasReplicas() const { return mesh_.replica() != nullptr; }
  /// Since the current step's launch.
  CollectiveCounts counts;

private:
  const MeshComms &mesh_;
  bool abandoned_ = false;
};

/// Shards start on 64-element boundaries (256 B in fp32): NCCL and the
/// vectorized kernels want aligned chunks.
int64_t shardLength(int64_t numel, int64_t world);

/// Where a unit's parameters live: sharded over the ranks of the shard
/// group (ZeRO-3; `world` of them, this one `rank` among them), the shard
/// on the host (offload optimizer+params), in which dtype.
struct Placement {
  int world = 1, rank = 0;
  bool sharded = false, onHost = false;
  at::Device device = at::kCPU;
  at::ScalarType dtype = at::kFloat; // the compute dtype
};

/// Elements [keepBegin, keepBegin + keepLen) of a unit's flat fp32 state:
/// read from `source`, or random from (seed, stream), generated whole so
/// any world size starts from the same values.
at::Tensor initialRange(const UnitLayout &layout, int64_t padded,
                        int64_t keepBegin, int64_t keepLen,
                        const StateSource *source, uint64_t seed,
                        const at::Device &device);

/// The trainable parameters of a unit (the adapters in LoRA).
class TrainableParams {
public:
  /// `kept`: this rank's range of the compute copy (its shard at ZeRO-3,
  /// else the whole padded unit), on the device.
  TrainableParams(const UnitLayout &layout, const Placement &p,
                  at::Tensor kept);
  int64_t shardLen() const { return shardLen_; }
  int64_t padded() const { return padded_; }
  /// The gathered unit (padded); its storage is freed between a release
  /// and the next gather at ZeRO-3.
  const at::Tensor &full() const { return full_; }
  /// ZeRO-3: this rank's shard (host or device).
  const at::Tensor &shard() const { return shard_; }
  bool resident() const { return resident_; }

  /// ZeRO-3: allocates `full` and queues its all-gather (the shard
  /// uploaded first where it is on the host). No-op where resident.
  void gather(Collectives &c);
  /// Orders compute after the gather.
  void waitGathered() { pending_.wait(); }
  /// Frees `full`'s storage once its gather is complete.
  void release();
  /// Waits for a gather in flight, its error swallowed (destruction).
  void settle();
  /// The compute copy's part that an optimizer partition [offset, offset +
  /// len) updates: the ZeRO-3 shard, else that range of the whole unit.
  at::Tensor part(int64_t offset, int64_t len) const;
  /// After the optimizer: `updated` (its values, any dtype and device; or
  /// undefined: the part was written in place) into the part, then the
  /// updated parts all-gathered into `full` where `gatherParams`.
  void publish(const at::Tensor &updated, int64_t offset, int64_t len,
               bool gatherParams, Collectives &c,
               std::deque<Pending> &inFlight);

private:
  Placement p_;
  int64_t shardLen_ = 0, padded_ = 0;
  at::Tensor full_, shard_;
  bool resident_ = false;
  Pending pending_;
};

/// LoRA's frozen base of a unit: DenseBase or Nf4Base.
class FrozenBase {
public:
  virtual ~FrozenBase() = default;
  const UnitLayout &layout() const { return layout_; }
  virtual void gather(Collectives &c) = 0;
  void waitGathered() { pending_.wait(); }
  virtual void release() = 0;
  void settle();
  /// The dense values computations read (compute dtype, padded): QLoRA
  /// dequantizes them here and gives the storage back after (tensors
  /// autograd saved keep pointing at the storage object; the next
  /// materialize refills it identically). No-ops for a dense base.
  virtual void materialize() {}
  virtual void dematerialize() {}
  /// Views of the dense values by the layout's leaves (no gradient).
  std::vector<at::Tensor> leaves() const;
  /// Whether the base is kept quantized: its dense values exist only
  /// between a materialize and a dematerialize, and at ZeRO-3 only while
  /// the unit is gathered.
  virtual bool quantized() const { return false; }
  /// The whole base, flat (padded), compute dtype, on the device. Dense:
  /// gathered from the shards at ZeRO-3 (collective). Quantized: a
  /// dequantized copy, of a unit the caller has gathered.
  virtual at::Tensor values(Collectives &c) = 0;
  /// The buffers this rank keeps (not the transient gathered ones).
  virtual at::Tensor kept() const = 0;

protected:
  FrozenBase(const UnitLayout &layout, const Placement &p);
  UnitLayout layout_;
  Placement p_;
  int64_t padded_ = 0;
  at::Tensor full_; // the dense values (padded), compute dtype, device
  Pending pending_;
};

/// LoRA's base kept dense in the compute dtype.
class DenseBase : public FrozenBase {
public:
  /// `kept`: this rank's range (its shard at ZeRO-3, else the whole unit).
  DenseBase(const UnitLayout &layout, const Placement &p, at::Tensor kept);
  void gather(Collectives &c) override;
  void release() override;
  at::Tensor values(Collectives &c) override;
  at::Tensor kept() const override { return p_.sharded ? shard_ : full_; }

private:
  int64_t shardLen_ = 0;
  at::Tensor shard_;
};

/// Where one base parameter of a QLoRA unit sits in the unit's bytes: an
/// NF4 tensor's packed indices, absmax codes and fp32 absmax2 (`offset` its
/// absmax mean), or the compute-dtype values of a parameter kept as is.
/// Every part starts on a 64-byte boundary.
struct ByteSegment {
  bool nf4 = false;
  int64_t packed = 0, absmaxQ = 0, absmax2 = 0, values = 0; // byte offsets
  int64_t numel = 0, blocks = 0, blocks2 = 0;
  float offset = 0;
  std::vector<int64_t> shape;
};

/// QLoRA's decoder base: its 2-D parameters in NF4 (quantized from the
/// compute dtype, as bitsandbytes quantizes a bf16 model), the rest as
/// they are, in one byte buffer.
class Nf4Base : public FrozenBase {
public:
  /// `whole`: the whole unit's values (absmax means need whole tensors:
  /// every rank quantizes the whole unit), compute dtype.
  Nf4Base(const UnitLayout &layout, const Placement &p,
          const at::Tensor &whole);
  void gather(Collectives &c) override;
  void release() override;
  void materialize() override;
  void dematerialize() override;
  bool quantized() const override { return true; }
  at::Tensor values(Collectives &c) override;
  at::Tensor kept() const override { return p_.sharded ? shard_ : bytes_; }

private:
  std::vector<ByteSegment> segments_;
  int64_t len_ = 0, shardLen_ = 0, bytesPadded_ = 0;
  // Resident at ZeRO 0-2 (bytes_); at ZeRO-3 this rank's shard, gathered
  // into `gathered_` by gather().
  at::Tensor bytes_, shard_, gathered_;
  bool materialized_ = false;
};

/// The frozen base of unit u for a LoRA plan (QLoRA: NF4 for the decoder
/// units): `source`'s values (the pretrained weights) or the seed's.
std::unique_ptr<FrozenBase> makeBase(const Plan &plan, int u,
                                     const Placement &p,
                                     const StateSource *source, uint64_t seed);

} // namespace swift::rt::engine
