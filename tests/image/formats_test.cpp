// WebP, GIF, BMP and TIFF against PIL: tests/image/make_format_fixtures.py writes each file and
// PIL's Image.open(f).convert("RGB" | "L") of it; frugal's decode must give the same pixels.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frugal/util/error.h"
#include "frugal/image/image.h"
#include "image/fixtures.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

class FormatAgainstPil : public ::testing::TestWithParam<std::string> {
 public:
  static void SetUpTestSuite() { dir_ = format_fixtures(); }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "no Python with PIL to make the fixtures";
  }
  static fs::path dir_;
};
fs::path FormatAgainstPil::dir_;

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}

// PIL's modes that are one channel; frugal's native channels follow them.
int channels_of_mode(const std::string& mode) {
  return mode == "1" || mode == "L" || mode == "LA" || mode == "I;16" || mode == "I" ? 1 : 3;
}

// Exact but where the two sides run different library builds: JPEG-in-TIFF goes through libtiff's
// libjpeg (Debian's) and PIL's bundled one, whose IDCT may round differently, as for JPEG files.
int tolerance(const std::string& name) { return name == "tiff_jpeg.tif" ? 2 : 0; }

TEST_P(FormatAgainstPil, RgbAndGrayEqualPil) {
  const fs::path file = dir_ / GetParam();
  const std::vector<std::uint8_t> bytes = read_bytes(file);
  for (int channels : {3, 1}) {
    DecodeOptions o;
    o.channels = channels;
    const Image got = decode_image(bytes, o, GetParam());
    const Diff d = diff(got, read_raw(dir_ / (file.stem().string() + (channels == 3 ? ".rgb" : ".l")), channels));
    EXPECT_LE(d.max, tolerance(GetParam())) << GetParam() << " channels " << channels;
  }
}

TEST_P(FormatAgainstPil, HeaderGivesTheSizeAndTheChannelsOfPilsMode) {
  const fs::path file = dir_ / GetParam();
  const std::vector<std::uint8_t> bytes = read_bytes(file);
  const Image ref = read_raw(dir_ / (file.stem().string() + ".rgb"), 3);
  const ImageInfo info = read_image_info(bytes, GetParam());
  EXPECT_EQ(info.width, ref.width) << GetParam();
  EXPECT_EQ(info.height, ref.height) << GetParam();
  const int want = channels_of_mode(read_text(dir_ / (file.stem().string() + ".mode")));
  EXPECT_EQ(info.channels, want) << GetParam();
  EXPECT_EQ(decode_image(bytes, {}, GetParam()).channels, want) << GetParam();
  EXPECT_EQ(sniff_format(bytes), format_from_extension(GetParam())) << GetParam();
}

TEST_P(FormatAgainstPil, CutShortIsRefusedNamingTheFile) {
  std::vector<std::uint8_t> bytes = read_bytes(dir_ / GetParam());
  // Cut inside the first image: a file of several frames or pages cut later still holds it whole
  // (and is read, as PIL reads it).
  const bool several = GetParam() == "gif_animated.gif" || GetParam() == "tiff_two_pages.tif";
  bytes.resize(several ? bytes.size() / 5 : bytes.size() * 2 / 3);
  try {
    decode_image(bytes, {}, "set.zip:" + GetParam());
    ADD_FAILURE() << GetParam() << " cut short was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
    EXPECT_NE(std::string(e.what()).find("set.zip:" + GetParam()), std::string::npos) << e.what();
  }
}

TEST_P(FormatAgainstPil, PixelLimitIsCheckedOnTheHeader) {
  const std::vector<std::uint8_t> bytes = read_bytes(dir_ / GetParam());
  const ImageInfo info = read_image_info(bytes, GetParam());
  DecodeOptions o;
  o.max_pixels = static_cast<std::uint64_t>(info.width) * info.height - 1;
  try {
    decode_image(bytes, o, GetParam());
    ADD_FAILURE() << GetParam();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-pixels"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_image_info(bytes, GetParam(), o.max_pixels), Error);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(WebP, FormatAgainstPil,
                         ::testing::Values("webp_lossy.webp", "webp_lossless.webp", "webp_alpha_lossy.webp",
                                           "webp_alpha_lossless.webp", "webp_animated.webp"),
                         test_name);
INSTANTIATE_TEST_SUITE_P(Gif, FormatAgainstPil,
                         ::testing::Values("gif_palette.gif", "gif_interlaced.gif", "gif_gray.gif",
                                           "gif_transparent.gif", "gif_animated.gif", "gif_offset.gif",
                                           "gif_past_screen.gif", "gif_no_palette.gif"),
                         test_name);
INSTANTIATE_TEST_SUITE_P(Bmp, FormatAgainstPil,
                         ::testing::Values("bmp_24.bmp", "bmp_32.bmp", "bmp_8_palette.bmp", "bmp_8_gray.bmp",
                                           "bmp_1.bmp", "bmp_4.bmp", "bmp_2_colour_palette.bmp", "bmp_16_555.bmp",
                                           "bmp_16_565_v3.bmp", "bmp_16_565_info.bmp", "bmp_32_abgr_v5.bmp",
                                           "bmp_24_top_down.bmp", "bmp_24_os2.bmp", "bmp_8_os2.bmp",
                                           "bmp_8_short_palette.bmp", "bmp_rle8.bmp", "bmp_rle4.bmp"),
                         test_name);
INSTANTIATE_TEST_SUITE_P(Tiff, FormatAgainstPil,
                         ::testing::Values("tiff_rgb.tif", "tiff_rgb_lzw.tif", "tiff_rgb_deflate.tif", "tiff_gray.tif",
                                           "tiff_palette.tif", "tiff_rgba.tif", "tiff_jpeg.tif", "tiff_bilevel.tif",
                                           "tiff_two_pages.tif", "tiff_gray16.tif", "tiff_rgb16_be.tif",
                                           "tiff_tiled.tif", "tiff_planar.tif", "tiff_miniswhite.tif",
                                           "tiff_gray_alpha.tif"),
                         test_name);

// --- headers that lie about their size: refused on the header, before any allocation -------------

std::vector<std::uint8_t> bytes_of(std::initializer_list<int> v) {
  std::vector<std::uint8_t> b;
  for (int x : v) b.push_back(static_cast<std::uint8_t>(x));
  return b;
}

void put32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void expect_pixel_limit(const std::vector<std::uint8_t>& bytes, const char* what) {
  try {
    decode_image(bytes, {}, what);
    ADD_FAILURE() << what << " was decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid) << e.what();
    EXPECT_NE(std::string(e.what()).find("--max-pixels"), std::string::npos) << what << ": " << e.what();
  }
}

TEST(FormatBombs, ABmpDeclaring30000SquaredPixelsIsRefusedOnItsHeader) {
  std::vector<std::uint8_t> b(54 + 16, 0);
  b[0] = 'B', b[1] = 'M';
  put32(b, 10, 54);
  put32(b, 14, 40);
  put32(b, 18, 30000);
  put32(b, 22, 30000);
  b[26] = 1, b[28] = 24;
  expect_pixel_limit(b, "bomb.bmp");
}

TEST(FormatBombs, AGifScreenOf65535SquaredIsRefusedOnItsHeader) {
  // Header, a 65535 x 65535 screen without a colour table, then a 1x1 image at (0, 0).
  std::vector<std::uint8_t> b = bytes_of({'G', 'I', 'F', '8', '9', 'a', 0xFF, 0xFF, 0xFF, 0xFF, 0,    0,    0, 0x2C, 0,
                                          0,   0,   0,   1,   0,   1,   0,    0,    2,    2,    0x4C, 0x01, 0, 0x3B});
  expect_pixel_limit(b, "bomb.gif");
}

TEST(FormatBombs, AGifFramePlacedFarPastItsScreenIsRefusedOnItsHeader) {
  std::vector<std::uint8_t> b = bytes_of({'G',  'I',  'F',  '8', '9', 'a', 1, 0, 1, 0, 0,    0,    0, 0x2C, 0xFF,
                                          0xFF, 0xFF, 0xFF, 1,   0,   1,   0, 0, 2, 2, 0x4C, 0x01, 0, 0x3B});
  expect_pixel_limit(b, "far.gif");
}

TEST(FormatBombs, AWebpCanvasOf16383SquaredIsRefusedOnItsHeader) {
  // RIFF, WEBP, a VP8X chunk naming a 16383 x 16383 canvas (sides minus one, 24 bits each).
  std::vector<std::uint8_t> b = bytes_of({'R', 'I', 'F', 'F', 30, 0, 0, 0, 'W', 'E',  'B',  'P', 'V',  'P',  '8',
                                          'X', 10,  0,   0,   0,  0, 0, 0, 0,   0xFE, 0x3F, 0,   0xFE, 0x3F, 0});
  expect_pixel_limit(b, "bomb.webp");
}

TEST(FormatBombs, ATiffDeclaring100000SquaredPixelsIsRefusedOnItsHeader) {
  // Little-endian, IFD at 8: width, height (LONG), 8 bits, one strip of one byte.
  std::vector<std::uint8_t> b = {'I', 'I', 42, 0, 8, 0, 0, 0};
  auto entry = [&](int tag, int type, std::uint32_t count, std::uint32_t value) {
    for (int v : {tag & 255, tag >> 8, type, 0}) b.push_back(static_cast<std::uint8_t>(v));
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(count >> (8 * i)));
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  };
  b.push_back(6), b.push_back(0);
  entry(256, 4, 1, 100000);
  entry(257, 4, 1, 100000);
  entry(258, 3, 1, 8);
  entry(262, 3, 1, 1);
  entry(273, 4, 1, 0);
  entry(279, 4, 1, 1);
  for (int i = 0; i < 4; ++i) b.push_back(0);
  expect_pixel_limit(b, "bomb.tif");
}

// --- what is recognised but not read ---------------------------------------------------------------

TEST(Formats, PhoneAndNewFormatsAreRecognisedAndNamedWhenRefused) {
  struct Case {
    std::vector<std::uint8_t> bytes;
    ImageFormat format;
    const char* name;
  };
  const std::vector<Case> cases = {
      {bytes_of(
           {0, 0, 0, 24, 'f', 't', 'y', 'p', 'h', 'e', 'i', 'c', 0, 0, 0, 0, 'm', 'i', 'f', '1', 'h', 'e', 'i', 'c'}),
       ImageFormat::heic, "HEIC"},
      {bytes_of({0, 0, 0,   28,  'f', 't', 'y', 'p', 'm', 'i', 'f', '1', 0,   0,
                 0, 0, 'm', 'i', 'f', '1', 'a', 'v', 'i', 'f', 'm', 'i', 'a', 'f'}),
       ImageFormat::avif, "AVIF"},
      {bytes_of({0, 0, 0, 20, 'f', 't', 'y', 'p', 'a', 'v', 'i', 'f', 0, 0, 0, 0, 'a', 'v', 'i', 'f'}),
       ImageFormat::avif, "AVIF"},
      {bytes_of({0xFF, 0x0A, 0xFA, 0x7F}), ImageFormat::jpeg_xl, "JPEG XL"},
      {bytes_of({0, 0, 0, 12, 'J', 'X', 'L', ' ', 0x0D, 0x0A, 0x87, 0x0A}), ImageFormat::jpeg_xl, "JPEG XL"},
      {bytes_of({0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A}), ImageFormat::jpeg2000, "JPEG 2000"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(sniff_format(c.bytes), c.format) << c.name;
    EXPECT_FALSE(is_decodable(c.format));
    try {
      decode_image(c.bytes, {}, "phone.zip:x");
      ADD_FAILURE() << c.name;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("a ") + c.name + " image"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("phone.zip:x"), std::string::npos) << e.what();
    }
  }
  // An MP4 video opens with 'ftyp' too: not an image.
  EXPECT_EQ(
      sniff_format(bytes_of({0, 0, 0, 20, 'f', 't', 'y', 'p', 'i', 's', 'o', 'm', 0, 0, 2, 0, 'm', 'p', '4', '1'})),
      ImageFormat::unknown);
}

TEST(Formats, ExtensionsNameTheFormatsAnyCase) {
  EXPECT_EQ(format_from_extension("a/b.WebP"), ImageFormat::webp);
  EXPECT_EQ(format_from_extension("x.tiff"), ImageFormat::tiff);
  EXPECT_EQ(format_from_extension("x.TIF"), ImageFormat::tiff);
  EXPECT_EQ(format_from_extension("x.dib"), ImageFormat::bmp);
  EXPECT_EQ(format_from_extension("IMG_0001.HEIC"), ImageFormat::heic);
  EXPECT_EQ(format_from_extension("x.jxl"), ImageFormat::jpeg_xl);
  EXPECT_EQ(format_from_extension("photos.d/readme"), ImageFormat::unknown);
  EXPECT_EQ(format_from_extension("x.txt"), ImageFormat::unknown);
}

TEST(Formats, TextStartingWithBmIsNotABmp) {
  const std::string text = "BMW cars, a list of models and their years of production";
  const std::vector<std::uint8_t> b(text.begin(), text.end());
  EXPECT_EQ(sniff_format(b), ImageFormat::unknown);
}

TEST(Formats, AnRleBmpEndedEarlyByItsEndCodeLeavesTheRestAtIndexZero) {
  // 4 x 2, RLE8, palette: 0 black, 1 white. One run of 3 white pixels, then end of bitmap.
  std::vector<std::uint8_t> b(54 + 8, 0);
  b[0] = 'B', b[1] = 'M';
  put32(b, 10, 62);
  put32(b, 14, 40);
  put32(b, 18, 4);
  put32(b, 22, 2);
  b[26] = 1, b[28] = 8;
  put32(b, 30, 1);
  put32(b, 46, 2);
  b[58] = b[59] = b[60] = 255;
  for (int v : {3, 1, 0, 1}) b.push_back(static_cast<std::uint8_t>(v));
  const Image img = decode_image(b, {}, "early.bmp");
  ASSERT_EQ(img.width, 4);
  // Bottom-up: the first file row is the image's last.
  const std::vector<std::uint8_t> want = {0, 0, 0, 0, 255, 255, 255, 0};
  EXPECT_EQ(img.pixels, want);
  b.resize(b.size() - 2);  // no end code and no data: cut short
  EXPECT_THROW(decode_image(b, {}, "cut.bmp"), Error);
}

}  // namespace
