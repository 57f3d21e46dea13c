// `--decode` resolution on this machine, and GpuLoader against the CPU transforms (GPU only).
#include <gtest/gtest.h>

#include <cmath>

#include "dataset/data_fixtures.h"
#include "gpu/photo_archive.h"
#include "frugal/archive/archive.h"
#include "frugal/util/error.h"
#include "frugal/loader/gpu_loader.h"
#include "frugal/gpu/plan.h"

namespace frugal {
namespace {

using testing::photos;

bool gpu_usable() {
  auto g = gpu::probe_gpu();
  return g.cuda_built && g.nvjpeg_built && g.devices > 0;
}

TEST(GpuLoaderSelect, CpuIsChosenWithoutAskingTheGpu) {
  auto ds = photos();
  if (!ds) GTEST_SKIP() << "no Python with PIL to make the photo archive";
  auto s = select_decode("cpu", *ds);
  EXPECT_FALSE(s.gpu);
  EXPECT_EQ(s.reason, "cpu (--decode cpu)");
}

TEST(GpuLoaderSelect, WithoutAGpuAutoSaysWhyAndGpuIsAUsageError) {
  if (gpu_usable()) GTEST_SKIP() << "this machine can decode on the GPU";
  auto ds = photos();
  if (!ds) GTEST_SKIP() << "no Python with PIL to make the photo archive";
  auto s = select_decode("auto", *ds);
  EXPECT_FALSE(s.gpu);
  EXPECT_NE(s.reason.find("--decode auto:"), std::string::npos) << s.reason;
  try {
    GpuLoader loader(ds, LoaderOptions{});
    ADD_FAILURE() << "GpuLoader was built on a machine that cannot decode on the GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("--decode cpu"), std::string::npos) << e.what();
  }
}

TEST(GpuLoaderSelect, SmallImagesStayOnTheCpu) {
  auto dir = testing::data_fixtures();
  if (dir.empty()) GTEST_SKIP() << "no Python to make the data fixtures";
  auto ds = Dataset::open(dir / "gray28.zip");
  EXPECT_FALSE(select_decode("auto", *ds).gpu);
  EXPECT_THROW(select_decode("gpu", *ds), Error);
}

// Each GPU image against decode + transform_image on the CPU for the same (seed, epoch, index);
// nvJPEG's IDCT and chroma upsampling differ slightly from libjpeg-turbo's, hence a mean bound.
TEST(GpuLoaderBatches, MatchCpuTransformsLabelsAndOrder) {
  if (!gpu_usable()) GTEST_SKIP() << "no CUDA device with nvJPEG";
  auto ds = photos();
  if (!ds) GTEST_SKIP() << "no Python with PIL to make the photo archive";
  LoaderOptions lo;
  lo.image_size = 64;
  lo.batch_size = 8;
  lo.seed = 11;
  lo.workers = 2;
  GpuLoader gl(ds, lo);
  Loader cl(ds, lo);
  const std::int64_t epoch = 3;
  gl.start(epoch);
  cl.start(epoch);
  auto order = epoch_order(ds->size(), lo.seed, epoch, true);
  auto archive = Archive::open(ds->path());
  std::size_t pos = 0;
  while (auto b = gl.next()) {
    auto c = cl.next();
    ASSERT_TRUE(c.has_value());
    ASSERT_TRUE(b->images.is_cuda());
    EXPECT_TRUE(torch::equal(b->labels, c->labels));
    auto imgs = b->images.cpu();
    for (std::int64_t k = 0; k < imgs.size(0); ++k, ++pos) {
      std::size_t idx = order[pos];
      TransformOptions t;
      t.image_size = 64;
      t.channels = ds->channels();
      auto bytes = archive->read(*archive->find(ds->name(idx)));
      DecodeOptions d;
      d.channels = ds->channels();
      Image full = decode_image(bytes, d, ds->name(idx));
      Image want;
      transform_image(full, t, mix_seed(mix_seed(lo.seed, epoch), idx), want);
      auto ref = torch::from_blob(want.pixels.data(), {64, 64, ds->channels()}, torch::kUInt8).permute({2, 0, 1});
      double mad = (imgs[k].to(torch::kFloat) - ref.to(torch::kFloat)).abs().mean().item<double>();
      EXPECT_LT(mad, 3.0) << ds->name(idx);
    }
  }
  EXPECT_EQ(pos, ds->size());
  EXPECT_GE(gl.cpu_decoded(), 2u);  // the PNGs at least; CMYK too
  EXPECT_FALSE(gl.backend().empty());
}

// The loader's one output is uint8 levels on the GPU; normalize() (the one rule) makes them the
// model's input there as it does on the CPU.
TEST(GpuLoaderBatches, ByteOutputIsNormalisedOnTheDeviceAsOnTheCpu) {
  if (!gpu_usable()) GTEST_SKIP() << "no CUDA device with nvJPEG";
  auto ds = photos();
  if (!ds) GTEST_SKIP() << "no Python with PIL to make the photo archive";
  LoaderOptions lo;
  lo.image_size = 48;
  lo.batch_size = 20;
  lo.shuffle = false;
  GpuLoader a(ds, lo);
  a.start(0);
  auto x = a.next();
  ASSERT_TRUE(x);
  EXPECT_EQ(x->images.scalar_type(), torch::kByte);
  EXPECT_TRUE(x->images.is_cuda());
  const std::vector<float> mean{0.485f, 0.456f, 0.406f}, std{0.229f, 0.224f, 0.225f};
  auto on_gpu = normalize(x->images, mean, std);
  EXPECT_TRUE(on_gpu.is_cuda());
  auto on_cpu = normalize(x->images.cpu(), mean, std);
  EXPECT_LT((on_gpu.cpu() - on_cpu).abs().max().item<float>(), 1e-5f);
}

}  // namespace
}  // namespace frugal
