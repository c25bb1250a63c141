//===- Device.h - the few device services that differ between CPU and CUDA =//
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace swift::rt {

/// Host memory the device can DMA from/to asynchronously (pinned on CUDA,
/// ordinary on a CPU run).
at::Tensor hostEmpty(int64_t n, at::ScalarType dtype, const at::Device &device);
/// Small per-step host buffers the device copies into asynchronously:
/// LibTorch's caching pinned allocator on CUDA (hostEmpty allocates and
/// frees pinned memory exactly, and freeing it waits for the device).
at::Tensor hostStaging(int64_t n, at::ScalarType dtype,
                       const at::Device &device);
/// `t` as `dtype` on `device`, without blocking the host: a host tensor is
/// staged through pinned memory on CUDA (a copy from pageable memory waits
/// for everything queued on the stream).
at::Tensor toDeviceAsync(const at::Tensor &t, const at::Device &device,
                         at::ScalarType dtype);
/// Blocks the host until all work queued on `device` is done.
void deviceSynchronize(const at::Device &device);
/// Peak bytes since the last reset: allocator-allocated bytes on CUDA,
/// the process's maximum resident set on CPU (which cannot be reset).
void resetPeakMemory(const at::Device &device);
int64_t peakMemoryBytes(const at::Device &device);
/// The allocator's allocated bytes now on CUDA; 0 on CPU.
int64_t allocatedMemoryBytes(const at::Device &device);
/// The caching allocator's peak of reserved bytes (segments taken from
/// CUDA: allocated bytes plus what fragmentation keeps); 0 off CUDA.
int64_t peakReservedBytes(const at::Device &device);
/// A point in the device's current stream the host can wait for (a CUDA
/// event); on CPU, where work is synchronous, both calls do nothing.
class HostFence {
public:
  /// `timed`: the event keeps the device's time, for secondsBetween.
  void record(const at::Device &device, bool timed = false);
  void wait();
  /// The device's current stream waits for it; the host does not (a
  /// fence recorded inside SideStream::run's work marks the side stream).
  void streamWait(const at::Device &device) const;
  /// Device seconds from `from` to `to` (both recorded timed and done);
  /// negative where the device keeps no clock (CPU).
  static double secondsBetween(const HostFence &from, const HostFence &to);

private:
  std::shared_ptr<void> event_;
};

/// A second queue of the device, for bandwidth-bound work that may run
/// beside the current stream's (the optimizer's update of a unit during
/// the backward of the units before it). On CPU, where work is
/// synchronous, run() calls `work` in place and join() does nothing.
class SideStream {
public:
  explicit SideStream(const at::Device &device);
  /// Queues `work` (which launches on the then-current stream) on the side
  /// stream, after everything queued so far on the current stream. `used`
  /// tensors, allocated on the current stream, are marked as used by the
  /// side stream: their memory is not handed out again before the side
  /// stream's work on them is done, even if they are freed first.
  void run(const std::function<void()> &work,
           const std::vector<at::Tensor> &used);
  /// The current stream waits for all the side stream's work so far.
  void join();

private:
  at::Device device_;
  std::shared_ptr<void> stream_; // c10::cuda::CUDAStream
};
/// The device's memory in bytes (CUDA: the GPU's total); 0 on CPU.
int64_t deviceTotalMemory(const at::Device &device);
/// Caps the caching allocator of `device` (CUDA) at `bytes`: an allocation
/// past it raises the out-of-memory error the device's own limit does.
void capDeviceMemory(const at::Device &device, int64_t bytes);
/// Number of CUDA devices (0 in a CPU-only build).
int cudaDeviceCount();
void setCudaDevice(int index);
/// Replaces a tensor's memory, keeping its storage object, so tensors saved
/// for backward that share the storage see the new memory (ZeRO-3).
void allocStorage(const at::Tensor &t);
void freeStorage(const at::Tensor &t);
/// The GPU's dense bf16 peak in FLOP/s for MFU (SWIFT_PEAK_TFLOPS
/// overrides; 989e12 for H100/H200); 0 when unknown (CPU).
double peakFlops(const at::Device &device);

} // namespace swift::rt
