// The CPU half of the GPU path, run for real without a GPU: the crops drawn for the kernel, and
// the kernel's own per-pixel math evaluated on the host, must reproduce src/image's transforms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <filesystem>
#include <string>

#include "frugal/util/error.h"
#include "gpu/gpu_test_util.h"
#include "frugal/gpu/plan.h"

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
  EXPECT_GT(flips, 0);  // both branches of the flip were compared
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

// Tiny images, and long thin ones whose resize is far from square, through the kernel's math.
TEST(GpuPlan, KernelMathMatchesCpuOnTinyAndExtremeAspectImages) {
  for (bool train : {true, false}) {
    TransformOptions t;
    t.image_size = 32;
    t.train = train;
    for (auto [w, h] : {std::pair{1, 1}, {3, 2}, {1, 300}, {300, 1}, {2, 97}, {641, 3}})
      for (std::uint64_t seed = 0; seed < 3; ++seed)
        EXPECT_LE(max_level_diff(test_image(w, h, 3, seed), t, sample_seed(5, 1, seed)), 1.0f)
            << w << "x" << h << (train ? " train" : " eval") << " seed " << seed;
  }
}

// The GPU path carries out the CPU's crop plan, whatever the image: plan_job's job is plan_crop's
// box, resize, window and flip, and an image the CPU refuses is refused alike (not a wrapped size).
void expect_gpu_plan_is_cpu_plan(int w, int h, const TransformOptions& t, std::uint64_t seed) {
  const std::string what = std::to_string(w) + "x" + std::to_string(h) + " size " + std::to_string(t.image_size) +
                           (t.train ? " train" : " eval") + " seed " + std::to_string(seed);
  std::optional<CropPlan> cpu;
  std::optional<gpu::JobPlan> gpu;
  std::string cpu_error = "none", gpu_error = "none";
  try {
    cpu = plan_crop(t, seed, w, h);
  } catch (const Error& e) {
    cpu_error = e.what();
  }
  try {
    gpu = gpu::plan_job(w, h, t, seed);
  } catch (const Error& e) {
    gpu_error = e.what();
  }
  ASSERT_EQ(cpu_error, gpu_error) << what;
  ASSERT_EQ(cpu.has_value(), gpu.has_value()) << what;
  if (!cpu) return;
  const gpu::ResizeJob& j = gpu->job;
  EXPECT_EQ(gpu->view_x, cpu->box.x) << what;
  EXPECT_EQ(gpu->view_y, cpu->box.y) << what;
  EXPECT_EQ(j.view_w, cpu->box.width) << what;
  EXPECT_EQ(j.view_h, cpu->box.height) << what;
  EXPECT_EQ(j.x0, 0.0f) << what;
  EXPECT_EQ(j.y0, 0.0f) << what;
  EXPECT_EQ(j.x1, static_cast<float>(cpu->box.width)) << what;
  EXPECT_EQ(j.y1, static_cast<float>(cpu->box.height)) << what;
  EXPECT_EQ(j.full_w, cpu->resize_w) << what;
  EXPECT_EQ(j.full_h, cpu->resize_h) << what;
  EXPECT_EQ(j.ox, cpu->window.x) << what;
  EXPECT_EQ(j.oy, cpu->window.y) << what;
  // The kernel writes image_size x image_size: that must be the whole window.
  EXPECT_EQ(cpu->window.width, t.image_size) << what;
  EXPECT_EQ(cpu->window.height, t.image_size) << what;
  EXPECT_EQ(j.flip != 0, cpu->flip) << what;
}

TEST(GpuPlan, GpuJobIsTheCpuCropPlanForManySamplesSizesAndModes) {
  const std::pair<int, int> sizes[] = {{1, 1},         {2, 1},         {1, 2},          {3, 3},         {7, 5},
                                       {64, 64},       {65, 40},       {224, 224},      {257, 190},     {500, 375},
                                       {375, 500},     {640, 480},     {4032, 3024},    {30000, 20000}, {46340, 46340},
                                       {1000, 10},     {10, 1000},     {1, 3000},       {3000, 1},      {100000, 3},
                                       {1, 8'388'607}, {1, 8'388'608}, {10'000'000, 1}, {2, 89'478'485}};
  int checked = 0, refused = 0, flips = 0;
  for (bool train : {true, false})
    for (int size : {7, 32, 96, 224, 225})
      for (auto [w, h] : sizes)
        for (std::uint64_t seed : {0ULL, 42ULL})
          for (std::uint64_t epoch : {0ULL, 3ULL})
            for (std::uint64_t index = 0; index < 12; ++index) {
              TransformOptions t;
              t.image_size = size;
              t.train = train;
              const std::uint64_t s = sample_seed(seed, epoch, index);
              expect_gpu_plan_is_cpu_plan(w, h, t, s);
              if (::testing::Test::HasFatalFailure()) return;
              ++checked;
              try {
                flips += plan_crop(t, s, w, h).flip;
              } catch (const Error&) {
                ++refused;
              }
            }
  EXPECT_EQ(checked, 2 * 5 * 24 * 2 * 2 * 12);
  EXPECT_GT(refused, 0);  // the extreme ratios past int were compared too
  EXPECT_GT(flips, 0);
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

  // A machine without an NVIDIA driver: probe_gpu says "no GPU", not the runtime's "CUDA driver
  // version is insufficient" (which reads as an upgrade hint).
  gpu::GpuAvailability no_gpu = full_gpu();
  no_gpu.devices = 0;
  no_gpu.problem = "no GPU";
  c = gpu::choose_decode(gpu::DecodeMode::automatic, no_gpu, false);
  EXPECT_FALSE(c.gpu);
  EXPECT_NE(c.reason.find("no GPU"), std::string::npos) << c.reason;
  EXPECT_EQ(c.reason.find("CUDA device"), std::string::npos) << c.reason;
  if (auto probed = gpu::probe_gpu(); probed.cuda_built && !std::filesystem::exists("/proc/driver/nvidia/version"))
    EXPECT_EQ(probed.problem, "no GPU");

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
