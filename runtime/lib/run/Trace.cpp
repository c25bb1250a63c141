//===- Trace.cpp - a Kineto trace of one training step --------------------===//
#include "swift/Runtime/run/Trace.h"
#include "swift/Runtime/core/Check.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <set>

namespace swift::rt {

namespace prof = torch::profiler::impl;

void StepTrace::start(const at::Device &device) {
  prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  std::set<prof::ActivityType> activities{prof::ActivityType::CPU};
  if (device.is_cuda())
    activities.insert(prof::ActivityType::CUDA);
  try {
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
  } catch (const c10::Error &e) {
    SWIFT_CHECK(false, "--trace: this LibTorch cannot profile (",
                e.what_without_backtrace(), ")");
  }
  running_ = true;
}

void StepTrace::stop(const std::string &path) {
  if (!running_)
    return;
  running_ = false;
  try {
    torch::autograd::profiler::disableProfiler()->save(path);
  } catch (const c10::Error &e) {
    SWIFT_CHECK(false, "--trace ", path,
                ": this LibTorch cannot write traces (",
                e.what_without_backtrace(), ")");
  }
}

} // namespace swift::rt
