// One thread per output pixel, all channels; the jobs of a batch differ in size, so each block
// row (blockIdx.y) is one image and blocks stride over its pixels.
#include <cuda_fp16.h>

#include "frugal/gpu/cuda_util.h"
#include "frugal/gpu/resize_kernel.h"

namespace frugal::gpu {
namespace {

__global__ void resize_kernel(const ResizeJob* __restrict__ jobs, int size, int channels, int type, Normalisation norm,
                              void* __restrict__ out) {
  const int b = blockIdx.y;
  const int plane = size * size;
  const ResizeJob job = jobs[b];
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < plane; p += gridDim.x * blockDim.x) {
    const int y = p / size, x = p % size;
    float v[3];
    resize_pixel(job, size, x, y, v);
    const long long base = static_cast<long long>(b) * channels * plane + p;
    for (int c = 0; c < channels; ++c) {
      const long long at = base + static_cast<long long>(c) * plane;
      if (type == static_cast<int>(OutputType::u8)) {
        static_cast<std::uint8_t*>(out)[at] = to_level(v[c]);
      } else {
        float n = (v[c] * (1.0f / 255.0f) - norm.mean[c]) * norm.inv_std[c];
        if (type == static_cast<int>(OutputType::f32))
          static_cast<float*>(out)[at] = n;
        else
          static_cast<__half*>(out)[at] = __float2half_rn(n);
      }
    }
  }
}

}  // namespace

void launch_resize(const ResizeJob* jobs, int batch, int size, int channels, OutputType type, const Normalisation& norm,
                   void* out, cudaStream_t stream) {
  if (batch <= 0) return;
  constexpr int threads = 256;
  const int plane = size * size;
  const int blocks_x = (plane + threads - 1) / threads < 64 ? (plane + threads - 1) / threads : 64;
  resize_kernel<<<dim3(blocks_x, batch), threads, 0, stream>>>(jobs, size, channels, static_cast<int>(type), norm, out);
  check_cuda(cudaGetLastError(), "resize_kernel launch");
}

}  // namespace frugal::gpu
