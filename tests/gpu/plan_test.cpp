// The CPU half of the GPU path, run for real without a GPU: the crops drawn for the kernel, and
// the kernel's own per-pixel math evaluated on the host, must reproduce src/image's transforms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "frugal/error.h"
#include "gpu/gpu_test_util.h"
#include "gpu/plan.h"

namespace frugal {
namespace {

using testing::planar;
using testing::test_image;

// Largest |kernel - CPU| in levels, after rounding the kernel's output as the u8 path does.
float max_level_diff(const Image& src, const TransformOptions& t, std::uint64_t seed, bool* flipped = nullptr) {
  auto plan = gpu::plan_job(src.width, src.height, t, seed);
  EXPECT_TRUE(plan.has_value());
  if (!plan) return 1e9f;
  gpu::ResizeJob job = plan->job;
  job.channels = src.channels;
  job.pitch = src.width * src.channels;
  job.src = src.pixels.data() + static_cast<std::size_t>(plan->view_y) * job.pitch + plan->view_x * src.channels;
  if (flipped) *flipped = job.flip;
  std::vector<float> got(static_cast<std::size_t>(t.image_size) * t.image_size * src.channels);
  gpu::resize_on_host(job, t.image_size, got.data());
  Image want;
  transform_image(src, t, seed, want);
  std::vector<float> ref = planar(want);
  EXPECT_EQ(ref.size(), got.size());
  float worst = 0;
  for (std::size_t i = 0; i < ref.size() && i < got.size(); ++i)
    worst = std::max(worst, std::fabs(gpu::to_level(got[i]) - ref[i]));
  return worst;
}

TEST(GpuPlan, KernelMathMatchesCpuRandomResizedCropAndFlip) {
  Image img = test_image(257, 190, 3, 1);
  TransformOptions t;
  t.image_size = 64;
  int flips = 0;
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    bool flipped = false;
    EXPECT_LE(max_level_diff(img, t, seed * 7919 + 3, &flipped), 1.0f) << "seed " << seed;
    flips += flipped;
  }
  EXPECT_GT(flips, 0);   // both branches of the flip were compared
  EXPECT_LT(flips, 24);
}

TEST(GpuPlan, KernelMathMatchesCpuWhenUpscalingGray) {
  Image img = test_image(70, 50, 1, 2);
  TransformOptions t;
  t.image_size = 96;
  for (std::uint64_t seed = 0; seed < 8; ++seed) EXPECT_LE(max_level_diff(img, t, seed), 1.0f) << "seed " << seed;
}

TEST(GpuPlan, KernelMathMatchesCpuResizeCenterCrop) {
  TransformOptions t;
  t.image_size = 56;
  t.train = false;
  EXPECT_LE(max_level_diff(test_image(300, 200, 3, 3), t, 0), 1.0f);
  EXPECT_LE(max_level_diff(test_image(120, 333, 3, 4), t, 0), 1.0f);
  EXPECT_LE(max_level_diff(test_image(64, 64, 1, 5), t, 0), 1.0f);
}

TEST(GpuPlan, IdentityJobCopiesPixelsExactly) {
  Image img = test_image(32, 32, 3, 6);
  gpu::ResizeJob job = gpu::identity_job(img.pixels.data(), 32, 3);
  std::vector<float> got(32 * 32 * 3);
  gpu::resize_on_host(job, 32, got.data());
  std::vector<float> want = planar(img);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
}

TEST(GpuPlan, SmallImageTransformsAreLeftToTheCpu) {
  TransformOptions t;
  t.small = true;
  EXPECT_FALSE(gpu::plan_job(28, 28, t, 0).has_value());
}

gpu::GpuAvailability full_gpu() {
  gpu::GpuAvailability g;
  g.cuda_built = g.nvjpeg_built = true;
  g.devices = 1;
  g.device_name = "Fake GPU";
  return g;
}

TEST(GpuDecodeChoice, AutoPicksGpuOnlyWhenEverythingIsThere) {
  auto c = gpu::choose_decode(gpu::DecodeMode::automatic, full_gpu(), false);
  EXPECT_TRUE(c.gpu);
  EXPECT_NE(c.reason.find("Fake GPU"), std::string::npos);

  gpu::GpuAvailability no_device = full_gpu();
  no_device.devices = 0;
  no_device.problem = "cudaGetDeviceCount: no CUDA-capable device is detected";
  c = gpu::choose_decode(gpu::DecodeMode::automatic, no_device, false);
  EXPECT_FALSE(c.gpu);
  EXPECT_NE(c.reason.find("no CUDA device"), std::string::npos) << c.reason;

  gpu::GpuAvailability no_nvjpeg = full_gpu();
  no_nvjpeg.nvjpeg_built = false;
  c = gpu::choose_decode(gpu::DecodeMode::automatic, no_nvjpeg, false);
  EXPECT_FALSE(c.gpu);
  EXPECT_NE(c.reason.find("nvJPEG"), std::string::npos) << c.reason;

  EXPECT_FALSE(gpu::choose_decode(gpu::DecodeMode::automatic, full_gpu(), true).gpu);
  EXPECT_FALSE(gpu::choose_decode(gpu::DecodeMode::cpu, full_gpu(), false).gpu);
}

TEST(GpuDecodeChoice, GpuThatCannotBeHonouredIsAUsageErrorNamingWhatIsMissing) {
  auto expect_usage = [](const gpu::GpuAvailability& g, bool small, const std::string& needle) {
    try {
      gpu::choose_decode(gpu::DecodeMode::gpu, g, small);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--decode cpu"), std::string::npos) << e.what();
    }
  };
  gpu::GpuAvailability none;
  expect_usage(none, false, "without CUDA");
  gpu::GpuAvailability g = full_gpu();
  g.nvjpeg_built = false;
  expect_usage(g, false, "without nvJPEG");
  g = full_gpu();
  g.devices = 0;
  expect_usage(g, false, "no CUDA device");
  expect_usage(full_gpu(), true, "64 px");
  EXPECT_TRUE(gpu::choose_decode(gpu::DecodeMode::gpu, full_gpu(), false).gpu);
}

// The doctor's verdict, for frugal's own kernel and for LibTorch's: a T4 (sm_75) with a resize
// kernel built for sm_90 only would fail at the first batch ("no kernel image").
TEST(GpuDecodeChoice, AutoTakesTheCpuWhenFrugalsOrLibTorchsKernelsDoNotCoverTheGpu) {
  gpu::GpuAvailability t4 = full_gpu();
  t4.device_name = "Tesla T4";
  t4.major = 7;
  t4.minor = 5;
  t4.kernel_archs = {{90}, {}};
  auto c = gpu::choose_decode(gpu::DecodeMode::automatic, t4, false);
  EXPECT_FALSE(c.gpu);
  EXPECT_NE(c.reason.find("resize kernel"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("sm_75"), std::string::npos) << c.reason;
  EXPECT_THROW(gpu::choose_decode(gpu::DecodeMode::gpu, t4, false), Error);

  t4.kernel_archs = {{75, 90}, {}};
  EXPECT_TRUE(gpu::choose_decode(gpu::DecodeMode::automatic, t4, false).gpu);
  t4.kernel_archs = {{}, {70}};  // PTX the driver compiles for newer GPUs
  EXPECT_TRUE(gpu::choose_decode(gpu::DecodeMode::automatic, t4, false).gpu);

  gpu::GpuAvailability p100 = full_gpu();
  p100.major = 6;
  p100.minor = 0;
  p100.kernel_archs = {{60}, {}};
  p100.torch_archs = {{75, 80, 90}, {90}};
  c = gpu::choose_decode(gpu::DecodeMode::automatic, p100, false);
  EXPECT_FALSE(c.gpu);
  EXPECT_NE(c.reason.find("LibTorch"), std::string::npos) << c.reason;
}

TEST(GpuDecodeChoice, ModeNamesAreCheckedAndRoundTrip) {
  for (const char* m : {"cpu", "gpu", "auto"}) EXPECT_STREQ(gpu::to_string(gpu::parse_decode_mode(m)), m);
  EXPECT_THROW(gpu::parse_decode_mode("cuda"), Error);
}

}  // namespace
}  // namespace frugal
