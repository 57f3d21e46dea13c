#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "frugal/error.h"
#include "frugal/image.h"
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
    Diff d = diff(got, read_raw(dir_ / ("centercrop_" + std::to_string(shorter) + "_" + std::to_string(size) + ".rgb"), 3));
    EXPECT_LE(d.max, 1) << shorter << " " << size;
  }
}

TEST(Resize, FastPathEqualsReference) {
  for (int c : {1, 3}) {
    Image src = synthetic(157, 113, c, 3 + c);
    struct Case { double x0, y0, x1, y1; int w, h; };
    for (Case k : {Case{0, 0, 157, 113, 224, 224}, Case{3.5, 2.25, 150.75, 100, 37, 29},
                   Case{10, 10, 20, 30, 64, 64}, Case{0, 0, 157, 113, 9, 7}}) {
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
