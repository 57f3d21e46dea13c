// EXIF orientation against PIL's ImageOps.exif_transpose, and the crop paths (the JPEG region
// decoder, the reduced PNG decoder, DCT scaling) on turned images against "decode whole, turn,
// crop". Fixtures: tests/image/make_format_fixtures.py (one JPEG's bytes with each orientation 1-8
// in an EXIF block laid out as phones write it, PNG eXIf, WebP EXIF, TIFF's tag, XMP).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/codecs.h"
#include "image/fixtures.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

class Orientation : public ::testing::Test {
 public:
  static void SetUpTestSuite() { dir_ = format_fixtures(); }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the fixtures";
  }
  static std::vector<std::uint8_t> bytes(const std::string& name) { return read_bytes(dir_ / name); }
  static std::string jpeg(int k) { return "exif_" + std::to_string(k) + ".jpg"; }
  static fs::path dir_;
};
fs::path Orientation::dir_;

TEST_F(Orientation, TheTagIsFoundWherePilFindsIt) {
  for (int k = 1; k <= 8; ++k) EXPECT_EQ(exif_orientation(bytes(jpeg(k))), k) << k;
  EXPECT_EQ(exif_orientation(bytes("exif_6_long_le.jpg")), 6);     // a LONG, little-endian
  EXPECT_EQ(exif_orientation(bytes("exif_9.jpg")), 1);             // not an orientation
  EXPECT_EQ(exif_orientation(bytes("exif_two_segments.jpg")), 6);  // the first Exif segment's
  EXPECT_EQ(exif_orientation(bytes("xmp_8.jpg")), 8);              // XMP, when EXIF has no tag
  EXPECT_EQ(exif_orientation(bytes("png_exif_6.png")), 6);
  EXPECT_EQ(exif_orientation(bytes("png_exif_3_gray.png")), 3);
  EXPECT_EQ(exif_orientation(bytes("webp_exif_8.webp")), 8);
  EXPECT_EQ(exif_orientation(bytes("tiff_exif_5.tif")), 5);
  EXPECT_EQ(exif_orientation(bytes("gif_no_exif.gif")), 1);
}

// Every orientation, both channel counts, every container: the pixels of PIL's exif_transpose.
TEST_F(Orientation, DecodedImagesEqualPilsExifTranspose) {
  std::vector<std::string> names;
  for (int k = 1; k <= 9; ++k) names.push_back(jpeg(k));
  for (const char* n :
       {"exif_6_long_le.jpg", "exif_two_segments.jpg", "xmp_8.jpg", "exif_gray_5.jpg", "png_exif_6.png",
        "png_exif_3_gray.png", "webp_exif_8.webp", "tiff_exif_5.tif", "gif_no_exif.gif", "png_exif_6_big.png"})
    names.push_back(n);
  for (const std::string& name : names) {
    const auto b = bytes(name);
    const std::string stem = fs::path(name).stem().string();
    for (int channels : {3, 1}) {
      DecodeOptions o;
      o.channels = channels;
      const Image got = decode_image(b, o, name);
      const Diff d = diff(got, read_raw(dir_ / (stem + (channels == 3 ? ".rgb" : ".l")), channels));
      // JPEG: PIL's bundled libjpeg-turbo may round the IDCT differently (decode_test.cpp).
      EXPECT_LE(d.max, fs::path(name).extension() == ".jpg" ? 2 : 0) << name << " channels " << channels;
    }
    const ImageInfo info = read_image_info(b, name);
    const Image ref = read_raw(dir_ / (stem + ".rgb"), 3);
    EXPECT_EQ(info.width, ref.width) << name;
    EXPECT_EQ(info.height, ref.height) << name;
  }
}

TEST_F(Orientation, IgnoreKeepsThePixelsAsStored) {
  DecodeOptions o;
  o.channels = 3;
  o.exif = ExifOrientation::ignore;
  const Image first = decode_image(bytes(jpeg(1)), o, "1");
  for (int k = 1; k <= 8; ++k) {
    const auto b = bytes(jpeg(k));
    const Image got = decode_image(b, o, jpeg(k));
    EXPECT_EQ(got.pixels, first.pixels) << k;  // one JPEG's bytes under eight tags
    EXPECT_LE(diff(got, read_raw(dir_ / ("exif_" + std::to_string(k) + ".stored.rgb"), 3)).max, 2) << k;
    const ImageInfo info = read_image_info(b, jpeg(k), 89478485, ExifOrientation::ignore);
    EXPECT_EQ(info.orientation, 1);
    EXPECT_EQ(info.width, 333);
    EXPECT_EQ(info.height, 251);
    EXPECT_EQ(read_image_info(b, jpeg(k)).orientation, k);
  }
}

// Without DCT scaling (a 224 px output from a 333 x 251 photo), the region decoder's crop is the
// full decode's pixels: the loader's path must equal decoding whole, turning and transforming.
TEST_F(Orientation, TrainAndEvalCropsOfTurnedJpegsEqualTurningTheWholeDecode) {
  for (int k = 1; k <= 8; ++k) {
    const auto b = bytes(jpeg(k));
    DecodeOptions d;
    d.channels = 3;
    const Image whole = decode_image(b, d, jpeg(k));
    for (bool train : {true, false})
      for (std::uint64_t seed = 0; seed < 12; ++seed) {
        TransformOptions t;
        t.image_size = 224;
        t.train = train;
        t.channels = 3;
        Image scratch, fast, reference;
        decode_transform(b, t, 1 << 30, seed, jpeg(k), scratch, fast);
        transform_image(whole, t, seed, reference);
        ASSERT_EQ(fast.pixels, reference.pixels) << "orientation " << k << " train " << train << " seed " << seed;
      }
  }
}

// With DCT scaling the region is decoded smaller and resized: not exact (for orientation 1 too:
// the bounds are what this photo gives unturned), but a box mapped to the wrong part of the
// stored image, or a plan drawn on the stored sides, differs by far more (checked: the same
// comparison against the unturned image).
TEST_F(Orientation, ScaledCropsOfTurnedJpegsStayCloseToTurningTheWholeDecode) {
  DecodeOptions stored_o;
  stored_o.channels = 3;
  stored_o.exif = ExifOrientation::ignore;
  const Image stored = decode_image(bytes(jpeg(1)), stored_o, jpeg(1));
  for (int k = 1; k <= 8; ++k) {
    const auto b = bytes(jpeg(k));
    DecodeOptions d;
    d.channels = 3;
    const Image whole = decode_image(b, d, jpeg(k));
    for (bool train : {true, false})
      for (std::uint64_t seed = 0; seed < 12; ++seed) {
        TransformOptions t;
        t.image_size = 40;
        t.train = train;
        t.channels = 3;
        Image scratch, fast, reference, unturned;
        decode_transform(b, t, 1 << 30, seed, jpeg(k), scratch, fast);
        transform_image(whole, t, seed, reference);
        const Diff diff_ = diff(fast, reference);
        // Orientation 1, this photo: train mean <= 2.3, max <= 20; eval (1/4 scale) 3.65 and 28.
        EXPECT_LE(diff_.mean, train ? 3.0 : 4.5) << "orientation " << k << " train " << train << " seed " << seed;
        EXPECT_LE(diff_.max, train ? 24 : 36) << "orientation " << k << " train " << train << " seed " << seed;
        if (k == 1) continue;
        transform_image(stored, t, seed, unturned);
        EXPECT_GT(diff(fast, unturned).mean, 10) << "orientation " << k << " train " << train << " seed " << seed;
      }
  }
}

// At 1/2, 1/4 and 1/8 the region of the stored image, turned, must be the turned scaled whole
// image's pixels where the box lies: pixel for pixel, shifted by the iMCU snap.
TEST_F(Orientation, ATurnedScaledRegionIsTheTurnedScaledWholeImage) {
  const CropBox display_boxes[] = {{10, 7, 120, 90}, {0, 0, 251, 200}, {37, 101, 96, 140}, {150, 20, 101, 77}};
  int checked = 0;
  for (int k = 1; k <= 8; ++k) {
    const auto b = bytes(jpeg(k));
    const bool swap = detail::swaps_sides(k);
    const int dw = swap ? 251 : 333, dh = swap ? 333 : 251;  // display sides
    for (int m : {4, 2, 1}) {
      DecodeOptions whole_o;
      whole_o.min_width = (333 * m + 7) / 8;
      whole_o.min_height = (251 * m + 7) / 8;
      const Image whole = decode_image(b, whole_o, jpeg(k));  // scaled, then turned
      const int sw = (333 * m + 7) / 8, sh = (251 * m + 7) / 8;
      ASSERT_EQ(whole.width, swap ? sh : sw);
      for (CropBox box : display_boxes) {
        if (box.x + box.width > dw || box.y + box.height > dh) continue;
        const detail::FloatBox s = detail::stored_box(
            {double(box.x), double(box.y), double(box.x + box.width), double(box.y + box.height)}, k, 333, 251);
        const CropBox stored{int(s.x0), int(s.y0), int(s.x1 - s.x0), int(s.y1 - s.y0)};
        DecodeOptions o;
        o.min_width = stored.width * m / 8;
        o.min_height = stored.height * m / 8;
        if (detail::jpeg_region_scale(stored.width, stored.height, o.min_width, o.min_height) != m) continue;
        Image region, turned;
        const JpegRegion r = decode_jpeg_region(b, stored, o, jpeg(k), region);
        ASSERT_EQ(r.scale_num, m);
        apply_orientation(region, k, turned);
        const detail::FloatBox in_region =
            detail::display_box({r.x0, r.y0, r.x1, r.y1}, k, region.width, region.height);
        const detail::FloatBox in_whole =
            detail::display_box({s.x0 * m / 8, s.y0 * m / 8, s.x1 * m / 8, s.y1 * m / 8}, k, sw, sh);
        const double dx = in_whole.x0 - in_region.x0, dy = in_whole.y0 - in_region.y0;
        ASSERT_EQ(dx, std::floor(dx)) << k << " " << m;
        ASSERT_EQ(dy, std::floor(dy)) << k << " " << m;
        // The box's own pixels, one in from its edges (the region's margin is one pixel).
        const int x0 = int(std::ceil(in_whole.x0)) + 1, x1 = int(std::floor(in_whole.x1)) - 1;
        const int y0 = int(std::ceil(in_whole.y0)) + 1, y1 = int(std::floor(in_whole.y1)) - 1;
        int worst = 0;
        for (int y = y0; y < y1; ++y)
          for (int x = x0; x < x1; ++x)
            for (int c = 0; c < 3; ++c)
              worst =
                  std::max(worst, std::abs(whole.row(y)[x * 3 + c] - turned.row(y - int(dy))[(x - int(dx)) * 3 + c]));
        EXPECT_EQ(worst, 0) << "orientation " << k << " scale " << m << "/8 box " << box.x << "," << box.y;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 40);
}

// A large PNG turned by its eXIf chunk: the reduced decode of the stored crop, turned, stays as
// close to the full decode's transforms as the same PNG unturned does (measured with the tag
// ignored: means <= 1.32, max 16 on this noisy photo), and far from the unturned image's.
TEST_F(Orientation, ReducedCropsOfATurnedPngStayCloseToTurningTheWholeDecode) {
  const auto b = bytes("png_exif_6_big.png");
  DecodeOptions d;
  d.channels = 3;
  const Image whole = decode_image(b, d, "png_exif_6_big.png");
  ASSERT_EQ(whole.width, 755);
  d.exif = ExifOrientation::ignore;
  const Image stored = decode_image(b, d, "png_exif_6_big.png");
  for (auto [train, size] : {std::pair{false, 64}, {true, 48}})
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
      TransformOptions t;
      t.image_size = size;
      t.train = train;
      t.channels = 3;
      Image scratch, fast, reference, unturned;
      decode_transform(b, t, 1 << 30, seed, "png_exif_6_big.png", scratch, fast);
      transform_image(whole, t, seed, reference);
      const Diff diff_ = diff(fast, reference);
      EXPECT_LT(diff_.mean, 1.6) << "train " << train << " seed " << seed;
      EXPECT_LE(diff_.max, 20) << "train " << train << " seed " << seed;
      transform_image(stored, t, seed, unturned);
      EXPECT_GT(diff(fast, unturned).mean, 10) << "train " << train << " seed " << seed;
    }
}

TEST_F(Orientation, OtherFormatsAreTurnedBeforeTheirPlanIsDrawn) {
  for (const char* name : {"webp_exif_8.webp", "tiff_exif_5.tif", "png_exif_3_gray.png"}) {
    const auto b = bytes(name);
    DecodeOptions d;
    d.channels = 3;
    const Image whole = decode_image(b, d, name);
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      TransformOptions t;
      t.image_size = 32;
      t.channels = 3;
      Image scratch, fast, reference;
      decode_transform(b, t, 1 << 30, seed, name, scratch, fast);
      transform_image(whole, t, seed, reference);
      EXPECT_EQ(fast.pixels, reference.pixels) << name << " seed " << seed;
    }
  }
}

// --- pixels and boxes, without files -------------------------------------------------------------

Image numbered(int w, int h, int c) {
  Image img;
  img.resize(w, h, c);
  for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
  return img;
}

// Where stored pixel (x, y) of a W x H image is displayed (orientation.cpp's table, written out).
std::pair<int, int> displayed_at(int o, int x, int y, int W, int H) {
  switch (o) {
    case 2:
      return {W - 1 - x, y};
    case 3:
      return {W - 1 - x, H - 1 - y};
    case 4:
      return {x, H - 1 - y};
    case 5:
      return {y, x};
    case 6:
      return {H - 1 - y, x};
    case 7:
      return {H - 1 - y, W - 1 - x};
    case 8:
      return {y, W - 1 - x};
    default:
      return {x, y};
  }
}

TEST(OrientationPixels, EachOrientationMovesEveryPixelWhereExifSays) {
  for (int c : {1, 3})
    for (auto [W, H] : {std::pair{5, 3}, {37, 70}, {1, 9}, {64, 64}})
      for (int o = 1; o <= 8; ++o) {
        const Image in = numbered(W, H, c);
        Image out;
        apply_orientation(in, o, out);
        ASSERT_EQ(out.width, detail::swaps_sides(o) ? H : W);
        ASSERT_EQ(out.height, detail::swaps_sides(o) ? W : H);
        for (int y = 0; y < H; ++y)
          for (int x = 0; x < W; ++x) {
            const auto [X, Y] = displayed_at(o, x, y, W, H);
            for (int k = 0; k < c; ++k)
              ASSERT_EQ(out.row(Y)[X * c + k], in.row(y)[x * c + k]) << o << " " << x << "," << y;
          }
      }
}

TEST(OrientationPixels, BoxesGoToTheStoredImageAndBack) {
  const detail::FloatBox d{3.5, 1.25, 20, 9};
  for (int o = 1; o <= 8; ++o) {
    const double W = 40, H = 30;  // stored sides
    const detail::FloatBox s = detail::stored_box(d, o, W, H);
    EXPECT_LE(s.x0, s.x1);
    EXPECT_LE(s.y0, s.y1);
    EXPECT_GE(s.x0, 0);
    EXPECT_LE(s.x1, W);
    EXPECT_LE(s.y1, H);
    const detail::FloatBox back = detail::display_box(s, o, W, H);
    EXPECT_DOUBLE_EQ(back.x0, d.x0) << o;
    EXPECT_DOUBLE_EQ(back.y0, d.y0) << o;
    EXPECT_DOUBLE_EQ(back.x1, d.x1) << o;
    EXPECT_DOUBLE_EQ(back.y1, d.y1) << o;
    // A one-pixel box lands on the pixel displayed_at() moves there.
    const detail::FloatBox px = detail::stored_box({7, 4, 8, 5}, o, W, H);
    const auto [X, Y] = displayed_at(o, int(px.x0), int(px.y0), int(W), int(H));
    EXPECT_EQ(X, 7) << o;
    EXPECT_EQ(Y, 4) << o;
  }
}

// --- hostile EXIF ----------------------------------------------------------------------------------

std::vector<std::uint8_t> tiff_with(std::initializer_list<int> head, std::initializer_list<int> entries) {
  std::vector<std::uint8_t> b;
  for (int v : head) b.push_back(static_cast<std::uint8_t>(v));
  for (int v : entries) b.push_back(static_cast<std::uint8_t>(v));
  return b;
}

TEST(ExifReader, OrientationInTheFirstIfdIsRead) {
  // II, 42, IFD at 8, one entry: 0x0112 SHORT 1 value 6.
  EXPECT_EQ(detail::orientation_in_tiff(
                tiff_with({'I', 'I', 42, 0, 8, 0, 0, 0}, {1, 0, 0x12, 1, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0})),
            6);
  EXPECT_EQ(detail::orientation_in_tiff(
                tiff_with({'M', 'M', 0, 42, 0, 0, 0, 8}, {0, 1, 1, 0x12, 0, 3, 0, 0, 0, 1, 0, 3, 0, 0})),
            3);
  // BigTIFF: 43, offset size 8, IFD at 16; 8-byte count, 20-byte entries.
  EXPECT_EQ(detail::orientation_in_tiff(
                tiff_with({'I', 'I', 43, 0, 8, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0},
                          {1, 0, 0, 0, 0, 0, 0, 0, 0x12, 1, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0})),
            8);
}

TEST(ExifReader, LiesAndDamageGiveNoOrientationNeverAReadOutside) {
  const std::initializer_list<int> ii = {'I', 'I', 42, 0, 8, 0, 0, 0};
  // IFD offset past the end; an entry count far larger than the data; an entry cut short.
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with({'I', 'I', 42, 0, 0xFF, 0xFF, 0xFF, 0x7F}, {})), 0);
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with(ii, {0xFF, 0xFF, 0x12, 1, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0})), 6);
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with(ii, {1, 0, 0x12, 1, 3, 0, 1, 0, 0, 0, 6})), 0);
  // Two values, a text type, an out-of-range value, a negative signed one: none is an orientation.
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with(ii, {1, 0, 0x12, 1, 3, 0, 2, 0, 0, 0, 6, 0, 6, 0})), 0);
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with(ii, {1, 0, 0x12, 1, 2, 0, 1, 0, 0, 0, '6', 0, 0, 0})), 0);
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with(ii, {1, 0, 0x12, 1, 3, 0, 1, 0, 0, 0, 9, 0, 0, 0})), 0);
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with(ii, {1, 0, 0x12, 1, 8, 0, 1, 0, 0, 0, 0xFA, 0xFF, 0, 0})), 0);
  // The last of two tags wins, as in PIL's dict.
  EXPECT_EQ(detail::orientation_in_tiff(
                tiff_with(ii, {2, 0, 0x12, 1, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0x12, 1, 4, 0, 1, 0, 0, 0, 8, 0, 0, 0})),
            8);
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with({'I', 'I', 42, 0}, {})), 0);
  EXPECT_EQ(detail::orientation_in_tiff(tiff_with({'X', 'X', 42, 0, 8, 0, 0, 0}, {})), 0);
}

TEST(ExifReader, AJpegWhoseSegmentsLieStillDecodesItsOrientationAsNone) {
  // SOI, APP1 claiming 0xFFFF bytes of a 20-byte file; then SOI and garbage.
  const std::vector<std::uint8_t> lie = {0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, 'E', 'x', 'i', 'f',
                                         0,    0,    'I',  'I',  42,   0,    8,   0,   0,   0};
  EXPECT_EQ(exif_orientation(lie), 1);
  const std::vector<std::uint8_t> garbage = {0xFF, 0xD8, 0xFF, 0x12, 0x00, 0x01, 0x77};
  EXPECT_EQ(exif_orientation(garbage), 1);
}

}  // namespace
