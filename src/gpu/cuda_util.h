// CUDA runtime helpers for frugal_gpu (only built with FRUGAL_WITH_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace frugal::gpu {

// Throws Error(io) naming the call and CUDA's message when `status` is not cudaSuccess.
void check_cuda(cudaError_t status, const char* call);

// A device allocation that only grows; contents are not kept across a growth.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // At least `bytes`; the caller has synchronised every stream that used the old memory.
  void* reserve(std::size_t bytes);
  void* data() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace frugal::gpu
