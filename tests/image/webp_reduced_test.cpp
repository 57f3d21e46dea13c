// WebP decoded into the crop it is cut to (webp_decode_reduced: libwebp's cropping and
// area-averaging scaling), against decoding the whole image and transforming it; and the memory
// that saves. Fixtures: tests/image/make_format_fixtures.py.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "frugal/image/image.h"
#include "image/codecs.h"
#include "image/fixtures.h"
#include "image/peak_memory.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

class WebpReduced : public ::testing::Test {
 public:
  static void SetUpTestSuite() { dir_ = format_fixtures(); }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the fixtures";
  }
  static fs::path dir_;
};
fs::path WebpReduced::dir_;

// Lossless: the bounds of PNG's block means (png_reduced_test.cpp). Lossy: libwebp scales the Y, U
// and V planes before converting to RGB (no fancy chroma upsampling), as JPEG's DCT scaling
// reduces in its own colour space: JPEG's bounds (region_test.cpp; seen here: means <= 2.83, max
// < 20). The EXIF-turned file has its plan drawn on the turned sides.
TEST_F(WebpReduced, TransformsOfAReducedDecodeStayCloseToTheFullDecodes) {
  for (const char* name : {"webp_big_lossy.webp", "webp_big_lossless.webp", "webp_exif_6_big.webp"}) {
    const bool lossless = std::string(name) == "webp_big_lossless.webp";
    const auto bytes = read_bytes(dir_ / name);
    DecodeOptions d;
    d.channels = 3;
    const Image full = decode_image(bytes, d, name);
    for (auto [train, small, size] : {std::tuple{false, false, 64}, {true, false, 48}, {true, true, 32}})
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        TransformOptions t;
        t.image_size = size;
        t.train = train;
        t.small = small;
        t.channels = 3;
        Image scratch, fast, reference;
        decode_transform(bytes, t, 1 << 30, seed, name, scratch, fast);
        transform_image(full, t, seed, reference);
        const Diff diff_ = diff(fast, reference);
        EXPECT_LT(diff_.mean, lossless ? 1.6 : 3.0)
            << name << " train " << train << " small " << small << " seed " << seed;
        EXPECT_LE(diff_.max, lossless ? 20 : 24)
            << name << " train " << train << " small " << small << " seed " << seed;
      }
  }
}

TEST_F(WebpReduced, TheBoxLiesWhereTheCropWasAskedEvenFromAnOddCorner) {
  const auto bytes = read_bytes(dir_ / "webp_big_lossless.webp");
  DecodeOptions d;
  d.channels = 3;
  const Image full = decode_image(bytes, d, "lossless");
  for (const CropBox box : {CropBox{101, 37, 400, 300}, CropBox{0, 0, 1003, 755}, CropBox{7, 9, 64, 33}}) {
    Image region;
    const detail::FloatBox r = detail::webp_decode_reduced(bytes, box, 1, d, "lossless", region);
    // Factor 1: libwebp's crop, unscaled, from the even corner at or before the box's.
    EXPECT_DOUBLE_EQ(r.x0, box.x & 1);
    EXPECT_DOUBLE_EQ(r.y0, box.y & 1);
    EXPECT_DOUBLE_EQ(r.x1 - r.x0, box.width);
    for (int y = 0; y < box.height; ++y)
      ASSERT_EQ(0, std::memcmp(region.row(y + int(r.y0)) + int(r.x0) * 3, full.row(box.y + y) + box.x * 3,
                               static_cast<std::size_t>(box.width) * 3))
          << box.x << "," << box.y << " row " << y;
  }
}

TEST_F(WebpReduced, ALargeLossyWebpCostsMemoryOfTheOutputNotOfTheImage) {
  if (!std::ofstream("/proc/self/clear_refs")) GTEST_SKIP() << "no /proc/self/clear_refs to measure peak memory";
  const auto bytes = read_bytes(dir_ / "webp_huge_lossy.webp");
  TransformOptions t;
  t.image_size = 224;
  t.train = false;
  t.channels = 3;
  Image scratch, out;
  const std::uint64_t reduced = peak_growth_kib([&] { decode_transform(bytes, t, 1 << 30, 0, "huge", scratch, out); });
  Image whole;
  const std::uint64_t full = peak_growth_kib([&] { whole = decode_image(bytes, {}, "huge"); });
  // The whole image is 4000 x 3000 x 3 = 35 MB; the reduced decode keeps about the 292 x 292 crop.
  EXPECT_GT(full, 30000u);
  EXPECT_LT(reduced, 8000u) << "full decode: " << full << " KiB";
}

}  // namespace
