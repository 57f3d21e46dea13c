#include <gtest/gtest.h>

#include <filesystem>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/fixtures.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

class DecodeAgainstPil : public ::testing::TestWithParam<std::string> {
 public:
  static void SetUpTestSuite() {
    dir_ = image_fixtures();
    ok_ = !dir_.empty();
  }
  static fs::path dir_;
  static bool ok_;
};
fs::path DecodeAgainstPil::dir_;
bool DecodeAgainstPil::ok_ = false;

TEST_P(DecodeAgainstPil, RgbAndGrayMatchPil) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL to make the fixtures";
  fs::path file = dir_ / GetParam();
  std::vector<std::uint8_t> bytes = read_bytes(file);
  for (int channels : {3, 1}) {
    fs::path ref = dir_ / (file.stem().string() + (channels == 3 ? ".rgb" : ".l"));
    if (!fs::exists(ref)) continue;
    DecodeOptions o;
    o.channels = channels;
    Image got = decode_image(bytes, o, GetParam());
    Diff d = diff(got, read_raw(ref, channels));
    // JPEG: PIL's bundled libjpeg-turbo may round the IDCT differently; PNG must be exact.
    int tolerance = file.extension() == ".jpg" ? 2 : 0;
    EXPECT_LE(d.max, tolerance) << GetParam() << " channels " << channels;
    EXPECT_LE(d.mean, 0.2) << GetParam() << " channels " << channels;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, DecodeAgainstPil,
                         ::testing::Values("baseline.jpg", "baseline444.jpg", "progressive.jpg", "gray_jpeg.jpg",
                                           "cmyk.jpg", "rgb.png", "gray.png", "palette.png", "rgba.png", "la.png",
                                           "rgb16.png", "gray16.png"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST_F(DecodeAgainstPil, NativeChannelsFollowTheData) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL";
  EXPECT_EQ(read_image_info(read_bytes(dir_ / "gray_jpeg.jpg"), "gray_jpeg.jpg").channels, 1);
  EXPECT_EQ(read_image_info(read_bytes(dir_ / "la.png"), "la.png").channels, 1);
  EXPECT_EQ(read_image_info(read_bytes(dir_ / "palette.png"), "palette.png").channels, 3);
  EXPECT_EQ(decode_image(read_bytes(dir_ / "gray.png"), {}, "gray.png").channels, 1);
  EXPECT_EQ(decode_image(read_bytes(dir_ / "cmyk.jpg"), {}, "cmyk.jpg").channels, 3);
}

TEST_F(DecodeAgainstPil, DctScalingHalvesTheJpegWhenAllowed) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL";
  DecodeOptions o;
  o.min_width = 60;
  o.min_height = 40;
  Image img = decode_image(read_bytes(dir_ / "baseline.jpg"), o, "baseline.jpg");
  EXPECT_EQ(img.width, 66);  // ceil(131 / 2)
  EXPECT_EQ(img.height, 49);
  o.min_width = 131;
  EXPECT_EQ(decode_image(read_bytes(dir_ / "baseline.jpg"), o, "baseline.jpg").width, 131);
}

TEST_F(DecodeAgainstPil, TruncatedImagesAreRejectedNamingTheEntry) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL";
  for (const char* name : {"baseline.jpg", "progressive.jpg", "rgb.png"}) {
    std::vector<std::uint8_t> b = read_bytes(dir_ / name);
    b.resize(b.size() * 2 / 3);
    try {
      decode_image(b, {}, std::string("set.zip:") + name);
      ADD_FAILURE() << name << " truncated was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid);
      EXPECT_NE(std::string(e.what()).find(std::string("set.zip:") + name), std::string::npos) << e.what();
    }
  }
}

TEST_F(DecodeAgainstPil, AFailedJpegDoesNotSpoilTheNextDecodeOnTheSameThread) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL";
  std::vector<std::uint8_t> good = read_bytes(dir_ / "baseline.jpg"), bad = good;
  bad.resize(200);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(decode_image(bad, {}, "bad.jpg"), Error);
    Image img = decode_image(good, {}, "good.jpg");
    EXPECT_EQ(img.width, 131);
    EXPECT_EQ(read_image_info(good, "good.jpg").height, 97);
  }
}

TEST_F(DecodeAgainstPil, PixelLimitIsCheckedBeforeDecoding) {
  if (!ok_) GTEST_SKIP() << "no Python with PIL";
  DecodeOptions o;
  o.max_pixels = 131 * 97 - 1;
  for (const char* name : {"baseline.jpg", "rgb.png"}) {
    try {
      decode_image(read_bytes(dir_ / name), o, name);
      ADD_FAILURE() << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--max-pixels"), std::string::npos) << e.what();
    }
  }
}

TEST(Decode, GarbageIsRejectedWithItsFirstBytes) {
  std::vector<std::uint8_t> junk = {'h', 'e', 'l', 'l', 'o'};
  try {
    decode_image(junk, {}, "a.zip:readme.jpg");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("68656c6c"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a.zip:readme.jpg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decode_image(std::vector<std::uint8_t>{0xFF, 0xD8, 0xFF, 0xE0, 0, 0}, {}, "x"), Error);
}

TEST(Decode, FormatIsDecidedByMagicBytes) {
  EXPECT_EQ(sniff_format(std::vector<std::uint8_t>{0xFF, 0xD8, 0xFF, 0xDB}), ImageFormat::jpeg);
  EXPECT_EQ(sniff_format(std::vector<std::uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}), ImageFormat::png);
  EXPECT_EQ(sniff_format(std::vector<std::uint8_t>{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}), ImageFormat::npy);
  EXPECT_EQ(sniff_format(std::vector<std::uint8_t>{'G', 'I', 'F', '8'}), ImageFormat::unknown);
}

TEST(Image, ANegativeSideIsRefusedNotWrappedIntoAHugeSize) {
  Image img;
  EXPECT_THROW(img.resize(-1, 4, 3), Error);
  EXPECT_THROW(img.resize(4, 4, -3), Error);
  img.resize(4, 2, 3);
  EXPECT_EQ(img.pixels.size(), 24u);
}

// encode_png (IDX packs write their images with it): gray and RGB come back pixel for pixel, the
// same pixels give the same bytes, and a buffer of the wrong size is the caller's mistake.
TEST(EncodePng, GrayAndRgbRoundTripThroughTheDecoder) {
  for (int c : {1, 3}) {
    Image img;
    img.resize(31, 17, c);
    for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i * 13 + c);
    const std::vector<std::uint8_t> png = encode_png(img);
    EXPECT_EQ(sniff_format(png), ImageFormat::png);
    Image back = decode_image(png, {}, "encoded.png");
    EXPECT_EQ(back.width, 31);
    EXPECT_EQ(back.height, 17);
    EXPECT_EQ(back.channels, c);
    EXPECT_EQ(back.pixels, img.pixels);
    EXPECT_EQ(encode_png(img.pixels, 31, 17, c), png);
  }
  std::vector<std::uint8_t> px(6);
  EXPECT_THROW(encode_png(px, 3, 3, 1), Error);
  EXPECT_THROW(encode_png(px, 1, 3, 2), Error);
}

}  // namespace
