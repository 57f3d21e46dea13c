// Cropped + DCT-scaled JPEG decoding (decode_jpeg_region) against full decodes: the pixels of the
// box must be the full decode's, wherever libjpeg snaps the crop to its iMCU grid.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/codecs.h"
#include "image/fixtures.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

class RegionDecode : public ::testing::TestWithParam<std::string> {
 public:
  static void SetUpTestSuite() { dir_ = image_fixtures(); }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the fixtures";
    bytes_ = read_bytes(dir_ / GetParam());
  }
  static fs::path dir_;
  std::vector<std::uint8_t> bytes_;
};
fs::path RegionDecode::dir_;

// Boxes on, just before and just after the 8 and 16 px iMCU boundaries, and touching every edge
// of the 333x251 images (whose last iMCU row and column are partial).
const CropBox kRegionBoxes[] = {{0, 0, 333, 251},   {16, 16, 100, 80}, {15, 17, 33, 31}, {17, 15, 64, 64},
                                {31, 8, 1, 1},      {0, 200, 40, 51},  {290, 0, 43, 30}, {300, 220, 33, 31},
                                {161, 120, 90, 77}, {47, 95, 200, 150}};

// The box's pixels in `region` (placed by r, at scale 8/8) against the same pixels of `full`.
int max_diff_in_box(const Image& full, const CropBox& b, const Image& region, const JpegRegion& r) {
  EXPECT_EQ(r.scale_num, 8);
  EXPECT_EQ(r.x1 - r.x0, b.width);
  EXPECT_EQ(r.y1 - r.y0, b.height);
  int worst = 0;
  const int C = full.channels, ox = static_cast<int>(r.x0), oy = static_cast<int>(r.y0);
  for (int y = 0; y < b.height; ++y)
    for (int x = 0; x < b.width * C; ++x) {
      int a = full.row(b.y + y)[b.x * C + x], c = region.row(oy + y)[ox * C + x];
      worst = std::max(worst, std::abs(a - c));
    }
  return worst;
}

TEST_P(RegionDecode, FullScaleBoxEqualsTheFullDecode) {
  for (int channels : {0, 1, 3}) {
    DecodeOptions o;
    o.channels = channels;
    Image full = decode_image(bytes_, o, GetParam());
    for (const CropBox& b : kRegionBoxes) {
      Image region;
      JpegRegion r = decode_jpeg_region(bytes_, b, o, GetParam(), region);
      ASSERT_EQ(region.channels, full.channels);
      EXPECT_EQ(max_diff_in_box(full, b, region, r), 0) << GetParam() << " channels " << channels << " box " << b.x
                                                        << "," << b.y << " " << b.width << "x" << b.height;
    }
  }
}

// At 1/2, 1/4 and 1/8 TurboJPEG scales the whole image the same way: the region must be the same
// pixels, shifted by the iMCU snap.
TEST_P(RegionDecode, ScaledBoxEqualsTheScaledFullDecode) {
  int checked = 0;
  for (int m : {4, 2, 1}) {
    DecodeOptions whole;
    whole.min_width = (333 * m + 7) / 8;
    whole.min_height = (251 * m + 7) / 8;
    Image full = decode_image(bytes_, whole, GetParam());
    ASSERT_EQ(full.width, (333 * m + 7) / 8);
    for (const CropBox& b : kRegionBoxes) {
      DecodeOptions o;
      // The smallest size at which the region decoder picks m/8 for this box.
      o.min_width = (b.width * m) / 8;
      o.min_height = (b.height * m) / 8;
      if (o.min_width == 0 || o.min_height == 0) continue;
      if (detail::jpeg_region_scale(b.width, b.height, o.min_width, o.min_height) != m) continue;
      ++checked;
      Image region;
      JpegRegion r = decode_jpeg_region(bytes_, b, o, GetParam(), region);
      ASSERT_EQ(r.scale_num, m) << b.width << "x" << b.height;
      EXPECT_DOUBLE_EQ(r.x1 - r.x0, b.width * m / 8.0);
      // Whole pixels of the scaled box: the offset between the two images is an integer.
      const double dx = b.x * m / 8.0 - r.x0, dy = b.y * m / 8.0 - r.y0;
      ASSERT_EQ(dx, std::floor(dx));
      ASSERT_EQ(dy, std::floor(dy));
      const int x0 = static_cast<int>(std::floor(b.x * m / 8.0)), y0 = static_cast<int>(std::floor(b.y * m / 8.0));
      const int x1 = std::min(full.width, static_cast<int>(std::ceil((b.x + b.width) * m / 8.0)));
      const int y1 = std::min(full.height, static_cast<int>(std::ceil((b.y + b.height) * m / 8.0)));
      int worst = 0;
      const int C = full.channels;
      for (int y = y0; y < y1; ++y)
        for (int x = x0 * C; x < x1 * C; ++x)
          worst = std::max(
              worst, std::abs(full.row(y)[x] - region.row(y - static_cast<int>(dy))[x - static_cast<int>(dx) * C]));
      EXPECT_EQ(worst, 0) << GetParam() << " scale " << m << "/8 box " << b.x << "," << b.y << " " << b.width << "x"
                          << b.height;
    }
  }
  EXPECT_GE(checked, 15);
}

// What the loader does: crop at the smallest DCT scale, then resize; against a full decode, crop
// and resize. DCT scaling filters differently from the antialiased resize, so not exact; an iMCU
// off in the offset moves the picture by 8-16 px and fails by far.
TEST_P(RegionDecode, ScaledCropResizeMatchesFullDecodeCropResize) {
  Image full = decode_image(bytes_, {}, GetParam());
  for (const CropBox& b : kRegionBoxes) {
    if (b.width < 64 || b.height < 64) continue;
    const int S = 32;
    DecodeOptions o;
    o.min_width = o.min_height = S;
    Image region, got, want;
    JpegRegion r = decode_jpeg_region(bytes_, b, o, GetParam(), region);
    EXPECT_LT(r.scale_num, 8);
    resize_bilinear(region, r.x0, r.y0, r.x1, r.y1, S, S, got);
    Image crop;
    pad_crop(full, 0, b.x, b.y, b.width, b.height, crop);
    resize_bilinear(crop, 0, 0, b.width, b.height, S, S, want);
    Diff d = diff(got, want);
    // Seen: mean <= 2.2, max <= 12; with the offset one iMCU off, means of 40 and more.
    EXPECT_LE(d.mean, 3.0) << GetParam() << " scale " << r.scale_num << " box " << b.x << "," << b.y;
    EXPECT_LE(d.max, 24) << GetParam() << " scale " << r.scale_num << " box " << b.x << "," << b.y;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, RegionDecode,
                         ::testing::Values("large420.jpg", "large444.jpg", "large422.jpg", "large_progressive.jpg",
                                           "large_gray.jpg", "large_cmyk.jpg", "large_restart.jpg"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

class RegionDecodeErrors : public RegionDecode {};

TEST_P(RegionDecodeErrors, CutShortBelowTheBoxIsStillRejected) {
  std::vector<std::uint8_t> cut = bytes_;
  cut.resize(cut.size() * 2 / 3);
  Image out;
  try {
    decode_jpeg_region(cut, {0, 0, 40, 30}, {}, "set.zip:cut.jpg", out);
    ADD_FAILURE() << "a truncated file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid);
    EXPECT_NE(std::string(e.what()).find("set.zip:cut.jpg"), std::string::npos) << e.what();
  }
}

TEST_P(RegionDecodeErrors, BytesAfterTheEndMarkerAreAccepted) {
  std::vector<std::uint8_t> padded = bytes_;
  for (int i = 0; i < 100; ++i) padded.push_back(static_cast<std::uint8_t>(i * 37));
  Image a, b;
  JpegRegion ra = decode_jpeg_region(bytes_, {10, 20, 50, 40}, {}, "a.jpg", a);
  JpegRegion rb = decode_jpeg_region(padded, {10, 20, 50, 40}, {}, "b.jpg", b);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(ra.x0, rb.x0);
}

TEST_P(RegionDecodeErrors, BoxOutsideTheImageIsAUsageError) {
  Image out;
  try {
    decode_jpeg_region(bytes_, {300, 0, 40, 10}, {}, "a.jpg", out);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
  // The decoder is still usable afterwards.
  JpegRegion r = decode_jpeg_region(bytes_, {0, 0, 10, 10}, {}, "a.jpg", out);
  EXPECT_EQ(r.x0, 0);
}

TEST_P(RegionDecodeErrors, ABoxWhoseEndOverflowsIntIsAUsageError) {
  // x + width wraps to a negative int, which a "x + width > W" check lets through.
  Image out;
  for (CropBox box : {CropBox{std::numeric_limits<int>::max() - 5, 0, 40, 10},
                      CropBox{0, std::numeric_limits<int>::max() - 5, 10, 40}}) {
    try {
      decode_jpeg_region(bytes_, box, {}, "a.jpg", out);
      ADD_FAILURE() << "decoded a box at " << box.x << ", " << box.y;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, RegionDecodeErrors, ::testing::Values("large420.jpg", "large_progressive.jpg"),
                         [](const auto& info) { return info.index == 0 ? std::string("baseline") : "progressive"; });

// The file without its DHT segments: libjpeg decodes it with the standard tables, which PIL wrote.
std::vector<std::uint8_t> without_huffman_tables(const std::vector<std::uint8_t>& b) {
  std::vector<std::uint8_t> out(b.begin(), b.begin() + 2);
  std::size_t i = 2;
  while (i + 4 <= b.size() && b[i] == 0xFF && b[i + 1] != 0xDA) {
    const std::size_t len = 2 + (b[i + 2] << 8 | b[i + 3]);
    if (b[i + 1] != 0xC4) out.insert(out.end(), b.begin() + i, b.begin() + i + len);
    i += len;
  }
  out.insert(out.end(), b.begin() + i, b.end());
  return out;
}

// A decompressor keeps the tables of the files it read; a file that lacks one must not decode
// with the previous file's (its pixels would depend on what its thread decoded before).
TEST(JpegDecoderState, AFileWithoutTablesDecodesTheSameWhateverCameBefore) {
  const fs::path dir = image_fixtures();
  if (dir.empty()) GTEST_SKIP() << "no Python with PIL to make the fixtures";
  const auto bare = without_huffman_tables(read_bytes(dir / "large420.jpg"));
  const auto other = read_bytes(dir / "large_optimized.jpg");
  ASSERT_LT(bare.size(), read_bytes(dir / "large420.jpg").size());
  const CropBox box{20, 30, 200, 150};
  Image full_first, region_first;
  decode_image(bare, {}, "bare.jpg", full_first);
  decode_jpeg_region(bare, box, {}, "bare.jpg", region_first);
  // Standard tables: the same picture as the file with its tables.
  EXPECT_EQ(full_first.pixels, decode_image(read_bytes(dir / "large420.jpg"), {}, "a.jpg").pixels);
  Image scratch, full_after, region_after;
  decode_image(other, {}, "other.jpg", scratch);
  decode_image(bare, {}, "bare.jpg", full_after);
  decode_jpeg_region(other, box, {}, "other.jpg", scratch);
  decode_jpeg_region(bare, box, {}, "bare.jpg", region_after);
  EXPECT_EQ(full_after.pixels, full_first.pixels);
  EXPECT_EQ(region_after.pixels, region_first.pixels);
}

TEST(RegionScale, SmallestFastScaleKeepingTheBoxAtLeastTheOutput) {
  EXPECT_EQ(detail::jpeg_region_scale(448, 448, 224, 224), 4);
  EXPECT_EQ(detail::jpeg_region_scale(447, 900, 224, 224), 8);  // the smaller side decides; 5/8..7/8 are slow
  EXPECT_EQ(detail::jpeg_region_scale(1792, 1792, 224, 224), 1);
  EXPECT_EQ(detail::jpeg_region_scale(1000, 1000, 224, 224), 2);
  EXPECT_EQ(detail::jpeg_region_scale(200, 400, 224, 224), 8);  // upscaled: full size
  EXPECT_EQ(detail::jpeg_region_scale(200, 400, 0, 0), 8);
}

}  // namespace
