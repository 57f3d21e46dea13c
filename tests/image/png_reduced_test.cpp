// PNG decoding bounded by the output (issue 32): a large PNG is reduced block by block while its
// rows are decoded, for the crop the plan keeps, instead of decoded whole (a 9400 x 9400 16-bit PNG
// held 330 MB per worker). The reduced decode is exactly the block means of a full decode; the
// transform after it stays within a level or two of the full decode + resize.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "frugal/image/image.h"
#include "image/codecs.h"
#include "image/fixtures.h"
#include "image/peak_memory.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

class PngReduced : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = image_fixtures();
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the fixtures";
  }
  std::filesystem::path dir_;
};

// The mean of each factor x factor block of `in` that covers `box`, blocks aligned to the origin.
Image block_means(const Image& in, const CropBox& box, int f) {
  const int bx0 = box.x / f, by0 = box.y / f;
  const int bx1 = (box.x + box.width + f - 1) / f, by1 = (box.y + box.height + f - 1) / f;
  Image out;
  out.resize(bx1 - bx0, by1 - by0, in.channels);
  for (int j = 0; j < out.height; ++j)
    for (int i = 0; i < out.width; ++i)
      for (int c = 0; c < in.channels; ++c) {
        std::uint32_t sum = 0, n = 0;
        for (int y = (by0 + j) * f; y < std::min(in.height, (by0 + j + 1) * f); ++y)
          for (int x = (bx0 + i) * f; x < std::min(in.width, (bx0 + i + 1) * f); ++x, ++n)
            sum += in.row(y)[x * in.channels + c];
        out.row(j)[i * in.channels + c] = static_cast<std::uint8_t>((sum + n / 2) / n);
      }
  return out;
}

TEST_F(PngReduced, AReducedDecodeIsTheBlockMeansOfAFullDecode) {
  for (const char* name : {"big_rgb16.png", "big_adam7.png", "big_gray.png"}) {
    const auto bytes = read_bytes(dir_ / name);
    for (int channels : {0, 1, 3}) {
      DecodeOptions d;
      d.channels = channels;
      const Image full = decode_image(bytes, d, name);
      for (auto [box, f] : {std::pair{CropBox{0, 0, 1003, 755}, 4},
                            {CropBox{101, 37, 500, 333}, 3},
                            {CropBox{998, 750, 5, 5}, 2},
                            {CropBox{13, 700, 990, 55}, 7}}) {
        Image reduced;
        const detail::ReducedRegion r = detail::png_decode_reduced(bytes, box, f, d, name, reduced);
        const Image want = block_means(full, box, f);
        EXPECT_EQ(reduced.pixels, want.pixels)
            << name << " channels " << channels << " box " << box.x << "," << box.y << " factor " << f;
        EXPECT_DOUBLE_EQ(r.x0, double(box.x) / f - box.x / f);
        EXPECT_NEAR(r.y1 - r.y0, double(box.height) / f, 1e-9);
      }
    }
  }
}

TEST_F(PngReduced, TransformsOfAReducedDecodeStayCloseToTheFullDecodes) {
  for (const char* name : {"big_rgb16.png", "big_adam7.png", "big_gray.png"}) {
    const auto bytes = read_bytes(dir_ / name);
    for (auto [train, small, size] : {std::tuple{false, false, 64}, {true, false, 48}, {true, true, 32}}) {
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        TransformOptions t;
        t.image_size = size;
        t.train = train;
        t.small = small;
        t.channels = 3;
        Image scratch, fast, full, reference;
        decode_transform(bytes, t, 1 << 30, seed, name, scratch, fast);
        DecodeOptions d;
        d.channels = 3;
        decode_image(bytes, d, name, full);
        transform_image(full, t, seed, reference);  // what decode_transform did for every PNG
        const Diff diff_ = diff(fast, reference);
        EXPECT_LT(diff_.mean, 1.6) << name << " train " << train << " small " << small << " seed " << seed;
        EXPECT_LE(diff_.max, 12) << name << " train " << train << " small " << small << " seed " << seed;
      }
    }
  }
}

TEST_F(PngReduced, ALarge16BitPngCostsMemoryOfTheOutputNotOfTheImage) {
  if (!std::ofstream("/proc/self/clear_refs")) GTEST_SKIP() << "no /proc/self/clear_refs to measure peak memory";
  const auto bytes = read_bytes(dir_ / "huge_rgb16.png");  // 4000 x 3000: 36 MB decoded whole
  TransformOptions t;
  t.image_size = 224;
  t.train = true;
  t.channels = 3;
  using clock = std::chrono::steady_clock;
  double fast_s = 0, full_s = 0;
  const std::uint64_t fast = peak_growth_kib([&] {
    Image scratch, out;
    const auto t0 = clock::now();
    decode_transform(bytes, t, 1 << 30, 1, "huge", scratch, out);
    fast_s = std::chrono::duration<double>(clock::now() - t0).count();
  });
  const std::uint64_t full = peak_growth_kib([&] {  // the decode every PNG had before
    Image scratch, out;
    const auto t0 = clock::now();
    decode_image(bytes, {.channels = 3, .max_pixels = 1 << 30}, "huge", scratch);
    transform_image(scratch, t, 1, out);
    full_s = std::chrono::duration<double>(clock::now() - t0).count();
  });
  std::printf("huge_rgb16.png 4000x3000 -> 224: reduced decode +%llu KiB peak, %.3f s; full decode +%llu KiB, %.3f s\n",
              static_cast<unsigned long long>(fast), fast_s, static_cast<unsigned long long>(full), full_s);
  EXPECT_LT(fast, 12u << 10);
  EXPECT_GT(full, 30u << 10);  // the measure sees what a full decode holds
}

}  // namespace
