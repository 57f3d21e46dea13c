// CUDA runtime helpers for frugal_gpu (only built with FRUGAL_WITH_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace frugal::gpu {

// Throws Error(io) naming the call and CUDA's message when `status` is not cudaSuccess.
void check_cuda(cudaError_t status, const char* call);

// Where this library's device memory comes from (the decode arena, uploads, and nvJPEG's own
// buffers through its allocator hooks): cudaMalloc/cudaFree unless the LibTorch side (GpuLoader;
// this library does not link LibTorch) plugs in PyTorch's caching allocator. Then that memory
// counts against --gpu-memory, an exhausted device is the allocator's one out-of-memory error,
// and freeing does not synchronise the device. `alloc` throws when out of memory; it is called
// on the stream that will use the memory.
struct DeviceAllocator {
  void* (*alloc)(std::size_t bytes, cudaStream_t stream) = nullptr;
  void (*free)(void* ptr) = nullptr;
};
void set_device_allocator(const DeviceAllocator& allocator);  // before the first decoder exists
const DeviceAllocator& device_allocator();

// A device allocation that only grows; contents are not kept across a growth.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // At least `bytes`, from device_allocator() on `stream`; the caller has synchronised every
  // stream that used the old memory.
  void* reserve(std::size_t bytes, cudaStream_t stream = nullptr);
  void* data() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace frugal::gpu
