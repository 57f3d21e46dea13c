// The CUDA kernel against the CPU transforms on the same decoded images (skipped without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpu/gpu_test_util.h"
#include "frugal/gpu/plan.h"

#if FRUGAL_WITH_CUDA
#include <cuda_runtime_api.h>

#include "frugal/gpu/resize_kernel.h"
#endif

namespace frugal {
namespace {

#if FRUGAL_WITH_CUDA
bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Case {
  Image src;
  TransformOptions t;
  std::uint64_t seed;
};

// Runs one batch of `cases` (same size and channels) through the kernel; returns (B, C, S, S).
std::vector<float> run_kernel(const std::vector<Case>& cases, gpu::OutputType type, const gpu::Normalisation& norm) {
  const int S = cases[0].t.image_size, C = cases[0].src.channels;
  std::vector<gpu::ResizeJob> jobs;
  std::vector<void*> buffers;
  for (const Case& k : cases) {
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, k.src.pixels.size()), cudaSuccess);
    cudaMemcpy(d, k.src.pixels.data(), k.src.pixels.size(), cudaMemcpyHostToDevice);
    buffers.push_back(d);
    auto plan = gpu::plan_job(k.src.width, k.src.height, k.t, k.seed);
    gpu::ResizeJob j = plan->job;
    j.channels = C;
    j.pitch = k.src.width * C;
    j.src = static_cast<const std::uint8_t*>(d) + static_cast<std::size_t>(plan->view_y) * j.pitch + plan->view_x * C;
    jobs.push_back(j);
  }
  const std::size_t count = cases.size() * C * S * S;
  const std::size_t elem = type == gpu::OutputType::u8 ? 1 : type == gpu::OutputType::f16 ? 2 : 4;
  void *d_jobs = nullptr, *d_out = nullptr;
  EXPECT_EQ(cudaMalloc(&d_jobs, jobs.size() * sizeof(gpu::ResizeJob)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&d_out, count * elem), cudaSuccess);
  cudaMemcpy(d_jobs, jobs.data(), jobs.size() * sizeof(gpu::ResizeJob), cudaMemcpyHostToDevice);
  gpu::launch_resize(static_cast<gpu::ResizeJob*>(d_jobs), static_cast<int>(cases.size()), S, C, type, norm, d_out,
                     nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> out(count);
  if (type == gpu::OutputType::u8) {
    std::vector<std::uint8_t> u(count);
    cudaMemcpy(u.data(), d_out, count, cudaMemcpyDeviceToHost);
    std::copy(u.begin(), u.end(), out.begin());
  } else {
    EXPECT_EQ(type, gpu::OutputType::f32);
    cudaMemcpy(out.data(), d_out, count * 4, cudaMemcpyDeviceToHost);
  }
  for (void* b : buffers) cudaFree(b);
  cudaFree(d_jobs);
  cudaFree(d_out);
  return out;
}

std::vector<Case> cases(int channels) {
  std::vector<Case> v;
  for (std::uint64_t s = 0; s < 6; ++s) {
    Case k{testing::test_image(200 + 37 * static_cast<int>(s), 150 + 11 * static_cast<int>(s), channels, s),
           {},
           s * 31 + 1};
    k.t.image_size = 64;
    k.t.train = s != 5;  // one resize + center crop among the random crops
    v.push_back(std::move(k));
  }
  return v;
}

TEST(GpuKernel, ByteOutputMatchesCpuTransformsWithinOneLevel) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (int channels : {3, 1}) {
    auto cs = cases(channels);
    auto got = run_kernel(cs, gpu::OutputType::u8, {});
    const std::size_t per = static_cast<std::size_t>(channels) * 64 * 64;
    for (std::size_t b = 0; b < cs.size(); ++b) {
      Image want;
      transform_image(cs[b].src, cs[b].t, cs[b].seed, want);
      auto ref = testing::planar(want);
      float worst = 0;
      for (std::size_t i = 0; i < per; ++i) worst = std::max(worst, std::fabs(got[b * per + i] - ref[i]));
      EXPECT_LE(worst, 1.0f) << "image " << b << ", " << channels << " channels";
    }
  }
}

TEST(GpuKernel, NormalisedOutputMatchesCpuTransformsThenNormalise) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  gpu::Normalisation n;
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
  for (int c = 0; c < 3; ++c) {
    n.mean[c] = mean[c];
    n.inv_std[c] = 1.0f / stdv[c];
  }
  auto cs = cases(3);
  auto got = run_kernel(cs, gpu::OutputType::f32, n);
  const std::size_t plane = 64 * 64, per = 3 * plane;
  for (std::size_t b = 0; b < cs.size(); ++b) {
    Image want;
    transform_image(cs[b].src, cs[b].t, cs[b].seed, want);
    auto ref = testing::planar(want);
    float worst = 0;
    for (std::size_t i = 0; i < per; ++i) {
      int c = static_cast<int>(i / plane);
      float r = (ref[i] / 255.0f - mean[c]) / stdv[c];
      worst = std::max(worst, std::fabs(got[b * per + i] - r) * stdv[c] * 255.0f);  // in levels
    }
    EXPECT_LE(worst, 1.01f) << "image " << b;
  }
}
#else
TEST(GpuKernel, ByteOutputMatchesCpuTransformsWithinOneLevel) { GTEST_SKIP() << "built without CUDA"; }
#endif

}  // namespace
}  // namespace frugal
