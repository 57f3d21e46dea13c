// What the machine offers (probe_gpu) and the CUDA runtime helpers.
#include "gpu/plan.h"

#include "frugal/error.h"

#if FRUGAL_WITH_CUDA
#include "gpu/cuda_util.h"
#endif

namespace frugal::gpu {

#if FRUGAL_WITH_CUDA
void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw Error(ErrorKind::io, std::string("CUDA: ") + call + " failed: " + cudaGetErrorString(status) +
                                 "; check the driver with nvidia-smi and the GPU memory with frugal doctor");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

void* DeviceBuffer::reserve(std::size_t bytes) {
  if (bytes <= bytes_ && ptr_) return ptr_;
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
  std::size_t want = bytes + bytes / 4;  // slack, so slowly growing batches do not reallocate each time
  check_cuda(cudaMalloc(&ptr_, want), "cudaMalloc");
  bytes_ = want;
  return ptr_;
}
#endif

GpuAvailability probe_gpu() {
  GpuAvailability g;
#if FRUGAL_WITH_CUDA
  g.cuda_built = true;
#if FRUGAL_WITH_NVJPEG
  g.nvjpeg_built = true;
#endif
  int n = 0;
  cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    g.problem = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(st);
    cudaGetLastError();  // clear it, so later CUDA calls (LibTorch's) do not see it
    n = 0;
  }
  g.devices = n;
  if (n > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) g.device_name = prop.name;
  }
#endif
  return g;
}

}  // namespace frugal::gpu
