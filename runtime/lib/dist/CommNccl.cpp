//===- CommNccl.cpp - NCCL on a dedicated communication stream ------------===//
//
// Built only when LibTorch has CUDA. One NCCL communicator per rank, one
// high-priority communication stream. Ordering is by events only: issue()
// makes the comm stream wait for the compute stream's current point;
// Pending::wait() makes the compute stream wait for the collective. The
// Pending holds every tensor the collective touches, so their memory
// (allocated on the compute stream) cannot be reused before the compute
// stream is ordered after the collective: no record_stream needed.
//
//===----------------------------------------------------------------------===//
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/dist/Comm.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

namespace swift::rt {
namespace {

ncclDataType_t ncclType(at::ScalarType t) {
  switch (t) {
  case at::kFloat:
    return ncclFloat32;
  case at::kBFloat16:
    return ncclBfloat16;
  case at::kHalf:
    return ncclFloat16;
  case at::kDouble:
    return ncclFloat64;
  default:
    throw RuntimeFailure(std::string("NCCL: unsupported dtype ") +
                         c10::toString(t));
  }
}

class NcclComm final : public Comm {
public:
  explicit NcclComm(const CommOptions &opt)
      : device_(c10::DeviceIndex(opt.localRank)),
        stream_(
            c10::cuda::getStreamFromPool(/*isHighPriority=*/true, device_)) {
    rank_ = opt.rank;
    world_ = opt.world;
    SWIFT_ASSERT(opt.store, "NCCL needs a rendezvous store");
    ncclUniqueId id;
    const std::string key = "nccl_unique_id";
    if (rank_ == 0) {
      SWIFT_NCCL_CHECK(ncclGetUniqueId(&id));
      std::vector<uint8_t> bytes(sizeof id);
      std::memcpy(bytes.data(), &id, sizeof id);
      opt.store->set(key, bytes);
    } else {
      std::vector<uint8_t> bytes = opt.store->get(key); // waits for rank 0
      SWIFT_ASSERT(bytes.size() == sizeof id, "bad NCCL id in the store");
      std::memcpy(&id, bytes.data(), sizeof id);
    }
    c10::cuda::CUDAGuard guard(device_);
    SWIFT_NCCL_CHECK(ncclCommInitRank(&comm_, world_, id, rank_));
  }
  ~NcclComm() override {
    if (comm_)
      ncclCommDestroy(comm_);
  }

  Pending allReduceSum(at::Tensor t) override {
    enter();
    SWIFT_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(),
                                   ncclType(t.scalar_type()), ncclSum, comm_,
                                   stream_.stream()));
    return leave({t});
  }

  Pending reduceScatterAdd(at::Tensor full, at::Tensor accum) override {
    // Allocated on the compute stream before enter(): ordered like inputs.
    at::Tensor part =
        at::empty_like(accum, accum.options().dtype(full.dtype()));
    enter();
    SWIFT_NCCL_CHECK(ncclReduceScatter(
        full.data_ptr(), part.data_ptr(), accum.numel(),
        ncclType(full.scalar_type()), ncclSum, comm_, stream_.stream()));
    {
      c10::cuda::CUDAStreamGuard onComm(stream_);
      accum.add_(part);
    }
    return leave({full, part, accum});
  }

  Pending allGather(at::Tensor shard, at::Tensor full) override {
    enter();
    SWIFT_NCCL_CHECK(ncclAllGather(shard.data_ptr(), full.data_ptr(),
                                   shard.numel(), ncclType(shard.scalar_type()),
                                   comm_, stream_.stream()));
    return leave({shard, full});
  }

  void allReduceHost(std::vector<double> &values) override {
    at::Tensor t = at::tensor(values, at::TensorOptions().dtype(at::kDouble))
                       .to(at::Device(at::kCUDA, device_));
    allReduceSum(t).wait();
    at::Tensor h = t.cpu(); // synchronizes with the compute stream
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = h[int64_t(i)].item<double>();
  }

  void barrier() override {
    std::vector<double> one{1.0};
    allReduceHost(one);
  }

private:
  void enter() {
    at::cuda::CUDAEvent ready;
    ready.record(c10::cuda::getCurrentCUDAStream(device_));
    ready.block(stream_);
  }
  Pending leave(std::vector<at::Tensor> keepAlive) {
    auto done = std::make_shared<at::cuda::CUDAEvent>();
    done->record(stream_);
    c10::DeviceIndex dev = device_;
    return Pending([done, keepAlive = std::move(keepAlive), dev]() mutable {
      done->block(c10::cuda::getCurrentCUDAStream(dev));
      keepAlive.clear(); // safe: later compute-stream reuse is ordered
    });
  }

  c10::DeviceIndex device_;
  c10::cuda::CUDAStream stream_;
  ncclComm_t comm_ = nullptr;
};

} // namespace

std::unique_ptr<Comm> makeNcclComm(const CommOptions &opt) {
  return std::make_unique<NcclComm>(opt);
}

} // namespace swift::rt
