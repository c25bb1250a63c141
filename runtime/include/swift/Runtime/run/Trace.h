//===- Trace.h - a Kineto trace of one training step ----------------------===//
//
// `swift-run --trace FILE` records every operator and CUDA kernel of one
// step (the third, or the last of fewer) with LibTorch's Kineto profiler
// and writes a Chrome trace (chrome://tracing, Perfetto);
// benchmarks/runtime/trace_summary.py sums it by kernel kind.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace swift::rt {

class StepTrace {
public:
  /// Starts recording CPU operators and, on CUDA, kernels. Throws UserError
  /// when this LibTorch has no Kineto profiler.
  void start(const at::Device &device);
  /// Stops and writes the trace to `path`.
  void stop(const std::string &path);

private:
  bool running_ = false;
};

} // namespace swift::rt
