#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/fixtures.h"
#include "image/resize.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

class ResizeAgainstPil : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = image_fixtures();
    ok_ = !dir_.empty();
  }
  static fs::path dir_;
  static bool ok_;
};
fs::path ResizeAgainstPil::dir_;
bool ResizeAgainstPil::ok_ = false;

Image synthetic(int w, int h, int c, std::uint64_t seed) {
  Image img;
  img.resize(w, h, c);
  Rng rng(seed);
  for (std::size_t i = 0; i < img.pixels.size(); ++i)
    img.pixels[i] = static_cast<std::uint8_t>((i * 7 / c) % 200 + rng.randint(0, 56));
  return img;
}

TEST_F(ResizeAgainstPil, CropThenResizeMatchesPilBilinear) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL";
  Image src = decode_image(read_bytes(dir_ / "rgb.png"), {}, "rgb.png");
  int checked = 0;
  std::regex re(R"(resize_\d+_(\d+)_(\d+)_(\d+)_(\d+)_(\d+)_(\d+)\.rgb)");
  for (const auto& e : fs::directory_iterator(dir_)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (!std::regex_match(name, m, re)) continue;
    int x0 = std::stoi(m[1]), y0 = std::stoi(m[2]), x1 = std::stoi(m[3]), y1 = std::stoi(m[4]);
    Image crop;
    pad_crop(src, 0, x0, y0, x1 - x0, y1 - y0, crop);
    Image got;
    resize_bilinear(crop, 0, 0, x1 - x0, y1 - y0, std::stoi(m[5]), std::stoi(m[6]), got);
    Diff d = diff(got, read_raw(e.path(), 3));
    EXPECT_LE(d.max, 1) << name;  // PIL's own fixed-point algorithm: equal but for rare ties
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

TEST_F(ResizeAgainstPil, ResizeCenterCropMatchesTorchvision) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL";
  Image src = decode_image(read_bytes(dir_ / "rgb.png"), {}, "rgb.png");
  for (auto [shorter, size] : {std::pair{64, 56}, {97, 97}, {40, 32}}) {
    Image got;
    resize_center_crop(src, shorter, size, got);
    Diff d =
        diff(got, read_raw(dir_ / ("centercrop_" + std::to_string(shorter) + "_" + std::to_string(size) + ".rgb"), 3));
    EXPECT_LE(d.max, 1) << shorter << " " << size;
  }
}

TEST(Resize, FastPathEqualsReference) {
  for (int c : {1, 3}) {
    Image src = synthetic(157, 113, c, 3 + c);
    struct Case {
      double x0, y0, x1, y1;
      int w, h;
    };
    for (Case k : {Case{0, 0, 157, 113, 224, 224}, Case{3.5, 2.25, 150.75, 100, 37, 29}, Case{10, 10, 20, 30, 64, 64},
                   Case{0, 0, 157, 113, 9, 7}}) {
      Image fast, ref;
      resize_bilinear(src, k.x0, k.y0, k.x1, k.y1, k.w, k.h, fast);
      resize_bilinear_reference(src, k.x0, k.y0, k.x1, k.y1, k.w, k.h, ref);
      EXPECT_LE(diff(fast, ref).max, 1) << "channels " << c << " out " << k.w << "x" << k.h;
    }
  }
}

TEST(Resize, SimdRowFilterEqualsThePortableLoop) {
  if (!detail::has_simd_row_filter()) GTEST_SKIP() << "no SIMD row filter on this CPU";
  Rng rng(17);
  int checked = 0;
  for (int c : {1, 3}) {
    for (int i = 0; i < 60; ++i) {
      // Sizes that leave every tail of the 32- and 8-byte steps; up- and downscaling, flips, and
      // saturated images (all 0 or 255) next to noise.
      int w = 5 + static_cast<int>(rng.randint(0, 400)), h = 5 + static_cast<int>(rng.randint(0, 300));
      Image src = synthetic(w, h, c, 100 + i);
      if (i % 10 == 0) std::fill(src.pixels.begin(), src.pixels.end(), i % 20 == 0 ? 255 : 0);
      int ow = 1 + static_cast<int>(rng.randint(0, 300)), oh = 1 + static_cast<int>(rng.randint(0, 300));
      double x0 = rng.uniform(0, w / 3.0), y0 = rng.uniform(0, h / 3.0);
      detail::ResizeSpec spec{x0, y0, rng.uniform(x0 + 1, w), rng.uniform(y0 + 1, h), ow, oh, 0, 0, ow, oh};
      spec.mirror = i % 3 == 0;
      Image simd, portable;
      detail::resize_window(detail::view_of(src), spec, simd, detail::RowFilter::best);
      detail::resize_window(detail::view_of(src), spec, portable, detail::RowFilter::portable);
      ASSERT_EQ(simd.pixels, portable.pixels) << c << " channels, " << w << "x" << h << " -> " << ow << "x" << oh;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 120);
}

TEST(Resize, MirroredWindowIsTheFlippedWindow) {
  for (int c : {1, 3}) {
    Image src = synthetic(157, 113, c, 5 + c);
    for (int w : {224, 40, 7}) {
      detail::ResizeSpec spec{2.5, 1, 150, 110, w, 33, 0, 0, w, 33};
      Image plain, mirrored;
      detail::resize_window(detail::view_of(src), spec, plain);
      spec.mirror = true;
      detail::resize_window(detail::view_of(src), spec, mirrored);
      flip_horizontal(plain);
      EXPECT_EQ(plain.pixels, mirrored.pixels) << "channels " << c << " width " << w;
    }
  }
}

TEST(Transforms, PlanarLayoutSplitsTheChannels) {
  Image img = synthetic(37, 5, 3, 8);
  std::vector<std::uint8_t> planes(img.pixels.size());
  to_planar(img, planes.data());
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 37; ++x)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(planes[(c * 5 + y) * 37 + x], img.row(y)[x * 3 + c]);
}

TEST(RandomResizedCrop, BoxStaysInsideAndFollowsScaleAndRatio) {
  Rng rng(11);
  int fallbacks = 0;
  for (int i = 0; i < 2000; ++i) {
    int w = 50 + static_cast<int>(rng.randint(0, 500)), h = 50 + static_cast<int>(rng.randint(0, 500));
    CropBox b = random_resized_crop_box(w, h, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.width, w);
    ASSERT_LE(b.y + b.height, h);
    double area = double(b.width) * b.height / (double(w) * h);
    if (area > 0.99) ++fallbacks;
    EXPECT_GE(area, 0.07);
  }
  EXPECT_LT(fallbacks, 400);
}

TEST(RandomResizedCrop, ExtremeAspectFallsBackToTheClampedCentre) {
  Rng rng(5);
  // 1000x10: no try can fit a box of ratio 3/4..4/3 with 8% of the area, so the fallback runs.
  CropBox b = random_resized_crop_box(1000, 10, rng);
  EXPECT_EQ(b.height, 10);
  EXPECT_EQ(b.width, 13);  // round(10 * 4/3)
  EXPECT_EQ(b.x, (1000 - 13) / 2);
}

TEST(Transforms, SameSeedSameOutputDifferentSeedDifferentOutput) {
  Image src = synthetic(300, 200, 3, 9);
  TransformOptions t;
  t.image_size = 64;
  Image a, b, c;
  transform_image(src, t, 42, a);
  transform_image(src, t, 42, b);
  transform_image(src, t, 43, c);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_NE(a.pixels, c.pixels);
  EXPECT_EQ(a.width, 64);
  EXPECT_EQ(a.height, 64);
}

TEST(Transforms, SmallImagesGetPaddedCropAndKeepTheirSize) {
  Image src = synthetic(28, 28, 1, 2);
  TransformOptions t;
  t.image_size = 28;
  t.small = true;
  bool saw_padding = false;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    Image out;
    transform_image(src, t, seed, out);
    ASSERT_EQ(out.width, 28);
    ASSERT_EQ(out.channels, 1);
    // Padding is 3 px: a shifted crop shows a zero row or column at an edge.
    if (out.row(0)[0] == 0 || out.row(27)[27] == 0) saw_padding = true;
  }
  EXPECT_TRUE(saw_padding);
}

TEST(Transforms, ChannelsThreeReplicatesGray) {
  Image src = synthetic(40, 30, 1, 4);
  TransformOptions t;
  t.image_size = 24;
  t.train = false;
  t.channels = 3;
  Image out;
  transform_image(src, t, 0, out);
  ASSERT_EQ(out.channels, 3);
  for (int x = 0; x < 24; ++x) {
    EXPECT_EQ(out.row(5)[3 * x], out.row(5)[3 * x + 1]);
    EXPECT_EQ(out.row(5)[3 * x], out.row(5)[3 * x + 2]);
  }
}

// The plan's draws are torchvision's, in its order: RandomResizedCrop's box then the flip; for
// small images RandomCrop's y then x, then the flip. Eval draws nothing.
TEST(CropPlan, DrawsTheBoxThenTheFlipAsTorchvisionDoes) {
  int flips = 0;
  for (std::uint64_t i = 0; i < 200; ++i) {
    const std::uint64_t seed = sample_seed(7, i % 3, i);
    const int w = 1 + static_cast<int>(i * 37 % 900), h = 1 + static_cast<int>(i * 53 % 700);
    TransformOptions t;
    t.image_size = 96;
    Rng rng(seed);
    const CropBox box = random_resized_crop_box(w, h, rng);
    const bool flip = rng.uniform() < 0.5;
    const CropPlan p = plan_crop(t, seed, w, h);
    EXPECT_EQ(p.kind, CropPlan::Kind::resized_crop);
    EXPECT_EQ(p.box, box) << i;
    EXPECT_EQ(p.flip, flip) << i;
    EXPECT_EQ(p.resize_w, 96);
    EXPECT_EQ(p.resize_h, 96);
    EXPECT_EQ(p.window, (CropBox{0, 0, 96, 96}));
    flips += p.flip;

    t.small = true;
    t.image_size = 32;
    Rng small(seed);
    const CropPlan q = plan_crop(t, seed, w, h);
    EXPECT_EQ(q.kind, CropPlan::Kind::padded_crop);
    EXPECT_EQ(q.pad, 4);
    EXPECT_EQ(q.pad_y, small.randint(0, 9));
    EXPECT_EQ(q.pad_x, small.randint(0, 9));
    EXPECT_EQ(q.flip, small.uniform() < 0.5);
  }
  EXPECT_GT(flips, 50);
  EXPECT_LT(flips, 150);
}

TEST(CropPlan, EvalIsTorchvisionsResizeThenCenterCrop) {
  TransformOptions t;
  t.image_size = 224;
  t.train = false;
  // Resize(256): int(256 * 500 / 375) = 341; CenterCrop(224): round((341 - 224) / 2) = round(58.5) = 58.
  CropPlan p = plan_crop(t, 1, 500, 375);
  EXPECT_EQ(p.kind, CropPlan::Kind::center_crop);
  EXPECT_EQ(p.box, (CropBox{0, 0, 500, 375}));
  EXPECT_EQ(p.shorter, 256);
  EXPECT_EQ(p.resize_w, 341);
  EXPECT_EQ(p.resize_h, 256);
  EXPECT_EQ(p.window, (CropBox{58, 16, 224, 224}));
  EXPECT_FALSE(p.flip);
  EXPECT_EQ(plan_crop(t, 2, 500, 375), p);  // no draws: the seed does not matter
  t.small = true;
  t.image_size = 28;
  p = plan_crop(t, 1, 28, 28);
  EXPECT_EQ(p.shorter, 28);
  EXPECT_EQ(p.window, (CropBox{0, 0, 28, 28}));
  EXPECT_THROW(plan_crop(t, 1, 0, 28), Error);
}

// transform_image is the plan carried out, for every kind of plan and for tiny and thin images.
TEST(CropPlan, TransformImageCarriesOutThePlan) {
  for (int c : {1, 3})
    for (auto [w, h] : {std::pair{1, 1}, {5, 3}, {28, 28}, {40, 30}, {300, 200}, {600, 7}, {9, 400}})
      for (bool train : {true, false})
        for (bool small : {false, true})
          for (std::uint64_t seed = 0; seed < 4; ++seed) {
            Image src = synthetic(w, h, c, seed + 1);
            TransformOptions t;
            t.image_size = small ? 28 : 48;
            t.train = train;
            t.small = small;
            Image want, got, tmp;
            transform_image(src, t, seed, want);
            apply_crop_plan(src, plan_crop(t, seed, w, h), tmp, got);
            ASSERT_EQ(got.width, t.image_size);
            ASSERT_EQ(got.height, t.image_size);
            ASSERT_EQ(got.pixels, want.pixels)
                << w << "x" << h << " c" << c << " train " << train << " small " << small;
          }
}

TEST(CropPlan, APlanForAnotherImageSizeIsRefused) {
  TransformOptions t;
  t.train = false;
  t.image_size = 32;
  const CropPlan p = plan_crop(t, 0, 100, 80);
  Image other = synthetic(90, 80, 3, 1), tmp, out;
  try {
    apply_crop_plan(other, p, tmp, out);
    ADD_FAILURE() << "applied";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
  }
  t.train = true;
  CropPlan q = plan_crop(t, 0, 100, 80);
  q.box.x = 100 - q.box.width + 1;  // one pixel past the right edge
  EXPECT_THROW(apply_crop_plan(synthetic(100, 80, 3, 1), q, tmp, out), Error);
}

TEST(Transforms, FlipMirrorsRows) {
  Image img = synthetic(5, 2, 3, 1);
  Image orig = img;
  flip_horizontal(img);
  for (int x = 0; x < 5; ++x)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(img.row(1)[x * 3 + c], orig.row(1)[(4 - x) * 3 + c]);
}

TEST(Transforms, ALongThinImageWhoseResizedSideOverflowsIntIsBadInput) {
  // 1 x 10M gray pixels (within the default --max-pixels): resized to a shorter side of 256, the
  // longer would be 2.56e9, past int. Bad input, not an undefined conversion and a wild allocation.
  Image thin;
  thin.resize(1, 10'000'000, 1);
  Image out;
  try {
    resize_center_crop(thin, 256, 224, out);
    ADD_FAILURE() << "resized to " << out.width << "x" << out.height;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a non-frugal exception escaped: " << e.what();
  }
  Image ok;
  ok.resize(1, 1000, 1);
  resize_center_crop(ok, 32, 32, out);
  EXPECT_EQ(out.width, 32);
  EXPECT_EQ(out.height, 32);
}

}  // namespace
