//===- Storage.cpp - a unit's parameters: trainable, LoRA base, NF4 base --===//
#include "Storage.h"

#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/core/TorchCompat.h"
#include "swift/Runtime/model/Nf4.h"

#include <cmath>

namespace swift::rt::engine {

Pending Collectives::allReduceSum(at::Tensor t) {
  ++counts.allReduce;
  return mesh_.shard().allReduceSum(std::move(t));
}

Pending Collectives::reduceScatterAdd(at::Tensor full, at::Tensor accum) {
  ++counts.reduceScatter;
  return mesh_.shard().reduceScatterAdd(std::move(full), std::move(accum));
}

Pending Collectives::allGather(at::Tensor shard, at::Tensor full) {
  ++counts.allGather;
  return mesh_.shard().allGather(std::move(shard), std::move(full));
}

Pending Collectives::allReduceReplicas(at::Tensor t) {
  SWIFT_ASSERT(mesh_.replica(), "no replica groups (not HSDP)");
  if (abandoned_)
    return {};
  ++counts.allReduceReplicas;
  return mesh_.replica()->allReduceSum(std::move(t));
}

int64_t shardLength(int64_t numel, int64_t world) {
  int64_t s = (numel + world - 1) / world;
  return (s + 63) / 64 * 64;
}

at::Tensor initialRange(const UnitLayout &layout, int64_t padded,
                        int64_t keepBegin, int64_t keepLen,
                        const StateSource *source, uint64_t seed,
                        const at::Device &device) {
  auto f32 = at::TensorOptions().device(device).dtype(at::kFloat);
  if (source) {
    at::Tensor init = at::empty({keepLen}, f32);
    source->read(StateKind::Master, layout, keepBegin, keepLen, init);
    return init;
  }
  at::Tensor whole = at::zeros({padded}, f32);
  at::Generator gen = compat::makeGenerator(device, seed);
  for (const ParamDesc &d : layout.params) {
    at::Tensor v = whole.narrow(0, d.offset, d.numel());
    if (d.init == Init::Normal)
      v.normal_(0.0, 0.02, gen); // HF initializer_range
    else if (d.init == Init::Ones)
      v.fill_(1.0);
    else if (d.init == Init::LoraA) {
      const double bound = 1.0 / std::sqrt(double(d.shape[1]));
      v.uniform_(-bound, bound, gen);
    }
  }
  return whole.narrow(0, keepBegin, keepLen);
}

namespace {

/// `t` copied into pinned host memory where the placement keeps shards on
/// the host (offload optimizer+params), else `t`.
at::Tensor toShardHome(const at::Tensor &t, const Placement &p) {
  if (!p.onHost)
    return t;
  at::Tensor h = hostEmpty(t.numel(), t.scalar_type(), p.device);
  h.copy_(t);
  return h;
}

/// A gathered buffer of `n` elements of `dtype` on the device, its storage
/// freed until a gather allocates it.
at::Tensor unallocated(int64_t n, at::ScalarType dtype, const Placement &p) {
  at::Tensor t =
      at::empty({n}, at::TensorOptions().device(p.device).dtype(dtype));
  freeStorage(t);
  return t;
}

/// Queues `full`'s all-gather from `shard` (uploaded first where it is on
/// the host).
Pending gatherInto(Collectives &c, const at::Tensor &shard,
                   const at::Tensor &full, const at::Device &device) {
  at::Tensor src = shard;
  if (src.device() != device) // offloaded: upload the shard
    src = src.to(device, /*non_blocking=*/true);
  return c.allGather(src, full);
}

void settlePending(Pending &p) {
  try {
    p.wait();
  } catch (...) {
  }
}

} // namespace

//===- TrainableParams ----------------------------------------------------===//

TrainableParams::TrainableParams(const UnitLayout &layout, const Placement &p,
                                 at::Tensor kept)
    : p_(p), shardLen_(shardLength(layout.numel, p.world)),
      padded_(shardLen_ * p.world) {
  if (!p.sharded) {
    full_ = std::move(kept);
    resident_ = true;
    return;
  }
  full_ = unallocated(padded_, p.dtype, p);
  shard_ = toShardHome(kept.clone(), p);
}

void TrainableParams::gather(Collectives &c) {
  if (resident_)
    return;
  allocStorage(full_);
  if (padded_ > 0)
    pending_ = gatherInto(c, shard_, full_, p_.device);
  resident_ = true;
}

void TrainableParams::release() {
  // The gather must be complete (and ordered before compute) before its
  // memory goes back to the allocator, which reuses it in compute order.
  pending_.wait();
  freeStorage(full_);
  resident_ = false;
}

void TrainableParams::settle() { settlePending(pending_); }

at::Tensor TrainableParams::part(int64_t offset, int64_t len) const {
  return p_.sharded ? shard_ : full_.narrow(0, offset, len);
}

void TrainableParams::publish(const at::Tensor &updated, int64_t offset,
                              int64_t len, bool gatherParams, Collectives &c,
                              std::deque<Pending> &inFlight) {
  if (padded_ == 0)
    return;
  // The updated partition, in the compute dtype, to where forward reads it.
  at::Tensor dst = part(offset, len);
  if (updated.defined() && updated.data_ptr() != dst.data_ptr())
    dst.copy_(updated, /*non_blocking=*/true);
  if (gatherParams)
    inFlight.push_back(c.allGather(dst, full_));
}

//===- FrozenBase, DenseBase ----------------------------------------------===//

FrozenBase::FrozenBase(const UnitLayout &layout, const Placement &p)
    : layout_(layout), p_(p),
      padded_(shardLength(layout.numel, p.world) * p.world) {}

void FrozenBase::settle() { settlePending(pending_); }

std::vector<at::Tensor> FrozenBase::leaves() const {
  std::vector<at::Tensor> leaves;
  for (const LeafDesc &d : layout_.leaves)
    leaves.push_back(full_.narrow(0, d.offset, d.numel()).view(d.shape));
  return leaves;
}

DenseBase::DenseBase(const UnitLayout &layout, const Placement &p,
                     at::Tensor kept)
    : FrozenBase(layout, p), shardLen_(shardLength(layout.numel, p.world)) {
  if (!p.sharded) {
    full_ = std::move(kept);
    return;
  }
  shard_ = toShardHome(kept, p);
  full_ = unallocated(padded_, p.dtype, p);
}

void DenseBase::gather(Collectives &c) {
  allocStorage(full_);
  pending_ = gatherInto(c, shard_, full_, p_.device);
}

void DenseBase::release() {
  pending_.wait();
  freeStorage(full_);
}

at::Tensor DenseBase::values(Collectives &c) {
  if (!p_.sharded)
    return full_;
  at::Tensor mine = shard_.to(p_.device);
  at::Tensor full = at::empty({padded_}, mine.options());
  c.allGather(mine, full).wait();
  return full;
}

//===- Nf4Base ------------------------------------------------------------===//

namespace {

/// A QLoRA unit's base as bytes: each 2-D parameter of `layout` (values in
/// `flat`, compute dtype) quantized to NF4, the others' values as they are,
/// every part on a 64-byte boundary; `segments` says where.
at::Tensor serializeQuantized(const UnitLayout &layout, const at::Tensor &flat,
                              std::vector<ByteSegment> &segments) {
  auto align = [](int64_t n) { return (n + 63) / 64 * 64; };
  std::vector<std::pair<Nf4Tensor, at::Tensor>> parts;
  int64_t at = 0;
  for (const ParamDesc &d : layout.params) {
    at::Tensor v = flat.narrow(0, d.offset, d.numel()).view(d.shape);
    ByteSegment g;
    g.numel = d.numel();
    g.shape = d.shape;
    if (d.shape.size() == 2) {
      Nf4Tensor q = quantizeNf4(v);
      g.nf4 = true;
      g.blocks = q.absmaxQ.numel();
      g.blocks2 = q.absmax2.numel();
      g.offset = q.offset;
      g.packed = at;
      at = align(at + q.packed.numel());
      g.absmaxQ = at;
      at = align(at + g.blocks);
      g.absmax2 = at;
      at = align(at + 4 * g.blocks2);
      parts.push_back({std::move(q), at::Tensor()});
    } else {
      g.values = at;
      at = align(at + v.element_size() * g.numel);
      parts.push_back({Nf4Tensor(), v});
    }
    segments.push_back(std::move(g));
  }
  at::Tensor bytes = at::zeros({at}, flat.options().dtype(at::kByte));
  auto put = [&](int64_t off, const at::Tensor &t) {
    bytes.narrow(0, off, t.numel() * t.element_size())
        .copy_(t.contiguous().view({-1}).view(at::kByte));
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    const ByteSegment &g = segments[i];
    if (g.nf4) {
      put(g.packed, parts[i].first.packed);
      put(g.absmaxQ, parts[i].first.absmaxQ);
      put(g.absmax2, parts[i].first.absmax2);
    } else {
      put(g.values, parts[i].second);
    }
  }
  return bytes;
}

/// The NF4 tensor of segment `g` as views of the unit's bytes.
Nf4Tensor nf4View(const at::Tensor &bytes, const ByteSegment &g) {
  Nf4Tensor q;
  q.packed = bytes.narrow(0, g.packed, g.numel / 2);
  q.absmaxQ = bytes.narrow(0, g.absmaxQ, g.blocks);
  q.absmax2 = bytes.narrow(0, g.absmax2, 4 * g.blocks2).view(at::kFloat);
  q.offset = g.offset;
  q.numel = g.numel;
  q.shape = g.shape;
  return q;
}

} // namespace

Nf4Base::Nf4Base(const UnitLayout &layout, const Placement &p,
                 const at::Tensor &whole)
    : FrozenBase(layout, p) {
  at::Tensor bytes = serializeQuantized(layout_, whole, segments_);
  len_ = bytes.numel();
  shardLen_ = shardLength(len_, p.world);
  bytesPadded_ = shardLen_ * p.world;
  bytes = at::constant_pad_nd(bytes, {0, bytesPadded_ - len_});
  if (!p.sharded) {
    bytes_ = bytes;
  } else {
    shard_ =
        toShardHome(bytes.narrow(0, p.rank * shardLen_, shardLen_).clone(), p);
    gathered_ = unallocated(bytesPadded_, at::kByte, p);
  }
  full_ = unallocated(padded_, p.dtype, p);
}

void Nf4Base::gather(Collectives &c) {
  allocStorage(gathered_);
  pending_ = gatherInto(c, shard_, gathered_, p_.device);
}

void Nf4Base::release() {
  pending_.wait();
  freeStorage(gathered_);
}

void Nf4Base::materialize() {
  if (materialized_)
    return;
  const at::Tensor &bytes = p_.sharded ? gathered_ : bytes_;
  allocStorage(full_);
  // Written through an alias of the storage: the tensors autograd saved
  // check full_'s version counter, and these bytes are the same values.
  at::Tensor raw = at::from_blob(full_.data_ptr(), {padded_}, full_.options());
  const int64_t elem = at::elementSize(p_.dtype);
  for (size_t i = 0; i < layout_.params.size(); ++i) {
    const ParamDesc &d = layout_.params[i];
    const ByteSegment &g = segments_[i];
    at::Tensor dst = raw.narrow(0, d.offset, d.numel()).view(d.shape);
    if (!g.nf4) {
      dst.copy_(bytes.narrow(0, g.values, g.numel * elem)
                    .view(p_.dtype)
                    .view(d.shape));
      continue;
    }
    dequantizeNf4Into(nf4View(bytes, g), dst);
  }
  materialized_ = true;
}

void Nf4Base::dematerialize() {
  if (!materialized_)
    return;
  freeStorage(full_);
  materialized_ = false;
}

at::Tensor Nf4Base::values(Collectives &) {
  materialize();
  at::Tensor copy = full_.clone();
  dematerialize();
  return copy;
}

//===- makeBase -----------------------------------------------------------===//

std::unique_ptr<FrozenBase> makeBase(const Plan &plan, int u,
                                     const Placement &p,
                                     const StateSource *source, uint64_t seed) {
  const ModelConfig &m = plan.model;
  const UnitLayout layout = unitLayout(m, u);
  const int64_t shardLen = shardLength(layout.numel, p.world);
  const int64_t padded = shardLen * p.world;
  // QLoRA decoder units quantize whole tensors: they read the unit.
  const bool nf4 =
      plan.training.method == Method::QLora && u >= 1 && u <= m.numLayers;
  const bool whole = !p.sharded || nf4;
  const int64_t begin = whole ? 0 : p.rank * shardLen;
  const int64_t len = whole ? padded : shardLen;
  at::Tensor values =
      initialRange(layout, padded, begin, len, source, seed, p.device)
          .to(p.dtype);
  if (nf4)
    return std::make_unique<Nf4Base>(layout, p, values);
  return std::make_unique<DenseBase>(layout, p, values);
}

} // namespace swift::rt::engine
