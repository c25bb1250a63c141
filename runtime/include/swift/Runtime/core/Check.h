//===- Check.h - error reporting for swift-run ----------------------------===//
//
// SWIFT_CHECK / SWIFT_ASSERT and the two error types come from the plan
// layer (swift/Plan/Error.h); this adds the CUDA and NCCL call checks, which
// throw RuntimeFailure naming file:line and the call.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Error.h"

namespace swift::rt {
using plan::RuntimeFailure;
using plan::UserError;

/// A collective that broke under this rank: when a peer dies, every other
/// rank sees this, so the launcher reports it only when no rank left a
/// cause (its own error, or a signal the launcher did not send).
struct PeerFailure : RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};
} // namespace swift::rt

#define SWIFT_CUDA_CHECK(call)                                                 \
  do {                                                                         \
    cudaError_t swiftErr_ = (call);                                            \
    if (swiftErr_ != cudaSuccess)                                              \
      throw ::swift::plan::RuntimeFailure(::swift::plan::detail::concat(           \
          __FILE__, ":", __LINE__, ": ", #call,                                \
          " failed: ", cudaGetErrorString(swiftErr_)));                        \
  } while (0)

#define SWIFT_NCCL_CHECK(call)                                                 \
  do {                                                                         \
    ncclResult_t swiftRes_ = (call);                                           \
    if (swiftRes_ != ncclSuccess)                                              \
      throw ::swift::plan::RuntimeFailure(::swift::plan::detail::concat(           \
          __FILE__, ":", __LINE__, ": ", #call,                                \
          " failed: ", ncclGetErrorString(swiftRes_)));                        \
  } while (0)
